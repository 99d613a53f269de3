//! The tunnel's entry: its queue and the shared per-packet scheduler
//! ([`kleinrock_cc::multipath::scheduler`], the simulator's own), which gives the head of the
//! queue to the path(s) it picks for as long as it picks one. Time is passed in.

use super::wire::Header;
use kleinrock_cc::multipath::scheduler::{Scheduler, SchedulerKind, SubflowView};
use std::collections::VecDeque;
use std::ops::RangeInclusive;

/// What became of the packets offered to the entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryCounts {
    /// Packets offered.
    pub entered: u64,
    /// Of those, offered inside the measurement window.
    pub entered_window: u64,
    /// Dropped because the queue was full.
    pub queue_drops: u64,
    /// Packets taken off the queue for the paths the scheduler picked.
    pub scheduled: u64,
    /// Copies a path refused (its connection gone).
    pub send_failures: u64,
}

/// A packet in the entry's queue: its header, the carried packet's size, and its UDP payload
/// (empty for a constant-rate source's, which carry nothing).
pub struct Packet {
    /// The tunnel's header.
    pub header: Header,
    /// Bytes of the carried packet.
    pub carried: usize,
    /// The payload.
    pub payload: Vec<u8>,
}

/// The entry of one direction.
pub struct Entry {
    scheduler: Scheduler,
    queue: VecDeque<Packet>,
    capacity: usize,
    next_overall: u64,
    picks: Vec<usize>,
    window: RangeInclusive<u64>,
    /// Whether the run is over: nothing enters any more.
    closed: bool,
    /// Counters.
    pub counts: EntryCounts,
}

impl Entry {
    /// An entry whose queue holds `capacity` packets, scheduling with `kind`, measuring over
    /// `window` (ns since the tunnel's start).
    pub fn new(kind: SchedulerKind, capacity: usize, window: RangeInclusive<u64>) -> Self {
        Entry {
            scheduler: Scheduler::new(kind),
            queue: VecDeque::new(),
            capacity,
            next_overall: 0,
            picks: Vec::new(),
            window,
            closed: false,
            counts: EntryCounts::default(),
        }
    }

    /// A packet of `carried` bytes with `payload` at its end enters at `now` (ns since the
    /// tunnel's start); `false` if the queue was full and it was dropped, or the entry closed
    /// (then it is not counted). As in the simulator, only a queued packet takes an overall
    /// number.
    pub fn enter(&mut self, now: u64, carried: usize, payload: Vec<u8>) -> bool {
        if self.closed {
            return false;
        }
        self.counts.entered += 1;
        self.counts.entered_window += u64::from(self.window.contains(&now));
        if self.queue.len() >= self.capacity {
            self.counts.queue_drops += 1;
            return false;
        }
        let header = Header {
            overall: self.next_overall,
            entered_ns: now,
        };
        self.queue.push_back(Packet {
            header,
            carried,
            payload,
        });
        self.next_overall += 1;
        true
    }

    /// Packets waiting.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The run is over: from now on nothing enters, and the counts stay as they are.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// Gives queued packets to the paths the scheduler picks while it picks one; `observe`
    /// gives the paths' views before each packet, `send` hands a packet to a path and says
    /// whether the path took it.
    pub fn drain(
        &mut self,
        mut observe: impl FnMut() -> Vec<SubflowView>,
        mut send: impl FnMut(usize, &Packet) -> bool,
    ) {
        while !self.queue.is_empty() {
            let views = observe();
            self.scheduler.pick(&views, &mut self.picks);
            if self.picks.is_empty() {
                return;
            }
            let Some(head) = self.queue.pop_front() else {
                return;
            };
            self.counts.scheduled += 1;
            for &path in &self.picks {
                if !send(path, &head) {
                    self.counts.send_failures += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(pipe: u64, cwnd: u64, priority: u8) -> SubflowView {
        SubflowView {
            established: true,
            pipe,
            cwnd,
            queued: 0,
            srtt_ns: Some(1_000_000),
            priority,
        }
    }

    #[test]
    fn cheapest_pipe_first_fills_the_preferred_path_then_spills_and_the_queue_drops_beyond_it() {
        let mut e = Entry::new(SchedulerKind::Cpf, 2, 0..=3);
        let pipes = std::cell::Cell::new([0u64, 0]);
        let mut sent = Vec::new();
        for t in 0..6 {
            e.enter(t, 1000, Vec::new());
            e.drain(
                || {
                    let [a, b] = pipes.get();
                    vec![view(a, 2, 4), view(b, 1, 3)]
                },
                |p, h| {
                    let mut now = pipes.get();
                    now[p] += 1;
                    pipes.set(now);
                    sent.push((p, h.header.overall));
                    true
                },
            );
        }
        assert_eq!(sent, [(0, 0), (0, 1), (1, 2)], "path 1 first, then path 2");
        assert_eq!(e.queued(), 2);
        assert_eq!(e.counts.queue_drops, 1);
        assert_eq!(e.counts.entered, 6);
        assert_eq!(e.counts.scheduled, 3);
        assert_eq!(e.counts.entered_window, 4);
        e.close();
        assert!(!e.enter(7, 1000, Vec::new()));
        assert_eq!(e.counts.entered, 6, "a closed entry counts nothing");
    }
}
