//! The sift file-transfer protocol: one request per bidirectional stream;
//! and hq-interop (`hq`), HTTP/0.9 for any QUIC peer.
//!
//! The client opens a stream and sends a request header (GET, PUT, LIST,
//! PERF); the server answers with a response header, then the data (for a
//! download, then the file's digest if the header did not carry it, and the
//! sender's statistics), then a FIN. Every header is a bounded, versioned
//! frame (`frame`), and every file is checked end to end with SHA-256.
//!
//! Owns: the headers and their parsers, path confinement under the served
//! root, who may upload and how much at once (`uploads`), upload and
//! download temporary files, and both sides of each operation over any
//! [`Duplex`] stream.
//! Must not: open sockets or connections (the binaries do, with
//! `sift::blocking` and `sift::tokio`), print to the terminal, or touch a path outside the
//! served root.

pub mod buffers;
pub(crate) mod cached_read;
pub mod client;
pub mod confine;
pub mod digest;
pub mod duplex;
pub mod error;
pub mod frame;
pub mod hq;
pub mod listing;
pub mod part_file;
pub mod perf;
pub mod request;
pub mod response;
pub mod server;
#[cfg(test)]
pub(crate) mod test_dir;
pub mod uploads;

pub use client::{ClientError, GetOutcome, PutOutcome};
pub use confine::{PathError, Root};
pub use digest::{Sha256Digest, Sha256Hasher};
pub use duplex::{AsyncDuplex, Duplex};
pub use error::ProtocolError;
pub use listing::{EntryKind, ListEntry};
pub use perf::{PerfInterval, PerfOptions, PerfSample, PerfSummary};
pub use request::{parse_request, PerfDirection, PerfLimit, Request};
pub use response::{parse_response, parse_trailer, Response, SenderReport, Status};
pub use server::{FileServer, NoConnection, ServedConnection, TransferRecord};
pub use uploads::{ClientGate, UploadBudget, UploadPolicy};
