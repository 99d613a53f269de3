//! Loopback QUIC endpoints on noq + rustls: a server whose congestion controller is a
//! [`CcFactory`], a client that fetches a number of bytes and verifies them, and a client that
//! uploads with its own controller.
//!
//! This module owns the tiny request protocols, the deterministic content, the TLS set-up and
//! the endpoint errors. Every stream carries one request on a client-initiated bidirectional
//! stream, and the content is always the first bytes of the [`ContentStream`] seeded with
//! [`CONTENT_SEED`]:
//!
//! - ALPN `kleinrock` (or `kleinrock-ts`, the same with datagram timestamps, [`crate::stamps`]):
//!   the client sends a command byte and an 8-byte big-endian length `N`. `G`: the server
//!   answers with `N` bytes of content and finishes. `P`: the client sends `N` bytes of content
//!   and finishes; the server answers with the SHA-256 (32 bytes) of what it read.
//! - ALPN `hq-interop` (HTTP/0.9 as in the QUIC interop runner), for peers that are not
//!   kleinrock: the client sends `GET /N` and a line end and finishes; the server answers with
//!   `N` bytes of content.
//!
//! The server's certificate is self-signed, made at start-up with rcgen for `localhost`; the
//! client trusts exactly that certificate. Only loopback addresses are accepted.

use crate::adapter::{CcCounters, CcFactory, CcProbe};
use crate::emulator::IPV4_UDP_HEADER;
use crate::limits::{WindowBudget, MIN_CONNECTION_WINDOW};
use crate::lock;
use crate::stamps::{StampStats, StampedSocket, Stamps, ALPN_STAMPED, TRAILER_LEN};
use crate::subflows::{self, Leg, Pairing, SubflowReport};
use crate::timers::FineRuntime;
use kleinrock_cc::Rate;
use noq::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use noq::rustls;
use noq::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use noq::{
    ClientConfig, EndpointConfig, MtuDiscoveryConfig, ServerConfig, TransportConfig, VarInt,
};
use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::task::{JoinHandle, JoinSet};

/// The ALPN protocol of kleinrock endpoints without timestamps.
pub const ALPN: &[u8] = b"kleinrock";
/// HTTP/0.9 over QUIC, as the QUIC interop runner's clients speak it.
pub const ALPN_HQ: &[u8] = b"hq-interop";
/// Longest `hq-interop` request line read, bytes.
const MAX_HQ_REQUEST: usize = 1024;
/// The name the certificate is made for and the client asks for.
pub const SERVER_NAME: &str = "localhost";
/// Seed of the content the server sends.
pub const CONTENT_SEED: u64 = 0x6b6c_6569_6e72_6f63;
/// Socket buffer size asked for, bytes (Linux caps it at `net.core.{r,w}mem_max`).
pub const DEFAULT_SOCKET_BUFFER: usize = 8 << 20;
/// Largest UDP payload either endpoint accepts (RFC 9000 §18.2 limit).
const MAX_UDP_PAYLOAD: u16 = 65527;
/// Stream flow-control window [`fetch`] grants, bytes. noq's receiver closes a connection
/// whose stream buffer holds more than 1024 gaps (`assembler.rs` MAX_CHUNKS), which scattered
/// loss on an unthrottled loopback path can cause with large windows; a window of fewer than
/// 1024 packets cannot. Paths with a larger BDP size the window with [`fetch_with_window`].
pub const LOOPBACK_RECEIVE_WINDOW: u64 = 1 << 20;
/// Bytes a client buffers for sending ([`upload`]).
const SEND_WINDOW: u64 = 64 << 20;
/// Size of one write of content by a client, and of one piece of content hashed.
const WRITE_CHUNK: usize = 64 << 10;
/// Size of one write of content on the server: every stream waiting for its window keeps one
/// such buffer, so it counts in the server's memory bound (`max_connections x max_streams`).
const SERVE_CHUNK: usize = 16 << 10;
/// Default of [`ServeOptions::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;
/// Default of [`ServeOptions::max_streams`].
pub const DEFAULT_MAX_STREAMS: u32 = 8;
/// Default of [`ServeOptions::connection_window`].
pub const DEFAULT_CONNECTION_WINDOW: u64 = 16 << 20;
/// Default of [`ServeOptions::window_budget`].
pub const DEFAULT_WINDOW_BUDGET: u64 = 128 << 20;
/// Default of [`ServeOptions::retry_above`].
pub const DEFAULT_RETRY_ABOVE: usize = 64;
/// Default of [`ServeOptions::max_handshakes`].
pub const DEFAULT_MAX_HANDSHAKES: usize = 256;
/// How long a handshake may take before the server gives it up (noq would keep it for its
/// idle timeout, 30 s): three probe timeouts of a lossy 1 s path, and Retry's extra round trip.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long noq keeps a handshake the server gave up (or that failed) before it drops it: its
/// closing period, three probe timeouts of about 1 s each before any RTT sample (RFC 9002's
/// 333 ms initial RTT), and a margin.
const FAILED_HANDSHAKE_DRAIN: Duration = Duration::from_secs(4);
/// Connections [`ServerHandle::connections`] reports, the newest.
pub const RECENT_CONNECTIONS: usize = 32;
/// Most connection attempts noq keeps waiting for the server to accept or refuse them (it
/// refuses further ones itself), and the bytes it buffers for each and for all of them.
const MAX_INCOMING: usize = 1024;
const INCOMING_BUFFER: u64 = 64 << 10;
const INCOMING_BUFFER_TOTAL: u64 = 4 << 20;
/// Longest wait for noq to drop an ended connection (its idle timeout: by then it has).
const GONE_WAIT: Duration = Duration::from_secs(30);
/// How often an ended connection is checked for having been dropped.
const GONE_POLL: Duration = Duration::from_millis(20);
/// How long after a connection ends the server gives freed memory back to the system (one
/// trim for all the connections that end meanwhile).
const TRIM_DELAY: Duration = Duration::from_millis(500);
/// How long the client waits for its connection close to drain.
const CLOSE_DRAIN: Duration = Duration::from_millis(500);
/// How long a shutdown waits for the port to be released.
const RELEASE_WAIT: Duration = Duration::from_secs(2);

/// Why an endpoint could not do its job.
#[derive(Debug)]
pub enum Error {
    /// The address is not a loopback address; these endpoints only run on loopback.
    NotLoopback(SocketAddr),
    /// A socket operation failed.
    Io {
        /// What was being done.
        context: &'static str,
        /// The error.
        source: std::io::Error,
    },
    /// The certificate or TLS configuration could not be made or used.
    Tls(String),
    /// The connection could not be made or was lost.
    Connection(String),
    /// A stream failed.
    Stream(String),
    /// The content that arrived is not the content asked for.
    Verify {
        /// Bytes asked for.
        expected_bytes: u64,
        /// Bytes that arrived.
        received_bytes: u64,
        /// SHA-256 of the expected content, hex.
        expected_sha256: String,
        /// SHA-256 of what arrived, hex.
        received_sha256: String,
    },
    /// The server's port was still in use after shutdown.
    NotReleased(SocketAddr),
    /// The server's answer breaks the protocol.
    Protocol(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotLoopback(a) => write!(
                f,
                "{a} is not a loopback address; use 127.0.0.1 or ::1 (the QUIC endpoints run on loopback only)"
            ),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
            Error::Tls(e) => write!(f, "TLS: {e}"),
            Error::Connection(e) => write!(f, "QUIC connection: {e}"),
            Error::Stream(e) => write!(f, "QUIC stream: {e}"),
            Error::Verify {
                expected_bytes,
                received_bytes,
                expected_sha256,
                received_sha256,
            } => write!(
                f,
                "content mismatch: expected {expected_bytes} bytes with SHA-256 {expected_sha256}, \
                 received {received_bytes} bytes with SHA-256 {received_sha256}"
            ),
            Error::NotReleased(a) => write!(f, "port {a} still in use after shutdown"),
            Error::Protocol(e) => write!(f, "protocol: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(crate) fn io(context: &'static str) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { context, source }
}

fn tls(e: impl fmt::Display) -> Error {
    Error::Tls(e.to_string())
}

pub(crate) fn connection(e: impl fmt::Display) -> Error {
    Error::Connection(e.to_string())
}

/// A stream error with its cause (a lost connection says why it was lost).
pub(crate) fn stream(e: impl std::error::Error) -> Error {
    match std::error::Error::source(&e) {
        Some(cause) => Error::Stream(format!("{e}: {cause}")),
        None => Error::Stream(e.to_string()),
    }
}

/// Deterministic content: the outputs of splitmix64 from a seed, little-endian, so both ends
/// produce the same bytes without storing them.
#[derive(Clone, Debug)]
pub struct ContentStream {
    state: u64,
    word: [u8; 8],
    used: usize,
}

impl ContentStream {
    /// The stream for `seed`.
    pub fn new(seed: u64) -> Self {
        ContentStream {
            state: seed,
            word: [0; 8],
            used: 8,
        }
    }

    fn next_word(&mut self) -> u64 {
        // splitmix64 (Steele, Lea, Flood 2014).
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Fills `out` with the next bytes of the stream.
    pub fn fill(&mut self, out: &mut [u8]) {
        let mut out = out;
        // Finish the current word.
        let take = (8 - self.used).min(out.len());
        out[..take].copy_from_slice(&self.word[self.used..self.used + take]);
        self.used += take;
        out = &mut out[take..];
        let mut chunks = out.chunks_exact_mut(8);
        for chunk in &mut chunks {
            chunk.copy_from_slice(&self.next_word().to_le_bytes());
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            self.word = self.next_word().to_le_bytes();
            tail.copy_from_slice(&self.word[..tail.len()]);
            self.used = tail.len();
        }
    }
}

/// SHA-256, hex, of the first `size` bytes of the content for `seed`.
pub fn content_sha256(seed: u64, size: u64) -> String {
    let mut content = ContentStream::new(seed);
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; WRITE_CHUNK];
    let mut left = size;
    while left > 0 {
        let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        content.fill(&mut buf[..n]);
        hash.update(&buf[..n]);
        left -= n as u64;
    }
    hex(hash.finish().as_ref())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn ensure_loopback(addr: SocketAddr) -> Result<(), Error> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(Error::NotLoopback(addr))
    }
}

/// A non-blocking UDP socket bound to `addr` with buffers of `buffer` bytes asked for.
pub(crate) fn udp_socket(addr: SocketAddr, buffer: usize) -> Result<UdpSocket, Error> {
    let socket = UdpSocket::bind(addr).map_err(io("binding the UDP socket"))?;
    let sock = socket2::SockRef::from(&socket);
    // Best effort: the kernel caps the sizes (net.core.rmem_max / wmem_max) without failing.
    sock.set_recv_buffer_size(buffer)
        .map_err(io("setting the UDP receive buffer"))?;
    sock.set_send_buffer_size(buffer)
        .map_err(io("setting the UDP send buffer"))?;
    socket
        .set_nonblocking(true)
        .map_err(io("making the UDP socket non-blocking"))?;
    Ok(socket)
}

fn socket_buffers(socket: &UdpSocket) -> (usize, usize) {
    let sock = socket2::SockRef::from(socket);
    (
        sock.recv_buffer_size().unwrap_or(0),
        sock.send_buffer_size().unwrap_or(0),
    )
}

pub(crate) fn endpoint_config() -> Result<EndpointConfig, Error> {
    let mut config = EndpointConfig::default();
    config
        .max_udp_payload_size(MAX_UDP_PAYLOAD)
        .map_err(connection)?;
    Ok(config)
}

fn crypto_provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// An endpoint on `socket` whose datagrams pass through the timestamp layer `stamps`.
fn new_endpoint(
    socket: UdpSocket,
    stamps: Arc<Stamps>,
    server: Option<ServerConfig>,
) -> Result<noq::Endpoint, Error> {
    let socket = StampedSocket::new(socket, stamps).map_err(io("wrapping the UDP socket"))?;
    noq::Endpoint::new_with_abstract_socket(
        endpoint_config()?,
        server,
        Box::new(socket),
        // Pacing to the packet needs timers finer than tokio's millisecond.
        Arc::new(FineRuntime),
    )
    .map_err(io("starting the QUIC endpoint"))
}

/// The ALPN protocol a connection agreed on.
fn alpn(handshake: Option<Box<dyn std::any::Any>>) -> Option<Vec<u8>> {
    handshake?
        .downcast::<noq::crypto::rustls::HandshakeData>()
        .ok()?
        .protocol
}

/// What [`serve`] runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Loopback address to bind; port 0 picks a free port.
    pub addr: SocketAddr,
    /// The congestion controller of every connection.
    pub factory: CcFactory,
    /// UDP socket buffer size asked for, bytes.
    pub socket_buffer: usize,
    /// Offer datagram timestamps to kleinrock clients (ALPN `kleinrock-ts`).
    pub timestamps: bool,
    /// Stream flow-control window granted to uploading clients, bytes: it bounds what a
    /// client's controller can have in flight, so size it to the path (BDP plus buffer). A
    /// connection window smaller than this is raised to it.
    pub receive_window: u64,
    /// Most connections served at once, handshakes included; further clients are refused
    /// (CONNECTION_REFUSED) until one ends.
    pub max_connections: usize,
    /// Most requests (bidirectional streams) one client may have open at once; it opens the
    /// next when one ends.
    pub max_streams: u32,
    /// Most bytes one connection may buffer each way (stream data sent but not yet
    /// acknowledged; data received but not yet read), when the budget allows: it bounds what
    /// the server's controller can have in flight, so size it to the path (BDP plus buffer).
    pub connection_window: u64,
    /// Bytes shared out among the connections above the [`MIN_CONNECTION_WINDOW`] each has
    /// (see [`crate::limits`]): each direction's buffers together stay within
    /// `window_budget + max_connections x MIN_CONNECTION_WINDOW`.
    pub window_budget: u64,
    /// Handshakes with addresses not validated (a first Initial, without a Retry token) kept
    /// under way at once; a further first Initial is answered with Retry, which costs the
    /// server no state, and its client comes back with its address validated.
    pub retry_above: usize,
    /// Handshakes kept under way at once, validated or not; a further Initial is dropped
    /// without an answer. Each handshake holds about 70 kB until it completes, fails or is
    /// given up after [`HANDSHAKE_TIMEOUT`].
    pub max_handshakes: usize,
}

impl ServeOptions {
    /// Serves on 127.0.0.1 on a free port with [`DEFAULT_SOCKET_BUFFER`].
    pub fn new(factory: CcFactory) -> Self {
        ServeOptions {
            addr: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            factory,
            socket_buffer: DEFAULT_SOCKET_BUFFER,
            timestamps: true,
            receive_window: LOOPBACK_RECEIVE_WINDOW,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_streams: DEFAULT_MAX_STREAMS,
            connection_window: DEFAULT_CONNECTION_WINDOW,
            window_budget: DEFAULT_WINDOW_BUDGET,
            retry_above: DEFAULT_RETRY_ABOVE,
            max_handshakes: DEFAULT_MAX_HANDSHAKES,
        }
    }

    /// The most bytes one connection's windows hold, as [`serve`] applies it.
    fn max_window(&self) -> u64 {
        self.connection_window.max(self.receive_window)
    }
}

/// A running server; [`ServerHandle::shutdown`] stops it and releases its port (dropping it
/// stops it too, without waiting).
#[derive(Debug)]
pub struct ServerHandle {
    endpoint: Option<noq::Endpoint>,
    accept: Option<JoinHandle<()>>,
    addr: SocketAddr,
    probe: CcProbe,
    cert_der: CertificateDer<'static>,
    cert_pem: String,
    socket_buffers: (usize, usize),
    stamps: Arc<Stamps>,
    counts: Arc<Counts>,
    budget: Arc<WindowBudget>,
    recent: Arc<Recent>,
}

/// What the accept loop counts.
#[derive(Debug, Default)]
struct Counts {
    /// Connections whose handshake completed.
    connections: AtomicU64,
    /// Connection attempts refused because `max_connections` were being served.
    refused: AtomicU64,
    /// Connection attempts refused because a connection with their address was under way.
    refused_same_address: AtomicU64,
    /// Connections being served now (handshakes included).
    open: AtomicU64,
    /// Handshakes under way now, and those of them with an address not validated.
    handshakes: AtomicU64,
    unvalidated: AtomicU64,
    /// The most of those at once.
    peak_handshakes: AtomicU64,
    peak_unvalidated: AtomicU64,
    /// Initials answered with Retry.
    retries: AtomicU64,
    /// Initials dropped because `max_handshakes` were under way.
    dropped_handshakes: AtomicU64,
    /// Handshakes given up after [`HANDSHAKE_TIMEOUT`].
    handshake_timeouts: AtomicU64,
    /// Connections paired with their subflow's connection, and those whose client did not
    /// open one in time ([`crate::subflows`]).
    paired: AtomicU64,
    unpaired: AtomicU64,
}

/// One connection as [`ServerHandle::connections`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionReport {
    /// The client's address.
    pub peer: SocketAddr,
    /// The ALPN protocol agreed on.
    pub alpn: String,
    /// Whether the connection carries datagram timestamps (`kleinrock-ts`).
    pub timestamps: bool,
    /// Whether it is still open.
    pub open: bool,
    /// Its controller's counters (at its end, for one that ended).
    pub counters: CcCounters,
    /// What a reader of its counters should know (see [`CcFactory::warnings`]).
    pub warnings: Vec<String>,
}

/// The newest [`RECENT_CONNECTIONS`] connections, oldest first.
#[derive(Debug, Default)]
struct Recent {
    entries: Mutex<VecDeque<RecentEntry>>,
    next_id: AtomicU64,
}

#[derive(Debug)]
struct RecentEntry {
    id: u64,
    peer: SocketAddr,
    alpn: String,
    timestamps: bool,
    /// The connection's factory while it is open; its counters and warnings once it ended
    /// (so that the controller it observed can be dropped).
    live: Option<CcFactory>,
    ended: Option<(CcCounters, Vec<String>)>,
}

impl Recent {
    fn add(&self, peer: SocketAddr, alpn: String, timestamps: bool, factory: CcFactory) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut entries = lock(&self.entries);
        if entries.len() >= RECENT_CONNECTIONS {
            entries.pop_front();
        }
        entries.push_back(RecentEntry {
            id,
            peer,
            alpn,
            timestamps,
            live: Some(factory),
            ended: None,
        });
        id
    }

    fn ended(&self, id: u64) {
        let mut entries = lock(&self.entries);
        if let Some(e) = entries.iter_mut().find(|e| e.id == id) {
            if let Some(factory) = e.live.take() {
                let counters = factory.probe().sample().map(|s| s.counters);
                let counters = counters.unwrap_or_default();
                e.ended = Some((counters, factory.warnings_for(&counters)));
            }
        }
    }

    fn reports(&self) -> Vec<ConnectionReport> {
        let entries = lock(&self.entries);
        entries
            .iter()
            .map(|e| {
                let (counters, warnings) = match (&e.live, &e.ended) {
                    (Some(factory), _) => {
                        let c = factory.probe().sample().map(|s| s.counters);
                        let c = c.unwrap_or_default();
                        (c, factory.warnings_for(&c))
                    }
                    (None, Some(ended)) => ended.clone(),
                    (None, None) => Default::default(),
                };
                ConnectionReport {
                    peer: e.peer,
                    alpn: e.alpn.clone(),
                    timestamps: e.timestamps,
                    open: e.live.is_some(),
                    counters,
                    warnings,
                }
            })
            .collect()
    }
}

/// What a server counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections whose handshake completed.
    pub connections: u64,
    /// Of those, connections with datagram timestamps.
    pub stamped_connections: u64,
    /// Connection attempts refused (CONNECTION_REFUSED) because
    /// [`ServeOptions::max_connections`] were being served.
    pub refused_connections: u64,
    /// Connections being served now, handshakes included.
    pub open_connections: u64,
    /// Connection attempts refused (CONNECTION_REFUSED) because a handshake or connection
    /// with the same address was under way (one connection per address).
    pub refused_same_address: u64,
    /// Handshakes under way now, and of those with an address not validated.
    pub handshakes: u64,
    pub unvalidated_handshakes: u64,
    /// The most handshakes under way at once, and with an address not validated.
    pub peak_handshakes: u64,
    pub peak_unvalidated_handshakes: u64,
    /// Initials answered with Retry ([`ServeOptions::retry_above`]).
    pub retries: u64,
    /// Initials dropped without an answer ([`ServeOptions::max_handshakes`]).
    pub dropped_handshakes: u64,
    /// Handshakes given up after [`HANDSHAKE_TIMEOUT`].
    pub handshake_timeouts: u64,
    /// Connections paired with their subflow's connection (a controller that opens subflows,
    /// [`crate::subflows`]), and those whose client did not open one within
    /// [`subflows::PAIR_TIMEOUT`] (their controller ran on one connection).
    pub paired_connections: u64,
    pub unpaired_connections: u64,
    /// Datagrams and timestamps at the server's socket; `stray_datagrams` are those from
    /// addresses that never had a connection, which QUIC dropped.
    pub datagrams: StampStats,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The probe of the server's congestion controller (the latest connection's).
    pub fn probe(&self) -> CcProbe {
        self.probe.clone()
    }

    /// The server's self-signed certificate, DER, for [`fetch`].
    pub fn cert_der(&self) -> &[u8] {
        self.cert_der.as_ref()
    }

    /// UDP receive and send buffer sizes the kernel granted, bytes.
    pub fn socket_buffers(&self) -> (usize, usize) {
        self.socket_buffers
    }

    /// The server's certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The windows the open connections were granted now, bytes, oldest first.
    pub fn connection_windows(&self) -> Vec<u64> {
        self.budget.windows()
    }

    /// What the server counted so far.
    pub fn stats(&self) -> ServerStats {
        let c = &self.counts;
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        ServerStats {
            connections: get(&c.connections),
            stamped_connections: self.stamps.stamped_peers(),
            refused_connections: get(&c.refused),
            open_connections: get(&c.open),
            refused_same_address: get(&c.refused_same_address),
            handshakes: get(&c.handshakes),
            unvalidated_handshakes: get(&c.unvalidated),
            peak_handshakes: get(&c.peak_handshakes),
            peak_unvalidated_handshakes: get(&c.peak_unvalidated),
            retries: get(&c.retries),
            dropped_handshakes: get(&c.dropped_handshakes),
            handshake_timeouts: get(&c.handshake_timeouts),
            paired_connections: get(&c.paired),
            unpaired_connections: get(&c.unpaired),
            datagrams: self.stamps.stats(),
        }
    }

    /// The newest [`RECENT_CONNECTIONS`] connections whose handshake completed, oldest first,
    /// each with its own controller's counters.
    pub fn connections(&self) -> Vec<ConnectionReport> {
        self.recent.reports()
    }

    /// Closes every connection, stops accepting, and waits until the port is free again.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        if let Some(endpoint) = self.endpoint.take() {
            endpoint.close(VarInt::from_u32(0), b"shutdown");
            endpoint.wait_idle().await;
        }
        if let Some(accept) = self.accept.take() {
            accept.abort();
            // The accept task ends (cancelled); its connections are dropped with it.
            let _ = accept.await;
        }
        wait_released(self.addr).await
    }
}

/// Waits until `addr`'s UDP port can be bound again: a closed endpoint's driver task drops its
/// socket once it sees the endpoint closed.
pub(crate) async fn wait_released(addr: SocketAddr) -> Result<(), Error> {
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        if UdpSocket::bind(addr).is_ok() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::NotReleased(addr));
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(endpoint) = self.endpoint.take() {
            endpoint.close(VarInt::from_u32(0), b"shutdown");
        }
        if let Some(accept) = self.accept.take() {
            accept.abort();
        }
    }
}

/// The QUIC packet size of a full packet that is `wire` bytes on an IPv4 wire: `wire` less
/// the IPv4 and UDP headers and, with timestamps, the trailer. A controller on the real
/// datapath counts this per full packet, as the simulator's counts `wire`, so both windows hold
/// the same number of packets and both links carry `wire` bytes per packet.
pub fn quic_packet_size(wire: u64, timestamps: bool) -> Result<u64, String> {
    let trailer = if timestamps { TRAILER_LEN as u64 } else { 0 };
    let overhead = IPV4_UDP_HEADER + trailer;
    // QUIC needs datagrams of at least 1200 bytes (RFC 9000 §14); UDP carries at most
    // MAX_UDP_PAYLOAD.
    let (lo, hi) = (
        1200 + overhead,
        u64::from(MAX_UDP_PAYLOAD) + IPV4_UDP_HEADER,
    );
    if !(lo..=hi).contains(&wire) {
        return Err(format!(
            "a packet of {wire} bytes on the wire leaves {} for a QUIC packet ({IPV4_UDP_HEADER} \
             for IPv4 and UDP{}), and QUIC needs 1200; accepted: {lo} to {hi} bytes",
            wire.saturating_sub(overhead),
            if timestamps {
                ", 16 for the timestamp trailer"
            } else {
                ""
            }
        ));
    }
    Ok(wire - overhead)
}

/// A transport whose congestion controller comes from `factory`, its QUIC packets fixed to the
/// controller's `max_datagram_size` (no MTU discovery, so cwnd and packets count the same
/// bytes; with timestamps the trailer follows the packet in its datagram, see
/// [`quic_packet_size`]), and windows large enough for emulated paths.
pub(crate) fn sending_transport(
    factory: &CcFactory,
    timestamps: bool,
    receive_window: u64,
) -> Result<TransportConfig, Error> {
    let size = factory.config().max_datagram_size;
    let trailer = if timestamps { TRAILER_LEN as u64 } else { 0 };
    let mtu = match u16::try_from(size) {
        Ok(mtu) if size >= 1200 && size + trailer <= u64::from(MAX_UDP_PAYLOAD) => mtu,
        _ => {
            return Err(Error::Connection(format!(
                "a QUIC packet size of {size} bytes does not fit a datagram; accepted: 1200 to \
                 {} bytes",
                u64::from(MAX_UDP_PAYLOAD) - trailer
            )))
        }
    };
    let window = VarInt::from_u64(receive_window).map_err(|_| {
        Error::Connection(format!(
            "a receive window of {receive_window} bytes is too large"
        ))
    })?;
    let mut t = TransportConfig::default();
    t.congestion_controller_factory(Arc::new(factory.clone()))
        .initial_mtu(mtu)
        .min_mtu(mtu)
        .mtu_discovery_config(None::<MtuDiscoveryConfig>)
        .send_window(SEND_WINDOW)
        .stream_receive_window(window)
        .max_concurrent_uni_streams(VarInt::from_u32(0));
    Ok(t)
}

/// A self-signed certificate for [`SERVER_NAME`] (DER and PEM) and a TLS 1.3 server on it
/// offering `alpn`.
pub(crate) fn server_crypto(
    alpn: Vec<Vec<u8>>,
) -> Result<(CertificateDer<'static>, String, QuicServerConfig), Error> {
    let key = rcgen::generate_simple_self_signed(vec![SERVER_NAME.to_string()]).map_err(tls)?;
    let cert_der = key.cert.der().clone();
    let key_der = PrivateKeyDer::from(PrivatePkcs8KeyDer::from(key.signing_key.serialize_der()));
    let mut tls_config = rustls::ServerConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls)?
        .with_no_client_auth()
        .with_single_cert(vec![cert_der.clone()], key_der)
        .map_err(tls)?;
    tls_config.alpn_protocols = alpn;
    let crypto = QuicServerConfig::try_from(tls_config).map_err(tls)?;
    Ok((cert_der, key.cert.pem(), crypto))
}

/// A TLS 1.3 client trusting only `cert_der`, offering `alpn`.
pub(crate) fn client_crypto(
    cert_der: &[u8],
    alpn: Vec<Vec<u8>>,
) -> Result<QuicClientConfig, Error> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from(cert_der.to_vec()))
        .map_err(tls)?;
    let mut tls_config = rustls::ClientConfig::builder_with_provider(crypto_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(tls)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls_config.alpn_protocols = alpn;
    QuicClientConfig::try_from(tls_config).map_err(tls)
}

/// The ALPN protocols offered, most preferred first.
fn alpn_protocols(timestamps: bool, hq: bool) -> Vec<Vec<u8>> {
    let mut protocols = Vec::new();
    if timestamps {
        protocols.push(ALPN_STAMPED.to_vec());
    }
    protocols.push(ALPN.to_vec());
    if hq {
        protocols.push(ALPN_HQ.to_vec());
    }
    protocols
}

/// A certificate given as PEM (as [`ServerHandle::cert_pem`] writes it) or DER, as DER.
pub fn certificate_der(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    use noq::rustls::pki_types::pem::PemObject;
    if bytes.starts_with(b"-----BEGIN") {
        let cert = CertificateDer::from_pem_slice(bytes).map_err(tls)?;
        Ok(cert.as_ref().to_vec())
    } else {
        Ok(bytes.to_vec())
    }
}

/// Starts a server on `opts.addr` (loopback only) and returns at once; connections are served
/// on the current tokio runtime.
pub async fn serve(opts: ServeOptions) -> Result<ServerHandle, Error> {
    ensure_loopback(opts.addr)?;
    let (cert_der, cert_pem, crypto) = server_crypto(alpn_protocols(opts.timestamps, true))?;
    let mut server_config = ServerConfig::with_crypto(Arc::new(crypto));
    // Each connection gets a transport of its own (its controller's factory), made by the
    // accept loop; this one only serves what noq does before it (Retry, refusals).
    server_config
        .transport_config(Arc::new(serving_transport(&opts, &opts.factory)?))
        .max_incoming(MAX_INCOMING)
        .incoming_buffer_size(INCOMING_BUFFER)
        .incoming_buffer_size_total(INCOMING_BUFFER_TOTAL)
        // A connection is known by its client's address (datagram timestamps, the
        // anti-amplification budget): a client may not move to another.
        .migration(false);

    let socket = udp_socket(opts.addr, opts.socket_buffer)?;
    let socket_buffers = socket_buffers(&socket);
    let stamps = Stamps::server();
    let endpoint = new_endpoint(socket, stamps.clone(), Some(server_config.clone()))?;
    let addr = endpoint
        .local_addr()
        .map_err(io("reading the server address"))?;
    let counts = Arc::new(Counts::default());
    let budget = WindowBudget::new(opts.window_budget, opts.max_window());
    let recent = Arc::new(Recent::default());
    let probe = opts.factory.probe();
    let accept = tokio::spawn(accept_loop(
        endpoint.clone(),
        Shared {
            opts: Arc::new(opts),
            config: server_config,
            stamps: stamps.clone(),
            counts: counts.clone(),
            budget: budget.clone(),
            recent: recent.clone(),
            pairing: Pairing::default(),
        },
    ));
    Ok(ServerHandle {
        endpoint: Some(endpoint),
        accept: Some(accept),
        addr,
        probe,
        cert_der,
        cert_pem,
        socket_buffers,
        stamps,
        counts,
        budget,
        recent,
    })
}

/// The server's transport for connections whose controllers `factory` builds: the sending
/// transport with the per-connection limits. Every connection starts with the minimum windows;
/// [`accept_loop`] grants it more from the budget once its handshake is complete. The server
/// takes no QUIC datagrams (its timestamps ride in UDP trailers), so none are buffered.
fn serving_transport(opts: &ServeOptions, factory: &CcFactory) -> Result<TransportConfig, Error> {
    if opts.max_connections == 0 || opts.max_streams == 0 || opts.max_handshakes == 0 {
        return Err(Error::Connection(
            "a server needs at least one connection, one handshake and one stream".into(),
        ));
    }
    let mut t = sending_transport(factory, opts.timestamps, opts.receive_window)?;
    t.send_window(MIN_CONNECTION_WINDOW)
        .receive_window(VarInt::from_u32(MIN_CONNECTION_WINDOW as u32))
        .max_concurrent_bidi_streams(VarInt::from_u32(opts.max_streams))
        .datagram_receive_buffer_size(None);
    Ok(t)
}

/// What the accept loop and its connections share with the server's handle.
struct Shared {
    opts: Arc<ServeOptions>,
    /// The endpoint's server configuration, which each connection's copies with its own
    /// transport.
    config: ServerConfig,
    stamps: Arc<Stamps>,
    counts: Arc<Counts>,
    budget: Arc<WindowBudget>,
    recent: Arc<Recent>,
    /// Connections waiting for their subflow's connection.
    pairing: Pairing,
}

/// What the accept loop does with a connection attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Admission {
    /// Start the handshake.
    Accept,
    /// CONNECTION_REFUSED: `max_connections` are being served.
    Refuse,
    /// Answer with Retry: `retry_above` handshakes with addresses not validated are under way.
    Retry,
    /// No answer: `max_handshakes` are under way.
    Drop,
}

/// The accept loop's rule for an attempt whose address is `validated` (or not) when `open`
/// connections and `handshakes` handshakes, `unvalidated` of them not validated, are under
/// way.
fn admit(
    opts: &ServeOptions,
    validated: bool,
    open: u64,
    handshakes: u64,
    unvalidated: u64,
) -> Admission {
    if open >= opts.max_connections as u64 {
        Admission::Refuse
    } else if handshakes >= opts.max_handshakes as u64 {
        Admission::Drop
    } else if !validated && unvalidated >= opts.retry_above as u64 {
        Admission::Retry
    } else {
        Admission::Accept
    }
}

/// Accepts connections while fewer than `max_connections` are being served and refuses the
/// others, keeps the handshakes under way within `retry_above` (unvalidated) and
/// `max_handshakes` (all), and serves one connection per client address; each connection
/// gets a controller of its own, with its own timestamp feed, and its windows from the budget.
/// Memory freed when connections end is given back to the system.
async fn accept_loop(endpoint: noq::Endpoint, shared: Shared) {
    let shared = Arc::new(shared);
    let mut connections = JoinSet::new();
    let ended = Arc::new(tokio::sync::Notify::new());
    // In the same set, so that it stops with the loop.
    connections.spawn(trim_after_connections(ended.clone()));
    let counts = &shared.counts;
    while let Some(incoming) = endpoint.accept().await {
        while connections.try_join_next().is_some() {}
        let get = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let validated = incoming.remote_address_validated();
        match admit(
            &shared.opts,
            validated,
            get(&counts.open),
            get(&counts.handshakes),
            get(&counts.unvalidated),
        ) {
            Admission::Accept => {}
            Admission::Refuse => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
                incoming.refuse();
                continue;
            }
            Admission::Retry => {
                counts.retries.fetch_add(1, Ordering::Relaxed);
                // Cannot fail: an Incoming whose address is not validated may be retried.
                if let Err(e) = incoming.retry() {
                    e.into_incoming().ignore();
                }
                continue;
            }
            Admission::Drop => {
                counts.dropped_handshakes.fetch_add(1, Ordering::Relaxed);
                incoming.ignore();
                continue;
            }
        }
        let peer = incoming.remote_address();
        let factory = shared.opts.factory.for_connection();
        if !shared.stamps.begin(peer, Some(factory.owd_feed())) {
            counts.refused_same_address.fetch_add(1, Ordering::Relaxed);
            incoming.refuse();
            continue;
        }
        if validated {
            shared.stamps.validated(peer);
        }
        counts.open.fetch_add(1, Ordering::Relaxed);
        let handshakes = counts.handshakes.fetch_add(1, Ordering::Relaxed) + 1;
        counts
            .peak_handshakes
            .fetch_max(handshakes, Ordering::Relaxed);
        if !validated {
            let unvalidated = counts.unvalidated.fetch_add(1, Ordering::Relaxed) + 1;
            counts
                .peak_unvalidated
                .fetch_max(unvalidated, Ordering::Relaxed);
        }
        let (shared, ended) = (shared.clone(), ended.clone());
        connections.spawn(async move {
            let counts = &shared.counts;
            let done =
                tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(incoming, &shared, &factory))
                    .await;
            let done = done.unwrap_or_else(|_| {
                counts.handshake_timeouts.fetch_add(1, Ordering::Relaxed);
                None
            });
            if done.is_none() {
                // A handshake that failed or was given up holds its memory until noq drops it
                // after its closing period; it counts until then.
                shared.stamps.closed(peer);
                tokio::time::sleep(FAILED_HANDSHAKE_DRAIN).await;
            }
            counts.handshakes.fetch_sub(1, Ordering::Relaxed);
            if !validated {
                counts.unvalidated.fetch_sub(1, Ordering::Relaxed);
            }
            if let Some((conn, protocol, alpn)) = done {
                counts.connections.fetch_add(1, Ordering::Relaxed);
                let stamped = alpn == ALPN_STAMPED;
                let id = shared.recent.add(
                    peer,
                    String::from_utf8_lossy(&alpn).into_owned(),
                    stamped,
                    factory.clone(),
                );
                let handle = conn.weak_handle();
                let windows = handle.clone();
                let share = shared.budget.join(Box::new(move |w| {
                    if let Some(c) = windows.upgrade() {
                        c.set_send_window(w);
                        c.set_receive_window(VarInt::from_u64(w).unwrap_or(VarInt::MAX));
                    }
                }));
                serve_connection(conn, protocol, factory, &shared).await;
                shared.stamps.closed(peer);
                shared.recent.ended(id);
                // Its place and its grant are free once noq has dropped the connection and the
                // bytes it buffered (after the closing period), not before.
                gone(&handle).await;
                drop(share);
            }
            counts.open.fetch_sub(1, Ordering::Relaxed);
            ended.notify_one();
        });
    }
}

/// Waits until noq has dropped a connection whose handles this server let go of (it keeps it
/// for its closing period, three probe timeouts), for at most [`GONE_WAIT`].
async fn gone(handle: &noq::WeakConnectionHandle) {
    let deadline = Instant::now() + GONE_WAIT;
    while handle.is_alive() && Instant::now() < deadline {
        tokio::time::sleep(GONE_POLL).await;
    }
}

/// Gives the memory freed by ended connections back to the system, [`TRIM_DELAY`] after a
/// connection ends (the allocator keeps freed memory for reuse otherwise).
async fn trim_after_connections(ended: Arc<tokio::sync::Notify>) {
    loop {
        ended.notified().await;
        tokio::time::sleep(TRIM_DELAY).await;
        let _ = tokio::task::spawn_blocking(release_free_memory).await;
    }
}

/// Returns the allocator's free memory to the system: glibc's malloc keeps what was freed in
/// its arenas (one per thread that allocated), so a server whose connections ended would keep
/// their peak otherwise.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it is thread-safe.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The request protocol of a connection, from its ALPN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    Kleinrock,
    HqInterop,
}

/// Completes a server handshake with a controller from `factory` (whose feed the stamps layer
/// has for this peer): the connection, its request protocol and its ALPN. A client that agreed
/// on `kleinrock-ts` is stamped, and its trailers taken off, as soon as the ALPN is known
/// (before it can stamp; the stamps layer keeps everything sent within the anti-amplification
/// limit until the handshake is complete).
async fn handshake(
    incoming: noq::Incoming,
    shared: &Shared,
    factory: &CcFactory,
) -> Option<(noq::Connection, Protocol, Vec<u8>)> {
    let peer = incoming.remote_address();
    let mut config = shared.config.clone();
    config.transport_config(Arc::new(serving_transport(&shared.opts, factory).ok()?));
    let mut connecting = incoming.accept_with(Arc::new(config)).ok()?;
    let alpn = alpn(connecting.handshake_data().await.ok()).unwrap_or_default();
    if alpn == ALPN_STAMPED {
        shared.stamps.stamp(peer);
    }
    let conn = connecting.await.ok()?;
    shared.stamps.mark_connected(peer);
    let protocol = if alpn == ALPN_HQ {
        Protocol::HqInterop
    } else {
        Protocol::Kleinrock
    };
    Some((conn, protocol, alpn))
}

/// One connection of the server as its `kleinrock` requests see it.
struct Served {
    conn: noq::Connection,
    /// The factory that built its controller.
    factory: CcFactory,
    shared: Arc<Shared>,
    /// Whether a `G` request asked for its subflow already ([`crate::subflows`]).
    paired: tokio::sync::Mutex<bool>,
    /// Whether it is another connection's subflow: it becomes one once, and only if it asked
    /// for none itself.
    leg: AtomicBool,
}

async fn serve_connection(
    conn: noq::Connection,
    protocol: Protocol,
    factory: CcFactory,
    shared: &Arc<Shared>,
) {
    let served = Arc::new(Served {
        conn: conn.clone(),
        factory,
        shared: shared.clone(),
        paired: tokio::sync::Mutex::new(false),
        leg: AtomicBool::new(false),
    });
    let mut streams = JoinSet::new();
    // Ends when the client closes the connection.
    while let Ok((send, recv)) = conn.accept_bi().await {
        match protocol {
            Protocol::Kleinrock => streams.spawn(serve_kleinrock(send, recv, served.clone())),
            Protocol::HqInterop => streams.spawn(serve_hq(send, recv)),
        };
        while streams.try_join_next().is_some() {}
    }
}

/// The application error code with which a malformed request's stream is reset.
const BAD_REQUEST: u32 = 1;

/// Ends a stream whose request could not be served: reset, so the client sees an error
/// rather than an empty answer.
fn refuse(mut send: noq::SendStream) {
    let _ = send.reset(VarInt::from_u32(BAD_REQUEST));
}

/// Answers one `kleinrock` request; a malformed one is refused.
async fn serve_kleinrock(
    mut send: noq::SendStream,
    mut recv: noq::RecvStream,
    served: Arc<Served>,
) {
    let mut request = [0u8; 9];
    if recv.read_exact(&mut request).await.is_err() {
        return refuse(send);
    }
    let size = u64::from_be_bytes(request[1..].try_into().unwrap_or_default());
    match request[0] {
        b'G' => {
            pair_once(&served).await;
            send_content(send, size).await
        }
        b'S' => {
            let asked_for_one = served.paired.try_lock().map_or(true, |p| *p);
            if asked_for_one || served.leg.swap(true, Ordering::Relaxed) {
                return refuse(send);
            }
            let leg = Leg {
                conn: served.conn.clone(),
                probe: served.factory.probe(),
            };
            // The token rides in the length's place.
            if served.shared.pairing.attach(size, leg) {
                finish(send).await
            } else {
                served.leg.store(false, Ordering::Relaxed);
                refuse(send)
            }
        }
        b'P' => match read_content(&mut recv, Some(size)).await {
            Ok((received, sha256)) if received == size => {
                let _ = send.write_all(&sha256).await;
                finish(send).await;
            }
            _ => refuse(send),
        },
        _ => refuse(send),
    }
}

/// Pairs `served` with its subflow's connection before its first `G` request is answered, if
/// its controller opens subflows ([`crate::subflows`]); later requests wait until that is done.
async fn pair_once(served: &Served) {
    let mut paired = served.paired.lock().await;
    if !*paired && served.factory.has_subflows() {
        *paired = true;
        let counts = &served.shared.counts;
        if subflows::pair(&served.conn, &served.factory, &served.shared.pairing).await {
            counts.paired.fetch_add(1, Ordering::Relaxed);
        } else {
            counts.unpaired.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The byte count of an `hq-interop` request line `GET /N` (digits only).
fn hq_size(request: &[u8]) -> Option<u64> {
    let line = std::str::from_utf8(request).ok()?;
    let digits = line.trim_end().strip_prefix("GET /")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Answers one `hq-interop` request (`GET /N`); a malformed one is refused.
async fn serve_hq(send: noq::SendStream, mut recv: noq::RecvStream) {
    match recv
        .read_to_end(MAX_HQ_REQUEST)
        .await
        .ok()
        .as_deref()
        .and_then(hq_size)
    {
        Some(size) => send_content(send, size).await,
        None => refuse(send),
    }
}

/// Sends the first `size` bytes of the content and finishes the stream.
async fn send_content(mut send: noq::SendStream, size: u64) {
    let mut left = size;
    let mut content = ContentStream::new(CONTENT_SEED);
    let mut buf = vec![0u8; SERVE_CHUNK];
    while left > 0 {
        let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        content.fill(&mut buf[..n]);
        if send.write_all(&buf[..n]).await.is_err() {
            return;
        }
        left -= n as u64;
    }
    finish(send).await;
}

/// Finishes a stream and keeps it until the peer has everything (or goes away).
async fn finish(mut send: noq::SendStream) {
    let _ = send.finish();
    let _ = send.stopped().await;
}

/// Reads a stream to its end (at most `limit` bytes when given): the byte count and the
/// SHA-256 of what was read.
async fn read_content(
    recv: &mut noq::RecvStream,
    limit: Option<u64>,
) -> Result<(u64, [u8; 32]), Error> {
    let mut received = 0u64;
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    while let Some(chunk) = recv.read_chunk(usize::MAX).await.map_err(stream)? {
        received += chunk.len() as u64;
        if limit.is_some_and(|l| received > l) {
            let limit = limit.unwrap_or_default();
            return Err(Error::Protocol(format!(
                "more than the {limit} bytes announced"
            )));
        }
        hash.update(&chunk);
    }
    let mut sha256 = [0u8; 32];
    sha256.copy_from_slice(hash.finish().as_ref());
    Ok((received, sha256))
}

/// How a client connects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientOptions {
    /// Stream flow-control window granted to the server, bytes (size it to the most the path
    /// can hold in flight).
    pub receive_window: u64,
    /// Offer datagram timestamps (ALPN `kleinrock-ts`).
    pub timestamps: bool,
}

impl Default for ClientOptions {
    /// [`LOOPBACK_RECEIVE_WINDOW`], with timestamps.
    fn default() -> Self {
        ClientOptions {
            receive_window: LOOPBACK_RECEIVE_WINDOW,
            timestamps: true,
        }
    }
}

/// What one [`fetch`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct FetchReport {
    /// Bytes received (equal to the bytes asked for: the content is verified).
    pub bytes: u64,
    /// Time from starting to connect until the handshake completed.
    pub handshake: Duration,
    /// Time from sending the request until the first byte arrived (`None` for zero bytes).
    pub time_to_first_byte: Option<Duration>,
    /// Time from sending the request until the stream ended.
    pub elapsed: Duration,
    /// `bytes / elapsed`.
    pub goodput: Rate,
    /// SHA-256 of the expected content, hex.
    pub expected_sha256: String,
    /// SHA-256 of what arrived, hex.
    pub received_sha256: String,
    /// The server agreed to datagram timestamps.
    pub timestamps: bool,
    /// The second connections the server's controller asked for ([`crate::subflows`]).
    pub subflows: SubflowReport,
}

/// What one [`upload`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct UploadReport {
    /// Bytes sent (the server's hash of them matched).
    pub bytes: u64,
    /// Time from starting to connect until the handshake completed.
    pub handshake: Duration,
    /// Time from starting to send until the server's answer arrived.
    pub elapsed: Duration,
    /// `bytes / elapsed`.
    pub goodput: Rate,
    /// SHA-256 of the content, hex, as the server computed it.
    pub sha256: String,
    /// The server agreed to datagram timestamps.
    pub timestamps: bool,
}

fn client_config(
    cert_der: &[u8],
    opts: &ClientOptions,
    factory: Option<&CcFactory>,
) -> Result<ClientConfig, Error> {
    let crypto = client_crypto(cert_der, alpn_protocols(opts.timestamps, false))?;
    let mut config = ClientConfig::new(Arc::new(crypto));
    let mut transport = match factory {
        Some(f) => sending_transport(f, opts.timestamps, opts.receive_window)?,
        None => TransportConfig::default(),
    };
    let window = opts.receive_window;
    transport
        .stream_receive_window(VarInt::from_u64(window).map_err(|_| {
            Error::Connection(format!("a receive window of {window} bytes is too large"))
        })?)
        // The server's subflow requests and filler (crate::subflows), one stream at a time.
        .max_concurrent_uni_streams(VarInt::from_u32(UNI_STREAMS));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// Unidirectional streams a client lets its server open at once: the subflow token and the
/// filler streams, each ended before the next ([`crate::subflows`]).
const UNI_STREAMS: u32 = 2;

/// A client connection with its endpoint.
pub(crate) struct Client {
    endpoint: noq::Endpoint,
    pub(crate) conn: noq::Connection,
    handshake: Duration,
    stamped: bool,
}

impl Client {
    /// Connects to `server` (loopback) trusting only `cert_der`; with a `factory`, the client's
    /// own sending is controlled by it and timestamp echoes feed it.
    pub(crate) async fn connect(
        server: SocketAddr,
        cert_der: &[u8],
        opts: &ClientOptions,
        factory: Option<&CcFactory>,
    ) -> Result<Client, Error> {
        ensure_loopback(server)?;
        let local = match server.ip() {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        let socket = udp_socket(SocketAddr::new(local, 0), DEFAULT_SOCKET_BUFFER)?;
        let stamps = Stamps::client();
        stamps.begin(server, factory.map(CcFactory::owd_feed));
        let endpoint = new_endpoint(socket, stamps.clone(), None)?;
        endpoint.set_default_client_config(client_config(cert_der, opts, factory)?);
        if opts.timestamps {
            // A server that selects kleinrock-ts may stamp from its first flight.
            stamps.accept(server);
        }
        let start = Instant::now();
        let conn = endpoint
            .connect(server, SERVER_NAME)
            .map_err(connection)?
            .await
            .map_err(connection)?;
        let handshake = start.elapsed();
        stamps.mark_connected(server);
        let stamped = alpn(conn.handshake_data()).as_deref() == Some(ALPN_STAMPED);
        if stamped {
            stamps.stamp(server);
        } else {
            stamps.unstamped(server);
        }
        Ok(Client {
            endpoint,
            conn,
            handshake,
            stamped,
        })
    }

    /// Closes the connection and gives the close a moment to reach the server.
    pub(crate) async fn close(self) {
        self.conn.close(VarInt::from_u32(0), b"done");
        let _ = tokio::time::timeout(CLOSE_DRAIN, self.endpoint.wait_idle()).await;
    }
}

/// Fetches `size` bytes from the server at `server` (loopback), trusting only `cert_der`, and
/// verifies them against the expected content, with the default [`ClientOptions`].
pub async fn fetch(server: SocketAddr, cert_der: &[u8], size: u64) -> Result<FetchReport, Error> {
    fetch_with(server, cert_der, size, &ClientOptions::default()).await
}

/// [`fetch`] with the given options.
pub async fn fetch_with(
    server: SocketAddr,
    cert_der: &[u8],
    size: u64,
    opts: &ClientOptions,
) -> Result<FetchReport, Error> {
    let client = Client::connect(server, cert_der, opts, None).await?;
    let subflows = tokio::spawn(subflows::follow(
        client.conn.clone(),
        server,
        cert_der.to_vec(),
        *opts,
    ));
    let result = request(&client.conn, size).await;
    let (handshake, timestamps) = (client.handshake, client.stamped);
    client.close().await;
    let subflows = subflows.await.unwrap_or_else(|e| SubflowReport {
        failure: Some(format!("the subflow's task failed: {e}")),
        ..SubflowReport::default()
    });
    Ok(FetchReport {
        handshake,
        timestamps,
        subflows,
        ..result?
    })
}

async fn request(conn: &noq::Connection, size: u64) -> Result<FetchReport, Error> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(connection)?;
    send.write_all(&command(b'G', size)).await.map_err(stream)?;
    send.finish().map_err(stream)?;
    let start = Instant::now();
    let mut first_byte = None;
    let mut received = 0u64;
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    while let Some(chunk) = recv.read_chunk(usize::MAX).await.map_err(stream)? {
        first_byte.get_or_insert_with(|| start.elapsed());
        received += chunk.len() as u64;
        hash.update(&chunk);
    }
    let elapsed = start.elapsed();
    let received_sha256 = hex(hash.finish().as_ref());
    let expected_sha256 = content_sha256(CONTENT_SEED, size);
    if received != size || received_sha256 != expected_sha256 {
        return Err(Error::Verify {
            expected_bytes: size,
            received_bytes: received,
            expected_sha256,
            received_sha256,
        });
    }
    Ok(FetchReport {
        bytes: received,
        handshake: Duration::ZERO,
        time_to_first_byte: first_byte,
        elapsed,
        goodput: Rate::from_bytes_over(received, elapsed),
        expected_sha256,
        received_sha256,
        timestamps: false,
        subflows: SubflowReport::default(),
    })
}

/// A `kleinrock` request: the command byte and the length.
pub(crate) fn command(kind: u8, size: u64) -> [u8; 9] {
    let mut out = [kind; 9];
    out[1..].copy_from_slice(&size.to_be_bytes());
    out
}

/// Sends `size` bytes of content to the server at `server` (loopback), trusting only
/// `cert_der`, with the client's sending controlled by `factory`; the server's hash of what it
/// read must match the content's.
pub async fn upload(
    server: SocketAddr,
    cert_der: &[u8],
    size: u64,
    factory: &CcFactory,
    opts: &ClientOptions,
) -> Result<UploadReport, Error> {
    // A client cannot give its controller a second connection (only a server asks for one).
    let factory = &factory
        .clone()
        .without_subflows()
        .map_err(|e| Error::Connection(e.to_string()))?;
    let client = Client::connect(server, cert_der, opts, Some(factory)).await?;
    let result = send_upload(&client.conn, size).await;
    let (handshake, timestamps) = (client.handshake, client.stamped);
    client.close().await;
    Ok(UploadReport {
        handshake,
        timestamps,
        ..result?
    })
}

async fn send_upload(conn: &noq::Connection, size: u64) -> Result<UploadReport, Error> {
    let (mut send, mut recv) = conn.open_bi().await.map_err(connection)?;
    let start = Instant::now();
    send.write_all(&command(b'P', size)).await.map_err(stream)?;
    let mut content = ContentStream::new(CONTENT_SEED);
    let mut buf = vec![0u8; WRITE_CHUNK];
    let mut left = size;
    while left > 0 {
        let n = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        content.fill(&mut buf[..n]);
        send.write_all(&buf[..n]).await.map_err(stream)?;
        left -= n as u64;
    }
    send.finish().map_err(stream)?;
    let answer = recv.read_to_end(64).await.map_err(stream)?;
    let elapsed = start.elapsed();
    let sha256 = hex(&answer);
    let expected = content_sha256(CONTENT_SEED, size);
    if sha256 != expected {
        return Err(Error::Protocol(format!(
            "the server read content with SHA-256 `{sha256}`, expected {expected} for {size} bytes"
        )));
    }
    Ok(UploadReport {
        bytes: size,
        handshake: Duration::ZERO,
        elapsed,
        goodput: Rate::from_bytes_over(size, elapsed),
        sha256,
        timestamps: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_is_the_same_however_it_is_cut() {
        let mut whole = vec![0u8; 1000];
        ContentStream::new(7).fill(&mut whole);
        let mut pieces = vec![0u8; 1000];
        let mut s = ContentStream::new(7);
        let mut at = 0;
        for n in [1, 3, 8, 13, 0, 64, 911] {
            s.fill(&mut pieces[at..at + n]);
            at += n;
        }
        assert_eq!(at, 1000);
        assert_eq!(whole, pieces);
        // A different seed gives different bytes.
        let mut other = vec![0u8; 1000];
        ContentStream::new(8).fill(&mut other);
        assert_ne!(whole, other);
    }

    #[test]
    fn sha256_of_empty_content_is_the_standard_one() {
        assert_eq!(
            content_sha256(CONTENT_SEED, 0),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn hq_requests_are_get_and_digits_only() {
        assert_eq!(hq_size(b"GET /5000000\r\n"), Some(5_000_000));
        assert_eq!(hq_size(b"GET /0\n"), Some(0));
        for bad in [
            &b"GET /+5\r\n"[..],
            b"GET /\r\n",
            b"GET /5x",
            b"PUT /5",
            b"\xff",
        ] {
            assert_eq!(hq_size(bad), None, "{bad:?}");
        }
    }

    /// Polls `f` until it holds, for at most 5 s.
    async fn until(what: &str, f: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !f() {
            assert!(
                Instant::now() < deadline,
                "{what} did not happen within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn connections_share_the_window_budget_and_give_it_back() {
        use kleinrock_cc::{ControllerConfig, Params};
        const MIN: u64 = MIN_CONNECTION_WINDOW;
        let factory = CcFactory::new("cubic", Params::new(), ControllerConfig::default())
            .expect("cubic builds");
        let server = serve(ServeOptions {
            connection_window: 12 * MIN,
            window_budget: 16 * MIN,
            receive_window: 4 * MIN,
            ..ServeOptions::new(factory)
        })
        .await
        .expect("the server starts");
        let (addr, cert) = (server.local_addr(), server.cert_der().to_vec());
        let opts = ClientOptions::default();
        let mut clients = Vec::new();
        for _ in 0..3 {
            let client = Client::connect(addr, &cert, &opts, None)
                .await
                .expect("connects");
            clients.push(client);
            let n = clients.len();
            until("the grant", || server.connection_windows().len() == n).await;
        }
        // The first takes its maximum, the second the rest of the budget, the third the
        // minimum.
        assert_eq!(server.connection_windows(), vec![12 * MIN, 6 * MIN, MIN]);
        assert_eq!(server.stats().open_connections, 3);
        // Once the first is gone, its 11 extra go to the other two in equal parts.
        clients.remove(0).close().await;
        until("the release", || server.connection_windows().len() == 2).await;
        assert_eq!(
            server.connection_windows(),
            vec![6 * MIN + 11 * MIN / 2, MIN + 11 * MIN / 2]
        );
        for client in clients {
            client.close().await;
        }
        until("the end", || server.stats().open_connections == 0).await;
        assert!(server.connection_windows().is_empty());
        server.shutdown().await.expect("released");
    }

    #[test]
    fn handshakes_beyond_the_thresholds_are_retried_then_dropped() {
        use kleinrock_cc::{ControllerConfig, Params};
        let factory = CcFactory::new("cubic", Params::new(), ControllerConfig::default())
            .expect("cubic builds");
        let opts = ServeOptions {
            max_connections: 100,
            retry_above: 4,
            max_handshakes: 10,
            ..ServeOptions::new(factory)
        };
        // (validated, open, handshakes, unvalidated)
        let cases = [
            ((false, 0, 0, 0), Admission::Accept),
            ((false, 3, 3, 3), Admission::Accept),
            ((false, 4, 4, 4), Admission::Retry),
            ((true, 4, 4, 4), Admission::Accept),
            ((true, 9, 9, 4), Admission::Accept),
            ((true, 10, 10, 4), Admission::Drop),
            ((false, 10, 10, 4), Admission::Drop),
            ((true, 100, 0, 0), Admission::Refuse),
            ((false, 50, 5, 0), Admission::Accept),
        ];
        for ((validated, open, handshakes, unvalidated), expected) in cases {
            assert_eq!(
                admit(&opts, validated, open, handshakes, unvalidated),
                expected,
                "validated {validated}, {open} open, {handshakes} handshakes, {unvalidated} \
                 unvalidated"
            );
        }
    }

    #[test]
    fn non_loopback_addresses_are_refused() {
        let addr: SocketAddr = "192.0.2.1:4433".parse().unwrap();
        let e = ensure_loopback(addr).unwrap_err();
        assert!(e.to_string().contains("192.0.2.1:4433"), "{e}");
        assert!(ensure_loopback("[::1]:1".parse().unwrap()).is_ok());
    }
}
