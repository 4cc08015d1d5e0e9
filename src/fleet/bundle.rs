//! A plan's bundle: the plan file and every file and directory it names
//! (a `[[bench]]`'s `testcase` and `cwd`, and any `{plan_dir}/PATH` in
//! its commands), as one tar archive named by its content. The fleet
//! copies it once to each host's fleet directory and unpacks it per run,
//! so a plan runs there exactly as beside its files here. Everything it
//! names is checked here first: a missing file is a plan error naming its
//! line.

use std::path::{Component, Path, PathBuf};

use crate::error::bad_input;

/// A plan's bundle, built in memory (a plan's files are sources and
/// scripts, not data sets).
pub struct Bundle {
    /// The plan file's name inside the bundle.
    pub plan_file: String,
    pub tar: Vec<u8>,
    /// Content hash of the archive (names it on the hosts).
    pub hash: String,
}

/// 1-based line of the first line of `text` holding both `key` and `value`.
fn line_of(text: &str, key: &str, value: &str) -> usize {
    text.lines()
        .position(|l| l.contains(key) && l.contains(value))
        .map_or(1, |i| i + 1)
}

/// Every `{plan_dir}/PATH` in a string.
fn plan_dir_refs(s: &str, out: &mut Vec<String>) {
    for (i, _) in s.match_indices("{plan_dir}/") {
        let rest = &s[i + "{plan_dir}/".len()..];
        let end = rest
            .find(|c: char| c.is_whitespace() || "'\";|&)<>{".contains(c))
            .unwrap_or(rest.len());
        if end > 0 {
            out.push(rest[..end].to_string());
        }
    }
}

fn strings(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::String(s) => out.push(s.clone()),
        toml::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        toml::Value::Table(t) => t.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// What the plan at `plan_path` (text `text`) names beside it, checked:
/// (path relative to the plan's directory, must be a directory).
pub fn named_files(plan_path: &Path, text: &str) -> anyhow::Result<Vec<(PathBuf, bool)>> {
    let dir = plan_path.parent().unwrap_or(Path::new("."));
    let name = plan_path.display();
    let Ok(t) = toml::from_str::<toml::Table>(text) else {
        return Ok(Vec::new());
    };
    let mut want: Vec<(String, &str, bool)> = Vec::new();
    for b in t
        .get("bench")
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        if let Some(tc) = b.get("testcase").and_then(|v| v.as_str()) {
            want.push((tc.to_string(), "testcase", false));
        }
        if let Some(cwd) = b.get("cwd").and_then(|v| v.as_str()) {
            let cwd = cwd.strip_prefix("{plan_dir}/").unwrap_or(cwd);
            let cwd = if cwd == "{plan_dir}" { "." } else { cwd };
            // A cwd naming a parameter is known only per cell.
            if !cwd.contains('{') {
                want.push((cwd.to_string(), "cwd", true));
            }
        }
    }
    let mut refs = Vec::new();
    let mut all = Vec::new();
    strings(&toml::Value::Table(t.clone()), &mut all);
    for s in &all {
        plan_dir_refs(s, &mut refs);
    }
    for r in refs {
        if !r.contains('{') && !want.iter().any(|(w, _, _)| *w == r) {
            want.push((r, "{plan_dir}", false));
        }
    }
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    for (rel, key, is_dir) in want {
        let line = line_of(text, key, &rel);
        let p = Path::new(&rel);
        if p.is_absolute() {
            // The same path on every host: the host provides it.
            continue;
        }
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(bad_input!(
                "{name}:{line}: `{key}` `{rel}` is outside the plan's directory; the fleet copies only what is under it"
            ));
        }
        let full = dir.join(p);
        let ok = if is_dir { full.is_dir() } else { full.exists() };
        if !ok {
            return Err(bad_input!(
                "{name}:{line}: `{key}` `{rel}` {} (the fleet copies it to every host)",
                if is_dir {
                    "is not a directory here"
                } else {
                    "does not exist here"
                }
            ));
        }
        let clean: PathBuf = p.components().filter(|c| *c != Component::CurDir).collect();
        if !clean.as_os_str().is_empty() && !out.iter().any(|(o, _)| *o == clean) {
            out.push((clean, is_dir));
        }
    }
    Ok(out)
}

/// Build the bundle of the plan at `plan_path`: a reproducible tar written
/// here, the same on every OS (names sorted, owners and times fixed,
/// modes kept), so the same files give the same hash.
pub fn build(plan_path: &Path, text: &str) -> anyhow::Result<Bundle> {
    let dir = match plan_path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let plan_file = plan_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan.toml".into());
    let mut entries = Vec::new();
    let named = named_files(plan_path, text)?.into_iter().map(|(p, _)| p);
    for p in std::iter::once(PathBuf::from(&plan_file)).chain(named) {
        walk(dir, p, &mut entries)?;
    }
    // Parents sort before what they hold.
    entries.sort();
    entries.dedup();
    let err = |p: &Path, e: std::io::Error| {
        anyhow::anyhow!("{}: {e} (bundling the plan's files)", dir.join(p).display())
    };
    let mut ar = tar::Builder::new(Vec::new());
    ar.mode(tar::HeaderMode::Deterministic);
    ar.follow_symlinks(false);
    for p in &entries {
        ar.append_path_with_name(dir.join(p), p)
            .map_err(|e| err(p, e))?;
    }
    let tar = ar.into_inner().map_err(|e| err(Path::new(""), e))?;
    let hash = crate::ids::content_uuid(&[&tar]);
    Ok(Bundle {
        plan_file,
        tar,
        hash,
    })
}

/// `rel` (under `dir`) and, for a directory, everything in it.
fn walk(dir: &Path, rel: PathBuf, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    let full = dir.join(&rel);
    let meta = std::fs::symlink_metadata(&full)
        .map_err(|e| anyhow::anyhow!("{}: {e} (bundling the plan's files)", full.display()))?;
    if meta.is_dir() {
        let rd = std::fs::read_dir(&full)
            .map_err(|e| anyhow::anyhow!("{}: {e} (bundling the plan's files)", full.display()))?;
        for e in rd {
            let e = e.map_err(|e| anyhow::anyhow!("{}: {e}", full.display()))?;
            walk(dir, rel.join(e.file_name()), out)?;
        }
    }
    out.push(rel);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plan_names_its_files_and_a_missing_one_is_a_plan_error() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("src/mini")).unwrap();
        std::fs::write(d.path().join("t.c"), "int x;").unwrap();
        std::fs::write(d.path().join("run.sh"), "true").unwrap();
        let exec = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
        std::fs::set_permissions(d.path().join("run.sh"), exec).unwrap();
        let text = r#"name = "p"

[[bench]]
testcase = "t.c"

[[bench]]
name = "b"
command = ["sh", "{plan_dir}/run.sh", "x"]
cwd = "src/mini"
"#;
        let plan = d.path().join("p.toml");
        std::fs::write(&plan, text).unwrap();
        let f = named_files(&plan, text).unwrap();
        let names: Vec<_> = f.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(names, ["t.c", "src/mini", "run.sh"]);
        let b = build(&plan, text).unwrap();
        let again = build(&plan, text).unwrap();
        assert_eq!(b.hash, again.hash, "the same files, the same bundle");
        std::fs::write(d.path().join("run.sh"), "false").unwrap();
        assert_ne!(build(&plan, text).unwrap().hash, b.hash);
        let bad = text.replace("src/mini", "src/gone");
        let e = named_files(&plan, &bad).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(
            e.to_string()
                .ends_with("p.toml:9: `cwd` `src/gone` is not a directory here (the fleet copies it to every host)"),
            "{e}"
        );
        // Unpacked on a host by `tar -xf B -C DIR`: GNU tar and bsdtar
        // (FreeBSD's tar) alike give the files, directories and modes.
        std::fs::write(d.path().join("src/mini/Makefile"), "all:").unwrap();
        let b = build(&plan, text).unwrap();
        let archive = d.path().join("b.tar");
        std::fs::write(&archive, &b.tar).unwrap();
        for tool in ["tar", "bsdtar"] {
            let to = d.path().join(format!("x-{tool}"));
            std::fs::create_dir(&to).unwrap();
            let Ok(st) = std::process::Command::new(tool)
                .arg("-xf")
                .arg(&archive)
                .arg("-C")
                .arg(&to)
                .status()
            else {
                eprintln!("skipping {tool}: not installed");
                continue;
            };
            assert!(st.success(), "{tool}");
            assert_eq!(std::fs::read(to.join("p.toml")).unwrap(), text.as_bytes());
            assert_eq!(
                std::fs::read(to.join("src/mini/Makefile")).unwrap(),
                b"all:"
            );
            let mode = |p: &str| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(to.join(p)).unwrap().permissions().mode() & 0o111
            };
            assert_ne!(mode("run.sh"), 0, "{tool}: run.sh stays executable");
            assert_eq!(mode("t.c"), 0, "{tool}");
        }
        let up = text.replace("t.c", "../t.c");
        let e = named_files(&plan, &up).unwrap_err();
        assert!(
            e.to_string()
                .contains("p.toml:4: `testcase` `../t.c` is outside"),
            "{e}"
        );
    }
}
