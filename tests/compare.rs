//! `kbench compare` end to end: ministat-identical blocks, the other tests,
//! JSON, and bad operands.

mod common;

use common::kbench;
use predicates::prelude::*;

/// A store with the smoke plan run once (spin work 1000/1050 on cpu0/cpu1,
/// getppid on cpu0/cpu1).
fn smoke_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let smoke = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/smoke.toml");
    kbench(dir.path())
        .args([
            "run",
            smoke,
            "--samples",
            "6",
            "--sample-time",
            "0.01",
            "--warmup",
            "0",
        ])
        .assert()
        .success();
    dir
}

fn values(dir: &std::path::Path, work: i64, cpus: &str) -> Vec<f64> {
    let db = common::sqlite(dir);
    let mut st = db
        .prepare(
            "SELECT s.value FROM samples s JOIN cells c ON c.id = s.cell_id
             WHERE json_extract(c.params, '$.work') = ?1 AND json_extract(c.factors, '$.cpus') = ?2
             ORDER BY s.id",
        )
        .unwrap();
    st.query_map(rusqlite::params![work, cpus], |r| r.get(0))
        .unwrap()
        .map(|x| x.unwrap())
        .collect()
}

#[test]
fn student_blocks_are_byte_identical_to_kbench_ministat() {
    let dir = smoke_store();
    let out = kbench(dir.path())
        .args(["compare", "smoke:work=1000", "smoke:work=1050"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8(out).unwrap();
    let block: Vec<&str> = text
        .split("\n\n")
        .find(|b| b.starts_with("spin ns/op [cpus=cpu0]"))
        .expect("a block for cpu0")
        .lines()
        .collect();
    // ministat on the same numbers, written as files.
    let write = |name: &str, v: &[f64]| {
        let p = dir.path().join(name);
        let s: String = v.iter().map(|x| format!("{x:?}\n")).collect();
        std::fs::write(&p, s).unwrap();
        p
    };
    let a = write("a.txt", &values(dir.path(), 1000, "cpu0"));
    let b = write("b.txt", &values(dir.path(), 1050, "cpu0"));
    assert_eq!(values(dir.path(), 1000, "cpu0").len(), 6);
    let m = kbench(dir.path())
        .args(["ministat", "-A"])
        .arg(&a)
        .arg(&b)
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let m = String::from_utf8(m).unwrap();
    let ministat: Vec<&str> = m.lines().skip(2).collect();
    // Title, then `x NAME`, `+ NAME`; from the header on, identical.
    assert_eq!(block[3..], ministat[..], "\n{}\n---\n{m}", block.join("\n"));
    assert!(text.contains("summary (Student at 95% confidence"));
    // spin and getppid are both ns/op: one geomean row for the unit.
    assert!(
        text.contains("  ns (lower is better), smoke:work=1050: "),
        "{text}"
    );
}

#[test]
fn other_tests_and_json() {
    let dir = smoke_store();
    for test in ["welch", "mwu", "bootstrap"] {
        let out = kbench(dir.path())
            .args([
                "compare",
                "smoke:cpus=cpu0",
                "smoke:cpus=cpu1",
                "--test",
                test,
                "--json",
            ])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let rows = v["rows"].as_array().unwrap();
        // spin at two work values and getppid, paired across the CPUs.
        assert_eq!(rows.len(), 3, "{test}: {v}");
        for r in rows {
            let vs = &r["versus"][0];
            let p = vs["p"].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&p), "{test}: p = {p}");
            assert_eq!(vs["n1"], 6);
            assert!(vs["verdict"].is_string());
        }
        assert_eq!(v["geomean"][0]["k"], 3);
    }
    // 97% is not in ministat's table but fine for Welch.
    kbench(dir.path())
        .args([
            "compare",
            "smoke:cpus=cpu0",
            "smoke:cpus=cpu1",
            "--test",
            "welch",
            "--confidence",
            "97",
        ])
        .assert()
        .success()
        .stdout(predicate::str::contains("Welch's t at 97% confidence"));
}

#[test]
fn bad_operands_exit_2() {
    let dir = smoke_store();
    for (args, needle) in [
        (
            vec!["smoke:nosuch=1", "smoke:work=1050"],
            "no factor or parameter `nosuch`",
        ),
        (vec!["smoke:work=7", "smoke:work=1050"], "selects no cells"),
        (vec!["nosuch", "smoke"], "no run or campaign `nosuch`"),
        (
            vec!["smoke:work=1000", "smoke:work=1050", "--confidence", "97"],
            "ministat's Student's t",
        ),
        (
            vec!["smoke:work=1000", "smoke:work=1050", "--confidence", "70"],
            "80..99.5",
        ),
        (vec!["smoke:work", "smoke"], "expected k=v"),
    ] {
        kbench(dir.path())
            .arg("compare")
            .args(&args)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(needle));
    }
}

/// Two ad hoc runs of getppid, the second's fingerprint rewritten as if
/// taken under another kernel and governor (what a reboot into a patched
/// kernel records).
fn two_kernels() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        kbench(dir.path())
            .args([
                "run",
                "getppid",
                "--samples",
                "4",
                "--sample-time",
                "0.01",
                "--warmup",
                "0",
            ])
            .assert()
            .success();
    }
    let db = rusqlite::Connection::open(common::db(dir.path())).unwrap();
    let n = db
        .execute(
            "UPDATE runs SET fingerprint = json_set(fingerprint,
               '$.kernel_release', '9.9.0-patched', '$.governor', 'powersave-x')
             WHERE id = 2",
            [],
        )
        .unwrap();
    assert_eq!(n, 1);
    dir
}

#[test]
fn runs_from_two_kernels_print_the_facts_that_differ() {
    let dir = two_kernels();
    let text = String::from_utf8(
        kbench(dir.path())
            .args(["compare", "1", "2"])
            .assert()
            .success()
            .get_output()
            .stdout
            .clone(),
    )
    .unwrap();
    assert!(
        text.contains("comparability: 2 recorded fact(s) differ"),
        "{text}"
    );
    assert!(text.contains("! kernel.release: x "), "{text}");
    assert!(text.contains("+ 9.9.0-patched"), "{text}");
    assert!(text.contains("+ powersave-x"), "{text}");
    assert!(
        text.contains("warning: kernel.release differs between the operands"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");

    // Declared: listed as expected, no warning for it; the governor still
    // warns, in JSON too.
    let out = kbench(dir.path())
        .args(["compare", "1", "2", "--expect", "kernel.release", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let k = &v["comparability"];
    let d = k["differences"].as_array().unwrap();
    assert_eq!(d[0]["fact"], "kernel.release");
    assert_eq!(d[0]["expected"], true);
    assert_eq!(d[0]["moves_results"], true);
    assert_eq!(d[0]["values"][1][0], "9.9.0-patched");
    let warnings = k["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{k}");
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .starts_with("cpu.governor differs")
    );

    // A fact kbench does not record is bad input.
    kbench(dir.path())
        .args(["compare", "1", "2", "--expect", "kernel"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--expect: `kernel` is no recorded fact (known: host,",
        ));
}

#[test]
fn a_report_over_runs_that_differ_warns_in_every_format() {
    let dir = two_kernels();
    let report = |format: &str, expect: &[&str]| {
        let out = kbench(dir.path())
            .args(["report", "1", "2", "--table", "matrix", "--format", format])
            .args(expect)
            .assert()
            .success()
            .get_output()
            .stdout
            .clone();
        String::from_utf8(out).unwrap()
    };
    let text = report("text", &[]);
    assert!(text.contains("! kernel.release: run 1: "), "{text}");
    assert!(text.contains("run 2: 9.9.0-patched"), "{text}");
    assert!(text.contains("warning: kernel.release differs"), "{text}");
    let md = report("markdown", &[]);
    assert!(md.contains("- ! kernel.release: run 1: "), "{md}");
    assert!(md.contains("> **warning:** kernel.release differs"), "{md}");
    let html = report("html", &[]);
    assert!(html.contains("<h2>Comparability</h2>"), "{html}");
    assert!(html.contains("<td>9.9.0-patched</td>"), "{html}");
    assert!(
        html.contains("<b>warning:</b> kernel.release differs"),
        "{html}"
    );
    let json: serde_json::Value = serde_json::from_str(&report("json", &[])).unwrap();
    assert_eq!(
        json["comparability"]["warnings"].as_array().unwrap().len(),
        2
    );
    // Declared: no warning for the kernel, in any format.
    for f in ["text", "markdown", "html", "json"] {
        let out = report(f, &["--expect", "kernel.release,cpu.governor"]);
        assert!(!out.contains("differs between the operands"), "{f}: {out}");
        assert!(out.contains("kernel.release"), "{f}: {out}");
    }
    // The ministat layout keeps its bytes: the warning goes to stderr.
    kbench(dir.path())
        .args(["report", "1", "2"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "kbench: warning: kernel.release differs",
        ));
}

/// `--processes`: each cell measured in fresh worker processes, the
/// samples stored with their process, the report showing the variance
/// components and compare naming its error term.
#[test]
fn processes_measure_in_fresh_workers_and_compare_names_the_error_term() {
    let _g = common::serial();
    let dir = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        kbench(dir.path())
            .args(["run", "getppid", "--processes", "3", "--samples", "6"])
            .args(["--sample-time", "0.005", "--warmup", "1", "-q"])
            .assert()
            .success();
    }
    let db = common::sqlite(dir.path());
    let per: Vec<(i64, i64, i64)> = db
        .prepare(
            "SELECT run_id, process, COUNT(*) FROM samples GROUP BY run_id, process ORDER BY 1, 2",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        per,
        vec![
            (1, 0, 2),
            (1, 1, 2),
            (1, 2, 2),
            (2, 0, 2),
            (2, 1, 2),
            (2, 2, 2)
        ]
    );
    let out = common::stdout(kbench(dir.path()).args(["report", "1", "--json"]));
    let v = common::json(out.as_bytes());
    let c = &v["cells"][0]["processes"];
    assert_eq!(c["processes"], 3, "{v:#}");
    assert!(c["within"].as_f64().unwrap() >= 0.0);
    let out = common::stdout(kbench(dir.path()).args(["compare", "1", "2", "--test", "welch"]));
    assert!(out.contains("error term getppid ns/op:"), "{out}");
    assert!(out.contains("(3+3 processes"), "{out}");
    // Sizing from the pilot: a count per cell, in the unit it needs.
    let out = common::stdout(kbench(dir.path()).args(["plan-size", "1", "--margin", "5%"]));
    assert!(
        out.contains("getppid ns/op: ") && out.contains(" a side (pilot: "),
        "{out}"
    );
    let v = common::json(
        common::stdout(kbench(dir.path()).args(["plan-size", "1", "--json"])).as_bytes(),
    );
    assert!(v["rows"][0]["need"].as_u64().unwrap() >= 2, "{v:#}");
    kbench(dir.path())
        .args(["plan-size", "1", "--margin", "0%"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--margin"));
}

#[test]
fn processes_refuse_what_they_cannot_do() {
    let dir = tempfile::tempdir().unwrap();
    kbench(dir.path())
        .args(["run", "getppid", "--processes", "4", "--samples", "3"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "--processes 4: each process needs a sample",
        ));
    kbench(dir.path())
        .args(["run", "getppid", "--processes", "2", "--precision", "1%"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("does not go with --precision"));
    kbench(dir.path())
        .args(["run", "getppid", "--processes", "0"])
        .assert()
        .code(2);
    let p = common::plan(
        dir.path(),
        "p.toml",
        "name = \"p\"\nprocesses = 0\n[[bench]]\nuse = \"getppid\"\n",
    );
    kbench(dir.path())
        .args(["run", p.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("p.toml").and(predicate::str::contains(
                "`processes` must be within 1..=4294967295, found 0",
            )),
        );
}
