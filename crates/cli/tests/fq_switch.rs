//! `fq_switch` on the real datapath decides as the simulator does.
//!
//! The acceptance of "Multipath on the real datapath" for the fair-queuing probe: `kleinrock
//! transfer` with `fq_switch` (M. Bachl, J. Fabini, T. Zseby, "Detecting Fair Queuing for Better
//! Congestion Control", arXiv:2010.08362, 2020), its fast leg a second QUIC connection from a
//! port of its own, through the emulator with a fair queue and with a shared FIFO, ten
//! configurations of the paper's §VI-C grid each (`scenarios/fq-detect/accuracy.toml`: every
//! rate, 5-50 Mbit/s, at RTTs of 10 and 32.5 ms, with a 50-packet buffer, per flow at the fair
//! queue and shared at the FIFO). In each class the real decision matches the simulated one in
//! at least 9 of 10 runs, and where they match the goodput after the decision is within 15 %
//! of the simulated run's (the tolerances). Each transfer carries 3.5 s of the link's
//! rate; the runs go one after the other, and a run whose emulator fell behind fails with the
//! reason, never passes. A last run re-detects every second through the fair queue: every
//! probe runs over the same second connection and decides as the simulator's do.

mod common;

use common::Proc;
use serde_json::Value;
use std::sync::Mutex;
use std::time::Duration;

/// The tests of this file measure real time: one at a time.
static REAL_TIME: Mutex<()> = Mutex::new(());

/// The tolerance: the decision matches in at least this many of the ten runs.
const MATCHES: usize = 9;
/// The tolerance on the goodput after the decision, relative.
const GOODPUT_TOLERANCE: f64 = 0.15;
/// A transfer that has not finished by then is stuck (a healthy one takes 3-5 s).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);
/// The grid's rates, Mbit/s, in the order of the sweep.
const RATES: [f64; 5] = [5.0, 16.25, 27.5, 38.75, 50.0];
/// The first point of the 50-packet FIFO and of the 50-packet fair queue in the sweep (the
/// buffer varies slowest, then the RTT, then the rate: 25 points per buffer, 5 per RTT).
const FIFO_50: usize = 51;
const FQ_50: usize = 176;

/// What one run reported.
struct Run {
    point: usize,
    /// The real and simulated decisions (fair queue or not).
    decisions: (Option<bool>, Option<bool>),
    /// The real and simulated goodput after the decision, bit/s.
    goodput: (Option<f64>, Option<f64>),
    problems: Vec<String>,
}

/// Runs sweep point `point` (from 1) for real beside the simulator, with `--set` changes
/// `extra`; its JSON output and what went wrong.
fn transfer(point: usize, seconds: f64, extra: &[&str]) -> (Value, Vec<String>) {
    let rate = RATES[(point - 1) % RATES.len()];
    let size = format!("flows.0.size={}B", (rate * 1e6 / 8.0 * seconds) as u64);
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/fq-detect/accuracy.toml"
    );
    let point_arg = point.to_string();
    let mut args = vec![
        "transfer",
        "--scenario",
        scenario,
        "--point",
        &point_arg,
        "--set",
        &size,
        "--compare-sim",
        "--json",
    ];
    for e in extra {
        args.extend(["--set", e]);
    }
    let mut child = Proc::kleinrock("kleinrock transfer", &args);
    let code = child.wait_or_kill(RUN_TIMEOUT).and_then(|s| s.code());
    let (stdout, stderr) = (child.stdout_rest(), child.stderr());
    let mut problems = Vec::new();
    if code != Some(0) {
        problems.push(format!("kleinrock exited {code:?}: {}", stderr.trim()));
    }
    let json: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    if json["subflow_connections"].as_u64() != Some(1) {
        problems.push(format!(
            "{} subflow connections, not 1",
            json["subflow_connections"]
        ));
    }
    (json, problems)
}

/// Runs sweep point `point` (from 1) for real beside the simulator, 3.5 s of the link's rate.
fn run(point: usize) -> Run {
    let (json, problems) = transfer(point, 3.5, &[]);
    let decision = |side: &str| json[side]["flows"][0]["fq_detection"]["fair_queuing"].as_bool();
    let goodput = |side: &str| json["fq_switch"][side]["goodput_bps"].as_f64();
    Run {
        point,
        decisions: (decision("real"), decision("simulated")),
        goodput: (goodput("real"), goodput("simulated")),
        problems,
    }
}

/// The problems of the runs of one class: runs that failed, too few matching decisions, and
/// goodputs out of tolerance where the decisions match.
fn judge(class: &str, runs: &[Run]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut matched = 0;
    for r in runs {
        problems.extend(
            r.problems
                .iter()
                .map(|p| format!("{class} point {}: {p}", r.point)),
        );
        let (real, sim) = r.decisions;
        if real.is_none() || real != sim {
            continue;
        }
        matched += 1;
        match r.goodput {
            (Some(a), Some(b)) if (a / b - 1.0).abs() <= GOODPUT_TOLERANCE => {}
            (a, b) => problems.push(format!(
                "{class} point {}: goodput after the decision {a:?} against {b:?} bit/s \
                 (tolerance ±{:.0} %)",
                r.point,
                GOODPUT_TOLERANCE * 100.0
            )),
        }
    }
    if matched < MATCHES {
        problems.push(format!(
            "{class}: the decision matched in {matched} of {} runs (at least {MATCHES})",
            runs.len()
        ));
    }
    problems
}

#[test]
fn fq_switch_decides_as_the_simulator_through_a_fair_queue_and_a_fifo() {
    let _one = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut problems = Vec::new();
    for (class, first) in [("FIFO", FIFO_50), ("fair queue", FQ_50)] {
        let runs: Vec<Run> = (first..first + 10).map(run).collect();
        for r in &runs {
            println!(
                "{class} point {}: decision real {:?} sim {:?}; goodput after it real {:?} \
                 sim {:?} bit/s",
                r.point, r.decisions.0, r.decisions.1, r.goodput.0, r.goodput.1
            );
        }
        problems.extend(judge(class, &runs));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Re-detection (`redetect`, FQ-detect §VII's "every 5 or 10 seconds", here every second)
/// probes again over the same second connection and decides as the simulator does each time.
#[test]
fn fq_switch_probes_again_over_the_same_second_connection() {
    let _one = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (json, problems) = transfer(FQ_50 + 1, 5.0, &["flows.0.params.redetect=1s"]);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for side in ["real", "simulated"] {
        let d = &json[side]["flows"][0]["fq_detection"];
        assert_eq!(d["fair_queuing"], true, "{side}: {d}");
        let n = d["detections"].as_u64().unwrap_or(0);
        assert!(
            n >= 3,
            "{side}: {n} decisions in 5 s with re-detection every second"
        );
    }
}
