//! JSON: every [`Document`] as one JSON value, for scripts. Reports keep
//! the field names of [`super::CellSummary`] in a `cells` array; a run
//! report is an object with `run`, `config`, `fingerprint`, `warnings`,
//! `cells`, `scaling`, `stop`, `verdict` and `failures`; a campaign report
//! has `campaign`, `runs`, `states` and `pending` in place of `run`.

//!
//! Every document is one object that names its model: `schema` (the
//! version, [`super::render::SCHEMA`]) and `kind` (`report`, `compare`, `status`, ...),
//! described by `schemas/report.schema.json` in the repository (one
//! `$defs` entry per kind). A report has the same shape with or without a
//! plan's `[report]` layout: the layout's tables are its `tables` member
//! (`null` without one); several reports are a `reports` document.

use serde_json::{Value, json};

use super::table::TableDoc;
use super::{Report, Subject};

pub use super::render::document;

/// A document as its JSON value (what `--format json` prints).
#[cfg(test)]
pub fn render(doc: &super::Document<'_>) -> anyhow::Result<Value> {
    match doc.rendered(super::Format::Json)? {
        super::Rendered::Json(v) => Ok(v),
        super::Rendered::Str(s) => Ok(Value::String(s)),
    }
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

pub(crate) fn report(r: &Report) -> Value {
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
