//! The Reno-family skeleton that `newreno`, `highspeed`, `scalable` and `htcp` share, counted
//! in bytes.
//!
//! Linux plugs these algorithms into one TCP core and lets each supply only its
//! congestion-avoidance increase (`cong_avoid`) and its slow-start threshold (`ssthresh`)
//! (`struct tcp_congestion_ops`; Linux `net/ipv4/tcp_cong.c` `tcp_slow_start`,
//! `tcp_cong_avoid_ai`). This module is that core in QUIC's form (RFC 9002 §7): initial window
//! and slow start (§7.2, §7.3.1), one reduction per recovery period keyed on send times
//! (§7.3.2, `recovery::RecoveryEpoch`), the threshold floored at the minimum window (RFC 5681
//! §3.1 eq. (4)), persistent congestion to the minimum window (§7.6.2), no growth while
//! application-limited (§7.8), and the byte-exact additive increase (RFC 5681 §3.1 eq. (3),
//! `recovery::AdditiveIncrease`). An [`AimdRule`] supplies the rest; NewReno is this skeleton
//! with Reno's rule (`newreno::RenoRule`).
//!
//! Owns [`Aimd`] (the controller around a rule), [`AimdRule`] and [`Increase`].

use crate::algorithms::recovery::{ssthresh_value, AdditiveIncrease, RecoveryEpoch, INFINITE};
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerState,
    Instant, SentPacket,
};

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

/// A Reno-family controller: the QUIC window machinery around the rule `R`.
#[derive(Clone, Debug)]
pub struct Aimd<R> {
    mss: u64,
    min_window: u64,
    /// The window after a timeout or persistent congestion.
    loss_window: u64,
    cwnd: u64,
    ssthresh: u64,
    recovery: RecoveryEpoch,
    increase: AdditiveIncrease,
    /// Grow once per ACK, as ns-3 counts, instead of per acknowledged byte.
    per_ack: bool,
    rule: R,
}

impl<R: AimdRule> Aimd<R> {
    /// A controller in slow start with the transport's initial window (RFC 9002 §7.2).
    pub fn with_rule(config: &ControllerConfig, rule: R) -> Self {
        Self::with_initial_window(config, config.initial_window(), rule)
    }

    /// A controller in slow start with a window of `initial_window` bytes (RFC 9002 §7.2) and
    /// an infinite threshold (§7.3.1).
    pub fn with_initial_window(config: &ControllerConfig, initial_window: u64, rule: R) -> Self {
        Aimd {
            mss: config.max_datagram_size,
            min_window: config.minimum_window(),
            loss_window: config.loss_window(),
            cwnd: initial_window,
            ssthresh: INFINITE,
            recovery: RecoveryEpoch::default(),
            increase: AdditiveIncrease::default(),
            per_ack: false,
            rule,
        }
    }

    /// With `on`, the window grows once per ACK that acknowledges data, whatever it
    /// acknowledges, as ns-3's `TcpNewReno` grows it: in slow start by min(acknowledged, MSS)
    /// (RFC 5681 §3.1 eq. (2); ns-3 `TcpNewReno::SlowStart`), in congestion avoidance by the
    /// rule's increase for one MSS acknowledged, at least one byte (ns-3
    /// `TcpNewReno::CongestionAvoidance`: MSS * MSS / cwnd). With delayed ACKs that is about
    /// half the growth per byte counting gives.
    pub fn with_per_ack_growth(mut self, on: bool) -> Self {
        self.per_ack = on;
        self
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
            // RFC 9002 §7.3.1: slow start, cwnd += acknowledged bytes (RFC 5681 §3.1 eq. (2)
            // with byte counting); per ACK, at most one MSS (eq. (2), ns-3).
            let grow = match self.per_ack {
                true => ack.acked_bytes.min(self.mss),
                false => ack.acked_bytes,
            };
            self.cwnd = self.cwnd.saturating_add(grow);
            return;
        }
        let rate = self.rule.increase(now, self.cwnd, self.mss);
        if self.per_ack {
            // ns-3 `TcpNewReno::CongestionAvoidance`: cwnd += max(1, MSS * MSS / cwnd) per ACK,
            // truncated to whole bytes (Reno's rate: one MSS per cwnd bytes).
            let per_mss = u128::from(self.mss) * u128::from(rate.packets) * u128::from(self.mss)
                / u128::from(rate.per_bytes.max(1));
            let step = u64::try_from(per_mss).unwrap_or(u64::MAX).max(1);
            self.cwnd = self.cwnd.saturating_add(step);
            return;
        }
        // The rule's `packets` MSS per `per_bytes` acknowledged, the fraction carried in
        // bytes (RFC 5681 §3.1 eq. (3) generalised; Linux `tcp_cong_avoid_ai`, `snd_cwnd_cnt`).
        let credit = ack.acked_bytes.saturating_mul(rate.packets);
        let step = self.increase.on_ack(credit, rate.per_bytes, self.mss);
        self.cwnd = self.cwnd.saturating_add(step);
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        // RFC 9002 §7.3.2: loss and ECN-CE reduce once per recovery period; persistent
        // congestion reduces too unless a loss event already covered these packets.
        if self.recovery.on_congestion(now, event.largest_sent_time) {
            // The rule's threshold, floored at the minimum window as RFC 5681 §3.1 eq. (4)
            // floors it at 2 SMSS; cwnd = ssthresh.
            let target = self.rule.ssthresh(now, self.cwnd, self.mss);
            self.ssthresh = target.max(self.min_window);
            self.cwnd = self.ssthresh;
            self.increase.reset();
        }
        if event.kind == CongestionKind::PersistentCongestion {
            // RFC 9002 §7.6.2: cwnd = kMinimumWindow (on TCP's timeout the loss window,
            // RFC 5681 §3.1), recovery start forgotten (RFC 9002 Appendix B).
            self.cwnd = self.loss_window;
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
    use crate::testing::{ack, at, congestion};

    /// A rule that records which hook the skeleton called and when: 3 MSS per 10 MSS
    /// acknowledged (one MSS per 5000 bytes), and a reduction to a quarter of the window.
    #[derive(Default)]
    struct Probe {
        calls: Vec<(&'static str, Instant)>,
    }

    impl AimdRule for Probe {
        fn increase(&mut self, now: Instant, _cwnd: u64, mss: u64) -> Increase {
            self.calls.push(("increase", now));
            Increase {
                packets: 3,
                per_bytes: 10 * mss,
            }
        }
        fn ssthresh(&mut self, now: Instant, cwnd: u64, _mss: u64) -> u64 {
            self.calls.push(("ssthresh", now));
            cwnd / 4
        }
        fn values(&self, _cwnd: u64, _mss: u64) -> Vec<(&'static str, f64)> {
            vec![("calls", self.calls.len() as f64)]
        }
        fn on_sent(&mut self, now: Instant) {
            self.calls.push(("sent", now));
        }
        fn observe_ack(&mut self, now: Instant, _ack: &AckEvent, _cwnd: u64, in_recovery: bool) {
            let hook = if in_recovery {
                "ack_in_recovery"
            } else {
                "ack"
            };
            self.calls.push((hook, now));
        }
        fn on_recovery_end(&mut self, now: Instant) {
            self.calls.push(("recovery_end", now));
        }
        fn on_persistent_congestion(&mut self, now: Instant) {
            self.calls.push(("persistent_congestion", now));
        }
    }

    #[test]
    fn the_rule_is_consulted_where_linux_consults_it() {
        // The hooks fire as Linux calls them (pkts_acked before cong_avoid, cong_avoid only
        // outside slow start and recovery, ssthresh once per recovery period, the Open and
        // Loss state changes); the rule's increase is applied byte-exactly and its threshold
        // floored at the minimum window. Exact, in bytes (MSS 1500, initial window 15000,
        // minimum window 3000).
        let config = ControllerConfig::default();
        let mut c = Aimd::with_rule(&config, Probe::default());
        let packet = SentPacket {
            packet_number: 0,
            bytes: 1500,
            is_retransmission: false,
            in_flight: 1500,
            snapshot: Default::default(),
        };
        c.on_sent(at(1), &packet);
        // Slow start (RFC 9002 §7.3.1): the rule's increase is not asked.
        c.on_ack(at(10), &ack(1000, at(1), 100));
        assert_eq!(c.cwnd(), 16_000);
        assert_eq!(c.state().mode, "slow_start");
        // A loss starts a recovery period: ssthresh = 16000 / 4 (RFC 9002 §7.3.2).
        c.on_congestion(at(20), &congestion(CongestionKind::Loss, at(5)));
        assert_eq!((c.cwnd(), Controller::ssthresh(&c)), (4000, Some(4000)));
        // Covered by the period: neither a second reduction nor growth.
        c.on_congestion(at(21), &congestion(CongestionKind::EcnCe, at(20)));
        c.on_ack(at(30), &ack(1500, at(15), 100));
        assert_eq!((c.cwnd(), c.state().mode), (4000, "recovery"));
        // The first ACK of a later packet ends the period and grows: credit 3 x 1500 of the
        // 15000 that earn one MSS (the fraction carried, Linux snd_cwnd_cnt).
        c.on_ack(at(40), &ack(1500, at(25), 100));
        assert_eq!((c.cwnd(), c.state().mode), (4000, "congestion_avoidance"));
        // RFC 9002 §7.8: an application-limited ACK is observed but earns nothing.
        let mut limited = ack(1500, at(30), 100);
        limited.app_limited = true;
        c.on_ack(at(45), &limited);
        c.on_ack(at(50), &ack(1500, at(30), 100));
        c.on_ack(at(50), &ack(1500, at(30), 100));
        assert_eq!(c.cwnd(), 4000);
        // 6000 bytes acknowledged, credit 18000: one MSS, 3000 carried.
        c.on_ack(at(60), &ack(1500, at(30), 100));
        assert_eq!(c.cwnd(), 5500);
        // Persistent congestion of later packets: one reduction (5500 / 4 = 1375, floored at
        // 3000), then cwnd = minimum window and the period forgotten (RFC 9002 §7.6.2).
        let pc = congestion(CongestionKind::PersistentCongestion, at(50));
        c.on_congestion(at(70), &pc);
        assert_eq!((c.cwnd(), Controller::ssthresh(&c)), (3000, Some(3000)));
        assert_eq!(c.state().mode, "congestion_avoidance");
        // The carried credit went with the reduction: 15000 of fresh credit earn the next MSS.
        for _ in 0..4 {
            c.on_ack(at(80), &ack(1000, at(75), 100));
        }
        assert_eq!(c.cwnd(), 3000);
        c.on_ack(at(80), &ack(1000, at(75), 100));
        assert_eq!(c.cwnd(), 4500);

        let calls = [
            ("sent", 1),
            ("ack", 10),
            ("ssthresh", 20),
            ("ack_in_recovery", 30),
            ("ack_in_recovery", 40),
            ("recovery_end", 40),
            ("increase", 40),
            ("ack", 45),
            ("ack", 50),
            ("increase", 50),
            ("ack", 50),
            ("increase", 50),
            ("ack", 60),
            ("increase", 60),
            ("ssthresh", 70),
            ("persistent_congestion", 70),
        ];
        let mut expected: Vec<_> = calls.iter().map(|&(hook, ms)| (hook, at(ms))).collect();
        for _ in 0..5 {
            expected.extend([("ack", at(80)), ("increase", at(80))]);
        }
        assert_eq!(c.rule.calls, expected);
        // The rule's values follow the window's.
        assert_eq!(
            c.state().values,
            vec![
                ("ssthresh_bytes", 3000.0),
                ("cwnd_bytes", 4500.0),
                ("calls", expected.len() as f64)
            ]
        );
    }
}
