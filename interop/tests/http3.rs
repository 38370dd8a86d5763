//! HTTP/3 on sift (issue 32's `http3` case): hyperium's `h3`, unchanged,
//! runs on sift through `sift-h3`, and its server and client exchange
//! files byte-exact with HTTP/3 stacks nobody here wrote: quiche's own
//! `quiche::h3` client and h3 over quinn (`h3-quinn`), both over QUIC v1,
//! and sift's own client over sift/1. All on loopback, two of them
//! through `sift-link` with 1% loss (which needs sift's release binaries:
//! `cargo build --release -p sift-bin`, as `.ci/run` does first).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sift_interop::compare::execute::{sha256_file, write_incompressible};
use sift_interop::compare::process::Running;
use sift_interop::peers::cert::Certificate;
use sift_interop::peers::h3::Report;

/// The large file: many round trips of flow and congestion control, and
/// many DATA frames (the server sends 64 KiB a frame).
const BIG_BYTES: u64 = 2_000_003;

struct Scratch {
    dir: PathBuf,
    cert: Certificate,
}

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-http3-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/sub")).unwrap();
        let cert = Certificate::generate(&dir.join("cert")).unwrap();
        Self { dir, cert }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// A big file at the root and a small one in a subdirectory; their
    /// paths and hashes.
    fn files(&self) -> Vec<(String, String)> {
        let big = write_incompressible(&self.path("root/big.bin"), BIG_BYTES).unwrap();
        let small = write_incompressible(&self.path("root/sub/small.bin"), 1_001).unwrap();
        vec![("big.bin".into(), big), ("sub/small.bin".into(), small)]
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server process and the port clients reach it on: its own, or that
/// of a sift-link in front of it.
struct Served {
    server: Running,
    _link: Option<Running>,
    port: u16,
}

fn sift_link() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/sift-link");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build --release -p sift-bin`",
        path.display()
    );
    path
}

/// `served` behind a sift-link whose server → client direction is
/// `data_spec` (the client → server direction only delays).
fn behind_link(served: Served, data_spec: &str) -> Served {
    let mut link = Command::new(sift_link());
    link.args(["--listen", "127.0.0.1:0", "--to"])
        .arg(format!("127.0.0.1:{}", served.port))
        .args([
            "--forward",
            "delay 10ms",
            "--reverse",
            data_spec,
            "--seed",
            "1",
        ]);
    let link = Running::spawn("sift-link", link).unwrap();
    let port = link.listening_address().unwrap().port();
    Served {
        server: served.server,
        _link: Some(link),
        port,
    }
}

fn serve(scratch: &Scratch, binary: &str) -> Served {
    let mut command = Command::new(binary);
    command
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(scratch.path("root"))
        .arg("--cert")
        .arg(&scratch.cert.cert_pem)
        .arg("--key")
        .arg(&scratch.cert.key_pem);
    let server = Running::spawn(binary, command).unwrap();
    let port = server.listening_address().unwrap().port();
    Served {
        server,
        _link: None,
        port,
    }
}

fn sift_server(scratch: &Scratch) -> Served {
    serve(scratch, env!("CARGO_BIN_EXE_sift-h3-server"))
}

fn quinn_server(scratch: &Scratch) -> Served {
    serve(scratch, env!("CARGO_BIN_EXE_quinn-h3-server"))
}

/// Runs `client` for `paths` of `served` into the scratch's `out`,
/// trusting the scratch's certificate.
fn fetch(client: &str, scratch: &Scratch, served: &Served, paths: &[String]) -> Output {
    let mut command = Command::new(client);
    for path in paths {
        command.arg(format!("https://127.0.0.1:{}/{path}", served.port));
    }
    command
        .args(["--server-name", "localhost"])
        .arg("--output-dir")
        .arg(scratch.path("out"))
        .arg("--ca")
        .arg(&scratch.cert.cert_pem)
        .arg("--json");
    command.output().unwrap()
}

fn report(client: &str, output: &Output) -> Report {
    assert!(
        output.status.success(),
        "{client} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// `client` fetches the scratch's files from `served`: every one
/// byte-exact on disk and in the report, over `version`.
fn fetches_byte_exact(client: &str, scratch: &Scratch, served: &Served, version: &str) {
    let files = scratch.files();
    let paths: Vec<String> = files.iter().map(|(path, _)| path.clone()).collect();
    let report = report(client, &fetch(client, scratch, served, &paths));
    assert_eq!(report.version, version);
    assert_eq!(report.alpn, "h3");
    assert_eq!(report.files.len(), files.len());
    for ((path, sha), fetched) in files.iter().zip(&report.files) {
        assert_eq!(fetched.path, format!("/{path}"));
        assert_eq!(&fetched.sha256, sha, "{path} in the report");
        assert_eq!(
            &sha256_file(&scratch.path("out").join(path)).unwrap(),
            sha,
            "{path} on disk"
        );
    }
    assert_eq!(report.files.first().map(|f| f.bytes), Some(BIG_BYTES));
}

/// The sift server's log names the version of each connection. Read
/// once the server is stopped, so that all it printed has been collected.
fn assert_server_spoke(served: Served, version: &str) {
    let Served {
        mut server, _link, ..
    } = served;
    server.stop().unwrap();
    let log = server.stderr();
    assert!(
        log.contains(&format!("connected ({version})")),
        "the server did not speak {version}: {log}"
    );
}

#[test]
fn quiche_http3_client_fetches_from_the_sift_server_over_quic_v1() {
    let scratch = Scratch::new("quiche-to-sift");
    let served = sift_server(&scratch);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_quiche-h3-client"),
        &scratch,
        &served,
        "QUIC v1",
    );
    assert_server_spoke(served, "QUIC v1");
}

#[test]
fn quinn_http3_client_fetches_from_the_sift_server_over_quic_v1() {
    let scratch = Scratch::new("quinn-to-sift");
    let served = sift_server(&scratch);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_quinn-h3-client"),
        &scratch,
        &served,
        "QUIC v1",
    );
    assert_server_spoke(served, "QUIC v1");
}

#[test]
fn sift_http3_client_fetches_from_the_sift_server_over_sift_1() {
    let scratch = Scratch::new("sift-to-sift");
    let served = sift_server(&scratch);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_sift-h3-client"),
        &scratch,
        &served,
        "sift/1",
    );
    assert_server_spoke(served, "sift/1");
}

#[test]
fn sift_http3_client_fetches_from_a_quinn_server_over_quic_v1() {
    let scratch = Scratch::new("sift-to-quinn");
    let served = quinn_server(&scratch);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_sift-h3-client"),
        &scratch,
        &served,
        "QUIC v1",
    );
}

/// 50 Mb/s, 20 ms RTT and 1% loss on the data direction.
const LOSSY: &str = "delay 10ms rate 50mbit limit 200 loss 1%";

#[test]
fn quiche_http3_client_fetches_from_the_sift_server_through_a_lossy_link() {
    let scratch = Scratch::new("quiche-to-sift-lossy");
    let served = behind_link(sift_server(&scratch), LOSSY);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_quiche-h3-client"),
        &scratch,
        &served,
        "QUIC v1",
    );
    assert_server_spoke(served, "QUIC v1");
}

#[test]
fn sift_http3_client_fetches_from_the_sift_server_through_a_lossy_link() {
    let scratch = Scratch::new("sift-to-sift-lossy");
    let served = behind_link(sift_server(&scratch), LOSSY);
    fetches_byte_exact(
        env!("CARGO_BIN_EXE_sift-h3-client"),
        &scratch,
        &served,
        "sift/1",
    );
}

/// More requests than the server grants streams at first (sift grants
/// 100 bidirectional streams and one more per stream retired): the
/// clients wait for credit instead of failing.
fn many_small_files(client: &str, name: &str) {
    let scratch = Scratch::new(name);
    let hashes: Vec<(String, String)> = (0..150)
        .map(|index| {
            let path = format!("f{index}.bin");
            let sha =
                write_incompressible(&scratch.path("root").join(&path), 5_000 + index).unwrap();
            (path, sha)
        })
        .collect();
    let served = sift_server(&scratch);
    let paths: Vec<String> = hashes.iter().map(|(path, _)| path.clone()).collect();
    let report = report(client, &fetch(client, &scratch, &served, &paths));
    assert_eq!(report.files.len(), hashes.len());
    for ((path, sha), fetched) in hashes.iter().zip(&report.files) {
        assert_eq!(&fetched.sha256, sha, "{path}");
        assert_eq!(&sha256_file(&scratch.path("out").join(path)).unwrap(), sha);
    }
}

#[test]
fn sift_http3_client_fetches_more_files_at_once_than_streams_are_granted() {
    many_small_files(env!("CARGO_BIN_EXE_sift-h3-client"), "sift-many");
}

#[test]
fn quiche_http3_client_fetches_more_files_at_once_than_streams_are_granted() {
    many_small_files(env!("CARGO_BIN_EXE_quiche-h3-client"), "quiche-many");
}

#[test]
fn a_missing_file_or_one_outside_the_root_fails_the_call_and_leaves_no_file() {
    let scratch = Scratch::new("missing");
    scratch.files();
    std::fs::write(scratch.path("secret"), b"outside the root").unwrap();
    let served = sift_server(&scratch);
    for client in [
        env!("CARGO_BIN_EXE_sift-h3-client"),
        env!("CARGO_BIN_EXE_quiche-h3-client"),
    ] {
        for missing in ["nothing.bin", "sub", "%2e%2e/secret"] {
            let paths = [missing.to_string(), "sub/small.bin".to_string()];
            let output = fetch(client, &scratch, &served, &paths);
            assert!(!output.status.success(), "{client} took {missing}");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert!(stderr.contains("404"), "{client}: {stderr}");
            assert!(!scratch.path("out").join(missing).is_file(), "{missing}");
        }
    }
}

/// The server's own certificate (no --cert): ECDSA P-256, which quiche's
/// BoringSSL verifies too, trusted by fingerprint or not checked.
#[test]
fn every_client_fetches_from_a_sift_server_with_its_self_signed_certificate() {
    let scratch = Scratch::new("self-signed");
    let files = scratch.files();
    let mut command = Command::new(env!("CARGO_BIN_EXE_sift-h3-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(scratch.path("root"));
    let server = Running::spawn("sift-h3-server", command).unwrap();
    let port = server.listening_address().unwrap().port();
    let log = server.stderr();
    let pin = log
        .split_whitespace()
        .find(|word| word.starts_with("SHA256:"))
        .unwrap_or_else(|| panic!("no fingerprint printed: {log}"))
        .to_string();
    let url = format!("https://127.0.0.1:{port}/{}", files[0].0);
    for (client, trust) in [
        (env!("CARGO_BIN_EXE_sift-h3-client"), vec!["--pin", &pin]),
        (env!("CARGO_BIN_EXE_sift-h3-client"), vec!["--insecure"]),
        (env!("CARGO_BIN_EXE_quinn-h3-client"), vec!["--insecure"]),
        (env!("CARGO_BIN_EXE_quiche-h3-client"), vec![]),
    ] {
        let out = scratch.path("out");
        let _ = std::fs::remove_dir_all(&out);
        let output = Command::new(client)
            .arg(&url)
            .arg("--output-dir")
            .arg(&out)
            .args(&trust)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{client} {trust:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(sha256_file(&out.join(&files[0].0)).unwrap(), files[0].1);
    }
}

#[test]
fn a_client_refuses_urls_of_two_servers_before_connecting() {
    let output = Command::new(env!("CARGO_BIN_EXE_sift-h3-client"))
        .args([
            "https://127.0.0.1:1/a",
            "https://127.0.0.1:2/b",
            "--output-dir",
            "/nonexistent",
            "--insecure",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("one server"));
}

#[test]
fn the_sift_server_refuses_to_start_without_a_root() {
    let output = Command::new(env!("CARGO_BIN_EXE_sift-h3-server"))
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(Path::new("/nonexistent/www"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("--root"));
}
