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
//! Datagrams are [`PACKET_BYTES`] on the link (an Ethernet MTU), 1472 bytes of UDP payload.

use crate::emulator::{self, start_tun, system_ns, EmulatorError, EmulatorStats};
use crate::netns::{self, Side, SERVER_ADDR};
use kleinrock_cc::Rate;
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
        quantile(&self.excess_delay, 0.5)
    }

    /// The 99th percentile excess delay.
    pub fn excess_p99(&self) -> Duration {
        quantile(&self.excess_delay, 0.99)
    }
}

fn quantile(h: &Histogram, q: f64) -> Duration {
    Duration::from_nanos(h.quantile(q).unwrap_or(0.0) as u64)
}

/// A drop-tail link of `rate`, `delay` and a 1000-packet buffer.
fn link(rate: Rate, delay: Duration) -> LinkConfig {
    LinkConfig::drop_tail("tun", rate, delay, BufferLimit::Packets(1000))
}

/// The rate check at `rate` with `delay` each way, for `run` of wall time.
pub fn rate_check(rate: Rate, delay: Duration, run: Duration) -> Result<Measured, EmulatorError> {
    let pps = OVERLOAD * rate.bytes_per_sec() / PACKET_BYTES as f64;
    check(rate, delay, pps, run)
}

/// The delay check at `rate` with `delay` each way, for `run` of wall time.
pub fn delay_check(rate: Rate, delay: Duration, run: Duration) -> Result<Measured, EmulatorError> {
    check(rate, delay, SPARSE_PPS, run)
}

/// Sends `pps` datagrams a second for `run` through a fresh TUN link of `rate` and `delay`.
fn check(rate: Rate, delay: Duration, pps: f64, run: Duration) -> Result<Measured, EmulatorError> {
    let l = link(rate, delay);
    let tun = start_tun(&l, &l, 1)?;
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
    emulator::set_socket_buffers(&sender, 8 << 20).map_err(setup("sizing the sender"))?;
    receiver
        .set_read_timeout(Some(Duration::from_millis(10)))
        .map_err(setup("configuring the receiver"))?;
    let serialisation = Duration::from_secs_f64(PACKET_BYTES as f64 / rate.bytes_per_sec());
    let sink = Sink::start(receiver, delay + serialisation);
    let start = Instant::now();
    let window_start = start + run / 4;
    let sent = send(&sender, to, pps, run);
    let (window, received) = sink.window(window_start, start + run);
    std::thread::sleep(DRAIN);
    let excess_delay = sink.stop();
    let stats = tun.shutdown();
    Ok(Measured {
        sent_bps: sent as f64 * PACKET_BYTES as f64 * 8.0 / run.as_secs_f64(),
        received_bps: received as f64 * PACKET_BYTES as f64 * 8.0 / window.as_secs_f64(),
        excess_delay,
        stats,
    })
}

/// Sends datagrams stamped with their send time to `to` at `pps` for `run`: wakes about every
/// 100 us, sends what is due, and after a stall catches up at most 1 ms of it. How many it
/// sent.
fn send(socket: &UdpSocket, to: SocketAddr, pps: f64, run: Duration) -> u64 {
    let mut buf = vec![0u8; PACKET_BYTES - HEADERS];
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

/// The receiver's thread: arrival instants and excess delays.
struct Sink {
    arrivals: Arc<Mutex<Vec<Instant>>>,
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
                let Ok(n) = socket.recv(&mut buf) else {
                    continue;
                };
                let now = system_ns();
                if n < 8 {
                    continue;
                }
                let mut stamp = [0u8; 8];
                stamp.copy_from_slice(&buf[..8]);
                let owd = now.saturating_sub(u64::from_le_bytes(stamp));
                crate::lock(&a).push(Instant::now());
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
        let n = arrivals.iter().filter(|&&t| t >= from && t < to).count();
        (to - from, n as u64)
    }

    /// Stops the thread; the excess delays.
    fn stop(self) -> Histogram {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        let h = crate::lock(&self.excess).clone();
        h
    }
}
