//! Source symbols: what the code protects, and how a repair symbol is made
//! of them.
//!
//! A source symbol is a 1-RTT packet's plaintext payload, frames as sent
//! (sift-repair spec, `docs/repair.md` §2), written as its two-byte length
//! and then its bytes, zero-padded to the repair symbol's length. A repair
//! symbol over the packet numbers `first..=last` is Σ c(seed, pn)·symbol(pn)
//! over the source packets among them; a packet number that was no source
//! packet (skipped, ACK-only, itself a repair) contributes nothing, as if
//! its symbol were all zeros, which is also what solving for it yields.

use std::collections::BTreeMap;

use super::gf256;

/// Bytes of the length prefix of every source symbol.
pub const LENGTH_PREFIX: usize = 2;

/// Longest payload a source symbol can hold (the prefix is two bytes).
pub const MAX_PAYLOAD: usize = u16::MAX as usize;

/// The coefficient of packet number `pn` in the repair symbol made with
/// `seed`: never 0, so every source packet in the span takes part. A
/// SplitMix64 finaliser over both; any second implementation computes the
/// same byte (spec §3).
pub fn coefficient(seed: u64, pn: u64) -> u8 {
    let mut z = seed ^ pn.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    1 + (z % 255) as u8
}

/// `dst += c · padded(payload)`; `dst` must be at least
/// `LENGTH_PREFIX + payload.len()` long.
pub fn add_source(dst: &mut [u8], payload: &[u8], c: u8) {
    let len = (payload.len() as u16).to_be_bytes();
    gf256::mul_add(&mut dst[..LENGTH_PREFIX], &len, c);
    gf256::mul_add(&mut dst[LENGTH_PREFIX..], payload, c);
}

/// The payload a solved symbol holds: `None` when its prefix says more than
/// it carries or anything past the payload is not zero (a wrong solution),
/// `Some(&[])` when the packet number held no source packet.
pub fn payload_of(symbol: &[u8]) -> Option<&[u8]> {
    let prefix = symbol.get(..LENGTH_PREFIX)?;
    let len = usize::from(u16::from_be_bytes([prefix[0], prefix[1]]));
    let end = LENGTH_PREFIX.checked_add(len)?;
    let payload = symbol.get(LENGTH_PREFIX..end)?;
    symbol[end..].iter().all(|&b| b == 0).then_some(payload)
}

/// Source payloads by packet number, oldest dropped first past a byte
/// budget: the sender's copy of what it may still code over, the
/// receiver's of what it may need to subtract.
#[derive(Debug, Default)]
pub struct SymbolStore {
    payloads: BTreeMap<u64, Vec<u8>>,
    bytes: usize,
    /// Every packet number below this was dropped or never kept.
    floor: u64,
}

impl SymbolStore {
    /// Keeps `payload` as packet `pn`'s source symbol, then drops the
    /// oldest until at most `max_bytes` are kept.
    pub fn insert(&mut self, pn: u64, payload: &[u8], max_bytes: usize) {
        if pn < self.floor || payload.len() > MAX_PAYLOAD {
            return;
        }
        self.bytes += payload.len();
        if let Some(old) = self.payloads.insert(pn, payload.to_vec()) {
            self.bytes -= old.len();
        }
        while self.bytes > max_bytes {
            let Some((oldest, dropped)) = self.payloads.pop_first() else {
                break;
            };
            self.bytes -= dropped.len();
            self.floor = oldest + 1;
        }
    }

    /// Forgets every packet number below `pn`.
    pub fn drop_below(&mut self, pn: u64) {
        if pn <= self.floor {
            return;
        }
        let kept = self.payloads.split_off(&pn);
        for dropped in self.payloads.values() {
            self.bytes -= dropped.len();
        }
        self.payloads = kept;
        self.floor = pn;
    }

    /// Packet `pn`'s payload, if kept.
    pub fn get(&self, pn: u64) -> Option<&[u8]> {
        self.payloads.get(&pn).map(Vec::as_slice)
    }

    /// The smallest packet number whose symbol may still be here: every
    /// one below was dropped or never kept.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// Raises the floor: packet numbers below `pn` are not kept from now on
    /// (the sender arms coding at `pn`; the receiver starts storing).
    pub fn start_at(&mut self, pn: u64) {
        self.drop_below(pn);
    }

    /// The kept payloads among `first..=last`, oldest first.
    pub fn range(&self, first: u64, last: u64) -> impl Iterator<Item = (u64, &[u8])> {
        self.payloads
            .range(first..=last)
            .map(|(pn, payload)| (*pn, payload.as_slice()))
    }

    /// Bytes of payload kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many payloads are kept.
    pub fn len(&self) -> usize {
        self.payloads.len()
    }

    /// Nothing kept.
    pub fn is_empty(&self) -> bool {
        self.payloads.is_empty()
    }
}

/// The repair symbol over the source packets of `store` in
/// `first..=last`, made with `seed`: `LENGTH_PREFIX` plus the longest
/// payload among them, bytes. The caller makes sure every source packet in
/// the span is in `store` (`store.floor() <= first`).
pub fn encode_repair(store: &SymbolStore, first: u64, last: u64, seed: u64) -> Vec<u8> {
    let longest = store
        .range(first, last)
        .map(|(_, payload)| payload.len())
        .max()
        .unwrap_or(0);
    let mut symbol = vec![0u8; LENGTH_PREFIX + longest];
    for (pn, payload) in store.range(first, last) {
        add_source(&mut symbol, payload, coefficient(seed, pn));
    }
    symbol
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_are_never_zero_and_differ_between_seeds() {
        let mut same = 0;
        for pn in 0..10_000 {
            assert_ne!(coefficient(7, pn), 0);
            same += usize::from(coefficient(7, pn) == coefficient(8, pn));
        }
        // Independent bytes agree about 1 time in 255.
        assert!(same < 100, "{same}");
    }

    #[test]
    fn a_solved_symbol_gives_back_its_payload_and_rejects_junk() {
        let mut symbol = vec![0u8; 10];
        add_source(&mut symbol, b"abc", 1);
        assert_eq!(payload_of(&symbol), Some(&b"abc"[..]));
        assert_eq!(payload_of(&[0, 0, 0]), Some(&[][..]));
        assert_eq!(payload_of(&[0, 9, 1]), None, "prefix past the end");
        assert_eq!(payload_of(&[0, 1, 1, 5]), None, "nonzero tail");
        assert_eq!(payload_of(&[0]), None);
    }

    #[test]
    fn the_store_keeps_its_byte_budget_and_its_floor() {
        let mut store = SymbolStore::default();
        for pn in 0..10 {
            store.insert(pn, &[pn as u8; 100], 550);
        }
        assert_eq!(store.len(), 5);
        assert_eq!(store.floor(), 5);
        assert!(store.get(4).is_none());
        store.insert(3, b"late", 550);
        assert!(store.get(3).is_none(), "below the floor");
        store.drop_below(8);
        assert_eq!(store.bytes(), 200);
        assert_eq!(store.range(0, 100).count(), 2);
    }
}
