//! The git operations a bisection needs, through the `git` command (the
//! user's own git, with their configuration): resolve revisions, list the
//! first-parent ancestry path between the ends, read subjects, and check
//! out a commit into a worktree of its own.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::bad_input;

/// A repository the user named with `--repo`.
#[derive(Clone, Debug)]
pub struct Repo {
    pub dir: PathBuf,
}

/// One commit: full id and subject line.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Commit {
    pub id: String,
    pub subject: String,
}

impl Commit {
    /// The abbreviated id users read (12 hex digits, as `git bisect` does
    /// not, but enough for any repository kbench will meet).
    pub fn short(&self) -> &str {
        &self.id[..self.id.len().min(12)]
    }
}

/// The branch and commit of the git work tree `dir` is in, as run labels
/// (`branch`, `commit`); nothing outside a work tree or without git. On a
/// detached HEAD (a CI checkout) the branch is the one the CI names
/// (`GITHUB_HEAD_REF`, `GITHUB_REF_NAME`, `CI_COMMIT_REF_NAME`), if any.
pub fn head_labels(dir: &Path) -> crate::record::Labels {
    let r = Repo {
        dir: dir.to_path_buf(),
    };
    let mut out = crate::record::Labels::new();
    let Ok(commit) = r.git(&["rev-parse", "--verify", "-q", "HEAD"]) else {
        return out;
    };
    let branch = r
        .git(&["symbolic-ref", "--short", "-q", "HEAD"])
        .ok()
        .or_else(|| {
            ["GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"]
                .iter()
                .find_map(|v| std::env::var(v).ok().filter(|b| !b.is_empty()))
        });
    for (k, v) in [("branch", branch), ("commit", Some(commit))] {
        if let Some(v) = v.filter(|v| crate::record::check_label(k, v).is_ok()) {
            out.insert(k.to_string(), v);
        }
    }
    out
}

impl Repo {
    /// The repository containing `dir`; not a git work tree is bad input.
    pub fn open(dir: &Path) -> anyhow::Result<Repo> {
        let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        let r = Repo { dir: abs };
        let top = r
            .git(&["rev-parse", "--show-toplevel"])
            .map_err(|e| bad_input!("--repo {}: not a git repository ({e})", dir.display()))?;
        Ok(Repo {
            dir: PathBuf::from(top),
        })
    }

    /// Run git in the repository; its trimmed stdout, or its stderr as
    /// the error.
    fn git(&self, args: &[&str]) -> Result<String, String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .env("LC_ALL", "C")
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        } else {
            let err = String::from_utf8_lossy(&out.stderr);
            Err(err
                .lines()
                .next()
                .unwrap_or("git failed")
                .trim()
                .to_string())
        }
    }

    /// The commit `rev` names (`--good`/`--bad`/`HEAD`); unknown is bad
    /// input naming the flag.
    pub fn commit(&self, flag: &str, rev: &str) -> anyhow::Result<Commit> {
        let id = self
            .git(&[
                "rev-parse",
                "--verify",
                "--end-of-options",
                &format!("{rev}^{{commit}}"),
            ])
            .map_err(|e| {
                bad_input!("{flag} {rev}: not a commit of {} ({e})", self.dir.display())
            })?;
        let subject = self
            .git(&["log", "-1", "--format=%s", &id])
            .map_err(|e| anyhow::anyhow!("git log {id}: {e}"))?;
        Ok(Commit { id, subject })
    }

    /// The commits from `good` (exclusive) to `bad` (inclusive) along the
    /// first-parent chain of `bad`, oldest first. `good` must be a
    /// first-parent ancestor of `bad`.
    pub fn path(&self, good: &Commit, bad: &Commit) -> anyhow::Result<Vec<Commit>> {
        if good.id == bad.id {
            return Err(bad_input!(
                "--good and --bad name the same commit {}",
                good.short()
            ));
        }
        let range = format!("{}..{}", good.id, bad.id);
        let out = self
            .git(&[
                "rev-list",
                "--first-parent",
                "--ancestry-path",
                "--reverse",
                "--format=%H %s",
                &range,
            ])
            .map_err(|e| anyhow::anyhow!("git rev-list {range}: {e}"))?;
        // `--format` prints a `commit ID` line before each formatted one.
        let list: Vec<Commit> = out
            .lines()
            .filter(|l| !l.starts_with("commit "))
            .filter_map(|l| {
                let (id, subject) = l.split_once(' ').unwrap_or((l, ""));
                (!id.is_empty()).then(|| Commit {
                    id: id.to_string(),
                    subject: subject.to_string(),
                })
            })
            .collect();
        let on_chain = list.last().is_some_and(|c| c.id == bad.id)
            && self
                .git(&["rev-parse", &format!("{}^", list[0].id)])
                .is_ok_and(|p| p == good.id);
        if !on_chain {
            return Err(bad_input!(
                "--good {} is not a first-parent ancestor of --bad {} (kbench bisects the first-parent chain of the bad commit)",
                good.short(),
                bad.short()
            ));
        }
        Ok(list)
    }

    /// Check `commit` out into `dir` as a detached worktree of this
    /// repository, unless `dir` already holds it. A leftover directory
    /// holding something else is replaced.
    pub fn worktree(&self, commit: &Commit, dir: &Path) -> anyhow::Result<()> {
        let at = |d: &Path| {
            Command::new("git")
                .arg("-C")
                .arg(d)
                .args(["rev-parse", "HEAD"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        };
        if dir.join(".git").exists() && at(dir).as_deref() == Some(commit.id.as_str()) {
            return Ok(());
        }
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .map_err(|e| anyhow::anyhow!("{}: cannot remove: {e}", dir.display()))?;
        }
        let _ = self.git(&["worktree", "prune"]);
        let d = dir.to_string_lossy();
        self.git(&["worktree", "add", "--force", "--detach", &d, &commit.id])
            .map_err(|e| anyhow::anyhow!("git worktree add {d} {}: {e}", commit.short()))?;
        Ok(())
    }
}
