//! The address tokens a connection carries (RFC 9000 §8.1.3): a Retry's,
//! the one our first Initial brings from an earlier connection, and
//! NEW_TOKEN in both directions.
//!
//! Owns: where each token waits between the endpoint, the frames and the
//! packet headers. Must not: seal, open or judge a token (the endpoint
//! does, `endpoint/token.rs`); decide when one is sent (`send.rs`).

use crate::wire::ConnectionId;

/// Every token a connection holds, with what a Retry named.
#[derive(Debug, Default)]
pub(super) struct Tokens {
    /// Client: the token and connection ID of the server's Retry, once one
    /// was accepted (at most one per connection).
    pub(super) retry: Option<(Vec<u8>, ConnectionId)>,
    /// Server: the client proved its address with a Retry token naming
    /// these (its original destination ID, our Retry's source ID).
    pub(super) retried_from: Option<(ConnectionId, ConnectionId)>,
    /// Server: a token for the client's next connection, sent in a
    /// NEW_TOKEN frame once the handshake is done (and again if lost),
    /// only while the address it is bound to is the peer's, validated:
    /// dropped when the peer moves.
    pub(super) new_token_out: Option<Vec<u8>>,
    /// Server: `new_token_out` is owed in a NEW_TOKEN frame (not sent yet,
    /// or declared lost).
    pub(super) new_token_pending: bool,
    /// Client: the token our first Initial carries (from an earlier
    /// connection's NEW_TOKEN); a Retry's token replaces it.
    pub(super) initial_token: Vec<u8>,
    /// Client: the latest NEW_TOKEN from the server, until taken.
    pub(super) new_token_in: Option<Vec<u8>>,
}
