//! Every stored sample as one tidy row (run, host, bench, factors,
//! parameters, metric, unit, round, value): the model behind `--format
//! csv`, for R, pandas or a spreadsheet.

use indexmap::IndexMap;
use serde::Serialize;
use std::sync::Arc;

use crate::store::{RunRow, StoredCell};

/// The columns one cell gives each of its samples.
#[derive(Clone, Debug, Serialize)]
pub struct CellCols {
    pub run: i64,
    pub host: Arc<str>,
    pub bench: String,
    /// Values of [`SampleTable::factors`], `""` where the cell has none.
    pub factors: Vec<String>,
    /// Values of [`SampleTable::params`] (sizes as `2k`).
    pub params: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SampleRow {
    /// Index into [`SampleTable::cells`].
    pub cell: usize,
    pub metric: &'static str,
    pub unit: &'static str,
    pub round: u32,
    pub seq: u32,
    pub value: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SampleTable {
    pub factors: Vec<String>,
    pub params: Vec<String>,
    pub cells: Vec<CellCols>,
    pub rows: Vec<SampleRow>,
}

/// The samples of `cells`, the hosts taken from `runs`.
pub fn build(cells: &[StoredCell], runs: &[RunRow]) -> SampleTable {
    let mut t = columns(cells, runs);
    t.rows
        .reserve_exact(cells.iter().map(|(_, s)| s.len()).sum());
    for (i, (_, samples)) in cells.iter().enumerate() {
        t.rows.extend(samples.iter().map(|s| SampleRow {
            cell: i,
            metric: s.metric(),
            unit: s.unit(),
            round: s.round,
            seq: s.seq,
            value: s.value,
        }));
    }
    t
}

/// The table of `cells` without its rows: the columns, and what each
/// cell gives each of its samples (`t.cells[i]` is `cells[i]`'s).
pub fn columns(cells: &[StoredCell], runs: &[RunRow]) -> SampleTable {
    let hosts: IndexMap<i64, Arc<str>> = runs
        .iter()
        .map(|r| (r.id, Arc::from(r.host.as_str())))
        .collect();
    let mut factors: Vec<String> = Vec::new();
    let mut params: Vec<String> = Vec::new();
    for (c, _) in cells {
        for k in c.info.factors.keys() {
            if !factors.contains(k) {
                factors.push(k.clone());
            }
        }
        for k in c.info.params.keys() {
            if !params.contains(k) && !factors.contains(k) {
                params.push(k.clone());
            }
        }
    }
    let unknown: Arc<str> = Arc::from("");
    let mut t = SampleTable {
        cells: Vec::with_capacity(cells.len()),
        rows: Vec::new(),
        factors,
        params,
    };
    for (c, _) in cells {
        t.cells.push(CellCols {
            run: c.run_id,
            host: hosts.get(&c.run_id).cloned().unwrap_or(unknown.clone()),
            bench: c.info.bench.clone(),
            factors: t
                .factors
                .iter()
                .map(|k| c.info.factors.get(k).cloned().unwrap_or_default())
                .collect(),
            params: t
                .params
                .iter()
                .map(|k| {
                    if c.info.params.contains_key(k) {
                        super::param_label(&c.info.source, &c.info.params, k)
                    } else {
                        String::new()
                    }
                })
                .collect(),
        });
    }
    t
}
