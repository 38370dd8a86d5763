//! A small key–value store on sift's async API: requests and answers on
//! streams (reliable, one stream per request), change notifications as
//! datagrams (unreliable: a watcher that misses one still sees the next,
//! which carries the newer version, and can always ask with `get`).
//!
//! ```text
//! cargo run --example tokio_kv -- server 127.0.0.1:5001
//! cargo run --example tokio_kv -- watch 127.0.0.1:5001 2      # waits for 2 changes
//! cargo run --example tokio_kv -- put 127.0.0.1:5001 color blue
//! cargo run --example tokio_kv -- get 127.0.0.1:5001 color
//! cargo run --example tokio_kv -- del 127.0.0.1:5001 color
//! ```
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
    let usage = "usage: tokio_kv server ADDR | get ADDR KEY | put ADDR KEY VALUE | del ADDR KEY | watch ADDR COUNT";
    let [mode, addr, rest @ ..] = args else {
        return Err(usage.to_string());
    };
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| format!("'{addr}' is not an address like 127.0.0.1:5001"))?;
    match (mode.as_str(), rest) {
        ("server", []) => serve(addr).await,
        ("get", [key]) => request(addr, &format!("GET {key}")).await,
        ("put", [key, value @ ..]) if !value.is_empty() => {
            request(addr, &format!("PUT {key} {}", value.join(" "))).await
        }
        ("del", [key]) => request(addr, &format!("DEL {key}")).await,
        ("watch", [count]) => {
            let count = count
                .parse()
                .map_err(|_| format!("'{count}' is not a number of changes"))?;
            watch(addr, count).await
        }
        _ => Err(usage.to_string()),
    }
}

async fn serve(addr: SocketAddr) -> Result<(), String> {
    let server = Endpoint::server(addr, Config::default()).map_err(|e| e.to_string())?;
    eprintln!(
        "key-value server on {} (insecure Null protection)",
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

async fn connect(addr: SocketAddr) -> Result<(Endpoint, Connection), String> {
    let local = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let client =
        Endpoint::client(local.parse().unwrap(), Config::default()).map_err(|e| e.to_string())?;
    let connection = client
        .connect(addr, "localhost")
        .await
        .map_err(|e| e.to_string())?;
    Ok((client, connection))
}

/// Sends one request and prints the answer.
async fn request(addr: SocketAddr, request: &str) -> Result<(), String> {
    let (client, connection) = connect(addr).await?;
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
async fn watch(addr: SocketAddr, count: usize) -> Result<(), String> {
    let (client, connection) = connect(addr).await?;
    eprintln!("watching {addr} for {count} changes");
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
