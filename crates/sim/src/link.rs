//! A link: random loss on arrival (or on delivery, after the queue and the pipe), a queue, a
//! transmitter at the link's rate (or at a delivery trace's opportunities,
//! [`crate::delivery_trace`]), and a
//! propagation pipe that holds packets in a ring buffer with only its head scheduled. At most
//! one transmit and one arrival event are pending per link. A packet never arrives before the
//! one ahead of it, whatever jitter or a route change does to its own propagation time.

use crate::config::{LinkConfig, LossPoint, PolicerConfig};
use crate::delivery_trace::TraceTransmitter;
use crate::events::{EventQueue, Target};
use crate::loss::LossProcess;
use crate::queue::{Queue, Queued};
use crate::stats::{LinkCounters, LinkStats};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::Rate;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// What happened to a packet offered to a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Queued or put on the wire.
    Accepted,
    /// Lost to the random loss model.
    LostRandom,
    /// Dropped by the token-bucket policer.
    Policed,
    /// Dropped because the buffer was full.
    Dropped,
}

/// One direction of a link.
#[derive(Debug)]
pub struct Link {
    id: u32,
    name: String,
    ns_per_byte: f64,
    rate: Rate,
    schedule: Vec<(u64, Rate)>,
    next_step: usize,
    delay_ns: u64,
    jitter_ns: u64,
    jitter_rng: ChaCha8Rng,
    loss: LossProcess,
    loss_at: LossPoint,
    policer: Option<Bucket>,
    queue: Queue,
    /// With a delivery trace, the transmitter it paces (the rate is then its mean).
    trace: Option<Box<TraceTransmitter>>,
    in_service: Option<Queued>,
    tx_done_ns: u64,
    pipe: VecDeque<(u64, u32)>,
    last_arrival_ns: u64,
    counters: LinkCounters,
    at_warmup: LinkCounters,
    last_account_ns: u64,
    max_queue_packets: u64,
    max_queue_bytes: u64,
    min_queue_packets: Option<u64>,
}

impl Link {
    /// A link from its configuration, with its own loss and jitter generators.
    pub fn new(id: u32, config: &LinkConfig, loss_rng: ChaCha8Rng, jitter_rng: ChaCha8Rng) -> Self {
        let mut schedule: Vec<(u64, Rate)> = config
            .schedule
            .iter()
            .map(|&(t, r)| (duration_nanos(t), r))
            .collect();
        schedule.sort_by_key(|s| s.0);
        Link {
            id,
            name: config.name.clone(),
            ns_per_byte: 1e9 / config.rate.bytes_per_sec(),
            rate: config.rate,
            schedule,
            next_step: 0,
            delay_ns: duration_nanos(config.delay),
            jitter_ns: duration_nanos(config.jitter),
            jitter_rng,
            loss: LossProcess::new(config.loss, loss_rng),
            loss_at: config.loss_at,
            policer: config.policer.map(Bucket::new),
            queue: Queue::new(config.qdisc, config.buffer),
            trace: config
                .delivery_trace
                .clone()
                .map(|t| Box::new(TraceTransmitter::new(t))),
            in_service: None,
            tx_done_ns: 0,
            pipe: VecDeque::new(),
            last_arrival_ns: 0,
            counters: LinkCounters::default(),
            at_warmup: LinkCounters::default(),
            last_account_ns: 0,
            max_queue_packets: 0,
            max_queue_bytes: 0,
            min_queue_packets: None,
        }
    }

    /// Schedules the first rate step, if any.
    pub fn schedule_rate_steps(&self, events: &mut EventQueue) {
        if let Some(&(t, _)) = self.schedule.first() {
            events.push(t, Target::LinkRate(self.id));
        }
    }

    /// Accumulates the fill and capacity integrals up to `now` (the busy one while a packet is
    /// in service: call it before the service starts or ends).
    fn account(&mut self, now: u64) {
        let dt = now.saturating_sub(self.last_account_ns);
        if dt > 0 {
            let capacity = match &self.trace {
                Some(t) => t.capacity_bytes(self.last_account_ns, now),
                None => self.rate.bytes_per_sec() * dt as f64 * 1e-9,
            };
            self.counters.fill_integral += self.queue.fill() * dt as f64;
            self.counters.capacity_bytes += capacity;
            if self.in_service.is_some() {
                self.counters.busy_capacity_bytes += capacity;
            }
            self.last_account_ns = now;
        }
    }

    fn note_queue(&mut self) {
        self.max_queue_packets = self.max_queue_packets.max(self.queue.packets());
        self.max_queue_bytes = self.max_queue_bytes.max(self.queue.bytes());
    }

    /// Offers a packet to the link at `now`.
    pub fn arrive(&mut self, now: u64, q: Queued, events: &mut EventQueue) -> Admission {
        if self.loss_at == LossPoint::Arrival && self.loss.drop_next() {
            self.counters.packets_lost_random += 1;
            return Admission::LostRandom;
        }
        if self.policer.as_mut().is_some_and(|b| !b.admit(now, q.size)) {
            self.counters.packets_policed += 1;
            return Admission::Policed;
        }
        self.account(now);
        if self.in_service.is_none() {
            self.start_transmission(now, q, false, events);
            return Admission::Accepted;
        }
        if !self.queue.enqueue(now, q) {
            self.counters.packets_dropped += 1;
            return Admission::Dropped;
        }
        self.note_queue();
        Admission::Accepted
    }

    /// Packet `q` starts serialising at `now`; `waited` if it waited in the queue.
    fn start_transmission(&mut self, now: u64, q: Queued, waited: bool, events: &mut EventQueue) {
        self.tx_done_ns = match &mut self.trace {
            Some(t) => t.serve(now, q.size, waited),
            None => now + ((f64::from(q.size) * self.ns_per_byte).round() as u64).max(1),
        };
        self.in_service = Some(q);
        events.push(self.tx_done_ns, Target::LinkTransmit(self.id));
    }

    /// The packet in service finished serialising at `now`: it enters the pipe and the next
    /// waiting packet starts.
    pub fn on_transmitted(&mut self, now: u64, events: &mut EventQueue) {
        if now != self.tx_done_ns {
            return; // superseded by a rate step
        }
        self.account(now);
        let Some(done) = self.in_service.take() else {
            return;
        };
        self.counters.bytes_transmitted += u64::from(done.size);
        self.counters.packets_transmitted += 1;
        let jitter = if self.jitter_ns > 0 {
            self.jitter_rng.gen_range(0..=self.jitter_ns)
        } else {
            0
        };
        // FIFO: a packet arrives no earlier than the one before it (jitter, route changes).
        let arrival = (now + self.delay_ns + jitter).max(self.last_arrival_ns);
        self.last_arrival_ns = arrival;
        if self.pipe.is_empty() {
            events.push(arrival, Target::LinkArrival(self.id));
        }
        self.pipe.push_back((arrival, done.packet));
        if let Some(next) = self.queue.dequeue(now) {
            self.start_transmission(now, next, true, events);
        }
        self.min_queue_packets = Some(
            self.min_queue_packets
                .map_or(self.queue.packets(), |m| m.min(self.queue.packets())),
        );
    }

    /// Pops the packets of the pipe that arrive at `now` into `out`, those the loss model takes
    /// on delivery into `lost`, and schedules the next.
    pub fn take_arrivals(
        &mut self,
        now: u64,
        out: &mut Vec<u32>,
        lost: &mut Vec<u32>,
        events: &mut EventQueue,
    ) {
        while let Some(&(t, p)) = self.pipe.front() {
            if t > now {
                events.push(t, Target::LinkArrival(self.id));
                break;
            }
            self.pipe.pop_front();
            if self.loss_at == LossPoint::Delivery && self.loss.drop_next() {
                self.counters.packets_lost_random += 1;
                lost.push(p);
            } else {
                out.push(p);
            }
        }
    }

    /// Applies the next rate step at `now` and schedules the one after. The rest of the
    /// packet on the wire goes out at the new rate.
    pub fn on_rate_step(&mut self, now: u64, events: &mut EventQueue) {
        let Some(&(_, rate)) = self.schedule.get(self.next_step) else {
            return;
        };
        self.account(now);
        let new_ns_per_byte = 1e9 / rate.bytes_per_sec();
        if self.in_service.is_some() && self.tx_done_ns > now {
            let bytes_left = (self.tx_done_ns - now) as f64 / self.ns_per_byte;
            let ns = (bytes_left * new_ns_per_byte).round() as u64;
            self.tx_done_ns = now + ns.max(1);
            events.push(self.tx_done_ns, Target::LinkTransmit(self.id));
        }
        self.rate = rate;
        self.ns_per_byte = new_ns_per_byte;
        self.next_step += 1;
        if let Some(&(t, _)) = self.schedule.get(self.next_step) {
            events.push(t, Target::LinkRate(self.id));
        }
    }

    /// A route change: packets that finish serialising from now on propagate for `delay`.
    /// Packets already in the pipe keep their arrival times, and a later packet never
    /// overtakes them: after a drop in delay, it arrives together with the last of them.
    pub fn set_delay(&mut self, delay: Duration) {
        self.delay_ns = duration_nanos(delay);
    }

    /// Opens the measurement window at `now`.
    pub fn start_measuring(&mut self, now: u64) {
        self.account(now);
        self.at_warmup = self.counters;
        self.min_queue_packets = None;
        self.max_queue_packets = self.queue.packets();
        self.max_queue_bytes = self.queue.bytes();
    }

    /// Current rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Packets waiting in the queue.
    pub fn queue_packets(&self) -> u64 {
        self.queue.packets()
    }

    /// Bytes waiting in the queue.
    pub fn queue_bytes(&self) -> u64 {
        self.queue.bytes()
    }

    /// Packets dropped (buffer full), lost (random) and policed since the start.
    pub fn drops(&self) -> (u64, u64, u64) {
        (
            self.counters.packets_dropped,
            self.counters.packets_lost_random,
            self.counters.packets_policed,
        )
    }

    /// Bytes transmitted since the start.
    pub fn bytes_transmitted(&self) -> u64 {
        self.counters.bytes_transmitted
    }

    /// Statistics over the measurement window ending at `now`.
    pub fn finish(&mut self, now: u64, warmup_ns: u64) -> LinkStats {
        self.account(now);
        LinkStats {
            name: self.name.clone(),
            counters: self.counters.since(&self.at_warmup),
            window_ns: now.saturating_sub(warmup_ns),
            max_queue_packets: self.max_queue_packets,
            max_queue_bytes: self.max_queue_bytes,
            min_queue_packets: self.min_queue_packets.unwrap_or(0),
        }
    }
}

/// A token bucket (see [`PolicerConfig`]).
#[derive(Clone, Copy, Debug)]
struct Bucket {
    bytes_per_ns: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl Bucket {
    fn new(config: PolicerConfig) -> Self {
        Bucket {
            bytes_per_ns: config.rate.bytes_per_sec() / 1e9,
            burst: config.burst as f64,
            tokens: config.burst as f64,
            last_ns: 0,
        }
    }

    /// Refills to `now`, then spends `size` bytes if the bucket holds them.
    fn admit(&mut self, now: u64, size: u32) -> bool {
        let dt = now.saturating_sub(self.last_ns) as f64;
        self.tokens = (self.tokens + dt * self.bytes_per_ns).min(self.burst);
        self.last_ns = now;
        let size = f64::from(size);
        if self.tokens >= size {
            self.tokens -= size;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::LinkConfig;
    use crate::delivery_trace::{DeliveryTrace, OPPORTUNITY_BYTES};
    use crate::queue::BufferLimit;
    use kleinrock_cc::Rate;
    use rand::SeedableRng;

    /// A 12 Mbit/s link (a 1500-byte packet serialises in 1 ms) of `delay_ms` and a buffer of
    /// `buffer` packets, changed by `adjust`.
    fn link_12mbps(delay_ms: u64, buffer: u64, adjust: impl FnOnce(&mut LinkConfig)) -> Link {
        let rate = Rate::from_bits_per_sec(12e6);
        let delay = Duration::from_millis(delay_ms);
        let mut config = LinkConfig::drop_tail("l", rate, delay, BufferLimit::Packets(buffer));
        adjust(&mut config);
        let rng = || ChaCha8Rng::seed_from_u64(1);
        Link::new(0, &config, rng(), rng())
    }

    /// Packet `packet` of 1500 bytes.
    fn q(packet: u32) -> Queued {
        Queued {
            packet,
            size: 1500,
            class: 0,
        }
    }

    /// Runs `link`'s events to the end: each packet with the time it arrives at the far end.
    fn drain(link: &mut Link, events: &mut EventQueue) -> Vec<(u64, u32)> {
        let mut arrived = Vec::new();
        while let Some((t, target)) = events.pop() {
            match target {
                Target::LinkTransmit(_) => link.on_transmitted(t, events),
                Target::LinkArrival(_) => {
                    let mut out = Vec::new();
                    link.take_arrivals(t, &mut out, &mut Vec::new(), events);
                    arrived.extend(out.into_iter().map(|p| (t, p)));
                }
                _ => {}
            }
        }
        arrived
    }

    #[test]
    fn a_traced_link_delivers_at_its_opportunities_exactly() {
        // mahimahi's mm-link: each opportunity carries 1504 bytes; the trace repeats with a
        // period of its last time; a packet at an idle link waits for the next opportunity.
        let trace = DeliveryTrace::parse("2\n2\n5\n9\n10\n").unwrap();
        let mut link = link_12mbps(20, 1000, |c| c.delivery_trace = Some(trace.clone()));
        let mut events = EventQueue::new();
        let full = |packet| Queued {
            packet,
            size: OPPORTUNITY_BYTES,
            class: 0,
        };
        for p in 0..12 {
            link.arrive(0, full(p), &mut events);
        }
        let arrived = drain(&mut link, &mut events);
        let expected: Vec<(u64, u32)> = (0..12)
            .map(|n| (trace.time_ns(n) + 20_000_000, n as u32))
            .collect();
        assert_eq!(arrived, expected);
        // At an idle link at 30.5 ms: the first of the two opportunities at 32 ms; the second
        // carries a 1000-byte packet and the first 504 bytes of the next, whose other 496
        // take the opportunity at 35 ms.
        link.arrive(30_500_000, full(12), &mut events);
        for p in [13, 14] {
            link.arrive(
                30_500_000,
                Queued {
                    size: 1000,
                    ..full(p)
                },
                &mut events,
            );
        }
        let arrived = drain(&mut link, &mut events);
        assert_eq!(
            arrived,
            [(52_000_000, 12), (52_000_000, 13), (55_000_000, 14)]
        );
    }

    #[test]
    fn after_a_drop_in_delay_no_packet_overtakes_the_ones_ahead() {
        let mut link = link_12mbps(50, 9, |_| {});
        let mut events = EventQueue::new();
        link.arrive(0, q(0), &mut events);
        link.arrive(0, q(1), &mut events);
        link.on_transmitted(1_000_000, &mut events); // packet 0 arrives at 51 ms
        link.set_delay(Duration::from_millis(10));
        link.on_transmitted(2_000_000, &mut events); // packet 1: 12 ms alone, held to 51 ms
        let mut out = Vec::new();
        link.take_arrivals(12_000_000, &mut out, &mut Vec::new(), &mut events);
        assert!(out.is_empty(), "packet 1 overtook packet 0");
        link.take_arrivals(51_000_000, &mut out, &mut Vec::new(), &mut events);
        assert_eq!(out, [0, 1]);
        link.arrive(60_000_000, q(2), &mut events);
        link.on_transmitted(61_000_000, &mut events);
        link.take_arrivals(71_000_000, &mut out, &mut Vec::new(), &mut events);
        assert_eq!(out, [0, 1, 2], "a later packet takes the new delay");
    }

    #[test]
    fn loss_on_delivery_takes_packets_that_used_the_queue_and_the_link() {
        // ns-3's receive error model: a lost packet still took its place in the buffer and its
        // serialisation time; it is lost where it would have arrived.
        let mut link = link_12mbps(5, 1, |c| {
            c.loss = crate::loss::LossConfig::Bernoulli { p: 1.0 };
            c.loss_at = LossPoint::Delivery;
        });
        let mut events = EventQueue::new();
        assert_eq!(link.arrive(0, q(0), &mut events), Admission::Accepted);
        assert_eq!(link.arrive(0, q(1), &mut events), Admission::Accepted);
        assert_eq!(
            link.arrive(0, q(2), &mut events),
            Admission::Dropped,
            "the buffer holds the packets loss will take"
        );
        link.on_transmitted(1_000_000, &mut events);
        link.on_transmitted(2_000_000, &mut events);
        let (mut out, mut lost) = (Vec::new(), Vec::new());
        link.take_arrivals(7_000_000, &mut out, &mut lost, &mut events);
        assert_eq!((out.len(), lost.clone()), (0, vec![0, 1]));
        let stats = link.finish(7_000_000, 0);
        assert_eq!(stats.counters.packets_transmitted, 2, "both used the link");
        assert_eq!(stats.counters.packets_lost_random, 2);
        assert_eq!(stats.counters.packets_dropped, 1);
    }

    #[test]
    fn bucket_passes_its_burst_then_its_rate() {
        let mut b = Bucket::new(PolicerConfig {
            rate: Rate::from_bytes_per_sec(1500.0 * 1000.0),
            burst: 15_000,
        });
        let passed = (0..20).filter(|_| b.admit(0, 1500)).count();
        assert_eq!(passed, 10, "a full bucket passes its depth");
        // Over the next second one 1500-byte packet per ms fits: offered two per ms.
        let passed = (1..=2000u64).filter(|i| b.admit(i * 500_000, 1500)).count();
        assert_eq!(passed, 1000);
    }
}
