//! Westwood+ as Linux runs it, counted in bytes, with QUIC recovery periods.
//!
//! Sources: Linux `net/ipv4/tcp_westwood.c`: the per-RTT bandwidth sample
//! (`westwood_update_window`), the two cascaded low-pass filters with old weight 7/8
//! (`westwood_do_filter`, `westwood_filter`, first sample unfiltered), RTT_min
//! (`update_rtt_min`, reset after a timeout) and the reaction `cwnd = ssthresh =
//! max(BWE x RTT_min, 2 segments)` (`tcp_westwood_bw_rttmin`, `tcp_westwood_event`); Mascolo et
//! al., MobiCom 2001, and Grieco & Mascolo, CCR 2004. The Reno growth around it is Linux's
//! (`tcp_reno_cong_avoid`) in QUIC's form (RFC 9002 §7), shared with `newreno`. Where Linux's TCP
//! machinery has no QUIC counterpart, the authors' QUIC port of Westwood+ in mvfst
//! (b4lt0/qw `Westwood.cpp`) decides.
//!
//! With `filter = "tustin"`, the bandwidth filter is ns-3's instead (ns-3.44
//! `src/internet/model/tcp-westwood-plus.cc`, `TcpWestwoodPlus::EstimateBW`), so that an ns-3
//! dumbbell can be modelled.
//!
//! This module owns [`Westwood`], the bandwidth filter [`BandwidthFilter`] and sampler
//! [`BandwidthEstimator`], and the core that QUIC-DC (`quic_dc`) extends with its delay signal.
//! See `docs/westwood.md` for the equations and every choice made.

use crate::algorithms::recovery::{ssthresh_value, AdditiveIncrease, RecoveryEpoch};
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec, Rate,
};
use std::time::Duration;

/// Default weight of the old value in both filter stages (tcp_westwood.c `westwood_do_filter`:
/// 7/8).
pub const DEFAULT_BWE_OLD_WEIGHT: f64 = 0.875;

/// Shortest bandwidth-sampling window (tcp_westwood.c `TCP_WESTWOOD_RTT_MIN`, HZ/20 = 50 ms).
pub const MIN_SAMPLE_WINDOW: Duration = Duration::from_millis(50);

/// Floor of the reaction window in packets (tcp_westwood.c `tcp_westwood_bw_rttmin`: 2).
const FLOOR_PACKETS: u64 = 2;

/// Weight of the old estimate in ns-3's Tustin filter (ns-3.44 `tcp-westwood-plus.cc`
/// `TcpWestwoodPlus::EstimateBW`, `ALPHA`: 0.9).
pub const TUSTIN_OLD_WEIGHT: f64 = 0.9;

/// Parameters Westwood+ accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "bwe_old_weight",
        kind: ParamKind::Number,
        default: "0.875 (linux), 0.9 (tustin)",
        doc: "weight of the old value in the bandwidth filter, 0 <= w < 1 (tcp_westwood.c \
              westwood_do_filter: 7/8 in both cascaded stages; ns-3 TcpWestwoodPlus ALPHA: 0.9)",
    },
    ParamSpec {
        name: "filter",
        kind: ParamKind::Name,
        default: "linux",
        doc: "the bandwidth filter: linux (two cascaded low-pass stages, the first sample \
              taken raw; tcp_westwood.c) or tustin (ns-3 TcpWestwoodPlus: one stage over the \
              mean of the last two samples, from zero)",
    },
];

/// Registry entry for `westwood`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "westwood",
    summary: "Westwood+ in bytes with QUIC recovery periods (Linux tcp_westwood.c)",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build,
};

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    let filter = match reader.name("filter", "linux").as_str() {
        "linux" => BandwidthFilter::new(read_old_weight(reader, DEFAULT_BWE_OLD_WEIGHT)?),
        "tustin" => BandwidthFilter::tustin(read_old_weight(reader, TUSTIN_OLD_WEIGHT)?),
        other => {
            return Err(ParamError {
                name: "filter".to_string(),
                message: format!("unknown filter `{other}`; accepted: linux, tustin"),
            })
        }
    };
    Ok(Box::new(Westwood::new(config, filter)))
}

/// Reads `bwe_old_weight`: a filter weight in `[0, 1)` (1 would never take a new sample).
pub(crate) fn read_old_weight(reader: &ParamReader, default: f64) -> Result<f64, ParamError> {
    let v = reader.number("bwe_old_weight", default);
    if (0.0..1.0).contains(&v) {
        Ok(v)
    } else {
        Err(ParamError {
            name: "bwe_old_weight".to_string(),
            message: format!("{v} is out of range; accepted: at least 0 and less than 1"),
        })
    }
}

/// The two cascaded low-pass filters of Westwood+'s bandwidth estimate (BWE), in bytes per
/// second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthFilter {
    /// Weight of the old value in each stage.
    old_weight: f64,
    /// ns-3's Tustin filter instead of Linux's two stages.
    tustin: bool,
    /// First stage (tcp_westwood.c `bw_ns_est`), or the Tustin filter's last raw sample
    /// (ns-3 `m_lastSampleBW`), bytes per second.
    first: f64,
    /// Second stage, the estimate (tcp_westwood.c `bw_est`), bytes per second.
    estimate: f64,
}

impl BandwidthFilter {
    /// An empty filter whose stages keep `old_weight` of the old value.
    pub fn new(old_weight: f64) -> Self {
        BandwidthFilter {
            old_weight,
            tustin: false,
            first: 0.0,
            estimate: 0.0,
        }
    }

    /// An empty Tustin filter keeping `old_weight` of the old estimate (ns-3
    /// `TcpWestwoodPlus`, `FilterType` `Tustin`).
    pub fn tustin(old_weight: f64) -> Self {
        BandwidthFilter {
            tustin: true,
            ..BandwidthFilter::new(old_weight)
        }
    }

    /// One stage: `old_weight * old + (1 - old_weight) * new` (tcp_westwood.c
    /// `westwood_do_filter`).
    fn low_pass(&self, old: f64, new: f64) -> f64 {
        self.old_weight * old + (1.0 - self.old_weight) * new
    }

    /// Takes one raw bandwidth sample and returns the new estimate.
    pub fn update(&mut self, sample: Rate) -> Rate {
        let raw = sample.bytes_per_sec();
        if self.tustin {
            // ns-3 TcpWestwoodPlus::EstimateBW: bw = ALPHA * last_bw + (1 - ALPHA) *
            // (sample + last_sample) / 2, from zero (no first-sample shortcut).
            self.estimate = self.low_pass(self.estimate, (raw + self.first) / 2.0);
            self.first = raw;
        } else if self.first == 0.0 && self.estimate == 0.0 {
            // tcp_westwood.c westwood_filter: an empty filter takes the first sample raw.
            self.first = raw;
            self.estimate = raw;
        } else {
            // tcp_westwood.c westwood_filter: bw_ns_est <- filter(bw_ns_est, sample),
            // bw_est <- filter(bw_est, bw_ns_est); QUIC-DC eq. (7) with another weight.
            self.first = self.low_pass(self.first, raw);
            self.estimate = self.low_pass(self.estimate, self.first);
        }
        self.estimate()
    }

    /// The current estimate (zero before the first sample).
    pub fn estimate(&self) -> Rate {
        Rate::from_bytes_per_sec(self.estimate)
    }
}

/// Westwood+'s bandwidth sampler: bytes acknowledged over a window of at least
/// `max(latest RTT, 50 ms)`, fed to a [`BandwidthFilter`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandwidthEstimator {
    /// Start of the current window (tcp_westwood.c `rtt_win_sx`); `None` before the first ACK.
    window_start: Option<Instant>,
    /// Bytes acknowledged in the current window (tcp_westwood.c `bk`).
    bytes: u64,
    /// The filter the samples go to.
    filter: BandwidthFilter,
}

impl BandwidthEstimator {
    /// An estimator with no samples, feeding `filter`.
    pub fn new(filter: BandwidthFilter) -> Self {
        BandwidthEstimator {
            window_start: None,
            bytes: 0,
            filter,
        }
    }

    /// Counts `acked` bytes acknowledged at `now`, closing the window first when it spans more
    /// than `max(latest_rtt, 50 ms)`; no window closes before the first RTT sample.
    pub fn on_ack(&mut self, now: Instant, acked: u64, latest_rtt: Option<Duration>) {
        let Some(start) = self.window_start else {
            // The window opens at the first ACK (tcp_westwood.c re-syncs on its first ACK).
            self.window_start = Some(now);
            self.bytes = acked;
            return;
        };
        let delta = now - start;
        // tcp_westwood.c westwood_update_window: close when delta > max(rtt, RTT_MIN).
        if latest_rtt.is_some_and(|rtt| delta > rtt.max(MIN_SAMPLE_WINDOW)) {
            // BWE sample = bytes acknowledged in the window / window duration (westwood_filter).
            self.filter.update(Rate::from_bytes_over(self.bytes, delta));
            self.bytes = 0;
            self.window_start = Some(now);
        }
        // tcp_westwood.c westwood_fast_bw: the ACK's bytes go to the (possibly new) window.
        self.bytes = self.bytes.saturating_add(acked);
    }

    /// The filtered bandwidth estimate (zero before the first window closes).
    pub fn estimate(&self) -> Rate {
        self.filter.estimate()
    }
}

/// RTT_min as tcp_westwood.c keeps it: the minimum since the last reset, where a reset makes
/// the next sample the minimum (`update_rtt_min`, `reset_rtt_min`); QUIC-DC eq. (1): the RTT
/// with empty queues, RTT_min = T_p.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct RttMin {
    value: Option<Duration>,
    reset_pending: bool,
}

impl RttMin {
    /// Takes one RTT sample.
    fn on_sample(&mut self, rtt: Duration) {
        self.value = match self.value {
            Some(min) if !self.reset_pending => Some(min.min(rtt)),
            _ => Some(rtt),
        };
        self.reset_pending = false;
    }

    /// Makes the next sample the minimum.
    fn reset(&mut self) {
        self.reset_pending = true;
    }
}

/// "No threshold yet": slow start begins with an infinite threshold (RFC 9002 §7.3.1).
const INFINITE: u64 = u64::MAX;

/// The Westwood+ machinery QUIC-DC shares: Reno growth, the bandwidth estimate, RTT_min and
/// the `BWE x RTT_min` reaction, with QUIC recovery periods.
#[derive(Clone, Debug)]
pub(crate) struct WestwoodCore {
    mss: u64,
    min_window: u64,
    /// The window after a timeout or persistent congestion.
    loss_window: u64,
    cwnd: u64,
    ssthresh: u64,
    recovery: RecoveryEpoch,
    increase: AdditiveIncrease,
    latest_rtt: Option<Duration>,
    rtt_min: RttMin,
    bwe: BandwidthEstimator,
}

impl WestwoodCore {
    /// A core in slow start with the transport's initial window and the given filter.
    pub(crate) fn new(config: &ControllerConfig, filter: BandwidthFilter) -> Self {
        WestwoodCore {
            mss: config.max_datagram_size,
            min_window: config.minimum_window(),
            loss_window: config.loss_window(),
            cwnd: config.initial_window(),
            ssthresh: INFINITE,
            recovery: RecoveryEpoch::default(),
            increase: AdditiveIncrease::default(),
            latest_rtt: None,
            rtt_min: RttMin::default(),
            bwe: BandwidthEstimator::new(filter),
        }
    }

    /// The measuring half of an ACK: takes the RTT sample, leaves recovery on the first ACK of
    /// a packet sent after it began, and counts the bytes for the bandwidth estimate. Returns
    /// whether the ACK is of a packet sent after the last loss reduction; ACKs of earlier
    /// packets are ignored for the bandwidth estimate and for growth (mvfst `Westwood.cpp`).
    pub(crate) fn measure(&mut self, now: Instant, ack: &AckEvent) -> bool {
        if let Some(rtt) = ack.rtt_sample {
            // tcp_westwood.c westwood_pkts_acked / update_rtt_min.
            self.latest_rtt = Some(rtt);
            self.rtt_min.on_sample(rtt);
        }
        if !self.recovery.on_ack(ack.largest_acked_sent_time) {
            return false;
        }
        self.bwe.on_ack(now, ack.acked_bytes, self.latest_rtt);
        true
    }

    /// The growing half of an ACK: Reno slow start and congestion avoidance (Linux
    /// `tcp_reno_cong_avoid`, RFC 9002 §7.3.1/§7.3.3); nothing while application-limited
    /// (RFC 9002 §7.8).
    pub(crate) fn grow(&mut self, ack: &AckEvent) {
        if ack.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            // Slow start: cwnd += acknowledged bytes.
            self.cwnd = self.cwnd.saturating_add(ack.acked_bytes);
        } else {
            // Congestion avoidance: one MSS per cwnd bytes acknowledged (tcp_cong_avoid_ai).
            let step = self.increase.on_ack(ack.acked_bytes, self.cwnd, self.mss);
            self.cwnd = self.cwnd.saturating_add(step);
        }
    }

    /// `max(BWE x RTT_min, 2 MSS)` in bytes (tcp_westwood.c `tcp_westwood_bw_rttmin`; the
    /// QUIC-DC paper §3: "keeps full the propagation pipe and empty the queuing pipe").
    pub(crate) fn bw_rtt_min(&self) -> u64 {
        let pipe = self
            .rtt_min
            .value
            .map_or(0.0, |rtt| self.bwe.estimate().bytes_in(rtt));
        (pipe as u64).max(FLOOR_PACKETS * self.mss)
    }

    /// The reaction to a loss, ECN or delay congestion event: `ssthresh = cwnd =
    /// max(BWE x RTT_min, 2 MSS)` (tcp_westwood.c `CA_EVENT_COMPLETE_CWR`; QUIC-DC §3).
    pub(crate) fn reduce(&mut self) {
        self.ssthresh = self.bw_rtt_min();
        self.cwnd = self.ssthresh.max(self.min_window);
        self.increase.reset();
    }

    /// Reacts to a congestion event; returns whether the window was set (false for a loss of
    /// packets sent before the current recovery period began).
    pub(crate) fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) -> bool {
        match event.kind {
            // Loss (3 duplicate ACKs in TCP) and ECN-CE (CWR): once per recovery period
            // (RFC 9002 §7.3.2), ssthresh = cwnd = BWE x RTT_min.
            CongestionKind::Loss | CongestionKind::EcnCe => {
                if !self.recovery.on_congestion(now, event.largest_sent_time) {
                    return false;
                }
                self.reduce();
                true
            }
            CongestionKind::PersistentCongestion => {
                // tcp_westwood.c CA_EVENT_LOSS: ssthresh = BWE x RTT_min, RTT_min taken afresh
                // from the next sample; cwnd = minimum window (RFC 9002 §7.6.2), or on TCP's
                // timeout the loss window (RFC 5681 §3.1). A new recovery
                // period starts now, so losses of packets sent before are not acted on again
                // (Linux stays in its Loss state until that data is acknowledged).
                self.ssthresh = self.bw_rtt_min();
                self.cwnd = self.loss_window;
                self.increase.reset();
                self.rtt_min.reset();
                self.recovery.clear();
                self.recovery.on_congestion(now, event.largest_sent_time);
                true
            }
        }
    }

    /// Congestion window in bytes.
    pub(crate) fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// Slow-start threshold, `None` while infinite.
    pub(crate) fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != INFINITE).then_some(self.ssthresh)
    }

    /// Whether cwnd is below ssthresh.
    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// RTT_min, `None` before the first RTT sample.
    pub(crate) fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min.value
    }

    /// The filtered bandwidth estimate.
    pub(crate) fn bwe(&self) -> Rate {
        self.bwe.estimate()
    }

    /// Traced mode: `recovery`, `slow_start` or `congestion_avoidance`.
    pub(crate) fn mode(&self) -> &'static str {
        if self.recovery.in_recovery() {
            "recovery"
        } else if self.in_slow_start() {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }

    /// RTT_min in milliseconds for traces, -1 before the first sample.
    pub(crate) fn rtt_min_ms(&self) -> f64 {
        self.rtt_min.value.map_or(-1.0, |d| d.as_secs_f64() * 1e3)
    }

    /// `ssthresh_bytes` for traces (-1 while infinite).
    pub(crate) fn ssthresh_traced(&self) -> f64 {
        ssthresh_value(self.ssthresh)
    }
}

/// A Westwood+ controller (Linux `tcp_westwood.c` with QUIC recovery periods).
#[derive(Clone, Debug)]
pub struct Westwood {
    core: WestwoodCore,
}

impl Westwood {
    /// A controller in slow start whose bandwidth samples go to `filter`.
    pub fn new(config: &ControllerConfig, filter: BandwidthFilter) -> Self {
        Westwood {
            core: WestwoodCore::new(config, filter),
        }
    }

    /// The filtered bandwidth estimate (BWE).
    pub fn bandwidth_estimate(&self) -> Rate {
        self.core.bwe()
    }

    /// RTT_min, `None` before the first RTT sample.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.core.rtt_min()
    }
}

impl Controller for Westwood {
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        if self.core.measure(now, ack) {
            self.core.grow(ack);
        }
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        self.core.on_congestion(now, event);
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
        ControllerState {
            mode: self.core.mode(),
            values: vec![
                ("bwe_bps", self.core.bwe().bits_per_sec()),
                ("rtt_min_ms", self.core.rtt_min_ms()),
                ("ssthresh_bytes", self.core.ssthresh_traced()),
                ("cwnd_bytes", self.core.cwnd() as f64),
            ],
        }
    }
}

/// Test helpers shared with `quic_dc`'s tests.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{ParamValue, Params};
    use crate::testing::*;

    const MSS: u64 = 1500;

    fn westwood(old_weight: f64) -> Westwood {
        Westwood::new(
            &ControllerConfig::default(),
            BandwidthFilter::new(old_weight),
        )
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn filter_matches_hand_computed_values() {
        // tcp_westwood.c: first sample raw, then bw_ns = w*bw_ns + (1-w)*x, bw = w*bw +
        // (1-w)*bw_ns. Hand-computed for samples 800, 1600, 800 B/s; floating point, 1e-9.
        for (w, expected) in [
            (0.875, [800.0, 812.5, 821.875]),
            (0.25, [800.0, 1250.0, 1025.0]),
        ] {
            let mut f = BandwidthFilter::new(w);
            for (x, e) in [800.0, 1600.0, 800.0].iter().zip(expected) {
                let got = f.update(Rate::from_bytes_per_sec(*x)).bytes_per_sec();
                assert!(close(got, e), "w = {w}: {got} != {e}");
            }
        }
    }

    #[test]
    fn the_tustin_filter_matches_ns3_by_hand() {
        // ns-3 TcpWestwoodPlus::EstimateBW: bw = 0.9 bw + 0.1 (x + x_prev) / 2, from zero.
        // Samples 800, 1600, 800 B/s: 0.1 * 400 = 40; 0.9 * 40 + 0.1 * 1200 = 156;
        // 0.9 * 156 + 0.1 * 1200 = 260.4. Floating point, 1e-9.
        let mut f = BandwidthFilter::tustin(TUSTIN_OLD_WEIGHT);
        for (x, e) in [800.0, 1600.0, 800.0].iter().zip([40.0, 156.0, 260.4]) {
            let got = f.update(Rate::from_bytes_per_sec(*x)).bytes_per_sec();
            assert!(close(got, e), "{got} != {e}");
        }
        let mut p = Params::new();
        p.insert("filter".into(), ParamValue::Text("tustin".into()));
        assert!(crate::registry::build("westwood", &p, &ControllerConfig::default()).is_ok());
        p.insert("filter".into(), ParamValue::Text("kalman".into()));
        let e = crate::registry::build("westwood", &p, &ControllerConfig::default())
            .err()
            .expect("an unknown filter is refused");
        assert!(e.to_string().contains("accepted: linux, tustin"), "{e}");
    }

    #[test]
    fn bwe_samples_per_window_and_filters() {
        // ACKs every 1 ms from t = 50 ms, 50 ms RTT: the window closes at the first ACK more
        // than 50 ms after it opened (t = 101, 152, 203), each window holds 51 ACKs over
        // 51 ms, so window k's sample is its ACK size x 1000 B/s. Sizes 800, 1600, 800 bytes
        // give raw samples 0.8, 1.6, 0.8 MB/s; hand-computed estimates as above, 1e-9.
        let size = |t: u64| [800, 1600, 800, 800][((t - 50) / 51) as usize];
        for (w, expected) in [
            (0.875, [0.8e6, 0.8125e6, 0.821875e6]),
            (0.25, [0.8e6, 1.25e6, 1.025e6]),
        ] {
            let mut c = westwood(w);
            ack_every_ms(&mut c, 50, 100, 50, size);
            assert_eq!(c.bandwidth_estimate(), Rate::ZERO, "no window closed yet");
            for (k, e) in expected.iter().enumerate() {
                let close_at = 101 + 51 * k as u64;
                ack_every_ms(&mut c, close_at, close_at, 50, size);
                let got = c.bandwidth_estimate().bytes_per_sec();
                assert!(close(got, *e), "w = {w}, window {k}: {got} != {e}");
                assert!(close(value(&c, "bwe_bps"), e * 8.0));
                ack_every_ms(&mut c, close_at + 1, close_at + 50, 50, size);
            }
        }
    }

    #[test]
    fn sample_window_is_at_least_the_latest_rtt() {
        // With a 120 ms RTT the window must span more than 120 ms, not 50 ms.
        let mut c = westwood(0.875);
        ack_every_ms(&mut c, 120, 240, 120, |_| 1000);
        assert_eq!(c.bandwidth_estimate(), Rate::ZERO);
        ack_every_ms(&mut c, 241, 241, 120, |_| 1000);
        // 121 ACKs of 1000 bytes over 121 ms: 1 MB/s.
        assert!(close(c.bandwidth_estimate().bytes_per_sec(), 1e6));
    }

    /// A controller that has measured 10 Mbps (1.25e6 B/s) and RTT_min = 50 ms, grown in slow
    /// start to well above the 62,500-byte BDP.
    fn measured() -> Westwood {
        let mut c = westwood(0.875);
        ten_mbps_until(&mut c, 400);
        assert!(close(c.bandwidth_estimate().bytes_per_sec(), 1.25e6));
        assert_eq!(c.rtt_min(), Some(Duration::from_millis(50)));
        assert!(c.cwnd() > 100_000);
        c
    }

    #[test]
    fn loss_sets_window_to_bwe_times_rtt_min_once_per_recovery_period() {
        // tcp_westwood.c: cwnd = ssthresh = BWE x RTT_min = 1.25e6 B/s x 50 ms = 62,500 bytes
        // (floating-point product truncated to bytes: within 1 byte).
        let mut c = measured();
        c.on_congestion(at(400), &congestion(CongestionKind::Loss, at(380)));
        let bdp = c.cwnd();
        assert!(bdp.abs_diff(62_500) <= 1, "{bdp}");
        assert_eq!(c.ssthresh(), Some(bdp));
        assert_eq!(c.state().mode, "recovery");
        // An ACK of a packet sent before the recovery start carries a smaller RTT: RTT_min
        // becomes 40 ms, but the ACK neither grows cwnd nor ends recovery.
        c.on_ack(at(401), &ack(MSS, at(361), 40));
        assert_eq!(c.rtt_min(), Some(Duration::from_millis(40)));
        assert_eq!(c.cwnd(), bdp);
        assert_eq!(c.state().mode, "recovery");
        // A loss of another packet sent before the recovery start: no second reduction (it
        // would now give 1.25e6 x 40 ms = 50,000 bytes).
        c.on_congestion(at(402), &congestion(CongestionKind::Loss, at(399)));
        assert_eq!(c.cwnd(), bdp);
        // The first ACK of a packet sent after the recovery start ends it (no RTT sample, and
        // early enough that no bandwidth window closes: BWE stays 1.25e6 B/s).
        let mut after = ack(MSS, at(401), 50);
        after.rtt_sample = None;
        c.on_ack(at(403), &after);
        assert_eq!(c.state().mode, "congestion_avoidance");
        assert!(close(c.bandwidth_estimate().bytes_per_sec(), 1.25e6));
        // A loss of a packet sent after the recovery start is a new event: 50,000 bytes.
        c.on_congestion(at(404), &congestion(CongestionKind::Loss, at(402)));
        assert!(c.cwnd().abs_diff(50_000) <= 1, "{}", c.cwnd());
        assert_eq!(c.ssthresh(), Some(c.cwnd()));
    }

    #[test]
    fn acks_of_packets_sent_before_the_reduction_do_not_count_for_bwe() {
        // mvfst Westwood.cpp / WestwoodOWD.cpp onPacketAcked: such ACKs are ignored
        // entirely. The window opened at t = 356 holds ACKs 356..400 (45 x 1250 = 56,250
        // bytes); the ACKs at 401..420 are of packets sent before the recovery start (400);
        // the ACK at 421 of a packet sent at 401 closes the window: 56,250 B / 65 ms =
        // 865,384.6 B/s. Filtered with 7/8 from 1.25e6 B/s: 1,201,923.08 then 1,243,990.38
        // (hand-computed; 1e-9 relative). Counting the ignored ACKs would keep 1.25e6.
        let mut c = measured();
        c.on_congestion(at(400), &congestion(CongestionKind::Loss, at(380)));
        ack_every_ms(&mut c, 401, 420, 50, |_| 1250);
        let mut after = ack(1250, at(401), 50);
        after.rtt_sample = None;
        c.on_ack(at(421), &after);
        let sample: f64 = 56_250.0 / 0.065;
        let first = 0.875 * 1.25e6 + 0.125 * sample;
        let expected = 0.875 * 1.25e6 + 0.125 * first;
        assert!((expected - 1_243_990.38).abs() < 0.01);
        let got = c.bandwidth_estimate().bytes_per_sec();
        assert!(close(got, expected), "{got} != {expected}");
    }

    #[test]
    fn ecn_ce_reacts_like_loss() {
        let mut c = measured();
        c.on_congestion(at(400), &congestion(CongestionKind::EcnCe, at(380)));
        assert!(c.cwnd().abs_diff(62_500) <= 1);
    }

    #[test]
    fn reaction_is_floored_at_two_mss() {
        // Before any bandwidth sample BWE x RTT_min = 0: tcp_westwood_bw_rttmin floors at 2.
        let mut c = westwood(0.875);
        c.on_congestion(at(100), &congestion(CongestionKind::Loss, at(50)));
        assert_eq!(c.cwnd(), 2 * MSS);
        assert_eq!(c.ssthresh(), Some(2 * MSS));
    }

    #[test]
    fn persistent_congestion_sets_ssthresh_and_minimum_window() {
        // tcp_westwood.c CA_EVENT_LOSS: ssthresh = BWE x RTT_min; RFC 9002 §7.6.2: cwnd =
        // minimum window (2 MSS); RTT_min is taken afresh from the next sample.
        let mut c = measured();
        c.on_congestion(
            at(400),
            &congestion(CongestionKind::PersistentCongestion, at(390)),
        );
        assert_eq!(c.cwnd(), 2 * MSS);
        assert!(c.ssthresh().unwrap().abs_diff(62_500) <= 1);
        // Losses of packets sent before it are not acted on again.
        c.on_congestion(at(401), &congestion(CongestionKind::Loss, at(395)));
        assert_eq!(c.cwnd(), 2 * MSS);
        // The next RTT sample replaces RTT_min even though it is larger; the ACK of a packet
        // sent after the event ends recovery and slow start resumes.
        c.on_ack(at(480), &ack(MSS, at(410), 70));
        assert_eq!(c.rtt_min(), Some(Duration::from_millis(70)));
        assert_eq!(c.state().mode, "slow_start");
        assert_eq!(c.cwnd(), 3 * MSS);
        c.on_ack(at(481), &ack(MSS, at(411), 90));
        assert_eq!(c.rtt_min(), Some(Duration::from_millis(70)));
    }

    #[test]
    fn reno_growth_in_slow_start_and_congestion_avoidance() {
        let mut c = measured();
        c.on_congestion(at(400), &congestion(CongestionKind::Loss, at(380)));
        let w = c.cwnd();
        // Congestion avoidance: exactly one MSS per cwnd bytes acknowledged (byte counting).
        let mut acked = 0;
        let mut t = 451;
        while acked + MSS <= w {
            c.on_ack(at(t), &ack(MSS, at(t - 50), 50));
            acked += MSS;
            t += 1;
        }
        assert_eq!(c.cwnd(), w);
        c.on_ack(at(t), &ack(w - acked, at(t - 50), 50));
        assert_eq!(c.cwnd(), w + MSS);
        // No growth while application-limited.
        let mut limited = ack(MSS, at(t - 49), 50);
        limited.app_limited = true;
        for _ in 0..100 {
            c.on_ack(at(t + 1), &limited);
        }
        assert_eq!(c.cwnd(), w + MSS);
    }

    #[test]
    fn state_names_every_value() {
        let c = westwood(0.875);
        let s = c.state();
        assert_eq!(s.mode, "slow_start");
        assert_eq!(
            s.values,
            vec![
                ("bwe_bps", 0.0),
                ("rtt_min_ms", -1.0),
                ("ssthresh_bytes", -1.0),
                ("cwnd_bytes", 15_000.0)
            ]
        );
    }

    #[test]
    fn info_checks_the_filter_weight() {
        let config = ControllerConfig::default();
        for ok in [0.0, 0.25, 0.875] {
            let mut p = Params::new();
            p.insert("bwe_old_weight".into(), ParamValue::Number(ok));
            assert!(INFO.instantiate(&p, &config).is_ok());
        }
        for bad in [-0.1, 1.0, 1.5] {
            let mut p = Params::new();
            p.insert("bwe_old_weight".into(), ParamValue::Number(bad));
            let e = INFO.instantiate(&p, &config).err().unwrap();
            assert!(e.to_string().contains("bwe_old_weight"), "{e}");
        }
        let mut p = Params::new();
        p.insert("threshold".into(), ParamValue::Text("8ms".into()));
        let e = INFO.instantiate(&p, &config).err().unwrap();
        assert!(e.to_string().contains("unknown parameter"), "{e}");
    }
}
