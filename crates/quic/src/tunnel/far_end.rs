//! The tunnel's far end: each path's arrivals measured, then the shared reordering stage
//! ([`kleinrock_cc::multipath::reorder`], the simulator's own) restoring the overall order.
//! Time is passed in (ns since the tunnel's start), as in the simulator.

use super::wire::{HEADER, STAND_IN};
use kleinrock_cc::multipath::reorder::{Fate, LatencySpread, Reorder, ReorderConfig};
use kleinrock_sim::hist::Histogram;
use kleinrock_sim::trace::Series;
use std::ops::RangeInclusive;

/// A packet in the reordering stage: its entry time, carried bytes, and the carried packet's
/// UDP payload (empty where the direction carries none).
#[derive(Clone, Debug)]
struct Item {
    entered_ns: u64,
    bytes: usize,
    payload: Vec<u8>,
}

/// Bytes and latencies per trace interval, and over the measurement window.
#[derive(Debug, Default)]
pub struct Meter {
    bytes: Vec<u64>,
    latency_sum_ns: Vec<u64>,
    packets: Vec<u64>,
    /// Carried bytes that arrived inside the window.
    pub window_bytes: u64,
    /// Latencies of the packets that entered inside the window, ns (as the simulator's
    /// tunnel measures them).
    pub latency: Histogram,
    /// Packets that entered inside the window.
    pub window_packets: u64,
}

impl Meter {
    fn record(&mut self, at: &Clock, now: u64, item: &Item) {
        let k = (now / at.interval_ns) as usize;
        if self.bytes.len() <= k {
            self.bytes.resize(k + 1, 0);
            self.latency_sum_ns.resize(k + 1, 0);
            self.packets.resize(k + 1, 0);
        }
        let latency = now.saturating_sub(item.entered_ns);
        self.bytes[k] += item.bytes as u64;
        self.latency_sum_ns[k] += latency;
        self.packets[k] += 1;
        let window = at.window();
        if window.contains(&now) {
            self.window_bytes += item.bytes as u64;
        }
        if window.contains(&item.entered_ns) {
            self.latency.record(latency);
            self.window_packets += 1;
        }
    }

    /// The received rate (`rx_rate_bps`) and mean latency (`latency_ms`, NaN when nothing
    /// arrived) of each of the run's trace intervals, at their ends, as the simulator's
    /// traces have them.
    pub fn series(&self, name: &str, clock: &Clock) -> Series {
        let interval_ns = clock.interval_ns;
        let mut s = Series::new(name);
        for k in 0..clock.intervals() {
            s.begin((k + 1) as f64 * interval_ns as f64 * 1e-9);
            let bytes = self.bytes.get(k).copied().unwrap_or(0);
            s.set(
                "rx_rate_bps",
                bytes as f64 * 8.0 / (interval_ns as f64 * 1e-9),
            );
            let n = self.packets.get(k).copied().unwrap_or(0);
            let mean = self.latency_sum_ns.get(k).copied().unwrap_or(0) as f64 / n.max(1) as f64;
            s.set("latency_ms", if n == 0 { f64::NAN } else { mean / 1e6 });
            s.end();
        }
        s
    }
}

/// The run's time line, ns since the tunnel's start.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    /// Trace interval.
    pub interval_ns: u64,
    /// Start of the measurement window.
    pub warmup_ns: u64,
    /// End of the run.
    pub end_ns: u64,
}

impl Clock {
    /// The measurement window.
    pub fn window(&self) -> RangeInclusive<u64> {
        self.warmup_ns..=self.end_ns
    }

    /// Trace intervals in the run, the last one possibly cut short.
    pub fn intervals(&self) -> usize {
        self.end_ns.div_ceil(self.interval_ns) as usize
    }
}

/// What became of the packets that reached the far end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FarCounts {
    /// Forwarded, once each.
    pub forwarded: u64,
    /// Of those, after a later packet.
    pub forwarded_late: u64,
    /// Dropped by the reordering stage as late.
    pub reorder_drops: u64,
    /// Dropped as copies of a packet already held or forwarded.
    pub duplicates: u64,
    /// Sequence numbers the reordering stage gave up waiting for.
    pub gaps_skipped: u64,
    /// Most packets the reordering stage held.
    pub most_buffered: u64,
    /// DATAGRAM frames too short to be tunnel packets, dropped.
    pub malformed: u64,
}

/// The far end of one direction.
pub struct FarEnd {
    clock: Clock,
    /// Whether the carried packets' payloads are kept for [`FarEnd::take_forwarded`].
    carries: bool,
    reorder: Reorder<Item>,
    released: Vec<(Item, Fate)>,
    /// Payloads forwarded and not yet taken.
    outbox: Vec<Vec<u8>>,
    /// Per path, what arrived at the path's far end (before reordering).
    pub paths: Vec<Meter>,
    /// What was forwarded (after reordering).
    pub forwarded: Meter,
    /// Counters.
    pub counts: FarCounts,
    /// Datagrams that arrived, per path.
    pub arrived: Vec<u64>,
}

impl FarEnd {
    /// A far end of `paths` paths with reordering `cfg`; with `carries`, it keeps each
    /// forwarded packet's UDP payload (after the [`STAND_IN`]) for [`FarEnd::take_forwarded`].
    pub fn new(cfg: ReorderConfig, paths: usize, clock: Clock, carries: bool) -> Self {
        FarEnd {
            clock,
            carries,
            reorder: Reorder::new(cfg),
            released: Vec::new(),
            outbox: Vec::new(),
            paths: (0..paths).map(|_| Meter::default()).collect(),
            forwarded: Meter::default(),
            counts: FarCounts::default(),
            arrived: vec![0; paths],
        }
    }

    /// Datagram `datagram` arrived on path `path` at `now`; `spread` is the paths' one-way
    /// latencies for the adaptive timeout.
    pub fn arrive(&mut self, now: u64, path: usize, datagram: &[u8], spread: LatencySpread) {
        let Some((header, bytes)) = super::wire::Header::parse(datagram) else {
            self.counts.malformed += 1;
            return;
        };
        self.arrived[path] += 1;
        let payload = match datagram.get(HEADER + STAND_IN..) {
            Some(p) if self.carries => p.to_vec(),
            _ => Vec::new(),
        };
        let item = Item {
            entered_ns: header.entered_ns,
            bytes,
            payload,
        };
        self.paths[path].record(&self.clock, now, &item);
        let mut out = std::mem::take(&mut self.released);
        self.reorder
            .on_arrival(now, header.overall, item, spread, &mut out);
        self.settle(now, &mut out);
        self.released = out;
    }

    /// When the reordering stage's idle expiry is due.
    pub fn deadline(&self) -> Option<u64> {
        self.reorder.deadline()
    }

    /// The idle expiry at `now`.
    pub fn expire(&mut self, now: u64) {
        let mut out = std::mem::take(&mut self.released);
        self.reorder.on_expiry(now, &mut out);
        self.settle(now, &mut out);
        self.released = out;
    }

    /// Packets the reordering stage holds.
    pub fn buffered(&self) -> usize {
        self.reorder.buffered()
    }

    /// The payloads forwarded since the last call, in order.
    pub fn take_forwarded(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.outbox)
    }

    fn settle(&mut self, now: u64, out: &mut Vec<(Item, Fate)>) {
        for (item, fate) in out.drain(..) {
            match fate {
                Fate::InOrder | Fate::Late => {
                    self.counts.forwarded += 1;
                    self.counts.forwarded_late += u64::from(fate == Fate::Late);
                    self.forwarded.record(&self.clock, now, &item);
                    if self.carries {
                        self.outbox.push(item.payload);
                    }
                }
                Fate::DroppedLate => self.counts.reorder_drops += 1,
                Fate::DroppedDuplicate => self.counts.duplicates += 1,
            }
        }
        let stats = self.reorder.stats();
        self.counts.gaps_skipped = stats.gaps_skipped;
        self.counts.most_buffered = stats.max_buffered as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunnel::wire::Header;
    use kleinrock_cc::multipath::reorder::ReorderKind;

    fn clock() -> Clock {
        Clock {
            interval_ns: 100_000_000,
            warmup_ns: 0,
            end_ns: 1_000_000_000,
        }
    }

    fn datagram(overall: u64, entered_ns: u64) -> Vec<u8> {
        Header {
            overall,
            entered_ns,
        }
        .datagram(1000, &[])
    }

    #[test]
    fn packets_are_forwarded_in_order_and_measured_per_path_and_end_to_end() {
        let cfg = ReorderConfig {
            kind: ReorderKind::ActiveFixed {
                timeout_ns: 15_000_000,
            },
            ..ReorderConfig::default()
        };
        let mut far = FarEnd::new(cfg, 2, clock(), false);
        let spread = LatencySpread::default();
        far.arrive(5_000_000, 1, &datagram(1, 1_000_000), spread);
        assert_eq!(far.counts.forwarded, 0, "1 waits for 0");
        far.arrive(6_000_000, 0, &datagram(0, 0), spread);
        assert_eq!(far.counts.forwarded, 2);
        assert!(
            far.take_forwarded().is_empty(),
            "this direction carries no payload"
        );
        assert_eq!(far.paths[0].window_bytes, 1000);
        assert_eq!(far.paths[1].window_bytes, 1000);
        assert_eq!(far.forwarded.window_bytes, 2000);
        // Packet 1 entered at 1 ms and left the reordering stage at 6 ms.
        assert_eq!(far.forwarded.latency.max(), Some(6_000_000));
        far.arrive(7_000_000, 0, &[0u8; 3], spread);
        assert_eq!(far.counts.malformed, 1);
        let two = Clock {
            end_ns: 200_000_000,
            ..clock()
        };
        let s = far.paths[0].series("p", &two);
        assert_eq!(s.column("rx_rate_bps"), Some(&[80_000.0, 0.0][..]));
    }

    #[test]
    fn a_carrying_far_end_hands_over_the_payloads_in_order_once() {
        let cfg = ReorderConfig {
            kind: ReorderKind::ActiveFixed {
                timeout_ns: 15_000_000,
            },
            ..ReorderConfig::default()
        };
        let mut far = FarEnd::new(cfg, 1, clock(), true);
        for overall in [1u64, 0] {
            let h = Header {
                overall,
                entered_ns: 0,
            };
            let payload = [overall as u8; 3];
            far.arrive(
                1_000,
                0,
                &h.datagram(STAND_IN + 3, &payload),
                Default::default(),
            );
        }
        assert_eq!(far.take_forwarded(), [vec![0u8; 3], vec![1; 3]]);
        assert!(far.take_forwarded().is_empty());
        assert_eq!(far.forwarded.window_bytes, 2 * (STAND_IN as u64 + 3));
    }
}
