//! Whose data a row holds: the host a run measured on, the file an
//! imported run came from, the run itself when asked. These are report
//! dimensions like factors (`--groups host`, `--rows import`,
//! `--groups run`), and a campaign's cells of different origin are kept
//! apart (two operating systems' curves are never averaged into one)
//! unless the reader asks for them pooled (`--pool`).

use std::collections::HashMap;

use indexmap::IndexMap;

use crate::store::{RunDetails, RunRow, StoredCell};

/// How a campaign's runs are merged into rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pooling {
    /// Runs of one origin (host, or imported file) merge; others stay
    /// apart.
    #[default]
    ByOrigin,
    /// Every run apart (a `run` dimension).
    ByRun,
    /// Every run merged, whatever its origin (`--pool`).
    All,
}

/// A run's origin as dimensions, `name -> value`, in display order.
pub type Origin = Vec<(String, String)>;

/// The prefix of an imported run's plan field (`import:FILE`).
const IMPORTED: &str = "import:";

/// The origin of one run: its host, or for an import the file it came
/// from (an import has no host kbench saw), its labels, and its id when
/// runs are kept apart.
pub fn of_run(run: &RunRow, details: Option<&RunDetails>, pooling: Pooling) -> Origin {
    let mut o = Origin::new();
    if pooling == Pooling::All {
        return o;
    }
    // Labels name an origin (`import --label os=freebsd`): an imported
    // run that has them is known by them rather than by its file, so two
    // files labelled alike are one origin.
    match details.and_then(|d| d.config.plan.strip_prefix(IMPORTED)) {
        Some(_) if !run.labels.is_empty() => {}
        Some(file) => o.push(("import".into(), file.to_string())),
        None => o.push(("host".into(), run.host.clone())),
    }
    o.extend(run.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    if pooling == Pooling::ByRun {
        o.push(("run".into(), run.id.to_string()));
    }
    o
}

/// The origin of every run, from the runs alone (imports read by host).
pub fn by_host(runs: &[RunRow], pooling: Pooling) -> HashMap<i64, Origin> {
    runs.iter()
        .map(|r| (r.id, of_run(r, None, pooling)))
        .collect()
}

/// `name=value, ...`: the origin as a label.
pub fn text(o: &Origin) -> String {
    o.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The origin dimensions whose value differs between `origins`.
pub fn varying(origins: &[Origin]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for o in origins {
        for (k, v) in o {
            let differs = origins
                .iter()
                .any(|x| x.iter().find(|(j, _)| j == k).map(|(_, w)| w) != Some(v));
            if differs && !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    out
}

/// A campaign's cells merged across its runs: one entry per cell key,
/// probe readings and origin (a cell measured under two system states,
/// or on two hosts, appears twice, each with only its own samples), with
/// the ids of the runs that measured each and its origin; hosts in name
/// order.
pub fn merge(
    cells: &[StoredCell],
    origins: &HashMap<i64, Origin>,
) -> (Vec<StoredCell>, Vec<Vec<i64>>, Vec<Origin>) {
    type Entry = (StoredCell, Vec<i64>, Origin);
    let mut merged: IndexMap<(String, String, String), Entry> = IndexMap::new();
    for (c, samples) in cells {
        let origin = origins.get(&c.run_id).cloned().unwrap_or_default();
        let k = (c.info.key.clone(), c.info.readings_text(), text(&origin));
        let ((cell, smp), runs, _) = merged
            .entry(k)
            .or_insert_with(|| ((c.clone(), Vec::new()), Vec::new(), origin));
        if cell.placement.is_none() {
            cell.placement = c.placement.clone();
        }
        smp.extend(samples.iter().cloned());
        if !samples.is_empty() {
            runs.push(c.run_id);
        }
    }
    // Hosts in name order, whatever order the store returned their runs
    // in (PostgreSQL and its SQLite copy read alike); a host's cells keep
    // their order.
    let host = |o: &Origin| {
        o.iter()
            .find(|(k, _)| k == "host")
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let mut entries: Vec<Entry> = merged.into_values().collect();
    entries.sort_by_key(|e| host(&e.2));
    let mut out = (Vec::new(), Vec::new(), Vec::new());
    for (c, r, o) in entries {
        out.0.push(c);
        out.1.push(r);
        out.2.push(o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Direction, Kind, Metric};
    use crate::testing::stored_cell;

    fn cell(id: i64, run: i64, vals: &[f64]) -> StoredCell {
        let mut c = stored_cell(
            id,
            "brk1",
            Kind::Scale,
            serde_json::json!({"mode": "processes", "tasks": 1}),
            &[],
            &["tasks"],
            Metric::new("ops/s", "ops/s", Direction::Higher),
            vals,
        );
        c.0.run_id = run;
        c.0.info.key = "brk1:tasks=1".into();
        c
    }

    #[test]
    fn cells_of_two_origins_stay_apart_unless_pooled() {
        let cells = vec![cell(1, 10, &[1.0, 1.1]), cell(2, 11, &[2.5, 2.6])];
        let apart: HashMap<i64, Origin> = [
            (10, vec![("import".into(), "fbsd.csv".into())]),
            (11, vec![("import".into(), "linux.csv".into())]),
        ]
        .into();
        let (m, runs, o) = merge(&cells, &apart);
        assert_eq!(m.len(), 2);
        assert_eq!(runs, vec![vec![10], vec![11]]);
        assert_eq!(text(&o[1]), "import=linux.csv");
        let pooled: HashMap<i64, Origin> = [(10, vec![]), (11, vec![])].into();
        let (m, runs, _) = merge(&cells, &pooled);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].1.len(), 4);
        assert_eq!(runs, vec![vec![10, 11]]);
    }

    #[test]
    fn hosts_stay_apart_and_runs_apart_when_asked() {
        let row = |id: i64, host: &str| RunRow {
            id,
            uuid: format!("u{id}"),
            campaign: Some("c".into()),
            host: host.into(),
            started: 0.0,
            ended: None,
            status: crate::record::RunStatus::Done,
            cells: 1,
            samples: 2,
            overhead_ns: 0.0,
            labels: Default::default(),
        };
        let runs = [row(10, "beta"), row(11, "alpha"), row(12, "alpha")];
        let cells = vec![
            cell(1, 10, &[1.0]),
            cell(2, 11, &[2.0]),
            cell(3, 12, &[3.0]),
        ];
        let (m, r, o) = merge(&cells, &by_host(&runs, Pooling::ByOrigin));
        assert_eq!(m.len(), 2, "a row per host");
        assert_eq!(r, vec![vec![11, 12], vec![10]], "alpha before beta");
        assert_eq!(varying(&o), ["host"]);
        let (m, _, o) = merge(&cells, &by_host(&runs, Pooling::ByRun));
        assert_eq!(m.len(), 3);
        assert_eq!(varying(&o), ["host", "run"]);
        assert_eq!(merge(&cells, &by_host(&runs, Pooling::All)).0.len(), 1);
        // Labels are origin: one host's runs labelled apart stay apart.
        let labelled = |id, os: &str| RunRow {
            labels: crate::record::parse_labels(&format!("os={os}")).unwrap(),
            ..row(id, "alpha")
        };
        let runs = [
            labelled(10, "freebsd"),
            labelled(11, "linux"),
            labelled(12, "linux"),
        ];
        let (m, r, o) = merge(&cells, &by_host(&runs, Pooling::ByOrigin));
        assert_eq!(m.len(), 2);
        assert_eq!(r, vec![vec![10], vec![11, 12]]);
        assert_eq!(varying(&o), ["os"]);
    }
}
