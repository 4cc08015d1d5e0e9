//! Shared helpers for the integration tests: the real `kbench` binary with
//! a throw-away store, JSON output, and the timing lock.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

#[allow(unused_imports)]
pub use kbench::test_support::{cpus_free, has_cpus, timing_lock as serial, usable_cpus};

/// The CPUs this test may use, from the affinity it was given (taskset, a
/// cpuset): tests pin to these, never to CPU 0 or 1 by number, so the
/// suite passes on any CPU of the machine.
pub fn cpus() -> Vec<usize> {
    kbench::test_support::affinity()
}

/// The `i`-th usable CPU, wrapping when fewer are usable.
pub fn cpu(i: usize) -> usize {
    let c = cpus();
    c[i % c.len()]
}

/// A plan (an example's text) with the CPUs it names mapped to usable
/// ones: CPU `i` in a `cpus` factor's values or a `cpu` parameter becomes
/// [`cpu`]`(i)`. The examples name CPUs 0 and 1.
pub fn usable_plan(text: &str) -> String {
    let list = regex::Regex::new(r#""([0-9][0-9,\-]*)""#).unwrap();
    let param = regex::Regex::new(r"\bcpu = ([0-9]+)").unwrap();
    let map_list = |l: &str| {
        let mut out: Vec<usize> = Vec::new();
        for part in l.split(',') {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            for i in a.parse::<usize>().unwrap()..=b.parse::<usize>().unwrap() {
                out.push(cpu(i));
            }
        }
        out.sort_unstable();
        out.dedup();
        let s: Vec<String> = out.iter().map(|c| c.to_string()).collect();
        s.join(",")
    };
    text.lines()
        .map(|line| {
            if line.contains(r#"apply = "cpus""#) {
                let (head, values) = line.split_at(line.find("values").unwrap_or(line.len()));
                let values = list.replace_all(values, |c: &regex::Captures| {
                    format!("\"{}\"", map_list(&c[1]))
                });
                format!("{head}{values}")
            } else {
                param
                    .replace_all(line, |c: &regex::Captures| {
                        format!("cpu = {}", cpu(c[1].parse().unwrap()))
                    })
                    .into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The `kbench` binary this test build made.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kbench"))
}

/// `kbench` with `KBENCH_DB` and the testcase cache inside `dir`, and no
/// colour.
pub fn kbench(dir: &Path) -> assert_cmd::Command {
    assert_cmd::Command::from_std(kbench_process(dir))
}

/// [`kbench`] as a plain `std::process::Command`, for a test that spawns
/// kbench, signals it or reads its output as it comes.
pub fn kbench_process(dir: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin());
    c.env("KBENCH_DB", db(dir))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("NO_COLOR", "1");
    c
}

pub fn db(dir: &Path) -> PathBuf {
    dir.join("kbench.db")
}

/// Open the store a test wrote, read-only, its samples readable as rows
/// with their metric and unit ([`sample_rows`]).
pub fn sqlite(dir: &Path) -> rusqlite::Connection {
    let c =
        rusqlite::Connection::open_with_flags(db(dir), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("store exists");
    sample_rows(&c);
    c
}

/// In this connection only, `samples` reads as one row per value with
/// its metric and unit (the store keeps them once per cell, in `series`):
/// a temporary view, which SQLite finds before the stored table.
pub fn sample_rows(c: &rusqlite::Connection) {
    c.execute_batch(
        "CREATE TEMP VIEW samples AS
         SELECT s.id, s.run_id, s.cell_id, m.metric, m.unit, s.value, s.round, s.seq, s.t,
                s.process
         FROM main.samples s JOIN main.series m ON m.id = s.series_id",
    )
    .expect("the store has the series table");
}

/// Write a plan file into `dir`.
pub fn plan(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write plan");
    p
}

/// Parse JSON printed on stdout.
pub fn json(out: &[u8]) -> serde_json::Value {
    serde_json::from_slice(out).expect("valid JSON on stdout")
}

/// `kbench run ARGS --json -q`, which must succeed (its stderr is shown
/// if not); the whole report.
pub fn run_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = kbench(dir)
        .arg("run")
        .args(args)
        .args(["--json", "-q"])
        .output()
        .expect("kbench runs");
    assert!(
        out.status.success(),
        "kbench run {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout)
}

/// The `cells` of a report.
pub fn cells(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["cells"].as_array().expect("cells").clone()
}

/// Whether a report cell is a counter per operation (read beside a micro
/// or scale cell's own metric by default): its unit is `events`,
/// `cpu-ns` or, for IPC, `instructions/cycle`.
pub fn is_counter(c: &serde_json::Value) -> bool {
    matches!(
        c["unit"].as_str(),
        Some("events" | "cpu-ns" | "instructions/cycle")
    )
}

/// The `cells` of a report that are the benchmarks' own metrics, without
/// the counters per operation beside them.
pub fn own_cells(v: &serde_json::Value) -> Vec<serde_json::Value> {
    cells(v).into_iter().filter(|c| !is_counter(c)).collect()
}

/// stdout of a command that must succeed.
pub fn stdout(c: &mut assert_cmd::Command) -> String {
    let out = c.output().expect("kbench runs");
    assert!(
        out.status.success(),
        "failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// A finished command must have succeeded; its stderr is the message if not.
#[track_caller]
/// A finished kbench's exit status (-1 when killed by a signal), stdout
/// and stderr.
pub fn outcome(out: std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

pub fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Samples stored so far in the test's store (0 before it exists).
pub fn stored_samples(dir: &Path) -> i64 {
    rusqlite::Connection::open_with_flags(db(dir), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)))
        .unwrap_or(0)
}

/// Wait until the store holds `n` samples (a minute at most).
pub fn wait_for_stored_samples(dir: &Path, n: i64) {
    let t0 = std::time::Instant::now();
    while stored_samples(dir) < n {
        assert!(t0.elapsed().as_secs() < 60, "no samples stored");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// `kbench ARGS` started in the background with the test's store, its
/// stderr piped (for [`interrupt`]) and its stdout dropped.
pub fn spawn(dir: &Path, args: &[&str]) -> std::process::Child {
    kbench_process(dir)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kbench starts")
}

/// Ctrl-C to a [`spawn`]ed kbench once `dir`'s store holds `samples`
/// samples: it must stop within 5 s, exit 1 and say it was interrupted.
/// Its stderr.
#[track_caller]
pub fn interrupt(dir: &Path, child: std::process::Child, samples: i64) -> String {
    wait_for_stored_samples(dir, samples);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = std::time::Instant::now();
    let out = child.wait_with_output().expect("kbench ends");
    assert!(t0.elapsed().as_secs_f64() < 5.0, "{:?}", t0.elapsed());
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    err
}

/// Whether a test can run kbench as `nobody` (root, and setpriv(1)); when
/// not, it says the test is skipped.
pub fn can_become_nobody() -> bool {
    // SAFETY: geteuid has no preconditions.
    let ok = unsafe { libc::geteuid() } == 0
        && std::process::Command::new("setpriv")
            .arg("--help")
            .output()
            .is_ok();
    if !ok {
        eprintln!("skipped: needs root and setpriv(1) to become `nobody`");
    }
    ok
}

/// `bin` run as `nobody:nogroup` without supplementary groups.
pub fn as_nobody(bin: &Path) -> std::process::Command {
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid", "nobody", "--regid", "nogroup", "--clear-groups"])
        .arg(bin);
    c
}

/// A tmpfs mounted for one test, unmounted when dropped.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mount a tmpfs of `size` at `dir`, or say why the test is skipped
    /// (mounting needs root, or CAP_SYS_ADMIN in a user namespace).
    pub fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700")])
            .arg("kbench-test")
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            Ok(o) => {
                eprintln!(
                    "skipping: cannot mount a tmpfs: {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("skipping: cannot run mount: {e}");
                None
            }
        }
    }

    /// Fill it to the last byte.
    pub fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join("filler")).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        while f.write(&block).is_ok_and(|n| n > 0) {}
        while f.write(&[0]).is_ok_and(|n| n > 0) {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Whether the real reader `what` (a Python module `py:NAME`, else a
/// program on PATH) is here. Outside CI a test without it says so and
/// passes over that part, as the server tests do (`cargo test` on a fresh
/// machine, as the README says); under CI (`CI` set, as `.ci/run` does) a
/// missing reader is a failure, never a skip.
#[allow(dead_code)]
pub fn reader(what: &str) -> bool {
    let here = match what.strip_prefix("py:") {
        Some(module) => std::process::Command::new("python3")
            .args(["-c", &format!("import {module}")])
            .output()
            .is_ok_and(|o| o.status.success()),
        None => std::process::Command::new(what)
            .arg("--version")
            .output()
            .is_ok(),
    };
    if !here {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is missing under CI (.ci/run installs it)"
        );
        eprintln!("skipped: no {what} here (.ci/run installs it)");
    }
    here
}
