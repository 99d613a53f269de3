//! The TUN link's measurement of itself: a constant-rate UDP sender in the client namespace
//! and a receiver in the server namespace, through [`crate::emulator::start_tun`]. Each
//! datagram carries its send time on the system clock, which both namespaces share.
//!
//! - **Rate**: the sender offers [`OVERLOAD`] times the link rate into a 1000-packet buffer,
//!   so the queue stays full and the link sets the pace; the receiver's rate, in IP bytes, is
//!   counted over the last three quarters of the run (the first holds start-up and the queue
//!   filling).
//! - **Delay**: the sender offers [`SPARSE_PPS`] datagrams a second, so that each finds the
//!   queue empty; a datagram's excess delay is its one-way delay less the configured delay
//!   and its serialisation time at the link rate: what the TUN devices, the kernel and the
//!   relay thread add.
//!
//! - **Trace**: with a delivery trace as the link's rate, offered above the trace's mean
//!   rate, each opportunity carries one datagram; [`trace_fit`] says how far the arrivals
//!   are from the trace's times.
//!
//! Datagrams are [`PACKET_BYTES`] on the link (an Ethernet MTU), 1472 bytes of UDP payload,
//! unless the caller of [`probe`] says otherwise.

use crate::emulator::{self, start_tun, system_ns, EmulatorError, EmulatorStats};
use crate::netns::{self, Side, SERVER_ADDR};
use kleinrock_cc::Rate;
use kleinrock_sim::delivery_trace::DeliveryTrace;
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::{BufferLimit, LinkConfig};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// IP bytes of each probe datagram on the link.
pub const PACKET_BYTES: usize = 1500;
/// IPv4 and UDP headers.
const HEADERS: usize = 28;
/// Offered load of the rate check, relative to the link rate.
pub const OVERLOAD: f64 = 1.1;
/// Datagrams per second of the delay check.
pub const SPARSE_PPS: f64 = 500.0;
/// The port the receiver listens on in the server namespace.
const PORT: u16 = 9000;
/// How long the links drain after the sender stops.
const DRAIN: Duration = Duration::from_millis(300);

/// What one check measured.
#[derive(Debug)]
pub struct Measured {
    /// When each datagram arrived at the receiver, ns on the system clock, in order.
    pub arrivals_ns: Vec<u64>,
    /// The rate the sender achieved, bits per second of IP bytes.
    pub sent_bps: f64,
    /// The rate the receiver saw over the window, bits per second of IP bytes.
    pub received_bps: f64,
    /// One-way delay less the configured delay and the serialisation time, ns.
    pub excess_delay: Histogram,
    /// The TUN link's own statistics and verdict.
    pub stats: EmulatorStats,
}

impl Measured {
    /// The median excess delay.
    pub fn excess_median(&self) -> Duration {
        emulator::quantile(&self.excess_delay, 0.5)
    }

    /// The 99th percentile excess delay.
    pub fn excess_p99(&self) -> Duration {
        emulator::quantile(&self.excess_delay, 0.99)
    }
}

/// A drop-tail link of `rate`, `delay` and a 1000-packet buffer.
fn link(rate: Rate, delay: Duration) -> LinkConfig {
    LinkConfig::drop_tail("tun", rate, delay, BufferLimit::Packets(1000))
}

/// The rate check at `rate` with `delay` each way, for `run` of wall time.
pub fn rate_check(rate: Rate, delay: Duration, run: Duration) -> Result<Measured, EmulatorError> {
    let pps = OVERLOAD * rate.bytes_per_sec() / PACKET_BYTES as f64;
    probe(&link(rate, delay), PACKET_BYTES, pps, run)
}

/// The delay check at `rate` with `delay` each way, for `run` of wall time.
pub fn delay_check(rate: Rate, delay: Duration, run: Duration) -> Result<Measured, EmulatorError> {
    probe(&link(rate, delay), PACKET_BYTES, SPARSE_PPS, run)
}

/// Sends `pps` datagrams of `packet` IP bytes a second for `run` through a fresh TUN link of
/// `l` each way; the excess delay is counted beyond `l`'s delay and a packet's serialisation
/// at its rate.
pub fn probe(
    l: &LinkConfig,
    packet: usize,
    pps: f64,
    run: Duration,
) -> Result<Measured, EmulatorError> {
    if !(HEADERS + 8..=PACKET_BYTES).contains(&packet) {
        return Err(EmulatorError::BadConfig(format!(
            "probe packets have {} to {PACKET_BYTES} bytes, not {packet}",
            HEADERS + 8
        )));
    }
    let (rate, delay) = (l.rate, l.delay);
    let tun = start_tun(l, l, 1)?;
    let setup = |what: &'static str| move |e: std::io::Error| EmulatorError::Io { what, source: e };
    let ns = tun.namespaces();
    let to = SocketAddr::from((SERVER_ADDR, PORT));
    let receiver = netns::in_namespace(
        &ns.open(Side::Server)
            .map_err(setup("opening the server namespace"))?,
        || UdpSocket::bind(to),
    )
    .and_then(|r| r)
    .map_err(setup("binding the receiver"))?;
    let sender = netns::in_namespace(
        &ns.open(Side::Client)
            .map_err(setup("opening the client namespace"))?,
        || UdpSocket::bind((netns::CLIENT_ADDR, 0)),
    )
    .and_then(|r| r)
    .map_err(setup("binding the sender"))?;
    emulator::set_socket_buffers(&receiver, 8 << 20).map_err(setup("sizing the receiver"))?;
    emulator::enable_receive_metadata(&receiver).map_err(setup("stamping the receiver"))?;
    emulator::set_socket_buffers(&sender, 8 << 20).map_err(setup("sizing the sender"))?;
    receiver
        .set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(setup("configuring the receiver"))?;
    let serialisation = Duration::from_secs_f64(packet as f64 / rate.bytes_per_sec());
    let sink = Sink::start(receiver, delay + serialisation);
    let start = Instant::now();
    let window_start = start + run / 4;
    let sent = send(&sender, to, packet - HEADERS, pps, run);
    let (window, received) = sink.window(window_start, start + run);
    std::thread::sleep(DRAIN);
    let (excess_delay, arrivals_ns) = sink.stop();
    let stats = tun.shutdown();
    Ok(Measured {
        arrivals_ns,
        sent_bps: sent as f64 * packet as f64 * 8.0 / run.as_secs_f64(),
        received_bps: received as f64 * packet as f64 * 8.0 / window.as_secs_f64(),
        excess_delay,
        stats,
    })
}

/// Sends datagrams of `payload` bytes stamped with their send time to `to` at `pps` for `run`: wakes about every
/// 100 us, sends what is due, and after a stall catches up at most 1 ms of it. How many it
/// sent.
fn send(socket: &UdpSocket, to: SocketAddr, payload: usize, pps: f64, run: Duration) -> u64 {
    let mut buf = vec![0u8; payload];
    let start = Instant::now();
    let mut sent = 0u64;
    let mut next = 0.0f64;
    while start.elapsed() < run {
        let now = start.elapsed().as_secs_f64();
        next = next.max(now - 1e-3);
        while next <= now {
            buf[..8].copy_from_slice(&system_ns().to_le_bytes());
            if socket.send_to(&buf, to).is_err() {
                break;
            }
            sent += 1;
            next += 1.0 / pps;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    sent
}

/// The receiver's thread: arrival times and excess delays.
struct Sink {
    /// Arrival times: instants for the window, system-clock ns for the caller.
    arrivals: Arc<Mutex<Vec<(Instant, u64)>>>,
    excess: Arc<Mutex<Histogram>>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Sink {
    /// Receives on `socket`, recording each datagram's delay beyond `expected`.
    fn start(socket: UdpSocket, expected: Duration) -> Sink {
        let arrivals = Arc::new(Mutex::new(Vec::new()));
        let excess = Arc::new(Mutex::new(Histogram::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, x, s) = (
            Arc::clone(&arrivals),
            Arc::clone(&excess),
            Arc::clone(&stop),
        );
        let expected = expected.as_nanos() as u64;
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !s.load(Ordering::Relaxed) {
                let Ok(r) = emulator::receive(&socket, &mut buf) else {
                    continue;
                };
                // The kernel's receive time, not the thread's.
                let (n, now) = (r.len, r.stamp_ns.unwrap_or(r.read_ns));
                if n < 8 {
                    continue;
                }
                let mut stamp = [0u8; 8];
                stamp.copy_from_slice(&buf[..8]);
                let owd = now.saturating_sub(u64::from_le_bytes(stamp));
                crate::lock(&a).push((Instant::now(), now));
                crate::lock(&x).record(owd.saturating_sub(expected));
            }
        });
        Sink {
            arrivals,
            excess,
            stop,
            thread,
        }
    }

    /// Waits until `to`, then counts the datagrams that arrived from `from` on: the window's
    /// length and the count.
    fn window(&self, from: Instant, to: Instant) -> (Duration, u64) {
        if let Some(left) = to.checked_duration_since(Instant::now()) {
            std::thread::sleep(left);
        }
        let arrivals = crate::lock(&self.arrivals);
        let n = arrivals
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .count();
        (to - from, n as u64)
    }

    /// Stops the thread; the excess delays and the arrival times (system-clock ns).
    fn stop(self) -> (Histogram, Vec<u64>) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        let h = crate::lock(&self.excess).clone();
        let at = crate::lock(&self.arrivals)
            .iter()
            .map(|(_, ns)| *ns)
            .collect();
        (h, at)
    }
}

/// How well a sequence of deliveries fits a delivery trace, for a link whose queue never
/// empties and whose packets fill its opportunities exactly, `per` packets each: the `k`-th
/// delivery is opportunity `(m0 + k) / per` plus a constant (the link's start and delay).
#[derive(Clone, Copy, Debug)]
pub struct TraceFit {
    /// The 99th percentile of the deliveries' distance from the fit, ns.
    pub p99_ns: f64,
    /// The largest distance, ns.
    pub worst_ns: f64,
    /// The largest distance of the best other alignment (but a whole cycle of opportunities
    /// later), ns: large when only one alignment fits.
    pub other_ns: f64,
}

/// Fits deliveries at `at_ns` to `trace`, whose opportunity gaps repeat every `cycle`, with
/// `per` packets per opportunity: the alignment `m0` (within one period) whose offsets from
/// the deliveries vary least about their median.
pub fn trace_fit(trace: &DeliveryTrace, at_ns: &[f64], cycle: u64, per: u64) -> TraceFit {
    let per = per.max(1);
    let errors = |m0: u64| -> Vec<f64> {
        let offset: Vec<f64> = (0..at_ns.len())
            .map(|k| at_ns[k] - trace.time_ns((m0 + k as u64) / per) as f64)
            .collect();
        let median = quantile(offset.clone(), 0.5);
        offset.iter().map(|o| (o - median).abs()).collect()
    };
    let worst = |m0: u64| errors(m0).iter().copied().fold(0.0, f64::max);
    let alignments = trace.len() as u64 * per;
    let m0 = (0..alignments)
        .min_by(|&a, &b| worst(a).total_cmp(&worst(b)))
        .unwrap_or(0);
    let other_ns = (0..alignments)
        .filter(|&m| m.abs_diff(m0) % (cycle * per) != 0)
        .map(worst)
        .fold(f64::INFINITY, f64::min);
    TraceFit {
        p99_ns: quantile(errors(m0), 0.99),
        worst_ns: worst(m0),
        other_ns,
    }
}

/// A trace of `cycles` repetitions of the opportunity gaps `gaps` (ms): uneven gaps make
/// only one alignment of deliveries and opportunities fit (see [`trace_fit`]).
pub fn repeating_trace(gaps: &[u64], cycles: usize) -> Result<DeliveryTrace, String> {
    let times: Vec<u64> = gaps
        .iter()
        .cycle()
        .take(gaps.len() * cycles)
        .scan(0, |t, gap| {
            *t += gap;
            Some(*t)
        })
        .collect();
    DeliveryTrace::from_times(&times, |k| format!("opportunity {}", k + 1))
}

/// The `q` quantile of `v` (nearest rank); 0 for none.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}
