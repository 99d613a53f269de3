//! The packets a controller has sent and not yet seen resolved, for controllers that measure
//! per packet sent in a period (PCC's monitor intervals, the fair-queuing probe's rounds).
//!
//! The controller contract does not name the packets an ACK or a loss covers, only how many
//! and the send time of the newest. The ledger keeps every packet's send time and size and
//! credits an ACK of n packets to the n newest unresolved packets sent up to that time, and a
//! loss of n packets to the n oldest: exact on a path that keeps the order of packets, where a
//! packet is acknowledged or declared lost before any packet sent after it is declared lost.
//! A packet the transport never reports (QUIC drops packets of discarded packet-number spaces
//! silently) can be forgotten once a much newer packet is acknowledged, so it cannot hold a
//! period open.
//!
//! Owns [`Ledger`] and [`Entry`].

use crate::controller::Instant;
use std::collections::VecDeque;
use std::time::Duration;

/// A sent packet, with what its sender tagged it with (e.g. its period).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<T> {
    /// When it was sent.
    pub sent: Instant,
    /// Its size, bytes.
    pub bytes: u64,
    /// The sender's tag.
    pub tag: T,
    resolved: bool,
}

/// Packets in the order they were sent, from the oldest unresolved one (resolved ones are
/// dropped from the front; behind an unresolved one they stay, marked).
#[derive(Clone, Debug, PartialEq)]
pub struct Ledger<T> {
    packets: VecDeque<Entry<T>>,
}

impl<T> Default for Ledger<T> {
    fn default() -> Self {
        Ledger {
            packets: VecDeque::new(),
        }
    }
}

impl<T: Copy> Ledger<T> {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// A packet of `bytes` was sent at `sent`.
    pub fn on_sent(&mut self, sent: Instant, bytes: u64, tag: T) {
        debug_assert!(
            self.packets.back().is_none_or(|p| p.sent <= sent),
            "packets are entered in the order they are sent"
        );
        self.packets.push_back(Entry {
            sent,
            bytes,
            tag,
            resolved: false,
        });
    }

    /// The newest packet sent up to `newest`, resolved or not (the one whose RTT an ACK with
    /// that largest packet measured).
    pub fn newest_up_to(&self, newest: Instant) -> Option<Entry<T>> {
        let end = self.packets.partition_point(|p| p.sent <= newest);
        end.checked_sub(1).map(|last| self.packets[last])
    }

    /// An ACK of `count` packets, the newest sent at `newest`: resolves the `count` newest
    /// unresolved packets sent up to then, handing each to `credit`.
    pub fn ack(&mut self, newest: Instant, count: u64, mut credit: impl FnMut(Entry<T>)) {
        let end = self.packets.partition_point(|p| p.sent <= newest);
        let mut left = count;
        for index in (0..end).rev() {
            if left == 0 {
                break;
            }
            if let Some(entry) = self.resolve(index) {
                credit(entry);
                left -= 1;
            }
        }
        self.pop_resolved();
    }

    /// A loss of `count` packets, the newest sent at `newest`: resolves the `count` oldest
    /// unresolved packets sent up to then, handing each to `credit`.
    pub fn lose(&mut self, newest: Instant, count: u64, mut credit: impl FnMut(Entry<T>)) {
        let mut left = count;
        let mut index = 0;
        while left > 0 && index < self.packets.len() && self.packets[index].sent <= newest {
            if let Some(entry) = self.resolve(index) {
                credit(entry);
                left -= 1;
            }
            index += 1;
        }
        self.pop_resolved();
    }

    /// Resolves the packets sent more than `age` before `newest`, handing each to `credit`.
    pub fn forget_sent_before(
        &mut self,
        newest: Instant,
        age: Duration,
        mut credit: impl FnMut(Entry<T>),
    ) {
        let mut index = 0;
        while index < self.packets.len() && self.packets[index].sent + age < newest {
            if let Some(entry) = self.resolve(index) {
                credit(entry);
            }
            index += 1;
        }
        self.pop_resolved();
    }

    /// Marks packet `index` resolved; the entry if it was not already.
    fn resolve(&mut self, index: usize) -> Option<Entry<T>> {
        let entry = &mut self.packets[index];
        if entry.resolved {
            return None;
        }
        entry.resolved = true;
        Some(*entry)
    }

    fn pop_resolved(&mut self) {
        while self.packets.front().is_some_and(|p| p.resolved) {
            self.packets.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    /// Packets sent at 0..n ms, 100 bytes each, tagged with their send time in ms.
    fn ledger(n: u64) -> Ledger<u64> {
        let mut l = Ledger::new();
        for ms in 0..n {
            l.on_sent(at(ms), 100, ms);
        }
        l
    }

    #[test]
    fn an_ack_takes_the_newest_and_a_loss_the_oldest_unresolved() {
        let mut l = ledger(6);
        let mut acked = Vec::new();
        // ACK of 2 packets, the newest sent at 4 ms: packets 4 and 3.
        l.ack(at(4), 2, |e| acked.push(e.tag));
        assert_eq!(acked, [4, 3]);
        // Loss of 2, the newest sent at 2 ms: packets 0 and 1 (2 not yet).
        let mut lost = Vec::new();
        l.lose(at(2), 2, |e| lost.push(e.tag));
        assert_eq!(lost, [0, 1]);
        // Nothing is credited twice: an ACK of 3 up to 5 ms finds only 5 and 2.
        acked.clear();
        l.ack(at(5), 3, |e| acked.push(e.tag));
        assert_eq!(acked, [5, 2]);
        assert_eq!(l.newest_up_to(at(5)), None, "all resolved and dropped");
    }

    #[test]
    fn forgetting_resolves_only_old_packets() {
        let mut l = ledger(10);
        let mut forgotten = Vec::new();
        l.forget_sent_before(at(9), Duration::from_millis(5), |e| forgotten.push(e.tag));
        assert_eq!(forgotten, [0, 1, 2, 3]);
        assert_eq!(l.newest_up_to(at(9)).map(|e| e.tag), Some(9));
    }
}
