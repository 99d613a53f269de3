//! The fair-queuing detection paper (M. Bachl, J. Fabini, T. Zseby, "Detecting Fair Queuing
//! for Better Congestion Control", arXiv:2010.08362, 2020; FQ-detect), §VI, and one experiment
//! beyond it.
//!
//! - Figures 2-3 (`scenarios/fq-detect/fig2_3_single.toml`): one flow, Cubic or `delay_fq`,
//!   10 Mbit/s, 10 ms RTT, 100-packet FIFO, 30 s.
//! - Figures 4-7 (`scenarios/fq-detect/fig4_7_competition.toml`): Cubic from 0 s and
//!   `delay_fq` from 5 s on 50 Mbit/s, 10 ms, 100 packets, FIFO (Figs. 4-5) and fair queuing
//!   (Figs. 6-7); shares and RTTs over 10-30 s, once the second flow has settled.
//! - §VI-C accuracy, §VII phase-locking and §VI-D throughput and delay: [`accuracy`].
//! - Re-detection (`scenarios/fq-detect/redetect.toml`): the bottleneck turns from a fair queue
//!   into a FIFO at 30 s; `fq_switch` probing again every 5 s, or never, against Cubic.
//!
//! A flow's share is its goodput over the bottleneck's rate; the RTTs are the flow's RTT
//! samples over the measurement window.

pub mod accuracy;

use super::traces::{column, rate_between};
use super::{fmt, point_value, run_embedded, Claim, Figure, PaperInfo, Progress, Report};
use crate::metrics::{FlowMetrics, Summary};
use crate::report::Table;
use crate::runner::RunOutput;
use kleinrock_sim::trace::Series;

/// Registry entry.
pub const INFO: PaperInfo = PaperInfo {
    name: "fq-detect",
    title: "Detecting Fair Queuing for Better Congestion Control (§VI-VII, Figures 2-7)",
    scenarios: &[
        "scenarios/fq-detect/accuracy.toml",
        "scenarios/fq-detect/accuracy_cross.toml",
        "scenarios/fq-detect/fig2_3_single.toml",
        "scenarios/fq-detect/fig4_7_competition.toml",
        "scenarios/fq-detect/phase_locking.toml",
        "scenarios/fq-detect/redetect.toml",
        "scenarios/fq-detect/systematic.toml",
    ],
    run,
};

const FIG2_3: &str = include_str!("../../../../../scenarios/fq-detect/fig2_3_single.toml");
const FIG4_7: &str = include_str!("../../../../../scenarios/fq-detect/fig4_7_competition.toml");
const REDETECT: &str = include_str!("../../../../../scenarios/fq-detect/redetect.toml");

/// Figs. 4-5 bound (issue 7): the delay-based flow's share against Cubic at a FIFO, %.
const STARVED_BELOW: f64 = 20.0;
/// Figs. 6-7 bounds: its share at a fair queue, %, and its mean RTT over Cubic's.
const FAIR_SHARE: (f64, f64) = (40.0, 60.0);
const RTT_FRACTION: f64 = 0.5;
/// Re-detection: the loss-based controller's share against Cubic after the change, %, and
/// the periods within which it must take over.
const REGAINED_AT_LEAST: f64 = 40.0;
const PERIODS: f64 = 2.0;

/// Runs every experiment and builds the report.
pub fn run(progress: Progress) -> Result<Report, String> {
    let (accuracy, phase_locking) = accuracy::accuracy_and_phase_locking(progress)?;
    Ok(Report {
        paper: INFO.name.to_string(),
        title: INFO.title.to_string(),
        figures: vec![
            fig2_3(progress)?,
            fig4_7(progress)?,
            accuracy,
            accuracy::accuracy_cross(progress)?,
            phase_locking,
            accuracy::systematic(progress)?,
            redetection(progress)?,
        ],
    })
}

/// The flow called `name` in run `s`.
fn flow<'s>(s: &'s Summary, name: &str) -> Result<&'s FlowMetrics, String> {
    s.flows
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| format!("no flow `{name}`"))
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| fmt(v, 1))
}

/// The run whose first flow is called `name`.
fn run_of<'o>(outs: &'o [RunOutput], name: &str) -> Result<&'o Summary, String> {
    outs.iter()
        .map(|o| &o.summary)
        .find(|s| s.flows[0].name == name)
        .ok_or_else(|| format!("no run of `{name}`"))
}

/// Figures 2-3: Cubic and the delay-based controller alone.
pub fn fig2_3(progress: Progress) -> Result<Figure, String> {
    let (_, outs) = run_embedded("scenarios/fq-detect/fig2_3_single.toml", FIG2_3, progress)?;
    let mut t = Table::new(&["controller", "goodput Mbps", "RTT mean ms", "RTT p95 ms"]);
    let mut csv = String::from("cca,goodput_mbps,rtt_mean_ms,rtt_p95_ms\n");
    for o in &outs {
        let f = &o.summary.flows[0];
        t.row(vec![
            f.name.clone(),
            fmt(f.goodput_bps / 1e6, 2),
            ms(f.rtt_mean_ms),
            ms(f.rtt_p95_ms),
        ]);
        csv.push_str(&format!(
            "{},{},{},{}\n",
            f.name,
            f.goodput_bps / 1e6,
            f.rtt_mean_ms.unwrap_or(f64::NAN),
            f.rtt_p95_ms.unwrap_or(f64::NAN)
        ));
    }
    let mut table = t.render();
    table.push('\n');
    let cubic = &run_of(&outs, "Cubic")?.flows[0];
    let delay = &run_of(&outs, "delay_fq")?.flows[0];
    let cubic_rtt = cubic.rtt_mean_ms.unwrap_or(0.0);
    let delay_p95 = delay.rtt_p95_ms.unwrap_or(f64::MAX);
    let share = delay.goodput_bps / cubic.goodput_bps.max(1.0);
    Ok(Figure {
        id: "Fig. 2-3".into(),
        title: "one flow, 10 Mbit/s, 10 ms RTT, 100-packet FIFO, 30 s, measured from 5 s (after \
                the start-up peak, which the paper sets apart): Cubic against the delay-based \
                controller"
            .into(),
        table,
        claims: vec![
            Claim::new(
                "cubic_fills_the_buffer",
                "Cubic uses the link fully with an RTT higher than 100 ms (criterion: mean RTT \
                 > 100 ms)",
                format!("{} ms", fmt(cubic_rtt, 1)),
                cubic_rtt > 100.0,
            ),
            Claim::new(
                "delay_fq_low_delay",
                "The delay-based controller also reaches very high utilisation while its delay \
                 rarely exceeds 20 ms (criterion: 95th percentile RTT <= 20 ms and goodput at \
                 least 90 % of Cubic's)",
                format!(
                    "p95 {} ms, goodput {} % of Cubic's",
                    fmt(delay_p95, 1),
                    fmt(share * 100.0, 1)
                ),
                delay_p95 <= 20.0 && share >= 0.9,
            ),
        ],
        data: vec![("fig2_3_single.csv".into(), csv)],
        paper: Vec::new(),
    })
}

/// Figures 4-7: Cubic against the delay-based flow at a FIFO and at a fair queue.
pub fn fig4_7(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded(
        "scenarios/fq-detect/fig4_7_competition.toml",
        FIG4_7,
        progress,
    )?;
    let mut t = Table::new(&[
        "bottleneck",
        "flow",
        "goodput Mbps",
        "share %",
        "RTT mean ms",
    ]);
    let mut csv = String::from("qdisc,flow,goodput_mbps,share_pct,rtt_mean_ms\n");
    let mut cases = Vec::new();
    for (scenario, o) in set.points.iter().zip(&outs) {
        let link_bps = scenario.links[0].rate.bits_per_sec();
        let qdisc = match scenario.links[0].qdisc {
            kleinrock_sim::QdiscConfig::Fifo => "FIFO",
            kleinrock_sim::QdiscConfig::Fq { .. } => "FQ",
        };
        for f in &o.summary.flows {
            let share = f.goodput_bps / link_bps * 100.0;
            t.row(vec![
                qdisc.into(),
                f.name.clone(),
                fmt(f.goodput_bps / 1e6, 2),
                fmt(share, 1),
                ms(f.rtt_mean_ms),
            ]);
            csv.push_str(&format!(
                "{qdisc},{},{},{share},{}\n",
                f.name,
                f.goodput_bps / 1e6,
                f.rtt_mean_ms.unwrap_or(f64::NAN)
            ));
        }
        let cubic = flow(&o.summary, "Cubic")?;
        let delay = flow(&o.summary, "delay_fq")?;
        cases.push((qdisc, delay.goodput_bps / link_bps * 100.0, delay, cubic));
    }
    let mut table = t.render();
    table.push('\n');
    let case = |q: &str| {
        cases
            .iter()
            .find(|c| c.0 == q)
            .ok_or_else(|| format!("no {q} run"))
    };
    let (fifo, fq) = (case("FIFO")?, case("FQ")?);
    let rtt = |f: &FlowMetrics| f.rtt_mean_ms.unwrap_or(f64::NAN);
    let (lo, hi) = FAIR_SHARE;
    Ok(Figure {
        id: "Fig. 4-7".into(),
        title: "Cubic from 0 s and the delay-based controller from 5 s, 50 Mbit/s, 10 ms RTT, \
                100 packets (shared FIFO, or per flow at a fair queue), 30 s, measured over \
                10-30 s: each flow's goodput, share of the link and mean RTT"
            .into(),
        table,
        claims: vec![
            Claim::new(
                "fifo_delay_based_starves",
                &format!(
                    "Without fair queuing the delay-based flow is pushed away by Cubic and \
                     starves (criterion: its share < {STARVED_BELOW} %)"
                ),
                format!("{} %", fmt(fifo.1, 1)),
                fifo.1 < STARVED_BELOW,
            ),
            Claim::new(
                "fq_delay_based_fair_and_low_delay",
                &format!(
                    "With fair queuing both get the same throughput and Cubic's delay is more \
                     than twice the delay-based flow's (criterion: its share {lo}-{hi} % and \
                     its mean RTT below {RTT_FRACTION} x Cubic's)"
                ),
                format!(
                    "{} %, RTT {} ms against Cubic's {} ms",
                    fmt(fq.1, 1),
                    fmt(rtt(fq.2), 1),
                    fmt(rtt(fq.3), 1)
                ),
                (lo..=hi).contains(&fq.1) && rtt(fq.2) < RTT_FRACTION * rtt(fq.3),
            ),
        ],
        data: vec![("fig4_7_competition.csv".into(), csv)],
        paper: Vec::new(),
    })
}

/// Times (s) at which the traced `fq_detected` value changes, with the new value.
fn decisions(series: &Series) -> Result<Vec<(f64, f64)>, String> {
    let detected = column(series, kleinrock_cc::algorithms::fq_switch::FQ_DETECTED)?;
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (t, &v) in series.time_s.iter().zip(detected) {
        if !v.is_nan() && out.last().is_none_or(|l| l.1 != v) {
            out.push((*t, v));
        }
    }
    Ok(out)
}

/// Goodput (bit/s) of a traced flow between `a` and `b` seconds.
fn goodput_between(series: &Series, a: f64, b: f64) -> Result<f64, String> {
    Ok(rate_between(
        series,
        column(series, "delivered_bytes")?,
        a,
        b,
    ))
}

/// Re-detection: the bottleneck turns from a fair queue into a FIFO at 30 s.
pub fn redetection(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/fq-detect/redetect.toml", REDETECT, progress)?;
    let mut t = Table::new(&[
        "re-detection",
        "decisions (s: 1 = FQ, 0 = FIFO)",
        "fq_switch share 45-60 s %",
        "Cubic share 45-60 s %",
    ]);
    let mut csv = String::from("redetect,decision_s,fq_detected\n");
    let mut rows = Vec::new();
    for (scenario, o) in set.points.iter().zip(&outs) {
        let trace = o
            .result
            .trace
            .as_ref()
            .ok_or("the scenario records no trace")?;
        let &(at, rate) = scenario.links[1]
            .schedule
            .first()
            .ok_or("the FIFO link has no rate change")?;
        let (change_s, rate) = (at.as_secs_f64(), rate.bits_per_sec());
        let period = point_value(&o.summary, "flows.1.params.redetect")?;
        let switch_series = &trace.flows[1];
        let ds = decisions(switch_series)?;
        let end = scenario.duration.as_secs_f64();
        let window = (end - 15.0, end);
        let share = |k: usize| -> Result<f64, String> {
            Ok(goodput_between(&trace.flows[k], window.0, window.1)? / rate * 100.0)
        };
        let (mine, cubic) = (share(1)?, share(0)?);
        let to_fifo = ds
            .iter()
            .find(|d| d.0 >= change_s && d.1 == 0.0)
            .map(|d| d.0);
        t.row(vec![
            period.clone(),
            ds.iter()
                .map(|(t, v)| format!("{}:{}", fmt(*t, 1), fmt(*v, 0)))
                .collect::<Vec<_>>()
                .join(" "),
            fmt(mine, 1),
            fmt(cubic, 1),
        ]);
        for (t, v) in &ds {
            csv.push_str(&format!("{period},{t},{v}\n"));
        }
        rows.push((period, change_s, to_fifo, mine));
    }
    let mut table = t.render();
    table.push('\n');
    let find = |p: &str| {
        rows.iter()
            .find(|r| r.0 == p)
            .ok_or_else(|| format!("no run with redetect = {p}"))
    };
    let (with, without) = (find("5s")?, find("0s")?);
    let deadline = with.1 + PERIODS * 5.0;
    Ok(Figure {
        id: "Re-detection".into(),
        title: "beyond the paper (its §VII proposes it): a 20 Mbit/s fair queue, then a \
                100-packet FIFO that drops from 100 to 10 Mbit/s at 30 s; Cubic from 0 s and \
                fq_switch from 5 s, probing again every 5 s or never, 60 s: the decisions \
                traced, and each flow's share of the 10 Mbit/s over the last 15 s"
            .into(),
        table,
        claims: vec![
            Claim::new(
                "redetection_moves_to_loss_based",
                &format!(
                    "Probing again every 5 s notices the FIFO within {PERIODS} periods of the \
                     change and the loss-based controller regains a share (criterion: a FIFO \
                     decision by {} s and a share >= {REGAINED_AT_LEAST} % over the last 15 s)",
                    fmt(deadline, 0)
                ),
                format!(
                    "FIFO decided at {}; share {} %",
                    with.2
                        .map_or("never".into(), |t| format!("{} s", fmt(t, 1))),
                    fmt(with.3, 1)
                ),
                with.2.is_some_and(|t| t <= deadline) && with.3 >= REGAINED_AT_LEAST,
            ),
            Claim::new(
                "no_redetection_starves",
                &format!(
                    "Without re-detection the flow stays delay-based and starves (criterion: no \
                     FIFO decision and a share < {STARVED_BELOW} % over the last 15 s)"
                ),
                format!(
                    "FIFO decided: {}; share {} %",
                    if without.2.is_some() { "yes" } else { "no" },
                    fmt(without.3, 1)
                ),
                without.2.is_none() && without.3 < STARVED_BELOW,
            ),
        ],
        data: vec![("redetect_decisions.csv".into(), csv)],
        paper: Vec::new(),
    })
}
