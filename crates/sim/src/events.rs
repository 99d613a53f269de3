//! The event list: `(time, insertion sequence, target)` records popped in `(time, sequence)`
//! order, from two binary heaps (see [`EventQueue`]). Targets are plain indices, never closures,
//! so the same scenario and seed replay the same order on every machine.

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

/// A min-heap of `(time, insertion sequence, target)`.
type Heap = BinaryHeap<Reverse<(u64, u64, Target)>>;

/// Events ordered by time, then by insertion, in two heaps merged at each pop: the flows'
/// timers (sender and receiver) in one, everything else (links, starts, traces) in the other.
/// The order is exactly one heap's; the split only keeps the few events of links and pipes out
/// of the deep heap that superseded timer events make (a pacing release armed before a
/// pending loss-detection deadline leaves the later event queued until its time; in a 1-flow
/// run the timers' heap holds 30-140 events, the other 3-4).
#[derive(Debug, Default)]
pub struct EventQueue {
    timers: Heap,
    others: Heap,
    seq: u64,
}

impl EventQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `target` at `time_ns`.
    #[inline]
    pub fn push(&mut self, time_ns: u64, target: Target) {
        self.seq += 1;
        let entry = Reverse((time_ns, self.seq, target));
        match target {
            Target::Sender(_) | Target::Receiver(_) => self.timers.push(entry),
            _ => self.others.push(entry),
        }
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Target)> {
        let first = match (self.timers.peek(), self.others.peek()) {
            (Some(Reverse(t)), Some(Reverse(o))) => {
                if (t.0, t.1) < (o.0, o.1) {
                    &mut self.timers
                } else {
                    &mut self.others
                }
            }
            (Some(_), None) => &mut self.timers,
            (None, _) => &mut self.others,
        };
        first.pop().map(|Reverse((t, _, target))| (t, target))
    }

    /// Time of the earliest event.
    pub fn peek_time(&self) -> Option<u64> {
        let time = |h: &Heap| h.peek().map(|Reverse((t, _, _))| *t);
        match (time(&self.timers), time(&self.others)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
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

    /// The two heaps pop exactly what one binary heap of `(time, seq)` pops, for timer and
    /// other events pushed at, near and far after the current time and, now and then, before
    /// it (the real-time emulator's late events).
    #[test]
    fn pops_in_time_then_insertion_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (mut q, mut reference) = (EventQueue::new(), BinaryHeap::new());
        let (mut now, mut seq) = (0u64, 0u64);
        for step in 0..200_000u32 {
            if rng.gen_bool(0.55) {
                let t = if rng.gen_bool(0.001) {
                    now.saturating_sub(rng.gen_range(0..1000))
                } else {
                    now + [0, 1, rng.gen_range(0..100), rng.gen_range(0..1 << 40)]
                        [step as usize % 4]
                };
                let target = match rng.gen_range(0..3) {
                    0 => Target::Sender(step),
                    1 => Target::Receiver(step),
                    _ => Target::LinkArrival(step),
                };
                seq += 1;
                q.push(t, target);
                reference.push(Reverse((t, seq, target)));
            } else {
                let expected = reference.pop().map(|Reverse((t, _, target))| (t, target));
                assert_eq!(q.peek_time(), expected.map(|(t, _)| t));
                assert_eq!(q.pop(), expected);
                if let Some((t, _)) = expected {
                    now = t;
                }
            }
        }
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
