//! Reports: one model built from stored results, rendered by one module per
//! format (`text.rs` for e-mail, `json.rs` for scripts).

pub mod json;
pub mod scale;
pub mod text;

use indexmap::IndexMap;
use serde::Serialize;

use crate::runner::adaptive::{self, StopRule, Verdict};
use crate::stats::Summary;
use crate::store::RunData;
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

fn json_label(v: &serde_json::Value) -> String {
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
                    .filter(|s| s.metric == m.name)
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
                        .filter(|s| s.metric == m)
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
