use kleinrock_cc::{build, ControllerConfig, Params, Rate};
use kleinrock_sim::*;
use std::time::Duration;

fn main() {
    let cc = std::env::args().nth(1).unwrap_or("newreno".into());
    let link = |name: &str, rate: f64, buf: u64| LinkConfig {
        name: name.into(),
        rate: Rate::from_bits_per_sec(rate),
        schedule: vec![],
        delay: Duration::from_millis(50),
        jitter: Duration::ZERO,
        loss: LossConfig::None,
        qdisc: QdiscConfig::Fifo,
        buffer: BufferLimit::Bytes(buf),
    };
    let bdp = 1_250_000;
    let t0 = std::time::Instant::now();
    let res = Simulator::new(SimConfig {
        duration: Duration::from_secs(60),
        seed: 1,
        warmup: Duration::ZERO,
        trace_interval: None,
        links: vec![link("fwd", 100e6, bdp), link("rev", 100e6, 10_000_000)],
        flows: vec![FlowConfig {
            name: "f".into(),
            kind: FlowKind::Reliable {
                controller: build(&cc, &Params::new(), &ControllerConfig::default()).unwrap(),
                transport: TransportConfig::default(),
            },
            forward: vec![0],
            reverse: vec![1],
            app: AppConfig::Bulk { bytes: None },
            start: Duration::ZERO,
            stop: None,
        }],
    })
    .run();
    let el = t0.elapsed();
    let l = &res.links[0];
    println!(
        "{cc}: util {:.3} pkts {} events {} wall {:?} -> {:.0} pkt/s; rtt mean {:.1}ms lost {} retx {}",
        l.counters.bytes_transmitted as f64 / l.counters.capacity_bytes,
        l.counters.packets_transmitted,
        res.events,
        el,
        l.counters.packets_transmitted as f64 / el.as_secs_f64(),
        res.flows[0].rtt.mean().unwrap_or(0.0) / 1e6,
        res.flows[0].counters.packets_lost,
        res.flows[0].counters.bytes_retransmitted,
    );
}
