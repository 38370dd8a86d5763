//! hq-interop over quiche 0.28 (BoringSSL, a mio loop): the server behind
//! `quiche-hq server` and the client behind `quiche-hq client`.
//!
//! What quiche's public API allows, the peer does: Retry (`quiche::retry`,
//! with an HMAC'd token naming the client's address and original
//! connection ID), resumption and 0-RTT (`Connection::session` /
//! `set_session`, `Config::enable_early_data`), active migration of the
//! client (`Connection::migrate_source` onto a new socket; the server
//! issues spare connection IDs for it), key logs (`SSLKEYLOGFILE`). What it
//! does not allow, the client does not offer: quiche 0.28 has no call to
//! initiate a key update (it only answers one) and no way to restrict the
//! TLS 1.3 cipher suites BoringSSL offers, and it speaks QUIC v1 only
//! (`quiche::version_is_supported`).

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use ring::rand::SecureRandom;

use super::config::{self, random_cid, CID_LEN};
use super::socket::{earliest, timer_deadline, Outbox, UdpLoop};
use crate::peers::cert::Certificate;
use crate::peers::files::{self, Download, FileReport, UNBUFFERED};
use crate::peers::hq::{self, ClientOptions, ClientReport, ALPN};
use crate::peers::net::any_address;
use crate::peers::settings::{CLOSE_GRACE, MAX_DATAGRAM_SIZE};
use crate::peers::url::Url;

/// How much of a file is read per refill of a stream's send buffer.
const READ_CHUNK: usize = 64 * 1024;

/// How often a migrated client reads the socket it left.
const OLD_SOCKET_POLL: Duration = Duration::from_millis(5);

/// The configuration both ends share: hq-interop, the stream limit,
/// 0-RTT, room for a migrating client's connection IDs.
fn hq_config() -> anyhow::Result<quiche::Config> {
    let mut config = config::config(&[ALPN], MAX_DATAGRAM_SIZE)?;
    config.set_initial_max_streams_bidi(hq::MAX_CONCURRENT_STREAMS);
    config.set_initial_max_streams_uni(hq::MAX_CONCURRENT_STREAMS);
    config.set_active_connection_id_limit(4);
    config.enable_early_data();
    Ok(config)
}

/// What `quiche-hq server` is asked to do.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory whose files are served.
    pub root: PathBuf,
    /// The certificate chain and key presented.
    pub certificate: Certificate,
    /// Send a Retry to every client whose Initial carries no valid token.
    pub retry: bool,
}

/// A bound server, ready to run.
pub struct Server {
    udp: UdpLoop,
    config: quiche::Config,
    options: ServerOptions,
    sessions: Vec<Option<Session>>,
    /// Every connection ID a client may send to → index into `sessions`.
    ids: HashMap<Vec<u8>, usize>,
    rng: ring::rand::SystemRandom,
    /// Signs Retry tokens; made at start, so tokens die with the process.
    token_key: ring::hmac::Key,
}

struct Session {
    conn: quiche::Connection,
    outbox: Outbox,
    streams: HashMap<u64, Stream>,
    ids: Vec<Vec<u8>>,
}

enum Stream {
    /// Collecting the request until its FIN.
    Reading(Vec<u8>),
    /// Sending the file.
    Sending {
        file: File,
        pending: Vec<u8>,
        offset: usize,
    },
}

impl Server {
    /// Configures quiche with the certificate and binds the socket.
    pub fn bind(options: ServerOptions) -> anyhow::Result<Self> {
        if !options.root.is_dir() {
            bail!("--root {} is not a directory", options.root.display());
        }
        let mut config = hq_config()?;
        config::install(&mut config, &options.certificate)?;
        let udp = UdpLoop::bind(options.listen)
            .with_context(|| format!("cannot listen on {}", options.listen))?;
        let rng = ring::rand::SystemRandom::new();
        let token_key = ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &rng)
            .map_err(|_| anyhow::anyhow!("no randomness"))?;
        Ok(Self {
            udp,
            config,
            options,
            sessions: Vec::new(),
            ids: HashMap::new(),
            rng,
            token_key,
        })
    }

    /// The address bound.
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
            None => match self.new_client(&header, from) {
                Some(slot) => slot,
                None => return,
            },
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

    /// A first Initial: version negotiation, a Retry, or a new session.
    fn new_client(&mut self, header: &quiche::Header, from: SocketAddr) -> Option<usize> {
        if header.ty != quiche::Type::Initial {
            return None;
        }
        let mut out = [0u8; MAX_DATAGRAM_SIZE];
        if !quiche::version_is_supported(header.version) {
            let len = quiche::negotiate_version(&header.scid, &header.dcid, &mut out).ok()?;
            let _ = self.udp.send_now(&out[..len], from);
            return None;
        }
        let mut odcid = None;
        if self.options.retry {
            let token = header.token.as_deref().unwrap_or_default();
            if token.is_empty() {
                let new_scid = random_cid(&self.rng).ok()?;
                let token = self.mint_token(&header.dcid, from);
                let len = quiche::retry(
                    &header.scid,
                    &header.dcid,
                    &quiche::ConnectionId::from_ref(&new_scid),
                    &token,
                    header.version,
                    &mut out,
                )
                .ok()?;
                let _ = self.udp.send_now(&out[..len], from);
                return None;
            }
            // An invalid token: drop, as RFC 9000 §8.1.3 allows.
            odcid = Some(self.validate_token(token, from)?);
        }
        // After a Retry the client already sends to the ID we chose.
        let scid = match odcid {
            Some(_) => header.dcid.to_vec(),
            None => random_cid(&self.rng).ok()?.to_vec(),
        };
        let odcid_ref = odcid
            .as_ref()
            .map(|id: &Vec<u8>| quiche::ConnectionId::from_ref(id));
        let mut conn = quiche::accept(
            &quiche::ConnectionId::from_ref(&scid),
            odcid_ref.as_ref(),
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
        let ids = vec![header.dcid.to_vec(), scid];
        for id in &ids {
            self.ids.insert(id.clone(), slot);
        }
        self.sessions[slot] = Some(Session {
            conn,
            outbox: Outbox::default(),
            streams: HashMap::new(),
            ids,
        });
        Some(slot)
    }

    /// A Retry token: the original destination ID and a MAC over it and
    /// the client's address, so only that address can use it.
    fn mint_token(&self, odcid: &[u8], from: SocketAddr) -> Vec<u8> {
        let tag = ring::hmac::sign(&self.token_key, &token_input(odcid, from));
        let mut token = vec![odcid.len() as u8];
        token.extend_from_slice(odcid);
        token.extend_from_slice(tag.as_ref());
        token
    }

    /// The original destination ID in a token minted for `from`.
    fn validate_token(&self, token: &[u8], from: SocketAddr) -> Option<Vec<u8>> {
        let (&len, rest) = token.split_first()?;
        let odcid = rest.get(..len as usize)?;
        let tag = rest.get(len as usize..)?;
        ring::hmac::verify(&self.token_key, &token_input(odcid, from), tag).ok()?;
        Some(odcid.to_vec())
    }

    /// Fires due timers, serves streams, sends what is due, keeps the
    /// connection ID map current, forgets closed connections; returns when
    /// the loop must next wake.
    fn service(&mut self) -> Option<Instant> {
        let mut deadline = None;
        for slot in 0..self.sessions.len() {
            let Some(session) = self.sessions[slot].as_mut() else {
                continue;
            };
            config::on_due_timeout(&mut session.conn);
            session.serve(&self.options.root);
            for id in session.spare_ids(&self.rng) {
                self.ids.insert(id, slot);
            }
            while let Some(retired) = session.conn.retired_scid_next() {
                self.ids.remove(retired.as_ref());
            }
            let flushed = session.outbox.flush(&self.udp, &mut session.conn);
            flush_probes(&self.udp, &mut session.conn);
            if session.conn.is_closed() || flushed.is_err() {
                if let Some(session) = self.sessions[slot].take() {
                    for id in &session.ids {
                        self.ids.remove(id);
                    }
                }
                continue;
            }
            let held = flushed.ok().and_then(|f| f.deadline());
            deadline = earliest(deadline, earliest(held, timer_deadline(&session.conn)));
        }
        deadline
    }
}

/// Gives the peer as many spare connection IDs as it takes, once the
/// handshake is done (a migrating client needs one of the server's, and
/// quiche wants one of its own for the new path too); returns them.
fn issue_spare_ids(conn: &mut quiche::Connection, rng: &ring::rand::SystemRandom) -> Vec<Vec<u8>> {
    let mut made = Vec::new();
    if !conn.is_established() {
        return made;
    }
    while conn.scids_left() > 0 {
        let Ok(cid) = random_cid(rng) else { break };
        let mut reset = [0u8; 16];
        if rng.fill(&mut reset).is_err() {
            break;
        }
        let id = quiche::ConnectionId::from_ref(&cid);
        if conn
            .new_scid(&id, u128::from_be_bytes(reset), false)
            .is_err()
        {
            break;
        }
        made.push(cid.to_vec());
    }
    made
}

/// Sends what quiche has for paths other than the active one (path
/// probes: PATH_CHALLENGE and PATH_RESPONSE), which `send()` leaves to
/// `send_on_path` (quiche's apps/ send on every path the same way).
fn flush_probes(udp: &UdpLoop, conn: &mut quiche::Connection) {
    let local = udp.local_addr();
    let active = conn.path_stats().find(|p| p.active).map(|p| p.peer_addr);
    let others: Vec<SocketAddr> = conn
        .paths_iter(local)
        .filter(|peer| Some(*peer) != active)
        .collect();
    let mut packet = [0u8; MAX_DATAGRAM_SIZE];
    for peer in others {
        while let Ok((len, info)) = conn.send_on_path(&mut packet, Some(local), Some(peer)) {
            // A probe lost here is resent by quiche's path timers.
            let _ = udp.send_now(&packet[..len], info.to);
        }
    }
}

fn token_input(odcid: &[u8], from: SocketAddr) -> Vec<u8> {
    let mut input = odcid.to_vec();
    input.extend_from_slice(from.to_string().as_bytes());
    input
}

impl Session {
    /// New connection IDs for the client to migrate to, once established.
    fn spare_ids(&mut self, rng: &ring::rand::SystemRandom) -> Vec<Vec<u8>> {
        let made = issue_spare_ids(&mut self.conn, rng);
        self.ids.extend(made.iter().cloned());
        made
    }

    fn serve(&mut self, root: &Path) {
        while let Some(event) = self.conn.path_event_next() {
            // quiche leaves validating a client's new path to the
            // application (its apps/ server probes it at once, as here).
            if let quiche::PathEvent::New(local, peer) = event {
                let _ = self.conn.probe_path(local, peer);
            }
        }
        if !self.conn.is_established() && !self.conn.is_in_early_data() {
            return;
        }
        let readable: Vec<u64> = self.conn.readable().collect();
        for id in readable {
            self.read_request(id, root);
        }
        let sending: Vec<u64> = self
            .streams
            .iter()
            .filter(|(_, s)| matches!(s, Stream::Sending { .. }))
            .map(|(&id, _)| id)
            .collect();
        for id in sending {
            self.pump(id);
        }
    }

    fn read_request(&mut self, id: u64, root: &Path) {
        let mut buf = [0u8; 4096];
        loop {
            let Ok((len, fin)) = self.conn.stream_recv(id, &mut buf) else {
                return;
            };
            let state = self
                .streams
                .entry(id)
                .or_insert_with(|| Stream::Reading(Vec::new()));
            let Stream::Reading(request) = state else {
                return;
            };
            request.extend_from_slice(&buf[..len]);
            if !fin && request.len() <= hq::MAX_REQUEST_BYTES {
                continue;
            }
            let file = hq::parse_request(request)
                .ok()
                .and_then(|path| files::file_under(root, &path))
                .and_then(|full| File::open(full).ok());
            match file {
                Some(file) => {
                    self.streams.insert(
                        id,
                        Stream::Sending {
                            file,
                            pending: Vec::new(),
                            offset: 0,
                        },
                    );
                }
                None => {
                    self.streams.remove(&id);
                    let _ = self.conn.stream_shutdown(
                        id,
                        quiche::Shutdown::Write,
                        hq::NOT_FOUND_ERROR.into(),
                    );
                }
            }
            return;
        }
    }

    /// Writes as much of stream `id`'s file as quiche takes.
    fn pump(&mut self, id: u64) {
        let Some(Stream::Sending {
            file,
            pending,
            offset,
        }) = self.streams.get_mut(&id)
        else {
            return;
        };
        loop {
            if *offset == pending.len() {
                pending.resize(READ_CHUNK, 0);
                *offset = 0;
                match file.read(pending) {
                    Ok(len) => pending.truncate(len),
                    // A read error ends the body early: the client's hash
                    // shows it.
                    Err(_) => pending.clear(),
                }
            }
            if pending.is_empty() {
                if self.conn.stream_send(id, &[], true).is_ok() {
                    self.streams.remove(&id);
                }
                return;
            }
            match self.conn.stream_send(id, &pending[*offset..], false) {
                Ok(written) => {
                    *offset += written;
                    if *offset < pending.len() {
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

/// Runs the client: every URL downloaded into `options.output_dir`, or an
/// error naming what failed. Refuses what quiche cannot do.
pub fn run_client(options: &ClientOptions) -> anyhow::Result<ClientReport> {
    if options.chacha20 {
        bail!("quiche 0.28 cannot restrict the TLS 1.3 cipher suites BoringSSL offers");
    }
    if options.key_update {
        bail!("quiche 0.28 cannot initiate a key update (it only answers one)");
    }
    let first = options.urls.first().context("no URL given")?;
    let mut config = hq_config()?;
    config::trust(&mut config, options.ca.as_deref())?;
    let mut report = ClientReport {
        stack: "quiche".into(),
        version: "QUIC v1".into(),
        alpn: String::from_utf8_lossy(ALPN).into_owned(),
        ..Default::default()
    };
    let mut session: Option<Vec<u8>> = None;
    for urls in options.connections() {
        let mut client = Client::connect(first, &mut config, session.as_deref(), options)?;
        report.handshakes += 1;
        client.run(urls)?;
        report.resumed = Some(client.conn.is_resumed());
        report.migrated |= client.migrated;
        if client.sent_early {
            // quiche does not say whether the server took the 0-RTT data;
            // the link sees whether it was sent.
            report.zero_rtt_accepted = None;
        }
        session = client.conn.session().map(<[u8]>::to_vec);
        report.files.extend(client.files.into_iter().flatten());
    }
    Ok(report)
}

/// One client connection and its downloads.
struct Client<'a> {
    udp: UdpLoop,
    /// The socket left by a migration, still read: packets of the old
    /// path (in flight, or probes) are answered from it.
    old_udp: Option<UdpLoop>,
    conn: quiche::Connection,
    outbox: Outbox,
    options: &'a ClientOptions,
    rng: ring::rand::SystemRandom,
    /// Downloads under way, by stream ID.
    open: HashMap<u64, (usize, Download)>,
    files: Vec<Option<FileReport>>,
    next_request: usize,
    sent_early: bool,
    data_seen: bool,
    migrated: bool,
}

impl<'a> Client<'a> {
    fn connect(
        server: &Url,
        config: &mut quiche::Config,
        session: Option<&[u8]>,
        options: &'a ClientOptions,
    ) -> anyhow::Result<Self> {
        let udp = UdpLoop::bind(any_address(server.address)).context("cannot bind a socket")?;
        let rng = ring::rand::SystemRandom::new();
        let scid = random_cid(&rng)?;
        let mut conn = quiche::connect(
            Some(&server.server_name()),
            &quiche::ConnectionId::from_ref(&scid),
            udp.local_addr(),
            server.address,
            config,
        )
        .context("quiche refuses to connect")?;
        config::key_log(&mut conn);
        if let Some(session) = session {
            // A session quiche cannot use means a full handshake, not a failure.
            let _ = conn.set_session(session);
        }
        Ok(Self {
            udp,
            old_udp: None,
            conn,
            outbox: Outbox::default(),
            options,
            rng,
            open: HashMap::new(),
            files: Vec::new(),
            next_request: 0,
            sent_early: false,
            data_seen: false,
            migrated: false,
        })
    }

    /// Downloads `urls` on this connection, then closes it.
    fn run(&mut self, urls: &[Url]) -> anyhow::Result<()> {
        self.files = vec![None; urls.len()];
        let mut closing_since: Option<Instant> = None;
        // The ClientHello goes first: only then is a resumed connection in
        // early data, and the requests can go in 0-RTT.
        self.outbox
            .flush(&self.udp, &mut self.conn)
            .context("quiche cannot send")?;
        loop {
            config::on_due_timeout(&mut self.conn);
            if self.conn.is_closed() {
                if closing_since.is_some() {
                    return Ok(());
                }
                bail!(
                    "connection closed before the downloads ended: {}",
                    config::why_closed(&self.conn)
                );
            }
            match closing_since {
                None => {
                    self.request(urls)?;
                    self.receive()?;
                    self.migrate_once_data_flows()?;
                    if self.files.iter().all(Option::is_some) {
                        // quiche sends the close frame, then drains.
                        let _ = self.conn.close(true, 0, b"done");
                        closing_since = Some(Instant::now());
                    }
                }
                Some(since) if since.elapsed() > CLOSE_GRACE => return Ok(()),
                Some(_) => {}
            }
            let flushed = match &self.old_udp {
                Some(old) => self.outbox.flush_from(&[&self.udp, old], &mut self.conn),
                None => self.outbox.flush(&self.udp, &mut self.conn),
            }
            .context("quiche cannot send")?;
            flush_probes(&self.udp, &mut self.conn);
            let mut deadline = earliest(flushed.deadline(), timer_deadline(&self.conn));
            if let Some(since) = closing_since {
                deadline = earliest(deadline, Some(since + CLOSE_GRACE));
            }
            if self.old_udp.is_some() {
                // Two sockets, one poll each: look at the old one often.
                deadline = earliest(deadline, Some(Instant::now() + OLD_SOCKET_POLL));
            }
            let mut arrived = Vec::new();
            let local = self.udp.local_addr();
            self.udp.wait(deadline, |datagram, from| {
                arrived.push((datagram.to_vec(), from, local));
            })?;
            if let Some(old) = self.old_udp.as_mut() {
                let local = old.local_addr();
                old.wait(Some(Instant::now()), |datagram, from| {
                    arrived.push((datagram.to_vec(), from, local));
                })?;
            }
            for (mut datagram, from, to) in arrived {
                // A datagram quiche rejects is dropped; the connection goes on.
                let _ = self.conn.recv(&mut datagram, quiche::RecvInfo { from, to });
            }
        }
    }

    /// Sends the next requests the server's stream limit allows (in 0-RTT
    /// when the connection resumed with early data).
    fn request(&mut self, urls: &[Url]) -> anyhow::Result<()> {
        let early = self.conn.is_in_early_data();
        if !self.conn.is_established() && !early {
            return Ok(());
        }
        while self.next_request < urls.len() && self.conn.peer_streams_left_bidi() > 0 {
            let index = self.next_request;
            let stream = 4 * index as u64;
            let url = &urls[index];
            let download = Download::under(&self.options.output_dir, &url.path, UNBUFFERED)?;
            match self.conn.stream_send(stream, &hq::request(&url.path), true) {
                Ok(_) => {}
                Err(quiche::Error::Done | quiche::Error::StreamLimit) => return Ok(()),
                Err(e) => bail!("cannot send the request for /{}: {e}", url.path),
            }
            self.open.insert(stream, (index, download));
            self.next_request += 1;
            self.sent_early |= early;
        }
        Ok(())
    }

    fn receive(&mut self) -> anyhow::Result<()> {
        let mut buf = vec![0u8; 65_536];
        let readable: Vec<u64> = self.conn.readable().collect();
        for stream in readable {
            loop {
                let (len, fin) = match self.conn.stream_recv(stream, &mut buf) {
                    Ok(read) => read,
                    Err(quiche::Error::Done) => break,
                    Err(e) => {
                        let path = self.open.get(&stream).map(|(_, d)| d.path().to_string());
                        bail!("/{} failed: {e}", path.unwrap_or_default());
                    }
                };
                self.data_seen |= len > 0;
                let Some((_, download)) = self.open.get_mut(&stream) else {
                    break;
                };
                download.write(&buf[..len])?;
                if fin {
                    if let Some((index, download)) = self.open.remove(&stream) {
                        self.files[index] = Some(download.finish()?);
                    }
                    break;
                }
            }
        }
        Ok(())
    }

    /// Moves to a new socket once the first response bytes are in and the
    /// server has given a spare connection ID.
    fn migrate_once_data_flows(&mut self) -> anyhow::Result<()> {
        if !self.options.migrate || self.migrated || !self.data_seen {
            return Ok(());
        }
        issue_spare_ids(&mut self.conn, &self.rng);
        if self.conn.available_dcids() == 0 {
            return Ok(());
        }
        let udp = UdpLoop::bind(any_address(self.udp.local_addr()))
            .context("cannot bind a socket to migrate to")?;
        self.conn
            .migrate_source(udp.local_addr())
            .context("quiche refuses to migrate")?;
        // The old socket stays open: what is in flight to it still arrives.
        self.old_udp = Some(std::mem::replace(&mut self.udp, udp));
        self.migrated = true;
        Ok(())
    }
}
