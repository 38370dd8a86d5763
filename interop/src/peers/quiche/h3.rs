//! quiche's own HTTP/3 (`quiche::h3`: its QPACK, control streams and
//! framing) as a client, on the baseline's mio loop: every path of one
//! call requested at once on one connection, each body written to its
//! file and hashed, the call failing unless every file came whole.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use quiche::h3::NameValue;
use ring::rand::SecureRandom;

use super::fetch::Fetched;
use super::target::{self, Targets};
use crate::baseline::client::Sink;
use crate::baseline::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use crate::baseline::tls::{self, IDLE_TIMEOUT_MS, MAX_DATA, MAX_DATAGRAM_SIZE, MAX_STREAM_DATA};

/// How long a finished client waits for the server to see its close.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// Streams each side may open: HTTP/3 needs three unidirectional ones
/// (control, QPACK encoder and decoder) and h3 adds a grease stream; a
/// request is a bidirectional stream.
const MAX_STREAMS: u64 = 100;

/// HTTP/3's H3_NO_ERROR (RFC 9114 §8.1), the code of a clean close.
const H3_NO_ERROR: u64 = 0x100;

/// What the client is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The server and the paths to fetch.
    pub targets: Targets,
    /// Name sent in SNI and checked against the certificate.
    pub server_name: String,
    /// Where the files go (each under its URL's path).
    pub output_dir: PathBuf,
    /// The server's certificate to trust (PEM); `None` verifies nothing.
    pub ca: Option<PathBuf>,
}

/// One request and where its body stands.
struct Download {
    path: String,
    output: PathBuf,
    /// Open once a 200 response came.
    sink: Option<Sink>,
    announced: Option<u64>,
    bytes: u64,
    fetched: Option<Fetched>,
}

/// quiche's transport configuration for HTTP/3: the baseline's windows
/// and datagram size, ALPN `h3`, and room for HTTP/3's streams.
fn config(ca: Option<&std::path::Path>) -> anyhow::Result<quiche::Config> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).context("quiche config")?;
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .context("quiche ALPN")?;
    config.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    config.set_max_recv_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_max_send_udp_payload_size(MAX_DATAGRAM_SIZE);
    config.set_initial_max_data(MAX_DATA);
    config.set_initial_max_stream_data_bidi_local(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_bidi_remote(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_uni(MAX_STREAM_DATA);
    config.set_initial_max_streams_bidi(MAX_STREAMS);
    config.set_initial_max_streams_uni(MAX_STREAMS);
    config.set_disable_active_migration(true);
    tls::trust(&mut config, ca)?;
    Ok(config)
}

/// Fetches every path of `options.targets`; returns the files in the
/// order given and the QUIC version and ALPN the connection ran.
pub fn fetch(options: &Options) -> anyhow::Result<(Vec<Fetched>, String)> {
    let server = options.targets.address;
    let bind: SocketAddr = if server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let mut udp = UdpLoop::bind(bind).context("cannot open a UDP socket")?;
    let local = udp.local_addr();
    let mut config = config(options.ca.as_deref())?;
    let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
    ring::rand::SystemRandom::new()
        .fill(&mut scid)
        .map_err(|_| anyhow::anyhow!("no randomness for a connection ID"))?;
    let scid = quiche::ConnectionId::from_ref(&scid);
    let mut conn = quiche::connect(
        Some(&options.server_name),
        &scid,
        local,
        server,
        &mut config,
    )
    .context("quiche connect")?;
    let mut client = Client::new(options)?;
    let mut outbox = Outbox::default();
    let mut closing_since: Option<Instant> = None;
    let mut failure = None;
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
        if closing_since.is_some() || !conn.is_established() {
            continue;
        }
        let finished = match client.advance(&mut conn) {
            Ok(finished) => finished,
            Err(error) => {
                failure = Some(error);
                true
            }
        };
        if finished {
            let code = if failure.is_some() {
                0x102
            } else {
                H3_NO_ERROR
            };
            // Errors here mean the connection is already closing.
            let _ = conn.close(true, code, b"");
            closing_since = Some(Instant::now());
        }
    }
    let version = if conn.is_established() || closing_since.is_some() {
        "QUIC v1".to_string()
    } else {
        String::new()
    };
    match (failure, client.fetched()) {
        (None, Some(fetched)) => Ok((fetched, version)),
        (failure, _) => {
            client.remove_partial();
            Err(failure.unwrap_or_else(|| connection_failure(&conn)))
        }
    }
}

fn connection_failure(conn: &quiche::Connection) -> anyhow::Error {
    if conn.is_timed_out() {
        return anyhow::anyhow!(
            "connection timed out (no answer for {} s)",
            IDLE_TIMEOUT_MS / 1000
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
        _ => anyhow::anyhow!("connection closed before every file came"),
    }
}

/// The HTTP/3 side of the client.
struct Client {
    authority: String,
    h3_config: quiche::h3::Config,
    h3: Option<quiche::h3::Connection>,
    downloads: Vec<Download>,
    /// Requests not sent yet (the peer's stream limit held them back).
    unsent: VecDeque<usize>,
    by_stream: HashMap<u64, usize>,
}

impl Client {
    fn new(options: &Options) -> anyhow::Result<Self> {
        let downloads = options
            .targets
            .paths
            .iter()
            .map(|path| {
                Ok(Download {
                    path: path.clone(),
                    output: target::output_path(&options.output_dir, path)?,
                    sink: None,
                    announced: None,
                    bytes: 0,
                    fetched: None,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            authority: options.targets.authority.clone(),
            h3_config: quiche::h3::Config::new().context("quiche h3 config")?,
            h3: None,
            unsent: (0..downloads.len()).collect(),
            downloads,
            by_stream: HashMap::new(),
        })
    }

    /// Sends what requests it can and takes in what arrived; `true` once
    /// every file is complete.
    fn advance(&mut self, conn: &mut quiche::Connection) -> anyhow::Result<bool> {
        let mut h3 = match self.h3.take() {
            Some(h3) => h3,
            None => quiche::h3::Connection::with_transport(conn, &self.h3_config)
                .context("quiche cannot start HTTP/3 on the connection")?,
        };
        let advanced = self.exchange(conn, &mut h3);
        self.h3 = Some(h3);
        advanced?;
        Ok(self.downloads.iter().all(|d| d.fetched.is_some()))
    }

    fn exchange(
        &mut self,
        conn: &mut quiche::Connection,
        h3: &mut quiche::h3::Connection,
    ) -> anyhow::Result<()> {
        self.send_requests(conn, h3)?;
        let mut buf = vec![0u8; 65_536];
        loop {
            let (stream, event) = match h3.poll(conn) {
                Ok(event) => event,
                Err(quiche::h3::Error::Done) => return Ok(()),
                Err(error) => bail!("HTTP/3 failed: {error}"),
            };
            match event {
                quiche::h3::Event::Headers { list, .. } => self.on_headers(stream, &list)?,
                quiche::h3::Event::Data => loop {
                    let read = match h3.recv_body(conn, stream, &mut buf) {
                        Ok(read) => read,
                        Err(quiche::h3::Error::Done) => break,
                        Err(error) => bail!("a body broke off: {error}"),
                    };
                    self.on_data(stream, buf.get(..read).unwrap_or_default())?;
                },
                quiche::h3::Event::Finished => self.on_finished(stream)?,
                quiche::h3::Event::Reset(code) => {
                    bail!(
                        "{}: the server reset the stream (0x{code:x})",
                        self.path(stream)
                    )
                }
                // Server push is never enabled; GOAWAY and priority
                // updates change nothing for requests already sent.
                _ => {}
            }
        }
    }

    fn send_requests(
        &mut self,
        conn: &mut quiche::Connection,
        h3: &mut quiche::h3::Connection,
    ) -> anyhow::Result<()> {
        while let Some(&index) = self.unsent.front() {
            let path = self
                .downloads
                .get(index)
                .map(|d| d.path.clone())
                .unwrap_or_default();
            let headers = [
                quiche::h3::Header::new(b":method", b"GET"),
                quiche::h3::Header::new(b":scheme", b"https"),
                quiche::h3::Header::new(b":authority", self.authority.as_bytes()),
                quiche::h3::Header::new(b":path", path.as_bytes()),
                quiche::h3::Header::new(b"user-agent", b"quiche-h3-client"),
            ];
            match h3.send_request(conn, &headers, true) {
                Ok(stream) => {
                    self.by_stream.insert(stream, index);
                    self.unsent.pop_front();
                }
                // Wait for the server to grant another stream.
                Err(quiche::h3::Error::StreamBlocked)
                | Err(quiche::h3::Error::TransportError(quiche::Error::StreamLimit)) => break,
                Err(error) => bail!("{path}: cannot send the request: {error}"),
            }
        }
        Ok(())
    }

    fn download(&mut self, stream: u64) -> anyhow::Result<&mut Download> {
        let index =
            self.by_stream.get(&stream).copied().with_context(|| {
                format!("the server answered on stream {stream}, not a request")
            })?;
        self.downloads
            .get_mut(index)
            .context("a request without a download")
    }

    fn path(&self, stream: u64) -> String {
        self.by_stream
            .get(&stream)
            .and_then(|&index| self.downloads.get(index))
            .map(|d| d.path.clone())
            .unwrap_or_else(|| format!("stream {stream}"))
    }

    fn on_headers(&mut self, stream: u64, list: &[quiche::h3::Header]) -> anyhow::Result<()> {
        let value = |name: &[u8]| {
            list.iter()
                .find(|header| header.name() == name)
                .map(|header| String::from_utf8_lossy(header.value()).into_owned())
        };
        let status = value(b":status");
        let announced = value(b"content-length");
        let download = self.download(stream)?;
        if status.as_deref() != Some("200") {
            bail!(
                "{}: the server answered {}",
                download.path,
                status.unwrap_or_else(|| "without a status".into())
            );
        }
        download.announced = match announced {
            Some(length) => Some(
                length
                    .parse()
                    .with_context(|| format!("{}: content-length {length:?}", download.path))?,
            ),
            None => None,
        };
        if let Some(parent) = download.output.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let file = File::create(&download.output)
            .with_context(|| format!("cannot create {}", download.output.display()))?;
        download.sink = Some(Sink::new(file));
        Ok(())
    }

    fn on_data(&mut self, stream: u64, data: &[u8]) -> anyhow::Result<()> {
        let download = self.download(stream)?;
        let sink = download
            .sink
            .as_mut()
            .with_context(|| format!("{}: a body before the response", download.path))?;
        sink.write(data)?;
        download.bytes += data.len() as u64;
        Ok(())
    }

    fn on_finished(&mut self, stream: u64) -> anyhow::Result<()> {
        let download = self.download(stream)?;
        let sink = download
            .sink
            .as_mut()
            .with_context(|| format!("{}: the stream ended without a response", download.path))?;
        if let Some(announced) = download.announced.filter(|&a| a != download.bytes) {
            bail!(
                "{}: the server announced {announced} bytes and sent {}",
                download.path,
                download.bytes
            );
        }
        let sha256 = sink.finish(&download.output)?;
        download.fetched = Some(Fetched {
            path: download.path.clone(),
            bytes: download.bytes,
            sha256,
        });
        Ok(())
    }

    /// Every file, once every one is complete.
    fn fetched(&self) -> Option<Vec<Fetched>> {
        self.downloads.iter().map(|d| d.fetched.clone()).collect()
    }

    /// Removes the files that did not come whole.
    fn remove_partial(&self) {
        for download in self.downloads.iter().filter(|d| d.fetched.is_none()) {
            let _ = std::fs::remove_file(&download.output);
        }
    }
}
