//! The report of a paper's reproduction (`kleinrock reproduce --out`), from its
//! `reproduce.json` and the figures' data files: per figure, our table, each of the paper's
//! claims with our measurement and whether it holds, and our data drawn (time series against
//! time, other tables against their first column, one plot per unit).

use super::page::{id, Cell, Page};
use super::plot::{self, Series};
use super::table::{self, Columns};
use serde_json::Value;
use std::path::Path;

/// Column groups drawn from a figure's data: name suffix, axis label, scale.
const UNITS: [(&str, &str, f64); 4] = [
    ("_bps", "Mbit/s", 1e-6),
    ("_ms", "ms", 1.0),
    ("_bytes", "KB", 1e-3),
    ("_packets", "packets", 1.0),
];

/// The page of the reproduction in `dir`, described by `manifest`.
pub fn page(dir: &Path, manifest: &Value) -> Result<Page, String> {
    let figures = manifest["figures"]
        .as_array()
        .ok_or("reproduce.json has no `figures` list")?;
    let title = manifest["title"].as_str().unwrap_or("reproduction");
    let mut page = Page::new(title);
    let (held, total) = tally(figures);
    page.paragraph(&format!(
        "`kleinrock reproduce {}`: {held} of {total} claims hold.",
        manifest["paper"].as_str().unwrap_or("")
    ));
    if let Some(files) = manifest["scenarios"].as_array() {
        let names: Vec<&str> = files.iter().filter_map(Value::as_str).collect();
        page.paragraph(&format!("Scenario files: {}.", names.join(", ")));
    }
    for f in figures {
        figure_section(&mut page, dir, f)?;
    }
    Ok(page)
}

fn tally(figures: &[Value]) -> (usize, usize) {
    let claims: Vec<&Value> = figures
        .iter()
        .flat_map(|f| f["claims"].as_array().into_iter().flatten())
        .collect();
    let held = claims
        .iter()
        .filter(|c| c["holds"].as_bool() == Some(true))
        .count();
    (held, claims.len())
}

fn figure_section(page: &mut Page, dir: &Path, f: &Value) -> Result<(), String> {
    let fig = f["id"].as_str().unwrap_or("");
    page.heading(2, &format!("{fig}: {}", f["title"].as_str().unwrap_or("")));
    page.pre(f["table"].as_str().unwrap_or(""));
    let rows: Vec<Vec<Cell>> = f["claims"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let holds = c["holds"].as_bool() == Some(true);
            vec![
                Cell::text(c["paper"].as_str().unwrap_or("")),
                Cell::text(c["ours"].as_str().unwrap_or("")),
                Cell::text(if holds { "holds" } else { "does not hold" }),
            ]
        })
        .collect();
    page.table(&["the paper (and our criterion)", "ours", ""], &rows);
    for file in f["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let c = table::read(&dir.join("data").join(file))?;
        draw_data(page, fig, file, &c)?;
    }
    Ok(())
}

/// One plot per unit of the numeric columns of data file `file` against its first column.
fn draw_data(page: &mut Page, fig: &str, file: &str, c: &Columns) -> Result<(), String> {
    let Some((x_name, xs)) = c.names.first().zip(c.values.first()) else {
        return Ok(());
    };
    if xs.iter().all(|x| !x.is_finite()) {
        return Ok(());
    }
    for (suffix, unit, scale) in UNITS {
        let series: Vec<Series> = c
            .names
            .iter()
            .zip(&c.values)
            .skip(1)
            .filter(|(n, v)| {
                n.ends_with(suffix)
                    && !super::run::NOT_STATE.contains(&n.as_str())
                    && v.iter().any(|y| y.is_finite())
            })
            .map(|(n, v)| {
                let ys: Vec<f64> = v.iter().map(|y| y * scale).collect();
                Series::new(n, xs, &ys)
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let title = format!("{fig}: {file} ({unit})");
        let svg = plot::lines(&title, x_name, unit, &series, &[])?;
        let caption = format!("{fig}: the {unit} columns of data/{file} against {x_name}");
        page.figure(&id(&[fig, file, unit]), &caption, &svg);
    }
    Ok(())
}
