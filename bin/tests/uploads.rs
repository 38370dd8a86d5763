//! Who may write to a server, as a user meets it (issue 33): a server is
//! read-only unless started with `--allow-put`, then takes uploads only
//! from clients whose key its owner listed in `authorized_clients`; and it
//! will not serve its own state directory.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::*;

fn sha256_hex(bytes: &[u8]) -> String {
    sift_bin::transfer::digest::sha256(bytes).to_string()
}

#[test]
fn a_server_started_without_allow_put_refuses_every_upload_in_one_line() {
    let dir = TestDir::new("uploads-read-only");
    let root = dir.subdir("root");
    let source = dir.path().join("up.bin");
    std::fs::write(&source, content(10_000, 1)).unwrap();
    let server = Server::start(&root, &[]);
    let key = ClientKey::new();
    server.authorize(&key);
    let out = run_client(&[
        "put",
        source.to_str().unwrap(),
        &server.url("up.bin"),
        &server.pin(),
        &key.arg(),
    ]);
    assert_eq!(
        expect_one_line_error(&out),
        "sift-client: error: upload refused: this server is read-only (start it with --allow-put)"
    );
    assert!(!root.join("up.bin").exists());
    let line = server.next_transfer_line();
    assert!(
        line.contains("op=PUT") && line.contains("result=upload-refused"),
        "{line}"
    );
}

#[test]
fn an_unknown_client_is_refused_naming_its_key_and_once_authorised_its_upload_lands_exact() {
    let dir = TestDir::new("uploads-authorise");
    let root = dir.subdir("root");
    let state = dir.subdir("server-state");
    let data = content(1_234_567, 2);
    let source = dir.path().join("up.bin");
    std::fs::write(&source, &data).unwrap();
    let server = Server::start_in(&root, &["--allow-put"], &state);
    let key = ClientKey::new();
    let put = || {
        run_client(&[
            "put",
            source.to_str().unwrap(),
            &server.url("in/up.bin"),
            &server.pin(),
            &key.arg(),
        ])
    };
    std::fs::create_dir(root.join("in")).unwrap();

    let error = expect_one_line_error(&put());
    let list = state.join("authorized_clients");
    assert!(
        error.starts_with("sift-client: error: upload refused: "),
        "{error}"
    );
    assert!(error.contains(&key.fingerprint), "{error}");
    assert!(error.contains(&list.display().to_string()), "{error}");
    assert!(!root.join("in/up.bin").exists());

    // The owner adds the line the refusal asked for; no restart.
    server.authorize(&key);
    let summary = expect_success(&put());
    assert!(summary.contains(&sha256_hex(&data)), "{summary}");
    assert_eq!(std::fs::read(root.join("in/up.bin")).unwrap(), data);

    // Another client, with no key at all, still downloads from a server
    // that asks for client keys.
    let got = dir.path().join("got.bin");
    let out = run_client(&[
        "get",
        &server.url("in/up.bin"),
        "-o",
        got.to_str().unwrap(),
        &server.pin(),
    ]);
    expect_success(&out);
    assert_eq!(std::fs::read(&got).unwrap(), data);
}

#[test]
fn a_first_upload_makes_the_clients_key_says_so_and_id_prints_the_same_key() {
    let dir = TestDir::new("uploads-first-key");
    let root = dir.subdir("root");
    let client_state = dir.path().join("client-state");
    let source = dir.path().join("up.bin");
    std::fs::write(&source, b"hello").unwrap();
    let server = Server::start(&root, &["--allow-put"]);
    let state_arg = format!("--state-dir={}", client_state.display());
    let out = run_client(&[
        "put",
        source.to_str().unwrap(),
        &server.url("up.bin"),
        &server.pin(),
        &state_arg,
    ]);
    assert!(!out.status.success());
    let stderr = stderr_of(&out);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines[0].starts_with("sift-client: made this client's key SHA256:"),
        "{stderr}"
    );
    let made = lines[0]
        .split_whitespace()
        .find(|word| word.starts_with("SHA256:"))
        .unwrap();
    assert!(
        lines[1].contains(made),
        "the refusal names the new key: {stderr}"
    );

    let id = run_client(&["id", &state_arg]);
    assert_eq!(expect_success(&id).trim(), made);
    assert!(
        stderr_of(&id).is_empty(),
        "no second key: {}",
        stderr_of(&id)
    );
    let mode = std::fs::metadata(client_state.join("client-key.pem"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[test]
fn the_server_refuses_to_start_with_its_state_directory_at_or_inside_the_root() {
    let dir = TestDir::new("uploads-state-in-root");
    let root = dir.subdir("root");
    for state in [root.join("state"), root.clone()] {
        let out = run_bounded(
            Command::new(SERVER)
                .args(["--listen", "127.0.0.1:0", "--root"])
                .arg(&root)
                .arg("--state-dir")
                .arg(&state),
        );
        let error = expect_one_line_error(&out);
        assert!(
            error.starts_with("sift-server: error: the state directory ")
                && error.contains("--root"),
            "{error}"
        );
        assert!(stdout_of(&out).is_empty(), "nothing served");
        assert!(
            !state.join("server-key.pem").exists(),
            "no key made where it would be served"
        );
    }
}

#[test]
fn under_null_protection_uploads_need_allow_anonymous_put() {
    let dir = TestDir::new("uploads-null");
    let root = dir.subdir("root");
    let out = run_bounded(
        Command::new(SERVER)
            .args([
                "--listen",
                "127.0.0.1:0",
                "--insecure-null-crypto",
                "--allow-put",
            ])
            .arg("--root")
            .arg(&root)
            .arg("--state-dir")
            .arg(dir.path().join("state")),
    );
    let error = expect_one_line_error(&out);
    assert!(error.contains("--allow-anonymous-put"), "{error}");

    let server = Server::start(
        &root,
        &[
            "--insecure-null-crypto",
            "--allow-put",
            "--allow-anonymous-put",
        ],
    );
    let data = content(300_000, 3);
    let source = dir.path().join("up.bin");
    std::fs::write(&source, &data).unwrap();
    let out = run_client(&[
        "put",
        source.to_str().unwrap(),
        &server.url("up.bin"),
        "--insecure-null-crypto",
    ]);
    expect_success(&out);
    assert_eq!(std::fs::read(root.join("up.bin")).unwrap(), data);
}

#[test]
fn help_tells_how_to_allow_uploads_and_authorise_a_client() {
    let server_help = run_bounded(Command::new(SERVER).arg("--help"));
    let text = expect_success(&server_help);
    for needle in [
        "--allow-put",
        "--allow-anonymous-put",
        "--max-upload-bytes",
        "authorized_clients",
        "sift-client id",
    ] {
        assert!(text.contains(needle), "sift-server --help lacks {needle}");
    }
    let client_help = run_client(&["id", "--help"]);
    assert!(expect_success(&client_help).contains("authorized_clients"));
}
