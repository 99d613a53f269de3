//! Terminal tables: a run's flows and links, and one row per point of a sweep.

use crate::aggregate::{aggregate, flow_metric, LinkAggregate, PointAggregate};
use crate::metrics::{FlowMetrics, Latency, Summary, TunnelMetrics};
use crate::stats::Stat;
use crate::sweep::label;

/// A plain text table with right-aligned numeric columns.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    text_columns: usize,
}

impl Table {
    /// A table with these column titles.
    pub fn new(header: &[&str]) -> Self {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
            text_columns: 1,
        }
    }

    /// Left-aligns every column (for tables of text rather than numbers).
    pub fn all_text(mut self) -> Self {
        self.text_columns = self.header.len();
        self
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// Renders the table; text columns (the first, or all) are left-aligned, numbers right.
    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width = vec![0; cols];
        for r in std::iter::once(&self.header).chain(&self.rows) {
            for (i, c) in r.iter().enumerate().take(cols) {
                width[i] = width[i].max(c.chars().count());
            }
        }
        let line = |r: &Vec<String>| {
            r.iter()
                .enumerate()
                .map(|(i, c)| {
                    if i < self.text_columns {
                        format!("{c:<w$}", w = width[i])
                    } else {
                        format!("{c:>w$}", w = width[i])
                    }
                })
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        };
        let mut out = line(&self.header);
        out.push('\n');
        out.push_str(&"-".repeat(width.iter().sum::<usize>() + 2 * (cols - 1)));
        out.push('\n');
        for r in &self.rows {
            out.push_str(&line(r));
            out.push('\n');
        }
        out
    }
}

/// `v` with `digits` decimals, or `-` when absent.
pub fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// A column of the flow tables: its title, the metric (by its name in [`FLOW_METRICS`]), the
/// conversion to the column's unit, and the decimals shown.
struct Column {
    title: &'static str,
    metric: &'static str,
    unit: fn(f64) -> f64,
    digits: usize,
}

const fn column(
    title: &'static str,
    metric: &'static str,
    unit: fn(f64) -> f64,
    digits: usize,
) -> Column {
    Column {
        title,
        metric,
        unit,
        digits,
    }
}

const FLOW_COLUMNS: [Column; 11] = [
    column("Gput Mbps", "goodput_bps", |v| v / 1e6, 3),
    column("Tput Mbps", "throughput_bps", |v| v / 1e6, 3),
    column("Loss %", "loss_rate", |v| v * 100.0, 3),
    column("RTTavg", "rtt_mean_ms", |v| v, 1),
    column("RTTstd", "rtt_std_ms", |v| v, 1),
    column("RTTp50", "rtt_p50_ms", |v| v, 1),
    column("RTTp95", "rtt_p95_ms", |v| v, 1),
    column("RTTp99", "rtt_p99_ms", |v| v, 1),
    column("OWQD ms", "owqd_mean_ms", |v| v, 1),
    column("LED s", "loss_event_distance_s", |v| v, 2),
    column("FCT s", "completion_s", |v| v, 3),
];

fn flow_header() -> impl Iterator<Item = &'static str> {
    FLOW_COLUMNS.iter().map(|c| c.title)
}

fn flow_cells(f: &FlowMetrics) -> Vec<String> {
    FLOW_COLUMNS
        .iter()
        .map(|c| num(flow_metric(f, c.metric).map(c.unit), c.digits))
        .collect()
}

/// The flows and links of one run.
pub fn run_tables(s: &Summary) -> String {
    let mut header = vec!["flow", "cc"];
    header.extend(flow_header());
    let mut flows = Table::new(&header);
    for f in &s.flows {
        let mut cells = vec![f.name.clone(), f.cc.clone()];
        cells.extend(flow_cells(f));
        flows.row(cells);
    }
    let mut links = Table::new(&[
        "link",
        "util %",
        "queue fill %",
        "max queue pkt",
        "drops",
        "random losses",
    ]);
    for l in &s.links {
        links.row(vec![
            l.name.clone(),
            num(Some(l.utilisation * 100.0), 2),
            num(Some(l.mean_queue_fill * 100.0), 1),
            l.max_queue_packets.to_string(),
            l.dropped_packets.to_string(),
            l.random_losses.to_string(),
        ]);
    }
    let assignments: Vec<(String, String)> = s.point.iter().chain(&s.overrides).cloned().collect();
    let mut out = format!(
        "{}{}  (simulated {:.1} s, measured from {:.1} s, seed {})\n\n",
        s.scenario,
        if assignments.is_empty() {
            String::new()
        } else {
            format!(" [{}]", label(&assignments))
        },
        s.end_s,
        s.warmup_s,
        s.seed
    );
    out.push_str(&flows.render());
    if let Some(j) = s.jain_index {
        out.push_str(&format!("Jain's fairness index over goodput: {j:.4}\n"));
    }
    if let Some(t) = latency_table(s) {
        out.push('\n');
        out.push_str(&t);
    }
    for t in &s.tunnels {
        out.push('\n');
        out.push_str(&tunnel_table(t));
    }
    out.push('\n');
    out.push_str(&links.render());
    for w in &s.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// The per-packet latency of the unreliable flows (DCCP and datagram), with a DCCP flow's send
/// queue; `None` without such flows.
fn latency_table(s: &Summary) -> Option<String> {
    let unreliable: Vec<_> = s
        .flows
        .iter()
        .filter(|f| f.send_queue.is_some() || f.cc == "datagram")
        .collect();
    if unreliable.is_empty() {
        return None;
    }
    let mut t = Table::new(&[
        "flow",
        "latency avg ms",
        "p50",
        "p95",
        "p99",
        "offered pkt",
        "queue drops",
    ]);
    for f in unreliable {
        let l = f.latency;
        let q = f.send_queue;
        t.row(vec![
            f.name.clone(),
            num(l.map(|l| l.mean_ms), 1),
            num(l.map(|l| l.p50_ms), 1),
            num(l.map(|l| l.p95_ms), 1),
            num(l.map(|l| l.p99_ms), 1),
            q.map_or("-".into(), |q| q.offered_packets.to_string()),
            q.map_or("-".into(), |q| q.dropped_packets.to_string()),
        ]);
    }
    Some(t.render())
}

/// A tunnel: one row per path, then the tunnel end to end, and what became of its packets.
fn tunnel_table(t: &TunnelMetrics) -> String {
    let mut table = Table::new(&[
        "tunnel path",
        "cc",
        "rx Mbps",
        "share %",
        "lost pkt",
        "latency avg ms",
        "p95",
        "RTT ms",
    ]);
    let latency = |l: Option<Latency>| [num(l.map(|l| l.mean_ms), 1), num(l.map(|l| l.p95_ms), 1)];
    for p in &t.paths {
        let mut cells = vec![
            format!("{}.{}", t.name, p.name),
            p.cc.clone(),
            num(Some(p.throughput_bps / 1e6), 2),
            num(Some(p.share * 100.0), 1),
            p.lost_packets.to_string(),
        ];
        cells.extend(latency(p.latency));
        cells.push(num(p.rtt_mean_ms, 1));
        table.row(cells);
    }
    let mut cells = vec![format!("{} (after reordering)", t.name), "-".into()];
    cells.extend(["-".to_string(), "-".into(), "-".into()]);
    cells.extend(latency(t.latency));
    cells.push("-".into());
    table.row(cells);
    let c = &t.forward;
    format!(
        "{}{}: {} packets entered, {} forwarded ({} late); dropped: {} at the tunnel queue, \
         {} at subflow send queues, {} in reordering; {} lost on paths, {} duplicates, {} \
         gaps skipped, {} still in the tunnel at the end\n",
        table.render(),
        t.name,
        c.entered,
        c.forwarded,
        c.forwarded_late,
        c.queue_drops,
        c.send_queue_drops,
        c.reorder_drops,
        c.lost_on_paths,
        c.duplicates,
        c.gaps_skipped,
        c.held_at_end
    )
}

/// One row per sweep point (per flow of each point when a scenario has several flows), with
/// the busiest link's utilisation and queue fill and the point's Jain's index.
pub fn sweep_table(summaries: &[&Summary]) -> String {
    let per_flow = summaries.iter().any(|s| s.flows.len() > 1);
    let mut t = point_table(per_flow);
    for s in summaries {
        let busiest = s
            .links
            .iter()
            .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        let flows = s.flows.iter().map(|f| (f.name.clone(), flow_cells(f)));
        let point_cells = [
            num(busiest.map(|l| l.utilisation * 100.0), 2),
            num(busiest.map(|l| l.mean_queue_fill * 100.0), 1),
            num(s.jain_index, 3),
        ];
        point_rows(&mut t, per_flow, point_label(s), flows, point_cells);
    }
    t.render()
}

/// The table of a sweep with replicates: as [`sweep_table`], one row per point (and flow),
/// each cell the mean over the point's runs ± the half-width of its 95 % confidence interval;
/// `runs` holds each point's runs, one per seed of `seeds`, one point after the other.
pub fn replicate_table(runs: &[&Summary], seeds: &[u64]) -> String {
    let per_flow = runs.iter().any(|s| s.flows.len() > 1);
    let mut t = point_table(per_flow);
    for a in aggregate(runs, seeds.len()) {
        let flows = a.flows.iter().map(|f| {
            let cells = FLOW_COLUMNS
                .iter()
                .map(|c| stat_cell(f.metrics.get(c.metric), c.unit, c.digits))
                .collect();
            (f.name.clone(), cells)
        });
        let point_cells = aggregate_point_cells(&a);
        point_rows(
            &mut t,
            per_flow,
            point_label(runs[a.runs[0]]),
            flows,
            point_cells,
        );
    }
    let note = match seeds {
        [seed] => format!("each cell: the point's one run (seed {seed}); an interval needs two"),
        _ => format!(
            "each cell: the mean over the point's runs (seeds {}) ± the half-width of its 95 % \
             confidence interval (Student's t, n - 1 degrees of freedom)",
            seeds_text(seeds)
        ),
    };
    format!("{}{note}\n", t.render())
}

/// The utilisation and queue fill of the link with the highest mean utilisation, and Jain's
/// index, as `mean ± half-width`.
fn aggregate_point_cells(a: &PointAggregate) -> [String; 3] {
    let utilisation = |l: &&LinkAggregate| l.metrics.get("utilisation").map_or(0.0, |s| s.mean);
    let busiest = a
        .links
        .iter()
        .max_by(|x, y| utilisation(x).total_cmp(&utilisation(y)));
    let link_stat = |metric| busiest.and_then(|l| l.metrics.get(metric));
    [
        stat_cell(link_stat("utilisation"), |v| v * 100.0, 2),
        stat_cell(link_stat("mean_queue_fill"), |v| v * 100.0, 1),
        stat_cell(a.jain_index, |v| v, 3),
    ]
}

/// `mean ± half-width` in the column's unit; the mean alone for one run, `-` without any.
fn stat_cell(stat: Option<Stat>, unit: fn(f64) -> f64, digits: usize) -> String {
    let Some(s) = stat else {
        return "-".into();
    };
    match s.half_width() {
        Some(h) => format!("{:.digits$} ± {:.digits$}", unit(s.mean), unit(h)),
        None => format!("{:.digits$}", unit(s.mean)),
    }
}

/// `1 to 5` for consecutive seeds, else the list.
fn seeds_text(seeds: &[u64]) -> String {
    match seeds {
        [first, .., last] if seeds.windows(2).all(|w| w[1] == w[0] + 1) => {
            format!("{first} to {last}")
        }
        _ => {
            let each: Vec<String> = seeds.iter().map(u64::to_string).collect();
            each.join(", ")
        }
    }
}

/// The header of a sweep table: the point, the flow when `per_flow`, the flow columns, the
/// busiest link's utilisation and queue fill, and Jain's index.
fn point_table(per_flow: bool) -> Table {
    let mut header = vec!["point"];
    if per_flow {
        header.push("flow");
    }
    header.extend(flow_header());
    header.extend(["util %", "queue %", "JFI"]);
    let mut t = Table::new(&header);
    if per_flow {
        t.text_columns = 2;
    }
    t
}

/// The sweep assignments of a run, or its scenario's name without any.
fn point_label(s: &Summary) -> String {
    if s.point.is_empty() {
        s.scenario.clone()
    } else {
        label(&s.point)
    }
}

/// The rows of one point: each flow with its cells (the first flow only unless `per_flow`),
/// the point's label and `point_cells` on the first row.
fn point_rows(
    t: &mut Table,
    per_flow: bool,
    point: String,
    flows: impl Iterator<Item = (String, Vec<String>)>,
    point_cells: [String; 3],
) {
    for (i, (name, cells)) in flows.enumerate() {
        let first = i == 0;
        if !first && !per_flow {
            break;
        }
        let mut row = vec![if first { point.clone() } else { String::new() }];
        if per_flow {
            row.push(name);
        }
        row.extend(cells);
        if first {
            row.extend(point_cells.clone());
        }
        t.row(row);
    }
}
