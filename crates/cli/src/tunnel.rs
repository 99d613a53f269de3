//! `kleinrock tunnel`: a scenario's multipath tunnel on the real datapath. One QUIC connection
//! per path carries the tunnel's packets as DATAGRAM frames through that path's emulated links,
//! with the simulator's scheduler and reordering stage at the ends
//! ([`kleinrock_quic::tunnel`]); a constant-rate source or a reliable flow (a QUIC connection
//! inside) feeds it. The command prints the same summary as a simulated run and, with
//! `--compare-sim`, the simulator's run of the same scenario beside it.

use crate::live;
use crate::transfer::pick;
use kleinrock_lab::metrics::{
    link_metrics, rtt_fields, FlowMetrics, Latency, PathMetrics, Summary, TunnelCounts,
    TunnelMetrics,
};
use kleinrock_lab::report::{num, run_tables, Table};
use kleinrock_lab::runner::{self, check_output_dir, write_atomically, write_file, RunOutput};
use kleinrock_lab::scenario::{load, FlowTransport, Scenario};
use kleinrock_quic::tunnel::{
    self, EntryCounts, FarCounts, FlowReport, PathSpec, Source, TunnelReport, TunnelSpec,
};
use kleinrock_sim::trace::Series;
use kleinrock_sim::AppConfig;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Trace interval of a scenario that sets none.
const DEFAULT_TRACE_INTERVAL: Duration = Duration::from_millis(100);

/// Arguments of `kleinrock tunnel`.
#[derive(clap::Args)]
pub struct TunnelArgs {
    /// A scenario file with one tunnel whose paths are QUIC (`transport = "quic"` in its
    /// `[[tunnels]]` table), each path one link each way, carrying one flow: constant-rate
    /// datagrams (`transport = "datagram"`, `app = "cbr"`) or a reliable flow sending all it can
    /// (`transport = "reliable"`, a QUIC connection inside whose ACKs the tunnel carries back).
    scenario: PathBuf,
    /// The point of a sweep to run (from 1), when the file has a [sweep] grid.
    #[arg(long, value_name = "N")]
    point: Option<usize>,
    /// Change one field of the scenario (repeatable), with the paths of `kleinrock run --set`,
    /// e.g. `--set tunnels.0.paths.1.cc=cubic`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Also run the same scenario in the simulator and print both side by side.
    #[arg(long)]
    compare_sim: bool,
    /// Print the summaries as JSON instead of tables.
    #[arg(long)]
    json: bool,
    /// Write summary.json (both runs), the real run's traces (real/tunnels/, real/flows/),
    /// with --compare-sim the simulated run's outputs (simulated/), and report.html to this
    /// directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Show no progress and no "wrote DIR" line (progress is shown only when standard error is
    /// a terminal).
    #[arg(long, short)]
    quiet: bool,
}

/// The tunnel run of scenario `s`, or why the real datapath cannot run it.
pub fn spec(s: &Scenario) -> Result<TunnelSpec, String> {
    let [plan] = &s.tunnels[..] else {
        return Err("a real tunnel scenario has exactly one tunnel".into());
    };
    if !plan.quic {
        return Err(
            "tunnels[0]: the real datapath runs QUIC paths; set transport = \"quic\" in the \
             [[tunnels]] table (a DCCP tunnel is simulator-only)"
                .into(),
        );
    }
    simulated_only_settings(plan)?;
    let [flow] = &s.flows[..] else {
        return Err("a real tunnel carries exactly one flow".into());
    };
    let (source, packet_size) = source(flow)?;
    let (lo, hi) = tunnel::packet_size_range(&source);
    if !(lo..=hi).contains(&packet_size) {
        return Err(format!(
            "flows[0].packet_size: {packet_size} bytes do not fit a QUIC packet with the \
             tunnel's header; accepted: {lo} to {hi}"
        ));
    }
    if flow.tunnel != Some(0) || !flow.start.is_zero() || flow.stop.is_some() {
        return Err("flows[0] enters the tunnel at 0 s and sends to the end".into());
    }
    if !s.route_changes.is_empty() {
        return Err("delay schedules are simulator-only".into());
    }
    let mut paths = Vec::new();
    for (k, p) in plan.paths.iter().enumerate() {
        let (&[f], &[r]) = (&p.forward[..], &p.reverse[..]) else {
            return Err(format!(
                "tunnels[0].paths[{k}]: a real path crosses one link each way"
            ));
        };
        paths.push(PathSpec {
            name: p.name.clone(),
            forward: s.links[f].clone(),
            reverse: s.links[r].clone(),
            cc: p.cc.clone(),
            params: p.params.clone(),
            priority: p.priority,
        });
    }
    Ok(TunnelSpec {
        paths,
        scheduler: plan.scheduler,
        reorder: plan.reorder,
        queue: plan.queue as usize,
        source,
        packet_size,
        duration: s.duration,
        warmup: s.warmup,
        trace_interval: s.trace_interval.unwrap_or(DEFAULT_TRACE_INTERVAL),
        seed: s.seed,
    })
}

/// What feeds the tunnel, from its flow, and the carried packets' size: constant-rate
/// datagrams, or a reliable flow sending all it can (a QUIC connection inside, which paces).
fn source(flow: &kleinrock_lab::scenario::FlowPlan) -> Result<(Source, usize), String> {
    match (&flow.transport, flow.app) {
        (
            FlowTransport::Datagram {
                packet_size,
                header_size,
            },
            AppConfig::ConstantRate { rate, bytes: None },
        ) => Ok((
            Source::Cbr {
                rate,
                payload: packet_size.saturating_sub(*header_size) as usize,
            },
            *packet_size as usize,
        )),
        (
            FlowTransport::Reliable {
                cc,
                params,
                transport,
            },
            AppConfig::Bulk { bytes: None },
        ) => {
            crate::live::noq_transport(transport)?;
            if !transport.pacing {
                return Err(
                    "flows[0].pacing: the flow inside a real tunnel is a QUIC connection, and \
                     noq always paces; set pacing = true"
                        .into(),
                );
            }
            let source = Source::Reliable {
                cc: cc.clone(),
                params: params.clone(),
            };
            Ok((source, transport.packet_size as usize))
        }
        _ => Err(
            "flows[0]: a real tunnel carries a constant-rate datagram flow (transport = \
             \"datagram\", app = \"cbr\", unbounded) or a reliable flow sending all it can \
             (transport = \"reliable\", app = \"bulk\", no size)"
                .into(),
        ),
    }
}

/// Refuses a QUIC tunnel's settings that only the simulator's model of it has: on the real
/// datapath, QUIC makes the sizes, noq paces and acknowledges, and no subflow has a queue.
fn simulated_only_settings(plan: &kleinrock_lab::tunnel::TunnelPlan) -> Result<(), String> {
    let d = kleinrock_lab::tunnel::quic_transport();
    let t = &plan.transport;
    let fields = [
        ("header_size", t.header_size != d.header_size),
        ("packet_size", t.packet_size != d.packet_size),
        ("tx_qlen", t.tx_qlen != d.tx_qlen),
        ("ack_ratio", t.ack_ratio != d.ack_ratio),
        ("pacing", t.pacing != d.pacing),
    ];
    match fields.iter().find(|(_, changed)| *changed) {
        Some((name, _)) => Err(format!(
            "tunnels[0].{name}: set only in the simulator's model of a QUIC tunnel; on the \
             real datapath QUIC and noq decide it (remove it to run the tunnel for real)"
        )),
        None => Ok(()),
    }
}

/// The real run as a [`Summary`] with the metrics of a simulated one.
pub fn summary(s: &Scenario, r: &TunnelReport) -> Summary {
    let window_s = r.window_s.max(1e-9);
    let total: u64 = r.paths.iter().map(|p| p.window_bytes).sum();
    let paths = r
        .paths
        .iter()
        .zip(&s.tunnels[0].paths)
        .map(|(p, plan)| PathMetrics {
            name: p.name.clone(),
            cc: plan.cc.clone(),
            throughput_bps: p.window_bytes as f64 * 8.0 / window_s,
            share: p.window_bytes as f64 / total.max(1) as f64,
            sent_packets: p.window[0],
            lost_packets: p.window[0].saturating_sub(p.window[1]),
            rtt_mean_ms: p.rtt.mean().map(|ns| ns / 1e6),
            latency: Latency::of(&p.latency),
            loss_events: p.cc.loss_events,
        })
        .collect();
    let counts = tunnel_counts(
        (&r.entry, &r.far),
        [r.queued_at_end, r.buffered_at_end],
        r.paths.iter().map(|p| (p.sent, p.arrived)),
    );
    let b = &r.backward;
    let backward = tunnel_counts(
        (&b.entry, &b.far),
        [b.queued_at_end, b.buffered_at_end],
        b.sent.iter().copied().zip(b.arrived.iter().copied()),
    );
    let flow = match &r.flow {
        Some(f) => reliable_metrics(s, f),
        None => cbr_metrics(s, r),
    };
    let mut links = Vec::new();
    for (p, plan) in r.paths.iter().zip(&s.tunnels[0].paths) {
        for (stats, l) in p.links.iter().zip([plan.forward[0], plan.reverse[0]]) {
            let mut m = link_metrics(stats);
            m.name = s.links[l].name.clone();
            links.push(m);
        }
    }
    Summary {
        scenario: format!("{} (real QUIC tunnel over the emulator)", s.name),
        point: s.point.clone(),
        overrides: s.overrides.clone(),
        seed: s.seed,
        end_s: s.duration.as_secs_f64(),
        warmup_s: s.warmup.as_secs_f64(),
        flows: vec![flow],
        links,
        tunnels: vec![TunnelMetrics {
            name: s.tunnels[0].name.clone(),
            latency: Latency::of(&r.latency),
            forward: counts,
            backward,
            paths,
        }],
        jain_index: None,
        warnings: Vec::new(),
    }
}

/// One direction's counts: from its entry and far end, the packets still queued and held at
/// the end, and each path's packets sent and arrived (the difference it lost).
fn tunnel_counts(
    (entry, far): (&EntryCounts, &FarCounts),
    [queued, buffered]: [u64; 2],
    paths: impl Iterator<Item = (u64, u64)>,
) -> TunnelCounts {
    let held = queued + buffered;
    let lost_on_paths = paths
        .map(|(sent, arrived)| sent.saturating_sub(arrived))
        .sum();
    TunnelCounts {
        entered: entry.entered,
        forwarded: far.forwarded,
        forwarded_late: far.forwarded_late,
        queue_drops: entry.queue_drops,
        send_queue_drops: 0,
        lost_on_paths,
        reorder_drops: far.reorder_drops,
        duplicates: far.duplicates,
        gaps_skipped: far.gaps_skipped,
        most_buffered: far.most_buffered,
        lost: entry
            .entered
            .saturating_sub(entry.queue_drops + far.forwarded + held),
        held_at_end: held,
    }
}

/// The reliable flow inside, as a simulated reliable flow's metrics: goodput is the stream
/// bytes its receiver read in the window; its sender's counters and RTTs span the run.
fn reliable_metrics(s: &Scenario, f: &FlowReport) -> FlowMetrics {
    let window_s = s.duration.saturating_sub(s.warmup).as_secs_f64().max(1e-9);
    let c = &f.cc;
    let [rtt_mean_ms, rtt_std_ms, rtt_p50_ms, rtt_p95_ms, rtt_p99_ms] = rtt_fields(&f.rtt);
    FlowMetrics {
        name: s.flows[0].name.clone(),
        cc: s.flows[0].cc_name().to_string(),
        active_s: window_s,
        goodput_bps: f.window_bytes as f64 * 8.0 / window_s,
        throughput_bps: c.bytes_sent as f64 * 8.0 / s.duration.as_secs_f64().max(1e-9),
        loss_rate: c.packets_lost as f64 / c.packets_sent.max(1) as f64,
        rtt_mean_ms,
        rtt_std_ms,
        rtt_p50_ms,
        rtt_p95_ms,
        rtt_p99_ms,
        owqd_mean_ms: None,
        owqd_p95_ms: None,
        loss_events: c.loss_events,
        loss_event_distance_s: None,
        completion_s: None,
        transfers_completed: None,
        fq_detection: None,
        delivered_bytes: f.window_bytes,
        retransmitted_bytes: c.bytes_lost,
        latency: None,
        send_queue: None,
    }
}

/// The constant-rate flow's metrics, from what the far end forwarded.
fn cbr_metrics(s: &Scenario, r: &TunnelReport) -> FlowMetrics {
    let window_s = r.window_s.max(1e-9);
    let flow = &s.flows[0];
    // The flow's goodput counts its payload, as a simulated datagram flow's does.
    let payload = match flow.transport {
        FlowTransport::Datagram {
            packet_size,
            header_size,
        } => f64::from(packet_size.saturating_sub(header_size)) / f64::from(packet_size.max(1)),
        _ => 1.0,
    };
    let goodput_bps = r.window_bytes as f64 * 8.0 * payload / window_s;
    // The packets that entered in the window and were not forwarded, as a simulated flow's.
    let entered = r.entry.entered_window.max(1);
    let loss_rate = entered.saturating_sub(r.forwarded_window) as f64 / entered as f64;
    FlowMetrics {
        name: flow.name.clone(),
        cc: flow.cc_name().to_string(),
        active_s: window_s,
        goodput_bps,
        throughput_bps: goodput_bps,
        loss_rate,
        rtt_mean_ms: None,
        rtt_std_ms: None,
        rtt_p50_ms: None,
        rtt_p95_ms: None,
        rtt_p99_ms: None,
        owqd_mean_ms: None,
        owqd_p95_ms: None,
        loss_events: 0,
        loss_event_distance_s: None,
        completion_s: None,
        transfers_completed: None,
        fq_detection: None,
        delivered_bytes: (r.window_bytes as f64 * payload) as u64,
        retransmitted_bytes: 0,
        latency: Latency::of(&r.latency),
        send_queue: None,
    }
}

/// The first trace time at which `path` received at least `bps` in an interval.
fn first_carrying(path: &Series, bps: f64) -> Option<f64> {
    let rx = path.column("rx_rate_bps")?;
    let i = rx.iter().position(|&v| v >= bps)?;
    Some(path.time_s[i])
}

/// The paths' traces of the simulated run, in the tunnel's order.
fn sim_paths(out: &RunOutput) -> &[Series] {
    out.result
        .trace
        .as_ref()
        .and_then(|t| t.tunnels.first())
        .map_or(&[], |t| t.get(1..).unwrap_or(&[]))
}

/// One metric of the real run and of the simulated one.
struct Row {
    metric: String,
    real: Option<f64>,
    simulated: Option<f64>,
    digits: usize,
}

impl Row {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "metric": self.metric,
            "real": self.real,
            "simulated": self.simulated,
        })
    }
}

/// The real and simulated figures side by side: per path the received rate, its share and
/// its latency, when it first carried a quarter of the source's rate, and the end-to-end
/// latency after reordering.
fn comparison(s: &Scenario, real: &Summary, report: &TunnelReport, sim: &RunOutput) -> Vec<Row> {
    let quarter = match s.flows[0].app {
        AppConfig::ConstantRate { rate, .. } => rate.bits_per_sec() / 4.0,
        AppConfig::Bulk { .. } => f64::NAN,
    };
    let (r, m) = (&real.tunnels[0], &sim.summary.tunnels[0]);
    let mut rows = Vec::new();
    let mut row = |metric: String, real: Option<f64>, simulated: Option<f64>, digits: usize| {
        rows.push(Row {
            metric,
            real,
            simulated,
            digits,
        })
    };
    let p95 = |l: Option<Latency>| l.map(|l| l.p95_ms);
    let first = |p: Option<&Series>| p.and_then(|p| first_carrying(p, quarter));
    if report.flow.is_some() {
        let (a, b) = (&real.flows[0], &sim.summary.flows[0]);
        row(
            "goodput Mbps".into(),
            Some(a.goodput_bps / 1e6),
            Some(b.goodput_bps / 1e6),
            2,
        );
        row(
            "loss %".into(),
            Some(a.loss_rate * 100.0),
            Some(b.loss_rate * 100.0),
            2,
        );
        row("RTT mean ms".into(), a.rtt_mean_ms, b.rtt_mean_ms, 1);
        row("RTT p95 ms".into(), a.rtt_p95_ms, b.rtt_p95_ms, 1);
        let drops = |t: &TunnelCounts| Some(t.queue_drops as f64);
        row(
            "entry queue drops".into(),
            drops(&r.forward),
            drops(&m.forward),
            0,
        );
        row(
            "entry queue drops back".into(),
            drops(&r.backward),
            drops(&m.backward),
            0,
        );
    }
    for (k, (a, b)) in r.paths.iter().zip(&m.paths).enumerate() {
        let n = &a.name;
        let mbps = |bps: f64| Some(bps / 1e6);
        row(
            format!("{n} rx Mbps"),
            mbps(a.throughput_bps),
            mbps(b.throughput_bps),
            2,
        );
        row(
            format!("{n} share %"),
            Some(a.share * 100.0),
            Some(b.share * 100.0),
            1,
        );
        row(
            format!("{n} latency p95 ms"),
            p95(a.latency),
            p95(b.latency),
            1,
        );
        if quarter.is_finite() {
            row(
                format!("{n} first carries 1/4 of the source, s"),
                first(report.paths.get(k).map(|p| &p.trace)),
                first(sim_paths(sim).get(k)),
                1,
            );
        }
    }
    let (a, b) = (r.latency, m.latency);
    let mean = |l: Option<Latency>| l.map(|l| l.mean_ms);
    row("end-to-end latency mean ms".into(), mean(a), mean(b), 1);
    row("end-to-end latency p95 ms".into(), p95(a), p95(b), 1);
    rows
}

fn render(rows: &[Row]) -> String {
    let mut t = Table::new(&["metric", "real", "simulated"]);
    for r in rows {
        t.row(vec![
            r.metric.clone(),
            num(r.real, r.digits),
            num(r.simulated, r.digits),
        ]);
    }
    t.render()
}

/// Writes summary.json, the real run's traces where a simulated run has them (each path's
/// `tunnels/TUNNEL.PATH.csv`, the carried flow's `flows/FLOW.csv` after reordering, and each
/// path's controller in `tunnels/TUNNEL.PATH.controller.csv`), the simulated run's outputs and
/// report.html under `dir`, atomically.
fn save(
    dir: &Path,
    s: &Scenario,
    real: &Summary,
    report: &TunnelReport,
    sim: Option<&RunOutput>,
    checks: &Checks,
    quiet: bool,
) -> Result<(), String> {
    let summary = serde_json::json!({
        "real": real,
        "simulated": sim.map(|o| &o.summary),
        "checks": checks.json(),
    });
    let tunnel = &s.tunnels[0].name;
    let mut traces: Vec<(String, &Series)> = Vec::new();
    for p in &report.paths {
        traces.push((format!("tunnels/{tunnel}.{}.csv", p.name), &p.trace));
        let controller = format!("tunnels/{tunnel}.{}.controller.csv", p.name);
        traces.push((controller, &p.controller));
    }
    let flow = &s.flows[0].name;
    match &report.flow {
        Some(f) => {
            traces.push((format!("flows/{flow}.csv"), &f.trace));
            traces.push((format!("flows/{flow}.controller.csv"), &f.controller));
        }
        None => traces.push((format!("flows/{flow}.csv"), &report.trace)),
    }
    write_atomically(dir, |tmp| {
        write_file(&tmp.join("summary.json"), |w| writeln!(w, "{summary:#}"))?;
        for (file, trace) in &traces {
            write_file(&tmp.join("real").join(file), |w| trace.write_csv(w))?;
        }
        if let Some(o) = sim {
            runner::write_run(&tmp.join("simulated"), o)?;
        }
        kleinrock_lab::html::write_report(tmp).map_err(std::io::Error::other)
    })
    .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    if !quiet {
        eprintln!("wrote {}", dir.display());
    }
    Ok(())
}

/// Runs `kleinrock tunnel`.
pub fn run(args: TunnelArgs) -> Result<(), String> {
    let set = load(&args.scenario, &args.set).map_err(|e| e.to_string())?;
    let s = pick(set, args.point, "`kleinrock tunnel`")?;
    s.check_simulated()?;
    let spec = spec(&s)?;
    if let Some(dir) = &args.out {
        check_output_dir(dir)?;
    }
    let bar = crate::progress(None, "{spinner} {msg}, {elapsed}", args.quiet);
    let secs = s.duration.as_secs_f64();
    bar.set_message(format!("{}: running the tunnel for real, {secs} s", s.name));
    let report = live::runtime()?.block_on(tunnel::run(&spec));
    bar.set_message(format!("{}: simulating", s.name));
    let sim = (report.is_ok() && args.compare_sim).then(|| runner::run(&s));
    bar.finish_and_clear();
    let report = report?;
    let real = summary(&s, &report);
    let rows = sim.as_ref().map(|sim| comparison(&s, &real, &report, sim));
    let checks = Checks::of(&report);
    if args.json {
        let value = serde_json::json!({
            "real": real,
            "simulated": sim.as_ref().map(|o| &o.summary),
            "comparison": rows.as_ref().map(|r| r.iter().map(Row::json).collect::<Vec<_>>()),
            "wire_bytes": report.paths.iter().map(|p| p.wire_bytes).collect::<Vec<_>>(),
            "garbage_dropped": {
                "entry": report.garbage.entry,
                "far_end": report.garbage.far_end,
            },
            "send_failures": report.entry.send_failures,
            "source_realtime": report.source_realtime,
            "checks": checks.json(),
        });
        crate::emit(&format!("{value:#}\n"));
    } else {
        crate::emit(&run_tables(&real));
        crate::emit(&notes(&spec, &report));
        if let Some(rows) = &rows {
            crate::emit(&format!("\nreal vs simulated\n\n{}", render(rows)));
        }
    }
    if let Some(dir) = &args.out {
        save(dir, &s, &real, &report, sim.as_ref(), &checks, args.quiet)?;
    }
    checks.outcome()
}

/// What the tables leave out: the strangers' datagrams dropped and, for a constant-rate
/// source, each path's bytes per tunnel packet on the wire and the source's lateness.
fn notes(spec: &TunnelSpec, report: &TunnelReport) -> String {
    let garbage = format!(
        "datagrams from strangers dropped: {} at the entry, {} at the far ends",
        report.garbage.entry, report.garbage.far_end
    );
    if report.flow.is_some() {
        return format!("{garbage}\n");
    }
    let wire: Vec<String> = report
        .paths
        .iter()
        .map(|p| format!("{} {:.1}", p.name, p.wire_bytes))
        .collect();
    format!(
        "bytes per tunnel packet on the wire (IPv4 to AEAD tag), as the emulators counted: {}; \
         the simulator's QUIC tunnel counts {}\n{garbage}; the source's lateness p99 {:.0} us \
         ({})\n",
        wire.join(", "),
        spec.packet_size as u32 + kleinrock_lab::tunnel::QUIC_HEADER,
        report.source_lateness.quantile(0.99).unwrap_or(0.0) / 1e3,
        if report.source_realtime {
            "its thread at real-time priority"
        } else {
            "its thread at normal priority: the process may not use SCHED_FIFO"
        },
    )
}

/// Whether the real run counts: every packet accounted for, and every emulator, the source
/// and every path's connection lasting the run.
struct Checks {
    accounted: Result<(), String>,
    invalid: Option<String>,
}

impl Checks {
    fn of(report: &TunnelReport) -> Self {
        Checks {
            accounted: report.accounted(),
            invalid: report.invalid(),
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "accounted": self.accounted.is_ok(),
            "valid": self.invalid.is_none(),
            "why": self.accounted.as_ref().err().or(self.invalid.as_ref()),
        })
    }

    /// The command's result: an error (exit status 2) if the run does not count.
    fn outcome(self) -> Result<(), String> {
        self.accounted
            .map_err(|e| format!("a packet is not accounted for: {e}"))?;
        match self.invalid {
            Some(why) => Err(format!("this run is not valid: {why}")),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped(name: &str, point: usize) -> Scenario {
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/ccid5")
            .join(name);
        pick(
            load(&file, &[]).expect("shipped scenarios load"),
            Some(point),
            "`kleinrock tunnel`",
        )
        .expect("a point")
    }

    #[test]
    fn figure_6_over_quic_is_a_real_tunnel_and_the_dccp_figures_say_what_is_missing() {
        for (point, cc) in [(1, "bbr"), (2, "newreno")] {
            let spec = spec(&shipped("fig6_quic_tunnel.toml", point)).expect("a real tunnel");
            assert_eq!(spec.paths.len(), 2);
            assert!(spec.paths.iter().all(|p| p.cc == cc));
            assert_eq!((spec.packet_size, spec.queue), (1448, 5));
            let Source::Cbr { rate, payload } = spec.source else {
                panic!("a constant-rate source");
            };
            assert_eq!((rate.bits_per_sec(), payload), (15e6, 1408));
            assert_eq!(spec.paths[0].forward.schedule.len(), 1, "the drop at 5 s");
        }
        let dccp = spec(&shipped("fig6_udp_multipath.toml", 1)).expect_err("DCCP paths");
        assert!(dccp.contains("transport = \"quic\""), "{dccp}");
        let fig7 = spec(&shipped("fig7_tcp_multipath.toml", 1)).expect_err("CCID paths");
        assert!(fig7.contains("transport = \"quic\""), "{fig7}");
        for (point, cc) in [(1, "newreno"), (2, "bbr")] {
            let spec = spec(&shipped("fig7_quic_tunnel.toml", point)).expect("a real tunnel");
            assert!(spec.paths.iter().all(|p| p.cc == cc));
            assert!(matches!(&spec.source, Source::Reliable { cc, .. } if cc == "cubic"));
        }
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/ccid5/fig7_quic_tunnel.toml");
        let set = load(&file, &["flows.0.pacing=false".into()]).expect("loads");
        let unpaced = pick(set, Some(1), "`kleinrock tunnel`").expect("a point");
        let e = spec(&unpaced).expect_err("noq paces");
        assert!(e.starts_with("flows[0].pacing:"), "{e}");
        let file = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/ccid5/fig6_quic_tunnel.toml");
        for field in ["header_size=52", "tx_qlen=1", "pacing=false", "ack_ratio=1"] {
            let set = load(&file, &[format!("tunnels.0.{field}")]).expect("loads");
            let s = pick(set, Some(1), "`kleinrock tunnel`").expect("a point");
            let e = spec(&s).expect_err("a setting only the simulator has");
            let name = field.split('=').next().expect("a name");
            assert!(e.starts_with(&format!("tunnels[0].{name}:")), "{e}");
        }
    }
}
