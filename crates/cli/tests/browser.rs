//! The HTML reports (issue 17) as a reader's browser shows them: each `report.html` is opened in
//! headless Chromium (Debian's `chromium`; the test installs nothing, `.ci/run` does), with
//! no console error, no request leaving the file, the expected number of plots and none of
//! them blank, and parsed by a strict HTML5 parser without a single error.
//!
//! The checks are first run on small hand-written pages, one good and one for each rule
//! broken, so that each check is seen to fail. With `KLEINROCK_DOCS_SCREENSHOTS=1` the run and
//! reproduction reports' screenshots (their top [`DOCS_HEIGHT`] rows) go to
//! `docs/report-run.png` and `docs/report-reproduce.png`, which the README shows.

mod browser {
    pub mod cdp;
    pub mod html5;
    pub mod report;
}

use std::path::{Path, PathBuf};
use std::process::Command;

use browser::html5::{check_html5, html5_errors};
use browser::report::{check_report, report_problems, top_of};

/// A test's directory under the system temp dir, removed when the test passes and kept, with
/// its pages and screenshots, when it fails.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("kleinrock-browser-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

// ---------------------------------------------------------------------------------------------
// The harness on hand-written pages.

/// A chart as plotters' SVG backend writes one: a white backdrop, axes, a label, a series.
const PLOT_CWND: &str = r##"<svg width="480" height="240" viewBox="0 0 480 240" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="480" height="240" opacity="1" fill="#FFFFFF" stroke="none"/>
<polyline fill="none" opacity="1" stroke="#000000" stroke-width="1" points="40,10 40,210 470,210 "/>
<text x="44" y="12" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">cwnd (packets)</text>
<polyline fill="none" opacity="1" stroke="#1F77B4" stroke-width="2" points="40,200 80,150 120,100 160,60 200,130 240,90 280,60 320,130 360,90 400,60 440,130 "/>
</svg>"##;

const PLOT_QUEUE: &str = r##"<svg width="480" height="240" viewBox="0 0 480 240" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="480" height="240" opacity="1" fill="#FFFFFF" stroke="none"/>
<polyline fill="none" opacity="1" stroke="#000000" stroke-width="1" points="40,10 40,210 470,210 "/>
<text x="44" y="12" dy="0.76em" text-anchor="start" font-family="sans-serif" font-size="12" opacity="1" fill="#000000">queue (packets)</text>
<rect x="60" y="120" width="30" height="90" opacity="1" fill="#FF7F0E" stroke="none"/>
<rect x="120" y="80" width="30" height="130" opacity="1" fill="#FF7F0E" stroke="none"/>
</svg>"##;

/// What plotters leaves when nothing is drawn: the backdrop alone.
const PLOT_BLANK: &str = r##"<svg width="480" height="240" viewBox="0 0 480 240" xmlns="http://www.w3.org/2000/svg">
<rect x="0" y="0" width="480" height="240" opacity="1" fill="#FFFFFF" stroke="none"/>
</svg>"##;

/// A report page in the contract's shape, with `body_extra` added after the plots.
fn sample_page(queue_plot: &str, body_extra: &str) -> String {
    format!(
        r#"<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>sample report</title>
<style>
body {{ font-family: sans-serif; margin: 2em; background: #f4f4f0; color: #222; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #bbb; padding: 0.2em 0.6em; text-align: right; }}
figure.plot {{ margin: 1.5em 0; }}
</style>
</head>
<body>
<h1>sample report</h1>
<table>
<thead><tr><th>flow</th><th>goodput (Mbps)</th><th>RTT p95 (ms)</th></tr></thead>
<tbody><tr><td>bulk</td><td>9.707</td><td>148.4</td></tr></tbody>
</table>
<figure class="plot" id="cwnd">
{PLOT_CWND}
<figcaption>Congestion window of flow bulk</figcaption>
</figure>
<figure class="plot" id="queue">
{queue_plot}
<figcaption>Queue of link bottleneck</figcaption>
</figure>
{body_extra}
</body>
</html>
"#
    )
}

/// Writes `text` as `DIR/report.html` and returns the problems the browser check finds, with
/// `DIR/screenshot.png` written.
fn browser_problems(test: &str, text: &str, expected_plots: usize) -> (Vec<String>, Scratch) {
    let dir = Scratch::new(test);
    let html = dir.join("report.html");
    std::fs::write(&html, text).unwrap();
    let problems = report_problems(&html, expected_plots, &dir.join("screenshot.png"));
    (problems, dir)
}

/// The check failed, and every failure it names mentions `mention` (it caught this page's
/// violation and nothing else); `expected` is one of them.
fn assert_caught(problems: &[String], expected: &str, mention: &str) {
    eprintln!("caught: {problems:#?}");
    assert!(
        problems.iter().any(|p| p.contains(expected)),
        "the check should report `{expected}`, it reports: {problems:#?}"
    );
    assert!(
        problems.iter().all(|p| p.contains(mention)),
        "the check should report only failures about `{mention}`, it reports: {problems:#?}"
    );
}

#[test]
fn the_harness_passes_a_good_page_and_writes_its_screenshot() {
    let (problems, dir) = browser_problems("good", &sample_page(PLOT_QUEUE, ""), 2);
    assert!(problems.is_empty(), "a good page fails: {problems:#?}");
    let screenshot = dir.join("screenshot.png");
    let png = std::fs::read(&screenshot).expect("the screenshot is written");
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let info = decoder.read_info().expect("the screenshot is a PNG");
    let (width, height) = (info.info().width, info.info().height);
    assert_eq!(width, 1280, "the screenshot is the page's width");
    assert!(
        height > 2 * 240,
        "the screenshot holds the whole page, both plots: {width} x {height}"
    );
    // The public entry point passes it too.
    check_report(&dir.join("report.html"), 2, &screenshot);
}

#[test]
fn the_harness_catches_a_console_error() {
    let page = sample_page(
        PLOT_QUEUE,
        r#"<script>console.error("the plot data is missing")</script>"#,
    );
    let (problems, _) = browser_problems("console-error", &page, 2);
    assert_caught(
        &problems,
        "console error: the plot data is missing",
        "the plot data is missing",
    );
}

#[test]
fn the_harness_catches_an_uncaught_exception() {
    let page = sample_page(PLOT_QUEUE, "<script>drawPlots();</script>");
    let (problems, _) = browser_problems("exception", &page, 2);
    assert_caught(&problems, "uncaught exception: ReferenceError", "drawPlots");
}

#[test]
fn the_harness_catches_a_request_to_the_network() {
    let page = sample_page(
        PLOT_QUEUE,
        r#"<p><img src="http://example.invalid/logo.png" alt="logo"></p>"#,
    );
    let (problems, _) = browser_problems("network", &page, 2);
    assert_caught(
        &problems,
        "request leaving the file: http://example.invalid/logo.png",
        "example.invalid/logo.png",
    );
}

#[test]
fn the_harness_catches_a_request_for_another_file() {
    // plot.png exists beside the page, so the request would succeed: it is caught as a request.
    let page = sample_page(PLOT_QUEUE, r#"<p><img src="plot.png" alt="plot"></p>"#);
    let dir = Scratch::new("other-file");
    std::fs::write(dir.join("plot.png"), b"not looked at").unwrap();
    let html = dir.join("report.html");
    std::fs::write(&html, page).unwrap();
    let problems = report_problems(&html, 2, &dir.join("screenshot.png"));
    let plot_url = browser::cdp::file_url(&std::fs::canonicalize(&*dir).unwrap().join("plot.png"));
    assert_caught(
        &problems,
        &format!("request leaving the file: {plot_url}"),
        "plot.png",
    );
}

#[test]
fn the_harness_catches_a_blank_plot() {
    let (problems, _) = browser_problems("blank", &sample_page(PLOT_BLANK, ""), 2);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(
        problems[0].starts_with("plot #queue is blank"),
        "{problems:#?}"
    );
}

#[test]
fn the_harness_catches_a_wrong_plot_count() {
    let (problems, _) = browser_problems("count", &sample_page(PLOT_QUEUE, ""), 3);
    assert_eq!(
        problems,
        ["expected 3 plots (figure.plot), found 2 (ids: cwnd, queue)"]
    );
}

#[test]
fn the_harness_check_report_panics_on_a_violation() {
    let dir = Scratch::new("panics");
    let html = dir.join("report.html");
    std::fs::write(&html, sample_page(PLOT_BLANK, "")).unwrap();
    let message = panic_message(|| check_report(&html, 2, &dir.join("screenshot.png")));
    assert!(
        message.contains("fails the report checks") && message.contains("plot #queue is blank"),
        "{message}"
    );
}

/// The message `f` panics with; fails when it returns.
fn panic_message(f: impl FnOnce() + std::panic::UnwindSafe) -> String {
    let payload = std::panic::catch_unwind(f).expect_err("the check panics");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(payload) => payload
            .downcast::<&str>()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    }
}

#[test]
fn the_html5_check_passes_a_good_page() {
    let dir = Scratch::new("html5-good");
    let html = dir.join("report.html");
    std::fs::write(&html, sample_page(PLOT_QUEUE, "")).unwrap();
    check_html5(&html);
}

#[test]
fn the_harness_catches_invalid_html() {
    let dir = Scratch::new("html5-bad");
    let html = dir.join("report.html");
    // Misnested formatting elements, a stray end tag, an attribute given twice.
    let page = sample_page(
        PLOT_QUEUE,
        "<p>the <b>goodput <i>is</b> low</i></p>\n</section>\n<p class=\"a\" class=\"b\">x</p>",
    );
    let first_bad_line = page
        .lines()
        .position(|l| l.contains("goodput <i>"))
        .unwrap()
        + 1;
    std::fs::write(&html, &page).unwrap();
    let errors = html5_errors(&html);
    let expected: Vec<String> = (first_bad_line..first_bad_line + 3)
        .map(|line| format!("line {line}: "))
        .collect();
    assert!(
        expected
            .iter()
            .all(|line| errors.iter().any(|e| e.starts_with(line))),
        "an error on each of the three bad lines, by line ({expected:?}): {errors:#?}"
    );
    assert!(
        errors
            .iter()
            .all(|e| expected.iter().any(|l| e.starts_with(l))),
        "errors on those lines only: {errors:#?}"
    );
    let missing_doctype = dir.join("no-doctype.html");
    std::fs::write(
        &missing_doctype,
        sample_page(PLOT_QUEUE, "").replace("<!DOCTYPE html>\n", ""),
    )
    .unwrap();
    assert!(
        !html5_errors(&missing_doctype).is_empty(),
        "a page without a doctype (quirks mode) is an error"
    );
    let message = panic_message(|| check_html5(&html));
    assert!(message.contains("HTML5 parse error"), "{message}");
}

// ---------------------------------------------------------------------------------------------
// The reports `kleinrock` writes.

/// `kleinrock run scenarios/examples/reverse_traffic.toml`: two Cubic flows (forward,
/// backward), each on its own link and ACKed over the other.
const RUN_FLOWS: usize = 2;
const RUN_LINKS: usize = 2;
/// A run's report (README "report.html"): per flow with a controller its window, rates,
/// delays and controller state over time; per link its queue and its throughput; and the RTT
/// and per-packet latency CDFs of all flows.
const PLOTS_PER_FLOW: usize = 4;
const PLOTS_PER_LINK: usize = 2;
const RUN_REPORT_PLOTS: usize = RUN_FLOWS * PLOTS_PER_FLOW + RUN_LINKS * PLOTS_PER_LINK + 2;

/// `kleinrock sweep scenarios/demo.toml`: one swept field, `flows.0.cc`.
const SWEPT_FIELDS: usize = 1;
/// A sweep's report: goodput, mean RTT and loss against each swept field, and goodput against
/// mean RTT per controller.
const SWEEP_REPORT_PLOTS: usize = 3 * SWEPT_FIELDS + 1;

/// The column groups of a reproduction's data files, each drawn as one plot (README
/// "report.html"): columns ending in these units.
const UNITS: [&str; 7] = ["_bps", "_mbps", "_ms", "_bytes", "_packets", "_pct", "_jfi"];
/// Counters, not drawn.
const COUNTERS: [&str; 4] = [
    "delivered_bytes",
    "sent_packets",
    "lost_packets",
    "sent_bytes",
];

/// A reproduction's plots, counted from its data files and `reproduce.json` by the README's
/// rules: a data file is drawn when its first column increases or names distinct rows, one
/// plot per unit with a value, and a unit whose columns the paper's values mark only in part
/// gets a plot of those columns first.
fn reproduction_plots(dir: &Path) -> usize {
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("reproduce.json")).expect("reproduce.json"))
            .expect("valid JSON");
    let marked: Vec<(String, String)> = manifest["figures"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["paper"].as_array().into_iter().flatten())
        .filter_map(|p| {
            Some((
                p["data"].as_str()?.to_string(),
                p["column"].as_str()?.to_string(),
            ))
        })
        .collect();
    let mut plots = 0;
    for entry in std::fs::read_dir(dir.join("data")).expect("the data directory") {
        let path = entry.expect("an entry").path();
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("a CSV");
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        let number = |r: &Vec<&str>, i: usize| r.get(i).and_then(|c| c.parse::<f64>().ok());
        let has_value = |i: usize| {
            rows.iter()
                .any(|r| number(r, i).is_some_and(f64::is_finite))
        };
        let firsts: Vec<&str> = rows.iter().map(|r| r[0]).collect();
        let xs: Option<Vec<f64>> = rows.iter().map(|r| number(r, 0)).collect();
        let drawn = match xs {
            Some(xs) if !xs.is_empty() => xs.windows(2).all(|w| w[0] < w[1]),
            _ => !firsts.is_empty() && (1..firsts.len()).all(|i| !firsts[..i].contains(&firsts[i])),
        };
        if !drawn {
            continue;
        }
        for unit in UNITS {
            let columns: Vec<&str> = (1..header.len())
                .filter(|&i| {
                    let n = header[i];
                    UNITS.iter().find(|u| n.ends_with(*u)) == Some(&unit)
                        && !COUNTERS.contains(&n)
                        && has_value(i)
                })
                .map(|i| header[i])
                .collect();
            if columns.is_empty() {
                continue;
            }
            let with_paper = columns
                .iter()
                .filter(|c| marked.iter().any(|(d, m)| *d == file && m == *c))
                .count();
            plots += if with_paper > 0 && with_paper < columns.len() {
                2
            } else {
                1
            };
        }
    }
    plots
}

/// Pixel rows of a report's screenshot the README shows (its top: the tables and first plots).
const DOCS_HEIGHT: u32 = 2400;

/// Runs `kleinrock ARGS --out DIR`, then checks `DIR/report.html` with both checks; the
/// screenshot goes to `docs/DOCS_PNG` as well with `KLEINROCK_DOCS_SCREENSHOTS=1`.
fn check_kleinrock_report(
    test: &str,
    args: &[&str],
    expected_plots: Option<usize>,
    docs_png: Option<&str>,
) {
    let dir = Scratch::new(test);
    let out = dir.join("out");
    let output = Command::new(env!("CARGO_BIN_EXE_kleinrock"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .current_dir(repo())
        .output()
        .expect("kleinrock runs");
    assert!(
        output.status.success(),
        "kleinrock {} --out {} failed: {}",
        args.join(" "),
        out.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    let html = out.join("report.html");
    assert!(
        html.is_file(),
        "kleinrock {} --out DIR wrote no DIR/report.html",
        args.join(" ")
    );
    check_html5(&html);
    let screenshot = dir.join(format!("{test}.png"));
    let expected_plots = expected_plots.unwrap_or_else(|| reproduction_plots(&out));
    check_report(&html, expected_plots, &screenshot);
    if let Some(docs_png) = docs_png {
        if std::env::var_os("KLEINROCK_DOCS_SCREENSHOTS").is_some_and(|v| v == "1") {
            let target = repo().join("docs").join(docs_png);
            let shot = std::fs::read(&screenshot).expect("the screenshot was written");
            let top = top_of(&shot, DOCS_HEIGHT).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&target, top).unwrap_or_else(|e| {
                panic!("cannot write the screenshot to {}: {e}", target.display())
            });
            eprintln!("wrote {}", target.display());
        }
    }
}

#[test]
fn a_run_report_shows_every_plot_in_chromium_and_parses_as_html5() {
    check_kleinrock_report(
        "run",
        &["run", "scenarios/examples/reverse_traffic.toml"],
        Some(RUN_REPORT_PLOTS),
        Some("report-run.png"),
    );
}

#[test]
fn a_sweep_report_shows_every_plot_in_chromium_and_parses_as_html5() {
    check_kleinrock_report(
        "sweep",
        &["sweep", "scenarios/demo.toml"],
        Some(SWEEP_REPORT_PLOTS),
        None,
    );
}

#[test]
fn the_reproduce_bbr_report_shows_every_plot_in_chromium_and_parses_as_html5() {
    check_kleinrock_report(
        "reproduce-bbr",
        &["reproduce", "bbr"],
        None,
        Some("report-reproduce.png"),
    );
}
