//! kbench: measure what an operating-system or low-level software change
//! costs.
//!
//! The crate is a library with one binary (`src/main.rs`, a thin shell) so
//! that the `cargo fuzz` targets under `fuzz/` can call the parsers
//! directly. Modules stay private: the only public surface is [`main`]
//! and the [`fuzzing`] entry points, so unused code is still reported by
//! the compiler.

mod bench;
mod cli;
mod cmd;
mod error;
mod event;
mod ids;
mod ministat;
mod plan;
mod record;
mod report;
mod runner;
mod select;
mod stats;
mod store;
mod system;
#[cfg(test)]
mod testing;
mod units;

use std::process::ExitCode;

/// Parse the command line, dispatch, print the error chain on failure and
/// map it to the exit-code contract (0 ok, 1 a run failed, 2 bad input).
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match cmd::dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            if error::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("kbench: {err:#}");
            ExitCode::from(error::exit_code(&err))
        }
    }
}

/// Entry points for the fuzz targets (`fuzz/fuzz_targets/`): each takes
/// untrusted bytes and must return, never panic or abort.
#[doc(hidden)]
pub mod fuzzing {
    /// Parse and validate a plan file's text (nothing is run or compiled).
    pub fn plan(text: &str) {
        let _ = crate::plan::parse(text, "fuzz.toml");
    }
}
