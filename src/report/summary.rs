//! The last section of the report of a run with two or more variants
//! (`kbench run 'sleep 0.01' 'sleep 0.013'`, `spin:work=1000
//! spin:work=1050`): each variant's primary metric, the first given (the
//! baseline) first, so the answer to "which is faster" is at the end of
//! the output where a hyperfine user looks for it.
//!
//! It holds only what the report's tables already hold (each cell's median
//! of its first metric); the verdict of each contender against the
//! baseline, with its interval, belongs to the design-aware analysis of
//! `stats/` and joins this model from there, never from a second path.

use serde::Serialize;

use super::Group;
use crate::record::Direction;

/// Most variants a summary lists; a bigger matrix is read in its tables
/// or a `--table` layout.
pub const MAX_VARIANTS: usize = 12;

#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// The primary metric every variant shares (a command's `real`, a
    /// micro-benchmark's `ns/op`).
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// In the order given: the first is the baseline.
    pub variants: Vec<Variant>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    /// As the command line spells it: `spin:work=1000`, `sleep 0.01`.
    pub name: String,
    pub n: usize,
    pub median: f64,
}

/// The summary of a report's tables: every cell's first metric, when
/// there are 2..=[`MAX_VARIANTS`] cells and their first metrics agree in
/// name and unit.
pub fn of_groups(groups: &[Group]) -> Option<RunSummary> {
    let mut benches: Vec<&str> = Vec::new();
    let mut firsts: Vec<&Group> = Vec::new();
    for g in groups {
        // A bench's first group is its first metric (cells, then metrics,
        // in the order measured).
        if !benches.contains(&g.bench.as_str()) {
            benches.push(&g.bench);
            firsts.push(g);
        }
    }
    let head = firsts.first()?;
    if firsts
        .iter()
        .any(|g| g.metric != head.metric || g.unit != head.unit)
    {
        return None;
    }
    let variants: Vec<Variant> = firsts
        .iter()
        .flat_map(|g| {
            g.rows.iter().map(|r| {
                let named: Vec<String> = g
                    .columns
                    .iter()
                    .zip(&r.labels)
                    .filter(|(_, l)| *l != "-")
                    .map(|(c, l)| format!("{c}={l}"))
                    .collect();
                Variant {
                    name: if named.is_empty() {
                        g.bench.clone()
                    } else {
                        format!("{}:{}", g.bench, named.join(","))
                    },
                    n: r.summary.n,
                    median: r.summary.median,
                }
            })
        })
        .collect();
    (2..=MAX_VARIANTS)
        .contains(&variants.len())
        .then(|| RunSummary {
            metric: head.metric.clone(),
            unit: head.unit.clone(),
            direction: head.direction,
            variants,
        })
}

/// The section in plain text, within 80 columns.
pub fn text(o: &mut String, s: &RunSummary) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "summary: {} ({}), median of each, the baseline first:",
        s.metric, s.direction
    );
    let values: Vec<String> = s
        .variants
        .iter()
        .map(|v| super::human::value(v.median, &s.unit, None, false))
        .collect();
    let vw = values.iter().map(|v| v.len()).max().unwrap_or(0);
    let room = super::text::WIDTH.saturating_sub(vw + 20);
    let names: Vec<String> = s
        .variants
        .iter()
        .map(|v| super::grid::clip(&v.name, room))
        .collect();
    let nw = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    for ((v, name), value) in s.variants.iter().zip(&names).zip(&values) {
        let _ = writeln!(o, "  {name:<nw$}  {value:>vw$}  ({} samples)", v.n);
    }
}
