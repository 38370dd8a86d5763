//! Fuzz targets for parsers of the `sift-bin` crate (the file-transfer
//! protocol). Kept apart from [`crate::targets`] because they depend on
//! `sift-bin`, which the `sift` workspace test cannot: `sift-bin`'s own test
//! (`bin/tests/fuzz_corpus.rs`) includes these files by path.
//!
//! Must not: depend on anything but `sift-bin`, `sift` and `std`.

pub mod transfer_request;
