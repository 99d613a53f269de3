//! The report of a paper's reproduction (`kleinrock reproduce --out`), from its
//! `reproduce.json` and the figures' data files: per figure, our table, each of the paper's
//! claims with our measurement and whether it holds, the paper's published values beside ours,
//! and our data drawn with the paper's values over it: a file whose first column increases
//! (time, a swept value) against it, a file whose first column names distinct rows (a
//! controller, a class) as categories, one plot per unit.

use super::page::{id, Cell, Page};
use super::plot::{self, short, Mark, Series};
use super::table::{self, Columns};
use crate::reproduce::{At, PaperValue};
use serde_json::Value;
use std::path::Path;

/// Column groups drawn from a figure's data: name suffix, axis label, scale.
const UNITS: [(&str, &str, f64); 7] = [
    ("_bps", "Mbit/s", 1e-6),
    ("_mbps", "Mbit/s", 1.0),
    ("_ms", "ms", 1.0),
    ("_bytes", "KB", 1e-3),
    ("_packets", "packets", 1.0),
    ("_pct", "%", 1.0),
    ("_jfi", "Jain's index", 1.0),
];

/// The unit a data column is drawn in: its suffix, axis label and scale; `None` for columns
/// the report does not draw.
pub fn unit(column: &str) -> Option<(&'static str, &'static str, f64)> {
    UNITS
        .into_iter()
        .find(|(suffix, _, _)| column.ends_with(suffix))
        .filter(|_| !super::run::NOT_STATE.contains(&column))
}

/// How a data file's rows are placed along x.
enum Axis {
    /// Against the first column, which increases.
    Values(Vec<f64>),
    /// One category per row, named by the first column.
    Categories(Vec<String>),
}

/// The axis of data `c`, or `None` if its first column neither increases nor names distinct
/// rows.
fn axis(c: &Columns) -> Option<Axis> {
    let xs = c.values.first()?;
    if !xs.is_empty() && xs.iter().all(|x| x.is_finite()) {
        let increasing = xs.windows(2).all(|w| w[0] < w[1]);
        return increasing.then(|| Axis::Values(xs.clone()));
    }
    let names = &c.first;
    let distinct = (1..names.len()).all(|i| !names[..i].contains(&names[i]));
    (!names.is_empty() && distinct).then(|| Axis::Categories(names.clone()))
}

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
    let mut files = Vec::new();
    for file in f["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if file.contains(['/', '\\']) || file.starts_with('.') {
            return Err(format!(
                "reproduce.json names the data file `{file}` outside data/"
            ));
        }
        files.push((file, table::read(&dir.join("data").join(file))?));
    }
    let paper: Vec<PaperValue> = f["paper"]
        .as_array()
        .into_iter()
        .flatten()
        .map(PaperValue::from_json)
        .collect::<Result<_, _>>()?;
    paper_table(page, &paper, &files);
    for (file, c) in &files {
        draw_data(page, fig, file, c, &paper)?;
    }
    Ok(())
}

/// The paper's values beside ours, where the data file has them.
fn paper_table(page: &mut Page, paper: &[PaperValue], files: &[(&str, Columns)]) {
    if paper.is_empty() {
        return;
    }
    let rows: Vec<Vec<Cell>> = paper
        .iter()
        .map(|p| {
            let c = files.iter().find(|(f, _)| *f == p.data).map(|(_, c)| c);
            let scale = unit(&p.column).map_or(1.0, |u| u.2);
            let ours = c.and_then(|c| ours(p, c));
            vec![
                Cell::text(&p.label),
                Cell::text(format!("data/{}: {}", p.data, p.column)),
                Cell::text(at_text(&p.at, c)),
                Cell {
                    text: range_text(p.y, scale),
                    value: Some((format!("paper:{}:{}", p.data, p.column), p.y.0)),
                },
                Cell::text(ours.map_or("-".into(), |v| range_text(v, scale))),
            ]
        })
        .collect();
    page.paragraph("The paper's published values (hollow diamonds on the plots below) and ours:");
    page.table(&["the paper", "drawn on", "at", "paper", "ours"], &rows);
}

/// Where a value sits, with the name of the data's first column.
fn at_text(at: &At, c: Option<&Columns>) -> String {
    let x_name = c.and_then(|c| c.names.first()).map_or("x", |n| n.as_str());
    match at {
        At::Row(row) => row.clone(),
        At::X(from, to) => format!("{x_name} {}", range_text((*from, *to), 1.0)),
    }
}

/// `(low, high)` times `scale` as one number when equal, else as a range.
fn range_text((low, high): (f64, f64), scale: f64) -> String {
    if low == high {
        short(low * scale)
    } else {
        format!("{} to {}", short(low * scale), short(high * scale))
    }
}

/// Our value where the paper's sits: at its row or x, the mean over its span of x, or our
/// lowest and highest over it where the paper states a range.
fn ours(p: &PaperValue, c: &Columns) -> Option<(f64, f64)> {
    let ys = c.get(&p.column)?;
    let rows: Vec<usize> = match &p.at {
        At::Row(row) => c.first.iter().position(|f| f == row).into_iter().collect(),
        At::X(from, to) => {
            let xs = c.values.first()?;
            let tolerance = 1e-9 * from.abs().max(to.abs()).max(1.0);
            let within = |x: f64| x >= from - tolerance && x <= to + tolerance;
            (0..xs.len()).filter(|&i| within(xs[i])).collect()
        }
    };
    let v: Vec<f64> = rows
        .iter()
        .map(|&i| ys[i])
        .filter(|y| y.is_finite())
        .collect();
    if v.is_empty() {
        return None;
    }
    if p.y.0 != p.y.1 {
        let low = v.iter().cloned().fold(f64::INFINITY, f64::min);
        let high = v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        return Some((low, high));
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    Some((mean, mean))
}

/// One data file being drawn.
struct Data<'a> {
    fig: &'a str,
    file: &'a str,
    x_name: &'a str,
    axis: Axis,
    /// Each row's x: its first column's value, or its category's index.
    xs: Vec<f64>,
}

/// One plot per unit of the numeric columns of data file `file` (against its first column, or
/// per row), with the paper's values for those columns over them; where some of a unit's
/// columns have paper values and others not, those with them are drawn first on their own, so
/// that the others' scale does not hide them.
fn draw_data(
    page: &mut Page,
    fig: &str,
    file: &str,
    c: &Columns,
    paper: &[PaperValue],
) -> Result<(), String> {
    let Some(axis) = axis(c) else {
        return Ok(());
    };
    let xs: Vec<f64> = match &axis {
        Axis::Values(xs) => xs.clone(),
        Axis::Categories(names) => (0..names.len()).map(|i| i as f64).collect(),
    };
    let data = Data {
        fig,
        file,
        x_name: &c.names[0],
        axis,
        xs,
    };
    let paper: Vec<&PaperValue> = paper.iter().filter(|p| p.data == file).collect();
    for (suffix, unit_label, scale) in UNITS {
        let columns: Vec<(&str, &[f64])> = c
            .names
            .iter()
            .zip(&c.values)
            .skip(1)
            .filter(|(n, v)| {
                unit(n).is_some_and(|u| u.0 == suffix) && v.iter().any(|y| y.is_finite())
            })
            .map(|(n, v)| (n.as_str(), v.as_slice()))
            .collect();
        if columns.is_empty() {
            continue;
        }
        let marked: Vec<(&str, &[f64])> = columns
            .iter()
            .copied()
            .filter(|(n, _)| paper.iter().any(|p| p.column == *n))
            .collect();
        let unit = (unit_label, scale);
        if marked.is_empty() || marked.len() == columns.len() {
            plot_columns(page, &data, unit, &columns, &paper)?;
        } else {
            plot_columns(page, &data, unit, &marked, &paper)?;
            plot_columns(page, &data, unit, &columns, &[])?;
        }
    }
    Ok(())
}

/// One plot of `columns` of `data` in `unit` (axis label, scale), with the paper's values for
/// them over them.
fn plot_columns(
    page: &mut Page,
    data: &Data,
    (unit_label, scale): (&str, f64),
    columns: &[(&str, &[f64])],
    paper: &[&PaperValue],
) -> Result<(), String> {
    let series: Vec<Series> = columns
        .iter()
        .map(|(n, v)| {
            let ys: Vec<f64> = v.iter().map(|y| y * scale).collect();
            Series::new(n, &data.xs, &ys)
        })
        .collect();
    let names: Vec<&str> = columns.iter().map(|(n, _)| *n).collect();
    let marks: Vec<Mark> = paper
        .iter()
        .filter_map(|p| mark(p, &names, &data.axis, scale))
        .collect();
    let (fig, file, x_name) = (data.fig, data.file, data.x_name);
    let mut parts = vec![fig, file, unit_label];
    let (part, with) = if marks.is_empty() {
        ("", "")
    } else {
        parts.push("paper");
        (
            ", the paper's values",
            ", the paper's values as hollow diamonds",
        )
    };
    let title = format!("{fig}: {file} ({unit_label}{part})");
    let svg = match &data.axis {
        Axis::Values(_) => plot::lines(&title, x_name, unit_label, &series, &[], &marks)?,
        Axis::Categories(rows) => plot::dots(&title, (x_name, unit_label), rows, &series, &marks)?,
    };
    let caption = format!("{fig}: the {unit_label} columns of data/{file} against {x_name}{with}");
    let id = id(&parts);
    page.paper_figure(&id, &caption, &svg, marks.len());
    Ok(())
}

/// Paper value `p` as a mark over the series `names` (scaled by `scale`), if it belongs to
/// one of them and sits on `axis`.
fn mark(p: &PaperValue, names: &[&str], axis: &Axis, scale: f64) -> Option<Mark> {
    let series = names.iter().position(|n| *n == p.column)?;
    let x = match (&p.at, axis) {
        (At::X(from, to), Axis::Values(_)) => (*from, *to),
        (At::Row(row), Axis::Categories(rows)) => {
            let k = rows.iter().position(|r| r == row)? as f64;
            (k, k)
        }
        _ => return None,
    };
    Some(Mark {
        series,
        x,
        y: (p.y.0 * scale, p.y.1 * scale),
    })
}
