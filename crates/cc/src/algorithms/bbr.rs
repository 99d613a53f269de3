//! BBR v1 (Bottleneck Bandwidth and Round-trip propagation time): the model, once, and the
//! `bbr` controller, which runs it as Linux `tcp_bbr.c` does, counted in bytes.
//!
//! Sources:
//! - the BBR paper: Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson, "BBR: Congestion-Based
//!   Congestion Control", ACM Queue 14(5), 2016: the model (BtlBw, RTprop, BDP), the
//!   Startup / Drain / ProbeBW / ProbeRTT state machine and its gains;
//! - draft-cardwell-iccrg-bbr-congestion-control-00 (2017): the pseudocode (BBRInflight with
//!   3 send quanta, BBRSetCwnd, BBRModulateCwndForRecovery, nominal initial pacing rate);
//! - Linux `net/ipv4/tcp_bbr.c` (mainline), followed where paper and draft leave room: the
//!   per-ACK order (`bbr_main`), the 1 % pacing margin, packet conservation in recovery, the
//!   RTO (`CA_Loss`) reaction and the long-term (policer) bandwidth model;
//! - Linux `lib/win_minmax.c` (Kathleen Nichols' windowed max) for the BtlBw filter, and the
//!   delivery-rate samples of draft-cheng-iccrg-delivery-rate-estimation (Linux `tcp_rate.c`),
//!   whose `prior_delivered` also counts the rounds (tcp_bbr.c `bbr_update_bw`).
//!
//! Units: cwnd, inflight, delivered and lost are bytes of packets as sent; Linux's packet
//! counts become multiples of `max_datagram_size` (MSS); bandwidth is a [`Rate`]. Each rule is
//! tagged where it is implemented; `docs/bbr.md` lists them with every choice made.
//!
//! The model is shared: [`Bbr`] runs one [`variant::Variant`], the steps where two BBR v1
//! implementations part ways. `bbr` runs [`variant::Variant::LINUX`]; the `ccid5` controller
//! ([`super::ccid5`], telekom/mp-dccp's BBR v1 for DCCP) wraps a [`Bbr`] running
//! [`variant::Variant::ccid5`] and adds what is DCCP's own (the Ack Ratio). Each step that
//! depends on the variant matches on it where it is taken; `docs/ccid5.md` lists them.
//!
//! This module owns [`Bbr`], its parameters [`BbrParams`] and the registry entry [`INFO`].

#[cfg(test)]
pub(crate) mod test_path;
pub mod variant;

use crate::algorithms::bbr_common::{
    initial_pacing_rate, pacing_rate, CaState, Mode, CWND_GAIN, FULL_BW_CNT, FULL_BW_THRESH,
    MIN_CWND_PACKETS, MIN_RTT_WINDOW, PACING_MARGIN, PROBE_DOWN_GAIN, PROBE_RTT_DURATION,
    PROBE_UP_EXTRA_PACKETS, PROBE_UP_GAIN, QUANTA_IN_BUDGET,
};
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec, Rate, RateSample,
    SentPacket,
};
use crate::estimators::minmax::WindowedMax;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use variant::{
    Counting, CwndRestore, CwndTargetBw, DrainGains, EcnResponse, GainSetting, IdleRestart,
    LossResponse, MinRttRule, PacingInit, RtoResponse, SendQuantum, Variant,
};

/// Default Startup gain, 2/ln 2 (BBR paper "Startup"; draft-00 `BBRHighGain`).
pub const DEFAULT_HIGH_GAIN: f64 = 2.885;
/// Default BtlBw filter window in rounds (draft-00 `BtlBwFilterLen`; tcp_bbr.c `bbr_bw_rtts`).
pub const DEFAULT_BW_WINDOW_ROUNDS: u64 = 10;
/// ProbeBW pacing gains, one phase per min RTT (BBR paper "Steady-state behavior";
/// tcp_bbr.c `bbr_pacing_gain`).
const PACING_GAIN_CYCLE: [f64; 8] = [PROBE_UP_GAIN, PROBE_DOWN_GAIN, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// The random start phase is `7 - rand[0, 7)` then advanced: never the 0.75 phase
/// (tcp_bbr.c `bbr_cycle_rand`).
const CYCLE_RAND: u32 = 7;
/// Send quantum in packets: the simulator sends single packets, no TSO/GSO bursts.
const SEND_QUANTUM_PACKETS: u64 = 1;
/// [`SendQuantum::TsoSegsGoal`]: below this pacing rate (bytes/s) the goal's floor is 1
/// segment, else 2 (ccid5.c `bbr_min_tso_rate` = 1.2 Mbit/s, compared with `sk_pacing_rate`
/// as `bbr_min_tso_rate >> 3`).
const MIN_TSO_RATE_BYTES_PER_SEC: u64 = 1_200_000 >> 3;
/// [`SendQuantum::TsoSegsGoal`]: the largest GSO packet a DCCP socket gets from
/// `sk_setup_caps`, the device's `GSO_MAX_SIZE` (include/linux/netdevice.h).
const GSO_MAX_SIZE: u64 = 65_536;
/// [`SendQuantum::TsoSegsGoal`]: `MAX_DCCP_HEADER` = 255 x 4 option bytes + `MAX_HEADER`
/// (net/dccp/dccp.h); `MAX_HEADER` = `LL_MAX_HEADER` 128 + 48, a kernel configured with WLAN
/// mesh (or Hyper-V) and IP tunnels, as distribution kernels are.
const MAX_DCCP_HEADER: u64 = 1020 + 128 + 48;
/// [`SendQuantum::TsoSegsGoal`]: the goal lives in a 7-bit field (ccid5.h `tso_segs_goal:7`;
/// `min(..., 0x7FU)`).
const MAX_TSO_SEGS: u64 = 0x7F;
/// [`DrainGains::FixedPoint`]: Linux's Drain pacing gain, `BBR_UNIT * 1000 / 2885` = 88/256
/// (tcp_bbr.c and ccid5.c `bbr_drain_gain`).
const FIXED_POINT_DRAIN_GAIN: f64 = 88.0 / 256.0;
/// Long-term sampling interval, minimum rounds (tcp_bbr.c `bbr_lt_intvl_min_rtts`).
const LT_INTERVAL_MIN_ROUNDS: u64 = 4;
/// Long-term sampling interval, maximum rounds (tcp_bbr.c: 4 x `bbr_lt_intvl_min_rtts`).
const LT_INTERVAL_MAX_ROUNDS: u64 = 4 * LT_INTERVAL_MIN_ROUNDS;
/// Loss ratio that marks a policed interval, in 1/256 (tcp_bbr.c `bbr_lt_loss_thresh`).
const LT_LOSS_THRESH_256: u128 = 50;
/// Two intervals agree if their rates differ by at most this fraction
/// (tcp_bbr.c `bbr_lt_bw_ratio` = 1/8).
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// ... or by at most this many bits per second (tcp_bbr.c `bbr_lt_bw_diff` = 4 kbit/s).
const LT_BW_DIFF_BPS: f64 = 4000.0;
/// Rounds the policed rate is used before re-probing (tcp_bbr.c `bbr_lt_bw_max_rtts`).
const LT_BW_MAX_ROUNDS: u64 = 48;
/// Shortest interval that gives a long-term rate (tcp_bbr.c: at least 1 ms).
const LT_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// Parameters BBR accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "high_gain",
        kind: ParamKind::Number,
        default: "2.885",
        doc: "Startup pacing and cwnd gain (2/ln2); Drain paces at its inverse; 1.25 to 10 \
              (BBR paper \"Startup\"; draft-cardwell-iccrg-bbr-congestion-control-00 \
              BBRHighGain)",
    },
    ParamSpec {
        name: "cwnd_gain",
        kind: ParamKind::Number,
        default: "2",
        doc: "ProbeBW cwnd gain: cwnd = cwnd_gain x BDP + 3 packets; 1 to 10 \
              (draft-00 BBRSetCwnd; tcp_bbr.c bbr_cwnd_gain)",
    },
    ParamSpec {
        name: "probe_rtt_interval",
        kind: ParamKind::Duration,
        default: "10s",
        doc: "RTprop filter window: ProbeRTT when the min RTT estimate is this old; 1ms to 1h \
              (BBR paper \"ProbeRTT\"; tcp_bbr.c bbr_min_rtt_win_sec)",
    },
    ParamSpec {
        name: "probe_rtt_duration",
        kind: ParamKind::Duration,
        default: "200ms",
        doc: "time ProbeRTT keeps inflight at 4 packets (and at least one round); shorter than \
              probe_rtt_interval (draft-00 ProbeRTTDuration; tcp_bbr.c bbr_probe_rtt_mode_ms)",
    },
    ParamSpec {
        name: "bw_window_rounds",
        kind: ParamKind::Number,
        default: "10",
        doc: "BtlBw max-filter window in rounds, a whole number 1 to 1000 \
              (BBR paper: 6-10 RTTs; draft-00 BtlBwFilterLen; tcp_bbr.c bbr_bw_rtts)",
    },
    ParamSpec {
        name: "lt_bw",
        kind: ParamKind::Bool,
        default: "true",
        doc: "long-term (token-bucket policer) bandwidth model \
              (tcp_bbr.c bbr_lt_bw_sampling)",
    },
    ParamSpec {
        name: "pacing_margin",
        kind: ParamKind::Number,
        default: "0.01",
        doc: "pace this fraction below pacing_gain x BtlBw; 0 to 0.5 \
              (tcp_bbr.c bbr_pacing_margin_percent)",
    },
];

/// Registry entry for `bbr`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "bbr",
    summary: "BBR v1 in bytes, with Linux's pacing margin, recovery and policer model \
              (BBR paper, draft-cardwell-iccrg-bbr-congestion-control-00, tcp_bbr.c)",
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
    Ok(Box::new(Bbr::new(config, BbrParams::read(reader)?)))
}

/// Settings of one BBR instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BbrParams {
    /// Startup pacing and cwnd gain; Drain paces at its inverse.
    pub high_gain: f64,
    /// ProbeBW cwnd gain.
    pub cwnd_gain: f64,
    /// RTprop filter window (ProbeRTT after the estimate is this old).
    pub probe_rtt_interval: Duration,
    /// Time ProbeRTT holds the minimum inflight.
    pub probe_rtt_duration: Duration,
    /// BtlBw max-filter window in rounds.
    pub bw_window_rounds: u64,
    /// Whether the long-term (policer) bandwidth model is on.
    pub lt_bw: bool,
    /// Fraction the pacing rate stays below gain x bandwidth.
    pub pacing_margin: f64,
}

impl Default for BbrParams {
    fn default() -> Self {
        BbrParams {
            high_gain: DEFAULT_HIGH_GAIN,
            cwnd_gain: CWND_GAIN,
            probe_rtt_interval: MIN_RTT_WINDOW,
            probe_rtt_duration: PROBE_RTT_DURATION,
            bw_window_rounds: DEFAULT_BW_WINDOW_ROUNDS,
            lt_bw: true,
            pacing_margin: PACING_MARGIN,
        }
    }
}

impl BbrParams {
    /// Reads and range-checks the parameters; absent ones take the defaults.
    pub fn read(reader: &ParamReader) -> Result<Self, ParamError> {
        let probe_rtt_interval = reader.duration_in(
            "probe_rtt_interval",
            MIN_RTT_WINDOW,
            Duration::from_millis(1),
            Duration::from_secs(3600),
        )?;
        let probe_rtt_duration = reader.duration("probe_rtt_duration", Some(PROBE_RTT_DURATION));
        let probe_rtt_duration = probe_rtt_duration.unwrap_or(PROBE_RTT_DURATION);
        if probe_rtt_duration >= probe_rtt_interval {
            return Err(ParamError {
                name: "probe_rtt_duration".to_string(),
                message: format!(
                    "{probe_rtt_duration:?} is out of range; accepted: 0s up to (not including) \
                     probe_rtt_interval ({probe_rtt_interval:?})"
                ),
            });
        }
        Ok(BbrParams {
            high_gain: reader.number_in("high_gain", DEFAULT_HIGH_GAIN, 1.25, 10.0)?,
            cwnd_gain: reader.number_in("cwnd_gain", CWND_GAIN, 1.0, 10.0)?,
            probe_rtt_interval,
            probe_rtt_duration,
            bw_window_rounds: reader.whole_number_in(
                "bw_window_rounds",
                DEFAULT_BW_WINDOW_ROUNDS,
                1,
                1000,
            )?,
            lt_bw: reader.boolean("lt_bw", true),
            pacing_margin: reader.number_in("pacing_margin", PACING_MARGIN, 0.0, 0.5)?,
        })
    }
}

/// Long-term (policer) bandwidth sampling (tcp_bbr.c `lt_*` fields, `bbr_lt_bw_sampling`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct LongTermBw {
    /// Whether an interval is being sampled.
    is_sampling: bool,
    /// Rounds in the current interval, or rounds the policed rate has been used.
    rounds: u64,
    /// Whether the policed rate is the model's bandwidth.
    use_bw: bool,
    /// The rate of the previous interval, or the policed rate.
    bw: Option<Rate>,
    /// Bytes delivered when the interval started.
    last_delivered: u64,
    /// Bytes lost when the interval started.
    last_lost: u64,
    /// Time of the last delivery when the interval started.
    last_stamp: Instant,
}

/// A BBR v1 controller: the model, running one [`Variant`].
#[derive(Clone, Debug)]
pub struct Bbr {
    params: BbrParams,
    variant: Variant,
    mss: u64,
    initial_cwnd: u64,
    rng: ChaCha8Rng,
    mode: Mode,
    cwnd: u64,
    pacing_rate: Rate,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// BtlBw: windowed max of delivery rates, time = round count.
    btl_bw: WindowedMax<Rate>,
    /// RTprop: min RTT, a single value with the time it was taken.
    min_rtt: Option<Duration>,
    min_rtt_stamp: Option<Instant>,
    has_seen_rtt: bool,
    round_count: u64,
    next_round_delivered: u64,
    round_start: bool,
    full_bw: Rate,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_index: usize,
    cycle_stamp: Instant,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    /// Range of `P.delivered` whose packets were sent while ProbeRTT marked the connection
    /// application-limited.
    probe_rtt_limited: Option<(u64, u64)>,
    idle_restart: bool,
    loss_state: CaState,
    prev_loss_state: CaState,
    recovery_start: Option<Instant>,
    prior_cwnd: u64,
    packet_conservation: bool,
    /// C.delivered as of the last ACK.
    delivered: u64,
    /// Time of the last ACK (Linux `delivered_mstamp`).
    delivered_time: Instant,
    /// Bytes declared lost so far.
    lost: u64,
    /// Bytes declared lost since the last ACK (Linux `rs->losses`).
    losses_since_ack: u64,
    lt: LongTermBw,
    /// [`SendQuantum::TsoSegsGoal`]: packets per send quantum (ccid5.c `tso_segs_goal`).
    tso_segs_goal: u64,
    /// [`CwndRestore::Flagged`]: the restores pending.
    pub(crate) restoring: Restoring,
}

/// Restores a [`CwndRestore::Flagged`] variant has decided on and not yet applied (ccid5.c
/// `restore_cwnd`; mp-dccp HEAD's `restore_ackrt` and `restore_seqwin`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Restoring {
    /// Snap cwnd up to `prior_cwnd` at the next cwnd update.
    pub(crate) cwnd: bool,
    /// mp-dccp HEAD: the Ack Ratio is being put back to its value before ProbeRTT (kept by
    /// the `ccid5` controller, which owns the Ack Ratio).
    pub(crate) ack_ratio: bool,
    /// mp-dccp HEAD: the Sequence Window is being put back; cwnd waits for it.
    pub(crate) seq_window: bool,
}

impl Restoring {
    fn any(self) -> bool {
        self.cwnd || self.ack_ratio || self.seq_window
    }
}

impl Bbr {
    /// A controller in Startup with the transport's initial window, running as `tcp_bbr.c`.
    pub fn new(config: &ControllerConfig, params: BbrParams) -> Self {
        Bbr::with_variant(config, params, Variant::LINUX)
    }

    /// A controller in Startup with the transport's initial window, running `variant`.
    pub(crate) fn with_variant(
        config: &ControllerConfig,
        params: BbrParams,
        variant: Variant,
    ) -> Self {
        let mut bbr = Bbr {
            params,
            variant,
            mss: config.max_datagram_size,
            initial_cwnd: config.initial_window(),
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            mode: Mode::Startup,
            cwnd: config.initial_window(),
            pacing_rate: Rate::ZERO,
            pacing_gain: params.high_gain,
            cwnd_gain: params.high_gain,
            btl_bw: WindowedMax::new(params.bw_window_rounds),
            min_rtt: None,
            min_rtt_stamp: None,
            has_seen_rtt: false,
            round_count: 0,
            next_round_delivered: 0,
            round_start: false,
            full_bw: Rate::ZERO,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_index: 0,
            cycle_stamp: Instant::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            probe_rtt_limited: None,
            idle_restart: false,
            loss_state: CaState::Open,
            prev_loss_state: CaState::Open,
            recovery_start: None,
            prior_cwnd: 0,
            packet_conservation: false,
            delivered: 0,
            delivered_time: Instant::ZERO,
            lost: 0,
            losses_since_ack: 0,
            lt: LongTermBw::default(),
            // ccid5.c:1398: "default segs per skb until first ACK".
            tso_segs_goal: 0,
            restoring: Restoring::default(),
        };
        // tcp_bbr.c bbr_init: pace from the initial cwnd over a nominal 1 ms RTT.
        bbr.init_pacing_rate(None);
        bbr
    }

    /// The state machine's mode.
    pub(crate) fn mode(&self) -> Mode {
        self.mode
    }

    /// Packets per send quantum ([`SendQuantum::TsoSegsGoal`]); 1 otherwise.
    pub(crate) fn send_quantum_packets(&self) -> u64 {
        match self.variant.send_quantum {
            SendQuantum::OnePacket => SEND_QUANTUM_PACKETS,
            SendQuantum::TsoSegsGoal => self.tso_segs_goal,
        }
    }

    /// The BtlBw estimate (max filter), zero before the first sample.
    fn max_bw(&self) -> Rate {
        self.btl_bw.get().unwrap_or(Rate::ZERO)
    }

    /// The model's bandwidth: the policed rate when in use, else BtlBw (tcp_bbr.c `bbr_bw`).
    fn bw(&self) -> Rate {
        match (self.lt.use_bw, self.lt.bw) {
            (true, Some(bw)) => bw,
            _ => self.max_bw(),
        }
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_CWND_PACKETS * self.mss
    }

    /// The RTprop estimate the BDP and the cycle phases use: [`MinRttRule`].
    fn rt_prop(&self) -> Option<Duration> {
        match self.variant.min_rtt {
            MinRttRule::Linux => self.min_rtt,
            // ccid5.c:1395: min_rtt_us = 0 until the first sample.
            MinRttRule::Ccid5 => Some(self.min_rtt.unwrap_or(Duration::ZERO)),
        }
    }

    /// `gain x BDP` in bytes, rounded up (tcp_bbr.c `bbr_bdp`; BBR paper: BDP = BtlBw x RTprop).
    fn bdp(&self, bw: Rate, gain: f64) -> u64 {
        match self.rt_prop() {
            // tcp_bbr.c bbr_bdp: no RTT sample yet, use the initial window.
            None => self.initial_cwnd,
            // tcp_bbr.c bbr_bdp: round up, "to avoid a negative feedback loop".
            Some(rtt) => match self.variant.counting {
                Counting::Bytes => (bw.bytes_in(rtt) * gain).ceil() as u64,
                // ccid5.c:606: rounded up to a whole packet.
                Counting::Packets => {
                    (bw.bytes_in(rtt) / self.mss as f64 * gain).ceil() as u64 * self.mss
                }
            },
        }
    }

    /// Adds the send-quantum allowance: [`SendQuantum`].
    fn quantization_budget(&self, bytes: u64) -> u64 {
        match self.variant.send_quantum {
            // draft-00 BBRInflight: + 3 x send_quantum; tcp_bbr.c bbr_quantization_budget,
            // including + 2 packets in the 1.25 phase.
            SendQuantum::OnePacket => {
                let mut budget = bytes + QUANTA_IN_BUDGET * SEND_QUANTUM_PACKETS * self.mss;
                if self.mode == Mode::ProbeBw && self.cycle_index == 0 {
                    budget += PROBE_UP_EXTRA_PACKETS * self.mss;
                }
                budget
            }
            // ccid5.c bbr_target_cwnd: + 3 x tso_segs_goal, "rounding up cwnd to the next even
            // number" of packets.
            SendQuantum::TsoSegsGoal => {
                let packets = bytes.div_ceil(self.mss) + QUANTA_IN_BUDGET * self.tso_segs_goal;
                packets.next_multiple_of(2) * self.mss
            }
        }
    }

    /// ccid5.c `bbr_set_tso_segs_goal` and `dccp_tso_autosize`, from the pacing rate just set
    /// ([`SendQuantum::TsoSegsGoal`]).
    fn update_tso_segs_goal(&mut self) {
        if self.variant.send_quantum != SendQuantum::TsoSegsGoal {
            return;
        }
        let rate = self.pacing_rate.bytes_per_sec() as u64;
        let min_segs = if rate < MIN_TSO_RATE_BYTES_PER_SEC {
            1
        } else {
            2
        };
        let bytes = (rate >> 10).min(GSO_MAX_SIZE - 1 - MAX_DCCP_HEADER);
        self.tso_segs_goal = (bytes / self.mss).max(min_segs).min(MAX_TSO_SEGS);
    }

    /// The inflight a gain asks for (tcp_bbr.c `bbr_inflight`; draft-00 `BBRInflight`; ccid5.c
    /// `bbr_target_cwnd`).
    fn inflight(&self, bw: Rate, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `gain x bw x (1 - margin)` (tcp_bbr.c `bbr_rate_bytes_per_sec`).
    fn pacing_rate_for(&self, bw: Rate, gain: f64) -> Rate {
        pacing_rate(bw, gain, self.params.pacing_margin)
    }

    /// Initial pacing: high_gain x cwnd / (smoothed RTT, or 1 ms before any sample)
    /// (tcp_bbr.c `bbr_init_pacing_rate_from_rtt`; draft-00 `BBRInitPacingRate`; ccid5.c
    /// `bbr_init_pacingrate`).
    fn init_pacing_rate(&mut self, srtt: Option<Duration>) {
        self.has_seen_rtt |= srtt.is_some();
        let (gain, margin) = (self.params.high_gain, self.params.pacing_margin);
        self.pacing_rate = initial_pacing_rate(self.cwnd, srtt, gain, margin);
    }

    /// Starts the RTprop clock at the connection's first event (Linux stamps it at init).
    fn note_start(&mut self, now: Instant) {
        if self.min_rtt_stamp.is_none() {
            self.min_rtt_stamp = Some(now);
        }
    }

    /// tcp_bbr.c `bbr_update_model`, in its order.
    fn update_model(
        &mut self,
        now: Instant,
        ack: &AckEvent,
        sample: Option<&RateSample>,
        losses: u64,
    ) {
        self.update_bw(sample, losses);
        self.update_cycle_phase(ack.prior_in_flight, losses);
        self.check_full_bw_reached(sample);
        self.check_drain(ack.in_flight);
        self.update_min_rtt(now, ack, sample);
        if self.variant.gains == GainSetting::EveryAck {
            self.update_gains();
        }
    }

    /// Round counting, long-term sampling and the BtlBw filter (tcp_bbr.c `bbr_update_bw`).
    fn update_bw(&mut self, sample: Option<&RateSample>, losses: u64) {
        self.round_start = false;
        // tcp_bbr.c bbr_update_bw: an invalid sample is no observation at all.
        let Some(rs) = sample else { return };
        // tcp_bbr.c bbr_update_bw: a round ends when a packet sent after the previous round ended
        // is acknowledged.
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
        }
        self.lt_bw_sampling(losses, rs.is_app_limited);
        let Some(bw) = rs.delivery_rate() else { return };
        // tcp_bbr.c bbr_update_bw: app-limited samples only
        // raise the max. mp-dccp HEAD: so do samples while a restore is pending.
        let held = self.variant.restore_holds_samples && self.restoring.any();
        if (!rs.is_app_limited && !held) || bw >= self.max_bw() {
            // BBR paper: BtlBw = max(deliveryRate) over the last W_B rounds.
            self.btl_bw.update(self.round_count, bw);
        }
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
        self.round_count += 1;
        self.round_start = true;
        // tcp_bbr.c bbr_update_bw: packet conservation lasts one round.
        self.packet_conservation = false;
    }

    /// tcp_bbr.c `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, prior_in_flight: u64, losses: u64) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(prior_in_flight, losses) {
            self.advance_cycle_phase();
        }
    }

    /// tcp_bbr.c `bbr_is_next_cycle_phase`, called with the inflight before the ACK.
    fn is_next_cycle_phase(&self, prior_in_flight: u64, losses: u64) -> bool {
        let elapsed = self.delivered_time.saturating_since(self.cycle_stamp);
        let full_length = self.rt_prop().is_some_and(|rtt| elapsed > rtt);
        let gain = self.pacing_gain;
        if gain > 1.0 {
            // Probe up for a full min RTT, until inflight reaches gain x BDP or loss shows up.
            full_length && (losses > 0 || prior_in_flight >= self.inflight(self.max_bw(), gain))
        } else if gain < 1.0 {
            // Drain down for a min RTT, or less once inflight is down to the BDP.
            full_length || prior_in_flight <= self.inflight(self.max_bw(), 1.0)
        } else {
            full_length
        }
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_index = (self.cycle_index + 1) % PACING_GAIN_CYCLE.len();
        // tcp_bbr.c bbr_advance_cycle_phase: the phase starts at the last delivery time.
        self.cycle_stamp = self.delivered_time;
        // ccid5.c:752: the phase's gain, whether or not the policed rate is in use.
        let pacing = PACING_GAIN_CYCLE[self.cycle_index];
        self.transition_gains(pacing, self.cwnd_gain);
    }

    /// tcp_bbr.c `bbr_check_full_bw_reached` (BBR paper "Startup").
    fn check_full_bw_reached(&mut self, sample: Option<&RateSample>) {
        let app_limited = sample.is_none_or(|rs| rs.is_app_limited);
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let max_bw = self.max_bw();
        if max_bw >= self.full_bw.scaled(FULL_BW_THRESH) {
            self.full_bw = max_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= FULL_BW_CNT;
    }

    /// tcp_bbr.c `bbr_check_drain`: Startup -> Drain -> ProbeBW once inflight <= BDP.
    fn check_drain(&mut self, in_flight: u64) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            let (pacing, cwnd) = self.drain_gains();
            self.transition_gains(pacing, cwnd);
        }
        // Fall through: Drain may last zero ACKs.
        if self.mode == Mode::Drain && in_flight <= self.inflight(self.max_bw(), 1.0) {
            self.reset_probe_bw_mode();
        }
    }

    /// tcp_bbr.c `bbr_update_min_rtt` (ccid5.c `bbr_update_rt_prop`): the RTprop filter and
    /// ProbeRTT entry and exit.
    fn update_min_rtt(&mut self, now: Instant, ack: &AckEvent, sample: Option<&RateSample>) {
        let mut rtt_sample = ack.rtt_sample;
        if self.variant.min_rtt == MinRttRule::Ccid5 {
            // ccid5.c:982-983: "Not a valid observation" without a rate sample; 1001: rtt > 0.
            if sample.is_none() {
                return;
            }
            rtt_sample = rtt_sample.filter(|rtt| !rtt.is_zero());
        }
        let expired = self.min_rtt_expired(now);
        if let Some(rtt) = rtt_sample {
            // tcp_bbr.c bbr_update_min_rtt: keep a sample <= min RTT, or any sample once the
            // estimate is older than the window; equal samples refresh the stamp.
            if expired || self.min_rtt.is_none_or(|min| rtt <= min) {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = Some(now);
            }
        }
        if expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.enter_probe_rtt();
        }
        if self.mode == Mode::ProbeRtt {
            self.update_probe_rtt(now, ack.in_flight);
        }
        // tcp_bbr.c: restart-from-idle ends once an ACK delivers data.
        if ack.acked_bytes > 0 {
            self.idle_restart = false;
        }
    }

    fn min_rtt_expired(&self, now: Instant) -> bool {
        self.min_rtt_stamp
            .is_some_and(|stamp| now > stamp + self.params.probe_rtt_interval)
    }

    fn enter_probe_rtt(&mut self) {
        self.mode = Mode::ProbeRtt;
        self.transition_gains(1.0, 1.0);
        self.save_cwnd();
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_limited = Some((self.delivered, self.delivered));
    }

    /// ProbeRTT: hold inflight at 4 packets for max(200 ms, one round) (tcp_bbr.c
    /// `bbr_update_min_rtt`, `bbr_check_probe_rtt_done`).
    fn update_probe_rtt(&mut self, now: Instant, in_flight: u64) {
        self.mark_probe_rtt_app_limited(in_flight);
        match self.probe_rtt_done_stamp {
            None if in_flight <= self.min_pipe_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + self.params.probe_rtt_duration);
                self.probe_rtt_round_done = false;
                self.next_round_delivered = self.delivered;
            }
            None => {}
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
    }

    /// tcp_bbr.c marks the connection app-limited until `delivered + inflight` is delivered
    /// so ProbeRTT's low-rate samples are ignored. The controller cannot mark the transport's
    /// sampler, so it remembers the range of `P.delivered` the mark covers instead.
    fn mark_probe_rtt_app_limited(&mut self, in_flight: u64) {
        let end = (self.delivered + in_flight).max(1);
        let start = self.probe_rtt_limited.map_or(self.delivered, |(s, _)| s);
        self.probe_rtt_limited = Some((start, end));
    }

    /// A rate sample with ProbeRTT's app-limited mark applied.
    fn with_probe_rtt_mark(&self, rs: &RateSample) -> RateSample {
        let marked = self
            .probe_rtt_limited
            .is_some_and(|(start, end)| (start..=end).contains(&rs.prior_delivered));
        RateSample {
            is_app_limited: rs.is_app_limited || marked,
            ..*rs
        }
    }

    /// tcp_bbr.c `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_none_or(|done| now <= done) {
            return;
        }
        // Wait a full window before the next ProbeRTT.
        self.min_rtt_stamp = Some(now);
        match self.variant.cwnd_restore {
            CwndRestore::AtOnce => self.cwnd = self.cwnd.max(self.prior_cwnd),
            // ccid5.c:1036 "snap to prior_cwnd" at the next cwnd update; mp-dccp HEAD also
            // restores the Ack Ratio and the Sequence Window, cwnd after the latter.
            CwndRestore::Flagged => {
                self.restoring.cwnd = true;
                if self.variant.restore_holds_samples {
                    self.restoring.ack_ratio = true;
                    self.restoring.seq_window = true;
                }
            }
        }
        self.reset_mode();
    }

    /// tcp_bbr.c `bbr_reset_mode`: back to ProbeBW, or to Startup if the pipe was never full.
    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = Mode::Startup;
            let high = self.params.high_gain;
            self.transition_gains(high, high);
        }
    }

    /// tcp_bbr.c `bbr_reset_probe_bw_mode`: a random start phase, never the 0.75 one.
    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        self.transition_gains(1.0, self.params.cwnd_gain);
        let offset = self.rng.gen_range(0..CYCLE_RAND) as usize;
        self.cycle_index = PACING_GAIN_CYCLE.len() - 1 - offset;
        self.advance_cycle_phase();
    }

    /// Sets the gains of a mode or phase change where [`GainSetting::AtTransitions`]; with
    /// [`GainSetting::EveryAck`], [`Bbr::update_gains`] sets them instead.
    fn transition_gains(&mut self, pacing: f64, cwnd: f64) {
        if self.variant.gains == GainSetting::AtTransitions {
            (self.pacing_gain, self.cwnd_gain) = (pacing, cwnd);
        }
    }

    /// Drain's pacing and cwnd gains: [`DrainGains`].
    fn drain_gains(&self) -> (f64, f64) {
        let high = self.params.high_gain;
        match self.variant.drain_gains {
            // BBR paper "Drain": the inverse of Startup's gain; cwnd keeps Startup's gain.
            DrainGains::InverseOfHighGain => (1.0 / high, high),
            DrainGains::FixedPoint { cwnd_gain_one } => (
                FIXED_POINT_DRAIN_GAIN,
                if cwnd_gain_one { 1.0 } else { high },
            ),
        }
    }

    /// tcp_bbr.c `bbr_update_gains` (BBR paper: gains per state).
    fn update_gains(&mut self) {
        let high = self.params.high_gain;
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (high, high),
            Mode::Drain => self.drain_gains(),
            Mode::ProbeBw => {
                // tcp_bbr.c bbr_update_gains: pacing gain 1 while the policed rate is used.
                let pacing = if self.lt.use_bw {
                    1.0
                } else {
                    PACING_GAIN_CYCLE[self.cycle_index]
                };
                (pacing, self.params.cwnd_gain)
            }
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    /// tcp_bbr.c `bbr_set_pacing_rate`: never lowered before the pipe is full.
    fn set_pacing_rate(&mut self, bw: Rate, gain: f64, srtt: Option<Duration>) {
        if !self.has_seen_rtt && self.variant.pacing_init == PacingInit::AgainAtFirstSrtt {
            if let Some(srtt) = srtt {
                self.init_pacing_rate(Some(srtt));
            }
        }
        let rate = self.pacing_rate_for(bw, gain);
        // Never slow down before the pipe is full.
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// tcp_bbr.c `bbr_set_cwnd` (draft-00 `BBRSetCwnd`; ccid5.c `bbr_set_cwnd`).
    fn set_cwnd(&mut self, ack: &AckEvent, losses: u64, bw: Rate) {
        let acked = self.acked(ack);
        if acked > 0 {
            let (cwnd, conserving) = self.recover_or_restore(ack, losses);
            self.cwnd = if conserving {
                cwnd
            } else {
                self.grow_cwnd(cwnd, acked, bw)
            };
            // mp-dccp HEAD bbr_set_cwnd: the Sequence Window is put back on this ACK.
            self.restoring.seq_window = false;
        }
        // ProbeRTT caps cwnd at 4 packets (BBR paper "ProbeRTT").
        if self.mode == Mode::ProbeRtt {
            self.cwnd = self.cwnd.min(self.min_pipe_cwnd());
        }
    }

    /// Grows cwnd toward `cwnd_gain x BDP + quanta` by the acknowledged bytes.
    fn grow_cwnd(&self, cwnd: u64, acked: u64, bw: Rate) -> u64 {
        // draft-00 BBRSetCwnd: target = BBRInflight(cwnd_gain).
        let target = self.inflight(bw, self.cwnd_gain);
        let cwnd = if self.full_bw_reached {
            // Grow by acked, snap down to the target.
            (cwnd + acked).min(target)
        } else if cwnd < target || self.delivered < self.initial_cwnd {
            // Startup: never decrease, grow like slow start.
            cwnd + acked
        } else {
            cwnd
        };
        cwnd.max(self.min_pipe_cwnd())
    }

    /// tcp_bbr.c `bbr_set_cwnd_to_recover_or_restore`: returns the cwnd and whether packet
    /// conservation decides it.
    fn recover_or_restore(&mut self, ack: &AckEvent, losses: u64) -> (u64, bool) {
        let mut cwnd = self.cwnd;
        // draft-00 BBRModulateCwndForRecovery: cwnd = max(cwnd - losses, 1 packet).
        if losses > 0 {
            cwnd = cwnd.saturating_sub(losses).max(self.mss);
        }
        let (state, prev) = (self.loss_state, self.prev_loss_state);
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First ACK in recovery: packet conservation for one round, starting now, and
            // cwnd cut to what is in flight.
            self.packet_conservation = true;
            self.next_round_delivered = self.delivered;
            cwnd = ack.in_flight + ack.acked_bytes;
        } else if prev != CaState::Open && state == CaState::Open {
            // Leaving recovery: restore the cwnd saved when it began.
            match self.variant.cwnd_restore {
                CwndRestore::AtOnce => cwnd = cwnd.max(self.prior_cwnd),
                CwndRestore::Flagged => self.restoring.cwnd = true,
            }
            self.packet_conservation = false;
        }
        self.prev_loss_state = state;
        // ccid5.c:648-652 (mp-dccp HEAD: once the Sequence Window is back): "Restore cwnd
        // after exiting loss recovery or PROBE_RTT".
        if self.restoring.cwnd && !self.restoring.seq_window {
            cwnd = cwnd.max(self.prior_cwnd);
            self.restoring.cwnd = false;
        }
        if self.packet_conservation {
            // Send one packet per packet acknowledged.
            (cwnd.max(ack.in_flight + ack.acked_bytes), true)
        } else {
            (cwnd, false)
        }
    }

    /// tcp_bbr.c `bbr_save_cwnd`.
    fn save_cwnd(&mut self) {
        if self.prev_loss_state == CaState::Open && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = self.cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
        }
    }

    /// Leaves Recovery or Loss at the first ACK of a packet sent after it began (QUIC
    /// recovery period, RFC 9002 §7.3.2).
    fn update_loss_state(&mut self, largest_acked_sent_time: Instant) {
        let ended = self
            .recovery_start
            .is_some_and(|start| largest_acked_sent_time > start);
        if self.loss_state != CaState::Open && ended {
            self.loss_state = CaState::Open;
        }
    }

    /// A loss of packets sent after the last recovery began starts a recovery episode
    /// (tcp_bbr.c `bbr_ssthresh` saves cwnd). A loss reported during an episode extends it,
    /// so it ends only after a round without loss reports (Chromium/quinn/quic-go BBR
    /// `UpdateRecoveryState`: "exit recovery when there are no losses for a round").
    fn on_loss(&mut self, now: Instant, largest_sent_time: Instant) {
        if self.loss_state == CaState::Open {
            if self
                .recovery_start
                .is_some_and(|start| largest_sent_time <= start)
            {
                return;
            }
            self.save_cwnd();
            self.loss_state = CaState::Recovery;
        }
        self.recovery_start = Some(now);
    }

    /// Persistent congestion as Linux's RTO: `tcp_enter_loss` (save cwnd, cwnd = inflight +
    /// 1 packet) and tcp_bbr.c `bbr_set_state(TCP_CA_Loss)`.
    fn on_persistent_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        self.save_cwnd();
        self.cwnd = event.in_flight + self.mss;
        self.loss_state = CaState::Loss;
        self.prev_loss_state = CaState::Loss;
        self.recovery_start = Some(now);
        self.packet_conservation = false;
        // Full-pipe counting restarts; full_bw_reached and the mode stay.
        self.full_bw = Rate::ZERO;
        // Treat the RTO as the end of a round and feed a fake lossy sample to lt sampling.
        self.round_start = true;
        self.lt_bw_sampling(1, false);
    }

    /// A retransmission timeout as CCID5 takes it ([`RtoResponse::Ccid5`]):
    /// `ccid5_hc_tx_rto_expire` and `bbr_set_state(DCCP_CA_Loss)`.
    fn on_ccid5_rto(&mut self, event: &CongestionEvent) {
        // ccid5.c:1085-1086: lost += pipe; cwnd = 1.
        self.lost += event.prior_in_flight;
        self.cwnd = self.mss;
        // ccid5.c:1049-1051: only the previous state becomes Loss (the current one stays
        // Open), full-pipe counting restarts, "treat RTO like end of a round"; 1052: the
        // long-term model gets no sample. cwnd is not saved.
        self.prev_loss_state = CaState::Loss;
        self.full_bw = Rate::ZERO;
        self.round_start = true;
    }

    /// What an ACK or a loss report counts, in bytes: [`Counting`].
    fn counted(&self, bytes: u64, packets: u64) -> u64 {
        match self.variant.counting {
            Counting::Bytes => bytes,
            Counting::Packets => packets * self.mss,
        }
    }

    /// What this ACK newly acknowledged (Linux `rs->acked_sacked`).
    fn acked(&self, ack: &AckEvent) -> u64 {
        self.counted(ack.acked_bytes, ack.acked_packets)
    }

    /// Losses reported since the last ACK count toward its `rs->losses`.
    fn note_lost(&mut self, event: &CongestionEvent) {
        let lost = self.counted(event.lost_bytes, event.lost_packets);
        self.lost += lost;
        self.losses_since_ack += lost;
    }

    /// tcp_bbr.c `bbr_lt_bw_sampling`: detects a token-bucket policer
    /// from intervals of 4-16 rounds with >= 50/256 loss and a consistent delivery rate.
    fn lt_bw_sampling(&mut self, losses: u64, app_limited: bool) {
        if !self.params.lt_bw {
            return;
        }
        if self.lt.use_bw {
            self.lt_count_policed_round();
            return;
        }
        // Wait for the first loss: the token bucket is then empty.
        if !self.lt.is_sampling {
            if losses == 0 {
                return;
            }
            self.lt_reset_interval();
            self.lt.is_sampling = true;
        }
        // An app-limited sample would underestimate the policed rate.
        if app_limited {
            self.lt_reset();
            return;
        }
        if self.round_start {
            self.lt.rounds += 1;
        }
        if self.lt.rounds < LT_INTERVAL_MIN_ROUNDS {
            return;
        }
        if self.lt.rounds > LT_INTERVAL_MAX_ROUNDS {
            self.lt_reset();
            return;
        }
        // End the interval only on a loss, when the tokens are surely exhausted.
        if losses == 0 {
            return;
        }
        if let Some(bw) = self.lt_interval_bw() {
            self.lt_interval_done(bw);
        }
    }

    /// The interval's delivery rate if its loss ratio is at least 50/256 and it lasted at
    /// least 1 ms.
    fn lt_interval_bw(&self) -> Option<Rate> {
        let lost = self.lost.saturating_sub(self.lt.last_lost);
        let delivered = self.delivered.saturating_sub(self.lt.last_delivered);
        // tcp_bbr.c: lost / delivered >= bbr_lt_loss_thresh / 256.
        if delivered == 0 || u128::from(lost) * 256 < LT_LOSS_THRESH_256 * u128::from(delivered) {
            return None;
        }
        let interval = self.delivered_time.saturating_since(self.lt.last_stamp);
        (interval >= LT_MIN_INTERVAL).then(|| Rate::from_bytes_over(delivered, interval))
    }

    /// tcp_bbr.c `bbr_lt_bw_interval_done`: two consistent intervals mean a policer.
    fn lt_interval_done(&mut self, bw: Rate) {
        if let Some(prev) = self.lt.bw {
            let diff = (bw.bytes_per_sec() - prev.bytes_per_sec()).abs();
            if diff <= prev.bytes_per_sec() * LT_BW_RATIO || diff * 8.0 <= LT_BW_DIFF_BPS {
                // Policed: use the average of the two intervals, pace at gain 1.
                let average = (bw.bytes_per_sec() + prev.bytes_per_sec()) / 2.0;
                self.lt.bw = Some(Rate::from_bytes_per_sec(average));
                self.lt.use_bw = true;
                self.pacing_gain = 1.0;
                self.lt.rounds = 0;
                return;
            }
        }
        self.lt.bw = Some(bw);
        self.lt_reset_interval();
    }

    /// While policed, count ProbeBW rounds; after 48, forget the policer and re-probe.
    fn lt_count_policed_round(&mut self) {
        if self.mode != Mode::ProbeBw || !self.round_start {
            return;
        }
        self.lt.rounds += 1;
        if self.lt.rounds >= LT_BW_MAX_ROUNDS {
            self.lt_reset();
            self.reset_probe_bw_mode();
        }
    }

    /// tcp_bbr.c `bbr_reset_lt_bw_sampling_interval`.
    fn lt_reset_interval(&mut self) {
        self.lt.last_stamp = self.delivered_time;
        self.lt.last_delivered = self.delivered;
        self.lt.last_lost = self.lost;
        self.lt.rounds = 0;
    }

    /// tcp_bbr.c `bbr_reset_lt_bw_sampling`.
    fn lt_reset(&mut self) {
        self.lt.bw = None;
        self.lt.use_bw = false;
        self.lt.is_sampling = false;
        self.lt_reset_interval();
    }

    /// tcp_bbr.c `bbr_cwnd_event(CA_EVENT_TX_START)` while app-limited: restart from idle.
    fn on_restart_from_idle(&mut self, now: Instant) {
        self.idle_restart = true;
        match self.mode {
            // Pace at the estimated bandwidth rather than bursting at 1.25.
            Mode::ProbeBw => self.set_pacing_rate(self.bw(), 1.0, None),
            Mode::ProbeRtt => self.check_probe_rtt_done(now),
            Mode::Startup | Mode::Drain => {}
        }
    }
}

impl Controller for Bbr {
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        self.note_start(now);
        // Nothing was in flight before this packet and the sender was app-limited.
        let restart = packet.in_flight <= packet.bytes && packet.snapshot.is_app_limited;
        if restart && self.variant.idle_restart == IdleRestart::Recognised {
            self.on_restart_from_idle(now);
        }
    }

    /// tcp_bbr.c `bbr_main`: model, then pacing rate, then cwnd.
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        self.note_start(now);
        self.delivered = ack.delivered;
        self.delivered_time = now;
        let losses = std::mem::take(&mut self.losses_since_ack);
        self.update_loss_state(ack.largest_acked_sent_time);
        let sample = ack.rate.map(|rs| self.with_probe_rtt_mark(&rs));
        self.update_model(now, ack, sample.as_ref(), losses);
        let bw = self.bw();
        self.set_pacing_rate(bw, self.pacing_gain, ack.smoothed_rtt);
        self.update_tso_segs_goal();
        let target_bw = match self.variant.cwnd_target_bw {
            CwndTargetBw::ModelBw => bw,
            CwndTargetBw::MaxBw => self.max_bw(),
        };
        self.set_cwnd(ack, losses, target_bw);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        self.note_start(now);
        match event.kind {
            CongestionKind::Loss => {
                self.note_lost(event);
                if self.variant.loss_response == LossResponse::PacketConservation {
                    self.on_loss(now, event.largest_sent_time);
                }
            }
            CongestionKind::PersistentCongestion => match self.variant.rto {
                RtoResponse::LinuxLoss => {
                    self.lost += event.lost_bytes;
                    self.on_persistent_congestion(now, event);
                }
                RtoResponse::Ccid5 => self.on_ccid5_rto(event),
            },
            CongestionKind::EcnCe => match self.variant.ecn {
                // BBR v1 does not react to ECN (tcp_bbr.c has no ECN logic).
                EcnResponse::Ignored => {}
                EcnResponse::CountedLost => self.note_lost(event),
            },
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate(&self) -> Option<Rate> {
        Some(self.pacing_rate)
    }

    fn in_slow_start(&self) -> bool {
        self.mode == Mode::Startup
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            mode: self.mode.name(),
            values: vec![
                ("btl_bw_bps", self.max_bw().bits_per_sec()),
                (
                    "rt_prop_ms",
                    self.min_rtt.map_or(0.0, |r| r.as_secs_f64() * 1e3),
                ),
                ("pacing_gain", self.pacing_gain),
                ("cwnd_gain", self.cwnd_gain),
                ("round_count", self.round_count as f64),
                ("full_bw_reached", flag(self.full_bw_reached)),
                ("lt_use_bw", flag(self.lt.use_bw)),
                ("lt_bw_bps", self.lt.bw.map_or(0.0, |b| b.bits_per_sec())),
                ("cycle_index", self.cycle_index as f64),
            ],
        }
    }
}

/// A boolean as a traced value, 0 or 1.
fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::test_path::*;
    use super::*;
    use crate::controller::{DeliverySnapshot, ParamValue, Params};

    impl Driver<Bbr> {
        fn with_seed(path: Path, seed: u64) -> Self {
            Driver::new(path, bbr(seed))
        }
    }

    /// The BDP plus three packets, as the controller computes `inflight(bw, 1)` outside the
    /// 1.25 phase.
    fn bdp_plus_quanta(bw: Rate, rtt: Duration) -> u64 {
        (bw.bytes_in(rtt)).ceil() as u64 + 3 * MSS
    }

    #[test]
    fn startup_doubles_delivery_per_round_then_exits_after_three_flat_rounds() {
        // BDP / IW = 83.3, 3.3 and 66.7 initial windows.
        check_startup(mbps(100.0), ms(100));
        check_startup(mbps(10.0), ms(40));
        check_startup(mbps(40.0), ms(200));
    }

    fn check_startup(rate: Rate, rtt: Duration) {
        let mut d = Driver::with_seed(Path::new(rate, rtt), 1);
        d.run_until(rtt * 30);
        let starts: Vec<Row> = d.rows.iter().filter(|r| r.round_start).copied().collect();
        let exit = d
            .rows
            .iter()
            .find(|r| r.mode != Mode::Startup)
            .expect("Startup ends");

        // BBR paper "Startup": a gain of 2/ln2 doubles the sending rate each round while the
        // delivery rate grows. Check BtlBw round over round, from round 2 (round 1 measures
        // one packet over the first RTT) until BtlBw reaches half the link rate; tolerance
        // 2x +-25 % for the round boundary falling inside a flight.
        let growing: Vec<&Row> = starts
            .iter()
            .filter(|r| r.round >= 2 && r.btl_bw < rate.scaled(0.5))
            .collect();
        for w in growing.windows(2) {
            let ratio = w[1].btl_bw.bytes_per_sec() / w[0].btl_bw.bytes_per_sec();
            assert!(
                (1.5..=2.5).contains(&ratio),
                "{rate} {rtt:?}: round {} -> {}: x{ratio:.2}",
                w[0].round,
                w[1].round
            );
        }

        // tcp_bbr.c bbr_check_full_bw_reached: full pipe after 3 consecutive non-app-limited
        // round starts with BtlBw < 1.25 x the last full_bw. Replay the rule on the trace;
        // Startup must end on exactly that round.
        let mut full_bw = 0.0;
        let mut flat = 0;
        let mut expected_exit_round = None;
        let mut last_growth_round = 0;
        for r in &starts {
            let bw = r.btl_bw.bytes_per_sec();
            if bw >= full_bw * 1.25 {
                full_bw = bw;
                flat = 0;
                last_growth_round = r.round;
            } else {
                flat += 1;
                if flat == 3 {
                    expected_exit_round = Some(r.round);
                    break;
                }
            }
        }
        assert_eq!(Some(exit.round), expected_exit_round, "{rate} {rtt:?}");
        assert!(exit.full_bw_reached);

        // BBR paper: Startup finds BtlBw in log2(BDP) rounds, counted here from the initial
        // window: log2(BDP / IW). In tcp_bbr.c's round count, round 1 starts at the first ACK
        // and a round's first sample measures the previous round's flight, so the last round
        // with 25 % growth is round log2(BDP / IW) + 2 (+-1: where the doubling lands against
        // the BDP), and Startup ends exactly 3 rounds later.
        let bdp = rate.bytes_in(rtt);
        let predicted = (bdp / (10 * MSS) as f64).log2() + 2.0;
        assert!(
            (last_growth_round as f64 - predicted).abs() <= 1.0,
            "{rate} {rtt:?}: BtlBw found at round {last_growth_round}, predicted {predicted:.1}"
        );
        assert_eq!(exit.round, last_growth_round + 3, "{rate} {rtt:?}");
        // The estimate it leaves with is the link rate (the max filter never overestimates a
        // FIFO bottleneck; 2 % for the sampling of the last flight).
        assert!(close(
            exit.btl_bw.bytes_per_sec(),
            rate.bytes_per_sec(),
            0.02
        ));
    }

    #[test]
    fn drain_ends_when_inflight_is_down_to_the_bdp() {
        let rate = mbps(100.0);
        let rtt = ms(100);
        let mut d = Driver::with_seed(Path::new(rate, rtt), 2);
        d.run_until(Duration::from_secs(3));
        let rows = &d.rows;
        let drain_start = rows
            .iter()
            .position(|r| r.mode == Mode::Drain)
            .expect("Drain entered");
        let drain_end = rows
            .iter()
            .position(|r| r.mode == Mode::ProbeBw)
            .expect("ProbeBW entered");
        assert!(
            drain_end > drain_start,
            "Startup overshoot must need draining"
        );
        // BBR paper "Drain": pacing gain is the inverse of Startup's; cwnd gain stays.
        for r in &rows[drain_start..drain_end] {
            assert!(close(r.pacing_gain, 1.0 / DEFAULT_HIGH_GAIN, 1e-12));
            // tcp_bbr.c bbr_check_drain: still above inflight(bw, 1) = BDP + 3 packets.
            let bound = bdp_plus_quanta(r.btl_bw, r.min_rtt.expect("RTT known"));
            assert!(r.in_flight > bound, "{} <= {bound}", r.in_flight);
        }
        let first = rows[drain_end];
        let bound = bdp_plus_quanta(first.btl_bw, first.min_rtt.expect("RTT known"));
        // ProbeBW starts on the first ACK with inflight <= BDP (+ quanta).
        assert!(first.in_flight <= bound, "{} > {bound}", first.in_flight);
        // The queue is gone: inflight is within a few packets of the true BDP.
        let true_bdp = rate.bytes_in(rtt);
        assert!((first.in_flight as f64) <= true_bdp + 4.0 * MSS as f64);
    }

    #[test]
    fn probe_bw_cycles_through_eight_phases_once_per_min_rtt() {
        // 10 Mbps, 40 ms: one ACK every 1.2 ms.
        let rtt = ms(40);
        let mut d = Driver::with_seed(Path::new(mbps(10.0), rtt), 3);
        d.run_until(Duration::from_secs(6));
        let rows: Vec<&Row> = d.rows.iter().filter(|r| r.mode == Mode::ProbeBw).collect();
        // tcp_bbr.c bbr_reset_probe_bw_mode: the first phase is never the 0.75 one.
        assert_ne!(rows[0].cycle_index, 1);
        // Phase changes: (time, new index).
        let mut changes = vec![(rows[0].t, rows[0].cycle_index)];
        for w in rows.windows(2) {
            if w[1].cycle_index != w[0].cycle_index {
                assert_eq!(
                    w[1].cycle_index,
                    (w[0].cycle_index + 1) % 8,
                    "one step at a time"
                );
                changes.push((w[1].t, w[1].cycle_index));
            }
        }
        let min_rtt = rows[rows.len() - 1]
            .min_rtt
            .expect("RTT known")
            .as_secs_f64();
        let mut full_cycles = 0;
        for w in changes.windows(2) {
            let length = (w[1].0 - w[0].0) as f64 * 1e-9;
            match w[0].1 {
                // tcp_bbr.c bbr_is_next_cycle_phase: gain 1 phases last one min RTT (the
                // check runs per ACK: up to one ACK spacing, 1.2 ms, more).
                2..=7 => assert!(
                    length > min_rtt && length <= min_rtt + 0.0015,
                    "phase {} lasted {length}",
                    w[0].1
                ),
                // 1.25: at least one min RTT (and inflight >= 1.25 BDP).
                0 => assert!(length > min_rtt, "probe phase lasted {length}"),
                // 0.75: at most one min RTT (earlier once inflight <= BDP).
                _ => assert!(length <= min_rtt + 0.0015, "drain phase lasted {length}"),
            }
            if w[1].1 == 0 {
                full_cycles += 1;
            }
        }
        // BBR paper: eight phases of about one RTprop each; 6 s of ProbeBW at 40 ms is at least
        // 15 cycles of at most 8 x (40 ms + 1.2 ms) + probe extension.
        assert!(full_cycles >= 15, "{full_cycles} cycles");
        // In ProbeBW the gain is the cycle's and cwnd_gain is 2 (draft-00, tcp_bbr.c).
        for r in &rows {
            assert_eq!(r.pacing_gain, PACING_GAIN_CYCLE[r.cycle_index]);
        }
    }

    #[test]
    fn probe_bw_start_phase_is_random_and_never_the_drain_phase() {
        // tcp_bbr.c bbr_reset_probe_bw_mode: cycle_idx = 7 - rand[0, 7), then advanced: the
        // start phase is one of {2, ..., 7, 0}, uniformly; never 1 (gain 0.75).
        let mut seen = [0u32; 8];
        for seed in 0..200 {
            let mut c = bbr(seed);
            c.reset_probe_bw_mode();
            assert_eq!(c.mode, Mode::ProbeBw);
            seen[c.cycle_index] += 1;
        }
        assert_eq!(seen[1], 0, "never starts in the 0.75 phase");
        // 200 draws over 7 values: each value is expected 28.6 times; at least 10 is a
        // bound a correct generator misses with probability < 1e-5.
        for (phase, &count) in seen.iter().enumerate().filter(|(p, _)| *p != 1) {
            assert!(count >= 10, "phase {phase} seen {count} times");
        }
        // Reproducible per seed, and different seeds choose different phases.
        let start = |seed| {
            let mut c = bbr(seed);
            c.reset_probe_bw_mode();
            c.cycle_index
        };
        assert_eq!(start(42), start(42));
        let phases: std::collections::BTreeSet<usize> = (0..10).map(start).collect();
        assert!(phases.len() > 1);
    }

    #[test]
    fn probe_rtt_after_ten_seconds_without_a_lower_rtt() {
        // 10 Mbps, 40 ms; from 1 s every packet takes 2 ms longer (a route change), so no RTT
        // sample after that matches the estimate.
        let mut path = Path::new(mbps(10.0), ms(40));
        path.extra_delay = Some((1_000_000_000, ms(2)));
        let mut d = Driver::with_seed(path, 4);
        d.run_until(Duration::from_secs(13));
        let enter = d
            .rows
            .iter()
            .position(|r| r.mode == Mode::ProbeRtt)
            .expect("ProbeRTT entered");
        let before = d.rows[enter - 1];
        let stamp = before.min_rtt_stamp.expect("stamped");
        // The last sample matching the 40 ms estimate was taken before the change.
        assert!(stamp <= at(Duration::from_millis(1100)), "{stamp:?}");
        // BBR paper / tcp_bbr.c: ProbeRTT once the estimate is 10 s old, on the first ACK
        // after that (ACKs are 1.2 ms apart; 2 ms tolerance).
        let entered = d.rows[enter].t;
        let due = stamp.as_nanos() + 10_000_000_000;
        assert!(
            entered > due && entered <= due + 2_000_000,
            "{entered} vs {due}"
        );
        let exit = enter
            + d.rows[enter..]
                .iter()
                .position(|r| r.mode != Mode::ProbeRtt)
                .expect("ProbeRTT ends");
        // BBR paper: inflight cut to 4 packets (cwnd 4 x MSS) for the whole ProbeRTT.
        for r in &d.rows[enter..exit] {
            assert!(r.cwnd <= 4 * MSS, "cwnd {}", r.cwnd);
        }
        // tcp_bbr.c: at least 200 ms (and one round) at <= 4 packets; the drain to 4 packets
        // and the round add at most ~2 RTT.
        let held = (d.rows[exit].t - entered) as f64 * 1e-9;
        assert!((0.2..=0.2 + 0.1).contains(&held), "held {held}");
        // Back to ProbeBW (the pipe was full), with the new RTprop measured: 42 ms + 1.2 ms
        // serialisation, within 0.1 ms.
        assert_eq!(d.rows[exit].mode, Mode::ProbeBw);
        let new_min = d.rows[exit].min_rtt.expect("RTT known").as_secs_f64() * 1e3;
        assert!((new_min - 43.2).abs() < 0.1, "{new_min}");
        // ProbeRTT's low-rate samples are treated as app-limited: BtlBw is unchanged.
        assert!(close(
            d.rows[exit].btl_bw.bytes_per_sec(),
            mbps(10.0).bytes_per_sec(),
            0.02
        ));
        // The window restarts at the exit: no second ProbeRTT within 10 s of it.
        let exit_t = d.rows[exit].t;
        assert!(d.rows[exit..]
            .iter()
            .all(|r| r.mode != Mode::ProbeRtt || r.t > exit_t + 10_000_000_000));
    }

    #[test]
    fn equal_rtt_samples_refresh_the_rtprop_stamp() {
        // tcp_bbr.c bbr_update_min_rtt (mainline): a sample equal to the estimate
        // refreshes it, so a path whose RTT keeps returning to its minimum needs no ProbeRTT.
        let mut c = bbr(5);
        let rtt = ms(40);
        let mut ack = steady_ack(0, rtt);
        for i in 0..20_000u64 {
            let now = at(ms(i));
            ack.rtt_sample = Some(if i % 100 == 0 { rtt } else { rtt + ms(5) });
            c.on_ack(now, &ack);
            assert_ne!(c.mode, Mode::ProbeRtt, "at {i} ms");
        }
        // A strictly higher sample does not refresh it.
        let mut c = bbr(5);
        ack.rtt_sample = Some(rtt);
        c.on_ack(at(ms(0)), &ack);
        ack.rtt_sample = Some(rtt + ms(1));
        c.on_ack(at(ms(10_000)), &ack);
        assert_ne!(c.mode, Mode::ProbeRtt);
        c.on_ack(at(ms(10_001)), &ack);
        assert_eq!(c.mode, Mode::ProbeRtt);
        // An expired estimate takes the next sample whatever it is.
        assert_eq!(c.min_rtt, Some(rtt + ms(1)));
    }

    #[test]
    fn pacing_rate_is_gain_times_btl_bw_less_one_percent() {
        let mut d = Driver::with_seed(Path::new(mbps(10.0), ms(40)), 6);
        d.run_until(Duration::from_secs(3));
        let mut startup_max = Rate::ZERO;
        for r in &d.rows {
            let model = r.btl_bw.scaled(r.pacing_gain * 0.99);
            if r.full_bw_reached {
                // tcp_bbr.c bbr_rate_bytes_per_sec: gain x bw x (1 - 1 %); exact up to f64.
                assert!(close(
                    r.pacing.bytes_per_sec(),
                    model.bytes_per_sec(),
                    1e-12
                ));
            } else {
                // tcp_bbr.c bbr_set_pacing_rate: never lowered before the pipe is full.
                assert!(r.pacing >= model);
                assert!(r.pacing >= startup_max);
                startup_max = r.pacing;
            }
        }
        assert!(d.rows.iter().any(|r| r.pacing_gain == 1.25));
        assert!(d.rows.iter().any(|r| r.pacing_gain == 0.75));
    }

    #[test]
    fn initial_pacing_rate_uses_initial_cwnd_over_nominal_then_smoothed_rtt() {
        // tcp_bbr.c bbr_init_pacing_rate_from_rtt: high_gain x cwnd / (1 ms before any RTT
        // sample, then the smoothed RTT), less the 1 % margin.
        let mut c = bbr(7);
        let iw = 10.0 * MSS as f64;
        let expected = DEFAULT_HIGH_GAIN * iw / 1e-3 * 0.99;
        assert!(close(c.pacing_rate.bytes_per_sec(), expected, 1e-12));
        let mut ack = steady_ack(9 * MSS, ms(40));
        // First flight: one packet over 40 ms, far below the initial rate.
        ack.rate = Some(RateSample {
            delivered: MSS,
            interval: ms(40),
            is_app_limited: false,
            prior_delivered: 0,
            lost: 0,
            tx_in_flight: 10 * MSS,
        });
        ack.delivered = MSS;
        c.on_ack(at(ms(40)), &ack);
        let expected = DEFAULT_HIGH_GAIN * iw / 0.040 * 0.99;
        assert!(close(c.pacing_rate.bytes_per_sec(), expected, 1e-12));
    }

    /// A controller in ProbeBW on 10 Mbps / 40 ms, and its driver.
    fn steady_driver(seed: u64) -> Driver<Bbr> {
        let mut d = Driver::with_seed(Path::new(mbps(10.0), ms(40)), seed);
        d.run_until(Duration::from_secs(2));
        assert_eq!(d.cc.mode, Mode::ProbeBw);
        assert_eq!(d.cc.loss_state, CaState::Open);
        d
    }

    #[test]
    fn steady_state_cwnd_is_two_bdp_plus_three_packets() {
        // draft-00 BBRSetCwnd / tcp_bbr.c bbr_set_cwnd: cwnd = cwnd_gain x BDP + 3 quanta
        // (+ 2 packets in the 1.25 phase); exact.
        let d = steady_driver(8);
        for r in d.rows.iter().filter(|r| r.t > 1_500_000_000) {
            let rtt = r.min_rtt.expect("RTT known");
            let mut target = (r.btl_bw.bytes_in(rtt) * 2.0).ceil() as u64 + 3 * MSS;
            if r.cycle_index == 0 {
                target += 2 * MSS;
            }
            assert!(r.cwnd <= target, "{} > {target}", r.cwnd);
            // It snaps down at once and grows back by one packet per ACK.
            assert!(r.cwnd + 4 * MSS >= target, "{} << {target}", r.cwnd);
        }
    }

    #[test]
    fn packet_conservation_during_the_first_round_of_recovery() {
        let mut d = steady_driver(9);
        let c = &mut d.cc;
        let cwnd0 = c.cwnd;
        let flight = d.in_flight;
        let now = Instant::from_nanos(d.now);
        let delivered = c.delivered;
        let ms1 = Duration::from_millis(1);
        // A loss of a packet sent 10 ms ago starts recovery (tcp_bbr.c bbr_ssthresh saves cwnd).
        c.on_congestion(
            now,
            &CongestionEvent {
                kind: CongestionKind::Loss,
                lost_bytes: MSS,
                lost_packets: 1,
                largest_sent_time: at(Duration::from_nanos(d.now) - ms(10)),
                prior_in_flight: flight,
                in_flight: flight - MSS,
            },
        );
        assert_eq!(c.prior_cwnd, cwnd0);
        // First ACK in recovery: cwnd = inflight + acked (tcp_bbr.c
        // bbr_set_cwnd_to_recover_or_restore).
        let mut ack = steady_ack(flight - 2 * MSS, ms(40));
        ack.largest_acked_sent_time = at(Duration::from_nanos(d.now) - ms(40));
        ack.delivered = delivered + MSS;
        c.on_ack(now + ms1, &ack);
        assert!(c.packet_conservation);
        assert_eq!(c.cwnd, flight - MSS);
        // While conserving: cwnd = max(cwnd, inflight + acked), whatever the target.
        let mut in_flight = flight - 2 * MSS;
        for i in 0..5u64 {
            in_flight -= MSS;
            ack.in_flight = in_flight;
            ack.prior_in_flight = in_flight + MSS;
            ack.delivered += MSS;
            c.on_ack(now + ms1 * (2 + i as u32), &ack);
            assert_eq!(c.cwnd, flight - MSS, "one packet out per packet acked");
        }
        // A new packet-timed round ends conservation: growth toward the target again, by acked.
        ack.rate = Some(RateSample {
            delivered: 40 * MSS,
            interval: ms(40),
            is_app_limited: false,
            prior_delivered: delivered + MSS,
            lost: MSS,
            tx_in_flight: flight,
        });
        ack.delivered += MSS;
        let before = c.cwnd;
        c.on_ack(now + ms(10), &ack);
        assert!(!c.packet_conservation);
        assert_eq!(c.cwnd, before + MSS);
        // The first ACK of a packet sent after the recovery start ends it: cwnd is restored
        // to at least the value saved at its start (tcp_bbr.c).
        ack.rate = None;
        ack.largest_acked_sent_time = now + ms(5);
        c.on_ack(now + ms(50), &ack);
        assert_eq!(c.loss_state, CaState::Open);
        assert!(c.cwnd >= cwnd0, "{} < {cwnd0}", c.cwnd);
    }

    #[test]
    fn recovery_lasts_until_a_round_without_loss_reports() {
        let mut d = steady_driver(10);
        let c = &mut d.cc;
        let now = Instant::from_nanos(d.now);
        let flight = d.in_flight;
        let loss = |sent: Instant| CongestionEvent {
            kind: CongestionKind::Loss,
            lost_bytes: 2 * MSS,
            lost_packets: 2,
            largest_sent_time: sent,
            prior_in_flight: flight,
            in_flight: flight - 2 * MSS,
        };
        c.on_congestion(now, &loss(before(now, ms(10))));
        assert_eq!(c.loss_state, CaState::Recovery);
        assert_eq!(c.recovery_start, Some(now));
        let mut ack = steady_ack(flight - 3 * MSS, ms(40));
        ack.largest_acked_sent_time = before(now, ms(40));
        c.on_ack(now + ms(1), &ack);
        // A loss reported during the episode extends it (Chromium/quinn BBR: exit recovery
        // after a round without losses), whenever its packets were sent.
        c.on_congestion(now + ms(2), &loss(before(now, ms(5))));
        assert_eq!(c.recovery_start, Some(now + ms(2)));
        // Its bytes still come off cwnd on the next ACK (draft-00: cwnd -= losses); with
        // conservation on, cwnd = max(cwnd - losses, inflight + acked).
        let cwnd_before = c.cwnd;
        ack.in_flight -= 2 * MSS;
        c.on_ack(now + ms(3), &ack);
        assert_eq!(c.cwnd, (cwnd_before - 2 * MSS).max(ack.in_flight + MSS));
        // An ACK of a packet sent after the first start but before the extension: still in
        // recovery. The first ACK of a packet sent after the extension ends it.
        ack.largest_acked_sent_time = now + ms(1);
        c.on_ack(now + ms(40), &ack);
        assert_eq!(c.loss_state, CaState::Recovery);
        ack.largest_acked_sent_time = now + ms(3);
        c.on_ack(now + ms(45), &ack);
        assert_eq!(c.loss_state, CaState::Open);
        // After it, losses of packets sent before its (last) start start no new episode
        // (RFC 9002 §7.3.2), later ones do and save cwnd again (tcp_bbr.c bbr_save_cwnd).
        c.on_congestion(now + ms(46), &loss(now + ms(1)));
        assert_eq!(c.loss_state, CaState::Open);
        let cwnd_now = c.cwnd;
        c.on_congestion(now + ms(47), &loss(now + ms(10)));
        assert_eq!(c.loss_state, CaState::Recovery);
        assert_eq!(c.prior_cwnd, cwnd_now);
    }

    #[test]
    fn random_loss_costs_only_the_lost_packets() {
        // BBR paper, Figure 10: on 100 Mbps / 100 ms with random loss, BBR's throughput stays
        // at the link rate x (1 - loss) up to 5 % loss. At 1 % loss: at least 95 % of the link
        // rate delivered over 3..10 s (99 % less 4 points for the 0.75 phases and recovery).
        let rate = mbps(100.0);
        let mut path = Path::new(rate, ms(100));
        path.random_loss = Some((0.01, ChaCha8Rng::seed_from_u64(1)));
        let mut d = Driver::with_seed(path, 18);
        d.run_until(Duration::from_secs(3));
        let delivered0 = d.cc.delivered;
        d.run_until(Duration::from_secs(10));
        let goodput = (d.cc.delivered - delivered0) as f64 / 7.0;
        assert!(
            goodput >= 0.95 * rate.bytes_per_sec(),
            "{:.1} Mbps",
            goodput * 8e-6
        );
    }

    #[test]
    fn persistent_congestion_acts_like_linux_rto() {
        let mut d = steady_driver(11);
        let c = &mut d.cc;
        let cwnd0 = c.cwnd;
        let now = Instant::from_nanos(d.now);
        c.on_congestion(
            now,
            &CongestionEvent {
                kind: CongestionKind::PersistentCongestion,
                lost_bytes: 20 * MSS,
                lost_packets: 20,
                largest_sent_time: before(now, ms(10)),
                prior_in_flight: 20 * MSS,
                in_flight: 0,
            },
        );
        // tcp_enter_loss: cwnd = inflight + 1 packet; tcp_bbr.c bbr_set_state(TCP_CA_Loss):
        // full_bw = 0, mode and full_bw_reached kept.
        assert_eq!(c.cwnd, MSS);
        assert_eq!(c.prior_cwnd, cwnd0);
        assert_eq!(c.full_bw, Rate::ZERO);
        assert!(c.full_bw_reached);
        assert_eq!(c.mode, Mode::ProbeBw);
        // Next ACK: no packet conservation in Loss; grow by acked, floor 4 packets.
        let mut ack = steady_ack(0, ms(40));
        ack.largest_acked_sent_time = before(now, ms(40));
        c.on_ack(now + ms(40), &ack);
        assert_eq!(c.cwnd, 4 * MSS);
        // Leaving Loss restores the saved cwnd (then snapped to the target).
        ack.largest_acked_sent_time = now + ms(1);
        c.on_ack(now + ms(80), &ack);
        assert_eq!(c.loss_state, CaState::Open);
        assert!(c.cwnd >= cwnd0.min(c.inflight(c.bw(), c.cwnd_gain)));
    }

    #[test]
    fn app_limited_samples_do_not_lower_btl_bw() {
        // 20 Mbps, 40 ms. From 2 s the application offers only 5 Mbps for 4 s (100 rounds).
        let rate = mbps(20.0);
        let mut path = Path::new(rate, ms(40));
        path.app_rate = Some((2_000_000_000, mbps(5.0)));
        let mut d = Driver::with_seed(path, 12);
        d.run_until(Duration::from_secs(6));
        // tcp_bbr.c bbr_update_bw: app-limited samples only raise the max. 2 % for sampling.
        let late: Vec<&Row> = d.rows.iter().filter(|r| r.t > 2_500_000_000).collect();
        assert!(late.iter().filter(|r| r.app_limited_sample).count() > late.len() / 2);
        for r in &late {
            assert!(
                r.btl_bw >= rate.scaled(0.98),
                "{} at {:.3}s",
                r.btl_bw,
                r.secs()
            );
        }

        // The same drop in delivery rate caused by the path (not app-limited) lowers BtlBw
        // once the max filter's 10-round window has passed (Nichols filter: a sample ages out
        // after more than 10 rounds; +2 rounds for the sub-window hand-over).
        let mut path = Path::new(rate, ms(40));
        path.rate_change = Some((2_000_000_000, mbps(5.0)));
        let mut d = Driver::with_seed(path, 12);
        d.run_until(Duration::from_secs(6));
        let change = d
            .rows
            .iter()
            .find(|r| r.t >= 2_000_000_000)
            .expect("ACKs after the change");
        let dropped = d
            .rows
            .iter()
            .find(|r| r.t >= 2_000_000_000 && r.btl_bw < mbps(6.0))
            .expect("BtlBw follows the path down");
        assert!(
            dropped.round - change.round <= 12,
            "{} rounds",
            dropped.round - change.round
        );
    }

    #[test]
    fn long_term_bw_engages_on_a_policer_pattern() {
        // Steady delivery at 4 Mbps with one packet lost per three delivered (loss/delivered =
        // 1/3 >= 50/256): the first lossy ACK starts an interval, each interval ends at the
        // first lossy ACK after 4 rounds, and two intervals with the same rate engage the
        // policer model (tcp_bbr.c bbr_lt_bw_sampling / bbr_lt_bw_interval_done).
        let rate = mbps(4.0);
        let rtt = ms(50);
        let mut c = bbr(13);
        let mut now = Duration::ZERO;
        let mut engaged_round = None;
        for _ in 0..400 {
            now = feed_steady(&mut c, now, 1, rate, rtt, 3);
            if c.lt.use_bw {
                engaged_round = Some(c.round_count);
                break;
            }
        }
        let engaged_round = engaged_round.expect("policer detected");
        // Two intervals of at least 4 rounds each, the first starting at round 1.
        assert!((8..=12).contains(&engaged_round), "round {engaged_round}");
        // lt_bw is the average of the two intervals: the steady rate, within the one packet
        // an interval boundary may add (1 in ~17 per round here -> 5 %).
        let lt_bw = c.lt.bw.expect("rate kept");
        assert!(
            close(lt_bw.bytes_per_sec(), rate.bytes_per_sec(), 0.05),
            "{lt_bw}"
        );
        // The model now paces at lt_bw with gain 1 in ProbeBW.
        now = feed_steady(&mut c, now, 5, rate, rtt, 3);
        assert_eq!(c.mode, Mode::ProbeBw);
        assert_eq!(c.pacing_gain, 1.0);
        assert!(close(
            c.pacing_rate.bytes_per_sec(),
            lt_bw.bytes_per_sec() * 0.99,
            1e-12
        ));
        let state = c.state();
        assert!(state.values.contains(&("lt_use_bw", 1.0)));
        // After 48 ProbeBW rounds it forgets the policer and probes again.
        let start = c.round_count;
        let mut released_round = None;
        for _ in 0..2000 {
            now = feed_steady(&mut c, now, 1, rate, rtt, 0);
            if !c.lt.use_bw {
                released_round = Some(c.round_count);
                break;
            }
        }
        let released = released_round.expect("policer model released");
        assert_eq!(released - start, LT_BW_MAX_ROUNDS);
        assert_eq!(c.lt.bw, None);
    }

    #[test]
    fn long_term_bw_needs_twenty_percent_loss_and_a_consistent_rate() {
        let rtt = ms(50);
        // 1 loss per 10 delivered: 10 % < 50/256.
        let mut c = bbr(14);
        feed_steady(&mut c, Duration::ZERO, 3000, mbps(4.0), rtt, 10);
        assert!(!c.lt.use_bw);
        // Interval rates must agree within 1/8 or within 4 kbit/s (tcp_bbr.c
        // bbr_lt_bw_interval_done): 30 % apart is a new first interval, not a policer.
        let mut c = bbr(14);
        c.lt_interval_done(mbps(4.0));
        c.lt_interval_done(mbps(5.2));
        assert!(!c.lt.use_bw);
        assert_eq!(c.lt.bw, Some(mbps(5.2)));
        // 10 % apart: policed, at the average of the two.
        c.lt_interval_done(mbps(4.732));
        assert!(c.lt.use_bw);
        assert!(close(c.lt.bw.expect("kept").bits_per_sec(), 4.966e6, 1e-12));
        // At low rates the absolute rule decides: 10 and 13 kbit/s differ by 30 % but only
        // 3 kbit/s.
        let mut c = bbr(14);
        c.lt_interval_done(Rate::from_bits_per_sec(10e3));
        c.lt_interval_done(Rate::from_bits_per_sec(13e3));
        assert!(c.lt.use_bw);
        let mut c = bbr(14);
        c.lt_interval_done(Rate::from_bits_per_sec(10e3));
        c.lt_interval_done(Rate::from_bits_per_sec(14.1e3));
        assert!(!c.lt.use_bw);
        // Disabled by the parameter: never engages.
        let params = BbrParams {
            lt_bw: false,
            ..BbrParams::default()
        };
        let mut c = Bbr::new(&config(14), params);
        feed_steady(&mut c, Duration::ZERO, 3000, mbps(4.0), rtt, 3);
        assert!(!c.lt.use_bw);
        assert_eq!(c.lt.bw, None);
    }

    #[test]
    fn long_term_bw_engages_behind_a_token_bucket_policer() {
        // 20 Mbps link, policed at 4 Mbps with a 30 kB bucket: BBR's overshoot meets heavy
        // policer loss; the policer model must engage and pace at the policed rate (paper:
        // "policer detection and an explicit policer model"; tcp_bbr.c).
        let policed = mbps(4.0);
        let mut path = Path::new(mbps(20.0), ms(40));
        path.policer = Some(Policer::new(policed, 30_000));
        let mut d = Driver::with_seed(path, 15);
        d.run_until(Duration::from_secs(10));
        let engaged = d
            .rows
            .iter()
            .find(|r| r.lt_use_bw)
            .expect("policer detected");
        let lt_bw = engaged.lt_bw.expect("rate kept");
        // Within 10 % of the token rate.
        assert!(
            close(lt_bw.bytes_per_sec(), policed.bytes_per_sec(), 0.10),
            "{lt_bw}"
        );
    }

    #[test]
    fn traced_state_has_the_documented_columns() {
        let c = bbr(16);
        let s = c.state();
        assert_eq!(s.mode, "startup");
        let names: Vec<&str> = s.values.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "btl_bw_bps",
                "rt_prop_ms",
                "pacing_gain",
                "cwnd_gain",
                "round_count",
                "full_bw_reached",
                "lt_use_bw",
                "lt_bw_bps",
                "cycle_index"
            ]
        );
        assert!(s.values.iter().all(|(_, v)| v.is_finite()));
        let d = steady_driver(16);
        let s = d.cc.state();
        assert_eq!(s.mode, "probe_bw");
        let value = |name| s.values.iter().find(|(n, _)| *n == name).expect("column").1;
        assert!(close(value("btl_bw_bps"), 10e6, 0.02));
        assert!((value("rt_prop_ms") - 41.2).abs() < 0.01);
        assert_eq!(value("cwnd_gain"), 2.0);
        assert_eq!(value("full_bw_reached"), 1.0);
        assert_eq!(value("lt_bw_bps"), 0.0);
    }

    #[test]
    fn restart_from_idle_in_probe_bw_paces_at_the_estimate() {
        // tcp_bbr.c bbr_cwnd_event(CA_EVENT_TX_START): the first packet after idle, while
        // app-limited, sets pacing to 1 x bw and blocks ProbeRTT entry until data is acked.
        let mut d = steady_driver(17);
        let c = &mut d.cc;
        let now = Instant::from_nanos(d.now) + ms(500);
        let snapshot = DeliverySnapshot {
            is_app_limited: true,
            ..DeliverySnapshot::default()
        };
        c.on_sent(
            now,
            &SentPacket {
                packet_number: 1,
                bytes: MSS,
                is_retransmission: false,
                in_flight: MSS,
                snapshot,
            },
        );
        assert!(c.idle_restart);
        assert!(close(
            c.pacing_rate.bytes_per_sec(),
            c.max_bw().bytes_per_sec() * 0.99,
            1e-12
        ));
    }

    #[test]
    fn info_builds_with_defaults_and_rejects_bad_parameters() {
        let c = INFO.instantiate(&Params::new(), &config(0)).unwrap();
        assert_eq!(c.cwnd(), 10 * MSS);
        assert!(c.pacing_rate().is_some());
        assert_eq!(c.state().mode, "startup");

        let mut p = Params::new();
        p.insert("pacing_margin".into(), ParamValue::Number(0.0));
        p.insert("bw_window_rounds".into(), ParamValue::Number(6.0));
        p.insert("probe_rtt_interval".into(), ParamValue::Text("5s".into()));
        p.insert("lt_bw".into(), ParamValue::Bool(false));
        let reader = ParamReader::new(&p, PARAMS).unwrap();
        let params = BbrParams::read(&reader).unwrap();
        assert_eq!(params.bw_window_rounds, 6);
        assert_eq!(params.probe_rtt_interval, Duration::from_secs(5));
        assert!(!params.lt_bw);
        let c = Bbr::new(&config(0), params);
        assert_eq!(c.btl_bw.window(), 6);
        // Zero margin: the initial rate is exactly high_gain x IW / 1 ms.
        assert!(close(
            c.pacing_rate.bytes_per_sec(),
            2.885 * 15000.0 / 1e-3,
            1e-12
        ));

        let bad: [(&str, ParamValue); 11] = [
            ("high_gain", ParamValue::Number(1.0)),
            ("high_gain", ParamValue::Number(11.0)),
            ("cwnd_gain", ParamValue::Number(0.5)),
            ("bw_window_rounds", ParamValue::Number(0.0)),
            ("bw_window_rounds", ParamValue::Number(2.5)),
            ("pacing_margin", ParamValue::Number(-0.01)),
            ("pacing_margin", ParamValue::Number(0.6)),
            ("probe_rtt_interval", ParamValue::Text("0s".into())),
            ("probe_rtt_duration", ParamValue::Text("10s".into())),
            ("probe_rtt_duration", ParamValue::Number(0.2)),
            ("lt_bw", ParamValue::Number(1.0)),
        ];
        for (name, value) in bad {
            let mut p = Params::new();
            p.insert(name.into(), value.clone());
            let e = INFO.instantiate(&p, &config(0)).err().expect("rejected");
            assert!(e.to_string().contains(name), "{name} = {value}: {e}");
        }
    }
}
