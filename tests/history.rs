//! `kbench report --history` through the real binary: a series of
//! imported nightly results with a step in it, and real short runs of
//! `getppid` ordered by time and pooled by revision.

mod common;

use common::{json, stdout};
use std::path::Path;

/// `kbench` on the test's store, run inside its directory (imported files
/// are named as given, relative).
fn kbench(d: &Path) -> assert_cmd::Command {
    let mut c = common::kbench(d);
    c.current_dir(d);
    c
}

/// Import `values` as ministat file `name` into campaign `campaign`.
fn import(d: &Path, name: &str, campaign: &str, values: &[f64]) {
    let text: String = values.iter().map(|v| format!("{v}\n")).collect();
    std::fs::write(d.join(name), text).unwrap();
    kbench(d)
        .args(["import", name, "--from", "ministat", "--name", campaign])
        .assert()
        .success();
}

/// Exit 2 with one line on stderr containing `what`.
fn rejected(d: &Path, args: &[&str], what: &str) {
    let out = kbench(d).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{args:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(what), "{err}");
}

#[test]
fn a_step_in_imported_nightlies_is_one_change_point() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Fourteen nightly results of 5 values each; from the 9th on, 6%
    // slower. Within-night spread 2%, night-to-night wobble 0.5%.
    for night in 0..14u32 {
        let level = 100.0 * if night >= 8 { 1.06 } else { 1.0 };
        // (Plus a trace per night: an import of the same content again is
        // the same run, not a new night.)
        let wobble =
            [0.0, 0.005, -0.003, 0.002, -0.005][(night % 5) as usize] + f64::from(night) * 1e-6;
        let values: Vec<f64> = [-0.02, 0.01, 0.0, 0.015, -0.005]
            .iter()
            .map(|dv| level * (1.0 + wobble + dv))
            .collect();
        import(d, "lat.txt", "nightly", &values);
    }
    // Another campaign's runs of the same benchmark stay out of it.
    import(d, "other.txt", "other", &[1.0, 2.0, 3.0]);

    let spec = "ministat:file=lat.txt";
    let text = stdout(kbench(d).args(["report", "--history", spec]));
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}\n{text}");
    }
    assert!(text.contains("--- change point: worse"), "{text}");
    assert!(text.contains("#8 run 8 -> #9 run 9: worse +6"), "{text}");

    let v = json(&stdout(kbench(d).args(["report", "--history", spec, "--json"])).into_bytes());
    assert_eq!(v["by"], "time");
    assert_eq!(v["method"]["change_points"], "e-divisive means");
    let s = &v["series"][0];
    assert_eq!(v["series"].as_array().unwrap().len(), 1);
    assert_eq!(s["points"].as_array().unwrap().len(), 14);
    assert_eq!(s["points"][3]["n"], 5);
    let cps = s["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["index"], 8);
    assert_eq!(cps[0]["verdict"], "worse");
    let change = cps[0]["change"].as_f64().unwrap();
    assert!((change - 0.06).abs() < 0.01, "{change}");
    assert!(cps[0]["p"].as_f64().unwrap() <= 0.005);
    // A step between two single runs is not judged (the run-to-run
    // variation is not measured): the change point is the verdict.
    let flagged: Vec<usize> = (0..14)
        .filter(|&i| s["points"][i]["step"]["significant"] == true)
        .collect();
    assert_eq!(flagged, [0usize; 0]);
    assert_eq!(s["points"][8]["step"]["unmeasured"], "run");

    let csv = stdout(kbench(d).args(["report", "--history", spec, "--format", "csv"]));
    assert_eq!(csv.lines().count(), 15, "{csv}");
    let md = stdout(kbench(d).args(["report", "--history", spec, "--format", "markdown"]));
    assert!(md.contains("| **worse** |"), "{md}");
    kbench(d)
        .args([
            "report",
            "--history",
            spec,
            "--format",
            "html",
            "-o",
            "h.html",
        ])
        .assert()
        .success();
    let page = std::fs::read_to_string(d.join("h.html")).unwrap();
    assert_eq!(page.matches("class=\"change-point\"").count(), 1);
    assert!(page.contains("<svg") && !page.contains("<script"));

    // --campaign narrows the runs; bad selections are one line, exit 2.
    let o = json(
        &stdout(kbench(d).args([
            "report",
            "--history",
            "ministat",
            "--campaign",
            "other",
            "--json",
        ]))
        .into_bytes(),
    );
    assert_eq!(o["series"][0]["points"].as_array().unwrap().len(), 1);
    rejected(
        d,
        &["report", "--history", spec, "--campaign", "other"],
        "selects no stored cell",
    );
    rejected(
        d,
        &["report", "--history", "pipe-bw"],
        "no stored run measured `pipe-bw`",
    );
    rejected(
        d,
        &["report", "--by", "revision"],
        "go with --history BENCH",
    );
    rejected(
        d,
        &["report", "--history", "ministat", "1"],
        "cannot be used with",
    );
    rejected(
        d,
        &["report", "--history", spec, "--metric", "ns"],
        "no metric `ns`",
    );
    rejected(
        d,
        &["report", "--history", "ministat:size=4k"],
        "no factor or parameter `size`",
    );
}

#[test]
fn real_runs_of_getppid_make_a_history() {
    let _g = common::serial();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for _ in 0..3 {
        kbench(d)
            .args(["run", "getppid", "--samples", "3", "--sample-time", "0.01"])
            .args(["--warmup", "0", "-q", "--json"])
            .assert()
            .success();
    }
    let v =
        json(&stdout(kbench(d).args(["report", "--history", "getppid", "--json"])).into_bytes());
    let s = &v["series"][0];
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    let ids: Vec<i64> = points
        .iter()
        .map(|p| p["runs"][0].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3], "time order is run order");
    for p in points {
        assert_eq!(p["n"], 3);
        // A getppid call takes somewhere between 10 ns and 100 us.
        let m = p["mean"].as_f64().unwrap();
        assert!((10.0..1e5).contains(&m), "{m} ns");
        let [lo, hi] = [&p["ci95"][0], &p["ci95"][1]].map(|x| x.as_f64().unwrap());
        assert!(lo <= m && m <= hi);
    }
    assert!(points[0]["step"].is_null() && !points[1]["step"].is_null());
    // Three points are too few to look for change points; the report
    // says so rather than reporting none.
    assert!(s["change_points"].as_array().unwrap().is_empty());
    assert!(s["note"].as_str().unwrap().contains("need at least"));
    // By revision: the three runs share this kernel, so one point.
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let r = json(
        &stdout(kbench(d).args([
            "report",
            "--history",
            "getppid",
            "--by",
            "revision",
            "--json",
        ]))
        .into_bytes(),
    );
    let rp = &r["series"][0]["points"];
    assert_eq!(rp.as_array().unwrap().len(), 1);
    assert_eq!(rp[0]["label"], kernel.trim());
    assert_eq!(rp[0]["n"], 9);
    assert_eq!(rp[0]["runs"].as_array().unwrap().len(), 3);
    let text = stdout(kbench(d).args(["report", "--history", "getppid"]));
    assert!(text.contains("change points need at least 11"), "{text}");
}
