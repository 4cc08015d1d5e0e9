//! JSON: every [`Document`] as one JSON value, for scripts. Reports keep
//! the field names of [`super::CellSummary`] in a `cells` array; a run
//! report is an object with `run`, `config`, `fingerprint`, `warnings`,
//! `cells`, `scaling`, `stop`, `verdict` and `failures`; a campaign report
//! has `campaign`, `runs`, `states` and `pending` in place of `run`.

use serde_json::{Value, json};

use super::{Document, Report, Subject};

pub fn render(doc: &Document<'_>) -> anyhow::Result<Value> {
    Ok(match doc {
        Document::Reports(rs) => {
            let mut v: Vec<Value> = rs.iter().map(report).collect();
            if v.len() == 1 {
                v.pop().expect("one")
            } else {
                Value::Array(v)
            }
        }
        Document::Runs(rows) => serde_json::to_value(rows)?,
        Document::Compare(c) => serde_json::to_value(c)?,
        Document::Status(s) => serde_json::to_value(s)?,
        Document::Sysinfo(s) => serde_json::to_value(s)?,
        Document::Benches(b) => serde_json::to_value(b)?,
        Document::Bench(b) => serde_json::to_value(b)?,
        Document::Tables(t) => serde_json::to_value(t)?,
        Document::Samples(t) => serde_json::to_value(t)?,
        Document::History(h) => serde_json::to_value(h)?,
        Document::PlanSize(p) => serde_json::to_value(p)?,
        Document::Check(c) => serde_json::to_value(c)?,
    })
}

fn report(r: &Report) -> Value {
    let cells: Vec<&super::CellSummary> = r.groups.iter().flat_map(|g| &g.rows).collect();
    let mut v = json!({
        "config": r.config(),
        "fingerprint": r.fingerprint(),
        "warnings": r.fingerprint().map(|f| f.warnings()).unwrap_or_default(),
        "overhead_ns": r.overhead_ns,
        "cells": cells,
        "scaling": r.scaling,
        "stop": r.stop(),
        "verdict": r.verdict,
        "failures": r.failures,
        "summary": r.summary,
    });
    match &r.subject {
        Subject::Run(run) => v["run"] = json!(run),
        Subject::Campaign { campaign, runs } => {
            v["campaign"] = json!(campaign);
            v["runs"] = json!(runs);
            v["states"] = json!(r.states);
            v["pending"] = json!(r.pending);
        }
    }
    v
}
