//! libFuzzer entry for the `recv_datagram_quic_client` target; the body is
//! `sift_fuzz::targets::recv_datagram::run_quic_client`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::recv_datagram::run_quic_client(data));
