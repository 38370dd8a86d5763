//! The command lines, written once: what every stack's peer takes for
//! each protocol, and how its binary ends. A stack's binary flattens
//! these and adds what only it has (sift's `--versions`, quinn's
//! `--cc-log`), so the runners start every stack the same way.
//!
//! - file protocol: `*-server --listen ADDR --root DIR [--cc NAME]
//!   [--cert-dir DIR] [--max-datagram BYTES]` ([`FileServerArgs`]) and
//!   `*-client get quic://HOST:PORT/PATH [-o FILE] (--ca PEM |
//!   --insecure-no-verify) [--cc NAME] [--server-name NAME] [--json]
//!   [--max-datagram BYTES]` ([`FileClientCommand`]);
//! - hq-interop: `*-hq server ...` and `*-hq client URL... --output-dir
//!   DIR (--ca PEM | --insecure) [case options] [--json]` ([`HqCommand`]);
//! - HTTP/3: `*-h3-server --listen ADDR --root DIR [--cert PEM --key PEM]`
//!   ([`ServeArgs`]) and `*-h3-client URL... --output-dir DIR (--ca PEM |
//!   --insecure) [--server-name NAME] [--json]` ([`H3ClientArgs`]).
//!
//! Servers print `listening on ADDR` once bound (port 0 picks one);
//! clients exit 0 only when every file came whole.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, CommandFactory, FromArgMatches, Subcommand};

use super::hq::{ClientOptions, ClientReport};
use super::settings::{parse_max_datagram, MAX_DATAGRAM_SIZE};
use super::url::{self, HTTPS};

/// Ends a binary: success, or `PROGRAM: error: WHY` (the whole chain of
/// causes on one line) and a failure status.
pub fn exit(program: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{program}: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Parses the command line with every `--cc`'s help ending in the names
/// the stack takes (`controllers`, the list its configuration refuses
/// other names with), so that the help and the stack cannot disagree.
pub fn parse_naming_controllers<T: CommandFactory + FromArgMatches>(controllers: &[&str]) -> T {
    let command = name_controllers(T::command(), &controllers.join(", "));
    let matches = command.get_matches();
    T::from_arg_matches(&matches).unwrap_or_else(|error| error.exit())
}

fn name_controllers(mut command: clap::Command, names: &str) -> clap::Command {
    if command.get_arguments().any(|arg| arg.get_id() == "cc") {
        command = command.mut_arg("cc", |arg| {
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            let help = format!("{}: {names}", help.trim_end_matches('.'));
            arg.help(help)
        });
    }
    let subcommands: Vec<String> = command
        .get_subcommands()
        .map(|sub| sub.get_name().to_string())
        .collect();
    for name in subcommands {
        command = command.mut_subcommand(name, |sub| name_controllers(sub, names));
    }
    command
}

/// A file-protocol server (`quiche-server`, `quinn-server`).
#[derive(Args, Debug)]
pub struct FileServerArgs {
    /// Address and UDP port to listen on.
    #[arg(long, default_value = "0.0.0.0:4433")]
    pub listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Congestion controller for the data the server sends.
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    pub cc: String,
    /// Where to write the certificate (cert.pem) and key (key.pem)
    /// [default: a new directory under the system's temp dir].
    #[arg(long, value_name = "DIR")]
    pub cert_dir: Option<PathBuf>,
    /// The largest UDP payload, both ways, 1200 to 8972 bytes. 1350 (the
    /// links' size) by default; loopback carries 8972, which sift's path
    /// MTU discovery reaches there, and sift-compare asks for it on
    /// loopback.
    #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM_SIZE, value_parser = parse_max_datagram)]
    pub max_datagram: usize,
}

impl FileServerArgs {
    /// `--cert-dir`, or a fresh directory named after the program.
    pub fn cert_dir(&self, program: &str) -> PathBuf {
        self.cert_dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("{program}-{}", std::process::id()))
        })
    }
}

/// A file-protocol client's one command.
#[derive(Subcommand, Debug)]
pub enum FileClientCommand {
    /// Download a file.
    Get(FileGetArgs),
}

/// `get`: one file from a file-protocol server.
#[derive(Args, Debug)]
pub struct FileGetArgs {
    /// quic://HOST[:PORT]/PATH of the file (default port 4433).
    pub url: String,
    /// Where to write it [default: the file's name, here].
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Congestion controller for what this client sends (requests, ACKs;
    /// the server's --cc governs the download itself).
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    pub cc: String,
    /// Trust the server certificate in this PEM file (the server prints
    /// where it wrote it).
    #[arg(
        long,
        value_name = "PEM",
        conflicts_with = "insecure_no_verify",
        required_unless_present = "insecure_no_verify"
    )]
    pub ca: Option<PathBuf>,
    /// Do not verify the server's certificate.
    #[arg(long)]
    pub insecure_no_verify: bool,
    /// Name to check the certificate against [default: localhost].
    #[arg(long, value_name = "NAME", default_value = "localhost")]
    pub server_name: String,
    /// Print one JSON object (DESIGN §11 flow fields, plus sha256 and
    /// path) instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// The largest UDP payload, both ways, 1200 to 8972 bytes (as the
    /// server's --max-datagram).
    #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM_SIZE, value_parser = parse_max_datagram)]
    pub max_datagram: usize,
}

impl FileGetArgs {
    /// `--output`, or the URL's file name here.
    pub fn output(&self, path: &str) -> PathBuf {
        self.output
            .clone()
            .unwrap_or_else(|| PathBuf::from(path.rsplit('/').next().unwrap_or(path)))
    }
}

/// A server of files under a root, with a certificate given or made
/// (hq-interop, HTTP/3).
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Address and UDP port to listen on (port 0 picks one; the
    /// `listening on ADDR` line names it).
    #[arg(long, default_value = "127.0.0.1:4433")]
    pub listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Certificate chain to present (PEM) [default: a fresh self-signed
    /// one for localhost]; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
}

impl ServeArgs {
    /// Where a self-signed certificate is written when none is given.
    pub fn scratch(&self, program: &str) -> PathBuf {
        std::env::temp_dir().join(format!("{program}-{}", std::process::id()))
    }
}

/// What an hq-interop peer runs.
#[derive(Subcommand, Debug)]
pub enum HqCommand {
    /// Serve the files under a directory to hq-interop clients.
    Server(HqServerArgs),
    /// Download files from an hq-interop server, all on one connection.
    Client(HqClientArgs),
}

/// `server` options.
#[derive(Args, Debug)]
pub struct HqServerArgs {
    #[command(flatten)]
    pub serve: ServeArgs,
    /// Make every new client prove its address with a Retry first.
    #[arg(long)]
    pub retry: bool,
}

/// `client` options.
#[derive(Args, Debug)]
pub struct HqClientArgs {
    /// https://HOST:PORT/PATH of each file, all on one server.
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Where to write the files (under their paths).
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Trust servers whose certificate chains to this PEM bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// Verify no certificate (interop testing only).
    #[arg(long)]
    pub insecure: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    #[arg(long)]
    pub chacha20: bool,
    /// Initiate a key update once the first response bytes are in.
    #[arg(long)]
    pub key_update: bool,
    /// Fetch the first URL, close, then the rest on a second connection
    /// that resumes the first's TLS session.
    #[arg(long)]
    pub resume: bool,
    /// As --resume, with the second connection's requests sent in 0-RTT.
    #[arg(long)]
    pub zerortt: bool,
    /// Move to a new local port once the first response bytes are in
    /// (active connection migration).
    #[arg(long)]
    pub migrate: bool,
    /// Print one JSON object (what was done, each file's size and SHA-256).
    #[arg(long)]
    pub json: bool,
}

impl HqClientArgs {
    /// The client's options, URLs parsed and resolved.
    pub fn options(&self) -> anyhow::Result<ClientOptions> {
        if self.ca.is_none() && !self.insecure {
            bail!("say how to trust the server: --ca FILE, or --insecure to verify nothing");
        }
        Ok(ClientOptions {
            urls: url::parse_all(&self.urls, HTTPS)?,
            output_dir: self.output_dir.clone(),
            ca: self.ca.clone(),
            chacha20: self.chacha20,
            key_update: self.key_update,
            resume: self.resume,
            zero_rtt: self.zerortt,
            migrate: self.migrate,
        })
    }

    /// Prints the report: JSON with --json, else one line per file.
    pub fn print(&self, report: &ClientReport) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(report)?);
        } else {
            for file in &report.files {
                println!("/{} {} bytes sha256 {}", file.path, file.bytes, file.sha256);
            }
        }
        Ok(())
    }
}

/// An HTTP/3 client: every URL on one connection.
#[derive(Args, Debug)]
pub struct H3ClientArgs {
    /// https://HOST[:PORT]/PATH, all on one server.
    #[arg(required = true, value_name = "URL")]
    pub urls: Vec<String>,
    /// Where the files go, each under its URL's path.
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Trust certificates chaining to these roots (PEM), for the name.
    #[arg(long, value_name = "PEM", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// Accept any certificate (the handshake signature is still checked).
    #[arg(long)]
    pub insecure: bool,
    /// Name sent as SNI and checked with --ca [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    pub server_name: Option<String>,
    /// Print one JSON object (stack, version, alpn, files) on stdout.
    #[arg(long)]
    pub json: bool,
}

impl H3ClientArgs {
    /// The URLs, parsed and resolved, and the name to send and check.
    pub fn targets(&self) -> anyhow::Result<(Vec<url::Url>, String)> {
        let urls = url::parse_all(&self.urls, HTTPS)?;
        let server_name = self
            .server_name
            .clone()
            .unwrap_or_else(|| urls[0].host.clone());
        Ok((urls, server_name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Server {
        #[command(flatten)]
        args: FileServerArgs,
    }

    #[derive(Parser)]
    struct Client {
        #[command(subcommand)]
        command: FileClientCommand,
    }

    fn cc_help(command: &clap::Command) -> String {
        command
            .get_arguments()
            .find(|arg| arg.get_id() == "cc")
            .and_then(|arg| arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    #[test]
    fn every_cc_help_names_the_stacks_controllers() {
        let server = name_controllers(Server::command(), "cubic, reno");
        assert!(
            cc_help(&server).ends_with("sends: cubic, reno"),
            "{server:?}"
        );
        let client = name_controllers(Client::command(), "cubic, reno");
        let get = client.find_subcommand("get").unwrap();
        assert!(cc_help(get).ends_with(": cubic, reno"), "{}", cc_help(get));
    }

    #[test]
    fn a_file_client_must_say_how_to_trust_the_server() {
        let url = "quic://127.0.0.1:1/f";
        assert!(Client::try_parse_from(["c", "get", url]).is_err());
        assert!(Client::try_parse_from(["c", "get", url, "--insecure-no-verify"]).is_ok());
        let FileClientCommand::Get(get) =
            Client::try_parse_from(["c", "get", url, "--ca", "x.pem"])
                .unwrap()
                .command;
        assert_eq!(get.output("dir/f.bin"), PathBuf::from("f.bin"));
    }
}
