//! A small key–value store on sift's async API: requests and answers on
//! streams (reliable, one stream per request), change notifications as
//! datagrams (unreliable: a watcher that misses one still sees the next,
//! which carries the newer version, and can always ask with `get`).
//!
//! ```text
//! cargo run --example tokio_kv -- server 127.0.0.1:5001
//! #   key-value server on 127.0.0.1:5001, identity SHA256:5be1…
//! cargo run --example tokio_kv -- watch 127.0.0.1:5001 SHA256:5be1… 2   # waits for 2 changes
//! cargo run --example tokio_kv -- put 127.0.0.1:5001 SHA256:5be1… color blue
//! cargo run --example tokio_kv -- get 127.0.0.1:5001 SHA256:5be1… color
//! cargo run --example tokio_kv -- del 127.0.0.1:5001 SHA256:5be1… color
//! ```
//!
//! TLS 1.3: the server makes a throwaway self-signed certificate and prints
//! its fingerprint; clients pin it.
//!
//! The protocol, in UTF-8 text:
//! - a request is one bidirectional stream: `GET key`, `PUT key value` or
//!   `DEL key`, then the end of the stream; the answer on the same stream
//!   is `VALUE version value`, `STORED version`, `DELETED version`,
//!   `NOT_FOUND` or `ERROR message`, then the end of the stream;
//! - after every change the server sends each connected client a datagram
//!   `CHANGED key version` (`version` counts the key's changes).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use sift::crypto::{Fingerprint, ServerIdentity, ServerTrust, TlsConfig};
use sift::tokio::{Connection, Endpoint};
use sift::Config;

/// Largest request or answer, in bytes.
const MAX_MESSAGE: usize = 64 * 1024;

/// The store: each key's value (absent once deleted) and how often it
/// changed, so notifications can be ordered by the watcher.
#[derive(Default)]
struct Store {
    entries: HashMap<String, (u64, Option<String>)>,
    /// Clients to notify of changes.
    watchers: Vec<Connection>,
}

type Shared = Arc<Mutex<Store>>;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = run(&args).await;
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tokio_kv: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &[String]) -> Result<(), String> {
    let usage = "usage: tokio_kv server ADDR | get ADDR PIN KEY | put ADDR PIN KEY VALUE | del ADDR PIN KEY | watch ADDR PIN COUNT (PIN: the server's SHA256:… fingerprint)";
    let [mode, addr, rest @ ..] = args else {
        return Err(usage.to_string());
    };
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an address like 127.0.0.1:5001"))?;
    if let ("server", []) = (mode.as_str(), rest) {
        return serve(addr).await;
    }
    let [pin, rest @ ..] = rest else {
        return Err(usage.to_string());
    };
    let pin = pin.parse::<Fingerprint>().map_err(|e| e.to_string())?;
    let server = Server { addr, pin };
    match (mode.as_str(), rest) {
        ("get", [key]) => request(&server, &format!("GET {key}")).await,
        ("put", [key, value @ ..]) if !value.is_empty() => {
            request(&server, &format!("PUT {key} {}", value.join(" "))).await
        }
        ("del", [key]) => request(&server, &format!("DEL {key}")).await,
        ("watch", [count]) => {
            let count = count
                .parse()
                .map_err(|_| format!("'{count}' is not a number of changes"))?;
            watch(&server, count).await
        }
        _ => Err(usage.to_string()),
    }
}

/// Where a client finds the server, and the key it must hold.
struct Server {
    addr: SocketAddr,
    pin: Fingerprint,
}

async fn serve(addr: SocketAddr) -> Result<(), String> {
    let identity = ServerIdentity::self_signed(&["localhost"]).map_err(|e| e.to_string())?;
    let fingerprint = identity.fingerprint();
    let config = Config {
        tls: TlsConfig::server(identity),
        ..Config::default()
    };
    let server = Endpoint::server(addr, config).map_err(|e| e.to_string())?;
    eprintln!(
        "key-value server on {}, identity {fingerprint}",
        server.local_addr()
    );
    let store = Shared::default();
    while let Some(connection) = server.accept().await {
        store
            .lock()
            .map_err(|_| "store poisoned")?
            .watchers
            .push(connection.clone());
        tokio::spawn(serve_connection(connection, Arc::clone(&store)));
    }
    Ok(())
}

/// A task per request stream, until the client closes.
async fn serve_connection(connection: Connection, store: Shared) {
    while let Ok((mut send, mut recv)) = connection.accept_bi().await {
        let store = Arc::clone(&store);
        tokio::spawn(async move {
            let answer = match recv.read_to_end(MAX_MESSAGE).await {
                Ok(request) => apply(&store, &String::from_utf8_lossy(&request)),
                Err(error) => format!("ERROR {error}"),
            };
            if send.write_all(answer.as_bytes()).await.is_ok() {
                let _ = send.finish();
            }
        });
    }
    if let Ok(mut store) = store.lock() {
        store.watchers.retain(|c| c.close_reason().is_none());
    }
}

/// Runs one request against the store and notifies watchers of a change.
fn apply(store: &Shared, request: &str) -> String {
    let Ok(mut store) = store.lock() else {
        return "ERROR the store is unavailable".to_string();
    };
    let mut words = request.splitn(3, ' ');
    let (verb, key, value) = (words.next(), words.next(), words.next());
    let (answer, changed) = match (verb, key, value) {
        (Some("GET"), Some(key), None) => match store.entries.get(key) {
            Some((version, Some(value))) => (format!("VALUE {version} {value}"), None),
            _ => ("NOT_FOUND".to_string(), None),
        },
        (Some("PUT"), Some(key), Some(value)) => {
            let entry = store.entries.entry(key.to_string()).or_default();
            entry.0 += 1;
            entry.1 = Some(value.to_string());
            (format!("STORED {}", entry.0), Some((key, entry.0)))
        }
        (Some("DEL"), Some(key), None) => match store.entries.get_mut(key) {
            Some(entry) if entry.1.is_some() => {
                entry.0 += 1;
                entry.1 = None;
                (format!("DELETED {}", entry.0), Some((key, entry.0)))
            }
            _ => ("NOT_FOUND".to_string(), None),
        },
        _ => (format!("ERROR cannot parse '{request}'"), None),
    };
    if let Some((key, version)) = changed {
        let notice = format!("CHANGED {key} {version}");
        for watcher in &store.watchers {
            // Unreliable by design: a lost or refused notice is not an error.
            let _ = watcher.send_datagram(notice.as_bytes());
        }
    }
    answer
}

async fn connect(server: &Server) -> Result<(Endpoint, Connection), String> {
    let addr = server.addr;
    let local = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let config = Config {
        tls: TlsConfig::client(ServerTrust::Pinned(vec![server.pin])),
        ..Config::default()
    };
    let client = Endpoint::client(local.parse().unwrap(), config).map_err(|e| e.to_string())?;
    let connection = client
        .connect(addr, "localhost")
        .await
        .map_err(|e| e.to_string())?;
    Ok((client, connection))
}

/// Sends one request and prints the answer.
async fn request(server: &Server, request: &str) -> Result<(), String> {
    let (client, connection) = connect(server).await?;
    let (mut send, mut recv) = connection.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    let answer = recv
        .read_to_end(MAX_MESSAGE)
        .await
        .map_err(|e| e.to_string())?;
    println!("{}", String::from_utf8_lossy(&answer));
    connection.close(0, "done");
    client.wait_idle().await;
    Ok(())
}

/// Prints the next `count` change notifications.
async fn watch(server: &Server, count: usize) -> Result<(), String> {
    let (client, connection) = connect(server).await?;
    eprintln!("watching {} for {count} changes", server.addr);
    for _ in 0..count {
        let notice = connection
            .read_datagram()
            .await
            .map_err(|e| e.to_string())?;
        println!("{}", String::from_utf8_lossy(&notice));
    }
    connection.close(0, "done");
    client.wait_idle().await;
    Ok(())
}
