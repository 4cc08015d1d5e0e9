//! kbench: measure what an operating-system or low-level software change costs.
//!
//! `main` is a thin shell: parse the command line, dispatch, print the error
//! chain on failure and map it to the exit-code contract (0 ok, 1 a run
//! failed, 2 bad input).

mod bench;
mod cli;
mod cmd;
mod error;
mod ministat;
mod plan;
mod report;
mod runner;
mod stats;
mod store;
mod system;
mod units;

use std::process::ExitCode;

fn main() -> ExitCode {
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
