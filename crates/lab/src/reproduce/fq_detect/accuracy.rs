//! The fair-queuing detection paper's systematic experiments over its grid (§VI-C, §VI-D)
//! and the phase-locking of §VII. The grid: rate 5-50 Mbit/s, RTT 10-100 ms, buffer 1-100
//! packets, five evenly spaced values each, each with a fair queue (the buffer is the per-flow
//! limit) and with a shared FIFO (the buffer is the total); 30 s per run.
//!
//! - Accuracy (`scenarios/fq-detect/accuracy.toml`, and `accuracy_cross.toml` with a Cubic
//!   flow started 5 s earlier): the `fq_switch` flow's decision against the truth, per class,
//!   as a confusion table, and every misclassified configuration with its eq. (1) ratio and
//!   the two legs' losses in the deciding round, and why.
//! - Phase-locking (`phase_locking.toml`): the FIFO half of the grid with the probe's jitter
//!   off against the same with it on (from the accuracy runs). A configuration is phase-locked
//!   when the slow leg (subflow 1) lost at least 95 % of its bytes in the deciding round: its
//!   receiving rate is about zero, the paper's "flow 1 would have a receiving rate of 0".
//! - Throughput and delay (`systematic.toml`, §VI-D): `fq_switch` and Cubic alone over the
//!   125 fair-queuing configurations: the mean over runs of each run's goodput and mean RTT.

use super::super::{fmt, run_embedded, At, Claim, Figure, PaperValue, Progress};
use crate::metrics::{FqDetection, Summary};
use crate::report::Table;
use kleinrock_sim::{BufferLimit, QdiscConfig};

const ACCURACY: &str = include_str!("../../../../../scenarios/fq-detect/accuracy.toml");
const ACCURACY_CROSS: &str = include_str!("../../../../../scenarios/fq-detect/accuracy_cross.toml");
const PHASE_LOCKING: &str = include_str!("../../../../../scenarios/fq-detect/phase_locking.toml");
const SYSTEMATIC: &str = include_str!("../../../../../scenarios/fq-detect/systematic.toml");

/// Issue 7 bounds on the accuracy over all 250 runs (paper: 98 % each).
const ACCURACY_ALONE: f64 = 97.0;
const ACCURACY_WITH_CUBIC: f64 = 95.0;
/// The slow leg's loss in the deciding round from which a run counts as phase-locked.
const LOCKED_LOSS: f64 = 0.95;
/// §VI-D bounds: `fq_switch`'s mean RTT over Cubic's at most this, its throughput at least
/// Cubic's.
const RTT_FRACTION: f64 = 0.8;

/// One run of the grid: its configuration, the truth and what the probe decided.
struct GridRun {
    rate_mbps: f64,
    rtt_ms: f64,
    buffer_pkts: u64,
    fair_queue: bool,
    detection: Option<FqDetection>,
}

impl GridRun {
    fn correct(&self) -> bool {
        self.detection
            .is_some_and(|d| d.fair_queuing == self.fair_queue)
    }

    fn class(&self) -> &'static str {
        if self.fair_queue {
            "FQ"
        } else {
            "FIFO"
        }
    }

    fn config(&self) -> String {
        format!(
            "{} {} Mbit/s, {} ms, {} pkt",
            self.class(),
            fmt(self.rate_mbps, 2),
            fmt(self.rtt_ms, 1),
            self.buffer_pkts
        )
    }

    /// Why the probe got it wrong, where the configuration says (only for a decision made on
    /// eq. (1): a run without one is never explained this way).
    fn explanation(&self) -> &'static str {
        let decided = self.detection.is_some_and(|d| d.loss_ratio.is_some());
        match (decided, self.fair_queue, self.buffer_pkts) {
            (false, _, _) => "no decision on eq. (1): see this run's trace",
            (true, true, 1) => {
                "1-packet per-flow limit: the slow leg loses packets to its own jittered \
                 bursts (two of its packets within one round-robin turn) before it exceeds its \
                 fair share, so eq. (1) stays below the cutoff"
            }
            (true, false, 1) => {
                "1-packet FIFO: which leg's packet finds the one slot free is down to the \
                 jittered arrival order, and the deciding round is short, so the two legs' \
                 loss fractions differ by chance"
            }
            _ => "not explained by the configuration: see this run's trace",
        }
    }
}

/// The grid run of summary `s` and its first link.
fn grid_run(s: &Summary, link: &kleinrock_sim::LinkConfig, flow: usize) -> GridRun {
    let (fair_queue, buffer_pkts) = match (link.qdisc, link.buffer) {
        (QdiscConfig::Fq { flow_limit, .. }, _) => (true, flow_limit),
        (QdiscConfig::Fifo, BufferLimit::Packets(n)) => (false, n),
        (QdiscConfig::Fifo, _) => (false, 0),
    };
    GridRun {
        rate_mbps: link.rate.bits_per_sec() / 1e6,
        rtt_ms: link.delay.as_secs_f64() * 1e3,
        buffer_pkts,
        fair_queue,
        detection: s.flows[flow].fq_detection,
    }
}

fn runs_of(origin: &str, text: &str, progress: Progress) -> Result<Vec<GridRun>, String> {
    let (set, outs) = run_embedded(origin, text, progress)?;
    let flow = 0;
    Ok(set
        .points
        .iter()
        .zip(&outs)
        .map(|(sc, o)| grid_run(&o.summary, &sc.links[0], flow))
        .collect())
}

fn pct(n: usize, of: usize) -> f64 {
    n as f64 / of.max(1) as f64 * 100.0
}

/// The confusion table, the accuracy per class, the misclassified runs, and the CSV.
fn accuracy_report(runs: &[GridRun]) -> (String, String, f64) {
    let mut t = Table::new(&[
        "truth",
        "runs",
        "detected FQ",
        "detected FIFO",
        "accuracy %",
    ]);
    for class in ["FQ", "FIFO"] {
        let of: Vec<&GridRun> = runs.iter().filter(|r| r.class() == class).collect();
        let fq = of
            .iter()
            .filter(|r| r.detection.is_some_and(|d| d.fair_queuing))
            .count();
        let correct = of.iter().filter(|r| r.correct()).count();
        t.row(vec![
            class.into(),
            of.len().to_string(),
            fq.to_string(),
            (of.len() - fq).to_string(),
            fmt(pct(correct, of.len()), 1),
        ]);
    }
    let correct = runs.iter().filter(|r| r.correct()).count();
    let overall = pct(correct, runs.len());
    let mut table = t.render();
    table.push_str(&format!(
        "overall: {correct} of {} correct ({} %)\n\n",
        runs.len(),
        fmt(overall, 1)
    ));
    let wrong: Vec<&GridRun> = runs.iter().filter(|r| !r.correct()).collect();
    if !wrong.is_empty() {
        let mut w = Table::new(&[
            "misclassified",
            "ratio",
            "slow leg loss",
            "fast leg loss",
            "why",
        ])
        .all_text();
        for r in &wrong {
            let d = r.detection;
            w.row(vec![
                r.config(),
                d.and_then(|d| d.loss_ratio)
                    .map_or("-".into(), |x| fmt(x, 2)),
                d.map_or("-".into(), |d| fmt(d.slow_leg_loss, 3)),
                d.map_or("-".into(), |d| fmt(d.fast_leg_loss, 3)),
                r.explanation().into(),
            ]);
        }
        table.push_str(&w.render());
        table.push('\n');
    }
    let mut csv = String::from(
        "class,rate_mbps,rtt_ms,buffer_pkts,detected_fq,loss_ratio,slow_leg_loss,fast_leg_loss\n",
    );
    for r in runs {
        let d = r.detection;
        csv.push_str(&format!(
            "{},{},{},{},{},{},{},{}\n",
            r.class(),
            r.rate_mbps,
            r.rtt_ms,
            r.buffer_pkts,
            d.map_or(String::new(), |d| d.fair_queuing.to_string()),
            d.and_then(|d| d.loss_ratio)
                .map_or(String::new(), |x| x.to_string()),
            d.map_or(String::new(), |d| d.slow_leg_loss.to_string()),
            d.map_or(String::new(), |d| d.fast_leg_loss.to_string()),
        ));
    }
    (table, csv, overall)
}

/// One accuracy experiment: how the report names it, its claim, and what the paper states.
struct Accuracy {
    id: &'static str,
    title: &'static str,
    key: &'static str,
    /// The least accuracy (%) the claim accepts.
    bound: f64,
    /// What the paper states, for the claim.
    paper: &'static str,
    /// The accuracy (%) the paper states per class (`FIFO`, `FQ`, `all`), lowest and highest
    /// ("over 99 %" is 99 to 100).
    values: &'static [(&'static str, f64, f64)],
    /// The file of the runs.
    csv_name: &'static str,
    /// The file of the accuracy per class.
    by_class: &'static str,
}

impl Accuracy {
    fn paper_values(&self) -> Vec<PaperValue> {
        self.values
            .iter()
            .map(|&(class, lo, hi)| {
                let at = At::Row(class.into());
                PaperValue::range(self.by_class, "accuracy_pct", at, (lo, hi), "§VI-C")
            })
            .collect()
    }
}

const ALONE: Accuracy = Accuracy {
    id: "§VI-C",
    title: "FQ detection accuracy: one fq_switch flow, the 125-configuration grid with a fair \
            queue and with a shared FIFO, 30 s each",
    key: "accuracy_alone",
    bound: ACCURACY_ALONE,
    paper: "paper: over 99 % of FIFO and 97 % of FQ runs, 98 % overall",
    values: &[
        ("FIFO", 99.0, 100.0),
        ("FQ", 97.0, 97.0),
        ("all", 98.0, 98.0),
    ],
    csv_name: "accuracy.csv",
    by_class: "accuracy_by_class.csv",
};

const WITH_CUBIC: Accuracy = Accuracy {
    id: "§VI-C (Cubic)",
    title: "FQ detection accuracy with cross traffic: as above, with a Cubic bulk flow started \
            5 s before the fq_switch flow",
    key: "accuracy_with_cubic",
    bound: ACCURACY_WITH_CUBIC,
    paper: "paper: 98 % overall",
    values: &[("all", 98.0, 98.0)],
    csv_name: "accuracy_cross.csv",
    by_class: "accuracy_cross_by_class.csv",
};

/// The accuracy (%) per class and over all runs: `class,accuracy_pct`, rows FIFO, FQ, all.
fn by_class_csv(runs: &[GridRun]) -> String {
    let mut csv = String::from("class,accuracy_pct\n");
    for class in ["FIFO", "FQ", "all"] {
        let of: Vec<&GridRun> = runs
            .iter()
            .filter(|r| class == "all" || r.class() == class)
            .collect();
        let correct = of.iter().filter(|r| r.correct()).count();
        csv.push_str(&format!("{class},{}\n", pct(correct, of.len())));
    }
    csv
}

fn accuracy_figure(a: &Accuracy, runs: &[GridRun]) -> Figure {
    let (table, csv, overall) = accuracy_report(runs);
    let unexplained = runs
        .iter()
        .filter(|r| !r.correct() && r.explanation().contains("see this run's trace"))
        .count();
    Figure {
        id: a.id.into(),
        title: a.title.into(),
        table,
        claims: vec![Claim::new(
            a.key,
            &format!(
                "The probe tells a fair queue from a shared FIFO ({}; criterion: at least \
                 {} % of the {} runs correct, every miss explained by its configuration)",
                a.paper,
                a.bound,
                runs.len()
            ),
            format!(
                "{} % ({} misses, {unexplained} unexplained)",
                fmt(overall, 1),
                runs.iter().filter(|r| !r.correct()).count()
            ),
            overall >= a.bound && unexplained == 0,
        )],
        data: vec![
            (a.csv_name.into(), csv),
            (a.by_class.into(), by_class_csv(runs)),
        ],
        paper: a.paper_values(),
    }
}

/// §VI-C accuracy without cross traffic, and §VII phase-locking (which sets the same runs, the
/// probe jittered, against the FIFO half without jitter).
pub fn accuracy_and_phase_locking(progress: Progress) -> Result<(Figure, Figure), String> {
    let runs = runs_of("scenarios/fq-detect/accuracy.toml", ACCURACY, progress)?;
    let still = runs_of(
        "scenarios/fq-detect/phase_locking.toml",
        PHASE_LOCKING,
        progress,
    )?;
    Ok((accuracy(&runs), phase_locking(&still, &runs)))
}

/// §VI-C accuracy without cross traffic.
fn accuracy(runs: &[GridRun]) -> Figure {
    accuracy_figure(&ALONE, runs)
}

/// §VI-C accuracy with a Cubic flow started 5 s earlier.
pub fn accuracy_cross(progress: Progress) -> Result<Figure, String> {
    let runs = runs_of(
        "scenarios/fq-detect/accuracy_cross.toml",
        ACCURACY_CROSS,
        progress,
    )?;
    Ok(accuracy_figure(&WITH_CUBIC, &runs))
}

/// FIFO runs whose slow leg lost at least [`LOCKED_LOSS`] in the round eq. (1) decided on.
fn locked(runs: &[GridRun]) -> Vec<&GridRun> {
    runs.iter()
        .filter(|r| !r.fair_queue)
        .filter(|r| {
            r.detection
                .is_some_and(|d| d.loss_ratio.is_some() && d.slow_leg_loss >= LOCKED_LOSS)
        })
        .collect()
}

/// §VII: the probe without jitter (`still`) phase-locks at a FIFO; with jitter (`jittered`)
/// it does not.
fn phase_locking(still: &[GridRun], jittered: &[GridRun]) -> Figure {
    let (a, b) = (locked(still), locked(jittered));
    let fifo = still.iter().filter(|r| !r.fair_queue).count();
    let worst_jittered = jittered
        .iter()
        .filter(|r| !r.fair_queue)
        .filter_map(|r| r.detection.map(|d| d.slow_leg_loss))
        .fold(0.0, f64::max);
    let mut t = Table::new(&["probe", "FIFO runs", "phase-locked", "examples"]).all_text();
    let examples = |v: &[&GridRun]| {
        v.iter()
            .take(3)
            .map(|r| {
                let d = r.detection.expect("locked runs decided");
                format!(
                    "{} (slow {} %, fast {} %)",
                    r.config(),
                    fmt(d.slow_leg_loss * 100.0, 0),
                    fmt(d.fast_leg_loss * 100.0, 0)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    t.row(vec![
        "no jitter".into(),
        fifo.to_string(),
        a.len().to_string(),
        examples(&a),
    ]);
    t.row(vec![
        "jitter 0.5".into(),
        fifo.to_string(),
        b.len().to_string(),
        examples(&b),
    ]);
    let mut table = t.render();
    table.push('\n');
    let mut csv = String::from("jitter,rate_mbps,rtt_ms,buffer_pkts,slow_leg_loss,fast_leg_loss\n");
    for (jitter, runs) in [("0", still), ("0.5", jittered)] {
        for r in runs.iter().filter(|r| !r.fair_queue) {
            if let Some(d) = r.detection {
                csv.push_str(&format!(
                    "{jitter},{},{},{},{},{}\n",
                    r.rate_mbps, r.rtt_ms, r.buffer_pkts, d.slow_leg_loss, d.fast_leg_loss
                ));
            }
        }
    }
    Figure {
        id: "§VII".into(),
        title: "phase-locking at a shared FIFO: the probe's legs paced exactly (no jitter; the \
                slow leg's sends trail the fast leg's by 1 us, as the paper saw) against the \
                same grid with the gaps jittered by [0.5, 1.5]"
            .into(),
        table,
        claims: vec![Claim::new(
            "jitter_prevents_phase_locking",
            &format!(
                "Without jitter the slow flow's packets always arrive just after the fast \
                 flow's and it loses nearly everything; with jitter it does not (criterion: \
                 the slow leg loses >= {} % of its bytes in the deciding round in at least one \
                 FIFO configuration without jitter, and in none with it)",
                fmt(LOCKED_LOSS * 100.0, 0)
            ),
            format!(
                "{} of {fifo} without jitter, {} with it (its worst: {} %)",
                a.len(),
                b.len(),
                fmt(worst_jittered * 100.0, 1)
            ),
            !a.is_empty() && b.is_empty(),
        )],
        data: vec![("phase_locking.csv".into(), csv)],
        paper: Vec::new(),
    }
}

/// §VI-D's means over the fair-queuing configurations: `(controller, Mbit/s, ms)`.
const PAPER_SYSTEMATIC: [(&str, f64, f64); 2] = [("fq_switch", 26.0, 64.0), ("Cubic", 21.0, 96.0)];

/// The header of `systematic_means.csv`.
const MEANS_HEADER: &str = "cca,goodput_mbps,rtt_mean_ms\n";

/// §VI-D's means, on the rows of `systematic_means.csv`.
fn systematic_paper() -> Vec<PaperValue> {
    let mut values = Vec::new();
    for (cca, mbps, ms) in PAPER_SYSTEMATIC {
        for (column, v) in [("goodput_mbps", mbps), ("rtt_mean_ms", ms)] {
            let at = At::Row(cca.into());
            values.push(PaperValue::new(
                "systematic_means.csv",
                column,
                at,
                v,
                "§VI-D",
            ));
        }
    }
    values
}

/// §VI-D: `fq_switch` against Cubic alone over the fair-queuing configurations.
pub fn systematic(progress: Progress) -> Result<Figure, String> {
    let (_, outs) = run_embedded("scenarios/fq-detect/systematic.toml", SYSTEMATIC, progress)?;
    // Both means are over the runs with RTT samples (all of them, unless a run stalled
    // before its first ACK).
    let mean = |name: &str, value: fn(&Summary) -> Option<f64>| -> Result<f64, String> {
        let v: Vec<f64> = outs
            .iter()
            .map(|o| &o.summary)
            .filter(|s| s.flows[0].name == name && s.flows[0].rtt_mean_ms.is_some())
            .filter_map(value)
            .collect();
        if v.is_empty() {
            return Err(format!("no runs of `{name}`"));
        }
        Ok(v.iter().sum::<f64>() / v.len() as f64)
    };
    let goodput = |s: &Summary| Some(s.flows[0].goodput_bps / 1e6);
    let rtt = |s: &Summary| s.flows[0].rtt_mean_ms;
    let mut t = Table::new(&[
        "controller",
        "mean goodput Mbps",
        "paper",
        "mean RTT ms",
        "paper",
    ]);
    let mut means = String::from(MEANS_HEADER);
    let mut ours = Vec::new();
    for (cca, paper_mbps, paper_ms) in PAPER_SYSTEMATIC {
        let (g, r) = (mean(cca, goodput)?, mean(cca, rtt)?);
        t.row(vec![
            cca.into(),
            fmt(g, 2),
            fmt(paper_mbps, 0),
            fmt(r, 1),
            fmt(paper_ms, 0),
        ]);
        means.push_str(&format!("{cca},{g},{r}\n"));
        ours.push((g, r));
    }
    let [(sw_g, sw_r), (cu_g, cu_r)] = [ours[0], ours[1]];
    let mut table = t.render();
    table.push('\n');
    let mut csv = String::from("cca,point,goodput_mbps,rtt_mean_ms\n");
    for o in &outs {
        let s = &o.summary;
        let point = crate::sweep::label(&s.point).replace(',', ";");
        csv.push_str(&format!(
            "{},{point},{},{}\n",
            s.flows[0].name,
            s.flows[0].goodput_bps / 1e6,
            s.flows[0].rtt_mean_ms.unwrap_or(f64::NAN)
        ));
    }
    Ok(Figure {
        id: "§VI-D".into(),
        title: "one flow alone, fq_switch or Cubic, over the 125 fair-queuing configurations, \
                30 s each: the mean over runs of goodput and of mean RTT"
            .into(),
        table,
        claims: vec![Claim::new(
            "fq_switch_lower_delay_no_less_throughput",
            &format!(
                "With fair queuing detected, the delay-based controller has a much lower delay \
                 than Cubic and, surprisingly, a higher throughput (paper: 26 vs 21 Mbit/s, 64 \
                 vs 96 ms; criterion: mean RTT <= {RTT_FRACTION} x Cubic's and mean goodput >= \
                 Cubic's)"
            ),
            format!(
                "{} vs {} Mbit/s, {} vs {} ms",
                fmt(sw_g, 2),
                fmt(cu_g, 2),
                fmt(sw_r, 1),
                fmt(cu_r, 1)
            ),
            sw_r <= RTT_FRACTION * cu_r && sw_g >= cu_g,
        )],
        data: vec![
            ("systematic.csv".into(), csv),
            ("systematic_means.csv".into(), means),
        ],
        paper: systematic_paper(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::super::structure::{check, first_flows, rows_csv};
    use super::*;

    #[test]
    fn the_papers_values_name_drawn_columns_and_rows_of_our_data() {
        for a in [&ALONE, &WITH_CUBIC] {
            let data = vec![(a.by_class, by_class_csv(&[]))];
            check(a.id, data, a.paper_values());
        }
        let controllers = first_flows(SYSTEMATIC);
        for (cca, _, _) in PAPER_SYSTEMATIC {
            assert!(controllers.iter().any(|c| c == cca), "no `{cca}` runs");
        }
        let csv = rows_csv(MEANS_HEADER, &controllers);
        check(
            "§VI-D",
            vec![("systematic_means.csv", csv)],
            systematic_paper(),
        );
    }
}
