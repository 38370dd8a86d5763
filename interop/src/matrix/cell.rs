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

use super::cases::{Case, AMPLIFICATION_CHAIN, RESUMPTION_CHAIN};
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
}

impl Measurement {
    /// The figures of `runs` (kb/s each).
    pub fn of(runs: Vec<f64>) -> Self {
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
        Self {
            goodput_kbps: runs,
            mean_kbps: mean,
            stdev_kbps: stdev,
        }
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
            result.measurement = Some(Measurement::of(goodputs));
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
    ) -> anyhow::Result<Option<f64>> {
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
            self.with_link(case, link_target, loopback, dir, |front, link| {
                let (tap, client_target) = match server_side_tap {
                    Some(tap) => (tap, front),
                    None => {
                        let tap = Tap::start(loopback, front, drops)?;
                        let target = tap.address();
                        (tap, target)
                    }
                };
                let clients = self.clients(client, case, client_target, &files, dir);
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
                Ok(Some(bytes as f64 * 8.0 / span.as_secs_f64() / 1000.0))
            })
        });
        let _ = server_process.stop();
        save(dir, "server", &server_process);
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

    /// Runs `body` with the address the tap relays to: the server's, or a
    /// `sift-link` in front of it for cases with a link.
    fn with_link<T>(
        &self,
        case: Case,
        server: SocketAddr,
        loopback: SocketAddr,
        dir: &Path,
        body: impl FnOnce(SocketAddr, Option<Running>) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let Some(link) = case.link() else {
            return body(server, None);
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
        let running = Running::spawn("sift-link", command)?;
        let address = running.listening_address()?;
        body(address, Some(running))
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
        let deadline = Instant::now() + self.timeout;
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
                    "the client did not finish within {:?}",
                    self.timeout
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
