//! The documentation's references hold inside a clone of the repository:
//! every "DESIGN §N" citation names a numbered heading of `docs/design.md`,
//! no file names a path outside the repository, the relative links of the
//! markdown files lead to files that exist, and the README stays short.
//! Reads the repository's files (tracked ones when git is at hand); no
//! network.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's files: `git ls-files` when this is a git checkout,
/// else every file outside build output and hidden directories.
fn files() -> Vec<PathBuf> {
    let listed = Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|out| out.status.success() && !out.stdout.is_empty());
    match listed {
        Some(out) => out
            .stdout
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| root().join(String::from_utf8_lossy(name).as_ref()))
            .filter(|path| path.is_file())
            .collect(),
        None => {
            let mut found = Vec::new();
            walk(&root(), &mut found);
            found
        }
    }
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "results" {
            continue;
        }
        if path.is_dir() {
            walk(&path, found);
        } else {
            found.push(path);
        }
    }
}

/// The text files among `files()`, with their contents.
fn texts() -> Vec<(PathBuf, String)> {
    files()
        .into_iter()
        .filter_map(|path| {
            let bytes = std::fs::read(&path).ok()?;
            let text = String::from_utf8(bytes).ok()?;
            (!text.contains('\0')).then_some((path, text))
        })
        .collect()
}

fn relative(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The section numbers of `docs/design.md`'s headings: "## 3. Wire format"
/// gives "3", "### 3.1 Two versions" gives "3.1".
fn design_sections() -> BTreeSet<String> {
    let design = std::fs::read_to_string(root().join("docs/design.md")).expect("docs/design.md");
    design
        .lines()
        .filter_map(|line| {
            let title = line.trim_start_matches('#');
            (title.len() < line.len()).then_some(title.trim_start())
        })
        .filter_map(section_number)
        .collect()
}

/// Reads a section number ("3" or "3.1") at the start of `text`.
fn section_number(text: &str) -> Option<String> {
    let number: String = text
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let number = number.trim_end_matches('.');
    (!number.is_empty()).then(|| number.to_string())
}

/// Every section a "DESIGN §N" citation in `text` names, with its line:
/// the number after "DESIGN §", and those of a list that follows it
/// ("DESIGN §3, §4", "DESIGN §1 and §4").
fn citations(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("DESIGN §") {
            rest = &rest[at + "DESIGN §".len()..];
            let mut cursor = rest;
            while let Some(number) = section_number(cursor) {
                cursor = &cursor[number.len()..];
                found.push((index + 1, number));
                let more = [", §", " and §", ", and §"]
                    .iter()
                    .find_map(|joint| cursor.strip_prefix(joint));
                match more {
                    Some(after) => cursor = after,
                    None => break,
                }
            }
        }
    }
    found
}

#[test]
fn design_has_the_sections_the_code_cites() {
    let sections = design_sections();
    for number in ["1", "2", "3", "3.1", "5", "11", "13"] {
        assert!(sections.contains(number), "docs/design.md has no §{number}");
    }
    let mut unresolved = Vec::new();
    let mut cited = 0;
    for (path, text) in texts() {
        for (line, number) in citations(&text) {
            cited += 1;
            if !sections.contains(&number) {
                unresolved.push(format!("{}:{line}: DESIGN §{number}", relative(&path)));
            }
        }
    }
    assert!(
        cited > 50,
        "found only {cited} DESIGN citations: is the tree being read?"
    );
    assert!(
        unresolved.is_empty(),
        "citations of sections docs/design.md does not have:\n{}",
        unresolved.join("\n")
    );
}

#[test]
fn citations_are_read_with_their_lists() {
    let text = "see DESIGN §3, §4 and DESIGN §3.1; DESIGN §1 and §12.";
    let numbers: Vec<String> = citations(text).into_iter().map(|(_, n)| n).collect();
    assert_eq!(numbers, ["3", "4", "3.1", "1", "12"]);
}

#[test]
fn nothing_names_a_path_outside_the_repository() {
    // Spelled in pieces so that this file does not name them itself.
    let outside = [
        concat!("..", "/shared"),
        concat!("/wo", "rk/"),
        concat!("DESIGN", ".md"),
    ];
    let mut found = Vec::new();
    for (path, text) in texts() {
        for (index, line) in text.lines().enumerate() {
            for needle in outside {
                if line.contains(needle) {
                    found.push(format!("{}:{}: {needle}", relative(&path), index + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "paths outside the repository (the design is docs/design.md):\n{}",
        found.join("\n")
    );
}

/// The relative links of the documents a reader starts from (README.md,
/// SECURITY.md, docs/): result write-ups may link to outputs left out of
/// the repository, these may not.
#[test]
fn markdown_links_lead_to_files() {
    let mut broken = Vec::new();
    for (path, text) in texts() {
        let name = relative(&path);
        let entry = !name.contains('/') || name.starts_with("docs/");
        if !entry || path.extension().and_then(|e| e.to_str()) != Some("md") {
            continue;
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let Some(end) = rest.find(')') else { break };
            let target = &rest[..end];
            let file = target.split('#').next().unwrap_or("");
            let external = target.contains("://") || target.starts_with("mailto:");
            if !external && !file.is_empty() && !file.contains(' ') && !dir.join(file).exists() {
                broken.push(format!("{}: {target}", relative(&path)));
            }
        }
    }
    assert!(
        broken.is_empty(),
        "links to missing files:\n{}",
        broken.join("\n")
    );
}

/// Issue 54: the README is an entry, not a manual (quinn's is 127 lines,
/// neqo's 216); the manual is docs/tools.md.
#[test]
fn the_readme_stays_within_200_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail to docs/ (tools.md, design.md)"
    );
}
