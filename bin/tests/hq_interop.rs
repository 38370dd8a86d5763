//! hq-interop (HTTP/0.9 over QUIC) between sift-client and sift-server:
//! several files over one connection byte-exact, refusals as stream resets
//! that name the reason, the runner's per-case options (ChaCha20 only, key
//! updates, a client that moves port) doing what they say. Against quiche
//! and quinn, the interop crate's matrix runs the same client and server.

mod common;

use std::net::IpAddr;

use common::*;

fn https(server: &Server, path: &str) -> String {
    format!("https://{}/{path}", server.addr)
}

on_both_loopbacks!(several_urls_come_byte_exact_over_one_hq_connection);
fn several_urls_come_byte_exact_over_one_hq_connection(loopback: IpAddr) {
    let dir = TestDir::new("hq-many");
    let root = dir.subdir("root");
    let out = dir.subdir("out");
    std::fs::create_dir(root.join("sub")).unwrap();
    let files: Vec<(String, Vec<u8>)> = (0..12)
        .map(|i| {
            let len = if i == 0 { 3_000_000 } else { 1000 + i * 777 };
            (format!("f{i}.bin"), content(len, i as u64))
        })
        .collect();
    for (name, data) in &files {
        std::fs::write(root.join("sub").join(name), data).unwrap();
    }
    let server = Server::start_on(loopback, &root, &[]);
    let mut args = vec!["get".to_string()];
    args.extend(
        files
            .iter()
            .map(|(name, _)| https(&server, &format!("sub/{name}"))),
    );
    args.extend(["--output-dir".into(), out.to_str().unwrap().into()]);
    args.extend(["--json".into(), server.pin()]);
    let output = run_bounded(client_command().args(&args));
    let report = json_report(&expect_success(&output));
    for (name, data) in &files {
        assert!(&std::fs::read(out.join(name)).unwrap() == data, "{name}");
    }
    assert_eq!(report["protocol"], "hq-interop");
    assert_eq!(report["version"], "sift/1", "two sift ends upgrade");
    assert_eq!(report["files"].as_array().unwrap().len(), files.len());
    assert_eq!(report["failed"].as_array().unwrap().len(), 0);
    let total: u64 = files.iter().map(|(_, d)| d.len() as u64).sum();
    assert_eq!(report["bytes"], total);
    // Loopback carries the marks: each side's ECN validates, and each
    // says so (the client's report, the server's transfer lines).
    assert_eq!(report["ecn"]["state"], "capable", "{report}");
    // One connection: every transfer line names the same client port.
    let lines: Vec<String> = (0..files.len())
        .map(|_| server.next_transfer_line())
        .collect();
    let client = lines[0].split_whitespace().next().unwrap().to_string();
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with(&client) && l.contains("result=ok")),
        "{lines:?}"
    );
    assert!(lines.last().unwrap().contains(" ecn=capable"), "{lines:?}");
}

#[test]
fn a_missing_or_refused_path_is_a_reset_that_says_why_and_leaves_no_file() {
    let dir = TestDir::new("hq-refused");
    let root = dir.subdir("root");
    let out = dir.subdir("out");
    std::fs::write(root.join("here.bin"), b"present").unwrap();
    let server = Server::start(&root, &[]);
    let output = run_bounded(client_command().args([
        "get",
        &https(&server, "missing.bin"),
        &https(&server, "here.bin"),
        &https(&server, "../outside.bin"),
        "--output-dir",
        out.to_str().unwrap(),
        &server.pin(),
    ]));
    assert!(!output.status.success());
    let stdout = stdout_of(&output);
    assert!(stdout.contains("fetched 1 of 3 files"), "{stdout}");
    assert!(stdout.contains("not found"), "{stdout}");
    assert!(stdout.contains("refused path"), "{stdout}");
    assert!(stderr_of(&output).contains("2 of 3 files failed"));
    assert_eq!(std::fs::read(out.join("here.bin")).unwrap(), b"present");
    assert!(!out.join("missing.bin").exists());
    assert!(
        std::fs::read_dir(&out).unwrap().count() == 1,
        "no partial files left"
    );
}

#[test]
fn chacha20_key_updates_and_a_port_move_do_what_they_say() {
    let dir = TestDir::new("hq-options");
    let root = dir.subdir("root");
    let out = dir.subdir("out");
    let data = content(2_000_000, 9);
    std::fs::write(root.join("data.bin"), &data).unwrap();
    let server = Server::start(&root, &[]);
    let output = run_bounded(client_command().args([
        "get",
        &https(&server, "data.bin"),
        "--output-dir",
        out.to_str().unwrap(),
        "--ciphers",
        "chacha20",
        "--key-update-every",
        "5",
        "--migrate",
        "--json",
        &server.pin(),
    ]));
    let report = json_report(&expect_success(&output));
    assert!(std::fs::read(out.join("data.bin")).unwrap() == data);
    assert_eq!(report["cipher"], "chacha20");
    // The client sends only acknowledgements and one request: a few dozen
    // packets, fewer when the server's datagrams arrive in long GRO runs
    // (a loaded host); each update waits for the last one's acknowledgement.
    assert!(report["key_updates"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["migrated"], true);
    // The server followed the client to its new port.
    let line = server.next_transfer_line();
    assert!(line.contains("result=ok"), "{line}");
}

#[test]
fn https_urls_are_downloads_only_and_one_server_per_call() {
    let dir = TestDir::new("hq-misuse");
    let put = run_client(&["put", "/etc/hostname", "https://127.0.0.1:4433/x"]);
    assert!(expect_one_line_error(&put).contains("put, ls and perf need a sift:// URL"));
    let two = run_client(&[
        "get",
        "https://127.0.0.1:4433/a",
        "https://127.0.0.1:4434/b",
        "--output-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(expect_one_line_error(&two).contains("different servers"));
    let clash = run_client(&[
        "get",
        "https://127.0.0.1:4433/a/x.bin",
        "https://127.0.0.1:4433/b/x.bin",
    ]);
    assert!(expect_one_line_error(&clash).contains("would both be written to"));
}
