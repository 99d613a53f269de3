//! Applications at a flow's sender: how many stream bytes exist to send at a given time.

use crate::config::AppConfig;

/// The sending application of one flow.
#[derive(Clone, Debug)]
pub struct Application {
    config: AppConfig,
    start_ns: u64,
    end_offset: Option<u64>,
}

impl Application {
    /// An application that has not started.
    pub fn new(config: AppConfig) -> Self {
        Application {
            config,
            start_ns: 0,
            end_offset: config.total_bytes(),
        }
    }

    /// The application starts at `now`.
    pub fn start(&mut self, now: u64) {
        self.start_ns = now;
    }

    /// The application stops offering data; the stream ends after the `sent` bytes given so far.
    pub fn stop(&mut self, sent: u64) {
        self.end_offset = Some(self.end_offset.map_or(sent, |e| e.min(sent)));
    }

    /// Total bytes the application has produced by `now` (`u64::MAX` for unbounded bulk).
    fn produced(&self, now: u64) -> u64 {
        let produced = match self.config {
            AppConfig::Bulk { .. } => u64::MAX,
            AppConfig::ConstantRate { rate, .. } => {
                let secs = now.saturating_sub(self.start_ns) as f64 * 1e-9;
                (rate.bytes_per_sec() * secs) as u64
            }
        };
        self.end_offset.map_or(produced, |e| produced.min(e))
    }

    /// Bytes ready to send beyond `sent`, at most `max`. A constant-rate source offers only
    /// whole packets until its stream ends.
    pub fn available(&self, now: u64, sent: u64, max: u32) -> u32 {
        let ready = self.produced(now).saturating_sub(sent);
        let is_last = self.end_offset.is_some_and(|e| sent + ready >= e);
        if matches!(self.config, AppConfig::ConstantRate { .. })
            && ready < u64::from(max)
            && !is_last
        {
            return 0;
        }
        ready.min(u64::from(max)) as u32
    }

    /// Whether the application will never offer data beyond `sent`.
    pub fn exhausted(&self, sent: u64) -> bool {
        self.end_offset.is_some_and(|e| sent >= e)
    }

    /// When a constant-rate application will have a full packet of `max` bytes beyond `sent`.
    pub fn next_data_ns(&self, sent: u64, max: u32) -> Option<u64> {
        let AppConfig::ConstantRate { rate, .. } = self.config else {
            return None;
        };
        if self.exhausted(sent) {
            return None;
        }
        let target = sent + u64::from(max);
        let target = self.end_offset.map_or(target, |e| target.min(e));
        let secs = target as f64 / rate.bytes_per_sec();
        Some(self.start_ns + (secs * 1e9).ceil() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kleinrock_cc::Rate;

    #[test]
    fn constant_rate_offers_whole_packets_on_time() {
        let mut app = Application::new(AppConfig::ConstantRate {
            rate: Rate::from_bytes_per_sec(1000.0),
            bytes: Some(2500),
        });
        app.start(0);
        assert_eq!(app.available(999_000_000, 0, 1000), 0);
        assert_eq!(app.available(1_000_000_000, 0, 1000), 1000);
        assert_eq!(app.next_data_ns(1000, 1000), Some(2_000_000_000));
        assert_eq!(app.available(2_600_000_000, 2000, 1000), 500);
        assert!(app.exhausted(2500));
    }

    #[test]
    fn bulk_is_bounded_by_size_and_stop() {
        let mut app = Application::new(AppConfig::Bulk { bytes: None });
        app.start(0);
        assert_eq!(app.available(0, 1 << 40, 1460), 1460);
        assert!(!app.exhausted(1 << 40));
        app.stop(4000);
        assert_eq!(app.available(10, 3000, 1460), 1000);
        assert!(app.exhausted(4000));
    }
}
