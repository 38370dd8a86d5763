//! libFuzzer entry for the `packet_open` target; the body is
//! `sift_fuzz::targets::packet_open::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::packet_open::run(data));
