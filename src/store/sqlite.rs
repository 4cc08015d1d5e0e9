//! SQLite backend (rusqlite, bundled SQLite). WAL journal so readers never
//! block the runner; every write is its own committed transaction. The
//! schema is versioned with `PRAGMA user_version`; each entry of
//! [`MIGRATIONS`] moves it one version up, inside one transaction that
//! also re-reads the version, so two processes opening a new store at
//! once migrate it once.

use anyhow::{Context, bail};
use indexmap::IndexMap;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::Arc;

use super::{
    CampaignQuery, CampaignRow, CellProgress, CellRec, FailureRec, NewRun, RunDetails, RunRow,
    SampleRec, Scope, StoreRead, StoreWrite, StoredCell,
};
use crate::error::bad_input;
use crate::record::{CampaignKey, CellInfo, CellStatus, Kind, RunConfig, RunStatus};
use crate::system::Fingerprint;

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
    // 3: stable identities, so a replayed event stream adds nothing and
    // two writers never create one campaign twice. A campaign's generation
    // (the N of the old `HASH/N`) becomes a column of its identity, which
    // needs the table rebuilt (SQLite cannot drop a UNIQUE constraint).
    r#"
CREATE TABLE campaigns_v3 (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    generation INTEGER NOT NULL,
    plan_text TEXT NOT NULL,
    created REAL NOT NULL,
    UNIQUE (name, plan_hash, generation)
);
INSERT INTO campaigns_v3 (id, name, plan_hash, generation, plan_text, created)
    SELECT id, name,
        CASE WHEN instr(plan_hash, '/') > 0
            THEN substr(plan_hash, 1, instr(plan_hash, '/') - 1) ELSE plan_hash END,
        CASE WHEN instr(plan_hash, '/') > 0
            THEN CAST(substr(plan_hash, instr(plan_hash, '/') + 1) AS INTEGER) ELSE 1 END,
        plan_text, created
    FROM campaigns;
DROP TABLE campaigns;
ALTER TABLE campaigns_v3 RENAME TO campaigns;
ALTER TABLE runs ADD COLUMN uuid TEXT;
UPDATE runs SET uuid = 'legacy-' || id;
CREATE UNIQUE INDEX runs_uuid ON runs(uuid);
ALTER TABLE cells ADD COLUMN status TEXT;
UPDATE cells SET key = key || '#' || id
    WHERE id NOT IN (SELECT MIN(id) FROM cells GROUP BY run_id, key);
CREATE UNIQUE INDEX cells_identity ON cells(run_id, key);
ALTER TABLE samples ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;
UPDATE samples SET seq = r.n
    FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY cell_id, metric, round ORDER BY id) - 1 AS n
          FROM samples) AS r
    WHERE samples.id = r.id AND r.n > 0;
CREATE UNIQUE INDEX samples_identity ON samples(cell_id, metric, round, seq);
ALTER TABLE failures ADD COLUMN seq INTEGER;
UPDATE failures SET seq = id;
CREATE UNIQUE INDEX failures_identity ON failures(cell_id, seq);
"#,
    // 4: the process of a cell that took each sample (`--processes`).
    r#"
ALTER TABLE samples ADD COLUMN process INTEGER;
"#,
];

pub struct SqliteStore {
    conn: Connection,
    /// Campaign run locks held (`lock_campaign`), released on drop.
    locks: Vec<std::fs::File>,
}

/// Tables every kbench store has, from the first schema version on.
const KBENCH_TABLES: &[&str] = &["campaigns", "runs", "cells", "samples"];

/// How long a writer waits for another one before giving up.
const BUSY: std::time::Duration = std::time::Duration::from_secs(10);

/// What went wrong with a store file, as one line naming the path and the
/// cause. Input the user can fix (not a store, a directory, newer or
/// corrupt) exits 2; a busy or failing disk exits 1.
fn explain(path: &Path, e: rusqlite::Error) -> anyhow::Error {
    use rusqlite::ErrorCode as C;
    let p = path.display();
    match e.sqlite_error_code() {
        Some(C::NotADatabase) => bad_input!("{p}: not an SQLite database"),
        Some(C::DatabaseCorrupt) => bad_input!("{p}: the database is malformed (corrupt)"),
        Some(C::ReadOnly) => bad_input!("{p}: the store is read-only here"),
        Some(C::CannotOpen) => bad_input!("{p}: cannot open the store ({e})"),
        Some(C::DatabaseBusy | C::DatabaseLocked) => anyhow::anyhow!(
            "{p}: locked by another process for more than {} s",
            BUSY.as_secs()
        ),
        Some(C::DiskFull) => anyhow::anyhow!(
            "{p}: the disk is full; what was stored before is kept (free space, then `kbench run` the plan again to complete its campaign)"
        ),
        _ => anyhow::Error::new(e).context(format!("store {p}")),
    }
}

impl SqliteStore {
    /// Run `f` on the connection; an SQLite error comes back as one line
    /// naming the store and the cause ([`explain`]), so a full disk or a
    /// lock held too long mid-run reads as such, not as an SQLite code.
    fn write<T>(
        &mut self,
        f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>,
    ) -> anyhow::Result<T> {
        let r = f(&mut self.conn);
        r.map_err(|e| explain(Path::new(self.conn.path().unwrap_or(":memory:")), e))
    }

    /// Open the store at `path`; with `create`, make it (mode 0600, and
    /// its directory) when it does not exist. A file that is not a kbench
    /// store, or is newer than this kbench, is refused and left untouched.
    pub fn open(path: &Path, create: bool) -> anyhow::Result<SqliteStore> {
        let p = path.display();
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Err(bad_input!("{p}: is a directory, not a store")),
            Ok(m) if !m.is_file() => {
                return Err(bad_input!("{p}: not a regular file, so not a store"));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if !create {
                    return Err(bad_input!("{p}: no such store (`kbench run` creates one)"));
                }
                if let Some(dir) = path.parent()
                    && !dir.as_os_str().is_empty()
                {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| bad_input!("{}: cannot create: {e}", dir.display()))?;
                }
                use std::os::unix::fs::OpenOptionsExt;
                match std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                {
                    // Another process creating it at the same moment is fine.
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(bad_input!("{p}: cannot create the store: {e}")),
                }
            }
            Err(e) => return Err(bad_input!("{p}: {e}")),
        }
        use rusqlite::OpenFlags as F;
        let writable = std::fs::OpenOptions::new().write(true).open(path).is_ok();
        if !writable && create {
            return Err(bad_input!("{p}: the store is read-only here"));
        }
        let flags = if writable {
            F::SQLITE_OPEN_READ_WRITE
        } else {
            F::SQLITE_OPEN_READ_ONLY
        };
        let conn = Connection::open_with_flags(path, flags | F::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| explain(path, e))?;
        conn.busy_timeout(BUSY).map_err(|e| explain(path, e))?;
        Self::check_ours(&conn, path)?;
        if !writable {
            // Reports from a store shared read-only: no journal mode to
            // set, no migration possible.
            let version: i64 = conn
                .pragma_query_value(None, "user_version", |r| r.get(0))
                .map_err(|e| explain(path, e))?;
            if version as usize != MIGRATIONS.len() {
                return Err(bad_input!(
                    "{p}: read-only, and its schema (version {version}) needs upgrading to {}: open it once with write access",
                    MIGRATIONS.len()
                ));
            }
            return Ok(SqliteStore {
                conn,
                locks: Vec::new(),
            });
        }
        let mut s = SqliteStore {
            conn,
            locks: Vec::new(),
        };
        s.prepare()
            .map_err(|e| match e.downcast::<rusqlite::Error>() {
                Ok(e) => explain(path, e),
                Err(e) => e.context(format!("store {p}")),
            })?;
        Ok(s)
    }

    /// An empty store in memory: what a read-only command sees when the
    /// default store does not exist yet (nothing is created).
    pub fn empty() -> anyhow::Result<SqliteStore> {
        let mut s = SqliteStore {
            conn: Connection::open_in_memory()?,
            locks: Vec::new(),
        };
        s.prepare()?;
        Ok(s)
    }

    /// Refuse, before anything is written, a file that is not a kbench
    /// store or is newer than this kbench.
    fn check_ours(conn: &Connection, path: &Path) -> anyhow::Result<()> {
        let p = path.display();
        // One read transaction, so the version and the tables are read
        // from the same state: another process may be creating the store
        // at this very moment.
        let (version, tables) = (|| -> rusqlite::Result<(i64, Vec<String>)> {
            conn.execute_batch("BEGIN DEFERRED")?;
            let version = conn.pragma_query_value(None, "user_version", |r| r.get(0));
            let tables = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect());
            conn.execute_batch("COMMIT")?;
            Ok((version?, tables?))
        })()
        .map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            explain(path, e)
        })?;
        if version as usize > MIGRATIONS.len() {
            return Err(bad_input!(
                "{p}: the store has schema version {version}, newer than this kbench knows ({}); upgrade kbench",
                MIGRATIONS.len()
            ));
        }
        if version == 0 && !tables.is_empty() {
            return Err(bad_input!(
                "{p}: not a kbench store (it has tables kbench did not make: {})",
                tables.join(", ")
            ));
        }
        if version > 0
            && let Some(t) = KBENCH_TABLES
                .iter()
                .find(|t| !tables.iter().any(|x| x == *t))
        {
            return Err(bad_input!(
                "{p}: not a kbench store (schema version {version} but no `{t}` table)"
            ));
        }
        Ok(())
    }

    /// Journal mode, durability, and the newest schema.
    fn prepare(&mut self) -> anyhow::Result<()> {
        let conn = &self.conn;
        // Switching to WAL needs the file to itself, and SQLite answers
        // "busy" at once rather than calling the busy handler: retry while
        // another process holds it (e.g. creating the same store).
        let deadline = std::time::Instant::now() + BUSY;
        loop {
            match conn.pragma_update(None, "journal_mode", "WAL") {
                Err(e)
                    if matches!(
                        e.sqlite_error_code(),
                        Some(
                            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                        )
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                r => break r?,
            }
        }
        // NORMAL in WAL mode: a committed transaction survives the process
        // being killed; only power loss can drop the last commits.
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        // The bundled SQLite enforces foreign keys by default; a migration
        // that rebuilds a referenced table needs them off until it commits.
        conn.pragma_update(None, "foreign_keys", "OFF")?;
        self.migrate()?;
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    /// Bring the schema to the newest version. Foreign keys are off while
    /// migrating (a table rebuild drops the referenced table) and checked
    /// before each commit.
    fn migrate(&mut self) -> anyhow::Result<()> {
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
            if version as usize > MIGRATIONS.len() {
                bail!(
                    "the store has schema version {version}, newer than this kbench knows ({}); upgrade kbench",
                    MIGRATIONS.len()
                );
            }
            let Some(sql) = MIGRATIONS.get(version as usize) else {
                return Ok(());
            };
            tx.execute_batch(sql)
                .with_context(|| format!("schema migration {}", version + 1))?;
            let broken: Option<String> = tx
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()?;
            if let Some(table) = broken {
                bail!(
                    "schema migration {}: broken reference in table {table}",
                    version + 1
                );
            }
            tx.pragma_update(None, "user_version", version + 1)?;
            tx.commit()?;
        }
    }

    fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RunRow> {
        let status: String = r.get(6)?;
        Ok(RunRow {
            id: r.get(0)?,
            uuid: r.get(1)?,
            campaign: r.get(2)?,
            host: r.get(3)?,
            started: r.get(4)?,
            ended: r.get(5)?,
            status: RunStatus::parse(&status).map_err(|e| corrupt(6, e))?,
            cells: r.get(7)?,
            samples: r.get(8)?,
            overhead_ns: r.get(9)?,
        })
    }
}

/// Stored data that does not parse: an error naming the column, never a
/// silent default.
fn corrupt(col: usize, e: impl Into<anyhow::Error>) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        col,
        rusqlite::types::Type::Text,
        e.into().context("corrupt stored data").into(),
    )
}

fn json_col<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    col: usize,
) -> rusqlite::Result<T> {
    let s: String = r.get(col)?;
    serde_json::from_str(&s).map_err(|e| corrupt(col, e))
}

const RUN_SELECT: &str = "SELECT r.id, r.uuid, c.name, r.host, r.started, r.ended, r.status,
    (SELECT COUNT(*) FROM cells WHERE run_id = r.id),
    (SELECT COUNT(*) FROM samples WHERE run_id = r.id),
    r.overhead_ns
    FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id";

fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("serialisable")
}

/// The SQL condition selecting a scope's rows of a table aliased `alias`
/// (which has a `run_id` column), with its one parameter.
fn scope_sql(scope: Scope, alias: &str) -> (String, i64) {
    match scope {
        Scope::Run(id) => (format!("{alias}.run_id = ?1"), id),
        Scope::Campaign(id) => (
            format!("{alias}.run_id IN (SELECT id FROM runs WHERE campaign_id = ?1)"),
            id,
        ),
    }
}

impl StoreRead for SqliteStore {
    fn runs(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        let mut st = self.conn.prepare(&format!(
            "{RUN_SELECT} WHERE ?1 IS NULL OR r.campaign_id = ?1 ORDER BY r.id"
        ))?;
        let rows = st.query_map([campaign], Self::run_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        Ok(self
            .conn
            .query_row(
                &format!("{RUN_SELECT} WHERE r.id = ?1"),
                [id],
                Self::run_row,
            )
            .optional()?)
    }

    fn run_details(&self, id: i64) -> anyhow::Result<RunDetails> {
        let (fp, config): (String, String) = self
            .conn
            .query_row(
                "SELECT fingerprint, config FROM runs WHERE id = ?1",
                [id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?
            .ok_or_else(|| crate::error::bad_input!("no run {id} in the store"))?;
        Ok(RunDetails {
            fingerprint: serde_json::from_str::<Fingerprint>(&fp)
                .with_context(|| format!("run {id}: corrupt stored fingerprint"))?,
            config: RunConfig::from_json(&config)
                .with_context(|| format!("run {id}: corrupt stored settings"))?,
        })
    }

    fn last_run_id(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))?)
    }

    fn campaigns(&self, q: CampaignQuery<'_>) -> anyhow::Result<Vec<CampaignRow>> {
        let (name, id) = match q {
            CampaignQuery::Named(n) => (Some(n), None),
            CampaignQuery::Id(i) => (None, Some(i)),
        };
        let mut st = self.conn.prepare(
            "SELECT id, name, plan_hash, generation, plan_text, created FROM campaigns
             WHERE (?1 IS NULL OR name = ?1) AND (?2 IS NULL OR id = ?2) ORDER BY id",
        )?;
        let rows = st.query_map(params![name, id], |r| {
            Ok(CampaignRow {
                id: r.get(0)?,
                name: r.get(1)?,
                plan_hash: r.get(2)?,
                generation: r.get(3)?,
                plan_text: r.get(4)?,
                created: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>> {
        let (cond, arg) = scope_sql(scope, "c");
        let mut st = self.conn.prepare(&format!(
            "SELECT c.id, c.run_id, c.key, c.bench, c.source, c.kind, c.params, c.factors,
                    c.label_params, c.metrics, c.readings, c.placement, c.notes, c.status
             FROM cells c WHERE {cond} ORDER BY c.id"
        ))?;
        let cells: Vec<CellRec> = st
            .query_map([arg], |r| {
                let kind: String = r.get(5)?;
                let status: Option<String> = r.get(13)?;
                Ok(CellRec {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    info: CellInfo {
                        key: r.get(2)?,
                        bench: r.get(3)?,
                        source: r.get(4)?,
                        kind: Kind::parse(&kind).map_err(|e| corrupt(5, e))?,
                        params: json_col(r, 6)?,
                        factors: json_col(r, 7)?,
                        label_params: json_col(r, 8)?,
                        metrics: json_col(r, 9)?,
                        readings: json_col(r, 10)?,
                    },
                    placement: r.get(11)?,
                    notes: json_col(r, 12)?,
                    status: status
                        .map(|s| CellStatus::parse(&s))
                        .transpose()
                        .map_err(|e| corrupt(13, e))?,
                })
            })?
            .collect::<Result<_, _>>()
            .context("reading cells")?;
        // Driven by the cells (index cells_run) with each cell's samples
        // from index samples_cell, the rows come out in (cell, id) order
        // without a sort: 10^6 samples load in a fraction of a second.
        let mut st = self.conn.prepare(&format!(
            "SELECT s.cell_id, s.metric, s.unit, s.value, s.round, s.seq, s.t, s.process
             FROM cells c JOIN samples s ON s.cell_id = c.id WHERE {cond} ORDER BY c.id, s.id"
        ))?;
        let mut by_cell: std::collections::HashMap<i64, Vec<SampleRec>> =
            std::collections::HashMap::with_capacity(cells.len());
        let mut rows = st.query([arg])?;
        // Metric and unit names repeat on every row: share one allocation.
        let mut names: Vec<Arc<str>> = Vec::new();
        let mut intern = |s: &str| -> Arc<str> {
            match names.iter().find(|n| &***n == s) {
                Some(n) => n.clone(),
                None => {
                    let n: Arc<str> = s.into();
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
                seq: r.get(5)?,
                t: r.get(6)?,
                process: r.get(7)?,
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

    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>> {
        let (cond, arg) = scope_sql(scope, "f");
        let mut st = self.conn.prepare(&format!(
            "SELECT f.run_id, f.cell_id, f.seq, f.round, f.t, f.message FROM failures f
             WHERE {cond} ORDER BY f.id"
        ))?;
        let rows = st.query_map([arg], |r| {
            Ok(FailureRec {
                run_id: r.get(0)?,
                cell_id: r.get(1)?,
                seq: r.get(2)?,
                round: r.get(3)?,
                t: r.get(4)?,
                message: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        // Rounds restart at 0 in every run: count each cell's distinct
        // rounds, then add the cells of one key and state up.
        let mut st = self.conn.prepare(
            "SELECT c.key, c.readings, r.host,
                    SUM((SELECT COUNT(DISTINCT s.round) FROM samples s WHERE s.cell_id = c.id))
             FROM cells c JOIN runs r ON r.id = c.run_id
             WHERE r.campaign_id = ?1 GROUP BY c.key, c.readings, r.host ORDER BY MIN(c.id)",
        )?;
        let rows = st.query_map([campaign], |r| {
            Ok(CellProgress {
                key: r.get(0)?,
                readings: r.get(1)?,
                host: r.get(2)?,
                samples: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

impl StoreWrite for SqliteStore {
    /// A one-byte lock (`system::lock_byte`: on Linux an OFD lock, per open
    /// file, not per process) at an offset given by the campaign's name, in
    /// a file beside the store (`STORE-kbench-locks`, 0600), apart from
    /// SQLite's own locks. Where that file cannot be made (a read-only
    /// directory, `/dev/null`), runs go unlocked.
    fn lock_campaign(&mut self, name: &str) -> anyhow::Result<()> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let Some(path) = self.conn.path().filter(|p| !p.is_empty()) else {
            return Ok(());
        };
        let Ok(file) = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(format!("{path}-kbench-locks"))
        else {
            return Ok(());
        };
        let offset = u64::from_str_radix(&crate::ids::plan_hash(name), 16).unwrap_or(0) >> 24;
        let fd = file.as_raw_fd();
        let cannot = |e| anyhow::anyhow!("{path}: cannot lock campaign `{name}`: {e}");
        if !crate::system::lock_byte(fd, offset, false).map_err(cannot)? {
            eprintln!(
                "kbench: campaign `{name}` is being run by another kbench on this store; waiting for it"
            );
            // EINTR (a signal) retries.
            loop {
                match crate::system::lock_byte(fd, offset, true) {
                    Ok(_) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(cannot(e)),
                }
            }
        }
        self.locks.push(file);
        Ok(())
    }

    fn campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64> {
        // One statement creates it or does nothing: two writers racing on
        // the same identity both end up with the one row.
        self.write(|c| {
            c.execute(
                "INSERT INTO campaigns (name, plan_hash, generation, plan_text, created)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (name, plan_hash, generation) DO NOTHING",
                params![
                    key.name,
                    key.plan_hash,
                    key.generation,
                    key.plan_text,
                    crate::ids::unix_now()
                ],
            )?;
            c.query_row(
                "SELECT id FROM campaigns WHERE name = ?1 AND plan_hash = ?2 AND generation = ?3",
                params![key.name, key.plan_hash, key.generation],
                |r| r.get(0),
            )
        })
    }

    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        self.write(|c| {
            c.execute(
                "INSERT INTO runs (uuid, campaign_id, host, started, status, fingerprint, config, overhead_ns)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)
                 ON CONFLICT (uuid) DO NOTHING",
                params![
                    run.uuid,
                    run.campaign,
                    run.host,
                    run.started,
                    json_text(&run.fingerprint),
                    json_text(&run.config),
                    run.overhead_ns
                ],
            )
        })?;
        self.run_id(&run.uuid)?
            .context("run row vanished after insert")
    }

    fn run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        self.write(|c| {
            c.query_row("SELECT id FROM runs WHERE uuid = ?1", [uuid], |r| r.get(0))
                .optional()
        })
    }

    fn add_cell(&mut self, run_id: i64, c: &CellInfo) -> anyhow::Result<i64> {
        self.write(|conn| {
            conn.execute(
                "INSERT INTO cells (run_id, key, bench, source, kind, params, factors, label_params,
                                    metrics, readings, placement, notes)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, '{}')
                 ON CONFLICT (run_id, key) DO NOTHING",
                params![
                    run_id,
                    c.key,
                    c.bench,
                    c.source,
                    c.kind.as_str(),
                    json_text(&c.params),
                    json_text(&c.factors),
                    json_text(&c.label_params),
                    json_text(&c.metrics),
                    c.readings_text(),
                ],
            )
        })?;
        self.cell_id(run_id, &c.key)?
            .context("cell row vanished after insert")
    }

    fn cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>> {
        self.write(|c| {
            c.query_row(
                "SELECT id FROM cells WHERE run_id = ?1 AND key = ?2",
                params![run_id, key],
                |r| r.get(0),
            )
            .optional()
        })
    }

    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE cells SET placement = ?2, notes = ?3 WHERE id = ?1",
                params![cell_id, placement, json_text(notes)],
            )
        })?;
        Ok(())
    }

    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE cells SET status = ?2 WHERE id = ?1",
                params![cell_id, status.as_str()],
            )
        })?;
        Ok(())
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        self.write(|c| {
            let tx = c.transaction()?;
            let mut added = 0;
            {
                let mut st = tx.prepare_cached(
                    "INSERT INTO samples (run_id, cell_id, metric, unit, value, round, seq, t, process)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT (cell_id, metric, round, seq) DO NOTHING",
                )?;
                for s in samples {
                    added += st.execute(params![
                        run_id, s.cell_id, s.metric, s.unit, s.value, s.round, s.seq, s.t, s.process
                    ])?;
                }
            }
            tx.commit()?;
            Ok(added)
        })
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        self.write(|c| {
            c.execute(
                "INSERT INTO failures (run_id, cell_id, seq, round, t, message)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT (cell_id, seq) DO NOTHING",
                params![f.run_id, f.cell_id, f.seq, f.round, f.t, f.message],
            )
        })?;
        Ok(())
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        self.write(|c| {
            c.execute(
                "UPDATE runs SET ended = ?2, status = ?3 WHERE id = ?1",
                params![run_id, ended, status.as_str()],
            )
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_the_store_suite() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SqliteStore::open(&dir.path().join("sub/k.db"), true).unwrap();
        super::super::suite::round_trip(&mut s);
        drop(s);
        // Reopening does not re-run migrations.
        let s = SqliteStore::open(&dir.path().join("sub/k.db"), true).unwrap();
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        assert_eq!(s.runs(None).unwrap().len(), 3);
    }

    /// A store written by kbench before the event stream (schema 2, a
    /// campaign and an ad-hoc run) migrates and keeps every record.
    #[test]
    fn a_schema_2_store_migrates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.db");
        std::fs::copy(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/store/v2.db"),
            &path,
        )
        .unwrap();
        let mut s = SqliteStore::open(&path, true).unwrap();
        let runs = s.runs(None).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].uuid, "legacy-1");
        assert_eq!(runs[0].campaign.as_deref(), Some("fixture"));
        assert!(runs.iter().all(|r| r.status == RunStatus::Done));
        let d = s.run_details(2).unwrap();
        assert!(d.fingerprint.cpu_model.is_some(), "old fingerprint kept");
        assert_eq!((d.config.samples, d.config.warmup), (3, 0));
        let cells = s.cells(Scope::Run(2)).unwrap();
        assert_eq!(cells.len(), 2);
        assert!(cells.iter().all(|(_, smp)| smp.len() == 3));
        let c = s.campaigns(CampaignQuery::Named("fixture")).unwrap();
        assert_eq!((c.len(), c[0].generation), (1, 1));
        assert_eq!(c[0].plan_hash.len(), 16);
        let p = s.progress(c[0].id).unwrap();
        assert_eq!(p.len(), 2);
        assert!(p.iter().all(|x| x.samples == 3), "{p:?}");
        // The migrated store takes new, idempotent writes.
        let again = CampaignKey {
            name: "fixture".into(),
            plan_hash: c[0].plan_hash.clone(),
            generation: 1,
            plan_text: String::new(),
        };
        assert_eq!(s.campaign(&again).unwrap(), c[0].id);
    }

    #[test]
    fn corrupt_stored_json_is_an_error_not_null() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SqliteStore::open(&dir.path().join("k.db"), true).unwrap();
        let run = s
            .begin_run(&super::super::suite::new_run("u", None))
            .unwrap();
        s.add_cell(run, &super::super::suite::cell_info("a", &[]))
            .unwrap();
        s.conn
            .execute("UPDATE cells SET params = '{broken'", [])
            .unwrap();
        let e = s.cells(Scope::Run(run)).unwrap_err();
        assert!(format!("{e:#}").contains("corrupt stored data"), "{e:#}");
        s.conn
            .execute("UPDATE runs SET fingerprint = '[1'", [])
            .unwrap();
        let e = s.run_details(run).unwrap_err();
        assert!(
            format!("{e:#}").contains("corrupt stored fingerprint"),
            "{e:#}"
        );
    }

    /// Two writers create the same campaign at the same moment: one
    /// campaign results, and neither fails.
    #[test]
    fn two_writers_create_one_campaign() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.db");
        SqliteStore::open(&path, true).unwrap();
        let key = CampaignKey {
            name: "race".into(),
            plan_hash: "h".into(),
            generation: 1,
            plan_text: String::new(),
        };
        for _ in 0..20 {
            crate::store::suite::create_race(|| SqliteStore::open(&path, true).unwrap(), &key);
        }
        let s = SqliteStore::open(&path, true).unwrap();
        assert_eq!(s.campaigns(CampaignQuery::Named("race")).unwrap().len(), 1);
    }
}
