//! The peers: other QUIC stacks, and sift's own ends for their
//! protocols, sorted by stack, one module per protocol in each.
//!
//! | protocol | [`quiche`] | [`quinn`] | [`sift`] |
//! |---|---|---|---|
//! | [`file`]: bulk download + sender counters (the comparison) | `quiche-server`, `quiche-client` | `quinn-server`, `quinn-client` | `sift-peer` |
//! | [`hq`]: hq-interop (the matrix) | `quiche-hq` | `quinn-hq` | `sift-server`, `sift-client` (`bin/`) |
//! | [`h3`]: HTTP/3 (the matrix's http3 case) | `quiche-h3-client` | `quinn-h3-server`, `quinn-h3-client` | `sift-h3-server`, `sift-h3-client` |
//!
//! quic-go's peer keeps the same contract from outside this crate: a Go
//! program in `interop/quic-go/` (`quic-go-server`, `quic-go-client`,
//! `quic-go-hq`, `quic-go-h3-server`, `quic-go-h3-client`, one binary).
//!
//! The protocol modules hold what every stack's peer of that protocol
//! shares (the wire format, the reports, code generic over a stack). What
//! every peer shares whatever the protocol is written once beside them:
//! [`cli`] (the command lines), [`settings`] (like-for-like transport
//! settings), [`cert`] (certificates), [`env`] (`SSLKEYLOGFILE`,
//! `QLOGDIR`), [`net`] (sockets), [`url`] and [`files`] (what is served,
//! fetched and reported).
//!
//! The contract every peer keeps, so that `sift-compare` and `sift-matrix`
//! start each the same way (a new stack keeps it too, in Rust here or
//! built apart, like `interop/quiche-0.24/`, or a program in another
//! language under `interop/` with its own build, like `interop/quic-go/`):
//!
//! - command lines as [`cli`] gives them; servers say `listening on ADDR`
//!   (stdout or stderr) once bound, so port 0 works;
//! - servers present `--cert`/`--key` PEM files when given (the runner's
//!   `/certs`), else a fresh self-signed ECDSA P-256 certificate for
//!   `localhost` ([`cert`]);
//! - clients verify with `--ca` or, said out loud, not at all
//!   (`--insecure`; `--insecure-no-verify` for the file protocol), exit 0
//!   only when every file came whole, and print one JSON object with
//!   `--json` ([`crate::flow::FlowReport`], [`hq::ClientReport`],
//!   [`h3::Report`]);
//! - the environment as [`env`] says: the key log where `SSLKEYLOGFILE`
//!   names, qlog traces in `QLOGDIR` where the stack writes qlog;
//! - the settings of [`settings`] where the protocol is measured (file).

pub mod cert;
pub mod cli;
pub mod env;
pub mod file;
pub mod files;
pub mod h3;
pub mod hq;
pub mod net;
pub mod quiche;
pub mod quinn;
pub mod settings;
pub mod sift;
pub mod url;
