//! hq-interop (HTTP/0.9 over QUIC, ALPN `hq-interop`), the protocol of the
//! QUIC interop runner: the client opens one bidirectional stream per file
//! and sends `GET /path\r\n` with FIN; the server answers with the file's
//! bytes and FIN (or resets the stream when it has no such file).
//!
//! Owns what both stacks' peers share: the request line, URLs
//! (`https://HOST:PORT/PATH`), where a download is written, the client's
//! JSON report ([`ClientReport`]) and the server's certificate. The peers
//! themselves: [`quiche_peer`] (quiche 0.28, mio) and [`quinn_peer`]
//! (quinn 0.11 on tokio), run as `quiche-hq` and `quinn-hq`.
//!
//! These peers are test tools: a client verifies the server only when given
//! `--ca`, and `--insecure` must be said out loud to verify nothing (the
//! interop runner's clients do not verify either).

#[path = "../hq/cli.rs"]
pub mod cli;
#[path = "quiche/hq.rs"]
pub mod quiche_peer;
#[path = "quinn/hq.rs"]
pub mod quinn_peer;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

/// The ALPN token of HTTP/0.9 over QUIC in the interop runner.
pub const ALPN: &[u8] = b"hq-interop";

/// The longest request a server reads before it gives up on the stream.
pub const MAX_REQUEST_BYTES: usize = 4096;

/// Port of an `https://` URL that names none.
pub const DEFAULT_PORT: u16 = 443;

/// Stream limit servers grant at once: the multiplexing case opens
/// thousands of streams, and a higher limit lets the client keep many in
/// flight (the runner's servers raise theirs for that case too).
pub const MAX_CONCURRENT_STREAMS: u64 = 256;

/// Why a request line was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    /// Not `GET /path`.
    #[error("not an hq-interop request: {0:?}")]
    Malformed(String),
    /// Longer than [`MAX_REQUEST_BYTES`].
    #[error("request longer than {MAX_REQUEST_BYTES} bytes")]
    TooLong,
}

/// The request line for `path` (a leading `/` is added when missing).
pub fn request(path: &str) -> Vec<u8> {
    format!("GET /{}\r\n", path.trim_start_matches('/')).into_bytes()
}

/// The path of a request (`GET /path`, ended by CRLF, LF or the stream's
/// end), without its leading `/`.
pub fn parse_request(bytes: &[u8]) -> Result<String, RequestError> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err(RequestError::TooLong);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| RequestError::Malformed(String::from_utf8_lossy(bytes).into_owned()))?;
    let line = text.split(['\r', '\n']).next().unwrap_or("");
    let path = line
        .strip_prefix("GET /")
        .filter(|p| !p.is_empty() && !p.contains(' '))
        .ok_or_else(|| RequestError::Malformed(line.to_string()))?;
    Ok(path.to_string())
}

/// The file under `root` a request for `path` names, or `None` when it
/// would leave `root` or is not a regular file.
pub fn resolve(root: &Path, path: &str) -> Option<PathBuf> {
    let full = crate::baseline::protocol::resolve(root, path).ok()?;
    full.is_file().then_some(full)
}

/// One `https://HOST[:PORT]/PATH` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// The host as written (name for SNI when it is not an address).
    pub host: String,
    /// Where it resolves.
    pub address: SocketAddr,
    /// The path, without its leading `/`.
    pub path: String,
}

impl Url {
    /// Parses and resolves `https://HOST[:PORT]/PATH`.
    pub fn parse(url: &str) -> anyhow::Result<Self> {
        let rest = url
            .strip_prefix("https://")
            .with_context(|| format!("URL {url:?} does not start with https://"))?;
        let (authority, path) = rest
            .split_once('/')
            .filter(|(_, path)| !path.is_empty())
            .with_context(|| format!("URL {url:?} names no file (https://HOST:PORT/PATH)"))?;
        let (host, port) = match authority.strip_prefix('[') {
            Some(bracketed) => {
                let (host, rest) = bracketed
                    .split_once(']')
                    .with_context(|| format!("URL {url:?}: unclosed [ in the address"))?;
                (host, rest.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let port = match port {
            Some(port) => port
                .parse::<u16>()
                .ok()
                .filter(|p| *p != 0)
                .with_context(|| format!("URL {url:?}: bad port {port:?}"))?,
            None => DEFAULT_PORT,
        };
        let address = (host, port)
            .to_socket_addrs()
            .with_context(|| format!("cannot resolve {host}"))?
            .next()
            .with_context(|| format!("{host} has no address"))?;
        Ok(Self {
            host: host.to_string(),
            address,
            path: path.to_string(),
        })
    }

    /// The name to send in SNI: the host, or `localhost` for an address
    /// (SNI carries no addresses).
    pub fn server_name(&self) -> String {
        if self.host.parse::<std::net::IpAddr>().is_ok() {
            "localhost".to_string()
        } else {
            self.host.clone()
        }
    }
}

/// Parses every URL and checks that they name one server (one connection
/// serves them all).
pub fn parse_urls(urls: &[String]) -> anyhow::Result<Vec<Url>> {
    let parsed = urls
        .iter()
        .map(|u| Url::parse(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(first) = parsed.first() else {
        bail!("no URL given");
    };
    if let Some(other) = parsed.iter().find(|u| u.address != first.address) {
        bail!(
            "all URLs must name one server: {} and {} differ",
            first.address,
            other.address
        );
    }
    Ok(parsed)
}

/// Where the download of `path` goes in `dir`: its relative path, which
/// must stay inside `dir` (no `..`, no absolute parts).
pub fn output_path(dir: &Path, path: &str) -> anyhow::Result<PathBuf> {
    let relative = Path::new(path.trim_start_matches('/'));
    if relative.as_os_str().is_empty()
        || relative
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        bail!("{path:?} cannot be written under {}", dir.display());
    }
    Ok(dir.join(relative))
}

/// What a client did, printed as one JSON object with `--json`: the same
/// field names as `sift-client --json` where they mean the same.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClientReport {
    /// Which client (`quiche` or `quinn`).
    pub stack: String,
    /// The QUIC version of the last connection.
    pub version: String,
    /// The ALPN agreed.
    pub alpn: String,
    /// Connections made (2 with `--resume` or `--zerortt`).
    pub handshakes: u32,
    /// Whether the last connection resumed a TLS session (`None`: the
    /// stack does not say).
    pub resumed: Option<bool>,
    /// Whether the server accepted the 0-RTT data (`None`: none sent, or
    /// the stack does not say).
    pub zero_rtt_accepted: Option<bool>,
    /// Key updates this client initiated.
    pub key_updates: u64,
    /// The only TLS 1.3 cipher suite offered, when restricted.
    pub cipher: Option<String>,
    /// Whether the client moved to a new local address mid-connection.
    pub migrated: bool,
    /// Every file written.
    pub files: Vec<FileReport>,
}

/// One downloaded file.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileReport {
    /// The path requested.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// SHA-256 of what was written, lowercase hex.
    pub sha256: String,
    /// Microseconds from the request to the last byte written (sift's
    /// `completion_s`, in whole microseconds); 0 from a report without it.
    #[serde(default)]
    pub elapsed_us: u64,
}

/// The certificate and key a server presents: the given files, or a fresh
/// self-signed one for `localhost` written into `scratch`.
pub fn server_certificate(
    cert: Option<&Path>,
    key: Option<&Path>,
    scratch: &Path,
) -> anyhow::Result<(PathBuf, PathBuf)> {
    match (cert, key) {
        (Some(cert), Some(key)) => Ok((cert.to_path_buf(), key.to_path_buf())),
        (None, None) => {
            let made = crate::baseline::tls::Certificate::generate(scratch)?;
            Ok((made.cert_pem, made.key_pem))
        }
        _ => bail!("--cert and --key go together"),
    }
}

/// A download being written: its file and the running SHA-256 of what
/// went in. Unbuffered (the stacks hand over chunks of kilobytes), so that
/// thousands at once cost no buffer memory.
pub struct Download {
    path: String,
    output: PathBuf,
    file: std::fs::File,
    digest: ring::digest::Context,
    bytes: u64,
    /// When the request left (the download is made with it).
    requested: std::time::Instant,
}

impl Download {
    /// Creates the output file for `path` under `dir` (and its folders),
    /// as its request leaves.
    pub fn create(dir: &Path, path: &str) -> anyhow::Result<Self> {
        let output = output_path(dir, path)?;
        if let Some(parent) = output.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let file = std::fs::File::create(&output)
            .with_context(|| format!("cannot create {}", output.display()))?;
        Ok(Self {
            path: path.to_string(),
            output,
            file,
            digest: ring::digest::Context::new(&ring::digest::SHA256),
            bytes: 0,
            requested: std::time::Instant::now(),
        })
    }

    /// The path requested.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Hashes and writes `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        use std::io::Write;
        self.digest.update(bytes);
        self.bytes += bytes.len() as u64;
        self.file
            .write_all(bytes)
            .with_context(|| format!("cannot write {}", self.output.display()))
    }

    /// The report of the finished file.
    pub fn finish(self) -> FileReport {
        FileReport {
            path: self.path,
            bytes: self.bytes,
            sha256: crate::baseline::client::hex(self.digest.finish().as_ref()),
            elapsed_us: self.requested.elapsed().as_micros() as u64,
        }
    }
}

/// What a client may be asked to do beyond downloading (the interop
/// runner's client test cases).
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// The files, all on one server.
    pub urls: Vec<Url>,
    /// Where downloads are written.
    pub output_dir: PathBuf,
    /// Trust this PEM bundle; `None` (with `--insecure`) verifies nothing.
    pub ca: Option<PathBuf>,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha20: bool,
    /// Initiate a 1-RTT key update once data flows.
    pub key_update: bool,
    /// Fetch the first URL on one connection, the rest on a second that
    /// resumes the first's TLS session.
    pub resume: bool,
    /// As `resume`, with the second connection's requests in 0-RTT.
    pub zero_rtt: bool,
    /// Move to a new local port once data flows (active migration).
    pub migrate: bool,
}

impl ClientOptions {
    /// The URLs of each connection: all on one, or the first alone and the
    /// rest on a second when resuming.
    pub fn connections(&self) -> Vec<&[Url]> {
        if (self.resume || self.zero_rtt) && self.urls.len() > 1 {
            vec![&self.urls[..1], &self.urls[1..]]
        } else {
            vec![&self.urls[..]]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_round_trip_and_end_at_crlf_lf_or_fin() {
        assert_eq!(request("/a/b.bin"), b"GET /a/b.bin\r\n");
        assert_eq!(parse_request(&request("f")).unwrap(), "f");
        assert_eq!(parse_request(b"GET /x\n").unwrap(), "x");
        assert_eq!(parse_request(b"GET /x").unwrap(), "x");
    }

    #[test]
    fn requests_other_than_get_of_a_path_are_refused() {
        for bad in [
            &b"PUT /x\r\n"[..],
            b"GET x\r\n",
            b"GET /\r\n",
            b"GET /a b\r\n",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_request(&[b'a'; MAX_REQUEST_BYTES + 1]),
            Err(RequestError::TooLong)
        );
    }

    #[test]
    fn urls_give_address_path_and_a_name_for_sni() {
        let url = Url::parse("https://127.0.0.1:4433/dir/f.bin").unwrap();
        assert_eq!(url.address, "127.0.0.1:4433".parse().unwrap());
        assert_eq!(url.path, "dir/f.bin");
        assert_eq!(url.server_name(), "localhost");
        let url = Url::parse("https://[::1]/f").unwrap();
        assert_eq!(url.address, "[::1]:443".parse().unwrap());
        for bad in [
            "quic://h/f",
            "https://127.0.0.1:1/",
            "https://127.0.0.1:0/f",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls_of_two_servers_are_refused_together() {
        let urls = ["https://127.0.0.1:1/a", "https://127.0.0.1:2/b"].map(String::from);
        assert!(parse_urls(&urls).is_err());
        let urls = ["https://127.0.0.1:1/a", "https://127.0.0.1:1/b"].map(String::from);
        assert_eq!(parse_urls(&urls).unwrap().len(), 2);
    }

    #[test]
    fn downloads_stay_inside_the_output_directory() {
        let dir = Path::new("/out");
        assert_eq!(output_path(dir, "/a/b").unwrap(), Path::new("/out/a/b"));
        assert!(output_path(dir, "../x").is_err());
        assert!(output_path(dir, "a/../../x").is_err());
    }

    #[test]
    fn resuming_clients_fetch_the_first_file_alone_then_the_rest() {
        let url = |p: &str| Url {
            host: "h".into(),
            address: "127.0.0.1:1".parse().unwrap(),
            path: p.into(),
        };
        let mut options = ClientOptions {
            urls: vec![url("a"), url("b"), url("c")],
            ..Default::default()
        };
        assert_eq!(options.connections().len(), 1);
        options.resume = true;
        let split = options.connections();
        assert_eq!((split[0].len(), split[1].len()), (1, 2));
    }
}
