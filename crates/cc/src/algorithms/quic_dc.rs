//! QUIC-DC (QUIC Delay Control): Westwood+ with a faster bandwidth filter plus a delay
//! congestion event when the one-way queuing delay reaches a threshold; and `rtt_dc`, the same
//! controller driven by RTT - RTT_min instead.
//!
//! Sources: the QUIC-DC paper (Mascolo et al., arXiv 2025), §3: RTT = T_p + T_q (eq. (1)-(2)),
//! one-way delay OWD_i = t_r,i - t_s,i (eq. (3)), its variation OWDV_i (eq. (4)), the one-way
//! queuing delay OWQD_i = OWQD_i-1 + OWDV_i (eq. (5), in `crate::estimators::owqd`), the delay
//! congestion event OWQD >= tau (eq. (6)), the reaction of Westwood+ after 3 duplicate ACKs,
//! cwnd = BWE x RTT_min, and a faster BWE low-pass filter (eq. (7), illegible in our copy of the
//! paper); §5: tau as a fraction (10/20/50/80 %) of the bottleneck buffer in time. The authors'
//! mvfst code (b4lt0/qw `WestwoodOWD.cpp`, experiment era) settles what the paper leaves open:
//! filter old weight 0.25 in both stages (the paper as quoted by a port: 0.2), OWQD clamped at 0
//! and reset to 0 after a delay reaction and on every loss callback, the delay check on every
//! ACK, ACKs of packets sent before the last loss reduction ignored for growth and BWE,
//! persistent congestion to the minimum window. The Westwood+ part is
//! `crate::algorithms::westwood` (Linux `tcp_westwood.c`).
//!
//! This module owns [`QuicDc`] and its [`Signal`]; it registers `quic_dc` and `rtt_dc`. See
//! `docs/quic_dc.md` for the equations and every choice made.

use crate::algorithms::westwood::{read_old_weight, BandwidthFilter, WestwoodCore};
use crate::controller::units::duration_nanos;
use crate::controller::{
    AckEvent, CongestionEvent, Controller, ControllerConfig, ControllerInfo, ControllerState,
    Instant, ParamError, ParamKind, ParamReader, ParamSpec,
};
use crate::estimators::owqd::OwqdEstimator;
use std::time::Duration;

/// Default filter old weight: the authors' experiment-era mvfst code, 2/8 (WestwoodOWD.cpp
/// `westwoodLowPassFilter`).
pub const DEFAULT_BWE_OLD_WEIGHT: f64 = 0.25;

/// Threshold tau when no threshold parameter is given: 10 % of a 2-BDP buffer at 50 ms base RTT
/// (the paper's Table 2 path), i.e. 10 ms.
pub const DEFAULT_THRESHOLD: Duration = Duration::from_millis(10);

/// Parameters QUIC-DC and rtt_dc accept.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "bwe_old_weight",
        kind: ParamKind::Number,
        default: "0.25",
        doc: "weight of the old value in both cascaded low-pass stages of the bandwidth \
              estimate, 0 <= w < 1 (authors' mvfst code 0.25; paper as quoted 0.2; Linux 0.875)",
    },
    ParamSpec {
        name: "threshold",
        kind: ParamKind::Duration,
        default: "10ms",
        doc: "delay threshold tau (QUIC-DC eq. (6)), above 0; the default applies when no tau \
              parameter is given; not together with threshold_fraction",
    },
    ParamSpec {
        name: "threshold_fraction",
        kind: ParamKind::Number,
        default: "none",
        doc: "tau as a fraction of buffer_time, 0 < f <= 1 (the paper's 10/20/50/80 %); \
              needs buffer_time",
    },
    ParamSpec {
        name: "buffer_time",
        kind: ParamKind::Duration,
        default: "none",
        doc: "the bottleneck buffer in time (bytes / rate), which the sender cannot know; \
              needs threshold_fraction",
    },
];

/// Registry entry for `quic_dc`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "quic_dc",
    summary: "QUIC-DC: Westwood+ with one-way queuing-delay congestion events (QUIC-DC paper §3)",
    params: PARAMS,
    one_way_delay: true,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build: build_quic_dc,
};

/// Registry entry for `rtt_dc`: QUIC-DC with the queuing delay taken from RTT - RTT_min.
pub const RTT_DC_INFO: ControllerInfo = ControllerInfo {
    name: "rtt_dc",
    summary: "QUIC-DC with RTT - RTT_min as the queuing-delay signal (QUIC-DC paper §3 contrast)",
    params: PARAMS,
    one_way_delay: true,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build: build_rtt_dc,
};

fn build_quic_dc(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    build(reader, config, Signal::OneWayDelay)
}

fn build_rtt_dc(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    build(reader, config, Signal::Rtt)
}

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
    signal: Signal,
) -> Result<Box<dyn Controller>, ParamError> {
    let params = QuicDcParams {
        bwe_old_weight: read_old_weight(reader, DEFAULT_BWE_OLD_WEIGHT)?,
        tau: read_tau(reader)?,
        signal,
    };
    Ok(Box::new(QuicDc::new(config, params)))
}

fn param_error(name: &str, message: &str) -> ParamError {
    ParamError {
        name: name.to_string(),
        message: message.to_string(),
    }
}

/// What the tau parameters accept, for error messages.
const TAU_ACCEPTED: &str = "accepted: `threshold` (a duration such as \"8ms\") alone, or \
                            `threshold_fraction` (0 < f <= 1) together with `buffer_time` (the \
                            bottleneck buffer in time, e.g. \"200ms\"), or none of them \
                            (tau = 10ms)";

/// An error about how the tau parameters were combined, blaming `name`.
fn tau_error(name: &str, problem: &str) -> ParamError {
    param_error(name, &format!("{problem}; {TAU_ACCEPTED}"))
}

/// Reads tau: `threshold`, or `threshold_fraction x buffer_time`, or the default; exactly one
/// form may be given.
fn read_tau(reader: &ParamReader) -> Result<Duration, ParamError> {
    let threshold = reader.duration("threshold", None);
    let buffer_time = reader.duration("buffer_time", None);
    // Given numbers are finite (the reader checks), so NaN means "absent".
    let fraction = Some(reader.number("threshold_fraction", f64::NAN)).filter(|f| !f.is_nan());
    match (threshold, fraction, buffer_time) {
        (None, None, None) => Ok(DEFAULT_THRESHOLD),
        (Some(tau), None, None) => positive("threshold", tau),
        (None, Some(fraction), Some(buffer)) => {
            if !(fraction > 0.0 && fraction <= 1.0) {
                return Err(param_error(
                    "threshold_fraction",
                    &format!("{fraction} is out of range; accepted: greater than 0, at most 1"),
                ));
            }
            let buffer = positive("buffer_time", buffer)?;
            // QUIC-DC §5: tau = fraction x bottleneck buffer in time (T_q,max of eq. (2)).
            let nanos = (duration_nanos(buffer) as f64 * fraction).round() as u64;
            Ok(Duration::from_nanos(nanos.max(1)))
        }
        (Some(_), _, _) => Err(tau_error(
            "threshold",
            "give either `threshold` or `threshold_fraction` with `buffer_time`, not both",
        )),
        (None, Some(_), None) => Err(tau_error(
            "buffer_time",
            "`threshold_fraction` needs `buffer_time`",
        )),
        (None, None, Some(_)) => Err(tau_error(
            "threshold_fraction",
            "`buffer_time` needs `threshold_fraction`",
        )),
    }
}

/// A duration parameter that must be above zero.
fn positive(name: &str, d: Duration) -> Result<Duration, ParamError> {
    if d.is_zero() {
        Err(param_error(name, "must be greater than 0"))
    } else {
        Ok(d)
    }
}

/// Where the queuing delay compared with tau comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// The one-way queuing delay from receiver timestamps (QUIC-DC eq. (3)-(5)); RTT - RTT_min
    /// until the first one-way-delay sample arrives.
    OneWayDelay,
    /// RTT - RTT_min, which reverse-path queues inflate too (`rtt_dc`).
    Rtt,
}

/// Settings of one QUIC-DC instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuicDcParams {
    /// Weight of the old value in both BWE filter stages, in `[0, 1)`.
    pub bwe_old_weight: f64,
    /// Delay threshold tau (QUIC-DC eq. (6)).
    pub tau: Duration,
    /// The queuing-delay signal.
    pub signal: Signal,
}

impl QuicDcParams {
    /// Defaults (filter 0.25, tau 10 ms) for `signal`.
    pub fn new(signal: Signal) -> Self {
        QuicDcParams {
            bwe_old_weight: DEFAULT_BWE_OLD_WEIGHT,
            tau: DEFAULT_THRESHOLD,
            signal,
        }
    }
}

/// A QUIC-DC controller (QUIC-DC paper §3), or rtt_dc with [`Signal::Rtt`].
#[derive(Clone, Debug)]
pub struct QuicDc {
    core: WestwoodCore,
    signal: Signal,
    tau: Duration,
    /// QUIC-DC eq. (4)-(5).
    owqd: OwqdEstimator,
    /// One-way-delay samples received.
    owd_samples: u64,
    /// RTT - RTT_min of the newest sample of a packet sent after the last reaction.
    rtt_queuing_delay: Duration,
    /// When the last delay reaction or loss callback reset the signal.
    last_reset: Option<Instant>,
    /// Delay congestion events acted on.
    delay_events: u64,
}

impl QuicDc {
    /// A controller in slow start with `params`.
    pub fn new(config: &ControllerConfig, params: QuicDcParams) -> Self {
        QuicDc {
            core: WestwoodCore::new(config, BandwidthFilter::new(params.bwe_old_weight)),
            signal: params.signal,
            tau: params.tau,
            owqd: OwqdEstimator::new(),
            owd_samples: 0,
            rtt_queuing_delay: Duration::ZERO,
            last_reset: None,
            delay_events: 0,
        }
    }

    /// Whether the one-way queuing delay is the signal in use (false for rtt_dc, and for
    /// QUIC-DC until the first one-way-delay sample arrives).
    pub fn uses_one_way_delay(&self) -> bool {
        self.signal == Signal::OneWayDelay && self.owd_samples > 0
    }

    /// The queuing delay compared with tau: OWQD (eq. (5)) or RTT - RTT_min.
    pub fn queuing_delay(&self) -> Duration {
        if self.uses_one_way_delay() {
            self.owqd.value()
        } else {
            self.rtt_queuing_delay
        }
    }

    /// The delay threshold tau.
    pub fn tau(&self) -> Duration {
        self.tau
    }

    /// Delay congestion events acted on so far.
    pub fn delay_events(&self) -> u64 {
        self.delay_events
    }

    /// Whether a packet sent at `sent_time` left after the last reset of the signal.
    fn sent_after_reset(&self, sent_time: Instant) -> bool {
        self.last_reset.is_none_or(|reset| sent_time > reset)
    }

    /// RTT - ACK delay - RTT_min of the ACK's sample, at least zero: the time the receiver
    /// held the ACK (when the transport reports it) is not queuing (as RFC 9002 §5.3 leaves it
    /// out of smoothed_rtt; docs/quic_dc.md). Only packets sent after the last reset count: an
    /// absolute RTT excess has no running sum to set to zero, so this is its reset.
    fn take_rtt_sample(&mut self, ack: &AckEvent) {
        let (Some(rtt), Some(min)) = (ack.rtt_sample, self.core.rtt_min()) else {
            return;
        };
        if self.sent_after_reset(ack.largest_acked_sent_time) {
            let held = ack.ack_delay.unwrap_or(Duration::ZERO);
            self.rtt_queuing_delay = rtt.saturating_sub(held).saturating_sub(min);
        }
    }

    /// Sets the queuing delay to zero after a reaction (WestwoodOWD.cpp `onPacketAcked`: owd = 0).
    fn reset_signal(&mut self, now: Instant) {
        self.owqd.reset();
        self.rtt_queuing_delay = Duration::ZERO;
        self.last_reset = Some(now);
    }

    /// The delay congestion event: the reaction of Westwood+ after 3 duplicate ACKs
    /// (QUIC-DC §3): ssthresh = cwnd = max(BWE x RTT_min, 2 MSS), then OWQD = 0.
    fn delay_event(&mut self, now: Instant) {
        self.core.reduce();
        self.delay_events += 1;
        self.reset_signal(now);
    }
}

impl Controller for QuicDc {
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        if let Some(sample) = &ack.one_way_delay {
            // QUIC-DC eq. (3)-(5) for every sample, also of packets sent before the last loss
            // reduction (WestwoodOWD.cpp `onAckEvent`: `updateOneWayDelay` first).
            self.owqd.on_sample(sample);
            self.owd_samples += 1;
        }
        let counts = self.core.measure(now, ack);
        self.take_rtt_sample(ack);
        if !counts {
            // Sent before the last loss reduction: no delay check, no growth (WestwoodOWD.cpp
            // onPacketAcked).
            return;
        }
        // QUIC-DC eq. (6): a delay congestion event when OWQD >= tau, on every ACK.
        if self.queuing_delay() >= self.tau {
            self.delay_event(now);
        }
        self.core.grow(ack);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        // Loss, ECN-CE and persistent congestion react as Westwood+ does.
        self.core.on_congestion(now, event);
        // WestwoodOWD.cpp onPacketLoss: OWQD is reset to 0 on every loss callback.
        self.reset_signal(now);
    }

    fn cwnd(&self) -> u64 {
        self.core.cwnd()
    }

    /// `None` while the threshold is still infinite (before the first congestion event).
    fn ssthresh(&self) -> Option<u64> {
        self.core.ssthresh()
    }

    fn in_slow_start(&self) -> bool {
        self.core.in_slow_start()
    }

    fn state(&self) -> ControllerState {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        ControllerState {
            mode: self.core.mode(),
            values: vec![
                ("bwe_bps", self.core.bwe().bits_per_sec()),
                ("rtt_min_ms", self.core.rtt_min_ms()),
                ("owqd_ms", ms(self.queuing_delay())),
                ("tau_ms", ms(self.tau)),
                ("ssthresh_bytes", self.core.ssthresh_traced()),
                ("cwnd_bytes", self.core.cwnd() as f64),
                ("delay_events", self.delay_events as f64),
                ("owd_samples", self.owd_samples as f64),
                (
                    "owd_signal",
                    if self.uses_one_way_delay() { 1.0 } else { 0.0 },
                ),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{CongestionKind, ParamValue, Params};
    use crate::testing::*;

    const MSS: u64 = 1500;

    fn quic_dc(tau_ms: u64, signal: Signal) -> QuicDc {
        let params = QuicDcParams {
            tau: Duration::from_millis(tau_ms),
            ..QuicDcParams::new(signal)
        };
        QuicDc::new(&ControllerConfig::default(), params)
    }

    /// The ACK at `t_ms` of packet `t_ms` sent `rtt_ms` earlier, with its one-way delay:
    /// 25 ms propagation plus `queue_us` of forward queue, on a receiver clock `offset_ns`
    /// ahead of the sender's (negative: behind).
    fn owd_ack(t_ms: u64, rtt_ms: u64, bytes: u64, queue_us: u64, offset_ns: i64) -> AckEvent {
        let sent = at(t_ms - rtt_ms);
        let receive = sent.as_nanos() as i64 + 25_000_000 + queue_us as i64 * 1000 + offset_ns;
        let receive = Instant::from_nanos(u64::try_from(receive).expect("receive time >= 0"));
        with_owd(ack(bytes, sent, rtt_ms), t_ms, receive)
    }

    /// 10 Mbps of ACKs (1250 bytes per ms) from t = 50 to `to_ms` with a 50 ms RTT and a flat
    /// one-way delay: BWE = 1.25e6 B/s, RTT_min = 50 ms, OWQD = 0.
    fn measured(c: &mut QuicDc, to_ms: u64) {
        for t in 50..=to_ms {
            c.on_ack(at(t), &owd_ack(t, 50, 1250, 0, 0));
        }
        assert!((c.core.bwe().bytes_per_sec() - 1.25e6).abs() < 1e-3);
        assert_eq!(c.queuing_delay(), Duration::ZERO);
    }

    fn owqd_ms(c: &QuicDc) -> f64 {
        value(c, "owqd_ms")
    }

    #[test]
    fn owqd_equals_the_encoded_queue_delay_for_any_clock_offset() {
        // QUIC-DC eq. (4)-(5): OWQD telescopes to OWD_i - OWD_0; with an empty queue at the
        // first packet that is the queue delay itself, whatever the receiver clock's offset.
        // Packets every 1 ms from t = 10 s (so a receiver 3 s behind stays positive); the
        // queue grows 0.5 ms per packet to 10 ms, drains 1 ms per packet to 0, regrows to
        // 3 ms. Integer nanoseconds: exact (1e-9 ms allows for the ms conversion only).
        let mut queue_us: Vec<u64> = (0..=20).map(|i| 500 * i).collect();
        queue_us.extend((1..=10).map(|i| 10_000 - 1_000 * i));
        queue_us.extend((1..=6).map(|i| 500 * i));
        for offset_ns in [0, 1_000_000_000_000, -3_000_000_000] {
            let mut c = quic_dc(1_000, Signal::OneWayDelay);
            for (i, q) in queue_us.iter().enumerate() {
                let sent_ms = 10_000 + i as u64;
                let rtt_us = 50_000 + q;
                let mut a = owd_ack(sent_ms + 50, 50, MSS, *q, offset_ns);
                a.rtt_sample = Some(Duration::from_micros(rtt_us));
                c.on_ack(at(sent_ms) + Duration::from_micros(rtt_us), &a);
                let expected = *q as f64 / 1e3;
                assert!(
                    (owqd_ms(&c) - expected).abs() < 1e-9,
                    "offset {offset_ns} ns, packet {i}: {} ms != {expected} ms",
                    owqd_ms(&c)
                );
            }
            assert_eq!(value(&c, "owd_signal"), 1.0);
            assert_eq!(value(&c, "owd_samples"), queue_us.len() as f64);
            assert_eq!(c.delay_events(), 0);
        }
    }

    #[test]
    fn the_rtt_signal_leaves_the_receivers_ack_delay_out() {
        // docs/quic_dc.md "ACK delay in the RTT signal": RTT - ACK delay - RTT_min, at least 0.
        // RTT_min 50 ms; a 76 ms sample whose ACK was held 25 ms is 1 ms of queue, not 26.
        let held = |c: &mut QuicDc, t: u64, rtt_ms: u64, delay: Option<u64>| {
            let mut a = ack(1250, at(t - rtt_ms), rtt_ms);
            a.ack_delay = delay.map(Duration::from_millis);
            c.on_ack(at(t), &a);
        };
        let mut c = quic_dc(10, Signal::Rtt);
        measured(&mut c, 400);
        held(&mut c, 401, 76, Some(25));
        assert_eq!(c.queuing_delay(), Duration::from_millis(1));
        assert_eq!(c.delay_events(), 0);
        // A hold larger than the sample's excess (the RFC would keep the sample) counts as no
        // queue: the clamp at zero.
        held(&mut c, 402, 70, Some(25));
        assert_eq!(c.queuing_delay(), Duration::ZERO);
        // Without a reported delay the same 76 ms sample is 26 ms of queue: a delay event.
        held(&mut c, 403, 76, None);
        assert_eq!(c.delay_events(), 1);
    }

    #[test]
    fn delay_event_sets_window_to_bwe_times_rtt_min_and_resets_owqd() {
        // QUIC-DC §3 / eq. (6): when OWQD >= tau, ssthresh = cwnd = BWE x RTT_min =
        // 1.25e6 B/s x 50 ms = 62,500 bytes (floating-point product truncated: within 1 byte)
        // and OWQD = 0 (WestwoodOWD.cpp onPacketAcked).
        let mut c = quic_dc(10, Signal::OneWayDelay);
        measured(&mut c, 400);
        let grown = c.cwnd();
        assert!(grown > 100_000 && c.in_slow_start());
        // 9.999 ms of queue: below tau, no event (slow start goes on).
        c.on_ack(at(401), &owd_ack(401, 50, 1250, 9_999, 0));
        assert!((owqd_ms(&c) - 9.999).abs() < 1e-9);
        assert_eq!(c.delay_events(), 0);
        assert_eq!(c.cwnd(), grown + 1250);
        // 10 ms: OWQD >= tau.
        c.on_ack(at(402), &owd_ack(402, 50, 1250, 10_000, 0));
        assert_eq!(c.delay_events(), 1);
        assert!(c.cwnd().abs_diff(62_500) <= 1, "{}", c.cwnd());
        assert_eq!(c.ssthresh(), Some(c.cwnd()));
        assert_eq!(owqd_ms(&c), 0.0);
        assert_eq!(c.state().mode, "congestion_avoidance");
        // The queue draining after the reaction keeps OWQD at 0 (clamp), no further event.
        for t in 403..=420 {
            c.on_ack(at(t), &owd_ack(t, 50, 1250, 10_000 - 500 * (t - 402), 0));
            assert_eq!(owqd_ms(&c), 0.0);
        }
        assert_eq!(c.delay_events(), 1);
        // The queue rebuilding by tau from its lowest point (1 ms) is the next event.
        c.on_ack(at(421), &owd_ack(421, 50, 1250, 11_000, 0));
        assert_eq!(c.delay_events(), 2);
    }

    #[test]
    fn delay_reaction_is_floored_at_two_mss() {
        // Before any bandwidth sample, BWE x RTT_min = 0: max(.., 2 MSS) (tcp_westwood.c).
        let mut c = quic_dc(10, Signal::OneWayDelay);
        c.on_ack(at(50), &owd_ack(50, 50, MSS, 0, 0));
        c.on_ack(at(51), &owd_ack(51, 50, MSS, 12_000, 0));
        assert_eq!(c.delay_events(), 1);
        assert_eq!(c.cwnd(), 2 * MSS);
        assert_eq!(c.ssthresh(), Some(2 * MSS));
    }

    #[test]
    fn default_filter_is_the_authors_quarter_weight() {
        // WestwoodOWD.cpp westwoodLowPassFilter: old weight 0.25 in both stages; raw samples
        // 0.8, 1.6, 0.8 MB/s give 0.8, 1.25, 1.025 MB/s (hand-computed; floating point, 1e-9
        // relative).
        let mut c = INFO
            .instantiate(&Params::new(), &ControllerConfig::default())
            .expect("default build");
        let size = |t: u64| [800, 1600, 800, 800][((t - 50) / 51) as usize];
        ack_every_ms(c.as_mut(), 50, 100, 50, size);
        for (k, expected) in [0.8e6, 1.25e6, 1.025e6].iter().enumerate() {
            let close_at = 101 + 51 * k as u64;
            ack_every_ms(c.as_mut(), close_at, close_at + 50, 50, size);
            let got = value(c.as_ref(), "bwe_bps") / 8.0;
            assert!(
                (got - expected).abs() <= 1e-9 * expected,
                "{got} != {expected}"
            );
        }
    }

    #[test]
    fn loss_reacts_as_westwood_and_resets_owqd() {
        // WestwoodOWD.cpp onPacketLoss: ssthresh = cwnd = BWE x RTT_min once per recovery
        // period, and OWQD = 0 on every loss callback.
        let mut c = quic_dc(10, Signal::OneWayDelay);
        measured(&mut c, 400);
        c.on_ack(at(401), &owd_ack(401, 50, 1250, 5_000, 0));
        assert!((owqd_ms(&c) - 5.0).abs() < 1e-9);
        c.on_congestion(at(402), &congestion(CongestionKind::Loss, at(380)));
        assert!(c.cwnd().abs_diff(62_500) <= 1);
        assert_eq!(owqd_ms(&c), 0.0);
        assert_eq!(c.state().mode, "recovery");
        assert_eq!(c.delay_events(), 0);
        // Persistent congestion: minimum window, ssthresh from BWE x RTT_min.
        let mut c = quic_dc(10, Signal::OneWayDelay);
        measured(&mut c, 400);
        c.on_congestion(
            at(402),
            &congestion(CongestionKind::PersistentCongestion, at(380)),
        );
        assert_eq!(c.cwnd(), 2 * MSS);
        assert!(c.ssthresh().unwrap().abs_diff(62_500) <= 1);
    }

    #[test]
    fn no_second_reduction_within_one_recovery_period() {
        // RFC 9002 §7.3.2 / WestwoodOWD.cpp: after a loss reduction, losses of packets
        // sent before it are ignored and ACKs of such packets are not checked for delay.
        let mut c = quic_dc(10, Signal::OneWayDelay);
        measured(&mut c, 400);
        c.on_congestion(at(400), &congestion(CongestionKind::Loss, at(380)));
        let w = c.cwnd();
        // An ACK of a packet sent at 352 (before the recovery start) shows 15 ms of queue
        // and a 40 ms RTT (RTT_min would make a second reduction 50,000 bytes).
        c.on_ack(at(402), &owd_ack(402, 50, 1250, 15_000, 0));
        c.on_ack(at(403), &owd_ack(403, 40, 1250, 15_000, 0));
        assert!((owqd_ms(&c) - 15.0).abs() < 1e-9);
        assert_eq!(c.delay_events(), 0);
        c.on_congestion(at(404), &congestion(CongestionKind::Loss, at(399)));
        assert_eq!(c.cwnd(), w);
        assert_eq!(c.ssthresh(), Some(w));
    }

    /// ACKs of the packets sent every 1 ms from `from_ms` to `to_ms` (after [`measured`]'s
    /// last, sent at 350 ms): the forward one-way delay stays 25 ms, but a queue on the reverse
    /// (ACK) path adds 0.5 ms per packet up to 20 ms, so the RTT grows from 50 to 70 ms.
    fn reverse_queue(c: &mut QuicDc, from_ms: u64, to_ms: u64) {
        for sent in from_ms..=to_ms {
            let extra = Duration::from_micros((500 * (sent - 350)).min(20_000));
            let rtt = Duration::from_millis(50) + extra;
            let mut a = with_owd(ack(1250, at(sent), 50), sent, at(sent + 25));
            a.rtt_sample = Some(rtt);
            c.on_ack(at(sent) + rtt, &a);
        }
    }

    #[test]
    fn rtt_dc_reacts_to_reverse_queue_and_quic_dc_does_not() {
        // QUIC-DC §3: reverse-path queuing inflates the RTT but not the forward OWD.
        let mut owd = quic_dc(10, Signal::OneWayDelay);
        let mut rtt = quic_dc(10, Signal::Rtt);
        measured(&mut owd, 400);
        measured(&mut rtt, 400);
        reverse_queue(&mut owd, 351, 400);
        reverse_queue(&mut rtt, 351, 400);
        assert_eq!(owd.delay_events(), 0);
        assert!(owd.in_slow_start());
        assert_eq!(value(&owd, "owd_signal"), 1.0);
        // rtt_dc reacts when RTT - RTT_min reaches 10 ms (packet sent at 370, acked at 430) ...
        assert_eq!(rtt.delay_events(), 1);
        assert!(rtt.cwnd() < 70_000, "{}", rtt.cwnd());
        assert_eq!(value(&rtt, "owd_signal"), 0.0);
        // ... and once more only on the ACK of a packet sent after that reaction (sent after
        // 430 ms), not on every ACK of the packets already in flight.
        reverse_queue(&mut rtt, 401, 430);
        assert_eq!(rtt.delay_events(), 1);
        reverse_queue(&mut rtt, 431, 431);
        assert_eq!(rtt.delay_events(), 2);
    }

    #[test]
    fn falls_back_to_rtt_without_one_way_samples() {
        // A receiver without timestamps: no OWD samples, the RTT excess is the signal.
        let mut c = quic_dc(10, Signal::OneWayDelay);
        ten_mbps_until(&mut c, 400);
        assert_eq!(value(&c, "owd_samples"), 0.0);
        assert_eq!(value(&c, "owd_signal"), 0.0);
        c.on_ack(at(401), &ack(1250, at(342), 59));
        assert_eq!(c.delay_events(), 0);
        assert!((owqd_ms(&c) - 9.0).abs() < 1e-9);
        c.on_ack(at(402), &ack(1250, at(342), 60));
        assert_eq!(c.delay_events(), 1);
        assert!(c.cwnd().abs_diff(62_500) <= 1);
        // The first one-way sample switches the signal (and only sets eq. (4)'s reference).
        c.on_ack(at(403), &with_owd(ack(1250, at(353), 50), 353, at(378)));
        assert_eq!(value(&c, "owd_samples"), 1.0);
        assert_eq!(value(&c, "owd_signal"), 1.0);
        assert_eq!(owqd_ms(&c), 0.0);
    }

    fn build_named(
        info: &ControllerInfo,
        params: &[(&str, ParamValue)],
    ) -> Result<Box<dyn Controller>, String> {
        let p: Params = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        info.instantiate(&p, &ControllerConfig::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn tau_parameters() {
        let ms = |t: &str| ParamValue::Text(t.to_string());
        let num = ParamValue::Number;
        for info in [&INFO, &RTT_DC_INFO] {
            let name = info.name;
            // Nothing given: the documented default, 10 ms.
            let c = build_named(info, &[]).unwrap();
            assert_eq!(value(c.as_ref(), "tau_ms"), 10.0);
            let c = build_named(info, &[("threshold", ms("8ms"))]).unwrap();
            assert_eq!(value(c.as_ref(), "tau_ms"), 8.0);
            // 10 % of a 200 ms buffer (4 BDP at 10 Mbps / 50 ms) is 20 ms.
            let c = build_named(
                info,
                &[
                    ("threshold_fraction", num(0.1)),
                    ("buffer_time", ms("200ms")),
                ],
            )
            .unwrap();
            assert_eq!(value(c.as_ref(), "tau_ms"), 20.0);
            let c = build_named(
                info,
                &[
                    ("threshold_fraction", num(1.0)),
                    ("buffer_time", ms("100ms")),
                ],
            )
            .unwrap();
            assert_eq!(value(c.as_ref(), "tau_ms"), 100.0);

            for (params, culprit) in [
                (
                    vec![
                        ("threshold", ms("8ms")),
                        ("threshold_fraction", num(0.1)),
                        ("buffer_time", ms("200ms")),
                    ],
                    "`threshold`",
                ),
                (
                    vec![("threshold", ms("8ms")), ("buffer_time", ms("200ms"))],
                    "`threshold`",
                ),
                (vec![("threshold_fraction", num(0.1))], "`buffer_time`"),
                (vec![("buffer_time", ms("200ms"))], "`threshold_fraction`"),
                (
                    vec![
                        ("threshold_fraction", num(0.0)),
                        ("buffer_time", ms("200ms")),
                    ],
                    "`threshold_fraction`",
                ),
                (
                    vec![
                        ("threshold_fraction", num(1.5)),
                        ("buffer_time", ms("200ms")),
                    ],
                    "`threshold_fraction`",
                ),
                (
                    vec![("threshold_fraction", num(0.5)), ("buffer_time", ms("0ms"))],
                    "`buffer_time`",
                ),
                (vec![("threshold", ms("0ms"))], "`threshold`"),
                (vec![("threshold", num(8.0))], "`threshold`"),
                (vec![("bwe_old_weight", num(1.0))], "`bwe_old_weight`"),
                (vec![("tau", ms("8ms"))], "unknown parameter"),
            ] {
                let e = build_named(info, &params).err().expect("must be rejected");
                assert!(e.contains(culprit), "{name} {params:?}: {e}");
            }
        }
        // The message says what is accepted.
        let e = build_named(&INFO, &[("threshold_fraction", num(0.1))])
            .err()
            .unwrap();
        assert!(e.contains("accepted") && e.contains("buffer_time"), "{e}");
    }

    #[test]
    fn state_names_every_value() {
        let c = quic_dc(10, Signal::OneWayDelay);
        let names: Vec<&str> = c.state().values.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "bwe_bps",
                "rtt_min_ms",
                "owqd_ms",
                "tau_ms",
                "ssthresh_bytes",
                "cwnd_bytes",
                "delay_events",
                "owd_samples",
                "owd_signal"
            ]
        );
        assert_eq!(c.state().mode, "slow_start");
        assert_eq!(value(&c, "cwnd_bytes"), 15_000.0);
    }
}
