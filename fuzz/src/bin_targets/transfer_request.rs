//! `transfer_request`: the file-transfer protocol's header parsers —
//! [`parse_request`], and on the same bytes [`parse_response`] and
//! [`parse_trailer`] (the frame's kind byte decides which can succeed).
//!
//! Invariants: no parser panics; a request or a response re-encodes to
//! exactly the bytes it came from (the framing has one encoding per value:
//! fixed-width integers, an exact body length, no trailing bytes), except a
//! response message over the 1 KiB the encoder keeps, which re-encodes cut
//! and parses back to the cut message; a trailer re-encodes to JSON that
//! parses back to an equal report.

use sift_bin::transfer::{
    parse_request, parse_response, parse_trailer, PerfDirection, PerfLimit, Request, Response,
    Sha256Digest, Status,
};

/// Longest response message the encoder keeps (`response.rs`).
const MAX_MESSAGE_LEN: usize = 1024;

/// Parses `data` as a request, a response and a trailer.
pub fn run(data: &[u8]) {
    if let Ok(request) = parse_request(data) {
        let encoded = request.encode().expect("a parsed request encodes");
        assert_eq!(encoded, data, "{request:?} re-encodes differently");
    }
    if let Ok(response) = parse_response(data) {
        let encoded = response.encode().expect("a parsed response encodes");
        if response.message.len() <= MAX_MESSAGE_LEN {
            assert_eq!(encoded, data, "{response:?} re-encodes differently");
        } else {
            let cut = parse_response(&encoded).expect("an encoded response parses");
            assert!(response.message.starts_with(&cut.message));
            assert!(cut.message.len() <= MAX_MESSAGE_LEN);
            assert_eq!(
                (cut.status, cut.size, cut.sha256),
                (response.status, response.size, response.sha256)
            );
        }
    }
    if let Ok(report) = parse_trailer(data) {
        let encoded = report.encode().expect("a parsed trailer encodes");
        let again = parse_trailer(&encoded).expect("an encoded trailer parses");
        assert_eq!(again, report);
    }
}

/// One frame of every kind, as client and server send them.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    let digest = Sha256Digest([0xab; 32]);
    let requests = [
        (
            "get",
            Request::Get {
                path: "dir/file.bin".into(),
                offset: 0,
                cc: None,
            },
        ),
        (
            "get-resume",
            Request::Get {
                path: "ünïcode name".into(),
                offset: 1 << 40,
                cc: None,
            },
        ),
        (
            "put",
            Request::Put {
                path: "up.bin".into(),
                size: 5_000_000,
                sha256: digest,
            },
        ),
        ("list-root", Request::List { path: "".into() }),
        (
            "perf-upload-time",
            Request::Perf {
                direction: PerfDirection::Upload,
                limit: PerfLimit::Duration(std::time::Duration::from_secs(10)),
            },
        ),
        (
            "perf-download-bytes",
            Request::Perf {
                direction: PerfDirection::Download,
                limit: PerfLimit::Bytes(1 << 30),
            },
        ),
    ];
    let responses = [
        ("response-ok", Response::ok(5_000_000, Some(digest))),
        ("response-ok-no-digest", Response::ok(0, None)),
        (
            "response-refused",
            Response::error(
                Status::RefusedPath,
                "path \"../x\" leaves the served directory",
            ),
        ),
    ];
    let mut seeds: Vec<(&'static str, Vec<u8>)> = requests
        .into_iter()
        .map(|(name, request)| (name, request.encode().expect("seed requests encode")))
        .collect();
    seeds.extend(
        responses
            .into_iter()
            .map(|(name, response)| (name, response.encode().expect("seed responses encode"))),
    );
    let trailer = sift_bin::transfer::SenderReport {
        cc: "veno".into(),
        corruption_notices: true,
        version: "sift/1".into(),
        retransmitted_packets: 12,
        ptos: 1,
        corruption_notices_received: 3,
        cwnd: 64_000,
        srtt_us: 120_000,
        max_datagram_size: 1472,
        pmtu_probes_sent: 7,
        pmtu_probes_lost: 3,
        pmtu_black_holes: 0,
        checksum_free_datagrams: 0,
        careful_resume: None,
        send_times: Default::default(),
        ecn: Default::default(),
        repair: Default::default(),
    };
    seeds.push((
        "trailer",
        trailer.encode().expect("the seed trailer encodes"),
    ));
    seeds
}
