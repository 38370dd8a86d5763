//! The URLs peers take: `quic://HOST[:PORT]/PATH` for the file protocol
//! (port 4433 unless given, as sift's), `https://HOST[:PORT]/PATH` for
//! hq-interop and HTTP/3 (443). The URLs of one call name one server: one
//! connection fetches them all.

use std::net::{SocketAddr, ToSocketAddrs};

use anyhow::{bail, Context};

use super::cert::LOCALHOST;

/// A URL scheme and the port it implies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheme {
    /// What a URL of it starts with, `://` included.
    pub prefix: &'static str,
    /// The port when a URL names none.
    pub default_port: u16,
}

/// The file protocol's URLs (`quic://`), on sift's default port.
pub const QUIC: Scheme = Scheme {
    prefix: "quic://",
    default_port: 4433,
};

/// hq-interop's and HTTP/3's URLs (`https://`), on HTTPS's port.
pub const HTTPS: Scheme = Scheme {
    prefix: "https://",
    default_port: 443,
};

/// One URL, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// The host as written (a name or an address).
    pub host: String,
    /// `HOST[:PORT]` as written (an HTTP request's `:authority`).
    pub authority: String,
    /// Where the host resolved to.
    pub address: SocketAddr,
    /// The path, without its leading `/`.
    pub path: String,
}

impl Url {
    /// Parses and resolves `SCHEME://HOST[:PORT]/PATH`: `[v6]:port`,
    /// `[v6]`, `host:port` or `host`, and a path that is not empty.
    pub fn parse(url: &str, scheme: Scheme) -> anyhow::Result<Self> {
        let prefix = scheme.prefix;
        let rest = url
            .strip_prefix(prefix)
            .with_context(|| format!("URL {url:?} does not start with {prefix}"))?;
        let (authority, path) = rest
            .split_once('/')
            .filter(|(_, path)| !path.is_empty())
            .with_context(|| format!("URL {url:?} names no file ({prefix}HOST:PORT/PATH)"))?;
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
            None => scheme.default_port,
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
        Ok(Self {
            host: host.to_string(),
            authority: authority.to_string(),
            address,
            path: path.to_string(),
        })
    }

    /// The name to send in SNI: the host, or [`LOCALHOST`] for an address
    /// (SNI carries no addresses).
    pub fn server_name(&self) -> String {
        if self.host.parse::<std::net::IpAddr>().is_ok() {
            LOCALHOST.to_string()
        } else {
            self.host.clone()
        }
    }
}

/// Parses every URL and checks that they name one server.
pub fn parse_all(urls: &[String], scheme: Scheme) -> anyhow::Result<Vec<Url>> {
    let parsed = urls
        .iter()
        .map(|url| Url::parse(url, scheme))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(first) = parsed.first() else {
        bail!("no URL given");
    };
    if let Some(other) = parsed.iter().find(|u| u.address != first.address) {
        bail!(
            "all URLs must name one server (one connection fetches them): {} and {} differ",
            first.authority,
            other.authority
        );
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_host_address_path_and_a_name_for_sni() {
        let url = Url::parse("quic://127.0.0.1:5000/dir/f.bin", QUIC).unwrap();
        assert_eq!(url.host, "127.0.0.1");
        assert_eq!(url.authority, "127.0.0.1:5000");
        assert_eq!(url.address, "127.0.0.1:5000".parse().unwrap());
        assert_eq!(url.path, "dir/f.bin");
        assert_eq!(url.server_name(), LOCALHOST);
        let v6 = Url::parse("quic://[::1]/f", QUIC).unwrap();
        assert_eq!(v6.address, "[::1]:4433".parse().unwrap());
        let v6 = Url::parse("https://[::1]/f", HTTPS).unwrap();
        assert_eq!(v6.address, "[::1]:443".parse().unwrap());
    }

    #[test]
    fn urls_without_scheme_file_or_valid_port_are_refused() {
        for bad in [
            "sift://h/f",
            "https://127.0.0.1:5000/f",
            "quic://127.0.0.1:5000",
            "quic://127.0.0.1:5000/",
            "quic://127.0.0.1:0/f",
            "quic://127.0.0.1:x/f",
            "quic://[::1/f",
        ] {
            assert!(Url::parse(bad, QUIC).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn urls_of_one_call_must_name_one_server() {
        let urls = |list: &[&str]| list.iter().map(|u| u.to_string()).collect::<Vec<_>>();
        let two = urls(&["https://127.0.0.1:1/a", "https://127.0.0.1:2/b"]);
        assert!(parse_all(&two, HTTPS).is_err());
        let one = urls(&["https://127.0.0.1:1/a", "https://127.0.0.1:1/dir/b"]);
        let parsed = parse_all(&one, HTTPS).unwrap();
        assert_eq!(parsed[1].path, "dir/b");
        assert!(parse_all(&[], HTTPS).is_err());
    }
}
