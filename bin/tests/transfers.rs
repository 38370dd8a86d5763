//! sift-server and sift-client on loopback: what users move arrives byte
//! for byte, many at once, never outside the served root, and an
//! interrupted download resumes with only the rest.

mod common;

use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::process::Stdio;

use common::*;

fn sha256_hex(bytes: &[u8]) -> String {
    sift_bin::transfer::digest::sha256(bytes).to_string()
}

/// How a server's transfer line starts for a client on `loopback`.
fn client_field(loopback: IpAddr) -> String {
    let client = SocketAddr::new(loopback, 1).to_string();
    format!("client={}", client.trim_end_matches('1'))
}

on_both_loopbacks!(get_put_and_ls_move_files_byte_exact_with_their_hashes);
fn get_put_and_ls_move_files_byte_exact_with_their_hashes(loopback: IpAddr) {
    let dir = TestDir::new("roundtrip");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    std::fs::create_dir(root.join("sub")).unwrap();
    let original = content(1_500_000, 1);
    std::fs::write(root.join("sub/data.bin"), &original).unwrap();
    let server = Server::start_on(loopback, &root, &["--allow-put"]);
    let key = ClientKey::new();
    server.authorize(&key);

    // get, JSON report
    let dest = local.join("fetched.bin");
    let dest_str = dest.to_str().unwrap();
    let url = server.url("sub/data.bin");
    let out = run_client(&["get", &url, "-o", dest_str, "--json", &server.pin()]);
    let report = json_report(&expect_success(&out));
    assert_eq!(std::fs::read(&dest).unwrap(), original);
    assert_eq!(report["sha256"], sha256_hex(&original));
    assert_eq!(report["bytes"], 1_500_000);
    assert_eq!(report["path"], "sub/data.bin");
    // The sender's algorithm: sift-server's default, cubic-ecn, is CUBIC
    // with the ECN loss verdict.
    assert_eq!(report["cc"], "cubic");
    for field in [
        "completion_s",
        "goodput_bps",
        "retransmitted_packets",
        "ptos",
        "corruption_notices_received",
        "corruption_notices",
        "send_times",
    ] {
        assert!(
            report.get(field).is_some(),
            "--json lacks {field}: {report}"
        );
    }
    let line = server.next_transfer_line();
    assert!(
        line.contains("op=GET") && line.contains("bytes=1500000") && line.contains("result=ok"),
        "{line}"
    );
    assert!(
        line.contains(" sender=busy:"),
        "where the sending went: {line}"
    );
    assert!(line.starts_with(&client_field(loopback)), "{line}");

    // put, human summary
    let upload = content(777_777, 2);
    let source = local.join("up.bin");
    std::fs::write(&source, &upload).unwrap();
    let url = server.url("sub/uploaded.bin");
    let out = run_client(&[
        "put",
        source.to_str().unwrap(),
        &url,
        &server.pin(),
        &key.arg(),
    ]);
    let summary = expect_success(&out);
    assert!(summary.contains(&sha256_hex(&upload)), "{summary}");
    assert!(summary.contains("goodput"), "{summary}");
    assert_eq!(
        std::fs::read(root.join("sub/uploaded.bin")).unwrap(),
        upload
    );
    let line = server.next_transfer_line();
    assert!(
        line.contains("op=PUT") && line.contains("bytes=777777") && line.contains("result=ok"),
        "{line}"
    );

    // ls
    let url = server.url("sub");
    let out = run_client(&["ls", &url, "--json", &server.pin()]);
    let listing = json_report(&expect_success(&out));
    let names: Vec<&str> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["data.bin", "uploaded.bin"]);
    assert_eq!(listing["entries"][0]["size"], 1_500_000);
    let out = run_client(&["ls", &url, &server.pin()]);
    assert!(expect_success(&out).contains("uploaded.bin"));

    let leftovers: Vec<_> = std::fs::read_dir(root.join("sub"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.contains("sift-part"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

on_both_loopbacks!(twenty_clients_at_once_all_get_their_files_byte_exact);
fn twenty_clients_at_once_all_get_their_files_byte_exact(loopback: IpAddr) {
    let dir = TestDir::new("twenty");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let files: Vec<Vec<u8>> = (0..20)
        .map(|i| content(200_000 + i * 1000, 100 + i as u64))
        .collect();
    for (i, data) in files.iter().enumerate() {
        std::fs::write(root.join(format!("f{i}.bin")), data).unwrap();
    }
    let server = Server::start_on(loopback, &root, &[]);
    let clients: Vec<_> = (0..20)
        .map(|i| {
            let url = server.url(&format!("f{i}.bin"));
            let pin = server.pin();
            let dest = local.join(format!("f{i}.bin"));
            std::thread::spawn(move || {
                run_client(&["get", &url, "-o", dest.to_str().unwrap(), "--json", &pin])
            })
        })
        .collect();
    for (i, client) in clients.into_iter().enumerate() {
        let out = client.join().unwrap();
        let report = json_report(&expect_success(&out));
        assert_eq!(report["sha256"], sha256_hex(&files[i]), "client {i}");
        assert_eq!(
            std::fs::read(local.join(format!("f{i}.bin"))).unwrap(),
            files[i],
            "client {i}"
        );
    }
    let ok_lines = (0..20)
        .filter(|_| server.next_transfer_line().contains("result=ok"))
        .count();
    assert_eq!(ok_lines, 20);
}

on_both_loopbacks!(with_retry_every_client_proves_its_address_and_gets_its_file);
fn with_retry_every_client_proves_its_address_and_gets_its_file(loopback: IpAddr) {
    let dir = TestDir::new("retry");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let data = content(300_000, 77);
    std::fs::write(root.join("f.bin"), &data).unwrap();
    let server = Server::start_on(loopback, &root, &["--retry", "-vv"]);
    for i in 0..3 {
        let dest = local.join(format!("f{i}.bin"));
        let out = run_client(&[
            "get",
            &server.url("f.bin"),
            "-o",
            dest.to_str().unwrap(),
            &server.pin(),
        ]);
        expect_success(&out);
        assert_eq!(std::fs::read(&dest).unwrap(), data, "client {i}");
        wait_for_line(&server.stderr, "the server's Retry", |l| {
            l.contains("asking a new client to prove its address (Retry)")
        });
    }
}

on_both_loopbacks!(path_traversal_is_refused_and_nothing_is_written_outside_the_root);
fn path_traversal_is_refused_and_nothing_is_written_outside_the_root(loopback: IpAddr) {
    let dir = TestDir::new("traversal");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    std::fs::write(dir.path().join("secret.txt"), b"outside the root").unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("escape")).unwrap();
    std::os::unix::fs::symlink(dir.path(), root.join("parent")).unwrap();
    let server = Server::start_on(loopback, &root, &["--allow-put"]);
    let key = ClientKey::new();
    server.authorize(&key);
    let upload = local.join("payload.bin");
    std::fs::write(&upload, b"attacker").unwrap();

    // A raw URL keeps `..` and the leading slash as typed.
    for path in [
        "../secret.txt",
        "/etc/passwd",
        "a/../../secret.txt",
        "escape",
        "parent/secret.txt",
    ] {
        let url = format!("sift://{}/{path}", server.addr);
        let dest = local.join("got");
        let out = run_client(&["get", &url, "-o", dest.to_str().unwrap(), &server.pin()]);
        let error = expect_one_line_error(&out);
        assert!(error.contains("refused path"), "GET {path}: {error}");
        assert!(!dest.exists());
    }
    for path in [
        "../x.txt",
        "/tmp/x.txt",
        "a/../../x.txt",
        "parent/x.txt",
        "escape",
    ] {
        let url = format!("sift://{}/{path}", server.addr);
        let out = run_client(&[
            "put",
            upload.to_str().unwrap(),
            &url,
            &server.pin(),
            &key.arg(),
        ]);
        let error = expect_one_line_error(&out);
        assert!(error.contains("refused path"), "PUT {path}: {error}");
    }
    let mut outside: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    outside.sort();
    assert_eq!(outside, ["local", "root", "secret.txt"]);
    assert_eq!(
        std::fs::read(dir.path().join("secret.txt")).unwrap(),
        b"outside the root"
    );
}

on_both_loopbacks!(a_killed_download_leaves_only_a_partial_and_resume_fetches_only_the_rest);
fn a_killed_download_leaves_only_a_partial_and_resume_fetches_only_the_rest(loopback: IpAddr) {
    let dir = TestDir::new("resume");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let total = 48 * 1024 * 1024;
    let original = content(total, 7);
    std::fs::write(root.join("big.bin"), &original).unwrap();
    let server = Server::start_on(loopback, &root, &[]);
    let dest = local.join("big.bin");
    let partial = local.join("big.bin.sift-part");
    let url = server.url("big.bin");

    // -v logs a "download progress" event per MiB on stderr: kill at the first.
    let mut client = client_command()
        .args([
            "get",
            &url,
            "-o",
            dest.to_str().unwrap(),
            "-v",
            &server.pin(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = line_channel(client.stderr.take().unwrap());
    wait_for_line(&stderr, "download progress", |l| {
        l.contains("download progress")
    });
    client.kill().unwrap();
    client.wait().unwrap();

    assert!(!dest.exists(), "a killed download must not look complete");
    let kept = std::fs::metadata(&partial)
        .expect("the partial file is kept")
        .len();
    assert!(
        kept >= 1 << 20 && kept < total as u64,
        "partial of {kept} bytes"
    );

    let out = run_client(&[
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--resume",
        "--json",
        &server.pin(),
    ]);
    let report = json_report(&expect_success(&out));
    // Only the rest travels: total − kept bytes.
    assert_eq!(report["bytes"], total as u64 - kept);
    assert_eq!(report["resumed_from"], kept);
    assert_eq!(report["sha256"], sha256_hex(&original));
    assert!(
        std::fs::read(&dest).unwrap() == original,
        "resumed file differs"
    );
    assert!(!partial.exists());
}

on_both_loopbacks!(perf_ndjson_prints_parseable_intervals_and_a_summary);
fn perf_ndjson_prints_parseable_intervals_and_a_summary(loopback: IpAddr) {
    let dir = TestDir::new("perf");
    let server = Server::start_on(loopback, dir.path(), &[]);
    let url = server.url("");
    let pin = server.pin();
    for reverse in [false, true] {
        let mut args = vec!["perf", &url, "-t", "2", "-i", "0.5", "-J", &pin];
        if reverse {
            args.push("-R");
        }
        let stdout = expect_success(&run_client(&args));
        let objects: Vec<serde_json::Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        let (summary, intervals) = objects.split_last().expect("at least a summary");
        assert_eq!(summary["event"], "summary");
        assert!(summary["bytes_received"].as_u64().unwrap() > 0);
        // An upload is timed by the client's own clock, so it lasts the full
        // 2 s. A download lasts 2 s by the server's clock, which starts when
        // it answers; the client's meter starts when it reads that answer,
        // so a client scheduled late on a busy machine sees a little less.
        let least = if reverse { 1.0 } else { 2.0 };
        let seconds = summary["seconds"].as_f64().unwrap();
        assert!(seconds >= least, "a 2 s measurement took {seconds} s");
        assert!(intervals.len() >= 3, "2 s in 0.5 s intervals: {stdout}");
        for interval in intervals {
            assert_eq!(interval["event"], "interval");
            assert!(interval["bits_per_second"].as_f64().is_some());
            assert!(interval["cwnd"].as_u64().is_some());
        }
    }
}

/// `get --cc NAME` asks the server to send the file under NAME: the data
/// flows server → client, so the server's controller is the one that counts.
/// `--initial-window` starts the server's window, and that of a controller
/// a client asks for, at the given size: a 100 kB download on loopback
/// (under 90 packets, no loss) ends with the window it started from, far
/// above where slow start from ten packets gets. Window controllers only:
/// BBR's window is its model's once Startup ends, and on a loaded machine
/// a 100 kB download can end Startup (a window of one send quantum).
#[test]
fn a_server_started_with_a_large_initial_window_sends_from_it() {
    let dir = TestDir::new("initial-window");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let original = content(100_000, 5);
    std::fs::write(root.join("f.bin"), &original).unwrap();
    let window_after = |server: &Server, cc: Option<&str>| {
        let dest = local.join("f.bin");
        let url = server.url("f.bin");
        let pin = server.pin();
        let mut args = vec!["get", &url, "-o", dest.to_str().unwrap(), "--json", &pin];
        if let Some(cc) = cc {
            args.extend(["--cc", cc]);
        }
        let report = json_report(&expect_success(&run_client(&args)));
        assert_eq!(std::fs::read(&dest).unwrap(), original);
        report["cwnd"].as_u64().unwrap()
    };
    let packets = 300 * 1200;

    // Without path MTU discovery the packet size stays put, so the window
    // counts packets as the flag does.
    let server = Server::start(
        &root,
        &["--cc", "cubic", "--pmtud", "off", "--initial-window", "300"],
    );
    assert!(window_after(&server, None) >= packets);
    assert!(window_after(&server, Some("reno")) >= packets);
    drop(server);

    let server = Server::start(&root, &["--cc", "cubic", "--pmtud", "off"]);
    assert!(window_after(&server, None) < packets);
}

#[test]
fn an_initial_window_out_of_range_is_refused_in_one_line() {
    for bad in ["0", "1001", "many"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sift-server"))
            .args(["--root", ".", "--initial-window", bad])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let error = stderr_of(&out);
        assert!(error.contains("--initial-window"), "{error}");
    }
}

/// A server limited by `--accept-cc` refuses anything else in one clear line
/// and no file appears.
#[test]
fn get_with_cc_has_the_server_send_with_that_controller_or_refuse_clearly() {
    let dir = TestDir::new("get-cc");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let original = content(800_000, 3);
    std::fs::write(root.join("f.bin"), &original).unwrap();
    let server = Server::start(&root, &["--cc", "cubic", "--accept-cc", "bbr,westwood-a"]);
    let url = server.url("f.bin");

    let dest = local.join("f.bin");
    let out = run_client(&[
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--cc",
        "bbr",
        "--json",
        &server.pin(),
    ]);
    let report = json_report(&expect_success(&out));
    assert_eq!(std::fs::read(&dest).unwrap(), original);
    // The report's `cc` is the sender's: the server ran BBR, not its cubic.
    assert_eq!(report["cc"], "bbr");
    assert!(server.next_transfer_line().contains("result=ok"));

    let refused = local.join("refused.bin");
    let out = run_client(&[
        "get",
        &url,
        "-o",
        refused.to_str().unwrap(),
        "--cc",
        "reno",
        &server.pin(),
    ]);
    let error = expect_one_line_error(&out);
    assert!(
        error.contains("\"reno\"") && error.contains("accepted: bbr, westwood-a"),
        "{error}"
    );
    assert!(!refused.exists());
    assert!(server
        .next_transfer_line()
        .contains("result=refused-controller"),);
}

#[test]
fn one_dual_stack_server_serves_an_ipv4_and_an_ipv6_client() {
    // `--listen [::]:0` is the default address (`[::]:4433`) on a free port.
    let Some(ipv6) = ipv6_or_skip("one_dual_stack_server_serves_an_ipv4_and_an_ipv6_client") else {
        return;
    };
    let dir = TestDir::new("dual-stack");
    let root = dir.subdir("root");
    let data = content(1_000_000, 3);
    std::fs::write(root.join("f.bin"), &data).unwrap();
    let server = Server::start_on(Ipv6Addr::UNSPECIFIED.into(), &root, &[]);
    let port = server.addr.port();
    assert_eq!(
        server.listening,
        format!("listening on [::]:{port} and 0.0.0.0:{port}"),
        "both forms are printed"
    );
    for loopback in [IPV4, ipv6] {
        let url = format!("sift://{}/f.bin", SocketAddr::new(loopback, port));
        let dest = dir.path().join(format!("got-{loopback}"));
        let out = run_client(&["get", &url, "-o", dest.to_str().unwrap(), &server.pin()]);
        expect_success(&out);
        assert_eq!(std::fs::read(&dest).unwrap(), data, "{url}");
        let line = server.next_transfer_line();
        // An IPv4 client is named plainly, not as ::ffff:127.0.0.1.
        assert!(line.starts_with(&client_field(loopback)), "{line}");
        assert!(line.contains("result=ok"), "{line}");
    }
}

#[test]
fn the_server_listens_dual_stack_on_port_4433_by_default() {
    let out = run_bounded(std::process::Command::new(SERVER).arg("--help"));
    let help = expect_success(&out);
    assert!(help.contains("[default: [::]:4433"), "{help}");
}

#[test]
fn a_v2_client_gets_its_file_in_v2_and_a_server_without_v2_sends_it_to_v1() {
    // RFC 9369: `--versions v2` starts in QUIC v2. A server that lists
    // v2 serves it in v2; the default server (sift/1, v1) answers with
    // Version Negotiation and a client that also lists v1 starts over there.
    let dir = TestDir::new("quic-v2");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let data = content(200_000, 29);
    std::fs::write(root.join("f.bin"), &data).unwrap();
    let with_v2 = Server::start(&root, &["--versions", "v2,sift/1,v1", "--retry"]);
    let default = Server::start(&root, &[]);
    for (server, versions, expected) in
        [(&with_v2, "v2", "QUIC v2"), (&default, "v2,v1", "QUIC v1")]
    {
        let dest = local.join(format!("{}.bin", expected.replace(' ', "-")));
        let out = run_client(&[
            "get",
            &server.url("f.bin"),
            "-o",
            dest.to_str().unwrap(),
            "--versions",
            versions,
            &server.pin(),
        ]);
        expect_success(&out);
        assert_eq!(std::fs::read(&dest).unwrap(), data, "{versions}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(expected), "{versions}: {stdout}");
    }
    // A v2-only client and a server without v2 have nothing in common.
    let out = run_client(&[
        "get",
        &default.url("f.bin"),
        "-o",
        local.join("none.bin").to_str().unwrap(),
        "--versions",
        "v2",
        &default.pin(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("QUIC v2") || stderr.contains("sift/1"),
        "{stderr}"
    );
}

#[test]
fn a_client_moves_to_the_servers_preferred_address_and_the_download_completes_there() {
    // RFC 9000 §9.6 on real sockets: the server listens on 127.0.0.1 and
    // offers 127.0.0.2 (the same loopback interface), the client moves
    // there once its handshake is confirmed, and the file arrives intact.
    let dir = TestDir::new("preferred-address");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let original = content(3_000_000, 5);
    std::fs::write(root.join("big.bin"), &original).unwrap();
    // A free port on 127.0.0.2 (a preferred address names its port).
    let preferred = std::net::UdpSocket::bind("127.0.0.2:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let preferred_arg = preferred.to_string();
    let server = Server::start(&root, &["--preferred-address", &preferred_arg]);
    let dest = local.join("big.bin");
    let out = run_client(&[
        "get",
        &server.url("big.bin"),
        "-o",
        dest.to_str().unwrap(),
        "--json",
        &server.pin(),
    ]);
    let report = json_report(&expect_success(&out));
    assert!(
        std::fs::read(&dest).unwrap() == original,
        "the file differs"
    );
    assert_eq!(report["on_preferred_address"], true, "{report}");

    // Told not to, the client stays where it connected.
    let stay = local.join("stay.bin");
    let out = run_client(&[
        "get",
        &server.url("big.bin"),
        "-o",
        stay.to_str().unwrap(),
        "--json",
        "--ignore-preferred-address",
        &server.pin(),
    ]);
    let report = json_report(&expect_success(&out));
    assert!(
        std::fs::read(&stay).unwrap() == original,
        "the file differs"
    );
    assert_eq!(report["on_preferred_address"], false, "{report}");
}
