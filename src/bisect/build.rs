//! Builds of revisions, cached by commit id: each commit is checked out
//! into a worktree of its own under the cache directory and built there
//! with the user's command (`sh -c`, the worktree as its working
//! directory). The outcome is remembered next to the worktree, with the
//! command it came from, so a commit built once with the same command is
//! never built again, by this bisection or a later one; a failed build is
//! remembered too (the revision is skipped, as `git bisect skip` would).

use std::path::{Path, PathBuf};

use super::git::{Commit, Repo};

/// Where a commit's build stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Built {
    /// Built (now, or `cached`), in this worktree.
    Ok { dir: PathBuf, cached: bool },
    /// The build command failed: the tail of its output, and where the
    /// whole log is.
    Failed { why: String, log: PathBuf },
}

/// The cache of one repository's builds.
pub struct Builds<'a> {
    pub repo: &'a Repo,
    pub root: PathBuf,
    pub command: Option<String>,
    /// Builds run (not cached) so far.
    pub built: usize,
    /// Builds found in the cache.
    pub reused: usize,
}

/// Default cache: `$XDG_CACHE_HOME/kbench/bisect` (or `~/.cache/...`).
pub fn default_root() -> PathBuf {
    crate::system::cache_dir("bisect")
}

impl<'a> Builds<'a> {
    /// The cache for `repo` under `root` (one directory per repository,
    /// named by a hash of its path).
    pub fn new(repo: &'a Repo, root: &Path, command: Option<String>) -> Builds<'a> {
        let name = repo
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into());
        let tag = crate::ids::plan_hash(&repo.dir.to_string_lossy());
        Builds {
            repo,
            root: root.join(format!("{name}-{tag}")),
            command,
            built: 0,
            reused: 0,
        }
    }

    /// The worktree of `commit`.
    pub fn dir(&self, commit: &Commit) -> PathBuf {
        self.root.join(&commit.id)
    }

    fn stamp(&self, commit: &Commit) -> PathBuf {
        self.root.join(format!("{}.build", commit.id))
    }

    fn log(&self, commit: &Commit) -> PathBuf {
        self.root.join(format!("{}.log", commit.id))
    }

    /// Check out and build `commit`, or find it built.
    pub fn build(&mut self, commit: &Commit) -> anyhow::Result<Built> {
        let dir = self.dir(commit);
        let cmd = self.command.clone().unwrap_or_default();
        let stamp = self.stamp(commit);
        // The stamp: `ok` or `failed`, a newline, the build command.
        if let Ok(text) = std::fs::read_to_string(&stamp)
            && let Some((state, was)) = text.split_once('\n')
            && was == cmd
            && (state == "failed" || dir.join(".git").exists())
        {
            self.reused += 1;
            return Ok(match state {
                "ok" => Built::Ok { dir, cached: true },
                _ => Built::Failed {
                    why: tail(&std::fs::read_to_string(self.log(commit)).unwrap_or_default()),
                    log: self.log(commit),
                },
            });
        }
        std::fs::create_dir_all(&self.root)
            .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", self.root.display()))?;
        let _ = std::fs::remove_file(&stamp);
        self.repo.worktree(commit, &dir)?;
        self.built += 1;
        let log = self.log(commit);
        let ok = if cmd.is_empty() {
            std::fs::write(&log, "")?;
            true
        } else {
            let out = std::fs::File::create(&log)
                .map_err(|e| anyhow::anyhow!("{}: cannot create: {e}", log.display()))?;
            let err = out.try_clone()?;
            std::process::Command::new("sh")
                .args(["-c", &cmd])
                .current_dir(&dir)
                .env("KBENCH_COMMIT", &commit.id)
                .stdin(std::process::Stdio::null())
                .stdout(out)
                .stderr(err)
                .status()
                .map_err(|e| anyhow::anyhow!("cannot run the build command `{cmd}`: {e}"))?
                .success()
        };
        std::fs::write(
            &stamp,
            format!("{}\n{cmd}", if ok { "ok" } else { "failed" }),
        )?;
        Ok(if ok {
            Built::Ok { dir, cached: false }
        } else {
            Built::Failed {
                why: tail(&std::fs::read_to_string(&log).unwrap_or_default()),
                log,
            }
        })
    }
}

/// The last non-empty line of a build log, shortened, for one-line
/// messages.
fn tail(log: &str) -> String {
    let last = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let last = last.trim();
    if last.len() > 160 {
        format!("...{}", &last[last.ceil_char_boundary(last.len() - 160)..])
    } else {
        last.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_is_the_last_line() {
        assert_eq!(tail("a\nerror: x\n\n"), "error: x");
        assert_eq!(tail(""), "");
        assert!(tail(&"y".repeat(500)).len() <= 163);
    }
}
