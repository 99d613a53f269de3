//! Transport behaviour seen through a controller that records what it is told.

use kleinrock_cc::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerState, Instant, Rate,
    SentPacket,
};
use kleinrock_sim::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct Log {
    owd_ns: Vec<i128>,
    sent_ns: Vec<u64>,
    acks: u64,
    congestion: Vec<CongestionKind>,
    congestion_ns: Vec<u64>,
}

impl Log {
    fn sent(&mut self, now: Instant) {
        self.sent_ns.push(now.as_nanos());
    }

    fn congested(&mut self, now: Instant, e: &CongestionEvent) {
        self.congestion.push(e.kind);
        self.congestion_ns.push(now.as_nanos());
    }
}

/// A fixed window, and a fixed pacing rate if any, that logs its inputs.
struct Recorder {
    cwnd: u64,
    pacing: Option<Rate>,
    log: Arc<Mutex<Log>>,
}

impl Controller for Recorder {
    fn on_sent(&mut self, now: Instant, _packet: &SentPacket) {
        self.log.lock().unwrap().sent(now);
    }
    fn on_ack(&mut self, _now: Instant, ack: &AckEvent) {
        let mut log = self.log.lock().unwrap();
        log.acks += 1;
        if let Some(s) = ack.one_way_delay {
            log.owd_ns
                .push(s.receive_time.as_nanos() as i128 - s.sent_time.as_nanos() as i128);
        }
    }
    fn on_congestion(&mut self, now: Instant, e: &CongestionEvent) {
        self.log.lock().unwrap().congested(now, e);
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn pacing_rate(&self) -> Option<Rate> {
        self.pacing
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
}

fn link(name: &str, delay_ms: u64, buffer: u64) -> LinkConfig {
    LinkConfig {
        name: name.into(),
        rate: Rate::from_bits_per_sec(10e6),
        schedule: vec![],
        delivery_trace: None,
        delay: Duration::from_millis(delay_ms),
        jitter: Duration::ZERO,
        loss: LossConfig::None,
        loss_at: LossPoint::Arrival,
        policer: None,
        qdisc: QdiscConfig::Fifo,
        buffer: BufferLimit::Packets(buffer),
    }
}

/// Runs one flow driven by a [`Recorder`] with a window of `cwnd_packets`.
fn simulate(
    cwnd_packets: u64,
    links: Vec<LinkConfig>,
    reverse: Vec<usize>,
    transport: TransportConfig,
    app: AppConfig,
) -> (SimResult, Arc<Mutex<Log>>) {
    let recorder = |log| Recorder {
        cwnd: cwnd_packets * 1500,
        pacing: None,
        log,
    };
    simulate_with(recorder, links, reverse, transport, app)
}

/// A registry controller whose inputs are logged.
struct Logged {
    inner: Box<dyn Controller>,
    log: Arc<Mutex<Log>>,
}

impl Controller for Logged {
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        self.log.lock().unwrap().sent(now);
        self.inner.on_sent(now, packet);
    }
    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        self.log.lock().unwrap().acks += 1;
        self.inner.on_ack(now, ack);
    }
    fn on_congestion(&mut self, now: Instant, e: &CongestionEvent) {
        self.log.lock().unwrap().congested(now, e);
        self.inner.on_congestion(now, e);
    }
    fn cwnd(&self) -> u64 {
        self.inner.cwnd()
    }
    fn ssthresh(&self) -> Option<u64> {
        self.inner.ssthresh()
    }
    fn pacing_rate(&self) -> Option<Rate> {
        self.inner.pacing_rate()
    }
    fn state(&self) -> ControllerState {
        self.inner.state()
    }
}

/// Runs one flow driven by the [`Recorder`] that `recorder` makes around a fresh log.
fn simulate_with(
    recorder: impl FnOnce(Arc<Mutex<Log>>) -> Recorder,
    links: Vec<LinkConfig>,
    reverse: Vec<usize>,
    transport: TransportConfig,
    app: AppConfig,
) -> (SimResult, Arc<Mutex<Log>>) {
    let log = Arc::new(Mutex::new(Log::default()));
    let controller = Box::new(recorder(log.clone()));
    let flow = (controller as Box<dyn Controller>, transport, app);
    (simulate_full(flow, links, (vec![0], reverse), vec![]), log)
}

/// Runs one flow of `controller`, `transport` and `app` for 60 s over `links` by the paths
/// `forward` and `reverse`, with the delay changes `route_changes`.
fn simulate_full(
    (controller, transport, app): (Box<dyn Controller>, TransportConfig, AppConfig),
    links: Vec<LinkConfig>,
    (forward, reverse): (Vec<usize>, Vec<usize>),
    route_changes: Vec<RouteChange>,
) -> SimResult {
    Simulator::new(SimConfig {
        duration: Duration::from_secs(60),
        seed: 3,
        warmup: Duration::ZERO,
        trace_interval: None,
        links,
        route_changes,
        flows: vec![FlowConfig {
            name: "f".into(),
            kind: FlowKind::Reliable {
                controller,
                transport,
            },
            forward,
            reverse,
            app,
            start: Duration::ZERO,
            stop: None,
            events: vec![],
        }],
        tunnels: Vec::new(),
    })
    .run()
}

/// One flow over `forward` and a 25 ms return link.
fn run(
    cwnd_packets: u64,
    forward: LinkConfig,
    transport: TransportConfig,
    app: AppConfig,
) -> (SimResult, Arc<Mutex<Log>>) {
    let links = vec![forward, link("return", 25, 1000)];
    simulate(cwnd_packets, links, vec![1], transport, app)
}

const BULK: AppConfig = AppConfig::Bulk { bytes: None };

#[test]
fn one_way_delay_samples_measure_the_path() {
    // A window of BDP + 20 packets on 10 Mbps / 50 ms keeps a standing queue of about 20
    // packets (24 ms): one-way delays lie between 25 ms + one serialisation and that plus the
    // buffer's drain time.
    let (_, log) = run(62, link("fwd", 25, 100), TransportConfig::default(), BULK);
    let log = log.lock().unwrap();
    assert!(
        log.owd_ns.len() as u64 > log.acks / 2,
        "samples on most ACKs"
    );
    let ser = 1_200_000;
    let lo = 25_000_000 + ser;
    let hi = lo + 101 * ser;
    assert!(log.owd_ns.iter().all(|&d| d >= lo && d <= hi));
    let steady = log.owd_ns[log.owd_ns.len() - 1] - lo;
    assert!(
        (steady - 20 * ser).abs() <= 2 * ser,
        "standing queue delay {steady} ns"
    );
}

/// The gaps between consecutive sends (second half of the run) of a flow paced at
/// `pacing_mbps` with a 1000-packet window, on a host of `host_mbps` with `host_jitter`,
/// over a 10 Mbit/s path that never queues it (both rates below 10 Mbit/s).
fn host_gaps(pacing_mbps: f64, host_mbps: f64, host_jitter: f64) -> Vec<i64> {
    let t = TransportConfig {
        host_rate: Some(Rate::from_bits_per_sec(host_mbps * 1e6)),
        host_jitter,
        ..TransportConfig::default()
    };
    let recorder = |log| Recorder {
        cwnd: 1000 * 1500,
        pacing: Some(Rate::from_bits_per_sec(pacing_mbps * 1e6)),
        log,
    };
    let links = vec![link("fwd", 25, 100), link("return", 25, 1000)];
    let (_, log) = simulate_with(recorder, links, vec![1], t, BULK);
    let log = log.lock().unwrap();
    log.sent_ns[log.sent_ns.len() / 2..]
        .windows(2)
        .map(|w| w[1] as i64 - w[0] as i64)
        .collect()
}

#[test]
fn a_sender_held_to_the_host_rate_sends_at_it_with_jittered_gaps() {
    let gap = 2_400_000; // 1500 B at 5 Mbit/s
    let periodic = host_gaps(8.0, 5.0, 0.0);
    assert!(periodic.iter().all(|&g| (g - gap).abs() <= 1), "exact gaps");
    // Each gap is the host rate's times U[0.5, 1.5] (standard deviation 0.29). Over the
    // ~12,000 gaps the mean's standard error is 0.26 %, so 1 % is about 4 of them; and both
    // ends of the range are reached within 5 %.
    let jittered = host_gaps(8.0, 5.0, 0.5);
    let mean = jittered.iter().sum::<i64>() as f64 / jittered.len() as f64;
    assert!((mean / gap as f64 - 1.0).abs() < 0.01, "mean gap {mean} ns");
    let (lo, hi) = (gap / 2, gap * 3 / 2);
    assert!(jittered.iter().all(|&g| g >= lo - 1 && g <= hi + 1));
    assert!(jittered.iter().any(|&g| g < lo + gap / 20));
    assert!(jittered.iter().any(|&g| g > hi - gap / 20));
}

#[test]
fn below_the_host_rate_pacing_is_exact() {
    let gap = 3_000_000; // 1500 B at 4 Mbit/s
    let gaps = host_gaps(4.0, 5.0, 0.5);
    assert!(
        gaps.iter().all(|&g| (g - gap).abs() <= 1),
        "{:?}",
        &gaps[..10]
    );
}

#[test]
fn no_timestamps_no_samples() {
    let t = TransportConfig {
        receive_timestamps: false,
        ..TransportConfig::default()
    };
    let (_, log) = run(20, link("fwd", 25, 100), t, BULK);
    assert!(log.lock().unwrap().owd_ns.is_empty());
}

#[test]
fn jitter_never_reorders() {
    // Window below the BDP (no queue, no drops) and 5 ms jitter: with order kept, nothing is
    // ever declared lost.
    let mut fwd = link("fwd", 25, 100);
    fwd.jitter = Duration::from_millis(5);
    let (result, log) = run(30, fwd, TransportConfig::default(), BULK);
    assert_eq!(result.flows[0].counters.packets_lost, 0);
    assert!(log.lock().unwrap().congestion.is_empty());
    assert!(result.flows[0].counters.bytes_delivered > 10_000_000);
}

#[test]
fn delayed_acks_halve_the_ack_count() {
    // RFC 9000 §13.2.2: an ACK at least every second ack-eliciting packet.
    let t = TransportConfig {
        delayed_ack: true,
        ..TransportConfig::default()
    };
    let (result, _) = run(30, link("fwd", 25, 100), t, BULK);
    let c = &result.flows[0].counters;
    let ratio = c.acks_sent as f64 / c.packets_sent as f64;
    assert!((0.49..0.52).contains(&ratio), "ACKs per packet {ratio}");
}

#[test]
fn acks_come_every_ack_every_packets() {
    // ns-3's TcpSocketBase DelAckCount, set to 4: one ACK per 4 in-order packets, from a
    // window that is a multiple of 4, so no packet waits for the timer.
    let t = TransportConfig {
        delayed_ack: true,
        ack_every: 4,
        ..TransportConfig::default()
    };
    let (result, _) = run(40, link("fwd", 25, 100), t, BULK);
    let c = &result.flows[0].counters;
    let ratio = c.acks_sent as f64 / c.packets_sent as f64;
    assert!((0.24..0.26).contains(&ratio), "ACKs per packet {ratio}");
}

#[test]
fn a_lone_packet_waits_max_ack_delay_for_its_ack() {
    // RFC 9000 §13.2.1 (ns-3's DelAckTimeout, 200 ms): with a window of one packet no second
    // packet ever comes, so each ACK leaves max_ack_delay after its packet arrived and each
    // send waits one round trip (25 + 25 ms and the serialisations) plus that delay.
    let t = TransportConfig {
        delayed_ack: true,
        max_ack_delay: Duration::from_millis(200),
        ..TransportConfig::default()
    };
    let (_, log) = run(1, link("fwd", 25, 100), t, BULK);
    let sent = &log.lock().unwrap().sent_ns;
    let gaps: Vec<u64> = sent.windows(2).map(|w| w[1] - w[0]).skip(1).collect();
    // One 1500-byte packet at 10 Mbit/s (1.2 ms) and one 64-byte ACK (51.2 us).
    let expected = 250_000_000 + 1_200_000 + 51_200;
    assert!(gaps.len() > 100);
    for g in gaps {
        assert!(
            g.abs_diff(expected) <= 1_000,
            "a send {g} ns after the last"
        );
    }
}

#[test]
fn loss_on_delivery_costs_link_time_and_the_transfer_still_completes() {
    // 2 % Bernoulli loss before the queue and after the link (ns-3's receive error model),
    // with a window (20 packets) the 100-packet buffer never drops from: lost on arrival, a
    // packet never uses the link; lost on delivery, every packet did.
    let app = AppConfig::Bulk {
        bytes: Some(1_000_000),
    };
    for at in [LossPoint::Arrival, LossPoint::Delivery] {
        let mut fwd = link("fwd", 25, 100);
        fwd.loss = LossConfig::Bernoulli { p: 0.02 };
        fwd.loss_at = at;
        let (r, _) = run(20, fwd, TransportConfig::default(), app);
        let c = &r.flows[0].counters;
        assert_eq!(c.bytes_delivered, 1_000_000, "{at:?}");
        let l = &r.links[0].counters;
        assert!(l.packets_lost_random > 0, "{at:?}");
        assert_eq!(l.packets_dropped, 0, "{at:?}");
        let on_link = match at {
            LossPoint::Arrival => c.packets_sent - l.packets_lost_random,
            LossPoint::Delivery => c.packets_sent,
        };
        assert_eq!(l.packets_transmitted, on_link, "{at:?}");
    }
}

#[test]
fn blackouts_trigger_pto_and_persistent_congestion_and_the_transfer_completes() {
    // Gilbert-Elliott with 100 % loss in the bad state and bad periods of 4 packets on
    // average, with a 4-packet window. The state advances per arriving packet, so once the
    // window is lost only the PTO probes (two per PTO, backed off) move it on: a bad period
    // becomes a blackout of a few PTOs. RFC 9002 §6.2 probes and §7.6 persistent congestion
    // must fire, and every byte must still arrive.
    let mut fwd = link("fwd", 25, 100);
    fwd.loss = LossConfig::GilbertElliott {
        p_good_bad: 0.002,
        p_bad_good: 0.25,
        loss_good: 0.0,
        loss_bad: 1.0,
    };
    let app = AppConfig::Bulk {
        bytes: Some(1_000_000),
    };
    let (result, log) = run(4, fwd, TransportConfig::default(), app);
    let c = &result.flows[0].counters;
    assert!(c.ptos > 0, "no PTO fired");
    assert!(log
        .lock()
        .unwrap()
        .congestion
        .contains(&CongestionKind::PersistentCongestion));
    assert_eq!(c.bytes_delivered, 1_000_000);
}

#[test]
fn a_delayed_ack_goes_out_after_max_ack_delay() {
    // Three packets with delayed ACKs: the 2nd is ACKed at once, the 3rd after max_ack_delay
    // (25 ms, RFC 9000 §13.2.1), so the transfer ends near 50 ms + 25 ms with no PTO.
    let t = TransportConfig {
        delayed_ack: true,
        ..TransportConfig::default()
    };
    let app = AppConfig::Bulk {
        bytes: Some(3 * 1460),
    };
    let (r, _) = run(30, link("fwd", 25, 100), t, app);
    assert_eq!(r.flows[0].counters.ptos, 0);
    assert!(r.end_ns < 80_000_000, "finished at {} ns", r.end_ns);
}

#[test]
fn acks_over_an_empty_reverse_path_arrive_at_once() {
    let app = AppConfig::Bulk {
        bytes: Some(1_000_000),
    };
    let (r, _) = simulate(
        30,
        vec![link("fwd", 25, 100)],
        vec![],
        TransportConfig::default(),
        app,
    );
    assert_eq!(r.flows[0].counters.bytes_delivered, 1_000_000);
    assert_eq!(r.flows[0].counters.packets_lost, 0);
}

#[test]
fn a_rate_step_applies_to_the_packet_on_the_wire() {
    // 100 kbps for the first 10 ms, then 10 Mbps: the first packet has sent 125 bytes by then
    // and its remaining 1375 bytes take 1.1 ms, so it arrives at about 11.1 ms + 25 ms, not
    // after the 120 ms a 1500-byte packet takes at 100 kbps.
    let mut fwd = link("fwd", 25, 100);
    fwd.rate = Rate::from_bits_per_sec(100e3);
    fwd.schedule = vec![(Duration::from_millis(10), Rate::from_bits_per_sec(10e6))];
    let app = AppConfig::Bulk { bytes: Some(1460) };
    let (r, _) = run(30, fwd, TransportConfig::default(), app);
    let done = r.flows[0].completion_ns.unwrap();
    assert!(
        (36_000_000..36_200_000).contains(&done),
        "arrived at {done} ns"
    );
}

/// TCP's recovery with RFC 6298's timeout floored at `min_rto` in `form`, PRR if `prr`.
fn tcp(min_rto_ms: u64, form: RtoForm, prr: bool) -> TransportConfig {
    TransportConfig {
        pacing: false,
        recovery: LossRecovery::Tcp(TcpRecovery {
            min_rto: Duration::from_millis(min_rto_ms),
            rto: form,
            prr,
            ..TcpRecovery::default()
        }),
        ..TransportConfig::default()
    }
}

/// What a blackout shows of the timeouts: when each fired (each sends one retransmission),
/// how many the sender counted, and how many the controller heard.
struct Blackout {
    fired_ns: Vec<u64>,
    counted: u64,
    heard: usize,
}

/// A NewReno flow over 10 Mbit/s with 25 ms each way and a 20-packet buffer (so the RTT
/// stays within 50 to 75 ms); at 1 s the forward delay becomes 30 s, so from then on nothing
/// sent is acknowledged, and every send after 1.1 s (the last ACK comes by 1.075 s) is a
/// timeout's retransmission.
fn blackout(transport: TransportConfig) -> Blackout {
    let log = Arc::new(Mutex::new(Log::default()));
    let config = kleinrock_cc::ControllerConfig {
        loss_window_packets: transport.loss_window_packets(),
        ..kleinrock_cc::ControllerConfig::default()
    };
    let inner = kleinrock_cc::build("newreno", &Default::default(), &config).unwrap();
    let controller = Box::new(Logged {
        inner,
        log: log.clone(),
    });
    let links = vec![link("fwd", 25, 20), link("return", 25, 1000)];
    let cut = RouteChange {
        link: 0,
        at: Duration::from_secs(1),
        delay: Duration::from_secs(30),
    };
    let result = simulate_full(
        (controller, transport, BULK),
        links,
        (vec![0], vec![1]),
        vec![cut],
    );
    let log = log.lock().unwrap();
    let heard = log.congestion.iter();
    Blackout {
        fired_ns: log
            .sent_ns
            .iter()
            .copied()
            .filter(|&t| t > 1_100_000_000)
            .collect(),
        counted: result.flows[0].counters.persistent_congestion,
        heard: heard
            .filter(|k| **k == CongestionKind::PersistentCongestion)
            .count(),
    }
}

#[test]
fn the_timeout_fires_at_its_floor_doubles_and_the_controller_hears_the_first() {
    // RFC 6298 (2.4): with a 50 ms RTT the timeout is its 1 s floor, counted from the last
    // ACK of new data (5.3); (5.5): it doubles on each expiry, restarted by the one
    // retransmission (5.6) that RFC 5681 §3.1's loss window of one segment lets out. A
    // timeout repeated with no ACK between keeps ssthresh (RFC 5681 §3.1): only the first
    // reaches the controller.
    let b = blackout(tcp(1000, RtoForm::Rfc6298, true));
    let gaps: Vec<u64> = b.fired_ns.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(gaps, [2e9 as u64, 4e9 as u64, 8e9 as u64, 16e9 as u64]);
    // The last ACK came back at 1.05 s and up to 25 ms of queue: the first timeout 1 s later.
    let first = b.fired_ns[0] as f64 / 1e9;
    assert!((2.0..2.2).contains(&first), "first timeout at {first} s");
    assert_eq!((b.counted, b.heard), (5, 1));
    // Linux's form: srtt + max(4 rttvar, 200 ms), 250 to 300 ms here, after the last ACK
    // (1.05 to 1.075 s).
    let linux = blackout(tcp(200, RtoForm::Linux, true)).fired_ns;
    let first = linux[0] as f64 / 1e6;
    assert!(
        (1300.0..1375.0).contains(&first),
        "first timeout at {first} ms"
    );
    assert_eq!(linux[2] - linux[1], 2 * (linux[1] - linux[0]));
}

/// A window of 120 packets that halves, once, at the first loss.
struct HalvesOnce {
    cwnd: u64,
    log: Arc<Mutex<Log>>,
}

impl Controller for HalvesOnce {
    fn on_sent(&mut self, now: Instant, _packet: &SentPacket) {
        self.log.lock().unwrap().sent(now);
    }
    fn on_ack(&mut self, _now: Instant, _ack: &AckEvent) {}
    fn on_congestion(&mut self, now: Instant, e: &CongestionEvent) {
        let mut log = self.log.lock().unwrap();
        if log.congestion.is_empty() {
            self.cwnd /= 2;
        }
        log.congested(now, e);
    }
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
}

/// The longest gap between two sends after the first round trip, unpaced, with a window of
/// 120 packets halved at the first loss (0.1 % random loss after a 10 Mbit/s link, 25 ms each
/// way, 1000 packets of buffer): both windows are above the 41-packet BDP, so only the
/// reduction can leave the link idle. Also the time of the first loss.
fn longest_send_gap(prr: bool) -> (u64, u64) {
    let log = Arc::new(Mutex::new(Log::default()));
    let controller = Box::new(HalvesOnce {
        cwnd: 120 * 1500,
        log: log.clone(),
    });
    let mut fwd = link("fwd", 25, 1000);
    fwd.loss = LossConfig::Bernoulli { p: 0.001 };
    fwd.loss_at = LossPoint::Delivery;
    let links = vec![fwd, link("return", 25, 1000)];
    let flow = (
        controller as Box<dyn Controller>,
        tcp(200, RtoForm::Linux, prr),
        BULK,
    );
    simulate_full(flow, links, (vec![0], vec![1]), vec![]);
    let log = log.lock().unwrap();
    let after_start = log.sent_ns.iter().skip_while(|&&t| t < 100_000_000);
    let sent: Vec<u64> = after_start.copied().collect();
    let gap = sent.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    (gap, log.congestion_ns[0])
}

#[test]
fn prr_keeps_sending_through_recovery_where_halving_the_window_pauses() {
    // RFC 6937 §1: without PRR the sender halves its window and waits until half the flight
    // has been acknowledged (60 packets, 72 ms at 1.2 ms each); PRR sends one packet for every
    // two delivered from the start of recovery, so no gap exceeds a few packet times (5 ms
    // leaves room for two losses in a row).
    let (with, first_loss) = longest_send_gap(true);
    assert!(first_loss < 30_000_000_000, "a loss within the run");
    assert!(with < 5_000_000, "longest gap with PRR {with} ns");
    let (without, _) = longest_send_gap(false);
    assert!(without > 60_000_000, "longest gap without PRR {without} ns");
}

#[test]
fn quick_acks_acknowledge_the_first_packets_at_once() {
    // Linux's quick-ACK mode at the start (TCP_MAX_QUICKACKS = 16): 40 packets sent in one
    // window, the first 16 ACKed one by one, the other 24 two by two.
    let app = AppConfig::Bulk {
        bytes: Some(40 * 1460),
    };
    let acks = |quick_acks| {
        let t = TransportConfig {
            delayed_ack: true,
            quick_acks,
            ..TransportConfig::default()
        };
        run(100, link("fwd", 25, 100), t, app).0.flows[0]
            .counters
            .acks_sent
    };
    assert_eq!(acks(16), 16 + 12);
    assert_eq!(acks(0), 20);
}

#[test]
fn a_tail_hole_found_by_racks_timer_is_resent() {
    // Three packets; a policer drops the second and lets the third through, so the ACKs show
    // one hole with only one packet above it: no packet threshold, RACK's timer finds it
    // (RFC 8985 §6.3) with nothing left in flight. Entering recovery then, the fast
    // retransmit still goes out (Linux `tcp_rack_reo_timeout`), with or without PRR, and
    // without RACK the timeout resends it.
    let app = AppConfig::Bulk {
        bytes: Some(3 * 1460),
    };
    for (rack, prr) in [(true, true), (true, false), (false, true)] {
        let t = TransportConfig {
            delayed_ack: true,
            recovery: LossRecovery::Tcp(TcpRecovery {
                min_rto: Duration::from_millis(200),
                rto: RtoForm::Linux,
                rack,
                prr,
                ..TcpRecovery::default()
            }),
            ..TransportConfig::default()
        };
        // 10 Mbit/s spaces the packets 1.2 ms apart; 1500 bytes of tokens per 2 ms, a bucket
        // of one packet: the first passes, the second finds 900 bytes, the third 1800.
        let mut policed = link("policed", 0, 100);
        policed.policer = Some(PolicerConfig {
            rate: Rate::from_bits_per_sec(6e6),
            burst: 1500,
        });
        let links = vec![link("fwd", 25, 100), policed, link("return", 25, 1000)];
        let log = Arc::new(Mutex::new(Log::default()));
        let inner = kleinrock_cc::build("newreno", &Default::default(), &Default::default());
        let controller = Box::new(Logged {
            inner: inner.unwrap(),
            log: log.clone(),
        });
        let paths = (vec![0, 1], vec![2]);
        let r = simulate_full((controller, t, app), links, paths, vec![]);
        assert_eq!(
            r.links[1].counters.packets_policed, 1,
            "rack {rack} prr {prr}"
        );
        let c = &r.flows[0].counters;
        assert_eq!(c.bytes_delivered, 3 * 1460, "rack {rack} prr {prr}");
        let timeouts = u64::from(!rack);
        assert_eq!(c.persistent_congestion, timeouts, "rack {rack} prr {prr}");
    }
}
