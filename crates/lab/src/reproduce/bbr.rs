//! The BBR paper (Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson: "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016): Figures 5, 6-7, 8, 10 and 12,
//! the token-bucket policer, and BBR v2 as the QUIC-DC paper's baseline. The acceptance
//! criteria (issue 3) turn the paper's qualitative statements into numbers; each claim below
//! quotes the paper and states the criterion.

use super::traces::{self, column, entries, first_not_in_mode, index_at, rate_bps};
use super::{
    fmt, point_value, run_embedded, At, Claim, Figure, PaperInfo, PaperValue, Progress, Report,
};
use crate::metrics::Summary;
use crate::report::{num, Table};
use crate::runner::RunOutput;
use crate::scenario::Scenario;
use kleinrock_sim::trace::{Series, Trace};

/// Registry entry.
pub const INFO: PaperInfo = PaperInfo {
    name: "bbr",
    title: "BBR: Congestion-Based Congestion Control (ACM Queue 2016)",
    scenarios: &[
        "scenarios/bbr/bbr2_pair.toml",
        "scenarios/bbr/bbr2_single.toml",
        "scenarios/bbr/fig10_random_loss.toml",
        "scenarios/bbr/fig12_buffer.toml",
        "scenarios/bbr/fig5_bandwidth_step.toml",
        "scenarios/bbr/fig6_startup.toml",
        "scenarios/bbr/fig8_sharing.toml",
        "scenarios/bbr/policer.toml",
    ],
    run,
};

const FIG5: &str = include_str!("../../../../scenarios/bbr/fig5_bandwidth_step.toml");
const FIG6: &str = include_str!("../../../../scenarios/bbr/fig6_startup.toml");
const FIG8: &str = include_str!("../../../../scenarios/bbr/fig8_sharing.toml");
const FIG10: &str = include_str!("../../../../scenarios/bbr/fig10_random_loss.toml");
const FIG12: &str = include_str!("../../../../scenarios/bbr/fig12_buffer.toml");
const POLICER: &str = include_str!("../../../../scenarios/bbr/policer.toml");
const BBR2_SINGLE: &str = include_str!("../../../../scenarios/bbr/bbr2_single.toml");
const BBR2_PAIR: &str = include_str!("../../../../scenarios/bbr/bbr2_pair.toml");

/// Runs every experiment and builds the report.
pub fn run(progress: Progress) -> Result<Report, String> {
    Ok(Report {
        paper: INFO.name.to_string(),
        title: INFO.title.to_string(),
        figures: vec![
            fig5(progress)?,
            fig6_7(progress)?,
            fig8(progress)?,
            fig10(progress)?,
            fig12(progress)?,
            policer(progress)?,
            bbr2(progress)?,
        ],
    })
}

fn trace(out: &RunOutput) -> Result<&Trace, String> {
    out.result
        .trace
        .as_ref()
        .ok_or_else(|| "the scenario records no trace".to_string())
}

/// The flow and bottleneck-link traces of a run as CSV data files.
fn trace_data(prefix: &str, out: &RunOutput) -> Result<Vec<(String, String)>, String> {
    let t = trace(out)?;
    let mut data: Vec<(String, String)> = t
        .flows
        .iter()
        .map(|s| (format!("{prefix}_flow_{}.csv", s.name), traces::csv(s)))
        .collect();
    data.push((format!("{prefix}_bottleneck.csv"), traces::csv(&t.links[0])));
    Ok(data)
}

/// Bandwidth-delay product of flow 0 at the bottleneck's initial rate, bytes.
fn bdp_bytes(s: &Scenario) -> f64 {
    s.links[0].rate.bytes_in(s.base_rtt(0))
}

/// Seconds after the step down within which the queue must be below 0.5 BDP for good. Issue
/// 14 set 4 s (3 s before): the 10-round BtlBw filter keeps the 20 Mbps sample for about
/// 1.8 s of backlog-stretched rounds, then v1 drains the cwnd-clamped standing queue only
/// through its 1 % pacing margin (docs/bbr.md, "Where the first criteria were not met").
pub const STEP_DOWN_DRAIN_S: f64 = 4.0;

/// Figure 5's bottleneck rates as the paper states them, `(from s, to s, bit/s)`: "BtlBw
/// abruptly doubling to 20Mbps after 20 seconds ... then dropping to 10Mbps after another 20
/// seconds".
const FIG5_STEPS: [(f64, f64, f64); 3] =
    [(0.0, 20.0, 10e6), (20.0, 40.0, 20e6), (40.0, 60.0, 10e6)];

/// The rates BBR "converges to" in Figure 5, over the delivery rate of the flow's trace `file`.
fn fig5_paper(file: &str) -> Vec<PaperValue> {
    FIG5_STEPS
        .iter()
        .map(|&(from, to, bps)| {
            let label = format!(
                "Fig. 5: the bottleneck rate, {} Mbit/s from {from} s, which \"BBR converges to\"",
                bps / 1e6
            );
            PaperValue::new(file, "rx_rate_bps", At::X(from, to), bps, &label)
        })
        .collect()
}

/// Figure 5: a bandwidth step 10 -> 20 -> 10 Mbps.
pub fn fig5(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/bbr/fig5_bandwidth_step.toml", FIG5, progress)?;
    let (scenario, out) = (&set.points[0], &outs[0]);
    let t = trace(out)?;
    let (flow, link) = (&t.flows[0], &t.links[0]);
    let delivered = column(flow, "delivered_bytes")?;
    let queue = column(link, "queue_bytes")?;
    let bdp = bdp_bytes(scenario);
    let rate_at = |i: usize| rate_bps(flow, delivered, i, 0.25);
    let up = (index_at(flow, 20.0)..flow.time_s.len())
        .find(|&i| rate_at(i) >= 0.9 * 20e6)
        .map(|i| flow.time_s[i] - 20.0);
    // The step down first builds a backlog (the BtlBw filter still holds 20 Mbps for up to
    // 10 rounds), then drains it: measure when the queue is below 0.5 BDP for good.
    let i40 = index_at(link, 40.0);
    let peak = queue[i40..].iter().cloned().fold(0.0, f64::max) / bdp;
    let down = (i40..link.time_s.len())
        .rev()
        .find(|&i| queue[i] >= 0.5 * bdp)
        .map_or(0.0, |i| {
            link.time_s[(i + 1).min(link.time_s.len() - 1)] - 40.0
        });
    let (i40, i60) = (index_at(flow, 40.0), flow.time_s.len() - 1);
    let goodput_after =
        (delivered[i60] - delivered[i40]) * 8.0 / (flow.time_s[i60] - flow.time_s[i40]);
    let mut table = Table::new(&["measure", "ours"]);
    table.row(vec![
        "time to 90 % of 20 Mbps after the step up, s".into(),
        num(up, 2),
    ]);
    table.row(vec![
        "largest queue after the step down, BDP".into(),
        fmt(peak, 2),
    ]);
    table.row(vec![
        "time until the queue stays < 0.5 BDP after the step down, s".into(),
        fmt(down, 2),
    ]);
    table.row(vec![
        "goodput from 40 s to 60 s, Mbps".into(),
        fmt(goodput_after / 1e6, 3),
    ]);
    Ok(Figure {
        id: "Fig. 5".into(),
        title: "bandwidth step 10 -> 20 -> 10 Mbps at 20 s and 40 s, 40 ms RTT".into(),
        table: table.render(),
        claims: vec![
            Claim::new(
                "step_up",
                "\"BBR converges to the new bottleneck rate exponentially fast\" \
                 (criterion: delivery rate >= 90 % of 20 Mbps within 3 s of the step up)",
                format!("{} s", num(up, 2)),
                up.is_some_and(|d| d <= 3.0),
            ),
            Claim::new(
                "step_down_queue",
                "after the drop to 10 Mbps the excess queue drains \
                 (criterion: the queue is below 0.5 BDP for good within 4 s)",
                format!("{} s (peak {} BDP)", fmt(down, 2), fmt(peak, 2)),
                down <= STEP_DOWN_DRAIN_S,
            ),
            Claim::new(
                "goodput_after_step_down",
                "the link stays full after the drop (criterion: goodput >= 90 % of 10 Mbps)",
                format!("{} Mbps", fmt(goodput_after / 1e6, 3)),
                goodput_after >= 9e6,
            ),
        ],
        data: trace_data("fig5", out)?,
        paper: fig5_paper(&format!("fig5_flow_{}.csv", flow.name)),
    })
}

/// Start-up of the BBR run of Figure 6: `(round count and time at leaving Startup, time
/// Drain ends, delay from then until the queue is below 0.1 BDP)`.
struct Startup {
    exit_round: Option<f64>,
    exit_s: Option<f64>,
    drain_end_s: Option<f64>,
    drained_after_s: Option<f64>,
}

fn startup(flow: &Series, link: &Series, bdp: f64) -> Result<Startup, String> {
    let rounds = column(flow, "round_count")?;
    let queue = column(link, "queue_bytes")?;
    let exit = first_not_in_mode(flow, 0, "startup");
    let drain_end = exit.and_then(|i| first_not_in_mode(flow, i, "drain"));
    let drained_after = drain_end.and_then(|i| {
        let t0 = flow.time_s[i];
        let j = index_at(link, t0);
        (j..queue.len())
            .find(|&k| queue[k] < 0.1 * bdp)
            .map(|k| link.time_s[k] - t0)
    });
    Ok(Startup {
        exit_round: exit.map(|i| rounds[i.saturating_sub(1)]),
        exit_s: exit.map(|i| flow.time_s[i]),
        drain_end_s: drain_end.map(|i| flow.time_s[i]),
        drained_after_s: drained_after,
    })
}

/// Figure 7's Cubic "fills the available buffer, then cycles from 70% to 100% full", on the
/// queue of bottleneck trace `file` of scenario `s`, from 2 s (after our Cubic's first fill).
fn fig7_paper(file: &str, s: &Scenario) -> PaperValue {
    let (column, full) = match s.links[0].buffer {
        kleinrock_sim::BufferLimit::Packets(n) => ("queue_packets", n as f64),
        kleinrock_sim::BufferLimit::Bytes(n) => ("queue_bytes", n as f64),
    };
    let label = "Fig. 7: Cubic \"fills the available buffer, then cycles from 70% to 100% full\" \
                 (drawn from 2 s, after the first fill)";
    PaperValue::range(file, column, At::X(2.0, 8.0), (0.7 * full, full), label)
}

/// Figures 6 and 7: start-up of BBR and Cubic.
pub fn fig6_7(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/bbr/fig6_startup.toml", FIG6, progress)?;
    let scenario = &set.points[0];
    let bdp = bdp_bytes(scenario);
    let bdp_packets = bdp / 1500.0;
    let bound = bdp_packets.log2() + 4.0;
    let base_ms = scenario.base_rtt(0).as_secs_f64() * 1e3;
    let t = trace(&outs[0])?;
    let s = startup(&t.flows[0], &t.links[0], bdp)?;
    let median = |o: &RunOutput| o.summary.flows[0].rtt_p50_ms.unwrap_or(f64::NAN) / base_ms;
    let (bbr_med, cubic_med) = (median(&outs[0]), median(&outs[1]));
    let mut table = Table::new(&["cc", "median RTT / base", "RTT p95 ms", "mean queue fill %"]);
    for o in &outs {
        let f = &o.summary.flows[0];
        table.row(vec![
            f.cc.clone(),
            fmt(median(o), 2),
            num(f.rtt_p95_ms, 1),
            fmt(o.summary.links[0].mean_queue_fill * 100.0, 1),
        ]);
    }
    let mut rendered = table.render();
    rendered.push_str(&format!(
        "BBR left Startup at {} s after {} rounds, Drain at {} s (BDP {} packets)\n",
        num(s.exit_s, 3),
        num(s.exit_round, 0),
        num(s.drain_end_s, 3),
        fmt(bdp_packets, 1)
    ));
    let mut data = trace_data("fig6_bbr", &outs[0])?;
    data.extend(trace_data("fig6_cubic", &outs[1])?);
    Ok(Figure {
        id: "Fig. 6-7".into(),
        title: "start-up, BBR and Cubic alone on 10 Mbps / 40 ms, 4 BDP buffer, 8 s".into(),
        table: rendered,
        claims: vec![
            Claim::new(
                "startup_rounds",
                "Startup \"discovers BtlBw in log2(BDP) RTTs\" \
                 (criterion: leaves Startup within log2(BDP in packets) + 4 round trips)",
                format!("{} rounds (bound {})", num(s.exit_round, 0), fmt(bound, 1)),
                s.exit_round.is_some_and(|r| r <= bound),
            ),
            Claim::new(
                "startup_drained",
                "\"BBR completely drains its startup queue\" \
                 (criterion: queue < 0.1 BDP within 1 s of leaving Drain)",
                format!("{} s after Drain", num(s.drained_after_s, 3)),
                s.drained_after_s.is_some_and(|d| d <= 1.0),
            ),
            Claim::new(
                "startup_rtt",
                "Fig. 7: \"CUBIC fills the available buffer ... BBR runs with essentially no \
                 queue\" (criterion: median RTT over 8 s: BBR < 1.25x base, Cubic > 2x base)",
                format!("BBR {}x, Cubic {}x", fmt(bbr_med, 2), fmt(cubic_med, 2)),
                bbr_med < 1.25 && cubic_med > 2.0,
            ),
        ],
        data,
        paper: vec![fig7_paper("fig6_cubic_bottleneck.csv", &set.points[1])],
    })
}

/// ProbeRTT entries after `after` s, grouped into episodes: entries closer than `gap` s
/// belong together. Returns `(episode start, flows in it)`.
fn probe_rtt_episodes(flows: &[Series], after: f64, gap: f64) -> Vec<(f64, usize)> {
    let mut all: Vec<(f64, usize)> = flows
        .iter()
        .enumerate()
        .flat_map(|(k, s)| entries(s, "probe_rtt").into_iter().map(move |t| (t, k)))
        .filter(|&(t, _)| t > after)
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut episodes: Vec<(f64, Vec<usize>)> = Vec::new();
    let mut last = f64::NEG_INFINITY;
    for (t, k) in all {
        match episodes.last_mut() {
            Some(e) if t - last <= gap => e.1.push(k),
            _ => episodes.push((t, vec![k])),
        }
        last = t;
    }
    episodes
        .into_iter()
        .map(|(t, mut ks)| {
            ks.sort_unstable();
            ks.dedup();
            (t, ks.len())
        })
        .collect()
}

/// Figure 8: five BBR flows sharing a bottleneck.
pub fn fig8(progress: Progress) -> Result<Figure, String> {
    let (_, outs) = run_embedded("scenarios/bbr/fig8_sharing.toml", FIG8, progress)?;
    let out = &outs[0];
    let t = trace(out)?;
    let n = t.flows.len();
    let per_flow: Vec<usize> = t
        .flows
        .iter()
        .map(|s| entries(s, "probe_rtt").len())
        .collect();
    // After every flow has joined (4 s) and had time for its own first ProbeRTT (10 s).
    let episodes = probe_rtt_episodes(&t.flows, 14.0, 0.5);
    let last_all = episodes.last().is_some_and(|&(_, k)| k == n);
    let jfi = out.summary.jain_index.unwrap_or(0.0);
    let mut table = Table::new(&["flow", "goodput last 20 s, Mbps", "ProbeRTT episodes"]);
    for (f, count) in out.summary.flows.iter().zip(&per_flow) {
        table.row(vec![
            f.name.clone(),
            fmt(f.goodput_bps / 1e6, 2),
            count.to_string(),
        ]);
    }
    let mut rendered = table.render();
    rendered.push_str(&format!(
        "Jain's index over the last 20 s: {}\n",
        fmt(jfi, 4)
    ));
    let groups: Vec<String> = episodes
        .iter()
        .map(|(t, k)| format!("{t:.1} s: {k} flows"))
        .collect();
    rendered.push_str(&format!(
        "ProbeRTT episodes after 14 s: {}\n",
        groups.join("; ")
    ));
    Ok(Figure {
        id: "Fig. 8".into(),
        title: "five BBR flows, 1 s apart, on 100 Mbps / 10 ms, 2 BDP buffer, 60 s".into(),
        table: rendered,
        claims: vec![
            Claim::new(
                "fair_share",
                "flows \"converge to a fair share\" (criterion: Jain's index over the last \
                 20 s of 60 s >= 0.9)",
                fmt(jfi, 4),
                jfi >= 0.9,
            ),
            Claim::new(
                "probe_rtt_sync",
                "ProbeRTT states are visible and \"self-synchroniz[e]\" (criterion: every flow \
                 enters ProbeRTT, and the last episode has all five flows within 0.5 s)",
                format!(
                    "episodes per flow {per_flow:?}; last episode: {} flows",
                    episodes.last().map_or(0, |e| e.1)
                ),
                per_flow.iter().all(|&c| c > 0) && last_all,
            ),
        ],
        data: trace_data("fig8", out)?,
        paper: Vec::new(),
    })
}

/// Figure 10: goodput vs random loss.
pub fn fig10(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/bbr/fig10_random_loss.toml", FIG10, progress)?;
    let link_bps = set.points[0].links[0].rate.bits_per_sec();
    let goodput = |cc: &str, p: f64| -> Option<f64> {
        set.points
            .iter()
            .zip(&outs)
            .find(|(s, _)| s.flows[0].cc_name() == cc && loss_of(s) == p)
            .map(|(_, o)| o.summary.flows[0].goodput_bps)
    };
    let losses: Vec<f64> = set
        .points
        .iter()
        .filter(|s| s.flows[0].cc_name() == "bbr")
        .map(loss_of)
        .collect();
    let mut table = Table::new(&["loss %", "BBR Mbps", "Cubic Mbps", "(1-p) x link Mbps"]);
    let mut csv = String::from("loss_pct,bbr_mbps,cubic_mbps,limit_mbps\n");
    let mut bbr_ok = true;
    for &p in &losses {
        let (b, c) = (goodput("bbr", p), goodput("cubic", p));
        let limit = (1.0 - p) * link_bps;
        if p <= 0.05 {
            bbr_ok &= b.is_some_and(|b| b >= 0.9 * limit);
        }
        table.row(vec![
            format!("{}", p * 100.0),
            num(b.map(|v| v / 1e6), 2),
            num(c.map(|v| v / 1e6), 3),
            fmt(limit / 1e6, 1),
        ]);
        csv.push_str(&format!(
            "{},{},{},{}\n",
            p * 100.0,
            b.unwrap_or(f64::NAN) / 1e6,
            c.unwrap_or(f64::NAN) / 1e6,
            limit / 1e6
        ));
    }
    let cubic_1 = goodput("cubic", 0.01).unwrap_or(f64::NAN);
    let drop =
        goodput("cubic", 0.00001).unwrap_or(f64::NAN) / goodput("cubic", 0.001).unwrap_or(f64::NAN);
    Ok(Figure {
        id: "Fig. 10".into(),
        title: "goodput vs random loss, 100 Mbps / 100 ms, 60 s, 1 BDP buffer".into(),
        table: table.render(),
        claims: vec![
            Claim::new(
                "loss_tolerance",
                "\"BBR meets this limit [(1 - p) x link] up to a 5% loss\" \
                 (criterion: goodput >= 0.9 x (1 - p) x link for p <= 5 %)",
                "see table".to_string(),
                bbr_ok,
            ),
            Claim::new(
                "cubic_stalls",
                "Cubic \"totally stalls above 1%\" (criterion: at 1 % below 10 % of the link)",
                format!("{} Mbps", fmt(cubic_1 / 1e6, 3)),
                cubic_1 < 0.1 * link_bps,
            ),
            Claim::new(
                "cubic_drop_at_0.1",
                "Cubic's \"throughput decreases by 10 times at 0.1% loss\" (reported, not \
                 an acceptance criterion)",
                format!("{}x lower at 0.1 % than at 0.001 %", fmt(drop, 1)),
                drop >= 5.0,
            ),
        ],
        data: vec![("fig10_goodput_vs_loss.csv".into(), csv)],
        paper: fig10_paper(&losses, link_bps),
    })
}

/// "BBR meets this limit [(1 - p) x link] up to a 5% loss": the limit at each of our loss
/// rates up to 5 %, on BBR's goodput.
fn fig10_paper(losses: &[f64], link_bps: f64) -> Vec<PaperValue> {
    let label = "Fig. 10: \"BBR meets this limit [(1 - p) x link] up to a 5% loss\"";
    losses
        .iter()
        .filter(|&&p| p <= 0.05)
        .map(|&p| {
            let at = At::X(p * 100.0, p * 100.0);
            let limit = (1.0 - p) * link_bps / 1e6;
            PaperValue::new("fig10_goodput_vs_loss.csv", "bbr_mbps", at, limit, label)
        })
        .collect()
}

fn loss_of(s: &Scenario) -> f64 {
    match s.links[0].loss {
        kleinrock_sim::LossConfig::Bernoulli { p } => p,
        _ => 0.0,
    }
}

/// Mean over the flows of their median RTT, ms.
fn median_rtt(summary: &Summary) -> f64 {
    let v: Vec<f64> = summary.flows.iter().filter_map(|f| f.rtt_p50_ms).collect();
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// Figure 12: median RTT vs buffer size with eight flows.
pub fn fig12(progress: Progress) -> Result<Figure, String> {
    let (set, outs) = run_embedded("scenarios/bbr/fig12_buffer.toml", FIG12, progress)?;
    let mut table = Table::new(&["buffer", "BBR median RTT ms", "Cubic median RTT ms"]);
    let mut csv = String::from("buffer_packets,bbr_median_rtt_ms,cubic_median_rtt_ms\n");
    // BBR per buffer: (label, packets, median RTT ms, mean loss rate).
    let mut bbr = Vec::new();
    let mut cubic = Vec::new();
    for (s, o) in set.points.iter().zip(&outs) {
        if s.flows[0].cc_name() == "bbr" {
            let flows = &o.summary.flows;
            let loss = flows.iter().map(|f| f.loss_rate).sum::<f64>() / flows.len().max(1) as f64;
            bbr.push((
                buffer_label(s),
                buffer_packets(s),
                median_rtt(&o.summary),
                loss,
            ));
        } else {
            cubic.push(median_rtt(&o.summary));
        }
    }
    for ((label, _, b, _), c) in bbr.iter().zip(&cubic) {
        table.row(vec![label.clone(), fmt(*b, 0), fmt(*c, 0)]);
        csv.push_str(&format!("{},{b},{c}\n", label.trim_end_matches("pkt")));
    }
    let spread = |v: &[f64]| {
        let max = v.iter().cloned().fold(f64::MIN, f64::max);
        let min = v.iter().cloned().fold(f64::MAX, f64::min);
        max / min
    };
    // The criterion covers 100-400 packets (issue 14). At 50 packets the buffer is smaller
    // than the queue eight flows' cwnd floors (4 packets plus a 3-packet allowance each) need
    // when the BDP is under one packet: it overflows, v1 ignores the loss, and the buffer
    // size sets the RTT. That point is shown and explained, not asserted (docs/bbr.md).
    let bbr_all: Vec<f64> = bbr.iter().map(|b| b.2).collect();
    let bbr_asserted: Vec<f64> = bbr
        .iter()
        .filter(|b| b.1.is_some_and(|n| n >= FIG12_MIN_BUFFER_PACKETS))
        .map(|b| b.2)
        .collect();
    let (bs, bs_all, cs) = (spread(&bbr_asserted), spread(&bbr_all), spread(&cubic));
    let mut rendered = table.render();
    for (label, _, rtt, loss) in bbr
        .iter()
        .filter(|b| b.1.is_some_and(|n| n < FIG12_MIN_BUFFER_PACKETS))
    {
        rendered.push_str(&format!(
            "BBR at {label} (shown, not asserted): {} % loss, median RTT {} ms. Eight flows \
             at their 4-packet cwnd floor (+3 packets of allowance) need more queue than \
             {label} holds, so the buffer overflows, and v1 does not react to loss \
             (docs/bbr.md).\n",
            fmt(loss * 100.0, 1),
            fmt(*rtt, 0)
        ));
    }
    Ok(Figure {
        id: "Fig. 12".into(),
        title: "steady-state median RTT vs buffer, 8 flows, 128 kbps / 40 ms, 300 s".into(),
        table: rendered,
        claims: vec![
            Claim::new(
                "bbr_rtt_flat",
                "\"BBR keeps the queue near its minimum, independent of ... buffer size\" \
                 (criterion: BBR's median RTT changes by < 1.5x over 100-400 packets; the \
                 50-packet point is shown, not asserted)",
                format!(
                    "{}x over 100-400 packets ({}x with 50 packets)",
                    fmt(bs, 2),
                    fmt(bs_all, 2)
                ),
                bs < 1.5,
            ),
            Claim::new(
                "cubic_rtt_grows",
                "\"CUBIC flows always fill the buffer, so the delay grows linearly with buffer \
                 size\" (criterion: Cubic's median RTT grows > 4x from 50 to 400 packets)",
                format!("{}x", fmt(cs, 2)),
                cs > 4.0,
            ),
        ],
        data: vec![("fig12_median_rtt_vs_buffer.csv".into(), csv)],
        paper: Vec::new(),
    })
}

/// The smallest buffer (packets) of Figure 12's sweep that the BBR criterion covers.
pub const FIG12_MIN_BUFFER_PACKETS: u64 = 100;

fn buffer_packets(s: &Scenario) -> Option<u64> {
    match s.links[0].buffer {
        kleinrock_sim::BufferLimit::Packets(n) => Some(n),
        kleinrock_sim::BufferLimit::Bytes(_) => None,
    }
}

fn buffer_label(s: &Scenario) -> String {
    match s.links[0].buffer {
        kleinrock_sim::BufferLimit::Packets(n) => format!("{n}pkt"),
        kleinrock_sim::BufferLimit::Bytes(n) => format!("{n}B"),
    }
}

/// The token-bucket policer and BBR v1's long-term model.
pub fn policer(progress: Progress) -> Result<Figure, String> {
    // The first point runs the long-term model (the default); the second turns it off
    // (`lt_bw = false`), the baseline the loss after detection is compared with (issue 14).
    let (_, outs) = run_embedded("scenarios/bbr/policer.toml", POLICER, progress)?;
    let out = &outs[0];
    let flow = &trace(out)?.flows[0];
    let engaged = column(flow, "lt_use_bw")?;
    let detect = engaged.iter().position(|&v| v > 0.5);
    let before = detect.map(|i| loss_between(flow, 0, i)).transpose()?;
    let after = detect
        .map(|i| loss_between(flow, i, flow.time_s.len() - 1))
        .transpose()?;
    // Without the model, over the same interval: from the time the model engaged to the end.
    let off = &trace(&outs[1])?.flows[0];
    let off_after = detect
        .map(|i| loss_between(off, index_at(off, flow.time_s[i]), off.time_s.len() - 1))
        .transpose()?;
    let f = &out.summary.flows[0];
    let mut table = Table::new(&["measure", "ours"]);
    table.row(vec![
        "long-term model engaged at, s".into(),
        num(detect.map(|i| flow.time_s[i]), 2),
    ]);
    table.row(vec![
        "loss before detection, %".into(),
        num(before.map(|v| v * 100.0), 2),
    ]);
    table.row(vec![
        "loss after detection, %".into(),
        num(after.map(|v| v * 100.0), 2),
    ]);
    table.row(vec![
        "same interval, long-term model off (lt_bw = false), %".into(),
        num(off_after.map(|v| v * 100.0), 2),
    ]);
    table.row(vec![
        "goodput, Mbps (policer 3 Mbps)".into(),
        fmt(f.goodput_bps / 1e6, 3),
    ]);
    Ok(Figure {
        id: "Policer".into(),
        title: "BBR v1 behind a token-bucket policer at 30 % of a 10 Mbps link".into(),
        table: table.render(),
        claims: vec![
            Claim::new(
                "policer_detected",
                "\"we added policer detection and an explicit policer model to BBR\" \
                 (criterion: the long-term model engages, lt_use_bw = 1 in the trace)",
                format!("engaged at {} s", num(detect.map(|i| flow.time_s[i]), 2)),
                detect.is_some(),
            ),
            Claim::new(
                "policer_loss",
                "the model cuts the \"continuous moderate losses\" \
                 (criterion: loss after detection below the loss over the same interval with \
                 the long-term model off)",
                format!(
                    "{} % with the model, {} % without",
                    num(after.map(|v| v * 100.0), 2),
                    num(off_after.map(|v| v * 100.0), 2)
                ),
                after.zip(off_after).is_some_and(|(on, off)| on < off),
            ),
        ],
        data: trace_data("policer", out)?,
        paper: Vec::new(),
    })
}

/// Lost / sent packets of a flow between trace samples `i` and `j` (0 when nothing was sent).
fn loss_between(flow: &Series, i: usize, j: usize) -> Result<f64, String> {
    let (sent, lost) = (column(flow, "sent_packets")?, column(flow, "lost_packets")?);
    let s = sent[j] - sent[i];
    Ok(if s > 0.0 {
        (lost[j] - lost[i]) / s
    } else {
        0.0
    })
}

/// The sweep key of the pair's PROBE_BW DOWN pacing gain (bbr2 parameter `down_gain`).
const DOWN_GAIN: &str = "flows.0.params.down_gain";

/// BBR v2 alone and in pairs.
pub fn bbr2(progress: Progress) -> Result<Figure, String> {
    let (single_set, single) =
        run_embedded("scenarios/bbr/bbr2_single.toml", BBR2_SINGLE, progress)?;
    let (pair_set, pair) = run_embedded("scenarios/bbr/bbr2_pair.toml", BBR2_PAIR, progress)?;
    let f = &single[0].summary.flows[0];
    let base_ms = single_set.points[0].base_rtt(0).as_secs_f64() * 1e3;
    let rtt_ratio = f.rtt_mean_ms.unwrap_or(f64::NAN) / base_ms;
    // The first point runs v2alpha's defaults (DOWN gain 0.75, shown); the claim is checked
    // at DOWN gain 0.9 (issue 14), the value of draft-ietf-ccwg-bbr and of mvfst's Bbr2.cpp
    // (`kProbeBwDownPacingGain`), the implementation QUIC-DC ran.
    let jfi_at = |gain: &str| -> Result<f64, String> {
        for o in &pair {
            if point_value(&o.summary, DOWN_GAIN)? == gain {
                return Ok(o.summary.jain_index.unwrap_or(0.0));
            }
        }
        Err(format!("bbr2_pair.toml has no point {DOWN_GAIN}={gain}"))
    };
    let (jfi, jfi_default) = (jfi_at("0.9")?, jfi_at("0.75")?);
    let mut table = Table::new(&["run", "goodput Mbps", "loss %", "mean RTT ms", "JFI"]);
    table.row(vec![
        "one flow".into(),
        fmt(f.goodput_bps / 1e6, 3),
        fmt(f.loss_rate * 100.0, 3),
        num(f.rtt_mean_ms, 1),
        "-".into(),
    ]);
    for (point, out) in pair_set.points.iter().zip(&pair) {
        let label = crate::sweep::label(&point.point);
        for g in &out.summary.flows {
            table.row(vec![
                format!("pair, {label}: {}", g.name),
                fmt(g.goodput_bps / 1e6, 3),
                fmt(g.loss_rate * 100.0, 3),
                num(g.rtt_mean_ms, 1),
                num(out.summary.jain_index, 4),
            ]);
        }
    }
    let mut data = trace_data("bbr2_single", &single[0])?;
    data.extend(trace_data("bbr2_pair", &pair[0])?);
    Ok(Figure {
        id: "BBR v2".into(),
        title: "BBR v2 (QUIC-DC's baseline), 10 Mbps / 50 ms, 2 BDP buffer, 60 s".into(),
        table: table.render(),
        claims: vec![
            Claim::new(
                "bbr2_single",
                "v2 bounds loss and queue with inflight_hi (criterion: one flow, loss < 1 % and \
                 mean RTT < 1.5x the 50 ms base, whole run)",
                format!(
                    "loss {} %, mean RTT {}x",
                    fmt(f.loss_rate * 100.0, 3),
                    fmt(rtt_ratio, 2)
                ),
                f.loss_rate < 0.01 && rtt_ratio < 1.5,
            ),
            Claim::new(
                "bbr2_fair",
                "two v2 flows share fairly (criterion: Jain's index >= 0.9 after 20 s with \
                 PROBE_BW DOWN gain 0.9, the IETF draft's and mvfst's; v2alpha's 0.75 shown \
                 beside it)",
                format!(
                    "{} at down_gain 0.9 (v2alpha default 0.75: {})",
                    fmt(jfi, 4),
                    fmt(jfi_default, 4)
                ),
                jfi >= 0.9,
            ),
        ],
        data,
        paper: Vec::new(),
    })
}
