//! SQLite backend (rusqlite, bundled SQLite). WAL journal so readers never
//! block the runner; every write is its own committed transaction. The
//! schema is versioned with `PRAGMA user_version`; each entry of
//! [`MIGRATIONS`] moves it one version up. All the versions a store lacks
//! are added in one write transaction that first re-reads the version, so
//! two processes opening a new store at once migrate it once, and no
//! process ever sees a schema half-way between two versions.

use anyhow::{Context, bail};
use indexmap::IndexMap;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::{Path, PathBuf};

use super::pack;
use super::sql::{self, CAMPAIGN_COLUMNS, SAMPLE_COLUMNS};
use super::{
    Access, CampaignQuery, CampaignRow, CellProgress, FailureRec, FleetHostRec, NewRun, RunDetails,
    RunRow, SampleRec, Scope, StoreRead, StoreWrite, StoredCell, VerdictRec,
};
use crate::error::bad_input;
use crate::record::{CampaignKey, CellInfo, CellStatus, RunStatus};

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
    // 5: what a producer decided from a run's samples (bisect's calls).
    r#"
CREATE TABLE verdicts (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run_id, kind)
);
"#,
    // 6: a run's labels (`branch`, `commit`, `--label k=v`), as a JSON
    // object: baselines are chosen by them.
    r#"
ALTER TABLE runs ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
"#,
    // 7: a cell's call-stack profile per measured round (`run
    // --profile`): folded stacks, zlib-compressed.
    r#"
CREATE TABLE profiles (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    round INTEGER NOT NULL,
    stacks BLOB NOT NULL,
    PRIMARY KEY (cell_id, round)
);
"#,
    // 8: each fleet host's state per plan, beside the results it
    // describes (any copy of the store shows it).
    r#"
CREATE TABLE fleet_hosts (
    plan TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    host TEXT NOT NULL,
    state TEXT NOT NULL,
    updated REAL NOT NULL,
    last_error TEXT,
    PRIMARY KEY (plan, plan_hash, host)
);
"#,
    // 9: a cell's metric and unit stored once (a series), not as text on
    // every sample: rows a fifth smaller, and a report of 10^6 samples
    // decodes two integers per sample instead of two strings. The table
    // is rebuilt (SQLite cannot drop an indexed column); ids are kept.
    r#"
CREATE TABLE series (
    id INTEGER PRIMARY KEY,
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    UNIQUE (cell_id, metric, unit)
);
INSERT INTO series (cell_id, metric, unit)
    SELECT cell_id, metric, unit FROM samples GROUP BY cell_id, metric, unit ORDER BY MIN(id);
CREATE TABLE samples_v9 (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    series_id INTEGER NOT NULL REFERENCES series(id),
    value REAL NOT NULL,
    round INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    t REAL NOT NULL,
    process INTEGER
);
INSERT INTO samples_v9 (id, run_id, cell_id, series_id, value, round, seq, t, process)
    SELECT s.id, s.run_id, s.cell_id, m.id, s.value, s.round, s.seq, s.t, s.process
    FROM samples s
    JOIN series m ON m.cell_id = s.cell_id AND m.metric = s.metric AND m.unit = s.unit
    ORDER BY s.id;
DROP TABLE samples;
ALTER TABLE samples_v9 RENAME TO samples;
CREATE INDEX samples_cell ON samples(cell_id);
CREATE INDEX samples_run ON samples(run_id);
CREATE UNIQUE INDEX samples_identity ON samples(series_id, round, seq);
"#,
    // 10: an ended run's samples packed for reading ([`super::pack`]),
    // kept only while the run gets no new sample.
    r#"
CREATE TABLE sample_packs (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    part INTEGER NOT NULL,
    n INTEGER NOT NULL,
    body BLOB NOT NULL,
    UNIQUE (run_id, part)
);
"#,
];

/// Whether new files can be made in `path`'s directory (SQLite's `-wal`
/// and `-shm` files, kbench's lock files).
fn dir_writable(path: &Path) -> bool {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: faccessat(2) reads a NUL-terminated path; the effective
    // ids decide, as they do for the open that follows.
    unsafe {
        libc::faccessat(
            libc::AT_FDCWD,
            c.as_ptr(),
            libc::W_OK | libc::X_OK,
            libc::AT_EACCESS,
        ) == 0
    }
}

/// A path as the path part of an SQLite `file:` URI.
fn uri_path(path: &Path) -> String {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = String::new();
    for c in abs.to_string_lossy().chars() {
        match c {
            '%' => out.push_str("%25"),
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

pub struct SqliteStore {
    conn: Connection,
    /// Campaign run locks held (`lock_campaign`), released on drop.
    locks: Vec<std::fs::File>,
    /// Samples per part of a pack ([`pack::PART`]; fewer in tests).
    pack_part: usize,
}

/// Tables every kbench store has, from the first schema version on.
const KBENCH_TABLES: &[&str] = &["campaigns", "runs", "cells", "samples"];

/// How long a writer waits for another one before giving up.
const BUSY: std::time::Duration = std::time::Duration::from_secs(10);

/// Read the store's pages through a memory map rather than a `pread`
/// into SQLite's page cache per page: a report reads every sample once,
/// and copying 10^6 samples' pages out of the kernel's cache was a third
/// of its time. Writes still go through the WAL; the map only grows with
/// the pages read. Best effort: where mapping is unavailable SQLite reads
/// as before.
fn map_reads(conn: &Connection) {
    let _ = conn.pragma_update(None, "mmap_size", 1i64 << 30);
}

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
        Some(C::CannotOpen) => cannot_open(path, &e),
        Some(C::DatabaseBusy | C::DatabaseLocked) => anyhow::anyhow!(
            "{p}: locked by another process for more than {} s",
            BUSY.as_secs()
        ),
        Some(C::DiskFull) => disk_full(path),
        // With no byte free SQLite cannot even grow its WAL index (the
        // `-shm` file): "disk I/O error", extended code
        // SQLITE_IOERR_SHMSIZE, or another I/O error on a full disk.
        Some(C::SystemIoFailure)
            if extended(&e) == Some(SQLITE_IOERR_SHMSIZE) || nearly_full(path) =>
        {
            disk_full(path)
        }
        _ => anyhow::Error::new(e).context(format!("store {p}")),
    }
}

/// `SQLITE_IOERR_SHMSIZE`: the WAL index could not grow.
const SQLITE_IOERR_SHMSIZE: i32 = 10 | (19 << 8);

/// SQLite's extended result code of an error, when it has one.
fn extended(e: &rusqlite::Error) -> Option<i32> {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.extended_code),
        _ => None,
    }
}

/// Whether the file system of the store has less than a page of WAL left.
fn nearly_full(path: &Path) -> bool {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    crate::system::free_bytes(dir.unwrap_or(Path::new("."))).is_some_and(|n| n < 64 << 10)
}

/// The store's disk is full: what stays, and what to do.
fn disk_full(path: &Path) -> anyhow::Error {
    let p = path.display();
    let free = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .and_then(crate::system::free_bytes)
        .map_or(String::new(), |n| {
            format!(" ({} free)", crate::input::size(n))
        });
    anyhow::anyhow!(
        "{p}: the disk is full{free}; what was stored before is kept (free space, then `kbench run` the plan again to complete its campaign)"
    )
}

/// SQLite could not open the store: why, in the file system's words
/// (never the URI SQLite was given, `file:...?immutable=1`).
fn cannot_open(path: &Path, e: &rusqlite::Error) -> anyhow::Error {
    let p = path.display();
    let why = match std::fs::File::open(path) {
        Err(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
            return bad_input!(
                "{p}: cannot open the store: permission denied (this user may not read it: check its owner and mode, or name another store with --db)"
            );
        }
        Err(io) => io.to_string(),
        Ok(_) => {
            let s = e.to_string();
            match s.find(": file:") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        }
    };
    bad_input!("{p}: cannot open the store ({why})")
}

/// `kbench store check` of the file at `path`: opened read-only and
/// without the checks of [`SqliteStore::open`] (which refuse a damaged
/// store), then the schema, SQLite's full `integrity_check` and
/// `foreign_key_check`; every problem, one line each.
pub fn check(path: &Path) -> anyhow::Result<Vec<String>> {
    let p = path.display();
    if path.is_dir() {
        return Err(bad_input!(
            "{p}: a directory, not a store; name the store's file (the default is kbench.db in $XDG_DATA_HOME/kbench)"
        ));
    }
    if path.exists() && !path.is_file() {
        return Err(bad_input!("{p}: not a regular file, so not a store"));
    }
    if !path.is_file() {
        return Err(bad_input!("{p}: no such store"));
    }
    use rusqlite::OpenFlags as F;
    let conn =
        Connection::open_with_flags(path, F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| explain(path, e))?;
    conn.busy_timeout(BUSY).map_err(|e| explain(path, e))?;
    SqliteStore::check_ours(&conn, path)?;
    let mut problems = Vec::new();
    if let Err(e) = check_schema(&conn, path) {
        problems.push(format!("{e:#}"));
    }
    for pragma in ["integrity_check(100)", "foreign_key_check"] {
        let rows: rusqlite::Result<Vec<String>> = conn
            .prepare(&format!("PRAGMA {pragma}"))
            .and_then(|mut st| {
                let n = st.column_count();
                st.query_map([], |r| {
                    let cols: Vec<String> = (0..n)
                        .map(|i| match r.get_ref(i) {
                            Ok(v) => match v {
                                rusqlite::types::ValueRef::Null => "NULL".into(),
                                rusqlite::types::ValueRef::Integer(i) => i.to_string(),
                                rusqlite::types::ValueRef::Real(f) => f.to_string(),
                                rusqlite::types::ValueRef::Text(t) => {
                                    String::from_utf8_lossy(t).into_owned()
                                }
                                rusqlite::types::ValueRef::Blob(_) => "blob".into(),
                            },
                            Err(e) => e.to_string(),
                        })
                        .collect();
                    Ok(cols.join(" "))
                })?
                .collect()
            });
        match rows {
            Ok(rows) => problems.extend(rows.into_iter().filter(|r| r != "ok").map(|r| {
                if pragma == "foreign_key_check" {
                    format!("a row without the row it refers to (table rowid parent fk): {r}")
                } else {
                    r
                }
            })),
            Err(e) => problems.push(format!("{pragma}: {e}")),
        }
    }
    let stale = conn.prepare(&pack::stale_sql()).and_then(|mut st| {
        st.query_map([], |r| r.get::<_, i64>(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()
    });
    match stale {
        Ok(runs) => problems.extend(runs.into_iter().map(pack::stale_problem)),
        Err(e) => problems.push(format!("table sample_packs: {e}")),
    }
    Ok(problems)
}

/// One line saying the store at `path` is damaged and what was found
/// first (exit 2).
fn damaged(path: &Path, what: &str) -> anyhow::Error {
    let p = path.display();
    bad_input!(
        "{p}: the store is damaged ({what}); nothing was written (`kbench --db {p} store check` lists every problem; restore a copy, or try `sqlite3 {p} .recover`)"
    )
}

/// The first line of a check pragma's answer, `None` for `ok`; a check
/// that cannot even run (a page too broken to read) is damage too.
fn pragma_problem(conn: &Connection, pragma: &str) -> Option<String> {
    let r = conn
        .prepare(&format!("PRAGMA {pragma}"))
        .and_then(|mut st| st.query_row([], |r| r.get::<_, String>(0)));
    match r {
        Ok(s) if s == "ok" => None,
        // One line: SQLite prefixes `*** in database main ***` and breaks
        // lines within one finding.
        Ok(s) => Some(
            s.lines()
                .filter(|l| !l.starts_with("***") && !l.trim().is_empty())
                .collect::<Vec<_>>()
                .join("; "),
        ),
        Err(e) => Some(e.to_string()),
    }
}

/// Each index of `samples` holds what the table holds: sums of the
/// indexed columns read from the index alone and from the table must
/// agree. A page of one index overwritten by a well-formed page of
/// another passes `quick_check` but not this (a scan of each, a fraction
/// of `integrity_check`'s row-by-row lookups).
fn samples_problem(conn: &Connection) -> Option<String> {
    // A store not yet migrated to the series table (checked before
    // migrating it) names its metric on each row.
    let series = conn
        .prepare("SELECT series_id FROM samples LIMIT 0")
        .is_ok();
    let identity = if series {
        "COUNT(*), SUM(rowid), SUM(series_id) + SUM(round) * 3 + SUM(seq) * 7"
    } else {
        "COUNT(*), SUM(rowid), SUM(cell_id) + SUM(round) * 3 + SUM(seq) * 7 + SUM(LENGTH(metric))"
    };
    let checks: [(&str, &str); 3] = [
        ("samples_run", "COUNT(*), SUM(rowid), SUM(run_id)"),
        ("samples_cell", "COUNT(*), SUM(rowid), SUM(cell_id)"),
        ("samples_identity", identity),
    ];
    let sums = |from: &str, cols: &str| -> rusqlite::Result<(i64, i64, i64)> {
        conn.query_row(&format!("SELECT {cols} FROM samples {from}"), [], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<i64>>(1)?.unwrap_or(0),
                r.get::<_, Option<i64>>(2)?.unwrap_or(0),
            ))
        })
    };
    for (index, cols) in checks {
        let r = sums("NOT INDEXED", cols)
            .and_then(|t| Ok((t, sums(&format!("INDEXED BY {index}"), cols)?)));
        match r {
            Ok((t, i)) if t == i => {}
            Ok(_) => return Some(format!("index {index} does not match table samples")),
            Err(e) => return Some(format!("index {index}: {e}")),
        }
    }
    None
}

/// Tables checked whole on every open: small, so their `integrity_check`
/// (pages, constraints, and every index against its table) takes
/// milliseconds. `samples`, which may hold millions of rows, gets the
/// structural `quick_check` and [`samples_problem`] before a write (about
/// 1 s for two million samples), and the full check from `kbench store
/// check`.
const SMALL_TABLES: &[&str] = &["campaigns", "runs", "cells", "series", "failures"];

/// `f` inside one read transaction, so that all its statements read the
/// same state of the file: another process may be creating or migrating
/// the store at this very moment, and statements run one by one saw the
/// schema from before a migration and then the one from after it (a
/// check of the samples' indexes named a column the migration had just
/// dropped, and called a sound store damaged).
fn one_read<T>(conn: &Connection, f: impl FnOnce() -> T) -> rusqlite::Result<T> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let out = f();
    // Nothing was written: ending it either way is the same.
    if !conn.is_autocommit() && conn.execute_batch("COMMIT").is_err() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    Ok(out)
}

/// Refuse a damaged store before anything reads or writes it (see
/// [`SMALL_TABLES`]): one overwritten page made `runs` print nothing, or
/// fail without naming the store, and `run` write into it. One read
/// transaction ([`one_read`]).
fn check_pages(conn: &Connection, path: &Path, writing: bool) -> anyhow::Result<()> {
    one_read(conn, || pages_problem(conn, path, writing)).map_err(|e| explain(path, e))?
}

/// [`check_pages`]' checks, each its own statement.
fn pages_problem(conn: &Connection, path: &Path, writing: bool) -> anyhow::Result<()> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(|e| damaged(path, &e.to_string()))?;
    let mut checks: Vec<String> = SMALL_TABLES
        .iter()
        .filter(|t| tables.iter().any(|x| x == *t))
        .map(|t| format!("integrity_check({t})"))
        .collect();
    let samples = writing && tables.iter().any(|t| t == "samples");
    if samples {
        checks.push("quick_check(samples)".into());
    }
    for c in checks {
        if let Some(why) = pragma_problem(conn, &c) {
            return Err(damaged(path, &why));
        }
    }
    // Stores older than schema 3 lack the identity index: migrating
    // comes first.
    let have_indexes = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'samples_identity'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap_or(0)
        == 1;
    if samples
        && have_indexes
        && let Some(why) = samples_problem(conn)
    {
        return Err(damaged(path, &why));
    }
    Ok(())
}

/// The tables and indexes of the newest schema, as a new store has them.
fn expected_objects() -> &'static [(String, String)] {
    static OBJECTS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    OBJECTS.get_or_init(|| {
        let s = SqliteStore::empty().expect("an in-memory store");
        objects(&s.conn).expect("reading a new store's schema")
    })
}

/// (type, name) of every table and index kbench made.
fn objects(conn: &Connection) -> rusqlite::Result<Vec<(String, String)>> {
    conn.prepare(
        "SELECT type, name FROM sqlite_master
         WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_%' ORDER BY type, name",
    )?
    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
    .collect()
}

/// Every table and index of the schema is there: a table dropped by hand
/// made `run` fail only after recording its run as done, and a dropped
/// unique index would let a replayed stream store samples twice.
fn check_schema(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let have = objects(conn).map_err(|e| damaged(path, &e.to_string()))?;
    if let Some((kind, name)) = expected_objects().iter().find(|o| !have.contains(o)) {
        return Err(damaged(path, &format!("its {kind} `{name}` is missing")));
    }
    Ok(())
}

/// Bytes kept written in the store's lock file (`STORE-kbench-locks`) as
/// a reserve for a full disk: a run stopped by it is still marked as ended
/// (a row's update needs a page in the WAL; a full disk had less than one
/// left, and which run found room was down to a page of the schema).
const RESERVE: usize = 64 << 10;

impl SqliteStore {
    /// The store's lock file, beside it; `None` in memory.
    fn locks_path(&self) -> Option<String> {
        let path = self.conn.path().filter(|p| !p.is_empty())?;
        Some(format!("{path}-kbench-locks"))
    }

    /// Keep [`RESERVE`] bytes written in the lock file (zeros, not a
    /// sparse length, so the space is taken); nothing where it cannot be.
    fn keep_reserve(&self) {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let Some(path) = self.locks_path() else {
            return;
        };
        let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
        else {
            return;
        };
        if f.metadata().is_ok_and(|m| m.len() < RESERVE as u64) {
            let _ = f.write_all(&[0; RESERVE]);
        }
    }

    /// Give the reserve back to the file system; whether there was one.
    fn release_reserve(&self) -> bool {
        let Some(path) = self.locks_path() else {
            return false;
        };
        let Ok(f) = std::fs::OpenOptions::new().write(true).open(path) else {
            return false;
        };
        let had = f.metadata().is_ok_and(|m| m.len() > 0);
        had && f.set_len(0).is_ok()
    }

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

    /// Open the store at `path`; for writing, make it (mode 0600, and its
    /// directory) when it does not exist. A file that is not a kbench
    /// store, is newer than this kbench, or is damaged is refused and left
    /// untouched.
    pub fn open(path: &Path, access: Access) -> anyhow::Result<SqliteStore> {
        let create = access == Access::Write;
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
        // Writing needs the file and its directory (SQLite's journal files
        // live beside it); a read-only mount allows neither.
        let writable =
            std::fs::OpenOptions::new().write(true).open(path).is_ok() && dir_writable(path);
        if !writable && create {
            return Err(bad_input!(
                "{p}: the store is read-only here (its file, directory or mount): reports read it, but runs need a writable store; name one with --db PATH or KBENCH_DB (a copy: cp {p} ~/kbench.db)"
            ));
        }
        if !writable {
            return Self::open_read_only(path);
        }
        let conn =
            Connection::open_with_flags(path, F::SQLITE_OPEN_READ_WRITE | F::SQLITE_OPEN_NO_MUTEX)
                .map_err(|e| explain(path, e))?;
        conn.busy_timeout(BUSY).map_err(|e| explain(path, e))?;
        map_reads(&conn);
        Self::check_ours(&conn, path)?;
        check_pages(&conn, path, create)?;
        let mut s = SqliteStore {
            conn,
            locks: Vec::new(),
            pack_part: pack::PART,
        };
        s.prepare()
            .map_err(|e| match e.downcast::<rusqlite::Error>() {
                Ok(e) => explain(path, e),
                Err(e) => e.context(format!("store {p}")),
            })?;
        check_schema(&s.conn, path)?;
        Ok(s)
    }

    /// Open a store this process may not write (a read-only file,
    /// directory or mount) for reports. SQLite reads a WAL store through
    /// its `-shm` file, which a read-only directory cannot get; such a
    /// store is read as an immutable file instead, unless its `-wal` file
    /// holds commits the main file does not have yet.
    fn open_read_only(path: &Path) -> anyhow::Result<SqliteStore> {
        use rusqlite::OpenFlags as F;
        let p = path.display();
        let open = |query: &str| -> anyhow::Result<Connection> {
            let uri = format!("file:{}?{query}", uri_path(path));
            let conn = Connection::open_with_flags(
                uri,
                F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_URI | F::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| explain(path, e))?;
            conn.busy_timeout(BUSY).map_err(|e| explain(path, e))?;
            map_reads(&conn);
            Self::check_ours(&conn, path)?;
            Ok(conn)
        };
        let conn = match open("mode=ro") {
            Ok(c) => c,
            Err(_) => {
                let wal = PathBuf::from(format!("{}-wal", path.display()));
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
                    return Err(bad_input!(
                        "{p}: read-only here, and {} holds writes not yet in the store; open it once where it can be written (or copy both files to a writable directory)",
                        wal.display()
                    ));
                }
                open("immutable=1")?
            }
        };
        // No journal mode to set and no migration possible.
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| explain(path, e))?;
        if version as usize != MIGRATIONS.len() {
            return Err(bad_input!(
                "{p}: read-only, and its schema (version {version}) needs upgrading to {}: open it once with write access",
                MIGRATIONS.len()
            ));
        }
        check_pages(&conn, path, false)?;
        check_schema(&conn, path)?;
        Ok(SqliteStore {
            conn,
            locks: Vec::new(),
            pack_part: pack::PART,
        })
    }

    /// An empty store in memory: what a read-only command sees when the
    /// default store does not exist yet (nothing is created).
    pub fn empty() -> anyhow::Result<SqliteStore> {
        let mut s = SqliteStore {
            conn: Connection::open_in_memory()?,
            locks: Vec::new(),
            pack_part: pack::PART,
        };
        s.prepare()?;
        Ok(s)
    }

    /// Refuse, before anything is written, a file that is not a kbench
    /// store or is newer than this kbench.
    fn check_ours(conn: &Connection, path: &Path) -> anyhow::Result<()> {
        let p = path.display();
        // The version and the tables read from the same state
        // ([`one_read`]).
        let (version, tables) = one_read(conn, || -> rusqlite::Result<(i64, Vec<String>)> {
            let version = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
            let tables = conn
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())?;
            Ok((version, tables))
        })
        .and_then(|r| r)
        .map_err(|e| explain(path, e))?;
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
        if self.migrate()? {
            // Each migration appended its pages to the WAL, which is only
            // folded back after 1000 pages: a new store would start at
            // ~220 KiB of WAL for a few pages of schema, and on a nearly
            // full disk fail at its first sample. Fold it now (a reader
            // holding it just leaves it for later).
            self.conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        }
        self.conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(())
    }

    /// Bring the schema to the newest version: every migration the store
    /// lacks, in one write transaction (another process sees the schema
    /// before or after, never between two versions; a migration that
    /// fails leaves the store as it was). Foreign keys are off while
    /// migrating (a table rebuild drops the referenced table) and checked
    /// after each migration. Whether any migration ran.
    fn migrate(&mut self) -> anyhow::Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        // Read again under the write lock: another process may have
        // migrated the store since it was checked.
        let from: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
        if from as usize > MIGRATIONS.len() {
            bail!(
                "the store has schema version {from}, newer than this kbench knows ({}); upgrade kbench",
                MIGRATIONS.len()
            );
        }
        if from as usize == MIGRATIONS.len() {
            return Ok(false);
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
            tx.execute_batch(sql)
                .with_context(|| format!("schema migration {}", i + 1))?;
            let broken: Option<String> = tx
                .query_row("PRAGMA foreign_key_check", [], |r| r.get(0))
                .optional()?;
            if let Some(table) = broken {
                bail!(
                    "schema migration {}: broken reference in table {table}",
                    i + 1
                );
            }
        }
        tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
        tx.commit()?;
        Ok(true)
    }
}

impl SqliteStore {
    /// Rows of `sql` (parameters `params`), each decoded by `f`.
    fn rows<T>(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        mut f: impl FnMut(&rusqlite::Row<'_>) -> anyhow::Result<T>,
    ) -> anyhow::Result<Vec<T>> {
        let mut out = Vec::new();
        self.each_row(sql, params, |r| {
            out.push(f(r)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The campaign's runs (every run without one), their samples counted
    /// when `samples`.
    fn runs_of(&self, campaign: Option<i64>, samples: bool) -> anyhow::Result<Vec<RunRow>> {
        let select = sql::run_select(samples);
        self.rows(
            &format!("{select} WHERE ?1 IS NULL OR r.campaign_id = ?1 ORDER BY r.id"),
            [campaign],
            |r| sql::run_row(r),
        )
    }

    /// Run `id`, its samples counted when `samples`.
    fn run_of(&self, id: i64, samples: bool) -> anyhow::Result<Option<RunRow>> {
        let select = sql::run_select(samples);
        Ok(self
            .rows(&format!("{select} WHERE r.id = ?1"), [id], |r| {
                sql::run_row(r)
            })?
            .pop())
    }

    /// `f` on each row of `sql` as it is read.
    fn each_row(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
        mut f: impl FnMut(&rusqlite::Row<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let path = Path::new(self.conn.path().unwrap_or(":memory:"));
        let mut st = self.conn.prepare(sql).map_err(|e| explain(path, e))?;
        let mut rows = st.query(params).map_err(|e| explain(path, e))?;
        while let Some(r) = rows.next().map_err(|e| explain(path, e))? {
            // A row that does not decode is damage, named as such.
            f(r).map_err(|e| damaged(path, &format!("{e:#}")))?;
        }
        Ok(())
    }
}

impl SqliteStore {
    /// Pack run `run_id` unless it is packed: its samples in id order as
    /// parts of `size` records ([`pack`]), which [`SqliteStore::each_packed`]
    /// reads instead of a row per sample. Inside the caller's write
    /// transaction, so no other writer comes between; a sample added later
    /// removes the pack in its own transaction (`add_samples`).
    fn pack(c: &Connection, run_id: i64, size: usize) -> rusqlite::Result<()> {
        let packed: Option<i64> = c
            .query_row(
                "SELECT 1 FROM sample_packs WHERE run_id = ?1 LIMIT 1",
                [run_id],
                |r| r.get(0),
            )
            .optional()?;
        if packed.is_some() {
            return Ok(());
        }
        let mut rows = c.prepare(&format!(
            "SELECT {SAMPLE_COLUMNS} FROM samples s WHERE s.run_id = ?1 ORDER BY s.id"
        ))?;
        let mut insert =
            c.prepare("INSERT INTO sample_packs (run_id, part, n, body) VALUES (?1, ?2, ?3, ?4)")?;
        let mut part: Vec<u8> = Vec::with_capacity(size * pack::RECORD);
        let mut k = 0_i64;
        let mut flush = |part: &mut Vec<u8>| -> rusqlite::Result<()> {
            if !part.is_empty() {
                let n = (part.len() / pack::RECORD) as i64;
                insert.execute(params![run_id, k, n, &part[..]])?;
                k += 1;
                part.clear();
            }
            Ok(())
        };
        let mut q = rows.query([run_id])?;
        while let Some(r) = q.next()? {
            pack::push(&mut part, r, 0).map_err(|e| {
                rusqlite::Error::ToSqlConversionFailure(
                    format!("packing run {run_id}: {e:#}").into(),
                )
            })?;
            if part.len() == size * pack::RECORD {
                flush(&mut part)?;
            }
        }
        flush(&mut part)
    }

    /// The samples of the packed runs of `scope`, each run's in id order,
    /// from their packs to `f`; the runs read.
    fn each_packed(
        &self,
        scope: Scope,
        series: &mut sql::Series,
        f: &mut dyn FnMut(SampleRec) -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<i64>> {
        let (cond, arg) = sql::scope_sql(scope, "p");
        let mut parts = pack::Parts::default();
        self.each_row(
            &format!(
                "SELECT p.run_id, p.part, p.n, p.body FROM sample_packs p WHERE {cond}
                 ORDER BY p.run_id, p.part"
            ),
            [arg],
            |r| {
                let body = r.get_ref(3)?.as_blob()?;
                let (run, part, n) = (r.get(0)?, r.get(1)?, r.get(2)?);
                if let Some(why) = parts.check(run, part, n, body.len()) {
                    anyhow::bail!(why);
                }
                for rec in pack::records(body) {
                    f(sql::sample_rec(&rec, series)?)?;
                }
                Ok(())
            },
        )?;
        Ok(parts.runs())
    }

    /// [`StoreRead::cells`]: the packed runs' samples first, then the
    /// others' rows, read in two halves when they span `split_at` rowids
    /// or more.
    fn cells_split(&self, scope: Scope, split_at: i64) -> anyhow::Result<Vec<StoredCell>> {
        let cells = self.cell_recs(scope)?;
        let mut series = self.series(scope)?;
        let mut packed = Vec::new();
        let reserve = self.packed_count(scope)?.div_ceil(cells.len().max(1));
        let from_packs = sql::bucketed(&cells, reserve, |f| {
            packed = self.each_packed(scope, &mut series, f)?;
            Ok(())
        })?;
        let Some(span) = self.sample_span(scope, &packed)? else {
            return Ok(cells.into_iter().zip(from_packs).collect());
        };
        let second = (span.hi - span.lo >= split_at)
            .then(|| self.second_reader())
            .flatten();
        let skip = &packed;
        let mut read = match second {
            None => {
                let reserve = span.per_cell(span.lo, span.hi, cells.len());
                let (lo, hi) = (span.lo, span.hi);
                let samples =
                    self.samples_between(scope, skip, &cells, series, (lo, hi), reserve)?;
                cells.into_iter().zip(samples).collect()
            }
            Some(second) => {
                let upper = series.clone();
                sql::in_halves(
                    cells,
                    span,
                    |c, lo, hi, n| self.samples_between(scope, skip, c, series, (lo, hi), n),
                    move |c, lo, hi, n| second.samples_between(scope, skip, c, upper, (lo, hi), n),
                )?
            }
        };
        // A cell is one run's: its samples came from its pack or its rows.
        for ((_, rows), packed) in read.iter_mut().zip(from_packs) {
            if rows.is_empty() {
                *rows = packed;
            } else {
                rows.extend(packed);
            }
        }
        Ok(read)
    }

    /// The runs of `scope`.
    fn scope_runs(&self, scope: Scope) -> anyhow::Result<Vec<i64>> {
        match scope {
            Scope::Run(id) => Ok(vec![id]),
            Scope::Campaign(id) => self.rows(
                "SELECT id FROM runs WHERE campaign_id = ?1 ORDER BY id",
                [id],
                |r| Ok(r.get(0)?),
            ),
        }
    }

    /// How many samples the packs of `scope` hold.
    fn packed_count(&self, scope: Scope) -> anyhow::Result<usize> {
        let (cond, arg) = sql::scope_sql(scope, "p");
        let mut n = 0_i64;
        self.each_row(
            &format!("SELECT COALESCE(SUM(p.n), 0) FROM sample_packs p WHERE {cond}"),
            [arg],
            |r| {
                n = r.get(0)?;
                Ok(())
            },
        )?;
        Ok(usize::try_from(n).unwrap_or(0))
    }

    /// The scope's series, for [`sql::sample_rec`].
    fn series(&self, scope: Scope) -> anyhow::Result<sql::Series> {
        let (cells, arg) = sql::scope_sql(scope, "c");
        let mut series = sql::Series::default();
        self.each_row(&sql::series_sql(&cells), [arg], |r| series.add(r))?;
        Ok(series)
    }

    /// The first and last rowid of the samples of the scope's runs but
    /// `skip` (each run's first and last, each one look-up in index
    /// samples_run), and how many ids its runs span; `None` without
    /// samples.
    fn sample_span(&self, scope: Scope, skip: &[i64]) -> anyhow::Result<Option<sql::IdSpan>> {
        let runs = self.scope_runs(scope)?;
        let mut span: Option<sql::IdSpan> = None;
        for run in runs.into_iter().filter(|r| !skip.contains(r)) {
            let end = |order: &str| -> anyhow::Result<Option<i64>> {
                let mut id = None;
                self.each_row(
                    &format!(
                        "SELECT id FROM samples WHERE run_id = ?1 ORDER BY id {order} LIMIT 1"
                    ),
                    [run],
                    |r| {
                        id = Some(r.get(0)?);
                        Ok(())
                    },
                )?;
                Ok(id)
            };
            if let (Some(first), Some(last)) = (end("ASC")?, end("DESC")?) {
                let run = sql::IdSpan {
                    lo: first,
                    hi: last,
                    most: last - first + 1,
                };
                span = Some(span.map_or(run, |s| sql::IdSpan {
                    lo: s.lo.min(first),
                    hi: s.hi.max(last),
                    most: s.most.saturating_add(run.most),
                }));
            }
        }
        Ok(span)
    }

    /// The samples of the scope's runs but `skip` with rowids `lo..=hi`, a
    /// list per cell of `cells` made with room for `reserve`: the table
    /// read in rowid order, the scope's condition filtering what other
    /// runs wrote in between.
    fn samples_between(
        &self,
        scope: Scope,
        skip: &[i64],
        cells: &[super::CellRec],
        mut series: sql::Series,
        (lo, hi): (i64, i64),
        reserve: usize,
    ) -> anyhow::Result<Vec<Vec<SampleRec>>> {
        let (cond, arg) = sql::scope_sql(scope, "s");
        let skip = pack::skip_sql("s", skip);
        // `$1` first, so it is parameter 1 beside the numbered ?2 and ?3.
        let q = format!(
            "SELECT {SAMPLE_COLUMNS} FROM samples s NOT INDEXED
             WHERE {cond}{skip} AND s.id BETWEEN ?2 AND ?3 ORDER BY s.id"
        );
        sql::bucketed(cells, reserve, |f| {
            self.each_row(&q, params![arg, lo, hi], |r| {
                f(sql::sample_rec(r, &mut series)?)
            })
        })
    }

    /// Another read-only connection to the same file, for a thread; `None`
    /// where there is no file or it cannot be opened so (then one
    /// connection reads it all).
    fn second_reader(&self) -> Option<SqliteStore> {
        use rusqlite::OpenFlags as F;
        let path = self.conn.path().filter(|p| !p.is_empty())?;
        let uri = format!("file:{}?mode=ro", uri_path(Path::new(path)));
        let flags = F::SQLITE_OPEN_READ_ONLY | F::SQLITE_OPEN_URI | F::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(uri, flags).ok()?;
        conn.busy_timeout(BUSY).ok()?;
        map_reads(&conn);
        // Opening is lazy: a WAL store in a directory it cannot write (no
        // `-shm`) fails at its first read, here rather than mid-report.
        conn.query_row("SELECT count(*) FROM runs", [], |r| r.get::<_, i64>(0))
            .ok()?;
        Some(SqliteStore {
            conn,
            locks: Vec::new(),
            pack_part: pack::PART,
        })
    }
}

impl StoreRead for SqliteStore {
    fn runs(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        self.runs_of(campaign, true)
    }

    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        self.run_of(id, true)
    }

    fn runs_uncounted(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        self.runs_of(campaign, false)
    }

    fn run_uncounted(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        self.run_of(id, false)
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
        sql::run_details(id, &fp, &config)
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
        self.rows(
            &format!(
                "SELECT {CAMPAIGN_COLUMNS} FROM campaigns
                 WHERE (?1 IS NULL OR name = ?1) AND (?2 IS NULL OR id = ?2) ORDER BY id"
            ),
            params![name, id],
            |r| sql::campaign_row(r),
        )
    }

    /// A scope of many samples is read in two halves of its rowid range at
    /// once, the upper on a second connection ([`sql::in_halves`]); each
    /// half is a sequential read of the table.
    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>> {
        self.cells_split(scope, sql::SPLIT_AT)
    }

    fn cell_recs(&self, scope: Scope) -> anyhow::Result<Vec<super::CellRec>> {
        let (cond, arg) = sql::scope_sql(scope, "c");
        self.rows(&sql::cells_sql(&cond), [arg], |r| sql::cell_rec(r))
            .context("reading cells")
    }

    /// The scope's samples in the table's own order (index samples_run
    /// yields each run's rows by rowid, so no sort), each cell's rows in id
    /// order. Driving the read from the cells instead visits every page
    /// once per cell (a round writes one sample of each cell): 10^6 samples
    /// of 20 cells read 20x the table, and `report` took 2-3x longer.
    fn each_sample(
        &self,
        scope: Scope,
        f: &mut dyn FnMut(SampleRec) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut series = self.series(scope)?;
        let packed = self.each_packed(scope, &mut series, f)?;
        let Some(cond) = pack::rows_of("s", &self.scope_runs(scope)?, &packed) else {
            return Ok(());
        };
        self.each_row(
            &format!("SELECT {SAMPLE_COLUMNS} FROM samples s WHERE {cond} ORDER BY s.run_id, s.id"),
            [],
            |r| f(sql::sample_rec(r, &mut series)?),
        )
    }

    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>> {
        let (cond, arg) = sql::scope_sql(scope, "f");
        self.rows(&sql::failures_sql(&cond), [arg], |r| sql::failure_rec(r))
    }

    fn profiles(&self, cell_id: i64) -> anyhow::Result<Vec<super::ProfileRec>> {
        self.rows(sql::PROFILES_SQL, [cell_id], |r| sql::profile_rec(r))
    }

    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>> {
        let (cond, arg) = sql::scope_sql(scope, "v");
        self.rows(&sql::verdicts_sql(&cond), [arg], |r| sql::verdict_rec(r))
    }

    fn fleet_hosts(&self, plan: &str, plan_hash: &str) -> anyhow::Result<Vec<FleetHostRec>> {
        self.rows(sql::FLEET_HOSTS, [plan, plan_hash], |r| {
            Ok(FleetHostRec {
                plan: r.get(0)?,
                plan_hash: r.get(1)?,
                host: r.get(2)?,
                state: r.get(3)?,
                updated: r.get(4)?,
                last_error: r.get(5)?,
            })
        })
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        // Rounds restart at 0 in every run: count each cell's distinct
        // rounds, then add the cells of one key and state up.
        self.rows(
            "SELECT c.key, c.readings, r.host,
                    SUM((SELECT COUNT(DISTINCT s.round) FROM samples s WHERE s.cell_id = c.id))
             FROM cells c JOIN runs r ON r.id = c.run_id
             WHERE r.campaign_id = ?1 GROUP BY c.key, c.readings, r.host ORDER BY MIN(c.id)",
            [campaign],
            |r| {
                Ok(CellProgress {
                    key: r.get(0)?,
                    readings: r.get(1)?,
                    host: r.get(2)?,
                    samples: r.get(3)?,
                })
            },
        )
    }
}

/// The byte of the lock file that stands for campaign `name`.
fn lock_offset(name: &str) -> u64 {
    u64::from_str_radix(&crate::ids::plan_hash(name), 16).unwrap_or(0) >> 24
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
        let offset = lock_offset(name);
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
        // A run of a campaign writes here: the lock file it made holds the
        // reserve (a store opened only to copy into makes no such file).
        self.keep_reserve();
        Ok(())
    }

    /// Tried, and at once let go (closing the file ends its lock).
    fn campaign_locked(&self, name: &str) -> Option<bool> {
        use std::os::fd::AsRawFd;
        let path = self.locks_path()?;
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
        {
            Ok(f) => f,
            // No run ever locked anything on this store.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(false),
            Err(_) => return None,
        };
        match crate::system::lock_byte(file.as_raw_fd(), lock_offset(name), false) {
            Ok(got) => Some(!got),
            Err(_) => None,
        }
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
                "INSERT INTO runs (uuid, campaign_id, host, started, status, fingerprint, config, overhead_ns, labels)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7, ?8)
                 ON CONFLICT (uuid) DO NOTHING",
                params![
                    run.uuid,
                    run.campaign,
                    run.host,
                    run.started,
                    sql::json_text(&run.fingerprint),
                    sql::json_text(&run.config),
                    run.overhead_ns,
                    sql::json_text(&run.labels)
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
                    sql::json_text(&c.params),
                    sql::json_text(&c.factors),
                    sql::json_text(&c.label_params),
                    sql::json_text(&c.metrics),
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
                params![cell_id, placement, sql::json_text(notes)],
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
        // A savepoint: its own transaction, or a part of `begin`'s.
        let r = self.write(|c| {
            let sp = c.savepoint()?;
            let mut added = 0;
            {
                let mut st = sp.prepare_cached(
                    "INSERT INTO samples (run_id, cell_id, series_id, value, round, seq, t, process)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                     ON CONFLICT (series_id, round, seq) DO NOTHING",
                )?;
                let mut stored = sp.prepare_cached(
                    "SELECT value FROM samples WHERE series_id = ?1 AND round = ?2 AND seq = ?3",
                )?;
                let mut add_series = sp.prepare_cached(sql::ADD_SERIES)?;
                let mut series_id = sp.prepare_cached(sql::SERIES_ID)?;
                let mut known: std::collections::HashMap<(i64, &str, &str), i64> =
                    Default::default();
                for s in samples {
                    let key = (s.cell_id, s.metric(), s.unit());
                    let series = match known.get(&key) {
                        Some(id) => *id,
                        None => {
                            add_series.execute(params![s.cell_id, s.metric(), s.unit()])?;
                            let id = series_id
                                .query_row(params![s.cell_id, s.metric(), s.unit()], |r| {
                                    r.get(0)
                                })?;
                            *known.entry(key).or_insert(id)
                        }
                    };
                    let n = st.execute(params![
                        run_id, s.cell_id, series, s.value, s.round, s.seq, s.t, s.process
                    ])?;
                    if n == 0 {
                        let v: f64 =
                            stored.query_row(params![series, s.round, s.seq], |r| r.get(0))?;
                        if !super::same_value(v, s.value) {
                            // Dropping the savepoint rolls the batch back.
                            return Ok(Err(super::Conflict {
                                cell_id: s.cell_id,
                                metric: s.metric().to_owned(),
                                round: s.round,
                                stored: v,
                                new: s.value,
                            }));
                        }
                    }
                    added += n;
                }
            }
            if added > 0 {
                // The run's pack no longer holds all its samples.
                sp.prepare_cached("DELETE FROM sample_packs WHERE run_id = ?1")?
                    .execute([run_id])?;
            }
            sp.commit()?;
            Ok(Ok(added))
        })?;
        r.map_err(anyhow::Error::from)
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

    /// The run's end, then its samples packed ([`SqliteStore::pack`]).
    /// On a full disk the reserve ([`RESERVE`]) is given up for it.
    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        let end = |c: &Connection| {
            c.execute(
                "UPDATE runs SET ended = ?2, status = ?3 WHERE id = ?1",
                params![run_id, ended, status.as_str()],
            )
        };
        let mut r = end(&self.conn);
        let full = |r: &rusqlite::Result<usize>| matches!(r, Err(e) if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull));
        if full(&r) && self.release_reserve() {
            r = end(&self.conn);
        }
        self.write(|_| r)?;
        if status != RunStatus::Running {
            // An aid only, after the end is stored (in `begin`'s
            // transaction, in it): a pack that cannot be written (the disk
            // full: the run's end still fitted) is rolled back and the run
            // read by rows.
            let size = self.pack_part;
            let _ = self.write(|c| {
                let sp = c.savepoint()?;
                Self::pack(&sp, run_id, size)?;
                sp.commit()
            });
        }
        Ok(())
    }

    fn add_profile(&mut self, p: &super::ProfileRec) -> anyhow::Result<()> {
        let bytes = p.stacks.encode();
        self.write(|c| {
            c.execute(
                "INSERT INTO profiles (cell_id, round, stacks) VALUES (?1, ?2, ?3)
                 ON CONFLICT (cell_id, round) DO NOTHING",
                params![p.cell_id, p.round, bytes],
            )
        })?;
        Ok(())
    }

    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()> {
        let body = v.body.to_string();
        self.write(|c| {
            c.execute(
                "INSERT INTO verdicts (run_id, kind, body) VALUES (?1, ?2, ?3)
                 ON CONFLICT (run_id, kind) DO NOTHING",
                params![v.run_id, v.kind, body],
            )
        })?;
        Ok(())
    }

    fn set_fleet_host(&mut self, h: &FleetHostRec) -> anyhow::Result<()> {
        self.write(|c| {
            c.execute(
                sql::SET_FLEET_HOST,
                params![
                    h.plan,
                    h.plan_hash,
                    h.host,
                    h.state,
                    h.updated,
                    h.last_error
                ],
            )
        })?;
        Ok(())
    }

    fn begin(&mut self) -> anyhow::Result<()> {
        // IMMEDIATE: the write lock now, not at the first write.
        self.write(|c| c.execute_batch("BEGIN IMMEDIATE"))
    }

    fn commit(&mut self) -> anyhow::Result<()> {
        self.write(|c| c.execute_batch("COMMIT"))
    }

    fn rollback(&mut self) -> anyhow::Result<()> {
        self.write(|c| {
            if c.is_autocommit() {
                Ok(())
            } else {
                c.execute_batch("ROLLBACK")
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_the_store_suite() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SqliteStore::open(&dir.path().join("sub/k.db"), Access::Write).unwrap();
        super::super::suite::round_trip(&mut s);
        super::super::suite::all_or_nothing(&mut s);
        super::super::suite::fleet_state(&mut s);
        super::super::suite::ended_runs(&mut s);
        super::super::suite::run_locks_seen(|| {
            SqliteStore::open(&dir.path().join("sub/k.db"), Access::Write).unwrap()
        });
        drop(s);
        // Reopening does not re-run migrations.
        let s = SqliteStore::open(&dir.path().join("sub/k.db"), Access::Write).unwrap();
        let v: i64 = s
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(v, MIGRATIONS.len() as i64);
        assert_eq!(s.runs(None).unwrap().len(), 7, "the suite's runs");
        // Read in two halves at once or by one connection, every scope
        // holds the same cells with the same samples in the same order.
        let mut scopes: Vec<Scope> = s
            .runs(None)
            .unwrap()
            .iter()
            .map(|r| Scope::Run(r.id))
            .collect();
        scopes.extend((1..=4).map(Scope::Campaign));
        let mut split = 0;
        for scope in scopes {
            let one = format!("{:?}", sql::cells_with_samples(&s, scope, 0).unwrap());
            let halves = s.cells_split(scope, 1).unwrap();
            split += halves.iter().map(|(_, x)| x.len()).sum::<usize>();
            assert_eq!(format!("{halves:?}"), one, "{scope:?}");
        }
        assert!(split > 0, "the suite stored samples to read");
    }

    /// An ended run is packed in parts as it ends; every reader (one
    /// connection, two halves, each sample) gives its rows bit for bit; a
    /// sample added later removes the pack, and ending the run again packs
    /// it again. A pack that does not hold its run's samples is damage the
    /// read names, and so does `store check`.
    #[test]
    fn an_ended_run_is_read_from_its_pack_as_its_rows() {
        use super::super::suite;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.db");
        let mut s = SqliteStore::open(&path, Access::Write).unwrap();
        s.pack_part = 7;
        let run = s.begin_run(&suite::new_run("a", None)).unwrap();
        let cells = ["x", "y"].map(|k| s.add_cell(run, &suite::cell_info(k, &[])).unwrap());
        let batch: Vec<SampleRec> = (0..40)
            .flat_map(|r| cells.map(|c| suite::sample(c, r, 1.0 / (3.0 + f64::from(r)))))
            .collect();
        assert_eq!(s.add_samples(run, &batch).unwrap(), 80);
        let parts = |s: &SqliteStore| -> Vec<(i64, i64)> {
            let mut st = s
                .conn
                .prepare("SELECT part, n FROM sample_packs WHERE run_id = ?1 ORDER BY part")
                .unwrap();
            st.query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let rows = |s: &SqliteStore| -> Vec<SampleRec> {
            let mut series = s.series(Scope::Run(run)).unwrap();
            s.rows(
                &format!(
                    "SELECT {SAMPLE_COLUMNS} FROM samples s WHERE s.run_id = ?1 ORDER BY s.id"
                ),
                [run],
                |r| sql::sample_rec(r, &mut series),
            )
            .unwrap()
        };
        let reads = |s: &SqliteStore| {
            let want = rows(s);
            let mut each = Vec::new();
            s.each_sample(Scope::Run(run), &mut |x| {
                each.push(x);
                Ok(())
            })
            .unwrap();
            assert_eq!(format!("{each:?}"), format!("{want:?}"));
            for split in [1, i64::MAX] {
                let cells = s.cells_split(Scope::Run(run), split).unwrap();
                for (cell, got) in cells {
                    let mine: Vec<&SampleRec> =
                        want.iter().filter(|x| x.cell_id == cell.id).collect();
                    assert_eq!(format!("{got:?}"), format!("{mine:?}").replace('&', ""));
                }
            }
        };
        assert!(parts(&s).is_empty(), "a running run was packed");
        s.finish_run(run, 9.0, RunStatus::Done).unwrap();
        assert_eq!(
            parts(&s),
            (0..12)
                .map(|k| (k, if k < 11 { 7 } else { 3 }))
                .collect::<Vec<_>>()
        );
        reads(&s);
        let late = suite::sample(cells[0], 99, 5.0);
        assert_eq!(s.add_samples(run, &[late]).unwrap(), 1);
        assert!(parts(&s).is_empty(), "a stale pack stayed");
        reads(&s);
        s.finish_run(run, 9.0, RunStatus::Done).unwrap();
        assert_eq!(parts(&s).iter().map(|p| p.1).sum::<i64>(), 81);
        reads(&s);
        s.conn
            .execute(
                "UPDATE sample_packs SET n = n + 1 WHERE run_id = ?1 AND part = 2",
                [run],
            )
            .unwrap();
        let e = format!("{:#}", s.cells(Scope::Run(run)).unwrap_err());
        assert!(
            e.contains("damaged") && e.contains(&format!("part 2 of run {run}")),
            "{e}"
        );
        let problems = check(&path).unwrap();
        assert_eq!(problems, vec![super::pack::stale_problem(run)]);
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
        let mut s = SqliteStore::open(&path, Access::Write).unwrap();
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

    /// A store of schema 8 (metric and unit on every sample) migrates to
    /// the series table exactly.
    #[test]
    fn a_schema_8_store_migrates_its_samples() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v8.db");
        let old = Connection::open(&path).unwrap();
        for sql in &MIGRATIONS[..8] {
            old.execute_batch(sql).unwrap();
        }
        old.pragma_update(None, "user_version", 8).unwrap();
        old.execute_batch(super::super::suite::LEGACY_ROWS).unwrap();
        drop(old);
        super::super::suite::legacy_samples_migrate(&mut || {
            Box::new(SqliteStore::open(&path, Access::Write).unwrap())
        });
    }

    #[test]
    fn corrupt_stored_json_is_an_error_not_null() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SqliteStore::open(&dir.path().join("k.db"), Access::Write).unwrap();
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
        SqliteStore::open(&path, Access::Write).unwrap();
        let key = CampaignKey {
            name: "race".into(),
            plan_hash: "h".into(),
            generation: 1,
            plan_text: String::new(),
        };
        for _ in 0..20 {
            crate::store::suite::create_race(
                || SqliteStore::open(&path, Access::Write).unwrap(),
                &key,
            );
        }
        let s = SqliteStore::open(&path, Access::Write).unwrap();
        assert_eq!(s.campaigns(CampaignQuery::Named("race")).unwrap().len(), 1);
    }
}
