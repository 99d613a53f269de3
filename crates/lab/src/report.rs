//! Terminal tables: a run's flows and links, and one row per point of a sweep.

use crate::metrics::{FlowMetrics, Latency, Summary, TunnelMetrics};
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

fn flow_cells(f: &FlowMetrics) -> Vec<String> {
    vec![
        num(Some(f.goodput_bps / 1e6), 3),
        num(Some(f.throughput_bps / 1e6), 3),
        num(Some(f.loss_rate * 100.0), 3),
        num(f.rtt_mean_ms, 1),
        num(f.rtt_std_ms, 1),
        num(f.rtt_p50_ms, 1),
        num(f.rtt_p95_ms, 1),
        num(f.rtt_p99_ms, 1),
        num(f.owqd_mean_ms, 1),
        num(f.loss_event_distance_s, 2),
        num(f.completion_s, 3),
    ]
}

const FLOW_HEADER: [&str; 11] = [
    "Gput Mbps",
    "Tput Mbps",
    "Loss %",
    "RTTavg",
    "RTTstd",
    "RTTp50",
    "RTTp95",
    "RTTp99",
    "OWQD ms",
    "LED s",
    "FCT s",
];

/// The flows and links of one run.
pub fn run_tables(s: &Summary) -> String {
    let mut header = vec!["flow", "cc"];
    header.extend(FLOW_HEADER);
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
pub fn sweep_table(summaries: &[Summary]) -> String {
    let per_flow = summaries.iter().any(|s| s.flows.len() > 1);
    let mut header = vec!["point"];
    if per_flow {
        header.push("flow");
    }
    header.extend(FLOW_HEADER);
    header.extend(["util %", "queue %", "JFI"]);
    let mut t = Table::new(&header);
    if per_flow {
        t.text_columns = 2;
    }
    for s in summaries {
        let point = if s.point.is_empty() {
            s.scenario.clone()
        } else {
            label(&s.point)
        };
        let busiest = s
            .links
            .iter()
            .max_by(|a, b| a.utilisation.total_cmp(&b.utilisation));
        for (i, f) in s.flows.iter().enumerate() {
            let first = i == 0;
            let mut cells = vec![if first { point.clone() } else { String::new() }];
            if per_flow {
                cells.push(f.name.clone());
            } else if !first {
                break;
            }
            cells.extend(flow_cells(f));
            if first {
                cells.push(num(busiest.map(|l| l.utilisation * 100.0), 2));
                cells.push(num(busiest.map(|l| l.mean_queue_fill * 100.0), 1));
                cells.push(num(s.jain_index, 3));
            }
            t.row(cells);
        }
    }
    t.render()
}
