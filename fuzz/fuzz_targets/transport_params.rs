//! libFuzzer entry for the `transport_params` target; the body is
//! `sift_fuzz::targets::transport_params::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::transport_params::run(data));
