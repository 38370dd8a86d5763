//! QUIC v1 on the wire: sift and quiche — neither written for the other —
//! complete a handshake and a byte-exact download in both roles, on
//! loopback and through `sift-link` with 1% loss; two sift ends start in
//! v1 and run sift/1. `sift-peer` is sift's blocking API speaking the
//! file protocol (ALPN `sift-interop/1`), which quiche's file client and
//! server (`quiche-client`, `quiche-server`) speak too.
//!
//! Needs sift's release binaries (`cargo build --release -p sift-bin`, as
//! `.ci/run` does before these tests) for `sift-link`.

use std::path::{Path, PathBuf};
use std::process::Command;

use sift_interop::compare::execute::{sha256_file, write_incompressible};
use sift_interop::compare::process::Running;
use sift_interop::flow::FlowReport;

/// Bytes downloaded in every test: enough for many round trips of
/// congestion control and, through the lossy link, a few dozen losses.
const FILE_BYTES: u64 = 2_000_003;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-quic-v1-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root")).unwrap();
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

fn sift_link() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/sift-link");
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo build --release -p sift-bin`",
        path.display()
    );
    path
}

/// A server process and where clients reach it: itself, or a sift-link
/// in front of it whose server → client direction is `data_spec`.
struct Served {
    _server: Running,
    _link: Option<Running>,
    address: std::net::SocketAddr,
}

fn serve(command: Command, name: &str, data_spec: Option<&str>) -> Served {
    let server = Running::spawn(name, command).unwrap();
    let address = server.listening_address().unwrap();
    let Some(spec) = data_spec else {
        return Served {
            _server: server,
            _link: None,
            address,
        };
    };
    let mut link = Command::new(sift_link());
    link.args(["--listen", "127.0.0.1:0", "--to"])
        .arg(address.to_string())
        .args(["--forward", "delay 10ms", "--reverse", spec, "--seed", "1"]);
    let link = Running::spawn("sift-link", link).unwrap();
    let address = link.listening_address().unwrap();
    Served {
        _server: server,
        _link: Some(link),
        address,
    }
}

fn sift_server(scratch: &Scratch, data_spec: Option<&str>) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_sift-peer"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--root"])
        .arg(scratch.path("root"))
        .arg("--cert-dir")
        .arg(scratch.path("cert"));
    serve(command, "sift-peer serve", data_spec)
}

fn quiche_server(scratch: &Scratch, data_spec: Option<&str>) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_quiche-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--cc", "cubic", "--root"])
        .arg(scratch.path("root"))
        .arg("--cert-dir")
        .arg(scratch.path("cert"));
    serve(command, "quiche-server", data_spec)
}

/// What `sift-peer get` prints.
#[derive(serde::Deserialize)]
struct SiftGet {
    bytes: u64,
    sha256: String,
    version: String,
    corruption_notices: bool,
}

/// Runs `client get` of data.bin from `served`, trusting the server's
/// certificate, and reads the JSON line it prints.
fn get<T: serde::de::DeserializeOwned>(
    client: &str,
    extra: &[&str],
    scratch: &Scratch,
    served: &Served,
) -> T {
    let run = Command::new(client)
        .arg("get")
        .arg(format!("quic://{}/data.bin", served.address))
        .arg("-o")
        .arg(scratch.path("out.bin"))
        .arg("--ca")
        .arg(scratch.path("cert/cert.pem"))
        .args(extra)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{client} get: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    serde_json::from_slice(&run.stdout).unwrap()
}

fn sift_get(scratch: &Scratch, served: &Served) -> SiftGet {
    get(env!("CARGO_BIN_EXE_sift-peer"), &[], scratch, served)
}

fn quiche_get(scratch: &Scratch, served: &Served) -> FlowReport {
    get(
        env!("CARGO_BIN_EXE_quiche-client"),
        &["--json"],
        scratch,
        served,
    )
}

fn quiche_client_against_sift_server(name: &str, data_spec: Option<&str>) {
    let scratch = Scratch::new(name);
    let sha = write_incompressible(&scratch.path("root/data.bin"), FILE_BYTES).unwrap();
    let served = sift_server(&scratch, data_spec);
    let report = quiche_get(&scratch, &served);
    assert_eq!(report.bytes, FILE_BYTES);
    assert_eq!(report.sha256, sha);
    assert_eq!(sha256_file(&scratch.path("out.bin")).unwrap(), sha);
}

fn sift_client_against_quiche_server(name: &str, data_spec: Option<&str>) {
    let scratch = Scratch::new(name);
    let sha = write_incompressible(&scratch.path("root/data.bin"), FILE_BYTES).unwrap();
    let served = quiche_server(&scratch, data_spec);
    let got = sift_get(&scratch, &served);
    assert_eq!(got.bytes, FILE_BYTES);
    assert_eq!(got.sha256, sha);
    assert_eq!(sha256_file(&scratch.path("out.bin")).unwrap(), sha);
    assert_eq!(got.version, "QUIC v1", "quiche speaks only v1");
    assert!(!got.corruption_notices);
}

#[test]
fn quiche_client_downloads_from_a_sift_server_on_loopback() {
    quiche_client_against_sift_server("quiche-to-sift", None);
}

#[test]
fn sift_client_downloads_from_a_quiche_server_on_loopback() {
    sift_client_against_quiche_server("sift-to-quiche", None);
}

#[test]
fn quiche_client_downloads_from_a_sift_server_through_a_lossy_link() {
    quiche_client_against_sift_server(
        "quiche-to-sift-lossy",
        Some("delay 10ms rate 50mbit limit 200 loss 1%"),
    );
}

#[test]
fn sift_client_downloads_from_a_quiche_server_through_a_lossy_link() {
    sift_client_against_quiche_server(
        "sift-to-quiche-lossy",
        Some("delay 10ms rate 50mbit limit 200 loss 1%"),
    );
}

#[test]
fn two_sift_ends_start_in_quic_v1_and_run_sift_1() {
    let scratch = Scratch::new("sift-to-sift");
    let sha = write_incompressible(&scratch.path("root/data.bin"), FILE_BYTES).unwrap();
    let served = sift_server(&scratch, None);
    let got = sift_get(&scratch, &served);
    assert_eq!(got.sha256, sha);
    assert_eq!(got.version, "sift/1");
    assert!(got.corruption_notices);
}
