//! The baseline server: serves the files under a root directory, one
//! `GET` per bidirectional stream, to any number of clients, and answers
//! `STATS` with its sender counters for that connection.
//!
//! Connection IDs are random; the client's original destination ID maps to
//! the same connection until the handshake moves it to ours. No Retry: the
//! server runs on emulated links for measurements, not on the Internet.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use ring::rand::SecureRandom;

use super::protocol::{self, Request, SenderCounters, MAX_REQUEST_BYTES};
use super::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use super::tls::{self, Certificate};

/// How much of a file is read per refill of a stream's send buffer.
const READ_CHUNK: usize = 256 * 1024;

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
    /// The largest UDP payload either way (`tls::config`).
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
    Sending(Response),
}

struct Response {
    pending: Vec<u8>,
    offset: usize,
    file: Option<File>,
}

impl Server {
    /// Makes the certificate, configures quiche and binds the socket.
    pub fn bind(options: ServerOptions) -> anyhow::Result<Self> {
        let mut config = tls::config(&options.cc, options.max_datagram)?;
        Certificate::generate(&options.cert_dir)?.install(&mut config)?;
        if !options.root.is_dir() {
            anyhow::bail!("--root {} is not a directory", options.root.display());
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
        let Ok(header) = quiche::Header::from_slice(datagram, quiche::MAX_CONN_ID_LEN) else {
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
        let mut scid = [0u8; quiche::MAX_CONN_ID_LEN];
        self.rng.fill(&mut scid).ok()?;
        let scid_ref = quiche::ConnectionId::from_ref(&scid);
        let conn = quiche::accept(
            &scid_ref,
            None,
            self.udp.local_addr(),
            from,
            &mut self.config,
        )
        .ok()?;
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
            if session
                .conn
                .timeout_instant()
                .is_some_and(|at| at <= Instant::now())
            {
                session.conn.on_timeout();
            }
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
            let (len, fin) = match self.conn.stream_recv(id, &mut buf) {
                Ok(read) => read,
                Err(_) => return,
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
                let response = self.respond(&request, options);
                self.streams.insert(id, StreamState::Sending(response));
                return;
            }
        }
    }

    fn respond(
        &self,
        request: &Result<Request, protocol::ProtocolError>,
        options: &ServerOptions,
    ) -> Response {
        let refusal = |reason: String| Response {
            pending: protocol::err_header(&reason),
            offset: 0,
            file: None,
        };
        match request {
            Err(e) => refusal(e.to_string()),
            Ok(Request::Stats) => {
                let body = serde_json::to_vec(&self.counters()).unwrap_or_default();
                let mut pending = protocol::ok_header(body.len() as u64);
                pending.extend_from_slice(&body);
                Response {
                    pending,
                    offset: 0,
                    file: None,
                }
            }
            Ok(Request::Get(path)) => {
                let opened = protocol::resolve(&options.root, path)
                    .map_err(|e| e.to_string())
                    .and_then(|full| {
                        let file = File::open(&full).map_err(|e| format!("{path}: {e}"))?;
                        let size = file.metadata().map_err(|e| format!("{path}: {e}"))?;
                        if !size.is_file() {
                            return Err(format!("{path} is not a file"));
                        }
                        Ok((file, size.len()))
                    });
                match opened {
                    Ok((file, size)) => {
                        println!("client={} GET {path} ({size} bytes)", self.peer);
                        Response {
                            pending: protocol::ok_header(size),
                            offset: 0,
                            file: Some(file),
                        }
                    }
                    Err(reason) => refusal(reason),
                }
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
