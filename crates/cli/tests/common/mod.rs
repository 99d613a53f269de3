//! Helpers shared by the integration tests that run `kleinrock` (and other programs) as child
//! processes: a guard that kills and reaps its child on drop, the daemons' JSON `listening`
//! and `stopped` lines read with a timeout, SIGTERM, and a scratch directory.
// Each test binary compiles this module and uses a different subset of it.
#![allow(dead_code)]

pub mod aioquic;
pub mod rss;

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a daemon may take to print its `listening` line.
pub const LISTEN_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a daemon may take to stop after SIGTERM.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// A child process whose stdout lines arrive on a channel and whose stderr is kept for failure
/// messages. Dropping it kills and reaps the process if it is still running, so no failure
/// path leaves a process behind; during a panic it also prints what the process said on
/// stderr, unless a failure message already showed it.
pub struct Proc {
    pub name: &'static str,
    pub child: Child,
    pub lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
    /// Whether a failure message already showed this process's stderr.
    reported: bool,
}

impl Proc {
    /// Starts `cmd` with stdin closed and stdout and stderr piped to reader threads.
    pub fn spawn(name: &'static str, cmd: &mut Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: cannot start {cmd:?}: {e}"));
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(Mutex::new(String::new()));
        let out_reader = thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let sink = Arc::clone(&stderr);
        let err_reader = thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Proc {
            name,
            child,
            lines,
            stderr,
            readers: vec![out_reader, err_reader],
            reported: false,
        }
    }

    /// Starts the `kleinrock` binary of this crate with `args`.
    pub fn kleinrock(name: &'static str, args: &[&str]) -> Proc {
        Proc::spawn(
            name,
            Command::new(env!("CARGO_BIN_EXE_kleinrock")).args(args),
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// What the process wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The stdout lines not yet taken, joined with newlines (all of them once the process has
    /// exited and [`Proc::wait`] returned).
    pub fn stdout_rest(&self) -> String {
        self.lines.try_iter().collect::<Vec<_>>().join("\n")
    }

    /// Panics with `what` and this process's stderr.
    pub fn fail(&mut self, what: String) -> ! {
        self.reported = true;
        panic!("{}: {what}; its stderr:\n{}", self.name, self.stderr())
    }

    /// The next stdout line that is a JSON object and satisfies `wanted`, within `timeout`.
    pub fn json_line(
        &mut self,
        what: &str,
        timeout: Duration,
        wanted: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        if v.is_object() && wanted(&v) {
                            return v;
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.fail(format!("no {what} on stdout within {timeout:?}"))
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child_status();
                    self.fail(format!("stdout closed without {what} ({status})"))
                }
            }
        }
    }

    /// The next `{"event": event, ..}` line, within `timeout`.
    pub fn event(&mut self, event: &str, timeout: Duration) -> Value {
        self.json_line(&format!("an {event:?} event"), timeout, |v| {
            v["event"] == event
        })
    }

    /// The daemon's `listening` line, within [`LISTEN_TIMEOUT`], and the address in it.
    pub fn listening(&mut self) -> (SocketAddr, Value) {
        let line = self.event("listening", LISTEN_TIMEOUT);
        let addr = line["addr"]
            .as_str()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| self.fail(format!("listening line has no socket address: {line}")));
        (addr, line)
    }

    fn child_status(&mut self) -> String {
        // Stdout closes a moment before the exit can be reaped.
        thread::sleep(Duration::from_millis(100));
        match self.child.try_wait() {
            Ok(Some(status)) => status.to_string(),
            _ => "still running".to_string(),
        }
    }

    /// Waits for the process to exit within `timeout` and lets the readers drain its pipes;
    /// `None` if it was still running then, in which case it is killed and reaped.
    pub fn wait_or_kill(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    break None;
                }
                Err(e) => self.fail(format!("wait failed: {e}")),
            }
        };
        // The pipes close at exit; let the readers drain them.
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        status
    }

    /// Waits for the process to exit within `timeout`; kills it and panics if it does not.
    pub fn wait(&mut self, timeout: Duration) -> ExitStatus {
        match self.wait_or_kill(timeout) {
            Some(status) => status,
            None => self.fail(format!("still running after {timeout:?}, killed")),
        }
    }

    /// Sends SIGTERM (through `kill`: the cli crate has no libc), waits for exit status 0
    /// within [`STOP_TIMEOUT`] and returns the `stopped` line.
    pub fn terminate(&mut self) -> Value {
        self.terminate_within(STOP_TIMEOUT)
    }

    /// [`Proc::terminate`], waiting at most `timeout` for the exit.
    pub fn terminate_within(&mut self, timeout: Duration) -> Value {
        let pid = self.pid().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("the kill command runs");
        assert!(status.success(), "{}: kill -TERM {pid} failed", self.name);
        let exit = self.wait(timeout);
        if !exit.success() {
            self.fail(format!("{exit} after SIGTERM, expected exit status 0"));
        }
        self.event("stopped", Duration::ZERO)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if thread::panicking() && !self.reported {
            eprintln!("--- {} stderr ---\n{}", self.name, self.stderr());
        }
    }
}

/// Starts `kleinrock serve --json` on a free loopback port with controller `cc`, writing its
/// certificate to `cert`, and waits for its `listening` line: the daemon, its address and
/// that line.
pub fn serve(cc: &str, cert: &str) -> (Proc, SocketAddr, Value) {
    serve_with(cc, cert, &[])
}

/// [`serve`] with the `extra` arguments.
pub fn serve_with(cc: &str, cert: &str, extra: &[&str]) -> (Proc, SocketAddr, Value) {
    let mut args = vec![
        "serve",
        "--json",
        "--cc",
        cc,
        "--addr",
        "127.0.0.1:0",
        "--cert-out",
        cert,
    ];
    args.extend_from_slice(extra);
    let mut server = Proc::kleinrock("kleinrock serve", &args);
    let (addr, line) = server.listening();
    (server, addr, line)
}

/// Starts `kleinrock emulate --json` on a free loopback port in front of `server` with
/// `--link link` and the `extra` arguments, and waits for its `listening` line: the daemon
/// and its address.
pub fn emulate(server: SocketAddr, link: &str, extra: &[&str]) -> (Proc, SocketAddr) {
    let server = server.to_string();
    let mut args = vec![
        "emulate",
        "--json",
        "--server",
        &server,
        "--listen",
        "127.0.0.1:0",
        "--link",
        link,
    ];
    args.extend_from_slice(extra);
    let mut emulator = Proc::kleinrock("kleinrock emulate", &args);
    let (addr, _) = emulator.listening();
    (emulator, addr)
}

/// A scratch directory removed when the test ends, whichever way it ends.
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A fresh, empty `{name}-{pid}` directory under `CARGO_TARGET_TMPDIR`.
    pub fn new(name: &str) -> Scratch {
        let scratch = Scratch(
            PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("{name}-{}", std::process::id())),
        );
        let _ = std::fs::remove_dir_all(&scratch.0);
        std::fs::create_dir_all(&scratch.0)
            .unwrap_or_else(|e| panic!("cannot make {}: {e}", scratch.0.display()));
        scratch
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
