//! `kbench import --from ministat|will-it-scale` through the real binary:
//! the imported runs are reported and compared like measured ones, and a
//! malformed file stores nothing.

mod common;

use common::stdout;

/// `kbench` on the test's store, run inside its directory (the files are
/// named as given, relative).
fn kbench(d: &std::path::Path) -> assert_cmd::Command {
    let mut c = common::kbench(d);
    c.current_dir(d);
    c
}

/// One line on stderr naming `place`, exit 2, and the store still holds
/// `runs` runs.
fn rejected(d: &std::path::Path, args: &[&str], place: &str, runs: usize) {
    let out = kbench(d).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(place), "{err}");
    let listed = stdout(kbench(d).args(["runs"]));
    assert_eq!(listed.lines().count(), runs + 1, "{listed}");
}

#[test]
fn two_ministat_files_import_as_variants_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Column 2 of comma-separated lines, with ministat's comments.
    std::fs::write(
        d.join("old.csv"),
        "# run,ns\n1,10\n2,11\n\n3,12,# slow\n4,10.5\n5,11.5\n",
    )
    .unwrap();
    std::fs::write(d.join("new.csv"), "1,20\n2,21\n3,22\n4,20.5\n5,21.5\n").unwrap();
    kbench(d)
        .args(["import", "old.csv", "new.csv", "--from", "ministat"])
        .args(["-C", "2", "-d", ",", "--name", "pair"])
        .assert()
        .success();
    let c = stdout(kbench(d).args([
        "compare",
        "1:file=old.csv",
        "1:file=new.csv",
        "--test",
        "student",
    ]));
    let row = c
        .lines()
        .find(|l| l.starts_with("ministat value") && l.contains("5+5"))
        .unwrap_or_else(|| panic!("{c}"));
    // Means 11 and 21: new is 90.9% above old, worse when lower is better.
    let want = format!("{:+.1}%", (21.0 / 11.0 - 1.0) * 100.0);
    assert!(row.contains(&want), "{row} lacks {want}");
    // Said once, in words: a cost that grew (lower is better).
    assert!(c.contains("90.9% larger"), "{c}");
    // The run joined campaign `pair` and says where it came from.
    let r = stdout(kbench(d).args(["report", "pair"]));
    assert!(r.contains("campaign 1 `pair`"), "{r}");
    assert!(r.contains("imported from ministat"), "{r}");
    // --higher: the same difference is more of what is better higher.
    kbench(d)
        .args(["import", "old.csv", "new.csv", "--from", "ministat"])
        .args(["-C", "2", "-d", ",", "--higher"])
        .assert()
        .success();
    let c = stdout(kbench(d).args(["compare", "2:file=old.csv", "2:file=new.csv"]));
    assert!(c.contains("90.9% more") && !c.contains("larger"), "{c}");

    // A bad line in the second file: nothing of the first is stored.
    std::fs::write(d.join("bad.csv"), "1,20\n2,fast\n").unwrap();
    rejected(
        d,
        &[
            "import", "old.csv", "bad.csv", "--from", "ministat", "-C", "2", "-d", ",",
        ],
        "bad.csv:2:",
        2,
    );
    rejected(
        d,
        &["import", "old.csv", "--from", "ministat", "-C", "0"],
        "0",
        2,
    );
}

/// runtest.py's table for a testcase measured at 1, 2 and 4 tasks.
const WIS: &str = "tasks,processes,processes_idle,threads,threads_idle,linear
0,0,100,0,100,0
1,6420922,50.12,6533985,50.03,6533985
2,12648102,0.35,12905000,0.40,13067970
4,24011230,0.10,-1,-1,26135940
";

#[test]
fn a_will_it_scale_csv_imports_and_reprints() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("getppid1.csv");
    std::fs::write(&f, WIS).unwrap();
    kbench(d)
        .args(["import", f.to_str().unwrap(), "--from", "will-it-scale"])
        .assert()
        .success();
    // The round trip: runtest.py's file, byte for byte; the `-1,-1` of
    // the mode not measured at 4 tasks stays the sentinel.
    let csv = stdout(kbench(d).args(["report", "1", "--format", "wis-csv"]));
    assert_eq!(csv, WIS);
    // The scaling layout: the benchmark is the file stem, both modes; the
    // sentinel is no measurement (no -1 ops/s, no -1% idle).
    let s = stdout(kbench(d).args(["report", "1", "--table", "scaling"]));
    let four = s
        .lines()
        .find(|l| l.starts_with("4 "))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(!four.contains("-1"), "{four}");
    let j = stdout(kbench(d).args(["report", "1", "--format", "json"]));
    assert!(!j.contains(":-1,") && !j.contains(":-1.0"), "{j}");
    let samples = stdout(kbench(d).args(["report", "1", "--format", "csv"]));
    assert!(!samples.contains(",-1\n"), "{samples}");
    assert!(s.contains("getppid1"), "{s}");
    assert!(s.contains("processes") && s.contains("threads"), "{s}");
    assert!(s.contains("imported from will-it-scale"), "{s}");
    // kbench never saw the machine: its facts are unknown, not zeros.
    assert!(s.contains("Memory:     unknown (imported)"), "{s}");
    assert!(s.contains("Noise:      unknown (imported)"), "{s}");
    assert!(!s.contains("0.0 GiB") && !s.contains("0 socket(s)"), "{s}");
    let r = stdout(kbench(d).args(["report", "1"]));
    assert!(r.contains("CPUs unknown") && !r.contains("GiB"), "{r}");
    // A long campaign name wraps in the title: every line within 80.
    let long = "getppid1-on-the-machine-under-the-desk-with-every-mitigation-off-and-smt-on";
    let other = d.join("other");
    std::fs::create_dir(&other).unwrap();
    kbench(&other)
        .args(["import", f.to_str().unwrap(), "--from", "will-it-scale"])
        .args(["--name", long])
        .assert()
        .success();
    let w = stdout(kbench(&other).args(["report", long, "--table", "scaling"]));
    assert!(w.contains(long), "{w}");
    for l in w.lines() {
        assert!(l.chars().count() <= 80, "{l}\n{w}");
    }
    assert!(!r.contains("warmup 0"), "{r}");
    // Malformed rows: file and line, nothing stored.
    let bad = d.join("bad.csv");
    std::fs::write(&bad, format!("{WIS}8,1,2,3\n")).unwrap();
    rejected(
        d,
        &["import", bad.to_str().unwrap(), "--from", "will-it-scale"],
        "bad.csv:6: 4 field(s)",
        1,
    );
    std::fs::write(&bad, "tasks,ops\n1,5\n").unwrap();
    rejected(
        d,
        &["import", bad.to_str().unwrap(), "--from", "will-it-scale"],
        "bad.csv:1:",
        1,
    );
}

/// Issue: SIGTERM after 185,583 of 2 million hyperfine times left a run
/// `running` forever, holding part of the file; the whole import took
/// 120 s (253 s here under load) and 991 MB. An import is one
/// transaction: killed in the middle it stores nothing, and the same file
/// imported twice is stored once (its identity is its content).
#[test]
fn an_import_is_whole_or_nothing_and_the_same_file_twice_adds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    const N: usize = 1_000_000;
    let mut json = String::from(r#"{"results": [{"command": "sleep 0.001", "times": ["#);
    for i in 0..N {
        if i > 0 {
            json.push(',');
        }
        json += &format!("0.00{}", 1000 + i % 997);
    }
    json += "]}]}";
    std::fs::write(d.join("h.json"), json).unwrap();
    let db = common::db(d);
    let wal = d.join("kbench.db-wal");
    let mut child = std::process::Command::new(common::bin())
        .current_dir(d)
        .env("KBENCH_DB", &db)
        .args(["import", "--from", "hyperfine", "h.json"])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed while it inserts (its write-ahead log growing).
    let t0 = std::time::Instant::now();
    while std::fs::metadata(&wal).map_or(0, |m| m.len()) < 2 << 20
        && t0.elapsed() < std::time::Duration::from_secs(120)
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(!status.success(), "the import ended before the kill");
    let c = rusqlite::Connection::open(&db).unwrap();
    let ok: String = c
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ok, "ok");
    let (runs, samples): (i64, i64) = c
        .query_row(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM samples)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((runs, samples), (0, 0), "a killed import left something");
    drop(c);
    // Whole, then again: nothing added the second time.
    let t0 = std::time::Instant::now();
    let out = kbench(d)
        .args(["import", "--from", "hyperfine", "h.json"])
        .output()
        .unwrap();
    common::assert_ok(&out);
    eprintln!("{N} times imported in {:.1} s", t0.elapsed().as_secs_f64());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("{N} sample(s) imported as run(s) 1")),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kbench(d)
        .args(["import", "--from", "hyperfine", "h.json", "--name", "again"])
        .output()
        .unwrap();
    common::assert_ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("already imported, nothing added: h.json (run 1)"),
        "{err}"
    );
    let listed = stdout(kbench(d).args(["runs"]));
    assert_eq!(listed.lines().count(), 2, "{listed}");
}

/// hyperfine's mean user and system time and exit codes survive the
/// import, as the cell's readings.
#[test]
fn hyperfine_user_system_and_exit_codes_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("h.json"),
        r#"{"results":[{"command":"make -s","mean":1.1,"times":[1.0,1.1,1.2],
        "user":0.75,"system":0.125,"exit_codes":[0,0,0]}]}"#,
    )
    .unwrap();
    kbench(d)
        .args(["import", "h.json", "--from", "hyperfine"])
        .assert()
        .success();
    let v = common::json(stdout(kbench(d).args(["report", "1", "--json"])).as_bytes());
    let r = &v["cells"][0]["readings"];
    assert_eq!(r["hyperfine.user_s"], "0.75", "{v:#}");
    assert_eq!(r["hyperfine.system_s"], "0.125");
    assert_eq!(r["hyperfine.exit_codes"], "0 x3");
}
