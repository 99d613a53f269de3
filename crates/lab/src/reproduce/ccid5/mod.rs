//! The CCID5 paper (N. Romo Moreno, M. Amend, A. Brunstrom, A. Kassler, V. Rakocevic, "CCID5:
//! An implementation of the BBR Congestion Control algorithm for DCCP and its impact over
//! multi-path scenarios", ANRW 2021).
//!
//! - §3.2.1, Table 1 and Figure 5 (here): one path, a 15 Mbit/s stream, the path limited from
//!   1 Gbit/s to 10 Mbit/s at t = 5 s; TCP with Cubic and BBR, DCCP with CCID 2 and CCID 5.
//!   The received throughput and the per-packet latency of each, over time (CSV) and from 6 s
//!   on (the claims).
//! - §3.3, Tables 2-3 and Figures 6-7 ([`multipath`]): the same stream over an MP-DCCP tunnel
//!   of two such paths (Cheapest Pipe First), and a TCP Cubic flow over two 10 Mbit/s paths
//!   (Round Robin); CCID 2 and CCID 5 on the subflows. Per path, the throughput and latency
//!   over time (CSV) and over the windows the paper's statements speak of (the claims).

mod multipath;

use super::traces::{column, csv, index_at};
use super::{fmt, run_embedded, At, Claim, Figure, PaperInfo, PaperValue, Progress, Report};
use crate::report::{num, Table};
use crate::runner::RunOutput;
use kleinrock_sim::trace::Series;

/// Registry entry.
pub const INFO: PaperInfo = PaperInfo {
    name: "ccid5",
    title: "CCID5: BBR for DCCP, on one path and over MP-DCCP",
    scenarios: &[
        "scenarios/ccid5/fig5_bandwidth_change.toml",
        "scenarios/ccid5/fig6_udp_multipath.toml",
        "scenarios/ccid5/fig7_tcp_multipath.toml",
    ],
    run,
};

const FIG5: &str = include_str!("../../../../../scenarios/ccid5/fig5_bandwidth_change.toml");

/// From when the claims measure: a second after the drop, as the acceptance criteria read
/// the paper's "from then on".
const FROM_S: f64 = 6.0;
/// The end of the run.
const TO_S: f64 = 10.0;
/// CCID 5's and BBR's received rate from 6 s on, at least (of the 10 Mbit/s link's 9.7 of
/// payload).
const MIN_RX_BPS: f64 = 9e6;
/// Their 95th-percentile latency from 6 s on, at most: "avoiding buffer bloat", which a
/// 1000-packet buffer at 10 Mbit/s (1.2 s) would not be.
const MAX_P95_MS: f64 = 50.0;
/// How much higher the loss-based protocols' 95th-percentile latency is, at least.
const FILL_FACTOR: f64 = 10.0;
/// When CCID 2's first loss falls: the buffer fills at about 7.4 s in our model; the paper
/// reads "near to t = 8 s" (§4.2, about the same drop over MP-DCCP, where Figure 6 uses it too).
const FIRST_LOSS_S: (f64, f64) = (7.0, 9.5);

/// The stream's rate before the drop (Table 1), and the limit after it, bit/s: "the received
/// throughput is immediately limited to the value set by the tc configuration" (§4.1).
const STREAM_BPS: f64 = 15e6;
const LIMIT_BPS: f64 = 10e6;
/// When the path drops to 10 Mbit/s (Table 1).
const DROP_S: f64 = 5.0;

/// Runs the experiment and builds the report.
pub fn run(progress: Progress) -> Result<Report, String> {
    let (_, outs) = run_embedded("fig5_bandwidth_change.toml", FIG5, progress)?;
    let (fig6_set, fig6_outs) = run_embedded("fig6_udp_multipath.toml", multipath::FIG6, progress)?;
    let (fig7_set, fig7_outs) = run_embedded("fig7_tcp_multipath.toml", multipath::FIG7, progress)?;
    Ok(Report {
        paper: INFO.name.to_string(),
        title: INFO.title.to_string(),
        figures: vec![
            figure5(&outs)?,
            multipath::figure6(&fig6_set, &fig6_outs)?,
            multipath::figure7(&fig7_set, &fig7_outs)?,
        ],
    })
}

/// What one protocol did from 6 s on.
struct Row<'a> {
    name: &'a str,
    rx_bps: f64,
    latency_mean_ms: f64,
    latency_p95_ms: f64,
    first_loss_s: Option<f64>,
    queue_drops: Option<u64>,
    trace: &'a Series,
}

fn row(out: &RunOutput) -> Result<Row<'_>, String> {
    let flow = &out.summary.flows[0];
    let trace = out.result.trace.as_ref().ok_or("the run has no trace")?;
    let series = &trace.flows[0];
    let rx = column(series, "rx_rate_bps")?;
    let latency = flow
        .latency
        .ok_or_else(|| format!("`{}` has no latency samples", flow.name))?;
    let link = &trace.links[0];
    let drops = column(link, "dropped_packets")?;
    let first_loss_s = drops.iter().position(|&d| d > 0.0).map(|i| link.time_s[i]);
    Ok(Row {
        name: &flow.name,
        rx_bps: mean_between(series, rx, FROM_S, TO_S),
        latency_mean_ms: latency.mean_ms,
        latency_p95_ms: latency.p95_ms,
        first_loss_s,
        queue_drops: flow.send_queue.map(|q| q.dropped_packets),
        trace: series,
    })
}

/// The mean of per-interval column `values` over the intervals ending in `(from, to]` s: the
/// received rate as a capture at the receiver counts it (every packet that arrives, in any
/// order), as the paper's throughput plots do.
fn mean_between(s: &Series, values: &[f64], from: f64, to: f64) -> f64 {
    let (a, b) = (index_at(s, from + 1e-9), index_at(s, to + 1e-9));
    let window = &values[a..b.min(values.len())];
    window.iter().sum::<f64>() / window.len().max(1) as f64
}

fn find<'a>(rows: &'a [Row<'a>], name: &str) -> Result<&'a Row<'a>, String> {
    rows.iter()
        .find(|r| r.name == name)
        .ok_or_else(|| format!("no run named `{name}`"))
}

fn figure5(outs: &[RunOutput]) -> Result<Figure, String> {
    let rows: Vec<Row> = outs.iter().map(row).collect::<Result<_, _>>()?;
    let mut table = Table::new(&[
        "protocol",
        "rx Mbps 6-10 s",
        "latency avg ms",
        "p95 ms",
        "first loss s",
        "sender drops",
    ]);
    for r in &rows {
        table.row(vec![
            r.name.to_string(),
            fmt(r.rx_bps / 1e6, 2),
            fmt(r.latency_mean_ms, 1),
            fmt(r.latency_p95_ms, 1),
            num(r.first_loss_s, 1),
            r.queue_drops.map_or("-".into(), |d| d.to_string()),
        ]);
    }
    let (bbr, ccid5) = (find(&rows, "BBR")?, find(&rows, "CCID5")?);
    let ccid5_fq = find(&rows, "CCID5-fq")?;
    let (cubic, ccid2) = (find(&rows, "CUBIC")?, find(&rows, "CCID2")?);
    let model_based = [bbr, ccid5];
    let claims = vec![
        Claim::new(
            "full_utilisation",
            &format!(
                "\"Both BBR and CCID5 manage to fully utilize the bandwidth available\" \
                 (criterion: each receives >= {} Mbit/s from {FROM_S} s on)",
                MIN_RX_BPS / 1e6
            ),
            format!(
                "BBR {:.2}, CCID5 {:.2} Mbit/s",
                bbr.rx_bps / 1e6,
                ccid5.rx_bps / 1e6
            ),
            model_based.iter().all(|r| r.rx_bps >= MIN_RX_BPS),
        ),
        Claim::new(
            "low_latency",
            &format!(
                "\"... while avoiding buffer bloat and therefore, keeping the values of the \
                 latencies low\" (criterion: 95th-percentile per-packet latency from {FROM_S} s \
                 on below {MAX_P95_MS} ms)"
            ),
            format!(
                "BBR {:.1} ms, CCID5 {:.1} ms (on a host that paces, {:.1} ms; docs/ccid5.md)",
                bbr.latency_p95_ms, ccid5.latency_p95_ms, ccid5_fq.latency_p95_ms
            ),
            model_based.iter().all(|r| r.latency_p95_ms < MAX_P95_MS),
        ),
        Claim::new(
            "loss_based_fill",
            &format!(
                "\"CUBIC and CCID2 fill up the buffer causing bigger latencies\" (criterion: \
                 their 95th-percentile latency from {FROM_S} s on at least {FILL_FACTOR}x \
                 CCID5's)"
            ),
            format!(
                "CUBIC {:.1} ms, CCID2 {:.1} ms ({:.0}x and {:.0}x CCID5's)",
                cubic.latency_p95_ms,
                ccid2.latency_p95_ms,
                cubic.latency_p95_ms / ccid5.latency_p95_ms,
                ccid2.latency_p95_ms / ccid5.latency_p95_ms
            ),
            [cubic, ccid2]
                .iter()
                .all(|r| r.latency_p95_ms >= FILL_FACTOR * ccid5.latency_p95_ms),
        ),
        Claim::new(
            "ccid2_first_loss",
            &format!(
                "\"... and even packet loss in the case of CCID2\", near t = 8 s (§3.3) \
                 (criterion: CCID2's first loss at the bottleneck within {}-{} s)",
                FIRST_LOSS_S.0, FIRST_LOSS_S.1
            ),
            num(ccid2.first_loss_s, 1) + " s",
            ccid2
                .first_loss_s
                .is_some_and(|t| (FIRST_LOSS_S.0..=FIRST_LOSS_S.1).contains(&t)),
        ),
    ];
    Ok(Figure {
        id: "Fig. 5".into(),
        title: "latency and received throughput: BBR vs CUBIC, CCID2 vs CCID5 (15 Mbit/s, \
                1 Gbit/s -> 10 Mbit/s at 5 s)"
            .into(),
        table: table.render(),
        claims,
        data: rows.iter().map(series_csv).collect(),
        paper: rows.iter().flat_map(figure5_paper).collect(),
    })
}

/// The received throughput the paper states for one protocol of Figure 5: the stream's rate
/// before the drop, the limit after it (none for our paced CCID 5 variant, which the paper
/// did not run).
fn figure5_paper(r: &Row) -> Vec<PaperValue> {
    if r.name == "CCID5-fq" {
        return Vec::new();
    }
    let file = series_file(r);
    let column = "rx_rate_bps";
    vec![
        PaperValue::new(
            &file,
            column,
            At::X(0.0, DROP_S),
            STREAM_BPS,
            "Table 1: the 15 Mbit/s stream",
        ),
        PaperValue::new(
            &file,
            column,
            At::X(DROP_S, TO_S),
            LIMIT_BPS,
            "§4.1: \"immediately limited to the value set by the tc configuration\", 10 Mbit/s",
        ),
    ]
}

/// One protocol's time series: received rate and mean per-packet latency per interval, with
/// the rest of its trace.
fn series_csv(r: &Row) -> (String, String) {
    (series_file(r), csv(r.trace))
}

/// The name of one protocol's time series file.
fn series_file(r: &Row) -> String {
    format!("fig5_{}.csv", r.name.to_lowercase())
}
