//! Real QUIC over loopback: the server's congestion controller is a kleinrock-cc controller run
//! by the adapter, the client fetches and verifies the content.

use kleinrock_cc::{ControllerConfig, Params};
use kleinrock_quic::adapter::CcFactory;
use kleinrock_quic::endpoint::{fetch, serve, Error, ServeOptions};
use std::net::SocketAddr;

const SIZE: u64 = 5_000_000;

async fn fetch_with(name: &str) {
    let factory =
        CcFactory::new(name, Params::new(), ControllerConfig::default()).expect("registered");
    let server = serve(ServeOptions::new(factory))
        .await
        .expect("server starts");
    let addr = server.local_addr();
    assert!(addr.ip().is_loopback() && addr.port() != 0);
    let report = fetch(addr, server.cert_der(), SIZE)
        .await
        .unwrap_or_else(|e| panic!("{name}: fetch failed: {e}"));
    assert_eq!(report.bytes, SIZE, "{name}");
    assert_eq!(report.received_sha256, report.expected_sha256, "{name}");
    assert_eq!(report.expected_sha256.len(), 64);
    let ttfb = report.time_to_first_byte.expect("bytes arrived");
    assert!(ttfb <= report.elapsed, "{name}");
    assert!(report.goodput.bits_per_sec() > 0.0);

    // The server's controller saw the transfer: at least the payload was sent and acked.
    let probe = server.probe().sample().expect("a controller was built");
    assert!(
        probe.counters.bytes_acked >= SIZE,
        "{name}: {:?}",
        probe.counters
    );
    assert!(probe.counters.packets_sent >= SIZE / 1500, "{name}");
    assert!(
        probe.counters.ack_events > 0 && probe.min_rtt.is_some(),
        "{name}"
    );
    let hist = server.probe().rtt_histogram().expect("built");
    assert!(hist.count() > 0, "{name}");
    eprintln!(
        "{name}: {} B in {:?} ({}), ttfb {:?}, handshake {:?}, {} packets sent, {} lost, \
         RTT mean {:.0} us p99 {:.0} us",
        report.bytes,
        report.elapsed,
        report.goodput,
        ttfb,
        report.handshake,
        probe.counters.packets_sent,
        probe.counters.packets_lost,
        hist.mean().unwrap_or(0.0) / 1e3,
        hist.quantile(0.99).unwrap_or(0.0) / 1e3,
    );
    server.shutdown().await.expect("port released");
    // The port is free again.
    std::net::UdpSocket::bind(addr).expect("rebind after shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn newreno_fetches_5mb() {
    fetch_with("newreno").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cubic_fetches_5mb() {
    fetch_with("cubic").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bbr_fetches_5mb() {
    fetch_with("bbr").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn non_loopback_server_address_is_refused() {
    let factory =
        CcFactory::new("newreno", Params::new(), ControllerConfig::default()).expect("registered");
    let mut opts = ServeOptions::new(factory);
    opts.addr = "192.0.2.1:0".parse().expect("address");
    let e = serve(opts).await.expect_err("not loopback");
    assert!(matches!(e, Error::NotLoopback(_)), "{e}");
    let e = fetch(
        "192.0.2.1:4433".parse::<SocketAddr>().expect("address"),
        &[],
        1,
    )
    .await
    .expect_err("not loopback");
    assert!(e.to_string().contains("loopback"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_refuses_a_server_with_another_certificate() {
    let factory =
        CcFactory::new("newreno", Params::new(), ControllerConfig::default()).expect("registered");
    let server = serve(ServeOptions::new(factory.clone()))
        .await
        .expect("starts");
    let other = serve(ServeOptions::new(factory)).await.expect("starts");
    let e = fetch(server.local_addr(), other.cert_der(), 1000)
        .await
        .expect_err("untrusted certificate");
    assert!(matches!(e, Error::Connection(_)), "{e}");
    // Garbage instead of a certificate is an error, not a panic.
    let e = fetch(server.local_addr(), b"not a certificate", 1000)
        .await
        .expect_err("bad certificate");
    assert!(!e.to_string().is_empty());
    server.shutdown().await.expect("released");
    other.shutdown().await.expect("released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_and_repeated_fetches_on_one_server() {
    let factory =
        CcFactory::new("cubic", Params::new(), ControllerConfig::default()).expect("registered");
    let server = serve(ServeOptions::new(factory)).await.expect("starts");
    let empty = fetch(server.local_addr(), server.cert_der(), 0)
        .await
        .expect("zero bytes");
    assert_eq!((empty.bytes, empty.time_to_first_byte), (0, None));
    assert_eq!(empty.received_sha256, empty.expected_sha256);
    // A second connection gets a fresh controller; the probe follows it.
    let report = fetch(server.local_addr(), server.cert_der(), 100_000)
        .await
        .expect("fetch");
    assert_eq!(report.bytes, 100_000);
    let counters = server.probe().sample().expect("built").counters;
    assert!(counters.bytes_acked >= 100_000 && counters.bytes_acked < 200_000);
    server.shutdown().await.expect("released");
}
