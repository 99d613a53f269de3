//! Queue disciplines of a link: drop-tail FIFO limited in packets or bytes, and fair queuing
//! (per-flow FIFOs served by deficit round robin in bytes, with a per-flow packet limit, new
//! flows served before old ones, an initial quantum for a new flow and a credit refill after
//! 40 ms idle, as Linux `net/sched/sch_fq.c`).

use std::collections::VecDeque;

/// Linux `sch_fq` flow_refill_delay: a flow idle this long gets at least a quantum of credit.
const FLOW_REFILL_DELAY_NS: u64 = 40_000_000;

/// A buffer limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferLimit {
    /// At most this many packets wait (not counting the one being transmitted).
    Packets(u64),
    /// At most this many bytes wait (not counting the packet being transmitted).
    Bytes(u64),
}

/// Which discipline a link uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QdiscConfig {
    /// One drop-tail FIFO.
    Fifo,
    /// Fair queuing.
    Fq {
        /// Packets one flow may have waiting (Linux `flow_limit`, default 100).
        flow_limit: u64,
        /// Bytes of credit a flow gets per round (Linux `quantum`, default 2 MTU).
        quantum: u64,
        /// Credit of a flow seen for the first time (Linux `initial_quantum`, default 10 MTU).
        initial_quantum: u64,
    },
}

/// A packet waiting in a queue: its pool index, size and class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queued {
    /// Index in the packet pool.
    pub packet: u32,
    /// Bytes on the wire.
    pub size: u32,
    /// Fair-queuing class (flow index, doubled, plus one for the reverse direction).
    pub class: u32,
}

#[derive(Debug, Default)]
struct ClassQueue {
    packets: VecDeque<Queued>,
    credit: i64,
    listed: bool,
    seen: bool,
    detached_ns: u64,
}

/// Fair-queuing state.
#[derive(Debug, Default)]
struct FairQueue {
    classes: Vec<ClassQueue>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    flow_limit: u64,
    quantum: i64,
    initial_quantum: i64,
}

impl FairQueue {
    fn enqueue(&mut self, now: u64, q: Queued) -> bool {
        let c = q.class as usize;
        if c >= self.classes.len() {
            self.classes.resize_with(c + 1, ClassQueue::default);
        }
        let class = &mut self.classes[c];
        if class.packets.len() as u64 >= self.flow_limit {
            return false;
        }
        class.packets.push_back(q);
        if !class.listed {
            class.listed = true;
            if !class.seen {
                class.seen = true;
                class.credit = self.initial_quantum;
            } else if now.saturating_sub(class.detached_ns) > FLOW_REFILL_DELAY_NS {
                class.credit = class.credit.max(self.quantum);
            }
            self.new_flows.push_back(q.class);
        }
        true
    }

    fn dequeue(&mut self, now: u64) -> Option<Queued> {
        loop {
            let (from_new, c) = match self.new_flows.front() {
                Some(&c) => (true, c),
                None => (false, *self.old_flows.front()?),
            };
            let list = if from_new {
                &mut self.new_flows
            } else {
                &mut self.old_flows
            };
            let class = &mut self.classes[c as usize];
            if class.credit <= 0 {
                class.credit += self.quantum;
                list.pop_front();
                self.old_flows.push_back(c);
                continue;
            }
            let Some(q) = class.packets.pop_front() else {
                list.pop_front();
                if from_new && !self.old_flows.is_empty() {
                    // sch_fq: an emptied new flow passes through old_flows once, so new flows
                    // cannot starve old ones.
                    self.old_flows.push_back(c);
                } else {
                    class.listed = false;
                    class.detached_ns = now;
                }
                continue;
            };
            class.credit -= i64::from(q.size);
            return Some(q);
        }
    }
}

/// A link's queue: discipline, limit and occupancy.
#[derive(Debug)]
pub struct Queue {
    limit: BufferLimit,
    fifo: VecDeque<Queued>,
    fq: Option<FairQueue>,
    packets: u64,
    bytes: u64,
}

impl Queue {
    /// An empty queue.
    pub fn new(config: QdiscConfig, limit: BufferLimit) -> Self {
        let fq = match config {
            QdiscConfig::Fifo => None,
            QdiscConfig::Fq {
                flow_limit,
                quantum,
                initial_quantum,
            } => Some(FairQueue {
                flow_limit,
                quantum: quantum as i64,
                initial_quantum: initial_quantum as i64,
                ..FairQueue::default()
            }),
        };
        Queue {
            limit,
            fifo: VecDeque::new(),
            fq,
            packets: 0,
            bytes: 0,
        }
    }

    /// Adds a packet at `now`; false (tail drop) when the buffer or the class's limit is full.
    pub fn enqueue(&mut self, now: u64, q: Queued) -> bool {
        let fits = match self.limit {
            BufferLimit::Packets(n) => self.packets < n,
            BufferLimit::Bytes(n) => self.bytes + u64::from(q.size) <= n,
        };
        if !fits {
            return false;
        }
        let accepted = match &mut self.fq {
            Some(fq) => fq.enqueue(now, q),
            None => {
                self.fifo.push_back(q);
                true
            }
        };
        if accepted {
            self.packets += 1;
            self.bytes += u64::from(q.size);
        }
        accepted
    }

    /// Removes the next packet to transmit at `now`.
    pub fn dequeue(&mut self, now: u64) -> Option<Queued> {
        let q = match &mut self.fq {
            Some(fq) => fq.dequeue(now),
            None => self.fifo.pop_front(),
        }?;
        self.packets -= 1;
        self.bytes -= u64::from(q.size);
        Some(q)
    }

    /// Packets waiting.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes waiting.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The configured limit.
    pub fn limit(&self) -> BufferLimit {
        self.limit
    }

    /// Occupancy as a fraction of the limit, in the limit's unit.
    pub fn fill(&self) -> f64 {
        match self.limit {
            BufferLimit::Packets(n) => self.packets as f64 / n as f64,
            BufferLimit::Bytes(n) => self.bytes as f64 / n as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(i: u32, class: u32) -> Queued {
        Queued {
            packet: i,
            size: 1500,
            class,
        }
    }

    fn drain(q: &mut Queue, now: u64) -> Vec<u32> {
        std::iter::from_fn(|| q.dequeue(now).map(|p| p.class)).collect()
    }

    #[test]
    fn fifo_drops_at_the_limit() {
        let mut q = Queue::new(QdiscConfig::Fifo, BufferLimit::Packets(2));
        assert!(q.enqueue(0, pkt(0, 0)) && q.enqueue(0, pkt(1, 0)));
        assert!(!q.enqueue(0, pkt(2, 0)));
        assert_eq!(q.dequeue(0).unwrap().packet, 0);
        let mut b = Queue::new(QdiscConfig::Fifo, BufferLimit::Bytes(3000));
        assert!(b.enqueue(0, pkt(0, 0)) && b.enqueue(0, pkt(1, 0)) && !b.enqueue(0, pkt(2, 0)));
    }

    #[test]
    fn fq_serves_classes_round_robin_and_limits_each() {
        let fq = QdiscConfig::Fq {
            flow_limit: 3,
            quantum: 1500,
            initial_quantum: 1500,
        };
        let mut q = Queue::new(fq, BufferLimit::Packets(100));
        for i in 0..5 {
            q.enqueue(0, pkt(i, 0));
        }
        assert_eq!(q.packets(), 3, "per-flow limit");
        for i in 10..13 {
            assert!(q.enqueue(0, pkt(i, 1)));
        }
        assert_eq!(drain(&mut q, 0), vec![0, 1, 0, 1, 0, 1]);
    }

    #[test]
    fn fq_initial_quantum_and_refill_delay() {
        // sch_fq: a new flow starts with initial_quantum of credit; a flow back from idle gets
        // at least a quantum only after flow_refill_delay (40 ms).
        let fq = QdiscConfig::Fq {
            flow_limit: 100,
            quantum: 1500,
            initial_quantum: 2000,
        };
        let mut q = Queue::new(fq, BufferLimit::Packets(100));
        let credit = |q: &Queue| q.fq.as_ref().map(|f| f.classes[0].credit).unwrap();
        q.enqueue(0, pkt(0, 0));
        assert_eq!(credit(&q), 2000, "initial quantum");
        drain(&mut q, 0);
        assert_eq!(credit(&q), 500);
        q.enqueue(1_000_000, pkt(1, 0));
        assert_eq!(credit(&q), 500, "idle 1 ms: no refill");
        drain(&mut q, 1_000_000);
        // Spent to -1000, topped up by a quantum while still listed, then detached.
        assert_eq!(credit(&q), 500);
        q.enqueue(50_000_000, pkt(2, 0));
        assert_eq!(credit(&q), 1500, "idle 49 ms: refilled to a quantum");
    }
}
