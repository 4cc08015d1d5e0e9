//! JSON: every [`Document`] as one JSON value, for scripts. Reports keep
//! the field names of [`super::CellSummary`] in a `cells` array; a run
//! report is an object with `run`, `config`, `fingerprint`, `warnings`,
//! `cells`, `scaling`, `stop`, `verdict` and `failures`; a campaign report
//! has `campaign`, `runs`, `states` and `pending` in place of `run`.

//!
//! Every document is one object that names its model: `schema` (the
//! version, [`SCHEMA`]) and `kind` (`report`, `compare`, `status`, ...),
//! described by `schemas/report.schema.json` in the repository (one
//! `$defs` entry per kind). A report has the same shape with or without a
//! plan's `[report]` layout: the layout's tables are its `tables` member
//! (`null` without one); several reports are a `reports` document.

use serde_json::{Value, json};

use super::history::History;
use super::render::Render;
use super::table::TableDoc;
use super::{Document, Report, Subject};

/// The version of the JSON document model; a change that removes or
/// retypes a member takes the next number.
pub const SCHEMA: &str = "kbench/report/1";

/// `v` as a document of `kind`: an object gains `schema` and `kind`; a
/// list, or an object with a `kind` of its own (a benchmark's), becomes
/// `{schema, kind, <kind>: v}`.
pub fn document(kind: &str, v: Value) -> Value {
    match v {
        Value::Object(mut m) if !m.contains_key("kind") => {
            m.insert("schema".into(), json!(SCHEMA));
            m.insert("kind".into(), json!(kind));
            Value::Object(m)
        }
        other => json!({ "schema": SCHEMA, "kind": kind, kind: other }),
    }
}

pub fn render(doc: &Document<'_>) -> anyhow::Result<Value> {
    Ok(match doc {
        Document::Reports(rs) => reports(rs, None)?,
        Document::Runs(rows) => document("runs", serde_json::to_value(rows)?),
        Document::Compare(c) => document("compare", serde_json::to_value(c)?),
        Document::Status(s) => document("status", serde_json::to_value(s)?),
        Document::Sysinfo(s) => document("sysinfo", serde_json::to_value(s)?),
        Document::Benches(b) => document("benches", serde_json::to_value(b)?),
        Document::Bench(b) => document("bench", serde_json::to_value(b)?),
        Document::Tables(t) => document("tables", serde_json::to_value(t)?),
        Document::Samples(t) => document("samples", serde_json::to_value(t)?),
        Document::History(h) => document(History::KIND, h.json()?),
        Document::PlanSize(p) => document("plan_size", serde_json::to_value(p)?),
        Document::Check(c) => document("check", serde_json::to_value(c)?),
        Document::Explain(e) => document("explain", serde_json::to_value(e)?),
    })
}

/// One report (`kind: report`) or several (`kind: reports`), with the
/// layout's tables when a layout was asked for.
pub fn reports(rs: &[Report], tables: Option<&TableDoc>) -> anyhow::Result<Value> {
    let tables = match tables {
        Some(t) => document("tables", serde_json::to_value(t)?),
        None => Value::Null,
    };
    let mut v: Vec<Value> = rs.iter().map(|r| document("report", report(r))).collect();
    Ok(if v.len() == 1 {
        let mut one = v.pop().expect("one");
        one["tables"] = tables;
        one
    } else {
        document("reports", json!({ "reports": v, "tables": tables }))
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
