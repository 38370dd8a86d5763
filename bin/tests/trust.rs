//! Server identity and client trust as a user meets them: the server makes
//! and keeps its key, the client remembers it on first contact (ssh-like),
//! and a changed key or a wrong pin ends the client with one clear line.
//! Every run uses its own state directory and known-hosts file.

mod common;

use common::*;

fn known_hosts_arg(path: &std::path::Path) -> String {
    format!("--known-hosts={}", path.display())
}

#[test]
fn the_server_keeps_its_identity_across_restarts() {
    let dir = TestDir::new("identity");
    let root = dir.subdir("root");
    let state = dir.path().join("state");
    let first = Server::start_in(&root, &[], &state);
    assert!(
        first.fingerprint.starts_with("SHA256:"),
        "{}",
        first.fingerprint
    );
    let fingerprint = first.fingerprint.clone();
    drop(first);
    let again = Server::start_in(&root, &[], &state);
    assert_eq!(again.fingerprint, fingerprint);
}

#[test]
fn first_contact_is_stored_in_one_line_and_later_contacts_are_silent() {
    let dir = TestDir::new("tofu");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let server = Server::start(dir.path(), &[]);
    let known_hosts = dir.path().join("client/known_hosts");
    let arg = known_hosts_arg(&known_hosts);

    let out = run_client(&["ls", &server.url(""), &arg]);
    expect_success(&out);
    assert_eq!(
        stderr_of(&out).trim(),
        format!(
            "sift-client: first contact with {}: stored its key {} in {}",
            server.addr,
            server.fingerprint,
            known_hosts.display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(&known_hosts).unwrap(),
        format!("{} {}\n", server.addr, server.fingerprint)
    );

    let out = run_client(&["ls", &server.url(""), &arg]);
    expect_success(&out);
    assert_eq!(stderr_of(&out), "", "nothing to say the second time");
}

#[test]
fn a_changed_key_is_refused_naming_both_fingerprints_and_the_line() {
    let dir = TestDir::new("changed");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let server = Server::start(dir.path(), &[]);
    // What the client saw before the server was re-keyed: another key.
    let before = Server::start(dir.path(), &[]).fingerprint.clone();
    let known_hosts = dir.path().join("known_hosts");
    std::fs::write(&known_hosts, format!("# mine\n{} {before}\n", server.addr)).unwrap();

    let out = run_client(&["ls", &server.url(""), &known_hosts_arg(&known_hosts)]);
    let error = expect_one_line_error(&out);
    assert!(
        error.starts_with(&format!(
            "sift-client: error: the key of {} has changed",
            server.addr
        )),
        "{error}"
    );
    for needed in [
        before.clone(),
        server.fingerprint.clone(),
        format!("remove line 2 of {}", known_hosts.display()),
    ] {
        assert!(error.contains(&needed), "{needed} missing from: {error}");
    }
    assert_eq!(out.status.code(), Some(1));
    // The file is left as it was.
    assert_eq!(
        std::fs::read_to_string(&known_hosts).unwrap(),
        format!("# mine\n{} {before}\n", server.addr)
    );
}

#[test]
fn a_wrong_pin_is_refused_in_one_line_and_the_right_one_works() {
    let dir = TestDir::new("pin");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let server = Server::start(dir.path(), &[]);
    let other = Server::start(dir.path(), &[]);
    let out = run_client(&["ls", &server.url(""), &other.pin(), NO_KNOWN_HOSTS]);
    let error = expect_one_line_error(&out);
    assert!(
        error.contains(&format!(
            "{} presented {}, which matches no --pin ({})",
            server.addr, server.fingerprint, other.fingerprint
        )),
        "{error}"
    );
    assert!(!out.status.success());
    // The same pin in openssl's colon form.
    let hex = server.fingerprint.trim_start_matches("SHA256:");
    let colons: Vec<String> = hex
        .as_bytes()
        .chunks(2)
        .map(|pair| String::from_utf8_lossy(pair).to_uppercase())
        .collect();
    let out = run_client(&[
        "ls",
        &server.url(""),
        &format!("--pin={}", colons.join(":")),
        NO_KNOWN_HOSTS,
    ]);
    expect_success(&out);
}

#[test]
fn a_ca_bundle_trusts_a_server_by_name() {
    let dir = TestDir::new("ca");
    let root = dir.subdir("root");
    std::fs::write(root.join("f"), b"x").unwrap();
    let state = dir.path().join("state");
    let cert = state.join("server-cert.pem");
    // The state beside the root: a server refuses to serve its own state.
    let server = Server::start_in(&root, &[], &state);
    // The self-signed certificate names localhost: it is its own root.
    let url = format!("sift://localhost:{}/", server.addr.port());
    let out = run_client(&[
        "ls",
        &url,
        &format!("--ca={}", cert.display()),
        NO_KNOWN_HOSTS,
    ]);
    expect_success(&out);
    // The same root does not vouch for another name.
    let url = format!("sift://127.0.0.1:{}/", server.addr.port());
    let out = run_client(&[
        "ls",
        &url,
        &format!("--ca={}", cert.display()),
        NO_KNOWN_HOSTS,
    ]);
    let error = expect_one_line_error(&out);
    assert!(error.contains("certificate"), "{error}");
}
