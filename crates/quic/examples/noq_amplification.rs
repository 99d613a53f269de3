//! The smallest reproducer of noq's anti-amplification overshoot (docs/quic.md, "Unvalidated
//! addresses"): a noq 1.4 server with its default configuration, and one client Initial (the
//! first datagram of a noq client, caught on a socket that never answers) replayed once from a
//! fresh UDP socket that never answers either. Every byte the server sends back in 5 s is
//! counted: RFC 9000 §8.1 allows three times the 1,200 bytes received until the address is
//! validated; noq lets a whole datagram go while a byte of that budget is left, and sends more.
//!
//! `cargo run --release -p kleinrock-quic --example noq_amplification`

use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a certificate");
    let cert = key.cert.der().clone();
    let key_der =
        noq::rustls::pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into());
    let server_config =
        noq::ServerConfig::with_single_cert(vec![cert.clone()], key_der).expect("a config");
    let server = noq::Endpoint::server(server_config, "127.0.0.1:0".parse().expect("an address"))
        .expect("a server");
    let server_addr = server.local_addr().expect("its address");
    tokio::spawn(async move {
        while let Some(incoming) = server.accept().await {
            // Accept, and let the handshake run: it never completes.
            tokio::spawn(async move {
                if let Ok(connecting) = incoming.accept() {
                    let _ = connecting.await;
                }
            });
        }
    });

    // A noq client's first datagram (a padded Initial), caught on a socket that never answers.
    let catcher = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    let mut roots = noq::rustls::RootCertStore::empty();
    roots.add(cert).expect("the certificate");
    let client_config =
        noq::ClientConfig::with_root_certificates(Arc::new(roots)).expect("a client config");
    let client =
        noq::Endpoint::client("127.0.0.1:0".parse().expect("an address")).expect("a client");
    let _connecting = client
        .connect_with(
            client_config,
            catcher.local_addr().expect("its address"),
            "localhost",
        )
        .expect("a connection attempt");
    let mut initial = vec![0u8; 65_536];
    let n = catcher.recv(&mut initial).expect("the client's Initial");
    initial.truncate(n);

    // Replayed once from a fresh socket to the server; every byte back is counted for 5 s.
    let probe = UdpSocket::bind("127.0.0.1:0").expect("a socket");
    probe
        .set_read_timeout(Some(Duration::from_millis(100)))
        .expect("a timeout");
    probe.send_to(&initial, server_addr).expect("sent");
    let start = Instant::now();
    let (mut total, mut buf) = (0, vec![0u8; 65_536]);
    while start.elapsed() < Duration::from_secs(5) {
        if let Ok(len) = probe.recv(&mut buf) {
            total += len;
            println!("{:>6.3} s: {len} bytes", start.elapsed().as_secs_f64());
        }
    }
    println!(
        "sent {n} bytes, received {total} bytes: {:.2}x (RFC 9000 §8.1: at most 3x)",
        total as f64 / n as f64
    );
}
