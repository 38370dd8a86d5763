//! The file protocol over quiche: the bulk server and client the
//! comparison measures (`quiche-server`, `quiche-client`; also built
//! against quiche 0.24 by `interop/quiche-0.24/`).
//!
//! The server serves the files under a root, one `GET` per bidirectional
//! stream, to any number of clients, and answers `STATS` with its sender
//! counters for that connection. Connection IDs are random; the client's
//! original destination ID maps to the same connection until the
//! handshake moves it to ours. No Retry: the server runs on emulated
//! links for measurements, not on the Internet. The client downloads one
//! file with `GET`, hashing it as it is written, then asks for the
//! server's counters with `STATS` and closes.

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context};

use super::config::{self, CID_LEN};
use super::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use crate::flow::FlowReport;
use crate::peers::cert::Certificate;
use crate::peers::file::{self, Answer, Request, Response, SenderCounters, MAX_REQUEST_BYTES};
use crate::peers::files::{Download, FileReport, ONE_FILE_BUFFER};
use crate::peers::net::any_address;
use crate::peers::settings::CLOSE_GRACE;

/// How much of a file is read per refill of a stream's send buffer.
const READ_CHUNK: usize = 256 * 1024;

/// Streams each side may open: a download is two (`GET`, `STATS`).
const MAX_STREAMS: u64 = 16;

/// quiche's configuration for the file protocol, controller `cc`.
fn file_config(cc: &str, max_datagram: usize) -> anyhow::Result<quiche::Config> {
    let mut config = config::config(&[file::ALPN], max_datagram)?;
    config::set_controller(&mut config, cc)?;
    config.set_initial_max_streams_bidi(MAX_STREAMS);
    config.set_initial_max_streams_uni(MAX_STREAMS);
    config.set_disable_active_migration(true);
    Ok(config)
}

/// What the server is asked to do.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory whose files are served.
    pub root: PathBuf,
    /// quiche congestion controller for the data the server sends.
    pub cc: String,
    /// Where the self-signed certificate and key are written.
    pub cert_dir: PathBuf,
    /// The largest UDP payload either way.
    pub max_datagram: usize,
}

/// A bound server, ready to run.
pub struct Server {
    udp: UdpLoop,
    config: quiche::Config,
    options: ServerOptions,
    sessions: Vec<Option<Session>>,
    /// Every connection ID a client may send to (its original destination
    /// ID and ours) → index into `sessions`.
    ids: HashMap<Vec<u8>, usize>,
    rng: ring::rand::SystemRandom,
}

struct Session {
    conn: quiche::Connection,
    outbox: Outbox,
    streams: HashMap<u64, StreamState>,
    ids: Vec<Vec<u8>>,
    peer: SocketAddr,
}

enum StreamState {
    /// Collecting the request until its FIN.
    Reading(Vec<u8>),
    /// Sending the response.
    Sending(Sending),
}

/// A response on its way: the bytes quiche has not taken yet, then the
/// rest of the file.
struct Sending {
    pending: Vec<u8>,
    offset: usize,
    file: Option<std::fs::File>,
}

impl Server {
    /// Makes the certificate, configures quiche and binds the socket.
    pub fn bind(options: ServerOptions) -> anyhow::Result<Self> {
        let mut config = file_config(&options.cc, options.max_datagram)?;
        config::install(&mut config, &Certificate::generate(&options.cert_dir)?)?;
        if !options.root.is_dir() {
            bail!("--root {} is not a directory", options.root.display());
        }
        let udp = UdpLoop::bind(options.listen)
            .with_context(|| format!("cannot listen on {}", options.listen))?;
        Ok(Self {
            udp,
            config,
            options,
            sessions: Vec::new(),
            ids: HashMap::new(),
            rng: ring::rand::SystemRandom::new(),
        })
    }

    /// The address bound (with the port chosen when asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.udp.local_addr()
    }

    /// Serves until an I/O error on the socket.
    pub fn run(&mut self) -> anyhow::Result<()> {
        let mut deadline = None;
        loop {
            let mut arrived = Vec::new();
            self.udp.wait(deadline, |datagram, from| {
                arrived.push((datagram.to_vec(), from));
            })?;
            for (mut datagram, from) in arrived {
                self.receive(&mut datagram, from);
            }
            deadline = self.service();
        }
    }

    fn receive(&mut self, datagram: &mut [u8], from: SocketAddr) {
        let Ok(header) = quiche::Header::from_slice(datagram, CID_LEN) else {
            return;
        };
        let slot = match self.ids.get(header.dcid.as_ref()) {
            Some(&slot) => slot,
            None => {
                if header.ty != quiche::Type::Initial {
                    return;
                }
                if !quiche::version_is_supported(header.version) {
                    let mut out = [0u8; 256];
                    if let Ok(len) = quiche::negotiate_version(&header.scid, &header.dcid, &mut out)
                    {
                        let _ = self.udp.send_now(&out[..len], from);
                    }
                    return;
                }
                match self.accept(header.dcid.as_ref(), from) {
                    Some(slot) => slot,
                    None => return,
                }
            }
        };
        if let Some(session) = self.sessions[slot].as_mut() {
            let info = quiche::RecvInfo {
                from,
                to: self.udp.local_addr(),
            };
            // A datagram quiche rejects is dropped; the connection goes on.
            let _ = session.conn.recv(datagram, info);
        }
    }

    fn accept(&mut self, original_dcid: &[u8], from: SocketAddr) -> Option<usize> {
        let scid = config::random_cid(&self.rng).ok()?;
        let mut conn = quiche::accept(
            &quiche::ConnectionId::from_ref(&scid),
            None,
            self.udp.local_addr(),
            from,
            &mut self.config,
        )
        .ok()?;
        config::key_log(&mut conn);
        let slot = self
            .sessions
            .iter()
            .position(Option::is_none)
            .unwrap_or_else(|| {
                self.sessions.push(None);
                self.sessions.len() - 1
            });
        let ids = vec![original_dcid.to_vec(), scid.to_vec()];
        for id in &ids {
            self.ids.insert(id.clone(), slot);
        }
        self.sessions[slot] = Some(Session {
            conn,
            outbox: Outbox::new(self.options.max_datagram),
            streams: HashMap::new(),
            ids,
            peer: from,
        });
        Some(slot)
    }

    /// Fires due timers, serves streams, sends what is due, forgets closed
    /// connections; returns when the loop must next wake.
    fn service(&mut self) -> Option<Instant> {
        let mut deadline = None;
        for slot in 0..self.sessions.len() {
            let Some(session) = self.sessions[slot].as_mut() else {
                continue;
            };
            config::on_due_timeout(&mut session.conn);
            session.serve(&self.options);
            let flushed = session.outbox.flush(&self.udp, &mut session.conn);
            if session.conn.is_closed() || flushed.is_err() {
                self.close(slot);
                continue;
            }
            let held = flushed.ok().and_then(|f| f.deadline());
            deadline = earliest(deadline, earliest(held, timer_deadline(&session.conn)));
        }
        deadline
    }

    fn close(&mut self, slot: usize) {
        if let Some(session) = self.sessions[slot].take() {
            for id in &session.ids {
                self.ids.remove(id);
            }
            let stats = session.conn.stats();
            println!(
                "client={} closed: sent {} packets, lost {}, retransmitted {}",
                session.peer, stats.sent, stats.lost, stats.retrans
            );
        }
    }
}

impl Session {
    fn serve(&mut self, options: &ServerOptions) {
        let readable: Vec<u64> = self.conn.readable().collect();
        for id in readable {
            self.read_request(id, options);
        }
        let sending: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, state)| matches!(state, StreamState::Sending(_)))
            .map(|(&id, _)| id)
            .collect();
        for id in sending {
            self.pump(id);
        }
    }

    fn read_request(&mut self, id: u64, options: &ServerOptions) {
        let mut buf = [0u8; 4096];
        loop {
            let Ok((len, fin)) = self.conn.stream_recv(id, &mut buf) else {
                return;
            };
            let state = self
                .streams
                .entry(id)
                .or_insert_with(|| StreamState::Reading(Vec::new()));
            let StreamState::Reading(request) = state else {
                return;
            };
            request.extend_from_slice(&buf[..len]);
            if request.len() > MAX_REQUEST_BYTES || fin {
                let request = Request::parse(request);
                let answer = Answer::to(request, &options.root, || self.counters());
                let pending = answer.head();
                let file = match answer {
                    Answer::File { path, file, size } => {
                        println!("client={} GET {path} ({size} bytes)", self.peer);
                        Some(file)
                    }
                    Answer::Whole(_) => None,
                };
                let sending = Sending {
                    pending,
                    offset: 0,
                    file,
                };
                self.streams.insert(id, StreamState::Sending(sending));
                return;
            }
        }
    }

    fn counters(&self) -> SenderCounters {
        let stats = self.conn.stats();
        let path = self.conn.path_stats().next();
        SenderCounters {
            retransmitted_packets: stats.retrans as u64,
            lost_packets: stats.lost as u64,
            ptos: path.as_ref().map_or(0, |p| p.total_pto_count as u64),
            srtt_us: path.as_ref().map_or(0, |p| p.rtt.as_micros() as u64),
            cwnd: path.as_ref().map_or(0, |p| p.cwnd as u64),
        }
    }

    /// Writes as much of stream `id`'s response as quiche takes.
    fn pump(&mut self, id: u64) {
        let Some(StreamState::Sending(response)) = self.streams.get_mut(&id) else {
            return;
        };
        loop {
            if response.offset == response.pending.len() {
                response.pending.clear();
                response.offset = 0;
                if let Some(file) = response.file.as_mut() {
                    response.pending.resize(READ_CHUNK, 0);
                    match file.read(&mut response.pending) {
                        Ok(0) | Err(_) => {
                            // A read error ends the body early; the client
                            // sees fewer bytes than announced and fails.
                            response.pending.clear();
                            response.file = None;
                        }
                        Ok(len) => response.pending.truncate(len),
                    }
                }
            }
            if response.pending.is_empty() {
                if self.conn.stream_send(id, &[], true).is_ok() {
                    self.streams.remove(&id);
                }
                return;
            }
            match self
                .conn
                .stream_send(id, &response.pending[response.offset..], false)
            {
                Ok(written) => {
                    response.offset += written;
                    if response.offset < response.pending.len() {
                        return;
                    }
                }
                Err(quiche::Error::Done) => return,
                Err(_) => {
                    // Reset or stopped by the peer: nothing more to send.
                    self.streams.remove(&id);
                    return;
                }
            }
        }
    }
}

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
    /// The largest UDP payload either way.
    pub max_datagram: usize,
}

/// Where a download stands.
enum Phase {
    Handshake,
    Downloading(Box<Download>, Response),
    /// The file came whole (and its clock stopped); the counters are due.
    AskingStats(FileReport, Vec<u8>),
    Done(Box<FlowReport>),
}

const GET_STREAM: u64 = 0;
const STATS_STREAM: u64 = 4;

/// Downloads `options.path` into `options.output` and returns the report
/// (the server's counters, this client's timing and hash).
pub fn get(options: &GetOptions) -> anyhow::Result<FlowReport> {
    let mut udp = UdpLoop::bind(any_address(options.server)).context("cannot open a UDP socket")?;
    let mut config = file_config(&options.cc, options.max_datagram)?;
    config::trust(&mut config, options.ca.as_deref())?;
    let scid = config::random_cid(&ring::rand::SystemRandom::new())?;
    let local = udp.local_addr();
    let mut conn = quiche::connect(
        Some(&options.server_name),
        &quiche::ConnectionId::from_ref(&scid),
        local,
        options.server,
        &mut config,
    )
    .context("quiche connect")?;
    config::key_log(&mut conn);
    // The file is made before the handshake, so a bad --output fails at
    // once; its clock starts with the request.
    let mut download = Some(Download::create(
        options.output.clone(),
        &options.path,
        ONE_FILE_BUFFER,
    )?);
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
        config::on_due_timeout(&mut conn);
        phase = advance(&mut conn, phase, &mut download, options)?;
        if matches!(phase, Phase::Done(_)) && closing_since.is_none() {
            // Errors here mean the connection is already closing.
            let _ = conn.close(true, 0, b"done");
            closing_since = Some(Instant::now());
        }
    }
    match phase {
        Phase::Done(report) => Ok(*report),
        _ => bail!(
            "connection closed before the download finished: {}",
            config::why_closed(&conn)
        ),
    }
}

fn advance(
    conn: &mut quiche::Connection,
    phase: Phase,
    download: &mut Option<Download>,
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
            let mut download = download.take().context("one download per client")?;
            download.requested_now();
            Phase::Downloading(Box::new(download), Response::default())
        }
        Phase::Downloading(mut download, mut response) => {
            loop {
                let (len, fin) = match conn.stream_recv(GET_STREAM, &mut buf) {
                    Ok(read) => read,
                    Err(quiche::Error::Done) => break,
                    Err(e) => bail!("download stream failed: {e}"),
                };
                response.take(&buf[..len], &mut download)?;
                if fin {
                    response.end(&download)?;
                    let finished = download.finish()?;
                    conn.stream_send(STATS_STREAM, &Request::Stats.encode(), true)
                        .context("cannot ask for the server's counters")?;
                    return Ok(Phase::AskingStats(finished, Vec::new()));
                }
            }
            Phase::Downloading(download, response)
        }
        Phase::AskingStats(finished, mut response) => {
            loop {
                let (len, fin) = match conn.stream_recv(STATS_STREAM, &mut buf) {
                    Ok(read) => read,
                    Err(quiche::Error::Done) => break,
                    Err(e) => bail!("counters stream failed: {e}"),
                };
                response.extend_from_slice(&buf[..len]);
                if fin {
                    let counters = file::parse_counters(&response)?;
                    let report = file::flow_report(&finished, &counters, &options.cc);
                    return Ok(Phase::Done(Box::new(report)));
                }
            }
            Phase::AskingStats(finished, response)
        }
        other => other,
    })
}
