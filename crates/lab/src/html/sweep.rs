//! The report of a sweep (`kleinrock sweep`, `demo`): a row per run and flow linking to the
//! run's own report, each metric against each swept field, and throughput against delay per
//! controller (the view Pantheon made familiar). With replicates, each grid point's metrics
//! are drawn as the mean over its seeds with the 95 % confidence interval `sweep.json` gives.

use super::page::{id, Cell, Page};
use super::plot::{self, Interval};
use super::run::{cell, point_label};
use serde_json::Value;
use std::path::Path;

/// The metrics plotted against each swept field: summary key, label, scale.
const METRICS: [(&str, &str, f64); 3] = [
    ("goodput_bps", "goodput (Mbit/s)", 1e-6),
    ("rtt_mean_ms", "mean RTT (ms)", 1.0),
    ("loss_rate", "loss (%)", 100.0),
];

/// The page of the sweep in `dir`, whose `sweep.json` is `sweep`: a list of the runs'
/// summaries, or with replicates an object of the runs and each grid point's aggregates.
pub fn page(dir: &Path, sweep: &Value) -> Result<Page, String> {
    let runs = sweep
        .as_array()
        .or_else(|| sweep["runs"].as_array())
        .ok_or("sweep.json holds neither a list of runs nor `runs`")?;
    let name = runs
        .first()
        .and_then(|p| p["scenario"].as_str())
        .unwrap_or("sweep");
    let mut page = Page::new(&format!("{name}: sweep of {} runs", runs.len()));
    if let Some(seeds) = sweep["seeds"].as_array() {
        let seeds: Vec<String> = seeds.iter().map(Value::to_string).collect();
        page.paragraph(&format!(
            "Each grid point ran with seeds {}; the plots show the mean over them with its \
             95 % confidence interval (Student's t).",
            seeds.join(", ")
        ));
    }
    let points: Vec<Value> = match sweep["aggregates"].as_array() {
        Some(a) => a.iter().map(aggregate_point).collect(),
        None => runs.iter().map(run_point).collect(),
    };
    if sweep["aggregates"].is_array() {
        means_table(&mut page, &points);
    }
    runs_table(&mut page, dir, runs);
    for key in swept_keys(&points) {
        let categories = categories(&points, &key);
        for (metric, label, scale) in METRICS {
            let series = against(&points, &key, (metric, scale), &categories);
            if series.iter().all(|(_, p)| p.is_empty()) {
                continue;
            }
            let title = format!("{label} against {key}");
            let svg = plot::intervals(&title, (&key, label), &series, &categories)?;
            page.figure(&id(&["sweep", &key, metric]), &title, &svg);
        }
    }
    throughput_delay(&mut page, &points)?;
    Ok(page)
}

/// A run's summary as a point of the plots: each flow's metric `m` as `{"mean": m}`.
fn run_point(run: &Value) -> Value {
    let flows: Vec<Value> = run["flows"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let metrics: serde_json::Map<String, Value> = f
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| v.is_number())
                .map(|(k, v)| (k.clone(), serde_json::json!({ "mean": v })))
                .collect();
            serde_json::json!({ "name": f["name"], "cc": f["cc"], "metrics": metrics })
        })
        .collect();
    serde_json::json!({ "point": run["point"], "flows": flows })
}

/// A grid point's aggregates as a point of the plots (already of that shape).
fn aggregate_point(a: &Value) -> Value {
    serde_json::json!({ "point": a["point"], "flows": a["flows"] })
}

/// Metric `m` of plot-point flow `f` times `scale`: the mean and its interval (the mean itself
/// without one).
fn stat(f: &Value, m: &str, scale: f64) -> Option<(f64, f64, f64)> {
    let s = &f["metrics"][m];
    let mean = s["mean"].as_f64()? * scale;
    let lo = s["ci95_low"].as_f64().map_or(mean, |v| v * scale);
    let hi = s["ci95_high"].as_f64().map_or(mean, |v| v * scale);
    Some((mean, lo, hi))
}

/// A cell `mean ± half-width` of metric `m` (times `scale`) of aggregate flow `f`, carrying
/// the mean.
fn mean_cell(f: &Value, m: &str, scale: f64, digits: usize) -> Cell {
    let Some((mean, lo, hi)) = stat(f, m, scale) else {
        return Cell::text("-");
    };
    let text = if hi > lo {
        format!("{mean:.digits$} ± {:.digits$}", (hi - lo) / 2.0)
    } else {
        format!("{mean:.digits$}")
    };
    Cell {
        text,
        value: f["metrics"][m]["mean"].as_f64().map(|v| (m.to_string(), v)),
    }
}

/// Per grid point and flow, the mean over the seeds with the half-width of its 95 %
/// confidence interval.
fn means_table(page: &mut Page, points: &[Value]) {
    page.heading(
        2,
        "Grid points: mean ± 95 % confidence half-width over the seeds",
    );
    let mut rows = Vec::new();
    for p in points {
        for f in p["flows"].as_array().into_iter().flatten() {
            let mut row = vec![Cell::text(point_label(p))];
            row.extend(flow_cells(f, mean_cell));
            rows.push(row);
        }
    }
    let mut header = vec!["assignments"];
    header.extend(FLOW_HEADER);
    page.table(&header, &rows);
}

/// The columns a sweep's tables show of a flow, after those naming its run or point.
const FLOW_HEADER: [&str; 5] = ["flow", "cc", "goodput Mbps", "RTT mean ms", "loss %"];

/// A flow's cells under [`FLOW_HEADER`], its metrics as `metric` shows them.
fn flow_cells(f: &Value, metric: fn(&Value, &str, f64, usize) -> Cell) -> [Cell; 5] {
    [
        Cell::text(f["name"].as_str().unwrap_or("")),
        Cell::text(f["cc"].as_str().unwrap_or("")),
        metric(f, "goodput_bps", 1e-6, 3),
        metric(f, "rtt_mean_ms", 1.0, 1),
        metric(f, "loss_rate", 100.0, 3),
    ]
}

fn runs_table(page: &mut Page, dir: &Path, runs: &[Value]) {
    page.heading(2, "Runs");
    let mut rows = Vec::new();
    for (i, p) in runs.iter().enumerate() {
        for f in p["flows"].as_array().into_iter().flatten() {
            let mut row = vec![
                Cell::text(format!("{i}")),
                Cell::text(point_label(p)),
                Cell::text(p["seed"].to_string()),
            ];
            row.extend(flow_cells(f, cell));
            rows.push(row);
        }
    }
    let mut header = vec!["run", "assignments", "seed"];
    header.extend(FLOW_HEADER);
    page.table(&header, &rows);
    let reports: Vec<String> = (0..runs.len())
        .filter(|i| dir.join(format!("point-{i}")).join(super::REPORT).exists())
        .map(|i| format!("<a href=\"point-{i}/{}\">run {i}</a>", super::REPORT))
        .collect();
    if !reports.is_empty() {
        page.raw_paragraph(&format!("Each run's own report: {}.", reports.join(", ")));
    }
}

/// The swept fields, in the order of the first point.
fn swept_keys(points: &[Value]) -> Vec<String> {
    points
        .first()
        .and_then(|p| p["point"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|kv| kv[0].as_str().map(str::to_string))
        .collect()
}

/// The value of field `key` at point `p`.
fn value_of<'a>(p: &'a Value, key: &str) -> Option<&'a str> {
    p["point"]
        .as_array()?
        .iter()
        .find(|kv| kv[0].as_str() == Some(key))?[1]
        .as_str()
}

/// The values of field `key` in order of first appearance when they are not all numbers (the
/// axis then names them), else none.
fn categories(points: &[Value], key: &str) -> Vec<String> {
    let texts: Vec<&str> = points.iter().filter_map(|p| value_of(p, key)).collect();
    if texts.iter().all(|t| leading_number(t).is_some()) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for t in texts {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    out
}

/// The number a value text starts with (`2bdp` is 2, `10Mbps` is 10), if any.
fn leading_number(text: &str) -> Option<f64> {
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == 'e'))
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// `metric` (times `scale`) of each flow against swept field `key`, one series per flow and
/// assignment of the other fields; a field with `categories` is placed by category.
fn against(
    points: &[Value],
    key: &str,
    (metric, scale): (&str, f64),
    categories: &[String],
) -> Vec<(String, Vec<Interval>)> {
    let mut series: Vec<(String, Vec<Interval>)> = Vec::new();
    for p in points {
        let Some(text) = value_of(p, key) else {
            continue;
        };
        let x = match categories.iter().position(|c| c == text) {
            Some(k) => k as f64,
            None => leading_number(text).unwrap_or(f64::NAN),
        };
        let others = others_label(p, key);
        for f in p["flows"].as_array().into_iter().flatten() {
            let Some((y, lo, hi)) = stat(f, metric, scale) else {
                continue;
            };
            let name = f["name"].as_str().unwrap_or("");
            let label = if others.is_empty() {
                name.to_string()
            } else {
                format!("{name} ({others})")
            };
            let point = Interval { x, y, lo, hi };
            match series.iter_mut().find(|(l, _)| *l == label) {
                Some((_, v)) => v.push(point),
                None => series.push((label, vec![point])),
            }
        }
    }
    series
}

/// The assignments of point `p` other than `key`.
fn others_label(p: &Value, key: &str) -> String {
    p["point"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|kv| kv[0].as_str() != Some(key))
        .filter_map(|kv| Some(format!("{}={}", kv[0].as_str()?, kv[1].as_str()?)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Goodput against mean RTT, one series per controller.
fn throughput_delay(page: &mut Page, points: &[Value]) -> Result<(), String> {
    let mut series: Vec<(String, Vec<Interval>)> = Vec::new();
    for f in points
        .iter()
        .flat_map(|p| p["flows"].as_array().into_iter().flatten())
    {
        let (Some((x, _, _)), Some((y, lo, hi))) =
            (stat(f, "rtt_mean_ms", 1.0), stat(f, "goodput_bps", 1e-6))
        else {
            continue;
        };
        let cc = f["cc"].as_str().unwrap_or("").to_string();
        let point = Interval { x, y, lo, hi };
        match series.iter_mut().find(|(l, _)| *l == cc) {
            Some((_, v)) => v.push(point),
            None => series.push((cc, vec![point])),
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    for (_, v) in &mut series {
        v.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    page.heading(2, "Throughput against delay");
    let title = "goodput against mean RTT, per controller";
    let svg = plot::intervals(title, ("mean RTT (ms)", "goodput (Mbit/s)"), &series, &[])?;
    page.figure("sweep-throughput-delay", title, &svg);
    Ok(())
}
