//! The event list: `(time, insertion sequence, target)` records in a binary heap. Targets are
//! plain indices, never closures, so the same scenario and seed replay the same order on every
//! machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What an event wakes up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Target {
    /// A link finished serialising its head packet.
    LinkTransmit(u32),
    /// The head packet of a link's propagation pipe reaches the far end.
    LinkArrival(u32),
    /// A link's rate changes to the next step of its schedule.
    LinkRate(u32),
    /// A route change (an index into the simulation's list) takes effect.
    LinkDelay(u32),
    /// A flow's sender timer (pacing, loss detection, PTO, application data).
    Sender(u32),
    /// A flow's receiver timer (delayed ACK).
    Receiver(u32),
    /// A flow starts.
    FlowStart(u32),
    /// A flow stops sending new data.
    FlowStop(u32),
    /// A controller parameter change (an index into the simulation's list) takes effect.
    ParamChange(u32),
    /// A short-flow arrival process starts its next transfer.
    Arrival(u32),
    /// Take a trace sample.
    Trace,
    /// The measurement window opens (end of warm-up).
    Warmup,
}

/// Min-heap of events ordered by time, then by insertion.
#[derive(Debug, Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Target)>>,
    seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `target` at `time_ns`.
    pub fn push(&mut self, time_ns: u64, target: Target) {
        self.seq += 1;
        self.heap.push(Reverse((time_ns, self.seq, target)));
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<(u64, Target)> {
        self.heap.pop().map(|Reverse((t, _, target))| (t, target))
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }
}

/// A timer with at most one meaningful pending event: re-arming later only records the
/// deadline; the event that fires early re-arms itself (the lazy timer of DESIGN.md).
#[derive(Clone, Copy, Debug, Default)]
pub struct LazyTimer {
    armed_at: Option<u64>,
}

impl LazyTimer {
    /// Makes sure an event for `target` fires no later than `deadline_ns`.
    pub fn arm(&mut self, events: &mut EventQueue, deadline_ns: u64, target: Target) {
        if self.armed_at.is_none_or(|a| deadline_ns < a) {
            events.push(deadline_ns, target);
            self.armed_at = Some(deadline_ns);
        }
    }

    /// Called when an event of this timer fires at `now_ns`; returns false for a stale event
    /// (one superseded by an earlier arm) that should be ignored.
    pub fn fire(&mut self, now_ns: u64) -> bool {
        if self.armed_at == Some(now_ns) {
            self.armed_at = None;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, Target::Sender(2));
        q.push(5, Target::Sender(1));
        q.push(3, Target::Trace);
        assert_eq!(q.pop(), Some((3, Target::Trace)));
        assert_eq!(q.pop(), Some((5, Target::Sender(2))));
        assert_eq!(q.pop(), Some((5, Target::Sender(1))));
    }

    #[test]
    fn lazy_timer_ignores_superseded_events() {
        let mut q = EventQueue::new();
        let mut t = LazyTimer::default();
        t.arm(&mut q, 10, Target::Sender(0));
        t.arm(&mut q, 20, Target::Sender(0));
        t.arm(&mut q, 5, Target::Sender(0));
        assert_eq!(q.pop(), Some((5, Target::Sender(0))));
        assert!(t.fire(5));
        assert_eq!(q.pop(), Some((10, Target::Sender(0))));
        assert!(!t.fire(10));
    }
}
