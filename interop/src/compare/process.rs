//! The processes of a run: started with their output captured, their
//! listening address read from what they print, stopped with SIGTERM, and
//! reaped with `wait4` so that their CPU time (user + system) is known.

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use anyhow::{bail, Context};

/// How long a server or relay may take to say where it listens.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a process may take to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ended {
    /// Exit code, or `None` when a signal ended it.
    pub code: Option<i32>,
    /// User + system CPU seconds it used.
    pub cpu_s: f64,
}

/// A started process whose stdout and stderr are being collected.
pub struct Running {
    name: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    lines: mpsc::Receiver<String>,
    /// The threads copying stdout and stderr; joined once the process has
    /// exited, so that its output is complete before anyone reads it.
    collectors: Vec<thread::JoinHandle<()>>,
}

impl Running {
    /// Starts `command` with stdin closed and both outputs captured.
    pub fn spawn(name: &str, mut command: Command) -> anyhow::Result<Self> {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start {name} ({:?})", command.get_program()))?;
        let (sender, lines) = mpsc::channel();
        let (stdout, out_thread) = collect(child.stdout.take(), sender.clone());
        let (stderr, err_thread) = collect(child.stderr.take(), sender);
        Ok(Self {
            name: name.to_string(),
            child,
            stdout,
            stderr,
            lines,
            collectors: out_thread.into_iter().chain(err_thread).collect(),
        })
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the first line (stdout or stderr) that contains
    /// `listening on ADDR` and returns ADDR.
    pub fn listening_address(&self) -> anyhow::Result<SocketAddr> {
        self.wait_for_line(STARTUP_TIMEOUT, "say where it listens", parse_listening)
    }

    /// Waits up to `timeout` for the next line (stdout or stderr) that
    /// `wanted` makes something of, skipping the others; `what` says what
    /// was awaited when it does not come.
    pub fn wait_for_line<T>(
        &self,
        timeout: Duration,
        what: &str,
        mut wanted: impl FnMut(&str) -> Option<T>,
    ) -> anyhow::Result<T> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    if let Some(found) = wanted(&line) {
                        return Ok(found);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    bail!("{} did not {what} within {timeout:?}", self.name)
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    // Give the collectors a moment to store the last words.
                    bail!("{} exited at start: {}", self.name, self.last_words())
                }
            }
        }
    }

    /// Waits up to `timeout` for the process to exit by itself; SIGKILL
    /// after that. `Ok(None)` means it was killed for taking too long.
    pub fn wait(&mut self, timeout: Duration) -> anyhow::Result<Option<Ended>> {
        let pid = self.pid();
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let _ = sender.send(reap(pid));
        });
        let ended = match receiver.recv_timeout(timeout) {
            Ok(ended) => Some(ended?),
            Err(_) => {
                signal(pid, libc::SIGKILL);
                receiver.recv().context("lost the process reaper")??;
                None
            }
        };
        // The pipes close when the process exits: its output is complete
        // once the collectors are done. (A grandchild holding a pipe open
        // would block here; none of the binaries run has one.)
        for collector in self.collectors.drain(..) {
            let _ = collector.join();
        }
        Ok(ended)
    }

    /// SIGTERM, then SIGKILL if it has not exited after a grace period.
    pub fn stop(&mut self) -> anyhow::Result<Ended> {
        signal(self.pid(), libc::SIGTERM);
        match self.wait(TERM_GRACE)? {
            Some(ended) => Ok(ended),
            None => bail!(
                "{} ignored SIGTERM for {:?} and was killed",
                self.name,
                TERM_GRACE
            ),
        }
    }

    /// Everything it printed on stdout so far.
    pub fn stdout(&self) -> String {
        self.stdout.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Everything it printed on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Its last non-empty line of stderr (or stdout), for an error message.
    pub fn last_words(&self) -> String {
        let stderr = self.stderr();
        let stdout = self.stdout();
        stderr
            .lines()
            .chain(stdout.lines())
            .rfind(|line| !line.trim().is_empty())
            .unwrap_or("(no output)")
            .to_string()
    }
}

impl Drop for Running {
    /// A process is never left behind: one still running is killed.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// ADDR from a line containing `listening on ADDR` (ADDR ends at a space,
/// comma or the end of the line).
pub fn parse_listening(line: &str) -> Option<SocketAddr> {
    let rest = &line[line.find("listening on ")? + "listening on ".len()..];
    let end = rest.find([' ', ',']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn collect(
    pipe: Option<impl Read + Send + 'static>,
    lines: mpsc::Sender<String>,
) -> (Arc<Mutex<String>>, Option<thread::JoinHandle<()>>) {
    let store = Arc::new(Mutex::new(String::new()));
    let thread = pipe.map(|pipe| {
        let store = store.clone();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut text) = store.lock() {
                    text.push_str(&line);
                    text.push('\n');
                }
                let _ = lines.send(line);
            }
        })
    });
    (store, thread)
}

fn signal(pid: u32, signal: libc::c_int) {
    // SAFETY: kill(2) with a pid this runner started and has not reaped
    // (reaping happens only in `reap`, after which no signal is sent).
    unsafe {
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// wait4(2): blocks until `pid` exits and returns its status and rusage.
fn reap(pid: u32) -> anyhow::Result<Ended> {
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: status and usage are valid for writes for the call.
        let reaped = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
        if reaped == pid as libc::pid_t {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).context("wait4");
        }
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(Ended {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        cpu_s: seconds(usage.ru_utime) + seconds(usage.ru_stime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_lines_of_every_binary_give_their_address() {
        let lines = [
            "listening on 127.0.0.1:59417 (root /tmp/f, cc cubic, corruption notices on)",
            "sift-link: listening on 127.0.0.1:42366, relaying to 127.0.0.1:44738; forward \"\"",
            "listening on [::1]:4433",
        ];
        let ports: Vec<u16> = lines
            .iter()
            .map(|l| parse_listening(l).unwrap().port())
            .collect();
        assert_eq!(ports, [59417, 42366, 4433]);
        assert_eq!(parse_listening("warning: Null protection"), None);
    }

    #[test]
    fn a_process_that_outlives_its_timeout_is_killed_and_reported_as_such() {
        let mut sleeper = Running::spawn("sleep", {
            let mut c = Command::new("sleep");
            c.arg("30");
            c
        })
        .unwrap();
        assert_eq!(sleeper.wait(Duration::from_millis(100)).unwrap(), None);
    }

    #[test]
    fn a_finished_process_reports_its_exit_code_and_cpu_time() {
        let mut shell = Running::spawn("sh", {
            let mut c = Command::new("sh");
            c.args([
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; echo done; exit 3",
            ]);
            c
        })
        .unwrap();
        let ended = shell.wait(Duration::from_secs(30)).unwrap().unwrap();
        assert_eq!(ended.code, Some(3));
        assert!(ended.cpu_s > 0.0, "{ended:?}");
    }
}
