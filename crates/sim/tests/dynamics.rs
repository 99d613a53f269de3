//! Changes during a run (controller parameters, route changes) and short-flow arrivals, seen
//! through a controller with a fixed window that a runtime parameter resizes.

use kleinrock_cc::{
    AckEvent, CongestionEvent, Controller, ControllerState, Instant, ParamValue, Rate,
};
use kleinrock_sim::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Log {
    /// `set_param` calls: time, name, value.
    changes: Vec<(u64, String, ParamValue)>,
    /// RTT samples: time, RTT, both ns.
    rtts: Vec<(u64, u64)>,
    congestion_events: u64,
}

/// A window of `cwnd` bytes; the runtime parameter `window_packets` sets it.
struct Knob {
    cwnd: u64,
    log: Arc<Mutex<Log>>,
}

impl Knob {
    fn boxed(packets: u64, log: &Arc<Mutex<Log>>) -> Box<dyn Controller> {
        Box::new(Knob {
            cwnd: packets * 1500,
            log: log.clone(),
        })
    }
}

impl Controller for Knob {
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        if let Some(rtt) = ack.rtt_sample {
            let sample = (now.as_nanos(), rtt.as_nanos() as u64);
            self.log.lock().unwrap().rtts.push(sample);
        }
    }
    fn on_congestion(&mut self, _now: Instant, _e: &CongestionEvent) {
        self.log.lock().unwrap().congestion_events += 1;
    }
    fn set_param(&mut self, now: Instant, name: &str, value: &ParamValue) {
        if let ("window_packets", ParamValue::Number(n)) = (name, value) {
            self.cwnd = *n as u64 * 1500;
        }
        let call = (now.as_nanos(), name.to_string(), value.clone());
        self.log.lock().unwrap().changes.push(call);
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// 10 Mbps links: `bottleneck` (index 0) with `delay_ms` and 100 packets of buffer, and a
/// 25 ms return link (index 1).
fn links(delay_ms: u64) -> Vec<LinkConfig> {
    let rate = Rate::from_bits_per_sec(10e6);
    let link = |name: &str, ms| {
        LinkConfig::drop_tail(
            name,
            rate,
            Duration::from_millis(ms),
            BufferLimit::Packets(100),
        )
    };
    vec![link("bottleneck", delay_ms), link("return", 25)]
}

/// A flow of `kind` over the bottleneck and back, starting at `start_ms`.
fn flow(kind: FlowKind, app: AppConfig, start_ms: u64) -> FlowConfig {
    FlowConfig {
        name: "f".into(),
        kind,
        forward: vec![0],
        reverse: vec![1],
        app,
        start: Duration::from_millis(start_ms),
        stop: None,
        events: vec![],
    }
}

fn config(seconds: u64, route_changes: Vec<RouteChange>, flows: Vec<FlowConfig>) -> SimConfig {
    SimConfig {
        duration: Duration::from_secs(seconds),
        seed: 1,
        warmup: Duration::ZERO,
        trace_interval: None,
        links: links(25),
        route_changes,
        flows,
        tunnels: Vec::new(),
    }
}

/// A bulk flow with a window of `packets`, logging into the returned log.
fn bulk(packets: u64) -> (FlowConfig, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let kind = FlowKind::Reliable {
        controller: Knob::boxed(packets, &log),
        transport: TransportConfig::default(),
    };
    (flow(kind, AppConfig::Bulk { bytes: None }, 0), log)
}

fn change(at_ms: u64, name: &str, value: ParamValue) -> ParamChange {
    ParamChange {
        at: Duration::from_millis(at_ms),
        name: name.into(),
        value,
    }
}

#[test]
fn a_parameter_change_reaches_the_controller_at_its_time_and_takes_effect() {
    // A window of 10 packets over a 50 ms path, then 30 from 2 s on: 10 x 1460 B per RTT
    // (about 51.2 ms with the serialisations), then three times that.
    let (mut f, log) = bulk(10);
    f.events = vec![
        change(2000, "window_packets", ParamValue::Number(30.0)),
        change(500, "label", ParamValue::Text("x".into())),
    ];
    let r = Simulator::new(config(4, vec![], vec![f])).run();
    let log = log.lock().unwrap();
    let times: Vec<u64> = log.changes.iter().map(|c| c.0).collect();
    assert_eq!(times, [500 * MS, 2 * SEC], "calls in time order, on time");
    assert_eq!(log.changes[0].2, ParamValue::Text("x".into()));
    let per_rtt = 1460.0 / 0.0512;
    let expected = 2.0 * (10.0 + 30.0) * per_rtt;
    let got = r.flows[0].counters.bytes_delivered as f64;
    // Slow start is absent (a fixed window); the first and last RTT of each phase carry
    // less: 5 % allowed.
    assert!(
        (got - expected).abs() < 0.05 * expected,
        "{got} bytes, expected about {expected}"
    );
}

#[test]
fn a_change_before_the_start_applies_from_the_first_packet() {
    let (mut f, log) = bulk(10);
    f.start = Duration::from_secs(1);
    f.events = vec![change(0, "window_packets", ParamValue::Number(30.0))];
    let r = Simulator::new(config(3, vec![], vec![f])).run();
    assert_eq!(log.lock().unwrap().changes.len(), 1);
    let expected = 2.0 * 30.0 * 1460.0 / 0.0512;
    let got = r.flows[0].counters.bytes_delivered as f64;
    assert!((got - expected).abs() < 0.05 * expected, "{got} bytes");
}

fn route(at_ms: u64, delay_ms: u64) -> RouteChange {
    RouteChange {
        link: 0,
        at: Duration::from_millis(at_ms),
        delay: Duration::from_millis(delay_ms),
    }
}

/// The smallest and largest RTT sample taken in `[from_ms, to_ms)`, ms.
fn rtt_range(log: &Log, from_ms: u64, to_ms: u64) -> (f64, f64) {
    let inside = log
        .rtts
        .iter()
        .filter(|s| (from_ms * MS..to_ms * MS).contains(&s.0))
        .map(|s| s.1 as f64 / 1e6);
    let (lo, hi) = inside.fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    (lo, hi)
}

#[test]
fn a_route_change_moves_the_rtt_and_keeps_packets_in_order() {
    // The forward delay goes 25 -> 5 -> 45 ms; the return link stays at 25 ms. With 20
    // packets in flight (below the BDP: no queue), each RTT is the propagation plus about
    // 1.2 ms of serialisation. The drop at 2 s would let about 20 ms of packets overtake the
    // ones ahead of them; kept in order, nothing is ever declared lost.
    let (f, log) = bulk(20);
    let r = Simulator::new(config(6, vec![route(2000, 5), route(4000, 45)], vec![f])).run();
    let log = log.lock().unwrap();
    for (from, to, base) in [(200, 2000, 50.0), (2100, 4000, 30.0), (4100, 6000, 70.0)] {
        let (lo, hi) = rtt_range(&log, from, to);
        assert!(
            lo >= base + 1.0 && hi <= base + 3.0,
            "RTT in [{from}, {to}) ms: {lo}-{hi} ms, base {base} ms"
        );
    }
    assert_eq!(log.congestion_events, 0);
    assert_eq!(r.flows[0].counters.packets_lost, 0);
}

/// An arrival process of `bytes`-byte transfers, each with a window of `packets`, starting at
/// `start_ms`; the factory records which transfer numbers it was asked for.
fn arrivals(
    interarrival: Interarrival,
    count: Option<u64>,
    bytes: u64,
    start_ms: u64,
) -> (FlowConfig, Arc<Mutex<Vec<u64>>>) {
    let built = Arc::new(Mutex::new(Vec::new()));
    let record = built.clone();
    let log = Arc::new(Mutex::new(Log::default()));
    let kind = FlowKind::Arrivals {
        controllers: Box::new(move |k| {
            record.lock().unwrap().push(k);
            Knob::boxed(70, &log)
        }),
        transport: TransportConfig::default(),
        arrivals: ArrivalConfig {
            interarrival,
            count,
        },
    };
    let app = AppConfig::Bulk { bytes: Some(bytes) };
    (flow(kind, app, start_ms), built)
}

fn every(ms: u64) -> Interarrival {
    Interarrival::Fixed(Duration::from_millis(ms))
}

#[test]
fn short_transfers_arrive_on_schedule_and_each_completes() {
    // 100 kB = 69 packets, all in the first flight (window 70, no pacing before an RTT
    // sample): the last one is serialised after 68 x 1.2 ms + 0.6 ms and arrives 25 ms later.
    let (f, built) = arrivals(every(1000), Some(4), 100_000, 500);
    let r = Simulator::new(config(20, vec![], vec![f])).run();
    let s = &r.flows[0];
    let t = s
        .transfers
        .as_ref()
        .expect("an arrival process reports transfers");
    assert_eq!((t.started, t.completed), (4, 4));
    assert_eq!(
        *built.lock().unwrap(),
        [0, 1, 2, 3],
        "a fresh controller each"
    );
    assert_eq!(s.counters.bytes_delivered, 400_000);
    assert_eq!(s.counters.packets_lost, 0);
    let (fct_min, fct_max) = (t.completion_times.min(), t.completion_times.max());
    let expected = 25 * MS + 68 * 1_200_000 + 600_000;
    for fct in [fct_min, fct_max] {
        assert!(fct.unwrap().abs_diff(expected) < MS, "FCT {fct:?}");
    }
    // Bounded, so the run ends when the last transfer's last ACK is in: 3.5 s + FCT + 25 ms.
    assert!(r.end_ns.abs_diff(3500 * MS + expected + 25 * MS) < 2 * MS);
    assert_eq!(s.active_ns, r.end_ns - 500 * MS);
}

#[test]
fn overlapping_transfers_run_in_parallel_and_share_the_link() {
    // A 1 MB transfer every 10 ms: they overlap, every one completes, and the link carries
    // them all (no cross-talk between transfers: each gets exactly its bytes).
    let (f, built) = arrivals(every(10), Some(5), 1_000_000, 0);
    let mut c = config(30, vec![], vec![f]);
    c.trace_interval = Some(Duration::from_millis(5));
    let r = Simulator::new(c).run();
    let t = r.flows[0].transfers.as_ref().unwrap();
    assert_eq!((t.started, t.completed), (5, 5));
    assert_eq!(built.lock().unwrap().len(), 5);
    assert_eq!(r.flows[0].counters.bytes_delivered, 5_000_000);
    let trace = r.trace.as_ref().unwrap();
    let active = trace.flows[0].column("active_transfers").unwrap();
    assert_eq!(active.iter().cloned().fold(0.0, f64::max), 5.0);
}

#[test]
fn a_lossy_link_loses_no_byte_of_any_transfer() {
    // 2 % random loss: retransmissions, probes and duplicates of finished transfers still in
    // the network must not reach a newer transfer.
    let (f, _) = arrivals(every(50), Some(40), 200_000, 0);
    let mut c = config(60, vec![], vec![f]);
    c.links[0].loss = LossConfig::Bernoulli { p: 0.02 };
    let r = Simulator::new(c).run();
    let s = &r.flows[0];
    assert_eq!(s.transfers.as_ref().unwrap().completed, 40);
    assert_eq!(s.counters.bytes_delivered, 40 * 200_000);
    assert!(s.counters.packets_lost > 0);
}

#[test]
fn only_transfers_in_the_window_count() {
    // Transfers at 0, 1, 2 and 3 s of about 108 ms each; the window opens at 1.5 s.
    let (f, _) = arrivals(every(1000), Some(4), 100_000, 0);
    let mut c = config(20, vec![], vec![f]);
    c.warmup = Duration::from_millis(1500);
    let r = Simulator::new(c).run();
    let t = r.flows[0].transfers.as_ref().unwrap();
    assert_eq!((t.started, t.completed), (2, 2));
    assert_eq!(r.flows[0].counters.bytes_delivered, 200_000);
}

/// Runs a stopped uniform arrival process beside a bulk flow with seed `seed`.
fn seeded_run(seed: u64) -> SimResult {
    let range = (Duration::from_millis(200), Duration::from_millis(400));
    let (mut short, _) = arrivals(Interarrival::Uniform(range.0, range.1), None, 50_000, 0);
    short.stop = Some(Duration::from_secs(8));
    let (long, _) = bulk(40);
    let mut c = config(10, vec![], vec![long, short]);
    c.seed = seed;
    Simulator::new(c).run()
}

#[test]
fn arrivals_are_deterministic_per_seed() {
    let (a, b, other) = (seeded_run(1), seeded_run(1), seeded_run(2));
    assert_eq!(a.flows, b.flows);
    let started = |r: &SimResult| r.flows[1].transfers.as_ref().unwrap().started;
    // 8 s of arrivals 200-400 ms apart: 20 to 40 of them.
    assert!((20..=40).contains(&started(&a)), "{}", started(&a));
    assert_ne!(a.flows[1], other.flows[1]);
}
