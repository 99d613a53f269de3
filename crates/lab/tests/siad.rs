//! Acceptance of issue 6: the TCP SIAD paper's Figures 3-4, 5, 6 (§IV-A), 7, 8, 9, 10 (§IV-B,
//! capacity sharing and convergence), 11, 12 and 13 (§IV-C, against NewReno and Cubic, random
//! loss and short flows), each claim as `kleinrock reproduce siad` states it (criteria and
//! definitions are in `kleinrock_lab::reproduce::siad`). Every figure runs once, full length
//! (600 s simulated, 90 s for Figure 6; Figure 10's 560 runs take about 80 s on two cores in
//! release, the rest a few seconds), and every claim that holds is checked on that one run.
//! Figure 9 (a flow joining and leaving) states no claim; it only has to run.
//!
//! Not asserted, because it does not hold (see `docs/siad.md`, "The reproduction"):
//! `siad_converges_faster_than_cubic` (Figure 10, the paper's text, not an acceptance point of
//! issue 6). SIAD gives the second flow its share quickly, but at buffers from 0.7 BDP the two
//! flows' shares then swing slowly around an equal split (the trend term's momentum), which our
//! convergence definition counts as not yet converged.

use kleinrock_lab::reproduce::{siad, Figure};

const QUIET: &(dyn Fn(&str) + Sync) = &|_| {};

fn check(figure: &Figure, keys: &[&str]) -> Result<(), String> {
    figure.check(keys)
}

#[test]
fn figures_3_to_13_full_link_bounded_queue_feedback_rate_route_change_sharing_loss() {
    let fig3_4 = siad::fig3_4(QUIET).expect("Fig. 3-4 runs");
    let fig5 = siad::fig5(QUIET).expect("Fig. 5 runs");
    let fig6 = siad::fig6(QUIET).expect("Fig. 6 runs");
    let fig7 = siad::fig7(QUIET).expect("Fig. 7 runs");
    let fig8 = siad::fig8(QUIET).expect("Fig. 8 runs");
    let fig9 = siad::fig9(QUIET).expect("Fig. 9 runs");
    let fig10 = siad::fig10(QUIET).expect("Fig. 10 runs");
    let fig11 = siad::fig11(QUIET).expect("Fig. 11 runs");
    let fig12 = siad::fig12(QUIET).expect("Fig. 12 runs");
    let fig13 = siad::fig13(QUIET).expect("Fig. 13 runs");
    let short_flows = siad::short_flows(QUIET).expect("the short-flow experiment runs");
    let results = [
        check(
            &fig3_4,
            &[
                "siad20_full_link",
                "newreno_underuses_0_3bdp",
                "siad20_queue_fill_bounded",
                "reno_cubic_standing_queue",
            ],
        ),
        check(&fig5, &["siad20_fixed_feedback_rate", "newreno_led_grows"]),
        check(&fig6, &["siad20_route_change_tracking"]),
        check(
            &fig7,
            &["siad30_equal_sharing", "siad20_vs_30_larger_share"],
        ),
        check(&fig8, &["siad_ten_flows_share"]),
        check(&fig10, &["newreno_convergence_grows_with_buffer"]),
        check(&fig11, &["siad40_vs_newreno_fair"]),
        check(&fig12, &["siad30_vs_cubic_fair"]),
        check(
            &fig13,
            &[
                "siad20_robust_to_random_loss",
                "reno_cubic_starved_by_random_loss",
            ],
        ),
        check(&short_flows, &["siad20_short_flows_ordering"]),
    ];
    // Figure 10: four controllers x seven buffers x twenty start times.
    assert_eq!(
        fig10.data[0].1.lines().count(),
        1 + 4 * 7 * 20,
        "{}",
        fig10.table
    );
    // Figure 9: three phases (alone, together, alone again), a row per flow in each.
    assert_eq!(fig9.data[0].1.lines().count(), 1 + 3 * 2, "{}", fig9.table);
    // Figures 11-12: two Num_RTT values, a row per flow in each.
    for fig in [&fig11, &fig12] {
        assert_eq!(fig.data[0].1.lines().count(), 1 + 2 * 2, "{}", fig.table);
    }
    let errors: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n\n"));
}
