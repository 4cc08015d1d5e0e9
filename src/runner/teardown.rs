//! `shell` factors' setup and teardown commands, and the teardowns a
//! killed kbench owes.
//!
//! A setup changes the system (a sysctl, a mount, a daemon) and its
//! teardown changes it back. The runner runs the teardown of every step
//! whose setup started, also after Ctrl-C or SIGTERM (a teardown is not
//! cut short by them) and when the run stops on an error. Only a SIGKILL
//! (or a second Ctrl-C, which ends kbench at once) can skip it, so before
//! each setup the runner writes down the teardown it will owe, in a small
//! ledger kept per store (`$XDG_STATE_HOME/kbench/teardowns/STORE/`, where
//! STORE names the store without any password), and crosses it out once
//! the teardown ran. The next `kbench run` on that store runs what a dead
//! kbench owes before anything else (`--teardown-only` runs only that),
//! and `kbench status` names it.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::plan::ShellStep;
use crate::record::Owner;

/// A teardown owed: written before its setup runs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Debt {
    /// The run whose setup it was.
    pub run: String,
    pub plan: String,
    pub factor: String,
    pub label: String,
    pub teardown: String,
    /// The kbench that ran the setup: the debt is owed once it is gone.
    pub host: String,
    pub owner: Option<Owner>,
    /// Unix time the setup started.
    pub since: f64,
    /// The ledger file (not stored in it).
    #[serde(skip)]
    pub file: PathBuf,
}

impl Debt {
    /// How messages name it.
    pub fn describe(&self) -> String {
        crate::term::visible(&format!(
            "factor `{}` = `{}`: teardown `{}` (setup by run {} of plan `{}`, whose kbench is gone)",
            self.factor, self.label, self.teardown, self.run, self.plan
        ))
        .into_owned()
    }
}

/// The ledger directory of the run in progress in this process; `None`
/// (no bookkeeping) until the command line names a store.
static LEDGER: Mutex<Option<PathBuf>> = Mutex::new(None);

/// The ledger of the store named `store` (its `Locator::to_arg`, which
/// holds no password).
pub fn ledger_dir(store: &str) -> PathBuf {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("kbench/teardowns")
        .join(crate::ids::plan_hash(store))
}

/// Keep this process's debts in `dir` from now on.
pub fn keep_ledger_in(dir: PathBuf) {
    *LEDGER.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir);
}

/// The debts in `dir` whose kbench is gone, oldest first. A file that
/// does not read is named, not skipped.
pub fn owed(dir: &Path) -> anyhow::Result<Vec<Debt>> {
    let mut debts = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(debts);
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|err| anyhow::anyhow!("{}: {err}", path.display()))?;
        let mut d: Debt = serde_json::from_str(&text).map_err(|err| {
            anyhow::anyhow!(
                "{}: not a teardown kbench owes ({err}); remove it",
                path.display()
            )
        })?;
        d.file = path;
        let gone = d
            .owner
            .as_ref()
            .is_none_or(|o| crate::system::owner_is_gone(o, &d.host));
        if gone {
            debts.push(d);
        }
    }
    debts.sort_by(|a, b| a.since.total_cmp(&b.since).then(a.file.cmp(&b.file)));
    Ok(debts)
}

/// Run the teardowns owed, oldest first, saying so on stderr; each is
/// crossed out once it succeeds. A failing one stops with an error naming
/// its ledger file (remove the file to give it up).
pub fn pay(debts: &[Debt]) -> anyhow::Result<()> {
    for d in debts {
        eprintln!(
            "kbench: running the teardown a killed run left: {}",
            d.describe()
        );
        match shell_step(&d.teardown, false) {
            Ok(()) => {
                let _ = std::fs::remove_file(&d.file);
            }
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "the owed teardown `{}` {}; fix what it needs and run `kbench run --teardown-only` (or remove {} to give it up)",
                    crate::term::visible(&d.teardown),
                    crate::term::visible(&e),
                    d.file.display()
                ));
            }
        }
    }
    Ok(())
}

/// One entry of this process's ledger: crossed out by [`Entry::paid`].
pub struct Entry(Option<PathBuf>);

impl Entry {
    /// Write down the teardown `step` will owe once its setup starts (no
    /// entry for a step without a teardown, or without a ledger).
    pub fn owe(run: &str, plan: &str, n: usize, step: &ShellStep) -> Entry {
        let Some(teardown) = &step.teardown else {
            return Entry(None);
        };
        let Some(dir) = LEDGER.lock().unwrap_or_else(|e| e.into_inner()).clone() else {
            return Entry(None);
        };
        let d = Debt {
            run: run.to_string(),
            plan: plan.to_string(),
            factor: step.factor.clone(),
            label: step.label.clone(),
            teardown: teardown.clone(),
            host: crate::system::hostname(),
            owner: crate::system::owner(),
            since: crate::ids::unix_now(),
            file: PathBuf::new(),
        };
        let file = dir.join(format!("{run}-{n}.json"));
        let tmp = dir.join(format!(".{run}-{n}.json.tmp"));
        // Best effort: a ledger that cannot be written costs only the
        // reminder after a kill, which is said.
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::write(&tmp, serde_json::to_vec(&d).unwrap_or_default()))
            .and_then(|()| std::fs::rename(&tmp, &file));
        if let Err(e) = written {
            eprintln!(
                "kbench: warning: cannot note the teardown owed in {}: {e} (if kbench is killed, run it by hand: {teardown})",
                dir.display()
            );
            return Entry(None);
        }
        Entry(Some(file))
    }

    /// The teardown ran.
    pub fn paid(self) {
        if let Some(f) = self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Run the teardown of every step of `owed` (those whose setup started),
/// last first, crossing each out of the ledger; what failed, one message
/// each (the run reports them as warnings).
pub fn tear_down(owed: Vec<(&ShellStep, Entry)>) -> Vec<String> {
    let mut failed = Vec::new();
    for (st, entry) in owed.into_iter().rev() {
        if let Some(cmd) = &st.teardown
            && let Err(e) = shell_step(cmd, false)
        {
            failed.push(format!(
                "factor `{}` = `{}`: teardown `{cmd}` {e}",
                st.factor, st.label
            ));
        }
        entry.paid();
    }
    failed
}

/// Run a `shell` factor's setup or teardown through `sh -c`; the error
/// says how it failed, with the tail of its stderr. An `interruptible`
/// step is killed by Ctrl-C/SIGTERM; a teardown is not (it restores the
/// system; a second Ctrl-C ends kbench at once, leaving it owed).
pub fn shell_step(cmd: &str, interruptible: bool) -> Result<(), String> {
    let dir = std::env::temp_dir();
    let (err_path, err) = crate::bench::create_unique(&dir, crate::bench::private_file)
        .map_err(|e| format!("cannot run: {e:#}"))?;
    let argv = vec!["sh".to_string(), "-c".to_string(), cmd.to_string()];
    let how = crate::bench::command::Spawn {
        interruptible,
        ..Default::default()
    };
    let res = crate::bench::command::spawn_with(&argv, &dir, &[], None, err, &how);
    let tail = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let tail: String = tail.split_whitespace().collect::<Vec<_>>().join(" ");
    let tail = if tail.len() > 300 {
        tail[tail.ceil_char_boundary(tail.len() - 300)..].to_string()
    } else {
        tail
    };
    let with_tail = |m: String| {
        if tail.is_empty() {
            m
        } else {
            format!("{m}; stderr: {tail}")
        }
    };
    match res {
        Ok((_, crate::bench::command::Exit::Code(0))) => Ok(()),
        Ok((_, e)) => Err(with_tail(format!("failed ({e})"))),
        Err(e) => Err(format!("cannot run: {e}")),
    }
}
