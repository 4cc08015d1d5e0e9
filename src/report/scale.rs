//! Scaling tables for scale benchmarks (will-it-scale style): per testcase,
//! ops/s against the task count for each mode, the per-task efficiency
//! `ops(n) / (n * ops(1))`, and the task count where the curve flattens
//! (the first whose efficiency falls below [`FLATTEN_BELOW`]).
//!
//! [`build`] makes the model (series of points, serialisable, ready for
//! charts); the text renderer prints it within 80 columns.

use indexmap::IndexMap;
use serde::Serialize;

use crate::record::Kind;
use crate::stats::Sample;
use crate::store::StoredCell;

/// Efficiency below which a curve is said to have flattened.
pub const FLATTEN_BELOW: f64 = 0.8;

/// One task count of one series.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    pub tasks: u32,
    /// Statistics of the intervals (each interval is one sample, ops/s).
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
    /// mean / tasks.
    pub per_task: f64,
    /// per_task / per_task of the series' smallest task count (1 normally).
    pub efficiency: f64,
    /// Mean idle CPU % of the machine over the intervals, when recorded.
    pub idle: Option<f64>,
}

/// One curve: one mode under one context.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub mode: String,
    /// Whose data the curve is (`import=fbsd.csv`, `host=alpha`), when
    /// the curves of one chart differ in it; empty otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub origin: super::origin::Origin,
    pub points: Vec<Point>,
    /// First task count whose efficiency is below [`FLATTEN_BELOW`].
    pub flattens_at: Option<u32>,
}

impl Series {
    /// The curve's name: its origin's values, then the mode.
    pub fn label(&self) -> String {
        let mut parts: Vec<&str> = self.origin.iter().map(|(_, v)| v.as_str()).collect();
        parts.push(&self.mode);
        parts.join(" ")
    }
}

/// All curves of one testcase under one combination of other factors and
/// parameters (e.g. one kernel).
#[derive(Clone, Debug, Serialize)]
pub struct Scaling {
    pub bench: String,
    /// Other factor values and parameters, `name=value`.
    pub context: Vec<String>,
    pub series: Vec<Series>,
    /// What the cells warned of (more tasks than allowed CPUs), once each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

impl Scaling {
    /// One table per origin of its curves, the origin moved to the
    /// context (a format with a column per mode, e.g. runtest.py's CSV).
    pub fn by_origin(&self) -> Vec<Scaling> {
        let mut out: Vec<Scaling> = Vec::new();
        for x in &self.series {
            let mut context = self.context.clone();
            context.extend(x.origin.iter().map(|(k, v)| format!("{k}={v}")));
            let mut curve = x.clone();
            curve.origin.clear();
            match out.iter_mut().find(|t| t.context == context) {
                Some(t) => t.series.push(curve),
                None => out.push(Scaling {
                    bench: self.bench.clone(),
                    context,
                    series: vec![curve],
                    warnings: self.warnings.clone(),
                }),
            }
        }
        out
    }
}

/// A scale cell's context: its factors and label params other than the
/// mode and the task count, `name=value`.
fn context_of(cell: &crate::record::CellInfo) -> Vec<String> {
    let mut context: Vec<String> = Vec::new();
    for (k, v) in &cell.factors {
        if k != "mode" && k != "tasks" {
            context.push(format!("{k}={v}"));
        }
    }
    for p in &cell.label_params {
        if p != "mode" && p != "tasks" {
            context.push(format!("{p}={}", super::json_label(&cell.params[p])));
        }
    }
    context
}

/// One curve's points, by task count: the ops/s values (and idle
/// shares) of each count summarised, the efficiency against the curve's
/// first point per task; a count without a value has no point.
fn points(mut by_tasks: IndexMap<u32, (Vec<f64>, Vec<f64>)>) -> Vec<Point> {
    by_tasks.sort_keys();
    let mut points = Vec::new();
    let mut base: Option<f64> = None;
    for (tasks, (vals, idle)) in by_tasks {
        let Ok(s) = Sample::new(&vals).map(|s| s.summary()) else {
            continue;
        };
        let per_task = s.mean / tasks as f64;
        let b = *base.get_or_insert(per_task);
        points.push(Point {
            tasks,
            n: s.n,
            mean: s.mean,
            median: s.median,
            stddev: s.stddev,
            min: s.min,
            max: s.max,
            per_task,
            efficiency: if b > 0.0 { per_task / b } else { 0.0 },
            idle: (!idle.is_empty()).then(|| idle.iter().sum::<f64>() / idle.len() as f64),
        });
    }
    points
}

/// The scaling model of every scale benchmark among `cells`; `origins[i]`
/// (when given) is whose data cell `i` is: a curve per origin and mode.
pub fn build(cells: &[StoredCell], origins: &[super::origin::Origin]) -> Vec<Scaling> {
    // (bench, context) -> (origin, mode) -> tasks -> values
    type Curves = IndexMap<(super::origin::Origin, String), IndexMap<u32, (Vec<f64>, Vec<f64>)>>;
    let mut acc: IndexMap<(String, Vec<String>), Curves> = IndexMap::new();
    let mut warned: IndexMap<(String, Vec<String>), Vec<String>> = IndexMap::new();
    for (i, (cell, samples)) in cells.iter().enumerate() {
        let origin = origins.get(i).cloned().unwrap_or_default();
        let warning = cell.notes.get("warning").cloned();
        let cell = &cell.info;
        if cell.kind != Kind::Scale {
            continue;
        }
        let Some(tasks) = cell.params.get("tasks").and_then(|v| v.as_u64()) else {
            continue;
        };
        let mode = cell
            .params
            .get("mode")
            .map(super::json_label)
            .unwrap_or_else(|| "processes".into());
        let context = context_of(cell);
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| s.metric() == "ops/s")
            .map(|s| s.value)
            .collect();
        let idle = samples
            .iter()
            .filter(|s| s.metric() == "idle")
            .map(|s| s.value);
        if let Some(w) = warning {
            super::push_unique(
                warned
                    .entry((cell.bench.clone(), context.clone()))
                    .or_default(),
                w,
            );
        }
        let point = acc
            .entry((cell.bench.clone(), context))
            .or_default()
            .entry((origin, mode))
            .or_default()
            .entry(tasks as u32)
            .or_default();
        point.0.extend(values);
        point.1.extend(idle);
    }
    let mut out = Vec::new();
    for ((bench, context), curves) in acc {
        let warnings = warned
            .get(&(bench.clone(), context.clone()))
            .cloned()
            .unwrap_or_default();
        let mut series = Vec::new();
        let order: Vec<super::origin::Origin> = curves.keys().map(|k| k.0.clone()).collect();
        for ((origin, mode), by_tasks) in curves {
            let points = points(by_tasks);
            let flattens_at = points
                .iter()
                .skip(1)
                .find(|p| p.efficiency < FLATTEN_BELOW)
                .map(|p| p.tasks);
            // A cell with no sample (failed, e.g. elided by the guard) has
            // no point; a curve without points is no curve.
            if !points.is_empty() {
                series.push(Series {
                    mode,
                    origin,
                    points,
                    flattens_at,
                });
            }
        }
        if series.is_empty() {
            continue;
        }
        // By origin as first seen, processes before threads within one, as
        // in will-it-scale's output.
        series.sort_by_key(|x| (order.iter().position(|o| *o == x.origin), x.mode.clone()));
        // An origin every curve shares says nothing on the chart.
        if series.iter().all(|x| x.origin == series[0].origin) {
            for x in &mut series {
                x.origin.clear();
            }
        }
        out.push(Scaling {
            bench,
            context,
            series,
            warnings,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Document, Format, Report, render};
    use crate::testing::{run_data, stored_cell};

    fn cell(id: i64, mode: &str, tasks: u32, vals: &[f64]) -> StoredCell {
        stored_cell(
            id,
            "getppid1",
            Kind::Scale,
            serde_json::json!({"mode": mode, "tasks": tasks}),
            &[("mode", mode)],
            &["tasks"],
            crate::record::Metric::new("ops/s", "ops/s", crate::record::Direction::Higher),
            vals,
        )
    }

    fn text(cells: Vec<StoredCell>) -> String {
        let r = Report::of_run(run_data(cells));
        render(&Document::Reports(&[r]), Format::Text).unwrap()
    }

    #[test]
    fn efficiency_and_flattening() {
        let cells = vec![
            cell(1, "processes", 1, &[100.0, 100.0]),
            cell(2, "processes", 2, &[190.0, 190.0]),
            cell(3, "processes", 4, &[200.0, 200.0]),
            cell(4, "threads", 1, &[100.0, 100.0]),
            cell(5, "threads", 2, &[200.0, 200.0]),
        ];
        let t = build(&cells, &[]);
        assert_eq!(t.len(), 1);
        let p = &t[0].series[0];
        assert_eq!(p.mode, "processes");
        assert!((p.points[1].efficiency - 0.95).abs() < 1e-9);
        assert!((p.points[2].efficiency - 0.5).abs() < 1e-9);
        assert_eq!(p.flattens_at, Some(4));
        assert_eq!(t[0].series[1].flattens_at, None);
        let text = text(cells);
        assert!(
            text.contains(
                "flattens (eff < 0.80): processes at 4 tasks; threads not within 1..2 tasks"
            ),
            "{text}"
        );
        let scaling = &text[text.find("scaling tables").unwrap()..];
        assert!(scaling.lines().all(|l| l.len() <= 80), "{text}");
        assert!(
            text.contains("    4 |           200   0.0  0.50 |             -"),
            "{text}"
        );
    }

    #[test]
    fn a_cell_without_samples_leaves_no_heading() {
        // elided.c failed (the guard's "loop body optimised away?"): no
        // sample, so no table, not an empty "scaling:" heading.
        let mut elided = cell(2, "processes", 1, &[]);
        elided.0.info.bench = "elided.c".into();
        let cells = vec![cell(1, "processes", 1, &[100.0, 110.0]), elided];
        let t = build(&cells, &[]);
        assert_eq!(t.len(), 1);
        assert_eq!(t[0].bench, "getppid1");
        let out = text(cells);
        let scaling = &out[out.find("scaling tables").unwrap()..];
        assert!(!scaling.contains("elided"), "{out}");
        insta::assert_snapshot!("scaling_without_the_failed_cell", scaling);
        // Only failed cells: no scaling section at all.
        let mut only = cell(3, "threads", 2, &[]);
        only.0.info.bench = "elided.c".into();
        assert!(build(&[only.clone()], &[]).is_empty());
        assert!(!text(vec![only]).contains("scaling"));
    }

    #[test]
    fn an_oversubscribed_cell_warns_once_per_chart() {
        let mut a = cell(1, "processes", 2, &[100.0]);
        let mut b = cell(2, "threads", 2, &[100.0]);
        for c in [&mut a, &mut b] {
            c.0.notes.insert(
                "warning".into(),
                "oversubscribed: 2 tasks on 1 allowed CPU(s)".into(),
            );
        }
        let t = build(&[cell(3, "processes", 1, &[60.0]), a, b], &[]);
        assert_eq!(
            t[0].warnings,
            ["oversubscribed: 2 tasks on 1 allowed CPU(s)"]
        );
    }

    #[test]
    fn nothing_for_other_kinds() {
        let mut c = cell(1, "processes", 1, &[1.0]);
        c.0.info.kind = Kind::Micro;
        assert!(build(&[c.clone()], &[]).is_empty());
        assert!(!text(vec![c]).contains("scaling"));
    }
}
