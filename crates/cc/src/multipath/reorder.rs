//! MP-DCCP receive-side reordering: restoring the tunnel's order by the overall sequence number.
//!
//! Sources: telekom/mp-dccp `net/dccp/reordering/ro_default.c` (passive),
//! `net/dccp/non_gpl_reordering/ro_fixed.c` at commit 303bea42 (active, fixed timeout) and
//! `net/dccp/non_gpl_reordering/ro_active.c` at HEAD (adaptive timeout, duplicate drop),
//! `net/dccp/mpdccp_reordering.c` (path latency = RTT / 2); the paper: N. Romo Moreno,
//! M. Amend, A. Brunstrom, A. Kassler, V. Rakocevic, "CCID5: An implementation of the BBR
//! Congestion Control algorithm for DCCP and its impact over multi-path scenarios", ANRW 2021
//! ("Passive" and "Active-Fixed" reordering).
//!
//! Passive forwards every packet at once. Active keeps a ring of 2048 entries indexed by the
//! overall sequence number: the expected packet is forwarded with every consecutive buffered
//! one behind it; a packet beyond the expected one waits with an absolute timeout; on each
//! arrival, after that flush, only the lowest buffered packet's timeout is checked and, if it
//! passed, that one packet is forwarded and the gap before it given up (Linux does not loop:
//! the packets right behind it wait for the next arrival's flush or the idle expiry); 50 ms
//! without arrivals flushes the whole buffer.
//!
//! Where this differs from Linux, on purpose:
//! - Duplicates (the redundant scheduler's copies) are always dropped, in passive mode too, by
//!   a record of the last [`RECORD_SIZE`] sequence numbers below the expected one. Linux
//!   forwards a copy of an already forwarded packet as "late" (unless `drop_lost`) and, without
//!   `drop_dup`, forwards the buffered copy early when a second copy arrives. A packet older
//!   than the record cannot be told from a copy and is dropped as late.
//! - An arrival beyond the ring (sequence number >= expected + 2048): Linux forwards whatever
//!   occupies the arrival's ring slot at once, out of order, and keeps waiting for the gap
//!   below it. Here the window slides instead: the gap below `seq - 2047` is given up and the
//!   packets buffered there are forwarded in order, so the output never goes backwards except
//!   for late arrivals.
//! - The idle flush forwards in sequence order and moves the expected number past the last
//!   packet it forwarded (ro_fixed.c walks the ring by slot index and sets the expected number
//!   to a slot index; ro_active.c forwards without moving it).

/// Fixed timeout of active reordering (ro_fixed.c `FTO_DEF`, 15 ms).
pub const FIXED_TIMEOUT_NS: u64 = 15_000_000;
/// Offset added to the latency spread by adaptive reordering (ro_active.c `TO_OFF`, 5 ms).
pub const ADAPTIVE_OFFSET_NS: u64 = 5_000_000;
/// Cap of the adaptive timeout (ro_active.c `ATO_MAX`, 100 ms).
pub const ADAPTIVE_MAX_NS: u64 = 100_000_000;
/// Time without arrivals after which the whole buffer is flushed (ro_fixed.c `EXP_TO`, 50 ms).
pub const IDLE_EXPIRY_NS: u64 = 50_000_000;
/// Entries of the reordering ring (ro_fixed.c `RBUF_SIZE`).
pub const RING_SIZE: u64 = 2048;
/// Sequence numbers below the expected one whose forwarding is remembered to drop copies.
pub const RECORD_SIZE: u64 = 1 << 16;

/// The reordering module and its timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReorderKind {
    /// Forward every packet at once (`ro_default.c`).
    Passive,
    /// Buffer out-of-order packets for a fixed time (`ro_fixed.c`, `adaptive` = 0).
    ActiveFixed {
        /// How long a buffered packet waits for the gap below it.
        timeout_ns: u64,
    },
    /// Buffer for the latency spread of the active paths plus an offset, capped
    /// (`ro_active.c`, `adaptive` = 1).
    ActiveAdaptive {
        /// Added to max latency - min latency.
        offset_ns: u64,
        /// Upper bound of the timeout.
        max_ns: u64,
    },
}

/// Reordering settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReorderConfig {
    /// Module and timeout.
    pub kind: ReorderKind,
    /// Drop a late packet (its number was already given up) instead of forwarding it
    /// (ro_fixed.c `drop_lost`); active modes only, passive forwards late packets.
    pub drop_late: bool,
    /// Time without arrivals after which the whole buffer is flushed.
    pub idle_expiry_ns: u64,
}

impl Default for ReorderConfig {
    /// Passive, as the framework's default module; Linux's active defaults elsewhere.
    fn default() -> Self {
        ReorderConfig {
            kind: ReorderKind::Passive,
            drop_late: false,
            idle_expiry_ns: IDLE_EXPIRY_NS,
        }
    }
}

/// What happened to a released item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Forwarded above every number forwarded before (possibly after giving up a gap).
    InOrder,
    /// Forwarded below a number already forwarded: it arrived after its gap was given up.
    Late,
    /// Dropped as late (`drop_late`, or older than the record of forwarded numbers).
    DroppedLate,
    /// Dropped: a copy of a packet already forwarded or buffered.
    DroppedDuplicate,
}

/// One-way latency estimates of the active paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LatencySpread {
    /// Fastest active path.
    pub min_ns: u64,
    /// Slowest active path.
    pub max_ns: u64,
}

/// What the reordering stage did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReorderStats {
    /// Items forwarded in order.
    pub forwarded_in_order: u64,
    /// Items forwarded late.
    pub forwarded_late: u64,
    /// Items dropped as late.
    pub dropped_late: u64,
    /// Items dropped as copies.
    pub dropped_duplicate: u64,
    /// Sequence numbers passed over before they arrived (timeout, idle flush, ring slide; in
    /// passive mode every jump ahead).
    pub gaps_skipped: u64,
    /// Most items buffered at once.
    pub max_buffered: usize,
}

/// A buffered item and its absolute timeout.
struct Slot<T> {
    item: T,
    timeout: u64,
}

/// The receiver's reordering stage of one tunnel.
pub struct Reorder<T> {
    cfg: ReorderConfig,
    /// Next in-order overall sequence number.
    expected: u64,
    /// Buffered items at `seq % RING_SIZE`, for seq in [expected, expected + RING_SIZE);
    /// empty in passive mode.
    ring: Vec<Option<Slot<T>>>,
    buffered: usize,
    /// Lowest and highest buffered sequence numbers (valid while `buffered > 0`).
    lowest: u64,
    highest: u64,
    last_arrival: u64,
    /// Which numbers in [expected - RECORD_SIZE, expected) were forwarded, one bit each at
    /// `seq % RECORD_SIZE`.
    forwarded: Vec<u64>,
    stats: ReorderStats,
}

impl<T> Reorder<T> {
    /// An empty reordering stage expecting sequence number 0.
    pub fn new(cfg: ReorderConfig) -> Self {
        let mut ring = Vec::new();
        if cfg.kind != ReorderKind::Passive {
            ring.resize_with(RING_SIZE as usize, || None);
        }
        Reorder {
            cfg,
            expected: 0,
            ring,
            buffered: 0,
            lowest: 0,
            highest: 0,
            last_arrival: 0,
            forwarded: vec![0; (RECORD_SIZE / 64) as usize],
            stats: ReorderStats::default(),
        }
    }

    /// Tunnel packet `seq` (overall sequence number, the first packet is 0) arrives at `now`.
    /// Every item released (forwarded or dropped) is appended to `out` with its fate, in the
    /// order forwarded.
    pub fn on_arrival(
        &mut self,
        now: u64,
        seq: u64,
        item: T,
        spread: LatencySpread,
        out: &mut Vec<(T, Fate)>,
    ) {
        // ro_fixed.c do_reorder_active_mod: every arrival re-arms the expiry timer
        self.last_arrival = now;
        if seq < self.expected {
            self.late(seq, item, out);
            return;
        }
        if self.cfg.kind == ReorderKind::Passive {
            // ro_default.c do_reorder_default: forward at once
            self.forward_in_order(seq, item, out);
            return;
        }
        if self.holds(seq) {
            // ro_active.c rbuf_insert with drop_dup: a copy of a buffered packet is dropped
            self.stats.dropped_duplicate += 1;
            out.push((item, Fate::DroppedDuplicate));
        } else if seq == self.expected {
            // ro_fixed.c: arrival == expected -> forward, expected++
            self.forward_in_order(seq, item, out);
        } else {
            self.buffer(now, seq, item, spread, out);
        }
        // ro_fixed.c rbuf_flush: consecutive packets, then the timeout of the lowest one
        self.flush_consecutive(out);
        self.check_timeout(now, out);
    }

    /// The idle expiry fires at `now`: flush the whole buffer in order. Does nothing before
    /// [`deadline`](Self::deadline) (a lazy timer that fired early re-arms at the deadline).
    pub fn on_expiry(&mut self, now: u64, out: &mut Vec<(T, Fate)>) {
        if self.deadline().is_some_and(|d| now >= d) {
            // ro_fixed.c exp_timer_cb: forward every buffered packet
            while self.buffered > 0 {
                let (seq, item) = self.pop_lowest();
                self.forward_in_order(seq, item, out);
            }
        }
    }

    /// When [`on_expiry`](Self::on_expiry) is next due (`None` when nothing is buffered).
    pub fn deadline(&self) -> Option<u64> {
        // ro_fixed.c: mod_timer(jiffies + exp_to) on every arrival
        (self.buffered > 0).then(|| self.last_arrival + self.cfg.idle_expiry_ns)
    }

    /// Items buffered now.
    pub fn buffered(&self) -> usize {
        self.buffered
    }

    /// Counters so far.
    pub fn stats(&self) -> ReorderStats {
        self.stats
    }

    /// An arrival below the expected number: a copy, or late.
    fn late(&mut self, seq: u64, item: T, out: &mut Vec<(T, Fate)>) {
        let fate = if self.expected - seq > RECORD_SIZE {
            // older than the record: it cannot be told from a copy
            Fate::DroppedLate
        } else if self.was_forwarded(seq) {
            Fate::DroppedDuplicate
        } else if self.cfg.drop_late && self.cfg.kind != ReorderKind::Passive {
            // ro_fixed.c: arrival < expected is dropped with drop_lost ...
            Fate::DroppedLate
        } else {
            // ... and forwarded otherwise
            self.mark_forwarded(seq);
            Fate::Late
        };
        match fate {
            Fate::Late => self.stats.forwarded_late += 1,
            Fate::DroppedLate => self.stats.dropped_late += 1,
            _ => self.stats.dropped_duplicate += 1,
        }
        out.push((item, fate));
    }

    /// Whether `seq` (>= expected) is buffered. The expected number itself can be: after a
    /// timeout forwards one packet, the ones right behind it wait for the next arrival.
    fn holds(&self, seq: u64) -> bool {
        seq < self.expected + RING_SIZE && self.ring[slot(seq)].is_some()
    }

    /// Buffer `seq` > expected, not buffered yet, with its absolute timeout.
    fn buffer(
        &mut self,
        now: u64,
        seq: u64,
        item: T,
        spread: LatencySpread,
        out: &mut Vec<(T, Fate)>,
    ) {
        if seq >= self.expected + RING_SIZE {
            // beyond the ring: slide the window (Linux forwards the slot's occupant early)
            self.slide(seq + 1 - RING_SIZE, out);
        }
        // ro_fixed.c rbuf_insert: abs_to = now + timeout
        let timeout = now + self.timeout_ns(spread);
        self.ring[slot(seq)] = Some(Slot { item, timeout });
        if self.buffered == 0 || seq < self.lowest {
            self.lowest = seq;
        }
        if self.buffered == 0 || seq > self.highest {
            self.highest = seq;
        }
        self.buffered += 1;
        self.stats.max_buffered = self.stats.max_buffered.max(self.buffered);
    }

    /// How long a packet buffered now waits.
    fn timeout_ns(&self, spread: LatencySpread) -> u64 {
        match self.cfg.kind {
            ReorderKind::Passive => 0,
            // ro_fixed.c get_fixed_to
            ReorderKind::ActiveFixed { timeout_ns } => timeout_ns,
            // ro_active.c get_adaptive_to: min(max_lat - min_lat + to_off, ato_max)
            ReorderKind::ActiveAdaptive { offset_ns, max_ns } => {
                (spread.max_ns.saturating_sub(spread.min_ns) + offset_ns).min(max_ns)
            }
        }
    }

    /// ro_fixed.c rbuf_flush: forward the buffered packets that follow the expected number.
    fn flush_consecutive(&mut self, out: &mut Vec<(T, Fate)>) {
        while self.buffered > 0 && self.lowest == self.expected {
            let (seq, item) = self.pop_lowest();
            self.forward_in_order(seq, item, out);
        }
    }

    /// ro_fixed.c rbuf_flush: if the lowest buffered packet timed out (abs_to <= now), skip
    /// the gap below it and forward that one packet only.
    fn check_timeout(&mut self, now: u64, out: &mut Vec<(T, Fate)>) {
        if self.buffered > 0 && self.slot_timeout(self.lowest) <= now {
            let (seq, item) = self.pop_lowest();
            self.forward_in_order(seq, item, out);
        }
    }

    /// Give up every number below `to`, forwarding the packets buffered there in order.
    fn slide(&mut self, to: u64, out: &mut Vec<(T, Fate)>) {
        while self.buffered > 0 && self.lowest < to {
            let (seq, item) = self.pop_lowest();
            self.forward_in_order(seq, item, out);
        }
        self.skip_to(to);
    }

    fn slot_timeout(&self, seq: u64) -> u64 {
        self.ring[slot(seq)]
            .as_ref()
            .map_or(u64::MAX, |s| s.timeout)
    }

    /// Take the lowest buffered item (the caller checked `buffered > 0`).
    fn pop_lowest(&mut self) -> (u64, T) {
        let seq = self.lowest;
        let taken = self.ring[slot(seq)].take();
        self.buffered -= 1;
        if self.buffered > 0 {
            // removals always take the lowest, so the next one lies above it
            self.lowest = (seq + 1..=self.highest)
                .find(|&s| self.ring[slot(s)].is_some())
                .unwrap_or(self.highest);
        }
        let slot = taken.expect("the lowest buffered number has an item");
        (seq, slot.item)
    }

    /// Forward `seq` >= expected, giving up the numbers between.
    fn forward_in_order(&mut self, seq: u64, item: T, out: &mut Vec<(T, Fate)>) {
        self.skip_to(seq);
        self.expected = seq + 1;
        self.mark_forwarded(seq);
        self.stats.forwarded_in_order += 1;
        out.push((item, Fate::InOrder));
    }

    /// Give up the numbers in [expected, to): count them and clear their record bits (which
    /// held the numbers RECORD_SIZE lower).
    fn skip_to(&mut self, to: u64) {
        if to <= self.expected {
            return;
        }
        let from = self.expected.max(to.saturating_sub(RECORD_SIZE));
        for s in from..to {
            self.forwarded[bit_word(s)] &= !bit_mask(s);
        }
        self.stats.gaps_skipped += to - self.expected;
        self.expected = to;
    }

    fn mark_forwarded(&mut self, seq: u64) {
        self.forwarded[bit_word(seq)] |= bit_mask(seq);
    }

    fn was_forwarded(&self, seq: u64) -> bool {
        self.forwarded[bit_word(seq)] & bit_mask(seq) != 0
    }
}

/// Ring index of a sequence number (ro_fixed.c `seqno % rbuf_size`).
fn slot(seq: u64) -> usize {
    (seq % RING_SIZE) as usize
}

fn bit_word(seq: u64) -> usize {
    ((seq % RECORD_SIZE) / 64) as usize
}

fn bit_mask(seq: u64) -> u64 {
    1 << (seq % 64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const MS: u64 = 1_000_000;

    fn fixed() -> Reorder<u64> {
        Reorder::new(ReorderConfig {
            kind: ReorderKind::ActiveFixed {
                timeout_ns: FIXED_TIMEOUT_NS,
            },
            ..ReorderConfig::default()
        })
    }

    /// Feed `seq` (the item is its own number) and return what came out.
    fn arrive(r: &mut Reorder<u64>, now: u64, seq: u64) -> Vec<(u64, Fate)> {
        let mut out = Vec::new();
        r.on_arrival(now, seq, seq, LatencySpread::default(), &mut out);
        out
    }

    fn in_order(seqs: &[u64]) -> Vec<(u64, Fate)> {
        seqs.iter().map(|&s| (s, Fate::InOrder)).collect()
    }

    #[test]
    fn passive_forwards_every_packet_at_once() {
        // ro_default.c do_reorder_default: forward immediately, no buffer, no timer
        let mut r = Reorder::new(ReorderConfig::default());
        assert_eq!(arrive(&mut r, 0, 0), in_order(&[0]));
        assert_eq!(arrive(&mut r, 1, 2), in_order(&[2]));
        assert_eq!(arrive(&mut r, 2, 1), vec![(1, Fate::Late)]);
        assert_eq!(arrive(&mut r, 3, 3), in_order(&[3]));
        assert_eq!((r.buffered(), r.deadline()), (0, None));
        // our rule: a copy is dropped in passive mode too
        assert_eq!(arrive(&mut r, 4, 2), vec![(2, Fate::DroppedDuplicate)]);
        let st = r.stats();
        assert_eq!((st.forwarded_in_order, st.forwarded_late), (3, 1));
        assert_eq!((st.gaps_skipped, st.max_buffered), (1, 0));
    }

    #[test]
    fn a_gap_filled_within_the_timeout_is_delivered_in_order() {
        // ro_fixed.c: arrival > expected is buffered; when the expected one arrives it is
        // forwarded and rbuf_flush forwards the consecutive buffered ones
        let mut r = fixed();
        assert_eq!(arrive(&mut r, 0, 0), in_order(&[0]));
        assert!(arrive(&mut r, MS, 2).is_empty());
        assert!(arrive(&mut r, 2 * MS, 3).is_empty());
        assert_eq!(r.buffered(), 2);
        assert_eq!(arrive(&mut r, 15 * MS, 1), in_order(&[1, 2, 3]));
        assert_eq!((r.buffered(), r.stats().gaps_skipped), (0, 0));
    }

    #[test]
    fn a_gap_is_skipped_on_the_first_arrival_after_the_timeout() {
        // ro_fixed.c rbuf_flush: after the flush, the lowest buffered packet is forwarded if
        // abs_to <= now (abs_to = arrival + 15 ms, FTO_DEF); one packet only, no loop
        let mut r = fixed();
        arrive(&mut r, 0, 0);
        assert!(arrive(&mut r, MS, 2).is_empty()); // times out at 16 ms
        assert!(arrive(&mut r, 2 * MS, 3).is_empty()); // times out at 17 ms
        assert!(arrive(&mut r, 16 * MS - 1, 5).is_empty());
        assert_eq!(arrive(&mut r, 16 * MS, 6), in_order(&[2]));
        assert_eq!((r.buffered(), r.stats().gaps_skipped), (3, 1));
        // 3 is now the expected number and still buffered: a copy of it is dropped, then the
        // flush forwards the consecutive ones; 5 waits for 4 again
        let copy_then_flush = vec![(3, Fate::DroppedDuplicate), (3, Fate::InOrder)];
        assert_eq!(arrive(&mut r, 16 * MS + 1, 3), copy_then_flush);
        assert_eq!(r.buffered(), 2);
        // the gap given up arrives late: forwarded (drop_lost = 0)
        assert_eq!(arrive(&mut r, 17 * MS, 1), vec![(1, Fate::Late)]);
    }

    #[test]
    fn a_late_packet_is_dropped_with_drop_late() {
        // ro_fixed.c: arrival < expected is dropped when drop_lost is set
        let mut r = Reorder::new(ReorderConfig {
            drop_late: true,
            ..fixed().cfg
        });
        arrive(&mut r, 0, 0);
        arrive(&mut r, MS, 2);
        assert_eq!(arrive(&mut r, 20 * MS, 3), in_order(&[2]));
        assert_eq!(arrive(&mut r, 21 * MS, 1), vec![(1, Fate::DroppedLate)]);
        assert_eq!(r.stats().dropped_late, 1);
    }

    #[test]
    fn the_idle_expiry_flushes_the_whole_buffer_after_50_ms() {
        // ro_fixed.c: the expiry timer (EXP_TO = 50 ms) is re-armed by every arrival and
        // forwards every buffered packet when it fires
        let mut r = fixed();
        arrive(&mut r, 0, 0);
        arrive(&mut r, MS, 2);
        arrive(&mut r, 2 * MS, 5);
        assert_eq!(r.deadline(), Some(52 * MS));
        let mut out = Vec::new();
        r.on_expiry(52 * MS - 1, &mut out);
        assert!(out.is_empty());
        r.on_expiry(52 * MS, &mut out);
        assert_eq!(out, in_order(&[2, 5]));
        assert_eq!((r.buffered(), r.deadline()), (0, None));
        assert_eq!(r.stats().gaps_skipped, 3);
        assert_eq!(arrive(&mut r, 53 * MS, 6), in_order(&[6]));
    }

    #[test]
    fn the_adaptive_timeout_is_the_latency_spread_plus_offset_capped() {
        // ro_active.c get_adaptive_to: min(max_lat - min_lat + to_off, ato_max)
        let mut r = Reorder::new(ReorderConfig {
            kind: ReorderKind::ActiveAdaptive {
                offset_ns: ADAPTIVE_OFFSET_NS,
                max_ns: ADAPTIVE_MAX_NS,
            },
            ..ReorderConfig::default()
        });
        let spread = LatencySpread {
            min_ns: 10 * MS,
            max_ns: 30 * MS,
        };
        let wide = LatencySpread {
            min_ns: 0,
            max_ns: 500 * MS,
        };
        let mut out = Vec::new();
        r.on_arrival(0, 2, 2, spread, &mut out); // times out at 25 ms
        r.on_arrival(MS, 4, 4, wide, &mut out); // times out at 101 ms (cap 100 ms)
        r.on_arrival(25 * MS - 1, 6, 6, spread, &mut out);
        assert!(out.is_empty());
        r.on_arrival(25 * MS, 7, 7, spread, &mut out);
        assert_eq!(out, in_order(&[2]));
        out.clear();
        r.on_arrival(101 * MS - 1, 9, 9, spread, &mut out);
        assert!(out.is_empty());
        r.on_arrival(101 * MS, 10, 10, spread, &mut out);
        assert_eq!(out, in_order(&[4]));
    }

    #[test]
    fn copies_are_dropped() {
        // ro_active.c rbuf_insert with drop_dup for a buffered copy; our record for a copy of
        // a forwarded packet (Linux would forward it again as late)
        let mut r = fixed();
        arrive(&mut r, 0, 0);
        assert_eq!(arrive(&mut r, 1, 0), vec![(0, Fate::DroppedDuplicate)]);
        arrive(&mut r, 2, 2);
        assert_eq!(arrive(&mut r, 3, 2), vec![(2, Fate::DroppedDuplicate)]);
        assert_eq!(arrive(&mut r, 4, 1), in_order(&[1, 2]));
        assert_eq!(r.stats().dropped_duplicate, 2);
    }

    #[test]
    fn an_arrival_beyond_the_ring_slides_the_window() {
        // ro_fixed.c RBUF_SIZE = 2048: the ring holds [expected, expected + 2048); beyond it
        // the gaps below the new window are given up and the packets there forwarded in order
        let mut r = fixed();
        arrive(&mut r, 0, 0);
        arrive(&mut r, 1, 5);
        arrive(&mut r, 2, 2047);
        assert_eq!(arrive(&mut r, 3, 2048 + 10), in_order(&[5]));
        assert_eq!(r.buffered(), 2);
        assert_eq!(r.stats().gaps_skipped, 4 + 5);
        assert_eq!(arrive(&mut r, 4, 3), vec![(3, Fate::Late)]);
    }

    /// Drive `r` with `n` packets, each sent once or twice, arriving in a shuffled order, with
    /// the idle expiry fired when due; returns every release as (packet, copy, fate).
    fn run_random(r: &mut Reorder<(u64, u8)>, seed: u64, n: u64) -> Vec<((u64, u8), Fate)> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut arrivals = Vec::new();
        let mut sent = 0;
        for seq in 0..n {
            // a packet every 2 us (the 30 ms path skew spans more than the ring), now and then
            // a pause longer than the idle expiry
            sent += if rng.gen_bool(0.001) {
                80 * MS
            } else {
                MS / 500
            };
            // one or two copies over paths of 10 and 40 ms with jitter, 5 % lost
            for copy in 0..rng.gen_range(1..=2u8) {
                if rng.gen_bool(0.05) {
                    continue;
                }
                let delay = [10 * MS, 40 * MS][rng.gen_range(0..2)] + rng.gen_range(0..MS);
                arrivals.push((sent + delay, seq, copy));
            }
        }
        arrivals.sort();
        let spread = LatencySpread {
            min_ns: 10 * MS,
            max_ns: 40 * MS,
        };
        let mut out = Vec::new();
        for &(t, seq, copy) in &arrivals {
            if let Some(d) = r.deadline().filter(|&d| d <= t) {
                r.on_expiry(d, &mut out);
            }
            r.on_arrival(t, seq, (seq, copy), spread, &mut out);
            assert!(r.buffered() <= RING_SIZE as usize);
        }
        if let Some(d) = r.deadline() {
            r.on_expiry(d, &mut out);
        }
        assert_eq!(
            out.len(),
            arrivals.len(),
            "every item released exactly once"
        );
        let mut released: Vec<(u64, u8)> = out.iter().map(|&(item, _)| item).collect();
        released.sort();
        let mut given: Vec<(u64, u8)> = arrivals.iter().map(|&(_, s, c)| (s, c)).collect();
        given.sort();
        assert_eq!(released, given);
        out
    }

    #[test]
    fn random_copies_and_reordering_never_deliver_twice() {
        // every mode: no number forwarded twice (copies dropped), every item released exactly
        // once, in-order releases strictly increasing, nothing left buffered
        let kinds = [
            ReorderKind::Passive,
            ReorderKind::ActiveFixed {
                timeout_ns: FIXED_TIMEOUT_NS,
            },
            ReorderKind::ActiveAdaptive {
                offset_ns: ADAPTIVE_OFFSET_NS,
                max_ns: ADAPTIVE_MAX_NS,
            },
        ];
        for (seed, kind) in kinds.into_iter().enumerate() {
            for drop_late in [false, true] {
                let mut r = Reorder::new(ReorderConfig {
                    kind,
                    drop_late,
                    idle_expiry_ns: IDLE_EXPIRY_NS,
                });
                let out = run_random(&mut r, seed as u64, 20_000);
                let mut forwarded: Vec<u64> = out
                    .iter()
                    .filter(|(_, f)| matches!(f, Fate::InOrder | Fate::Late))
                    .map(|&((seq, _), _)| seq)
                    .collect();
                let in_order: Vec<u64> = out
                    .iter()
                    .filter(|(_, f)| *f == Fate::InOrder)
                    .map(|&((seq, _), _)| seq)
                    .collect();
                assert!(in_order.windows(2).all(|w| w[0] < w[1]), "{kind:?}");
                let n = forwarded.len();
                forwarded.sort();
                forwarded.dedup();
                assert_eq!(forwarded.len(), n, "{kind:?} drop_late {drop_late}");
                let st = r.stats();
                assert!(st.dropped_duplicate > 0 && st.gaps_skipped > 0, "{kind:?}");
                assert!(st.forwarded_late + st.dropped_late > 0, "{kind:?}");
                assert_eq!(r.buffered(), 0);
            }
        }
    }
}
