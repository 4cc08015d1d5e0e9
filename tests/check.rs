//! `kbench check` end to end: baselines chosen by labels, exit codes 0
//! pass, 1 regression, 2 bad input, 3 inconclusive, the level the verdict
//! used, and the JSON document. The benchmark is a command (a script
//! sleeping 20 ms, then 100 ms: a change far past any threshold here).

mod common;

use common::{json, kbench};
use predicates::prelude::*;
use std::path::Path;

const RUN: [&str; 6] = ["--metric", "real", "--samples", "6", "--warmup", "1"];

fn script(dir: &Path, ms: u32) -> String {
    let f = dir.join("work.sh");
    std::fs::write(&f, format!("sleep {}\n", f64::from(ms) / 1000.0)).unwrap();
    format!("sh {}", f.display())
}

fn check(dir: &Path, cmd: &str, extra: &[&str]) -> (i32, String, String) {
    let _g = common::serial();
    let out = kbench(dir)
        .current_dir(dir)
        .args(["check", cmd])
        .args(RUN)
        .args(extra)
        .output()
        .unwrap();
    common::outcome(out)
}

/// `runs` runs of `cmd` labelled `branch=main`.
fn baseline(dir: &Path, cmd: &str, runs: usize) {
    for _ in 0..runs {
        let _g = common::serial();
        kbench(dir)
            .current_dir(dir)
            .args(["run", cmd, "-q", "--label", "branch=main"])
            .args(RUN)
            .assert()
            .success();
    }
}

#[test]
fn a_gate_passes_the_same_code_fails_a_slower_one_and_says_its_level() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cmd = script(d, 20);
    baseline(d, &cmd, 5);
    // No run carries the labels: bad input.
    let (code, _, err) = check(d, &cmd, &["--baseline", "branch=nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--baseline branch=nope"), "{err}");
    let (code, _, err) = check(d, &cmd, &["--baseline", "branch=main", "--threshold", "0%"]);
    assert_eq!(code, 2, "{err}");

    // One run a side: run-to-run variation is not measured.
    let (code, out, _) = check(
        d,
        &cmd,
        &["--baseline", "branch=main", "--label", "branch=pr"],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.starts_with("unclear "), "{out}");
    assert!(out.contains("variation NOT measured"), "{out}");
    let (code, _, _) = check(
        d,
        &cmd,
        &[
            "--baseline",
            "branch=main",
            "--inconclusive",
            "pass",
            "--label",
            "branch=pr",
        ],
    );
    assert_eq!(code, 0);

    // The same code against five baseline runs: no regression (on a busy
    // machine the interval may still reach past the threshold).
    let h = ["--baseline", "branch=main", "--baseline-history", "5"];
    let (code, out, _) = check(
        d,
        &cmd,
        &[&h[..], &["--threshold", "25%", "--label", "branch=pr"]].concat(),
    );
    assert!(code == 0 || code == 3, "{out}");
    assert!(
        out.starts_with("ok ") || out.starts_with("unclear "),
        "{out}"
    );
    assert!(out.contains("run-to-run variation measured"), "{out}");
    // A baseline from other runs: its verdict is a hint, in one line.
    assert_eq!(out.matches("hint only").count(), 1, "{out}");
    assert!(out.contains("candidate run(s)"), "{out}");

    // Five times as slow: a regression, named first; as JSON too.
    let slow = script(d, 100);
    assert_eq!(slow, cmd);
    let (code, out, _err) = check(
        d,
        &cmd,
        &[&h[..], &["--threshold", "10%", "--format", "json"]].concat(),
    );
    assert_eq!(code, 1, "{out}\n{_err}");
    let v = json(out.as_bytes());
    assert_eq!(v["schema"], "kbench/report/1");
    assert_eq!(v["kind"], "check");
    assert_eq!(v["outcome"], "regression");
    assert_eq!(v["baseline_runs"].as_array().unwrap().len(), 5);
    assert_eq!(v["cells"][0]["verdict"], "regression");
    let lo = v["cells"][0]["interval"][0].as_f64().unwrap();
    assert!(lo > 0.1, "{v}");
    // Required to improve, it is not better.
    let (code, out, _) = check(d, &cmd, &[&h[..], &["--expect", "better"]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("REGRESSION "), "{out}");

    // Stored runs as the candidate: the latest slow run against the
    // baseline, without measuring.
    kbench(d)
        .args(["check", "--candidate", "999", "--baseline", "branch=main"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--candidate 999"));
}

#[test]
fn a_plans_gate_section_is_validated_and_sets_what_is_gated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cmd = script(d, 20);
    let plan = |gate: &str| {
        let text = format!(
            "name = \"gated\"\nsamples = 4\nwarmup = 1\n\n[[bench]]\nname = \"loop\"\ncommand = [\"sh\", \"{}\"]\nmeasure = [\"real\"]\n\n[gate]\n{gate}\n",
            cmd.trim_start_matches("sh ")
        );
        common::plan(d, "gated.toml", &text)
            .to_str()
            .unwrap()
            .to_string()
    };
    // A key that names nothing in the plan: file, line and column.
    let p = plan("thresholds = { nope = \"3%\" }");
    kbench(d)
        .args(["check", &p, "--baseline", "branch=main"])
        .assert()
        .code(2)
        .stderr(
            predicate::str::contains("gated.toml:11:16:").and(predicate::str::contains("`nope`")),
        );
    let p = plan("threshold = \"0%\"");
    kbench(d)
        .args(["check", &p, "--baseline", "branch=main"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("gated.toml:11:"));
    // `real` only reported: five times slower still passes, shown as info.
    let p = plan("report_only = [\"loop:real\"]");
    {
        let _g = common::serial();
        kbench(d)
            .args(["run", &p, "-q", "--label", "branch=main"])
            .assert()
            .success();
    }
    script(d, 100);
    let _g = common::serial();
    let out = kbench(d)
        .args(["check", &p, "--baseline", "branch=main"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.starts_with("info "), "{text}");
}

#[test]
fn junit_and_markdown_are_read_by_real_readers() {
    let readers = ["py:jsonschema", "py:junitparser", "cmark-gfm"].map(common::reader);
    if readers.contains(&false) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cmd = script(d, 20);
    let run = |label: &str| {
        let _g = common::serial();
        kbench(d)
            .current_dir(d)
            .args(["run", &cmd, "-q", "--label", label])
            .args(RUN)
            .assert()
            .success();
    };
    run("branch=main");
    run("branch=main");
    script(d, 100);
    run("branch=pr");
    // Stored runs: every format reads the same numbers.
    let gate = |format: &str, summary: Option<&Path>| {
        let mut c = kbench(d);
        c.args([
            "check",
            "--candidate",
            "branch=pr",
            "--baseline",
            "branch=main",
        ])
        .args([
            "--baseline-history",
            "2",
            "--threshold",
            "10%",
            "--format",
            format,
        ]);
        match summary {
            Some(p) => c.env("GITHUB_STEP_SUMMARY", p),
            None => c.env_remove("GITHUB_STEP_SUMMARY"),
        };
        let out = c.output().unwrap();
        let code = out.status.code().unwrap();
        assert!(code == 1 || code == 3, "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let doc = gate("json", None);
    let v = json(doc.as_bytes());
    // The document follows its published schema.
    let file = d.join("check.json");
    std::fs::write(&file, &doc).unwrap();
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/report.schema.json");
    let valid = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, json, jsonschema\n\
             s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))\n\
             jsonschema.Draft202012Validator.check_schema(s)\n\
             jsonschema.Draft202012Validator(s).validate(d)",
        )
        .arg(&schema)
        .arg(&file)
        .output()
        .expect("python3 with jsonschema (.ci/run installs it)");
    assert!(valid.status.success(), "{valid:?}");
    let verdict = v["cells"][0]["verdict"].as_str().unwrap().to_string();
    assert!(verdict == "regression" || verdict == "unclear", "{v}");

    let xml = d.join("check.xml");
    std::fs::write(&xml, gate("junit", None)).unwrap();
    let read = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import sys, junitparser\n\
             x = junitparser.JUnitXml.fromfile(sys.argv[1])\n\
             for s in x: print(s.tests, s.failures, s.skipped, s.errors)",
        )
        .arg(&xml)
        .output()
        .expect("python3 with junitparser (.ci/run installs it)");
    assert!(read.status.success(), "{read:?}");
    let want = if verdict == "regression" {
        "1 1 0 0"
    } else {
        "1 0 1 0"
    };
    assert_eq!(String::from_utf8_lossy(&read.stdout).trim(), want);

    let summary = d.join("summary.md");
    std::fs::write(&summary, "before\n").unwrap();
    let md = gate("markdown", Some(&summary));
    assert!(md.len() < 65_000);
    let appended = std::fs::read_to_string(&summary).unwrap();
    assert_eq!(appended, format!("before\n{md}"));
    let mut render = std::process::Command::new("cmark-gfm")
        .args(["--extension", "table"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cmark-gfm (.ci/run installs it)");
    use std::io::Write;
    render
        .stdin
        .take()
        .unwrap()
        .write_all(md.as_bytes())
        .unwrap();
    let html = String::from_utf8(render.wait_with_output().unwrap().stdout).unwrap();
    assert!(html.contains("<table>"), "{html}");
    let word = if verdict == "regression" {
        "REGRESSION"
    } else {
        "unclear"
    };
    assert!(html.contains(&format!("<td>{word}</td>")), "{html}");
}

/// A deterministic metric under `must_not_change`: the same size passes
/// (exit 0), one byte more fails (exit 1) and the failing line, first,
/// names it.
#[test]
fn a_metric_that_must_not_change_fails_on_one_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let app = d.join("app");
    std::fs::write(&app, vec![0u8; 4096]).unwrap();
    let plan = common::plan(
        d,
        "size.toml",
        "name = \"size\"\nsamples = 3\nwarmup = 0\n\n[[bench]]\nname = \"build\"\ncommand = [\"cat\", \"{plan_dir}/app\"]\nmeasure = [\"real\"]\nmetrics = [{ name = \"code_size\", file = \"{plan_dir}/app\" }]\n\n[gate]\nreport_only = [\"real\"]\nmust_not_change = [\"code_size\"]\n",
    );
    let p = plan.to_str().unwrap();
    {
        let _g = common::serial();
        kbench(d)
            .args(["run", p, "-q", "--label", "branch=main"])
            .assert()
            .success();
    }
    let gate = |d: &Path| {
        let _g = common::serial();
        let out = kbench(d)
            .args(["check", p, "--baseline", "branch=main"])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    // The same size: the gated metric is ok, the time only reported.
    let (code, text) = gate(d);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok ") && l.contains("build code_size")),
        "{text}"
    );
    // One byte more: a regression, named on the first line.
    std::fs::write(&app, vec![0u8; 4097]).unwrap();
    let (code, text) = gate(d);
    assert_eq!(code, Some(1), "{text}");
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("REGRESSION") && first.contains("build code_size"),
        "{text}"
    );
    assert!(text.contains("must not change"), "{text}");
}

/// `kbench check --help` offers what a check uses: the candidate's run
/// settings and the gate's, not `run`'s printing and campaign flags; those
/// are refused.
#[test]
fn check_help_lists_only_what_a_check_uses() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let help = common::stdout(kbench(d).args(["check", "--help"]));
    for f in [
        "--baseline",
        "--threshold",
        "--format",
        "--samples",
        "--repeat",
        "--label",
        "--metric",
        "--shell",
    ] {
        assert!(help.contains(f), "{f} missing:\n{help}");
    }
    for f in [
        "--json",
        "--events",
        "--dry-run",
        "--teardown-only",
        "--force",
        "--all-metrics",
        "--until-verdict",
        "--export-json",
        "--quiet",
    ] {
        assert!(!help.contains(f), "{f} listed:\n{help}");
    }
    kbench(d)
        .args(["check", "getppid", "--baseline", "branch=main", "--json"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--json"));
}

/// `--calibrate`: the candidate measured twice against the baseline; a
/// threshold per benchmark and metric, in a sane range, and the two A/A
/// changes it read.
#[test]
fn calibrate_prints_the_threshold_identical_code_passes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cmd = script(d, 20);
    baseline(d, &cmd, 3);
    let base = ["--baseline", "branch=main", "--baseline-history", "3"];
    let (code, out, err) = check(d, &cmd, &[&base[..], &["--calibrate"]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains(" real "))
        .unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let pct = |w: &str| w.trim_end_matches('%').parse::<f64>().unwrap();
    let (t, c) = (pct(words[0]), pct(words[1]));
    // Positive, finite, and what it catches is the threshold's margin
    // taken twice on the log scale: (1 + catches) = (1 + threshold)^2.
    // (A 20 ms sleep between 3 runs and 1 on a loaded machine can need a
    // threshold of 300%: the range only rules out nonsense.)
    assert!(t > 0.0 && t < 1000.0, "{out}");
    let twice = (1.0 + t / 100.0).powi(2);
    assert!((1.0 + c / 100.0 - twice).abs() < 0.01 * twice, "{out}");
    // Two A/A changes: one per measurement.
    assert_eq!(
        words.iter().filter(|w| w.ends_with('%')).count(),
        4,
        "{out}"
    );
    assert!(
        out.contains("3 baseline run(s) against 1 candidate run(s)"),
        "{out}"
    );
    // Two more runs of the candidate are stored.
    let n = common::stdout(kbench(d).args(["runs", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&n).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 5);
    // Stored runs are not measured again.
    let (code, _, err) = check(
        d,
        "",
        &[&base[..], &["--calibrate", "--candidate", "1"]].concat(),
    );
    assert_eq!(code, 2, "{err}");
}

/// A plan whose factor `side` sets SIDE for a command sleeping as long as
/// `DIR/SIDE.t` says: the two levels measured interleaved in one run.
fn sides(dir: &Path, base: &str, new: &str) -> String {
    std::fs::write(dir.join("base.t"), base).unwrap();
    std::fs::write(dir.join("new.t"), new).unwrap();
    let sh = dir.join("side.sh");
    std::fs::write(&sh, format!("sleep $(cat {}/$SIDE.t)\n", dir.display())).unwrap();
    let text = format!(
        r#"name = "sides"
samples = 8
warmup = 1

[factors]
side = {{ apply = "env", var = "SIDE", values = ["base", "new"] }}

[[bench]]
name = "nap"
command = ["sh", "{}"]
measure = ["real"]
"#,
        sh.display()
    );
    common::plan(dir, "sides.toml", &text).display().to_string()
}

fn check_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let _g = common::serial();
    let out = kbench(dir)
        .current_dir(dir)
        .arg("check")
        .args(args)
        .output()
        .unwrap();
    common::outcome(out)
}

/// `--against`: the baseline level measured in the same run, paired by
/// round. Identical levels never fail; a level three times as slow fails,
/// named first; a stored run holding both levels is judged alike; a level
/// or factor the plan lacks is refused before anything runs.
#[test]
fn against_a_level_of_the_same_run_passes_identical_code_and_fails_a_slower_one() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = sides(d, "0.02", "0.02");
    for (bad, says) in [
        ("sid=base", "no factor or swept parameter `sid`"),
        ("side=old", "`side` has no level `old` (levels: base, new)"),
        ("side", "expected FACTOR=VALUE"),
    ] {
        let (code, out, err) = check_in(d, &[&plan, "--against", bad]);
        assert_eq!(code, 2, "{bad}: {out}{err}");
        assert!(err.contains(says), "{bad}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // Refused before anything ran: no store was even made.
    assert!(!common::db(d).exists());

    let (code, out, err) = check_in(d, &[&plan, "--against", "side=base", "--threshold", "20%"]);
    assert!(code == 0 || code == 3, "{out}{err}");
    assert!(out.contains("nap real [side=new]"), "{out}");
    assert!(out.contains("paired by round"), "{out}");
    assert!(!out.contains("hint only"), "{out}");

    sides(d, "0.02", "0.06");
    let (code, out, err) = check_in(
        d,
        &[
            &plan,
            "--against",
            "side=base",
            "--threshold",
            "10%",
            "--format",
            "json",
        ],
    );
    assert_eq!(code, 1, "{out}{err}");
    let v = json(out.as_bytes());
    assert_eq!(v["interleaved"], true);
    assert_eq!(v["baseline_selector"], "side=base");
    assert_eq!(v["baseline_runs"], v["candidate_runs"]);
    assert_eq!(v["cells"][0]["verdict"], "regression");
    assert_eq!(v["cells"][0]["cell"], "side=new");
    let run = v["candidate_runs"][0].to_string();
    let lo = v["cells"][0]["interval"][0].as_f64().unwrap();
    assert!(lo > 0.1 && lo < 3.0, "{v}");

    // The stored run judged again, as text: the same verdict.
    let (code, out, _) = check_in(
        d,
        &[
            "--candidate",
            &run,
            "--against",
            "side=base",
            "--threshold",
            "10%",
        ],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("REGRESSION nap real [side=new]"), "{out}");
    let (code, _, err) = check_in(d, &["--candidate", &run, "--against", "side=nope"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no level `nope`"), "{err}");
}

/// `--against-command`: two commands measured as variants of one run; the
/// slower one fails, named by its command line.
#[test]
fn against_a_command_measures_both_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("old.sh"), "sleep 0.02\n").unwrap();
    std::fs::write(d.join("new.sh"), "sleep 0.08\n").unwrap();
    let (old, new) = (
        format!("sh {}/old.sh", d.display()),
        format!("sh {}/new.sh", d.display()),
    );
    let args = [&new[..], "--against-command", &old, "--threshold", "10%"];
    let run = ["--metric", "real", "--samples", "10", "--warmup", "1"];
    let (code, out, err) = check_in(d, &[&args[..], &run[..]].concat());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with(&format!("REGRESSION {new} real")), "{out}");
    assert!(
        out.contains(&format!("baseline `{old}` in the same run")),
        "{out}"
    );
    let (code, _, err) = check_in(d, &["--against-command", &old]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("give the candidate command(s)"), "{err}");
}

/// `--calibrate --against`: the plan measured twice with identical
/// levels; a threshold in a sane range, two A/A changes, two runs stored.
#[test]
fn calibrate_against_a_level_measures_the_plan_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = sides(d, "0.02", "0.02");
    let (code, out, err) = check_in(d, &[&plan, "--against", "side=base", "--calibrate"]);
    assert_eq!(code, 0, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("nap real"))
        .unwrap_or_else(|| panic!("{out}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let t = words[0].trim_end_matches('%').parse::<f64>().unwrap();
    assert!(t > 0.0 && t < 1000.0, "{out}");
    assert_eq!(
        words.iter().filter(|w| w.ends_with('%')).count(),
        4,
        "{out}"
    );
    assert!(out.contains("`side=base` interleaved"), "{out}");
    let n = common::stdout(kbench(d).args(["runs", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&n).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2);
}
