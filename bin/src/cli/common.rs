//! What every sift tool does the same way: the protection choice (TLS, or
//! Null with a loud warning), `--cc` and `--corruption-notices`, logging,
//! and turning an error into one line and an exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use std::str::FromStr;

use sift::conn::Protection;
use sift_cc::CcConfig;

/// Printed to stderr by every tool that opens an unprotected connection.
pub const NULL_PROTECTION_WARNING: &str =
    "warning: --insecure-null-crypto: Null protection, no encryption, no authentication — for experiments only; the peer must use it too";

/// The protection a tool runs with: TLS 1.3, or Null when the user passed
/// `--insecure-null-crypto` (which prints the warning).
pub fn protection(insecure_null_crypto: bool) -> Protection {
    if insecure_null_crypto {
        eprintln!("{NULL_PROTECTION_WARNING}");
        Protection::Null
    } else {
        Protection::Tls
    }
}

/// `on` / `off` for a boolean option.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

impl OnOff {
    /// `true` for `on`.
    pub fn enabled(self) -> bool {
        self == OnOff::On
    }
}

/// `--careful-resume`: RFC 9959 as written, off, or with sift's measured
/// loss share before a retreat
/// ([`sift_cc::careful_resume::MEASURED_RETREAT_LOSS_PERMILLE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CarefulResumeMode {
    On,
    Off,
    LossShare,
}

impl CarefulResumeMode {
    /// The transport's Careful Resume knobs; `None` for `off`.
    pub fn config(self) -> Option<sift_cc::CarefulResumeConfig> {
        let rfc = sift_cc::CarefulResumeConfig::default();
        match self {
            CarefulResumeMode::On => Some(rfc),
            CarefulResumeMode::Off => None,
            CarefulResumeMode::LossShare => Some(sift_cc::CarefulResumeConfig {
                retreat_loss_permille: sift_cc::careful_resume::MEASURED_RETREAT_LOSS_PERMILLE,
                ..rfc
            }),
        }
    }
}

/// clap value parser for `--cc`: the controller's name, with sift-cc's own
/// message for an unknown one.
pub fn parse_cc(name: &str) -> Result<CcConfig, String> {
    CcConfig::from_str(name).map_err(|e| e.to_string())
}

/// The largest `--initial-window` a tool takes, in packets (1.2 MB of
/// 1200-byte packets): beyond it a first flight is a flood, not a start.
pub const MAX_INITIAL_WINDOW_PACKETS: u64 = 1000;

/// clap value parser for `--initial-window`: packets, 1 to
/// [`MAX_INITIAL_WINDOW_PACKETS`].
pub fn parse_initial_window(text: &str) -> Result<u64, String> {
    let packets: u64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of packets"))?;
    if !(1..=MAX_INITIAL_WINDOW_PACKETS).contains(&packets) {
        return Err(format!(
            "{packets} packets is out of range: 1 to {MAX_INITIAL_WINDOW_PACKETS}"
        ));
    }
    Ok(packets)
}

/// clap value parser for one entry of `--versions` (comma-separated,
/// most preferred first): `sift/1`, `v1` for QUIC version 1, or `v2` for
/// QUIC version 2 (RFC 9369).
pub fn parse_version(name: &str) -> Result<u32, String> {
    match name.trim() {
        "sift/1" | "sift" => Ok(sift::wire::VERSION),
        "v1" | "quic" | "quic-v1" => Ok(sift::wire::QUIC_V1),
        "v2" | "quic-v2" => Ok(sift::wire::QUIC_V2),
        other => Err(format!("unknown version {other:?}: use sift/1, v1 and v2")),
    }
}

/// A transport configuration for a tool: the protection, controller and
/// corruption-notice offer chosen, library defaults otherwise. TLS
/// identity and trust are added by the tool.
pub fn transport_config(
    protection: Protection,
    cc: CcConfig,
    corruption_notices: OnOff,
) -> sift::Config {
    sift::Config {
        protection,
        cc,
        corruption_notices: corruption_notices.enabled(),
        ..sift::Config::default()
    }
}

/// Where `--qlog DIR`, else a non-empty `QLOGDIR`, says to write one qlog
/// trace per connection (created if missing), within the default
/// `sift::trace::QlogLimits`; `None`: no tracing.
pub fn trace_sink(qlog: Option<&Path>) -> anyhow::Result<Option<sift::trace::TraceSink>> {
    let dir = match qlog {
        Some(dir) => dir.to_path_buf(),
        None => match std::env::var_os("QLOGDIR").filter(|dir| !dir.is_empty()) {
            Some(dir) => PathBuf::from(dir),
            None => return Ok(None),
        },
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the qlog directory {}", dir.display()))?;
    Ok(Some(sift::trace::TraceSink::qlog_dir(dir)))
}

/// The NSS key log `SSLKEYLOGFILE` names, when set (rustls appends every
/// handshake's secrets to it), after a warning that whoever reads the file
/// can decrypt the connections.
pub fn key_log() -> Option<std::sync::Arc<dyn rustls::KeyLog>> {
    let path = std::env::var_os("SSLKEYLOGFILE").filter(|path| !path.is_empty())?;
    eprintln!(
        "warning: writing TLS secrets to {} (SSLKEYLOGFILE): whoever reads it can decrypt these connections",
        Path::new(&path).display()
    );
    Some(std::sync::Arc::new(rustls::KeyLogFile::new()))
}

/// Logs to stderr: warnings only by default; `-v` adds this tool's info and
/// debug events; `-vv` everything, the transport's debug events included.
/// `RUST_LOG` overrides.
pub fn init_logging(verbosity: u8) {
    let default = match verbosity {
        0 => "warn",
        1 => "warn,sift_bin=debug,sift=info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(verbosity > 1)
        .try_init();
}

/// Makes a panic print one line (no backtrace) instead of Rust's report.
/// There should be none; this keeps the promise if one slips through.
pub fn install_panic_hook(tool: &'static str) {
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let place = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("{tool}: internal error{place}: {message}");
    }));
}

/// Runs a tool's main body: an error becomes `TOOL: error: ...` on one line
/// and exit code 1.
pub fn run_tool(tool: &'static str, body: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    install_panic_hook(tool);
    match body() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("{tool}: error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line, `outer: cause: root`, leaving out
/// a cause whose text the line already shows (many errors print their
/// source themselves).
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line.replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_chain_is_one_line_without_repeats() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let error = anyhow::Error::new(io)
            .context("opening x: no such file")
            .context("uploading");
        assert_eq!(one_line(&error), "uploading: opening x: no such file");
        let multi = anyhow::anyhow!("first\nsecond");
        assert_eq!(one_line(&multi), "first second");
    }

    #[test]
    fn careful_resume_on_is_the_rfc_and_loss_share_is_the_measured_option() {
        let on = CarefulResumeMode::On.config().unwrap();
        assert_eq!(
            on.retreat_loss_permille, 0,
            "RFC 9959 §3.3: any congestion retreats"
        );
        let share = CarefulResumeMode::LossShare.config().unwrap();
        assert_eq!(
            share.retreat_loss_permille,
            sift_cc::careful_resume::MEASURED_RETREAT_LOSS_PERMILLE
        );
        assert_eq!(CarefulResumeMode::Off.config(), None);
    }

    #[test]
    fn an_unknown_controller_is_named_in_the_message() {
        let message = parse_cc("bbr2").unwrap_err();
        assert!(message.contains("bbr2"), "{message}");
        assert_eq!(parse_cc("Veno").unwrap().name(), "veno");
    }

    #[test]
    fn null_protection_only_with_the_flag() {
        assert_eq!(protection(false), Protection::Tls);
        assert_eq!(protection(true), Protection::Null);
    }
}
