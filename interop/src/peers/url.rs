//! `https://HOST[:PORT]/PATH` URLs (all of one call name the same server)
//! and the file each fetched path becomes under the output directory.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context};

/// The URL scheme HTTP/3 clients take.
pub const SCHEME: &str = "https://";

/// The port when a URL names none (HTTPS's).
pub const DEFAULT_PORT: u16 = 443;

/// The server every URL of a call names, and the paths asked for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// The host as written (a name or an address), for SNI and checks.
    pub host: String,
    /// `HOST[:PORT]` as written, the requests' `:authority`.
    pub authority: String,
    /// Where the host resolved to.
    pub address: SocketAddr,
    /// The paths, each starting with `/`, in the order given.
    pub paths: Vec<String>,
}

/// Parses `urls`, which must all name one server.
pub fn parse(urls: &[String]) -> anyhow::Result<Targets> {
    let mut targets: Option<Targets> = None;
    for url in urls {
        let rest = url
            .strip_prefix(SCHEME)
            .with_context(|| format!("URL {url:?} does not start with {SCHEME}"))?;
        let (authority, path) = rest
            .split_once('/')
            .with_context(|| format!("URL {url:?} names no file ({SCHEME}HOST:PORT/PATH)"))?;
        if path.is_empty() {
            bail!("URL {url:?} names no file ({SCHEME}HOST:PORT/PATH)");
        }
        let path = format!("/{path}");
        match targets.as_mut() {
            Some(targets) if targets.authority == authority => targets.paths.push(path),
            Some(targets) => bail!(
                "URL {url:?} names {authority}, another server than {}: one call fetches from one server",
                targets.authority
            ),
            None => {
                let (host, address) = resolve(url, authority)?;
                targets = Some(Targets {
                    host,
                    authority: authority.to_string(),
                    address,
                    paths: vec![path],
                });
            }
        }
    }
    targets.context("no URL given")
}

/// `[v6]:port`, `[v6]`, `host:port` or `host` → (host, address).
fn resolve(url: &str, authority: &str) -> anyhow::Result<(String, SocketAddr)> {
    let (host, port) = match authority.strip_prefix('[') {
        Some(bracketed) => {
            let (host, rest) = bracketed
                .split_once(']')
                .with_context(|| format!("URL {url:?}: unclosed [ in the address"))?;
            (host, rest.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse()
            .ok()
            .filter(|&p: &u16| p != 0)
            .with_context(|| {
                format!("URL {url:?}: port {port:?} is not a number from 1 to 65535")
            })?,
    };
    let address = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .with_context(|| format!("{host} has no address"))?;
    Ok((host.to_string(), address))
}

/// Where the file fetched for `path` goes: the same relative path under
/// `dir` (as the interop runner's `/downloads`), refusing anything that
/// would leave `dir`. A query or fragment is not part of the name.
pub fn output_path(dir: &Path, path: &str) -> anyhow::Result<PathBuf> {
    let name = path.split(['?', '#']).next().unwrap_or_default();
    let relative = Path::new(name.trim_start_matches('/'));
    let confined = relative
        .components()
        .all(|component| matches!(component, Component::Normal(_)));
    if !confined || relative.as_os_str().is_empty() {
        bail!("{path:?} does not name a file under the output directory");
    }
    Ok(dir.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(list: &[&str]) -> Vec<String> {
        list.iter().map(|url| url.to_string()).collect()
    }

    #[test]
    fn urls_of_one_server_give_its_address_and_every_path() {
        let targets = parse(&urls(&[
            "https://127.0.0.1:4433/a.bin",
            "https://127.0.0.1:4433/dir/b.bin",
        ]))
        .unwrap();
        assert_eq!(targets.address, "127.0.0.1:4433".parse().unwrap());
        assert_eq!(targets.authority, "127.0.0.1:4433");
        assert_eq!(targets.host, "127.0.0.1");
        assert_eq!(targets.paths, ["/a.bin", "/dir/b.bin"]);
        let v6 = parse(&urls(&["https://[::1]/f"])).unwrap();
        assert_eq!(v6.address, "[::1]:443".parse().unwrap());
    }

    #[test]
    fn urls_of_two_servers_or_without_scheme_file_or_port_are_refused() {
        assert!(parse(&urls(&["https://127.0.0.1:1/a", "https://127.0.0.1:2/b"])).is_err());
        for bad in [
            "quic://127.0.0.1:5000/f",
            "https://127.0.0.1:5000",
            "https://127.0.0.1:5000/",
            "https://127.0.0.1:0/f",
        ] {
            assert!(parse(&urls(&[bad])).is_err(), "{bad:?} was accepted");
        }
        assert!(parse(&[]).is_err());
    }

    #[test]
    fn output_paths_stay_under_the_directory() {
        let dir = Path::new("/downloads");
        assert_eq!(
            output_path(dir, "/sub/f.bin?x=1").unwrap(),
            Path::new("/downloads/sub/f.bin")
        );
        for bad in ["/../etc/passwd", "/a/../../b", "/", "/./f"] {
            assert!(output_path(dir, bad).is_err(), "{bad:?} was accepted");
        }
    }
}
