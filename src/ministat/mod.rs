//! `kbench ministat`: a byte-identical drop-in for FreeBSD's ministat(1)
//! (and Debian's 2015 package with `--compat=2015`).

use std::ffi::OsString;
use std::process::ExitCode;

/// Entry point: `args` are the words after `kbench ministat`, parsed with
/// ministat's own getopt rules (not clap's). Output goes to stdout/stderr
/// exactly as ministat writes it; the exit code is ministat's.
pub fn main(_args: &[OsString]) -> anyhow::Result<ExitCode> {
    Err(crate::error::bad_input!("ministat is not available yet"))
}
