//! An echo service on sift's async API: the client sends a request on a
//! bidirectional stream, the server sends it back and finishes the
//! stream. One task per connection and one per stream, so one server
//! serves thousands of connections at once.
//!
//! ```text
//! cargo run --release --example tokio_echo -- server 127.0.0.1:5000
//! #   echo server on 127.0.0.1:5000, identity SHA256:5be1…
//! cargo run --release --example tokio_echo -- client 127.0.0.1:5000 SHA256:5be1… hello world
//! cargo run --release --example tokio_echo -- load 127.0.0.1:5000 SHA256:5be1… 1000
//! cargo run --release --example tokio_echo -- bench 100 1000
//! ```
//!
//! TLS 1.3: the server makes a throwaway self-signed certificate and prints
//! its fingerprint; clients pin it (`bench` shares one identity in-process).
//! `client` sends each word on its own stream, all at once over one
//! connection, and prints the echoes in order. `load` opens N connections
//! from one client endpoint, all of them first, then one 4 KiB echo on
//! each at once, and checks every byte. `bench` is the load benchmark: for
//! each count it starts a server as a child process (so that its memory is
//! its own), runs `load` against it, and prints handshakes per second,
//! echo completion percentiles and the server's memory per connection
//! (peak RSS above its idle RSS, over the connections it held).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use sift::crypto::{Fingerprint, ServerIdentity, ServerTrust, TlsConfig};
use sift::tokio::{Connection, Endpoint, EndpointConfig};
use sift::Config;

/// Largest request the server echoes.
const MAX_REQUEST: usize = 1 << 20;
/// Request size of `load` and `bench`.
const LOAD_REQUEST: usize = 4096;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [mode, addr] if mode == "server" => match parse_addr(addr) {
            Ok(addr) => serve(addr).await,
            Err(error) => Err(error),
        },
        [mode, addr, pin, words @ ..] if mode == "client" && !words.is_empty() => {
            match (parse_addr(addr), parse_pin(pin)) {
                (Ok(addr), Ok(trust)) => run_client(addr, trust, words).await,
                (Err(error), _) | (_, Err(error)) => Err(error),
            }
        }
        [mode, addr, pin, count] if mode == "load" => {
            match (parse_addr(addr), parse_pin(pin), parse_count(count)) {
                (Ok(addr), Ok(trust), Ok(count)) => load(addr, trust, count).await,
                (Err(error), _, _) | (_, Err(error), _) | (_, _, Err(error)) => Err(error),
            }
        }
        [mode, counts @ ..] if mode == "bench" && !counts.is_empty() => {
            match counts.iter().map(|c| parse_count(c)).collect::<Result<Vec<_>, _>>() {
                Ok(counts) => bench(&counts).await,
                Err(error) => Err(error),
            }
        }
        _ => Err(
            "usage: tokio_echo server ADDR | client ADDR SHA256:FINGERPRINT WORD... | load ADDR SHA256:FINGERPRINT CONNECTIONS | bench CONNECTIONS..."
                .to_string(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tokio_echo: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not an address like 127.0.0.1:5000"))
}

/// A client's TLS settings trusting exactly the server key `text` names.
fn parse_pin(text: &str) -> Result<TlsConfig, String> {
    let pin = text.parse::<Fingerprint>().map_err(|e| e.to_string())?;
    Ok(TlsConfig::client(ServerTrust::Pinned(vec![pin])))
}

fn parse_count(text: &str) -> Result<usize, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not a number of connections"))
}

/// An endpoint config with `tls` that holds `connections` at once, with
/// room for those still closing.
fn endpoint_config(tls: TlsConfig, server: bool, connections: usize) -> EndpointConfig {
    let config = Config {
        tls,
        ..Config::default()
    };
    EndpointConfig {
        max_connections: connections * 2 + 16,
        ..if server {
            EndpointConfig::server(config)
        } else {
            EndpointConfig::client(config)
        }
    }
}

/// Binds a server that serves until the process ends.
async fn serve(addr: SocketAddr) -> Result<(), String> {
    let identity = ServerIdentity::self_signed(&["localhost"]).map_err(|e| e.to_string())?;
    let fingerprint = identity.fingerprint();
    let config = endpoint_config(TlsConfig::server(identity), true, 10_000);
    let server = Endpoint::bind(addr, config).map_err(|e| e.to_string())?;
    eprintln!(
        "echo server on {}, identity {fingerprint}",
        server.local_addr()
    );
    serve_on(server).await;
    Ok(())
}

/// A task per connection, until the endpoint closes.
async fn serve_on(server: Endpoint) {
    while let Some(connection) = server.accept().await {
        tokio::spawn(serve_connection(connection));
    }
}

/// A task per stream, until the client closes the connection.
async fn serve_connection(connection: Connection) {
    loop {
        let (mut send, mut recv) = match connection.accept_bi().await {
            Ok(stream) => stream,
            // The client closed: the usual end.
            Err(_) => return,
        };
        tokio::spawn(async move {
            let echoed = async {
                let request = recv.read_to_end(MAX_REQUEST).await?;
                send.write_all(&request).await?;
                send.finish()?;
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            };
            if let Err(error) = echoed.await {
                eprintln!("stream {}: {error}", send.id());
            }
        });
    }
}

/// One request, its echo, and a check that they match.
async fn echo(connection: &Connection, request: &[u8]) -> Result<Vec<u8>, String> {
    let (mut send, mut recv) = connection.open_bi().await.map_err(|e| e.to_string())?;
    send.write_all(request).await.map_err(|e| e.to_string())?;
    send.finish().map_err(|e| e.to_string())?;
    let reply = recv
        .read_to_end(MAX_REQUEST)
        .await
        .map_err(|e| e.to_string())?;
    if reply != request {
        return Err(format!(
            "the echo differs: sent {} bytes, got {}",
            request.len(),
            reply.len()
        ));
    }
    Ok(reply)
}

async fn run_client(addr: SocketAddr, tls: TlsConfig, words: &[String]) -> Result<(), String> {
    let config = Config {
        tls,
        ..Config::default()
    };
    let client = Endpoint::client(unspecified(addr), config).map_err(|e| e.to_string())?;
    let connection = client
        .connect(addr, "localhost")
        .await
        .map_err(|e| e.to_string())?;
    let echoes: Vec<_> = words
        .iter()
        .map(|word| {
            let connection = connection.clone();
            let word = word.clone();
            tokio::spawn(async move { echo(&connection, word.as_bytes()).await })
        })
        .collect();
    for echoed in echoes {
        let reply = echoed.await.map_err(|e| e.to_string())??;
        println!("{}", String::from_utf8_lossy(&reply));
    }
    connection.close(0, "done");
    client.wait_idle().await;
    Ok(())
}

fn unspecified(remote: SocketAddr) -> SocketAddr {
    if remote.is_ipv6() {
        "[::]:0".parse().unwrap()
    } else {
        "0.0.0.0:0".parse().unwrap()
    }
}

/// What one `load` run measured.
struct LoadReport {
    count: usize,
    connected: Duration,
    echoed: Duration,
    /// Per-echo completion times, sorted.
    latencies: Vec<Duration>,
}

impl LoadReport {
    fn percentile_ms(&self, p: usize) -> f64 {
        let index = (self.latencies.len() * p / 100).min(self.latencies.len().saturating_sub(1));
        self.latencies
            .get(index)
            .copied()
            .unwrap_or_default()
            .as_secs_f64()
            * 1e3
    }

    fn print(&self) {
        let count = self.count;
        println!(
            "{count} connections open at once: all connected in {:.3} s ({:.0} handshakes/s); {count} echoes of {LOAD_REQUEST} B completed in {:.3} s (per echo: median {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms); every byte checked",
            self.connected.as_secs_f64(),
            count as f64 / self.connected.as_secs_f64(),
            self.echoed.as_secs_f64(),
            self.percentile_ms(50),
            self.percentile_ms(90),
            self.percentile_ms(99),
            self.percentile_ms(100),
        );
    }
}

/// `count` connections held at once, then one echo on each, all at once.
async fn load(addr: SocketAddr, tls: TlsConfig, count: usize) -> Result<(), String> {
    load_run(addr, tls, count).await?.print();
    Ok(())
}

async fn load_run(addr: SocketAddr, tls: TlsConfig, count: usize) -> Result<LoadReport, String> {
    let client = Endpoint::bind(unspecified(addr), endpoint_config(tls, false, count))
        .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let connects: Vec<_> = (0..count)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.connect(addr, "localhost").await })
        })
        .collect();
    let mut connections = Vec::with_capacity(count);
    for connect in connects {
        connections.push(
            connect
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?,
        );
    }
    let connected = started.elapsed();

    let echo_started = Instant::now();
    let echoes: Vec<_> = connections
        .iter()
        .enumerate()
        .map(|(index, connection)| {
            let connection = connection.clone();
            tokio::spawn(async move {
                let request = vec![index as u8; LOAD_REQUEST];
                let sent = Instant::now();
                echo(&connection, &request).await?;
                Ok::<Duration, String>(sent.elapsed())
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(count);
    for echoed in echoes {
        latencies.push(echoed.await.map_err(|e| e.to_string())??);
    }
    let echoed = echo_started.elapsed();
    for connection in &connections {
        connection.close(0, "done");
    }
    client.wait_idle().await;
    latencies.sort_unstable();
    Ok(LoadReport {
        count,
        connected,
        echoed,
        latencies,
    })
}

/// A kernel memory figure of process `pid` (`VmRSS`, `VmHWM`), in KiB.
fn memory_kib(pid: u32, field: &str) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("cannot read the server's memory: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {field} in /proc/{pid}/status"))
}

/// The load benchmark: for each count, a fresh server process, `load`
/// against it, and the server's memory per connection.
async fn bench(counts: &[usize]) -> Result<(), String> {
    use std::io::BufRead;
    use std::process::{Command, Stdio};

    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    for &count in counts {
        let mut server = Command::new(&exe)
            .args(["server", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start the server: {e}"))?;
        let pid = server.id();
        let mut banner = String::new();
        let stderr = server.stderr.take().ok_or("no server stderr")?;
        std::io::BufReader::new(stderr)
            .read_line(&mut banner)
            .map_err(|e| e.to_string())?;
        // "echo server on ADDR, identity SHA256:…"
        let mut words = banner.split_whitespace().skip(3);
        let addr = words
            .next()
            .map(|a| a.trim_end_matches(','))
            .ok_or_else(|| format!("no address in {banner:?}"))
            .and_then(parse_addr)?;
        let pin = words
            .nth(1)
            .ok_or_else(|| format!("no identity in {banner:?}"))
            .and_then(parse_pin)?;
        let idle = memory_kib(pid, "VmRSS")?;
        let result = load_run(addr, pin, count).await;
        let peak = memory_kib(pid, "VmHWM");
        let _ = server.kill();
        let _ = server.wait();
        let report = result?;
        let peak = peak?;
        report.print();
        println!(
            "  server memory: {:.1} MiB idle, {:.1} MiB peak: {:.1} KiB per connection",
            idle as f64 / 1024.0,
            peak as f64 / 1024.0,
            peak.saturating_sub(idle) as f64 / count as f64,
        );
    }
    Ok(())
}
