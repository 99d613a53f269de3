//! Acceptance of the CCID5 paper's experiments as `kleinrock reproduce ccid5` reports them: the
//! single-path one (§3.2.1, Table 1, Figure 5) and the two over MP-DCCP (§3.3, Tables 2-3,
//! Figures 6-7). Every claim's criterion and its source is in
//! `kleinrock_lab::reproduce::ccid5`; where our model parts from the paper, the test asserts
//! what the model does and says why.

use kleinrock_lab::reproduce::{ccid5, Figure, Report};
use kleinrock_lab::runner::{run_all, RunOutput};
use kleinrock_lab::scenario::load;
use kleinrock_sim::trace::Series;
use std::path::Path;
use std::sync::OnceLock;

/// The report, run once for every test here.
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| ccid5::run(&|_| {}).expect("the experiments run"))
}

fn figure(id: &str) -> &'static Figure {
    report()
        .figures
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

/// The runs of a shipped scenario file of the paper, by the CCID on the tunnel's paths.
fn tunnel_runs(file: &str) -> Vec<(String, RunOutput)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/ccid5/")
        .join(file);
    let set = load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    run_all(&set.points, || {})
        .into_iter()
        .map(|o| (o.summary.tunnels[0].paths[0].cc.clone(), o))
        .collect()
}

fn col<'a>(s: &'a Series, name: &str) -> &'a [f64] {
    s.column(name)
        .unwrap_or_else(|| panic!("`{}` has no `{name}`", s.name))
}

/// The first sample time after `from` s at which `pred` holds for the sample's index.
fn first_after(s: &Series, from: f64, pred: impl Fn(usize) -> bool) -> Option<f64> {
    (0..s.time_s.len())
        .find(|&i| s.time_s[i] > from && pred(i))
        .map(|i| s.time_s[i])
}

#[test]
fn figure_5_bbr_and_ccid5_keep_the_queue_short_cubic_and_ccid2_fill_it() {
    let fig = figure("Fig. 5");
    // BBR and CCID5 receive >= 9 Mbit/s from 6 s on with a 95th-percentile latency below
    // 50 ms; CUBIC's and CCID2's is at least 10x CCID5's; CCID2 first loses within 7-9.5 s.
    fig.check(&[
        "full_utilisation",
        "low_latency",
        "loss_based_fill",
        "ccid2_first_loss",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fig.claims.len(), 4);
    // The time series behind the figure: one CSV per protocol.
    assert_eq!(fig.data.len(), 5);
}

#[test]
fn figure_6_ccid5_moves_the_excess_to_path_2_at_the_drop_and_keeps_path_1_short() {
    let fig = figure("Fig. 6");
    // §4.2, as the acceptance criteria read it:
    // - with CCID5, path 2 receives >= 4 Mbit/s in a 100 ms interval within 1 s of the drop
    //   at 5 s ("rapidly detected ... starting to transmit over the secondary path");
    // - with CCID2, path 1's buffer first drops within 7-9.5 s ("near to t=8s");
    // - over 12-20 s path 1 receives 10 and path 2 5 Mbit/s, +-1 (the paper reads a plot,
    //   and our rates leave out the 52 bytes of encapsulation), under either CCID;
    // - CCID5's 95th-percentile latency on path 1 from 6 s on is below 1/5 of CCID2's.
    fig.check(&[
        "ccid5_spills_fast",
        "ccid2_first_loss",
        "split_10_5",
        "ccid5_lower_latency",
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    // Per run: the per-path CSV and each path's subflow trace.
    assert_eq!(fig.data.len(), 2 * 3);
}

#[test]
fn figure_6_ccid2_moves_the_bulk_at_path_1s_loss_but_spills_a_trickle_before() {
    // The paper: with CCID2 nothing goes to path 2 until path 1's loss (claim
    // `ccid2_path2_idle_until_loss`, which does not hold here and is not asserted). Our CCID2
    // is Linux's: window validation (RFC 2861) cuts path 1's cwnd right after the drop, and
    // slow start's 0.5 packet per acknowledged packet then falls short of the pipe's growth
    // (0.55 per delivered packet: 15 Mbit/s of 1448-byte packets into 10 Mbit/s of 1500-byte
    // ones), so path 1's window closes now and then and CPF sends a trickle to path 2 (about
    // 1 Mbit/s on average; docs/ccid5.md). What we assert is that behaviour:
    let runs = tunnel_runs("fig6_udp_multipath.toml");
    let (_, out) = runs
        .iter()
        .find(|(cc, _)| cc == "ccid2")
        .expect("a CCID2 run");
    let trace = out.result.trace.as_ref().expect("traced");
    let (path1, path2) = (&trace.tunnels[0][1], &trace.tunnels[0][2]);
    let link1 = trace
        .links
        .iter()
        .find(|l| l.name == "path1")
        .expect("link");
    let drops = col(link1, "dropped_packets");
    let first_drop = first_after(link1, 0.0, |i| drops[i] > 0.0).expect("path 1 loses");
    let rx2 = col(path2, "rx_rate_bps");
    let window: Vec<f64> = (0..rx2.len())
        .filter(|&i| path2.time_s[i] > 5.0 && path2.time_s[i] <= first_drop)
        .map(|i| rx2[i])
        .collect();
    let before = window.iter().sum::<f64>() / window.len() as f64;
    // Something reaches path 2 before the loss (more than the claim's "nothing", 1 % of the
    // stream) but little: at most 2 Mbit/s on average, against the 5 it carries once path 1
    // has halved its window (our model: 1.0).
    assert!(
        (0.15e6..=2e6).contains(&before),
        "path 2 before path 1's first drop at {first_drop} s: {before} bit/s"
    );
    // The bulk moves only when path 1's sender sees its loss: path 2 first receives 4 Mbit/s
    // in an interval at or after the first loss path 1 declares (the CCID5 claim's threshold).
    let lost1 = col(path1, "lost_packets");
    let seen = first_after(path1, 0.0, |i| lost1[i] > 0.0).expect("path 1 sees its loss");
    let bulk = first_after(path2, 5.0, |i| rx2[i] >= 4e6).expect("path 2 takes the excess");
    assert!(
        bulk >= seen - 1e-9,
        "path 2 carries 4 Mbit/s at {bulk} s, path 1 sees its loss at {seen} s"
    );
}

#[test]
fn figure_6_ccid5_in_the_tunnel_never_leaves_startup() {
    // Not a claim of the paper but the cause of our CCID5 numbers (docs/ccid5.md): the
    // scheduler hands a subflow a packet only when its window has room, so Linux's
    // application-limited test (ccid5.c dccp_rate_check_app_limited) marks every rate sample
    // and the full-pipe check never counts a round. Path 1 stays in Startup (apart from
    // ProbeRTT) for the whole run, with the BtlBw it measured before the drop.
    let runs = tunnel_runs("fig6_udp_multipath.toml");
    let (_, out) = runs
        .iter()
        .find(|(cc, _)| cc == "ccid5")
        .expect("a CCID5 run");
    let path1 = &out.result.trace.as_ref().expect("traced").tunnels[0][1];
    assert!(
        path1
            .mode
            .iter()
            .all(|m| ["startup", "probe_rtt"].contains(m)),
        "{:?}",
        path1.mode
    );
    assert!(col(path1, "full_bw_reached").iter().all(|&v| v == 0.0));
    // BtlBw at the end: still above the 10 Mbit/s the path has had since 5 s (the 15 Mbit/s
    // stream measured before the drop; no sample below it enters the max filter).
    let btl_bw = *col(path1, "btl_bw_bps").last().expect("samples");
    assert!(btl_bw > 12e6, "BtlBw {btl_bw} bit/s");
}

#[test]
fn figure_7_cubic_fills_both_paths_and_ccid5_keeps_their_latencies_equal_and_lower() {
    let fig = figure("Fig. 7");
    // §4.3-4.4: Cubic's goodput over the 20 s >= 16 Mbit/s under either CCID (the paper
    // 17.4 and 18 of the 20 Mbit/s); with CCID5 the two paths' mean latencies within 1.5x of
    // each other ("not a perceptible difference"), and its mean end-to-end latency below
    // CCID2's.
    fig.check(&["goodput", "ccid5_equal_latency", "ccid5_lower_latency"])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(fig.data.len(), 2 * 3);
}

#[test]
fn the_report_holds_all_but_the_ccid2_path_2_claim() {
    // Fig. 5's 4, Fig. 6's 5 and Fig. 7's 3 claims; the one that does not hold is Fig. 6's
    // "CCID2 sends nothing on path 2 until path 1's loss" (see the test above).
    let failing: Vec<&str> = report()
        .figures
        .iter()
        .flat_map(|f| &f.claims)
        .filter(|c| !c.holds)
        .map(|c| c.key)
        .collect();
    assert_eq!(failing, ["ccid2_path2_idle_until_loss"]);
    assert_eq!(report().tally(), (11, 12));
}
