//! The multipath tunnel on the real datapath: one QUIC connection per path, carrying the
//! tunnel's packets as DATAGRAM frames (RFC 9221: unreliable, and congestion-controlled by that
//! connection's controller, any controller of the registry), each path through its own
//! userspace bottleneck emulator ([`crate::emulator`]), with the simulator's scheduler at the
//! entry and its reordering stage at the far end (`kleinrock_cc::multipath`, the same code).
//!
//! This module owns the run: the far end's QUIC endpoints (one per path), the emulators, the
//! entry's connections, the source feeding the entry (constant-rate datagrams, or a reliable
//! flow inside, [`inner`]), and what the run measured. [`wire`] is the tunnel's header,
//! [`entry`] the queue and scheduler, [`far_end`] the reordering and the measurements.
//! docs/mpdccp.md ("A QUIC tunnel") describes the model.
//!
//! ```text
//! source -> entry queue -> scheduler -> QUIC conn (path 1) -> emulator 1 -> far end 1 -+
//!                                    \-> QUIC conn (path 2) -> emulator 2 -> far end 2 -+-> reordering
//! ```
//!
//! The direction back is the same tunnel reversed: the far end's side of each path's
//! connection sends the carried flow's packets back (its ACKs), under a controller of the
//! path's algorithm, scheduled by an entry at the far end and reordered at the entry.
//!
//! The entry hands a packet to a path only while the scheduler finds room in that
//! connection's window (its in-flight bytes and the datagrams noq still holds, against the
//! controller's window), as MP-DCCP's scheduler does with a subflow's CCID; the entry wakes on
//! every ACK and congestion event of a path ([`CcFactory::waking`]). Both ends share one clock:
//! a packet's latency is the far end's time less the entry time it carries.

mod entry;
mod far_end;
mod gate;
mod inner;
pub mod wire;

use crate::adapter::{CcCounters, CcFactory, CcProbe};
use crate::emulator::{
    self, DirectionStats, EmulatorConfig, EmulatorHandle, EmulatorStats, IPV4_UDP_HEADER,
};
use crate::endpoint::{self, Error, SERVER_NAME};
use crate::lock;
use crate::timers::FineRuntime;
use crate::trace::ProbeRecorder;
use entry::Entry;
pub use entry::EntryCounts;
pub use far_end::FarCounts;
use far_end::{Clock, FarEnd};
use gate::{Gate, GatedSocket};
use inner::{Inbox, InnerFlow, InnerSpec, Outlet, Plumbing};
use kleinrock_cc::multipath::reorder::{LatencySpread, ReorderConfig};
use kleinrock_cc::multipath::scheduler::{SchedulerKind, SubflowView};
use kleinrock_cc::{ControllerConfig, Params, Rate};
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::stats::LinkStats;
use kleinrock_sim::trace::Series;
use kleinrock_sim::LinkConfig;
use noq::{ClientConfig, MtuDiscoveryConfig, PathId, ServerConfig, TransportConfig};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use wire::{HEADER, STAND_IN};

/// ALPN of a tunnel's path connections.
pub const ALPN_TUNNEL: &[u8] = b"kleinrock-tunnel";
/// The bytes noq keeps free around a DATAGRAM frame's payload in a short-header packet: the
/// first byte, its 8-byte connection ID, the longest packet number (4), the frame's type and
/// longest length (1 + 8) and the 16-byte AEAD tag. A packet on the wire is smaller: its packet
/// number and length take 1 to 2 bytes each (docs/mpdccp.md, "A QUIC tunnel").
const QUIC_OVERHEAD: usize = 1 + 8 + 4 + 9 + 16;
/// Datagram bytes the entry lets noq buffer per path (never reached: the scheduler hands over
/// only what the window takes).
const SEND_BUFFER: usize = 1 << 20;
/// Datagram bytes the far end buffers per path before the application reads them.
const RECEIVE_BUFFER: usize = 8 << 20;
/// How often the far end checks the reordering stage's idle expiry.
const EXPIRY_TICK: Duration = Duration::from_millis(1);
/// How often the entry's connections send a PING when they have nothing else to send, so that
/// neither QUIC's idle timeout nor the emulator's client slot ends a path the scheduler leaves
/// unused (a backup path, a lower priority).
const KEEP_ALIVE: Duration = Duration::from_secs(1);
/// The p99 of the source's lateness (a packet's entry time less its due time) above which
/// the run does not count: the entry's thread did not keep time.
pub const SOURCE_LATENESS_BOUND: Duration = Duration::from_millis(1);
/// How long a closing endpoint waits for its connections to say goodbye.
const CLOSE_WAIT: Duration = Duration::from_millis(200);
/// Where every socket of a tunnel binds: loopback, a port the kernel picks.
const LOOPBACK: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0));
/// How long after the source stops the far end still takes arrivals (packets on the way).
const DRAIN: Duration = Duration::from_millis(300);

/// One path of a tunnel.
#[derive(Clone, Debug)]
pub struct PathSpec {
    /// Name, for reports.
    pub name: String,
    /// The link from the entry to the far end.
    pub forward: LinkConfig,
    /// The link back (the path's ACKs).
    pub reverse: LinkConfig,
    /// The connection's controller (a registry name) and its parameters.
    pub cc: String,
    /// Its parameters.
    pub params: Params,
    /// Priority (MP-DCCP `mpdccp_prio`).
    pub priority: u8,
}

/// What feeds a tunnel's entry.
#[derive(Clone, Debug)]
pub enum Source {
    /// Constant-rate datagrams of the carried packet's size, which carry nothing.
    Cbr {
        /// The rate, counted in `payload` bytes per packet, as the simulator's constant-rate
        /// application counts it.
        rate: Rate,
        /// Of the carried packet's bytes, the payload the rate counts (the rest is the
        /// carried packet's own headers).
        payload: usize,
    },
    /// A reliable flow inside: a QUIC connection whose packets are the carried packets, under
    /// controller `cc`, sending as much as it can (its module, `inner`).
    Reliable {
        /// The flow's controller (a registry name).
        cc: String,
        /// Its parameters.
        params: Params,
    },
}

/// A tunnel run: its paths, scheduler, reordering, queue, and source.
#[derive(Clone, Debug)]
pub struct TunnelSpec {
    /// Paths, in order.
    pub paths: Vec<PathSpec>,
    /// The per-packet scheduler.
    pub scheduler: SchedulerKind,
    /// The far end's reordering stage.
    pub reorder: ReorderConfig,
    /// Packets the entry's queue holds (each direction's).
    pub queue: usize,
    /// What feeds the entry.
    pub source: Source,
    /// Bytes of each carried packet (the largest, for a reliable flow).
    pub packet_size: usize,
    /// How long the source sends.
    pub duration: Duration,
    /// Start of the measurement window.
    pub warmup: Duration,
    /// Trace interval.
    pub trace_interval: Duration,
    /// Seed of the controllers and the links' loss and jitter.
    pub seed: u64,
}

impl TunnelSpec {
    /// The largest UDP payload of a tunnel packet: the connections' packet size, which their
    /// controllers count in (the simulator's count in the packet with its IPv4 and UDP
    /// headers, 28 bytes more).
    pub fn quic_packet_size(&self) -> usize {
        self.packet_size + HEADER + QUIC_OVERHEAD
    }

    /// The run's time line: its trace interval, measurement window and end.
    fn clock(&self) -> Clock {
        Clock {
            interval_ns: self.trace_interval.as_nanos() as u64,
            warmup_ns: self.warmup.as_nanos() as u64,
            end_ns: self.duration.as_nanos() as u64,
        }
    }

    fn check(&self) -> Result<(), String> {
        if self.paths.is_empty() {
            return Err("a tunnel needs at least one path".into());
        }
        if self.duration > wire::MAX_RUN {
            return Err(format!(
                "a real tunnel runs at most {} s",
                wire::MAX_RUN.as_secs()
            ));
        }
        if let Source::Cbr { rate, payload } = self.source {
            if rate.bits_per_sec() <= 0.0 || payload == 0 || payload > self.packet_size {
                return Err("a tunnel's constant-rate source needs a rate and a payload".into());
            }
        }
        if self.queue == 0 {
            return Err("a tunnel's entry needs a queue".into());
        }
        if self.trace_interval.is_zero() {
            return Err("the trace interval must be above zero".into());
        }
        if self.warmup >= self.duration {
            return Err("the measurement window opens after the run ends".into());
        }
        let (lo, hi) = packet_size_range(&self.source);
        if !(lo..=hi).contains(&self.packet_size) {
            return Err(format!(
                "a carried packet of {} bytes does not fit a QUIC packet; accepted: {lo} to {hi}",
                self.packet_size
            ));
        }
        Ok(())
    }
}

/// The carried packet sizes a tunnel of `source` takes: its QUIC packets are 1200 bytes
/// (QUIC's least) to the largest IPv4 UDP payload, and so are a reliable flow's inside.
pub fn packet_size_range(source: &Source) -> (usize, usize) {
    let around = HEADER + QUIC_OVERHEAD;
    let least = match source {
        Source::Cbr { .. } => 1200 - around,
        Source::Reliable { .. } => 1200 + STAND_IN,
    };
    (least, MAX_UDP_PAYLOAD - around)
}

/// The largest UDP payload over IPv4.
const MAX_UDP_PAYLOAD: usize = 65_507;

/// What one path did.
#[derive(Clone, Debug)]
pub struct PathReport {
    /// Name.
    pub name: String,
    /// Per trace interval: `rx_rate_bps` and `latency_ms` at the path's far end (carried
    /// bytes, before reordering).
    pub trace: Series,
    /// The connection's controller, sampled every trace interval (the columns of a real
    /// transfer's trace, [`crate::trace`]).
    pub controller: Series,
    /// Carried bytes that arrived in the measurement window.
    pub window_bytes: u64,
    /// Latency from the entry to the path's far end of the packets that entered in the
    /// window, ns.
    pub latency: Histogram,
    /// Tunnel packets handed to the path, over the whole run.
    pub sent: u64,
    /// Tunnel packets that arrived at its far end, over the whole run.
    pub arrived: u64,
    /// Of the packets that entered the tunnel in the measurement window, those handed to the
    /// path and those that arrived at its far end.
    pub window: [u64; 2],
    /// The connection's controller's counters, over the whole run.
    pub cc: CcCounters,
    /// Its RTT samples over the whole run, ns.
    pub rtt: Histogram,
    /// Why the path's connection closed before the run ended, if it did.
    pub lost: Option<String>,
    /// The mean bytes of the datagrams the path's link carried towards the far end in the
    /// measurement window, IPv4 and UDP headers included, as the emulator counted them: a
    /// tunnel packet's size on the wire while the path is busy.
    pub wire_bytes: f64,
    /// The path's emulator.
    pub emulator: EmulatorStats,
    /// The path's link towards the far end, and the one back: counters over the measurement
    /// window, queue extremes over the whole run.
    pub links: [LinkStats; 2],
}

/// What a tunnel run measured.
#[derive(Clone, Debug)]
pub struct TunnelReport {
    /// Per path.
    pub paths: Vec<PathReport>,
    /// Per trace interval after reordering: `rx_rate_bps`, `latency_ms`.
    pub trace: Series,
    /// Latency from the entry to forwarding at the far end of the packets that entered in
    /// the window, ns.
    pub latency: Histogram,
    /// Carried bytes forwarded in the window.
    pub window_bytes: u64,
    /// Packets forwarded of those that entered in the window.
    pub forwarded_window: u64,
    /// The measurement window, s.
    pub window_s: f64,
    /// The entry's counters.
    pub entry: EntryCounts,
    /// The far end's counters.
    pub far: FarCounts,
    /// Packets still in the entry's queue when the source stopped.
    pub queued_at_end: u64,
    /// Packets the reordering stage held when the run ended.
    pub buffered_at_end: u64,
    /// Datagrams from strangers, dropped before QUIC saw them.
    pub garbage: Garbage,
    /// How late the source's packets entered the tunnel, ns (a constant-rate source's).
    pub source_lateness: Histogram,
    /// Whether the source's and entries' thread ran at real-time priority (`SCHED_FIFO` 1,
    /// where the process may, as the emulator's relay does).
    pub source_realtime: bool,
    /// The direction back.
    pub backward: Backward,
    /// The reliable flow inside, if the source was one.
    pub flow: Option<FlowReport>,
}

/// What the direction back carried (the reliable flow's ACKs), counted as the forward
/// direction's are.
#[derive(Clone, Debug, Default)]
pub struct Backward {
    /// The far end's entry's counters.
    pub entry: EntryCounts,
    /// The entry's reordering stage's counters.
    pub far: FarCounts,
    /// Packets still in the far end's entry queue when the run ended.
    pub queued_at_end: u64,
    /// Packets the entry's reordering stage held when the run ended.
    pub buffered_at_end: u64,
    /// Per path, tunnel packets handed to it over the whole run.
    pub sent: Vec<u64>,
    /// Per path, tunnel packets that arrived at the entry over the whole run.
    pub arrived: Vec<u64>,
    /// Latency from the far end's entry to forwarding at the entry of the packets that entered
    /// in the window, ns.
    pub latency: Histogram,
}

/// What the reliable flow inside did.
#[derive(Clone, Debug)]
pub struct FlowReport {
    /// Stream bytes its receiver read in the measurement window.
    pub window_bytes: u64,
    /// Per trace interval: `goodput_bps`.
    pub trace: Series,
    /// Its sender's controller, sampled every trace interval.
    pub controller: Series,
    /// Its sender's controller's counters, over the whole run.
    pub cc: CcCounters,
    /// Its sender's RTT samples over the whole run, ns.
    pub rtt: Histogram,
}

/// Datagrams from anyone but their peer, dropped at the tunnel's ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Garbage {
    /// At the entry's sockets.
    pub entry: u64,
    /// At the far ends' (once each path's connection was up).
    pub far_end: u64,
}

impl TunnelReport {
    /// Why the run does not count, if it does not: an emulator or the source did not keep
    /// time, or a path's connection was lost.
    pub fn invalid(&self) -> Option<String> {
        let mut why: Vec<String> = Vec::new();
        for p in &self.paths {
            if let Some(e) = p.emulator.why_invalid() {
                why.push(format!("path {}'s emulator fell behind ({e})", p.name));
            }
            if let Some(reason) = &p.lost {
                why.push(format!("path {}'s connection was lost: {reason}", p.name));
            }
        }
        let late = Duration::from_nanos(self.source_lateness.quantile(0.99).unwrap_or(0.0) as u64);
        if late > SOURCE_LATENESS_BOUND {
            why.push(format!(
                "the source's packets entered late (p99 {late:?} > {SOURCE_LATENESS_BOUND:?})"
            ));
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Checks that every packet is accounted for, from counts kept at each place: what the
    /// entry queued was scheduled or is still queued, and the copies that arrived at the far
    /// ends were forwarded once, dropped by the reordering stage, or are still held there.
    /// What a path lost is what it was given less what arrived.
    pub fn accounted(&self) -> Result<(), String> {
        let arrived = self.paths.iter().map(|p| p.arrived).sum();
        let forward = [self.queued_at_end, arrived, self.buffered_at_end];
        settled(&self.entry, &self.far, forward).map_err(|e| format!("forward: {e}"))?;
        let b = &self.backward;
        let backward = [b.queued_at_end, b.arrived.iter().sum(), b.buffered_at_end];
        settled(&b.entry, &b.far, backward).map_err(|e| format!("backward: {e}"))
    }
}

/// One direction's account: what its entry queued was scheduled or is still queued
/// (`queued_at_end`), and the copies that `arrived` at its far end were forwarded once,
/// dropped by the reordering stage, or are still held there (`buffered_at_end`).
fn settled(
    entry: &EntryCounts,
    far: &FarCounts,
    [queued_at_end, arrived, buffered_at_end]: [u64; 3],
) -> Result<(), String> {
    let queued = entry.entered - entry.queue_drops;
    let scheduled = entry.scheduled;
    if queued != scheduled + queued_at_end {
        return Err(format!(
            "the entry queued {queued} packets, scheduled {scheduled} and holds {queued_at_end}"
        ));
    }
    let f = far;
    let settled = f.forwarded + f.reorder_drops + f.duplicates + buffered_at_end;
    if arrived != settled {
        return Err(format!(
            "{arrived} copies arrived at the far ends, and {} were forwarded, {} dropped late, \
             {} dropped as copies, {buffered_at_end} still held",
            f.forwarded, f.reorder_drops, f.duplicates
        ));
    }
    Ok(())
}

/// A path's far end: its QUIC endpoint, reached through the path's emulator, and the probe of
/// its connection's controller (which sends the direction back).
struct FarPath {
    endpoint: noq::Endpoint,
    emulator: Arc<EmulatorHandle>,
    /// Passes only the emulator's datagrams once the path's connection is up.
    gate: Arc<Gate>,
    probe: CcProbe,
}

/// A path's entry: its endpoint, behind a gate that passes only the path's emulator's
/// datagrams.
struct EntryPath {
    endpoint: noq::Endpoint,
    gate: Arc<Gate>,
}

/// One end of a path's connection, sending one direction's tunnel packets.
struct PathSide {
    conn: noq::Connection,
    probe: CcProbe,
    priority: u8,
    /// noq's free datagram buffer with nothing queued (it keeps some bytes for itself).
    empty_space: usize,
    sent: u64,
    /// Packets handed over that entered in the measurement window.
    sent_window: u64,
}

impl PathSide {
    fn new(conn: noq::Connection, probe: CcProbe, priority: u8) -> Self {
        PathSide {
            empty_space: conn.datagram_send_buffer_space(),
            conn,
            probe,
            priority,
            sent: 0,
            sent_window: 0,
        }
    }

    /// What the scheduler sees of the path: in flight and window in QUIC packets of `packet`
    /// bytes, and the datagrams of `datagram` bytes noq still holds. Those are read before
    /// the bytes in flight, so one sent in between counts twice (the cautious way) rather
    /// than not at all.
    fn view(&self, packet: u64, datagram: u64) -> SubflowView {
        let space = self.conn.datagram_send_buffer_space();
        let held = self.empty_space.saturating_sub(space) as u64;
        let flight = self.probe.flight().unwrap_or_default();
        let cwnd = self.conn.path_stats(PathId::ZERO).map_or(0, |s| s.cwnd);
        SubflowView {
            established: self.conn.close_reason().is_none(),
            pipe: flight.in_flight.div_ceil(packet),
            cwnd: cwnd / packet,
            queued: held.div_ceil(datagram),
            srtt_ns: flight.smoothed_rtt.map(|d| d.as_nanos() as u64),
            priority: self.priority,
        }
    }
}

/// One direction: its entry and the path ends that send its packets.
struct Direction {
    entry: Arc<Mutex<Entry>>,
    paths: Vec<PathSide>,
}

/// One direction's far end: its reordering stage and where it hands the carried payloads.
#[derive(Clone)]
struct Exit {
    far: Arc<Mutex<FarEnd>>,
    inbox: Arc<Inbox>,
}

impl Exit {
    fn new(spec: &TunnelSpec) -> Self {
        let carries = matches!(spec.source, Source::Reliable { .. });
        let far = FarEnd::new(spec.reorder, spec.paths.len(), spec.clock(), carries);
        Exit {
            far: Arc::new(Mutex::new(far)),
            inbox: Arc::default(),
        }
    }

    /// Hands what the reordering stage forwarded to the flow's end, outside the lock.
    fn hand_over(&self, mut far: std::sync::MutexGuard<'_, FarEnd>) {
        let out = far.take_forwarded();
        drop(far);
        self.inbox.push(out);
    }

    /// The far end's state at the run's end; it takes nothing more.
    fn finish(&self, spec: &TunnelSpec) -> FarEnd {
        let empty = FarEnd::new(spec.reorder, 0, spec.clock(), false);
        std::mem::replace(&mut *lock(&self.far), empty)
    }
}

fn ns_since(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

/// Where a path's pieces listen, once the path's connection is up.
#[derive(Clone, Copy, Debug)]
pub struct PathEnds {
    /// The entry's socket.
    pub entry: SocketAddr,
    /// The emulator's listening socket.
    pub emulator: SocketAddr,
    /// The far end's socket.
    pub far: SocketAddr,
}

/// Runs the tunnel of `spec` on loopback for its duration and returns what it measured.
pub async fn run(spec: &TunnelSpec) -> Result<TunnelReport, String> {
    run_with(spec, |_| {}).await
}

/// The run's connections, once up: the entry's and the far ends' sides of each path.
struct Connected {
    entries: Vec<EntryPath>,
    far_paths: Vec<FarPath>,
    forward: Vec<PathSide>,
    backward: Vec<PathSide>,
}

/// Starts every path (far end, emulator, connection) and checks that each far end's peer is
/// its emulator.
async fn connect(
    spec: &TunnelSpec,
    epoch: Instant,
    signal: &Arc<Signal>,
) -> Result<Connected, String> {
    let mut far_paths = Vec::new();
    let mut certs = Vec::new();
    for (i, p) in spec.paths.iter().enumerate() {
        let (cert, far) = far_path(spec, i, p, epoch, signal)?;
        certs.push(cert);
        far_paths.push(far);
    }
    // The far ends accept while the entry connects: a handshake waits for its accept.
    let accepting: Vec<_> = far_paths
        .iter()
        .map(|f| tokio::spawn(accept(f.endpoint.clone())))
        .collect();
    let mut entries = Vec::new();
    let mut forward = Vec::new();
    for ((p, far), cert) in spec.paths.iter().enumerate().zip(&far_paths).zip(&certs) {
        let (entry, side) = entry_path(spec, p, far, cert, epoch, signal).await?;
        entries.push(entry);
        forward.push(side);
    }
    let mut backward = Vec::new();
    for ((a, far), p) in accepting.into_iter().zip(&far_paths).zip(&spec.paths) {
        let (conn, peer) = a.await.map_err(|e| e.to_string())??;
        // The one connection a far end takes is its emulator's, relaying the entry's.
        let relayed = far
            .emulator
            .stats()
            .clients
            .iter()
            .any(|c| c.upstream == peer);
        if !relayed {
            return Err(format!(
                "path {}: {peer}, not the path's emulator, connected to the far end first",
                p.name
            ));
        }
        far.gate.admit_only(peer);
        check_datagrams(spec, &conn).map_err(|e| format!("path {}: {e}", p.name))?;
        backward.push(PathSide::new(conn, far.probe.clone(), p.priority));
    }
    Ok(Connected {
        entries,
        far_paths,
        forward,
        backward,
    })
}

/// [`run`], calling `on_ready` with each path's addresses once every connection is up.
pub async fn run_with(
    spec: &TunnelSpec,
    on_ready: impl FnOnce(&[PathEnds]),
) -> Result<TunnelReport, String> {
    spec.check()?;
    // Time zero: the emulators start right after, and their rate and delay schedules count
    // from their own start (within a millisecond of this).
    let epoch = Instant::now();
    let signal = Arc::new(Signal::default());
    let Connected {
        entries,
        far_paths,
        forward,
        backward,
    } = connect(spec, epoch, &signal).await?;
    let mut ends = Vec::new();
    for (e, f) in entries.iter().zip(&far_paths) {
        let local = |end: &noq::Endpoint| end.local_addr().map_err(|e| e.to_string());
        ends.push(PathEnds {
            entry: local(&e.endpoint)?,
            emulator: f.emulator.listen_addr(),
            far: local(&f.endpoint)?,
        });
    }
    on_ready(&ends);
    let clock = spec.clock();
    let (exit, exit_back) = (Exit::new(spec), Exit::new(spec));
    let entry_probes: Vec<CcProbe> = forward.iter().map(|e| e.probe.clone()).collect();
    let far_probes: Vec<CcProbe> = far_paths.iter().map(|f| f.probe.clone()).collect();
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();
    for (i, (f, b)) in forward.iter().zip(&backward).enumerate() {
        let fwd = receive(b.conn.clone(), i, exit.clone(), entry_probes.clone(), epoch);
        let back = receive(
            f.conn.clone(),
            i,
            exit_back.clone(),
            far_probes.clone(),
            epoch,
        );
        tasks.push(tokio::spawn(fwd));
        tasks.push(tokio::spawn(back));
    }
    tasks.push(tokio::spawn(expire(
        [exit.clone(), exit_back.clone()],
        epoch,
    )));
    let recorders: Vec<ProbeRecorder> = forward
        .iter()
        .zip(&spec.paths)
        .map(|(e, p)| {
            let name = format!("{}.controller", p.name);
            ProbeRecorder::start(e.probe.clone(), spec.trace_interval, &name)
        })
        .collect();
    let window = tokio::spawn(snapshots(
        far_paths.iter().map(|f| f.emulator.clone()).collect(),
        [epoch + spec.warmup, epoch + spec.duration],
    ));
    let entry_window = clock.window();
    let new_entry = || {
        Arc::new(Mutex::new(Entry::new(
            spec.scheduler,
            spec.queue,
            entry_window.clone(),
        )))
    };
    let directions = [
        Direction {
            entry: new_entry(),
            paths: forward,
        },
        Direction {
            entry: new_entry(),
            paths: backward,
        },
    ];
    let entries_in = [directions[0].entry.clone(), directions[1].entry.clone()];
    let thread_spec = spec.clone();
    let thread_signal = signal.clone();
    let (done, finished) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("tunnel-entry".into())
        .spawn(move || {
            let _ = done.send(source(&thread_spec, directions, &thread_signal, epoch));
        })
        .map_err(|e| format!("starting the entry's thread: {e}"))?;
    let flow = match &spec.source {
        Source::Reliable { cc, params } => {
            let inner = InnerSpec {
                cc: cc.clone(),
                params: params.clone(),
                packet_size: spec.packet_size,
                seed: spec.seed.wrapping_add(spec.paths.len() as u64),
            };
            let pipes = Plumbing {
                forward: outlet(entries_in[0].clone(), signal.clone(), epoch),
                backward: outlet(entries_in[1].clone(), signal.clone(), epoch),
                at_entry: exit_back.inbox.clone(),
                at_far: exit.inbox.clone(),
            };
            match InnerFlow::start(&inner, pipes, epoch, clock).await {
                Ok(f) => {
                    let recorder =
                        ProbeRecorder::start(f.probe.clone(), spec.trace_interval, "controller");
                    Some((f, recorder))
                }
                Err(e) => {
                    for t in &tasks {
                        t.abort();
                    }
                    signal.stop();
                    return Err(e);
                }
            }
        }
        Source::Cbr { .. } => None,
    };
    let sent = finished
        .await
        .map_err(|_| "the entry's thread stopped".to_string())
        .and_then(|r| r);
    if sent.is_err() {
        for t in &tasks {
            t.abort();
        }
    }
    let (directions, source_lateness, source_realtime) = sent?;
    let window = window.await.unwrap_or_default();
    tokio::time::sleep(DRAIN).await;
    let flow = match flow {
        Some((f, recorder)) => Some(finish_flow(f, recorder, &clock).await),
        None => None,
    };
    for t in tasks {
        t.abort();
        // Cancelled: its connection handle is dropped with it.
        let _ = t.await;
    }
    let mut samples = Vec::new();
    for r in recorders {
        samples.push(r.finish().await);
    }
    let (far, far_back) = (exit.finish(spec), exit_back.finish(spec));
    let [fwd, back] = directions;
    let (entry_counts, queued) = fwd.counts();
    let backward_report = backward_report(&back, &far_back);
    let mut paths = Vec::new();
    // Read before the far ends close their side, which ends every connection.
    let lost: Vec<Option<String>> = fwd
        .paths
        .iter()
        .map(|e| e.conn.close_reason().map(|r| r.to_string()))
        .collect();
    // A connection handle keeps its endpoint, and so its port, alive.
    for c in back.paths {
        c.conn.close(0u32.into(), b"done");
    }
    let garbage = Garbage {
        entry: entries.iter().map(|e| e.gate.dropped()).sum(),
        far_end: far_paths.iter().map(|f| f.gate.dropped()).sum(),
    };
    let ends = entries
        .into_iter()
        .zip(fwd.paths)
        .zip(far_paths)
        .zip(samples)
        .zip(lost);
    for (k, ((((e, side), f), s), lost)) in ends.enumerate() {
        let end = PathEnd {
            controller: s,
            window: window.get(k),
            lost,
        };
        paths.push(finish_path(spec, k, (e, side, f), end, &far).await?);
    }
    Ok(TunnelReport {
        paths,
        trace: far.forwarded.series("end_to_end", &clock),
        latency: far.forwarded.latency.clone(),
        window_bytes: far.forwarded.window_bytes,
        forwarded_window: far.forwarded.window_packets,
        window_s: spec.duration.saturating_sub(spec.warmup).as_secs_f64(),
        entry: entry_counts,
        far: far.counts,
        queued_at_end: queued,
        buffered_at_end: far.buffered() as u64,
        garbage,
        source_lateness,
        source_realtime,
        backward: backward_report,
        flow,
    })
}

impl Direction {
    /// The entry's counters and the packets still queued.
    fn counts(&self) -> (EntryCounts, u64) {
        let e = lock(&self.entry);
        (e.counts, e.queued() as u64)
    }
}

/// The direction back's report from its entry (at the far end) and its far end (the entry's).
fn backward_report(back: &Direction, far: &FarEnd) -> Backward {
    let (entry, queued_at_end) = back.counts();
    Backward {
        entry,
        far: far.counts,
        queued_at_end,
        buffered_at_end: far.buffered() as u64,
        sent: back.paths.iter().map(|p| p.sent).collect(),
        arrived: far.arrived.clone(),
        latency: far.forwarded.latency.clone(),
    }
}

/// Stops the reliable flow and reports what it did.
async fn finish_flow(f: InnerFlow, recorder: ProbeRecorder, clock: &Clock) -> FlowReport {
    let controller = recorder.finish().await;
    let cc = f.probe.sample().map(|s| s.counters).unwrap_or_default();
    let rtt = f.probe.rtt_histogram().unwrap_or_default();
    let meter = f.meter.clone();
    f.stop().await;
    let m = lock(&meter);
    FlowReport {
        window_bytes: m.window_bytes,
        trace: m.series("flow", clock),
        controller,
        cc,
        rtt,
    }
}

/// Where a flow end's packets enter the tunnel: `entry`, as carried packets of their size plus
/// the [`STAND_IN`], waking the entry's thread.
fn outlet(entry: Arc<Mutex<Entry>>, signal: Arc<Signal>, epoch: Instant) -> Outlet {
    Arc::new(move |datagram: &[u8]| {
        let now = ns_since(epoch);
        lock(&entry).enter(now, STAND_IN + datagram.len(), datagram.to_vec());
        signal.raise();
    })
}

/// The far end's TLS certificate (DER) and its QUIC server configuration for path `p`:
/// DATAGRAM frames taken and sent (the direction back) under the path's controller, whose
/// probe comes with it; the tunnel's packet size fixed (no MTU discovery).
fn far_end_config(
    spec: &TunnelSpec,
    (index, p): (usize, &PathSpec),
    epoch: Instant,
    signal: &Arc<Signal>,
) -> Result<(Vec<u8>, ServerConfig, CcProbe), String> {
    let at = |e: &dyn std::fmt::Display| format!("path {}: {e}", p.name);
    let factory = path_controller(spec, (index, p), epoch, signal).map_err(|e| at(&e))?;
    let (cert, _, crypto) =
        endpoint::server_crypto(vec![ALPN_TUNNEL.to_vec()]).map_err(|e| at(&e))?;
    let mut config = ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = fixed_mtu(spec.quic_packet_size()).map_err(|e| at(&e))?;
    transport
        .congestion_controller_factory(Arc::new(factory.clone()))
        .datagram_receive_buffer_size(Some(RECEIVE_BUFFER))
        .datagram_send_buffer_size(SEND_BUFFER)
        .max_concurrent_bidi_streams(0u32.into())
        .max_concurrent_uni_streams(0u32.into());
    config
        .transport_config(Arc::new(transport))
        .migration(false);
    Ok((cert.to_vec(), config, factory.probe()))
}

/// Path `index`'s controller (one for each end of its connection), counting the tunnel's QUIC
/// packets, waking the entry's thread on every ACK and congestion event.
fn path_controller(
    spec: &TunnelSpec,
    (index, p): (usize, &PathSpec),
    epoch: Instant,
    signal: &Arc<Signal>,
) -> Result<CcFactory, String> {
    let config = ControllerConfig {
        max_datagram_size: spec.quic_packet_size() as u64,
        seed: spec.seed.wrapping_add(index as u64),
        ..ControllerConfig::default()
    };
    let signal = signal.clone();
    Ok(CcFactory::new(&p.cc, p.params.clone(), config)
        .and_then(CcFactory::without_subflows)
        .map_err(|e| e.to_string())?
        .with_epoch(epoch)
        .waking(move || signal.raise()))
}

/// A transport whose packets are `size` bytes of UDP payload at most, MTU discovery off.
fn fixed_mtu(size: usize) -> Result<TransportConfig, Error> {
    let mtu = u16::try_from(size)
        .ok()
        .filter(|&m| m >= 1200)
        .ok_or_else(|| {
            Error::Connection(format!(
                "a tunnel packet of {size} bytes of UDP payload does not fit; accepted: 1200 \
                 to 65535"
            ))
        })?;
    let mut t = TransportConfig::default();
    t.initial_mtu(mtu)
        .min_mtu(mtu)
        .mtu_discovery_config(None::<MtuDiscoveryConfig>);
    Ok(t)
}

/// Path `i`'s far end and its emulator, which relays the entry's datagrams over the path's
/// links; and the certificate the entry trusts.
fn far_path(
    spec: &TunnelSpec,
    i: usize,
    p: &PathSpec,
    epoch: Instant,
    signal: &Arc<Signal>,
) -> Result<(Vec<u8>, FarPath), String> {
    let (cert, config, probe) = far_end_config(spec, (i, p), epoch, signal)?;
    let gate = Arc::new(Gate::default());
    let endpoint = gated_endpoint(Some(config), gate.clone())
        .map_err(|e| format!("path {}: starting the far end: {e}", p.name))?;
    let server = endpoint
        .local_addr()
        .map_err(|e| format!("path {}: {e}", p.name))?;
    let emulator = emulator::start(EmulatorConfig {
        listen: LOOPBACK,
        server,
        forward: p.forward.clone(),
        reverse: p.reverse.clone(),
        seed: spec.seed.wrapping_add(i as u64),
        // The entry is the emulator's one client for the whole run.
        client_idle: spec.duration + DRAIN + emulator::DEFAULT_CLIENT_IDLE,
    })
    .map_err(|e| format!("path {}: {e}", p.name))?;
    let far = FarPath {
        endpoint,
        emulator: Arc::new(emulator),
        gate,
        probe,
    };
    Ok((cert, far))
}

/// A QUIC endpoint on a new loopback UDP socket behind `gate`, a server with `server`.
fn gated_endpoint(server: Option<ServerConfig>, gate: Arc<Gate>) -> Result<noq::Endpoint, Error> {
    let socket = endpoint::udp_socket(LOOPBACK, endpoint::DEFAULT_SOCKET_BUFFER)?;
    let socket = GatedSocket::new(socket, gate).map_err(endpoint::io("wrapping the UDP socket"))?;
    noq::Endpoint::new_with_abstract_socket(
        endpoint::endpoint_config()?,
        server,
        Box::new(socket),
        // noq's pacer and ACK timers to tens of microseconds (docs/quic.md, "Fine timers").
        Arc::new(FineRuntime),
    )
    .map_err(endpoint::io("starting the QUIC endpoint"))
}

/// Whether `conn` takes the tunnel's largest datagram.
fn check_datagrams(spec: &TunnelSpec, conn: &noq::Connection) -> Result<(), String> {
    let needed = spec.packet_size + HEADER;
    if conn.max_datagram_size().is_none_or(|m| m < needed) {
        return Err(format!(
            "the connection takes datagrams of {:?} bytes, and a tunnel packet needs {needed}",
            conn.max_datagram_size()
        ));
    }
    Ok(())
}

/// The entry's connection over path `p`, through its emulator, under the path's controller.
async fn entry_path(
    spec: &TunnelSpec,
    (index, p): (usize, &PathSpec),
    far: &FarPath,
    cert: &[u8],
    epoch: Instant,
    signal: &Arc<Signal>,
) -> Result<(EntryPath, PathSide), String> {
    let at = |e: &dyn std::fmt::Display| format!("path {}: {e}", p.name);
    let factory = path_controller(spec, (index, p), epoch, signal).map_err(|e| at(&e))?;
    let crypto = endpoint::client_crypto(cert, vec![ALPN_TUNNEL.to_vec()]).map_err(|e| at(&e))?;
    let mut client = ClientConfig::new(Arc::new(crypto));
    let mut transport = fixed_mtu(spec.quic_packet_size()).map_err(|e| at(&e))?;
    transport
        .congestion_controller_factory(Arc::new(factory.clone()))
        .datagram_send_buffer_size(SEND_BUFFER)
        .keep_alive_interval(Some(KEEP_ALIVE))
        .datagram_receive_buffer_size(Some(RECEIVE_BUFFER));
    client.transport_config(Arc::new(transport));
    let gate = Arc::new(Gate::default());
    gate.admit_only(far.emulator.listen_addr());
    let endpoint = gated_endpoint(None, gate.clone()).map_err(|e| at(&e))?;
    endpoint.set_default_client_config(client);
    let conn = endpoint
        .connect(far.emulator.listen_addr(), SERVER_NAME)
        .map_err(|e| at(&e))?
        .await
        .map_err(|e| at(&e))?;
    check_datagrams(spec, &conn).map_err(|e| at(&e))?;
    let side = PathSide::new(conn, factory.probe(), p.priority);
    Ok((EntryPath { endpoint, gate }, side))
}

/// The far end's side of a path's connection, and its peer's address.
async fn accept(endpoint: noq::Endpoint) -> Result<(noq::Connection, SocketAddr), String> {
    let incoming = endpoint
        .accept()
        .await
        .ok_or("the far end stopped before the entry connected")?;
    let peer = incoming.remote_address();
    let conn = incoming
        .await
        .map_err(|e| format!("the far end's handshake failed: {e}"))?;
    Ok((conn, peer))
}

/// The paths' one-way latencies (half their latest RTT, as MP-DCCP's MP_DELAY gives them) for
/// the adaptive reordering timeout. Both ends run in one process, so the far end reads them
/// from the sending end's controllers instead of from a header option.
fn spread(probes: &[CcProbe]) -> LatencySpread {
    let halves = probes
        .iter()
        .filter_map(|p| p.flight().and_then(|f| f.latest_rtt))
        .map(|d| d.as_nanos() as u64 / 2);
    let (min_ns, max_ns) = halves.fold((u64::MAX, 0), |(lo, hi), h| (lo.min(h), hi.max(h)));
    if max_ns == 0 {
        return LatencySpread::default();
    }
    LatencySpread { min_ns, max_ns }
}

/// Reads path `path`'s datagrams into `exit` until the connection ends; `probes` are the
/// sending end's controllers.
async fn receive(
    conn: noq::Connection,
    path: usize,
    exit: Exit,
    probes: Vec<CcProbe>,
    epoch: Instant,
) {
    while let Ok(datagram) = conn.read_datagram().await {
        let now = ns_since(epoch);
        let spread = spread(&probes);
        let mut far = lock(&exit.far);
        far.arrive(now, path, &datagram, spread);
        exit.hand_over(far);
    }
}

/// Fires each direction's reordering stage's idle expiry when it is due.
async fn expire(exits: [Exit; 2], epoch: Instant) {
    let mut tick = tokio::time::interval(EXPIRY_TICK);
    loop {
        tick.tick().await;
        let now = ns_since(epoch);
        for exit in &exits {
            let mut f = lock(&exit.far);
            if f.deadline().is_some_and(|d| d <= now) {
                f.expire(now);
            }
            exit.hand_over(f);
        }
    }
}

/// Wakes the entry's thread: after an ACK or congestion event of a path, a packet of the
/// flow inside, or to stop it early. Lock-free: it is raised from inside noq's connection locks
/// on the runtime's threads, and a raiser preempted while holding a lock would stall the
/// entry's thread behind it, whatever that thread's priority.
#[derive(Default)]
struct Signal {
    raised: AtomicBool,
    stop: AtomicBool,
    /// The entry's thread, once it waits.
    waiter: OnceLock<std::thread::Thread>,
}

impl Signal {
    fn raise(&self) {
        self.raised.store(true, Ordering::Release);
        if let Some(t) = self.waiter.get() {
            t.unpark();
        }
    }

    /// The run failed: the thread returns at its next wake-up.
    fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.raise();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Waits, on the entry's thread, until raised or until `deadline`, and lowers the signal.
    fn wait_until(&self, deadline: Instant) {
        let _ = self.waiter.set(std::thread::current());
        while !self.raised.swap(false, Ordering::Acquire) {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            std::thread::park_timeout(left);
        }
    }
}

/// What the entries' thread hands back: both directions (their entries closed), how late the
/// constant-rate source's packets entered (ns), and whether the thread ran at real-time
/// priority.
type EntryResult = Result<([Direction; 2], Histogram, bool), String>;

/// The constant-rate source, if the run has one, feeding the entry for the run's duration,
/// and both directions' entries handing packets to their paths, on a thread of their own (a
/// packet enters at its due time to the microsecond, where the async runtime's timers have a
/// millisecond's grain) and at real-time priority where the process may: at normal priority a
/// wake-up a few milliseconds late now and then enters several packets at once, and one such
/// burst is the largest delivery-rate sample an application-limited BBR ever takes
/// (docs/mpdccp.md, "A QUIC tunnel"). Returns what [`EntryResult`] says, or why a path refused
/// a packet (a lost connection is counted, not an error).
fn source(
    spec: &TunnelSpec,
    mut directions: [Direction; 2],
    signal: &Signal,
    epoch: Instant,
) -> EntryResult {
    emulator::set_fine_timer_slack();
    let realtime = emulator::try_realtime();
    let window = spec.clock().window();
    let mut lateness = Histogram::default();
    let end = epoch + spec.duration;
    // The source's first packet is due now, and one every `gap`; a reliable flow's packets
    // enter when it sends them.
    let (gap, mut next) = match spec.source {
        Source::Cbr { rate, payload } => (
            rate.time_for(payload as u64).unwrap_or(Duration::MAX),
            Instant::now(),
        ),
        Source::Reliable { .. } => (Duration::ZERO, end),
    };
    while Instant::now() < end && !signal.stopped() {
        signal.wait_until(next.min(end));
        let now = Instant::now();
        while next <= now && next < end {
            // A packet enters at its due time; how late the thread took it is measured.
            let at = next.duration_since(epoch).as_nanos() as u64;
            lock(&directions[0].entry).enter(at, spec.packet_size, Vec::new());
            lateness.record(now.duration_since(next).as_nanos() as u64);
            next += gap;
        }
        for d in &mut directions {
            drain(spec, &window, d)?;
        }
    }
    for d in &directions {
        lock(&d.entry).close();
    }
    Ok((directions, lateness, realtime))
}

/// A direction's entry gives what it can to its paths, counting apart the packets that entered
/// in `window`.
fn drain(spec: &TunnelSpec, window: &RangeInclusive<u64>, d: &mut Direction) -> Result<(), String> {
    let packet = spec.quic_packet_size() as u64;
    let datagram = (spec.packet_size + HEADER) as u64;
    let views = &d.paths;
    let mut sent = vec![[0u64; 2]; views.len()];
    let mut refused = None;
    lock(&d.entry).drain(
        || views.iter().map(|p| p.view(packet, datagram)).collect(),
        |k, p| {
            let bytes = p.header.datagram(p.carried, &p.payload);
            match views[k].conn.send_datagram(bytes.into()) {
                Ok(()) => {
                    sent[k][0] += 1;
                    sent[k][1] += u64::from(window.contains(&p.header.entered_ns));
                    true
                }
                Err(noq::SendDatagramError::ConnectionLost(_)) => false,
                Err(e) => {
                    refused = Some(format!("path {}: {e}", spec.paths[k].name));
                    false
                }
            }
        },
    );
    for (p, [all, in_window]) in d.paths.iter_mut().zip(sent) {
        p.sent += all;
        p.sent_window += in_window;
    }
    refused.map_or(Ok(()), Err)
}

/// Each emulator's statistics when the measurement window opens and when it closes.
async fn snapshots(
    emulators: Vec<Arc<EmulatorHandle>>,
    at: [Instant; 2],
) -> Vec<[EmulatorStats; 2]> {
    let mut taken: [Vec<EmulatorStats>; 2] = Default::default();
    for (when, out) in at.iter().zip(&mut taken) {
        tokio::time::sleep_until(tokio::time::Instant::from_std(*when)).await;
        let emulators = emulators.clone();
        let stats = tokio::task::spawn_blocking(move || {
            emulators.iter().map(|e| e.stats()).collect::<Vec<_>>()
        });
        *out = stats.await.unwrap_or_default();
    }
    let [warm, end] = taken;
    warm.into_iter().zip(end).map(|(w, e)| [w, e]).collect()
}

/// A link's statistics from `warm` (when the window opened) to `end`.
fn windowed(
    end: &LinkStats,
    warm: &LinkStats,
    warm_elapsed: Duration,
    end_elapsed: Duration,
) -> LinkStats {
    LinkStats {
        counters: end.counters.since(&warm.counters),
        window_ns: end_elapsed.saturating_sub(warm_elapsed).as_nanos() as u64,
        ..end.clone()
    }
}

/// The mean bytes of the datagrams a direction carried between two snapshots, IPv4 and UDP
/// headers included: in the measurement window, where a busy path carries only tunnel packets
/// (no handshake, no keep-alive).
fn wire_bytes(warm: &DirectionStats, end: &DirectionStats) -> f64 {
    let datagrams = end.datagrams_in.saturating_sub(warm.datagrams_in);
    let bytes = end.bytes_in.saturating_sub(warm.bytes_in);
    if datagrams == 0 {
        return f64::NAN;
    }
    bytes as f64 / datagrams as f64 + IPV4_UDP_HEADER as f64
}

/// What a path's report takes from the end of the run besides its two ends: its controller's
/// trace, its emulator's snapshots when the window opened and closed, and why its connection
/// closed early, if it did.
struct PathEnd<'a> {
    controller: Series,
    window: Option<&'a [EmulatorStats; 2]>,
    lost: Option<String>,
}

/// Path `k`'s report; closes its connection and stops its emulator.
async fn finish_path(
    spec: &TunnelSpec,
    k: usize,
    (e, side, f): (EntryPath, PathSide, FarPath),
    end: PathEnd<'_>,
    far: &FarEnd,
) -> Result<PathReport, String> {
    let meter = &far.paths[k];
    let trace = meter.series(&spec.paths[k].name, &spec.clock());
    let cc = side.probe.sample().map(|s| s.counters).unwrap_or_default();
    let rtt = side.probe.rtt_histogram().unwrap_or_default();
    side.conn.close(0u32.into(), b"done");
    drop(side.conn);
    release(e.endpoint).await?;
    release(f.endpoint).await?;
    let emulator = match Arc::try_unwrap(f.emulator) {
        Ok(handle) => handle.shutdown(),
        Err(shared) => shared.stats(),
    };
    let (links, wire_bytes) = match end.window {
        Some([warm, last]) => (
            [
                (&last.forward, &warm.forward),
                (&last.reverse, &warm.reverse),
            ]
            .map(|(l, w)| windowed(&l.link, &w.link, warm.elapsed, last.elapsed)),
            wire_bytes(&warm.forward, &last.forward),
        ),
        None => (Default::default(), f64::NAN),
    };
    Ok(PathReport {
        name: spec.paths[k].name.clone(),
        trace,
        controller: end.controller,
        window_bytes: meter.window_bytes,
        latency: meter.latency.clone(),
        sent: side.sent,
        arrived: far.arrived.get(k).copied().unwrap_or(0),
        window: [side.sent_window, meter.window_packets],
        cc,
        rtt,
        lost: end.lost,
        wire_bytes,
        emulator,
        links,
    })
}

/// Closes `endpoint` and waits until its port is free again.
async fn release(endpoint: noq::Endpoint) -> Result<(), String> {
    let addr = endpoint.local_addr().map_err(|e| e.to_string())?;
    endpoint.close(0u32.into(), b"done");
    let _ = tokio::time::timeout(CLOSE_WAIT, endpoint.wait_idle()).await;
    drop(endpoint);
    endpoint::wait_released(addr)
        .await
        .map_err(|e| e.to_string())
}
