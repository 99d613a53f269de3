//! A small Chrome DevTools Protocol client: Debian's headless Chromium started with
//! `--remote-debugging-pipe`, commands written to its fd 3 and messages read from its fd 4, each
//! one JSON object ended by a NUL byte.
//!
//! Messages stay untyped (`serde_json::Value`): an event this client does not know the shape of
//! is still kept, so a check over the events cannot miss one because a newer Chromium added a
//! field or a value. One reader thread keeps every event in arrival order and answers
//! `Fetch.requestPaused` itself (continue the page's own URL, fail everything else), so no
//! request waits on the thread that is itself waiting for a reply. (Why no DevTools crate: see
//! the dev-dependencies in this crate's Cargo.toml.)
//!
//! Chromium exits when its end of the command pipe closes, so even a test process killed
//! outright leaves no browser behind.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long one command may take before the check fails as hung.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(30);

/// The page's size in CSS pixels before it is grown to the document's height.
pub const VIEWPORT_WIDTH: u32 = 1280;
const VIEWPORT_HEIGHT: u32 = 800;

/// What `.ci/run` and the README install.
pub const INSTALL_HINT: &str = "the browser tests need headless Chromium: install Debian's \
     package with `apt-get install -y --no-install-recommends chromium` (what .ci/run does), \
     or set CHROME to a Chromium or Chrome binary";

/// The browser: `$CHROME` if set, else `/usr/bin/chromium`, else `chromium` or
/// `chromium-browser` on the `PATH`. `Err` says what was looked at and how to install it.
pub fn find_chromium() -> Result<PathBuf, String> {
    if let Some(chrome) = std::env::var_os("CHROME") {
        let chrome = PathBuf::from(chrome);
        return if chrome.is_file() {
            Ok(chrome)
        } else {
            Err(format!(
                "CHROME is set to {}, which is not a file; {INSTALL_HINT}",
                chrome.display()
            ))
        };
    }
    let debian = PathBuf::from("/usr/bin/chromium");
    if debian.is_file() {
        return Ok(debian);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "Chromium was not found (looked at $CHROME, /usr/bin/chromium, and chromium and \
         chromium-browser on the PATH); {INSTALL_HINT}"
    ))
}

#[derive(Default)]
struct State {
    /// Replies by command id.
    replies: HashMap<u64, Value>,
    /// Every event, in the order Chromium sent them.
    events: Vec<Value>,
    /// The pipe from Chromium closed: it exited or crashed.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Requests the reader lets through: the page's own URL (without its fragment).
    allowed: Mutex<HashSet<String>>,
    writer: Mutex<File>,
    next_id: AtomicU64,
}

impl Shared {
    fn send(&self, session: Option<&str>, method: &str, params: Value) -> Result<u64, String> {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({ "id": id, "method": method, "params": params });
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).expect("a command serialises");
        bytes.push(0);
        let mut writer = self.writer.lock().unwrap();
        writer
            .write_all(&bytes)
            .map_err(|e| format!("cannot write {method} to Chromium's pipe: {e}"))?;
        Ok(id)
    }
}

/// A running headless Chromium, ended (and its profile removed) when dropped.
pub struct Chromium {
    child: Child,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    scratch: PathBuf,
}

/// One page (tab) of the browser, attached with a flat session.
pub struct Page<'a> {
    browser: &'a Chromium,
    session: String,
}

impl Chromium {
    /// Starts the browser with a fresh profile in a new directory under the system temp dir.
    pub fn launch() -> Result<Chromium, String> {
        let exe = find_chromium()?;
        static LAUNCHES: AtomicU64 = AtomicU64::new(0);
        let scratch = std::env::temp_dir().join(format!(
            "kleinrock-chromium-{}-{}",
            std::process::id(),
            LAUNCHES.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&scratch);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        let log = File::create(scratch.join("chromium.log"))
            .map_err(|e| format!("cannot create Chromium's log: {e}"))?;

        // Both ends are close-on-exec; the child's ends are duplicated onto fds 3 and 4 below.
        let (to_chromium_read, to_chromium_write) =
            std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (from_chromium_read, from_chromium_write) =
            std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
        let (commands_fd, messages_fd) = (
            to_chromium_read.as_raw_fd(),
            from_chromium_write.as_raw_fd(),
        );

        let mut command = Command::new(&exe);
        command
            .args([
                "--headless",
                // As root (CI, this machine) Chromium refuses to start with its sandbox, and
                // containers often lack the user namespaces it needs. The page is our own file.
                "--no-sandbox",
                "--remote-debugging-pipe",
                &format!("--user-data-dir={}", scratch.join("profile").display()),
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--disable-extensions",
                "--disable-component-update",
                "--disable-background-networking",
                "--disable-sync",
                "--disable-default-apps",
                // Nothing resolves: a request that got past the interception still cannot
                // leave the machine.
                "--host-resolver-rules=MAP * ~NOTFOUND",
                "--hide-scrollbars",
                "--mute-audio",
                "--force-color-profile=srgb",
                "--force-device-scale-factor=1",
                &format!("--window-size={VIEWPORT_WIDTH},{VIEWPORT_HEIGHT}"),
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log));
        // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2). The ends
        // are first moved to fds >= 10 so that neither can be overwritten by the other's dup2.
        unsafe {
            command.pre_exec(move || {
                let commands = libc::fcntl(commands_fd, libc::F_DUPFD_CLOEXEC, 10);
                let messages = libc::fcntl(messages_fd, libc::F_DUPFD_CLOEXEC, 10);
                if commands < 0
                    || messages < 0
                    || libc::dup2(commands, 3) < 0
                    || libc::dup2(messages, 4) < 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}; {INSTALL_HINT}", exe.display()))?;
        // The child's ends close here, so the pipe reports the end when Chromium exits.
        drop(to_chromium_read);
        drop(from_chromium_write);

        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            allowed: Mutex::new(HashSet::new()),
            writer: Mutex::new(File::from(std::os::fd::OwnedFd::from(to_chromium_write))),
            next_id: AtomicU64::new(1),
        });
        let reader = {
            let shared = Arc::clone(&shared);
            let pipe = File::from(std::os::fd::OwnedFd::from(from_chromium_read));
            std::thread::spawn(move || read_messages(pipe, &shared))
        };
        let browser = Chromium {
            child,
            shared,
            reader: Some(reader),
            scratch,
        };
        browser
            .call(None, "Browser.getVersion", json!({}))
            .map_err(|e| format!("Chromium ({}) did not answer: {e}", exe.display()))?;
        Ok(browser)
    }

    /// The last lines Chromium wrote to stderr, for failure messages.
    pub fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.scratch.join("chromium.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Sends a command and waits for its reply's `result`.
    pub fn call(
        &self,
        session: Option<&str>,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let id = self.shared.send(session, method, params)?;
        let deadline = Instant::now() + COMMAND_TIMEOUT;
        let mut state = self.shared.state.lock().unwrap();
        loop {
            if let Some(reply) = state.replies.remove(&id) {
                return match reply.get("error") {
                    Some(error) => Err(format!("{method} failed: {error}")),
                    None => Ok(reply.get("result").cloned().unwrap_or(Value::Null)),
                };
            }
            if state.closed {
                return Err(format!(
                    "Chromium exited before answering {method}; its log ends:\n{}",
                    self.log_tail()
                ));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "Chromium did not answer {method} within {COMMAND_TIMEOUT:?}"
                ));
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap()
                .0;
        }
    }

    /// A new blank page with an attached flat session.
    pub fn new_page(&self) -> Result<Page<'_>, String> {
        let target = self.call(None, "Target.createTarget", json!({ "url": "about:blank" }))?;
        let target_id = target["targetId"].as_str().ok_or("no targetId")?;
        let attached = self.call(
            None,
            "Target.attachToTarget",
            json!({ "targetId": target_id, "flatten": true }),
        )?;
        let session = attached["sessionId"]
            .as_str()
            .ok_or("no sessionId")?
            .to_string();
        Ok(Page {
            browser: self,
            session,
        })
    }

    /// Lets requests for `url` (the page itself) through the interception.
    pub fn allow(&self, url: &str) {
        self.shared
            .allowed
            .lock()
            .unwrap()
            .insert(without_fragment(url).to_string());
    }

    /// A copy of every event received so far.
    pub fn events(&self) -> Vec<Value> {
        self.shared.state.lock().unwrap().events.clone()
    }

    /// Waits until an event satisfies `found`, for at most `timeout`.
    pub fn wait_for_event(
        &self,
        timeout: Duration,
        found: impl Fn(&Value) -> bool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut seen = 0;
        let mut state = self.shared.state.lock().unwrap();
        loop {
            if state.events[seen..].iter().any(&found) {
                return Ok(());
            }
            seen = state.events.len();
            let now = Instant::now();
            if state.closed || now >= deadline {
                return Err("the awaited event did not come".into());
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap()
                .0;
        }
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        let _ = self.shared.send(None, "Browser.close", json!({}));
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break;
                }
            }
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

impl Page<'_> {
    pub fn session(&self) -> &str {
        &self.session
    }

    pub fn call(&self, method: &str, params: Value) -> Result<Value, String> {
        self.browser.call(Some(&self.session), method, params)
    }

    /// Evaluates `expression` in the page (awaiting it if it is a promise) and returns its value.
    pub fn evaluate(&self, expression: &str) -> Result<Value, String> {
        let reply = self.call(
            "Runtime.evaluate",
            json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(details) = reply.get("exceptionDetails") {
            let text = details["exception"]["description"]
                .as_str()
                .or(details["text"].as_str())
                .unwrap_or("an exception");
            return Err(format!("evaluating `{expression}` threw: {text}"));
        }
        Ok(reply["result"]["value"].clone())
    }
}

fn read_messages(pipe: File, shared: &Shared) {
    let mut pipe = BufReader::new(pipe);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match pipe.read_until(0, &mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if buffer.last() == Some(&0) {
            buffer.pop();
        }
        let Ok(message) = serde_json::from_slice::<Value>(&buffer) else {
            continue;
        };
        if message.get("method").and_then(Value::as_str) == Some("Fetch.requestPaused") {
            answer_paused_request(shared, &message);
        }
        let mut state = shared.state.lock().unwrap();
        match message.get("id").and_then(Value::as_u64) {
            Some(id) => {
                state.replies.insert(id, message);
            }
            None => state.events.push(message),
        }
        shared.changed.notify_all();
    }
    shared.state.lock().unwrap().closed = true;
    shared.changed.notify_all();
}

/// Continues a request for an allowed URL and fails every other one before it is sent.
fn answer_paused_request(shared: &Shared, message: &Value) {
    let params = &message["params"];
    let session = message["sessionId"].as_str();
    let url = params["request"]["url"].as_str().unwrap_or_default();
    let request_id = params["requestId"].clone();
    let allowed = shared
        .allowed
        .lock()
        .unwrap()
        .contains(without_fragment(url));
    let _ = if allowed {
        shared.send(
            session,
            "Fetch.continueRequest",
            json!({ "requestId": request_id }),
        )
    } else {
        shared.send(
            session,
            "Fetch.failRequest",
            json!({ "requestId": request_id, "errorReason": "BlockedByClient" }),
        )
    };
}

pub fn without_fragment(url: &str) -> &str {
    url.split('#').next().unwrap_or(url)
}

/// The `file://` URL of an absolute path, percent-encoding every byte but unreserved ones and
/// `/`, as Chromium writes it.
pub fn file_url(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut url = String::from("file://");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            url.push(byte as char);
        } else {
            url.push_str(&format!("%{byte:02X}"));
        }
    }
    url
}
