//! Scaling tables for scale benchmarks (will-it-scale style): per testcase,
//! ops/s against the task count for each mode, the per-task efficiency
//! `ops(n) / (n * ops(1))`, and the task count where the curve flattens
//! (the first whose efficiency falls below [`FLATTEN_BELOW`]).
//!
//! [`build`] makes the model (series of points, serialisable, ready for
//! the SVG scaling curves of the reports issue); [`render`] prints it as
//! plain text within 80 columns.

use indexmap::IndexMap;
use serde::Serialize;
use std::fmt::Write;

use super::RunReport;
use crate::stats::Summary;

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
}

/// One curve: one mode under one context.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub mode: String,
    pub points: Vec<Point>,
    /// First task count whose efficiency is below [`FLATTEN_BELOW`].
    pub flattens_at: Option<u32>,
}

/// All curves of one testcase under one combination of other factors and
/// parameters (e.g. one kernel).
#[derive(Clone, Debug, Serialize)]
pub struct Scaling {
    pub bench: String,
    /// Other factor values and parameters, `name=value`.
    pub context: Vec<String>,
    pub series: Vec<Series>,
}

/// The scaling model of every scale benchmark in the run.
pub fn build(r: &RunReport) -> Vec<Scaling> {
    // (bench, context) -> mode -> tasks -> values
    type Curves = IndexMap<String, IndexMap<u32, Vec<f64>>>;
    let mut acc: IndexMap<(String, Vec<String>), Curves> = IndexMap::new();
    for (cell, samples) in &r.data.cells {
        if cell.kind != "scale" {
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
        let mut context: Vec<String> = Vec::new();
        if let Some(f) = cell.factors.as_object() {
            for (k, v) in f {
                if k != "mode" && k != "tasks" {
                    context.push(format!("{k}={}", super::json_label(v)));
                }
            }
        }
        for p in &cell.label_params {
            if p != "mode" && p != "tasks" {
                context.push(format!("{p}={}", super::json_label(&cell.params[p])));
            }
        }
        let values: Vec<f64> = samples
            .iter()
            .filter(|s| &*s.metric == "ops/s")
            .map(|s| s.value)
            .collect();
        acc.entry((cell.bench.clone(), context))
            .or_default()
            .entry(mode)
            .or_default()
            .entry(tasks as u32)
            .or_default()
            .extend(values);
    }
    let mut out = Vec::new();
    for ((bench, context), curves) in acc {
        let mut series = Vec::new();
        for (mode, mut by_tasks) in curves {
            by_tasks.sort_keys();
            let mut points = Vec::new();
            let mut base: Option<f64> = None;
            for (tasks, vals) in by_tasks {
                let Some(s) = Summary::of(&vals) else {
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
                });
            }
            let flattens_at = points
                .iter()
                .skip(1)
                .find(|p| p.efficiency < FLATTEN_BELOW)
                .map(|p| p.tasks);
            series.push(Series {
                mode,
                points,
                flattens_at,
            });
        }
        // processes before threads, as in will-it-scale's output.
        series.sort_by(|a, b| a.mode.cmp(&b.mode));
        out.push(Scaling {
            bench,
            context,
            series,
        });
    }
    out
}

fn num(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.4}e9", x / 1e9)
    } else {
        format!("{x:.0}")
    }
}

/// The scaling tables as text; empty when the run has no scale cells.
pub fn render(r: &RunReport) -> String {
    let tables = build(r);
    let mut o = String::new();
    if !tables.is_empty() {
        o.push_str(
            "\nscaling tables: ops/s = mean of the intervals (sd% = stddev/mean),\n\
             eff = ops(n) / (n * ops(1)), the per-task efficiency\n",
        );
    }
    for t in &tables {
        o.push('\n');
        let ctx = if t.context.is_empty() {
            String::new()
        } else {
            format!(" [{}]", t.context.join(", "))
        };
        let _ = writeln!(o, "scaling: {}{ctx}", t.bench);
        let mut head = String::from("tasks");
        for s in &t.series {
            let _ = write!(
                head,
                " | {:>13} {:>5} {:>5}",
                format!("{} ops/s", short(&s.mode)),
                "sd%",
                "eff"
            );
        }
        let _ = writeln!(o, "{head}");
        let mut all: Vec<u32> = t
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.tasks))
            .collect();
        all.sort_unstable();
        all.dedup();
        for n in all {
            let mut line = format!("{n:>5}");
            for s in &t.series {
                match s.points.iter().find(|p| p.tasks == n) {
                    Some(p) => {
                        let sd = if p.mean > 0.0 {
                            100.0 * p.stddev / p.mean
                        } else {
                            0.0
                        };
                        let _ = write!(
                            line,
                            " | {:>13} {:>5.1} {:>5.2}",
                            num(p.mean),
                            sd,
                            p.efficiency
                        );
                    }
                    None => {
                        let _ = write!(line, " | {:>13} {:>5} {:>5}", "-", "", "");
                    }
                }
            }
            let _ = writeln!(o, "{line}");
        }
        let ns: Vec<usize> = t
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.n))
            .collect();
        if let (Some(lo), Some(hi)) = (ns.iter().min(), ns.iter().max()) {
            let n = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}..{hi}")
            };
            let _ = writeln!(o, "  intervals per point: {n}");
        }
        if t.series.iter().all(|s| s.points.len() < 2) {
            continue; // one task count: no curve to judge
        }
        let flat: Vec<String> = t
            .series
            .iter()
            .map(|s| {
                let range = match (s.points.first(), s.points.last()) {
                    (Some(a), Some(b)) => format!("{}..{}", a.tasks, b.tasks),
                    _ => "-".into(),
                };
                let base = match s.points.first() {
                    Some(p) if p.tasks != 1 => format!(" (eff relative to {} tasks)", p.tasks),
                    _ => String::new(),
                };
                match s.flattens_at {
                    Some(n) => format!("{} at {n} tasks{base}", s.mode),
                    None => format!("{} not within {range} tasks{base}", s.mode),
                }
            })
            .collect();
        let _ = writeln!(
            o,
            "  flattens (eff < {FLATTEN_BELOW:.2}): {}",
            flat.join("; ")
        );
    }
    o
}

fn short(mode: &str) -> &str {
    match mode {
        "processes" => "proc",
        "threads" => "thread",
        m => m,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{CellRec, MetricRec, RunData, RunRow, SampleRec};

    fn cell(id: i64, mode: &str, tasks: u32, vals: &[f64]) -> (CellRec, Vec<SampleRec>) {
        (
            CellRec {
                id,
                run_id: 1,
                key: format!("k{id}"),
                bench: "getppid1".into(),
                source: "getppid1".into(),
                kind: "scale".into(),
                params: serde_json::json!({"mode": mode, "tasks": tasks}),
                factors: serde_json::json!({"mode": mode}),
                label_params: vec!["tasks".into()],
                metrics: vec![MetricRec {
                    name: "ops/s".into(),
                    unit: "ops/s".into(),
                    direction: "higher".into(),
                }],
                placement: None,
                notes: serde_json::json!({}),
                readings: serde_json::json!({}),
            },
            vals.iter()
                .map(|&v| SampleRec {
                    cell_id: id,
                    metric: "ops/s".into(),
                    unit: "ops/s".into(),
                    value: v,
                    round: 0,
                    t: 0.0,
                })
                .collect(),
        )
    }

    fn report(cells: Vec<(CellRec, Vec<SampleRec>)>) -> RunReport {
        RunReport::build(RunData {
            run: RunRow {
                id: 1,
                campaign: None,
                host: "h".into(),
                started: 0.0,
                ended: None,
                status: "done".into(),
                cells: cells.len() as i64,
                samples: 0,
                overhead_ns: 0.0,
            },
            fingerprint: serde_json::json!({}),
            config: serde_json::json!({}),
            cells,
            failures: Vec::new(),
        })
    }

    #[test]
    fn efficiency_and_flattening() {
        let r = report(vec![
            cell(1, "processes", 1, &[100.0, 100.0]),
            cell(2, "processes", 2, &[190.0, 190.0]),
            cell(3, "processes", 4, &[200.0, 200.0]),
            cell(4, "threads", 1, &[100.0, 100.0]),
            cell(5, "threads", 2, &[200.0, 200.0]),
        ]);
        let t = build(&r);
        assert_eq!(t.len(), 1);
        let p = &t[0].series[0];
        assert_eq!(p.mode, "processes");
        assert!((p.points[1].efficiency - 0.95).abs() < 1e-9);
        assert!((p.points[2].efficiency - 0.5).abs() < 1e-9);
        assert_eq!(p.flattens_at, Some(4));
        assert_eq!(t[0].series[1].flattens_at, None);
        let text = render(&r);
        assert!(
            text.contains(
                "flattens (eff < 0.80): processes at 4 tasks; threads not within 1..2 tasks"
            ),
            "{text}"
        );
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        assert!(
            text.contains("    4 |           200   0.0  0.50 |             -"),
            "{text}"
        );
    }

    #[test]
    fn nothing_for_other_kinds() {
        let mut c = cell(1, "processes", 1, &[1.0]);
        c.0.kind = "micro".into();
        assert_eq!(render(&report(vec![c])), "");
    }
}
