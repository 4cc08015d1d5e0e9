//! SQLite backend (rusqlite, bundled SQLite). WAL journal so readers never
//! block the runner; every sample insert is its own committed transaction.
//! The schema is versioned with `PRAGMA user_version`; each entry of
//! [`MIGRATIONS`] moves it one version up.

use anyhow::{Context, bail};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;

use super::{
    CampaignData, CampaignRow, CellRec, FailureRec, NewRun, RunData, RunRow, SampleRec, Store,
};

/// Schema migrations, applied in order; index + 1 = user_version after it.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    plan_text TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (name, plan_hash)
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER REFERENCES campaigns(id),
    host TEXT NOT NULL,
    started REAL NOT NULL,
    ended REAL,
    status TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    config TEXT NOT NULL,
    overhead_ns REAL NOT NULL
);
CREATE TABLE cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    bench TEXT NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    params TEXT NOT NULL,
    factors TEXT NOT NULL,
    label_params TEXT NOT NULL,
    metrics TEXT NOT NULL,
    placement TEXT,
    notes TEXT NOT NULL
);
CREATE INDEX cells_run ON cells(run_id);
CREATE TABLE samples (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    value REAL NOT NULL,
    round INTEGER NOT NULL,
    t REAL NOT NULL
);
CREATE INDEX samples_cell ON samples(cell_id);
CREATE INDEX samples_run ON samples(run_id);
"#,
    // 2: campaigns across reboots. A cell remembers the probe readings its
    // samples were taken under; failed samples are kept with their cause.
    r#"
ALTER TABLE cells ADD COLUMN readings TEXT NOT NULL DEFAULT '{}';
CREATE INDEX cells_key ON cells(key);
CREATE INDEX runs_campaign ON runs(campaign_id);
CREATE TABLE failures (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    round INTEGER NOT NULL,
    t REAL NOT NULL,
    message TEXT NOT NULL
);
CREATE INDEX failures_run ON failures(run_id);
"#,
];

pub struct SqliteStore {
    conn: Connection,
}

impl SqliteStore {
    pub fn open(path: &Path) -> anyhow::Result<SqliteStore> {
        if let Some(dir) = path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        // NORMAL in WAL mode: a committed transaction survives the process
        // being killed; only power loss can drop the last commits.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut s = SqliteStore { conn };
        s.migrate()?;
        Ok(s)
    }

    fn migrate(&mut self) -> anyhow::Result<()> {
        let version: i64 = self
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))?;
        if version as usize > MIGRATIONS.len() {
            bail!(
                "the store has schema version {version}, newer than this kbench knows ({}); upgrade kbench",
                MIGRATIONS.len()
            );
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
            let tx = self.conn.transaction()?;
            tx.execute_batch(sql)
                .with_context(|| format!("schema migration {}", i + 1))?;
            tx.pragma_update(None, "user_version", (i + 1) as i64)?;
            tx.commit()?;
        }
        Ok(())
    }

    fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
        Ok(RunRow {
            id: r.get(0)?,
            campaign: r.get(1)?,
            host: r.get(2)?,
            started: r.get(3)?,
            ended: r.get(4)?,
            status: r.get(5)?,
            cells: r.get(6)?,
            samples: r.get(7)?,
            overhead_ns: r.get(8)?,
        })
    }
}

const RUN_SELECT: &str = "SELECT r.id, c.name, r.host, r.started, r.ended, r.status,
    (SELECT COUNT(*) FROM cells WHERE run_id = r.id),
    (SELECT COUNT(*) FROM samples WHERE run_id = r.id),
    r.overhead_ns
    FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id";

fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("serialisable")
}

impl Store for SqliteStore {
    fn campaign(&mut self, name: &str, plan_hash: &str, plan_text: &str) -> anyhow::Result<i64> {
        let found: Option<i64> = self
            .conn
            .query_row(
                "SELECT id FROM campaigns WHERE name = ?1 AND plan_hash = ?2",
                params![name, plan_hash],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = found {
            return Ok(id);
        }
        self.conn.execute(
            "INSERT INTO campaigns (name, plan_hash, plan_text, created) VALUES (?1, ?2, ?3, ?4)",
            params![name, plan_hash, plan_text, crate::runner::unix_now()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        self.conn.execute(
            "INSERT INTO runs (campaign_id, host, started, status, fingerprint, config, overhead_ns)
             VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6)",
            params![
                run.campaign,
                run.host,
                run.started,
                run.fingerprint,
                run.config,
                run.overhead_ns
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn add_cell(&mut self, c: &CellRec) -> anyhow::Result<i64> {
        self.conn.execute(
            "INSERT INTO cells (run_id, key, bench, source, kind, params, factors, label_params, metrics, placement, notes, readings)
             VALUES (?1, ?2, ?3, ?11, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?12)",
            params![
                c.run_id,
                c.key,
                c.bench,
                c.kind,
                json_text(&c.params),
                json_text(&c.factors),
                json_text(&c.label_params),
                json_text(&c.metrics),
                c.placement,
                json_text(&c.notes),
                c.source,
                if c.readings.is_null() {
                    "{}".to_string()
                } else {
                    json_text(&c.readings)
                }
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &serde_json::Value,
    ) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE cells SET placement = ?2, notes = ?3 WHERE id = ?1",
            params![cell_id, placement, json_text(notes)],
        )?;
        Ok(())
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut st = tx.prepare_cached(
                "INSERT INTO samples (run_id, cell_id, metric, unit, value, round, t)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for s in samples {
                st.execute(params![
                    run_id, s.cell_id, s.metric, s.unit, s.value, s.round, s.t
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: &str) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE runs SET ended = ?2, status = ?3 WHERE id = ?1",
            params![run_id, ended, status],
        )?;
        Ok(())
    }

    fn list_runs(&self) -> anyhow::Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(&format!("{RUN_SELECT} ORDER BY r.id"))?;
        let rows = st.query_map([], Self::run_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn last_run_id(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))?)
    }

    fn load_run(&self, run_id: i64) -> anyhow::Result<RunData> {
        let run = self
            .conn
            .query_row(
                &format!("{RUN_SELECT} WHERE r.id = ?1"),
                [run_id],
                Self::run_row,
            )
            .optional()?
            .ok_or_else(|| crate::error::bad_input!("no run {run_id} in the store"))?;
        let (fp, config): (String, String) = self.conn.query_row(
            "SELECT fingerprint, config FROM runs WHERE id = ?1",
            [run_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let cells = self.cells_where("c.run_id = ?1", run_id)?;
        let failures = self.failures_where("f.run_id = ?1", run_id)?;
        Ok(RunData {
            run,
            fingerprint: serde_json::from_str(&fp).unwrap_or(serde_json::Value::Null),
            config: serde_json::from_str(&config).unwrap_or(serde_json::Value::Null),
            cells,
            failures,
        })
    }

    fn campaigns(&self, name: Option<&str>) -> anyhow::Result<Vec<CampaignRow>> {
        let mut st = self.conn.prepare(
            "SELECT id, name, plan_hash, plan_text, created FROM campaigns
             WHERE ?1 IS NULL OR name = ?1 ORDER BY id",
        )?;
        let rows = st.query_map([name], |r| {
            Ok(CampaignRow {
                id: r.get(0)?,
                name: r.get(1)?,
                plan_hash: r.get(2)?,
                plan_text: r.get(3)?,
                created: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn load_campaign(&self, id: i64) -> anyhow::Result<CampaignData> {
        let campaign = self
            .campaigns(None)?
            .into_iter()
            .find(|c| c.id == id)
            .ok_or_else(|| crate::error::bad_input!("no campaign {id} in the store"))?;
        let mut st = self.conn.prepare(&format!(
            "{RUN_SELECT} WHERE r.campaign_id = ?1 ORDER BY r.id"
        ))?;
        let runs = st
            .query_map([id], Self::run_row)?
            .collect::<Result<_, _>>()?;
        let cond = "c.run_id IN (SELECT id FROM runs WHERE campaign_id = ?1)";
        let (fp, config): (String, String) = self
            .conn
            .query_row(
                "SELECT fingerprint, config FROM runs WHERE campaign_id = ?1 ORDER BY id DESC LIMIT 1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .unwrap_or_default();
        let parse = |s: &str| serde_json::from_str(s).unwrap_or(serde_json::Value::Null);
        Ok(CampaignData {
            fingerprint: parse(&fp),
            config: parse(&config),
            campaign,
            runs,
            cells: self.cells_where(cond, id)?,
            failures: self.failures_where(
                "f.run_id IN (SELECT id FROM runs WHERE campaign_id = ?1)",
                id,
            )?,
        })
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        self.conn.execute(
            "INSERT INTO failures (run_id, cell_id, round, t, message) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![f.run_id, f.cell_id, f.round, f.t, f.message],
        )?;
        Ok(())
    }
}

impl SqliteStore {
    /// Cells matching `cond` (on alias `c`, one `?1` parameter) with their
    /// samples, in insertion order.
    fn cells_where(&self, cond: &str, arg: i64) -> anyhow::Result<Vec<(CellRec, Vec<SampleRec>)>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT c.id, c.run_id, c.key, c.bench, c.kind, c.params, c.factors, c.label_params,
                    c.metrics, c.placement, c.notes, c.source, c.readings
             FROM cells c WHERE {cond} ORDER BY c.id"
        ))?;
        let cells: Vec<CellRec> = st
            .query_map([arg], |r| {
                let j = |i: usize| -> rusqlite::Result<serde_json::Value> {
                    let s: String = r.get(i)?;
                    Ok(serde_json::from_str(&s).unwrap_or(serde_json::Value::Null))
                };
                let labels: String = r.get(7)?;
                let metrics: String = r.get(8)?;
                Ok(CellRec {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    key: r.get(2)?,
                    bench: r.get(3)?,
                    kind: r.get(4)?,
                    params: j(5)?,
                    factors: j(6)?,
                    label_params: serde_json::from_str(&labels).unwrap_or_default(),
                    metrics: serde_json::from_str(&metrics).unwrap_or_default(),
                    placement: r.get(9)?,
                    notes: j(10)?,
                    source: r.get(11)?,
                    readings: j(12)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        // Driven by the cells (index cells_run) with each cell's samples
        // from index samples_cell, the rows come out in (cell, id) order
        // without a sort: 10^6 samples load in a fraction of a second.
        let mut st = self.conn.prepare(&format!(
            "SELECT s.cell_id, s.metric, s.unit, s.value, s.round, s.t
             FROM cells c JOIN samples s ON s.cell_id = c.id WHERE {cond} ORDER BY c.id, s.id"
        ))?;
        let mut by_cell: std::collections::HashMap<i64, Vec<SampleRec>> =
            std::collections::HashMap::with_capacity(cells.len());
        let mut rows = st.query([arg])?;
        // Metric and unit names repeat on every row: share one allocation.
        let mut names: Vec<std::sync::Arc<str>> = Vec::new();
        let mut intern = |s: &str| -> std::sync::Arc<str> {
            match names.iter().find(|n| &***n == s) {
                Some(n) => n.clone(),
                None => {
                    let n: std::sync::Arc<str> = s.into();
                    names.push(n.clone());
                    n
                }
            }
        };
        while let Some(r) = rows.next()? {
            let metric = intern(r.get_ref(1)?.as_str()?);
            let unit = intern(r.get_ref(2)?.as_str()?);
            by_cell.entry(r.get(0)?).or_default().push(SampleRec {
                cell_id: r.get(0)?,
                metric,
                unit,
                value: r.get(3)?,
                round: r.get(4)?,
                t: r.get(5)?,
            });
        }
        Ok(cells
            .into_iter()
            .map(|c| {
                let mine = by_cell.remove(&c.id).unwrap_or_default();
                (c, mine)
            })
            .collect())
    }

    fn failures_where(&self, cond: &str, arg: i64) -> anyhow::Result<Vec<FailureRec>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT f.run_id, f.cell_id, f.round, f.t, f.message FROM failures f
             WHERE {cond} ORDER BY f.id"
        ))?;
        let rows = st.query_map([arg], |r| {
            Ok(FailureRec {
                run_id: r.get(0)?,
                cell_id: r.get(1)?,
                round: r.get(2)?,
                t: r.get(3)?,
                message: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/k.db");
        let mut s = SqliteStore::open(&path).unwrap();
        let run = s
            .begin_run(&NewRun {
                campaign: None,
                host: "h".into(),
                started: 1.0,
                fingerprint: "{}".into(),
                config: "{}".into(),
                overhead_ns: 0.3,
            })
            .unwrap();
        let cell = s
            .add_cell(&CellRec {
                id: 0,
                run_id: run,
                key: "getppid".into(),
                bench: "getppid".into(),
                source: "getppid".into(),
                kind: "micro".into(),
                params: serde_json::json!({}),
                factors: serde_json::json!({}),
                label_params: vec![],
                metrics: vec![],
                placement: None,
                notes: serde_json::json!({}),
                readings: serde_json::json!({"cmdline.nopti": "absent"}),
            })
            .unwrap();
        let smp = SampleRec {
            cell_id: cell,
            metric: "ns/op".into(),
            unit: "ns".into(),
            value: 100.0,
            round: 0,
            t: 2.0,
        };
        s.add_samples(run, &[smp.clone(), smp]).unwrap();
        drop(s);
        // Reopening does not re-run migrations.
        let s = SqliteStore::open(&path).unwrap();
        let d = s.load_run(run).unwrap();
        assert_eq!(d.run.samples, 2);
        assert_eq!(d.cells[0].1.len(), 2);
        assert_eq!(d.cells[0].0.readings["cmdline.nopti"], "absent");
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
    }
}
