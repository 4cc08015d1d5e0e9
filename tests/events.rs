//! The run event stream end to end: `kbench run --events jsonl` prints
//! one JSON object per event, `kbench ingest` stores such a stream, the
//! stored cells equal the direct run's, and ingesting twice adds nothing.

mod common;

use common::{json, kbench, stdout};
use predicates::prelude::*;

fn report_cells(dir: &std::path::Path) -> serde_json::Value {
    json(stdout(kbench(dir).args(["report", "--json"])).as_bytes())["cells"].clone()
}

#[test]
fn an_ingested_stream_reports_like_the_run_and_twice_adds_nothing() {
    let run_dir = tempfile::tempdir().unwrap();
    let events = stdout(kbench(run_dir.path()).args([
        "run",
        "getppid",
        "pipe-bw:chunk=64k,placement=same",
        "--samples",
        "3",
        "--sample-time",
        "0.01",
        "--warmup",
        "1",
        "--events",
        "jsonl",
        "-q",
    ]));
    let lines: Vec<serde_json::Value> = events.lines().map(|l| json(l.as_bytes())).collect();
    let kinds: Vec<&str> = lines.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_begun"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"run_ended"), "{kinds:?}");
    let count = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(
        (
            count("cell_prepared"),
            count("sample"),
            count("warmup"),
            count("cell_done")
        ),
        (2, 6, 2, 2)
    );
    // The store holds one sample per metric of each sample event: the
    // benchmark's own and the counters per operation beside it.
    let stored: usize = (lines.iter())
        .filter(|e| e["event"] == "sample")
        .map(|e| e["values"].as_array().unwrap().len())
        .sum();
    assert!(stored >= 6, "{stored}");
    assert_eq!(lines[0]["schema"], 1);
    assert_eq!(lines[0]["fingerprint"]["hostname"], lines[0]["host"]);
    let direct = report_cells(run_dir.path());

    let other = tempfile::tempdir().unwrap();
    let file = other.path().join("run.jsonl");
    std::fs::write(&file, &events).unwrap();
    kbench(other.path())
        .arg("ingest")
        .arg(&file)
        .assert()
        .success()
        .stderr(predicate::str::contains(format!(
            " {stored} new sample(s) stored"
        )));
    assert_eq!(report_cells(other.path()), direct);
    // Again, from standard input: nothing new.
    kbench(other.path())
        .args(["ingest", "-"])
        .write_stdin(events.clone())
        .assert()
        .success()
        .stderr(predicate::str::contains("0 new sample(s) stored"));
    let runs = json(stdout(kbench(other.path()).args(["runs", "--json"])).as_bytes());
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1);
    assert_eq!(runs["runs"][0]["samples"], stored);
    assert_eq!(report_cells(other.path()), direct);
}

#[test]
fn a_malformed_stream_names_its_line_and_stores_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(&file, "\n{\"event\":\"run_ended\"}\n").unwrap();
    kbench(dir.path())
        .arg("ingest")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl:2: not a kbench event"));
    // A well-formed stream that refers to a run it never began.
    std::fs::write(
        &file,
        "{\"event\":\"run_ended\",\"run\":\"x\",\"ended\":1.0,\"status\":\"done\"}\n",
    )
    .unwrap();
    kbench(dir.path())
        .arg("ingest")
        .arg(&file)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl:1: event for run x"));
    let runs = json(stdout(kbench(dir.path()).args(["runs", "--json"])).as_bytes());
    assert_eq!(runs["runs"].as_array().unwrap().len(), 0);
    kbench(dir.path())
        .args(["run", "getppid", "--json", "--events", "jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("choose one"));
}

/// A reader that goes away (a broken SSH connection, `| head -1`) stops
/// the run; the run is then over in the store, never left `running`.
#[test]
fn a_closed_event_pipe_leaves_no_running_run() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(common::bin())
        .env("KBENCH_DB", common::db(dir.path()))
        .args([
            "run",
            "getppid",
            "--samples",
            "50",
            "--sample-time",
            "0.01",
            "--events",
            "jsonl",
            "-q",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("run_begun"), "{first}");
    // The read end is dropped here.
    let status = child.wait().unwrap();
    assert!(status.code().is_some(), "no crash: {status:?}");
    let runs = json(stdout(kbench(dir.path()).args(["runs", "--json"])).as_bytes());
    assert_eq!(runs["runs"][0]["status"], "interrupted", "{runs}");
}

/// `git` in `dir`, which must succeed.
fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn labels_are_stored_streamed_replayed_and_imported() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let head = git(&repo, &["rev-parse", "HEAD"]);
    // Inside a work tree: its branch and commit, the user's labels on top.
    let events = stdout(
        kbench(dir.path())
            .current_dir(&repo)
            .args(["run", "getppid", "--samples", "2", "--sample-time", "0.01"])
            .args(["--warmup", "0", "--events", "jsonl", "-q"])
            .args(["--label", "os=debian 12,cpus=0,1", "--label", "tag=a"]),
    );
    let begun = json(events.lines().next().unwrap().as_bytes());
    let want = serde_json::json!({
        "branch": "trunk", "commit": head, "cpus": "0,1", "os": "debian 12", "tag": "a"
    });
    assert_eq!(begun["labels"], want);
    let runs = json(stdout(kbench(dir.path()).args(["runs", "--json"])).as_bytes());
    let runs = &runs["runs"];
    assert_eq!(runs[0]["labels"], want);
    let text = stdout(kbench(dir.path()).arg("runs"));
    assert!(
        text.contains(&format!("branch=trunk commit={} cpus=0,1", &head[..12])),
        "{text}"
    );
    // A label given wins over the repository's; outside a work tree there
    // are only the given ones.
    kbench(dir.path())
        .current_dir(&repo)
        .args(["run", "getppid", "--samples", "2", "--sample-time", "0.01"])
        .args(["--warmup", "0", "-q", "--label", "branch=main"])
        .assert()
        .success();
    let runs = json(stdout(kbench(dir.path()).args(["runs", "--json"])).as_bytes());
    let runs = &runs["runs"];
    assert_eq!(runs[1]["labels"]["branch"], "main");
    assert_eq!(runs[1]["labels"]["commit"], head.as_str());

    // Replayed into another store, twice: the same labels, one run.
    let other = tempfile::tempdir().unwrap();
    for _ in 0..2 {
        kbench(other.path())
            .args(["ingest", "-"])
            .write_stdin(events.clone())
            .assert()
            .success();
    }
    let runs = json(stdout(kbench(other.path()).args(["runs", "--json"])).as_bytes());
    let runs = &runs["runs"];
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["labels"], want);

    // Imported results carry only the labels given.
    let data = other.path().join("old.txt");
    std::fs::write(&data, "1\n2\n3\n").unwrap();
    kbench(other.path())
        .current_dir(other.path())
        .args([
            "import", "old.txt", "--from", "ministat", "--label", "os=bsd",
        ])
        .assert()
        .success();
    let runs = json(stdout(kbench(other.path()).args(["runs", "--json"])).as_bytes());
    let runs = &runs["runs"];
    assert_eq!(runs[1]["labels"], serde_json::json!({"os": "bsd"}));

    // A bad label is bad input naming it.
    kbench(dir.path())
        .args(["run", "getppid", "--label", "bad key=1"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("label key `bad key`"));
}
