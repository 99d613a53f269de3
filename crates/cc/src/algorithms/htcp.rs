//! H-TCP as Linux runs it, counted in bytes, with QUIC recovery periods.
//!
//! Sources: D. Leith and R. Shorten, "H-TCP: TCP for high-speed and long-distance networks",
//! PFLDnet 2004: the increase α(Δ) as a function of the time Δ since the last congestion event
//! with Δ_L = 1 s, α = 2 (1 - β) α(Δ) for TCP-friendliness, the adaptive backoff β =
//! RTT_min / RTT_max within [0.5, 0.8], RTT scaling of α and the bandwidth switch; Linux
//! `net/ipv4/tcp_htcp.c`, followed for every detail the paper leaves open:
//! `htcp_alpha_update` (RTT scaling by min_RTT / 100 ms clamped to [0.1, 2], at least 1),
//! `htcp_beta_update` (the fallbacks to 0.5: min_RTT <= 10 ms, the first event after a mode
//! switch, a maxB change of more than 20 %), `measure_rtt` (max_RTT only outside recovery and
//! only by samples at most 20 ms above it), `htcp_param_update` (max_RTT fades to min_RTT +
//! 0.95 (max_RTT - min_RTT) at every congestion event), `measure_achieved_throughput` (the
//! smoothed throughput Bi and its maximum maxB), `htcp_state` (Δ restarts when a congestion
//! event starts and again when the sender is back in the Open state) and
//! `htcp_recalc_ssthresh` (ssthresh = max(β cwnd, 2)). The Reno core around it (slow start,
//! recovery periods, persistent congestion) is [`crate::algorithms::aimd`], QUIC's form of Linux's.
//!
//! Units: windows and throughput counts in bytes, times as [`Duration`]s, α in packets per
//! RTT, kept x 128 for the increase as Linux keeps it. See `docs/htcp.md` for every choice
//! made.

use crate::algorithms::aimd::{Aimd, AimdRule, Increase};
use crate::controller::{
    AckEvent, Controller, ControllerConfig, ControllerInfo, Instant, ParamError, ParamKind,
    ParamReader, ParamSpec, Rate,
};
use std::time::Duration;

/// Δ_L: the low-speed period after a congestion event (Leith & Shorten 2004; tcp_htcp.c HZ).
const DELTA_L: Duration = Duration::from_secs(1);
/// Smallest backoff β (tcp_htcp.c `BETA_MIN`, 0.5).
pub const BETA_MIN: f64 = 0.5;
/// Largest backoff β (tcp_htcp.c `BETA_MAX`, 0.8).
pub const BETA_MAX: f64 = 0.8;
/// β adapts only when min_RTT is above this (tcp_htcp.c `htcp_beta_update`: 10 ms).
const BETA_MIN_RTT: Duration = Duration::from_millis(10);
/// Largest step by which one sample may raise max_RTT (tcp_htcp.c `measure_rtt`: 20 ms).
const MAX_RTT_STEP: Duration = Duration::from_millis(20);
/// Weight of the old distance max_RTT - min_RTT after a congestion event (tcp_htcp.c
/// `htcp_param_update`: 95 / 100).
const MAX_RTT_FADE: f64 = 0.95;
/// The RTT at which RTT scaling leaves α unchanged (tcp_htcp.c: 100 ms).
const RTT_SCALING_REF: Duration = Duration::from_millis(100);
/// Bounds of the RTT scaling ratio (tcp_htcp.c: `scale` clamped to [0.5, 10] << 3).
const RTT_SCALING_BOUNDS: (f64, f64) = (0.1, 2.0);
/// Fixed-point scale of α in the increase (tcp_htcp.c: `alpha` << 7).
const ALPHA_SCALE: u64 = 128;
/// Throughput samples within this many min_RTTs after a congestion event restart the
/// estimate (tcp_htcp.c `htcp_ccount(ca) <= 3`, i.e. less than 4 min_RTTs).
const BACKOFF_RTTS: u32 = 4;

/// Parameters H-TCP accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "rtt_scaling",
        kind: ParamKind::Bool,
        default: "true",
        doc: "scale α by min_RTT / 100 ms, clamped to [0.1, 2] (tcp_htcp.c use_rtt_scaling)",
    },
    ParamSpec {
        name: "bandwidth_switch",
        kind: ParamKind::Bool,
        default: "true",
        doc: "fall back to β = 0.5 when the achieved throughput changed by more than 20 % \
              between congestion events (tcp_htcp.c use_bandwidth_switch)",
    },
];

/// Registry entry for `htcp`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "htcp",
    summary: "H-TCP in bytes with QUIC recovery: α(Δ), β = min_RTT/max_RTT in [0.5, 0.8] \
              (Leith & Shorten 2004, tcp_htcp.c)",
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
    let params = HtcpParams {
        rtt_scaling: reader.boolean("rtt_scaling", true),
        bandwidth_switch: reader.boolean("bandwidth_switch", true),
    };
    Ok(Box::new(Htcp::new(config, params)))
}

/// Settings of one H-TCP instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HtcpParams {
    /// Whether α is scaled by min_RTT (tcp_htcp.c `use_rtt_scaling`).
    pub rtt_scaling: bool,
    /// Whether a throughput change resets β to 0.5 (tcp_htcp.c `use_bandwidth_switch`).
    pub bandwidth_switch: bool,
}

impl Default for HtcpParams {
    fn default() -> Self {
        HtcpParams {
            rtt_scaling: true,
            bandwidth_switch: true,
        }
    }
}

/// α(Δ) in packets per RTT before the β and RTT factors, Δ the time since the last congestion
/// event.
pub fn alpha_of_delta(delta: Duration) -> f64 {
    // H-TCP (Leith & Shorten 2004): α(Δ) = 1 for Δ <= Δ_L, else
    // 1 + 10 (Δ - Δ_L) + ((Δ - Δ_L) / 2)^2, Δ in seconds (tcp_htcp.c htcp_alpha_update).
    let d = delta.saturating_sub(DELTA_L).as_secs_f64();
    1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
}

/// The RTT scaling ratio min_RTT / 100 ms, clamped to [0.1, 2] (tcp_htcp.c
/// `htcp_alpha_update`).
pub fn rtt_scaling_ratio(min_rtt: Duration) -> f64 {
    let (lo, hi) = RTT_SCALING_BOUNDS;
    (min_rtt.as_secs_f64() / RTT_SCALING_REF.as_secs_f64()).clamp(lo, hi)
}

/// The adaptive backoff β = min_RTT / max_RTT clamped to [0.5, 0.8] (H-TCP; tcp_htcp.c
/// `htcp_beta_update`).
pub fn beta_of_rtts(min_rtt: Duration, max_rtt: Duration) -> f64 {
    (min_rtt.as_secs_f64() / max_rtt.as_secs_f64()).clamp(BETA_MIN, BETA_MAX)
}

/// Achieved throughput between congestion events, for the bandwidth switch
/// (tcp_htcp.c `measure_achieved_throughput`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Throughput {
    /// Bytes acknowledged since `since` (`packetcount`).
    bytes: u64,
    /// Start of the current sample (`lasttime`); `None` before the first ACK.
    since: Option<Instant>,
    /// Smoothed throughput (`Bi`).
    bi: Rate,
    /// Largest smoothed throughput since the last congestion event (`maxB`).
    max_b: Rate,
    /// `maxB` at the previous congestion event (`old_maxB`).
    old_max_b: Rate,
}

/// The H-TCP increase and decrease, with their RTT and throughput measurements.
#[derive(Clone, Debug, PartialEq)]
pub struct HtcpRule {
    params: HtcpParams,
    mss: u64,
    /// The backoff factor β: the fraction of cwnd kept at a congestion event.
    beta: f64,
    /// α in packets per RTT at the latest congestion-avoidance ACK, for traces.
    alpha: f64,
    /// Whether β may adapt (tcp_htcp.c `modeswitch`): not on the first congestion event
    /// after the start or after a bandwidth switch.
    modeswitch: bool,
    /// When Δ started (tcp_htcp.c `last_cong`); `None` before the first packet.
    last_cong: Option<Instant>,
    min_rtt: Option<Duration>,
    max_rtt: Option<Duration>,
    throughput: Throughput,
}

impl HtcpRule {
    /// The rule before any measurement: α = 1, β = 0.5 (tcp_htcp.c `htcp_init`).
    pub fn new(mss: u64, params: HtcpParams) -> Self {
        HtcpRule {
            params,
            mss,
            beta: BETA_MIN,
            alpha: 1.0,
            modeswitch: false,
            last_cong: None,
            min_rtt: None,
            max_rtt: None,
            throughput: Throughput::default(),
        }
    }

    /// The current backoff factor β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The smallest and largest RTT the rule uses for β.
    pub fn rtts(&self) -> (Option<Duration>, Option<Duration>) {
        (self.min_rtt, self.max_rtt)
    }

    /// Δ: time since the last congestion event (or since the start).
    fn delta(&self, now: Instant) -> Duration {
        self.last_cong
            .map_or(Duration::ZERO, |since| now.saturating_since(since))
    }

    /// α in packets per RTT at `now`: 2 (1 - β) α(Δ), α(Δ) scaled by min_RTT / 100 ms and at
    /// least 1 (tcp_htcp.c `htcp_alpha_update`).
    pub fn alpha(&self, now: Instant) -> f64 {
        let mut factor = alpha_of_delta(self.delta(now));
        if let Some(min_rtt) = self.min_rtt.filter(|_| self.params.rtt_scaling) {
            factor = (factor * rtt_scaling_ratio(min_rtt)).max(1.0);
        }
        // H-TCP: α = 2 (1 - β) α(Δ), so that β and α keep TCP-friendliness.
        2.0 * factor * (1.0 - self.beta)
    }

    /// One RTT sample; max_RTT only outside recovery (tcp_htcp.c `measure_rtt`).
    fn measure_rtt(&mut self, rtt: Duration, open: bool) {
        let min_rtt = self.min_rtt.map_or(rtt, |m| m.min(rtt));
        self.min_rtt = Some(min_rtt);
        if !open {
            return;
        }
        let max_rtt = self.max_rtt.map_or(min_rtt, |m| m.max(min_rtt));
        // Samples more than 20 ms above max_RTT are spikes and ignored.
        let raised = rtt > max_rtt && rtt <= max_rtt + MAX_RTT_STEP;
        self.max_rtt = Some(if raised { rtt } else { max_rtt });
    }

    /// Counts acknowledged bytes; closes a throughput sample once it spans at least
    /// cwnd - α packets and min_RTT (tcp_htcp.c `measure_achieved_throughput`).
    fn measure_throughput(&mut self, now: Instant, acked: u64, cwnd: u64, open: bool) {
        let t = &mut self.throughput;
        if !open {
            // Not in the Open state: restart the sample.
            (t.bytes, t.since) = (0, Some(now));
            return;
        }
        let since = *t.since.get_or_insert(now);
        t.bytes = t.bytes.saturating_add(acked);
        let Some(min_rtt) = self.min_rtt else {
            return;
        };
        let interval = now.saturating_since(since);
        let alpha_packets = (self.alpha as u64).max(1);
        let enough = cwnd.saturating_sub(alpha_packets * self.mss);
        if t.bytes < enough || interval < min_rtt || interval.is_zero() {
            return;
        }
        let current = Rate::from_bytes_over(t.bytes, interval);
        if self
            .last_cong
            .is_some_and(|c| now.saturating_since(c) < min_rtt * BACKOFF_RTTS)
        {
            // Just after a backoff: the estimate starts afresh.
            (t.bi, t.max_b) = (current, current);
        } else {
            // Bi = (3 Bi + current) / 4; maxB = max(maxB, Bi).
            let bi = (3.0 * t.bi.bytes_per_sec() + current.bytes_per_sec()) / 4.0;
            t.bi = Rate::from_bytes_per_sec(bi);
            if t.bi > t.max_b {
                t.max_b = t.bi;
            }
        }
        (t.bytes, t.since) = (0, Some(now));
    }

    /// Whether maxB moved by more than 20 % since the previous congestion event:
    /// 5 maxB outside [4, 6] old_maxB (tcp_htcp.c `htcp_beta_update`). Rolls old_maxB on.
    fn bandwidth_switched(&mut self) -> bool {
        let t = &mut self.throughput;
        let (max_b, old) = (t.max_b.bytes_per_sec(), t.old_max_b.bytes_per_sec());
        t.old_max_b = t.max_b;
        !(4.0 * old..=6.0 * old).contains(&(5.0 * max_b))
    }

    /// β for the congestion event now starting (tcp_htcp.c `htcp_beta_update`).
    fn update_beta(&mut self) {
        if self.params.bandwidth_switch && self.bandwidth_switched() {
            self.beta = BETA_MIN;
            self.modeswitch = false;
            return;
        }
        match (self.min_rtt, self.max_rtt) {
            (Some(min_rtt), Some(max_rtt)) if self.modeswitch && min_rtt > BETA_MIN_RTT => {
                self.beta = beta_of_rtts(min_rtt, max_rtt);
            }
            _ => {
                self.beta = BETA_MIN;
                self.modeswitch = true;
            }
        }
    }

    /// max_RTT fades towards min_RTT so that route changes are forgotten (tcp_htcp.c
    /// `htcp_param_update`: max = min + 0.95 (max - min)).
    fn fade_max_rtt(&mut self) {
        if let (Some(min_rtt), Some(max_rtt)) = (self.min_rtt, self.max_rtt) {
            if max_rtt > min_rtt {
                self.max_rtt = Some(min_rtt + (max_rtt - min_rtt).mul_f64(MAX_RTT_FADE));
            }
        }
    }
}

impl AimdRule for HtcpRule {
    fn increase(&mut self, now: Instant, cwnd: u64, _mss: u64) -> Increase {
        // tcp_htcp.c htcp_cong_avoid: cwnd += α / cwnd per acknowledged packet, α x 128.
        self.alpha = self.alpha(now);
        Increase {
            packets: (self.alpha * ALPHA_SCALE as f64).round() as u64,
            per_bytes: cwnd.saturating_mul(ALPHA_SCALE),
        }
    }

    fn ssthresh(&mut self, now: Instant, cwnd: u64, _mss: u64) -> u64 {
        // tcp_htcp.c htcp_recalc_ssthresh: htcp_param_update, then max(β cwnd, 2) (the
        // floor is the window's); htcp_state: Δ restarts as the event begins.
        self.update_beta();
        self.fade_max_rtt();
        self.last_cong = Some(now);
        (cwnd as f64 * self.beta) as u64
    }

    fn values(&self, _cwnd: u64, _mss: u64) -> Vec<(&'static str, f64)> {
        let ms = |d: Option<Duration>| d.map_or(-1.0, |d| d.as_secs_f64() * 1e3);
        vec![
            ("alpha_packets", self.alpha),
            ("beta", self.beta),
            ("min_rtt_ms", ms(self.min_rtt)),
            ("max_rtt_ms", ms(self.max_rtt)),
            ("max_b_bps", self.throughput.max_b.bits_per_sec()),
        ]
    }

    fn on_sent(&mut self, now: Instant) {
        // tcp_htcp.c htcp_init: Δ counts from the start of the connection.
        self.last_cong.get_or_insert(now);
    }

    fn observe_ack(&mut self, now: Instant, ack: &AckEvent, cwnd: u64, in_recovery: bool) {
        self.last_cong.get_or_insert(now);
        if let Some(rtt) = ack.rtt_sample {
            self.measure_rtt(rtt, !in_recovery);
        }
        if self.params.bandwidth_switch {
            self.measure_throughput(now, ack.acked_bytes, cwnd, !in_recovery);
        }
    }

    fn on_recovery_end(&mut self, now: Instant) {
        // tcp_htcp.c htcp_state(TCP_CA_Open): Δ counts from the end of the congestion event.
        self.last_cong = Some(now);
    }

    fn on_persistent_congestion(&mut self, now: Instant) {
        // tcp_htcp.c htcp_state(TCP_CA_Loss): htcp_reset.
        self.last_cong = Some(now);
    }
}

/// An H-TCP controller (Leith & Shorten 2004, Linux tcp_htcp.c).
pub type Htcp = Aimd<HtcpRule>;

impl Htcp {
    /// A controller in slow start with the transport's initial window.
    pub fn new(config: &ControllerConfig, params: HtcpParams) -> Self {
        Aimd::with_rule(config, HtcpRule::new(config.max_datagram_size, params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{CongestionKind, ParamValue, Params};
    use crate::testing::{ack, at, congestion, value};

    const MSS: u64 = 1500;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn rule(rtt_scaling: bool, bandwidth_switch: bool) -> HtcpRule {
        let params = HtcpParams {
            rtt_scaling,
            bandwidth_switch,
        };
        HtcpRule::new(MSS, params)
    }

    /// Feeds `rule` one MSS ACK per millisecond from `from_ms` to `to_ms` with RTT `rtt_ms`
    /// (1.5 MB/s), outside recovery, the window at `cwnd` bytes.
    fn acks(r: &mut HtcpRule, from_ms: u64, to_ms: u64, rtt_ms: u64, cwnd: u64) {
        for t in from_ms..=to_ms {
            r.observe_ack(at(t), &ack(MSS, at(t - rtt_ms), rtt_ms), cwnd, false);
        }
    }

    /// A traced value of the rule by name.
    fn value_of(r: &HtcpRule, name: &str) -> f64 {
        let values = r.values(0, MSS);
        values.iter().find(|(n, _)| *n == name).unwrap().1
    }

    #[test]
    fn alpha_of_delta_follows_the_paper() {
        // Leith & Shorten 2004: α(Δ) = 1 for Δ <= Δ_L = 1 s, then
        // 1 + 10 (Δ - 1) + ((Δ - 1) / 2)^2; float rounding only (1e-9).
        for (delta_ms, expected) in [
            (0, 1.0),
            (500, 1.0),
            (1000, 1.0),
            (1500, 6.0625),
            (2000, 11.25),
            (3000, 22.0),
            (11_000, 126.0),
        ] {
            let got = alpha_of_delta(Duration::from_millis(delta_ms));
            assert!(close(got, expected), "α({delta_ms} ms) = {got}");
        }
    }

    #[test]
    fn beta_is_min_over_max_rtt_clamped() {
        // H-TCP / tcp_htcp.c htcp_beta_update: β = min_RTT / max_RTT within [0.5, 0.8].
        let ms = Duration::from_millis;
        assert!(close(beta_of_rtts(ms(100), ms(110)), 0.8));
        assert!(close(beta_of_rtts(ms(100), ms(125)), 0.8));
        assert!(close(beta_of_rtts(ms(100), ms(150)), 100.0 / 150.0));
        assert!(close(beta_of_rtts(ms(100), ms(200)), 0.5));
        assert!(close(beta_of_rtts(ms(100), ms(300)), 0.5));
    }

    #[test]
    fn beta_adapts_from_the_second_event_and_max_rtt_fades() {
        // tcp_htcp.c without the bandwidth switch: the first event uses β = 0.5 (modeswitch),
        // later ones min_RTT / max_RTT; max_RTT rises by at most 20 ms per sample, only
        // outside recovery, and fades to min + 0.95 (max - min) at every event.
        let mut r = rule(true, false);
        r.on_sent(at(0));
        for rtt in [100, 120, 140, 150, 400] {
            r.observe_ack(at(1000), &ack(MSS, at(0), rtt), 100 * MSS, false);
        }
        // 400 ms is a spike (more than 20 ms above 150 ms); in recovery nothing counts.
        r.observe_ack(at(1000), &ack(MSS, at(0), 160), 100 * MSS, true);
        let ms = Duration::from_millis;
        assert_eq!(r.rtts(), (Some(ms(100)), Some(ms(150))));
        assert_eq!(r.ssthresh(at(2000), 100 * MSS, MSS), 50 * MSS);
        assert_eq!(r.rtts().1, Some(ms(100) + ms(50).mul_f64(0.95)));
        let ssthresh = r.ssthresh(at(3000), 100 * MSS, MSS);
        assert!(close(r.beta(), 100.0 / 147.5), "{}", r.beta());
        assert_eq!(ssthresh, (100.0 * MSS as f64 * 100.0 / 147.5) as u64);
        // min_RTT at or below 10 ms: back to 0.5.
        let mut r = rule(true, false);
        r.observe_ack(at(0), &ack(MSS, at(0), 10), 100 * MSS, false);
        r.observe_ack(at(0), &ack(MSS, at(0), 25), 100 * MSS, false);
        r.ssthresh(at(100), 100 * MSS, MSS);
        r.ssthresh(at(200), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.5);
    }

    #[test]
    fn bandwidth_switch_falls_back_to_one_half() {
        // tcp_htcp.c htcp_beta_update: if maxB changed by more than 20 % (5 maxB outside
        // [4, 6] old_maxB) β = 0.5 and the next event is a mode switch too. Constant RTT
        // 100 ms, so min/max = 1 and an adaptive β is clamped to 0.8.
        let mut r = rule(true, true);
        r.on_sent(at(0));
        acks(&mut r, 100, 2000, 100, 100 * MSS);
        // First event: old maxB = 0, so the switch fires.
        r.ssthresh(at(2000), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.5);
        acks(&mut r, 2001, 4000, 100, 100 * MSS);
        // Same throughput: no switch, but modeswitch was off: 0.5 once more.
        r.ssthresh(at(4000), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.5);
        acks(&mut r, 4001, 6000, 100, 100 * MSS);
        r.ssthresh(at(6000), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.8);
        let max_b = value_of(&r, "max_b_bps");
        assert!(
            (max_b / 12e6 - 1.0).abs() < 0.01,
            "maxB {max_b} bit/s vs 12 Mbit/s"
        );
        // Twice the throughput (two MSS per ACK): more than 20 % up, β = 0.5.
        for t in 6001..=8000 {
            r.observe_ack(at(t), &ack(2 * MSS, at(t - 100), 100), 100 * MSS, false);
        }
        r.ssthresh(at(8000), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.5);
        // Without the switch the same history gives 0.8 from the second event on.
        let mut r = rule(true, false);
        r.on_sent(at(0));
        acks(&mut r, 100, 2000, 100, 100 * MSS);
        r.ssthresh(at(2000), 100 * MSS, MSS);
        r.ssthresh(at(4000), 100 * MSS, MSS);
        assert_eq!(r.beta(), 0.8);
    }

    #[test]
    fn rtt_scaling_multiplies_alpha_by_min_rtt_over_100_ms() {
        // tcp_htcp.c htcp_alpha_update: α(Δ) x min_RTT / 100 ms, the ratio clamped to
        // [0.1, 2] and the product at least 1; with β = 0.5, α = α(Δ) x ratio. At Δ = 2 s,
        // α(Δ) = 11.25. Float rounding only (1e-9).
        for (min_rtt_ms, scaled, unscaled) in [
            (100, 11.25, 11.25),
            (200, 22.5, 11.25),
            (400, 22.5, 11.25),
            (50, 5.625, 11.25),
            (5, 1.125, 11.25),
        ] {
            for (scaling, expected) in [(true, scaled), (false, unscaled)] {
                let mut r = rule(scaling, false);
                r.on_sent(at(0));
                r.observe_ack(at(0), &ack(MSS, at(0), min_rtt_ms), 0, false);
                let got = r.alpha(at(2000));
                assert!(close(got, expected), "{min_rtt_ms} ms, {scaling}: {got}");
            }
        }
        // Below Δ_L with min_RTT 50 ms the product 0.5 is raised to 1.
        let mut r = rule(true, false);
        r.observe_ack(at(0), &ack(MSS, at(0), 50), 0, false);
        assert!(close(r.alpha(at(500)), 1.0));
    }

    #[test]
    fn in_the_window_alpha_grows_with_the_time_since_the_event() {
        // H-TCP: cwnd += α / cwnd per ACK, Δ counted from the end of the congestion event
        // (tcp_htcp.c htcp_state, Open). β = 0.5 at the first event, min_RTT 100 ms.
        let mut c = Htcp::new(&ControllerConfig::default(), HtcpParams::default());
        c.on_ack(at(100), &ack(MSS, at(0), 100));
        c.on_congestion(at(5000), &congestion(CongestionKind::Loss, at(4900)));
        assert_eq!(c.cwnd(), 11 * MSS / 2);
        // Recovery ends at 5100 ms: α restarts at 1 however long ago the previous event was.
        c.on_ack(at(5100), &ack(MSS, at(5001), 100));
        assert_eq!(value(&c, "alpha_packets"), 1.0);
        // Two seconds later α = α(2 s) = 11.25 packets per RTT, 1440 / 128. The ACK that
        // ended recovery left 1500 bytes x 128 of credit (α was 1); the first MSS arrives on
        // the byte that completes cwnd x 128 (exact).
        let w = c.cwnd();
        let needed = (w * 128 - MSS * 128).div_ceil(1440);
        c.on_ack(at(7100), &ack(needed - 1, at(7000), 100));
        assert_eq!(value(&c, "alpha_packets"), 11.25);
        assert_eq!(c.cwnd(), w);
        c.on_ack(at(7100), &ack(1, at(7000), 100));
        assert_eq!(c.cwnd(), w + MSS);
    }

    #[test]
    fn info_reads_both_switches() {
        let mut p = Params::new();
        p.insert("rtt_scaling".into(), ParamValue::Bool(false));
        p.insert("bandwidth_switch".into(), ParamValue::Bool(false));
        let c = INFO.instantiate(&p, &ControllerConfig::default()).unwrap();
        assert_eq!(c.cwnd(), 10 * MSS);
        p.insert("rtt_scaling".into(), ParamValue::Number(1.0));
        let e = INFO.instantiate(&p, &ControllerConfig::default()).err();
        assert!(e.unwrap().to_string().contains("rtt_scaling"));
    }
}
