//! Address validation with Retry (RFC 9000 §8.1.2): when the endpoint asks
//! for it, what a Retry token says, and checking one that comes back.
//!
//! A token is sealed under the server secret's token key (AES-256-GCM,
//! `crypto::secret`), so it opens only on a server with the same secret.
//! Inside: when it was issued (wall-clock milliseconds since the Unix
//! epoch, read through the server's one [`TokenClock`], so that every
//! worker dates tokens alike), the client's address, the destination connection ID of the
//! client's first Initial and the connection ID the Retry gave it. A token
//! older than [`RETRY_TOKEN_LIFETIME`] or naming another connection ID than
//! the packet carrying it is refused. One that comes back from another
//! address ([`ValidToken::RetryFromNewAddress`]) validates no address, but
//! its connection IDs are still ours to vouch for: a NAT that rebinds the
//! client between our Retry and its next Initial must not leave the server
//! announcing the wrong original ID (RFC 9000 §7.3), which the client
//! would rightly refuse. The client takes no second Retry, so what the
//! endpoint does with such a token is its choice (`Endpoint::accept_initial`).
//!
//! A server also gives every client that completes a handshake a token for
//! its next connection (NEW_TOKEN, RFC 9000 §8.1.3): sealed the same way,
//! bound to the client's IP address only (a NAT may give it another port
//! next time), good for [`ADDRESS_TOKEN_LIFETIME`]. A client that brings
//! one is validated without a Retry; one that is stale or not ours is
//! treated as no token at all.
//!
//! A NEW_TOKEN token is accepted once ([`TokenLedger`]); a Retry token may
//! come back more than once within its ten seconds (a client retransmits
//! its Initial), always from the address and for the connection ID it
//! names, which proves nothing new and costs an attacker the same as a
//! fresh handshake (RFC 9000 §8.1.4).
//!
//! [`TokenClock`]: super::TokenClock
//! [`TokenLedger`]: super::TokenLedger

use std::net::SocketAddr;
use std::time::Duration;

use crate::crypto::{ServerSecret, TOKEN_NONCE_LEN};
use crate::wire::{ConnectionId, Reader, MAX_CID_LEN};
use sift_cc::SavedPath;

/// How long a Retry token is good for: one round trip is all it needs;
/// this allows for slow paths and retransmitted Initials.
pub const RETRY_TOKEN_LIFETIME: Duration = Duration::from_secs(10);

/// How far in the future a token's issue time may lie: the `now` a worker
/// was handed may be a little older than the moment another worker sealed
/// the token the client is answering with.
pub const CLOCK_TOLERANCE: Duration = Duration::from_secs(1);

/// The first byte of a token's contents: the kind and version (1 was a
/// Retry token bound to its address as associated data).
const RETRY_TOKEN_KIND: u8 = 3;
/// The associated data of every Retry token (its address is inside).
const RETRY_TOKEN_AAD: &[u8] = b"sift retry token";
const ADDRESS_TOKEN_KIND: u8 = 2;

/// How long a NEW_TOKEN token lets a client skip Retry. A restarted server
/// takes none of the tokens its previous run gave out (it cannot know
/// which were spent; their clients get a Retry, no worse).
pub const ADDRESS_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// Bytes of a token that name it: its AEAD tag, unique per token and
/// unforgeable without the server secret.
pub const TOKEN_NAME_LEN: usize = 16;

/// What a valid Retry token vouches for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryTokenContents {
    /// The destination connection ID of the client's first Initial.
    pub original_dcid: ConnectionId,
    /// The connection ID the Retry gave the client.
    pub retry_scid: ConnectionId,
}

/// What a NEW_TOKEN token is bound to: the client's IP address only, so
/// that a client whose NAT gives it another port next time still counts.
fn bound_to_ip(client: SocketAddr) -> Vec<u8> {
    match client.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    }
}

/// Seals a token for the client's next connection (NEW_TOKEN), issued
/// at `issued` (wall clock), carrying the path state this server saw for
/// the client when there is one (RFC 9959 §3.1: the saved window and
/// minimum RTT; the issue time is the state's timestamp, so it expires
/// with the token). The state is inside the AEAD: the client can neither
/// read nor change it.
pub fn seal_address_token(
    secret: &ServerSecret,
    nonce: [u8; TOKEN_NONCE_LEN],
    client: SocketAddr,
    issued: Duration,
    saved: Option<SavedPath>,
) -> Vec<u8> {
    let mut plain = Vec::with_capacity(25);
    plain.push(ADDRESS_TOKEN_KIND);
    plain.extend_from_slice(&(issued.as_millis() as u64).to_be_bytes());
    if let Some(saved) = saved {
        plain.extend_from_slice(&saved.cwnd.to_be_bytes());
        let rtt_us = u64::try_from(saved.min_rtt.as_micros()).unwrap_or(u64::MAX);
        plain.extend_from_slice(&rtt_us.to_be_bytes());
    }
    secret.seal_token(nonce, &plain, &bound_to_ip(client))
}

/// What a good token in a client Initial proves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValidToken {
    /// It answers our Retry, from the address the Retry went to.
    Retry(RetryTokenContents),
    /// It answers our Retry, but from another address than the one the
    /// Retry went to (a NAT rebinding, or a replay): the connection IDs are
    /// ours, the address is not validated.
    RetryFromNewAddress(RetryTokenContents),
    /// It came from our NEW_TOKEN on an earlier connection from this IP,
    /// issued at `issued` (wall clock); `name` tells it apart from every
    /// other token, so that it is accepted once ([`TokenLedger`]).
    ///
    /// [`TokenLedger`]: super::TokenLedger
    Address {
        /// When it was issued.
        issued: Duration,
        /// Its AEAD tag.
        name: [u8; TOKEN_NAME_LEN],
        /// The path state the server saved for this client, if it did
        /// (RFC 9959): bound, like the token, to the client's IP address.
        saved: Option<SavedPath>,
    },
}

/// Checks the token of a client Initial: a Retry token (see
/// [`open_retry_token`]) or a NEW_TOKEN one from this IP address that is
/// not older than [`ADDRESS_TOKEN_LIFETIME`] at `now` (wall clock). Whether
/// an address token was used before is the ledger's to say.
pub fn open_token(
    secret: &ServerSecret,
    token: &[u8],
    client: SocketAddr,
    dcid: &ConnectionId,
    now: Duration,
) -> Result<ValidToken, TokenError> {
    match open_retry_token(secret, token, client, dcid, now) {
        Err(TokenError::NotOurs) => {}
        other => return other,
    }
    let plain = secret
        .open_token(token, &bound_to_ip(client))
        .ok_or(TokenError::NotOurs)?;
    let word = |bytes: &[u8]| -> Result<u64, TokenError> {
        Ok(u64::from_be_bytes(
            bytes.try_into().map_err(|_| TokenError::NotOurs)?,
        ))
    };
    let (issued_ms, saved) = match plain.as_slice() {
        [ADDRESS_TOKEN_KIND, time @ ..] if time.len() == 8 => (word(time)?, None),
        [ADDRESS_TOKEN_KIND, rest @ ..] if rest.len() == 24 => {
            let saved = SavedPath {
                cwnd: word(&rest[8..16])?,
                min_rtt: Duration::from_micros(word(&rest[16..24])?),
            };
            (word(&rest[..8])?, Some(saved))
        }
        _ => return Err(TokenError::NotOurs),
    };
    let issued = Duration::from_millis(issued_ms);
    if issued > now + CLOCK_TOLERANCE || now.saturating_sub(issued) > ADDRESS_TOKEN_LIFETIME {
        return Err(TokenError::Stale);
    }
    let mut name = [0u8; TOKEN_NAME_LEN];
    name.copy_from_slice(&token[token.len() - TOKEN_NAME_LEN..]);
    Ok(ValidToken::Address {
        issued,
        name,
        saved,
    })
}

/// The bytes a Retry token is bound to: the client's address, in one spelling.
fn bound_to(client: SocketAddr) -> Vec<u8> {
    let mut bytes = match client.ip() {
        std::net::IpAddr::V4(ip) => ip.octets().to_vec(),
        std::net::IpAddr::V6(ip) => ip.octets().to_vec(),
    };
    bytes.extend_from_slice(&client.port().to_be_bytes());
    bytes
}

/// Seals a Retry token for `client`, issued at `issued` (wall clock).
pub fn seal_retry_token(
    secret: &ServerSecret,
    nonce: [u8; TOKEN_NONCE_LEN],
    client: SocketAddr,
    issued: Duration,
    contents: &RetryTokenContents,
) -> Vec<u8> {
    let address = bound_to(client);
    let mut plain = Vec::with_capacity(1 + 8 + 1 + address.len() + 2 + 2 * MAX_CID_LEN);
    plain.push(RETRY_TOKEN_KIND);
    plain.extend_from_slice(&(issued.as_millis() as u64).to_be_bytes());
    plain.push(address.len() as u8);
    plain.extend_from_slice(&address);
    for cid in [contents.original_dcid, contents.retry_scid] {
        plain.push(cid.len() as u8);
        plain.extend_from_slice(cid.as_slice());
    }
    secret.seal_token(nonce, &plain, RETRY_TOKEN_AAD)
}

/// Why a token carried by a client Initial was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// It does not open: another server's, another address's, or damaged.
    #[error("the token is not one of ours for this address")]
    NotOurs,
    /// It is older than [`RETRY_TOKEN_LIFETIME`].
    #[error("the token expired")]
    Expired,
    /// It was issued for another connection ID than the packet carries.
    #[error("the token names another connection ID")]
    WrongConnectionId,
    /// A NEW_TOKEN token past its lifetime: the client is simply treated
    /// as one without a token (RFC 9000 §8.1.3).
    #[error("the address token expired")]
    Stale,
    /// A NEW_TOKEN token accepted before (a replay), or one this server
    /// cannot vouch for (issued before it started, or its ledger is full):
    /// treated as no token, like a stale one.
    #[error("the address token was used before")]
    Spent,
}

/// Opens the Retry token of a client Initial from `client` addressed to
/// `dcid`, at `now` (wall clock): [`ValidToken::Retry`]
/// from the address the Retry went to, [`ValidToken::RetryFromNewAddress`]
/// from any other.
pub fn open_retry_token(
    secret: &ServerSecret,
    token: &[u8],
    client: SocketAddr,
    dcid: &ConnectionId,
    now: Duration,
) -> Result<ValidToken, TokenError> {
    let plain = secret
        .open_token(token, RETRY_TOKEN_AAD)
        .ok_or(TokenError::NotOurs)?;
    let mut reader = Reader::new(&plain);
    let parse = |reader: &mut Reader<'_>| -> Option<(u64, Vec<u8>, ConnectionId, ConnectionId)> {
        (reader.u8().ok()? == RETRY_TOKEN_KIND).then_some(())?;
        let issued_ms = u64::from_be_bytes(reader.bytes(8).ok()?.try_into().ok()?);
        let address_len = usize::from(reader.u8().ok()?);
        let address = reader.bytes(address_len).ok()?.to_vec();
        let mut cid = || {
            let len = usize::from(reader.u8().ok()?);
            ConnectionId::new(reader.bytes(len).ok()?).ok()
        };
        Some((issued_ms, address, cid()?, cid()?))
    };
    // A token that opens was sealed by us: a bad layout is a bug of an
    // older sift, and refused all the same.
    let (issued_ms, address, original_dcid, retry_scid) =
        parse(&mut reader).ok_or(TokenError::NotOurs)?;
    let issued = Duration::from_millis(issued_ms);
    if issued > now + CLOCK_TOLERANCE || now.saturating_sub(issued) > RETRY_TOKEN_LIFETIME {
        return Err(TokenError::Expired);
    }
    if retry_scid != *dcid {
        return Err(TokenError::WrongConnectionId);
    }
    let contents = RetryTokenContents {
        original_dcid,
        retry_scid,
    };
    Ok(if address == bound_to(client) {
        ValidToken::Retry(contents)
    } else {
        ValidToken::RetryFromNewAddress(contents)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::SERVER_SECRET_LEN;

    fn cid(byte: u8) -> ConnectionId {
        ConnectionId::new(&[byte; 8]).unwrap()
    }

    fn contents() -> RetryTokenContents {
        RetryTokenContents {
            original_dcid: cid(1),
            retry_scid: cid(2),
        }
    }

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn a_retry_token_is_good_for_its_connection_id_and_ten_seconds_and_knows_its_address() {
        let secret = ServerSecret::new(&[3; SERVER_SECRET_LEN]);
        let at = Duration::from_secs(100);
        let token = seal_retry_token(&secret, [0; 12], addr(1), at, &contents());
        let open =
            |token: &[u8], client, dcid, now| open_retry_token(&secret, token, client, &dcid, now);
        let good = Ok(ValidToken::Retry(contents()));
        assert_eq!(open(&token, addr(1), cid(2), at), good);
        assert_eq!(
            open(&token, addr(1), cid(2), at + RETRY_TOKEN_LIFETIME),
            good
        );
        assert_eq!(
            open(
                &token,
                addr(1),
                cid(2),
                at + RETRY_TOKEN_LIFETIME + Duration::from_millis(1)
            ),
            Err(TokenError::Expired)
        );
        assert_eq!(
            open(&token, addr(1), cid(2), at - CLOCK_TOLERANCE),
            good,
            "a worker's `now` may lag the moment another sealed the token"
        );
        assert_eq!(
            open(
                &token,
                addr(1),
                cid(2),
                at - CLOCK_TOLERANCE - Duration::from_millis(1)
            ),
            Err(TokenError::Expired),
            "issued in the future"
        );
        // From another port (a NAT rebinding): ours, but no address proof.
        assert_eq!(
            open(&token, addr(2), cid(2), at),
            Ok(ValidToken::RetryFromNewAddress(contents()))
        );
        assert_eq!(
            open(&token, addr(1), cid(9), at),
            Err(TokenError::WrongConnectionId)
        );
        let other = ServerSecret::new(&[4; SERVER_SECRET_LEN]);
        assert_eq!(
            open_retry_token(&other, &token, addr(1), &cid(2), at),
            Err(TokenError::NotOurs)
        );
        assert_eq!(
            open(b"garbage", addr(1), cid(2), at),
            Err(TokenError::NotOurs)
        );
    }

    #[test]
    fn an_address_token_is_good_from_the_same_ip_on_any_port_for_an_hour() {
        let secret = ServerSecret::new(&[3; SERVER_SECRET_LEN]);
        let at = Duration::from_secs(100);
        let token = seal_address_token(&secret, [7; 12], addr(1), at, None);
        let open = |client, now| open_token(&secret, &token, client, &cid(9), now);
        let mut name = [0; TOKEN_NAME_LEN];
        name.copy_from_slice(&token[token.len() - TOKEN_NAME_LEN..]);
        let good = Ok(ValidToken::Address {
            issued: at,
            name,
            saved: None,
        });
        assert_eq!(open(addr(1), at), good);
        assert_eq!(open(addr(2), at + ADDRESS_TOKEN_LIFETIME), good);
        assert_eq!(
            open(
                addr(1),
                at + ADDRESS_TOKEN_LIFETIME + Duration::from_secs(1)
            ),
            Err(TokenError::Stale)
        );
        let elsewhere = SocketAddr::from(([192, 0, 2, 2], 1));
        assert_eq!(open(elsewhere, at), Err(TokenError::NotOurs));
        // A Retry token still opens as one.
        let retry = seal_retry_token(&secret, [0; 12], addr(1), at, &contents());
        assert_eq!(
            open_token(&secret, &retry, addr(1), &cid(2), at),
            Ok(ValidToken::Retry(contents()))
        );
    }

    #[test]
    fn ipv6_addresses_bind_tokens_too() {
        let secret = ServerSecret::new(&[3; SERVER_SECRET_LEN]);
        let v6: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let other: SocketAddr = "[2001:db8::2]:443".parse().unwrap();
        let token = seal_retry_token(&secret, [5; 12], v6, Duration::ZERO, &contents());
        assert_eq!(
            open_retry_token(&secret, &token, v6, &cid(2), Duration::ZERO),
            Ok(ValidToken::Retry(contents()))
        );
        assert_eq!(
            open_retry_token(&secret, &token, other, &cid(2), Duration::ZERO),
            Ok(ValidToken::RetryFromNewAddress(contents()))
        );
    }

    #[test]
    fn an_address_token_carries_the_saved_path_state_only_intact_and_from_its_ip() {
        let secret = ServerSecret::new(&[3; SERVER_SECRET_LEN]);
        let at = Duration::from_secs(100);
        let saved = SavedPath {
            cwnd: 3_750_000,
            min_rtt: Duration::from_millis(600),
        };
        let token = seal_address_token(&secret, [7; 12], addr(1), at, Some(saved));
        let saved_in = |token: &[u8], client| match open_token(&secret, token, client, &cid(9), at)
        {
            Ok(ValidToken::Address { saved, .. }) => Ok(saved),
            Ok(other) => panic!("not an address token: {other:?}"),
            Err(error) => Err(error),
        };
        assert_eq!(saved_in(&token, addr(1)), Ok(Some(saved)));
        // Another port of the same IP is the same client behind a NAT.
        assert_eq!(saved_in(&token, addr(2)), Ok(Some(saved)));
        // Another IP: the token, and so the state, is not honoured.
        let elsewhere = SocketAddr::from(([192, 0, 2, 2], 1));
        assert_eq!(saved_in(&token, elsewhere), Err(TokenError::NotOurs));
        // Any flipped byte (the state included) and the token is ignored.
        for i in 0..token.len() {
            let mut tampered = token.clone();
            tampered[i] ^= 0x40;
            assert_eq!(
                saved_in(&tampered, addr(1)),
                Err(TokenError::NotOurs),
                "{i}"
            );
        }
        // Past the token's lifetime the state goes with it.
        assert_eq!(
            open_token(
                &secret,
                &token,
                addr(1),
                &cid(9),
                at + ADDRESS_TOKEN_LIFETIME + Duration::from_secs(1)
            ),
            Err(TokenError::Stale)
        );
    }
}
