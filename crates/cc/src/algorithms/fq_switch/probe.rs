//! The fair-queuing probe at flow start-up: two subflows ("legs") over the same path, the
//! slow one at rate r and the fast one at 2r, both doubling each round without loss, until a
//! round in which both lost; then eq. (1) tells a fair queue from a shared one.
//!
//! Source: M. Bachl, J. Fabini, T. Zseby, "Detecting Fair Queuing for Better Congestion Control",
//! arXiv:2010.08362, 2020 (FQ-detect), §III-A steps 1-4 and §VII (jittered pacing); the reference
//! code's behaviour (CN-TU/PCC-Uspace `src/app/pccclient.cpp`, `src/pcc/pcc_sender.cpp`).
//!
//! How a round runs (the paper says "every RTT"; the reference decides once per monitor
//! interval, about every 2.5 RTTs, and so do we):
//! - A round measures from its start for max(1.5 x smoothed RTT, the time the slow leg takes
//!   to send 10 packets) (the reference's monitor interval, pcc_sender.cpp
//!   `ComputeMonitorDuration`). Each leg counts the bytes it sends in the round, and packet
//!   by packet the bytes of those acknowledged and lost (a [`Ledger`] per leg says which
//!   packets an ACK or a loss event covers), as the reference's monitor intervals count their
//!   own packets.
//! - After the round's end the legs keep their rates until its packets are resolved: an ACK
//!   of a packet sent after the end has arrived on both legs, and 1.25 RTTs (past RFC 9002's
//!   9/8 RTT time threshold, which takes the larger of the smoothed and the latest RTT) have
//!   passed since the end. A leg that gets no such
//!   ACK within 3 smoothed RTTs plus 200 ms of the end (a leg losing everything: no ACK, so no
//!   loss is ever declared) counts every byte it sent in the round and that was neither
//!   acknowledged nor declared lost as lost.
//! - A round in which a leg loses for the first time is discarded and the rates are kept: the
//!   reference reports a "dummy" result for a flow's first loss and neither doubles nor
//!   decides on it (pcc_sender.cpp `OnCongestionEvent`). Otherwise: both legs lost → decide
//!   (eq. (1)); else double both rates (§III-A step 2). A round in which both legs lost
//!   everything says nothing about the queue (eq. (1) would be 0/0) and is discarded like a
//!   first-loss round. A new round starts.
//!   So a leg still below its fair share at a fair queue (the slow one, when r < C / 2 <
//!   2r) does not stop the doubling until it loses too.
//! - Pacing is jittered (§VII): each gap between two packets of a leg is the nominal gap
//!   scaled by a factor drawn uniformly from [1 - jitter, 1 + jitter] (the paper's [0.5, 1.5]
//!   at jitter 0.5; the reference's factor on the rate, U(0.5, 2), is not used: it raises the
//!   mean rate by 8 %). Jitter 0 paces exactly.
//! - The slow leg's schedule runs [`SLOW_LEG_LAG`] behind the fast leg's: its first gap is
//!   that much longer. Without jitter the legs' sends would otherwise coincide every slow
//!   gap, and which packet reaches a full buffer first would be decided by the simulator's
//!   event order. The paper saw the slow flow send "slightly after" the fast one (§VII), and
//!   that is what makes it lose everything at a full FIFO; with jitter the lag is lost in the
//!   noise.

use crate::controller::{Instant, Rate};
use crate::estimators::ledger::{Entry, Ledger};
use crate::estimators::monitor::STALE_RTTS;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

/// The slow leg and the fast leg.
pub const LEGS: usize = 2;
/// Packets the slow leg sends at least per round (pcc_sender.cpp `kMinimumPacketsPerInterval`).
const ROUND_PACKETS: u64 = 10;
/// A round lasts at least this many smoothed RTTs (pcc_sender.cpp `ComputeMonitorDuration`).
const ROUND_RTTS: f64 = 1.5;
/// How far the slow leg's sends trail the fast leg's (FQ-detect §VII: "slightly after").
pub const SLOW_LEG_LAG: Duration = Duration::from_micros(1);
/// Smoothed RTTs after a round's end by which its lost packets are declared (RFC 9002 §6.1.2
/// time threshold 9/8, with a margin).
const RESOLVE_RTTS: f64 = 1.25;
/// After this many smoothed RTTs plus [`SILENCE_FLOOR`] past a round's end, a leg that had no
/// ACK of a later packet is taken to have lost what was not acknowledged.
const SILENCE_RTTS: f64 = 3.0;
/// See [`SILENCE_RTTS`] (about RFC 9002's initial PTO floor).
const SILENCE_FLOOR: Duration = Duration::from_millis(200);

/// How the probe runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeConfig {
    /// The slow leg's first rate (the fast leg's is twice it).
    pub start_rate: Rate,
    /// Gap jitter: each gap is scaled by a factor uniform in [1 - jitter, 1 + jitter].
    pub jitter: f64,
    /// Eq. (1) above this means fair queuing (§III-A step 4: 1.5).
    pub cutoff: f64,
    /// Rounds after which the probe gives up and says "no fair queuing".
    pub max_rounds: u32,
    /// Packet size, bytes (for the round's minimum length).
    pub packet_bytes: u64,
    /// Seed of the jitter.
    pub seed: u64,
}

/// What the probe concluded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Whether the bottleneck is taken to be a fair queue.
    pub fair_queuing: bool,
    /// Eq. (1): (received / sent of the slow leg) / (received / sent of the fast leg) in the
    /// deciding round; NaN when the probe gave up.
    pub loss_ratio: f64,
    /// Fraction of each leg's bytes lost in the deciding round.
    pub leg_loss: [f64; LEGS],
    /// Both legs' bytes that arrived in the deciding round, per second of it.
    pub goodput: Rate,
    /// Rounds run.
    pub rounds: u32,
}

/// One round's counts.
#[derive(Clone, Copy, Debug)]
struct Round {
    /// Rounds finished before it (so unique per round).
    id: u32,
    start: Instant,
    end: Instant,
    sent: [u64; LEGS],
    acked: [u64; LEGS],
    lost: [u64; LEGS],
    acked_past_end: [bool; LEGS],
}

/// The probe's state, shared by its two legs.
#[derive(Debug)]
pub struct Probe {
    config: ProbeConfig,
    slow_rate: Rate,
    gap_factor: [f64; LEGS],
    rngs: [ChaCha8Rng; LEGS],
    srtt: [Option<Duration>; LEGS],
    latest: [Option<Duration>; LEGS],
    round: Option<Round>,
    /// Each leg's packets, tagged with the round they were counted in (if any).
    ledgers: [Ledger<Option<u32>>; LEGS],
    rounds: u32,
    lost_once: [bool; LEGS],
    outcome: Option<Outcome>,
}

impl Probe {
    /// A probe that starts with its first packet.
    pub fn new(config: ProbeConfig) -> Self {
        let rng = |leg: u64| {
            let mut r = ChaCha8Rng::seed_from_u64(config.seed);
            r.set_stream(leg);
            r
        };
        Probe {
            config,
            slow_rate: config.start_rate,
            gap_factor: [1.0; LEGS],
            rngs: [rng(0), rng(1)],
            srtt: [None; LEGS],
            latest: [None; LEGS],
            round: None,
            ledgers: [Ledger::new(), Ledger::new()],
            rounds: 0,
            lost_once: [false; LEGS],
            outcome: None,
        }
    }

    /// The conclusion, once there is one.
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Leg `leg`'s nominal rate (the slow leg's r, the fast leg's 2r).
    pub fn nominal_rate(&self, leg: usize) -> Rate {
        self.slow_rate.scaled((leg + 1) as f64)
    }

    /// The rate leg `leg` paces its next packet at: the nominal rate over the gap's jitter
    /// factor.
    pub fn pacing_rate(&self, leg: usize) -> Rate {
        self.nominal_rate(leg).scaled(1.0 / self.gap_factor[leg])
    }

    /// Rounds finished so far.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }

    /// Leg `leg` sent `bytes` at `now`.
    pub fn on_sent(&mut self, leg: usize, now: Instant, bytes: u64) {
        let j = self.config.jitter;
        // FQ-detect §VII: each gap scaled by a random factor in [1 - j, 1 + j].
        self.gap_factor[leg] = if j > 0.0 {
            self.rngs[leg].gen_range(1.0 - j..=1.0 + j)
        } else {
            1.0
        };
        if leg == 0 && self.round.is_none() {
            let gap = self.nominal_rate(0).time_for(bytes).unwrap_or_default();
            self.gap_factor[0] *= 1.0 + SLOW_LEG_LAG.as_secs_f64() / gap.as_secs_f64().max(1e-9);
        }
        if self.outcome.is_some() {
            return;
        }
        let round = match self.round {
            Some(r) => r,
            None => self.begin_round(now),
        };
        let counted = now < round.end;
        if counted {
            if let Some(r) = &mut self.round {
                r.sent[leg] += bytes;
            }
        }
        self.ledgers[leg].on_sent(now, bytes, counted.then_some(round.id));
    }

    /// Leg `leg` got an ACK at `now` of `packets`, the newest of them sent at `newest`, with
    /// the leg's smoothed and latest RTT.
    pub fn on_ack(
        &mut self,
        leg: usize,
        now: Instant,
        newest: Instant,
        packets: u64,
        (srtt, latest): (Option<Duration>, Option<Duration>),
    ) {
        self.srtt[leg] = srtt.or(self.srtt[leg]);
        self.latest[leg] = latest.or(self.latest[leg]);
        if let Some(r) = &mut self.round {
            r.acked_past_end[leg] |= newest >= r.end;
        }
        let round = &mut self.round;
        self.ledgers[leg].ack(newest, packets, |p| count(round, p, |r| &mut r.acked[leg]));
        // As monitor.rs: a packet never reported must not pin the ledger.
        let stale = self.loss_rtt() * STALE_RTTS;
        if stale > Duration::ZERO {
            self.ledgers[leg].forget_sent_before(newest, stale, |_| {});
        }
        self.advance(now);
    }

    /// Leg `leg` declared `packets` lost at `now`, the newest of them sent at `newest`.
    pub fn on_loss(&mut self, leg: usize, now: Instant, newest: Instant, packets: u64) {
        let round = &mut self.round;
        self.ledgers[leg].lose(newest, packets, |p| count(round, p, |r| &mut r.lost[leg]));
        self.advance(now);
    }

    fn srtt(&self) -> Duration {
        self.srtt
            .iter()
            .flatten()
            .max()
            .copied()
            .unwrap_or_default()
    }

    /// The larger of the legs' smoothed and latest RTTs: what RFC 9002's time threshold
    /// scales.
    fn loss_rtt(&self) -> Duration {
        self.latest
            .iter()
            .flatten()
            .max()
            .copied()
            .unwrap_or_default()
            .max(self.srtt())
    }

    fn begin_round(&mut self, now: Instant) -> Round {
        let packets = self
            .slow_rate
            .time_for(ROUND_PACKETS * self.config.packet_bytes);
        // pcc_sender.cpp ComputeMonitorDuration: max(1.5 x RTT, 10 packets at the current rate).
        let length = self
            .srtt()
            .mul_f64(ROUND_RTTS)
            .max(packets.unwrap_or_default());
        let round = Round {
            id: self.rounds,
            start: now,
            end: now + length,
            sent: [0; LEGS],
            acked: [0; LEGS],
            lost: [0; LEGS],
            acked_past_end: [false; LEGS],
        };
        self.round = Some(round);
        round
    }

    /// The round's counts once its packets are resolved at `now`, if they are.
    fn resolved(&self, r: &Round, now: Instant) -> Option<Round> {
        let srtt = self.loss_rtt();
        if now < r.end + srtt.mul_f64(RESOLVE_RTTS) {
            return None;
        }
        if r.acked_past_end.iter().all(|&a| a) {
            return Some(*r);
        }
        if now < r.end + srtt.mul_f64(SILENCE_RTTS) + SILENCE_FLOOR {
            return None;
        }
        let mut r = *r;
        for leg in 0..LEGS {
            if !r.acked_past_end[leg] {
                r.lost[leg] = r.sent[leg].saturating_sub(r.acked[leg]).max(r.lost[leg]);
            }
        }
        Some(r)
    }

    /// Decides on the current round once its packets are resolved.
    fn advance(&mut self, now: Instant) {
        if self.outcome.is_some() {
            return;
        }
        let Some(r) = self.round.and_then(|r| self.resolved(&r, now)) else {
            return;
        };
        self.rounds += 1;
        let lost = [r.lost[0] > 0, r.lost[1] > 0];
        let first_loss = (0..LEGS).any(|l| lost[l] && !self.lost_once[l]);
        for (once, lost) in self.lost_once.iter_mut().zip(lost) {
            *once |= lost;
        }
        let blackout = (0..LEGS).all(|l| r.lost[l] >= r.sent[l]);
        let discard = first_loss || blackout;
        if !discard && r.sent.iter().all(|&s| s > 0) && lost == [true, true] {
            self.outcome = Some(self.decide(&r));
            return;
        }
        if self.rounds >= self.config.max_rounds {
            self.outcome = Some(self.give_up(&r));
            return;
        }
        if !discard {
            // FQ-detect §III-A step 2: double both rates (pccclient.cpp wait_for_new_result:
            // also when only one leg lost).
            self.slow_rate = self.slow_rate.scaled(2.0);
        }
        self.begin_round(now);
    }

    fn leg_loss(r: &Round) -> [f64; LEGS] {
        let f = |leg: usize| (r.lost[leg] as f64 / r.sent[leg].max(1) as f64).min(1.0);
        [f(0), f(1)]
    }

    fn goodput(r: &Round, loss: [f64; LEGS]) -> Rate {
        let received: f64 = (0..LEGS).map(|l| r.sent[l] as f64 * (1.0 - loss[l])).sum();
        let secs = (r.end - r.start).as_secs_f64().max(1e-9);
        Rate::from_bytes_per_sec(received / secs)
    }

    fn decide(&self, r: &Round) -> Outcome {
        let loss = Self::leg_loss(r);
        // FQ-detect eq. (1): (recv1 / send1) / (recv2 / send2), receiving rate = sending rate
        // x (1 - loss) (pccclient.cpp wait_for_new_result).
        let (slow, fast) = (1.0 - loss[0], 1.0 - loss[1]);
        let loss_ratio = if fast > 0.0 {
            slow / fast
        } else {
            f64::INFINITY
        };
        Outcome {
            // FQ-detect §III-A step 4: above 1.5 means fair queuing.
            fair_queuing: loss_ratio > self.config.cutoff,
            loss_ratio,
            leg_loss: loss,
            goodput: Self::goodput(r, loss),
            rounds: self.rounds,
        }
    }

    fn give_up(&self, r: &Round) -> Outcome {
        let loss = Self::leg_loss(r);
        Outcome {
            fair_queuing: false,
            loss_ratio: f64::NAN,
            leg_loss: loss,
            goodput: Self::goodput(r, loss),
            rounds: self.rounds,
        }
    }
}

/// Adds packet `p`'s bytes to the counter `field` picks in `round`, if it was counted as sent
/// in it.
fn count(
    round: &mut Option<Round>,
    p: Entry<Option<u32>>,
    field: impl FnOnce(&mut Round) -> &mut u64,
) {
    if let Some(r) = round.as_mut().filter(|r| p.tag == Some(r.id)) {
        *field(r) += p.bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1500;

    fn config(jitter: f64) -> ProbeConfig {
        ProbeConfig {
            start_rate: Rate::from_bits_per_sec(1e6),
            jitter,
            cutoff: 1.5,
            max_rounds: 40,
            packet_bytes: MSS,
            seed: 7,
        }
    }

    fn ms(t: u64) -> Instant {
        Instant::from_nanos(t * 1_000_000)
    }

    const RTT: Duration = Duration::from_millis(20);

    /// One round: each leg sends `packets[leg]` packets during it (from `t0` ms), loses
    /// `lost[leg]` of them, and gets an ACK of a packet sent after the round's end once
    /// enough time has passed; returns the time (ms) the next round starts.
    fn round(p: &mut Probe, t0: u64, packets: [u64; 2], lost: [u64; 2]) -> u64 {
        for (leg, &n) in packets.iter().enumerate() {
            for _ in 0..n {
                p.on_sent(leg, ms(t0), MSS);
            }
        }
        let r = p.round.expect("a round runs");
        for (leg, &n) in lost.iter().enumerate().filter(|(_, &n)| n > 0) {
            p.on_loss(leg, ms(t0 + 1), ms(t0), n);
        }
        let done = (r.end + RTT.mul_f64(2.0)).as_nanos() / 1_000_000 + 1;
        for leg in 0..LEGS {
            // One ACK for the round's packets not lost and a packet sent at its end.
            p.on_sent(leg, r.end, MSS);
            let acked = packets[leg] - lost[leg] + 1;
            p.on_ack(leg, ms(done), r.end, acked, (Some(RTT), Some(RTT)));
        }
        done
    }

    #[test]
    fn rates_double_each_round_without_loss() {
        // FQ-detect §III-A step 2: "after every RTT, if no packet loss occurred, double".
        let mut p = Probe::new(config(0.0));
        assert_eq!(p.nominal_rate(0).bits_per_sec(), 1e6);
        assert_eq!(p.nominal_rate(1).bits_per_sec(), 2e6);
        let mut t = 0;
        for k in 1..=3 {
            t = round(&mut p, t, [10, 20], [0, 0]);
            assert_eq!(p.nominal_rate(0).bits_per_sec(), 1e6 * f64::from(1 << k));
        }
        assert!(p.outcome().is_none());
    }

    #[test]
    fn a_first_loss_round_is_discarded_then_eq_1_decides() {
        let mut p = Probe::new(config(0.0));
        // Both legs lose for the first time: kept rates, no decision (PCC-Uspace's dummy
        // result).
        let t = round(&mut p, 0, [10, 20], [1, 2]);
        assert!(p.outcome().is_none());
        assert_eq!(p.nominal_rate(0).bits_per_sec(), 1e6);
        // A fair queue: both legs receive the same, 8 of 10 and 8 of 20 packets; eq. (1) =
        // (8/10) / (8/20) = 2 > 1.5.
        round(&mut p, t, [10, 20], [2, 12]);
        let o = p.outcome().expect("decided");
        assert!((o.loss_ratio - 2.0).abs() < 1e-9, "{}", o.loss_ratio);
        assert!(o.fair_queuing);
        assert_eq!(o.leg_loss, [0.2, 0.6]);
    }

    #[test]
    fn equal_loss_fractions_mean_a_shared_queue() {
        // A shared FIFO drops both legs alike: eq. (1) = 1 < 1.5.
        let mut p = Probe::new(config(0.0));
        let t = round(&mut p, 0, [10, 20], [1, 1]);
        round(&mut p, t, [10, 20], [3, 6]);
        let o = p.outcome().expect("decided");
        assert!((o.loss_ratio - 1.0).abs() < 1e-9);
        assert!(!o.fair_queuing);
    }

    #[test]
    fn one_leg_losing_does_not_stop_the_doubling() {
        // At a fair queue the slow leg may stay under its fair share while the fast one loses:
        // the reference doubles on, after discarding the fast leg's first-loss round.
        let mut p = Probe::new(config(0.0));
        let t = round(&mut p, 0, [10, 20], [0, 5]);
        assert_eq!(p.nominal_rate(0).bits_per_sec(), 1e6);
        round(&mut p, t, [10, 20], [0, 5]);
        assert_eq!(p.nominal_rate(0).bits_per_sec(), 2e6);
        assert!(p.outcome().is_none());
    }

    #[test]
    fn a_round_where_both_legs_lost_everything_decides_nothing() {
        // Eq. (1) would be 0/0: an outage says nothing about the queue. The round is
        // discarded and the rates kept.
        let mut p = Probe::new(config(0.0));
        let t = round(&mut p, 0, [10, 20], [1, 1]);
        round(&mut p, t, [10, 20], [10, 20]);
        assert!(p.outcome().is_none());
        assert_eq!(p.nominal_rate(0).bits_per_sec(), 1e6);
    }

    #[test]
    fn a_loss_event_counts_only_the_packets_sent_in_the_round() {
        // The legs' packets sent after round 1's end belong to no round. A loss event that
        // covers one of them and one packet of round 2 adds one packet to round 2, not two.
        let mut p = Probe::new(config(0.0));
        for (leg, n) in [(0, 10), (1, 20)] {
            for _ in 0..n {
                p.on_sent(leg, ms(0), MSS);
            }
        }
        let r1 = p.round.expect("a round runs");
        for leg in 0..LEGS {
            p.on_sent(leg, r1.end, MSS);
            p.on_sent(leg, r1.end, MSS);
        }
        let done = r1.end + RTT.mul_f64(2.0);
        for (leg, n) in [(0, 10), (1, 20)] {
            p.on_ack(leg, done, ms(0), n, (Some(RTT), Some(RTT)));
            p.on_ack(leg, done, r1.end, 1, (Some(RTT), Some(RTT)));
        }
        let r2 = p.round.expect("round 2 runs");
        assert!(r2.start > r1.end, "round 1 resolved without loss");
        for _ in 0..10 {
            p.on_sent(0, r2.start, MSS);
        }
        p.on_loss(0, r2.start + RTT, r2.start, 2);
        let r2 = p.round.expect("round 2 still runs");
        assert_eq!(r2.lost, [MSS, 0]);
    }

    #[test]
    fn a_loss_event_declared_after_the_round_counts_its_packets_in_it() {
        // Its newest packet was sent after the round's end, but the three oldest it covers
        // were sent in the round: they count there.
        let mut p = Probe::new(config(0.0));
        for _ in 0..20 {
            p.on_sent(1, ms(0), MSS);
        }
        let r = p.round.expect("a round runs");
        p.on_sent(1, r.end, MSS);
        p.on_loss(1, r.end + RTT, r.end, 3);
        assert_eq!(p.round.expect("still running").lost, [0, 3 * MSS]);
    }

    #[test]
    fn a_silent_leg_loses_what_it_sent_and_was_not_acknowledged() {
        // After a first-loss round, the slow leg gets ACKs for 4 of its 10 packets and then
        // nothing: 6 of 10 lost. The fast leg loses 12 of 20: eq. (1) = 0.4 / 0.4 = 1.
        let mut p = Probe::new(config(0.0));
        let t = round(&mut p, 0, [10, 20], [1, 1]);
        for (leg, n) in [(0, 10), (1, 20)] {
            for _ in 0..n {
                p.on_sent(leg, ms(t), MSS);
            }
        }
        let r = p.round.expect("round 2 runs");
        p.on_ack(0, ms(t) + RTT, ms(t), 4, (Some(RTT), Some(RTT)));
        p.on_loss(1, ms(t) + RTT, ms(t), 12);
        p.on_sent(1, r.end, MSS);
        let late = r.end + RTT.mul_f64(SILENCE_RTTS) + SILENCE_FLOOR;
        p.on_ack(1, late, r.end, 9, (Some(RTT), Some(RTT)));
        let o = p.outcome().expect("decided");
        assert_eq!(o.leg_loss, [0.6, 0.6]);
        assert!(!o.fair_queuing);
    }

    #[test]
    fn a_silent_leg_counts_what_it_sent_as_lost() {
        // The slow leg loses everything: no ACK, so no loss is ever declared. After 3 RTTs
        // plus 200 ms its unacknowledged bytes of the round count as lost.
        let mut p = Probe::new(config(0.0));
        for _ in 0..10 {
            p.on_sent(0, ms(0), MSS);
        }
        for _ in 0..20 {
            p.on_sent(1, ms(0), MSS);
        }
        let r = p.round.expect("a round runs");
        let late = r.end + RTT.mul_f64(SILENCE_RTTS) + SILENCE_FLOOR;
        p.on_sent(1, r.end, MSS);
        p.on_ack(1, late, r.end, 1, (Some(RTT), Some(RTT)));
        assert_eq!(p.rounds(), 1);
        assert_eq!(p.lost_once, [true, false]);
    }

    #[test]
    fn jittered_gaps_stay_in_the_interval_and_repeat_for_a_seed() {
        // FQ-detect §VII: gaps in [0.5, 1.5] x nominal at jitter 0.5; same seed, same gaps.
        let gaps = |seed: u64| {
            let mut p = Probe::new(ProbeConfig {
                seed,
                ..config(0.5)
            });
            p.on_sent(1, ms(0), MSS);
            (0..200)
                .map(|_| {
                    p.on_sent(1, ms(1), MSS);
                    p.nominal_rate(1).bits_per_sec() / p.pacing_rate(1).bits_per_sec()
                })
                .collect::<Vec<f64>>()
        };
        let a = gaps(3);
        assert!(a.iter().all(|g| (0.5..=1.5).contains(g)));
        assert!(a.iter().any(|g| *g < 0.6) && a.iter().any(|g| *g > 1.4));
        assert_eq!(a, gaps(3));
        assert_ne!(a, gaps(4));
    }

    #[test]
    fn the_slow_leg_trails_the_fast_leg_by_its_lag() {
        let mut p = Probe::new(config(0.0));
        p.on_sent(0, ms(0), MSS);
        let gap = p.pacing_rate(0).time_for(MSS).expect("a rate");
        let nominal = p.nominal_rate(0).time_for(MSS).expect("a rate");
        let lag = gap.as_nanos() as i128 - nominal.as_nanos() as i128;
        assert!(
            (lag - SLOW_LEG_LAG.as_nanos() as i128).abs() <= 1,
            "{lag} ns"
        );
    }
}
