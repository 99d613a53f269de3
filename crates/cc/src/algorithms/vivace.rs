//! PCC Vivace: online-learning rate control over monitor intervals.
//!
//! Sources: M. Dong, T. Meng, D. Zarchy, E. Arslan, Y. Gilad, P. B. Godfrey, M. Schapira, "PCC
//! Vivace: Online-Learning Congestion Control", NSDI 2018: the utility
//! u = x^t - b x dRTT/dT - c x L of a sending rate x (Mbit/s) with its RTT gradient dRTT/dT and
//! loss rate L, t = 0.9, b = 900, c = 11.35; rate control by the utility's gradient, measured
//! with pairs of monitor intervals (MIs) at x(1 + eps) and x(1 - eps), with a confidence
//! amplifier and a dynamic change boundary. The PCC code the fair-queuing detection paper
//! (FQ-detect, §III-C and §IV) ran (CN-TU/PCC-Uspace `src/pcc/pcc_sender.cpp`, UDT build), for
//! every constant of the rate control: eps = 5 %, two pairs in random order that must agree,
//! STARTING (doubling while the utility rises, half rate on a fall, immediate PROBING when the
//! RTT exceeds 1.3 x the RTT at the MI's start), DECISION_MADE until the step direction flips,
//! the amplifier schedule, the change bound 5 % + 6 % x allowance, the minimum rate 2 Mbit/s
//! and minimum change 0.5 Mbit/s (Mbit = 2^20 bit). MIs are [`crate::estimators::monitor`]'s.
//!
//! The latency term is the paper's b x dRTT/dT (not the reference code's 11330 x bytes per
//! packet x latency inflation), a gradient below 0.01 counting as 0 as in WebRTC's Vivace port
//! (`modules/congestion_controller/pcc`, with the same b, c and t), and c is constant (not the
//! code's 1 below 3 % loss). With b = 0 this is the loss-only PCC that the fair-queuing paper
//! falls back to without fair queuing (the code's PCC_CLASSIC, `pcc_monitor_interval_queue.cpp`),
//! with the paper's c.
//! `docs/vivace.md` says why and lists every other choice.
//!
//! Owns [`Vivace`], its parameters [`VivaceParams`] and the registry entry [`INFO`].

use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec, Rate, SentPacket,
};
use crate::estimators::monitor::{
    interval_length, AvgRtt, MonitorQueue, MonitorResult, RATE_BASED_CWND,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The unit of x in the utility and of the rate constants, bits (PCC-Uspace `kMegabit` =
/// 1024 x 1024).
pub const MBIT: f64 = 1_048_576.0;
/// Default exponent t of the throughput term (Vivace paper; WebRTC port `kThroughputPower`).
pub const DEFAULT_EXPONENT: f64 = 0.9;
/// Default latency coefficient b (Vivace paper; WebRTC port `kRttGradientCoefficient`).
pub const DEFAULT_LATENCY_COEFFICIENT: f64 = 900.0;
/// Default loss coefficient c (Vivace paper; WebRTC port `kLossCoefficient`).
pub const DEFAULT_LOSS_COEFFICIENT: f64 = 11.35;
/// Default RTT gradient tolerance: |dRTT/dT| below it counts as 0 (WebRTC's Vivace port,
/// `modules/congestion_controller/pcc`, kRttGradientThreshold, beside its b, c and t;
/// PCC-Uspace filters RTT inflation below 2 % the same way).
pub const DEFAULT_RTT_GRADIENT_THRESHOLD: f64 = 0.01;
/// Minimum rate, bits per second (pcc_sender.cpp: 2 Mbit = 2 x 2^20 bit/s).
pub const MIN_RATE_BPS: f64 = 2.0 * MBIT;
/// Smallest rate change, bits per second (pcc_sender.cpp: 0.5 Mbit = 2^19 bit/s).
pub const MIN_CHANGE_BPS: f64 = 0.5 * MBIT;

/// Probing step eps (pcc_sender.cpp: 5 %).
const PROBING_STEP: f64 = 0.05;
/// Pairs of probing MIs per decision (pcc_sender.cpp: 2).
const PROBING_PAIRS: usize = 2;
/// Rate change per unit of utility gradient (utility per Mbit/s), bits per second
/// (pcc_sender.cpp: 1 Mbit).
const GRADIENT_TO_RATE_BPS: f64 = MBIT;
/// Change bound with no allowance, fraction of the rate (pcc_sender.cpp: 5 %).
const CHANGE_BOUND: f64 = 0.05;
/// Change bound added per unit of allowance (pcc_sender.cpp: 6 %).
const CHANGE_BOUND_STEP: f64 = 0.06;
/// Largest swing buffer (pcc_sender.cpp: 2).
const MAX_SWING_BUFFER: u32 = 2;
/// STARTING ends at once when the average RTT exceeds this multiple of its value at the MI's
/// start (pcc_sender.cpp: 1.3).
const STARTING_RTT_INFLATION: f64 = 1.3;
/// Leaving DECISION_MADE, the rate goes back by min(rounds x this, [`MAX_RESTORE`])
/// (pcc_sender.cpp: 2 %).
const RESTORE_PER_ROUND: f64 = 0.02;
/// Largest step back leaving DECISION_MADE (pcc_sender.cpp: 10 %).
const MAX_RESTORE: f64 = 0.10;
/// Slowest accepted start rate, bits per second (lower ones start at the minimum rate).
const MIN_START_RATE_BPS: f64 = 1e3;
/// Fastest accepted start rate, bits per second.
const MAX_START_RATE_BPS: f64 = 1e12;

/// Parameters `vivace` accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "latency_coefficient",
        kind: ParamKind::Number,
        default: "900",
        doc: "b of the utility's latency term b·x·dRTT/dT, 0 to 1e6 (PCC Vivace: 900); 0 is \
              the loss-only PCC of the FQ-detection paper's fallback (PCC-Uspace PCC_CLASSIC)",
    },
    ParamSpec {
        name: "loss_coefficient",
        kind: ParamKind::Number,
        default: "11.35",
        doc: "c of the utility's loss term c·x·L, 0 to 1e4 (PCC Vivace: 11.35)",
    },
    ParamSpec {
        name: "exponent",
        kind: ParamKind::Number,
        default: "0.9",
        doc: "t of the utility's throughput term x^t, 0.01 to 1 (PCC Vivace: 0.9)",
    },
    ParamSpec {
        name: "rtt_gradient_threshold",
        kind: ParamKind::Number,
        default: "0.01",
        doc: "an MI's |dRTT/dT| below this counts as 0 (noise), 0 to 1 (WebRTC's Vivace port \
              kRttGradientThreshold; PCC-Uspace filters inflation below 2 %)",
    },
    ParamSpec {
        name: "start_rate_bps",
        kind: ParamKind::Number,
        default: "2097152",
        doc: "rate of the first monitor interval, bits per second, 1e3 to 1e12, at least the \
              minimum rate 2 x 2^20 (pcc_sender.cpp)",
    },
    ParamSpec {
        name: "startup",
        kind: ParamKind::Bool,
        default: "true",
        doc: "begin in STARTING; false begins in PROBING around start_rate_bps (as after \
              fq_switch's probe: PCC-Uspace enters PROBING at the probe's goodput)",
    },
];

/// Parameters `pcc` accepts: `vivace`'s, with no latency term by default.
pub const PCC_PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "latency_coefficient",
        kind: ParamKind::Number,
        default: "0",
        doc: "b of the utility's latency term b·x·dRTT/dT, 0 to 1e6 (0: loss only, \
              PCC-Uspace PCC_CLASSIC; PCC Vivace: 900)",
    },
    PARAMS[1],
    PARAMS[2],
    PARAMS[3],
    PARAMS[4],
    PARAMS[5],
];

/// Registry entry for `pcc`: the loss-only PCC the fair-queuing detection paper falls back to
/// without fair queuing (§III-C; PCC-Uspace PCC_CLASSIC), `vivace` with b = 0.
pub const PCC_INFO: ControllerInfo = ControllerInfo {
    name: "pcc",
    summary: "loss-only PCC: vivace's rate control on u = x^0.9 - 11.35 x L (the FQ-detection \
              paper's fallback, PCC-Uspace PCC_CLASSIC)",
    params: PCC_PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: true,
    dccp_only: false,
    build: build_pcc,
};

/// Registry entry for `vivace`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "vivace",
    summary: "PCC Vivace: gradient ascent on u = x^0.9 - 900 x dRTT/dT - 11.35 x L over \
              monitor intervals (Dong et al. NSDI 2018, PCC-Uspace); latency_coefficient = 0 \
              is the loss-only PCC of the FQ-detection paper",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: true,
    dccp_only: false,
    build,
};

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    build_with(reader, config, DEFAULT_LATENCY_COEFFICIENT)
}

fn build_pcc(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    build_with(reader, config, 0.0)
}

fn build_with(
    reader: &ParamReader,
    config: &ControllerConfig,
    default_latency: f64,
) -> Result<Box<dyn Controller>, ParamError> {
    let start_rate_bps = reader.number_in(
        "start_rate_bps",
        MIN_RATE_BPS,
        MIN_START_RATE_BPS,
        MAX_START_RATE_BPS,
    )?;
    let params = VivaceParams {
        utility: Utility {
            exponent: reader.number_in("exponent", DEFAULT_EXPONENT, 0.01, 1.0)?,
            latency: reader.number_in("latency_coefficient", default_latency, 0.0, 1e6)?,
            loss: reader.number_in("loss_coefficient", DEFAULT_LOSS_COEFFICIENT, 0.0, 1e4)?,
            gradient_threshold: reader.number_in(
                "rtt_gradient_threshold",
                DEFAULT_RTT_GRADIENT_THRESHOLD,
                0.0,
                1.0,
            )?,
        },
        start_rate: Rate::from_bits_per_sec(start_rate_bps),
        startup: reader.boolean("startup", true),
    };
    Ok(Box::new(Vivace::new(config, params)))
}

/// The utility function's coefficients.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Utility {
    /// t, the exponent of the throughput term.
    pub exponent: f64,
    /// b, the coefficient of the latency term.
    pub latency: f64,
    /// c, the coefficient of the loss term.
    pub loss: f64,
    /// |dRTT/dT| below this counts as 0.
    pub gradient_threshold: f64,
}

impl Default for Utility {
    fn default() -> Self {
        Utility {
            exponent: DEFAULT_EXPONENT,
            latency: DEFAULT_LATENCY_COEFFICIENT,
            loss: DEFAULT_LOSS_COEFFICIENT,
            gradient_threshold: DEFAULT_RTT_GRADIENT_THRESHOLD,
        }
    }
}

impl Utility {
    /// The utility of one MI, x its actual send rate in Mbit/s (2^20 bit).
    pub fn value(&self, result: &MonitorResult) -> f64 {
        let x = result.send_rate.bits_per_sec() / MBIT;
        // WebRTC's Vivace port: a gradient below the tolerance is noise, 0.
        let gradient = if result.rtt_gradient.abs() < self.gradient_threshold {
            0.0
        } else {
            result.rtt_gradient
        };
        // PCC Vivace utility: u = x^t - b x dRTT/dT - c x L.
        x.powf(self.exponent) - self.latency * x * gradient - self.loss * x * result.loss
    }
}

/// What `vivace` can be given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VivaceParams {
    /// The utility function.
    pub utility: Utility,
    /// Rate of the first MI.
    pub start_rate: Rate,
    /// Whether it begins in STARTING (else in PROBING).
    pub startup: bool,
}

impl Default for VivaceParams {
    fn default() -> Self {
        VivaceParams {
            utility: Utility::default(),
            start_rate: Rate::from_bits_per_sec(MIN_RATE_BPS),
            startup: true,
        }
    }
}

/// Which way a step moves the rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Direction {
    Increase,
    Decrease,
}

impl Direction {
    fn of(gradient: f64) -> Self {
        if gradient > 0.0 {
            Direction::Increase
        } else {
            Direction::Decrease
        }
    }

    fn sign(self) -> f64 {
        match self {
            Direction::Increase => 1.0,
            Direction::Decrease => -1.0,
        }
    }
}

/// The step size state of pcc_sender.cpp: confidence amplifier, change-bound allowance and
/// swing buffer (`ComputeRateChange`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Stepper {
    amplifier: f64,
    allowance: u32,
    swing: u32,
    last: Option<Direction>,
}

impl Stepper {
    /// Records a step in `direction`; on a flip resets amplifier and allowance and widens the
    /// swing buffer. Returns whether it flipped.
    fn turn(&mut self, direction: Direction) -> bool {
        let flipped = self.last.is_some_and(|last| last != direction);
        self.last = Some(direction);
        if flipped {
            self.amplifier = 0.0;
            self.allowance = 0;
            self.swing = (self.swing + 1).min(MAX_SWING_BUFFER);
        }
        flipped
    }

    /// The rate change in bits per second for a utility `gradient` (per Mbit/s) in
    /// `direction` at `rate`.
    fn change(&mut self, gradient: f64, direction: Direction, rate: Rate) -> f64 {
        let flipped = self.turn(direction);
        // PCC Vivace: step = amplifier x gradient x 1 Mbit.
        let change = gradient.abs() * GRADIENT_TO_RATE_BPS * amplification(self.amplifier);
        if !flipped {
            self.grow();
        }
        let bounded = self.bound(change, rate);
        // pcc_sender.cpp: at least the minimum change.
        bounded.max(MIN_CHANGE_BPS) * direction.sign()
    }

    /// One more step the same way: the swing buffer drains first, then the amplifier grows by
    /// 0.5 below 3 and by 1 from there (pcc_sender.cpp `ComputeRateChange`).
    fn grow(&mut self) {
        if self.swing > 0 {
            self.swing -= 1;
        } else if self.amplifier < 3.0 {
            self.amplifier += 0.5;
        } else {
            self.amplifier += 1.0;
        }
    }

    /// PCC Vivace dynamic change boundary: at most (5 % + 6 % x allowance) of the rate;
    /// allowance + 1 each time it clips, - 1 otherwise.
    fn bound(&mut self, change: f64, rate: Rate) -> f64 {
        let limit =
            (CHANGE_BOUND + CHANGE_BOUND_STEP * f64::from(self.allowance)) * rate.bits_per_sec();
        if change > limit {
            self.allowance += 1;
            limit
        } else {
            self.allowance = self.allowance.saturating_sub(1);
            change
        }
    }
}

/// PCC Vivace confidence amplifier, as pcc_sender.cpp `ComputeRateChange` scales it:
/// a + 1 below 3, 2a - 2 below 6, 4a - 14 below 9, 9a - 50 beyond.
fn amplification(a: f64) -> f64 {
    if a < 3.0 {
        a + 1.0
    } else if a < 6.0 {
        2.0 * a - 2.0
    } else if a < 9.0 {
        4.0 * a - 14.0
    } else {
        9.0 * a - 50.0
    }
}

/// `rate`, or the minimum rate if it is lower (pcc_sender.cpp: 2 Mbit/s).
fn at_least_min(rate: Rate) -> Rate {
    Rate::from_bits_per_sec(rate.bits_per_sec().max(MIN_RATE_BPS))
}

/// The utility gradient between two (rate, utility) points, per Mbit/s; `None` for one rate.
fn gradient((rate_a, u_a): (Rate, f64), (rate_b, u_b): (Rate, f64)) -> Option<f64> {
    let dx = (rate_a.bits_per_sec() - rate_b.bits_per_sec()) / MBIT;
    (dx != 0.0).then(|| (u_a - u_b) / dx)
}

#[derive(Clone, Debug, PartialEq)]
enum Mode {
    /// Doubling while the utility rises; `best` is the last utility.
    Starting { best: Option<f64> },
    /// Two pairs of MIs at rate x (1 +/- eps); `opened` of them started, `up_first` the order
    /// of the current pair, `results` the (rate, utility) of those finished.
    Probing {
        opened: usize,
        up_first: bool,
        results: Vec<(Rate, f64)>,
    },
    /// Moving in `direction`; `previous` is the last (rate, utility), `rounds` the steps taken.
    DecisionMade {
        direction: Direction,
        previous: (Rate, f64),
        rounds: u32,
    },
}

impl Mode {
    fn name(&self) -> &'static str {
        match self {
            Mode::Starting { .. } => "starting",
            Mode::Probing { .. } => "probing",
            Mode::DecisionMade { .. } => "decision_made",
        }
    }
}

/// A PCC Vivace controller.
#[derive(Clone, Debug)]
pub struct Vivace {
    utility: Utility,
    mss: u64,
    rng: ChaCha8Rng,
    mode: Mode,
    /// The central rate: what STARTING, DECISION_MADE and the MIs between probes send at.
    rate: Rate,
    /// The rate paced at now: the central rate, or a probing MI's.
    sending: Rate,
    avg_rtt: AvgRtt,
    /// The average RTT when the newest MI started.
    interval_rtt: Option<Duration>,
    queue: MonitorQueue,
    stepper: Stepper,
    /// The utility of the last MI acted on.
    last_utility: Option<f64>,
}

impl Vivace {
    /// A controller at the start rate, in STARTING unless `params.startup` is off (then in
    /// PROBING), its probing order drawn from `config.seed`.
    pub fn new(config: &ControllerConfig, params: VivaceParams) -> Self {
        let rate = at_least_min(params.start_rate);
        let mut vivace = Vivace {
            utility: params.utility,
            mss: config.max_datagram_size,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            mode: Mode::Starting { best: None },
            rate,
            sending: rate,
            avg_rtt: AvgRtt::default(),
            interval_rtt: None,
            queue: MonitorQueue::new(),
            stepper: Stepper::default(),
            last_utility: None,
        };
        if !params.startup {
            vivace.enter_probing(rate);
        }
        vivace
    }

    /// Sets the central rate, not below the minimum (pcc_sender.cpp), and paces at it.
    fn set_rate(&mut self, rate: Rate) {
        self.rate = at_least_min(rate);
        self.sending = self.rate;
    }

    /// Whether the average RTT exceeds 1.3 x its value when the newest MI started.
    fn rtt_inflated(&self) -> bool {
        match (self.avg_rtt.get(), self.interval_rtt) {
            (Some(now), Some(start)) => {
                now.as_secs_f64() > start.as_secs_f64() * STARTING_RTT_INFLATION
            }
            _ => false,
        }
    }

    fn enter_probing(&mut self, center: Rate) {
        self.mode = Mode::Probing {
            opened: 0,
            up_first: false,
            results: Vec::with_capacity(2 * PROBING_PAIRS),
        };
        self.set_rate(center);
        self.queue.forget_useful();
    }

    /// Starts an MI at `now`: the next probe while PROBING has probes to send, else at the
    /// central rate, useful when no other useful MI is pending; none useful before the first
    /// RTT sample (pcc_sender.cpp `MaybeSetSendingRate`, `CreateUsefulInterval`).
    fn open_interval(&mut self, now: Instant) {
        let rtt_known = self.avg_rtt.get().is_some();
        let (rate, useful) = match &mut self.mode {
            Mode::Probing {
                opened, up_first, ..
            } if rtt_known && *opened < 2 * PROBING_PAIRS => {
                if *opened % 2 == 0 {
                    // pcc_sender.cpp: the order of each pair is random.
                    *up_first = self.rng.gen_bool(0.5);
                }
                let up = (*opened % 2 == 0) == *up_first;
                *opened += 1;
                let step = if up { PROBING_STEP } else { -PROBING_STEP };
                // PCC Vivace probing: x (1 + eps) and x (1 - eps).
                (self.rate.scaled(1.0 + step), true)
            }
            Mode::Probing { .. } => (self.rate, false),
            _ => (self.rate, rtt_known && self.queue.useful_pending() == 0),
        };
        self.sending = rate;
        self.interval_rtt = self.avg_rtt.get();
        let length = interval_length(self.avg_rtt.get(), rate, self.mss);
        self.queue.open(now, length, rate, useful);
    }

    fn take_results(&mut self, now: Instant) {
        while let Some(result) = self.queue.pop_result(now) {
            self.on_result(&result);
        }
    }

    fn on_result(&mut self, result: &MonitorResult) {
        let u = self.utility.value(result);
        self.last_utility = Some(u);
        match &mut self.mode {
            Mode::Starting { best } => {
                if best.is_none_or(|b| u > b) {
                    // pcc_sender.cpp OnUtilityAvailable, STARTING: double while the utility rises.
                    *best = Some(u);
                    self.set_rate(self.rate.scaled(2.0));
                } else {
                    // ... on a fall, PROBING at half the rate.
                    self.enter_probing(self.rate.scaled(0.5));
                }
            }
            Mode::Probing { results, .. } => {
                results.push((result.rate, u));
                if results.len() == 2 * PROBING_PAIRS {
                    let results = std::mem::take(results);
                    self.decide(&results);
                }
            }
            Mode::DecisionMade { .. } => self.follow(result.rate, u),
        }
    }

    /// PROBING's decision over two pairs (pcc_sender.cpp `CanMakeDecision`): each pair votes
    /// for the rate with the higher utility; only when both vote the same way does the rate
    /// move, by the mean of the pairs' gradients. Otherwise probe again around the same rate.
    fn decide(&mut self, results: &[(Rate, f64)]) {
        let mut votes = Vec::with_capacity(PROBING_PAIRS);
        let mut sum = 0.0;
        for pair in results.chunks(2) {
            let g = gradient(pair[0], pair[1]).unwrap_or(0.0);
            votes.push(Direction::of(g));
            sum += g;
        }
        let direction = votes[0];
        if votes.iter().any(|&v| v != direction) {
            self.enter_probing(self.rate);
            return;
        }
        let mean_utility = results.iter().map(|r| r.1).sum::<f64>() / results.len() as f64;
        let center = self.rate;
        let change = self
            .stepper
            .change(sum / PROBING_PAIRS as f64, direction, center);
        self.set_rate(Rate::from_bits_per_sec(center.bits_per_sec() + change));
        self.mode = Mode::DecisionMade {
            direction,
            previous: (center, mean_utility),
            rounds: 1,
        };
    }

    /// DECISION_MADE: the gradient between the last two MIs gives the next step while it
    /// points the same way; a flip goes back to PROBING with the rate stepped back by
    /// min(rounds x 2 %, 10 %) (pcc_sender.cpp `EnterProbing`).
    fn follow(&mut self, rate: Rate, u: f64) {
        let Mode::DecisionMade {
            direction,
            previous,
            rounds,
        } = self.mode.clone()
        else {
            return;
        };
        let Some(g) = gradient((rate, u), previous) else {
            // Two MIs at one rate (held at the minimum): no gradient, probe again.
            self.enter_probing(self.rate);
            return;
        };
        let next = Direction::of(g);
        if next != direction {
            self.stepper.turn(next);
            let back = (f64::from(rounds) * RESTORE_PER_ROUND).min(MAX_RESTORE);
            self.enter_probing(self.rate.scaled(1.0 / (1.0 + direction.sign() * back)));
            return;
        }
        let change = self.stepper.change(g, direction, self.rate);
        self.set_rate(Rate::from_bits_per_sec(self.rate.bits_per_sec() + change));
        self.mode = Mode::DecisionMade {
            direction,
            previous: (rate, u),
            rounds: rounds + 1,
        };
    }
}

impl Controller for Vivace {
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        if self.queue.needs_interval(now) {
            self.open_interval(now);
        }
        self.queue.on_sent(now, packet.bytes);
    }

    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        if let Some(sample) = ack.rtt_sample {
            self.avg_rtt.update(sample);
            if matches!(self.mode, Mode::Starting { .. }) && self.rtt_inflated() {
                // pcc_sender.cpp OnCongestionEvent: RTT > 1.3 x MI-start RTT in STARTING ->
                // PROBING now.
                self.enter_probing(self.rate.scaled(0.5));
            }
        }
        self.queue.on_ack(ack, self.avg_rtt.get());
        self.take_results(now);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        if event.kind == CongestionKind::EcnCe {
            return;
        }
        self.queue.on_loss(event);
        self.take_results(now);
    }

    fn cwnd(&self) -> u64 {
        RATE_BASED_CWND
    }

    fn pacing_rate(&self) -> Option<Rate> {
        Some(self.sending)
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            mode: self.mode.name(),
            values: vec![
                ("rate_bps", self.rate.bits_per_sec()),
                ("utility", self.last_utility.unwrap_or(0.0)),
                ("amplifier", self.stepper.amplifier),
                ("allowance", f64::from(self.stepper.allowance)),
                ("swing_buffer", f64::from(self.stepper.swing)),
                (
                    "avg_rtt_ms",
                    self.avg_rtt.get().map_or(-1.0, |d| d.as_secs_f64() * 1e3),
                ),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{ParamValue, Params};
    use crate::estimators::monitor::testing::{sent_packet, Bottleneck, Driver};
    use crate::testing::{ack_with_rtt, at, value};

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// `v` Mbit/s of 2^20 bit.
    fn mbit(v: f64) -> Rate {
        Rate::from_bits_per_sec(v * MBIT)
    }

    fn mbits(rate: Rate) -> f64 {
        rate.bits_per_sec() / MBIT
    }

    fn vivace_with(seed: u64, start: f64, latency: f64) -> Vivace {
        let config = ControllerConfig {
            seed,
            ..ControllerConfig::default()
        };
        let mut params = VivaceParams {
            start_rate: mbit(start),
            ..VivaceParams::default()
        };
        params.utility.latency = latency;
        Vivace::new(&config, params)
    }

    /// An MI result at `rate` Mbit/s sent at that rate, with `loss` and an RTT gradient.
    fn result(rate: f64, loss: f64, rtt_gradient: f64) -> MonitorResult {
        MonitorResult {
            rate: mbit(rate),
            send_rate: mbit(rate),
            loss,
            mean_rtt: Some(ms(10)),
            rtt_gradient,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn utility_values() {
        // PCC Vivace: u = x^0.9 - 900 x dRTT/dT - 11.35 x L, x in Mbit/s of 2^20 bit
        // (PCC-Uspace kMegabit). x = 10: 10^0.9 = 7.943282347242815; 5 % loss costs
        // 11.35 x 10 x 0.05 = 5.675; a gradient of 0.01 costs 900 x 10 x 0.01 = 90.
        let u = Utility::default();
        let x09 = 7.943_282_347_242_815;
        assert!(close(u.value(&result(10.0, 0.0, 0.0)), x09));
        assert!(close(u.value(&result(10.0, 0.05, 0.0)), x09 - 5.675));
        assert!(close(u.value(&result(10.0, 0.0, 0.01)), x09 - 90.0));
        assert!(close(u.value(&result(10.0, 0.0, -0.01)), x09 + 90.0));
        // A gradient below the 0.01 tolerance is noise (WebRTC's Vivace port).
        assert!(close(u.value(&result(10.0, 0.0, 0.0099)), x09));
        assert!(close(u.value(&result(10.0, 0.0, -0.0099)), x09));
        // b = 0: the loss-only PCC of the FQ-detection fallback (PCC_CLASSIC's form).
        let loss_only = Utility {
            latency: 0.0,
            ..Utility::default()
        };
        assert!(close(
            loss_only.value(&result(10.0, 0.05, 0.01)),
            x09 - 5.675
        ));
        // x is the measured send rate, not the rate asked for.
        let mut r = result(10.0, 0.0, 0.0);
        r.send_rate = mbit(1.0);
        assert!(close(u.value(&r), 1.0));
    }

    #[test]
    fn starting_doubles_while_utility_rises_then_probes_at_half() {
        // pcc_sender.cpp OnUtilityAvailable, EnterProbing: in STARTING double each MI while the
        // utility rises; on a fall, PROBING at half the rate. Exact in 2^20 bit units.
        let mut c = vivace_with(1, 2.0, 900.0);
        for k in 0..4 {
            let x = 2.0 * 2f64.powi(k);
            assert_eq!(mbits(c.rate), x);
            c.on_result(&result(x, 0.0, 0.0));
        }
        assert_eq!((mbits(c.rate), c.mode.name()), (32.0, "starting"));
        // 32 Mbit/s with its queue growing: utility 32^0.9 - 900 x 32 x 0.2 < 16^0.9.
        c.on_result(&result(32.0, 0.0, 0.2));
        assert_eq!((mbits(c.rate), c.mode.name()), (16.0, "probing"));
    }

    #[test]
    fn starting_ends_at_once_when_the_rtt_inflates_by_thirty_percent() {
        // pcc_sender.cpp OnCongestionEvent: RTT > 1.3 x MI-start RTT in STARTING -> immediate
        // PROBING at half the rate; the RTT is PCC's average, (3 old + sample) / 4. From 10 ms, a
        // 22 ms sample makes it exactly 13 ms (not above), a following 16 ms sample 13.75 ms.
        let mut c = vivace_with(1, 8.0, 900.0);
        c.on_ack(at(10), &ack_with_rtt(1500, at(0), ms(10)));
        c.on_sent(at(10), &sent_packet(1));
        c.on_sent(at(20), &sent_packet(2));
        c.on_ack(at(32), &ack_with_rtt(1500, at(10), ms(22)));
        assert_eq!(c.mode.name(), "starting");
        c.on_ack(at(33), &ack_with_rtt(1500, at(11), ms(16)));
        assert_eq!((mbits(c.rate), c.mode.name()), (4.0, "probing"));
    }

    /// A controller probing around `center` Mbit/s with an RTT sample taken.
    fn probing(seed: u64, center: f64) -> Vivace {
        let mut c = vivace_with(seed, center, 900.0);
        c.on_ack(at(0), &ack_with_rtt(1500, at(0), ms(10)));
        c.enter_probing(mbit(center));
        c
    }

    #[test]
    fn probes_two_pairs_at_plus_and_minus_five_percent_in_random_order() {
        // pcc_sender.cpp MaybeSetSendingRate: two groups of two MIs at x(1 +/- 5 %), random
        // order per group; then MIs at x until the decision.
        let mut orders = Vec::new();
        for seed in 0..16 {
            let mut c = probing(seed, 10.0);
            let mut rates = Vec::new();
            for i in 0..5 {
                c.open_interval(at(100 * i));
                rates.push(mbits(c.sending));
            }
            assert_eq!(c.queue.useful_pending(), 4);
            for pair in rates[..4].chunks(2) {
                let mut sorted = pair.to_vec();
                sorted.sort_by(f64::total_cmp);
                assert!(close(sorted[0], 9.5) && close(sorted[1], 10.5), "{rates:?}");
            }
            assert_eq!(rates[4], 10.0);
            orders.push(rates[0] > rates[1]);
        }
        assert!(orders.contains(&true) && orders.contains(&false));
    }

    #[test]
    fn a_decision_needs_both_pairs_to_agree() {
        // pcc_sender.cpp CanMakeDecision: no decision unless all groups agree. Pair 1 favours
        // the higher rate, pair 2 (loss at the higher rate) the lower one: no change, probe
        // again.
        let mut c = probing(1, 10.0);
        for r in [
            result(10.5, 0.0, 0.0),
            result(9.5, 0.0, 0.0),
            result(9.5, 0.0, 0.0),
            result(10.5, 0.1, 0.0),
        ] {
            c.on_result(&r);
        }
        assert_eq!((mbits(c.rate), c.mode.name()), (10.0, "probing"));
        // Both favour the higher rate: the gradient (10.5^0.9 - 9.5^0.9) / 1 = 0.716 per
        // Mbit/s asks for 0.716 Mbit/s, the bound allows 5 % of 10: +0.5 Mbit/s.
        for r in [
            result(9.5, 0.0, 0.0),
            result(10.5, 0.0, 0.0),
            result(10.5, 0.0, 0.0),
            result(9.5, 0.0, 0.0),
        ] {
            c.on_result(&r);
        }
        assert!(close(mbits(c.rate), 10.5), "{}", mbits(c.rate));
        assert_eq!(c.mode.name(), "decision_made");
        assert_eq!(c.stepper.allowance, 1);
    }

    #[test]
    fn the_amplifier_grows_with_each_step_the_same_way_and_resets_on_a_flip() {
        // pcc_sender.cpp ComputeRateChange: change x (a + 1) for a < 3, x (2a - 2) for a < 6,
        // ...; a grows by 0.5 below 3, by 1 from 3; a flip resets a and the allowance and fills
        // the swing buffer, which the next same-way steps drain before a grows again. A
        // gradient of 1 per Mbit/s at 1000 Mbit/s stays inside the 5 % bound: exact multiples
        // of 1 Mbit/s.
        let mut s = Stepper::default();
        let up = Direction::Increase;
        let rate = mbit(1000.0);
        let steps: Vec<f64> = (0..9).map(|_| s.change(1.0, up, rate) / MBIT).collect();
        assert_eq!(steps, [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 6.0, 8.0]);
        s.allowance = 3;
        assert_eq!(s.change(1.0, Direction::Decrease, rate) / MBIT, -1.0);
        assert_eq!((s.amplifier, s.allowance, s.swing), (0.0, 0, 1));
        let after: Vec<f64> = (0..4)
            .map(|_| s.change(1.0, Direction::Decrease, rate) / MBIT)
            .collect();
        assert_eq!(after, [-1.0, -1.0, -1.5, -2.0]);
        // Two flips in a row leave two swings to drain; the buffer holds at most 2.
        for d in [up, Direction::Decrease, up] {
            s.change(1.0, d, rate);
        }
        assert_eq!(s.swing, 2);
        assert_eq!(amplification(9.0), 31.0);
    }

    #[test]
    fn the_change_bound_widens_by_six_percent_each_time_it_clips() {
        // PCC Vivace dynamic change boundary, pcc_sender.cpp ComputeRateChange constants:
        // 5 % + 6 % x allowance of the rate; allowance + 1 per clip, - 1 otherwise.
        let mut s = Stepper::default();
        let rate = mbit(100.0);
        let steps: Vec<f64> = (0..3)
            .map(|_| s.change(100.0, Direction::Increase, rate) / MBIT)
            .collect();
        assert!(close(steps[0], 5.0) && close(steps[1], 11.0) && close(steps[2], 17.0));
        assert_eq!(s.allowance, 3);
        s.amplifier = 0.0;
        let small = s.change(1.0, Direction::Increase, rate) / MBIT;
        assert_eq!((small, s.allowance), (1.0, 2));
    }

    #[test]
    fn steps_are_at_least_half_a_megabit_and_the_rate_at_least_two() {
        // pcc_sender.cpp kMinimumRateChange, kMinSendingRate: minimum change 0.5 Mbit
        // (2^19 bit/s), minimum rate 2 Mbit (2 x 2^20 bit/s).
        let mut s = Stepper::default();
        assert_eq!(
            s.change(1e-6, Direction::Increase, mbit(10.0)),
            MIN_CHANGE_BPS
        );
        let mut c = probing(1, 2.2);
        for r in [(2.31, 0.2), (2.09, 0.0), (2.09, 0.0), (2.31, 0.2)] {
            c.on_result(&result(r.0, r.1, 0.0));
        }
        assert_eq!(
            (c.rate.bits_per_sec(), c.mode.name()),
            (MIN_RATE_BPS, "decision_made")
        );
        // Still falling from 2.2 to 2: held at the minimum; then two MIs at one rate give no
        // gradient: back to probing.
        c.on_result(&result(2.0, 0.0, 0.0));
        assert_eq!(
            (c.rate.bits_per_sec(), c.mode.name()),
            (MIN_RATE_BPS, "decision_made")
        );
        c.on_result(&result(2.0, 0.0, 0.0));
        assert_eq!(
            (c.rate.bits_per_sec(), c.mode.name()),
            (MIN_RATE_BPS, "probing")
        );
        assert_eq!(
            vivace_with(1, 0.5, 900.0).pacing_rate(),
            Some(Rate::from_bits_per_sec(MIN_RATE_BPS))
        );
    }

    #[test]
    fn decision_made_steps_on_until_the_direction_flips() {
        // pcc_sender.cpp OnUtilityAvailable, EnterProbing: DECISION_MADE moves by the gradient
        // between consecutive MIs; when the step direction flips, PROBING around the rate
        // stepped back by min(rounds x 2 %, 10 %).
        let mut c = probing(1, 10.0);
        for r in [(10.5, 0.0), (9.5, 0.0), (9.5, 0.0), (10.5, 0.0)] {
            c.on_result(&result(r.0, r.1, 0.0));
        }
        assert!(close(mbits(c.rate), 10.5));
        // The utility at 10.5 against the probes' mean at 10 still rises: another step up,
        // amplified x 1.5 (a = 0.5), inside the bound of 11 % of 10.5 (allowance 1).
        c.on_result(&result(10.5, 0.0, 0.0));
        let mean = (10.5f64.powf(0.9) + 9.5f64.powf(0.9)) / 2.0;
        let expected = 10.5 + 1.5 * (10.5f64.powf(0.9) - mean) / 0.5;
        assert!(
            close(mbits(c.rate), expected),
            "{} vs {expected}",
            mbits(c.rate)
        );
        assert_eq!(c.mode.name(), "decision_made");
        // Now a loss at the new rate: the direction flips after 2 rounds, back 4 %.
        let now = mbits(c.rate);
        c.on_result(&result(now, 0.1, 0.0));
        assert_eq!(c.mode.name(), "probing");
        assert!(close(mbits(c.rate), now / 1.04), "{}", mbits(c.rate));
        assert_eq!((c.stepper.amplifier, c.stepper.swing), (0.0, 1));
    }

    /// Pacing rates of a 5 s run on a 20 Mbit/s, 20 ms, 50-packet bottleneck.
    fn run(seed: u64, latency: f64) -> (Vec<f64>, Vivace) {
        let mut c = vivace_with(seed, 2.0, latency);
        let mut d = Driver::default();
        let mut link = Bottleneck::new(Rate::from_bits_per_sec(20e6), ms(20), 50);
        d.run(&mut c, at(5000), &mut |now| link.fate(now));
        (d.rates, c)
    }

    #[test]
    fn the_same_seed_gives_the_same_run() {
        // Randomness only from ChaCha8 seeded by ControllerConfig::seed (DESIGN.md).
        let (a, c) = run(7, 900.0);
        assert_eq!(a, run(7, 900.0).0);
        assert_ne!(a, run(8, 900.0).0, "the probing order depends on the seed");
        assert!(value(&c, "avg_rtt_ms") > 0.0);
    }

    #[test]
    fn info_reads_and_checks_the_parameters() {
        let mut p = Params::new();
        p.insert("latency_coefficient".into(), ParamValue::Number(0.0));
        p.insert("start_rate_bps".into(), ParamValue::Number(4e6));
        let c = INFO.instantiate(&p, &ControllerConfig::default()).unwrap();
        assert_eq!(c.pacing_rate(), Some(Rate::from_bits_per_sec(4e6)));
        for (name, bad) in [
            ("latency_coefficient", -1.0),
            ("loss_coefficient", -1.0),
            ("exponent", 1.5),
            ("rtt_gradient_threshold", -0.1),
            ("start_rate_bps", 1e2),
        ] {
            let mut p = Params::new();
            p.insert(name.into(), ParamValue::Number(bad));
            let e = INFO.instantiate(&p, &ControllerConfig::default()).err();
            assert!(e.unwrap().to_string().contains(name));
        }
        // A start rate below the minimum (fq_switch hands over the probe's goodput) starts at
        // the minimum rate (pcc_sender.cpp: 2 Mbit/s).
        let mut p = Params::new();
        p.insert("start_rate_bps".into(), ParamValue::Number(1e6));
        let c = INFO.instantiate(&p, &ControllerConfig::default()).unwrap();
        assert_eq!(c.pacing_rate(), Some(Rate::from_bits_per_sec(MIN_RATE_BPS)));
    }

    #[test]
    fn without_startup_it_begins_probing_around_the_start_rate() {
        // After fq_switch's probe, PCC-Uspace enters PROBING at the probe's goodput
        // (pccclient.cpp wait_for_new_result, set_pcc_classic); the first MI is a probe at
        // x(1 +/- 5 %).
        let mut p = Params::new();
        p.insert("start_rate_bps".into(), ParamValue::Number(10e6));
        p.insert("startup".into(), ParamValue::Bool(false));
        let c = INFO.instantiate(&p, &ControllerConfig::default()).unwrap();
        assert_eq!(c.state().mode, "probing");
    }

    #[test]
    fn pcc_is_vivace_without_the_latency_term() {
        // FQ-detect §III-C's fallback: PCC-Uspace PCC_CLASSIC, u = x^0.9 - c x L.
        assert_eq!(PCC_PARAMS[0].name, "latency_coefficient");
        assert_eq!(PCC_PARAMS[0].default, "0");
        assert_eq!(&PCC_PARAMS[1..], &PARAMS[1..]);
        let c = PCC_INFO
            .instantiate(&Params::new(), &ControllerConfig::default())
            .unwrap();
        assert_eq!(c.state().mode, "starting");
    }
}
