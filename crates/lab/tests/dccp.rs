//! The DCCP-like transport: conservation of the application's packets, Ack Ratio, the send
//! queue, and the scenario options it takes and refuses (RFC 4340, RFC 4341).

use kleinrock_lab::runner::{run, RunOutput};
use kleinrock_lab::scenario::{parse, ScenarioError};

/// One DCCP flow of `cc`, a 15 Mbit/s constant-rate application stopped at 5 s, over a
/// 10 Mbit/s, 40 ms path with a 50-packet buffer and `loss` random loss; `extra` lines go in
/// the flow.
fn scenario(cc: &str, loss: f64, extra: &str) -> String {
    format!(
        r#"
duration = "60s"
trace_interval = "100ms"
[[links]]
name = "fwd"
rate = "10Mbps"
delay = "20ms"
buffer = "50pkt"
loss = {loss}
[[links]]
name = "back"
rate = "10Mbps"
delay = "20ms"
buffer = "100pkt"
[[flows]]
name = "d"
cc = "{cc}"
transport = "dccp"
app = "cbr"
rate = "15Mbps"
stop = "5s"
path = ["fwd"]
reverse_path = ["back"]
{extra}
"#
    )
}

fn run_text(text: &str) -> RunOutput {
    let set = parse(text, "dccp.toml", "dccp", &[]).unwrap_or_else(|e| panic!("{e}"));
    run(&set.points[0])
}

fn refused(text: &str) -> ScenarioError {
    parse(text, "dccp.toml", "dccp", &[]).expect_err("refused")
}

#[test]
fn every_offered_packet_is_delivered_lost_on_the_path_or_dropped_at_the_sender() {
    for cc in ["ccid2", "ccid5", "newreno", "cubic", "bbr"] {
        let out = run_text(&scenario(cc, 0.01, ""));
        let f = &out.result.flows[0];
        let c = &f.counters;
        let fwd = &out.result.links[0].counters;
        let on_path = fwd.packets_dropped + fwd.packets_lost_random + fwd.packets_policed;
        // The run ends once the flow is done: nothing waits in the queue or on the path.
        assert!(out.result.end_ns < 60_000_000_000, "{cc} did not finish");
        assert_eq!(
            c.app_packets,
            c.packets_received + on_path + c.send_queue_drops,
            "{cc}: offered {} = received {} + lost on the path {} + dropped at the sender {}",
            c.app_packets,
            c.packets_received,
            on_path,
            c.send_queue_drops
        );
        // Nothing is retransmitted: every packet sent is a packet the application offered.
        assert_eq!(c.packets_sent, c.app_packets - c.send_queue_drops, "{cc}");
        assert_eq!(c.bytes_retransmitted, 0, "{cc}");
        assert!(c.send_queue_drops > 0 && on_path > 0, "{cc}: {c:?}");
    }
}

#[test]
fn the_receiver_acknowledges_once_per_ack_ratio_packets() {
    for ratio in [1, 2, 4] {
        let out = run_text(&scenario("newreno", 0.0, &format!("ack_ratio = {ratio}")));
        let c = &out.result.flows[0].counters;
        let per_ack = c.packets_received as f64 / c.acks_sent as f64;
        // One ACK per `ratio` data packets (RFC 4340 §11.3); the tail of the flow may leave
        // fewer than `ratio` packets unacknowledged.
        assert!(
            (per_ack - ratio as f64).abs() < 0.01 * ratio as f64,
            "Ack Ratio {ratio}: {per_ack:.3} data packets per ACK"
        );
    }
}

#[test]
fn per_packet_latency_is_measured_from_the_application() {
    let out = run_text(&scenario("newreno", 0.0, "tx_qlen = 5"));
    let f = &out.summary.flows[0];
    let l = f.latency.expect("latency of a DCCP flow");
    // At least the one-way propagation delay (20 ms) and one serialisation at 10 Mbit/s.
    assert!(l.p50_ms >= 20.0 + 1.2, "{l:?}");
    assert!(l.p50_ms <= l.p95_ms && l.p95_ms <= l.p99_ms, "{l:?}");
    let q = f.send_queue.expect("a DCCP flow's send queue");
    assert!(
        q.dropped_packets > 0 && q.dropped_packets < q.offered_packets,
        "{q:?}"
    );
    let trace = out.result.trace.as_ref().expect("traced");
    let rx = trace.flows[0].column("rx_rate_bps").expect("rx_rate_bps");
    let peak = rx
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    // A 10 Mbit/s link carries at most 1456 of every 1500 bytes as payload; a 100 ms interval
    // can hold one packet more than its share (packets are counted whole, where they land).
    let bound = 10e6 * 1456.0 / 1500.0 + 1456.0 * 8.0 / 0.1;
    assert!(peak <= bound && peak > 9e6, "peak {peak}, bound {bound}");
}

#[test]
fn options_of_the_reliable_transport_and_a_zero_ack_ratio_are_refused() {
    for (line, field) in [
        ("delayed_ack = true", "flows[0].delayed_ack"),
        ("receive_timestamps = false", "flows[0].receive_timestamps"),
        ("ack_size = 40", "flows[0].ack_size"),
        ("max_ack_delay = \"200ms\"", "flows[0].max_ack_delay"),
        ("ack_ratio = 0", "flows[0].ack_ratio"),
        ("tx_qlen = 0", "flows[0].tx_qlen"),
        (
            "events = [{ at = \"1s\", params = { beta = 0.5 } }]",
            "flows[0].events",
        ),
    ] {
        let e = refused(&scenario("newreno", 0.0, line));
        assert_eq!(e.field, field, "{line}: {e}");
    }
    let e = refused(&scenario("pcc", 0.0, ""));
    assert_eq!(e.field, "flows[0].pacing", "{e}");
    // A CCID counts packets and sets the receiver's Ack Ratio: DCCP only.
    let reliable = scenario("ccid2", 0.0, "").replace("transport = \"dccp\"", "");
    let e = refused(&reliable);
    assert_eq!(e.field, "flows[0].cc", "{e}");
    assert!(e.message.contains("transport = \"dccp\""), "{e}");
}

/// One bulk DCCP flow of `cc` alone on 10 Mbit/s, 40 ms, a 1 BDP buffer, traced every
/// `trace`; `extra` lines go in the flow.
fn alone(cc: &str, duration: &str, trace: &str, extra: &str) -> String {
    format!(
        r#"
duration = "{duration}"
trace_interval = "{trace}"
[[links]]
name = "fwd"
rate = "10Mbps"
delay = "20ms"
buffer = "1bdp"
[[links]]
name = "back"
rate = "10Mbps"
delay = "20ms"
buffer = "1000pkt"
[[flows]]
name = "d"
cc = "{cc}"
transport = "dccp"
path = ["fwd"]
reverse_path = ["back"]
{extra}
"#
    )
}

/// Times (s) and values of column `name` of the flow's trace.
fn series(out: &RunOutput, name: &str) -> Vec<(f64, f64)> {
    let s = &out.result.trace.as_ref().expect("traced").flows[0];
    let col = s.column(name).unwrap_or_else(|| panic!("no column {name}"));
    s.time_s.iter().copied().zip(col.iter().copied()).collect()
}

#[test]
fn ccid2_grows_about_one_and_a_half_times_per_rtt_halves_at_most_once_per_rtt_and_fills_the_link() {
    let out = run_text(&alone("ccid2", "30s", "40ms", ""));
    let cwnd = series(&out, "cwnd_packets");
    // Slow start before the queue builds (cwnd below the 33-packet BDP): one sample per
    // 40 ms base RTT. Linux's CCID 2 adds a packet per two acknowledged (at most
    // ceil(AckRatio/2) per ACK), about x1.5 per RTT whether the Ack Ratio is 1 or 2 (RFC 4341
    // §5, ccid2.c ccid2_new_ack; docs/ccid2.md); the acceptance range is x1.4-1.6.
    let early: Vec<f64> = cwnd
        .iter()
        .skip(1)
        .map(|&(_, c)| c)
        .take_while(|&c| c < 33.0)
        .collect();
    assert!(early.len() >= 4, "{early:?}");
    let growth = (early[early.len() - 1] / early[0]).powf(1.0 / (early.len() - 1) as f64);
    assert!(
        (1.4..=1.6).contains(&growth),
        "x{growth:.3} per RTT: {early:?}"
    );
    // At most one halving per RTT: reductions at least one base RTT (40 ms) apart, traced
    // every 5 ms.
    let fine = run_text(&alone("ccid2", "30s", "5ms", ""));
    let cwnd = series(&fine, "cwnd_packets");
    let cuts: Vec<f64> = cwnd
        .windows(2)
        .filter(|w| w[1].1 < w[0].1 * 0.75)
        .map(|w| w[1].0)
        .collect();
    assert!(cuts.len() >= 3, "{cuts:?}");
    assert!(
        cuts.windows(2).all(|w| w[1] - w[0] >= 0.04 - 1e-9),
        "reductions closer than one RTT: {cuts:?}"
    );
    let util = out.summary.links[0].utilisation;
    assert!(util >= 0.9, "utilisation {util}");
}

#[test]
fn ccid5_alone_leaves_startup_within_log2_bdp_plus_4_rounds_and_keeps_the_rtt_near_base() {
    // On a host that paces at the rate CCID 5 sets (fq): BBR's low queue needs its pacing;
    // unpaced, the paper's CCID 5 holds 2 BDP in flight (docs/ccid5.md).
    let out = run_text(&alone("ccid5", "30s", "10ms", "pacing = true"));
    let s = &out.result.trace.as_ref().expect("traced").flows[0];
    let first_not_startup = s.mode.iter().position(|&m| m != "startup").expect("leaves");
    let rounds = s.column("round_count").expect("round_count")[first_not_startup];
    // BDP: 10 Mbit/s x 40 ms = 33 packets; Startup doubles per round from 10 packets and
    // needs 3 rounds without 25 % growth to stop (BBR paper "Startup").
    let bound = (33f64).log2() + 4.0;
    assert!(
        rounds <= bound,
        "left Startup after {rounds} rounds, bound {bound:.1}"
    );
    let rtt = out.summary.flows[0].rtt_mean_ms.expect("RTT samples");
    assert!(rtt < 1.25 * 40.0, "mean RTT {rtt} ms, base 40 ms");
}
