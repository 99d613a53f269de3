//! The adapter that runs any `kleinrock-cc` controller inside noq, and the probe that observes it.
//!
//! This module owns [`CcFactory`] (noq's `ControllerFactory`: one fresh controller from the
//! registry per connection path), [`Adapter`] (noq's `Controller`: it turns noq's per-packet
//! callbacks into the sans-IO [`kleinrock_cc::Controller`] inputs the simulator gives), the
//! [`Clock`] that maps noq's `std::time::Instant` to [`kleinrock_cc::Instant`], the [`CcProbe`]
//! that samples a running controller from outside, and the [`OwdFeed`] hook through which the
//! receive-timestamp layer ([`crate::stamps`]) gives one-way-delay samples.
//!
//! What the adapter does per noq callback (docs/quic.md has the full table):
//!
//! - `on_packet_sent(now, bytes, pn)`: takes a [`DeliverySnapshot`] from the
//!   [`DeliveryRateSampler`], keeps a record (send time, bytes, snapshot) and calls the
//!   controller's `on_sent`.
//! - `on_ack(...)` for each newly acked packet, then `on_end_acks(...)`: one batch, aggregated
//!   into one [`AckEvent`]. noq reports the losses an ACK reveals *after* `on_end_acks`; the
//!   adapter holds the batch's event until the next callback at a different time (or the next
//!   send, ACK, `window()` or `metrics()`), so losses found by an ACK reach the controller before
//!   that ACK, as in RFC 9002's `OnAckReceived` and in the simulator, and the batch's rate sample
//!   counts them.
//! - `on_packet_lost` per packet, then `on_congestion_event`: one [`CongestionEvent`].
//! - `window()` is the controller's `cwnd()`; `metrics().pacing_rate` is its `pacing_rate()`,
//!   which noq's pacer then follows (`None` leaves noq's window-based pacer in charge).

use crate::lock;
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::estimators::delivery_rate::DeliveryRateSampler;
use kleinrock_cc::estimators::rtt::RttEstimator;
use kleinrock_cc::{
    AckEvent, BuildError, CongestionEvent, CongestionKind, Controller, ControllerConfig,
    ControllerState, DeliverySnapshot, Instant, OneWayDelaySample, Params, Rate, RateSample,
    SentPacket,
};
use kleinrock_sim::hist::Histogram;
use noq::congestion::{
    Controller as NoqController, ControllerFactory as NoqControllerFactory, ControllerMetrics,
};
use std::any::Any;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Records older than this many smoothed RTTs (and at least [`PRUNE_MIN_AGE`]) are dropped: noq
/// forgets packets of discarded packet-number spaces without telling the controller.
const PRUNE_RTTS: u32 = 8;
/// The least age of a record that may be pruned.
const PRUNE_MIN_AGE: Duration = Duration::from_secs(2);
/// Most echo reports an [`OwdFeed`] holds between two ACK batches.
const ECHO_QUEUE: usize = 256;
/// The peer's max_ack_delay (noq's default, RFC 9000 §18.2's 25 ms): a hold time beyond it is
/// capped, as RFC 9002 §5.3 caps the reported ACK delay.
const PEER_MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// How far an echoed datagram's send time (taken at the socket, in whole microseconds) may be
/// from the adapter's send time of the ACK's largest packet for its hold time to count as that
/// packet's ACK delay.
const ECHO_MATCH: Duration = Duration::from_micros(200);
/// How often stale records are looked for.
const PRUNE_INTERVAL: Duration = Duration::from_secs(1);

/// Maps the real clock (`std::time::Instant`, what noq passes) to [`kleinrock_cc::Instant`]:
/// nanoseconds since an epoch fixed when the clock is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    epoch: std::time::Instant,
}

impl Clock {
    /// A clock whose epoch is now.
    pub fn starting_now() -> Self {
        Self::from_epoch(std::time::Instant::now())
    }

    /// A clock with the given epoch.
    pub fn from_epoch(epoch: std::time::Instant) -> Self {
        Clock { epoch }
    }

    /// The epoch (kleinrock time zero).
    pub fn epoch(&self) -> std::time::Instant {
        self.epoch
    }

    /// `t` as nanoseconds since the epoch; instants before the epoch map to zero.
    pub fn instant(&self, t: std::time::Instant) -> Instant {
        Instant::from_nanos(duration_nanos(t.saturating_duration_since(self.epoch)))
    }

    /// The current time.
    pub fn now(&self) -> Instant {
        self.instant(std::time::Instant::now())
    }
}

/// What a factory builds: a controller name, its parameters and the shared settings.
#[derive(Debug)]
struct Spec {
    name: String,
    params: Params,
    config: ControllerConfig,
}

impl Spec {
    fn build(&self) -> Result<Box<dyn Controller>, BuildError> {
        kleinrock_cc::build(&self.name, &self.params, &self.config)
    }
}

/// Builds one [`Adapter`] around a fresh registry controller for each noq connection path.
///
/// Cheap to clone; clones share the clock, the probe and the one-way-delay feed. A server
/// gives each connection its own factory ([`CcFactory::for_connection`]), so that each
/// connection's controller has its own feed and probe.
#[derive(Clone, Debug)]
pub struct CcFactory {
    spec: Arc<Spec>,
    clock: Clock,
    probe: CcProbe,
    /// The probe of the factory this one was made from (which follows the controller built
    /// last of all its connections), for a connection's factory.
    parent: Option<CcProbe>,
    owd: OwdFeed,
    /// Called after every ACK and congestion event of its controllers (the window may have
    /// opened), for a sender that hands packets over only while the window has room.
    wake: Option<WakeHook>,
}

/// What a controller calls after every ACK and congestion event ([`CcFactory::waking`]).
#[derive(Clone)]
struct WakeHook(Arc<dyn Fn() + Send + Sync>);

impl fmt::Debug for WakeHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("WakeHook")
    }
}

impl CcFactory {
    /// A factory for the registered controller `name` with `params`; fails like
    /// [`kleinrock_cc::build`] for an unknown name or a bad parameter. The clock's epoch is now.
    pub fn new(name: &str, params: Params, config: ControllerConfig) -> Result<Self, BuildError> {
        let spec = Spec {
            name: name.to_string(),
            params,
            config,
        };
        let info = kleinrock_cc::registry::find(name);
        if info.is_some_and(|i| i.dccp_only) {
            return Err(BuildError::NeedsDccp {
                name: name.to_string(),
            });
        }
        // Build once so every later build (which cannot report an error to noq) succeeds.
        spec.build()?;
        let clock = Clock::starting_now();
        Ok(CcFactory {
            spec: Arc::new(spec),
            clock,
            probe: CcProbe::new(clock),
            parent: None,
            owd: OwdFeed::default(),
            wake: None,
        })
    }

    /// Whether its controller opens subflows of its own ([`Controller::extra_subflows`]):
    /// only a server that gives it a second connection ([`crate::subflows`]) can run it.
    pub fn has_subflows(&self) -> bool {
        kleinrock_cc::registry::find(&self.spec.name).is_some_and(|i| i.subflows)
    }

    /// Fails with [`BuildError::NeedsSubflows`] if the controller opens subflows, for a
    /// sender that cannot give it any.
    pub fn without_subflows(self) -> Result<CcFactory, BuildError> {
        if self.has_subflows() {
            return Err(BuildError::NeedsSubflows {
                name: self.spec.name.clone(),
            });
        }
        Ok(self)
    }

    /// A fresh controller, as a new connection's.
    pub fn controller(&self) -> Box<dyn Controller> {
        self.spec
            .build()
            .expect("the controller spec was validated by CcFactory::new")
    }

    /// Makes the probe of the factory this one was made from follow this connection's
    /// controller again: a subflow's connection, built later, took it over.
    pub fn lead(&self) {
        if let (Some(parent), Some(state)) = (&self.parent, self.probe.state()) {
            parent.follow(state);
        }
    }

    /// This factory with its controllers calling `wake` after every ACK and congestion event.
    pub fn waking(mut self, wake: impl Fn() + Send + Sync + 'static) -> CcFactory {
        self.wake = Some(WakeHook(Arc::new(wake)));
        self
    }

    /// This factory with its clock's epoch at `epoch`, so that several factories share one
    /// time line.
    pub fn with_epoch(mut self, epoch: std::time::Instant) -> CcFactory {
        self.clock = Clock::from_epoch(epoch);
        self.probe = CcProbe::new(self.clock);
        self
    }

    /// A factory for one connection: the same controller, parameters, settings and clock, with
    /// a feed and a probe of its own. The probe of this factory follows its controllers too.
    pub fn for_connection(&self) -> CcFactory {
        CcFactory {
            spec: self.spec.clone(),
            clock: self.clock,
            probe: CcProbe::new(self.clock),
            parent: Some(self.parent.clone().unwrap_or_else(|| self.probe.clone())),
            owd: OwdFeed::default(),
            wake: self.wake.clone(),
        }
    }

    /// The controller's registry name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The settings every controller built here gets.
    pub fn config(&self) -> &ControllerConfig {
        &self.spec.config
    }

    /// The clock mapping noq's instants to controller time.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The probe of the controller this factory built last.
    pub fn probe(&self) -> CcProbe {
        self.probe.clone()
    }

    /// The one-way-delay hook of the controllers built here (see [`OwdFeed`]).
    pub fn owd_feed(&self) -> OwdFeed {
        self.owd.clone()
    }

    /// What a reader of the run's results should know: a controller that uses receiver
    /// timestamps (one-way delay, or the receiver's ACK delay) but got none, because the peer
    /// did not agree to them, used the raw RTT instead.
    pub fn warnings(&self) -> Vec<String> {
        match self.probe.sample() {
            Some(s) => self.warnings_for(&s.counters),
            None => Vec::new(),
        }
    }

    /// [`CcFactory::warnings`] for a controller of this factory that counted `c`.
    pub fn warnings_for(&self, c: &CcCounters) -> Vec<String> {
        let wants = kleinrock_cc::registry::find(&self.spec.name).is_some_and(|i| i.one_way_delay);
        match c {
            c if wants && c.ack_events > 0 && c.owd_samples + c.ack_delay_samples == 0 => {
                vec![format!(
                    "{} got no receiver timestamps (the peer did not agree to datagram \
                     timestamps), so it used its RTT signal instead, with the receiver's ACK \
                     delay in it",
                    self.spec.name
                )]
            }
            _ => Vec::new(),
        }
    }

    /// A new adapter around a fresh controller; the probe follows it from now on.
    fn new_adapter(&self) -> Adapter {
        // CcFactory::new built this spec once; building is deterministic, so it cannot fail now.
        let cc = self.controller();
        let state = Arc::new(Mutex::new(State::new(
            cc,
            self.owd.clone(),
            self.clock,
            self.spec.config.max_datagram_size,
        )));
        self.probe.follow(state.clone());
        if let Some(parent) = &self.parent {
            parent.follow(state.clone());
        }
        Adapter {
            state,
            factory: self.clone(),
        }
    }
}

impl NoqControllerFactory for CcFactory {
    fn build(
        self: Arc<Self>,
        _now: std::time::Instant,
        _current_mtu: u16,
    ) -> Box<dyn NoqController> {
        Box::new(self.new_adapter())
    }
}

/// What the peer's echo of one of our datagrams tells (see [`crate::stamps`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoReport {
    /// When the datagram was sent (sender clock).
    pub sent: std::time::Instant,
    /// Its one-way delay plus an unknown constant (the two clocks need not agree; only
    /// differences between reports are used, QUIC-DC eq. (4)).
    pub one_way: Duration,
    /// How long the receiver held it before it sent the datagram carrying the echo: the ACK
    /// delay of an ACK sent in that datagram (RFC 9000 §19.3).
    pub hold: Duration,
}

/// Why an echo of a peer was not taken as a one-way-delay sample: it cannot be true.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// It names a send time its connection never stamped, or one it already had echoed.
    UnknownEcho,
    /// Its receive time is further before the newest accepted one than
    /// [`crate::stamps::BACKWARDS_TOLERANCE`].
    Backwards,
    /// Its one-way delay is above the smallest of the connection by more than the
    /// connection's RTT (the larger of its smoothed RTT and its latest sample): a queue on one
    /// way that outlasts the round trip.
    Queuing,
}

/// The one-way-delay hook of one connection: the [`EchoReport`]s of the receive-timestamp
/// layer ([`crate::stamps`]) not yet taken, oldest first (at most [`ECHO_QUEUE`]), and the
/// echoes that layer refused. The adapter takes the reports when an ACK batch ends: those
/// whose queuing delay cannot be true are refused ([`Rejection::Queuing`]), the newest of the
/// rest gives that batch's [`AckEvent`] its [`OneWayDelaySample`] (numbered with the newest
/// acked packet), and the one whose datagram is the ACK's largest packet gives its
/// `ack_delay`. An ACK with no report since the previous one has neither.
///
/// A factory's controllers share its feed: a server makes a factory per connection.
#[derive(Clone, Debug, Default)]
pub struct OwdFeed {
    inner: Arc<Mutex<FeedState>>,
}

#[derive(Debug, Default)]
struct FeedState {
    reports: VecDeque<EchoReport>,
    unknown_echoes: u64,
    backwards: u64,
}

impl OwdFeed {
    /// Queues a report, dropping the oldest beyond [`ECHO_QUEUE`].
    pub fn push(&self, report: EchoReport) {
        let mut f = lock(&self.inner);
        if f.reports.len() >= ECHO_QUEUE {
            f.reports.pop_front();
        }
        f.reports.push_back(report);
    }

    /// Counts an echo the timestamp layer refused.
    pub fn reject(&self, why: Rejection) {
        let mut f = lock(&self.inner);
        match why {
            Rejection::UnknownEcho => f.unknown_echoes += 1,
            Rejection::Backwards => f.backwards += 1,
            // The adapter counts its own.
            Rejection::Queuing => {}
        }
    }

    /// Takes every queued report, oldest first.
    pub(crate) fn drain(&self) -> Vec<EchoReport> {
        lock(&self.inner).reports.drain(..).collect()
    }

    /// The echoes refused so far: unknown, and running backwards.
    pub(crate) fn refused(&self) -> (u64, u64) {
        let f = lock(&self.inner);
        (f.unknown_echoes, f.backwards)
    }
}

/// Cumulative counters of one controller's connection path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CcCounters {
    /// Packets sent (ack-eliciting, as noq reports them per packet).
    pub packets_sent: u64,
    /// Bytes of those packets.
    pub bytes_sent: u64,
    /// Packets newly acknowledged.
    pub packets_acked: u64,
    /// Bytes of those packets.
    pub bytes_acked: u64,
    /// Packets declared lost (with a size; lost ack-only packets do not count).
    pub packets_lost: u64,
    /// Bytes of those packets.
    pub bytes_lost: u64,
    /// [`AckEvent`]s given to the controller (one per ACK frame that acked something).
    pub ack_events: u64,
    /// [`CongestionEvent`]s given to the controller, of every kind.
    pub congestion_events: u64,
    /// Of those, persistent congestion.
    pub persistent_congestion_events: u64,
    /// Of those, ECN-CE.
    pub ecn_events: u64,
    /// [`AckEvent`]s that carried a one-way-delay sample.
    pub owd_samples: u64,
    /// [`AckEvent`]s that carried the receiver's ACK delay.
    pub ack_delay_samples: u64,
    /// Echoes of the peer refused as one-way-delay samples because they named a datagram the
    /// connection never sent, or one already echoed ([`Rejection::UnknownEcho`]).
    pub owd_rejected_unknown_echo: u64,
    /// Echoes refused because their receive time ran backwards ([`Rejection::Backwards`]).
    pub owd_rejected_backwards: u64,
    /// Echoes refused because their queuing delay exceeded the RTT ([`Rejection::Queuing`]).
    pub owd_rejected_queuing: u64,
    /// Loss events as the simulator's metrics count them: loss reports whose newest lost packet
    /// was sent after the previous counted event (one per RFC 9002 recovery period).
    pub loss_events: u64,
    /// Congestion events noq later found spurious (all their packets were acked after all).
    pub spurious_congestion_events: u64,
}

/// What is in flight on a connection path, and its RTT ([`CcProbe::flight`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Flight {
    /// Bytes in flight as the adapter counts them.
    pub in_flight: u64,
    /// The smoothed RTT.
    pub smoothed_rtt: Option<Duration>,
    /// The latest RTT sample.
    pub latest_rtt: Option<Duration>,
}

/// One observation of a running controller and its connection path.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeSample {
    /// When it was taken, on the factory's [`Clock`].
    pub time: Instant,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes, where the algorithm has one.
    pub ssthresh: Option<u64>,
    /// Pacing rate the controller asks for (`None`: noq's window-based pacer).
    pub pacing_rate: Option<Rate>,
    /// Bytes in flight as the adapter counts them.
    pub in_flight: u64,
    /// The latest RTT sample.
    pub latest_rtt: Option<Duration>,
    /// The minimum RTT sample.
    pub min_rtt: Option<Duration>,
    /// The smoothed RTT (RFC 9002 §5.3, without ACK-delay adjustment; see docs/quic.md).
    pub smoothed_rtt: Option<Duration>,
    /// The rate of the latest delivery-rate sample.
    pub delivery_rate: Option<Rate>,
    /// The controller's own state (mode and estimates).
    pub state: ControllerState,
    /// Cumulative counters.
    pub counters: CcCounters,
}

/// A cheap, clonable handle for observing the controller a [`CcFactory`] built last, from
/// another task (trace sampling, end-of-run reports).
#[derive(Clone)]
pub struct CcProbe {
    slot: Arc<Mutex<Option<Arc<Mutex<State>>>>>,
    clock: Clock,
}

impl fmt::Debug for CcProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CcProbe")
            .field("attached", &lock(&self.slot).is_some())
            .finish()
    }
}

impl CcProbe {
    fn new(clock: Clock) -> Self {
        CcProbe {
            slot: Arc::new(Mutex::new(None)),
            clock,
        }
    }

    fn follow(&self, state: Arc<Mutex<State>>) {
        *lock(&self.slot) = Some(state);
    }

    fn state(&self) -> Option<Arc<Mutex<State>>> {
        lock(&self.slot).clone()
    }

    /// The controller's current values; `None` before the factory built a controller.
    pub fn sample(&self) -> Option<ProbeSample> {
        let state = self.state()?;
        let s = lock(&state);
        let (unknown, backwards) = s.feed.refused();
        Some(ProbeSample {
            time: self.clock.now(),
            cwnd: s.cc.cwnd(),
            ssthresh: s.cc.ssthresh(),
            pacing_rate: s.cc.pacing_rate(),
            in_flight: s.in_flight,
            latest_rtt: s.rtt.latest(),
            min_rtt: s.rtt.min(),
            smoothed_rtt: s.rtt.smoothed(),
            delivery_rate: s.last_rate.and_then(|r| r.delivery_rate()),
            state: s.cc.state(),
            counters: CcCounters {
                owd_rejected_unknown_echo: unknown,
                owd_rejected_backwards: backwards,
                ..s.counters
            },
        })
    }

    /// Bytes in flight and the RTT estimates, without the rest of a [`CcProbe::sample`];
    /// `None` before the factory built a controller.
    pub fn flight(&self) -> Option<Flight> {
        let state = self.state()?;
        let s = lock(&state);
        Some(Flight {
            in_flight: s.in_flight,
            smoothed_rtt: s.rtt.smoothed(),
            latest_rtt: s.rtt.latest(),
        })
    }

    /// How many subflows besides its own connection the controller wants open now
    /// ([`Controller::extra_subflows`]); 0 before the factory built a controller.
    pub fn extra_subflows(&self) -> usize {
        self.state().map_or(0, |s| lock(&s).cc.extra_subflows())
    }

    /// The controller of subflow `index` (from 1), from the controller of this connection
    /// ([`Controller::subflow_controller`]).
    pub fn subflow_controller(&self, index: usize) -> Option<Box<dyn Controller>> {
        let state = self.state()?;
        let mut s = lock(&state);
        s.cc.subflow_controller(index)
    }

    /// Hands the connection to `cc` from now on: what is in flight is acknowledged or
    /// declared lost to it, and the counters and RTT estimates go on. `false` before the
    /// factory built a controller.
    pub fn replace_controller(&self, cc: Box<dyn Controller>) -> bool {
        let Some(state) = self.state() else {
            return false;
        };
        let mut s = lock(&state);
        s.settle_all();
        s.cc = cc;
        true
    }

    /// Every RTT sample the controller got, in nanoseconds (mean, std, percentiles, CDF as the
    /// simulator reports them); `None` before the factory built a controller. A copy of a few
    /// kilobytes: take it at the end of a run, not at every trace sample.
    pub fn rtt_histogram(&self) -> Option<Histogram> {
        let state = self.state()?;
        let s = lock(&state);
        Some(s.rtt_hist.clone())
    }
}

/// What the adapter remembers of a packet in flight.
#[derive(Clone, Copy, Debug)]
struct Record {
    sent: Instant,
    bytes: u64,
    snapshot: DeliverySnapshot,
}

/// The ACK batch being collected between the first `on_ack` and `on_end_acks`.
#[derive(Clone, Copy, Debug)]
struct AckBatch {
    now: Instant,
    prior_in_flight: u64,
    bytes: u64,
    packets: u64,
    /// noq's app-limited flag: the sender had nothing to send before this ACK.
    app_limited: bool,
    /// Send time of the newest acked packet.
    newest_sent: Instant,
    /// Snapshot of the newest acked packet that had a record.
    newest_snapshot: Option<(Instant, DeliverySnapshot)>,
    /// The largest packet number acked in this batch, and its send time.
    largest: (u64, Instant),
}

/// A finished batch waiting for the losses noq reports after it.
#[derive(Clone, Copy, Debug)]
struct PendingAck {
    batch: AckBatch,
    rtt_sample: Option<Duration>,
    echo: Option<Echo>,
}

/// An ACK batch's echo reports on the controller's clock: the newest one's times, and the
/// hold time matched to the ACK's largest packet.
#[derive(Clone, Copy, Debug)]
struct Echo {
    sent_time: Instant,
    receive_time: Instant,
    hold: Option<Duration>,
}

/// The run of `on_packet_lost` calls before an `on_congestion_event`.
#[derive(Clone, Copy, Debug)]
struct LossBatch {
    now: Instant,
    prior_in_flight: u64,
    bytes: u64,
    packets: u64,
}

/// Everything the adapter keeps for one path; behind a mutex shared with the probe.
struct State {
    cc: Box<dyn Controller>,
    sampler: DeliveryRateSampler,
    rtt: RttEstimator,
    /// Packets in flight by (packet number, send sequence): noq's packet-number spaces
    /// (Initial, Handshake, Data) share one controller and reuse numbers.
    records: BTreeMap<(u64, u64), Record>,
    send_seq: u64,
    in_flight: u64,
    batch: Option<AckBatch>,
    pending: Option<PendingAck>,
    losses: Option<LossBatch>,
    idle: bool,
    last_prune: Instant,
    /// When the last counted loss event began.
    last_loss_event: Option<Instant>,
    /// Where echo reports arrive, and the clock that maps their times.
    feed: OwdFeed,
    clock: Clock,
    /// The smallest one-way delay of the reports taken (up to the feed's constant).
    min_one_way: Option<Duration>,
    last_rate: Option<RateSample>,
    counters: CcCounters,
    rtt_hist: Histogram,
    /// The controllers' max_datagram_size, to count lost packets when noq gave no count.
    mss: u64,
}

impl State {
    fn new(cc: Box<dyn Controller>, feed: OwdFeed, clock: Clock, mss: u64) -> Self {
        let now = clock.now();
        State {
            mss: mss.max(1),
            cc,
            sampler: DeliveryRateSampler::new(),
            rtt: RttEstimator::new(),
            records: BTreeMap::new(),
            send_seq: 0,
            in_flight: 0,
            batch: None,
            pending: None,
            losses: None,
            idle: false,
            last_prune: now,
            last_loss_event: None,
            feed,
            clock,
            min_one_way: None,
            last_rate: None,
            counters: CcCounters::default(),
            rtt_hist: Histogram::new(),
        }
    }

    /// Removes and returns the record of packet `pn`, preferring one sent at `sent` with
    /// `bytes` bytes when several spaces used the number.
    fn take_record(&mut self, pn: u64, sent: Option<Instant>, bytes: u64) -> Option<Record> {
        let mut best: Option<((u64, u64), u8)> = None;
        for (key, rec) in self.records.range((pn, 0)..=(pn, u64::MAX)) {
            let score = 2 * u8::from(sent == Some(rec.sent)) + u8::from(rec.bytes == bytes);
            if best.is_none_or(|(_, b)| score > b) {
                best = Some((*key, score));
            }
        }
        self.records.remove(&best?.0)
    }

    fn on_packet_sent(&mut self, now: Instant, bytes: u64, pn: u64) {
        self.settle_all();
        self.losses = None;
        self.idle = false;
        let snapshot = self.sampler.on_packet_sent(now, self.in_flight, bytes);
        self.in_flight += bytes;
        self.records.insert(
            (pn, self.send_seq),
            Record {
                sent: now,
                bytes,
                snapshot,
            },
        );
        self.send_seq += 1;
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += bytes;
        self.cc.on_sent(
            now,
            &SentPacket {
                packet_number: pn,
                bytes,
                // noq sends retransmitted frames in new packets and does not say which.
                is_retransmission: false,
                in_flight: self.in_flight,
                snapshot,
            },
        );
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, pn: u64, app_limited: bool) {
        if self.batch.is_some_and(|b| b.now != now) {
            self.close_batch(None);
        }
        // A new ACK frame: the previous one's losses have all been reported.
        self.settle_pending();
        self.losses = None;
        if self.batch.is_none() {
            if app_limited {
                // noq's flag: the last transmit attempt found cwnd room but no data.
                // delivered + in_flight is the same before and after this ACK, so marking the
                // bubble now is what the simulator's marking at send time gives.
                self.sampler.on_app_limited(self.in_flight);
                self.cc.on_app_limited(now);
            }
            self.batch = Some(AckBatch {
                now,
                prior_in_flight: self.in_flight,
                bytes: 0,
                packets: 0,
                app_limited,
                newest_sent: sent,
                newest_snapshot: None,
                largest: (pn, sent),
            });
        }
        let record = self.take_record(pn, Some(sent), bytes);
        if let Some(rec) = record {
            self.sampler
                .on_packet_acked(now, rec.bytes, rec.sent, &rec.snapshot);
        }
        if let Some(batch) = &mut self.batch {
            batch.bytes += bytes;
            batch.packets += 1;
            batch.newest_sent = batch.newest_sent.max(sent);
            if pn >= batch.largest.0 {
                batch.largest = (pn, sent);
            }
            if let Some(rec) = record {
                if batch.newest_snapshot.is_none_or(|(t, _)| rec.sent >= t) {
                    batch.newest_snapshot = Some((rec.sent, rec.snapshot));
                }
            }
        }
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.counters.packets_acked += 1;
        self.counters.bytes_acked += bytes;
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, largest_acked: Option<u64>) {
        if self.batch.is_some_and(|b| b.now != now) {
            self.close_batch(None);
        }
        self.settle_pending();
        // noq's count is authoritative: it also drops packets of discarded spaces silently.
        self.in_flight = in_flight;
        if in_flight == 0 {
            // Nothing is outstanding: every record left belongs to a forgotten packet.
            self.records.clear();
        }
        self.close_batch(largest_acked);
    }

    /// Ends the open batch (if any): takes the RTT sample when the largest acknowledged packet
    /// of the space (`largest_acked`) was acked in this batch, and holds the event pending.
    fn close_batch(&mut self, largest_acked: Option<u64>) {
        let Some(batch) = self.batch.take() else {
            return;
        };
        self.settle_pending();
        let (largest_pn, largest_sent) = batch.largest;
        // Echoes arrive before noq reads the ACKs of the same datagrams. A queuing delay above
        // the connection's RTT cannot be true; before the first RTT sample, this ACK's time
        // since the largest packet was sent stands for the RTT.
        let rtt = [self.rtt.smoothed(), self.rtt.latest()]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(batch.now - largest_sent);
        let echo = self.take_echo(largest_sent, rtt);
        let rtt_sample = (largest_acked == Some(largest_pn)).then(|| {
            // RFC 9002 §5.1: latest_rtt = ack time - send time of the largest acked packet;
            // §5.3: the receiver's ACK delay, when an echo tells it, is left out of smoothed_rtt.
            let sample = batch.now - largest_sent;
            let ack_delay = echo.and_then(|e| e.hold).unwrap_or(Duration::ZERO);
            self.rtt.on_sample(sample, ack_delay);
            self.rtt_hist.record(duration_nanos(sample));
            sample
        });
        self.pending = Some(PendingAck {
            batch,
            rtt_sample,
            echo,
        });
    }

    fn on_packet_lost(&mut self, now: Instant, bytes: u64, pn: u64) {
        self.settle(now);
        let losses = self.losses.get_or_insert(LossBatch {
            now,
            prior_in_flight: self.in_flight,
            bytes: 0,
            packets: 0,
        });
        if bytes > 0 {
            losses.bytes += bytes;
            losses.packets += 1;
            self.counters.packets_lost += 1;
            self.counters.bytes_lost += bytes;
        }
        self.take_record(pn, None, bytes);
        self.sampler.on_packet_lost(bytes);
        self.in_flight = self.in_flight.saturating_sub(bytes);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        largest_sent: Instant,
        persistent: bool,
        ecn: bool,
        lost_bytes: u64,
    ) {
        self.settle(now);
        let losses = self.losses.take().filter(|l| l.now == now);
        let kind = if ecn {
            CongestionKind::EcnCe
        } else if persistent {
            CongestionKind::PersistentCongestion
        } else {
            CongestionKind::Loss
        };
        if persistent {
            // RFC 9002 §5.2: min_rtt restarts from the latest sample.
            self.rtt.on_persistent_congestion();
        }
        if !ecn
            && self
                .last_loss_event
                .is_none_or(|start| largest_sent > start)
        {
            self.counters.loss_events += 1;
            self.last_loss_event = Some(now);
        }
        let mss = self.mss;
        let event = CongestionEvent {
            kind,
            lost_bytes,
            // noq does not say how many packets an ECN-CE increase covers: at least one.
            lost_packets: match (ecn, losses) {
                (true, _) => 1,
                (false, Some(l)) => l.packets.max(1),
                (false, None) => lost_bytes.div_ceil(mss).max(1),
            },
            largest_sent_time: largest_sent,
            prior_in_flight: losses.map_or(self.in_flight, |l| l.prior_in_flight),
            in_flight: self.in_flight,
        };
        self.counters.congestion_events += 1;
        self.counters.persistent_congestion_events +=
            u64::from(kind == CongestionKind::PersistentCongestion);
        self.counters.ecn_events += u64::from(ecn);
        self.cc.on_congestion(now, &event);
    }

    /// Delivers the pending ACK unless `now` is its time (then losses of the same ACK may still
    /// come); closes an open batch first.
    fn settle(&mut self, now: Instant) {
        if self.batch.is_some() {
            self.close_batch(None);
        }
        if self.pending.is_some_and(|p| p.batch.now != now) {
            self.settle_pending();
        }
    }

    /// Delivers everything held back: an open batch and the pending ACK.
    fn settle_all(&mut self) {
        if self.batch.is_some() {
            self.close_batch(None);
        }
        self.settle_pending();
    }

    /// Builds and delivers the pending [`AckEvent`].
    fn settle_pending(&mut self) {
        let Some(PendingAck {
            batch,
            rtt_sample,
            echo,
        }) = self.pending.take()
        else {
            return;
        };
        let now = batch.now;
        let rate = self.sampler.generate_sample(self.rtt.min());
        if rate.is_some() {
            self.last_rate = rate;
        }
        let one_way_delay = echo.map(|e| OneWayDelaySample {
            // The newest acked packet's number: the samples' numbers grow, as QUIC-DC's
            // estimator requires.
            packet_number: batch.largest.0,
            sent_time: e.sent_time,
            receive_time: e.receive_time,
        });
        let ack_delay = rtt_sample.and(echo.and_then(|e| e.hold));
        self.counters.owd_samples += u64::from(one_way_delay.is_some());
        self.counters.ack_delay_samples += u64::from(ack_delay.is_some());
        let app_limited = match (rate, batch.newest_snapshot) {
            (Some(r), _) => r.is_app_limited,
            (None, Some((_, snapshot))) => snapshot.is_app_limited,
            (None, None) => batch.app_limited,
        };
        let event = AckEvent {
            acked_bytes: batch.bytes,
            acked_packets: batch.packets,
            largest_acked_sent_time: batch.newest_sent,
            rtt_sample,
            ack_delay,
            min_rtt: self.rtt.min(),
            smoothed_rtt: self.rtt.smoothed(),
            rate,
            delivered: self.sampler.delivered(),
            prior_in_flight: batch.prior_in_flight,
            in_flight: self.in_flight,
            app_limited,
            one_way_delay,
        };
        self.counters.ack_events += 1;
        self.cc.on_ack(now, &event);
        if batch.app_limited && self.in_flight == 0 && !self.idle {
            // Nothing to send and nothing in flight: idle until the next packet is sent.
            self.idle = true;
            self.cc.on_idle(now);
        }
        self.prune(now);
    }

    /// The echo reports since the last batch that can be true (a queuing delay, above the
    /// smallest one-way delay so far, of at most `rtt`; the others are counted): the newest
    /// one's delay, and the hold time of the one whose datagram was sent when the ACK's largest
    /// packet was (capped at the peer's max_ack_delay, RFC 9002 §5.3), if any.
    fn take_echo(&mut self, largest_sent: Instant, rtt: Duration) -> Option<Echo> {
        let mut reports = self.feed.drain();
        reports.retain(|r| {
            let min = self.min_one_way.map_or(r.one_way, |m| m.min(r.one_way));
            if r.one_way - min > rtt {
                self.counters.owd_rejected_queuing += 1;
                return false;
            }
            self.min_one_way = Some(min);
            true
        });
        let newest = reports.last()?;
        let sent_time = self.clock.instant(newest.sent);
        let distance = |r: &EchoReport| {
            let t = self.clock.instant(r.sent);
            if t > largest_sent {
                t - largest_sent
            } else {
                largest_sent - t
            }
        };
        let hold = reports
            .iter()
            .filter(|r| distance(r) <= ECHO_MATCH)
            .min_by_key(|r| distance(r))
            .map(|r| r.hold.min(PEER_MAX_ACK_DELAY));
        Some(Echo {
            sent_time,
            receive_time: sent_time + newest.one_way,
            hold,
        })
    }

    /// Drops records of packets noq forgot (discarded packet-number spaces).
    fn prune(&mut self, now: Instant) {
        if now - self.last_prune < PRUNE_INTERVAL {
            return;
        }
        self.last_prune = now;
        let horizon = (self.rtt.smoothed_or_initial() * PRUNE_RTTS).max(PRUNE_MIN_AGE);
        self.records.retain(|_, r| now - r.sent <= horizon);
    }
}

/// noq's `Controller` around one `kleinrock-cc` controller.
pub struct Adapter {
    state: Arc<Mutex<State>>,
    factory: CcFactory,
}

impl fmt::Debug for Adapter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Adapter")
            .field("controller", &self.factory.spec.name)
            .finish()
    }
}

impl Adapter {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn time(&self, t: std::time::Instant) -> Instant {
        self.factory.clock.instant(t)
    }

    fn wake(&self) {
        if let Some(WakeHook(wake)) = &self.factory.wake {
            wake();
        }
    }

    /// One newly acknowledged packet; what `on_ack` does without noq's `RttEstimator` (which
    /// only noq can make; the adapter measures RTT itself, see [`State::close_batch`]).
    fn ack_packet(
        &self,
        now: std::time::Instant,
        sent: std::time::Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
    ) {
        let (now, sent) = (self.time(now), self.time(sent));
        self.lock().on_ack(now, sent, bytes, pn, app_limited);
    }
}

impl NoqController for Adapter {
    fn on_packet_sent(&mut self, now: std::time::Instant, bytes: u16, pn: u64) {
        let now = self.time(now);
        self.lock().on_packet_sent(now, u64::from(bytes), pn);
    }

    fn on_ack(
        &mut self,
        now: std::time::Instant,
        sent: std::time::Instant,
        bytes: u64,
        pn: u64,
        app_limited: bool,
        _rtt: &noq_proto::RttEstimator,
    ) {
        // noq updates its RttEstimator only after on_end_acks, so the one passed here does not
        // include this ACK's sample yet; the adapter takes the sample itself.
        self.ack_packet(now, sent, bytes, pn, app_limited);
    }

    fn on_end_acks(
        &mut self,
        now: std::time::Instant,
        in_flight: u64,
        _app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        let now = self.time(now);
        self.lock()
            .on_end_acks(now, in_flight, largest_packet_num_acked);
        self.wake();
    }

    fn on_congestion_event(
        &mut self,
        now: std::time::Instant,
        sent: std::time::Instant,
        is_persistent_congestion: bool,
        is_ecn: bool,
        lost_bytes: u64,
        _largest_lost_pn: u64,
    ) {
        let (now, sent) = (self.time(now), self.time(sent));
        self.lock()
            .on_congestion_event(now, sent, is_persistent_congestion, is_ecn, lost_bytes);
        self.wake();
    }

    fn on_packet_lost(&mut self, lost_bytes: u16, pn: u64, now: std::time::Instant) {
        let now = self.time(now);
        self.lock().on_packet_lost(now, u64::from(lost_bytes), pn);
    }

    fn on_spurious_congestion_event(&mut self) {
        self.lock().counters.spurious_congestion_events += 1;
    }

    fn on_mtu_update(&mut self, _new_mtu: u16) {
        // kleinrock controllers count in bytes with a fixed max_datagram_size; the endpoints
        // fix noq's MTU to it (MTU discovery off), so nothing to do.
    }

    fn window(&self) -> u64 {
        let mut s = self.lock();
        s.settle_all();
        // noq asserts a non-zero window.
        s.cc.cwnd().max(1)
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut s = self.lock();
        s.settle_all();
        let mut m = ControllerMetrics::default();
        m.congestion_window = s.cc.cwnd().max(1);
        m.ssthresh = s.cc.ssthresh();
        m.pacing_rate = s.cc.pacing_rate().map(pacing_bytes_per_sec);
        m
    }

    fn clone_box(&self) -> Box<dyn NoqController> {
        // A new path (migration) starts a fresh controller, as the factory would build it.
        Box::new(self.factory.new_adapter())
    }

    fn initial_window(&self) -> u64 {
        self.factory.spec.config.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// A controller's pacing rate as noq's whole bytes per second (at least 1; noq treats 0 as 1).
fn pacing_bytes_per_sec(rate: Rate) -> u64 {
    let bytes = rate.bytes_per_sec();
    if bytes.is_nan() || bytes < 1.0 {
        1
    } else {
        // `as` saturates at u64::MAX for huge and infinite rates.
        bytes.round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1200;

    /// What the recording controller was told.
    #[derive(Clone, Debug, PartialEq)]
    enum Call {
        Sent(Instant, SentPacket),
        Ack(Instant, AckEvent),
        Congestion(Instant, CongestionEvent),
        AppLimited(Instant),
        Idle(Instant),
    }

    /// A controller that records its inputs and returns fixed outputs.
    struct Recorder {
        calls: Arc<Mutex<Vec<Call>>>,
        cwnd: u64,
        pacing: Option<Rate>,
    }

    impl Controller for Recorder {
        fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
            lock(&self.calls).push(Call::Sent(now, *packet));
        }
        fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
            lock(&self.calls).push(Call::Ack(now, *ack));
        }
        fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
            lock(&self.calls).push(Call::Congestion(now, *event));
        }
        fn on_app_limited(&mut self, now: Instant) {
            lock(&self.calls).push(Call::AppLimited(now));
        }
        fn on_idle(&mut self, now: Instant) {
            lock(&self.calls).push(Call::Idle(now));
        }
        fn cwnd(&self) -> u64 {
            self.cwnd
        }
        fn pacing_rate(&self) -> Option<Rate> {
            self.pacing
        }
        fn state(&self) -> ControllerState {
            ControllerState {
                mode: "recording",
                values: Vec::new(),
            }
        }
    }

    /// An adapter around a recorder, the recorder's log, and the factory's epoch.
    struct Rig {
        adapter: Adapter,
        calls: Arc<Mutex<Vec<Call>>>,
        factory: CcFactory,
    }

    impl Rig {
        fn new(pacing: Option<Rate>) -> Self {
            let factory = CcFactory::new("newreno", Params::new(), ControllerConfig::default())
                .expect("newreno builds");
            let adapter = factory.new_adapter();
            let calls = Arc::new(Mutex::new(Vec::new()));
            adapter.lock().cc = Box::new(Recorder {
                calls: calls.clone(),
                cwnd: 12_345,
                pacing,
            });
            Rig {
                adapter,
                calls,
                factory,
            }
        }

        /// The real instant `ms` milliseconds after the epoch.
        fn at(&self, ms: f64) -> std::time::Instant {
            self.factory.clock().epoch() + Duration::from_secs_f64(ms / 1e3)
        }

        /// `packets` packets sent 1 ms apart from 0 ms, and the feed of their echoes with a
        /// maker of reports: an echo of a datagram sent at `sent_ms` with a one-way delay (up
        /// to the feed's constant) and a hold time, in ms.
        fn sent_with_feed(
            &mut self,
            packets: u64,
        ) -> (OwdFeed, impl Fn(f64, u64, u64) -> EchoReport) {
            for pn in 0..packets {
                self.send(pn as f64, pn);
            }
            let epoch = self.factory.clock().epoch();
            let report = move |sent_ms: f64, one_way_ms: u64, hold_ms: u64| EchoReport {
                sent: epoch + Duration::from_secs_f64(sent_ms / 1e3),
                one_way: Duration::from_millis(one_way_ms),
                hold: Duration::from_millis(hold_ms),
            };
            (self.factory.owd_feed(), report)
        }

        fn send(&mut self, ms: f64, pn: u64) {
            let t = self.at(ms);
            self.adapter.on_packet_sent(t, MSS as u16, pn);
        }

        /// One ACK frame at `ms` acknowledging `pns` (sent at the given times), with noq's
        /// in-flight count after it and the space's largest acked packet number.
        fn ack(&mut self, ms: f64, pns: &[(u64, f64)], in_flight: u64, largest: u64) {
            let now = self.at(ms);
            for &(pn, sent_ms) in pns {
                let sent = self.at(sent_ms);
                self.adapter.ack_packet(now, sent, MSS, pn, false);
            }
            self.adapter
                .on_end_acks(now, in_flight, false, Some(largest));
        }

        fn take(&self) -> Vec<Call> {
            std::mem::take(&mut *lock(&self.calls))
        }

        fn acks(&self) -> Vec<AckEvent> {
            self.take()
                .into_iter()
                .filter_map(|c| match c {
                    Call::Ack(_, a) => Some(a),
                    _ => None,
                })
                .collect()
        }
    }

    fn ms(v: f64) -> Instant {
        Instant::from_nanos((v * 1e6).round() as u64)
    }

    #[test]
    fn clock_counts_nanoseconds_from_the_epoch() {
        let clock = Clock::starting_now();
        let t = clock.epoch() + Duration::from_micros(1500);
        assert_eq!(clock.instant(t), Instant::from_nanos(1_500_000));
        // Before the epoch saturates at zero.
        let before = clock.epoch().checked_sub(Duration::from_secs(1));
        if let Some(before) = before {
            assert_eq!(clock.instant(before), Instant::ZERO);
        }
    }

    #[test]
    fn each_sent_packet_reaches_the_controller_with_its_snapshot() {
        let mut rig = Rig::new(None);
        rig.send(0.0, 0);
        rig.send(1.0, 1);
        let calls = rig.take();
        assert_eq!(calls.len(), 2);
        let Call::Sent(t, p) = calls[1] else {
            panic!("{calls:?}")
        };
        assert_eq!(t, ms(1.0));
        assert_eq!((p.packet_number, p.bytes, p.in_flight), (1, MSS, 2 * MSS));
        assert_eq!(p.snapshot.first_sent_time, ms(0.0), "one send phase");
        assert_eq!(p.snapshot.tx_in_flight, 2 * MSS);
    }

    #[test]
    fn one_ack_event_per_batch_with_the_batch_totals() {
        let mut rig = Rig::new(None);
        for pn in 0..10 {
            rig.send(pn as f64, pn);
        }
        rig.take();
        // One ACK frame for packets 0, 1 and 2.
        rig.ack(50.0, &[(0, 0.0), (1, 1.0), (2, 2.0)], 7 * MSS, 2);
        assert!(
            rig.take().is_empty(),
            "held until the ACK's losses are known"
        );
        // noq asks for the window before sending: that delivers it.
        assert_eq!(rig.adapter.window(), 12_345);
        let acks = rig.acks();
        assert_eq!(acks.len(), 1, "one event for the ACK frame");
        assert_eq!((acks[0].acked_bytes, acks[0].acked_packets), (3 * MSS, 3));
        assert_eq!(
            (acks[0].prior_in_flight, acks[0].in_flight),
            (10 * MSS, 7 * MSS)
        );
        let counters = rig.factory.probe().sample().expect("built").counters;
        assert_eq!((counters.ack_events, counters.bytes_acked), (1, 3 * MSS));

        rig.ack(60.0, &[(3, 3.0), (4, 4.0)], 5 * MSS, 4);
        rig.ack(61.0, &[(5, 5.0)], 4 * MSS, 5);
        rig.adapter.window();
        let acks = rig.acks();
        assert_eq!(acks.len(), 2, "one event per ACK frame");
        let a = acks[0];
        assert_eq!((a.acked_bytes, a.acked_packets), (2 * MSS, 2));
        assert_eq!(a.largest_acked_sent_time, ms(4.0));
        assert_eq!((a.prior_in_flight, a.in_flight), (7 * MSS, 5 * MSS));
        assert_eq!(a.delivered, 5 * MSS);
        assert_eq!(a.rtt_sample, Some(Duration::from_millis(56)));
        assert_eq!(a.min_rtt, Some(Duration::from_millis(48)));
        assert_eq!(acks[1].acked_packets, 1);
        assert_eq!(acks[1].delivered, 6 * MSS);
    }

    #[test]
    fn first_batch_event_has_the_right_totals() {
        let mut rig = Rig::new(None);
        for pn in 0..10 {
            rig.send(pn as f64, pn);
        }
        rig.take();
        rig.ack(50.0, &[(2, 2.0), (0, 0.0), (1, 1.0)], 7 * MSS, 2);
        // The next send delivers the held event first.
        rig.send(50.0, 10);
        let calls = rig.take();
        assert!(matches!(calls[0], Call::Ack(..)), "{calls:?}");
        assert!(matches!(calls[1], Call::Sent(..)), "{calls:?}");
        let Call::Ack(t, a) = calls[0] else {
            unreachable!()
        };
        assert_eq!(t, ms(50.0));
        assert_eq!((a.acked_bytes, a.acked_packets), (3 * MSS, 3));
        assert_eq!(a.largest_acked_sent_time, ms(2.0));
        assert_eq!((a.prior_in_flight, a.in_flight), (10 * MSS, 7 * MSS));
        assert_eq!(a.rtt_sample, Some(Duration::from_millis(48)));
        assert_eq!(a.smoothed_rtt, Some(Duration::from_millis(48)));
        assert_eq!(a.one_way_delay, None, "nothing feeds the hook");
    }

    #[test]
    fn rtt_sample_only_when_the_largest_acked_is_new() {
        let mut rig = Rig::new(None);
        for pn in 0..6 {
            rig.send(pn as f64, pn);
        }
        // Packet 5 is acked, 3 is a hole.
        rig.ack(
            50.0,
            &[(0, 0.0), (1, 1.0), (2, 2.0), (4, 4.0), (5, 5.0)],
            MSS,
            5,
        );
        // A later ACK fills the hole: the space's largest acked (5) is not new.
        rig.ack(70.0, &[(3, 3.0)], 0, 5);
        rig.adapter.window();
        let acks = rig.acks();
        assert_eq!(acks.len(), 2);
        assert_eq!(acks[0].rtt_sample, Some(Duration::from_millis(45)));
        assert_eq!(
            acks[1].rtt_sample, None,
            "largest acked was not newly acked"
        );
        assert_eq!(acks[1].min_rtt, Some(Duration::from_millis(45)));
        assert_eq!(acks[1].smoothed_rtt, Some(Duration::from_millis(45)));
        let hist = rig.factory.probe().rtt_histogram().expect("built");
        assert_eq!(hist.count(), 1, "one RTT sample recorded");
    }

    #[test]
    fn rate_samples_measure_a_paced_flight() {
        // One 1200-byte packet per ms (1.2 MB/s), each acked alone 50 ms later. From the second
        // flight on, each sample spans 50 packets over 50 ms (draft-cheng §3.3): exactly
        // 1.2 MB/s.
        let mut rig = Rig::new(None);
        let mut in_flight = 0;
        let mut next_ack = 0u64;
        for k in 0..200u64 {
            let now = k as f64;
            while next_ack + 50 <= k {
                in_flight -= MSS;
                rig.ack(now, &[(next_ack, next_ack as f64)], in_flight, next_ack);
                next_ack += 1;
            }
            rig.send(now, k);
            in_flight += MSS;
        }
        let acks = rig.acks();
        assert_eq!(acks.len(), 150);
        for (i, a) in acks.iter().enumerate() {
            let rate = a.rate.expect("a sample per ACK after a flight");
            assert!(rate.delivered > 0 && !rate.interval.is_zero());
            if i >= 50 {
                assert_eq!(rate.delivered, 50 * MSS, "ack {i}");
                assert_eq!(rate.interval, Duration::from_millis(50), "ack {i}");
                let bps = rate.delivery_rate().expect("non-empty").bytes_per_sec();
                assert!((bps - 1.2e6).abs() < 1e-3, "ack {i}: {bps}");
            }
        }
        let probe = rig.factory.probe().sample().expect("built");
        assert!(probe.delivery_rate.is_some());
    }

    #[test]
    fn losses_of_an_ack_reach_the_controller_before_it() {
        let mut rig = Rig::new(None);
        for pn in 0..5 {
            rig.send(pn as f64, pn);
        }
        rig.take();
        // Packet 4 is acked; noq then declares 0 and 1 lost (reported after on_end_acks).
        rig.ack(50.0, &[(4, 4.0)], 4 * MSS, 4);
        let now = rig.at(50.0);
        rig.adapter.on_packet_lost(MSS as u16, 0, now);
        rig.adapter.on_packet_lost(MSS as u16, 1, now);
        rig.adapter
            .on_congestion_event(now, rig.at(1.0), false, false, 2 * MSS, 1);
        rig.adapter.window();
        let calls = rig.take();
        assert_eq!(calls.len(), 2, "{calls:?}");
        let Call::Congestion(t, c) = calls[0] else {
            panic!("congestion first: {calls:?}")
        };
        assert_eq!(t, ms(50.0));
        assert_eq!(c.kind, CongestionKind::Loss);
        assert_eq!((c.lost_bytes, c.lost_packets), (2 * MSS, 2));
        assert_eq!(c.largest_sent_time, ms(1.0));
        assert_eq!((c.prior_in_flight, c.in_flight), (4 * MSS, 2 * MSS));
        let Call::Ack(_, a) = calls[1] else {
            panic!("then the ACK: {calls:?}")
        };
        assert_eq!((a.prior_in_flight, a.in_flight), (5 * MSS, 2 * MSS));
        assert_eq!(
            a.rate.expect("sample").lost,
            2 * MSS,
            "losses count in the sample"
        );
        let counters = rig.factory.probe().sample().expect("built").counters;
        assert_eq!((counters.packets_lost, counters.bytes_lost), (2, 2 * MSS));
        assert_eq!(counters.congestion_events, 1);
    }

    #[test]
    fn timer_losses_map_kinds_and_do_not_wait() {
        let mut rig = Rig::new(None);
        for pn in 0..3 {
            rig.send(pn as f64, pn);
        }
        rig.ack(50.0, &[(2, 2.0)], 2 * MSS, 2);
        // A loss-timer expiry later: the ACK is delivered first, then the event.
        let later = rig.at(80.0);
        rig.adapter.on_packet_lost(MSS as u16, 0, later);
        rig.adapter
            .on_congestion_event(later, rig.at(0.0), true, false, MSS, 0);
        let calls = rig.take();
        let kinds: Vec<_> = calls
            .iter()
            .filter_map(|c| match c {
                Call::Ack(t, _) => Some(("ack", *t)),
                Call::Congestion(t, e) => {
                    assert_eq!(e.kind, CongestionKind::PersistentCongestion);
                    assert_eq!((e.lost_bytes, e.lost_packets), (MSS, 1));
                    assert_eq!(e.largest_sent_time, ms(0.0));
                    Some(("congestion", *t))
                }
                _ => None,
            })
            .collect();
        assert_eq!(kinds, vec![("ack", ms(50.0)), ("congestion", ms(80.0))]);
        // ECN-CE: noq reports no bytes.
        let now = rig.at(90.0);
        rig.adapter
            .on_congestion_event(now, rig.at(1.0), false, true, 0, 1);
        let calls = rig.take();
        let Call::Congestion(_, e) = calls[0] else {
            panic!("{calls:?}")
        };
        assert_eq!(e.kind, CongestionKind::EcnCe);
        assert_eq!((e.lost_bytes, e.lost_packets), (0, 1));
        assert_eq!(e.largest_sent_time, ms(1.0));
    }

    #[test]
    fn loss_events_count_one_per_recovery_period_as_the_simulator_does() {
        let mut rig = Rig::new(None);
        for pn in 0..6 {
            rig.send(pn as f64, pn);
        }
        let lose = |rig: &mut Rig, at: f64, pn: u64, sent: f64| {
            let now = rig.at(at);
            rig.adapter.on_packet_lost(MSS as u16, pn, now);
            rig.adapter
                .on_congestion_event(now, rig.at(sent), false, false, MSS, pn);
        };
        // The first loss starts an event at 60 ms; a packet sent before it adds none; one
        // sent after it starts the next.
        lose(&mut rig, 60.0, 0, 0.0);
        lose(&mut rig, 70.0, 1, 1.0);
        rig.send(65.0, 6);
        lose(&mut rig, 130.0, 6, 65.0);
        let counters = rig.factory.probe().sample().expect("built").counters;
        assert_eq!(counters.congestion_events, 3);
        assert_eq!(counters.loss_events, 2);
    }

    #[test]
    fn pacing_rate_and_window_pass_through() {
        let rig = Rig::new(Some(Rate::from_bytes_per_sec(1_234_567.4)));
        let m = rig.adapter.metrics();
        assert_eq!(m.pacing_rate, Some(1_234_567));
        assert_eq!(m.congestion_window, 12_345);
        assert_eq!(rig.adapter.window(), 12_345);
        let rig = Rig::new(None);
        assert_eq!(rig.adapter.metrics().pacing_rate, None, "noq's own pacer");
        // A real pacing controller, built by the factory as noq would.
        let config = ControllerConfig::default();
        let factory = CcFactory::new("bbr", Params::new(), config).expect("bbr builds");
        let noq_cc = Arc::new(factory.clone()).build(std::time::Instant::now(), 1200);
        let reference = kleinrock_cc::build("bbr", &Params::new(), &config).expect("builds");
        let expected = reference.pacing_rate().expect("bbr paces");
        let m = noq_cc.metrics();
        assert_eq!(m.pacing_rate, Some(expected.bytes_per_sec().round() as u64));
        assert_eq!(noq_cc.window(), reference.cwnd());
        assert_eq!(noq_cc.initial_window(), config.initial_window());
        let sample = factory.probe().sample().expect("built");
        assert_eq!(sample.pacing_rate, Some(expected));
        assert_eq!(sample.cwnd, reference.cwnd());
    }

    #[test]
    fn app_limited_ack_marks_the_sampler_and_idles() {
        let mut rig = Rig::new(None);
        rig.send(0.0, 0);
        rig.take();
        let now = rig.at(50.0);
        rig.adapter.ack_packet(now, rig.at(0.0), MSS, 0, true);
        rig.adapter.on_end_acks(now, 0, true, Some(0));
        rig.adapter.window();
        let calls = rig.take();
        assert!(
            matches!(calls[0], Call::AppLimited(t) if t == ms(50.0)),
            "{calls:?}"
        );
        assert!(matches!(calls[1], Call::Ack(..)), "{calls:?}");
        assert!(
            matches!(calls[2], Call::Idle(t) if t == ms(50.0)),
            "{calls:?}"
        );
        // The next packet is sent in an app-limited phase.
        rig.send(60.0, 1);
        let calls = rig.take();
        let Call::Sent(_, p) = calls[0] else {
            panic!("{calls:?}")
        };
        assert!(p.snapshot.is_app_limited);
    }

    #[test]
    fn echo_reports_give_the_newest_delay_and_the_matched_ack_delay() {
        let mut rig = Rig::new(None);
        let (feed, report) = rig.sent_with_feed(5);
        // The echo of packet 2 (sent at 2 ms) and a newer one (of a datagram sent at 2.6 ms,
        // not packet 2) arrive before the ACK of packets 0-2 is read.
        feed.push(report(2.0, 20, 3));
        feed.push(report(2.6, 25, 1));
        rig.ack(50.0, &[(0, 0.0), (1, 1.0), (2, 2.0)], 0, 2);
        rig.adapter.window();
        // No report since: the next ACK has neither.
        rig.ack(60.0, &[(3, 3.0)], 0, 3);
        rig.adapter.window();
        // A hold above the peer's max_ack_delay is capped (RFC 9002 §5.3).
        feed.push(report(4.0, 20, 40));
        rig.ack(70.0, &[(4, 4.0)], 0, 4);
        rig.adapter.window();
        let acks = rig.acks();
        let owd = acks[0].one_way_delay.expect("fed");
        assert_eq!(owd.packet_number, 2);
        assert_eq!(owd.sent_time, ms(2.6));
        assert_eq!(owd.receive_time, ms(27.6));
        assert_eq!(acks[0].ack_delay, Some(Duration::from_millis(3)));
        assert_eq!(acks[1].one_way_delay, None);
        assert_eq!(acks[1].ack_delay, None);
        assert_eq!(acks[2].ack_delay, Some(PEER_MAX_ACK_DELAY));
        let counters = rig.factory.probe().sample().expect("a controller").counters;
        assert_eq!((counters.owd_samples, counters.ack_delay_samples), (2, 2));
    }

    #[test]
    fn a_queuing_delay_above_the_rtt_is_refused_and_counted() {
        let mut rig = Rig::new(None);
        let (feed, report) = rig.sent_with_feed(4);
        let report = |sent_ms, one_way_ms| report(sent_ms, one_way_ms, 0);
        // The first report sets the smallest delay; before any RTT sample, the ACK's 50 ms
        // since the largest packet was sent stands for the RTT: 40 ms more is possible, 60 is
        // not.
        feed.push(report(0.0, 1_000));
        feed.push(report(0.5, 1_040));
        feed.push(report(0.6, 1_060));
        rig.ack(50.0, &[(0, 0.0)], 3 * MSS, 0);
        rig.adapter.window();
        // RTT 50 ms now: 55 ms of queue is refused, a new smallest delay is taken.
        feed.push(report(1.0, 1_055));
        feed.push(report(1.1, 990));
        rig.ack(51.0, &[(1, 1.0)], 2 * MSS, 1);
        rig.adapter.window();
        // Only refused reports: the ACK has no sample.
        feed.push(report(2.0, 1_100));
        rig.ack(52.0, &[(2, 2.0)], MSS, 2);
        rig.adapter.window();
        let acks = rig.acks();
        let receive = |a: &AckEvent| a.one_way_delay.map(|o| o.receive_time - o.sent_time);
        assert_eq!(receive(&acks[0]), Some(Duration::from_millis(1_040)));
        assert_eq!(receive(&acks[1]), Some(Duration::from_millis(990)));
        assert_eq!(receive(&acks[2]), None);
        let counters = rig.factory.probe().sample().expect("built").counters;
        assert_eq!(counters.owd_rejected_queuing, 3);
        assert_eq!(counters.owd_samples, 2);
        // The stamps layer's refusals are in the connection's counters too.
        feed.reject(Rejection::UnknownEcho);
        feed.reject(Rejection::Backwards);
        feed.reject(Rejection::Backwards);
        let counters = rig.factory.probe().sample().expect("built").counters;
        assert_eq!(
            (
                counters.owd_rejected_unknown_echo,
                counters.owd_rejected_backwards
            ),
            (1, 2)
        );
    }

    #[test]
    fn each_connection_has_its_own_feed_and_probe() {
        let base =
            CcFactory::new("quic_dc", Params::new(), ControllerConfig::default()).expect("builds");
        let (a, b) = (base.for_connection(), base.for_connection());
        let mut first = a.new_adapter();
        let second = b.new_adapter();
        // The base probe follows the controller built last, each connection's its own.
        first.on_packet_sent(std::time::Instant::now(), 1200, 0);
        let sent = |f: &CcFactory| f.probe().sample().expect("built").counters.packets_sent;
        assert_eq!((sent(&a), sent(&b), sent(&base)), (1, 0, 0));
        // A report for one connection is not the other's.
        a.owd_feed().push(EchoReport {
            sent: std::time::Instant::now(),
            one_way: Duration::from_secs(10),
            hold: Duration::ZERO,
        });
        assert!(b.owd_feed().drain().is_empty());
        assert!(base.owd_feed().drain().is_empty());
        assert_eq!(a.owd_feed().drain().len(), 1);
        // A connection's connection factory is its sibling, with the same parent.
        let c = a.for_connection();
        let _third = c.new_adapter();
        assert_eq!(
            sent(&base),
            0,
            "the base probe moved to the newest controller"
        );
        drop(second);
    }

    #[test]
    fn packet_numbers_reused_by_spaces_find_their_own_record() {
        let mut rig = Rig::new(None);
        // Initial packet 0 at 0 ms, then application-data packet 0 at 5 ms.
        rig.send(0.0, 0);
        rig.send(5.0, 0);
        rig.ack(40.0, &[(0, 5.0)], MSS, 0);
        rig.adapter.window();
        let s = rig.adapter.lock();
        assert_eq!(s.records.len(), 1);
        let left = s.records.values().next().expect("one left");
        assert_eq!(
            left.sent,
            ms(0.0),
            "the data-space record was the one acked"
        );
    }

    #[test]
    fn probe_follows_the_latest_controller() {
        let factory =
            CcFactory::new("cubic", Params::new(), ControllerConfig::default()).expect("builds");
        let probe = factory.probe();
        assert!(probe.sample().is_none());
        assert!(probe.rtt_histogram().is_none());
        let mut a = factory.new_adapter();
        a.on_packet_sent(std::time::Instant::now(), 1200, 0);
        let s = probe.sample().expect("built");
        assert_eq!((s.counters.packets_sent, s.in_flight), (1, 1200));
        assert_eq!(
            s.state.mode,
            kleinrock_cc::build("cubic", &Params::new(), &ControllerConfig::default())
                .expect("builds")
                .state()
                .mode
        );
        // A new path gets a fresh controller and the probe moves to it.
        let b = a.clone_box();
        assert_eq!(probe.sample().expect("built").counters.packets_sent, 0);
        drop(b);
        assert!(format!("{a:?}").contains("cubic"));
    }

    #[test]
    fn unknown_controller_is_refused() {
        let e = CcFactory::new("renoo", Params::new(), ControllerConfig::default()).unwrap_err();
        assert!(e.to_string().contains("renoo"));
    }
}
