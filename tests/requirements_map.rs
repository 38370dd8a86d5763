//! `docs/requirements.toml` holds (issue 53): the map of the QUIC RFCs'
//! requirements to the code that meets them and the test that shows it.
//!
//! This test reads the map and checks its schema, that every test it names
//! is one `#[test]` function in the workspace, and that no MUST or MUST
//! NOT is left unmet. That the named tests also *ran
//! and passed* is checked by CI on the output of `cargo test --workspace`
//! (`.ci/requirements-ran`), which reads the `test = "..."` lines the way
//! [`named_tests_by_line`] does; tests here keep the two readings in step
//! and run that script on logs it must refuse.
//!
//! The counts for a closing note (rows by RFC, level and status) print with
//! `cargo test -p sift --test requirements_map -- --nocapture counts`.
//! `REQUIREMENTS_MAP_ROOT=DIR` checks another checkout's map and sources
//! with the same test binary (a merge candidate, say) instead of this one's.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The RFCs the map covers; a row of another RFC is a typo until this says so.
const RFCS: &[u32] = &[9000, 9001, 9002, 9368, 9369, 9959];
const LEVELS: &[&str] = &["MUST", "MUST NOT", "SHOULD", "SHOULD NOT"];
const STATUSES: &[&str] = &["met", "not-met", "not-applicable"];
/// Where the workspace's Rust sources live (its members `.`, `cc`, `bin`
/// and `interop/sift-h3`; the rest of interop/ is another workspace).
const SOURCE_DIRS: &[&str] = &["src", "cc", "bin", "tests", "interop/sift-h3"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Map {
    requirement: Vec<Requirement>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Requirement {
    rfc: u32,
    section: String,
    level: String,
    text: String,
    status: String,
    code: Option<String>,
    test: Option<String>,
    why: Option<String>,
}

impl Requirement {
    /// How a failure names this row: `RFC 9001 §5.7 MUST: text`.
    fn label(&self) -> String {
        format!(
            "RFC {} §{} {}: {}",
            self.rfc, self.section, self.level, self.text
        )
    }

    fn is_must(&self) -> bool {
        self.level == "MUST" || self.level == "MUST NOT"
    }
}

/// The checkout whose map and sources are read: this one, unless
/// `REQUIREMENTS_MAP_ROOT` names another.
fn root() -> &'static Path {
    static ROOT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ROOT.get_or_init(|| {
        std::env::var_os("REQUIREMENTS_MAP_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
    })
}

fn map_text() -> String {
    let path = root().join("docs/requirements.toml");
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

fn map() -> Map {
    toml::from_str(&map_text()).unwrap_or_else(|e| panic!("docs/requirements.toml: {e}"))
}

/// A section number as numbers to compare: "8.2.10" after "8.2.9";
/// appendix letters ("A.5") after every numbered section.
fn section_key(section: &str) -> Vec<u32> {
    section
        .split('.')
        .map(|part| match part.parse::<u32>() {
            Ok(n) => n,
            Err(_) => 1000 + part.bytes().map(u32::from).sum::<u32>(),
        })
        .collect()
}

fn is_section(section: &str) -> bool {
    let mut parts = section.split('.');
    let first = parts.next().unwrap_or("");
    let first_ok = (!first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()))
        || (first.len() == 1 && first.bytes().all(|b| b.is_ascii_uppercase()));
    first_ok && parts.all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// What is wrong with one row's shape, if anything.
fn schema_problems(row: &Requirement) -> Vec<String> {
    let mut problems = Vec::new();
    if !RFCS.contains(&row.rfc) {
        problems.push(format!("rfc {} is not one of {RFCS:?}", row.rfc));
    }
    if !is_section(&row.section) {
        problems.push(format!(
            "section {:?} is not like \"8.2.1\" or \"A.5\"",
            row.section
        ));
    }
    if !LEVELS.contains(&row.level.as_str()) {
        problems.push(format!("level {:?} is not one of {LEVELS:?}", row.level));
    }
    if !STATUSES.contains(&row.status.as_str()) {
        problems.push(format!(
            "status {:?} is not one of {STATUSES:?}",
            row.status
        ));
    }
    if row.text.trim().is_empty() || row.text.contains('\n') {
        problems.push("text must be one non-empty line".into());
    }
    let present = |field: &Option<String>| field.as_deref().is_some_and(|s| !s.trim().is_empty());
    match row.status.as_str() {
        "met" => {
            if !present(&row.code) {
                problems.push("a met row names its code".into());
            }
            match row.test.as_deref() {
                None => problems.push("a met row names its test".into()),
                Some(name) if !is_identifier(name) => {
                    problems.push(format!("test {name:?} is not a function name"));
                }
                Some(_) => {}
            }
        }
        "not-met" | "not-applicable" if !present(&row.why) => {
            problems.push(format!("a {} row says why", row.status));
        }
        _ => {}
    }
    if let Some(name) = &row.test {
        if row.status != "met" && !is_identifier(name) {
            problems.push(format!("test {name:?} is not a function name"));
        }
    }
    problems
}

#[test]
fn requirements_map_rows_follow_the_schema() {
    let map = map();
    assert!(
        !map.requirement.is_empty(),
        "docs/requirements.toml has no [[requirement]] rows"
    );
    let mut bad = Vec::new();
    for row in &map.requirement {
        for problem in schema_problems(row) {
            bad.push(format!("{}\n    {problem}", row.label()));
        }
    }
    let mut seen = BTreeSet::new();
    for row in &map.requirement {
        if !seen.insert((
            row.rfc,
            row.section.as_str(),
            row.level.as_str(),
            row.text.as_str(),
        )) {
            bad.push(format!("{}\n    appears twice", row.label()));
        }
    }
    assert!(
        bad.is_empty(),
        "rows of docs/requirements.toml out of shape:\n{}",
        bad.join("\n")
    );
}

#[test]
fn requirements_map_rows_are_in_section_order() {
    let map = map();
    let mut bad = Vec::new();
    for pair in map.requirement.windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        if before.rfc == after.rfc && section_key(&after.section) < section_key(&before.section) {
            bad.push(format!(
                "§{} comes after §{} (RFC {})",
                after.section, before.section, after.rfc
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "docs/requirements.toml out of section order:\n{}",
        bad.join("\n")
    );
}

/// Issue 53's bar, kept from then on: every MUST and MUST NOT is met or
/// does not apply to sift (CI prints the same list every run,
/// `.ci/requirements-ran`).
#[test]
fn no_must_in_the_requirements_map_is_unmet() {
    let map = map();
    let unmet: Vec<String> = map
        .requirement
        .iter()
        .filter(|row| row.is_must() && row.status == "not-met")
        .map(|row| {
            format!(
                "{}\n    why: {}",
                row.label(),
                row.why.as_deref().unwrap_or("")
            )
        })
        .collect();
    assert!(
        unmet.is_empty(),
        "{} MUST / MUST NOT rows of docs/requirements.toml are not met:\n{}",
        unmet.len(),
        unmet.join("\n")
    );
}

/// Rows counted by (RFC, level) and status.
type Counts = BTreeMap<(u32, usize), BTreeMap<&'static str, usize>>;

fn counts(rows: &[Requirement]) -> Counts {
    let mut counts = Counts::new();
    for row in rows {
        let (Some(level), Some(status)) = (
            LEVELS.iter().position(|l| *l == row.level),
            STATUSES.iter().find(|s| **s == row.status),
        ) else {
            continue;
        };
        *counts
            .entry((row.rfc, level))
            .or_default()
            .entry(status)
            .or_default() += 1;
    }
    counts
}

/// The counts as a Markdown table: a line per RFC and level, a total per
/// RFC, and one for the whole map.
fn counts_table(counts: &Counts) -> String {
    let mut out = String::from(
        "| RFC | level | met | not-met | not-applicable | rows |\n\
         |-----|-------|----:|--------:|---------------:|-----:|\n",
    );
    let line = |out: &mut String, rfc: &str, level: &str, by: &BTreeMap<&str, usize>| {
        let of = |status: &str| by.get(status).copied().unwrap_or(0);
        let total: usize = by.values().sum();
        out.push_str(&format!(
            "| {rfc} | {level} | {} | {} | {} | {total} |\n",
            of("met"),
            of("not-met"),
            of("not-applicable")
        ));
    };
    let mut all: BTreeMap<&str, usize> = BTreeMap::new();
    let mut rfc_total: BTreeMap<&str, usize> = BTreeMap::new();
    let mut previous: Option<u32> = None;
    for ((rfc, level), by) in counts {
        if let Some(done) = previous.filter(|p| p != rfc) {
            line(&mut out, &done.to_string(), "all", &rfc_total);
            rfc_total.clear();
        }
        previous = Some(*rfc);
        line(&mut out, &rfc.to_string(), LEVELS[*level], by);
        for (status, n) in by {
            *rfc_total.entry(*status).or_default() += n;
            *all.entry(*status).or_default() += n;
        }
    }
    if let Some(rfc) = previous {
        line(&mut out, &rfc.to_string(), "all", &rfc_total);
    }
    line(&mut out, "all", "all", &all);
    out
}

/// Prints the counts (run with `--nocapture`), and checks that they account
/// for every row: a row whose level or status the table cannot place would
/// otherwise vanish from the closing note.
#[test]
fn requirements_map_counts_account_for_every_row() {
    let map = map();
    let counts = counts(&map.requirement);
    let counted: usize = counts.values().flat_map(BTreeMap::values).sum();
    let table = counts_table(&counts);
    println!(
        "docs/requirements.toml: {} rows\n{table}",
        map.requirement.len()
    );
    assert_eq!(counted, map.requirement.len(), "{table}");
    assert!(table.ends_with(&format!(
        "| all | all | {} | {} | {} | {counted} |\n",
        map.requirement.iter().filter(|r| r.status == "met").count(),
        map.requirement
            .iter()
            .filter(|r| r.status == "not-met")
            .count(),
        map.requirement
            .iter()
            .filter(|r| r.status == "not-applicable")
            .count(),
    )));
}

#[test]
fn requirements_map_code_paths_exist() {
    let map = map();
    let mut missing = Vec::new();
    for row in &map.requirement {
        let Some(code) = &row.code else { continue };
        // Every path named (a word holding '/' and a file extension) must be there.
        for word in
            code.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')'))
        {
            let word = word.trim_matches('`');
            let looks_like_path = word.contains('/') && Path::new(word).extension().is_some();
            if looks_like_path && !root().join(word).is_file() {
                missing.push(format!(
                    "{}\n    code names {word}, which does not exist",
                    row.label()
                ));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/requirements.toml names missing files:\n{}",
        missing.join("\n")
    );
}

/// Each `*.rs` file under `dir`, skipping build output.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// The name of the function a line declares, if it declares one:
/// `fn name(`, `async fn name<T>(`, `pub(crate) fn name(`.
fn declared_fn(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let at = if line.starts_with("fn ") {
        Some(0)
    } else {
        line.find(" fn ").map(|i| i + 1)
    }?;
    let rest = &line[at + 3..];
    let end = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let name = &rest[..end];
    (!name.is_empty()).then_some(name)
}

/// Whether a line is a test attribute: `#[test]`, `#[tokio::test]`,
/// `#[tokio::test(flavor = ...)]` (proptest's functions carry `#[test]`).
fn is_test_attribute(line: &str) -> bool {
    let line = line.trim();
    line == "#[test]" || line.starts_with("#[tokio::test]") || line.starts_with("#[tokio::test(")
}

/// A line that may stand between a test attribute and its `fn`.
fn is_attribute_or_comment(line: &str) -> bool {
    let line = line.trim();
    line.is_empty() || line.starts_with("#[") || line.starts_with("//") || line.starts_with(")]")
}

/// Every test function of the workspace: name → the files that declare one by that name.
fn workspace_tests() -> BTreeMap<String, Vec<PathBuf>> {
    let mut files = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&root().join(dir), &mut files);
    }
    let mut tests: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for file in files {
        let Ok(source) = fs::read_to_string(&file) else {
            continue;
        };
        let mut after_test_attribute = false;
        for line in source.lines() {
            if is_test_attribute(line) {
                after_test_attribute = true;
            } else if after_test_attribute && !line.trim_start().starts_with("//") {
                if let Some(name) = declared_fn(line) {
                    let relative = file.strip_prefix(root()).unwrap_or(&file).to_path_buf();
                    tests.entry(name.to_string()).or_default().push(relative);
                    after_test_attribute = false;
                } else if !is_attribute_or_comment(line) {
                    after_test_attribute = false;
                }
            }
        }
    }
    tests
}

#[test]
fn every_test_the_requirements_map_names_exists_once() {
    let map = map();
    let tests = workspace_tests();
    let mut bad = Vec::new();
    for row in &map.requirement {
        let Some(name) = &row.test else { continue };
        match tests.get(name).map(Vec::as_slice) {
            None | Some([]) => bad.push(format!(
                "{}\n    test {name} is not a #[test] fn in the workspace",
                row.label()
            )),
            Some([_]) => {}
            Some(files) => bad.push(format!(
                "{}\n    test {name} is declared {} times ({}); CI matches tests by name",
                row.label(),
                files.len(),
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
    assert!(
        bad.is_empty(),
        "docs/requirements.toml names tests that cannot be found:\n{}",
        bad.join("\n")
    );
}

/// The test names as `.ci/requirements-ran` reads them: a line
/// `test = "NAME"`, alone on it but for a trailing comment.
fn named_tests_by_line(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|line| {
            let rest = line
                .strip_prefix("test")?
                .trim_start()
                .strip_prefix('=')?
                .trim_start();
            let rest = rest.strip_prefix('"')?;
            Some(rest[..rest.find('"')?].to_string())
        })
        .collect()
}

#[test]
fn ci_reads_the_same_test_names_as_the_toml_parser() {
    let text = map_text();
    let parsed: BTreeSet<String> = map()
        .requirement
        .into_iter()
        .filter_map(|row| row.test)
        .collect();
    assert_eq!(
        named_tests_by_line(&text),
        parsed,
        "write each `test = \"NAME\"` of docs/requirements.toml on a line of its own, \
         so that .ci/requirements-ran finds the same names"
    );
}

#[test]
fn the_test_finder_sees_attributes_and_skips_helpers() {
    // The finder must be able to say no: this file's helper is not a test,
    // and this very test is.
    let tests = workspace_tests();
    assert!(!tests.contains_key("workspace_tests"));
    assert_eq!(
        tests
            .get("the_test_finder_sees_attributes_and_skips_helpers")
            .map(Vec::len),
        Some(1)
    );
    // A tokio test and a proptest (whose functions carry #[test]) are found.
    assert!(tests
        .values()
        .flatten()
        .any(|f| f.ends_with("tests/tokio_api.rs")));
    assert!(tests.contains_key("sealed_packets_open_to_their_frames"));
    assert_eq!(
        declared_fn("    async fn name_here<T>(x: T) {"),
        Some("name_here")
    );
    assert_eq!(declared_fn("    pub(crate) fn other() {"), Some("other"));
    assert_eq!(declared_fn("    let f = 1;"), None);
}

/// Runs `.ci/requirements-ran` (this checkout's, whatever the root) on a map
/// and a test log written for the occasion: whether it passed, and what it
/// printed (stdout, then stderr).
fn run_ci_check(case: &str, map: &str, log: &str) -> (bool, String) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("requirements_map")
        .join(case);
    fs::create_dir_all(&dir).unwrap();
    let (map_path, log_path) = (dir.join("requirements.toml"), dir.join("test.log"));
    fs::write(&map_path, map).unwrap();
    fs::write(&log_path, log).unwrap();
    let out = std::process::Command::new("bash")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/requirements-ran"))
        .arg(&log_path)
        .arg(&map_path)
        .output()
        .expect("running bash .ci/requirements-ran");
    let printed =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), printed)
}

/// A met row of RFC 9000 naming `test`.
fn row_naming(test: &str) -> String {
    format!(
        "[[requirement]]\nrfc = 9000\nsection = \"1\"\nlevel = \"MUST\"\n\
         text = \"{test}\"\nstatus = \"met\"\ncode = \"src/lib.rs\"\ntest = \"{test}\"\n\n"
    )
}

/// A log as `cargo test --workspace` writes it, cargo's lines and all.
const LOG: &str = "\
   Compiling sift v0.1.0 (/home/ci/sift)
     Running unittests src/lib.rs (target/debug/deps/sift-0123456789abcdef)

running 7 tests
test conn::tests::passes ... ok
test conn::tests::fails_here ... FAILED
test conn::tests::ignored_here ... ignored, needs a network
test conn::tests::panics_as_it_should - should panic ... ok
test conn::tests::twice ... ok
test stream::tests::twice ... ok
test wire::tests::passes_in_one_binary_fails_in_another ... ok

failures:
    conn::tests::fails_here

test result: FAILED. 5 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out
     Running tests/tokio_api.rs (target/debug/deps/tokio_api-0123456789abcdef)

running 1 test
test wire::tests::passes_in_one_binary_fails_in_another ... FAILED
";

#[test]
fn the_ci_check_passes_only_tests_that_passed_in_the_log() {
    for passing in ["passes", "panics_as_it_should"] {
        let (ok, printed) = run_ci_check(passing, &row_naming(passing), LOG);
        assert!(ok, "{passing} passed in the log, yet:\n{printed}");
    }
    for (failing, says) in [
        ("fails_here", "fails_here: FAILED"),
        ("ignored_here", "ignored_here: ignored"),
        ("not_in_the_log", "not_in_the_log: not in the log"),
        ("twice", "twice: ambiguous"),
        (
            "passes_in_one_binary_fails_in_another",
            "passes_in_one_binary_fails_in_another: FAILED",
        ),
    ] {
        let (ok, printed) = run_ci_check(failing, &row_naming(failing), LOG);
        assert!(
            !ok,
            "{failing} did not pass in the log, yet the check passed:\n{printed}"
        );
        assert!(printed.contains(says), "{failing}: {printed}");
    }
    // One bad name among good ones is enough to fail.
    let map = row_naming("passes") + &row_naming("not_in_the_log");
    assert!(!run_ci_check("one_of_two", &map, LOG).0);
}

#[test]
fn the_ci_check_reads_this_map_and_counts_it_as_this_test_does() {
    // A log in which every named test passed: the check must pass, and its
    // totals must be this file's.
    let text = map_text();
    let log: String = named_tests_by_line(&text)
        .iter()
        .map(|name| format!("test some::module::{name} ... ok\n"))
        .collect();
    let (ok, printed) = run_ci_check("this_map", &text, &log);
    assert!(ok, "{printed}");
    let rows = map().requirement;
    let of = |status: &str| rows.iter().filter(|r| r.status == status).count();
    let must_unmet = rows
        .iter()
        .filter(|r| r.is_must() && r.status == "not-met")
        .count();
    let totals = format!(
        "{:<5} {:<10} {:>5} {:>8} {:>15} {:>5}",
        "all",
        "all",
        of("met"),
        of("not-met"),
        of("not-applicable"),
        rows.len()
    );
    assert!(printed.contains(&totals), "want {totals:?} in:\n{printed}");
    assert!(
        printed.contains(&format!("{must_unmet} MUST / MUST NOT rows not met")),
        "{printed}"
    );
}
