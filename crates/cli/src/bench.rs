//! `kleinrock bench`: simulated bottleneck packets per wall second for the reference
//! workloads of the design: (a) one Cubic flow, 100 Mbps, 100 ms RTT, 1 BDP; (b) ten Cubic
//! flows, 100 Mbps, 10 ms RTT, 1 BDP.

use kleinrock_lab::runner;
use kleinrock_lab::scenario::parse;
use std::time::Instant;

fn workload(flows: u32, one_way_ms: u32, seconds: u64) -> String {
    format!(
        r#"
name = "bench-{flows}x-{rtt}ms"
duration = "{seconds}s"
[[links]]
name = "bottleneck"
rate = "100Mbps"
delay = "{one_way_ms}ms"
buffer = "1bdp"
[[links]]
name = "return"
rate = "100Mbps"
delay = "{one_way_ms}ms"
buffer = "10000pkt"
[[flows]]
cc = "cubic"
path = ["bottleneck"]
reverse_path = ["return"]
count = {flows}
stagger = "10ms"
"#,
        rtt = 2 * one_way_ms
    )
}

/// Arguments of `kleinrock bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds per workload.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
}

/// Runs both workloads and prints their speed.
pub fn run(args: BenchArgs) -> Result<(), String> {
    let seconds = args.seconds;
    crate::emit(&format!(
        "{:<34} {:>12} {:>12} {:>10} {:>14} {:>10}\n",
        "workload", "bottleneck", "events", "wall s", "pkts/wall s", "sim x"
    ));
    for (label, flows, one_way) in [
        ("(a) 1 Cubic, 100 Mbps, 100 ms, 1 BDP", 1, 50),
        ("(b) 10 Cubic, 100 Mbps, 10 ms, 1 BDP", 10, 5),
    ] {
        let text = workload(flows, one_way, seconds);
        let set = parse(&text, "<bench>", "bench", &[]).map_err(|e| e.to_string())?;
        let scenario = &set.points[0];
        let start = Instant::now();
        let out = runner::run(scenario);
        let wall = start.elapsed().as_secs_f64();
        let packets = out.result.links[0].counters.packets_transmitted;
        crate::emit(&format!(
            "{label:<34} {packets:>12} {:>12} {wall:>10.3} {:>14.0} {:>10.1}\n",
            out.result.events,
            packets as f64 / wall,
            seconds as f64 / wall
        ));
    }
    Ok(())
}
