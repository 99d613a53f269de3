//! The receiving side of the DCCP-like transport: it delivers every data packet as it arrives
//! (nothing is reordered or retransmitted), measures each packet's latency from the moment its
//! application handed it over, and sends one ACK per Ack Ratio data packets (RFC 4340 §11.3,
//! Linux `ccid2_hc_rx_packet_recv`) carrying an Ack Vector of what it received since the
//! sender's last Ack-of-Ack (RFC 4340 §11.4).

use super::ackvec::AckVector;
use crate::config::DccpConfig;
use crate::hist::Histogram;
use crate::packet::{Body, Packet, Pool};
use crate::rangeset::RangeSet;
use crate::stats::IntervalTally;

/// What the receiver counted and measured.
#[derive(Debug, Default)]
pub struct DccpReceiverStats {
    /// Data packets received.
    pub packets_received: u64,
    /// Application bytes received.
    pub bytes_received: u64,
    /// Data packets sent in the measurement window and received, and their application bytes.
    pub window_packets: u64,
    /// Application bytes of those.
    pub window_bytes: u64,
    /// Latency of each packet sent in the window, from its application's hand-over to its
    /// arrival, ns.
    pub latency: Histogram,
    /// When the latest data packet arrived, ns.
    pub last_arrival_ns: u64,
    /// ACK packets sent.
    pub acks_sent: u64,
}

/// The receiver of one DCCP flow.
#[derive(Debug)]
pub struct DccpReceiver {
    flow: u32,
    cfg: DccpConfig,
    received: RangeSet,
    /// Sequence numbers below this are no longer reported (the sender saw them in an ACK).
    floor: u64,
    since_ack: u64,
    next_ack_seq: u64,
    window_ns: Option<u64>,
    /// What arrived since the last trace sample.
    pub interval: IntervalTally,
    /// Measurements.
    pub stats: DccpReceiverStats,
}

impl DccpReceiver {
    /// A receiver for flow `flow`.
    pub fn new(flow: u32, cfg: DccpConfig) -> Self {
        DccpReceiver {
            flow,
            cfg,
            received: RangeSet::new(),
            floor: 0,
            since_ack: 0,
            next_ack_seq: 0,
            window_ns: None,
            interval: IntervalTally::default(),
            stats: DccpReceiverStats::default(),
        }
    }

    /// The measurement window opens at `now`: packets sent from then on are counted.
    pub fn start_measuring(&mut self, now: u64) {
        self.window_ns = Some(now);
    }

    /// A data packet arrives at `now`; an ACK, when due, goes to `out` with its vector in
    /// `vectors`.
    pub fn on_data(
        &mut self,
        now: u64,
        packet: &Packet,
        vectors: &mut Pool<AckVector>,
        out: &mut Vec<Packet>,
    ) {
        let Body::DccpData {
            app_ns,
            ack_ratio,
            ack_of_ack,
            ..
        } = packet.body
        else {
            return;
        };
        let payload = u64::from(packet.size - self.cfg.header_size);
        let s = &mut self.stats;
        s.packets_received += 1;
        s.bytes_received += payload;
        s.last_arrival_ns = now;
        let latency = now - app_ns;
        if self.window_ns.is_some_and(|w| packet.sent_ns >= w) {
            s.window_packets += 1;
            s.window_bytes += payload;
            s.latency.record(latency);
        }
        self.interval.record(latency, payload);
        // RFC 4340 §11.4.2: state the sender has seen in an ACK need not be reported again.
        if ack_of_ack != u64::MAX && ack_of_ack + 1 > self.floor {
            self.floor = ack_of_ack + 1;
            self.received.remove_below(self.floor);
        }
        if packet.number >= self.floor {
            self.received.insert(packet.number, packet.number + 1);
        }
        self.since_ack += 1;
        if self.since_ack >= u64::from(ack_ratio.max(1)) {
            self.send_ack(now, vectors, out);
        }
    }

    fn send_ack(&mut self, now: u64, vectors: &mut Pool<AckVector>, out: &mut Vec<Packet>) {
        let slot = vectors.take_slot();
        let v = vectors.get_mut(slot);
        if !v.encode(&self.received, self.floor) {
            vectors.release(slot);
            return;
        }
        self.since_ack = 0;
        self.stats.acks_sent += 1;
        let seq = self.next_ack_seq;
        self.next_ack_seq += 1;
        out.push(Packet {
            flow: self.flow,
            size: self.cfg.ack_header_size + v.wire_bytes(),
            hop: 0,
            reverse: true,
            number: seq,
            sent_ns: now,
            body: Body::DccpAck { vector: slot },
        });
    }
}
