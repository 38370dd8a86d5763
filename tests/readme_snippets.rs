//! README.md's library snippets, compiled: each function below holds one
//! snippet between `// README begin` and `// README end`, and
//! `readme_shows_these_snippets` checks that the README's ```rust blocks are
//! exactly those lines, in order. The functions are never run (they would
//! need a server); compiling them is the point.
#![cfg(all(target_os = "linux", feature = "tokio"))]

type Outcome = Result<(), Box<dyn std::error::Error>>;

#[allow(dead_code)]
async fn tokio_client() -> Outcome {
    // README begin
    use sift::crypto::{ServerTrust, TlsConfig};
    use sift::tokio::Endpoint;

    let pin = "SHA256:…".parse()?;
    let config = sift::Config {
        tls: TlsConfig::client(ServerTrust::Pinned(vec![pin])),
        ..Default::default()
    };
    let client = Endpoint::client("0.0.0.0:0".parse()?, config)?;
    let connection = client
        .connect("127.0.0.1:4433".parse()?, "localhost")
        .await?;
    let (mut send, mut recv) = connection.open_bi().await?;
    send.write_all(b"hello").await?;
    send.finish()?;
    let reply = recv.read_to_end(64 * 1024).await?;
    connection.send_datagram(b"unreliable, unordered")?;
    // README end
    let _ = reply;
    Ok(())
}

#[allow(dead_code)]
fn blocking_server_and_client() -> Outcome {
    // README begin
    use sift::crypto::{ServerIdentity, ServerTrust, TlsConfig};
    use std::io::{Read, Write};

    let identity = ServerIdentity::self_signed(&["localhost"])?;
    let fingerprint = identity.fingerprint(); // give this to clients
    let server = sift::Config {
        tls: TlsConfig::server(identity),
        ..Default::default()
    };
    let _listener = sift::blocking::Listener::bind("127.0.0.1:4433".parse()?, server)?;

    let client = sift::Config {
        tls: TlsConfig::client(ServerTrust::Pinned(vec![fingerprint])),
        ..Default::default()
    };
    let conn = sift::blocking::connect("127.0.0.1:4433".parse()?, client)?;
    let mut stream = conn.open_bi()?;
    stream.write_all(b"hello")?;
    stream.finish()?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    // README end
    Ok(())
}

/// The snippets between the markers of this file, each dedented by the
/// marker's indentation.
fn snippets_here() -> Vec<Vec<String>> {
    let source = include_str!("readme_snippets.rs");
    let mut snippets = Vec::new();
    let mut current: Option<(usize, Vec<String>)> = None;
    for line in source.lines() {
        let trimmed = line.trim_start();
        if trimmed == concat!("// README ", "begin") {
            current = Some((line.len() - trimmed.len(), Vec::new()));
        } else if trimmed == concat!("// README ", "end") {
            snippets.extend(current.take().map(|(_, lines)| lines));
        } else if let Some((indent, lines)) = current.as_mut() {
            lines.push(line.get(*indent..).unwrap_or("").to_string());
        }
    }
    snippets
}

/// The README's ```rust blocks.
fn snippets_in_readme() -> Vec<Vec<String>> {
    let readme = include_str!("../README.md");
    let mut snippets = Vec::new();
    let mut current: Option<Vec<String>> = None;
    for line in readme.lines() {
        if current.is_none() && line.starts_with("```rust") {
            current = Some(Vec::new());
        } else if line == "```" {
            snippets.extend(current.take());
        } else if let Some(lines) = current.as_mut() {
            lines.push(line.to_string());
        }
    }
    snippets
}

#[test]
fn readme_shows_these_snippets() {
    let here = snippets_here();
    assert_eq!(here.len(), 2, "this file marks two snippets");
    assert_eq!(
        snippets_in_readme(),
        here,
        "README.md's ```rust blocks must be the compiled snippets of tests/readme_snippets.rs"
    );
}
