//! `kbench completions` and `kbench man`: the scripts and pages generated
//! from the clap definitions are valid for their shell and for groff, and
//! name the commands they complete or document.

mod common;

use common::kbench;
use std::process::{Command, Stdio};

/// Every top-level command, as `kbench --help` lists it.
const COMMANDS: &[&str] = &[
    "run",
    "list",
    "sysinfo",
    "runs",
    "status",
    "report",
    "ingest",
    "import",
    "compare",
    "fleet",
    "store",
    "completions",
    "man",
    "ministat",
];

fn out(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let o = kbench(dir.path()).args(args).assert().success();
    String::from_utf8(o.get_output().stdout.clone()).unwrap()
}

fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// Run `tool args` with `input` on stdin; its status and stderr.
fn pipe(tool: &str, args: &[&str], input: &str) -> (bool, String) {
    use std::io::Write;
    let mut c = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn bash_completion_is_valid_bash_and_completes_the_commands() {
    let script = out(&["completions", "bash"]);
    let (ok, err) = pipe("bash", &["-n"], &script);
    assert!(ok, "bash -n rejects the script: {err}");
    for c in COMMANDS {
        assert!(script.contains(c), "bash completion lacks `{c}`");
    }
    // Options of a subcommand are completed too.
    assert!(script.contains("--baseline") && script.contains("--confidence"));

    // Loaded into bash, it completes `kbench rep` to `report` and
    // `kbench compare --te` to `--test`.
    let probe = format!(
        "{script}\n\
         COMP_WORDS=(kbench rep); COMP_CWORD=1; _kbench kbench rep kbench; \
         echo \"${{COMPREPLY[@]}}\"\n\
         COMP_WORDS=(kbench compare --te); COMP_CWORD=2; _kbench kbench --te compare; \
         echo \"${{COMPREPLY[@]}}\"\n"
    );
    let o = Command::new("bash")
        .args(["--norc", "-c", &probe])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(lines[0].split_whitespace().collect::<Vec<_>>(), ["report"]);
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["--test"]);
}

#[test]
fn zsh_and_fish_completions_name_kbench_and_its_commands() {
    let zsh = out(&["completions", "zsh"]);
    assert!(
        zsh.starts_with("#compdef kbench"),
        "{}",
        &zsh[..80.min(zsh.len())]
    );
    let fish = out(&["completions", "fish"]);
    assert!(fish.contains("complete -c kbench"));
    for c in ["report", "compare", "ministat"] {
        assert!(zsh.contains(c) && fish.contains(c), "`{c}` missing");
    }
    // Each shell parses its script when it is installed here.
    if have("zsh") {
        let (ok, err) = pipe("zsh", &["-n"], &zsh);
        assert!(ok, "zsh -n: {err}");
    } else {
        eprintln!("zsh not installed: zsh syntax not checked");
    }
    if have("fish") {
        let (ok, err) = pipe("fish", &["--no-execute"], &fish);
        assert!(ok, "fish --no-execute: {err}");
    } else {
        eprintln!("fish not installed: fish syntax not checked");
    }
}

#[test]
fn unknown_shell_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = kbench(dir.path())
        .args(["completions", "tcsh"])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("tcsh"), "{err}");
}

/// `groff -man -ww -z` on the page: its warnings (nothing is printed).
fn groff_warnings(page: &str) -> Option<String> {
    if !have("groff") {
        eprintln!("groff not installed: man page not rendered (apt-get install groff-base)");
        return None;
    }
    let (ok, err) = pipe("groff", &["-man", "-Tutf8", "-ww", "-z"], page);
    assert!(ok, "groff failed: {err}");
    Some(err)
}

#[test]
fn man_page_renders_cleanly_and_lists_every_command() {
    let page = out(&["man"]);
    assert!(
        page.contains(".TH kbench 1"),
        "{}",
        &page[..200.min(page.len())]
    );
    assert!(page.contains(env!("CARGO_PKG_VERSION")));
    assert!(page.contains("kbench \\- what does"), "NAME repeats kbench");
    for c in COMMANDS {
        assert!(
            page.contains(&format!("kbench\\-{c}(1)")),
            "page lacks `{c}`"
        );
    }
    // The help subcommand has no page to point to.
    assert!(!page.contains("kbench\\-help"));
    if let Some(w) = groff_warnings(&page) {
        assert!(w.is_empty(), "groff warns:\n{w}");
    }
}

#[test]
fn a_command_has_its_own_page() {
    for (args, title) in [
        (&["man", "report"][..], ".TH kbench-report 1"),
        (&["man", "fleet", "run"][..], ".TH kbench-fleet-run 1"),
    ] {
        let page = out(args);
        assert!(
            page.contains(title),
            "{args:?}: {}",
            &page[..200.min(page.len())]
        );
        if let Some(w) = groff_warnings(&page) {
            assert!(w.is_empty(), "{args:?}: groff warns:\n{w}");
        }
    }
    let report = out(&["man", "report"]);
    assert!(report.contains("baseline") && report.contains("unicode"));

    let dir = tempfile::tempdir().unwrap();
    let o = kbench(dir.path()).args(["man", "nosuch"]).assert().code(2);
    let err = String::from_utf8_lossy(&o.get_output().stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("`nosuch`"), "{err}");
}
