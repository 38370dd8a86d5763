//! Shared pieces of the sift command-line tools: the file-transfer protocol
//! behind `sift-server` and `sift-client`.

pub mod transfer;
