//! Replicates: the runs of one sweep point with different seeds, summarised metric by metric
//! as a mean with its 95 % confidence interval ([`Stat`]), and the JSON a sweep reports
//! (`sweep.json`, `kleinrock sweep --json`).

use crate::metrics::{FlowMetrics, LinkMetrics, Summary};
use crate::stats::Stat;
use crate::sweep::SweepPoint;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

/// Reads one metric of a flow or link; `None` where the run has no value.
type Metric<T> = (&'static str, fn(&T) -> Option<f64>);

/// The flow metrics aggregated over replicates, by their names in [`FlowMetrics`].
pub const FLOW_METRICS: [Metric<FlowMetrics>; 13] = [
    ("goodput_bps", |f| Some(f.goodput_bps)),
    ("throughput_bps", |f| Some(f.throughput_bps)),
    ("loss_rate", |f| Some(f.loss_rate)),
    ("rtt_mean_ms", |f| f.rtt_mean_ms),
    ("rtt_std_ms", |f| f.rtt_std_ms),
    ("rtt_p50_ms", |f| f.rtt_p50_ms),
    ("rtt_p95_ms", |f| f.rtt_p95_ms),
    ("rtt_p99_ms", |f| f.rtt_p99_ms),
    ("owqd_mean_ms", |f| f.owqd_mean_ms),
    ("owqd_p95_ms", |f| f.owqd_p95_ms),
    ("loss_events", |f| Some(f.loss_events as f64)),
    ("loss_event_distance_s", |f| f.loss_event_distance_s),
    ("completion_s", |f| f.completion_s),
];

/// Flow metric `name` (one of [`FLOW_METRICS`]) of `f`.
pub fn flow_metric(f: &FlowMetrics, name: &str) -> Option<f64> {
    let (_, value) = FLOW_METRICS.iter().find(|(n, _)| *n == name)?;
    value(f)
}

/// The link metrics aggregated over replicates, by their names in [`LinkMetrics`].
pub const LINK_METRICS: [Metric<LinkMetrics>; 3] = [
    ("utilisation", |l| Some(l.utilisation)),
    ("mean_queue_fill", |l| Some(l.mean_queue_fill)),
    ("dropped_packets", |l| Some(l.dropped_packets as f64)),
];

/// Named statistics, serialised as a JSON object in this order; a metric no run had is `null`.
#[derive(Clone, Debug, PartialEq)]
pub struct Metrics(pub Vec<(&'static str, Option<Stat>)>);

impl Metrics {
    fn of<T>(items: &[&T], metrics: &[Metric<T>]) -> Metrics {
        Metrics(
            metrics
                .iter()
                .map(|(name, value)| {
                    let values: Vec<f64> = items.iter().filter_map(|i| value(i)).collect();
                    (*name, Stat::of(&values))
                })
                .collect(),
        )
    }

    /// The statistics of metric `name`.
    pub fn get(&self, name: &str) -> Option<Stat> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, s)| *s)
    }
}

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, stat) in &self.0 {
            map.serialize_entry(name, stat)?;
        }
        map.end()
    }
}

/// One flow of a point over its replicates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowAggregate {
    /// Flow name.
    pub name: String,
    /// Controller name.
    pub cc: String,
    /// [`FLOW_METRICS`].
    pub metrics: Metrics,
}

/// One link of a point over its replicates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkAggregate {
    /// Link name.
    pub name: String,
    /// [`LINK_METRICS`].
    pub metrics: Metrics,
}

/// One sweep point over its replicates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointAggregate {
    /// The sweep assignments of the point, as in each run's summary.
    pub point: SweepPoint,
    /// Its runs: indices into the sweep's runs (and `point-<i>` directories).
    pub runs: Vec<usize>,
    /// Per flow, in the scenario's order.
    pub flows: Vec<FlowAggregate>,
    /// Per link, in the scenario's order.
    pub links: Vec<LinkAggregate>,
    /// Jain's fairness index; `null` when no run had one.
    pub jain_index: Option<Stat>,
}

/// The aggregates of `runs`, which hold `per_point` consecutive runs (one per seed) of each
/// sweep point.
pub fn aggregate(runs: &[&Summary], per_point: usize) -> Vec<PointAggregate> {
    runs.chunks(per_point.max(1))
        .enumerate()
        .map(|(i, chunk)| point_aggregate(chunk, i * per_point))
        .collect()
}

fn point_aggregate(runs: &[&Summary], first: usize) -> PointAggregate {
    let flows = runs[0].flows.iter().enumerate().map(|(i, f)| {
        let each: Vec<&FlowMetrics> = runs.iter().map(|r| &r.flows[i]).collect();
        FlowAggregate {
            name: f.name.clone(),
            cc: f.cc.clone(),
            metrics: Metrics::of(&each, &FLOW_METRICS),
        }
    });
    let links = runs[0].links.iter().enumerate().map(|(i, l)| {
        let each: Vec<&LinkMetrics> = runs.iter().map(|r| &r.links[i]).collect();
        LinkAggregate {
            name: l.name.clone(),
            metrics: Metrics::of(&each, &LINK_METRICS),
        }
    });
    let jain: Vec<f64> = runs.iter().filter_map(|r| r.jain_index).collect();
    PointAggregate {
        point: runs[0].point.clone(),
        runs: (first..first + runs.len()).collect(),
        flows: flows.collect(),
        links: links.collect(),
        jain_index: Stat::of(&jain),
    }
}

/// What a sweep reports as JSON.
#[derive(Serialize)]
#[serde(untagged)]
pub enum SweepReport<'a> {
    /// Without `seeds` or `replicates`: one summary per point, a JSON list.
    Runs(Vec<&'a Summary>),
    /// With them: an object of the seeds, every run, and the aggregates per point.
    Replicated {
        /// The seeds each point ran with.
        seeds: &'a [u64],
        /// Every run, point by point and within a point seed by seed.
        runs: Vec<&'a Summary>,
        /// Per point.
        aggregates: Vec<PointAggregate>,
    },
}

/// The report of a sweep's `runs`; `seeds` are those of its replicates, if it has any.
pub fn sweep_report<'a>(runs: Vec<&'a Summary>, seeds: Option<&'a [u64]>) -> SweepReport<'a> {
    match seeds {
        None => SweepReport::Runs(runs),
        Some(seeds) => SweepReport::Replicated {
            seeds,
            aggregates: aggregate(&runs, seeds.len()),
            runs,
        },
    }
}
