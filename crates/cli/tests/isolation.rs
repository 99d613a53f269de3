//! One client's timestamps never reach another client's controller (issue 23):
//!
//! > `kleinrock serve --cc quic_dc --json` behind `kleinrock emulate --link 20Mbps,40ms,2bdp`
//! > [...] while a second client negotiates `kleinrock-ts` and only sends pings whose echoed
//! > receive times grow 5 ms per echo: the standard client gets 0.55 Mbps [...] with
//! > `owd_samples: 1425` and no warning. It never agreed to timestamps: the other connection's
//! > echoes drove its controller.
//!
//! What a pass proves:
//! - `a_lying_receiver_misleads_no_other_connection`: an honest client that does not speak
//!   timestamps (aioquic over `hq-interop`, the independent client of the interop test)
//!   downloads 5 MB through that path alone, and then again beside a liar: a `kleinrock-ts`
//!   client (the crate's own, with a 4 KiB stream window, so that it takes under 1 Mbit/s)
//!   whose every echo a relay on its way to the emulator forges: one-way delays that grow 5 ms
//!   per echo (as in the issue), send times the server never stamped, and receive times that run
//!   50 ms backwards. The honest download's goodput beside the liar is within 20 % of its
//!   goodput alone. The server's `stopped` line shows both honest connections with zero
//!   one-way-delay samples, zero ACK delays and the RTT-fallback warning, and the liar's
//!   connection with echoes refused for each of the three reasons: a send time never stamped or
//!   already echoed, a receive time running backwards, a queuing delay above its RTT.
//!
//! A real-time test: the emulator runs on the real clock, and the goodputs it compares are
//! measured; on a machine too busy to keep the emulator valid it fails and says so.
#![cfg(target_os = "linux")]

mod common;

use common::aioquic;
use common::Scratch;
use kleinrock_quic::endpoint::{self, certificate_der, ClientOptions};
use serde_json::Value;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The path of the issue.
const LINK: &str = "20Mbps,40ms,2bdp";
/// Bytes the honest client fetches, each time.
const SIZE: u64 = 5_000_000;
/// The honest client's own timeout, and how long the test waits for it.
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);
const FETCH_WAIT: Duration = Duration::from_secs(30);
/// The least fraction of its goodput alone the honest client keeps beside the liar.
const KEPT: f64 = 0.8;
/// The liar's download: more than it fetches before the honest one ends, through a window
/// that keeps it under 1 Mbit/s.
const LIAR_SIZE: u64 = 100_000_000;
const LIAR_WINDOW: u64 = 4096;

/// The `kleinrock-ts` trailer (crates/quic/src/stamps.rs, 16 bytes at a datagram's end):
/// send time, echoed send time, echoed receive time, magic; big-endian `u32`s.
mod trailer {
    pub const LEN: usize = 16;
    const PLAIN: u32 = 0x6b6c_7430;
    const ECHO: u32 = 0x6b6c_7431;

    fn word(d: &[u8], i: usize) -> u32 {
        let at = d.len() - LEN + 4 * i;
        u32::from_be_bytes([d[at], d[at + 1], d[at + 2], d[at + 3]])
    }

    /// The send time of `datagram`'s trailer, if it has one.
    pub fn sent(datagram: &[u8]) -> Option<u32> {
        (datagram.len() > LEN && matches!(word(datagram, 3), PLAIN | ECHO))
            .then(|| word(datagram, 0))
    }

    /// Writes `echo` into `datagram`'s trailer.
    pub fn set_echo(datagram: &mut [u8], (sent, received): (u32, u32)) {
        let at = datagram.len() - LEN + 4;
        for (i, w) in [sent, received, ECHO].into_iter().enumerate() {
            datagram[at + 4 * i..at + 4 * i + 4].copy_from_slice(&w.to_be_bytes());
        }
    }
}

/// What the liar's relay knows and forges.
#[derive(Default)]
struct Lies {
    /// The send time on the newest datagram from the server.
    newest: Option<u32>,
    /// Echoes forged so far.
    forged: u32,
    /// The receive time of the newest growing lie.
    last_received: u32,
}

impl Lies {
    /// How much each growing lie's one-way delay exceeds the previous one's, µs.
    const GROWTH_US: u32 = 5_000;
    /// How far a backwards lie's receive time is before the newest growing one's, µs.
    const BACKWARDS_US: u32 = 50_000;

    /// The next forged echo, in turn: a one-way delay 5 ms longer than the last such lie's, a
    /// send time the server never stamped, a receive time 50 ms back.
    fn next(&mut self) -> Option<(u32, u32)> {
        let newest = self.newest?;
        self.forged += 1;
        let k = self.forged;
        Some(match k % 3 {
            0 => (newest ^ 0x0055_5500, self.last_received),
            1 => (newest, self.last_received.wrapping_sub(Self::BACKWARDS_US)),
            _ => {
                let received = newest.wrapping_add(10_000 + Self::GROWTH_US * (k / 3));
                self.last_received = received;
                (newest, received)
            }
        })
    }
}

/// A UDP relay from the liar's client to `target` and back, which forges the echo of every
/// trailer the client sends and notes the send times of the server's; its address, and its
/// two threads, which end at `stop`.
fn relay(
    target: SocketAddr,
    lies: Arc<Mutex<Lies>>,
    stop: Arc<AtomicBool>,
) -> (SocketAddr, Vec<JoinHandle<()>>) {
    let bind = || {
        let s = UdpSocket::bind("127.0.0.1:0").expect("a relay socket binds");
        s.set_read_timeout(Some(Duration::from_millis(20)))
            .expect("a timeout");
        s
    };
    let (near, far) = (bind(), bind());
    let addr = near.local_addr().expect("the relay's address");
    let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
    let forward = {
        let (near, far) = (
            near.try_clone().expect("clone"),
            far.try_clone().expect("clone"),
        );
        let (lies, stop, client) = (lies.clone(), stop.clone(), client.clone());
        thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, from)) = near.recv_from(&mut buf) else {
                    continue;
                };
                *client.lock().unwrap_or_else(|e| e.into_inner()) = Some(from);
                let datagram = &mut buf[..n];
                if trailer::sent(datagram).is_some() {
                    let lie = lies.lock().unwrap_or_else(|e| e.into_inner()).next();
                    if let Some(lie) = lie {
                        trailer::set_echo(datagram, lie);
                    }
                }
                let _ = far.send_to(datagram, target);
            }
        })
    };
    let back = thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        while !stop.load(Ordering::Relaxed) {
            let Ok(n) = far.recv(&mut buf) else {
                continue;
            };
            if let Some(sent) = trailer::sent(&buf[..n]) {
                lies.lock().unwrap_or_else(|e| e.into_inner()).newest = Some(sent);
            }
            let to = *client.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(to) = to {
                let _ = near.send_to(&buf[..n], to);
            }
        }
    });
    (addr, vec![forward, back])
}

/// Goodput of an aioquic fetch result, Mbit/s, from its request to its last byte.
fn goodput_mbps(result: &Value) -> f64 {
    let elapsed = result["elapsed_s"].as_f64().expect("elapsed_s");
    let handshake = result["handshake_s"].as_f64().expect("handshake_s");
    SIZE as f64 * 8.0 / (elapsed - handshake) / 1e6
}

fn counter(c: &Value, name: &str) -> u64 {
    c["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counters.{name} in {c}"))
}

#[test]
fn a_lying_receiver_misleads_no_other_connection() {
    let started = Instant::now();
    let venv = aioquic::venv();
    let scratch = Scratch::new("isolation");
    let cert_path = scratch.0.join("cert.pem");
    let cert_arg = cert_path.to_str().expect("a UTF-8 scratch path");
    let (mut server, server_addr, _) = common::serve("quic_dc", cert_arg);
    let (mut emulator, emulator_addr) = common::emulate(server_addr, LINK, &[]);
    let cert = certificate_der(&std::fs::read(&cert_path).expect("the certificate is written"))
        .expect("a PEM certificate");

    // 1. The honest client alone.
    let mut client = aioquic::start_fetch(&venv, emulator_addr, &cert_path, SIZE, FETCH_TIMEOUT);
    let alone = aioquic::fetch_result(&mut client, FETCH_WAIT);
    let alone_mbps = goodput_mbps(&alone);
    eprintln!("honest client alone: {alone_mbps:.2} Mbit/s ({alone})");

    // 2. The same beside the liar, which starts first.
    let lies = Arc::new(Mutex::new(Lies::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let (relay_addr, relay_threads) = relay(emulator_addr, lies.clone(), stop.clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let opts = ClientOptions {
        receive_window: LIAR_WINDOW,
        timestamps: true,
    };
    let liar = runtime
        .spawn(async move { endpoint::fetch_with(relay_addr, &cert, LIAR_SIZE, &opts).await });
    thread::sleep(Duration::from_millis(500));
    let mut client = aioquic::start_fetch(&venv, emulator_addr, &cert_path, SIZE, FETCH_TIMEOUT);
    let beside = aioquic::fetch_result(&mut client, FETCH_WAIT);
    let beside_mbps = goodput_mbps(&beside);
    if liar.is_finished() {
        let ended = runtime.block_on(liar);
        panic!("the liar's download ended before the honest one: {ended:?}");
    }
    // Dropped, the liar's connection closes.
    liar.abort();
    thread::sleep(Duration::from_millis(300));
    drop(runtime);
    stop.store(true, Ordering::Relaxed);
    for t in relay_threads {
        t.join().expect("a relay thread");
    }
    let forged = lies.lock().unwrap_or_else(|e| e.into_inner()).forged;
    eprintln!(
        "honest client beside the liar: {beside_mbps:.2} Mbit/s ({beside}); the liar's relay \
         forged {forged} echoes"
    );

    let emulated = emulator.terminate();
    let served = server.terminate();
    eprintln!("server stopped: {served}");
    assert_eq!(
        emulated["valid"], true,
        "the emulator did not keep up with real time (is the machine busy?): {emulated}"
    );
    assert!(
        beside_mbps >= KEPT * alone_mbps,
        "the honest client got {beside_mbps:.2} Mbit/s beside the liar, below {:.0} % of its \
         {alone_mbps:.2} Mbit/s alone",
        KEPT * 100.0
    );
    assert!(forged > 30, "the relay forged too few echoes: {forged}");

    let recent = served["recent_connections"]
        .as_array()
        .unwrap_or_else(|| panic!("no recent_connections: {served}"));
    let honest: Vec<&Value> = recent
        .iter()
        .filter(|c| c["alpn"] == "hq-interop")
        .collect();
    assert_eq!(honest.len(), 2, "two honest connections: {served}");
    for c in &honest {
        assert_eq!(c["timestamps"], false, "{c}");
        assert_eq!(
            counter(c, "owd_samples"),
            0,
            "an honest connection's samples: {c}"
        );
        assert_eq!(counter(c, "ack_delay_samples"), 0, "{c}");
        assert!(
            counter(c, "bytes_acked") >= SIZE,
            "the honest connection's controller saw its download: {c}"
        );
        let warnings = c["warnings"].as_array().expect("warnings");
        assert!(
            warnings.iter().any(|w| w
                .as_str()
                .is_some_and(|w| w.contains("no receiver timestamps"))),
            "the RTT fallback is reported: {c}"
        );
    }
    let liars: Vec<&Value> = recent
        .iter()
        .filter(|c| c["alpn"] == "kleinrock-ts")
        .collect();
    assert_eq!(liars.len(), 1, "one liar: {served}");
    let l = liars[0];
    assert_eq!(l["timestamps"], true, "{l}");
    for why in [
        "owd_rejected_unknown_echo",
        "owd_rejected_backwards",
        "owd_rejected_queuing",
    ] {
        assert!(counter(l, why) > 0, "the liar's {why}: {l}");
    }
    assert_eq!(served["stamped_connections"], 1, "{served}");
    eprintln!("isolation test done in {:.1?}", started.elapsed());
}
