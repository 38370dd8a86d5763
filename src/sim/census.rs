//! The census: for every address an endpoint sends to, the bytes it sent
//! there against the bytes that arrived from there, and whether and when
//! that address proved it owns itself. RFC 9000 §8 holds an endpoint to
//! three times what arrived from an address until the address is
//! validated; the census measures that from outside, so that a test can
//! assert it for any run (`worst_ratio() <= 3.0`).
//!
//! "Proved" is judged from the simulator's ground truth, not from what the
//! endpoint believes: an address proves itself to an endpoint when a
//! datagram its real owner sent from it arrives after the owner received
//! something the endpoint sent there. That is the return routability a
//! Handshake packet, an echoed Retry token or a PATH_RESPONSE stands for;
//! judging it from the truth means an endpoint fooled into taking an
//! address as validated (a token sealed for an address nobody validated,
//! a spoofed echo) still shows in the census. Datagrams an attacker sent
//! in another host's name count as arriving from that address (the limit
//! is three times what was spoofed in its name) but never prove it.
//!
//! A proof lasts for the run and covers the address, not one connection:
//! what an endpoint sends an address after it proved itself is not
//! counted, whichever connection sends it. Aim an attack at an address
//! that never talks to the endpoint honestly (a victim that only
//! receives), as `tests/attacks.rs` does.
//!
//! An address an endpoint dialed is its own choice, not an amplification:
//! a client's first Initial to the server it was asked to reach goes out
//! before anything arrived from there. A pair whose first datagram opened
//! a connection (a long-header Initial) before anything arrived from the
//! address is marked `dialed` and left out of the worst ratio; an endpoint
//! made to send anything else to an address that never sent it a byte
//! still counts (an infinite ratio).
//!
//! Owns only bookkeeping: the network that carries the datagrams feeds it
//! (`sim::network` does; so can any other driver) and never asks it for a
//! decision. No clock: callers pass the virtual time of each record.

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use serde::Serialize;

/// RFC 9000 §8: before validation an endpoint sends an address at most
/// three times the bytes it received from it.
pub const AMPLIFICATION_LIMIT: f64 = 3.0;

/// What one endpoint (at `local`) exchanged with one remote address.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AddressRecord {
    /// The counted endpoint's address.
    pub local: Option<SocketAddr>,
    /// The address it sent to (and that datagrams claimed to come from).
    pub remote: Option<SocketAddr>,
    /// Bytes the endpoint sent to `remote`, in all.
    pub bytes_sent: u64,
    /// Bytes that arrived at the endpoint from `remote` (spoofed ones
    /// included), in all.
    pub bytes_received: u64,
    /// Datagrams sent to `remote`.
    pub datagrams_sent: u64,
    /// Datagrams that arrived from `remote`.
    pub datagrams_received: u64,
    /// Bytes sent before `remote` proved itself (all of them if it never did).
    pub unproved_sent: u64,
    /// Bytes that arrived from `remote` before it proved itself.
    pub unproved_received: u64,
    /// Of `bytes_received`, those an attacker sent in `remote`'s name.
    pub spoofed_received: u64,
    /// When `remote` proved itself to the endpoint (virtual time since the
    /// run began); `None`: never.
    pub proved_at: Option<Duration>,
    /// The endpoint dialed `remote`: its first datagram there opened a
    /// connection before anything arrived from it.
    pub dialed: bool,
    /// Whether a datagram from the endpoint reached `remote`'s real owner
    /// (the first half of return routability).
    #[serde(skip)]
    reached_owner: bool,
}

impl AddressRecord {
    /// Bytes sent per byte received while `remote` had not proved itself:
    /// the amplification an attacker who can only spoof it gets. Infinite
    /// when something was sent and nothing had arrived; 0 when nothing was
    /// sent.
    pub fn unproved_ratio(&self) -> f64 {
        match (self.unproved_sent, self.unproved_received) {
            (0, _) => 0.0,
            (_, 0) => f64::INFINITY,
            (sent, received) => sent as f64 / received as f64,
        }
    }

    /// Whether `remote` has proved itself to the endpoint.
    pub fn proved(&self) -> bool {
        self.proved_at.is_some()
    }
}

/// Per (endpoint, address) bytes and proofs for every endpoint watched.
#[derive(Clone, Debug, Default)]
pub struct Census {
    /// Addresses whose endpoints are counted (their honest sends), each
    /// with the endpoint's first address, which names it in the records.
    watched: BTreeMap<SocketAddr, SocketAddr>,
    /// By (local, remote).
    records: BTreeMap<(SocketAddr, SocketAddr), AddressRecord>,
}

impl Census {
    /// An empty census watching nobody.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts what the endpoint at `local` sends and receives from now on.
    pub fn watch(&mut self, local: SocketAddr) {
        self.watched.entry(local).or_insert(local);
    }

    /// The endpoint watched at `endpoint` moved to `local` as well (a
    /// client that rebound its socket): what it sends and receives there
    /// counts as its own, so an address that proved itself to it, or that
    /// it dialed, stays so.
    pub fn watch_move(&mut self, endpoint: SocketAddr, local: SocketAddr) {
        let name = self.endpoint_at(endpoint).unwrap_or(endpoint);
        self.watched.insert(local, name);
    }

    /// Whether the endpoint at `local` is counted.
    pub fn is_watched(&self, local: SocketAddr) -> bool {
        self.watched.contains_key(&local)
    }

    /// The address that names the endpoint at `local` in the records.
    fn endpoint_at(&self, local: SocketAddr) -> Option<SocketAddr> {
        self.watched.get(&local).copied()
    }

    fn record(&mut self, local: SocketAddr, remote: SocketAddr) -> &mut AddressRecord {
        self.records
            .entry((local, remote))
            .or_insert_with(|| AddressRecord {
                local: Some(local),
                remote: Some(remote),
                ..AddressRecord::default()
            })
    }

    /// The endpoint at `local` sent `len` bytes to `remote` (whether or not
    /// anything lives there); `opens`: the datagram starts with an Initial
    /// (a connection's first packets). Only an endpoint's own sends are
    /// recorded, never an attacker's datagrams in its name.
    pub fn on_sent(&mut self, local: SocketAddr, remote: SocketAddr, len: usize, opens: bool) {
        let Some(local) = self.endpoint_at(local) else {
            return;
        };
        let record = self.record(local, remote);
        if record.datagrams_sent == 0 && record.datagrams_received == 0 && opens {
            record.dialed = true;
        }
        record.bytes_sent += len as u64;
        record.datagrams_sent += 1;
        if record.proved_at.is_none() {
            record.unproved_sent += len as u64;
        }
    }

    /// A datagram of `len` bytes that says it comes from `from` arrived at
    /// `to`, at `at` (virtual time since the run began). `genuine`: the host
    /// that sent it owns `from` (not spoofed). Counts it for `to`'s endpoint
    /// if watched, and, when `from` is a watched endpoint and the datagram
    /// genuine, notes that its datagrams reach `to`'s owner.
    pub fn on_arrived(
        &mut self,
        from: SocketAddr,
        to: SocketAddr,
        len: usize,
        genuine: bool,
        at: Duration,
    ) {
        if let (true, Some(sender)) = (genuine, self.endpoint_at(from)) {
            self.record(sender, to).reached_owner = true;
        }
        let Some(receiver) = self.endpoint_at(to) else {
            return;
        };
        let record = self.record(receiver, from);
        record.bytes_received += len as u64;
        record.datagrams_received += 1;
        if !genuine {
            record.spoofed_received += len as u64;
        }
        if record.proved_at.is_some() {
            return;
        }
        record.unproved_received += len as u64;
        if genuine && record.reached_owner {
            record.proved_at = Some(at);
        }
    }

    /// Every (endpoint, address) pair seen, in address order.
    pub fn records(&self) -> impl Iterator<Item = &AddressRecord> {
        self.records.values()
    }

    /// What the endpoint at `local` exchanged with `remote`, if anything.
    pub fn get(&self, local: SocketAddr, remote: SocketAddr) -> Option<&AddressRecord> {
        self.records.get(&(local, remote))
    }

    /// The pair with the largest amplification before proof, among those
    /// the endpoint sent to while unproved and did not dial.
    pub fn worst(&self) -> Option<&AddressRecord> {
        self.records
            .values()
            .filter(|record| record.unproved_sent > 0 && !record.dialed)
            .max_by(|a, b| a.unproved_ratio().total_cmp(&b.unproved_ratio()))
    }

    /// The largest amplification any watched endpoint gave an address
    /// before it proved itself (0 when none was sent anything unproved).
    pub fn worst_ratio(&self) -> f64 {
        self.worst().map_or(0.0, AddressRecord::unproved_ratio)
    }

    /// The pairs (not dialed) whose amplification before proof exceeds
    /// `limit`.
    pub fn over(&self, limit: f64) -> Vec<&AddressRecord> {
        self.records
            .values()
            .filter(|record| !record.dialed && record.unproved_ratio() > limit)
            .collect()
    }
}

/// Rows the table shows; the rest are summed up in one line.
const TABLE_ROWS: usize = 20;

/// A table a reader can paste: one row per pair, worst first (the first
/// `TABLE_ROWS`).
impl fmt::Display for Census {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{:<22} {:<22} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9}",
            "endpoint", "address", "sent", "received", "spoofed", "unproved", "ratio", "proved"
        )?;
        let mut rows: Vec<&AddressRecord> = self.records.values().collect();
        rows.sort_by(|a, b| {
            (!b.dialed, b.unproved_ratio())
                .partial_cmp(&(!a.dialed, a.unproved_ratio()))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let show = |address: Option<SocketAddr>| address.map_or("-".into(), |a| a.to_string());
        let hidden = rows.len().saturating_sub(TABLE_ROWS);
        for row in rows.into_iter().take(TABLE_ROWS) {
            let proved = match (row.dialed, row.proved_at) {
                (true, _) => "dialed".into(),
                (false, Some(at)) => format!("{:.3}s", at.as_secs_f64()),
                (false, None) => "never".into(),
            };
            writeln!(
                f,
                "{:<22} {:<22} {:>10} {:>10} {:>10} {:>10} {:>8.2} {:>9}",
                show(row.local),
                show(row.remote),
                row.bytes_sent,
                row.bytes_received,
                row.spoofed_received,
                row.unproved_sent,
                row.unproved_ratio(),
                proved
            )?;
        }
        if hidden > 0 {
            writeln!(f, "... and {hidden} more pairs, none worse")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], port))
    }

    const SERVER: u16 = 443;

    #[test]
    fn an_address_that_never_answers_counts_everything_sent_to_it() {
        let mut census = Census::new();
        census.watch(addr(SERVER));
        // A spoofed 1200-byte datagram in the victim's name, then 4000
        // bytes to it: 4000 / 1200 = 3.33.
        census.on_arrived(addr(9), addr(SERVER), 1200, false, Duration::ZERO);
        census.on_sent(addr(SERVER), addr(9), 2500, false);
        census.on_sent(addr(SERVER), addr(9), 1500, false);
        let victim = census.get(addr(SERVER), addr(9)).unwrap();
        assert_eq!(victim.spoofed_received, 1200);
        assert!(!victim.proved());
        assert!((census.worst_ratio() - 4000.0 / 1200.0).abs() < 1e-9);
        assert_eq!(census.over(AMPLIFICATION_LIMIT).len(), 1);
    }

    #[test]
    fn an_owner_that_answers_what_reached_it_proves_its_address() {
        let mut census = Census::new();
        census.watch(addr(SERVER));
        let t = Duration::from_millis;
        census.on_arrived(addr(1), addr(SERVER), 1200, true, t(0));
        census.on_sent(addr(SERVER), addr(1), 3000, false);
        // An answer before anything reached it proves nothing.
        census.on_arrived(addr(1), addr(SERVER), 50, true, t(1));
        assert!(!census.get(addr(SERVER), addr(1)).unwrap().proved());
        census.on_arrived(addr(SERVER), addr(1), 3000, true, t(10));
        census.on_arrived(addr(1), addr(SERVER), 100, true, t(20));
        census.on_sent(addr(SERVER), addr(1), 1_000_000, false);
        let client = census.get(addr(SERVER), addr(1)).unwrap();
        assert_eq!(client.proved_at, Some(t(20)));
        // 3000 sent before proof for 1200 + 50 + 100 received.
        assert_eq!(client.unproved_sent, 3000);
        assert_eq!(client.unproved_received, 1350);
        assert!(census.worst_ratio() < AMPLIFICATION_LIMIT);
    }

    #[test]
    fn a_spoofed_answer_never_proves_an_address() {
        let mut census = Census::new();
        census.watch(addr(SERVER));
        census.on_arrived(addr(9), addr(SERVER), 100, false, Duration::ZERO);
        census.on_sent(addr(SERVER), addr(9), 300, false);
        // The datagram reached the victim (it owns the address) ...
        census.on_arrived(addr(SERVER), addr(9), 300, true, Duration::ZERO);
        // ... but the answer came from the attacker in its name.
        census.on_arrived(addr(9), addr(SERVER), 100, false, Duration::ZERO);
        census.on_sent(addr(SERVER), addr(9), 100_000, false);
        let victim = census.get(addr(SERVER), addr(9)).unwrap();
        assert!(!victim.proved());
        assert!(census.worst_ratio() > 100.0);
    }

    #[test]
    fn an_address_the_endpoint_dialed_is_its_own_choice() {
        let mut census = Census::new();
        census.watch(addr(1));
        // A client's first Initial to its server, before anything came.
        census.on_sent(addr(1), addr(SERVER), 1200, true);
        let server = census.get(addr(1), addr(SERVER)).unwrap();
        assert!(server.dialed);
        assert_eq!(census.worst_ratio(), 0.0);
        // Anything else to an address that never sent a byte counts.
        census.on_sent(addr(1), addr(9), 60, false);
        assert_eq!(census.worst_ratio(), f64::INFINITY);
    }

    #[test]
    fn an_endpoint_that_moves_keeps_what_its_peer_proved_and_what_it_dialed() {
        let mut census = Census::new();
        census.watch(addr(1));
        census.on_sent(addr(1), addr(SERVER), 1200, true);
        census.watch_move(addr(1), addr(2));
        // From its new address the client sends on to the server it dialed.
        census.on_sent(addr(2), addr(SERVER), 50_000, false);
        let record = census.get(addr(1), addr(SERVER)).unwrap();
        assert!(record.dialed);
        assert_eq!(record.bytes_sent, 51_200);
        assert_eq!(census.worst_ratio(), 0.0);
    }

    #[test]
    fn an_unwatched_hosts_sends_are_not_counted() {
        let mut census = Census::new();
        census.watch(addr(SERVER));
        // The attacker is not watched: its own sends are its business.
        census.on_sent(addr(7), addr(9), 10_000, false);
        assert_eq!(census.records().count(), 0);
        assert_eq!(census.worst_ratio(), 0.0);
    }
}
