//! One cell: a server, `sift-link` in front of it when the case needs a
//! link, the tap in front of that, the client (once, or once per file);
//! then the files byte for byte and the case's checks. A failing cell's
//! logs stay in its folder; a passing cell's folder is removed.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

use super::cases::{
    Case, AMPLIFICATION_CHAIN, CROSS_TRAFFIC_CC, CROSS_TRAFFIC_LEAD_REPORTS,
    CROSS_TRAFFIC_TIMEOUT_S, RESUMPTION_CHAIN,
};
use super::checks::{self, Seen};
use super::stacks::{self, Binaries, ServerSetup, Stack};
use super::tap::Tap;
use crate::compare::execute::sha256_file;
use crate::compare::process::Running;

/// The client's datagrams the amplificationlimit case drops (1-based):
/// the runner's `--drops_to_server=2,3,4,5,6,7`.
pub const AMPLIFICATION_DROPS: [usize; 6] = [2, 3, 4, 5, 6, 7];

/// How a cell ended.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(tag = "result", content = "reason", rename_all = "lowercase")]
pub enum Outcome {
    /// Every check passed.
    Pass,
    /// A check failed, or something did not run: why.
    Fail(String),
    /// One side cannot run the case: why.
    Unsupported(String),
}

/// A cell's record in results.json.
#[derive(Clone, Debug, Serialize)]
pub struct CellResult {
    /// The client.
    pub client: Stack,
    /// The server.
    pub server: Stack,
    /// The case.
    pub case: Case,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// What the checks looked at (absent when it did not run).
    pub seen: Option<Seen>,
    /// `sift-link --stats` (link cases, when that sift-link writes them).
    pub link_stats: Option<Value>,
    /// Where its logs are (failing cells only).
    pub logs: Option<PathBuf>,
    /// A measurement's figures (goodput), one per run that passed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub measurement: Option<Measurement>,
}

/// A measured cell's figures.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Measurement {
    /// Goodput of each run, kb/s.
    pub goodput_kbps: Vec<f64>,
    /// Their mean, kb/s.
    pub mean_kbps: f64,
    /// Their (sample) standard deviation, kb/s.
    pub stdev_kbps: f64,
    /// crosstraffic: the competing CUBIC flow's goodput while each run's
    /// client ran, kb/s.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cross: Option<CrossFigures>,
}

/// The cross flow's figures of a crosstraffic cell.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CrossFigures {
    /// Goodput of each run, kb/s.
    pub goodput_kbps: Vec<f64>,
    /// Their mean, kb/s.
    pub mean_kbps: f64,
    /// Their (sample) standard deviation, kb/s.
    pub stdev_kbps: f64,
}

/// Mean and sample standard deviation of `runs` (0 where undefined).
fn mean_and_stdev(runs: &[f64]) -> (f64, f64) {
    let n = runs.len() as f64;
    let mean = if runs.is_empty() {
        0.0
    } else {
        runs.iter().sum::<f64>() / n
    };
    let stdev = if runs.len() < 2 {
        0.0
    } else {
        (runs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    };
    (mean, stdev)
}

/// One run of a measured cell: the measured flow's goodput, and the cross
/// flow's over the same run (crosstraffic), kb/s.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunFigures {
    /// The measured transfer's goodput.
    pub goodput_kbps: f64,
    /// The cross flow's goodput while the measured client ran.
    pub cross_kbps: Option<f64>,
}

impl Measurement {
    /// The figures of `runs` (kb/s each).
    pub fn of(runs: Vec<f64>) -> Self {
        let (mean, stdev) = mean_and_stdev(&runs);
        Self {
            goodput_kbps: runs,
            mean_kbps: mean,
            stdev_kbps: stdev,
            cross: None,
        }
    }

    /// The figures of measured runs; the cross flow's when every run had
    /// one.
    pub fn of_runs(runs: &[RunFigures]) -> Self {
        let mut measurement = Self::of(runs.iter().map(|r| r.goodput_kbps).collect());
        let cross: Option<Vec<f64>> = runs.iter().map(|r| r.cross_kbps).collect();
        measurement.cross = cross.filter(|c| !c.is_empty()).map(|runs| {
            let (mean, stdev) = mean_and_stdev(&runs);
            CrossFigures {
                goodput_kbps: runs,
                mean_kbps: mean,
                stdev_kbps: stdev,
            }
        });
        measurement
    }
}

/// What every cell shares.
pub struct CellRunner {
    /// The binaries.
    pub binaries: Binaries,
    /// Where cell folders go.
    pub out: PathBuf,
    /// Longest a cell's client may take, all its runs together.
    pub timeout: Duration,
}

impl CellRunner {
    /// Runs one cell; never fails as a whole (a runner error is the cell's
    /// failure, with its reason).
    pub fn run(&self, client: Stack, server: Stack, case: Case) -> CellResult {
        let started = Instant::now();
        let mut result = CellResult {
            client,
            server,
            case,
            outcome: Outcome::Pass,
            seconds: 0.0,
            seen: None,
            link_stats: None,
            logs: None,
            measurement: None,
        };
        if let Some(reason) = stacks::unsupported(&self.binaries.http3, case, client, server) {
            result.outcome = Outcome::Unsupported(reason);
            return result;
        }
        let dir = self.out.join("logs").join(format!(
            "{}_{}_{}",
            server.name(),
            client.name(),
            case.name()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut goodputs = Vec::new();
        for run in 0..case.repetitions() {
            match self.execute(client, server, case, &dir, &mut result) {
                Ok(goodput) => goodputs.extend(goodput),
                Err(error) => {
                    let error = format!("{error:#}");
                    result.outcome = Outcome::Fail(if case.repetitions() > 1 {
                        format!("run {} of {}: {error}", run + 1, case.repetitions())
                    } else {
                        error
                    });
                    break;
                }
            }
        }
        if case.is_measurement() && result.outcome == Outcome::Pass {
            result.measurement = Some(Measurement::of_runs(&goodputs));
        }
        // The served and downloaded files are big and rebuilt every run.
        let _ = std::fs::remove_dir_all(dir.join("www"));
        let _ = std::fs::remove_dir_all(dir.join("downloads"));
        if result.outcome == Outcome::Pass {
            // Passing cells keep nothing (wire.txt included).
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            result.logs = Some(dir);
        }
        result.seconds = started.elapsed().as_secs_f64();
        result
    }

    fn execute(
        &self,
        client: Stack,
        server: Stack,
        case: Case,
        dir: &Path,
        result: &mut CellResult,
    ) -> anyhow::Result<Option<RunFigures>> {
        let www = dir.join("www");
        let downloads = dir.join("downloads");
        for sub in [
            &www,
            &downloads,
            &dir.join("server-state"),
            &dir.join("client-state"),
        ] {
            std::fs::create_dir_all(sub)
                .with_context(|| format!("cannot create {}", sub.display()))?;
        }
        let files = case
            .files()
            .into_iter()
            .map(|(name, bytes)| {
                let sha = write_seeded(&www.join(&name), bytes, &name)?;
                Ok((name, sha))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        let chain_length = match case {
            Case::AmplificationLimit => AMPLIFICATION_CHAIN,
            // A full handshake's flight then spans several datagrams and a
            // resumed one (no certificate) fits in one, even padded.
            Case::Resumption => RESUMPTION_CHAIN,
            // Every server presents the same kind of certificate, as the
            // runner hands all of them /certs: ECDSA P-256 under a root.
            // (sift-server's own is Ed25519, which BoringSSL clients such
            // as quiche's do not offer to verify.)
            _ => 2,
        };
        let (cert, key) = write_chain(&dir.join("certs"), chain_length)?;
        let loopback: SocketAddr = if case.ipv6() {
            "[::1]:0".parse()?
        } else {
            "127.0.0.1:0".parse()?
        };
        let preferred = if case == Case::ConnectionMigration {
            // A second loopback address, on a port free now: the server
            // binds it and offers it (a preferred address names its port).
            let free = std::net::UdpSocket::bind("127.0.0.2:0")
                .and_then(|socket| socket.local_addr())
                .context("cannot find a free port on 127.0.0.2 for the preferred address")?;
            Some(free)
        } else {
            None
        };
        let setup = ServerSetup {
            listen: loopback,
            root: &www,
            cert: Some((&cert, &key)),
            state: &dir.join("server-state"),
            preferred,
        };
        let mut command = stacks::server_command(&self.binaries, server, case, &setup);
        command
            .env("SSLKEYLOGFILE", dir.join("server-keys.log"))
            // Where the peers put a certificate they make.
            .env("TMPDIR", dir);
        let mut server_process = Running::spawn(&format!("{server} server"), command)?;
        // crosstraffic: the competitor's server, behind the same link.
        let mut cross_server = if case.cross_traffic() {
            Some(self.cross_server(loopback, dir, (&cert, &key))?)
        } else {
            None
        };
        let cross_address = match &cross_server {
            Some(running) => Some(running.listening_address()?),
            None => None,
        };
        let started = server_process.listening_address();
        // The ecn case's wire and client report, judged once the server
        // has stopped and printed its transfer lines.
        let mut ecn_seen: Option<(super::tap::Wire, Vec<Value>)> = None;
        let outcome = started.and_then(|address| {
            let drops = if case == Case::AmplificationLimit {
                AMPLIFICATION_DROPS.to_vec()
            } else {
                Vec::new()
            };
            // The tap beside the server sees the server's packets before
            // the link damages them (Case::tap_beside_server).
            let server_side_tap = if case.tap_beside_server() {
                Some(Tap::start(loopback, address, drops.clone())?)
            } else {
                None
            };
            let link_target = server_side_tap.as_ref().map_or(address, Tap::address);
            self.with_link(
                case,
                link_target,
                cross_address,
                loopback,
                dir,
                |front, route, link| {
                    let (tap, client_target) = match server_side_tap {
                        Some(tap) => (tap, front),
                        None => {
                            let tap = Tap::start(loopback, front, drops)?;
                            let target = tap.address();
                            (tap, target)
                        }
                    };
                    // crosstraffic: the cross flow first, in its stride before
                    // the measured client starts (the runner starts iperf first).
                    let cross = route
                        .map(|route| self.cross_client(route, dir))
                        .transpose()?;
                    let client_started = Instant::now();
                    let clients = self.clients(client, case, client_target, &files, dir);
                    let client_ended = Instant::now();
                    let cross_kbps = cross.map(|(mut running, base)| {
                        let _ = running.stop();
                        save(dir, "cross-client", &running);
                        cross_goodput(
                            &running.stdout(),
                            client_started.saturating_duration_since(base),
                            client_ended.saturating_duration_since(base),
                        )
                    });
                    // Stop the link before reading the tap: its stats are
                    // written at exit.
                    let stats = link.map(|l| stop_link(l, dir));
                    let wire = tap.finish();
                    let _ = std::fs::write(dir.join("wire.txt"), wire.dump());
                    let (reports, verdict) = clients?;
                    result.link_stats = stats.flatten();
                    result.seen = Some(checks::seen(&wire, &reports));
                    verdict?;
                    verify_files(&downloads, &files)?;
                    checks::check(case, &wire, &reports).map_err(anyhow::Error::msg)?;
                    if case == Case::Ecn {
                        ecn_seen = Some((wire, reports));
                        return Ok(None);
                    }
                    if !case.is_measurement() {
                        return Ok(None);
                    }
                    // The runner's goodput: the file's bits over the time from
                    // the server's first 1-RTT packet to its last.
                    let bytes: u64 = case.files().iter().map(|(_, b)| b).sum();
                    let span = wire
                        .server_one_rtt_span()
                        .filter(|span| !span.is_zero())
                        .context("the tap saw no 1-RTT transfer from the server to measure")?;
                    let cross_kbps = match cross_kbps {
                        None => None,
                        Some(kbps) => Some(kbps.context(
                            "the cross flow's reports cover no second of the measured run",
                        )?),
                    };
                    Ok(Some(RunFigures {
                        goodput_kbps: bytes as f64 * 8.0 / span.as_secs_f64() / 1000.0,
                        cross_kbps,
                    }))
                },
            )
        });
        let _ = server_process.stop();
        save(dir, "server", &server_process);
        if let Some(cross) = cross_server.as_mut() {
            let _ = cross.stop();
            save(dir, "cross-server", cross);
        }
        let (Ok(_), Some((wire, reports))) = (&outcome, ecn_seen) else {
            return outcome;
        };
        let mut sift = Vec::new();
        if client == Stack::Sift {
            let state = reports.last().and_then(checks::client_ecn_state);
            sift.push(("client", state));
        }
        if server == Stack::Sift {
            sift.push(("server", checks::server_ecn_state(&server_process.stdout())));
        }
        let limit = stacks::ecn_limit(client, server);
        checks::check_ecn(&wire, &sift, limit.as_deref()).map_err(anyhow::Error::msg)?;
        if let Some(limit) = limit {
            // Passed as far as it can: the peer's limit, and sift's side
            // failed safe (its states are in the reason).
            let states: Vec<String> = sift
                .iter()
                .map(|(side, state)| {
                    format!("sift's {side} ECN {}", state.as_deref().unwrap_or("?"))
                })
                .collect();
            result.outcome = Outcome::Unsupported(format!(
                "{limit}; sift failed safe: {}, files byte-exact",
                states.join(", ")
            ));
        }
        outcome
    }

    /// crosstraffic: the cross flow's server, a sift-server (one fixed
    /// competitor for every pair) sending with CUBIC.
    fn cross_server(
        &self,
        loopback: SocketAddr,
        dir: &Path,
        (cert, key): (&Path, &Path),
    ) -> anyhow::Result<Running> {
        let root = dir.join("cross-www");
        let state = dir.join("cross-server-state");
        for sub in [&root, &state] {
            std::fs::create_dir_all(sub)
                .with_context(|| format!("cannot create {}", sub.display()))?;
        }
        let mut command = Command::new(&self.binaries.sift_server);
        command
            .arg("--listen")
            .arg(loopback.to_string())
            .arg("--root")
            .arg(&root)
            .arg("--state-dir")
            .arg(&state)
            .args(["--workers", "1", "--cc", CROSS_TRAFFIC_CC])
            .arg("--cert")
            .arg(cert)
            .arg("--key")
            .arg(key);
        Running::spawn("cross-traffic server", command)
    }

    /// crosstraffic: starts the cross flow (`sift-client perf -R`, CUBIC,
    /// QUIC v1) through the link's route and waits until it has run
    /// [`CROSS_TRAFFIC_LEAD_REPORTS`] seconds; returns it and the instant
    /// its reports' clock started.
    fn cross_client(&self, route: SocketAddr, dir: &Path) -> anyhow::Result<(Running, Instant)> {
        let state = dir.join("cross-client-state");
        std::fs::create_dir_all(&state)
            .with_context(|| format!("cannot create {}", state.display()))?;
        let mut command = Command::new(&self.binaries.sift_client);
        command
            .arg("perf")
            .arg(format!("sift://{route}"))
            .args(["-R", "-J", "-i", "1", "-t"])
            .arg(CROSS_FLOW_SECONDS.to_string())
            .args(["--cc", CROSS_TRAFFIC_CC, "--versions", "v1"])
            .arg("--state-dir")
            .arg(&state);
        let running = Running::spawn("cross-traffic client", command)?;
        let mut base = None;
        for _ in 0..CROSS_TRAFFIC_LEAD_REPORTS {
            let end_s = running.wait_for_line(
                Duration::from_secs(10),
                "report a second of its cross flow",
                interval_end,
            )?;
            // The reports' clock: this report's end, as it arrived.
            base = Instant::now().checked_sub(Duration::from_secs_f64(end_s));
        }
        Ok((running, base.unwrap_or_else(Instant::now)))
    }

    /// Runs `body` with the address the tap relays to: the server's, or a
    /// `sift-link` in front of it for cases with a link.
    /// With `cross`, the link also carries a route to that server through
    /// the same queues, and `body` gets the route's address.
    fn with_link<T>(
        &self,
        case: Case,
        server: SocketAddr,
        cross: Option<SocketAddr>,
        loopback: SocketAddr,
        dir: &Path,
        body: impl FnOnce(SocketAddr, Option<SocketAddr>, Option<Running>) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let Some(link) = case.link() else {
            anyhow::ensure!(cross.is_none(), "{case}: cross traffic needs a link");
            return body(server, None, None);
        };
        let mut command = Command::new(&self.binaries.sift_link);
        command
            .arg("--listen")
            .arg(loopback.to_string())
            .arg("--to")
            .arg(server.to_string())
            .args([
                "--forward",
                link.forward,
                "--reverse",
                link.reverse,
                "--seed",
                "1",
            ]);
        if let Some(every) = link.rebind_every_s {
            command.arg("--rebind-every").arg(every.to_string());
        }
        if let Some(linger) = link.rebind_linger_s {
            command.arg("--rebind-linger").arg(linger.to_string());
        }
        if link.rebind_addr {
            command.arg("--rebind-addr");
        }
        if self.binaries.link_stats {
            command.arg("--stats").arg(dir.join("link-stats.json"));
        }
        if let Some(cross) = cross {
            command
                .arg("--route")
                .arg(format!("{}={cross}", SocketAddr::new(loopback.ip(), 0)));
        }
        let running = Running::spawn("sift-link", command)?;
        let address = running.listening_address()?;
        let route = match cross {
            Some(_) => Some(running.wait_for_line(
                crate::compare::process::STARTUP_TIMEOUT,
                "name its route's address",
                parse_route,
            )?),
            None => None,
        };
        body(address, route, Some(running))
    }

    /// Runs the client (once, or once per file), each with what is left of
    /// the timeout; returns their reports and whether all ended well.
    fn clients(
        &self,
        client: Stack,
        case: Case,
        tap: SocketAddr,
        files: &[(String, String)],
        dir: &Path,
    ) -> anyhow::Result<(Vec<Value>, anyhow::Result<()>)> {
        let urls: Vec<String> = files
            .iter()
            .map(|(name, _)| stacks::url(case, tap, name))
            .collect();
        let runs: Vec<&[String]> = if case.connection_per_file() {
            urls.chunks(1).collect()
        } else {
            vec![&urls[..]]
        };
        let timeout = if case.cross_traffic() {
            self.timeout
                .max(Duration::from_secs(CROSS_TRAFFIC_TIMEOUT_S))
        } else {
            self.timeout
        };
        let deadline = Instant::now() + timeout;
        let mut reports = Vec::new();
        for (index, run) in runs.into_iter().enumerate() {
            let mut command = stacks::client_command(
                &self.binaries,
                client,
                case,
                run,
                &dir.join("downloads"),
                &dir.join("client-state"),
            );
            command.env("SSLKEYLOGFILE", dir.join("client-keys.log"));
            let mut running = Running::spawn(&format!("{client} client"), command)?;
            let ended = running.wait(deadline.saturating_duration_since(Instant::now()))?;
            save(dir, &format!("client-{index}"), &running);
            if let Some(report) = checks::client_report(&running.stdout()) {
                reports.push(report);
            }
            let verdict = match ended {
                None => Err(anyhow::anyhow!(
                    "the client did not finish within {timeout:?}"
                )),
                Some(ended) if ended.code == Some(127) => Err(anyhow::anyhow!(
                    "the client exited 127 (test case unsupported): {}",
                    last_error(&running)
                )),
                Some(ended) if ended.code != Some(0) => Err(anyhow::anyhow!(
                    "the client failed ({:?}): {}",
                    ended.code,
                    last_error(&running)
                )),
                Some(_) => Ok(()),
            };
            if verdict.is_err() {
                return Ok((reports, verdict));
            }
        }
        Ok((reports, Ok(())))
    }
}

/// How long the cross flow is asked to run: longer than any run's client
/// may take (it is stopped when the client is done).
const CROSS_FLOW_SECONDS: u64 = 600;

/// sift-link's `route: from ADDR to …` line: ADDR.
fn parse_route(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("route: from ")? + "route: from ".len()..];
    rest.split(' ').next()?.parse().ok()
}

/// A `sift-client perf -J` interval line: its end, seconds.
fn interval_end(line: &str) -> Option<f64> {
    let value: Value = serde_json::from_str(line).ok()?;
    (value.get("event")? == "interval")
        .then(|| value.get("end_s")?.as_f64())
        .flatten()
}

/// The cross flow's goodput (kb/s) over its `perf -J` intervals that lie
/// within `from`..`to` of its reports' clock (the measured client's run);
/// `None` when none does.
pub fn cross_goodput(ndjson: &str, from: Duration, to: Duration) -> Option<f64> {
    let (from, to) = (from.as_secs_f64(), to.as_secs_f64());
    let (mut bytes, mut seconds) = (0u64, 0.0);
    for line in ndjson.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if value.get("event").and_then(Value::as_str) != Some("interval") {
            continue;
        }
        let field = |name: &str| value.get(name).and_then(Value::as_f64);
        let (Some(start), Some(end), Some(got)) = (
            field("start_s"),
            field("end_s"),
            value.get("bytes").and_then(Value::as_u64),
        ) else {
            continue;
        };
        if start >= from && end <= to && end > start {
            bytes += got;
            seconds += end - start;
        }
    }
    (seconds > 0.0).then(|| bytes as f64 * 8.0 / seconds / 1000.0)
}

/// The longest reason a table cell quotes; the rest is in the logs.
const REASON_CHARS: usize = 300;

/// A client's last line of stderr (its error), cut to [`REASON_CHARS`]:
/// its report on stdout is kept in the logs, not in the reason.
fn last_error(process: &Running) -> String {
    let stderr = process.stderr();
    let line = stderr
        .lines()
        .rfind(|line| !line.trim().is_empty())
        .unwrap_or("(nothing on stderr)");
    match line.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

fn stop_link(mut link: Running, dir: &Path) -> Option<Value> {
    let _ = link.stop();
    save(dir, "link", &link);
    let text = std::fs::read_to_string(dir.join("link-stats.json")).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes a process's output into the cell's folder.
fn save(dir: &Path, name: &str, process: &Running) {
    let _ = std::fs::write(dir.join(format!("{name}.stdout")), process.stdout());
    let _ = std::fs::write(dir.join(format!("{name}.stderr")), process.stderr());
}

/// Every file in `downloads`, byte-exact.
pub fn verify_files(downloads: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (name, sha) in files {
        let path = downloads.join(name);
        if !path.is_file() {
            anyhow::bail!("{name} was not downloaded");
        }
        let got = sha256_file(&path)?;
        if &got != sha {
            anyhow::bail!("{name} is not byte-exact (sha256 {got}, served {sha})");
        }
    }
    Ok(())
}

/// Writes `bytes` pseudo-random bytes seeded by `seed` (files of one size
/// differ, so a response on the wrong stream shows) and returns their
/// SHA-256.
pub fn write_seeded(path: &Path, bytes: u64, seed: &str) -> anyhow::Result<String> {
    use std::io::Write;
    let file =
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut writer = std::io::BufWriter::new(file);
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let seeded = ring::digest::digest(&ring::digest::SHA256, seed.as_bytes());
    let mut state = u64::from_le_bytes(seeded.as_ref()[..8].try_into()?) | 1;
    let mut left = bytes;
    let mut chunk = vec![0u8; 1 << 16];
    while left > 0 {
        for word in chunk.chunks_exact_mut(8) {
            // xorshift64*: fast and repeatable.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let take = left.min(chunk.len() as u64) as usize;
        digest.update(&chunk[..take]);
        writer.write_all(&chunk[..take])?;
        left -= take as u64;
    }
    writer.flush()?;
    Ok(crate::peers::files::hex(digest.finish().as_ref()))
}

/// A chain of `length` certificates (leaf for localhost first, root
/// last) and the leaf's key, as PEM files in `dir`. Each carries a few
/// long names so the chain is several kilobytes, as the runner's is.
pub fn write_chain(dir: &Path, length: usize) -> anyhow::Result<(PathBuf, PathBuf)> {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let padding = |level: usize| -> Vec<String> {
        (0..6)
            .map(|i| format!("padding-{level}-{i}-{}.interop.invalid", "x".repeat(40)))
            .collect()
    };
    let mut issuer_params = CertificateParams::new(padding(0))?;
    issuer_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let mut issuer_key = KeyPair::generate()?;
    let mut issuer = issuer_params.self_signed(&issuer_key)?;
    let mut chain = vec![issuer.pem()];
    for level in 1..length.saturating_sub(1) {
        let mut params = CertificateParams::new(padding(level))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &issuer, &issuer_key)?;
        chain.push(cert.pem());
        issuer = cert;
        issuer_key = key;
    }
    let mut names = vec!["localhost".to_string()];
    names.extend(padding(length));
    let leaf_key = KeyPair::generate()?;
    let leaf = CertificateParams::new(names)?.signed_by(&leaf_key, &issuer, &issuer_key)?;
    chain.push(leaf.pem());
    chain.reverse();
    let cert = dir.join("chain.pem");
    let key = dir.join("key.pem");
    std::fs::write(&cert, chain.concat())
        .with_context(|| format!("cannot write {}", cert.display()))?;
    std::fs::write(&key, leaf_key.serialize_pem())
        .with_context(|| format!("cannot write {}", key.display()))?;
    Ok((cert, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_files_differ_by_name_and_hash_as_written() {
        let dir = std::env::temp_dir().join(format!("sift-matrix-seeded-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = write_seeded(&dir.join("a"), 1000, "a").unwrap();
        let b = write_seeded(&dir.join("b"), 1000, "b").unwrap();
        assert_ne!(a, b);
        assert_eq!(sha256_file(&dir.join("a")).unwrap(), a);
        let files = vec![("a".to_string(), a), ("b".to_string(), b.clone())];
        assert!(verify_files(&dir, &files).is_ok());
        std::fs::copy(dir.join("a"), dir.join("b")).unwrap();
        assert!(verify_files(&dir, &files)
            .unwrap_err()
            .to_string()
            .contains("byte-exact"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_cross_flow_counts_only_the_seconds_inside_the_measured_run() {
        let ndjson = [
            r#"{"event":"interval","start_s":0.0,"end_s":1.0,"bytes":1250000}"#,
            r#"{"event":"interval","start_s":1.0,"end_s":2.0,"bytes":500000}"#,
            r#"{"event":"interval","start_s":2.0,"end_s":3.0,"bytes":750000}"#,
            r#"{"event":"interval","start_s":3.0,"end_s":4.0,"bytes":1250000}"#,
            r#"{"event":"summary","seconds":4.0,"bytes":3750000}"#,
        ]
        .join("\n");
        // 1.0–3.0 s: 1.25 MB over 2 s = 5000 kb/s; the full seconds
        // around it (10 Mb/s) do not count.
        let kbps = cross_goodput(&ndjson, Duration::from_secs(1), Duration::from_secs(3));
        assert_eq!(kbps, Some(5000.0));
        assert_eq!(
            cross_goodput(
                &ndjson,
                Duration::from_millis(1500),
                Duration::from_millis(2500)
            ),
            None
        );
        assert_eq!(
            interval_end(r#"{"event":"interval","start_s":1.0,"end_s":2.0,"bytes":5}"#),
            Some(2.0)
        );
        assert_eq!(interval_end(r#"{"event":"summary","end_s":2.0}"#), None);
        assert_eq!(
            parse_route(
                "sift-link: route: from 127.0.0.1:5001 to 127.0.0.1:4434, through the same links"
            ),
            Some("127.0.0.1:5001".parse().unwrap())
        );
    }

    #[test]
    fn crosstraffic_figures_carry_the_cross_flows_mean_and_deviation() {
        let runs = [
            RunFigures {
                goodput_kbps: 4000.0,
                cross_kbps: Some(5000.0),
            },
            RunFigures {
                goodput_kbps: 6000.0,
                cross_kbps: Some(3000.0),
            },
        ];
        let m = Measurement::of_runs(&runs);
        assert_eq!(m.mean_kbps, 5000.0);
        let cross = m.cross.expect("cross figures");
        assert_eq!(cross.mean_kbps, 4000.0);
        assert!(
            (cross.stdev_kbps - 1414.2).abs() < 0.1,
            "{}",
            cross.stdev_kbps
        );
        let plain = [RunFigures {
            goodput_kbps: 9000.0,
            cross_kbps: None,
        }];
        assert_eq!(Measurement::of_runs(&plain).cross, None);
    }

    #[test]
    fn the_amplification_chain_has_every_certificate_and_is_several_kilobytes() {
        let dir = std::env::temp_dir().join(format!("sift-matrix-chain-{}", std::process::id()));
        let (cert, _) = write_chain(&dir, AMPLIFICATION_CHAIN).unwrap();
        let pem = std::fs::read_to_string(&cert).unwrap();
        assert_eq!(
            pem.matches("BEGIN CERTIFICATE").count(),
            AMPLIFICATION_CHAIN
        );
        // DER is 3/4 of base64: the chain must outweigh 3 × 1200 bytes.
        assert!(pem.len() * 3 / 4 > 6000, "{} bytes of PEM", pem.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
