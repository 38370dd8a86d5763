//! libFuzzer entry for the `frames` target; the body is
//! `sift_fuzz::targets::frames::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::frames::run(data));
