//! The Reno-family skeleton that `highspeed`, `scalable` and `htcp` share, counted in bytes.
//!
//! Linux plugs these algorithms into one TCP core and lets each supply only its
//! congestion-avoidance increase (`cong_avoid`) and its slow-start threshold (`ssthresh`)
//! (ALGORITHMS.md §1.4). This module is that core in QUIC's form, as `newreno` runs it: initial
//! window and slow start (RFC 9002 §7.2, §7.3.1), one reduction per recovery period keyed on
//! send times (§7.3.2, `newreno::RecoveryEpoch`), persistent congestion to the minimum window
//! (§7.6.2), no growth while application-limited (§7.8), and the byte-exact additive increase
//! of `newreno` (`AdditiveIncrease`). An [`AimdRule`] supplies the rest.
//!
//! Owns [`Aimd`] (the controller around a rule), [`AimdRule`] and [`Increase`].

use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerState,
    SentPacket,
};
use crate::newreno::{ssthresh_value, AdditiveIncrease, RecoveryEpoch};
use crate::units::Instant;

/// A congestion-avoidance increase: `packets` MSS for every `per_bytes` bytes acknowledged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Increase {
    /// MSS added per `per_bytes` acknowledged.
    pub packets: u64,
    /// Acknowledged bytes that earn `packets` MSS (Reno: the window, one MSS per RTT).
    pub per_bytes: u64,
}

/// What makes one Reno-family algorithm: its increase, its decrease, and optional hooks.
pub trait AimdRule: Send {
    /// The congestion-avoidance increase for a window of `cwnd` bytes at `now`.
    fn increase(&mut self, now: Instant, cwnd: u64, mss: u64) -> Increase;

    /// The slow-start threshold in bytes (before the minimum-window floor) for a congestion
    /// event that starts a recovery period at `now` with a window of `cwnd` bytes (the Linux
    /// module's `ssthresh` callback).
    fn ssthresh(&mut self, now: Instant, cwnd: u64, mss: u64) -> u64;

    /// Named estimates for traces, after `ssthresh_bytes` and `cwnd_bytes`.
    fn values(&self, cwnd: u64, mss: u64) -> Vec<(&'static str, f64)>;

    /// A packet was sent at `now`.
    fn on_sent(&mut self, _now: Instant) {}

    /// Sees every ACK before the window does (Linux `pkts_acked` runs before `cong_avoid`);
    /// `in_recovery` is the state the ACK found.
    fn observe_ack(&mut self, _now: Instant, _ack: &AckEvent, _cwnd: u64, _in_recovery: bool) {}

    /// A recovery period ended at `now` (Linux: back to the Open state).
    fn on_recovery_end(&mut self, _now: Instant) {}

    /// Persistent congestion was declared at `now` (Linux: the Loss state).
    fn on_persistent_congestion(&mut self, _now: Instant) {}
}

/// "No threshold yet": slow start begins with an infinite threshold (RFC 9002 §7.3.1).
const INFINITE: u64 = u64::MAX;

/// A Reno-family controller: the QUIC window machinery around the rule `R`.
#[derive(Clone, Debug)]
pub struct Aimd<R> {
    mss: u64,
    min_window: u64,
    cwnd: u64,
    ssthresh: u64,
    recovery: RecoveryEpoch,
    increase: AdditiveIncrease,
    rule: R,
}

impl<R: AimdRule> Aimd<R> {
    /// A controller in slow start with the transport's initial window (RFC 9002 §7.2).
    pub fn with_rule(config: &ControllerConfig, rule: R) -> Self {
        Aimd {
            mss: config.max_datagram_size,
            min_window: config.minimum_window(),
            cwnd: config.initial_window(),
            ssthresh: INFINITE,
            recovery: RecoveryEpoch::default(),
            increase: AdditiveIncrease::default(),
            rule,
        }
    }

    fn mode(&self) -> &'static str {
        if self.recovery.in_recovery() {
            "recovery"
        } else if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }
}

impl<R: AimdRule> Controller for Aimd<R> {
    fn on_sent(&mut self, now: Instant, _packet: &SentPacket) {
        self.rule.on_sent(now);
    }

    fn on_ack(&mut self, now: Instant, ack: &AckEvent) {
        let was_in_recovery = self.recovery.in_recovery();
        self.rule.observe_ack(now, ack, self.cwnd, was_in_recovery);
        // RFC 9002 §7.3.2: ACKs of packets sent before the recovery period began do not grow
        // the window; the first ACK of a later packet ends the period.
        let may_grow = self.recovery.on_ack(ack.largest_acked_sent_time);
        if was_in_recovery && !self.recovery.in_recovery() {
            self.rule.on_recovery_end(now);
        }
        // RFC 9002 §7.8 (Linux `tcp_is_cwnd_limited`): no growth while application-limited.
        if !may_grow || ack.app_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            // RFC 9002 §7.3.1: slow start, cwnd += acknowledged bytes.
            self.cwnd = self.cwnd.saturating_add(ack.acked_bytes);
            return;
        }
        // The rule's `packets` MSS per `per_bytes` acknowledged, the fraction carried in
        // bytes (Linux `snd_cwnd_cnt`).
        let rate = self.rule.increase(now, self.cwnd, self.mss);
        let credit = ack.acked_bytes.saturating_mul(rate.packets);
        let step = self.increase.on_ack(credit, rate.per_bytes, self.mss);
        self.cwnd = self.cwnd.saturating_add(step);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        // RFC 9002 §7.3.2: loss and ECN-CE reduce once per recovery period; persistent
        // congestion reduces too unless a loss event already covered these packets.
        if self.recovery.on_congestion(now, event.largest_sent_time) {
            let target = self.rule.ssthresh(now, self.cwnd, self.mss);
            self.ssthresh = target.max(self.min_window);
            self.cwnd = self.ssthresh;
            self.increase.reset();
        }
        if event.kind == CongestionKind::PersistentCongestion {
            // RFC 9002 §7.6.2: cwnd = kMinimumWindow, recovery start forgotten (Appendix B).
            self.cwnd = self.min_window;
            self.recovery.clear();
            self.increase.reset();
            self.rule.on_persistent_congestion(now);
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// `None` while the threshold is still infinite (before the first congestion event).
    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != INFINITE).then_some(self.ssthresh)
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn state(&self) -> ControllerState {
        let mut values = vec![
            // -1 while infinite, so the column set never changes during a run.
            ("ssthresh_bytes", ssthresh_value(self.ssthresh)),
            ("cwnd_bytes", self.cwnd as f64),
        ];
        values.extend(self.rule.values(self.cwnd, self.mss));
        ControllerState {
            mode: self.mode(),
            values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::newreno::{NewReno, NewRenoParams};
    use crate::westwood::testing::{ack, at, congestion};

    /// NewReno as a rule: one MSS per window, halve (RFC 9002 §7.3.2-7.3.3).
    struct Reno;

    impl AimdRule for Reno {
        fn increase(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> Increase {
            Increase {
                packets: 1,
                per_bytes: cwnd,
            }
        }
        fn ssthresh(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> u64 {
            cwnd / 2
        }
        fn values(&self, _cwnd: u64, _mss: u64) -> Vec<(&'static str, f64)> {
            Vec::new()
        }
    }

    #[test]
    fn with_the_reno_rule_it_is_newreno_step_for_step() {
        // The skeleton is RFC 9002 §7 as `newreno` implements it: with Reno's rule the two
        // must agree exactly on every output after every input (no tolerance).
        let config = ControllerConfig::default();
        let mut a = Aimd::with_rule(&config, Reno);
        let mut b = NewReno::new(&config, NewRenoParams::from_config(&config));
        let mut limited = ack(1500, at(0), 100);
        limited.app_limited = true;
        let mut modes = std::collections::BTreeSet::new();
        for t in 1..4000u64 {
            let sent = at(t.saturating_sub(100));
            for c in [&mut a as &mut dyn Controller, &mut b] {
                match t % 97 {
                    0 => c.on_congestion(at(t), &congestion(CongestionKind::Loss, sent)),
                    50 if t > 2000 => {
                        let kind = CongestionKind::PersistentCongestion;
                        c.on_congestion(at(t), &congestion(kind, sent))
                    }
                    30 => c.on_ack(at(t), &limited),
                    _ => c.on_ack(at(t), &ack(1000 + t % 700, sent, 100)),
                }
            }
            assert_eq!(a.cwnd(), b.cwnd(), "t = {t}");
            assert_eq!(Controller::ssthresh(&a), b.ssthresh(), "t = {t}");
            assert_eq!(a.state(), b.state(), "t = {t}");
            modes.insert(a.state().mode);
        }
        // The sequence went through every mode.
        assert_eq!(modes.len(), 3, "{modes:?}");
    }
}
