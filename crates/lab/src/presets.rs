//! Transport presets: the reliable transport set up as another tool's or kernel's TCP, so a
//! dumbbell modelled there can be modelled here field by field (`docs/validation.md`). A flow
//! names one with `preset`; any field written beside it overrides the preset's value.

use kleinrock_sim::{LossRecovery, RtoForm, TcpRecovery, TransportConfig};
use std::time::Duration;

/// The presets, by name.
pub const NAMES: [&str; 2] = ["linux", "ns3"];

/// The transport of preset `name`, if there is one.
pub fn transport(name: &str) -> Option<TransportConfig> {
    match name {
        "linux" => Some(linux()),
        "ns3" => Some(ns3()),
        _ => None,
    }
}

/// Linux's TCP (v6.x defaults) on Ethernet, as a qdisc at the bottleneck counts it.
fn linux() -> TransportConfig {
    TransportConfig {
        // MTU 1500 plus the 14-byte Ethernet header (`qdisc_pkt_len`); MSS 1448 with the
        // timestamp option: 14 + 20 (IPv4) + 32 (TCP, `tcp_timestamps` = 1) header bytes.
        packet_size: 1514,
        header_size: 66,
        // A pure ACK: Ethernet, IPv4 and TCP headers with timestamps (SACK blocks not counted).
        ack_size: 66,
        // Without the fq qdisc, Cubic and Reno are not paced (`sk_pacing_status`).
        pacing: false,
        // `tcp_send_delayed_ack`: every second full segment (`__tcp_ack_snd_check`), else
        // after the ACK timeout, which starts at `TCP_ATO_MIN` = 40 ms.
        delayed_ack: true,
        ack_every: 2,
        max_ack_delay: Duration::from_millis(40),
        // `tcp_incr_quickack`: up to `TCP_MAX_QUICKACKS` = 16 at once after the handshake.
        quick_acks: 16,
        recovery: LossRecovery::Tcp(TcpRecovery {
            // `TCP_RTO_MIN` 200 ms on the variation term (`tcp_rtt_estimator`); `TCP_RTO_MAX`.
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(120),
            rto: RtoForm::Linux,
            // `tcp_cwnd_reduction` (PRR) in recovery; `tcp_recovery` = 1: RACK-TLP on.
            prr: true,
            rack: true,
        }),
        ..TransportConfig::default()
    }
}

/// ns-3's `TcpSocketBase` (3.44 defaults) over a point-to-point link, with a 1448-byte
/// segment (`SegmentSize`; ns-3's own default is 536).
fn ns3() -> TransportConfig {
    TransportConfig {
        // 1448 + 32 (TCP with `Timestamp` = true) + 20 (IPv4) + 2 (PPP) bytes on the link.
        packet_size: 1502,
        header_size: 54,
        ack_size: 54,
        // `TcpSocketState::EnablePacing` = false.
        pacing: false,
        // `DelAckCount` = 2, `DelAckTimeout` = 200 ms; no quick-ACK mode.
        delayed_ack: true,
        ack_every: 2,
        max_ack_delay: Duration::from_millis(200),
        quick_acks: 0,
        recovery: LossRecovery::Tcp(TcpRecovery {
            // `MinRto` = 1 s as RFC 6298 (2.4); `RttEstimator` RFC 6298; `MaxRto` = 60 s.
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            rto: RtoForm::Rfc6298,
            // `RecoveryType` = `TcpPrrRecovery`; ns-3 has no RACK-TLP.
            prr: true,
            rack: false,
        }),
        ..TransportConfig::default()
    }
}
