//! Shared helpers for the acceptance tests: build a dumbbell scenario from a few knobs.

use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::metrics::Summary;
use kleinrock_lab::runner::{run, RunOutput};
use kleinrock_lab::scenario::parse;

/// One bulk flow named `flow` over `rate` with `one_way` delay each way, in a scenario named
/// `test` with seed 1 (see [`Dumbbell`] for the layout the helpers below edit).
pub fn dumbbell(cc: &str, rate: &str, one_way: &str, buffer: &str, duration: &str) -> String {
    Dumbbell {
        name: "test".into(),
        flow_name: Some("flow".into()),
        ..Dumbbell::new(cc, rate, one_way, buffer, duration)
    }
    .to_toml()
}

/// Inserts `lines` into the table that starts with `header` (e.g. the first `[[links]]`).
pub fn with(text: &str, header_line: &str, lines: &str) -> String {
    let at = text.find(header_line).expect("header present") + header_line.len();
    format!("{}\n{}{}", &text[..at], lines, &text[at..])
}

/// Runs a single-point scenario given as text.
pub fn run_text(text: &str) -> RunOutput {
    let set = parse(text, "<test>", "test", &[]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.points.len(), 1);
    run(&set.points[0])
}

/// Runs and returns the summary.
pub fn summary(text: &str) -> Summary {
    run_text(text).summary
}
