//! Connections with subflows (DESIGN: "several subflows ... a scheduler and a receive-side
//! reordering stage"): a controller that asks for a second subflow gets one, as a flow of its
//! own at a fair queue, and when it closes that subflow every byte still reaches the
//! application in order.

use kleinrock_cc::{AckEvent, CongestionEvent, Controller, ControllerState, Instant};
use kleinrock_sim::*;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Send times (ns) of each subflow's packets.
type Sends = Arc<Mutex<[Vec<u64>; 2]>>;

/// A fixed window on subflow `leg`, logging its sends.
struct Fixed {
    leg: usize,
    cwnd: u64,
    sends: Sends,
}

impl Controller for Fixed {
    fn on_sent(&mut self, now: Instant, _p: &kleinrock_cc::SentPacket) {
        self.sends.lock().unwrap()[self.leg].push(now.as_nanos());
    }
    fn on_ack(&mut self, _now: Instant, _ack: &AckEvent) {}
    fn on_congestion(&mut self, _now: Instant, _e: &CongestionEvent) {}
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
}

/// The first subflow's controller: a fixed window that wants a second subflow until
/// `close_at`.
struct TwoLegs {
    inner: Fixed,
    close_at: u64,
    now: u64,
}

impl Controller for TwoLegs {
    fn on_sent(&mut self, now: Instant, p: &kleinrock_cc::SentPacket) {
        self.now = now.as_nanos();
        self.inner.on_sent(now, p);
    }
    fn on_ack(&mut self, now: Instant, _ack: &AckEvent) {
        self.now = now.as_nanos();
    }
    fn on_congestion(&mut self, _now: Instant, _e: &CongestionEvent) {}
    fn cwnd(&self) -> u64 {
        self.inner.cwnd
    }
    fn state(&self) -> ControllerState {
        ControllerState::default()
    }
    fn extra_subflows(&self) -> usize {
        usize::from(self.now < self.close_at)
    }
    fn subflow_controller(&mut self, index: usize) -> Option<Box<dyn Controller>> {
        Some(Box::new(Fixed {
            leg: index,
            cwnd: self.inner.cwnd,
            sends: self.inner.sends.clone(),
        }))
    }
}

fn link(name: &str, qdisc: QdiscConfig, loss: f64) -> LinkConfig {
    LinkConfig {
        name: name.into(),
        rate: Rate::from_bits_per_sec(10e6),
        schedule: vec![],
        delivery_trace: None,
        delay: Duration::from_millis(10),
        jitter: Duration::ZERO,
        loss: if loss > 0.0 {
            LossConfig::Bernoulli { p: loss }
        } else {
            LossConfig::None
        },
        loss_at: LossPoint::Arrival,
        policer: None,
        qdisc,
        buffer: BufferLimit::Packets(1000),
    }
}

use kleinrock_cc::Rate;

/// One connection of `bytes` whose second subflow closes at `close_at`, over `forward`.
fn run(forward: LinkConfig, bytes: u64, close_at: Duration) -> (SimResult, [Vec<u64>; 2]) {
    let sends: Sends = Arc::default();
    let controller = Box::new(TwoLegs {
        inner: Fixed {
            leg: 0,
            cwnd: 20 * 1500,
            sends: sends.clone(),
        },
        close_at: close_at.as_nanos() as u64,
        now: 0,
    });
    let result = Simulator::new(SimConfig {
        duration: Duration::from_secs(60),
        seed: 5,
        warmup: Duration::ZERO,
        trace_interval: None,
        links: vec![forward, link("return", QdiscConfig::Fifo, 0.0)],
        route_changes: vec![],
        flows: vec![FlowConfig {
            name: "c".into(),
            kind: FlowKind::Reliable {
                controller,
                transport: TransportConfig::default(),
            },
            forward: vec![0],
            reverse: vec![1],
            app: AppConfig::Bulk { bytes: Some(bytes) },
            start: Duration::ZERO,
            stop: None,
            events: vec![],
        }],
        tunnels: Vec::new(),
    })
    .run();
    let sends = sends.lock().unwrap().clone();
    (result, sends)
}

#[test]
fn a_closed_subflow_s_bytes_still_arrive_in_order() {
    // 2 % random loss, so the second subflow has chunks lost and chunks in flight when it
    // closes at 0.5 s: the first subflow must resend them, and the transfer complete with
    // every byte delivered once in order.
    let (result, sends) = run(
        link("fwd", QdiscConfig::Fifo, 0.02),
        3_000_000,
        Duration::from_millis(500),
    );
    let flow = &result.flows[0];
    assert_eq!(flow.counters.bytes_delivered, 3_000_000);
    assert!(flow.completion_ns.is_some());
    let close_ns = 500_000_000;
    assert!(!sends[1].is_empty(), "the second subflow sent nothing");
    assert!(
        sends[1].iter().all(|&t| t <= close_ns + 1_000_000),
        "the second subflow sent after it closed"
    );
    assert!(
        sends[0].iter().any(|&t| t > close_ns),
        "no sends after the close"
    );
}

#[test]
fn subflows_are_separate_flows_at_a_fair_queue() {
    // Two subflows with the same 20-packet window through a fair queue whose per-flow limit
    // is 10 packets: each gets half the link.
    let fq = QdiscConfig::Fq {
        flow_limit: 10,
        quantum: 3000,
        initial_quantum: 15000,
    };
    let (result, sends) = run(link("fwd", fq, 0.0), 6_000_000, Duration::from_secs(60));
    assert_eq!(result.flows[0].counters.bytes_delivered, 6_000_000);
    let (a, b) = (sends[0].len() as f64, sends[1].len() as f64);
    // Equal windows and equal service: within 10 % of each other (round robin).
    assert!((a / b - 1.0).abs() < 0.1, "sends {a} and {b}");
}
