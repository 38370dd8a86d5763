//! quiche's side of what every peer shares: one configuration with the
//! like-for-like settings (`peers::settings`), certificates and trust
//! from PEM files (quiche reads files, by string path), the key log, fresh
//! connection IDs, and why a connection closed, in words.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use ring::rand::SecureRandom;

use crate::peers::cert::Certificate;
use crate::peers::env;
use crate::peers::settings::{IDLE_TIMEOUT, MAX_DATA, MAX_STREAM_DATA};

/// The controller names this quiche version accepts, in the order the
/// runner tries them (`bbr2` is quiche's gcongestion BBRv2; `bbr` is an
/// alias of it in quiche 0.28, so it is not listed twice).
pub const CONTROLLERS: &[&str] = &["cubic", "reno", "bbr2"];

/// Length of the connection IDs quiche's peers make.
pub const CID_LEN: usize = quiche::MAX_CONN_ID_LEN;

/// A quiche configuration offering `alpns`, with the settings every peer
/// shares: UDP payloads of up to `max_datagram` bytes both ways, the
/// windows (auto-tuned up to them too), the idle timeout, pacing, and the
/// key log when `SSLKEYLOGFILE` asks for one ([`key_log`] points each
/// connection at it). Stream limits, controller and migration are each
/// peer's to set.
pub fn config(alpns: &[&[u8]], max_datagram: usize) -> anyhow::Result<quiche::Config> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).context("quiche config")?;
    config
        .set_application_protos(alpns)
        .context("quiche ALPN")?;
    config.set_max_idle_timeout(IDLE_TIMEOUT.as_millis() as u64);
    config.set_max_recv_udp_payload_size(max_datagram);
    config.set_max_send_udp_payload_size(max_datagram);
    config.set_initial_max_data(MAX_DATA);
    config.set_initial_max_stream_data_bidi_local(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_bidi_remote(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_uni(MAX_STREAM_DATA);
    config.set_max_connection_window(MAX_DATA);
    config.set_max_stream_window(MAX_STREAM_DATA);
    config.enable_pacing(true);
    if env::key_log_path().is_some() {
        config.log_keys();
    }
    Ok(config)
}

/// Sets the congestion controller `cc` (a name quiche knows: see
/// [`CONTROLLERS`]).
pub fn set_controller(config: &mut quiche::Config, cc: &str) -> anyhow::Result<()> {
    config.set_cc_algorithm_name(cc).map_err(|_| {
        anyhow::anyhow!(
            "quiche has no congestion controller {cc:?} (try one of {})",
            CONTROLLERS.join(", ")
        )
    })
}

/// Loads a server's certificate chain and key.
pub fn install(config: &mut quiche::Config, certificate: &Certificate) -> anyhow::Result<()> {
    let (cert, key) = (&certificate.cert_pem, &certificate.key_pem);
    config
        .load_cert_chain_from_pem_file(path_str(cert)?)
        .with_context(|| format!("quiche cannot load {}", cert.display()))?;
    config
        .load_priv_key_from_pem_file(path_str(key)?)
        .with_context(|| format!("quiche cannot load {}", key.display()))?;
    Ok(())
}

/// Makes a client trust the certificates in `ca_pem` (the server's
/// self-signed one, or its CA), or trust nothing and verify nothing when
/// `ca_pem` is `None`.
pub fn trust(config: &mut quiche::Config, ca_pem: Option<&Path>) -> anyhow::Result<()> {
    match ca_pem {
        Some(path) => {
            config
                .load_verify_locations_from_file(path_str(path)?)
                .with_context(|| format!("quiche cannot load {}", path.display()))?;
            config.verify_peer(true);
        }
        None => config.verify_peer(false),
    }
    Ok(())
}

fn path_str(path: &Path) -> anyhow::Result<&str> {
    path.to_str().with_context(|| {
        format!(
            "{} is not valid UTF-8 (quiche takes string paths)",
            path.display()
        )
    })
}

/// Points `conn`'s key log at `SSLKEYLOGFILE` (appending), when set.
pub fn key_log(conn: &mut quiche::Connection) {
    if let Some(file) = env::open_key_log() {
        conn.set_keylog(Box::new(file));
    }
}

/// A fresh random connection ID.
pub fn random_cid(rng: &ring::rand::SystemRandom) -> anyhow::Result<[u8; CID_LEN]> {
    let mut cid = [0u8; CID_LEN];
    rng.fill(&mut cid)
        .map_err(|_| anyhow::anyhow!("no randomness for a connection ID"))?;
    Ok(cid)
}

/// Fires `conn`'s timer if it is due.
pub fn on_due_timeout(conn: &mut quiche::Connection) {
    if conn
        .timeout_instant()
        .is_some_and(|at| at <= Instant::now())
    {
        conn.on_timeout();
    }
}

/// Why `conn` closed, for a person: the peer's error, ours, or the idle
/// timeout.
pub fn why_closed(conn: &quiche::Connection) -> String {
    let describe = |e: &quiche::ConnectionError, by: &str| {
        format!(
            "{by} error 0x{:x} {}",
            e.error_code,
            String::from_utf8_lossy(&e.reason)
        )
    };
    if let Some(e) = conn.peer_error() {
        describe(e, "the peer closed it:")
    } else if let Some(e) = conn.local_error() {
        describe(e, "closed here:")
    } else if conn.is_timed_out() {
        format!("idle timeout (no answer for {} s)", IDLE_TIMEOUT.as_secs())
    } else {
        "no reason given".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::settings::{LARGEST_DATAGRAM_SIZE, MAX_DATAGRAM_SIZE};

    fn with_controller(cc: &str) -> anyhow::Result<quiche::Config> {
        let mut config = config(&[b"test"], MAX_DATAGRAM_SIZE)?;
        set_controller(&mut config, cc)?;
        Ok(config)
    }

    #[test]
    fn every_listed_controller_is_one_quiche_accepts() {
        for cc in CONTROLLERS {
            assert!(with_controller(cc).is_ok(), "quiche refused {cc}");
        }
        assert!(config(&[b"test"], LARGEST_DATAGRAM_SIZE).is_ok());
    }

    #[test]
    fn an_unknown_controller_is_refused_with_the_known_ones_named() {
        let error = with_controller("veno").err().unwrap().to_string();
        assert!(error.contains("veno") && error.contains("cubic"), "{error}");
    }

    #[test]
    fn a_generated_certificate_loads_into_a_server_config() {
        let dir = std::env::temp_dir().join(format!("sift-interop-quiche-{}", std::process::id()));
        let cert = Certificate::generate(&dir).unwrap();
        let mut config = with_controller("cubic").unwrap();
        install(&mut config, &cert).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
