//! A set of `u64` as ascending disjoint `[start, end)` ranges, tuned for the common case of
//! appending at the top (packet numbers and stream offsets arrive mostly in order).

/// Ascending disjoint half-open ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `[start, end)`; returns how many of its values were not already present.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        if let Some(last) = self.ranges.last_mut() {
            if start >= last.0 && start <= last.1 {
                let added = end.saturating_sub(last.1);
                last.1 = last.1.max(end);
                return added;
            }
            if start > last.1 {
                self.ranges.push((start, end));
                return end - start;
            }
        } else {
            self.ranges.push((start, end));
            return end - start;
        }
        self.insert_general(start, end)
    }

    fn insert_general(&mut self, start: u64, end: u64) -> u64 {
        // First range that ends at or after `start` (touching ranges merge).
        let lo = self.ranges.partition_point(|r| r.1 < start);
        // First range that starts after `end`.
        let hi = self.ranges.partition_point(|r| r.0 <= end);
        let covered: u64 = self.ranges[lo..hi]
            .iter()
            .map(|r| r.1.min(end).saturating_sub(r.0.max(start)))
            .sum();
        let new_start = self.ranges.get(lo).map_or(start, |r| r.0.min(start));
        let new_end = if hi > lo {
            self.ranges[hi - 1].1.max(end)
        } else {
            end
        };
        self.ranges.splice(lo..hi, [(new_start, new_end)]);
        (end - start) - covered
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many values of `[start, end)` are present.
    pub fn count_within(&self, start: u64, end: u64) -> u64 {
        let lo = self.ranges.partition_point(|r| r.1 <= start);
        self.ranges[lo..]
            .iter()
            .take_while(|r| r.0 < end)
            .map(|r| r.1.min(end).saturating_sub(r.0.max(start)))
            .sum()
    }

    /// The parts of `[start, end)` that are not present, ascending.
    pub fn gaps_within(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        let lo = self.ranges.partition_point(|r| r.1 <= start);
        let mut gaps = Vec::new();
        let mut at = start;
        for r in self.ranges[lo..].iter().take_while(|r| r.0 < end) {
            if r.0 > at {
                gaps.push((at, r.0));
            }
            at = at.max(r.1);
        }
        if at < end {
            gaps.push((at, end));
        }
        gaps
    }

    /// Forgets every value below `floor`.
    pub fn remove_below(&mut self, floor: u64) {
        let cut = self.ranges.partition_point(|r| r.1 <= floor);
        self.ranges.drain(..cut);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(floor);
        }
    }

    /// Keeps only the `max` highest ranges.
    pub fn keep_highest(&mut self, max: usize) {
        if self.ranges.len() > max {
            let cut = self.ranges.len() - max;
            self.ranges.drain(..cut);
        }
    }

    /// Whether `value` is in the set.
    pub fn contains(&self, value: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= value);
        self.ranges.get(i).is_some_and(|r| r.0 <= value)
    }

    /// The end of the range that starts at `from`, i.e. how far the set is contiguous from it.
    pub fn contiguous_end(&self, from: u64) -> u64 {
        match self.ranges.first() {
            Some(&(s, e)) if s <= from && from < e => e,
            _ => from,
        }
    }

    /// The largest value, if any.
    pub fn max(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1 - 1)
    }

    /// The ranges, ascending.
    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_gaps_within_a_range() {
        let mut s = RangeSet::new();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.count_within(0, 100), 20);
        assert_eq!(s.count_within(15, 35), 10);
        assert_eq!(s.count_within(20, 30), 0);
        assert_eq!(s.gaps_within(5, 45), [(5, 10), (20, 30), (40, 45)]);
        assert_eq!(s.gaps_within(12, 18), []);
        assert_eq!(s.gaps_within(15, 35), [(20, 30)]);
    }

    #[test]
    fn merges_and_counts_new_values() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(0, 10), 10);
        assert_eq!(s.insert(20, 30), 10);
        assert_eq!(s.insert(5, 25), 10);
        assert_eq!(s.ranges(), &[(0, 30)]);
        assert_eq!(s.insert(0, 30), 0);
        assert_eq!(s.insert(40, 50), 10);
        assert_eq!(s.insert(35, 36), 1);
        assert_eq!(s.ranges(), &[(0, 30), (35, 36), (40, 50)]);
        assert!(s.contains(45) && !s.contains(32));
        assert_eq!(s.contiguous_end(0), 30);
    }

    #[test]
    fn prunes_below_floor() {
        let mut s = RangeSet::new();
        s.insert(0, 10);
        s.insert(20, 30);
        s.remove_below(25);
        assert_eq!(s.ranges(), &[(25, 30)]);
    }
}
