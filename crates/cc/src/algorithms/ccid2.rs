//! CCID 2, DCCP's TCP-like congestion control, counted in packets as Linux counts it.
//!
//! Sources: RFC 4341 (CCID 2: `pipe`, cwnd and ssthresh in packets, slow start and congestion
//! avoidance, one halving per window of data, the retransmission timeout §5; the Ack Ratio
//! limit §6.1.2), RFC 4340 (DCCP: the Ack Ratio feature §11.3, the Sequence Window feature
//! §7.5.2), RFC 3390 (the initial window), RFC 2861 (congestion window validation), and the
//! Linux implementation, `net/dccp/ccids/ccid2.c` with `ccid2.h` (`ccid2_hc_tx_packet_recv`,
//! `ccid2_new_ack`, `ccid2_congestion_event`, `ccid2_hc_tx_rto_expire`,
//! `ccid2_hc_tx_packet_sent`, `ccid2_cwnd_restart`, `ccid2_cwnd_application_limited`,
//! `ccid2_change_l_ack_ratio`, `ccid2_check_l_ack_ratio`, `ccid2_change_l_seq_window`), which
//! is followed wherever the RFCs leave room. Each rule below is tagged with where it comes from.
//!
//! Who does what: the DCCP-like transport reads the receiver's Ack Vectors (RFC 4340 §11.4),
//! declares packets lost by the NUMDUPACK = 3 rule and owns the retransmission timer; it tells
//! this controller per ACK how many packets were newly acknowledged ([`AckEvent`]), per
//! loss-detection pass which packets were lost or ECN-marked ([`CongestionEvent`]), and when
//! the timer fired (`PersistentCongestion`). The controller keeps what Linux keeps in
//! `struct ccid2_hc_tx_sock` and `struct dccp_sock` for the sender: cwnd, ssthresh, the
//! slow-start/avoidance counter, the Ack Ratio it asks the receiver to use
//! ([`Controller::ack_ratio`]), its own and its peer's Sequence Window, and a copy of the
//! retransmission timeout (RFC 2861's validation periods are measured in RTOs). See
//! `docs/ccid2.md` for the equations and every choice made where the sources are silent.

use crate::algorithms::recovery::{ssthresh_value, INFINITE};
use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, ControllerConfig, ControllerInfo,
    ControllerState, Instant, ParamError, ParamKind, ParamReader, ParamSpec, SentPacket,
};
use crate::estimators::rtt::RttEstimator;
use std::time::Duration;

/// The Ack Ratio feature's initial value (RFC 4340 §11.3).
pub const DEFAULT_ACK_RATIO: u64 = 2;
/// Largest Ack Ratio: the feature takes two-byte values (RFC 4340 §11.3; feat.h
/// `DCCPF_ACK_RATIO_MAX`).
pub const MAX_ACK_RATIO: u64 = 0xFFFF;
/// The Sequence Window feature's initial value (RFC 4340 §7.5.2; Linux sysctl
/// `net.dccp.default.seq_window`).
pub const DEFAULT_SEQUENCE_WINDOW: u64 = 100;
/// Smallest Sequence Window (RFC 4340 §7.5.2; feat.h `DCCPF_SEQ_WMIN`).
pub const MIN_SEQUENCE_WINDOW: u64 = 32;
/// Largest Sequence Window, 2^46 - 1 (RFC 4340 §7.5.2; feat.h `DCCPF_SEQ_WMAX`).
pub const MAX_SEQUENCE_WINDOW: u64 = (1 << 46) - 1;
/// The Sequence Window is kept at about this many windows of packets (RFC 4340 §7.5.2;
/// ccid2.h `CCID2_WIN_CHANGE_FACTOR`).
const WIN_CHANGE_FACTOR: u64 = 5;
/// RTO before any RTT sample (dccp.h `DCCP_TIMEOUT_INIT`).
const INITIAL_RTO: Duration = Duration::from_secs(3);
/// Largest RTO, backed off or not (dccp.h `DCCP_RTO_MAX`).
const MAX_RTO: Duration = Duration::from_secs(64);
/// Floor of the variation term of the RTO (Linux `tcp_rto_min`, 200 ms; RFC 4341 §5: DCCP
/// does not need TCP's one-second minimum).
const MIN_RTO_VARIATION: Duration = Duration::from_millis(200);
/// Largest initial window accepted, packets.
const MAX_INITIAL_WINDOW: u64 = 1_000_000_000;

/// Parameters CCID 2 accepts.
pub const PARAMS: &[ParamSpec] = &[
    ParamSpec {
        name: "initial_window",
        kind: ParamKind::Number,
        default: "RFC 3390 for the packet size (3 at 1500 B)",
        doc: "initial window in packets, a whole number from 1; by default 4 for packets up \
              to 1095 B, 3 up to 2190 B, else 2 (RFC 3390, RFC 4341 §5, ccid2.h \
              rfc3390_bytes_to_packets)",
    },
    ParamSpec {
        name: "ack_ratio",
        kind: ParamKind::Number,
        default: "2",
        doc: "initial Ack Ratio, a whole number from 1 to 65535, at most ceil(cwnd/2) \
              (RFC 4340 §11.3, RFC 4341 §6.1.2; ccid2.c ccid2_hc_tx_init)",
    },
    ParamSpec {
        name: "sequence_window",
        kind: ParamKind::Number,
        default: "100",
        doc: "initial Sequence Window of both endpoints, a whole number from 32 to 2^46-1; \
              the sender's then follows 5 cwnd, the receiver's stays (RFC 4340 §7.5.2; \
              Linux sysctl net.dccp.default.seq_window)",
    },
    ParamSpec {
        name: "cwv",
        kind: ParamKind::Bool,
        default: "true",
        doc: "congestion window validation: shrink cwnd after idle or application-limited \
              periods of an RTO (RFC 2861; ccid2.c ccid2_do_cwv)",
    },
    ParamSpec {
        name: "slow_start_packets",
        kind: ParamKind::Number,
        default: "2",
        doc: "packets acknowledged per one-packet increase in slow start, 1 or 2: 2 as \
              ccid2.c ccid2_new_ack (about x1.5 per RTT), 1 as TCP (RFC 5681 §3.1); at most \
              ceil(AckRatio/2) increases per ACK either way",
    },
];

/// Registry entry for `ccid2`.
pub const INFO: ControllerInfo = ControllerInfo {
    name: "ccid2",
    summary: "DCCP CCID 2, TCP-like congestion control in packets with Ack Ratio and \
              Sequence Window, as Linux ccid2.c (RFC 4341, RFC 4340)",
    params: PARAMS,
    one_way_delay: false,
    runtime_params: &[],
    subflows: false,
    rate_based: false,
    dccp_only: true,
    build,
};

fn build(
    reader: &ParamReader,
    config: &ControllerConfig,
) -> Result<Box<dyn Controller>, ParamError> {
    let defaults = Ccid2Params::from_config(config);
    let params = Ccid2Params {
        initial_window: reader.whole_number_in(
            "initial_window",
            defaults.initial_window,
            1,
            MAX_INITIAL_WINDOW,
        )?,
        ack_ratio: reader.whole_number_in("ack_ratio", DEFAULT_ACK_RATIO, 1, MAX_ACK_RATIO)?,
        sequence_window: reader.whole_number_in(
            "sequence_window",
            DEFAULT_SEQUENCE_WINDOW,
            MIN_SEQUENCE_WINDOW,
            MAX_SEQUENCE_WINDOW,
        )?,
        cwv: reader.boolean("cwv", true),
        slow_start_packets: reader.whole_number_in("slow_start_packets", 2, 1, 2)?,
    };
    Ok(Box::new(Ccid2::new(config, params)))
}

/// The initial window in packets for packets of `size` bytes: RFC 3390's
/// min(4 MSS, max(2 MSS, 4380 B)) as RFC 5681 §3.1 tabulates it (ccid2.h
/// `rfc3390_bytes_to_packets`).
pub fn rfc3390_packets(size: u64) -> u64 {
    if size <= 1095 {
        4
    } else if size <= 2190 {
        3
    } else {
        2
    }
}

/// Settings of one CCID 2 instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ccid2Params {
    /// Initial window, packets.
    pub initial_window: u64,
    /// Initial Ack Ratio (clamped to [1, ceil(initial_window / 2)]).
    pub ack_ratio: u64,
    /// Initial Sequence Window of the sender and of the receiver.
    pub sequence_window: u64,
    /// Whether RFC 2861 congestion window validation runs (`ccid2_do_cwv`).
    pub cwv: bool,
    /// Packets acknowledged per one-packet increase in slow start (Linux: 2).
    pub slow_start_packets: u64,
}

impl Ccid2Params {
    /// The defaults of Linux for a transport configured with `config`.
    pub fn from_config(config: &ControllerConfig) -> Self {
        Ccid2Params {
            initial_window: rfc3390_packets(config.max_datagram_size),
            ack_ratio: DEFAULT_ACK_RATIO,
            sequence_window: DEFAULT_SEQUENCE_WINDOW,
            cwv: true,
            slow_start_packets: 2,
        }
    }
}

/// A CCID 2 sender (RFC 4341 as Linux ccid2.c runs it).
#[derive(Clone, Debug)]
pub struct Ccid2 {
    /// Bytes of every data packet.
    mss: u64,
    params: Ccid2Params,
    /// Congestion window, packets (`tx_cwnd`).
    cwnd: u64,
    /// Slow-start threshold, packets; [`INFINITE`] is Linux's "arbitrarily high" `~0U`.
    ssthresh: u64,
    /// Packets acknowledged towards the next increase (`tx_packets_acked`).
    packets_acked: u64,
    /// The Ack Ratio asked of the receiver (`dccps_l_ack_ratio`).
    ack_ratio: u64,
    /// The sender's Sequence Window (`dccps_l_seq_win`).
    local_seq_window: u64,
    /// The receiver's Sequence Window (`dccps_r_seq_win`); a receiver that sends no data never
    /// changes it.
    remote_seq_window: u64,
    /// When the last reduction happened (`tx_last_cong`); `None` before the first.
    last_cong: Option<Instant>,
    /// RTT estimates behind the RTO copy.
    rtt: RttEstimator,
    /// The retransmission timeout as the transport runs it (`tx_rto`), backed off.
    rto: Duration,
    /// Packets in flight as the transport last reported them (`tx_pipe`).
    pipe: u64,
    /// When the last data packet was sent (`tx_lsndtime`).
    last_sent: Option<Instant>,
    /// Start of the current validation period (`tx_cwnd_stamp`).
    cwnd_stamp: Option<Instant>,
    /// Largest pipe seen in it while not cwnd-limited, W_used of RFC 2861 (`tx_cwnd_used`).
    cwnd_used: u64,
}

impl Ccid2 {
    /// A sender in slow start with the initial window, Ack Ratio and Sequence Window of
    /// `params`.
    pub fn new(config: &ControllerConfig, params: Ccid2Params) -> Self {
        // RFC 4341 §5, ccid2.c ccid2_hc_tx_init: cwnd = RFC 3390's window, ssthresh
        // arbitrarily high.
        let cwnd = params.initial_window.max(1);
        let mut c = Ccid2 {
            mss: config.max_datagram_size.max(1),
            params,
            cwnd,
            ssthresh: INFINITE,
            packets_acked: 0,
            ack_ratio: 1,
            local_seq_window: DEFAULT_SEQUENCE_WINDOW,
            remote_seq_window: DEFAULT_SEQUENCE_WINDOW,
            last_cong: None,
            rtt: RttEstimator::new(),
            rto: INITIAL_RTO,
            pipe: 0,
            last_sent: None,
            cwnd_stamp: None,
            cwnd_used: 0,
        };
        // ccid2.c ccid2_hc_tx_init: an Ack Ratio of 0 or above ceil(cwnd/2) becomes
        // ceil(cwnd/2) (RFC 4341 §6.1.2).
        c.change_ack_ratio(params.ack_ratio);
        // Both Sequence Windows start at the configured value (RFC 4340 §7.5.2).
        c.change_seq_window(params.sequence_window);
        c.remote_seq_window = c.local_seq_window;
        c
    }

    /// ceil(cwnd / 2), the largest Ack Ratio RFC 4341 §6.1.2 allows.
    fn max_ack_ratio(&self) -> u64 {
        self.cwnd.div_ceil(2)
    }

    /// ccid2.c ccid2_change_l_ack_ratio: a new Ack Ratio, at most ceil(cwnd/2) (RFC 4341
    /// §6.1.2; Linux ignores that RFC's "2 is always acceptable", which deadlocks at cwnd < 2)
    /// and at most the feature's two-byte limit (RFC 4340 §11.3).
    fn change_ack_ratio(&mut self, value: u64) {
        let max_ratio = self.max_ack_ratio();
        let value = if value == 0 || value > max_ratio {
            max_ratio
        } else {
            value
        };
        self.ack_ratio = value.clamp(1, MAX_ACK_RATIO);
    }

    /// ccid2.c ccid2_check_l_ack_ratio, after a reduction of cwnd: an Ack Ratio the window no
    /// longer allows becomes half the window (or 1), so one lost ACK cannot stall the sender.
    /// Linux checks `AckRatio > cwnd`; this checks RFC 4341 §6.1.2's `AckRatio > ceil(cwnd/2)`
    /// so the limit holds at all times (docs/ccid2.md).
    fn check_ack_ratio(&mut self) {
        if self.ack_ratio > self.max_ack_ratio() {
            self.change_ack_ratio((self.cwnd / 2).max(1));
        }
    }

    /// ccid2.c ccid2_change_l_seq_window: a new local Sequence Window within RFC 4340
    /// §7.5.2's [32, 2^46 - 1].
    fn change_seq_window(&mut self, value: u64) {
        self.local_seq_window = value.clamp(MIN_SEQUENCE_WINDOW, MAX_SEQUENCE_WINDOW);
    }

    /// Window growth for `acked` newly acknowledged packets of one ACK (ccid2.c
    /// ccid2_new_ack, called per packet by ccid2_hc_tx_packet_recv).
    fn grow(&mut self, mut acked: u64) {
        // ccid2.c ccid2_hc_tx_packet_recv: in slow start an ACK may add at most
        // ceil(AckRatio/2) packets ("Rounding up avoids that cwnd is not advanced when Ack
        // Ratio is 1").
        let mut max_increase = if self.cwnd < self.ssthresh {
            self.ack_ratio.div_ceil(2)
        } else {
            0
        };
        while acked > 0 {
            // ccid2.c ccid2_new_ack: no growth unless cwnd fits in the local Sequence Window
            // and the ACKs of a window (cwnd / AckRatio) fit in the remote one (RFC 4340
            // §7.5.2). Neither changes within one ACK, so nothing further grows either.
            let remote_used = self.cwnd / self.ack_ratio;
            if self.cwnd >= self.local_seq_window || remote_used >= self.remote_seq_window {
                return;
            }
            let slow_start = self.cwnd < self.ssthresh;
            // ccid2.c ccid2_new_ack: once this ACK's increases are spent, slow start does not
            // even count packets (`*maxincr > 0 && ++tx_packets_acked >= 2`).
            if slow_start && max_increase == 0 {
                return;
            }
            // RFC 4341 §5, ccid2.c ccid2_new_ack: slow start +1 per `slow_start_packets`
            // acknowledged (Linux: 2); congestion avoidance +1 per cwnd acknowledged.
            let per_increase = if slow_start {
                self.params.slow_start_packets
            } else {
                self.cwnd
            };
            // The counter may already be past a window that shrank since: the next packet
            // then completes it, as `++tx_packets_acked >= tx_cwnd` does.
            let needed = per_increase.saturating_sub(self.packets_acked).max(1);
            if acked < needed {
                self.packets_acked += acked;
                return;
            }
            acked -= needed;
            self.cwnd += 1;
            self.packets_acked = 0;
            if slow_start {
                max_increase -= 1;
            }
        }
    }

    /// ccid2.c ccid2_new_ack: keep about 5 windows in each Sequence Window (RFC 4340
    /// §7.5.2). The receiver's ACKs per window, cwnd / AckRatio, are fitted to the
    /// receiver's Sequence Window by doubling or halving the Ack Ratio; the sender's own
    /// Sequence Window follows cwnd by doubling or halving.
    fn adapt_to_sequence_windows(&mut self) {
        let remote_used = self.cwnd / self.ack_ratio;
        if remote_used * WIN_CHANGE_FACTOR >= self.remote_seq_window {
            self.change_ack_ratio(self.ack_ratio * 2);
        } else if remote_used * WIN_CHANGE_FACTOR < self.remote_seq_window / 2 {
            self.change_ack_ratio((self.ack_ratio / 2).max(1));
        }
        let local_used = self.cwnd.saturating_mul(WIN_CHANGE_FACTOR);
        if local_used >= self.local_seq_window {
            self.change_seq_window(self.local_seq_window.saturating_mul(2));
        } else if local_used < self.local_seq_window / 2 {
            self.change_seq_window(self.local_seq_window / 2);
        }
    }

    /// The RTO the transport runs: srtt + max(4 rttvar, 200 ms), at most 64 s (ccid2.c
    /// ccid2_rtt_estimator; RFC 4341 §5).
    fn rto_from_estimates(&self) -> Duration {
        let srtt = self.rtt.smoothed_or_initial();
        (srtt + (self.rtt.var() * 4).max(MIN_RTO_VARIATION)).min(MAX_RTO)
    }

    /// ccid2.c ccid2_cwnd_restart (Linux tcp_cwnd_restart; RFC 2861): after an idle period
    /// of at least an RTO, ssthresh keeps 3/4 of cwnd and cwnd halves once per RTO idle, not
    /// below the initial window.
    fn restart_after_idle(&mut self, now: Instant, idle: Duration) {
        let cwnd = self.cwnd;
        self.ssthresh = self.ssthresh.max((cwnd >> 1) + (cwnd >> 2));
        let restart_cwnd = cwnd.min(self.params.initial_window);
        let mut reduced = cwnd;
        let mut left = idle;
        // `while ((delta -= tx_rto) >= 0 && cwnd > restart_cwnd) cwnd >>= 1;`
        while left >= self.rto && reduced > restart_cwnd {
            left -= self.rto;
            reduced >>= 1;
        }
        self.cwnd = reduced.max(restart_cwnd);
        self.cwnd_stamp = Some(now);
        self.cwnd_used = 0;
        self.check_ack_ratio();
    }

    /// ccid2.c ccid2_cwnd_application_limited (Linux tcp_cwnd_application_limited; RFC
    /// 2861): after an RTO without a full window, ssthresh keeps 3/4 of cwnd and cwnd moves
    /// half-way to the window used (not below the initial window).
    fn application_limited(&mut self, now: Instant) {
        let used = self.cwnd_used.max(self.params.initial_window);
        if used < self.cwnd {
            let cwnd = self.cwnd;
            self.ssthresh = self.ssthresh.max((cwnd >> 1) + (cwnd >> 2));
            self.cwnd = (cwnd + used) >> 1;
        }
        self.cwnd_used = 0;
        self.cwnd_stamp = Some(now);
        self.check_ack_ratio();
    }

    /// Packets in `bytes` of data packets.
    fn packets(&self, bytes: u64) -> u64 {
        bytes / self.mss
    }

    fn mode(&self) -> &'static str {
        if self.cwnd < self.ssthresh {
            "slow_start"
        } else {
            "congestion_avoidance"
        }
    }
}

impl Controller for Ccid2 {
    /// ccid2.c ccid2_hc_tx_packet_sent.
    fn on_sent(&mut self, now: Instant, packet: &SentPacket) {
        let pipe_before = self.packets(packet.in_flight.saturating_sub(packet.bytes));
        // RFC 2861, ccid2.c ccid2_hc_tx_packet_sent: "slow-start after idle periods" when
        // nothing was in flight and nothing was sent for an RTO.
        if self.params.cwv && pipe_before == 0 {
            if let Some(last) = self.last_sent {
                let idle = now.saturating_since(last);
                if idle >= self.rto {
                    self.restart_after_idle(now, idle);
                }
            }
        }
        self.last_sent = Some(now);
        self.pipe = self.packets(packet.in_flight);
        let stamp = *self.cwnd_stamp.get_or_insert(now);
        // RFC 2861, ccid2.c ccid2_hc_tx_packet_sent: a full window starts a new validation
        // period; otherwise W_used is the largest pipe, and a period of an RTO without a full
        // window shrinks cwnd towards it.
        if self.pipe >= self.cwnd {
            self.cwnd_used = 0;
            self.cwnd_stamp = Some(now);
        } else {
            self.cwnd_used = self.cwnd_used.max(self.pipe);
            if self.params.cwv && now.saturating_since(stamp) >= self.rto {
                self.application_limited(now);
            }
        }
    }

    /// ccid2.c ccid2_hc_tx_packet_recv and ccid2_new_ack: window growth for the packets this
    /// ACK newly acknowledged, then the Ack Ratio and Sequence Window adaptation.
    fn on_ack(&mut self, _now: Instant, ack: &AckEvent) {
        self.pipe = self.packets(ack.in_flight);
        if let Some(sample) = ack.rtt_sample {
            // ccid2.c ccid2_rtt_estimator: a new sample sets the RTO afresh (ending any
            // back-off).
            self.rtt.on_sample(sample, Duration::ZERO);
            self.rto = self.rto_from_estimates();
        }
        // Linux grows cwnd on every ACK, application-limited or not: RFC 2861 validation
        // (`on_sent`) is what undoes growth the sender did not use.
        self.grow(ack.acked_packets);
        self.adapt_to_sequence_windows();
    }

    fn on_congestion(&mut self, now: Instant, event: &CongestionEvent) {
        self.pipe = self.packets(event.in_flight);
        match event.kind {
            CongestionKind::Loss | CongestionKind::EcnCe => {
                // RFC 4341 §5, ccid2.c ccid2_congestion_event: at most one halving per RTT,
                // so a loss (or mark, ccid2_hc_tx_packet_recv) of a packet sent before the
                // last reduction is ignored ("Multiple losses in an RTT---treating as one").
                if self
                    .last_cong
                    .is_some_and(|last| event.largest_sent_time < last)
                {
                    return;
                }
                self.last_cong = Some(now);
                // ccid2.c ccid2_congestion_event: cwnd = max(cwnd/2, 1), ssthresh =
                // max(cwnd, 2).
                self.cwnd = (self.cwnd / 2).max(1);
                self.ssthresh = self.cwnd.max(2);
                self.check_ack_ratio();
            }
            CongestionKind::PersistentCongestion => {
                // RFC 4341 §5, ccid2.c ccid2_hc_tx_rto_expire: the RTO backs off (x2, at
                // most 64 s), ssthresh = max(cwnd/2, 2), cwnd = 1, pipe = 0, the counter and
                // what was sent forgotten, Ack Ratio 1.
                self.rto = (self.rto * 2).min(MAX_RTO);
                self.ssthresh = (self.cwnd / 2).max(2);
                self.cwnd = 1;
                self.pipe = 0;
                self.packets_acked = 0;
                self.change_ack_ratio(1);
            }
        }
    }

    fn cwnd(&self) -> u64 {
        self.cwnd.saturating_mul(self.mss)
    }

    fn cwnd_packets(&self) -> Option<u64> {
        Some(self.cwnd)
    }

    fn ack_ratio(&self) -> Option<u64> {
        Some(self.ack_ratio)
    }

    /// `None` while ssthresh is still "arbitrarily high".
    fn ssthresh(&self) -> Option<u64> {
        (self.ssthresh != INFINITE).then(|| self.ssthresh.saturating_mul(self.mss))
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    fn state(&self) -> ControllerState {
        let ssthresh_bytes = if self.ssthresh == INFINITE {
            INFINITE
        } else {
            self.ssthresh.saturating_mul(self.mss)
        };
        ControllerState {
            mode: self.mode(),
            values: vec![
                // -1 while infinite, so the set of columns never changes during a run.
                ("ssthresh_bytes", ssthresh_value(ssthresh_bytes)),
                ("cwnd_bytes", self.cwnd() as f64),
                ("cwnd_packets", self.cwnd as f64),
                ("ssthresh_packets", ssthresh_value(self.ssthresh)),
                ("pipe_packets", self.pipe as f64),
                ("ack_ratio", self.ack_ratio as f64),
                ("sequence_window", self.local_seq_window as f64),
                ("rto_ms", self.rto.as_secs_f64() * 1e3),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{ParamValue, Params};
    use crate::testing::{self, at, value};

    const MSS: u64 = 1500;

    fn config() -> ControllerConfig {
        ControllerConfig::default()
    }

    /// A sender with Linux's defaults changed by `change`.
    fn ccid2_with(change: impl FnOnce(&mut Ccid2Params)) -> Ccid2 {
        let mut params = Ccid2Params::from_config(&config());
        change(&mut params);
        Ccid2::new(&config(), params)
    }

    /// A sender starting with `cwnd` packets and Ack Ratio `ratio`.
    fn ccid2(cwnd: u64, ratio: u64) -> Ccid2 {
        ccid2_with(|p| {
            p.initial_window = cwnd;
            p.ack_ratio = ratio;
        })
    }

    /// An ACK newly acknowledging `packets` packets, the newest sent at `sent`, RTT 100 ms.
    fn ack(packets: u64, sent: Instant) -> AckEvent {
        let mut a = testing::ack(packets * MSS, sent, 100);
        a.acked_packets = packets;
        a
    }

    /// An ACK of `packets` packets without an RTT sample (the RTO copy stays as it is).
    fn ack_without_rtt(packets: u64) -> AckEvent {
        let mut a = ack(packets, at(0));
        a.rtt_sample = None;
        a
    }

    /// A congestion event of `kind` whose newest packet was sent at `sent_ms`.
    fn event(kind: CongestionKind, sent_ms: u64) -> CongestionEvent {
        testing::congestion(kind, at(sent_ms))
    }

    /// A data packet after which `in_flight` packets are in flight.
    fn packet(in_flight: u64) -> SentPacket {
        SentPacket {
            packet_number: 0,
            bytes: MSS,
            is_retransmission: false,
            in_flight: in_flight * MSS,
            snapshot: Default::default(),
        }
    }

    /// Feeds one ACK per step, of `packets` packets, and checks cwnd after it.
    fn expect_growth(c: &mut Ccid2, steps: &[(u64, u64)]) {
        for &(packets, cwnd) in steps {
            c.on_ack(at(100), &ack(packets, at(0)));
            assert_eq!(c.cwnd_packets(), Some(cwnd), "after an ACK of {packets}");
        }
    }

    /// Feeds `acks` ACKs of `packets` packets each.
    fn acks(c: &mut Ccid2, acks: u64, packets: u64) {
        for _ in 0..acks {
            c.on_ack(at(1000), &ack_without_rtt(packets));
        }
    }

    #[test]
    fn initial_window_is_rfc3390_in_packets() {
        // RFC 3390 / RFC 5681 §3.1 in packets (RFC 4341 §5; ccid2.h rfc3390_bytes_to_packets):
        // 4 up to 1095 B, 3 up to 2190 B, else 2; ssthresh arbitrarily high; Ack Ratio 2
        // (RFC 4340 §11.3), at most ceil(cwnd/2) (ccid2.c ccid2_hc_tx_init).
        for (size, window, ratio) in [
            (576, 4, 2),
            (1095, 4, 2),
            (1096, 3, 2),
            (1500, 3, 2),
            (2190, 3, 2),
            (2191, 2, 1),
            (9000, 2, 1),
        ] {
            let cfg = ControllerConfig {
                max_datagram_size: size,
                ..config()
            };
            let c = Ccid2::new(&cfg, Ccid2Params::from_config(&cfg));
            assert_eq!(c.cwnd_packets(), Some(window), "{size}");
            assert_eq!(c.cwnd(), window * size);
            assert_eq!(c.ack_ratio(), Some(ratio), "{size}");
            assert_eq!(c.ssthresh(), None);
            assert!(c.in_slow_start());
            assert_eq!(c.state().mode, "slow_start");
        }
        // The transport's own initial window (10) is not CCID 2's.
        assert_eq!(
            INFO.instantiate(&Params::new(), &config()).unwrap().cwnd(),
            3 * MSS
        );
    }

    #[test]
    fn slow_start_with_ack_ratio_2_grows_x1_5_per_window() {
        // ccid2.c ccid2_new_ack: +1 per 2 packets acknowledged, and ccid2_hc_tx_packet_recv:
        // at most ceil(AckRatio/2) = 1 per ACK. One ACK per 2 packets: a window of 20 packets
        // is 10 ACKs and adds 10 (x1.5 per RTT). Ack Ratio 2 holds for cwnd in [20, 40) with
        // the receiver's Sequence Window of 100 (cwnd/2 x 5 within [50, 100)).
        let mut c = ccid2(20, 2);
        for i in 1..=10 {
            c.on_ack(at(100), &ack(2, at(0)));
            assert_eq!(c.cwnd_packets(), Some(20 + i));
            assert_eq!(c.ack_ratio(), Some(2));
        }
        assert_eq!(c.cwnd_packets(), Some(30));

        // The per-ACK cap: an ACK of 6 packets adds ceil(2/2) = 1, and the packets beyond the
        // cap are not counted towards the next increase.
        expect_growth(&mut ccid2(20, 2), &[(6, 21), (1, 21), (1, 22)]);

        // Ack Ratio 4 (held for cwnd in [40, 80)): ceil(4/2) = 2 per ACK, so an ACK of 4 adds
        // 2 and an ACK of 12 adds 2 as well.
        expect_growth(&mut ccid2(60, 4), &[(4, 62), (12, 64)]);
        // One ACK per 4 packets over a window: x1.5 again (the Ack Ratio doubles to 8 at
        // cwnd 80, which leaves the per-ACK growth at 2).
        let mut c = ccid2(60, 4);
        acks(&mut c, 15, 4);
        assert_eq!(c.cwnd_packets(), Some(90));
        assert_eq!(c.ack_ratio(), Some(8));
    }

    #[test]
    fn slow_start_with_ack_ratio_1() {
        // ccid2.c ccid2_new_ack counts 2 packets per increase whatever the Ack Ratio, so with
        // Ack Ratio 1 (one ACK per packet, ceil(1/2) = 1 per ACK) a window of 10 adds 5: x1.5
        // per RTT, as with Ack Ratio 2. Ack Ratio 1 holds for cwnd in [10, 20).
        let mut c = ccid2(10, 1);
        acks(&mut c, 10, 1);
        assert_eq!(c.cwnd_packets(), Some(15));
        assert_eq!(c.ack_ratio(), Some(1));

        // With one increase per packet acknowledged (slow_start_packets = 1, TCP's slow start,
        // RFC 5681 §3.1) the same ACKs double the window, and at cwnd 20 the ACKs of a window
        // no longer fit a fifth of the receiver's Sequence Window: Ack Ratio 2.
        let mut c = ccid2_with(|p| {
            p.initial_window = 10;
            p.ack_ratio = 1;
            p.slow_start_packets = 1;
        });
        acks(&mut c, 10, 1);
        assert_eq!(c.cwnd_packets(), Some(20));
        assert_eq!(c.ack_ratio(), Some(2));

        // The cap of ceil(1/2) = 1 per ACK holds in both: an ACK of 3 packets adds 1.
        for per_increase in [1, 2] {
            let mut c = ccid2_with(|p| {
                p.initial_window = 10;
                p.ack_ratio = 1;
                p.slow_start_packets = per_increase;
            });
            expect_growth(&mut c, &[(3, 11)]);
        }
    }

    #[test]
    fn congestion_avoidance_adds_one_packet_per_window() {
        // RFC 4341 §5, ccid2.c ccid2_new_ack: in congestion avoidance cwnd += 1 once cwnd
        // packets have been acknowledged.
        let mut c = ccid2(30, 2);
        c.on_congestion(at(1000), &event(CongestionKind::Loss, 900));
        assert_eq!((c.cwnd_packets(), c.ssthresh()), (Some(15), Some(15 * MSS)));
        assert_eq!(c.state().mode, "congestion_avoidance");
        assert!(!c.in_slow_start());
        // 14 packets acknowledged: nothing yet; the 15th adds one.
        acks(&mut c, 7, 2);
        assert_eq!(c.cwnd_packets(), Some(15));
        // Then: no per-ACK cap here, so an ACK of 40 packets adds one for 16, one for 17, and
        // keeps 7; 11 more complete 18.
        expect_growth(&mut c, &[(1, 16), (40, 18), (10, 18), (1, 19)]);
        // Ten more windows, one packet each, whatever the ACK sizes.
        for _ in 0..10 {
            let w = c.cwnd;
            acks(&mut c, w / 3, 3);
            acks(&mut c, 1, w % 3);
            assert_eq!(c.cwnd, w + 1);
        }
    }

    #[test]
    fn at_most_one_halving_per_rtt() {
        // RFC 4341 §5, ccid2.c ccid2_congestion_event: cwnd = max(cwnd/2, 1), ssthresh =
        // max(cwnd, 2); a loss of a packet sent before the last reduction is ignored.
        let mut c = ccid2(60, 4);
        c.on_congestion(at(1000), &event(CongestionKind::Loss, 900));
        assert_eq!(c.cwnd_packets(), Some(30));
        assert_eq!(c.ssthresh(), Some(30 * MSS));
        // Sent at 950, before the reduction at 1000: the same congestion event.
        c.on_congestion(at(1010), &event(CongestionKind::Loss, 950));
        c.on_congestion(at(1020), &event(CongestionKind::EcnCe, 999));
        assert_eq!(c.cwnd_packets(), Some(30));
        // Sent at (not before) the reduction: a new event, and an ECN mark counts as a loss.
        c.on_congestion(at(1100), &event(CongestionKind::EcnCe, 1000));
        assert_eq!(c.cwnd_packets(), Some(15));
        assert_eq!(c.ssthresh(), Some(15 * MSS));
        c.on_congestion(at(1200), &event(CongestionKind::Loss, 1150));
        assert_eq!(c.cwnd_packets(), Some(7));
        // Down to one packet, with ssthresh at least 2 (so slow start again).
        for t in 0..5 {
            c.on_congestion(
                at(2000 + 100 * t),
                &event(CongestionKind::Loss, 1999 + 100 * t),
            );
        }
        assert_eq!(c.cwnd_packets(), Some(1));
        assert_eq!(c.ssthresh(), Some(2 * MSS));
        assert_eq!(c.state().mode, "slow_start");
        // Each reduction kept the Ack Ratio within ceil(cwnd/2) (RFC 4341 §6.1.2).
        assert_eq!(c.ack_ratio(), Some(1));
    }

    #[test]
    fn retransmission_timeout_collapses_to_one_packet() {
        // RFC 4341 §5, ccid2.c ccid2_hc_tx_rto_expire: ssthresh = max(cwnd/2, 2), cwnd = 1,
        // pipe = 0, Ack Ratio 1, the RTO backed off (x2, at most 64 s; the first is 3 s,
        // dccp.h DCCP_TIMEOUT_INIT).
        let mut c = ccid2(40, 4);
        c.on_congestion(at(0), &event(CongestionKind::Loss, 0));
        assert_eq!((c.cwnd, c.ack_ratio), (20, 4));
        let mut rto = event(CongestionKind::PersistentCongestion, 100);
        rto.in_flight = 0;
        c.on_congestion(at(5000), &rto);
        assert_eq!(c.cwnd_packets(), Some(1));
        assert_eq!(c.ssthresh(), Some(10 * MSS));
        assert_eq!(c.ack_ratio(), Some(1));
        assert_eq!(c.state().mode, "slow_start");
        assert_eq!(value(&c, "pipe_packets"), 0.0);
        assert_eq!(value(&c, "rto_ms"), 6000.0);
        // Again without an ACK: ssthresh = max(1/2, 2) = 2, the RTO doubles up to 64 s.
        for expected in [12_000.0, 24_000.0, 48_000.0, 64_000.0, 64_000.0] {
            c.on_congestion(at(6000), &rto);
            assert_eq!(value(&c, "rto_ms"), expected);
        }
        assert_eq!((c.cwnd, c.ssthresh, c.ack_ratio), (1, 2, 1));
        // ccid2.c ccid2_rtt_estimator: the next RTT sample sets the RTO afresh, srtt +
        // max(4 rttvar, 200 ms): 100 + max(200, 200) ms on a first sample of 100 ms.
        c.on_ack(at(7000), &ack(1, at(6900)));
        assert_eq!(value(&c, "rto_ms"), 300.0);
        let mut d = ccid2(40, 4);
        d.on_ack(at(50), &testing::ack(MSS, at(0), 50));
        assert_eq!(value(&d, "rto_ms"), 250.0);
        // A timeout is not a reduction of the once-per-RTT rule (ccid2.c leaves tx_last_cong):
        // a loss of a packet sent before the last loss reduction is still ignored.
        c.on_congestion(at(7100), &event(CongestionKind::Loss, 0));
        assert_eq!(c.cwnd_packets(), Some(1));
        assert_eq!(c.ssthresh(), Some(2 * MSS));
    }

    #[test]
    fn ack_ratio_stays_within_one_and_half_the_window() {
        // RFC 4341 §6.1.2 (ccid2.c ccid2_change_l_ack_ratio, ccid2_check_l_ack_ratio):
        // 1 <= Ack Ratio <= ceil(cwnd/2) after every event, whatever happens. A pseudo-random
        // walk through ACKs of every size, losses, ECN marks, timeouts, idle and
        // application-limited sends.
        let mut c = ccid2(3, 2);
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let mut now = 0;
        for _ in 0..20_000 {
            now += 1 + next(200);
            match next(20) {
                0 => c.on_congestion(at(now), &event(CongestionKind::Loss, now - next(now + 1))),
                1 => c.on_congestion(at(now), &event(CongestionKind::EcnCe, now)),
                2 if next(10) == 0 => {
                    c.on_congestion(at(now), &event(CongestionKind::PersistentCongestion, now))
                }
                3..=7 => {
                    // Sometimes after an idle or application-limited stretch of seconds.
                    now += next(2) * next(5000);
                    c.on_sent(at(now), &packet(1 + next(2 * c.cwnd + 1)))
                }
                _ => c.on_ack(at(now), &ack(1 + next(3 * c.ack_ratio), at(now - 50))),
            }
            let (ratio, cwnd) = (c.ack_ratio().unwrap(), c.cwnd_packets().unwrap());
            assert!(cwnd >= 1);
            assert!((1..=cwnd.div_ceil(2)).contains(&ratio), "{ratio} {cwnd}");
            assert!((MIN_SEQUENCE_WINDOW..=MAX_SEQUENCE_WINDOW).contains(&c.local_seq_window));
        }

        // The limit after a reduction: Linux would keep Ack Ratio 5 at cwnd 5 (it only checks
        // Ack Ratio > cwnd); here it becomes cwnd/2 = 2 <= ceil(5/2).
        let mut c = ccid2(10, 5);
        c.on_congestion(at(100), &event(CongestionKind::Loss, 50));
        assert_eq!((c.cwnd, c.ack_ratio), (5, 2));
    }

    #[test]
    fn ack_ratio_and_sequence_window_adapt_to_five_windows() {
        // ccid2.c ccid2_new_ack (RFC 4340 §7.5.2, "about 5 times the number of packets in the
        // network"): the receiver's ACKs per window, cwnd / AckRatio, are kept within
        // [W/10, W/5) of its Sequence Window W (100) by halving or doubling the Ack Ratio; the
        // sender's own Sequence Window is doubled when 5 cwnd reaches it and halved when 5
        // cwnd is below half of it, within [32, 2^46 - 1].
        let mut c = ccid2_with(|_| {});
        assert_eq!((c.cwnd, c.ack_ratio, c.local_seq_window), (3, 2, 100));
        // cwnd 4, 4/2 x 5 = 10 < 50: Ack Ratio 1; 4 x 5 = 20 < 50: Sequence Window 50.
        c.on_ack(at(100), &ack(2, at(0)));
        assert_eq!((c.cwnd, c.ack_ratio, c.local_seq_window), (4, 1, 50));
        // 20 < 25: 25, raised to the minimum of 32; then 20 >= 16: it stays.
        c.on_ack(at(100), &ack(1, at(0)));
        assert_eq!((c.cwnd, c.ack_ratio, c.local_seq_window), (4, 1, 32));
        c.on_ack(at(100), &ack(1, at(0)));
        assert_eq!((c.cwnd, c.ack_ratio, c.local_seq_window), (5, 1, 32));
        // Growing: at cwnd 7, 35 >= 32 doubles the Sequence Window; at cwnd 20 the 20 ACKs
        // of a window reach a fifth of the receiver's: Ack Ratio 2.
        while c.cwnd < 20 {
            assert_eq!(c.ack_ratio, 1);
            c.on_ack(at(100), &ack(1, at(0)));
        }
        assert_eq!((c.cwnd, c.ack_ratio, c.local_seq_window), (20, 2, 128));

        // ccid2.c ccid2_new_ack: no growth while cwnd >= the local Sequence Window or
        // cwnd / AckRatio >= the remote one. A window of 400 starts past both (100).
        let mut c = ccid2(400, 2);
        let mut seen = Vec::new();
        for _ in 0..5 {
            c.on_ack(at(100), &ack(2, at(0)));
            seen.push((c.cwnd, c.ack_ratio, c.local_seq_window));
        }
        assert_eq!(
            seen,
            vec![
                // 400 >= 100 and 200 >= 100: no growth; Ack Ratio 4, Sequence Window 200.
                (400, 4, 200),
                // 400 >= 200: no growth; 100 x 5 >= 100: Ack Ratio 8; 400.
                (400, 8, 400),
                // 400 >= 400: no growth; 50 x 5 >= 100: 16; 2000 >= 400: 800.
                (400, 16, 800),
                // Both fit (400 < 800, 25 < 100): +1 (ceil(16/2) = 8 allowed, 2 packets
                // acked); 25 x 5 >= 100: 32; 2005 >= 800: 1600.
                (401, 32, 1600),
                // 12 x 5 = 60 within [50, 100): the Ack Ratio stays; 2010 >= 1600: 3200.
                (402, 32, 3200),
            ]
        );
        // The doubling is bounded by ceil(cwnd/2) and by the feature's 65535.
        let mut c = ccid2_with(|p| {
            p.initial_window = 4;
            p.sequence_window = MIN_SEQUENCE_WINDOW;
        });
        c.change_ack_ratio(100);
        assert_eq!(c.ack_ratio, 2);
        c.cwnd = 1 << 20;
        c.change_ack_ratio(1 << 18);
        assert_eq!(c.ack_ratio, MAX_ACK_RATIO);
        c.change_seq_window(u64::MAX);
        assert_eq!(c.local_seq_window, MAX_SEQUENCE_WINDOW);
    }

    #[test]
    fn idle_restart_halves_once_per_rto_idle() {
        // RFC 2861, ccid2.c ccid2_hc_tx_packet_sent and ccid2_cwnd_restart: a packet sent
        // with nothing in flight, an RTO or more after the last one, halves cwnd once per RTO
        // of the idle time (not below the initial window) and keeps 3/4 cwnd in ssthresh.
        let mut c = ccid2_with(|_| {});
        c.cwnd = 24;
        c.ssthresh = 30;
        c.on_sent(at(0), &packet(1));
        // Not idle for a whole RTO (3 s before any RTT sample): nothing.
        c.on_sent(at(2999), &packet(1));
        assert_eq!(c.cwnd, 24);
        // Idle 7 s = 2 RTOs and a bit: 24 -> 12 -> 6; ssthresh max(30, 12 + 6) = 30.
        c.on_sent(at(9999), &packet(1));
        assert_eq!((c.cwnd, c.ssthresh), (6, 30));
        assert!(c.ack_ratio <= 3);

        // With an RTT sample of 100 ms the RTO is 300 ms: idle 1 s is 3 RTOs, 24 -> 3, the
        // initial window (RFC 3390: 3); ssthresh keeps 24/2 + 24/4 = 18 over 10.
        let mut c = ccid2_with(|_| {});
        c.on_ack(at(100), &ack(1, at(0)));
        c.cwnd = 24;
        c.ssthresh = 10;
        c.on_sent(at(200), &packet(1));
        c.on_sent(at(1200), &packet(1));
        assert_eq!((c.cwnd, c.ssthresh), (3, 18));
        // An infinite ssthresh stays infinite (max(~0U, ...) in Linux).
        let mut c = ccid2_with(|_| {});
        c.cwnd = 24;
        c.on_sent(at(0), &packet(1));
        c.on_sent(at(5000), &packet(1));
        assert_eq!((c.cwnd, c.ssthresh()), (12, None));

        // Something still in flight: no restart (but the period was application-limited for
        // an RTO, so validation moves cwnd half-way to the window used: (24 + 3) / 2).
        let mut c = ccid2_with(|_| {});
        c.cwnd = 24;
        c.on_sent(at(0), &packet(1));
        c.on_sent(at(10_000), &packet(2));
        assert_eq!(c.cwnd, 13);

        // cwv = false (ccid2_do_cwv off): no restart at all.
        let mut c = ccid2_with(|p| p.cwv = false);
        c.cwnd = 24;
        c.on_sent(at(0), &packet(1));
        c.on_sent(at(60_000), &packet(1));
        assert_eq!(c.cwnd, 24);
    }

    #[test]
    fn application_limited_periods_shrink_the_window() {
        // RFC 2861, ccid2.c ccid2_hc_tx_packet_sent and ccid2_cwnd_application_limited: a
        // period of an RTO in which pipe never reached cwnd moves cwnd half-way to the
        // largest pipe seen, W_used (at least the initial window), and keeps 3/4 cwnd in
        // ssthresh; a send that fills the window starts a new period.
        let run = |cwv: bool| {
            let mut c = ccid2_with(|p| p.cwv = cwv);
            c.cwnd = 24;
            c.ssthresh = 10;
            let mut trace = Vec::new();
            // 8 packets in flight at most, one send every 100 ms, for 6.5 s (RTO 3 s).
            for t in 0..=65 {
                c.on_sent(at(100 * t), &packet(2 + t % 7));
                trace.push((c.cwnd, c.ssthresh));
            }
            (c, trace)
        };
        let (mut c, trace) = run(true);
        // The period starts at the first send (t = 0); at t = 3 s: (24 + 8) / 2 = 16,
        // ssthresh max(10, 18) = 18; at t = 6 s: (16 + 8) / 2 = 12, ssthresh stays 18.
        assert_eq!(trace[29], (24, 10));
        assert_eq!(trace[30], (16, 18));
        assert_eq!(trace[59], (16, 18));
        assert_eq!(trace[60], (12, 18));
        assert!(c.ack_ratio <= 6);
        // A send that fills the window (pipe >= cwnd) restarts the period: 2.9 s of sends
        // below it later, nothing changes; the next one, 3 s after the full window, does
        // ((12 + max(3, 3)) / 2 = 7).
        c.on_sent(at(7000), &packet(12));
        for t in 1..=29 {
            c.on_sent(at(7000 + 100 * t), &packet(2));
        }
        assert_eq!(c.cwnd, 12);
        c.on_sent(at(10_000), &packet(3));
        assert_eq!(c.cwnd, 7);
        // Never below the initial window: used = max(W_used, 3).
        c.on_sent(at(13_000), &packet(2));
        assert_eq!(c.cwnd, 5);

        // cwv = false: the window is left alone.
        let (c, _) = run(false);
        assert_eq!((c.cwnd, c.ssthresh), (24, 10));
    }

    #[test]
    fn application_limited_acks_still_grow_the_window() {
        // Linux ccid2 has no is_cwnd_limited test: every ACK grows cwnd; RFC 2861 validation
        // is what takes unused growth back.
        let mut c = ccid2(20, 2);
        let mut limited = ack(2, at(0));
        limited.app_limited = true;
        c.on_ack(at(100), &limited);
        assert_eq!(c.cwnd_packets(), Some(21));
    }

    #[test]
    fn contract_and_tracing() {
        let mut c = ccid2_with(|_| {});
        assert_eq!(c.pacing_rate(), None);
        assert!(!c.fully_congested(2 * MSS, 2));
        assert!(c.fully_congested(0, 3));
        let s = c.state();
        assert_eq!(s.mode, "slow_start");
        assert_eq!(
            s.values,
            vec![
                ("ssthresh_bytes", -1.0),
                ("cwnd_bytes", 4500.0),
                ("cwnd_packets", 3.0),
                ("ssthresh_packets", -1.0),
                ("pipe_packets", 0.0),
                ("ack_ratio", 2.0),
                ("sequence_window", 100.0),
                ("rto_ms", 3000.0),
            ]
        );
        let mut loss = event(CongestionKind::Loss, 0);
        loss.in_flight = 2 * MSS;
        c.on_congestion(at(10), &loss);
        assert_eq!(value(&c, "ssthresh_bytes"), 3000.0);
        assert_eq!(value(&c, "ssthresh_packets"), 2.0);
        assert_eq!(value(&c, "cwnd_packets"), 1.0);
        assert_eq!(value(&c, "pipe_packets"), 2.0);
        assert_eq!(value(&c, "ack_ratio"), 1.0);
        assert_eq!(c.state().mode, "slow_start");
    }

    #[test]
    fn info_reads_and_checks_parameters() {
        // Registered, for the DCCP-like transport only, window-based, single-path.
        let info = crate::registry::find("ccid2").unwrap();
        assert!(info.dccp_only && !info.rate_based && !info.subflows && !info.one_way_delay);
        let mut p = Params::new();
        p.insert("initial_window".into(), ParamValue::Number(10.0));
        p.insert("ack_ratio".into(), ParamValue::Number(9.0));
        p.insert("sequence_window".into(), ParamValue::Number(32.0));
        p.insert("cwv".into(), ParamValue::Bool(false));
        p.insert("slow_start_packets".into(), ParamValue::Number(1.0));
        let c = INFO.instantiate(&p, &config()).unwrap();
        assert_eq!(c.cwnd_packets(), Some(10));
        // Ack Ratio 9 exceeds ceil(10/2): 5 (ccid2.c ccid2_hc_tx_init).
        assert_eq!(c.ack_ratio(), Some(5));
        assert_eq!(value(c.as_ref(), "sequence_window"), 32.0);

        for (name, bad) in [
            ("initial_window", ParamValue::Number(0.0)),
            ("initial_window", ParamValue::Number(2.5)),
            ("ack_ratio", ParamValue::Number(0.0)),
            ("ack_ratio", ParamValue::Number(65536.0)),
            ("sequence_window", ParamValue::Number(31.0)),
            ("sequence_window", ParamValue::Number((1u64 << 46) as f64)),
            ("slow_start_packets", ParamValue::Number(0.0)),
            ("slow_start_packets", ParamValue::Number(3.0)),
            ("cwv", ParamValue::Number(1.0)),
        ] {
            let mut p = Params::new();
            p.insert(name.into(), bad);
            let e = INFO.instantiate(&p, &config()).err().unwrap();
            assert!(e.to_string().contains(name), "{e}");
        }
    }
}
