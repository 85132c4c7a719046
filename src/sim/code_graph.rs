//! Which source files a study kind's results can depend on, and their fingerprint: read by
//! `build.rs` (which includes this file) to embed every kind's fingerprint in dptune, and by
//! the tests, which fingerprint an edited copy of the tree. Plain `std`, no crate paths.
//!
//! A file's fingerprint hashes the source files it reaches through `crate::`, `super::`,
//! `self::` and child-module paths (transitively, `use` groups expanded), the files that add
//! inherent impls or impls of our traits to a type it reaches, the files they
//! `include_str!`/`include_bytes!`, and `Cargo.lock`. The analysis is textual and errs towards
//! "stale": a path that merely *could* name a module counts, a module counts whole, and a
//! type's impls anywhere count. `#[cfg(test)] mod … { … }` blocks are neither followed (tests
//! reach anything) nor hashed (editing a test changes no result). Two kinds of file stop the walk: the study registry (a kind depends on it, not on
//! the other kinds it lists) and drawing-only leaves (plots, heat maps, declarative figures,
//! the progress bar), which never touch a parquet table.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Every file under `src/sim/` (but the drawing-only ones) with its fingerprint and the
/// files (with their hashes) that make it up, for the crate at `root`.
#[allow(clippy::type_complexity)]
pub fn fingerprints(root: &Path) -> Vec<(String, String, Vec<(String, String)>)> {
    let mut files = Vec::new();
    collect(&root.join("src"), root, &mut files);
    files.sort();
    let sources: BTreeMap<String, String> = files
        .iter()
        .map(|f| {
            (
                f.clone(),
                fs::read_to_string(root.join(f)).unwrap_or_default(),
            )
        })
        .collect();
    let graph = Graph::new(&sources);
    let lock = fs::read(root.join("Cargo.lock")).unwrap_or_default();
    let mut out = Vec::new();
    for file in files.iter().filter(|f| f.starts_with("src/sim/")) {
        if DRAWING_ONLY.contains(&file.as_str()) {
            continue;
        }
        let mut entries: Vec<(String, String)> = Vec::new();
        for f in &graph.closure(file) {
            let source = match f.as_str() {
                REGISTRY => registry_source(&sources[f]),
                _ => hashed_source(&sources[f]),
            };
            entries.push((f.clone(), hex(fnv1a(source.as_bytes()))));
            for inc in &graph.includes[f] {
                let bytes = fs::read(root.join(inc)).unwrap_or_default();
                entries.push((inc.clone(), hex(fnv1a(&bytes))));
            }
        }
        entries.push(("Cargo.lock".into(), hex(fnv1a(&lock))));
        entries.sort();
        entries.dedup();
        let joined: String = entries.iter().map(|(f, h)| format!("{f}={h}\n")).collect();
        out.push((file.clone(), hex(fnv1a(joined.as_bytes())), entries));
    }
    out
}

/// The registry of study kinds: a kind depends on it (it is hashed) but not on the other
/// kinds it lists.
const REGISTRY: &str = "src/sim/studies/mod.rs";

/// Files that only draw or print what is already computed.
const DRAWING_ONLY: &[&str] = &[
    "src/sim/plot.rs",
    "src/sim/heatmap.rs",
    "src/sim/declarative.rs",
    "src/sim/progress.rs",
];

fn collect(dir: &Path, root: &Path, out: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, root, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push(rel);
        }
    }
}

/// FNV-1a, 64 bit: a stable hash (unlike std's) for file names, stream ids and code.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn hex(h: u64) -> String {
    format!("{h:016x}")
}

/// Module paths → files, and each file's direct dependencies.
struct Graph {
    deps: BTreeMap<String, BTreeSet<String>>,
    includes: BTreeMap<String, Vec<String>>,
}

impl Graph {
    fn new(sources: &BTreeMap<String, String>) -> Graph {
        // Module path (segments after `crate`) of each file.
        let mut module_file: BTreeMap<Vec<String>, String> = BTreeMap::new();
        let mut module_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for f in sources.keys() {
            let rel = f.strip_prefix("src/").unwrap().strip_suffix(".rs").unwrap();
            let mut segs: Vec<String> = rel.split('/').map(String::from).collect();
            if segs
                .last()
                .is_some_and(|s| s == "mod" || s == "lib" || s == "main")
            {
                segs.pop();
            }
            if rel == "main" {
                continue;
            }
            module_file.insert(segs.clone(), f.clone());
            module_of.insert(f.clone(), segs);
        }
        let is_module = |m: &[String]| module_file.contains_key(m);
        let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut includes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        // Types each file defines, and the types each file adds `impl`s to.
        let mut defines: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut impl_for: Vec<(String, String)> = Vec::new();
        let mut traits = BTreeSet::new();
        let mut impls: Vec<(String, Vec<String>)> = Vec::new();
        for (f, text) in sources {
            let dir = Path::new(f).parent().unwrap();
            includes.insert(
                f.clone(),
                included(text)
                    .into_iter()
                    .map(|inc| normalise(&dir.join(inc)))
                    .collect(),
            );
            let tokens = without_tests(tokenize(text));
            let Some(here) = module_of.get(f) else {
                deps.insert(f.clone(), BTreeSet::new());
                continue;
            };
            let mut mine = BTreeSet::new();
            for path in paths(&tokens) {
                if let Some(m) = resolve(here, &path, &is_module) {
                    mine.insert(module_file[&m].clone());
                }
            }
            mine.remove(f);
            deps.insert(f.clone(), mine);
            let mut defined = BTreeSet::new();
            for w in tokens.windows(2) {
                if matches!(w[0].as_str(), "struct" | "enum" | "trait" | "union") {
                    defined.insert(w[1].clone());
                }
                if w[0] == "trait" {
                    traits.insert(w[1].clone());
                }
            }
            defines.insert(f.clone(), defined);
            impls.push((f.clone(), tokens));
        }
        for (f, tokens) in &impls {
            for t in impl_targets(tokens, &traits) {
                impl_for.push((f.clone(), t));
            }
        }
        // A file that adds an impl to a type defined elsewhere (in a file it names, so not a
        // namesake) is a dependency of that file.
        for (g, t) in impl_for {
            for (f, defined) in &defines {
                if f != &g && defined.contains(&t) && deps[&g].contains(f) {
                    deps.get_mut(f).unwrap().insert(g.clone());
                }
            }
        }
        Graph { deps, includes }
    }

    fn closure(&self, start: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.to_string()];
        while let Some(f) = todo.pop() {
            if DRAWING_ONLY.contains(&f.as_str()) || !seen.insert(f.clone()) {
                continue;
            }
            if f == REGISTRY && f != start {
                continue;
            }
            if let Some(d) = self.deps.get(&f) {
                todo.extend(d.iter().cloned());
            }
        }
        seen
    }
}

fn normalise(p: &Path) -> String {
    let mut out: Vec<String> = Vec::new();
    for c in p.components() {
        match c.as_os_str().to_string_lossy().as_ref() {
            ".." => {
                out.pop();
            }
            "." => {}
            s => out.push(s.to_string()),
        }
    }
    out.join("/")
}

/// The files named by `include_str!`/`include_bytes!` (relative to the including file), but
/// documentation (`.md`: the README the crate docs include).
fn included(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for mac in ["include_str!(\"", "include_bytes!(\""] {
        let mut rest = text;
        while let Some(i) = rest.find(mac) {
            rest = &rest[i + mac.len()..];
            if let Some(end) = rest.find('"').filter(|&e| !rest[..e].ends_with(".md")) {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// Identifiers and punctuation (`::`, `{`, `}`, `,`, `;`, `<`, `>` …), without comments,
/// string and char literals.
fn tokenize(text: &str) -> Vec<String> {
    lex(text)
        .into_iter()
        .map(|(s, e)| text.get(s..e).unwrap_or("?").to_string())
        .collect()
}

/// The byte spans of [`tokenize`]'s tokens.
fn lex(text: &str) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if c == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // A raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push((i, i + 1));
                i += 1;
                continue;
            }
            j += 1;
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            while j < b.len() && !b[j..].starts_with(&close) {
                j += 1;
            }
            i = j + close.len();
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == b'\'' {
            // A char literal ('a', '\n', '\u{..}') or a lifetime ('a).
            if b.get(i + 1) == Some(&b'\\') {
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
            } else {
                i += 1;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((s, i));
        } else if ((c == b'-' || c == b'=') && b.get(i + 1) == Some(&b'>'))
            || (c == b':' && b.get(i + 1) == Some(&b':'))
        {
            // `->`, `=>` and `::`, one token each.
            out.push((i, i + 2));
            i += 2;
        } else if c.is_ascii_whitespace() {
            i += 1;
        } else {
            // Punctuation, or a character outside ASCII taken whole.
            let len = text
                .get(i..)
                .and_then(|t| t.chars().next())
                .map_or(1, char::len_utf8);
            out.push((i, i + len));
            i += len;
        }
    }
    out
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
}

/// Every path `a::b::c` in the tokens, with `use` groups `a::{b, c::d}` expanded.
fn paths(tokens: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if is_ident(&tokens[i])
            && tokens.get(i + 1).is_some_and(|t| t == "::")
            && (i == 0 || tokens[i - 1] != "::")
        {
            i = path_at(tokens, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the path starting at `i` (after `prefix`), pushing it (and its group members) to
/// `out`; returns the index after it.
fn path_at(
    tokens: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some(t) if is_ident(t) => {
                prefix.push(t.to_string());
                i += 1;
                if tokens.get(i).is_some_and(|t| t == "::") {
                    i += 1;
                    continue;
                }
                out.push(prefix);
                return i;
            }
            Some("{") => {
                i += 1;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        None => return i,
                        Some("}") => return i + 1,
                        Some(",") => i += 1,
                        // `x as y`: the alias names nothing of ours.
                        Some("as") => i += 2,
                        Some("*") => {
                            out.push(prefix.clone());
                            i += 1;
                        }
                        Some(t) if is_ident(t) => i = path_at(tokens, i, prefix.clone(), out),
                        Some(_) => i += 1,
                    }
                }
            }
            _ => {
                // `a::*`, `a::<T>` or the end: the prefix itself.
                out.push(prefix);
                return i;
            }
        }
    }
}

/// The module a path in module `here` reaches (the deepest module it names), if any of ours.
fn resolve(
    here: &[String],
    path: &[String],
    is_module: &dyn Fn(&[String]) -> bool,
) -> Option<Vec<String>> {
    let mut m: Vec<String> = here.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            m.clear();
            rest = &path[1..];
        }
        Some("self") => rest = &path[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                m.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = m.clone();
            child.push(first.to_string());
            if !is_module(&child) {
                return None;
            }
        }
        None => return None,
    }
    for seg in rest {
        let mut child = m.clone();
        child.push(seg.clone());
        if is_module(&child) {
            m = child;
        } else {
            break;
        }
    }
    Some(m)
}

/// The types given an `impl` at item level: inherent ones (`impl T {`) and those of a trait
/// of ours (`impl Tr for T`, with `Tr` in `traits`); a std trait's impl (`From`, `Display`)
/// adds nothing a caller of `T` could reach without naming the other side.
fn impl_targets(tokens: &[String], traits: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let item_level =
            i == 0 || matches!(tokens[i - 1].as_str(), "}" | ";" | "]" | "{" | "unsafe");
        if t != "impl" || !item_level {
            continue;
        }
        let mut depth = 0i32;
        let mut last = None;
        let mut trait_name = None;
        for tok in &tokens[i + 1..] {
            match tok.as_str() {
                "<" => depth += 1,
                ">" => depth -= 1,
                "{" | "where" | ";" if depth <= 0 => break,
                "for" if depth <= 0 => trait_name = last.take(),
                s if depth <= 0 && is_ident(s) && s != "dyn" && s != "mut" => last = Some(s),
                _ => {}
            }
        }
        let ours = trait_name.is_none_or(|tr| traits.contains(tr));
        if let (Some(l), true) = (last, ours) {
            out.push(l.to_string());
        }
    }
    out
}

/// The tokens without `#[cfg(test)] mod … { … }` blocks (tests reach anything).
fn without_tests(tokens: Vec<String>) -> Vec<String> {
    let blocks = test_blocks(&tokens);
    tokens
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !blocks.iter().any(|&(s, e)| (s..=e).contains(i)))
        .map(|(_, t)| t)
        .collect()
}

/// The source a fingerprint hashes: the file without its `#[cfg(test)] mod … { … }` blocks,
/// so that editing a test never makes a result stale (comments and the rest kept as written).
fn hashed_source(text: &str) -> String {
    let spans = lex(text);
    let tokens: Vec<String> = spans
        .iter()
        .map(|&(s, e)| text.get(s..e).unwrap_or("?").to_string())
        .collect();
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    for (first, last) in test_blocks(&tokens) {
        // Both ends are ASCII tokens (`#` and `}`), so byte offsets are char boundaries.
        out.push_str(&text[from..spans[first].0]);
        from = spans[last.min(spans.len() - 1)].1;
    }
    out.push_str(&text[from..]);
    out
}

/// The registry as a kind's fingerprint hashes it: without the lines that only list a kind
/// (`pub mod tuning;`, `tuning::KIND,`). No kind's results depend on which other kinds exist,
/// so registering a new kind leaves every other kind's results fresh; the rest of the file
/// (the `StudyKind` type, `find`) is hashed as written.
fn registry_source(text: &str) -> String {
    hashed_source(text)
        .lines()
        .filter(|line| !lists_a_kind(line.trim()))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `pub mod NAME;` or `NAME::CONST,` (a registry line naming one kind).
fn lists_a_kind(line: &str) -> bool {
    let name = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if let Some(module) = line
        .strip_prefix("pub mod ")
        .and_then(|r| r.strip_suffix(';'))
    {
        return name(module);
    }
    match line.strip_suffix(',').and_then(|r| r.split_once("::")) {
        Some((module, kind)) => {
            name(module) && kind.chars().all(|c| c.is_ascii_uppercase() || c == '_')
        }
        None => false,
    }
}

/// The token ranges (first, last, inclusive) of `#[cfg(test)] mod NAME { … }` blocks.
fn test_blocks(tokens: &[String]) -> Vec<(usize, usize)> {
    let attr = ["#", "[", "cfg", "(", "test", ")", "]"];
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let is_attr = tokens.len() >= i + attr.len()
            && tokens[i..i + attr.len()]
                .iter()
                .zip(attr)
                .all(|(a, b)| a == b);
        if is_attr
            && tokens.get(i + attr.len()).is_some_and(|t| t == "mod")
            && tokens.get(i + attr.len() + 2).is_some_and(|t| t == "{")
        {
            let mut j = i + attr.len() + 2;
            let mut depth = 0;
            while j < tokens.len() {
                match tokens[j].as_str() {
                    "{" => depth += 1,
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            out.push((i, j.min(tokens.len() - 1)));
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[Vec<String>]) -> Vec<String> {
        v.iter().map(|p| p.join("::")).collect()
    }

    #[test]
    fn use_groups_expand_and_comments_and_strings_are_skipped() {
        let t = tokenize(
            "use crate::a::{b::{c, d}, e as f, *};\n// crate::x::y\nlet s = \"crate::z\";\n\
             let r = r#\"super::q\"#; let c = '\\''; fn g<'a>() -> super::h::K { self::m::n() }",
        );
        assert_eq!(
            strs(&paths(&t)),
            [
                "crate::a::b::c",
                "crate::a::b::d",
                "crate::a::e",
                "crate::a",
                "super::h::K",
                "self::m::n"
            ]
        );
    }

    #[test]
    fn paths_resolve_to_the_deepest_module_of_ours() {
        let modules: BTreeSet<Vec<String>> =
            [vec![], vec!["a".into()], vec!["a".into(), "b".into()]]
                .into_iter()
                .collect();
        let is_module = |m: &[String]| modules.contains(m);
        let p = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        let here = vec!["a".to_string()];
        assert_eq!(
            resolve(&here, &p("crate::a::b::Item"), &is_module),
            Some(p("a::b"))
        );
        assert_eq!(resolve(&here, &p("b::f"), &is_module), Some(p("a::b")));
        assert_eq!(resolve(&here, &p("super::Error"), &is_module), Some(vec![]));
        assert_eq!(resolve(&here, &p("std::fs::read"), &is_module), None);
    }

    #[test]
    fn the_hashed_source_leaves_out_test_modules_alone() {
        let code = "const K: &str = \"a}\"; // }\nfn f() -> u8 { 1 }\n";
        let with =
            |test: &str| format!("{code}#[cfg(test)]\nmod tests {{ {test} }}\nfn g() {{}}\n");
        let h = |t: &str| fnv1a(hashed_source(t).as_bytes());
        assert_eq!(
            hashed_source(&with("fn t() { assert!(true) }")),
            format!("{code}\nfn g() {{}}\n")
        );
        assert_eq!(h(&with("fn t() {}")), h(&with("fn u() { let s = \"}\"; }")));
        // Outside the tests every byte counts: code, strings, comments, other attributes.
        assert_ne!(h(&with("")), h(&with("").replace("\"a}\"", "\"b}\"")));
        assert_ne!(h(&with("")), h(&with("").replace("{ 1 }", "{ 2 }")));
        let gated = "#[cfg(test)]\nfn helper() {}\n";
        assert_eq!(hashed_source(gated), gated);
        // Text outside ASCII is kept whole and never split.
        let greek = "fn σ() -> f64 { 1.0 } #[cfg(test)] mod t { const Σ: u8 = 0; }";
        assert_eq!(hashed_source(greek), "fn σ() -> f64 { 1.0 } ");
    }

    #[test]
    fn the_registry_is_hashed_without_the_lines_that_list_kinds() {
        for line in [
            "pub mod tuning;",
            "tuning::KIND,",
            "gp_ucb::BOUNDS,",
            "pub mod a2;",
        ] {
            assert!(lists_a_kind(line), "{line}");
        }
        for line in [
            "pub mod tuning { }",
            "use super::fields::Fields;",
            "tuning::kind(),",
            "pub const STUDIES: &[StudyKind] = &[",
            "pub fn find(name: &str) -> Option<&'static StudyKind> {",
            "pub mod ;",
        ] {
            assert!(!lists_a_kind(line), "{line}");
        }
        let registry = "pub mod a;\npub mod b;\npub struct K;\nconst S: &[K] = &[\n    a::KIND,\n    b::KIND,\n];\n";
        assert_eq!(
            registry_source(registry),
            "pub struct K;\nconst S: &[K] = &[\n];\n"
        );
    }

    #[test]
    fn test_blocks_are_dropped_and_impls_found() {
        let t = without_tests(tokenize(
            "impl Table { } impl Tr for Table { } impl From<X> for Y { }\n\
             #[cfg(test)] mod tests { use crate::x::y; }",
        ));
        assert!(!t.contains(&"x".to_string()));
        let traits: BTreeSet<String> = ["Tr".to_string()].into_iter().collect();
        assert_eq!(impl_targets(&t, &traits), ["Table", "Table"]);
    }
}
