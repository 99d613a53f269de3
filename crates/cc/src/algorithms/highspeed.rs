//! HighSpeed TCP with the Linux AIMD table, counted in bytes, with QUIC recovery periods.
//!
//! Sources: RFC 3649 (HighSpeed TCP for Large Congestion Windows): the response function §5
//! with Low_Window = 38, High_Window = 83000, High_P = 10^-7, High_Decrease = 0.1, the per-ACK
//! increase `cwnd += a(w)/cwnd` and the decrease `cwnd = (1 - b(w)) cwnd` (§5), standard TCP at
//! `w <= Low_Window` (§5), and the table of a(w), b(w) in Appendix B; Linux
//! `net/ipv4/tcp_highspeed.c`, whose `hstcp_aimd_vals` table (b(w) stored as `md` x 256) is
//! used here as it is: row `i` covers windows up to its bound and gives
//! a(w) = i + 1 packets per RTT and b(w) = md / 256. The Reno core around it (slow start,
//! recovery periods, persistent congestion) is [`crate::algorithms::aimd`], QUIC's form of Linux's.
//!
//! Units: windows in bytes; the table is indexed by the window in packets of the transport's
//! max datagram size. See `docs/highspeed.md` for every choice made.

use crate::algorithms::aimd::{Aimd, AimdRule, Increase};
use crate::controller::{
    Controller, ControllerConfig, ControllerInfo, Instant, ParamError, ParamReader, ParamSpec,
};

/// Linux `hstcp_aimd_vals` (RFC 3649 Appendix B): per row, the largest window in packets the
/// row covers and b(w) x 256. Row `i` increases by `i + 1` packets per RTT.
const AIMD_TABLE: [(u64, u64); 72] = [
    (38, 128),
    (118, 112),
    (221, 104),
    (347, 98),
    (495, 93),
    (663, 89),
    (851, 86),
    (1058, 83),
    (1284, 81),
    (1529, 78),
    (1793, 76),
    (2076, 74),
    (2378, 72),
    (2699, 71),
    (3039, 69),
    (3399, 68),
    (3778, 66),
    (4177, 65),
    (4596, 64),
    (5036, 62),
    (5497, 61),
    (5979, 60),
    (6483, 59),
    (7009, 58),
    (7558, 57),
    (8130, 56),
    (8726, 55),
    (9346, 54),
    (9991, 53),
    (10661, 52),
    (11358, 52),
    (12082, 51),
    (12834, 50),
    (13614, 49),
    (14424, 48),
    (15265, 48),
    (16137, 47),
    (17042, 46),
    (17981, 45),
    (18955, 45),
    (19965, 44),
    (21013, 43),
    (22101, 43),
    (23230, 42),
    (24402, 41),
    (25618, 41),
    (26881, 40),
    (28193, 39),
    (29557, 39),
    (30975, 38),
    (32450, 38),
    (33986, 37),
    (35586, 36),
    (37253, 36),
    (38992, 35),
    (40808, 35),
    (42707, 34),
    (44694, 33),
    (46776, 33),
    (48961, 32),
    (51258, 32),
    (53677, 31),
    (56230, 30),
    (58932, 30),
    (61799, 29),
    (64851, 28),
    (68113, 28),
    (71617, 27),
    (75401, 26),
    (79517, 26),
    (84035, 25),
    (89053, 24),
];

/// Fixed-point scale of the table's b(w) (tcp_highspeed.c: `md` is b(w) << 8).
const MD_SCALE: u64 = 256;

/// HighSpeed TCP takes no parameters: its constants are RFC 3649's.
pub const PARAMS: &[ParamSpec] = &[];

/// Registry entry for `highspeed`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "highspeed",
    summary: "HighSpeed TCP in bytes with QUIC recovery and the Linux a(w)/b(w) table \
              (RFC 3649, tcp_highspeed.c)",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: false,
    build,
};

fn build(
    _reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    Ok(Box::new(HighSpeed::new(config)))
}

/// The table row for a window of `cwnd` bytes: the first row whose bound, in bytes, is at
/// least `cwnd`; the last row beyond the table (tcp_highspeed.c `hstcp_cong_avoid`:
/// `aimd_vals[ai-1].cwnd < cwnd <= aimd_vals[ai].cwnd`).
fn row(cwnd: u64, mss: u64) -> usize {
    let i = AIMD_TABLE.partition_point(|&(bound, _)| bound.saturating_mul(mss) < cwnd);
    i.min(AIMD_TABLE.len() - 1)
}

/// a(w): packets added per RTT at a window of `cwnd` bytes (RFC 3649 §5, Appendix B; 1 at
/// `w <= Low_Window`, standard TCP).
pub fn a(cwnd: u64, mss: u64) -> u64 {
    row(cwnd, mss) as u64 + 1
}

/// b(w): the fraction of the window removed at a congestion event at a window of `cwnd` bytes
/// (RFC 3649 §5, Appendix B as tcp_highspeed.c stores it; 0.5 at `w <= Low_Window`).
pub fn b(cwnd: u64, mss: u64) -> f64 {
    AIMD_TABLE[row(cwnd, mss)].1 as f64 / MD_SCALE as f64
}

/// The HighSpeed increase and decrease.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HighSpeedRule;

impl AimdRule for HighSpeedRule {
    fn increase(&mut self, _now: Instant, cwnd: u64, mss: u64) -> Increase {
        // RFC 3649 §5: cwnd += a(w) / cwnd per acknowledged packet, i.e. a(w) MSS per cwnd
        // bytes acknowledged (tcp_highspeed.c `snd_cwnd_cnt += ai + 1`).
        Increase {
            packets: a(cwnd, mss),
            per_bytes: cwnd,
        }
    }

    fn ssthresh(&mut self, _now: Instant, cwnd: u64, mss: u64) -> u64 {
        // RFC 3649 §5: cwnd = (1 - b(w)) cwnd (tcp_highspeed.c `hstcp_ssthresh`:
        // cwnd - cwnd * md >> 8).
        let md = AIMD_TABLE[row(cwnd, mss)].1;
        cwnd - (cwnd as u128 * md as u128 / MD_SCALE as u128) as u64
    }

    fn values(&self, cwnd: u64, mss: u64) -> Vec<(&'static str, f64)> {
        vec![("a_packets", a(cwnd, mss) as f64), ("b", b(cwnd, mss))]
    }
}

/// A HighSpeed TCP controller (RFC 3649 with the Linux table).
pub type HighSpeed = Aimd<HighSpeedRule>;

impl HighSpeed {
    /// A controller in slow start with the transport's initial window.
    pub fn new(config: &ControllerConfig) -> Self {
        Aimd::with_rule(config, HighSpeedRule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{CongestionKind, ParamValue, Params};
    use crate::testing::{ack, at, congestion, value};

    const MSS: u64 = 1500;

    fn packets(n: u64) -> u64 {
        n * MSS
    }

    /// A controller still in slow start whose window is exactly `target` bytes.
    fn at_window(target: u64) -> HighSpeed {
        let mut c = HighSpeed::new(&ControllerConfig::default());
        while c.cwnd() < target {
            let step = (target - c.cwnd()).min(MSS);
            c.on_ack(at(1), &ack(step, at(0), 100));
        }
        assert_eq!(c.cwnd(), target);
        c
    }

    /// Acknowledges `rounds` windows, each as many MSS-sized ACKs as the window held at the
    /// start of its round (one RTT of ACKs), from `now_ms` on; returns the next free ms.
    fn ack_rounds(c: &mut HighSpeed, rounds: u64, mut now_ms: u64) -> u64 {
        for _ in 0..rounds {
            for _ in 0..c.cwnd() / MSS {
                c.on_ack(at(now_ms), &ack(MSS, at(now_ms - 1), 100));
            }
            now_ms += 1;
        }
        now_ms
    }

    #[test]
    fn table_matches_the_rfc_3649_response_function() {
        // RFC 3649 §5: b(w) = (High_Decrease - 0.5)(ln w - ln 38)/(ln 83000 - ln 38) + 0.5,
        // p(w) = 0.078 / w^1.2, a(w) = w^2 p(w) 2 b(w) / (2 - b(w)). Appendix B lists the
        // windows at which a(w) reaches each integer: at each row bound the formula's a(w)
        // must be the row's a within 0.05 (the measured worst case is 0.047, at the last row)
        // and b(w) the row's b within 1/256 (Linux stores b x 256, truncated).
        let (lo, hi) = (38f64.ln(), 83000f64.ln());
        for (i, &(w, md)) in AIMD_TABLE.iter().enumerate() {
            let wf = w as f64;
            let bw = (0.1 - 0.5) * (wf.ln() - lo) / (hi - lo) + 0.5;
            let p = 0.078 / wf.powf(1.2);
            let aw = wf * wf * p * 2.0 * bw / (2.0 - bw);
            assert!((aw - (i + 1) as f64).abs() < 0.05, "row {i}: a({w}) = {aw}");
            assert!(
                (bw - md as f64 / 256.0).abs() < 1.0 / 256.0,
                "row {i}: b({w}) = {bw}"
            );
        }
    }

    #[test]
    fn a_and_b_from_the_table_at_several_windows() {
        // tcp_highspeed.c hstcp_aimd_vals: exact.
        for (w, a_w, md) in [
            (1, 1, 128),
            (38, 1, 128),
            (39, 2, 112),
            (118, 2, 112),
            (119, 3, 104),
            (1000, 8, 83),
            (10_000, 30, 52),
            (83_000, 71, 25),
            (89_053, 72, 24),
            (1_000_000, 72, 24),
        ] {
            assert_eq!(a(packets(w), MSS), a_w, "a({w})");
            assert_eq!(b(packets(w), MSS), md as f64 / 256.0, "b({w})");
        }
        // The boundary is in bytes: one byte above 38 packets is in the second row.
        assert_eq!(a(packets(38) + 1, MSS), 2);
    }

    #[test]
    fn standard_tcp_at_or_below_38_packets() {
        // RFC 3649 §5: w <= Low_Window = 38 uses standard TCP: +1 packet per window of ACKs
        // (exact with byte counting) and a reduction to half (exact).
        let mut c = at_window(packets(20));
        c.on_congestion(at(2), &congestion(CongestionKind::Loss, at(1)));
        assert_eq!(c.cwnd(), packets(10));
        c.on_ack(at(3), &ack(MSS, at(3), 100));
        let mut now = 4;
        while c.cwnd() < packets(38) {
            let w = c.cwnd();
            now = ack_rounds(&mut c, 1, now);
            assert_eq!(c.cwnd(), w + MSS, "one packet per window at {w} bytes");
        }
        assert_eq!(value(&c, "a_packets"), 1.0);
        assert_eq!(value(&c, "b"), 0.5);
        c.on_congestion(at(now), &congestion(CongestionKind::Loss, at(now - 1)));
        assert_eq!(c.cwnd(), packets(19));
    }

    #[test]
    fn above_38_packets_the_window_grows_a_w_per_rtt_and_loses_b_w() {
        // From 1300 packets (row 9: b = 78/256) a loss leaves 1300 - 1300 * 78/256 packets,
        // exact in bytes: 903.9 packets, row 7 (852..=1058): a = 8, b = 83/256.
        let mut c = at_window(packets(1300));
        c.on_congestion(at(2), &congestion(CongestionKind::Loss, at(1)));
        let w = packets(1300) - packets(1300) * 78 / 256;
        assert_eq!(c.cwnd(), w);
        assert_eq!(
            (value(&c, "a_packets"), value(&c, "b")),
            (8.0, 83.0 / 256.0)
        );
        // RFC 3649 §5: cwnd += a(w)/cwnd per ACK. The first MSS is added on the byte that
        // brings the credit to a window: after exactly ceil(w / 8) bytes (exact).
        let first = w.div_ceil(8);
        c.on_ack(at(3), &ack(first - 1, at(3), 100));
        assert_eq!(c.cwnd(), w);
        c.on_ack(at(3), &ack(1, at(3), 100));
        assert_eq!(c.cwnd(), w + MSS);
        // Per RTT a(w) = 8 packets: ten windows of ACKs add 80 packets, or 79 since the
        // window grows inside each round (at most one packet short over the ten, 1.3 %).
        let w = c.cwnd();
        let now = ack_rounds(&mut c, 10, 4);
        let grown = (c.cwnd() - w) / MSS;
        assert!(
            (79..=80).contains(&grown),
            "grew {grown} packets in 10 RTTs"
        );
        // RFC 3649 §5: cwnd = (1 - b(w)) cwnd with b = 83/256 (exact).
        let w = c.cwnd();
        c.on_congestion(at(now), &congestion(CongestionKind::Loss, at(now - 1)));
        assert_eq!(c.cwnd(), w - w * 83 / 256);
    }

    #[test]
    fn info_builds_it_without_parameters() {
        let c = INFO.instantiate(&Params::new(), &ControllerConfig::default());
        assert_eq!(c.unwrap().cwnd(), packets(10));
        let mut p = Params::new();
        p.insert("beta".into(), ParamValue::Number(0.5));
        let e = INFO.instantiate(&p, &ControllerConfig::default()).err();
        assert!(e.unwrap().to_string().contains("takes none"));
    }
}
