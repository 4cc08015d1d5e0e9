//! Address-space randomisation for scale cells. will-it-scale's runtest.py
//! runs every binary under `setarch -R` (ASLR off), and it matters: mmap1
//! moves by 6% with it. The kernel picks a process's layout (mmap base,
//! heap, stack) when it execs; a forked process keeps its parent's layout.
//! So kbench cannot turn ASLR off for a cell it forks: `kbench run`
//! re-executes itself once with randomisation off for the exec (Linux:
//! `ADDR_NO_RANDOMIZE` in its personality, as `setarch -R` does; FreeBSD:
//! procctl `PROC_ASLR_FORCE_DISABLE`, as `proccontrol -m aslr -s disable`
//! does), before it opens the store or prints anything, when its scale
//! cells want it off (`aslr=off`, the default). Each cell records what its
//! tasks really ran with (note `aslr`).

use crate::bench::Kind;
use crate::error::bad_input;
use crate::plan::Cell;

/// Set in the environment of the re-executed kbench, so it never loops;
/// removed again as soon as it is read, so no benchmark's process (a
/// command benchmark, a shell step) inherits it.
const MARK: &str = "KBENCH_ASLR_REEXEC";

/// "off" when this process runs without address-space randomisation.
pub fn current() -> &'static str {
    match crate::system::aslr_off() {
        Some(true) => "off",
        Some(false) => "on",
        None => "unknown",
    }
}

/// What the scale cells of a run want: `Some("off")`, `Some("on")`, or
/// `None` without scale cells. Cells wanting both are bad input: one
/// process has one layout policy.
pub fn wanted(cells: &[Cell]) -> anyhow::Result<Option<&'static str>> {
    let mut want: Option<&'static str> = None;
    for c in cells.iter().filter(|c| c.bench.kind() == Kind::Scale) {
        let w = if c.params.opt_str("aslr") == Some("on") {
            "on"
        } else {
            "off"
        };
        match want {
            Some(prev) if prev != w => {
                return Err(bad_input!(
                    "cells with aslr=on and aslr=off cannot share a run (one process has one address-space layout policy): `{}` wants aslr={w}; run them separately",
                    c.key
                ));
            }
            _ => want = Some(w),
        }
    }
    Ok(want)
}

/// Re-execute this kbench with ASLR off when the run's scale cells want
/// it off and it is on; returns only when no re-exec is needed or it
/// failed (then the cells note `aslr: on`). Call it while kbench is still
/// single-threaded (it edits the environment).
///
/// The re-executed process runs all of the run's cells, so micro and
/// command cells of a run that has scale cells run with ASLR off too
/// (their notes do not say so; docs/benchmarks.md does).
pub fn reexec_if_wanted(cells: &[Cell]) -> anyhow::Result<()> {
    let reexecuted = std::env::var_os(MARK).is_some();
    if reexecuted {
        // SAFETY: kbench has started no thread yet (see above), so nothing
        // reads the environment concurrently.
        unsafe { std::env::remove_var(MARK) };
    }
    if wanted(cells)? != Some("off") || current() != "on" || reexecuted {
        return Ok(());
    }
    if crate::system::set_exec_aslr(true).is_err() {
        return Ok(());
    }
    use std::os::unix::process::CommandExt;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let err = std::process::Command::new(crate::system::self_exe())
        .arg0(
            std::env::args_os()
                .next()
                .unwrap_or_else(|| "kbench".into()),
        )
        .args(args)
        .env(MARK, "1")
        .exec();
    // Only reached when exec failed: go on with randomisation on, as
    // runtest.py does when setarch fails.
    eprintln!(
        "kbench: warning: cannot re-execute with address-space randomisation off ({err}); scale cells run with it on"
    );
    // Randomisation was on (checked above): restore it for what we exec.
    let _ = crate::system::set_exec_aslr(false);
    Ok(())
}
