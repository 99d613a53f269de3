//! The multipath tunnel (the MP-DCCP framework of the CCID5 paper, ANRW 2021, §2-3): every
//! packet that enters is forwarded once or dropped at a counted place, a reliable flow inside
//! it gets every byte in order, the redundant scheduler's copies are delivered once, and the
//! scenario format refuses what it cannot run; over a thousand generated tunnels, packets are
//! conserved and delivered at most once.

use kleinrock_lab::runner::{run, RunOutput};
use kleinrock_lab::scenario::{parse, ScenarioError};
use kleinrock_sim::tunnel::TunnelCounters;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt::Write;

/// Two paths of 5 Mbit/s with 1 % random loss, 10 and 30 ms one way, CCID `cc` on both, and a
/// tunnel with `tunnel` lines; the carried flow's lines are `flow`. A 1 Mbit/s datagram flow on
/// a link of its own never stops, so the run lasts its 30 s and every packet of the carried
/// flow (which stops at 5 s) is resolved by the end.
fn scenario(cc: &str, tunnel: &str, flow: &str) -> String {
    format!(
        r#"
duration = "30s"
trace_interval = "100ms"
[[links]]
name = "a"
rate = "5Mbps"
delay = "10ms"
buffer = "40pkt"
loss = 0.01
[[links]]
name = "ar"
rate = "5Mbps"
delay = "10ms"
buffer = "100pkt"
[[links]]
name = "b"
rate = "5Mbps"
delay = "30ms"
buffer = "40pkt"
loss = 0.01
[[links]]
name = "br"
rate = "5Mbps"
delay = "30ms"
buffer = "100pkt"
[[links]]
name = "other"
rate = "10Mbps"
buffer = "10pkt"
[[tunnels]]
name = "mp"
{tunnel}
[[tunnels.paths]]
name = "one"
path = ["a"]
reverse_path = ["ar"]
cc = "{cc}"
priority = 4
[[tunnels.paths]]
name = "two"
path = ["b"]
reverse_path = ["br"]
cc = "{cc}"
[[flows]]
name = "carried"
tunnel = "mp"
{flow}
[[flows]]
name = "keeps-the-run-going"
transport = "datagram"
app = "cbr"
rate = "1Mbps"
path = ["other"]
"#
    )
}

const UDP: &str = r#"transport = "datagram"
app = "cbr"
rate = "15Mbps"
stop = "5s"
packet_size = 1448"#;

fn run_text(text: &str) -> RunOutput {
    let set = parse(text, "mp.toml", "mp", &[]).unwrap_or_else(|e| panic!("{e}"));
    run(&set.points[0])
}

fn refused(text: &str) -> ScenarioError {
    parse(text, "mp.toml", "mp", &[]).expect_err("refused")
}

/// Every place a packet of the forward direction can be at the end.
fn resolved(c: &TunnelCounters) -> u64 {
    c.forwarded + c.queue_drops + c.send_queue_drops + c.lost_on_paths + c.reorder_drops + c.held
}

#[test]
fn every_packet_that_entered_is_forwarded_once_or_dropped_at_a_counted_place() {
    let variants = [
        ("ccid2", "scheduler = \"cpf\"\nreordering = \"active-fixed\""),
        ("ccid5", "scheduler = \"rr\"\nreordering = \"passive\""),
        (
            "bbr",
            "scheduler = \"cpf\"\nreordering = \"active-fixed\"\ntransport = \"quic\"",
        ),
        (
            "cubic",
            "scheduler = \"rr\"\nreordering = \"passive\"\ntransport = \"quic\"",
        ),
        (
            "ccid2",
            "scheduler = \"srtt\"\nreordering = \"active-fixed\"\ndrop_late = true",
        ),
        (
            "ccid5",
            "scheduler = \"handover\"\nreordering = \"active-adaptive\"\npacing = true\ntx_qlen = 1",
        ),
    ];
    for (cc, tunnel) in variants {
        let out = run_text(&scenario(cc, tunnel, UDP));
        let t = &out.result.tunnels[0];
        let c = &t.counters[0];
        let carried = &out.result.flows[0].counters;
        let what = format!("{cc} / {tunnel}: {c:?}");
        // One copy per packet (every scheduler but `redundant`): each packet that entered
        // ends in exactly one of the counted places.
        assert_eq!(c.entered, carried.packets_sent, "{what}");
        assert_eq!(resolved(c), c.entered, "{what}");
        assert_eq!(carried.packets_received, c.forwarded, "{what}");
        // Copies lost on a path are the drops and random losses of the paths' forward links.
        let links = &out.result.links;
        let on_links: u64 = [0, 2]
            .iter()
            .map(|&i| links[i].counters.packets_dropped + links[i].counters.packets_lost_random)
            .sum();
        assert_eq!(c.lost_on_paths, on_links, "{what}");
        assert!(
            c.lost_on_paths > 0,
            "{what}: the paths' random loss is exercised"
        );
    }
}

#[test]
fn the_counted_drops_are_each_exercised() {
    // A queue of 5 with 15 Mbit/s offered to 10: the tunnel's queue overflows.
    let out = run_text(&scenario("ccid2", "scheduler = \"cpf\"", UDP));
    assert!(out.result.tunnels[0].counters[0].queue_drops > 0);
    // A subflow that paces holds packets; a send queue of one refuses the next.
    let paced = "scheduler = \"cpf\"\npacing = true\ntx_qlen = 1";
    let out = run_text(&scenario("ccid5", paced, UDP));
    assert!(out.result.tunnels[0].counters[0].send_queue_drops > 0);
    // Paths 10 and 30 ms apart with a 15 ms timeout: packets of the slow path arrive after
    // their gap was skipped, and `drop_late` drops them (ro_fixed.c `drop_lost`).
    let late = "scheduler = \"rr\"\nreordering = \"active-fixed\"\ndrop_late = true";
    let out = run_text(&scenario("ccid2", late, UDP));
    let c = &out.result.tunnels[0].counters[0];
    assert!(c.reorder_drops > 0 && c.gaps_skipped > 0, "{c:?}");
}

#[test]
fn a_reliable_flow_inside_gets_every_byte_in_order() {
    let tcp = "cc = \"cubic\"\nsize = \"2MB\"\npacket_size = 1448\ndelayed_ack = true";
    for (cc, tunnel) in [
        ("ccid2", "scheduler = \"rr\"\nreordering = \"active-fixed\""),
        ("ccid5", "scheduler = \"cpf\"\nreordering = \"passive\""),
        (
            "ccid2",
            "scheduler = \"redundant\"\nreordering = \"active-fixed\"",
        ),
    ] {
        let out = run_text(&scenario(cc, tunnel, tcp));
        let f = &out.result.flows[0];
        assert!(f.completion_ns.is_some(), "{cc} / {tunnel}: unfinished");
        assert_eq!(f.counters.bytes_delivered, 2_000_000, "{cc} / {tunnel}");
        // Its ACKs came back through the tunnel's other direction.
        let back = &out.result.tunnels[0].counters[1];
        assert!(back.forwarded > 0, "{cc} / {tunnel}: {back:?}");
    }
}

#[test]
fn the_redundant_schedulers_copies_are_delivered_once() {
    let out = run_text(&scenario("ccid2", "scheduler = \"redundant\"", UDP));
    let c = &out.result.tunnels[0].counters[0];
    let carried = &out.result.flows[0].counters;
    assert!(c.duplicates > 0, "{c:?}");
    assert_eq!(carried.packets_received, c.forwarded, "{c:?}");
    assert!(c.forwarded <= c.entered, "{c:?}");
    // Both paths carry a copy of what they can take.
    let paths = &out.result.tunnels[0].paths;
    assert!(paths
        .iter()
        .all(|[p, _]| p.counters.packets_received > 1000));
}

#[test]
fn bad_tunnels_are_refused_with_the_field_named() {
    let good = scenario("ccid2", "scheduler = \"cpf\"", UDP);
    parse(&good, "mp.toml", "mp", &[]).expect("the base scenario loads");
    let cases = [
        (
            good.replace("path = [\"a\"]", "path = [\"nowhere\"]"),
            "tunnels[0].paths[0].path",
        ),
        (
            good.replace("scheduler = \"cpf\"", "scheduler = \"fastest\""),
            "tunnels[0].scheduler",
        ),
        (
            good.replace("scheduler = \"cpf\"", "reordering = \"sorted\""),
            "tunnels[0].reordering",
        ),
        (
            good.replacen("cc = \"ccid2\"", "cc = \"cubic\"", 1),
            "tunnels[0].paths[0].cc",
        ),
        (
            good.replace(
                "scheduler = \"cpf\"",
                "reordering = \"active-fixed\"\nfixed_timeout = \"-5ms\"",
            ),
            "tunnels[0].fixed_timeout",
        ),
        (
            good.replace("tunnel = \"mp\"", "tunnel = \"mq\""),
            "flows[0].tunnel",
        ),
        (
            good.replace("tunnel = \"mp\"", "tunnel = \"mp\"\npath = [\"a\"]"),
            "flows[0].path",
        ),
        (
            good.replace("scheduler = \"cpf\"", "transport = \"tcp\""),
            "tunnels[0].transport",
        ),
        (
            // A QUIC tunnel's paths run registry controllers, not CCIDs.
            good.replace("scheduler = \"cpf\"", "transport = \"quic\""),
            "tunnels[0].paths[0].cc",
        ),
        (
            // ... nor one that opens subflows of its own.
            scenario("fq_switch", "transport = \"quic\"", UDP),
            "tunnels[0].paths[0].cc",
        ),
        (
            good.replace(
                "scheduler = \"cpf\"",
                "scheduler = \"cpf\"\nnum_segments = 2",
            ),
            "tunnels[0].num_segments",
        ),
    ];
    for (text, field) in cases {
        let e = refused(&text);
        assert_eq!(e.field, field, "{e}");
    }
}

/// Tunnel scenarios generated for the randomized check.
const GENERATED: usize = 1000;

/// One random tunnel scenario: 1 to 3 paths of random rate, delay, buffer, loss and CCID, a
/// random scheduler and reordering, and 1 to 3 carried flows (datagram or reliable, sized or
/// stopped), a few simulated seconds long.
fn generated(rng: &mut ChaCha8Rng) -> String {
    let mut t = format!("duration = \"{:.2}s\"\n", rng.gen_range(1.0..6.0));
    let paths = rng.gen_range(1..=3);
    for i in 0..paths {
        for dir in ["f", "r"] {
            let _ = writeln!(
                t,
                "[[links]]\nname = \"{dir}{i}\"\nrate = \"{:.2}Mbps\"\ndelay = \"{:.1}ms\"\n\
                 buffer = \"{}pkt\"\nloss = {:.3}",
                rng.gen_range(0.5..20.0),
                rng.gen_range(0.0..40.0),
                rng.gen_range(2..300),
                if rng.gen_bool(0.5) {
                    rng.gen_range(0.0..0.05)
                } else {
                    0.0
                },
            );
        }
    }
    let schedulers = ["cpf", "rr", "srtt", "redundant", "handover"];
    let reorderings = ["passive", "active-fixed", "active-adaptive"];
    let _ = writeln!(
        t,
        "[[tunnels]]\nname = \"t\"\nscheduler = \"{}\"\nreordering = \"{}\"\nqueue = {}\n\
         tx_qlen = {}\npacing = {}",
        schedulers[rng.gen_range(0..schedulers.len())],
        reorderings[rng.gen_range(0..reorderings.len())],
        rng.gen_range(1..50),
        rng.gen_range(1..10),
        rng.gen_bool(0.3),
    );
    if !t.contains("passive") && rng.gen_bool(0.5) {
        t += "drop_late = true\n";
    }
    for i in 0..paths {
        let _ = writeln!(
            t,
            "[[tunnels.paths]]\npath = [\"f{i}\"]\nreverse_path = [\"r{i}\"]\ncc = \"{}\"\n\
             priority = {}",
            ["ccid2", "ccid5"][rng.gen_range(0..2)],
            rng.gen_range(0..5),
        );
    }
    for _ in 0..rng.gen_range(1..=3) {
        t += "[[flows]]\ntunnel = \"t\"\npacket_size = 1400\n";
        let _ = writeln!(t, "start = \"{:.2}s\"", rng.gen_range(0.0..1.0));
        if rng.gen_bool(0.5) {
            let _ = writeln!(
                t,
                "transport = \"datagram\"\napp = \"cbr\"\nrate = \"{:.2}Mbps\"\nstop = \"{:.2}s\"",
                rng.gen_range(0.5..30.0),
                rng.gen_range(1.0..3.0),
            );
        } else {
            let cc = ["cubic", "newreno", "bbr"][rng.gen_range(0..3)];
            let _ = writeln!(t, "cc = \"{cc}\"\nsize = \"{}KB\"", rng.gen_range(10..2000));
        }
    }
    t
}

/// Among the generated tunnels are redundant ones whose pacing subflows have send queues of a
/// packet or two: a copy refused there while another copy of the same packet goes out once
/// resolved the packet early (the tunnel now asserts that no copy outlives its packet).
#[test]
fn generated_tunnels_conserve_packets_and_deliver_each_once() {
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    for k in 0..GENERATED {
        let text = generated(&mut rng);
        let out = run_text(&text);
        let t = &out.result.tunnels[0];
        let redundant = text.contains("\"redundant\"");
        for (dir, c) in t.counters.iter().enumerate() {
            let what = format!("scenario {k}, direction {dir}: {c:?}\n{text}");
            // Every packet that entered is forwarded once, dropped at the queue, lost (every
            // copy of it), or still held; with one copy per packet (every scheduler but
            // `redundant`), the lost ones are exactly the copies dropped at each place.
            assert_eq!(
                c.forwarded + c.queue_drops + c.lost + c.held,
                c.entered,
                "{what}"
            );
            if !redundant {
                assert_eq!(resolved(c), c.entered, "{what}");
            }
        }
        let sent: u64 = out
            .result
            .flows
            .iter()
            .map(|f| f.counters.packets_sent)
            .sum();
        for f in &out.result.flows {
            let c = &f.counters;
            let what = format!("scenario {k}, flow {}: {c:?}\n{text}", f.name);
            // A datagram is delivered at most once; a reliable flow's bytes in order, at most
            // its size, all of it once complete.
            assert!(c.packets_received <= c.packets_sent, "{what}");
            if let Some(size) = f.size_bytes {
                assert!(c.bytes_delivered <= size, "{what}");
                if f.completion_ns.is_some() {
                    assert_eq!(c.bytes_delivered, size, "{what}");
                }
            }
        }
        assert!(t.counters[0].entered <= sent, "scenario {k}\n{text}");
        assert!(
            t.latency[0].mean().is_none_or(|m| m.is_finite()),
            "scenario {k}"
        );
    }
}
