//! A reliable flow inside the tunnel: a QUIC connection (noq) whose UDP datagrams are the
//! tunnel's carried packets, as the TCP flow of the CCID5 paper's Figure 7 is carried by
//! MP-DCCP's virtual interface. Its two ends have virtual sockets: what the client sends enters
//! the tunnel's entry, what the far end forwards arrives at the server, and the server's
//! packets (its ACKs) take the direction back.
//!
//! The client writes one unidirectional stream for as long as the run lasts; the server reads
//! it and counts the bytes per trace interval and over the measurement window (the flow's
//! goodput). Packets are fixed at the carried packet's size less [`STAND_IN`] (no MTU
//! discovery), so the client's controller counts the packets the simulator's flow counts.

use super::far_end::Clock;
use super::wire::STAND_IN;
use crate::adapter::{CcFactory, CcProbe};
use crate::endpoint::{self, SERVER_NAME};
use crate::lock;
use crate::timers::FineRuntime;
use kleinrock_cc::{ControllerConfig, Params};
use kleinrock_sim::trace::Series;
use noq::udp::{RecvMeta, Transmit};
use noq::{AsyncUdpSocket, ClientConfig, ServerConfig, UdpSender, VarInt};
use std::collections::VecDeque;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Instant;
use tokio::task::JoinHandle;

/// ALPN of the flow inside the tunnel.
const ALPN_INNER: &[u8] = b"kleinrock-inner";
/// The client's address as the server sees it (no socket has it: the tunnel carries it).
const CLIENT: &str = "10.0.0.1:4433";
/// The server's address as the client sees it.
const SERVER: &str = "10.0.0.2:4433";
/// Bytes of one write of the client's stream.
const WRITE_CHUNK: usize = 64 << 10;
/// The stream and connection windows: larger than any queue of the paths can hold (a
/// 1000-packet buffer at 10 Mbit/s holds 1.2 s), so the flow is limited by its controller.
const RECEIVE_WINDOW: u32 = 32 << 20;

/// Where a virtual socket's datagrams go: called with each datagram it sends.
pub type Outlet = Arc<dyn Fn(&[u8]) + Send + Sync>;

/// The datagrams waiting for a virtual socket, and the task to wake when more come.
#[derive(Default)]
pub struct Inbox {
    waiting: Mutex<(VecDeque<Vec<u8>>, Option<Waker>)>,
}

impl Inbox {
    /// Datagrams arrive, in order.
    pub fn push(&self, datagrams: Vec<Vec<u8>>) {
        if datagrams.is_empty() {
            return;
        }
        let waker = {
            let mut w = lock(&self.waiting);
            w.0.extend(datagrams);
            w.1.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// A socket of noq's whose datagrams go to an [`Outlet`] and come from an [`Inbox`]; its one
/// peer is `peer`.
struct VirtualSocket {
    local: SocketAddr,
    peer: SocketAddr,
    inbox: Arc<Inbox>,
    outlet: Outlet,
}

impl fmt::Debug for VirtualSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualSocket")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl AsyncUdpSocket for VirtualSocket {
    fn create_sender(&self) -> Pin<Box<dyn UdpSender>> {
        Box::pin(VirtualSender(self.outlet.clone()))
    }

    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let mut waiting = lock(&self.inbox.waiting);
        let mut n = 0;
        while n < bufs.len().min(meta.len()) {
            let Some(d) = waiting.0.pop_front() else {
                break;
            };
            // A datagram larger than noq's buffer cannot be a packet of the flow's size.
            if d.len() > bufs[n].len() {
                continue;
            }
            bufs[n][..d.len()].copy_from_slice(&d);
            let mut m = RecvMeta::default();
            m.addr = self.peer;
            m.len = d.len();
            m.stride = d.len();
            meta[n] = m;
            n += 1;
        }
        if n > 0 {
            return Poll::Ready(Ok(n));
        }
        waiting.1 = Some(cx.waker().clone());
        Poll::Pending
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        Ok(self.local)
    }
}

/// A virtual socket's sender: it never waits, as a network interface's queue does not; what
/// the tunnel's entry cannot take it drops and counts.
struct VirtualSender(Outlet);

impl fmt::Debug for VirtualSender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VirtualSender").finish_non_exhaustive()
    }
}

impl UdpSender for VirtualSender {
    fn poll_send(
        self: Pin<&mut Self>,
        transmit: &Transmit<'_>,
        _cx: &mut Context<'_>,
    ) -> Poll<io::Result<()>> {
        let size = transmit.segment_size.unwrap_or(transmit.contents.len());
        for datagram in transmit.contents.chunks(size.max(1)) {
            (self.0)(datagram);
        }
        Poll::Ready(Ok(()))
    }
}

/// The flow: its controller, congestion-controlled from the client, and what it carries.
#[derive(Clone, Debug)]
pub struct InnerSpec {
    /// The client's controller (a registry name).
    pub cc: String,
    /// Its parameters.
    pub params: Params,
    /// The carried packet's size; the flow's QUIC packets are this less [`STAND_IN`].
    pub packet_size: usize,
    /// The controller's seed.
    pub seed: u64,
}

/// The stream bytes the server read, per trace interval and over the measurement window.
#[derive(Debug, Default)]
pub struct StreamMeter {
    bytes: Vec<u64>,
    /// Bytes read inside the window.
    pub window_bytes: u64,
}

impl StreamMeter {
    fn record(&mut self, clock: &Clock, now: u64, bytes: u64) {
        let k = (now / clock.interval_ns) as usize;
        if self.bytes.len() <= k {
            self.bytes.resize(k + 1, 0);
        }
        self.bytes[k] += bytes;
        if clock.window().contains(&now) {
            self.window_bytes += bytes;
        }
    }

    /// The goodput of each trace interval (`goodput_bps`), at its end.
    pub fn series(&self, name: &str, clock: &Clock) -> Series {
        let mut s = Series::new(name);
        let seconds = clock.interval_ns as f64 * 1e-9;
        for k in 0..clock.intervals() {
            s.begin((k + 1) as f64 * seconds);
            let bytes = self.bytes.get(k).copied().unwrap_or(0);
            s.set("goodput_bps", bytes as f64 * 8.0 / seconds);
            s.end();
        }
        s
    }
}

/// The running flow.
pub struct InnerFlow {
    client: noq::Endpoint,
    server: noq::Endpoint,
    /// The client's controller.
    pub probe: CcProbe,
    /// What the server read.
    pub meter: Arc<Mutex<StreamMeter>>,
    tasks: Vec<JoinHandle<()>>,
}

/// The two ends' plumbing: the client's packets go to `forward` and it reads `at_entry`; the
/// server's go to `backward` and it reads `at_far`.
pub struct Plumbing {
    /// Into the tunnel's entry.
    pub forward: Outlet,
    /// Into the far end's entry of the direction back.
    pub backward: Outlet,
    /// What the entry's end of the direction back forwards.
    pub at_entry: Arc<Inbox>,
    /// What the far end forwards.
    pub at_far: Arc<Inbox>,
}

fn addr(a: &str) -> SocketAddr {
    a.parse().expect("a literal address")
}

fn endpoint(
    local: &str,
    peer: &str,
    inbox: Arc<Inbox>,
    outlet: Outlet,
    server: Option<ServerConfig>,
) -> Result<noq::Endpoint, String> {
    let socket = VirtualSocket {
        local: addr(local),
        peer: addr(peer),
        inbox,
        outlet,
    };
    let config = endpoint::endpoint_config().map_err(|e| e.to_string())?;
    noq::Endpoint::new_with_abstract_socket(config, server, Box::new(socket), Arc::new(FineRuntime))
        .map_err(|e| format!("the flow inside the tunnel: {e}"))
}

impl InnerFlow {
    /// Connects the flow through the tunnel (which must be running) and starts its stream;
    /// `epoch` and `clock` are the tunnel's.
    pub async fn start(
        spec: &InnerSpec,
        pipes: Plumbing,
        epoch: Instant,
        clock: Clock,
    ) -> Result<InnerFlow, String> {
        let at = |e: &dyn fmt::Display| format!("the flow inside the tunnel: {e}");
        let config = ControllerConfig {
            max_datagram_size: spec.packet_size.saturating_sub(STAND_IN) as u64,
            seed: spec.seed,
            ..ControllerConfig::default()
        };
        let build = || {
            CcFactory::new(&spec.cc, spec.params.clone(), config)
                .and_then(CcFactory::without_subflows)
                .map(|f| f.with_epoch(epoch))
                .map_err(|e| at(&e))
        };
        let factory = build()?;
        let window = u64::from(RECEIVE_WINDOW);
        let mut transport =
            endpoint::sending_transport(&factory, false, window).map_err(|e| at(&e))?;
        transport.receive_window(VarInt::from_u32(RECEIVE_WINDOW));
        let (cert, _, crypto) =
            endpoint::server_crypto(vec![ALPN_INNER.to_vec()]).map_err(|e| at(&e))?;
        let mut server_config = ServerConfig::with_crypto(Arc::new(crypto));
        // The server sends only ACKs; its own controller (the same algorithm) paces them.
        let mut server_transport =
            endpoint::sending_transport(&build()?, false, window).map_err(|e| at(&e))?;
        server_transport
            .receive_window(VarInt::from_u32(RECEIVE_WINDOW))
            .max_concurrent_uni_streams(VarInt::from_u32(1));
        server_config.transport_config(Arc::new(server_transport));
        let server = endpoint(
            SERVER,
            CLIENT,
            pipes.at_far,
            pipes.backward,
            Some(server_config),
        )?;
        let client = endpoint(CLIENT, SERVER, pipes.at_entry, pipes.forward, None)?;
        let crypto =
            endpoint::client_crypto(&cert, vec![ALPN_INNER.to_vec()]).map_err(|e| at(&e))?;
        let mut client_config = ClientConfig::new(Arc::new(crypto));
        client_config.transport_config(Arc::new(transport));
        let meter = Arc::new(Mutex::new(StreamMeter::default()));
        let reading = tokio::spawn(read(server.clone(), meter.clone(), epoch, clock));
        let conn = client
            .connect_with(client_config, addr(SERVER), SERVER_NAME)
            .map_err(|e| at(&e))?
            .await
            .map_err(|e| at(&e))?;
        let writing = tokio::spawn(write(conn));
        Ok(InnerFlow {
            client,
            server,
            probe: factory.probe(),
            meter,
            tasks: vec![reading, writing],
        })
    }

    /// Stops the flow: its tasks end and its endpoints close.
    pub async fn stop(self) {
        for t in self.tasks {
            t.abort();
            let _ = t.await;
        }
        self.client.close(0u32.into(), b"done");
        self.server.close(0u32.into(), b"done");
    }
}

/// The client's stream: zeros, for as long as the connection lasts.
async fn write(conn: noq::Connection) {
    let Ok(mut send) = conn.open_uni().await else {
        return;
    };
    let chunk = vec![0u8; WRITE_CHUNK];
    while send.write_all(&chunk).await.is_ok() {}
}

/// The server's side: it takes the one connection and reads its stream into `meter`.
async fn read(server: noq::Endpoint, meter: Arc<Mutex<StreamMeter>>, epoch: Instant, clock: Clock) {
    let Some(incoming) = server.accept().await else {
        return;
    };
    let Ok(conn) = incoming.await else {
        return;
    };
    let Ok(mut recv) = conn.accept_uni().await else {
        return;
    };
    while let Ok(Some(chunk)) = recv.read_chunk(WRITE_CHUNK).await {
        let now = epoch.elapsed().as_nanos() as u64;
        lock(&meter).record(&clock, now, chunk.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outlet that hands each datagram straight to `inbox`: a wire without a tunnel.
    fn wire(inbox: &Arc<Inbox>) -> Outlet {
        let inbox = inbox.clone();
        Arc::new(move |d: &[u8]| inbox.push(vec![d.to_vec()]))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_flow_handshakes_and_streams_over_virtual_sockets_at_its_packet_size() {
        let (at_entry, at_far) = (Arc::new(Inbox::default()), Arc::new(Inbox::default()));
        let sizes = Arc::new(Mutex::new(Vec::new()));
        let forward: Outlet = {
            let (far, sizes) = (at_far.clone(), sizes.clone());
            Arc::new(move |d: &[u8]| {
                lock(&sizes).push(d.len());
                far.push(vec![d.to_vec()]);
            })
        };
        let pipes = Plumbing {
            forward,
            backward: wire(&at_entry),
            at_entry,
            at_far,
        };
        let spec = InnerSpec {
            cc: "cubic".into(),
            params: Params::default(),
            packet_size: 1448,
            seed: 1,
        };
        let clock = Clock {
            interval_ns: 100_000_000,
            warmup_ns: 0,
            end_ns: 1_000_000_000,
        };
        let flow = InnerFlow::start(&spec, pipes, Instant::now(), clock)
            .await
            .expect("the flow connects");
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let meter = flow.meter.clone();
        flow.stop().await;
        assert!(lock(&meter).window_bytes > 1_000_000, "the stream moved");
        let sizes = lock(&sizes);
        // The flow's packets are the carried packet less its stand-in IPv4 and UDP headers.
        assert_eq!(sizes.iter().max(), Some(&(1448 - STAND_IN)));
    }
}
