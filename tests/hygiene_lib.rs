//! Resource hygiene inside one process: `kbench run` called as a library
//! function (the binary's own `dispatch`), again and again, leaves the
//! process's descriptor table and thread list as it found them. The first
//! run starts the one watchdog process kbench keeps for its lifetime (and
//! the pipe to it); every run after that must add nothing.
//!
//! One test in this binary, so no other test's threads or files are
//! counted.

use std::path::Path;

fn fds() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .flatten()
        .map(|e| {
            let t = std::fs::read_link(e.path()).unwrap_or_default();
            format!("{} -> {}", e.file_name().to_string_lossy(), t.display())
        })
        .collect();
    v.sort();
    v
}

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn children() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        if stat[close + 2..].split(' ').nth(1) == Some(me.as_str()) {
            v.push(stat[..close + 1].to_string());
        }
    }
    v.sort();
    v
}

fn run(dir: &Path, plan: &Path, extra: &[&str]) -> u8 {
    let mut args: Vec<std::ffi::OsString> = vec!["kbench".into(), "--db".into()];
    args.push(dir.join("k.db").into());
    args.extend(["run", "-q", "--json", "--warmup", "0"].map(Into::into));
    args.extend(extra.iter().map(Into::into));
    args.push(plan.into());
    let code = kbench::test_support::dispatch(args).expect("the run works");
    // ExitCode has no accessor; its Debug shows the number.
    let s = format!("{code:?}");
    s.chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

#[test]
fn repeated_library_runs_leak_no_descriptor_thread_process_or_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // SAFETY: the only test of this binary; no other thread reads the
    // environment yet.
    unsafe { std::env::set_var("TMPDIR", &tmp) };
    let plan = d.join("plan.toml");
    std::fs::write(
        &plan,
        r#"
name = "hygiene"
samples = 2
sample_time = 0.01
[[bench]]
use = "getppid"
[[bench]]
use = "pipe-bw"
params = { total = "64k", placement = "none" }
[[bench]]
name = "cmd"
shell = "(sleep 60 &); echo v=1"
measure = ["real"]
metrics = [{ name = "v", regex = "v=(\\d)", unit = "x" }]
"#,
    )
    .unwrap();
    assert_eq!(run(d, &plan, &[]), 0);
    let (fds0, threads0, children0) = (fds(), threads(), children());
    // The watchdog is the one child kept.
    assert!(children0.len() <= 1, "{children0:?}");
    for i in 0..3 {
        // --force starts the campaign again: every cell runs each time.
        assert_eq!(run(d, &plan, &["--force"]), 0, "run {i}");
        assert_eq!(fds(), fds0, "descriptors after run {i}");
        assert_eq!(threads(), threads0, "threads after run {i}");
        assert_eq!(children(), children0, "child processes after run {i}");
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(left.is_empty(), "temp files after run {i}: {left:?}");
    }
}
