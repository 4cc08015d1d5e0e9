//! Command benchmarks end to end: the real binary runs plans with
//! `command`/`shell` benches against a throw-away store, and the tests
//! check what a user relies on: rusage metrics that make physical sense,
//! custom metrics stored with their units, failures recorded with their
//! cause, timeouts that leave no process behind, one-line errors for bad
//! plans.

mod common;

use common::kbench;
use serde_json::Value;
use std::path::Path;

fn write_plan(dir: &Path, text: &str) -> std::path::PathBuf {
    let p = dir.join("plan.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Run a plan with `--json` and return the report.
fn run_json(dir: &Path, text: &str, extra: &[&str]) -> Value {
    let p = write_plan(dir, text);
    let out = kbench(dir)
        .args(["run", "-q", "--json", "--warmup", "0"])
        .args(extra)
        .arg(&p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn cell<'a>(rep: &'a Value, bench: &str, metric: &str) -> &'a Value {
    rep["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["bench"] == bench && c["metric"] == metric)
        .unwrap_or_else(|| panic!("no cell {bench}/{metric} in {rep:#}"))
}

fn median(rep: &Value, bench: &str, metric: &str) -> f64 {
    cell(rep, bench, metric)["median"].as_f64().unwrap()
}

#[test]
fn sleep_is_wall_time_and_a_busy_loop_is_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run_json(
        dir.path(),
        r#"
name = "rusage"
samples = 3
[[bench]]
name = "sleep"
command = ["sh", "-c", "sleep 0.05"]
[[bench]]
name = "spin"
shell = "i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done"
"#,
        &[],
    );
    // Every built-in metric is a cells entry with its unit.
    for (m, unit) in [
        ("real", "s"),
        ("user", "s"),
        ("sys", "s"),
        ("maxrss", "KiB"),
        ("vcsw", "count"),
        ("ivcsw", "count"),
    ] {
        let c = cell(&rep, "sleep", m);
        assert_eq!(c["unit"], unit);
        assert_eq!(c["n"], 3);
        for k in ["params", "min", "max", "mean", "stddev"] {
            assert!(!c[k].is_null(), "{m}: no {k}");
        }
    }
    let real = median(&rep, "sleep", "real");
    let cpu = median(&rep, "sleep", "user") + median(&rep, "sleep", "sys");
    assert!(real > 0.045 && real < 1.0, "sleep real {real}");
    assert!(cpu < real / 3.0, "sleep used {cpu} s of CPU in {real} s");
    assert!(median(&rep, "sleep", "maxrss") > 100.0);
    let sleep_share = cpu / real;

    let real = median(&rep, "spin", "real");
    let cpu = median(&rep, "spin", "user") + median(&rep, "spin", "sys");
    // A busy loop is CPU time: on a loaded 2-CPU machine it may get a
    // small share of a CPU (a tenth with ten other runnable tasks), but
    // always several times the share of a sleep.
    assert!(
        cpu > real * 0.1 && cpu / real > 3.0 * sleep_share,
        "spin used {cpu} s of CPU in {real} s (sleep: {sleep_share} of its time)"
    );
    assert!(
        cpu <= real * 1.1 + 0.01,
        "one thread cannot exceed real: {cpu} > {real}"
    );
}

#[test]
fn custom_metrics_are_stored_with_their_units() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run_json(
        dir.path(),
        r#"
name = "custom"
samples = 2
[[bench]]
name = "out"
shell = "echo 'matched 17 lines'; echo '{\"r\": {\"v\": 2.5}}' > {tmp}/j; head -c 12345 /dev/zero > {tmp}/out.bin; echo 'warn: 3 things' >&2"
measure = ["real"]
metrics = [
  { name = "matches", regex = "matched (\\d+) lines", unit = "lines", direction = "higher" },
  { name = "things", regex = "warn: (?P<value>\\d+)", from = "stderr", unit = "things" },
  { name = "size", file = "{tmp}/out.bin" },
  { name = "wall", timer = "real" },
]
[[bench]]
name = "json"
command = ["echo", "{\"result\": {\"mean\": 0.125}}"]
measure = []
metrics = [{ name = "mean", json = "/result/mean", unit = "s" }]
[[bench]]
name = "elf"
command = ["true"]
measure = []
metrics = [{ name = "code_size", elf = "/bin/true" }, { name = "dot_text", elf = "/bin/true", section = ".text" }]
"#,
        &[],
    );
    let c = cell(&rep, "out", "matches");
    assert_eq!(
        (c["unit"].as_str(), c["median"].as_f64()),
        (Some("lines"), Some(17.0))
    );
    assert_eq!(c["direction"], "higher");
    let c = cell(&rep, "out", "things");
    assert_eq!(
        (c["unit"].as_str(), c["median"].as_f64()),
        (Some("things"), Some(3.0))
    );
    let c = cell(&rep, "out", "size");
    assert_eq!(
        (c["unit"].as_str(), c["median"].as_f64()),
        (Some("bytes"), Some(12345.0))
    );
    let c = cell(&rep, "out", "wall");
    assert_eq!(c["unit"], "s");
    assert!(c["median"].as_f64().unwrap() > 0.0);
    assert_eq!(median(&rep, "json", "mean"), 0.125);
    let text = median(&rep, "elf", "code_size");
    let dot_text = median(&rep, "elf", "dot_text");
    assert!(dot_text > 0.0 && text > dot_text, "{text} {dot_text}");
    // Agrees with size(1) when binutils is installed.
    if let Ok(o) = std::process::Command::new("size").arg("/bin/true").output()
        && o.status.success()
    {
        let s = String::from_utf8_lossy(&o.stdout);
        let want: f64 = s
            .lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(text, want, "size(1) says {s}");
    }
}

#[test]
fn params_sweeps_and_env_factors_reach_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let rep = run_json(
        dir.path(),
        r#"
name = "subst"
samples = 1
[factors]
level = { apply = "env", var = "LEVEL", values = ["10", "20"] }
[[bench]]
name = "echo"
command = ["sh", "-c", "echo $(( {n} + {base} + $LEVEL ))", "{empty}"]
params = { base = 100, empty = "" }
sweep = { n = [1, 2] }
measure = []
metrics = [{ name = "v", regex = "(\\d+)", unit = "" }]
"#,
        &[],
    );
    let mut got: Vec<(String, String, f64)> = rep["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["factors"]["level"].as_str().unwrap().to_string(),
                c["params"]["n"].as_str().unwrap().to_string(),
                c["median"].as_f64().unwrap(),
            )
        })
        .collect();
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let want = [
        ("10", "1", 111.0),
        ("10", "2", 112.0),
        ("20", "1", 121.0),
        ("20", "2", 122.0),
    ];
    assert_eq!(got.len(), 4);
    for (g, w) in got.iter().zip(want) {
        assert_eq!((g.0.as_str(), g.1.as_str(), g.2), w);
    }
}

#[test]
fn shell_factors_wrap_their_cells_and_a_failing_setup_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let rep = run_json(
        dir.path(),
        &format!(
            r#"
name = "shellf"
samples = 2
[factors]
mode = {{ apply = "shell", values = ["x", "y"], setup = "echo {{value}} > {d}/mode", teardown = "rm {d}/mode" }}
[[bench]]
name = "read"
shell = "case $(cat {d}/mode) in x) echo 1;; y) echo 2;; esac"
measure = []
metrics = [{{ name = "v", regex = "(\\d)", unit = "" }}]
"#
        ),
        &[],
    );
    for c in rep["cells"].as_array().unwrap() {
        let want = if c["factors"]["mode"] == "x" {
            1.0
        } else {
            2.0
        };
        assert_eq!(c["median"].as_f64(), Some(want));
    }
    assert!(!dir.path().join("mode").exists(), "teardown ran");

    let p = write_plan(
        dir.path(),
        r#"
name = "badsetup"
[factors]
mode = { apply = "shell", values = ["x"], setup = "echo no such knob >&2; exit 4" }
[[bench]]
name = "t"
command = ["true"]
"#,
    );
    let out = kbench(dir.path())
        .args(["run", "-q"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("factor `mode` = `x`: setup `echo no such knob >&2; exit 4` failed")
            && err.contains("no such knob"),
        "{err}"
    );
}

#[test]
fn a_failing_sample_is_recorded_with_its_stderr_tail() {
    let dir = tempfile::tempdir().unwrap();
    let p = write_plan(
        dir.path(),
        r#"
name = "fails"
samples = 3
[[bench]]
name = "bad"
shell = "echo 'cc1: fatal error: x.c' >&2; exit 3"
[[bench]]
name = "flaky"
shell = "exit 1"
on_failure = "continue"
[[bench]]
name = "good"
command = ["true"]
"#,
    );
    let out = kbench(dir.path())
        .args(["run", "-q", "--json", "--warmup", "0"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fails = rep["failures"].as_array().unwrap();
    let bad: Vec<&Value> = fails
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains("cc1"))
        .collect();
    // `stop`: one failure ends the cell.
    assert_eq!(bad.len(), 1, "{fails:#?}");
    assert!(
        bad[0]["message"]
            .as_str()
            .unwrap()
            .contains("exited with status 3")
    );
    // `continue`: every attempt is tried and recorded.
    let flaky = fails
        .iter()
        .filter(|f| f["message"].as_str().unwrap().contains("`sh -c 'exit 1'`"))
        .count();
    assert_eq!(flaky, 3, "{fails:#?}");
    assert_eq!(cell(&rep, "good", "real")["n"], 3);
}

fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        if let Ok(c) = std::fs::read(e.path().join("cmdline")) {
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            if c.contains(marker) {
                found.push(format!("{name}: {c}"));
            }
        }
    }
    found
}

#[test]
fn a_hanging_command_is_killed_at_its_timeout_with_its_children() {
    let dir = tempfile::tempdir().unwrap();
    // A unique sleep length marks our processes in /proc.
    let marker = format!("31.{}", std::process::id());
    let p = write_plan(
        dir.path(),
        &format!(
            r#"
name = "hang"
samples = 1
[[bench]]
name = "hang"
shell = "sleep {marker} & (sleep {marker}; true) & sleep {marker}; wait"
timeout = 0.5
"#
        ),
    );
    let t0 = std::time::Instant::now();
    let out = kbench(dir.path())
        .args(["run", "-q", "--json", "--warmup", "0"])
        .arg(&p)
        .output()
        .unwrap();
    assert!(t0.elapsed().as_secs_f64() < 10.0);
    assert_eq!(out.status.code(), Some(1));
    let rep: Value = serde_json::from_slice(&out.stdout).unwrap();
    let msg = rep["failures"][0]["message"].as_str().unwrap();
    assert!(msg.contains("timed out after 0.5 s"), "{msg}");
    let left = processes_with(&marker);
    assert!(left.is_empty(), "orphans: {left:?}");
}

/// `kbench run PLAN` in the background (stderr piped), returned once at
/// least `procs` processes of its command (marked by `marker`) exist.
fn run_until_started(dir: &Path, plan: &Path, marker: &str, procs: usize) -> std::process::Child {
    let child = common::kbench_process(dir)
        .args(["run", "-q", "--warmup", "0"])
        .arg(plan)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while processes_with(marker).len() < procs && t0.elapsed().as_secs() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        processes_with(marker).len() >= procs,
        "the command never started"
    );
    child
}

#[test]
fn ctrl_c_kills_a_running_command_and_keeps_what_was_measured() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("32.{}", std::process::id());
    let p = write_plan(
        dir.path(),
        &format!(
            r#"
name = "interrupt"
samples = 1
[[bench]]
name = "long"
shell = "sleep {marker} & sleep {marker}; wait"
"#
        ),
    );
    // Once the command runs, interrupt kbench alone.
    let mut child = run_until_started(dir.path(), &p, &marker, 2);
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(t1.elapsed().as_secs_f64() < 5.0);
    assert_eq!(status.code(), Some(1));
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("interrupted"), "{err}");
    let left = processes_with(&marker);
    assert!(left.is_empty(), "orphans: {left:?}");
}

/// `kill -9` of kbench used to leave the command's process tree
/// running. A watchdog now kills it, and exits itself.
#[test]
fn sigkill_of_kbench_kills_the_command_and_its_children() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("33.{}", std::process::id());
    let p = write_plan(
        dir.path(),
        &format!(
            r#"
name = "killed"
samples = 1
[[bench]]
name = "long"
shell = "sleep {marker} & (sleep {marker}; true) & sleep {marker}; wait"
"#
        ),
    );
    // sh, its subshell and three sleeps.
    let mut child = run_until_started(dir.path(), &p, &marker, 5);
    assert_eq!(processes_with(&marker).len(), 5);
    // kbench's own watchdog (other tests run theirs at the same time).
    let parent_of = |pid: &str| -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 2..];
        after.split(' ').nth(1).map(str::to_string)
    };
    let kb = child.id().to_string();
    let watchdog: Vec<String> = processes_with("kbench-watchdog")
        .into_iter()
        .map(|l| l.split(':').next().unwrap().to_string())
        .filter(|pid| parent_of(pid).as_deref() == Some(kb.as_str()))
        .collect();
    assert_eq!(watchdog.len(), 1, "one watchdog per kbench");
    child.kill().unwrap(); // SIGKILL, kbench alone
    child.wait().unwrap();
    let gone = || {
        processes_with(&marker).is_empty()
            && !std::path::Path::new(&format!("/proc/{}", watchdog[0])).exists()
    };
    let t1 = std::time::Instant::now();
    while !gone() && t1.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let left = processes_with(&marker);
    assert!(left.is_empty(), "orphans: {left:?}");
    assert!(gone(), "the watchdog stays");
}

fn one_line_error(dir: &Path, text: &str, want: &str) {
    let p = write_plan(dir, text);
    let out = kbench(dir).args(["run", "-q"]).arg(&p).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(want), "want `{want}` in {err}");
}

#[test]
fn bad_definitions_exit_2_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    one_line_error(
        d,
        "name = \"t\"\n[[bench]]\nname = \"c\"\ncommand = [\"cc\", \"{flags}\"]\n",
        "unknown placeholder `{flags}`",
    );
    one_line_error(
        d,
        "name = \"t\"\n[factors]\npti = { apply = \"system\", probe = \"vuln.\", values = [\"x\"] }\n[[bench]]\nuse = \"getppid\"\n",
        "probe `vuln.`",
    );
    one_line_error(
        d,
        "name = \"t\"\n[factors]\npti = { apply = \"system\", probe = \"nosuch.probe\", values = [\"x\"] }\n[[bench]]\nuse = \"getppid\"\n",
        "plan.toml:3:35: factor `pti`: unknown probe `nosuch.probe`",
    );
    one_line_error(
        d,
        "name = \"t\"\n[factors]\nc = { apply = \"cpus\", values = [\"0-99\"] }\n[[bench]]\nname = \"x\"\ncommand = [\"true\"]\n",
        "CPU 2 in `0-99` is not online",
    );
    one_line_error(
        d,
        "name = \"t\"\n[factors]\nv = { apply = \"env\", values = [\"1\"] }\n[[bench]]\nuse = \"getppid\"\n",
        "no command [[bench]]",
    );
    one_line_error(
        d,
        "name = \"t\"\n[[bench]]\nname = \"x\"\ncommand = [\"true\"]\nmetrics = [{ name = \"m\", regex = \"(\" , unit = \"u\"}]\n",
        "metric `m`: bad regex",
    );
    one_line_error(
        d,
        "name = \"t\"\n[[bench]]\nname = \"x\"\ncommand = [\"true\"]\nmetrics = [{ name = \"m\", regex = \"x\" }]\n",
        "`unit` is required",
    );
    one_line_error(
        d,
        "name = \"t\"\n[[bench]]\nname = \"x\"\ncommand = [\"true\"]\non_failure = \"retry\"\n",
        "`on_failure` must be",
    );
}

/// The statuses of the store's runs, oldest first.
fn statuses(dir: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(common::db(dir)).unwrap();
    let mut q = c.prepare("SELECT status FROM runs ORDER BY id").unwrap();
    q.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// Issue: failures that read as success. A run whose every sample failed
/// (`on_failure = "continue"`) exited 0 as `done` with a report showing
/// neither a table nor the failures; a metric reading `NaN` went on
/// despite `on_failure = "stop"`; `run --events jsonl | head -2` exited 0
/// silently and left the run `failed`.
#[test]
fn failures_never_read_as_success() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = write_plan(
        d,
        r#"
name = "allfail"
samples = 3
warmup = 0
[[bench]]
name = "cmd"
shell = "echo oops >&2; exit 3"
on_failure = "continue"
"#,
    );
    let out = kbench(d).args(["run", "-q"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("failed samples: 3, in 1 cell(s):")
            && text.contains("cmd: 3 failed; last: command `sh -c 'echo oops"),
        "{text}"
    );
    assert!(
        text.lines()
            .filter(|l| l.contains("failed"))
            .all(|l| l.chars().count() <= 80),
        "{text}"
    );
    assert_eq!(statuses(d), ["failed"]);

    let p = write_plan(
        d,
        r#"
name = "nan"
samples = 3
warmup = 0
[[bench]]
name = "cmd"
shell = "echo v=nan"
metrics = [{ name = "v", regex = "v=(\\S+)", unit = "x" }]
on_failure = "stop"
"#,
    );
    let out = kbench(d).args(["run", "-q"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let c = rusqlite::Connection::open(common::db(d)).unwrap();
    let (n, msg): (i64, String) = c
        .query_row(
            "SELECT COUNT(*), MAX(message) FROM failures WHERE run_id = 2",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(n, 1, "stopped at the first NaN");
    assert!(msg.contains("`nan` is not a finite number"), "{msg}");

    // A reader that leaves after two lines.
    let mut child = common::kbench_process(d)
        .args([
            "run",
            "getuid",
            "--samples",
            "50",
            "--sample-time",
            "0.02",
            "--events",
            "jsonl",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        lines.next().unwrap().unwrap();
        lines.next().unwrap().unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("standard output was closed"), "{err}");
    assert_eq!(statuses(d).last().map(String::as_str), Some("interrupted"));
}

/// Issue: terminal control from data. A command's stderr (ESC `]0;...`
/// BEL retitles the window, NUL, a carriage return) and an imported
/// command's name reached the terminal raw in failure lines, reports and
/// error messages; they are shown escaped, and the data is kept as it was.
#[test]
fn control_characters_from_data_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let raw = |b: &[u8]| {
        b.iter()
            .any(|&c| c == 0x1b || c == 0x07 || c == 0 || c == b'\r')
    };
    let p = write_plan(
        d,
        r#"
name = "ctl"
samples = 2
warmup = 0
[[bench]]
name = "cmd"
shell = '''printf 'x\033]0;pwned\007y\000z\rw' >&2; exit 3'''
on_failure = "continue"
"#,
    );
    let out = kbench(d).args(["run", "-q"]).arg(&p).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let (o, e) = (&out.stdout, &out.stderr);
    assert!(!raw(o) && !raw(e), "{o:?}\n{e:?}");
    let err = String::from_utf8_lossy(e);
    assert!(err.contains("x\\x1b]0;pwned\\x07y"), "{err}");
    let out = kbench(d)
        .args(["report", "--format", "markdown"])
        .output()
        .unwrap();
    assert!(!raw(&out.stdout), "{:?}", out.stdout);

    std::fs::write(
        d.join("h.json"),
        r#"{"results": [{"command": "sleep\u001b]0;pwned\u0007 1", "times": [1.0, 1.1, 1.2]}]}"#,
    )
    .unwrap();
    kbench(d)
        .args(["import", "--from", "hyperfine", "--name", "imp"])
        .arg(d.join("h.json"))
        .assert()
        .success();
    let out = kbench(d).args(["report", "imp"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!raw(&out.stdout), "{text}");
    assert!(text.contains("sleep\\x1b]0;pwned\\x07 1"), "{text}");
    // Stored as it came: escaping is for the terminal only.
    let c = rusqlite::Connection::open(common::db(d)).unwrap();
    let n: i64 = c
        .query_row(
            "SELECT COUNT(*) FROM failures WHERE instr(message, char(27)) > 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 2);
}
