//! Metrics, each defined once here. All are taken over the measurement window (after
//! `warmup`); a flow's *active time* is the part of the window between its start and the
//! earliest of its stop, its completion and the end of the run.
//!
//! A flow entry with short-flow arrivals has one row for all its transfers: byte and packet
//! counts are summed and RTT and queuing-delay samples pooled over them; its active time runs
//! from its first arrival to the end of its last transfer once no more arrive (else to the
//! end of the run); its completion time is the mean over the transfers completed in the window.

use crate::scenario::{FlowTransport, Scenario};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::ControllerState;
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::tunnel::TunnelCounters;
use kleinrock_sim::{EventSpan, LinkStats, SimResult, TunnelStats};
use serde::Serialize;

/// Metrics of one flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowMetrics {
    /// Flow name.
    pub name: String,
    /// Controller name (`datagram` for unresponsive flows).
    pub cc: String,
    /// Active time in the window, s (see the module doc); zero for a flow that finished before
    /// the window opened.
    pub active_s: f64,
    /// Goodput: application bytes delivered to the receiver in order, each byte once, per
    /// second of active time; bits per second.
    pub goodput_bps: f64,
    /// Throughput: payload bytes sent, retransmissions included, per second of active time;
    /// bits per second.
    pub throughput_bps: f64,
    /// Loss rate: packets the sender declared lost over packets sent (datagram flows: packets
    /// not received over packets sent).
    pub loss_rate: f64,
    /// Mean of the RTT samples (one per ACK that newly acknowledges the largest packet,
    /// RFC 9002 latest_rtt), ms.
    pub rtt_mean_ms: Option<f64>,
    /// Population standard deviation of the RTT samples, ms.
    pub rtt_std_ms: Option<f64>,
    /// Median RTT sample, ms.
    pub rtt_p50_ms: Option<f64>,
    /// 95th percentile RTT sample, ms.
    pub rtt_p95_ms: Option<f64>,
    /// 99th percentile RTT sample, ms.
    pub rtt_p99_ms: Option<f64>,
    /// One-way queuing delay: each data packet's one-way delay minus the smallest one-way
    /// delay of the flow so far; mean, ms.
    pub owqd_mean_ms: Option<f64>,
    /// 95th percentile one-way queuing delay, ms.
    pub owqd_p95_ms: Option<f64>,
    /// Congestion events: loss-detection passes whose newest lost packet was sent after the
    /// previous event began (one per RFC 9002 recovery period).
    pub loss_events: u64,
    /// Loss-event distance: mean time between consecutive congestion events, s.
    pub loss_event_distance_s: Option<f64>,
    /// Flow completion time of a sized transfer: from its start to the arrival of its last
    /// byte, s; for short-flow arrivals, the mean over the transfers whose last byte arrived
    /// in the window.
    pub completion_s: Option<f64>,
    /// Short-flow arrivals: transfers whose last byte arrived in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transfers_completed: Option<u64>,
    /// `fq_switch`: what its fair-queuing probe last decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fq_detection: Option<FqDetection>,
    /// Application bytes delivered in the window.
    pub delivered_bytes: u64,
    /// Payload bytes retransmitted in the window.
    pub retransmitted_bytes: u64,
    /// Per-packet latency of the data packets sent in the window, from their send (for DCCP,
    /// from their application's hand-over) to their arrival; `None` without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// DCCP: what the application offered and what its full send queue dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_queue: Option<SendQueue>,
}

/// Mean and percentiles of per-packet latency, ms (percentiles within 1/128 relative error).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Latency {
    /// Mean, ms.
    pub mean_ms: f64,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

impl Latency {
    /// The latency metrics of histogram `h` (ns); `None` when it is empty.
    pub fn of(h: &Histogram) -> Option<Latency> {
        let ms = |q: f64| h.quantile(q).map(|v| v / 1e6);
        Some(Latency {
            mean_ms: h.mean()? / 1e6,
            p50_ms: ms(0.5)?,
            p95_ms: ms(0.95)?,
            p99_ms: ms(0.99)?,
        })
    }
}

/// A DCCP flow's send queue over the window: packets the application handed over, and those
/// that found the queue full and were dropped at the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SendQueue {
    /// Packets the application offered.
    pub offered_packets: u64,
    /// Of those, packets dropped at the full send queue.
    pub dropped_packets: u64,
}

/// What an `fq_switch` flow's fair-queuing probe decided (its last decision).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FqDetection {
    /// Whether the bottleneck was taken to be a fair queue.
    pub fair_queuing: bool,
    /// Eq. (1) of the deciding round; absent when the probe gave up.
    pub loss_ratio: Option<f64>,
    /// Fraction of the slow leg's (subflow 1's) bytes lost in the deciding round.
    pub slow_leg_loss: f64,
    /// Fraction of the fast leg's (subflow 2's) bytes lost in the deciding round.
    pub fast_leg_loss: f64,
    /// Decisions over the run (more than one with re-detection).
    pub detections: u64,
}

impl FqDetection {
    /// The decision in a controller's final state, if it made one.
    pub fn from_state(state: &ControllerState) -> Option<FqDetection> {
        use kleinrock_cc::algorithms::fq_switch::{
            DETECTIONS, FAST_LEG_LOSS, FQ_DETECTED, LOSS_RATIO, SLOW_LEG_LOSS,
        };
        let value = |key: &str| {
            state
                .values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
                .filter(|v| !v.is_nan())
        };
        Some(FqDetection {
            fair_queuing: value(FQ_DETECTED)? > 0.5,
            loss_ratio: value(LOSS_RATIO),
            slow_leg_loss: value(SLOW_LEG_LOSS)?,
            fast_leg_loss: value(FAST_LEG_LOSS)?,
            detections: value(DETECTIONS)? as u64,
        })
    }
}

/// Metrics of one link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkMetrics {
    /// Link name.
    pub name: String,
    /// Utilisation: bytes transmitted over what the link's rate (its schedule included) could
    /// have transmitted in the window.
    pub utilisation: f64,
    /// Mean queue fill: time average of the waiting packets (or bytes, for a byte-sized buffer)
    /// over the buffer size.
    pub mean_queue_fill: f64,
    /// Most packets waiting at once, in the window.
    pub max_queue_packets: u64,
    /// Fewest packets waiting after a transmission, in the window.
    pub min_queue_packets: u64,
    /// Packets dropped because the buffer was full, in the window.
    pub dropped_packets: u64,
    /// Packets lost to the random loss model, in the window.
    pub random_losses: u64,
    /// Packets dropped by the token-bucket policer, in the window.
    pub policed_packets: u64,
}

/// What became of the packets that entered one direction of a tunnel, over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TunnelCounts {
    /// Packets that entered.
    pub entered: u64,
    /// Forwarded by the far end, once each.
    pub forwarded: u64,
    /// Of those, forwarded after a later packet.
    pub forwarded_late: u64,
    /// Dropped at the tunnel's full queue.
    pub queue_drops: u64,
    /// Copies refused by a subflow's full send queue.
    pub send_queue_drops: u64,
    /// Copies lost on their path.
    pub lost_on_paths: u64,
    /// Copies dropped by the reordering stage as late.
    pub reorder_drops: u64,
    /// Copies dropped as duplicates (the redundant scheduler's).
    pub duplicates: u64,
    /// Sequence numbers the reordering stage stopped waiting for.
    pub gaps_skipped: u64,
    /// Most packets the reordering buffer held.
    pub most_buffered: u64,
    /// Packets none of whose copies was forwarded.
    pub lost: u64,
    /// Packets the tunnel still held at the end of the run.
    pub held_at_end: u64,
}

impl From<TunnelCounters> for TunnelCounts {
    fn from(c: TunnelCounters) -> Self {
        TunnelCounts {
            entered: c.entered,
            forwarded: c.forwarded,
            forwarded_late: c.forwarded_late,
            queue_drops: c.queue_drops,
            send_queue_drops: c.send_queue_drops,
            lost_on_paths: c.lost_on_paths,
            reorder_drops: c.reorder_drops,
            duplicates: c.duplicates,
            gaps_skipped: c.gaps_skipped,
            most_buffered: c.most_buffered,
            lost: c.lost,
            held_at_end: c.held,
        }
    }
}

/// Metrics of one path of a tunnel: its subflow towards the tunnel's far end, over the window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PathMetrics {
    /// Path name.
    pub name: String,
    /// Its CCID.
    pub cc: String,
    /// Bits per second of carried packets (their own bytes) received at the far end.
    pub throughput_bps: f64,
    /// Its part of what every path of the tunnel received, 0 to 1.
    pub share: f64,
    /// Tunnel packets sent on it.
    pub sent_packets: u64,
    /// Of those, not received at the far end.
    pub lost_packets: u64,
    /// Mean RTT of its subflow, ms.
    pub rtt_mean_ms: Option<f64>,
    /// Latency from the tunnel's entry to the path's far end, before reordering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// Congestion events of its subflow.
    pub loss_events: u64,
}

/// Metrics of one multipath tunnel.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TunnelMetrics {
    /// Tunnel name.
    pub name: String,
    /// Latency from the tunnel's entry to forwarding at the far end, after reordering, of the
    /// packets that entered in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    /// What became of the packets that entered towards the far end.
    pub forward: TunnelCounts,
    /// The same for the direction back (the carried flows' ACKs).
    pub backward: TunnelCounts,
    /// Per path.
    pub paths: Vec<PathMetrics>,
}

/// The metrics of tunnel `t` of `scenario`.
fn tunnel_metrics(scenario: &Scenario, i: usize, t: &TunnelStats) -> TunnelMetrics {
    let plan = &scenario.tunnels[i];
    let total: u64 = t.paths.iter().map(|p| p[0].counters.bytes_delivered).sum();
    let paths = t
        .paths
        .iter()
        .zip(&plan.paths)
        .map(|([s, _], p)| {
            let c = &s.counters;
            PathMetrics {
                name: s.name.clone(),
                cc: p.cc.clone(),
                throughput_bps: per_second(c.bytes_delivered, s.active_ns),
                share: if total == 0 {
                    0.0
                } else {
                    c.bytes_delivered as f64 / total as f64
                },
                sent_packets: c.packets_sent,
                lost_packets: c.packets_lost,
                rtt_mean_ms: ms(s.rtt.mean()),
                latency: Latency::of(&s.latency),
                loss_events: c.loss_events,
            }
        })
        .collect();
    TunnelMetrics {
        name: t.name.clone(),
        latency: Latency::of(&t.latency[0]),
        forward: t.counters[0].into(),
        backward: t.counters[1].into(),
        paths,
    }
}

/// Everything a run reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    /// Scenario name.
    pub scenario: String,
    /// Sweep assignments of this point.
    pub point: Vec<(String, String)>,
    /// `--set` overrides applied to the scenario file.
    pub overrides: Vec<(String, String)>,
    /// Seed.
    pub seed: u64,
    /// Simulated time at the end of the run, s.
    pub end_s: f64,
    /// Start of the measurement window, s.
    pub warmup_s: f64,
    /// Per flow.
    pub flows: Vec<FlowMetrics>,
    /// Per link.
    pub links: Vec<LinkMetrics>,
    /// Per multipath tunnel.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tunnels: Vec<TunnelMetrics>,
    /// Jain's fairness index (sum x)^2 / (n sum x^2) over the goodputs of the flows that have
    /// a controller and were active in the window (short-flow arrivals excluded); `None` with
    /// fewer than two such flows.
    pub jain_index: Option<f64>,
    /// What the reader should know about how the run went (e.g. a controller that fell back
    /// to another signal); none for a simulated run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// Jain's fairness index of `xs`; `None` for fewer than two values or all zero.
pub fn jain_index(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let sum_sq: f64 = xs.iter().map(|x| x * x).sum();
    (xs.len() >= 2 && sum_sq > 0.0).then(|| sum * sum / (xs.len() as f64 * sum_sq))
}

fn ms(ns: Option<f64>) -> Option<f64> {
    ns.map(|v| v / 1e6)
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn per_second(bytes: u64, active_ns: u64) -> f64 {
    if active_ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / secs(active_ns)
    }
}

fn mean_gap_s(events: &EventSpan) -> Option<f64> {
    (events.count >= 2).then(|| secs(events.last_ns - events.first_ns) / (events.count - 1) as f64)
}

/// The RTT fields of [`FlowMetrics`] (mean, std, p50, p95, p99, ms) from a histogram of ns.
pub fn rtt_fields(h: &Histogram) -> [Option<f64>; 5] {
    [
        ms(h.mean()),
        ms(h.std()),
        ms(h.quantile(0.5)),
        ms(h.quantile(0.95)),
        ms(h.quantile(0.99)),
    ]
}

/// The metrics of one link from its measured statistics (simulated or emulated).
pub fn link_metrics(l: &LinkStats) -> LinkMetrics {
    LinkMetrics {
        name: l.name.clone(),
        utilisation: if l.counters.capacity_bytes > 0.0 {
            l.counters.busy_capacity_bytes / l.counters.capacity_bytes
        } else {
            0.0
        },
        mean_queue_fill: if l.window_ns > 0 {
            l.counters.fill_integral / l.window_ns as f64
        } else {
            0.0
        },
        max_queue_packets: l.max_queue_packets,
        min_queue_packets: l.min_queue_packets,
        dropped_packets: l.counters.packets_dropped,
        random_losses: l.counters.packets_lost_random,
        policed_packets: l.counters.packets_policed,
    }
}

/// Computes the metrics of a run of `scenario`.
pub fn summarize(scenario: &Scenario, result: &SimResult) -> Summary {
    let flows: Vec<FlowMetrics> = scenario
        .flows
        .iter()
        .zip(&result.flows)
        .map(|(plan, s)| {
            let c = &s.counters;
            let [rtt_mean_ms, rtt_std_ms, rtt_p50_ms, rtt_p95_ms, rtt_p99_ms] = rtt_fields(&s.rtt);
            FlowMetrics {
                name: s.name.clone(),
                cc: plan.cc_name().to_string(),
                active_s: secs(s.active_ns),
                goodput_bps: per_second(c.bytes_delivered, s.active_ns),
                throughput_bps: per_second(c.bytes_sent, s.active_ns),
                loss_rate: if c.packets_sent == 0 {
                    0.0
                } else {
                    c.packets_lost as f64 / c.packets_sent as f64
                },
                rtt_mean_ms,
                rtt_std_ms,
                rtt_p50_ms,
                rtt_p95_ms,
                rtt_p99_ms,
                owqd_mean_ms: ms(s.queuing_delay.mean()),
                owqd_p95_ms: ms(s.queuing_delay.quantile(0.95)),
                loss_events: c.loss_events,
                loss_event_distance_s: mean_gap_s(&s.loss_events),
                transfers_completed: s.transfers.as_ref().map(|t| t.completed),
                fq_detection: FqDetection::from_state(&s.final_state),
                completion_s: match &s.transfers {
                    Some(t) => t.completion_times.mean().map(|ns| ns / 1e9),
                    None => s
                        .completion_ns
                        .map(|t| secs(t.saturating_sub(duration_nanos(plan.start)))),
                },
                delivered_bytes: c.bytes_delivered,
                retransmitted_bytes: c.bytes_retransmitted,
                latency: Latency::of(&s.latency),
                send_queue: matches!(plan.transport, FlowTransport::Dccp { .. }).then_some(
                    SendQueue {
                        offered_packets: c.app_packets,
                        dropped_packets: c.send_queue_drops,
                    },
                ),
            }
        })
        .collect();
    let links = result.links.iter().map(link_metrics).collect();
    let goodputs: Vec<f64> = flows
        .iter()
        .zip(&scenario.flows)
        .filter(|(f, plan)| f.cc != "datagram" && plan.arrivals.is_none() && f.active_s > 0.0)
        .map(|(f, _)| f.goodput_bps)
        .collect();
    Summary {
        scenario: scenario.name.clone(),
        point: scenario.point.clone(),
        overrides: scenario.overrides.clone(),
        seed: scenario.seed,
        end_s: secs(result.end_ns),
        warmup_s: secs(result.warmup_ns),
        flows,
        links,
        tunnels: result
            .tunnels
            .iter()
            .enumerate()
            .map(|(i, t)| tunnel_metrics(scenario, i, t))
            .collect(),
        jain_index: jain_index(&goodputs),
        warnings: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain_index(&[1.0]), None);
    }
}
