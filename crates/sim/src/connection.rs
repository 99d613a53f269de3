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
//! application.

use crate::app::Application;
use crate::config::{AppConfig, TransportConfig};
use crate::events::EventQueue;
use crate::hist::Histogram;
use crate::packet::{AckFrame, Packet, Pool};
use crate::receiver::Receiver;
use crate::sender::Sender;
use crate::stats::FlowCounters;
use crate::stream::{Reassembly, SendStream};
use crate::streams::seeded;
use kleinrock_cc::{Controller, ParamValue};

/// One subflow: its flow index, both ends, and whether it still sends.
pub struct Subflow {
    /// Flow index (its class at a fair queue, and where its packets are routed).
    pub flow: u32,
    /// Sending end.
    pub sender: Sender,
    /// Receiving end.
    pub receiver: Receiver,
}

/// What a connection measured, over all its subflows.
#[derive(Clone, Debug, Default)]
pub struct Measured {
    /// RTT samples in the window, ns.
    pub rtt: Histogram,
    /// One-way queuing delay of each data packet in the window, ns.
    pub queuing_delay: Histogram,
    /// Times of congestion events in the window, ns.
    pub loss_event_times: Vec<u64>,
    /// Largest RTT sample over the run, ns.
    pub max_rtt_ns: u64,
}

/// A reliable connection and its subflows.
pub struct Connection {
    transport: TransportConfig,
    stream: SendStream,
    reassembly: Reassembly,
    /// Every subflow, closed ones included, in the order they opened (so by flow index).
    subflows: Vec<Subflow>,
    /// Indices into `subflows` of the open ones, ascending; the first subflow is always open.
    open: Vec<usize>,
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
            transport,
            stream: SendStream::new(Application::new(app)),
            reassembly: Reassembly::new(app.total_bytes()),
            subflows: vec![Subflow {
                flow,
                sender: Sender::new(flow, controller, transport, first),
                receiver: Receiver::new(flow, transport),
            }],
            open: vec![0],
            host_seed,
            started: false,
            measuring: false,
        }
    }

    /// The first subflow, whose controller runs the connection.
    pub fn primary(&self) -> &Subflow {
        &self.subflows[0]
    }

    /// The receiver's reassembly.
    pub fn reassembly(&self) -> &Reassembly {
        &self.reassembly
    }

    fn index_of(&self, flow: u32) -> Option<usize> {
        self.subflows.binary_search_by_key(&flow, |s| s.flow).ok()
    }

    fn open_subflows(&self) -> impl Iterator<Item = &Subflow> {
        self.open.iter().map(|&k| &self.subflows[k])
    }

    /// The connection starts at `now`.
    pub fn start(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.started = true;
        self.stream.start(now);
        let sub = &mut self.subflows[0];
        sub.sender.start(now, &mut self.stream, out, events);
    }

    /// The application stops offering new data at `now`.
    pub fn stop(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.stream.stop();
        self.poke_all(now, out, events);
    }

    /// Statistics before this call are discarded from now on.
    pub fn start_measuring(&mut self) {
        self.measuring = true;
        for s in &mut self.subflows {
            s.sender.start_measuring();
            s.receiver.start_measuring();
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
        let sub = &mut self.subflows[0];
        sub.sender
            .set_param(now, name, value, &mut self.stream, out, events);
    }

    /// The sender timer of subflow `flow` fires at `now`.
    pub fn on_sender_timer(
        &mut self,
        flow: u32,
        now: u64,
        out: &mut Vec<Packet>,
        events: &mut EventQueue,
    ) {
        if let Some(i) = self.index_of(flow) {
            let sub = &mut self.subflows[i];
            sub.sender.on_timer(now, &mut self.stream, out, events);
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
        if let Some(i) = self.index_of(packet.flow) {
            let sub = &mut self.subflows[i];
            sub.receiver
                .on_data(now, packet, &mut self.reassembly, frames, out, events);
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
        if let Some(i) = self.index_of(flow) {
            let sub = &mut self.subflows[i];
            sub.sender.on_ack(now, frame, &mut self.stream, out, events);
            self.poke_others(i, now, out, events);
        }
    }

    /// After an event on subflow `i`, the other open subflows may have chunks to resend.
    fn poke_others(&mut self, i: usize, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        for &k in &self.open {
            if k != i {
                let sender = &mut self.subflows[k].sender;
                sender.poke(now, &mut self.stream, out, events);
            }
        }
    }

    fn poke_all(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        for &k in &self.open {
            let sender = &mut self.subflows[k].sender;
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
        let wanted = self.subflows[0].sender.controller().extra_subflows() as isize;
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
            .sender
            .controller_mut()
            .subflow_controller(index)
        else {
            return false;
        };
        let mut sub = Subflow {
            flow,
            sender: Sender::new(
                flow,
                controller,
                self.transport,
                seeded(self.host_seed, self.subflows.len() as u64),
            ),
            receiver: Receiver::new(flow, self.transport),
        };
        if self.measuring {
            sub.sender.start_measuring();
            sub.receiver.start_measuring();
        }
        sub.sender.start(now, &mut self.stream, out, events);
        self.open.push(self.subflows.len());
        self.subflows.push(sub);
        true
    }

    /// Closes the most recently opened extra subflow at `now`; its unacknowledged chunks go
    /// first in line on the subflows still open.
    pub fn close_subflow(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        if self.open.len() == 1 {
            return;
        }
        let k = self.open.pop().expect("the first subflow stays open");
        let unacked = self.subflows[k].sender.close(now);
        self.stream.resend_first(unacked);
        self.poke_all(now, out, events);
    }

    /// When the connection finished: every open subflow finished (nothing left to send,
    /// nothing outstanding).
    pub fn finished_ns(&self) -> Option<u64> {
        self.open_subflows()
            .map(|s| s.sender.finished_ns())
            .try_fold(0, |latest, f| f.map(|f| latest.max(f)))
    }

    /// Bytes in flight over the open subflows (a closed one's are resent on the others).
    pub fn in_flight(&self) -> u64 {
        self.open_subflows().map(|s| s.sender.in_flight()).sum()
    }

    /// Counters over all subflows.
    pub fn counters(&self) -> FlowCounters {
        let mut total = FlowCounters {
            bytes_delivered: self.reassembly.delivered,
            bytes_duplicate: self.reassembly.duplicate,
            ..FlowCounters::default()
        };
        for s in &self.subflows {
            total = total.plus(&FlowCounters {
                packets_received: s.receiver.packets_received,
                acks_sent: s.receiver.acks_sent,
                ..s.sender.stats.counters
            });
        }
        total
    }

    /// RTT, queuing delay and congestion events over all subflows.
    pub fn measured(&self) -> Measured {
        let mut m = Measured::default();
        for s in &self.subflows {
            m.rtt.merge(&s.sender.stats.rtt);
            m.queuing_delay.merge(&s.receiver.queuing_delay);
            m.loss_event_times
                .extend_from_slice(&s.sender.stats.loss_event_times);
            m.max_rtt_ns = m.max_rtt_ns.max(s.sender.stats.max_rtt_ns);
        }
        m.loss_event_times.sort_unstable();
        m
    }
}
