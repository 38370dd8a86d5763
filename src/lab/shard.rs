//! One slice of a sweep, so that many machines (a Slurm job array, GNU
//! parallel) can share it: `--shard K/N` takes every N-th unit of work
//! starting at the K-th (1-based), and a `merge` step joins the slices.
//!
//! Units are dealt round-robin rather than in contiguous blocks so that every
//! shard gets a similar mix of cheap and expensive points of a sweep.

use std::fmt;
use std::str::FromStr;

/// The K-th of N slices of a sweep (1 ≤ K ≤ N).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    index: usize,
    count: usize,
}

/// A `--shard` value that is not `K/N` with 1 ≤ K ≤ N.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("shard {0:?} is not K/N with 1 <= K <= N (e.g. 2/8)")]
pub struct ShardError(pub String);

impl Shard {
    /// The whole sweep as one shard.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// The `index`-th (1-based) of `count` shards.
    pub fn new(index: usize, count: usize) -> Result<Self, ShardError> {
        if index == 0 || count == 0 || index > count {
            return Err(ShardError(format!("{index}/{count}")));
        }
        Ok(Self { index, count })
    }

    /// K, 1-based.
    pub fn index(&self) -> usize {
        self.index
    }

    /// N.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether unit `unit` (0-based position in the sweep's fixed order)
    /// belongs to this shard.
    pub fn contains(&self, unit: usize) -> bool {
        unit % self.count == self.index - 1
    }

    /// The items of a sweep that belong to this shard, in sweep order.
    pub fn select<T>(&self, items: impl IntoIterator<Item = T>) -> Vec<T> {
        items
            .into_iter()
            .enumerate()
            .filter(|(unit, _)| self.contains(*unit))
            .map(|(_, item)| item)
            .collect()
    }
}

impl Default for Shard {
    fn default() -> Self {
        Self::ALL
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ShardError(text.to_string());
        let (index, count) = text.trim().split_once('/').ok_or_else(bad)?;
        let index = index.trim().parse().map_err(|_| bad())?;
        let count = count.trim().parse().map_err(|_| bad())?;
        Shard::new(index, count).map_err(|_| bad())
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_partition_a_sweep_without_overlap_or_gap() {
        let sweep: Vec<usize> = (0..23).collect();
        let mut seen: Vec<usize> = (1..=4)
            .flat_map(|k| Shard::new(k, 4).unwrap().select(sweep.clone()))
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, sweep);
    }

    #[test]
    fn shards_are_dealt_round_robin() {
        let second_of_three = Shard::new(2, 3).unwrap().select(0..10);
        assert_eq!(second_of_three, vec![1, 4, 7]);
    }

    #[test]
    fn shard_parses_k_of_n_and_prints_it_back() {
        let shard: Shard = "3/8".parse().unwrap();
        assert_eq!((shard.index(), shard.count()), (3, 8));
        assert_eq!(shard.to_string(), "3/8");
        assert_eq!(" 1 / 1 ".parse::<Shard>().unwrap(), Shard::ALL);
    }

    #[test]
    fn shard_rejects_zero_and_out_of_range_indices() {
        for bad in ["0/4", "5/4", "1/0", "2", "a/b", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad:?} was accepted");
        }
    }
}
