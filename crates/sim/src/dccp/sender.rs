//! The sending side of the DCCP-like transport (RFC 4340, with the congestion control of a
//! CCID): the application hands over packets, which wait in a bounded send queue (Linux
//! `tx_qlen`) while the window is closed; a packet that finds the queue full is dropped at the
//! sender. Nothing is retransmitted. Every data packet gets the next sequence number; ACKs
//! carry Ack Vectors, from which packets are acknowledged and, once `NUMDUPACK` later packets
//! are, declared lost (RFC 4341 §5). A retransmission timeout (srtt + max(4 rttvar, 200 ms),
//! initial 3 s, doubling up to 64 s, as Linux's CCID 2) forgets every packet in flight.
//!
//! The packets come from the flow's application, or, for a subflow of a multipath tunnel, from
//! the tunnel's scheduler, each carrying a tunnel packet of its own size.

use super::ackvec::{AckVector, State};
use crate::app::Application;
use crate::config::{AppConfig, DccpConfig};
use crate::events::{EventQueue, LazyTimer, Target};
use crate::hist::Histogram;
use crate::packet::{Body, Packet, NOT_CARRIED};
use crate::sender::Outcome;
use crate::stats::{EventSpan, FlowCounters, LossEpisodes};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::estimators::delivery_rate::DeliveryRateSampler;
use kleinrock_cc::estimators::rtt::RttEstimator;
use kleinrock_cc::{
    AckEvent, CongestionEvent, CongestionKind, Controller, DeliverySnapshot, Instant, Rate,
    SentPacket,
};
use std::collections::VecDeque;
use std::time::Duration;

/// RFC 4341 §5: a packet is lost once this many packets sent after it are acknowledged.
const NUMDUPACK: u64 = 3;
/// RFC 4341 §5 with Linux's `tcp_rto_min`: the least the RTO adds to the smoothed RTT.
const RTO_MIN_VAR: Duration = Duration::from_millis(200);
/// RFC 4341 §5: the RTO before any RTT sample.
const RTO_INITIAL: Duration = Duration::from_secs(3);
/// Linux ccid2.c `DCCP_RTO_MAX`: the back-off stops here.
const RTO_MAX: Duration = Duration::from_secs(64);
/// Packets one event may send (the reliable sender's bound, for the same reason).
const MAX_SENDS_PER_EVENT: u32 = 1024;

#[derive(Clone, Copy, Debug)]
struct Record {
    sent_ns: u64,
    outcome: Outcome,
    snapshot: DeliverySnapshot,
}

/// What the sender counted and measured.
#[derive(Debug, Default)]
pub struct DccpSenderStats {
    /// Counters (sender's part).
    pub counters: FlowCounters,
    /// RTT samples taken inside the measurement window, ns.
    pub rtt: Histogram,
    /// Congestion events inside the window.
    pub loss_events: EventSpan,
    /// Largest RTT sample over the run, ns.
    pub max_rtt_ns: u64,
}

/// Where a sender's packets come from.
enum Feed {
    /// The flow's own application.
    App {
        app: Application,
        /// The application writes whenever the queue has room (bulk) rather than at its rate.
        bulk: bool,
        /// Application bytes produced so far (whole packets).
        produced: u64,
    },
    /// A tunnel's scheduler, through [`DccpSender::push`].
    Tunnel,
}

/// A packet waiting in the send queue.
#[derive(Clone, Copy, Debug)]
struct Pending {
    /// When it was handed over, ns.
    app_ns: u64,
    /// Bytes on the wire.
    size: u32,
    /// The tunnel packet it carries, or [`NOT_CARRIED`].
    carried: u32,
}

/// The sender of one DCCP flow.
pub struct DccpSender {
    flow: u32,
    cc: Box<dyn Controller>,
    cfg: DccpConfig,
    feed: Feed,
    /// Application bytes of the packets the controller was asked to send, each time it was
    /// asked (Linux ccid5.c `bytes_att`).
    attempted: u64,
    /// The packets handed over and not yet sent, oldest first.
    queue: VecDeque<Pending>,
    rtt: RttEstimator,
    rate: DeliveryRateSampler,
    records: VecDeque<Record>,
    base_seq: u64,
    next_seq: u64,
    pipe: u64,
    rto: Duration,
    rto_deadline: Option<u64>,
    next_send_ns: u64,
    /// When the latest packet left.
    last_send_ns: Option<u64>,
    /// Greatest Acknowledgement Number received, for the receiver's pruning.
    ack_of_ack: Option<u64>,
    loss_episodes: LossEpisodes,
    started: bool,
    idle: bool,
    measuring: bool,
    burst_cut: bool,
    scratch_acked: Vec<u64>,
    scratch_lost: Vec<u64>,
    /// The sender's timer (application, pacing, RTO).
    pub timer: LazyTimer,
    /// Measurements.
    pub stats: DccpSenderStats,
}

impl DccpSender {
    /// A sender for flow `flow` under `cc`, its application `app`.
    pub fn new(flow: u32, cc: Box<dyn Controller>, cfg: DccpConfig, app: AppConfig) -> Self {
        let feed = Feed::App {
            app: Application::new(app),
            bulk: matches!(app, AppConfig::Bulk { .. }),
            produced: 0,
        };
        Self::with_feed(flow, cc, cfg, feed)
    }

    /// A sender for subflow `flow` of a tunnel, under `cc`: the tunnel hands it its packets.
    pub fn for_tunnel(flow: u32, cc: Box<dyn Controller>, cfg: DccpConfig) -> Self {
        DccpSender {
            started: true,
            ..Self::with_feed(flow, cc, cfg, Feed::Tunnel)
        }
    }

    fn with_feed(flow: u32, cc: Box<dyn Controller>, cfg: DccpConfig, feed: Feed) -> Self {
        DccpSender {
            flow,
            cc,
            cfg,
            feed,
            attempted: 0,
            queue: VecDeque::new(),
            rtt: RttEstimator::new(),
            rate: DeliveryRateSampler::new(),
            records: VecDeque::new(),
            base_seq: 0,
            next_seq: 0,
            pipe: 0,
            rto: RTO_INITIAL,
            rto_deadline: None,
            next_send_ns: 0,
            last_send_ns: None,
            ack_of_ack: None,
            loss_episodes: LossEpisodes::default(),
            started: false,
            idle: false,
            measuring: false,
            burst_cut: false,
            scratch_acked: Vec::new(),
            scratch_lost: Vec::new(),
            timer: LazyTimer::default(),
            stats: DccpSenderStats::default(),
        }
    }

    /// The application starts at `now`.
    pub fn start(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.started = true;
        if let Feed::App { app, .. } = &mut self.feed {
            app.start(now);
        }
        self.run(now, out, events);
    }

    /// The application stops offering packets (those queued still go).
    pub fn stop(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.take_from_app(now);
        if let Feed::App { app, produced, .. } = &mut self.feed {
            app.stop(*produced);
        }
        self.run(now, out, events);
    }

    /// The tunnel hands over a packet of `size` bytes on the wire carrying tunnel packet
    /// `carried`, which entered the tunnel at `entered_ns`, and the sender sends what its window
    /// allows. `false`, and nothing kept, when the send queue is full (the packet is counted as
    /// dropped there).
    pub fn push(
        &mut self,
        now: u64,
        pending: (u64, u32, u32),
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) -> bool {
        let (entered_ns, size, carried) = pending;
        self.stats.counters.app_packets += 1;
        if self.queue.len() >= self.cfg.tx_qlen as usize {
            self.stats.counters.send_queue_drops += 1;
            return false;
        }
        self.queue.push_back(Pending {
            app_ns: entered_ns,
            size,
            carried,
        });
        self.run(now, out, events);
        true
    }

    /// The window in packets: the controller's, or its byte window in full packets.
    pub fn cwnd_packets(&self) -> u64 {
        self.cc
            .cwnd_packets()
            .unwrap_or(self.cc.cwnd() / u64::from(self.cfg.packet_size))
    }

    /// Statistics before this call are discarded from now on.
    pub fn start_measuring(&mut self) {
        self.measuring = true;
    }

    /// The controller, for traces.
    pub fn controller(&self) -> &dyn Controller {
        self.cc.as_ref()
    }

    /// RTT estimates.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Packets in flight ("pipe", RFC 4341 §5).
    pub fn pipe(&self) -> u64 {
        self.pipe
    }

    /// Bytes in flight.
    pub fn in_flight(&self) -> u64 {
        self.pipe * u64::from(self.cfg.packet_size)
    }

    /// Whether packets sent now are marked application-limited (the delivery-rate sampler's
    /// bubble, draft-cheng-iccrg-delivery-rate-estimation §3.4).
    pub fn app_limited(&self) -> bool {
        self.rate.is_app_limited()
    }

    /// Packets waiting in the send queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// The rate the host paces at, when it paces and the controller sets one.
    pub fn pacing_rate(&self) -> Option<Rate> {
        self.cfg.pacing.then(|| self.cc.pacing_rate()).flatten()
    }

    /// The Ack Ratio the data packets ask for.
    pub fn ack_ratio(&self) -> u64 {
        self.cc.ack_ratio().unwrap_or(self.cfg.ack_ratio).max(1)
    }

    /// Whether the application has stopped, everything it offered left the queue, and nothing
    /// is in flight.
    pub fn finished(&self) -> bool {
        let exhausted = match &self.feed {
            Feed::App { app, produced, .. } => app.exhausted(*produced),
            Feed::Tunnel => false,
        };
        self.started && exhausted && self.queue.is_empty() && self.pipe == 0
    }

    /// The sender's timer fires at `now`.
    pub fn on_timer(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        if !self.timer.fire(now) {
            return;
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.on_rto(now);
        }
        self.run(now, out, events);
    }

    /// Takes what the application produced, sends what the window allows, arms the timer.
    fn run(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        if !self.started {
            return;
        }
        self.take_from_app(now);
        self.send_ready(now, out);
        self.arm(now, events);
    }

    /// Moves the packets the application produced by `now` into the send queue, dropping
    /// those that find it full (a bulk application only fills it: it writes when there is
    /// room, as a blocking socket does).
    fn take_from_app(&mut self, now: u64) {
        let Feed::App {
            app,
            bulk,
            produced,
        } = &mut self.feed
        else {
            return;
        };
        let payload = self.cfg.payload();
        loop {
            if *bulk && self.queue.len() >= self.cfg.tx_qlen as usize {
                return;
            }
            let len = app.available(now, *produced, payload);
            if len == 0 {
                return;
            }
            *produced += u64::from(len);
            self.stats.counters.app_packets += 1;
            if self.queue.len() < self.cfg.tx_qlen as usize {
                self.queue.push_back(Pending {
                    app_ns: now,
                    size: self.cfg.packet_size,
                    carried: NOT_CARRIED,
                });
            } else {
                self.stats.counters.send_queue_drops += 1;
            }
        }
    }

    /// Whether the window allows one more packet: the controller's window (in packets for a
    /// CCID, else in bytes) and the transport's own bound.
    fn has_room(&self) -> bool {
        let open = match self.cc.cwnd_packets() {
            Some(cwnd) => self.pipe < cwnd,
            None => self.in_flight() + u64::from(self.cfg.packet_size) <= self.cc.cwnd(),
        };
        open && self.records.len() < self.cfg.max_in_flight as usize
    }

    fn send_ready(&mut self, now: u64, out: &mut Vec<Packet>) {
        self.burst_cut = false;
        for _ in 0..MAX_SENDS_PER_EVENT {
            let Some(&head) = self.queue.front() else {
                if self.pipe == 0 && !self.idle {
                    self.idle = true;
                    self.cc.on_idle(Instant::from_nanos(now));
                }
                return;
            };
            let payload = u64::from(head.size - self.cfg.header_size);
            if !self.has_room() {
                // Linux DCCP asks the CCID about the head packet and is told to wait: one
                // more attempt than packets sent (ccid5.c ccid5_hc_tx_send_packet).
                self.attempted += payload;
                return;
            }
            if self.pacing_rate().is_some() && now < self.next_send_ns {
                return;
            }
            self.queue.pop_front();
            self.check_app_limited(now, payload);
            self.attempted += payload;
            self.send(now, head, out);
            self.take_from_app(now);
        }
        self.burst_cut = true;
    }

    /// The application-limited test of Linux's DCCP rate sampler (ccid5.c
    /// `dccp_rate_check_app_limited`, its copy of tcp_rate.c's), as a packet leaves: it is the
    /// only one the socket holds, the window has room, and every packet the CCID was asked
    /// about went out (fewer than a packet's bytes attempted and not sent). Once the window has
    /// held a packet back, attempts stay ahead of sends and the flow is never marked again.
    /// "The only one the socket holds" is Linux's `sk_wmem_alloc <= truesize`: a packet sent
    /// at the same instant is still in the host (its memory is freed when the NIC has sent
    /// it), so only the first packet of a burst can be marked.
    fn check_app_limited(&mut self, now: u64, payload: u64) {
        let sent = self.stats.counters.bytes_sent;
        let alone = self.queue.is_empty() && self.last_send_ns != Some(now);
        if self.attempted - sent < payload && alone && self.has_room() {
            self.rate.on_app_limited(self.in_flight());
            self.cc.on_app_limited(Instant::from_nanos(now));
        }
    }

    fn send(&mut self, now: u64, pending: Pending, out: &mut Vec<Packet>) {
        self.idle = false;
        self.last_send_ns = Some(now);
        let size = u64::from(self.cfg.packet_size);
        let seq = self.next_seq;
        self.next_seq += 1;
        let snapshot = self
            .rate
            .on_packet_sent(Instant::from_nanos(now), self.in_flight(), size);
        self.pipe += 1;
        self.records.push_back(Record {
            sent_ns: now,
            outcome: Outcome::Outstanding,
            snapshot,
        });
        self.cc.on_sent(
            Instant::from_nanos(now),
            &SentPacket {
                packet_number: seq,
                bytes: size,
                is_retransmission: false,
                in_flight: self.in_flight(),
                snapshot,
            },
        );
        let c = &mut self.stats.counters;
        c.packets_sent += 1;
        c.bytes_sent += u64::from(pending.size - self.cfg.header_size);
        if let Some(rate) = self.pacing_rate() {
            let gap = rate.time_for(size).map_or(0, duration_nanos);
            self.next_send_ns = self.next_send_ns.max(now) + gap;
        }
        // Linux ccid2.c: the RTO timer starts with the first packet in flight.
        self.rto_deadline
            .get_or_insert(now + duration_nanos(self.rto));
        out.push(Packet {
            flow: self.flow,
            size: pending.size,
            hop: 0,
            reverse: false,
            number: seq,
            sent_ns: now,
            body: Body::DccpData {
                app_ns: pending.app_ns,
                ack_ratio: self.ack_ratio().min(u64::from(u32::MAX)) as u32,
                ack_of_ack: self.ack_of_ack.unwrap_or(u64::MAX),
                carried: pending.carried,
            },
        });
    }

    /// An ACK with Ack Vector `v` arrives at `now`.
    pub fn on_ack(
        &mut self,
        now: u64,
        v: &AckVector,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        self.ack_of_ack = Some(
            self.ack_of_ack
                .map_or(v.ack_number, |a| a.max(v.ack_number)),
        );
        let prior_in_flight = self.in_flight();
        self.collect_acked(v);
        if !self.scratch_acked.is_empty() {
            self.on_acked(now, v.ack_number, prior_in_flight);
        }
        self.detect_lost(now);
        self.pop_done_records();
        // Linux ccid2.c: the RTO timer restarts on an ACK while packets are in flight.
        self.rto_deadline = (self.pipe > 0).then(|| now + duration_nanos(self.rto));
        self.run(now, out, events);
    }

    /// The outstanding packets the vector reports received.
    fn collect_acked(&mut self, v: &AckVector) {
        self.scratch_acked.clear();
        let (base, next) = (self.base_seq, self.next_seq);
        let records = &self.records;
        let acked = &mut self.scratch_acked;
        v.for_each_run(|first, last, state| {
            if state == State::NotReceived || last < base || first >= next {
                return;
            }
            for seq in first.max(base)..=last.min(next - 1) {
                if records[(seq - base) as usize].outcome == Outcome::Outstanding {
                    acked.push(seq);
                }
            }
        });
        self.scratch_acked.sort_unstable();
    }

    /// Marks the collected packets acknowledged and tells the controller.
    fn on_acked(&mut self, now: u64, ack_number: u64, prior_in_flight: u64) {
        let now_i = Instant::from_nanos(now);
        let size = u64::from(self.cfg.packet_size);
        let mut newest = self.record(self.scratch_acked[0]).sent_ns;
        let mut newest_snapshot = self.record(self.scratch_acked[0]).snapshot;
        for i in 0..self.scratch_acked.len() {
            let seq = self.scratch_acked[i];
            let rec = self.record_mut(seq);
            rec.outcome = Outcome::Acked;
            let rec = *rec;
            self.pipe -= 1;
            self.rate
                .on_packet_acked(now_i, size, Instant::from_nanos(rec.sent_ns), &rec.snapshot);
            if rec.sent_ns >= newest {
                newest = rec.sent_ns;
                newest_snapshot = rec.snapshot;
            }
        }
        // CCID 5 (and this transport): an RTT sample only from the packet whose sequence
        // number is the Acknowledgement Number, when it is newly acknowledged.
        let sample = self
            .scratch_acked
            .binary_search(&ack_number)
            .ok()
            .map(|_| Duration::from_nanos(now - self.record(ack_number).sent_ns));
        if let Some(rtt) = sample {
            self.take_rtt_sample(rtt);
        }
        let rate = self.rate.generate_sample(self.rtt.min());
        let acked = self.scratch_acked.len() as u64;
        let event = AckEvent {
            acked_bytes: acked * size,
            acked_packets: acked,
            largest_acked_sent_time: Instant::from_nanos(newest),
            rtt_sample: sample,
            ack_delay: None,
            min_rtt: self.rtt.min(),
            smoothed_rtt: self.rtt.smoothed(),
            rate,
            delivered: self.rate.delivered(),
            prior_in_flight,
            in_flight: self.in_flight(),
            app_limited: rate.map_or(newest_snapshot.is_app_limited, |r| r.is_app_limited),
            one_way_delay: None,
        };
        self.cc.on_ack(now_i, &event);
    }

    fn take_rtt_sample(&mut self, rtt: Duration) {
        self.rtt.on_sample(rtt, Duration::ZERO);
        let ns = duration_nanos(rtt);
        self.stats.max_rtt_ns = self.stats.max_rtt_ns.max(ns);
        if self.measuring {
            self.stats.rtt.record(ns);
        }
        // RFC 4341 §5 with Linux's floor: RTO = srtt + max(4 rttvar, 200 ms), at most 64 s.
        let srtt = self.rtt.smoothed_or_initial();
        self.rto = (srtt + (self.rtt.var() * 4).max(RTO_MIN_VAR)).min(RTO_MAX);
    }

    /// RFC 4341 §5: an outstanding packet is lost once `NUMDUPACK` packets sent after it are
    /// acknowledged.
    fn detect_lost(&mut self, now: u64) {
        self.scratch_lost.clear();
        let mut acked_above = 0;
        for (i, rec) in self.records.iter().enumerate().rev() {
            match rec.outcome {
                Outcome::Acked => acked_above += 1,
                Outcome::Outstanding if acked_above >= NUMDUPACK => {
                    self.scratch_lost.push(self.base_seq + i as u64);
                }
                _ => {}
            }
        }
        if self.scratch_lost.is_empty() {
            return;
        }
        let prior_in_flight = self.in_flight();
        let size = u64::from(self.cfg.packet_size);
        let mut newest_sent = 0;
        for i in 0..self.scratch_lost.len() {
            let seq = self.scratch_lost[i];
            let rec = self.record_mut(seq);
            rec.outcome = Outcome::Lost;
            newest_sent = newest_sent.max(rec.sent_ns);
            self.pipe -= 1;
            self.rate.on_packet_lost(size);
        }
        let lost = self.scratch_lost.len() as u64;
        self.stats.counters.packets_lost += lost;
        self.count_loss_event(now, newest_sent);
        let event = CongestionEvent {
            kind: CongestionKind::Loss,
            lost_bytes: lost * size,
            lost_packets: lost,
            largest_sent_time: Instant::from_nanos(newest_sent),
            prior_in_flight,
            in_flight: self.in_flight(),
        };
        self.cc.on_congestion(Instant::from_nanos(now), &event);
    }

    /// A congestion event for the metrics: losses of a packet sent after the previous event
    /// began (as the reliable transport counts them).
    fn count_loss_event(&mut self, now: u64, newest_lost_sent_ns: u64) {
        if self.loss_episodes.begins(now, newest_lost_sent_ns) && self.measuring {
            self.stats.counters.loss_events += 1;
            self.stats.loss_events.record(now);
        }
    }

    /// RFC 4341 §5 / Linux ccid2.c `ccid2_hc_tx_rto_expire`: the RTO doubles (at most 64 s)
    /// and every packet in flight is forgotten; the controller then collapses its window.
    fn on_rto(&mut self, now: u64) {
        self.rto = (self.rto * 2).min(RTO_MAX);
        self.rto_deadline = None;
        let prior_in_flight = self.in_flight();
        let forgotten = self.pipe;
        let newest_sent = self.records.back().map_or(now, |r| r.sent_ns);
        self.records.clear();
        self.base_seq = self.next_seq;
        self.pipe = 0;
        self.stats.counters.ptos += 1;
        self.count_loss_event(now, newest_sent);
        let event = CongestionEvent {
            kind: CongestionKind::PersistentCongestion,
            lost_bytes: forgotten * u64::from(self.cfg.packet_size),
            lost_packets: forgotten,
            largest_sent_time: Instant::from_nanos(newest_sent),
            prior_in_flight,
            in_flight: 0,
        };
        self.cc.on_congestion(Instant::from_nanos(now), &event);
    }

    fn record(&self, seq: u64) -> &Record {
        &self.records[(seq - self.base_seq) as usize]
    }

    fn record_mut(&mut self, seq: u64) -> &mut Record {
        &mut self.records[(seq - self.base_seq) as usize]
    }

    fn pop_done_records(&mut self) {
        while self
            .records
            .front()
            .is_some_and(|r| r.outcome != Outcome::Outstanding)
        {
            self.records.pop_front();
            self.base_seq += 1;
        }
    }

    /// Arms the timer for the earliest of: the RTO, a burst's continuation, the pacing
    /// release, the application's next packet.
    fn arm(&mut self, now: u64, events: &mut EventQueue) {
        let mut deadline = self.rto_deadline;
        let mut wake = |t: u64| deadline = Some(deadline.map_or(t, |d| d.min(t)));
        if self.burst_cut {
            wake(now);
        } else if !self.queue.is_empty() && self.has_room() {
            wake(self.next_send_ns.max(now));
        }
        if let Feed::App { app, produced, .. } = &self.feed {
            if let Some(t) = app.next_data_ns(*produced, self.cfg.payload()) {
                wake(t);
            }
        }
        if let Some(d) = deadline {
            self.timer
                .arm(events, d.max(now), Target::Sender(self.flow));
        }
    }
}
