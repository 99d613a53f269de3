//! `kleinrock bench`: simulated bottleneck packets per wall second for the reference
//! workloads of the design: (a) one Cubic flow, 100 Mbps, 100 ms RTT, 1 BDP; (b) ten Cubic
//! flows, 100 Mbps, 10 ms RTT, 1 BDP; and how cost grows with flows: (c) 1000 and (d) 10 000
//! Cubic flows, 1 Gbps, 20 ms RTT, 1 BDP, 10 s. Each row gives events per bottleneck packet
//! and the peak memory the run allocated per flow (counted in a second run, so counting costs
//! the timed one nothing); `--compare-htsim BIN` runs htsim's (a) and (b) in the same
//! invocation and prints the ratios.
//!
//! `kleinrock bench --tun` measures the TUN link between network namespaces (root): at each
//! link rate, the delivered rate and the delay it adds (`kleinrock_quic::tun_check`).
//!
//! `kleinrock bench --emulator` measures the userspace bottleneck emulator instead
//! (`kleinrock_quic::emulator`, a UDP relay on loopback). Each step starts a fresh emulator
//! with the same link in both directions, a source thread sending datagrams into it from one
//! UDP socket and a sink thread counting what it relays on. Source, sink and the relay thread
//! share the machine's cores, as a real client and server would. A step lasts `--seconds` of
//! wall time (default 2; 21 steps, about 47 s in all), then the queue drains for 0.2 s and
//! the emulator's own verdict is printed beside the counts: "valid" is
//! `EmulatorStats::valid` (p99 of event lateness, of socket wait and of each direction's
//! delivery lateness within the bound, no socket drops), "p99 late us" the largest of those
//! p99s. The sink's rates are counted over the last three quarters of the step (the first
//! holds start-up and the queue filling).
//!
//! The source is paced: about every 100 us it sends what is due, and after a stall it
//! catches up at most 1 ms of what it owes and skips the rest, so its own scheduling
//! hiccups do not reach the emulator as long bursts. "sent" is what it achieved; a note
//! "source short" says it fell more than 3 % below what it was asked for, "sink short" that
//! the sink saw more than 3 % less than it should have.
//!
//! 1. Forwarding capacity: a 100 Gbps link with zero delay and a 100 000-packet buffer, so
//!    the link model never holds a datagram back and the relay's per-datagram work (read,
//!    model, send) is the limit. The source offers 64-byte, then 1200-byte payloads at
//!    stepped packet rates, then back to back ("max"). The summary under the table gives,
//!    per payload, the highest rate the sink received in a valid step, and the "max" row's
//!    delivered rate: the throughput ceiling, where the emulator usually no longer keeps time.
//! 2. Link rate: 1200-byte payloads (1228 wire bytes, a full QUIC datagram) through a link
//!    of 100 Mbps to 1.5 Gbps with 5 ms delay and a 1000-packet buffer, offered at 1.1 times
//!    the link rate so the queue stays full (1.1, not 1.2 or 2, because on two cores the
//!    paced source itself often falls short above 1 Gbps). "sink Mbps" is the wire rate the sink saw,
//!    "model Mbps" the rate at which the link model released datagrams. The answer is the
//!    highest link rate whose step was valid with the sink within 3 % of the link rate.

use crate::alloc;
use kleinrock_cc::Rate;
use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::runner;
use kleinrock_lab::scenario::parse;
use kleinrock_quic::emulator::{self, wire_bytes, EmulatorConfig, EmulatorStats};
use kleinrock_sim::{BufferLimit, LinkConfig};
use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One simulator workload: `flows` Cubic flows through one bottleneck of `rate` with a
/// `one_way_ms` delay each way and a 1 BDP buffer, starting `stagger` apart.
struct Workload {
    label: &'static str,
    flows: u32,
    rate: &'static str,
    one_way_ms: u32,
    stagger: &'static str,
    seconds: f64,
    /// The same workload as arguments of the htsim anchor's `dumbbell_main` (`-dur_s` added).
    htsim: Option<&'static [&'static str]>,
}

impl Workload {
    fn scenario_text(&self) -> String {
        let one_way = format!("{}ms", self.one_way_ms);
        Dumbbell {
            name: format!("bench-{}x-{}ms", self.flows, 2 * self.one_way_ms),
            count: Some(self.flows),
            stagger: Some(self.stagger.into()),
            ..Dumbbell::new(
                "cubic",
                self.rate,
                &one_way,
                "1bdp",
                &format!("{}s", self.seconds),
            )
        }
        .to_toml()
    }
}

/// Simulated seconds of the many-flow workloads (c) and (d), at most.
const MANY_FLOWS_SECONDS: f64 = 10.0;

/// The reference workloads of the design, (a) and (b) for `seconds`, and the many-flow ones
/// that show how cost grows with the number of flows.
fn workloads(seconds: f64) -> [Workload; 4] {
    let many = seconds.min(MANY_FLOWS_SECONDS);
    [
        Workload {
            label: "(a) 1 Cubic, 100 Mbps, 100 ms, 1 BDP",
            flows: 1,
            rate: "100Mbps",
            one_way_ms: 50,
            stagger: "10ms",
            seconds,
            htsim: Some(&[
                "-flows",
                "1",
                "-rate_mbps",
                "100",
                "-rtt_ms",
                "100",
                "-buf_pkts",
                "833",
                "-ssthresh_pkts",
                "833",
            ]),
        },
        Workload {
            label: "(b) 10 Cubic, 100 Mbps, 10 ms, 1 BDP",
            flows: 10,
            rate: "100Mbps",
            one_way_ms: 5,
            stagger: "10ms",
            seconds,
            htsim: Some(&[
                "-flows",
                "10",
                "-rate_mbps",
                "100",
                "-rtt_ms",
                "10",
                "-buf_pkts",
                "83",
                "-ssthresh_pkts",
                "0",
            ]),
        },
        Workload {
            label: "(c) 1000 Cubic, 1 Gbps, 20 ms, 1 BDP",
            flows: 1000,
            rate: "1Gbps",
            one_way_ms: 10,
            stagger: "1ms",
            seconds: many,
            htsim: None,
        },
        Workload {
            label: "(d) 10000 Cubic, 1 Gbps, 20 ms, 1 BDP",
            flows: 10_000,
            rate: "1Gbps",
            one_way_ms: 10,
            stagger: "100us",
            seconds: many,
            htsim: None,
        },
    ]
}

/// Arguments of `kleinrock bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds of workloads (a) and (b) (default 60; (c) and (d) simulate at most
    /// 10); with --emulator, wall seconds per step (default 2; the emulator benchmark has 21
    /// steps).
    #[arg(long)]
    seconds: Option<f64>,
    /// Measure the userspace bottleneck emulator (forwarding capacity and highest valid link
    /// rate on loopback) instead of the simulator.
    #[arg(long)]
    emulator: bool,
    /// Measure the TUN link between network namespaces (root): delivered rate and added
    /// delay at 10 Mbps to 1 Gbps.
    #[arg(long, conflicts_with = "emulator")]
    tun: bool,
    /// Also run htsim's (a) and (b) with this binary (the anchor's `dumbbell_main` built
    /// against htsim), each right after ours, and print the speed ratios.
    #[arg(long, value_name = "BIN", conflicts_with_all = ["emulator", "tun"])]
    compare_htsim: Option<PathBuf>,
}

/// Runs the simulator workloads, or with `--emulator` the emulator benchmark.
pub fn run(args: BenchArgs) -> Result<(), String> {
    let default = if args.emulator || args.tun { 2.0 } else { 60.0 };
    let seconds = args.seconds.unwrap_or(default);
    const MAX_SECONDS: f64 = 1e6;
    if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
        return Err(format!(
            "--seconds {seconds} is out of range; accepted: more than 0, at most {MAX_SECONDS}"
        ));
    }
    if args.emulator {
        run_emulator(Duration::from_secs_f64(seconds))
    } else if args.tun {
        run_tun(Duration::from_secs_f64(seconds))
    } else {
        run_simulator(seconds, args.compare_htsim.as_deref())
    }
}

/// What one simulator run measured.
struct Speed {
    packets: u64,
    events: u64,
    wall: f64,
}

impl Speed {
    fn packets_per_second(&self) -> f64 {
        self.packets as f64 / self.wall
    }

    fn events_per_packet(&self) -> f64 {
        self.events as f64 / self.packets.max(1) as f64
    }
}

/// Runs every workload and prints its speed, events per packet and memory per flow; with
/// `htsim`, runs htsim's version of (a) and (b) right after ours and prints the ratios.
fn run_simulator(seconds: f64, htsim: Option<&Path>) -> Result<(), String> {
    crate::emit(&format!(
        "{:<38} {:>10} {:>10} {:>7} {:>8} {:>12} {:>8} {:>9}\n",
        "workload", "bottleneck", "events", "ev/pkt", "wall s", "pkts/wall s", "sim x", "KB/flow"
    ));
    let mut ratios = Vec::new();
    for w in workloads(seconds) {
        let text = w.scenario_text();
        let set = parse(&text, "<bench>", "bench", &[]).map_err(|e| e.to_string())?;
        let scenario = &set.points[0];
        let start = Instant::now();
        let out = runner::run(scenario);
        let wall = start.elapsed().as_secs_f64();
        let (_, peak) = alloc::counting(|| runner::run(scenario));
        let per_flow_kb = peak as f64 / f64::from(w.flows) / 1e3;
        let ours = Speed {
            packets: out.result.links[0].counters.packets_transmitted,
            events: out.result.events,
            wall,
        };
        crate::emit(&format!(
            "{:<38} {:>10} {:>10} {:>7.2} {wall:>8.3} {:>12.0} {:>8.1} {per_flow_kb:>9.1}\n",
            w.label,
            ours.packets,
            ours.events,
            ours.events_per_packet(),
            ours.packets_per_second(),
            w.seconds / wall
        ));
        if let (Some(bin), Some(args)) = (htsim, w.htsim) {
            ratios.push((w.label, ours, run_htsim(bin, args, w.seconds)?));
        }
    }
    if !ratios.is_empty() {
        print_ratios(&ratios);
    }
    Ok(())
}

/// Runs the htsim anchor's dumbbell for `seconds` and reads its JSON line.
fn run_htsim(bin: &Path, args: &[&str], seconds: f64) -> Result<Speed, String> {
    let output = std::process::Command::new(bin)
        .args(args)
        .args(["-dur_s", &seconds.to_string()])
        .output()
        .map_err(|e| format!("--compare-htsim {}: cannot run it: {e}", bin.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout
        .lines()
        .rfind(|l| l.starts_with('{'))
        .ok_or_else(|| format!("--compare-htsim {}: printed no JSON line", bin.display()))?;
    let json: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| format!("--compare-htsim {}: {e} in {line}", bin.display()))?;
    let field = |k: &str| {
        json[k]
            .as_f64()
            .ok_or_else(|| format!("--compare-htsim {}: no `{k}` in {line}", bin.display()))
    };
    Ok(Speed {
        packets: field("bn_fwd_pkts")? as u64,
        events: field("events")? as u64,
        wall: field("wall_run_s")?,
    })
}

/// Ours against htsim: bottleneck packets per wall second and events per packet.
fn print_ratios(ratios: &[(&str, Speed, Speed)]) {
    crate::emit(&format!(
        "\n{:<38} {:>12} {:>12} {:>7} {:>10} {:>10}\n",
        "against htsim", "ours pkts/s", "htsim pkts/s", "ratio", "ours ev/p", "htsim ev/p"
    ));
    for (label, ours, theirs) in ratios {
        crate::emit(&format!(
            "{label:<38} {:>12.0} {:>12.0} {:>7.2} {:>10.2} {:>10.2}\n",
            ours.packets_per_second(),
            theirs.packets_per_second(),
            ours.packets_per_second() / theirs.packets_per_second(),
            ours.events_per_packet(),
            theirs.events_per_packet()
        ));
    }
    crate::emit("ratio: our bottleneck packets per wall second over htsim's (1.0 = as fast)\n");
}

/// Offered packet rates of the capacity steps; `None` is "as fast as the source can".
const CAPACITY_PPS: [Option<f64>; 6] = [
    Some(50e3),
    Some(75e3),
    Some(100e3),
    Some(125e3),
    Some(150e3),
    None,
];
/// Payloads of the capacity steps, bytes.
const CAPACITY_PAYLOADS: [usize; 2] = [64, 1200];
/// Link rates of the link-rate steps, Mbps.
const LINK_MBPS: [f64; 9] = [
    100.0, 200.0, 400.0, 600.0, 800.0, 900.0, 1000.0, 1200.0, 1500.0,
];
/// Payload of the link-rate steps, bytes (1228 on the wire).
const LINK_PAYLOAD: usize = 1200;
/// Offered load of the link-rate steps, as a multiple of the link rate.
const OVERLOAD: f64 = 1.1;
/// Share of the intended rate at which the source or the sink counts as having reached it.
const REACHED: f64 = 0.97;
/// Most a paced source catches up after a stall: it skips what it owes beyond this.
const MAX_LAG: Duration = Duration::from_millis(1);
/// Time the emulator gets after the source stops to drain its queue.
const DRAIN: Duration = Duration::from_millis(200);
/// Socket buffers of the source and the sink, bytes.
const SOCKET_BUFFER: usize = 8 << 20;

/// What one step measured.
struct Outcome {
    /// Datagrams the source sent, and for how long it ran.
    sent: (u64, Duration),
    /// Datagrams the sink received in the whole step, drain included.
    received: u64,
    /// Datagrams and wire bytes the sink received in the measurement window, and its length.
    window: (u64, u64, Duration),
    /// The emulator's own statistics.
    stats: EmulatorStats,
}

impl Outcome {
    fn sent_pps(&self) -> f64 {
        self.sent.0 as f64 / self.sent.1.as_secs_f64()
    }

    fn delivered_pps(&self) -> f64 {
        self.window.0 as f64 / self.window.2.as_secs_f64()
    }

    fn sink_mbps(&self) -> f64 {
        self.window.1 as f64 * 8.0 / self.window.2.as_secs_f64() / 1e6
    }

    /// What to say beside the emulator's verdict: whether the source reached `pps` and the
    /// sink `sink_pps` (97 %).
    fn note(&self, pps: f64, sink_pps: f64) -> &'static str {
        match (
            self.sent_pps() >= REACHED * pps,
            self.delivered_pps() >= REACHED * sink_pps,
        ) {
            (_, true) => "",
            (true, false) => "sink short",
            (false, false) => "source short",
        }
    }
}

/// Runs the capacity and link-rate steps, `step` of wall time each, and prints a table and
/// a summary for each.
fn run_emulator(step: Duration) -> Result<(), String> {
    capacity_table(step)?;
    crate::emit("\n");
    link_table(step)
}

/// The capacity steps, then per payload the highest rate the sink received in a valid step
/// and what back-to-back sending delivered.
fn capacity_table(step: Duration) -> Result<(), String> {
    crate::emit(&format!(
        "emulator forwarding capacity: 100 Gbps link, zero delay, {:.1} s per step\n",
        step.as_secs_f64()
    ));
    crate::emit(&format!(
        "{:>9} {:>11} {:>9} {:>13} {:>7} {:>11} {:>8} {:>5} {:>8}  note\n",
        "payload B",
        "offered pps",
        "sent pps",
        "delivered pps",
        "lost",
        "p99 late us",
        "bound us",
        "valid",
        "realtime"
    ));
    let mut summary = String::new();
    for payload in CAPACITY_PAYLOADS {
        let mut highest = 0.0f64;
        let mut max_row = String::new();
        for pps in CAPACITY_PPS {
            let out = run_step(link(100e3, Duration::ZERO, 100_000), payload, pps, step)?;
            // As fast as it can: the source sets the offered rate.
            let offered = pps.unwrap_or(out.sent_pps());
            if out.stats.valid {
                highest = highest.max(out.delivered_pps());
            }
            if pps.is_none() {
                let valid = if out.stats.valid { "valid" } else { "invalid" };
                max_row = format!("{:.0} pps, {valid}", out.delivered_pps());
            }
            crate::emit(&format!(
                "{payload:>9} {:>11} {:>9.0} {:>13.0} {:>7} {} {}\n",
                pps.map_or("max".into(), |p| format!("{p:.0}")),
                out.sent_pps(),
                out.delivered_pps(),
                out.sent.0.saturating_sub(out.received),
                verdict(&out.stats),
                out.note(offered, offered),
            ));
        }
        summary += &format!(
            "{payload} B: highest valid {highest:.0} pps delivered; back to back {max_row}\n"
        );
    }
    crate::emit(&summary);
    Ok(())
}

/// The link-rate steps, then the highest link rate of a valid step whose sink saw the link
/// rate, and the link rates of the invalid steps.
fn link_table(step: Duration) -> Result<(), String> {
    crate::emit(&format!(
        "emulator link rate: {LINK_PAYLOAD} B payloads offered at {OVERLOAD}x the link rate, \
         5 ms delay, 1000-packet buffer, {:.1} s per step\n",
        step.as_secs_f64()
    ));
    crate::emit(&format!(
        "{:>9} {:>12} {:>9} {:>9} {:>10} {:>11} {:>8} {:>5} {:>8}  note\n",
        "link Mbps",
        "offered Mbps",
        "sent Mbps",
        "sink Mbps",
        "model Mbps",
        "p99 late us",
        "bound us",
        "valid",
        "realtime"
    ));
    let wire_bits = f64::from(wire_bytes(LINK_PAYLOAD, false)) * 8.0;
    let mut highest = 0.0f64;
    let mut invalid = Vec::new();
    for mbps in LINK_MBPS {
        let offered = OVERLOAD * mbps;
        let pps = offered * 1e6 / wire_bits;
        let link = link(mbps, Duration::from_millis(5), 1000);
        let out = run_step(link, LINK_PAYLOAD, Some(pps), step)?;
        let note = out.note(pps, mbps * 1e6 / wire_bits);
        if !out.stats.valid {
            invalid.push(format!("{mbps:.0}"));
        } else if note.is_empty() {
            highest = highest.max(mbps);
        }
        crate::emit(&format!(
            "{mbps:>9.0} {offered:>12.0} {:>9.0} {:>9.1} {:>10.1} {} {note}\n",
            out.sent_pps() * wire_bits / 1e6,
            out.sink_mbps(),
            out.stats.forward.achieved_rate.bits_per_sec() / 1e6,
            verdict(&out.stats),
        ));
    }
    let invalid = if invalid.is_empty() {
        "none".to_string()
    } else {
        invalid.join(", ") + " Mbps"
    };
    crate::emit(&format!(
        "highest valid link rate with the sink at the link rate: {highest:.0} Mbps; \
         invalid steps: {invalid}\n"
    ));
    Ok(())
}

/// The emulator's verdict as table columns: the worst p99 its validity checks, the bound,
/// valid, real-time priority.
fn verdict(s: &EmulatorStats) -> String {
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    format!(
        "{:>11.0} {:>8.0} {:>5} {:>8} ",
        worst_p99_ns(s) / 1e3,
        s.lateness_bound.as_secs_f64() * 1e6,
        yes_no(s.valid),
        yes_no(s.realtime)
    )
}

/// The largest of the p99s the emulator's validity checks (event lateness, socket wait,
/// delivery lateness of each direction), ns.
fn worst_p99_ns(s: &EmulatorStats) -> f64 {
    [
        &s.lateness,
        &s.input_wait,
        &s.forward.delivery_lateness,
        &s.reverse.delivery_lateness,
    ]
    .iter()
    .map(|h| h.quantile(0.99).unwrap_or(0.0))
    .fold(0.0, f64::max)
}

fn link(mbps: f64, delay: Duration, buffer: u64) -> LinkConfig {
    let rate = Rate::from_bits_per_sec(mbps * 1e6);
    LinkConfig::drop_tail("bench", rate, delay, BufferLimit::Packets(buffer))
}

fn udp() -> Result<UdpSocket, String> {
    let s = UdpSocket::bind("127.0.0.1:0").map_err(|e| format!("bench socket: {e}"))?;
    emulator::set_socket_buffers(&s, SOCKET_BUFFER).map_err(|e| format!("bench socket: {e}"))?;
    Ok(s)
}

/// One step: a fresh emulator with `link` both ways, the source sending `payload`-byte
/// datagrams at `pps` (or as fast as it can) for `step`, the sink counting.
fn run_step(
    link: LinkConfig,
    payload: usize,
    pps: Option<f64>,
    step: Duration,
) -> Result<Outcome, String> {
    let sink = Sink::start(udp()?)?;
    let emu = emulator::start(EmulatorConfig {
        listen: "127.0.0.1:0".parse().expect("a loopback address"),
        server: sink.addr,
        forward: link.clone(),
        reverse: link,
        seed: 1,
        client_idle: emulator::DEFAULT_CLIENT_IDLE,
    })
    .map_err(|e| e.to_string())?;
    let client = udp()?;
    client
        .connect(emu.listen_addr())
        .map_err(|e| format!("bench source: {e}"))?;
    let source = std::thread::spawn(move || source(&client, payload, pps, step));
    // Count over the last three quarters: the first holds start-up and, on a rate-limited
    // link, the queue filling.
    let start = Instant::now();
    std::thread::sleep(step / 4);
    let (t0, c0) = (Instant::now(), sink.counts());
    std::thread::sleep(step.saturating_sub(start.elapsed()));
    let (t1, c1) = (Instant::now(), sink.counts());
    let sent = source.join().map_err(|_| "the source thread panicked")?;
    std::thread::sleep(DRAIN);
    let stats = emu.shutdown();
    let received = sink.stop();
    Ok(Outcome {
        sent,
        received,
        window: (c1.0 - c0.0, c1.1 - c0.1, t1 - t0),
        stats,
    })
}

/// Sends `payload`-byte datagrams on the connected `socket` for `d`, paced at `pps` or back to back; returns
/// how many it sent and for how long. Paced, it wakes about every 100 us, sends what is
/// due, and after a stall catches up at most [`MAX_LAG`] of it, so that its own hiccups do
/// not reach the emulator as long bursts.
fn source(socket: &UdpSocket, payload: usize, pps: Option<f64>, d: Duration) -> (u64, Duration) {
    let buf = vec![0u8; payload];
    let start = Instant::now();
    let mut sent = 0u64;
    // When the next datagram is due, seconds since start.
    let mut next = 0.0f64;
    while start.elapsed() < d {
        let Some(pps) = pps else {
            sent += (0..64).filter(|_| socket.send(&buf).is_ok()).count() as u64;
            continue;
        };
        let now = start.elapsed().as_secs_f64();
        next = next.max(now - MAX_LAG.as_secs_f64());
        while next <= now && socket.send(&buf).is_ok() {
            sent += 1;
            next += 1.0 / pps;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    (sent, start.elapsed())
}

/// A thread counting the datagrams (and their wire bytes) that reach its socket.
struct Sink {
    addr: SocketAddr,
    packets: Arc<AtomicU64>,
    wire: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl Sink {
    fn start(socket: UdpSocket) -> Result<Sink, String> {
        let err = |e: std::io::Error| format!("bench sink: {e}");
        socket
            .set_read_timeout(Some(Duration::from_millis(10)))
            .map_err(err)?;
        let addr = socket.local_addr().map_err(err)?;
        let packets = Arc::new(AtomicU64::new(0));
        let wire = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (p, w, s) = (Arc::clone(&packets), Arc::clone(&wire), Arc::clone(&stop));
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !s.load(Ordering::Relaxed) {
                if let Ok(n) = socket.recv(&mut buf) {
                    p.fetch_add(1, Ordering::Relaxed);
                    w.fetch_add(u64::from(wire_bytes(n, false)), Ordering::Relaxed);
                }
            }
        });
        Ok(Sink {
            addr,
            packets,
            wire,
            stop,
            thread,
        })
    }

    /// Datagrams and wire bytes received so far.
    fn counts(&self) -> (u64, u64) {
        (
            self.packets.load(Ordering::Relaxed),
            self.wire.load(Ordering::Relaxed),
        )
    }

    /// Stops the thread once the socket is quiet; returns the datagrams received.
    fn stop(self) -> u64 {
        std::thread::sleep(Duration::from_millis(20));
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        self.packets.load(Ordering::Relaxed)
    }
}

/// Link rates of the TUN link benchmark, Mbps.
const TUN_MBPS: [f64; 6] = [10.0, 50.0, 100.0, 200.0, 500.0, 1000.0];
/// The TUN link's one-way delay in its benchmark.
const TUN_DELAY: Duration = Duration::from_millis(10);
/// The TUN link's claims: delivered rate within 1 % of the link's, and a one-way delay
/// (median) within 0.5 ms of the configured delay plus a packet's serialisation, with its p99
/// within the emulator's lateness bound (1 ms at these rates).
const TUN_RATE_ERROR: f64 = 0.01;
const TUN_DELAY_ERROR: Duration = Duration::from_micros(500);
const TUN_DELAY_P99: Duration = Duration::from_millis(1);

/// The TUN link at each of [`TUN_MBPS`]: the rate check and the delay check of
/// `kleinrock_quic::tun_check`, `step` each, then the highest rate at which both held.
fn run_tun(step: Duration) -> Result<(), String> {
    use kleinrock_quic::tun_check::{delay_check, rate_check, OVERLOAD, SPARSE_PPS};
    crate::emit(&format!(
        "TUN link: 1500-byte UDP packets between two namespaces, {} ms each way, 1000-packet \
         buffer; rate offered at {OVERLOAD}x the link, delay at {SPARSE_PPS} packets/s; {:.1} s \
         per check\n",
        TUN_DELAY.as_millis(),
        step.as_secs_f64()
    ));
    crate::emit(&format!(
        "{:>9} {:>9} {:>12} {:>7} {:>16} {:>13} {:>5} {:>8}\n",
        "link Mbps",
        "sent Mbps",
        "received Mbps",
        "error %",
        "extra delay p50 us",
        "p99 us",
        "valid",
        "realtime"
    ));
    let mut highest = 0.0f64;
    let mut failed = Vec::new();
    for mbps in TUN_MBPS {
        let rate = Rate::from_bits_per_sec(mbps * 1e6);
        let r = rate_check(rate, TUN_DELAY, step).map_err(|e| e.to_string())?;
        let d = delay_check(rate, TUN_DELAY, step).map_err(|e| e.to_string())?;
        let error = r.received_bps / (mbps * 1e6) - 1.0;
        let valid = r.stats.valid && d.stats.valid;
        let yes_no = |b: bool| if b { "yes" } else { "no" };
        crate::emit(&format!(
            "{mbps:>9.0} {:>9.1} {:>12.2} {:>7.2} {:>16.0} {:>13.0} {:>5} {:>8}\n",
            r.sent_bps / 1e6,
            r.received_bps / 1e6,
            error * 100.0,
            d.excess_median().as_secs_f64() * 1e6,
            d.excess_p99().as_secs_f64() * 1e6,
            yes_no(valid),
            yes_no(r.stats.realtime),
        ));
        let held = valid
            && error.abs() <= TUN_RATE_ERROR
            && d.excess_median() <= TUN_DELAY_ERROR
            && d.excess_p99() <= TUN_DELAY_P99;
        match held {
            true if failed.is_empty() => highest = mbps,
            true => {}
            false => failed.push(format!("{mbps:.0}")),
        }
    }
    let failed = if failed.is_empty() {
        "none".to_string()
    } else {
        failed.join(", ") + " Mbps"
    };
    crate::emit(&format!(
        "every step held up to {highest:.0} Mbps (valid, rate within 1 %, extra delay median \
         within 0.5 ms and p99 within 1 ms); steps that did not: {failed}\n"
    ));
    Ok(())
}
