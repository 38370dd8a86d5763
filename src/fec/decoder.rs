//! The receiver's decoder: repair symbols become linear equations over the
//! source packets it lacks, kept in reduced row echelon form, and a packet
//! comes out as soon as its row has no other unknown left.
//!
//! Work is bounded per input, whatever the peer sends: a repair symbol costs
//! at most one pass over its span (to subtract what arrived) and one
//! elimination against the rows held, each row at most
//! [`Limits::max_unknowns`] coefficients and one symbol long.

use std::collections::BTreeMap;

use super::gf256;
use super::symbol::{add_source, coefficient, payload_of, SymbolStore, LENGTH_PREFIX};

/// What a decoder holds at most.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Packets solved for at once (columns of the system).
    pub max_unknowns: usize,
    /// Packet numbers one repair symbol may span.
    pub max_span: u64,
    /// Bytes of one repair symbol.
    pub max_symbol_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_unknowns: 128,
            max_span: 4096,
            max_symbol_len: 65_535 + LENGTH_PREFIX,
        }
    }
}

/// One repair symbol as a REPAIR frame carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairSymbol<'a> {
    /// The smallest packet number of the span.
    pub first: u64,
    /// The largest packet number of the span.
    pub last: u64,
    /// Chooses the coefficients ([`coefficient`]).
    pub seed: u64,
    /// Σ c·symbol over the span's source packets.
    pub symbol: &'a [u8],
}

/// Why a repair symbol taught the decoder nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unused {
    /// Every packet of its span had arrived.
    NothingMissing,
    /// Its span reaches below what the receiver kept, over a packet that
    /// arrived: that packet cannot be subtracted.
    SpanNotKept,
    /// Span or symbol beyond [`Limits`], or a symbol shorter than a kept
    /// payload it covers.
    Malformed,
    /// It adds no information to the equations held.
    Redundant,
}

/// A source packet the decoder rebuilt: its number and payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rebuilt {
    /// The packet number.
    pub packet_number: u64,
    /// Its frames, as the sender sealed them.
    pub payload: Vec<u8>,
}

#[derive(Debug)]
struct Row {
    /// One coefficient per column; the pivot's is 1.
    coefs: Vec<u8>,
    data: Vec<u8>,
    pivot: usize,
}

/// Equations over the missing source packets of one connection.
#[derive(Debug, Default)]
pub struct Decoder {
    limits: Limits,
    /// Column → the packet number it stands for.
    columns: Vec<Option<u64>>,
    /// Packet number → column.
    column_of: BTreeMap<u64, usize>,
    rows: Vec<Row>,
    /// Solved to nothing: the packet number held no source packet.
    pub empty_solutions: u64,
    /// Solved to bytes that no source symbol can be (a bug or a lying peer).
    pub rejected_solutions: u64,
}

impl Decoder {
    /// A decoder within `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            columns: vec![None; limits.max_unknowns],
            ..Self::default()
        }
    }

    /// Packets solved for now.
    pub fn unknowns(&self) -> usize {
        self.column_of.len()
    }

    /// Equations held.
    pub fn equations(&self) -> usize {
        self.rows.len()
    }

    /// Takes in a repair symbol. `store` holds the source packets that
    /// arrived (every one at or above its floor); `received` says whether a
    /// packet number arrived at all (a received number not in the store
    /// was no source packet).
    pub fn on_repair(
        &mut self,
        repair: RepairSymbol<'_>,
        store: &SymbolStore,
        received: impl Fn(u64) -> bool,
    ) -> Result<Vec<Rebuilt>, Unused> {
        let RepairSymbol {
            first,
            last,
            seed,
            symbol,
        } = repair;
        if last < first
            || last - first >= self.limits.max_span
            || symbol.len() < LENGTH_PREFIX
            || symbol.len() > self.limits.max_symbol_len
        {
            return Err(Unused::Malformed);
        }
        let mut data = symbol.to_vec();
        let mut unknowns = Vec::new();
        for pn in first..=last {
            if let Some(payload) = store.get(pn) {
                if LENGTH_PREFIX + payload.len() > data.len() {
                    return Err(Unused::Malformed);
                }
                add_source(&mut data, payload, coefficient(seed, pn));
            } else if !received(pn) {
                unknowns.push(pn);
            } else if pn < store.floor() {
                return Err(Unused::SpanNotKept);
            }
        }
        if unknowns.is_empty() {
            return Err(Unused::NothingMissing);
        }
        self.forget_below(last.saturating_sub(self.limits.max_span));
        let free = self.columns.iter().filter(|c| c.is_none()).count();
        let new = unknowns
            .iter()
            .filter(|pn| !self.column_of.contains_key(pn))
            .count();
        if new > free {
            if unknowns.len() > self.limits.max_unknowns {
                return Err(Unused::Malformed);
            }
            // Newer losses matter more than equations that never closed.
            self.clear();
        }
        let mut coefs = vec![0u8; self.limits.max_unknowns];
        for pn in unknowns {
            let column = self.column_for(pn);
            coefs[column] = coefficient(seed, pn);
        }
        if !self.insert(coefs, data) {
            return Err(Unused::Redundant);
        }
        Ok(self.take_solved())
    }

    /// A source packet the decoder may be solving for arrived after all (a
    /// late or reordered packet): it is subtracted from every equation.
    pub fn on_source(&mut self, pn: u64, payload: &[u8]) -> Vec<Rebuilt> {
        let Some(column) = self.column_of.remove(&pn) else {
            return Vec::new();
        };
        self.columns[column] = None;
        let mut repivot = Vec::new();
        for (index, row) in self.rows.iter_mut().enumerate() {
            let c = std::mem::take(&mut row.coefs[column]);
            if c != 0 {
                if row.data.len() < LENGTH_PREFIX + payload.len() {
                    row.data.resize(LENGTH_PREFIX + payload.len(), 0);
                }
                add_source(&mut row.data, payload, c);
            }
            if row.pivot == column {
                repivot.push(index);
            }
        }
        // The rows that pivoted on it are equations over the others now.
        for index in repivot.into_iter().rev() {
            let row = self.rows.swap_remove(index);
            self.insert(row.coefs, row.data);
        }
        self.take_solved()
    }

    /// Gives up on every packet number below `pn` (no repair will span it
    /// again) and the equations over them.
    pub fn forget_below(&mut self, pn: u64) {
        let kept = self.column_of.split_off(&pn);
        let forgotten: Vec<usize> = self.column_of.values().copied().collect();
        self.column_of = kept;
        if forgotten.is_empty() {
            return;
        }
        for &column in &forgotten {
            self.columns[column] = None;
        }
        self.rows
            .retain(|row| forgotten.iter().all(|&column| row.coefs[column] == 0));
    }

    fn clear(&mut self) {
        self.rows.clear();
        self.column_of.clear();
        self.columns.iter_mut().for_each(|c| *c = None);
    }

    fn column_for(&mut self, pn: u64) -> usize {
        if let Some(&column) = self.column_of.get(&pn) {
            return column;
        }
        let column = self
            .columns
            .iter()
            .position(Option::is_none)
            .expect("on_repair made room for every new unknown");
        self.columns[column] = Some(pn);
        self.column_of.insert(pn, column);
        column
    }

    /// Reduces an equation against the rows held and keeps it if it says
    /// something new, keeping every pivot column zero in all other rows.
    fn insert(&mut self, mut coefs: Vec<u8>, mut data: Vec<u8>) -> bool {
        for row in &self.rows {
            let factor = coefs[row.pivot];
            if factor != 0 {
                gf256::mul_add(&mut coefs, &row.coefs, factor);
                if data.len() < row.data.len() {
                    data.resize(row.data.len(), 0);
                }
                gf256::mul_add(&mut data, &row.data, factor);
            }
        }
        let Some(pivot) = coefs.iter().position(|&c| c != 0) else {
            return false;
        };
        let scale = gf256::inv(coefs[pivot]).expect("a nonzero coefficient");
        gf256::scale(&mut coefs, scale);
        gf256::scale(&mut data, scale);
        for row in &mut self.rows {
            let factor = row.coefs[pivot];
            if factor != 0 {
                gf256::mul_add(&mut row.coefs, &coefs, factor);
                if row.data.len() < data.len() {
                    row.data.resize(data.len(), 0);
                }
                gf256::mul_add(&mut row.data, &data, factor);
            }
        }
        self.rows.push(Row { coefs, data, pivot });
        true
    }

    /// Rows with one unknown left are solved: their packets come out.
    fn take_solved(&mut self) -> Vec<Rebuilt> {
        let mut rebuilt = Vec::new();
        let mut index = 0;
        while index < self.rows.len() {
            let row = &self.rows[index];
            let alone = row
                .coefs
                .iter()
                .enumerate()
                .all(|(column, &c)| c == 0 || column == row.pivot);
            if !alone {
                index += 1;
                continue;
            }
            let row = self.rows.swap_remove(index);
            let Some(pn) = self.columns[row.pivot].take() else {
                continue;
            };
            self.column_of.remove(&pn);
            match payload_of(&row.data) {
                Some([]) => self.empty_solutions += 1,
                Some(payload) => rebuilt.push(Rebuilt {
                    packet_number: pn,
                    payload: payload.to_vec(),
                }),
                None => self.rejected_solutions += 1,
            }
        }
        rebuilt.sort_by_key(|r| r.packet_number);
        rebuilt
    }
}

#[cfg(test)]
mod tests;
