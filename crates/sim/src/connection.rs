//! A reliable connection: one byte stream carried by one or more subflows. Each subflow is a
//! flow of its own to the network (its own packet numbers, ACKs, RTT, loss detection and
//! controller, and its own class at a fair queue); the stream is shared: a subflow takes the
//! next chunk when its controller lets it send (the scheduler is "whoever may send first"),
//! a lost chunk may be resent on any subflow, and the receiver reassembles the bytes in
//! order whichever subflow brought them.
//!
//! The first subflow's controller decides how many subflows there are: it may ask for extra
//! ones ([`Controller::extra_subflows`]), which the simulator opens as new flows on the same
//! paths, and later close them. A closed subflow sends nothing more; whatever it sent that was
//! not acknowledged is sent again, first, on the subflows still open, so every byte reaches the
//! application. Its sender is then freed, its measurements kept in the connection's totals;
//! its receiver stays (small: packets still on their way arrive and are acknowledged).

use crate::app::Application;
use crate::config::{AppConfig, TransportConfig};
use crate::events::EventQueue;
use crate::hist::Histogram;
use crate::packet::{AckFrame, Body, Packet, Pool};
use crate::receiver::Receiver;
use crate::sender::{Sender, SenderStats};
use crate::stats::{EventSpan, FlowCounters, IntervalTally};
use crate::stream::{Reassembly, SendStream};
use crate::streams::seeded;
use kleinrock_cc::{Controller, ParamValue};

/// One subflow: its flow index and both ends; a closed subflow's sender is gone.
struct Subflow {
    /// Flow index (its class at a fair queue, and where its packets are routed).
    flow: u32,
    /// Sending end, `None` once closed.
    sender: Option<Sender>,
    /// Receiving end.
    receiver: Receiver,
}

impl Subflow {
    fn open(&mut self) -> &mut Sender {
        self.sender
            .as_mut()
            .expect("only open subflows are listed in `open`")
    }
}

/// What the senders of closed subflows counted and measured.
#[derive(Debug, Default)]
struct Retired {
    counters: FlowCounters,
    rtt: Histogram,
    loss_events: EventSpan,
    window_lost: u64,
    max_rtt_ns: u64,
}

/// What a connection measured, over all its subflows.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// RTT samples in the window, ns.
    pub rtt: Histogram,
    /// One-way queuing delay of each data packet in the window, ns.
    pub queuing_delay: Histogram,
    /// Congestion events in the window.
    pub loss_events: EventSpan,
    /// Largest RTT sample over the run, ns.
    pub max_rtt_ns: u64,
    /// Latency of each data packet sent in the window, ns.
    pub latency: Histogram,
}

/// A reliable connection and its subflows.
pub struct Connection {
    /// Boxed: it is only read when a subflow opens, and the flows' table keeps it small.
    transport: Box<TransportConfig>,
    stream: SendStream,
    reassembly: Reassembly,
    /// Every subflow, closed ones included, in the order they opened (so by flow index).
    subflows: Vec<Subflow>,
    /// Indices into `subflows` of the open ones, ascending; the first subflow is always open.
    open: Vec<usize>,
    /// What closed subflows' senders counted; allocated at the first close.
    retired: Option<Box<Retired>>,
    /// One-way queuing delay of each data packet in the window, over all subflows, ns.
    queuing_delay: Histogram,
    /// One-way delay of each data packet sent in the window, ns.
    latency: Histogram,
    /// When the measurement window opened.
    window_ns: Option<u64>,
    /// What arrived since the last trace sample.
    pub interval: IntervalTally,
    host_seed: u64,
    started: bool,
    measuring: bool,
}

impl Connection {
    /// A connection whose first subflow is flow `flow`, driven by `controller`; `host_seed`
    /// seeds the sending host's timing of its subflows.
    pub fn new(
        flow: u32,
        controller: Box<dyn Controller>,
        transport: TransportConfig,
        app: AppConfig,
        host_seed: u64,
    ) -> Self {
        // The host's timing of the k-th subflow opened: stream k of `host_seed`.
        let first = seeded(host_seed, 0);
        Connection {
            transport: Box::new(transport),
            stream: SendStream::new(Application::new(app)),
            reassembly: Reassembly::new(app.total_bytes()),
            subflows: vec![Subflow {
                flow,
                sender: Some(Sender::new(flow, controller, transport, first)),
                receiver: Receiver::new(flow, transport),
            }],
            open: vec![0],
            retired: None,
            queuing_delay: Histogram::new(),
            latency: Histogram::new(),
            window_ns: None,
            interval: IntervalTally::default(),
            host_seed,
            started: false,
            measuring: false,
        }
    }

    /// The sender of the first subflow, whose controller runs the connection.
    pub fn primary(&self) -> &Sender {
        self.subflows[0]
            .sender
            .as_ref()
            .expect("the first subflow stays open")
    }

    /// The receiver's reassembly.
    pub fn reassembly(&self) -> &Reassembly {
        &self.reassembly
    }

    fn index_of(&self, flow: u32) -> Option<usize> {
        self.subflows.binary_search_by_key(&flow, |s| s.flow).ok()
    }

    /// The index of subflow `flow`, if it is open.
    fn open_index(&self, flow: u32) -> Option<usize> {
        self.index_of(flow)
            .filter(|&i| self.subflows[i].sender.is_some())
    }

    fn open_senders(&self) -> impl Iterator<Item = &Sender> {
        self.open
            .iter()
            .filter_map(|&k| self.subflows[k].sender.as_ref())
    }

    /// The connection starts at `now`.
    pub fn start(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.started = true;
        self.stream.start(now);
        let sender = self.subflows[0].open();
        sender.start(now, &mut self.stream, out, events);
    }

    /// The application stops offering new data at `now`.
    pub fn stop(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.stream.stop();
        self.poke_all(now, out, events);
    }

    /// Statistics before `now` are discarded from now on.
    pub fn start_measuring(&mut self, now: u64) {
        self.measuring = true;
        self.window_ns = Some(now);
        self.reassembly.open_window(now);
        for sender in self.subflows.iter_mut().filter_map(|s| s.sender.as_mut()) {
            sender.start_measuring();
        }
    }

    /// A controller parameter of the first subflow changes at `now`.
    pub fn set_param(
        &mut self,
        now: u64,
        name: &str,
        value: &ParamValue,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        let sender = self.subflows[0].open();
        sender.set_param(now, name, value, &mut self.stream, out, events);
    }

    /// The sender timer of subflow `flow` fires at `now`.
    pub fn on_sender_timer(
        &mut self,
        flow: u32,
        now: u64,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if let Some(i) = self.open_index(flow) {
            let sender = self.subflows[i].open();
            sender.on_timer(now, &mut self.stream, out, events);
            self.poke_others(i, now, out, events);
        }
    }

    /// The delayed-ACK timer of subflow `flow` fires at `now`.
    pub fn on_receiver_timer(
        &mut self,
        flow: u32,
        now: u64,
        frames: &mut Pool<AckFrame>,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if let Some(i) = self.index_of(flow) {
            self.subflows[i].receiver.on_timer(now, frames, out, events);
        }
    }

    /// A data packet of subflow `packet.flow` arrives at `now`.
    pub fn on_data(
        &mut self,
        now: u64,
        packet: &Packet,
        frames: &mut Pool<AckFrame>,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        let Some(i) = self.index_of(packet.flow) else {
            return;
        };
        let receiver = &mut self.subflows[i].receiver;
        let delays = receiver.on_data(now, packet, &mut self.reassembly, frames, out, events);
        let Some((owd, queuing_delay)) = delays else {
            return;
        };
        if self.measuring {
            self.queuing_delay.record(queuing_delay);
        }
        if self.window_ns.is_some_and(|w| packet.sent_ns >= w) {
            self.latency.record(owd);
        }
        if let Body::Data { len, .. } = packet.body {
            self.interval.record(owd, u64::from(len));
        }
    }

    /// An ACK frame of subflow `flow` arrives at `now`.
    pub fn on_ack(
        &mut self,
        flow: u32,
        now: u64,
        frame: &AckFrame,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if let Some(i) = self.open_index(flow) {
            let sender = self.subflows[i].open();
            sender.on_ack(now, frame, &mut self.stream, out, events);
            self.poke_others(i, now, out, events);
        }
    }

    /// After an event on subflow `i`, the other open subflows may have chunks to resend.
    fn poke_others(&mut self, i: usize, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        for &k in &self.open {
            if k != i {
                let sender = self.subflows[k].open();
                sender.poke(now, &mut self.stream, out, events);
            }
        }
    }

    fn poke_all(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        for &k in &self.open {
            let sender = self.subflows[k].open();
            sender.poke(now, &mut self.stream, out, events);
        }
    }

    /// Open subflows besides the first.
    fn open_extra(&self) -> usize {
        self.open.len() - 1
    }

    /// How many subflows the first subflow's controller wants opened (positive) or closed
    /// (negative) now.
    pub fn subflow_change(&self) -> isize {
        let wanted = self.primary().controller().extra_subflows() as isize;
        let open = self.open_extra() as isize;
        if wanted == open || !self.started || self.finished_ns().is_some() {
            return 0;
        }
        wanted - open
    }

    /// Opens a subflow as flow `flow` at `now`, with the controller the first subflow's
    /// controller gives it; `false` if it gives none.
    pub fn open_subflow(
        &mut self,
        flow: u32,
        now: u64,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) -> bool {
        debug_assert!(
            self.subflows.last().is_some_and(|s| s.flow < flow),
            "subflows open in flow order, for `index_of`"
        );
        let index = self.open_extra() + 1;
        let Some(controller) = self.subflows[0]
            .open()
            .controller_mut()
            .subflow_controller(index)
        else {
            return false;
        };
        let mut sender = Sender::new(
            flow,
            controller,
            *self.transport,
            seeded(self.host_seed, self.subflows.len() as u64),
        );
        let receiver = Receiver::new(flow, *self.transport);
        if self.measuring {
            sender.start_measuring();
        }
        sender.start(now, &mut self.stream, out, events);
        let sub = Subflow {
            flow,
            sender: Some(sender),
            receiver,
        };
        self.open.push(self.subflows.len());
        self.subflows.push(sub);
        true
    }

    /// Closes the most recently opened extra subflow at `now`; its unacknowledged chunks go
    /// first in line on the subflows still open, and its sender is freed (what it counted and
    /// measured is kept in the connection's totals).
    pub fn close_subflow(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        if self.open.len() == 1 {
            return;
        }
        let k = self.open.pop().expect("the first subflow stays open");
        let mut sender = self.subflows[k].sender.take().expect("an open subflow");
        self.stream.resend_first(sender.close(now));
        self.retire(&sender.stats);
        self.poke_all(now, out, events);
    }

    /// Adds a closed sender's counts and measurements to the connection's totals.
    fn retire(&mut self, stats: &SenderStats) {
        let r = self.retired.get_or_insert_with(Box::default);
        r.counters = r.counters.plus(&stats.counters);
        r.rtt.merge(&stats.rtt);
        r.loss_events.merge(&stats.loss_events);
        r.window_lost += stats.window_lost;
        r.max_rtt_ns = r.max_rtt_ns.max(stats.max_rtt_ns);
    }

    /// When the connection finished: every open subflow finished (nothing left to send,
    /// nothing outstanding).
    pub fn finished_ns(&self) -> Option<u64> {
        self.open_senders()
            .map(Sender::finished_ns)
            .try_fold(0, |latest, f| f.map(|f| latest.max(f)))
    }

    /// Bytes in flight over the open subflows (a closed one's are resent on the others).
    pub fn in_flight(&self) -> u64 {
        self.open_senders().map(Sender::in_flight).sum()
    }

    /// Packets sent in the measurement window and declared lost, over all subflows.
    pub fn window_lost(&self) -> u64 {
        let retired = self.retired.as_ref().map_or(0, |r| r.window_lost);
        let open: u64 = self
            .subflows
            .iter()
            .filter_map(|s| s.sender.as_ref())
            .map(|s| s.stats.window_lost)
            .sum();
        retired + open
    }

    /// Counters over all subflows.
    pub fn counters(&self) -> FlowCounters {
        let mut total = FlowCounters {
            bytes_delivered: self.reassembly.delivered,
            bytes_duplicate: self.reassembly.duplicate,
            ..FlowCounters::default()
        }
        .plus(
            &self
                .retired
                .as_ref()
                .map_or_else(FlowCounters::default, |r| r.counters),
        );
        for s in &self.subflows {
            let sent = s.sender.as_ref().map(|x| x.stats.counters);
            total = total.plus(&FlowCounters {
                packets_received: s.receiver.packets_received,
                acks_sent: s.receiver.acks_sent,
                ..sent.unwrap_or_default()
            });
        }
        total
    }

    /// RTT, queuing delay and congestion events over all subflows.
    pub fn measured(&self) -> Measured {
        let mut m = match &self.retired {
            Some(r) => Measured {
                rtt: r.rtt.clone(),
                queuing_delay: self.queuing_delay.clone(),
                loss_events: r.loss_events,
                max_rtt_ns: r.max_rtt_ns,
                latency: self.latency.clone(),
            },
            None => Measured {
                queuing_delay: self.queuing_delay.clone(),
                latency: self.latency.clone(),
                ..Measured::default()
            },
        };
        for sender in self.open_senders() {
            m.rtt.merge(&sender.stats.rtt);
            m.loss_events.merge(&sender.stats.loss_events);
            m.max_rtt_ns = m.max_rtt_ns.max(sender.stats.max_rtt_ns);
        }
        m
    }
}
