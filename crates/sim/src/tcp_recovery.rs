//! TCP's loss recovery for the reliable transport's sender ([`LossRecovery::Tcp`]): the
//! retransmission timer (RFC 6298), Proportional Rate Reduction in recovery (RFC 6937), and
//! RACK-TLP's time threshold and tail-loss probe (RFC 8985). The sender keeps its packets and
//! its ACK processing; this module says when a timeout or a probe is due, how late a hole may
//! be before it is lost, and how much recovery lets the sender send.
//!
//! [`LossRecovery::Tcp`]: crate::config::LossRecovery::Tcp

use crate::config::{RtoForm, TcpRecovery};
use kleinrock_cc::controller::units::duration_nanos;
use kleinrock_cc::estimators::rtt::{RttEstimator, GRANULARITY};
use std::time::Duration;

/// RFC 6298 (2.1): the timeout before any RTT sample, 1 s (ns-3's `InitialRto`, Linux's
/// `TCP_TIMEOUT_INIT`).
const INITIAL_RTO: Duration = Duration::from_secs(1);
/// RFC 8985 §7.2: the probe timeout before any RTT sample, 1 s.
const INITIAL_PTO: Duration = Duration::from_secs(1);

/// What a due timer asks of the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// The retransmission timeout: every packet in flight is lost, the window collapses.
    Timeout,
    /// The tail-loss probe: one packet is sent, whatever the window.
    Probe,
}

/// The state of TCP's loss recovery of one sender.
#[derive(Clone, Debug)]
pub(crate) struct TcpLossRecovery {
    cfg: TcpRecovery,
    /// When the retransmission timer was last (re)started; `None` while it is off.
    rto_start_ns: Option<u64>,
    /// Timeouts since the last ACK of new data: the timeout doubles with each (RFC 6298 (5.5)).
    backoff: u32,
    /// A tail-loss probe went out and no ACK of new data came since (RFC 8985 §7.2: one
    /// probe, then the timeout).
    probed: bool,
    prr: Option<Prr>,
}

impl TcpLossRecovery {
    pub(crate) fn new(cfg: TcpRecovery) -> Self {
        TcpLossRecovery {
            cfg,
            rto_start_ns: None,
            backoff: 0,
            probed: false,
            prr: None,
        }
    }

    /// The retransmission timeout before backoff.
    pub(crate) fn rto(&self, rtt: &RttEstimator) -> Duration {
        let Some(srtt) = rtt.smoothed() else {
            return INITIAL_RTO.max(self.cfg.min_rto);
        };
        let var = rtt.var() * 4;
        let rto = match self.cfg.rto {
            // RFC 6298 (2.3) and (2.4).
            RtoForm::Rfc6298 => (srtt + var.max(GRANULARITY)).max(self.cfg.min_rto),
            // Linux `tcp_rtt_estimator`: rttvar = max(mdev, rto_min); `__tcp_set_rto`.
            RtoForm::Linux => srtt + var.max(self.cfg.min_rto),
        };
        rto.min(self.cfg.max_rto)
    }

    /// When the retransmission timer expires, if it runs: its start plus the timeout doubled
    /// per backoff, at most the ceiling (RFC 6298 (2.5), (5.5)).
    fn rto_deadline_ns(&self, rtt: &RttEstimator) -> Option<u64> {
        let start = self.rto_start_ns?;
        let backed_off = self
            .rto(rtt)
            .saturating_mul(1 << self.backoff.min(16))
            .min(self.cfg.max_rto);
        Some(start + duration_nanos(backed_off))
    }

    /// When the tail-loss probe is due, if one may go out (RFC 8985 §7.2): 2 SRTT after the
    /// last send, plus the receiver's delayed-ACK time when one packet is in flight; never in
    /// recovery, never twice before an ACK of new data.
    fn probe_deadline_ns(
        &self,
        rtt: &RttEstimator,
        last_sent_ns: u64,
        one_in_flight: bool,
        max_ack_delay: Duration,
    ) -> Option<u64> {
        if !self.cfg.rack || self.probed || self.prr.is_some() {
            return None;
        }
        let mut pto = rtt.smoothed().map_or(INITIAL_PTO, |srtt| srtt * 2);
        if one_in_flight {
            pto += max_ack_delay;
        }
        Some(last_sent_ns + duration_nanos(pto))
    }

    /// The earlier of the probe and the timeout, with which it is.
    pub(crate) fn next_expiry(
        &self,
        rtt: &RttEstimator,
        last_sent_ns: u64,
        one_in_flight: bool,
        max_ack_delay: Duration,
    ) -> Option<(u64, Expiry)> {
        let rto = self.rto_deadline_ns(rtt)?;
        match self.probe_deadline_ns(rtt, last_sent_ns, one_in_flight, max_ack_delay) {
            Some(probe) if probe < rto => Some((probe, Expiry::Probe)),
            _ => Some((rto, Expiry::Timeout)),
        }
    }

    /// RACK's time threshold (RFC 8985 §6.2): a hole is lost once the latest RTT plus the
    /// reordering window (a quarter of the minimum RTT, at most SRTT) passed since it was
    /// sent; `None` without RACK, where only the packet threshold declares loss.
    pub(crate) fn loss_delay(&self, rtt: &RttEstimator) -> Option<Duration> {
        if !self.cfg.rack {
            return None;
        }
        let latest = rtt.latest()?;
        let reordering = (rtt.min()? / 4).min(rtt.smoothed_or_initial());
        Some(latest + reordering)
    }

    /// A packet of `size` bytes was sent at `now`, alone in flight if `alone` (RFC 6298
    /// (5.1): the timer starts if off, or if nothing it guarded is in flight any more).
    pub(crate) fn on_sent(&mut self, now: u64, size: u64, alone: bool) {
        if alone {
            self.rto_start_ns = Some(now);
        }
        self.rto_start_ns.get_or_insert(now);
        if let Some(prr) = &mut self.prr {
            prr.out += size;
        }
    }

    /// An ACK of new data at `now` left `in_flight` bytes outstanding: the timer restarts, or
    /// stops when nothing is outstanding (RFC 6298 (5.2), (5.3)); the backoff and the probe
    /// are over.
    pub(crate) fn on_new_ack(&mut self, now: u64, in_flight: u64) {
        self.rto_start_ns = (in_flight > 0).then_some(now);
        self.backoff = 0;
        self.probed = false;
    }

    /// The probe went out.
    pub(crate) fn on_probe(&mut self) {
        self.probed = true;
    }

    /// The timeout fired: it backs off, restarts with the next send, and ends recovery.
    pub(crate) fn on_timeout(&mut self) {
        self.backoff += 1;
        self.rto_start_ns = None;
        self.probed = false;
        self.prr = None;
    }

    /// Whether recovery is under way.
    pub(crate) fn in_recovery(&self) -> bool {
        self.prr.is_some()
    }

    /// Recovery begins (RFC 6937 §3.1), if PRR is on: it ends once everything sent up to
    /// `recovery_point` is resolved; `recover_fs` is the data outstanding at its start.
    pub(crate) fn enter_recovery(&mut self, recovery_point: u64, recover_fs: u64) {
        if self.cfg.prr && self.prr.is_none() {
            self.prr = Some(Prr {
                recovery_point,
                recover_fs: recover_fs.max(1),
                delivered: 0,
                out: 0,
                allowance: 0,
            });
        }
    }

    /// The packet number recovery waits for, while in recovery.
    pub(crate) fn recovery_point(&self) -> Option<u64> {
        self.prr.as_ref().map(|p| p.recovery_point)
    }

    /// Recovery is over.
    pub(crate) fn exit_recovery(&mut self) {
        self.prr = None;
    }

    /// In recovery, an ACK delivered `delivered` bytes and left `pipe` in flight; the
    /// controller's threshold is `ssthresh`: the allowance of bytes in flight until the next
    /// ACK.
    pub(crate) fn on_recovery_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) {
        if let Some(prr) = &mut self.prr {
            prr.on_ack(delivered, pipe, ssthresh, mss);
        }
    }

    /// In recovery, the bytes PRR lets be in flight; `None` outside recovery (the controller's
    /// window rules).
    pub(crate) fn allowance(&self) -> Option<u64> {
        self.prr.as_ref().map(|p| p.allowance)
    }
}

/// Proportional Rate Reduction's state over one recovery (RFC 6937 §3).
#[derive(Clone, Copy, Debug)]
struct Prr {
    recovery_point: u64,
    /// RecoverFS: bytes outstanding when recovery began.
    recover_fs: u64,
    /// prr_delivered: bytes the receiver got during recovery.
    delivered: u64,
    /// prr_out: bytes sent during recovery.
    out: u64,
    /// pipe + sndcnt at the last ACK.
    allowance: u64,
}

impl Prr {
    fn on_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) {
        self.delivered += delivered;
        let sndcnt = if pipe > ssthresh {
            // RFC 6937 §3.1: sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let due = (u128::from(self.delivered) * u128::from(ssthresh))
                .div_ceil(u128::from(self.recover_fs));
            u64::try_from(due)
                .unwrap_or(u64::MAX)
                .saturating_sub(self.out)
        } else {
            // RFC 6937 §3.1, PRR-SSRB: limit = MAX(prr_delivered - prr_out, DeliveredData)
            // + MSS; sndcnt = MIN(ssthresh - pipe, limit).
            let limit = self.delivered.saturating_sub(self.out).max(delivered) + mss;
            (ssthresh - pipe).min(limit)
        };
        self.allowance = pipe + sndcnt;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn tcp(min_rto: Duration, rto: RtoForm) -> TcpLossRecovery {
        TcpLossRecovery::new(TcpRecovery {
            min_rto,
            max_rto: Duration::from_secs(60),
            rto,
            prr: true,
            rack: false,
        })
    }

    /// An estimator after one sample of `rtt` (srtt = rtt, rttvar = rtt / 2, RFC 6298 (2.2)).
    fn sampled(rtt: Duration) -> RttEstimator {
        let mut e = RttEstimator::new();
        e.on_sample(rtt, Duration::ZERO);
        e
    }

    #[test]
    fn the_timeout_is_floored_at_the_minimum_rto_and_doubles_per_backoff() {
        let rtt = sampled(ms(40));
        // RFC 6298 (2.2)-(2.4): 40 + 4 * 20 = 120 ms, below the 1 s floor.
        let mut r = tcp(Duration::from_secs(1), RtoForm::Rfc6298);
        assert_eq!(r.rto(&rtt), Duration::from_secs(1));
        // Linux: 40 ms + max(80 ms, 200 ms) = 240 ms.
        assert_eq!(tcp(ms(200), RtoForm::Linux).rto(&rtt), ms(240));
        // RFC 6298 (2.1): 1 s before any sample.
        assert_eq!(r.rto(&RttEstimator::new()), Duration::from_secs(1));
        r.on_sent(0, 1500, true);
        let at = |r: &TcpLossRecovery| r.next_expiry(&rtt, 0, false, ms(200)).unwrap();
        assert_eq!(at(&r), (1_000_000_000, Expiry::Timeout));
        // RFC 6298 (5.5)-(5.6): back off, restart with the retransmission.
        r.on_timeout();
        assert_eq!(r.next_expiry(&rtt, 0, false, ms(200)), None);
        r.on_sent(1_000_000_000, 1500, true);
        assert_eq!(at(&r).0, 3_000_000_000);
        r.on_timeout();
        r.on_sent(3_000_000_000, 1500, true);
        assert_eq!(at(&r).0, 7_000_000_000);
        // An ACK of new data ends the backoff and restarts the timer from then.
        r.on_new_ack(7_100_000_000, 1500);
        assert_eq!(at(&r).0, 8_100_000_000);
        r.on_new_ack(7_200_000_000, 0);
        assert_eq!(r.next_expiry(&rtt, 0, false, ms(200)), None);
    }

    #[test]
    fn the_backed_off_timeout_stops_at_the_ceiling() {
        let rtt = sampled(ms(40));
        let mut r = tcp(Duration::from_secs(1), RtoForm::Rfc6298);
        for _ in 0..10 {
            r.on_timeout();
        }
        r.on_sent(0, 1500, true);
        // RFC 6298 (2.5): 2^10 s capped at 60 s.
        let (at, _) = r.next_expiry(&rtt, 0, false, ms(200)).unwrap();
        assert_eq!(at, 60_000_000_000);
    }

    #[test]
    fn the_tail_loss_probe_comes_before_the_timeout_once() {
        let rtt = sampled(ms(40));
        let mut r = TcpLossRecovery::new(TcpRecovery {
            rack: true,
            ..tcp(ms(200), RtoForm::Linux).cfg
        });
        r.on_sent(0, 1500, true);
        // RFC 8985 §7.2: PTO = 2 SRTT = 80 ms; with one packet in flight, + 40 ms.
        assert_eq!(
            r.next_expiry(&rtt, 0, false, ms(40)),
            Some((80_000_000, Expiry::Probe))
        );
        assert_eq!(
            r.next_expiry(&rtt, 0, true, ms(40)),
            Some((120_000_000, Expiry::Probe))
        );
        r.on_probe();
        assert_eq!(
            r.next_expiry(&rtt, 80_000_000, false, ms(40)),
            Some((240_000_000, Expiry::Timeout))
        );
        // RFC 8985 §6.2: loss after latest RTT + min RTT / 4 = 50 ms.
        assert_eq!(r.loss_delay(&rtt), Some(ms(50)));
    }

    #[test]
    fn prr_spreads_the_reduction_over_the_recovery_then_slow_starts_back_to_ssthresh() {
        const MSS: u64 = 1000;
        let mut r = tcp(ms(200), RtoForm::Linux);
        // RFC 6937 §4 example: 20 segments in flight, one lost, ssthresh = 10.
        r.enter_recovery(19, 20 * MSS);
        let (mut pipe, ssthresh) = (19 * MSS, 10 * MSS);
        let mut sent = Vec::new();
        for _ in 0..19 {
            pipe -= MSS;
            r.on_recovery_ack(MSS, pipe, ssthresh, MSS);
            let mut n = 0;
            while pipe + MSS <= r.allowance().unwrap() {
                pipe += MSS;
                r.on_sent(0, MSS, false);
                n += 1;
            }
            sent.push(n);
        }
        // One segment per two ACKs (the proportional part): 10 sent for 19 delivered, and
        // pipe ends at ssthresh.
        assert_eq!(sent.iter().sum::<u64>(), 10);
        assert!(sent.iter().all(|&n| n <= 1));
        assert_eq!(pipe, ssthresh);
        // Below ssthresh (a burst of losses), PRR-SSRB sends at most delivered + 1 MSS per ACK.
        let mut r = tcp(ms(200), RtoForm::Linux);
        r.enter_recovery(19, 20 * MSS);
        r.on_recovery_ack(MSS, 5 * MSS, ssthresh, MSS);
        assert_eq!(r.allowance(), Some(5 * MSS + 2 * MSS));
    }
}
