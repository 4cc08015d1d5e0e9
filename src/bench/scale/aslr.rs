//! Address-space randomisation for scale cells. will-it-scale's runtest.py
//! runs every binary under `setarch -R` (ASLR off), and it matters: mmap1
//! moves by 6% with it. The kernel picks a process's layout (mmap base,
//! heap, stack) when it execs, from its personality; a forked process keeps
//! its parent's layout. So kbench cannot turn ASLR off for a cell it forks:
//! `kbench run` re-executes itself once with `ADDR_NO_RANDOMIZE` in its
//! personality, as `setarch -R` does, before it opens the store or prints
//! anything, when its scale cells want it off (`aslr=off`, the default).
//! Each cell records what its tasks really ran with (note `aslr`).

use crate::bench::Kind;
use crate::error::bad_input;
use crate::plan::Cell;

/// Set in the environment of the re-executed kbench, so it never loops;
/// removed again as soon as it is read, so no benchmark's process (a
/// command benchmark, a shell step) inherits it.
const MARK: &str = "KBENCH_ASLR_REEXEC";

/// The calling process's personality.
fn personality() -> Option<u64> {
    // SAFETY: 0xffffffff queries without changing anything.
    let p = unsafe { libc::personality(0xffff_ffff) };
    (p >= 0).then_some(p as u64)
}

/// "off" when this process runs without address-space randomisation.
pub fn current() -> &'static str {
    match personality() {
        Some(p) if p & libc::ADDR_NO_RANDOMIZE as u64 != 0 => "off",
        Some(_) => "on",
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
/// (their notes do not say so; the README does).
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
    let Some(p) = personality() else {
        return Ok(());
    };
    // SAFETY: setting our own personality; checked below.
    if unsafe { libc::personality((p | libc::ADDR_NO_RANDOMIZE as u64) as libc::c_ulong) } < 0 {
        return Ok(());
    }
    use std::os::unix::process::CommandExt;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let err = std::process::Command::new("/proc/self/exe")
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
    // SAFETY: restoring the personality we read.
    unsafe { libc::personality(p as libc::c_ulong) };
    Ok(())
}
