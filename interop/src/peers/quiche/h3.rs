//! quiche's own HTTP/3 (`quiche::h3`: its QPACK, control streams and
//! framing) as a client, on the mio loop of [`super::socket`]: every path of one
//! call requested at once on one connection, each body written to its
//! file and hashed, the call failing unless every file came whole.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};
use quiche::h3::NameValue;

use super::config;
use super::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use crate::peers::files::{self, Download, FileReport};
use crate::peers::net::any_address;
use crate::peers::settings::{CLOSE_GRACE, MAX_DATAGRAM_SIZE};
use crate::peers::url::Url;

/// Streams each side may open: HTTP/3 needs three unidirectional ones
/// (control, QPACK encoder and decoder) and h3 adds a grease stream; a
/// request is a bidirectional stream.
const MAX_STREAMS: u64 = 100;

/// HTTP/3's H3_NO_ERROR (RFC 9114 §8.1), the code of a clean close.
const H3_NO_ERROR: u64 = 0x100;

/// HTTP/3's H3_INTERNAL_ERROR (RFC 9114 §8.1), the code of a close
/// after a file failed.
const H3_INTERNAL_ERROR: u64 = 0x102;

/// A client's write buffer per file, as the h3 clients' (`peers::h3`).
const BODY_BUFFER: usize = 64 * 1024;

/// What the client is asked to do.
#[derive(Clone, Debug)]
pub struct Options {
    /// The files, all on one server.
    pub urls: Vec<Url>,
    /// Name sent in SNI and checked against the certificate.
    pub server_name: String,
    /// Where the files go (each under its URL's path).
    pub output_dir: PathBuf,
    /// The server's certificate to trust (PEM); `None` verifies nothing.
    pub ca: Option<PathBuf>,
}

/// One request and where its body stands.
struct Request {
    /// The path, with its leading `/`.
    path: String,
    output: PathBuf,
    /// Open once a 200 response came.
    download: Option<Download>,
    announced: Option<u64>,
    fetched: Option<FileReport>,
}

/// quiche's configuration for HTTP/3: the shared settings, ALPN `h3`, and
/// room for HTTP/3's streams.
fn h3_config(ca: Option<&std::path::Path>) -> anyhow::Result<quiche::Config> {
    let mut config = config::config(quiche::h3::APPLICATION_PROTOCOL, MAX_DATAGRAM_SIZE)?;
    config.set_initial_max_streams_bidi(MAX_STREAMS);
    config.set_initial_max_streams_uni(MAX_STREAMS);
    config.set_disable_active_migration(true);
    config::trust(&mut config, ca)?;
    Ok(config)
}

/// Fetches every URL of `options.urls`; returns the files in the
/// order given and the QUIC version and ALPN the connection ran.
pub fn fetch(options: &Options) -> anyhow::Result<(Vec<FileReport>, String)> {
    let server = options.urls.first().context("no URL given")?.address;
    let mut udp = UdpLoop::bind(any_address(server)).context("cannot open a UDP socket")?;
    let local = udp.local_addr();
    let mut config = h3_config(options.ca.as_deref())?;
    let scid = config::random_cid(&ring::rand::SystemRandom::new())?;
    let mut conn = quiche::connect(
        Some(&options.server_name),
        &quiche::ConnectionId::from_ref(&scid),
        local,
        server,
        &mut config,
    )
    .context("quiche connect")?;
    config::key_log(&mut conn);
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
        config::on_due_timeout(&mut conn);
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
                H3_INTERNAL_ERROR
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
            Err(failure.unwrap_or_else(|| {
                anyhow::anyhow!(
                    "connection closed before every file came: {}",
                    config::why_closed(&conn)
                )
            }))
        }
    }
}

/// The HTTP/3 side of the client.
struct Client {
    authority: String,
    h3_config: quiche::h3::Config,
    h3: Option<quiche::h3::Connection>,
    requests: Vec<Request>,
    /// Requests not sent yet (the peer's stream limit held them back).
    unsent: VecDeque<usize>,
    by_stream: HashMap<u64, usize>,
}

impl Client {
    fn new(options: &Options) -> anyhow::Result<Self> {
        let requests = options
            .urls
            .iter()
            .map(|url| {
                let path = format!("/{}", url.path);
                Ok(Request {
                    output: files::output_path(&options.output_dir, &path)?,
                    path,
                    download: None,
                    announced: None,
                    fetched: None,
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Self {
            authority: options
                .urls
                .first()
                .context("no URL given")?
                .authority
                .clone(),
            h3_config: quiche::h3::Config::new().context("quiche h3 config")?,
            h3: None,
            unsent: (0..requests.len()).collect(),
            requests,
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
        Ok(self.requests.iter().all(|r| r.fetched.is_some()))
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
                .requests
                .get(index)
                .map(|r| r.path.clone())
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

    fn request(&mut self, stream: u64) -> anyhow::Result<&mut Request> {
        let index =
            self.by_stream.get(&stream).copied().with_context(|| {
                format!("the server answered on stream {stream}, not a request")
            })?;
        self.requests
            .get_mut(index)
            .context("a stream without a request")
    }

    fn path(&self, stream: u64) -> String {
        self.by_stream
            .get(&stream)
            .and_then(|&index| self.requests.get(index))
            .map(|r| r.path.clone())
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
        let request = self.request(stream)?;
        if status.as_deref() != Some("200") {
            bail!(
                "{}: the server answered {}",
                request.path,
                status.unwrap_or_else(|| "without a status".into())
            );
        }
        request.announced = match announced {
            Some(length) => Some(
                length
                    .parse()
                    .with_context(|| format!("{}: content-length {length:?}", request.path))?,
            ),
            None => None,
        };
        request.download = Some(Download::create(
            request.output.clone(),
            &request.path,
            BODY_BUFFER,
        )?);
        Ok(())
    }

    fn on_data(&mut self, stream: u64, data: &[u8]) -> anyhow::Result<()> {
        let request = self.request(stream)?;
        let download = request
            .download
            .as_mut()
            .with_context(|| format!("{}: a body before the response", request.path))?;
        download.write(data)
    }

    fn on_finished(&mut self, stream: u64) -> anyhow::Result<()> {
        let request = self.request(stream)?;
        let download = request
            .download
            .take()
            .with_context(|| format!("{}: the stream ended without a response", request.path))?;
        if let Some(announced) = request.announced.filter(|&a| a != download.bytes()) {
            bail!(
                "{}: the server announced {announced} bytes and sent {}",
                request.path,
                download.bytes()
            );
        }
        request.fetched = Some(download.finish()?);
        Ok(())
    }

    /// Every file, once every one is complete.
    fn fetched(&self) -> Option<Vec<FileReport>> {
        self.requests.iter().map(|r| r.fetched.clone()).collect()
    }

    /// Removes the files that did not come whole.
    fn remove_partial(&self) {
        for request in self.requests.iter().filter(|r| r.fetched.is_none()) {
            let _ = std::fs::remove_file(&request.output);
        }
    }
}
