//! libFuzzer entry for the `netem_spec` target; the body is
//! `sift_fuzz::targets::netem_spec::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::netem_spec::run(data));
