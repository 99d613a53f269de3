//! The report of one run (`kleinrock run`, a sweep's point, `kleinrock transfer`), from its
//! output directory: the summary's tables, then per flow its window, rates, delays and
//! controller state over time (mode bands behind), per link its queue, drops and throughput,
//! per tunnel its paths' rates and latencies, and the RTT and latency CDFs.

use super::page::{id, Cell, Page};
use super::plot::{self, Band, Series};
use super::table::{self, Columns};
use crate::runner::file_name;
use serde_json::Value;
use std::path::Path;

/// Trace columns that are counters or shown elsewhere, not plotted as controller state.
pub(super) const NOT_STATE: &[&str] = &[
    "time_s",
    "delivered_bytes",
    "sent_packets",
    "lost_packets",
    "sent_bytes",
    "send_queue_drops",
    "active_transfers",
    "begun_transfers",
];

/// The page of the run in `dir`, whose summary is `summary`.
pub fn page(dir: &Path, summary: &Value) -> Result<Page, String> {
    let flows = summary["flows"]
        .as_array()
        .ok_or("summary.json has no `flows` list")?;
    let links = summary["links"].as_array().cloned().unwrap_or_default();
    let mut page = Page::new(&title(summary));
    page.paragraph(&format!(
        "Simulated {} s, measured from {} s, seed {}.",
        num(&summary["end_s"], 1),
        num(&summary["warmup_s"], 1),
        summary["seed"]
    ));
    summary_tables(&mut page, flows, &links);
    for f in flows {
        flow_section(&mut page, dir, f)?;
    }
    for l in &links {
        link_section(&mut page, dir, l)?;
    }
    if let Some(tunnels) = summary["tunnels"].as_array() {
        for t in tunnels {
            tunnel_section(&mut page, dir, t)?;
        }
    }
    cdf_section(&mut page, dir, flows, "rtt_cdf", "rtt_ms", "RTT")?;
    cdf_section(
        &mut page,
        dir,
        flows,
        "latency_cdf",
        "latency_ms",
        "per-packet latency",
    )?;
    Ok(page)
}

/// The page of a real transfer in `dir` (`kleinrock transfer --out`): the real run's report
/// from `real/`, with the simulated run's figures beside it and a link to its own report.
pub fn transfer_page(dir: &Path, summary: &Value) -> Result<Page, String> {
    let mut page = page(&dir.join("real"), &summary["real"])?;
    let simulated = &summary["simulated"];
    let Some(flow) = simulated["flows"].as_array().and_then(|f| f.first()) else {
        return Ok(page);
    };
    page.heading(2, "The same scenario simulated");
    let real = &summary["real"]["flows"][0];
    let metrics = [
        ("goodput_bps", "goodput Mbps", 1e-6, 3),
        ("throughput_bps", "throughput Mbps", 1e-6, 3),
        ("loss_rate", "loss %", 100.0, 3),
        ("rtt_mean_ms", "RTT mean ms", 1.0, 1),
        ("rtt_p95_ms", "RTT p95 ms", 1.0, 1),
    ];
    let rows: Vec<Vec<Cell>> = metrics
        .iter()
        .map(|&(key, label, scale, digits)| {
            vec![
                Cell::text(label),
                cell(real, key, scale, digits),
                cell(flow, key, scale, digits),
            ]
        })
        .collect();
    page.table(&["metric", "real", "simulated"], &rows);
    if dir.join("simulated").join(super::REPORT).exists() {
        page.raw_paragraph(&format!(
            "The simulated run's own report: <a href=\"simulated/{}\">simulated/{}</a>.",
            super::REPORT,
            super::REPORT
        ));
    }
    Ok(page)
}

/// The run's name and its sweep point.
pub fn title(summary: &Value) -> String {
    let name = summary["scenario"].as_str().unwrap_or("run");
    let point = point_label(summary);
    if point.is_empty() {
        name.to_string()
    } else {
        format!("{name} [{point}]")
    }
}

/// `key=value, ...` of the run's sweep point and overrides.
pub fn point_label(summary: &Value) -> String {
    ["point", "overrides"]
        .iter()
        .filter_map(|k| summary[k].as_array())
        .flatten()
        .filter_map(|kv| Some(format!("{}={}", kv[0].as_str()?, kv[1].as_str()?)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `v` with `digits` decimals, or `-` when it is not a number.
pub fn num(v: &Value, digits: usize) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// A cell showing `v[key]` times `scale` with `digits` decimals, carrying the exact value.
pub fn cell(v: &Value, key: &str, scale: f64, digits: usize) -> Cell {
    let value = &v[key];
    Cell {
        text: value
            .as_f64()
            .map_or("-".into(), |x| format!("{:.digits$}", x * scale)),
        value: value.as_f64().map(|x| (key.to_string(), x)),
    }
}

fn summary_tables(page: &mut Page, flows: &[Value], links: &[Value]) {
    page.heading(2, "Summary");
    let header = [
        "flow",
        "cc",
        "goodput Mbps",
        "throughput Mbps",
        "loss %",
        "RTT mean ms",
        "RTT p95 ms",
        "OWQD mean ms",
        "LED s",
        "FCT s",
    ];
    let rows: Vec<Vec<Cell>> = flows
        .iter()
        .map(|f| {
            vec![
                Cell::text(f["name"].as_str().unwrap_or("")),
                Cell::text(f["cc"].as_str().unwrap_or("")),
                cell(f, "goodput_bps", 1e-6, 3),
                cell(f, "throughput_bps", 1e-6, 3),
                cell(f, "loss_rate", 100.0, 3),
                cell(f, "rtt_mean_ms", 1.0, 1),
                cell(f, "rtt_p95_ms", 1.0, 1),
                cell(f, "owqd_mean_ms", 1.0, 1),
                cell(f, "loss_event_distance_s", 1.0, 2),
                cell(f, "completion_s", 1.0, 2),
            ]
        })
        .collect();
    page.table(&header, &rows);
    let header = [
        "link",
        "utilisation %",
        "queue fill %",
        "max queue pkt",
        "drops",
    ];
    let rows: Vec<Vec<Cell>> = links
        .iter()
        .map(|l| {
            vec![
                Cell::text(l["name"].as_str().unwrap_or("")),
                cell(l, "utilisation", 100.0, 2),
                cell(l, "mean_queue_fill", 100.0, 1),
                cell(l, "max_queue_packets", 1.0, 0),
                cell(l, "dropped_packets", 1.0, 0),
            ]
        })
        .collect();
    page.table(&header, &rows);
}

/// The trace of `name` under `dir/kind`, if it was written.
fn trace(dir: &Path, kind: &str, name: &str) -> Result<Option<Columns>, String> {
    let path = dir.join(kind).join(format!("{}.csv", file_name(name)));
    if !path.exists() {
        return Ok(None);
    }
    table::read(&path).map(Some)
}

/// The series of the columns of `c` that `pick` selects, scaled by `scale`.
fn columns(c: &Columns, pick: impl Fn(&str) -> bool, scale: f64) -> Vec<Series> {
    let t = c.time();
    c.names
        .iter()
        .zip(&c.values)
        .filter(|(n, v)| pick(n) && v.iter().any(|x| x.is_finite() && *x >= 0.0))
        .map(|(n, v)| {
            let ys: Vec<f64> = v
                .iter()
                .map(|x| if *x < 0.0 { f64::NAN } else { x * scale })
                .collect();
            Series::new(n, t, &ys)
        })
        .collect()
}

fn flow_section(page: &mut Page, dir: &Path, f: &Value) -> Result<(), String> {
    let name = f["name"].as_str().unwrap_or("");
    let Some(c) = trace(dir, "flows", name)? else {
        return Ok(());
    };
    page.heading(
        2,
        &format!("Flow {name} ({})", f["cc"].as_str().unwrap_or("")),
    );
    let bands = plot::bands(c.time(), &c.mode);
    let window = columns(
        &c,
        |n| n.ends_with("_bytes") && !NOT_STATE.contains(&n),
        1e-3,
    );
    let rates = columns(&c, |n| n.ends_with("_bps"), 1e-6);
    let delays = columns(&c, |n| n.ends_with("_ms"), 1.0);
    let known = |n: &str| {
        NOT_STATE.contains(&n) || n.ends_with("_bytes") || n.ends_with("_bps") || n.ends_with("_ms")
    };
    let state = columns(&c, |n| !known(n), 1.0);
    let plots: [(&str, &str, Vec<Series>, &[Band]); 4] = [
        ("window", "KB", window, &bands),
        ("rates", "Mbit/s", rates, &[]),
        ("delays", "ms", delays, &[]),
        ("controller state", "value", state, &bands),
    ];
    for (what, unit, series, bands) in plots {
        if series.is_empty() {
            continue;
        }
        let caption = format!(
            "{name}: {what} over time ({unit}); columns of flows/{}.csv",
            file_name(name)
        );
        let plot = TimePlot {
            id: id(&["flow", name, what]),
            title: format!("{name}: {what}"),
            unit,
            caption,
        };
        time_figure(page, plot, &series, bands)?;
    }
    Ok(())
}

/// A plot against time: its element id, title, unit and caption.
struct TimePlot<'a> {
    id: String,
    title: String,
    unit: &'a str,
    caption: String,
}

/// Draws `series` (with controller-mode `bands` behind them) against time and adds
/// it to the page as `what`.
fn time_figure(
    page: &mut Page,
    what: TimePlot,
    series: &[Series],
    bands: &[Band],
) -> Result<(), String> {
    let svg = plot::lines(&what.title, "time (s)", what.unit, series, bands, &[])?;
    page.figure(&what.id, &what.caption, &svg);
    Ok(())
}

fn link_section(page: &mut Page, dir: &Path, l: &Value) -> Result<(), String> {
    let name = l["name"].as_str().unwrap_or("");
    let Some(c) = trace(dir, "links", name)? else {
        return Ok(());
    };
    page.heading(2, &format!("Link {name}"));
    let t = c.time();
    let per_interval = |col: &str| -> Vec<f64> {
        let v = c.get(col).unwrap_or(&[]);
        let mut out = vec![0.0; v.len()];
        for i in 1..v.len() {
            out[i] = v[i] - v[i - 1];
        }
        out
    };
    let queue = vec![
        Series::new("queue_packets", t, c.get("queue_packets").unwrap_or(&[])),
        Series::new("dropped per interval", t, &per_interval("dropped_packets")),
    ];
    let sent = per_interval("transmitted_bytes");
    let rate: Vec<f64> = sent
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let dt = if i == 0 { f64::NAN } else { t[i] - t[i - 1] };
            b * 8.0 / dt * 1e-6
        })
        .collect();
    let capacity: Vec<f64> = c
        .get("rate_bps")
        .unwrap_or(&[])
        .iter()
        .map(|r| r * 1e-6)
        .collect();
    let throughput = vec![
        Series::new("throughput", t, &rate),
        Series::new("link rate", t, &capacity),
    ];
    let queue_plot = TimePlot {
        id: id(&["link", name, "queue"]),
        title: format!("{name}: queue and drops"),
        unit: "packets",
        caption: format!("{name}: packets waiting, and packets dropped per trace interval"),
    };
    time_figure(page, queue_plot, &queue, &[])?;
    let throughput_plot = TimePlot {
        id: id(&["link", name, "throughput"]),
        title: format!("{name}: throughput"),
        unit: "Mbit/s",
        caption: format!("{name}: bytes transmitted per trace interval, and the link's rate"),
    };
    time_figure(page, throughput_plot, &throughput, &[])
}

fn tunnel_section(page: &mut Page, dir: &Path, t: &Value) -> Result<(), String> {
    let name = t["name"].as_str().unwrap_or("");
    let paths = t["paths"].as_array().cloned().unwrap_or_default();
    let mut rates = Vec::new();
    let mut latency = Vec::new();
    for p in &paths {
        let path = p["name"].as_str().unwrap_or("");
        let Some(c) = trace(dir, "tunnels", &format!("{name}.{path}"))? else {
            continue;
        };
        let mbps: Vec<f64> = c
            .get("rx_rate_bps")
            .unwrap_or(&[])
            .iter()
            .map(|r| r * 1e-6)
            .collect();
        rates.push(Series::new(path, c.time(), &mbps));
        latency.push(Series::new(
            path,
            c.time(),
            c.get("latency_ms").unwrap_or(&[]),
        ));
    }
    page.heading(2, &format!("Tunnel {name}"));
    tunnel_counts(page, t);
    if rates.is_empty() {
        return Ok(());
    }
    let rates_plot = TimePlot {
        id: id(&["tunnel", name, "rates"]),
        title: format!("{name}: received per path"),
        unit: "Mbit/s",
        caption: format!(
            "{name}: carried bytes received at each path's far end per trace interval"
        ),
    };
    time_figure(page, rates_plot, &rates, &[])?;
    let latency_plot = TimePlot {
        id: id(&["tunnel", name, "latency"]),
        title: format!("{name}: latency per path"),
        unit: "ms",
        caption: format!(
            "{name}: mean latency from the tunnel's entry to each path's far end per trace \
             interval"
        ),
    };
    time_figure(page, latency_plot, &latency, &[])
}

/// What became of the packets that entered each direction of tunnel `t` (README "Metrics").
fn tunnel_counts(page: &mut Page, t: &Value) {
    let keys = [
        ("entered", "entered"),
        ("forwarded", "forwarded"),
        ("forwarded_late", "of them late"),
        ("queue_drops", "tunnel queue drops"),
        ("send_queue_drops", "send queue drops"),
        ("lost_on_paths", "lost on paths"),
        ("reorder_drops", "reorder drops"),
        ("duplicates", "duplicates"),
        ("gaps_skipped", "gaps skipped"),
        ("lost", "lost"),
        ("held_at_end", "held at the end"),
    ];
    let rows: Vec<Vec<Cell>> = [("forward", "towards the far end"), ("backward", "back")]
        .iter()
        .map(|(dir, label)| {
            let counts = &t[dir];
            let mut row = vec![Cell::text(*label)];
            row.extend(keys.iter().map(|(k, _)| cell(counts, k, 1.0, 0)));
            row
        })
        .collect();
    let mut header = vec!["packets"];
    header.extend(keys.iter().map(|(_, label)| *label));
    page.table(&header, &rows);
}

fn cdf_section(
    page: &mut Page,
    dir: &Path,
    flows: &[Value],
    kind: &str,
    column: &str,
    what: &str,
) -> Result<(), String> {
    let mut series = Vec::new();
    for f in flows {
        let name = f["name"].as_str().unwrap_or("");
        let path = dir.join(kind).join(format!("{}.csv", file_name(name)));
        if !path.exists() {
            continue;
        }
        let c = table::read(&path)?;
        let xs = c.get(column).unwrap_or(&[]);
        series.push(Series::new(name, xs, c.get("fraction").unwrap_or(&[])));
    }
    if series.is_empty() {
        return Ok(());
    }
    page.heading(2, &format!("{what} CDF"));
    let svg = plot::lines(&format!("{what} CDF"), "ms", "fraction", &series, &[], &[])?;
    page.figure(
        &id(&[kind]),
        &format!("{what} of each flow over the measurement window ({kind}/)"),
        &svg,
    );
    Ok(())
}
