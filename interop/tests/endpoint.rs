//! `endpoint/run_endpoint.sh`, the interop runner's conventions for sift:
//! a server role serving a folder with the given certificate, a client role
//! fetching `REQUESTS` into a folder, the per-case options (a Retry, seen
//! by `sift-link --stats`), key logs and traces where asked, and exit
//! code 127 for the cases sift does not support.
//!
//! Needs sift's release binaries (`cargo build --release -p sift-bin`, as
//! `.ci/run` does before these tests).

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sift_interop::compare::execute::{sha256_file, write_incompressible};
use sift_interop::compare::process::Running;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("endpoint/run_endpoint.sh")
}

fn sift_bin() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    for tool in ["sift-server", "sift-client", "sift-link"] {
        assert!(
            dir.join(tool).is_file(),
            "{tool} is missing: build it with `cargo build --release -p sift-bin`"
        );
    }
    dir
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-endpoint-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for sub in ["www", "downloads", "certs", "qlog"] {
            std::fs::create_dir_all(dir.join(sub)).unwrap();
        }
        Self(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A UDP port free a moment ago (the runner's servers take a fixed port).
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map(|a| a.port())
        .unwrap()
}

fn endpoint(scratch: &Scratch, role: &str, testcase: &str, port: u16) -> Command {
    let mut command = Command::new("bash");
    command
        .arg(script())
        .env("ROLE", role)
        .env("TESTCASE", testcase)
        .env("PORT", port.to_string())
        .env("WWW", scratch.path("www"))
        .env("DOWNLOADS", scratch.path("downloads"))
        .env("CERTS", scratch.path("certs"))
        .env("SIFT_BIN", sift_bin())
        .env("SIFT_STATE", scratch.path(&format!("state-{role}")))
        .env_remove("QLOGDIR")
        .env_remove("SSLKEYLOGFILE");
    command
}

/// The runner's certificate files: a chain in cert.pem, its key in priv.key.
fn write_certs(scratch: &Scratch) {
    let certified = rcgen::generate_simple_self_signed(vec!["server".to_string()]).unwrap();
    std::fs::write(scratch.path("certs/cert.pem"), certified.cert.pem()).unwrap();
    std::fs::write(
        scratch.path("certs/priv.key"),
        certified.key_pair.serialize_pem(),
    )
    .unwrap();
}

fn files(scratch: &Scratch, sizes: &[u64]) -> Vec<String> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            let name = format!("file{i}.bin");
            write_incompressible(&scratch.path("www").join(&name), size).unwrap();
            name
        })
        .collect()
}

fn assert_downloaded(scratch: &Scratch, names: &[String]) {
    for name in names {
        let served = sha256_file(&scratch.path("www").join(name)).unwrap();
        let fetched = sha256_file(&scratch.path("downloads").join(name))
            .unwrap_or_else(|e| panic!("{name} not downloaded: {e}"));
        assert_eq!(served, fetched, "{name}");
    }
}

fn requests(port: u16, names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("https://127.0.0.1:{port}/{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn success(output: &Output) {
    assert!(
        output.status.success(),
        "{:?}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_transfer_case_serves_www_with_the_given_certificate_and_fills_downloads() {
    let scratch = Scratch::new("transfer");
    write_certs(&scratch);
    let names = files(&scratch, &[2_000_000, 10_000, 1]);
    let port = free_port();
    let mut server = Running::spawn(
        "endpoint server",
        endpoint(&scratch, "server", "transfer", port),
    )
    .unwrap();
    server.listening_address().unwrap();
    let keys = scratch.path("keys.log");
    let output = endpoint(&scratch, "client", "transfer", port)
        .env("REQUESTS", requests(port, &names))
        .env("SSLKEYLOGFILE", &keys)
        .env("QLOGDIR", scratch.path("qlog"))
        .output()
        .unwrap();
    success(&output);
    assert_downloaded(&scratch, &names);
    let key_log = std::fs::read_to_string(&keys).expect("SSLKEYLOGFILE written");
    assert!(key_log.contains("CLIENT_TRAFFIC_SECRET_0"), "{key_log}");
    let traces = std::fs::read_dir(scratch.path("qlog")).unwrap().count();
    assert_eq!(traces, 1, "one qlog trace for the one connection");
    server.stop().unwrap();
}

#[test]
fn the_retry_case_makes_the_server_send_a_retry_the_link_sees() {
    let scratch = Scratch::new("retry");
    let names = files(&scratch, &[100_000]);
    let port = free_port();
    let mut server = Running::spawn(
        "endpoint server",
        endpoint(&scratch, "server", "retry", port),
    )
    .unwrap();
    server.listening_address().unwrap();
    let stats = scratch.path("link.json");
    let mut link = Command::new(sift_bin().join("sift-link"));
    link.args(["--listen", "127.0.0.1:0", "--to"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--stats")
        .arg(&stats);
    let mut link = Running::spawn("sift-link", link).unwrap();
    let relay = link.listening_address().unwrap();
    let output = endpoint(&scratch, "client", "retry", port)
        .env(
            "REQUESTS",
            names
                .iter()
                .map(|n| format!("https://{relay}/{n}"))
                .collect::<Vec<_>>()
                .join(" "),
        )
        .output()
        .unwrap();
    success(&output);
    assert_downloaded(&scratch, &names);
    link.stop().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    assert_eq!(
        json["server_to_client"]["long_headers"]["0x00000001"]["retry"], 1,
        "{json}"
    );
    server.stop().unwrap();
}

#[test]
fn the_http3_case_runs_the_h3_examples_over_sift() {
    let scratch = Scratch::new("http3");
    write_certs(&scratch);
    let names = files(&scratch, &[300_000, 5]);
    let port = free_port();
    let h3_bin = Path::new(env!("CARGO_BIN_EXE_sift-h3-server"))
        .parent()
        .unwrap();
    let mut command = endpoint(&scratch, "server", "http3", port);
    command.env("SIFT_H3_BIN", h3_bin);
    let mut server = Running::spawn("endpoint server", command).unwrap();
    server.listening_address().unwrap();
    let output = endpoint(&scratch, "client", "http3", port)
        .env("SIFT_H3_BIN", h3_bin)
        .env("REQUESTS", requests(port, &names))
        .output()
        .unwrap();
    success(&output);
    assert_downloaded(&scratch, &names);
    server.stop().unwrap();
}

#[test]
fn the_ecn_case_runs_a_transfer_whose_datagrams_are_ect_marked_both_ways() {
    let scratch = Scratch::new("ecn");
    let names = files(&scratch, &[1_000_000]);
    let port = free_port();
    let mut server =
        Running::spawn("endpoint server", endpoint(&scratch, "server", "ecn", port)).unwrap();
    server.listening_address().unwrap();
    // The matrix's tap, which passes the ECN field on and counts it.
    let tap = sift_interop::matrix::tap::Tap::start(
        "127.0.0.1:0".parse().unwrap(),
        format!("127.0.0.1:{port}").parse().unwrap(),
        Vec::new(),
    )
    .unwrap();
    let output = endpoint(&scratch, "client", "ecn", port)
        .env("REQUESTS", requests(tap.address().port(), &names))
        .output()
        .unwrap();
    success(&output);
    assert_downloaded(&scratch, &names);
    let wire = tap.finish();
    for (side, from_client) in [("client", true), ("server", false)] {
        let counts = wire.ecn_counts(from_client);
        assert!(counts.ect0 > 0, "the {side} sent no ECT(0): {counts:?}");
    }
    server.stop().unwrap();
}

#[test]
fn the_measurements_run_as_transfers_the_runner_times() {
    // goodput and crosstraffic: the runner makes the link and the cross
    // traffic; the endpoints serve and fetch as in transfer.
    for case in ["goodput", "crosstraffic"] {
        let scratch = Scratch::new(case);
        write_certs(&scratch);
        let names = files(&scratch, &[300_000]);
        let port = free_port();
        let mut server =
            Running::spawn("endpoint server", endpoint(&scratch, "server", case, port)).unwrap();
        server.listening_address().unwrap();
        let output = endpoint(&scratch, "client", case, port)
            .env("REQUESTS", requests(port, &names))
            .output()
            .unwrap();
        success(&output);
        assert_downloaded(&scratch, &names);
        server.stop().unwrap();
    }
}

#[test]
fn cases_sift_does_not_support_exit_127_and_say_why() {
    let scratch = Scratch::new("unsupported");
    for (case, why, roles) in [
        ("zerortt", "resumption", &["client", "server"][..]),
        ("resumption", "resumption", &["client", "server"]),
        // sift-server serves v2 (it upgrades a v1 client that offers it).
        ("v2", "QUIC v2", &["client"]),
        ("no-such-case", "unknown", &["client", "server"]),
    ] {
        for &role in roles {
            let output = endpoint(&scratch, role, case, 1).output().unwrap();
            assert_eq!(output.status.code(), Some(127), "{role} {case}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains(why), "{role} {case}: {stderr}");
        }
    }
}
