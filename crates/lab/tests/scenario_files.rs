//! Every scenario file shipped in `scenarios/` loads and validates.

use kleinrock_lab::scenario::load;
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
