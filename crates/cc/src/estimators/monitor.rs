//! Monitor intervals (MIs), the measurement unit of the PCC family, shared by `delay_fq` and
//! `vivace`.
//!
//! Source: the CN-TU/PCC-Uspace code
//! (`src/pcc/pcc_sender.cpp`, `src/pcc/pcc_monitor_interval_queue.cpp`) that the fair-queuing
//! detection paper (FQ-detect, §IV) built on: a sender paces at one rate per MI; an MI lasts
//! max(1.5 x avg RTT, the time to send 10 packets at its rate), avg RTT being the per-ACK EWMA
//! (3 old + sample) / 4; its result is available once its end passed and all its packets are
//! acknowledged or lost; its statistics are the actual send rate (bytes sent over the time from
//! its first to its last packet), the fraction of its bytes lost and the RTT samples of its
//! packets.
//!
//! Which MI an ACK or a loss credits comes from a [`Ledger`] of the packets sent, each tagged
//! with its MI. A packet the transport never reports stops counting once a packet sent
//! [`STALE_RTTS`] average RTTs after it is acknowledged, so it cannot hold its MI open.
//!
//! Both controllers are rate-based: the pacing rate is their output and the window must never
//! be what limits them. They return [`RATE_BASED_CWND`], half of `u64::MAX`: effectively
//! unlimited, and `in_flight + packet size <= cwnd` cannot overflow for any amount in flight a
//! transport can have.
//!
//! Owns [`MonitorQueue`], [`MonitorResult`], [`AvgRtt`], [`interval_length`] and
//! [`RATE_BASED_CWND`].

use crate::controller::{AckEvent, CongestionEvent, Instant, Rate};
use crate::estimators::ledger::{Entry, Ledger};
use std::collections::VecDeque;
use std::time::Duration;

/// Packets whose sending time at the MI's rate is the shortest MI (pcc_sender.cpp
/// `kMinimumPacketsPerInterval`).
const MIN_INTERVAL_PACKETS: u64 = 10;
/// The longest MI in average RTTs (pcc_sender.cpp `ComputeMonitorDuration`: 1.5 x avg RTT).
const INTERVAL_RTTS: f64 = 1.5;
/// A packet not reported this many average RTTs before a newer packet is acknowledged is
/// counted as resolved (neither acknowledged nor lost); the transport's own loss detection
/// declares a packet lost after 9/8 RTT (RFC 9002 §6.1.2), so this never overrides it.
pub const STALE_RTTS: u32 = 4;

/// The window of the rate-based controllers, bytes: effectively unlimited (DESIGN.md), with
/// room above it for any `in_flight + packet size`.
pub const RATE_BASED_CWND: u64 = u64::MAX / 2;

/// The per-ACK average RTT of PCC: avg = (3 avg + sample) / 4 (pcc_sender.cpp
/// `OnCongestionEvent`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AvgRtt(Option<Duration>);

impl AvgRtt {
    /// Takes one RTT sample; the first one becomes the average.
    pub fn update(&mut self, sample: Duration) {
        // PCC-Uspace avg_rtt_ EWMA (pcc_sender.cpp OnCongestionEvent): (3 old + sample) / 4.
        self.0 = Some(self.0.map_or(sample, |avg| (avg * 3 + sample) / 4));
    }

    /// The average, `None` before the first sample.
    pub fn get(self) -> Option<Duration> {
        self.0
    }
}

/// Length of an MI sent at `rate`: max(1.5 x avg RTT, time to send 10 packets of
/// `packet_bytes`) (pcc_sender.cpp `ComputeMonitorDuration`); only the packet time before the
/// first RTT sample. `rate` must be positive.
pub fn interval_length(avg_rtt: Option<Duration>, rate: Rate, packet_bytes: u64) -> Duration {
    let packets = rate
        .time_for(MIN_INTERVAL_PACKETS * packet_bytes)
        .unwrap_or_default();
    avg_rtt.map_or(packets, |rtt| packets.max(rtt.mul_f64(INTERVAL_RTTS)))
}

/// What one finished MI measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MonitorResult {
    /// The rate the MI was paced at.
    pub rate: Rate,
    /// Actual send rate: bytes sent over the time from the first to the last packet
    /// (pcc_monitor_interval_queue.cpp `CalculateUtility`); the paced rate when all were sent
    /// at one instant.
    pub send_rate: Rate,
    /// Fraction of the bytes sent that were lost, 0 to 1.
    pub loss: f64,
    /// Mean of the RTT samples of its packets; `None` without a sample.
    pub mean_rtt: Option<Duration>,
    /// Least-squares slope of RTT over send time, seconds per second (dRTT/dT); 0 with fewer
    /// than two samples at different times.
    pub rtt_gradient: f64,
}

impl MonitorResult {
    /// Goodput as PCC-Uspace computes it: send rate x (1 - loss) (`CalculateUtility`).
    pub fn goodput(&self) -> Rate {
        self.send_rate.scaled(1.0 - self.loss)
    }
}

/// Running sums of one MI's RTT samples over their packets' send times, for the mean and the
/// least-squares slope.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct RttSums {
    n: f64,
    t: f64,
    r: f64,
    tt: f64,
    tr: f64,
}

impl RttSums {
    /// Adds an RTT of `r` seconds for a packet sent `t` seconds into the MI.
    fn add(&mut self, t: f64, r: f64) {
        self.n += 1.0;
        self.t += t;
        self.r += r;
        self.tt += t * t;
        self.tr += t * r;
    }

    fn mean(&self) -> Option<Duration> {
        (self.n > 0.0).then(|| Duration::from_secs_f64(self.r / self.n))
    }

    /// Ordinary least squares: slope = (n Str - St Sr) / (n Stt - St^2).
    fn slope(&self) -> f64 {
        let spread = self.n * self.tt - self.t * self.t;
        if self.n < 2.0 || spread <= f64::EPSILON * self.n * self.tt {
            return 0.0;
        }
        (self.n * self.tr - self.t * self.r) / spread
    }
}

/// One MI while it is sent and measured.
#[derive(Clone, Debug, PartialEq)]
struct Interval {
    id: u64,
    useful: bool,
    rate: Rate,
    end: Instant,
    first_sent: Instant,
    last_sent: Instant,
    bytes_sent: u64,
    packets_sent: u64,
    packets_resolved: u64,
    bytes_lost: u64,
    rtt: RttSums,
}

impl Interval {
    fn complete(&self, now: Instant) -> bool {
        // pcc_monitor_interval_queue.cpp IsUtilityAvailable: its end passed and all its
        // packets are acked or lost.
        now >= self.end && self.packets_resolved >= self.packets_sent
    }

    fn result(&self) -> MonitorResult {
        let span = self.last_sent - self.first_sent;
        let send_rate = if span.is_zero() {
            self.rate
        } else {
            // PCC-Uspace actual_send_rate = bytes_sent x 8 / (last_send - first_send).
            Rate::from_bytes_over(self.bytes_sent, span)
        };
        MonitorResult {
            rate: self.rate,
            send_rate,
            loss: (self.bytes_lost as f64 / self.bytes_sent as f64).min(1.0),
            mean_rtt: self.rtt.mean(),
            rtt_gradient: self.rtt.slope(),
        }
    }
}

/// How a packet was resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    Lost,
    Forgotten,
}

/// The MIs of one connection, oldest first, and the packets not yet resolved.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MonitorQueue {
    intervals: VecDeque<Interval>,
    /// The packets not yet resolved, each tagged with its MI's id.
    packets: Ledger<u64>,
    next_id: u64,
}

impl MonitorQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether a packet sent at `now` starts a new MI: there is none, or the newest one ended.
    pub fn needs_interval(&self, now: Instant) -> bool {
        self.intervals.back().is_none_or(|i| now >= i.end)
    }

    /// Starts an MI at `now` of `length`, paced at `rate`; only a `useful` one gives a result.
    pub fn open(&mut self, now: Instant, length: Duration, rate: Rate, useful: bool) {
        self.intervals.push_back(Interval {
            id: self.next_id,
            useful,
            rate,
            end: now + length,
            first_sent: now,
            last_sent: now,
            bytes_sent: 0,
            packets_sent: 0,
            packets_resolved: 0,
            bytes_lost: 0,
            rtt: RttSums::default(),
        });
        self.next_id += 1;
    }

    /// Useful MIs whose result is still to come.
    pub fn useful_pending(&self) -> usize {
        self.intervals.iter().filter(|i| i.useful).count()
    }

    /// Makes every pending MI give no result (the mode they were sent for is over).
    pub fn forget_useful(&mut self) {
        for i in &mut self.intervals {
            i.useful = false;
        }
    }

    /// Drops every MI; packets already sent still resolve, but count for none.
    pub fn clear(&mut self) {
        self.intervals.clear();
    }

    /// A packet of `bytes` was sent at `now`, in the newest MI (open one first).
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        let Some(interval) = self.intervals.back_mut() else {
            return;
        };
        if interval.packets_sent == 0 {
            interval.first_sent = now;
        }
        interval.last_sent = now;
        interval.bytes_sent += bytes;
        interval.packets_sent += 1;
        self.packets.on_sent(now, bytes, interval.id);
    }

    /// Credits an ACK: its RTT sample to the MI of its newest packet, its packets to the
    /// newest unresolved ones sent up to then. `avg_rtt` dates stale packets.
    pub fn on_ack(&mut self, ack: &AckEvent, avg_rtt: Option<Duration>) {
        let newest = ack.largest_acked_sent_time;
        if let (Some(rtt), Some(packet)) = (ack.rtt_sample, self.packets.newest_up_to(newest)) {
            if let Some(i) = interval_in(&mut self.intervals, packet.tag) {
                let t = (packet.sent - i.first_sent).as_secs_f64();
                i.rtt.add(t, rtt.as_secs_f64());
            }
        }
        let intervals = &mut self.intervals;
        self.packets.ack(newest, ack.acked_packets, |p| {
            credit(intervals, p, Fate::Acked)
        });
        if let Some(rtt) = avg_rtt {
            self.packets
                .forget_sent_before(newest, rtt * STALE_RTTS, |p| {
                    credit(intervals, p, Fate::Forgotten)
                });
        }
    }

    /// Credits a loss to the oldest unresolved packets sent up to its newest one.
    pub fn on_loss(&mut self, event: &CongestionEvent) {
        let intervals = &mut self.intervals;
        self.packets
            .lose(event.largest_sent_time, event.lost_packets, |p| {
                credit(intervals, p, Fate::Lost)
            });
    }

    /// The oldest useful MI that is complete at `now`, removing it and every complete MI
    /// before it; `None` if the oldest MI is not complete yet.
    pub fn pop_result(&mut self, now: Instant) -> Option<MonitorResult> {
        while self.intervals.front().is_some_and(|i| i.complete(now)) {
            let interval = self.intervals.pop_front()?;
            if interval.useful {
                return Some(interval.result());
            }
        }
        None
    }
}

/// The MI with id `id`, if it is still in `intervals`.
fn interval_in(intervals: &mut VecDeque<Interval>, id: u64) -> Option<&mut Interval> {
    let first = intervals.front()?.id;
    let index = usize::try_from(id.checked_sub(first)?).ok()?;
    intervals.get_mut(index)
}

/// Counts packet `p`, resolved as `fate`, in its MI.
fn credit(intervals: &mut VecDeque<Interval>, p: Entry<u64>, fate: Fate) {
    if let Some(i) = interval_in(intervals, p.tag) {
        i.packets_resolved += 1;
        if fate == Fate::Lost {
            i.bytes_lost += p.bytes;
        }
    }
}

/// A small deterministic path for the tests of the MI-based controllers: a drop-tail
/// bottleneck of fixed rate and buffer behind a fixed base RTT, one ACK per packet, a lost
/// packet reported when the packets behind it are acknowledged.
#[cfg(test)]
pub(crate) mod testing {
    use crate::controller::{CongestionKind, Controller, Instant, Rate, SentPacket};
    use crate::testing::{ack_with_rtt, congestion};
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    use std::time::Duration;

    /// Packet size of the path, bytes.
    pub(crate) const PACKET: u64 = 1500;

    /// What happens to one packet: acknowledged with an RTT, or lost and reported after the
    /// given time.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub(crate) enum Fate {
        Acked(Duration),
        Lost(Duration),
    }

    /// A bottleneck of `rate` with room for `buffer` packets behind a base RTT.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Bottleneck {
        pub(crate) rate: Rate,
        pub(crate) base_rtt: Duration,
        pub(crate) buffer: u64,
        /// When the link finishes the last accepted packet.
        busy_until: Instant,
    }

    impl Bottleneck {
        /// An idle bottleneck.
        pub(crate) fn new(rate: Rate, base_rtt: Duration, buffer: u64) -> Self {
            Bottleneck {
                rate,
                base_rtt,
                buffer,
                busy_until: Instant::ZERO,
            }
        }

        /// The fate of a packet arriving at `now`: queued behind the packets ahead of it or
        /// dropped when `buffer` packets wait.
        pub(crate) fn fate(&mut self, now: Instant) -> Fate {
            let service = self.rate.time_for(PACKET).unwrap_or_default();
            let waiting = self.busy_until - now;
            if waiting.as_secs_f64() >= service.as_secs_f64() * self.buffer as f64 {
                // Declared lost when the third packet after it is acknowledged (RFC 9002
                // §6.1.1), about when those arrive.
                return Fate::Lost(self.base_rtt + waiting + service * 3);
            }
            self.busy_until = now.max(self.busy_until) + service;
            Fate::Acked(self.base_rtt + (self.busy_until - now))
        }
    }

    /// Sends packets at the controller's pacing rate and feeds back what `path` decides.
    #[derive(Debug, Default)]
    pub(crate) struct Driver {
        pub(crate) now: Instant,
        next_send: Instant,
        next_pn: u64,
        /// Feedback due: (time, send time, fate).
        due: BinaryHeap<Reverse<(Instant, Instant, Fate)>>,
        /// Pacing rates the controller asked for, one per packet sent.
        pub(crate) rates: Vec<f64>,
    }

    impl Driver {
        /// Runs until `until`: sends when pacing allows, delivers ACKs and losses on time.
        pub(crate) fn run(
            &mut self,
            c: &mut dyn Controller,
            until: Instant,
            path: &mut dyn FnMut(Instant) -> Fate,
        ) {
            loop {
                let feedback = self.due.peek().map(|Reverse((t, _, _))| *t);
                if feedback.is_some_and(|t| t <= self.next_send) {
                    let Some(Reverse((t, sent, fate))) = self.due.pop() else {
                        return;
                    };
                    if t > until {
                        self.due.push(Reverse((t, sent, fate)));
                        return;
                    }
                    self.now = t;
                    feed_back(c, t, sent, fate);
                } else {
                    if self.next_send > until {
                        return;
                    }
                    self.send(c, path);
                }
            }
        }

        fn send(&mut self, c: &mut dyn Controller, path: &mut dyn FnMut(Instant) -> Fate) {
            let now = self.next_send;
            self.now = now;
            c.on_sent(now, &sent_packet(self.next_pn));
            self.next_pn += 1;
            let fate = path(now);
            let (Fate::Acked(delay) | Fate::Lost(delay)) = fate;
            self.due.push(Reverse((now + delay, now, fate)));
            let rate = c.pacing_rate().unwrap_or(Rate::ZERO);
            self.rates.push(rate.bits_per_sec());
            self.next_send = now + rate.time_for(PACKET).unwrap_or(Duration::from_secs(1));
        }
    }

    fn feed_back(c: &mut dyn Controller, now: Instant, sent: Instant, fate: Fate) {
        match fate {
            Fate::Acked(rtt) => c.on_ack(now, &ack_with_rtt(PACKET, sent, rtt)),
            Fate::Lost(_) => c.on_congestion(now, &congestion(CongestionKind::Loss, sent)),
        }
    }

    /// Packet `pn` of [`PACKET`] bytes.
    pub(crate) fn sent_packet(pn: u64) -> SentPacket {
        SentPacket {
            packet_number: pn,
            bytes: PACKET,
            is_retransmission: false,
            in_flight: 0,
            snapshot: Default::default(),
        }
    }

    /// A path with a fixed RTT and no loss.
    pub(crate) fn fixed(rtt: Duration) -> impl FnMut(Instant) -> Fate {
        move |_| Fate::Acked(rtt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::CongestionKind;
    use crate::testing::{ack_with_rtt, at, congestion};

    const PACKET: u64 = 1500;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn mbps(v: f64) -> Rate {
        Rate::from_bits_per_sec(v * 1e6)
    }

    /// An ACK of `packets` packets, the newest sent at `sent`, with an RTT sample of `rtt`.
    fn ack_of(packets: u64, sent: Instant, rtt: Duration) -> AckEvent {
        let mut a = ack_with_rtt(packets * PACKET, sent, rtt);
        a.acked_packets = packets;
        a
    }

    /// An MI from t = 0 of 20 ms at 12 Mbps (1 packet per ms) with packets at 0..n ms.
    fn queue_with(n: u64) -> MonitorQueue {
        let mut q = MonitorQueue::new();
        q.open(at(0), ms(20), mbps(12.0), true);
        for t in 0..n {
            q.on_sent(at(t), PACKET);
        }
        q
    }

    #[test]
    fn avg_rtt_is_three_old_plus_sample_over_four() {
        // pcc_sender.cpp OnCongestionEvent: avg_RTT = (3 old + sample) / 4; exact in nanoseconds.
        let mut avg = AvgRtt::default();
        assert_eq!(avg.get(), None);
        avg.update(ms(100));
        assert_eq!(avg.get(), Some(ms(100)));
        avg.update(ms(20));
        assert_eq!(avg.get(), Some(ms(80)));
    }

    #[test]
    fn interval_is_the_longer_of_one_and_a_half_rtts_and_ten_packets() {
        // pcc_sender.cpp ComputeMonitorDuration: max(1.5 x avg RTT, time to send 10 packets);
        // 10 x 1500 B at 12 Mbps is 10 ms. Exact.
        assert_eq!(interval_length(Some(ms(10)), mbps(12.0), PACKET), ms(15));
        assert_eq!(interval_length(Some(ms(4)), mbps(12.0), PACKET), ms(10));
        assert_eq!(interval_length(None, mbps(12.0), PACKET), ms(10));
    }

    #[test]
    fn a_result_waits_for_the_end_and_every_packet() {
        // pcc_monitor_interval_queue.cpp IsUtilityAvailable: available once its end passed
        // and all its packets are acked or lost.
        let mut q = queue_with(20);
        for t in 0..19 {
            q.on_ack(&ack_of(1, at(t), ms(10)), Some(ms(10)));
        }
        assert_eq!(q.pop_result(at(30)), None, "one packet outstanding");
        q.on_loss(&congestion(CongestionKind::Loss, at(19)));
        assert_eq!(q.pop_result(at(19)), None, "before its end");
        let r = q.pop_result(at(30)).unwrap();
        // 20 packets over 19 ms (first to last send), one of 20 lost.
        assert!((r.send_rate.bytes_per_sec() - 20.0 * 1500.0 / 0.019).abs() < 1e-6);
        assert!((r.loss - 0.05).abs() < 1e-12);
        assert!((r.goodput().bytes_per_sec() - 0.95 * 20.0 * 1500.0 / 0.019).abs() < 1e-6);
        assert_eq!(r.mean_rtt, Some(ms(10)));
        assert_eq!(r.rate, mbps(12.0));
    }

    #[test]
    fn a_stretched_ack_across_two_intervals_credits_both() {
        // One ACK of 4 packets, two of each MI: the first MI completes at once.
        let mut q = queue_with(10);
        q.open(at(20), ms(20), mbps(12.0), true);
        for t in 20..30 {
            q.on_sent(at(t), PACKET);
        }
        q.on_ack(&ack_of(8, at(7), ms(10)), Some(ms(10)));
        q.on_ack(&ack_of(4, at(21), ms(10)), Some(ms(10)));
        assert!(q.pop_result(at(40)).is_some());
        for t in 22..30 {
            q.on_ack(&ack_of(1, at(t), ms(10)), Some(ms(10)));
        }
        assert_eq!(q.pop_result(at(40)).map(|r| r.loss), Some(0.0));
    }

    #[test]
    fn losses_go_to_the_oldest_packets_and_acks_to_the_newest() {
        // Packets 3 and 4 lost, 5-9 acknowledged first: the loss is declared afterwards and
        // still lands in the first MI, which the second MI's ACKs did not complete.
        let mut q = queue_with(10);
        q.open(at(20), ms(20), mbps(12.0), true);
        q.on_sent(at(20), PACKET);
        q.on_ack(&ack_of(3, at(2), ms(10)), Some(ms(10)));
        q.on_ack(&ack_of(5, at(9), ms(10)), Some(ms(10)));
        q.on_ack(&ack_of(1, at(20), ms(10)), Some(ms(10)));
        assert_eq!(q.pop_result(at(40)), None);
        let mut lost = congestion(CongestionKind::Loss, at(4));
        lost.lost_packets = 2;
        q.on_loss(&lost);
        assert_eq!(q.pop_result(at(40)).map(|r| r.loss), Some(0.2));
        assert_eq!(q.pop_result(at(40)).map(|r| r.loss), Some(0.0));
    }

    #[test]
    fn a_packet_never_reported_stops_counting_after_four_rtts() {
        let mut q = queue_with(10);
        q.open(at(20), ms(100), mbps(12.0), true);
        q.on_ack(&ack_of(9, at(9), ms(10)), Some(ms(10)));
        for t in [20, 40] {
            q.on_sent(at(t), PACKET);
            q.on_ack(&ack_of(1, at(t), ms(10)), Some(ms(10)));
        }
        assert_eq!(q.pop_result(at(60)), None, "packet 0 sent 4 RTTs before");
        q.on_sent(at(41), PACKET);
        q.on_ack(&ack_of(1, at(41), ms(10)), Some(ms(10)));
        assert_eq!(q.pop_result(at(60)).map(|r| r.loss), Some(0.0));
    }

    #[test]
    fn rtt_gradient_is_the_least_squares_slope_over_send_time() {
        // RTT rising 0.5 ms per ms of send time: dRTT/dT = 0.5, mean 12.25 ms (10 + 0.5 x 4.5).
        let mut q = queue_with(10);
        for t in 0..10 {
            q.on_ack(&ack_of(1, at(t), ms(10) + ms(t) / 2), None);
        }
        let r = q.pop_result(at(20)).unwrap();
        assert!((r.rtt_gradient - 0.5).abs() < 1e-9, "{}", r.rtt_gradient);
        let mean = r.mean_rtt.unwrap().as_secs_f64();
        assert!((mean - 0.012_25).abs() < 1e-9, "{mean}");
    }

    #[test]
    fn only_useful_intervals_give_results() {
        let mut q = MonitorQueue::new();
        q.open(at(0), ms(5), mbps(12.0), false);
        q.on_sent(at(0), PACKET);
        assert!(!q.needs_interval(at(4)) && q.needs_interval(at(5)));
        q.open(at(5), ms(5), mbps(12.0), true);
        q.on_sent(at(5), PACKET);
        assert_eq!(q.useful_pending(), 1);
        q.on_ack(&ack_of(2, at(5), ms(10)), None);
        assert_eq!(q.pop_result(at(15)).map(|r| r.rate), Some(mbps(12.0)));
        assert_eq!(q.useful_pending(), 0);
    }
}
