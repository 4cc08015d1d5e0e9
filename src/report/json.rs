//! JSON report: one object with the run, the fingerprint and a `cells`
//! array (one entry per cell and metric). Scripts rely on the field names
//! of [`super::CellSummary`].

use super::RunReport;

pub fn value(r: &RunReport) -> serde_json::Value {
    let cells: Vec<&super::CellSummary> = r.groups.iter().flat_map(|g| &g.rows).collect();
    serde_json::json!({
        "run": r.data.run,
        "config": r.data.config,
        "fingerprint": r.data.fingerprint,
        "warnings": r.fingerprint.as_ref().map(|f| f.warnings()).unwrap_or_default(),
        "cells": cells,
        "stop": r.stop,
        "verdict": r.verdict,
        "failures": r.data.failures,
    })
}
