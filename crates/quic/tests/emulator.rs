//! The bottleneck emulator on real loopback sockets: a constant-rate UDP source as the client,
//! a UDP sink (optionally echoing) as the server. Tests run one at a time (they share two
//! cores and measure time) and each lasts a few seconds.

use kleinrock_cc::Rate;
use kleinrock_quic::emulator::{self, wire_bytes, EmulatorConfig, EmulatorError, EmulatorStats};
use kleinrock_quic::tun_check::{repeating_trace, trace_fit};
use kleinrock_sim::delivery_trace::OPPORTUNITY_BYTES;
use kleinrock_sim::{BufferLimit, LinkConfig, QdiscConfig};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Tests measure time on a 2-core machine: run them one after another.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Receives one datagram with its kernel receive timestamp (system clock, ns).
fn recv_stamped(socket: &UdpSocket, buf: &mut [u8]) -> Option<(usize, SocketAddr, u64)> {
    let r = emulator::receive(socket, buf).ok()?;
    Some((r.len, r.from, r.stamp_ns.expect("a receive timestamp")))
}

fn link(name: &str, mbps: f64, delay: Duration, buffer: u64) -> LinkConfig {
    let rate = Rate::from_bits_per_sec(mbps * 1e6);
    LinkConfig::drop_tail(name, rate, delay, BufferLimit::Packets(buffer))
}

fn udp() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind");
    emulator::set_socket_buffers(&s, 8 << 20).expect("socket buffers");
    s
}

/// Serialisation time of `wire` bytes at `mbps`, ns.
fn ser_ns(wire: u32, mbps: f64) -> f64 {
    f64::from(wire) * 8.0 / (mbps * 1e6) * 1e9
}

/// A datagram as received: when (kernel timestamp), how big, from whom, and the sequence number and send time
/// it carries.
#[derive(Clone, Copy, Debug)]
struct Rx {
    at_ns: u64,
    len: usize,
    from: SocketAddr,
    seq: u64,
    sent_ns: u64,
}

/// Receives on `socket` until `stop`; with `echo`, writes its own send time into bytes 8..16
/// and sends the datagram back.
fn receiver(socket: UdpSocket, echo: bool, stop: Arc<AtomicBool>) -> JoinHandle<Vec<Rx>> {
    socket
        .set_read_timeout(Some(Duration::from_millis(10)))
        .expect("timeout");
    emulator::enable_receive_metadata(&socket).expect("receive timestamps");
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let Some((n, from, at_ns)) = recv_stamped(&socket, &mut buf) else {
                continue;
            };
            let field = |i: usize| {
                buf.get(i..i + 8)
                    .map_or(u64::MAX, |b| u64::from_le_bytes(b.try_into().unwrap()))
            };
            got.push(Rx {
                at_ns,
                len: n,
                from,
                seq: field(0),
                sent_ns: field(8),
            });
            if echo && n >= 16 {
                buf[8..16].copy_from_slice(&emulator::system_ns().to_le_bytes());
                let _ = socket.send_to(&buf[..n], from);
            }
        }
        got
    })
}

/// Sends `payload`-byte datagrams carrying (sequence number, send time) to `to` at `mbps`
/// counted in wire bytes, for `duration`; returns how many it sent.
fn constant_rate(
    socket: &UdpSocket,
    to: SocketAddr,
    payload: usize,
    mbps: f64,
    d: Duration,
) -> u64 {
    let interval = ser_ns(wire_bytes(payload, false), mbps);
    let mut buf = vec![0xa5u8; payload];
    let start = Instant::now();
    let mut seq = 0u64;
    while start.elapsed() < d {
        let due = (start.elapsed().as_nanos() as f64 / interval) as u64 + 1;
        while seq < due {
            buf[0..8].copy_from_slice(&seq.to_le_bytes());
            buf[8..16].copy_from_slice(&emulator::system_ns().to_le_bytes());
            socket.send_to(&buf, to).expect("send");
            seq += 1;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    seq
}

fn config(server: SocketAddr, forward: LinkConfig, reverse: LinkConfig) -> EmulatorConfig {
    EmulatorConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        server,
        forward,
        reverse,
        seed: 1,
        client_idle: emulator::DEFAULT_CLIENT_IDLE,
    }
}

/// p-quantile of `v` (sorted in place).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1]
}

/// Whether a run's timing claims (delay within 1 ms at p99) are to be checked. With real-time
/// priority (root or CAP_SYS_NICE, as on CI) the emulator must report itself valid and its
/// timing is checked. Without it, other threads on the two cores can hold it up for
/// milliseconds; it must then say so itself, and its timing is checked whenever it claims to
/// be valid: it may fall behind, but never silently.
fn judge_timing(stats: &EmulatorStats) -> bool {
    assert!(stats.failure.is_none(), "{:?}", stats.failure);
    if stats.realtime {
        assert!(
            stats.valid,
            "emulator fell behind: event lateness p99 {:?}, bound {:?}, socket drops {}",
            stats.lateness_p99(),
            stats.lateness_bound,
            stats.socket_drops
        );
    } else if !stats.valid {
        eprintln!("no real-time priority and the emulator fell behind: timing not judged");
    }
    stats.valid
}

fn report(what: &str, s: &EmulatorStats) {
    eprintln!(
        "{what}: realtime {} events {} lateness p50 {:.1} us p99 {:.1} us max {:.1} us (bound {:?}); \
         fwd in {} out {} dropped {} achieved {}; rev in {} out {}; unknown {}",
        s.realtime,
        s.events,
        s.lateness.quantile(0.5).unwrap_or(0.0) / 1e3,
        s.lateness.quantile(0.99).unwrap_or(0.0) / 1e3,
        s.lateness.max().unwrap_or(0) as f64 / 1e3,
        s.lateness_bound,
        s.forward.datagrams_in,
        s.forward.datagrams_out,
        s.forward.dropped_buffer,
        s.forward.achieved_rate,
        s.reverse.datagrams_in,
        s.reverse.datagrams_out,
        s.unknown_dropped,
    );
}

/// A source at twice the link rate through a 100-packet drop-tail buffer: the sink sees the
/// link rate within 3 % once the queue has filled, the buffer drops, its maximum is exactly
/// its size, and no datagram waits longer than a full buffer's drain time.
fn fidelity(mbps: f64) {
    let _g = serial();
    // A run in which the emulator reports that it fell behind (the host took its core) is
    // measured once more, saying so; a second such run fails in `judge_timing`.
    for attempt in 1..=2 {
        if fidelity_run(mbps, attempt == 2) {
            return;
        }
        eprintln!("fidelity {mbps} Mbps: the emulator fell behind; measuring once more");
    }
}

/// One run of [`fidelity`]; `false` if the emulator, at real-time priority, fell behind and
/// `last` is not set (nothing else is then judged).
fn fidelity_run(mbps: f64, last: bool) -> bool {
    const PAYLOAD: usize = 1200;
    const BUFFER: u64 = 100;
    let delay = Duration::from_millis(5);
    let sink = udp();
    let stop = Arc::new(AtomicBool::new(false));
    let server = sink.local_addr().unwrap();
    let rx = receiver(sink, false, Arc::clone(&stop));
    let emu = emulator::start(config(
        server,
        link("fwd", mbps, delay, BUFFER),
        link("rev", mbps, delay, BUFFER),
    ))
    .expect("start");
    let client = udp();
    let t0 = emulator::system_ns();
    let sent = constant_rate(
        &client,
        emu.listen_addr(),
        PAYLOAD,
        2.0 * mbps,
        Duration::from_millis(2500),
    );
    // Let the queue drain: 100 packets at 10 Mbps take 0.1 s.
    std::thread::sleep(Duration::from_millis(250));
    let stats = emu.shutdown();
    stop.store(true, Ordering::Relaxed);
    let got = rx.join().unwrap();
    report(&format!("fidelity {mbps} Mbps"), &stats);
    if stats.realtime && !stats.valid && !last {
        return false;
    }

    // Delivered rate over [1.0 s, 2.5 s] after the source started (the buffer fills within
    // 0.1 s at 10 Mbps), counted in wire bytes like the link.
    let window: Vec<&Rx> = got
        .iter()
        .filter(|r| r.at_ns >= t0 + 1_000_000_000 && r.at_ns <= t0 + 2_500_000_000)
        .collect();
    let (first, last) = (window[0], window[window.len() - 1]);
    let bytes: u64 = window[1..]
        .iter()
        .map(|r| u64::from(wire_bytes(r.len, false)))
        .sum();
    let rate = bytes as f64 * 8.0 / ((last.at_ns - first.at_ns) as f64 / 1e9);
    let err = rate / (mbps * 1e6) - 1.0;
    eprintln!(
        "fidelity {mbps} Mbps: sink rate {:.3} Mbps ({:+.2} %), {} datagrams in window",
        rate / 1e6,
        err * 100.0,
        window.len()
    );
    assert!(err.abs() < 0.03, "delivered {rate} bps for {mbps} Mbps");

    // Drop-tail: the buffer filled, dropped the excess, and never held more than its size.
    let f = &stats.forward;
    assert_eq!(
        f.link.max_queue_packets, BUFFER,
        "queue reaches, never exceeds, its size"
    );
    assert!(
        f.dropped_buffer > f.datagrams_in / 4,
        "about half is dropped: {f:?}"
    );
    assert_eq!(
        f.datagrams_in, sent,
        "the emulator read every datagram sent"
    );
    assert_eq!(f.datagrams_in, f.datagrams_out + f.dropped_buffer);
    assert_eq!(
        got.len() as u64,
        f.datagrams_out,
        "the sink got every delivery"
    );
    assert_eq!(f.send_errors, 0);
    // The longest a datagram can wait is the delay, a full buffer and its own serialisation
    // (docs/simulator.md: the buffer counts waiting packets only); p99 of the one-way delay
    // may exceed that by no more than the emulator's 1 ms claim. While the buffer is full, a
    // datagram waits behind at least 99 others: the median delay in the window shows it.
    let wire = wire_bytes(PAYLOAD, false);
    let model_max = delay.as_nanos() as f64 + (BUFFER + 1) as f64 * ser_ns(wire, mbps);
    let mut owd: Vec<f64> = got.iter().map(|r| (r.at_ns - r.sent_ns) as f64).collect();
    let p99 = quantile(&mut owd, 0.99);
    let mut owd: Vec<f64> = window
        .iter()
        .map(|r| (r.at_ns - r.sent_ns) as f64)
        .collect();
    let p50 = quantile(&mut owd, 0.5);
    eprintln!(
        "fidelity {mbps} Mbps: one-way delay p50 {:.3} ms p99 {:.3} ms, model max {:.3} ms",
        p50 / 1e6,
        p99 / 1e6,
        model_max / 1e6
    );
    assert!(
        p50 >= delay.as_nanos() as f64 + 99.0 * ser_ns(wire, mbps),
        "median one-way delay {p50} ns: the queue was not full"
    );
    if judge_timing(&stats) {
        assert!(
            p99 <= model_max + 1e6,
            "p99 one-way delay {p99} ns > {model_max} ns + 1 ms"
        );
    }
    true
}

#[test]
fn delivers_the_link_rate_at_10_mbps() {
    fidelity(10.0);
}

#[test]
fn delivers_the_link_rate_at_100_mbps() {
    fidelity(100.0);
}

/// With an empty queue, the one-way delay in each direction is the configured delay plus one
/// serialisation, never less, and at p99 at most 1 ms more (the emulator's claim).
#[test]
fn empty_queue_adds_the_configured_delay() {
    let _g = serial();
    const PAYLOAD: usize = 200;
    const MBPS: f64 = 10.0;
    let (fwd_delay, rev_delay) = (Duration::from_millis(20), Duration::from_millis(10));
    let sink = udp();
    let server = sink.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = receiver(sink, true, Arc::clone(&stop));
    let emu = emulator::start(config(
        server,
        link("fwd", MBPS, fwd_delay, 100),
        link("rev", MBPS, rev_delay, 100),
    ))
    .expect("start");
    let client = udp();
    let echoes = receiver(client.try_clone().unwrap(), false, Arc::clone(&stop));
    // 400 datagrams per second of 228 wire bytes: 0.73 Mbps, far below 10 Mbps.
    let sent = constant_rate(
        &client,
        emu.listen_addr(),
        PAYLOAD,
        0.73,
        Duration::from_millis(1500),
    );
    std::thread::sleep(Duration::from_millis(100));
    let stats = emu.shutdown();
    stop.store(true, Ordering::Relaxed);
    let there = rx.join().unwrap();
    let back = echoes.join().unwrap();
    report("delay", &stats);

    let timing = judge_timing(&stats);
    let ser = ser_ns(wire_bytes(PAYLOAD, false), MBPS);
    for (what, got, delay) in [
        ("forward", &there, fwd_delay),
        ("reverse", &back, rev_delay),
    ] {
        assert!(got.len() >= 500, "{what}: only {} datagrams", got.len());
        let expected = delay.as_nanos() as f64 + ser;
        let mut excess: Vec<f64> = got
            .iter()
            .map(|r| (r.at_ns - r.sent_ns) as f64 - expected)
            .collect();
        let min = excess.iter().copied().fold(f64::INFINITY, f64::min);
        let p50 = quantile(&mut excess, 0.5);
        let p99 = quantile(&mut excess, 0.99);
        eprintln!(
            "{what}: {} datagrams, added delay minus configured: min {:.1} us p50 {:.1} us \
             p99 {:.1} us",
            got.len(),
            min / 1e3,
            p50 / 1e3,
            p99 / 1e3
        );
        assert!(min >= 0.0, "{what}: a datagram arrived {min} ns early");
        assert!(
            !timing || p99 <= 1e6,
            "{what}: p99 excess delay {p99} ns > 1 ms"
        );
    }
    // The source is far below the rate; only a hiccup of the sending thread, which then
    // catches up, can bunch a few datagrams.
    assert!(
        stats.forward.link.max_queue_packets <= 3,
        "the queue stayed (nearly) empty"
    );
    assert_eq!(stats.forward.datagrams_in, sent);
    assert_eq!(there.len() as u64, sent, "nothing lost on the way there");
    assert_eq!(back.len() as u64, sent, "nothing lost on the way back");
    assert_eq!(there.len() as u64, stats.forward.datagrams_out);
    assert_eq!(back.len() as u64, stats.reverse.datagrams_out);
}

/// Deterministic xorshift, for garbage.
fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// 10 000 random datagrams: half at the stream's upstream socket from a stranger (dropped and
/// counted), half at the listen port from four new senders (four new clients, which fair
/// queuing keeps apart from the stream: five classes share 40 Mbps, the stream needs 5). The
/// stream beside them loses nothing and its delay stays within a few milliseconds of the
/// configured delay (new classes go first with one quantum each: 4 x 3000 B = 2.4 ms).
#[test]
fn garbage_is_dropped_and_counted_without_disturbing_a_stream() {
    let _g = serial();
    const MBPS: f64 = 40.0;
    let delay = Duration::from_millis(5);
    let sink = udp();
    let server = sink.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = receiver(sink, false, Arc::clone(&stop));
    let mut forward = link("fwd", MBPS, delay, 1000);
    forward.qdisc = QdiscConfig::Fq {
        flow_limit: 100,
        quantum: 3000,
        initial_quantum: 3000,
    };
    let emu = emulator::start(config(server, forward, link("rev", MBPS, delay, 100))).unwrap();
    let listen = emu.listen_addr();
    let client = udp();
    // Start the stream, learn its upstream address from the sink's side, then attack.
    let stream = {
        let client = client.try_clone().unwrap();
        std::thread::spawn(move || {
            constant_rate(&client, listen, 1200, 5.0, Duration::from_millis(1500))
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let clients = emu.stats().clients;
    assert_eq!(clients.len(), 1);
    assert_eq!(clients[0].addr, client.local_addr().unwrap());
    let upstream = clients[0].upstream;
    let strangers: Vec<UdpSocket> = (0..5).map(|_| udp()).collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 1400];
    for i in 0..10_000usize {
        let len = (xorshift(&mut x) % 1401) as usize;
        for b in buf[..len].iter_mut() {
            *b = xorshift(&mut x) as u8;
        }
        let (from, to) = if i % 2 == 0 {
            (&strangers[0], upstream)
        } else {
            (&strangers[1 + (i / 2) % 4], listen)
        };
        from.send_to(&buf[..len], to).unwrap();
        // About 40 000 datagrams per second: 0.25 s of garbage.
        if i % 40 == 39 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let sent = stream.join().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let stats = emu.shutdown();
    stop.store(true, Ordering::Relaxed);
    let got = rx.join().unwrap();
    report("garbage", &stats);

    assert_eq!(
        stats.unknown_dropped, 5000,
        "every stranger's datagram is counted"
    );
    assert_eq!(
        stats.clients.len(),
        5,
        "the stream and four garbage senders"
    );
    // The stream: every datagram, in order.
    let stream: Vec<&Rx> = got.iter().filter(|r| r.from == upstream).collect();
    assert!(sent >= 600, "the stream ran: {sent}");
    assert_eq!(stream.len() as u64, sent, "the stream lost datagrams");
    assert!(stream.windows(2).all(|w| w[0].seq < w[1].seq), "reordered");
    // p99 of its one-way delay: the delay, its own serialisation, at most one quantum of
    // each of the four garbage classes ahead of it (2.4 ms), and the 1 ms lateness claim.
    let mut owd: Vec<f64> = stream
        .iter()
        .map(|r| (r.at_ns - r.sent_ns) as f64)
        .collect();
    let p99 = quantile(&mut owd, 0.99);
    let bound = delay.as_nanos() as f64 + ser_ns(wire_bytes(1200, false), MBPS) + 2.4e6 + 1e6;
    eprintln!(
        "garbage: stream one-way delay p99 {:.3} ms (bound {:.3} ms)",
        p99 / 1e6,
        bound / 1e6
    );
    assert!(
        p99 <= bound,
        "the stream's p99 one-way delay reached {p99} ns"
    );
    // The garbage at the listen port was relayed as four more clients' traffic.
    let f = &stats.forward;
    assert_eq!(f.datagrams_in, sent + 5000);
    assert_eq!(f.datagrams_in, f.datagrams_out + f.dropped_buffer);
    assert_eq!(got.len() as u64, f.datagrams_out);
}

/// A sender blasting small datagrams as fast as it can outruns the relay, which does more
/// work per datagram (read, model, send): the emulator must report the run invalid.
#[test]
fn an_overloaded_emulator_says_so() {
    let _g = serial();
    let sink = udp();
    let server = sink.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = receiver(sink, false, Arc::clone(&stop));
    let fast = link("fast", 100_000.0, Duration::ZERO, 100_000);
    let emu = emulator::start(config(server, fast.clone(), fast)).unwrap();
    // Two senders, so the offered load exceeds what the relay can take even when other work
    // slows one of them down.
    let to = emu.listen_addr();
    let senders: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                let client = udp();
                let start = Instant::now();
                let mut sent = 0u64;
                while start.elapsed() < Duration::from_millis(500) {
                    for _ in 0..64 {
                        client.send_to(&[0u8; 16], to).unwrap();
                        sent += 1;
                    }
                }
                sent
            })
        })
        .collect();
    let sent: u64 = senders.into_iter().map(|t| t.join().unwrap()).sum();
    std::thread::sleep(Duration::from_millis(100));
    let stats = emu.shutdown();
    stop.store(true, Ordering::Relaxed);
    rx.join().unwrap();
    report("overload", &stats);
    eprintln!(
        "overload: sent {sent}, input wait p99 {:.1} us, socket drops {}",
        stats.input_wait.quantile(0.99).unwrap_or(0.0) / 1e3,
        stats.socket_drops
    );
    assert!(!stats.valid, "{sent} datagrams in 0.5 s and still valid");
}

#[test]
fn refuses_what_it_cannot_emulate_and_releases_its_sockets() {
    let _g = serial();
    let fwd = link("fwd", 10.0, Duration::ZERO, 10);
    let server: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let mut c = config(server, fwd.clone(), fwd.clone());
    c.listen = "0.0.0.0:0".parse().unwrap();
    let err = emulator::start(c).unwrap_err();
    assert!(matches!(
        err,
        EmulatorError::NotLoopback { role: "listen", .. }
    ));
    assert!(err.to_string().contains("loopback"), "{err}");
    let mut c = config("192.0.2.1:443".parse().unwrap(), fwd.clone(), fwd.clone());
    assert!(matches!(
        emulator::start(c.clone()).unwrap_err(),
        EmulatorError::NotLoopback { role: "server", .. }
    ));
    c.server = server;
    c.forward.rate = Rate::ZERO;
    let err = emulator::start(c).unwrap_err();
    assert!(err.to_string().contains("forward link rate"), "{err}");

    // Shutdown releases the listen port: it can be bound again at once.
    let emu = emulator::start(config(server, fwd.clone(), fwd)).unwrap();
    let addr = emu.listen_addr();
    let stats = emu.shutdown();
    assert!(stats.failure.is_none() && stats.valid);
    UdpSocket::bind(addr).expect("the listen port is free after shutdown");
}

/// Sends `count` datagrams of `size` bytes from `client` to `to`, pausing 1 ms after every
/// `burst` so that the emulator's socket never overflows.
fn send_paced(client: &UdpSocket, to: SocketAddr, count: usize, size: usize, burst: usize) {
    let buf = vec![0x5au8; size];
    for i in 1..=count {
        client.send_to(&buf, to).expect("send");
        if i % burst == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// A link that holds whatever arrives: 1 Mbit/s behind a buffer of ten million packets.
fn bottomless() -> LinkConfig {
    link("bottomless", 1.0, Duration::ZERO, 10_000_000)
}

/// Whatever the buffer, the links hold at most `MAX_HELD_BYTES` and `MAX_HELD_DATAGRAMS`:
/// 60 kB datagrams beyond 64 MiB, and tiny ones beyond 65 536, are dropped, counted, and make
/// the run invalid; nothing else is lost.
#[test]
fn the_links_hold_at_most_the_emulators_bound() {
    let _g = serial();
    let sink = udp();
    let server = sink.local_addr().unwrap();
    // Bursts per millisecond the relay can read while it copies every datagram (240 MB/s of
    // 60 kB datagrams, 50k small ones per second): faster, the kernel drops at its socket.
    for (size, count, burst) in [
        (
            60_000,
            (emulator::MAX_HELD_BYTES / 60_000) as usize + 100,
            4,
        ),
        (16, emulator::MAX_HELD_DATAGRAMS + 5_000, 50),
    ] {
        let emu = emulator::start(config(server, bottomless(), bottomless())).unwrap();
        let client = udp();
        send_paced(&client, emu.listen_addr(), count, size, burst);
        std::thread::sleep(Duration::from_millis(200));
        let stats = emu.shutdown();
        let f = &stats.forward;
        eprintln!(
            "{count} datagrams of {size} B: held at most {} ({} B), {} dropped for memory, {} \
             sent on, socket drops {}",
            stats.held_peak_datagrams,
            stats.held_peak_bytes,
            f.dropped_memory,
            f.datagrams_out,
            stats.socket_drops
        );
        assert_eq!(
            stats.socket_drops, 0,
            "the sender overran the emulator's socket"
        );
        assert_eq!(f.datagrams_in, count as u64);
        assert!(stats.held_peak_bytes <= emulator::MAX_HELD_BYTES);
        assert!(stats.held_peak_datagrams <= emulator::MAX_HELD_DATAGRAMS);
        assert!(
            f.dropped_memory > 0,
            "{count} datagrams of {size} B should go beyond what the emulator holds"
        );
        assert_eq!(f.dropped_buffer + f.lost_random + f.policed, 0);
        assert!(!stats.valid, "a run that dropped for memory is not valid");
    }
}

/// The 257th sender and beyond are refused: no upstream socket, no state, only a count.
#[test]
fn clients_beyond_the_limit_are_refused() {
    let _g = serial();
    let sink = udp();
    let server = sink.local_addr().unwrap();
    let fast = link("fast", 1000.0, Duration::ZERO, 1000);
    let emu = emulator::start(config(server, fast.clone(), fast)).unwrap();
    let senders: Vec<UdpSocket> = (0..emulator::MAX_CLIENTS + 4)
        .map(|_| UdpSocket::bind("127.0.0.1:0").expect("bind"))
        .collect();
    for s in &senders {
        s.send_to(b"hello", emu.listen_addr()).expect("send");
    }
    std::thread::sleep(Duration::from_millis(200));
    let stats = emu.shutdown();
    assert_eq!(stats.clients.len(), emulator::MAX_CLIENTS);
    assert_eq!(stats.clients_refused, 4);
    assert_eq!(stats.forward.datagrams_in, emulator::MAX_CLIENTS as u64);
}

/// Senders that go silent give their slots back after the idle time: after 300 one-datagram
/// senders (256 slots, 44 refused), a new client is served both ways, and a client that keeps
/// sending keeps its slot.
#[test]
fn idle_clients_give_their_slots_back() {
    let _g = serial();
    let sink = udp();
    sink.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let server = sink.local_addr().unwrap();
    let fast = link("fast", 1000.0, Duration::ZERO, 1000);
    let idle = Duration::from_millis(400);
    let emu = emulator::start(EmulatorConfig {
        client_idle: idle,
        ..config(server, fast.clone(), fast)
    })
    .unwrap();
    let listen = emu.listen_addr();
    let mut buf = [0u8; 64];
    // A client that keeps talking through it all.
    let steady = udp();
    let senders: Vec<UdpSocket> = (0..300)
        .map(|_| UdpSocket::bind("127.0.0.1:0").expect("bind"))
        .collect();
    steady.send_to(b"steady", listen).unwrap();
    for s in &senders {
        s.send_to(b"hello", listen).expect("send");
    }
    // The steady client talks every 50 ms for twice the idle time.
    let started = Instant::now();
    while started.elapsed() < idle * 2 {
        std::thread::sleep(Duration::from_millis(50));
        steady.send_to(b"steady", listen).unwrap();
    }
    let mut forwarded = 0;
    sink.set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    while sink.recv_from(&mut buf).is_ok() {
        forwarded += 1;
    }
    let stats = emu.stats();
    assert_eq!(stats.clients_refused, 300 - 255, "{stats:?}");
    assert!(forwarded >= 256, "forwarded {forwarded}");
    // A newcomer takes an expired slot and is served both ways.
    let newcomer = udp();
    newcomer.send_to(b"new", listen).unwrap();
    let upstream = loop {
        let (n, from) = sink.recv_from(&mut buf).expect("the newcomer's datagram");
        if &buf[..n] == b"new" {
            break from;
        }
    };
    sink.send_to(b"back", upstream).unwrap();
    newcomer
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let (n, from) = newcomer.recv_from(&mut buf).expect("the answer");
    assert_eq!((&buf[..n], from), (&b"back"[..], listen));
    let stats = emu.shutdown();
    assert_eq!(
        stats.clients_expired, 255,
        "the one-datagram senders: {stats:?}"
    );
    assert_eq!(stats.clients_seen, 257);
    let addrs: Vec<SocketAddr> = stats.clients.iter().map(|c| c.addr).collect();
    assert_eq!(
        addrs.len(),
        2,
        "the steady client and the newcomer: {addrs:?}"
    );
    assert!(addrs.contains(&steady.local_addr().unwrap()));
    assert!(addrs.contains(&newcomer.local_addr().unwrap()));
}

#[test]
fn a_traced_link_delivers_at_the_traces_opportunities_within_a_millisecond() {
    let _g = serial();
    // Uneven gaps, so that only one alignment of deliveries and opportunities fits: 6 per
    // 14 ms, 5.16 Mbit/s. The source sends 1504-byte packets at twice that, so after the
    // first 100 ms the queue never empties and each opportunity carries one packet.
    let gaps = [1, 3, 2, 5, 1, 2];
    let trace = repeating_trace(&gaps, 60).expect("a trace");
    let delay = Duration::from_millis(5);
    let mut forward = link("fwd", 1.0, delay, 1000);
    forward.rate = trace.mean_rate();
    forward.delivery_trace = Some(trace.clone());
    let sink = udp();
    let server = sink.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rx = receiver(sink, false, Arc::clone(&stop));
    let emu =
        emulator::start(config(server, forward, link("rev", 10.0, delay, 100))).expect("start");
    let client = udp();
    let payload = OPPORTUNITY_BYTES as usize - 28;
    let mbps = trace.mean_rate().bits_per_sec() * 2.0 / 1e6;
    constant_rate(
        &client,
        emu.listen_addr(),
        payload,
        mbps,
        Duration::from_millis(1500),
    );
    std::thread::sleep(Duration::from_millis(50));
    let stats = emu.shutdown();
    stop.store(true, Ordering::Relaxed);
    let got = rx.join().unwrap();
    report("trace", &stats);
    let timing = judge_timing(&stats);
    let at: Vec<f64> = got.iter().skip(40).map(|r| r.at_ns as f64).collect();
    assert!(at.len() > 500, "only {} deliveries", at.len());
    let fit = trace_fit(&trace, &at, gaps.len() as u64, 1);
    eprintln!(
        "trace: {} deliveries, |error| p99 {:.1} us max {:.1} us",
        at.len(),
        fit.p99_ns / 1e3,
        fit.worst_ns / 1e3
    );
    assert!(
        !timing || fit.p99_ns <= 1e6,
        "deliveries off the trace by {} ns at p99",
        fit.p99_ns
    );
    // Any other alignment (but a whole cycle of the gaps later) is off by at least a
    // millisecond somewhere.
    assert!(
        fit.other_ns >= 1e6,
        "another alignment fits within {} ns",
        fit.other_ns
    );
}
