//! `sift-server`: serves the files under one directory over sift —
//! GET, PUT, LIST and the PERF meter — to many clients at once.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use sift::conn::Protection;
use sift::crypto::tls::SessionCache;
use sift::crypto::TlsConfig;
use sift::endpoint::{RetryPolicy, DEFAULT_RETRY_HALF_OPEN};
use sift::tokio::{BindError, Endpoint, EndpointConfig};
use sift::wire::steering::MAX_WORKERS;
use sift_bin::cli::authorized::AuthorizedClientsFile;
use sift_bin::cli::common::{self, CarefulResumeMode, OnOff};
use sift_bin::cli::format;
use sift_bin::cli::server_loop::{self, Service};
use sift_bin::cli::state::{self, IdentitySource};
use sift_bin::transfer::server::DEFAULT_REQUEST_TIMEOUT;
use sift_bin::transfer::uploads::FREE_SPACE_MARGIN;
use sift_bin::transfer::{FileServer, Root, UploadBudget, UploadPolicy};
use sift_cc::CcConfig;

const EXAMPLES: &str = "\
Examples:
  # Serve ./files on port 4433 of every interface, IPv6 and IPv4 (dual-stack [::]:4433):
  sift-server --root ./files

  # IPv4 only, or IPv6 loopback only:
  sift-server --listen 0.0.0.0:4433 --root ./files
  sift-server --listen [::1]:4433 --root ./files

  # Loopback only, Veno, corruption notices off (the \"no HACK\" baseline):
  sift-server --listen 127.0.0.1:4433 --root /srv/data --cc veno \\
      --corruption-notices off

  # Clients may ask for BBR or Westwood-A for their downloads, nothing else:
  sift-server --listen 127.0.0.1:4433 --root ./files --accept-cc bbr,westwood-a

  # Two workers (default: one per core), each an endpoint with its own
  # SO_REUSEPORT socket; the kernel routes by connection ID:
  sift-server --root ./files --workers 2

  # A public server: a request must arrive within 5 s, and one client is
  # served at most 8 streams at once:
  sift-server --root ./files --request-timeout 5 --max-streams-per-client 8

  # A qlog trace per connection (open in qvis), and the TLS secrets for
  # Wireshark:
  SSLKEYLOGFILE=/tmp/keys.log sift-server --root ./files --qlog /tmp/qlog

  # Offer 127.0.0.2:4433 as the preferred address (RFC 9000 §9.6) and serve
  # there too: clients move to it once the handshake is confirmed:
  sift-server --listen 127.0.0.1:4433 --preferred-address 127.0.0.2:4433 --root ./files

  # Port 0 picks a free port; the \"listening on\" line names it:
  sift-server --listen 127.0.0.1:0 --root . -v

  # A certificate of your own (e.g. from your CA) instead of the self-signed one:
  sift-server --root ./files --cert server.pem --key server-key.pem

  # Take uploads from the clients listed in authorized_clients (in the state
  # directory), at most 4 GiB of them at once:
  sift-client id            # on the client: prints SHA256:…, makes the key if needed
  echo 'SHA256:… alice-laptop' >> ~/.local/share/sift/authorized_clients
  sift-server --root ./files --allow-put --max-upload-bytes 4G

  # Null protection has no client keys: uploads from anyone, explicitly:
  sift-server --root ./scratch --insecure-null-crypto --allow-put --allow-anonymous-put

On first run the server makes a self-signed certificate (rcgen, ECDSA P-256, which every QUIC client verifies) in
its state directory and prints its SHA-256 fingerprint at every start;
clients remember it on first contact, or take it with --pin.

The server is read-only unless started with --allow-put. It refuses to
start when its state directory is --root or inside it (clients could fetch
its private key); a --root inside the state directory is allowed.";

/// Serve the files under a directory over sift.
///
/// Clients can download (with resume), list and measure throughput, and,
/// with --allow-put, upload. Nothing outside --root is ever read or
/// written: `..`, absolute paths and symlinks leading out are refused.
/// Uploads are kept only once their SHA-256 matches. One line per transfer
/// goes to stdout.
#[derive(Parser, Debug)]
#[command(name = "sift-server", version, after_help = EXAMPLES)]
struct Args {
    /// Address and UDP port to listen on, IPv4 or IPv6 (`[::1]:4433`).
    ///
    /// [default: [::]:4433, IPv6 and IPv4 alike; 0.0.0.0:4433 on a host
    /// without IPv6]
    #[arg(long, value_name = "ADDR")]
    listen: Option<SocketAddr>,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Congestion controller for data the server sends, unless the client
    /// asks for another: reno, cubic, vegas, veno, veno-enhanced, westwood,
    /// westwood-a, bbr, prague (L4S, ECT(1)); the loss-differentiating ones
    /// (cubic, veno, veno-enhanced, westwood, westwood-a, bbr) also as
    /// NAME-ecn, which judges a loss without CE marks random on a path
    /// whose ECN is validated. Default cubic-ecn: plain cubic wherever no
    /// bottleneck marks, and on a CoDel-ECN path with 1% random loss 0.847
    /// of capacity·(1 − p) where cubic makes 0.634 (docs/notes/2026-12-07-ecn.md).
    #[arg(long, value_name = "NAME", default_value = "cubic-ecn", value_parser = common::parse_cc)]
    cc: CcConfig,
    /// Controllers a client may ask for with `sift-client get --cc NAME`
    /// (comma-separated); a request for any other is refused with a clear
    /// message. Default: every controller.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = common::parse_cc)]
    accept_cc: Option<Vec<CcConfig>>,
    /// Start every connection's window (its controller's, or the one a
    /// client asks for) at this many packets instead of RFC 9002's ten:
    /// for long paths whose bottleneck is yours (a satellite hop), where
    /// slow start from ten costs seconds. quinn's BBR starts at 200.
    #[arg(long, value_name = "PACKETS", value_parser = common::parse_initial_window)]
    initial_window: Option<u64>,
    /// Offer corruption notices (both sides must offer them).
    #[arg(long, value_name = "on|off", default_value = "on")]
    corruption_notices: OnOff,
    /// ECN (RFC 9000 §13.4): mark datagrams ECT once a client's path
    /// proves it carries and counts the marks, report the marks that
    /// arrive, and slow down for CE. `off`: every datagram leaves not-ECT
    /// and no marks are reported.
    #[arg(long, value_name = "on|off", default_value = "on")]
    ecn: OnOff,
    /// Erasure coding between sift ends (docs/repair.md): `auto` sends
    /// repair symbols where a round trip is dear (min RTT ≥ 150 ms) and the
    /// path has lost packets, so a lost packet is rebuilt without waiting a
    /// round trip; `on` wherever the path lost packets; `off` neither offers
    /// nor takes part. Only with sift clients.
    #[arg(long, value_name = "auto|on|off", default_value = "auto")]
    repair: sift::fec::policy::RepairMode,
    /// Path MTU discovery (RFC 8899): probe above 1350-byte datagrams up
    /// to what the path carries (1472 on IPv4 Ethernet, 1452 on IPv6, up
    /// to 8972 on loopback), back to 1200 on a black hole. `off`: 1350
    /// bytes throughout.
    #[arg(long, value_name = "on|off", default_value = "on")]
    pmtud: OnOff,
    /// Careful Resume (RFC 9959) for the files this server sends: save
    /// the capacity and RTT seen for each client inside the address token
    /// it gives it, and jump to half that window, paced, when the client
    /// comes back from the same IP address with the token (within an hour).
    /// `loss-share`: on, but a jump retreats only once more than 2% of it
    /// is lost (or an RTT shows a queue), not on its first congestive
    /// loss as RFC 9959 §3.3 requires: for paths with random loss, where
    /// a resumed CUBIC would otherwise retreat and start slower than a
    /// fresh connection.
    #[arg(long, value_name = "on|off|loss-share", default_value = "on")]
    careful_resume: CarefulResumeMode,
    /// Versions to speak, most preferred first: sift/1 (split tags,
    /// corruption notices), v1 (QUIC version 1: any QUIC client) and v2
    /// (QUIC version 2, RFC 9369). A v1 client that offers sift/1, or v2
    /// when v2 comes before v1 here, is moved to it without a round trip;
    /// a client of a version not listed hears Version Negotiation.
    #[arg(long, value_name = "LIST", default_value = "sift/1,v1", value_delimiter = ',', value_parser = common::parse_version)]
    versions: Vec<u32>,
    /// Where the server keeps its certificate, key and authorized_clients
    /// (default: $XDG_DATA_HOME/sift or ~/.local/share/sift). Must not be
    /// --root or inside it.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Present this certificate chain (PEM) instead of the state
    /// directory's self-signed one; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// INSECURE: Null protection — no encryption, no authentication, for
    /// experiments. Clients must use it too.
    #[arg(long)]
    insecure_null_crypto: bool,
    /// Most clients connected at once; more are refused at once with
    /// "server busy: N clients" (`sift-client --wait` retries).
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_clients: usize,
    /// Bytes of send buffer the clients share: each buffers what it has
    /// not had acknowledged up to three congestion windows, but at least
    /// its share of this (at most 4 MiB) and at most its share (at least
    /// 48 KiB). Up to eight clients keep their whole 4–32 MiB; 10 000
    /// downloading 1 MB each no longer buffer every response whole, nor
    /// windows grown while they queue behind each other
    /// (docs/notes/2026-12-08-many-clients.md). 0: no budget, every client
    /// buffers as if alone.
    #[arg(long, value_name = "BYTES", default_value = "256M", value_parser = format::parse_bytes)]
    send_budget: u64,
    /// Make every new client prove its address with a Retry (one more
    /// round trip) before keeping any state for it. Without it the server
    /// still does so on its own once half of --max-clients (at most 64)
    /// handshakes are half open, as under a flood of spoofed Initials.
    /// TLS only.
    #[arg(long)]
    retry: bool,
    /// Endpoints serving clients in parallel, one thread and
    /// `SO_REUSEPORT` socket each for their packets; the kernel routes every datagram to its client's worker by
    /// connection ID (so a client keeps its worker when its address
    /// changes), and new clients go to the least busy worker (with a
    /// Retry, under TLS). --max-clients is shared out among them.
    /// [default: the number of cores, at most --max-clients]
    #[arg(long, value_name = "N")]
    workers: Option<usize>,
    /// Take uploads (PUT), from the clients whose key fingerprint is a
    /// line of authorized_clients in the state directory (`sift-client id`
    /// prints a client's; the file is read at every upload, so no restart
    /// is needed). Without it the server is read-only.
    #[arg(long)]
    allow_put: bool,
    /// Issue no TLS session tickets: every client handshake is a full one
    /// (and no 0-RTT). Tickets live in this server's memory only.
    #[arg(long)]
    no_session_tickets: bool,
    /// Issue session tickets but refuse 0-RTT data: resumed clients send
    /// their requests after the handshake.
    #[arg(long)]
    no_0rtt: bool,
    /// With --allow-put: take uploads from any client, with a listed key or
    /// none. Anyone who reaches the server can then overwrite any file
    /// under --root. Under --insecure-null-crypto, where clients have no
    /// keys, the only way to take uploads: --allow-put alone is refused
    /// there.
    #[arg(long, requires = "allow_put")]
    allow_anonymous_put: bool,
    /// Most bytes being uploaded at once across the server: each upload
    /// reserves the size its client announces when it starts, and one
    /// that would pass this, or leave less than 512 MiB of the disk free
    /// beside the uploads in progress, is refused. Bytes, or K/M/G/T
    /// (powers of 1024).
    #[arg(long, value_name = "BYTES", default_value = "16G", value_parser = format::parse_bytes)]
    max_upload_bytes: u64,
    /// Threads that serve clients' streams (each a task that holds no
    /// thread while it waits). A client that arrives while its worker
    /// serves no other is served on the worker's thread instead, beside
    /// its packets. [default: half the cores, at least one]
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Most threads reading and writing files at once (64 KiB per call),
    /// besides one per worker for the client it serves alone.
    #[arg(long, value_name = "N", default_value_t = 8)]
    io_threads: usize,
    /// Seconds a client has to send a stream's whole request; a stream
    /// whose request is not complete by then is answered with an error and
    /// closed.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_REQUEST_TIMEOUT.as_secs_f64())]
    request_timeout: f64,
    /// Streams of one client served at once; its further streams wait.
    #[arg(long, value_name = "N", default_value_t = server_loop::DEFAULT_MAX_STREAMS_PER_CLIENT)]
    max_streams_per_client: usize,
    /// Streams served at once by the whole server; further streams wait.
    #[arg(long, value_name = "N", default_value_t = server_loop::DEFAULT_MAX_STREAMS)]
    max_streams: usize,
    /// Write one qlog trace per connection into DIR (JSON-SEQ, `.sqlog`;
    /// open it in qvis). Default: $QLOGDIR if set, else no traces. A
    /// client's file is written only once its address is validated (no
    /// file for spoofed Initials or refusals); at most 256 files open at
    /// once and 1 GiB written per run, then tracing stops.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Offer ADDR (and ADDR6, for IPv6 clients) as the server's preferred
    /// address (RFC 9000 §9.6) and serve on it too: a client moves there
    /// once its handshake is confirmed, after validating it. One address
    /// per family, each a host and port (`127.0.0.2:4433`,
    /// `127.0.0.2:4433,[::2]:4433`). Served by one worker (implies
    /// --workers 1).
    #[arg(long, value_name = "ADDR[,ADDR6]", value_parser = parse_preferred)]
    preferred_address: Option<sift::conn::PreferredAddresses>,
    /// Log more (-v: this tool's events, -vv: the transport's too).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

/// `--preferred-address ADDR[,ADDR6]`: at most one address per family,
/// each a host and a port.
fn parse_preferred(text: &str) -> Result<sift::conn::PreferredAddresses, String> {
    let mut addresses = sift::conn::PreferredAddresses::default();
    for part in text.split(',') {
        let address: SocketAddr = part.trim().parse().map_err(|_| {
            format!("{part:?} is not an address and port (127.0.0.2:4433, [::2]:4433)")
        })?;
        let taken = match address {
            SocketAddr::V4(v4) => addresses.ipv4.replace(v4).is_some(),
            SocketAddr::V6(v6) => addresses.ipv6.replace(v6).is_some(),
        };
        if taken {
            return Err("one preferred address per family (IPv4, IPv6) at most".into());
        }
    }
    addresses.validate()?;
    Ok(addresses)
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::run_tool("sift-server", || run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    common::init_logging(args.verbose);
    let protection = common::protection(args.insecure_null_crypto);
    if args.max_clients == 0 {
        anyhow::bail!("--max-clients must be at least 1");
    }
    let workers = match args.workers {
        Some(workers) if workers > 1 && args.preferred_address.is_some() => {
            anyhow::bail!("--preferred-address is served by one worker: leave out --workers {workers} (or give 1)")
        }
        Some(workers) => workers,
        None if args.preferred_address.is_some() => 1,
        None => std::thread::available_parallelism()
            .map_or(1, std::num::NonZeroUsize::get)
            .clamp(1, MAX_WORKERS)
            .min(args.max_clients),
    };
    if !(1..=MAX_WORKERS).contains(&workers) {
        anyhow::bail!("--workers must be 1..={MAX_WORKERS}, not {workers}");
    }
    if workers > args.max_clients {
        anyhow::bail!(
            "--workers {workers} needs --max-clients of at least {workers} (each worker holds one client or more)"
        );
    }
    for (flag, value) in [
        ("--threads", args.threads.unwrap_or(1)),
        ("--io-threads", args.io_threads),
        ("--max-streams-per-client", args.max_streams_per_client),
        ("--max-streams", args.max_streams),
    ] {
        if value == 0 {
            anyhow::bail!("{flag} must be at least 1");
        }
    }
    let request_timeout = Duration::try_from_secs_f64(args.request_timeout)
        .ok()
        .filter(|timeout| !timeout.is_zero() && *timeout <= Duration::from_secs(3600))
        .with_context(|| {
            format!(
                "--request-timeout must be more than 0 and at most 3600 seconds, not {}",
                args.request_timeout
            )
        })?;
    if args.retry && protection != Protection::Tls {
        anyhow::bail!("--retry needs TLS: Retry tokens are sealed with the server's secret, which Null protection does not keep");
    }
    if args.allow_put && !args.allow_anonymous_put && protection != Protection::Tls {
        anyhow::bail!("--allow-put under --insecure-null-crypto needs --allow-anonymous-put: Null protection carries no client keys, so the server cannot tell who uploads");
    }
    let root =
        Root::new(&args.root).with_context(|| format!("cannot serve {}", args.root.display()))?;
    // Under Null protection the state directory is not used, but it may
    // hold a key from a TLS run: it must not be served either way.
    match state::state_dir(args.state_dir.as_deref()) {
        Ok(state) => state::refuse_state_inside_root(&state, root.path())?,
        Err(error) if protection == Protection::Tls => return Err(error),
        Err(_) => {}
    }
    let cc_name = match args.initial_window {
        Some(packets) => format!("{} from {packets} packets", args.cc.name()),
        None => args.cc.name().to_string(),
    };
    let mut files = FileServer::new(root)
        .with_upload_budget(UploadBudget::new(args.max_upload_bytes, FREE_SPACE_MARGIN))
        .with_request_timeout(request_timeout);
    if let Some(accepted) = &args.accept_cc {
        let names = accepted.iter().map(|cc| cc.name().to_string()).collect();
        files = files.accepting_controllers(names);
    }
    if let Some(packets) = args.initial_window {
        files = files.with_initial_window(packets);
    }
    let cc = match args.initial_window {
        Some(packets) => args.cc.with_initial_window(packets),
        None => args.cc,
    };
    let mut config = common::transport_config(protection, cc, args.corruption_notices);
    config.pmtud.enabled = args.pmtud.enabled();
    config.ecn = args.ecn.enabled();
    config.repair = args.repair;
    config.versions = args.versions.clone();
    config.careful_resume = args.careful_resume.config();
    config.trace = common::trace_sink(args.qlog.as_deref())?;
    config.preferred_address = args.preferred_address;
    if !args.allow_put {
        server_loop::grant_requests_only(&mut config.streams);
    }
    if protection == Protection::Tls {
        let state = state::state_dir(args.state_dir.as_deref())?;
        let given = args.cert.as_deref().zip(args.key.as_deref());
        let (identity, source) = state::server_identity(&state, given)?;
        let origin = match source {
            IdentitySource::Created => format!("new, saved in {}", state.display()),
            IdentitySource::Loaded => format!("from {}", state.display()),
            IdentitySource::Given => "from --cert".to_string(),
        };
        println!("identity {} ({origin})", identity.fingerprint());
        config.tls = TlsConfig::server(identity);
        // sift's file protocol, and HTTP/0.9 for any QUIC client.
        config.tls.alpn_protocols = server_loop::server_alpns();
        config.tls.key_log = common::key_log();
        if !args.no_session_tickets {
            // One cache for every connection of this run (SECURITY.md:
            // tickets are single-use handles into it, gone at restart).
            config.tls.session_cache = Some(SessionCache::new(
                sift::crypto::tls::DEFAULT_SESSION_CACHE,
                !args.no_0rtt,
            ));
        }
        if args.allow_put && !args.allow_anonymous_put {
            let list = AuthorizedClientsFile::new(state.join(state::AUTHORIZED_CLIENTS_FILE));
            // A broken list stops the server now rather than refusing
            // every upload later.
            let authorized = list.read()?.len();
            println!(
                "uploads from the {authorized} client{} listed in {}, at most {} at once",
                if authorized == 1 { "" } else { "s" },
                list.path().display(),
                format::bytes(args.max_upload_bytes)
            );
            files = files.allowing_uploads(UploadPolicy::Clients(Arc::new(list)));
            // Asked for, not required: clients without a key still download.
            config.tls.request_client_certificate = true;
        }
        config.server_secret = Some(state::server_secret(&state)?);
        config.retry = if args.retry {
            RetryPolicy::Always
        } else {
            RetryPolicy::WhenBusy {
                half_open: (args.max_clients / 2).clamp(1, DEFAULT_RETRY_HALF_OPEN),
            }
        };
    }
    if args.allow_anonymous_put {
        files = files.allowing_uploads(UploadPolicy::Anyone);
        println!(
            "uploads from anyone (--allow-anonymous-put), at most {} at once",
            format::bytes(args.max_upload_bytes)
        );
    } else if !args.allow_put {
        println!("read-only: uploads are refused (start with --allow-put to take them)");
    }
    // The workers' drivers do most of the work (packets, crypto: three
    // quarters of a loopback download's server CPU), each on a thread of
    // its own; a serving thread per core on top made two busy threads a
    // core, and on two cores one serving thread did better for one
    // download and for a thousand (interop/results/2026-11-27-file-in-place).
    let threads = args.threads.unwrap_or_else(|| {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        (cores / 2).max(1)
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .max_blocking_threads(args.io_threads)
        .thread_name("sift-server")
        .enable_all()
        .build()
        .context("starting the server's threads")?;
    // Each worker's endpoint driver (its socket, every packet of its
    // clients) gets a thread of its own, as it is busy whenever any of
    // its clients is: among thousands of stream tasks on the serving
    // threads it would wait its turn behind all of them.
    let drivers = server_loop::DriverThreads::start(workers, SHUTDOWN_GRACE)?;
    let send_budget = Some(args.send_budget).filter(|&budget| budget > 0);
    let endpoints = listen(
        args.listen,
        config,
        (args.max_clients, send_budget),
        drivers.handles(),
    )?;
    let local = endpoints[0].local_addr();
    println!(
        "listening on {} (root {}, versions {}, cc {cc_name}, clients may ask for {}, corruption notices {}, {workers} worker{})",
        describe_listening(local),
        files.root().path().display(),
        args.versions
            .iter()
            .map(|v| sift::wire::version_name(*v))
            .collect::<Vec<_>>()
            .join(","),
        files.accepted_controllers().join(","),
        if args.corruption_notices.enabled() {
            "on"
        } else {
            "off"
        },
        if workers == 1 { "" } else { "s" },
    );
    if let Some(preferred) = &args.preferred_address {
        let addresses: Vec<String> = preferred.iter().map(|a| a.to_string()).collect();
        println!(
            "preferred address {} (clients move there once their handshake is confirmed)",
            addresses.join(" and ")
        );
    }
    std::io::stdout().flush().context("writing to stdout")?;
    let service = Arc::new(Service::new(
        files,
        args.max_streams_per_client,
        args.max_streams,
    ));
    let outcome = runtime.block_on(serve(endpoints, service, drivers.handles()));
    // Tasks still waiting on a client are dropped with the runtime; a
    // file call in progress gets a moment to end.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    drivers.shutdown();
    outcome
}

/// How long Ctrl-C waits for clients to hear that the server is closing.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Serves on every worker's endpoint until one stops (an error) or the
/// process is asked to stop (Ctrl-C, SIGTERM): then every client is told
/// the server is shutting down.
async fn serve(
    endpoints: Vec<Endpoint>,
    service: Arc<Service>,
    workers: &[tokio::runtime::Handle],
) -> anyhow::Result<()> {
    let mut running = tokio::task::JoinSet::new();
    let placement = server_loop::Placement::LoneOnWorker {
        pool: tokio::runtime::Handle::current(),
    };
    for ((index, endpoint), worker) in endpoints.iter().enumerate().zip(workers) {
        // With several workers each transfer line says whose it was.
        let suffix = if workers.len() > 1 {
            format!(" worker={index}")
        } else {
            String::new()
        };
        let lines: server_loop::LineSink = Arc::new(move |line: &str| {
            // A closed stdout must not stop the server.
            let _ = writeln!(std::io::stdout(), "{line}{suffix}");
        });
        // Each worker accepts on its own thread, beside its driver.
        running.spawn_on(
            server_loop::serve(
                endpoint.clone(),
                Arc::clone(&service),
                lines,
                placement.clone(),
            ),
            worker,
        );
    }
    tokio::select! {
        // The first worker whose socket stops ends the server.
        stopped = running.join_next() => match stopped {
            Some(Ok(error)) => Err(error),
            Some(Err(panicked)) => Err(anyhow::anyhow!("a worker failed: {panicked}")),
            None => Err(anyhow::anyhow!("no worker is running")),
        },
        signal = stop_requested() => {
            let signal = signal?;
            eprintln!("sift-server: {signal}: closing every connection");
            for endpoint in &endpoints {
                endpoint.close(0, "server shutting down");
            }
            let idle = async {
                for endpoint in &endpoints {
                    endpoint.wait_idle().await;
                }
            };
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, idle).await;
            Ok(())
        }
    }
}

/// Waits for SIGINT (Ctrl-C) or SIGTERM and names it.
async fn stop_requested() -> anyhow::Result<&'static str> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut interrupt = signal(SignalKind::interrupt()).context("watching for Ctrl-C")?;
    let mut terminate = signal(SignalKind::terminate()).context("watching for SIGTERM")?;
    Ok(tokio::select! {
        _ = interrupt.recv() => "interrupted",
        _ = terminate.recv() => "terminated",
    })
}

/// The default address: every interface, IPv6 and (dual-stack) IPv4.
const DEFAULT_LISTEN: SocketAddr = SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 4433);
/// The default on a host without IPv6.
const DEFAULT_LISTEN_IPV4: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 4433);

/// Binds `--listen`, or the dual-stack default, falling back to IPv4 only
/// where the kernel has no IPv6 at all: one endpoint, or one per worker
/// sharing the address (and `max_clients` shared out among them), each
/// driven on its runtime in `drivers`.
fn listen(
    address: Option<SocketAddr>,
    config: sift::Config,
    (max_clients, send_budget): (usize, Option<u64>),
    drivers: &[tokio::runtime::Handle],
) -> anyhow::Result<Vec<Endpoint>> {
    let endpoint_config = EndpointConfig {
        max_connections: max_clients,
        send_budget,
        ..EndpointConfig::server(config)
    };
    let try_bind = |address: SocketAddr| match drivers {
        [one] => {
            let _entered = one.enter();
            Endpoint::bind(address, endpoint_config.clone()).map(|endpoint| vec![endpoint])
        }
        many => Endpoint::bind_workers_on(address, endpoint_config.clone(), many),
    };
    let bind = |address: SocketAddr| {
        try_bind(address).with_context(|| format!("cannot listen on {address}"))
    };
    if let Some(address) = address {
        return bind(address);
    }
    match try_bind(DEFAULT_LISTEN) {
        Err(BindError::Io { source, .. }) if source.raw_os_error() == Some(libc::EAFNOSUPPORT) => {
            eprintln!("sift-server: this host has no IPv6: listening on IPv4 only");
            bind(DEFAULT_LISTEN_IPV4)
        }
        bound => bound.with_context(|| format!("cannot listen on {DEFAULT_LISTEN}")),
    }
}

/// The bound address, and for the IPv6 wildcard (dual-stack) the IPv4 one
/// it also covers: `[::]:4433 and 0.0.0.0:4433`.
fn describe_listening(local: SocketAddr) -> String {
    if local.ip() == IpAddr::V6(Ipv6Addr::UNSPECIFIED) {
        let ipv4 = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), local.port());
        format!("{local} and {ipv4}")
    } else {
        local.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_upload_cap_in_the_help_is_the_library_default() {
        let args = Args::parse_from(["sift-server", "--root", "."]);
        assert_eq!(
            args.max_upload_bytes,
            sift_bin::transfer::uploads::DEFAULT_MAX_UPLOAD_BYTES
        );
        assert!(!args.allow_put, "read-only by default");
    }

    #[test]
    fn the_ipv6_wildcard_is_listed_with_the_ipv4_wildcard_it_covers() {
        assert_eq!(
            describe_listening(DEFAULT_LISTEN),
            "[::]:4433 and 0.0.0.0:4433"
        );
        for single in ["127.0.0.1:5000", "[::1]:5000", "0.0.0.0:4433"] {
            assert_eq!(describe_listening(single.parse().unwrap()), single);
        }
    }
}
