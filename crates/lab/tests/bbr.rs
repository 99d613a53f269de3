//! Acceptance of issue 3: the BBR paper's experiments. Each test checks claims of the report
//! as `kleinrock reproduce bbr` states them (criteria and their sources are in
//! `kleinrock_lab::reproduce::bbr`). Issue 14 settled the criteria of the four claims that the
//! sources' own constants do not meet as first stated (docs/bbr.md and docs/bbr2.md explain
//! each); every claim of the report is asserted here.

use kleinrock_lab::reproduce::{bbr, Figure};

fn assert_claims(figure: Result<Figure, String>, keys: &[&str]) {
    if let Err(e) = figure.and_then(|f| f.check(keys)) {
        panic!("{e}");
    }
}

const QUIET: &(dyn Fn(&str) + Sync) = &|_| {};

#[test]
fn fig5_step_up_step_down_drain_and_full_link_after_step_down() {
    // `step_down_queue`: the queue is below 0.5 BDP for good within
    // `bbr::STEP_DOWN_DRAIN_S` = 4 s of the drop (issue 14; we measure 3.8 s).
    assert_eq!(bbr::STEP_DOWN_DRAIN_S, 4.0);
    assert_claims(
        bbr::fig5(QUIET),
        &["step_up", "step_down_queue", "goodput_after_step_down"],
    );
}

#[test]
fn fig6_7_startup_exits_in_time_drains_and_keeps_rtt_low() {
    assert_claims(
        bbr::fig6_7(QUIET),
        &["startup_rounds", "startup_drained", "startup_rtt"],
    );
}

#[test]
fn fig8_five_flows_share_and_probe_rtt_synchronises() {
    assert_claims(bbr::fig8(QUIET), &["fair_share", "probe_rtt_sync"]);
}

#[test]
fn fig10_goodput_under_random_loss() {
    assert_claims(
        bbr::fig10(QUIET),
        &["loss_tolerance", "cubic_stalls", "cubic_drop_at_0.1"],
    );
}

#[test]
fn fig12_bbr_delay_flat_from_100_packets_and_cubic_delay_grows() {
    // `bbr_rtt_flat`: BBR's median RTT changes by < 1.5x over 100-400 packets (issue 14; we
    // measure 1.29x). The 50-packet point is shown and explained in the report, not asserted.
    assert_eq!(bbr::FIG12_MIN_BUFFER_PACKETS, 100);
    let figure = bbr::fig12(QUIET);
    if let Ok(f) = &figure {
        assert!(
            f.table.contains("BBR at 50pkt (shown, not asserted)"),
            "{}",
            f.table
        );
    }
    assert_claims(figure, &["bbr_rtt_flat", "cubic_rtt_grows"]);
}

#[test]
fn policer_is_detected_and_the_model_cuts_the_loss() {
    // `policer_loss`: loss after detection below the loss over the same interval with the
    // long-term model off (issue 14; we measure 5.83 % against 7.56 %).
    assert_claims(bbr::policer(QUIET), &["policer_detected", "policer_loss"]);
}

#[test]
fn bbr2_alone_has_low_loss_and_delay_and_a_pair_shares_fairly() {
    // `bbr2_fair`: Jain's index >= 0.9 with `down_gain = 0.9`, the PROBE_BW DOWN pacing gain
    // of draft-ietf-ccwg-bbr and mvfst's Bbr2 (issue 14; we measure 0.9915). The v2alpha
    // default (0.75, 0.8443) is shown beside it in the report, not asserted.
    let figure = bbr::bbr2(QUIET);
    if let Ok(f) = &figure {
        let fair = f.claims.iter().find(|c| c.key == "bbr2_fair");
        assert!(
            fair.is_some_and(|c| c.ours.contains("v2alpha default 0.75")),
            "{fair:?}"
        );
    }
    assert_claims(figure, &["bbr2_single", "bbr2_fair"]);
}
