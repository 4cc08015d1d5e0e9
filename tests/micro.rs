//! End-to-end tests of the micro-benchmark catalogue with the real binary:
//! every benchmark is listed and runs in a sane range, bad parameters exit
//! 2 with one line, the pipe patches report's plan is valid, and no child process
//! outlives a run, also when the run is interrupted with SIGINT.

mod common;

use common::{json, kbench, plan};
use std::collections::HashSet;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

const MICRO: &[&str] = &[
    "pipe-bw",
    "pipeflex",
    "pipe-lat",
    "ctx-switch",
    "unix-bw",
    "unix-lat",
    "tcp-bw",
    "tcp-lat",
    "fork-exit",
    "fork-exec",
    "posix-spawn",
    "thread-create",
    "mmap-munmap",
    "page-fault",
    "brk",
    "memcpy-bw",
    "read",
    "open-close",
    "stat",
    "lseek",
    "write-dev-null",
];

/// Benchmarks with more than one party, and their default placement.
const MULTI: &[(&str, &str)] = &[
    ("pipe-bw", "cross"),
    ("pipeflex", "cross"),
    ("pipe-lat", "cross"),
    ("ctx-switch", "same"),
    ("unix-bw", "cross"),
    ("unix-lat", "cross"),
    ("tcp-bw", "cross"),
    ("tcp-lat", "cross"),
];

fn two_cpus() -> bool {
    common::usable_cpus() >= 2
}

#[test]
fn list_shows_every_benchmark_with_its_default_placement() {
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args(["list", "--json"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let list = v["benches"].as_array().unwrap();
    for name in MICRO {
        let b = list
            .iter()
            .find(|b| b["name"] == *name)
            .unwrap_or_else(|| panic!("{name} not listed"));
        assert!(b["description"].as_str().unwrap().len() > 80, "{name}");
        assert!(!b["metrics"].as_array().unwrap().is_empty());
    }
    for (name, default) in MULTI {
        let b = list.iter().find(|b| b["name"] == *name).unwrap();
        let p = b["params"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "placement")
            .unwrap_or_else(|| panic!("{name} has no placement param"));
        assert_eq!(p["default"], *default, "{name}");
        let desc = b["description"].as_str().unwrap();
        assert!(
            desc.contains(&format!("placement {default}")),
            "{name}: the description must explain the default placement: {desc}"
        );
    }
    let text = kbench(dir.path()).arg("list").assert().success();
    let text = String::from_utf8_lossy(&text.get_output().stdout).to_string();
    for name in MICRO {
        assert!(
            text.lines().any(|l| l.starts_with(&format!("  {name} "))),
            "{name}"
        );
    }
    let one = kbench(dir.path())
        .args(["list", "pipe-bw"])
        .assert()
        .success();
    let one = String::from_utf8_lossy(&one.get_output().stdout).to_string();
    assert!(one.contains("bytes/s [B/s], higher is better"), "{one}");
}

#[test]
fn every_benchmark_runs_in_a_sane_range() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec![
        "run",
        "--samples",
        "2",
        "--sample-time",
        "0.02",
        "--warmup",
        "0",
    ];
    args.extend(["--json", "--quiet"]);
    // Cross placement needs two CPUs; on one CPU run the parties together.
    let specs: Vec<String> = MICRO
        .iter()
        .map(|n| {
            if !two_cpus() && MULTI.iter().any(|(m, _)| m == n) {
                format!("{n}:placement=same")
            } else {
                n.to_string()
            }
        })
        .collect();
    args.extend(specs.iter().map(|s| s.as_str()));
    let out = kbench(dir.path()).args(&args).assert().success();
    let v = json(&out.get_output().stdout);
    let all = v["cells"].as_array().unwrap();
    // Each benchmark's own metric, then the counters read by default
    // beside it.
    let cells: Vec<_> = all.iter().filter(|c| !common::is_counter(c)).collect();
    assert_eq!(cells.len(), MICRO.len());
    for c in &cells {
        let name = c["bench"].as_str().unwrap();
        assert_eq!(c["n"], 2, "{name}");
        let med = c["median"].as_f64().unwrap();
        let (lo, hi) = match c["unit"].as_str().unwrap() {
            "B/s" => (1e6, 1e13),
            "ns" => (1.0, 1e9),
            u => panic!("{name}: unexpected unit {u}"),
        };
        assert!(med > lo && med < hi, "{name}: median {med}");
        // Every micro-benchmark counts its operations (a bandwidth
        // benchmark's are its writes), so each has counters per operation.
        counters_are_sane(all, name);
        if MULTI.iter().any(|(m, _)| *m == name) {
            let pl = c["placement"].as_str().unwrap_or_else(|| panic!("{name}"));
            assert!(pl.contains("cpu "), "{name}: placement {pl}");
        }
    }
    let pipe = cells.iter().find(|c| c["bench"] == "pipe-bw").unwrap();
    assert!(
        pipe["notes"]["pipe size"]
            .as_str()
            .unwrap()
            .starts_with("65536"),
        "{}",
        pipe["notes"]
    );
}

#[test]
fn bad_parameters_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let max: u64 = std::fs::read_to_string("/proc/sys/fs/pipe-max-size")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let too_big = format!("pipe-bw:pipe_size={}", max * 2);
    for (spec, says) in [
        ("pipe-bw:chunk=0", "chunk"),
        (too_big.as_str(), "above the system maximum"),
        ("pipe-bw:bogus=1", "unknown parameter `bogus`"),
        ("pipeflex:copies=0", "copies"),
        ("pipe-lat:placement=sideways", "placement"),
        ("unix-bw:type=dgram,chunk=1m", "too large for a datagram"),
        ("fork-exec:program=/nonexistent", "not an executable"),
        ("stat:path=/nonexistent", "does not exist"),
        ("mmap-munmap:size=0", "size"),
    ] {
        let out = kbench(dir.path()).args(["run", spec]).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert_eq!(err.trim_end().lines().count(), 1, "{spec}: {err}");
        assert!(err.contains(says), "{spec}: {err}");
    }
}

#[test]
fn cross_placement_on_one_allowed_cpu_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let c = common::cpu(0);
    let p = plan(
        dir.path(),
        "up.toml",
        &format!(
            "name = \"up\"\n[factors]\ncpus = {{ apply = \"cpus\", values = [\"{c}\"] }}\n[[bench]]\nuse = \"pipe-lat\"\n"
        ),
    );
    // The cell cannot be prepared: the runner records it as failed (the
    // other cells of a plan would still run) and the run exits 1.
    let out = kbench(dir.path())
        .args(["run", p.to_str().unwrap(), "--samples", "1", "-q"])
        .assert()
        .code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    let line = err
        .lines()
        .find(|l| l.contains("placement=cross"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(
        line.contains(&format!(
            "placement=cross needs at least 2 CPUs but only CPU {c} is allowed"
        )),
        "{err}"
    );
}

#[test]
fn the_pipe_patches_example_is_valid_and_runs() {
    if !two_cpus() {
        return; // its `cpus` factor compares one CPU with two
    }
    let dir = tempfile::tempdir().unwrap();
    // It names CPUs 0 and 1; here they are the first two this test may use.
    let ex = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/pipe-patches.toml"
    ));
    let ex = plan(
        dir.path(),
        "pipe-patches.toml",
        &common::usable_plan(&ex.unwrap()),
    );
    let out = kbench(dir.path())
        .args([
            "run",
            ex.to_str().unwrap(),
            "--samples",
            "1",
            "--sample-time",
            "0.005",
        ])
        .args(["--warmup", "0", "--json", "--quiet"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let cells: Vec<&serde_json::Value> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["bench"] == "pipe-bw" || c["bench"] == "pipeflex")
        .filter(|c| !common::is_counter(c))
        .collect();
    // 2 pipe sizes x 2 copy modes x 2 CPU sets x 10 sizes x 2 benchmarks
    // (bytes/s; the counters per write beside each are checked in
    // `every_benchmark_runs_in_a_sane_range`).
    assert_eq!(cells.len(), 160);
    for c in cells {
        let granted = c["notes"]["pipe size"].as_str().unwrap();
        let want = c["params"]["pipe_size"].as_i64().unwrap();
        assert!(granted.starts_with(&want.to_string()), "{granted}");
        if c["factors"]["zero_copy"] == "zc" {
            assert!(
                c["notes"]["writer"]
                    .as_str()
                    .unwrap()
                    .starts_with("vmsplice")
            );
        }
        if c["factors"]["cpus"] == "UP" {
            assert!(
                c["placement"].as_str().unwrap().contains(&format!(
                    "unpinned in {c} (last on cpu {c})",
                    c = common::cpu(0)
                )),
                "{}",
                c["placement"]
            );
        }
    }
}

// --- no child left behind ---------------------------------------------------

/// `(pid, start time)` of every process whose parent is `parent`.
fn children_of(parent: i32) -> Vec<(i32, u64)> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return v;
    };
    for e in dir.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if let Some((ppid, start)) = stat(pid)
            && ppid == parent
        {
            v.push((pid, start));
        }
    }
    v
}

/// Parent and start time of a process, if it exists (zombies included).
fn stat(pid: i32) -> Option<(i32, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some((f[1].parse().ok()?, f[19].parse().ok()?))
}

fn still_there(seen: &HashSet<(i32, u64)>) -> Vec<(i32, u64)> {
    seen.iter()
        .filter(|(pid, start)| stat(*pid).is_some_and(|(_, s)| s == *start))
        .copied()
        .collect()
}

/// Orphans are re-parented to this test process instead of init, so a
/// child kbench failed to reap stays visible (as a zombie) after kbench
/// exits, even when PR_SET_PDEATHSIG killed it.
fn become_subreaper() {
    // SAFETY: a process attribute of the test binary.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
}

fn spawn(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    std::process::Command::new(common::bin())
        .env("KBENCH_DB", common::db(dir))
        .args(args)
        .process_group(0)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

fn placement() -> &'static str {
    if two_cpus() { "cross" } else { "same" }
}

#[test]
fn no_child_is_left_behind_after_a_run() {
    become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let pl = placement();
    let specs = [
        format!("pipe-bw:placement={pl}"),
        format!("pipeflex:copies=2,placement={pl}"),
        format!("pipe-lat:placement={pl}"),
        format!("unix-lat:placement={pl}"),
        format!("tcp-bw:placement={pl}"),
    ];
    let mut args = vec!["run", "--samples", "5", "--sample-time", "0.02", "-q"];
    args.extend(specs.iter().map(|s| s.as_str()));
    let mut child = spawn(dir.path(), &args);
    let kpid = child.id() as i32;
    let mut seen = HashSet::new();
    let t0 = Instant::now();
    let status = loop {
        seen.extend(children_of(kpid));
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t0.elapsed() < Duration::from_secs(120), "run hangs");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(status.success());
    // 2 + 4 + 1 + 1 + 2 party children.
    assert!(seen.len() >= 10, "saw only {} children", seen.len());
    let left = still_there(&seen);
    assert!(left.is_empty(), "children left behind: {left:?}");
}

#[test]
fn no_child_is_left_behind_after_sigint() {
    become_subreaper();
    let dir = tempfile::tempdir().unwrap();
    let pl = placement();
    let specs = [
        format!("pipe-bw:placement={pl}"),
        format!("pipeflex:copies=2,placement={pl}"),
        format!("pipe-lat:placement={pl}"),
    ];
    let mut args = vec!["run", "--samples", "100000", "--sample-time", "0.02", "-q"];
    args.extend(specs.iter().map(|s| s.as_str()));
    let mut child = spawn(dir.path(), &args);
    let kpid = child.id() as i32;
    let mut seen = HashSet::new();
    let t0 = Instant::now();
    // All 7 parties exist and sampling has begun.
    loop {
        seen.extend(children_of(kpid));
        let samples: i64 = rusqlite::Connection::open(common::db(dir.path()))
            .and_then(|db| db.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0)))
            .unwrap_or(0);
        if seen.len() >= 7 && samples >= 3 {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "kbench ended early");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no samples appeared"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Ctrl-C at a terminal: SIGINT to the whole process group.
    // SAFETY: signalling the process group of our own child.
    unsafe { libc::kill(-kpid, libc::SIGINT) };
    let t1 = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t1.elapsed() < Duration::from_secs(20),
            "no stop after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(1), "interrupted runs exit 1");
    let left = still_there(&seen);
    assert!(left.is_empty(), "children left behind: {left:?}");
    let st: String = rusqlite::Connection::open(common::db(dir.path()))
        .unwrap()
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(st, "interrupted");
}

/// The default counters of benchmark `name` in a run's `cells`: each one
/// there, and in relation to the others and to the benchmark's time.
fn counters_are_sane(cells: &[serde_json::Value], name: &str) {
    let of = |metric: &str| {
        let c = cells
            .iter()
            .find(|c| c["bench"] == name && c["metric"] == metric)
            .unwrap_or_else(|| panic!("{name}: no {metric}"));
        assert_eq!(c["n"], 2, "{name} {metric}");
        c["median"].as_f64().unwrap()
    };
    let sw = of("context-switches/op");
    let (vol, invol) = (of("voluntary-switches/op"), of("involuntary-switches/op"));
    for (m, x) in [
        ("task-clock", of("task-clock/op")),
        ("switches", sw),
        ("voluntary", vol),
        ("involuntary", invol),
        ("migrations", of("cpu-migrations/op")),
        ("minor faults", of("minor-faults/op")),
        ("major faults", of("major-faults/op")),
    ] {
        assert!(x >= 0.0 && x.is_finite(), "{name}: {m} {x}");
    }
    // The split is read for kbench and all it started, perf's sum for
    // the measuring thread and what it started: the split holds the sum
    // (each a median of two samples: a tolerance of one switch per op).
    assert!(vol + invol + 1.0 >= sw, "{name}: {vol} + {invol} < {sw}");
    // A context switch costs CPU time: there cannot be more switches per
    // operation than operations' worth of CPU time allows (>= 100 ns each).
    assert!(
        sw * 100.0 <= of("task-clock/op") + 1e3,
        "{name}: {sw} switches/op"
    );
}

/// The value of `metric` of the cell whose placement is `placement` (or,
/// with `None`, of the only cell of `bench`).
fn cell_median(v: &serde_json::Value, bench: &str, metric: &str, placement: Option<&str>) -> f64 {
    let cells = v["cells"].as_array().unwrap();
    let c = cells
        .iter()
        .find(|c| {
            c["bench"] == bench
                && c["metric"] == metric
                && placement.is_none_or(|p| c["placement"].as_str() == Some(p))
        })
        .unwrap_or_else(|| panic!("no {bench} {metric} {placement:?} in {v}"));
    c["median"].as_f64().unwrap()
}

/// A bandwidth benchmark's operation is one write of `chunk` bytes: its
/// counters are per write, so its CPU time per operation lies between
/// what copying the chunk in and out must cost at the very least and what
/// every CPU could spend in the wall time one write takes.
#[test]
fn bandwidth_counters_are_per_write() {
    let _t = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let chunk = 16384.0;
    let spec = if two_cpus() {
        "pipe-bw:chunk=16k"
    } else {
        "pipe-bw:chunk=16k,placement=same"
    };
    let out = kbench(dir.path())
        .args(["run", spec, "--samples", "3", "--sample-time", "0.05"])
        .args(["--warmup", "1", "--json", "--quiet"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let bw = cell_median(&v, "pipe-bw", "bytes/s", None);
    let cpu = cell_median(&v, "pipe-bw", "task-clock/op", None);
    let wall = chunk / bw * 1e9;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    // 16 KiB copied in and out at no more than 100 GB/s: at least 300 ns;
    // per sample (thousands of writes) it would be far above the bound.
    assert!(
        cpu > 300.0 && cpu <= wall * cpus * 1.2 + 1e3,
        "task-clock {cpu} ns per write, {wall} ns of wall time per write, {cpus} CPUs"
    );
    // The writer blocks at most a few times per write (the pipe holds
    // 64 KiB by default): a context switch per byte would be thousands.
    let sw = cell_median(&v, "pipe-bw", "context-switches/op", None);
    assert!((0.0..20.0).contains(&sw), "{sw} context switches per write");
    // `kbench list` says what the operation is.
    let list = json(
        &kbench(dir.path())
            .args(["list", "pipe-bw", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let about = list["bench"]["description"].as_str().unwrap_or_default();
    assert!(
        about.contains("per operation: one `chunk`-byte write"),
        "{list}"
    );
}

/// Every fault of page-fault's timed pages is a minor fault: one per
/// page, as the benchmark's own getrusage count says.
fn one_minor_fault_per_page(v: &serde_json::Value) {
    let faults = cell_median(v, "page-fault", "minor-faults/op", None);
    assert!(
        (0.9..1.5).contains(&faults),
        "minor faults per page {faults}"
    );
}

#[test]
fn counters_are_stored_per_operation_beside_the_metric() {
    let _t = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let pinned = format!("null-syscall:cpu={}", common::cpu(0));
    let out = kbench(dir.path())
        .args(["run", "--counters", "default", "--samples", "3"])
        .args([
            "--sample-time",
            "0.02",
            "--warmup",
            "1",
            "--json",
            "--quiet",
        ])
        .args(["page-fault", &pinned, "fork-exec"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    one_minor_fault_per_page(&v);
    // The parent waits while its child runs: their CPU time per exec is
    // about the wall time, not the sum over every sample so far (the
    // counts of ended children are not cleared by a counter reset).
    let wall = cell_median(&v, "fork-exec", "ns/op", None);
    let cpu = cell_median(&v, "fork-exec", "task-clock/op", None);
    assert!(
        cpu > 0.0 && cpu < 1.5 * wall,
        "fork-exec: {cpu} cpu-ns, {wall} ns"
    );
    // A syscall loop on one CPU: its CPU time per call is at most its
    // wall time per call, and it neither faults nor moves.
    let place = format!("cpu {}", common::cpu(0));
    let ns = cell_median(&v, "null-syscall", "ns/op", Some(&place));
    let task = cell_median(&v, "null-syscall", "task-clock/op", Some(&place));
    assert!(
        task > 0.0 && task < ns * 1.2,
        "task-clock {task} ns, wall {ns} ns"
    );
    for m in ["minor-faults/op", "major-faults/op", "cpu-migrations/op"] {
        let x = cell_median(&v, "null-syscall", m, Some(&place));
        assert!(x < 1e-3, "{m} {x}");
    }
    let cell = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["bench"] == "page-fault");
    let note = cell.unwrap()["notes"]["counters"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(note.contains("minor-faults"), "{note}");
    // Stored like any metric: the store holds the samples.
    let db = common::sqlite(dir.path());
    let n: i64 = db
        .query_row(
            "SELECT count(*) FROM samples WHERE metric = 'context-switches/op'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 9);
}

#[test]
fn an_unknown_counter_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args(["run", "--counters", "task-clock,cycels", "null-syscall"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("`cycels`"), "{err}");
}

/// Issue 45: `--counters page-faults` (perf's own name) was refused.
/// perf's names and aliases are taken, each stored under perf's name, and
/// page-faults (minor plus major) read one per page touched, as
/// minor-faults do beside it.
#[test]
fn perfs_names_and_aliases_are_counted() {
    let _t = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args(["run", "--counters"])
        .arg("context-switches,cpu-migrations,page-faults,cs,migrations,faults,minor-faults")
        .args(["--samples", "2", "--sample-time", "0.02", "--warmup", "1"])
        .args(["--json", "--quiet", "page-fault"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let faults = cell_median(&v, "page-fault", "page-faults/op", None);
    let minor = cell_median(&v, "page-fault", "minor-faults/op", None);
    assert!(
        (0.9..1.5).contains(&faults),
        "page faults per page {faults}"
    );
    assert!(
        faults >= minor * 0.99,
        "page-faults {faults} < minor {minor}"
    );
    for m in ["context-switches/op", "cpu-migrations/op"] {
        assert!(cell_median(&v, "page-fault", m, None) >= 0.0);
    }
    let list = kbench(dir.path())
        .args(["list", "counters"])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&list.get_output().stdout).to_string();
    assert!(
        text.lines()
            .any(|l| l.starts_with("page-faults ") && l.contains("faults")),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

#[test]
fn counters_follow_a_cell_into_its_worker_processes() {
    let _t = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args(["run", "--counters", "minor-faults", "--processes", "2"])
        .args(["--samples", "2", "--sample-time", "0.02", "--warmup", "1"])
        .args(["--json", "--quiet", "page-fault"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    // The pages are touched in the workers, not in kbench: counted there.
    one_minor_fault_per_page(&v);
}

/// `kbench run ARGS --json -q null-syscall` while, with `bounce`, this
/// test moves kbench's thread between the first two usable CPUs every
/// millisecond; its cells.
fn null_syscall_run(dir: &std::path::Path, bounce: bool) -> serde_json::Value {
    let child = std::process::Command::new(common::bin())
        .env("KBENCH_DB", common::db(dir))
        .args([
            "run",
            "--counters",
            "default",
            "--samples",
            "3",
            "--sample-time",
            "0.05",
            "--warmup",
            "0",
        ])
        .args(["--json", "-q", "null-syscall"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let sets = [common::cpu(0), common::cpu(1)].map(|c| {
        // SAFETY: cpu_set_t is plain data; CPU_SET sets one bit in it.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: set is a cpu_set_t we own; c is below CPU_SETSIZE.
        unsafe { libc::CPU_SET(c, &mut set) };
        set
    });
    let t0 = Instant::now();
    let mut k = 0;
    while bounce && t0.elapsed() < Duration::from_secs(60) {
        // Fails once kbench has ended; its output is read below.
        let size = std::mem::size_of::<libc::cpu_set_t>();
        // SAFETY: a valid CPU set for our own child's main thread.
        if unsafe { libc::sched_setaffinity(pid, size, &sets[k % 2]) } != 0 {
            break;
        }
        k += 1;
        std::thread::sleep(Duration::from_millis(1));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    json(&out.stdout)
}

#[test]
fn a_bounced_benchmark_shows_its_migrations_per_operation() {
    if !two_cpus() {
        eprintln!("skipped: one usable CPU, nothing to migrate to");
        return;
    }
    let _t = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let still = null_syscall_run(dir.path(), false);
    let bounced = null_syscall_run(dir.path(), true);
    let m = |v: &serde_json::Value| cell_median(v, "null-syscall", "cpu-migrations/op", None);
    let ns = cell_median(&bounced, "null-syscall", "ns/op", None);
    let (moved, stayed) = (m(&bounced), m(&still));
    // Moved about once a millisecond (a sleep of 1 ms or more between
    // moves): at most one migration per 1e6 ns of operations, and far
    // more than the thread left alone, which the scheduler keeps put.
    assert!(
        moved > 5.0 * stayed && moved > 0.0 && moved <= ns / 1e6 * 1.5,
        "migrations per op: bounced {moved}, left alone {stayed} ({ns} ns/op)"
    );
    // `--counters none`: the benchmark's own metric only.
    let out = kbench(dir.path())
        .args(["run", "--counters", "none", "--samples", "1"])
        .args(["--sample-time", "0.01", "--json", "--quiet", "getpid"])
        .assert()
        .success();
    let v = json(&out.get_output().stdout);
    let metrics: Vec<&str> = v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["ns/op"]);
}
