//! The quic-go peer (interop/quic-go/, a Go program) as the runners drive
//! it: its hq-interop client and server against quinn's, its file client
//! against its file server, with quinn's command lines and reports.
//!
//! It is built apart (`interop/quic-go/build.sh DIR`, with Go) into the
//! folder of this crate's binaries; where it is not, these tests say so
//! and check nothing (`.ci/run` builds it first wherever Go is installed).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sift_interop::compare::execute::sha256_file;
use sift_interop::compare::process::Running;
use sift_interop::flow::FlowReport;
use sift_interop::matrix::cell::write_seeded;
use sift_interop::peers::hq::ClientReport;

/// Longest a client may take here (a loaded CI machine included).
const CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// The quic-go program under `name`, if it was built beside this crate's
/// binaries.
fn quic_go(name: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_BIN_EXE_quinn-hq")).parent()?;
    let path = dir.join(name);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!(
            "{} is not built (interop/quic-go/build.sh {}, needs Go): nothing checked",
            path.display(),
            dir.display()
        );
        None
    }
}

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-quic-go-{name}-{}", std::process::id()));
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

fn hq_server(program: &Path, scratch: &Scratch) -> (Running, SocketAddr) {
    let mut command = Command::new(program);
    command
        .args(["server", "--listen", "127.0.0.1:0", "--root"])
        .arg(scratch.path("www"))
        .env("TMPDIR", &scratch.0);
    let running = Running::spawn("hq server", command).unwrap();
    let address = running.listening_address().unwrap();
    (running, address)
}

/// `program`'s hq client fetches `files` from `address` (it must exit 0,
/// every file byte-exact) and its report is returned.
fn hq_fetch(
    program: &Path,
    scratch: &Scratch,
    address: SocketAddr,
    files: &[(String, String)],
    extra: &[&str],
) -> ClientReport {
    let downloads = scratch.path("downloads");
    let _ = std::fs::remove_dir_all(&downloads);
    let mut command = Command::new(program);
    command
        .arg("client")
        .args(
            files
                .iter()
                .map(|(name, _)| format!("https://{address}/{name}")),
        )
        .arg("--output-dir")
        .arg(&downloads)
        .args(["--insecure", "--json"])
        .args(extra);
    let mut client = Running::spawn("hq client", command).unwrap();
    let ended = client
        .wait(CLIENT_TIMEOUT)
        .unwrap()
        .expect("the client hung");
    assert_eq!(ended.code, Some(0), "{}", client.stderr());
    for (name, sha) in files {
        assert_eq!(&sha256_file(&downloads.join(name)).unwrap(), sha, "{name}");
    }
    serde_json::from_str(client.stdout().trim()).expect("one JSON report")
}

fn serve_files(scratch: &Scratch, sizes: &[u64]) -> Vec<(String, String)> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            let name = format!("file{i}.bin");
            let sha = write_seeded(&scratch.path("www").join(&name), bytes, &name).unwrap();
            (name, sha)
        })
        .collect()
}

#[test]
fn quic_go_and_quinn_fetch_from_each_other_over_hq_interop() {
    let Some(quic_go_hq) = quic_go("quic-go-hq") else {
        return;
    };
    let quinn_hq = Path::new(env!("CARGO_BIN_EXE_quinn-hq"));
    let scratch = Scratch::new("hq");
    let files = serve_files(&scratch, &[1_000_000, 1_000, 3_000_000]);

    let (mut server, address) = hq_server(quinn_hq, &scratch);
    let report = hq_fetch(&quic_go_hq, &scratch, address, &files, &["--key-update"]);
    server.stop().unwrap();
    assert_eq!(report.stack, "quic-go");
    assert_eq!(report.version, "QUIC v1");
    assert_eq!(report.handshakes, 1);
    assert!(report.key_updates >= 1, "{report:?}");
    assert_eq!(report.files.len(), files.len());

    let (mut server, address) = hq_server(&quic_go_hq, &scratch);
    let report = hq_fetch(quinn_hq, &scratch, address, &files, &["--zerortt"]);
    assert_eq!(report.handshakes, 2);
    assert_eq!(report.zero_rtt_accepted, Some(true), "{report:?}");
    // A file the server does not have ends the client with an error.
    let mut missing = Command::new(&quic_go_hq);
    missing
        .args(["client", &format!("https://{address}/nothing-here")])
        .arg("--output-dir")
        .arg(scratch.path("missing"))
        .arg("--insecure");
    let mut missing = Running::spawn("hq client", missing).unwrap();
    let ended = missing.wait(CLIENT_TIMEOUT).unwrap().expect("hung");
    assert_ne!(ended.code, Some(0));
    server.stop().unwrap();
}

#[test]
fn the_quic_go_file_client_reports_what_the_comparison_reads() {
    let (Some(server_program), Some(client_program)) =
        (quic_go("quic-go-server"), quic_go("quic-go-client"))
    else {
        return;
    };
    let scratch = Scratch::new("file");
    let sha = write_seeded(&scratch.path("www/data.bin"), 2_000_003, "data").unwrap();
    let mut command = Command::new(server_program);
    command
        .args(["--listen", "127.0.0.1:0", "--cc", "cubic", "--root"])
        .arg(scratch.path("www"))
        .arg("--cert-dir")
        .arg(scratch.path("cert"));
    let mut server = Running::spawn("quic-go-server", command).unwrap();
    let address = server.listening_address().unwrap();
    let output = scratch.path("out.bin");
    let mut command = Command::new(&client_program);
    command
        .args(["get", &format!("quic://{address}/data.bin"), "-o"])
        .arg(&output)
        .args(["--json", "--ca"])
        .arg(scratch.path("cert/cert.pem"));
    let mut client = Running::spawn("quic-go-client", command).unwrap();
    let ended = client.wait(CLIENT_TIMEOUT).unwrap().expect("hung");
    assert_eq!(ended.code, Some(0), "{}", client.stderr());
    let flow: FlowReport = serde_json::from_str(client.stdout().trim()).unwrap();
    assert_eq!(
        (flow.bytes, flow.sha256.as_str()),
        (2_000_003, sha.as_str())
    );
    assert_eq!(sha256_file(&output).unwrap(), sha);
    assert_eq!(flow.version.as_deref(), Some("QUIC v1"));
    assert!(flow.srtt_us > 0 && flow.cwnd > 0, "{flow:?}");
    // Only the controller quic-go has is taken.
    let mut refused = Command::new(&client_program);
    refused
        .args(["get", &format!("quic://{address}/data.bin"), "--cc", "bbr"])
        .arg("--insecure-no-verify");
    let mut refused = Running::spawn("quic-go-client", refused).unwrap();
    let ended = refused.wait(CLIENT_TIMEOUT).unwrap().expect("hung");
    assert_ne!(ended.code, Some(0));
    assert!(refused.stderr().contains("cubic"), "{}", refused.stderr());
    server.stop().unwrap();
}
