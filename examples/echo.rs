//! An echo service on sift's blocking API: one request per bidirectional
//! stream, the server sends back what it read and finishes the stream.
//!
//! ```text
//! cargo run --example echo -- server 127.0.0.1:5000
//! #   echo server on 127.0.0.1:5000, identity SHA256:5be1…
//! cargo run --example echo -- client 127.0.0.1:5000 SHA256:5be1… hello world
//! ```
//!
//! TLS 1.3: the server makes a throwaway self-signed certificate and prints
//! its fingerprint; the client pins it. The client sends each word on its
//! own stream (all at once, so they run concurrently over one connection)
//! and prints the echoes in order.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::thread;

use sift::blocking::{self, BlockingConnection, Listener, SiftIoError};
use sift::crypto::{Fingerprint, ServerIdentity, ServerTrust, TlsConfig};
use sift::Config;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [mode, addr, rest @ ..] if mode == "server" && rest.is_empty() => {
            parse_addr(addr).and_then(serve)
        }
        [mode, addr, pin, words @ ..] if mode == "client" && !words.is_empty() => {
            let pin = pin.parse::<Fingerprint>().map_err(|e| e.to_string());
            parse_addr(addr).and_then(|addr| run_client(addr, pin?, words))
        }
        _ => {
            Err("usage: echo server ADDR | echo client ADDR SHA256:FINGERPRINT WORD...".to_string())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("echo: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    text.parse()
        .map_err(|_| format!("'{text}' is not an address like 127.0.0.1:5000"))
}

/// Accepts clients forever; a thread per connection, a thread per stream.
fn serve(addr: SocketAddr) -> Result<(), String> {
    let identity = ServerIdentity::self_signed(&["localhost"]).map_err(|e| e.to_string())?;
    let fingerprint = identity.fingerprint();
    let config = Config {
        tls: TlsConfig::server(identity),
        ..Config::default()
    };
    let listener = Listener::bind(addr, config).map_err(|e| e.to_string())?;
    eprintln!(
        "echo server on {}, identity {fingerprint}",
        listener.local_addr()
    );
    loop {
        let connection = listener.accept().map_err(|e| e.to_string())?;
        eprintln!("client {}", connection.remote_addr());
        thread::spawn(move || serve_connection(connection));
    }
}

fn serve_connection(connection: BlockingConnection) {
    loop {
        match connection.accept_bi() {
            Ok(mut stream) => {
                thread::spawn(move || {
                    let mut request = Vec::new();
                    let echoed = stream
                        .read_to_end(&mut request)
                        .and_then(|_| stream.write_all(&request))
                        .map_err(SiftIoError::from)
                        .and_then(|()| stream.finish());
                    if let Err(error) = echoed {
                        eprintln!("stream {}: {error}", stream.id());
                    }
                });
            }
            Err(error) => {
                eprintln!("client {} left: {error}", connection.remote_addr());
                return;
            }
        }
    }
}

fn run_client(addr: SocketAddr, pin: Fingerprint, words: &[String]) -> Result<(), String> {
    let config = Config {
        tls: TlsConfig::client(ServerTrust::Pinned(vec![pin])),
        ..Config::default()
    };
    let connection = blocking::connect(addr, config).map_err(|e| e.to_string())?;
    let mut streams = Vec::new();
    for word in words {
        let mut stream = connection.open_bi().map_err(|e| e.to_string())?;
        stream
            .write_all(word.as_bytes())
            .map_err(|e| e.to_string())?;
        stream.finish().map_err(|e| e.to_string())?;
        streams.push(stream);
    }
    for mut stream in streams {
        let mut echo = String::new();
        stream
            .read_to_string(&mut echo)
            .map_err(|e| format!("stream {}: {e}", stream.id()))?;
        println!("{echo}");
    }
    let stats = connection.stats();
    eprintln!(
        "{} packets sent, {} received, srtt {} µs",
        stats.packets_sent, stats.packets_received, stats.srtt_us
    );
    connection.close(0, "bye");
    Ok(())
}
