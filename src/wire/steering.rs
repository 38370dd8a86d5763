//! Connection IDs that route to the worker serving them, and that only
//! their server can tell the worker of.
//!
//! A multi-core server runs one endpoint per worker, each on its own
//! `SO_REUSEPORT` socket bound to the same address. The kernel must hand
//! every datagram of a connection to the same worker, even after the
//! client's address changes (migration, NAT rebinding), so it cannot pick
//! by the 4-tuple: it picks by the destination connection ID, as worker
//! `PRF_k(first 8 bytes of the ID) mod workers`
//! (`io::attach_cid_steering` loads the program that computes it).
//!
//! The PRF is HalfSipHash-2-4 ([`half_siphash`]) under a 64-bit
//! [`SteeringKey`] the server draws from the operating system when it
//! starts and gives only to its own kernel. RFC 9000 §5.1 forbids IDs that
//! let an outside observer link them to the connection's other IDs: with
//! the key secret, whether two IDs route to the same worker is as hidden as
//! the PRF's output, and every byte of every ID is random, so no bit is
//! shared by the IDs of one connection (or of one worker).
//!
//! - A server connection's own IDs (the one in its first Initial, every
//!   NEW_CONNECTION_ID, a Retry's) are drawn at random until one routes to
//!   their worker ([`CidSteering::draw`]): about `workers` draws each.
//! - The client's first Initial carries an ID the client chose at random
//!   (at least 8 bytes, RFC 9000 §7.2): it lands on whichever worker the
//!   PRF names, which is as good as any, and its retransmissions (and
//!   0-RTT) carry the same ID to the same worker.
//!
//! The destination ID starts at a fixed offset in both header forms
//! ([`DCID_FIRST_BYTE_LONG`], [`DCID_FIRST_BYTE_SHORT`]), and a server's
//! own IDs are [`SHORT_HEADER_DCID_LEN`] = [`STEERING_INPUT_LEN`] bytes, so
//! the program reads eight bytes at that offset without parsing. A
//! datagram shorter than [`MIN_STEERED_DATAGRAM`] is left to the kernel's
//! hash.
//!
//! The PRF lives here, not in `crypto`, because it is part of the wire's
//! routing rule (what the kernel computes from the bytes), not a tag.

use std::fmt;

use rand::RngCore;

use super::cid::{ConnectionId, SHORT_HEADER_DCID_LEN};
use super::header::LONG_FORM_BIT;

pub mod half_siphash;

pub use half_siphash::STEERING_INPUT_LEN;

/// Offset of the destination connection ID's first byte in a long header:
/// flags (1), version (4), DCID length (1).
pub const DCID_FIRST_BYTE_LONG: u32 = 6;
/// Offset of the destination connection ID's first byte in a short header:
/// after the flags byte.
pub const DCID_FIRST_BYTE_SHORT: u32 = 1;
/// The shortest datagram the steering reads: one that holds eight ID bytes
/// in either header form (a long header's end at byte 14). Shorter ones,
/// which no packet of a server's connection is, go where the kernel's
/// hash sends them.
pub const MIN_STEERED_DATAGRAM: usize = DCID_FIRST_BYTE_LONG as usize + STEERING_INPUT_LEN;
/// The most workers one socket group steers among: a worker draws about
/// `workers` IDs for each one it keeps, and no machine sift runs on has
/// more cores than this.
pub const MAX_WORKERS: usize = 128;
/// Draws per worker before [`CidSteering::draw`] gives up: the chance that
/// `64·N` draws all miss a worker of N is below e^-64, never in practice.
const MAX_DRAWS_PER_WORKER: usize = 64;

// The program reads a server ID's first eight bytes from every short
// header, whose DCID carries no length: the server's IDs must be at least
// that long.
const _: () = assert!(SHORT_HEADER_DCID_LEN >= STEERING_INPUT_LEN);

/// The secret that decides which worker a connection ID routes to: 64
/// bits a server draws from the operating system when it starts
/// (`io::steering_key`) and shares only with its kernel's steering
/// program. `Debug` does not print it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SteeringKey(half_siphash::Key);

impl SteeringKey {
    /// Bytes in a key.
    pub const LEN: usize = 8;

    /// The key made of `bytes`, read as HalfSipHash's reference reads its
    /// key (two little-endian words).
    pub const fn from_bytes(bytes: [u8; Self::LEN]) -> Self {
        Self([
            u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]),
        ])
    }

    /// The key's two words, for the kernel program that computes the PRF.
    pub fn words(self) -> [u32; 2] {
        self.0
    }
}

impl fmt::Debug for SteeringKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SteeringKey(..)")
    }
}

/// Worker `index` of `workers` under one key: the connection IDs this
/// endpoint issues, and which worker any ID routes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidSteering {
    index: u8,
    workers: u8,
    key: SteeringKey,
}

impl CidSteering {
    /// Worker `index` of `workers` (`1..=MAX_WORKERS`) of the group whose
    /// program steers by `key`; `None` if out of range.
    pub fn new(index: usize, workers: usize, key: SteeringKey) -> Option<Self> {
        if workers == 0 || workers > MAX_WORKERS || index >= workers {
            return None;
        }
        Some(Self {
            index: u8::try_from(index).ok()?,
            workers: u8::try_from(workers).ok()?,
            key,
        })
    }

    /// Worker `index` of the same group (a Retry that sends a client to
    /// another worker names that worker with this).
    pub fn for_worker(self, index: usize) -> Option<Self> {
        Self::new(index, self.workers(), self.key)
    }

    /// This worker's index.
    pub fn index(self) -> usize {
        usize::from(self.index)
    }

    /// How many workers share the socket group.
    pub fn workers(self) -> usize {
        usize::from(self.workers)
    }

    /// The key the group steers by.
    pub fn key(self) -> SteeringKey {
        self.key
    }

    /// A connection ID of [`SHORT_HEADER_DCID_LEN`] random bytes from `rng`
    /// that routes to this worker: IDs are drawn until one does (about
    /// `workers` draws; after `64·workers` misses, never seen in practice,
    /// the last one is kept and its datagrams reach another worker, which
    /// drops them). Every byte stays uniformly random to anyone without
    /// the key.
    pub fn draw(self, rng: &mut impl RngCore) -> ConnectionId {
        let mut bytes = [0u8; SHORT_HEADER_DCID_LEN];
        for _ in 0..MAX_DRAWS_PER_WORKER * self.workers() {
            rng.fill_bytes(&mut bytes);
            if self.worker_of(&bytes) == Some(self.index()) {
                break;
            }
        }
        ConnectionId::new(&bytes).unwrap_or_default()
    }

    /// The worker an ID routes to (what the kernel program computes):
    /// `PRF_key(its first 8 bytes) mod workers`. `None` for an ID shorter
    /// than that, which no worker issued.
    pub fn worker_of(self, cid: &[u8]) -> Option<usize> {
        let input: &[u8; STEERING_INPUT_LEN] = cid.get(..STEERING_INPUT_LEN)?.try_into().ok()?;
        let hash = half_siphash::steering_hash(self.key.words(), input);
        usize::try_from(hash % u32::from(self.workers)).ok()
    }

    /// The worker the kernel program (`io::attach_cid_steering`) picks for
    /// `datagram`: [`Self::worker_of`] the eight bytes where the header
    /// form puts the destination ID. `None` for a datagram shorter than
    /// [`MIN_STEERED_DATAGRAM`] (the program leaves it to the kernel's
    /// hash).
    pub fn worker_of_datagram(self, datagram: &[u8]) -> Option<usize> {
        if datagram.len() < MIN_STEERED_DATAGRAM {
            return None;
        }
        let long_form = datagram.first()? & LONG_FORM_BIT != 0;
        let at = if long_form {
            DCID_FIRST_BYTE_LONG
        } else {
            DCID_FIRST_BYTE_SHORT
        };
        let at = usize::try_from(at).ok()?;
        self.worker_of(datagram.get(at..at + STEERING_INPUT_LEN)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::header::{Header, PacketType};
    use crate::wire::VERSION;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    const KEY: SteeringKey = SteeringKey([0x0123_4567, 0x89ab_cdef]);

    #[test]
    fn every_drawn_id_routes_back_to_its_worker() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for workers in [1, 2, 3, 7, 8, 100, MAX_WORKERS] {
            for index in 0..workers {
                let steering = CidSteering::new(index, workers, KEY).unwrap();
                for _ in 0..4 {
                    let cid = steering.draw(&mut rng);
                    assert_eq!(cid.len(), SHORT_HEADER_DCID_LEN);
                    assert_eq!(steering.worker_of(cid.as_slice()), Some(index));
                }
            }
        }
    }

    #[test]
    fn a_lone_worker_keeps_the_first_id_it_draws() {
        let steering = CidSteering::new(0, 1, KEY).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let mut expected = [0u8; SHORT_HEADER_DCID_LEN];
        ChaCha8Rng::seed_from_u64(2).fill_bytes(&mut expected);
        assert_eq!(steering.draw(&mut rng).as_slice(), expected);
    }

    /// Wilson–Hilferty's approximation of the chi-square quantile with
    /// `dof` degrees of freedom six standard deviations out (a tail of
    /// about 1e-9): generous enough that IDs drawn uniformly at random
    /// pass with certainty for any practical purpose.
    fn chi_square_bound(dof: f64) -> f64 {
        let spread = (2.0 / (9.0 * dof)).sqrt();
        dof * (1.0 - 2.0 / (9.0 * dof) + 6.0 * spread).powi(3)
    }

    /// RFC 9000 §5.1: the IDs one worker of N issues show an observer
    /// without the key nothing that links them: every bit is a fair coin
    /// and every byte modulo N falls as a uniform byte's does. (With the
    /// worker's index written into the first byte, as before, bit 0 was
    /// clear in every ID of worker 0 for N = 2, 8 and 100.)
    #[test]
    fn ids_one_worker_issues_show_no_pattern_without_the_key() {
        const IDS: usize = 10_000;
        for workers in [2, 8, 100] {
            let steering = CidSteering::new(0, workers, KEY).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(workers as u64);
            let ids: Vec<ConnectionId> = (0..IDS).map(|_| steering.draw(&mut rng)).collect();
            // Each bit: ones ~ Binomial(IDS, 1/2), within 6 sigma.
            let sigma = (IDS as f64 / 4.0).sqrt();
            for bit in 0..64 {
                let ones = ids
                    .iter()
                    .filter(|cid| cid.as_slice()[bit / 8] >> (bit % 8) & 1 == 1)
                    .count();
                let off = (ones as f64 - IDS as f64 / 2.0).abs();
                assert!(
                    off <= 6.0 * sigma,
                    "{workers} workers: bit {bit} is set in {ones} of {IDS} IDs"
                );
            }
            // Each byte modulo N against a uniform byte's residues.
            let bound = chi_square_bound((workers - 1) as f64);
            for at in 0..8 {
                let mut seen = vec![0usize; workers];
                for cid in &ids {
                    seen[usize::from(cid.as_slice()[at]) % workers] += 1;
                }
                let chi_square: f64 = (0..workers)
                    .map(|residue| {
                        let bytes = (0..256).filter(|b| b % workers == residue).count();
                        let expected = IDS as f64 * bytes as f64 / 256.0;
                        (seen[residue] as f64 - expected).powi(2) / expected
                    })
                    .sum();
                assert!(
                    chi_square <= bound,
                    "{workers} workers: byte {at} mod {workers} has chi-square {chi_square:.1} > {bound:.1}"
                );
            }
            // The server, with the key, still finds the worker every time.
            for cid in &ids {
                assert_eq!(steering.worker_of(cid.as_slice()), Some(0));
            }
        }
    }

    #[test]
    fn under_another_key_the_same_ids_route_anywhere() {
        // The worker is the key's secret: IDs drawn for worker 0 under one
        // key fall on worker 0 under another only as often as chance says.
        let workers = 8;
        let steering = CidSteering::new(0, workers, KEY).unwrap();
        let other = CidSteering::new(0, workers, SteeringKey::from_bytes(*b"another!")).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let ids = 8_000;
        let still_zero = (0..ids)
            .filter(|_| other.worker_of(steering.draw(&mut rng).as_slice()) == Some(0))
            .count();
        // Binomial(8000, 1/8): mean 1000, sigma about 30.
        assert!((800..1200).contains(&still_zero), "{still_zero}");
    }

    #[test]
    fn out_of_range_workers_are_refused() {
        assert!(CidSteering::new(0, 0, KEY).is_none());
        assert!(CidSteering::new(2, 2, KEY).is_none());
        assert!(CidSteering::new(0, MAX_WORKERS + 1, KEY).is_none());
        let steering = CidSteering::new(0, 2, KEY).unwrap();
        assert_eq!(steering.for_worker(1).map(CidSteering::index), Some(1));
        assert!(steering.for_worker(2).is_none());
    }

    #[test]
    fn the_key_is_never_printed() {
        let steering = CidSteering::new(0, 2, KEY).unwrap();
        let printed = format!("{steering:?}");
        assert!(printed.contains("SteeringKey(..)"), "{printed}");
        for word in KEY.words() {
            assert!(!printed.contains(&word.to_string()), "{printed}");
            assert!(!printed.contains(&format!("{word:x}")), "{printed}");
        }
    }

    #[test]
    fn the_offsets_are_where_both_header_forms_put_the_dcid() {
        let dcid = [0xab, 2, 3, 4, 5, 6, 7, 8];
        let steering = CidSteering::new(0, 7, KEY).unwrap();
        for (ty, offset) in [
            (PacketType::Initial, DCID_FIRST_BYTE_LONG),
            (PacketType::Handshake, DCID_FIRST_BYTE_LONG),
            (PacketType::OneRtt, DCID_FIRST_BYTE_SHORT),
        ] {
            let header = Header {
                ty,
                version: VERSION,
                dcid: ConnectionId::new(&dcid).unwrap(),
                scid: ConnectionId::new(&[9; 8]).unwrap(),
                token: &[],
                packet_number: 1,
                payload_len: 100,
                key_phase: false,
            };
            let mut datagram = Vec::new();
            header.encode(&mut datagram);
            let offset = offset as usize;
            assert_eq!(datagram[offset..offset + 8], dcid, "{ty:?}");
            assert_eq!(
                steering.worker_of_datagram(&datagram),
                steering.worker_of(&dcid),
                "{ty:?}"
            );
        }
    }

    #[test]
    fn datagrams_too_short_for_a_long_headers_eight_id_bytes_route_nowhere() {
        let steering = CidSteering::new(0, 2, KEY).unwrap();
        // A long header's ID ends at byte 6 + 8; both forms need as much.
        for first in [0x40, 0xc0] {
            assert!(steering.worker_of_datagram(&[first; 14]).is_some());
            assert_eq!(steering.worker_of_datagram(&[first; 13]), None);
        }
        assert_eq!(steering.worker_of_datagram(&[]), None);
        assert_eq!(steering.worker_of(&[1, 2, 3, 4, 5, 6, 7]), None);
    }
}
