//! Events and checks the controllers' unit tests share: instants in milliseconds, ACKs and
//! congestion events with the fields a test cares about, traced values by name.

use crate::controller::{
    AckEvent, CongestionEvent, CongestionKind, Controller, Instant, OneWayDelaySample,
};
use std::time::Duration;

/// The instant `ms` milliseconds after the epoch.
pub(crate) fn at(ms: u64) -> Instant {
    Instant::from_nanos(ms * 1_000_000)
}

/// An ACK of `bytes` for a packet sent at `sent` with an RTT sample of `rtt_ms`.
pub(crate) fn ack(bytes: u64, sent: Instant, rtt_ms: u64) -> AckEvent {
    ack_with_rtt(bytes, sent, Duration::from_millis(rtt_ms))
}

/// An ACK of `bytes` for a packet sent at `sent` with an RTT sample (and minimum and
/// smoothed RTT) of `rtt`.
pub(crate) fn ack_with_rtt(bytes: u64, sent: Instant, rtt: Duration) -> AckEvent {
    AckEvent {
        acked_bytes: bytes,
        acked_packets: 1,
        largest_acked_sent_time: sent,
        rtt_sample: Some(rtt),
        min_rtt: Some(rtt),
        smoothed_rtt: Some(rtt),
        rate: None,
        delivered: 0,
        prior_in_flight: 0,
        in_flight: 0,
        app_limited: false,
        ack_delay: None,
        one_way_delay: None,
    }
}

/// The same ACK carrying the one-way delay sample of packet `pn`, received at `receive`.
pub(crate) fn with_owd(mut a: AckEvent, pn: u64, receive: Instant) -> AckEvent {
    a.one_way_delay = Some(OneWayDelaySample {
        packet_number: pn,
        sent_time: a.largest_acked_sent_time,
        receive_time: receive,
    });
    a
}

/// A congestion event of `kind` about packets sent up to `sent`.
pub(crate) fn congestion(kind: CongestionKind, sent: Instant) -> CongestionEvent {
    CongestionEvent {
        kind,
        lost_bytes: 1500,
        lost_packets: 1,
        largest_sent_time: sent,
        prior_in_flight: 0,
        in_flight: 0,
    }
}

/// A traced value by name.
pub(crate) fn value(c: &dyn Controller, name: &str) -> f64 {
    c.state()
        .values
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no traced value {name}"))
}

/// Feeds one ACK per millisecond from `from_ms` to `to_ms` inclusive, `bytes_of(t)` bytes
/// each, RTT `rtt_ms`, each for a packet sent `rtt_ms` earlier.
pub(crate) fn ack_every_ms(
    c: &mut dyn Controller,
    from_ms: u64,
    to_ms: u64,
    rtt_ms: u64,
    bytes_of: impl Fn(u64) -> u64,
) {
    for t in from_ms..=to_ms {
        c.on_ack(at(t), &ack(bytes_of(t), at(t - rtt_ms), rtt_ms));
    }
}

/// 1250 bytes per millisecond (1.25 MB/s = 10 Mbps) with a 50 ms RTT from t = 50 ms to
/// `to_ms`: every window holds 51 ACKs over 51 ms, so every BWE sample is 1.25e6 B/s.
pub(crate) fn ten_mbps_until(c: &mut dyn Controller, to_ms: u64) {
    ack_every_ms(c, 50, to_ms, 50, |_| 1250);
}
