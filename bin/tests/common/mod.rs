//! Helpers for running the real binaries on loopback: a server that is
//! ready once it printed its "listening on" line, clients with a bounded
//! wait, scratch directories and deterministic file contents. No sleeps:
//! every wait is for an event (a line, an exit) with a deadline.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

pub const SERVER: &str = env!("CARGO_BIN_EXE_sift-server");
pub const CLIENT: &str = env!("CARGO_BIN_EXE_sift-client");

/// Longest wait for any one event in these tests.
pub const EVENT_TIMEOUT: Duration = Duration::from_secs(60);

static NEXT_DIR: AtomicU64 = AtomicU64::new(0);

/// A fresh scratch directory, removed on drop.
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    pub fn new(label: &str) -> Self {
        let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("sift-bin-it-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A subdirectory, created.
    pub fn subdir(&self, name: &str) -> PathBuf {
        let path = self.path.join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Deterministic content (xorshift64) so every byte position matters.
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let take = (len - out.len()).min(8);
        out.extend_from_slice(&state.to_le_bytes()[..take]);
    }
    out
}

/// Lines a child prints on one of its pipes, as they come.
pub fn line_channel(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits for the first line that satisfies `wanted`, failing at the deadline.
pub fn wait_for_line(
    lines: &Receiver<String>,
    what: &str,
    mut wanted: impl FnMut(&str) -> bool,
) -> String {
    let deadline = Instant::now() + EVENT_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if wanted(&line) => return line,
            Ok(_) => {}
            Err(e) => panic!("no {what} within {EVENT_TIMEOUT:?}: {e}"),
        }
    }
}

/// The IPv4 loopback, which every host has.
pub const IPV4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// The IPv6 loopback, or `None` on a host without it, after one line
/// saying that `test` is skipped.
pub fn ipv6_or_skip(test: &str) -> Option<IpAddr> {
    if sift::io::ipv6_loopback_available() {
        Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
    } else {
        // Straight to stderr, past the test harness's capture, so the skip
        // shows in a passing run.
        let _ = writeln!(
            std::io::stderr(),
            "skipping {test}: IPv6 loopback (::1) is not available on this host"
        );
        None
    }
}

/// Makes two tests of `fn NAME(loopback: IpAddr)`: `NAME::ipv4` on
/// 127.0.0.1 and `NAME::ipv6` on ::1 (skipped with one line on a host
/// without IPv6).
#[allow(unused_macros)] // not every test binary runs on both
macro_rules! on_both_loopbacks {
    ($name:ident) => {
        mod $name {
            #[test]
            fn ipv4() {
                super::$name(super::common::IPV4);
            }

            #[test]
            fn ipv6() {
                let test = concat!(stringify!($name), "::ipv6");
                if let Some(loopback) = super::common::ipv6_or_skip(test) {
                    super::$name(loopback);
                }
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_both_loopbacks;

/// A free port on `loopback`, for a binary's `--listen` (`[::1]:0`).
pub fn any_port(loopback: IpAddr) -> String {
    SocketAddr::new(loopback, 0).to_string()
}

/// A running `sift-server`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// The "listening on" line up to its parenthesis: the address(es).
    pub listening: String,
    /// The fingerprint the server printed (`SHA256:…`); empty under Null.
    pub fingerprint: String,
    /// Transfer lines printed after "listening on".
    pub lines: Receiver<String>,
    /// What it prints on stderr (warnings), line by line.
    pub stderr: Receiver<String>,
    /// Its own state directory (certificate and key) if the test gave
    /// none, removed on drop.
    state: Option<TestDir>,
    /// Where its state lives (its own or the test's).
    state_path: PathBuf,
}

impl Server {
    /// Starts a TLS server on a free IPv4 loopback port serving `root`,
    /// with a state directory of its own (never the user's).
    pub fn start(root: &Path, extra: &[&str]) -> Self {
        Self::start_on(IPV4, root, extra)
    }

    /// Like [`Server::start`], on a free port of `address` (a loopback, or
    /// `::` for dual-stack).
    pub fn start_on(address: IpAddr, root: &Path, extra: &[&str]) -> Self {
        let state = TestDir::new("server-state");
        let mut server = Self::launch(SocketAddr::new(address, 0), root, extra, state.path());
        server.state = Some(state);
        server
    }

    /// Like [`Server::start`], keeping its identity in `state`.
    pub fn start_in(root: &Path, extra: &[&str], state: &Path) -> Self {
        Self::launch(SocketAddr::new(IPV4, 0), root, extra, state)
    }

    /// Like [`Server::start_in`], on `listen` exactly: a restart on the
    /// address of a server that was killed.
    #[allow(dead_code)] // not every test binary restarts servers
    pub fn start_at(listen: SocketAddr, root: &Path, extra: &[&str], state: &Path) -> Self {
        Self::launch(listen, root, extra, state)
    }

    fn launch(listen: SocketAddr, root: &Path, extra: &[&str], state: &Path) -> Self {
        let mut child = Command::new(SERVER)
            .args(["--listen", &listen.to_string(), "--state-dir"])
            .arg(state)
            .arg("--root")
            .arg(root)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start sift-server");
        let lines = line_channel(child.stdout.take().unwrap());
        let stderr = line_channel(child.stderr.take().unwrap());
        let mut fingerprint = String::new();
        let listening = wait_for_line(&lines, "\"listening on\" line", |l| {
            if let Some(rest) = l.strip_prefix("identity ") {
                fingerprint = rest.split_whitespace().next().unwrap_or_default().into();
            }
            l.starts_with("listening on ")
        });
        let addr = listening
            .split_whitespace()
            .nth(2)
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("no address in {listening:?}"));
        let listening = listening.split(" (").next().unwrap_or_default().to_string();
        Self {
            child,
            addr,
            listening,
            fingerprint,
            lines,
            stderr,
            state: None,
            state_path: state.to_path_buf(),
        }
    }

    /// Lets the client holding `key` upload (the server must run with
    /// `--allow-put`): its fingerprint becomes a line of the server's
    /// `authorized_clients`, which the server reads at every upload.
    pub fn authorize(&self, key: &ClientKey) {
        let path = self.state_path.join("authorized_clients");
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(file, "{} test-client", key.fingerprint).unwrap();
    }

    /// The server's process ID, for reading /proc.
    #[allow(dead_code)] // not every test binary looks into the process
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Asks the server to stop (SIGTERM: it closes every connection) and
    /// waits until it has exited.
    #[allow(dead_code)] // not every test binary stops servers
    pub fn stop(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        unsafe {
            libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM);
        }
        self.child.wait().expect("wait for sift-server")
    }

    /// `--pin=SHA256:…` for a client of this server.
    pub fn pin(&self) -> String {
        format!("--pin={}", self.fingerprint)
    }

    /// `sift://ADDR/PATH`.
    pub fn url(&self, path: &str) -> String {
        format!("sift://{}/{path}", self.addr)
    }

    /// Waits for the next transfer line.
    pub fn next_transfer_line(&self) -> String {
        wait_for_line(&self.lines, "transfer line", |l| l.starts_with("client="))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `sift-client` with a state directory of its own that does not exist, so
/// the client caches nothing across runs (address tokens are saved only
/// into a state directory that exists) and nothing the user's own runs left
/// in `~/.local/share/sift` changes what a test sees: with a saved NEW_TOKEN
/// token, a client skips the server's Retry.
pub fn client_command() -> Command {
    let n = NEXT_DIR.fetch_add(1, Ordering::Relaxed);
    let data_home = std::env::temp_dir().join(format!(
        "sift-bin-it-client-data-{}-{n}",
        std::process::id()
    ));
    let mut command = Command::new(CLIENT);
    command.env("XDG_DATA_HOME", data_home);
    command
}

/// A client key of its own, made by `sift-client id` in a state directory
/// that lives as long as this value.
pub struct ClientKey {
    dir: TestDir,
    /// `SHA256:…`, as `sift-client id` printed it.
    pub fingerprint: String,
}

impl ClientKey {
    pub fn new() -> Self {
        let dir = TestDir::new("client-key");
        let output = run_client(&["id", "--state-dir", dir.path().to_str().unwrap()]);
        let fingerprint = expect_success(&output).trim().to_string();
        assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");
        Self { dir, fingerprint }
    }

    /// `--state-dir=DIR`: a client run that presents this key.
    pub fn arg(&self) -> String {
        format!("--state-dir={}", self.dir.path().display())
    }
}

/// Runs a client to completion, killing it if it outlives the deadline.
pub fn run_client(args: &[&str]) -> Output {
    run_bounded(client_command().args(args))
}

/// Runs `command` with a bounded wait.
pub fn run_bounded(command: &mut Command) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the binary");
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(EVENT_TIMEOUT) {
        Ok(output) => output.expect("wait for the binary"),
        Err(_) => {
            // SAFETY: signalling the child we spawned, by its pid.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{command:?} did not finish within {EVENT_TIMEOUT:?}");
        }
    }
}

pub fn stdout_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr_of(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn expect_success(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        output.status,
        stdout_of(output),
        stderr_of(output)
    );
    stdout_of(output)
}

/// A client flag that keeps a test away from the user's known-hosts file,
/// for runs that never reach a server.
pub const NO_KNOWN_HOSTS: &str = "--known-hosts=/nonexistent/sift-test/known_hosts";

/// Asserts failure with exactly one error line (after the Null warning)
/// and returns it.
pub fn expect_one_line_error(output: &Output) -> String {
    assert!(
        !output.status.success(),
        "expected failure, got success: {}",
        stdout_of(output)
    );
    let stderr = stderr_of(output);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("warning: --insecure-null-crypto"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one error line expected, got:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("backtrace"), "{stderr}");
    lines[0].to_string()
}

/// The client's `--json` report.
pub fn json_report(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}
