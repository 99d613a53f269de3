//! The report of a sweep (`kleinrock sweep`, `demo`): a row per point and flow linking to the
//! point's own report, each metric against each swept field, and throughput against delay per
//! controller (the view Pantheon made familiar).

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

/// The page of the sweep in `dir`, whose points' summaries are `summaries`.
pub fn page(dir: &Path, summaries: &Value) -> Result<super::page::Page, String> {
    let points = summaries
        .as_array()
        .ok_or("sweep.json is not a list of point summaries")?;
    let name = points
        .first()
        .and_then(|p| p["scenario"].as_str())
        .unwrap_or("sweep");
    let mut page = Page::new(&format!("{name}: sweep of {} points", points.len()));
    points_table(&mut page, dir, points);
    for key in swept_keys(points) {
        let categories = categories(points, &key);
        for (metric, label, scale) in METRICS {
            let series = against(points, &key, (metric, scale), &categories);
            if series.iter().all(|(_, p)| p.is_empty()) {
                continue;
            }
            let title = format!("{label} against {key}");
            let svg = plot::intervals(&title, (&key, label), &series, &categories)?;
            page.figure(&id(&["sweep", &key, metric]), &title, &svg);
        }
    }
    throughput_delay(&mut page, points)?;
    Ok(page)
}

fn points_table(page: &mut Page, dir: &Path, points: &[Value]) {
    page.heading(2, "Points");
    let mut rows = Vec::new();
    for (i, p) in points.iter().enumerate() {
        for f in p["flows"].as_array().into_iter().flatten() {
            rows.push(vec![
                Cell::text(format!("{i}")),
                Cell::text(point_label(p)),
                Cell::text(f["name"].as_str().unwrap_or("")),
                Cell::text(f["cc"].as_str().unwrap_or("")),
                cell(f, "goodput_bps", 1e-6, 3),
                cell(f, "rtt_mean_ms", 1.0, 1),
                cell(f, "loss_rate", 100.0, 3),
            ]);
        }
    }
    page.table(
        &[
            "point",
            "assignments",
            "flow",
            "cc",
            "goodput Mbps",
            "RTT mean ms",
            "loss %",
        ],
        &rows,
    );
    let reports: Vec<String> = (0..points.len())
        .filter(|i| dir.join(format!("point-{i}")).join(super::REPORT).exists())
        .map(|i| format!("<a href=\"point-{i}/{}\">point {i}</a>", super::REPORT))
        .collect();
    if !reports.is_empty() {
        page.raw_paragraph(&format!("Each point's own report: {}.", reports.join(", ")));
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
            let Some(y) = f[metric].as_f64() else {
                continue;
            };
            let name = f["name"].as_str().unwrap_or("");
            let label = if others.is_empty() {
                name.to_string()
            } else {
                format!("{name} ({others})")
            };
            let y = y * scale;
            let point = Interval { x, y, lo: y, hi: y };
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
        let (Some(x), Some(y)) = (f["rtt_mean_ms"].as_f64(), f["goodput_bps"].as_f64()) else {
            continue;
        };
        let cc = f["cc"].as_str().unwrap_or("").to_string();
        let point = Interval {
            x,
            y: y * 1e-6,
            lo: y * 1e-6,
            hi: y * 1e-6,
        };
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
