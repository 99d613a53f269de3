//! Figure 13 of the TCP SIAD paper (§IV-C) and the experiment described after it: one bulk
//! flow on 10 Mbps / 100 ms RTT with a 0.5 BDP drop-tail buffer, 600 s (20 s discarded).
//!
//! - Random loss (`scenarios/siad/fig13_random_loss.toml`): 0.2 to 0.5 % of the packets
//!   arriving at the bottleneck are lost whatever the queue; the link's utilisation per
//!   controller and loss rate.
//! - Short-flow cross traffic (`scenarios/siad/fig13_short_flows.toml`): 300 KB transfers
//!   arriving every 2-3 s (uniform), each a new Cubic connection; the link's utilisation (the
//!   bulk flow's and the short flows' bytes together) and the bulk flow's goodput. The paper
//!   says "link utilization" without saying whether the short flows count; we count them and
//!   show the bulk flow's goodput beside it.

use super::super::{column_name, fmt, run_embedded, At, Claim, Figure, PaperValue, Progress};
use super::{Grid, CUBIC, NEWRENO, SIAD20};
use crate::metrics::Summary;
use crate::report::Table;

const FIG13: &str = include_str!("../../../../../scenarios/siad/fig13_random_loss.toml");
const SHORT_FLOWS: &str = include_str!("../../../../../scenarios/siad/fig13_short_flows.toml");

/// Acceptance bounds (issue 6, from the paper's 84.96-94.47 % for SIAD and 15.25-24.93 % and
/// 17.46-31.6 % for NewReno and Cubic): utilisation %.
const SIAD_AT_LEAST: f64 = 80.0;
const LOSS_BASED_AT_MOST: f64 = 40.0;

/// The paper's link utilisation under 0.2-0.5 % random loss, lowest and highest, %.
const PAPER_RANDOM_LOSS: [(&str, f64, f64); 4] = [
    (SIAD20, 84.96, 94.47),
    (NEWRENO, 15.25, 24.93),
    (CUBIC, 17.46, 31.6),
    ("H-TCP", 25.58, 47.29),
];

/// The x of Figure 13's wide CSV: `random_loss_pct` from a swept loss probability.
const LOSS_PCT: (&str, fn(&str) -> Option<f64>) = ("random_loss_pct", |v| {
    v.parse::<f64>().ok().map(|p| p * 100.0)
});

/// The header of the short-flow experiment's data.
const SHORT_FLOWS_HEADER: &str =
    "cca,link_utilisation_pct,bulk_goodput_mbps,short_transfers,short_fct_s\n";

/// The paper's link utilisation with short-flow cross traffic, %.
const PAPER_SHORT_FLOWS: [(&str, f64); 3] = [(SIAD20, 93.64), (CUBIC, 89.69), (NEWRENO, 59.37)];

fn util(s: &Summary) -> f64 {
    s.links[0].utilisation * 100.0
}

/// Lowest and highest utilisation of `cc` over the loss rates.
fn util_range(grid: &Grid, cc: &str) -> Result<(f64, f64), String> {
    let u: Vec<f64> = grid
        .values
        .iter()
        .map(|v| grid.get(cc, v).map(util))
        .collect::<Result<_, _>>()?;
    let lo = u.iter().cloned().fold(f64::MAX, f64::min);
    let hi = u.iter().cloned().fold(f64::MIN, f64::max);
    Ok((lo, hi))
}

/// Figure 13: utilisation under random loss.
pub fn fig13(progress: Progress) -> Result<Figure, String> {
    let (_, outs) = run_embedded("scenarios/siad/fig13_random_loss.toml", FIG13, progress)?;
    let grid = Grid::new(&outs, "links.0.loss")?;
    let table = grid.tables(&[
        ("utilisation %", |s| fmt(util(s), 1)),
        ("flow loss %", |s| fmt(s.flows[0].loss_rate * 100.0, 2)),
    ])?;
    let csv = grid.csv(
        "random_loss",
        &[
            ("utilisation_pct", |s| util(s).to_string()),
            ("flow_loss_pct", |s| {
                (s.flows[0].loss_rate * 100.0).to_string()
            }),
            ("random_losses", |s| s.links[0].random_losses.to_string()),
            ("dropped_packets", |s| {
                s.links[0].dropped_packets.to_string()
            }),
        ],
    );
    let siad = util_range(&grid, SIAD20)?;
    let reno = util_range(&grid, NEWRENO)?;
    let cubic = util_range(&grid, CUBIC)?;
    let range = |(lo, hi): (f64, f64)| format!("{} % to {} %", fmt(lo, 1), fmt(hi, 1));
    Ok(Figure {
        id: "Fig. 13".into(),
        title: "one flow, 10 Mbps / 100 ms RTT, 0.5 BDP drop-tail buffer, random loss of \
                0.2-0.5 % at the bottleneck, unpaced with delayed ACKs, 600 s (20 s discarded): the link's \
                utilisation and the flow's loss rate (random and congestion losses) per \
                controller and random-loss rate"
            .to_string()
            + &format!(" (paper: {})", random_loss_text()),
        table,
        claims: vec![
            Claim::new(
                "siad20_robust_to_random_loss",
                &format!(
                    "SIAD (Num_RTT 20) keeps the link well used under random loss thanks to \
                     Adaptive Decrease (criterion: utilisation >= {SIAD_AT_LEAST} % at every \
                     loss rate 0.2-0.5 %)"
                ),
                range(siad),
                siad.0 >= SIAD_AT_LEAST,
            ),
            Claim::new(
                "reno_cubic_starved_by_random_loss",
                &format!(
                    "NewReno and Cubic cannot use the link under random loss (criterion: \
                     utilisation <= {LOSS_BASED_AT_MOST} % at every loss rate 0.2-0.5 %)"
                ),
                format!("NewReno {}; Cubic {}", range(reno), range(cubic)),
                reno.1 <= LOSS_BASED_AT_MOST && cubic.1 <= LOSS_BASED_AT_MOST,
            ),
        ],
        data: vec![
            ("fig13_random_loss.csv".into(), csv),
            (
                "fig13_utilisation.csv".into(),
                grid.wide(LOSS_PCT, "utilisation_pct", util)?,
            ),
        ],
        paper: random_loss_paper(),
    })
}

/// The paper's utilisation ranges as text, for the figure's title.
fn random_loss_text() -> String {
    let ranges: Vec<String> = PAPER_RANDOM_LOSS
        .iter()
        .map(|(cc, lo, hi)| format!("{cc} {lo}-{hi} %"))
        .collect();
    ranges.join(", ")
}

/// The paper's utilisation ranges, each over the random-loss rates 0.2-0.5 %.
fn random_loss_paper() -> Vec<PaperValue> {
    PAPER_RANDOM_LOSS
        .iter()
        .map(|&(cc, lo, hi)| {
            let column = column_name(cc, "utilisation_pct");
            let at = At::X(0.2, 0.5);
            let label = "§IV-C, Fig. 13: utilisation under 0.2-0.5 % random loss";
            PaperValue::range("fig13_utilisation.csv", &column, at, (lo, hi), label)
        })
        .collect()
}

/// The experiment after Figure 13: one bulk flow beside short-flow cross traffic.
pub fn short_flows(progress: Progress) -> Result<Figure, String> {
    let (_, outs) = run_embedded(
        "scenarios/siad/fig13_short_flows.toml",
        SHORT_FLOWS,
        progress,
    )?;
    let mut t = Table::new(&[
        "bulk flow",
        "link util %",
        "paper %",
        "bulk goodput Mbps",
        "short transfers",
        "short FCT s",
    ]);
    let mut csv = String::from(SHORT_FLOWS_HEADER);
    let mut utils = Vec::new();
    for o in &outs {
        let s = &o.summary;
        let (bulk, short) = (&s.flows[0], &s.flows[1]);
        let paper = PAPER_SHORT_FLOWS.iter().find(|(cc, _)| *cc == bulk.name);
        let transfers = short.transfers_completed.unwrap_or(0);
        let fct = short.completion_s.map_or(String::new(), |f| f.to_string());
        t.row(vec![
            bulk.name.clone(),
            fmt(util(s), 1),
            paper.map_or("-".into(), |p| fmt(p.1, 2)),
            fmt(bulk.goodput_bps / 1e6, 2),
            transfers.to_string(),
            short.completion_s.map_or("-".into(), |f| fmt(f, 2)),
        ]);
        csv.push_str(&format!(
            "{},{},{},{transfers},{fct}\n",
            bulk.name,
            util(s),
            bulk.goodput_bps / 1e6
        ));
        utils.push((bulk.name.clone(), util(s)));
    }
    let mut table = t.render();
    table.push('\n');
    let of = |cc: &str| {
        utils
            .iter()
            .find(|(n, _)| n == cc)
            .map(|u| u.1)
            .ok_or_else(|| format!("no run with a {cc} bulk flow"))
    };
    let (siad, cubic, reno) = (of(SIAD20)?, of(CUBIC)?, of(NEWRENO)?);
    Ok(Figure {
        id: "Fig. 13 (text)".into(),
        title: "one bulk flow beside short-flow cross traffic (300 KB Cubic transfers, \
                inter-arrival uniform in 2-3 s), 10 Mbps / 100 ms RTT, 0.5 BDP drop-tail \
                buffer, unpaced with delayed ACKs, 600 s (20 s discarded): the link's utilisation (both), the \
                bulk flow's goodput, and the short transfers completed and their mean \
                completion time"
            .into(),
        table,
        claims: vec![Claim::new(
            "siad20_short_flows_ordering",
            "With short-flow cross traffic SIAD (Num_RTT 20) uses the link best, NewReno worst \
             (paper: 93.64 %, Cubic 89.69 %, NewReno 59.37 %; criterion: link utilisation \
             SIAD > Cubic > NewReno)",
            format!(
                "SIAD {} %, Cubic {} %, NewReno {} %",
                fmt(siad, 1),
                fmt(cubic, 1),
                fmt(reno, 1)
            ),
            siad > cubic && cubic > reno,
        )],
        data: vec![("fig13_short_flows.csv".into(), csv)],
        paper: short_flows_paper(),
    })
}

/// The paper's link utilisation with short-flow cross traffic, on the row of its bulk flow.
fn short_flows_paper() -> Vec<PaperValue> {
    PAPER_SHORT_FLOWS
        .iter()
        .map(|&(cc, util)| {
            let at = At::Row(cc.into());
            let label = "§IV-C: link utilisation with short-flow cross traffic";
            PaperValue::new(
                "fig13_short_flows.csv",
                "link_utilisation_pct",
                at,
                util,
                label,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::super::structure::{check, first_flows, rows_csv};
    use super::super::super::{columns, wide_csv};
    use super::*;

    #[test]
    fn the_papers_values_name_drawn_columns_and_rows_of_our_data() {
        let ccs = first_flows(FIG13);
        let header = wide_csv(LOSS_PCT.0, &columns(&ccs, "utilisation_pct"), &[]);
        let data = vec![("fig13_utilisation.csv", header)];
        check("Fig. 13", data, random_loss_paper());
        let csv = rows_csv(SHORT_FLOWS_HEADER, &first_flows(SHORT_FLOWS));
        let data = vec![("fig13_short_flows.csv", csv)];
        check("Fig. 13 (text)", data, short_flows_paper());
    }
}
