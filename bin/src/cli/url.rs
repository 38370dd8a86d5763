//! `sift://HOST[:PORT]/PATH` URLs (sift's file protocol), and
//! `https://HOST[:PORT]/PATH` ones for any QUIC server speaking hq-interop
//! (HTTP/0.9; the interop runner's file protocol).

use std::net::{SocketAddr, ToSocketAddrs};

use thiserror::Error;

/// The port a URL without one means.
pub const DEFAULT_PORT: u16 = 4433;

/// The application protocol a URL's scheme names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheme {
    /// `sift://`: sift's file protocol (ALPN `sift/1`).
    #[default]
    Sift,
    /// `https://`: HTTP/0.9 over QUIC (ALPN `hq-interop`), downloads only.
    Https,
}

impl Scheme {
    /// `sift` or `https`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Sift => "sift",
            Scheme::Https => "https",
        }
    }
}

/// A parsed `sift://` or `https://` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiftUrl {
    pub scheme: Scheme,
    /// Host name or address (IPv6 without its brackets).
    pub host: String,
    pub port: u16,
    /// The path on the server, without the leading `/` (may be empty),
    /// its `%XX` escapes decoded: `a%20b.txt` names `a b.txt`.
    pub path: String,
}

/// Why a URL was not understood.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum UrlError {
    #[error("bad URL {url:?}: it must start with sift:// (e.g. sift://example.org:4433/file.bin) or https:// (an hq-interop server)")]
    Scheme { url: String },
    #[error("bad URL {url:?}: no host")]
    NoHost { url: String },
    #[error("bad URL {url:?}: port {port:?} is not a number from 1 to 65535")]
    Port { url: String, port: String },
    #[error("bad URL {url:?}: unclosed '[' in an IPv6 host")]
    Ipv6 { url: String },
    #[error("bad URL {url:?}: the path has a '%' not followed by two hex digits, or is not UTF-8 once decoded (a '%' itself is %25)")]
    Escape { url: String },
    #[error("cannot resolve {host}:{port}: {reason}")]
    Resolve {
        host: String,
        port: u16,
        reason: String,
    },
}

impl SiftUrl {
    /// Parses `sift://HOST[:PORT][/PATH]` or `https://…` (default port
    /// 4433 for both, the port QUIC test servers use).
    pub fn parse(url: &str) -> Result<Self, UrlError> {
        let (scheme, rest) = if let Some(rest) = url.strip_prefix("sift://") {
            (Scheme::Sift, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (Scheme::Https, rest)
        } else {
            return Err(UrlError::Scheme {
                url: url.to_string(),
            });
        };
        let (authority, path) = match rest.find('/') {
            Some(slash) => (&rest[..slash], &rest[slash + 1..]),
            None => (rest, ""),
        };
        let (host, port_text) = if let Some(bracketed) = authority.strip_prefix('[') {
            let close = bracketed.find(']').ok_or_else(|| UrlError::Ipv6 {
                url: url.to_string(),
            })?;
            let after = &bracketed[close + 1..];
            let port = match after.strip_prefix(':') {
                Some(port) => Some(port),
                None if after.is_empty() => None,
                None => {
                    return Err(UrlError::Port {
                        url: url.to_string(),
                        port: after.to_string(),
                    })
                }
            };
            (&bracketed[..close], port)
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(UrlError::NoHost {
                url: url.to_string(),
            });
        }
        let port = match port_text {
            None => DEFAULT_PORT,
            Some(text) => match text.parse::<u16>() {
                Ok(port) if port != 0 => port,
                _ => {
                    return Err(UrlError::Port {
                        url: url.to_string(),
                        port: text.to_string(),
                    })
                }
            },
        };
        let path = crate::transfer::hq::unescape(path.as_bytes())
            .and_then(|decoded| String::from_utf8(decoded).ok())
            .ok_or_else(|| UrlError::Escape {
                url: url.to_string(),
            })?;
        Ok(Self {
            scheme,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// The URL written back, for messages.
    pub fn display(&self) -> String {
        format!(
            "{}://{}/{}",
            self.scheme.name(),
            self.authority(),
            self.path
        )
    }

    /// `HOST:PORT` for messages (IPv6 hosts in brackets).
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The first address the host resolves to.
    pub fn resolve(&self) -> Result<SocketAddr, UrlError> {
        let resolve_error = |reason: String| UrlError::Resolve {
            host: self.host.clone(),
            port: self.port,
            reason,
        };
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| resolve_error(e.to_string()))?
            .next()
            .ok_or_else(|| resolve_error("no address".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(host: &str, port: u16, path: &str) -> SiftUrl {
        SiftUrl {
            scheme: Scheme::Sift,
            host: host.into(),
            port,
            path: path.into(),
        }
    }

    #[test]
    fn host_port_and_path_are_split() {
        assert_eq!(
            SiftUrl::parse("sift://example.org:5000/dir/f.bin").unwrap(),
            url("example.org", 5000, "dir/f.bin")
        );
        assert_eq!(
            SiftUrl::parse("sift://10.0.0.1/f").unwrap(),
            url("10.0.0.1", 4433, "f")
        );
        assert_eq!(SiftUrl::parse("sift://h").unwrap(), url("h", 4433, ""));
        assert_eq!(
            SiftUrl::parse("sift://[::1]:7/x").unwrap(),
            url("::1", 7, "x")
        );
        assert_eq!(
            SiftUrl::parse("sift://[::1]/x").unwrap().authority(),
            "[::1]:4433"
        );
    }

    #[test]
    fn percent_escapes_in_the_path_are_decoded() {
        for (text, path) in [
            ("sift://h/with%20space.txt", "with space.txt"),
            ("https://h/h%C3%A9llo.txt", "héllo.txt"),
            ("sift://h/h\u{e9}llo.txt", "h\u{e9}llo.txt"),
            ("sift://h/a%2520b.txt", "a%20b.txt"),
            ("sift://h/d/with space", "d/with space"),
        ] {
            assert_eq!(SiftUrl::parse(text).unwrap().path, path, "{text}");
        }
        for bad in ["sift://h/100%", "sift://h/%zz", "sift://h/%C3"] {
            assert!(
                matches!(SiftUrl::parse(bad), Err(UrlError::Escape { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn https_urls_name_hq_interop() {
        let parsed = SiftUrl::parse("https://127.0.0.1:443/a/b.bin").unwrap();
        assert_eq!(parsed.scheme, Scheme::Https);
        assert_eq!((parsed.port, parsed.path.as_str()), (443, "a/b.bin"));
        assert_eq!(parsed.display(), "https://127.0.0.1:443/a/b.bin");
        assert_eq!(SiftUrl::parse("sift://h/x").unwrap().scheme, Scheme::Sift);
    }

    #[test]
    fn bad_urls_say_what_is_wrong() {
        assert!(matches!(
            SiftUrl::parse("http://h/x"),
            Err(UrlError::Scheme { .. })
        ));
        assert!(matches!(
            SiftUrl::parse("sift:///x"),
            Err(UrlError::NoHost { .. })
        ));
        assert!(matches!(
            SiftUrl::parse("sift://h:0/x"),
            Err(UrlError::Port { .. })
        ));
        assert!(matches!(
            SiftUrl::parse("sift://h:99999/x"),
            Err(UrlError::Port { .. })
        ));
        assert!(matches!(
            SiftUrl::parse("sift://h:abc/x"),
            Err(UrlError::Port { .. })
        ));
        assert!(matches!(
            SiftUrl::parse("sift://[::1/x"),
            Err(UrlError::Ipv6 { .. })
        ));
        let message = SiftUrl::parse("ftp://x").unwrap_err().to_string();
        assert!(!message.contains('\n'));
    }
}
