//! `kbench compare` end to end: ministat-identical blocks, the other tests,
//! JSON, and bad operands.

mod common;

use common::kbench;
use predicates::prelude::*;

/// A store with the smoke plan run once (spin work 1000/1050 on cpu0/cpu1,
/// getppid on cpu0/cpu1; labels of the first two CPUs this test may use).
fn smoke_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let smoke =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/smoke.toml"));
    let smoke = common::plan(
        dir.path(),
        "smoke.toml",
        &common::usable_plan(&smoke.unwrap()),
    );
    kbench(dir.path())
        .args([
            "run",
            smoke.to_str().unwrap(),
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
               AND s.metric = 'ns/op'
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
        // kbench's own verdict follows ministat's block.
        .take_while(|l| !l.starts_with("design: "))
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
    assert!(text.contains("summary (95% confidence"), "{text}");
    // Cells of one run, measured in the same rounds: paired by round.
    assert!(text.contains("design: paired by round, 6 rounds"), "{text}");
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
/// components and compare naming the level it cannot judge.
#[test]
fn processes_measure_in_fresh_workers_and_compare_names_what_it_cannot_judge() {
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
            "SELECT run_id, process, COUNT(*) FROM samples WHERE metric = 'ns/op'
             GROUP BY run_id, process ORDER BY 1, 2",
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
    // Two runs, one a side: the processes measure layout, not the
    // run-to-run variation, which compare says it cannot judge.
    let out = common::stdout(kbench(dir.path()).args(["compare", "1", "2", "--test", "welch"]));
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("not judged: one run a side"), "{out}");
    assert!(
        flat.contains("run-to-run variation is not measured (one run a side)"),
        "{out}"
    );
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

/// Runs made by hand as an event stream (the real fingerprint of this
/// machine, fabricated values): two runs of the same cells, the second
/// 10% slower throughout. Cells: `wild` (one variant spread over 30x),
/// `tiny` (a baseline of zeros), `steady` (clear changes) and `bw` (a
/// rate, higher is better); variants a (baseline), b and z (all zero
/// where it hurts most).
fn fabricated_store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let real = common::stdout(kbench(dir.path()).args([
        "run",
        "getppid",
        "--samples",
        "1",
        "--sample-time",
        "0.001",
        "--warmup",
        "0",
        "--events",
        "jsonl",
        "-q",
        "--db",
        dir.path().join("scratch.db").to_str().unwrap(),
    ]));
    let begun: serde_json::Value = common::json(real.lines().next().unwrap().as_bytes());
    let wobble = [1.0, 1.01, 0.99, 1.005, 0.995, 1.002];
    let cells: Vec<(&str, &str, &str, &str, [f64; 6])> = vec![
        (
            "wild",
            "ns",
            "lower",
            "a",
            [10.0, 10.5, 9.5, 10.2, 9.8, 10.1],
        ),
        (
            "wild",
            "ns",
            "lower",
            "b",
            [1.0, 30.0, 2.0, 25.0, 1.5, 28.0],
        ),
        ("wild", "ns", "lower", "z", [0.0; 6]),
        ("tiny", "ns", "lower", "a", [0.0; 6]),
        (
            "tiny",
            "ns",
            "lower",
            "b",
            [0.0, 0.001, 0.0, 0.0, 0.002, 0.0],
        ),
        ("tiny", "ns", "lower", "z", [0.0; 6]),
        ("steady", "ns", "lower", "a", wobble.map(|w| 100.0 * w)),
        ("steady", "ns", "lower", "b", wobble.map(|w| 105.0 / w)),
        ("steady", "ns", "lower", "z", wobble.map(|w| 95.0 * w * w)),
        ("bw", "B/s", "higher", "a", wobble.map(|w| 1e9 * w)),
        (
            "bw",
            "B/s",
            "higher",
            "b",
            [1e8, 2e9, 5e7, 1.8e9, 9e7, 2.1e9],
        ),
        ("bw", "B/s", "higher", "z", wobble.map(|w| 1e9 / w)),
    ];
    let mut lines = Vec::new();
    for (run, level) in [(1, 1.0), (2, 1.1)] {
        let uuid = format!("00000000-0000-4000-8000-00000000000{run}");
        let mut b = begun.clone();
        b["run"] = uuid.clone().into();
        b["started"] = (1.7e9 + run as f64 * 100.0).into();
        b["planned_cells"] = cells.len().into();
        b["planned_samples"] = (cells.len() * 6).into();
        lines.push(b);
        for (bench, unit, dir, variant, _) in &cells {
            lines.push(
                serde_json::json!({"event": "cell_prepared", "run": uuid, "cell": {
                "key": format!("{bench}|variant={variant}"), "bench": bench, "source": bench,
                "kind": "command", "params": {}, "factors": {"variant": variant},
                "label_params": [], "readings": {},
                "metrics": [{"name": "m", "unit": unit, "direction": dir}]}}),
            );
        }
        for round in 0..6 {
            for (bench, _, _, variant, v) in &cells {
                lines.push(serde_json::json!({"event": "sample", "run": uuid,
                    "cell": format!("{bench}|variant={variant}"), "round": round,
                    "t": 1.7e9 + run as f64 * 100.0 + round as f64,
                    "values": [["m", v[round] * level]]}));
            }
        }
        for (bench, _, _, variant, _) in &cells {
            lines.push(serde_json::json!({"event": "cell_done", "run": uuid,
                "cell": format!("{bench}|variant={variant}"), "status": "done", "samples": 6}));
        }
        lines.push(serde_json::json!({"event": "run_ended", "run": uuid,
            "ended": 1.7e9 + run as f64 * 100.0 + 10.0, "status": "done"}));
    }
    let file = dir.path().join("runs.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    kbench(dir.path())
        .arg("ingest")
        .arg(&file)
        .assert()
        .success();
    dir
}

/// What one output may not print: NaN or infinity, a percentage bound
/// below -100%, a ratio bound below 0, a `~` beside an interval without
/// 0, a mark that disagrees with its interval.
#[derive(Clone, Copy, PartialEq)]
enum Numbers {
    /// Bounds printed with `%` (text).
    Percent,
    /// Bare bounds that are percentages (Markdown, HTML improvement).
    BarePercent,
    /// Bare bounds that are ratios (Markdown, HTML ratio).
    BareRatio,
    /// Bare bounds of improvements of a lower-is-better metric,
    /// (baseline - new)/baseline: below +100%, any amount below 0.
    BareImprovement,
}

fn check_output(what: &str, out: &str, numbers: Numbers) {
    let seen = checked_bounds(what, out, numbers);
    assert!(
        numbers == Numbers::Percent || seen > 0,
        "{what}: no interval found:\n{out}"
    );
}

/// An improvement document, table by table: each legend says whether its
/// numbers are changes turned (a lower-is-better metric) or not.
fn check_improvements(what: &str, out: &str) {
    let mut seen = 0;
    for part in out.split("% improvement over").skip(1) {
        let numbers = if part
            .replace("\n  ", " ")
            .contains("(baseline - new)/baseline")
        {
            Numbers::BareImprovement
        } else {
            Numbers::BarePercent
        };
        seen += checked_bounds(what, part, numbers);
    }
    assert!(seen > 0, "{what}: no interval found:\n{out}");
}

/// [`check_output`]'s checks; how many intervals it saw.
fn checked_bounds(what: &str, out: &str, numbers: Numbers) -> usize {
    let bad = regex::Regex::new(r"(?i)\b(nan|inf|infinity)\b").unwrap();
    assert!(!bad.is_match(out), "{what}: NaN or inf:\n{out}");
    let pct = regex::Regex::new(r"\[([-+]?[0-9.]+)%, ([-+]?[0-9.]+)%\]").unwrap();
    for c in pct.captures_iter(out) {
        let lo: f64 = c[1].parse().unwrap();
        assert!(lo > -100.0, "{what}: bound {lo}% in {}", &c[0]);
    }
    let tilde = regex::Regex::new(r" ~ +\[([-+0-9.]+)%, ([-+0-9.]+)%\]").unwrap();
    for c in tilde.captures_iter(out) {
        let (lo, hi): (f64, f64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
        assert!(lo <= 0.0 && 0.0 <= hi, "{what}: `~` beside {}", &c[0]);
    }
    let reference = match numbers {
        // Text: its `%` bounds were checked above.
        Numbers::Percent => return 0,
        Numbers::BarePercent | Numbers::BareImprovement => 0.0,
        Numbers::BareRatio => 1.0,
    };
    // A marked (bold) value: its interval excludes the reference; an
    // unmarked one holds it.
    let md = regex::Regex::new(r"(\*\*)?[-+0-9.]+(\*\*)? \[([-+0-9.]+), ([-+0-9.]+)\]").unwrap();
    let html =
        regex::Regex::new(r#"<td( class="sig")?>[^<\[]*? \[([-+0-9.]+), ([-+0-9.]+)\]"#).unwrap();
    let mut seen = 0;
    let found: Vec<(bool, String, String, String)> = if out.contains("<td") {
        html.captures_iter(out)
            .map(|c| {
                (
                    c.get(1).is_some(),
                    c[2].to_string(),
                    c[3].to_string(),
                    c[0].to_string(),
                )
            })
            .collect()
    } else {
        md.captures_iter(out)
            .map(|c| {
                (
                    c.get(1).is_some(),
                    c[3].to_string(),
                    c[4].to_string(),
                    c[0].to_string(),
                )
            })
            .collect()
    };
    for (marked, lo, hi, all) in found {
        let (lo, hi): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
        if numbers == Numbers::BareImprovement {
            assert!(hi < 100.0, "{what}: bound {hi}");
        } else {
            let floor = if reference == 1.0 { 0.0 } else { -100.0 };
            assert!(lo > floor, "{what}: bound {lo}");
        }
        assert_eq!(
            marked,
            !(lo <= reference && reference <= hi),
            "{what}: mark and interval disagree in {all}"
        );
        seen += 1;
    }
    seen
}

/// Every compared value in a JSON document: bounds possible, mark and
/// interval in agreement.
fn check_json(what: &str, v: &serde_json::Value) {
    check_json_in(what, v, false)
}

/// [`check_json`] below a table whose changes are `turned`: improvements
/// of a lower-is-better metric, (baseline - new)/baseline, below +100%.
fn check_json_in(what: &str, v: &serde_json::Value, turned: bool) {
    match v {
        serde_json::Value::Object(m) => {
            let turned = turned
                || (m.get("kind").and_then(|k| k.as_str()) == Some("improvement")
                    && m.get("direction").and_then(|k| k.as_str()) == Some("lower"));
            let f = |k: &str| m.get(k).and_then(|x| x.as_f64());
            match m.get("type").and_then(|t| t.as_str()) {
                Some("change") => {
                    if let (Some(lo), Some(hi)) = (f("lo"), f("hi")) {
                        if turned {
                            assert!(hi < 100.0, "{what}: {v}");
                        } else {
                            assert!(lo > -100.0, "{what}: {v}");
                        }
                        assert_eq!(m["significant"], !(lo <= 0.0 && 0.0 <= hi), "{what}: {v}");
                    }
                }
                Some("ratio") => {
                    if let (Some(lo), Some(hi)) = (f("lo"), f("hi")) {
                        assert!(lo > 0.0, "{what}: {v}");
                        assert_eq!(m["significant"], !(lo <= 1.0 && 1.0 <= hi), "{what}: {v}");
                    }
                }
                _ => {}
            }
            // compare: a contender's change interval (fractions).
            if m.contains_key("verdict")
                && m.contains_key("p_adjusted")
                && let Some([lo, hi]) = m["interval"]
                    .as_array()
                    .map(|a| [a[0].as_f64().unwrap(), a[1].as_f64().unwrap()])
            {
                assert!(lo > -1.0, "{what}: {v}");
                assert_eq!(m["significant"], !(lo <= 0.0 && 0.0 <= hi), "{what}: {v}");
            }
            // A geomean's change interval (fractions).
            if let Some(a) = m.get("change_interval").and_then(|x| x.as_array()) {
                assert!(a[0].as_f64().unwrap() > -1.0, "{what}: {v}");
            }
            for x in m.values() {
                check_json_in(what, x, turned);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| check_json_in(what, x, turned)),
        _ => {}
    }
}

#[test]
fn no_impossible_bound_and_no_mark_against_its_interval_in_any_layout() {
    let dir = fabricated_store();
    let d = dir.path();
    let out = |args: &[&str]| common::stdout(kbench(d).args(args));
    let mut outputs = 0;
    for ops in [
        vec!["1:variant=a", "1:variant=b", "1:variant=z"],
        vec!["1", "2"],
        vec!["1:variant=a", "2:variant=b"],
    ] {
        for test in ["student", "welch", "mwu", "bootstrap"] {
            let mut args = vec!["compare"];
            args.extend(&ops);
            args.extend(["--test", test]);
            let text = out(&args);
            check_output(&format!("{args:?}"), &text, Numbers::Percent);
            args.push("--json");
            let json = out(&args);
            assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
            check_json(&format!("{args:?}"), &common::json(json.as_bytes()));
            outputs += 2;
        }
    }
    for runs in [vec!["1"], vec!["1", "2"]] {
        // The fabricated metric is a time (lower is better): its
        // improvements are the changes turned.
        for (table, numbers) in [
            ("improvement", Numbers::BareImprovement),
            ("change", Numbers::BarePercent),
            ("ratio", Numbers::BareRatio),
            ("matrix", Numbers::Percent),
        ] {
            for format in ["text", "markdown", "html", "json", "csv"] {
                let mut args = vec!["report"];
                args.extend(&runs);
                args.extend(["--table", table, "--format", format]);
                if table != "matrix" {
                    args.extend(["--baseline", "variant=a"]);
                }
                let o = out(&args);
                let what = format!("{args:?}");
                if table == "improvement" && format == "text" {
                    assert!(
                        o.replace("\n  ", " ")
                            .contains("lower is better: positive = better"),
                        "{o}"
                    );
                }
                match format {
                    "json" => check_json(&what, &common::json(o.as_bytes())),
                    "markdown" | "html" if table == "improvement" => check_improvements(&what, &o),
                    "markdown" | "html" if table != "matrix" => check_output(&what, &o, numbers),
                    _ => check_output(&what, &o, Numbers::Percent),
                }
                outputs += 1;
            }
        }
    }
    // The zero baseline and the run-to-run level are put in words.
    let text = out(&["compare", "1:variant=a", "1:variant=b"]);
    assert!(text.contains("the baseline is 0 in every sample"), "{text}");
    let text = out(&["compare", "1", "2"]);
    assert!(text.contains("not judged: one run a side"), "{text}");
    let md = out(&[
        "report",
        "1",
        "2",
        "--table",
        "improvement",
        "--baseline",
        "variant=a",
        "--format",
        "markdown",
    ]);
    assert!(md.contains("- = the baseline is 0 in every sample"), "{md}");
    assert!(outputs >= 60, "{outputs}");
}

/// `--compat=2015`: each row's block is Debian's `ministat` report of the
/// same values (names, plot, table, difference), byte for byte. The
/// expected text was printed by Debian's ministat 20150715 on the data
/// files (tests/fixtures/ministat/debian/compare/gen.sh); the values reach
/// kbench through `import --from ministat` and the store.
#[test]
fn compat_2015_blocks_are_debians_ministat_byte_for_byte() {
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ministat/debian"
    );
    let cases = std::fs::read_to_string(format!("{fixtures}/compare/CASES")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut checked = 0;
    for line in cases.lines() {
        let mut words = line.split_whitespace();
        let name = words.next().unwrap();
        let files: Vec<&str> = words.collect();
        for f in &files {
            std::fs::copy(format!("{fixtures}/data/{f}"), d.join(f)).unwrap();
        }
        kbench(d)
            .current_dir(d)
            .args(["import", "--from", "ministat", "--name", name])
            .args(&files)
            .assert()
            .success();
        let operands: Vec<String> = files.iter().map(|f| format!("{name}:file={f}")).collect();
        let out = kbench(d)
            .args(["compare", "--compat=2015"])
            .args(&operands)
            .output()
            .unwrap();
        assert!(out.status.success(), "{line}: {out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let want = std::fs::read_to_string(format!("{fixtures}/compare/{name}.out")).unwrap();
        // The block sits under the row's title line, whole.
        let title = "ministat value (value, lower is better)\n";
        assert!(
            text.contains(&format!("{title}{want}")),
            "{line}:\n--- kbench\n{text}\n--- ministat\n{want}"
        );
        checked += 1;
    }
    assert_eq!(checked, 7);
}
