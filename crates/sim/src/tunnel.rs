//! The multipath tunnel of the MP-DCCP framework (Romo Moreno et al., ANRW 2021, §2 and
//! Figure 3; telekom/mp-dccp): the packets of the flows it carries enter a queue at one end, a
//! per-packet scheduler gives each to one DCCP subflow per path (or a copy to several), and the
//! far end puts them back in order by the overall sequence number each tunnel packet carries
//! before they continue to their receiver. Each direction is a tunnel of its own over the same
//! paths: the carried flows' ACKs come back through the reverse one. `docs/mpdccp.md` describes
//! the model and its choices.
//!
//! A carried packet stays in the simulation's packet pool while the tunnel holds it; the
//! tunnel's record of it ([`Carried`]) counts the copies still on their way, so it is forwarded
//! once and freed once whatever happens to each copy.

use crate::config::{DccpConfig, TunnelConfig};
use crate::dccp::ackvec::AckVector;
use crate::dccp::receiver::DccpReceiver;
use crate::dccp::sender::DccpSender;
use crate::dccp::DccpEndpoints;
use crate::events::{EventQueue, LazyTimer, Target};
use crate::hist::Histogram;
use crate::packet::{Body, Packet, Pool};
use crate::stats::FlowCounters;
use kleinrock_cc::multipath::reorder::{Fate, LatencySpread, Reorder};
use kleinrock_cc::multipath::scheduler::{Scheduler, SubflowView};
use kleinrock_cc::Controller;
use std::collections::VecDeque;

/// The direction from the tunnel's entry to its far end.
pub const FORWARD: usize = 0;
/// The direction back.
pub const BACKWARD: usize = 1;

/// A packet inside the tunnel.
#[derive(Clone, Copy, Debug, Default)]
struct Carried {
    /// The carried packet, in the simulation's packet pool.
    inner: u32,
    /// Its bytes on the wire.
    size: u32,
    /// The overall sequence number.
    overall: u64,
    /// When it entered the tunnel, ns.
    entered_ns: u64,
    /// Copies given to subflows and not yet resolved (arrived, lost or refused).
    copies: u32,
    /// Whether the far end has forwarded it.
    forwarded: bool,
}

/// What became of the packets that entered one direction of a tunnel, over the whole run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TunnelCounters {
    /// Packets that entered.
    pub entered: u64,
    /// Dropped because the tunnel's queue was full.
    pub queue_drops: u64,
    /// Every copy refused by a subflow's full send queue.
    pub send_queue_drops: u64,
    /// Every copy lost on its path.
    pub lost_on_paths: u64,
    /// Every copy dropped by the reordering stage (late, or a duplicate of one lost).
    pub reorder_drops: u64,
    /// Forwarded by the far end (once each).
    pub forwarded: u64,
    /// Of those, forwarded after a later packet (a gap was skipped before it arrived).
    pub forwarded_late: u64,
    /// Copies the reordering stage dropped as duplicates of a packet it had.
    pub duplicates: u64,
    /// Sequence numbers the reordering stage gave up waiting for.
    pub gaps_skipped: u64,
    /// Most packets the reordering buffer held.
    pub most_buffered: u64,
    /// Packets none of whose copies was forwarded: each lost on its path, refused by a send
    /// queue or dropped in reordering (with one copy per packet, the sum of those counts).
    pub lost: u64,
    /// Packets in the tunnel, neither forwarded nor dropped yet (queued, on a path or in the
    /// reordering buffer).
    pub held: u64,
}

/// One direction of a tunnel.
pub struct Direction {
    scheduler: Scheduler,
    priorities: Vec<u8>,
    queue: VecDeque<u32>,
    capacity: usize,
    header_size: u32,
    next_overall: u64,
    carried: Pool<Carried>,
    reorder: Reorder<u32>,
    views: Vec<SubflowView>,
    picks: Vec<usize>,
    released: Vec<(u32, Fate)>,
    window_ns: Option<u64>,
    /// Its subflows, one per path in the tunnel's order: each a DCCP half-connection, its
    /// sender at this direction's entry and its receiver at the far end.
    pub subflows: Vec<DccpEndpoints>,
    /// The subflows' counters when the measurement window opened.
    pub at_warmup: Vec<FlowCounters>,
    /// The reordering stage's idle-expiry timer.
    pub timer: LazyTimer,
    counters: TunnelCounters,
    /// Latency from the tunnel's entry to forwarding at the far end, of the packets that
    /// entered in the measurement window, ns.
    pub latency: Histogram,
}

/// What the simulation must do with carried packets after a tunnel event.
#[derive(Debug, Default)]
pub struct Released {
    /// Carried packets forwarded at the far end: they continue to their receiver.
    pub forward: Vec<u32>,
    /// Carried packets that will never arrive: free them.
    pub free: Vec<u32>,
}

impl Released {
    /// Empties both lists.
    pub fn clear(&mut self) {
        self.forward.clear();
        self.free.clear();
    }
}

/// What both directions of a tunnel share.
struct Shape {
    scheduler: kleinrock_cc::multipath::scheduler::SchedulerKind,
    reorder: kleinrock_cc::multipath::reorder::ReorderConfig,
    queue: usize,
    priorities: Vec<u8>,
    header_size: u32,
}

impl Direction {
    /// A direction of `shape` whose subflow over path `i` is flow `first_flow + i`, under
    /// controller `subflows[i].0` with settings `subflows[i].1`.
    fn new(
        shape: &Shape,
        first_flow: u32,
        subflows: Vec<(Box<dyn Controller>, DccpConfig)>,
    ) -> Self {
        let subflows: Vec<DccpEndpoints> = subflows
            .into_iter()
            .enumerate()
            .map(|(i, (cc, transport))| {
                let flow = first_flow + i as u32;
                DccpEndpoints {
                    sender: DccpSender::for_tunnel(flow, cc, transport),
                    receiver: DccpReceiver::new(flow, transport),
                }
            })
            .collect();
        Direction {
            scheduler: Scheduler::new(shape.scheduler),
            priorities: shape.priorities.clone(),
            queue: VecDeque::new(),
            capacity: shape.queue,
            header_size: shape.header_size,
            next_overall: 0,
            carried: Pool::default(),
            reorder: Reorder::new(shape.reorder),
            views: Vec::new(),
            picks: Vec::new(),
            released: Vec::new(),
            window_ns: None,
            at_warmup: vec![FlowCounters::default(); subflows.len()],
            subflows,
            timer: LazyTimer::default(),
            counters: TunnelCounters::default(),
            latency: Histogram::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> TunnelCounters {
        self.counters
    }

    /// Packets waiting in the tunnel's queue.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Packets the reordering stage holds.
    pub fn buffered(&self) -> usize {
        self.reorder.buffered()
    }

    /// Carried packet `inner` of `size` bytes enters at `now`; `false` when the queue is full
    /// and it is dropped (the caller frees it).
    pub fn enter(&mut self, now: u64, inner: u32, size: u32) -> bool {
        self.counters.entered += 1;
        if self.queue.len() >= self.capacity {
            self.counters.queue_drops += 1;
            return false;
        }
        let overall = self.next_overall;
        self.next_overall += 1;
        let c = self.carried.insert(Carried {
            inner,
            size,
            overall,
            entered_ns: now,
            copies: 0,
            forwarded: false,
        });
        self.queue.push_back(c);
        self.counters.held += 1;
        true
    }

    /// Gives queued packets to the subflows the scheduler picks, for as long as it picks one.
    pub fn drain(
        &mut self,
        now: u64,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
        released: &mut Released,
    ) {
        while let Some(&c) = self.queue.front() {
            self.observe();
            self.scheduler.pick(&self.views, &mut self.picks);
            if self.picks.is_empty() {
                return;
            }
            self.queue.pop_front();
            let rec = *self.carried.get(c);
            let pending = (rec.entered_ns, rec.size + self.header_size, c);
            // Every copy is counted before any is handed over, so that a refused one cannot
            // resolve the packet while the others are still to go.
            self.carried.get_mut(c).copies = self.picks.len() as u32;
            for k in 0..self.picks.len() {
                let sender = &mut self.subflows[self.picks[k]].sender;
                if !sender.push(now, pending, out, events) {
                    self.counters.send_queue_drops += 1;
                    self.drop_copy(c, released);
                }
            }
        }
    }

    /// What the scheduler sees of each subflow now (MP-DCCP §6.1's inputs).
    fn observe(&mut self) {
        self.views.clear();
        for (s, &priority) in self.subflows.iter().zip(&self.priorities) {
            let sender = &s.sender;
            self.views.push(SubflowView {
                established: true,
                pipe: sender.pipe(),
                cwnd: sender.cwnd_packets(),
                queued: sender.queued() as u64,
                srtt_ns: sender.rtt().smoothed().map(|d| d.as_nanos() as u64),
                priority,
            });
        }
    }

    /// A copy of carried packet `c` was lost on its path.
    pub fn lost_on_path(&mut self, c: u32, released: &mut Released) {
        self.counters.lost_on_paths += 1;
        self.drop_copy(c, released);
    }

    /// One copy of `c` is resolved without being forwarded; the last frees the carried
    /// packet unless another copy was forwarded.
    fn drop_copy(&mut self, c: u32, released: &mut Released) {
        let rec = self.carried.get_mut(c);
        assert!(rec.copies > 0, "a copy of a tunnel packet already resolved");
        rec.copies -= 1;
        if rec.copies > 0 {
            return;
        }
        if !rec.forwarded {
            released.free.push(rec.inner);
            self.counters.held -= 1;
            self.counters.lost += 1;
        }
        self.carried.release(c);
    }

    /// A tunnel packet arrives at the far end of path `path` at `now`: its subflow's receiver
    /// acknowledges it, and the reordering stage releases what it can.
    pub fn arrive(
        &mut self,
        now: u64,
        path: usize,
        packet: &Packet,
        vectors: &mut Pool<AckVector>,
        out: &mut Vec<Packet>,
        released: &mut Released,
    ) {
        self.subflows[path]
            .receiver
            .on_data(now, packet, vectors, out);
        let Body::DccpData { carried: c, .. } = packet.body else {
            return;
        };
        let spread = self.latency_spread();
        let overall = self.carried.get(c).overall;
        let mut out_items = std::mem::take(&mut self.released);
        self.reorder
            .on_arrival(now, overall, c, spread, &mut out_items);
        self.settle(now, &mut out_items, released);
        self.released = out_items;
    }

    /// The reordering stage's idle expiry at `now`.
    pub fn on_expiry(&mut self, now: u64, released: &mut Released) {
        if !self.timer.fire(now) || self.reorder.deadline().is_none_or(|d| d > now) {
            return;
        }
        let mut out_items = std::mem::take(&mut self.released);
        self.reorder.on_expiry(now, &mut out_items);
        self.settle(now, &mut out_items, released);
        self.released = out_items;
    }

    /// Arms the idle-expiry timer of the reordering stage, with `target` its event.
    pub fn arm(&mut self, now: u64, events: &mut EventQueue, target: Target) {
        if let Some(d) = self.reorder.deadline() {
            self.timer.arm(events, d.max(now), target);
        }
    }

    /// Acts on what the reordering stage released.
    fn settle(&mut self, now: u64, items: &mut Vec<(u32, Fate)>, released: &mut Released) {
        for (c, fate) in items.drain(..) {
            match fate {
                Fate::InOrder | Fate::Late => self.forward(now, c, fate, released),
                Fate::DroppedLate => {
                    self.counters.reorder_drops += 1;
                    self.drop_copy(c, released);
                }
                Fate::DroppedDuplicate => {
                    self.counters.duplicates += 1;
                    self.drop_copy(c, released);
                }
            }
        }
        let stats = self.reorder.stats();
        self.counters.gaps_skipped = stats.gaps_skipped;
        self.counters.most_buffered = stats.max_buffered as u64;
    }

    fn forward(&mut self, now: u64, c: u32, fate: Fate, released: &mut Released) {
        let rec = self.carried.get_mut(c);
        if rec.forwarded {
            self.counters.duplicates += 1;
            return self.drop_copy(c, released);
        }
        rec.forwarded = true;
        released.forward.push(rec.inner);
        self.counters.forwarded += 1;
        self.counters.held -= 1;
        if fate == Fate::Late {
            self.counters.forwarded_late += 1;
        }
        if self.window_ns.is_some_and(|w| rec.entered_ns >= w) {
            self.latency.record(now - rec.entered_ns);
        }
        self.drop_copy(c, released);
    }

    /// One-way latency of the paths, half of each subflow's latest RTT sample (the MP_DELAY /
    /// MP_RTT option's value, telekom/mp-dccp `mpdccp_reordering.c`), for the adaptive
    /// reordering timeout.
    fn latency_spread(&self) -> LatencySpread {
        let halves = self
            .subflows
            .iter()
            .filter_map(|s| s.sender.rtt().latest())
            .map(|d| d.as_nanos() as u64 / 2);
        let (min_ns, max_ns) = halves.fold((u64::MAX, 0), |(lo, hi), h| (lo.min(h), hi.max(h)));
        if max_ns == 0 {
            return LatencySpread::default();
        }
        LatencySpread { min_ns, max_ns }
    }

    /// Statistics from `now` on are measured.
    fn start_measuring(&mut self, now: u64) {
        self.window_ns = Some(now);
        for (s, at) in self.subflows.iter_mut().zip(&mut self.at_warmup) {
            *at = s.counters();
            s.start_measuring(now);
        }
    }
}

/// A multipath tunnel: both directions, over the same paths.
pub struct Tunnel {
    /// Name, for reports.
    pub name: String,
    /// The paths' names.
    pub path_names: Vec<String>,
    /// Its two directions, [`FORWARD`] and [`BACKWARD`].
    pub dirs: [Direction; 2],
}

impl Tunnel {
    /// The tunnel of `config`; the subflows of direction `d` over path `i` are flows
    /// `first_flow + d * paths + i`.
    pub fn new(config: TunnelConfig, first_flow: u32) -> Self {
        let shape = Shape {
            scheduler: config.scheduler,
            reorder: config.reorder,
            queue: config.queue as usize,
            priorities: config.paths.iter().map(|p| p.priority).collect(),
            header_size: config.paths.first().map_or(0, |p| p.transport.header_size),
        };
        let n = config.paths.len() as u32;
        let mut path_names = Vec::new();
        let (mut there, mut back) = (Vec::new(), Vec::new());
        for p in config.paths {
            path_names.push(p.name);
            let [a, b] = p.controllers;
            there.push((a, p.transport));
            back.push((b, p.transport));
        }
        Tunnel {
            name: config.name,
            path_names,
            dirs: [
                Direction::new(&shape, first_flow, there),
                Direction::new(&shape, first_flow + n, back),
            ],
        }
    }

    /// Statistics from `now` on are measured.
    pub fn start_measuring(&mut self, now: u64) {
        for d in &mut self.dirs {
            d.start_measuring(now);
        }
    }
}
