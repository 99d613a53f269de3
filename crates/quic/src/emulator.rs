//! The userspace bottleneck emulator: a UDP relay on loopback that sends each direction of a
//! path through the simulator's own [`Link`](kleinrock_sim::link::Link) (random loss, policer, FIFO or fair queue,
//! transmitter at the link rate, propagation pipe with order-keeping jitter, rate schedule),
//! driven by the real clock instead of simulated time. This module owns the relay thread, its
//! sockets, the payload slab and the emulator's self-measurement.
//!
//! # Doors
//!
//! The model and the thread (`engine`: links, events, held packets, self-measurement,
//! control) are apart from what feeds them. The UDP door (`udp`, [`start`]) is the relay below;
//! the TUN door (`tun`, [`start_tun`]) moves IP packets between TUN devices in two network
//! namespaces (see [`crate::netns`]) for kernel TCP and any program. Both run the same model
//! and are judged by the same validity checks; what follows describes the UDP door where the
//! two differ.
//!
//! # Topology
//!
//! ```text
//! client --> listen --[forward Link]--> upstream socket of that client --> server
//! client <-- listen <--[reverse Link]-- upstream socket of that client <-- server
//! ```
//!
//! Every new sender to `listen` is a client and gets its own upstream socket, so the server
//! sees one 5-tuple per client and its replies come back on the socket that belongs to that
//! client. A client's index is its class at a fair queue (`Queued::class`), so
//! [`QdiscConfig::Fq`] separates clients. Datagrams that reach an upstream socket from anyone
//! but the server are dropped and counted ([`EmulatorStats::unknown_dropped`]). At most
//! [`MAX_CLIENTS`] clients have a slot at once; datagrams from further senders are dropped and
//! counted ([`EmulatorStats::clients_refused`]). A client's slot (its upstream socket and its
//! class) expires once no datagram has passed either way for [`EmulatorConfig::client_idle`]
//! ([`DEFAULT_CLIENT_IDLE`], 30 s) and the links hold none of its datagrams
//! ([`EmulatorStats::clients_expired`]); its sender is a new client if it comes back. Only
//! loopback addresses are accepted.
//!
//! # Memory
//!
//! What the emulator holds is bounded whatever its clients send. Per client: an upstream
//! socket, its poll entry and its class at a fair queue, for at most [`MAX_CLIENTS`] clients,
//! kept until the client has been idle for [`EmulatorConfig::client_idle`]. In its links: the
//! queue is bounded by the link's buffer as configured, and whatever the configuration (a
//! buffer of a million packets, a long fat path) the links hold at most
//! [`MAX_HELD_DATAGRAMS`] datagrams and [`MAX_HELD_BYTES`] payload bytes, each datagram in an allocation of its own size freed when it leaves; a datagram
//! beyond that is dropped before its link sees it, counted
//! ([`DirectionStats::dropped_memory`]), and makes the run invalid. The slots and the event
//! queue grow to the most datagrams held at once, a few dozen bytes each. Outside the
//! process, the kernel keeps up to [`SOCKET_BUFFER_BYTES`] per socket, filled only when the
//! thread falls behind.
//!
//! # Sizes
//!
//! The links serialise IP packets: a datagram's size at a link is its UDP payload plus 28 bytes
//! (IPv4 and UDP headers) or 48 bytes (IPv6), see [`wire_bytes`]. A 1200-byte QUIC datagram is
//! 1228 bytes on an emulated IPv4 link.
//!
//! # Timing
//!
//! Model time is nanoseconds since the emulator started, on the monotonic clock. One dedicated
//! thread (not a tokio task; [`start`] is an ordinary function that returns at once) waits with
//! `ppoll(2)` on all its sockets, with a nanosecond timeout set to the next event's time and
//! its timer slack set to 1 ns. Measured on the 2-core development VM, a 50 us-1 ms sleep wakes
//! late by: `ppoll` with 1 ns slack, median 20-25 us, p99 25-50 us; with Linux's default 50 us
//! slack, median ~75 us; `tokio::time::sleep`, median ~1 ms and p99 up to 2 ms (tokio's timer
//! wheel has 1 ms resolution), which is why the relay does not run on tokio. A wait shorter
//! than 20 us is stretched to 20 us ([`COALESCE_NS`]) so that closely spaced events share one
//! wake-up.
//!
//! A datagram enters its link at the time the kernel received it (its `SO_TIMESTAMPNS`
//! timestamp, carried over to the monotonic clock by subtracting how long it waited in the
//! socket), but never before a time the model has already processed (without a timestamp, at
//! the time it is read). The datagrams read from all sockets in one wake-up enter in the order
//! of those times: read socket by socket, the first socket's would otherwise take the places
//! a full queue frees before a datagram that arrived earlier on the next; a socket's own
//! datagrams keep the order they were read in. At most 4 MiB are read before
//! they enter. Before it enters, every event due at or before that time is processed, and
//! every event is processed with its own scheduled time as "now". The `Link` therefore sees
//! the sequence of times the simulator would: a late event delays when a delivered datagram
//! leaves the emulator, but never changes the model's rate, order, queue or drops, and a late
//! read does not move a datagram's arrival unless the model had already run past it.
//!
//! Where the process may (root or `CAP_SYS_NICE`), the relay thread runs at the lowest
//! real-time priority (`SCHED_FIFO` 1; [`EmulatorStats::realtime`] says whether it does).
//! Measured at 100 Mbps with two CPU-bound processes competing for the 2 cores: event
//! lateness p99 ~4 ms (invalid) at normal priority, ~30 us with `SCHED_FIFO`.
//!
//! Measured on the 2-core VM, with the benchmark's source and sink threads on the same two
//! cores: at zero delay and an unlimited rate it forwards 100 000 datagrams per second of
//! 64 bytes (80 000 of 1200 bytes) and stays valid; beyond that it still forwards without loss
//! up to ~150 000 per second but reports itself invalid. Through a rate-limited link (1228-byte
//! packets, 5 ms, offered 1.2x the rate) it stays valid up to 1 Gbps, within 0.2 % of the rate
//! with a 1000-packet buffer. Near saturation the real-time thread meets the kernel's real-time
//! throttling (95 % of a CPU) and stalls ~50 ms once a second, which it reports as invalid.
//!
//! # Self-measurement and validity
//!
//! For every event (transmit, arrival, rate step) the thread records its lateness, the real
//! time at which it was processed minus its scheduled time, in a [`Histogram`]; deliveries have
//! their own histogram. For every datagram it records how long the datagram waited in the
//! socket (read time minus kernel receive timestamp), and it reads the kernel's drop counter
//! of each socket (`SO_RXQ_OVFL`). A run is **valid** when
//!
//! - the p99 of event lateness, of the socket wait and of each direction's delivery lateness
//!   are all at most [`lateness_bound`] = `max(1 ms, serialisation time of a 1500-byte
//!   packet at the slowest rate either link ever has)`: below it, a late event shifts a
//!   departure by less than one packet slot of the link or by less than 1 ms of delay,
//!   whichever is larger (the per-direction check keeps a few late deliveries in a sparse
//!   direction from hiding among many punctual events);
//! - no emulator socket dropped a datagram (a loss the model did not make);
//! - the thread did not stop with an error.
//!
//! The emulator uses Unix sockets and `poll(2)`; precise timers need Linux (`ppoll`, timer
//! slack). Elsewhere it falls back to `poll` with millisecond timeouts.

mod engine;
mod tun;
mod udp;

use crate::netns::{self, Namespaces};
use engine::{Engine, RelayHandle};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::Rate;
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::{LinkConfig, LinkStats, LossConfig, QdiscConfig};
use std::fmt;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;
use tun::TunDoor;
use udp::UdpDoor;

/// Socket buffer size the emulator asks for on every socket (receive and send), bytes.
pub const SOCKET_BUFFER_BYTES: usize = 8 << 20;
/// Most clients (distinct senders to `listen`) the emulator relays for at once.
pub const MAX_CLIENTS: usize = 256;
/// Default of [`EmulatorConfig::client_idle`]: the idle timeout of `kleinrock serve` (noq's
/// default, 30 s), after which the server has forgotten a silent client's connection anyway.
pub const DEFAULT_CLIENT_IDLE: Duration = Duration::from_secs(30);
/// Most datagrams the emulator holds in its two links at once (waiting, in transmission or
/// propagating); a datagram beyond it is dropped before it enters its link and counted
/// ([`DirectionStats::dropped_memory`]).
pub const MAX_HELD_DATAGRAMS: usize = 1 << 16;
/// Most payload bytes the emulator holds in its two links at once; likewise.
pub const MAX_HELD_BYTES: u64 = 64 << 20;
/// The floor of the validity bound on event lateness.
pub const LATENESS_FLOOR: Duration = Duration::from_millis(1);
/// Packet size whose serialisation time sets the validity bound on slow links, bytes.
pub const BOUND_PACKET_BYTES: u64 = 1500;

/// Shortest sleep of the relay thread, ns: a wait for an event due sooner is stretched to
/// this. Arming a timer and waking up costs several microseconds of kernel time on the VM
/// (perf at 500 Mbps: a third of the thread's time in `ppoll`'s hrtimer path), so one wake-up
/// per event saturates the thread near 500 Mbps of 1228-byte packets; with 20 us it stays
/// valid to ~800 Mbps, at the price of at most 20 us more lateness.
pub const COALESCE_NS: u64 = 20_000;

/// What the emulator relays and how: addresses, the two directions' links and the seed.
#[derive(Clone, Debug, PartialEq)]
pub struct EmulatorConfig {
    /// Where clients send; port 0 picks a free port (see [`EmulatorHandle::listen_addr`]).
    pub listen: SocketAddr,
    /// Where the emulator relays client datagrams to.
    pub server: SocketAddr,
    /// The link from the clients to the server.
    pub forward: LinkConfig,
    /// The link from the server to the clients.
    pub reverse: LinkConfig,
    /// Seed of the links' loss and jitter generators (streams as in the simulator: link 0 is
    /// `forward`, link 1 is `reverse`).
    pub seed: u64,
    /// How long a client may stay silent (no datagram either way, none in the links) before
    /// its slot expires.
    pub client_idle: Duration,
}

/// Why the emulator could not start.
#[derive(Debug)]
pub enum EmulatorError {
    /// An address is not a loopback address: the emulator only runs on loopback.
    NotLoopback {
        /// Which address (`listen` or `server`).
        role: &'static str,
        /// The address given.
        addr: SocketAddr,
    },
    /// A setting the link model cannot run with.
    BadConfig(String),
    /// The TUN link cannot run here: what is missing (root, `/dev/net/tun`, `ip`).
    Unsupported(String),
    /// Making or configuring the TUN link's namespaces failed.
    Setup(String),
    /// A socket or thread operation failed.
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        source: io::Error,
    },
}

impl fmt::Display for EmulatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EmulatorError::NotLoopback { role, addr } => write!(
                f,
                "emulator {role} address {addr} is not a loopback address \
                 (the emulator only relays between 127.0.0.0/8 or ::1 addresses)"
            ),
            EmulatorError::BadConfig(msg) => write!(f, "bad emulator configuration: {msg}"),
            EmulatorError::Unsupported(msg) | EmulatorError::Setup(msg) => f.write_str(msg),
            EmulatorError::Io { what, source } => write!(f, "emulator: {what}: {source}"),
        }
    }
}

impl std::error::Error for EmulatorError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EmulatorError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> EmulatorError {
    move |source| EmulatorError::Io { what, source }
}

/// Counters and measurements of one direction.
#[derive(Clone, Debug, Default)]
pub struct DirectionStats {
    /// Datagrams that entered the link.
    pub datagrams_in: u64,
    /// UDP payload bytes that entered the link.
    pub bytes_in: u64,
    /// Datagrams the link delivered and the emulator sent on.
    pub datagrams_out: u64,
    /// UDP payload bytes sent on.
    pub bytes_out: u64,
    /// Bytes sent on as the link counts them (payload plus IP and UDP headers).
    pub wire_bytes_out: u64,
    /// Datagrams dropped because the buffer was full.
    pub dropped_buffer: u64,
    /// Datagrams lost to the random loss model.
    pub lost_random: u64,
    /// Datagrams dropped by the policer.
    pub policed: u64,
    /// Datagrams dropped because the emulator already held [`MAX_HELD_DATAGRAMS`] datagrams
    /// or [`MAX_HELD_BYTES`] bytes in its links: a buffer or path larger than the emulator
    /// keeps, which makes the run invalid (the link model did not see these datagrams).
    pub dropped_memory: u64,
    /// Delivered datagrams the emulator failed to send on (socket error).
    pub send_errors: u64,
    /// Wire bytes sent on after the first delivery over the time from the first to the last.
    pub achieved_rate: Rate,
    /// Lateness of deliveries: time the datagram was handed to the socket minus the time the
    /// link delivered it, ns.
    pub delivery_lateness: Histogram,
    /// The link's own statistics since the start (queue maximum, transmitted bytes, drops).
    pub link: LinkStats,
}

/// A client of the emulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    /// The client's address (the sender to `listen`).
    pub addr: SocketAddr,
    /// The address of its upstream socket, which the server sees as the client.
    pub upstream: SocketAddr,
}

/// What the emulator measured about the traffic and about itself.
#[derive(Clone, Debug, Default)]
pub struct EmulatorStats {
    /// Time since the emulator started.
    pub elapsed: Duration,
    /// Clients to server.
    pub forward: DirectionStats,
    /// Server to clients.
    pub reverse: DirectionStats,
    /// The clients with a slot now, by slot (a client's slot is its class).
    pub clients: Vec<ClientInfo>,
    /// Clients that ever had a slot.
    pub clients_seen: u64,
    /// Slots that expired (their client idle for [`EmulatorConfig::client_idle`]).
    pub clients_expired: u64,
    /// Datagrams from new senders refused because [`MAX_CLIENTS`] clients had a slot.
    pub clients_refused: u64,
    /// Datagrams that reached an upstream socket from an address other than the server.
    pub unknown_dropped: u64,
    /// Payload bytes of those datagrams.
    pub unknown_bytes: u64,
    /// The most datagrams the links held at once (at most [`MAX_HELD_DATAGRAMS`]).
    pub held_peak_datagrams: usize,
    /// The most payload bytes the links held at once (at most [`MAX_HELD_BYTES`]).
    pub held_peak_bytes: u64,
    /// Socket receive errors other than "would block".
    pub io_errors: u64,
    /// Events processed.
    pub events: u64,
    /// Lateness of every event (processing time minus scheduled time), ns.
    pub lateness: Histogram,
    /// How long each datagram waited in an emulator socket before the thread read it (read
    /// time minus the kernel's receive timestamp), ns. A datagram enters its link at its
    /// kernel timestamp, so waiting does not move it in the model unless the model had
    /// already passed that time; a long wait means the thread is falling behind.
    pub input_wait: Histogram,
    /// Datagrams the kernel dropped at the emulator's sockets because a receive buffer was
    /// full (the thread fell far behind), or for the TUN link at its devices (counted when it
    /// shuts down): losses the model did not make.
    pub socket_drops: u64,
    /// The p99 lateness at or below which the run is valid.
    pub lateness_bound: Duration,
    /// Receive buffer the kernel granted the listen socket, bytes (Linux reports twice the
    /// requested size, the other half being its bookkeeping allowance).
    pub socket_buffer_bytes: usize,
    /// Whether the relay thread runs at real-time priority (`SCHED_FIFO` 1), which keeps its
    /// timers on time when other processes compete for the CPU.
    pub realtime: bool,
    /// Why the relay thread stopped early, if it did.
    pub failure: Option<String>,
    /// The run is valid: p99 of event lateness, of input wait and of each direction's
    /// delivery lateness within `lateness_bound`, no socket drops, no datagram dropped for
    /// memory, no failure.
    pub valid: bool,
}

impl EmulatorStats {
    /// The p99 of event lateness; zero when no event ran.
    pub fn lateness_p99(&self) -> Duration {
        p99(&self.lateness)
    }

    /// Which of the validity checks failed, for a run that is not valid (`None` for a valid
    /// one), e.g. `socket wait p99 1.3ms > 1ms`.
    pub fn why_invalid(&self) -> Option<String> {
        (!self.valid).then(|| self.failed_checks().join("; "))
    }

    /// The validity checks this run fails (see [`EmulatorStats::valid`]); none for a valid run.
    fn failed_checks(&self) -> Vec<String> {
        let bound = self.lateness_bound;
        let checks = [
            ("event lateness", &self.lateness),
            ("socket wait", &self.input_wait),
            ("forward delivery lateness", &self.forward.delivery_lateness),
            ("reverse delivery lateness", &self.reverse.delivery_lateness),
        ];
        let over = |h: &Histogram| h.quantile(0.99).unwrap_or(0.0) > bound.as_nanos() as f64;
        let mut why: Vec<String> = checks
            .iter()
            .filter(|(_, h)| over(h))
            .map(|(name, h)| format!("{name} p99 {:?} > {bound:?}", p99(h)))
            .collect();
        if self.socket_drops > 0 {
            why.push(format!(
                "{} datagrams dropped at its sockets or devices",
                self.socket_drops
            ));
        }
        let memory = self.forward.dropped_memory + self.reverse.dropped_memory;
        if memory > 0 {
            why.push(format!("{memory} datagrams beyond what it holds"));
        }
        why.extend(self.failure.clone());
        why
    }
}

fn p99(h: &Histogram) -> Duration {
    quantile(h, 0.99)
}

/// The `q` quantile of a histogram of nanoseconds; zero for an empty one.
pub(crate) fn quantile(h: &Histogram, q: f64) -> Duration {
    Duration::from_nanos(h.quantile(q).unwrap_or(0.0) as u64)
}

/// IPv4 and UDP header bytes in front of each datagram's payload on the wire.
pub const IPV4_UDP_HEADER: u64 = 28;

/// Bytes a datagram of `payload` UDP payload bytes occupies on an emulated link: the payload
/// plus 28 (IPv4 and UDP headers) or 48 (IPv6 and UDP headers).
pub fn wire_bytes(payload: usize, ipv6: bool) -> u32 {
    let header = if ipv6 { 48 } else { IPV4_UDP_HEADER as usize };
    u32::try_from(payload + header).unwrap_or(u32::MAX)
}

/// The validity bound of a pair of links: `max(1 ms, serialisation time of a 1500-byte packet
/// at the slowest rate either link has at any time)`.
pub fn lateness_bound(forward: &LinkConfig, reverse: &LinkConfig) -> Duration {
    let slowest = [forward, reverse]
        .iter()
        .flat_map(|l| std::iter::once(l.rate).chain(l.schedule.iter().map(|s| s.1)))
        .map(Rate::bytes_per_sec)
        .fold(f64::INFINITY, f64::min);
    let packet = Duration::from_secs_f64(BOUND_PACKET_BYTES as f64 / slowest);
    packet.max(LATENESS_FLOOR)
}

/// Asks for `bytes` of receive and send buffer on a socket: `SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`
/// where the process may (root), else `SO_RCVBUF`/`SO_SNDBUF`, which the kernel caps at
/// `net.core.rmem_max`/`wmem_max`. Returns the receive buffer the kernel reports.
pub fn set_socket_buffers(socket: &impl AsFd, bytes: usize) -> io::Result<usize> {
    let fd = socket.as_fd().as_raw_fd();
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    let set = |opt: libc::c_int| -> bool {
        // SAFETY: fd is a live socket borrowed for this call; the option value is a c_int
        // passed with its size.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&value as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    #[cfg(target_os = "linux")]
    let pairs = [
        (libc::SO_RCVBUFFORCE, libc::SO_RCVBUF),
        (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF),
    ];
    #[cfg(not(target_os = "linux"))]
    let pairs = [
        (libc::SO_RCVBUF, libc::SO_RCVBUF),
        (libc::SO_SNDBUF, libc::SO_SNDBUF),
    ];
    for (forced, plain) in pairs {
        if !set(forced) && !set(plain) {
            return Err(io::Error::last_os_error());
        }
    }
    let mut got: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: as above; `got` and `len` are valid for writes of their sizes.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&mut got as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(got).unwrap_or(0))
}

fn check_rate(what: &str, rate: Rate) -> Result<(), String> {
    let b = rate.bytes_per_sec();
    if b.is_finite() && b > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "{what} must be a positive, finite rate, got {rate}"
        ))
    }
}

fn check_probability(what: &str, p: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!("{what} must be a probability in [0, 1], got {p}"))
    }
}

/// Checks what the link model needs to run: positive rates, probabilities, a non-zero quantum.
fn check_link(dir: &str, l: &LinkConfig) -> Result<(), String> {
    check_rate(&format!("{dir} link rate"), l.rate)?;
    for (t, r) in &l.schedule {
        check_rate(&format!("{dir} link rate step at {t:?}"), *r)?;
    }
    match l.loss {
        LossConfig::None => {}
        LossConfig::Bernoulli { p } => check_probability(&format!("{dir} loss p"), p)?,
        LossConfig::GilbertElliott {
            p_good_bad,
            p_bad_good,
            loss_good,
            loss_bad,
        } => {
            for (name, p) in [
                ("p_good_bad", p_good_bad),
                ("p_bad_good", p_bad_good),
                ("loss_good", loss_good),
                ("loss_bad", loss_bad),
            ] {
                check_probability(&format!("{dir} loss {name}"), p)?;
            }
        }
    }
    if let Some(p) = l.policer {
        let b = p.rate.bytes_per_sec();
        if !(b.is_finite() && b >= 0.0) {
            return Err(format!(
                "{dir} policer rate must be finite and not negative"
            ));
        }
    }
    if let QdiscConfig::Fq { quantum, .. } = l.qdisc {
        if quantum == 0 {
            return Err(format!("{dir} fair-queuing quantum must be positive"));
        }
    }
    Ok(())
}

fn check_config(config: &EmulatorConfig) -> Result<(), EmulatorError> {
    for (role, addr) in [("listen", config.listen), ("server", config.server)] {
        if !addr.ip().is_loopback() {
            return Err(EmulatorError::NotLoopback { role, addr });
        }
    }
    if config.server.port() == 0 {
        return Err(EmulatorError::BadConfig("server port must not be 0".into()));
    }
    if config.listen == config.server {
        return Err(EmulatorError::BadConfig(format!(
            "listen and server are the same address {}",
            config.listen
        )));
    }
    check_link("forward", &config.forward).map_err(EmulatorError::BadConfig)?;
    check_link("reverse", &config.reverse).map_err(EmulatorError::BadConfig)?;
    Ok(())
}

/// Starts the emulator on its own thread: binds `listen` and returns at once. Dropping the
/// handle stops it too.
pub fn start(config: EmulatorConfig) -> Result<EmulatorHandle, EmulatorError> {
    check_config(&config)?;
    let listen = UdpSocket::bind(config.listen).map_err(io_err("binding the listen socket"))?;
    listen
        .set_nonblocking(true)
        .map_err(io_err("making the listen socket non-blocking"))?;
    let socket_buffer_bytes = set_socket_buffers(&listen, SOCKET_BUFFER_BYTES)
        .map_err(io_err("sizing the listen socket's buffers"))?;
    enable_receive_metadata(&listen).map_err(io_err("asking for receive timestamps"))?;
    let listen_addr = listen
        .local_addr()
        .map_err(io_err("reading the listen address"))?;
    let (engine, wiring) = Engine::new(&config.forward, &config.reverse, config.seed)
        .map_err(io_err("creating the control socket"))?;
    let door = UdpDoor::new(
        listen,
        config.server,
        duration_nanos(config.client_idle),
        engine.control_pollfd(),
        socket_buffer_bytes,
    );
    let relay = engine::spawn(engine, door, wiring, "kleinrock-emulator")
        .map_err(io_err("starting the relay thread"))?;
    Ok(EmulatorHandle {
        listen: listen_addr,
        relay,
    })
}

/// A running emulator.
#[derive(Debug)]
pub struct EmulatorHandle {
    listen: SocketAddr,
    relay: RelayHandle,
}

impl EmulatorHandle {
    /// The address clients send to (with the port the kernel picked if `listen` had port 0).
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// A snapshot of the counters and measurements so far.
    pub fn stats(&self) -> EmulatorStats {
        self.relay.stats()
    }

    /// Stops the relay thread, releases every socket, and returns the final statistics.
    pub fn shutdown(self) -> EmulatorStats {
        self.relay.shutdown()
    }
}

/// Starts the TUN link: makes the run's client and server namespaces (see [`crate::netns`]),
/// each with a TUN device, and relays IP packets between them, client to server through
/// `forward` and back through `reverse`, on its own thread. Returns at once; dropping the
/// handle stops the thread and deletes the namespaces.
pub fn start_tun(
    forward: &LinkConfig,
    reverse: &LinkConfig,
    seed: u64,
) -> Result<TunLink, EmulatorError> {
    check_link("forward", forward).map_err(EmulatorError::BadConfig)?;
    check_link("reverse", reverse).map_err(EmulatorError::BadConfig)?;
    if let Some(missing) = netns::check_support() {
        return Err(EmulatorError::Unsupported(missing));
    }
    let mut namespaces = Namespaces::create().map_err(EmulatorError::Setup)?;
    let Some([client, server]) = namespaces.take_tuns() else {
        return Err(EmulatorError::Setup("the TUN devices are gone".into()));
    };
    let (engine, wiring) =
        Engine::new(forward, reverse, seed).map_err(io_err("creating the control socket"))?;
    let door = TunDoor::new(client, server, engine.control_pollfd());
    let relay = engine::spawn(engine, door, wiring, "kleinrock-tun-link")
        .map_err(io_err("starting the relay thread"))?;
    Ok(TunLink { relay, namespaces })
}

/// A running TUN link and its namespaces.
#[derive(Debug)]
pub struct TunLink {
    // Dropped first: the thread stops and the devices close before the namespaces go.
    relay: RelayHandle,
    namespaces: Namespaces,
}

impl TunLink {
    /// The run's namespaces: where programs and sockets of either side go.
    pub fn namespaces(&self) -> &Namespaces {
        &self.namespaces
    }

    /// A snapshot of the counters and measurements so far.
    pub fn stats(&self) -> EmulatorStats {
        self.relay.stats()
    }

    /// Stops the relay thread, closes the devices, deletes the namespaces, and returns the
    /// final statistics.
    pub fn shutdown(self) -> EmulatorStats {
        let TunLink { relay, namespaces } = self;
        // Read while the devices exist: they go with the relay thread's descriptors.
        let drops = namespaces.device_drops();
        let mut stats = relay.shutdown();
        drop(namespaces);
        stats.socket_drops += drops;
        stats.valid = stats.failed_checks().is_empty();
        stats
    }
}

/// Sets this thread's timer slack to 1 ns so `ppoll` timeouts are not rounded up by 50 us.
pub(crate) fn set_fine_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Moves this thread to `SCHED_FIFO` at the lowest real-time priority, where the process may
/// (root or `CAP_SYS_NICE`); returns whether it did. The relay sleeps in `ppoll` whenever it
/// is idle, and the kernel's real-time throttling (`sched_rt_runtime_us`, 95 % by default)
/// keeps even a flooded relay from taking a whole CPU.
pub(crate) fn try_realtime() -> bool {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: changes the scheduling policy of the calling thread only; param is valid.
        unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Asks the kernel to stamp each received datagram (`SO_TIMESTAMPNS`) and to report the
/// socket's drop counter with it (`SO_RXQ_OVFL`); [`receive`] reads both.
pub fn enable_receive_metadata(socket: &UdpSocket) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    for opt in [libc::SO_TIMESTAMPNS, libc::SO_RXQ_OVFL] {
        let on: libc::c_int = 1;
        // SAFETY: a live socket and a c_int option value passed with its size.
        let r = unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&on as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = socket;
    Ok(())
}

/// A datagram read from a socket.
pub struct Received {
    /// Payload bytes (in the caller's buffer).
    pub len: usize,
    /// Sender.
    pub from: SocketAddr,
    /// When the kernel received it, ns on the system clock; `None` without a timestamp
    /// (see [`enable_receive_metadata`]).
    pub stamp_ns: Option<u64>,
    /// When it was read, ns on the system clock.
    pub read_ns: u64,
    /// The socket's drop counter (datagrams the kernel dropped because the receive buffer
    /// was full, since the socket was created), if reported.
    pub socket_drops: Option<u32>,
}

impl Received {
    /// How long it waited in the socket (read time minus kernel timestamp), if stamped.
    pub fn waited_ns(&self) -> Option<u64> {
        self.stamp_ns.map(|s| self.read_ns.saturating_sub(s))
    }
}

/// Reads one datagram into `buf` with its kernel timestamp and the socket's drop counter.
#[cfg(target_os = "linux")]
pub fn receive(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    // SAFETY: every pointer in the msghdr refers to a live local buffer of the stated length;
    // control messages are read with the CMSG macros inside `control`, their payloads with
    // unaligned reads; the address is read as the family the kernel wrote.
    unsafe {
        let mut addr: libc::sockaddr_storage = std::mem::zeroed();
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_name = (&mut addr as *mut libc::sockaddr_storage).cast();
        msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        let n = libc::recvmsg(socket.as_raw_fd(), &mut msg, 0);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let read_at = system_ns();
        let mut stamp_ns = None;
        let mut socket_drops = None;
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET {
                let data = libc::CMSG_DATA(c);
                if (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(data as *const libc::timespec);
                    stamp_ns = Some(
                        (ts.tv_sec as u64)
                            .saturating_mul(1_000_000_000)
                            .saturating_add(ts.tv_nsec as u64),
                    );
                } else if (*c).cmsg_type == libc::SO_RXQ_OVFL {
                    socket_drops = Some(std::ptr::read_unaligned(data as *const u32));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
        let from = match i32::from(addr.ss_family) {
            libc::AF_INET => {
                let a = &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in);
                SocketAddr::from((
                    Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                    u16::from_be(a.sin_port),
                ))
            }
            libc::AF_INET6 => {
                let a = &*(&addr as *const libc::sockaddr_storage as *const libc::sockaddr_in6);
                SocketAddr::V6(std::net::SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    a.sin6_flowinfo,
                    a.sin6_scope_id,
                ))
            }
            _ => return Err(io::Error::other("datagram from an unknown address family")),
        };
        Ok(Received {
            len: n as usize,
            from,
            stamp_ns,
            read_ns: read_at,
            socket_drops,
        })
    }
}

/// Reads one datagram into `buf` (no kernel timestamps on this platform).
#[cfg(not(target_os = "linux"))]
pub fn receive(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<Received> {
    let (len, from) = socket.recv_from(buf)?;
    Ok(Received {
        len,
        from,
        stamp_ns: None,
        read_ns: system_ns(),
        socket_drops: None,
    })
}

/// Nanoseconds on the system clock (the clock of kernel receive timestamps).
pub fn system_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, duration_nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_sim::{BufferLimit, LossPoint};

    fn link(mbps: f64) -> LinkConfig {
        LinkConfig {
            name: "l".into(),
            rate: Rate::from_bits_per_sec(mbps * 1e6),
            schedule: vec![],
            delivery_trace: None,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: LossConfig::None,
            loss_at: LossPoint::Arrival,
            policer: None,
            qdisc: QdiscConfig::Fifo,
            buffer: BufferLimit::Packets(10),
        }
    }

    #[test]
    fn bound_is_1_ms_or_a_packet_at_the_slowest_rate() {
        assert_eq!(lateness_bound(&link(100.0), &link(100.0)), LATENESS_FLOOR);
        // 1500 B at 10 Mbps: 1.2 ms.
        let b = lateness_bound(&link(100.0), &link(10.0));
        assert_eq!(b, Duration::from_micros(1200));
        // A step down to 1 Mbps: 12 ms.
        let mut stepped = link(100.0);
        stepped.schedule = vec![(Duration::from_secs(1), Rate::from_bits_per_sec(1e6))];
        assert_eq!(
            lateness_bound(&stepped, &link(100.0)),
            Duration::from_millis(12)
        );
    }

    #[test]
    fn wire_size_adds_ip_and_udp_headers() {
        assert_eq!(wire_bytes(1200, false), 1228);
        assert_eq!(wire_bytes(1200, true), 1248);
    }

    #[test]
    fn config_checks_name_the_problem() {
        let server: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let ok = EmulatorConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            server,
            forward: link(10.0),
            reverse: link(10.0),
            seed: 0,
            client_idle: DEFAULT_CLIENT_IDLE,
        };
        assert!(check_config(&ok).is_ok());
        let mut c = ok.clone();
        c.listen = "[::1]:0".parse().unwrap();
        assert!(check_config(&c).is_ok(), "IPv6 loopback is loopback");
        c.listen = "10.1.2.3:0".parse().unwrap();
        assert!(matches!(
            check_config(&c),
            Err(EmulatorError::NotLoopback { role: "listen", .. })
        ));
        let mut c = ok.clone();
        c.listen = server;
        assert!(check_config(&c).is_err(), "a relay to itself");
        let mut c = ok.clone();
        c.reverse.loss = LossConfig::Bernoulli { p: 1.5 };
        let e = check_config(&c).unwrap_err().to_string();
        assert!(e.contains("reverse loss p"), "{e}");
        let mut c = ok;
        c.forward.qdisc = QdiscConfig::Fq {
            flow_limit: 100,
            quantum: 0,
            initial_quantum: 0,
        };
        let e = check_config(&c).unwrap_err().to_string();
        assert!(e.contains("quantum"), "{e}");
    }
}
