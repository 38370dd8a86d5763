//! sift-compare as a user runs it: every stack (sift, quiche, quinn) over a
//! lossy sift-link, one small file each, byte-exact; shards that merge into the whole report;
//! and what a sift client says when pointed at the quiche server by mistake.
//! Needs the sift binaries (`cargo build --release -p sift-bin`).

use std::path::{Path, PathBuf};
use std::process::Command;

use sift_interop::compare::binaries::controllers_from_help;
use sift_interop::compare::results::Results;

fn sift_bin() -> PathBuf {
    let dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"))
        .join("release");
    assert!(
        dir.join("sift-link").is_file(),
        "build the sift binaries first: cargo build --release -p sift-bin (looked in {})",
        dir.display()
    );
    dir
}

fn compare(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sift-compare"))
        .args(args)
        .arg("--sift-bin")
        .arg(sift_bin())
        .output()
        .unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-compare-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

// quic-go's rows join only where its Go peer is built: the counts below
// are without them, wherever these tests run.
const SMOKE: [&str; 16] = [
    "run",
    "--only",
    "loss1-50m-100ms",
    "--reps",
    "1",
    "--quiche-cc",
    "cubic",
    "--quinn-cc",
    "cubic",
    "--quic-go-cc",
    "none",
    "--sift-cc",
    "cubic",
    "--file-bytes",
    "300000",
    "--require-all",
];

#[test]
fn every_controller_sift_client_offers_joins_the_comparison_by_default() {
    // Without --sift-cc the runner reads the list from sift-client's own
    // help: a reworded help line must not leave the one command broken.
    let help = Command::new(sift_bin().join("sift-client"))
        .arg("--help")
        .output()
        .unwrap();
    let names = controllers_from_help(&String::from_utf8_lossy(&help.stdout))
        .expect("the --cc list in sift-client --help");
    for name in ["reno", "cubic", "westwood-a", "bbr"] {
        assert!(names.iter().any(|n| n == name), "{name} missing: {names:?}");
    }
}

#[test]
fn every_stack_crosses_a_lossy_link_byte_exact_and_the_report_says_so() {
    let out = scratch("smoke");
    let run = compare(
        &[
            &SMOKE[..],
            &["--loopback-bytes", "0", "--out", out.to_str().unwrap()],
        ]
        .concat(),
    );
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results = Results::load(&out.join("results.json")).unwrap();
    assert_eq!(results.runs.len(), 4);
    assert!(
        results.runs.iter().all(|r| r.ok && r.byte_exact),
        "{:?}",
        results.runs
    );
    // The link really was lossy, for every stack.
    assert!(results
        .runs
        .iter()
        .all(|r| r.link.unwrap().random_losses > 0));
    let markdown = std::fs::read_to_string(out.join("comparison.md")).unwrap();
    assert!(
        markdown.contains("| quiche | cubic | — | 1/1 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| quinn | cubic | — | 1/1 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| sift | cubic | on | 1/1 |"),
        "{markdown}"
    );
    assert!(
        markdown.contains("| link | best quiche | best quinn | best sift | sift/best peer |"),
        "{markdown}"
    );
    assert!(markdown.contains("quinn 0.11"), "{markdown}");
    let svg = std::fs::read_to_string(out.join("comparison.svg")).unwrap();
    assert!(svg.contains("quiche cubic") && svg.contains("quinn cubic"));
    // Progress went to the terminal, one line per run.
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(
        stderr.lines().filter(|l| l.starts_with("[")).count(),
        4,
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn two_shards_merge_into_the_report_of_one_run() {
    let base = scratch("shards");
    let mut dirs = Vec::new();
    for k in 1..=2 {
        let dir = base.join(k.to_string());
        let shard = format!("{k}/2");
        let run = compare(
            &[
                &SMOKE[..],
                &[
                    "--loopback-bytes",
                    "1MB",
                    "--shard",
                    &shard,
                    "--out",
                    dir.to_str().unwrap(),
                ],
            ]
            .concat(),
        );
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        dirs.push(dir);
    }
    let first = Results::load(&dirs[0].join("results.json")).unwrap();
    assert!(
        !first.missing().is_empty(),
        "one shard alone is not the whole plan"
    );
    let merged = base.join("merged");
    let run = Command::new(env!("CARGO_BIN_EXE_sift-compare"))
        .arg("merge")
        .args(&dirs)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results = Results::load(&merged.join("results.json")).unwrap();
    assert!(results.missing().is_empty());
    // 4 link runs + loopback: quiche, quinn, and sift under its default
    // protection (TLS) and under Null, each with notices on and off.
    assert_eq!(results.runs.len(), 4 + 6);
    let markdown = std::fs::read_to_string(merged.join("comparison.md")).unwrap();
    assert!(markdown.contains("## Loopback efficiency"), "{markdown}");
    assert!(!markdown.contains("not in these results"), "{markdown}");
    let _ = std::fs::remove_dir_all(&base);
}

#[test]
fn a_sift_client_pointed_at_a_quiche_server_is_told_at_once_it_is_quic() {
    use sift_interop::compare::process::Running;

    let dir = scratch("wrong-server");
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_quiche-server"));
    command
        .args(["--listen", "127.0.0.1:0", "--root"])
        .arg(dir.join("root"))
        .arg("--cert-dir")
        .arg(dir.join("cert"));
    let server = Running::spawn("quiche-server", command).unwrap();
    let address = server.listening_address().unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(sift_bin().join("sift-client"))
        .args(["ls", &format!("sift://{address}/")])
        .arg(format!(
            "--known-hosts={}",
            dir.join("known_hosts").display()
        ))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    // The handshake runs in QUIC v1 and quiche refuses sift's ALPN: the
    // user is told at once, with no timeout.
    assert!(
        stderr.contains("no application protocol in common: the peer speaks QUIC"),
        "{stderr}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
