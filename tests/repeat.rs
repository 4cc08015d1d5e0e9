//! `kbench run --repeat N` and a plan's `repeat`: whole runs, each in a
//! fresh kbench process, joined in one campaign.

mod common;

use common::{kbench, stdout};
use serde_json::Value;
use std::path::Path;

fn runs(dir: &Path) -> Vec<Value> {
    let v: Value = serde_json::from_str(&stdout(kbench(dir).args(["runs", "--json"]))).unwrap();
    v["runs"].as_array().unwrap().clone()
}

/// Samples of run `id` in the store: of the benchmarks' own metrics
/// (`own`), or all, the counters per operation beside them too (what
/// `runs` counts).
fn stored(dir: &Path, id: &Value, own: bool) -> i64 {
    let only = if own {
        " AND metric IN ('ns/op', 'real', 'user')"
    } else {
        ""
    };
    let q = format!("SELECT COUNT(*) FROM samples WHERE run_id = ?1{only}");
    common::sqlite(dir)
        .query_row(&q, [id.as_i64().unwrap()], |r| r.get(0))
        .unwrap()
}

/// The store's runs: `n` of them, each of the `adhoc` campaign, done,
/// with `cells` cells and `samples` samples of the benchmarks' own
/// metrics (`runs` counts the counters per operation beside them too).
fn done_runs(dir: &Path, n: usize, cells: u64, samples: i64) {
    let rs = runs(dir);
    assert_eq!(rs.len(), n, "{rs:#?}");
    for r in &rs {
        assert_eq!(r["campaign"], "adhoc", "{r:#}");
        assert_eq!(r["status"], "done", "{r:#}");
        assert_eq!(r["cells"], cells, "{r:#}");
        assert_eq!(stored(dir, &r["id"], true), samples, "{r:#}");
        assert_eq!(r["samples"], stored(dir, &r["id"], false), "{r:#}");
    }
}

/// The pid of the process that made each run, from the store.
fn owners(dir: &Path) -> Vec<i64> {
    let db = common::sqlite(dir);
    let mut st = db
        .prepare("SELECT json_extract(config, '$.owner.pid') FROM runs ORDER BY id")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<Vec<i64>, _>>()
        .unwrap()
}

#[test]
fn repeat_makes_whole_runs_in_fresh_processes_in_one_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = kbench(d)
        .args(["run", "getppid", "getpid", "--repeat", "3"])
        .args(["--samples", "3", "--warmup", "0", "--sample-time", "0.01"])
        .args(["-q", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    done_runs(d, 3, 2, 6);
    // Each run was made by a process of its own.
    let mut pids = owners(d);
    pids.sort();
    pids.dedup();
    assert_eq!(pids.len(), 3, "{pids:?}");
    // The report printed is the campaign's: every run's samples.
    let rep = common::json(&out.stdout);
    let n: Vec<u64> = common::own_cells(&rep)
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .collect();
    assert_eq!(n, [9, 9], "{rep:#}");
    assert!(common::cells(&rep).iter().all(|c| c["n"] == 9), "{rep:#}");
    assert!(err.contains("kbench compare campaign:"), "{err}");

    // Another repeat of the same benchmarks is a campaign of its own.
    kbench(d)
        .args(["run", "getppid", "getpid", "--repeat", "2"])
        .args(["--samples", "2"])
        .args(["--warmup", "0", "--sample-time", "0.01", "-q"])
        .assert()
        .success();
    let rs = runs(d);
    assert_eq!(rs.len(), 5);
    let ids: Vec<&str> = rs.iter().map(|r| r["campaign"].as_str().unwrap()).collect();
    assert!(ids.iter().all(|c| *c == "adhoc"), "{ids:?}");
    let db = common::sqlite(d);
    let campaigns: i64 = db
        .query_row("SELECT COUNT(DISTINCT campaign_id) FROM runs", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(campaigns, 2);
}

#[test]
fn a_plan_repeats_its_runs_and_a_rerun_resumes_the_missing_ones() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(
        d,
        "rep.toml",
        "name = \"rep\"\nsamples = 2\nwarmup = 0\nsample_time = 0.01\nrepeat = { runs = 2 }\n\n[[bench]]\nuse = \"getppid\"\n",
    );
    let p = plan.to_str().unwrap();
    kbench(d).args(["run", p, "-q"]).assert().success();
    assert_eq!(runs(d).len(), 2);
    // Complete: nothing left to run.
    let out = kbench(d).args(["run", p, "-q"]).output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("nothing to run here"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(runs(d).len(), 2);
    // --repeat 3 on the command line wants a third run of the campaign.
    kbench(d)
        .args(["run", p, "-q", "--repeat", "3"])
        .assert()
        .success();
    let rs = runs(d);
    assert_eq!(rs.len(), 3);
    assert!(
        rs.iter().all(|r| r["campaign"] == "rep"
            && stored(d, &r["id"], true) == 2
            && r["samples"] == stored(d, &r["id"], false)),
        "{rs:#?}"
    );
    // Events of every run reach --events.
    let plan2 = common::plan(
        d,
        "rep2.toml",
        "name = \"rep2\"\nsamples = 2\nwarmup = 0\nsample_time = 0.01\n\n[[bench]]\nuse = \"getppid\"\n",
    );
    let p2 = plan2.to_str().unwrap();
    let ev = stdout(kbench(d).args(["run", p2, "-q", "--repeat", "2", "--events", "jsonl"]));
    let begun = ev.lines().filter(|l| l.contains("\"run_begun\"")).count();
    let ended = ev.lines().filter(|l| l.contains("\"run_ended\"")).count();
    assert_eq!((begun, ended), (2, 2), "{ev}");
}

#[test]
fn repeat_is_bad_input_with_until_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let out = kbench(dir.path())
        .args(["run", "getppid", "getpid", "--repeat", "2"])
        .arg("--until-verdict")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("--until-verdict"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let out = kbench(dir.path())
        .args(["run", "getppid", "--repeat", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// Ctrl-C reaches kbench, which passes it on to the run's process: the
/// run stops after its current sample, no further run starts, and no
/// process is left.
#[test]
fn sigint_stops_the_current_run_and_the_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["run", "getppid", "--repeat", "3", "--samples", "200"];
    let fast = ["--warmup", "0", "--sample-time", "0.05", "-q"];
    let child = common::spawn(d, &[&args[..], &fast[..]].concat());
    common::interrupt(d, child, 3);
    let rs = runs(d);
    assert_eq!(rs.len(), 1, "{rs:#?}");
    assert_eq!(rs[0]["status"], "interrupted");
}

/// A command named on the command line reaches every run's process with
/// the options that shape it (`--shell`, `--metric`): each child builds
/// the same plan as its parent.
#[test]
fn repeat_runs_a_command_with_its_options_in_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = kbench(d)
        .args(["run", "true", "sleep 0.001", "--repeat", "3"])
        .args(["--metric", "real,user", "--shell", "bash"])
        .args(["--samples", "2", "--warmup", "0", "-q", "--json"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // 2 cells x 2 samples x 2 metrics a run.
    done_runs(d, 3, 2, 8);
    // Every run measured what the parent asked: two metrics, through bash.
    let db = common::sqlite(d);
    let metrics: Vec<String> = db
        .prepare("SELECT DISTINCT metric FROM samples ORDER BY metric")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(metrics, ["real", "user"], "{metrics:?}");
}
