//! Linux's own TCP through the TUN link: each flow is a kernel TCP connection from the server
//! namespace to the client namespace (a download: its data crosses the link's reverse
//! direction, its ACKs the forward one), its sender's congestion control set by name with
//! `TCP_CONGESTION`, measured from the sender's `TCP_INFO` and from the bytes the receiver
//! reads.
//!
//! Every trace interval the run samples each sender's `TCP_INFO` (`tcpi_snd_cwnd`,
//! `tcpi_snd_ssthresh`, `tcpi_rtt`, `tcpi_pacing_rate`, `tcpi_ca_state`, segments and
//! retransmissions) and each receiver's byte count, into the same trace columns a simulated
//! flow has where they mean the same thing. The RTT samples of a kernel flow are those
//! per-interval readings of the smoothed RTT (`tcpi_rtt`): the kernel does not expose each
//! ACK's sample.

use crate::emulator::{start_tun, EmulatorError, EmulatorStats, TunLink};
use crate::netns::{self, Side, CLIENT_ADDR};
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::trace::Series;
use kleinrock_sim::LinkConfig;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where the kernel lists the algorithms it offers.
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// The first receiver port; flow `i` listens on `BASE_PORT + i`.
const BASE_PORT: u16 = 5201;
/// Bytes per write.
const CHUNK: usize = 64 << 10;
/// How long a blocked write waits before the sender looks at the clock again.
const WRITE_TIMEOUT: Duration = Duration::from_millis(20);
/// How long the run waits for receivers to see their connection's end after the run.
const LINGER: Duration = Duration::from_millis(500);

/// One kernel flow of a run.
#[derive(Clone, Debug)]
pub struct KernelFlow {
    /// Its name.
    pub name: String,
    /// The kernel algorithm (`cubic`, `reno`, `bbr`).
    pub cc: String,
    /// When it starts, from the start of the run.
    pub start: Duration,
    /// Bytes to send; `None` sends until the run ends.
    pub bytes: Option<u64>,
}

/// A run of kernel flows through one TUN link.
#[derive(Clone, Debug)]
pub struct KernelRun {
    /// Client to server (the flows' ACKs).
    pub forward: LinkConfig,
    /// Server to client (the flows' data).
    pub reverse: LinkConfig,
    /// Seed of the links' loss and jitter.
    pub seed: u64,
    /// The flows.
    pub flows: Vec<KernelFlow>,
    /// How long the run lasts.
    pub duration: Duration,
    /// When measurement starts: RTT samples and the window's counts begin at the first
    /// sample at or after it.
    pub warmup: Duration,
    /// Trace interval.
    pub interval: Duration,
}

/// What one kernel flow did.
#[derive(Clone, Debug)]
pub struct KernelFlowResult {
    /// Its name.
    pub name: String,
    /// Its kernel algorithm.
    pub cc: String,
    /// Per-interval samples: `cwnd_bytes`, `ssthresh_bytes`, `srtt_ms`, `pacing_rate_bps`,
    /// `in_flight_bytes`, `delivered_bytes`, `sent_packets`, `lost_packets` (segments
    /// retransmitted), `rx_rate_bps`; the mode column is the kernel's congestion state.
    pub trace: Series,
    /// The counters at the first sample at or after the warmup (zero if the flow had not
    /// started by then).
    pub at_warmup: Counters,
    /// The counters at the last sample, at the end of the run.
    pub at_end: Counters,
    /// From its start until its receiver read the last byte (sized flows that finished).
    pub completion: Option<Duration>,
    /// Entries into Recovery or Loss seen in the samples from the warmup on.
    pub recoveries: u64,
    /// The smoothed RTT at each sample from the warmup on, ns.
    pub srtt: Histogram,
    /// Why its sender gave up (socket, `TCP_CONGESTION`, connect, send), if it did.
    pub failure: Option<String>,
}

/// A flow's counters at one time.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    /// When they were read, from the start of the run.
    pub at: Duration,
    /// Bytes the receiver had read.
    pub received: u64,
    /// `tcpi_bytes_sent`.
    pub bytes_sent: u64,
    /// `tcpi_bytes_retrans`.
    pub bytes_retrans: u64,
    /// `tcpi_data_segs_out`.
    pub segs_out: u64,
    /// `tcpi_total_retrans`.
    pub retrans_segs: u64,
}

/// The algorithms the kernel offers.
pub fn available() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE)
        .map(|t| t.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// Checks that the kernel offers `cc`, by setting it on a socket as a flow will (as root, the
/// kernel loads a module `tcp_<cc>` for it if there is one); the message names it and what
/// the kernel offers.
pub fn check_cc(cc: &str) -> Result<(), String> {
    let offered = available();
    let settable = || {
        Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
            .is_ok_and(|s| set_congestion(&s, cc).is_ok())
    };
    if offered.iter().any(|a| a == cc) || settable() {
        return Ok(());
    }
    Err(format!(
        "the kernel does not offer `{cc}`; it offers: {} ({AVAILABLE}; no module tcp_{cc} \
         loads either)",
        if offered.is_empty() {
            "nothing listed".to_string()
        } else {
            offered.join(" ")
        }
    ))
}

/// Runs the flows through a fresh TUN link; their results in order, and the link's statistics.
pub fn run(config: &KernelRun) -> Result<(Vec<KernelFlowResult>, EmulatorStats), EmulatorError> {
    for f in &config.flows {
        check_cc(&f.cc).map_err(EmulatorError::BadConfig)?;
    }
    let tun = start_tun(&config.forward, &config.reverse, config.seed)?;
    let started = Instant::now();
    let mut flows: Vec<Running> = Vec::new();
    for (i, f) in config.flows.iter().enumerate() {
        match Running::start(&tun, f, i, started, config.duration) {
            Ok(flow) => flows.push(flow),
            Err(e) => {
                for flow in flows {
                    flow.abort();
                }
                return Err(e);
            }
        }
    }
    let samples = sample(&flows, started, config);
    let results = flows
        .into_iter()
        .zip(samples)
        .map(|(f, s)| f.finish(s, config.duration))
        .collect();
    Ok((results, tun.shutdown()))
}

/// A flow under way: its sender's socket and both threads.
struct Running {
    spec: KernelFlow,
    socket: Arc<Mutex<Option<Arc<Socket>>>>,
    /// What made the sender give up, if anything did.
    failure: Arc<Mutex<Option<String>>>,
    received: Arc<AtomicU64>,
    /// When the receiver read its last byte (end of stream), ns since the run's start.
    done_ns: Arc<AtomicU64>,
    /// Tells the sender to stop writing.
    stop: Arc<AtomicBool>,
    /// Tells the receiver to stop waiting.
    quit: Arc<AtomicBool>,
    sender: JoinHandle<()>,
    receiver: JoinHandle<()>,
}

fn io_error(what: &'static str) -> impl Fn(std::io::Error) -> EmulatorError {
    move |source| EmulatorError::Io { what, source }
}

impl Running {
    /// Listens in the client namespace and starts the sender's thread, which connects from
    /// the server namespace at the flow's start.
    fn start(
        tun: &TunLink,
        spec: &KernelFlow,
        i: usize,
        started: Instant,
        duration: Duration,
    ) -> Result<Running, EmulatorError> {
        let ns = tun.namespaces();
        let client = ns
            .open(Side::Client)
            .map_err(io_error("opening the client namespace"))?;
        let server = ns
            .open(Side::Server)
            .map_err(io_error("opening the server namespace"))?;
        let port = BASE_PORT + i as u16;
        let listener = netns::in_namespace(&client, || TcpListener::bind((CLIENT_ADDR, port)))
            .and_then(|r| r)
            .map_err(|e| {
                EmulatorError::Setup(format!(
                    "flow {}: cannot listen on {CLIENT_ADDR}:{port} in the client namespace: {e}",
                    spec.name
                ))
            })?;
        let received = Arc::new(AtomicU64::new(0));
        let done_ns = Arc::new(AtomicU64::new(u64::MAX));
        let stop = Arc::new(AtomicBool::new(false));
        let quit = Arc::new(AtomicBool::new(false));
        listener
            .set_nonblocking(true)
            .map_err(io_error("configuring the listener"))?;
        let receiver = {
            let (received, done_ns) = (Arc::clone(&received), Arc::clone(&done_ns));
            let quit = Arc::clone(&quit);
            std::thread::spawn(move || {
                let mut counts = Counts {
                    received: &received,
                    done_ns: &done_ns,
                    started,
                };
                receive(&listener, &mut counts, &quit);
            })
        };
        let socket = Arc::new(Mutex::new(None));
        let failure = Arc::new(Mutex::new(None));
        let sender = {
            let (socket, stop, spec) = (Arc::clone(&socket), Arc::clone(&stop), spec.clone());
            let to = SocketAddr::from((CLIENT_ADDR, port));
            let failure = Arc::clone(&failure);
            std::thread::spawn(move || {
                let sent = netns::enter(&server)
                    .map_err(|e| format!("cannot enter the server namespace: {e}"))
                    .and_then(|()| send(&spec, to, &socket, &stop, started, duration));
                if let Err(why) = sent {
                    *crate::lock(&failure) = Some(why);
                }
            })
        };
        Ok(Running {
            spec: spec.clone(),
            socket,
            failure,
            received,
            done_ns,
            stop,
            quit,
            sender,
            receiver,
        })
    }

    /// The sender's `TCP_INFO`, once it has connected.
    fn info(&self) -> Option<libc::tcp_info> {
        let socket = crate::lock(&self.socket).clone()?;
        tcp_info(&socket)
    }

    /// Stops the threads of a flow whose run could not start.
    fn abort(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.quit.store(true, Ordering::Relaxed);
        let _ = self.sender.join();
        let _ = self.receiver.join();
    }

    /// Stops the threads and gathers what the flow did.
    fn finish(self, samples: Samples, duration: Duration) -> KernelFlowResult {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.sender.join();
        let deadline = Instant::now() + LINGER;
        while !self.receiver.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        self.quit.store(true, Ordering::Relaxed);
        let _ = self.receiver.join();
        let done = Duration::from_nanos(self.done_ns.load(Ordering::Relaxed));
        let spec = self.spec;
        // A sized flow completed if its receiver read every byte before the run ended (the
        // sender's FIN at the end of the run also ends a stream that fell short).
        let all = spec.bytes == Some(self.received.load(Ordering::Relaxed));
        let completion = (all && done <= duration).then(|| done.saturating_sub(spec.start));
        let failure = crate::lock(&self.failure).take();
        KernelFlowResult {
            trace: samples.trace,
            at_warmup: samples.at_warmup.unwrap_or_default(),
            at_end: samples.latest,
            completion,
            recoveries: samples.recoveries,
            srtt: samples.srtt,
            failure,
            name: spec.name,
            cc: spec.cc,
        }
    }
}

/// The sender's `TCP_INFO`.
fn tcp_info(socket: &Socket) -> Option<libc::tcp_info> {
    // SAFETY: tcp_info is plain integers; all zeros is a valid value.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: `info` and `len` are valid for writes of their sizes; a live socket.
    let r = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(info)
}

/// Sets the socket's congestion control (`TCP_CONGESTION`).
fn set_congestion(socket: &Socket, cc: &str) -> std::io::Result<()> {
    // SAFETY: the name's bytes with their length; a live socket.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr().cast(),
            cc.len() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Whether a socket call that failed with `e` is to be tried again (its timeout passed, or a
/// signal came).
fn again(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// The sender (in the server namespace): at the flow's start, connects with its algorithm and
/// writes its bytes, or until the run ends or `stop`; then closes its side. What failed, if
/// anything did.
fn send(
    spec: &KernelFlow,
    to: SocketAddr,
    shared: &Mutex<Option<Arc<Socket>>>,
    stop: &AtomicBool,
    started: Instant,
    duration: Duration,
) -> Result<(), String> {
    let end = started + duration;
    while let Some(wait) = (started + spec.start).checked_duration_since(Instant::now()) {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        std::thread::sleep(wait.min(RECEIVE_POLL));
    }
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| format!("cannot open a socket: {e}"))?;
    set_congestion(&socket, &spec.cc).map_err(|e| format!("TCP_CONGESTION {}: {e}", spec.cc))?;
    // A lost SYN is sent again after 1 s, 2 s, ...: give up when the run ends.
    let left = end
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    socket
        .connect_timeout(&SockAddr::from(to), left)
        .map_err(|e| format!("cannot connect to {to}: {e}"))?;
    socket
        .set_write_timeout(Some(WRITE_TIMEOUT))
        .map_err(|e| format!("cannot set the write timeout: {e}"))?;
    let socket = Arc::new(socket);
    *crate::lock(shared) = Some(Arc::clone(&socket));
    let chunk = vec![0u8; CHUNK];
    let mut left = spec.bytes.unwrap_or(u64::MAX);
    let mut result = Ok(());
    while left > 0 && !stop.load(Ordering::Relaxed) && Instant::now() < end {
        let n = (left.min(CHUNK as u64)) as usize;
        match (&*socket).write(&chunk[..n]) {
            Ok(w) => left -= w as u64,
            Err(e) if again(&e) => {}
            Err(e) => {
                result = Err(format!("cannot send: {e}"));
                break;
            }
        }
    }
    let _ = socket.shutdown(std::net::Shutdown::Write);
    result
}

/// Where the receiver counts.
struct Counts<'a> {
    received: &'a AtomicU64,
    /// When the stream ended, ns since `started`.
    done_ns: &'a AtomicU64,
    started: Instant,
}

/// How often a waiting receiver looks at its `quit` flag.
const RECEIVE_POLL: Duration = Duration::from_millis(20);

/// The receiver (its socket in the client namespace): accepts one connection and reads it to
/// its end, counting bytes and recording when the end came; gives up when `quit` is set.
fn receive(listener: &TcpListener, counts: &mut Counts<'_>, quit: &AtomicBool) {
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if quit.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(RECEIVE_POLL);
            }
            Err(_) => return,
        }
    };
    if stream.set_nonblocking(false).is_err()
        || stream.set_read_timeout(Some(RECEIVE_POLL)).is_err()
    {
        return;
    }
    let mut buf = vec![0u8; CHUNK];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => {
                let at = counts.started.elapsed().as_nanos() as u64;
                counts.done_ns.store(at, Ordering::Relaxed);
                return;
            }
            Ok(n) => {
                counts.received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if again(&e) => {
                if quit.load(Ordering::Relaxed) {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

/// One flow's samples.
struct Samples {
    trace: Series,
    srtt: Histogram,
    recoveries: u64,
    last_state: u8,
    last_received: u64,
    at_warmup: Option<Counters>,
    latest: Counters,
}

/// `tcpi_ca_state` values (include/uapi/linux/tcp.h `tcp_ca_state`).
fn state_name(state: u8) -> &'static str {
    match state {
        0 => "open",
        1 => "disorder",
        2 => "cwr",
        3 => "recovery",
        4 => "loss",
        _ => "unknown",
    }
}

/// Samples every flow each interval until the run ends.
fn sample(flows: &[Running], started: Instant, config: &KernelRun) -> Vec<Samples> {
    let mut samples: Vec<Samples> = flows
        .iter()
        .map(|f| Samples {
            trace: Series::new(&f.spec.name),
            srtt: Histogram::new(),
            recoveries: 0,
            last_state: 0,
            last_received: 0,
            at_warmup: None,
            latest: Counters::default(),
        })
        .collect();
    let mut k = 0u32;
    loop {
        let at = config.interval * k;
        if at > config.duration {
            break;
        }
        if let Some(wait) = (started + at).checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        for (f, s) in flows.iter().zip(samples.iter_mut()) {
            record(f, s, at, config);
        }
        k += 1;
    }
    for s in &mut samples {
        s.trace.end();
    }
    samples
}

/// Records flow `f`'s state at `at` into `s`.
fn record(f: &Running, s: &mut Samples, at: Duration, config: &KernelRun) {
    let (interval, measured) = (config.interval, at >= config.warmup);
    let received = f.received.load(Ordering::Relaxed);
    let t = &mut s.trace;
    t.begin(at.as_secs_f64());
    let rx = (received - s.last_received) as f64 * 8.0 / interval.as_secs_f64();
    s.last_received = received;
    let info = f.info();
    s.latest = info.as_ref().map_or(
        Counters {
            at,
            received,
            ..Counters::default()
        },
        |i| Counters {
            at,
            received,
            bytes_sent: i.tcpi_bytes_sent,
            bytes_retrans: i.tcpi_bytes_retrans,
            segs_out: u64::from(i.tcpi_data_segs_out),
            retrans_segs: u64::from(i.tcpi_total_retrans),
        },
    );
    if measured && s.at_warmup.is_none() {
        s.at_warmup = Some(s.latest);
    }
    let Some(i) = info else {
        t.mode.push("idle");
        t.set("delivered_bytes", received as f64);
        t.set("rx_rate_bps", rx);
        return;
    };
    let mss = f64::from(i.tcpi_snd_mss);
    t.mode.push(state_name(i.tcpi_ca_state));
    t.set("cwnd_bytes", f64::from(i.tcpi_snd_cwnd) * mss);
    t.set("pacing_rate_bps", i.tcpi_pacing_rate as f64 * 8.0);
    // tcp_packets_in_flight: unacked - (sacked + lost) + retrans.
    let in_flight = i64::from(i.tcpi_unacked) - i64::from(i.tcpi_sacked) - i64::from(i.tcpi_lost)
        + i64::from(i.tcpi_retrans);
    t.set("in_flight_bytes", in_flight.max(0) as f64 * mss);
    t.set("srtt_ms", f64::from(i.tcpi_rtt) / 1e3);
    t.set("delivered_bytes", received as f64);
    t.set("sent_packets", f64::from(i.tcpi_data_segs_out));
    t.set("lost_packets", f64::from(i.tcpi_total_retrans));
    let ssthresh = i.tcpi_snd_ssthresh;
    // TCP_INFINITE_SSTHRESH (0x7fffffff) before the first reduction, as the simulator's -1.
    let ssthresh = if ssthresh >= 0x7fff_ffff {
        -1.0
    } else {
        f64::from(ssthresh) * mss
    };
    t.set("ssthresh_bytes", ssthresh);
    t.set("rx_rate_bps", rx);
    // A finished flow's TCP_INFO stands still: its RTT and state are no longer samples.
    let measured = measured && f.done_ns.load(Ordering::Relaxed) == u64::MAX;
    if measured && i.tcpi_rtt > 0 {
        s.srtt.record(u64::from(i.tcpi_rtt) * 1000);
    }
    if measured && i.tcpi_ca_state >= 3 && s.last_state < 3 {
        s.recoveries += 1;
    }
    s.last_state = i.tcpi_ca_state;
}
