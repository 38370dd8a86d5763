//! libFuzzer entry for the `repair` target; the body is
//! `sift_fuzz::targets::repair::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::repair::run(data));
