//! The documentation holds together: every relative link in the README,
//! ARCHITECTURE.md and docs/ names a file that exists and, with `#anchor`,
//! a heading that file has (GitHub's anchor rules); every guide in docs/ is
//! reachable from the README; the README stays a front door.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The anchor GitHub gives a heading: lower case, punctuation other than
/// `-` and `_` dropped, spaces as `-`; a repeated anchor gets `-1`, `-2`, ...
fn anchors(markdown: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    for line in prose(markdown) {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let title = rest.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = seen.entry(slug.clone()).or_insert(0);
        out.insert(if *n == 0 {
            slug.clone()
        } else {
            format!("{slug}-{n}")
        });
        *n += 1;
    }
    out
}

/// The lines of a Markdown text outside fenced code blocks.
fn prose(markdown: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    markdown.lines().filter(move |l| {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// `(line, target)` of every inline link `[text](target)` outside code.
fn links(markdown: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut fenced = false;
    for (i, line) in markdown.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // Inline code spans may hold `](` that is not a link.
        let text: String = line
            .split('`')
            .enumerate()
            .filter(|(k, _)| k % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let tail = &rest[at + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push((i + 1, tail[..end].to_string()));
            rest = &tail[end..];
        }
    }
    out
}

/// Every broken link of the document at `file` (repository-relative), as
/// `file:line: message`.
fn broken(file: &Path, text: &str, read: &dyn Fn(&Path) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    for (line, target) in links(text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let dest = if path.is_empty() {
            file.to_path_buf()
        } else {
            normalise(&file.parent().unwrap_or(Path::new("")).join(path))
        };
        let Some(body) = read(&dest) else {
            out.push(format!(
                "{}:{line}: `{target}`: no file {}",
                file.display(),
                dest.display()
            ));
            continue;
        };
        if let Some(a) = anchor {
            if !anchors(&body).contains(a) {
                out.push(format!(
                    "{}:{line}: `{target}`: {} has no heading with anchor #{a}",
                    file.display(),
                    dest.display()
                ));
            }
        }
    }
    out
}

/// `a/b/../c` as `a/c`, so a link out of docs/ names a repository path.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

fn documents() -> Vec<PathBuf> {
    let mut docs = vec![PathBuf::from("README.md"), PathBuf::from("ARCHITECTURE.md")];
    let mut guides: Vec<PathBuf> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/")
        .map(|e| PathBuf::from("docs").join(e.unwrap().file_name()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    guides.sort();
    docs.extend(guides);
    docs
}

fn read_repo(p: &Path) -> Option<String> {
    let full = Path::new(ROOT).join(p);
    if full.is_dir() {
        return Some(String::new());
    }
    std::fs::read_to_string(full).ok()
}

#[test]
fn every_link_in_the_docs_resolves() {
    let mut bad = Vec::new();
    for doc in documents() {
        let text = read_repo(&doc).unwrap_or_else(|| panic!("{} is missing", doc.display()));
        bad.extend(broken(&doc, &text, &read_repo));
    }
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

#[test]
fn every_guide_is_reachable_from_the_readme() {
    let readme = read_repo(Path::new("README.md")).unwrap();
    let linked: BTreeSet<PathBuf> = links(&readme)
        .into_iter()
        .map(|(_, t)| normalise(Path::new(t.split('#').next().unwrap())))
        .collect();
    for doc in documents().into_iter().skip(1) {
        assert!(
            linked.contains(&doc),
            "{} is not linked from README.md",
            doc.display()
        );
    }
}

#[test]
fn the_readme_is_a_front_door_with_the_two_quick_start_commands() {
    let readme = read_repo(Path::new("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines; move detail to docs/"
    );
    for command in [
        "cargo build --release && ./target/release/kbench run",
        "cargo test ",
    ] {
        assert!(
            readme.contains(command),
            "the quick start lacks `{command}`"
        );
    }
}

/// The checker itself fails on what it must catch: a missing file, a
/// missing anchor, in a document of its own making.
#[test]
fn the_link_checker_rejects_broken_links() {
    let files: HashMap<PathBuf, &str> = [
        (PathBuf::from("docs/a.md"), "# A guide\n\n## Two words\n"),
        (PathBuf::from("README.md"), "# kbench\n"),
    ]
    .into_iter()
    .collect();
    let read = |p: &Path| files.get(p).map(|s| s.to_string());
    let doc = "see [ok](a.md#two-words), [up](../README.md#kbench), [self](#a-guide)\n\
               ```\n[in code](nowhere.md)\n```\n\
               [gone](b.md) and [no anchor](a.md#three) and `[code](x.md)`\n";
    let text = format!("# A guide\n{doc}");
    let bad = broken(Path::new("docs/a.md"), &text, &read);
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(bad[0].contains("`b.md`: no file docs/b.md"), "{}", bad[0]);
    assert!(
        bad[1].contains("no heading with anchor #three"),
        "{}",
        bad[1]
    );
}

#[test]
fn anchors_follow_github() {
    let a = anchors("# Profiles and `kbench explain`: where the time went\n## Power\n## Power\n");
    assert!(a.contains("profiles-and-kbench-explain-where-the-time-went"));
    assert!(a.contains("power") && a.contains("power-1"));
}
