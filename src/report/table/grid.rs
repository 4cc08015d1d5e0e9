//! A layout's table as a [`Grid`] of strings for the text and Markdown
//! renderers, each value formatted by the renderer's own cell function;
//! and the scaling curves as one.

use super::{Column, Table, TableRow, Value};
use crate::report::fmt::grid::Grid;

/// Which numbers of a ratio table a grid shows.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// The table's own values (changes, ratios, means).
    Main,
    /// The means of a ratio table, before normalising.
    Means,
}

/// A table as a grid, each value formatted by `cell`.
pub fn of_table(t: &Table, panel: Panel, cell: &dyn Fn(&Value, &Column) -> String) -> Grid {
    let ncols = t.cols.len();
    let row = |r: &TableRow| -> (Vec<String>, Vec<String>) {
        let values = r
            .cells
            .iter()
            .enumerate()
            .map(|(i, v)| match v {
                Some(v) => cell(v, &t.cols[i % ncols.max(1)]),
                None => "-".to_string(),
            })
            .collect();
        (r.labels.clone(), values)
    };
    let mut rows: Vec<(Vec<String>, Vec<String>)> = t.rows.iter().map(row).collect();
    let summary_from = (panel == Panel::Main && !t.summary.is_empty()).then_some(rows.len());
    if panel == Panel::Main {
        rows.extend(t.summary.iter().map(row));
    }
    let mut col_head = Vec::new();
    for _ in &t.groups {
        // A column printed in one unit says it once, in its heading.
        col_head.extend(t.cols.iter().map(|c| match &c.shown_unit {
            Some(u) => format!("{} ({u})", c.label),
            None => c.label.clone(),
        }));
    }
    Grid {
        row_head: t.row_dims.clone(),
        groups: t.groups.iter().map(|g| (g.clone(), ncols)).collect(),
        col_head,
        rows,
        summary_from,
    }
}

/// A scaling table as a grid: one row per task count, an ops/s and an
/// efficiency column per mode (text and Markdown print the same grid).
pub fn of_scaling(s: &crate::report::scale::Scaling, unicode: bool) -> Grid {
    let mut tasks: Vec<u32> = s
        .series
        .iter()
        .flat_map(|x| x.points.iter().map(|p| p.tasks))
        .collect();
    tasks.sort_unstable();
    tasks.dedup();
    Grid {
        row_head: vec!["tasks".into()],
        groups: s.series.iter().map(|x| (x.label(), 2)).collect(),
        col_head: s
            .series
            .iter()
            .flat_map(|_| ["ops/s".to_string(), "eff".to_string()])
            .collect(),
        rows: tasks
            .iter()
            .map(|n| {
                let vals = s
                    .series
                    .iter()
                    .flat_map(|x| match x.points.iter().find(|p| p.tasks == *n) {
                        Some(p) => [
                            crate::report::fmt::human::value(p.mean, "ops/s", None, unicode),
                            format!("{:.2}", p.efficiency),
                        ],
                        None => ["-".into(), "-".into()],
                    })
                    .collect();
                (vec![n.to_string()], vals)
            })
            .collect(),
        summary_from: None,
    }
}
