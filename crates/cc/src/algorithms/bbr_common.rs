//! What BBR v1 ([`bbr`](super::bbr)) and BBR v2 ([`bbr2`](super::bbr2)) share, kept once: the
//! constants `tcp_bbr2.c` keeps from `tcp_bbr.c` (fixed in both, or v1's parameter defaults
//! where v1 makes them parameters) and the pacing-rate arithmetic.
//!
//! The Startup gain is not here: v1 takes the BBR paper's 2.885 (a parameter) and v2
//! `tcp_bbr2.c`'s exact 2/ln 2.

use crate::controller::Rate;
use std::time::Duration;

/// ProbeBW cwnd gain: cwnd = 2 x BDP (draft-00 `BBRSetCwnd`; `bbr_cwnd_gain`); v1's default.
pub(crate) const CWND_GAIN: f64 = 2.0;
/// Pacing gain while probing for more bandwidth: v1's first ProbeBW phase, v2's PROBE_UP
/// (BBR paper "Steady-state behavior"; `bbr_pacing_gain`).
pub(crate) const PROBE_UP_GAIN: f64 = 1.25;
/// Pacing gain that drains what probing queued: v1's second ProbeBW phase, v2's default
/// PROBE_DOWN (`bbr_pacing_gain`).
pub(crate) const PROBE_DOWN_GAIN: f64 = 0.75;
/// min-RTT filter window: ProbeRTT once the estimate is this old (BBR paper "ProbeRTT";
/// `bbr_min_rtt_win_sec`); v1's default, v2's bound on its shorter ProbeRTT interval.
pub(crate) const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// Time ProbeRTT holds its low inflight (`bbr_probe_rtt_mode_ms`); the default of both.
pub(crate) const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// Smallest cwnd in packets, v1's ProbeRTT cwnd (draft-00 `BBRMinPipeCwnd`;
/// `bbr_cwnd_min_target`).
pub(crate) const MIN_CWND_PACKETS: u64 = 4;
/// Pace this fraction below gain x bandwidth (`bbr_pacing_margin_percent`); v1's default.
pub(crate) const PACING_MARGIN: f64 = 0.01;
/// Full pipe: the bandwidth estimate must grow by this factor per round (`bbr_full_bw_thresh`).
pub(crate) const FULL_BW_THRESH: f64 = 1.25;
/// Full pipe after this many rounds without that growth (`bbr_full_bw_cnt`); v2's default.
pub(crate) const FULL_BW_CNT: u32 = 3;
/// Send quanta allowed in flight beyond the BDP (draft-00 `BBRInflight`;
/// `bbr_quantization_budget`).
pub(crate) const QUANTA_IN_BUDGET: u64 = 3;
/// Extra packets in flight while probing up, so small BDPs still probe above the BDP
/// (`bbr_quantization_budget`).
pub(crate) const PROBE_UP_EXTRA_PACKETS: u64 = 2;
/// RTT the initial pacing rate assumes before any sample (`bbr_init_pacing_rate_from_rtt`;
/// draft-00 "SRTT or 1 ms").
pub(crate) const NOMINAL_RTT: Duration = Duration::from_millis(1);

/// BBR's state machine (BBR paper Figure 6 states; `enum bbr_mode`); v2 divides ProbeBW into
/// phases of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Ramp up the sending rate rapidly to fill the pipe.
    Startup,
    /// Drain the queue Startup created.
    Drain,
    /// Cruise at BtlBw, cycling the pacing gain to probe for more.
    ProbeBw,
    /// Cut inflight to 4 packets to measure RTprop.
    ProbeRtt,
}

impl Mode {
    /// The traced mode name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// The loss-recovery states BBR distinguishes (Linux `icsk_ca_state`: Open < Recovery < Loss).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum CaState {
    /// No recovery in progress.
    Open,
    /// Fast recovery after packets were declared lost.
    Recovery,
    /// After persistent congestion (Linux: retransmission timeout, `TCP_CA_Loss`).
    Loss,
}

/// `gain x bw x (1 - margin)` (tcp_bbr.c `bbr_rate_bytes_per_sec`, tcp_bbr2.c
/// `bbr_bw_to_pacing_rate`).
pub(crate) fn pacing_rate(bw: Rate, gain: f64, margin: f64) -> Rate {
    bw.scaled(gain * (1.0 - margin))
}

/// Initial pacing: `gain x cwnd / RTT` less the margin, the RTT being the smoothed RTT (at
/// least 1 µs) or [`NOMINAL_RTT`] before any sample (`bbr_init_pacing_rate_from_rtt`; draft-00
/// `BBRInitPacingRate`).
pub(crate) fn initial_pacing_rate(
    cwnd: u64,
    srtt: Option<Duration>,
    gain: f64,
    margin: f64,
) -> Rate {
    let rtt = srtt.map_or(NOMINAL_RTT, |srtt| srtt.max(Duration::from_micros(1)));
    pacing_rate(Rate::from_bytes_over(cwnd, rtt), gain, margin)
}
