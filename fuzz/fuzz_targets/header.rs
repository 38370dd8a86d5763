//! libFuzzer entry for the `header` target; the body is
//! `sift_fuzz::targets::header::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::header::run(data));
