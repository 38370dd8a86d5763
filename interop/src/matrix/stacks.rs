//! The implementations in the matrix (sift, quiche, quinn, quic-go): where their
//! binaries are, how each is started as server and as client for a case,
//! and which cases each cannot run, with the reason (the runner's exit
//! code 127).

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::bail;

use super::cases::Case;

/// One implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stack {
    /// sift's `sift-server` / `sift-client` (hq-interop beside sift/1).
    Sift,
    /// `quiche-hq` (quiche 0.28).
    Quiche,
    /// `quinn-hq` (quinn 0.11).
    Quinn,
    /// `quic-go-hq` (quic-go v0.65.0, the Go program in interop/quic-go/).
    QuicGo,
}

/// Every implementation, in the table's order.
pub const ALL: [Stack; 4] = [Stack::Sift, Stack::Quiche, Stack::Quinn, Stack::QuicGo];

/// `sift-client --key-update-every N` in the keyupdate case: a client
/// sends only a few dozen packets (requests, ACKs) during a 3 MB download
/// on loopback, so this updates keys at least once.
pub const SIFT_KEY_UPDATE_EVERY: u64 = 16;

impl Stack {
    /// Its name in tables and options.
    pub fn name(self) -> &'static str {
        match self {
            Stack::Sift => "sift",
            Stack::Quiche => "quiche",
            Stack::Quinn => "quinn",
            Stack::QuicGo => "quic-go",
        }
    }

    /// Parses a name.
    pub fn parse(text: &str) -> Option<Stack> {
        ALL.into_iter().find(|s| s.name() == text)
    }

    /// Why this stack cannot be the client of `case`, if it cannot.
    pub fn client_unsupported(self, case: Case) -> Option<&'static str> {
        match (self, case) {
            (Stack::Quiche, Case::ConnectionMigration) => Some(
                "quiche 0.28 does not act on a preferred_address (transport_params.rs reads it; lib.rs never moves there)",
            ),
            (Stack::Quinn, Case::ConnectionMigration) => Some(
                "quinn 0.11 does not move to a preferred address (quinn-proto keeps its connection ID as a spare, connection/mod.rs set_peer_params)",
            ),
            (Stack::QuicGo, Case::ConnectionMigration) => Some(
                "quic-go v0.65.0 does not move to a preferred address (connection.go keeps its connection ID, AddFromPreferredAddress)",
            ),
            (Stack::Quiche | Stack::Quinn, Case::V2) => Some(self.no_v2()),
            (Stack::Quiche, Case::ChaCha20) => Some(
                "quiche 0.28 has no way to restrict the TLS 1.3 cipher suites BoringSSL offers",
            ),
            (Stack::Quiche, Case::KeyUpdate) => {
                Some("quiche 0.28 cannot initiate a key update (src/lib.rs only answers a peer's)")
            }
            _ => None,
        }
    }

    /// Why this stack cannot be the server of `case`, if it cannot.
    pub fn server_unsupported(self, case: Case) -> Option<&'static str> {
        match (self, case) {
            (Stack::Quiche, Case::ConnectionMigration) => {
                Some("quiche 0.28 cannot offer a preferred address (no Config setting)")
            }
            (Stack::Quinn, Case::ConnectionMigration) => Some(
                "quinn-hq offers no preferred address: quinn 0.11 can (ServerConfig::preferred_address_v4) but serves it only on a socket bound to the wildcard, which quinn-hq does not take",
            ),
            (Stack::QuicGo, Case::ConnectionMigration) => {
                Some("quic-go v0.65.0 cannot offer a preferred address (no Config field)")
            }
            (Stack::Quiche | Stack::Quinn, Case::V2) => Some(self.no_v2()),
            _ => None,
        }
    }

    /// Why this stack takes no part in ECN, if it does not.
    pub fn no_ecn(self) -> Option<&'static str> {
        match self {
            Stack::Quiche => Some(
                "quiche 0.28 has no ECN: it sends Not-ECT, never reads the field, and its ACKs carry no ECN counts (src/lib.rs: `ecn_counts: None, // sending ECN is not supported at this time`)",
            ),
            _ => None,
        }
    }

    fn no_v2(self) -> &'static str {
        match self {
            Stack::Sift | Stack::QuicGo => "",
            Stack::Quiche => {
                "quiche 0.28 speaks QUIC v1 only (quiche::version_is_supported matches PROTOCOL_VERSION_V1 alone)"
            }
            Stack::Quinn => {
                "quinn 0.11 speaks QUIC v1 only (quinn-proto DEFAULT_SUPPORTED_VERSIONS: v1 and drafts)"
            }
        }
    }
}

impl serde::Serialize for Stack {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a comma-separated list of implementations.
pub fn parse_list(text: &str) -> anyhow::Result<Vec<Stack>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            Stack::parse(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "no implementation {name:?} (one of {})",
                    ALL.map(Stack::name).join(", ")
                )
            })
        })
        .collect()
}

/// The HTTP/3 case's programs, one per stack that has one: sift's
/// examples on the `h3` crate over sift (`sift-h3-server`,
/// `sift-h3-client`), h3-quinn's (`quinn-h3-server`, `quinn-h3-client`),
/// quic-go's `http3` (`quic-go-h3-server`, `quic-go-h3-client`) and
/// `quiche::h3`'s client (`quiche-h3-client`; no quiche HTTP/3 server is
/// built). Servers are started like the hq peers (`--listen ADDR --root
/// DIR --cert F --key F`, printing `listening on ADDR`), clients with
/// `URL... --output-dir DIR` and no certificate check, as the runner's.
#[derive(Clone, Debug, Default)]
pub struct Http3 {
    /// sift's example server.
    pub server: Option<PathBuf>,
    /// sift's example client.
    pub client: Option<PathBuf>,
    /// h3-quinn's server.
    pub quinn_server: Option<PathBuf>,
    /// h3-quinn's client.
    pub quinn_client: Option<PathBuf>,
    /// quiche::h3's client.
    pub quiche_client: Option<PathBuf>,
    /// quic-go's http3 server.
    pub quic_go_server: Option<PathBuf>,
    /// quic-go's http3 client.
    pub quic_go_client: Option<PathBuf>,
}

impl Http3 {
    /// The programs found in `dir` (the interop crate's build), sift's
    /// taken from `server`/`client` when given.
    pub fn locate(dir: &Path, server: Option<PathBuf>, client: Option<PathBuf>) -> Self {
        let found = |name: &str| Some(dir.join(name)).filter(|p| p.is_file());
        Self {
            server: server.or_else(|| found("sift-h3-server")),
            client: client.or_else(|| found("sift-h3-client")),
            quinn_server: found("quinn-h3-server"),
            quinn_client: found("quinn-h3-client"),
            quiche_client: found("quiche-h3-client"),
            quic_go_server: found("quic-go-h3-server"),
            quic_go_client: found("quic-go-h3-client"),
        }
    }

    fn server_of(&self, stack: Stack) -> Option<&Path> {
        match stack {
            Stack::Sift => self.server.as_deref(),
            Stack::Quinn => self.quinn_server.as_deref(),
            Stack::QuicGo => self.quic_go_server.as_deref(),
            Stack::Quiche => None,
        }
    }

    fn client_of(&self, stack: Stack) -> Option<&Path> {
        match stack {
            Stack::Sift => self.client.as_deref(),
            Stack::Quinn => self.quinn_client.as_deref(),
            Stack::Quiche => self.quiche_client.as_deref(),
            Stack::QuicGo => self.quic_go_client.as_deref(),
        }
    }
}

/// Why the http3 case cannot run for this pair, if it cannot.
pub fn http3_unsupported(http3: &Http3, client: Stack, server: Stack) -> Option<String> {
    if server == Stack::Quiche {
        return Some("server: no quiche HTTP/3 server is built (quiche::h3 client only)".into());
    }
    if http3.server_of(server).is_none() {
        return Some(format!(
            "server: {}'s HTTP/3 example is not built",
            server.name()
        ));
    }
    if http3.client_of(client).is_none() {
        return Some(format!(
            "client: {}'s HTTP/3 example is not built",
            client.name()
        ));
    }
    None
}

/// Why the ecn case cannot pass between `client` and `server`: a side
/// that takes no part in ECN.
pub fn ecn_limit(client: Stack, server: Stack) -> Option<String> {
    client
        .no_ecn()
        .map(|reason| format!("client: {reason}"))
        .or_else(|| server.no_ecn().map(|reason| format!("server: {reason}")))
}

/// Why `case` cannot run between `client` and `server`, if it cannot.
/// The ecn case still runs against a peer without ECN when sift is the
/// other side: sift's side must fail safe there (the cell then says
/// unsupported only if it did).
pub fn unsupported(http3: &Http3, case: Case, client: Stack, server: Stack) -> Option<String> {
    if case == Case::Ecn && client != Stack::Sift && server != Stack::Sift {
        if let Some(reason) = ecn_limit(client, server) {
            return Some(reason);
        }
    }
    if case == Case::SiftUpgrade && (client != Stack::Sift || server != Stack::Sift) {
        return Some("sift/1 is sift's own version: sift ↔ sift only".into());
    }
    if case == Case::Http3 {
        return http3_unsupported(http3, client, server);
    }
    if let Some(reason) = client.client_unsupported(case) {
        return Some(format!("client: {reason}"));
    }
    server
        .server_unsupported(case)
        .map(|reason| format!("server: {reason}"))
}

/// Where every binary is.
#[derive(Clone, Debug)]
pub struct Binaries {
    /// `sift-server`.
    pub sift_server: PathBuf,
    /// `sift-client`.
    pub sift_client: PathBuf,
    /// `sift-link`.
    pub sift_link: PathBuf,
    /// Whether this `sift-link` writes `--stats FILE`.
    pub link_stats: bool,
    /// `quiche-hq`.
    pub quiche_hq: PathBuf,
    /// `quinn-hq`.
    pub quinn_hq: PathBuf,
    /// `quic-go-hq`, when built (Go may be missing: [`QUIC_GO_BUILD`]).
    pub quic_go_hq: Option<PathBuf>,
    /// The http3 case's programs.
    pub http3: Http3,
}

impl Binaries {
    /// sift's binaries from `sift_dir`, the peers' from `peer_dir`; each
    /// must exist.
    pub fn locate(sift_dir: &Path, peer_dir: &Path, http3: Http3) -> anyhow::Result<Self> {
        let find = |dir: &Path, name: &str, build: &str| -> anyhow::Result<PathBuf> {
            let path = dir.join(name);
            if path.is_file() {
                Ok(path)
            } else {
                bail!("{} not found (build it: {build})", path.display())
            }
        };
        let sift = "cargo build --release -p sift-bin";
        let peers = "cargo build --release --manifest-path interop/Cargo.toml";
        let sift_link = find(sift_dir, "sift-link", sift)?;
        let link_stats = Command::new(&sift_link)
            .arg("--help")
            .output()
            .map(|out| String::from_utf8_lossy(&out.stdout).contains("--stats"))
            .unwrap_or(false);
        Ok(Self {
            sift_server: find(sift_dir, "sift-server", sift)?,
            sift_client: find(sift_dir, "sift-client", sift)?,
            sift_link,
            link_stats,
            quiche_hq: find(peer_dir, "quiche-hq", peers)?,
            quinn_hq: find(peer_dir, "quinn-hq", peers)?,
            quic_go_hq: Some(peer_dir.join("quic-go-hq")).filter(|p| p.is_file()),
            http3,
        })
    }

    /// Whether `stack`'s programs are here (quic-go's need Go).
    pub fn has(&self, stack: Stack) -> bool {
        stack != Stack::QuicGo || self.quic_go_hq.is_some()
    }

    fn peer(&self, stack: Stack) -> &Path {
        match stack {
            Stack::Quiche => &self.quiche_hq,
            Stack::QuicGo => self
                .quic_go_hq
                .as_deref()
                .unwrap_or(Path::new("quic-go-hq")),
            _ => &self.quinn_hq,
        }
    }
}

/// How the quic-go peer is built (into the peers' folder), for messages.
pub const QUIC_GO_BUILD: &str = "interop/quic-go/build.sh DIR (needs Go 1.26)";

/// What a server is started with.
#[derive(Clone, Debug)]
pub struct ServerSetup<'a> {
    /// Address to listen on (port 0).
    pub listen: SocketAddr,
    /// The files.
    pub root: &'a Path,
    /// Certificate chain and key, when the case brings its own.
    pub cert: Option<(&'a Path, &'a Path)>,
    /// A private directory (sift's state).
    pub state: &'a Path,
    /// The preferred address to offer and serve on (connectionmigration).
    pub preferred: Option<SocketAddr>,
}

/// The server's command for `case`.
pub fn server_command(
    binaries: &Binaries,
    stack: Stack,
    case: Case,
    setup: &ServerSetup<'_>,
) -> Command {
    let mut command = if case == Case::Http3 {
        Command::new(
            binaries
                .http3
                .server_of(stack)
                .unwrap_or(Path::new("h3-server")),
        )
    } else {
        match stack {
            Stack::Sift => {
                let mut c = Command::new(&binaries.sift_server);
                c.arg("--state-dir")
                    .arg(setup.state)
                    .args(["--workers", "1"]);
                if case == Case::V2 {
                    // v2 first: a v1 client that offers v2 is moved there
                    // (RFC 9368), a v2 client is served in it.
                    c.args(["--versions", "v2,v1"]);
                }
                c
            }
            peer => {
                let mut c = Command::new(binaries.peer(peer));
                c.arg("server");
                c
            }
        }
    };
    command
        .arg("--listen")
        .arg(setup.listen.to_string())
        .arg("--root")
        .arg(setup.root);
    if let Some((cert, key)) = setup.cert {
        command.arg("--cert").arg(cert).arg("--key").arg(key);
    }
    if case == Case::Retry {
        command.arg("--retry");
    }
    if let Some(preferred) = setup.preferred {
        command
            .arg("--preferred-address")
            .arg(preferred.to_string());
    }
    command
}

/// The client's command for `case`, fetching `urls` into `downloads`.
pub fn client_command(
    binaries: &Binaries,
    stack: Stack,
    case: Case,
    urls: &[String],
    downloads: &Path,
    state: &Path,
) -> Command {
    if case == Case::Http3 {
        let mut c = Command::new(
            binaries
                .http3
                .client_of(stack)
                .unwrap_or(Path::new("h3-client")),
        );
        // The matrix's certificates are its own CA's: take them as they
        // come, as the runner's clients do.
        c.args(urls)
            .arg("--output-dir")
            .arg(downloads)
            .arg("--insecure");
        if stack == Stack::Sift {
            // As in the hq cases: QUIC v1 on the wire (sift/1 is its own case).
            c.args(["--versions", "v1"]);
        }
        return c;
    }
    match stack {
        Stack::Sift => {
            let mut c = Command::new(&binaries.sift_client);
            c.arg("get")
                .args(urls)
                .arg("--output-dir")
                .arg(downloads)
                .arg("--json")
                .arg("--state-dir")
                .arg(state);
            match case {
                Case::SiftUpgrade => {}
                // rustls cannot follow a server's upgrade from v1 to v2
                // (a client's TLS session is made for one version): the
                // client starts in v2.
                Case::V2 => {
                    c.args(["--versions", "v2,v1"]);
                }
                _ => {
                    c.args(["--versions", "v1"]);
                }
            }
            match case {
                Case::ChaCha20 => {
                    c.args(["--ciphers", "chacha20"]);
                }
                Case::KeyUpdate => {
                    c.arg("--key-update-every")
                        .arg(SIFT_KEY_UPDATE_EVERY.to_string());
                }
                Case::ActiveMigration => {
                    c.arg("--migrate");
                }
                // The first file over one connection, the rest over a
                // second that resumes it; in 0-RTT only for zerortt.
                Case::Resumption => {
                    c.args(["--reconnect", "--no-0rtt"]);
                }
                Case::ZeroRtt => {
                    c.arg("--reconnect");
                }
                _ => {}
            }
            c
        }
        peer => {
            let mut c = Command::new(binaries.peer(peer));
            c.arg("client")
                .args(urls)
                .arg("--output-dir")
                .arg(downloads)
                .args(["--insecure", "--json"]);
            let flag = match case {
                Case::ChaCha20 => Some("--chacha20"),
                Case::KeyUpdate => Some("--key-update"),
                Case::Resumption => Some("--resume"),
                Case::ZeroRtt => Some("--zerortt"),
                Case::ActiveMigration => Some("--migrate"),
                _ => None,
            };
            c.args(flag);
            if case == Case::V2 && peer == Stack::QuicGo {
                // quic-go has no compatible version negotiation (RFC
                // 9368: it neither sends nor reads version_information):
                // its client starts in v2.
                c.args(["--versions", "v2"]);
            }
            c
        }
    }
}

/// The URL of `name` behind `address` for `case` (`sift://` for the
/// sift/1 upgrade, `https://` for hq-interop).
pub fn url(case: Case, address: SocketAddr, name: &str) -> String {
    let scheme = if case == Case::SiftUpgrade {
        "sift"
    } else {
        "https"
    };
    format!("{scheme}://{address}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sift_upgrade_runs_between_sift_ends_only() {
        let none = Http3::default();
        assert_eq!(
            unsupported(&none, Case::SiftUpgrade, Stack::Sift, Stack::Sift),
            None
        );
        assert!(unsupported(&none, Case::SiftUpgrade, Stack::Sift, Stack::Quinn).is_some());
    }

    #[test]
    fn a_case_one_side_cannot_run_is_unsupported_with_that_sides_reason() {
        let none = Http3::default();
        let reason = unsupported(&none, Case::KeyUpdate, Stack::Quiche, Stack::Quinn).unwrap();
        assert!(reason.starts_with("client: quiche"), "{reason}");
        assert_eq!(
            unsupported(&none, Case::KeyUpdate, Stack::Quinn, Stack::Quiche),
            None
        );
        assert_eq!(
            unsupported(&none, Case::ZeroRtt, Stack::Quinn, Stack::Sift),
            None
        );
    }

    #[test]
    fn http3_runs_where_both_sides_have_a_program() {
        let none = Http3::default();
        assert!(unsupported(&none, Case::Http3, Stack::Sift, Stack::Sift)
            .unwrap()
            .contains("sift's HTTP/3 example is not built"));
        let wired = Http3 {
            server: Some("s".into()),
            client: Some("c".into()),
            quinn_server: Some("qs".into()),
            quinn_client: None,
            quiche_client: Some("qc".into()),
            quic_go_server: Some("gs".into()),
            quic_go_client: None,
        };
        assert_eq!(
            unsupported(&wired, Case::Http3, Stack::Sift, Stack::Sift),
            None
        );
        assert_eq!(
            unsupported(&wired, Case::Http3, Stack::Quiche, Stack::Quinn),
            None
        );
        assert!(unsupported(&wired, Case::Http3, Stack::Sift, Stack::Quiche)
            .unwrap()
            .contains("no quiche HTTP/3 server"));
        assert!(unsupported(&wired, Case::Http3, Stack::Quinn, Stack::Sift)
            .unwrap()
            .starts_with("client: quinn"));
        assert_eq!(
            unsupported(&wired, Case::Http3, Stack::Sift, Stack::QuicGo),
            None
        );
        assert!(unsupported(&wired, Case::Http3, Stack::QuicGo, Stack::Sift)
            .unwrap()
            .starts_with("client: quic-go"));
    }

    #[test]
    fn quic_go_runs_every_case_but_v2_and_sifts_own() {
        let none = Http3::default();
        for case in crate::matrix::cases::ALL {
            let expected = matches!(
                case,
                Case::SiftUpgrade | Case::Http3 | Case::ConnectionMigration
            );
            assert_eq!(
                unsupported(&none, case, Stack::QuicGo, Stack::QuicGo).is_some(),
                expected,
                "{case}"
            );
        }
        assert_eq!(Stack::QuicGo.client_unsupported(Case::V2), None);
        assert_eq!(Stack::parse("quic-go"), Some(Stack::QuicGo));
    }

    #[test]
    fn ecn_against_quiche_runs_only_with_sift_on_the_other_side() {
        let none = Http3::default();
        // sift's side must be seen to fail safe: the cell runs.
        assert_eq!(
            unsupported(&none, Case::Ecn, Stack::Sift, Stack::Quiche),
            None
        );
        assert!(ecn_limit(Stack::Sift, Stack::Quiche)
            .unwrap()
            .starts_with("server: quiche"));
        assert!(unsupported(&none, Case::Ecn, Stack::Quinn, Stack::Quiche).is_some());
        assert_eq!(ecn_limit(Stack::Quinn, Stack::QuicGo), None);
    }

    #[test]
    fn urls_bracket_ipv6_and_pick_the_scheme_by_case() {
        let v6: SocketAddr = "[::1]:4433".parse().unwrap();
        assert_eq!(url(Case::Ipv6, v6, "a"), "https://[::1]:4433/a");
        assert!(url(Case::SiftUpgrade, v6, "a").starts_with("sift://"));
    }
}
