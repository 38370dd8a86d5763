//! Where the binaries are (sift's three, each peer's server and client;
//! quic-go's only where Go built them), which controllers the sift binaries offer,
//! and whether they run with their default protection.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::plan::{Protection, Stack};
use super::process::Running;

/// Paths of the binaries a comparison runs.
#[derive(Clone, Debug)]
pub struct Binaries {
    pub sift_server: PathBuf,
    pub sift_client: PathBuf,
    pub sift_link: PathBuf,
    pub quiche_server: PathBuf,
    pub quiche_client: PathBuf,
    pub quinn_server: PathBuf,
    pub quinn_client: PathBuf,
    /// quiche 0.24's server and client, when built (interop/quiche-0.24/,
    /// opt-in).
    pub quiche_024: Option<(PathBuf, PathBuf)>,
    /// quic-go's server and client, when built (`interop/quic-go/build.sh`
    /// puts them beside quinn's; it needs Go).
    pub quic_go: Option<(PathBuf, PathBuf)>,
}

impl Binaries {
    /// sift's binaries from `sift_dir`, quiche's and quinn's from
    /// `quiche_dir`, quiche 0.24's from `quiche_024_dir` if given; each must
    /// exist.
    pub fn locate(
        sift_dir: &Path,
        quiche_dir: &Path,
        quiche_024_dir: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let find = |dir: &Path, name: &str, build: &str| -> anyhow::Result<PathBuf> {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                bail!("{} not found (build it: {build})", path.display())
            }
        };
        let sift = "cargo build --release -p sift-bin";
        let quiche = "cargo build --release --manifest-path interop/Cargo.toml";
        let apart = "cargo build --release --manifest-path interop/quiche-0.24/Cargo.toml";
        let quiche_024 = match quiche_024_dir {
            Some(dir) => Some((
                find(dir, "quiche024-server", apart)?,
                find(dir, "quiche024-client", apart)?,
            )),
            None => None,
        };
        Ok(Self {
            sift_server: find(sift_dir, "sift-server", sift)?,
            sift_client: find(sift_dir, "sift-client", sift)?,
            sift_link: find(sift_dir, "sift-link", sift)?,
            quiche_server: find(quiche_dir, "quiche-server", quiche)?,
            quiche_client: find(quiche_dir, "quiche-client", quiche)?,
            quinn_server: find(quiche_dir, "quinn-server", quiche)?,
            quinn_client: find(quiche_dir, "quinn-client", quiche)?,
            quiche_024,
            quic_go: Some((
                quiche_dir.join("quic-go-server"),
                quiche_dir.join("quic-go-client"),
            ))
            .filter(|(server, client)| server.is_file() && client.is_file()),
        })
    }

    /// The server and client of a peer stack (`None` for sift, and for
    /// quiche 0.24 or quic-go when it was not built).
    pub fn peer(&self, stack: Stack) -> Option<(&Path, &Path)> {
        match stack {
            Stack::Sift => None,
            Stack::Quiche => Some((&self.quiche_server, &self.quiche_client)),
            Stack::Quinn => Some((&self.quinn_server, &self.quinn_client)),
            Stack::Quiche024 => self
                .quiche_024
                .as_ref()
                .map(|(server, client)| (server.as_path(), client.as_path())),
            Stack::QuicGo => self
                .quic_go
                .as_ref()
                .map(|(server, client)| (server.as_path(), client.as_path())),
        }
    }

    /// The controllers `sift-client --help` lists for `--cc`, so that a
    /// controller added to sift joins the comparison without a change here.
    pub fn sift_controllers(&self) -> anyhow::Result<Vec<String>> {
        let output = Command::new(&self.sift_client)
            .arg("--help")
            .output()
            .with_context(|| format!("cannot run {}", self.sift_client.display()))?;
        let help = String::from_utf8_lossy(&output.stdout);
        controllers_from_help(&help).with_context(|| {
            format!(
                "cannot find the --cc list in `{} --help`; name the controllers with --sift-cc",
                self.sift_client.display()
            )
        })
    }

    /// Whether `sift-server` starts without `--insecure-null-crypto`: the
    /// protection sift rows use, and why when it is Null.
    pub fn sift_protection(&self, scratch: &Path) -> anyhow::Result<(Protection, String)> {
        // The server refuses a root that holds its state folder ($HOME's).
        let root = scratch.join("root");
        std::fs::create_dir_all(&root)
            .with_context(|| format!("cannot create {}", root.display()))?;
        let mut command = Command::new(&self.sift_server);
        command
            .args(["--listen", "127.0.0.1:0", "--root"])
            .arg(&root)
            .env("HOME", scratch)
            .env_remove("XDG_DATA_HOME");
        let mut server = Running::spawn("sift-server", command)?;
        match server.listening_address() {
            Ok(_) => {
                server.stop()?;
                Ok((
                    Protection::Default,
                    "the sift binaries' default protection".to_string(),
                ))
            }
            Err(_) => Ok((
                Protection::Null,
                format!(
                    "Null: sift-server does not start without --insecure-null-crypto yet ({})",
                    server.last_words()
                ),
            )),
        }
    }
}

/// The names the `--cc` option's help line lists: from its first `:` to
/// the end of that sentence.
pub fn controllers_from_help(help: &str) -> Option<Vec<String>> {
    let mut lines = help.lines().skip_while(|line| !line.contains("--cc <"));
    lines.next()?;
    let description = lines.find(|line| line.contains("Congestion controller"))?;
    let (_, after) = description.split_once(':')?;
    let list = after.split(". ").next()?.trim_end_matches('.');
    let names: Vec<String> = list
        .split(',')
        .map(|name| name.trim().to_string())
        .filter(|name| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .collect();
    (!names.is_empty()).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controllers_are_read_from_sift_clients_help() {
        let help = "Options:\n      --cc <NAME>\n          Congestion controller for data this client sends: reno, cubic, vegas, veno, veno-enhanced, westwood\n          \n          [default: cubic]\n";
        assert_eq!(
            controllers_from_help(help).unwrap(),
            [
                "reno",
                "cubic",
                "vegas",
                "veno",
                "veno-enhanced",
                "westwood"
            ]
        );
        // Today's: the list is one sentence of several.
        let help = "Options:\n      --cc <NAME>\n          Congestion controller: reno, cubic, westwood-a, bbr. This client sends with it (default cubic); `get` also asks the server to send the file with it (default: the server's own), and fails if the server does not offer it\n";
        assert_eq!(
            controllers_from_help(help).unwrap(),
            ["reno", "cubic", "westwood-a", "bbr"]
        );
        assert_eq!(controllers_from_help("no options here"), None);
    }
}
