//! End-to-end tests of the core: ad-hoc runs, plans, the store, reports,
//! sysinfo, and bad input. Each runs the real binary with its own store.

mod common;

use common::{json, kbench, plan, sqlite};
use predicates::prelude::*;
use std::time::{Duration, Instant};

/// A run report's cells split into each cell's own (primary) metric and
/// the counters per operation read beside it by default
/// ([`common::is_counter`]).
fn own_and_counted(v: &serde_json::Value) -> (Vec<&serde_json::Value>, Vec<&serde_json::Value>) {
    (v["cells"].as_array().unwrap().iter()).partition(|c| !common::is_counter(c))
}

/// Each cell of `own` has counters per operation beside it in `counted`
/// (the same benchmark and parameters, as many samples), task-clock among
/// them (read by default).
fn counted_beside(own: &[&serde_json::Value], counted: &[&serde_json::Value]) {
    for c in own {
        let beside: Vec<_> = counted
            .iter()
            .filter(|k| k["bench"] == c["bench"] && k["params"] == c["params"])
            .collect();
        assert!(
            beside.iter().any(|k| k["metric"] == "task-clock/op"),
            "no counters beside {c}"
        );
        for k in beside {
            assert_eq!(k["n"], c["n"], "{k}");
            let x = k["median"].as_f64().unwrap();
            assert!(x >= 0.0 && x.is_finite(), "{k}");
        }
    }
}

// --- ad-hoc runs and the store -------------------------------------------

#[test]
fn adhoc_run_is_in_range_stored_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args([
            "run",
            "getppid",
            "null-syscall",
            "--samples",
            "5",
            "--sample-time",
            "0.05",
            "--json",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    let (cells, counted) = own_and_counted(&v);
    assert_eq!(cells.len(), 2);
    counted_beside(&cells, &counted);
    for c in &cells {
        for k in [
            "bench", "params", "metric", "unit", "n", "min", "max", "median", "mean", "stddev",
        ] {
            assert!(c.get(k).is_some(), "cell lacks {k}: {c}");
        }
        assert_eq!(c["n"], 5);
        let mean = c["mean"].as_f64().unwrap();
        assert!(
            (10.0..100_000.0).contains(&mean),
            "{} mean {mean} ns",
            c["bench"]
        );
        assert!(c["min"].as_f64().unwrap() <= mean && mean <= c["max"].as_f64().unwrap());
    }
    // Exactly 5 samples per cell in the file; warm-ups are not stored.
    let db = sqlite(dir.path());
    let mut st = db
        .prepare("SELECT cell_id, COUNT(*) FROM samples WHERE metric = 'ns/op' GROUP BY cell_id")
        .unwrap();
    let counts: Vec<i64> = st
        .query_map([], |r| r.get(1))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(counts, vec![5, 5]);
    let fp: String = db
        .query_row("SELECT fingerprint FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(fp.contains("kernel_release"));

    kbench(dir.path()).arg("runs").assert().success().stdout(
        predicate::str::contains("ad hoc")
            .not()
            .and(predicate::str::contains("done")),
    );
    kbench(dir.path())
        .args(["report", "1"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "null-syscall: ns/op (lower is better)",
        ))
        .stdout(predicate::str::contains(
            "   N           Min           Max        Median           Avg        Stddev",
        ))
        // The counters (read by default) add no line: no table, and no
        // line naming them in a report that leaves nothing else out ...
        .stdout(predicate::str::contains("counters per op").not())
        .stdout(predicate::str::contains("task-clock/op").not());
    // ... `--all-metrics` shows their tables.
    kbench(dir.path())
        .args(["report", "1", "--all-metrics"])
        .assert()
        .success()
        .stdout(predicate::str::contains("null-syscall: task-clock/op"));
}

#[test]
fn text_report_labels_rows_with_parameters() {
    if !common::has_cpus(2, "text_report_labels_rows_with_parameters") {
        return; // two cells on two CPUs
    }
    let (a, b) = (common::cpu(0), common::cpu(1));
    let dir = tempfile::tempdir().unwrap();
    kbench(dir.path())
        .args([
            "run",
            &format!("getuid:cpu={a}"),
            &format!("getuid:cpu={b}"),
        ])
        .args(["--samples", "3", "--sample-time", "0.02"])
        .assert()
        .success()
        .stdout(predicate::str::is_match(r"(?m)^cpu \|  N ").unwrap())
        .stdout(predicate::str::is_match(format!(r"(?m)^{a} +\|  3 ")).unwrap())
        .stdout(predicate::str::contains(format!("placement [1]: cpu {b}")))
        // One table (ns/op): the counters read by default add no table
        // and no line; the report stays within 80 columns.
        .stdout(
            predicate::str::is_match(r"(?m)^cpu \|  N ")
                .unwrap()
                .count(1),
        )
        .stdout(predicate::str::contains("counters per op").not())
        .stdout(predicate::function(|s: &str| {
            s.lines().all(|l| l.chars().count() <= 80)
        }));
}

#[test]
fn default_suite_uses_the_default_store() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = assert_cmd::Command::new(common::bin());
    c.env("KBENCH_DB", "")
        .env("XDG_DATA_HOME", dir.path())
        .arg("run")
        .timeout(Duration::from_secs(60))
        .assert()
        .success()
        .stdout(predicate::str::contains("getppid: ns/op"))
        .stdout(predicate::str::contains("gettimeofday: ns/op"))
        // Counters are read by default but add no line to the text.
        .stdout(predicate::str::contains("counters per op").not());
    assert!(dir.path().join("kbench/kbench.db").exists());
    let db = rusqlite::Connection::open(dir.path().join("kbench/kbench.db")).unwrap();
    common::sample_rows(&db);
    let (own, counted): (i64, i64) = db
        .query_row(
            "SELECT count(*) FILTER (WHERE metric = 'ns/op'), count(*) FILTER (WHERE metric = 'task-clock/op') FROM samples",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    // Every sample of a micro-benchmark has its task-clock per operation.
    assert!(
        own > 0 && counted == own,
        "{own} ns/op, {counted} task-clock/op"
    );
}

// --- plans ------------------------------------------------------------------

#[test]
fn plan_cells_run_interleaved() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        dir.path(),
        "plan.toml",
        &common::usable_plan(
            r#"
name = "interleave"
samples = 4
sample_time = 0.01
warmup = 1
seed = 7

[factors]
cpus = { apply = "cpus", values = ["0", "1"], labels = ["first", "second"] }

[[bench]]
use = "spin"
sweep = { work = [50, 100] }
"#,
        ),
    );
    let out = kbench(dir.path())
        .args(["run", p.to_str().unwrap(), "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v = json(&out);
    let (cells, counted) = own_and_counted(&v);
    assert_eq!(cells.len(), 4);
    counted_beside(&cells, &counted);
    let db = sqlite(dir.path());
    let mut st = db
        .prepare("SELECT cell_id FROM samples WHERE metric = 'ns/op' ORDER BY id")
        .unwrap();
    let order: Vec<i64> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(order.len(), 16);
    // Every window of 4 consecutive rounds' worth holds all cells: each
    // round samples each cell once, so no cell repeats more than twice in a
    // row (end of one round, start of the next).
    for round in order.chunks(4) {
        let mut r = round.to_vec();
        r.sort();
        r.dedup();
        assert_eq!(r.len(), 4, "round {round:?} of {order:?}");
    }
    // The order is shuffled, not the same every round.
    assert!(order.chunks(4).any(|r| r != &order[..4]), "{order:?}");
    // The campaign is recorded under the plan's name.
    kbench(dir.path())
        .arg("runs")
        .assert()
        .stdout(predicate::str::contains("interleave"));
}

#[test]
fn same_seed_same_order() {
    let run = |dir: &std::path::Path| -> Vec<String> {
        kbench(dir)
            .args(["run", "spin:work=10", "spin:work=20", "spin:work=30"])
            .args([
                "--samples",
                "3",
                "--sample-time",
                "0.005",
                "--warmup",
                "0",
                "--seed",
                "42",
            ])
            .assert()
            .success();
        let db = sqlite(dir);
        let mut st = db
            .prepare("SELECT c.key FROM samples s JOIN cells c ON c.id = s.cell_id ORDER BY s.id")
            .unwrap();
        st.query_map([], |r| r.get(0))
            .unwrap()
            .map(|x| x.unwrap())
            .collect()
    };
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    assert_eq!(run(a.path()), run(b.path()));
}

/// Each bad plan exits 2 with one line naming file:line:column and the key.
#[test]
fn bad_plans_exit_2_with_position_and_key() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "name = \"x\"\n[[bench]]\nuse = \"nosuch\"\n",
            "plan.toml:3:7:",
            "nosuch",
        ),
        (
            "name = \"x\"\nsamplez = 3\n[[bench]]\nuse = \"getppid\"\n",
            "plan.toml:2:1:",
            "samplez",
        ),
        (
            "name = \"x\"\nsamples = \"many\"\n[[bench]]\nuse = \"getppid\"\n",
            "plan.toml:2:11:",
            "samples",
        ),
        (
            "name = \"x\"\n[factors]\nc = { apply = \"cpus\", values = [] }\n[[bench]]\nuse = \"getppid\"\n",
            "plan.toml:3:",
            "`c`",
        ),
        (
            "name = \"x\"\n[[bench]]\nuse = \"spin\"\nsweep = { work = [1, \"lots\"] }\n",
            "plan.toml:4:22:",
            "work",
        ),
        (
            "name = \"x\"\n[[bench]]\nuse = \"spin\"\nparams = { wrk = 5 }\n",
            "plan.toml:4:12:",
            "wrk",
        ),
        (
            "name = \"x\"\n[factors]\nc = { apply = \"cpus\", values = [\"0-99\"] }\n[[bench]]\nuse = \"getppid\"\n",
            "plan.toml:3:",
            "0-99",
        ),
        (
            "name = \"x\"\n[[bench]]\nuse = \"getppid\"\n[[bench\n",
            "plan.toml:4:",
            "bench",
        ),
    ];
    for (text, at, key) in cases {
        let dir = tempfile::tempdir().unwrap();
        let p = plan(dir.path(), "plan.toml", text);
        let out = kbench(dir.path())
            .current_dir(dir.path())
            .args(["run", "plan.toml"])
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line for {text:?}: {err}");
        assert!(err.contains(at) && err.contains(key), "{text:?} -> {err}");
        assert!(!err.contains("panicked"));
        assert!(out.stdout.is_empty());
        let _ = p;
    }
}

#[test]
fn bad_adhoc_specs_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    for (spec, needle) in [
        ("nosuch", "unknown benchmark `nosuch`"),
        ("getppid:cpu=9999", "CPU 9999"),
        ("getppid:foo=1", "unknown parameter `foo`"),
        ("getppid:cpu", "expected k=v"),
        ("spin:work=0", "out of range"),
    ] {
        kbench(dir.path())
            .args(["run", spec])
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
    kbench(dir.path())
        .args(["run", "getppid", "--sample-time", "0"])
        .assert()
        .code(2);
    kbench(dir.path()).args(["report", "77"]).assert().code(2);
    kbench(dir.path())
        .args(["run", "missing.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("missing.toml"));
}

// --- crash safety -------------------------------------------------------------

/// Poll the store until it holds at least `n` samples.
fn wait_for_samples(dir: &std::path::Path, n: i64) -> i64 {
    let t0 = Instant::now();
    loop {
        if let Ok(db) = rusqlite::Connection::open(common::db(dir)) {
            let c: i64 = db
                .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
                .unwrap_or(0);
            if c >= n {
                return c;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no samples appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_long_run(dir: &std::path::Path) -> std::process::Child {
    std::process::Command::new(common::bin())
        .env("KBENCH_DB", common::db(dir))
        .args([
            "run",
            "getppid",
            "spin",
            "--samples",
            "100000",
            "--sample-time",
            "0.01",
            "--warmup",
            "0",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn kill_9_keeps_every_committed_sample() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_long_run(dir.path());
    let seen = wait_for_samples(dir.path(), 10);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let db = rusqlite::Connection::open(common::db(dir.path())).unwrap();
    let ok: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let after: i64 = db
        .query_row("SELECT COUNT(*) FROM samples", [], |r| r.get(0))
        .unwrap();
    assert!(
        after >= seen,
        "{after} samples after the kill, {seen} seen before"
    );
    let status: String = db
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "running", "a killed run stays visibly unfinished");
}

#[test]
fn sigint_stops_after_the_current_sample_and_keeps_data() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_long_run(dir.path());
    let seen = wait_for_samples(dir.path(), 6);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t0 = Instant::now();
    let status = child.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(1));
    let db = sqlite(dir.path());
    let (st, n): (String, i64) = db
        .query_row(
            "SELECT status, (SELECT COUNT(*) FROM samples) FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(st, "interrupted");
    assert!(n >= seen);
}

/// A long sample: the first Ctrl-C is acknowledged at once, the second
/// ends the run without waiting for the sample.
#[test]
fn a_second_sigint_stops_a_long_sample_now() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(common::bin())
        .env("KBENCH_DB", common::db(dir.path()))
        .args(["run", "spin", "--samples", "3", "--sample-time", "30"])
        .args(["--warmup", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Calibration takes a few short loops; then a 30 s sample runs.
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    // SAFETY: as above.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(
        err.contains("stopping after the current sample (Ctrl-C again to stop now)"),
        "{err}"
    );
}

// --- list and sysinfo ---------------------------------------------------------

#[test]
fn list_shows_benchmarks_with_params_and_direction() {
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .arg("list")
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let s = String::from_utf8(out).unwrap();
    for b in [
        "getppid",
        "getpid",
        "getuid",
        "null-syscall",
        "clock-gettime",
        "gettimeofday",
        "spin",
    ] {
        assert!(
            s.lines().any(|l| l.starts_with(&format!("  {b} "))),
            "{b} missing"
        );
    }
    let one = common::stdout(kbench(dir.path()).args(["list", "getppid"]));
    assert!(one.contains("ns/op [ns], lower is better"), "{one}");
    assert!(one.contains("  cpu = cpu"), "{one}");
    let v = json(
        &kbench(dir.path())
            .args(["list", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    assert!(
        v["benches"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| b["name"] == "null-syscall")
    );
}

#[test]
fn sysinfo_reports_the_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    kbench(dir.path())
        .arg("sysinfo")
        .assert()
        .success()
        .stdout(predicate::str::contains("kernel"))
        .stdout(predicate::str::contains("vulnerabilities:"));
    let v = json(
        &kbench(dir.path())
            .args(["sysinfo", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    for k in [
        "hostname",
        "cpu_model",
        "microcode",
        "sockets",
        "cores",
        "threads",
        "smt",
        "numa_nodes",
        "memory_bytes",
        "kernel_release",
        "kernel_version",
        "os_release",
        "cmdline",
        "vulnerabilities",
        "governor",
        "boost",
        "thp",
        "clocksource",
        "hypervisor",
        "loadavg",
        "warnings",
    ] {
        assert!(v.get(k).is_some(), "sysinfo --json lacks {k}");
    }
    assert!(v["threads"].as_u64().unwrap() >= 1);
}

// --- documentation -------------------------------------------------------------

/// The plan shown in the usage guide and the shipped smoke example are
/// valid and run (with tiny samples).
#[test]
fn readme_plan_and_smoke_example_run() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/usage.md")).unwrap();
    let start = readme
        .find("```toml\nname = \"smoke\"")
        .expect("the plan example")
        + 8;
    let end = start + readme[start..].find("```").unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Both name CPUs 0 and 1; here they run on the CPUs this test has.
    let p = plan(
        dir.path(),
        "readme.toml",
        &common::usable_plan(&readme[start..end]),
    );
    let smoke =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/smoke.toml"));
    let smoke = plan(
        dir.path(),
        "smoke.toml",
        &common::usable_plan(&smoke.unwrap()),
    );
    for plan in [p.to_str().unwrap(), smoke.to_str().unwrap()] {
        // Both are named `smoke`: each gets its own store.
        let store = tempfile::tempdir().unwrap();
        let v = json(
            &kbench(store.path())
                .args([
                    "run",
                    plan,
                    "--samples",
                    "2",
                    "--sample-time",
                    "0.005",
                    "--warmup",
                    "0",
                    "--json",
                ])
                .assert()
                .success()
                .get_output()
                .stdout,
        );
        // spin x 2 cpus x 2 work + getppid x 2 cpus, counters beside each
        let (cells, counted) = own_and_counted(&v);
        assert_eq!(cells.len(), 6, "{plan}");
        counted_beside(&cells, &counted);
    }
}

#[test]
fn a_parameter_set_twice_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    plan(
        dir.path(),
        "plan.toml",
        "name = \"x\"\n[factors]\nwork = { apply = \"param\", values = [1, 2] }\n[[bench]]\nuse = \"spin\"\nsweep = { work = [3] }\n",
    );
    kbench(dir.path())
        .current_dir(dir.path())
        .args(["run", "plan.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "plan.toml:6:11: parameter `work` of `spin` is set both here and by factor `work`",
        ));
}

/// What a benchmark learnt (the pipe size the kernel granted) is printed
/// under its table; the calibration detail is not.
#[test]
fn text_report_prints_benchmark_notes() {
    // pipe-bw's default placement puts writer and reader on two CPUs.
    if !common::has_cpus(2, "text_report_prints_benchmark_notes") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    kbench(dir.path())
        .args([
            "run",
            "pipe-bw:pipe_size=32k,chunk=4k",
            "getuid",
            "--samples",
            "2",
        ])
        .args(["--sample-time", "0.02", "--warmup", "0"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "] pipe size: 32768 (requested 32k)",
        ))
        .stdout(predicate::str::contains("iterations").not());
}

/// Issue 43.7: hyperfine's `-r/--runs`, `-w`, `-p` and `-s` were refused.
/// They mean what they mean there: runs per command, warm-ups, a command
/// before every run and one before all of them.
#[test]
fn hyperfines_short_flags_mean_what_they_mean_there() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let marks = d.join("marks");
    let out = kbench(d)
        .args(["run", "-r", "3", "-w", "1", "-N", "-q", "--json"])
        .arg("-p")
        .arg(format!("sh -c 'echo p >> {}'", marks.display()))
        .arg("-s")
        .arg(format!("sh -c 'echo s >> {}'", marks.display()))
        .arg("true")
        .output()
        .unwrap();
    common::assert_ok(&out);
    // The `real` cell of a run's JSON.
    let real = |v: &serde_json::Value| -> serde_json::Value {
        (v["cells"].as_array().unwrap().iter())
            .find(|c| c["metric"] == "real")
            .unwrap()
            .clone()
    };
    let v = json(&out.stdout);
    assert_eq!(real(&v)["n"], 3, "{v:#}");
    // One setup; a prepare before each of the 1 warm-up and 3 runs.
    let m = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(m.matches('s').count(), 1, "{m}");
    assert_eq!(m.matches('p').count(), 4, "{m}");
    let out = kbench(d)
        .args(["run", "--runs", "2", "-q", "--json", "true"])
        .output()
        .unwrap();
    let v = json(&out.stdout);
    assert_eq!(real(&v)["n"], 2, "{v:#}");
}
