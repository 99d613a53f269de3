//! TCP's loss recovery for the reliable transport's sender ([`LossRecovery::Tcp`]): the
//! retransmission timer (RFC 6298), the recovery episode and Proportional Rate Reduction in it
//! (RFC 6937), and RACK-TLP's time threshold and tail-loss probe (RFC 8985). The sender keeps
//! its packets and its ACK processing; this module says when a timeout or a probe is due, how
//! late a hole may be before it is lost, and how much recovery lets the sender send.
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
/// RFC 8985 §7.2: WCDelAckT, the worst-case delayed-ACK time a probe with one packet in
/// flight waits for, 200 ms.
const WORST_CASE_DELAYED_ACK: Duration = Duration::from_millis(200);

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
    /// No tail-loss probe may go out until the next ACK of new data: one was sent (RFC 8985
    /// §7.2: one probe, then the timeout), or a timeout fired (Linux sends none in its Loss
    /// state).
    probed: bool,
    recovery: Option<Episode>,
}

/// One recovery episode: from a loss until everything sent before it is delivered.
#[derive(Clone, Copy, Debug)]
struct Episode {
    /// The stream offset sent up to when it began (snd.nxt, RFC 6675's RecoveryPoint).
    point: u64,
    /// The last packet sent before it began.
    last_pn: u64,
    /// PRR's state, when PRR paces the episode.
    prr: Option<Prr>,
}

impl TcpLossRecovery {
    pub(crate) fn new(cfg: TcpRecovery) -> Self {
        TcpLossRecovery {
            cfg,
            rto_start_ns: None,
            backoff: 0,
            probed: false,
            recovery: None,
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
            // Linux `tcp_rtt_estimator`: rttvar = max(mdev, rto_min); `__tcp_set_rto`. The
            // clock granularity stays a floor when the minimum is 0.
            RtoForm::Linux => srtt + var.max(self.cfg.min_rto).max(GRANULARITY),
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
    /// last send, plus the worst-case delayed-ACK time when one packet is in flight; never in
    /// recovery, never twice before an ACK of new data.
    fn probe_deadline_ns(
        &self,
        rtt: &RttEstimator,
        last_sent_ns: u64,
        one_in_flight: bool,
    ) -> Option<u64> {
        if !self.cfg.rack || self.probed || self.recovery.is_some() {
            return None;
        }
        let mut pto = rtt.smoothed().map_or(INITIAL_PTO, |srtt| srtt * 2);
        if one_in_flight {
            pto += WORST_CASE_DELAYED_ACK;
        }
        Some(last_sent_ns + duration_nanos(pto))
    }

    /// The next of the probe and the timeout, with which it is: the probe goes out at the
    /// timeout's time if it would come later (RFC 8985 §7.2: PTO = min(PTO, RTO)).
    pub(crate) fn next_expiry(
        &self,
        rtt: &RttEstimator,
        last_sent_ns: u64,
        one_in_flight: bool,
    ) -> Option<(u64, Expiry)> {
        let rto = self.rto_deadline_ns(rtt)?;
        Some(
            match self.probe_deadline_ns(rtt, last_sent_ns, one_in_flight) {
                Some(probe) => (probe.min(rto), Expiry::Probe),
                None => (rto, Expiry::Timeout),
            },
        )
    }

    /// RACK's time threshold (RFC 8985 §6.2): a hole is lost once the latest RTT plus the
    /// reordering window have passed since it was sent. The window is a quarter of the minimum
    /// RTT, at most SRTT, and 0 in recovery (step 4, no reordering being tracked). `None`
    /// without RACK, where only the packet threshold declares loss.
    pub(crate) fn loss_delay(&self, rtt: &RttEstimator) -> Option<Duration> {
        if !self.cfg.rack {
            return None;
        }
        let latest = rtt.latest()?;
        let reordering = match self.recovery {
            Some(_) => Duration::ZERO,
            None => (rtt.min()? / 4).min(rtt.smoothed_or_initial()),
        };
        Some(latest + reordering)
    }

    /// Whether a lost retransmission waits for the timeout: without RACK, as RFC 6675 has it
    /// (a segment is retransmitted once per recovery; ns-3).
    pub(crate) fn retransmissions_wait_for_timeout(&self) -> bool {
        !self.cfg.rack
    }

    /// A packet of `size` bytes was sent at `now` (RFC 6298 (5.1): the timer starts if off).
    pub(crate) fn on_sent(&mut self, now: u64, size: u64) {
        self.rto_start_ns.get_or_insert(now);
        if let Some(prr) = self.recovery.as_mut().and_then(|e| e.prr.as_mut()) {
            prr.out += size;
        }
    }

    /// An ACK of new data at `now`: if it moved the cumulative point (`advanced`), the timer
    /// restarts, and it stops when no data is outstanding (RFC 6298 (5.2), (5.3)); the backoff
    /// and the probe are over.
    pub(crate) fn on_new_ack(&mut self, now: u64, advanced: bool, outstanding: bool) {
        if !outstanding {
            self.rto_start_ns = None;
        } else if advanced || self.rto_start_ns.is_none() {
            self.rto_start_ns = Some(now);
        }
        self.backoff = 0;
        self.probed = false;
    }

    /// The probe went out.
    pub(crate) fn on_probe(&mut self) {
        self.probed = true;
    }

    /// The timeout fired: it backs off, restarts with the next send, ends the recovery
    /// episode, and no probe goes out before an ACK of new data.
    pub(crate) fn on_timeout(&mut self) {
        self.backoff += 1;
        self.rto_start_ns = None;
        self.probed = true;
        self.recovery = None;
    }

    /// Whether the timeout that just fired follows another with no ACK of new data between:
    /// RFC 5681 §3.1 keeps ssthresh then (and cwnd is already the loss window).
    pub(crate) fn repeated_timeout(&self) -> bool {
        self.backoff > 1
    }

    /// Whether a recovery episode is under way.
    pub(crate) fn in_recovery(&self) -> bool {
        self.recovery.is_some()
    }

    /// A recovery episode begins after packet `last_pn`: it ends once the data sent up to
    /// stream offset `point` is delivered. With `paced` (PRR on, and the controller sets no
    /// pacing rate of its own), PRR governs it (RFC 6937 §3.1); `recover_fs` is the data
    /// outstanding at its start.
    pub(crate) fn enter_recovery(
        &mut self,
        (point, last_pn): (u64, u64),
        recover_fs: u64,
        paced: bool,
    ) {
        let prr = (paced && self.cfg.prr).then(|| Prr {
            recover_fs: recover_fs.max(1),
            delivered: 0,
            out: 0,
            allowance: 0,
        });
        self.recovery = Some(Episode {
            point,
            last_pn,
            prr,
        });
    }

    /// The stream offset the episode under way waits for, and the last packet sent before it.
    pub(crate) fn recovery_point(&self) -> Option<(u64, u64)> {
        self.recovery.map(|e| (e.point, e.last_pn))
    }

    /// The episode is over.
    pub(crate) fn exit_recovery(&mut self) {
        self.recovery = None;
    }

    /// In a PRR episode, an ACK (or the loss timer, with `delivered` 0) delivered `delivered`
    /// bytes and left `pipe` in flight; the controller's threshold is `ssthresh`: the
    /// allowance of bytes in flight until the next ACK.
    pub(crate) fn on_recovery_ack(&mut self, delivered: u64, pipe: u64, ssthresh: u64, mss: u64) {
        if let Some(prr) = self.recovery.as_mut().and_then(|e| e.prr.as_mut()) {
            prr.on_ack(delivered, pipe, ssthresh, mss);
        }
    }

    /// In a PRR episode, the bytes PRR lets be in flight; `None` otherwise (the controller's
    /// window rules).
    pub(crate) fn allowance(&self) -> Option<u64> {
        self.recovery.and_then(|e| e.prr).map(|p| p.allowance)
    }
}

/// Proportional Rate Reduction's state over one recovery (RFC 6937 §3).
#[derive(Clone, Copy, Debug)]
struct Prr {
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
        let mut sndcnt = if pipe > ssthresh {
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
            ssthresh.saturating_sub(pipe).min(limit)
        };
        if self.out == 0 {
            // The fast retransmit goes out whatever the reduction (Linux `tcp_cwnd_reduction`:
            // "force a fast retransmit upon entering fast recovery").
            sndcnt = sndcnt.max(mss);
        }
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

    fn rack() -> TcpLossRecovery {
        TcpLossRecovery::new(TcpRecovery {
            rack: true,
            ..tcp(ms(200), RtoForm::Linux).cfg
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
        // Linux: 40 ms + max(80 ms, 200 ms) = 240 ms; with no minimum, the granularity.
        assert_eq!(tcp(ms(200), RtoForm::Linux).rto(&rtt), ms(240));
        let mut still = RttEstimator::new();
        for _ in 0..100 {
            still.on_sample(ms(40), Duration::ZERO);
        }
        assert_eq!(tcp(Duration::ZERO, RtoForm::Linux).rto(&still), ms(41));
        // RFC 6298 (2.1): 1 s before any sample.
        assert_eq!(r.rto(&RttEstimator::new()), Duration::from_secs(1));
        r.on_sent(0, 1500);
        let at = |r: &TcpLossRecovery| r.next_expiry(&rtt, 0, false).unwrap();
        assert_eq!(at(&r), (1_000_000_000, Expiry::Timeout));
        // RFC 6298 (5.5)-(5.6): back off, restart with the retransmission.
        r.on_timeout();
        assert!(!r.repeated_timeout());
        assert_eq!(r.next_expiry(&rtt, 0, false), None);
        r.on_sent(1_000_000_000, 1500);
        assert_eq!(at(&r).0, 3_000_000_000);
        r.on_timeout();
        assert!(r.repeated_timeout(), "a second timeout with no ACK between");
        r.on_sent(3_000_000_000, 1500);
        assert_eq!(at(&r).0, 7_000_000_000);
        // An ACK that moves the cumulative point ends the backoff and restarts the timer;
        // one that only fills in above it (SACK) leaves the timer where it was (5.3).
        r.on_new_ack(7_100_000_000, true, true);
        assert_eq!(at(&r).0, 8_100_000_000);
        r.on_new_ack(7_150_000_000, false, true);
        assert_eq!(at(&r).0, 8_100_000_000);
        r.on_new_ack(7_200_000_000, true, false);
        assert_eq!(r.next_expiry(&rtt, 0, false), None);
    }

    #[test]
    fn the_backed_off_timeout_stops_at_the_ceiling() {
        let rtt = sampled(ms(40));
        let mut r = tcp(Duration::from_secs(1), RtoForm::Rfc6298);
        for _ in 0..10 {
            r.on_timeout();
        }
        r.on_sent(0, 1500);
        // RFC 6298 (2.5): 2^10 s capped at 60 s.
        let (at, _) = r.next_expiry(&rtt, 0, false).unwrap();
        assert_eq!(at, 60_000_000_000);
    }

    #[test]
    fn the_tail_loss_probe_comes_once_and_at_the_latest_with_the_timeout() {
        let rtt = sampled(ms(40));
        let mut r = rack();
        r.on_sent(0, 1500);
        // RFC 8985 §7.2: PTO = 2 SRTT = 80 ms; with one packet in flight, + WCDelAckT (200 ms),
        // which is after the 240 ms timeout: the probe goes at the timeout's time.
        assert_eq!(
            r.next_expiry(&rtt, 0, false),
            Some((80_000_000, Expiry::Probe))
        );
        assert_eq!(
            r.next_expiry(&rtt, 0, true),
            Some((240_000_000, Expiry::Probe))
        );
        r.on_probe();
        assert_eq!(
            r.next_expiry(&rtt, 80_000_000, false),
            Some((240_000_000, Expiry::Timeout))
        );
        // No probe after a timeout until an ACK of new data, nor in recovery.
        r.on_timeout();
        r.on_sent(240_000_000, 1500);
        assert_eq!(
            r.next_expiry(&rtt, 240_000_000, false).unwrap().1,
            Expiry::Timeout
        );
        r.on_new_ack(300_000_000, true, true);
        assert_eq!(
            r.next_expiry(&rtt, 300_000_000, false).unwrap().1,
            Expiry::Probe
        );
        r.enter_recovery((10_000, 9), 15_000, true);
        assert_eq!(
            r.next_expiry(&rtt, 300_000_000, false).unwrap().1,
            Expiry::Timeout
        );
    }

    #[test]
    fn racks_reordering_window_is_a_quarter_of_the_minimum_rtt_and_none_in_recovery() {
        let rtt = sampled(ms(40));
        let mut r = rack();
        // RFC 8985 §6.2: latest RTT + min RTT / 4 = 50 ms; in recovery, the latest RTT.
        assert_eq!(r.loss_delay(&rtt), Some(ms(50)));
        r.enter_recovery((10_000, 9), 15_000, true);
        assert_eq!(r.loss_delay(&rtt), Some(ms(40)));
        assert_eq!(tcp(ms(200), RtoForm::Linux).loss_delay(&rtt), None);
    }

    #[test]
    fn prr_spreads_the_reduction_over_the_recovery_then_slow_starts_back_to_ssthresh() {
        const MSS: u64 = 1000;
        let mut r = tcp(ms(200), RtoForm::Linux);
        // RFC 6937 §4 example: 20 segments in flight, one lost, ssthresh = 10.
        r.enter_recovery((20 * MSS, 19), 20 * MSS, true);
        let (mut pipe, ssthresh) = (19 * MSS, 10 * MSS);
        let mut sent = Vec::new();
        for _ in 0..19 {
            pipe -= MSS;
            r.on_recovery_ack(MSS, pipe, ssthresh, MSS);
            let mut n = 0;
            while pipe + MSS <= r.allowance().unwrap() {
                pipe += MSS;
                r.on_sent(0, MSS);
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
        r.enter_recovery((20 * MSS, 19), 20 * MSS, true);
        r.on_recovery_ack(MSS, 5 * MSS, ssthresh, MSS);
        assert_eq!(r.allowance(), Some(5 * MSS + 2 * MSS));
        // Entered by the loss timer (nothing delivered), the fast retransmit still goes out.
        let mut r = tcp(ms(200), RtoForm::Linux);
        r.enter_recovery((20 * MSS, 19), 20 * MSS, true);
        r.on_recovery_ack(0, 0, ssthresh, MSS);
        assert_eq!(r.allowance(), Some(MSS));
        // Without PRR, or for a controller that paces itself, the episode has no allowance.
        let mut r = tcp(ms(200), RtoForm::Linux);
        r.enter_recovery((20 * MSS, 19), 20 * MSS, false);
        assert!(r.in_recovery() && r.allowance().is_none());
    }
}
