//! Scenario files with changes during a run (controller parameter events, link delay
//! schedules), short-flow arrivals and a sending host's rate: the TOML, its errors, and what a
//! run reports.

#[allow(dead_code)]
mod common;

use common::{dumbbell, run_text, summary, with};
use kleinrock_cc::ParamValue;
use kleinrock_lab::scenario::{parse, FlowTransport, Scenario, ScenarioError};
use kleinrock_sim::{AppConfig, ArrivalConfig, BufferLimit, Interarrival, ParamChange};
use std::time::Duration;

fn scenario(text: &str) -> Scenario {
    let set = parse(text, "fig.toml", "test", &[]).unwrap_or_else(|e| panic!("{e}"));
    set.points[0].clone()
}

fn error(text: &str) -> ScenarioError {
    parse(text, "fig.toml", "test", &[]).expect_err("the scenario is invalid")
}

/// `flow_lines` added to the single flow of a 10 Mbps, 50 ms each way dumbbell running `cc`.
fn flow_with(cc: &str, flow_lines: &str) -> String {
    let base = dumbbell(cc, "10Mbps", "50ms", "0.5bdp", "60s");
    with(&base, "[[flows]]", flow_lines)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[test]
fn an_event_changes_a_runtime_parameter_at_its_time() {
    let text = flow_with(
        "siad",
        r#"events = [{ at = "40s", params = { num_rtt = 30 } }, { at = "30s", params = { num_rtt = 40 } }]"#,
    );
    let s = scenario(&text);
    let change = |at, v| ParamChange {
        at: secs(at),
        name: "num_rtt".into(),
        value: ParamValue::Number(v),
    };
    assert_eq!(s.flows[0].events, [change(30, 40.0), change(40, 30.0)]);
    // It runs: the controller takes the change during the run.
    let out = run_text(&text.replace("\"60s\"", "\"35s\""));
    assert!(out.summary.flows[0].goodput_bps > 5e6);
}

#[test]
fn a_parameter_that_cannot_change_during_a_run_is_named() {
    let e = error(&flow_with(
        "cubic",
        r#"events = [{ at = "30s", params = { beta = 0.5 } }]"#,
    ));
    assert_eq!(e.field, "flows[0].events[0].params.beta");
    assert!(e.message.contains("`cubic` cannot change `beta`"), "{e}");
    assert!(e.to_string().starts_with("fig.toml: "));
    let e = error(&flow_with(
        "siad",
        r#"events = [{ at = "30s", params = { num_ms = "1s" } }]"#,
    ));
    assert!(e.message.contains("accepted: num_rtt"), "{e}");
}

#[test]
fn an_invalid_new_value_names_the_event_and_what_is_accepted() {
    let e = error(&flow_with(
        "siad",
        r#"events = [{ at = "10s", params = { num_rtt = 40 } }, { at = "20s", params = { num_rtt = 1 } }]"#,
    ));
    assert_eq!(e.field, "flows[0].events[1].params.num_rtt");
    assert!(e.message.contains("accepted"), "{e}");
    let e = error(&flow_with(
        "siad",
        r#"events = [{ at = "10s", params = { num_rtt = "many" } }]"#,
    ));
    assert_eq!(e.field, "flows[0].events[0].params.num_rtt");
    let e = error(&flow_with(
        "siad",
        r#"events = [{ at = "soon", params = {} }]"#,
    ));
    assert_eq!(e.field, "flows[0].events[0].at");
    let e = error(&flow_with(
        "siad",
        r#"events = [{ at = "1s", params = {} }]"#,
    ));
    assert_eq!(e.field, "flows[0].events[0].params");
}

#[test]
fn events_need_a_single_connection_with_a_controller() {
    let base = dumbbell("newreno", "10Mbps", "50ms", "1bdp", "10s");
    let text = format!(
        "{base}\n[[flows]]\ntransport = \"datagram\"\napp = \"cbr\"\nrate = \"1Mbps\"\n\
         path = [\"bottleneck\"]\nevents = [{{ at = \"1s\", params = {{ x = 1 }} }}]\n"
    );
    assert_eq!(error(&text).field, "flows[1].events");
    let e = error(&flow_with(
        "siad",
        r#"arrivals = { size = "100KB", interarrival = "1s" }
events = [{ at = "1s", params = { num_rtt = 30 } }]"#,
    ));
    assert_eq!(e.field, "flows[0].events");
}

/// The Fig. 6 dumbbell of the SIAD paper with `cc`: base RTT 100 ms, 40 ms from 30 s,
/// 140 ms from 60 s (each direction changes by half).
fn route_change(cc: &str) -> String {
    let base = dumbbell(cc, "10Mbps", "50ms", "0.5bdp", "90s");
    let steps =
        r#"delay_schedule = [{ at = "30s", delay = "20ms" }, { at = "60s", delay = "70ms" }]"#;
    let text = with(&base, "name = \"bottleneck\"", steps);
    with(&text, "name = \"return\"", steps)
}

#[test]
fn a_delay_schedule_is_a_route_change_and_bdp_buffers_use_the_initial_delay() {
    let s = scenario(&route_change("newreno"));
    let steps: Vec<(usize, Duration, Duration)> = s
        .route_changes
        .iter()
        .map(|c| (c.link, c.at, c.delay))
        .collect();
    let ms = Duration::from_millis;
    assert_eq!(
        steps,
        [
            (0, secs(30), ms(20)),
            (0, secs(60), ms(70)),
            (1, secs(30), ms(20)),
            (1, secs(60), ms(70)),
        ]
    );
    // 0.5 x 10 Mbps x 100 ms.
    assert_eq!(s.links[0].buffer, BufferLimit::Bytes(62_500));
    assert_eq!(s.base_rtt(0), ms(100));
}

#[test]
fn delay_steps_are_checked() {
    let base = dumbbell("newreno", "10Mbps", "50ms", "1bdp", "10s");
    let at_link = |steps: &str| with(&base, "name = \"bottleneck\"", steps);
    let e = error(&at_link(
        r#"delay_schedule = [{ at = "3s", delay = "20ms" }, { at = "2s", delay = "70ms" }]"#,
    ));
    assert_eq!(e.field, "links[0].delay_schedule[1].at");
    assert!(e.message.contains("time order"), "{e}");
    let e = error(&at_link(
        r#"delay_schedule = [{ at = "3s", delay = "fast" }]"#,
    ));
    assert_eq!(e.field, "links[0].delay_schedule[0].delay");
}

/// Smallest trace value of `column` in `[from, to)` seconds.
fn trace_min(out: &kleinrock_lab::runner::RunOutput, column: &str, from: f64, to: f64) -> f64 {
    let series = &out.result.trace.as_ref().expect("traced").flows[0];
    let values = series.column(column).expect("column present");
    series
        .time_s
        .iter()
        .zip(values)
        .filter(|(t, v)| (from..to).contains(*t) && v.is_finite())
        .map(|(_, v)| *v)
        .fold(f64::INFINITY, f64::min)
}

#[test]
fn a_run_follows_the_route_changes() {
    // NewReno drains the 0.5 BDP buffer at each loss, so its smallest RTT in each phase is
    // the base RTT plus a serialisation (1.2 ms) or two.
    let text = with(
        &route_change("newreno"),
        "seed = 1",
        "trace_interval = \"10ms\"",
    );
    let out = run_text(&text);
    for (from, to, base) in [(10.0, 30.0, 100.0), (40.0, 60.0, 40.0), (70.0, 90.0, 140.0)] {
        let min = trace_min(&out, "latest_rtt_ms", from, to);
        assert!(
            (base..base + 3.0).contains(&min),
            "smallest RTT in [{from}, {to}) s: {min} ms, base {base} ms"
        );
    }
}

/// A bulk `cc` flow beside short-flow arrivals (`arrivals` is the TOML table) of the same
/// controller, on 10 Mbps / 0.5 BDP.
fn with_short_flows(cc: &str, arrivals: &str, duration: &str) -> String {
    let base = dumbbell(cc, "10Mbps", "50ms", "0.5bdp", duration);
    format!(
        "{base}\n[[flows]]\nname = \"short\"\ncc = \"{cc}\"\npath = [\"bottleneck\"]\n\
         reverse_path = [\"return\"]\narrivals = {arrivals}\n"
    )
}

const FIG13: &str = r#"{ size = "300KB", interarrival = { uniform = ["2s", "3s"] } }"#;

#[test]
fn arrivals_take_a_size_an_interarrival_and_a_count() {
    let s = scenario(&with_short_flows("newreno", FIG13, "60s"));
    let short = &s.flows[1];
    let range = Interarrival::Uniform(secs(2), secs(3));
    assert_eq!(
        short.arrivals,
        Some(ArrivalConfig {
            interarrival: range,
            count: None
        })
    );
    assert_eq!(
        short.app,
        AppConfig::Bulk {
            bytes: Some(300_000)
        }
    );
    let forms = [
        (
            r#""500ms""#,
            Interarrival::Fixed(Duration::from_millis(500)),
        ),
        (
            r#"{ exponential = "2.5s" }"#,
            Interarrival::Exponential(Duration::from_millis(2500)),
        ),
    ];
    for (text, expected) in forms {
        let a = format!(r#"{{ size = "1MB", interarrival = {text}, count = 3 }}"#);
        let s = scenario(&with_short_flows("cubic", &a, "10s"));
        let got = s.flows[1].arrivals.expect("arrivals");
        assert_eq!((got.interarrival, got.count), (expected, Some(3)));
    }
}

#[test]
fn bad_arrivals_are_named() {
    let cases = [
        (
            r#"{ size = "0B", interarrival = "1s" }"#,
            "flows[1].arrivals.size",
        ),
        (
            r#"{ size = "1MB", interarrival = "1s", count = 0 }"#,
            "flows[1].arrivals.count",
        ),
        (
            r#"{ size = "1MB", interarrival = "0s" }"#,
            "flows[1].arrivals.interarrival",
        ),
        (
            r#"{ size = "1MB", interarrival = { uniform = ["3s", "2s"] } }"#,
            "flows[1].arrivals.interarrival",
        ),
        (
            r#"{ size = "1MB", interarrival = { normal = "2s" } }"#,
            "flows[1].arrivals.interarrival",
        ),
        (
            r#"{ size = "1MB", interarrival = 2 }"#,
            "flows[1].arrivals.interarrival",
        ),
        (r#"{ size = "1MB" }"#, "flows[1].arrivals"),
    ];
    for (arrivals, field) in cases {
        let e = error(&with_short_flows("newreno", arrivals, "10s"));
        assert_eq!(e.field, field, "{arrivals}: {e}");
    }
    let e = error(&with_short_flows(
        "newreno",
        r#"{ size = "1MB", interarrival = {} }"#,
        "10s",
    ));
    assert!(
        e.message.contains("uniform") && e.message.contains("exponential"),
        "{e}"
    );
    let sized = with_short_flows("newreno", FIG13, "10s")
        .replace("name = \"short\"", "name = \"short\"\nsize = \"1MB\"");
    assert_eq!(error(&sized).field, "flows[1].size");
}

#[test]
fn short_flow_arrivals_report_one_row() {
    // The SIAD paper's Fig. 13 cross traffic: 300 KB every 2-3 s beside one long flow.
    let s = summary(&with_short_flows("newreno", FIG13, "60s"));
    assert_eq!(s.flows.len(), 2);
    let short = &s.flows[1];
    assert_eq!(
        (short.name.as_str(), short.cc.as_str()),
        ("short", "newreno")
    );
    // 300 KB at 10 Mbps takes at least 0.24 s, plus slow start over a 100 ms RTT.
    let fct = short.completion_s.expect("transfers completed");
    assert!((0.3..3.0).contains(&fct), "mean FCT {fct} s");
    // 20 to 30 transfers of 300 KB over about 60 s: 0.8 to 1.2 Mbps of goodput.
    assert!(
        (0.8e6..1.25e6).contains(&short.goodput_bps),
        "{} bps",
        short.goodput_bps
    );
    assert_eq!(short.loss_event_distance_s, None);
    assert_eq!(
        s.jain_index, None,
        "cross traffic is not in the fairness index"
    );
}

#[test]
fn arrivals_follow_the_seed() {
    let text = with_short_flows("cubic", FIG13, "30s");
    let again = summary(&text);
    assert_eq!(summary(&text), again);
    let other = summary(&text.replace("seed = 1", "seed = 2"));
    assert_ne!(other.flows[1], again.flows[1]);
}

#[test]
fn a_host_rate_and_its_jitter_are_read_and_checked() {
    let s = scenario(&flow_with(
        "cubic",
        "host_rate = \"100Mbps\"\nhost_jitter = 0.2",
    ));
    let FlowTransport::Reliable { transport: t, .. } = &s.flows[0].transport else {
        panic!("a reliable flow");
    };
    assert_eq!(t.host_rate.map(|r| r.bits_per_sec()), Some(100e6));
    assert_eq!(t.host_jitter, 0.2);
    let s = scenario(&flow_with("cubic", "host_rate = \"100Mbps\""));
    let FlowTransport::Reliable { transport, .. } = &s.flows[0].transport else {
        panic!("a reliable flow");
    };
    assert_eq!(transport.host_jitter, 0.5, "the default");
    for bad in ["1.5", "-0.1", "nan"] {
        let e = error(&flow_with("cubic", &format!("host_jitter = {bad}")));
        assert_eq!(e.field, "flows[0].host_jitter");
        assert!(e.message.contains("accepted: 0"), "{e}");
    }
    let e = error(&flow_with("cubic", "host_rate = \"fast\""));
    assert_eq!(e.field, "flows[0].host_rate");
    let e = error(&flow_with(
        "cubic",
        "host_rate = \"100Mbps\"\npacing = false",
    ));
    assert_eq!(e.field, "flows[0].host_rate");
    assert!(e.message.contains("pacing = true"), "{e}");
}
