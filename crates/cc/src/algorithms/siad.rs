//! TCP SIAD, Scalable Increase Adaptive Decrease, counted in packets as the authors' module.
//!
//! Source: the SIAD paper, M. Kühlewind, "TCP SIAD: Congestion Control supporting High Speed and
//! Low Latency", ETH TIK Technical Report 367, 2016 (§III; equations (3)-(19)), and the behaviour
//! of the author's Linux 3.5.7 module `tcp_siad.c` (`tcp_siad_cong_avoid`, `tcp_siad_ssthresh`,
//! `tcp_siad_cwnd_event`; where the paper leaves room). The five parts: Scalable Increase
//! (eq. 3), the Trend (eq. 4-5), Fast Increase (eq. 6; slow start uses the same mechanism),
//! Adaptive Decrease with the estimated window at the congestion event (eq. 7-14), and
//! Additional Decrease (eq. 15-19). `docs/siad.md` lists every choice made.
//!
//! As in the module, the window and its thresholds are whole packets, and the increase step is
//! kept as `increase` = alpha x Num_RTT (fixed point), so alpha = increase / Num_RTT and the ACK
//! counter needs cwnd x Num_RTT / increase packets per one-packet increase. The QUIC-style
//! transport gives one ACK event per ACK; a recovery period (RFC 9002 §7.3.2) stands in for
//! Linux's Recovery/CWR states, in which the module is not called.

use crate::algorithms::recovery::RecoveryEpoch;
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec, ParamValue,
};
use std::time::Duration;

/// Default number of RTTs per congestion epoch (`NUM_RTT` of tcp_siad.c).
pub const DEFAULT_NUM_RTT: u64 = 20;
/// Default resolution of RTT samples: the module's jiffies at HZ = 1000.
const DEFAULT_RTT_GRANULARITY: Duration = Duration::from_millis(1);
/// Fewest RTTs per epoch the module accepts (`MIN_RTT`).
const MIN_NUM_RTT: u64 = 2;
/// Most RTTs per epoch accepted here.
const MAX_NUM_RTT: u64 = 10_000;
/// The "-1" of eq. (8) and (15): one packet more, so the queue drains (`OFFSET`).
const OFFSET: u64 = 1;
/// Smallest window, packets (`MIN_CWND`).
const MIN_CWND: u64 = 2;

/// Parameters SIAD accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "num_rtt",
        kind: ParamKind::Number,
        default: "20",
        doc: "RTTs per congestion epoch, the feedback rate (Num_RTT, eq. (3)), a whole number \
              from 2; a flow event may change it during the run, like the TCP_SIAD_NUM_RTT \
              socket option",
    },
    ParamSpec {
        name: "rtt_granularity",
        kind: ParamKind::Duration,
        default: "1ms",
        doc: "RTT samples are rounded down to a multiple of this, as the module's jiffies \
              (1 ms at HZ = 1000); 0ms keeps nanoseconds",
    },
    ParamSpec {
        name: "num_ms",
        kind: ParamKind::Duration,
        default: "0ms (off)",
        doc: "epoch length in time (Num_ms): Num_RTT becomes the larger of num_rtt and \
              2 num_ms / (RTT_curr + RTT_min) at each congestion event",
    },
];

/// Registry entry for `siad`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "siad",
    summary: "TCP SIAD: Scalable Increase Adaptive Decrease with Fast Increase and Additional \
              Decrease (Kühlewind, SIAD paper; tcp_siad.c)",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &["num_rtt"],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build,
};

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    let num_rtt = reader.whole_number_in("num_rtt", DEFAULT_NUM_RTT, MIN_NUM_RTT, MAX_NUM_RTT)?;
    let num_ms = reader.duration("num_ms", None).unwrap_or(Duration::ZERO);
    let granularity = reader.duration_in(
        "rtt_granularity",
        DEFAULT_RTT_GRANULARITY,
        Duration::ZERO,
        Duration::from_millis(100),
    )?;
    let mut siad = Siad::new(config, num_rtt, num_ms);
    siad.rtt_granularity = granularity;
    Ok(Box::new(siad))
}

/// The phase the window is in, as the paper names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Below ssthresh: alpha = cwnd, doubling per RTT.
    SlowStart,
    /// Between ssthresh and incthresh: alpha packets per RTT (eq. (1), (3)).
    LinearIncrement,
    /// Above incthresh: alpha doubles per RTT up to cwnd / 2 (eq. (6)).
    FastIncrease,
}

/// Minimum-RTT bookkeeping (paper §III-C "RTT estimation"; tcp_siad.c's delay fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Delays {
    /// The previous sample, to filter single outliers.
    prev: Option<Duration>,
    /// RTT_curr: the smaller of the last two samples (eq. (7)).
    curr: Option<Duration>,
    /// RTT_min (eq. (9)).
    min: Option<Duration>,
    /// The smallest sample since the last congestion event.
    epoch_min: Option<Duration>,
    /// Whether RTT_min was seen after the last reduction (else: Additional Decrease).
    min_seen: bool,
    /// RTT_min at up to three successive congestion events where it kept growing (the
    /// module's guard against a minimum that creeps up through measurement errors).
    rising: [Option<Duration>; 3],
}

impl Delays {
    /// Takes a sample; `may_accept_epoch_min` is the module's "the window has grown a step past
    /// ssthresh" condition under which a repeated epoch minimum becomes RTT_min (§III-C: the
    /// same minimum over subsequent RTTs means the queue is empty).
    fn on_sample(&mut self, sample: Duration, may_accept_epoch_min: bool) {
        self.curr = Some(self.prev.map_or(sample, |p| p.min(sample)));
        self.prev = Some(sample);
        if self.min.is_none_or(|m| sample <= m) {
            self.min = Some(sample);
            self.min_seen = true;
            self.epoch_min = Some(sample);
        } else if self.epoch_min.is_none_or(|m| sample <= m) {
            self.epoch_min = Some(sample);
            if may_accept_epoch_min {
                self.min = Some(sample);
                self.min_seen = true;
            }
        }
    }

    /// RTT_min / RTT_curr as a ratio applied to `packets`, when both are known.
    fn scale(&self, packets: u64) -> Option<u64> {
        let (min, curr) = (self.min?, self.curr?);
        let curr = curr.as_nanos().max(1);
        Some((u128::from(packets) * min.as_nanos() / curr) as u64)
    }

    /// The module's route-change guard, at a congestion event: when RTT_min grew at three
    /// successive events, it goes back to the first of them.
    fn guard_rising_min(&mut self) {
        let Some(min) = self.min else {
            return;
        };
        if self.rising.iter().flatten().any(|&r| min < r) {
            self.rising = [None; 3];
            return;
        }
        match self.rising {
            [None, ..] => self.rising[0] = Some(min),
            [Some(a), None, _] if min > a => self.rising[1] = Some(min),
            [Some(a), Some(b), None] if min > a && min > b => self.rising[2] = Some(min),
            [Some(a), Some(b), Some(c)] if min > a && min > b && min > c => {
                self.min = Some(a);
                self.rising = [Some(a), None, None];
            }
            _ => {}
        }
    }

    /// A new epoch begins (recovery ended): the epoch minimum restarts and RTT_min must be
    /// seen again.
    fn new_epoch(&mut self) {
        self.epoch_min = None;
        self.min_seen = false;
    }
}

/// A TCP SIAD controller.
#[derive(Clone, Debug)]
pub struct Siad {
    mss: u64,
    /// Congestion window, packets.
    cwnd: u64,
    /// Slow-start threshold, packets (`u64::MAX` until the first congestion event).
    ssthresh: u64,
    /// alpha x Num_RTT: the increase step in fixed point.
    increase: u64,
    /// The Linear Increment threshold, the epoch's target (eq. (4)).
    incthresh: u64,
    /// cwnd_max of the last congestion event (eq. (10)-(14)), packets.
    cwnd_max: u64,
    /// The last trend (eq. (5)), packets.
    trend: i64,
    /// Num_RTT in use.
    num_rtt: u64,
    /// Num_RTT as configured.
    default_num_rtt: u64,
    /// A Num_RTT set during the run (`set_param`), which then wins.
    set_num_rtt: Option<u64>,
    num_ms: Duration,
    /// Resolution of RTT samples (zero: none).
    rtt_granularity: Duration,
    /// Acked packets not yet turned into window growth.
    ack_count: u64,
    /// Additional decreases in this epoch (cnt_dec).
    decreases: u64,
    /// Total additional decreases (traced).
    decreases_total: u64,
    /// The window grew since the last reduction (else cwnd_max is cwnd).
    increased: bool,
    delays: Delays,
    recovery: RecoveryEpoch,
}

impl Siad {
    /// A controller with `num_rtt` RTTs per epoch and, if non-zero, an epoch length `num_ms`.
    pub fn new(config: &ControllerConfig, num_rtt: u64, num_ms: Duration) -> Self {
        let iw = config.initial_window_packets.max(MIN_CWND);
        // §III-B Fast Increase: incthresh = alpha = cwnd_max = IW makes slow start double.
        Siad {
            mss: config.max_datagram_size,
            cwnd: iw,
            ssthresh: u64::MAX,
            increase: iw * num_rtt,
            incthresh: iw,
            cwnd_max: iw,
            trend: 0,
            num_rtt,
            default_num_rtt: num_rtt,
            set_num_rtt: None,
            num_ms,
            rtt_granularity: Duration::ZERO,
            ack_count: 0,
            decreases: 0,
            decreases_total: 0,
            increased: false,
            delays: Delays {
                min_seen: true,
                ..Delays::default()
            },
            recovery: RecoveryEpoch::default(),
        }
    }

    /// alpha in packets per RTT (integer, as the module divides).
    pub fn alpha(&self) -> u64 {
        self.increase / self.num_rtt
    }

    /// The phase of the window.
    pub fn phase(&self) -> Phase {
        if self.cwnd < self.ssthresh {
            Phase::SlowStart
        } else if self.cwnd > self.incthresh {
            Phase::FastIncrease
        } else {
            Phase::LinearIncrement
        }
    }

    /// RTT_min as estimated now.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.delays.min
    }

    /// Num_RTT in use.
    pub fn num_rtt(&self) -> u64 {
        self.num_rtt
    }

    /// Window in packets.
    pub fn cwnd_packets(&self) -> u64 {
        self.cwnd
    }

    /// The delay sample of an ACK: its RTT sample, else the smoothed RTT (tcp_siad.c takes
    /// the timestamp echo, else srtt), rounded down to the sample resolution as jiffies are.
    fn take_delay_sample(&mut self, ack: &AckEvent) {
        let Some(sample) = ack.rtt_sample.or(ack.smoothed_rtt) else {
            return;
        };
        let sample = self.quantize(sample);
        let grown = self.cwnd > self.ssthresh.saturating_add(self.alpha() + 1);
        self.delays.on_sample(sample, grown);
        // No Additional Decrease in slow start or Fast Increase.
        if self.phase() != Phase::LinearIncrement {
            self.delays.min_seen = true;
        }
    }

    fn quantize(&self, sample: Duration) -> Duration {
        let g = self.rtt_granularity.as_nanos();
        if g == 0 {
            return sample;
        }
        Duration::from_nanos((sample.as_nanos() / g * g) as u64)
    }

    /// Whether this ACK triggers an Additional Decrease (§III-A, paper §III-C: the minimum
    /// was not seen within an RTT after the reduction; at most Num_RTT - 1 per epoch).
    fn additional_decrease_due(&self) -> bool {
        self.cwnd > self.ssthresh.saturating_add(self.alpha() + 2)
            && !self.delays.min_seen
            && self.decreases + 1 < self.num_rtt
    }

    /// (incthresh - cwnd) x Num_RTT / remaining RTTs, at least one packet per RTT: the
    /// increase step that still reaches incthresh by the end of the epoch.
    fn increase_to_target(&self, remaining_rtts: u64) -> u64 {
        let gap = self.incthresh.saturating_sub(self.cwnd);
        (gap * self.num_rtt / remaining_rtts.max(1)).max(self.num_rtt)
    }

    /// Additional Decrease, eq. (15)-(19).
    fn additional_decrease(&mut self) {
        self.decreases += 1;
        self.decreases_total += 1;
        self.ack_count = 0;
        let remaining = self.num_rtt - self.decreases;
        // SIAD eq. (15): cwnd = RTT_min / RTT_curr x ssthresh - 1 (ssthresh: cwnd an RTT ago).
        let scaled = self.delays.scale(self.ssthresh).unwrap_or(self.ssthresh);
        if scaled > MIN_CWND + OFFSET {
            self.cwnd = scaled - OFFSET;
            // SIAD eq. (18): alpha_new over the remaining RTTs but one (guarded: the module
            // divides by zero on the last permitted decrease).
            self.increase = self.increase_to_target(remaining - 1);
            let alpha_new = self.alpha();
            // SIAD eq. (17): red reaches MIN_CWND after the remaining decreases.
            let red = self.cwnd / remaining;
            // SIAD eq. (16): cwnd = max(cwnd - max(red, alpha_new), MIN_CWND).
            self.cwnd = self.reduce_by(red.max(alpha_new));
            if red >= alpha_new {
                // SIAD eq. (19): alpha over the remaining RTTs.
                self.increase = self.increase_to_target(remaining);
            }
        } else {
            self.cwnd = MIN_CWND;
            self.delays.min_seen = true;
            self.increase = self.increase_to_target(remaining);
        }
        self.ssthresh = self.cwnd - 1;
        // alpha above cwnd would be more than slow start: no further Additional Decrease.
        if self.increase > self.cwnd * self.num_rtt {
            self.delays.min_seen = true;
        }
    }

    /// cwnd - `by`, or MIN_CWND (then no further Additional Decrease) if that leaves less
    /// than MIN_CWND above zero.
    fn reduce_by(&mut self, by: u64) -> u64 {
        if by + MIN_CWND < self.cwnd {
            self.cwnd - by
        } else {
            self.delays.min_seen = true;
            MIN_CWND
        }
    }

    /// The regular increase (eq. (1) with alpha, eq. (3), (6); the module's `cong_avoid`).
    fn increase_window(&mut self, acked_bytes: u64) {
        if let Some(n) = self.set_num_rtt {
            self.num_rtt = n;
        }
        // Delayed-ACK compensation: packets from acked bytes, rounded up.
        let acked = acked_bytes.div_ceil(self.mss).max(1);
        self.ack_count += acked;
        let next = (self.cwnd * self.num_rtt / self.increase.max(1)).max(1);
        if self.ack_count < next {
            return;
        }
        let steps = self.ack_count / next;
        let inc = acked.min(steps);
        let before = self.cwnd;
        self.cwnd += inc;
        self.increased = true;
        self.adapt_increase(before, inc);
        self.ack_count -= steps * next;
    }

    /// alpha at the thresholds and in slow start / Fast Increase (tcp_siad.c order).
    fn adapt_increase(&mut self, before: u64, inc: u64) {
        let crossed_ssthresh = before < self.ssthresh && self.cwnd >= self.ssthresh;
        let crossed_incthresh = before < self.incthresh && self.cwnd >= self.incthresh;
        if crossed_ssthresh && self.incthresh > self.ssthresh {
            // SIAD eq. (3): alpha = (incthresh - ssthresh) / Num_RTT, at least 1.
            self.increase = (self.incthresh - self.ssthresh).max(self.num_rtt);
        } else if crossed_ssthresh || crossed_incthresh {
            // §III-B: entering Fast Increase (or leaving slow start without a target): alpha = 1.
            self.increase = self.num_rtt;
        } else if self.cwnd > self.incthresh && self.increase < (self.cwnd / 2) * self.num_rtt {
            // SIAD eq. (6): alpha += alpha / cwnd per ACK, i.e. doubling per RTT, up to cwnd / 2.
            self.increase += inc * self.num_rtt;
        } else if self.cwnd < self.ssthresh {
            // Slow start: alpha = cwnd.
            self.increase = self.cwnd * self.num_rtt;
        }
    }

    /// cwnd_max: the window when congestion happened, about an RTT before it was detected
    /// (eq. (10)-(14)); the window itself when it did not grow since the last reduction.
    fn estimated_max(&self) -> u64 {
        let cwnd = self.cwnd;
        if !self.increased {
            return cwnd;
        }
        let alpha = self.alpha();
        if self.increase >= cwnd * self.num_rtt || cwnd <= self.ssthresh {
            // SIAD eq. (14): slow start at alpha = cwnd, halve.
            cwnd - cwnd / 2
        } else if cwnd > self.incthresh && self.increase == (cwnd / 2) * self.num_rtt {
            // SIAD eq. (13): Fast Increase at alpha = cwnd / 2, one third less.
            cwnd - cwnd / 3
        } else if cwnd >= self.incthresh
            && self.incthresh > self.ssthresh
            && self.increase == self.num_rtt
        {
            // SIAD eq. (12): incthresh just passed, alpha reset to 1; the old step.
            cwnd - (self.incthresh - self.ssthresh) / self.num_rtt
        } else if cwnd > self.incthresh {
            // SIAD eq. (11): Fast Increase, alpha doubled in the last RTT.
            cwnd - (cwnd - MIN_CWND).min(alpha / 2)
        } else {
            // SIAD eq. (10): Linear Increment, alpha added in the last RTT.
            cwnd - (cwnd - MIN_CWND).min(alpha)
        }
    }

    /// Num_RTT for the next epoch: the value set during the run, else from Num_ms, else the
    /// configured one.
    fn next_num_rtt(&self) -> u64 {
        if let Some(n) = self.set_num_rtt {
            return n;
        }
        match (self.delays.min, self.delays.curr) {
            (Some(min), Some(curr)) if !self.num_ms.is_zero() => {
                // Num_RTT = 2 Num_ms / (RTT_curr + RTT_min), at least the configured value.
                let mean_rtt = (min + curr).as_nanos().max(1);
                let from_ms = (2 * self.num_ms.as_nanos() / mean_rtt) as u64;
                from_ms.max(self.default_num_rtt)
            }
            _ => self.default_num_rtt,
        }
    }

    /// Adaptive Decrease with Scalable Increase and the Trend for the next epoch
    /// (eq. (3)-(5), (7)-(14)); returns the new ssthresh.
    fn adaptive_decrease(&mut self) -> u64 {
        self.ack_count = 0;
        let cwnd_max = self.estimated_max();
        self.delays.guard_rising_min();
        // SIAD eq. (7)-(9): ssthresh = RTT_min / RTT_curr x cwnd_max - 1 (halve without delays).
        let scaled = self.delays.scale(cwnd_max).unwrap_or(cwnd_max / 2);
        self.ssthresh = if scaled > MIN_CWND + OFFSET {
            scaled - OFFSET
        } else {
            MIN_CWND
        };
        self.num_rtt = self.next_num_rtt();
        // SIAD eq. (5): trend = cwnd_max - prev_cwnd_max.
        self.trend = cwnd_max as i64 - self.cwnd_max as i64;
        // SIAD eq. (4): incthresh = cwnd_max + trend, at least ssthresh; the trend is ignored
        // after a drop to less than half (a sudden loss of capacity).
        self.incthresh = if self.cwnd_max < 2 * cwnd_max {
            ((cwnd_max as i64 + self.trend).max(0) as u64).max(self.ssthresh)
        } else {
            self.ssthresh
        };
        // SIAD eq. (3): alpha = (incthresh - ssthresh) / Num_RTT, at least 1 per RTT.
        self.increase = (self.incthresh - self.ssthresh).max(self.num_rtt);
        self.cwnd_max = cwnd_max;
        self.ssthresh
    }

    fn window_bytes(&self, packets: u64) -> u64 {
        packets.saturating_mul(self.mss)
    }
}

impl Controller for Siad {
    fn on_ack(&mut self, _now: Instant, ack: &AckEvent) {
        let was_in_recovery = self.recovery.in_recovery();
        if !self.recovery.on_ack(ack.largest_acked_sent_time) {
            return;
        }
        if was_in_recovery {
            // The module's CA_EVENT_COMPLETE_CWR: a new epoch begins.
            self.delays.new_epoch();
            self.decreases = 0;
            self.increased = false;
        }
        self.take_delay_sample(ack);
        if ack.app_limited {
            return;
        }
        if self.additional_decrease_due() {
            self.additional_decrease();
        } else {
            self.increase_window(ack.acked_bytes);
        }
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        let persistent = event.kind == CongestionKind::PersistentCongestion;
        if persistent {
            self.recovery.clear();
        }
        if !self.recovery.on_congestion(now, event.largest_sent_time) {
            return;
        }
        let ssthresh = self.adaptive_decrease();
        // Linux's PRR brings cwnd to ssthresh over the recovery; QUIC sets it at once. A
        // timeout-like persistent congestion restarts from the minimum in slow start.
        self.cwnd = if persistent { MIN_CWND } else { ssthresh };
        if persistent {
            self.increase = self.cwnd * self.num_rtt;
        }
    }

    fn set_param(&mut self, _now: Instant, name: &str, value: &ParamValue) {
        if let ("num_rtt", ParamValue::Number(n)) = (name, value) {
            // Like the socket option: taken at the next increase and at every later event.
            self.set_num_rtt = Some(*n as u64);
        }
    }

    fn cwnd(&self) -> u64 {
        self.window_bytes(self.cwnd)
    }

    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != u64::MAX).then(|| self.window_bytes(self.ssthresh))
    }

    fn in_slow_start(&self) -> bool {
        self.phase() == Phase::SlowStart
    }

    fn state(&self) -> ControllerState {
        let ms = |d: Option<Duration>| d.map_or(-1.0, |d| d.as_secs_f64() * 1e3);
        let mode = if self.recovery.in_recovery() {
            "recovery"
        } else {
            match self.phase() {
                Phase::SlowStart => "slow_start",
                Phase::LinearIncrement => "linear_increment",
                Phase::FastIncrease => "fast_increase",
            }
        };
        ControllerState {
            mode,
            values: vec![
                ("cwnd_packets", self.cwnd as f64),
                ("alpha_packets", self.increase as f64 / self.num_rtt as f64),
                ("incthresh_packets", self.incthresh as f64),
                ("cwnd_max_packets", self.cwnd_max as f64),
                ("trend_packets", self.trend as f64),
                (
                    "ssthresh_packets",
                    if self.ssthresh == u64::MAX {
                        -1.0
                    } else {
                        self.ssthresh as f64
                    },
                ),
                ("additional_decreases", self.decreases_total as f64),
                ("num_rtt", self.num_rtt as f64),
                ("rtt_min_ms", ms(self.delays.min)),
                ("rtt_curr_ms", ms(self.delays.curr)),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, at};

    const MSS: u64 = 1500;
    const MIN_RTT: Duration = Duration::from_millis(100);

    fn config() -> ControllerConfig {
        ControllerConfig {
            max_datagram_size: MSS,
            ..ControllerConfig::default()
        }
    }

    /// An ACK of one packet sent at `sent_ms`, with an RTT sample of `rtt`.
    fn ack(sent_ms: u64, rtt: Duration) -> AckEvent {
        let mut a = testing::ack_with_rtt(MSS, at(sent_ms), rtt);
        a.min_rtt = Some(MIN_RTT);
        a
    }

    fn loss(sent_ms: u64) -> CongestionEvent {
        testing::congestion(CongestionKind::Loss, at(sent_ms))
    }

    /// A controller in Linear Increment at `cwnd` = ssthresh, with target `incthresh`, RTT_min
    /// 100 ms known and seen.
    fn linear(num_rtt: u64, cwnd: u64, incthresh: u64) -> Siad {
        let mut s = Siad::new(&config(), num_rtt, Duration::ZERO);
        s.cwnd = cwnd;
        s.ssthresh = cwnd;
        s.incthresh = incthresh;
        s.increase = incthresh.saturating_sub(cwnd).max(num_rtt);
        s.delays.on_sample(MIN_RTT, false);
        s
    }

    /// One round trip: every packet of the window acked one by one with RTT `rtt`.
    fn round(s: &mut Siad, rtt: Duration, sent_ms: u64) {
        round_with(s, |_| rtt, sent_ms);
    }

    /// One round trip whose RTT samples depend on the window (a queue it builds).
    fn round_with(s: &mut Siad, rtt: impl Fn(u64) -> Duration, sent_ms: u64) {
        for _ in 0..s.cwnd {
            s.on_ack(at(sent_ms + 100), &ack(sent_ms, rtt(s.cwnd)));
        }
    }

    #[test]
    fn linear_increment_reaches_incthresh_in_num_rtt_round_trips() {
        // SIAD eq. (3): alpha = (incthresh - ssthresh) / Num_RTT, so the window reaches
        // incthresh after Num_RTT RTTs. Tolerance: one RTT, for the whole-packet ACK counter
        // (tcp_siad.c's `next` is an integer).
        for (num_rtt, cwnd, incthresh) in [(20, 100, 300), (20, 400, 500), (40, 1000, 2000)] {
            let mut s = linear(num_rtt, cwnd, incthresh);
            let mut rtts = 0;
            while s.cwnd < incthresh {
                round(&mut s, MIN_RTT, rtts * 100);
                rtts += 1;
                assert!(rtts < 3 * num_rtt, "never reached incthresh");
            }
            assert!(
                rtts.abs_diff(num_rtt) <= 1,
                "{cwnd} -> {incthresh} took {rtts} RTTs for Num_RTT {num_rtt}"
            );
            assert_eq!(s.phase(), Phase::LinearIncrement);
            // Then Fast Increase: alpha starts again at 1 and doubles per RTT (eq. (6)).
            round(&mut s, MIN_RTT, 10_000);
            assert_eq!(s.phase(), Phase::FastIncrease);
            let a0 = s.alpha();
            round(&mut s, MIN_RTT, 10_100);
            round(&mut s, MIN_RTT, 10_200);
            assert!(
                s.alpha() >= 3 * a0,
                "alpha {a0} -> {} in two RTTs",
                s.alpha()
            );
        }
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        // §III-B: incthresh = alpha = cwnd_max = IW gives slow start's doubling per RTT.
        let mut s = Siad::new(&config(), 20, Duration::ZERO);
        round(&mut s, MIN_RTT, 0);
        assert_eq!(s.cwnd, 20);
        round(&mut s, MIN_RTT, 100);
        assert_eq!(s.cwnd, 40);
        assert_eq!(s.phase(), Phase::SlowStart);
    }

    /// cwnd_max of a controller in the given state.
    fn cwnd_max(cwnd: u64, ssthresh: u64, incthresh: u64, alpha: u64) -> u64 {
        let mut s = linear(20, cwnd.min(ssthresh), incthresh);
        s.cwnd = cwnd;
        s.ssthresh = ssthresh;
        s.increase = alpha * 20;
        s.increased = true;
        s.estimated_max()
    }

    #[test]
    fn the_five_cwnd_max_cases() {
        // SIAD eq. (14): slow start with alpha = cwnd: halve.
        assert_eq!(cwnd_max(100, u64::MAX, 10, 100), 50);
        // SIAD eq. (13): Fast Increase at alpha = cwnd / 2: one third less.
        assert_eq!(cwnd_max(100, 40, 60, 50), 67);
        // SIAD eq. (12): incthresh just passed, alpha = 1: the old step (80 - 40) / 20 = 2.
        assert_eq!(cwnd_max(82, 40, 80, 1), 80);
        // SIAD eq. (11): Fast Increase: alpha / 2.
        assert_eq!(cwnd_max(100, 40, 80, 16), 92);
        // SIAD eq. (10): Linear Increment: alpha.
        assert_eq!(cwnd_max(70, 40, 80, 2), 68);
        // No increase since the last reduction: no adjustment.
        let mut s = linear(20, 70, 80);
        s.increased = false;
        assert_eq!(s.estimated_max(), 70);
    }

    #[test]
    fn adaptive_decrease_removes_the_estimated_queue() {
        // SIAD eq. (7)-(9): ssthresh = RTT_min / RTT_curr x cwnd_max - 1. cwnd 100 in Linear
        // Increment with alpha 2: cwnd_max 98; RTT_curr 125 ms against 100: 98 x 0.8 - 1 = 77.
        let mut s = linear(20, 100, 200);
        s.ssthresh = 90;
        s.increase = 40;
        s.increased = true;
        s.cwnd_max = 100;
        s.delays.on_sample(Duration::from_millis(125), false);
        s.delays.on_sample(Duration::from_millis(125), false);
        s.on_congestion(at(1000), &loss(990));
        assert_eq!(s.cwnd_max, 98);
        assert_eq!(s.ssthresh, 77);
        assert_eq!(s.cwnd, 77);
        // SIAD eq. (4)-(5) and (3): trend = 98 - 100, incthresh = 96, alpha = (96 - 77) / 20
        // rounded down, at least 1.
        assert_eq!(s.trend, -2);
        assert_eq!(s.incthresh, 96);
        assert_eq!(s.alpha(), 1);
        // A second loss in the same recovery period changes nothing.
        s.on_congestion(at(1010), &loss(995));
        assert_eq!(s.cwnd, 77);
    }

    /// A controller right after a reduction whose queue did not drain: RTT_min 100 ms known,
    /// epoch restarted (minimum not seen yet).
    fn after_reduction(num_rtt: u64) -> Siad {
        let mut s = linear(num_rtt, 100, 200);
        s.delays.new_epoch();
        s
    }

    #[test]
    fn additional_decreases_come_when_the_minimum_is_not_seen_at_most_num_rtt_minus_one() {
        // Paper §III-A: Additional Decrease when RTT_min is not seen in the RTT after a
        // reduction, at most one per RTT and Num_RTT - 1 per epoch (eq. (15)-(19)).
        let num_rtt = 20;
        let mut s = after_reduction(num_rtt);
        // Another flow's standing queue of 50 ms, plus the queue of this flow's own window: the
        // RTT never comes back to 100 ms and grows with the window.
        let standing = |cwnd: u64| Duration::from_micros(150_000 + 500 * cwnd);
        for r in 0..2 * num_rtt {
            round_with(&mut s, standing, r * 100);
        }
        let n = s.decreases_total;
        assert!(n >= 1, "no additional decrease with a standing queue");
        assert!(n < num_rtt, "{n} additional decreases in one epoch");
        assert!(s.cwnd >= MIN_CWND);
        // The same path with the minimum seen: none.
        let mut s = after_reduction(num_rtt);
        for r in 0..2 * num_rtt {
            round(&mut s, MIN_RTT, r * 100);
        }
        assert_eq!(s.decreases_total, 0);
    }

    #[test]
    fn an_additional_decrease_keeps_the_target_reachable() {
        // SIAD eq. (15)-(19) on one step: cwnd = 0.8 x 100 - 1 = 79, then minus
        // max(red, alpha_new) with red = 79 / 19 = 4 and alpha_new = (200 - 79) / 18 = 6.
        let mut s = after_reduction(20);
        s.cwnd = 108;
        s.delays.on_sample(Duration::from_millis(125), false);
        s.delays.on_sample(Duration::from_millis(125), false);
        s.additional_decrease();
        assert_eq!(s.decreases, 1);
        assert_eq!(s.cwnd, 73);
        assert_eq!(s.ssthresh, 72);
        // alpha_new kept: (200 - 79) x 20 / 18 in fixed point.
        assert_eq!(s.increase, 121 * 20 / 18);
    }

    #[test]
    fn num_rtt_set_during_the_run_changes_alpha_at_once_and_later_epochs() {
        // The TCP_SIAD_NUM_RTT socket option: alpha = increase / Num_RTT with the new value.
        let mut s = linear(20, 100, 300);
        assert_eq!(s.alpha(), 10);
        s.set_param(at(0), "num_rtt", &ParamValue::Number(40.0));
        s.on_ack(at(100), &ack(0, MIN_RTT));
        assert_eq!(s.num_rtt(), 40);
        assert_eq!(s.alpha(), 5);
        s.increased = true;
        s.on_congestion(at(200), &loss(150));
        assert_eq!(s.num_rtt(), 40);
    }

    #[test]
    fn num_ms_sets_num_rtt_from_the_mean_rtt() {
        // Num_RTT = max(num_rtt, 2 Num_ms / (RTT_curr + RTT_min)): 4 s over 100 ms = 40.
        let mut s = Siad::new(&config(), 20, Duration::from_secs(4));
        s.delays.on_sample(MIN_RTT, false);
        s.on_congestion(at(1000), &loss(900));
        assert_eq!(s.num_rtt(), 40);
    }

    #[test]
    fn a_minimum_rising_at_three_events_goes_back_to_the_first() {
        // tcp_siad.c's guard against a minimum that creeps up through measurement errors.
        let mut d = Delays::default();
        for ms in [100, 110, 120, 130] {
            d.min = Some(Duration::from_millis(ms));
            d.guard_rising_min();
        }
        assert_eq!(d.min, Some(MIN_RTT));
        // A single step up (a longer route) is kept.
        let mut d = Delays::default();
        for ms in [100, 140, 140, 140, 140] {
            d.min = Some(Duration::from_millis(ms));
            d.guard_rising_min();
        }
        assert_eq!(d.min, Some(Duration::from_millis(140)));
    }

    #[test]
    fn info_builds_siad_and_rejects_a_bad_num_rtt() {
        let mut params = crate::controller::Params::new();
        params.insert("num_rtt".into(), ParamValue::Number(1.0));
        let e = INFO.instantiate(&params, &config()).err().expect("refused");
        assert!(e.to_string().contains("num_rtt"), "{e}");
        params.insert("num_rtt".into(), ParamValue::Number(30.0));
        assert!(INFO.instantiate(&params, &config()).is_ok());
    }
}
