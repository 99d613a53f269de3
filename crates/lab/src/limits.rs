//! The range of every numeric scenario field, and the words errors use to say what is
//! accepted. The ranges keep any accepted scenario within a machine's memory: no single value
//! can ask for more than a few hundred megabytes, and the counts that multiply (flows, trace
//! rows, sweep points, transfers) are bounded where they are set. README "Limits" lists them.

use kleinrock_cc::Rate;
use std::time::Duration;

/// Longest simulated duration, and latest time of any event in a scenario: 10 days.
pub const MAX_TIME: Duration = Duration::from_secs(10 * 86_400);
/// Largest link delay or jitter: 10 s.
pub const MAX_DELAY: Duration = Duration::from_secs(10);
/// Largest `bdp_rtt`: 60 s.
pub const MAX_BDP_RTT: Duration = Duration::from_secs(60);
/// Shortest trace interval: 1 µs.
pub const MIN_TRACE_INTERVAL: Duration = Duration::from_micros(1);
/// Shortest time between two arrivals of a short-flow process: 1 µs.
pub const MIN_INTERARRIVAL: Duration = Duration::from_micros(1);
/// Slowest rate of a link, a policer, a host or a constant-rate application: 1 kbit/s (a
/// full-size packet then takes 12 s).
pub const MIN_RATE_BPS: f64 = 1e3;
/// Fastest such rate: 1 Tbit/s.
pub const MAX_RATE_BPS: f64 = 1e12;
/// Most links in a scenario.
pub const MAX_LINKS: usize = 1_000;
/// Most flows in a scenario, after `count` copies.
pub const MAX_FLOWS: usize = 10_000;
/// Most tunnels of a scenario.
pub const MAX_TUNNELS: usize = 1_000;
/// Largest buffer in packets (and a fair queue's per-flow limit).
pub const MAX_BUFFER_PACKETS: u64 = 1_000_000;
/// Largest buffer, policer burst or fair-queue quantum in bytes: 1 GB.
pub const MAX_BUFFER_BYTES: u64 = 1_000_000_000;
/// Largest fair-queue quantum: 1 MB.
pub const MAX_QUANTUM_BYTES: u64 = 1_000_000;
/// Largest BDP multiple of a buffer.
pub const MAX_BDP_MULTIPLE: f64 = 1_000.0;
/// Largest transfer size: 1 PB.
pub const MAX_SIZE_BYTES: u64 = 1_000_000_000_000_000;
/// Most transfers of one short-flow arrival process (also the bound of one without `count`).
pub const MAX_TRANSFERS: u64 = kleinrock_sim::arrivals::MAX_TRANSFERS;
/// Smallest `packet_size`: 2 bytes (a header of 1 and a payload of 1).
pub const MIN_PACKET_BYTES: u64 = 2;
/// Largest DCCP send queue (`tx_qlen`), packets.
pub const MAX_TX_QLEN: u64 = 10_000;
/// Largest initial DCCP Ack Ratio.
pub const MAX_ACK_RATIO: u64 = 10_000;
/// Largest `max_in_flight`, packets (the default is
/// [`kleinrock_sim::config::DEFAULT_MAX_IN_FLIGHT`]).
pub const MAX_IN_FLIGHT: u64 = 1 << 24;
/// Most trace rows over all flows and links: duration / trace_interval x (flows + links).
pub const MAX_TRACE_ROWS: u64 = 10_000_000;
/// Most runs of a sweep: grid points x seeds.
pub const MAX_SWEEP_POINTS: usize = 10_000;
/// Most seeds a sweep point runs with (`seeds` or `replicates` in `[sweep]`).
pub const MAX_REPLICATES: usize = 1_000;
/// Most links and flows (after `count`) over all points of a sweep (each point is a scenario
/// of its own).
pub const MAX_SWEEP_TABLES: usize = 1_000_000;
/// Most scenario text a sweep may expand to: points x the file's size, 100 MB.
pub const MAX_SWEEP_TEXT_BYTES: usize = 100_000_000;

/// A duration within `[min, max]`, else an error in the user's units.
pub fn duration_within(d: Duration, min: Duration, max: Duration) -> Result<Duration, String> {
    if d < min || d > max {
        return Err(format!(
            "{} is out of range; accepted: {} to {}",
            show_duration(d),
            show_duration(min),
            show_duration(max)
        ));
    }
    Ok(d)
}

/// A rate within `[MIN_RATE_BPS, MAX_RATE_BPS]`.
pub fn rate_within(r: Rate) -> Result<Rate, String> {
    let bps = r.bits_per_sec();
    if !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&bps) {
        return Err(format!(
            "{bps:e} bit/s is out of range; accepted: {RATE_RANGE}"
        ));
    }
    Ok(r)
}

/// A whole number within `[min, max]`.
pub fn whole_within(v: u64, min: u64, max: u64) -> Result<u64, String> {
    if v < min || v > max {
        return Err(format!(
            "{v} is out of range; accepted: a whole number from {min} to {max}"
        ));
    }
    Ok(v)
}

/// A byte count within `[min, max]`.
pub fn bytes_within(v: u64, min: u64, max: u64) -> Result<u64, String> {
    if v < min || v > max {
        return Err(format!(
            "{v} bytes is out of range; accepted: {min} B to {}",
            show_bytes(max)
        ));
    }
    Ok(v)
}

/// The accepted rates, in words.
pub const RATE_RANGE: &str = "1kbps to 1000Gbps";

/// `d` in the largest unit that shows it whole, as a scenario file would write it.
pub fn show_duration(d: Duration) -> String {
    let ns = d.as_nanos();
    for (scale, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns >= scale && ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    format!("{ns}ns")
}

fn show_bytes(b: u64) -> String {
    match b {
        b if b >= 1_000_000_000 && b.is_multiple_of(1_000_000_000) => {
            format!("{} GB", b / 1_000_000_000)
        }
        b if b >= 1_000_000 && b.is_multiple_of(1_000_000) => format!("{} MB", b / 1_000_000),
        b => format!("{b} B"),
    }
}

/// What a field accepts, in the user's words, for errors where the value has the wrong type.
/// `path` is the field's path (`flows[0].arrivals.count`); `None` for a field not listed.
pub fn accepted(path: &str) -> Option<&'static str> {
    // An element of a list is described by its list: `rate_schedule[0]` as `rate_schedule`.
    let field = path.trim_end_matches(|c: char| c.is_ascii_digit() || c == '[' || c == ']');
    let leaf = field.rsplit(['.', '[']).next().unwrap_or(field);
    let leaf = leaf.trim_end_matches(']');
    if path.ends_with("arrivals.count") {
        return Some("a whole number from 1 to 1000000");
    }
    Some(match leaf {
        "seed" => "a whole number from 0 to 9223372036854775807",
        "count" => "a whole number from 1 to 10000",
        "flow_limit" => "a whole number of packets from 1 to 1000000",
        "packet_size" => "a whole number of bytes from 2 to 65535",
        "header_size" => "a whole number of bytes below packet_size",
        "max_in_flight" => "a whole number of packets from 1 to 16777216",
        "tx_qlen" => "a whole number of packets from 1 to 10000",
        "ack_ratio" => "a whole number of data packets per ACK from 1 to 10000",
        "ack_every" => "a whole number of packets per ACK from 1 to 10000",
        "quick_acks" => "a whole number of packets from 0 to 10000",
        "ack_size" => "a whole number of bytes from 2 to 65535",
        "host_jitter" => "a number from 0 (exactly periodic) to 1",
        "loss" => {
            "a probability between 0 and 1, or { model = \"bernoulli\", p = P } or \
             { model = \"gilbert-elliott\", p_good_bad = P, p_bad_good = P, loss_good = P, \
             loss_bad = P }"
        }
        "p" | "p_good_bad" | "p_bad_good" | "loss_good" | "loss_bad" => {
            "a probability between 0 and 1"
        }
        "pacing" | "delayed_ack" | "receive_timestamps" | "prr" | "rack" => "true or false",
        "duration" | "warmup" | "trace_interval" | "delay" | "jitter" | "bdp_rtt" | "start"
        | "stop" | "stagger" | "at" | "max_ack_delay" | "min_rto" => {
            "a duration with its unit, e.g. \"25ms\" or \"60s\""
        }
        "rate" | "host_rate" => "a rate with its unit, e.g. \"10Mbps\", from 1kbps to 1000Gbps",
        "buffer" => "packets (\"100pkt\"), bytes (\"64KB\") or a BDP multiple (\"2bdp\")",
        "size" | "quantum" | "initial_quantum" | "burst" => {
            "a size with its unit, e.g. \"1500B\", \"64KB\" or \"100MB\""
        }
        "name" | "description" | "cc" | "qdisc" | "app" | "transport" | "model" => "a string",
        "loss_at" => "\"arrival\" or \"delivery\"",
        "preset" => "\"linux\" or \"ns3\"",
        "recovery" => "\"quic\" or \"tcp\"",
        "rto" => "\"rfc6298\" or \"linux\"",
        "path" | "reverse_path" => "a list of link names, e.g. [\"bottleneck\"]",
        "links" => "a list of [[links]] tables",
        "flows" => "a list of [[flows]] tables",
        "events" => "a list of { at = \"30s\", params = { ... } } tables",
        "params" => "a table of parameters, e.g. { beta = 0.7 }",
        "arrivals" => {
            "a table { size = \"300KB\", interarrival = \"2s\", count = N } (count optional)"
        }
        "policer" => "a table { rate = \"10Mbps\", burst = \"100KB\" }",
        "rate_schedule" => "a list of { at = \"5s\", rate = \"10Mbps\" } tables",
        "rate_trace" => {
            "a file name, relative to the scenario file (a mahimahi trace), or \
             { times_ms = [1, 2, ...] }"
        }
        "delay_schedule" => "a list of { at = \"5s\", delay = \"20ms\" } tables",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_show_in_their_unit() {
        assert_eq!(show_duration(Duration::from_secs(864_000)), "864000s");
        assert_eq!(show_duration(Duration::from_millis(25)), "25ms");
        assert_eq!(show_duration(Duration::from_micros(1)), "1us");
        assert_eq!(show_duration(Duration::from_nanos(1_500)), "1500ns");
    }

    #[test]
    fn wrong_types_are_described_by_path() {
        assert_eq!(
            accepted("flows[3].arrivals.count"),
            Some("a whole number from 1 to 1000000")
        );
        assert_eq!(
            accepted("flows[0].count"),
            Some("a whole number from 1 to 10000")
        );
        assert!(accepted("links[0].loss")
            .unwrap()
            .contains("gilbert-elliott"));
        assert_eq!(accepted("flows[0].unheard_of"), None);
    }
}
