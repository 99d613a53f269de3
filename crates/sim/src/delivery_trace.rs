//! A link's rate given as a packet-delivery trace in mahimahi's format (Netravali et al.,
//! "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015; `mm-link`): one line per
//! delivery opportunity, its time in whole milliseconds from the start, in nondecreasing
//! order; the trace repeats with a period of its last time. Each opportunity carries
//! [`OPPORTUNITY_BYTES`]: a packet takes as many opportunities as its bytes need, several small
//! packets share one, and what a queued packet does not use is lost (mahimahi's `LinkQueue`).
//! A packet can use only opportunities after it reached the head of the link: one that
//! arrives at an idle link waits for the first opportunity strictly after its arrival.

use kleinrock_cc::Rate;
use std::sync::Arc;

/// Bytes one delivery opportunity carries (mahimahi's `PACKET_SIZE`, the largest TUN packet
/// it relays).
pub const OPPORTUNITY_BYTES: u32 = 1504;

const NS_PER_MS: u64 = 1_000_000;

/// Most opportunities a trace may have: a run's own scenario text carries its trace written
/// out (a few bytes each), and such a text may be at most 4 MB (a minute at 80 Mbit/s).
pub const MAX_LINES: usize = 400_000;

/// The delivery opportunities of a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryTrace {
    /// Opportunity times within one period, ns, nondecreasing; the last is the period.
    times_ns: Arc<[u64]>,
}

impl DeliveryTrace {
    /// A trace from its text: errors name the line (from 1) and what is accepted.
    pub fn parse(text: &str) -> Result<DeliveryTrace, String> {
        let (mut times, mut lines) = (Vec::new(), Vec::new());
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let ms: u64 = line.parse().map_err(|_| {
                format!(
                    "line {}: `{line}` is not a time; accepted: whole milliseconds, one per line",
                    i + 1
                )
            })?;
            times.push(ms);
            lines.push(i + 1);
        }
        DeliveryTrace::from_times(&times, |k| format!("line {}", lines[k]))
    }

    /// A trace from its times in whole milliseconds; `at(k)` says where the `k`-th came from,
    /// for errors (`"line 3"`, `"times_ms[2]"`).
    pub fn from_times(
        times: &[u64],
        at: impl Fn(usize) -> String,
    ) -> Result<DeliveryTrace, String> {
        if times.len() > MAX_LINES {
            return Err(format!("more than {MAX_LINES} times"));
        }
        let mut ns = Vec::with_capacity(times.len());
        for (k, &ms) in times.iter().enumerate() {
            let t = ms
                .checked_mul(NS_PER_MS)
                .ok_or_else(|| format!("{}: {ms} ms is too large", at(k)))?;
            if ns.last().is_some_and(|&last| t < last) {
                return Err(format!(
                    "{}: {ms} ms is before the one above; times must not decrease",
                    at(k)
                ));
            }
            ns.push(t);
        }
        match ns.last() {
            None => Err("no times; accepted: one time in milliseconds per line".into()),
            Some(0) => Err("the last time is 0 ms: a trace must last longer than that".into()),
            Some(_) => Ok(DeliveryTrace {
                times_ns: ns.into(),
            }),
        }
    }

    /// The opportunities' times within one period, in whole milliseconds.
    pub fn times_ms(&self) -> impl Iterator<Item = u64> + '_ {
        self.times_ns.iter().map(|t| t / NS_PER_MS)
    }

    /// Opportunities per period.
    pub fn len(&self) -> usize {
        self.times_ns.len()
    }

    /// Whether the trace has no opportunity (never: [`DeliveryTrace::parse`] refuses it).
    pub fn is_empty(&self) -> bool {
        self.times_ns.is_empty()
    }

    /// The period, ns.
    pub fn period_ns(&self) -> u64 {
        self.times_ns[self.len() - 1]
    }

    /// The mean rate over a period.
    pub fn mean_rate(&self) -> Rate {
        let bits = self.len() as f64 * f64::from(OPPORTUNITY_BYTES) * 8.0;
        Rate::from_bits_per_sec(bits / (self.period_ns() as f64 * 1e-9))
    }

    /// The time of opportunity `n`, counting from 0 through the repetitions, ns.
    pub fn time_ns(&self, n: u64) -> u64 {
        let len = self.len() as u64;
        (n / len) * self.period_ns() + self.times_ns[(n % len) as usize]
    }

    /// The first opportunity strictly after `t_ns`.
    pub fn first_after(&self, t_ns: u64) -> u64 {
        let period = self.period_ns();
        let cycles = t_ns / period;
        let offset = t_ns - cycles * period;
        let index = self.times_ns.partition_point(|&t| t <= offset);
        cycles * self.len() as u64 + index as u64
    }
}

/// A transmitter paced by a trace: which opportunity it is at and what is left of it.
#[derive(Clone, Debug)]
pub(crate) struct TraceTransmitter {
    trace: DeliveryTrace,
    /// The opportunity the last packet finished in, and the bytes it left unused.
    partial: Option<(u64, u32)>,
}

impl TraceTransmitter {
    pub(crate) fn new(trace: DeliveryTrace) -> Self {
        TraceTransmitter {
            trace,
            partial: None,
        }
    }

    /// A packet of `size` bytes starts service at `now`: when its last byte goes out. One
    /// that `waited` behind the previous packet continues the opportunity that one finished
    /// in (at `now`); one that found the link idle starts at the first after `now`.
    pub(crate) fn serve(&mut self, now: u64, size: u32, waited: bool) -> u64 {
        let (mut n, mut left) = match self.partial {
            Some((n, left)) if waited && self.trace.time_ns(n) == now => (n, left),
            _ => {
                let n = self.trace.first_after(now);
                (n, OPPORTUNITY_BYTES)
            }
        };
        let mut need = size;
        loop {
            let used = need.min(left);
            need -= used;
            left -= used;
            if need == 0 {
                self.partial = Some((n, left));
                return self.trace.time_ns(n);
            }
            n += 1;
            left = OPPORTUNITY_BYTES;
        }
    }

    /// Bytes the opportunities in `(from, to]` carry.
    pub(crate) fn capacity_bytes(&self, from: u64, to: u64) -> f64 {
        let count = self.trace.first_after(to) - self.trace.first_after(from);
        count as f64 * f64::from(OPPORTUNITY_BYTES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_repeats_with_its_last_time_as_period() {
        let t = DeliveryTrace::parse("1\n1\n3\n4\n").unwrap();
        assert_eq!(t.period_ns(), 4 * NS_PER_MS);
        let times: Vec<u64> = (0..8).map(|n| t.time_ns(n) / NS_PER_MS).collect();
        assert_eq!(times, [1, 1, 3, 4, 5, 5, 7, 8]);
        assert_eq!(t.first_after(0), 0);
        assert_eq!(t.first_after(NS_PER_MS), 2);
        assert_eq!(t.first_after(4 * NS_PER_MS), 4);
        // 4 opportunities of 1504 bytes per 4 ms.
        assert!((t.mean_rate().bits_per_sec() - 12.032e6).abs() < 1.0);
    }

    #[test]
    fn packets_take_the_opportunities_their_bytes_need_and_share_one() {
        let t = DeliveryTrace::parse("1\n2\n3\n4\n5\n6\n").unwrap();
        let mut tx = TraceTransmitter::new(t);
        // 3000 bytes: opportunities at 1 and 2 ms, 8 bytes left in the second.
        assert_eq!(tx.serve(0, 3000, false), 2 * NS_PER_MS);
        // Waiting behind it: 8 bytes at 2 ms, then 3 ms.
        assert_eq!(tx.serve(2 * NS_PER_MS, 100, true), 3 * NS_PER_MS);
        // Two small ones share the 3 ms opportunity.
        assert_eq!(tx.serve(3 * NS_PER_MS, 100, true), 3 * NS_PER_MS);
        // Arriving at an idle link at 4.5 ms: the first opportunity after it, 5 ms.
        assert_eq!(tx.serve(4_500_000, 1504, false), 5 * NS_PER_MS);
        assert_eq!(tx.capacity_bytes(0, 6 * NS_PER_MS), 6.0 * 1504.0);
        // Arriving at the idle link exactly at 5 ms, where the last one ended: not the bytes
        // it left, but the 6 ms opportunity.
        assert_eq!(tx.serve(5 * NS_PER_MS, 100, false), 6 * NS_PER_MS);
    }

    #[test]
    fn bad_traces_name_the_line() {
        let e = |text: &str| DeliveryTrace::parse(text).unwrap_err();
        assert!(e("").contains("no times"));
        assert!(e("1\nx\n").starts_with("line 2: `x` is not a time"));
        assert!(e("5\n3\n").starts_with("line 2: 3 ms is before"));
        assert!(e("-1\n").starts_with("line 1"));
        assert!(e("0\n0\n").contains("last time is 0 ms"));
        let huge = e("1\n18446744073709551\n");
        assert!(
            huge.starts_with("line 2: 18446744073709551 ms is too large"),
            "{huge}"
        );
    }
}
