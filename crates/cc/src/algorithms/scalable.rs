//! Scalable TCP, counted in bytes, with QUIC recovery periods.
//!
//! Sources: T. Kelly, "Scalable TCP: Improving Performance in Highspeed Wide Area Networks",
//! CCR 33(2), 2003: `cwnd += a` per acknowledged packet with a = 0.01 and `cwnd -= b cwnd` per
//! congestion event with b = 0.125 (multiplicative increase, multiplicative decrease); Linux
//! `net/ipv4/tcp_scalable.c`: `tcp_cong_avoid_ai` with a window of
//! `min(cwnd, TCP_SCALABLE_AI_CNT)` packets, so one packet per 100 acknowledged once cwnd > 100
//! packets and Reno's one per window below, and `ssthresh = max(cwnd - cwnd / 8, 2)`
//! (`tcp_scalable_ssthresh`). The Reno core around it (slow start, recovery periods, persistent
//! congestion) is [`crate::algorithms::aimd`], QUIC's form of Linux's.
//!
//! `ai_count` is Linux's `TCP_SCALABLE_AI_CNT`: 100 in mainline (a = 0.01 as the paper), 50 in
//! the Linux 3.5.7 module the SIAD evaluation (SIAD paper §IV) used. See
//! `docs/scalable.md` for what 50 means here and every other choice made.

use crate::algorithms::aimd::{Aimd, AimdRule, Increase};
use crate::controller::{
    Controller, ControllerConfig, ControllerInfo, Instant, ParamError, ParamKind, ParamReader,
    ParamSpec,
};

/// Default `ai_count`: acknowledged packets per one-packet increase, a = 1/100 (Kelly 2003;
/// mainline tcp_scalable.c `TCP_SCALABLE_AI_CNT`).
pub const DEFAULT_AI_COUNT: f64 = 100.0;

/// Most accepted `ai_count` (a = 10^-6 per ACK; Reno up to a million-packet window).
const MAX_AI_COUNT: f64 = 1e6;

/// Parameters Scalable TCP accepts.
pub const PARAMS: &[ParamSpec] = &[ParamSpec {
    name: "ai_count",
    kind: ParamKind::Number,
    default: "100",
    doc: "acknowledged packets per one-packet increase once cwnd exceeds them, a = 1/ai_count, \
          1 to 1e6 (tcp_scalable.c TCP_SCALABLE_AI_CNT: 100 in mainline; 50, counted per ACK, \
          in the Linux 3.5.7 module of the SIAD evaluation: see docs/scalable.md)",
}];

/// Registry entry for `scalable`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "scalable",
    summary: "Scalable TCP in bytes with QUIC recovery: a = 0.01 per ACK, b = 0.125 \
              (Kelly 2003, tcp_scalable.c)",
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
    let ai_count = reader.number_in("ai_count", DEFAULT_AI_COUNT, 1.0, MAX_AI_COUNT)?;
    Ok(Box::new(Scalable::new(config, ai_count)))
}

/// The Scalable TCP increase and decrease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalableRule {
    /// `ai_count` packets in bytes: the most acknowledged bytes one MSS of growth costs.
    ai_bytes: u64,
}

impl AimdRule for ScalableRule {
    fn increase(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> Increase {
        // Kelly 2003 §2: cwnd += 0.01 per acknowledged packet; tcp_scalable.c:
        // tcp_cong_avoid_ai(min(cwnd, TCP_SCALABLE_AI_CNT)), one MSS per min(cwnd, ai_count
        // packets) acknowledged, so Reno's one per window while cwnd <= ai_count packets.
        Increase {
            packets: 1,
            per_bytes: cwnd.min(self.ai_bytes),
        }
    }

    fn ssthresh(&mut self, _now: Instant, cwnd: u64, _mss: u64) -> u64 {
        // Kelly 2003 §2: b = 0.125; tcp_scalable_ssthresh: cwnd - (cwnd >> 3).
        cwnd - cwnd / 8
    }

    fn values(&self, _cwnd: u64, _mss: u64) -> Vec<(&'static str, f64)> {
        vec![("ai_bytes", self.ai_bytes as f64)]
    }
}

/// A Scalable TCP controller (Kelly 2003, Linux tcp_scalable.c).
pub type Scalable = Aimd<ScalableRule>;

impl Scalable {
    /// A controller in slow start with the transport's initial window; one MSS of growth per
    /// `ai_count` packets acknowledged once the window exceeds that many.
    pub fn new(config: &ControllerConfig, ai_count: f64) -> Self {
        let ai_bytes = (ai_count * config.max_datagram_size as f64) as u64;
        Aimd::with_rule(config, ScalableRule { ai_bytes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{CongestionKind, ParamValue, Params};
    use crate::testing::{ack, at, congestion};

    const MSS: u64 = 1500;

    /// A controller at exactly `packets` packets in congestion avoidance: slow start to
    /// 8/7 of it, then one loss (x 0.875).
    fn in_congestion_avoidance(packets: u64, ai_count: f64) -> Scalable {
        let mut c = Scalable::new(&ControllerConfig::default(), ai_count);
        let target = packets * MSS * 8 / 7;
        while c.cwnd() < target {
            let step = (target - c.cwnd()).min(MSS);
            c.on_ack(at(1), &ack(step, at(0), 100));
        }
        c.on_congestion(at(2), &congestion(CongestionKind::Loss, at(1)));
        c.on_ack(at(3), &ack(MSS, at(3), 100));
        assert_eq!(c.state().mode, "congestion_avoidance");
        c
    }

    /// One RTT of ACKs: as many MSS-sized ACKs as the window held at the start of the round.
    fn ack_round(c: &mut Scalable, now_ms: u64) {
        for _ in 0..c.cwnd() / MSS {
            c.on_ack(at(now_ms), &ack(MSS, at(now_ms - 1), 100));
        }
    }

    #[test]
    fn one_packet_per_hundred_acked_above_the_threshold() {
        // Kelly 2003: cwnd += 0.01 per ACK. tcp_scalable.c: +1 packet per 100 acknowledged
        // once cwnd > 100 packets. Exact with byte counting: 99 packets' ACKs add nothing,
        // the 100th adds one MSS, 1000 more add ten.
        let mut c = in_congestion_avoidance(400, DEFAULT_AI_COUNT);
        let w = c.cwnd();
        for _ in 0..98 {
            c.on_ack(at(4), &ack(MSS, at(3), 100));
        }
        assert_eq!(c.cwnd(), w, "1 + 98 packets acknowledged");
        c.on_ack(at(4), &ack(MSS, at(3), 100));
        assert_eq!(c.cwnd(), w + MSS);
        for _ in 0..1000 {
            c.on_ack(at(5), &ack(MSS, at(4), 100));
        }
        assert_eq!(c.cwnd(), w + 11 * MSS);
    }

    #[test]
    fn about_one_percent_per_rtt_above_the_threshold() {
        // Kelly 2003 §2: a = 0.01 per ACK makes cwnd grow by 1 % per RTT (multiplicative
        // increase). From 1000 packets, 50 RTTs give 1000 * 1.01^50 = 1644.6 packets; the
        // increase is in whole MSS carried exactly, so the tolerance is 0.5 % (measured:
        // within one packet).
        let mut c = in_congestion_avoidance(1000, DEFAULT_AI_COUNT);
        let w0 = c.cwnd() as f64;
        for round in 0..50 {
            ack_round(&mut c, 4 + round);
        }
        let expected = w0 * 1.01f64.powi(50);
        let got = c.cwnd() as f64;
        assert!(
            (got / expected - 1.0).abs() < 0.005,
            "{got} vs {expected} bytes"
        );
    }

    #[test]
    fn reno_at_or_below_the_threshold() {
        // tcp_scalable.c: min(cwnd, 100) makes it Reno at <= 100 packets: exactly one MSS per
        // window of ACKs.
        let mut c = in_congestion_avoidance(56, DEFAULT_AI_COUNT);
        for round in 0..10 {
            let w = c.cwnd();
            ack_round(&mut c, 4 + round);
            assert_eq!(c.cwnd(), w + MSS, "round {round}");
        }
    }

    #[test]
    fn a_congestion_event_keeps_seven_eighths() {
        // Kelly 2003: b = 0.125, cwnd -> 0.875 cwnd (tcp_scalable_ssthresh); exact in bytes.
        let mut c = in_congestion_avoidance(800, DEFAULT_AI_COUNT);
        assert_eq!(c.cwnd(), 800 * MSS);
        assert_eq!(c.ssthresh(), Some(800 * MSS));
        c.on_congestion(at(10), &congestion(CongestionKind::Loss, at(9)));
        assert_eq!(c.cwnd(), 700 * MSS);
        // Once per recovery period (RFC 9002 §7.3.2).
        c.on_congestion(at(11), &congestion(CongestionKind::EcnCe, at(9)));
        assert_eq!(c.cwnd(), 700 * MSS);
        // Persistent congestion: minimum window, ssthresh as reduced (RFC 9002 §7.6.2).
        c.on_congestion(
            at(12),
            &congestion(CongestionKind::PersistentCongestion, at(9)),
        );
        assert_eq!((c.cwnd(), c.ssthresh()), (2 * MSS, Some(700 * MSS)));
        assert_eq!(c.state().mode, "slow_start");
    }

    #[test]
    fn ai_count_50_doubles_the_rate_as_linux_3_5_7() {
        // Linux 3.5.7 tcp_scalable.c: TCP_SCALABLE_AI_CNT = 50, one packet per 50 counted
        // ACKs, i.e. 2 % per RTT when every packet is acknowledged (exact over 1000 ACKs).
        let mut c = in_congestion_avoidance(400, 50.0);
        let w = c.cwnd();
        for _ in 0..999 {
            c.on_ack(at(4), &ack(MSS, at(3), 100));
        }
        assert_eq!(c.cwnd(), w + 20 * MSS);
    }

    #[test]
    fn info_reads_and_checks_ai_count() {
        let mut p = Params::new();
        p.insert("ai_count".into(), ParamValue::Number(50.0));
        let c = INFO.instantiate(&p, &ControllerConfig::default()).unwrap();
        assert_eq!(c.state().values[2], ("ai_bytes", 75_000.0));
        for bad in [0.0, 0.5, 2e6] {
            p.insert("ai_count".into(), ParamValue::Number(bad));
            let e = INFO.instantiate(&p, &ControllerConfig::default()).err();
            assert!(e.unwrap().to_string().contains("ai_count"));
        }
    }
}
