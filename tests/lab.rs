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
    common::outcome(out)
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
    ok(d, a, &["run", "-q", plan, "--label", "os=debian 12"]);
    // Every value of the run: 6 of ns/op and the counters beside them.
    let (stored, _) = ok(d, a, &["runs", "--json"]);
    let stored = serde_json::from_str::<Value>(&stored).unwrap()["runs"][0]["samples"].clone();
    let (_, err) = ok(d, a, &["store", "copy", "--from", a, "--to", &url]);
    assert!(
        err.contains(&format!(
            "1 new run(s) of 1 campaign(s), {stored} new sample(s)"
        )),
        "{err}"
    );
    let b = d.join("b.db");
    let b = b.to_str().unwrap();
    ok(d, a, &["store", "copy", "--from", &url, "--to", b, "lab"]);
    let want = cells(d, a);
    let own = want
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| !common::is_counter(c));
    assert_eq!(own.count(), 2);
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
    let runs = &runs["runs"];
    assert_eq!(runs.as_array().unwrap().len(), 1);
    // The run's labels travel with it, both ways.
    assert_eq!(runs[0]["labels"]["os"], "debian 12");
    let (back, _) = ok(d, b, &["runs", "--json"]);
    let back: Value = serde_json::from_str(&back).unwrap();
    assert_eq!(back["runs"][0]["labels"], runs[0]["labels"]);
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
            std::process::Command::new(common::bin())
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
    // The runners take turns on the campaign (an advisory lock): the second
    // resumes from what the first stored, so the plan's 20 samples per cell
    // are never exceeded (before the lock, each cell got 40).
    let (out, _) = ok(d, &url, &["report", "lab", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert!(!cells.is_empty());
    for c in cells {
        assert_eq!(c["n"], 20, "exactly the planned samples: {c}");
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
    // Help shows where the store comes from, never KBENCH_DB's value.
    let out = kbench(d)
        .env("KBENCH_DB", &url)
        .args(["runs", "--help"])
        .output()
        .unwrap();
    seen += &String::from_utf8_lossy(&out.stdout);
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

/// Every text a user or a reviewer can see of a store, dumped: each
/// table's rows as text.
fn dump_tables(admin_url: &str, db: &str) -> String {
    let url = admin_url.replacen("/postgres", &format!("/{db}"), 1);
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut text = String::new();
    for t in [
        "campaigns",
        "runs",
        "cells",
        "series",
        "samples",
        "failures",
    ] {
        for r in c.query(&format!("SELECT t::text FROM {t} t"), &[]).unwrap() {
            text += r.get::<_, &str>(0);
            text.push('\n');
        }
    }
    text
}

/// Issue: a password holding `/`, `?`, `#` or `@`, or given as a
/// percent-escaped `password` parameter, escaped the old string redaction:
/// printed in errors, stored in a run's settings (and so in HTML reports),
/// written in clear into `--resume-unit`'s unit file. Through all three
/// ways of writing it, no output, stored row (read back from the live
/// server), unit file or remote command line holds any part of it.
#[test]
fn a_password_with_url_characters_never_shows_or_is_stored() {
    let Some(server) = pg::server("sentinel") else {
        return;
    };
    let Some(url) = pg::fresh_db("sentinel") else {
        return;
    };
    let db = url.rsplit('/').next().unwrap().to_string();
    // A role of its own, whose password is the sentinel.
    const PASSWORD: &str = "SE/CR?ET#KB@SENTINEL";
    let admin = server.url("postgres");
    let mut c = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
    c.batch_execute(&format!(
        "CREATE ROLE kbs LOGIN PASSWORD '{PASSWORD}'; ALTER DATABASE {db} OWNER TO kbs"
    ))
    .unwrap();
    let enc: String = PASSWORD
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let host = format!("127.0.0.1:{}", server.port);
    let forms = [
        format!("postgres://kbs:{PASSWORD}@{host}/{db}"),
        format!("postgres://kbs:{enc}@{host}/{db}"),
        format!("postgresql://kbs@{host}/{db}?sslmode=disable&pass%77ord={enc}"),
    ];
    let secret = |text: &str| -> Option<&str> {
        ["SENTINEL", "CR?ET", "CR%3FET", "SE/CR", "SE%2FCR"]
            .into_iter()
            .find(|s| text.contains(s))
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(d, "lab.toml", PLAN);
    let plan = plan.to_str().unwrap();
    let hosts = common::plan(
        d,
        "hosts.toml",
        "[[host]]\nname = \"a\"\nssh = \"nobody@192.0.2.1\"\n",
    );
    for (i, u) in forms.iter().enumerate() {
        let mut seen = Vec::new();
        let run = if i == 0 {
            vec!["run", plan]
        } else {
            vec!["run", plan, "--force"]
        };
        let (code, out, err) = at(d, u, &run);
        assert_eq!(code, 0, "form {i}: {err}");
        seen.push(("run", out + &err));
        // Under a file: the copy fails after opening the source. (Relative,
        // it named a path under the test's working directory, the
        // repository, and made a `lab.toml` directory there.)
        let under_file = d.join("lab.toml/x.db");
        for args in [
            vec!["runs"],
            vec!["report", "lab", "--format", "html"],
            vec!["report", "lab", "--json"],
            vec!["status", plan],
            vec!["status", plan, "--resume-unit"],
            // Usage errors quote the arguments they reject.
            vec!["runs", u.as_str()],
            vec![
                "store",
                "copy",
                "--from",
                u.as_str(),
                "--to",
                under_file.to_str().unwrap(),
            ],
            vec![
                "fleet",
                "run",
                plan,
                "--hosts",
                hosts.to_str().unwrap(),
                "--",
                "--db",
                u.as_str(),
            ],
        ] {
            let (_, out, err) = at(d, u, &args);
            seen.push((args[0], out + &err));
        }
        // Errors that name the store: a refused port, a bad parameter.
        for broken in [
            u.replace(&host, "127.0.0.1:1"),
            u.replace(&host, "127.0.0.1:x"),
            format!(
                "{u}{}bogus_option=1",
                if u.contains('?') { "&" } else { "?" }
            ),
        ] {
            let (code, out, err) = at(d, &broken, &["runs"]);
            assert_ne!(code, 0, "{broken}");
            seen.push(("error", out + &err));
        }
        for (what, text) in &seen {
            assert!(
                secret(text).is_none(),
                "form {i}: {what} shows the password:\n{text}"
            );
        }
        let unit = &seen
            .iter()
            .find(|(w, t)| *w == "status" && t.contains("ExecStart"))
            .unwrap()
            .1;
        assert!(
            unit.contains(&format!("--db postgres://kbs@{host}/{db}"))
                || unit.contains(&format!(
                    "--db 'postgresql://kbs@{host}/{db}?sslmode=disable'"
                )),
            "{unit}"
        );
        assert!(seen[0].1.contains("getppid"), "the run ran: {}", seen[0].1);
    }
    let rows = dump_tables(&admin, &db);
    assert!(rows.contains(":***@"), "the stored command lines: {rows}");
    assert!(
        secret(&rows).is_none(),
        "a stored row holds the password:\n{rows}"
    );
}

#[test]
fn ingest_into_postgres_twice_stores_once_and_bad_urls_are_one_line() {
    let Some(url) = pg::fresh_db("ingest_twice") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("s.jsonl");
    std::fs::write(
        &f,
        stream("h", "00000000-0000-4000-8000-000000000abc", 3, 4),
    )
    .unwrap();
    let f = f.to_str().unwrap();
    let (_, err) = ok(d, &url, &["ingest", f]);
    assert!(err.contains("12 new sample(s) stored"), "{err}");
    let (_, err) = ok(d, &url, &["ingest", f]);
    assert!(err.contains("0 new sample(s) stored"), "{err}");
    let (out, _) = ok(d, &url, &["report", "1", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert!(
        v["cells"].as_array().unwrap().iter().all(|c| c["n"] == 4),
        "{v}"
    );
    let bad = url.replace("127.0.0.1:", "127.0.0.1:x");
    let (code, _, err) = at(d, &bad, &["runs"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("not a PostgreSQL URL") && err.contains(":***@"),
        "{err}"
    );
    assert!(!err.contains(&pg::server("x").unwrap().password), "{err}");
}

/// Another host's runs of a campaign complete nothing here: the campaign
/// is per host, also on a store shared without `fleet`.
#[test]
fn a_campaign_is_per_host() {
    let Some(url) = pg::fresh_db("per_host") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = common::plan(d, "lab.toml", PLAN);
    let plan = plan.to_str().unwrap();
    let scratch = d.join("scratch.db");
    let (events, _) = ok(
        d,
        scratch.to_str().unwrap(),
        &["run", plan, "--events", "jsonl", "-q"],
    );
    // The same stream, as if another machine had measured it.
    let mut lines: Vec<String> = events.lines().map(String::from).collect();
    let mut begun: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(begun["event"], "run_begun");
    begun["host"] = "elsewhere".into();
    lines[0] = begun.to_string();
    let f = d.join("elsewhere.jsonl");
    std::fs::write(&f, lines.join("\n") + "\n").unwrap();
    ok(d, &url, &["ingest", f.to_str().unwrap()]);
    let (_, err) = ok(d, &url, &["status", plan, "--json"]);
    assert!(!err.contains("error"), "{err}");
    // Here, every cell is still to run; then nothing is.
    let (out, err) = ok(d, &url, &["run", plan, "-q", "--json"]);
    assert!(!err.contains("nothing to run here"), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(common::own_cells(&v).len(), 2, "{v}");
    assert!(
        v["cells"].as_array().unwrap().iter().all(|c| c["n"] == 3),
        "{v}"
    );
    let (_, err) = ok(d, &url, &["run", plan, "-q"]);
    assert!(err.contains("nothing to run here"), "{err}");
    let (out, _) = ok(d, &url, &["report", "lab", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2, "{v}");
}

/// A run's event stream with `cells` cells of `rounds` samples each.
fn stream(host: &str, run: &str, cells: usize, rounds: usize) -> String {
    let mut s = format!(
        r#"{{"event":"run_begun","schema":1,"run":"{run}","campaign":null,"host":"{host}","started":1.0,"fingerprint":{{"hostname":"{host}"}},"config":{{"version":2,"plan":"bulk","samples":{rounds},"sample_time":0.1,"warmup":0,"seed":1,"stop":null,"force":false,"argv":[]}},"overhead_ns":0.3,"planned_cells":{cells},"planned_samples":{}}}"#,
        cells * rounds
    );
    s.push('\n');
    for c in 0..cells {
        s += &format!(
            r#"{{"event":"cell_prepared","run":"{run}","cell":{{"key":"c{c}","bench":"getppid","source":"getppid","kind":"micro","params":{{}},"factors":{{"n":"{c}"}},"label_params":[],"metrics":[{{"name":"ns/op","unit":"ns","direction":"lower"}}],"readings":{{}}}}}}"#
        );
        s.push('\n');
    }
    for r in 0..rounds {
        for c in 0..cells {
            let v = 100.0 + c as f64 + ((r * 7919 + c * 104729) % 1000) as f64 / 100.0;
            s += &format!(
                r#"{{"event":"sample","run":"{run}","cell":"c{c}","round":{r},"t":{}.5,"values":[["ns/op",{v}]]}}"#,
                r + 2
            );
            s.push('\n');
        }
    }
    s += &format!(r#"{{"event":"run_ended","run":"{run}","ended":9.0,"status":"done"}}"#);
    s.push('\n');
    s
}

/// `kbench --db DB ARGS` to its end: its exit code and its peak RSS in
/// MB, as GNU time reads it from `wait4`. Not this process's own `wait4`:
/// exec records the old address space's peak in the process's maximum,
/// so a child spawned from this test process (hundreds of MB after the
/// other tests) would report the test's peak, not kbench's; time's child
/// is forked from time's own few MB.
fn peak_mb(dir: &Path, db: &str, args: &[&str]) -> (i32, f64) {
    let rss = dir.join("maxrss");
    let status = std::process::Command::new("/usr/bin/time")
        .arg("-o")
        .arg(&rss)
        .args(["-f", "%M"])
        .arg(assert_cmd::cargo::cargo_bin("kbench"))
        .current_dir(dir)
        .env_remove("KBENCH_DB")
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("GNU time (/usr/bin/time, Debian's `time`)");
    let text = std::fs::read_to_string(&rss).unwrap();
    // A failing command makes time write "Command exited with ..." first.
    let kib: f64 = text.lines().last().unwrap().trim().parse().unwrap();
    (status.code().unwrap_or(-1), kib / 1024.0)
}

/// Ingest and `store copy` hold a bounded part of the stream, not all of
/// it: ten times the samples (2*10^4 -> 2*10^5) into PostgreSQL and into
/// SQLite, and copied from one into the other, add far less than the
/// ~55 MB that holding the extra samples took, and each stays under the
/// lab's 100 MB (the child's peak RSS as the kernel counted it). A
/// report of them, which needs every sample, holds a bounded number of
/// bytes per sample.
#[test]
fn ingest_copy_and_report_memory_stay_bounded() {
    let Some(url) = pg::fresh_db("flat_small") else {
        return;
    };
    let url_big = pg::fresh_db("flat_big").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (mut peak, mut report_peak) = (Vec::new(), Vec::new());
    for (name, rounds, pg_url) in [("small", 1_000, &url), ("big", 10_000, &url_big)] {
        let f = d.join(format!("{name}.jsonl"));
        let uuid = "00000000-0000-4000-8000-0000000000aa";
        std::fs::write(&f, stream(name, uuid, 20, rounds)).unwrap();
        let f = f.to_str().unwrap();
        let lite = d.join(format!("{name}.db"));
        let lite = lite.to_str().unwrap();
        let (c1, into_pg) = peak_mb(d, pg_url, &["ingest", f]);
        let (c2, into_lite) = peak_mb(d, lite, &["ingest", f]);
        let copy_to = d.join(format!("{name}-copy.db"));
        let copy_to = copy_to.to_str().unwrap();
        let (c3, copied) = peak_mb(
            d,
            lite,
            &["store", "copy", "--from", pg_url, "--to", copy_to],
        );
        assert_eq!((c1, c2, c3), (0, 0, 0), "{name}");
        for db in [pg_url.as_str(), lite, copy_to] {
            let (runs, _) = ok(d, db, &["runs", "--json"]);
            let runs: Value = serde_json::from_str(&runs).unwrap();
            assert_eq!(runs["runs"][0]["samples"], 20 * rounds as i64, "{db}");
        }
        peak.push([into_pg, into_lite, copied]);
        let mut reports = Vec::new();
        for db in [pg_url.as_str(), lite] {
            for format in ["text", "csv"] {
                let (code, mb) = peak_mb(d, db, &["report", "1", "--format", format]);
                assert_eq!(code, 0, "{db} {format}");
                reports.push(mb);
            }
        }
        report_peak.push(reports);
    }
    // A report holds each sample once, in a slim record: the peak grows
    // by a bounded number of bytes per sample (text: the records, the
    // statistics' sorted copies and the model's values; CSV: the records,
    // written out as they are read, never a second table of every row).
    let extra = (20 * 10_000 - 20 * 1_000) as f64;
    for (k, (what, bound)) in [
        ("report from PostgreSQL", 160.0),
        ("CSV report from PostgreSQL", 100.0),
        // SQLite's mapped pages of the store (~74 bytes a sample) count
        // as resident too. With 48-byte samples read into lists made to
        // size: 132 and 122 bytes (198 and 146 with 72-byte samples in
        // growing lists).
        ("report from SQLite", 170.0),
        ("CSV report from SQLite", 150.0),
    ]
    .iter()
    .enumerate()
    {
        let (small, big) = (report_peak[0][k], report_peak[1][k]);
        let per_sample = (big - small) * 1024.0 * 1024.0 / extra;
        eprintln!("{what}: peak RSS {small:.1} MB -> {big:.1} MB, {per_sample:.0} bytes/sample");
        assert!(
            per_sample < *bound,
            "{what}: {per_sample:.0} bytes per sample ({small:.1} MB for 2*10^4 samples, {big:.1} MB for 2*10^5), over {bound}"
        );
    }
    for (k, what) in ["ingest into PostgreSQL", "ingest into SQLite", "store copy"]
        .iter()
        .enumerate()
    {
        let (small, big) = (peak[0][k], peak[1][k]);
        eprintln!("{what}: peak RSS {small:.1} MB for 2*10^4 samples, {big:.1} MB for 2*10^5");
        assert!(
            big < small + 25.0,
            "{what}: {small:.1} MB for 2*10^4 samples, {big:.1} MB for 2*10^5"
        );
        // The lab's bound for any ingest (10^6 samples included): the
        // child's own peak.
        assert!(big < 100.0, "{what}: {big:.1} MB peak RSS, over 100 MB");
    }
}

/// The lab guide's figures: samples per second ingested into PostgreSQL
/// from two streams at once (two `kbench ingest` processes) and of one
/// stream of 10^6 samples, its peak RSS, `store copy` of 10^6 samples,
/// and the time `report` takes over them from PostgreSQL and SQLite. Measures, so run alone and on purpose:
/// `KBENCH_PG_FSYNC=on cargo test --release --test lab -- --ignored --nocapture`.
#[test]
#[ignore]
fn lab_throughput() {
    let Some(url) = pg::fresh_db("throughput") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let per_host = 100_000;
    let files: Vec<_> = ["h1", "h2"]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let f = d.join(format!("{h}.jsonl"));
            std::fs::write(
                &f,
                stream(
                    h,
                    &format!("00000000-0000-4000-8000-00000000000{i}"),
                    10,
                    per_host / 10,
                ),
            )
            .unwrap();
            f
        })
        .collect();
    let t = std::time::Instant::now();
    let children: Vec<_> = files
        .iter()
        .map(|f| {
            std::process::Command::new(common::bin())
                .env_remove("KBENCH_DB")
                .args(["--db", &url, "ingest"])
                .arg(f)
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        assert!(c.wait_with_output().unwrap().status.success());
    }
    let secs = t.elapsed().as_secs_f64();
    let (runs, _) = ok(d, &url, &["runs", "--json"]);
    let runs: Value = serde_json::from_str(&runs).unwrap();
    let total: i64 = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["samples"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 2 * per_host as i64);
    eprintln!(
        "ingest: {} samples from two streams at once in {secs:.2} s = {:.0} samples/s",
        total,
        total as f64 / secs
    );

    // 10^6 samples: ingested into PostgreSQL and into SQLite (peak RSS),
    // copied SQLite -> PostgreSQL, then reported from both, alternating.
    let big = d.join("big.jsonl");
    std::fs::write(
        &big,
        stream("big", "00000000-0000-4000-8000-0000000000ff", 20, 50_000),
    )
    .unwrap();
    let big = big.to_str().unwrap();
    let url_ingest = pg::fresh_db("throughput_ingest").unwrap();
    let t = std::time::Instant::now();
    let (code, rss) = peak_mb(d, &url_ingest, &["ingest", big]);
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(code, 0);
    eprintln!(
        "ingest of 10^6 samples into PostgreSQL: {secs:.2} s = {:.0} samples/s, peak RSS {rss:.1} MB",
        1e6 / secs
    );
    assert!(rss < 100.0, "{rss:.1} MB");
    let lite = d.join("big.db");
    let lite = lite.to_str().unwrap();
    let (code, rss) = peak_mb(d, lite, &["ingest", big]);
    assert_eq!(code, 0);
    eprintln!("ingest of 10^6 samples into SQLite: peak RSS {rss:.1} MB");
    assert!(rss < 100.0, "{rss:.1} MB");
    let url2 = pg::fresh_db("throughput_big").unwrap();
    let t = std::time::Instant::now();
    let (code, rss) = peak_mb(d, lite, &["store", "copy", "--from", lite, "--to", &url2]);
    assert_eq!(code, 0);
    let secs = t.elapsed().as_secs_f64();
    eprintln!(
        "store copy of 10^6 samples SQLite -> PostgreSQL (a transaction per 1000): {secs:.2} s = {:.0} samples/s, peak RSS {rss:.1} MB",
        1e6 / secs
    );
    let mut took = [Vec::new(), Vec::new()];
    for _ in 0..3 {
        for (k, db) in [url2.as_str(), lite].into_iter().enumerate() {
            let t = std::time::Instant::now();
            let (out, _) = ok(d, db, &["report", "1"]);
            took[k].push(t.elapsed().as_secs_f64());
            assert!(out.contains("getppid") || out.contains("c19"), "{out}");
        }
    }
    eprintln!(
        "report over 10^6 samples: PostgreSQL {:.2?} s, SQLite {:.2?} s",
        took[0], took[1]
    );
}

/// A store large enough to be read in two halves at once (100,000 rowids
/// and more), in a directory its reader cannot write: the second
/// connection cannot read a WAL store there, so one connection reads it
/// all, and the report equals the one its owner gets.
#[test]
fn a_large_store_in_a_read_only_directory_reports_as_its_owner_sees_it() {
    if !common::can_become_nobody() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let f = d.join("s.jsonl");
    let uuid = "00000000-0000-4000-8000-0000000000ad";
    std::fs::write(&f, stream("ro", uuid, 4, 30_000)).unwrap();
    let db = d.join("own.db");
    let db = db.to_str().unwrap();
    let (code, _) = peak_mb(d, db, &["ingest", f.to_str().unwrap()]);
    assert_eq!(code, 0);
    let (own, _) = ok(d, db, &["report", "1"]);
    let ro = d.join("shared");
    std::fs::create_dir(&ro).unwrap();
    std::fs::copy(db, ro.join("kbench.db")).unwrap();
    let bin = d.join("kbench");
    std::fs::copy(common::bin(), &bin).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for (p, mode) in [
        (d, 0o755),
        (&ro, 0o755),
        (&ro.join("kbench.db"), 0o644),
        (&bin, 0o755),
    ] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let out = common::as_nobody(&bin)
        .args([
            "--db",
            ro.join("kbench.db").to_str().unwrap(),
            "report",
            "1",
        ])
        .env_remove("KBENCH_DB")
        .env("HOME", &ro)
        .current_dir(&ro)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), own);
}
