//! Campaigns end to end: a plan whose `system` factor matches this machine
//! for one value and not the other. The matching cells run, the others are
//! pending with what they need; re-running adds nothing; faking the probe
//! (a custom probe command reading a file the test changes) completes the
//! campaign; the campaign report shows each state's cells with their own
//! samples and readings.

mod common;

use common::{kbench, stdout};
use serde_json::Value;
use std::path::Path;

fn report(dir: &Path, what: &str) -> Value {
    serde_json::from_str(&stdout(kbench(dir).args(["report", what, "--json"]))).unwrap()
}

/// Samples per (cell factors, metric) in a campaign report.
fn counts(rep: &Value, metric: &str) -> Vec<(String, u64, String)> {
    let mut v: Vec<(String, u64, String)> = rep["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"] == metric)
        .map(|c| {
            (
                format!("{}:{}", c["bench"].as_str().unwrap(), c["factors"]),
                c["n"].as_u64().unwrap(),
                c["readings"].to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_campaign_spans_two_system_states() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let state = d.join("state");
    std::fs::write(&state, "on\n").unwrap();
    let plan = d.join("campaign.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "two-states"
samples = 3
warmup = 0

[factors]
mode = {{ apply = "system", probe = ["cat", "{}"], values = {{ on = "on", off = "off" }}, hint = {{ off = "boot with `nomode`" }} }}

[reboot]
command = "grub-reboot nomode && reboot"

[[bench]]
name = "true"
command = ["true"]
measure = ["real", "user"]

[[bench]]
use = "getppid"
"#,
            state.display()
        ),
    )
    .unwrap();
    let run = |d: &Path| {
        stdout(
            kbench(d)
                .args(["run", "-q", "--sample-time", "0.01"])
                .arg(&plan),
        )
    };

    run(d);
    let st = stdout(kbench(d).arg("status").arg(&plan));
    assert!(
        st.contains("4 cells: 2 done, 0 to run now, 2 pending"),
        "{st}"
    );
    let probe = format!("cmd:cat {}", state.display());
    assert!(
        st.contains(&format!("needs mode=off: boot with `nomode` ({probe}=off)")),
        "{st}"
    );
    assert!(st.contains(&format!("now: {probe} is `on`")), "{st}");
    assert!(
        st.contains("to arm the next boot: grub-reboot nomode && reboot"),
        "{st}"
    );

    // Nothing left for this state: no new run, no new samples.
    let before = counts(&report(d, "two-states"), "real");
    let out = kbench(d).args(["run", "-q"]).arg(&plan).output().unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("nothing to run here: 2 cell(s) done, 2 pending")
    );
    assert_eq!(counts(&report(d, "two-states"), "real"), before);
    assert_eq!(report(d, "two-states")["runs"].as_array().unwrap().len(), 1);

    // "Reboot" into the other state.
    std::fs::write(&state, "off\n").unwrap();
    run(d);
    let st = stdout(kbench(d).arg("status").arg(&plan));
    assert!(
        st.contains("4 cells: 4 done, 0 to run now, 0 pending"),
        "{st}"
    );

    let rep = report(d, "two-states");
    assert_eq!(rep["runs"].as_array().unwrap().len(), 2);
    assert_eq!(rep["states"].as_array().unwrap().len(), 2);
    assert_eq!(rep["pending"].as_array().unwrap().len(), 0);
    let on = format!("{{\"{probe}\":\"on\"}}");
    let off = format!("{{\"{probe}\":\"off\"}}");
    assert_eq!(
        counts(&rep, "real"),
        vec![
            ("true:{\"mode\":\"off\"}".to_string(), 3, off.clone()),
            ("true:{\"mode\":\"on\"}".to_string(), 3, on.clone()),
        ]
    );
    assert_eq!(
        counts(&rep, "ns/op"),
        vec![
            ("getppid:{\"mode\":\"off\"}".to_string(), 3, off),
            ("getppid:{\"mode\":\"on\"}".to_string(), 3, on),
        ]
    );
    // Each state's cells came from their own run.
    let runs: Vec<Value> = rep["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"] == "real")
        .map(|c| c["runs"].clone())
        .collect();
    assert_eq!(runs.len(), 2);
    assert_ne!(runs[0], runs[1]);
    for c in rep["cells"].as_array().unwrap() {
        assert_eq!(
            c["values"].as_array().unwrap().len() as u64,
            c["n"].as_u64().unwrap()
        );
    }
    // The run's fingerprint carries the readings.
    let last: Value = serde_json::from_str(&stdout(kbench(d).args(["report", "--json"]))).unwrap();
    assert_eq!(last["fingerprint"]["probes"][&probe], "off");

    // Running again in either state adds nothing.
    std::fs::write(&state, "on\n").unwrap();
    run(d);
    assert_eq!(report(d, "two-states")["runs"].as_array().unwrap().len(), 2);

    // Editing the plan is refused in one line; --force starts a new campaign.
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, text.replace("samples = 3", "samples = 2")).unwrap();
    let out = kbench(d).args(["run", "-q"]).arg(&plan).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("changed since campaign 1 started") && err.contains("--force"),
        "{err}"
    );
    run_force(d, &plan);
    let st = stdout(kbench(d).arg("status").arg(&plan));
    assert!(st.starts_with("campaign 2 `two-states`"), "{st}");
    assert!(st.contains("2 done, 0 to run now, 2 pending"), "{st}");
    // --force on the unchanged plan starts it over; the old one stays.
    run_force(d, &plan);
    let st = stdout(kbench(d).arg("status").arg(&plan));
    assert!(st.starts_with("campaign 3 `two-states`"), "{st}");
    assert!(st.contains("2 done, 0 to run now, 2 pending"), "{st}");
    assert_eq!(report(d, "campaign:1")["runs"].as_array().unwrap().len(), 2);
    assert_eq!(report(d, "campaign:2")["runs"].as_array().unwrap().len(), 1);
}

fn run_force(d: &Path, plan: &Path) {
    stdout(
        kbench(d)
            .args(["run", "-q", "--force", "--sample-time", "0.01"])
            .arg(plan),
    );
}

#[test]
fn builtin_probes_decide_which_cells_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let plan = d.join("p.toml");
    std::fs::write(
        &plan,
        format!(
            r#"
name = "builtin"
samples = 2
warmup = 0
[factors]
kernel = {{ apply = "system", probe = "kernel.release", values = {{ this = "{}", other = "0.0.0-none" }} }}
pti = {{ apply = "system", values = {{ on = {{ "cmdline.nopti_kbench_test" = "absent" }}, off = {{ "cmdline.nopti_kbench_test" = "present", "vuln.meltdown" = "re:^Vuln" }} }}, hint = {{ off = "boot with `nopti_kbench_test`" }} }}
[[bench]]
name = "t"
command = ["true"]
measure = ["real"]
"#,
            release.trim()
        ),
    )
    .unwrap();
    stdout(kbench(d).args(["run", "-q"]).arg(&plan));
    let st = stdout(kbench(d).arg("status").arg(&plan));
    assert!(
        st.contains("4 cells: 1 done, 0 to run now, 3 pending"),
        "{st}"
    );
    assert!(st.contains("t [kernel=this, pti=on] (2/2 samples)"), "{st}");
    assert!(
        st.contains("needs kernel=other (kernel.release=0.0.0-none); pti=off: boot with `nopti_kbench_test` (cmdline.nopti_kbench_test=present, vuln.meltdown=re:^Vuln)"),
        "{st}"
    );
    let unit = stdout(kbench(d).args(["status", "--resume-unit"]).arg(&plan));
    assert!(
        unit.contains("ExecStart=") && unit.contains(" run ") && unit.contains("p.toml"),
        "{unit}"
    );
    assert!(unit.contains("@reboot"), "{unit}");
    assert!(unit.contains("WantedBy=multi-user.target"), "{unit}");
}

/// The start-up transaction a real systemd (test mode, as `nobody`: it
/// will not run it as root) computes for multi-user.target with `unit`
/// installed and enabled, or `None` where systemd is not installed.
fn boot_transaction(dir: &Path, name: &str, unit: &str) -> Option<String> {
    let systemd = Path::new("/lib/systemd/systemd");
    if !systemd.exists() || !Path::new("/usr/sbin/runuser").exists() {
        eprintln!("skipping the systemd check: no /lib/systemd/systemd or runuser");
        return None;
    }
    let units = dir.join("units");
    let wants = units.join("multi-user.target.wants");
    std::fs::create_dir_all(&wants).unwrap();
    let file = units.join(format!("{name}.service"));
    std::fs::write(&file, unit).unwrap();
    std::os::unix::fs::symlink(&file, wants.join(format!("{name}.service"))).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for p in [dir.parent().unwrap(), dir, &units, &wants] {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = std::process::Command::new("/usr/sbin/runuser")
        .args(["-u", "nobody", "--", "env"])
        // The trailing colon keeps systemd's own unit directories.
        .arg(format!("SYSTEMD_UNIT_PATH={}:", units.display()))
        .arg(systemd)
        .args([
            "--test",
            "--system",
            "--unit=multi-user.target",
            "--no-pager",
        ])
        .output()
        .unwrap();
    common::assert_ok(&out);
    Some(String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
}

/// the resume unit must survive systemd's boot transaction.
/// kbench starts after multi-user.target (a quiet, fully booted system);
/// systemd does not add the target's implicit After= on a unit that is
/// already ordered after it, so there is no cycle and the job stays. The
/// control, a unit that is also ordered before basic.target, shows the
/// check does see a cycle where there is one.
#[test]
fn the_resume_unit_starts_at_boot_in_a_real_systemd() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let plan = d.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"resume me\"\nsamples = 1\n[[bench]]\nuse = \"getppid\"\n",
    )
    .unwrap();
    let unit = stdout(kbench(d).args(["status", "--resume-unit"]).arg(&plan));
    assert!(
        unit.contains("/etc/systemd/system/kbench-resume-me.service"),
        "{unit}"
    );
    let Some(t) = boot_transaction(&d.join("ok"), "kbench-resume-me", &unit) else {
        return;
    };
    assert!(!t.contains("ordering cycle"), "{t}");
    assert!(
        t.contains("Action: kbench-resume-me.service -> start"),
        "no start job at boot: {t}"
    );
    let cyclic = unit.replace("[Service]", "Before=basic.target\n\n[Service]");
    let t = boot_transaction(&d.join("control"), "kbench-resume-me", &cyclic).unwrap();
    assert!(t.contains("Found ordering cycle"), "{t}");
    assert!(
        t.contains("Job kbench-resume-me.service/start deleted"),
        "{t}"
    );
}

/// `kbench report CAMPAIGN` re-read the stored plan relative to
/// the current directory, and so compiled and dlopen()ed a `testcase =
/// "x.c"` found there. A report never compiles, loads or runs anything.
#[test]
fn reporting_a_campaign_never_loads_a_c_testcase() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (lab, elsewhere) = (d.join("lab"), d.join("elsewhere"));
    std::fs::create_dir_all(&lab).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let testcase = "char *testcase_description = \"loop\";\n\
        void testcase(unsigned long long *iterations, unsigned long nr)\n\
        { (void)nr; for (;;) (*iterations)++; }\n";
    std::fs::write(lab.join("t.c"), testcase).unwrap();
    let marker = d.join("constructor-ran");
    std::fs::write(
        elsewhere.join("t.c"),
        format!(
            "#include <fcntl.h>\n\
             __attribute__((constructor)) static void mark(void)\n\
             {{ creat(\"{}\", 0600); }}\n{testcase}",
            marker.display()
        ),
    )
    .unwrap();
    let plan = lab.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"ctc\"\nsamples = 1\nsample_time = 0.05\nwarmup = 0\n\
         [[bench]]\ntestcase = \"t.c\"\nparams = { tasks = 1 }\n",
    )
    .unwrap();
    let db = d.join("k.db");
    let k = |cwd: &Path| {
        let mut c = assert_cmd::Command::new(common::bin());
        c.current_dir(cwd).arg("--db").arg(&db);
        c
    };
    k(&lab).args(["run", "-q"]).arg(&plan).assert().success();
    for args in [
        &["report", "ctc"][..],
        &["report", "ctc", "--json"],
        &["runs"],
        &["compare", "ctc", "ctc"],
    ] {
        let out = k(&elsewhere).args(args).output().unwrap();
        assert!(!marker.exists(), "`kbench {}` loaded ./t.c", args.join(" "));
        assert_ne!(out.status.code(), Some(101), "panic: {args:?}");
    }
}

/// Issue: `kbench status PLAN`, and `run` with nothing left to run,
/// compiled and loaded the plan's C testcase (its constructor ran in
/// kbench); and editing `t.c` did not change the plan's campaign. Only a
/// cell about to run builds or loads code, and the plan's identity holds
/// the testcase's content.
#[test]
fn only_running_a_cell_builds_or_loads_a_testcase_and_editing_it_changes_the_plan() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let marker = d.join("constructor-ran");
    let testcase = |extra: &str| {
        format!(
            "#include <fcntl.h>\n\
             __attribute__((constructor)) static void mark(void)\n\
             {{ creat(\"{}\", 0600); }}\n\
             char *testcase_description = \"loop{extra}\";\n\
             void testcase(unsigned long long *iterations, unsigned long nr)\n\
             {{ (void)nr; for (;;) (*iterations)++; }}\n",
            marker.display()
        )
    };
    std::fs::write(d.join("t.c"), testcase("")).unwrap();
    let plan = d.join("p.toml");
    std::fs::write(
        &plan,
        "name = \"lazy\"\nsamples = 1\nsample_time = 0.05\nwarmup = 0\n\
         [[bench]]\ntestcase = \"t.c\"\nparams = { tasks = 1 }\n",
    )
    .unwrap();
    let k = || {
        let mut c = common::kbench(d);
        c.current_dir(d);
        c
    };
    // (No store yet: status says so, and loads nothing.)
    k().arg("status").arg(&plan).output().unwrap();
    assert!(!marker.exists(), "`status` loaded t.c before any run");
    k().args(["run", "-q"]).arg(&plan).assert().success();
    assert!(marker.exists(), "running its cell loads t.c");
    std::fs::remove_file(&marker).unwrap();
    for args in [&["status"][..], &["run", "-q"]] {
        let out = k().args(args).arg(&plan).output().unwrap();
        common::assert_ok(&out);
        assert!(
            !marker.exists(),
            "`{}` with nothing to run loaded t.c",
            args.join(" ")
        );
    }
    // An edited testcase is an edited plan.
    std::fs::write(d.join("t.c"), testcase(" v2")).unwrap();
    k().args(["run", "-q"])
        .arg(&plan)
        .assert()
        .code(2)
        .stderr(predicates::str::contains("--force"));
    assert!(!marker.exists(), "refused before loading");
}
