//! Resource hygiene of `kbench run`, through the real binary: a command
//! printing 400 MB costs kbench a bounded amount of memory (its peak RSS,
//! read with wait4), and after a run, finished or interrupted with Ctrl-C,
//! no process of it is left, no temporary directory or file, and no
//! descriptor of kbench's leaks into the commands it runs.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A unique value in the environment of every process a test's commands
/// start, so they can be found in /proc whatever their name.
fn marker(test: &str) -> String {
    format!("{test}-{}", std::process::id())
}

const MARK: &str = "KBENCH_HYGIENE_MARK";

/// Processes whose environment holds `MARK=marker`.
fn marked(marker: &str) -> Vec<String> {
    let want = format!("{MARK}={marker}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{name}: {}",
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            ));
        }
    }
    found
}

/// `kbench` with its store in `dir` and `TMPDIR` in `dir/tmp` (created
/// empty), stdout and stderr to files in `dir`.
fn kbench(dir: &Path, args: &[&str]) -> Command {
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let mut c = common::kbench_process(dir);
    c.args(args)
        .env("TMPDIR", dir.join("tmp"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("out")).unwrap())
        .stderr(std::fs::File::create(dir.join("err")).unwrap());
    c
}

/// Wait for `pid` with wait4: its exit status and its peak RSS in KiB
/// (the largest of kbench's own and of any process it waited for).
fn wait4(pid: u32) -> (std::process::ExitStatus, i64) {
    let mut status = 0;
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; pid is our child.
        let r = unsafe { libc::wait4(pid as i32, &mut status, 0, &mut ru) };
        if r == pid as i32 {
            break;
        }
        let e = std::io::Error::last_os_error();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "wait4: {e}");
    }
    (std::process::ExitStatus::from_raw(status), ru.ru_maxrss)
}

fn read(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn report(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(dir, "out"))
        .unwrap_or_else(|e| panic!("{e}: {}\nstderr: {}", read(dir, "out"), read(dir, "err")))
}

fn median(rep: &serde_json::Value, bench: &str, metric: &str) -> f64 {
    rep["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["bench"] == bench && c["metric"] == metric)
        .unwrap_or_else(|| panic!("no {bench}/{metric} in {rep:#}"))["median"]
        .as_f64()
        .unwrap()
}

/// a command printing 400 MB on stdout cost kbench 399 MB of
/// RSS, as the metric read the whole stream into memory. The regex and
/// JSON metrics now read it in bounded memory, and still find the value
/// at the very end of 400 MB (and on stderr).
#[test]
fn a_command_printing_400_mb_costs_kbench_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "loud"
samples = 1
[[bench]]
name = "lines"
shell = "yes 'a line of output, 0123456789' | head -c 400000000; echo 'result: 42'; yes 'noise on stderr' | head -c 100000000 >&2; echo 'warn: 3' >&2"
measure = ["real"]
metrics = [
  { name = "result", regex = "result: (\\d+)", unit = "things" },
  { name = "warnings", regex = "warn: (\\d+)", from = "stderr", unit = "things" },
]
[[bench]]
name = "json"
shell = "printf '{\"pad\": ['; yes '1,' | head -c 400000000; printf '0], \"v\": {\"w\": 7}}'"
measure = ["real"]
metrics = [{ name = "w", json = "/v/w", unit = "things" }]
"#,
    )
    .unwrap();
    #[allow(clippy::zombie_processes)] // reaped by wait4 below
    let child = kbench(d, &["run", "-q", "--json", "--warmup", "0"])
        .arg(&plan)
        .spawn()
        .unwrap();
    let (status, maxrss_kib) = wait4(child.id());
    assert!(status.success(), "stderr: {}", read(d, "err"));
    let rep = report(d);
    assert_eq!(median(&rep, "lines", "result"), 42.0);
    assert_eq!(median(&rep, "lines", "warnings"), 3.0);
    assert_eq!(median(&rep, "json", "w"), 7.0);
    // kbench itself is ~10 MiB; the reader's windows a few MiB more.
    eprintln!("peak RSS of kbench with 400 MB of output: {maxrss_kib} KiB");
    assert!(
        maxrss_kib > 1024 && maxrss_kib < 64 * 1024,
        "peak RSS {maxrss_kib} KiB"
    );
    // The captured output went with the cell's scratch directory.
    assert_eq!(entries(&d.join("tmp")), Vec::<String>::new());
}

/// A plan whose command benchmark lists its own open descriptors into
/// `dir/fds-N` and starts a background child, beside two micro
/// benchmarks (one with helper processes).
fn hygiene_plan(dir: &Path, marker: &str, command: &str) -> PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(
        &p,
        format!(
            r#"
name = "hygiene"
samples = 2
sample_time = 0.01
[[bench]]
use = "getppid"
[[bench]]
use = "pipe-bw"
params = {{ total = "64k", placement = "none" }}
[[bench]]
name = "cmd"
shell = "{command}"
env = {{ {MARK} = "{marker}" }}
measure = ["real"]
"#
        ),
    )
    .unwrap();
    p
}

/// Wait until nothing of `marker` runs (a killed group takes a moment to
/// be reaped by init), up to 5 s.
fn none_left(marker: &str) -> Vec<String> {
    let t0 = Instant::now();
    while !marked(marker).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    marked(marker)
}

#[test]
fn a_finished_run_leaves_no_process_temp_file_or_leaked_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = marker("done");
    // `ls` lists its own descriptors: 0-2 and the directory it reads.
    let plan = hygiene_plan(
        d,
        &m,
        &format!(
            "ls -l /proc/self/fd > {}/fds-$$; (sleep 60 &) ; setsid sleep 60 & exit 0",
            d.display()
        ),
    );
    let out = kbench(d, &["run", "-q", "--json", "--warmup", "0"])
        .arg(&plan)
        .status()
        .unwrap();
    assert!(out.success(), "stderr: {}", read(d, "err"));
    // One background sleep was in the command's process group, the other
    // left it (`setsid`).
    assert_eq!(none_left(&m), Vec::<String>::new(), "orphans");
    assert_eq!(entries(&d.join("tmp")), Vec::<String>::new(), "temp files");
    // Descriptors this test process itself passes to every child (those
    // its own parent left open) are not kbench's to close.
    let mine = Command::new("ls")
        .args(["-l", "/proc/self/fd"])
        .output()
        .unwrap();
    let inherited: Vec<String> = String::from_utf8_lossy(&mine.stdout)
        .lines()
        .filter_map(|l| Some(l.split_once(" -> ")?.0.rsplit(' ').next()?.to_string()))
        .filter(|fd| !["0", "1", "2"].contains(&fd.as_str()))
        .collect();
    let listings: Vec<String> = entries(d)
        .into_iter()
        .filter(|n| n.starts_with("fds-"))
        .collect();
    assert_eq!(listings.len(), 2, "one listing per sample: {listings:?}");
    for l in &listings {
        let text = read(d, l);
        let fds: Vec<(String, String)> = text
            .lines()
            .filter_map(|line| {
                let (left, target) = line.split_once(" -> ")?;
                Some((left.rsplit(' ').next()?.to_string(), target.to_string()))
            })
            .collect();
        assert!(fds.len() >= 3, "{text}");
        for (fd, target) in &fds {
            let own_dir = target.starts_with("/proc/") && target.ends_with("/fd");
            assert!(
                ["0", "1", "2"].contains(&fd.as_str()) || own_dir || inherited.contains(fd),
                "fd {fd} -> {target} leaked into the command:\n{text}"
            );
        }
    }
    // Beside the store: the store, its lock file, what the test wrote.
    let left: Vec<String> = entries(d)
        .into_iter()
        .filter(|n| !n.starts_with("fds-"))
        .collect();
    assert_eq!(
        left,
        [
            "err",
            "kbench.db",
            "kbench.db-kbench-locks",
            "out",
            "plan.toml",
            "tmp"
        ],
        "files beside the store"
    );
}

#[test]
fn an_interrupted_run_leaves_no_process_or_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = marker("int");
    let plan = hygiene_plan(d, &m, "sleep 60 & sleep 60; wait");
    let mut child = kbench(d, &["run", "-q", "--warmup", "0"])
        .arg(&plan)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while marked(&m).len() < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(marked(&m).len(), 3, "sh and two sleeps: {:?}", marked(&m));
    // The command's scratch directory exists while it runs, private: it
    // was 0755 with its captured stderr 0644.
    let scratch = entries(&d.join("tmp"));
    assert_eq!(scratch.len(), 1);
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let sdir = d.join("tmp").join(&scratch[0]);
    assert_eq!(mode(&sdir), 0o700, "{}", sdir.display());
    assert_eq!(mode(&sdir.join(".kbench-stderr")), 0o600);
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "stderr: {}", read(d, "err"));
    assert!(read(d, "err").contains("interrupted"), "{}", read(d, "err"));
    assert_eq!(none_left(&m), Vec::<String>::new(), "orphans");
    assert_eq!(entries(&d.join("tmp")), Vec::<String>::new(), "temp files");
    let db = rusqlite::Connection::open(common::db(d)).unwrap();
    let state: String = db
        .query_row("SELECT status FROM runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(state, "interrupted");
}

/// Issue: a child that calls `setsid` outlived kbench (exit, INT, TERM and
/// KILL alike), a `shell` factor's teardown never ran after Ctrl-C or
/// SIGTERM, and a SIGKILL left `/tmp/kbench-PID-N` behind. After each of
/// INT, TERM and KILL in the middle of a command's sample: no descendant
/// is left (the `setsid` one included), no scratch file, the store passes
/// `integrity_check`; after INT and TERM the teardown ran, after KILL it is
/// owed and `status` names it; the next run runs it first and completes
/// the campaign to exactly the planned counts.
#[test]
fn after_int_term_and_kill_no_descendant_or_scratch_is_left_and_teardowns_run_or_are_owed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = marker("signals");
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "signals"
samples = 4
sample_time = 0.01
warmup = 0
[factors]
mode = {{ apply = "shell", values = ["a", "b"], setup = "touch {d}/SETUP-{{value}}", teardown = "rm {d}/SETUP-{{value}}" }}
[[bench]]
use = "getppid"
[[bench]]
name = "cmd"
shell = "setsid sleep 60 & sleep 0.4"
env = {{ {MARK} = "{m}" }}
measure = ["real"]
"#,
            d = d.display()
        ),
    )
    .unwrap();
    let state = d.join("state");
    let setups = || -> Vec<String> {
        entries(d)
            .into_iter()
            .filter(|n| n.starts_with("SETUP-"))
            .collect()
    };
    for (sig, name) in [
        (libc::SIGINT, "INT"),
        (libc::SIGTERM, "TERM"),
        (libc::SIGKILL, "KILL"),
    ] {
        let mut child = kbench(d, &["run", "-q"])
            .arg(&plan)
            .env("XDG_STATE_HOME", &state)
            .spawn()
            .unwrap();
        // In a sample of the command, its `setsid` child running.
        let t0 = Instant::now();
        while !marked(&m).iter().any(|p| p.contains("sleep 60"))
            && t0.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(setups().len(), 1, "{name}: one group set up");
        // SAFETY: signalling the child we spawned.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        assert!(!status.success(), "{name}: {}", read(d, "err"));
        assert_eq!(none_left(&m), Vec::<String>::new(), "{name}: descendants");
        // The watchdog removes what a killed kbench leaves in TMPDIR.
        let t0 = Instant::now();
        while !entries(&d.join("tmp")).is_empty() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            entries(&d.join("tmp")),
            Vec::<String>::new(),
            "{name}: scratch"
        );
        let db = rusqlite::Connection::open(common::db(d)).unwrap();
        let ok: String = db
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok", "{name}");
        if sig == libc::SIGKILL {
            assert_eq!(setups().len(), 1, "KILL: the teardown could not run");
            let out = kbench(d, &["status"])
                .arg(&plan)
                .env("XDG_STATE_HOME", &state)
                .stderr(Stdio::piped())
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("kbench: owed: factor `mode` = `") && err.contains("teardown `rm "),
                "status names the owed teardown: {err}"
            );
        } else {
            assert_eq!(setups(), Vec::<String>::new(), "{name}: the teardown ran");
        }
    }
    // The next run pays what the killed one owed, then completes.
    let out = kbench(d, &["run", "-q"])
        .arg(&plan)
        .env("XDG_STATE_HOME", &state)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("running the teardown a killed run left"),
        "{err}"
    );
    assert_eq!(setups(), Vec::<String>::new());
    assert_eq!(none_left(&m), Vec::<String>::new());
    let db = rusqlite::Connection::open(common::db(d)).unwrap();
    common::sample_rows(&db);
    let mut q = db
        .prepare(
            "SELECT c.key, s.metric, COUNT(*) FROM samples s JOIN cells c ON c.id = s.cell_id
             GROUP BY c.key, s.metric",
        )
        .unwrap();
    let counts: Vec<(String, String, i64)> = q
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    // Four cells by their own metric (real, ns/op); getppid's counters
    // per operation beside them, each value as often.
    let own = counts.iter().filter(|c| c.1 == "real" || c.1 == "ns/op");
    assert_eq!(own.count(), 4, "{counts:?}");
    assert!(
        counts.iter().all(|c| c.2 == 4),
        "exactly 4 each: {counts:?}"
    );
}

/// Issue 46: without root, kill -9 of kbench left a `setsid` child running
/// (as root the commands' cgroup catches it; as `nobody` there is none, and
/// the watchdog only knew the process groups). Run as `nobody`, a command's
/// `setsid` grandchild is gone after kbench is killed with SIGKILL: the
/// watchdog finds it by the mark every command's environment carries.
#[test]
fn without_root_a_setsid_child_dies_with_a_killed_kbench() {
    if !common::can_become_nobody() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let m = marker("nonroot");
    // Everything `nobody` needs: the binary, the store's directory, TMPDIR.
    let bin = d.join("kbench");
    std::fs::copy(common::bin(), &bin).unwrap();
    std::fs::create_dir_all(d.join("tmp")).unwrap();
    for (p, mode) in [(d, 0o777), (&d.join("tmp"), 0o777), (&bin, 0o755)] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"nonroot\"\nsamples = 3\nwarmup = 0\n[[bench]]\nname = \"cmd\"\n\
             shell = \"setsid sleep 60 & sleep 0.4\"\nenv = {{ {MARK} = \"{m}\" }}\n\
             measure = [\"real\"]\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&plan, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut child = common::as_nobody(&bin)
        .args(["run", "-q"])
        .arg(&plan)
        .env("KBENCH_DB", common::db(d))
        .env("HOME", d)
        .env("XDG_STATE_HOME", d.join("state"))
        .env("XDG_CACHE_HOME", d.join("cache"))
        .env("TMPDIR", d.join("tmp"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(d.join("err")).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !marked(&m).iter().any(|p| p.contains("sleep 60")) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the command never ran: {}",
            read(d, "err")
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The escaped one runs as nobody, in no cgroup of kbench's.
    let escaped: Vec<String> = marked(&m)
        .into_iter()
        .filter(|p| p.contains("sleep 60"))
        .collect();
    assert!(!escaped.is_empty());
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    assert_eq!(
        none_left(&m),
        Vec::<String>::new(),
        "left after kill -9 of a kbench run as nobody"
    );
}
