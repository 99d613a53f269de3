//! A fake path and sender for the BBR v1 model's unit tests, shared by the `bbr` and
//! `ccid5` tests: a FIFO bottleneck with a fixed propagation delay and optional impairments
//! (rate and delay steps, a token-bucket policer, random loss, a rate-limited application), a
//! sender that drives any controller built on the model, and a feeder of synthetic steady
//! delivery. Every ACK leaves a [`Row`] of the model's state.

use super::{Bbr, BbrParams, Mode};
use crate::controller::units::duration_nanos;
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, DeliverySnapshot,
    Instant, Rate, RateSample, SentPacket,
};
use crate::estimators::delivery_rate::DeliveryRateSampler;
use crate::estimators::rtt::RttEstimator;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// A controller built on the model: `bbr` itself, or `ccid5` around it.
pub(crate) trait OnModel: Controller {
    /// The model it runs.
    fn model(&self) -> &Bbr;
    /// The model it runs, to change.
    fn model_mut(&mut self) -> &mut Bbr;
}

impl OnModel for Bbr {
    fn model(&self) -> &Bbr {
        self
    }
    fn model_mut(&mut self) -> &mut Bbr {
        self
    }
}

pub(crate) const MSS: u64 = 1500;

pub(crate) fn mbps(v: f64) -> Rate {
    Rate::from_bits_per_sec(v * 1e6)
}

pub(crate) fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

pub(crate) fn at(d: Duration) -> Instant {
    Instant::from_nanos(duration_nanos(d))
}

pub(crate) fn before(t: Instant, d: Duration) -> Instant {
    Instant::from_nanos(t.as_nanos() - duration_nanos(d))
}

pub(crate) fn config(seed: u64) -> ControllerConfig {
    ControllerConfig {
        seed,
        ..ControllerConfig::default()
    }
}

pub(crate) fn bbr(seed: u64) -> Bbr {
    Bbr::new(&config(seed), BbrParams::default())
}

pub(crate) fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1e-12)
}

/// A token-bucket policer in front of the bottleneck.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Policer {
    rate: Rate,
    bucket: u64,
    tokens: f64,
    last_ns: u64,
}

impl Policer {
    pub(crate) fn new(rate: Rate, bucket: u64) -> Self {
        Policer {
            rate,
            bucket,
            tokens: bucket as f64,
            last_ns: 0,
        }
    }

    pub(crate) fn admits(&mut self, now_ns: u64, bytes: u64) -> bool {
        let elapsed = (now_ns - self.last_ns) as f64 * 1e-9;
        self.last_ns = now_ns;
        self.tokens = (self.tokens + elapsed * self.rate.bytes_per_sec()).min(self.bucket as f64);
        let ok = self.tokens >= bytes as f64;
        if ok {
            self.tokens -= bytes as f64;
        }
        ok
    }
}

/// The fake path: a FIFO bottleneck with an unlimited buffer, a fixed round-trip
/// propagation delay, and optional impairments.
#[derive(Clone, Debug)]
pub(crate) struct Path {
    pub(crate) rate: Rate,
    pub(crate) rtt: Duration,
    /// From this time (ns) the bottleneck runs at another rate.
    pub(crate) rate_change: Option<(u64, Rate)>,
    /// From this time (ns) every packet takes this much longer.
    pub(crate) extra_delay: Option<(u64, Duration)>,
    /// A token-bucket policer before the bottleneck.
    pub(crate) policer: Option<Policer>,
    /// Random loss before the bottleneck: probability and generator.
    pub(crate) random_loss: Option<(f64, ChaCha8Rng)>,
    /// From this time (ns) the application produces data at this rate only.
    pub(crate) app_rate: Option<(u64, Rate)>,
}

impl Path {
    pub(crate) fn new(rate: Rate, rtt: Duration) -> Self {
        Path {
            rate,
            rtt,
            rate_change: None,
            extra_delay: None,
            policer: None,
            random_loss: None,
            app_rate: None,
        }
    }

    pub(crate) fn rate_at(&self, t: u64) -> Rate {
        match self.rate_change {
            Some((from, rate)) if t >= from => rate,
            _ => self.rate,
        }
    }

    pub(crate) fn rtt_at(&self, t: u64) -> Duration {
        match self.extra_delay {
            Some((from, extra)) if t >= from => self.rtt + extra,
            _ => self.rtt,
        }
    }

    /// When the application has `bytes` more to send than it sent since it became limited,
    /// for a send wanted at `t`; `None` while it is unlimited.
    pub(crate) fn app_ready(&self, t: u64, bytes: u64) -> Option<u64> {
        let (from, rate) = self.app_rate?;
        (t >= from).then(|| from + rate.time_for(bytes).map_or(u64::MAX, duration_nanos))
    }
}

/// A packet in flight through the fake path; `ack_at` is `None` for a dropped packet.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Flight {
    pub(crate) pn: u64,
    pub(crate) sent: u64,
    pub(crate) ack_at: Option<u64>,
    pub(crate) snapshot: DeliverySnapshot,
}

/// What the driver recorded after one ACK.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub(crate) t: u64,
    pub(crate) mode: Mode,
    pub(crate) round: u64,
    pub(crate) round_start: bool,
    pub(crate) btl_bw: Rate,
    pub(crate) min_rtt: Option<Duration>,
    pub(crate) min_rtt_stamp: Option<Instant>,
    pub(crate) pacing: Rate,
    pub(crate) pacing_gain: f64,
    pub(crate) cwnd: u64,
    pub(crate) in_flight: u64,
    pub(crate) cycle_index: usize,
    pub(crate) full_bw_reached: bool,
    pub(crate) lt_use_bw: bool,
    pub(crate) lt_bw: Option<Rate>,
    pub(crate) app_limited_sample: bool,
    pub(crate) prior_cwnd: u64,
    pub(crate) packet_conservation: bool,
    pub(crate) cwnd_gain: f64,
    /// The Ack Ratio the controller asks for (DCCP), as the driver read it.
    pub(crate) ack_ratio: Option<u64>,
    /// Packets per send quantum (CCID5's `tso_segs_goal`).
    pub(crate) quantum: u64,
}

impl Row {
    pub(crate) fn secs(&self) -> f64 {
        self.t as f64 * 1e-9
    }
}

/// A sender running BBR over a [`Path`]: sends paced, cwnd-limited packets, acknowledges
/// each one alone one RTT after it left the bottleneck, declares a dropped packet lost when
/// the third packet after it is acknowledged (RFC 9002 packet threshold), and feeds the
/// controller in the simulator's order (on_congestion before on_ack).
pub(crate) struct Driver<C> {
    pub(crate) cc: C,
    pub(crate) path: Path,
    pub(crate) sampler: DeliveryRateSampler,
    pub(crate) rtt: RttEstimator,
    pub(crate) now: u64,
    pub(crate) next_pn: u64,
    pub(crate) next_send: u64,
    pub(crate) link_free: u64,
    pub(crate) in_flight: u64,
    pub(crate) flights: VecDeque<Flight>,
    pub(crate) app_sent: u64,
    pub(crate) app_marked: bool,
    pub(crate) rows: Vec<Row>,
    /// Whether the sender paces at the controller's rate (a DCCP host without `fq` does not).
    pub(crate) paced: bool,
}

impl<C: OnModel> Driver<C> {
    pub(crate) fn new(path: Path, cc: C) -> Self {
        Driver {
            cc,
            paced: true,
            path,
            sampler: DeliveryRateSampler::new(),
            rtt: RttEstimator::new(),
            now: 0,
            next_pn: 0,
            next_send: 0,
            link_free: 0,
            in_flight: 0,
            flights: VecDeque::new(),
            app_sent: 0,
            app_marked: false,
            rows: Vec::new(),
        }
    }

    pub(crate) fn instant(&self) -> Instant {
        Instant::from_nanos(self.now)
    }

    /// Runs until `end` (time since the start).
    pub(crate) fn run_until(&mut self, end: Duration) {
        let end = duration_nanos(end);
        loop {
            let ack = self.flights.iter().find_map(|f| f.ack_at);
            let send = self.next_send_time();
            let (t, is_ack) = match (ack, send) {
                (Some(a), Some(s)) if a <= s => (a, true),
                (_, Some(s)) => (s, false),
                (Some(a), None) => (a, true),
                (None, None) => {
                    // Everything in flight was dropped: a crude timeout.
                    self.now += duration_nanos(self.path.rtt * 2);
                    self.declare_all_lost();
                    continue;
                }
            };
            if t > end {
                self.now = end;
                return;
            }
            self.now = t;
            if is_ack {
                self.ack_next();
            } else {
                self.send();
            }
        }
    }

    /// When the next packet may leave, `None` while cwnd is full; marks the connection
    /// app-limited when only the application holds it back.
    pub(crate) fn next_send_time(&mut self) -> Option<u64> {
        if self.in_flight + MSS > self.cc.cwnd() {
            return None;
        }
        let paced = self.next_send.max(self.now);
        let Some(ready) = self.path.app_ready(paced, self.app_sent + MSS) else {
            return Some(paced);
        };
        if ready > paced && !self.app_marked {
            self.sampler.on_app_limited(self.in_flight);
            self.cc.on_app_limited(self.instant());
            self.app_marked = true;
        }
        Some(paced.max(ready))
    }

    pub(crate) fn send(&mut self) {
        let now = self.instant();
        let snapshot = self.sampler.on_packet_sent(now, self.in_flight, MSS);
        self.in_flight += MSS;
        let pn = self.next_pn;
        self.next_pn += 1;
        self.cc.on_sent(
            now,
            &SentPacket {
                packet_number: pn,
                bytes: MSS,
                is_retransmission: false,
                in_flight: self.in_flight,
                snapshot,
            },
        );
        if self.path.app_rate.is_some_and(|(from, _)| self.now >= from) {
            self.app_sent += MSS;
        }
        self.app_marked = false;
        let ack_at = self.admit().then(|| self.through_bottleneck());
        self.flights.push_back(Flight {
            pn,
            sent: self.now,
            ack_at,
            snapshot,
        });
        if let Some(rate) = self.cc.pacing_rate().filter(|_| self.paced) {
            let gap = rate.time_for(MSS).map_or(0, duration_nanos);
            self.next_send = self.next_send.max(self.now) + gap;
        }
    }

    /// Whether the packet sent now survives random loss and the policer.
    pub(crate) fn admit(&mut self) -> bool {
        if let Some((p, rng)) = self.path.random_loss.as_mut() {
            if rng.gen_bool(*p) {
                return false;
            }
        }
        let now = self.now;
        self.path
            .policer
            .as_mut()
            .is_none_or(|p| p.admits(now, MSS))
    }

    /// Queues the packet sent now at the bottleneck; returns when its ACK arrives.
    pub(crate) fn through_bottleneck(&mut self) -> u64 {
        let start = self.link_free.max(self.now);
        let rate = self.path.rate_at(start);
        self.link_free = start + rate.time_for(MSS).map_or(0, duration_nanos);
        self.link_free + duration_nanos(self.path.rtt_at(self.now))
    }

    pub(crate) fn ack_next(&mut self) {
        let now = self.instant();
        let index = self
            .flights
            .iter()
            .position(|f| f.ack_at.is_some())
            .expect("an ACK is due");
        let acked = self.flights.remove(index).expect("index is valid");
        let prior_in_flight = self.in_flight;
        self.in_flight -= MSS;
        let rtt = now - Instant::from_nanos(acked.sent);
        self.rtt.on_sample(rtt, Duration::ZERO);
        let sent = Instant::from_nanos(acked.sent);
        self.sampler
            .on_packet_acked(now, MSS, sent, &acked.snapshot);
        self.detect_lost(acked.pn);
        let rate = self.sampler.generate_sample(self.rtt.min());
        let ack = AckEvent {
            acked_bytes: MSS,
            acked_packets: 1,
            largest_acked_sent_time: sent,
            rtt_sample: Some(rtt),
            min_rtt: self.rtt.min(),
            smoothed_rtt: self.rtt.smoothed(),
            rate,
            delivered: self.sampler.delivered(),
            prior_in_flight,
            in_flight: self.in_flight,
            app_limited: rate.map_or(acked.snapshot.is_app_limited, |r| r.is_app_limited),
            ack_delay: None,
            one_way_delay: None,
        };
        let marked = rate.map(|r| self.cc.model().with_probe_rtt_mark(&r).is_app_limited);
        self.cc.on_ack(now, &ack);
        self.rows.push(self.row(marked.unwrap_or(false)));
    }

    /// Declares lost the dropped packets at least 3 below `acked_pn`.
    pub(crate) fn detect_lost(&mut self, acked_pn: u64) {
        let mut lost = 0;
        let mut newest = 0;
        while let Some(f) = self.flights.front() {
            if f.ack_at.is_some() || f.pn + 3 > acked_pn {
                break;
            }
            newest = f.sent;
            lost += 1;
            self.flights.pop_front();
        }
        self.report_lost(lost, newest);
    }

    pub(crate) fn declare_all_lost(&mut self) {
        let lost = self.flights.len() as u64;
        let newest = self.flights.back().map_or(0, |f| f.sent);
        self.flights.clear();
        self.report_lost(lost, newest);
    }

    pub(crate) fn report_lost(&mut self, packets: u64, newest_sent: u64) {
        if packets == 0 {
            return;
        }
        let prior_in_flight = self.in_flight;
        self.in_flight -= packets * MSS;
        self.sampler.on_packet_lost(packets * MSS);
        let event = CongestionEvent {
            kind: CongestionKind::Loss,
            lost_bytes: packets * MSS,
            lost_packets: packets,
            largest_sent_time: Instant::from_nanos(newest_sent),
            prior_in_flight,
            in_flight: self.in_flight,
        };
        self.cc.on_congestion(self.instant(), &event);
    }

    pub(crate) fn row(&self, app_limited_sample: bool) -> Row {
        Row {
            ack_ratio: self.cc.ack_ratio(),
            ..Row::of(
                self.cc.model(),
                self.now,
                self.in_flight,
                app_limited_sample,
            )
        }
    }
}

impl Row {
    /// The model's state at `t` (ns) with `in_flight` bytes in flight.
    pub(crate) fn of(c: &Bbr, t: u64, in_flight: u64, app_limited_sample: bool) -> Row {
        Row {
            t,
            mode: c.mode,
            round: c.round_count,
            round_start: c.round_start,
            btl_bw: c.max_bw(),
            min_rtt: c.min_rtt,
            min_rtt_stamp: c.min_rtt_stamp,
            pacing: c.pacing_rate,
            pacing_gain: c.pacing_gain,
            cwnd: c.cwnd,
            in_flight,
            cycle_index: c.cycle_index,
            full_bw_reached: c.full_bw_reached,
            lt_use_bw: c.lt.use_bw,
            lt_bw: c.lt.bw,
            app_limited_sample,
            prior_cwnd: c.prior_cwnd,
            packet_conservation: c.packet_conservation,
            cwnd_gain: c.cwnd_gain,
            ack_ratio: None,
            quantum: c.send_quantum_packets(),
        }
    }
}

/// An ACK of one packet with no rate sample, `in_flight` bytes left.
pub(crate) fn steady_ack(in_flight: u64, rtt: Duration) -> AckEvent {
    AckEvent {
        acked_bytes: MSS,
        acked_packets: 1,
        largest_acked_sent_time: Instant::ZERO,
        rtt_sample: Some(rtt),
        min_rtt: Some(rtt),
        smoothed_rtt: Some(rtt),
        rate: None,
        delivered: 0,
        prior_in_flight: in_flight + MSS,
        in_flight,
        app_limited: false,
        ack_delay: None,
        one_way_delay: None,
    }
}

/// Feeds `acks` ACKs of steady delivery at `rate` over `rtt`: one packet per ACK, with
/// `lose_every`-th ACK preceded by the loss of one packet; returns the time reached.
pub(crate) fn feed_steady<C: OnModel>(
    c: &mut C,
    from: Duration,
    acks: u64,
    rate: Rate,
    rtt: Duration,
    lose_every: u64,
) -> Duration {
    let gap = rate.time_for(MSS).expect("positive rate");
    let bdp = (rate.bytes_in(rtt) as u64 / MSS).max(1) * MSS;
    let mut now = from;
    for _ in 0..acks {
        now += gap;
        c.model_mut().losses_since_ack = 0;
        let delivered = c.model().delivered + MSS;
        // Keep lost = delivered / lose_every packets.
        if lose_every > 0 && c.model().lost / MSS < delivered / MSS / lose_every {
            c.on_congestion(
                at(now),
                &CongestionEvent {
                    kind: CongestionKind::Loss,
                    lost_bytes: MSS,
                    lost_packets: 1,
                    largest_sent_time: at(now.saturating_sub(rtt / 2)),
                    prior_in_flight: bdp + MSS,
                    in_flight: bdp,
                },
            );
        }
        let mut ack = steady_ack(bdp, rtt);
        ack.largest_acked_sent_time = at(now.saturating_sub(rtt));
        ack.delivered = delivered;
        ack.rate = Some(RateSample {
            delivered: bdp,
            interval: rtt,
            is_app_limited: false,
            prior_delivered: delivered.saturating_sub(bdp),
            lost: 0,
            tx_in_flight: bdp,
        });
        c.on_ack(at(now), &ack);
    }
    now
}

/// The inflight the model asks for at `gain` (tcp_bbr.c `bbr_inflight`, ccid5.c
/// `bbr_target_cwnd`), for tests outside the model's module.
pub(crate) fn inflight_of(c: &Bbr, bw: Rate, gain: f64) -> u64 {
    c.inflight(bw, gain)
}

/// The BtlBw estimate and the policed rate (if in use), for tests outside the model's module.
pub(crate) fn bw_of(c: &Bbr) -> (Rate, Option<Rate>) {
    (c.max_bw(), c.lt.bw.filter(|_| c.lt.use_bw))
}

/// Bytes delivered as of the model's last ACK, for tests outside the model's module.
pub(crate) fn delivered_of(c: &Bbr) -> u64 {
    c.delivered
}
