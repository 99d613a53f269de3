//! Acceptance of the CCID5 paper's single-path experiment (§3.2.1, Table 1, Figure 5), as
//! `kleinrock reproduce ccid5` reports it: every claim's criterion and its source is in
//! `kleinrock_lab::reproduce::ccid5`.

use kleinrock_lab::reproduce::ccid5;

#[test]
fn figure_5_bbr_and_ccid5_keep_the_queue_short_cubic_and_ccid2_fill_it() {
    let report = ccid5::run(&|_| {}).expect("the experiment runs");
    let fig = &report.figures[0];
    // BBR and CCID5 receive >= 9 Mbit/s from 6 s on with a 95th-percentile latency below
    // 50 ms; CUBIC's and CCID2's is at least 10x CCID5's; CCID2 first loses within 7-9.5 s.
    fig.check(&[
        "full_utilisation",
        "low_latency",
        "loss_based_fill",
        "ccid2_first_loss",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.tally(), (4, 4));
    // The time series behind the figure: one CSV per protocol.
    assert_eq!(fig.data.len(), 5);
}
