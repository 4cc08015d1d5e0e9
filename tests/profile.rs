//! `run --profile` and `kbench explain` on the real binary: a C program
//! whose variant `b` spends about 10% more of its time in one named
//! function, profiled with perf and explained; an A/A pair explains as
//! nothing changed.

mod common;

use common::*;
use std::path::Path;

const PROG: &str = include_str!("../scripts/explain/prog.c");

/// Whether perf can sample here; the tests say so and pass vacuously
/// nowhere: CI installs linux-perf.
fn compile(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("prog.c");
    std::fs::write(&src, PROG).unwrap();
    let bin = dir.join("prog");
    let st = std::process::Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(st.success());
    bin
}

fn plan_text(name: &str, bin: &Path, values: [&str; 2]) -> String {
    format!(
        "name = \"{name}\"\nsamples = 10\nwarmup = 1\n[factors]\n\
         variant = {{ apply = \"env\", var = \"VARIANT\", values = [\"{}\", \"{}\"] }}\n\
         [[bench]]\nname = \"prog\"\ncommand = [\"{}\"]\n",
        values[0],
        values[1],
        bin.display()
    )
}

fn explain(dir: &Path, name: &str, values: [&str; 2]) -> serde_json::Value {
    let a = format!("{name}:variant={}", values[0]);
    let b = format!("{name}:variant={}", values[1]);
    json(stdout(kbench(dir).args(["explain", &a, &b, "--json"])).as_bytes())
}

#[test]
fn explain_finds_the_function_that_got_slower_and_nothing_in_a_a() {
    let _t = kbench::test_support::timing_lock();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = compile(d);
    for (name, values) in [("ab", ["a", "b"]), ("aa", ["a", "a2"])] {
        let p = plan(d, &format!("{name}.toml"), &plan_text(name, &bin, values));
        let out = kbench(d)
            .args(["run", p.to_str().unwrap(), "--profile", "-q"])
            .output()
            .unwrap();
        assert_ok(&out);
    }
    // Profiles are stored per cell and measured round, compressed.
    let rows: i64 = sqlite(d)
        .query_row("SELECT COUNT(*) FROM profiles", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 40, "2 runs x 2 cells x 10 rounds");

    let e = explain(d, "ab", ["a", "b"]);
    let cell = &e["cells"][0];
    assert_eq!(cell["rounds"], 10, "{e:#}");
    assert_eq!(cell["paired_by_round"], true);
    let first = &cell["symbols"][0];
    assert_eq!(first["symbol"], "named_hotspot", "{e:#}");
    assert_eq!(first["changed"], true, "{e:#}");
    // Ranked by CPU cost per run, not by share: the hotspot's work
    // doubles (its cost about 2x), and the four functions whose work did
    // not change, though their shares fell, are not flagged.
    assert_eq!(cell["cost_unit"], "cpu-ns/op", "{e:#}");
    let lo = first["diff"]["lo"].as_f64().unwrap();
    let (ca, cb) = (
        first["cost_a"].as_f64().unwrap(),
        first["cost_b"].as_f64().unwrap(),
    );
    assert!(lo > 0.0 && (1.4..2.8).contains(&(cb / ca)), "{first:#}");
    let others: Vec<_> = (cell["symbols"].as_array().unwrap().iter())
        .filter(|s| s["changed"] == true && s["measure"] == "self")
        .filter(|s| s["symbol"].as_str().unwrap().starts_with("work_"))
        .collect();
    assert!(
        others.is_empty(),
        "unchanged functions flagged: {others:#?}"
    );
    // `-o` writes it where `report` would.
    let page = d.join("explain.html");
    let out = kbench(d)
        .args([
            "explain",
            "ab:variant=a",
            "ab:variant=b",
            "--format",
            "html",
            "-o",
        ])
        .arg(&page)
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(out.stdout.is_empty());
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("named_hotspot") && html.contains("CPU"),
        "{html}"
    );

    let aa = explain(d, "aa", ["a", "a2"]);
    let changed: Vec<_> = aa["cells"][0]["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["changed"] == true)
        .collect();
    assert!(changed.is_empty(), "A/A changed: {changed:#?}");

    // The text fits 80 columns and marks the change.
    let text = stdout(kbench(d).args(["explain", "ab:variant=a", "ab:variant=b"]));
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("* named_hotspot")),
        "{text}"
    );
}

#[test]
fn without_perf_profile_is_refused_before_measuring() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = kbench(d)
        .args(["run", "getppid", "--profile", "--samples", "1", "-q"])
        .env("PATH", d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--profile needs `perf`"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // Nothing was recorded.
    assert!(!db(d).exists() || stored_samples(d) == 0);
}

/// `compare --explain` and `check --explain` attach explain's output for
/// the cells that changed most; counters per operation (read by default)
/// are enough, no profile needed. Text within 80 columns, JSON as the
/// document's `explain` member.
#[test]
fn compare_and_check_attach_counters_explained() {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        kbench(dir.path())
            .args(["run", "getpid", "getppid", "--samples", "4"])
            .args(["--sample-time", "0.01", "--warmup", "0", "--quiet"])
            .assert()
            .success();
    }
    let text = kbench(dir.path())
        .args(["compare", "1", "2", "--explain=1"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("explain: 1 -> 2"), "{text}");
    assert!(text.contains("no profile (`run --profile`)"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let v = json(
        &kbench(dir.path())
            .args(["compare", "1", "2", "--explain", "--json"])
            .assert()
            .success()
            .get_output()
            .stdout,
    );
    let cells = v["explain"]["cells"].as_array().unwrap();
    // Two benchmarks, both explained (at most 3), from their counters.
    assert_eq!(cells.len(), 2, "{v}");
    for c in cells {
        assert_eq!(c["counter_rounds"], 4, "{c}");
        assert_eq!(c["rounds"], 0, "{c}");
        let metrics: Vec<&str> = (c["counters"].as_array().unwrap().iter())
            .map(|k| k["metric"].as_str().unwrap())
            .collect();
        assert!(metrics.contains(&"task-clock/op"), "{metrics:?}");
        assert!(!metrics.contains(&"ns/op"), "{metrics:?}");
    }
    let v = json(
        &kbench(dir.path())
            .args(["check", "--candidate", "2", "--baseline", "1"])
            .args(["--explain=1", "--format", "json"])
            .assert()
            .get_output()
            .stdout,
    );
    assert_eq!(v["kind"], "check");
    // Counters are not gated unless a plan's [gate] names them.
    for c in v["cells"].as_array().unwrap() {
        assert_eq!(c["metric"], "ns/op", "{c}");
    }
    let cells = v["explain"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{v}");
    assert_eq!(v["explain"]["a"], "baseline");
}
