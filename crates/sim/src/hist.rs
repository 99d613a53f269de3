//! A log-linear histogram of durations in nanoseconds: exact count, mean and standard
//! deviation, percentiles and CDF within 1/128 relative error, fixed memory, deterministic.

const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;

/// Distinct buckets a histogram keeps as a sorted list before it turns to a dense range.
const SPARSE_MAX: usize = 128;
/// Distinct buckets from which a clustered histogram turns dense.
const DENSE_MIN: usize = 16;

/// Histogram of non-negative nanosecond values. While it has few distinct buckets spread over a
/// wide range it keeps them as a sorted list of `(bucket, count)`; past [`SPARSE_MAX`] of them,
/// or once they cluster, it stores the counts of every bucket from the smallest value's to the
/// largest's. So a histogram costs what it holds: a
/// flow of 80 packets among 10 000 keeps its 80 queuing delays in about 1 KB, where the dense
/// range from 0 to 20 ms takes 2 300 buckets (18 KB).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Counts of buckets `base..base + counts.len()`: `bucket_of(min)` to `bucket_of(max)`;
    /// empty while the histogram is sparse.
    counts: Vec<u64>,
    base: usize,
    /// The buckets and counts while sparse, ascending.
    sparse: Vec<(u32, u64)>,
    n: u64,
    sum: f64,
    sum_sq: f64,
    min: u64,
    max: u64,
}

/// Equal when they hold the same values (as counts per bucket), however they store them.
impl PartialEq for Histogram {
    fn eq(&self, other: &Self) -> bool {
        let stats = |h: &Histogram| (h.n, h.sum, h.sum_sq, h.min, h.max);
        let used = |h: &Histogram| h.buckets().filter(|&(_, c)| c > 0).collect::<Vec<_>>();
        stats(self) == stats(other) && used(self) == used(other)
    }
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
        self.add(bucket_of(ns), 1);
        if self.n == 0 || ns < self.min {
            self.min = ns;
        }
        self.max = self.max.max(ns);
        self.n += 1;
        let v = ns as f64;
        self.sum += v;
        self.sum_sq += v * v;
    }

    /// Adds `count` to bucket `b`.
    #[inline]
    fn add(&mut self, b: usize, count: u64) {
        if self.counts.is_empty() {
            return self.add_sparse(b, count);
        }
        let mut i = b.wrapping_sub(self.base);
        if i >= self.counts.len() {
            self.cover(b);
            i = b - self.base;
        }
        self.counts[i] += count;
    }

    fn add_sparse(&mut self, b: usize, count: u64) {
        // Buckets are below 64 x 128: they fit in a u32.
        let bucket = b as u32;
        match self.sparse.binary_search_by_key(&bucket, |e| e.0) {
            Ok(i) => self.sparse[i].1 += count,
            Err(i) => {
                self.sparse.insert(i, (bucket, count));
                if self.dense_is_better() {
                    self.densify();
                }
            }
        }
    }

    /// Whether the dense range would serve better than the sorted list: past [`SPARSE_MAX`]
    /// buckets, or from [`DENSE_MIN`] on when the range is at most four times the buckets used
    /// (an RTT's values, clustered), where it costs no more memory and each record is an index.
    fn dense_is_better(&self) -> bool {
        let len = self.sparse.len();
        let span = match (self.sparse.first(), self.sparse.last()) {
            (Some(lo), Some(hi)) => (hi.0 - lo.0) as usize + 1,
            _ => return false,
        };
        len > SPARSE_MAX || (len >= DENSE_MIN && span <= 4 * len)
    }

    /// Turns the sorted list into the dense range of its buckets.
    #[cold]
    fn densify(&mut self) {
        let (Some(&(lo, _)), Some(&(hi, _))) = (self.sparse.first(), self.sparse.last()) else {
            return;
        };
        self.base = lo as usize;
        self.counts = vec![0; (hi - lo) as usize + 1];
        for (b, c) in std::mem::take(&mut self.sparse) {
            self.counts[(b - lo) as usize] = c;
        }
    }

    /// Makes bucket `b` stored in the dense range, extending it at either end.
    #[cold]
    fn cover(&mut self, b: usize) {
        if b < self.base {
            let grow = self.base - b;
            self.counts.splice(0..0, std::iter::repeat_n(0, grow));
            self.base = b;
        } else if b >= self.base + self.counts.len() {
            self.counts.resize(b - self.base + 1, 0);
        }
    }

    /// The stored buckets with their counts, ascending.
    fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let dense = self
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (self.base + i, c));
        let sparse = self.sparse.iter().map(|&(b, c)| (b as usize, c));
        dense.chain(sparse)
    }

    /// Adds every value of `other`, as if each had been recorded here.
    pub fn merge(&mut self, other: &Histogram) {
        if other.n == 0 {
            return;
        }
        for (b, c) in other.buckets().filter(|&(_, c)| c > 0) {
            self.add(b, c);
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

    /// A histogram with many distinct buckets (dense) and one with few (sparse) give the same
    /// quantiles and CDF as each other's values recorded in any order.
    #[test]
    fn sparse_and_dense_hold_the_same_values() {
        let mut few = Histogram::new();
        let mut many = Histogram::new();
        for v in (0..100u64).map(|i| i * 200_017) {
            few.record(v);
        }
        for v in (0..100_000u64).map(|i| (i * 7_919) % 20_000_000) {
            many.record(v);
        }
        assert!(few.counts.is_empty() && few.sparse.len() == 100, "sparse");
        assert!(many.sparse.is_empty() && !many.counts.is_empty(), "dense");
        let mut both = many.clone();
        both.merge(&few);
        let mut other_way = few.clone();
        other_way.merge(&many);
        assert_eq!(both, other_way);
        assert_eq!(both.cdf(), other_way.cdf());
        for q in [0.0, 0.01, 0.5, 0.95, 0.99, 1.0] {
            assert_eq!(both.quantile(q), other_way.quantile(q));
            let mut sorted: Vec<u64> = (0..100u64).map(|i| i * 200_017).collect();
            sorted.sort_unstable();
            let exact = sorted[((q * 100.0).ceil() as usize).clamp(1, 100) - 1] as f64;
            let got = few.quantile(q).unwrap();
            assert!(
                (got - exact).abs() <= exact / 128.0 + 1.0,
                "q{q}: {got} vs {exact}"
            );
        }
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
