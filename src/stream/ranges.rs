//! A set of byte offsets kept as disjoint, non-adjacent half-open ranges:
//! which parts of a stream were acknowledged, or must be sent again.

use std::collections::BTreeMap;
use std::ops::Range;

/// Disjoint ranges of stream offsets. Touching ranges are merged, so the set
/// holds as few entries as the covered offsets allow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    /// start → end (exclusive).
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The lowest range.
    pub(crate) fn first(&self) -> Option<Range<u64>> {
        self.ranges
            .first_key_value()
            .map(|(&start, &end)| start..end)
    }

    /// Adds `range`, merging it with ranges it overlaps or touches.
    pub(crate) fn insert(&mut self, range: Range<u64>) {
        if range.start >= range.end {
            return;
        }
        let mut start = range.start;
        let mut end = range.end;
        if let Some((&before_start, &before_end)) = self.ranges.range(..=start).next_back() {
            if before_end >= start {
                start = before_start;
                end = end.max(before_end);
                self.ranges.remove(&before_start);
            }
        }
        while let Some((&next_start, &next_end)) = self.ranges.range(start..=end).next() {
            end = end.max(next_end);
            self.ranges.remove(&next_start);
        }
        self.ranges.insert(start, end);
    }

    /// Removes every offset of `range` from the set.
    pub(crate) fn remove(&mut self, range: Range<u64>) {
        if range.start >= range.end {
            return;
        }
        let overlapping: Vec<(u64, u64)> = self
            .ranges
            .range(..range.end)
            .rev()
            .take_while(|(_, &end)| end > range.start)
            .map(|(&start, &end)| (start, end))
            .collect();
        for (start, end) in overlapping {
            self.ranges.remove(&start);
            if start < range.start {
                self.ranges.insert(start, range.start);
            }
            if end > range.end {
                self.ranges.insert(range.end, end);
            }
        }
    }

    /// The parts of `range` this set does not cover, in order.
    pub(crate) fn gaps_in(&self, range: Range<u64>) -> Vec<Range<u64>> {
        let mut gaps = Vec::new();
        let mut cursor = range.start;
        let first_candidate = self
            .ranges
            .range(..=range.start)
            .next_back()
            .map_or(range.start, |(&start, _)| start);
        for (&start, &end) in self.ranges.range(first_candidate..range.end) {
            if end <= cursor {
                continue;
            }
            if start > cursor {
                gaps.push(cursor..start);
            }
            cursor = cursor.max(end);
            if cursor >= range.end {
                break;
            }
        }
        if cursor < range.end {
            gaps.push(cursor..range.end);
        }
        gaps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn contents(set: &RangeSet) -> Vec<(u64, u64)> {
        set.ranges.iter().map(|(&s, &e)| (s, e)).collect()
    }

    #[test]
    fn touching_ranges_merge() {
        let mut set = RangeSet::new();
        set.insert(0..10);
        set.insert(20..30);
        set.insert(10..20);
        assert_eq!(contents(&set), vec![(0, 30)]);
    }

    #[test]
    fn removing_the_middle_splits_a_range() {
        let mut set = RangeSet::new();
        set.insert(0..30);
        set.remove(10..20);
        assert_eq!(contents(&set), vec![(0, 10), (20, 30)]);
        assert_eq!(set.gaps_in(5..25), vec![10..20]);
    }

    proptest! {
        /// The set behaves like a plain set of offsets under any sequence
        /// of inserts and removes.
        #[test]
        fn matches_a_bitmap(ops in proptest::collection::vec((any::<bool>(), 0u64..200, 0u64..40), 0..60)) {
            let mut set = RangeSet::new();
            let mut bitmap = [false; 240];
            for (insert, start, len) in ops {
                let range = start..start + len;
                if insert {
                    set.insert(range.clone());
                } else {
                    set.remove(range.clone());
                }
                for offset in range {
                    bitmap[offset as usize] = insert;
                }
            }
            let mut expected = RangeSet::new();
            for (offset, &present) in bitmap.iter().enumerate() {
                if present {
                    expected.insert(offset as u64..offset as u64 + 1);
                }
            }
            prop_assert_eq!(contents(&set), contents(&expected));
            let gaps = set.gaps_in(0..240);
            let covered: u64 = gaps.iter().map(|g| g.end - g.start).sum();
            prop_assert_eq!(covered as usize, bitmap.iter().filter(|&&p| !p).count());
        }
    }
}
