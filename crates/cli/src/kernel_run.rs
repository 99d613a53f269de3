//! Scenarios whose flows are Linux's own TCP (`cc = "kernel:NAME"`): `kleinrock run` and
//! `kleinrock crosscheck` send them through the TUN link (crates/quic/src/kernel.rs) and
//! report them as a simulated run is reported: the same summary JSON, tables and flow trace
//! CSVs.
//!
//! Such a scenario is a dumbbell: every flow crosses the same single link each way (the TUN
//! link has one link per direction), its data on `path`, its ACKs on `reverse_path`. Metrics
//! cover the warmup to the end, as in the simulator, with these readings: goodput is what the
//! receiver read; throughput the payload the sender sent (`tcpi_bytes_sent`, retransmissions
//! included); the loss rate segments retransmitted over data segments sent; loss events the
//! entries into Recovery or Loss seen in the samples; RTT statistics those of the smoothed RTT
//! (`tcpi_rtt`) sampled every trace interval (10 ms unless the scenario sets one).

use kleinrock_lab::metrics::{link_metrics, rtt_fields, FlowMetrics, Summary};
use kleinrock_lab::runner::{file_name, write_atomically, write_file};
use kleinrock_lab::scenario::Scenario;
use kleinrock_quic::emulator::EmulatorStats;
use kleinrock_quic::kernel::{self, KernelFlow, KernelFlowResult, KernelRun};
use kleinrock_sim::trace::Series;
use kleinrock_sim::AppConfig;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// Trace interval of a scenario that sets none.
const DEFAULT_INTERVAL: Duration = Duration::from_millis(10);

/// A finished kernel run: its summary, flow traces and the link's own statistics.
pub struct KernelOutput {
    /// The metrics, as a simulated run's.
    pub summary: Summary,
    /// One trace per flow.
    pub traces: Vec<Series>,
    /// The TUN link's statistics and verdict.
    pub link: EmulatorStats,
}

/// The kernel run of `s`, or why it cannot be one (the field named).
pub fn plan(s: &Scenario) -> Result<KernelRun, String> {
    if !s.tunnels.is_empty() {
        return Err("tunnels: kernel flows cross the TUN link directly, not a tunnel".into());
    }
    let first = s
        .flows
        .first()
        .ok_or_else(|| format!("{}: flows: the scenario has no flow", s.name))?;
    let (data, ack) = match (&first.forward[..], &first.reverse[..]) {
        ([d], [a]) => (*d, *a),
        _ => {
            return Err(
                "flows[0]: a kernel flow crosses one link each way (path and \
                        reverse_path of one link each), the TUN link's two directions"
                    .into(),
            )
        }
    };
    let mut flows = Vec::new();
    for (i, f) in s.flows.iter().enumerate() {
        let Some(cc) = f.kernel_cc() else {
            return Err(format!(
                "flows[{i}].cc: `{}` is simulated; a scenario with kernel flows runs through \
                 the TUN link, where every flow must be one (cc = \"kernel:NAME\")",
                f.cc_name()
            ));
        };
        for (field, path, link) in [
            ("path", &f.forward, data),
            ("reverse_path", &f.reverse, ack),
        ] {
            if path[..] != [link] {
                return Err(format!(
                    "flows[{i}].{field}: every kernel flow crosses the TUN link's one link each \
                     way, as flows[0] does: {field} = [\"{}\"]",
                    s.links[link].name
                ));
            }
        }
        if f.start >= s.duration {
            return Err(format!(
                "flows[{i}].start: {:?} is not before the end of the run ({:?})",
                f.start, s.duration
            ));
        }
        kernel::check_cc(cc).map_err(|e| format!("flows[{i}].cc: {e}"))?;
        let AppConfig::Bulk { bytes } = f.app else {
            return Err(format!("flows[{i}].app: a kernel flow is a bulk transfer"));
        };
        flows.push(KernelFlow {
            name: f.name.clone(),
            cc: cc.to_string(),
            start: f.start,
            bytes,
        });
    }
    Ok(KernelRun {
        forward: s.links[ack].clone(),
        reverse: s.links[data].clone(),
        seed: s.seed,
        flows,
        duration: s.duration,
        warmup: s.warmup,
        interval: s.trace_interval.unwrap_or(DEFAULT_INTERVAL),
    })
}

/// Runs `s`'s kernel flows through the TUN link; a flow whose sender gave up fails the run.
pub fn run(s: &Scenario) -> Result<KernelOutput, String> {
    run_plan(s, &plan(s)?)
}

/// Runs `plan`, the [`plan`] of `s`.
pub fn run_plan(s: &Scenario, plan: &KernelRun) -> Result<KernelOutput, String> {
    let (results, link) = kernel::run(plan).map_err(|e| e.to_string())?;
    if let Some((i, r)) = results
        .iter()
        .enumerate()
        .find(|(_, r)| r.failure.is_some())
    {
        return Err(format!(
            "flows[{i}] ({}): the kernel's sender gave up: {}",
            r.name,
            r.failure.as_deref().unwrap_or("")
        ));
    }
    let summary = summary(s, &results, &link);
    let traces = results.into_iter().map(|r| r.trace).collect();
    Ok(KernelOutput {
        summary,
        traces,
        link,
    })
}

/// One kernel flow's metrics over the window from the warmup to the end: the samples at or
/// just after the warmup and at the end bound it.
fn flow_metrics(r: &KernelFlowResult, start: Duration) -> FlowMetrics {
    let (w, e) = (r.at_warmup, r.at_end);
    let from = start.max(w.at);
    let until = r.completion.map_or(e.at, |c| start + c).min(e.at);
    let active = until.saturating_sub(from).as_secs_f64();
    let per_second = |bytes: u64| {
        if active > 0.0 {
            bytes as f64 * 8.0 / active
        } else {
            0.0
        }
    };
    let delivered = e.received.saturating_sub(w.received);
    let segs = e.segs_out.saturating_sub(w.segs_out);
    let [rtt_mean_ms, rtt_std_ms, rtt_p50_ms, rtt_p95_ms, rtt_p99_ms] = rtt_fields(&r.srtt);
    FlowMetrics {
        name: r.name.clone(),
        cc: format!("{}{}", kleinrock_lab::scenario::KERNEL_PREFIX, r.cc),
        active_s: active,
        goodput_bps: per_second(delivered),
        throughput_bps: per_second(e.bytes_sent.saturating_sub(w.bytes_sent)),
        loss_rate: if segs == 0 {
            0.0
        } else {
            e.retrans_segs.saturating_sub(w.retrans_segs) as f64 / segs as f64
        },
        rtt_mean_ms,
        rtt_std_ms,
        rtt_p50_ms,
        rtt_p95_ms,
        rtt_p99_ms,
        owqd_mean_ms: None,
        owqd_p95_ms: None,
        loss_events: r.recoveries,
        loss_event_distance_s: None,
        completion_s: r.completion.map(|c| c.as_secs_f64()),
        transfers_completed: None,
        fq_detection: None,
        delivered_bytes: delivered,
        retransmitted_bytes: e.bytes_retrans.saturating_sub(w.bytes_retrans),
        latency: None,
        send_queue: None,
    }
}

/// The run's summary: its flows, and its links as the TUN link measured them over its life.
fn summary(s: &Scenario, results: &[KernelFlowResult], link: &EmulatorStats) -> Summary {
    let flows = results
        .iter()
        .zip(&s.flows)
        .map(|(r, f)| flow_metrics(r, f.start))
        .collect();
    let name = |i: usize| s.links[i].name.clone();
    let mut data = link_metrics(&link.reverse.link);
    data.name = name(s.flows[0].forward[0]);
    let mut ack = link_metrics(&link.forward.link);
    ack.name = name(s.flows[0].reverse[0]);
    let mut warnings = Vec::new();
    if let Some(why) = link.why_invalid() {
        warnings.push(format!(
            "the TUN link fell behind ({why}): this run is not valid"
        ));
    }
    Summary {
        scenario: format!("{} (Linux TCP through the TUN link)", s.name),
        point: s.point.clone(),
        overrides: s.overrides.clone(),
        seed: s.seed,
        end_s: s.duration.as_secs_f64(),
        warmup_s: s.warmup.as_secs_f64(),
        flows,
        links: vec![data, ack],
        tunnels: Vec::new(),
        jain_index: None,
        warnings,
    }
}

/// Writes summary.json, the flow traces and the HTML report under `dir`, atomically.
pub fn save(dir: &Path, out: &KernelOutput) -> Result<(), String> {
    write_atomically(dir, |tmp| write_into(tmp, out))
        .map_err(|e| format!("cannot write {}: {e}", dir.display()))
}

/// Writes one kernel run's files into `dir`.
pub fn write_into(dir: &Path, out: &KernelOutput) -> std::io::Result<()> {
    write_file(&dir.join("summary.json"), |w| {
        serde_json::to_writer_pretty(&mut *w, &out.summary)?;
        writeln!(w)
    })?;
    for t in &out.traces {
        let path = dir
            .join("flows")
            .join(format!("{}.csv", file_name(&t.name)));
        write_file(&path, |w| t.write_csv(w))?;
    }
    kleinrock_lab::html::write_report(dir).map_err(std::io::Error::other)
}
