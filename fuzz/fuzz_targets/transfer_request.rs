//! libFuzzer entry for the `transfer_request` target; the body is
//! `sift_fuzz::bin_targets::transfer_request::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::bin_targets::transfer_request::run(data));
