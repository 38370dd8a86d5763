//! What every endpoint of one server shares about tokens: the clock they are
//! dated by, and the NEW_TOKEN tokens already spent.
//!
//! **One clock.** A token carries the wall-clock time it was issued
//! (milliseconds since the Unix epoch), read through a [`TokenClock`]: an
//! `Instant` and the wall-clock time at that instant, taken once by the
//! driver (`io::token_clock`) and shared by every worker. A worker that
//! dated tokens from its own first `now` would see another worker's token
//! as issued in the future or long expired, and drop the client's Initials
//! until the two happened to agree (a balancing Retry from one worker is
//! always answered to another).
//!
//! **Single use** (RFC 9000 §8.1.4: a NEW_TOKEN token "SHOULD NOT be
//! accepted multiple times"). The ledger remembers the tag of every
//! address token it has accepted until the token would have expired
//! anyway: two generations of [`ADDRESS_TOKEN_LIFETIME`] each, the older
//! dropped whole when a new one starts, so a token used at `t` (issued at
//! most a lifetime before) is remembered past its expiry, and memory stays
//! bounded by [`MAX_SPENT_TOKENS`] per generation. A full generation
//! refuses further tokens (their clients are asked for a Retry, or go on
//! unvalidated under the anti-amplification limit): a flood of returning
//! clients costs a round trip, never a replay. Tokens issued before this
//! ledger's clock started are refused as well: the previous run of the
//! server may have accepted them already, and this run cannot know.
//!
//! Retry tokens are not recorded: they live [`RETRY_TOKEN_LIFETIME`] and
//! are bound to the client's address, port and connection ID, which is the
//! short acceptance RFC 9000 §8.1.4 asks of them.
//!
//! [`RETRY_TOKEN_LIFETIME`]: super::RETRY_TOKEN_LIFETIME

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::token::{ADDRESS_TOKEN_LIFETIME, TOKEN_NAME_LEN};

/// Address tokens one generation of the ledger remembers at most (two
/// generations are held: about 5 MiB at most in all).
pub const MAX_SPENT_TOKENS: usize = 1 << 16;

/// Wall-clock time read from an [`Instant`]: `at` was `unix_at` after the
/// Unix epoch. Sans-IO code dates tokens with it without reading a clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenClock {
    at: Instant,
    unix_at: Duration,
}

impl TokenClock {
    /// A clock on which `at` reads `unix_at` since the Unix epoch.
    pub fn new(at: Instant, unix_at: Duration) -> Self {
        Self { at, unix_at }
    }

    /// The wall-clock time at `now`.
    pub fn unix_time(&self, now: Instant) -> Duration {
        match now.checked_duration_since(self.at) {
            Some(after) => self.unix_at.saturating_add(after),
            None => self.unix_at.saturating_sub(self.at - now),
        }
    }

    /// When the clock was set: tokens issued before it come from an
    /// earlier run of the server.
    pub fn started(&self) -> Duration {
        self.unix_at
    }
}

/// Why an address token was not accepted by the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spend {
    /// First use: accepted.
    Accepted,
    /// Already accepted once.
    Replayed,
    /// Issued before this server's clock started: a replay cannot be ruled out.
    BeforeStart,
    /// The ledger is full for now: refused rather than forgotten.
    Full,
}

/// The clock and the spent tokens, shared by clones: give one ledger to
/// every endpoint of a server ([`Endpoint::with_token_ledger`]).
///
/// [`Endpoint::with_token_ledger`]: super::Endpoint::with_token_ledger
#[derive(Clone, Debug)]
pub struct TokenLedger {
    clock: TokenClock,
    spent: Arc<Mutex<SpentTokens>>,
}

impl TokenLedger {
    /// A ledger dated by `clock`, with nothing spent.
    pub fn new(clock: TokenClock) -> Self {
        Self::with_capacity(clock, MAX_SPENT_TOKENS)
    }

    /// A ledger that remembers at most `capacity` tokens per generation.
    pub fn with_capacity(clock: TokenClock, capacity: usize) -> Self {
        Self {
            clock,
            spent: Arc::new(Mutex::new(SpentTokens {
                capacity,
                generation_start: clock.started(),
                current: HashSet::new(),
                previous: HashSet::new(),
            })),
        }
    }

    /// The clock tokens are dated by.
    pub fn clock(&self) -> TokenClock {
        self.clock
    }

    fn lock(&self) -> MutexGuard<'_, SpentTokens> {
        self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Spends the address token named `name`, issued at `issued` (wall
    /// clock), at `now`; accepted only the first time.
    pub fn spend(&self, name: [u8; TOKEN_NAME_LEN], issued: Duration, now: Instant) -> Spend {
        self.check(name, issued, now, true)
    }

    /// What [`TokenLedger::spend`] would say now, without spending the
    /// token: an endpoint decides with it where a client goes, and spends
    /// the token only with the connection it makes. Another worker may
    /// spend it in between; `spend` then says so.
    pub fn peek(&self, name: [u8; TOKEN_NAME_LEN], issued: Duration, now: Instant) -> Spend {
        self.check(name, issued, now, false)
    }

    fn check(
        &self,
        name: [u8; TOKEN_NAME_LEN],
        issued: Duration,
        now: Instant,
        spend: bool,
    ) -> Spend {
        if issued < self.clock.started() {
            return Spend::BeforeStart;
        }
        let now = self.clock.unix_time(now);
        let mut spent = self.lock();
        spent.rotate(now);
        if spent.current.contains(&name) || spent.previous.contains(&name) {
            return Spend::Replayed;
        }
        if spent.current.len() >= spent.capacity {
            return Spend::Full;
        }
        if spend {
            spent.current.insert(name);
        }
        Spend::Accepted
    }

    /// Tokens remembered now (both generations).
    pub fn remembered(&self) -> usize {
        let spent = self.lock();
        spent.current.len() + spent.previous.len()
    }
}

#[derive(Debug)]
struct SpentTokens {
    capacity: usize,
    /// Wall-clock start of `current`.
    generation_start: Duration,
    current: HashSet<[u8; TOKEN_NAME_LEN]>,
    previous: HashSet<[u8; TOKEN_NAME_LEN]>,
}

impl SpentTokens {
    /// Starts new generations until `now` falls in the current one. A token
    /// spent in `previous` was issued at most a lifetime before its
    /// generation ended, so it has expired by the time `previous` is dropped.
    fn rotate(&mut self, now: Duration) {
        let lifetime = ADDRESS_TOKEN_LIFETIME;
        if now < self.generation_start + lifetime {
            return;
        }
        if now < self.generation_start + 2 * lifetime {
            self.previous = std::mem::take(&mut self.current);
            self.generation_start += lifetime;
        } else {
            // Idle for over a lifetime: nothing held is still valid.
            self.previous.clear();
            self.current.clear();
            let lifetimes = (now - self.generation_start).as_millis() / lifetime.as_millis();
            self.generation_start += lifetime * u32::try_from(lifetimes).unwrap_or(u32::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ledger(capacity: usize) -> (TokenLedger, Instant) {
        let t0 = Instant::now();
        let clock = TokenClock::new(t0, Duration::from_secs(1_000_000));
        (TokenLedger::with_capacity(clock, capacity), t0)
    }

    #[test]
    fn the_clock_reads_wall_time_before_and_after_its_instant() {
        let t0 = Instant::now() + Duration::from_secs(10);
        let clock = TokenClock::new(t0, Duration::from_secs(500));
        assert_eq!(
            clock.unix_time(t0 + Duration::from_secs(3)),
            Duration::from_secs(503)
        );
        assert_eq!(
            clock.unix_time(t0 - Duration::from_secs(3)),
            Duration::from_secs(497)
        );
    }

    #[test]
    fn an_address_token_is_accepted_once() {
        let (ledger, t0) = ledger(8);
        let issued = ledger.clock().unix_time(t0);
        assert_eq!(ledger.spend([1; 16], issued, t0), Spend::Accepted);
        assert_eq!(
            ledger.spend([1; 16], issued, t0 + Duration::from_secs(1)),
            Spend::Replayed
        );
        // A clone is the same ledger (another worker).
        let worker = ledger.clone();
        assert_eq!(
            worker.spend([1; 16], issued, t0 + Duration::from_secs(2)),
            Spend::Replayed
        );
        assert_eq!(worker.spend([2; 16], issued, t0), Spend::Accepted);
    }

    #[test]
    fn a_peek_spends_nothing() {
        let (ledger, t0) = ledger(8);
        let issued = ledger.clock().unix_time(t0);
        assert_eq!(ledger.peek([1; 16], issued, t0), Spend::Accepted);
        assert_eq!(ledger.peek([1; 16], issued, t0), Spend::Accepted);
        assert_eq!(ledger.remembered(), 0);
        assert_eq!(ledger.spend([1; 16], issued, t0), Spend::Accepted);
        assert_eq!(ledger.peek([1; 16], issued, t0), Spend::Replayed);
    }

    #[test]
    fn a_spent_token_is_remembered_until_it_has_expired() {
        let (ledger, t0) = ledger(8);
        let issued = ledger.clock().unix_time(t0);
        // Spent at the very end of the first generation...
        let late = t0 + ADDRESS_TOKEN_LIFETIME - Duration::from_millis(1);
        assert_eq!(ledger.spend([1; 16], issued, late), Spend::Accepted);
        // ...and still known a lifetime after it was issued, past the first rotation.
        let at_expiry = t0 + ADDRESS_TOKEN_LIFETIME;
        assert_eq!(ledger.spend([1; 16], issued, at_expiry), Spend::Replayed);
        // Two lifetimes on, it is forgotten (and `open_token` calls it stale).
        let forgotten = t0 + ADDRESS_TOKEN_LIFETIME * 2;
        assert_eq!(ledger.spend([9; 16], issued, forgotten), Spend::Accepted);
        assert_eq!(ledger.remembered(), 1);
    }

    #[test]
    fn a_long_idle_ledger_forgets_everything_at_once() {
        let (ledger, t0) = ledger(8);
        let issued = ledger.clock().unix_time(t0);
        assert_eq!(ledger.spend([1; 16], issued, t0), Spend::Accepted);
        let later = t0 + ADDRESS_TOKEN_LIFETIME * 7 + Duration::from_secs(5);
        assert_eq!(
            ledger.spend([2; 16], ledger.clock().unix_time(later), later),
            Spend::Accepted
        );
        assert_eq!(ledger.remembered(), 1);
    }

    #[test]
    fn a_full_ledger_refuses_rather_than_forgets() {
        let (ledger, t0) = ledger(2);
        let issued = ledger.clock().unix_time(t0);
        assert_eq!(ledger.spend([1; 16], issued, t0), Spend::Accepted);
        assert_eq!(ledger.spend([2; 16], issued, t0), Spend::Accepted);
        assert_eq!(ledger.spend([3; 16], issued, t0), Spend::Full);
        assert_eq!(ledger.spend([1; 16], issued, t0), Spend::Replayed);
    }

    #[test]
    fn tokens_from_before_the_clock_started_are_refused() {
        let (ledger, t0) = ledger(8);
        let before = ledger.clock().started() - Duration::from_secs(1);
        assert_eq!(ledger.spend([1; 16], before, t0), Spend::BeforeStart);
    }
}
