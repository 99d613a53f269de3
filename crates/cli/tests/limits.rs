//! The bounds of `kleinrock serve` against clients that ask for more than it should give
//! (issue 14):
//!
//! > A server that other people's clients reach must bound concurrent connections, streams per
//! > connection and buffered bytes, refuse the excess cleanly (CONNECTION_REFUSED / stream
//! > limits), and give memory back when connections end.
//!
//! What a pass proves:
//! - `a_flood_stays_within_the_memory_bound_and_a_client_is_served`: 300 connections that each
//!   open 20 streams asking for 1 GB, from a client that then hears nothing (its socket drops
//!   every datagram, so it acknowledges nothing and the server must keep everything it wrote),
//!   keep `serve` (default limits) under [`RSS_BOUND`], the bound the README states, sampled
//!   every 50 ms from the flood's start until it ends; a sample above it kills the server and
//!   fails the test with the number. Each connection has exactly `--max-streams` (8) of its 20
//!   requests open, the other 12 wait. Meanwhile a 5 MB download by the crate's own client
//!   completes, verified. Once the flood's connections close, the server's resident memory
//!   falls to within [`FALLBACK_MARGIN`] of what it was before the flood, within
//!   [`FALLBACK_TIME`].
//! - `excess_connections_are_refused_and_excess_streams_wait`: with `--max-connections 3
//!   --max-streams 2`, the 4th and 5th connections are refused with CONNECTION_REFUSED; a
//!   connection's third request opens only after one of its first two ends; once a connection
//!   closes, a new one is accepted; the `stopped` line counts the refusals.
//!
//! The flood's client is noq itself, in this process, so the server's memory is measured alone
//! (`/proc/PID/status`, VmRSS). Linux-only.
#![cfg(target_os = "linux")]

mod common;

use common::rss::{mib, rss, Sampler, SAMPLE_EVERY};
use common::Scratch;
use kleinrock_quic::endpoint::{self, certificate_der};
use noq::crypto::rustls::QuicClientConfig;
use noq::rustls;
use noq::rustls::pki_types::CertificateDer;
use noq::udp::RecvMeta;
use noq::{AsyncUdpSocket, Runtime, TokioRuntime, TransportErrorCode, UdpSender, VarInt};
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::{Duration, Instant};
use tokio::task::JoinSet;

/// Connections of the flood.
const FLOOD_CONNECTIONS: usize = 300;
/// Flood handshakes under way at once.
const HANDSHAKES_AT_ONCE: usize = 8;
/// Requests (bidirectional streams) each flood connection tries to open.
const FLOOD_STREAMS: usize = 20;
/// Bytes each flood request asks for.
const FLOOD_REQUEST: u64 = 1 << 30;
/// `serve`'s default `--max-streams`.
const MAX_STREAMS: usize = endpoint::DEFAULT_MAX_STREAMS as usize;
/// The bound on `serve`'s resident memory under a download flood with the default limits,
/// as the README's "Limits" paragraph states and sums it: 16 MiB of program and runtime, the
/// windows (128 MiB of budget plus 64 KiB for each of 512 connections), a 16 KiB write buffer
/// for each of 8 streams of 512 connections (64 MiB), 128 KiB of noq and task state per
/// connection (64 MiB): 304 MiB, rounded up.
const RSS_BOUND: u64 = 320 << 20;
/// How long the flood holds its connections open once every request is made.
const HOLD: Duration = Duration::from_secs(2);
/// Bytes of the legitimate download beside the flood.
const LEGIT_FETCH: u64 = 5_000_000;
/// How long the legitimate download may take.
const LEGIT_TIMEOUT: Duration = Duration::from_secs(30);
/// How far above its pre-flood memory the server may stay once the flood has closed.
const FALLBACK_MARGIN: u64 = 32 << 20;
/// How long after the flood's close the server has to fall back.
const FALLBACK_TIME: Duration = Duration::from_secs(5);
/// Bytes of an answer larger than the client's stream window.
const BIG_ANSWER: u64 = 4_000_000;
/// How long the flood's client waits for its connections to close.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long `serve` may take to stop after the flood: it waits for its connections' closing
/// periods, three probe timeouts each, which the flood's handshakes can lengthen to seconds.
const STOP_AFTER_FLOOD: Duration = Duration::from_secs(30);
/// How long the flood's handshakes and requests may take.
const SETUP_TIMEOUT: Duration = Duration::from_secs(30);

/// noq's socket that drops every datagram it receives while `deaf` is set: a client that
/// acknowledges nothing, so the server keeps all it wrote, at almost no CPU cost.
struct DeafSocket {
    inner: Box<dyn AsyncUdpSocket>,
    deaf: Arc<AtomicBool>,
}

impl std::fmt::Debug for DeafSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeafSocket").finish_non_exhaustive()
    }
}

impl AsyncUdpSocket for DeafSocket {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        self.inner.create_sender()
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.inner.poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(_)) if self.deaf.load(Ordering::Relaxed) => continue,
                other => return other,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    fn max_receive_segments(&self) -> NonZeroUsize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

/// A noq client of ALPN `kleinrock` trusting `cert`, that grants the server `window` bytes per
/// stream (and no connection-level limit).
fn client_config(cert: &[u8], window: u32) -> noq::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(cert.to_vec()))
        .expect("the server's certificate is valid");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3")
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![endpoint::ALPN.to_vec()];
    let crypto = QuicClientConfig::try_from(tls).expect("a QUIC TLS configuration");
    let mut config = noq::ClientConfig::new(Arc::new(crypto));
    let mut transport = noq::TransportConfig::default();
    transport
        .stream_receive_window(VarInt::from_u32(window))
        .receive_window(VarInt::MAX)
        .max_concurrent_uni_streams(VarInt::from_u32(0));
    config.transport_config(Arc::new(transport));
    config
}

/// A client endpoint on its own loopback port whose socket is deaf while `deaf` is set.
fn client_endpoint(config: noq::ClientConfig, deaf: Arc<AtomicBool>) -> noq::Endpoint {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("a client socket binds");
    socket.set_nonblocking(true).expect("non-blocking");
    let inner = TokioRuntime
        .wrap_udp_socket(socket)
        .expect("noq wraps the socket");
    let endpoint = noq::Endpoint::new_with_abstract_socket(
        noq::EndpointConfig::default(),
        None,
        Box::new(DeafSocket { inner, deaf }),
        Arc::new(TokioRuntime),
    )
    .expect("a client endpoint");
    endpoint.set_default_client_config(config);
    endpoint
}

/// Connects a new client endpoint to `server`.
async fn connect(
    server: SocketAddr,
    config: noq::ClientConfig,
    deaf: Arc<AtomicBool>,
) -> (noq::Endpoint, Result<noq::Connection, noq::ConnectionError>) {
    let endpoint = client_endpoint(config, deaf);
    let conn = match endpoint.connect(server, endpoint::SERVER_NAME) {
        Ok(connecting) => connecting.await,
        Err(e) => panic!("cannot start a connection to {server}: {e}"),
    };
    (endpoint, conn)
}

/// A `kleinrock` download request for `size` bytes.
fn request(size: u64) -> [u8; 9] {
    let mut r = [b'G'; 9];
    r[1..].copy_from_slice(&size.to_be_bytes());
    r
}

fn refused(e: &noq::ConnectionError) -> bool {
    matches!(e, noq::ConnectionError::ConnectionClosed(c)
        if c.error_code == TransportErrorCode::CONNECTION_REFUSED)
}

/// Waits until `cond` holds, polling, for at most `timeout`; whether it held.
async fn eventually(timeout: Duration, cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Waits for all of `futures`.
async fn futures_join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) {
    for f in futures {
        f.await;
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn a_flood_stays_within_the_memory_bound_and_a_client_is_served() {
    let started = Instant::now();
    let scratch = Scratch::new("limits-flood");
    let cert_path = scratch.0.join("cert.pem");
    let cert_arg = cert_path.to_str().expect("a UTF-8 scratch path");
    let (mut server, addr, _) = common::serve("cubic", cert_arg);
    let pid = server.pid();
    let cert = certificate_der(&std::fs::read(&cert_path).expect("the certificate is written"))
        .expect("a PEM certificate");
    thread::sleep(Duration::from_millis(200));
    let before = rss(pid);
    let sampler = Sampler::start(pid, RSS_BOUND);
    eprintln!(
        "serve on {addr}: {:.1} MiB resident before the flood",
        mib(before)
    );

    let rt = runtime();
    let (opened, fetched, closed_at) = rt.block_on(async {
        // 1. The flood's handshakes, each from its own port.
        let deaf = Arc::new(AtomicBool::new(false));
        let config = client_config(&cert, 16 << 20);
        // At most HANDSHAKES_AT_ONCE at a time: this client's one thread, busy with hundreds
        // of handshakes at once, would acknowledge late, and the server would measure
        // round-trip times of a third of a second and take three probe timeouts of several
        // seconds to forget each connection once closed.
        let slots = Arc::new(tokio::sync::Semaphore::new(HANDSHAKES_AT_ONCE));
        let mut connects = JoinSet::new();
        for _ in 0..FLOOD_CONNECTIONS {
            let (config, deaf, slots) = (config.clone(), deaf.clone(), slots.clone());
            connects.spawn(async move {
                let _slot = slots
                    .acquire_owned()
                    .await
                    .expect("the semaphore stays open");
                connect(addr, config, deaf).await
            });
        }
        let mut flood = Vec::new();
        while let Some(done) = connects.join_next().await {
            let (endpoint, conn) = done.expect("a connect task");
            match conn {
                Ok(conn) => flood.push((endpoint, conn)),
                Err(e) => panic!("a flood connection failed ({e}); the defaults admit 512"),
            }
        }
        let handshakes = started.elapsed();
        // 2. Deaf from here: the server's data and acknowledgements are dropped.
        deaf.store(true, Ordering::Relaxed);
        // 3. Every connection asks for 1 GB on each of 20 streams; the server lets 8 open.
        let opened = Arc::new(AtomicU64::new(0));
        let release = Arc::new(tokio::sync::Notify::new());
        let mut requests = JoinSet::new();
        for (_, conn) in &flood {
            for _ in 0..FLOOD_STREAMS {
                let (conn, opened, release) = (conn.clone(), opened.clone(), release.clone());
                requests.spawn(async move {
                    let released = release.notified();
                    tokio::pin!(released);
                    let open = tokio::select! {
                        open = conn.open_bi() => open,
                        _ = &mut released => return,
                    };
                    let Ok((mut send, recv)) = open else { return };
                    opened.fetch_add(1, Ordering::Relaxed);
                    if send.write_all(&request(FLOOD_REQUEST)).await.is_ok() {
                        let _ = send.finish();
                    }
                    released.await;
                    drop((send, recv));
                });
            }
        }
        let all_open = (flood.len() * MAX_STREAMS) as u64;
        let in_time =
            eventually(SETUP_TIMEOUT, || opened.load(Ordering::Relaxed) >= all_open).await;
        assert!(
            in_time,
            "only {} of the {all_open} requests the server should admit were open after \
             {SETUP_TIMEOUT:?}",
            opened.load(Ordering::Relaxed)
        );
        eprintln!(
            "flood: {FLOOD_CONNECTIONS} connections in {handshakes:.2?}, {all_open} requests \
             open at {:.2?}; peak so far {:.1} MiB",
            started.elapsed(),
            mib(sampler.check("while the flood connected"))
        );

        // 4. A legitimate download while the flood holds its connections.
        let fetch_started = Instant::now();
        let fetched =
            tokio::time::timeout(LEGIT_TIMEOUT, endpoint::fetch(addr, &cert, LEGIT_FETCH))
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "the legitimate {LEGIT_FETCH}-byte download did not finish within \
                     {LEGIT_TIMEOUT:?} beside the flood (is the machine overloaded?)"
                    )
                })
                .unwrap_or_else(|e| panic!("the legitimate download beside the flood failed: {e}"));
        eprintln!(
            "legitimate download: {} bytes verified in {:.2?}",
            fetched.bytes,
            fetch_started.elapsed()
        );
        tokio::time::sleep(HOLD).await;
        // No more than the stream limit ever opened.
        let opened = opened.load(Ordering::Relaxed);

        // 5. The flood closes, still deaf: hearing again first would give both ends round-trip
        // samples seconds long (acknowledgements of packets sent before the silence), and
        // closing periods of three probe timeouts as long.
        release.notify_waiters();
        for (_, conn) in &flood {
            conn.close(VarInt::from_u32(0), b"flood over");
        }
        let closed_at = Instant::now();
        let idle = flood.iter().map(|(endpoint, _)| endpoint.wait_idle());
        let _ = tokio::time::timeout(CLOSE_WAIT, futures_join_all(idle)).await;
        eprintln!("flood closed in {:.2?}", closed_at.elapsed());
        drop(flood);
        while requests.join_next().await.is_some() {}
        (opened, fetched, closed_at)
    });
    let peak = sampler.check("during the flood");
    eprintln!(
        "peak {:.1} MiB resident during the flood (bound {:.0} MiB)",
        mib(peak),
        mib(RSS_BOUND)
    );
    assert_eq!(
        opened,
        (FLOOD_CONNECTIONS * MAX_STREAMS) as u64,
        "each flood connection should have exactly --max-streams requests open"
    );
    assert_eq!(fetched.bytes, LEGIT_FETCH);

    // 6. Memory falls back once the flood's connections are gone.
    let target = before + FALLBACK_MARGIN;
    let mut now = rss(pid);
    while now > target && closed_at.elapsed() < FALLBACK_TIME {
        thread::sleep(SAMPLE_EVERY);
        now = rss(pid);
    }
    let took = closed_at.elapsed();
    let peak = sampler.stop();

    assert!(
        now <= target,
        "kleinrock serve still has {:.1} MiB resident {took:.1?} after the flood closed: more \
         than {:.0} MiB above the {:.1} MiB it had before (peak {:.1} MiB)",
        mib(now),
        mib(FALLBACK_MARGIN),
        mib(before),
        mib(peak)
    );
    eprintln!(
        "{:.1} MiB resident {took:.2?} after the flood closed ({:.1} MiB before it, peak {:.1} MiB)",
        mib(now),
        mib(before),
        mib(peak)
    );

    let stopping = Instant::now();
    let stopped = server.terminate_within(STOP_AFTER_FLOOD);
    eprintln!("serve stopped in {:.2?}", stopping.elapsed());
    assert_eq!(
        stopped["connections"],
        FLOOD_CONNECTIONS as u64 + 1,
        "the flood's connections and the legitimate one: {stopped}"
    );
    assert_eq!(stopped["refused_connections"], 0, "{stopped}");
    eprintln!(
        "stopped with {} connections still closing; test took {:.1?}",
        stopped["open_connections"],
        started.elapsed()
    );
}

#[test]
fn excess_connections_are_refused_and_excess_streams_wait() {
    let scratch = Scratch::new("limits-refuse");
    let cert_path = scratch.0.join("cert.pem");
    let cert_arg = cert_path.to_str().expect("a UTF-8 scratch path");
    let (mut server, addr, _) = common::serve_with(
        "cubic",
        cert_arg,
        &["--max-connections", "3", "--max-streams", "2"],
    );
    let cert = certificate_der(&std::fs::read(&cert_path).expect("the certificate is written"))
        .expect("a PEM certificate");

    runtime().block_on(async {
        // Never deaf here.
        let deaf = Arc::new(AtomicBool::new(false));
        let config = client_config(&cert, 1 << 20);
        // Three connections fill the server; the fourth and fifth are refused.
        let mut admitted = Vec::new();
        for i in 0..3 {
            let (endpoint, conn) = connect(addr, config.clone(), deaf.clone()).await;
            let conn = conn.unwrap_or_else(|e| panic!("connection {i} of 3 failed: {e}"));
            admitted.push((endpoint, conn));
        }
        for i in 3..5 {
            let (_endpoint, conn) = connect(addr, config.clone(), deaf.clone()).await;
            match conn {
                Err(e) if refused(&e) => {}
                Err(e) => panic!("connection {i} failed otherwise than refused: {e}"),
                Ok(_) => panic!("connection {i} was accepted beyond --max-connections 3"),
            }
        }

        // Two requests open; the third waits until one of them ends. Each asks for more than
        // the client's 1 MiB stream window, so that it cannot end before it is read.
        let conn = admitted[0].1.clone();
        let mut first = Vec::new();
        for _ in 0..2 {
            let (mut send, recv) = conn.open_bi().await.expect("a stream within the limit");
            send.write_all(&request(BIG_ANSWER))
                .await
                .expect("a request");
            send.finish().expect("finish");
            first.push((send, recv));
        }
        let mut third = Box::pin(conn.open_bi());
        let early = tokio::time::timeout(Duration::from_millis(500), &mut third).await;
        assert!(
            early.is_err(),
            "a third request opened while two were open under --max-streams 2"
        );
        let (_, mut recv) = first.remove(0);
        let body = recv
            .read_to_end(2 * BIG_ANSWER as usize)
            .await
            .expect("the first answer");
        assert_eq!(body.len() as u64, BIG_ANSWER);
        let (mut send, mut recv) = tokio::time::timeout(Duration::from_secs(5), third)
            .await
            .expect("the third request opens once the first ended")
            .expect("a stream");
        send.write_all(&request(1000)).await.expect("a request");
        send.finish().expect("finish");
        assert_eq!(recv.read_to_end(4096).await.expect("an answer").len(), 1000);

        // A closed connection frees its place.
        let (endpoint, conn) = admitted.pop().expect("three connections");
        conn.close(VarInt::from_u32(0), b"done");
        let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
        let mut accepted = false;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !accepted && Instant::now() < deadline {
            let (_endpoint, conn) = connect(addr, config.clone(), deaf.clone()).await;
            match conn {
                Ok(conn) => {
                    conn.close(VarInt::from_u32(0), b"done");
                    accepted = true;
                }
                Err(e) if refused(&e) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("the connection after a close failed: {e}"),
            }
        }
        assert!(
            accepted,
            "no connection was accepted after one of the three closed"
        );
        for (endpoint, conn) in admitted {
            conn.close(VarInt::from_u32(0), b"done");
            let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
        }
    });

    let stopped = server.terminate();
    let refused_count = stopped["refused_connections"].as_u64().unwrap_or(0);
    assert!(
        refused_count >= 2,
        "the stopped line should count the two refusals: {stopped}"
    );
}
