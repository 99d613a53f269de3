//! The independent QUIC client of the tests: aioquic (Python, from PyPI), pinned, in a
//! virtualenv the tests make under `CARGO_TARGET_TMPDIR` once and reuse; the scripts that drive
//! it are in `tests/interop/`. Without python3 (with the venv module) or without PyPI a test
//! that needs it fails and says which is missing: it never skips.

use super::Proc;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// The aioquic release the client runs (exact pin; the newest stable release on PyPI when
/// the interop test was written).
pub const AIOQUIC_VERSION: &str = "1.7.2";

/// `aioquic_fetch.py`: fetches `GET /N` over `hq-interop` and prints one JSON line.
pub const FETCH_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/aioquic_fetch.py"
);

/// `aioquic_initials.py`: writes the first datagrams (Initials) of fresh client connections.
pub const INITIALS_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/aioquic_initials.py"
);

/// Runs a command to completion and returns its stdout, failing with `what` and the command's
/// output unless it succeeds.
fn run_setup(what: &str, cmd: &mut Command) -> Vec<u8> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {cmd:?} exited with {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// Whether `venv` runs Python with exactly the pinned aioquic importable.
fn venv_ready(venv: &Path) -> bool {
    Command::new(python(venv))
        .args(["-c", "import aioquic, sys; print(aioquic.__version__)"])
        .env("PYTHONNOUSERSITE", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| {
            o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == AIOQUIC_VERSION
        })
}

/// The virtualenv with the pinned aioquic, made once under `CARGO_TARGET_TMPDIR` and reused.
/// It is built beside its final place and renamed into it, so an interrupted or concurrent
/// build never leaves a half-made venv where a later run would trust it.
pub fn venv() -> PathBuf {
    // One build at a time within a test binary: its tests share the process's building path.
    static BUILDING: Mutex<()> = Mutex::new(());
    let _one = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let venv = base.join(format!("aioquic-{AIOQUIC_VERSION}-venv"));
    if venv_ready(&venv) {
        return venv;
    }
    match Command::new("python3")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!(
            "python3 is missing or broken (`python3 --version` exited with {}: {}): the aioquic \
             interop test needs python3 with the venv module (Debian: apt-get install python3 \
             python3-venv)",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        ),
        Err(e) => panic!(
            "python3 is missing ({e}): the aioquic interop test needs python3 with the venv \
             module on PATH (Debian: apt-get install python3 python3-venv)"
        ),
    }
    // Removed on every way out; after the rename there is nothing left to remove.
    let building = super::Scratch(base.join(format!(
        "aioquic-{AIOQUIC_VERSION}-venv.building-{}",
        std::process::id()
    )));
    let _ = std::fs::remove_dir_all(&building.0);
    run_setup(
        "python3 could not make a virtualenv (is the venv module installed? Debian: apt-get \
         install python3-venv)",
        Command::new("python3")
            .args(["-m", "venv"])
            .arg(&building.0),
    );
    run_setup(
        &format!(
            "pip could not install aioquic=={AIOQUIC_VERSION} from PyPI (is PyPI reachable from \
             this machine?)"
        ),
        Command::new(python(&building.0))
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
            ])
            .arg(format!("aioquic=={AIOQUIC_VERSION}"))
            .env("PYTHONNOUSERSITE", "1"),
    );
    assert!(
        venv_ready(&building.0),
        "aioquic=={AIOQUIC_VERSION} installed into {} but does not import",
        building.0.display()
    );
    if !venv_ready(&venv) {
        // A broken or outdated venv: replace it.
        let _ = std::fs::remove_dir_all(&venv);
    }
    if std::fs::rename(&building.0, &venv).is_err() {
        // Another run put its venv in place first; use it.
        assert!(
            venv_ready(&venv),
            "could not put the aioquic virtualenv in place at {}",
            venv.display()
        );
    }
    venv
}

/// Starts aioquic fetching `size` bytes from `addr` (server name `localhost`, trusting only
/// `cert`) with its own `timeout`; [`fetch_result`] reads what it did.
pub fn start_fetch(
    venv: &Path,
    addr: SocketAddr,
    cert: &Path,
    size: u64,
    timeout: Duration,
) -> Proc {
    Proc::spawn(
        "aioquic client",
        Command::new(python(venv))
            .arg(FETCH_SCRIPT)
            .arg(addr.ip().to_string())
            .arg(addr.port().to_string())
            .arg(cert)
            .arg(size.to_string())
            .args(["--timeout", &timeout.as_secs_f64().to_string()])
            .env("PYTHONNOUSERSITE", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    )
}

/// Waits at most `wait` for a fetch started with [`start_fetch`] and returns its JSON result
/// (`bytes`, `sha256`, `alpn`, `handshake_s`, `elapsed_s`); fails the test if it failed.
pub fn fetch_result(client: &mut Proc, wait: Duration) -> Value {
    let status = client.wait(wait);
    if !status.success() {
        client.fail(format!("{status} fetching"));
    }
    client
        .lines
        .try_iter()
        .find_map(|l| serde_json::from_str::<Value>(&l).ok())
        .unwrap_or_else(|| client.fail("printed no JSON result".to_string()))
}

/// The first datagram (a padded client Initial, 1200 bytes) of each of `count` fresh aioquic
/// client connections offering `alpn` to server name `localhost`, each with its own
/// connection IDs and TLS keys.
pub fn initials(venv: &Path, count: usize, alpn: &str) -> Vec<Vec<u8>> {
    let out = run_setup(
        "aioquic could not make Initials",
        Command::new(python(venv))
            .arg(INITIALS_SCRIPT)
            .arg(count.to_string())
            .arg(alpn)
            .env("PYTHONNOUSERSITE", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    let mut datagrams = Vec::with_capacity(count);
    let mut rest = &out[..];
    while let [hi, lo, tail @ ..] = rest {
        let len = usize::from(u16::from_be_bytes([*hi, *lo]));
        assert!(
            tail.len() >= len,
            "a truncated datagram from {INITIALS_SCRIPT}"
        );
        datagrams.push(tail[..len].to_vec());
        rest = &tail[len..];
    }
    assert_eq!(datagrams.len(), count, "datagrams from {INITIALS_SCRIPT}");
    datagrams
}
