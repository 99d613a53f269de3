//! `report.html`: one self-contained page per output directory (a run, a sweep, a
//! reproduction, a real transfer, a kernel cross-check), built only from the files in that directory, so that
//! rebuilding it later (`kleinrock report DIR`) gives the same bytes. Plots are inline SVG
//! drawn with plotters ([`plot`]); the page has no script and references nothing outside it.

mod crosscheck;
mod page;
pub mod plot;
mod reproduce;
mod run;
mod sweep;
pub mod table;

pub use reproduce::unit as drawn_unit;

use serde_json::Value;
use std::path::Path;

/// The report's file name in an output directory.
pub const REPORT: &str = "report.html";

/// What an output directory holds.
enum Kind {
    Run(Value),
    Transfer(Value),
    Sweep(Value),
    Reproduction(Value),
    Crosscheck(Value),
}

/// Builds the report of output directory `dir` and writes it as `dir/report.html`.
pub fn write_report(dir: &Path) -> Result<(), String> {
    let html = build(dir)?;
    std::fs::write(dir.join(REPORT), html)
        .map_err(|e| format!("cannot write {}: {e}", dir.join(REPORT).display()))
}

/// Rebuilds the report of an existing output directory: the page is built in full before
/// anything is written, and replaces the old one in one rename.
pub fn rebuild(dir: &Path) -> Result<(), String> {
    let html = build(dir)?;
    let tmp = dir.join(format!(".{REPORT}.partial"));
    std::fs::write(&tmp, html)
        .and_then(|()| std::fs::rename(&tmp, dir.join(REPORT)))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write {}: {e}", dir.join(REPORT).display())
        })
}

/// The report of output directory `dir` as HTML.
pub fn build(dir: &Path) -> Result<String, String> {
    let page = match kind(dir)? {
        Kind::Run(summary) => run::page(dir, &summary)?,
        Kind::Transfer(summary) => run::transfer_page(dir, &summary)?,
        Kind::Sweep(summaries) => sweep::page(dir, &summaries)?,
        Kind::Reproduction(manifest) => reproduce::page(dir, &manifest)?,
        Kind::Crosscheck(comparison) => crosscheck::page(dir, &comparison)?,
    };
    Ok(page.finish())
}

fn kind(dir: &Path) -> Result<Kind, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let candidates = [
        ("crosscheck.json", Kind::Crosscheck as fn(Value) -> Kind),
        ("reproduce.json", Kind::Reproduction),
        ("sweep.json", Kind::Sweep),
        ("summary.json", Kind::Run),
    ];
    for (file, make) in candidates {
        let path = dir.join(file);
        if !path.exists() {
            continue;
        }
        let value = read_json(&path)?;
        // `kleinrock transfer` and `tunnel` write the real run's summary beside the simulated
        // one.
        if file == "summary.json" && value.get("real").is_some() {
            return Ok(Kind::Transfer(value));
        }
        return Ok(make(value));
    }
    Err(format!(
        "{} is not a kleinrock output directory: it has no summary.json, sweep.json, \
         reproduce.json or crosscheck.json (the outputs of `run`, `sweep`/`demo`, `reproduce` \
         and `crosscheck` with --out)",
        dir.display()
    ))
}

/// The JSON document at `path`; the error says where it is damaged.
fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{} is damaged: {e}", path.display()))
}
