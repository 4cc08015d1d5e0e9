//! The layers of ARCHITECTURE.md, checked on every `cargo test`: each
//! file's `crate::` paths (its `use` lines and paths in code) are mapped to
//! the top-level modules they name, and every such edge must be in
//! [`LAYERS`], written once here as data. The table itself must have no
//! loop, so no module reaches back up. Test code (`#[cfg(test)]` items and
//! the files they declare) is not a layer and is skipped: a unit test may
//! render a report or open a store to check what it tests.
//!
//! Inside a folder, files may use each other and their `mod.rs` freely,
//! but two siblings (files, or a subfolder as one) never import each
//! other (through `super::`, `self::` or `crate::folder::`), directly or
//! round a loop.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every top-level module of `src/` (a file or a folder) and the modules it
/// may import, lowest layers first. A module may only name modules listed
/// before it, so the table is one-way by construction (checked by
/// `the_table_has_no_loop`).
const LAYERS: &[(&str, &[&str])] = &[
    // The ground floor: no kbench module below them.
    ("error", &[]),
    ("ids", &[]),
    ("units", &["error"]),
    ("term", &[]),
    ("suggest", &[]),
    // Secrets: what one is and how it is shown, for every output.
    ("redact", &[]),
    // Files the user names: their bounds, regular files only.
    ("input", &["error"]),
    // Typed records: what runs, cells and samples are.
    ("record", &["term", "units"]),
    // Statistics: numbers in, numbers out.
    ("stats", &["record"]),
    ("ministat", &["stats"]),
    // The operating-system seam.
    ("system", &["error", "record", "units"]),
    ("profile", &["system"]),
    // What is measured and how a plan names it.
    (
        "bench",
        &[
            "error", "input", "redact", "suggest", "system", "term", "units", "record",
        ],
    ),
    (
        "plan",
        &[
            "bench", "error", "ids", "input", "record", "redact", "stats", "suggest", "system",
            "term", "units",
        ],
    ),
    (
        "spec",
        &["bench", "error", "plan", "record", "redact", "suggest"],
    ),
    // The event stream and the stores below the runner and the reports.
    ("event", &["error", "profile", "record", "redact", "system"]),
    (
        "store",
        &[
            "error", "event", "ids", "input", "profile", "record", "redact", "stats", "system",
        ],
    ),
    // The producer: the runner emits events and never reads a store.
    (
        "runner",
        &[
            "bench", "error", "event", "ids", "plan", "profile", "record", "spec", "stats",
            "system", "term", "units",
        ],
    ),
    // A plan's campaign as the store holds it (progress, status).
    ("campaign", &["error", "plan", "record", "store", "system"]),
    // The consumers: report models and their renderers.
    (
        "report",
        &[
            "bench", "campaign", "error", "event", "ministat", "plan", "profile", "record",
            "stats", "store", "suggest", "system", "term", "units",
        ],
    ),
    // Operands (runs, campaigns, `:k=v`) resolved against a store.
    (
        "select",
        &[
            "error", "ids", "input", "plan", "record", "report", "store", "suggest", "units",
        ],
    ),
    // The subcommands' own machinery, each above what it drives.
    (
        "import",
        &[
            "error", "event", "ids", "ministat", "record", "report", "stats", "system",
        ],
    ),
    ("export", &["error", "plan", "report", "select", "store"]),
    (
        "explain",
        &[
            "error", "profile", "record", "report", "select", "stats", "store", "system",
        ],
    ),
    (
        "check",
        &[
            "error", "plan", "record", "report", "select", "stats", "store", "suggest", "system",
        ],
    ),
    (
        "bisect",
        &[
            "bench", "error", "event", "ids", "plan", "record", "redact", "report", "runner",
            "stats", "store", "system", "term", "units",
        ],
    ),
    (
        "fleet",
        &[
            "campaign", "error", "event", "ids", "input", "plan", "record", "redact", "select",
            "store", "system",
        ],
    ),
    // The command line and one function per subcommand.
    (
        "cli",
        &["bisect", "export", "plan", "record", "report", "spec"],
    ),
    (
        "cmd",
        &[
            "bench", "bisect", "campaign", "check", "cli", "error", "event", "explain", "export",
            "fleet", "ids", "import", "input", "ministat", "plan", "record", "redact", "report",
            "runner", "select", "spec", "stats", "store", "suggest", "system", "term", "units",
        ],
    ),
    // The PostgreSQL server the tests start (a dev-only feature).
    ("testing_pg", &["system"]),
];

/// Files that may name any module: the crate root and the binary.
const ROOTS: &[&str] = &["lib.rs", "main.rs"];

/// One `crate::` path in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Use {
    /// 1-based line of the path's first segment.
    line: usize,
    /// `crate::<this>::...`.
    module: String,
    /// The segment after it, when there is one (`crate::report::<text>`).
    next: Option<String>,
}

/// The lines of `text` that are not test code, comments blanked: a
/// `#[cfg(test)]` item (to its `;` or its closing brace) is blanked too.
/// Also returns the modules it declares test-only (`#[cfg(test)] mod x;`).
fn product_code(text: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut test_mods = Vec::new();
    let mut pending = false;
    let mut depth: i64 = 0;
    let mut skipping = false;
    for raw in text.lines() {
        let code = strip_comment(raw);
        let t = code.trim();
        if skipping {
            depth += braces(&code);
            if depth <= 0 {
                skipping = false;
            }
            out.push(String::new());
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            pending = true;
            out.push(String::new());
            continue;
        }
        if pending && t.starts_with("#[") {
            out.push(String::new());
            continue;
        }
        if pending {
            pending = false;
            let words: Vec<&str> = t.split_whitespace().collect();
            if let Some(i) = words.iter().position(|w| *w == "mod")
                && let Some(name) = words.get(i + 1).and_then(|n| n.strip_suffix(';'))
            {
                test_mods.push(name.to_string());
            } else if !t.ends_with(';') {
                depth = braces(&code);
                skipping = depth > 0;
            }
            out.push(String::new());
            continue;
        }
        out.push(code);
    }
    (out, test_mods)
}

fn braces(code: &str) -> i64 {
    code.matches('{').count() as i64 - code.matches('}').count() as i64
}

/// The line without its `//` comment (a `//` inside a string literal is
/// kept: only one outside quotes starts a comment).
fn strip_comment(line: &str) -> String {
    let mut in_str = false;
    let mut prev = ' ';
    let b: Vec<char> = line.chars().collect();
    for (i, &c) in b.iter().enumerate() {
        if c == '"' && prev != '\\' && !(prev == '\'' && b.get(i + 1) == Some(&'\'')) {
            in_str = !in_str;
        }
        if !in_str && c == '/' && b.get(i + 1) == Some(&'/') {
            return b[..i].iter().collect();
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    line.to_string()
}

fn ident_at(s: &[char], mut i: usize) -> (String, usize) {
    let start = i;
    while i < s.len() && (s[i].is_alphanumeric() || s[i] == '_') {
        i += 1;
    }
    (s[start..i].iter().collect(), i)
}

/// The `prefix::` paths in `lines` (already stripped of test code): the
/// first segment after the prefix, and the one after that; a group
/// (`prefix::{a::x, b}`, over several lines) gives each of its items.
fn paths(lines: &[String], prefix: &str) -> Vec<Use> {
    let text: Vec<char> = lines.join("\n").chars().collect();
    let line_of = |pos: usize| 1 + text[..pos].iter().filter(|&&c| c == '\n').count();
    let pat: Vec<char> = format!("{prefix}::").chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i + pat.len() <= text.len() {
        let before = if i == 0 { ' ' } else { text[i - 1] };
        if text[i..i + pat.len()] != pat[..] || before.is_alphanumeric() || before == '_' {
            i += 1;
            continue;
        }
        let mut j = i + pat.len();
        let mut items = Vec::new();
        if text.get(j) == Some(&'{') {
            // Each top-level item of the group.
            let mut depth = 0;
            let mut item_start = j + 1;
            while j < text.len() {
                match text[j] {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        items.push(item_start);
                        item_start = j + 1;
                    }
                    _ => {}
                }
                if depth == 0 {
                    items.push(item_start);
                    break;
                }
                j += 1;
            }
        } else {
            items.push(j);
        }
        for start in items {
            let mut k = start;
            while k < text.len() && text[k].is_whitespace() {
                k += 1;
            }
            let (module, after) = ident_at(&text, k);
            if module.is_empty() || module == "self" {
                continue;
            }
            let next = (text.get(after) == Some(&':') && text.get(after + 1) == Some(&':'))
                .then(|| ident_at(&text, after + 2).0)
                .filter(|n| !n.is_empty());
            found.push(Use {
                line: line_of(k),
                module,
                next,
            });
        }
        i += pat.len();
    }
    found
}

/// A `.rs` file under `src/`, relative to it.
struct Source {
    rel: PathBuf,
    text: String,
}

fn sources(src: &Path) -> Vec<Source> {
    fn walk(dir: &Path, src: &Path, out: &mut Vec<Source>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, src, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let text = std::fs::read_to_string(&p).unwrap();
                let rel = p.strip_prefix(src).unwrap().to_path_buf();
                out.push(Source { rel, text });
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out
}

/// The top-level module a file belongs to: `report/text.rs` -> `report`,
/// `cmd.rs` -> `cmd`.
fn top(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The files a parent declares with `#[cfg(test)] mod x;`.
fn test_files(parent: &Path, mods: &[String]) -> Vec<PathBuf> {
    let name = parent.file_name().unwrap().to_string_lossy();
    let dir = match name.as_ref() {
        "mod.rs" | "lib.rs" | "main.rs" => parent.parent().unwrap().to_path_buf(),
        _ => parent.with_extension(""),
    };
    mods.iter()
        .flat_map(|m| [dir.join(format!("{m}.rs")), dir.join(m).join("mod.rs")])
        .collect()
}

/// One import that breaks a rule: where, and what it names.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Broken {
    file: String,
    line: usize,
    from: String,
    to: String,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "src/{}:{}: {} -> {}",
            self.file, self.line, self.from, self.to
        )
    }
}

/// Every product file's `crate::` edges between top-level modules that
/// `table` does not allow; a module missing from the table is named too.
fn forbidden(files: &[Source], table: &[(&str, &[&str])]) -> Vec<Broken> {
    let allowed: BTreeMap<&str, &[&str]> = table.iter().copied().collect();
    let modules: BTreeSet<String> = files.iter().map(|f| top(&f.rel)).collect();
    let mut test_only = BTreeSet::new();
    for f in files {
        let (_, mods) = product_code(&f.text);
        test_only.extend(test_files(&f.rel, &mods));
    }
    let mut broken = Vec::new();
    for f in files {
        let file = f.rel.to_string_lossy().to_string();
        if ROOTS.contains(&file.as_str()) || test_only.contains(&f.rel) {
            continue;
        }
        let from = top(&f.rel);
        let Some(may) = allowed.get(from.as_str()) else {
            broken.push(Broken {
                file,
                line: 0,
                from,
                to: "(a module missing from LAYERS)".into(),
            });
            continue;
        };
        let (code, _) = product_code(&f.text);
        for u in paths(&code, "crate")
            .into_iter()
            .chain(paths(&code, "$crate"))
        {
            if u.module != from && modules.contains(&u.module) && !may.contains(&u.module.as_str())
            {
                broken.push(Broken {
                    file: file.clone(),
                    line: u.line,
                    from: from.clone(),
                    to: u.module,
                });
            }
        }
    }
    broken.sort();
    broken
}

/// A loop in `graph`, as the nodes round it, if there is one.
fn a_loop(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(1) => {
                let at = stack.iter().position(|s| s == n).unwrap();
                let mut l = stack[at..].to_vec();
                l.push(n.to_string());
                return Some(l);
            }
            Some(_) => return None,
            None => {}
        }
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            if let Some(l) = visit(m, graph, state, stack) {
                return Some(l);
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if let Some(l) = visit(n, graph, &mut state, &mut Vec::new()) {
            return Some(l);
        }
    }
    None
}

/// The files and subfolders of each folder naming each other: folder ->
/// node -> the nodes it names. A node is a file (by its stem, `mod.rs`
/// excepted) or a subfolder, which stands for every file in it: its
/// `mod.rs` and its files naming a sibling of the folder (`super::x` from
/// the `mod.rs`, `super::super::x` from a file in it, or `crate::` paths)
/// are the subfolder's edges. So a loop through a subfolder is found too.
fn sibling_graphs(files: &[Source]) -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    // A file's module path: `report/compare/verdict.rs` ->
    // [report, compare, verdict]; a `mod.rs` is its folder.
    let module_of = |rel: &Path| -> Vec<String> {
        let mut m: Vec<String> = rel
            .with_extension("")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().to_string())
            .collect();
        if m.last().is_some_and(|s| s == "mod") {
            m.pop();
        }
        m
    };
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let m = module_of(&f.rel);
        if m.len() > 1 {
            let (dir, node) = m.split_at(m.len() - 1);
            nodes
                .entry(dir.join("/"))
                .or_default()
                .insert(node[0].clone());
        }
    }
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for f in files {
        let m = module_of(&f.rel);
        let (code, _) = product_code(&f.text);
        // `super::super::x` read as one prefix, so `super::x` does not
        // also match its tail.
        let code: Vec<String> = code
            .iter()
            .map(|l| {
                l.replace("super::super::super::", "SUPER3::")
                    .replace("super::super::", "SUPER2::")
            })
            .collect();
        // (the folder a path names into, the node it names there)
        let mut named: Vec<(usize, String)> = Vec::new();
        for (up, prefix) in [(1, "super"), (2, "SUPER2"), (3, "SUPER3")] {
            if m.len() > up {
                let at = m.len() - up;
                named.extend(paths(&code, prefix).into_iter().map(|u| (at, u.module)));
            }
        }
        for at in 1..m.len() {
            let prefix = format!("crate::{}", m[..at].join("::"));
            named.extend(paths(&code, &prefix).into_iter().map(|u| (at, u.module)));
        }
        for (at, to) in named {
            let dir = m[..at].join("/");
            let from = &m[at];
            if *from != to && nodes.get(&dir).is_some_and(|n| n.contains(&to)) {
                graphs
                    .entry(dir)
                    .or_default()
                    .entry(from.clone())
                    .or_default()
                    .insert(to);
            }
        }
    }
    graphs
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_import_follows_the_layers() {
    let broken = forbidden(&sources(&src()), LAYERS);
    let lines: Vec<String> = broken.iter().map(|b| b.to_string()).collect();
    assert!(
        broken.is_empty(),
        "{} import(s) against the layers of ARCHITECTURE.md (tests/layers.rs LAYERS):\n{}",
        broken.len(),
        lines.join("\n")
    );
}

#[test]
fn the_table_has_no_loop_and_names_every_module() {
    let mut seen = BTreeSet::new();
    for (m, may) in LAYERS {
        for d in *may {
            assert!(
                seen.contains(d),
                "LAYERS: `{m}` may import `{d}`, which is not below it"
            );
        }
        assert!(seen.insert(*m), "LAYERS names `{m}` twice");
    }
    let files = sources(&src());
    let modules: BTreeSet<String> = files
        .iter()
        .map(|f| top(&f.rel))
        .filter(|m| !ROOTS.contains(&format!("{m}.rs").as_str()))
        .collect();
    // `testing.rs` is test code (`#[cfg(test)] mod testing`), not a layer.
    let missing: Vec<&String> = modules
        .iter()
        .filter(|m| !seen.contains(m.as_str()) && *m != "testing")
        .collect();
    assert!(
        missing.is_empty(),
        "modules missing from LAYERS: {missing:?}"
    );
    let stale: Vec<&&str> = seen.iter().filter(|m| !modules.contains(**m)).collect();
    assert!(
        stale.is_empty(),
        "LAYERS names modules not in src/: {stale:?}"
    );
}

#[test]
fn sibling_files_import_each_other_without_loops() {
    let mut loops = Vec::new();
    for (dir, graph) in sibling_graphs(&sources(&src())) {
        if let Some(l) = a_loop(&graph) {
            loops.push(format!("src/{dir}/: {}", l.join(" -> ")));
        }
    }
    assert!(
        loops.is_empty(),
        "files of one folder importing each other round a loop:\n{}",
        loops.join("\n")
    );
}

/// The checker can fail: an added upward import (statistics naming a
/// report) and a loop of two sibling files are both found, with file,
/// line and edge.
#[test]
fn an_added_forbidden_import_is_named() {
    let file = |rel: &str, text: &str| Source {
        rel: rel.into(),
        text: text.into(),
    };
    let files = [
        file("stats/mod.rs", "pub mod sample;\n"),
        file(
            "stats/sample.rs",
            "use crate::record::Direction;\n\n// crate::report in a comment is no import\nfn f() {\n    let _ = crate::{\n        units::X,\n        report::text::wrapped(\"\", \"\", \"\"),\n    };\n}\n#[cfg(test)]\nmod tests {\n    use crate::store::memory::MemoryStore;\n}\n",
        ),
        file("record.rs", "pub enum Direction {}\n"),
        file("report/text.rs", "use crate::stats::Sample;\n"),
        file("store/mod.rs", ""),
        file("units.rs", ""),
    ];
    let broken = forbidden(&files, LAYERS);
    let named: Vec<String> = broken.iter().map(|b| b.to_string()).collect();
    assert_eq!(
        named,
        [
            "src/stats/sample.rs:6: stats -> units",
            "src/stats/sample.rs:7: stats -> report"
        ]
    );

    let files = [
        file("bench/mod.rs", "mod a;\nmod b;\n"),
        file("bench/a.rs", "use super::b::B;\n"),
        file("bench/b.rs", "fn f() { crate::bench::a::g() }\n"),
    ];
    let graphs = sibling_graphs(&files);
    assert_eq!(
        a_loop(&graphs["bench"]),
        Some(vec!["a".to_string(), "b".to_string(), "a".to_string()])
    );

    // A subfolder is one sibling: its files reach back into a file that
    // imports the subfolder.
    let files = [
        file(
            "report/mod.rs",
            "pub mod fmt;
pub mod history;
pub mod text;
",
        ),
        file("report/fmt.rs", ""),
        file(
            "report/text.rs",
            "use super::history::History;
use super::fmt;
",
        ),
        file(
            "report/history/mod.rs",
            "mod text;
pub struct History;
",
        ),
        file(
            "report/history/text.rs",
            "use super::super::fmt::wrap;
fn f() { crate::report::text::render() }
",
        ),
    ];
    let graphs = sibling_graphs(&files);
    assert_eq!(
        a_loop(&graphs["report"]),
        Some(vec![
            "history".to_string(),
            "text".to_string(),
            "history".to_string()
        ])
    );
}

/// The modules of `src/lib.rs` that exist only for tests.
const TEST_SUPPORT: &[&str] = &["testing", "testing_pg", "test_support"];

/// What would put test support into a release build: a test-support
/// module of `lib` declared without `cfg(test)` or the `test-support`
/// feature before it, or a `cargo` manifest whose default features, or
/// any dependency but the crate's dev-dependency on itself, turn that
/// feature on. Cheaper than reading a release binary's symbols, and it
/// fails as soon as a gate goes.
fn test_support_ungated(lib: &str, cargo: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lines: Vec<&str> = lib.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        let decl = l.trim_start_matches("pub ").strip_prefix("mod ");
        let Some(name) = decl.map(|d| d.trim_end_matches([';', '{', ' '])) else {
            continue;
        };
        if !TEST_SUPPORT.contains(&name) {
            continue;
        }
        let gated = lines[..i]
            .iter()
            .rev()
            .take_while(|a| a.starts_with("#["))
            .any(|a| *a == "#[cfg(test)]" || *a == "#[cfg(any(test, feature = \"test-support\"))]");
        if !gated {
            out.push(format!(
                "src/lib.rs:{}: `mod {name}` is not test-only",
                i + 1
            ));
        }
    }
    let mut section = "";
    for (i, l) in cargo.lines().enumerate() {
        let l = l.trim();
        if l.starts_with('[') {
            section = l;
        } else if section == "[features]" && l.starts_with("default") && l.contains("test-support")
        {
            out.push(format!(
                "Cargo.toml:{}: default features turn on test-support",
                i + 1
            ));
        } else if l.contains("\"test-support\"")
            && !(section == "[dev-dependencies]" && l.starts_with("kbench "))
        {
            out.push(format!(
                "Cargo.toml:{}: test-support turned on outside dev-dependencies",
                i + 1
            ));
        }
    }
    out
}

#[test]
fn the_release_build_carries_no_test_support() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |f: &str| std::fs::read_to_string(root.join(f)).expect("readable");
    let found = test_support_ungated(&read("src/lib.rs"), &read("Cargo.toml"));
    assert!(found.is_empty(), "{}", found.join("\n"));

    // A gate taken away, or the feature turned on by default, is named.
    let lib = "mod stats;\n#[cfg(test)]\nmod testing;\n#[doc(hidden)]\npub mod testing_pg;\n";
    let cargo = "[features]\ndefault = [\"test-support\"]\n[dependencies]\nx = { path = \"x\", features = [\"test-support\"] }\n[dev-dependencies]\nkbench = { path = \".\", features = [\"test-support\"] }\n";
    assert_eq!(
        test_support_ungated(lib, cargo),
        [
            "src/lib.rs:5: `mod testing_pg` is not test-only",
            "Cargo.toml:2: default features turn on test-support",
            "Cargo.toml:4: test-support turned on outside dev-dependencies",
        ]
    );
}
