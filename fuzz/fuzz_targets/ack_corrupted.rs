//! libFuzzer entry for the `ack_corrupted` target; the body is
//! `sift_fuzz::targets::ack_corrupted::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::ack_corrupted::run(data));
