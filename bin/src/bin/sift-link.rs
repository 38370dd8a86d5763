//! sift-link: a real-time UDP relay that impairs traffic with the same
//! link models as sift's simulator (DESIGN §8).
//!
//! Clients send to `--listen`; each new client address gets its own
//! upstream socket towards `--to` (NAT-style), so many clients work at once
//! and the server's replies find their way back. All clients share one
//! `Link` per direction, like a qdisc on an interface: forward is
//! client → server, reverse is server → client. The models never read the
//! clock; this binary feeds them `Instant::now()`.
//!
//! Routes: each `--route LISTEN=TO` is one more listening socket whose
//! clients are relayed to its own server, through the same two links: a
//! second flow (cross traffic) shares the bottleneck queue with the first.
//!
//! Checksums: a sift endpoint with corruption notices on sends UDP with a
//! zero checksum, which IPv4 always accepts and IPv6 only on a socket with
//! `UDP_NO_CHECK6_RX`; every relay socket asks for it, so sift is relayed
//! over either family alike. What the relay delivers carries a checksum the
//! kernel computes over the delivered bytes, corrupted or not, so its own
//! corruption reaches any receiver; `--send-zero-checksums` sends zero
//! instead, for corruption on a real link beyond the relay.
//!
//! Addresses: `--listen [::]:PORT` takes both families; an IPv4 client is
//! known (and logged) by its plain address, not `::ffff:a.b.c.d`.
//!
//! Threads: one reader per socket (the listening one and each upstream
//! one), blocking with a read timeout, hands datagrams to the main thread
//! over a channel; the main thread owns both links and sleeps in
//! `recv_timeout` until the next datagram or the next link event.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Parser, ValueEnum};
use serde::Serialize;
use sift::conn::canonical_peer;
use sift::io::{bind_udp, SocketOptions};
use sift::sim::link::{
    Corruption, Delivery, Fate, Link, LinkConfig, LinkCounters, QueueDelaySummary,
};
use sift::wire::Ecn;
use sift_bin::census::{BeforeValidation, Census};
use sift_bin::cli::ecn_socket::{enable_ecn_receive, recv_with_ecn, send_with_ecn};

/// Largest UDP payload.
const MAX_DATAGRAM: usize = 65_535;
/// How long a socket reader blocks before it checks for shutdown.
const READ_TIMEOUT: Duration = Duration::from_millis(200);
/// Longest the main loop sleeps with nothing scheduled, so signals are
/// noticed promptly.
const MAX_IDLE_WAIT: Duration = Duration::from_millis(100);
/// Packet ids carry the client's session number above this many bits.
const SESSION_SHIFT: u32 = 40;

const EXAMPLES: &str = "\
Examples:
  # The Veno paper's bottleneck: 1.6 Mb/s, 120 ms RTT, 12-packet queue, 1% loss
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 \\
      --forward \"delay 60ms rate 1600kbit limit 12 loss 1%\" --reverse \"delay 60ms\"

  # HACK-style burst corruption hitting the header of 95% of corrupted packets
  sift-link --listen 0.0.0.0:5000 --to server:4433 \\
      --forward \"delay 5ms corrupt-burst 5% 2-10 corrupt-where header=95%\" --seed 7

  # Over IPv6: 2% of the server's datagrams corrupted on the way to the client
  sift-link --listen [::1]:5000 --to [::1]:4433 --reverse \"corrupt 2%\"

  # A NAT that rebinds every client to a new port every 2 s (connection migration)
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 --rebind-every 2
  # ...whose old mappings still carry replies for 30 s, as a real NAT's do
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 --rebind-every 2 --rebind-linger 30

  # 1% random loss, and a CoDel bottleneck queue that marks ECN-capable packets CE
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 \\
      --forward \"delay 50ms rate 50mbit limit 420 loss 1% codel target 5ms interval 100ms ecn\"

  # An L4S bottleneck (DualPI2 with tc's defaults), and a path that bleaches ECN back
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 \\
      --forward \"delay 20ms rate 50mbit dualpi2\" --reverse \"delay 20ms bleach\"

  # Cross traffic: a second server's flow through the same bottleneck queue
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 \\
      --route 127.0.0.1:5001=127.0.0.1:4434 --reverse \"delay 15ms rate 10mbit limit 25\"

  # Log every packet's fate as JSON lines; print counters with `kill -USR1 PID`
  sift-link --listen 127.0.0.1:5000 --to 127.0.0.1:4433 --forward \"loss gemodel 1% 30%\" \\
      --log fates.jsonl --log-format json

Impairment specs use tc-netem syntax (delay, distribution, loss random|state|gemodel,
corrupt, duplicate, reorder … gap, rate, limit, slot, seed) plus sift's ber, corrupt-gemodel,
corrupt-burst, corrupt-where, outage, stall, rate-steps, jitter-reorder and mtu BYTES (drop
datagrams whose IP packet exceeds BYTES, as a path with a smaller MTU does).
ECN: each datagram's ECN field is read on arrival (IP_RECVTOS / IPV6_RECVTCLASS), carried
through the link and set on the relayed datagram. netem's ecn marks the ECN-capable packets
that loss picks CE instead of dropping them (loss 100% ecn: every ECT packet arrives CE). An
AQM after the netem words replaces the drop-tail queue, in tc's words:
  codel [target TIME] [interval TIME] [ecn|noecn] [ce_threshold TIME] [limit PACKETS]
  dualpi2 [target TIME] [tupdate TIME] [alpha F] [beta F] [coupling_factor K]
          [step_thresh TIME] [classic_protection PERCENT] [l4s_ect|any_ect]
          [drop_on_overload|overflow] [limit PACKETS]
(tc's defaults: codel 5ms/100ms noecn; dualpi2 15ms/16ms, 0.16/3.2, k 2, step 1ms.) bleach
clears the ECN field of every datagram. The counters report CE marks, AQM drops, bleached
datagrams and queueing-delay percentiles. Unlike netem,
corrupted datagrams are delivered, over IPv4 and IPv6 alike: zero-checksum datagrams (sift
with corruption notices on) are accepted. As in netem, jitter behind a rate keeps packet order; add
jitter-reorder for per-packet delays (netem over a separate tbf), e.g.
  --reverse \"delay 20ms 5ms distribution normal rate 20mbit limit 200 jitter-reorder\"
A cellular-like radio: rate steps, a 150 ms stall every 5 s, in-order jitter:
  --reverse \"delay 20ms 5ms distribution pareto rate-steps 30mbit 3s 10mbit 2s stall 5s 150ms\"
Counters go to stderr on exit (Ctrl-C, SIGTERM) and on SIGUSR1; --stats FILE also writes
them, with the QUIC versions and packet types each direction carried, as JSON (the first 16
versions each by name, any more as \"other\"; handshakes counted by up to 16384 client IDs).";

/// Format of the per-packet log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// mahimahi link-log lines (`MS + SIZE` offered, `MS - SIZE` delivered,
    /// `MS d SIZE` dropped): FILE holds the forward direction, FILE.reverse the reverse.
    Mahimahi,
    /// One JSON object per line with time, direction, client, size and fate.
    Json,
}

/// A UDP relay that delays, limits, drops and corrupts datagrams with sift's link models.
#[derive(Debug, Parser)]
#[command(name = "sift-link", version, after_help = EXAMPLES)]
struct Args {
    /// Address clients send to (port 0 picks a free port; the address is printed).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The server every client's traffic is relayed to.
    #[arg(long, value_name = "ADDR")]
    to: String,
    /// One more listening address whose clients are relayed to their own
    /// server, through the same links and queues as --listen's (repeatable;
    /// port 0 picks a free port, printed as `route: from ADDR to ADDR`).
    #[arg(long = "route", value_name = "LISTEN=TO")]
    routes: Vec<String>,
    /// Impairments client → server, in netem syntax.
    #[arg(long, value_name = "SPEC", default_value = "")]
    forward: String,
    /// Impairments server → client, in netem syntax.
    #[arg(long, value_name = "SPEC", default_value = "")]
    reverse: String,
    /// Seed of the forward link; the reverse link uses SEED + 1. A `seed` in a spec wins.
    #[arg(long, value_name = "N", default_value_t = 1)]
    seed: u64,
    /// Write every packet's fate to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Format of --log.
    #[arg(long, value_enum, default_value_t = LogFormat::Mahimahi)]
    log_format: LogFormat,
    /// Send relayed datagrams with UDP checksum zero (IPv4 SO_NO_CHECK, IPv6
    /// UDP_NO_CHECK6_TX) instead of a checksum over the delivered bytes, so
    /// corruption on a real link beyond the relay reaches the receiver too.
    /// Receivers must accept zero checksums: IPv4 ones always do, IPv6 ones
    /// only with UDP_NO_CHECK6_RX (sift with corruption notices on).
    #[arg(long)]
    send_zero_checksums: bool,
    /// Act as a NAT that rebinds: every SECS seconds (fractions allowed)
    /// each client gets a new upstream socket, so the server sees it come
    /// from a new port; replies to the old port are dropped, as a NAT drops
    /// them once the mapping is gone (unless --rebind-linger keeps it). The
    /// server must follow the client (connection migration).
    #[arg(long, value_name = "SECS")]
    rebind_every: Option<f64>,
    /// After a rebinding, the old mapping still carries the server's
    /// replies back for SECS seconds (fractions allowed) before it is
    /// dropped, as a real NAT's lives until its timer expires (RFC 4787
    /// asks for at least two minutes) and the QUIC interop runner's NAT
    /// keeps its stale ones. 0, the default: replies to the old port are
    /// dropped at once, the harshest NAT.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0.0,
        requires = "rebind_every"
    )]
    rebind_linger: f64,
    /// Each rebinding also gives the client a new IP address (a carrier
    /// NAT's pool, the interop runner's rebind-addr), not only a new port:
    /// 127.0.0.2, 127.0.0.3, … in turn, so the server must be on IPv4
    /// loopback.
    #[arg(long, requires = "rebind_every")]
    rebind_addr: bool,
    /// On exit (and on SIGUSR1), write to FILE as JSON what each direction
    /// carried: datagrams, bytes, long-header packets per QUIC version and
    /// type, Version Negotiation, handshakes started (distinct client
    /// Initial SCIDs), and the link's own counters. What an interop check
    /// reads from a capture, without one.
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Forget a client after this many seconds without traffic either way.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    idle_timeout: u64,
    /// Log relay events to stderr (-v: debug, -vv: trace).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

/// Set by the signal handler: stop and print the counters.
static TERMINATE: AtomicBool = AtomicBool::new(false);
/// Set by the signal handler: print the counters and go on.
static REPORT: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    // Only atomic stores: async-signal-safe.
    if signal == libc::SIGUSR1 {
        REPORT.store(true, Ordering::SeqCst);
    } else {
        TERMINATE.store(true, Ordering::SeqCst);
    }
}

/// Installs the handlers for SIGINT, SIGTERM (stop) and SIGUSR1 (report).
/// std has no signal API; libc's `sigaction` is the smallest way to get one.
fn install_signal_handlers() -> Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1] {
        // SAFETY: `action` is fully initialised (zeroed, then the handler and
        // flags set); the handler only performs atomic stores, which are
        // async-signal-safe.
        let result = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if result != 0 {
            bail!(
                "cannot install a handler for signal {signal}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
    Ok(())
}

/// Which way a packet travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Direction {
    Forward,
    Reverse,
}

/// What a reader thread hands the main thread: a datagram and the ECN
/// codepoint it arrived with.
enum Inbound {
    /// A datagram from a client, received on the listening socket.
    FromClient {
        /// Which listening socket (0: --listen, then each --route).
        listener: usize,
        client: SocketAddr,
        bytes: Vec<u8>,
        ecn: Ecn,
    },
    /// A datagram from the server, received on a session's upstream socket.
    FromServer {
        session: u64,
        bytes: Vec<u8>,
        ecn: Ecn,
    },
}

/// One client's NAT binding.
struct Session {
    /// The listening socket the client sends to (0: --listen, then each
    /// --route), and the server it is relayed to.
    listener: usize,
    server: SocketAddr,
    client: SocketAddr,
    upstream: Arc<UdpSocket>,
    /// When `upstream` was opened (for --rebind-every).
    bound_at: Instant,
    last_activity: Instant,
    /// Tells the session's reader thread to stop.
    closed: Arc<AtomicBool>,
}

/// A per-packet log line in JSON form.
#[derive(Serialize)]
struct JsonEvent<'a> {
    t_ms: f64,
    direction: Direction,
    client: SocketAddr,
    id: u64,
    size: usize,
    /// `offered` (with the fate decided at once), `delivered`, or
    /// `dropped` (by the AQM, after it was offered).
    event: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    fate: Option<&'a Fate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    corruption: Option<&'a Corruption>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    duplicate: bool,
    /// The ECN codepoint it was offered or delivered with (tc's names:
    /// `Not-ECT`, `ECT(0)`, `ECT(1)`, `CE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    ecn: Option<&'static str>,
    /// How long it waited in the bottleneck queue (delivered only).
    #[serde(skip_serializing_if = "Option::is_none")]
    queue_delay_ms: Option<f64>,
}

/// Where per-packet lines go.
enum FateLog {
    None,
    Mahimahi {
        forward: BufWriter<File>,
        reverse: BufWriter<File>,
    },
    Json(BufWriter<File>),
}

fn create_log(path: &Path) -> Result<BufWriter<File>> {
    let file =
        File::create(path).with_context(|| format!("cannot create log {}", path.display()))?;
    Ok(BufWriter::new(file))
}

impl FateLog {
    fn open(path: Option<&Path>, format: LogFormat) -> Result<Self> {
        let Some(path) = path else {
            return Ok(FateLog::None);
        };
        match format {
            LogFormat::Json => Ok(FateLog::Json(create_log(path)?)),
            LogFormat::Mahimahi => {
                let mut reverse_path = path.as_os_str().to_owned();
                reverse_path.push(".reverse");
                let mut forward = create_log(path)?;
                let mut reverse = create_log(Path::new(&reverse_path))?;
                let base_ms = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis());
                for (file, direction) in [(&mut forward, "forward"), (&mut reverse, "reverse")] {
                    writeln!(file, "# sift-link {direction} link")?;
                    writeln!(file, "# base timestamp: {base_ms}")?;
                }
                Ok(FateLog::Mahimahi { forward, reverse })
            }
        }
    }

    fn write(&mut self, line: LogLine<'_>) -> Result<()> {
        match self {
            FateLog::None => Ok(()),
            FateLog::Mahimahi { forward, reverse } => {
                let file = match line.direction {
                    Direction::Forward => forward,
                    Direction::Reverse => reverse,
                };
                let symbol = match (line.event, line.fate) {
                    ("delivered", _) => '-',
                    ("dropped", _) => 'd',
                    (_, Some(Fate::QueueDrop | Fate::RandomLoss | Fate::OutageDrop)) => {
                        writeln!(file, "{} + {}", line.t.as_millis(), line.size)?;
                        'd'
                    }
                    _ => '+',
                };
                writeln!(file, "{} {symbol} {}", line.t.as_millis(), line.size)?;
                Ok(())
            }
            FateLog::Json(file) => {
                let event = JsonEvent {
                    t_ms: line.t.as_secs_f64() * 1e3,
                    direction: line.direction,
                    client: line.client,
                    id: line.id,
                    size: line.size,
                    event: line.event,
                    fate: line.fate,
                    corruption: line.corruption,
                    duplicate: line.duplicate,
                    ecn: line.ecn.map(Ecn::name),
                    queue_delay_ms: line.queue_delay.map(|d| d.as_secs_f64() * 1e3),
                };
                serde_json::to_writer(&mut *file, &event)?;
                writeln!(file)?;
                Ok(())
            }
        }
    }

    fn flush(&mut self) -> Result<()> {
        match self {
            FateLog::None => Ok(()),
            FateLog::Mahimahi { forward, reverse } => {
                forward.flush()?;
                reverse.flush()?;
                Ok(())
            }
            FateLog::Json(file) => Ok(file.flush()?),
        }
    }
}

/// One event for the fate log.
struct LogLine<'a> {
    t: Duration,
    direction: Direction,
    client: SocketAddr,
    id: u64,
    size: usize,
    event: &'static str,
    fate: Option<&'a Fate>,
    corruption: Option<&'a Corruption>,
    duplicate: bool,
    ecn: Option<Ecn>,
    queue_delay: Option<Duration>,
}

/// The relay's state, owned by the main thread.
struct Relay {
    /// Each listening socket and its server: --listen's first, then each
    /// --route's.
    listeners: Vec<(Arc<UdpSocket>, SocketAddr)>,
    /// How every relay socket is set up (checksums).
    socket_options: SocketOptions,
    forward: Link,
    reverse: Link,
    sessions: HashMap<u64, Session>,
    session_of_client: HashMap<(usize, SocketAddr), u64>,
    next_session: u64,
    next_packet: u64,
    inbound: Sender<Inbound>,
    log: FateLog,
    started: Instant,
    idle_timeout: Duration,
    rebind_every: Option<Duration>,
    /// `--rebind-linger`: how long an old mapping still carries replies.
    rebind_linger: Duration,
    /// `--rebind-addr`: rebindings change the client's IP address too.
    rebind_addr: bool,
    /// Old mappings still carrying replies: when each is dropped, and the
    /// flag that stops its reader thread.
    lingering: Vec<(Instant, Arc<AtomicBool>)>,
    rebinds: u64,
    /// What each direction carried, for --stats.
    census: Censuses,
    stats: Option<PathBuf>,
}

/// `--stats`'s file: each direction's census and link counters.
#[derive(Default, Serialize)]
struct Censuses {
    client_to_server: Census,
    server_to_client: Census,
    /// Bytes each way before the first client's address was validated.
    before_validation: BeforeValidation,
    rebinds: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    forward_link: Option<LinkCounters>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse_link: Option<LinkCounters>,
    /// Percentiles of the time packets waited in each direction's queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    forward_queue_delay: Option<QueueDelaySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse_queue_delay: Option<QueueDelaySummary>,
}

impl Relay {
    /// A new upstream socket towards `server`, with its reader thread
    /// handing datagrams in as `session`'s.
    fn open_upstream(
        &self,
        session: u64,
        binding: u64,
        server: SocketAddr,
    ) -> Result<(Arc<UdpSocket>, Arc<AtomicBool>)> {
        let local: SocketAddr = match self.source_ip(binding) {
            Some(ip) => SocketAddr::new(ip, 0),
            None if server.is_ipv4() => "0.0.0.0:0".parse()?,
            None => "[::]:0".parse()?,
        };
        let upstream =
            relay_socket(local, self.socket_options).context("cannot open an upstream socket")?;
        upstream
            .connect(server)
            .with_context(|| format!("cannot reach {server}"))?;
        let upstream = Arc::new(upstream);
        let closed = Arc::new(AtomicBool::new(false));
        spawn_upstream_reader(
            session,
            Arc::clone(&upstream),
            Arc::clone(&closed),
            self.inbound.clone(),
        )?;
        Ok((upstream, closed))
    }

    /// `--rebind-addr`: the source address of the relay's `binding`th
    /// upstream socket (0 for a new client's, then one per rebinding):
    /// 127.0.0.2–127.0.0.251 in turn, so each rebinding moves the client.
    fn source_ip(&self, binding: u64) -> Option<IpAddr> {
        if !self.rebind_addr {
            return None;
        }
        let host = 2 + u8::try_from(binding % 250).unwrap_or(0);
        Some(IpAddr::V4(Ipv4Addr::new(127, 0, 0, host)))
    }

    /// `--rebind-every`: sessions whose mapping is old enough get a new
    /// upstream socket (a new source port towards the server).
    fn rebind_due(&mut self, now: Instant) {
        let Some(every) = self.rebind_every else {
            return;
        };
        self.lingering.retain(|(until, closed)| {
            let expired = now >= *until;
            if expired {
                closed.store(true, Ordering::SeqCst);
            }
            !expired
        });
        let due: Vec<(u64, SocketAddr)> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.duration_since(s.bound_at) >= every)
            .map(|(&id, s)| (id, s.server))
            .collect();
        for (id, server) in due {
            match self.open_upstream(id, self.rebinds + 1, server) {
                Ok((upstream, closed)) => {
                    let Some(session) = self.sessions.get_mut(&id) else {
                        continue;
                    };
                    tracing::debug!(client = %session.client, session = id, old = ?session.upstream.local_addr().ok(), new = ?upstream.local_addr().ok(), "rebinding");
                    let old = std::mem::replace(&mut session.closed, closed);
                    if self.rebind_linger.is_zero() {
                        old.store(true, Ordering::SeqCst);
                    } else {
                        self.lingering.push((now + self.rebind_linger, old));
                    }
                    session.upstream = upstream;
                    session.bound_at = now;
                    self.rebinds += 1;
                }
                Err(e) => tracing::warn!(session = id, "cannot rebind: {e:#}"),
            }
        }
    }

    /// The session of `client` on `listener`, opening one (and its
    /// upstream socket towards that listener's server) if new.
    fn session_for(&mut self, listener: usize, client: SocketAddr, now: Instant) -> Result<u64> {
        if let Some(&id) = self.session_of_client.get(&(listener, client)) {
            return Ok(id);
        }
        let server = self
            .listeners
            .get(listener)
            .map(|(_, server)| *server)
            .ok_or_else(|| anyhow!("no listening socket {listener}"))?;
        let id = self.next_session;
        self.next_session += 1;
        let (upstream, closed) = self.open_upstream(id, 0, server)?;
        tracing::debug!(client = %client, session = id, %server, local = ?upstream.local_addr().ok(), "new client");
        self.sessions.insert(
            id,
            Session {
                listener,
                server,
                client,
                upstream,
                bound_at: now,
                last_activity: now,
                closed,
            },
        );
        self.session_of_client.insert((listener, client), id);
        Ok(id)
    }

    fn handle(&mut self, inbound: Inbound, now: Instant) -> Result<()> {
        let (direction, session, bytes, ecn) = match inbound {
            Inbound::FromClient {
                listener,
                client,
                bytes,
                ecn,
            } => match self.session_for(listener, client, now) {
                Ok(session) => (Direction::Forward, session, bytes, ecn),
                Err(e) => {
                    // Out of sockets, say: this client's datagram is lost, the
                    // relay and every other client go on.
                    tracing::warn!(client = %client, "dropping a datagram: {e:#}");
                    return Ok(());
                }
            },
            Inbound::FromServer {
                session,
                bytes,
                ecn,
            } => (Direction::Reverse, session, bytes, ecn),
        };
        let Some(s) = self.sessions.get_mut(&session) else {
            return Ok(()); // a late reply for a session already forgotten
        };
        s.last_activity = now;
        let client = s.client;
        let id = (session << SESSION_SHIFT) | (self.next_packet & ((1 << SESSION_SHIFT) - 1));
        self.next_packet += 1;
        let size = bytes.len();
        if self.stats.is_some() {
            let census = &mut self.census;
            match direction {
                Direction::Forward => census.client_to_server.record(&bytes),
                Direction::Reverse => census.server_to_client.record(&bytes),
            }
            let validated = census.client_to_server.handshake_seen;
            let from_client = direction == Direction::Forward;
            census
                .before_validation
                .record(from_client, size, validated);
        }
        let link = match direction {
            Direction::Forward => &mut self.forward,
            Direction::Reverse => &mut self.reverse,
        };
        let fate = link.send(now, id, bytes, ecn);
        tracing::trace!(?direction, %client, id, size, ?fate, ?ecn, "offered");
        self.log.write(LogLine {
            t: now - self.started,
            direction,
            client,
            id,
            size,
            event: "offered",
            fate: Some(&fate),
            corruption: None,
            duplicate: false,
            ecn: Some(ecn),
            queue_delay: None,
        })
    }

    /// Sends out every packet both links deliver by `now`.
    fn deliver_due(&mut self, now: Instant) -> Result<()> {
        for direction in [Direction::Forward, Direction::Reverse] {
            loop {
                let link = match direction {
                    Direction::Forward => &mut self.forward,
                    Direction::Reverse => &mut self.reverse,
                };
                let Some(delivery) = link.poll_delivery(now) else {
                    break;
                };
                self.deliver(direction, delivery, now)?;
            }
            self.log_late_drops(direction, now)?;
        }
        Ok(())
    }

    /// Logs the packets the AQM dropped at dequeue.
    fn log_late_drops(&mut self, direction: Direction, now: Instant) -> Result<()> {
        loop {
            let link = match direction {
                Direction::Forward => &mut self.forward,
                Direction::Reverse => &mut self.reverse,
            };
            let Some(drop) = link.poll_late_drop() else {
                return Ok(());
            };
            let id = drop.id;
            let Some(session) = self.sessions.get(&(id >> SESSION_SHIFT)) else {
                continue;
            };
            let client = session.client;
            tracing::trace!(?direction, %client, id, "dropped by the AQM");
            self.log.write(LogLine {
                t: now - self.started,
                direction,
                client,
                id,
                size: drop.len,
                event: "dropped",
                fate: Some(&Fate::QueueDrop),
                corruption: None,
                duplicate: false,
                ecn: None,
                queue_delay: None,
            })?;
        }
    }

    fn deliver(&mut self, direction: Direction, delivery: Delivery, now: Instant) -> Result<()> {
        let Some(session) = self.sessions.get(&(delivery.id >> SESSION_SHIFT)) else {
            return Ok(()); // its client was forgotten while it was in flight
        };
        // The datagram leaves with the codepoint the link gave it.
        let sent = match direction {
            Direction::Forward => send_with_ecn(
                &session.upstream,
                &delivery.bytes,
                session.server,
                delivery.ecn,
            ),
            Direction::Reverse => match self.listeners.get(session.listener) {
                Some((listen, _)) => {
                    send_with_ecn(listen, &delivery.bytes, session.client, delivery.ecn)
                }
                None => return Ok(()),
            },
        };
        if let Err(e) = sent {
            // The peer may simply not be there yet (ICMP port unreachable):
            // like a real link, keep going.
            tracing::debug!(?direction, client = %session.client, error = %e, "send failed");
        }
        let client = session.client;
        self.log.write(LogLine {
            t: now - self.started,
            direction,
            client,
            id: delivery.id,
            size: delivery.bytes.len(),
            event: "delivered",
            fate: None,
            corruption: delivery.corruption.as_ref(),
            duplicate: delivery.duplicate,
            ecn: Some(delivery.ecn),
            queue_delay: Some(delivery.queue_delay),
        })
    }

    fn expire_idle_sessions(&mut self, now: Instant) {
        let idle: Vec<u64> = self
            .sessions
            .iter()
            .filter(|(_, s)| now.duration_since(s.last_activity) > self.idle_timeout)
            .map(|(&id, _)| id)
            .collect();
        for id in idle {
            if let Some(s) = self.sessions.remove(&id) {
                s.closed.store(true, Ordering::SeqCst);
                self.session_of_client.remove(&(s.listener, s.client));
                tracing::debug!(client = %s.client, session = id, "client idle, forgotten");
            }
        }
    }

    fn next_event(&self) -> Option<Instant> {
        match (self.forward.next_event(), self.reverse.next_event()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// `--stats`: the censuses and link counters, written whole (to a
    /// temporary file renamed over FILE, so a reader never sees half).
    fn write_stats(&mut self) -> Result<()> {
        let Some(path) = &self.stats else {
            return Ok(());
        };
        self.census.rebinds = self.rebinds;
        self.census.forward_link = Some(self.forward.counters());
        self.census.reverse_link = Some(self.reverse.counters());
        self.census.forward_queue_delay = Some(self.forward.queue_delays().summary());
        self.census.reverse_queue_delay = Some(self.reverse.queue_delays().summary());
        let partial = path.with_extension("partial");
        let json = serde_json::to_vec_pretty(&self.census)?;
        std::fs::write(&partial, json)
            .and_then(|()| std::fs::rename(&partial, path))
            .with_context(|| format!("writing --stats {}", path.display()))
    }

    /// The counters on stderr. Written with `writeln!`, not `eprintln!`:
    /// a closed stderr (a parent that stopped reading) must not turn a clean
    /// exit into a panic, and there is nowhere else to report it.
    fn print_counters(&self, now: Instant) {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "sift-link: counters after {:.1} s, {} client(s)",
            (now - self.started).as_secs_f64(),
            self.sessions.len()
        );
        let _ = writeln!(err, "  forward: {}", describe(&self.forward));
        let _ = writeln!(err, "  reverse: {}", describe(&self.reverse));
        if self.rebind_every.is_some() {
            let _ = writeln!(err, "  rebinds: {}", self.rebinds);
        }
    }
}

/// One direction's counters on one line. The first fields keep their
/// order and names: the interop harness reads them (`parse_link_counters`).
fn describe(link: &Link) -> String {
    let c = link.counters();
    let mut text = format!(
        "offered {}, delivered {}, queue drops {}, random losses {}, outage drops {}, \
         corrupted {} (header {}, payload {}, bits {}), duplicated {}, reordered {}, \
         ECN: loss marks {}, AQM marks {}, AQM drops {}, bleached {}, CE out {}",
        c.offered,
        c.delivered,
        c.queue_drops,
        c.random_losses,
        c.outage_drops,
        c.corrupted,
        c.corrupted_header,
        c.corrupted_payload,
        c.bits_flipped,
        c.duplicated,
        c.reordered,
        c.loss_marks,
        c.aqm_marks,
        c.aqm_drops,
        c.bleached,
        c.delivered_ce
    );
    let delays = link.queue_delays();
    if delays.samples() > 0 {
        let s = delays.summary();
        text += &format!(
            ", queueing delay p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms
        );
    }
    text
}

fn spawn_listen_reader(
    listener: usize,
    socket: Arc<UdpSocket>,
    inbound: Sender<Inbound>,
) -> Result<()> {
    thread::Builder::new()
        .name(format!("listen-reader-{listener}"))
        .spawn(move || {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            while !TERMINATE.load(Ordering::SeqCst) {
                match recv_with_ecn(&socket, &mut buf) {
                    Ok((len, client, ecn)) => {
                        // A dual-stack listener reports IPv4 clients as
                        // ::ffff:a.b.c.d: keep (and log) the plain spelling.
                        let client = canonical_peer(client);
                        let bytes = buf.get(..len).unwrap_or_default().to_vec();
                        let datagram = Inbound::FromClient {
                            listener,
                            client,
                            bytes,
                            ecn,
                        };
                        if inbound.send(datagram).is_err() {
                            return;
                        }
                    }
                    Err(e) if is_timeout(&e) => {}
                    Err(e) => tracing::debug!(error = %e, "receive on the listening socket failed"),
                }
            }
        })
        .context("cannot start the listening thread")?;
    Ok(())
}

fn spawn_upstream_reader(
    session: u64,
    socket: Arc<UdpSocket>,
    closed: Arc<AtomicBool>,
    inbound: Sender<Inbound>,
) -> Result<()> {
    thread::Builder::new()
        .name(format!("upstream-{session}"))
        .spawn(move || {
            let mut buf = vec![0u8; MAX_DATAGRAM];
            while !TERMINATE.load(Ordering::SeqCst) && !closed.load(Ordering::SeqCst) {
                match recv_with_ecn(&socket, &mut buf) {
                    // A mapping closed while this thread waited in recv: the
                    // NAT has forgotten it, so what reached it is dropped.
                    Ok(_) if closed.load(Ordering::SeqCst) => return,
                    Ok((len, _, ecn)) => {
                        let bytes = buf.get(..len).unwrap_or_default().to_vec();
                        let datagram = Inbound::FromServer {
                            session,
                            bytes,
                            ecn,
                        };
                        if inbound.send(datagram).is_err() {
                            return;
                        }
                    }
                    Err(e) if is_timeout(&e) => {}
                    // ECONNREFUSED after an ICMP port unreachable: the server
                    // is not (yet) there. Keep listening.
                    Err(e) => {
                        tracing::debug!(session, error = %e, "receive from the server failed")
                    }
                }
            }
        })
        .context("cannot start an upstream thread")?;
    Ok(())
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// A relay socket at `address`: accepts zero-checksum datagrams in both
/// families (and sends them with `--send-zero-checksums`), with big kernel
/// buffers, reporting each datagram's ECN field, blocking with a read
/// timeout so its reader notices shutdown.
fn relay_socket(address: SocketAddr, options: SocketOptions) -> std::io::Result<UdpSocket> {
    // A refused checksum option is logged by bind_udp; relaying goes on.
    let (socket, _) = bind_udp(address, options)?;
    socket.set_nonblocking(false)?;
    socket.set_read_timeout(Some(READ_TIMEOUT))?;
    enable_ecn_receive(&socket)?;
    Ok(socket)
}

fn resolve(what: &str, address: &str) -> Result<SocketAddr> {
    address
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {what} address {address:?}"))?
        .next()
        .ok_or_else(|| anyhow!("{what} address {address:?} resolves to nothing"))
}

/// A `--route LISTEN=TO`: the two addresses.
fn parse_route(route: &str) -> Result<(SocketAddr, SocketAddr)> {
    let (listen, to) = route
        .split_once('=')
        .ok_or_else(|| anyhow!("--route {route:?} is not LISTEN=TO"))?;
    Ok((
        resolve("--route listening", listen.trim())?,
        resolve("--route server", to.trim())?,
    ))
}

fn parse_spec(which: &str, spec: &str) -> Result<LinkConfig> {
    LinkConfig::from_netem(spec).with_context(|| format!("bad --{which} spec {spec:?}"))
}

/// `mtu` counts IP packets: the relayed datagrams carry IPv6's 48 header
/// bytes when the server is reached over IPv6 (the link's default is
/// IPv4's 28).
fn mtu_family(mut link: Link, server: SocketAddr) -> Link {
    if server.is_ipv6() {
        link.set_ip_headers(sift::conn::pmtud::IPV6_UDP_HEADERS);
    }
    link
}

fn run(args: Args) -> Result<()> {
    let forward_config = parse_spec("forward", &args.forward)?;
    let reverse_config = parse_spec("reverse", &args.reverse)?;
    let listen_addr = resolve("--listen", &args.listen)?;
    let rebind_every = match args.rebind_every {
        None => None,
        Some(secs) if secs.is_finite() && secs > 0.0 && secs < 1e9 => {
            Some(Duration::from_secs_f64(secs))
        }
        Some(secs) => bail!("--rebind-every must be a positive number of seconds, not {secs}"),
    };
    if !(args.rebind_linger.is_finite() && (0.0..1e9).contains(&args.rebind_linger)) {
        bail!(
            "--rebind-linger must be zero or a positive number of seconds, not {}",
            args.rebind_linger
        );
    }
    let rebind_linger = Duration::from_secs_f64(args.rebind_linger);
    let server = resolve("--to", &args.to)?;
    let routes = args
        .routes
        .iter()
        .map(|route| parse_route(route))
        .collect::<Result<Vec<_>>>()?;
    for to in std::iter::once(server).chain(routes.iter().map(|(_, to)| *to)) {
        if args.rebind_addr && !matches!(to.ip(), IpAddr::V4(ip) if ip.is_loopback()) {
            bail!("--rebind-addr moves clients among 127.0.0.0/8 addresses: --to must be on IPv4 loopback, not {to}");
        }
    }
    let socket_options = SocketOptions {
        accept_zero_checksums: true,
        disable_checksums: args.send_zero_checksums,
        ..SocketOptions::default()
    };
    let listen = relay_socket(listen_addr, socket_options)
        .with_context(|| format!("cannot listen on {listen_addr}"))?;
    let listen = Arc::new(listen);
    let bound = listen.local_addr()?;
    let mut listeners = vec![(listen, server)];
    for (route_listen, to) in routes {
        let socket = relay_socket(route_listen, socket_options)
            .with_context(|| format!("cannot listen on {route_listen} (--route)"))?;
        listeners.push((Arc::new(socket), to));
    }
    let log = FateLog::open(args.log.as_deref(), args.log_format)?;
    install_signal_handlers()?;

    let (inbound, receiver): (Sender<Inbound>, Receiver<Inbound>) = mpsc::channel();
    for (index, (socket, _)) in listeners.iter().enumerate() {
        spawn_listen_reader(index, Arc::clone(socket), inbound.clone())?;
    }
    let started = Instant::now();
    let mut relay = Relay {
        listeners,
        socket_options,
        forward: mtu_family(Link::new(forward_config, args.seed), server),
        reverse: mtu_family(Link::new(reverse_config, args.seed.wrapping_add(1)), server),
        sessions: HashMap::new(),
        session_of_client: HashMap::new(),
        next_session: 0,
        next_packet: 0,
        inbound,
        log,
        started,
        idle_timeout: Duration::from_secs(args.idle_timeout),
        rebind_every,
        rebind_linger,
        rebind_addr: args.rebind_addr,
        lingering: Vec::new(),
        rebinds: 0,
        census: Censuses::default(),
        stats: args.stats,
    };
    eprintln!(
        "sift-link: listening on {bound}, relaying to {server}; forward \"{}\", reverse \"{}\"",
        relay.forward.config(),
        relay.reverse.config()
    );
    // After the first line, which names --listen's address.
    for (socket, to) in relay.listeners.iter().skip(1) {
        eprintln!(
            "sift-link: route: from {} to {to}, through the same links",
            socket.local_addr()?
        );
    }

    let mut last_housekeeping = started;
    while !TERMINATE.load(Ordering::SeqCst) {
        let now = Instant::now();
        if REPORT.swap(false, Ordering::SeqCst) {
            relay.print_counters(now);
            relay.write_stats()?;
        }
        relay.deliver_due(now)?;
        relay.rebind_due(now);
        if now.duration_since(last_housekeeping) >= Duration::from_secs(1) {
            relay.expire_idle_sessions(now);
            relay.log.flush()?;
            last_housekeeping = now;
        }
        let wait = relay
            .next_event()
            .map_or(MAX_IDLE_WAIT, |t| t.saturating_duration_since(now))
            .min(MAX_IDLE_WAIT);
        match receiver.recv_timeout(wait) {
            Ok(first) => {
                relay.handle(first, Instant::now())?;
                // Take whatever else has queued up without sleeping again.
                while let Ok(more) = receiver.try_recv() {
                    relay.handle(more, Instant::now())?;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => bail!("the socket readers stopped"),
        }
    }
    relay.log.flush()?;
    relay.print_counters(Instant::now());
    relay.write_stats()
}

fn main() {
    let args = Args::parse();
    let filter = match args.verbose {
        0 => "warn",
        1 => "sift_link=debug,sift=debug",
        _ => "sift_link=trace,sift=trace",
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(filter)),
        )
        .init();
    if let Err(error) = run(args) {
        eprintln!("sift-link: {error:#}");
        std::process::exit(1);
    }
}
