//! The report of `kleinrock crosscheck`, from its output directory: the comparison table
//! (`crosscheck.json`), then for each point's flows the simulated and the kernel's window and
//! smoothed RTT over time, one plot each, from `points/N/{simulated,kernel}/flows/FLOW.csv`.

use super::page::{id, Cell, Page};
use super::plot::{self, Series};
use super::table;
use crate::runner::file_name;
use serde_json::Value;
use std::path::Path;

/// The page of the cross-check in `dir`, whose comparison is `json`.
pub fn page(dir: &Path, json: &Value) -> Result<Page, String> {
    let rows = json["rows"]
        .as_array()
        .ok_or("crosscheck.json has no `rows` list")?;
    let mut page = Page::new(&format!(
        "Kernel cross-check: {}",
        json["scenario"].as_str().unwrap_or("")
    ));
    page.paragraph(&format!(
        "Each point in the simulator and with Linux's own TCP through the TUN link. Within \
         tolerance: goodput within {:.0} % and median RTT within {:.0} % of the kernel's \
         (docs/crosscheck.md).",
        json["goodput_tolerance"].as_f64().unwrap_or(0.0) * 100.0,
        json["rtt_tolerance"].as_f64().unwrap_or(0.0) * 100.0
    ));
    comparison(&mut page, rows);
    for (key, what) in [("skipped", "Skipped"), ("notes", "Note")] {
        if let Some(items) = json[key].as_array().filter(|s| !s.is_empty()) {
            let list: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            page.paragraph(&format!("{what}: {}.", list.join("; ")));
        }
    }
    let labels = json["points"].as_array().cloned().unwrap_or_default();
    for (i, label) in labels.iter().enumerate() {
        let label = label.as_str().unwrap_or("");
        for r in rows.iter().filter(|r| r["point"].as_str() == Some(label)) {
            let flow = r["flow"].as_str().unwrap_or("");
            point_flow(
                &mut page,
                &dir.join("points").join((i + 1).to_string()),
                label,
                flow,
            )?;
        }
    }
    Ok(page)
}

/// The comparison table, one row per point and flow.
fn comparison(page: &mut Page, rows: &[Value]) {
    let number = |r: &Value, key: &str, scale: f64, digits: usize| match r[key].as_f64() {
        Some(v) => Cell {
            text: format!("{:.digits$}", v * scale),
            value: Some((key.to_string(), v)),
        },
        None => Cell::text("-"),
    };
    let verdict = |r: &Value, key: &str| {
        Cell::text(if r[key].as_bool() == Some(true) {
            "yes"
        } else {
            "NO"
        })
    };
    let cells: Vec<Vec<Cell>> = rows
        .iter()
        .map(|r| {
            vec![
                Cell::text(r["point"].as_str().unwrap_or("")),
                Cell::text(r["flow"].as_str().unwrap_or("")),
                Cell::text(r["cc"].as_str().unwrap_or("")),
                number(r, "sim_goodput_mbps", 1.0, 2),
                number(r, "kernel_goodput_mbps", 1.0, 2),
                number(r, "goodput_diff", 100.0, 1),
                verdict(r, "goodput_within"),
                number(r, "sim_rtt_p50_ms", 1.0, 1),
                number(r, "kernel_rtt_p50_ms", 1.0, 1),
                number(r, "rtt_diff", 100.0, 1),
                verdict(r, "rtt_within"),
                number(r, "sim_loss", 100.0, 3),
                number(r, "kernel_loss", 100.0, 3),
            ]
        })
        .collect();
    page.table(
        &[
            "point",
            "flow",
            "cc",
            "sim Mbit/s",
            "kernel Mbit/s",
            "diff %",
            "within",
            "sim RTT p50 ms",
            "kernel RTT p50 ms",
            "diff %",
            "within",
            "sim loss %",
            "kernel loss %",
        ],
        &cells,
    );
}

/// The window and smoothed RTT of `flow` in both runs of the point in `dir`.
fn point_flow(page: &mut Page, dir: &Path, label: &str, flow: &str) -> Result<(), String> {
    let read = |side: &str| -> Result<Option<table::Columns>, String> {
        let path = dir
            .join(side)
            .join("flows")
            .join(format!("{}.csv", file_name(flow)));
        if path.exists() {
            table::read(&path).map(Some)
        } else {
            Ok(None)
        }
    };
    let (Some(sim), Some(kernel)) = (read("simulated")?, read("kernel")?) else {
        return Ok(());
    };
    page.heading(2, &format!("{label}: flow {flow}"));
    for (column, what, unit, scale) in [
        ("cwnd_bytes", "window", "KB", 1e-3),
        ("srtt_ms", "smoothed RTT", "ms", 1.0),
    ] {
        let series: Vec<Series> = [("simulated", &sim), ("kernel", &kernel)]
            .iter()
            .filter_map(|(name, c)| {
                let ys: Vec<f64> = c.get(column)?.iter().map(|v| v * scale).collect();
                Some(Series::new(name, c.time(), &ys))
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let title = format!("{label}, {flow}: {what}");
        let svg = plot::lines(&title, "time (s)", unit, &series, &[], &[])?;
        let caption = format!(
            "{what} ({unit}) of {flow}, simulated and Linux; column {column} of \
             points/*/{{simulated,kernel}}/flows/{}.csv",
            file_name(flow)
        );
        page.figure(&id(&["crosscheck", label, flow, what]), &caption, &svg);
    }
    Ok(())
}
