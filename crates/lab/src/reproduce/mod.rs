//! Paper reproductions. Each paper's experiments are scenario files (embedded in the binary,
//! the same files as under `scenarios/<paper>/`), run, reduced to the paper's figures, and
//! reported beside what the paper states: a table of our numbers per figure, each claim of the
//! paper with our measurement and whether it holds, and the data behind the figure as CSV.

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
    /// the claims and the names of the data files.
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
                serde_json::json!({
                    "id": f.id, "title": f.title, "table": f.table,
                    "claims": claims, "data": data
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

/// `v` with `digits` decimals.
fn fmt(v: f64, digits: usize) -> String {
    format!("{v:.digits$}")
}
