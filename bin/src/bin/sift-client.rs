//! `sift-client`: download, upload, list and measure against a
//! `sift-server`, with end-to-end SHA-256 and an iperf3-like summary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args as ClapArgs, Parser, Subcommand};
use sift::blocking::SiftIoError;
use sift::conn::Protection;
use sift::crypto::tls::DEFAULT_ALPN;
use sift::crypto::{Aead, Fingerprint};
use sift_bin::cli::common::{self, OnOff};
use sift_bin::cli::fetch::{self, Fetch};
use sift_bin::cli::format;
use sift_bin::cli::report::FlowReport;
use sift_bin::cli::session::{self, CLOSE_DONE};
use sift_bin::cli::state::{self, IdentitySource};
use sift_bin::cli::stream::Reads;
use sift_bin::cli::tokens::SavedTokens;
use sift_bin::cli::trust::ClientTrust;
use sift_bin::cli::url::{Scheme, SiftUrl};
use sift_bin::transfer::client;
use sift_bin::transfer::perf::{run_perf, PerfInterval, PerfOptions, PerfSample};
use sift_bin::transfer::{hq, EntryKind, PerfDirection};
use sift_cc::CcConfig;

const GET_EXAMPLES: &str = "\
Examples:
  sift-client get sift://host/dir/file.bin
  sift-client get sift://host:5000/file.bin -o out.bin --resume
  # Three files over one connection, into ./in:
  sift-client get sift://host/a.bin sift://host/b.bin sift://host/c.bin --output-dir in
  # From any QUIC server speaking hq-interop (quiche, quinn, ...):
  sift-client get https://127.0.0.1:4433/index.html
  # Offer only ChaCha20, update keys every 100 packets, move port once connected:
  sift-client get https://host/f.bin --ciphers chacha20 --key-update-every 100 --migrate
  # a.bin over a first connection, b.bin and c.bin over a resumed one, in 0-RTT:
  sift-client get https://host/a.bin https://host/b.bin https://host/c.bin --reconnect";

const EXAMPLES: &str = "\
Examples:
  sift-client get sift://example.org/data/big.iso
  sift-client get sift://example.org:4433/big.iso -o /tmp/big.iso --resume
  sift-client get sift://example.org/big.iso --cc bbr   # server sends with BBR
  sift-client put ./report.pdf sift://example.org/uploads/report.pdf
  sift-client ls sift://example.org/data
  sift-client perf sift://example.org -t 10 -i 1 --cc veno
  sift-client perf sift://example.org -t 5 -R -J   # NDJSON, server sends

  # Trust exactly this key (the fingerprint sift-server prints at start):
  sift-client ls sift://example.org/ --pin SHA256:3f1c…
  # Trust a CA instead (the server's certificate must name example.org):
  sift-client ls sift://example.org/ --ca ./ca.pem

  # A qlog trace of the connection (open in qvis; QLOGDIR works too), and
  # the TLS secrets for Wireshark:
  SSLKEYLOGFILE=/tmp/keys.log sift-client get sift://example.org/big.iso --qlog /tmp/qlog

  # This client's key, for a server's authorized_clients (made if needed):
  sift-client id

Server keys are remembered like ssh's: the first contact with host:port
stores the server's fingerprint in the known-hosts file (default
~/.local/share/sift/known_hosts) and says so; a different key later is
refused, naming both fingerprints and the line to remove.

Uploads go only to servers started with --allow-put, and only from clients
whose key they know: `sift-client id` prints this client's fingerprint
(making its key in the state directory on first use; `put` does too), and
the server's owner adds that line to the server's authorized_clients. The
key is presented to every server that asks for it.";

/// Transfer files to and from a sift-server.
///
/// URLs look like sift://HOST[:PORT]/PATH (default port 4433). Every file
/// is checked end to end with SHA-256; a download lands in FILE.sift-part
/// and becomes FILE only when the hash matches.
#[derive(Parser, Debug)]
#[command(name = "sift-client", version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: Common,
}

/// Options every subcommand takes.
#[derive(ClapArgs, Debug)]
struct Common {
    /// Congestion controller: reno, cubic, vegas, veno, veno-enhanced,
    /// westwood, westwood-a, bbr, prague (L4S, ECT(1)); cubic, veno,
    /// veno-enhanced, westwood, westwood-a and bbr also as NAME-ecn (a loss
    /// without CE marks on a validated ECN path is judged random). This
    /// client sends with it (default cubic);
    /// `get` also asks the server to send the file with it (default: the
    /// server's own), and fails if the server does not offer it.
    #[arg(long, global = true, value_name = "NAME", value_parser = common::parse_cc)]
    cc: Option<CcConfig>,
    /// Start the window of what this client sends (an upload, a `perf`
    /// run without -R) at this many packets instead of RFC 9002's ten; a
    /// download starts from the server's (`sift-server
    /// --initial-window`). For long paths whose bottleneck is yours.
    #[arg(long, global = true, value_name = "PACKETS", value_parser = common::parse_initial_window)]
    initial_window: Option<u64>,
    /// Offer corruption notices (both sides must offer them).
    #[arg(long, global = true, value_name = "on|off", default_value = "on")]
    corruption_notices: OnOff,
    /// ECN (RFC 9000 §13.4): mark datagrams ECT once the path proves it
    /// carries and counts the marks, report the marks that arrive, and
    /// slow down for CE. `off`: every datagram leaves not-ECT and no marks
    /// are reported.
    #[arg(long, global = true, value_name = "on|off", default_value = "on")]
    ecn: OnOff,
    /// Erasure coding between sift ends (docs/repair.md): `auto` sends
    /// repair symbols where a round trip is dear (min RTT ≥ 150 ms) and the
    /// path has lost packets, so a lost packet is rebuilt without waiting a
    /// round trip; `on` wherever the path lost packets; `off` neither offers
    /// nor takes part. Only with sift servers.
    #[arg(
        long,
        global = true,
        value_name = "auto|on|off",
        default_value = "auto"
    )]
    repair: sift::fec::policy::RepairMode,
    /// Path MTU discovery (RFC 8899): probe above 1350-byte datagrams up
    /// to what the path carries (1472 on IPv4 Ethernet, 1452 on IPv6, up
    /// to 8972 on loopback), back to 1200 on a black hole. `off`: 1350
    /// bytes throughout.
    #[arg(long, global = true, value_name = "on|off", default_value = "on")]
    pmtud: OnOff,
    /// Versions to speak, most preferred first: sift/1 (split tags,
    /// corruption notices), v1 (QUIC version 1) and v2 (QUIC version 2,
    /// RFC 9369). The client starts in v1 and a sift server upgrades it to
    /// sift/1 without a round trip; listed before v1, v2 is where it starts
    /// (rustls cannot move a handshake from v1 to v2), and a server without
    /// v2 sends it back to v1 with Version Negotiation.
    #[arg(long, global = true, value_name = "LIST", default_value = "sift/1,v1", value_delimiter = ',', value_parser = common::parse_version)]
    versions: Vec<u32>,
    /// Stay on the address given, even when the server offers a
    /// preferred address (RFC 9000 §9.6). By default the client moves
    /// there once the handshake is confirmed, after validating it.
    #[arg(long, global = true)]
    ignore_preferred_address: bool,
    /// Print one JSON object (DESIGN §11 flow fields, plus sha256 and path)
    /// instead of the summary.
    #[arg(long, global = true)]
    json: bool,
    /// Trust only a server whose certificate has this SHA-256 fingerprint
    /// (repeatable; SHA256:hex, hex, or openssl's AA:BB:… form). Overrides
    /// the known-hosts file.
    #[arg(long = "pin", global = true, value_name = "SHA256")]
    pins: Vec<Fingerprint>,
    /// Trust servers whose certificate chains to a root in this PEM bundle
    /// and names the URL's host. Overrides the known-hosts file.
    #[arg(long, global = true, value_name = "FILE", conflicts_with = "pins")]
    ca: Option<PathBuf>,
    /// The known-hosts file (default: known_hosts in the state directory).
    #[arg(long, global = true, value_name = "FILE")]
    known_hosts: Option<PathBuf>,
    /// Where the known-hosts file and this client's key live (default:
    /// $XDG_DATA_HOME/sift or ~/.local/share/sift).
    #[arg(long, global = true, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// INSECURE: Null protection — no encryption, no authentication, for
    /// experiments. The server must use it too.
    #[arg(long, global = true)]
    insecure_null_crypto: bool,
    /// A full server refuses with "server busy: N clients": try again with
    /// growing pauses for up to SECS (default 300) instead of giving up.
    #[arg(long, global = true, value_name = "SECS", num_args = 0..=1, default_missing_value = "300")]
    wait: Option<f64>,
    /// Write a qlog trace of the connection into DIR (JSON-SEQ, `.sqlog`;
    /// open it in qvis). Default: $QLOGDIR if set, else no trace. At most
    /// 1 GiB of traces per run, then tracing stops.
    #[arg(long, global = true, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// TLS 1.3 cipher suites to offer, most preferred first: aes128,
    /// aes256, chacha20 (comma-separated). Default: all three, aes128 first.
    #[arg(long, global = true, value_name = "LIST", value_delimiter = ',')]
    ciphers: Vec<Aead>,
    /// Start a 1-RTT key update every N packets this client sends (RFC
    /// 9001 §6), to exercise a server's key update. TLS only.
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    key_update_every: Option<u64>,
    /// Keep no TLS session tickets: every connection makes a full
    /// handshake (and sends no 0-RTT). Tickets last one run: rustls cannot
    /// save them (SECURITY.md), so only --repeat resumes.
    #[arg(long, global = true)]
    no_session_tickets: bool,
    /// Resume sessions but send no 0-RTT data: requests wait for the
    /// handshake.
    #[arg(long, global = true)]
    no_0rtt: bool,
    /// Do the whole command this many times, each over a new connection:
    /// the second and later resume the first's TLS session, and a get or
    /// ls sends its request in 0-RTT (one round trip earlier; sent again
    /// after the handshake if the server rejects it). One report per
    /// connection.
    #[arg(long, global = true, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Log more (-v: this tool's events, -vv: the transport's too).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Subcommand, Debug, Clone)]
enum Command {
    /// Download files: from a sift-server (sift://), or from any QUIC
    /// server speaking hq-interop (https://).
    #[command(after_help = GET_EXAMPLES)]
    Get {
        /// sift://HOST[:PORT]/PATH (sift's protocol, SHA-256 checked end to
        /// end) or https://HOST[:PORT]/PATH (HTTP/0.9 over QUIC, ALPN
        /// hq-interop). Several URLs go to one server over one connection,
        /// one stream each, at once.
        #[arg(value_name = "URL", required = true, num_args = 1..)]
        urls: Vec<String>,
        /// Where to write it (one URL only; default: the file's name, here).
        /// An existing directory, or a path ending in `/`, means the file's
        /// name in that directory.
        #[arg(short, long, value_name = "FILE", conflicts_with = "output_dir")]
        output: Option<PathBuf>,
        /// The directory files go to, each under its own name (default: here).
        #[arg(long, value_name = "DIR")]
        output_dir: Option<PathBuf>,
        /// Continue FILE.sift-part from where an interrupted download
        /// stopped (one sift:// URL only).
        #[arg(long)]
        resume: bool,
        /// Once connected, move to a new local UDP port (as when a phone
        /// changes networks): the connection must follow (active
        /// migration, RFC 9000 §9). Waits up to 5 s for the move to be
        /// allowed (handshake confirmed, a spare connection ID from the
        /// server, migration not disabled by it), and fails if it is not.
        #[arg(long)]
        migrate: bool,
        /// Fetch the first URL over one connection, then the others over a
        /// second one that resumes its TLS session, requests in 0-RTT
        /// unless --no-0rtt (quic-interop-runner's resumption and zerortt
        /// cases). One report per connection.
        #[arg(long, conflicts_with = "resume")]
        reconnect: bool,
    },
    /// Upload a file (to a server started with --allow-put that knows this
    /// client's key: see `sift-client id`).
    #[command(
        after_help = "Example:\n  sift-client put ./local.bin sift://host/uploads/remote.bin\n\nThe first upload makes this client's key and says so; a server refuses it\nin one line, naming the fingerprint and the file to add it to, until its\nowner authorises it."
    )]
    Put {
        /// The local file.
        file: PathBuf,
        /// sift://HOST[:PORT]/PATH to store it at.
        url: String,
    },
    /// List a directory on the server.
    #[command(after_help = "Example:\n  sift-client ls sift://host/some/dir")]
    Ls {
        /// sift://HOST[:PORT]/PATH of the directory (or file).
        url: String,
    },
    /// Measure throughput, iperf3-style.
    #[command(
        after_help = "Examples:\n  sift-client perf sift://host -t 10 -i 1\n  sift-client perf sift://host -t 2 -J -R"
    )]
    Perf {
        /// sift://HOST[:PORT] of the server.
        url: String,
        /// Seconds to send for.
        #[arg(
            short = 't',
            long = "time",
            value_name = "SECS",
            default_value_t = 10.0
        )]
        time: f64,
        /// Seconds between interval reports (0: none).
        #[arg(
            short = 'i',
            long = "interval",
            value_name = "SECS",
            default_value_t = 1.0
        )]
        interval: f64,
        /// NDJSON: one JSON object per interval, then a summary object.
        #[arg(short = 'J', long = "ndjson")]
        ndjson: bool,
        /// Reverse: the server sends, this client receives.
        #[arg(short = 'R', long)]
        reverse: bool,
    },
    /// Print this client's key fingerprint (SHA256:…), making the key on
    /// first use: the line a server's owner adds to its authorized_clients.
    #[command(
        after_help = "Examples:\n  sift-client id\n  sift-client id --state-dir ./client-state\n\nOn the server:\n  echo 'SHA256:… my-laptop' >> ~/.local/share/sift/authorized_clients"
    )]
    Id,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::run_tool("sift-client", || run(cli))
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let common = cli.common;
    common::init_logging(common.verbose);
    // Parse the URL first: a typo is reported before anything else happens.
    let url_texts = match &cli.command {
        Command::Get { urls, .. } => urls.clone(),
        Command::Put { url, .. } | Command::Ls { url } | Command::Perf { url, .. } => {
            vec![url.clone()]
        }
        Command::Id => return id(common.state_dir.as_deref()),
    };
    let urls = url_texts
        .iter()
        .map(|text| SiftUrl::parse(text))
        .collect::<Result<Vec<_>, _>>()?;
    let url = one_server(&urls)?;
    if url.scheme == Scheme::Https && !matches!(cli.command, Command::Get { .. }) {
        anyhow::bail!(
            "{}: https:// URLs are hq-interop downloads (get); put, ls and perf need a sift:// URL",
            url.display()
        );
    }
    let protection = common::protection(common.insecure_null_crypto);
    let trust = match protection {
        Protection::Tls => ClientTrust::from_options(
            url,
            &common.pins,
            common.ca.as_deref(),
            common.known_hosts.as_deref(),
            common.state_dir.as_deref(),
        )?,
        Protection::Null => ClientTrust::none(),
    };
    let requested = common.cc.as_ref().map(|cc| cc.name());
    let local_cc = common
        .cc
        .clone()
        .unwrap_or(CcConfig::Cubic(Default::default()));
    let local_cc = match common.initial_window {
        Some(packets) => local_cc.with_initial_window(packets),
        None => local_cc,
    };
    let mut config = common::transport_config(protection, local_cc, common.corruption_notices);
    config.pmtud.enabled = common.pmtud.enabled();
    config.ecn = common.ecn.enabled();
    config.repair = common.repair;
    config.versions = common.versions.clone();
    config.move_to_preferred_address = !common.ignore_preferred_address;
    config.key_update_interval = common.key_update_every;
    config.tls.cipher_suites = common.ciphers.clone();
    if url.scheme == Scheme::Https {
        config.tls.alpn_protocols = vec![hq::ALPN.to_vec()];
    }
    if protection == Protection::Tls {
        // An upload needs a key: the first one makes it. Other commands
        // present the key only if there is one already.
        let make_key = matches!(cli.command, Command::Put { .. });
        config.tls.client_identity = client_key(common.state_dir.as_deref(), make_key)?;
        config.tls.key_log = common::key_log();
    }
    config.trace = common::trace_sink(common.qlog.as_deref())?;
    let tokens = SavedTokens::load(common.state_dir.as_deref());
    config.token_store = Some(tokens.store());
    if protection == Protection::Tls && !common.no_session_tickets {
        // Shared by this run's connections (--repeat), used once each.
        config.tls.tickets = Some(sift::crypto::tls::TicketStore::new());
        config.tls.early_data = !common.no_0rtt;
    }
    let wait = common
        .wait
        .map(|secs| seconds(secs, "--wait"))
        .transpose()?;
    for _ in 0..common.repeat {
        let dial = Dial {
            config: config.clone(),
            trust: trust.clone(),
            wait,
        };
        let result = run_command(&cli.command, url, &urls, dial, requested, common.json);
        if result.is_err() {
            tokens.save();
            return result;
        }
    }
    tokens.save();
    Ok(())
}

/// One run of the command over one connection made by `dial`.
fn run_command(
    command: &Command,
    url: &SiftUrl,
    urls: &[SiftUrl],
    dial: Dial,
    requested: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    match command.clone() {
        Command::Get {
            output,
            output_dir,
            migrate,
            reconnect: true,
            ..
        } => {
            let [first, rest @ ..] = urls else {
                anyhow::bail!("no URL given");
            };
            if rest.is_empty() {
                anyhow::bail!("--reconnect needs two URLs or more: the first goes over one connection, the others over a second that resumes it");
            }
            if output.is_some() {
                anyhow::bail!("-o names one file: with --reconnect use --output-dir");
            }
            // The second dial shares the first's ticket store (the config's
            // `tls.tickets`), so it resumes the session the first was given.
            let again = dial.clone();
            get_many(
                std::slice::from_ref(first),
                dial,
                None,
                output_dir.clone(),
                false,
                migrate,
                json,
            )?;
            get_many(rest, again, None, output_dir, false, migrate, json)
        }
        Command::Get {
            output,
            output_dir,
            resume,
            migrate,
            ..
        } => {
            if urls.len() == 1 && url.scheme == Scheme::Sift && output_dir.is_none() && !migrate {
                get(url, dial, output, resume, requested, json)
            } else {
                get_many(urls, dial, output, output_dir, resume, migrate, json)
            }
        }
        Command::Put { file, .. } => put(url, dial, &file, json),
        Command::Ls { .. } => ls(url, dial, json),
        Command::Perf {
            time,
            interval,
            ndjson,
            reverse,
            ..
        } => perf(url, dial, time, interval, ndjson || json, reverse),
        // Answered before any URL.
        Command::Id => Ok(()),
    }
}

/// The first URL, once every URL is checked to name the same server by
/// the same scheme (they share one connection).
fn one_server(urls: &[SiftUrl]) -> anyhow::Result<&SiftUrl> {
    let first = urls.first().context("no URL given")?;
    if let Some(other) = urls
        .iter()
        .find(|u| u.scheme != first.scheme || u.authority() != first.authority())
    {
        anyhow::bail!(
            "all URLs of one call go over one connection: {} and {} name different servers or schemes",
            first.display(),
            other.display()
        );
    }
    Ok(first)
}

/// `sift-client id`: prints this client's key fingerprint, making the key
/// first if there is none.
fn id(state_dir: Option<&Path>) -> anyhow::Result<()> {
    let identity =
        client_key(state_dir, true)?.context("this client has no key, and none could be made")?;
    writeln!(std::io::stdout(), "{}", identity.fingerprint()).context("writing to stdout")
}

/// This client's key from the state directory; made there first if
/// `create` and missing, saying so on stderr.
fn client_key(
    state_dir: Option<&Path>,
    create: bool,
) -> anyhow::Result<Option<sift::crypto::ServerIdentity>> {
    let dir = match state::state_dir(state_dir) {
        Ok(dir) => dir,
        // No place to keep a key: uploads fail with the server's word.
        Err(_) if !create => return Ok(None),
        Err(error) => return Err(error),
    };
    let Some((identity, source)) = state::client_identity(&dir, create)? else {
        return Ok(None);
    };
    if source == IdentitySource::Created {
        eprintln!(
            "sift-client: made this client's key {} (in {}); a server takes its uploads once this fingerprint is in the server's authorized_clients",
            identity.fingerprint(),
            dir.display()
        );
    }
    Ok(Some(identity))
}

/// How to reach the server: transport settings and certificate trust.
#[derive(Clone)]
struct Dial {
    config: sift::Config,
    trust: ClientTrust,
    /// How long to keep trying a busy server.
    wait: Option<Duration>,
}

impl Dial {
    fn connect(self, url: &SiftUrl) -> anyhow::Result<sift::blocking::BlockingConnection> {
        session::connect(url, self.config, &self.trust, self.wait)
    }
}

fn print_report(report: &FlowReport, json: bool) -> anyhow::Result<()> {
    let text = if json {
        serde_json::to_string(report)?
    } else {
        report.summary()
    };
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{}", text.trim_end()).context("writing to stdout")
}

fn get(
    url: &SiftUrl,
    dial: Dial,
    output: Option<PathBuf>,
    resume: bool,
    controller: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let dest = destination(url, output.as_deref(), None)?;
    let dialed = std::time::Instant::now();
    let connection = dial.connect(url)?;
    let report = session::download(
        &connection,
        &url.path,
        &dest,
        resume,
        controller,
        json,
        Reads::InPlace,
    );
    connection.close(CLOSE_DONE, "done");
    let mut report = report?;
    report.first_byte_since(dialed);
    print_report(&report, json)
}

/// Several files, or any hq-interop fetch: one connection, one stream per
/// file, at once; a report for all of them. Fails if any file failed.
fn get_many(
    urls: &[SiftUrl],
    dial: Dial,
    output: Option<PathBuf>,
    output_dir: Option<PathBuf>,
    resume: bool,
    migrate: bool,
    json: bool,
) -> anyhow::Result<()> {
    if resume {
        anyhow::bail!("--resume takes one sift:// URL (an hq-interop download has no length to resume against)");
    }
    let fetches = destinations(urls, output, output_dir.as_deref())?;
    let connection = dial.connect(&urls[0])?;
    if migrate {
        // RFC 9000 §9: not before the handshake is confirmed, and to a
        // connection ID the server has not seen on the old path (§9.5).
        // The server sends both in its first 1-RTT packets.
        match connection.wait_can_migrate(Duration::from_secs(5)) {
            Ok(()) => {}
            Err(SiftIoError::Timeout { .. }) => anyhow::bail!(
                "--migrate: the server gave no spare connection ID within 5 s, or disabled migration: sift does not move without one (RFC 9000 §9, §9.5)"
            ),
            Err(other) => return Err(other).context("waiting to migrate (--migrate)"),
        }
        let any = match connection.remote_addr() {
            std::net::SocketAddr::V4(_) => "0.0.0.0:0",
            std::net::SocketAddr::V6(_) => "[::]:0",
        };
        let moved = connection
            .rebind(any.parse().expect("a literal socket address"))
            .context("moving to a new local port (--migrate)")?;
        tracing::info!(%moved, "moved to a new local address");
    }
    let report = fetch::fetch_all(&connection, &fetches, migrate);
    connection.close(CLOSE_DONE, "done");
    let text = if json {
        serde_json::to_string(&report)?
    } else {
        report.summary()
    };
    writeln!(std::io::stdout(), "{}", text.trim_end()).context("writing to stdout")?;
    match report.failed.len() {
        0 => Ok(()),
        1 if fetches.len() == 1 => Err(anyhow::anyhow!("{}", report.failed[0].error)),
        n => anyhow::bail!("{n} of {} files failed", fetches.len()),
    }
}

/// Where each URL's file goes: `output` for a single URL, else its name
/// under `dir` (default: here). Two URLs may not name one file.
fn destinations(
    urls: &[SiftUrl],
    output: Option<PathBuf>,
    dir: Option<&Path>,
) -> anyhow::Result<Vec<Fetch>> {
    if output.is_some() && urls.len() > 1 {
        anyhow::bail!("-o names one file: with several URLs use --output-dir");
    }
    let mut fetches: Vec<Fetch> = Vec::with_capacity(urls.len());
    for url in urls {
        let dest = destination(url, output.as_deref(), dir)?;
        if let Some(earlier) = fetches.iter().find(|f| f.dest == dest) {
            anyhow::bail!(
                "{} and {} would both be written to {}",
                earlier.url.display(),
                url.display(),
                dest.display()
            );
        }
        fetches.push(Fetch {
            url: url.clone(),
            dest,
        });
    }
    Ok(fetches)
}

/// Where `url`'s file goes: `output` (the file's name in it when it is a
/// directory or ends in `/`), else its name under `dir` (default: here).
/// Checked before dialing: a directory that is not there fails now, not
/// once the file has arrived.
fn destination(
    url: &SiftUrl,
    output: Option<&Path>,
    dir: Option<&Path>,
) -> anyhow::Result<PathBuf> {
    let name = || {
        Path::new(&url.path)
            .file_name()
            .with_context(|| format!("the URL names no file: {}", url.display()))
    };
    let into_directory =
        |output: &Path| output.is_dir() || output.as_os_str().as_encoded_bytes().ends_with(b"/");
    let dest = match output {
        Some(output) if into_directory(output) => output.join(name()?),
        Some(output) => output.to_path_buf(),
        None => dir.unwrap_or(Path::new(".")).join(name()?),
    };
    let parent = dest
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        let why = if parent.exists() {
            "is not a directory"
        } else {
            "does not exist"
        };
        anyhow::bail!(
            "cannot write {}: {} {why}",
            dest.display(),
            parent.display()
        );
    }
    Ok(dest)
}

fn put(url: &SiftUrl, dial: Dial, file: &Path, json: bool) -> anyhow::Result<()> {
    if url.path.is_empty() {
        anyhow::bail!(
            "the URL names no destination file: sift://{}/ needs a path",
            url.authority()
        );
    }
    let prepared = client::LocalUpload::prepare(file)?;
    let connection = dial.connect(url)?;
    let report = session::upload(&connection, file, prepared, &url.path, json);
    connection.close(CLOSE_DONE, "done");
    print_report(&report?, json)
}

fn ls(url: &SiftUrl, dial: Dial, json: bool) -> anyhow::Result<()> {
    let connection = dial.connect(url)?;
    // A listing is safe to replay: it may leave in 0-RTT, and is asked
    // again if the server rejected that.
    let list = || -> anyhow::Result<_> {
        let mut stream = connection.open_bi_replay_safe()?;
        let listed = client::list(&mut stream, &url.path);
        if listed.is_err()
            && session::redo_after_rejected_zero_rtt(&connection, &stream, DEFAULT_ALPN)?
        {
            let mut stream = connection.open_bi()?;
            return Ok(client::list(&mut stream, &url.path)?);
        }
        Ok(listed?)
    };
    let entries = list();
    connection.close(CLOSE_DONE, "done");
    let entries = entries?;
    let mut stdout = std::io::stdout();
    if json {
        let value = serde_json::json!({ "path": url.path, "entries": entries });
        writeln!(stdout, "{value}")?;
        return Ok(());
    }
    for entry in entries {
        let (kind, size, suffix) = match entry.kind {
            EntryKind::File => ("file", entry.size.to_string(), ""),
            EntryKind::Dir => ("dir", "-".into(), "/"),
            EntryKind::Symlink => ("link", "-".into(), "@"),
            EntryKind::Other => ("other", "-".into(), ""),
        };
        writeln!(stdout, "{kind:<5} {size:>14}  {}{suffix}", entry.name)?;
    }
    Ok(())
}

fn seconds(value: f64, flag: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| *d <= Duration::from_secs(86_400))
        .with_context(|| format!("{flag} must be a number of seconds from 0 to 86400, not {value}"))
}

fn perf(
    url: &SiftUrl,
    dial: Dial,
    time: f64,
    interval: f64,
    ndjson: bool,
    reverse: bool,
) -> anyhow::Result<()> {
    let options = PerfOptions {
        direction: if reverse {
            PerfDirection::Download
        } else {
            PerfDirection::Upload
        },
        duration: seconds(time, "-t")?,
        interval: seconds(interval, "-i")?,
    };
    let connection = dial.connect(url)?;
    let mut stdout = std::io::stdout();
    if !ndjson {
        let _ = writeln!(
            stdout,
            "Connecting to {}, {} for {time} s\n[ ID] Interval           Transfer       Bitrate          Retr   Cwnd",
            url.authority(),
            if reverse { "server sending" } else { "client sending" },
        );
    }
    let sample = || Some(PerfSample::from_stats(&connection.stats()));
    let mut print_interval = |i: &PerfInterval| {
        let line = if ndjson {
            serde_json::to_string(i).unwrap_or_default()
        } else {
            format!(
                "[  1] {:6.2}-{:<6.2} sec  {:>12}  {:>14}  {:>5}  {:>10}",
                i.start_s,
                i.end_s,
                format::bytes(i.bytes),
                format::rate(i.bits_per_second),
                i.retransmits.map_or("-".into(), |r| r.to_string()),
                i.cwnd.map_or("-".into(), format::bytes),
            )
        };
        let _ = writeln!(std::io::stdout(), "{line}");
    };
    let result = connection
        .open_bi()
        .map_err(anyhow::Error::new)
        .and_then(|mut stream| {
            Ok(run_perf(
                &mut stream,
                options,
                &sample,
                &mut print_interval,
            )?)
        });
    connection.close(CLOSE_DONE, "done");
    let summary = result?;
    if ndjson {
        writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
    } else {
        writeln!(
            stdout,
            "- - - - - - - - - - - - - - - - - - - - - - - - -\n[  1] {:6.2}-{:<6.2} sec  {:>12}  {:>14}  {:>5}  {:>10}  {}\n  srtt {}",
            0.0,
            summary.seconds,
            format::bytes(summary.bytes_received),
            format::rate(summary.bits_per_second),
            summary.retransmits.map_or("-".into(), |r| r.to_string()),
            summary.cwnd.map_or("-".into(), format::bytes),
            if reverse { "receiver" } else { "sender→receiver" },
            summary.srtt_us.map_or("-".into(), format::micros_as_ms),
        )?;
    }
    Ok(())
}
