//! `kleinrock bench`: simulated bottleneck packets per wall second for the reference
//! workloads of the design: (a) one Cubic flow, 100 Mbps, 100 ms RTT, 1 BDP; (b) ten Cubic
//! flows, 100 Mbps, 10 ms RTT, 1 BDP.
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

use kleinrock_cc::Rate;
use kleinrock_lab::dumbbell::Dumbbell;
use kleinrock_lab::runner;
use kleinrock_lab::scenario::parse;
use kleinrock_quic::emulator::{self, wire_bytes, EmulatorConfig, EmulatorStats};
use kleinrock_sim::{BufferLimit, LinkConfig};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn workload(flows: u32, one_way_ms: u32, seconds: f64) -> String {
    let one_way = format!("{one_way_ms}ms");
    Dumbbell {
        name: format!("bench-{flows}x-{}ms", 2 * one_way_ms),
        count: Some(flows),
        stagger: Some("10ms".into()),
        ..Dumbbell::new("cubic", "100Mbps", &one_way, "1bdp", &format!("{seconds}s"))
    }
    .to_toml()
}

/// Arguments of `kleinrock bench`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// Simulated seconds per workload (default 60); with --emulator, wall seconds per step
    /// (default 2; the emulator benchmark has 21 steps).
    #[arg(long)]
    seconds: Option<f64>,
    /// Measure the userspace bottleneck emulator (forwarding capacity and highest valid link
    /// rate on loopback) instead of the simulator.
    #[arg(long)]
    emulator: bool,
}

/// Runs the simulator workloads, or with `--emulator` the emulator benchmark.
pub fn run(args: BenchArgs) -> Result<(), String> {
    let default = if args.emulator { 2.0 } else { 60.0 };
    let seconds = args.seconds.unwrap_or(default);
    const MAX_SECONDS: f64 = 1e6;
    if !(seconds > 0.0 && seconds <= MAX_SECONDS) {
        return Err(format!(
            "--seconds {seconds} is out of range; accepted: more than 0, at most {MAX_SECONDS}"
        ));
    }
    if args.emulator {
        run_emulator(Duration::from_secs_f64(seconds))
    } else {
        run_simulator(seconds)
    }
}

/// Runs both simulator workloads and prints their speed.
fn run_simulator(seconds: f64) -> Result<(), String> {
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
            seconds / wall
        ));
    }
    Ok(())
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
