//! A client that asks and never makes room: it opens STREAMS bidirectional
//! streams to a `sift-server`, sends a GET for PATH on each, grants the
//! server no flow-control credit at all (connection and stream windows of
//! 0) and holds the connection open for HOLD seconds without reading.
//! What the server keeps for it meanwhile is the memory such a peer can
//! pin (SECURITY.md, "Memory a peer can pin").
//!
//! ```text
//! sift-server --listen 127.0.0.1:4433 --root DIR --insecure-null-crypto &
//! cargo run --release -p sift-bin --example stingy_client -- 127.0.0.1:4433 /big 100 10
//! grep -E 'VmRSS|Threads' /proc/$(pgrep -n sift-server)/status
//! ```
//!
//! Null protection only (the server must run with `--insecure-null-crypto`):
//! a measurement tool, not a client.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use sift::blocking;
use sift::conn::Protection;
use sift::Config;
use sift_bin::transfer::request::Request;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("stingy_client: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [addr, path, streams, hold] = args else {
        return Err("usage: stingy_client ADDR PATH STREAMS HOLD_SECONDS".to_string());
    };
    let addr: SocketAddr = addr.parse().map_err(|e| format!("{addr}: {e}"))?;
    let streams: usize = streams.parse().map_err(|e| format!("{streams}: {e}"))?;
    let hold: u64 = hold.parse().map_err(|e| format!("{hold}: {e}"))?;
    let mut config = Config {
        protection: Protection::Null,
        ..Config::default()
    };
    config.streams.initial_max_data = 0;
    config.streams.initial_max_stream_data = 0;
    config.idle_timeout = Duration::from_secs(hold + 30);
    let connection = blocking::connect(addr, config).map_err(|e| e.to_string())?;
    let request = Request::Get {
        path: path.clone(),
        offset: 0,
        cc: None,
    }
    .encode()
    .map_err(|e| e.to_string())?;
    let mut open = Vec::with_capacity(streams);
    for _ in 0..streams {
        let mut stream = connection.open_bi().map_err(|e| e.to_string())?;
        stream.write_all(&request).map_err(|e| e.to_string())?;
        stream.finish().map_err(|e| e.to_string())?;
        open.push(stream);
    }
    eprintln!("stingy_client: {streams} GETs of {path} open, holding {hold} s without credit");
    std::thread::sleep(Duration::from_secs(hold));
    connection.close(0, "done");
    Ok(())
}
