//! libFuzzer entry for the `stream_ops` target; the body is
//! `sift_fuzz::targets::stream_ops::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::stream_ops::run(data));
