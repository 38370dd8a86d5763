//! sift next to other QUIC stacks (quiche, quinn) over the same emulated
//! links, and talking to them on the wire.
//!
//! - [`peers`]: the other stacks' peers, and sift's own ends for their
//!   protocols, sorted by stack (`peers::{quiche, quinn, sift}`), one
//!   module per protocol in each (`file`: the comparison's bulk download;
//!   `hq`: the interop runner's hq-interop; `h3`: HTTP/3), with what they
//!   share written once (command lines, settings, certificates, key logs,
//!   sockets, URLs, files). Every binary in `src/bin/` is a thin shell
//!   over one of them.
//! - [`compare`]: the runner behind `sift-compare`: every controller of
//!   every stack over a checked-in list of link specs, same spec and seed
//!   for each, repeated; results as JSON, a markdown table and an SVG
//!   chart; loopback efficiency (throughput and CPU per GiB); shards and
//!   merge. Side by side, not wire interop: sift's own packets (sift/1,
//!   split tags) are not QUIC v1's.
//! - [`matrix`]: the runner behind `sift-matrix`: sift, quiche and quinn
//!   as client and server, every pair, case by case as the
//!   quic-interop-runner tests QUIC stacks. This is wire interop (QUIC v1).
//! - [`flow`]: the one record every bulk client prints with `--json`
//!   (DESIGN §11's flow fields), `sift-client`'s included, so the runner
//!   reads them all the same way.

pub mod compare;
pub mod flow;
pub mod matrix;
pub mod peers;
