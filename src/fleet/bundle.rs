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

/// Build the bundle of the plan at `plan_path`: a reproducible tar (sorted
/// names, no owners or times), so the same files give the same hash.
pub fn build(plan_path: &Path, text: &str) -> anyhow::Result<Bundle> {
    let dir = plan_path.parent().unwrap_or(Path::new("."));
    let plan_file = plan_path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan.toml".into());
    let mut paths = vec![PathBuf::from(&plan_file)];
    paths.extend(named_files(plan_path, text)?.into_iter().map(|(p, _)| p));
    let dir_arg = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let out = std::process::Command::new("tar")
        .arg("-C")
        .arg(dir_arg)
        .args([
            "--sort=name",
            "--mtime=@0",
            "--owner=0",
            "--group=0",
            "--numeric-owner",
            "--format=gnu",
            "-cf",
            "-",
            "--",
        ])
        .args(&paths)
        .output()
        .map_err(|e| anyhow::anyhow!("tar (to bundle the plan's files): {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "tar (to bundle the plan's files): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let hash = crate::ids::content_uuid(&[&out.stdout]);
    Ok(Bundle {
        plan_file,
        tar: out.stdout,
        hash,
    })
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
        let up = text.replace("t.c", "../t.c");
        let e = named_files(&plan, &up).unwrap_err();
        assert!(
            e.to_string()
                .contains("p.toml:4: `testcase` `../t.c` is outside"),
            "{e}"
        );
    }
}
