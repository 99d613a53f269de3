//! Sweep grids and overrides: `path = value` assignments into a scenario's TOML tree
//! (`flows.0.cc`, `links[1].buffer`, `flows.0.params.beta`), and the Cartesian product of a
//! `[sweep]` table's value lists, each point once per seed of its `seeds` or `replicates`.

use crate::limits::{
    MAX_FLOWS, MAX_LINKS, MAX_REPLICATES, MAX_SWEEP_POINTS, MAX_SWEEP_TABLES, MAX_SWEEP_TEXT_BYTES,
};
use toml::{Table, Value};

/// The assignments of one sweep point, as `(path, value)` texts.
pub type SweepPoint = Vec<(String, String)>;

/// `path=value, ...` for reports.
pub fn label(point: &SweepPoint) -> String {
    point
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

enum Step {
    Key(String),
    Index(usize),
}

/// Splits `flows.0.cc`, `flows[0].cc` or `sweep."flows.0.cc"` into steps; a quoted part is
/// one key even if it contains dots.
fn parse_path(path: &str) -> Result<Vec<Step>, String> {
    let mut parts: Vec<(String, bool)> = Vec::new();
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(quoted) = rest.strip_prefix('"') {
            let end = quoted
                .find('"')
                .ok_or_else(|| format!("`{path}` has an unclosed quote"))?;
            parts.push((quoted[..end].to_string(), true));
            rest = quoted[end + 1..]
                .strip_prefix('.')
                .unwrap_or(&quoted[end + 1..]);
        } else {
            let end = rest.find('.').unwrap_or(rest.len());
            parts.push((rest[..end].to_string(), false));
            rest = rest.get(end + 1..).unwrap_or("");
        }
    }
    let mut steps = Vec::new();
    for (part, quoted) in parts {
        if quoted {
            steps.push(Step::Key(part));
            continue;
        }
        let (key, indices) = part.split_once('[').unwrap_or((&part, ""));
        if !key.is_empty() {
            steps.push(match key.parse::<usize>() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(key.to_string()),
            });
        }
        for idx in indices.split('[').filter(|s| !s.is_empty()) {
            let i = idx
                .trim_end_matches(']')
                .parse()
                .map_err(|_| format!("`{path}` has a bad index `[{idx}`"))?;
            steps.push(Step::Index(i));
        }
    }
    if steps.is_empty() {
        return Err("empty path".into());
    }
    Ok(steps)
}

/// `path` in one spelling, `flows.0.cc` for `flows[0].cc` too, as its steps; `None` for a
/// path that does not parse (its use reports that).
fn canonical(path: &str) -> Option<Vec<String>> {
    let steps = parse_path(path).ok()?;
    Some(
        steps
            .into_iter()
            .map(|s| match s {
                Step::Key(k) => k,
                Step::Index(i) => i.to_string(),
            })
            .collect(),
    )
}

/// Whether setting `inner` and sweeping `outer` over `values` (its axis, a list) reach the
/// same field, whatever their spelling (`flows[0].cc` is `flows.0.cc`): `inner` is `outer`, or
/// lies inside it and one of the axis' tables (which merge into the field) holds it.
pub fn overlaps(inner: &str, outer: &str, values: &Value) -> bool {
    let (Some(inner), Some(outer)) = (canonical(inner), canonical(outer)) else {
        return false;
    };
    let Some(rest) = inner.strip_prefix(outer.as_slice()) else {
        return false;
    };
    let holds = |v: &Value| {
        rest.iter()
            .try_fold(v, |v, step| match v {
                Value::Table(t) => t.get(step),
                Value::Array(a) => step.parse::<usize>().ok().and_then(|i| a.get(i)),
                _ => None,
            })
            .is_some()
    };
    rest.is_empty() || values.as_array().is_some_and(|a| a.iter().any(holds))
}

/// Refuses two axes of a grid that reach the same field (see [`overlaps`]): a row would then
/// name a value its run did not use.
fn check_axes(sweep: &Table) -> Result<(), (String, String)> {
    for (a, a_values) in sweep {
        for (b, b_values) in sweep {
            if a != b && (overlaps(a, b, b_values) || overlaps(b, a, a_values)) {
                let message = format!(
                    "sets a field the axis `{b}` sets too; accepted: axes on distinct fields"
                );
                return Err((format!("sweep.\"{a}\""), message));
            }
        }
    }
    Ok(())
}

/// Sets `path` in `root` to `value`, creating missing tables (never missing array entries).
pub fn set_path(root: &mut Table, path: &str, value: Value) -> Result<(), String> {
    let steps = parse_path(path)?;
    let mut whole = Value::Table(std::mem::take(root));
    let result = set_in(&mut whole, &steps, path, value);
    if let Value::Table(t) = whole {
        *root = t;
    }
    result
}

fn set_in(mut cur: &mut Value, steps: &[Step], path: &str, value: Value) -> Result<(), String> {
    let not_found = || format!("`{path}` does not lead to a table or list entry");
    let (last, init) = steps.split_last().ok_or_else(not_found)?;
    for step in init {
        cur = match (step, cur) {
            (Step::Key(k), Value::Table(t)) => t
                .entry(k.clone())
                .or_insert_with(|| Value::Table(Table::new())),
            (Step::Index(i), Value::Array(a)) => {
                let len = a.len();
                a.get_mut(*i).ok_or_else(|| {
                    format!("`{path}`: index {i} is out of range (there are {len})")
                })?
            }
            _ => return Err(not_found()),
        };
    }
    let slot = match (last, cur) {
        (Step::Key(k), Value::Table(t)) => t.entry(k.clone()).or_insert(Value::Boolean(false)),
        (Step::Index(i), Value::Array(a)) if *i < a.len() => &mut a[*i],
        _ => return Err(not_found()),
    };
    merge(slot, value);
    Ok(())
}

/// Puts `value` into `slot`: a table merges key by key into a table already there (so a sweep
/// value `{ cc = "westwood" }` changes one flow's controller and keeps its paths); anything
/// else replaces.
fn merge(slot: &mut Value, value: Value) {
    match (slot, value) {
        (Value::Table(old), Value::Table(new)) => {
            for (k, v) in new {
                match old.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        old.insert(k, v);
                    }
                }
            }
        }
        (slot, value) => *slot = value,
    }
}

/// Parses the text after `=` of an override as a TOML value, or as a bare string.
fn parse_value(text: &str) -> Value {
    format!("v = {text}")
        .parse::<Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(text.to_string()))
}

/// Applies `path=value` overrides; returns them as `(path, value)`; errors name the override.
pub fn apply_overrides(
    root: &mut Table,
    overrides: &[String],
) -> Result<SweepPoint, (String, String)> {
    let mut applied = Vec::new();
    for o in overrides {
        let (path, value) = o.split_once('=').ok_or_else(|| {
            (
                "--set".to_string(),
                format!("`{o}` is not `path=value` (e.g. flows.0.cc=cubic)"),
            )
        })?;
        let (path, value) = (path.trim(), parse_value(value.trim()));
        applied.push((path.to_string(), value_text(&value)));
        set_path(root, path, value).map_err(|m| (format!("--set {path}"), m))?;
    }
    Ok(applied)
}

/// The seeds every point of a sweep runs with, from the `[sweep]` table's `seeds` or
/// `replicates`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replicates {
    /// The key that gave them: `seeds` or `replicates`.
    pub key: &'static str,
    /// The seeds, distinct, in the order the runs of a point take them.
    pub seeds: Vec<u64>,
}

/// Takes `seeds = [...]` or `replicates = N` out of the `[sweep]` table of `root`: the listed
/// seeds, or N seeds counting up from the file's `seed` (seed, seed + 1, ..., seed + N - 1).
/// `None` without either (or without a `[sweep]` table).
pub fn take_replicates(root: &mut Table) -> Result<Option<Replicates>, (String, String)> {
    refuse_outside_sweep(root)?;
    let file_seed = root.get("seed").cloned();
    let Some(Value::Table(sweep)) = root.get_mut("sweep") else {
        return Ok(None);
    };
    let (list, count) = (sweep.remove("seeds"), sweep.remove("replicates"));
    if list.is_none() && count.is_none() {
        return Ok(None);
    }
    // The file's seed is checked even where `seeds` replaces it.
    let base = seed_value(file_seed.as_ref())?;
    let replicates = match (list, count) {
        (Some(list), None) => Replicates {
            key: "seeds",
            seeds: seed_list(&list)?,
        },
        (None, Some(n)) => Replicates {
            key: "replicates",
            seeds: counted_seeds(&n, base)?,
        },
        _ => {
            let message = "`seeds` and `replicates` are both given; accepted: one of them";
            return Err(("sweep.replicates".into(), message.into()));
        }
    };
    if sweep.contains_key("seed") {
        let message = format!(
            "the seeds are given by `{}`; accepted: a seed list or `seeds`/`replicates`, not both",
            replicates.key
        );
        return Err(("sweep.\"seed\"".into(), message));
    }
    Ok(Some(replicates))
}

/// `seeds` and `replicates` are no scenario fields: they go in `[sweep]`.
fn refuse_outside_sweep(root: &Table) -> Result<(), (String, String)> {
    match ["seeds", "replicates"]
        .into_iter()
        .find(|k| root.contains_key(*k))
    {
        None => Ok(()),
        Some(key) => {
            let message = format!(
                "belongs in the [sweep] table: `[sweep]` then `{key} = ...` (with --set: \
                 sweep.{key}=...)"
            );
            Err((key.into(), message))
        }
    }
}

/// The largest seed: a scenario's `seed` is a TOML integer, at most `i64::MAX`.
const MAX_SEED: u64 = i64::MAX as u64;

/// `seeds = [...]`: 1 to [`MAX_REPLICATES`] distinct seeds.
fn seed_list(list: &Value) -> Result<Vec<u64>, (String, String)> {
    let accepted = format!(
        "accepted: a list of 1 to {MAX_REPLICATES} distinct whole numbers from 0 to {MAX_SEED}"
    );
    let field = "sweep.seeds".to_string();
    let values = list.as_array().ok_or((field.clone(), accepted.clone()))?;
    if values.is_empty() || values.len() > MAX_REPLICATES {
        return Err((field, format!("{} seeds; {accepted}", values.len())));
    }
    let mut seeds = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let field = format!("sweep.seeds[{i}]");
        let seed = v
            .as_integer()
            .and_then(|s| u64::try_from(s).ok())
            .ok_or((field.clone(), format!("{v} is not a seed; {accepted}")))?;
        if seeds.contains(&seed) {
            let message = format!("seed {seed} is listed twice; {accepted}");
            return Err((field, message));
        }
        seeds.push(seed);
    }
    Ok(seeds)
}

/// The file's `seed` (default 1).
fn seed_value(seed: Option<&Value>) -> Result<u64, (String, String)> {
    let Some(v) = seed else { return Ok(1) };
    v.as_integer()
        .and_then(|s| u64::try_from(s).ok())
        .ok_or_else(|| {
            let message = format!("accepted: a whole number from 0 to {MAX_SEED}");
            ("seed".to_string(), message)
        })
}

/// `replicates = N`: N seeds from `base` up.
fn counted_seeds(n: &Value, base: u64) -> Result<Vec<u64>, (String, String)> {
    let n = n
        .as_integer()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| (1..=MAX_REPLICATES).contains(n))
        .ok_or_else(|| {
            let message =
                format!("{n} is out of range; accepted: a whole number from 1 to {MAX_REPLICATES}");
            ("sweep.replicates".to_string(), message)
        })?;
    if base > MAX_SEED - (n as u64 - 1) {
        let message = format!(
            "{n} seeds from seed {base} up pass {MAX_SEED}; accepted: seed + replicates - 1 at \
             most {MAX_SEED}"
        );
        return Err(("sweep.replicates".into(), message));
    }
    Ok((base..base + n as u64).collect())
}

/// The runs (grid points x seeds) are at most [`MAX_SWEEP_POINTS`], checked before any is
/// built, and so are the links and flows and the scenario text over all of them.
fn check_grid_size(
    root: &Table,
    sweep: Option<&Table>,
    replicates: Option<&Replicates>,
    text_bytes: usize,
) -> Result<(), (String, String)> {
    let tables =
        ["links", "flows"].map(|k| root.get(k).and_then(Value::as_array).map_or(0, Vec::len));
    for (key, (n, max)) in ["links", "flows"]
        .into_iter()
        .zip(tables.into_iter().zip([MAX_LINKS, MAX_FLOWS]))
    {
        if n > max {
            return Err((
                key.into(),
                format!("{n} [[{key}]] tables; accepted: at most {max}"),
            ));
        }
    }
    let per_point = (tables[0] + tables[1]).max(1);
    let seeds = replicates.map(|r| (format!("sweep.{}", r.key), r.seeds.len()));
    let lists = sweep.into_iter().flatten().map(|(path, values)| {
        let n = values.as_array().map_or(1, Vec::len);
        (format!("sweep.\"{path}\""), n)
    });
    let mut points = 1usize;
    for (field, n) in seeds.into_iter().chain(lists) {
        points = points.saturating_mul(n);
        if points > MAX_SWEEP_POINTS {
            let message = format!(
                "the sweep has more than {MAX_SWEEP_POINTS} points with this field; accepted: \
                 at most {MAX_SWEEP_POINTS} points (the product of the lists' lengths, times \
                 the seeds of `seeds` or `replicates`)"
            );
            return Err((field, message));
        }
        if points.saturating_mul(text_bytes) > MAX_SWEEP_TEXT_BYTES {
            let message = format!(
                "{points} points of a {text_bytes}-byte file would be more than \
                 {MAX_SWEEP_TEXT_BYTES} bytes of scenario text; accepted: points x file size \
                 at most {MAX_SWEEP_TEXT_BYTES}"
            );
            return Err((field, message));
        }
        if points * per_point > MAX_SWEEP_TABLES {
            let message = format!(
                "{points} points of {per_point} links and flows each would be more than \
                 {MAX_SWEEP_TABLES} in all; accepted: points x (links + flows) at most \
                 {MAX_SWEEP_TABLES}"
            );
            return Err((field, message));
        }
    }
    Ok(())
}

/// The scenario trees of every point of `sweep` (one point, unchanged, without a sweep),
/// with the `sweep` table removed; with `replicates`, each point once per seed, point by
/// point and within a point in the order of the seeds.
pub fn expand(
    root: &Table,
    sweep: Option<&Table>,
    replicates: Option<&Replicates>,
    text_bytes: usize,
) -> Result<Vec<(SweepPoint, Value)>, (String, String)> {
    check_grid_size(root, sweep, replicates, text_bytes)?;
    if let Some(sweep) = sweep {
        check_axes(sweep)?;
    }
    let mut base = root.clone();
    base.remove("sweep");
    let mut points: Vec<(SweepPoint, Table)> = vec![(Vec::new(), base)];
    for (path, values) in sweep.into_iter().flatten() {
        let field = format!("sweep.\"{path}\"");
        let Value::Array(values) = values else {
            return Err((field, "must be a list of values".into()));
        };
        if values.is_empty() {
            return Err((field, "must list at least one value".into()));
        }
        let mut next = Vec::with_capacity(points.len() * values.len());
        for (point, table) in &points {
            for v in values {
                let mut t = table.clone();
                set_path(&mut t, path, v.clone()).map_err(|m| (field.clone(), m))?;
                let mut p = point.clone();
                p.push((path.clone(), value_text(v)));
                next.push((p, t));
            }
        }
        points = next;
    }
    if let Some(r) = replicates {
        points = points
            .into_iter()
            .flat_map(|(point, table)| with_seeds(point, table, &r.seeds))
            .collect();
    }
    Ok(points
        .into_iter()
        .map(|(p, t)| (p, Value::Table(t)))
        .collect())
}

/// One copy of a point's tree per seed, each with its `seed`.
fn with_seeds(point: SweepPoint, table: Table, seeds: &[u64]) -> Vec<(SweepPoint, Table)> {
    seeds
        .iter()
        .map(|&seed| {
            let mut t = table.clone();
            // Seeds are at most i64::MAX (checked where they are read).
            t.insert("seed".into(), Value::Integer(seed as i64));
            (point.clone(), t)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Table {
        text.parse().unwrap()
    }

    #[test]
    fn sets_nested_paths() {
        let mut t = table("[[flows]]\ncc = \"newreno\"\n");
        set_path(&mut t, "flows.0.cc", Value::String("cubic".into())).unwrap();
        set_path(&mut t, "flows[0].params.beta", Value::Float(0.5)).unwrap();
        assert_eq!(t["flows"][0]["cc"].as_str(), Some("cubic"));
        assert_eq!(t["flows"][0]["params"]["beta"].as_float(), Some(0.5));
        assert!(set_path(&mut t, "flows.3.cc", Value::Integer(1)).is_err());
        set_path(&mut t, "sweep.\"flows.0.cc\"", Value::Array(vec![])).unwrap();
        let flow: Table = "cc = \"westwood\"\nparams = { gamma = 1 }".parse().unwrap();
        set_path(&mut t, "flows.0", Value::Table(flow)).unwrap();
        assert_eq!(t["flows"][0]["cc"].as_str(), Some("westwood"));
        assert_eq!(
            t["flows"][0]["params"]["beta"].as_float(),
            Some(0.5),
            "merged, not replaced"
        );
        assert_eq!(t["flows"][0]["params"]["gamma"].as_integer(), Some(1));
        assert!(t["sweep"]["flows.0.cc"].as_array().is_some());
    }

    #[test]
    fn expands_the_cartesian_product() {
        let t = table("a = 1\n[sweep]\na = [1, 2]\nb = [\"x\", \"y\", \"z\"]\n");
        let sweep = t["sweep"].as_table().unwrap().clone();
        let points = expand(&t, Some(&sweep), None, 0).unwrap();
        assert_eq!(points.len(), 6);
        assert_eq!(label(&points[5].0), "a=2, b=z");
        assert!(points[0].1.get("sweep").is_none());
    }
}
