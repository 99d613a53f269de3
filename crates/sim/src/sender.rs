//! The sending side of one subflow of the reliable, QUIC-like transport (the connection's
//! stream, shared by its subflows, is passed in): packet numbers never reused
//! (retransmitted data goes in new packets), ACK-range processing, RFC 9002 loss detection
//! (packet threshold 3, time threshold 9/8 RTT), PTO with exponential backoff, persistent
//! congestion, pacing, delivery-rate samples and one-way-delay samples for the controller.
//! With [`LossRecovery::Tcp`], TCP's recovery instead ([`crate::tcp_recovery`]): packet
//! threshold 3, the retransmission timeout, PRR, and RACK-TLP when asked for.
//!
//! ACK processing visits only packets above the previous largest acknowledged and the few
//! outstanding packets below it ("holes"), so its cost does not grow with the window.

use crate::config::{LossRecovery, TransportConfig};
use crate::events::{EventQueue, LazyTimer, Target};
use crate::hist::Histogram;
use crate::packet::{AckFrame, Body, Packet};
use crate::stats::{EventSpan, FlowCounters, LossEpisodes};
use crate::stream::SendStream;
use crate::tcp_recovery::{Expiry, TcpLossRecovery};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::estimators::delivery_rate::DeliveryRateSampler;
use kleinrock_cc::estimators::rtt::{RttEstimator, GRANULARITY};
use kleinrock_cc::{
    AckEvent, CongestionEvent, CongestionKind, Controller, DeliverySnapshot, Instant,
    OneWayDelaySample, ParamValue, Rate, SentPacket,
};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::time::Duration;

/// RFC 9002 §6.1.1: kPacketThreshold.
const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §7.6.1: kPersistentCongestionThreshold.
const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;
/// Probe packets sent when a PTO fires (RFC 9002 §6.2.4 allows up to two).
const PTO_PROBES: u32 = 2;
/// Packets one event may send. A sender with more to send goes on in another event at the
/// same time, so no answer of a controller makes one event unbounded.
const MAX_SENDS_PER_EVENT: u32 = 1024;

/// What became of a sent packet (this sender's and the DCCP sender's records).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Neither acknowledged nor declared lost yet.
    Outstanding,
    /// Acknowledged.
    Acked,
    /// Declared lost.
    Lost,
}

#[derive(Clone, Copy, Debug)]
struct Record {
    sent_ns: u64,
    offset: u64,
    len: u32,
    size: u32,
    outcome: Outcome,
    /// Sent while the measurement window was open.
    in_window: bool,
    /// Carries data sent before.
    retx: bool,
    /// Carries data of a TCP recovery episode's past: below its recovery point, resent.
    guards: bool,
    snapshot: DeliverySnapshot,
}

/// Measurements the sender keeps.
#[derive(Debug, Default)]
pub struct SenderStats {
    /// Counters (sender's part).
    pub counters: FlowCounters,
    /// RTT samples taken inside the measurement window, ns.
    pub rtt: Histogram,
    /// Congestion events inside the window.
    pub loss_events: EventSpan,
    /// Packets sent in the window and declared lost (at any time): the numerator of the loss
    /// rate, whose denominator is the packets sent in the window.
    pub window_lost: u64,
    /// Largest RTT sample over the run, ns.
    pub max_rtt_ns: u64,
}

/// The sender of one subflow.
pub struct Sender {
    flow: u32,
    cc: Box<dyn Controller>,
    cfg: TransportConfig,
    rtt: RttEstimator,
    rate: DeliveryRateSampler,
    records: VecDeque<Record>,
    base_pn: u64,
    next_pn: u64,
    largest_acked: Option<u64>,
    holes: Vec<u64>,
    in_flight: u64,
    next_send_ns: u64,
    /// Draws the gaps while held to the host rate; only with a host rate (kept out of line,
    /// so a sender without one stays small).
    host_rng: Option<Box<ChaCha8Rng>>,
    loss_time_ns: Option<u64>,
    /// TCP's recovery, with [`LossRecovery::Tcp`] (boxed: most senders run QUIC's).
    tcp: Option<Box<TcpLossRecovery>>,
    /// Outstanding packets that resend data below the recovery point of TCP's episode.
    guarding: u32,
    pto_count: u32,
    probes_due: u32,
    last_sent_ns: u64,
    first_rtt_sample_ns: Option<u64>,
    loss_episodes: LossEpisodes,
    started: bool,
    idle: bool,
    finished_ns: Option<u64>,
    closed: bool,
    measuring: bool,
    scratch_acked: Vec<u64>,
    scratch_lost: Vec<u64>,
    /// The last event stopped sending at [`MAX_SENDS_PER_EVENT`] with more allowed.
    burst_cut: bool,
    /// The sender's timer (pacing, loss detection, PTO, application data).
    pub timer: LazyTimer,
    /// Measurements.
    pub stats: SenderStats,
}

impl Sender {
    /// A sender for subflow `flow` driven by `cc`; `host_rng` draws the gaps of its sends
    /// while it is held to the host rate.
    pub fn new(
        flow: u32,
        cc: Box<dyn Controller>,
        cfg: TransportConfig,
        host_rng: ChaCha8Rng,
    ) -> Self {
        assert!(
            (0.0..=1.0).contains(&cfg.host_jitter),
            "host_jitter {} is outside [0, 1]",
            cfg.host_jitter
        );
        Sender {
            flow,
            cc,
            cfg,
            rtt: RttEstimator::new(),
            rate: DeliveryRateSampler::new(),
            records: VecDeque::new(),
            base_pn: 0,
            next_pn: 0,
            largest_acked: None,
            holes: Vec::new(),
            in_flight: 0,
            next_send_ns: 0,
            host_rng: cfg.host_rate.map(|_| Box::new(host_rng)),
            loss_time_ns: None,
            tcp: match cfg.recovery {
                LossRecovery::Quic => None,
                LossRecovery::Tcp(t) => Some(Box::new(TcpLossRecovery::new(t))),
            },
            guarding: 0,
            pto_count: 0,
            probes_due: 0,
            last_sent_ns: 0,
            first_rtt_sample_ns: None,
            loss_episodes: LossEpisodes::default(),
            started: false,
            idle: false,
            finished_ns: None,
            closed: false,
            measuring: false,
            scratch_acked: Vec::new(),
            scratch_lost: Vec::new(),
            burst_cut: false,
            timer: LazyTimer::default(),
            stats: SenderStats::default(),
        }
    }

    /// The subflow starts at `now`.
    pub fn start(
        &mut self,
        now: u64,
        stream: &mut SendStream,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        self.started = true;
        self.poke(now, stream, out, events);
    }

    /// Sends what the controller allows and arms the timer: after the stream changed (data
    /// to resend, the application stopped) because of another subflow or the application.
    pub fn poke(
        &mut self,
        now: u64,
        stream: &mut SendStream,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if self.closed {
            return;
        }
        if self.finished_ns.is_some() && !stream.exhausted() {
            // Another subflow's loss or closing gave the stream chunks to resend.
            self.finished_ns = None;
        }
        self.check_finished(now, stream);
        self.send_ready(now, stream, out);
        self.arm(now, stream, events);
    }

    /// The subflow closes at `now`: it sends nothing more and ignores its timer and ACKs;
    /// returns the chunks it sent that were not acknowledged, for another subflow to resend.
    pub fn close(&mut self, now: u64) -> Vec<(u64, u32)> {
        self.closed = true;
        self.finished_ns.get_or_insert(now);
        self.loss_time_ns = None;
        self.records
            .iter()
            .filter(|r| r.outcome == Outcome::Outstanding)
            .map(|r| (r.offset, r.len))
            .collect()
    }

    /// A controller parameter changes at `now`; the sender then sends what the controller
    /// allows.
    pub fn set_param(
        &mut self,
        now: u64,
        name: &str,
        value: &ParamValue,
        stream: &mut SendStream,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        self.cc.set_param(Instant::from_nanos(now), name, value);
        self.send_ready(now, stream, out);
        self.arm(now, stream, events);
    }

    /// Statistics before this call are discarded from now on.
    pub fn start_measuring(&mut self) {
        self.measuring = true;
    }

    /// When every byte was acknowledged (sized or stopped flows).
    pub fn finished_ns(&self) -> Option<u64> {
        self.finished_ns
    }

    /// The controller, for traces.
    pub fn controller(&self) -> &dyn Controller {
        self.cc.as_ref()
    }

    /// The controller, to open the subflows it asks for.
    pub fn controller_mut(&mut self) -> &mut dyn Controller {
        self.cc.as_mut()
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.in_flight
    }

    /// RTT estimates.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The rate the sender paces at now, if it paces: the controller's (or a multiple of
    /// cwnd / srtt), at most the host rate.
    pub fn pacing_rate(&self) -> Option<Rate> {
        let rate = self.wanted_pacing_rate()?;
        Some(self.host_limit(rate).unwrap_or(rate))
    }

    /// The host rate, if `rate` asks for more.
    fn host_limit(&self, rate: Rate) -> Option<Rate> {
        self.cfg
            .host_rate
            .filter(|max| max.bits_per_sec() < rate.bits_per_sec())
    }

    /// The time until the next paced send after a packet of `size` bytes: the pacing
    /// rate's gap, scaled by a random factor while the host rate holds the sender back.
    fn pacing_gap_ns(&mut self, size: u32) -> Option<u64> {
        let wanted = self.wanted_pacing_rate()?;
        let gap_at = |rate: Rate| rate.time_for(u64::from(size)).map_or(0, duration_nanos);
        Some(match self.host_limit(wanted) {
            None => gap_at(wanted),
            Some(host) => self.jittered(gap_at(host)),
        })
    }

    /// `gap_ns` scaled by a factor uniform in `[1 - host_jitter, 1 + host_jitter]`. Out of
    /// line: most senders are never held, and the draw slows the common path when inlined.
    #[inline(never)]
    fn jittered(&mut self, gap_ns: u64) -> u64 {
        let j = self.cfg.host_jitter;
        match self.host_rng.as_mut() {
            Some(rng) if j > 0.0 => {
                (gap_ns as f64 * rng.gen_range(1.0 - j..=1.0 + j)).round() as u64
            }
            _ => gap_ns,
        }
    }

    fn wanted_pacing_rate(&self) -> Option<Rate> {
        if !self.cfg.pacing {
            return None;
        }
        self.cc.pacing_rate().or_else(|| {
            let srtt = self.rtt.smoothed()?;
            let cwnd = self.cc.cwnd();
            // Linux tcp_update_pacing_rate: the slow-start ratio while cwnd < ssthresh / 2,
            // applied to max(cwnd, bytes in flight).
            let slow_start = self
                .cc
                .ssthresh()
                .map_or(self.cc.in_slow_start(), |s| cwnd < s / 2);
            let ratio = if slow_start {
                self.cfg.pacing_ratio_slow_start
            } else {
                self.cfg.pacing_ratio
            };
            Some(Rate::from_bytes_over(cwnd.max(self.in_flight), srtt).scaled(ratio))
        })
    }

    /// Handles the sender timer at `now`.
    pub fn on_timer(
        &mut self,
        now: u64,
        stream: &mut SendStream,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if !self.timer.fire(now) || self.closed {
            return;
        }
        if self.loss_time_ns.is_some_and(|t| t <= now) {
            self.detect_lost(now, stream);
            // The lost records leave the window (`max_in_flight`) as acknowledged ones do.
            self.pop_done_records();
        } else if self.tcp.is_some() {
            self.on_tcp_timer(now, stream);
        } else if self.pto_deadline().is_some_and(|t| t <= now) {
            self.pto_count += 1;
            self.stats.counters.ptos += 1;
            self.probes_due = PTO_PROBES;
        }
        self.send_ready(now, stream, out);
        self.arm(now, stream, events);
    }

    /// Handles an ACK frame arriving at `now`.
    pub fn on_ack(
        &mut self,
        now: u64,
        frame: &AckFrame,
        stream: &mut SendStream,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        let Some(largest) = frame.largest() else {
            return;
        };
        if self.closed {
            return;
        }
        let prior_in_flight = self.in_flight;
        self.collect_acked(largest, frame);
        if self.scratch_acked.is_empty() {
            return;
        }
        let largest_newly_acked = self.scratch_acked.contains(&largest);
        if largest_newly_acked {
            self.take_rtt_sample(now, largest, frame);
        }
        let (newest, acked_bytes) = self.mark_acked(now);
        // The oldest unresolved packet was acknowledged: TCP's cumulative ACK moved.
        let advanced = self
            .records
            .front()
            .is_some_and(|r| r.outcome == Outcome::Acked);
        self.detect_lost(now, stream);
        let rate_sample = self.rate.generate_sample(self.rtt.min());
        let one_way_delay =
            (self.cfg.receive_timestamps && largest_newly_acked).then(|| OneWayDelaySample {
                packet_number: largest,
                sent_time: Instant::from_nanos(self.record(largest).sent_ns),
                receive_time: Instant::from_nanos(frame.largest_received_ns),
            });
        let acked = self.scratch_acked.len() as u64;
        let event = AckEvent {
            acked_bytes,
            acked_packets: acked,
            largest_acked_sent_time: Instant::from_nanos(newest.sent_ns),
            rtt_sample: largest_newly_acked.then(|| self.rtt.latest()).flatten(),
            ack_delay: largest_newly_acked.then(|| self.reported_ack_delay(frame)),
            min_rtt: self.rtt.min(),
            smoothed_rtt: self.rtt.smoothed(),
            rate: rate_sample,
            delivered: self.rate.delivered(),
            prior_in_flight,
            in_flight: self.in_flight,
            app_limited: rate_sample.map_or(newest.snapshot.is_app_limited, |r| r.is_app_limited),
            one_way_delay,
        };
        self.cc.on_ack(Instant::from_nanos(now), &event);
        self.pto_count = 0;
        self.pop_done_records();
        if self.tcp.is_some() {
            self.on_tcp_ack(now, (acked_bytes, advanced), stream);
        }
        self.check_finished(now, stream);
        self.send_ready(now, stream, out);
        self.arm(now, stream, events);
    }

    fn record(&self, pn: u64) -> &Record {
        &self.records[(pn - self.base_pn) as usize]
    }

    fn record_mut(&mut self, pn: u64) -> &mut Record {
        &mut self.records[(pn - self.base_pn) as usize]
    }

    /// Fills `scratch_acked` with the outstanding packets `frame` acknowledges, and records
    /// newly skipped packets as holes.
    fn collect_acked(&mut self, largest: u64, frame: &AckFrame) {
        self.scratch_acked.clear();
        let largest = largest.min(self.next_pn.saturating_sub(1));
        let from = self.largest_acked.map_or(0, |l| l + 1).max(self.base_pn);
        if self.largest_acked.is_none_or(|l| largest > l) {
            for pn in from..=largest {
                if self.record(pn).outcome != Outcome::Outstanding {
                    continue;
                }
                if frame.contains(pn) {
                    self.scratch_acked.push(pn);
                } else {
                    self.holes.push(pn);
                }
            }
            self.largest_acked = Some(largest);
        }
        let acked = &mut self.scratch_acked;
        self.holes.retain(|&pn| {
            let hit = pn < from && frame.contains(pn);
            if hit {
                acked.push(pn);
            }
            !hit
        });
    }

    /// RFC 9002 §5.3: the peer's ACK delay, limited to max_ack_delay; none for TCP, whose
    /// ACKs do not carry it (RFC 6298 takes samples whole).
    fn reported_ack_delay(&self, frame: &AckFrame) -> Duration {
        if self.tcp.is_some() {
            return Duration::ZERO;
        }
        Duration::from_nanos(frame.ack_delay_ns).min(self.cfg.max_ack_delay)
    }

    fn take_rtt_sample(&mut self, now: u64, largest: u64, frame: &AckFrame) {
        let latest = Duration::from_nanos(now - self.record(largest).sent_ns);
        self.rtt.on_sample(latest, self.reported_ack_delay(frame));
        self.first_rtt_sample_ns.get_or_insert(now);
        let ns = duration_nanos(latest);
        self.stats.max_rtt_ns = self.stats.max_rtt_ns.max(ns);
        if self.measuring {
            self.stats.rtt.record(ns);
        }
    }

    /// Marks the collected packets acknowledged; returns the newest of them and their bytes.
    fn mark_acked(&mut self, now: u64) -> (Record, u64) {
        let mut newest: Option<Record> = None;
        let mut bytes = 0;
        let acked = std::mem::take(&mut self.scratch_acked);
        for &pn in &acked {
            let rec = self.record_mut(pn);
            rec.outcome = Outcome::Acked;
            let rec = *rec;
            self.in_flight -= u64::from(rec.size);
            self.guarding -= u32::from(rec.guards);
            bytes += u64::from(rec.size);
            self.stats.counters.bytes_acked += u64::from(rec.len);
            self.rate.on_packet_acked(
                Instant::from_nanos(now),
                u64::from(rec.size),
                Instant::from_nanos(rec.sent_ns),
                &rec.snapshot,
            );
            if newest.is_none_or(|n| rec.sent_ns >= n.sent_ns) {
                newest = Some(rec);
            }
        }
        self.scratch_acked = acked;
        (newest.unwrap_or(self.records[0]), bytes)
    }

    /// RFC 9002 §6.1: declares lost the holes past the packet or time threshold and reports
    /// them to the controller.
    fn detect_lost(&mut self, now: u64, stream: &mut SendStream) {
        self.loss_time_ns = None;
        let Some(largest) = self.largest_acked else {
            return;
        };
        let loss_delay = match &self.tcp {
            None => duration_nanos(self.rtt.loss_delay()),
            Some(tcp) => tcp.loss_delay(&self.rtt).map_or(u64::MAX, duration_nanos),
        };
        let retx_wait = self
            .tcp
            .as_ref()
            .is_some_and(|t| t.retransmissions_wait_for_timeout());
        let mut loss_time: Option<u64> = None;
        let lost = &mut self.scratch_lost;
        lost.clear();
        let (records, base) = (&self.records, self.base_pn);
        self.holes.retain(|&pn| {
            let record = &records[(pn - base) as usize];
            // RFC 9002 §6.1.1 (packet threshold) and §6.1.2 (time threshold); a resent packet
            // that TCP without RACK leaves to the timeout is never past either.
            let due = record.sent_ns.saturating_add(loss_delay);
            let threshold = !(retx_wait && record.retx);
            if threshold && (largest >= pn + PACKET_THRESHOLD || due <= now) {
                lost.push(pn);
                false
            } else {
                if due != u64::MAX {
                    loss_time = Some(loss_time.map_or(due, |t| t.min(due)));
                }
                true
            }
        });
        self.loss_time_ns = loss_time;
        if !self.scratch_lost.is_empty() {
            self.on_lost(now, stream, false);
        }
    }

    /// Declares lost the packets in `scratch_lost` and reports them: as a retransmission
    /// timeout if `timeout`, else as a loss (or QUIC's persistent congestion).
    fn on_lost(&mut self, now: u64, stream: &mut SendStream, timeout: bool) {
        let prior_in_flight = self.in_flight;
        let lost = std::mem::take(&mut self.scratch_lost);
        let (mut bytes, mut newest_sent) = (0, 0);
        for &pn in &lost {
            let rec = self.record_mut(pn);
            rec.outcome = Outcome::Lost;
            let rec = *rec;
            self.in_flight -= u64::from(rec.size);
            self.guarding -= u32::from(rec.guards);
            bytes += u64::from(rec.size);
            newest_sent = newest_sent.max(rec.sent_ns);
            if rec.in_window {
                self.stats.window_lost += 1;
            }
            self.rate.on_packet_lost(u64::from(rec.size));
            stream.resend(rec.offset, rec.len);
        }
        self.stats.counters.packets_lost += lost.len() as u64;
        if !lost.is_empty() {
            self.count_loss_event(now, newest_sent);
        }
        let persistent = timeout || (self.tcp.is_none() && self.is_persistent_congestion(&lost));
        if persistent {
            self.stats.counters.persistent_congestion += 1;
        }
        if persistent && !timeout {
            self.rtt.on_persistent_congestion();
        }
        let event = CongestionEvent {
            kind: if persistent {
                CongestionKind::PersistentCongestion
            } else {
                CongestionKind::Loss
            },
            lost_bytes: bytes,
            lost_packets: lost.len() as u64,
            largest_sent_time: Instant::from_nanos(newest_sent),
            prior_in_flight,
            in_flight: self.in_flight,
        };
        self.scratch_lost = lost;
        // RFC 5681 §3.1: a timeout repeated with no ACK of new data between keeps ssthresh,
        // and cwnd is already the loss window: the controller hears only the first.
        if !self
            .tcp
            .as_ref()
            .is_some_and(|t| timeout && t.repeated_timeout())
        {
            self.cc.on_congestion(Instant::from_nanos(now), &event);
        }
        if !persistent && self.tcp.is_some() {
            self.enter_tcp_recovery(stream);
        }
    }

    /// A congestion event for the metrics: losses of a packet sent after the previous event
    /// began (one per RFC 9002 recovery period, whatever the controller does with it).
    fn count_loss_event(&mut self, now: u64, newest_lost_sent_ns: u64) {
        if self.loss_episodes.begins(now, newest_lost_sent_ns) && self.measuring {
            self.stats.counters.loss_events += 1;
            self.stats.loss_events.record(now);
        }
    }

    /// RFC 9002 §7.6.2: lost packets, all sent after the first RTT sample, spanning more than
    /// the persistent-congestion duration with none acknowledged in between. A run of lost
    /// packet numbers in this pass extends back over packets declared lost in earlier passes.
    fn is_persistent_congestion(&self, lost: &[u64]) -> bool {
        let (Some(first_sample), Some(srtt)) = (self.first_rtt_sample_ns, self.rtt.smoothed())
        else {
            return false;
        };
        let duration = (srtt + (self.rtt.var() * 4).max(GRANULARITY) + self.cfg.max_ack_delay)
            * PERSISTENT_CONGESTION_THRESHOLD;
        let duration = duration_nanos(duration);
        let mut run_start: Option<u64> = None;
        for (i, &pn) in lost.iter().enumerate() {
            if i == 0 || lost[i - 1] + 1 != pn {
                run_start = self.lost_run_start(pn, first_sample);
            }
            let sent = self.record(pn).sent_ns;
            if run_start.is_some_and(|s| sent > first_sample && sent - s > duration) {
                return true;
            }
        }
        false
    }

    /// Send time of the earliest packet in the run of lost packets that ends at `pn`, counting
    /// only packets sent after `first_sample`.
    fn lost_run_start(&self, pn: u64, first_sample: u64) -> Option<u64> {
        let eligible = |p: u64| {
            let r = self.record(p);
            r.outcome == Outcome::Lost && r.sent_ns > first_sample
        };
        if !eligible(pn) {
            return None;
        }
        let mut p = pn;
        while p > self.base_pn && eligible(p - 1) {
            p -= 1;
        }
        Some(self.record(p).sent_ns)
    }

    fn pop_done_records(&mut self) {
        while self
            .records
            .front()
            .is_some_and(|r| r.outcome != Outcome::Outstanding)
        {
            self.records.pop_front();
            self.base_pn += 1;
        }
    }

    /// The subflow is finished once the stream has nothing more for it and nothing it sent is
    /// outstanding.
    fn check_finished(&mut self, now: u64, stream: &SendStream) {
        if self.started && self.finished_ns.is_none() && stream.exhausted() && self.in_flight == 0 {
            self.finished_ns = Some(now);
            self.loss_time_ns = None;
        }
    }

    /// The next of TCP's timers, with [`LossRecovery::Tcp`]: the tail-loss probe or the
    /// retransmission timeout.
    fn tcp_expiry(&self) -> Option<(u64, Expiry)> {
        let tcp = self.tcp.as_ref()?;
        let one_in_flight = self.in_flight <= u64::from(self.cfg.packet_size);
        tcp.next_expiry(&self.rtt, self.last_sent_ns, one_in_flight)
    }

    /// TCP's timer at `now`: the tail-loss probe (RFC 8985 §7.3: one packet, whatever the
    /// window) or the retransmission timeout.
    fn on_tcp_timer(&mut self, now: u64, stream: &mut SendStream) {
        match self.tcp_expiry() {
            Some((at, Expiry::Probe)) if at <= now => {
                if let Some(tcp) = &mut self.tcp {
                    tcp.on_probe();
                }
                self.stats.counters.ptos += 1;
                self.probes_due = 1;
            }
            Some((at, Expiry::Timeout)) if at <= now => self.on_timeout(now, stream),
            _ => {}
        }
    }

    /// The retransmission timeout (RFC 6298 (5.4)-(5.6)): every packet in flight is lost
    /// (Linux's `tcp_enter_loss`; ns-3 resends from the first unacknowledged byte), the
    /// controller hears a timeout (RFC 5681 §3.1: the loss window), the timer backs off.
    fn on_timeout(&mut self, now: u64, stream: &mut SendStream) {
        let mut lost = std::mem::take(&mut self.scratch_lost);
        lost.clear();
        let records = self.records.iter().zip(self.base_pn..);
        lost.extend(
            records
                .filter(|(r, _)| r.outcome == Outcome::Outstanding)
                .map(|(_, pn)| pn),
        );
        self.scratch_lost = lost;
        self.holes.clear();
        self.loss_time_ns = None;
        if let Some(tcp) = &mut self.tcp {
            tcp.on_timeout();
        }
        self.on_lost(now, stream, true);
        self.pop_done_records();
    }

    /// A TCP recovery episode begins at a loss outside one (RFC 6675 §5, RFC 6937 §3.1),
    /// after the controller reduced its window. PRR paces it unless the controller sets its
    /// own pacing rate (BBR sets its window in recovery itself, as through Linux's
    /// `cong_control` hook). Entered by the loss timer rather than an ACK, it still lets the
    /// fast retransmit out (Linux `tcp_rack_reo_timeout`).
    fn enter_tcp_recovery(&mut self, stream: &SendStream) {
        let paced = self.cc.pacing_rate().is_none();
        let Some(tcp) = self.tcp.as_deref_mut() else {
            return;
        };
        if tcp.in_recovery() {
            return;
        }
        // RFC 6937 §3.1: RecoverFS = snd.nxt - snd.una, the bytes from the first packet not
        // acknowledged on.
        let unacked = self
            .records
            .iter()
            .skip_while(|r| r.outcome == Outcome::Acked);
        let recover_fs = unacked.map(|r| u64::from(r.size)).sum();
        let point = (stream.sent_up_to(), self.next_pn - 1);
        tcp.enter_recovery(point, recover_fs, paced);
        self.prr_step(0);
    }

    /// TCP after an ACK that delivered `delivered` bytes, `advanced` if it moved the
    /// cumulative point: the timer restarts, the episode ends, or PRR sets what may be sent
    /// until the next ACK.
    fn on_tcp_ack(&mut self, now: u64, (delivered, advanced): (u64, bool), stream: &SendStream) {
        let Some(tcp) = self.tcp.as_deref_mut() else {
            return;
        };
        tcp.on_new_ack(now, advanced, self.in_flight > 0 || stream.resending());
        // RFC 6675 §5: the episode ends when the cumulative ACK covers the recovery point:
        // every packet sent before it is resolved, and none of the data below the point waits
        // or is in flight again.
        let covered = |(point, last_pn): (u64, u64)| {
            self.base_pn > last_pn && self.guarding == 0 && !stream.resending_below(point)
        };
        if tcp.recovery_point().is_some_and(covered) {
            tcp.exit_recovery();
        }
        self.prr_step(delivered);
    }

    /// PRR's step in a TCP episode after `delivered` bytes reached the receiver: the
    /// allowance until the next ACK, from the bytes in flight and the controller's ssthresh
    /// (its cwnd when it has none).
    fn prr_step(&mut self, delivered: u64) {
        let ssthresh = self.cc.ssthresh().unwrap_or_else(|| self.cc.cwnd());
        let (pipe, mss) = (self.in_flight, u64::from(self.cfg.packet_size));
        if let Some(tcp) = self.tcp.as_deref_mut() {
            tcp.on_recovery_ack(delivered, pipe, ssthresh, mss);
        }
    }

    /// QUIC's probe timeout (RFC 9002 §6.2.1), backed off.
    fn pto_deadline(&self) -> Option<u64> {
        if self.in_flight == 0 || self.tcp.is_some() {
            return None;
        }
        let base = duration_nanos(self.rtt.pto_base(self.cfg.max_ack_delay));
        Some(self.last_sent_ns + (base << self.pto_count.min(20)))
    }

    /// A probe's chunk: new or lost data if there is any, else the oldest outstanding data.
    fn probe_chunk(&mut self, now: u64, stream: &mut SendStream) -> Option<(u64, u32, bool)> {
        stream.next_chunk(now, self.cfg.payload()).or_else(|| {
            self.records
                .iter()
                .find(|r| r.outcome == Outcome::Outstanding)
                .map(|r| (r.offset, r.len, true))
        })
    }

    /// Sends whatever cwnd, pacing and the application allow at `now`.
    fn send_ready(&mut self, now: u64, stream: &mut SendStream, out: &mut Vec<Packet>) {
        if !self.started || self.finished_ns.is_some() {
            return;
        }
        while self.probes_due > 0 {
            self.probes_due -= 1;
            if let Some(chunk) = self.probe_chunk(now, stream) {
                self.send_chunk(now, chunk, out);
            }
        }
        self.burst_cut = false;
        for _ in 0..MAX_SENDS_PER_EVENT {
            if !self.has_room() {
                return;
            }
            if self.cfg.pacing && now < self.next_send_ns {
                return;
            }
            let Some(chunk) = stream.next_chunk(now, self.cfg.payload()) else {
                self.rate.on_app_limited(self.in_flight);
                self.cc.on_app_limited(Instant::from_nanos(now));
                if self.in_flight == 0 && !self.idle {
                    self.idle = true;
                    self.cc.on_idle(Instant::from_nanos(now));
                }
                return;
            };
            self.send_chunk(now, chunk, out);
        }
        self.burst_cut = true;
    }

    /// Whether the window allows one more full packet: the controller's cwnd, and at most
    /// `max_in_flight` packets from the oldest unresolved one on (as a receive window bounds
    /// the data beyond the cumulative ACK), whatever the controller answers.
    fn has_room(&self) -> bool {
        let allowance = self.tcp.as_ref().and_then(|t| t.allowance());
        let window = allowance.unwrap_or_else(|| self.cc.cwnd());
        self.in_flight + u64::from(self.cfg.packet_size) <= window
            && self.records.len() < self.cfg.max_in_flight as usize
    }

    fn send_chunk(
        &mut self,
        now: u64,
        (offset, len, retx): (u64, u32, bool),
        out: &mut Vec<Packet>,
    ) {
        let size = len + self.cfg.header_size;
        self.idle = false;
        let recovery_point = self.tcp.as_ref().and_then(|t| t.recovery_point());
        let guards = retx && recovery_point.is_some_and(|(point, _)| offset < point);
        let pn = self.next_pn;
        self.next_pn += 1;
        let snapshot =
            self.rate
                .on_packet_sent(Instant::from_nanos(now), self.in_flight, u64::from(size));
        self.in_flight += u64::from(size);
        self.records.push_back(Record {
            sent_ns: now,
            offset,
            len,
            size,
            outcome: Outcome::Outstanding,
            in_window: self.measuring,
            retx,
            guards,
            snapshot,
        });
        self.guarding += u32::from(guards);
        if let Some(tcp) = &mut self.tcp {
            tcp.on_sent(now, u64::from(size));
        }
        self.cc.on_sent(
            Instant::from_nanos(now),
            &SentPacket {
                packet_number: pn,
                bytes: u64::from(size),
                is_retransmission: retx,
                in_flight: self.in_flight,
                snapshot,
            },
        );
        self.last_sent_ns = now;
        let c = &mut self.stats.counters;
        c.packets_sent += 1;
        c.bytes_sent += u64::from(len);
        if retx {
            c.bytes_retransmitted += u64::from(len);
        }
        if let Some(gap) = self.pacing_gap_ns(size) {
            self.next_send_ns = self.next_send_ns.max(now) + gap;
        }
        let ack_floor = self.records.front().map_or(pn, |_| self.base_pn);
        out.push(Packet {
            flow: self.flow,
            size,
            hop: 0,
            reverse: false,
            number: pn,
            sent_ns: now,
            body: Body::Data {
                offset,
                len,
                ack_floor,
            },
        });
    }

    /// Arms the timer for the earliest of: loss time, PTO, pacing release, application data.
    fn arm(&mut self, now: u64, stream: &SendStream, events: &mut EventQueue) {
        if !self.started || self.finished_ns.is_some() {
            return;
        }
        let mut deadline = match self.tcp_expiry() {
            None => self.loss_time_ns.or_else(|| self.pto_deadline()),
            Some((at, _)) => Some(self.loss_time_ns.map_or(at, |t| t.min(at))),
        };
        if self.burst_cut {
            deadline = Some(now);
        } else if self.has_room() {
            let wake = if stream.has_data(now, self.cfg.payload()) {
                (self.cfg.pacing && self.next_send_ns > now).then_some(self.next_send_ns)
            } else {
                stream.next_data_ns(self.cfg.payload())
            };
            if let Some(w) = wake {
                deadline = Some(deadline.map_or(w, |d| d.min(w)));
            }
        }
        if let Some(d) = deadline {
            self.timer
                .arm(events, d.max(now), Target::Sender(self.flow));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Application;
    use crate::config::AppConfig;
    use crate::streams::seeded;
    use kleinrock_cc::ControllerState;

    /// A controller whose window never closes and which sets no pacing rate.
    struct Unlimited;

    impl Controller for Unlimited {
        fn on_ack(&mut self, _now: Instant, _ack: &AckEvent) {}
        fn on_congestion(&mut self, _now: Instant, _event: &CongestionEvent) {}
        fn cwnd(&self) -> u64 {
            u64::MAX / 2
        }
        fn state(&self) -> ControllerState {
            ControllerState::default()
        }
    }

    /// An unpaced sender of an endless bulk transfer under [`Unlimited`], bounded to
    /// `max_in_flight` packets, started at 0; returns the packets of each event at time 0.
    fn bursts_at_start(max_in_flight: u32) -> Vec<usize> {
        let cfg = TransportConfig {
            pacing: false,
            max_in_flight,
            ..TransportConfig::default()
        };
        let mut sender = Sender::new(0, Box::new(Unlimited), cfg, seeded(1, 0));
        let mut stream = SendStream::new(Application::new(AppConfig::Bulk { bytes: None }));
        stream.start(0);
        let (mut out, mut events) = (Vec::new(), EventQueue::new());
        sender.start(0, &mut stream, &mut out, &mut events);
        let mut bursts = vec![out.len()];
        while let Some((0, Target::Sender(0))) = events.pop() {
            out.clear();
            sender.on_timer(0, &mut stream, &mut out, &mut events);
            bursts.push(out.len());
        }
        bursts
    }

    #[test]
    fn one_event_sends_a_bounded_burst_and_the_window_bounds_packets_in_flight() {
        let bursts = bursts_at_start(5_000);
        // Four full bursts, then the rest of the window; the next event is the PTO, not at 0.
        assert_eq!(bursts, [1024, 1024, 1024, 1024, 904]);
    }

    #[test]
    fn the_default_window_bound_holds_whatever_the_controller_answers() {
        let bursts = bursts_at_start(TransportConfig::default().max_in_flight);
        assert!(bursts.iter().all(|&b| b <= MAX_SENDS_PER_EVENT as usize));
        let sent: usize = bursts.iter().sum();
        assert_eq!(sent, crate::config::DEFAULT_MAX_IN_FLIGHT as usize);
    }
}
