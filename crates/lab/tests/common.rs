//! Shared helpers for the acceptance tests: build a dumbbell scenario from a few knobs.

use kleinrock_lab::metrics::Summary;
use kleinrock_lab::runner::{run, RunOutput};
use kleinrock_lab::scenario::parse;

/// One bulk flow over `rate` with `one_way` delay each way; `link_extra` and `flow_extra`
/// are TOML lines added to the bottleneck link and the flow.
pub fn dumbbell(cc: &str, rate: &str, one_way: &str, buffer: &str, duration: &str) -> String {
    format!(
        r#"
name = "test"
duration = "{duration}"
seed = 1

[[links]]
name = "bottleneck"
rate = "{rate}"
delay = "{one_way}"
buffer = "{buffer}"

[[links]]
name = "return"
rate = "{rate}"
delay = "{one_way}"
buffer = "10000pkt"

[[flows]]
name = "flow"
cc = "{cc}"
path = ["bottleneck"]
reverse_path = ["return"]
"#
    )
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
