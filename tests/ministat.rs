//! `kbench ministat` end to end: the real binary on golden cases, comparing
//! stdout, stderr and the exit status byte for byte.
//!
//! - `fixtures/ministat/examples/`: SPEC.md's examples, each with the
//!   expected output of FreeBSD main and of Debian 20150715 (both modes).
//! - `fixtures/ministat/debian/`: cases generated with Debian's ministat by
//!   `fixtures/ministat/gen.py` (checked with `--compat=2015`).

mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ministat")
}

struct Run {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Exit code, or minus the signal number that killed it.
    rc: i32,
}

fn kbench_ministat(cwd: &Path, compat: bool, args: &[String], stdin: &[u8]) -> Run {
    let mut cmd = Command::new(common::bin());
    cmd.arg("ministat");
    if compat {
        cmd.arg("--compat=2015");
    }
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("POSIXLY_CORRECT")
        .env_remove("COLUMNS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn kbench");
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        let _ = i.write_all(stdin);
    }
    let out = child.wait_with_output().expect("wait");
    let rc = match out.status.code() {
        Some(c) => c,
        None => -out.status.signal().unwrap_or(0),
    };
    Run {
        stdout: out.stdout,
        stderr: out.stderr,
        rc,
    }
}

/// Compare and describe the first difference.
fn diff(what: &str, got: &[u8], want: &[u8]) -> Option<String> {
    if got == want {
        return None;
    }
    let g = String::from_utf8_lossy(got);
    let w = String::from_utf8_lossy(want);
    for (i, (a, b)) in g.lines().zip(w.lines()).enumerate() {
        if a != b {
            return Some(format!(
                "{what} line {}:\n  got:  {a:?}\n  want: {b:?}",
                i + 1
            ));
        }
    }
    Some(format!(
        "{what}: lengths differ ({} vs {} bytes)\n--- got\n{g}--- want\n{w}",
        got.len(),
        want.len()
    ))
}

/// One line of an example's cmd.txt: args, mode, expected files.
struct ExampleRun {
    args: Vec<String>,
    debian: bool,
    stdout: String,
    stderr: Option<String>,
    rc: Option<String>,
}

fn parse_cmd(text: &str) -> Vec<ExampleRun> {
    let mut runs = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (cmd, note) = line.split_once('#').expect("cmd # note");
        let mut words = cmd.split_whitespace();
        assert_eq!(words.next(), Some("ministat"));
        let args: Vec<String> = words.map(String::from).collect();
        let (mode, files) = note.trim().split_once(':').expect("mode: files");
        let debian = match mode {
            "FreeBSD-main" => false,
            "Debian-20150715" => true,
            m => panic!("unknown mode {m}"),
        };
        let files = files.trim();
        let mut r = ExampleRun {
            args,
            debian,
            stdout: String::new(),
            stderr: None,
            rc: None,
        };
        if let Some(f) = files.strip_prefix("> ") {
            r.stdout = f.trim().to_string();
        } else {
            for part in files.split_whitespace() {
                let (k, v) = part.split_once('>').expect("key>file");
                match k {
                    "stdout" => r.stdout = v.to_string(),
                    "stderr" => r.stderr = Some(v.to_string()),
                    "rc" => r.rc = Some(v.to_string()),
                    _ => panic!("unknown {k}"),
                }
            }
        }
        runs.push(r);
    }
    runs
}

#[test]
fn spec_examples_both_modes() {
    let root = fixtures().join("examples");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 7, "examples missing");
    let mut failures = Vec::new();
    let mut checked = 0;
    for dir in dirs {
        let cmd = std::fs::read_to_string(dir.join("cmd.txt")).unwrap();
        for r in parse_cmd(&cmd) {
            let got = kbench_ministat(&dir, r.debian, &r.args, b"");
            let name = format!(
                "{} {} {:?}",
                dir.file_name().unwrap().to_string_lossy(),
                if r.debian { "debian" } else { "freebsd" },
                r.args
            );
            let want_out = std::fs::read(dir.join(&r.stdout)).unwrap();
            let want_err = r
                .stderr
                .map(|f| std::fs::read(dir.join(f)).unwrap())
                .unwrap_or_default();
            let want_rc: i32 = r.rc.map_or(0, |f| {
                std::fs::read_to_string(dir.join(f))
                    .unwrap()
                    .trim()
                    .parse()
                    .unwrap()
            });
            for d in [
                diff("stdout", &got.stdout, &want_out),
                diff("stderr", &got.stderr, &want_err),
                (got.rc != want_rc).then(|| format!("rc {} want {}", got.rc, want_rc)),
            ]
            .into_iter()
            .flatten()
            {
                failures.push(format!("{name}: {d}"));
            }
            checked += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} runs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn debian_golden_cases() {
    let root = fixtures().join("debian");
    let data = root.join("data");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root.join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    cases.sort();
    assert!(cases.len() >= 100, "generated cases missing");
    let latin1 = |s: &str| s.chars().map(|c| c as u32 as u8).collect::<Vec<u8>>();
    let mut failures = Vec::new();
    for case in &cases {
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case).unwrap()).unwrap();
        let args: Vec<String> = doc["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        let stdin = match doc["stdin"].as_str() {
            Some(f) => std::fs::read(data.join(f)).unwrap(),
            None => Vec::new(),
        };
        let got = kbench_ministat(&data, true, &args, &stdin);
        let want_rc = doc["rc"].as_i64().unwrap() as i32;
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        for d in [
            diff(
                "stdout",
                &got.stdout,
                &latin1(doc["stdout"].as_str().unwrap()),
            ),
            diff(
                "stderr",
                &got.stderr,
                &latin1(doc["stderr"].as_str().unwrap()),
            ),
            (got.rc != want_rc).then(|| format!("rc {} want {}", got.rc, want_rc)),
        ]
        .into_iter()
        .flatten()
        {
            failures.push(format!("{name}: {d}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// FreeBSD main reads all operands before printing and names `-` as typed;
/// Debian calls it `<stdin>`. Unopenable files: rc 2 versus 1.
#[test]
fn freebsd_mode_specifics() {
    let dir = fixtures().join("examples/case03");
    let x = "x.txt".to_string();
    let stdin = std::fs::read(dir.join("y.txt")).unwrap();
    let r = kbench_ministat(&dir, false, &["-n".into(), "-".into(), x.clone()], &stdin);
    assert_eq!(r.rc, 0);
    assert!(String::from_utf8_lossy(&r.stdout).starts_with("x -\n+ x.txt\n"));
    let r = kbench_ministat(&dir, true, &["-n".into(), "-".into(), x.clone()], &stdin);
    assert!(String::from_utf8_lossy(&r.stdout).starts_with("x <stdin>\n+ x.txt\n"));
    let r = kbench_ministat(&dir, false, &["err.txt".into(), "nope".into()], b"");
    assert_eq!(r.rc, 2);
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        "ministat: Cannot open err.txt: No such file or directory\n"
    );
    // BSD getopt stops at the first operand: "-n" is a file name here.
    let r = kbench_ministat(&dir, false, &[x.clone(), "-n".into()], b"");
    assert_eq!(r.rc, 2);
    assert_eq!(
        String::from_utf8_lossy(&r.stderr),
        "ministat: Cannot open -n: No such file or directory\n"
    );
    let r = kbench_ministat(&dir, false, &["-Z".into()], b"");
    assert_eq!(r.rc, 2);
    assert!(
        String::from_utf8_lossy(&r.stderr)
            .starts_with("ministat: illegal option -- Z\nUnknown option\n")
    );
    // -q keeps the plot and the comparison, drops names and header.
    let r = kbench_ministat(
        &dir,
        false,
        &["-q".into(), "-n".into(), x.clone(), x.clone()],
        b"",
    );
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        "x   5       1394.45       1407.08       1398.99      1400.916     5.5563774\n\
         +   5       1394.45       1407.08       1398.99      1400.916     5.5563774\n"
    );
}

/// Run `script` under `sh` with the address space capped at `kib`.
fn limited(kib: u64, script: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib}; {script}"))
        .env("KBENCH", common::bin())
        .output()
        .unwrap()
}

/// reading endless or huge input under a memory limit. ministat
/// itself reads /dev/zero forever (no line holds data); kbench does too,
/// in bounded memory, instead of aborting on an allocation failure. Too many
/// points for the memory there is is one line and exit 2.
#[test]
fn endless_and_huge_inputs_under_a_memory_limit() {
    let out = limited(300_000, "timeout 2 \"$KBENCH\" ministat /dev/zero");
    assert_eq!(
        out.status.code(),
        Some(124),
        "still reading when the timeout came: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty());
    // 50 million points need 400 MB; the cap is 300 MB.
    let out = limited(300_000, "yes 1 | head -c 100000000 | \"$KBENCH\" ministat");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty());
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("ministat: out of memory after ") && err.contains("data points in <stdin>"),
        "{err}"
    );
}
