//! `sift-matrix` on a small slice (quiche and quinn, both roles): the
//! markdown table with a letter per case, results.json, the unsupported
//! cells with their reason, and a failing cell's logs.
//!
//! Needs sift's release binaries (`cargo build --release -p sift-bin`, as
//! `.ci/run` does before these tests): the matrix finds sift-link there.

use std::path::{Path, PathBuf};
use std::process::Command;

struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-matrix-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn matrix(out: &Path, args: &[&str]) -> std::process::Output {
    let sift_bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release");
    assert!(
        sift_bin.join("sift-link").is_file(),
        "{} has no sift-link: build it with `cargo build --release -p sift-bin`",
        sift_bin.display()
    );
    Command::new(env!("CARGO_BIN_EXE_sift-matrix"))
        .arg("--sift-bin")
        .arg(&sift_bin)
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_small_slice_gives_a_letter_table_and_json_with_reasons_for_unsupported_cells() {
    let scratch = Scratch::new("slice");
    let run = matrix(
        &scratch.0,
        &[
            "--only",
            "handshake,retry,v2",
            "--clients",
            "quiche,quinn",
            "--servers",
            "quiche,quinn",
        ],
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let table = std::fs::read_to_string(scratch.0.join("matrix.md")).unwrap();
    // Every pair passes H and S; nobody speaks v2.
    for row in [
        "| **quiche** | H S ? V2 | H S ? V2 |",
        "| **quinn** | H S ? V2 | H S ? V2 |",
    ] {
        assert!(table.contains(row), "{row} missing from\n{table}");
    }
    assert!(
        table.contains("| client \\ server | quiche | quinn |"),
        "{table}"
    );
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.0.join("results.json")).unwrap())
            .unwrap();
    let cells = results["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 3 * 4);
    for cell in cells {
        let expected = if cell["case"] == "v2" {
            "unsupported"
        } else {
            "pass"
        };
        assert_eq!(cell["result"], expected, "{cell}");
        if cell["case"] == "retry" {
            assert!(cell["seen"]["retries"].as_u64().unwrap() >= 1, "{cell}");
        }
        if cell["case"] == "v2" {
            assert!(
                cell["reason"].as_str().unwrap().contains("v1 only"),
                "{cell}"
            );
        }
    }
    // Passing cells leave nothing behind.
    assert_eq!(
        std::fs::read_dir(scratch.0.join("logs")).unwrap().count(),
        0
    );
}

#[test]
fn a_failing_cell_keeps_its_logs_and_require_pass_exits_non_zero() {
    let scratch = Scratch::new("failing");
    // No client finishes in no time.
    let run = matrix(
        &scratch.0,
        &[
            "--only",
            "handshake",
            "--clients",
            "quinn",
            "--servers",
            "quiche",
            "--timeout",
            "0",
            "--require-pass",
        ],
    );
    assert_eq!(
        run.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let logs = scratch.0.join("logs/quiche_quinn_handshake");
    for file in ["server.stderr", "client-0.stderr", "wire.txt"] {
        assert!(
            logs.join(file).is_file(),
            "{file} missing in {}",
            logs.display()
        );
    }
    let table = std::fs::read_to_string(scratch.0.join("matrix.md")).unwrap();
    assert!(table.contains("| **quinn** | ✕ H |"), "{table}");
    assert!(table.contains("did not finish"), "{table}");
}
