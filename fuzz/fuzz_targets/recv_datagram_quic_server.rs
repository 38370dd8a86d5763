//! libFuzzer entry for the `recv_datagram_quic_server` target; the body is
//! `sift_fuzz::targets::recv_datagram::run_quic_server`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::recv_datagram::run_quic_server(data));
