//! libFuzzer entry for the `recv_datagram_tls_server` target; the body is
//! `sift_fuzz::targets::recv_datagram::run_tls_server`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sift_fuzz::targets::recv_datagram::run_tls_server(data));
