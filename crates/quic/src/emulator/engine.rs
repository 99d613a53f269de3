//! The link model on the real clock, apart from the sockets that feed it: the two directions'
//! [`Link`]s, their event queue, the packets they hold, the self-measurement, the relay
//! thread's loop and its control channel. A [`Door`] (the UDP relay, the TUN link) reads
//! packets into it and sends on what it delivers, so every door runs the same model and
//! validates the same way (see the parent module).

use super::{
    lateness_bound, DirectionStats, EmulatorStats, Histogram, LinkConfig, COALESCE_NS,
    MAX_HELD_BYTES, MAX_HELD_DATAGRAMS,
};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::Rate;
use kleinrock_sim::events::{EventQueue, Target};
use kleinrock_sim::link::{Admission, Link};
use kleinrock_sim::queue::Queued;
use kleinrock_sim::streams::{jitter_stream, loss_stream, seeded};
use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::net::UnixDatagram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Link ids (also their index in `Engine::links`).
pub(crate) const FORWARD: usize = 0;
pub(crate) const REVERSE: usize = 1;
/// Bytes read in one wake-up before they enter the links: reading stops there until the
/// next (the links' own bound, [`MAX_HELD_BYTES`], applies as they enter).
pub(crate) const MAX_ROUND_BYTES: usize = 4 << 20;

/// The sockets or devices that feed the model and take what it delivers.
pub(crate) trait Door {
    /// The descriptors to wait on; index 0 is the engine's control socket, which the door
    /// keeps there (see [`Engine::control_pollfd`]).
    fn pollfds(&mut self) -> &mut [libc::pollfd];
    /// Reads what its ready descriptors hold into `out`, timing each arrival with `intake`;
    /// true when every input is now empty. `held_by_class` is the packets each class has in
    /// the links now.
    fn drain(&mut self, intake: &mut Intake, held_by_class: &[u32], out: &mut Vec<Arrival>)
        -> bool;
    /// Sends on a packet that link `dir` delivered; the bytes it occupied on the wire.
    fn send(&mut self, dir: usize, class: u32, data: &[u8]) -> io::Result<u32>;
    /// Called once per wake-up, with the packets each class has in the links now.
    fn upkeep(&mut self, now_ns: u64, held_by_class: &[u32]);
    /// The door's part of the statistics (clients, socket drops, read errors).
    fn report(&self, stats: &mut EmulatorStats);
}

/// A packet read by a door, waiting to enter its link.
pub(crate) struct Arrival {
    /// When it arrived, model time.
    pub at: u64,
    /// Its link.
    pub dir: usize,
    /// Its class at a fair queue.
    pub class: u32,
    /// Its bytes.
    pub data: Box<[u8]>,
    /// Its size on the link.
    pub wire: u32,
}

/// The clock and the measurements a door uses while it reads.
pub(crate) struct Intake {
    start: Instant,
    /// Bytes read this wake-up.
    round_bytes: usize,
    /// How long packets waited in the door's sockets before the thread read them, ns.
    input_wait: Histogram,
}

impl Intake {
    /// Model time now, ns since the engine started.
    pub fn now_ns(&self) -> u64 {
        duration_nanos(self.start.elapsed())
    }

    /// Takes in `data`, just read, which waited `waited_ns` in its socket (if known) and
    /// arrived no earlier than `after` (the packet read before it from the same input: an
    /// input's packets keep their order, where clock readings would put those of one batch,
    /// stamped alike, a few nanoseconds apart either way). Counts its bytes against the round
    /// and returns its arrival's model time, now minus the wait ([`Engine::enter`] takes it
    /// no earlier than the model has run), and its bytes.
    pub fn take(&mut self, data: &[u8], waited_ns: Option<u64>, after: u64) -> (u64, Box<[u8]>) {
        self.round_bytes += data.len();
        if let Some(w) = waited_ns {
            self.input_wait.record(w);
        }
        let at = self.now_ns().saturating_sub(waited_ns.unwrap_or(0));
        (at.max(after), data.into())
    }

    /// Whether this wake-up has read as much as it may.
    pub fn round_full(&self) -> bool {
        self.round_bytes >= MAX_ROUND_BYTES
    }
}

/// A packet in a link: its bytes (allocated to its size, freed when it leaves, so that memory
/// follows what the links hold) and its class.
#[derive(Debug, Default)]
struct Slot {
    data: Box<[u8]>,
    class: u32,
}

/// Per-direction counters kept by the thread.
#[derive(Debug, Default)]
struct Direction {
    stats: DirectionStats,
    first_out_ns: Option<u64>,
    first_out_wire: u64,
    last_out_ns: u64,
}

/// What happens after a control message.
#[derive(PartialEq, Eq)]
enum Control {
    Continue,
    Quit,
}

/// The relay thread's model state.
pub(crate) struct Engine {
    intake: Intake,
    control: UnixDatagram,
    replies: mpsc::Sender<(u64, EmulatorStats)>,
    links: [Link; 2],
    events: EventQueue,
    slab: Vec<Slot>,
    free: Vec<u32>,
    /// The packets read in one round, entered in the order they arrived.
    arrivals: Vec<Arrival>,
    out: Vec<u32>,
    /// Scratch: the packets a link's loss took on delivery.
    lost: Vec<u32>,
    dirs: [Direction; 2],
    /// Packets and bytes in the links now, and the most at once.
    held: usize,
    held_bytes: u64,
    held_peak: usize,
    held_peak_bytes: u64,
    /// Packets in the links now, by class.
    held_by_class: Vec<u32>,
    events_done: u64,
    lateness: Histogram,
    bound: Duration,
    /// Whether the thread runs at real-time priority.
    pub realtime: bool,
    /// The latest model time processed; packets never enter before it.
    model_ns: u64,
}

/// The handle's ends of an engine's control channel (see [`spawn`]).
pub(crate) struct Wiring {
    control: UnixDatagram,
    replies: mpsc::Receiver<(u64, EmulatorStats)>,
}

impl Engine {
    /// The model of `forward` and `reverse` with the simulator's loss and jitter streams of
    /// `seed`, and the handle's ends of its control channel.
    pub fn new(
        forward: &LinkConfig,
        reverse: &LinkConfig,
        seed: u64,
    ) -> io::Result<(Self, Wiring)> {
        let (handle_end, control) = UnixDatagram::pair()?;
        control.set_nonblocking(true)?;
        let (replies, replies_rx) = mpsc::channel();
        let wiring = Wiring {
            control: handle_end,
            replies: replies_rx,
        };
        let link = |i: usize, l: &LinkConfig| {
            let (loss, jitter) = (loss_stream(i), jitter_stream(i));
            Link::new(i as u32, l, seeded(seed, loss), seeded(seed, jitter))
        };
        let links = [link(FORWARD, forward), link(REVERSE, reverse)];
        let mut events = EventQueue::new();
        for l in &links {
            l.schedule_rate_steps(&mut events);
        }
        let engine = Engine {
            intake: Intake {
                start: Instant::now(),
                round_bytes: 0,
                input_wait: Histogram::new(),
            },
            control,
            replies,
            links,
            events,
            slab: Vec::new(),
            free: Vec::new(),
            arrivals: Vec::new(),
            out: Vec::new(),
            lost: Vec::new(),
            dirs: Default::default(),
            held: 0,
            held_bytes: 0,
            held_peak: 0,
            held_peak_bytes: 0,
            held_by_class: Vec::new(),
            events_done: 0,
            lateness: Histogram::new(),
            bound: lateness_bound(forward, reverse),
            realtime: false,
            model_ns: 0,
        };
        Ok((engine, wiring))
    }

    /// The poll entry of the control socket, index 0 of every door's descriptors.
    pub fn control_pollfd(&self) -> libc::pollfd {
        pollfd(&self.control)
    }

    fn now_ns(&self) -> u64 {
        self.intake.now_ns()
    }

    /// The loop: wait for a packet or the next event, read what arrived, run what is due.
    pub fn run(&mut self, door: &mut impl Door) -> io::Result<()> {
        loop {
            // A wait shorter than COALESCE_NS is stretched to it, so that closely spaced
            // events share one wake-up (they run late by at most that much).
            let timeout = self
                .events
                .peek_time()
                .map(|t| t.saturating_sub(self.now_ns()))
                .map(|w| if w > 0 { w.max(COALESCE_NS) } else { 0 });
            wait(door.pollfds(), timeout)?;
            if ready(&door.pollfds()[0]) && self.on_control(door) == Control::Quit {
                return Ok(());
            }
            let mut arrivals = std::mem::take(&mut self.arrivals);
            let drained = door.drain(&mut self.intake, &self.held_by_class, &mut arrivals);
            // Inputs are read one after the other; their packets enter in the order they
            // arrived, so that no input's packets go first at a full queue.
            arrivals.sort_by_key(|a| a.at);
            for a in arrivals.drain(..) {
                self.enter(a, door);
            }
            self.arrivals = arrivals;
            self.intake.round_bytes = 0;
            door.upkeep(self.now_ns(), &self.held_by_class);
            // The model may run to now only when no packet is left unread: one still waiting
            // may have arrived before now, and must enter before later events run.
            if drained {
                let now = self.now_ns();
                self.process_until(now, door);
            }
        }
    }

    fn on_control(&mut self, door: &impl Door) -> Control {
        let mut msg = [0u8; 16];
        loop {
            match self.control.recv(&mut msg) {
                Ok(9) => {
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&msg[1..9]);
                    let id = u64::from_le_bytes(id);
                    let stats = self.snapshot(door);
                    let _ = self.replies.send((id, stats));
                    if msg[0] == b'Q' {
                        return Control::Quit;
                    }
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // Would block: nothing more to read. Any other error: the handle is gone.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Control::Continue,
                Err(_) => return Control::Quit,
            }
        }
    }

    /// A packet enters its link at its arrival time (or when the model has run to, if later),
    /// unless the links hold as much as the emulator keeps.
    fn enter(&mut self, a: Arrival, door: &mut impl Door) {
        let Arrival {
            at,
            dir,
            class,
            data,
            wire,
        } = a;
        let (now, n) = (at.max(self.model_ns), data.len());
        self.process_until(now, door);
        let d = &mut self.dirs[dir].stats;
        d.datagrams_in += 1;
        d.bytes_in += n as u64;
        if self.held >= MAX_HELD_DATAGRAMS || self.held_bytes + n as u64 > MAX_HELD_BYTES {
            d.dropped_memory += 1;
            return;
        }
        let packet = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slab.push(Slot::default());
                (self.slab.len() - 1) as u32
            }
        };
        let slot = &mut self.slab[packet as usize];
        slot.data = data;
        slot.class = class;
        let q = Queued {
            packet,
            size: wire,
            class,
        };
        let admission = self.links[dir].arrive(now, q, &mut self.events);
        let d = &mut self.dirs[dir].stats;
        match admission {
            Admission::Accepted => {
                self.hold(class, n);
                return;
            }
            Admission::LostRandom => d.lost_random += 1,
            Admission::Policed => d.policed += 1,
            Admission::Dropped => d.dropped_buffer += 1,
        }
        self.slab[packet as usize].data = Box::default();
        self.free.push(packet);
    }

    /// Counts a packet of `class` and `n` bytes that the links now hold.
    fn hold(&mut self, class: u32, n: usize) {
        let c = class as usize;
        if self.held_by_class.len() <= c {
            self.held_by_class.resize(c + 1, 0);
        }
        self.held_by_class[c] += 1;
        self.held += 1;
        self.held_bytes += n as u64;
        self.held_peak = self.held_peak.max(self.held);
        self.held_peak_bytes = self.held_peak_bytes.max(self.held_bytes);
    }

    /// Runs every event due at or before `t`, each at its own scheduled time.
    fn process_until(&mut self, t: u64, door: &mut impl Door) {
        self.model_ns = self.model_ns.max(t);
        while let Some(due) = self.events.peek_time() {
            if due > t {
                break;
            }
            let Some((due, target)) = self.events.pop() else {
                break;
            };
            let late = self.now_ns().saturating_sub(due);
            self.lateness.record(late);
            self.events_done += 1;
            match target {
                Target::LinkTransmit(l) => {
                    self.links[l as usize].on_transmitted(due, &mut self.events)
                }
                Target::LinkRate(l) => self.links[l as usize].on_rate_step(due, &mut self.events),
                Target::LinkArrival(l) => self.on_arrival(l as usize, due, door),
                _ => {}
            }
        }
    }

    /// Delivers what link `l` hands over at `due`, and frees what its loss took.
    fn on_arrival(&mut self, l: usize, due: u64, door: &mut impl Door) {
        let mut out = std::mem::take(&mut self.out);
        let mut lost = std::mem::take(&mut self.lost);
        self.links[l].take_arrivals(due, &mut out, &mut lost, &mut self.events);
        for &p in &lost {
            self.release(p);
            self.dirs[l].stats.lost_random += 1;
        }
        for &p in &out {
            self.deliver(l, p, due, door);
        }
        out.clear();
        lost.clear();
        self.out = out;
        self.lost = lost;
    }

    /// Takes the packet out of slot `p`, which leaves the links, and frees the slot: the
    /// packet and its class.
    fn release(&mut self, p: u32) -> (Box<[u8]>, u32) {
        let slot = &mut self.slab[p as usize];
        let data = std::mem::take(&mut slot.data);
        let class = slot.class;
        self.held -= 1;
        self.held_bytes -= data.len() as u64;
        self.held_by_class[class as usize] -= 1;
        self.free.push(p);
        (data, class)
    }

    /// Sends the packet in slot `p`, which link `dir` delivered at `due`, and frees the slot.
    fn deliver(&mut self, dir: usize, p: u32, due: u64, door: &mut impl Door) {
        let now = self.now_ns();
        // Freed when this function returns.
        let (data, class) = self.release(p);
        let sent = door.send(dir, class, &data);
        let d = &mut self.dirs[dir];
        d.stats.delivery_lateness.record(now.saturating_sub(due));
        match sent {
            Ok(wire) => {
                let wire = u64::from(wire);
                d.stats.datagrams_out += 1;
                d.stats.bytes_out += data.len() as u64;
                d.stats.wire_bytes_out += wire;
                if d.first_out_ns.is_none() {
                    d.first_out_ns = Some(due);
                    d.first_out_wire = wire;
                }
                d.last_out_ns = due;
            }
            Err(_) => d.stats.send_errors += 1,
        }
    }

    /// Everything measured so far, the door's part included, with the verdict.
    pub fn snapshot(&mut self, door: &impl Door) -> EmulatorStats {
        let now = self.now_ns();
        let mut dir_stats = |i: usize| {
            let d = &self.dirs[i];
            let mut s = d.stats.clone();
            if let Some(first) = d.first_out_ns {
                let span = Duration::from_nanos(d.last_out_ns - first);
                s.achieved_rate = Rate::from_bytes_over(s.wire_bytes_out - d.first_out_wire, span);
            }
            s.link = self.links[i].finish(now, 0);
            s
        };
        let forward = dir_stats(FORWARD);
        let reverse = dir_stats(REVERSE);
        let mut stats = EmulatorStats {
            elapsed: Duration::from_nanos(now),
            forward,
            reverse,
            held_peak_datagrams: self.held_peak,
            held_peak_bytes: self.held_peak_bytes,
            events: self.events_done,
            lateness: self.lateness.clone(),
            input_wait: self.intake.input_wait.clone(),
            lateness_bound: self.bound,
            realtime: self.realtime,
            ..EmulatorStats::default()
        };
        door.report(&mut stats);
        stats.valid = stats.failed_checks().is_empty();
        stats
    }
}

/// Whether poll found `fd` readable (or in error, which a read reports).
pub(crate) fn ready(fd: &libc::pollfd) -> bool {
    fd.revents & (libc::POLLIN | libc::POLLERR) != 0
}

/// The poll entry that waits for `fd` to be readable.
pub(crate) fn pollfd(fd: &impl AsFd) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

/// Waits until a descriptor is readable or `timeout_ns` has passed (forever for `None`).
fn wait(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    let r = {
        let ts = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000).min(i32::MAX as u64) as libc::time_t,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let tsp = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: fds is a valid array of pollfd of the given length; tsp is null or points
        // to a timespec that outlives the call; no signal mask.
        unsafe {
            libc::ppoll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                tsp,
                std::ptr::null(),
            )
        }
    };
    #[cfg(not(target_os = "linux"))]
    let r = {
        let ms = timeout_ns.map_or(-1, |ns| ns.div_ceil(1_000_000).min(i32::MAX as u64) as i32);
        // SAFETY: fds is a valid array of pollfd of the given length.
        unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) }
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    Ok(())
}

/// Starts the relay thread that runs `engine` with `door`, answering on `wiring`.
pub(crate) fn spawn<D: Door + Send + 'static>(
    mut engine: Engine,
    mut door: D,
    wiring: Wiring,
    name: &str,
) -> io::Result<RelayHandle> {
    let Wiring { control, replies } = wiring;
    let last = Arc::new(Mutex::new(None));
    let last_thread = Arc::clone(&last);
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            super::set_fine_timer_slack();
            engine.realtime = super::try_realtime();
            let result = engine.run(&mut door);
            let mut stats = engine.snapshot(&door);
            if let Err(e) = result {
                stats.failure = Some(format!("relay thread stopped: {e}"));
                stats.valid = false;
            }
            *crate::lock(&last_thread) = Some(stats);
            // The door and all its sockets are dropped here, before the thread ends.
        })?;
    Ok(RelayHandle {
        control,
        replies: Mutex::new(replies),
        next_id: AtomicU64::new(1),
        last,
        thread: Some(thread),
    })
}

/// How long a caller waits for the relay thread to answer.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(5);

/// A running relay thread: asks it for statistics, stops it.
#[derive(Debug)]
pub(crate) struct RelayHandle {
    control: UnixDatagram,
    replies: Mutex<mpsc::Receiver<(u64, EmulatorStats)>>,
    next_id: AtomicU64,
    last: Arc<Mutex<Option<EmulatorStats>>>,
    thread: Option<JoinHandle<()>>,
}

impl RelayHandle {
    fn request(&self, op: u8) -> Option<EmulatorStats> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut msg = [0u8; 9];
        msg[0] = op;
        msg[1..].copy_from_slice(&id.to_le_bytes());
        self.control.send(&msg).ok()?;
        let replies = crate::lock(&self.replies);
        let deadline = Instant::now() + CONTROL_TIMEOUT;
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            match replies.recv_timeout(left) {
                Ok((got, stats)) if got == id => return Some(stats),
                Ok(_) => continue, // the answer to an earlier request that timed out
                Err(_) => return None,
            }
        }
    }

    fn last_known(&self, why: &str) -> EmulatorStats {
        let last = crate::lock(&self.last).clone();
        last.unwrap_or_else(|| EmulatorStats {
            failure: Some(why.to_string()),
            ..EmulatorStats::default()
        })
    }

    /// A snapshot of the counters and measurements so far.
    pub fn stats(&self) -> EmulatorStats {
        self.request(b'S')
            .unwrap_or_else(|| self.last_known("the relay thread did not answer"))
    }

    /// Stops the relay thread, releases its door, and returns the final statistics.
    pub fn shutdown(mut self) -> EmulatorStats {
        let stats = self.request(b'Q');
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        stats.unwrap_or_else(|| self.last_known("the relay thread did not answer"))
    }
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = self.control.send(&[b'Q', 0, 0, 0, 0, 0, 0, 0, 0]);
            let _ = t.join();
        }
    }
}
