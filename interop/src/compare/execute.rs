//! Runs one unit of a plan as real processes: a server, `sift-link` in
//! front of it (link runs), a client that downloads one file through it;
//! then checks the file byte for byte and collects counters and CPU times.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::binaries::Binaries;
use super::links::LinkSpec;
use super::plan::{Plan, Protection, Stack, Unit, Variant};
use super::process::Running;
use super::results::{parse_link_counters, RunRecord};
use crate::flow::FlowReport;
use crate::peers::files::hex;

/// The most a loopback download may take (1 GiB at 30 Mb/s).
pub const LOOPBACK_TIMEOUT: Duration = Duration::from_secs(300);

/// A generated source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

/// What every run shares: the binaries, a scratch directory, the served
/// files (made once per size).
pub struct Runner {
    pub binaries: Binaries,
    work: PathBuf,
    served: PathBuf,
    files: HashMap<u64, SourceFile>,
    next_run: u64,
}

impl Runner {
    /// A runner whose scratch files live under `work` (created).
    pub fn new(binaries: Binaries, work: &Path) -> anyhow::Result<Self> {
        let served = work.join("served");
        std::fs::create_dir_all(&served)
            .with_context(|| format!("cannot create {}", served.display()))?;
        Ok(Self {
            binaries,
            work: work.to_path_buf(),
            served,
            files: HashMap::new(),
            next_run: 0,
        })
    }

    /// Runs `unit` of `plan`; a failure of the run itself is a record with
    /// `ok: false`, an `Err` only a failure of the runner (no disk, no
    /// binary).
    pub fn run(&mut self, plan: &Plan, unit: &Unit) -> anyhow::Result<RunRecord> {
        let (file_bytes, timeout, link) = match unit {
            Unit::Link { link, seed, .. } => {
                let spec = plan
                    .link(link)
                    .with_context(|| format!("plan has no link {link:?}"))?;
                (
                    spec.file_bytes,
                    Duration::from_secs(spec.timeout_s),
                    Some((spec, *seed)),
                )
            }
            Unit::Loopback { .. } => (plan.loopback_bytes, LOOPBACK_TIMEOUT, None),
        };
        let source = self.source_file(file_bytes)?;
        self.next_run += 1;
        let dir = self.work.join(format!("run-{}", self.next_run));
        std::fs::create_dir_all(dir.join("home"))
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let outcome = self.run_in(&dir, unit.variant(), &source, timeout, link);
        // The run's files (a downloaded GiB among them) go at once.
        let _ = std::fs::remove_dir_all(&dir);
        let mut record = RunRecord {
            unit: unit.clone(),
            ok: false,
            error: None,
            byte_exact: false,
            flow: None,
            wall_s: 0.0,
            cpu_client_s: 0.0,
            cpu_server_s: 0.0,
            link: None,
        };
        match outcome {
            Ok(run) => {
                record.byte_exact = run.byte_exact;
                record.ok = run.error.is_none() && run.byte_exact;
                record.error = run.error.or_else(|| {
                    (!run.byte_exact).then(|| "downloaded file differs from the source".to_string())
                });
                record.flow = run.flow;
                record.wall_s = run.wall_s;
                record.cpu_client_s = run.cpu_client_s;
                record.cpu_server_s = run.cpu_server_s;
                record.link = run.link;
            }
            Err(error) => record.error = Some(format!("{error:#}")),
        }
        Ok(record)
    }

    fn run_in(
        &self,
        dir: &Path,
        variant: &Variant,
        source: &SourceFile,
        timeout: Duration,
        link: Option<(&LinkSpec, u64)>,
    ) -> anyhow::Result<Outcome> {
        let on_link = link.is_some();
        let mut server = Running::spawn("server", self.server_command(variant, dir, on_link)?)?;
        let server_address = server.listening_address()?;
        let mut relay = match link {
            Some((spec, seed)) => {
                // The download's data flows server → client: sift-link's
                // reverse direction.
                let mut command = Command::new(&self.binaries.sift_link);
                command
                    .args(["--listen", "127.0.0.1:0", "--to"])
                    .arg(server_address.to_string())
                    .args(["--forward", &spec.ack, "--reverse", &spec.data, "--seed"])
                    .arg(seed.to_string());
                let relay = Running::spawn("sift-link", command)?;
                let address = relay.listening_address()?;
                Some((relay, address))
            }
            None => None,
        };
        let target = relay
            .as_ref()
            .map_or(server_address, |(_, address)| *address);
        // Every run measures the transport, so the download goes to
        // /dev/null: writing a GiB into the page cache costs 0.2 to 1.9 s of
        // system time here, depending on what the kernel must reclaim, and
        // sift-client's fsync (which the peers' clients do not make) costs
        // half a second per GiB and 120-150 ms of a 20 MB download on the
        // links, 3-4% of its time (issue 37). Every client still hashes
        // every byte it receives, and the hash it reports is checked
        // against the source instead.
        let output = PathBuf::from("/dev/null");
        let started = Instant::now();
        let mut client = Running::spawn(
            "client",
            self.client_command(variant, dir, target, &source.name, &output, on_link)?,
        )?;
        let ended = client.wait(timeout)?;
        let wall_s = started.elapsed().as_secs_f64();
        let link_counters = match relay.as_mut() {
            Some((relay, _)) => {
                relay.stop()?;
                parse_link_counters(&relay.stderr(), "reverse")
            }
            None => None,
        };
        let server_ended = server.stop()?;
        let mut outcome = Outcome {
            error: None,
            byte_exact: false,
            flow: None,
            wall_s,
            cpu_client_s: ended.map_or(0.0, |e| e.cpu_s),
            cpu_server_s: server_ended.cpu_s,
            link: link_counters,
        };
        match ended {
            None => outcome.error = Some(format!("timed out after {} s", timeout.as_secs())),
            Some(ended) if ended.code != Some(0) => {
                outcome.error = Some(format!("client failed: {}", client.last_words()));
            }
            Some(_) => {
                let json = client.stdout();
                let line = json
                    .lines()
                    .rev()
                    .find(|l| l.starts_with('{'))
                    .unwrap_or("");
                let flow = if variant.hq {
                    hq_flow_report(line, &variant.cc)
                } else {
                    serde_json::from_str::<FlowReport>(line).map_err(|e| e.to_string())
                };
                match flow {
                    Ok(flow) => {
                        outcome.error = wrong_version(variant, &flow);
                        outcome.flow = Some(flow);
                    }
                    Err(e) => outcome.error = Some(format!("client printed no JSON report ({e})")),
                }
                outcome.byte_exact = outcome
                    .flow
                    .as_ref()
                    .is_some_and(|flow| flow.sha256 == source.sha256 && flow.bytes == source.bytes);
            }
        }
        Ok(outcome)
    }

    fn server_command(
        &self,
        variant: &Variant,
        dir: &Path,
        on_link: bool,
    ) -> anyhow::Result<Command> {
        let home = dir.join("home");
        let mut command;
        match variant.stack {
            Stack::Sift => {
                command = Command::new(&self.binaries.sift_server);
                command
                    .args(["--listen", "127.0.0.1:0", "--root"])
                    .arg(&self.served);
                sift_options(&mut command, variant, on_link);
            }
            peer => {
                // Every peer's server takes the quiche server's options.
                let (server, _) = self.peer_binaries(peer)?;
                command = Command::new(server);
                command
                    .args(["--listen", "127.0.0.1:0", "--root"])
                    .arg(&self.served)
                    .args(["--cc", &variant.cc, "--cert-dir"])
                    .arg(dir.join("cert"));
                peer_datagram_options(&mut command, on_link);
            }
        }
        // Each run starts with no remembered server keys or state.
        command.env("HOME", &home);
        Ok(command)
    }

    fn client_command(
        &self,
        variant: &Variant,
        dir: &Path,
        target: SocketAddr,
        name: &str,
        output: &Path,
        on_link: bool,
    ) -> anyhow::Result<Command> {
        let home = dir.join("home");
        let mut command;
        match variant.stack {
            Stack::Sift => {
                let scheme = if variant.hq { "https" } else { "sift" };
                command = Command::new(&self.binaries.sift_client);
                command
                    .arg("get")
                    .arg(format!("{scheme}://{target}/{name}"))
                    .arg("-o")
                    .arg(output)
                    .arg("--json");
                sift_options(&mut command, variant, on_link);
            }
            peer => {
                // Every peer's client takes the quiche client's options.
                let (_, client) = self.peer_binaries(peer)?;
                command = Command::new(client);
                command
                    .arg("get")
                    .arg(format!("quic://{target}/{name}"))
                    .arg("-o")
                    .arg(output)
                    .args(["--cc", &variant.cc, "--json", "--ca"])
                    .arg(dir.join("cert").join("cert.pem"));
                peer_datagram_options(&mut command, on_link);
            }
        }
        command.env("HOME", &home);
        Ok(command)
    }

    /// A peer's server and client.
    fn peer_binaries(&self, stack: Stack) -> anyhow::Result<(&Path, &Path)> {
        self.binaries.peer(stack).with_context(|| {
            format!("no {stack} binaries (interop/compare.sh builds them when asked)")
        })
    }

    /// The served file of `bytes` bytes, made on first use.
    fn source_file(&mut self, bytes: u64) -> anyhow::Result<SourceFile> {
        if let Some(file) = self.files.get(&bytes) {
            return Ok(file.clone());
        }
        let name = format!("file-{bytes}.bin");
        let path = self.served.join(&name);
        let sha256 = write_incompressible(&path, bytes)?;
        let file = SourceFile {
            name,
            bytes,
            sha256,
        };
        self.files.insert(bytes, file.clone());
        Ok(file)
    }
}

struct Outcome {
    error: Option<String>,
    byte_exact: bool,
    flow: Option<FlowReport>,
    wall_s: f64,
    cpu_client_s: f64,
    cpu_server_s: f64,
    link: Option<super::results::LinkCounters>,
}

/// The options both sift binaries take: controller, notices, protection,
/// and on an emulated link the peers' datagram size. sift-link carries
/// what loopback carries (8972-byte datagrams after path MTU discovery),
/// no Internet path does, and the peers are held to 1350 bytes there; so
/// sift is too (`--pmtud off`), or its fewer, larger datagrams would meet
/// a per-datagram loss rate and a queue counted in datagrams that no real
/// path gives. Loopback keeps sift's defaults.
fn sift_options(command: &mut Command, variant: &Variant, on_link: bool) {
    command.args(sift_controller_options(&variant.cc));
    if on_link {
        command.args(["--pmtud", "off"]);
    }
    if let Some(notices) = variant.notices {
        command.args(["--corruption-notices", if notices { "on" } else { "off" }]);
    }
    if variant.protection == Protection::Null {
        command.arg("--insecure-null-crypto");
    }
}

/// A peer's datagram size: the links' 1350 bytes (its binaries' default),
/// as sift runs `--pmtud off` there; on loopback up to what sift's path
/// MTU discovery reaches (8972 bytes): quinn searches up to it, quiche is
/// set to it. Held at 1350 there, a peer pays per datagram what sift pays
/// per six or seven (`results/2026-11-27-loopback/analysis.md`).
fn peer_datagram_options(command: &mut Command, on_link: bool) {
    if !on_link {
        command.args([
            "--max-datagram",
            &crate::peers::settings::LARGEST_DATAGRAM_SIZE.to_string(),
        ]);
    }
}

/// What `sift-client get https://… --json` prints for one file: the
/// connection's figures and one entry per file.
#[derive(serde::Deserialize)]
struct HqReport {
    bytes: u64,
    completion_s: f64,
    goodput_bps: f64,
    #[serde(default)]
    srtt_us: u64,
    files: Vec<HqFile>,
}

#[derive(serde::Deserialize)]
struct HqFile {
    sha256: String,
}

/// An hq-interop download's report as a [`FlowReport`]. hq-interop has no
/// trailer, so the server's counters (retransmissions, probe timeouts,
/// window) stay at zero, unknown; `cc` is the one the server was started
/// with.
fn hq_flow_report(line: &str, cc: &str) -> Result<FlowReport, String> {
    let report: HqReport = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let [file] = &report.files[..] else {
        return Err(format!(
            "{} files in an hq-interop report of one download",
            report.files.len()
        ));
    };
    Ok(FlowReport {
        cc: cc.to_string(),
        bytes: report.bytes,
        completion_s: report.completion_s,
        goodput_bps: report.goodput_bps,
        srtt_us: report.srtt_us,
        sha256: file.sha256.clone(),
        ..FlowReport::default()
    })
}

/// A sift variant's name without its `-v1` suffix, and whether it had one
/// (the run speaks QUIC version 1).
fn split_quic_v1(cc: &str) -> (&str, bool) {
    match cc.strip_suffix("-v1") {
        Some(name) => (name, true),
        None => (cc, false),
    }
}

/// A sift run that asked for QUIC v1 (a `-v1` variant) and spoke
/// something else: its figures would be filed under the wrong row.
fn wrong_version(variant: &Variant, flow: &FlowReport) -> Option<String> {
    let asked_v1 = variant.stack == Stack::Sift && split_quic_v1(&variant.cc).1;
    match flow.version.as_deref() {
        Some(spoke) if asked_v1 && spoke != crate::flow::QUIC_V1 => {
            Some(format!("asked for QUIC v1 (--versions v1), spoke {spoke}"))
        }
        _ => None,
    }
}

/// `--cc NAME`; `--initial-window N` for a `NAME-iwN` variant; and
/// `--versions v1` for a variant ending in `-v1` (`bbr-v1`,
/// `bbr-iw200-v1`): QUIC version 1's packets, whose short header carries
/// 1.6% more payload than sift/1's split tags (no corruption notices, so
/// for links that only lose).
fn sift_controller_options(cc: &str) -> Vec<String> {
    let (cc, quic_v1) = split_quic_v1(cc);
    let started_at = cc
        .rsplit_once("-iw")
        .and_then(|(name, packets)| packets.parse::<u64>().ok().map(|packets| (name, packets)));
    let mut options: Vec<String> = match started_at {
        Some((name, packets)) => vec![
            "--cc".into(),
            name.into(),
            "--initial-window".into(),
            packets.to_string(),
        ],
        None => vec!["--cc".into(), cc.into()],
    };
    if quic_v1 {
        options.extend(["--versions".into(), "v1".into()]);
    }
    options
}

/// Writes `bytes` pseudo-random (incompressible, repeatable) bytes to
/// `path` and returns their SHA-256.
pub fn write_incompressible(path: &Path, bytes: u64) -> anyhow::Result<String> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut writer = BufWriter::with_capacity(1 << 20, file);
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    // xorshift64*: fast, and a fixed seed makes the same file every time.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15 ^ bytes;
    let mut chunk = vec![0u8; 1 << 16];
    let mut left = bytes;
    while left > 0 {
        for word in chunk.chunks_exact_mut(8) {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            word.copy_from_slice(&state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
        }
        let take = left.min(chunk.len() as u64) as usize;
        digest.update(&chunk[..take]);
        writer
            .write_all(&chunk[..take])
            .with_context(|| format!("cannot write {}", path.display()))?;
        left -= take as u64;
    }
    writer
        .flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(hex(digest.finish().as_ref()))
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> anyhow::Result<String> {
    let mut file = File::open(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
    let mut chunk = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut chunk)?;
        if read == 0 {
            break;
        }
        digest.update(&chunk[..read]);
    }
    Ok(hex(digest.finish().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_files_are_repeatable_and_hash_as_written() {
        let dir = std::env::temp_dir().join(format!("sift-interop-gen-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = write_incompressible(&dir.join("a"), 100_003).unwrap();
        let b = write_incompressible(&dir.join("b"), 100_003).unwrap();
        assert_eq!(a, b);
        assert_eq!(sha256_file(&dir.join("a")).unwrap(), a);
        assert_eq!(std::fs::metadata(dir.join("a")).unwrap().len(), 100_003);
        assert_ne!(write_incompressible(&dir.join("c"), 100_004).unwrap(), a);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_hq_interop_report_reads_as_the_flow_of_its_one_file() {
        // What `sift-client get https://… -o /dev/null --json` printed.
        let line = r#"{"protocol":"hq-interop","version":"sift/1","cipher":"aes128","key_updates":0,"migrated":false,"bytes":3000000,"completion_s":0.0182,"goodput_bps":1313487989.2,"srtt_us":4345,"retransmitted_packets":0,"tls_resumed":false,"zero_rtt":"none","zero_rtt_bytes":0,"files":[{"url":"https://127.0.0.1:56744/f.bin","local_path":"/dev/null","bytes":3000000,"sha256":"ba58","completion_s":0.0176}],"failed":[]}"#;
        let flow = hq_flow_report(line, "cubic").unwrap();
        assert_eq!((flow.bytes, flow.sha256.as_str()), (3_000_000, "ba58"));
        assert_eq!((flow.cc.as_str(), flow.srtt_us), ("cubic", 4345));
        assert_eq!(flow.goodput_bps, 1313487989.2);
        let failed = line.replace(r#""files":[{"#, r#""files":[],"x":[{"#);
        assert!(hq_flow_report(&failed, "cubic").is_err());
    }

    #[test]
    fn a_sift_variant_named_with_an_initial_window_passes_it_to_the_binaries() {
        assert_eq!(
            sift_controller_options("bbr-iw200"),
            ["--cc", "bbr", "--initial-window", "200"]
        );
        assert_eq!(
            sift_controller_options("westwood-a"),
            ["--cc", "westwood-a"]
        );
        // Not a number after -iw: a controller's own name, passed whole.
        assert_eq!(sift_controller_options("x-iwy"), ["--cc", "x-iwy"]);
    }

    #[test]
    fn a_v1_variant_that_spoke_sift_1_fails_its_run() {
        let variant = |stack, cc: &str| Variant {
            stack,
            cc: cc.to_string(),
            notices: Some(true),
            protection: Protection::Default,
            hq: false,
        };
        let spoke = |version: &str| FlowReport {
            version: Some(version.to_string()),
            ..FlowReport::default()
        };
        let v1 = variant(Stack::Sift, "bbr-v1");
        assert!(wrong_version(&v1, &spoke("sift/1")).is_some());
        assert_eq!(wrong_version(&v1, &spoke("QUIC v1")), None);
        // A client that does not say (an older sift) is taken at its word.
        assert_eq!(wrong_version(&v1, &FlowReport::default()), None);
        assert_eq!(
            wrong_version(&variant(Stack::Sift, "bbr"), &spoke("sift/1")),
            None
        );
        assert_eq!(
            wrong_version(&variant(Stack::Quinn, "bbr-v1"), &spoke("x")),
            None
        );
    }

    #[test]
    fn a_sift_variant_ending_in_v1_speaks_quic_version_1() {
        assert_eq!(
            sift_controller_options("bbr-v1"),
            ["--cc", "bbr", "--versions", "v1"]
        );
        assert_eq!(
            sift_controller_options("bbr-iw200-v1"),
            ["--cc", "bbr", "--initial-window", "200", "--versions", "v1"]
        );
    }
}
