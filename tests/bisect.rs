//! `kbench bisect` end to end: a real git repository of a C program, a real
//! compiler per revision, real child processes measured.

mod common;

use common::kbench;
use std::path::Path;
use std::process::Command;

/// Commits in the test repository; commit `SLOW` (1-based) makes the
/// program 25% slower, and every later one keeps it: far enough past the
/// 5% threshold that the ends decide in one step on a loaded CI machine
/// (a 10% step once read +7.7% [+1.5%, +11.0%] there, undecided).
const COMMITS: usize = 20;
const SLOW: usize = 13;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A deterministic loop of `n` iterations (~15 ms at the base count)
/// that prints the CPU time it took: precise on a busy machine, where
/// wall time measures the other processes and rusage's user/sys split is
/// sampled per tick.
fn program(rev: usize, n: u64) -> String {
    format!(
        r#"/* revision {rev} */
#include <stdio.h>
#include <time.h>
int main(void) {{
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    volatile unsigned long x = 0;
    for (unsigned long i = 0; i < {n}UL; i++) x += i ^ (x >> 3);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    printf("cpu_ns %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return 0;
}}
"#
    )
}

/// The project's benchmark plan, kept in its tree: the program as a
/// command benchmark, its own CPU time as the metric.
const PLAN: &str = r#"name = "loop"
[[bench]]
name = "loop"
command = ["./prog"]
measure = []
metrics = [{ name = "cpu", regex = 'cpu_ns (\d+)', unit = "ns" }]
"#;

/// The repository: commit k is "commit k"; from commit SLOW on the loop
/// runs 25% more iterations. Returns the commit ids, oldest first.
fn repo(dir: &Path) -> Vec<String> {
    repo_slow_from(dir, Some(SLOW))
}

/// The repository with the slower loop from commit `slow` on, or never.
fn repo_slow_from(dir: &Path, slow: Option<usize>) -> Vec<String> {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    let mut ids = Vec::new();
    for k in 1..=COMMITS {
        let n = if slow.is_some_and(|s| k >= s) {
            25_000_000
        } else {
            20_000_000
        };
        std::fs::write(dir.join("prog.c"), program(k, n)).unwrap();
        std::fs::write(dir.join("bench.toml"), PLAN).unwrap();
        git(dir, &["add", "prog.c", "bench.toml"]);
        git(dir, &["commit", "-q", "-m", &format!("commit {k}")]);
        ids.push(git(dir, &["rev-parse", "HEAD"]));
    }
    ids
}

fn have_cc() -> bool {
    let ok = Command::new("cc")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: no C compiler (cc)");
    }
    ok
}

/// A scratch directory with the test repository in `repo/` (slower from
/// commit `slow` on, or never) and its commit ids, oldest first; None
/// without a C compiler, and the test skips.
fn fixture(slow: Option<usize>) -> Option<(tempfile::TempDir, Vec<String>)> {
    if !have_cc() {
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let ids = repo_slow_from(&tmp.path().join("repo"), slow);
    Some((tmp, ids))
}

/// The bisection's arguments: the plan's cell, read from each revision's
/// tree and run in its worktree.
fn bisect_args<'a>(repo: &'a str, good: &'a str, bad: &'a str) -> Vec<&'a str> {
    with_build(repo, good, bad, "cc -O1 -o prog prog.c")
}

fn with_build<'a>(repo: &'a str, good: &'a str, bad: &'a str, build: &'a str) -> Vec<&'a str> {
    vec![
        "bisect",
        "--repo",
        repo,
        "--good",
        good,
        "--bad",
        bad,
        "--build",
        build,
        "--bench",
        "bench.toml",
        "--metric",
        "cpu",
        "--threshold",
        "5%",
        "--name",
        "slow",
    ]
}

#[test]
fn bisect_names_the_commit_that_made_it_slower() {
    let Some((tmp, ids)) = fixture(Some(SLOW)) else {
        return;
    };
    let _t = common::serial();
    let dir = tmp.path();
    let r = dir.join("repo");
    let r = r.to_str().unwrap();
    let out = kbench(dir)
        .args(bisect_args(r, &ids[0], &ids[COMMITS - 1]))
        .arg("--json")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bisect failed:\n{stderr}");
    let v = common::json(&out.stdout);
    assert_eq!(
        v["first_bad"]["id"].as_str(),
        Some(ids[SLOW - 1].as_str()),
        "{v:#}\n{stderr}"
    );
    assert_eq!(v["first_bad"]["subject"], format!("commit {SLOW}"));
    // The effect: about +25% (the loop's 25% more iterations, less the
    // process start-up that does not grow), its interval around it.
    let e = &v["effect"];
    let (eff, lo, hi) = (
        e["regression"].as_f64().unwrap(),
        e["interval"]["lo"].as_f64().unwrap(),
        e["interval"]["hi"].as_f64().unwrap(),
    );
    assert!((0.12..0.4).contains(&eff), "effect {eff}");
    assert!(lo < eff && eff < hi && lo > 0.0, "[{lo}, {hi}]");

    // A binary search: the ends' step and at most ceil(log2(19))
    // revisions (two more when undecided neighbours are skipped), each
    // step at most 3 arms of --max-samples (60) rounds; counted in the
    // store: one CSV row per metric value, `cpu` once per sample.
    let csv = common::stdout(kbench(dir).args(["report", "slow", "--format", "csv"]));
    let samples = csv.lines().filter(|l| l.contains(",cpu,")).count();
    assert_eq!(samples as u64, v["samples"].as_u64().unwrap());
    let steps = v["steps"].as_array().unwrap().len();
    let search = (COMMITS - 1).next_power_of_two().trailing_zeros() as usize;
    assert!(
        steps <= 1 + search + 2,
        "{steps} steps for {COMMITS} commits"
    );
    assert!(
        samples <= steps * 3 * 60,
        "{samples} samples in {steps} steps of at most 3 x 60"
    );
    // Builds: one per tested revision, none twice.
    let tested = v["steps"].as_array().unwrap().len() - 1;
    assert_eq!(v["builds_run"].as_u64().unwrap() as usize, tested + 2);

    // The report shows the bisection as it was decided: each step's
    // revision against both ends measured in that step (never an end's
    // samples pooled over steps), and the first bad commit, stored.
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    let text = common::stdout(kbench(dir).args(["report", "slow"]));
    let first_bad_label = v["first_bad"]["label"].as_str().unwrap();
    assert!(
        text.contains("vs good") && text.contains("vs bad"),
        "{text}"
    );
    for s in v["steps"].as_array().unwrap() {
        let label = s["label"].as_str().unwrap();
        let row = text
            .lines()
            .find(|l| l.starts_with(label))
            .unwrap_or_else(|| panic!("{label} missing:\n{text}"));
        let call = s["call"].as_str().unwrap_or("skip").replace('-', " ");
        assert!(row.contains(&call), "{row}: {call}\n{text}");
    }
    assert!(
        text.contains(&format!("first bad commit: {}", ids[SLOW - 1])),
        "{text}"
    );
    assert!(
        text.contains(&format!("{:02}-", 0)),
        "good end row:\n{text}"
    );
    let stored = common::json(
        &kbench(dir)
            .args(["report", "slow", "--json"])
            .output()
            .unwrap()
            .stdout,
    );
    assert_eq!(stored["first_bad"], v["first_bad"]);
    assert_eq!(stored["steps"], v["steps"]);
    let html = common::stdout(kbench(dir).args(["report", "slow", "--format", "html"]));
    assert!(html.contains("<svg") && html.contains(first_bad_label));
    let md = common::stdout(kbench(dir).args(["report", "slow", "--format", "markdown"]));
    assert!(
        md.contains("| revision |") && md.contains(first_bad_label),
        "{md}"
    );

    // Again: every build is cached, nothing is rebuilt.
    let again = kbench(dir)
        .args(bisect_args(r, &ids[0], &ids[COMMITS - 1]))
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        again.status.success(),
        "second bisect: {}\n{}",
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&again.stderr)
    );
    let v2 = common::json(&again.stdout);
    assert_eq!(v2["builds_run"], 0, "{v2:#}");
}

#[test]
fn exit_code_decides_one_revision_for_git_bisect_run() {
    let Some((tmp, ids)) = fixture(Some(SLOW)) else {
        return;
    };
    let _t = common::serial();
    let dir = tmp.path();
    let r = dir.join("repo");
    let r = r.to_str().unwrap();
    let code = |rev: &str| {
        let out = kbench(dir)
            .args(bisect_args(r, &ids[0], &ids[COMMITS - 1]))
            .args(["--exit-code", "--rev", rev])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (c, err) = code(&ids[SLOW - 3]);
    assert_eq!(c, Some(0), "a fast revision is good:\n{err}");
    let (c, err) = code(&ids[SLOW + 2]);
    assert_eq!(c, Some(1), "a slow revision is bad:\n{err}");
    assert!(err.contains("like bad"), "{err}");
    // A revision that does not build is skipped (125).
    let build = format!("test $KBENCH_COMMIT != {} && cc -O1 -o prog prog.c", ids[5]);
    let skip = kbench(dir)
        .args(with_build(r, &ids[0], &ids[COMMITS - 1], &build))
        .args(["--exit-code", "--rev", &ids[5]])
        .output()
        .unwrap();
    assert_eq!(
        skip.status.code(),
        Some(125),
        "{}",
        String::from_utf8_lossy(&skip.stderr)
    );
    assert!(String::from_utf8_lossy(&skip.stderr).contains("build failed"));
    // Bad input stops `git bisect run` (exit 128), with one line.
    let bad = kbench(dir)
        .args(bisect_args(r, "no-such-rev", &ids[COMMITS - 1]))
        .arg("--exit-code")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(128));
    let e = String::from_utf8_lossy(&bad.stderr);
    assert!(e.contains("--good no-such-rev"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = repo(&dir.join("repo"));
    let r = dir.join("repo");
    let r = r.to_str().unwrap();
    for (args, want) in [
        (
            vec![
                "--good",
                ids[0].as_str(),
                "--bad",
                ids[1].as_str(),
                "--bench",
                "nope",
            ],
            "unknown benchmark `nope`",
        ),
        (
            vec![
                "--good",
                ids[3].as_str(),
                "--bad",
                ids[1].as_str(),
                "--bench",
                "cmd:true",
            ],
            "is not a first-parent ancestor",
        ),
        (
            vec![
                "--good",
                ids[0].as_str(),
                "--bad",
                ids[1].as_str(),
                "--bench",
                "cmd:true",
                "--threshold",
                "x",
            ],
            "--threshold",
        ),
        (
            vec![
                "--good",
                ids[0].as_str(),
                "--bad",
                ids[1].as_str(),
                "--bench",
                "cmd:true",
                "--metric",
                "nope",
            ],
            "--metric nope",
        ),
    ] {
        let out = kbench(dir)
            .args(["bisect", "-q", "--repo", r])
            .args(&args)
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert_eq!(
            e.lines()
                .filter(|l| l.starts_with("kbench: ") && !l.contains("bisecting"))
                .count(),
            1,
            "{e}"
        );
    }
    let out = kbench(dir)
        .args([
            "bisect",
            "--repo",
            dir.to_str().unwrap(),
            "--good",
            "a",
            "--bad",
            "b",
            "--bench",
            "cmd:true",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a git repository"));
}

/// `git bisect run kbench bisect --exit-code` over the repository in
/// `dir/repo` from its first to its last commit.
fn git_bisect_run(dir: &Path, ids: &[String]) -> std::process::Output {
    let r = dir.join("repo");
    let kb = common::bin();
    let mut run = vec![kb.to_str().unwrap()];
    run.extend(bisect_args(r.to_str().unwrap(), &ids[0], &ids[COMMITS - 1]));
    run.extend(["--exit-code", "-q"]);
    git(&r, &["bisect", "start", &ids[COMMITS - 1], &ids[0]]);
    Command::new("git")
        .arg("-C")
        .arg(&r)
        .args(["bisect", "run"])
        .args(&run)
        .env("KBENCH_DB", common::db(dir))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .output()
        .unwrap()
}

#[test]
fn git_bisect_run_with_exit_code_finds_it_too() {
    let Some((tmp, ids)) = fixture(Some(SLOW)) else {
        return;
    };
    let _t = common::serial();
    let dir = tmp.path();
    let out = git_bisect_run(dir, &ids);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("{} is the first bad commit", ids[SLOW - 1])),
        "{text}"
    );
    // Every step joined one campaign: the good end's samples accumulate.
    let csv = common::stdout(kbench(dir).args(["report", "slow", "--format", "csv"]));
    let good = csv
        .lines()
        .filter(|l| l.contains(",cpu,") && l.contains(&format!(",00-{},", &ids[0][..7])))
        .count();
    assert!(good >= 10, "{good} good-end samples:\n{csv}");
}

/// Without a regression between the ends, `git bisect run` must not name
/// a commit: the first `--exit-code` call checks the ends (once per
/// campaign) and exits 128, which stops `git bisect run`. Before, every
/// revision read "like good" and git blamed the tip.
#[test]
fn git_bisect_run_on_a_range_without_a_regression_names_no_commit() {
    let Some((tmp, ids)) = fixture(None) else {
        return;
    };
    let _t = common::serial();
    let dir = tmp.path();
    let r = dir.join("repo");
    let out = git_bisect_run(dir, &ids);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{text}\n{err}");
    assert!(!text.contains("is the first bad commit"), "{text}\n{err}");
    // Identical ends: "not worse", or, when the load widens the interval
    // past the threshold within the sample cap, "cannot tell"; either way
    // no commit is named and nothing is bisected.
    let refused = |e: &str| {
        e.contains("is not worse than the good end")
            || e.contains("cannot tell whether the bad end")
    };
    assert!(refused(&err), "{err}");
    // The ends were measured once and the verdict stored: a second call
    // decides at once from it, without measuring.
    let again = kbench(dir)
        .args(bisect_args(r.to_str().unwrap(), &ids[0], &ids[COMMITS - 1]))
        .args(["--exit-code", "-q", "--rev", &ids[5]])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(128));
    let e = String::from_utf8_lossy(&again.stderr);
    assert!(refused(&e), "{e}");
    let runs = common::stdout(kbench(dir).args(["runs", "--json"]));
    let runs: serde_json::Value = serde_json::from_str(&runs).unwrap();
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "{runs:#}");

    // A whole bisection of it says so too, and names no commit.
    let out = kbench(dir)
        .args(bisect_args(r.to_str().unwrap(), &ids[0], &ids[COMMITS - 1]))
        .arg("-q")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(refused(&e), "{e}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("first bad commit"));
}

/// Ctrl-C during a step stops after the current sample, as `kbench run`
/// does: the step's run is stored as interrupted with what it measured.
#[test]
fn sigint_stops_a_bisection_after_the_current_sample() {
    let Some((tmp, ids)) = fixture(Some(SLOW)) else {
        return;
    };
    let dir = tmp.path();
    let r = dir.join("repo");
    let child = common::spawn(
        dir,
        &[
            "bisect",
            "-q",
            "--repo",
            r.to_str().unwrap(),
            "--good",
            &ids[0],
            "--bad",
            &ids[COMMITS - 1],
            "--bench",
            "cmd:sleep 0.3",
            "--name",
            "slow",
        ],
    );
    common::interrupt(dir, child, 3);
    let db = common::sqlite(dir);
    let (status, n): (String, i64) = db
        .query_row(
            "SELECT status, (SELECT COUNT(*) FROM samples) FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(status, "interrupted");
    assert!((3..16).contains(&n), "{n} samples");
}
