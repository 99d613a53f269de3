//! Interop with an independent QUIC stack: aioquic (Python, from PyPI) fetches 5 MB from
//! `kleinrock serve` through `kleinrock emulate` and gets the right bytes.
//!
//! What a pass proves:
//! - `kleinrock serve` (noq + rustls) completes a QUIC v1 handshake with a client that shares
//!   no code with it: TLS 1.3 with its self-signed `localhost` certificate, which it wrote as
//!   PEM to `--cert-out` and aioquic verified against; ALPN `hq-interop` negotiated; transport
//!   parameters accepted both ways.
//! - The HTTP/0.9 request protocol of the QUIC interop runner (`GET /N` on a bidirectional
//!   stream) is served: the 5,000,000 bytes that arrive have the SHA-256 of the first 5,000,000
//!   bytes of the deterministic content (`content_sha256(CONTENT_SEED, ..)`), and the stream
//!   ends exactly there.
//! - The transfer survives a real-time bottleneck (`kleinrock emulate`, 20 Mbit/s, 20 ms, a
//!   two-BDP buffer) between the two: aioquic's ACKs and flow control drive the server's
//!   sender across a queue that can drop, and the emulator reports the run valid (it kept up).
//! - The server's controller was the one asked for (`--cc bbr`), its counters account for at
//!   least the bytes fetched, and both daemons stop cleanly on SIGTERM with their JSON summary.
//!
//! The test makes its own virtualenv under `CARGO_TARGET_TMPDIR` with `python3 -m venv` and
//! pip-installs the pinned aioquic into it once; later runs reuse it. Without python3 (with
//! the venv module) or without PyPI the test fails and says which is missing: it never skips.

mod common;

use common::{Proc, Scratch};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The aioquic release the client runs (exact pin; the newest stable release on PyPI when
/// this test was written).
const AIOQUIC_VERSION: &str = "1.7.2";
/// Bytes fetched.
const SIZE: u64 = 5_000_000;
/// Bottleneck between client and server.
const LINK: &str = "20Mbps,20ms,2bdp";
/// How long the Python client may take, start-up included (it has its own, shorter, timeout).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The client's own timeout for the fetch, seconds.
const CLIENT_FETCH_TIMEOUT_S: &str = "20";

const CLIENT_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop/aioquic_fetch.py"
);

/// Runs a set-up command to completion, failing with `what` and the command's output.
fn run_setup(what: &str, cmd: &mut Command) {
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
}

fn venv_python(venv: &Path) -> PathBuf {
    venv.join("bin").join("python")
}

/// Whether `venv` runs Python with exactly the pinned aioquic importable.
fn venv_ready(venv: &Path) -> bool {
    Command::new(venv_python(venv))
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
fn aioquic_venv() -> PathBuf {
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
    let building = Scratch(base.join(format!(
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
        Command::new(venv_python(&building.0))
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

#[test]
fn aioquic_fetches_5mb_from_serve_through_emulate() {
    let started = Instant::now();
    let venv = aioquic_venv();
    eprintln!(
        "aioquic {AIOQUIC_VERSION} venv ready at {} ({:.1?})",
        venv.display(),
        started.elapsed()
    );

    let scratch = Scratch::new("interop");
    let cert = scratch.0.join("cert.pem");
    let cert_arg = cert.to_str().expect("a UTF-8 scratch path");

    let (mut server, server_addr, listening) = common::serve("bbr", cert_arg);
    let alpn = &listening["alpn"];
    assert!(
        alpn.as_array()
            .is_some_and(|a| a.iter().any(|p| p == "hq-interop")),
        "server does not list ALPN hq-interop: {listening}"
    );
    let pem = std::fs::read_to_string(&cert).unwrap_or_else(|e| {
        panic!(
            "server said it listens but {} is unreadable: {e}",
            cert.display()
        )
    });
    assert!(
        pem.contains("-----BEGIN CERTIFICATE-----"),
        "{} is not a PEM certificate",
        cert.display()
    );

    let (mut emulator, emulator_addr) = common::emulate(server_addr, LINK, &[]);

    let fetch_started = Instant::now();
    let mut client = Proc::spawn(
        "aioquic client",
        Command::new(venv_python(&venv))
            .arg(CLIENT_SCRIPT)
            .arg(emulator_addr.ip().to_string())
            .arg(emulator_addr.port().to_string())
            .arg(&cert)
            .arg(SIZE.to_string())
            .args(["--timeout", CLIENT_FETCH_TIMEOUT_S])
            .env("PYTHONNOUSERSITE", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1"),
    );
    let status = client.wait(CLIENT_TIMEOUT);
    if !status.success() {
        client.fail(format!(
            "{status} fetching {SIZE} bytes from the emulator at {emulator_addr} (server at \
             {server_addr})"
        ));
    }
    let result: Value = client
        .lines
        .try_iter()
        .find_map(|l| serde_json::from_str::<Value>(&l).ok())
        .unwrap_or_else(|| client.fail("printed no JSON result".to_string()));
    let fetch_time = fetch_started.elapsed();
    eprintln!("aioquic client: {result} ({fetch_time:.1?} with interpreter start-up)");

    let expected_sha256 =
        kleinrock_quic::endpoint::content_sha256(kleinrock_quic::endpoint::CONTENT_SEED, SIZE);
    assert_eq!(
        result["bytes"].as_u64(),
        Some(SIZE),
        "bytes fetched: {result}"
    );
    assert_eq!(
        result["sha256"].as_str(),
        Some(expected_sha256.as_str()),
        "SHA-256 of the fetched bytes: {result}"
    );
    assert_eq!(result["alpn"], "hq-interop", "negotiated ALPN: {result}");

    let emulated = emulator.terminate();
    eprintln!("emulator stopped: {emulated}");
    let served = server.terminate();
    eprintln!("server stopped: {served}");

    assert_eq!(served["cc"], "bbr", "server's controller: {served}");
    assert!(
        served["connections"].as_u64().is_some_and(|n| n >= 1),
        "server counted no connection: {served}"
    );
    let bytes_sent = served["last_connection"]["counters"]["bytes_sent"]
        .as_u64()
        .unwrap_or_else(|| panic!("server's stopped line has no counters.bytes_sent: {served}"));
    // aioquic did not offer kleinrock-ts: no datagram either way carried a timestamp trailer.
    assert_eq!(
        (&served["stamped_in"], &served["stamped_out"]),
        (&serde_json::json!(0), &serde_json::json!(0)),
        "timestamps with a peer that did not agree to them: {served}"
    );
    assert!(
        bytes_sent >= SIZE,
        "server sent {bytes_sent} bytes, fewer than the {SIZE} fetched: {served}"
    );
    assert_eq!(
        emulated["valid"], true,
        "emulator run not valid (it did not keep up with the link): {emulated}"
    );

    eprintln!("interop test done in {:.1?}", started.elapsed());
}
