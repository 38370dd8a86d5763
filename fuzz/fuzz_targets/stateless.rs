//! libFuzzer entry for the `stateless` target; the body is
//! `sift_fuzz::targets::stateless::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::stateless::run(data));
