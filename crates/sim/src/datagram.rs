//! Unresponsive datagram flows: a source that sends whatever its application offers, with no
//! feedback and no retransmission (a constant-bit-rate UDP stream). Byte counts are
//! application payload, as for the reliable transport; each datagram adds its header bytes on
//! the wire.

use crate::app::Application;
use crate::events::{EventQueue, LazyTimer, Target};
use crate::hist::Histogram;
use crate::packet::{Body, Packet};
use crate::stats::IntervalTally;

/// The sending side of a datagram flow.
#[derive(Debug)]
pub struct DatagramSource {
    flow: u32,
    payload: u32,
    header: u32,
    app: Application,
    sent_bytes: u64,
    started: bool,
    /// Datagrams sent.
    pub packets_sent: u64,
    /// Its timer.
    pub timer: LazyTimer,
}

impl DatagramSource {
    /// A source for flow `flow` sending datagrams of at most `packet_size` bytes on the wire,
    /// `header` of them headers.
    pub fn new(flow: u32, packet_size: u32, header: u32, app: Application) -> Self {
        DatagramSource {
            flow,
            payload: packet_size - header,
            header,
            app,
            sent_bytes: 0,
            started: false,
            packets_sent: 0,
            timer: LazyTimer::default(),
        }
    }

    /// Payload bytes sent.
    pub fn bytes_sent(&self) -> u64 {
        self.sent_bytes
    }

    /// Starts at `now`.
    pub fn start(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        self.started = true;
        self.app.start(now);
        self.on_timer(now, out, events);
    }

    /// Stops offering data.
    pub fn stop(&mut self) {
        self.app.stop(self.sent_bytes);
    }

    /// Whether it will send nothing more.
    pub fn finished(&self) -> bool {
        self.app.exhausted(self.sent_bytes)
    }

    /// Sends what the application has produced by `now` and waits for more.
    pub fn on_timer(&mut self, now: u64, out: &mut Vec<Packet>, events: &mut EventQueue) {
        if !self.started {
            return;
        }
        self.timer.fire(now);
        loop {
            let len = self.app.available(now, self.sent_bytes, self.payload);
            if len == 0 {
                break;
            }
            out.push(Packet {
                flow: self.flow,
                size: len + self.header,
                hop: 0,
                reverse: false,
                number: self.packets_sent,
                sent_ns: now,
                body: Body::Datagram,
            });
            self.sent_bytes += u64::from(len);
            self.packets_sent += 1;
        }
        if let Some(t) = self.app.next_data_ns(self.sent_bytes, self.payload) {
            self.timer
                .arm(events, t.max(now + 1), Target::Sender(self.flow));
        }
    }
}

/// The receiving side of a datagram flow: what arrived, each datagram's latency, and its
/// one-way queuing delay.
#[derive(Debug, Default)]
pub struct DatagramSink {
    header: u32,
    /// Datagrams received.
    pub received_packets: u64,
    /// Application bytes received.
    pub received_bytes: u64,
    /// Datagrams sent in the measurement window and received.
    pub window_packets: u64,
    /// Application bytes of those.
    pub window_bytes: u64,
    /// When the latest datagram arrived, ns.
    pub last_arrival_ns: u64,
    min_owd_ns: Option<u64>,
    /// One-way queuing delay of each datagram received in the window, ns.
    pub queuing_delay: Histogram,
    /// One-way delay of each datagram sent in the window, ns.
    pub latency: Histogram,
    /// What arrived since the last trace sample.
    pub interval: IntervalTally,
}

impl DatagramSink {
    /// A sink for datagrams with `header` header bytes.
    pub fn new(header: u32) -> Self {
        DatagramSink {
            header,
            ..DatagramSink::default()
        }
    }

    /// `packet` arrives at `now`; the window opened at `window_ns` (if it has).
    pub fn on_arrival(&mut self, now: u64, packet: &Packet, window_ns: Option<u64>) {
        let payload = u64::from(packet.size - self.header);
        self.received_packets += 1;
        self.received_bytes += payload;
        self.last_arrival_ns = now;
        let owd = now - packet.sent_ns;
        if window_ns.is_some_and(|w| packet.sent_ns >= w) {
            self.window_packets += 1;
            self.window_bytes += payload;
            self.latency.record(owd);
        }
        let min = self.min_owd_ns.map_or(owd, |m| m.min(owd));
        self.min_owd_ns = Some(min);
        if window_ns.is_some_and(|w| now >= w) {
            self.queuing_delay.record(owd - min);
        }
        self.interval.record(owd, payload);
    }
}
