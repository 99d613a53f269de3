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

use common::aioquic::{self, AIOQUIC_VERSION};
use common::Scratch;
use std::time::{Duration, Instant};

/// Bytes fetched.
const SIZE: u64 = 5_000_000;
/// Bottleneck between client and server.
const LINK: &str = "20Mbps,20ms,2bdp";
/// How long the Python client may take, start-up included (it has its own, shorter, timeout).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The client's own timeout for the fetch.
const CLIENT_FETCH_TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn aioquic_fetches_5mb_from_serve_through_emulate() {
    let started = Instant::now();
    let venv = aioquic::venv();
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
    eprintln!(
        "fetching {SIZE} bytes from the emulator at {emulator_addr} (server at {server_addr})"
    );
    let mut client = aioquic::start_fetch(&venv, emulator_addr, &cert, SIZE, CLIENT_FETCH_TIMEOUT);
    let result = aioquic::fetch_result(&mut client, CLIENT_TIMEOUT);
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
