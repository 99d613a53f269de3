//! A reproduction's report (issue 17) overlays the paper's published values on our figures:
//! `reproduce.json` lists them per figure, each names a drawn column of its figure's data, and
//! `report.html` draws each over ours as a hollow diamond (in the colour of the series it
//! compares with) and lists it beside ours. Run for the papers fast enough for a test (CCID5,
//! QUIC-DC, BBR: a few seconds each); the SIAD and FQ-detect values are checked against their
//! data files' structure without running, by unit tests in their modules.

use kleinrock_lab::reproduce::{self, PaperValue, Report};
use serde_json::Value;
use std::path::PathBuf;

/// Runs `paper` and writes its output directory.
fn write(paper: &str) -> (Report, PathBuf) {
    let info = reproduce::find(paper).unwrap_or_else(|| panic!("no paper `{paper}`"));
    let report = (info.run)(&|_| {}).unwrap_or_else(|e| panic!("{e}"));
    let dir = std::env::temp_dir().join(format!(
        "kleinrock-html-reproduce-{paper}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    report.write(&dir).expect("the report is written");
    (report, dir)
}

/// The polyline points of `svg` that outline a diamond (a point and the four 6 pixels away
/// around it, closed), with their stroke colour.
fn diamonds(svg: &str) -> Vec<String> {
    svg.split("<polyline ")
        .skip(1)
        .filter_map(|rest| {
            let attr = |name: &str| {
                let (_, v) = rest.split_once(&format!("{name}=\""))?;
                v.split_once('"').map(|(v, _)| v)
            };
            let points: Vec<(i64, i64)> = attr("points")?
                .split_whitespace()
                .filter_map(|p| p.split_once(','))
                .filter_map(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
                .collect();
            let [p0, p1, p2, p3, p4] = points.as_slice() else {
                return None;
            };
            let d = |p: &(i64, i64)| (p.0 - p0.0, p.1 - p0.1);
            let diamond = (d(p1), d(p2), d(p3), p4) == ((6, 6), (0, 12), (-6, 6), p0);
            diamond.then(|| attr("stroke").unwrap_or("").to_string())
        })
        .collect()
}

/// Every `<figure class="plot">` of the page: its `data-paper` count and its contents.
fn plots(html: &str) -> Vec<(usize, &str)> {
    html.split("<figure class=\"plot\"")
        .skip(1)
        .map(|rest| {
            let (tag, body) = rest.split_once('>').expect("a closed tag");
            let (body, _) = body.split_once("</figure>").expect("a closed figure");
            let count = tag
                .split_once("data-paper=\"")
                .and_then(|(_, v)| v.split_once('"'))
                .map_or(0, |(v, _)| v.parse().expect("a count"));
            (count, body)
        })
        .collect()
}

fn assert_overlaid(paper: &str) {
    let (report, dir) = write(paper);
    let values: Vec<&PaperValue> = report.figures.iter().flat_map(|f| &f.paper).collect();
    assert!(!values.is_empty(), "{paper}: no paper values");
    for f in &report.figures {
        f.check_paper().unwrap_or_else(|e| panic!("{e}"));
    }

    // reproduce.json lists each figure's values as the report holds them.
    let text = std::fs::read_to_string(dir.join("reproduce.json")).expect("reproduce.json");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    for (f, j) in report
        .figures
        .iter()
        .zip(json["figures"].as_array().expect("figures"))
    {
        let listed: Vec<PaperValue> = j["paper"]
            .as_array()
            .expect("a paper list")
            .iter()
            .map(|v| PaperValue::from_json(v).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(listed, f.paper, "{paper} {}", f.id);
    }

    // report.html lists each value with its number, and draws every one: the plots' counts
    // add up to all of them, and each plot has a diamond in a series' colour per value drawn
    // on it, and the black one of the legend's "paper" entry.
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for p in &values {
        let cell = format!(
            "data-key=\"paper:{}:{}\" data-value=\"{:e}\"",
            p.data, p.column, p.y.0
        );
        assert!(html.contains(&cell), "{paper}: `{}` is not listed", p.label);
    }
    let plots = plots(&html);
    let drawn: usize = plots.iter().map(|(n, _)| n).sum();
    assert_eq!(drawn, values.len(), "{paper}: values drawn");
    for (n, svg) in plots.iter().filter(|(n, _)| *n > 0) {
        let colours = diamonds(svg);
        let legend = colours.iter().filter(|c| *c == "#000000").count();
        assert_eq!(
            legend, 1,
            "{paper}: one legend entry per plot with paper values"
        );
        assert!(
            colours.len() - legend >= *n,
            "{paper}: {n} values, {colours:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ccid5s_stated_rates_and_latencies_are_drawn_over_ours() {
    assert_overlaid("ccid5");
}

#[test]
fn quic_dcs_table_cells_are_drawn_over_ours() {
    assert_overlaid("quic-dc");
}

#[test]
fn bbrs_stated_values_are_drawn_over_ours() {
    assert_overlaid("bbr");
}
