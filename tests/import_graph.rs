//! The file-level import graph of `src/` has no circles (DESIGN §3's layers,
//! kept per file): no file imports from a file that imports it back, directly
//! or round a longer loop, except a handle type and its streams. And the
//! async API stands beside the blocking one: `src/tokio/` imports nothing
//! from `src/blocking/`.
//!
//! An import is any path a file names into the crate: a `use` item (`crate::`,
//! `super::`, `self::`, a child module, a name an earlier `use` bound to a
//! module) or the same path written inline (`impl super::Connection`). Each
//! resolves to the file that holds the longest module prefix of the path, so
//! `crate::conn::CloseReason` is an import of `src/conn/mod.rs`, whichever
//! file defines `CloseReason`. `mod child;` declarations are not imports.
//!
//! A module's own file composes its parts: `mod frame; pub use
//! frame::Frame;` in `wire/mod.rs` is the module's facade, not a dependency
//! on a peer, so a file's imports from its own submodules are not counted.
//! The other way is: `wire/frame.rs` taking `super::WireError` depends on
//! `wire/mod.rs`, and if `wire/mod.rs` needed something that needs
//! `frame.rs` back (a sibling, another module), that is a circle.
//!
//! A small lexer stands in for a Rust parser: it skips comments, strings and
//! character literals, tracks inline `mod name { … }` blocks (so `super::`
//! inside `mod tests` means the file's own module), and reads `use` trees.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// File pairs that may import each other: a handle type and its streams.
const ALLOWED_PAIRS: &[(&str, &str)] = &[
    ("blocking/connection.rs", "blocking/stream.rs"),
    ("tokio/connection.rs", "tokio/recv.rs"),
    ("tokio/connection.rs", "tokio/send.rs"),
];

#[test]
fn no_file_in_src_imports_a_file_that_imports_it_back() {
    let graph = ImportGraph::of_crate(&crate_src());
    let circles = graph.circles(ALLOWED_PAIRS);
    assert!(
        circles.is_empty(),
        "import circles among files in src/ (open each, e.g. by moving the shared item \
         to the lower file or the crate root):\n{}",
        circles.join("\n")
    );
}

#[test]
fn tokio_api_imports_nothing_from_the_blocking_api() {
    let graph = ImportGraph::of_crate(&crate_src());
    let offending: Vec<String> = graph
        .edges
        .iter()
        .flat_map(|(from, tos)| tos.iter().map(move |(to, why)| (from, to, why)))
        .filter(|(from, to, _)| from.starts_with("tokio/") && is_blocking(to))
        .map(|(from, to, why)| format!("  src/{from} -> src/{to} ({why})"))
        .collect();
    assert!(
        offending.is_empty(),
        "src/tokio/ imports from src/blocking/:\n{}",
        offending.join("\n")
    );
}

/// The checker itself finds what it is meant to find: a two-file circle, a
/// three-file one, `super::` inside an inline test module (no circle), and
/// an allowed pair.
#[test]
fn checker_finds_circles_through_use_items_and_inline_paths() {
    let files = [
        (
            "lib.rs",
            "pub mod a; pub mod b; pub mod c; pub mod h; pub use c::C;",
        ),
        ("a.rs", "use crate::b::Thing; pub struct A;"),
        (
            "b.rs",
            "pub struct Thing; fn f() -> crate::a::A { todo!() }",
        ),
        (
            "c/mod.rs",
            "mod x; mod y; pub use x::X; pub struct C(crate::d::D);",
        ),
        ("c/x.rs", "use super::y::{self, Y as Why}; pub struct X;"),
        (
            "c/y.rs",
            "use crate::c::C; // use crate::a::A;\npub struct Y;",
        ),
        ("d.rs", "use crate::c; pub struct D(c::x::X);"),
        (
            "h/mod.rs",
            "mod conn; mod stream; #[cfg(test)] mod tests { use super::*; }",
        ),
        ("h/conn.rs", "use super::stream::S; pub struct H;"),
        (
            "h/stream.rs",
            "use super::conn::H; pub struct S; const T: &str = \"crate::a::A\";",
        ),
    ];
    let graph = ImportGraph::from_sources(
        files
            .iter()
            .map(|(path, text)| (path.to_string(), text.to_string())),
    );
    let circles = graph.circles(&[("h/conn.rs", "h/stream.rs")]);
    assert_eq!(circles.len(), 2, "{circles:#?}");
    assert!(circles[0].starts_with("  a.rs <-> b.rs\n"), "{circles:#?}");
    // c/mod.rs -> c/x.rs alone is the module composing its parts; through d.rs it is a circle.
    assert!(
        circles[1].starts_with("  c/mod.rs <-> c/x.rs <-> c/y.rs <-> d.rs\n"),
        "{circles:#?}"
    );
    assert_eq!(
        graph.circles(&[]).len(),
        3,
        "the allowed pair is a circle without the allowance"
    );
}

fn crate_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn is_blocking(file: &str) -> bool {
    file == "blocking.rs" || file.starts_with("blocking/")
}

/// Files (paths relative to the crate's `src/`) and what each imports.
struct ImportGraph {
    /// from → (to → the first path that made the edge).
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl ImportGraph {
    fn of_crate(src: &Path) -> Self {
        let mut files = Vec::new();
        collect_rs_files(src, src, &mut files);
        Self::from_sources(files.into_iter().map(|rel| {
            let text = std::fs::read_to_string(src.join(&rel))
                .unwrap_or_else(|e| panic!("read src/{rel}: {e}"));
            (rel, text)
        }))
    }

    fn from_sources(files: impl Iterator<Item = (String, String)>) -> Self {
        let files: Vec<(String, Vec<Token>)> =
            files.map(|(path, text)| (path, lex(&text))).collect();

        // Every module the crate has, file-backed or inline, and the file holding it.
        let mut modules: BTreeMap<Vec<String>, String> = BTreeMap::new();
        for (path, tokens) in &files {
            let base = module_of_file(path);
            modules.insert(base.clone(), path.clone());
            walk(tokens, &base, |event| {
                if let Event::InlineModule(module) = event {
                    modules.insert(module, path.clone());
                }
            });
        }

        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (path, tokens) in &files {
            let base = module_of_file(path);
            let out = edges.entry(path.clone()).or_default();
            // Names a `use` bound to a module of this crate, per module of the file.
            let mut aliases: BTreeMap<(Vec<String>, String), Vec<String>> = BTreeMap::new();
            walk(tokens, &base, |event| {
                let (module, segments, alias) = match event {
                    Event::InlineModule(_) => return,
                    Event::Path {
                        module,
                        segments,
                        alias,
                    } => (module, segments, alias),
                };
                let Some(full) = resolve(&module, &segments, &modules, &aliases) else {
                    return;
                };
                if let Some(alias) = alias {
                    if modules.contains_key(&full) {
                        aliases.insert((module.clone(), alias), full.clone());
                    }
                }
                let holder = (0..=full.len())
                    .rev()
                    .find_map(|n| modules.get(&full[..n]))
                    .expect("the crate root is a module");
                let into_own_submodule = module_of_file(holder).starts_with(&base);
                if holder != path && !into_own_submodule {
                    out.entry(holder.clone())
                        .or_insert_with(|| segments.join("::"));
                }
            });
        }
        Self { edges }
    }

    /// Each strongly connected set of files (after dropping the allowed
    /// pairs' edges between each other), as a line naming the files and the
    /// edges that close it. Sorted, so the output is stable.
    fn circles(&self, allowed: &[(&str, &str)]) -> Vec<String> {
        let allowed = |a: &str, b: &str| {
            allowed
                .iter()
                .any(|&(x, y)| (a == x && b == y) || (a == y && b == x))
        };
        let nodes: Vec<&String> = self.edges.keys().collect();
        let index: BTreeMap<&String, usize> =
            nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let successors: Vec<Vec<usize>> = nodes
            .iter()
            .map(|from| {
                self.edges[*from]
                    .keys()
                    .filter(|to| !allowed(from, to))
                    .filter_map(|to| index.get(to).copied())
                    .collect()
            })
            .collect();

        let mut lines = Vec::new();
        for component in strongly_connected(&successors) {
            if component.len() < 2 {
                continue;
            }
            let members: BTreeSet<&String> = component.iter().map(|&i| nodes[i]).collect();
            let mut line = format!(
                "  {}\n",
                members
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(" <-> ")
            );
            for from in &members {
                for (to, why) in &self.edges[*from] {
                    if members.contains(to) && !allowed(from, to) {
                        line.push_str(&format!("      {from} -> {to} ({why})\n"));
                    }
                }
            }
            lines.push(line);
        }
        lines.sort();
        lines
    }
}

fn collect_rs_files(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_rs_files(root, &path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let rel = path.strip_prefix(root).expect("under the root");
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// `lib.rs` → [], `a/mod.rs` and `a.rs` → [a], `a/b.rs` → [a, b].
fn module_of_file(path: &str) -> Vec<String> {
    let mut parts: Vec<String> = path.split('/').map(str::to_owned).collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "mod.rs" => {}
        other => parts.push(other.trim_end_matches(".rs").to_owned()),
    }
    parts
}

/// The module path a path written in `module` names, or `None` when it leads
/// outside the crate (std, a dependency, a local item).
fn resolve(
    module: &[String],
    segments: &[String],
    modules: &BTreeMap<Vec<String>, String>,
    aliases: &BTreeMap<(Vec<String>, String), Vec<String>>,
) -> Option<Vec<String>> {
    let (first, rest) = segments.split_first()?;
    let mut base: Vec<String> = match first.as_str() {
        "crate" => Vec::new(),
        "self" => module.to_vec(),
        "super" => module[..module.len().checked_sub(1)?].to_vec(),
        name => {
            let mut child = module.to_vec();
            child.push(name.to_owned());
            if modules.contains_key(&child) {
                child
            } else {
                aliases.get(&(module.to_vec(), name.to_owned()))?.clone()
            }
        }
    };
    let mut rest = rest.iter().peekable();
    if first == "super" {
        while rest.peek().is_some_and(|s| *s == "super") {
            rest.next();
            base.pop()?;
        }
    }
    base.extend(rest.filter(|s| *s != "self").cloned());
    Some(base)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

enum Event {
    InlineModule(Vec<String>),
    Path {
        module: Vec<String>,
        segments: Vec<String>,
        /// The name a `use` binds the path to.
        alias: Option<String>,
    },
}

/// Walks a file's tokens, reporting each inline module and each path into
/// the crate together with the module it is written in.
fn walk(tokens: &[Token], base: &[String], mut report: impl FnMut(Event)) {
    let mut module = base.to_vec();
    // Brace depth at which each open inline module closes.
    let mut open_modules: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Punct('{') => depth += 1,
            Token::Punct('}') => {
                depth = depth.saturating_sub(1);
                if open_modules.last() == Some(&depth) {
                    open_modules.pop();
                    module.pop();
                }
            }
            Token::Ident(kw) if kw == "mod" => {
                if let (Some(Token::Ident(name)), Some(Token::Punct('{'))) =
                    (tokens.get(i + 1), tokens.get(i + 2))
                {
                    module.push(name.clone());
                    report(Event::InlineModule(module.clone()));
                    open_modules.push(depth);
                    depth += 1;
                    i += 3;
                    continue;
                }
            }
            Token::Ident(kw) if kw == "use" => {
                let mut j = i + 1;
                let mut found = Vec::new();
                parse_use_tree(tokens, &mut j, Vec::new(), &mut found);
                for (segments, alias) in found {
                    report(Event::Path {
                        module: module.clone(),
                        segments,
                        alias,
                    });
                }
                i = j;
                continue;
            }
            Token::Ident(first)
                if tokens.get(i + 1) == Some(&Token::PathSep)
                    && !preceded_by_macro_dollar_or_visibility(tokens, i) =>
            {
                let mut segments = vec![first.clone()];
                let mut j = i + 1;
                while tokens.get(j) == Some(&Token::PathSep) {
                    match tokens.get(j + 1) {
                        Some(Token::Ident(next)) => {
                            segments.push(next.clone());
                            j += 2;
                        }
                        _ => break,
                    }
                }
                report(Event::Path {
                    module: module.clone(),
                    segments,
                    alias: None,
                });
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// `$crate::…` inside a macro names the macro's own crate wherever it
/// expands; `pub(in crate::a)` is a visibility, not an import; `x::y` after
/// `::` is the tail of a path already read.
fn preceded_by_macro_dollar_or_visibility(tokens: &[Token], i: usize) -> bool {
    match i.checked_sub(1).map(|p| &tokens[p]) {
        Some(Token::Punct('$')) | Some(Token::PathSep) => true,
        Some(Token::Ident(word)) => word == "in",
        _ => false,
    }
}

/// Reads a use tree starting at `tokens[*i]`, up to and including its `;`
/// (at the top level) or up to the `,`/`}` that ends it (nested).
fn parse_use_tree(
    tokens: &[Token],
    i: &mut usize,
    prefix: Vec<String>,
    found: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let mut path = prefix;
    if tokens.get(*i) == Some(&Token::PathSep) {
        // `use ::std::…`: a leading separator names an external crate, which
        // no module of this crate is called.
        *i += 1;
        path.push("::".to_owned());
    }
    loop {
        match tokens.get(*i) {
            Some(Token::Ident(segment)) => {
                path.push(segment.clone());
                *i += 1;
                match tokens.get(*i) {
                    Some(Token::PathSep) => *i += 1,
                    Some(Token::Ident(kw)) if kw == "as" => {
                        let alias = match tokens.get(*i + 1) {
                            Some(Token::Ident(name)) if name != "_" => Some(name.clone()),
                            _ => None,
                        };
                        *i += 2;
                        found.push((path, alias));
                        break;
                    }
                    _ => {
                        let alias = path.last().filter(|s| *s != "self").cloned();
                        let alias = alias.or_else(|| path.iter().rev().nth(1).cloned());
                        found.push((path, alias));
                        break;
                    }
                }
            }
            Some(Token::Punct('*')) => {
                *i += 1;
                found.push((path, None));
                break;
            }
            Some(Token::Punct('{')) => {
                *i += 1;
                loop {
                    match tokens.get(*i) {
                        Some(Token::Punct('}')) => {
                            *i += 1;
                            break;
                        }
                        Some(Token::Punct(',')) => *i += 1,
                        None => return,
                        _ => {
                            let before = *i;
                            parse_use_tree(tokens, i, path.clone(), found);
                            if *i == before {
                                *i += 1; // Something unexpected; never stall.
                            }
                        }
                    }
                }
                break;
            }
            _ => break,
        }
    }
    // At the top level, skip to the end of the item.
    while let Some(token) = tokens.get(*i) {
        match token {
            Token::Punct(';') => {
                *i += 1;
                return;
            }
            Token::Punct(',') | Token::Punct('}') => return,
            _ => *i += 1,
        }
    }
}

/// Identifiers, `::` and single punctuation; comments, strings, character
/// literals and numbers are dropped.
fn lex(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut nesting = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    nesting += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    nesting -= 1;
                    i += 2;
                    if nesting == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == '"' {
            i = skip_string(&chars, i + 1);
        } else if (c == 'r' || (c == 'b' && at(i + 1) == 'r'))
            && matches!(at(i + 1 + usize::from(c == 'b')), '"' | '#')
            && raw_string_start(&chars, i + 1 + usize::from(c == 'b')).is_some()
        {
            let start = i + 1 + usize::from(c == 'b');
            let (hashes, body) = raw_string_start(&chars, start).expect("checked");
            i = body;
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    i += 1 + hashes;
                    break;
                }
                i += 1;
            }
        } else if c == 'b' && at(i + 1) == '"' {
            i = skip_string(&chars, i + 2);
        } else if c == 'b' && at(i + 1) == '\'' {
            i = skip_char_literal(&chars, i + 1).unwrap_or(i + 2);
        } else if c == '\'' {
            // A character literal, or a lifetime / label (dropped either way).
            i = skip_char_literal(&chars, i).unwrap_or(i + 1);
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            if !c.is_ascii_digit() {
                let word: String = chars[start..i].iter().collect();
                tokens.push(Token::Ident(word.trim_start_matches("r#").to_owned()));
            }
        } else if c == ':' && at(i + 1) == ':' {
            tokens.push(Token::PathSep);
            i += 2;
        } else {
            tokens.push(Token::Punct(c));
            i += 1;
        }
    }
    tokens
}

fn skip_string(chars: &[char], mut i: usize) -> usize {
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `r"…"` / `r#"…"#`: the number of hashes and where the body starts.
fn raw_string_start(chars: &[char], mut i: usize) -> Option<(usize, usize)> {
    let mut hashes = 0;
    while chars.get(i) == Some(&'#') {
        hashes += 1;
        i += 1;
    }
    (chars.get(i) == Some(&'"')).then_some((hashes, i + 1))
}

/// At a `'`: the index after a character literal, or `None` for a lifetime.
fn skip_char_literal(chars: &[char], i: usize) -> Option<usize> {
    match chars.get(i + 1)? {
        '\\' => {
            let mut j = i + 2;
            while j < chars.len() && chars[j] != '\'' && j < i + 12 {
                j += 1;
            }
            Some(j + 1)
        }
        _ if chars.get(i + 2) == Some(&'\'') => Some(i + 3),
        _ => None,
    }
}

/// Tarjan's strongly connected components.
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for k in 0..s.successors[v].len() {
            let w = s.successors[v][k];
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(w_index) if s.on_stack[w] => s.low[v] = s.low[v].min(w_index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let n = successors.len();
    let mut state = State {
        successors,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            visit(&mut state, v);
        }
    }
    state.components
}
