//! Short-flow arrivals: the process of one flow entry that starts a new sized transfer at
//! random times (with its own generator stream), and the sum of what its transfers measured.
//! The simulator runs each transfer as a reliable flow of its own; this module decides when
//! they begin and keeps their measurements once they finish.

use crate::config::{AppConfig, ArrivalConfig, ControllerFactory, Interarrival, TransportConfig};
use crate::connection::Measured;
use crate::stats::{FlowCounters, FlowStats, TransferStats};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::Controller;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// What one transfer measured over the window, handed over when it finishes or the run ends.
pub struct TransferReport {
    /// When the transfer began, ns.
    pub arrival_ns: u64,
    /// Its counters over the window.
    pub counters: FlowCounters,
    /// Its RTT, queuing delay and congestion events.
    pub measured: Measured,
    /// When its last byte arrived, ns.
    pub completion_ns: Option<u64>,
}

/// Most transfers of one arrival process, with or without a count (see also
/// [`crate::network::MAX_RUN_FLOWS`]).
pub const MAX_TRANSFERS: u64 = 1_000_000;

/// One short-flow arrival process.
pub struct Arrivals {
    controllers: ControllerFactory,
    /// Transport settings of every transfer.
    pub transport: TransportConfig,
    /// Each transfer's application.
    pub app: AppConfig,
    interarrival: Interarrival,
    remaining: Option<u64>,
    stopped: bool,
    begun: u64,
    rng: ChaCha8Rng,
    active: Vec<u32>,
    done_ns: Option<u64>,
    totals: FlowStats,
}

impl Arrivals {
    /// A process that has not started; `rng` is its own generator stream.
    pub fn new(
        controllers: ControllerFactory,
        transport: TransportConfig,
        app: AppConfig,
        config: ArrivalConfig,
        rng: ChaCha8Rng,
    ) -> Self {
        Arrivals {
            controllers,
            transport,
            app,
            interarrival: config.interarrival,
            remaining: config.count,
            stopped: false,
            begun: 0,
            rng,
            active: Vec::new(),
            done_ns: None,
            totals: FlowStats {
                transfers: Some(TransferStats::default()),
                ..FlowStats::default()
            },
        }
    }

    /// Whether the number of transfers is limited.
    pub fn bounded(&self) -> bool {
        self.remaining.is_some()
    }

    fn exhausted(&self) -> bool {
        self.stopped || self.remaining == Some(0) || self.begun >= MAX_TRANSFERS
    }

    /// Whether no transfer is under way and none will begin.
    pub fn done(&self) -> bool {
        self.exhausted() && self.active.is_empty()
    }

    /// When the process became done, ns.
    pub fn done_ns(&self) -> Option<u64> {
        self.done_ns
    }

    /// Transfers under way.
    pub fn active(&self) -> usize {
        self.active.len()
    }

    /// Transfers begun.
    pub fn begun(&self) -> u64 {
        self.begun
    }

    /// No transfer begins from now on; those under way finish.
    pub fn stop(&mut self, now: u64) {
        self.stopped = true;
        self.note_done(now);
    }

    /// A transfer arrives at `now` as flow `flow`: returns its fresh controller, its index
    /// (from 0) and when the next one arrives, or `None` when the process is exhausted. `in_window` says whether the
    /// measurement window is open.
    pub fn arrive(
        &mut self,
        now: u64,
        flow: u32,
        in_window: bool,
    ) -> Option<(Box<dyn Controller>, u64, Option<u64>)> {
        if self.exhausted() {
            return None;
        }
        let index = self.begun;
        let controller = (self.controllers)(index);
        self.begun += 1;
        if let Some(r) = &mut self.remaining {
            *r -= 1;
        }
        if in_window {
            self.transfer_stats().started += 1;
        }
        self.active.push(flow);
        let next = (!self.exhausted()).then(|| now + self.draw());
        Some((controller, index, next))
    }

    /// The time to the next arrival, ns.
    fn draw(&mut self) -> u64 {
        match self.interarrival {
            Interarrival::Fixed(d) => duration_nanos(d),
            Interarrival::Uniform(a, b) => {
                let (a, b) = (duration_nanos(a.min(b)), duration_nanos(a.max(b)));
                self.rng.gen_range(a..=b)
            }
            Interarrival::Exponential(mean) => {
                let u: f64 = self.rng.gen();
                (-(1.0 - u).ln() * duration_nanos(mean) as f64).round() as u64
            }
        }
    }

    fn transfer_stats(&mut self) -> &mut TransferStats {
        self.totals.transfers.get_or_insert_with(Default::default)
    }

    /// Transfer `flow` finished at `now` (every byte acknowledged). `window` is the start of
    /// the measurement window once it is open: only then does the transfer count.
    pub fn finish(&mut self, flow: u32, now: u64, window: Option<u64>, report: &TransferReport) {
        self.active.retain(|&f| f != flow);
        if let Some(start) = window {
            self.absorb(report);
            if let Some(done) = report.completion_ns.filter(|&c| c >= start) {
                let fct = done.saturating_sub(report.arrival_ns);
                let stats = self.transfer_stats();
                stats.completed += 1;
                stats.completion_times.record(fct);
            }
        }
        self.note_done(now);
    }

    /// Adds the window's measurements of a transfer, finished or still under way.
    pub fn absorb(&mut self, report: &TransferReport) {
        let t = &mut self.totals;
        t.counters = t.counters.plus(&report.counters);
        t.rtt.merge(&report.measured.rtt);
        t.queuing_delay.merge(&report.measured.queuing_delay);
        t.max_rtt_ns = t.max_rtt_ns.max(report.measured.max_rtt_ns);
    }

    fn note_done(&mut self, now: u64) {
        if self.done_ns.is_none() && self.done() {
            self.done_ns = Some(now);
        }
    }

    /// Flow indices of the transfers under way.
    pub fn active_flows(&self) -> &[u32] {
        &self.active
    }

    /// The process's statistics, named `name`, active for `active_ns` of the window.
    pub fn stats(&self, name: &str, active_ns: u64) -> FlowStats {
        FlowStats {
            name: name.to_string(),
            active_ns,
            ..self.totals.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use std::time::Duration;

    struct Fixed;

    impl Controller for Fixed {
        fn on_ack(&mut self, _: kleinrock_cc::Instant, _: &kleinrock_cc::AckEvent) {}
        fn on_congestion(&mut self, _: kleinrock_cc::Instant, _: &kleinrock_cc::CongestionEvent) {}
        fn cwnd(&self) -> u64 {
            15_000
        }
        fn state(&self) -> kleinrock_cc::ControllerState {
            kleinrock_cc::ControllerState::default()
        }
    }

    fn process(interarrival: Interarrival, count: Option<u64>) -> Arrivals {
        Arrivals::new(
            Box::new(|_| Box::new(Fixed)),
            TransportConfig::default(),
            AppConfig::Bulk {
                bytes: Some(300_000),
            },
            ArrivalConfig {
                interarrival,
                count,
            },
            ChaCha8Rng::seed_from_u64(7),
        )
    }

    /// The gaps between `n` arrivals starting at time zero.
    fn gaps(p: &mut Arrivals, n: u32) -> Vec<u64> {
        let (mut now, mut out) = (0, Vec::new());
        for f in 0..n {
            let Some((_, _, Some(next))) = p.arrive(now, f, true) else {
                break;
            };
            out.push(next - now);
            now = next;
        }
        out
    }

    #[test]
    fn uniform_gaps_stay_in_range_around_the_mean() {
        let (lo, hi) = (2_000_000_000, 3_000_000_000);
        let mut p = process(
            Interarrival::Uniform(Duration::from_nanos(lo), Duration::from_nanos(hi)),
            None,
        );
        let g = gaps(&mut p, 2000);
        assert!(g.iter().all(|&d| (lo..=hi).contains(&d)));
        // Mean 2.5 s; the standard error of 2000 draws is 6.5 ms, 5 of them allowed.
        let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!((mean - 2.5e9).abs() < 32.5e6, "mean {mean}");
    }

    #[test]
    fn exponential_gaps_have_the_mean() {
        let mut p = process(Interarrival::Exponential(Duration::from_secs(1)), None);
        let g = gaps(&mut p, 4000);
        // Standard error of the mean of 4000 draws of Exp(1 s): 15.8 ms; 5 of them allowed.
        let mean = g.iter().sum::<u64>() as f64 / g.len() as f64;
        assert!((mean - 1e9).abs() < 79e6, "mean {mean}");
    }

    #[test]
    fn count_and_stop_end_the_arrivals() {
        let mut p = process(Interarrival::Fixed(Duration::from_secs(1)), Some(3));
        assert_eq!(gaps(&mut p, 10), vec![1_000_000_000; 2]);
        assert_eq!(p.begun(), 3);
        assert!(p.arrive(5, 9, true).is_none(), "the count is reached");
        assert!(!p.done(), "three transfers are under way");

        let mut p = process(Interarrival::Fixed(Duration::from_secs(1)), None);
        p.arrive(0, 0, false);
        p.stop(10);
        assert!(p.arrive(20, 1, false).is_none());
        assert_eq!(p.active(), 1);
        assert_eq!(p.done_ns(), None);
    }

    #[test]
    fn same_seed_same_arrivals() {
        let i = Interarrival::Exponential(Duration::from_millis(300));
        assert_eq!(
            gaps(&mut process(i, None), 50),
            gaps(&mut process(i, None), 50)
        );
    }
}
