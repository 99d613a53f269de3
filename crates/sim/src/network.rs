//! The simulator: links, flows and the event loop. A packet moves to its next hop by a direct
//! call inside the current event; only link transmissions, link arrivals, endpoint timers and
//! scheduled changes (rate steps, route changes, parameter changes, short-flow arrivals) are
//! events. Integer nanoseconds throughout; one seeded generator per random element.
//!
//! Flows `0..n` are the configured ones, in order; each transfer of a short-flow arrival
//! process is appended as a flow of its own, with an index never reused, so a late packet of a
//! finished transfer cannot reach a newer one.

use crate::app::Application;
use crate::arrivals::{Arrivals, TransferReport};
use crate::config::{
    AppConfig, FlowConfig, FlowKind, ParamChange, RouteChange, SimConfig, TransportConfig,
    TunnelConfig,
};
use crate::connection::{Connection, Measured};
use crate::datagram::{DatagramSink, DatagramSource};
use crate::dccp::ackvec::AckVector;
use crate::dccp::DccpEndpoints;
use crate::events::{EventQueue, Target};
use crate::link::Link;
use crate::packet::{AckFrame, Body, Packet, Pool, NOT_CARRIED};
use crate::queue::Queued;
use crate::stats::{FlowCounters, FlowStats, IntervalTally, SimResult, TunnelStats};
use crate::streams::{arrivals_stream, host_seed, jitter_stream, loss_stream, seeded};
use crate::trace::{Series, Trace};
use crate::tunnel::{Released, Tunnel, BACKWARD, FORWARD};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::Controller;

/// Most flows a run holds: configured flows, extra subflows and short-flow transfers, whose
/// entries stay (about 650 bytes each) for the packets still on their way. Beyond it, arrival
/// processes start no more transfers and controllers get no more subflows.
pub const MAX_RUN_FLOWS: usize = 1_000_000;

enum Endpoints {
    Reliable(Connection),
    /// An extra subflow of the connection of flow `connection`: its packets and timers go
    /// there.
    Subflow {
        connection: u32,
    },
    Datagram {
        source: DatagramSource,
        sink: DatagramSink,
    },
    /// Both ends of a DCCP flow.
    Dccp(Box<DccpEndpoints>),
    /// A subflow of a tunnel: its ends are in the tunnel.
    TunnelSubflow {
        tunnel: u32,
        dir: u8,
        path: u16,
    },
    /// A short-flow arrival process; its transfers are flows of their own.
    Arrivals(Box<Arrivals>),
    /// A finished transfer of an arrival process: only its paths remain.
    Retired,
}

impl Endpoints {
    /// Samples from `now` on are measured (the window opened).
    fn start_measuring(&mut self, now: u64) {
        match self {
            Endpoints::Reliable(c) => c.start_measuring(now),
            Endpoints::Dccp(d) => d.start_measuring(now),
            _ => {}
        }
    }
}

/// The endpoints of a reliable connection (flow `id`) running `app` under `controller`,
/// from a host timed by `host_seed`.
fn reliable(
    id: u32,
    controller: Box<dyn Controller>,
    transport: TransportConfig,
    app: AppConfig,
    host_seed: u64,
) -> Endpoints {
    Endpoints::Reliable(Connection::new(id, controller, transport, app, host_seed))
}

struct Flow {
    name: String,
    forward: Vec<u32>,
    reverse: Vec<u32>,
    start_ns: u64,
    stop_ns: Option<u64>,
    size: Option<u64>,
    endpoints: Endpoints,
    at_warmup: FlowCounters,
    done: bool,
    /// The arrival process this flow is a transfer of.
    group: Option<u32>,
    /// The tunnel that carries the flow's packets (its paths are then empty).
    tunnel: Option<u32>,
}

impl Flow {
    /// A configured flow, its generators seeded by `seed`; its start (or first arrival) and
    /// stop are scheduled on `events`.
    fn new(id: u32, f: FlowConfig, seed: u64, events: &mut EventQueue) -> Flow {
        let endpoints = match f.kind {
            FlowKind::Reliable {
                controller,
                transport,
            } => reliable(
                id,
                controller,
                transport,
                f.app,
                host_seed(seed, id as usize, 0),
            ),
            FlowKind::Datagram {
                packet_size,
                header_size,
            } => Endpoints::Datagram {
                source: DatagramSource::new(id, packet_size, header_size, Application::new(f.app)),
                sink: DatagramSink::new(header_size),
            },
            FlowKind::Dccp {
                controller,
                transport,
            } => Endpoints::Dccp(Box::new(DccpEndpoints::new(
                id, controller, transport, f.app,
            ))),
            FlowKind::Arrivals {
                controllers,
                transport,
                arrivals,
            } => Endpoints::Arrivals(Box::new(Arrivals::new(
                controllers,
                transport,
                f.app,
                arrivals,
                seeded(seed, arrivals_stream(id as usize)),
            ))),
        };
        let start_ns = duration_nanos(f.start);
        let first = match endpoints {
            Endpoints::Arrivals(_) => Target::Arrival(id),
            _ => Target::FlowStart(id),
        };
        events.push(start_ns, first);
        let stop_ns = f.stop.map(duration_nanos);
        if let Some(s) = stop_ns {
            events.push(s, Target::FlowStop(id));
        }
        Flow {
            name: f.name,
            forward: f.forward.iter().map(|&l| l as u32).collect(),
            reverse: f.reverse.iter().map(|&l| l as u32).collect(),
            start_ns,
            stop_ns,
            size: f.app.total_bytes(),
            endpoints,
            at_warmup: FlowCounters::default(),
            done: false,
            group: None,
            tunnel: None,
        }
    }

    /// Subflow `path` of direction `dir` of tunnel `tunnel`, over `forward` and back over
    /// `reverse`. Never counted as a flow of its own: its tunnel is reported.
    fn tunnel_subflow(
        tunnel: u32,
        dir: u8,
        path: u16,
        forward: &[usize],
        reverse: &[usize],
    ) -> Flow {
        let links = |l: &[usize]| l.iter().map(|&l| l as u32).collect();
        Flow {
            name: String::new(),
            forward: links(forward),
            reverse: links(reverse),
            start_ns: 0,
            stop_ns: None,
            size: None,
            endpoints: Endpoints::TunnelSubflow { tunnel, dir, path },
            at_warmup: FlowCounters::default(),
            done: true,
            group: None,
            tunnel: None,
        }
    }

    /// A new flow on this one's paths, starting at `now` with `endpoints`: a transfer of an
    /// arrival process or an extra subflow.
    fn sibling(&self, now: u64, endpoints: Endpoints) -> Flow {
        Flow {
            name: String::new(),
            forward: self.forward.clone(),
            reverse: self.reverse.clone(),
            start_ns: now,
            stop_ns: None,
            size: None,
            endpoints,
            at_warmup: FlowCounters::default(),
            done: false,
            group: None,
            tunnel: self.tunnel,
        }
    }

    /// Whether the flow ends by itself (sized, stopped, or a limited arrival process).
    fn bounded(&self) -> bool {
        match &self.endpoints {
            Endpoints::Arrivals(a) => a.bounded() || self.stop_ns.is_some(),
            _ => self.size.is_some() || self.stop_ns.is_some(),
        }
    }

    /// Whether it has finished: every byte acknowledged (reliable), every datagram sent, or
    /// every transfer of an arrival process done.
    fn is_done(&self) -> bool {
        match &self.endpoints {
            Endpoints::Reliable(c) => c.finished_ns().is_some(),
            Endpoints::Datagram { source, .. } => source.finished(),
            Endpoints::Dccp(d) => d.sender.finished(),
            Endpoints::Arrivals(a) => a.done(),
            Endpoints::Subflow { .. } | Endpoints::TunnelSubflow { .. } | Endpoints::Retired => {
                false
            }
        }
    }

    /// What a transfer measured over the window, while its endpoints exist.
    fn report(&self) -> Option<TransferReport> {
        let Endpoints::Reliable(c) = &self.endpoints else {
            return None;
        };
        Some(TransferReport {
            arrival_ns: self.start_ns,
            counters: self.window_counters(),
            measured: c.measured(),
            completion_ns: c.reassembly().completion_ns,
        })
    }

    fn counters(&self) -> FlowCounters {
        match &self.endpoints {
            Endpoints::Reliable(c) => c.counters(),
            Endpoints::Datagram { source, sink } => FlowCounters {
                packets_sent: source.packets_sent,
                bytes_sent: source.bytes_sent(),
                packets_received: sink.received_packets,
                bytes_delivered: sink.received_bytes,
                ..FlowCounters::default()
            },
            Endpoints::Dccp(d) => d.counters(),
            Endpoints::Arrivals(_)
            | Endpoints::Subflow { .. }
            | Endpoints::TunnelSubflow { .. }
            | Endpoints::Retired => FlowCounters::default(),
        }
    }

    /// The counters over the measurement window. Packets lost and bytes delivered count only
    /// packets sent in the window, as the packets sent do: so the loss rate is a fraction of
    /// the packets it counts, and every byte counted crossed the whole path inside the window.
    fn window_counters(&self) -> FlowCounters {
        let mut c = self.counters().since(&self.at_warmup);
        match &self.endpoints {
            Endpoints::Dccp(d) => return d.window_counters(&self.at_warmup),
            Endpoints::Reliable(conn) => {
                c.packets_lost = conn.window_lost();
                c.bytes_delivered = conn.reassembly().window_delivered();
            }
            Endpoints::Datagram { sink, .. } => {
                c.packets_received = sink.window_packets;
                c.bytes_delivered = sink.window_bytes;
                c.packets_lost = c.packets_sent.saturating_sub(sink.window_packets);
            }
            Endpoints::Arrivals(_)
            | Endpoints::Subflow { .. }
            | Endpoints::TunnelSubflow { .. }
            | Endpoints::Retired => {}
        }
        c
    }

    /// When the flow finished: its last byte acknowledged (reliable), or its last transfer
    /// done (arrival process).
    fn finished_ns(&self) -> Option<u64> {
        match &self.endpoints {
            Endpoints::Reliable(c) => c.finished_ns(),
            Endpoints::Arrivals(a) => a.done_ns(),
            Endpoints::Datagram { .. }
            | Endpoints::Dccp(_)
            | Endpoints::Subflow { .. }
            | Endpoints::TunnelSubflow { .. }
            | Endpoints::Retired => None,
        }
    }
}

/// A simulation ready to run.
pub struct Simulator {
    seed: u64,
    now: u64,
    end_ns: u64,
    warmup_ns: u64,
    measuring: bool,
    trace_interval_ns: Option<u64>,
    events: EventQueue,
    links: Vec<Link>,
    flows: Vec<Flow>,
    configured: usize,
    route_changes: Vec<RouteChange>,
    param_changes: Vec<(u32, ParamChange)>,
    packets: Pool<Packet>,
    frames: Pool<AckFrame>,
    ack_vectors: Pool<AckVector>,
    outbox: Vec<Packet>,
    arrived: Vec<u32>,
    /// Scratch: the packets a link's loss took on delivery.
    lost: Vec<u32>,
    trace: Option<Trace>,
    unfinished: usize,
    processed: u64,
    tunnels: Vec<Tunnel>,
    released: Released,
}

impl Simulator {
    /// Builds a simulation from `config`. Paths must name existing links (the lab checks
    /// scenarios before they get here).
    pub fn new(config: SimConfig) -> Self {
        let seed = config.seed;
        let links: Vec<Link> = config
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                Link::new(
                    i as u32,
                    l,
                    seeded(seed, loss_stream(i)),
                    seeded(seed, jitter_stream(i)),
                )
            })
            .collect();
        let mut events = EventQueue::new();
        for link in &links {
            link.schedule_rate_steps(&mut events);
        }
        for (i, c) in config.route_changes.iter().enumerate() {
            events.push(duration_nanos(c.at), Target::LinkDelay(i as u32));
        }
        let warmup_ns = duration_nanos(config.warmup);
        // Queued before any flow starts, so a window opening at time zero sees everything.
        events.push(warmup_ns, Target::Warmup);
        let mut param_changes = Vec::new();
        let mut flows = Vec::with_capacity(config.flows.len());
        for (i, mut f) in config.flows.into_iter().enumerate() {
            let changes = std::mem::take(&mut f.events);
            flows.push(Flow::new(i as u32, f, seed, &mut events));
            for change in changes {
                let index = param_changes.len() as u32;
                events.push(duration_nanos(change.at), Target::ParamChange(index));
                param_changes.push((i as u32, change));
            }
        }
        let open_ended = flows.iter().any(|f| !f.bounded());
        let configured = flows.len();
        let tunnels: Vec<Tunnel> = config
            .tunnels
            .into_iter()
            .enumerate()
            .map(|(t, c)| add_tunnel(t as u32, c, &mut flows))
            .collect();
        let trace_interval_ns = config.trace_interval.map(duration_nanos).filter(|&t| t > 0);
        let trace = trace_interval_ns.map(|_| {
            events.push(0, Target::Trace);
            Trace {
                flows: flows[..configured]
                    .iter()
                    .map(|f| Series::new(&f.name))
                    .collect(),
                links: config.links.iter().map(|l| Series::new(&l.name)).collect(),
                tunnels: tunnels.iter().map(tunnel_series).collect(),
            }
        });
        Simulator {
            seed,
            now: 0,
            end_ns: duration_nanos(config.duration),
            warmup_ns,
            measuring: false,
            trace_interval_ns,
            events,
            links,
            configured,
            unfinished: if open_ended { usize::MAX } else { configured },
            flows,
            route_changes: config.route_changes,
            param_changes,
            packets: Pool::default(),
            frames: Pool::default(),
            ack_vectors: Pool::default(),
            outbox: Vec::new(),
            arrived: Vec::new(),
            lost: Vec::new(),
            trace,
            processed: 0,
            tunnels,
            released: Released::default(),
        }
    }

    /// Runs to the end (the configured duration, or earlier when every flow has finished).
    pub fn run(mut self) -> SimResult {
        while let Some((t, target)) = self.events.pop() {
            if t > self.end_ns {
                break;
            }
            self.now = t;
            self.processed += 1;
            self.dispatch(target);
            if self.unfinished == 0 {
                break;
            }
        }
        let end = if self.unfinished == 0 {
            self.now
        } else {
            self.end_ns
        };
        self.finish(end)
    }

    fn dispatch(&mut self, target: Target) {
        let now = self.now;
        match target {
            Target::LinkTransmit(l) => self.links[l as usize].on_transmitted(now, &mut self.events),
            Target::LinkArrival(l) => self.on_link_arrival(l),
            Target::LinkRate(l) => self.links[l as usize].on_rate_step(now, &mut self.events),
            Target::LinkDelay(i) => {
                let c = self.route_changes[i as usize];
                self.links[c.link].set_delay(c.delay);
            }
            Target::Sender(f) => self.on_sender_timer(f),
            Target::Receiver(f) => {
                if let Endpoints::TunnelSubflow { tunnel, dir, .. } =
                    self.flows[f as usize].endpoints
                {
                    self.on_reorder_expiry(tunnel, dir, f);
                    return self.flush_outbox();
                }
                let owner = self.owner(f);
                if let Endpoints::Reliable(c) = &mut self.flows[owner as usize].endpoints {
                    c.on_receiver_timer(
                        f,
                        now,
                        &mut self.frames,
                        &mut self.outbox,
                        &mut self.events,
                    );
                }
            }
            Target::FlowStart(f) => self.on_flow_start(f),
            Target::FlowStop(f) => self.on_flow_stop(f),
            Target::ParamChange(i) => self.on_param_change(i),
            Target::Arrival(f) => self.on_arrival(f),
            Target::Trace => self.on_trace(),
            Target::Warmup => self.on_warmup(),
        }
        self.flush_outbox();
    }

    /// The flow whose connection flow `f` is a subflow of (`f` itself for a first subflow).
    fn owner(&self, f: u32) -> u32 {
        match self.flows[f as usize].endpoints {
            Endpoints::Subflow { connection } => connection,
            _ => f,
        }
    }

    fn on_sender_timer(&mut self, f: u32) {
        let now = self.now;
        if let Endpoints::TunnelSubflow { tunnel, dir, path } = self.flows[f as usize].endpoints {
            let d = &mut self.tunnels[tunnel as usize].dirs[dir as usize];
            d.subflows[usize::from(path)]
                .sender
                .on_timer(now, &mut self.outbox, &mut self.events);
            return self.drain_tunnel(tunnel, dir);
        }
        let owner = self.owner(f);
        match &mut self.flows[owner as usize].endpoints {
            Endpoints::Reliable(c) => c.on_sender_timer(f, now, &mut self.outbox, &mut self.events),
            Endpoints::Datagram { source, .. } => {
                source.on_timer(now, &mut self.outbox, &mut self.events);
            }
            Endpoints::Dccp(d) => d.sender.on_timer(now, &mut self.outbox, &mut self.events),
            Endpoints::Arrivals(_)
            | Endpoints::Subflow { .. }
            | Endpoints::TunnelSubflow { .. }
            | Endpoints::Retired => {}
        }
        self.after_event(owner);
    }

    /// After an event of flow `f`: its connection gets the subflows its controller asks for,
    /// and a finished flow is counted.
    fn after_event(&mut self, f: u32) {
        self.sync_subflows(f);
        self.check_done(f);
    }

    /// Opens or closes extra subflows of flow `f`'s connection to match what its controller
    /// asks for. A new subflow is a new flow on the same paths, its index never reused.
    fn sync_subflows(&mut self, f: u32) {
        let now = self.now;
        loop {
            let id = self.flows.len() as u32;
            let flow = &mut self.flows[f as usize];
            let Endpoints::Reliable(c) = &mut flow.endpoints else {
                return;
            };
            let change = c.subflow_change();
            if change > 0 && id as usize >= MAX_RUN_FLOWS {
                return;
            }
            if change < 0 {
                c.close_subflow(now, &mut self.outbox, &mut self.events);
                continue;
            }
            if change == 0 || !c.open_subflow(id, now, &mut self.outbox, &mut self.events) {
                return;
            }
            // Never counted as a flow of its own: its connection is.
            let subflow = Flow {
                done: true,
                ..flow.sibling(now, Endpoints::Subflow { connection: f })
            };
            self.flows.push(subflow);
        }
    }

    fn on_flow_start(&mut self, f: u32) {
        let now = self.now;
        match &mut self.flows[f as usize].endpoints {
            Endpoints::Reliable(c) => c.start(now, &mut self.outbox, &mut self.events),
            Endpoints::Datagram { source, .. } => {
                source.start(now, &mut self.outbox, &mut self.events)
            }
            Endpoints::Dccp(d) => d.sender.start(now, &mut self.outbox, &mut self.events),
            Endpoints::Arrivals(_)
            | Endpoints::Subflow { .. }
            | Endpoints::TunnelSubflow { .. }
            | Endpoints::Retired => {}
        }
        self.sync_subflows(f);
    }

    fn on_flow_stop(&mut self, f: u32) {
        let now = self.now;
        match &mut self.flows[f as usize].endpoints {
            Endpoints::Reliable(c) => c.stop(now, &mut self.outbox, &mut self.events),
            Endpoints::Datagram { source, .. } => source.stop(),
            Endpoints::Dccp(d) => d.sender.stop(now, &mut self.outbox, &mut self.events),
            Endpoints::Arrivals(a) => a.stop(now),
            Endpoints::Subflow { .. } | Endpoints::TunnelSubflow { .. } | Endpoints::Retired => {}
        }
        self.after_event(f);
    }

    fn on_param_change(&mut self, i: u32) {
        let (f, change) = &self.param_changes[i as usize];
        let f = *f;
        if let Endpoints::Reliable(c) = &mut self.flows[f as usize].endpoints {
            c.set_param(
                self.now,
                &change.name,
                &change.value,
                &mut self.outbox,
                &mut self.events,
            );
        }
        self.after_event(f);
    }

    /// The next transfer of arrival process `f` begins, as a new flow on the process's paths.
    fn on_arrival(&mut self, f: u32) {
        let (now, id) = (self.now, self.flows.len() as u32);
        let parent = &mut self.flows[f as usize];
        let Endpoints::Arrivals(a) = &mut parent.endpoints else {
            return;
        };
        if id as usize >= MAX_RUN_FLOWS {
            a.stop(now);
            return;
        }
        let Some((controller, k, next)) = a.arrive(now, id, self.measuring) else {
            return;
        };
        if let Some(t) = next {
            self.events.push(t, Target::Arrival(f));
        }
        let host = host_seed(self.seed, f as usize, k);
        let mut endpoints = reliable(id, controller, a.transport, a.app, host);
        if self.measuring {
            endpoints.start_measuring(now);
        }
        let transfer = Flow {
            size: parent.size,
            group: Some(f),
            ..parent.sibling(now, endpoints)
        };
        self.flows.push(transfer);
        self.on_flow_start(id);
    }

    fn check_done(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        if flow.done || !flow.is_done() {
            return;
        }
        flow.done = true;
        if let Some(group) = flow.group {
            self.retire(f, group);
            self.check_done(group);
        } else if self.unfinished != usize::MAX {
            self.unfinished -= 1;
        }
    }

    /// Transfer `f` of arrival process `group` finished: its measurements go to the process
    /// and its endpoints are dropped (its paths stay, for its packets still on the way).
    fn retire(&mut self, f: u32, group: u32) {
        let window = self.measuring.then_some(self.warmup_ns);
        let (configured, transfers) = self.flows.split_at_mut(self.configured);
        let transfer = &mut transfers[f as usize - self.configured];
        if let (Some(report), Endpoints::Arrivals(a)) =
            (transfer.report(), &mut configured[group as usize].endpoints)
        {
            a.finish(f, self.now, window, &report);
        }
        transfer.endpoints = Endpoints::Retired;
    }

    /// At the end of the run, the transfers still under way add what they measured to their
    /// processes.
    fn absorb_unfinished_transfers(&mut self) {
        let (configured, transfers) = self.flows.split_at_mut(self.configured);
        for flow in configured {
            let Endpoints::Arrivals(a) = &mut flow.endpoints else {
                continue;
            };
            for id in a.active_flows().to_vec() {
                if let Some(report) = transfers[id as usize - self.configured].report() {
                    a.absorb(&report);
                }
            }
        }
    }

    /// Routes the packets endpoints produced during this event onto their first link.
    fn flush_outbox(&mut self) {
        // Delivery over an empty path happens inside `forward` and may add packets here.
        let mut i = 0;
        while i < self.outbox.len() {
            let packet = self.outbox[i];
            let idx = self.packets.insert(packet);
            self.forward(idx);
            i += 1;
        }
        self.outbox.clear();
    }

    /// Moves packet `idx` to its next link, or delivers it at the end of its path.
    fn forward(&mut self, idx: u32) {
        let p = self.packets.get_mut(idx);
        let flow = &self.flows[p.flow as usize];
        if let (Some(t), 0) = (flow.tunnel, p.hop) {
            p.hop = 1;
            let dir = u8::from(p.reverse);
            return self.enter_tunnel(t, dir, idx);
        }
        let path = if p.reverse {
            &flow.reverse
        } else {
            &flow.forward
        };
        let Some(&link) = path.get(usize::from(p.hop)) else {
            self.deliver(idx);
            return;
        };
        p.hop += 1;
        let q = Queued {
            packet: idx,
            size: p.size,
            class: p.flow * 2 + u32::from(p.reverse),
        };
        let admission = self.links[link as usize].arrive(self.now, q, &mut self.events);
        if admission != crate::link::Admission::Accepted {
            self.lost_on_link(idx);
        }
    }

    /// Packet `idx` was dropped or lost on a link: a tunnel packet's copy is resolved.
    fn lost_on_link(&mut self, idx: u32) {
        let p = *self.packets.get(idx);
        self.free_packet(idx);
        let Body::DccpData { carried, .. } = p.body else {
            return;
        };
        if carried == NOT_CARRIED {
            return;
        }
        if let Endpoints::TunnelSubflow { tunnel, dir, .. } = self.flows[p.flow as usize].endpoints
        {
            let mut released = std::mem::take(&mut self.released);
            self.tunnels[tunnel as usize].dirs[usize::from(dir)]
                .lost_on_path(carried, &mut released);
            self.settle(released);
        }
    }

    /// Carried packet `idx` enters direction `dir` of tunnel `t`.
    fn enter_tunnel(&mut self, t: u32, dir: u8, idx: u32) {
        let size = self.packets.get(idx).size;
        let d = &mut self.tunnels[t as usize].dirs[usize::from(dir)];
        if !d.enter(self.now, idx, size) {
            self.free_packet(idx);
        }
        self.drain_tunnel(t, dir);
    }

    /// Direction `dir` of tunnel `t` gives what it can of its queue to its subflows.
    fn drain_tunnel(&mut self, t: u32, dir: u8) {
        let mut released = std::mem::take(&mut self.released);
        self.tunnels[t as usize].dirs[usize::from(dir)].drain(
            self.now,
            &mut self.outbox,
            &mut self.events,
            &mut released,
        );
        self.settle(released);
    }

    /// Forwards the carried packets a tunnel released at its far end and frees those that
    /// will never arrive.
    fn settle(&mut self, mut released: Released) {
        for &idx in &released.free {
            self.free_packet(idx);
        }
        for &idx in &released.forward {
            self.forward(idx);
        }
        released.clear();
        self.released = released;
    }

    /// The idle expiry of the reordering stage of direction `dir` of tunnel `t`, whose timer
    /// is flow `f`'s receiver timer.
    fn on_reorder_expiry(&mut self, t: u32, dir: u8, f: u32) {
        let mut released = std::mem::take(&mut self.released);
        let d = &mut self.tunnels[t as usize].dirs[usize::from(dir)];
        d.on_expiry(self.now, &mut released);
        d.arm(self.now, &mut self.events, Target::Receiver(f));
        self.settle(released);
    }

    fn free_packet(&mut self, idx: u32) {
        match self.packets.get(idx).body {
            Body::Ack { frame } => self.frames.release(frame),
            Body::DccpAck { vector } => self.ack_vectors.release(vector),
            _ => {}
        }
        self.packets.release(idx);
    }

    fn on_link_arrival(&mut self, l: u32) {
        let mut arrived = std::mem::take(&mut self.arrived);
        let mut lost = std::mem::take(&mut self.lost);
        self.links[l as usize].take_arrivals(self.now, &mut arrived, &mut lost, &mut self.events);
        for &idx in &lost {
            self.lost_on_link(idx);
        }
        for &idx in &arrived {
            self.forward(idx);
        }
        arrived.clear();
        lost.clear();
        self.arrived = arrived;
        self.lost = lost;
    }

    /// A packet reached the end of its path.
    fn deliver(&mut self, idx: u32) {
        let packet = *self.packets.get(idx);
        let now = self.now;
        if let Endpoints::TunnelSubflow { tunnel, dir, path } =
            self.flows[packet.flow as usize].endpoints
        {
            self.deliver_to_tunnel(tunnel, dir, usize::from(path), &packet);
            return self.free_packet(idx);
        }
        let f = self.owner(packet.flow);
        match (&mut self.flows[f as usize].endpoints, packet.body) {
            (Endpoints::Reliable(c), Body::Data { .. }) => {
                c.on_data(
                    now,
                    &packet,
                    &mut self.frames,
                    &mut self.outbox,
                    &mut self.events,
                );
            }
            (Endpoints::Reliable(c), Body::Ack { frame }) => {
                c.on_ack(
                    packet.flow,
                    now,
                    self.frames.get(frame),
                    &mut self.outbox,
                    &mut self.events,
                );
            }
            (Endpoints::Datagram { sink, .. }, Body::Datagram) => {
                sink.on_arrival(now, &packet, self.measuring.then_some(self.warmup_ns));
            }
            (Endpoints::Dccp(d), Body::DccpData { .. }) => {
                d.receiver
                    .on_data(now, &packet, &mut self.ack_vectors, &mut self.outbox);
            }
            (Endpoints::Dccp(d), Body::DccpAck { vector }) => {
                let v = self.ack_vectors.get(vector);
                d.sender.on_ack(now, v, &mut self.outbox, &mut self.events);
            }
            _ => {}
        }
        self.free_packet(idx);
        if matches!(packet.body, Body::Ack { .. } | Body::DccpAck { .. }) {
            self.after_event(f);
        }
    }

    /// A packet of subflow `path` of direction `dir` of tunnel `t` reached the subflow's end.
    fn deliver_to_tunnel(&mut self, t: u32, dir: u8, path: usize, packet: &Packet) {
        let now = self.now;
        let d = &mut self.tunnels[t as usize].dirs[usize::from(dir)];
        match packet.body {
            Body::DccpData { .. } => {
                let mut released = std::mem::take(&mut self.released);
                d.arrive(
                    now,
                    path,
                    packet,
                    &mut self.ack_vectors,
                    &mut self.outbox,
                    &mut released,
                );
                d.arm(now, &mut self.events, Target::Receiver(packet.flow));
                self.settle(released);
            }
            Body::DccpAck { vector } => {
                let v = self.ack_vectors.get(vector);
                d.subflows[path]
                    .sender
                    .on_ack(now, v, &mut self.outbox, &mut self.events);
                self.drain_tunnel(t, dir);
            }
            _ => {}
        }
    }

    fn on_warmup(&mut self) {
        self.measuring = true;
        for link in &mut self.links {
            link.start_measuring(self.now);
        }
        for flow in &mut self.flows {
            flow.at_warmup = flow.counters();
            flow.endpoints.start_measuring(self.now);
        }
        for tunnel in &mut self.tunnels {
            tunnel.start_measuring(self.now);
        }
    }

    fn on_trace(&mut self) {
        let (Some(trace), Some(interval)) = (&mut self.trace, self.trace_interval_ns) else {
            return;
        };
        let t = self.now as f64 * 1e-9;
        for (flow, series) in self.flows[..self.configured]
            .iter_mut()
            .zip(&mut trace.flows)
        {
            series.begin(t);
            sample_flow(flow, series, interval);
            series.end();
        }
        for (tunnel, series) in self.tunnels.iter_mut().zip(&mut trace.tunnels) {
            sample_tunnel(tunnel, series, t, interval);
        }
        for (link, series) in self.links.iter().zip(&mut trace.links) {
            series.begin(t);
            let (dropped, lost, policed) = link.drops();
            series.set("queue_packets", link.queue_packets() as f64);
            series.set("queue_bytes", link.queue_bytes() as f64);
            series.set("dropped_packets", dropped as f64);
            series.set("lost_random_packets", lost as f64);
            series.set("policed_packets", policed as f64);
            series.set("transmitted_bytes", link.bytes_transmitted() as f64);
            series.set("rate_bps", link.rate().bits_per_sec());
            series.end();
        }
        self.events.push(self.now + interval, Target::Trace);
    }

    fn finish(mut self, end: u64) -> SimResult {
        if !self.measuring {
            // The run ended before the warm-up: the window opens and closes at its end, empty.
            self.now = end;
            self.on_warmup();
        }
        self.absorb_unfinished_transfers();
        let warmup = self.warmup_ns.min(end);
        let links = self
            .links
            .iter_mut()
            .map(|l| l.finish(end, warmup))
            .collect();
        let flows = self.flows[..self.configured]
            .iter()
            .map(|f| flow_stats(f, warmup, end))
            .collect();
        let tunnels = self
            .tunnels
            .iter()
            .map(|t| tunnel_stats(t, end - warmup))
            .collect();
        SimResult {
            end_ns: end,
            warmup_ns: warmup,
            events: self.processed,
            flows,
            links,
            tunnels,
            trace: self.trace.take(),
        }
    }
}

/// Adds the subflows of tunnel `t` (`config`) to `flows`, after the flows it carries are told
/// so, and builds it.
fn add_tunnel(t: u32, config: TunnelConfig, flows: &mut Vec<Flow>) -> Tunnel {
    for &f in &config.flows {
        flows[f].tunnel = Some(t);
    }
    let first = flows.len() as u32;
    for dir in [FORWARD, BACKWARD] {
        for (i, p) in config.paths.iter().enumerate() {
            let (there, back) = if dir == FORWARD {
                (&p.forward, &p.reverse)
            } else {
                (&p.reverse, &p.forward)
            };
            flows.push(Flow::tunnel_subflow(t, dir as u8, i as u16, there, back));
        }
    }
    Tunnel::new(config, first)
}

/// The trace series of `tunnel`: the tunnel's own, then one per path.
fn tunnel_series(tunnel: &Tunnel) -> Vec<Series> {
    std::iter::once(Series::new(&tunnel.name))
        .chain(
            tunnel
                .path_names
                .iter()
                .map(|p| Series::new(&format!("{}.{p}", tunnel.name))),
        )
        .collect()
}

/// Samples flow `flow` into `series`; `interval_ns` is the time since the last sample.
fn sample_flow(flow: &mut Flow, series: &mut Series, interval_ns: u64) {
    // What arrived since the last sample: its mean latency and its rate.
    let arrived = |series: &mut Series, tally: &mut IntervalTally| {
        let (latency_ns, bytes) = tally.take();
        series.set("latency_ms", latency_ns.map_or(f64::NAN, |l| l / 1e6));
        series.set("rx_rate_bps", bytes as f64 * 8e9 / interval_ns as f64);
    };
    match &mut flow.endpoints {
        Endpoints::Reliable(c) => {
            let sender = c.primary();
            let sending = Sending {
                cc: sender.controller(),
                pacing_rate: sender.pacing_rate(),
                in_flight: c.in_flight(),
                rtt: sender.rtt(),
                delivered: c.reassembly().delivered,
                counters: c.counters(),
            };
            sample_sending(&sending, series);
            series.set_state(&sending.cc.state());
            arrived(series, &mut c.interval);
        }
        Endpoints::Datagram { source, sink } => {
            series.mode.push("datagram");
            series.set("sent_bytes", source.bytes_sent() as f64);
            series.set("delivered_bytes", sink.received_bytes as f64);
            arrived(series, &mut sink.interval);
        }
        Endpoints::Dccp(d) => sample_dccp(d, series, interval_ns),
        Endpoints::Arrivals(a) => {
            series.mode.push("arrivals");
            series.set("active_transfers", a.active() as f64);
            series.set("begun_transfers", a.begun() as f64);
        }
        Endpoints::Subflow { .. } | Endpoints::TunnelSubflow { .. } | Endpoints::Retired => {}
    }
}

/// What the trace columns every sending transport has are read from.
struct Sending<'a> {
    cc: &'a dyn Controller,
    pacing_rate: Option<kleinrock_cc::Rate>,
    in_flight: u64,
    rtt: &'a kleinrock_cc::estimators::rtt::RttEstimator,
    delivered: u64,
    counters: FlowCounters,
}

/// The columns every sending transport has: window, pacing rate, bytes in flight, RTTs, bytes
/// delivered, packets sent and lost.
fn sample_sending(s: &Sending, series: &mut Series) {
    let ms = |d: Option<std::time::Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    series.set("cwnd_bytes", s.cc.cwnd() as f64);
    let pacing = s.pacing_rate.map_or(f64::NAN, |r| r.bits_per_sec());
    series.set("pacing_rate_bps", pacing);
    series.set("in_flight_bytes", s.in_flight as f64);
    series.set("srtt_ms", ms(s.rtt.smoothed()));
    series.set("latest_rtt_ms", ms(s.rtt.latest()));
    series.set("delivered_bytes", s.delivered as f64);
    series.set("sent_packets", s.counters.packets_sent as f64);
    series.set("lost_packets", s.counters.packets_lost as f64);
}

/// Samples the DCCP flow (or tunnel subflow) `d` into `series`; `interval_ns` is the time since
/// the last sample.
fn sample_dccp(d: &mut DccpEndpoints, series: &mut Series, interval_ns: u64) {
    let (s, counters) = (&d.sender, d.counters());
    let cc = s.controller();
    sample_sending(
        &Sending {
            cc,
            pacing_rate: s.pacing_rate(),
            in_flight: s.in_flight(),
            rtt: s.rtt(),
            delivered: counters.bytes_delivered,
            counters,
        },
        series,
    );
    series.set("pipe_packets", s.pipe() as f64);
    series.set("cwnd_packets", s.cwnd_packets() as f64);
    series.set("send_queue_packets", s.queued() as f64);
    series.set("send_queue_drops", counters.send_queue_drops as f64);
    series.set("ack_ratio", s.ack_ratio() as f64);
    series.set("app_limited", f64::from(u8::from(s.app_limited())));
    series.set_state(&cc.state());
    let (latency_ns, bytes) = d.receiver.interval.take();
    series.set("latency_ms", latency_ns.map_or(f64::NAN, |l| l / 1e6));
    series.set("rx_rate_bps", bytes as f64 * 8e9 / interval_ns as f64);
}

/// Samples tunnel `tunnel` into its series (the tunnel's, then one per path).
fn sample_tunnel(tunnel: &mut Tunnel, series: &mut [Series], t: f64, interval_ns: u64) {
    let (own, paths) = series
        .split_first_mut()
        .expect("a tunnel has its own series");
    own.begin(t);
    for (dir, d) in ["", "back_"].iter().zip(&tunnel.dirs) {
        let c = d.counters();
        own.set(&format!("{dir}queue_packets"), d.queued() as f64);
        own.set(&format!("{dir}reorder_buffered"), d.buffered() as f64);
        own.set(&format!("{dir}entered_packets"), c.entered as f64);
        own.set(&format!("{dir}forwarded_packets"), c.forwarded as f64);
        own.set(&format!("{dir}queue_drops"), c.queue_drops as f64);
        own.set(&format!("{dir}gaps_skipped"), c.gaps_skipped as f64);
    }
    own.end();
    for (s, sub) in paths.iter_mut().zip(&mut tunnel.dirs[FORWARD].subflows) {
        s.begin(t);
        sample_dccp(sub, s, interval_ns);
        s.end();
    }
}

/// What tunnel `tunnel` measured; `window_ns` is the measurement window's length.
fn tunnel_stats(tunnel: &Tunnel, window_ns: u64) -> TunnelStats {
    let path = |i: usize, dir: usize| {
        let d = &tunnel.dirs[dir];
        let sub = &d.subflows[i];
        let m = sub.measured();
        FlowStats {
            name: tunnel.path_names[i].clone(),
            counters: sub.window_counters(&d.at_warmup[i]),
            active_ns: window_ns,
            rtt: m.rtt,
            loss_events: m.loss_events,
            latency: m.latency,
            max_rtt_ns: m.max_rtt_ns,
            final_state: sub.sender.controller().state(),
            ..FlowStats::default()
        }
    };
    TunnelStats {
        name: tunnel.name.clone(),
        counters: [tunnel.dirs[0].counters(), tunnel.dirs[1].counters()],
        latency: [
            tunnel.dirs[0].latency.clone(),
            tunnel.dirs[1].latency.clone(),
        ],
        paths: (0..tunnel.path_names.len())
            .map(|i| [path(i, FORWARD), path(i, BACKWARD)])
            .collect(),
    }
}

fn flow_stats(flow: &Flow, warmup: u64, end: u64) -> FlowStats {
    let completion = match &flow.endpoints {
        Endpoints::Reliable(c) => c.reassembly().completion_ns,
        _ => None,
    };
    let active_from = flow.start_ns.max(warmup);
    // A stopped flow is active until its last byte is delivered (its bytes in flight at the
    // stop still count), like a sized one; a stopped or sized datagram flow until the later of
    // its stop and its last datagram's arrival.
    let datagram_stop = match &flow.endpoints {
        Endpoints::Datagram { source, sink } if flow.stop_ns.is_some() || source.finished() => {
            Some(flow.stop_ns.unwrap_or(0).max(sink.last_arrival_ns))
        }
        Endpoints::Dccp(d) if flow.stop_ns.is_some() || d.sender.finished() => Some(
            flow.stop_ns
                .unwrap_or(0)
                .max(d.receiver.stats.last_arrival_ns),
        ),
        _ => None,
    };
    let active_to = [Some(end), completion, flow.finished_ns(), datagram_stop]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(end);
    let active_ns = active_to.saturating_sub(active_from);
    if let Endpoints::Arrivals(a) = &flow.endpoints {
        return a.stats(&flow.name, active_ns);
    }
    let counters = flow.window_counters();
    let measured = match &flow.endpoints {
        Endpoints::Reliable(c) => c.measured(),
        Endpoints::Datagram { sink, .. } => Measured {
            queuing_delay: sink.queuing_delay.clone(),
            latency: sink.latency.clone(),
            ..Measured::default()
        },
        Endpoints::Dccp(d) => d.measured(),
        Endpoints::Arrivals(_)
        | Endpoints::Subflow { .. }
        | Endpoints::TunnelSubflow { .. }
        | Endpoints::Retired => Measured::default(),
    };
    FlowStats {
        name: flow.name.clone(),
        counters,
        active_ns,
        completion_ns: completion,
        size_bytes: flow.size,
        rtt: measured.rtt,
        queuing_delay: measured.queuing_delay,
        loss_events: measured.loss_events,
        latency: measured.latency,
        max_rtt_ns: measured.max_rtt_ns,
        transfers: None,
        final_state: match &flow.endpoints {
            Endpoints::Reliable(c) => c.primary().controller().state(),
            Endpoints::Dccp(d) => d.sender.controller().state(),
            _ => Default::default(),
        },
    }
}
