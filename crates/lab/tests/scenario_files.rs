//! Every scenario file shipped in `scenarios/` loads and validates, and each of its runs
//! survives the trip through a point's own text (what a sweep hands to another process).

use kleinrock_lab::scenario::{load, parse_point, point_specs};
use std::path::{Path, PathBuf};

fn toml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            toml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}

#[test]
fn every_shipped_scenario_is_valid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    assert!(files.len() >= 5, "found {files:?}");
    for f in files {
        let set = load(&f, &[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!set.points.is_empty());
    }
}

/// A point's text, parsed on its own, gives the scenario the whole file gives for that run:
/// the same links, flows, seed, name, sweep assignments and overrides.
#[test]
fn every_run_is_the_same_scenario_from_its_point_text() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut files = Vec::new();
    toml_files(&root, &mut files);
    let overrides = ["warmup=\"1s\"".to_string()];
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let origin = f.display().to_string();
        let set = load(&f, &overrides).unwrap_or_else(|e| panic!("{e}"));
        let stem = f.file_stem().unwrap().to_string_lossy();
        let specs = point_specs(&text, &origin, &stem, &overrides).unwrap();
        assert_eq!(specs.len(), set.points.len(), "{origin}");
        for (spec, scenario) in specs.iter().zip(&set.points) {
            let from_text = parse_point(spec).unwrap_or_else(|e| panic!("{e}\n{}", spec.text));
            assert_eq!(&from_text, scenario, "{origin}: {:?}", spec.point);
        }
    }
}
