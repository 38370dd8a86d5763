//! sift-client and sift-server through sift-link, all real processes on
//! loopback: the emulator's impairments reach a real transfer, corrupted
//! datagrams are delivered (not dropped), and corruption notices fire.

mod common;

use std::process::{Child, Command, Stdio};

use common::{
    content, expect_success, json_report, line_channel, run_client, wait_for_line, Server, TestDir,
};

const LINK: &str = env!("CARGO_BIN_EXE_sift-link");

/// A running sift-link, killed on drop.
struct Link {
    child: Child,
    addr: String,
}

impl Link {
    fn start(to: std::net::SocketAddr, forward: &str, reverse: &str) -> Self {
        let mut child = Command::new(LINK)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--to",
                &to.to_string(),
                "--seed",
                "7",
            ])
            .args(["--forward", forward, "--reverse", reverse])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sift-link");
        let lines = line_channel(child.stderr.take().unwrap());
        let banner = wait_for_line(&lines, "sift-link banner", |l| l.contains("listening on"));
        let addr = banner
            .split_whitespace()
            .skip_while(|w| *w != "on")
            .nth(1)
            .map(|a| a.trim_end_matches(',').to_string())
            .unwrap_or_else(|| panic!("no address in {banner:?}"));
        Self { child, addr }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn transfer_through_a_lossy_corrupting_link_is_byte_exact_and_notices_fire() {
    let dir = TestDir::new("through-link");
    let root = dir.subdir("root");
    let data = content(1_000_000, 11);
    std::fs::write(root.join("file.bin"), &data).unwrap();
    let upload = dir.path().join("upload.bin");
    std::fs::write(&upload, &data).unwrap();
    let server = Server::start(&root, &["--corruption-notices", "on"]);
    let spec = "delay 20ms loss 2% corrupt 2%";
    let link = Link::start(server.addr, spec, spec);
    let url = |path: &str| format!("sift://{}/{path}", link.addr);

    // Download: the server sends through the impaired link.
    let out = dir.path().join("got.bin");
    let output = run_client(&[
        "get",
        &url("file.bin"),
        "-o",
        out.to_str().unwrap(),
        &server.pin(),
        "--json",
    ]);
    let stdout = expect_success(&output);
    assert_eq!(std::fs::read(&out).unwrap(), data, "byte-exact download");
    let report = json_report(&stdout);
    assert_eq!(report["bytes"], serde_json::json!(1_000_000));
    // The server is the sender here; its counters come back in the trailer,
    // taken once the data was acknowledged, so its notices are all counted.
    let notices = report["corruption_notices_received"].as_u64().unwrap_or(0);
    assert!(notices > 0, "the sending server saw no notices: {stdout}");

    // Upload: the client is the sender, so its own counters show the
    // notices the server sent for the damaged packets it received.
    let output = run_client(&[
        "put",
        upload.to_str().unwrap(),
        &url("up.bin"),
        &server.pin(),
        "--json",
    ]);
    let stdout = expect_success(&output);
    assert_eq!(
        std::fs::read(root.join("up.bin")).unwrap(),
        data,
        "byte-exact upload"
    );
    let report = json_report(&stdout);
    let notices = report["corruption_notices_received"].as_u64().unwrap_or(0);
    assert!(
        notices > 0,
        "2% corruption over ~750 packets must produce notices: {stdout}"
    );
}
