//! The hq-interop peers talk to each other as the interop runner's
//! endpoints would: quiche's client fetches from quinn's server and quinn's
//! from quiche's, 20 files of 1 MB over one connection, byte-exact; the
//! options the runner's cases need (Retry, resumption, 0-RTT, a verifying
//! client) do what they say.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sift_interop::compare::process::Running;
use sift_interop::matrix::cell::write_seeded;
use sift_interop::peers::hq::ClientReport;

/// Files and bytes of the download test (the "20 files of 1 MB").
const FILES: usize = 20;
const FILE_BYTES: u64 = 1_000_000;

/// Longest a client may take here (a loaded CI machine included).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-hq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("www")).unwrap();
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

fn peer(stack: &str) -> &'static str {
    match stack {
        "quiche" => env!("CARGO_BIN_EXE_quiche-hq"),
        _ => env!("CARGO_BIN_EXE_quinn-hq"),
    }
}

/// Files `name0..` of `bytes` each in www/, with their hashes.
fn serve_files(scratch: &Scratch, count: usize, bytes: u64) -> Vec<(String, String)> {
    (0..count)
        .map(|i| {
            let name = format!("file{i:02}.bin");
            let sha = write_seeded(&scratch.path("www").join(&name), bytes, &name).unwrap();
            (name, sha)
        })
        .collect()
}

fn server(stack: &str, scratch: &Scratch, extra: &[&str]) -> (Running, SocketAddr) {
    let mut command = Command::new(peer(stack));
    command
        .args(["server", "--listen", "127.0.0.1:0", "--root"])
        .arg(scratch.path("www"))
        .args(extra)
        .env("TMPDIR", &scratch.0);
    let running = Running::spawn(&format!("{stack}-hq server"), command).unwrap();
    let address = running.listening_address().unwrap();
    (running, address)
}

/// Runs the client on every file and returns its report (it must exit 0).
fn fetch(
    stack: &str,
    scratch: &Scratch,
    address: SocketAddr,
    files: &[(String, String)],
    extra: &[&str],
) -> ClientReport {
    let mut command = Command::new(peer(stack));
    command
        .arg("client")
        .args(
            files
                .iter()
                .map(|(name, _)| format!("https://{address}/{name}")),
        )
        .arg("--output-dir")
        .arg(scratch.path("downloads"))
        .arg("--json")
        .args(extra);
    let mut running = Running::spawn(&format!("{stack}-hq client"), command).unwrap();
    let ended = running.wait(CLIENT_TIMEOUT).unwrap();
    assert_eq!(
        ended.and_then(|e| e.code),
        Some(0),
        "{stack} client: {}",
        running.stderr()
    );
    serde_json::from_str(running.stdout().trim()).unwrap()
}

fn assert_byte_exact(dir: &Path, files: &[(String, String)], report: &ClientReport) {
    assert_eq!(report.files.len(), files.len());
    for (name, sha) in files {
        let on_disk = sift_interop::compare::execute::sha256_file(&dir.join(name)).unwrap();
        assert_eq!(&on_disk, sha, "{name} differs");
        let reported = report.files.iter().find(|f| &f.path == name).unwrap();
        assert_eq!(&reported.sha256, sha);
    }
}

fn twenty_files(client: &str, server_stack: &str) {
    let scratch = Scratch::new(&format!("{client}-{server_stack}"));
    let files = serve_files(&scratch, FILES, FILE_BYTES);
    let (_server, address) = server(server_stack, &scratch, &[]);
    let report = fetch(client, &scratch, address, &files, &["--insecure"]);
    assert_eq!(report.handshakes, 1);
    assert_eq!(report.alpn, "hq-interop");
    assert_byte_exact(&scratch.path("downloads"), &files, &report);
}

#[test]
fn quinn_client_fetches_twenty_megabyte_files_from_the_quiche_server() {
    twenty_files("quinn", "quiche");
}

#[test]
fn quiche_client_fetches_twenty_megabyte_files_from_the_quinn_server() {
    twenty_files("quiche", "quinn");
}

#[test]
fn a_missing_file_fails_the_client_and_names_it() {
    let scratch = Scratch::new("missing");
    let (_server, address) = server("quiche", &scratch, &[]);
    let run = Command::new(peer("quinn"))
        .args([
            "client",
            &format!("https://{address}/nothing.bin"),
            "--insecure",
        ])
        .arg("--output-dir")
        .arg(scratch.path("downloads"))
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("/nothing.bin"), "{stderr}");
}

#[test]
fn a_client_with_the_servers_certificate_as_ca_verifies_it() {
    for client in ["quiche", "quinn"] {
        let scratch = Scratch::new(&format!("ca-{client}"));
        let files = serve_files(&scratch, 1, 10_000);
        let cert = sift_interop::peers::cert::Certificate::generate(&scratch.path("cert")).unwrap();
        let (cert_pem, key_pem) = (
            cert.cert_pem.to_str().unwrap(),
            cert.key_pem.to_str().unwrap(),
        );
        let (_server, address) = server("quinn", &scratch, &["--cert", cert_pem, "--key", key_pem]);
        let report = fetch(client, &scratch, address, &files, &["--ca", cert_pem]);
        assert_byte_exact(&scratch.path("downloads"), &files, &report);
        // A different certificate as CA: the handshake must fail.
        let other =
            sift_interop::peers::cert::Certificate::generate(&scratch.path("other")).unwrap();
        let run = Command::new(peer(client))
            .args(["client", &format!("https://{address}/{}", files[0].0)])
            .arg("--output-dir")
            .arg(scratch.path("refused"))
            .arg("--ca")
            .arg(&other.cert_pem)
            .output()
            .unwrap();
        assert!(
            !run.status.success(),
            "{client} trusted a certificate it was not given"
        );
    }
}

#[test]
fn resuming_clients_make_two_handshakes_and_the_second_resumes() {
    for (client, server_stack) in [("quiche", "quinn"), ("quinn", "quiche")] {
        let scratch = Scratch::new(&format!("resume-{client}"));
        let files = serve_files(&scratch, 3, 10_000);
        let (_server, address) = server(server_stack, &scratch, &[]);
        let report = fetch(
            client,
            &scratch,
            address,
            &files,
            &["--insecure", "--zerortt"],
        );
        assert_eq!(report.handshakes, 2, "{client}");
        assert_byte_exact(&scratch.path("downloads"), &files, &report);
        if client == "quiche" {
            assert_eq!(report.resumed, Some(true));
        } else {
            assert_eq!(report.zero_rtt_accepted, Some(true));
        }
    }
}
