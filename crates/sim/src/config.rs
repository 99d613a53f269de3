//! What a simulation is made of, as plain values: links, flows, applications and transport
//! settings. The lab crate builds these from scenario files; tests build them directly.

use crate::delivery_trace::DeliveryTrace;
use crate::loss::LossConfig;
use crate::queue::{BufferLimit, QdiscConfig};
use kleinrock_cc::multipath::reorder::ReorderConfig;
use kleinrock_cc::multipath::scheduler::SchedulerKind;
use kleinrock_cc::{Controller, ParamValue, Rate};
use std::time::Duration;

/// Where a link's random loss strikes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossPoint {
    /// On arrival, before the policer and the queue: a lost packet never takes buffer or link
    /// time (netem's loss on the sending side).
    #[default]
    Arrival,
    /// On delivery, after the packet was queued, sent and propagated: it used the buffer and
    /// the link's capacity and then is lost (ns-3's `ReceiveErrorModel` on the receiving
    /// device).
    Delivery,
}

/// One direction of a link: a transmitter with a queue, followed by a propagation pipe.
#[derive(Clone, Debug, PartialEq)]
pub struct LinkConfig {
    /// Name, for reports.
    pub name: String,
    /// Rate at time zero.
    pub rate: Rate,
    /// Rate steps: from each time on, the given rate.
    pub schedule: Vec<(Duration, Rate)>,
    /// Delivery opportunities that pace the transmitter instead of the rate (which is then
    /// the trace's mean, for reports; no rate steps).
    pub delivery_trace: Option<DeliveryTrace>,
    /// Propagation delay.
    pub delay: Duration,
    /// Extra delay drawn uniformly from `[0, jitter]` per packet, never reordering packets.
    pub jitter: Duration,
    /// Random loss of the link's packets.
    pub loss: LossConfig,
    /// Where that loss strikes.
    pub loss_at: LossPoint,
    /// A token-bucket policer in front of the queue, if any.
    pub policer: Option<PolicerConfig>,
    /// Queue discipline.
    pub qdisc: QdiscConfig,
    /// Buffer size.
    pub buffer: BufferLimit,
}

impl LinkConfig {
    /// A plain drop-tail link: a FIFO queue of `buffer` at a constant `rate`, then `delay` of
    /// propagation; no rate schedule, jitter, random loss or policer.
    pub fn drop_tail(
        name: impl Into<String>,
        rate: Rate,
        delay: Duration,
        buffer: BufferLimit,
    ) -> LinkConfig {
        LinkConfig {
            name: name.into(),
            rate,
            schedule: Vec::new(),
            delivery_trace: None,
            delay,
            jitter: Duration::ZERO,
            loss: LossConfig::None,
            loss_at: LossPoint::Arrival,
            policer: None,
            qdisc: QdiscConfig::Fifo,
            buffer,
        }
    }
}

/// A token-bucket policer: tokens (bytes) accrue at `rate` up to `burst`; a packet passes if
/// the bucket holds its size, which it then spends, and is dropped otherwise. The bucket starts
/// full.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicerConfig {
    /// Token fill rate.
    pub rate: Rate,
    /// Bucket depth in bytes.
    pub burst: u64,
}

/// What the application at a flow's sender offers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppConfig {
    /// Always has data: unbounded, or `bytes` in total.
    Bulk {
        /// Total bytes, `None` for unbounded.
        bytes: Option<u64>,
    },
    /// Data arrives at a constant rate from the flow's start.
    ConstantRate {
        /// Rate of data arrival.
        rate: Rate,
        /// Total bytes, `None` for unbounded.
        bytes: Option<u64>,
    },
}

impl AppConfig {
    /// Total bytes the application will offer, `None` if unbounded.
    pub fn total_bytes(&self) -> Option<u64> {
        match *self {
            AppConfig::Bulk { bytes } | AppConfig::ConstantRate { bytes, .. } => bytes,
        }
    }
}

/// Settings of the reliable transport.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransportConfig {
    /// Bytes on the wire of a full data packet (counted by cwnd).
    pub packet_size: u32,
    /// Header bytes in each packet; payload = packet_size - header_size.
    pub header_size: u32,
    /// Bytes on the wire of an ACK packet.
    pub ack_size: u32,
    /// Whether the sender paces.
    pub pacing: bool,
    /// Pacing rate as a multiple of cwnd / smoothed RTT in slow start, when the controller
    /// sets no rate (Linux `tcp_pacing_ss_ratio`: 2.0).
    pub pacing_ratio_slow_start: f64,
    /// The same in congestion avoidance (Linux `tcp_pacing_ca_ratio`: 1.2).
    pub pacing_ratio: f64,
    /// Whether the receiver delays ACKs (every `ack_every`-th packet or `max_ack_delay`,
    /// RFC 9000 §13.2).
    pub delayed_ack: bool,
    /// Longest time the receiver holds an ACK back.
    pub max_ack_delay: Duration,
    /// With delayed ACKs, the receiver acknowledges every this many in-order packets (RFC 9000
    /// §13.2.2 and ns-3's `TcpSocketBase::DelAckCount`: 2).
    pub ack_every: u32,
    /// With delayed ACKs, the first this many data packets are acknowledged at once (Linux's
    /// quick-ACK mode at connection start, `TCP_MAX_QUICKACKS`: 16).
    pub quick_acks: u32,
    /// Whether ACKs carry receive timestamps, giving controllers one-way-delay samples.
    pub receive_timestamps: bool,
    /// How the sender detects loss and recovers from it.
    pub recovery: LossRecovery,
    /// A cap on the mean rate of the paced sender (of each subflow); `None`: no cap. A
    /// sender whose pacing rate is above it is held to it, and its sends then come out
    /// irregularly: each gap is the host rate's gap times a factor drawn uniformly from
    /// `[1 - host_jitter, 1 + host_jitter]`, as a user-space sender that cannot keep up with
    /// its timers sends (`docs/simulator.md`).
    pub host_rate: Option<Rate>,
    /// The spread of the gaps of a sender held to `host_rate`, from 0 (exactly periodic)
    /// to 1.
    pub host_jitter: f64,
    /// Most packets a sender (of each subflow) keeps from its oldest unresolved packet on,
    /// whatever its controller's window: the bound a receive window gives a real transport,
    /// and what bounds a sender's memory.
    pub max_in_flight: u32,
}

/// The default of [`TransportConfig::max_in_flight`]: 2^18 packets, 393 MB of full-size packets
/// (a 1 Gbit/s path with 3 s of round trip and queue), 17 MB of the sender's records.
pub const DEFAULT_MAX_IN_FLIGHT: u32 = 1 << 18;

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            packet_size: 1500,
            header_size: 40,
            ack_size: 64,
            pacing: true,
            pacing_ratio_slow_start: 2.0,
            pacing_ratio: 1.2,
            delayed_ack: false,
            max_ack_delay: Duration::from_millis(25),
            ack_every: 2,
            quick_acks: 0,
            receive_timestamps: true,
            recovery: LossRecovery::Quic,
            host_rate: None,
            host_jitter: 0.5,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

impl TransportConfig {
    /// Stream bytes in a full packet.
    pub fn payload(&self) -> u32 {
        self.packet_size - self.header_size
    }

    /// The window, in packets, a controller falls to on a retransmission timeout: TCP's loss
    /// window of one segment (RFC 5681 §3.1), QUIC's minimum window of two packets on
    /// persistent congestion (RFC 9002 §7.6.2).
    pub fn loss_window_packets(&self) -> u64 {
        match self.recovery {
            LossRecovery::Quic => 2,
            LossRecovery::Tcp(_) => 1,
        }
    }
}

/// How the reliable transport detects loss and recovers from it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LossRecovery {
    /// QUIC's (RFC 9002): packet threshold 3, time threshold 9/8 RTT, probe timeouts,
    /// persistent congestion.
    #[default]
    Quic,
    /// TCP's: packet threshold 3 (RFC 6675's DupThresh), a retransmission timeout (RFC 6298)
    /// after which every packet in flight is lost and the window is one segment, PRR
    /// (RFC 6937) in recovery, and optionally RACK-TLP (RFC 8985).
    Tcp(TcpRecovery),
}

/// The settings of TCP's loss recovery ([`LossRecovery::Tcp`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpRecovery {
    /// The floor of the retransmission timeout: RFC 6298 (2.4) says 1 s (ns-3's `MinRto`),
    /// Linux uses 200 ms (`TCP_RTO_MIN`).
    pub min_rto: Duration,
    /// The ceiling of the backed-off timeout: at least 60 s (RFC 6298 (2.5), ns-3's
    /// `MaxRto`); Linux 120 s (`TCP_RTO_MAX`).
    pub max_rto: Duration,
    /// How the timeout is computed from the RTT estimates.
    pub rto: RtoForm,
    /// Whether Proportional Rate Reduction (RFC 6937) paces the sending in recovery.
    pub prr: bool,
    /// Whether RACK-TLP (RFC 8985) runs: a time threshold of the latest RTT plus a quarter
    /// of the minimum RTT, and one tail-loss probe before the timeout.
    pub rack: bool,
}

impl Default for TcpRecovery {
    /// The RFCs' values: RFC 6298's timeout with its 1 s floor and 60 s ceiling, PRR
    /// (RFC 6937), no RACK-TLP.
    fn default() -> Self {
        TcpRecovery {
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            rto: RtoForm::Rfc6298,
            prr: true,
            rack: false,
        }
    }
}

/// How a retransmission timeout is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtoForm {
    /// RFC 6298 (2.3)-(2.4), as ns-3's `TcpSocketBase`: max(min_rto, srtt + max(G, 4 rttvar)).
    Rfc6298,
    /// Linux's `tcp_set_rto`: srtt + max(4 rttvar, min_rto), the floor on the variation term.
    Linux,
}

/// Builds a fresh controller for the `k`-th transfer (from 0) of a short-flow arrival process.
pub type ControllerFactory = Box<dyn Fn(u64) -> Box<dyn Controller> + Send>;

/// Time between two arrivals of a short-flow arrival process.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Interarrival {
    /// Always the same.
    Fixed(Duration),
    /// Uniform in `[low, high]`.
    Uniform(Duration, Duration),
    /// Exponential with this mean (Poisson arrivals).
    Exponential(Duration),
}

/// When the transfers of a short-flow arrival process begin: the first at the flow's start,
/// each next one an inter-arrival time later, until `count` transfers or the flow's stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ArrivalConfig {
    /// Time between two arrivals.
    pub interarrival: Interarrival,
    /// Most transfers, `None` for no limit.
    pub count: Option<u64>,
}

/// A controller parameter that changes during a run, as a socket option would.
#[derive(Clone, Debug, PartialEq)]
pub struct ParamChange {
    /// When it changes.
    pub at: Duration,
    /// Parameter name (one of the controller's runtime parameters).
    pub name: String,
    /// New value.
    pub value: ParamValue,
}

/// A route change: from `at` on, link `link` has propagation delay `delay`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RouteChange {
    /// Index of the link.
    pub link: usize,
    /// When the delay changes.
    pub at: Duration,
    /// The new propagation delay.
    pub delay: Duration,
}

/// Settings of the DCCP-like transport (RFC 4340): congestion-controlled datagrams, never
/// retransmitted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DccpConfig {
    /// Bytes on the wire of every data packet.
    pub packet_size: u32,
    /// Header bytes of a data packet: IPv4 (20) and a DCCP-DataAck header with 48-bit
    /// sequence numbers (24, RFC 4340 §5.1, §5.3); the application's bytes fill the rest.
    pub header_size: u32,
    /// Header bytes of an ACK before its Ack Vector: IPv4 (20) and a DCCP-Ack header (24).
    pub ack_header_size: u32,
    /// Packets the send queue holds while the window is closed (Linux `tx_qlen`); the
    /// application's packet that finds it full is dropped at the sender.
    pub tx_qlen: u32,
    /// The Ack Ratio until the controller asks for another (RFC 4340 §11.3: 2).
    pub ack_ratio: u64,
    /// Whether the host paces at the controller's pacing rate (Linux `fq` honours
    /// `sk_pacing_rate`); DCCP itself does not pace.
    pub pacing: bool,
    /// Most packets the sender keeps from its oldest unresolved one on, whatever the
    /// controller's window.
    pub max_in_flight: u32,
}

impl Default for DccpConfig {
    fn default() -> Self {
        DccpConfig {
            packet_size: 1500,
            header_size: 44,
            ack_header_size: 44,
            tx_qlen: 5,
            ack_ratio: 2,
            pacing: false,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
        }
    }
}

impl DccpConfig {
    /// Application bytes in a data packet.
    pub fn payload(&self) -> u32 {
        self.packet_size - self.header_size
    }
}

/// How a flow moves data.
pub enum FlowKind {
    /// The QUIC-like reliable transport driven by a congestion controller.
    Reliable {
        /// The congestion controller.
        controller: Box<dyn Controller>,
        /// Transport settings.
        transport: TransportConfig,
    },
    /// Unresponsive datagrams sent as the application offers them (no feedback, no
    /// retransmission), e.g. a constant-bit-rate UDP source.
    Datagram {
        /// Bytes on the wire of a full datagram.
        packet_size: u32,
        /// Header bytes in each datagram; the application's bytes fill the rest.
        header_size: u32,
    },
    /// The DCCP-like transport driven by a congestion controller (a CCID or any other).
    Dccp {
        /// The congestion controller.
        controller: Box<dyn Controller>,
        /// Transport settings.
        transport: DccpConfig,
    },
    /// Short transfers arriving at random times: each a new reliable connection with a fresh
    /// controller running the flow's (sized) application, several possibly in parallel.
    Arrivals {
        /// Builds each transfer's controller.
        controllers: ControllerFactory,
        /// Transport settings of every transfer.
        transport: TransportConfig,
        /// When transfers begin.
        arrivals: ArrivalConfig,
    },
}

/// One flow: endpoints, paths, application and lifetime.
pub struct FlowConfig {
    /// Name, for reports.
    pub name: String,
    /// Transport and controller.
    pub kind: FlowKind,
    /// Links data packets cross, in order (indices into the link list).
    pub forward: Vec<usize>,
    /// Links ACKs cross, in order; empty means ACKs arrive after zero delay.
    pub reverse: Vec<usize>,
    /// Application (of each transfer, for [`FlowKind::Arrivals`]).
    pub app: AppConfig,
    /// When the flow starts (its first arrival, for [`FlowKind::Arrivals`]).
    pub start: Duration,
    /// When the application stops offering new data, if ever (no arrivals from then on, for
    /// [`FlowKind::Arrivals`]; transfers under way finish).
    pub stop: Option<Duration>,
    /// Controller parameter changes during the run (reliable flows).
    pub events: Vec<ParamChange>,
}

/// One path of a multipath tunnel: a DCCP subflow over its own links, with a controller for
/// each direction.
pub struct TunnelPathConfig {
    /// Name, for reports.
    pub name: String,
    /// Links from the tunnel's entry to its far end, in order.
    pub forward: Vec<usize>,
    /// Links back, in order.
    pub reverse: Vec<usize>,
    /// The controllers of the subflow's two half-connections: the one sending towards the far
    /// end, and the one sending back (the carried flows' ACKs).
    pub controllers: [Box<dyn Controller>; 2],
    /// Transport settings of both half-connections: `header_size` is the bytes the tunnel adds
    /// to each packet it carries; `packet_size` the full packet a byte-counting controller's
    /// window is counted in.
    pub transport: DccpConfig,
    /// The path's priority (MP-DCCP `mpdccp_prio`): the cheapest-pipe-first scheduler prefers
    /// the highest, handover uses priority 1 as backup.
    pub priority: u8,
}

/// A multipath tunnel (the MP-DCCP framework): the packets of the flows it carries enter it
/// at one end, a scheduler gives each to a subflow, and the far end restores their order.
pub struct TunnelConfig {
    /// Name, for reports.
    pub name: String,
    /// Its paths.
    pub paths: Vec<TunnelPathConfig>,
    /// The per-packet scheduler.
    pub scheduler: SchedulerKind,
    /// The reordering stage at each end.
    pub reorder: ReorderConfig,
    /// Packets the tunnel's queue holds while no subflow may take one; a packet that finds it
    /// full is dropped.
    pub queue: u32,
    /// Indices of the flows it carries; their own paths are empty.
    pub flows: Vec<usize>,
}

/// A whole simulation.
pub struct SimConfig {
    /// Simulated time; the run also ends when every flow has finished.
    pub duration: Duration,
    /// Seed of every random element.
    pub seed: u64,
    /// Start of the measurement window: statistics before it are discarded.
    pub warmup: Duration,
    /// Trace sampling interval, `None` for no trace.
    pub trace_interval: Option<Duration>,
    /// Links.
    pub links: Vec<LinkConfig>,
    /// Changes of link propagation delays during the run. They are kept out of
    /// [`LinkConfig`], which the real-time emulator shares and which models no route change.
    pub route_changes: Vec<RouteChange>,
    /// Flows.
    pub flows: Vec<FlowConfig>,
    /// Multipath tunnels carrying some of the flows.
    pub tunnels: Vec<TunnelConfig>,
}
