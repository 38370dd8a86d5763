//! [`RangeSet`]: a sorted set of disjoint `u64` ranges that merges
//! overlapping and adjacent ranges. Tracks received packet numbers (ACK),
//! packet numbers whose payload failed its tag (CORRUPTED), and stream data.

use std::collections::btree_map::{self, BTreeMap};
use std::iter::FusedIterator;
use std::ops::Range;

/// A set of `u64` values stored as half-open ranges `start..end`, sorted,
/// disjoint and never adjacent (touching ranges are merged).
///
/// Every operation is O(log n) in the number of ranges, or amortized O(log n)
/// where ranges merge (each range is removed at most once). `u64::MAX` itself
/// cannot be a member (it is no packet number or offset: both stay below
/// 2^62).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start → end (exclusive).
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds every value of `range`. Returns true if at least one of them was
    /// not yet in the set.
    pub fn insert(&mut self, range: Range<u64>) -> bool {
        if range.is_empty() {
            return false;
        }
        // The common case, packet numbers and offsets arriving in order:
        // at or beyond the highest range, which then grows in place (a
        // remove and an insert in the map per packet were 2% of a
        // loopback download's receiver).
        if let Some(mut last) = self.ranges.last_entry() {
            let (last_start, last_end) = (*last.key(), *last.get());
            if range.start >= last_start {
                if range.start > last_end {
                    self.ranges.insert(range.start, range.end);
                    return true;
                }
                if range.end <= last_end {
                    return false;
                }
                *last.get_mut() = range.end;
                return true;
            }
        }
        if let Some((_, &end)) = self.ranges.range(..=range.start).next_back() {
            if end >= range.end {
                return false;
            }
        }
        let (mut start, mut end) = (range.start, range.end);
        // Absorb every range that overlaps or touches start..end, highest
        // first; each absorbed range is removed, so this is amortized.
        while let Some((&other_start, &other_end)) = self.ranges.range(..=end).next_back() {
            if other_end < start {
                break;
            }
            self.ranges.remove(&other_start);
            start = start.min(other_start);
            end = end.max(other_end);
        }
        self.ranges.insert(start, end);
        true
    }

    /// Adds `value`. Returns true if it was not yet in the set.
    pub fn insert_one(&mut self, value: u64) -> bool {
        self.insert(value..value.saturating_add(1))
    }

    /// Removes every value below `value`.
    pub fn remove_below(&mut self, value: u64) {
        let mut kept = self.ranges.split_off(&value);
        if let Some((_, &end)) = self.ranges.iter().next_back() {
            if end > value {
                kept.insert(value, end);
            }
        }
        self.ranges = kept;
    }

    /// True if `value` is in the set.
    pub fn contains(&self, value: u64) -> bool {
        self.ranges
            .range(..=value)
            .next_back()
            .is_some_and(|(_, &end)| value < end)
    }

    /// The smallest value in the set.
    pub fn min(&self) -> Option<u64> {
        self.ranges.keys().next().copied()
    }

    /// The largest value in the set.
    pub fn max(&self) -> Option<u64> {
        // Ranges are never empty, so end - 1 does not underflow.
        self.ranges.values().next_back().map(|&end| end - 1)
    }

    /// Number of disjoint ranges (not of values).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// True when the set holds no value.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Removes and returns the lowest range.
    pub fn pop_min(&mut self) -> Option<Range<u64>> {
        self.ranges.pop_first().map(|(start, end)| start..end)
    }

    /// Removes every value.
    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    /// The ranges in ascending order; `.rev()` for descending.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            inner: self.ranges.iter(),
        }
    }
}

impl<'a> IntoIterator for &'a RangeSet {
    type Item = Range<u64>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<Range<u64>> for RangeSet {
    fn from_iter<I: IntoIterator<Item = Range<u64>>>(iter: I) -> Self {
        let mut set = RangeSet::new();
        for range in iter {
            set.insert(range);
        }
        set
    }
}

/// Iterator over a [`RangeSet`]'s ranges, ascending from the front and
/// descending from the back.
#[derive(Clone, Debug)]
pub struct Iter<'a> {
    inner: btree_map::Iter<'a, u64, u64>,
}

impl Iterator for Iter<'_> {
    type Item = Range<u64>;

    fn next(&mut self) -> Option<Range<u64>> {
        self.inner.next().map(|(&start, &end)| start..end)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Range<u64>> {
        self.inner.next_back().map(|(&start, &end)| start..end)
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl FusedIterator for Iter<'_> {}

#[cfg(test)]
// Lists of ranges (not of values) are what these tests are about.
#[allow(clippy::single_range_in_vec_init)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn ranges(set: &RangeSet) -> Vec<Range<u64>> {
        set.iter().collect()
    }

    #[test]
    fn adjacent_and_overlapping_ranges_merge() {
        let mut set = RangeSet::new();
        assert!(set.insert(10..20));
        assert!(set.insert(30..40));
        assert_eq!(ranges(&set), [10..20, 30..40]);
        // 20..30 touches both neighbours: one range remains.
        assert!(set.insert(20..30));
        assert_eq!(ranges(&set), [10..40]);
        assert!(set.insert(5..12));
        assert_eq!(ranges(&set), [5..40]);
        assert!(!set.insert(7..39), "nothing new");
        assert!(set.insert_one(40));
        assert_eq!(ranges(&set), [5..41]);
    }

    #[test]
    fn insert_spanning_many_ranges_replaces_them_all() {
        let mut set: RangeSet = (0..10).map(|i| i * 10..i * 10 + 5).collect();
        assert_eq!(set.len(), 10);
        assert!(set.insert(3..93));
        assert_eq!(ranges(&set), [0..95]);
    }

    #[test]
    fn remove_below_cuts_a_range_in_the_middle() {
        let mut set: RangeSet = [1..4, 6..10, 12..13].into_iter().collect();
        set.remove_below(8);
        assert_eq!(ranges(&set), [8..10, 12..13]);
        set.remove_below(10);
        assert_eq!(ranges(&set), [12..13]);
        set.remove_below(0);
        assert_eq!(ranges(&set), [12..13]);
        set.remove_below(100);
        assert!(set.is_empty());
    }

    #[test]
    fn min_max_and_pop_min_see_values_not_range_ends() {
        let mut set: RangeSet = [3..5, 9..12].into_iter().collect();
        assert_eq!(set.min(), Some(3));
        assert_eq!(set.max(), Some(11));
        assert_eq!(set.iter().rev().collect::<Vec<_>>(), [9..12, 3..5]);
        assert_eq!(set.pop_min(), Some(3..5));
        assert_eq!(set.min(), Some(9));
        assert_eq!(set.pop_min(), Some(9..12));
        assert_eq!(set.pop_min(), None);
        assert_eq!(set.max(), None);
    }

    #[derive(Clone, Debug)]
    enum Op {
        Insert(Range<u64>),
        InsertOne(u64),
        RemoveBelow(u64),
        PopMin,
    }

    fn any_op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0u64..200, 0u64..20).prop_map(|(start, len)| Op::Insert(start..start + len)),
            4 => (0u64..200).prop_map(Op::InsertOne),
            1 => (0u64..200).prop_map(Op::RemoveBelow),
            1 => Just(Op::PopMin),
        ]
    }

    proptest! {
        #[test]
        fn range_set_behaves_like_a_set_of_values(ops in proptest::collection::vec(any_op(), 0..60)) {
            let mut set = RangeSet::new();
            let mut model = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Insert(range) => {
                        let added = range.clone().any(|v| !model.contains(&v));
                        model.extend(range.clone());
                        prop_assert_eq!(set.insert(range), added);
                    }
                    Op::InsertOne(value) => {
                        prop_assert_eq!(set.insert_one(value), model.insert(value));
                    }
                    Op::RemoveBelow(value) => {
                        set.remove_below(value);
                        model.retain(|v| *v >= value);
                    }
                    Op::PopMin => {
                        if let Some(range) = set.pop_min() {
                            for v in range.clone() {
                                prop_assert!(model.remove(&v));
                            }
                            // The popped range was maximal: its end is absent.
                            prop_assert!(model.first().is_none_or(|first| *first > range.end));
                        } else {
                            prop_assert!(model.is_empty());
                        }
                    }
                }
                // Same members, and the ranges are sorted, disjoint and not adjacent.
                let members: Vec<u64> = set.iter().flatten().collect();
                prop_assert_eq!(&members, &model.iter().copied().collect::<Vec<_>>());
                let listed = ranges(&set);
                for pair in listed.windows(2) {
                    prop_assert!(pair[0].end < pair[1].start, "{:?}", listed);
                }
                prop_assert_eq!(set.iter().rev().collect::<Vec<_>>(),
                    listed.iter().rev().cloned().collect::<Vec<_>>());
                prop_assert_eq!(set.min(), model.first().copied());
                prop_assert_eq!(set.max(), model.last().copied());
                for probe in [0, 50, 100, 150, 199, 219] {
                    prop_assert_eq!(set.contains(probe), model.contains(&probe));
                }
            }
        }
    }
}
