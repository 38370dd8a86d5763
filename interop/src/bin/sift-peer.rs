//! sift speaking the baseline's request protocol (`baseline::protocol`,
//! ALPN `sift-interop/1`) through its blocking API, so that quiche and sift
//! talk to each other over QUIC v1: `sift-peer serve` answers quiche-client,
//! `sift-peer get` fetches from quiche-server. The wire interop proof of the
//! QUIC v1 issue; the interop matrix (hq-interop, HTTP/3) builds on it.

use std::io::{Read, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Parser, Subcommand};
use sift::blocking::{connect, Listener};
use sift::crypto::{ServerIdentity, ServerTrust, TlsConfig};
use sift::Config;
use sift_interop::baseline::protocol::{self, Request, ALPN};
use sift_interop::baseline::tls::Certificate;

#[derive(Parser)]
#[command(about = "sift speaking the interop baseline's protocol to QUIC peers")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve files under --root, one GET per bidirectional stream.
    Serve {
        #[arg(long, default_value = "127.0.0.1:4433")]
        listen: SocketAddr,
        #[arg(long)]
        root: PathBuf,
        /// Where the self-signed certificate (cert.pem) is written, for
        /// clients to trust.
        #[arg(long)]
        cert_dir: PathBuf,
        /// Versions to speak, most preferred first: sift/1, v1.
        #[arg(long, value_delimiter = ',', default_value = "sift/1,v1")]
        versions: Vec<String>,
    },
    /// Download quic://HOST:PORT/PATH and print one JSON line.
    Get {
        url: String,
        #[arg(short, long)]
        output: PathBuf,
        /// Trust this PEM certificate (the server's, or its CA).
        #[arg(long)]
        ca: PathBuf,
        /// Versions to speak, most preferred first: sift/1, v1.
        #[arg(long, value_delimiter = ',', default_value = "sift/1,v1")]
        versions: Vec<String>,
    },
}

fn versions(names: &[String]) -> anyhow::Result<Vec<u32>> {
    names
        .iter()
        .map(|name| match name.as_str() {
            "sift/1" | "sift" => Ok(sift::wire::VERSION),
            "v1" | "quic" => Ok(sift::wire::QUIC_V1),
            other => bail!("unknown version {other:?} (sift/1 or v1)"),
        })
        .collect()
}

fn main() -> anyhow::Result<()> {
    match Args::parse().command {
        Command::Serve {
            listen,
            root,
            cert_dir,
            versions: names,
        } => serve(listen, root, cert_dir, versions(&names)?),
        Command::Get {
            url,
            output,
            ca,
            versions: names,
        } => get(&url, &output, &ca, versions(&names)?),
    }
}

fn serve(
    listen: SocketAddr,
    root: PathBuf,
    cert_dir: PathBuf,
    versions: Vec<u32>,
) -> anyhow::Result<()> {
    // The baseline's certificate (ECDSA P-256, which every TLS stack
    // verifies), presented through sift's own identity type.
    let certificate = Certificate::generate(&cert_dir)?;
    let identity = ServerIdentity::from_pem(
        &std::fs::read(&certificate.cert_pem)?,
        &std::fs::read(&certificate.key_pem)?,
    )
    .context("the baseline's certificate")?;
    let config = Config {
        tls: TlsConfig {
            alpn_protocols: vec![ALPN.to_vec()],
            identity: Some(identity),
            ..TlsConfig::default()
        },
        versions,
        ..Config::default()
    };
    let listener = Listener::bind(listen, config).context("bind")?;
    println!("listening on {}", listener.local_addr());
    loop {
        let connection = listener.accept().context("accept")?;
        let root = root.clone();
        std::thread::spawn(move || {
            while let Ok(mut stream) = connection.accept_bi() {
                let mut request = Vec::new();
                if stream.read_to_end(&mut request).is_err() {
                    break;
                }
                let answer = Request::parse(&request)
                    .map_err(|error| error.to_string())
                    .and_then(|request| match request {
                        Request::Get(path) => protocol::resolve(&root, &path)
                            .map_err(|error| error.to_string())
                            .and_then(|file| std::fs::read(file).map_err(|e| e.to_string())),
                        Request::Stats => {
                            let stats = connection.stats();
                            serde_json::to_vec(&protocol::SenderCounters {
                                retransmitted_packets: stats.retransmitted_packets,
                                lost_packets: stats.packets_lost,
                                ptos: stats.ptos,
                                srtt_us: stats.srtt_us,
                                cwnd: stats.cwnd,
                            })
                            .map_err(|e| e.to_string())
                        }
                    });
                let written = match answer {
                    Ok(bytes) => stream
                        .write_all(&protocol::ok_header(bytes.len() as u64))
                        .and_then(|()| stream.write_all(&bytes)),
                    Err(reason) => stream.write_all(&protocol::err_header(&reason)),
                };
                let _ = written
                    .map_err(std::io::Error::other)
                    .and_then(|()| stream.finish_and_wait().map_err(std::io::Error::other));
            }
            let stats = connection.stats();
            println!(
                "client={} closed: version {}, sent {} packets, lost {}",
                connection.remote_addr(),
                stats.version,
                stats.packets_sent,
                stats.packets_lost
            );
        });
    }
}

fn get(url: &str, output: &PathBuf, ca: &PathBuf, versions: Vec<u32>) -> anyhow::Result<()> {
    let rest = url
        .strip_prefix("quic://")
        .context("the URL must start with quic://")?;
    let (authority, path) = rest.split_once('/').context("no path in the URL")?;
    let remote = authority
        .to_socket_addrs()?
        .next()
        .context("the host does not resolve")?;
    let trust = ServerTrust::roots_from_pem(&std::fs::read(ca)?).context("--ca")?;
    let config = Config {
        tls: TlsConfig {
            alpn_protocols: vec![ALPN.to_vec()],
            trust: Some(trust),
            server_name: Some("localhost".into()),
            ..TlsConfig::default()
        },
        versions,
        ..Config::default()
    };
    let started = Instant::now();
    let connection = connect(remote, config).context("connect")?;
    let mut stream = connection.open_bi()?;
    stream.write_all(&Request::Get(path.to_string()).encode())?;
    stream.finish()?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let (size, header_len) =
        protocol::parse_response_header(&response)?.context("no response header")?;
    let body = &response[header_len..];
    if body.len() as u64 != size {
        bail!("the server announced {size} bytes and sent {}", body.len());
    }
    std::fs::write(output, body)?;
    let seconds = started.elapsed().as_secs_f64();
    let stats = connection.stats();
    connection.close(0, "done");
    let digest = ring::digest::digest(&ring::digest::SHA256, body);
    let sha256: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    println!(
        "{}",
        serde_json::json!({
            "bytes": body.len(),
            "sha256": sha256,
            "version": stats.version,
            "corruption_notices": stats.corruption_notices_negotiated,
            "completion_s": seconds,
        })
    );
    Ok(())
}
