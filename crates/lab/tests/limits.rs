//! Every numeric field has a range that fits the machine, and an error beyond it names the
//! field and says what is accepted in the user's words (README "Limits"). Values of the wrong
//! type are described the same way, never by the parser's internal type names.

use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::scenario::{parse, ScenarioError, ScenarioSet};

fn load(text: &str) -> Result<ScenarioSet, ScenarioError> {
    parse(text, "limits.toml", "test", &[])
}

/// The error of `text`, which must name `field` and contain each of `words`.
fn refused(text: &str, field: &str, words: &[&str]) {
    let e = load(text).expect_err("the scenario is refused");
    assert_eq!(e.field, field, "{e}");
    for w in words {
        assert!(e.message.contains(w), "`{w}` not in: {e}");
    }
    for internal in ["u32", "u64", "f64", "i64", "LossSpec", "untagged", "enum"] {
        assert!(
            !e.message.contains(internal),
            "internal name `{internal}` in: {e}"
        );
    }
}

/// One Cubic flow over a 10 Mbit/s, 50 ms dumbbell: links `bottleneck` and `return`.
fn base() -> String {
    Dumbbell::new("cubic", "10Mbps", "25ms", "1bdp", "10s").to_toml()
}

/// `text` with `lines` inserted after the first `header` line.
fn with(text: &str, header: &str, lines: &str) -> String {
    let at = text.find(header).expect("header present") + header.len();
    format!("{}\n{}{}", &text[..at], lines, &text[at..])
}

/// `base()` with `lines` added to its first flow.
fn flow(lines: &str) -> String {
    with(&base(), "[[flows]]", lines)
}

/// `base()` with `lines` added to its first link.
fn link(lines: &str) -> String {
    with(&base(), "[[links]]", lines)
}

#[test]
fn counts_that_would_exhaust_memory_are_refused_before_anything_is_built() {
    let words = ["100000000", "a whole number from 1 to 10000"];
    refused(&flow("count = 100000000"), "flows[0].count", &words);
    let two = format!(
        "{}\n{}",
        flow("count = 6000"),
        "[[flows]]\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse_path = [\"return\"]\ncount = 6000"
    );
    refused(&two, "flows[1]", &["at most 10000 flows"]);
}

#[test]
fn rates_delays_and_times_have_ranges() {
    let huge = base().replacen(
        "rate = \"10Mbps\"",
        "rate = \"99999999999999999999Gbps\"",
        1,
    );
    refused(
        &huge,
        "links[0].rate",
        &["out of range", "1kbps to 1000Gbps"],
    );
    let slow = base().replacen("rate = \"10Mbps\"", "rate = \"10bps\"", 1);
    refused(&slow, "links[0].rate", &["1kbps to 1000Gbps"]);
    let far = base().replacen("delay = \"25ms\"", "delay = \"11s\"", 1);
    refused(&far, "links[0].delay", &["0ns to 10s"]);
    let long = base().replacen("duration = \"10s\"", "duration = \"900000s\"", 1);
    refused(&long, "duration", &["0ns to 864000s"]);
    refused(&flow("start = \"1e9s\""), "flows[0].start", &["864000s"]);
}

#[test]
fn sizes_buffers_and_windows_have_ranges() {
    refused(&flow("size = \"2000000GB\""), "flows[0].size", &["1 B to"]);
    let big = base().replacen("buffer = \"1bdp\"", "buffer = \"2000000pkt\"", 1);
    refused(&big, "links[0].buffer", &["from 1 to 1000000"]);
    let many = base().replacen("buffer = \"1bdp\"", "buffer = \"5000bdp\"", 1);
    refused(&many, "links[0].buffer", &["at most 1000"]);
    refused(
        &flow("max_in_flight = 0"),
        "flows[0].max_in_flight",
        &["1 to 16777216"],
    );
    refused(
        &flow("header_size = 1500"),
        "flows[0].header_size",
        &["0 to 1499"],
    );
    refused(
        &flow("packet_size = 40"),
        "flows[0].packet_size",
        &["no payload"],
    );
    let set = load(&flow("max_in_flight = 100\nheader_size = 78")).expect("valid settings");
    let kleinrock_lab::scenario::FlowTransport::Reliable { transport, .. } =
        &set.points[0].flows[0].transport
    else {
        panic!("a reliable flow")
    };
    assert_eq!((transport.max_in_flight, transport.header_size), (100, 78));
}

#[test]
fn a_buffer_smaller_than_one_packet_is_refused() {
    let tiny = base().replacen("buffer = \"1bdp\"", "buffer = \"1000B\"", 1);
    refused(
        &tiny,
        "links[0].buffer",
        &["less than one 1500-byte packet", "\"1pkt\""],
    );
    // ACKs (64 bytes) are the largest packets on the return link.
    let acks = base().replace("buffer = \"10000pkt\"", "buffer = \"100B\"");
    load(&acks).expect("a 100-byte buffer holds an ACK");
}

#[test]
fn a_path_crosses_each_link_once() {
    let twice = base().replace(
        "path = [\"bottleneck\"]",
        "path = [\"bottleneck\", \"bottleneck\"]",
    );
    refused(&twice, "flows[0].path", &["names `bottleneck` twice"]);
}

#[test]
fn rate_steps_are_listed_in_time_order() {
    let steps =
        "rate_schedule = [{ at = \"5s\", rate = \"20Mbps\" }, { at = \"2s\", rate = \"5Mbps\" }]";
    refused(
        &link(steps),
        "links[0].rate_schedule[1].at",
        &["2s is not after the previous step (5s)"],
    );
}

#[test]
fn traces_and_sweeps_are_bounded() {
    let fine = base().replacen(
        "duration = \"10s\"",
        "duration = \"600s\"\ntrace_interval = \"1us\"",
        1,
    );
    refused(&fine, "trace_interval", &["trace rows", "at most 10000000"]);
    let values: Vec<String> = (1..=101).map(|i| format!("\"{i}pkt\"")).collect();
    let grid = format!(
        "{}\n[sweep]\n\"links.0.buffer\" = [{v}]\n\"links.1.buffer\" = [{v}]\n",
        base(),
        v = values.join(", ")
    );
    refused(&grid, "sweep.\"links.1.buffer\"", &["at most 10000 points"]);
}

#[test]
fn tables_are_counted_before_they_are_built() {
    let many = format!("{}{}", base(), "[[flows]]\n".repeat(10_001));
    refused(
        &many,
        "flows",
        &["10002 [[flows]] tables; accepted: at most 10000"],
    );
    let flows = "[[flows]]\ncc = \"cubic\"\npath = [\"bottleneck\"]\nreverse_path = [\"return\"]\n";
    let values: Vec<String> = (1..=1000).map(|i| format!("\"{i}pkt\"")).collect();
    let grid = format!(
        "{}{}\n[sweep]\n\"links.0.buffer\" = [{}]\n",
        base(),
        flows.repeat(1000),
        values.join(", ")
    );
    refused(
        &grid,
        "sweep.\"links.0.buffer\"",
        &["points x (links + flows) at most 1000000"],
    );
    // `count` copies are counted as the points are resolved.
    let seeds: Vec<String> = (1..=200).map(|i| i.to_string()).collect();
    let copies = format!(
        "{}\n[sweep]\nseed = [{}]\n",
        flow("count = 10000"),
        seeds.join(", ")
    );
    let e = load(&copies).expect_err("2 million flows over the sweep");
    assert_eq!(e.field, "sweep", "{e}");
    assert!(e.message.contains("at most 1000000"), "{e}");
    // A large file is swept less.
    let long = format!(
        "description = \"{}\"\n{}\n[sweep]\nseed = [{}]\n",
        "x".repeat(1_000_000),
        base(),
        seeds.join(", ")
    );
    refused(
        &long,
        "sweep.\"seed\"",
        &["points x file size at most 100000000"],
    );
}

#[test]
fn arrivals_are_bounded() {
    let arrivals = "arrivals = { size = \"300KB\", interarrival = \"1s\", count = 2000000 }";
    refused(
        &flow(arrivals),
        "flows[0].arrivals.count",
        &["from 1 to 1000000"],
    );
    let fast = "arrivals = { size = \"300KB\", interarrival = \"1ns\" }";
    refused(&flow(fast), "flows[0].arrivals.interarrival", &["1us to"]);
}

#[test]
fn wrong_types_are_described_in_the_users_words() {
    refused(
        &flow("packet_size = 4294968796"),
        "flows[0].packet_size",
        &["4294968796 is out of range; accepted: a whole number from 2 to 65535"],
    );
    let seed = base().replacen("seed = 1", "seed = -1", 1);
    refused(&seed, "seed", &["a whole number from 0 to"]);
    refused(
        &flow("count = \"3\""),
        "flows[0].count",
        &["a whole number from 1 to 10000"],
    );
    refused(
        &flow("count = 2.5"),
        "flows[0].count",
        &["a whole number from 1 to 10000"],
    );
    refused(
        &link("loss = \"0.01\""),
        "links[0].loss",
        &["a probability between 0 and 1", "gilbert-elliott"],
    );
    refused(
        &flow("pacing = \"yes\""),
        "flows[0].pacing",
        &["true or false"],
    );
}

#[test]
fn every_field_of_the_wrong_type_says_what_it_accepts() {
    // (table header to insert after, key, a value of the wrong type)
    let top = [
        ("description", "5"),
        ("warmup", "5"),
        ("trace_interval", "true"),
    ];
    let links = [
        ("delay", "5"),
        ("jitter", "5"),
        ("qdisc", "5"),
        ("flow_limit", "\"x\""),
        ("quantum", "5"),
        ("initial_quantum", "5"),
        ("bdp_rtt", "5"),
        ("loss", "\"0.01\""),
        ("loss_at", "5"),
        ("policer", "5"),
        ("rate_schedule", "5"),
        ("rate_trace", "5"),
        ("delay_schedule", "\"x\""),
    ];
    let flows = [
        ("params", "5"),
        ("start", "5"),
        ("stop", "5"),
        ("size", "5"),
        ("app", "5"),
        ("transport", "5"),
        ("count", "\"3\""),
        ("stagger", "5"),
        ("packet_size", "\"x\""),
        ("header_size", "-1"),
        ("max_in_flight", "1.5"),
        ("pacing", "1"),
        ("host_rate", "5"),
        ("host_jitter", "\"x\""),
        ("delayed_ack", "\"x\""),
        ("max_ack_delay", "5"),
        ("ack_every", "\"2\""),
        ("ack_size", "-1"),
        ("receive_timestamps", "1"),
        ("quick_acks", "\"x\""),
        ("preset", "5"),
        ("recovery", "5"),
        ("min_rto", "5"),
        ("rto", "5"),
        ("prr", "1"),
        ("rack", "1"),
        ("events", "5"),
        ("arrivals", "5"),
    ];
    let cases = top
        .iter()
        .map(|&(k, v)| (format!("{k} = {v}\n{}", base()), k.to_string()))
        .chain(
            links
                .iter()
                .map(|&(k, v)| (link(&format!("{k} = {v}")), format!("links[0].{k}"))),
        )
        .chain(
            flows
                .iter()
                .map(|&(k, v)| (flow(&format!("{k} = {v}")), format!("flows[0].{k}"))),
        );
    for (text, field) in cases.map(|(t, f)| (dedup(&t), f)) {
        let e = load(&text).expect_err("the wrong type is refused");
        assert!(e.field.starts_with(&field), "{field}: {e}");
        assert!(e.message.contains("accepted"), "{field}: {e}");
        for internal in [
            "u32", "u64", "f64", "i64", "usize", "String", "sequence", "enum",
        ] {
            assert!(
                !e.message.contains(internal),
                "{field}: `{internal}` in {e}"
            );
        }
    }
}

/// `text` without the later of two lines that set the same key in one table (the inserted
/// wrong-typed line comes first and stays).
fn dedup(text: &str) -> String {
    let mut seen: Vec<String> = Vec::new();
    let mut out = String::new();
    for line in text.lines() {
        if line.starts_with('[') {
            seen.clear();
        }
        if let Some((key, _)) = line.split_once(" = ") {
            if seen.iter().any(|k| k == key) {
                continue;
            }
            seen.push(key.to_string());
        }
        out += line;
        out += "\n";
    }
    out
}

#[test]
fn a_small_window_bound_never_stalls_a_lossy_transfer() {
    // A first packet lost by the time threshold while the ones after it are acknowledged left
    // its record in the window: with max_in_flight 2 or 3 nothing could be sent again.
    for bound in 1..=4 {
        let text = base()
            .replacen("duration = \"10s\"", "duration = \"120s\"", 1)
            .replacen("rate = \"10Mbps\"", "rate = \"10Mbps\"\nloss = 0.05", 1);
        let text = with(
            &text,
            "[[flows]]",
            &format!("size = \"300KB\"\nmax_in_flight = {bound}"),
        );
        let set = load(&text).expect("valid");
        let out = kleinrock_lab::runner::run(&set.points[0]);
        let flow = &out.summary.flows[0];
        assert_eq!(
            flow.delivered_bytes, 300_000,
            "max_in_flight {bound}: {} of 300000 bytes delivered",
            flow.delivered_bytes
        );
    }
}

#[test]
fn ack_options_are_range_checked_and_delaying_ones_need_delayed_acks() {
    for field in ["max_ack_delay = \"200ms\"", "ack_every = 4"] {
        let name = field.split(' ').next().expect("a name");
        let at = format!("flows[0].{name}");
        refused(&flow(field), &at, &["delayed_ack = true"]);
    }
    let delaying = "delayed_ack = true\n";
    let words = ["a whole number from 1 to 10000"];
    refused(
        &flow(&format!("{delaying}ack_every = 0")),
        "flows[0].ack_every",
        &words,
    );
    let late = format!("{delaying}max_ack_delay = \"11s\"");
    refused(&flow(&late), "flows[0].max_ack_delay", &["10s"]);
    let words = ["a whole number from 2 to 65535"];
    refused(&flow("ack_size = 1"), "flows[0].ack_size", &words);
    let set = load(&flow(&format!(
        "{delaying}max_ack_delay = \"200ms\"\nack_every = 3\nack_size = 54"
    )))
    .expect("loads");
    let kleinrock_lab::scenario::FlowTransport::Reliable { transport, .. } =
        &set.points[0].flows[0].transport
    else {
        panic!("a reliable flow");
    };
    assert_eq!(
        (
            transport.max_ack_delay.as_millis(),
            transport.ack_every,
            transport.ack_size
        ),
        (200, 3, 54)
    );
}

#[test]
fn loss_at_names_a_point_and_needs_a_loss() {
    refused(
        &link("loss_at = \"delivery\""),
        "links[0].loss_at",
        &["only applies with a loss"],
    );
    let words = ["`egress`", "arrival", "delivery"];
    refused(
        &link("loss = 0.01\nloss_at = \"egress\""),
        "links[0].loss_at",
        &words,
    );
    let set = load(&link("loss = 0.01\nloss_at = \"delivery\"")).expect("loads");
    let at = set.points[0].links[0].loss_at;
    assert_eq!(at, kleinrock_sim::LossPoint::Delivery);
}

/// The transport of the first flow of `text`, which must load.
fn transport_of(text: &str) -> kleinrock_sim::TransportConfig {
    let set = load(text).expect("loads");
    match &set.points[0].flows[0].transport {
        kleinrock_lab::scenario::FlowTransport::Reliable { transport, .. } => *transport,
        _ => panic!("a reliable flow"),
    }
}

#[test]
fn tcp_recovery_options_need_recovery_tcp_and_name_their_values() {
    use kleinrock_sim::{LossRecovery, RtoForm, TcpRecovery};
    for field in [
        "min_rto = \"200ms\"",
        "rto = \"linux\"",
        "prr = false",
        "rack = true",
    ] {
        let name = field.split(' ').next().expect("a name");
        refused(
            &flow(field),
            &format!("flows[0].{name}"),
            &["recovery = \"tcp\""],
        );
    }
    let words = ["`reno`", "quic, tcp"];
    refused(&flow("recovery = \"reno\""), "flows[0].recovery", &words);
    let words = ["`bsd`", "rfc6298, linux"];
    let bsd = "recovery = \"tcp\"\nrto = \"bsd\"";
    refused(&flow(bsd), "flows[0].rto", &words);
    let late = "recovery = \"tcp\"\nmin_rto = \"11s\"";
    refused(&flow(late), "flows[0].min_rto", &["10s"]);
    refused(
        &flow("quick_acks = 16"),
        "flows[0].quick_acks",
        &["delayed_ack = true"],
    );
    let t = transport_of(&flow(
        "recovery = \"tcp\"\nmin_rto = \"300ms\"\nrack = true",
    ));
    let expected = TcpRecovery {
        min_rto: std::time::Duration::from_millis(300),
        rack: true,
        ..TcpRecovery::default()
    };
    assert_eq!(t.recovery, LossRecovery::Tcp(expected));
    assert_eq!(expected.rto, RtoForm::Rfc6298);
    assert_eq!(t.loss_window_packets(), 1);
}

#[test]
fn a_preset_sets_the_transport_and_fields_beside_it_override_it() {
    use kleinrock_sim::{LossRecovery, RtoForm};
    refused(
        &flow("preset = \"bsd\""),
        "flows[0].preset",
        &["linux, ns3"],
    );
    let ns3 = transport_of(&flow("preset = \"ns3\""));
    // ns-3 3.44's TcpSocketBase defaults with a 1448-byte segment (docs/validation.md).
    assert_eq!(
        (ns3.packet_size, ns3.payload(), ns3.ack_size),
        (1502, 1448, 54)
    );
    assert!(ns3.delayed_ack && !ns3.pacing);
    assert_eq!((ns3.ack_every, ns3.max_ack_delay.as_millis()), (2, 200));
    let LossRecovery::Tcp(tcp) = ns3.recovery else {
        panic!("TCP recovery");
    };
    assert_eq!(
        (tcp.min_rto.as_secs(), tcp.rto, tcp.prr, tcp.rack),
        (1, RtoForm::Rfc6298, true, false)
    );
    let linux = transport_of(&flow(
        "preset = \"linux\"\nmin_rto = \"1s\"\nquick_acks = 4",
    ));
    assert_eq!((linux.quick_acks, linux.max_ack_delay.as_millis()), (4, 40));
    let LossRecovery::Tcp(tcp) = linux.recovery else {
        panic!("TCP recovery");
    };
    assert_eq!(
        (tcp.min_rto.as_secs(), tcp.rto, tcp.rack),
        (1, RtoForm::Linux, true)
    );
    // BBR sets its own pacing rate and paces in both; a field beside the preset still wins.
    let bbr = |lines: &str| flow(lines).replace("cc = \"cubic\"", "cc = \"bbr\"");
    assert!(transport_of(&bbr("preset = \"ns3\"")).pacing);
    assert!(!transport_of(&bbr("preset = \"ns3\"\npacing = false")).pacing);
    let quic = transport_of(&flow("preset = \"ns3\"\nrecovery = \"quic\""));
    assert_eq!(quic.recovery, LossRecovery::Quic);
}

#[test]
fn dccp_and_datagram_flows_refuse_the_reliable_transports_options() {
    let dccp = flow("transport = \"dccp\"\npreset = \"ns3\"").replace("cubic", "ccid2");
    refused(&dccp, "flows[0].preset", &["reliable transport"]);
    let datagram =
        flow("transport = \"datagram\"\napp = \"cbr\"\nrate = \"1Mbps\"\nrecovery = \"tcp\"")
            .replace("cc = \"cubic\"\n", "")
            .replace("reverse_path = [\"return\"]\n", "");
    refused(&datagram, "flows[0].recovery", &["reliable transport"]);
}

/// `base()` with its bottleneck paced by trace `trace_text`, both written to a fresh folder;
/// the outcome of loading the scenario from there.
fn with_trace(
    name: &str,
    link_lines: &str,
    trace_text: &str,
) -> Result<ScenarioSet, ScenarioError> {
    let dir = std::env::temp_dir().join(format!("kr-trace-{}-{name}", std::process::id()));
    std::fs::create_dir_all(dir.join("traces")).expect("a folder");
    std::fs::write(dir.join("traces/t.trace"), trace_text).expect("the trace");
    let text = link(link_lines).replacen("rate = \"10Mbps\"\n", "", 1);
    let file = dir.join("s.toml");
    std::fs::write(&file, text).expect("the scenario");
    let set = kleinrock_lab::scenario::load(&file, &[]);
    std::fs::remove_dir_all(&dir).expect("cleaned up");
    set
}

#[test]
fn a_rate_trace_is_read_beside_the_scenario_and_a_bad_one_names_its_line() {
    let traced = "rate_trace = \"traces/t.trace\"";
    // One opportunity per ms for 4 ms, repeating: 12.032 Mbit/s.
    let set = with_trace("good", traced, "1\n2\n3\n4\n").expect("loads");
    let l = &set.points[0].links[0];
    let trace = l.delivery_trace.as_ref().expect("a trace");
    assert_eq!(trace.len(), 4);
    assert!((l.rate.bits_per_sec() - 12.032e6).abs() < 1.0);
    for (name, text, words) in [
        ("empty", "", &["t.trace", "no times"][..]),
        (
            "word",
            "1\nfast\n",
            &["line 2", "`fast`", "milliseconds"][..],
        ),
        ("back", "5\n3\n", &["line 2", "must not decrease"][..]),
    ] {
        let e = with_trace(name, traced, text).expect_err("refused");
        assert_eq!(e.field, "links[0].rate_trace", "{e}");
        for w in words {
            assert!(e.message.contains(w), "`{w}` not in: {e}");
        }
    }
    let both = format!("{traced}\nrate = \"5Mbps\"");
    let e = with_trace("both", &both, "1\n").expect_err("refused");
    assert!(e.message.contains("not both"), "{e}");
    let e = with_trace("none", "", "1\n").expect_err("refused");
    assert_eq!(e.field, "links[0].rate", "{e}");
    assert!(e.message.contains("rate_trace"), "{e}");
    let e =
        with_trace("missing", "rate_trace = \"traces/nope.trace\"", "1\n").expect_err("refused");
    assert!(e.message.contains("nope.trace: cannot read"), "{e}");
}

#[test]
fn a_runs_own_text_carries_its_trace_so_it_runs_without_the_file() {
    // What a sweep hands to another process or machine (and what its cache key covers) is the
    // run's own text: a trace file is written into it as { times_ms = [...] }.
    use kleinrock_lab::scenario::{parse_point, point_specs, PointSpec};
    let dir = std::env::temp_dir().join(format!("kr-trace-{}-inline", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    std::fs::write(dir.join("t.trace"), "1\n1\n3\n4\n").expect("the trace");
    let text = link("rate_trace = \"t.trace\"").replacen("rate = \"10Mbps\"\n", "", 1);
    let origin = dir.join("s.toml").display().to_string();
    let specs = point_specs(&text, &origin, "s", &[]).expect("expands");
    std::fs::remove_dir_all(&dir).expect("cleaned up");
    assert!(
        specs[0].text.contains("times_ms = [1, 1, 3, 4]"),
        "{}",
        specs[0].text
    );
    let elsewhere = PointSpec {
        origin: "/nowhere/s.toml".into(),
        ..specs[0].clone()
    };
    let s = parse_point(&elsewhere).expect("runs without the file");
    let trace = s.links[0].delivery_trace.as_ref().expect("a trace");
    assert_eq!(trace.times_ms().collect::<Vec<_>>(), [1, 1, 3, 4]);
    let words = ["times_ms[1]", "before the one above"];
    let bad = link("rate_trace = { times_ms = [5, 3] }").replacen("rate = \"10Mbps\"\n", "", 1);
    refused(&bad, "links[0].rate_trace", &words);
}
