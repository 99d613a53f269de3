//! A log-linear histogram of durations in nanoseconds: exact count, mean and standard
//! deviation, percentiles and CDF within 1/128 relative error, fixed memory, deterministic.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

/// Histogram of non-negative nanosecond values. Only the buckets from the smallest value's to
/// the largest's are stored, so a histogram costs what its range needs (an RTT between 20 and
/// 40 ms takes about 130 buckets, not the 2 400 from zero).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    /// Counts of buckets `base..base + counts.len()`: `bucket_of(min)` to `bucket_of(max)`.
    counts: Vec<u64>,
    base: usize,
    n: u64,
    sum: f64,
    sum_sq: f64,
    min: u64,
    max: u64,
}

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros() - SUB_BITS;
    let mantissa = (v >> exp) - SUB;
    ((exp as u64 + 1) * SUB + mantissa) as usize
}

fn bucket_mid(b: usize) -> f64 {
    let b = b as u64;
    if b < SUB {
        return b as f64;
    }
    let exp = b / SUB - 1;
    let mantissa = b % SUB + SUB;
    let lo = mantissa << exp;
    lo as f64 + ((1u64 << exp) as f64 - 1.0) / 2.0
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let b = bucket_of(ns);
        let mut i = b.wrapping_sub(self.base);
        if i >= self.counts.len() {
            self.cover(b);
            i = b - self.base;
        }
        self.counts[i] += 1;
        if self.n == 0 || ns < self.min {
            self.min = ns;
        }
        self.max = self.max.max(ns);
        self.n += 1;
        let v = ns as f64;
        self.sum += v;
        self.sum_sq += v * v;
    }

    /// Makes bucket `b` stored, extending the stored range at either end.
    #[cold]
    fn cover(&mut self, b: usize) {
        if self.counts.is_empty() {
            self.base = b;
            self.counts.push(0);
        } else if b < self.base {
            let grow = self.base - b;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = b;
        } else if b >= self.base + self.counts.len() {
            self.counts.resize(b - self.base + 1, 0);
        }
    }

    /// The stored buckets with their indices.
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (self.base + i, c))
    }

    /// Adds every value of `other`, as if each had been recorded here.
    pub fn merge(&mut self, other: &Histogram) {
        if other.n == 0 {
            return;
        }
        self.cover(other.base);
        self.cover(other.base + other.counts.len() - 1);
        let from = other.base - self.base;
        for (c, o) in self.counts[from..].iter_mut().zip(&other.counts) {
            *c += o;
        }
        if self.n == 0 || other.min < self.min {
            self.min = other.min;
        }
        self.max = self.max.max(other.max);
        self.n += other.n;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// Exact mean, ns; `None` when empty.
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum / self.n as f64)
    }

    /// Exact population standard deviation, ns; `None` when empty.
    pub fn std(&self) -> Option<f64> {
        let mean = self.mean()?;
        Some((self.sum_sq / self.n as f64 - mean * mean).max(0.0).sqrt())
    }

    /// Smallest value.
    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    /// Largest value.
    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }

    /// The `q` quantile (0..=1), ns, within 1/128 relative error, clamped to [min, max].
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, c) in self.buckets() {
            seen += c;
            if seen >= rank {
                return Some(bucket_mid(b).clamp(self.min as f64, self.max as f64));
            }
        }
        Some(self.max as f64)
    }

    /// The CDF as `(value ns, fraction <= value)` points, one per non-empty bucket.
    pub fn cdf(&self) -> Vec<(f64, f64)> {
        let mut seen = 0;
        let mut out = Vec::new();
        for (b, c) in self.buckets() {
            if c > 0 {
                seen += c;
                let v = bucket_mid(b).clamp(self.min as f64, self.max as f64);
                out.push((v, seen as f64 / self.n as f64));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_relative_error() {
        let mut h = Histogram::new();
        for v in 1..=100_000u64 {
            h.record(v * 1000);
        }
        for q in [0.5, 0.95, 0.99] {
            let exact = q * 100_000.0 * 1000.0;
            let got = h.quantile(q).unwrap();
            assert!(
                (got - exact).abs() / exact < 1.0 / 128.0,
                "q{q}: {got} vs {exact}"
            );
        }
        assert!((h.mean().unwrap() - 50_000_500.0).abs() < 1e-3);
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let (mut a, mut b, mut all) = (Histogram::new(), Histogram::new(), Histogram::new());
        for v in [5u64, 70_000, 3_000_000] {
            a.record(v);
            all.record(v);
        }
        for v in [40u64, 9_000_000_000] {
            b.record(v);
            all.record(v);
        }
        a.merge(&b);
        a.merge(&Histogram::new());
        assert_eq!(a, all);
        let mut empty = Histogram::new();
        empty.merge(&all);
        assert_eq!(empty, all);
    }
}
