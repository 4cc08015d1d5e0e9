//! Hardening, third round (issue 46), on the real binary: a plan's cells
//! are bounded before any is built; every file kbench reads whole has a
//! bound and must be a regular file; a size metric on a FIFO or a device
//! fails its sample at once; names are bounded; secrets planted in every
//! place they can come from reach no output and no table of the store;
//! odd paths and full disks are one line naming the thing and the remedy.
//! The cases that once ran out of memory run under an address-space cap
//! of the test's own (`ulimit -v` in a `sh -c` wrapper), so they fail the
//! same way on a machine of any size.

mod common;

use common::{bin, db, kbench, kbench_process};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The address-space cap, in KiB, of a capped kbench: 2 GiB, a tenth of
/// this machine's memory and far below what the old failures reached
/// (24 GB for `elf = "/dev/zero"`, 10^12 cells).
const CAP_KIB: u64 = 2 << 20;

/// `kbench ARGS` in `dir` under [`CAP_KIB`], its output.
fn capped(dir: &Path, args: &[&str]) -> Output {
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(format!("ulimit -v {CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(bin())
        .args(args)
        .current_dir(dir)
        .env("KBENCH_DB", db(dir))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("NO_COLOR", "1");
    run_for(c, Duration::from_secs(120))
}

/// Run `c`, killing it if it is not done in `limit` (a hang fails the
/// test instead of the suite).
fn run_for(mut c: Command, limit: Duration) -> Output {
    let child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    let watchdog = std::thread::spawn(move || {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if flag.load(std::sync::atomic::Ordering::SeqCst) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: our child, still unreaped (the flag is not set).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        true
    });
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(!watchdog.join().unwrap(), "hung for {limit:?}: killed");
    out
}

/// The one line of stderr (warnings about the machine aside, with their
/// indented continuation lines), checked: the exit code, no panic, and
/// `needle` in it.
fn one_line(out: &Output, code: i32, needle: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let mut warning = false;
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| {
            warning = l.starts_with("kbench: warning:") || (warning && l.starts_with("  "));
            !warning
        })
        .collect();
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(lines.len(), 1, "want one line: {err}");
    assert!(lines[0].contains(needle), "want `{needle}` in: {err}");
    lines[0].to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

/// A FIFO at `dir/name` that nobody writes.
fn fifo(dir: &Path, name: &str) -> String {
    let c = std::ffi::CString::new(dir.join(name).to_str().unwrap()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    name.to_string()
}

/// A sparse file of `len` bytes (no disk used).
fn sparse(dir: &Path, name: &str, len: u64) -> String {
    let f = std::fs::File::create(dir.join(name)).unwrap();
    f.set_len(len).unwrap();
    name.to_string()
}

/// `n` env factors of `each` values each, over one command.
fn factors_plan(n: usize, each: usize) -> String {
    let mut t = String::from("name = \"big\"\n[factors]\n");
    let values: Vec<String> = (0..each).map(|i| i.to_string()).collect();
    for f in 0..n {
        t += &format!(
            "f{f} = {{ apply = \"env\", var = \"V{f}\", values = [{}] }}\n",
            values.join(", ")
        );
    }
    t + "[[bench]]\nname = \"c\"\ncommand = [\"true\"]\n"
}

// --- 1. plan cell limits ----------------------------------------------------

/// Four env factors of 1,000 values (10^12 cells) and a sweep of
/// 2000 x 2000 x 2000 once allocated until memory ran out, `--dry-run`
/// too; now each is one line with the count and the limit, under the cap.
#[test]
fn a_plan_of_too_many_cells_is_refused_before_any_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = write(d, "f.toml", &factors_plan(4, 1000));
    for args in [
        vec!["run", "--dry-run", p.as_str()],
        vec!["run", p.as_str()],
        vec!["status", p.as_str()],
    ] {
        one_line(
            &capped(d, &args),
            2,
            "f.toml: the plan expands to 1000000000000 cells, over the limit of 100000 \
             (use fewer factor values or sweep points, or set `max_cells` in the plan)",
        );
    }
    let points: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let points = points.join(", ");
    let sweep = write(
        d,
        "s.toml",
        &format!(
            "name = \"s\"\n[[bench]]\nname = \"c\"\nshell = \"echo {{a}}{{b}}{{c}}\"\n\
             sweep = {{ a = [{points}], b = [{points}], c = [{points}] }}\n"
        ),
    );
    one_line(
        &capped(d, &["run", "--dry-run", &sweep]),
        2,
        "s.toml: the plan expands to 8000000000 cells, over the limit of 100000",
    );
    // Past u64: counted without overflow.
    let huge = write(d, "h.toml", &factors_plan(20, 10));
    one_line(
        &capped(d, &["run", "--dry-run", &huge]),
        2,
        "h.toml: the plan expands to more than 18446744073709551614 cells",
    );
    // `max_cells` moves the bound both ways.
    let six = factors_plan(1, 6);
    let low = write(d, "low.toml", &format!("max_cells = 5\n{six}"));
    one_line(
        &capped(d, &["run", "--dry-run", &low]),
        2,
        "low.toml: the plan expands to 6 cells, over the limit of 5 (raise `max_cells`",
    );
    let ok = write(d, "ok.toml", &format!("max_cells = 6\n{six}"));
    let out = capped(d, &["run", "--dry-run", &ok]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let zero = write(d, "z.toml", &format!("max_cells = 0\n{six}"));
    one_line(
        &capped(d, &["run", "--dry-run", &zero]),
        2,
        "z.toml:1:13: `max_cells` must be at least 1, found 0",
    );
    assert!(!db(d).exists(), "a refused plan made a store");
}

// --- 2. bounded inputs, regular files only ----------------------------------

/// Every file kbench reads whole: a device, a FIFO with no writer, a
/// directory and a 3 GB sparse file, each refused at once in one line
/// saying what it is, under the cap.
#[test]
fn files_read_whole_are_regular_and_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = write(d, "p.toml", "name = \"p\"\n[[bench]]\nuse = \"getuid\"\n");
    let pipe = fifo(d, "pipe.toml");
    let big = sparse(d, "big.toml", 3 << 30);
    let bigtxt = sparse(d, "big.txt", 3 << 30);
    std::fs::create_dir(d.join("dir.toml")).unwrap();
    let dev = "/dev/zero";
    for (args, needle) in [
        (
            vec!["status", dev],
            "/dev/zero: a character device, not a regular file; a plan must be a file",
        ),
        (
            vec!["status", &pipe],
            "pipe.toml: a FIFO, not a regular file; a plan must be a file",
        ),
        (
            vec!["run", "--dry-run", "dir.toml"],
            "dir.toml: a directory, not a regular file; a plan must be a file",
        ),
        (
            vec!["status", &big],
            "big.toml: 3 GiB (3221225472 bytes), over the 16 MiB a plan may have",
        ),
        (
            vec!["fleet", "run", &plan, "--hosts", dev],
            "/dev/zero: a character device, not a regular file; a hosts file must be a file",
        ),
        (
            vec!["fleet", "status", &plan, "--hosts", &big],
            "big.toml: 3 GiB (3221225472 bytes), over the 16 MiB a hosts file may have",
        ),
        (
            vec!["import", "--from", "ministat", dev],
            "/dev/zero: a character device, not a regular file; an imported file must be a file",
        ),
        (
            vec!["import", "--from", "hyperfine", &pipe],
            "pipe.toml: a FIFO, not a regular file; an imported file must be a file",
        ),
        (
            vec!["import", "--from", "will-it-scale", &bigtxt],
            "big.txt: 3 GiB (3221225472 bytes), over the 256 MiB an imported file may have",
        ),
        (
            vec!["import", "--from", "ministat", &bigtxt],
            "over the 256 MiB an imported file may have",
        ),
        (
            vec!["run", dev],
            "`/dev/zero`: `/dev/zero` is a device, not a program",
        ),
    ] {
        let t0 = Instant::now();
        let out = capped(d, &args);
        one_line(&out, 2, needle);
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "{args:?} took {:?}",
            t0.elapsed()
        );
    }
    assert!(!db(d).exists(), "a refused input made a store");
}

/// Names are bounded and never printed raw: a 10 MB campaign name once
/// made `kbench runs` print a 10 MB table.
#[test]
fn names_and_labels_are_bounded_and_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = "n".repeat(10_000_000);
    let p = write(
        d,
        "p.toml",
        &format!("name = \"{long}\"\n[[bench]]\nuse = \"getuid\"\n"),
    );
    let line = one_line(
        &capped(d, &["run", "--dry-run", &p]),
        2,
        "campaign name `nnn",
    );
    assert!(
        line.contains("is 10000000 characters long, over the 200 a name may have"),
        "{line}"
    );
    assert!(
        line.len() < 300,
        "the name is printed whole: {} bytes",
        line.len()
    );
    let m = write(d, "m.txt", "1\n2\n");
    let name = "x".repeat(201);
    one_line(
        &capped(d, &["import", "--from", "ministat", "--name", &name, &m]),
        2,
        "--name: campaign name `xxx",
    );
    one_line(
        &capped(
            d,
            &[
                "run",
                "getuid",
                "--label",
                &format!("{}=v", "k".repeat(300)),
            ],
        ),
        2,
        "use 1 to 200 letters, digits",
    );
    let long_host = format!("name = \"{}\"\nssh = \"u@h\"", "h".repeat(300));
    let cases = [
        (long_host.as_str(), "h.toml: host #1: host name `hhh"),
        (
            "name = \"a\\nb\"\nssh = \"u@h\"",
            "h.toml: host #1: host name `a\\nb` holds control characters",
        ),
        (
            "name = \"a\"\nssh = \"u@h\\u001b[2J\"",
            "is not a destination",
        ),
        (
            "name = \"a\"\nssh = \"u@h\"\nlabels = { rack = \"r\\n1\" }",
            "h.toml: host `a`: label `rack`: the value must be 1 to 200 printable characters",
        ),
    ];
    for (host, needle) in cases {
        let h = write(d, "h.toml", &format!("[[host]]\n{host}\n"));
        let out = capped(d, &["fleet", "status", &p, "--hosts", &h]);
        let line = one_line(&out, 2, needle);
        assert!(!line.contains('\x1b'), "{line}");
    }
    assert!(!db(d).exists(), "a refused name made a store");
}

// --- 3. a size metric on a FIFO or a device ----------------------------------

/// An `elf` metric on a FIFO once hung kbench (and one SIGTERM did not
/// stop it); on `/dev/zero` it grew kbench to 24 GB. Each sample now
/// fails at once naming what the path is, under the cap; one SIGTERM
/// stops a run in a command's wait.
#[test]
fn a_size_metric_on_a_fifo_or_a_device_fails_its_sample_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pipe = fifo(d, "pipe");
    // Each path as the first metric of its own bench, so each is read.
    let bench = |name: &str, metric: &str| {
        format!(
            "[[bench]]\nname = \"{name}\"\ncommand = [\"true\"]\non_failure = \"continue\"\n\
             sweep = {{ x = [1, 2] }}\nmetrics = [{{ name = \"m\", {metric} }}]\n"
        )
    };
    let plan = write(
        d,
        "p.toml",
        &format!(
            "name = \"p\"\nsamples = 2\nwarmup = 0\n{}{}{}",
            bench("fifo", &format!("elf = \"{{plan_dir}}/{pipe}\"")),
            bench("zero", "elf = \"/dev/zero\""),
            bench("size", "file = \"/dev/zero\""),
        ),
    );
    let t0 = Instant::now();
    let out = capped(d, &["run", &plan, "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    let c = common::sqlite(d);
    let failures: Vec<(String, String)> = c
        .prepare("SELECT c.bench, f.message FROM failures f JOIN cells c ON c.id = f.cell_id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // 3 benches x 2 cells x 2 samples, each failing at once.
    assert_eq!(failures.len(), 12, "{failures:?}");
    for (bench, f) in &failures {
        let what = match bench.as_str() {
            "fifo" => "pipe: a FIFO",
            _ => "/dev/zero: a character device",
        };
        assert!(
            f.contains(&format!(
                "{what}, not a regular file; a size metric reads a file"
            )),
            "{bench}: {f}"
        );
    }
    let status: String = c
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(status, "failed");

    // One SIGTERM while a command runs stops kbench promptly.
    let slow = write(
        d,
        "slow.toml",
        &format!(
            "name = \"slow\"\nsamples = 1\nwarmup = 0\n[[bench]]\nname = \"s\"\n\
             command = [\"sleep\", \"30\"]\nmetrics = [{{ name = \"fifo\", elf = \"{{plan_dir}}/{}\" }}]\n",
            fifo(d, "pipe2")
        ),
    );
    let mut child = kbench_process(d)
        .args(["run", &slow, "-q"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: our child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t0 = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            assert!(!st.success(), "{st:?}");
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "one SIGTERM did not stop kbench in 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

// --- 6. one redaction rule ----------------------------------------------------

/// The sentinel every planted secret holds.
const SENTINEL: &str = "S3NT1NEL";

const SECRET_PLAN: &str = r#"
name = "sentinel"
samples = 2
sample_time = 0.01
warmup = 0
[factors]
pg = { apply = "env", var = "PGPASSWORD", values = ["S3NT1NEL-pg-a", "S3NT1NEL-pg-b"] }
tok = { apply = "env", var = "GITHUB_TOKEN", values = ["S3NT1NEL-token"] }
[[bench]]
name = "psql"
command = ["sh", "-c", "true", "postgres://kb:S3NT1NEL-url@127.0.0.1:5/db?password=S3NT1NEL-q"]
env = { API_KEY = "S3NT1NEL-key" }
[[bench]]
name = "leaky"
shell = "echo $PGPASSWORD $GITHUB_TOKEN $API_KEY token=S3NT1NEL-out postgres://u:S3NT1NEL-out@h/db >&2; exit 3"
env = { API_KEY = "S3NT1NEL-key" }
on_failure = "continue"
"#;

/// Secrets planted in each place they come from (a store URL, a host
/// line, env factors `PGPASSWORD` and `*TOKEN*`, a command's environment,
/// a PostgreSQL URL in a plan's command and in a command given on the
/// command line, a command's stderr, a label): none reaches any output
/// format, any listing or any table of the store.
#[test]
fn secrets_reach_no_output_and_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = write(d, "p.toml", SECRET_PLAN);
    let hosts = write(
        d,
        "h.toml",
        "[[host]]\nname = \"a\"\nssh = \"ssh://bench:S3NT1NEL-host@192.0.2.1\"\n",
    );
    let mut outputs: Vec<(String, Output)> = Vec::new();
    let mut run = |args: &[&str]| {
        let out = kbench(d).current_dir(d).args(args).output().unwrap();
        outputs.push((args.join(" "), out));
    };
    run(&["run", &plan, "--label", "token=S3NT1NEL-label"]);
    run(&["run", &plan, "--force", "--json", "--events", "jsonl"]);
    run(&[
        "run",
        "sh -c 'echo postgres://u:S3NT1NEL-adhoc@h/db >&2'",
        "cmd:env PGPASSWORD=S3NT1NEL-adhoc2 true",
        "--samples",
        "2",
        "--sample-time",
        "0.01",
    ]);
    for f in ["text", "json", "markdown", "html", "csv"] {
        run(&["report", "sentinel", "--format", f]);
        run(&["report", "3", "--format", f]);
    }
    run(&["report", "sentinel", "--all-metrics"]);
    run(&["runs"]);
    run(&["runs", "--json"]);
    run(&["status", &plan]);
    run(&["status", &plan, "--json"]);
    run(&["compare", "sentinel:pg=***1", "sentinel:pg=***2"]);
    run(&["fleet", "status", &plan, "--hosts", &hosts]);
    run(&["fleet", "run", &plan, "--hosts", &hosts]);
    run(&["--db", "postgres://kb:S3NT1NEL-db@127.0.0.1:1/x", "runs"]);
    run(&[
        "runs",
        "--db=postgres://kb:S3NT1NEL-db2@127.0.0.1:1/x?sslmode=bogus",
    ]);
    // Each command did run (a missing store or an error would prove
    // nothing).
    let ran = |prefix: &str| {
        outputs
            .iter()
            .find(|(a, _)| a.starts_with(prefix))
            .map(|(_, o)| o)
            .unwrap()
    };
    assert_eq!(ran("run p.toml").status.code(), Some(1), "leaky fails");
    let report = String::from_utf8_lossy(&ran("report sentinel --format text").stdout).into_owned();
    assert!(
        report.contains("pg=***1") && report.contains("pg=***2"),
        "{report}"
    );
    let err = String::from_utf8_lossy(&ran("fleet status").stderr).into_owned();
    assert!(
        err.contains("ssh://bench:***@192.0.2.1` holds a password"),
        "{err}"
    );
    for (args, out) in &outputs {
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text.contains(SENTINEL),
                "`kbench {args}` shows a secret on {what}:\n{}",
                text.lines()
                    .filter(|l| l.contains(SENTINEL))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    }
    // Every table, every column, as text (a blob as its bytes).
    let c = rusqlite::Connection::open(db(d)).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert!(tables.len() >= 8, "{tables:?}");
    let mut rows = 0;
    for t in &tables {
        let mut st = c.prepare(&format!("SELECT * FROM \"{t}\"")).unwrap();
        let n = st.column_count();
        let mut q = st.query([]).unwrap();
        while let Some(r) = q.next().unwrap() {
            rows += 1;
            for i in 0..n {
                let v = match r.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => {
                        String::from_utf8_lossy(b).into_owned()
                    }
                    _ => continue,
                };
                assert!(!v.contains(SENTINEL), "table {t} holds a secret: {v}");
            }
        }
    }
    assert!(rows > 20, "only {rows} rows");
}

// --- 7. messages: full disks and odd paths -------------------------------------

/// `kbench run ... > /dev/full` said `No space left on device` without
/// naming stdout, and marked a run whose samples were all stored
/// `failed`.
#[test]
fn a_full_stdout_is_named_and_a_stored_run_stays_done() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = kbench_process(d)
        .args([
            "run",
            "getuid",
            "--samples",
            "2",
            "--sample-time",
            "0.005",
            "--warmup",
            "0",
        ])
        .stdout(full)
        .output()
        .unwrap();
    one_line(&out, 1, "stdout: No space left on device");
    let c = common::sqlite(d);
    let (status, n): (String, i64) = c
        .query_row(
            "SELECT status, (SELECT count(DISTINCT round) FROM samples) FROM runs",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((status.as_str(), n), ("done", 2));
}

/// With 0 bytes free `run` and `import` said `disk I/O error: Error code
/// 4874`; a full `TMPDIR` made every sample "exited with status 1" with
/// no hint. Both now name the disk and the remedy.
#[test]
fn a_full_disk_is_named_with_its_remedy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let Some(mnt) = common::Tmpfs::mount(&d.join("mnt"), "4m") else {
        return;
    };
    let store = mnt.0.join("kbench.db");
    let m = write(d, "m.txt", "1\n2\n3\n");
    // A store made while there was room, then the disk filled.
    kbench(d)
        .current_dir(d)
        .env("KBENCH_DB", &store)
        .args(["import", "--from", "ministat", &m])
        .assert()
        .success();
    mnt.fill();
    let m2 = write(d, "m2.txt", "4\n5\n6\n");
    for args in [
        vec!["import", "--from", "ministat", m2.as_str()],
        vec!["run", "getuid", "--samples", "2", "--sample-time", "0.005"],
    ] {
        let out = kbench(d)
            .current_dir(d)
            .env("KBENCH_DB", &store)
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("Error code"), "{args:?}: {err}");
        assert!(
            err.lines()
                .any(|l| l.contains("kbench.db: the disk is full") && l.contains("free space")),
            "{args:?}: {err}"
        );
    }
    // TMPDIR on the full disk, the store elsewhere.
    let plan = write(
        d,
        "p.toml",
        "name = \"t\"\nsamples = 1\nwarmup = 0\n[[bench]]\nname = \"c\"\n\
         shell = \"seq 100000\"\nmetrics = [{ name = \"n\", regex = \"(\\\\d+)\", unit = \"lines\" }]\n",
    );
    let out = kbench(d)
        .current_dir(d)
        .env("TMPDIR", &mnt.0)
        .args(["run", &plan, "-q"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let msg: String = common::sqlite(d)
        .query_row("SELECT message FROM failures", [], |r| r.get(0))
        .unwrap();
    assert!(
        msg.contains(&format!("TMPDIR {} is full", mnt.0.display()))
            && msg.contains("set TMPDIR to a directory with room"),
        "{msg}"
    );
}

/// A store this user may not read showed SQLite's internal
/// `file:...?immutable=1` URI; now the permission, as `nobody`.
#[test]
fn an_unreadable_store_names_the_permission() {
    // SAFETY: no arguments.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping: needs root to run a command as nobody");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = write(d, "m.txt", "1\n2\n");
    kbench(d)
        .current_dir(d)
        .args(["import", "--from", "ministat", &m])
        .assert()
        .success();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(db(d), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .arg("runs")
        .env("KBENCH_DB", db(d))
        .env("NO_COLOR", "1")
        .current_dir("/")
        .output()
        .unwrap();
    let line = one_line(
        &out,
        2,
        "kbench.db: cannot open the store: permission denied",
    );
    assert!(
        !line.contains("file:") && !line.contains("immutable"),
        "{line}"
    );
}
