//! `fq_switch`: detect fair queuing at flow start-up, then hand the connection to one
//! controller if the bottleneck is a fair queue and to another if not.
//!
//! Source: M. Bachl, J. Fabini, T. Zseby, "Detecting Fair Queuing for Better Congestion Control"
//! (arXiv:2010.08362, 2020; FQ-detect), §III: the start-up probe ([`probe`]), then "if FQ is used
//! change to a delay-based CCA or revert to a loss-based CCA otherwise" (§III step 2), by default
//! the paper's pair: `delay_fq` (§III-B) and the loss-based PCC, `pcc` (§III-C: "we use the
//! algorithm PCC"; the reference code, `src/app/pccclient.cpp`, falls back to its loss-only
//! utility, PCC_CLASSIC: `vivace`'s rate control without the latency term). Either may be any
//! registered controller (`fq` and `fifo`): the registry hands [`build`] its list of controllers
//! ([`info`] takes the constructor that does so), so this module finds them by name without
//! depending on the registry.
//!
//! The probe needs a second subflow over the same path, a flow of its own to the bottleneck:
//! [`Controller::extra_subflows`] asks the transport for it while the probe runs, and
//! [`Controller::subflow_controller`] gives its controller, which shares the probe's state.
//! The transport closes it once the probe has decided and resends what it had in flight on
//! the first subflow.
//!
//! Hand-over: the chosen controller is built fresh; if it takes `start_rate_bps` and
//! `startup` parameters (`delay_fq`, `vivace`, `pcc`) it starts at the goodput both legs had in the
//! deciding round without a start-up phase, as the reference code sets flow 1's rate to the
//! sum of both flows' goodputs (pccclient.cpp `wait_for_new_result`); any other starts as on a
//! new connection.
//!
//! Re-detection (`redetect`, beyond the paper: its §VII proposes measuring again "every 5 or
//! 10 seconds"): that long after each decision the probe runs again, its slow leg starting at
//! a third of the rate the connection had (so both legs together start at it) and doubling
//! from there; the running controller pauses meanwhile. If the decision is the same it
//! resumes; otherwise the other controller takes over as above.

pub mod probe;

use crate::controller::{
    AckEvent, BuildFn, CongestionEvent, CongestionKind, Controller, ControllerConfig,
    ControllerInfo, ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec,
    ParamValue, Params, Rate, SentPacket,
};
use crate::estimators::monitor::RATE_BASED_CWND;
use probe::{Outcome, Probe, ProbeConfig};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// Rounds after which the probe gives up (a path it cannot saturate: 2^40 x the start rate).
const MAX_ROUNDS: u32 = 40;
/// Traced values of the last decision (NaN before the first): 1 if a fair queue was
/// detected, else 0; eq. (1)'s loss ratio; the fraction of each leg's bytes lost in the
/// deciding round; decisions so far.
pub const FQ_DETECTED: &str = "fq_detected";
/// See [`FQ_DETECTED`].
pub const LOSS_RATIO: &str = "loss_ratio";
/// See [`FQ_DETECTED`].
pub const SLOW_LEG_LOSS: &str = "probe_slow_loss";
/// See [`FQ_DETECTED`].
pub const FAST_LEG_LOSS: &str = "probe_fast_loss";
/// See [`FQ_DETECTED`].
pub const DETECTIONS: &str = "detections";
/// Parameters a hand-over sets when the chosen controller has them.
const START_RATE: &str = "start_rate_bps";
const STARTUP: &str = "startup";

/// Parameters `fq_switch` accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "fq",
        kind: ParamKind::Name,
        default: "delay_fq",
        doc: "controller when a fair queue is detected (FQ-detect §III: delay-based)",
    },
    ParamSpec {
        name: "fifo",
        kind: ParamKind::Name,
        default: "pcc",
        doc: "controller when none is detected (FQ-detect §III-C: loss-based PCC, the \
              reference's PCC_CLASSIC)",
    },
    ParamSpec {
        name: "start_rate_bps",
        kind: ParamKind::Number,
        default: "1000000",
        doc: "the probe's slow leg's first rate, bit/s; the fast leg's is twice it \
              (PCC-Uspace MIN_RATE: 1 Mbit/s)",
    },
    ParamSpec {
        name: "jitter",
        kind: ParamKind::Number,
        default: "0.5",
        doc: "each probe gap is scaled by a factor uniform in [1 - jitter, 1 + jitter], 0 to \
              0.9 (FQ-detect §VII: [0.5, 1.5]); 0 paces exactly",
    },
    ParamSpec {
        name: "cutoff",
        kind: ParamKind::Number,
        default: "1.5",
        doc: "eq. (1) loss ratio above which the bottleneck is a fair queue (FQ-detect §III-A)",
    },
    ParamSpec {
        name: "redetect",
        kind: ParamKind::Duration,
        default: "0s",
        doc: "run the probe again this long after each decision; 0s: never (FQ-detect §VII \
              proposes every 5 or 10 s)",
    },
];

/// Registry entry for `fq_switch`, built by `build`: a function that calls [`build`] with the
/// controllers `fq_switch` may hand over to.
pub const fn info(build: BuildFn) -> ControllerInfo {
    ControllerInfo {
        name: "fq_switch",
        summary: "fair-queuing detection at start-up with two subflows, then delay-based under FQ \
              and loss-based otherwise (FQ-detect, Bachl et al.)",
        params: PARAMS,
        one_way_delay: false,
        runtime_params: &[],
        subflows: true,
        rate_based: true,
        dccp_only: false,
        build,
    }
}

/// The choice `fq_switch` makes, and how it probes.
#[derive(Clone, Debug)]
pub struct SwitchConfig {
    /// Controller under fair queuing.
    pub fq: &'static ControllerInfo,
    /// Controller otherwise.
    pub fifo: &'static ControllerInfo,
    /// The probe (its start rate is the first probe's).
    pub probe: ProbeConfig,
    /// Time from a decision to the next probe, if it probes again.
    pub redetect: Option<Duration>,
}

/// The controller of `catalog` named by `param` that `fq_switch` may hand over to: one that
/// needs no subflows (so not itself) and is not a DCCP CCID (which runs on the DCCP-like
/// transport only).
fn inner(
    catalog: &'static [ControllerInfo],
    reader: &ParamReader,
    param: &str,
    default: &str,
) -> Result<&'static ControllerInfo, ParamError> {
    let name = reader.name(param, default);
    let accepted = || {
        catalog
            .iter()
            .filter(|c| !c.subflows && !c.dccp_only)
            .map(|c| c.name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match catalog.iter().find(|c| c.name == name) {
        Some(info) if !info.subflows && !info.dccp_only => Ok(info),
        _ => Err(ParamError {
            name: param.to_string(),
            message: format!(
                "`{name}` is not a controller it can hand over to; accepted: {}",
                accepted()
            ),
        }),
    }
}

/// Builds `fq_switch`, handing over to controllers of `catalog` (the registry's list).
pub fn build(
    catalog: &'static [ControllerInfo],
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    let start = reader.number_in("start_rate_bps", 1e6, 1e3, 1e11)?;
    let redetect = reader.duration_in(
        "redetect",
        Duration::ZERO,
        Duration::ZERO,
        Duration::from_secs(3600),
    )?;
    let switch = SwitchConfig {
        fq: inner(catalog, reader, "fq", "delay_fq")?,
        fifo: inner(catalog, reader, "fifo", "pcc")?,
        probe: ProbeConfig {
            start_rate: Rate::from_bits_per_sec(start),
            jitter: reader.number_in("jitter", 0.5, 0.0, 0.9)?,
            cutoff: reader.number_in("cutoff", 1.5, 1.0, 2.0)?,
            max_rounds: MAX_ROUNDS,
            packet_bytes: config.max_datagram_size,
            seed: config.seed,
        },
        redetect: (!redetect.is_zero()).then_some(redetect),
    };
    Ok(Box::new(FqSwitch::new(switch, *config)))
}

/// Locks the probe; a panic elsewhere cannot leave it half-updated in a way that matters
/// here, so a poisoned lock is used as it is.
fn lock(probe: &Mutex<Probe>) -> MutexGuard<'_, Probe> {
    probe.lock().unwrap_or_else(|e| e.into_inner())
}

/// Probe events of one leg, shared by the first subflow (leg 0, the slow one) and the second
/// (leg 1, the fast one).
fn probe_sent(probe: &Mutex<Probe>, leg: usize, now: Instant, packet: &SentPacket) {
    lock(probe).on_sent(leg, now, packet.bytes);
}

fn probe_ack(probe: &Mutex<Probe>, leg: usize, now: Instant, ack: &AckEvent) {
    lock(probe).on_ack(
        leg,
        now,
        ack.largest_acked_sent_time,
        ack.acked_packets,
        (ack.smoothed_rtt, ack.rtt_sample),
    );
}

fn probe_loss(probe: &Mutex<Probe>, leg: usize, now: Instant, event: &CongestionEvent) {
    // A CE mark is not a loss: its packets are acknowledged later.
    if event.kind != CongestionKind::EcnCe {
        lock(probe).on_loss(leg, now, event.largest_sent_time, event.lost_packets);
    }
}

/// The probe's fast leg: the controller of the second subflow.
struct FastLeg {
    probe: Arc<Mutex<Probe>>,
}

impl Controller for FastLeg {
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        probe_sent(&self.probe, 1, now, packet);
    }

    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        probe_ack(&self.probe, 1, now, ack);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        probe_loss(&self.probe, 1, now, event);
    }

    fn cwnd(&self) -> u64 {
        RATE_BASED_CWND
    }

    fn pacing_rate(&self) -> Option<Rate> {
        Some(lock(&self.probe).pacing_rate(1))
    }

    fn state(&self) -> ControllerState {
        ControllerState {
            mode: "fq_probe",
            values: vec![(
                "probe_rate_bps",
                lock(&self.probe).nominal_rate(1).bits_per_sec(),
            )],
        }
    }
}

/// The `fq_switch` controller (the first subflow's).
pub struct FqSwitch {
    switch: SwitchConfig,
    config: ControllerConfig,
    probe: Option<Arc<Mutex<Probe>>>,
    running: Option<Box<dyn Controller>>,
    last: Option<Outcome>,
    detections: u32,
    next_probe: Option<Instant>,
    srtt: Option<Duration>,
    delivered: Option<Rate>,
}

impl FqSwitch {
    /// A connection that starts by probing.
    pub fn new(switch: SwitchConfig, config: ControllerConfig) -> Self {
        let probe = Probe::new(switch.probe);
        FqSwitch {
            switch,
            config,
            probe: Some(Arc::new(Mutex::new(probe))),
            running: None,
            last: None,
            detections: 0,
            next_probe: None,
            srtt: None,
            delivered: None,
        }
    }

    /// The last decision, if there was one.
    pub fn outcome(&self) -> Option<Outcome> {
        self.last
    }

    fn undecided_probe(&self) -> Option<&Arc<Mutex<Probe>>> {
        self.probe.as_ref().filter(|p| lock(p).outcome().is_none())
    }

    /// After an event: hands over once the probe has decided, or starts the next probe when
    /// re-detection is due.
    fn settle(&mut self, now: Instant) {
        if let Some(outcome) = self.probe.as_ref().and_then(|p| lock(p).outcome()) {
            self.hand_over(now, outcome);
        } else if self.probe.is_none() && self.next_probe.is_some_and(|t| now >= t) {
            self.probe_again();
        }
    }

    fn hand_over(&mut self, now: Instant, outcome: Outcome) {
        let gave_up = outcome.loss_ratio.is_nan();
        let same = self
            .last
            .is_some_and(|l| l.fair_queuing == outcome.fair_queuing);
        // A re-detection that gave up (nothing lost in 40 rounds: an application-limited
        // connection) keeps the previous decision and controller.
        let keep = self.running.is_some() && gave_up;
        // The same decision resumes the paused controller unless it can start at a rate: then
        // it starts afresh at the probe's goodput, so its measurements do not mix the probe's
        // losses and RTTs with its own from before the pause.
        let resume = self.running.is_some() && same && !self.takes_start_rate(&outcome);
        if !keep && !resume {
            self.running = Some(self.build_inner(&outcome));
        }
        if !keep {
            self.last = Some(outcome);
        }
        self.detections += 1;
        self.probe = None;
        self.next_probe = self.switch.redetect.map(|d| now + d);
    }

    fn inner_for(&self, outcome: &Outcome) -> &'static ControllerInfo {
        if outcome.fair_queuing {
            self.switch.fq
        } else {
            self.switch.fifo
        }
    }

    fn takes_start_rate(&self, outcome: &Outcome) -> bool {
        self.inner_for(outcome)
            .params
            .iter()
            .any(|p| p.name == START_RATE)
    }

    /// The controller for `outcome`, starting at the probe's goodput where it can.
    fn build_inner(&self, outcome: &Outcome) -> Box<dyn Controller> {
        let info = self.inner_for(outcome);
        let mut params = Params::new();
        if self.takes_start_rate(outcome) {
            let bps = outcome.goodput.bits_per_sec().clamp(1e3, 1e12);
            params.insert(START_RATE.into(), ParamValue::Number(bps));
        }
        if info.params.iter().any(|p| p.name == STARTUP) {
            params.insert(STARTUP.into(), ParamValue::Bool(false));
        }
        info.instantiate(&params, &self.config)
            .expect("a registered controller builds with its own start parameters")
    }

    /// Re-detection: a new probe whose two legs together start at the rate the connection
    /// delivers (its latest delivery-rate sample; the controller's own rate may be far above
    /// what the path or the sending host carries).
    fn probe_again(&mut self) {
        let current = self
            .delivered
            .or_else(|| {
                self.running.as_ref().and_then(|c| {
                    c.pacing_rate()
                        .or_else(|| self.srtt.map(|s| Rate::from_bytes_over(c.cwnd(), s)))
                })
            })
            .unwrap_or(self.switch.probe.start_rate.scaled(3.0));
        let probe = ProbeConfig {
            start_rate: current.scaled(1.0 / 3.0),
            seed: self
                .switch
                .probe
                .seed
                .wrapping_add(u64::from(self.detections)),
            ..self.switch.probe
        };
        self.probe = Some(Arc::new(Mutex::new(Probe::new(probe))));
        self.next_probe = None;
    }

    fn decision_values(&self, values: &mut Vec<(&'static str, f64)>) {
        let (fq, ratio, slow, fast) =
            self.last
                .map_or((f64::NAN, f64::NAN, f64::NAN, f64::NAN), |o| {
                    (
                        f64::from(u8::from(o.fair_queuing)),
                        o.loss_ratio,
                        o.leg_loss[0],
                        o.leg_loss[1],
                    )
                });
        values.extend([
            (FQ_DETECTED, fq),
            (LOSS_RATIO, ratio),
            (SLOW_LEG_LOSS, slow),
            (FAST_LEG_LOSS, fast),
            (DETECTIONS, f64::from(self.detections)),
        ]);
    }
}

impl Controller for FqSwitch {
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        match (&self.probe, &mut self.running) {
            (Some(p), _) => probe_sent(p, 0, now, packet),
            (None, Some(c)) => c.on_sent(now, packet),
            (None, None) => {}
        }
        self.settle(now);
    }

    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        self.srtt = ack.smoothed_rtt.or(self.srtt);
        self.delivered = ack.rate.and_then(|r| r.delivery_rate()).or(self.delivered);
        match (&self.probe, &mut self.running) {
            (Some(p), _) => probe_ack(p, 0, now, ack),
            (None, Some(c)) => c.on_ack(now, ack),
            (None, None) => {}
        }
        self.settle(now);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        match (&self.probe, &mut self.running) {
            (Some(p), _) => probe_loss(p, 0, now, event),
            (None, Some(c)) => c.on_congestion(now, event),
            (None, None) => {}
        }
        self.settle(now);
    }

    fn on_app_limited(&mut self, now: Instant) {
        if let (None, Some(c)) = (&self.probe, &mut self.running) {
            c.on_app_limited(now);
        }
    }

    fn on_idle(&mut self, now: Instant) {
        if let (None, Some(c)) = (&self.probe, &mut self.running) {
            c.on_idle(now);
        }
    }

    fn cwnd(&self) -> u64 {
        match (&self.probe, &self.running) {
            (None, Some(c)) => c.cwnd(),
            _ => RATE_BASED_CWND,
        }
    }

    fn ssthresh(&self) -> Option<u64> {
        match (&self.probe, &self.running) {
            (None, Some(c)) => c.ssthresh(),
            _ => None,
        }
    }

    fn pacing_rate(&self) -> Option<Rate> {
        match (&self.probe, &self.running) {
            (Some(p), _) => Some(lock(p).pacing_rate(0)),
            (None, Some(c)) => c.pacing_rate(),
            (None, None) => None,
        }
    }

    fn in_slow_start(&self) -> bool {
        match (&self.probe, &self.running) {
            (None, Some(c)) => c.in_slow_start(),
            _ => false,
        }
    }

    fn state(&self) -> ControllerState {
        let mut state = match (&self.probe, &self.running) {
            (Some(p), _) => {
                let p = lock(p);
                ControllerState {
                    mode: "fq_probe",
                    values: vec![
                        ("probe_rate_bps", p.nominal_rate(0).bits_per_sec()),
                        ("probe_rounds", f64::from(p.rounds())),
                    ],
                }
            }
            (None, Some(c)) => c.state(),
            (None, None) => ControllerState {
                mode: "fq_probe",
                values: Vec::new(),
            },
        };
        self.decision_values(&mut state.values);
        state
    }

    fn extra_subflows(&self) -> usize {
        usize::from(self.undecided_probe().is_some())
    }

    fn subflow_controller(&mut self, index: usize) -> Option<Box<dyn Controller>> {
        let probe = self.undecided_probe().filter(|_| index == 1)?;
        Some(Box::new(FastLeg {
            probe: Arc::clone(probe),
        }))
    }
}
