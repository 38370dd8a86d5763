//! Servers that go away and servers that are full, as a user meets them:
//! a restarted `sift-server` resets its old clients at once (stateless
//! reset) and `--resume` finishes the download; a server at
//! `--max-clients` refuses new clients saying it is busy, and `--wait`
//! gets in once a place frees up.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    client_command, content, expect_one_line_error, expect_success, json_report, line_channel,
    run_client, stderr_of, wait_for_line, Server, TestDir,
};

#[test]
fn a_restarted_server_resets_its_client_at_once_and_resume_finishes_byte_exact() {
    let dir = TestDir::new("restart");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let state = dir.subdir("state");
    let total = 64 * 1024 * 1024;
    let original = content(total, 41);
    std::fs::write(root.join("big.bin"), &original).unwrap();
    let server = Server::start_in(&root, &[], &state);
    let addr = server.addr;
    let pin = server.pin();
    let url = server.url("big.bin");
    let dest = local.join("big.bin");
    let partial = local.join("big.bin.sift-part");

    // -v logs a "download progress" event per MiB: kill the server at the
    // first, and start it again on the same port with the same state.
    let mut client = client_command()
        .args(["get", &url, "-o", dest.to_str().unwrap(), "-v", &pin])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = line_channel(client.stderr.take().unwrap());
    wait_for_line(&stderr, "download progress", |l| {
        l.contains("download progress")
    });
    drop(server);
    let restarted = Server::start_at(addr, &root, &[], &state);
    let back = Instant::now();
    let said = wait_for_line(&stderr, "the client's restart line", |l| {
        l.contains("server restarted")
    });
    let told_after = back.elapsed();
    let status = client.wait().unwrap();
    assert!(!status.success(), "the interrupted download must fail");
    assert!(
        told_after < Duration::from_secs(2),
        "the client learned of the restart {told_after:?} after it"
    );
    assert!(said.contains("--resume"), "{said}");
    assert!(
        !dest.exists(),
        "an interrupted download must not look complete"
    );
    let kept = std::fs::metadata(&partial)
        .expect("the partial file is kept")
        .len();
    assert!(kept < total as u64, "partial of {kept} bytes");

    let out = run_client(&[
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--resume",
        "--json",
        &restarted.pin(),
    ]);
    let report = json_report(&expect_success(&out));
    assert_eq!(report["resumed_from"], kept);
    assert_eq!(report["bytes"], total as u64 - kept);
    assert!(
        std::fs::read(&dest).unwrap() == original,
        "resumed file differs"
    );
}

#[test]
fn a_full_server_says_it_is_busy_and_wait_gets_in_once_a_client_leaves() {
    let dir = TestDir::new("busy");
    let server = Server::start(dir.path(), &["--max-clients", "1", "-v"]);
    let url = server.url("");
    let pin = server.pin();

    // The one place: a perf run holding its connection for two seconds.
    let holder = client_command()
        .args(["perf", &url, "-t", "2", &pin])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let holder_pid = holder.id();
    let holder = std::thread::spawn(move || holder.wait_with_output());
    // Until the holder is in, a second client could take the place.
    wait_for_line(&server.stderr, "the holder's connection", |l| {
        l.contains("client connected")
    });

    let started = Instant::now();
    let refused = run_client(&["ls", &url, &pin]);
    let error = expect_one_line_error(&refused);
    assert!(error.contains("server busy: 1 clients"), "{error}");
    assert!(error.contains("--wait"), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the refusal took {:?}",
        started.elapsed()
    );

    let waited = run_client(&["ls", &url, &pin, "--wait", "30"]);
    expect_success(&waited);
    assert!(
        stderr_of(&waited).contains("server busy: 1 clients; trying again in"),
        "{}",
        stderr_of(&waited)
    );
    let holder = holder.join().unwrap().unwrap();
    assert!(
        holder.status.success(),
        "the holder (pid {holder_pid}) failed"
    );
}

#[test]
fn a_client_run_keeps_the_servers_token_and_the_next_run_skips_the_retry() {
    let dir = TestDir::new("tokens");
    let root = dir.subdir("root");
    let client_state = dir.subdir("client-state");
    std::fs::write(root.join("small.bin"), content(10_000, 3)).unwrap();
    // One worker: with several, a worker still draining the first run's
    // connection counts as busier, and may move the second run to another
    // worker with a balancing Retry, token or not.
    let server = Server::start(&root, &["--retry", "--workers", "1"]);
    let url = server.url("small.bin");
    let pin = server.pin();
    let get = |name: &str| {
        let dest = dir.path().join(name);
        run_client(&[
            "get",
            &url,
            "-o",
            dest.to_str().unwrap(),
            &pin,
            "--state-dir",
            client_state.to_str().unwrap(),
            "-vv",
        ])
    };
    let retried = "the server asked for a Retry";

    let first = get("first.bin");
    expect_success(&first);
    assert!(stderr_of(&first).contains(retried), "{}", stderr_of(&first));
    let saved = std::fs::read_to_string(client_state.join("address-tokens")).unwrap();
    assert!(saved.starts_with(&server.addr.to_string()), "{saved}");

    let second = get("second.bin");
    expect_success(&second);
    assert!(
        !stderr_of(&second).contains(retried),
        "the second run brought the token, yet was asked for a Retry"
    );
}
