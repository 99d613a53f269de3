//! Unresponsive datagram flows: a source that sends whatever its application offers, with no
//! feedback and no retransmission (a constant-bit-rate UDP stream). Byte counts are
//! application payload, as for the reliable transport; each datagram adds its header bytes on
//! the wire.

use crate::app::Application;
use crate::events::{EventQueue, LazyTimer, Target};
use crate::packet::{Body, Packet};

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
