//! quiche's configuration for both endpoints, and the server's self-signed
//! certificate (made with rcgen at start; quiche reads PEM files, so the
//! certificate and key are written to a private directory first).

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::protocol::ALPN;

/// UDP payload size, both directions: sift's `max_datagram_size` default
/// (src/conn), so both stacks put the same bytes in each packet.
pub const MAX_DATAGRAM_SIZE: usize = 1350;

/// Connection-level receive window: 64 MiB. A 20 Mb/s, 600 ms satellite
/// path holds 1.5 MB; a loopback path at several Gb/s with a few ms of
/// scheduling delay holds tens of MB. Windows must never be the limit.
pub const MAX_DATA: u64 = 64 << 20;

/// Per-stream receive window: 32 MiB (see [`MAX_DATA`]).
pub const MAX_STREAM_DATA: u64 = 32 << 20;

/// Idle timeout, milliseconds: long enough for a 600 ms RTT path with
/// backed-off probes, short enough that a dead peer ends a run.
pub const IDLE_TIMEOUT_MS: u64 = 30_000;

/// The controller names this quiche version accepts, in the order the
/// runner tries them (`bbr2` is quiche's gcongestion BBRv2; `bbr` is an
/// alias of it in quiche 0.28, so it is not listed twice).
pub const CONTROLLERS: &[&str] = &["cubic", "reno", "bbr2"];

/// The largest `--max-datagram` the peers' bulk binaries take: loopback's
/// jumbo size, where sift's path MTU discovery settles.
pub const LARGEST_DATAGRAM_SIZE: usize = 8972;

/// clap value parser for the peers' `--max-datagram`: 1200 to
/// [`LARGEST_DATAGRAM_SIZE`] bytes of UDP payload.
pub fn parse_max_datagram(text: &str) -> Result<usize, String> {
    let bytes: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of bytes"))?;
    if !(1200..=LARGEST_DATAGRAM_SIZE).contains(&bytes) {
        return Err(format!(
            "{bytes} is out of range: 1200 to {LARGEST_DATAGRAM_SIZE} bytes"
        ));
    }
    Ok(bytes)
}

/// A quiche configuration with the settings both endpoints share, the
/// controller `cc` (a name quiche knows: see [`CONTROLLERS`]) and UDP
/// payloads of up to `max_datagram` bytes both ways ([`MAX_DATAGRAM_SIZE`]
/// on the links; loopback carries [`LARGEST_DATAGRAM_SIZE`], which sift's
/// and quinn's path MTU discovery reach there).
pub fn config(cc: &str, max_datagram: usize) -> anyhow::Result<quiche::Config> {
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).context("quiche config")?;
    config
        .set_application_protos(&[ALPN])
        .context("quiche ALPN")?;
    config.set_cc_algorithm_name(cc).map_err(|_| {
        anyhow::anyhow!(
            "quiche has no congestion controller {cc:?} (try one of {})",
            CONTROLLERS.join(", ")
        )
    })?;
    config.set_max_idle_timeout(IDLE_TIMEOUT_MS);
    config.set_max_recv_udp_payload_size(max_datagram);
    config.set_max_send_udp_payload_size(max_datagram);
    config.set_initial_max_data(MAX_DATA);
    config.set_initial_max_stream_data_bidi_local(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_bidi_remote(MAX_STREAM_DATA);
    config.set_initial_max_stream_data_uni(MAX_STREAM_DATA);
    config.set_max_connection_window(MAX_DATA);
    config.set_max_stream_window(MAX_STREAM_DATA);
    config.set_initial_max_streams_bidi(16);
    config.set_initial_max_streams_uni(16);
    config.set_disable_active_migration(true);
    config.enable_pacing(true);
    Ok(config)
}

/// A self-signed certificate for `localhost` and its key, as PEM files in
/// `dir` (created if needed, readable by this user only).
pub struct Certificate {
    /// The certificate chain (one self-signed certificate).
    pub cert_pem: PathBuf,
    /// Its private key.
    pub key_pem: PathBuf,
}

impl Certificate {
    /// Makes a fresh key pair and certificate and writes both into `dir`.
    pub fn generate(dir: &Path) -> anyhow::Result<Self> {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
            .context("cannot make a self-signed certificate")?;
        create_private_dir(dir)?;
        let cert_pem = dir.join("cert.pem");
        let key_pem = dir.join("key.pem");
        std::fs::write(&cert_pem, certified.cert.pem())
            .with_context(|| format!("cannot write {}", cert_pem.display()))?;
        std::fs::write(&key_pem, certified.key_pair.serialize_pem())
            .with_context(|| format!("cannot write {}", key_pem.display()))?;
        Ok(Self { cert_pem, key_pem })
    }

    /// Loads this certificate and key into a server configuration.
    pub fn install(&self, config: &mut quiche::Config) -> anyhow::Result<()> {
        config
            .load_cert_chain_from_pem_file(path_str(&self.cert_pem)?)
            .with_context(|| format!("quiche cannot load {}", self.cert_pem.display()))?;
        config
            .load_priv_key_from_pem_file(path_str(&self.key_pem)?)
            .with_context(|| format!("quiche cannot load {}", self.key_pem.display()))?;
        Ok(())
    }
}

/// Makes a client configuration trust exactly the certificate in `ca_pem`
/// (the server's self-signed one), or trust nothing and verify nothing when
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

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_datagram_takes_1200_to_loopback_size_and_sets_both_directions() {
        assert_eq!(parse_max_datagram("8972"), Ok(LARGEST_DATAGRAM_SIZE));
        assert_eq!(parse_max_datagram("1200"), Ok(1200));
        for bad in ["1199", "8973", "big"] {
            assert!(parse_max_datagram(bad).is_err(), "{bad}");
        }
        assert!(config("cubic", LARGEST_DATAGRAM_SIZE).is_ok());
    }

    #[test]
    fn every_listed_controller_is_one_quiche_accepts() {
        for cc in CONTROLLERS {
            assert!(config(cc, MAX_DATAGRAM_SIZE).is_ok(), "quiche refused {cc}");
        }
    }

    #[test]
    fn an_unknown_controller_is_refused_with_the_known_ones_named() {
        let error = config("veno", MAX_DATAGRAM_SIZE).err().unwrap().to_string();
        assert!(error.contains("veno") && error.contains("cubic"), "{error}");
    }

    #[test]
    fn a_generated_certificate_loads_into_a_server_config() {
        let dir = std::env::temp_dir().join(format!("sift-interop-cert-{}", std::process::id()));
        let cert = Certificate::generate(&dir).unwrap();
        let mut config = config("cubic", MAX_DATAGRAM_SIZE).unwrap();
        cert.install(&mut config).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
