//! `report.html` (issue 17): its numbers are the summary's numbers, rebuilding it from the
//! output directory gives the same bytes, and it is self-contained (no script, nothing
//! referenced outside the file).

use kleinrock_lab::html;
use kleinrock_lab::runner::{run_all, write_outputs};
use kleinrock_lab::scenario::parse;
use serde_json::Value;
use std::path::{Path, PathBuf};

const SCENARIO: &str = r#"
duration = "5s"
trace_interval = "10ms"
[[links]]
name = "bottleneck"
rate = "10Mbps"
delay = "20ms"
buffer = "1bdp"
[[links]]
name = "return"
rate = "10Mbps"
delay = "20ms"
buffer = "100pkt"
[[flows]]
name = "a"
cc = "bbr"
path = ["bottleneck"]
reverse_path = ["return"]
[[flows]]
name = "b"
cc = "cubic"
path = ["bottleneck"]
reverse_path = ["return"]
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kleinrock-html-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs `text` (`--set` overrides `set`) and writes its outputs to a fresh directory.
fn write(name: &str, text: &str, set: &[String]) -> PathBuf {
    let set = parse(text, "html.toml", "html", set).unwrap_or_else(|e| panic!("{e}"));
    let outputs = run_all(&set.points, || {});
    let dir = scratch(name);
    write_outputs(&dir, &set, &outputs).expect("outputs written");
    dir
}

/// Every `data-key="k" data-value="v"` of the page, in order.
fn cell_values(html: &str) -> Vec<(String, f64)> {
    html.split("data-key=\"")
        .skip(1)
        .map(|rest| {
            let (key, rest) = rest.split_once('"').expect("closed key");
            let value = rest
                .split_once("data-value=\"")
                .and_then(|(_, v)| v.split_once('"'))
                .expect("a value follows the key")
                .0;
            (key.to_string(), value.parse().expect("a number"))
        })
        .collect()
}

fn summary(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("valid JSON")
}

/// The values the page's summary tables show, read from the summary in the same order: per
/// flow, then per link, the metrics that are numbers.
fn expected(summary: &Value, flow_keys: &[&str], link_keys: &[&str]) -> Vec<(String, f64)> {
    let rows = |list: &Value, keys: &[&str]| -> Vec<(String, f64)> {
        list.as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| {
                keys.iter()
                    .filter_map(|k| Some((k.to_string(), row[*k].as_f64()?)))
                    .collect::<Vec<_>>()
            })
            .collect()
    };
    let mut out = rows(&summary["flows"], flow_keys);
    out.extend(rows(&summary["links"], link_keys));
    out
}

const FLOW_KEYS: [&str; 8] = [
    "goodput_bps",
    "throughput_bps",
    "loss_rate",
    "rtt_mean_ms",
    "rtt_p95_ms",
    "owqd_mean_ms",
    "loss_event_distance_s",
    "completion_s",
];
const LINK_KEYS: [&str; 4] = [
    "utilisation",
    "mean_queue_fill",
    "max_queue_packets",
    "dropped_packets",
];

#[test]
fn a_run_reports_numbers_are_the_summarys() {
    let dir = write("run", SCENARIO, &[]);
    let page = std::fs::read_to_string(dir.join(html::REPORT)).expect("report.html written");
    // Exactly: the page carries each number as the summary has it.
    assert_eq!(
        cell_values(&page),
        expected(&summary(&dir), &FLOW_KEYS, &LINK_KEYS)
    );
    // Both flows and both links are drawn (window, rates, delays, state; queue, throughput)
    // with the RTT and the per-packet latency CDFs.
    assert_eq!(
        page.matches("<figure class=\"plot\"").count(),
        2 * 4 + 2 * 2 + 2
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_reports_numbers_are_its_points() {
    let sweep = format!("{SCENARIO}\n[sweep]\n\"links.0.buffer\" = [\"0.5bdp\", \"2bdp\"]\n");
    let dir = write("sweep", &sweep, &[]);
    let page = std::fs::read_to_string(dir.join(html::REPORT)).expect("report.html written");
    let text = std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json");
    let points: Value = serde_json::from_str(&text).expect("valid JSON");
    let keys = ["goodput_bps", "rtt_mean_ms", "loss_rate"];
    let expected: Vec<(String, f64)> = points
        .as_array()
        .expect("a list")
        .iter()
        .flat_map(|p| expected(p, &keys, &[]))
        .collect();
    assert_eq!(cell_values(&page), expected);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rebuilding_gives_the_same_bytes() {
    let sweep = format!("{SCENARIO}\n[sweep]\n\"flows.1.cc\" = [\"cubic\", \"newreno\"]\n");
    let run = write("rebuild-run", SCENARIO, &[]);
    let swept = write("rebuild-sweep", &sweep, &[]);
    for dir in [run.clone(), swept.clone(), swept.join("point-1")] {
        let first = std::fs::read(dir.join(html::REPORT)).expect("report.html written");
        html::rebuild(&dir).expect("rebuilt");
        let second = std::fs::read(dir.join(html::REPORT)).expect("report.html rebuilt");
        assert!(
            first == second,
            "{}: the rebuilt report differs",
            dir.display()
        );
    }
    let _ = std::fs::remove_dir_all(&run);
    let _ = std::fs::remove_dir_all(&swept);
}

#[test]
fn a_report_is_self_contained() {
    let dir = write("contained", SCENARIO, &[]);
    let page = std::fs::read_to_string(dir.join(html::REPORT)).expect("report.html written");
    // No script, no style sheet or image to fetch, no address but the SVG namespace.
    for banned in ["<script", "<link", "<img", "src=", "url(", "@import"] {
        assert!(!page.contains(banned), "the report contains `{banned}`");
    }
    let addresses = page.matches("http").count();
    let namespaces = page.matches("xmlns=\"http://www.w3.org/2000/svg\"").count();
    assert_eq!(
        addresses, namespaces,
        "an address other than the SVG namespace"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_directory_that_is_not_an_output_or_a_damaged_summary_is_refused() {
    let dir = scratch("bad");
    std::fs::create_dir_all(&dir).expect("scratch");
    let e = html::rebuild(&dir).expect_err("refused");
    assert!(e.contains("not a kleinrock output directory"), "{e}");
    std::fs::write(dir.join("summary.json"), "{\"flows\": [").expect("written");
    let e = html::rebuild(&dir).expect_err("refused");
    assert!(e.contains("summary.json is damaged"), "{e}");
    assert!(!dir.join(html::REPORT).exists(), "nothing is written");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_sweep_with_replicates_reports_the_means_and_the_runs() {
    let lossy = SCENARIO.replacen("buffer = \"1bdp\"", "buffer = \"1bdp\"\nloss = 0.01", 1);
    let sweep =
        format!("{lossy}\n[sweep]\n\"flows.1.cc\" = [\"cubic\", \"newreno\"]\nreplicates = 3\n");
    let dir = write("replicates", &sweep, &[]);
    let page = std::fs::read_to_string(dir.join(html::REPORT)).expect("report.html written");
    let text = std::fs::read_to_string(dir.join("sweep.json")).expect("sweep.json");
    let sweep: Value = serde_json::from_str(&text).expect("valid JSON");
    let keys = ["goodput_bps", "rtt_mean_ms", "loss_rate"];
    // First each grid point's means (README "sweep.json": aggregates[*].flows[*].metrics),
    // then every run's own numbers.
    let mut want: Vec<(String, f64)> = Vec::new();
    for a in sweep["aggregates"].as_array().expect("aggregates") {
        for f in a["flows"].as_array().expect("flows") {
            for k in keys {
                if let Some(m) = f["metrics"][k]["mean"].as_f64() {
                    want.push((k.to_string(), m));
                }
            }
        }
    }
    for run in sweep["runs"].as_array().expect("runs") {
        want.extend(expected(run, &keys, &[]));
    }
    assert_eq!(cell_values(&page), want);
    assert!(page.contains(" ± "), "the means carry their intervals");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn names_that_would_share_an_output_file_are_refused() {
    // `a<b` and `a>b` are both `a_b.csv` under flows/, and the report would draw one for both.
    let text = SCENARIO
        .replace("name = \"a\"", "name = \"a<b\"")
        .replace("name = \"b\"", "name = \"a>b\"");
    let e = parse(&text, "html.toml", "html", &[]).expect_err("refused");
    assert_eq!(e.field, "flows[1].name", "{e}");
    assert!(e.message.contains("a_b.csv"), "{e}");
}
