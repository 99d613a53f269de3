//! QUIC loss-recovery bookkeeping that the window-based controllers share (`aimd` and the
//! Reno family on it, `cubic`, `westwood`, `siad`, `bbr2`), so it exists once.
//!
//! Owns [`RecoveryEpoch`] (RFC 9002 §7.3.2: one window reduction per recovery period, keyed on
//! send times), [`AdditiveIncrease`] (the byte-exact "one MSS per window acknowledged"
//! accumulator of RFC 5681 §3.1 eq. (3)), [`INFINITE`] (the initial slow-start threshold, RFC
//! 9002 §7.3.1) and [`ssthresh_value`] (how a threshold is traced). See `docs/newreno.md`.

use crate::controller::Instant;

/// QUIC recovery-period bookkeeping (RFC 9002 §7.3.2): one window reduction per recovery
/// period, where the period starts when a congestion event is acted on and ends when a packet
/// sent after that moment is acknowledged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RecoveryEpoch {
    /// `congestion_recovery_start_time` of RFC 9002 Appendix B; `None` is "never" (the RFC's 0,
    /// which would wrongly cover packets sent at time zero).
    start: Option<Instant>,
    /// Whether no packet sent after `start` has been acknowledged yet.
    active: bool,
}

impl RecoveryEpoch {
    /// Whether a packet sent at `sent_time` was sent before the current recovery period began
    /// (RFC 9002 Appendix B `InCongestionRecovery`).
    fn covers(&self, sent_time: Instant) -> bool {
        self.start.is_some_and(|start| sent_time <= start)
    }

    /// A congestion signal about packets sent up to `sent_time`: returns true if it starts a
    /// new recovery period at `now` (the caller then reduces its window), false if the
    /// packets were sent before the current period began and the signal is ignored.
    pub(crate) fn on_congestion(&mut self, now: Instant, sent_time: Instant) -> bool {
        if self.covers(sent_time) {
            return false;
        }
        self.start = Some(now);
        self.active = true;
        true
    }

    /// An ACK whose newest acknowledged packet was sent at `sent_time`: returns whether the
    /// ACK may grow the window, and leaves recovery on the first ACK of a packet sent after
    /// the period began (RFC 9002 §7.3.2).
    pub(crate) fn on_ack(&mut self, sent_time: Instant) -> bool {
        if self.covers(sent_time) {
            return false;
        }
        self.active = false;
        true
    }

    /// Whether the sender is in a recovery period.
    pub(crate) fn in_recovery(&self) -> bool {
        self.active
    }

    /// Forgets the recovery period (RFC 9002 Appendix B on persistent congestion), so the
    /// next congestion signal reduces the window again.
    pub(crate) fn clear(&mut self) {
        *self = RecoveryEpoch::default();
    }
}

/// Byte-exact additive increase: one `mss` for every `window` bytes acknowledged, the
/// fractional part carried in a byte counter (RFC 5681 §3.1 eq. (3) with byte counting, as
/// RFC 9002 §7.3.3 and Linux `tcp_cong_avoid_ai` do).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AdditiveIncrease {
    /// Acknowledged bytes not yet turned into window growth.
    acked: u64,
}

impl AdditiveIncrease {
    /// Credits `acked` bytes against a window of `window` bytes; returns the bytes to add to
    /// the window.
    pub(crate) fn on_ack(&mut self, acked: u64, window: u64, mss: u64) -> u64 {
        let window = window.max(1);
        self.acked = self.acked.saturating_add(acked);
        let steps = self.acked / window;
        self.acked -= steps * window;
        steps.saturating_mul(mss)
    }

    /// Drops the carried credit (after a window reduction it was earned against a larger
    /// window).
    pub(crate) fn reset(&mut self) {
        self.acked = 0;
    }
}

/// "No threshold yet": RFC 9002 §7.3.1 starts with an infinite slow-start threshold.
pub(crate) const INFINITE: u64 = u64::MAX;

/// The traced value of a slow-start threshold: bytes, or -1 while it is infinite.
pub(crate) fn ssthresh_value(ssthresh: u64) -> f64 {
    if ssthresh == INFINITE {
        -1.0
    } else {
        ssthresh as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additive_increase_carries_fractions() {
        let mut ai = AdditiveIncrease::default();
        assert_eq!(ai.on_ack(2999, 3000, 100), 0);
        assert_eq!(ai.on_ack(1, 3000, 100), 100);
        // A stretch ACK of several windows adds several MSS and keeps the remainder.
        assert_eq!(ai.on_ack(7000, 3000, 100), 200);
        assert_eq!(ai.on_ack(2000, 3000, 100), 100);
        ai.reset();
        assert_eq!(ai.on_ack(2999, 3000, 100), 0);
    }
}
