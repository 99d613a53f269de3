//! `kleinrock crosscheck`: a scenario in the simulator and, for every controller that Linux
//! also has (cubic as `cubic`, newreno as `reno`, bbr as `bbr`), the same scenario with
//! Linux's own TCP through the TUN link (crates/cli/src/kernel_run.rs), side by side: goodput
//! and median RTT of each flow, within [`GOODPUT_TOLERANCE`] and [`RTT_TOLERANCE`] of the
//! kernel's (the bounds of docs/crosscheck.md, where every difference is explained). A sweep
//! runs point by point; a point with a controller Linux lacks is skipped and said so.

use crate::kernel_run::{self, KernelOutput};
use kleinrock_lab::metrics::FlowMetrics;
use kleinrock_lab::report::{num, Table};
use kleinrock_lab::runner::{self, check_output_dir, write_atomically, write_file, RunOutput};
use kleinrock_lab::scenario::{load, FlowTransport, Scenario, KERNEL_PREFIX};
use kleinrock_lab::sweep;
use kleinrock_quic::kernel::KernelRun;
use std::io::Write;
use std::path::PathBuf;

/// Goodput within 10 % of the kernel's.
pub const GOODPUT_TOLERANCE: f64 = 0.10;
/// Median RTT within 20 % of the kernel's.
pub const RTT_TOLERANCE: f64 = 0.20;

/// The simulator's controllers that Linux has, with the kernel's name.
const COUNTERPARTS: [(&str, &str); 3] = [("cubic", "cubic"), ("newreno", "reno"), ("bbr", "bbr")];

/// Arguments of `kleinrock crosscheck`.
#[derive(clap::Args)]
pub struct CrosscheckArgs {
    /// Scenario file (TOML): a dumbbell whose flows cross one link each way, with cubic,
    /// newreno or bbr; a sweep runs point by point.
    file: PathBuf,
    /// Override a field before running: `--set links.0.rate=100Mbps`.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// Write the comparison (report.txt, crosscheck.json, report.html with each point's
    /// window and RTT, simulated and Linux's) and both runs of every point to this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Show no progress.
    #[arg(long, short)]
    quiet: bool,
}

/// The kernel's name for a simulated controller, if Linux has it.
pub fn counterpart(cc: &str) -> Option<&'static str> {
    COUNTERPARTS.iter().find(|(s, _)| *s == cc).map(|(_, k)| *k)
}

/// `s` with every flow's controller replaced by the kernel's, or the first that has none.
fn kernel_twin(s: &Scenario) -> Result<Scenario, String> {
    let mut twin = s.clone();
    for (i, f) in twin.flows.iter_mut().enumerate() {
        let accepted = COUNTERPARTS.map(|(s, _)| s).join(", ");
        let FlowTransport::Reliable { cc, params, .. } = &mut f.transport else {
            return Err(format!(
                "flows[{i}] is not a reliable flow; Linux has reliable flows of {accepted}"
            ));
        };
        let Some(k) = counterpart(cc) else {
            return Err(format!(
                "flows[{i}].cc `{cc}` has no Linux counterpart; accepted: {accepted}"
            ));
        };
        *cc = format!("{KERNEL_PREFIX}{k}");
        params.clear();
    }
    Ok(twin)
}

/// What a kernel flow's packets are on the TUN link: 1500 bytes, 52 of them IPv4 and TCP
/// headers with timestamps (MSS 1448).
const KERNEL_PACKET: (u32, u32) = (1500, 52);

/// A note for each flow of `s` whose simulated packets differ from the kernel's, which the
/// comparison does not correct for.
fn packet_notes(label: &str, s: &Scenario) -> Vec<String> {
    s.flows
        .iter()
        .filter_map(|f| match &f.transport {
            FlowTransport::Reliable { transport, .. }
                if (transport.packet_size, transport.header_size) != KERNEL_PACKET =>
            {
                Some(format!(
                    "{label}: flow {}'s simulated packets are {} bytes with {} of headers; the \
                     kernel's are {} with {} (set packet_size and header_size to compare like \
                     with like)",
                    f.name,
                    transport.packet_size,
                    transport.header_size,
                    KERNEL_PACKET.0,
                    KERNEL_PACKET.1
                ))
            }
            _ => None,
        })
        .collect()
}

/// A point to cross-check: the simulated scenario, its kernel twin and the twin's run.
struct Planned<'a> {
    label: String,
    sim: &'a Scenario,
    twin: Scenario,
    plan: KernelRun,
}

/// One point's two runs.
struct Point {
    label: String,
    sim: RunOutput,
    kernel: KernelOutput,
}

/// One flow compared.
#[derive(serde::Serialize)]
struct Row {
    point: String,
    flow: String,
    cc: String,
    sim_goodput_mbps: f64,
    kernel_goodput_mbps: f64,
    goodput_diff: f64,
    goodput_within: bool,
    sim_rtt_p50_ms: Option<f64>,
    kernel_rtt_p50_ms: Option<f64>,
    rtt_diff: Option<f64>,
    rtt_within: bool,
    sim_loss: f64,
    kernel_loss: f64,
}

/// `a` relative to `b`: (a - b) / b.
fn relative(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        if a == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (a - b) / b
    }
}

fn row(label: &str, sim: &FlowMetrics, kernel: &FlowMetrics) -> Row {
    let goodput_diff = relative(sim.goodput_bps, kernel.goodput_bps);
    let rtt_diff = sim
        .rtt_p50_ms
        .zip(kernel.rtt_p50_ms)
        .map(|(s, k)| relative(s, k));
    Row {
        point: label.to_string(),
        flow: sim.name.clone(),
        cc: sim.cc.clone(),
        sim_goodput_mbps: sim.goodput_bps / 1e6,
        kernel_goodput_mbps: kernel.goodput_bps / 1e6,
        goodput_diff,
        goodput_within: goodput_diff.abs() <= GOODPUT_TOLERANCE,
        sim_rtt_p50_ms: sim.rtt_p50_ms,
        kernel_rtt_p50_ms: kernel.rtt_p50_ms,
        rtt_diff,
        rtt_within: rtt_diff.is_some_and(|d| d.abs() <= RTT_TOLERANCE),
        sim_loss: sim.loss_rate,
        kernel_loss: kernel.loss_rate,
    }
}

fn rows(points: &[Point]) -> Vec<Row> {
    points
        .iter()
        .flat_map(|p| {
            let sim = &p.sim.summary.flows;
            let kernel = &p.kernel.summary.flows;
            sim.iter().zip(kernel).map(|(s, k)| row(&p.label, s, k))
        })
        .collect()
}

fn table(rows: &[Row]) -> String {
    let mut t = Table::new(&[
        "point",
        "flow",
        "cc",
        "sim Mbps",
        "kernel Mbps",
        "diff %",
        "<=10%",
        "sim RTTp50",
        "kernel RTTp50",
        "diff %",
        "<=20%",
        "sim loss %",
        "kernel loss %",
    ]);
    let yes = |b: bool| if b { "yes" } else { "NO" }.to_string();
    for r in rows {
        t.row(vec![
            r.point.clone(),
            r.flow.clone(),
            r.cc.clone(),
            num(Some(r.sim_goodput_mbps), 2),
            num(Some(r.kernel_goodput_mbps), 2),
            num(Some(r.goodput_diff * 100.0), 1),
            yes(r.goodput_within),
            num(r.sim_rtt_p50_ms, 1),
            num(r.kernel_rtt_p50_ms, 1),
            num(r.rtt_diff.map(|d| d * 100.0), 1),
            yes(r.rtt_within),
            num(Some(r.sim_loss * 100.0), 3),
            num(Some(r.kernel_loss * 100.0), 3),
        ]);
    }
    t.render()
}

/// Runs `kleinrock crosscheck`.
pub fn run(args: CrosscheckArgs) -> Result<(), String> {
    let set = load(&args.file, &args.set).map_err(|e| e.to_string())?;
    if let Some(dir) = &args.out {
        check_output_dir(dir)?;
    }
    if let Some(missing) = kleinrock_quic::netns::check_support() {
        return Err(missing);
    }
    let mut skipped = Vec::new();
    let mut notes = Vec::new();
    let mut plans = Vec::new();
    for p in &set.points {
        let label = if set.is_sweep {
            sweep::label(&p.point)
        } else {
            p.name.clone()
        };
        p.check_simulated()?;
        match kernel_twin(p).and_then(|twin| Ok((kernel_run::plan(&twin)?, twin))) {
            Ok((plan, twin)) => {
                notes.extend(packet_notes(&label, p));
                plans.push(Planned {
                    label,
                    sim: p,
                    twin,
                    plan,
                });
            }
            Err(why) => skipped.push(format!("{label}: {why}")),
        }
    }
    if plans.is_empty() {
        return Err(format!(
            "{}: no point to cross-check: {}",
            args.file.display(),
            skipped.join("; ")
        ));
    }
    crate::live::remove_namespaces_on_signal()?;
    let points = execute(&plans, args.quiet)?;
    let rows = rows(&points);
    let text = format!(
        "{} ({} s per run; tolerances: goodput {:.0} %, median RTT {:.0} % of the kernel's)\n\n{}{}",
        set.name,
        plans[0].sim.duration.as_secs_f64(),
        GOODPUT_TOLERANCE * 100.0,
        RTT_TOLERANCE * 100.0,
        table(&rows),
        skipped
            .iter()
            .map(|s| format!("skipped {s}\n"))
            .chain(notes.iter().map(|n| format!("note: {n}\n")))
            .collect::<String>()
    );
    let json = serde_json::json!({
        "scenario": set.name,
        "goodput_tolerance": GOODPUT_TOLERANCE,
        "rtt_tolerance": RTT_TOLERANCE,
        "rows": rows,
        "skipped": skipped,
        "notes": notes,
        "points": points.iter().map(|p| p.label.as_str()).collect::<Vec<_>>(),
    });
    if args.json {
        crate::emit(&format!("{json:#}\n"));
    } else {
        crate::emit(&text);
    }
    if let Some(dir) = &args.out {
        save(dir, &points, &text, &json)?;
        if !args.quiet {
            eprintln!("wrote {}", dir.display());
        }
    }
    let invalid: Vec<&str> = points
        .iter()
        .filter(|p| !p.kernel.link.valid)
        .map(|p| p.label.as_str())
        .collect();
    if invalid.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the TUN link fell behind in {}: those kernel runs are not valid",
            invalid.join(", ")
        ))
    }
}

/// Runs each point in the simulator and through the TUN link, one after the other.
fn execute(plans: &[Planned], quiet: bool) -> Result<Vec<Point>, String> {
    let bar = crate::progress(
        Some(plans.len() as u64),
        "{spinner} {msg} [{bar:30}] {pos}/{len} points, {elapsed}",
        quiet,
    );
    let mut points = Vec::new();
    for p in plans {
        bar.set_message(format!("{}: simulating", p.label));
        let sim = runner::run(p.sim);
        bar.set_message(format!(
            "{}: Linux TCP through the TUN link, {} s",
            p.label,
            p.twin.duration.as_secs_f64()
        ));
        let kernel = kernel_run::run_plan(&p.twin, &p.plan)?;
        bar.inc(1);
        points.push(Point {
            label: p.label.clone(),
            sim,
            kernel,
        });
    }
    bar.finish_and_clear();
    Ok(points)
}

/// Writes the comparison and both runs of every point under `dir`, atomically.
fn save(
    dir: &std::path::Path,
    points: &[Point],
    text: &str,
    json: &serde_json::Value,
) -> Result<(), String> {
    write_atomically(dir, |tmp| {
        write_file(&tmp.join("report.txt"), |w| w.write_all(text.as_bytes()))?;
        write_file(&tmp.join("crosscheck.json"), |w| writeln!(w, "{json:#}"))?;
        for (i, p) in points.iter().enumerate() {
            let point = tmp.join("points").join(format!("{}", i + 1));
            runner::write_run(&point.join("simulated"), &p.sim)?;
            kernel_run::write_into(&point.join("kernel"), &p.kernel)?;
        }
        kleinrock_lab::html::write_report(tmp).map_err(std::io::Error::other)
    })
    .map_err(|e| format!("cannot write {}: {e}", dir.display()))
}
