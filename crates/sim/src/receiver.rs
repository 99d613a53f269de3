//! The receiving side of one subflow of the reliable transport: packet-number ranges for ACK
//! frames (pruned below the sender's reported floor), handing stream bytes to the connection's
//! reassembly, immediate or delayed ACKs (every `ack_every`-th packet or `max_ack_delay`, at once
//! on reordering, RFC 9000 §13.2.1, and for the first `quick_acks` packets), and receive
//! timestamps.

use crate::config::TransportConfig;
use crate::events::{EventQueue, LazyTimer, Target};
use crate::packet::{AckFrame, Body, Packet, Pool};
use crate::rangeset::RangeSet;
use crate::stream::Reassembly;
use kleinrock_cc::controller::units::duration_nanos;

/// Most ranges an ACK frame reports (quinn and other stacks cap theirs similarly).
const MAX_ACK_RANGES: usize = 64;

/// The receiver of one subflow.
#[derive(Debug)]
pub struct Receiver {
    flow: u32,
    cfg: TransportConfig,
    received: RangeSet,
    largest: Option<u64>,
    largest_received_ns: u64,
    unacked: u32,
    ack_due_ns: Option<u64>,
    min_owd_ns: Option<u64>,
    /// Data packets received.
    pub packets_received: u64,
    /// ACK packets sent.
    pub acks_sent: u64,
    /// The delayed-ACK timer.
    pub timer: LazyTimer,
}

impl Receiver {
    /// A receiver for subflow `flow`.
    pub fn new(flow: u32, cfg: TransportConfig) -> Self {
        Receiver {
            flow,
            cfg,
            received: RangeSet::new(),
            largest: None,
            largest_received_ns: 0,
            unacked: 0,
            ack_due_ns: None,
            min_owd_ns: None,
            packets_received: 0,
            acks_sent: 0,
            timer: LazyTimer::default(),
        }
    }

    /// Handles a data packet arriving at `now`: its bytes go to `stream`, ACKs to `out`;
    /// returns its one-way delay and its one-way queuing delay (the one-way delay minus the
    /// smallest so far), ns.
    pub fn on_data(
        &mut self,
        now: u64,
        packet: &Packet,
        stream: &mut Reassembly,
        frames: &mut Pool<AckFrame>,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) -> Option<(u64, u64)> {
        let Body::Data {
            offset,
            len,
            ack_floor,
        } = packet.body
        else {
            return None;
        };
        let pn = packet.number;
        self.packets_received += 1;
        let in_order = self.largest.map_or(pn == 0, |l| pn == l + 1);
        self.received.insert(pn, pn + 1);
        if self.largest.is_none_or(|l| pn > l) {
            self.largest = Some(pn);
            self.largest_received_ns = now;
        }
        self.received.remove_below(ack_floor);
        self.received.keep_highest(MAX_ACK_RANGES);
        stream.take(now, offset, len, packet.sent_ns);
        let owd = now - packet.sent_ns;
        let queuing_delay = self.queuing_delay(owd);
        self.unacked += 1;
        // RFC 9000 §13.2.1: at once when the packet arrives out of order or opens a gap; and
        // in Linux's quick-ACK mode at the start (`tcp_incr_quickack`, `tcp_in_quickack_mode`).
        let quick = self.packets_received <= u64::from(self.cfg.quick_acks);
        if !self.cfg.delayed_ack || !in_order || quick || self.unacked >= self.cfg.ack_every {
            self.send_ack(now, frames, out);
        } else if self.ack_due_ns.is_none() {
            let due = now + duration_nanos(self.cfg.max_ack_delay);
            self.ack_due_ns = Some(due);
            self.timer.arm(events, due, Target::Receiver(self.flow));
        }
        Some((owd, queuing_delay))
    }

    fn queuing_delay(&mut self, owd_ns: u64) -> u64 {
        let min = self.min_owd_ns.map_or(owd_ns, |m| m.min(owd_ns));
        self.min_owd_ns = Some(min);
        owd_ns - min
    }

    /// Handles the delayed-ACK timer at `now`.
    pub fn on_timer(
        &mut self,
        now: u64,
        frames: &mut Pool<AckFrame>,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if !self.timer.fire(now) {
            return;
        }
        match self.ack_due_ns {
            Some(due) if due <= now => self.send_ack(now, frames, out),
            Some(due) => self.timer.arm(events, due, Target::Receiver(self.flow)),
            None => {}
        }
    }

    fn send_ack(&mut self, now: u64, frames: &mut Pool<AckFrame>, out: &mut Vec<Packet>) {
        let slot = frames.take_slot();
        let frame = frames.get_mut(slot);
        frame.ranges.clear();
        frame.ranges.extend_from_slice(self.received.ranges());
        frame.largest_received_ns = self.largest_received_ns;
        frame.ack_delay_ns = now - self.largest_received_ns;
        self.unacked = 0;
        self.ack_due_ns = None;
        self.acks_sent += 1;
        out.push(Packet {
            flow: self.flow,
            size: self.cfg.ack_size,
            hop: 0,
            reverse: true,
            number: 0,
            sent_ns: now,
            body: Body::Ack { frame: slot },
        });
    }
}
