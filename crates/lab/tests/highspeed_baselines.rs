//! The high-speed baselines of the SIAD evaluation (the SIAD paper §IV-A: HighSpeed TCP,
//! Scalable TCP and H-TCP) in the simulator, each check stating what the paper or the
//! algorithm's definition says, with the tolerance and its source beside it. Single bulk flow,
//! 50 ms one-way delay each way (the paper's 100 ms RTT), drop-tail bottleneck, 60 s.

#[allow(dead_code)]
mod common;

use common::{dumbbell, summary};
use kleinrock_lab::metrics::Summary;

const BASELINES: [&str; 3] = ["highspeed", "scalable", "htcp"];

fn run(cc: &str, rate: &str, buffer: &str) -> Summary {
    summary(&dumbbell(cc, rate, "50ms", buffer, "60s"))
}

#[test]
fn each_fills_a_one_bdp_link() {
    // A loss-based AIMD flow that keeps at least half its window (1 - b >= 0.5 for all three)
    // keeps a 1-BDP buffer from running dry; the paper's Fig. 4(b) shows every scheme near
    // full utilisation at 1 BDP. Bound 90 % (the task's; measured 99.3 %, 99.6 %, 98.3 %).
    for cc in BASELINES {
        let u = run(cc, "10Mbps", "1bdp").links[0].utilisation;
        assert!(u > 0.9, "{cc}: utilisation {u}");
    }
}

#[test]
fn with_a_quarter_bdp_only_scalable_and_htcp_fill_the_link() {
    // SIAD paper §IV-A (Fig. 4(b)): "only Scalable TCP, H-TCP and TCP SIAD can utilize the
    // link fully with very small buffer configurations". With a buffer of B = 0.25 BDP the
    // pipe stays full iff the window kept after a loss, k (BDP + B), is at least the BDP:
    // k >= 0.8. Scalable keeps 0.875, H-TCP min_RTT / max_RTT = 1 / 1.25 = 0.8; HighSpeed
    // 1 - b(w) = 0.56 to 0.59 at 84 to 125 packets (RFC 3649 table) and NewReno 0.5 do not.
    // Bounds: at least 97 % for the first two, below 95 % for the others (measured 99.6 %,
    // 98.1 % vs 90.7 %, 87.9 %).
    for cc in ["scalable", "htcp"] {
        let u = run(cc, "10Mbps", "0.25bdp").links[0].utilisation;
        assert!(u >= 0.97, "{cc}: utilisation {u}");
    }
    for cc in ["highspeed", "newreno"] {
        let u = run(cc, "10Mbps", "0.25bdp").links[0].utilisation;
        assert!(u < 0.95, "{cc}: utilisation {u}");
    }
}

/// Mean time between loss events of the single flow at `rate` with a 0.5 BDP buffer.
fn loss_event_distance(cc: &str, rate: &str) -> f64 {
    let s = run(cc, rate, "0.5bdp");
    s.flows[0].loss_event_distance_s.expect("loss events")
}

#[test]
fn only_scalable_keeps_its_feedback_rate_as_bandwidth_grows() {
    // SIAD paper §IV-A (Fig. 5(b), 0.5 BDP buffer, bandwidth varied): "only Scalable TCP
    // and TCP SIAD maintain a feedback rate independent of the available bandwidth", while
    // all high-speed schemes "scale better than TCP Reno" (whose distance grows with the BDP).
    // Kelly 2003: MIMD with a = 0.01, b = 0.125 needs ln(1/0.875) / ln(1.01) = 13.4 RTTs from
    // one event to the next at any rate, i.e. 1.34 s to 2.0 s for RTTs of 100 to 150 ms
    // (0.5 BDP of queue at most). Bounds: Scalable within 10 % at 10 and 100 Mbps and inside
    // [1.34, 2.0] s (measured 1.81 s both); HighSpeed and H-TCP at least 1.3 times longer at
    // 100 Mbps but less than Reno's 10 times (measured 1.77 and 2.13 times).
    let (s10, s100) = (
        loss_event_distance("scalable", "10Mbps"),
        loss_event_distance("scalable", "100Mbps"),
    );
    assert!(
        (s100 / s10 - 1.0).abs() < 0.1,
        "scalable: {s10} s vs {s100} s"
    );
    for d in [s10, s100] {
        assert!((1.34..=2.0).contains(&d), "scalable: {d} s between events");
    }
    for cc in ["highspeed", "htcp"] {
        let (d10, d100) = (
            loss_event_distance(cc, "10Mbps"),
            loss_event_distance(cc, "100Mbps"),
        );
        let ratio = d100 / d10;
        assert!((1.3..10.0).contains(&ratio), "{cc}: {d10} s vs {d100} s");
    }
}

#[test]
fn htcp_half_fills_a_one_and_a_half_bdp_buffer() {
    // SIAD paper §IV-A (Fig. 4(a)): "H-TCP reaches the same average queue fill as TCP SIAD
    // [about 50 %] in case of a buffer size of 1.5*BDP", as its faster-than-linear increase
    // "stays longer at a lower queue fill level". Tolerance +-10 points, a figure read by
    // eye (measured 48.5 %).
    let fill = run("htcp", "10Mbps", "1.5bdp").links[0].mean_queue_fill;
    assert!((0.4..=0.6).contains(&fill), "mean queue fill {fill}");
}
