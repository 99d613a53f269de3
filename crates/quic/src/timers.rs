//! Fine timers for noq: a [`noq::Runtime`] that is tokio's in everything but its timers, which
//! fire within tens of microseconds instead of on tokio's 1 ms wheel.
//!
//! noq's pacer (docs/quic.md, "Why noq") holds a packet back for the time its rate needs, and
//! the connection sleeps on a runtime timer until then. On tokio's timer a sleep ends on the
//! next whole millisecond or later, so a connection paced at one packet per 0.75 ms sends two
//! packets together every 1.5 ms or so, and two connections woken by the same tick send in the
//! same order every time. A fair-queuing probe (`fq_switch`) through a shared FIFO then sees
//! one leg lose its bursts and the other not, and takes the FIFO for a fair queue; the
//! simulator, like the paper's sender, paces packet by packet.
//!
//! Here every timer of the process is kept by one thread in a heap of deadlines; the thread
//! sleeps on a condition variable until the earliest one with its timer slack at 1 ns (as the
//! emulator's relay does) and wakes the tasks whose deadline passed. A timer moved later keeps
//! its earlier entry, which re-queues it when it comes up; a timer moved earlier gets a new
//! entry, and its later one is dropped when it comes up (a timer knows which of its entries is
//! current), so the heap holds one current entry per live timer and the stale ones until their
//! time. Time is the system's monotonic clock (`Instant::now`), not tokio's: a paused tokio
//! clock does not pause noq here.

use crate::lock;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// tokio's runtime with fine timers.
#[derive(Debug)]
pub struct FineRuntime;

impl noq::Runtime for FineRuntime {
    fn new_timer(&self, deadline: Instant) -> Pin<Box<dyn noq::AsyncTimer>> {
        Box::pin(FineTimer {
            slot: Arc::new(Mutex::new(Slot {
                deadline,
                queued: None,
                waker: None,
            })),
        })
    }

    fn spawn(&self, future: Pin<Box<dyn Future<Output = ()> + Send>>) {
        noq::TokioRuntime.spawn(future);
    }

    fn wrap_udp_socket(
        &self,
        socket: std::net::UdpSocket,
    ) -> std::io::Result<Box<dyn noq::AsyncUdpSocket>> {
        noq::TokioRuntime.wrap_udp_socket(socket)
    }
}

/// A timer's state, shared with the timer thread.
struct Slot {
    deadline: Instant,
    /// The earliest deadline this slot has an entry for in the heap.
    queued: Option<Instant>,
    waker: Option<Waker>,
}

/// One timer, as noq holds it.
struct FineTimer {
    slot: Arc<Mutex<Slot>>,
}

impl fmt::Debug for FineTimer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FineTimer")
            .field("deadline", &lock(&self.slot).deadline)
            .finish()
    }
}

impl noq::AsyncTimer for FineTimer {
    fn reset(self: Pin<&mut Self>, deadline: Instant) {
        lock(&self.slot).deadline = deadline;
    }

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut slot = lock(&self.slot);
        if Instant::now() >= slot.deadline {
            return Poll::Ready(());
        }
        slot.waker = Some(cx.waker().clone());
        let deadline = slot.deadline;
        if slot.queued.is_none_or(|q| q > deadline) {
            slot.queued = Some(deadline);
            drop(slot);
            wheel().add(deadline, Arc::downgrade(&self.slot));
        }
        Poll::Pending
    }
}

/// An entry of the heap: a deadline and the timer it is for.
struct Entry {
    at: Instant,
    slot: Weak<Mutex<Slot>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

/// The timer thread's heap and its wake-up.
struct Wheel {
    heap: Mutex<BinaryHeap<Reverse<Entry>>>,
    changed: Condvar,
}

/// The process's one [`Wheel`], its thread started on first use.
fn wheel() -> &'static Wheel {
    static WHEEL: OnceLock<&'static Wheel> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let wheel: &'static Wheel = Box::leak(Box::new(Wheel {
            heap: Mutex::new(BinaryHeap::new()),
            changed: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("kleinrock-timers".into())
            .spawn(move || wheel.run())
            .expect("the timer thread starts");
        wheel
    })
}

impl Wheel {
    fn add(&self, at: Instant, slot: Weak<Mutex<Slot>>) {
        let mut heap = lock(&self.heap);
        let earliest = heap.peek().is_none_or(|Reverse(e)| at < e.at);
        heap.push(Reverse(Entry { at, slot }));
        if earliest {
            self.changed.notify_one();
        }
    }

    fn run(&self) {
        crate::emulator::set_fine_timer_slack();
        let mut heap = lock(&self.heap);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while heap.peek().is_some_and(|Reverse(e)| e.at <= now) {
                let Reverse(entry) = heap.pop().expect("peeked");
                due.push(entry);
            }
            if !due.is_empty() {
                drop(heap);
                for entry in due {
                    self.fire(&entry, now);
                }
                heap = lock(&self.heap);
                continue;
            }
            heap = match heap.peek().map(|Reverse(e)| e.at - now) {
                Some(wait) => {
                    self.changed
                        .wait_timeout(heap, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .changed
                    .wait(heap)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }

    /// Wakes the task of a timer whose current entry came up at `now`, or queues the timer
    /// again at its later deadline; a stale entry (the timer was moved earlier since) or one of
    /// a dropped timer does nothing.
    fn fire(&self, entry: &Entry, now: Instant) {
        let Some(slot) = entry.slot.upgrade() else {
            return;
        };
        let mut s = lock(&slot);
        if s.queued != Some(entry.at) {
            return;
        }
        if s.deadline <= now {
            s.queued = None;
            if let Some(waker) = s.waker.take() {
                drop(s);
                waker.wake();
            }
        } else {
            let at = s.deadline;
            s.queued = Some(at);
            drop(s);
            self.add(at, Arc::downgrade(&slot));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use noq::Runtime;
    use std::time::Duration;

    /// Waits for a timer of [`FineRuntime`] made at `deadline`, reset to `reset` if given.
    async fn wait(deadline: Instant, reset: Option<Instant>) -> Instant {
        let mut timer = FineRuntime.new_timer(deadline);
        if let Some(r) = reset {
            timer.as_mut().reset(r);
        }
        std::future::poll_fn(|cx| timer.as_mut().poll(cx)).await;
        Instant::now()
    }

    #[tokio::test]
    async fn timers_fire_at_their_deadline_not_before() {
        let start = Instant::now();
        let deadlines = [3, 1, 2].map(|ms| start + Duration::from_millis(ms));
        let fired = futures_join(deadlines.map(|d| wait(d, None))).await;
        for (d, f) in deadlines.iter().zip(fired) {
            assert!(f >= *d, "fired {:?} before its deadline", *d - f);
        }
    }

    #[tokio::test]
    async fn a_timer_moved_later_fires_at_the_later_deadline() {
        let start = Instant::now();
        let later = start + Duration::from_millis(5);
        let fired = wait(start + Duration::from_millis(1), Some(later)).await;
        assert!(fired >= later);
        // Moved earlier, it fires at the earlier one.
        let start = Instant::now();
        let earlier = start + Duration::from_millis(1);
        let fired = wait(start + Duration::from_secs(60), Some(earlier)).await;
        assert!(fired >= earlier && fired < start + Duration::from_secs(60));
    }

    /// Runs the futures concurrently; their results in order.
    async fn futures_join<F: Future<Output = Instant> + Send + 'static>(
        futures: [F; 3],
    ) -> Vec<Instant> {
        let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.expect("the timer task ends"));
        }
        out
    }
}
