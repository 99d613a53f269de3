//! `kleinrock transfer`: a QUIC server (noq, driven by a kleinrock-cc controller), the
//! userspace bottleneck emulator and a client, all on loopback, in one command. It prints the
//! same summary as a simulated run and, with `--compare-sim`, the simulator's run of the
//! identical scenario beside it.
//!
//! A transfer is a download: the server sends, so the scenario flow's data path is the
//! emulator's server-to-client direction and its ACK path the client-to-server one. The
//! server's controller is sampled every trace interval (10 ms unless the scenario sets
//! `trace_interval`) into the simulator's flow trace columns; `--out` writes both runs.

use crate::live;
use kleinrock_cc::algorithms::fq_switch::FQ_DETECTED;
use kleinrock_lab::metrics::{link_metrics, rtt_fields, FlowMetrics, FqDetection, Summary};
use kleinrock_lab::report::{num, run_tables, Table};
use kleinrock_lab::runner::{self, check_output_dir, write_atomically, write_file, RunOutput};
use kleinrock_lab::scenario::{load, FlowTransport, Scenario, ScenarioSet};
use kleinrock_lab::sweep;
use kleinrock_quic::emulator::{self, EmulatorConfig, EmulatorStats};
use kleinrock_quic::endpoint::{self, ClientOptions, FetchReport, ServeOptions};
use kleinrock_quic::trace::ProbeRecorder;
use kleinrock_sim::trace::Series;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Trace interval of a scenario that sets none.
const DEFAULT_TRACE_INTERVAL: Duration = Duration::from_millis(10);

/// Arguments of `kleinrock transfer`.
#[derive(clap::Args)]
pub struct TransferArgs {
    /// A scenario file with one sized reliable flow whose paths are one link each way
    /// (instead of --cc, --param, --link and --size).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cc", "param", "link", "size"])]
    scenario: Option<PathBuf>,
    /// With a sweep file: the point to run, from 1, in the order `kleinrock sweep` lists them.
    #[arg(long, value_name = "N", requires = "scenario")]
    point: Option<usize>,
    /// Change one field of the scenario (repeatable), with the paths of `kleinrock run --set`,
    /// e.g. `--set links.0.buffer=4bdp` or `--set flows.0.size=5MB`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Controller, one of `kleinrock list` (default: cubic).
    #[arg(long)]
    cc: Option<String>,
    /// A controller parameter, `name=value` (repeatable), e.g. `--param beta=0.7`.
    #[arg(long, value_name = "NAME=VALUE")]
    param: Vec<String>,
    /// The bottleneck as RATE,RTT,BUFFER, e.g. `10Mbps,50ms,2bdp` (buffer as in scenarios;
    /// default: 10Mbps,50ms,2bdp).
    #[arg(long, value_name = "RATE,RTT,BUFFER")]
    link: Option<String>,
    /// Bytes to transfer, e.g. `20MB` (default: 20MB).
    #[arg(long)]
    size: Option<String>,
    /// Also run the identical scenario in the simulator and print both side by side.
    #[arg(long)]
    compare_sim: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
    /// Do not offer datagram timestamps: the server's controller gets no one-way delay, as
    /// with a peer that is not kleinrock.
    #[arg(long)]
    no_timestamps: bool,
    /// Write summary.json (both runs), the real run's controller trace (real/flows/) and,
    /// with --compare-sim, the simulated run's outputs (simulated/) to this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

/// Loads the scenario of a transfer and checks it has the one flow a transfer can run.
fn scenario(args: &TransferArgs) -> Result<Scenario, String> {
    let set = match &args.scenario {
        Some(file) => load(file, &args.set).map_err(|e| e.to_string())?,
        None => {
            return checked(
                live::dumbbell(
                    args.cc.as_deref().unwrap_or("cubic"),
                    &args.param,
                    args.link.as_deref().unwrap_or("10Mbps,50ms,2bdp"),
                    args.size.as_deref().unwrap_or("20MB"),
                    &args.set,
                )?,
                !args.no_timestamps,
            )
        }
    };
    checked(pick(set, args.point, "a transfer")?, !args.no_timestamps)
}

/// The point of `set` that `command` (`a transfer`) runs: its only one, or point `point` (from
/// 1) of a sweep.
pub(crate) fn pick(
    set: ScenarioSet,
    point: Option<usize>,
    command: &str,
) -> Result<Scenario, String> {
    let n = set.points.len();
    match point {
        None if n == 1 => Ok(set.points.into_iter().next().expect("one point")),
        Some(k) if (1..=n).contains(&k) => Ok(set.points.into_iter().nth(k - 1).expect("k <= n")),
        _ => {
            let list: Vec<String> = set
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| format!("  {}: {}", i + 1, sweep::label(&p.point)))
                .collect();
            Err(format!(
                "--point: `{}` is a sweep of {n} points and {command} runs one; accepted: \
                 --point 1 to {n}:\n{}",
                set.name,
                list.join("\n")
            ))
        }
    }
}

/// `s` if it has the one flow a transfer can run.
fn checked(s: Scenario, timestamps: bool) -> Result<Scenario, String> {
    s.check_simulated()?;
    if !s.tunnels.is_empty() {
        return Err(
            "a transfer runs one connection; run a multipath tunnel with `kleinrock tunnel`".into(),
        );
    }
    let [flow] = &s.flows[..] else {
        return Err("a transfer scenario needs exactly one flow".into());
    };
    if flow.forward.len() != 1 || flow.reverse.len() != 1 {
        return Err(
            "a transfer flow crosses one link each way; longer paths are simulator-only".into(),
        );
    }
    match &flow.transport {
        FlowTransport::Reliable { transport, .. } => live::noq_transport(transport)?,
        FlowTransport::Dccp { .. } => {
            return Err("a DCCP flow is simulator-only: the real datapath is QUIC".into())
        }
        FlowTransport::Datagram { .. } => {
            return Err("a transfer flow is reliable, with a controller".into())
        }
    }
    if flow.app.total_bytes().is_none() {
        return Err(
            "a transfer is a download of a given size, and this flow has none; add one with \
             --set flows.0.size=20MB"
                .into(),
        );
    }
    if flow.arrivals.is_some() || !flow.events.is_empty() || !s.route_changes.is_empty() {
        return Err(
            "a transfer runs one connection on fixed links: short-flow arrivals, parameter \
             events and delay schedules are simulator-only"
                .into(),
        );
    }
    live::factory(&s, timestamps)?;
    Ok(s)
}

/// What a real transfer measured.
struct RealRun {
    report: FetchReport,
    emulator: EmulatorStats,
    /// ACKs that gave the controller a one-way-delay sample.
    owd_samples: u64,
    /// Packets the server's controller saw acknowledged.
    packets_acked: u64,
    summary: Summary,
    trace: Series,
}

async fn run_real(s: &Scenario, timestamps: bool) -> Result<RealRun, String> {
    let flow = &s.flows[0];
    let factory = live::factory(s, timestamps)?;
    // The one connection may buffer what its client's window allows, however large the path.
    let window = receive_window(s).max(endpoint::DEFAULT_CONNECTION_WINDOW);
    let server = endpoint::serve(ServeOptions {
        timestamps,
        connection_window: window,
        window_budget: window.max(endpoint::DEFAULT_WINDOW_BUDGET),
        ..ServeOptions::new(factory.clone())
    })
    .await
    .map_err(|e| e.to_string())?;
    let emulator = emulator::start(EmulatorConfig {
        listen: "127.0.0.1:0".parse().expect("a literal address"),
        server: server.local_addr(),
        forward: s.links[flow.reverse[0]].clone(),
        reverse: s.links[flow.forward[0]].clone(),
        seed: s.seed,
        client_idle: emulator::DEFAULT_CLIENT_IDLE,
    })
    .map_err(|e| e.to_string())?;
    let size = flow.app.total_bytes().unwrap_or(0);
    let opts = ClientOptions {
        receive_window: receive_window(s),
        timestamps,
    };
    let interval = trace_interval(s);
    let recorder = ProbeRecorder::start(server.probe(), interval, &flow.name);
    let fetched =
        endpoint::fetch_with(emulator.listen_addr(), server.cert_der(), size, &opts).await;
    let trace = recorder.finish().await;
    let stats = emulator.shutdown();
    let unpaired = server.stats().unpaired_connections;
    let probe = server.probe();
    server.shutdown().await.map_err(|e| e.to_string())?;
    let report = fetched.map_err(|e| e.to_string())?;
    let mut summary = real_summary(s, &report, &stats, &probe);
    summary.warnings = factory.warnings();
    if unpaired > 0 {
        summary.warnings.push(format!(
            "the client opened no second connection for the controller's subflow ({}): its \
             probe ran on one leg, so its decision says nothing of the bottleneck",
            report
                .subflows
                .failure
                .as_deref()
                .unwrap_or("it was not asked for")
        ));
    }
    Ok(RealRun {
        report,
        emulator: stats,
        owd_samples: probe.sample().map_or(0, |p| p.counters.owd_samples),
        packets_acked: probe.sample().map_or(0, |p| p.counters.packets_acked),
        summary,
        trace,
    })
}

/// The header bytes of a full packet on the real run: its size on the wire less the stream
/// bytes per acknowledged packet (IPv4 and UDP, QUIC's header, AEAD tag and frame headers,
/// and the timestamp trailer; docs/quic.md counts them).
fn real_header_bytes(s: &Scenario, real: &RealRun) -> u32 {
    let packet = match &s.flows[0].transport {
        FlowTransport::Reliable { transport, .. } => transport.packet_size,
        FlowTransport::Dccp { transport, .. } => transport.packet_size,
        FlowTransport::Datagram { packet_size, .. } => *packet_size,
    };
    let payload = real.report.bytes as f64 / real.packets_acked.max(1) as f64;
    (f64::from(packet) - payload)
        .round()
        .clamp(0.0, f64::from(packet - 1)) as u32
}

/// The simulated twin of `s`: its flow's packets carry `header` header bytes, as the real
/// run's do, it is traced at the real run's interval, and it is measured from the start, as
/// the real run is (a download's metrics cover all of it; a scenario's warmup would leave a
/// short one nothing to measure on one side only).
fn twin(s: &Scenario, header: u32) -> Scenario {
    let mut twin = s.clone();
    twin.warmup = Duration::ZERO;
    if let FlowTransport::Reliable { transport, .. } = &mut twin.flows[0].transport {
        transport.header_size = header;
    }
    twin.trace_interval = Some(trace_interval(s));
    twin
}

fn trace_interval(s: &Scenario) -> Duration {
    s.trace_interval.unwrap_or(DEFAULT_TRACE_INTERVAL)
}

/// The client's stream window: twice the most the path can hold in flight (its BDP plus the
/// data link's buffer), at least 1 MiB.
fn receive_window(s: &Scenario) -> u64 {
    let link = &s.links[s.flows[0].forward[0]];
    let buffer = match link.buffer {
        kleinrock_sim::BufferLimit::Bytes(b) => b,
        kleinrock_sim::BufferLimit::Packets(n) => n * 1500,
    };
    let bdp = link.rate.bytes_in(s.base_rtt(0)) as u64;
    (2 * (bdp + buffer)).max(endpoint::LOOPBACK_RECEIVE_WINDOW)
}

/// The measured transfer as a [`Summary`], with the metrics of a simulated run. Throughput
/// counts packet bytes as sent; retransmitted bytes are the bytes declared lost.
fn real_summary(
    s: &Scenario,
    report: &FetchReport,
    stats: &EmulatorStats,
    probe: &kleinrock_quic::adapter::CcProbe,
) -> Summary {
    let secs = report.elapsed.as_secs_f64();
    let sample = probe.sample();
    let counters = sample.as_ref().map(|p| p.counters).unwrap_or_default();
    let histogram = probe.rtt_histogram().unwrap_or_default();
    let [rtt_mean_ms, rtt_std_ms, rtt_p50_ms, rtt_p95_ms, rtt_p99_ms] = rtt_fields(&histogram);
    let flow = FlowMetrics {
        name: s.flows[0].name.clone(),
        cc: s.flows[0].cc_name().to_string(),
        active_s: secs,
        goodput_bps: report.bytes as f64 * 8.0 / secs,
        throughput_bps: counters.bytes_sent as f64 * 8.0 / secs,
        loss_rate: if counters.packets_sent == 0 {
            0.0
        } else {
            counters.packets_lost as f64 / counters.packets_sent as f64
        },
        rtt_mean_ms,
        rtt_std_ms,
        rtt_p50_ms,
        rtt_p95_ms,
        rtt_p99_ms,
        owqd_mean_ms: None,
        owqd_p95_ms: None,
        loss_events: counters.loss_events,
        loss_event_distance_s: None,
        completion_s: Some(secs),
        transfers_completed: None,
        fq_detection: sample
            .as_ref()
            .and_then(|p| FqDetection::from_state(&p.state)),
        delivered_bytes: report.bytes,
        retransmitted_bytes: counters.bytes_lost,
        latency: None,
        send_queue: None,
    };
    // The emulator's links live from its start to its shutdown; the run is the transfer, from
    // the client's first packet to the last byte.
    let span = (report.handshake + report.elapsed).as_secs_f64();
    let over_run = |link: &kleinrock_sim::stats::LinkStats, name: &str| {
        let mut m = link_metrics(link);
        let scale = stats.elapsed.as_secs_f64() / span.max(1e-9);
        m.utilisation *= scale;
        m.mean_queue_fill *= scale;
        m.name = name.to_string();
        m
    };
    let data_link = over_run(&stats.reverse.link, &s.links[s.flows[0].forward[0]].name);
    let ack_link = over_run(&stats.forward.link, &s.links[s.flows[0].reverse[0]].name);
    Summary {
        scenario: format!("{} (real QUIC over the emulator)", s.name),
        point: Vec::new(),
        overrides: s.overrides.clone(),
        seed: s.seed,
        end_s: span,
        warmup_s: 0.0,
        flows: vec![flow],
        links: vec![data_link, ack_link],
        tunnels: Vec::new(),
        jain_index: None,
        warnings: Vec::new(),
    }
}

/// What an `fq_switch` flow did after its probe first decided, from its trace.
#[derive(Clone, Copy, Debug)]
struct AfterDecision {
    /// Time of the first trace sample with a decision, seconds from the first sample.
    decided_s: f64,
    /// Bits per second of the packets its connection sent and did not lose, from [`SETTLE`]
    /// after the decision until its last packet: what the chosen controller carried across
    /// the bottleneck.
    goodput_bps: f64,
}

impl AfterDecision {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({"decided_s": self.decided_s, "goodput_bps": self.goodput_bps})
    }
}

/// How long after the decision the goodput after it starts to count: the fast leg's last
/// packets are acknowledged or declared lost by then (3 smoothed RTTs of the paper's
/// paths at most, whose RTT is at most 100 ms), so only the chosen controller's count. The
/// packets sent and not lost are counted rather than the stream's bytes: the simulator's
/// legs share one stream, whose in-order count jumps when the first subflow fills the holes
/// the closed fast leg left, and the real fast leg carries filler on a connection of its own.
const SETTLE: f64 = 0.5;

/// [`AfterDecision`] from `trace`, for packets of `packet_bytes` bytes on the wire; `None` if
/// the trace has no decision, or nothing after it.
fn after_decision(trace: &Series, packet_bytes: f64) -> Option<AfterDecision> {
    let decided = trace.column(FQ_DETECTED)?;
    let (sent, lost) = (trace.column("sent_packets")?, trace.column("lost_packets")?);
    let time = &trace.time_s;
    let decision = decided.iter().position(|v| !v.is_nan())?;
    let from = (decision..time.len()).find(|&i| time[i] >= time[decision] + SETTLE)?;
    let most = sent
        .iter()
        .copied()
        .filter(|b| !b.is_nan())
        .fold(0.0, f64::max);
    let last = sent.iter().position(|&b| b == most)?;
    let carried = (sent[last] - lost[last]) - (sent[from] - lost[from]);
    let span = time[last] - time[from];
    (span > 0.0).then(|| AfterDecision {
        decided_s: time[decision] - time[0],
        goodput_bps: carried * packet_bytes * 8.0 / span,
    })
}

/// What an `fq_switch` flow's probe did in both runs (`None` for other controllers).
#[derive(Clone, Copy, Debug)]
struct Decisions {
    real: Option<AfterDecision>,
    simulated: Option<AfterDecision>,
}

impl Decisions {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "real": self.real.map(|a| a.json()),
            "simulated": self.simulated.map(|a| a.json()),
        })
    }
}

/// [`Decisions`] of the real run and the simulated one, if the flow's controller decides.
fn decisions(s: &Scenario, real: &RealRun, sim: Option<&RunOutput>) -> Option<Decisions> {
    real.trace.column(FQ_DETECTED)?;
    let packet = match &s.flows[0].transport {
        FlowTransport::Reliable { transport, .. } => f64::from(transport.packet_size),
        _ => return None,
    };
    let simulated = sim
        .and_then(|o| o.result.trace.as_ref())
        .and_then(|t| after_decision(&t.flows[0], packet));
    Some(Decisions {
        real: after_decision(&real.trace, packet),
        simulated,
    })
}

/// The real and simulated figures side by side.
fn comparison(real: &Summary, sim: &Summary, decisions: Option<&Decisions>) -> String {
    let (r, m) = (&real.flows[0], &sim.flows[0]);
    let mut t = Table::new(&["metric", "real", "simulated", "real vs sim %"]);
    let rows: [(&str, Option<f64>, Option<f64>, usize); 6] = [
        (
            "goodput Mbps",
            Some(r.goodput_bps / 1e6),
            Some(m.goodput_bps / 1e6),
            3,
        ),
        (
            "loss %",
            Some(r.loss_rate * 100.0),
            Some(m.loss_rate * 100.0),
            3,
        ),
        ("RTT mean ms", r.rtt_mean_ms, m.rtt_mean_ms, 1),
        ("RTT p95 ms", r.rtt_p95_ms, m.rtt_p95_ms, 1),
        ("completion s", r.completion_s, m.completion_s, 2),
        (
            "bottleneck utilisation %",
            Some(real.links[0].utilisation * 100.0),
            Some(sim.links[0].utilisation * 100.0),
            1,
        ),
    ];
    numeric_rows(&mut t, &rows);
    if let Some(d) = decisions {
        let fq = |f: &FlowMetrics| match f.fq_detection {
            Some(d) if d.fair_queuing => "fair queue",
            Some(_) => "no fair queue",
            None => "none",
        };
        t.row(vec![
            "decision".into(),
            fq(r).into(),
            fq(m).into(),
            "-".into(),
        ]);
        let (a, b) = (d.real, d.simulated);
        let rows = [
            (
                "decided at s",
                a.map(|a| a.decided_s),
                b.map(|b| b.decided_s),
                2,
            ),
            (
                "goodput after decision Mbps",
                a.map(|a| a.goodput_bps / 1e6),
                b.map(|b| b.goodput_bps / 1e6),
                3,
            ),
        ];
        numeric_rows(&mut t, &rows);
    }
    t.render()
}

/// Rows of a real and a simulated figure (`None`: none), with `digits` decimals and the
/// difference in per cent.
fn numeric_rows(t: &mut Table, rows: &[(&str, Option<f64>, Option<f64>, usize)]) {
    for &(name, a, b, digits) in rows {
        let diff = match (a, b) {
            (Some(a), Some(b)) if b != 0.0 => num(Some((a / b - 1.0) * 100.0), 1),
            _ => "-".to_string(),
        };
        t.row(vec![name.into(), num(a, digits), num(b, digits), diff]);
    }
}

/// Writes summary.json, the real trace and the simulated run's outputs under `dir`, atomically.
fn save(
    dir: &Path,
    real: &RealRun,
    sim: Option<&RunOutput>,
    decisions: Option<&Decisions>,
) -> Result<(), String> {
    let summary = serde_json::json!({
        "real": real.summary,
        "simulated": sim.map(|o| &o.summary),
        "fq_switch": decisions.map(Decisions::json),
    });
    write_atomically(dir, |tmp| {
        write_file(&tmp.join("summary.json"), |w| writeln!(w, "{summary:#}"))?;
        let trace = tmp
            .join("real")
            .join("flows")
            .join(format!("{}.csv", real.trace.name));
        write_file(&trace, |w| real.trace.write_csv(w))?;
        if let Some(o) = sim {
            runner::write_run(&tmp.join("simulated"), o)?;
        }
        kleinrock_lab::html::write_report(tmp).map_err(std::io::Error::other)
    })
    .map_err(|e| format!("cannot write {}: {e}", dir.display()))?;
    eprintln!("wrote {}", dir.display());
    Ok(())
}

/// Runs `kleinrock transfer`.
pub fn run(args: TransferArgs) -> Result<(), String> {
    let s = scenario(&args)?;
    if let Some(dir) = &args.out {
        check_output_dir(dir)?;
    }
    let real = live::runtime()?.block_on(run_real(&s, !args.no_timestamps))?;
    let header = real_header_bytes(&s, &real);
    let sim = args.compare_sim.then(|| runner::run(&twin(&s, header)));
    let sim_summary = sim.as_ref().map(|o| &o.summary);
    let decisions = decisions(&s, &real, sim.as_ref());
    let subflows = &real.report.subflows;
    if args.json {
        let value = serde_json::json!({
            "real": real.summary,
            "simulated": sim_summary,
            "simulated_header_bytes": sim.as_ref().map(|_| header),
            "fq_switch": decisions.as_ref().map(Decisions::json),
            "subflow_connections": subflows.connections,
            "subflow_filler_bytes": subflows.filler_bytes,
        });
        crate::emit(&format!("{value:#}\n"));
    } else {
        crate::emit(&run_tables(&real.summary));
        crate::emit(&format!(
            "verified: {} bytes, SHA-256 {}; datagram timestamps: {} ({} one-way-delay \
             samples); emulator lateness p99 {:?} (bound {:?})\n",
            real.report.bytes,
            real.report.received_sha256,
            if real.report.timestamps { "on" } else { "off" },
            real.owd_samples,
            real.emulator.lateness_p99(),
            real.emulator.lateness_bound,
        ));
        if subflows.connections > 0 {
            crate::emit(&format!(
                "subflow connections: {} (the probe's fast leg; {} bytes of filler received)\n",
                subflows.connections, subflows.filler_bytes
            ));
        }
        if let Some(sim) = sim_summary {
            crate::emit(&format!(
                "\nreal vs simulated (the simulated packets carry the real run's {header} header \
                 bytes each)\n\n{}",
                comparison(&real.summary, sim, decisions.as_ref())
            ));
        }
    }
    if let Some(dir) = &args.out {
        save(dir, &real, sim.as_ref(), decisions.as_ref())?;
    }
    if let Some(why) = real.emulator.why_invalid() {
        return Err(format!(
            "the emulator fell behind ({why}): this run is not valid"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Every scenario file under `dir`, recursively.
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("scenarios/ is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }

    /// Why point `point` of `set` (from `file`), a single flow, cannot be a real transfer, if
    /// it cannot; an unsized flow is given a size first, as its error says.
    fn transfer_error(file: &Path, set: &ScenarioSet, point: usize) -> Option<String> {
        let set = match set.points[point - 1].flows[0].app.total_bytes() {
            Some(_) => set.clone(),
            None => load(file, &["flows.0.size=5MB".into()]).expect("loads with a size"),
        };
        pick(set, Some(point), "a transfer")
            .and_then(|s| checked(s, true))
            .err()
    }

    #[test]
    fn every_shipped_single_flow_scenario_is_a_transfer_unless_it_needs_the_simulator() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut all = Vec::new();
        files(&root, &mut all);
        let simulator_only = ["simulator-only", "with `kleinrock tunnel`"];
        let mut transfers = 0;
        for file in all {
            let set = load(&file, &[]).expect("shipped scenarios load");
            for (k, s) in set.points.iter().enumerate() {
                if s.flows.len() != 1 {
                    continue;
                }
                match transfer_error(&file, &set, k + 1) {
                    None => transfers += 1,
                    Some(e) => assert!(
                        simulator_only.iter().any(|w| e.contains(w)),
                        "{} point {}: {e}",
                        file.display(),
                        k + 1
                    ),
                }
            }
        }
        assert!(
            transfers > 100,
            "only {transfers} shipped points are transfers"
        );
    }

    #[test]
    fn the_simulated_twin_is_measured_from_the_start_as_the_real_run_is() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
        let set = load(&file, &["warmup=5s".into()]).expect("loads");
        let s = &set.points[0];
        assert_eq!(s.warmup, Duration::from_secs(5));
        assert_eq!(twin(s, 80).warmup, Duration::ZERO);
    }

    #[test]
    fn ack_settings_noq_does_not_follow_are_refused_by_name() {
        let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/demo.toml");
        for field in ["max_ack_delay=200ms", "ack_every=4", "ack_size=54"] {
            let sets = [
                "flows.0.size=5MB".into(),
                "flows.0.delayed_ack=true".into(),
                format!("flows.0.{field}"),
            ];
            let set = load(&file, &sets).expect("loads");
            let name = field.split('=').next().expect("a name");
            let e = transfer_error(&file, &set, 1).expect("refused");
            assert!(
                e.starts_with(&format!("flows[0].{name}: simulator-only")),
                "{e}"
            );
        }
    }
}
