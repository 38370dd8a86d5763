//! The quinn peer as the runner drives it: quinn-server and quinn-client on
//! loopback, a real TLS handshake (rustls) against the server's fresh
//! certificate, the quiche pair's options and report.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sift_interop::compare::execute::{sha256_file, write_incompressible};
use sift_interop::compare::process::Running;
use sift_interop::flow::FlowReport;
use sift_interop::peers::cert::Certificate;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-quinn-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root")).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn server(dir: &Path, cc: &str) -> (Running, std::net::SocketAddr) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quinn-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--cc", cc, "--root"])
        .arg(dir.join("root"))
        .arg("--cert-dir")
        .arg(dir.join("cert"));
    let server = Running::spawn("quinn-server", command).unwrap();
    let address = server.listening_address().unwrap();
    (server, address)
}

fn client(args: &[&str], ca: &Path) -> Running {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quinn-client"));
    command.args(args).arg("--ca").arg(ca);
    Running::spawn("quinn-client", command).unwrap()
}

#[test]
fn every_controller_downloads_byte_exact_and_reports_the_senders_counters() {
    for cc in ["cubic", "newreno", "bbr"] {
        let scratch = Scratch::new(&format!("get-{cc}"));
        let sha = write_incompressible(&scratch.0.join("root/data.bin"), 3_000_017).unwrap();
        let (mut server, address) = server(&scratch.0, cc);
        let output = scratch.0.join("out.bin");
        let mut run = client(
            &[
                "get",
                &format!("quic://{address}/data.bin"),
                "-o",
                output.to_str().unwrap(),
                "--cc",
                cc,
                "--json",
            ],
            &scratch.0.join("cert/cert.pem"),
        );
        let ended = run.wait(Duration::from_secs(60)).unwrap().expect("hung");
        assert_eq!(ended.code, Some(0), "{}", run.last_words());
        let report: FlowReport = serde_json::from_str(run.stdout().trim()).unwrap();
        assert_eq!(report.bytes, 3_000_017);
        assert_eq!(report.sha256, sha);
        assert_eq!(sha256_file(&output).unwrap(), sha);
        assert_eq!(report.cc, cc);
        assert!(
            report.goodput_bps > 0.0 && report.cwnd > 0 && report.srtt_us > 0,
            "{report:?}"
        );
        server.stop().unwrap();
    }
}

#[test]
fn a_path_outside_the_root_is_refused_with_the_servers_reason() {
    let scratch = Scratch::new("outside");
    std::fs::write(scratch.0.join("secret"), b"not served").unwrap();
    let (mut server, address) = server(&scratch.0, "cubic");
    let mut run = client(
        &[
            "get",
            &format!("quic://{address}/../secret"),
            "-o",
            scratch.0.join("x").to_str().unwrap(),
        ],
        &scratch.0.join("cert/cert.pem"),
    );
    let ended = run.wait(Duration::from_secs(60)).unwrap().expect("hung");
    assert_ne!(ended.code, Some(0));
    let stderr = run.stderr();
    assert!(
        stderr.contains("server refused") && stderr.contains("leaves the served directory"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    server.stop().unwrap();
}

#[test]
fn a_client_that_trusts_another_certificate_does_not_connect() {
    let scratch = Scratch::new("wrong-ca");
    std::fs::write(scratch.0.join("root/f"), b"x").unwrap();
    let other = Certificate::generate(&scratch.0.join("other")).unwrap();
    let (mut server, address) = server(&scratch.0, "cubic");
    let output = scratch.0.join("out");
    let mut run = client(
        &[
            "get",
            &format!("quic://{address}/f"),
            "-o",
            output.to_str().unwrap(),
        ],
        &other.cert_pem,
    );
    let ended = run.wait(Duration::from_secs(60)).unwrap().expect("hung");
    assert_ne!(ended.code, Some(0));
    assert!(
        run.stderr().contains("handshake failed"),
        "{}",
        run.stderr()
    );
    assert!(!output.exists());
    server.stop().unwrap();
}

#[test]
fn an_unknown_controller_is_one_clear_line_and_a_failure() {
    let scratch = Scratch::new("bad-cc");
    let run = Command::new(env!("CARGO_BIN_EXE_quinn-server"))
        .args(["--listen", "127.0.0.1:0", "--cc", "bbr2", "--root"])
        .arg(scratch.0.join("root"))
        .arg("--cert-dir")
        .arg(scratch.0.join("cert"))
        .output()
        .unwrap();
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no congestion controller \"bbr2\""),
        "{stderr}"
    );
}
