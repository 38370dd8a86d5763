//! Shared pieces of the sift command-line tools: the file-transfer protocol
//! behind `sift-server` and `sift-client` (`transfer`), and the pieces the
//! binaries share (`cli`).

pub mod census;
pub mod cli;
pub mod hex;
pub mod transfer;
