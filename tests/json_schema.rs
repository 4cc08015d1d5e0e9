//! Every `--format json` / `--json` document validates against the schema
//! shipped in `schemas/report.schema.json`, checked by a real validator
//! (Python's `jsonschema`, installed by `.ci/run`).

mod common;

use common::{kbench, plan, stdout};
use std::path::Path;

const PLAN: &str = r#"
name = "shapes"
samples = 4
warmup = 0

[factors]
work = { apply = "env", var = "WORK", values = ["1", "3"], labels = ["light", "heavy"] }

[[bench]]
name = "loop"
shell = "i=0; while [ $i -lt $((2000 * WORK)) ]; do i=$((i+1)); done; : {size}"
sweep = { size = ["2k", "64k"] }
measure = ["real"]

[report]
table = "improvement"
rows = ["size"]
cols = ["work"]
baseline = { work = "light" }
"#;

/// The plan without its `[report]` section: the same JSON shape.
fn bare() -> String {
    PLAN.split("[report]")
        .next()
        .unwrap()
        .replace("\"shapes\"", "\"bare\"")
}

/// Validate each (name, document) with jsonschema; every failure named.
fn validate(dir: &Path, docs: &[(String, String)]) {
    if !common::reader("py:jsonschema") {
        return;
    }
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/report.schema.json");
    let mut files = Vec::new();
    for (i, (name, text)) in docs.iter().enumerate() {
        let f = dir.join(format!("doc{i}.json"));
        std::fs::write(&f, text).unwrap();
        files.push((name.clone(), f));
    }
    let script = r#"
import json, sys, jsonschema
schema = json.load(open(sys.argv[1]))
jsonschema.Draft202012Validator.check_schema(schema)
v = jsonschema.Draft202012Validator(schema)
bad = 0
for name, path in zip(sys.argv[2::2], sys.argv[3::2]):
    doc = json.load(open(path))
    e = jsonschema.exceptions.best_match(v.iter_errors(doc))
    if e is not None:
        bad += 1
        print(f"{name}: {list(e.absolute_path)}: {e.message[:300]}")
sys.exit(1 if bad else 0)
"#;
    let mut cmd = std::process::Command::new("python3");
    cmd.arg("-c").arg(script).arg(&schema);
    for (name, f) in &files {
        cmd.arg(name).arg(f);
    }
    let out = cmd.output().expect("python3 runs");
    assert!(
        out.status.success(),
        "documents that do not match the schema:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_json_document_matches_the_shipped_schema() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let p = plan(d, "shapes.toml", PLAN);
    let b = plan(d, "bare.toml", &bare());
    let mut docs: Vec<(String, String)> = Vec::new();
    let mut get = |name: &str, args: &[&str]| {
        let text = stdout(kbench(d).args(args));
        let v: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{name}: not JSON ({e}):\n{text}"));
        assert_eq!(v["schema"], "kbench/report/1", "{name}");
        docs.push((name.to_string(), text));
        v
    };
    let ps = p.to_str().unwrap();
    let run = ["--quiet", "--sample-time", "0.01", "--json"];
    let with = get("run (layout)", &[&["run", ps][..], &run[..]].concat());
    let without = get(
        "run (no layout)",
        &[&["run", b.to_str().unwrap()][..], &run[..]].concat(),
    );
    // One shape with or without a `[report]` section: the layout adds
    // its tables to the cells, it does not replace them.
    assert_eq!(with["kind"], "report");
    assert_eq!(without["kind"], "report");
    assert!(with["cells"].as_array().is_some_and(|c| c.len() == 4));
    assert!(without["cells"].as_array().is_some_and(|c| c.len() == 4));
    assert_eq!(with["tables"]["kind"], "tables");
    assert!(without["tables"].is_null());
    let rep = get("report", &["report", "shapes", "--json"]);
    assert_eq!(rep["tables"]["tables"][0]["kind"], "improvement");
    get(
        "report --table ratio",
        &["report", "1", "--table", "ratio", "--json"],
    );
    get(
        "report --table matrix",
        &["report", "2", "--table", "matrix", "--json"],
    );
    let two = get("report of two runs", &["report", "1", "2", "--json"]);
    assert_eq!(two["kind"], "reports");
    get(
        "compare",
        &[
            "compare",
            "shapes:work=light",
            "shapes:work=heavy",
            "--json",
        ],
    );
    get("history", &["report", "--history", "loop", "--json"]);
    get("status", &["status", ps, "--json"]);
    get("runs", &["runs", "--json"]);
    get("list", &["list", "--json"]);
    get("list NAME", &["list", "getppid", "--json"]);
    get("list counters", &["list", "counters", "--json"]);
    get("sysinfo", &["sysinfo", "--json"]);
    get("plan-size", &["plan-size", "1", "--json"]);
    // A profiled run of the same plan, and what explain makes of it.
    get(
        "run --profile",
        &[&["run", ps, "--force", "--profile"][..], &run[..]].concat(),
    );
    let e = get(
        "explain",
        &[
            "explain",
            "shapes:work=light",
            "shapes:work=heavy",
            "--json",
        ],
    );
    assert_eq!(e["kind"], "explain");
    validate(d, &docs);
}

/// The validator is real: a document that breaks the schema fails it.
#[test]
fn a_document_off_the_schema_is_refused() {
    if !common::reader("py:jsonschema") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let doc = r#"{"schema": "kbench/report/1", "kind": "runs", "runs": "not a list"}"#;
    let out = std::panic::catch_unwind(|| {
        validate(dir.path(), &[("broken".into(), doc.into())]);
    });
    assert!(out.is_err(), "a list that is a string passed the schema");
}
