//! Acceptance of issue 7: the fair-queuing detection paper's experiments (§VI-VII) and the
//! re-detection experiment beyond it, each claim as `kleinrock reproduce fq-detect` states it
//! (criteria and definitions in `kleinrock_lab::reproduce::fq_detect`). Every experiment runs
//! in full: 30 s runs, the 250-run accuracy grid with and without a Cubic flow, the 125 FIFO
//! runs without jitter and the 250 runs of §VI-D (about 20 s in all in release).
//!
//! Not asserted, because it does not hold (`docs/fq_switch.md`, "The reproduction"):
//! `fq_switch_lower_delay_no_less_throughput` (§VI-D). The delay half holds (64.8 against
//! 86.4 ms), but the throughput half misses by 0.03 Mbit/s. Two runs at a 1-packet per-flow
//! limit stall: an exactly periodic drop pattern keeps dropping the head-of-line
//! retransmission.

use kleinrock_lab::reproduce::fq_detect::{self, accuracy};

const QUIET: &(dyn Fn(&str) + Sync) = &|_| {};

#[test]
fn figures_accuracy_phase_locking_and_redetection() {
    let (alone, phase_locking) =
        accuracy::accuracy_and_phase_locking(QUIET).expect("the accuracy grids run");
    let results = [
        fq_detect::fig4_7(QUIET).expect("Figs. 4-7 run").check(&[
            "fifo_delay_based_starves",
            "fq_delay_based_fair_and_low_delay",
        ]),
        alone.check(&["accuracy_alone"]),
        accuracy::accuracy_cross(QUIET)
            .expect("the accuracy grid with Cubic runs")
            .check(&["accuracy_with_cubic"]),
        phase_locking.check(&["jitter_prevents_phase_locking"]),
        fq_detect::redetection(QUIET)
            .expect("the re-detection experiment runs")
            .check(&["redetection_moves_to_loss_based", "no_redetection_starves"]),
    ];
    let systematic = accuracy::systematic(QUIET).expect("§VI-D runs");
    assert_eq!(systematic.data[0].1.lines().count(), 1 + 2 * 125);
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
