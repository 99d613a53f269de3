//! NewReno as QUIC runs it, counted in bytes.
//!
//! Sources: RFC 9002 §7 (QUIC congestion control: initial and minimum window §7.2, slow start
//! §7.3.1, recovery period §7.3.2, congestion avoidance §7.3.3, persistent congestion §7.6.2,
//! underutilised window §7.8, pseudocode Appendix B), with the window arithmetic of RFC 5681
//! §3.1 and the one-reduction-per-window-of-data rule of RFC 6582 (which QUIC expresses as a
//! recovery period keyed on send times rather than on sequence numbers).
//!
//! [`NewReno`] is [`Aimd`] with Reno's rule ([`RenoRule`]): the window machinery (initial window,
//! slow start, recovery periods, persistent congestion, application-limited ACKs, tracing) is
//! [`crate::algorithms::aimd`]; the rule supplies congestion avoidance, one MSS per window
//! acknowledged (RFC 9002 §7.3.3, RFC 5681 §3.1 eq. (3)), and the reduction
//! `ssthresh = cwnd * beta` (RFC 9002 §7.3.2).
//!
//! With `per_ack_growth`, the window grows once per ACK as ns-3's `TcpNewReno` grows it
//! (ns-3.44 `src/internet/model/tcp-congestion-ops.cc`, `SlowStart` and `CongestionAvoidance`),
//! so that an ns-3 dumbbell can be modelled (docs/newreno.md).
//!
//! See `docs/newreno.md` for the equations and every choice made.

use crate::algorithms::aimd::{Aimd, AimdRule, Increase};
use crate::controller::{
    Controller, ControllerConfig, ControllerInfo, Instant, ParamError, ParamKind, ParamReader,
    ParamSpec,
};

/// Default multiplicative-decrease factor (RFC 9002 §7.3.2 `kLossReductionFactor`).
pub const DEFAULT_BETA: f64 = 0.5;
/// Largest initial window accepted, packets.
const MAX_PACKETS: u64 = 1_000_000_000;

/// Parameters NewReno accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "beta",
        kind: ParamKind::Number,
        default: "0.5",
        doc: "window reduction factor on a congestion event, 0 < beta < 1 \
              (RFC 9002 §7.3.2 kLossReductionFactor)",
    },
    ParamSpec {
        name: "initial_window",
        kind: ParamKind::Number,
        default: "the transport's (10)",
        doc: "initial window in packets, a whole number from 1 (RFC 9002 §7.2)",
    },
    ParamSpec {
        name: "per_ack_growth",
        kind: ParamKind::Bool,
        default: "false",
        doc: "grow once per ACK as ns-3's TcpNewReno does (slow start min(acked, MSS), \
              congestion avoidance MSS*MSS/cwnd per ACK) instead of per acknowledged byte \
              (RFC 9002 §7.3); with delayed ACKs about half as fast",
    },
];

/// Registry entry for `newreno`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "newreno",
    summary: "NewReno in bytes with QUIC recovery periods (RFC 9002 §7, RFC 5681, RFC 6582)",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build,
};

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    let params = NewRenoParams {
        beta: reader.factor("beta", DEFAULT_BETA)?,
        initial_window_packets: reader.whole_number_in(
            "initial_window",
            config.initial_window_packets,
            1,
            MAX_PACKETS,
        )?,
        per_ack_growth: reader.boolean("per_ack_growth", false),
    };
    Ok(Box::new(NewReno::new(config, params)))
}

/// Settings of one NewReno instance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewRenoParams {
    /// Multiplicative-decrease factor, strictly between 0 and 1.
    pub beta: f64,
    /// Initial window in packets.
    pub initial_window_packets: u64,
    /// Grow once per ACK, as ns-3 does ([`Aimd::with_per_ack_growth`]).
    pub per_ack_growth: bool,
}

impl NewRenoParams {
    /// RFC 9002 defaults for a transport configured with `config`.
    pub fn from_config(config: &ControllerConfig) -> Self {
        NewRenoParams {
            beta: DEFAULT_BETA,
            initial_window_packets: config.initial_window_packets,
            per_ack_growth: false,
        }
    }
}

/// Reno's rule for [`Aimd`]: one MSS per window acknowledged, reduce to `cwnd * beta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RenoRule {
    /// Multiplicative-decrease factor, strictly between 0 and 1.
    beta: f64,
}

impl AimdRule for RenoRule {
    fn increase(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> Increase {
        // RFC 9002 §7.3.3 / RFC 5681 §3.1 eq. (3): cwnd += MSS * acked / cwnd, exactly one
        // MSS per cwnd bytes acknowledged.
        Increase {
            packets: 1,
            per_bytes: cwnd,
        }
    }

    fn ssthresh(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> u64 {
        // RFC 9002 §7.3.2: ssthresh = cwnd * kLossReductionFactor (`Aimd` floors it at the
        // minimum window as RFC 5681 §3.1 eq. (4) floors it at 2 SMSS, and sets cwnd to it).
        (cwnd as f64 * self.beta) as u64
    }

    fn values(&self, _cwnd: u64, _mss: u64) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
}

/// A NewReno controller (RFC 9002 §7).
pub type NewReno = Aimd<RenoRule>;

impl NewReno {
    /// A controller in slow start with the initial window of `params`.
    pub fn new(config: &ControllerConfig, params: NewRenoParams) -> Self {
        // RFC 9002 §7.2: initial window.
        let initial_window = params.initial_window_packets * config.max_datagram_size;
        Aimd::with_initial_window(config, initial_window, RenoRule { beta: params.beta })
            .with_per_ack_growth(params.per_ack_growth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{AckEvent, CongestionEvent, CongestionKind, ParamValue, Params};
    use crate::testing::{self, at};

    const MSS: u64 = 1500;

    fn config() -> ControllerConfig {
        ControllerConfig::default()
    }

    fn reno() -> NewReno {
        NewReno::new(&config(), NewRenoParams::from_config(&config()))
    }

    /// An ACK of `bytes` for a packet sent at `sent`, RTT 100 ms.
    fn ack(bytes: u64, sent: Instant) -> AckEvent {
        testing::ack(bytes, sent, 100)
    }

    /// A loss of one MSS sent at `sent`.
    fn loss(sent: Instant) -> CongestionEvent {
        testing::congestion(CongestionKind::Loss, sent)
    }

    /// One round of ACKs: every packet of the current window, one MSS each, sent at `sent`.
    fn ack_round(c: &mut NewReno, now: Instant, sent: Instant) {
        for _ in 0..c.cwnd() / MSS {
            c.on_ack(now, &ack(MSS, sent));
        }
    }

    /// Loss at 100 ms of a packet sent at 50 ms, then the ACK of a packet sent after the
    /// recovery start ends recovery. Returns the controller in congestion avoidance.
    fn in_congestion_avoidance() -> NewReno {
        let mut c = reno();
        c.on_congestion(at(100), &loss(at(50)));
        c.on_ack(at(200), &ack(MSS, at(150)));
        assert_eq!(c.state().mode, "congestion_avoidance");
        c
    }

    /// NewReno growing per ACK, as ns-3's `TcpNewReno`.
    fn ns3_reno() -> NewReno {
        let params = NewRenoParams {
            per_ack_growth: true,
            ..NewRenoParams::from_config(&config())
        };
        NewReno::new(&config(), params)
    }

    #[test]
    fn per_ack_growth_counts_acks_not_bytes_as_ns3_does() {
        // ns-3 TcpNewReno::SlowStart: + one segment per ACK, so delayed ACKs of two segments
        // grow 10 packets to 15 in a round, not 20 (RFC 5681 §3.1 eq. (2): min(N, SMSS)).
        let mut c = ns3_reno();
        for _ in 0..5 {
            c.on_ack(at(100), &ack(2 * MSS, at(0)));
        }
        assert_eq!(c.cwnd(), 15 * MSS);
        // TcpNewReno::CongestionAvoidance: + MSS * MSS / cwnd per ACK, truncated, whatever it
        // acknowledges: at 5 MSS, 300 bytes per ACK.
        let mut c = ns3_reno();
        c.on_congestion(at(100), &loss(at(50)));
        c.on_ack(at(200), &ack(2 * MSS, at(150)));
        assert_eq!(c.cwnd(), 5 * MSS + 300);
        let w = c.cwnd();
        c.on_ack(at(300), &ack(2 * MSS, at(250)));
        assert_eq!(c.cwnd(), w + MSS * MSS / w);
    }

    #[test]
    fn slow_start_doubles_per_round() {
        // RFC 9002 §7.3.1: cwnd grows by the bytes acknowledged, so a full round of ACKs
        // doubles it; exact (byte arithmetic).
        let mut c = reno();
        assert_eq!(c.cwnd(), 10 * MSS);
        assert_eq!(c.state().mode, "slow_start");
        assert!(c.in_slow_start());
        assert_eq!(c.ssthresh(), None);
        for round in 1..=4u64 {
            ack_round(&mut c, at(100 * round), at(100 * (round - 1)));
            assert_eq!(c.cwnd(), (10 << round) * MSS);
        }
    }

    #[test]
    fn congestion_avoidance_adds_exactly_one_mss_per_window() {
        // RFC 5681 §3.1 eq. (3) / RFC 9002 §7.3.3: +1 MSS per cwnd bytes acknowledged; exact.
        let mut c = in_congestion_avoidance();
        let w = c.cwnd();
        assert_eq!(w, 5 * MSS);
        // The ACK that ended recovery credited 1500 bytes. Odd ACK sizes after it:
        // 1500 + 5 * 1000 + 999 = 7499 < w, and growth happens on the byte that completes w.
        for _ in 0..5 {
            c.on_ack(at(300), &ack(1000, at(250)));
            assert_eq!(c.cwnd(), w);
        }
        c.on_ack(at(300), &ack(999, at(250)));
        assert_eq!(c.cwnd(), w);
        c.on_ack(at(300), &ack(1, at(250)));
        assert_eq!(c.cwnd(), w + MSS);
        // Ten more windows' worth: ten more MSS, nothing more, nothing less.
        let mut now = 400;
        for _ in 0..10 {
            let target = c.cwnd() + MSS;
            let mut acked = 0;
            while acked < c.cwnd() {
                c.on_ack(at(now), &ack(MSS, at(now - 100)));
                acked += MSS;
            }
            assert_eq!(c.cwnd(), target);
            now += 100;
        }
    }

    #[test]
    fn loss_halves_once_per_recovery_period() {
        let mut c = reno();
        ack_round(&mut c, at(100), at(0));
        assert_eq!(c.cwnd(), 20 * MSS);
        // RFC 9002 §7.3.2: cwnd and ssthresh become cwnd * 0.5; exact.
        c.on_congestion(at(200), &loss(at(150)));
        assert_eq!(c.cwnd(), 10 * MSS);
        assert_eq!(c.ssthresh(), Some(10 * MSS));
        assert_eq!(c.state().mode, "recovery");
        assert!(!c.in_slow_start());
        // A second loss of a packet sent before the recovery start: ignored.
        c.on_congestion(at(210), &loss(at(190)));
        assert_eq!(c.cwnd(), 10 * MSS);
        // ACKs of packets sent before the recovery start neither grow cwnd nor end recovery.
        c.on_ack(at(250), &ack(MSS, at(199)));
        c.on_ack(at(250), &ack(MSS, at(200)));
        assert_eq!(c.cwnd(), 10 * MSS);
        assert_eq!(c.state().mode, "recovery");
        // The first ACK of a packet sent after the recovery start ends it and grows cwnd.
        c.on_ack(at(300), &ack(MSS, at(201)));
        assert_eq!(c.state().mode, "congestion_avoidance");
        // Losses of packets sent before the (ended) recovery period still do not count.
        c.on_congestion(at(310), &loss(at(180)));
        assert_eq!(c.ssthresh(), Some(10 * MSS));
        // A loss of a packet sent after the recovery start is a new congestion event.
        c.on_congestion(at(320), &loss(at(205)));
        assert_eq!(c.cwnd(), 5 * MSS);
        assert_eq!(c.ssthresh(), Some(5 * MSS));
    }

    #[test]
    fn ecn_ce_reduces_like_loss() {
        // RFC 9002 §7.3.2: an ECN-CE increase is a congestion event like a loss.
        let mut c = reno();
        let mut ce = loss(at(50));
        ce.kind = CongestionKind::EcnCe;
        c.on_congestion(at(100), &ce);
        assert_eq!(c.cwnd(), 5 * MSS);
    }

    #[test]
    fn reduction_is_floored_at_minimum_window() {
        // RFC 9002 §7.2: cwnd never below kMinimumWindow = 2 * max_datagram_size.
        let mut c = reno();
        for i in 0..5u64 {
            // Each loss is of a packet sent after the previous recovery start.
            c.on_congestion(at(100 * (i + 1)), &loss(at(100 * (i + 1) - 1)));
        }
        assert_eq!(c.cwnd(), 2 * MSS);
        assert_eq!(c.ssthresh(), Some(2 * MSS));
    }

    #[test]
    fn persistent_congestion_collapses_to_minimum_window() {
        let mut c = reno();
        ack_round(&mut c, at(100), at(0));
        // Transport reports the loss, then declares persistent congestion for the same
        // packets: one reduction of ssthresh, cwnd to the minimum window (RFC 9002 §7.6.2).
        c.on_congestion(at(1000), &loss(at(150)));
        let mut pc = loss(at(150));
        pc.kind = CongestionKind::PersistentCongestion;
        c.on_congestion(at(1000), &pc);
        assert_eq!(c.cwnd(), 2 * MSS);
        assert_eq!(c.ssthresh(), Some(10 * MSS));
        assert_eq!(c.state().mode, "slow_start");
        // Recovery start forgotten: every ACK grows cwnd again (slow start up to ssthresh).
        c.on_ack(at(1100), &ack(MSS, at(100)));
        assert_eq!(c.cwnd(), 3 * MSS);
        // ... and the next loss reduces again, even of a packet sent long ago.
        c.on_congestion(at(1200), &loss(at(160)));
        assert_eq!(c.ssthresh(), Some(2 * MSS));

        // Persistent congestion alone (no prior loss event) also reduces ssthresh once.
        let mut d = reno();
        d.on_congestion(at(1000), &pc);
        assert_eq!(d.cwnd(), 2 * MSS);
        assert_eq!(d.ssthresh(), Some(5 * MSS));
    }

    #[test]
    fn no_growth_when_app_limited() {
        // RFC 9002 §7.8: no increase in slow start or congestion avoidance while
        // application-limited.
        let mut c = reno();
        let mut limited = ack(MSS, at(0));
        limited.app_limited = true;
        for _ in 0..100 {
            c.on_ack(at(100), &limited);
        }
        assert_eq!(c.cwnd(), 10 * MSS);

        let mut c = in_congestion_avoidance();
        let w = c.cwnd();
        let mut limited = ack(MSS, at(250));
        limited.app_limited = true;
        for _ in 0..100 {
            c.on_ack(at(300), &limited);
        }
        assert_eq!(c.cwnd(), w);
        // App-limited ACKs earned no credit: a full window of normal ACKs adds one MSS.
        for _ in 0..w / MSS {
            c.on_ack(at(400), &ack(MSS, at(300)));
        }
        assert_eq!(c.cwnd(), w + MSS);
    }

    #[test]
    fn app_limited_ack_still_ends_recovery() {
        let mut c = reno();
        c.on_congestion(at(100), &loss(at(50)));
        let mut limited = ack(MSS, at(150));
        limited.app_limited = true;
        c.on_ack(at(200), &limited);
        assert_eq!(c.state().mode, "congestion_avoidance");
        assert_eq!(c.cwnd(), 5 * MSS);
    }

    #[test]
    fn state_traces_ssthresh_as_minus_one_while_infinite() {
        let mut c = reno();
        let s = c.state();
        assert_eq!(
            s.values,
            vec![("ssthresh_bytes", -1.0), ("cwnd_bytes", 15000.0)]
        );
        c.on_congestion(at(100), &loss(at(50)));
        let s = c.state();
        assert_eq!(
            s.values,
            vec![("ssthresh_bytes", 7500.0), ("cwnd_bytes", 7500.0)]
        );
    }

    #[test]
    fn info_reads_and_checks_parameters() {
        let mut p = Params::new();
        p.insert("beta".into(), ParamValue::Number(0.7));
        p.insert("initial_window".into(), ParamValue::Number(4.0));
        let mut c = INFO.instantiate(&p, &config()).unwrap();
        assert_eq!(c.cwnd(), 4 * MSS);
        c.on_congestion(at(100), &loss(at(50)));
        assert_eq!(c.cwnd(), 4200);

        for (name, bad) in [
            ("beta", 1.0),
            ("beta", 0.0),
            ("initial_window", 0.0),
            ("initial_window", 2.5),
        ] {
            let mut p = Params::new();
            p.insert(name.into(), ParamValue::Number(bad));
            let e = INFO.instantiate(&p, &config()).err().unwrap();
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
