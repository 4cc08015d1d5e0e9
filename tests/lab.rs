//! The lab store: a real PostgreSQL server (started by the test helper,
//! `kbench::test_support::pg`) used through the binary exactly as a
//! SQLite file is. `kbench store copy` moves campaigns SQLite ->
//! PostgreSQL -> a new SQLite with identical report cells and adds nothing
//! the second time; two runners write one campaign at once and lose
//! nothing; the password never shows in any output or stored setting.

mod common;

use common::kbench;
use kbench::test_support::pg;
use serde_json::Value;
use std::path::Path;

const PLAN: &str = r#"
name = "lab"
samples = 3
sample_time = 0.01
warmup = 0

[[bench]]
use = "getppid"

[[bench]]
use = "getuid"
"#;

/// `kbench --db DB ARGS`: (exit code, stdout, stderr).
fn at(dir: &Path, db: &str, args: &[&str]) -> (i32, String, String) {
    let out = kbench(dir)
        .env_remove("KBENCH_DB")
        .arg("--db")
        .arg(db)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn ok(dir: &Path, db: &str, args: &[&str]) -> (String, String) {
    let (code, out, err) = at(dir, db, args);
    assert_eq!(code, 0, "kbench {args:?} on {db}: {err}");
    (out, err)
}

fn cells(dir: &Path, db: &str) -> Value {
    let (out, _) = ok(dir, db, &["report", "lab", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    v["cells"].clone()
}

#[test]
fn copy_sqlite_to_postgres_and_back_keeps_every_cell() {
    let Some(url) = pg::fresh_db("copy_round_trip") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(d, "lab.toml", PLAN);
    let plan = plan.to_str().unwrap();
    let a = d.join("a.db");
    let a = a.to_str().unwrap();
    ok(d, a, &["run", "-q", plan]);
    let (_, err) = ok(d, a, &["store", "copy", "--from", a, "--to", &url]);
    assert!(
        err.contains("1 new run(s) of 1 campaign(s), 6 new sample(s)"),
        "{err}"
    );
    let b = d.join("b.db");
    let b = b.to_str().unwrap();
    ok(d, a, &["store", "copy", "--from", &url, "--to", b, "lab"]);
    let want = cells(d, a);
    assert_eq!(want.as_array().unwrap().len(), 2);
    assert_eq!(cells(d, &url), want, "PostgreSQL report");
    assert_eq!(cells(d, b), want, "SQLite -> PostgreSQL -> SQLite report");
    // Copying again adds nothing, either way.
    let (_, err) = ok(d, a, &["store", "copy", "--from", a, "--to", &url]);
    assert!(
        err.contains("0 new run(s) of 1 campaign(s), 0 new sample(s)"),
        "{err}"
    );
    let (_, err) = ok(d, a, &["store", "copy", "--from", &url, "--to", b]);
    assert!(err.contains("0 new run(s)"), "{err}");
    let (runs, _) = ok(d, &url, &["runs", "--json"]);
    let runs: Value = serde_json::from_str(&runs).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    // The campaign resumes from PostgreSQL: nothing is left to run.
    let (_, err) = ok(d, &url, &["run", "-q", plan]);
    assert!(err.contains("nothing to run here"), "{err}");
}

#[test]
fn two_runners_write_one_campaign_at_once() {
    let Some(url) = pg::fresh_db("two_runners") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(d, "lab.toml", PLAN);
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(assert_cmd::cargo::cargo_bin("kbench"))
                .env("NO_COLOR", "1")
                .env_remove("KBENCH_DB")
                .args(["--db", &url, "run", "-q", "--samples", "20"])
                .arg(&plan)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (out, _) = ok(d, &url, &["report", "lab", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["runs"].as_array().unwrap().len(),
        2,
        "one campaign, both runs"
    );
    for c in v["cells"].as_array().unwrap() {
        assert_eq!(c["n"], 40, "both runners' samples: {c}");
    }
}

#[test]
fn the_password_never_shows() {
    let Some(url) = pg::fresh_db("password") else {
        return;
    };
    let password = pg::server("password").unwrap().password.clone();
    assert!(url.contains(&password));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(d, "lab.toml", PLAN);
    let plan = plan.to_str().unwrap();
    let mut seen = String::new();
    for args in [
        vec!["run", plan],
        vec!["run", "--json", plan, "--force"],
        vec!["runs"],
        vec!["report", "lab", "--json"],
        vec!["status", plan, "--json"],
    ] {
        let (_, out, err) = at(d, &url, &args);
        seen += &out;
        seen += &err;
    }
    assert!(seen.contains("getppid"), "the commands ran: {seen}");
    assert!(!seen.contains(&password), "password printed:\n{seen}");
    // The command line stored with each run is redacted.
    assert!(seen.contains(":***@127.0.0.1"), "{seen}");
    // A wrong password: one line, exit 2, neither password in it.
    let wrong = url.replace(&password, "WrongSecret123");
    let (code, out, err) = at(d, &wrong, &["runs"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(!(out + &err).contains("WrongSecret123"), "{err}");
    // The same server reached through PGPASSWORD, the URL without it.
    let bare = url.replace(&format!(":{password}@"), "@");
    let out = kbench(d)
        .env_remove("KBENCH_DB")
        .env("PGPASSWORD", &password)
        .args(["--db", &bare, "runs"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // ... and through a pgpass file.
    let pass = d.join("pgpass");
    std::fs::write(&pass, format!("127.0.0.1:*:*:kbench:{password}\n")).unwrap();
    let out = kbench(d)
        .env_remove("KBENCH_DB")
        .env_remove("PGPASSWORD")
        .env("PGPASSFILE", &pass)
        .args(["--db", &bare, "runs"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
