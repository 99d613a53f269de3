//! The simulator: links, flows and the event loop. A packet moves to its next hop by a direct
//! call inside the current event; only link transmissions, link arrivals and endpoint timers
//! are events. Integer nanoseconds throughout; one seeded generator per random element.

use crate::app::Application;
use crate::config::{FlowKind, SimConfig};
use crate::datagram::DatagramSource;
use crate::events::{EventQueue, Target};
use crate::hist::Histogram;
use crate::link::Link;
use crate::packet::{AckFrame, Body, Packet, Pool};
use crate::queue::Queued;
use crate::receiver::Receiver;
use crate::sender::Sender;
use crate::stats::{FlowCounters, FlowStats, SimResult};
use crate::trace::{Series, Trace};
use kleinrock_cc::units::duration_nanos;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Generator stream of link `i`'s loss process.
fn loss_stream(i: usize) -> u64 {
    (1 << 32) | i as u64
}

/// Generator stream of link `i`'s jitter.
fn jitter_stream(i: usize) -> u64 {
    (2 << 32) | i as u64
}

enum Endpoints {
    Reliable {
        sender: Box<Sender>,
        receiver: Box<Receiver>,
    },
    Datagram {
        source: DatagramSource,
        header: u32,
        received_packets: u64,
        received_bytes: u64,
        min_owd_ns: Option<u64>,
        queuing_delay: Histogram,
    },
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
}

impl Flow {
    fn counters(&self) -> FlowCounters {
        match &self.endpoints {
            Endpoints::Reliable { sender, receiver } => FlowCounters {
                bytes_delivered: receiver.delivered,
                bytes_duplicate: receiver.duplicate,
                packets_received: receiver.packets_received,
                acks_sent: receiver.acks_sent,
                ..sender.stats.counters
            },
            Endpoints::Datagram {
                source,
                received_packets,
                received_bytes,
                ..
            } => FlowCounters {
                packets_sent: source.packets_sent,
                bytes_sent: source.bytes_sent(),
                packets_received: *received_packets,
                bytes_delivered: *received_bytes,
                ..FlowCounters::default()
            },
        }
    }

    /// When the flow finished: its last byte acknowledged (reliable) or sent (datagram).
    fn finished_ns(&self) -> Option<u64> {
        match &self.endpoints {
            Endpoints::Reliable { sender, .. } => sender.finished_ns(),
            Endpoints::Datagram { .. } => None,
        }
    }
}

/// A simulation ready to run.
pub struct Simulator {
    now: u64,
    end_ns: u64,
    warmup_ns: u64,
    trace_interval_ns: Option<u64>,
    events: EventQueue,
    links: Vec<Link>,
    flows: Vec<Flow>,
    packets: Pool<Packet>,
    frames: Pool<AckFrame>,
    outbox: Vec<Packet>,
    arrivals: Vec<u32>,
    trace: Option<Trace>,
    unfinished: usize,
    processed: u64,
}

impl Simulator {
    /// Builds a simulation from `config`. Paths must name existing links (the lab checks
    /// scenarios before they get here).
    pub fn new(config: SimConfig) -> Self {
        let seeded = |stream: u64| {
            let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
            rng.set_stream(stream);
            rng
        };
        let links: Vec<Link> = config
            .links
            .iter()
            .enumerate()
            .map(|(i, l)| {
                Link::new(
                    i as u32,
                    l,
                    seeded(loss_stream(i)),
                    seeded(jitter_stream(i)),
                )
            })
            .collect();
        let mut events = EventQueue::new();
        for link in &links {
            link.schedule_rate_steps(&mut events);
        }
        let warmup_ns = duration_nanos(config.warmup);
        // Queued before any flow starts, so a window opening at time zero sees everything.
        events.push(warmup_ns, Target::Warmup);
        let flows: Vec<Flow> = config
            .flows
            .into_iter()
            .enumerate()
            .map(|(i, f)| {
                let id = i as u32;
                let app = Application::new(f.app);
                let endpoints = match f.kind {
                    FlowKind::Reliable {
                        controller,
                        transport,
                    } => Endpoints::Reliable {
                        sender: Box::new(Sender::new(id, controller, transport, app)),
                        receiver: Box::new(Receiver::new(id, transport, f.app.total_bytes())),
                    },
                    FlowKind::Datagram {
                        packet_size,
                        header_size,
                    } => Endpoints::Datagram {
                        source: DatagramSource::new(id, packet_size, header_size, app),
                        header: header_size,
                        received_packets: 0,
                        received_bytes: 0,
                        min_owd_ns: None,
                        queuing_delay: Histogram::new(),
                    },
                };
                let start_ns = duration_nanos(f.start);
                events.push(start_ns, Target::FlowStart(id));
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
                }
            })
            .collect();
        let trace_interval_ns = config.trace_interval.map(duration_nanos).filter(|&t| t > 0);
        let trace = trace_interval_ns.map(|_| {
            events.push(0, Target::Trace);
            Trace {
                flows: flows.iter().map(|f| Series::new(&f.name)).collect(),
                links: config.links.iter().map(|l| Series::new(&l.name)).collect(),
            }
        });
        let unfinished = flows
            .iter()
            .filter(|f| f.size.is_some() || f.stop_ns.is_some())
            .count();
        let open_ended = flows.len() - unfinished;
        Simulator {
            now: 0,
            end_ns: duration_nanos(config.duration),
            warmup_ns,
            trace_interval_ns,
            events,
            links,
            flows,
            packets: Pool::default(),
            frames: Pool::default(),
            outbox: Vec::new(),
            arrivals: Vec::new(),
            trace,
            unfinished: if open_ended > 0 {
                usize::MAX
            } else {
                unfinished
            },
            processed: 0,
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
            Target::Sender(f) => self.on_sender_timer(f),
            Target::Receiver(f) => {
                if let Endpoints::Reliable { receiver, .. } = &mut self.flows[f as usize].endpoints
                {
                    receiver.on_timer(now, &mut self.frames, &mut self.outbox, &mut self.events);
                }
            }
            Target::FlowStart(f) => self.on_flow_start(f),
            Target::FlowStop(f) => self.on_flow_stop(f),
            Target::Trace => self.on_trace(),
            Target::Warmup => self.on_warmup(),
        }
        self.flush_outbox();
    }

    fn on_sender_timer(&mut self, f: u32) {
        let now = self.now;
        match &mut self.flows[f as usize].endpoints {
            Endpoints::Reliable { sender, .. } => {
                sender.on_timer(now, &mut self.outbox, &mut self.events);
            }
            Endpoints::Datagram { source, .. } => {
                source.on_timer(now, &mut self.outbox, &mut self.events);
            }
        }
        self.check_done(f);
    }

    fn on_flow_start(&mut self, f: u32) {
        let now = self.now;
        match &mut self.flows[f as usize].endpoints {
            Endpoints::Reliable { sender, .. } => {
                sender.start(now, &mut self.outbox, &mut self.events)
            }
            Endpoints::Datagram { source, .. } => {
                source.start(now, &mut self.outbox, &mut self.events)
            }
        }
    }

    fn on_flow_stop(&mut self, f: u32) {
        let now = self.now;
        match &mut self.flows[f as usize].endpoints {
            Endpoints::Reliable { sender, .. } => sender.stop(now, &mut self.events),
            Endpoints::Datagram { source, .. } => source.stop(),
        }
        self.check_done(f);
    }

    fn check_done(&mut self, f: u32) {
        let flow = &mut self.flows[f as usize];
        let done = match &flow.endpoints {
            Endpoints::Reliable { sender, .. } => sender.finished_ns().is_some(),
            Endpoints::Datagram { source, .. } => source.finished(),
        };
        if done && !flow.done {
            flow.done = true;
            if self.unfinished != usize::MAX {
                self.unfinished -= 1;
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
            self.free_packet(idx);
        }
    }

    fn free_packet(&mut self, idx: u32) {
        if let Body::Ack { frame } = self.packets.get(idx).body {
            self.frames.release(frame);
        }
        self.packets.release(idx);
    }

    fn on_link_arrival(&mut self, l: u32) {
        let mut arrivals = std::mem::take(&mut self.arrivals);
        self.links[l as usize].take_arrivals(self.now, &mut arrivals, &mut self.events);
        for &idx in &arrivals {
            self.forward(idx);
        }
        arrivals.clear();
        self.arrivals = arrivals;
    }

    /// A packet reached the end of its path.
    fn deliver(&mut self, idx: u32) {
        let packet = *self.packets.get(idx);
        let now = self.now;
        let f = packet.flow;
        match (&mut self.flows[f as usize].endpoints, packet.body) {
            (Endpoints::Reliable { receiver, .. }, Body::Data { .. }) => {
                receiver.on_data(
                    now,
                    &packet,
                    &mut self.frames,
                    &mut self.outbox,
                    &mut self.events,
                );
            }
            (Endpoints::Reliable { sender, .. }, Body::Ack { frame }) => {
                sender.on_ack(
                    now,
                    self.frames.get(frame),
                    &mut self.outbox,
                    &mut self.events,
                );
            }
            (
                Endpoints::Datagram {
                    header,
                    received_packets,
                    received_bytes,
                    min_owd_ns,
                    queuing_delay,
                    ..
                },
                Body::Datagram,
            ) => {
                *received_packets += 1;
                *received_bytes += u64::from(packet.size - *header);
                let owd = now - packet.sent_ns;
                let min = min_owd_ns.map_or(owd, |m| m.min(owd));
                *min_owd_ns = Some(min);
                if now >= self.warmup_ns {
                    queuing_delay.record(owd - min);
                }
            }
            _ => {}
        }
        self.free_packet(idx);
        if matches!(packet.body, Body::Ack { .. }) {
            self.check_done(f);
        }
    }

    fn on_warmup(&mut self) {
        for link in &mut self.links {
            link.start_measuring(self.now);
        }
        for flow in &mut self.flows {
            flow.at_warmup = flow.counters();
            if let Endpoints::Reliable { sender, receiver } = &mut flow.endpoints {
                sender.start_measuring();
                receiver.start_measuring();
            }
        }
    }

    fn on_trace(&mut self) {
        let (Some(trace), Some(interval)) = (&mut self.trace, self.trace_interval_ns) else {
            return;
        };
        let t = self.now as f64 * 1e-9;
        for (flow, series) in self.flows.iter().zip(&mut trace.flows) {
            series.begin(t);
            sample_flow(flow, series);
            series.end();
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
        let warmup = self.warmup_ns.min(end);
        let links = self
            .links
            .iter_mut()
            .map(|l| l.finish(end, warmup))
            .collect();
        let flows = self
            .flows
            .iter()
            .map(|f| flow_stats(f, warmup, end))
            .collect();
        SimResult {
            end_ns: end,
            warmup_ns: warmup,
            events: self.processed,
            flows,
            links,
            trace: self.trace.take(),
        }
    }
}

fn sample_flow(flow: &Flow, series: &mut Series) {
    let ms = |d: Option<std::time::Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    match &flow.endpoints {
        Endpoints::Reliable { sender, receiver } => {
            let cc = sender.controller();
            series.set("cwnd_bytes", cc.cwnd() as f64);
            series.set(
                "pacing_rate_bps",
                sender.pacing_rate().map_or(f64::NAN, |r| r.bits_per_sec()),
            );
            series.set("in_flight_bytes", sender.in_flight() as f64);
            series.set("srtt_ms", ms(sender.rtt().smoothed()));
            series.set("latest_rtt_ms", ms(sender.rtt().latest()));
            series.set("delivered_bytes", receiver.delivered as f64);
            series.set("sent_packets", sender.stats.counters.packets_sent as f64);
            series.set("lost_packets", sender.stats.counters.packets_lost as f64);
            series.set_state(&cc.state());
        }
        Endpoints::Datagram {
            source,
            received_bytes,
            ..
        } => {
            series.mode.push("datagram");
            series.set("sent_bytes", source.bytes_sent() as f64);
            series.set("delivered_bytes", *received_bytes as f64);
        }
    }
}

fn flow_stats(flow: &Flow, warmup: u64, end: u64) -> FlowStats {
    let completion = match &flow.endpoints {
        Endpoints::Reliable { receiver, .. } => receiver.completion_ns,
        Endpoints::Datagram { .. } => None,
    };
    let active_from = flow.start_ns.max(warmup);
    // A stopped flow is active until its last byte is delivered (its bytes in flight at the
    // stop still count), like a sized one; a datagram flow until its stop.
    let datagram_stop = match flow.endpoints {
        Endpoints::Datagram { .. } => flow.stop_ns,
        Endpoints::Reliable { .. } => None,
    };
    let active_to = [Some(end), completion, flow.finished_ns(), datagram_stop]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(end);
    let mut counters = flow.counters().since(&flow.at_warmup);
    if let Endpoints::Datagram { .. } = flow.endpoints {
        counters.packets_lost = counters
            .packets_sent
            .saturating_sub(counters.packets_received);
    }
    let (rtt, queuing_delay, loss_event_times, max_rtt_ns) = match &flow.endpoints {
        Endpoints::Reliable { sender, receiver } => (
            sender.stats.rtt.clone(),
            receiver.queuing_delay.clone(),
            sender.stats.loss_event_times.clone(),
            sender.stats.max_rtt_ns,
        ),
        Endpoints::Datagram { queuing_delay, .. } => {
            (Histogram::new(), queuing_delay.clone(), Vec::new(), 0)
        }
    };
    FlowStats {
        name: flow.name.clone(),
        counters,
        active_ns: active_to.saturating_sub(active_from),
        completion_ns: completion,
        size_bytes: flow.size,
        rtt,
        queuing_delay,
        loss_event_times,
        max_rtt_ns,
    }
}
