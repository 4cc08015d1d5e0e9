//! kbench: measure what an operating-system or low-level software change
//! costs.
//!
//! The crate is a library with one binary (`src/main.rs`, a thin shell) so
//! that the `cargo fuzz` targets under `fuzz/` can call the parsers
//! directly. Modules stay private: the only public surface is [`main`]
//! and the [`fuzzing`] entry points, so unused code is still reported by
//! the compiler.

mod bench;
mod bisect;
mod campaign;
mod check;
mod cli;
mod cmd;
mod error;
mod event;
mod explain;
mod export;
mod fleet;
mod ids;
mod import;
mod input;
mod ministat;
mod plan;
mod profile;
mod record;
mod redact;
mod report;
mod runner;
mod select;
mod spec;
mod stats;
mod store;
mod suggest;
mod system;
mod term;
#[cfg(test)]
mod testing;
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod testing_pg;
mod units;

use std::process::ExitCode;

/// Parse the command line, dispatch, print the error chain on failure and
/// map it to the exit-code contract (0 ok, 1 a run failed, 2 bad input).
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.first().map(|a| a.as_encoded_bytes()) == Some(system::watchdog::ARGV0.to_bytes()) {
        system::watchdog::main();
    }
    system::watchdog::binary_is_kbench();
    // `--processes`: a fresh process measuring one cell for the runner.
    if args.get(1).is_some_and(|a| a == runner::worker::SUBCOMMAND) {
        return match runner::worker::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("kbench worker: {}", shown(&err));
                ExitCode::FAILURE
            }
        };
    }
    // `--repeat`: one whole run in a fresh process, its events on stdout.
    if args.get(1).is_some_and(|a| a == runner::repeat::SUBCOMMAND) {
        return match runner::repeat::serve() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("kbench: {}", shown(&err));
                ExitCode::from(error::exit_code(&err))
            }
        };
    }
    match cmd::dispatch(args) {
        Ok(code) => code,
        Err(err) => {
            if error::is_broken_pipe(&err) {
                return ExitCode::SUCCESS;
            }
            eprintln!("kbench: {}", shown(&err));
            ExitCode::from(error::exit_code(&err))
        }
    }
}

/// An error chain as printed: one line, its secrets hidden, nothing a
/// terminal would act on.
fn shown(err: &anyhow::Error) -> String {
    let text = format!("{err:#}");
    term::visible(&redact::text(&text)).into_owned()
}

/// Entry points for the fuzz targets (`fuzz/fuzz_targets/`): each takes
/// untrusted bytes and must return, never panic or abort.
#[doc(hidden)]
pub mod fuzzing {
    /// Parse and validate a plan file's text (nothing is run or compiled).
    pub fn plan(text: &str) {
        let _ = crate::plan::parse(text, "fuzz.toml");
    }

    /// A plan's cells: the text parsed and validated (which refuses a
    /// plan of more than `max_cells` cells before building any), then
    /// expanded. A `max_cells` in the input is taken out, so the default
    /// bound holds. Every cell key is already redacted (redacting it
    /// again changes nothing) and unique.
    pub fn cells(text: &str) {
        if text.contains("max_cells") {
            return;
        }
        let Ok(plan) = crate::plan::parse(text, "fuzz.toml") else {
            return;
        };
        let cells = crate::plan::expand(&plan).expect("a validated plan expands");
        let mut keys = std::collections::HashSet::new();
        for c in &cells {
            assert_eq!(crate::redact::text(&c.key), c.key, "a key shows a secret");
            assert!(keys.insert(&c.key), "two cells share the key {}", c.key);
        }
    }

    /// A hosts file (`fleet --hosts`), parsed: every host's name is a
    /// bounded name without control characters, and no destination holds
    /// a password.
    pub fn hosts(text: &str) {
        let Ok(hosts) = crate::fleet::hosts::parse(text, "fuzz.toml", std::path::Path::new("/"))
        else {
            return;
        };
        for h in &hosts {
            assert!(crate::record::check_name("host name", &h.name).is_ok());
            assert_eq!(
                crate::redact::arg(&h.ssh),
                h.ssh,
                "a destination shows a secret"
            );
        }
    }

    /// Read an event stream (`kbench ingest`'s input) to its end or its
    /// first error.
    pub fn events(data: &[u8]) {
        let mut r = crate::event::jsonl::Reader::new(data, "fuzz.jsonl");
        while let Ok(Some(_)) = r.next_event() {}
    }

    /// `kbench ministat` in both modes: the first line holds the options
    /// (space-separated; words naming paths are dropped, so only stdin or
    /// missing files are read), the rest is stdin. Option parsing, the
    /// input reader, the statistics and the plot all run.
    pub fn ministat(data: &[u8]) {
        let (line, stdin) = match data.iter().position(|&b| b == b'\n') {
            Some(i) => (&data[..i], &data[i + 1..]),
            None => (data, &[][..]),
        };
        // A plot as wide as C's int allows costs gigabytes, in ministat as
        // in kbench; the harness keeps widths to 6 digits.
        let huge = |w: &[u8]| w.iter().filter(|b| b.is_ascii_digit()).count() > 6;
        if line.contains(&b'w') && line.split(|&b| b == b' ').any(huge) {
            return;
        }
        let words: Vec<Vec<u8>> = line
            .split(|&b| b == b' ')
            .filter(|w| !w.contains(&b'/'))
            .take(32)
            .map(<[u8]>::to_vec)
            .collect();
        for compat in [false, true] {
            crate::ministat::run_in_memory(compat, &words, &mut &stdin[..]);
        }
    }

    /// `kbench import --from ministat` on one file: the first byte picks
    /// the column (1-4) and the delimiters, the rest is the file; a parsed
    /// file is turned into the run's events.
    pub fn import_ministat(data: &[u8]) {
        let Some((&first, file)) = data.split_first() else {
            return;
        };
        let o = crate::import::ministat::Options {
            column: 1 + i64::from(first % 4),
            delims: [&b" \t"[..], b",", b" \t,;"][usize::from(first / 4 % 3)],
            higher: first & 0x80 != 0,
        };
        if let Ok(cell) = crate::import::ministat::parse("fuzz.txt", file, &o) {
            let run =
                crate::import::ImportedRun::new("ministat", "fuzz.txt", &[file], vec![cell], None);
            run.events().for_each(drop);
        }
    }

    /// `kbench import --from hyperfine` on one `--export-json` file (text,
    /// as the command reads it); a parsed file is turned into the run's
    /// events.
    pub fn import_hyperfine(data: &[u8]) {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        if let Ok(cells) = crate::import::hyperfine::parse("fuzz.json", text) {
            let run =
                crate::import::ImportedRun::new("hyperfine", "fuzz.json", &[data], cells, None);
            run.events().for_each(drop);
        }
    }

    /// `kbench import --from will-it-scale` on one file (text, as the
    /// command reads it); a parsed file is turned into the run's events.
    pub fn import_wis(data: &[u8]) {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        if let Ok(cells) = crate::import::wis::parse("fuzz.csv", "fuzz", text) {
            let run = crate::import::ImportedRun::new(
                "will-it-scale",
                "fuzz.csv",
                &[data],
                cells,
                Some("fuzz"),
            );
            run.events().for_each(drop);
        }
    }
}

/// Support shared by the unit tests and the integration tests (the
/// `test-support` feature, which only `cargo test` turns on).
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support {
    use std::os::fd::AsRawFd;

    pub use crate::cmd::dispatch;
    pub use crate::testing_pg as pg;

    /// Held while a test measures time: tests that time things must not
    /// overlap, whether they run as threads of one test binary (`cargo
    /// test`), in several binaries, or one process each (`cargo nextest`),
    /// so the lock is an `flock` on a file every process can find.
    pub struct TimingLock(std::fs::File);

    impl Drop for TimingLock {
        fn drop(&mut self) {
            // SAFETY: flock on an fd this struct owns.
            unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
        }
    }

    /// Wait for the timing lock.
    pub fn timing_lock() -> TimingLock {
        let path = std::env::temp_dir().join("kbench-timing-tests.lock");
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // SAFETY: flock on an fd we own; retried on EINTR.
        while unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            let e = std::io::Error::last_os_error();
            assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "flock: {e}");
        }
        TimingLock(f)
    }

    /// CPUs this process may run on (its affinity and cgroup quota).
    pub fn usable_cpus() -> usize {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }

    /// The CPUs this thread may run on, in order: the affinity it was
    /// given (taskset, a cpuset), which need not start at CPU 0.
    pub fn affinity() -> Vec<usize> {
        crate::system::get_affinity().expect("sched_getaffinity").0
    }

    /// The order in which `pin=compact` places scale tasks on `cpus`.
    pub fn compact_order(cpus: &[usize]) -> Vec<usize> {
        use crate::bench::scale::topology;
        let set = crate::units::CpuSet(cpus.to_vec());
        topology::order(&topology::read(&set), "compact")
    }

    /// True when at least `n` CPUs are usable; otherwise says on stderr
    /// that `test` is skipped, and why.
    pub fn has_cpus(n: usize, test: &str) -> bool {
        let have = usable_cpus();
        if have < n {
            eprintln!("skipping {test}: needs {n} CPUs, this process may use {have}");
        }
        have >= n
    }

    /// The share of a CPU each of `n` busy threads gets over `wall`
    /// (its own CPU time / elapsed time): about 1.0 each when `n` CPUs
    /// are free, less when other work shares them.
    pub fn cpu_shares(n: usize, wall: std::time::Duration) -> Vec<f64> {
        fn thread_cpu() -> f64 {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: clock_gettime fills the timespec we own.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
        }
        let threads: Vec<_> = (0..n)
            .map(|_| {
                std::thread::spawn(move || {
                    let (t0, c0) = (std::time::Instant::now(), thread_cpu());
                    while t0.elapsed() < wall {
                        std::hint::spin_loop();
                    }
                    (thread_cpu() - c0) / t0.elapsed().as_secs_f64()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    }

    /// True when `n` busy threads each get at least 80% of a CPU now;
    /// otherwise says on stderr that `what` is not checked, with the
    /// shares measured (a speed-up cannot be judged on a machine whose
    /// CPUs other work is using).
    pub fn cpus_free(n: usize, what: &str) -> bool {
        let shares = cpu_shares(n, std::time::Duration::from_millis(300));
        let free = shares.iter().all(|&s| s >= 0.8);
        if !free {
            let s: Vec<String> = shares.iter().map(|s| format!("{s:.2}")).collect();
            eprintln!(
                "not checking {what}: {n} busy threads got only [{}] of a CPU each (other work is running)",
                s.join(", ")
            );
        }
        free
    }
}
