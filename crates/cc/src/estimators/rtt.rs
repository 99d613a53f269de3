//! RTT estimator: latest, minimum, smoothed RTT and its variation, as RFC 9002 §5 specifies
//! (which follows RFC 6298 with the peer's ACK delay taken into account).

use std::time::Duration;

/// RFC 9002 §6.2.2: the initial RTT before any sample, 333 ms.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// RFC 9002 §6.1.2: timer granularity, 1 ms.
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// RTT estimates of one path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttEstimator {
    latest: Option<Duration>,
    min: Option<Duration>,
    smoothed: Option<Duration>,
    var: Duration,
}

impl RttEstimator {
    /// An estimator with no samples.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one RTT sample (`latest_rtt`, ACK delay included) and the peer's reported ACK
    /// delay, already limited to its max_ack_delay by the caller.
    pub fn on_sample(&mut self, latest: Duration, ack_delay: Duration) {
        self.latest = Some(latest);
        // RFC 9002 §5.2: min_rtt ignores ACK delay.
        let min = self.min.map_or(latest, |m| m.min(latest));
        self.min = Some(min);
        let Some(smoothed) = self.smoothed else {
            // RFC 9002 §5.3: first sample.
            self.smoothed = Some(latest);
            self.var = latest / 2;
            return;
        };
        // RFC 9002 §5.3: subtract the ACK delay only if the result is not below min_rtt.
        let adjusted = if latest >= min + ack_delay {
            latest - ack_delay
        } else {
            latest
        };
        let deviation = smoothed.abs_diff(adjusted);
        // RFC 9002 §5.3: rttvar = 3/4 rttvar + 1/4 |smoothed - adjusted|.
        self.var = (self.var * 3 + deviation) / 4;
        // RFC 9002 §5.3: smoothed = 7/8 smoothed + 1/8 adjusted.
        self.smoothed = Some((smoothed * 7 + adjusted) / 8);
    }

    /// RFC 9002 §5.2: after persistent congestion, min_rtt restarts from the latest sample.
    pub fn on_persistent_congestion(&mut self) {
        self.min = self.latest;
    }

    /// The most recent sample.
    pub fn latest(&self) -> Option<Duration> {
        self.latest
    }

    /// The minimum sample.
    pub fn min(&self) -> Option<Duration> {
        self.min
    }

    /// The smoothed RTT, `None` before the first sample.
    pub fn smoothed(&self) -> Option<Duration> {
        self.smoothed
    }

    /// The smoothed RTT, or [`INITIAL_RTT`] before the first sample.
    pub fn smoothed_or_initial(&self) -> Duration {
        self.smoothed.unwrap_or(INITIAL_RTT)
    }

    /// The RTT variation (rttvar); half the initial RTT before the first sample.
    pub fn var(&self) -> Duration {
        if self.smoothed.is_some() {
            self.var
        } else {
            INITIAL_RTT / 2
        }
    }

    /// The probe timeout before backoff: smoothed + max(4 rttvar, granularity) + max_ack_delay
    /// (RFC 9002 §6.2.1).
    pub fn pto_base(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed_or_initial() + (self.var() * 4).max(GRANULARITY) + max_ack_delay
    }

    /// The loss-detection time threshold: 9/8 max(smoothed, latest), at least the granularity
    /// (RFC 9002 §6.1.2).
    pub fn loss_delay(&self) -> Duration {
        let base = self
            .smoothed_or_initial()
            .max(self.latest.unwrap_or(Duration::ZERO));
        (base * 9 / 8).max(GRANULARITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn first_sample_sets_smoothed_and_half_var() {
        let mut r = RttEstimator::new();
        r.on_sample(ms(100), ms(0));
        assert_eq!(r.smoothed(), Some(ms(100)));
        assert_eq!(r.var(), ms(50));
        assert_eq!(r.min(), Some(ms(100)));
    }

    #[test]
    fn ewma_follows_rfc9002() {
        let mut r = RttEstimator::new();
        r.on_sample(ms(100), ms(0));
        r.on_sample(ms(180), ms(0));
        // smoothed = 7/8*100 + 1/8*180 = 110; var = 3/4*50 + 1/4*80 = 57.5
        assert_eq!(r.smoothed(), Some(ms(110)));
        assert_eq!(r.var(), Duration::from_micros(57_500));
    }

    #[test]
    fn ack_delay_never_takes_sample_below_min() {
        let mut r = RttEstimator::new();
        r.on_sample(ms(100), ms(0));
        r.on_sample(ms(110), ms(20));
        // 110 - 20 = 90 < min 100, so the delay is not subtracted: 7/8*100 + 1/8*110.
        assert_eq!(r.smoothed(), Some(Duration::from_micros(101_250)));
    }
}
