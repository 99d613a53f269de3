//! Raw measurements a run produces: counters per flow and per link, taken over the measurement
//! window, and RTT / one-way-delay histograms. The lab crate turns them into metrics.

use crate::hist::Histogram;

/// Counters of one flow. Byte counts are stream payload bytes unless named otherwise.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCounters {
    /// Packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes sent again after a loss or a probe timeout.
    pub bytes_retransmitted: u64,
    /// Packets the sender declared lost (datagram flows: sent in the window and not received
    /// in it).
    pub packets_lost: u64,
    /// Data packets the receiver got.
    pub packets_received: u64,
    /// Payload bytes delivered to the receiving application in order, each byte once.
    pub bytes_delivered: u64,
    /// Payload bytes the receiver got more than once.
    pub bytes_duplicate: u64,
    /// Payload bytes acknowledged to the sender.
    pub bytes_acked: u64,
    /// Congestion events: loss passes whose newest lost packet was sent after the previous
    /// event (one per RFC 9002 recovery episode).
    pub loss_events: u64,
    /// Probe timeouts.
    pub ptos: u64,
    /// Persistent-congestion declarations.
    pub persistent_congestion: u64,
    /// ACK packets sent by the receiver.
    pub acks_sent: u64,
    /// Packets the application handed to a DCCP flow's send queue.
    pub app_packets: u64,
    /// Of those, packets dropped at the sender because the send queue was full.
    pub send_queue_drops: u64,
}

impl FlowCounters {
    /// Counter-wise `self - earlier`.
    pub fn since(&self, earlier: &FlowCounters) -> FlowCounters {
        self.combine(earlier, |a, b| a - b)
    }

    /// Counter-wise `self + other`.
    pub fn plus(&self, other: &FlowCounters) -> FlowCounters {
        self.combine(other, |a, b| a + b)
    }

    fn combine(&self, o: &FlowCounters, f: impl Fn(u64, u64) -> u64) -> FlowCounters {
        FlowCounters {
            packets_sent: f(self.packets_sent, o.packets_sent),
            bytes_sent: f(self.bytes_sent, o.bytes_sent),
            bytes_retransmitted: f(self.bytes_retransmitted, o.bytes_retransmitted),
            packets_lost: f(self.packets_lost, o.packets_lost),
            packets_received: f(self.packets_received, o.packets_received),
            bytes_delivered: f(self.bytes_delivered, o.bytes_delivered),
            bytes_duplicate: f(self.bytes_duplicate, o.bytes_duplicate),
            bytes_acked: f(self.bytes_acked, o.bytes_acked),
            loss_events: f(self.loss_events, o.loss_events),
            ptos: f(self.ptos, o.ptos),
            persistent_congestion: f(self.persistent_congestion, o.persistent_congestion),
            acks_sent: f(self.acks_sent, o.acks_sent),
            app_packets: f(self.app_packets, o.app_packets),
            send_queue_drops: f(self.send_queue_drops, o.send_queue_drops),
        }
    }
}

/// How many events there were and when the first and the last happened: all a mean distance
/// between consecutive events needs, in constant space however long the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventSpan {
    /// Events counted.
    pub count: u64,
    /// Time of the first, ns (0 without events).
    pub first_ns: u64,
    /// Time of the last, ns (0 without events).
    pub last_ns: u64,
}

impl EventSpan {
    /// Counts an event at `t_ns`.
    pub fn record(&mut self, t_ns: u64) {
        self.merge(&EventSpan {
            count: 1,
            first_ns: t_ns,
            last_ns: t_ns,
        });
    }

    /// Adds the events of `other`.
    pub fn merge(&mut self, other: &EventSpan) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        self.count += other.count;
        self.first_ns = self.first_ns.min(other.first_ns);
        self.last_ns = self.last_ns.max(other.last_ns);
    }
}

/// Congestion events as the metrics count them: losses of a packet sent after the previous event
/// began start a new one (one per RFC 9002 §7.3.2 recovery period), whatever the controller does
/// with them.
#[derive(Clone, Copy, Debug, Default)]
pub struct LossEpisodes {
    started_ns: Option<u64>,
}

impl LossEpisodes {
    /// Whether losses detected at `now_ns`, the newest of them sent at `newest_lost_sent_ns`,
    /// begin a new event.
    pub fn begins(&mut self, now_ns: u64, newest_lost_sent_ns: u64) -> bool {
        if self.started_ns.is_some_and(|s| newest_lost_sent_ns <= s) {
            return false;
        }
        self.started_ns = Some(now_ns);
        true
    }
}

/// What arrived since the last trace sample: the packets' latency and their application bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalTally {
    sum_ns: u64,
    count: u64,
    bytes: u64,
}

impl IntervalTally {
    /// A packet of `bytes` application bytes arrived after `latency_ns`.
    pub fn record(&mut self, latency_ns: u64, bytes: u64) {
        self.sum_ns += latency_ns;
        self.count += 1;
        self.bytes += bytes;
    }

    /// The mean latency (ns) and the bytes since the last call; the tally restarts.
    pub fn take(&mut self) -> (Option<f64>, u64) {
        let t = std::mem::take(self);
        (
            (t.count > 0).then(|| t.sum_ns as f64 / t.count as f64),
            t.bytes,
        )
    }
}

/// Everything measured for one flow over the measurement window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlowStats {
    /// Flow name.
    pub name: String,
    /// Counters over the window.
    pub counters: FlowCounters,
    /// Time the flow was active inside the window, ns (from max(start, warm-up) to the earlier
    /// of its completion, its stop and the end of the run).
    pub active_ns: u64,
    /// Time the last byte of a sized transfer reached the receiver, ns, if it did.
    pub completion_ns: Option<u64>,
    /// Total bytes of a sized transfer.
    pub size_bytes: Option<u64>,
    /// RTT samples, ns.
    pub rtt: Histogram,
    /// One-way queuing delay of each received data packet: its one-way delay minus the
    /// smallest one-way delay of the flow so far, ns.
    pub queuing_delay: Histogram,
    /// Congestion events, for loss-event distances.
    pub loss_events: EventSpan,
    /// Latency of each data packet sent in the window: from its send (DCCP: from its
    /// application's hand-over) to its arrival, ns.
    pub latency: Histogram,
    /// Largest RTT sample over the whole run, ns.
    pub max_rtt_ns: u64,
    /// For a short-flow arrival process: its transfers (the fields above then sum or merge
    /// those of all its transfers over the window).
    pub transfers: Option<TransferStats>,
    /// The (first subflow's) controller's state at the end of the run.
    pub final_state: kleinrock_cc::ControllerState,
}

/// The transfers of a short-flow arrival process, over the measurement window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TransferStats {
    /// Transfers that began in the window.
    pub started: u64,
    /// Transfers whose last byte arrived in the window.
    pub completed: u64,
    /// Completion time of each of those, from its arrival to the arrival of its last byte, ns.
    pub completion_times: Histogram,
}

/// Counters of one link.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LinkCounters {
    /// Bytes that finished transmission.
    pub bytes_transmitted: u64,
    /// Packets that finished transmission.
    pub packets_transmitted: u64,
    /// Packets dropped because the buffer (or the class's limit) was full.
    pub packets_dropped: u64,
    /// Packets lost to the random loss model.
    pub packets_lost_random: u64,
    /// Packets dropped by the token-bucket policer.
    pub packets_policed: u64,
    /// Integral of the queue's fill fraction over time, fraction x ns.
    pub fill_integral: f64,
    /// Capacity of the link integrated over time, bytes (the denominator of utilisation).
    pub capacity_bytes: f64,
    /// The same integral over the times a packet was being transmitted (the numerator of
    /// utilisation: at most `capacity_bytes` by construction, whatever the window's edges cut).
    pub busy_capacity_bytes: f64,
}

impl LinkCounters {
    /// Counter-wise `self - earlier`.
    pub fn since(&self, earlier: &LinkCounters) -> LinkCounters {
        LinkCounters {
            bytes_transmitted: self.bytes_transmitted - earlier.bytes_transmitted,
            packets_transmitted: self.packets_transmitted - earlier.packets_transmitted,
            packets_dropped: self.packets_dropped - earlier.packets_dropped,
            packets_lost_random: self.packets_lost_random - earlier.packets_lost_random,
            packets_policed: self.packets_policed - earlier.packets_policed,
            fill_integral: self.fill_integral - earlier.fill_integral,
            capacity_bytes: self.capacity_bytes - earlier.capacity_bytes,
            busy_capacity_bytes: self.busy_capacity_bytes - earlier.busy_capacity_bytes,
        }
    }
}

/// Everything measured for one link over the measurement window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkStats {
    /// Link name.
    pub name: String,
    /// Counters over the window.
    pub counters: LinkCounters,
    /// Length of the window, ns.
    pub window_ns: u64,
    /// Most packets waiting in the queue in the window.
    pub max_queue_packets: u64,
    /// Most bytes waiting in the queue in the window.
    pub max_queue_bytes: u64,
    /// Fewest packets waiting at any time in the window after the first packet arrived.
    pub min_queue_packets: u64,
}

/// Everything measured for one multipath tunnel. Index 0 of each pair is the direction from
/// the tunnel's entry to its far end, 1 the direction back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TunnelStats {
    /// Tunnel name.
    pub name: String,
    /// What became of the packets that entered, over the whole run.
    pub counters: [crate::tunnel::TunnelCounters; 2],
    /// Latency from entry to forwarding at the far end (after reordering), of the packets
    /// that entered in the window, ns.
    pub latency: [Histogram; 2],
    /// Per path, its two subflows over the window (`name` is the path's; `latency` is from the
    /// tunnel's entry to the path's far end, before reordering).
    pub paths: Vec<[FlowStats; 2]>,
}

/// The result of a run.
#[derive(Clone, Debug, Default)]
pub struct SimResult {
    /// Simulated time at the end, ns.
    pub end_ns: u64,
    /// Start of the measurement window, ns.
    pub warmup_ns: u64,
    /// Events processed.
    pub events: u64,
    /// Per flow, in configuration order.
    pub flows: Vec<FlowStats>,
    /// Per link, in configuration order.
    pub links: Vec<LinkStats>,
    /// Per tunnel, in configuration order.
    pub tunnels: Vec<TunnelStats>,
    /// Sampled traces, if asked for.
    pub trace: Option<crate::trace::Trace>,
}
