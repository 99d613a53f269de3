//! Delivery-rate sampler, in bytes: draft-cheng-iccrg-delivery-rate-estimation (§3) as Linux
//! `net/ipv4/tcp_rate.c` implements it, with the BBRv2 additions `lost` and `tx_in_flight`
//! (google/bbr v2alpha `tcp_rate.c`, `tcp_bbr2.c`).
//!
//! This module owns [`DeliveryRateSampler`], the connection-side state ("C" in the draft). The
//! transport, not the controller, drives it: it takes a [`DeliverySnapshot`] ("P") when a packet
//! is sent, feeds every newly acknowledged packet with its snapshot, and generates one
//! [`RateSample`] per ACK. The sample measures the last flight over the longer of its send phase
//! and its ACK phase, so neither ACK compression nor send bursts inflate it; it is a lower bound
//! of the bottleneck rate when the flight was application-limited.

use crate::controller::{DeliverySnapshot, Instant, RateSample};
use std::time::Duration;

/// What the sampler remembers of the newest packet acknowledged by the ACK being processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NewestAcked {
    /// Send time of the packet.
    sent_time: Instant,
    /// Its snapshot.
    snapshot: DeliverySnapshot,
}

/// Connection-level delivery-rate state (draft §3.1; Linux `tcp_sock` rate fields).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryRateSampler {
    /// C.delivered: bytes delivered (acknowledged) so far.
    delivered: u64,
    /// C.delivered_time: time of the most recent delivery.
    delivered_time: Instant,
    /// C.first_sent_time: send time of the packet that started the current send phase.
    first_sent_time: Instant,
    /// C.app_limited: 0, or the `delivered` value that ends the current app-limited bubble.
    app_limited: u64,
    /// C.lost: bytes declared lost so far.
    lost: u64,
    /// The newest packet acknowledged since the last sample was generated.
    newest: Option<NewestAcked>,
}

impl DeliveryRateSampler {
    /// A sampler for a connection that has sent nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Called when a packet of `bytes` is sent at `now` with `in_flight_before` bytes already in
    /// flight; returns the snapshot the transport stores with the packet.
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        in_flight_before: u64,
        bytes: u64,
    ) -> DeliverySnapshot {
        // Draft §3.2 / tcp_rate.c `tcp_rate_skb_sent`: a packet sent with nothing in flight
        // starts a new send phase, so a sample never spans an idle period.
        if in_flight_before == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        DeliverySnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited != 0,
            lost: self.lost,
            tx_in_flight: in_flight_before.saturating_add(bytes),
        }
    }

    /// Called for each packet newly acknowledged by one ACK, in any order.
    pub fn on_packet_acked(
        &mut self,
        now: Instant,
        bytes: u64,
        sent_time: Instant,
        snapshot: &DeliverySnapshot,
    ) {
        // Draft §3.3 / tcp_rate.c `tcp_rate_skb_delivered`.
        self.delivered = self.delivered.saturating_add(bytes);
        self.delivered_time = now;
        // Keep the newest acked packet: largest P.delivered, ties broken by later send time.
        let is_newest = match self.newest {
            None => true,
            Some(n) => (snapshot.delivered, sent_time) > (n.snapshot.delivered, n.sent_time),
        };
        if is_newest {
            self.newest = Some(NewestAcked {
                sent_time,
                snapshot: *snapshot,
            });
            // The next send phase starts at the send time of the newest delivered packet.
            self.first_sent_time = sent_time;
        }
    }

    /// Called for each packet declared lost.
    pub fn on_packet_lost(&mut self, bytes: u64) {
        self.lost = self.lost.saturating_add(bytes);
    }

    /// Called once after all packets of one ACK were passed to `on_packet_acked`; returns the
    /// rate sample, or `None` when it is invalid (nothing was acked, an empty interval, or an
    /// interval shorter than `min_rtt` when that is given). Clears app-limited when the bubble
    /// has been delivered.
    pub fn generate_sample(&mut self, min_rtt: Option<Duration>) -> Option<RateSample> {
        // tcp_rate.c `tcp_rate_gen`: the bubble ends once more than its end was delivered.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let newest = self.newest.take()?;
        let p = newest.snapshot;
        // Draft §3.3: send_elapsed = P.sent_time - P.first_sent_time,
        // ack_elapsed = C.delivered_time - P.delivered_time, interval = max of the two.
        let send_elapsed = newest.sent_time.saturating_since(p.first_sent_time);
        let ack_elapsed = self.delivered_time.saturating_since(p.delivered_time);
        let interval = send_elapsed.max(ack_elapsed);
        // tcp_rate.c: an interval shorter than min_rtt is an artefact (ACK compression,
        // spurious retransmission), not a delivery rate.
        if interval.is_zero() || min_rtt.is_some_and(|m| interval < m) {
            return None;
        }
        Some(RateSample {
            // Draft §3.3: delivered = C.delivered - P.delivered.
            delivered: self.delivered.saturating_sub(p.delivered),
            interval,
            is_app_limited: p.is_app_limited,
            prior_delivered: p.delivered,
            // BBRv2 tcp_rate.c: lost = C.lost - P.lost.
            lost: self.lost.saturating_sub(p.lost),
            tx_in_flight: p.tx_in_flight,
        })
    }

    /// The sender had cwnd room but no data: marks app-limited until `delivered + in_flight`
    /// bytes are delivered (draft §3.4, tcp_rate.c `tcp_rate_check_app_limited`).
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited = self.delivered.saturating_add(in_flight).max(1);
    }

    /// Bytes delivered so far (C.delivered).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Bytes declared lost so far (C.lost).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Whether packets sent now are marked application-limited.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::Rate;

    const MSS: u64 = 1000;

    fn ms(v: u64) -> Instant {
        Instant::from_nanos(v * 1_000_000)
    }

    fn us(v: u64) -> Instant {
        Instant::from_nanos(v * 1_000)
    }

    /// A packet the test transport keeps in flight.
    #[derive(Clone, Copy, Debug)]
    struct Sent {
        sent_time: Instant,
        snapshot: DeliverySnapshot,
    }

    /// Sends one packet per millisecond for `count` ms and acknowledges packet k (sent at k ms)
    /// at `ack_time(k)`, each ACK alone; at equal times ACKs are processed before sends.
    /// Returns, per ACK, the acked packet index, its snapshot, the ACK time and the sample.
    fn paced_run(
        count: u64,
        ack_time: impl Fn(u64) -> Instant,
    ) -> Vec<(u64, DeliverySnapshot, Instant, Option<RateSample>)> {
        let mut s = DeliveryRateSampler::new();
        let mut sent: Vec<Sent> = Vec::new();
        let mut in_flight = 0u64;
        let mut next_ack = 0usize;
        let mut out = Vec::new();
        let mut min_rtt: Option<Duration> = None;
        for k in 0..count {
            let now = ms(k);
            while next_ack < sent.len() && ack_time(next_ack as u64) <= now {
                let p = sent[next_ack];
                let at = ack_time(next_ack as u64);
                let rtt = at - p.sent_time;
                min_rtt = Some(min_rtt.map_or(rtt, |m| m.min(rtt)));
                s.on_packet_acked(at, MSS, p.sent_time, &p.snapshot);
                in_flight -= MSS;
                out.push((next_ack as u64, p.snapshot, at, s.generate_sample(min_rtt)));
                next_ack += 1;
            }
            let snapshot = s.on_packet_sent(now, in_flight, MSS);
            in_flight += MSS;
            sent.push(Sent {
                sent_time: now,
                snapshot,
            });
        }
        out
    }

    #[test]
    fn paced_flight_gives_exact_rate() {
        // One 1000-byte packet per ms = 1 MB/s, RTT 50 ms. From the second RTT on every sample
        // spans one flight of 50 packets over exactly 50 ms (draft §3.3).
        let run = paced_run(400, |k| ms(k + 50));
        let mut checked = 0;
        for (k, _, _, sample) in &run {
            let sample = sample.expect("every paced sample is valid");
            if *k >= 50 {
                assert_eq!(sample.delivered, 50 * MSS, "packet {k}");
                assert_eq!(sample.interval, Duration::from_millis(50), "packet {k}");
                assert_eq!(sample.prior_delivered, (k - 49) * MSS);
                let rate = sample.delivery_rate().expect("non-empty interval");
                assert!((rate.bytes_per_sec() - 1e6).abs() < 1e-6, "{rate}");
                checked += 1;
            } else {
                // First flight: a lower bound (the ACK phase includes the first RTT).
                let rate = sample.delivery_rate().expect("non-empty interval");
                assert!(rate < Rate::from_bytes_per_sec(1e6));
            }
        }
        assert!(checked > 250);
    }

    #[test]
    fn ack_compression_does_not_inflate_rate() {
        // Same paced 1 MB/s flow, but the ACKs of packets 100..=109 (due at 150..159 ms) are
        // held on the reverse path and arrive bunched, 0.1 ms apart, from 159.45 ms; later ACKs
        // keep their order. The packet sent at 160 ms snapshots delivered_time = 159.95 ms in the
        // middle of the bunch, so its ACK phase (50.05 ms) covers 55 packets: 1.099 MB/s. Its
        // send phase (from packet 105, the newest acked at 159.95 ms) is 55 ms, and
        // interval = max(send, ack) keeps the sample at 1 MB/s (draft §3.3).
        let ack_time = |k: u64| match k {
            100..=109 => us(159_450 + 100 * (k - 100)),
            110 => us(160_450),
            _ => ms(k + 50),
        };
        let run = paced_run(400, ack_time);
        let mut compressed_seen = false;
        for (k, snapshot, at, sample) in &run {
            let Some(sample) = sample else { continue };
            // Never above the bottleneck rate of 1 byte per µs: delivered * 1000 <= interval_ns.
            assert!(
                u128::from(sample.delivered) * 1000 <= sample.interval.as_nanos(),
                "packet {k}: {} B over {:?}",
                sample.delivered,
                sample.interval
            );
            if *k == 160 {
                let ack_elapsed = *at - snapshot.delivered_time;
                assert_eq!(ack_elapsed, Duration::from_micros(50_050));
                assert_eq!(sample.delivered, 55 * MSS);
                // The ACK phase alone would overestimate the rate.
                assert!(u128::from(sample.delivered) * 1000 > ack_elapsed.as_nanos());
                assert_eq!(sample.interval, Duration::from_millis(55));
                compressed_seen = true;
            }
        }
        assert!(compressed_seen);
    }

    #[test]
    fn app_limited_marks_snapshots_until_bubble_delivered() {
        let mut s = DeliveryRateSampler::new();
        assert!(!s.is_app_limited());
        let p1 = s.on_packet_sent(ms(0), 0, MSS);
        let p2 = s.on_packet_sent(ms(1), MSS, MSS);
        assert!(!p1.is_app_limited && !p2.is_app_limited);
        // Nothing more to send: the bubble ends when delivered exceeds 0 + 2000 bytes.
        s.on_app_limited(2 * MSS);
        assert!(s.is_app_limited());
        let p3 = s.on_packet_sent(ms(2), 2 * MSS, MSS);
        assert!(p3.is_app_limited);

        s.on_packet_acked(ms(50), MSS, ms(0), &p1);
        let r1 = s.generate_sample(None).expect("valid");
        assert!(!r1.is_app_limited);
        s.on_packet_acked(ms(51), MSS, ms(1), &p2);
        let r2 = s.generate_sample(None).expect("valid");
        assert!(!r2.is_app_limited);
        // delivered == 2000 is not beyond the bubble yet.
        assert!(s.is_app_limited());
        let p4 = s.on_packet_sent(ms(51), MSS, MSS);
        assert!(p4.is_app_limited);

        // The first packet sent inside the bubble is acked: the sample is app-limited and the
        // bubble is over (tcp_rate.c: delivered after app_limited).
        s.on_packet_acked(ms(52), MSS, ms(2), &p3);
        let r3 = s.generate_sample(None).expect("valid");
        assert!(r3.is_app_limited);
        assert!(!s.is_app_limited());
        let p5 = s.on_packet_sent(ms(52), MSS, MSS);
        assert!(!p5.is_app_limited);
    }

    #[test]
    fn app_limited_mark_is_at_least_one() {
        let mut s = DeliveryRateSampler::new();
        s.on_app_limited(0);
        assert!(s.is_app_limited());
        let p = s.on_packet_sent(ms(0), 0, MSS);
        assert!(p.is_app_limited);
        s.on_packet_acked(ms(50), MSS, ms(0), &p);
        assert!(s.generate_sample(None).expect("valid").is_app_limited);
        assert!(!s.is_app_limited());
    }

    #[test]
    fn idle_restart_excludes_idle_gap() {
        let mut s = DeliveryRateSampler::new();
        let mut flight = Vec::new();
        for k in 0..10 {
            flight.push((ms(k), s.on_packet_sent(ms(k), k * MSS, MSS)));
        }
        for (k, (sent, snap)) in flight.iter().enumerate() {
            s.on_packet_acked(ms(50 + k as u64), MSS, *sent, snap);
            s.generate_sample(None);
        }
        // Ten seconds idle, then one packet with nothing in flight.
        let restart = ms(10_000);
        let p = s.on_packet_sent(restart, 0, MSS);
        assert_eq!(p.first_sent_time, restart);
        assert_eq!(p.delivered_time, restart);
        s.on_packet_acked(ms(10_050), MSS, restart, &p);
        let r = s
            .generate_sample(Some(Duration::from_millis(50)))
            .expect("valid");
        assert_eq!(r.interval, Duration::from_millis(50));
        assert_eq!(r.delivered, MSS);
        assert_eq!(r.prior_delivered, 10 * MSS);
    }

    #[test]
    fn no_ack_or_short_interval_is_invalid() {
        let mut s = DeliveryRateSampler::new();
        assert_eq!(s.generate_sample(None), None);
        let p = s.on_packet_sent(ms(0), 0, MSS);
        s.on_packet_acked(ms(40), MSS, ms(0), &p);
        // Interval 40 ms < min_rtt 50 ms: invalid (tcp_rate.c `tcp_rate_gen`).
        assert_eq!(s.generate_sample(Some(Duration::from_millis(50))), None);
        // The ACK was consumed: nothing timed is pending now.
        assert_eq!(s.generate_sample(None), None);
        assert_eq!(s.delivered(), MSS);
    }

    #[test]
    fn newest_packet_defines_sample_whatever_the_ack_order() {
        let mut s = DeliveryRateSampler::new();
        let a = s.on_packet_sent(ms(0), 0, MSS);
        let _b = s.on_packet_sent(ms(1), MSS, MSS);
        let c = s.on_packet_sent(ms(2), 2 * MSS, MSS);
        let _x = s.on_packet_sent(ms(3), 3 * MSS, MSS);
        s.on_packet_acked(ms(50), MSS, ms(0), &a);
        assert!(s.generate_sample(None).is_some());
        s.on_packet_lost(MSS); // b is declared lost
                               // d is sent after a delivery, so its P.delivered is larger than c's.
        let d = s.on_packet_sent(ms(50), 2 * MSS, MSS);
        assert_eq!(d.delivered, MSS);
        assert_eq!(d.lost, MSS);
        assert_eq!(d.tx_in_flight, 3 * MSS);
        assert_eq!(
            d.first_sent_time,
            ms(0),
            "send phase starts at a's send time"
        );
        s.on_packet_lost(MSS); // x is declared lost
                               // One ACK covers d and c, passed newest first.
        s.on_packet_acked(ms(100), MSS, ms(50), &d);
        s.on_packet_acked(ms(100), MSS, ms(2), &c);
        let r = s.generate_sample(None).expect("valid");
        assert_eq!(r.prior_delivered, MSS, "newest = largest P.delivered (d)");
        assert_eq!(r.delivered, 2 * MSS, "C.delivered - P.delivered of d");
        assert_eq!(r.tx_in_flight, 3 * MSS, "tx_in_flight of d");
        assert_eq!(r.lost, MSS, "C.lost - P.lost of d: only x");
        assert_eq!(r.interval, Duration::from_millis(50));
        assert_eq!(s.lost(), 2 * MSS);
        assert_eq!(s.delivered(), 3 * MSS);
    }

    #[test]
    fn equal_prior_delivered_picks_later_sent_packet() {
        let mut s = DeliveryRateSampler::new();
        let a = s.on_packet_sent(ms(0), 0, MSS);
        let b = s.on_packet_sent(ms(5), MSS, MSS);
        let _c = s.on_packet_sent(ms(6), 2 * MSS, MSS);
        // Passed out of order: b (later sent) must win the tie on P.delivered = 0.
        s.on_packet_acked(ms(60), MSS, ms(5), &b);
        s.on_packet_acked(ms(60), MSS, ms(0), &a);
        let r = s.generate_sample(None).expect("valid");
        assert_eq!(r.tx_in_flight, 2 * MSS, "tx_in_flight of b, not a");
        assert_eq!(r.delivered, 2 * MSS);
        assert_eq!(r.interval, Duration::from_millis(60));
        // The next send phase starts at b's send time (c is still in flight).
        let d = s.on_packet_sent(ms(60), MSS, MSS);
        assert_eq!(d.first_sent_time, ms(5));
        assert_eq!(d.delivered_time, ms(60));
    }
}
