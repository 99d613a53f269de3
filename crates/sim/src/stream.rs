//! A connection's byte stream, shared by its subflows: what the sending application offers and
//! what must be sent again ([`SendStream`]), and the receiver's in-order reassembly
//! ([`Reassembly`]). A chunk may leave on one subflow and be resent on another; the receiver
//! delivers each byte once, in order, whichever subflow brought it.

use crate::app::Application;
use crate::rangeset::RangeSet;
use std::collections::VecDeque;

/// The sending side of the stream: new application data and the queue of chunks to resend.
#[derive(Debug)]
pub struct SendStream {
    app: Application,
    next_offset: u64,
    retransmit: VecDeque<(u64, u32)>,
}

impl SendStream {
    /// A stream fed by `app`.
    pub fn new(app: Application) -> Self {
        SendStream {
            app,
            next_offset: 0,
            retransmit: VecDeque::new(),
        }
    }

    /// The application starts at `now`.
    pub fn start(&mut self, now: u64) {
        self.app.start(now);
    }

    /// The application offers no new data from now on.
    pub fn stop(&mut self) {
        self.app.stop(self.next_offset);
    }

    /// The next chunk of at most `max` bytes to send at `now`: a chunk to resend first, then
    /// new data; with whether it is a retransmission.
    pub fn next_chunk(&mut self, now: u64, max: u32) -> Option<(u64, u32, bool)> {
        if let Some((offset, len)) = self.retransmit.pop_front() {
            return Some((offset, len, true));
        }
        let len = self.app.available(now, self.next_offset, max);
        (len > 0).then(|| {
            let offset = self.next_offset;
            self.next_offset += u64::from(len);
            (offset, len, false)
        })
    }

    /// Whether a chunk is ready to send at `now`.
    pub fn has_data(&self, now: u64, max: u32) -> bool {
        !self.retransmit.is_empty() || self.app.available(now, self.next_offset, max) > 0
    }

    /// When the application next offers data, if it will.
    pub fn next_data_ns(&self, max: u32) -> Option<u64> {
        self.app.next_data_ns(self.next_offset, max)
    }

    /// A lost chunk, to be sent again after those already waiting.
    pub fn resend(&mut self, offset: u64, len: u32) {
        self.retransmit.push_back((offset, len));
    }

    /// Chunks of a closed subflow that were never acknowledged, in offset order: they are
    /// sent again before anything else.
    pub fn resend_first(&mut self, mut chunks: Vec<(u64, u32)>) {
        chunks.sort_unstable();
        for chunk in chunks.into_iter().rev() {
            self.retransmit.push_front(chunk);
        }
    }

    /// Whether lost chunks wait to be sent again.
    pub fn resending(&self) -> bool {
        !self.retransmit.is_empty()
    }

    /// Whether a lost chunk that starts below `offset` waits to be sent again.
    pub fn resending_below(&self, offset: u64) -> bool {
        self.retransmit.iter().any(|&(o, _)| o < offset)
    }

    /// The stream offset new data has been handed out up to (TCP's snd.nxt).
    pub fn sent_up_to(&self) -> u64 {
        self.next_offset
    }

    /// Whether every byte the application will offer has been handed out and nothing waits to
    /// be sent again.
    pub fn exhausted(&self) -> bool {
        self.app.exhausted(self.next_offset) && self.retransmit.is_empty()
    }
}

/// The receiving side of the stream: bytes delivered in order, each once.
#[derive(Debug)]
pub struct Reassembly {
    received: RangeSet,
    total: Option<u64>,
    /// Stream bytes delivered in order.
    pub delivered: u64,
    /// Stream bytes received more than once.
    pub duplicate: u64,
    /// When the last byte of a sized stream arrived, ns.
    pub completion_ns: Option<u64>,
    window: Option<Box<Window>>,
}

/// What the measurement window counts: the bytes delivered in order since it opened, less
/// those first brought by a packet sent before it opened.
#[derive(Debug)]
struct Window {
    open_ns: u64,
    delivered_at_open: u64,
    /// Bytes above `delivered` first brought by a packet sent before the window opened.
    early: RangeSet,
    /// Bytes delivered since the window opened that such packets brought.
    early_delivered: u64,
}

impl Reassembly {
    /// Reassembly of a stream of `total` bytes (`None`: unbounded).
    pub fn new(total: Option<u64>) -> Self {
        Reassembly {
            received: RangeSet::new(),
            total,
            delivered: 0,
            duplicate: 0,
            completion_ns: None,
            window: None,
        }
    }

    /// Opens the measurement window at `now`: from then on [`Reassembly::window_delivered`]
    /// counts the bytes delivered in order that a packet sent at or after `now` brought first.
    pub fn open_window(&mut self, now: u64) {
        let mut early = self.received.clone();
        early.remove_below(self.delivered);
        self.window = Some(Box::new(Window {
            open_ns: now,
            delivered_at_open: self.delivered,
            early,
            early_delivered: 0,
        }));
    }

    /// Bytes `offset..offset + len` sent at `sent_ns` arrived at `now`.
    #[inline]
    pub fn take(&mut self, now: u64, offset: u64, len: u32, sent_ns: u64) {
        let end = offset + u64::from(len);
        if let Some(w) = self.window.as_mut().filter(|w| sent_ns < w.open_ns) {
            for (a, b) in self.received.gaps_within(offset, end) {
                w.early.insert(a, b);
            }
        }
        let new = self.received.insert(offset, end);
        self.duplicate += u64::from(len) - new;
        let before = self.delivered;
        self.delivered = self.received.contiguous_end(0);
        if let Some(w) = self
            .window
            .as_mut()
            .filter(|w| self.delivered > before && !w.early.is_empty())
        {
            w.early_delivered += w.early.count_within(before, self.delivered);
            w.early.remove_below(self.delivered);
        }
        if self.completion_ns.is_none() && self.total.is_some_and(|t| self.delivered >= t) {
            self.completion_ns = Some(now);
        }
    }

    /// Bytes delivered in order since the window opened that a packet sent in the window
    /// brought first (0 before it opens). Each crossed the whole path inside the window, so
    /// over the window they are at most what its slowest link carried.
    pub fn window_delivered(&self) -> u64 {
        self.window.as_ref().map_or(0, |w| {
            self.delivered - w.delivered_at_open - w.early_delivered
        })
    }
}
