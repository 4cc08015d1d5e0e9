//! Reports: one model built from stored results, rendered by one module per
//! format (`text.rs` for e-mail, `json.rs` for scripts).

pub mod compare;
pub mod json;
pub mod scale;
pub mod text;

use indexmap::IndexMap;
use serde::Serialize;

use crate::runner::adaptive::{self, StopRule, Verdict};
use crate::stats::Summary;
use crate::store::{CampaignData, CellRec, RunData, SampleRec};
use crate::system::Fingerprint;

/// One row: a cell's summary for one metric.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    /// Benchmark display name.
    pub bench: String,
    /// Resolved parameters.
    pub params: serde_json::Value,
    /// Factor name -> value label.
    pub factors: serde_json::Value,
    pub metric: String,
    pub unit: String,
    /// `lower` or `higher` is better.
    pub direction: String,
    pub n: usize,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    /// Half-width of the 95% confidence interval of the mean, relative to
    /// the mean (0.01 = +/-1%).
    pub ci95_rel: f64,
    /// The precision target of an adaptive run, and whether this cell
    /// reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_reached: Option<bool>,
    /// CPUs each party ran on, when pinned.
    pub placement: Option<String>,
    /// Facts the benchmark recorded (e.g. iterations per sample).
    pub notes: serde_json::Value,
    /// Probe readings the samples were taken under (`{}` without
    /// `system` factors).
    pub readings: serde_json::Value,
    /// The sample values, in the order they were taken.
    pub values: Vec<f64>,
    /// Row label: factor labels then label parameters, in column order.
    #[serde(skip)]
    pub labels: Vec<String>,
}

/// Cells of one benchmark and metric, shown as one table.
#[derive(Clone, Debug)]
pub struct Group {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: String,
    /// Column names of the row labels.
    pub columns: Vec<String>,
    pub rows: Vec<CellSummary>,
}

/// The report of one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub data: RunData,
    /// The stop rule of an adaptive run.
    pub stop: Option<StopRule>,
    /// With `--until-verdict`: how the comparison of the two cells ended.
    pub verdict: Option<Verdict>,
    pub fingerprint: Option<Fingerprint>,
    pub groups: Vec<Group>,
}

/// A JSON value as a table label: strings bare, anything else as JSON.
pub(crate) fn json_label(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Display a stored parameter value (sizes as `64k`) using the benchmark's
/// definition when it is a built-in one.
fn param_label(bench_name: &str, params: &serde_json::Value, name: &str) -> String {
    let v = params.get(name).cloned().unwrap_or(serde_json::Value::Null);
    if let (Some(b), Ok(val)) = (
        crate::bench::find(bench_name),
        serde_json::from_value::<crate::bench::Value>(v.clone()),
    ) && let Some(def) = b.params().iter().find(|d| d.name == name)
    {
        return def.ty.display(&val);
    }
    json_label(&v)
}

impl RunReport {
    pub fn build(data: RunData) -> RunReport {
        let fingerprint = serde_json::from_value(data.fingerprint.clone()).ok();
        let stop: Option<StopRule> =
            serde_json::from_value(data.config["options"]["stop"].clone()).ok();
        let mut groups: IndexMap<(String, String), Group> = IndexMap::new();
        for (cell, samples) in &data.cells {
            let factor_names: Vec<String> = cell
                .factors
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            let mut columns = factor_names.clone();
            columns.extend(cell.label_params.iter().cloned());
            let mut labels: Vec<String> = factor_names
                .iter()
                .map(|k| json_label(&cell.factors[k]))
                .collect();
            labels.extend(
                cell.label_params
                    .iter()
                    .map(|p| param_label(&cell.source, &cell.params, p)),
            );
            for m in &cell.metrics {
                let values: Vec<f64> = samples
                    .iter()
                    .filter(|s| *s.metric == *m.name)
                    .map(|s| s.value)
                    .collect();
                let Some(s) = Summary::of(&values) else {
                    continue;
                };
                let g = groups
                    .entry((cell.bench.clone(), m.name.clone()))
                    .or_insert_with(|| Group {
                        bench: cell.bench.clone(),
                        metric: m.name.clone(),
                        unit: m.unit.clone(),
                        direction: m.direction.clone(),
                        columns: columns.clone(),
                        rows: Vec::new(),
                    });
                // Ad-hoc cells of one benchmark may set different params:
                // widen the columns to the union.
                for c in &columns {
                    if !g.columns.contains(c) {
                        g.columns.push(c.clone());
                    }
                }
                g.rows.push(CellSummary {
                    bench: cell.bench.clone(),
                    params: cell.params.clone(),
                    factors: cell.factors.clone(),
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    direction: m.direction.clone(),
                    n: s.n,
                    min: s.min,
                    max: s.max,
                    median: s.median,
                    mean: s.mean,
                    stddev: s.stddev,
                    ci95_rel: adaptive::relative_halfwidth(&values, adaptive::PRECISION_CONFIDENCE),
                    precision_reached: stop.map(|r| {
                        adaptive::relative_halfwidth(&values, adaptive::PRECISION_CONFIDENCE)
                            <= r.precision
                    }),
                    placement: cell.placement.clone(),
                    notes: cell.notes.clone(),
                    readings: if cell.readings.is_null() {
                        serde_json::json!({})
                    } else {
                        cell.readings.clone()
                    },
                    values: values.clone(),
                    labels: Vec::new(),
                });
                let row = g.rows.last_mut().expect("pushed");
                row.labels = g
                    .columns
                    .iter()
                    .map(|c| match columns.iter().position(|x| x == c) {
                        Some(i) => labels[i].clone(),
                        None => "-".into(),
                    })
                    .collect();
            }
        }
        // Rows pushed before a column was added are one label short.
        let mut groups: Vec<Group> = groups.into_values().collect();
        for g in &mut groups {
            for r in &mut g.rows {
                while r.labels.len() < g.columns.len() {
                    r.labels.push("-".into());
                }
            }
        }
        // The verdict is recomputed from the stored samples, exactly as the
        // runner decided it.
        let verdict = match (&stop, groups.as_slice()) {
            (Some(r), [g]) if r.until_verdict && g.rows.len() == 2 => {
                let vals = |i: usize| -> Vec<f64> {
                    let (c, smp) = &data.cells[i];
                    let m = c
                        .metrics
                        .first()
                        .map(|m| m.name.clone())
                        .unwrap_or_default();
                    smp.iter()
                        .filter(|s| *s.metric == *m)
                        .map(|s| s.value)
                        .collect()
                };
                adaptive::verdict(&vals(0), &vals(1), r.precision, adaptive::LOOK_CONFIDENCE)
            }
            _ => None,
        };
        RunReport {
            data,
            stop,
            verdict,
            fingerprint,
            groups,
        }
    }
}

/// A campaign's cells merged across its runs: one entry per cell key and
/// probe readings (a cell measured under two system states appears twice,
/// each with only its own samples), with the ids of the runs that measured
/// it in `notes.runs`.
pub fn merge_campaign(d: &CampaignData) -> Vec<(CellRec, Vec<SampleRec>)> {
    let mut merged: IndexMap<(String, String), (CellRec, Vec<SampleRec>)> = IndexMap::new();
    for (c, samples) in &d.cells {
        let k = (c.key.clone(), c.readings.to_string());
        let e = merged.entry(k).or_insert_with(|| {
            let mut c = c.clone();
            c.notes["runs"] = serde_json::json!([]);
            (c, Vec::new())
        });
        if let Some(runs) = e.0.notes["runs"].as_array_mut()
            && !samples.is_empty()
        {
            runs.push(c.run_id.into());
        }
        if e.0.placement.is_none() {
            e.0.placement = c.placement.clone();
        }
        e.1.extend(samples.iter().cloned());
    }
    merged.into_values().collect()
}

/// The report model of a campaign: a run-shaped view over its merged
/// cells, with the fingerprint of its latest run.
fn campaign_report(d: &CampaignData) -> RunReport {
    let last = d.runs.last();
    let run = crate::store::RunRow {
        id: last.map_or(0, |r| r.id),
        campaign: Some(d.campaign.name.clone()),
        host: last.map_or_else(String::new, |r| r.host.clone()),
        started: d.runs.first().map_or(d.campaign.created, |r| r.started),
        ended: last.and_then(|r| r.ended),
        status: format!("{} run(s)", d.runs.len()),
        cells: d.cells.len() as i64,
        samples: d.cells.iter().map(|(_, s)| s.len() as i64).sum(),
        overhead_ns: last.map_or(0.0, |r| r.overhead_ns),
    };
    RunReport::build(RunData {
        run,
        fingerprint: d.fingerprint.clone(),
        config: d.config.clone(),
        cells: merge_campaign(d),
        failures: d.failures.clone(),
    })
}

/// Cells of the campaign's plan that have no sample yet, with the system
/// state each needs.
fn campaign_pending(d: &CampaignData) -> Vec<serde_json::Value> {
    let Ok(plan) = crate::plan::parse(&d.campaign.plan_text, &d.campaign.name) else {
        return Vec::new();
    };
    let Ok(cells) = crate::plan::expand(&plan) else {
        return Vec::new();
    };
    let measured: std::collections::HashSet<&str> = d
        .cells
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(c, _)| c.key.as_str())
        .collect();
    cells
        .iter()
        .filter(|c| !measured.contains(c.key.as_str()))
        .map(|c| {
            serde_json::json!({
                "bench": c.display,
                "factors": c.factors,
                "needs": c.expect.iter().map(crate::runner::campaign::describe_need).collect::<Vec<_>>(),
            })
        })
        .collect()
}

/// `kbench report CAMPAIGN --json`: the campaign, its runs, every state's
/// cells with their own samples and readings, failures, and what is still
/// pending.
pub fn campaign_json(d: &CampaignData) -> serde_json::Value {
    let rep = campaign_report(d);
    let cells: Vec<&CellSummary> = rep.groups.iter().flat_map(|g| &g.rows).collect();
    let mut states: Vec<&serde_json::Value> = Vec::new();
    for (c, _) in &d.cells {
        if !states.contains(&&c.readings) {
            states.push(&c.readings);
        }
    }
    serde_json::json!({
        "campaign": d.campaign,
        "fingerprint": d.fingerprint,
        "runs": d.runs,
        "states": states,
        "cells": cells,
        "failures": d.failures,
        "pending": campaign_pending(d),
    })
}

/// `kbench report CAMPAIGN` as text: the run-style tables over all the
/// campaign's cells, then the system states they were measured under.
pub fn campaign_text(d: &CampaignData) -> String {
    let rep = campaign_report(d);
    let mut o = format!(
        "campaign {} `{}` (plan hash {}), {} run(s)\n",
        d.campaign.id,
        d.campaign.name,
        d.campaign.plan_hash,
        d.runs.len()
    );
    o.push_str(&text::render(&rep));
    let mut states: Vec<&serde_json::Value> = Vec::new();
    for (c, _) in &d.cells {
        if c.readings.as_object().is_some_and(|m| !m.is_empty()) && !states.contains(&&c.readings) {
            states.push(&c.readings);
        }
    }
    if !states.is_empty() {
        o.push_str("\nsystem states measured:\n");
        for s in states {
            let parts: Vec<String> = s
                .as_object()
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| format!("{k}={}", json_label(v)))
                        .collect()
                })
                .unwrap_or_default();
            o.push_str(&format!("  {}\n", parts.join(", ")));
        }
    }
    let pending = campaign_pending(d);
    if !pending.is_empty() {
        o.push_str(&format!(
            "\n{} cell(s) pending (see `kbench status PLAN`)\n",
            pending.len()
        ));
    }
    o
}
