//! The layout docs/architecture.md promises, checked on the source: no two
//! files import each other, the layers import each other in one direction
//! only, the layers below the formatters import none of `output`,
//! `display`, `cli`, only the binary prints on standard error or exits, and
//! the binary (`src/main.rs` and `src/cli/`) stays a thin command line
//! (under 2,000 lines).
//!
//! An import is a `crate::…` or `super::…` path anywhere in a file's code
//! (a `use`, or a path written inline), resolved to the file that defines
//! the module it names. A module's `mod.rs` and the files of its children
//! are one unit: a child using its parent's items through `super::` while
//! the parent re-exports the child is how Rust modules are made, not a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every file under src/: its path from src/ (`peer/mod.rs`) and its text.
fn sources() -> Vec<(String, String)> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    files
        .iter()
        .map(|f| {
            let rel = f
                .strip_prefix(src())
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (rel, std::fs::read_to_string(f).unwrap())
        })
        .collect()
}

/// The module path of a file: `src/cli/peer.rs` is `["cli", "peer"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).expect("a file under src/");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if parts
        .last()
        .is_some_and(|l| l == "mod" || l == "lib" || l == "main")
    {
        parts.pop();
    }
    parts
}

/// The file that defines the longest prefix of `path` that is a module.
fn file_of(path: &[String]) -> Option<PathBuf> {
    for k in (1..=path.len()).rev() {
        let dir = path[..k - 1].iter().fold(src(), |d, c| d.join(c));
        for cand in [
            dir.join(format!("{}.rs", path[k - 1])),
            dir.join(&path[k - 1]).join("mod.rs"),
        ] {
            if cand.is_file() {
                return Some(cand);
            }
        }
    }
    None
}

/// Code without `//` comments (doc comments name paths that are not imports).
fn code(text: &str) -> String {
    text.lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::a::b` / `super::a` path in `code`, braces expanded one
/// level at a time: `crate::{a::X, b::{c, d}}` gives `a::X`, `b::c`, `b::d`.
fn paths(code: &str) -> Vec<(String, Vec<String>)> {
    fn ident(c: char) -> bool {
        c.is_ascii_alphanumeric() || c == '_'
    }
    fn expand(prefix: Vec<String>, rest: &str, out: &mut Vec<Vec<String>>) {
        let mut parts = prefix;
        let mut s = rest;
        loop {
            let n = s.find(|c: char| !ident(c)).unwrap_or(s.len());
            if n > 0 {
                parts.push(s[..n].to_string());
            }
            s = &s[n..];
            let group = if n == 0 {
                Some(s)
            } else {
                s.strip_prefix("::")
            };
            if let Some(r) = group {
                if let Some(inner) = r.strip_prefix('{') {
                    // The group up to its closing brace, split at top-level commas.
                    let (mut depth, mut start) = (0i32, 0usize);
                    for (i, c) in inner.char_indices() {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => {
                                expand(parts.clone(), inner[start..i].trim(), out);
                                return;
                            }
                            '}' => depth -= 1,
                            ',' if depth == 0 => {
                                expand(parts.clone(), inner[start..i].trim(), out);
                                start = i + 1;
                            }
                            _ => {}
                        }
                    }
                    return;
                }
                if n > 0 {
                    s = r;
                    continue;
                }
            }
            out.push(parts);
            return;
        }
    }
    let mut found = Vec::new();
    for base in ["crate::", "super::"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(base) {
            let start = at + i;
            at = start + base.len();
            if start > 0 && code[..start].ends_with(|c: char| ident(c) || c == ':') {
                continue; // `self::super::`, or part of a longer name
            }
            // `super::super::` counts levels.
            let mut rest = &code[at..];
            let mut levels = 1;
            while base == "super::" && rest.starts_with("super::") {
                rest = &rest["super::".len()..];
                levels += 1;
            }
            let mut out = Vec::new();
            expand(Vec::new(), rest, &mut out);
            for p in out {
                found.push((format!("{base}{levels}"), p));
            }
        }
    }
    found
}

/// file -> files it imports.
fn graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut g = BTreeMap::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("source is text");
        let me = module_of(f);
        let mut to = BTreeSet::new();
        for (base, p) in paths(&code(&text)) {
            let full: Vec<String> = if base.starts_with("crate") {
                p
            } else {
                let levels: usize = base["super::".len()..].parse().unwrap_or(1);
                let keep = me.len().saturating_sub(levels);
                me[..keep].iter().cloned().chain(p).collect()
            };
            if let Some(t) = file_of(&full) {
                if &t != f {
                    to.insert(t);
                }
            }
        }
        g.insert(f.clone(), to);
    }
    g
}

/// Whether `a` is the `mod.rs` of the module that `b` belongs to (or the
/// other way round): one unit.
fn parent_and_child(a: &Path, b: &Path) -> bool {
    let is_parent = |p: &Path, c: &Path| {
        p.file_name().is_some_and(|n| n == "mod.rs")
            && c.parent() == p.parent()
            && c.file_name().is_some_and(|n| n != "mod.rs")
    };
    is_parent(a, b) || is_parent(b, a)
}

#[test]
fn no_two_files_import_each_other() {
    let g = graph();
    let mut pairs = Vec::new();
    for (a, to) in &g {
        for b in to {
            if a < b && g.get(b).is_some_and(|t| t.contains(a)) && !parent_and_child(a, b) {
                pairs.push(format!("{} <-> {}", a.display(), b.display()));
            }
        }
    }
    assert!(pairs.is_empty(), "files that import each other: {pairs:#?}");
    assert!(g.len() > 50, "the walk read the source: {} files", g.len());
}

/// The top-level modules as layers: which layers each imports, and that no
/// cycle runs through them (the layer order of docs/architecture.md).
#[test]
fn layers_import_in_one_direction() {
    let g = graph();
    let layer = |f: &Path| module_of(f).first().cloned().unwrap_or_default();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, to) in &g {
        for b in to {
            let (la, lb) = (layer(a), layer(b));
            if !la.is_empty() && !lb.is_empty() && la != lb {
                edges.entry(la).or_default().insert(lb);
            }
        }
    }
    // Depth-first search for a cycle.
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| s == n) {
            return Some(stack[i..].to_vec());
        }
        if done.contains(n) {
            return None;
        }
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, edges, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    for n in edges.keys() {
        let cycle = visit(n, &edges, &mut Vec::new(), &mut done);
        assert!(
            cycle.is_none(),
            "layers import in a cycle: {cycle:?}; all: {edges:#?}"
        );
    }
    // Nothing below the command line imports it.
    for (l, to) in &edges {
        assert!(!to.contains("cli"), "{l} imports cli");
    }
    // The stateless layers stay below the stateful ones.
    for low in ["wire", "output"] {
        for high in ["cli", "peer", "replay", "pipeline"] {
            assert!(
                !edges.get(low).is_some_and(|t| t.contains(high)),
                "{low} imports {high}"
            );
        }
    }
}

/// The layers below the formatters report through their own types (peer
/// records, outcomes, errors, `pipeline::notes`): none imports `output`,
/// `display` or the command line, whatever it imports besides.
#[test]
fn the_layers_below_the_formatters_import_none_of_them() {
    const ABOVE: [&str; 3] = ["output", "display", "cli"];
    let layer = |f: &Path| module_of(f).first().cloned().unwrap_or_default();
    let rel = |f: &Path| f.strip_prefix(src()).unwrap().display().to_string();
    let mut found = BTreeSet::new();
    let mut below = BTreeSet::new();
    for (a, to) in graph() {
        let la = layer(&a);
        if la.is_empty() || ABOVE.contains(&la.as_str()) {
            continue;
        }
        below.insert(la);
        for b in to.iter().filter(|b| ABOVE.contains(&layer(b).as_str())) {
            found.insert(format!("{} imports {}", rel(&a), rel(b)));
        }
    }
    for layer in [
        "wire", "capture", "dissect", "session", "mirror", "records", "bedrock", "analysis",
        "pipeline", "peer", "replay",
    ] {
        assert!(below.contains(layer), "no layer {layer} found below output");
    }
    assert!(found.is_empty(), "below the formatters: {found:#?}");
}

/// The binary, `src/main.rs` and `src/cli/`: the parsing of the command
/// line, the choice of output, standard error, exit codes, man pages and
/// the progress bar; everything else is the library's.
#[test]
fn the_command_line_is_thin() {
    let mut files = vec![src().join("main.rs")];
    rust_files(&src().join("cli"), &mut files);
    let lines: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).map_or(0, |t| t.lines().count()))
        .sum();
    println!(
        "src/main.rs and src/cli/: {lines} lines in {} files",
        files.len()
    );
    assert!(
        lines < 2000,
        "the binary has {lines} lines: move logic into the library"
    );
}

#[test]
fn the_path_reader_expands_groups() {
    let p = paths("use crate::{a::X, b::{c, d::E}};\nlet x = super::super::f::g();");
    let names: Vec<String> = p
        .iter()
        .map(|(b, v)| format!("{b} {}", v.join("::")))
        .collect();
    assert_eq!(
        names,
        [
            "crate::1 a::X",
            "crate::1 b::c",
            "crate::1 b::d::E",
            "super::2 f::g"
        ]
    );
}

/// Every anomaly kind the code raises (`anomaly("kind", …)`, `Anomaly {
/// kind: "kind", … }`) is in `dissect::ANOMALY_KINDS`, the closed set that
/// `-Y 'anomalies.kind == …'` checks a value against: a kind missing there
/// would make a valid filter an error.
#[test]
fn every_anomaly_kind_raised_is_listed() {
    let raised =
        regex_lite::Regex::new(r#"(?:\banomaly\(\s*|Anomaly \{\s*kind:\s*)"([a-z_]+)""#).unwrap();
    let mut seen = BTreeSet::new();
    for (_, text) in sources() {
        for c in raised.captures_iter(&text) {
            seen.insert(c[1].to_string());
        }
    }
    assert!(seen.len() >= 10, "the scan found only {seen:?}");
    let missing: Vec<&String> = seen
        .iter()
        .filter(|k| !raknet_dissect::dissect::ANOMALY_KINDS.contains(&k.as_str()))
        .collect();
    assert!(missing.is_empty(), "not in ANOMALY_KINDS: {missing:?}");
}

/// `unsafe` only at the operating system's edge: the crate denies
/// `unsafe_code`, and only the files that call libc may allow it (live
/// capture, the terminal's size, socket polling).
#[test]
fn unsafe_only_at_the_os_edge() {
    const ALLOWED: [&str; 3] = ["capture/live.rs", "output/terminal.rs", "peer/mod.rs"];
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    assert!(
        lib.contains("#![deny(unsafe_code)]"),
        "src/lib.rs denies unsafe_code"
    );
    let word = regex_lite::Regex::new(r"\bunsafe\b|allow\(unsafe_code\)").unwrap();
    let files = sources();
    assert!(
        files.len() > 50,
        "the scan found only {} files",
        files.len()
    );
    let mut found = Vec::new();
    for (rel, text) in files {
        if word.is_match(&code(&text)) && !ALLOWED.contains(&rel.as_str()) {
            found.push(rel);
        }
    }
    assert!(found.is_empty(), "unsafe outside the OS edge: {found:?}");
}

/// The library never prints on standard error nor exits: `eprintln!`,
/// `eprint!` and `process::exit` are the binary's (src/main.rs, src/cli/);
/// a capture run reports through `pipeline::notes`, a live command through
/// its `peer::run::Report`, and each returns how it ended.
#[test]
fn only_the_binary_prints_on_stderr_or_exits() {
    // Test code prints what a failing test saw.
    const TESTS: [&str; 1] = ["session/pair_tests.rs"];
    let prints = regex_lite::Regex::new(r"\beprintln!|\beprint!|process::exit\(").unwrap();
    let mut found = BTreeSet::new();
    for (rel, text) in sources() {
        if rel.starts_with("cli/") || rel == "main.rs" || TESTS.contains(&rel.as_str()) {
            continue;
        }
        if prints.is_match(&code(&text)) {
            found.insert(rel);
        }
    }
    assert!(
        found.is_empty(),
        "the library prints on stderr or exits in {found:?}"
    );
}

/// The command line is the binary's module, not the library's: no layer can
/// import it, and it is no library API.
#[test]
fn the_command_line_is_the_binarys() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).unwrap();
    assert!(!code(&lib).contains("mod cli"), "src/lib.rs declares cli");
    let main = std::fs::read_to_string(src().join("main.rs")).unwrap();
    assert!(
        code(&main).contains("mod cli;"),
        "src/main.rs does not declare cli"
    );
}

/// Every public item is documented (`#![warn(missing_docs)]` in
/// src/lib.rs), but for the layers still allowed to miss docs, one
/// `#[allow(missing_docs)]` each. The list only shrinks: a layer done leaves
/// it here and in src/lib.rs, and no layer joins it.
#[test]
fn public_items_are_documented_but_for_listed_layers() {
    const UNDOCUMENTED: [&str; 0] = [];
    let lib = code(&std::fs::read_to_string(src().join("lib.rs")).unwrap());
    assert!(
        lib.contains("#![warn(missing_docs)]"),
        "src/lib.rs lost #![warn(missing_docs)]"
    );
    let lines: Vec<&str> = lib.lines().map(str::trim).collect();
    let allowed: BTreeSet<&str> = lines
        .windows(2)
        .filter(|w| w[0] == "#[allow(missing_docs)]")
        .map(|w| {
            w[1].strip_prefix("pub mod ")
                .and_then(|m| m.strip_suffix(';'))
                .unwrap_or(w[1])
        })
        .collect();
    assert_eq!(
        allowed,
        UNDOCUMENTED.into_iter().collect(),
        "the layers allowed to miss docs in src/lib.rs"
    );
    assert_eq!(
        lib.matches("allow(missing_docs)").count(),
        UNDOCUMENTED.len(),
        "an allow(missing_docs) in src/lib.rs outside the listed layers"
    );
}
