//! Figure 10 of the TCP SIAD paper (§IV-B): how long two flows of one congestion control take
//! to share a 20 Mbps link equally, over the buffer size (`scenarios/siad/fig10_convergence.toml`).
//! For each controller and buffer the second flow starts at each whole second from 20 s to
//! 39 s (20 runs), as in the paper.
//!
//! Convergence time (the paper gives no definition; this is ours): each flow's goodput in
//! every one-second interval from the second flow's start is read off its cumulative
//! `delivered_bytes` trace column (sampled every second). An interval is *fair* when each
//! flow's share of the two flows' goodput in it is within 20 % of an equal share (40-60 %). The
//! convergence time is the time from the second flow's start to the first interval from which
//! on [`HOLD_S`] consecutive intervals are fair. A run without such a stretch before its end
//! has not converged; it enters the mean at the time left in the run, a lower bound, and is
//! counted apart.
//!
//! Beside it, the reallocation time: from the second flow's start to the first interval in
//! which it gets at least 40 % of the two flows' goodput. It measures how fast capacity moves
//! to a newcomer (the paper's "reallocates the available capacity very quickly") without
//! asking the shares to stay put afterwards.

use super::super::traces::column;
use super::super::{fmt, run_embedded, Claim, Figure, Progress};
use super::{bytes_at, point_value, CUBIC, NEWRENO, SIAD20};
use crate::report::Table;
use crate::runner::RunOutput;
use crate::scenario::Scenario;

const FIG10: &str = include_str!("../../../../../scenarios/siad/fig10_convergence.toml");

/// An equal share of two flows, and how far (relative) a fair interval may be from it.
const EQUAL_SHARE: f64 = 0.5;
const SHARE_TOLERANCE: f64 = 0.2;
/// Consecutive fair one-second intervals that mark convergence.
const HOLD_S: usize = 10;
/// The paper's "increases strongly": NewReno's mean at the largest buffer at least this many
/// times its mean at the smallest.
const NEWRENO_GROWTH: f64 = 2.0;

/// One run's outcome.
struct Run {
    cc: String,
    buffer: String,
    start_s: f64,
    /// Seconds to converge, or `Err(seconds left in the run)` when it did not.
    time: Result<f64, f64>,
    /// Seconds until the second flow first gets at least the fair interval's lower share, or
    /// `Err(seconds left in the run)` when it never does.
    reallocation: Result<f64, f64>,
}

/// A time, or the time left in the run when it did not happen (a lower bound).
fn seconds(t: &Result<f64, f64>) -> f64 {
    t.unwrap_or_else(|left| left)
}

/// Whether one interval's goodputs are fair.
fn fair(a: f64, b: f64) -> bool {
    let total = a + b;
    total > 0.0 && (a / total - EQUAL_SHARE).abs() <= EQUAL_SHARE * SHARE_TOLERANCE
}

/// The second flow's lowest fair share of the two flows' goodput.
fn fair_low() -> f64 {
    EQUAL_SHARE * (1.0 - SHARE_TOLERANCE)
}

/// Each flow's goodput (bytes) in every whole second from the second flow's start to the end.
fn per_second(scenario: &Scenario, out: &RunOutput) -> Result<[Vec<f64>; 2], String> {
    let trace = out
        .result
        .trace
        .as_ref()
        .ok_or("the scenario records no trace")?;
    if trace.flows.len() != 2 {
        return Err(format!("{} traced flows, expected 2", trace.flows.len()));
    }
    let start = scenario.flows[1].start.as_secs_f64();
    let end = scenario.duration.as_secs_f64();
    let intervals = (end - start).floor() as usize;
    let goodput = |series: &kleinrock_sim::trace::Series| -> Result<Vec<f64>, String> {
        let d = column(series, "delivered_bytes")?;
        let at = |k: usize| bytes_at(series, d, start + k as f64);
        Ok((0..intervals).map(|k| at(k + 1) - at(k)).collect())
    };
    Ok([goodput(&trace.flows[0])?, goodput(&trace.flows[1])?])
}

/// The convergence time of one run (see the module doc), or `Err(time left in the run)`.
fn convergence([a, b]: &[Vec<f64>; 2], left_s: f64) -> Result<f64, f64> {
    let ok: Vec<bool> = a.iter().zip(b).map(|(&x, &y)| fair(x, y)).collect();
    ok.windows(HOLD_S)
        .position(|w| w.iter().all(|&f| f))
        .map(|k| k as f64)
        .ok_or(left_s)
}

/// Seconds until the second flow first gets at least [`fair_low`] of the two flows' goodput
/// in a one-second interval, or `Err(time left in the run)`.
fn reallocation([a, b]: &[Vec<f64>; 2], left_s: f64) -> Result<f64, f64> {
    a.iter()
        .zip(b)
        .position(|(&x, &y)| x + y > 0.0 && y / (x + y) >= fair_low())
        .map(|k| k as f64)
        .ok_or(left_s)
}

/// How a table reads a run: its convergence or its reallocation time.
type Pick = fn(&Run) -> &Result<f64, f64>;

/// Mean, minimum and maximum over the runs, and how many times did not happen.
fn stats(runs: &[&Run], pick: Pick) -> (f64, f64, f64, usize) {
    let secs: Vec<f64> = runs.iter().map(|r| seconds(pick(r))).collect();
    let mean = secs.iter().sum::<f64>() / secs.len().max(1) as f64;
    let min = secs.iter().cloned().fold(f64::MAX, f64::min);
    let max = secs.iter().cloned().fold(f64::MIN, f64::max);
    (
        mean,
        min,
        max,
        runs.iter().filter(|r| pick(r).is_err()).count(),
    )
}

/// The runs of `cc` (at `buffer`, or at every buffer); an error if there are none.
fn select<'r>(runs: &'r [Run], cc: &str, buffer: Option<&str>) -> Result<Vec<&'r Run>, String> {
    let chosen: Vec<&Run> = runs
        .iter()
        .filter(|r| r.cc == cc && buffer.is_none_or(|b| r.buffer == b))
        .collect();
    if chosen.is_empty() {
        return Err(format!("no runs of `{cc}`"));
    }
    Ok(chosen)
}

fn cell(runs: &[&Run], pick: Pick) -> String {
    let (mean, min, max, open) = stats(runs, pick);
    let open = if open > 0 {
        format!(" ({open} not)")
    } else {
        String::new()
    };
    format!("{} [{}-{}]{open}", fmt(mean, 0), fmt(min, 0), fmt(max, 0))
}

fn in_order(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for v in values {
        if !seen.contains(&v) {
            seen.push(v);
        }
    }
    seen
}

/// One table of `pick` per controller (rows) and buffer (columns).
fn time_table(runs: &[Run], buffers: &[String], title: &str, pick: Pick) -> Result<String, String> {
    let mut header = vec![title];
    header.extend(buffers.iter().map(String::as_str));
    let mut t = Table::new(&header);
    for cc in in_order(runs.iter().map(|r| r.cc.clone())) {
        let mut row = vec![cc.clone()];
        for b in buffers {
            row.push(cell(&select(runs, &cc, Some(b))?, pick));
        }
        t.row(row);
    }
    let mut table = t.render();
    table.push('\n');
    Ok(table)
}

/// Figure 10: convergence time over the buffer size, 20 runs per point.
pub fn fig10(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/siad/fig10_convergence.toml", FIG10, progress)?;
    let mut runs = Vec::new();
    for (scenario, out) in set.points.iter().zip(&outs) {
        let first = &out.summary.flows[0].name;
        // The two flows are copies (`count = 2`) named `<name>-1` and `<name>-2`.
        let cc = first
            .strip_suffix("-1")
            .ok_or_else(|| format!("flow `{first}` is not the first of two copies"))?;
        let start_s = scenario.flows[1].start.as_secs_f64();
        let goodputs = per_second(scenario, out)?;
        let left_s = scenario.duration.as_secs_f64() - start_s;
        runs.push(Run {
            cc: cc.to_string(),
            buffer: point_value(&out.summary, "links.0.buffer")?,
            start_s,
            time: convergence(&goodputs, left_s),
            reallocation: reallocation(&goodputs, left_s),
        });
    }
    let buffers = in_order(runs.iter().map(|r| r.buffer.clone()));
    let mut table = time_table(&runs, &buffers, "convergence s", |r| &r.time)?;
    table.push_str(&time_table(&runs, &buffers, "reallocation s", |r| {
        &r.reallocation
    })?);
    table.push_str(
        "(mean [min-max] over the 20 start times; \"n not\": runs where it did not happen, \
         counted at the time left in the run. Reallocation: until the second flow first gets \
         40 % of the two flows' goodput in a second)\n\n",
    );
    let mut csv = String::from(
        "cca,buffer,second_start_s,convergence_s,converged,reallocation_s,reallocated\n",
    );
    for r in &runs {
        csv.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            r.cc,
            r.buffer,
            r.start_s,
            seconds(&r.time),
            r.time.is_ok(),
            seconds(&r.reallocation),
            r.reallocation.is_ok()
        ));
    }
    let (smallest, largest) = match (buffers.first(), buffers.last()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err("no runs".into()),
    };
    let time: Pick = |r| &r.time;
    let reno_small = stats(&select(&runs, NEWRENO, Some(smallest))?, time);
    let reno_large = stats(&select(&runs, NEWRENO, Some(largest))?, time);
    let siad = stats(&select(&runs, SIAD20, None)?, time);
    let cubic = stats(&select(&runs, CUBIC, None)?, time);
    Ok(Figure {
        id: "Fig. 10".into(),
        title: format!(
            "two flows of one controller, 20 Mbps / 100 ms RTT, drop-tail buffer in BDP, \
             unpaced with delayed ACKs, the second flow starting at each whole second from 20 s to 39 s, 600 s: \
             convergence time, the time from the second flow's start until both flows' \
             one-second goodputs stay within {}-{} % of their sum for {HOLD_S} s (the paper \
             plots the same statistics and states no number)",
            fmt((EQUAL_SHARE * (1.0 - SHARE_TOLERANCE)) * 100.0, 0),
            fmt((EQUAL_SHARE * (1.0 + SHARE_TOLERANCE)) * 100.0, 0),
        ),
        table,
        claims: vec![
            Claim::new(
                "newreno_convergence_grows_with_buffer",
                &format!(
                    "NewReno's convergence time increases strongly with the buffer size \
                     (criterion: its mean at {largest} is at least {NEWRENO_GROWTH}x its mean \
                     at {smallest})"
                ),
                format!(
                    "{} s at {smallest}, {} s at {largest} ({}x)",
                    fmt(reno_small.0, 1),
                    fmt(reno_large.0, 1),
                    fmt(reno_large.0 / reno_small.0, 1)
                ),
                reno_large.0 >= NEWRENO_GROWTH * reno_small.0,
            ),
            Claim::new(
                "siad_converges_faster_than_cubic",
                "SIAD reallocates capacity quickly, Cubic is rather slow; SIAD outperforms \
                 Cubic (criterion: SIAD's mean convergence time over all buffers and start \
                 times is below Cubic's)",
                format!(
                    "SIAD {} s ({} not converged), Cubic {} s ({} not converged)",
                    fmt(siad.0, 1),
                    siad.3,
                    fmt(cubic.0, 1),
                    cubic.3
                ),
                siad.0 < cubic.0,
            ),
        ],
        data: vec![("fig10_convergence.csv".into(), csv)],
        paper: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_fair_within_twenty_percent_of_half() {
        assert!(fair(6.0, 4.0));
        assert!(fair(4.0, 6.0));
        assert!(!fair(6.1, 3.9));
        assert!(!fair(0.0, 0.0));
    }
}
