//! Linux's classic HyStart for CUBIC's slow start, as `net/ipv4/tcp_cubic.c` runs it
//! (`hystart_update`, `bictcp_hystart_reset`, `hystart_ack_delay`, with `hystart_detect` = ACK
//! train and delay, both on by default): Ha and Rhee, "Taming the elephants: New TCP slow
//! start", Computer Networks 55(9), 2011. It leaves slow start (ssthresh = cwnd) when either
//! test fires:
//!
//! - **ACK train**: ACKs of one round keep coming at most `hystart_ack_delta_us` (2 ms) apart
//!   for longer than the minimum delay (plus a cushion, below), halved when the sender does not
//!   pace: the round's flight already fills the pipe.
//! - **Delay**: after `HYSTART_MIN_SAMPLES` (8) RTT samples in a round, their minimum exceeds
//!   the connection's minimum by `HYSTART_DELAY_THRESH(delay_min / 8)`, clamped to 4-16 ms.
//!
//! Neither runs below `hystart_low_window` (16 packets). A round ends at the first ACK of a
//! packet sent after it began (Linux: `snd_una` past the `end_seq` noted at the round's start).
//! The cushion is `hystart_ack_delay`: min(1 ms, 4 x 64 KB / pacing rate), with Linux's
//! slow-start pacing rate, 2 cwnd / srtt (`tcp_pacing_ss_ratio` 200 %).

use crate::controller::{AckEvent, Instant};
use std::time::Duration;

/// `hystart_low_window`: packets below which HyStart does not run.
const LOW_WINDOW_PACKETS: u64 = 16;
/// `hystart_ack_delta_us`: the longest gap between two ACKs of a train.
const ACK_DELTA: Duration = Duration::from_millis(2);
/// `HYSTART_MIN_SAMPLES`: RTT samples of a round before the delay test.
const MIN_SAMPLES: u32 = 8;
/// `HYSTART_DELAY_MIN` and `HYSTART_DELAY_MAX`: the delay threshold's clamp.
const DELAY_MIN: Duration = Duration::from_millis(4);
const DELAY_MAX: Duration = Duration::from_millis(16);
/// `hystart_ack_delay`: `GSO_MAX_SIZE` (64 KB) four times over the pacing rate, at most 1 ms.
const GSO_BYTES: f64 = 4.0 * 65_536.0;
const MAX_CUSHION: Duration = Duration::from_millis(1);

/// Classic HyStart's state for one connection.
#[derive(Clone, Copy, Debug)]
pub(super) struct LinuxHyStart {
    /// Whether the sender paces (Linux: `sk_pacing_status` not `SK_PACING_NONE`).
    paced: bool,
    /// `hystart_low_window` in bytes.
    low_window: u64,
    /// `round_start`; `None` before the first ACK.
    round_start: Option<Instant>,
    /// `last_ack`: the latest ACK of the current train.
    last_ack: Instant,
    /// `curr_rtt`: the round's smallest RTT sample; `None` is `~0U`.
    curr_rtt: Option<Duration>,
    /// `sample_cnt`.
    sample_cnt: u32,
    /// `delay_min`: the connection's smallest RTT sample.
    delay_min: Option<Duration>,
}

impl LinuxHyStart {
    /// HyStart for packets of `mss` bytes, with or without pacing.
    pub(super) fn new(mss: u64, paced: bool) -> Self {
        LinuxHyStart {
            paced,
            low_window: LOW_WINDOW_PACKETS * mss,
            round_start: None,
            last_ack: Instant::ZERO,
            curr_rtt: None,
            sample_cnt: 0,
            delay_min: None,
        }
    }

    /// One ACK in slow start at window `cwnd`; `true` when slow start should end here.
    pub(super) fn on_ack(&mut self, now: Instant, ack: &AckEvent, cwnd: u64) -> bool {
        // cubictcp_acked: only ACKs with an RTT sample reach hystart_update.
        let Some(delay) = ack.rtt_sample else {
            return false;
        };
        let delay_min = self.delay_min.map_or(delay, |m| m.min(delay));
        self.delay_min = Some(delay_min);
        let round_ended = self
            .round_start
            .is_none_or(|start| ack.largest_acked_sent_time >= start);
        if round_ended {
            // bictcp_hystart_reset.
            self.round_start = Some(now);
            self.last_ack = now;
            self.curr_rtt = None;
            self.sample_cnt = 0;
        }
        if cwnd < self.low_window {
            return false;
        }
        // Both tests run on every ACK (each keeps its own state), as in hystart_update: `|`,
        // not `||`.
        self.ack_train(now, delay_min, cwnd, ack) | self.delay_increase(delay, delay_min)
    }

    /// The ACK-train test (`HYSTART_ACK_TRAIN`).
    fn ack_train(&mut self, now: Instant, delay_min: Duration, cwnd: u64, ack: &AckEvent) -> bool {
        if now - self.last_ack > ACK_DELTA {
            return false;
        }
        self.last_ack = now;
        let mut threshold = delay_min + cushion(cwnd, ack.smoothed_rtt);
        if !self.paced {
            // Pacing may have spread the round's packets over up to RTT/2.
            threshold /= 2;
        }
        self.round_start
            .is_some_and(|start| now - start > threshold)
    }

    /// The delay test (`HYSTART_DELAY`).
    fn delay_increase(&mut self, delay: Duration, delay_min: Duration) -> bool {
        let curr = self.curr_rtt.map_or(delay, |c| c.min(delay));
        self.curr_rtt = Some(curr);
        if self.sample_cnt < MIN_SAMPLES {
            self.sample_cnt += 1;
            return false;
        }
        // HYSTART_DELAY_THRESH(delay_min >> 3) = clamp(delay_min / 8, 4 ms, 16 ms).
        curr > delay_min + (delay_min / 8).clamp(DELAY_MIN, DELAY_MAX)
    }
}

/// `hystart_ack_delay`: min(1 ms, 4 x 64 KB / pacing rate), Linux's slow-start pacing rate
/// being 2 cwnd / srtt; zero before an RTT is known (Linux: no pacing rate yet).
fn cushion(cwnd: u64, srtt: Option<Duration>) -> Duration {
    let Some(srtt) = srtt.filter(|s| !s.is_zero()) else {
        return Duration::ZERO;
    };
    let rate = 2.0 * cwnd as f64 / srtt.as_secs_f64();
    if rate <= 0.0 {
        return Duration::ZERO;
    }
    Duration::from_secs_f64(GSO_BYTES / rate).min(MAX_CUSHION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, at};

    const MSS: u64 = 1500;

    /// An ACK at `now_us` of a packet sent at `sent_us` with RTT sample `rtt_us`.
    fn ack(sent_us: u64, rtt_us: u64) -> AckEvent {
        AckEvent {
            rtt_sample: Some(Duration::from_micros(rtt_us)),
            smoothed_rtt: Some(Duration::from_micros(rtt_us)),
            largest_acked_sent_time: Instant::from_nanos(sent_us * 1000),
            ..testing::ack(MSS, at(0), 0)
        }
    }

    fn us(t: u64) -> Instant {
        Instant::from_nanos(t * 1000)
    }

    #[test]
    fn an_ack_train_longer_than_half_the_minimum_delay_ends_slow_start_unpaced() {
        // tcp_cubic.c: unpaced, the threshold is (delay_min + cushion) / 2. RTT 40 ms, cwnd 32
        // packets: the cushion is min(1 ms, 262144 B / (2 x 48000 B / 40 ms)) = 1 ms, so the
        // train must last more than 20.5 ms. ACKs every 1 ms from the round's start at 100 ms.
        let mut h = LinuxHyStart::new(MSS, false);
        let cwnd = 32 * MSS;
        assert!(
            !h.on_ack(us(100_000), &ack(60_000, 40_000), cwnd),
            "the round starts"
        );
        let mut ended = None;
        for k in 1..=30 {
            if h.on_ack(us(100_000 + k * 1000), &ack(60_000 + k, 40_000), cwnd) {
                ended = Some(k);
                break;
            }
        }
        assert_eq!(
            ended,
            Some(21),
            "the first ACK more than 20.5 ms into the train"
        );
    }

    #[test]
    fn a_gap_breaks_the_train_and_a_small_window_never_tests() {
        let mut h = LinuxHyStart::new(MSS, false);
        let cwnd = 32 * MSS;
        h.on_ack(us(100_000), &ack(60_000, 40_000), cwnd);
        // ACKs 3 ms apart: no train, and the RTT never rises.
        for k in 1..=30 {
            assert!(!h.on_ack(us(100_000 + 3000 * k), &ack(60_000 + k, 40_000), cwnd));
        }
        let mut small = LinuxHyStart::new(MSS, false);
        for k in 0..=60 {
            let late = ack(60_000 + k, 80_000);
            assert!(!small.on_ack(us(100_000 + k * 1000), &late, 15 * MSS));
        }
    }

    #[test]
    fn eight_samples_above_the_minimum_by_the_clamped_eighth_end_slow_start() {
        // delay_min 40 ms: threshold 40 + clamp(5 ms, 4, 16) = 45 ms. Paced, with ACKs 3 ms
        // apart (no train). A round whose samples are all 46 ms ends slow start at its 9th
        // sample; one whose samples are 45 ms does not.
        for (rtt_us, ends) in [(46_000, true), (45_000, false)] {
            let mut h = LinuxHyStart::new(MSS, true);
            let cwnd = 32 * MSS;
            h.on_ack(us(0), &ack(0, 40_000), cwnd);
            // A new round: the first ACK of a packet sent after 0.
            let mut ended = None;
            for k in 1..=12u64 {
                if h.on_ack(us(100_000 + 3000 * k), &ack(1 + k, rtt_us), cwnd) {
                    ended = Some(k);
                    break;
                }
            }
            assert_eq!(ended.is_some(), ends, "rtt {rtt_us} us: {ended:?}");
            if ends {
                assert_eq!(ended, Some(9), "after 8 samples of the round");
            }
        }
    }
}
