//! The baseline client: downloads one file with `GET`, hashing it as it is
//! written, then asks for the server's sender counters with `STATS` and
//! closes. The timing matches `sift-client`: from sending the request to the
//! verified file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use ring::rand::SecureRandom;

use super::protocol::{self, Request, SenderCounters};
use super::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use super::tls;
use crate::flow::{goodput_bps, FlowReport, QUIC_V1};

/// The URL scheme: `quic://HOST[:PORT]/PATH`.
pub const SCHEME: &str = "quic://";

/// Default server port, as sift's.
pub const DEFAULT_PORT: u16 = 4433;

/// How long a finished client waits for the server to see its close.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What the client is asked to do.
#[derive(Clone, Debug)]
pub struct GetOptions {
    /// Server address.
    pub server: SocketAddr,
    /// Name sent in SNI and checked against the certificate.
    pub server_name: String,
    /// Path of the file on the server.
    pub path: String,
    /// Where to write it.
    pub output: PathBuf,
    /// quiche controller for what this client sends (requests, ACKs).
    pub cc: String,
    /// The server's certificate to trust (PEM); `None` verifies nothing.
    pub ca: Option<PathBuf>,
    /// The largest UDP payload either way (`tls::config`).
    pub max_datagram: usize,
}

/// `quic://HOST[:PORT]/PATH` → (host, address, path).
pub fn parse_url(url: &str) -> anyhow::Result<(String, SocketAddr, String)> {
    let rest = url
        .strip_prefix(SCHEME)
        .with_context(|| format!("URL {url:?} does not start with {SCHEME}"))?;
    let (authority, path) = rest
        .split_once('/')
        .with_context(|| format!("URL {url:?} names no file (quic://HOST:PORT/PATH)"))?;
    if path.is_empty() {
        bail!("URL {url:?} names no file (quic://HOST:PORT/PATH)");
    }
    // [v6]:port, [v6], host:port or host.
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
        None => DEFAULT_PORT,
        Some(port) => port
            .parse()
            .ok()
            .filter(|&p: &u16| p != 0)
            .with_context(|| {
                format!("URL {url:?}: port {port:?} is not a number from 1 to 65535")
            })?,
    };
    let address = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .with_context(|| format!("{host} has no address"))?;
    Ok((host.to_string(), address, path.to_string()))
}

/// Where a download stands.
enum Phase {
    Handshake,
    Downloading {
        started: Instant,
        header: Vec<u8>,
        expected: Option<u64>,
        received: u64,
    },
    AskingStats {
        finished: Download,
        response: Vec<u8>,
    },
    Done(Box<FlowReport>),
}

struct Download {
    bytes: u64,
    elapsed: Duration,
    sha256: String,
}

const GET_STREAM: u64 = 0;
const STATS_STREAM: u64 = 4;

/// Downloads `options.path` into `options.output` and returns the report
/// (the server's counters, this client's timing and hash).
pub fn get(options: &GetOptions) -> anyhow::Result<FlowReport> {
    let bind: SocketAddr = if options.server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut udp = UdpLoop::bind(bind).context("cannot open a UDP socket")?;
    let mut config = tls::config(&options.cc, options.max_datagram)?;
    tls::trust(&mut config, options.ca.as_deref())?;
    let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut scid)
        .map_err(|_| anyhow::anyhow!("no randomness for a connection ID"))?;
    let scid = quiche::ConnectionId::from_ref(&scid);
    let local = udp.local_addr();
    let mut conn = quiche::connect(
        Some(&options.server_name),
        &scid,
        local,
        options.server,
        &mut config,
    )
    .context("quiche connect")?;
    let file = File::create(&options.output)
        .with_context(|| format!("cannot create {}", options.output.display()))?;
    let mut sink = Sink::new(file);
    let mut outbox = Outbox::new(options.max_datagram);
    let mut phase = Phase::Handshake;
    let mut closing_since: Option<Instant> = None;
    loop {
        let flushed = outbox.flush(&udp, &mut conn).context("quiche send")?;
        if conn.is_closed() || closing_since.is_some_and(|since| since.elapsed() > CLOSE_GRACE) {
            break;
        }
        let deadline = earliest(flushed.deadline(), timer_deadline(&conn));
        udp.wait(deadline, |datagram, from| {
            // A datagram quiche rejects is dropped; the connection goes on.
            let _ = conn.recv(datagram, quiche::RecvInfo { from, to: local });
        })?;
        if conn
            .timeout_instant()
            .is_some_and(|at| at <= Instant::now())
        {
            conn.on_timeout();
        }
        phase = advance(&mut conn, phase, &mut sink, options)?;
        if matches!(phase, Phase::Done(_)) && closing_since.is_none() {
            // Errors here mean the connection is already closing.
            let _ = conn.close(true, 0, b"done");
            closing_since = Some(Instant::now());
        }
    }
    match phase {
        Phase::Done(report) => Ok(*report),
        _ => Err(connection_failure(&conn)),
    }
}

fn connection_failure(conn: &quiche::Connection) -> anyhow::Error {
    if conn.is_timed_out() {
        return anyhow::anyhow!(
            "connection timed out (no answer for {} s)",
            tls::IDLE_TIMEOUT_MS / 1000
        );
    }
    let describe = |e: &quiche::ConnectionError| {
        format!(
            "error 0x{:x} {}",
            e.error_code,
            String::from_utf8_lossy(&e.reason)
        )
    };
    match (conn.peer_error(), conn.local_error()) {
        (Some(e), _) => anyhow::anyhow!("server closed the connection: {}", describe(e)),
        (_, Some(e)) => anyhow::anyhow!("connection closed: {}", describe(e)),
        _ => anyhow::anyhow!("connection closed before the download finished"),
    }
}

fn advance(
    conn: &mut quiche::Connection,
    phase: Phase,
    sink: &mut Sink,
    options: &GetOptions,
) -> anyhow::Result<Phase> {
    let mut buf = [0u8; 65_536];
    Ok(match phase {
        Phase::Handshake if conn.is_established() => {
            conn.stream_send(
                GET_STREAM,
                &Request::Get(options.path.clone()).encode(),
                true,
            )
            .context("cannot send the request")?;
            Phase::Downloading {
                started: Instant::now(),
                header: Vec::new(),
                expected: None,
                received: 0,
            }
        }
        Phase::Downloading {
            started,
            mut header,
            mut expected,
            mut received,
        } => {
            loop {
                let (len, fin) = match conn.stream_recv(GET_STREAM, &mut buf) {
                    Ok(read) => read,
                    Err(quiche::Error::Done) => break,
                    Err(e) => bail!("download stream failed: {e}"),
                };
                let mut body = &buf[..len];
                if expected.is_none() {
                    header.extend_from_slice(body);
                    match protocol::parse_response_header(&header)? {
                        None => body = &[],
                        Some((size, header_len)) => {
                            expected = Some(size);
                            let rest = header.split_off(header_len);
                            sink.write(&rest)?;
                            received += rest.len() as u64;
                            body = &[];
                        }
                    }
                }
                sink.write(body)?;
                received += body.len() as u64;
                if fin {
                    let Some(size) = expected else {
                        bail!("server ended the response before its header");
                    };
                    if received != size {
                        bail!("server announced {size} bytes and sent {received}");
                    }
                    let sha256 = sink.finish(&options.output)?;
                    let finished = Download {
                        bytes: received,
                        elapsed: started.elapsed(),
                        sha256,
                    };
                    conn.stream_send(STATS_STREAM, &Request::Stats.encode(), true)
                        .context("cannot ask for the server's counters")?;
                    return Ok(Phase::AskingStats {
                        finished,
                        response: Vec::new(),
                    });
                }
            }
            Phase::Downloading {
                started,
                header,
                expected,
                received,
            }
        }
        Phase::AskingStats {
            finished,
            mut response,
        } => {
            loop {
                let (len, fin) = match conn.stream_recv(STATS_STREAM, &mut buf) {
                    Ok(read) => read,
                    Err(quiche::Error::Done) => break,
                    Err(e) => bail!("counters stream failed: {e}"),
                };
                response.extend_from_slice(&buf[..len]);
                if fin {
                    let Some((_, header_len)) = protocol::parse_response_header(&response)? else {
                        bail!("server's counters came without a header");
                    };
                    let counters: SenderCounters = serde_json::from_slice(&response[header_len..])
                        .context("server's counters are not JSON")?;
                    return Ok(Phase::Done(Box::new(report(&finished, &counters, options))));
                }
            }
            Phase::AskingStats { finished, response }
        }
        other => other,
    })
}

fn report(download: &Download, counters: &SenderCounters, options: &GetOptions) -> FlowReport {
    let completion_s = download.elapsed.as_secs_f64();
    FlowReport {
        id: 0,
        path: options.path.clone(),
        cc: options.cc.clone(),
        corruption_notices: false,
        bytes: download.bytes,
        completion_s,
        goodput_bps: goodput_bps(download.bytes, completion_s),
        retransmitted_packets: counters.retransmitted_packets,
        ptos: counters.ptos,
        corruption_notices_received: 0,
        srtt_us: counters.srtt_us,
        cwnd: counters.cwnd,
        lost_packets: Some(counters.lost_packets),
        sha256: download.sha256.clone(),
        version: Some(QUIC_V1.to_string()),
    }
}

/// The output file and the running SHA-256 of what went into it (the
/// quinn peer's client writes through it too).
pub struct Sink {
    writer: BufWriter<File>,
    digest: ring::digest::Context,
}

impl Sink {
    /// A sink writing into `file`.
    pub fn new(file: File) -> Self {
        Self {
            writer: BufWriter::with_capacity(1 << 20, file),
            digest: ring::digest::Context::new(&ring::digest::SHA256),
        }
    }

    /// Hashes and writes `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.digest.update(bytes);
        self.writer
            .write_all(bytes)
            .context("cannot write the download")
    }

    /// Flushes the file and returns the hash, lowercase hex.
    pub fn finish(&mut self, path: &Path) -> anyhow::Result<String> {
        self.writer
            .flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
        let digest = self.digest.clone().finish();
        Ok(hex(digest.as_ref()))
    }
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_address_and_path() {
        let (host, address, path) = parse_url("quic://127.0.0.1:5000/dir/f.bin").unwrap();
        assert_eq!(host, "127.0.0.1");
        assert_eq!(address, "127.0.0.1:5000".parse().unwrap());
        assert_eq!(path, "dir/f.bin");
        let (_, address, _) = parse_url("quic://[::1]/f").unwrap();
        assert_eq!(address, "[::1]:4433".parse().unwrap());
    }

    #[test]
    fn urls_without_scheme_file_or_valid_port_are_refused() {
        for bad in [
            "sift://h/f",
            "quic://127.0.0.1:5000",
            "quic://127.0.0.1:5000/",
            "quic://127.0.0.1:0/f",
            "quic://127.0.0.1:x/f",
        ] {
            assert!(parse_url(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn hex_is_lowercase_and_two_digits_a_byte() {
        assert_eq!(hex(&[0, 0xab, 0x0f]), "00ab0f");
    }
}
