//! The controller contract: what a transport tells a congestion controller and what it reads
//! back. Sans-IO: every input carries `now`; nothing here reads a clock or touches a socket.
//!
//! Units: windows and byte counts are bytes of packets as sent (headers included, as QUIC
//! counts bytes in flight); times are [`Instant`]s and [`Duration`]s; rates are [`Rate`]s.
//!
//! This file holds the trait, the events and the configuration; beside it are how an algorithm
//! presents itself ([`info`]), its parameters ([`params`]) and the units ([`units`]). Their
//! types are re-exported here, so an algorithm imports the whole contract from
//! `crate::controller`.

pub mod info;
pub mod params;
pub mod units;

pub use info::{BuildFn, ControllerInfo};
pub use params::{ParamError, ParamKind, ParamReader, ParamSpec, ParamValue, Params};
pub use units::{Instant, Rate};

use std::time::Duration;

/// Delivery-rate state of the connection captured when a packet is sent
/// (draft-cheng-iccrg-delivery-rate-estimation §3.2, "P.delivered" and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliverySnapshot {
    /// Bytes delivered by the connection when the packet was sent.
    pub delivered: u64,
    /// Time of the most recent delivery when the packet was sent.
    pub delivered_time: Instant,
    /// Send time of the packet that started the send phase this packet belongs to.
    pub first_sent_time: Instant,
    /// Whether the connection was application-limited when the packet was sent.
    pub is_app_limited: bool,
    /// Bytes declared lost by the connection when the packet was sent.
    pub lost: u64,
    /// Bytes in flight just after the packet was sent (BBRv2's `tx_in_flight`).
    pub tx_in_flight: u64,
}

/// A packet handed to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentPacket {
    /// Packet number; never reused by a connection.
    pub packet_number: u64,
    /// Size in bytes as counted in flight.
    pub bytes: u64,
    /// Whether the packet carries data sent before (a retransmission in a new packet).
    pub is_retransmission: bool,
    /// Bytes in flight after this packet was sent.
    pub in_flight: u64,
    /// Delivery-rate snapshot taken at send time.
    pub snapshot: DeliverySnapshot,
}

/// One delivery-rate sample, generated per ACK
/// (draft-cheng-iccrg-delivery-rate-estimation §3.3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over the sample interval.
    pub delivered: u64,
    /// The longer of the send and ACK phases of the sampled flight.
    pub interval: Duration,
    /// Whether the sampled flight was application-limited (then the rate is a lower bound only).
    pub is_app_limited: bool,
    /// `delivered` of the connection when the newest acked packet was sent (for round counting).
    pub prior_delivered: u64,
    /// Bytes lost over the sample interval.
    pub lost: u64,
    /// Bytes in flight when the newest acked packet was sent.
    pub tx_in_flight: u64,
}

impl RateSample {
    /// The delivery rate `delivered / interval`; `None` for an empty interval.
    pub fn delivery_rate(&self) -> Option<Rate> {
        (!self.interval.is_zero()).then(|| Rate::from_bytes_over(self.delivered, self.interval))
    }
}

/// Send and receive time of one packet, the receive time read on the receiver's clock.
/// The two clocks need not agree: only differences between samples are meaningful
/// (QUIC-DC eq. (3)-(4)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OneWayDelaySample {
    /// Packet number of the sampled packet.
    pub packet_number: u64,
    /// When the sender sent it (sender clock).
    pub sent_time: Instant,
    /// When the receiver received it (receiver clock).
    pub receive_time: Instant,
}

/// An acknowledgement that newly acknowledged at least one packet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AckEvent {
    /// Bytes newly acknowledged by this ACK.
    pub acked_bytes: u64,
    /// Packets newly acknowledged by this ACK.
    pub acked_packets: u64,
    /// Send time of the newest newly acknowledged packet (for QUIC-style recovery epochs).
    pub largest_acked_sent_time: Instant,
    /// RTT sample taken from this ACK, if the largest acknowledged packet was newly acked
    /// (RFC 9002 §5.1; includes the peer's ACK delay).
    pub rtt_sample: Option<Duration>,
    /// The ACK delay the receiver reported for the largest acknowledged packet (RFC 9000
    /// §19.3), when the transport knows it: the part of `rtt_sample` the receiver held the ACK.
    pub ack_delay: Option<Duration>,
    /// Minimum RTT seen so far (RFC 9002 §5.2).
    pub min_rtt: Option<Duration>,
    /// Smoothed RTT (RFC 9002 §5.3).
    pub smoothed_rtt: Option<Duration>,
    /// Delivery-rate sample for this ACK, when one is valid.
    pub rate: Option<RateSample>,
    /// Total bytes delivered by the connection, including this ACK.
    pub delivered: u64,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight: u64,
    /// Bytes in flight after this ACK was processed.
    pub in_flight: u64,
    /// Whether the sender was limited by the application rather than by cwnd when the newest
    /// acked packet was sent; window growth should not happen on such ACKs (RFC 9002 §7.8).
    pub app_limited: bool,
    /// One-way delay sample of the newest acknowledged packet, when the receiver reports
    /// receive timestamps.
    pub one_way_delay: Option<OneWayDelaySample>,
}

/// What kind of congestion signal a [`CongestionEvent`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CongestionKind {
    /// Packets declared lost by packet or time threshold (RFC 9002 §6.1).
    Loss,
    /// Persistent congestion (RFC 9002 §7.6), QUIC's counterpart of a retransmission timeout;
    /// on a DCCP-like transport, its retransmission timeout (RFC 4341 §5: every packet in
    /// flight is forgotten, and `in_flight` is 0 afterwards).
    PersistentCongestion,
    /// Packets acknowledged with the ECN-CE mark.
    EcnCe,
}

/// Packets declared lost or marked, reported once per loss-detection pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CongestionEvent {
    /// The kind of signal.
    pub kind: CongestionKind,
    /// Bytes declared lost (or CE-marked) in this pass.
    pub lost_bytes: u64,
    /// Packets declared lost (or CE-marked) in this pass.
    pub lost_packets: u64,
    /// Send time of the newest packet in this pass; a controller in recovery since a later
    /// time ignores the event (RFC 9002 §7.3.2).
    pub largest_sent_time: Instant,
    /// Bytes in flight before the lost packets were removed.
    pub prior_in_flight: u64,
    /// Bytes in flight after the lost packets were removed.
    pub in_flight: u64,
}

/// A controller's state for tracing: a mode name and named estimates, so every algorithm can be
/// plotted the same way. Values use the unit their name says (`_bytes`, `_bps`, `_ms`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControllerState {
    /// Current mode, e.g. `"slow_start"`, `"recovery"`, `"probe_bw"`.
    pub mode: &'static str,
    /// Named estimates, e.g. `("ssthresh_bytes", 31250.0)`.
    pub values: Vec<(&'static str, f64)>,
}

/// A congestion controller. Implementations are sans-IO and deterministic: the same sequence of
/// calls gives the same outputs.
pub trait Controller: Send {
    /// A packet was sent.
    fn on_sent(&mut self, _now: Instant, _packet: &SentPacket) {}

    /// An ACK newly acknowledged packets.
    fn on_ack(&mut self, now: Instant, ack: &AckEvent);

    /// Packets were declared lost, persistent congestion was detected, or ECN-CE was echoed.
    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent);

    /// The sender had window to send but no data (it is application-limited).
    fn on_app_limited(&mut self, _now: Instant) {}

    /// The connection went idle: nothing in flight and nothing to send.
    fn on_idle(&mut self, _now: Instant) {}

    /// A parameter changes during the run (a scenario event at `now`, as a socket option
    /// would). Only parameters the controller lists in `ControllerInfo::runtime_params` are
    /// given, with values already checked against its parameter specification.
    fn set_param(&mut self, _now: Instant, _name: &str, _value: &ParamValue) {}

    /// Congestion window in bytes. Rate-based controllers may return a large value.
    fn cwnd(&self) -> u64;

    /// The congestion window in packets, for a controller that counts packets (DCCP's CCIDs,
    /// RFC 4341 §5: "pipe" and cwnd in packets); `None` for one that counts bytes. A
    /// transport that counts packets sends while the packets in flight are fewer than this.
    fn cwnd_packets(&self) -> Option<u64> {
        None
    }

    /// The Ack Ratio the controller wants the receiver to use: one ACK per this many data
    /// packets (RFC 4340 §11.3, RFC 4341 §6); `None` leaves the transport's default.
    fn ack_ratio(&self) -> Option<u64> {
        None
    }

    /// Whether the window is full ("fully congested", what a multipath scheduler asks before
    /// it gives a subflow a packet): packets in flight at least [`Controller::cwnd_packets`]
    /// for a packet-counting controller, else bytes in flight at least [`Controller::cwnd`].
    fn fully_congested(&self, in_flight_bytes: u64, in_flight_packets: u64) -> bool {
        match self.cwnd_packets() {
            Some(cwnd) => in_flight_packets >= cwnd,
            None => in_flight_bytes >= self.cwnd(),
        }
    }

    /// Slow-start threshold in bytes, where the algorithm has one.
    fn ssthresh(&self) -> Option<u64> {
        None
    }

    /// Pacing rate the controller asks for; `None` lets the transport pace at a multiple of
    /// cwnd / smoothed RTT.
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }

    /// Whether the controller is in slow start (the transport paces faster there, as Linux does).
    fn in_slow_start(&self) -> bool {
        self.ssthresh().is_some_and(|s| self.cwnd() < s)
    }

    /// State for traces.
    fn state(&self) -> ControllerState;

    /// Subflows over the connection's path this controller wants open besides its own (the
    /// fair-queuing probe's second flow); 0 for a single-path controller. A transport with
    /// subflows opens or closes subflows to match after each event; one without them never
    /// asks.
    fn extra_subflows(&self) -> usize {
        0
    }

    /// The controller of a newly opened extra subflow, `index` counting from 1; `None` if the
    /// controller has none for it.
    fn subflow_controller(&mut self, _index: usize) -> Option<Box<dyn Controller>> {
        None
    }
}

/// Settings every controller shares, fixed by the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControllerConfig {
    /// Largest packet the transport sends, in bytes (SMSS / max_datagram_size).
    pub max_datagram_size: u64,
    /// Initial window in packets (RFC 6928 / RFC 9002 §7.2: 10).
    pub initial_window_packets: u64,
    /// Minimum window in packets (RFC 9002 §7.2: 2).
    pub minimum_window_packets: u64,
    /// The window in packets after a retransmission timeout or persistent congestion: QUIC's
    /// minimum window (RFC 9002 §7.6.2: 2), TCP's loss window (RFC 5681 §3.1: 1).
    pub loss_window_packets: u64,
    /// Seed for a controller's own random choices (e.g. BBR's ProbeBW start phase); the
    /// transport derives it from the scenario seed and the flow, so runs are reproducible.
    pub seed: u64,
}

impl ControllerConfig {
    /// Initial window in bytes.
    pub fn initial_window(&self) -> u64 {
        self.initial_window_packets * self.max_datagram_size
    }

    /// Minimum window in bytes.
    pub fn minimum_window(&self) -> u64 {
        self.minimum_window_packets * self.max_datagram_size
    }

    /// Loss window in bytes.
    pub fn loss_window(&self) -> u64 {
        self.loss_window_packets * self.max_datagram_size
    }
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            max_datagram_size: 1500,
            initial_window_packets: 10,
            minimum_window_packets: 2,
            loss_window_packets: 2,
            seed: 0,
        }
    }
}
