//! Paper reproductions. Each paper's experiments are scenario files (embedded in the binary,
//! the same files as under `scenarios/<paper>/`), run, reduced to the paper's figures, and
//! reported beside what the paper states: a table of our numbers per figure, each claim of the
//! paper with our measurement and whether it holds, the data behind the figure as CSV, and the
//! numbers the paper publishes placed on the axes of that data ([`PaperValue`]), so that the
//! report draws them over ours.

pub mod bbr;
pub mod ccid5;
pub mod fq_detect;
pub mod quic_dc;
pub mod siad;
mod traces;

use crate::metrics::Summary;
use crate::runner::{run_all, write_atomically, write_file, RunOutput};
use crate::scenario::{parse, ScenarioSet};
use std::io::{self, Write};
use std::path::Path;

/// One statement of a paper (or of our acceptance criterion derived from it) and what we
/// measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Claim {
    /// A short stable name, for tests and scripts.
    pub key: &'static str,
    /// What the paper states, with the criterion we check it by.
    pub paper: String,
    /// What we measured.
    pub ours: String,
    /// Whether our measurement meets the criterion.
    pub holds: bool,
}

impl Claim {
    /// A claim under the stable name `key`.
    pub fn new(key: &'static str, paper: &str, ours: String, holds: bool) -> Self {
        Claim {
            key,
            paper: paper.to_string(),
            ours,
            holds,
        }
    }
}

/// Where a [`PaperValue`] sits along its data file's first column.
#[derive(Clone, Debug, PartialEq)]
pub enum At {
    /// At x (`from == to`) or over the span of x the paper states the value for, in the
    /// first column's unit.
    X(f64, f64),
    /// At the row whose first column reads this (a controller, a class): files whose first
    /// column is text are drawn as categories.
    Row(String),
}

/// A number the paper publishes (a table cell, a value stated in the text), placed on the
/// axes of one of the figure's data files so that the report draws it over our data and
/// lists it beside ours.
#[derive(Clone, Debug, PartialEq)]
pub struct PaperValue {
    /// The data file (one of the figure's `data` names).
    pub data: String,
    /// The column of that file the number compares with; its unit suffix picks the plot.
    pub column: String,
    /// Where along the file's first column.
    pub at: At,
    /// The value in the column's own unit (bit/s for `_bps`), as `(v, v)`, or the range
    /// `(low, high)` the paper states.
    pub y: (f64, f64),
    /// Where in the paper, and what it says if it is not a table cell.
    pub label: String,
}

impl PaperValue {
    /// A value `y` of `column` in `data` at `at`, from the paper's `label`.
    pub fn new(data: &str, column: &str, at: At, y: f64, label: &str) -> Self {
        PaperValue {
            data: data.to_string(),
            column: column.to_string(),
            at,
            y: (y, y),
            label: label.to_string(),
        }
    }

    /// The same, for a range of values `(low, high)`.
    pub fn range(data: &str, column: &str, at: At, y: (f64, f64), label: &str) -> Self {
        PaperValue {
            y,
            ..PaperValue::new(data, column, at, y.0, label)
        }
    }

    /// The value as `reproduce.json` holds it: `x: [from, to]` or `row`, and `y: [low, high]`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "data": self.data, "column": self.column,
            "y": [self.y.0, self.y.1], "label": self.label
        });
        match &self.at {
            At::X(from, to) => v["x"] = serde_json::json!([from, to]),
            At::Row(row) => v["row"] = serde_json::json!(row),
        }
        v
    }

    /// Reads a value written by [`PaperValue::to_json`].
    pub fn from_json(v: &serde_json::Value) -> Result<Self, String> {
        let text = |key: &str| {
            v[key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("a paper value without `{key}`: {v}"))
        };
        let pair = |key: &str| match v[key].as_array().map(|a| a.as_slice()) {
            Some([a, b]) => a.as_f64().zip(b.as_f64()),
            _ => None,
        };
        let at = match (pair("x"), v["row"].as_str()) {
            (Some((from, to)), _) => At::X(from, to),
            (None, Some(row)) => At::Row(row.to_string()),
            (None, None) => return Err(format!("a paper value without `x` or `row`: {v}")),
        };
        let y = pair("y").ok_or_else(|| format!("a paper value without `y`: {v}"))?;
        Ok(PaperValue {
            data: text("data")?,
            column: text("column")?,
            at,
            y,
            label: text("label")?,
        })
    }
}

/// One figure (or in-text experiment) of a paper.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figure {
    /// The paper's label, e.g. "Fig. 10".
    pub id: String,
    /// What it shows.
    pub title: String,
    /// Our numbers as a rendered table.
    pub table: String,
    /// The paper's claims and our measurements.
    pub claims: Vec<Claim>,
    /// The data behind the figure: `(file name, CSV text)`.
    pub data: Vec<(String, String)>,
    /// The paper's published numbers, on the axes of `data`.
    pub paper: Vec<PaperValue>,
}

impl Figure {
    /// Checks that the claims named `keys` hold; the error shows the figure and every claim
    /// that does not hold or does not exist.
    pub fn check(&self, keys: &[&str]) -> Result<(), String> {
        let problems: Vec<String> = keys
            .iter()
            .filter_map(|key| match self.claims.iter().find(|c| c.key == *key) {
                None => Some(format!("no claim `{key}`")),
                Some(c) if !c.holds => Some(format!("paper: {}\nours: {}", c.paper, c.ours)),
                Some(_) => None,
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{} ({}):\n{}\n{}",
                self.id,
                self.title,
                self.table,
                problems.join("\n")
            ))
        }
    }

    /// Checks that every paper value names one of the figure's data files, a column of it that
    /// the report draws, and a row the file has (for a value at a row).
    pub fn check_paper(&self) -> Result<(), String> {
        for p in &self.paper {
            let problem = |what: String| format!("{}: paper value `{}`: {what}", self.id, p.label);
            let csv = self
                .data
                .iter()
                .find(|(name, _)| *name == p.data)
                .map(|(_, csv)| csv)
                .ok_or_else(|| problem(format!("no data file `{}`", p.data)))?;
            let c = crate::html::table::parse(csv).map_err(&problem)?;
            if !c.names.contains(&p.column) || crate::html::drawn_unit(&p.column).is_none() {
                return Err(problem(format!(
                    "{} has no drawn column `{}`",
                    p.data, p.column
                )));
            }
            if let At::Row(row) = &p.at {
                if !c.first.contains(row) {
                    return Err(problem(format!("{} has no row `{row}`", p.data)));
                }
            }
        }
        Ok(())
    }
}

/// A paper's reproduction.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// Short name (`bbr`).
    pub paper: String,
    /// The paper's title.
    pub title: String,
    /// Figures, in the paper's order.
    pub figures: Vec<Figure>,
}

impl Report {
    /// The report as text: per figure, our table and the claims.
    pub fn render(&self) -> String {
        let mut out = format!("{}\n{}\n", self.title, "=".repeat(self.title.len()));
        for f in &self.figures {
            out.push_str(&format!("\n{}: {}\n\n{}", f.id, f.title, f.table));
            for c in &f.claims {
                let mark = if c.holds { "holds" } else { "DOES NOT HOLD" };
                out.push_str(&format!(
                    "  paper: {}\n  ours:  {} [{mark}]\n",
                    c.paper, c.ours
                ));
            }
        }
        let (held, total) = self.tally();
        out.push_str(&format!("\n{held} of {total} claims hold.\n"));
        out
    }

    /// Claims that hold, and all claims.
    pub fn tally(&self) -> (usize, usize) {
        let claims = self.figures.iter().flat_map(|f| &f.claims);
        let total = claims.clone().count();
        (claims.filter(|c| c.holds).count(), total)
    }

    /// Writes `report.txt`, each figure's data as `data/<file>.csv`, the report's contents as
    /// `reproduce.json` and the page built from them as `report.html` to `dir`, atomically.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        write_atomically(dir, |tmp| {
            write_file(&tmp.join("report.txt"), |w| {
                w.write_all(self.render().as_bytes())
            })?;
            for f in &self.figures {
                for (name, csv) in &f.data {
                    write_file(&tmp.join("data").join(name), |w| {
                        w.write_all(csv.as_bytes())
                    })?;
                }
            }
            write_file(&tmp.join("reproduce.json"), |w| {
                serde_json::to_writer_pretty(&mut *w, &self.manifest())?;
                writeln!(w)
            })?;
            crate::html::write_report(tmp).map_err(io::Error::other)
        })
    }

    /// What `reproduce.json` holds: the paper, its scenario files, and per figure our table,
    /// the claims, the names of the data files and the paper's values.
    pub fn manifest(&self) -> serde_json::Value {
        let scenarios = find(&self.paper).map_or(&[][..], |p| p.scenarios);
        let figures: Vec<serde_json::Value> = self
            .figures
            .iter()
            .map(|f| {
                let claims: Vec<serde_json::Value> = f
                    .claims
                    .iter()
                    .map(|c| {
                        serde_json::json!({
                            "key": c.key, "paper": c.paper, "ours": c.ours, "holds": c.holds
                        })
                    })
                    .collect();
                let data: Vec<&str> = f.data.iter().map(|(n, _)| n.as_str()).collect();
                let paper: Vec<serde_json::Value> =
                    f.paper.iter().map(PaperValue::to_json).collect();
                serde_json::json!({
                    "id": f.id, "title": f.title, "table": f.table,
                    "claims": claims, "data": data, "paper": paper
                })
            })
            .collect();
        serde_json::json!({
            "paper": self.paper,
            "title": self.title,
            "scenarios": scenarios,
            "figures": figures,
        })
    }
}

/// Told which experiment is running.
pub type Progress<'a> = &'a (dyn Fn(&str) + Sync);

/// A reproducible paper.
pub struct PaperInfo {
    /// Short name used on the command line.
    pub name: &'static str,
    /// The paper's title.
    pub title: &'static str,
    /// Its scenario files, as the repository holds them (the binary embeds them).
    pub scenarios: &'static [&'static str],
    /// Runs every experiment; `progress` is told which one is running.
    pub run: fn(Progress) -> Result<Report, String>,
}

/// Every reproducible paper.
pub fn papers() -> &'static [PaperInfo] {
    const ALL: &[PaperInfo] = &[
        bbr::INFO,
        quic_dc::INFO,
        siad::INFO,
        fq_detect::INFO,
        ccid5::INFO,
    ];
    ALL
}

/// The paper called `name`.
pub fn find(name: &str) -> Option<&'static PaperInfo> {
    papers().iter().find(|p| p.name == name)
}

/// Parses an embedded scenario file and runs every point of it.
fn run_embedded(
    origin: &str,
    text: &str,
    progress: Progress,
) -> Result<(ScenarioSet, Vec<RunOutput>), String> {
    let stem = Path::new(origin)
        .file_stem()
        .map_or(origin.to_string(), |s| s.to_string_lossy().into_owned());
    let set = parse(text, origin, &stem, &[]).map_err(|e| e.to_string())?;
    progress(&format!("{origin} ({} runs)", set.points.len()));
    let outputs = run_all(&set.points, || {});
    Ok((set, outputs))
}

/// The value of sweep key `key` at a run's point.
fn point_value(s: &Summary, key: &str) -> Result<String, String> {
    s.point
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
        .ok_or_else(|| format!("point without `{key}`"))
}

/// A CSV of one row per x, with a column of values per name in `columns`; a value that is not
/// finite is an empty cell.
fn wide_csv(x_name: &str, columns: &[String], rows: &[(f64, Vec<f64>)]) -> String {
    let mut csv = format!("{x_name},{}\n", columns.join(","));
    for (x, values) in rows {
        let cells: Vec<String> = values
            .iter()
            .map(|v| {
                if v.is_finite() {
                    v.to_string()
                } else {
                    String::new()
                }
            })
            .collect();
        csv.push_str(&format!("{x},{}\n", cells.join(",")));
    }
    csv
}

/// The column `<label>_<name>` of a wide CSV, the label (a controller, a flow) in lower case
/// with every run of other characters than letters and digits as one `_`: `siad_20_...`.
fn column_name(label: &str, name: &str) -> String {
    let mut out = String::new();
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    format!("{}_{name}", out.trim_end_matches('_'))
}

/// `column_name(label, name)` of each of `labels`.
fn columns(labels: &[String], name: &str) -> Vec<String> {
    labels.iter().map(|l| column_name(l, name)).collect()
}

/// `v` with `digits` decimals.
fn fmt(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}

/// For the tests of papers too slow to run in a test: the data files' headers and rows as the
/// figures write them, from the embedded scenarios alone, and the check of a figure's paper
/// values against them.
#[cfg(test)]
mod structure {
    use super::{Figure, PaperValue};
    use crate::scenario::{parse, ScenarioSet};

    fn set(text: &str) -> ScenarioSet {
        parse(text, "test.toml", "test", &[]).unwrap_or_else(|e| panic!("{e}"))
    }

    fn once(values: impl Iterator<Item = String>) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for v in values {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// The name of each point's first flow, each once, in order.
    pub fn first_flows(text: &str) -> Vec<String> {
        once(set(text).points.iter().map(|p| p.flows[0].name.clone()))
    }

    /// The names of the first point's flows.
    pub fn flows(text: &str) -> Vec<String> {
        set(text).points[0]
            .flows
            .iter()
            .map(|f| f.name.clone())
            .collect()
    }

    /// The values sweep key `key` takes, each once.
    pub fn swept(text: &str, key: &str) -> Vec<String> {
        let points = set(text).points;
        let values = points.into_iter().flat_map(|p| p.point.into_iter());
        once(values.filter(|(k, _)| k == key).map(|(_, v)| v))
    }

    /// CSV text: `header` and one row per name of `rows`, zeros in its other cells.
    pub fn rows_csv(header: &str, rows: &[String]) -> String {
        let cells = header.trim_end().split(',').count() - 1;
        let zeros = ",0".repeat(cells);
        let body: String = rows.iter().map(|r| format!("{r}{zeros}\n")).collect();
        format!("{header}{body}")
    }

    /// Panics unless every value of `paper` names a drawn column (and a row) of `data`.
    pub fn check(id: &str, data: Vec<(&str, String)>, paper: Vec<PaperValue>) {
        assert!(!paper.is_empty(), "{id}: no paper values");
        let figure = Figure {
            id: id.into(),
            data: data.into_iter().map(|(n, c)| (n.into(), c)).collect(),
            paper,
            ..Figure::default()
        };
        figure.check_paper().unwrap_or_else(|e| panic!("{e}"));
    }
}
