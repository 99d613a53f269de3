//! Running scenarios: one run, a sweep in parallel on all cores, and writing results to an
//! output directory atomically (a temporary directory renamed into place when complete).

use crate::aggregate::sweep_report;
use crate::metrics::{summarize, Summary};
use crate::scenario::{Scenario, ScenarioSet};
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::{SimResult, Simulator};
use rayon::prelude::*;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A finished run.
pub struct RunOutput {
    /// Its metrics.
    pub summary: Summary,
    /// The simulator's raw result (histograms, traces).
    pub result: SimResult,
}

/// Runs one scenario.
pub fn run(scenario: &Scenario) -> RunOutput {
    let result = Simulator::new(scenario.sim_config()).run();
    RunOutput {
        summary: summarize(scenario, &result),
        result,
    }
}

/// Runs every point in parallel, calling `progress` as each finishes; results keep the
/// points' order.
pub fn run_all(points: &[Scenario], progress: impl Fn() + Sync) -> Vec<RunOutput> {
    points
        .par_iter()
        .map(|p| {
            let out = run(p);
            progress();
            out
        })
        .collect()
}

/// A file name made of the safe characters of `name`.
pub fn file_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Creates `path` (and its parent directories) and fills it with `write`.
pub fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> io::Result<()>,
) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    let mut w = BufWriter::new(fs::File::create(path)?);
    write(&mut w)?;
    w.flush()
}

/// Writes one run's files under `dir`: `summary.json`, traces as `flows/<name>.csv`,
/// `links/<name>.csv` and `tunnels/<tunnel>.csv` with `tunnels/<tunnel>.<path>.csv`, each
/// flow's RTT CDF as `rtt_cdf/<name>.csv` and its per-packet latency CDF as
/// `latency_cdf/<name>.csv`, and a tunnel's latency CDFs (end to end, and per path) as
/// `latency_cdf/<tunnel>.csv` and `latency_cdf/<tunnel>.<path>.csv`.
pub fn write_run(dir: &Path, out: &RunOutput) -> io::Result<()> {
    write_file(&dir.join("summary.json"), |w| {
        serde_json::to_writer_pretty(&mut *w, &out.summary)?;
        writeln!(w)
    })?;
    if let Some(trace) = &out.result.trace {
        for s in &trace.flows {
            let path = dir
                .join("flows")
                .join(format!("{}.csv", file_name(&s.name)));
            write_file(&path, |w| s.write_csv(w))?;
        }
        for s in &trace.links {
            let path = dir
                .join("links")
                .join(format!("{}.csv", file_name(&s.name)));
            write_file(&path, |w| s.write_csv(w))?;
        }
        for s in trace.tunnels.iter().flatten() {
            let path = dir
                .join("tunnels")
                .join(format!("{}.csv", file_name(&s.name)));
            write_file(&path, |w| s.write_csv(w))?;
        }
    }
    write_cdfs(dir, out)?;
    crate::html::write_report(dir).map_err(io::Error::other)
}

/// The latency and RTT CDFs of the flows, and a tunnel's latency CDFs: end to end, and per
/// path.
fn write_cdfs(dir: &Path, out: &RunOutput) -> io::Result<()> {
    for t in &out.result.tunnels {
        let cdfs = dir.join("latency_cdf");
        write_cdf(&cdfs, &t.name, "latency_ms", &t.latency[0])?;
        for [p, _] in &t.paths {
            let name = format!("{}.{}", t.name, p.name);
            write_cdf(&cdfs, &name, "latency_ms", &p.latency)?;
        }
    }
    for f in &out.result.flows {
        write_cdf(&dir.join("rtt_cdf"), &f.name, "rtt_ms", &f.rtt)?;
        write_cdf(&dir.join("latency_cdf"), &f.name, "latency_ms", &f.latency)?;
    }
    Ok(())
}

/// Writes histogram `h` (ns) as `dir/<name>.csv` with columns `column,fraction`, in ms;
/// nothing for an empty one.
fn write_cdf(dir: &Path, name: &str, column: &str, h: &Histogram) -> io::Result<()> {
    if h.count() == 0 {
        return Ok(());
    }
    let path = dir.join(format!("{}.csv", file_name(name)));
    write_file(&path, |w| write_cdf_csv(w, column, h))
}

/// Writes histogram `h` (ns) as CSV with columns `column,fraction`, in ms.
pub fn write_cdf_csv(mut w: impl Write, column: &str, h: &Histogram) -> io::Result<()> {
    writeln!(w, "{column},fraction")?;
    for (v, p) in h.cdf() {
        writeln!(w, "{},{p}", v * 1e-6)?;
    }
    Ok(())
}

/// Marker files of a kleinrock output directory: only such a directory is ever replaced.
const MARKERS: [&str; 3] = ["summary.json", "sweep.json", "report.txt"];

/// Checks, before anything runs, that results can go to `dir`: it is not a file, not the
/// working directory or one of its parents, and if it exists and is not empty it is an earlier
/// kleinrock output (it holds `summary.json`, `sweep.json` or `report.txt`). Returns its
/// absolute path.
pub fn check_output_dir(dir: &Path) -> Result<PathBuf, String> {
    let abs = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let shown = dir.display();
    if abs.is_file() {
        return Err(format!("--out {shown} is a file; give a directory"));
    }
    if abs.is_dir() {
        let canonical = abs.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
        let cwd = std::env::current_dir().and_then(|d| d.canonicalize());
        if cwd.is_ok_and(|cwd| cwd.starts_with(&canonical)) {
            return Err(format!(
                "--out {shown} is the working directory or contains it; give a new directory"
            ));
        }
        let empty = fs::read_dir(&canonical)
            .map_err(|e| format!("{shown}: {e}"))?
            .next()
            .is_none();
        if !empty && !MARKERS.iter().any(|m| canonical.join(m).is_file()) {
            return Err(format!(
                "--out {shown} exists and is not a kleinrock output directory; \
                 give a new or empty directory"
            ));
        }
        return Ok(canonical);
    }
    Ok(abs)
}

/// Writes the results of `set` to `dir` (checked by [`check_output_dir`]): one run directly
/// in it; a sweep as `sweep.json` (see [`sweep_report`]) plus one `point-<i>` directory per
/// run.
pub fn write_outputs(dir: &Path, set: &ScenarioSet, outputs: &[RunOutput]) -> io::Result<()> {
    write_atomically(dir, |tmp| write_tree(tmp, set, outputs))
}

/// Runs `write` on a temporary sibling of `dir` and moves the result into place when it
/// succeeds, so `dir` is never left half-written; an earlier kleinrock output in `dir` is
/// replaced, and anything else refused (see [`check_output_dir`]).
pub fn write_atomically(dir: &Path, write: impl FnOnce(&Path) -> io::Result<()>) -> io::Result<()> {
    let dir = check_output_dir(dir).map_err(io::Error::other)?;
    let tmp = sibling(&dir, "partial");
    fs::create_dir_all(&tmp)?;
    let result = write(&tmp).and_then(|()| replace(&dir, &tmp));
    if result.is_err() {
        let _ = fs::remove_dir_all(&tmp);
    }
    result
}

fn write_tree(tmp: &Path, set: &ScenarioSet, outputs: &[RunOutput]) -> io::Result<()> {
    if set.is_sweep {
        let summaries: Vec<&Summary> = outputs.iter().map(|o| &o.summary).collect();
        let report = sweep_report(summaries, set.seeds.as_deref());
        write_file(&tmp.join("sweep.json"), |w| {
            serde_json::to_writer_pretty(&mut *w, &report)?;
            writeln!(w)
        })?;
        for (i, o) in outputs.iter().enumerate() {
            write_run(&tmp.join(format!("point-{i}")), o)?;
        }
    } else if let Some(o) = outputs.first() {
        write_run(tmp, o)?;
    }
    crate::html::write_report(tmp).map_err(io::Error::other)
}

/// Moves `tmp` to `dir`; an existing `dir` is moved aside first and removed only afterwards.
fn replace(dir: &Path, tmp: &Path) -> io::Result<()> {
    if !dir.exists() {
        return fs::rename(tmp, dir);
    }
    let old = sibling(dir, "old");
    fs::rename(dir, &old)?;
    if let Err(e) = fs::rename(tmp, dir) {
        let _ = fs::rename(&old, dir);
        return Err(e);
    }
    fs::remove_dir_all(&old)
}

/// A hidden sibling of the absolute path `dir`: `.<name>.<what>-<pid>`.
fn sibling(dir: &Path, what: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map_or("out".into(), |n| n.to_string_lossy().into_owned());
    dir.with_file_name(format!(".{name}.{what}-{}", std::process::id()))
}
