//! libFuzzer entry for the `packet_open_quic` target; the body is
//! `sift_fuzz::targets::packet_open_quic::run`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::packet_open_quic::run(data));
