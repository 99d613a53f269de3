//! `kleinrock._native`: the Rust side of the Python package. It parses and validates scenario
//! text, runs scenarios and sweep points with the GIL released, and hands results to Python as
//! JSON and CSV text, the same bytes the command line writes, so the numbers are identical.
//! Errors in a scenario raise `kleinrock.ScenarioError` with the command line's message.

use kleinrock_lab::runner::{check_output_dir, write_atomically, write_cdf_csv, write_run};
use kleinrock_lab::runner::{run as run_scenario, RunOutput};
use kleinrock_lab::scenario::{
    parse, parse_point, point_specs, PointSpec, Scenario, ScenarioError,
};
use kleinrock_lab::sweep::SweepPoint;
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::trace::Series;
use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};
use std::panic::AssertUnwindSafe;
use std::path::Path;

/// The Python `kleinrock.ScenarioError` for a scenario that could not be loaded.
fn scenario_error(py: Python<'_>, e: ScenarioError) -> PyErr {
    let class = py
        .import("kleinrock._errors")
        .and_then(|m| m.getattr("ScenarioError"));
    match class.and_then(|c| c.call1((e.origin, e.field, e.message))) {
        Ok(instance) => PyErr::from_value(instance),
        Err(err) => err,
    }
}

/// Reads a scenario file, refusing one too large before reading it.
#[pyfunction]
fn read(py: Python<'_>, path: &str) -> PyResult<String> {
    kleinrock_lab::source::read(Path::new(path)).map_err(|message| {
        let origin = path.to_string();
        scenario_error(
            py,
            ScenarioError {
                origin,
                field: String::new(),
                message,
            },
        )
    })
}

/// Validates scenario text with `overrides` applied: its name, whether it has a `[sweep]`
/// table, how many runs it makes, and the seeds each grid point runs with.
#[pyfunction]
fn check(
    py: Python<'_>,
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: Vec<String>,
) -> PyResult<(String, bool, usize, Option<Vec<u64>>)> {
    let set = parse(text, origin, default_name, &overrides).map_err(|e| scenario_error(py, e))?;
    Ok((set.name, set.is_sweep, set.points.len(), set.seeds))
}

/// A dict of plain values (`str`, `bool`, `int`, `float`, `list`, `dict`, as the package's
/// `_plain` makes them) as a TOML document.
#[pyfunction]
fn toml_document(value: &Bound<'_, PyAny>) -> PyResult<String> {
    toml::to_string(&to_toml(value)?).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A plain value as a TOML value, as written after `=`.
#[pyfunction]
fn toml_literal(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(to_toml(value)?.to_string())
}

fn to_toml(value: &Bound<'_, PyAny>) -> PyResult<toml::Value> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(toml::Value::String(s.to_cow()?.into_owned()));
    }
    if let Ok(b) = value.cast::<PyBool>() {
        return Ok(toml::Value::Boolean(b.is_true()));
    }
    if value.is_instance_of::<PyInt>() {
        return Ok(toml::Value::Integer(value.extract()?));
    }
    if let Ok(f) = value.cast::<PyFloat>() {
        return Ok(toml::Value::Float(f.value()));
    }
    if let Ok(list) = value.cast::<PyList>() {
        let items: PyResult<Vec<_>> = list.iter().map(|v| to_toml(&v)).collect();
        return Ok(toml::Value::Array(items?));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut table = toml::Table::new();
        for (k, v) in dict.iter() {
            table.insert(k.extract::<String>()?, to_toml(&v)?);
        }
        return Ok(toml::Value::Table(table));
    }
    Err(PyValueError::new_err("not a plain value"))
}

/// One finished run: its summary, traces and distributions.
#[pyclass(frozen, module = "kleinrock._native")]
struct Run {
    out: RunOutput,
}

/// Runs scenario text that has no `[sweep]` table, with the GIL released.
#[pyfunction]
fn run(
    py: Python<'_>,
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: Vec<String>,
) -> PyResult<Run> {
    let mut set =
        parse(text, origin, default_name, &overrides).map_err(|e| scenario_error(py, e))?;
    if set.is_sweep {
        let message = format!(
            "has a [sweep] table of {} runs; run it with kleinrock.sweep(scenario)",
            set.points.len()
        );
        let e = ScenarioError {
            origin: origin.to_string(),
            field: "sweep".into(),
            message,
        };
        return Err(scenario_error(py, e));
    }
    let scenario = set.points.remove(0);
    let out = py.detach(|| simulate(&scenario))?;
    Ok(Run { out })
}

/// Runs `scenario`; a panic in the simulator (a bug) becomes a `RuntimeError` naming the
/// scenario and seed, never an abort or a `BaseException`.
fn simulate(scenario: &Scenario) -> PyResult<RunOutput> {
    scenario.check_simulated().map_err(PyValueError::new_err)?;
    std::panic::catch_unwind(AssertUnwindSafe(|| run_scenario(scenario))).map_err(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("a panic");
        PyRuntimeError::new_err(format!(
            "the simulator failed on scenario {:?} (seed {}, point {:?}): {what}; please report it",
            scenario.name, scenario.seed, scenario.point
        ))
    })
}

/// Every run of scenario text (each sweep point once per seed) as `(text, origin, point,
/// overrides)`: a scenario of its own that [`run_point`] runs anywhere.
type Spec = (String, String, SweepPoint, SweepPoint);

#[pyfunction]
fn points(
    py: Python<'_>,
    text: &str,
    origin: &str,
    default_name: &str,
    overrides: Vec<String>,
) -> PyResult<Vec<Spec>> {
    let specs =
        point_specs(text, origin, default_name, &overrides).map_err(|e| scenario_error(py, e))?;
    Ok(specs
        .into_iter()
        .map(|s| (s.text, s.origin, s.point, s.overrides))
        .collect())
}

/// Runs one point from [`points`] with the GIL released; its summary as JSON.
#[pyfunction]
fn run_point(
    py: Python<'_>,
    text: String,
    origin: String,
    point: SweepPoint,
    overrides: SweepPoint,
) -> PyResult<String> {
    let spec = PointSpec {
        text,
        origin,
        point,
        overrides,
    };
    let scenario = parse_point(&spec).map_err(|e| scenario_error(py, e))?;
    let out = py.detach(|| simulate(&scenario))?;
    serde_json::to_string(&out.summary).map_err(|e| PyValueError::new_err(e.to_string()))
}

#[pymethods]
impl Run {
    /// The summary as `kleinrock run --json` prints it (without the final newline).
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.out.summary)
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The names of the traced series of `kind` (`flow`, `link` or `tunnel`); empty without a
    /// `trace_interval`.
    fn trace_names(&self, kind: &str) -> Vec<String> {
        self.series(kind).iter().map(|s| s.name.clone()).collect()
    }

    /// The trace of `kind` named `name` as the CSV file `--out` writes; `None` if there is none.
    fn trace_csv<'py>(
        &self,
        py: Python<'py>,
        kind: &str,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let Some(series) = self.series(kind).into_iter().find(|s| s.name == name) else {
            return Ok(None);
        };
        let mut csv = Vec::new();
        series
            .write_csv(&mut csv)
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(Some(PyBytes::new(py, &csv)))
    }

    /// The names with a distribution of `kind` (`rtt` or `latency`).
    fn cdf_names(&self, kind: &str) -> Vec<String> {
        self.histograms(kind).into_iter().map(|(n, _)| n).collect()
    }

    /// The distribution of `kind` named `name` as the CSV file `--out` writes (ms and
    /// fraction); `None` if there is none.
    fn cdf_csv<'py>(
        &self,
        py: Python<'py>,
        kind: &str,
        name: &str,
    ) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let Some((_, h)) = self.histograms(kind).into_iter().find(|(n, _)| n == name) else {
            return Ok(None);
        };
        let mut csv = Vec::new();
        write_cdf_csv(&mut csv, &format!("{kind}_ms"), h)
            .map_err(|e| PyOSError::new_err(e.to_string()))?;
        Ok(Some(PyBytes::new(py, &csv)))
    }

    /// Writes the run's files to `dir` as `kleinrock run --out DIR` does.
    fn save(&self, py: Python<'_>, dir: &str) -> PyResult<()> {
        let dir = Path::new(dir);
        check_output_dir(dir).map_err(PyValueError::new_err)?;
        py.detach(|| write_atomically(dir, |tmp| write_run(tmp, &self.out)))
            .map_err(|e| PyOSError::new_err(format!("cannot write {}: {e}", dir.display())))
    }
}

impl Run {
    fn series(&self, kind: &str) -> Vec<&Series> {
        let Some(trace) = &self.out.result.trace else {
            return Vec::new();
        };
        match kind {
            "flow" => trace.flows.iter().collect(),
            "link" => trace.links.iter().collect(),
            "tunnel" => trace.tunnels.iter().flatten().collect(),
            _ => Vec::new(),
        }
    }

    fn histograms(&self, kind: &str) -> Vec<(String, &Histogram)> {
        let result = &self.out.result;
        let flows = result.flows.iter();
        match kind {
            "rtt" => flows.map(|f| (f.name.clone(), &f.rtt)).collect(),
            "latency" => {
                let mut all: Vec<_> = flows.map(|f| (f.name.clone(), &f.latency)).collect();
                for t in &result.tunnels {
                    all.push((t.name.clone(), &t.latency[0]));
                    for [p, _] in &t.paths {
                        all.push((format!("{}.{}", t.name, p.name), &p.latency));
                    }
                }
                all
            }
            _ => Vec::new(),
        }
        .into_iter()
        .filter(|(_, h)| h.count() > 0)
        .collect()
    }
}

/// The controllers with their parameters, as JSON.
#[pyfunction]
fn controllers() -> String {
    let list: Vec<serde_json::Value> = kleinrock_cc::controllers()
        .iter()
        .map(|c| {
            let params: Vec<serde_json::Value> = c
                .params
                .iter()
                .map(|p| {
                    serde_json::json!({
                        "name": p.name, "kind": p.kind.to_string(),
                        "default": p.default, "doc": p.doc,
                    })
                })
                .collect();
            serde_json::json!({
                "name": c.name, "summary": c.summary, "params": params,
                "runtime_params": c.runtime_params, "one_way_delay": c.one_way_delay,
                "rate_based": c.rate_based, "subflows": c.subflows, "dccp_only": c.dccp_only,
            })
        })
        .collect();
    serde_json::Value::Array(list).to_string()
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("DEMO_SCENARIO", kleinrock_lab::DEMO_SCENARIO)?;
    m.add_class::<Run>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(toml_document, m)?)?;
    m.add_function(wrap_pyfunction!(toml_literal, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(points, m)?)?;
    m.add_function(wrap_pyfunction!(run_point, m)?)?;
    m.add_function(wrap_pyfunction!(controllers, m)?)?;
    Ok(())
}
