//! What the quiche file peer shares with every peer (interop/src/peers),
//! cut down to what it needs. The protocol modules it uses come along:
//! `cli` parses the hq-interop command line too.

#[path = "../src/peers/cert.rs"]
pub mod cert;
#[path = "../src/peers/cli.rs"]
pub mod cli;
#[path = "../src/peers/env.rs"]
pub mod env;
#[path = "../src/peers/file.rs"]
pub mod file;
#[path = "../src/peers/files.rs"]
pub mod files;
#[path = "../src/peers/hq.rs"]
pub mod hq;
#[path = "../src/peers/net.rs"]
pub mod net;
pub mod quiche;
#[path = "../src/peers/settings.rs"]
pub mod settings;
#[path = "../src/peers/url.rs"]
pub mod url;
