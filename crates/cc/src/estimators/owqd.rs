//! One-way queuing-delay (OWQD) estimator of QUIC-DC (QUIC-DC paper, eq. (3)-(5); as in the
//! authors' mvfst code, b4lt0/qw `WestwoodOWD.cpp` `updateOneWayDelay`).
//!
//! This module owns [`OwqdEstimator`]. Each sample is a packet's send time on the sender's clock
//! and its receive time on the receiver's clock. The one-way delay OWD_i = t_r,i - t_s,i (eq. (3))
//! contains the unknown offset between the two clocks, but the variation between consecutive
//! samples, OWDV_i = (t_r,i - t_r,i-1) - (t_s,i - t_s,i-1) (eq. (4)), does not. The queuing delay
//! is the running sum of the variations (eq. (5)), clamped at zero: it measures the one-way delay
//! relative to the last reset, assuming the queue was empty then (see `docs/quic_dc.md`).

use crate::controller::{Instant, OneWayDelaySample};
use std::time::Duration;

/// Running one-way queuing-delay estimate from receiver timestamps (QUIC-DC eq. (3)-(5)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwqdEstimator {
    /// The last sample used: the reference of the next variation.
    last: Option<OneWayDelaySample>,
    /// OWQD in nanoseconds, never negative.
    owqd_nanos: u64,
}

/// Signed nanoseconds from `earlier` to `later` (negative when `later` is earlier).
fn signed_nanos(later: Instant, earlier: Instant) -> i128 {
    i128::from(later.as_nanos()) - i128::from(earlier.as_nanos())
}

impl OwqdEstimator {
    /// An estimator with no samples and zero queuing delay.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one sample and returns the updated queuing delay. A sample whose packet number is
    /// not greater than that of the last sample used (a repeated ACK, reordering) is ignored.
    pub fn on_sample(&mut self, sample: &OneWayDelaySample) -> Duration {
        match self.last {
            Some(last) if sample.packet_number <= last.packet_number => return self.value(),
            Some(last) => {
                // QUIC-DC eq. (4): OWDV_i = (t_r,i - t_r,i-1) - (t_s,i - t_s,i-1).
                let owdv = signed_nanos(sample.receive_time, last.receive_time)
                    - signed_nanos(sample.sent_time, last.sent_time);
                // QUIC-DC eq. (5): OWQD_i = OWQD_i-1 + OWDV_i, clamped at 0 (WestwoodOWD.cpp
                // updateOneWayDelay).
                let owqd = i128::from(self.owqd_nanos) + owdv;
                self.owqd_nanos = u64::try_from(owqd.max(0)).unwrap_or(u64::MAX);
            }
            // The first sample only sets the reference: eq. (4) needs a predecessor.
            None => {}
        }
        self.last = Some(*sample);
        self.value()
    }

    /// The current one-way queuing delay.
    pub fn value(&self) -> Duration {
        Duration::from_nanos(self.owqd_nanos)
    }

    /// Sets the queuing delay to zero (after a congestion reaction); the last sample stays the
    /// reference, so the next variation is measured from it.
    pub fn reset(&mut self) {
        self.owqd_nanos = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Packet `pn` sent at `sent_ms` ms (sender clock) and received `owd_us` µs later on a
    /// receiver clock `offset_ns` ahead of the sender's.
    fn sample(pn: u64, sent_ms: u64, owd_us: u64, offset_ns: u64) -> OneWayDelaySample {
        let sent = sent_ms * MS;
        OneWayDelaySample {
            packet_number: pn,
            sent_time: Instant::from_nanos(sent),
            receive_time: Instant::from_nanos(sent + owd_us * 1_000 + offset_ns),
        }
    }

    /// One-way delays in µs of a path with 25 ms propagation whose queue grows by 0.5 ms per
    /// packet for ten packets (to 5 ms), then drains by 1 ms per packet.
    fn build_then_drain() -> Vec<u64> {
        let mut owd = vec![25_000];
        owd.extend((1..=10).map(|i| 25_000 + 500 * i));
        owd.extend((1..=8).map(|i| 30_000u64.saturating_sub(1_000 * i).max(25_000)));
        owd
    }

    #[test]
    fn first_sample_is_only_a_reference() {
        let mut e = OwqdEstimator::new();
        assert_eq!(e.value(), Duration::ZERO);
        assert_eq!(e.on_sample(&sample(1, 0, 40_000, 0)), Duration::ZERO);
    }

    #[test]
    fn queue_build_up_is_measured() {
        // Eq. (5) telescopes: OWQD = OWD_last - OWD_first = 5 ms.
        let mut e = OwqdEstimator::new();
        let owd = build_then_drain();
        let mut value = Duration::ZERO;
        for (i, d) in owd.iter().take(11).enumerate() {
            value = e.on_sample(&sample(i as u64, i as u64, *d, 0));
            assert_eq!(value, Duration::from_micros(500 * i as u64));
        }
        assert_eq!(value, Duration::from_millis(5));
    }

    #[test]
    fn constant_clock_offset_cancels() {
        // Eq. (4): the receiver clock 1000 s ahead changes every OWD_i, not their differences.
        let offset = 1_000 * 1_000 * MS;
        let mut synced = OwqdEstimator::new();
        let mut skewed = OwqdEstimator::new();
        for (i, d) in build_then_drain().iter().enumerate() {
            let a = synced.on_sample(&sample(i as u64, i as u64, *d, 0));
            let b = skewed.on_sample(&sample(i as u64, i as u64, *d, offset));
            assert_eq!(a, b, "sample {i}");
        }
        // A constant delay with the offset leaves the estimate at zero.
        let mut e = OwqdEstimator::new();
        for i in 0..20 {
            assert_eq!(e.on_sample(&sample(i, i, 25_000, offset)), Duration::ZERO);
        }
    }

    #[test]
    fn drain_returns_to_zero_and_never_below() {
        let mut e = OwqdEstimator::new();
        let owd = build_then_drain();
        let mut previous = Duration::ZERO;
        for (i, d) in owd.iter().enumerate() {
            let v = e.on_sample(&sample(i as u64, i as u64, *d, 0));
            if i > 10 {
                assert!(v <= previous, "draining must not raise the estimate");
                assert_eq!(v, Duration::from_micros(*d - 25_000));
            }
            previous = v;
        }
        assert_eq!(e.value(), Duration::ZERO);
        // A drop below the reference delay (e.g. reordering) is clamped at zero, and the next
        // rise is counted from the clamp (WestwoodOWD.cpp updateOneWayDelay: owd >= 0).
        let n = owd.len() as u64;
        assert_eq!(e.on_sample(&sample(n, n, 20_000, 0)), Duration::ZERO);
        assert_eq!(
            e.on_sample(&sample(n + 1, n + 1, 21_000, 0)),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn reset_then_rebuild_measures_from_last_sample() {
        let mut e = OwqdEstimator::new();
        for i in 0..=10u64 {
            e.on_sample(&sample(i, i, 25_000 + 500 * i, 0));
        }
        assert_eq!(e.value(), Duration::from_millis(5));
        e.reset();
        assert_eq!(e.value(), Duration::ZERO);
        // The queue keeps growing by 2 ms after the reset: only that growth is counted.
        assert_eq!(
            e.on_sample(&sample(11, 11, 32_000, 0)),
            Duration::from_millis(2)
        );
    }

    #[test]
    fn old_and_repeated_packet_numbers_are_ignored() {
        let mut e = OwqdEstimator::new();
        e.on_sample(&sample(5, 0, 25_000, 0));
        assert_eq!(
            e.on_sample(&sample(6, 1, 28_000, 0)),
            Duration::from_millis(3)
        );
        // A repeated ACK of packet 6 and a late packet 4 change nothing.
        assert_eq!(
            e.on_sample(&sample(6, 1, 40_000, 0)),
            Duration::from_millis(3)
        );
        assert_eq!(
            e.on_sample(&sample(4, 0, 90_000, 0)),
            Duration::from_millis(3)
        );
        // The next new packet is measured against packet 6, the last one used.
        assert_eq!(
            e.on_sample(&sample(7, 2, 29_000, 0)),
            Duration::from_millis(4)
        );
    }
}
