//! PostgreSQL backend (the `postgres` crate, no TLS): the lab's shared
//! store, selected by `--db postgres://user@host:port/db` or `KBENCH_DB`.
//! Same tables and identities as the SQLite store; the schema version is
//! the one row of `kbench_schema`, and each entry of [`MIGRATIONS`] moves
//! it one version up inside a transaction holding an advisory lock, so
//! several hosts opening a new database at once migrate it once.
//!
//! When the connection drops in the middle of a write (the server
//! restarted), the write connects again with exponential backoff for up
//! to 30 s, saying so in one line on stderr, takes the campaign's run lock
//! again and re-sends the write; every write is keyed by its records'
//! identities, so nothing is stored twice. Inside a transaction nothing is
//! retried: the server lost it.
//!
//! The password comes from the URL, `PGPASSWORD`, or `~/.pgpass`
//! (`PGPASSFILE`), like libpq; missing parts of the URL come from
//! `PGHOST`, `PGPORT`, `PGUSER` and `PGDATABASE`. No message kbench prints
//! shows the password: the store is named by its redacted URL
//! ([`super::locator`]).

use anyhow::Context;
use indexmap::IndexMap;
use postgres::{Client, NoTls, Row};
use std::cell::RefCell;

use super::locator::PgUrl;
use super::pack;
use super::sql::{self, CAMPAIGN_COLUMNS, SAMPLE_COLUMNS};
use super::{
    CampaignQuery, CampaignRow, CellProgress, FailureRec, FleetHostRec, NewRun, RunDetails, RunRow,
    SampleRec, Scope, StoreRead, StoreWrite, StoredCell, VerdictRec,
};
use crate::error::bad_input;
use crate::record::{CampaignKey, CellInfo, CellStatus, RunStatus};

/// Schema migrations, applied in order; index + 1 = the version after it.
/// The first is the SQLite store's schema 3 (stable identities) in
/// PostgreSQL's dialect.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE campaigns (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    generation BIGINT NOT NULL,
    plan_text TEXT NOT NULL,
    created DOUBLE PRECISION NOT NULL,
    UNIQUE (name, plan_hash, generation)
);
CREATE TABLE runs (
    id BIGSERIAL PRIMARY KEY,
    uuid TEXT NOT NULL UNIQUE,
    campaign_id BIGINT REFERENCES campaigns(id),
    host TEXT NOT NULL,
    started DOUBLE PRECISION NOT NULL,
    ended DOUBLE PRECISION,
    status TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    config TEXT NOT NULL,
    overhead_ns DOUBLE PRECISION NOT NULL
);
CREATE INDEX runs_campaign ON runs(campaign_id);
CREATE TABLE cells (
    id BIGSERIAL PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs(id),
    key TEXT NOT NULL,
    bench TEXT NOT NULL,
    source TEXT NOT NULL,
    kind TEXT NOT NULL,
    params TEXT NOT NULL,
    factors TEXT NOT NULL,
    label_params TEXT NOT NULL,
    metrics TEXT NOT NULL,
    readings TEXT NOT NULL DEFAULT '{}',
    placement TEXT,
    notes TEXT NOT NULL,
    status TEXT,
    UNIQUE (run_id, key)
);
CREATE INDEX cells_key ON cells(key);
CREATE TABLE samples (
    id BIGSERIAL PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs(id),
    cell_id BIGINT NOT NULL REFERENCES cells(id),
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    round BIGINT NOT NULL,
    seq BIGINT NOT NULL DEFAULT 0,
    t DOUBLE PRECISION NOT NULL,
    UNIQUE (cell_id, metric, round, seq)
);
CREATE INDEX samples_run ON samples(run_id);
CREATE TABLE failures (
    id BIGSERIAL PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs(id),
    cell_id BIGINT NOT NULL REFERENCES cells(id),
    seq BIGINT NOT NULL,
    round BIGINT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    message TEXT NOT NULL,
    UNIQUE (cell_id, seq)
);
CREATE INDEX failures_run ON failures(run_id);
"#,
    // 2: the process of a cell that took each sample (`--processes`).
    r#"
ALTER TABLE samples ADD COLUMN process BIGINT;
"#,
    // 3: what a producer decided from a run's samples (bisect's calls).
    r#"
CREATE TABLE verdicts (
    id BIGSERIAL PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs(id),
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (run_id, kind)
);
"#,
    // 4: a run's labels (`branch`, `commit`, `--label k=v`), as a JSON
    // object: baselines are chosen by them.
    r#"
ALTER TABLE runs ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
"#,
    // 5: a cell's call-stack profile per measured round (`run
    // --profile`): folded stacks, zlib-compressed.
    r#"
CREATE TABLE profiles (
    cell_id BIGINT NOT NULL REFERENCES cells(id),
    round BIGINT NOT NULL,
    stacks BYTEA NOT NULL,
    PRIMARY KEY (cell_id, round)
);
"#,
    // 6: each fleet host's state per plan, beside the results it
    // describes (any copy of the store shows it).
    r#"
CREATE TABLE fleet_hosts (
    plan TEXT NOT NULL,
    plan_hash TEXT NOT NULL,
    host TEXT NOT NULL,
    state TEXT NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    last_error TEXT,
    PRIMARY KEY (plan, plan_hash, host)
);
"#,
    // 7: a cell's metric and unit stored once (a series), not as text on
    // every sample (the SQLite store's schema 9). The table is rebuilt, so
    // its rows are slim on disk too; ids are kept.
    r#"
CREATE TABLE series (
    id BIGSERIAL PRIMARY KEY,
    cell_id BIGINT NOT NULL REFERENCES cells(id),
    metric TEXT NOT NULL,
    unit TEXT NOT NULL,
    UNIQUE (cell_id, metric, unit)
);
INSERT INTO series (cell_id, metric, unit)
    SELECT cell_id, metric, unit FROM samples GROUP BY cell_id, metric, unit ORDER BY MIN(id);
CREATE TABLE samples_v7 (
    id BIGSERIAL PRIMARY KEY,
    run_id BIGINT NOT NULL REFERENCES runs(id),
    cell_id BIGINT NOT NULL REFERENCES cells(id),
    series_id BIGINT NOT NULL REFERENCES series(id),
    value DOUBLE PRECISION NOT NULL,
    round BIGINT NOT NULL,
    seq BIGINT NOT NULL,
    t DOUBLE PRECISION NOT NULL,
    process BIGINT
);
INSERT INTO samples_v7 (id, run_id, cell_id, series_id, value, round, seq, t, process)
    SELECT s.id, s.run_id, s.cell_id, m.id, s.value, s.round, s.seq, s.t, s.process
    FROM samples s
    JOIN series m ON m.cell_id = s.cell_id AND m.metric = s.metric AND m.unit = s.unit
    ORDER BY s.id;
SELECT setval(pg_get_serial_sequence('samples_v7', 'id'),
              (SELECT COALESCE(MAX(id), 0) + 1 FROM samples_v7), false);
DROP TABLE samples;
ALTER TABLE samples_v7 RENAME TO samples;
ALTER TABLE samples ADD CONSTRAINT samples_identity UNIQUE (series_id, round, seq);
CREATE INDEX samples_run ON samples(run_id);
"#,
    // 8: an ended run's samples packed for reading ([`PgStore::pack`]):
    // parts of fixed-width records, kept only while the run gets no new
    // sample. A run's samples are found in id order by one index.
    r#"
CREATE TABLE sample_packs (
    run_id BIGINT NOT NULL REFERENCES runs(id),
    part BIGINT NOT NULL,
    n BIGINT NOT NULL,
    body BYTEA NOT NULL,
    PRIMARY KEY (run_id, part)
);
ALTER TABLE sample_packs ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE INDEX samples_run_id ON samples(run_id, id);
DROP INDEX samples_run;
"#,
];

/// The tables kbench made that each have a unique identity, checked by
/// `store check`.
const IDENTIFIED_TABLES: [&str; 6] = [
    "campaigns",
    "runs",
    "cells",
    "series",
    "samples",
    "failures",
];

/// The advisory lock every kbench migration takes ("kbench" in ASCII).
const MIGRATION_LOCK: i64 = 0x6b62_656e_6368;

/// The password for (host, port, db, user) from a pgpass file: lines of
/// `host:port:db:user:password`, `*` matching anything, `\` escaping.
fn pgpass_lookup(text: &str, host: &str, port: u16, db: &str, user: &str) -> Option<String> {
    let want = [host.to_string(), port.to_string(), db.into(), user.into()];
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => cur.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut cur)),
                c => cur.push(c),
            }
        }
        fields.push(cur);
        if fields.len() != 5 {
            continue;
        }
        let host_ok = |f: &str, w: &str| {
            f == "*" || f == w || (f == "localhost" && (w == "127.0.0.1" || w == "::1"))
        };
        if host_ok(&fields[0], &want[0])
            && fields[1..4]
                .iter()
                .zip(&want[1..])
                .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

pub struct PgStore {
    conn: RefCell<Client>,
    /// The store's URL without its password, for messages.
    name: String,
    /// Where to connect again when the connection drops.
    url: PgUrl,
    /// The sample insert, prepared once per connection: one round trip
    /// per batch.
    insert_samples: Option<postgres::Statement>,
    /// The campaign run locks this session holds (taken again after a
    /// reconnect).
    locks: Vec<i64>,
    /// Inside [`StoreWrite::begin`]: a lost connection lost the
    /// transaction, so nothing is retried.
    in_tx: bool,
    /// How long a write keeps reconnecting before it gives up.
    patience: std::time::Duration,
    /// Samples added since [`StoreWrite::begin`].
    added_in_tx: usize,
    /// The runs this transaction adds samples to, their packs gone and
    /// held from packers ([`PgStore::guard`]).
    guarded: Vec<i64>,
    /// The runs this transaction ended, packed when it commits.
    ended_in_tx: Vec<i64>,
    /// Samples per part of a pack ([`pack::PART`]; fewer in tests).
    pack_part: usize,
}

/// A transaction that added this many samples (`kbench ingest` writes one)
/// refreshes the planner's statistics of `samples` when it commits.
/// Until autovacuum got to it, a report right after ingesting 10^6 samples
/// read them through a sort on disk (0.51 s in the server) instead of
/// walking the primary key (0.22 s): the statistics still said the run
/// had none.
const ANALYZE_AFTER: usize = 10_000;

/// The advisory lock class of sample packs ("kbpa"); a run's id, its low
/// 31 bits, is the lock's second key. A writer holds the run's lock shared
/// from removing the run's pack until its transaction ends, so a packer,
/// which takes it alone and never waits, packs no run a writer is adding
/// to and sees every sample committed before it.
const PACK_LOCK: i32 = 0x6b62_7061;

/// How long a write waits for the server to come back: a restart (crash
/// recovery included) takes seconds.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// A batch's new series (`$1` cells, `$2` metrics, `$3` units), before
/// [`INSERT_SAMPLES`] finds them.
const ADD_SERIES: &str = "INSERT INTO series (cell_id, metric, unit)
     SELECT DISTINCT u.cell_id, u.metric, u.unit
     FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[]) AS u(cell_id, metric, unit)
     ON CONFLICT (cell_id, metric, unit) DO NOTHING";

const INSERT_SAMPLES: &str =
    "INSERT INTO samples (run_id, cell_id, series_id, value, round, seq, t, process)
     SELECT $1::BIGINT, u.cell_id, m.id, u.value, u.round, u.seq, u.t, u.process
     FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::DOUBLE PRECISION[], $6::BIGINT[],
                 $7::BIGINT[], $8::DOUBLE PRECISION[], $9::BIGINT[]) WITH ORDINALITY
         AS u(cell_id, metric, unit, value, round, seq, t, process, ord)
     JOIN series m ON m.cell_id = u.cell_id AND m.metric = u.metric AND m.unit = u.unit
     ORDER BY ord
     ON CONFLICT (series_id, round, seq) DO NOTHING";

impl PgStore {
    /// Connect to the store at `url`; with `create`, make its tables when
    /// the database has none yet (or migrate them to the newest schema).
    pub fn open(url: &PgUrl, create: bool) -> anyhow::Result<PgStore> {
        let s = PgStore::connect(url, create)?;
        s.check_schema()?;
        Ok(s)
    }

    /// [`PgStore::open`] without the schema's check.
    fn connect(url: &PgUrl, create: bool) -> anyhow::Result<PgStore> {
        let name = url.redacted();
        let conn = PgStore::client(url).map_err(|e| {
            // The driver's message names the cause (refused, auth failed),
            // never the password; the store is named by the redacted URL.
            // A wrong password, user or database is the user's to fix.
            use postgres::error::SqlState as S;
            let Some(pe) = e.downcast_ref::<postgres::Error>() else {
                return e;
            };
            let why = chain(pe);
            match pe.code() {
                Some(c)
                    if *c == S::INVALID_PASSWORD
                        || *c == S::INVALID_AUTHORIZATION_SPECIFICATION
                        || *c == S::INVALID_CATALOG_NAME =>
                {
                    bad_input!("store {name}: cannot connect: {why}")
                }
                _ => anyhow::anyhow!("store {name}: cannot connect: {why}"),
            }
        })?;
        let s = PgStore {
            conn: RefCell::new(conn),
            name: name.clone(),
            url: url.clone(),
            insert_samples: None,
            locks: Vec::new(),
            in_tx: false,
            patience: PATIENCE,
            added_in_tx: 0,
            guarded: Vec::new(),
            ended_in_tx: Vec::new(),
            pack_part: pack::PART,
        };
        s.migrate(&name, create)?;
        Ok(s)
    }

    /// A new session with the server; a driver error keeps its type
    /// ([`gone`] reads it).
    fn client(url: &PgUrl) -> anyhow::Result<Client> {
        let mut config = url.config()?;
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        if config.get_hosts().is_empty() {
            config.host(env("PGHOST").as_deref().unwrap_or("localhost"));
        }
        if config.get_ports().is_empty()
            && let Some(p) = env("PGPORT")
        {
            let p: u16 = p
                .parse()
                .map_err(|_| bad_input!("PGPORT={p}: not a port number"))?;
            config.port(p);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER").or_else(|| env("USER")).unwrap_or_default();
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE").unwrap_or_else(|| config.get_user().unwrap_or("").into());
            config.dbname(&db);
        }
        if config.get_password().is_none() {
            if let Some(p) = env("PGPASSWORD") {
                config.password(p);
            } else if let Some(p) = Self::pgpass(&config) {
                config.password(p);
            }
        }
        config.application_name("kbench");
        config.connect_timeout(std::time::Duration::from_secs(10));
        let mut conn = config.connect(NoTls)?;
        // A sample is announced (progress, `--events`) once its commit
        // returns, so the commit must survive a crash of the server: with
        // `off` a killed server lost the last ~0.5 s of announced samples.
        // (SQLite's NORMAL mode loses nothing when kbench dies either; only
        // a power cut.) Set here so a server default of `off` cannot weaken
        // it; a commit costs a WAL flush, not a measurement.
        conn.batch_execute("SET synchronous_commit = on")?;
        Ok(conn)
    }

    fn pgpass(config: &postgres::Config) -> Option<String> {
        let path = std::env::var_os("PGPASSFILE")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass"))
            })?;
        let text = crate::input::read_bounded(&path, crate::input::TEXT).ok()?;
        let text = String::from_utf8(text).ok()?;
        let host = match config.get_hosts().first()? {
            postgres::config::Host::Tcp(h) => h.clone(),
            postgres::config::Host::Unix(p) => p.display().to_string(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        pgpass_lookup(
            &text,
            &host,
            port,
            config.get_dbname().unwrap_or(""),
            config.get_user().unwrap_or(""),
        )
    }

    /// Bring the schema to the newest version, one migration per
    /// transaction, under an advisory lock.
    fn migrate(&self, name: &str, create: bool) -> anyhow::Result<()> {
        let mut c = self.conn.borrow_mut();
        loop {
            let mut tx = c.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
            let has_version: bool = tx
                .query_one("SELECT to_regclass('kbench_schema') IS NOT NULL", &[])?
                .get(0);
            let version: i64 = if has_version {
                tx.query_one("SELECT COALESCE(MAX(version), 0) FROM kbench_schema", &[])?
                    .get(0)
            } else {
                let foreign: Option<String> = tx
                    .query_opt(
                        "SELECT tablename::text FROM pg_tables WHERE schemaname = current_schema()
                         AND tablename IN ('campaigns', 'runs', 'cells', 'samples', 'failures')
                         LIMIT 1",
                        &[],
                    )?
                    .map(|r| r.get(0));
                if let Some(t) = foreign {
                    return Err(bad_input!(
                        "{name}: not a kbench store (it has a `{t}` table kbench did not make)"
                    ));
                }
                0
            };
            if version as usize > MIGRATIONS.len() {
                return Err(bad_input!(
                    "{name}: the store has schema version {version}, newer than this kbench knows ({}); upgrade kbench",
                    MIGRATIONS.len()
                ));
            }
            let Some(sql) = MIGRATIONS.get(version as usize) else {
                return Ok(());
            };
            if !create {
                return Err(if version == 0 {
                    bad_input!(
                        "{name}: no kbench store in this database (`kbench run` creates one)"
                    )
                } else {
                    bad_input!(
                        "{name}: its schema (version {version}) needs upgrading to {}: open it once with `kbench run`",
                        MIGRATIONS.len()
                    )
                });
            }
            if version == 0 {
                tx.batch_execute("CREATE TABLE kbench_schema (version BIGINT NOT NULL)")?;
            }
            tx.batch_execute(sql)
                .with_context(|| format!("{name}: schema migration {}", version + 1))?;
            tx.execute("DELETE FROM kbench_schema", &[])?;
            tx.execute(
                "INSERT INTO kbench_schema (version) VALUES ($1)",
                &[&(version + 1)],
            )?;
            tx.commit()?;
        }
    }

    #[cfg(test)]
    fn execute(&self, sql: &str) {
        self.conn.borrow_mut().batch_execute(sql).unwrap();
    }
}

/// An error and its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

impl PgStore {
    /// Rows of `sql` (parameters `params`), each decoded by `f`.
    fn rows<T>(
        &self,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
        mut f: impl FnMut(&Row) -> anyhow::Result<T>,
    ) -> anyhow::Result<Vec<T>> {
        let rows = self.conn.borrow_mut().query(sql, params)?;
        rows.iter()
            .map(|r| f(r).map_err(|e| self.damaged(&format!("{e:#}"))))
            .collect()
    }

    /// The campaign's runs (every run without one), their samples counted
    /// when `samples`.
    fn runs_of(&self, campaign: Option<i64>, samples: bool) -> anyhow::Result<Vec<RunRow>> {
        let select = sql::run_select(samples);
        self.rows(
            &format!("{select} WHERE $1::BIGINT IS NULL OR r.campaign_id = $1 ORDER BY r.id"),
            &[&campaign],
            sql::run_row,
        )
    }

    /// Run `id`, its samples counted when `samples`.
    fn run_of(&self, id: i64, samples: bool) -> anyhow::Result<Option<RunRow>> {
        let select = sql::run_select(samples);
        Ok(self
            .rows(&format!("{select} WHERE r.id = $1"), &[&id], sql::run_row)?
            .pop())
    }

    /// The series of a scope's samples.
    fn series(&self, scope: Scope) -> anyhow::Result<sql::Series> {
        let (cells, arg) = sql::scope_sql(scope, "c");
        let mut series = sql::Series::default();
        self.rows(&sql::series_sql(&cells), &[&arg], |r| series.add(r))?;
        Ok(series)
    }

    /// The samples of the packed runs that `cond` (on alias `p`, with no
    /// parameter) selects, each run's in id order, from their packs
    /// ([`PgStore::pack`]) to `f`; the runs read. A pack is read as a
    /// binary `COPY` of a row per part, each record decoded where the
    /// driver's buffer holds it: 10^6 samples are 16 rows of 3 MB instead
    /// of 10^6 rows, whose sending and receiving one by one was most of
    /// the server's and the client's time.
    fn each_packed(
        &self,
        cond: &str,
        series: &mut sql::Series,
        f: &mut dyn FnMut(SampleRec) -> anyhow::Result<()>,
    ) -> anyhow::Result<Vec<i64>> {
        let mut conn = self.conn.borrow_mut();
        let mut rows = conn.copy_out(&format!(
            "COPY (SELECT p.run_id, p.part, p.n, p.body FROM sample_packs p WHERE {cond}
                   ORDER BY p.run_id, p.part) TO STDOUT (FORMAT binary)"
        ))?;
        let mut parts = pack::Parts::default();
        let int = |r: &CopyRow<'_>, col| -> anyhow::Result<i64> {
            sql::Row::int(r, col)?.with_context(|| format!("column {col} is NULL"))
        };
        each_copied_row(&mut rows, 4, |r| {
            let (run, part, n) = (int(r, 0)?, int(r, 1)?, int(r, 2)?);
            let body = sql::Row::blob(r, 3)?.unwrap_or_default();
            if let Some(why) = parts.check(run, part, n, body.len()) {
                return Err(self.damaged(&why));
            }
            for rec in pack::records(body) {
                f(sql::sample_rec(&rec, series)?)?;
            }
            Ok(())
        })?;
        Ok(parts.runs())
    }

    /// The store holds what kbench cannot read back (exit 2).
    fn damaged(&self, what: &str) -> anyhow::Error {
        bad_input!(
            "{}: the store is damaged ({what}); nothing was written (`kbench store check` lists every problem)",
            self.name
        )
    }

    fn check(&self) -> anyhow::Result<Vec<String>> {
        let mut problems = Vec::new();
        if let Err(e) = self.check_schema() {
            problems.push(format!("{e:#}"));
            return Ok(problems);
        }
        // Reading every row reads every page (checked by the server when
        // the cluster has data checksums).
        for t in IDENTIFIED_TABLES {
            if let Err(e) = self
                .conn
                .borrow_mut()
                .query_one(&format!("SELECT COUNT(*) FROM (SELECT * FROM {t}) x"), &[])
            {
                problems.push(format!("table {t}: {}", chain(&e)));
            }
        }
        // A run's pack holds its samples: every part, in order, whole,
        // as many records as the run has rows.
        match self.conn.borrow_mut().query(&pack::stale_sql(), &[]) {
            Err(e) => problems.push(format!("table sample_packs: {}", chain(&e))),
            Ok(rows) => problems.extend(rows.iter().map(|r| pack::stale_problem(r.get(0)))),
        }
        Ok(problems)
    }

    /// Every table kbench made, each with its identity (a unique
    /// constraint): a table or constraint dropped by hand is damage.
    fn check_schema(&self) -> anyhow::Result<()> {
        for t in IDENTIFIED_TABLES {
            let unique: i64 = self
                .conn
                .borrow_mut()
                .query_one(
                    "SELECT COUNT(*) FROM pg_constraint
                     WHERE conrelid = to_regclass($1) AND contype = 'u'",
                    &[&t],
                )?
                .get(0);
            if unique == 0 {
                return Err(self.damaged(&format!(
                    "its table `{t}` or that table's unique identity is missing"
                )));
            }
        }
        Ok(())
    }
}

/// `kbench store check` of a PostgreSQL store: its schema, and every row
/// of every table read; every problem, one line each.
pub fn check(url: &PgUrl) -> anyhow::Result<Vec<String>> {
    PgStore::connect(url, false)?.check()
}

impl StoreRead for PgStore {
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
        let row = self
            .conn
            .borrow_mut()
            .query_opt("SELECT fingerprint, config FROM runs WHERE id = $1", &[&id])?
            .ok_or_else(|| bad_input!("no run {id} in the store"))?;
        sql::run_details(id, row.try_get(0)?, row.try_get(1)?)
    }

    fn last_run_id(&self) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .borrow_mut()
            .query_one("SELECT MAX(id) FROM runs", &[])?
            .get(0))
    }

    fn campaigns(&self, q: CampaignQuery<'_>) -> anyhow::Result<Vec<CampaignRow>> {
        let (name, id) = match q {
            CampaignQuery::Named(n) => (Some(n), None),
            CampaignQuery::Id(i) => (None, Some(i)),
        };
        self.rows(
            &format!(
                "SELECT {CAMPAIGN_COLUMNS} FROM campaigns
                 WHERE ($1::TEXT IS NULL OR name = $1) AND ($2::BIGINT IS NULL OR id = $2)
                 ORDER BY id"
            ),
            &[&name, &id],
            sql::campaign_row,
        )
    }

    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>> {
        // Room for the packed samples in each cell's list, so the lists
        // neither double nor copy as they fill.
        let (cond, arg) = sql::scope_sql(scope, "p");
        let packed: i64 = self
            .conn
            .borrow_mut()
            .query_one(
                &format!("SELECT COALESCE(SUM(p.n), 0)::BIGINT FROM sample_packs p WHERE {cond}"),
                &[&arg],
            )?
            .get(0);
        sql::cells_with_samples(self, scope, usize::try_from(packed).unwrap_or(0))
    }

    fn cell_recs(&self, scope: Scope) -> anyhow::Result<Vec<super::CellRec>> {
        let (cond, arg) = sql::scope_sql(scope, "c");
        self.rows(&sql::cells_sql(&cond), &[&arg], sql::cell_rec)
            .context("reading cells")
    }

    /// Streamed, not collected: a campaign can hold millions of rows. The
    /// packed runs' samples first ([`PgStore::each_packed`]), then the
    /// others' rows in id order (each cell's in the order taken): ordering
    /// by cell first sorted 10^6 rows on disk, 1.4 s of the server's time
    /// against 0.57 s. Rows are read as a binary `COPY`
    /// ([`each_copied_row`]), not as query rows: the driver's work per
    /// result row (a `Row` built, a row stream polled) was half of a
    /// report's time in the client.
    fn each_sample(
        &self,
        scope: Scope,
        f: &mut dyn FnMut(SampleRec) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        let mut series = self.series(scope)?;
        // COPY takes no parameters: the scope's id, a number, is written in.
        let (cond, arg) = sql::scope_sql(scope, "p");
        let packed = self.each_packed(&cond.replace("$1", &arg.to_string()), &mut series, f)?;
        let runs = match scope {
            Scope::Run(id) => vec![id],
            Scope::Campaign(c) => self.rows(
                "SELECT id FROM runs WHERE campaign_id = $1 ORDER BY id",
                &[&c],
                |r| Ok(r.try_get(0)?),
            )?,
        };
        let Some(cond) = pack::rows_of("s", &runs, &packed) else {
            return Ok(());
        };
        let mut conn = self.conn.borrow_mut();
        let mut rows = conn.copy_out(&format!(
            "COPY (SELECT {SAMPLE_COLUMNS} FROM samples s WHERE {cond} ORDER BY s.id)
             TO STDOUT (FORMAT binary)"
        ))?;
        each_copied_row(&mut rows, SAMPLE_FIELDS, |r| {
            f(sql::sample_rec(r, &mut series)?)
        })
    }

    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>> {
        let (cond, arg) = sql::scope_sql(scope, "f");
        self.rows(&sql::failures_sql(&cond), &[&arg], sql::failure_rec)
    }

    fn profiles(&self, cell_id: i64) -> anyhow::Result<Vec<super::ProfileRec>> {
        self.rows(sql::PROFILES_SQL, &[&cell_id], sql::profile_rec)
    }

    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>> {
        let (cond, arg) = sql::scope_sql(scope, "v");
        self.rows(&sql::verdicts_sql(&cond), &[&arg], sql::verdict_rec)
    }

    fn fleet_hosts(&self, plan: &str, plan_hash: &str) -> anyhow::Result<Vec<FleetHostRec>> {
        self.rows(sql::FLEET_HOSTS, &[&plan, &plan_hash], |r| {
            Ok(FleetHostRec {
                plan: r.try_get(0)?,
                plan_hash: r.try_get(1)?,
                host: r.try_get(2)?,
                state: r.try_get(3)?,
                updated: r.try_get(4)?,
                last_error: r.try_get(5)?,
            })
        })
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        // Rounds restart at 0 in every run: count each cell's distinct
        // rounds, then add the cells of one key and state up.
        self.rows(
            "SELECT c.key, c.readings, r.host, COALESCE(SUM(x.n), 0)::BIGINT
             FROM cells c JOIN runs r ON r.id = c.run_id
             CROSS JOIN LATERAL (SELECT COUNT(DISTINCT s.round) AS n FROM samples s
                                 WHERE s.cell_id = c.id) x
             WHERE r.campaign_id = $1 GROUP BY c.key, c.readings, r.host ORDER BY MIN(c.id)",
            &[&campaign],
            |r| {
                let n: i64 = r.try_get(3)?;
                Ok(CellProgress {
                    key: r.try_get(0)?,
                    readings: r.try_get(1)?,
                    host: r.try_get(2)?,
                    samples: u32::try_from(n)
                        .with_context(|| format!("corrupt stored data: {n} samples"))?,
                })
            },
        )
    }
}

/// The advisory lock key of campaign `name`'s run lock.
fn lock_key(name: &str) -> i64 {
    u64::from_str_radix(&crate::ids::plan_hash(name), 16).unwrap_or(0) as i64
}

impl StoreWrite for PgStore {
    /// A session-level advisory lock on the campaign's name, released when
    /// the connection closes.
    /// Tried, and at once let go: a session's advisory lock ends with
    /// it, so a killed holder's is gone.
    fn campaign_locked(&self, name: &str) -> Option<bool> {
        let key = lock_key(name);
        if self.locks.contains(&key) {
            return Some(true);
        }
        let mut conn = self.conn.borrow_mut();
        let got: bool = conn
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])
            .ok()?
            .get(0);
        if got {
            conn.execute("SELECT pg_advisory_unlock($1)", &[&key])
                .ok()?;
        }
        Some(!got)
    }

    fn lock_campaign(&mut self, name: &str) -> anyhow::Result<()> {
        let key = lock_key(name);
        let got: bool = self
            .conn
            .borrow_mut()
            .query_one("SELECT pg_try_advisory_lock($1)", &[&key])?
            .get(0);
        if !got {
            eprintln!(
                "kbench: campaign `{name}` is being run by another kbench on this store; waiting for it"
            );
            self.conn
                .borrow_mut()
                .execute("SELECT pg_advisory_lock($1)", &[&key])?;
        }
        self.locks.push(key);
        Ok(())
    }

    fn campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64> {
        self.retry(|s| s.raw_campaign(key))
    }

    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        self.retry(|s| s.raw_begin_run(run))
    }

    fn run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        self.retry(|s| s.raw_run_id(uuid))
    }

    fn add_cell(&mut self, run_id: i64, c: &CellInfo) -> anyhow::Result<i64> {
        self.retry(|s| s.raw_add_cell(run_id, c))
    }

    fn cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>> {
        self.retry(|s| s.raw_cell_id(run_id, key))
    }

    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        self.retry(|s| s.raw_update_cell(cell_id, placement, notes))
    }

    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        self.retry(|s| s.raw_finish_cell(cell_id, status))
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        let n = self.retry(|s| s.raw_add_samples(run_id, samples))?;
        if self.in_tx {
            self.added_in_tx += n;
        }
        Ok(n)
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        self.retry(|s| s.raw_add_failure(f))
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        self.retry(|s| s.raw_finish_run(run_id, ended, status))?;
        if self.in_tx {
            self.ended_in_tx.push(run_id);
        } else {
            self.pack(&[run_id]);
        }
        Ok(())
    }

    fn add_profile(&mut self, p: &super::ProfileRec) -> anyhow::Result<()> {
        let stacks = p.stacks.encode();
        self.retry(|s| {
            s.conn.get_mut().execute(
                "INSERT INTO profiles (cell_id, round, stacks) VALUES ($1, $2, $3)
                 ON CONFLICT (cell_id, round) DO NOTHING",
                &[&p.cell_id, &(p.round as i64), &stacks],
            )?;
            Ok(())
        })
    }

    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()> {
        let body = v.body.to_string();
        self.retry(|s| {
            s.conn.get_mut().execute(
                "INSERT INTO verdicts (run_id, kind, body) VALUES ($1, $2, $3)
                 ON CONFLICT (run_id, kind) DO NOTHING",
                &[&v.run_id, &v.kind, &body],
            )?;
            Ok(())
        })
    }

    fn set_fleet_host(&mut self, h: &FleetHostRec) -> anyhow::Result<()> {
        self.retry(|s| {
            s.conn.get_mut().execute(
                sql::SET_FLEET_HOST,
                &[
                    &h.plan,
                    &h.plan_hash,
                    &h.host,
                    &h.state,
                    &h.updated,
                    &h.last_error,
                ],
            )?;
            Ok(())
        })
    }

    fn begin(&mut self) -> anyhow::Result<()> {
        self.retry(|s| Ok(s.conn.get_mut().batch_execute("BEGIN")?))?;
        self.in_tx = true;
        self.added_in_tx = 0;
        self.guarded.clear();
        self.ended_in_tx.clear();
        Ok(())
    }

    fn commit(&mut self) -> anyhow::Result<()> {
        let r = self.retry(|s| Ok(s.conn.get_mut().batch_execute("COMMIT")?));
        self.in_tx = false;
        self.guarded.clear();
        let ended = std::mem::take(&mut self.ended_in_tx);
        if r.is_ok() && std::mem::take(&mut self.added_in_tx) >= ANALYZE_AFTER {
            // The samples are stored; statistics are only an aid, so a
            // failure here (a user who does not own the table gets a
            // warning, not an error) changes nothing of the outcome.
            let _ = self.conn.get_mut().batch_execute("ANALYZE samples");
        }
        if r.is_ok() {
            self.pack(&ended);
        }
        r
    }

    fn rollback(&mut self) -> anyhow::Result<()> {
        let r = self.retry(|s| Ok(s.conn.get_mut().batch_execute("ROLLBACK")?));
        self.in_tx = false;
        self.added_in_tx = 0;
        self.guarded.clear();
        self.ended_in_tx.clear();
        r
    }
}

/// Whether `e` says the server went away (killed, restarted, shut down,
/// the network gone), not that it refused the statement.
fn gone(e: &anyhow::Error) -> bool {
    let Some(pe) = e.downcast_ref::<postgres::Error>() else {
        return false;
    };
    pe.is_closed()
        || pe
            .code()
            .is_some_and(|c| c.code().starts_with("57P") || c.code().starts_with("08"))
        || std::error::Error::source(pe).is_some_and(|s| s.is::<std::io::Error>())
}

/// The writes themselves; [`StoreWrite`] runs them through
/// [`PgStore::retry`].
impl PgStore {
    /// A write's error as one line naming the store; a lost connection
    /// ([`super::Lost`]) says what was kept and what to do.
    fn lost(&self, e: anyhow::Error) -> anyhow::Error {
        let Some(pe) = e.downcast_ref::<postgres::Error>() else {
            return e;
        };
        if gone(&e) {
            self.gave_up(&e, None)
        } else {
            anyhow::anyhow!("store {}: {}", self.name, chain(pe))
        }
    }

    /// The connection is lost for good (after `tried` reconnecting).
    fn gave_up(&self, e: &anyhow::Error, tried: Option<std::time::Duration>) -> anyhow::Error {
        let why = e
            .downcast_ref::<postgres::Error>()
            .map_or_else(|| format!("{e:#}"), |pe| chain(pe));
        let tried = tried.map_or_else(String::new, |d| {
            format!(" and did not come back in {:.0} s", d.as_secs_f64())
        });
        anyhow::Error::new(super::Lost(format!(
            "store {}: the connection to the server was lost ({why}){tried}; what was stored before is kept: run the plan again to resume its campaign",
            self.name,
        )))
    }

    /// Run the write `f`; when the connection drops, connect again with
    /// exponential backoff (up to [`PgStore::patience`], one line on
    /// stderr) and run it again: every write is keyed by its records'
    /// identities, so a write the server committed before the connection
    /// dropped is not stored twice. Inside a transaction nothing is
    /// retried (the server rolled it back).
    fn retry<T>(
        &mut self,
        mut f: impl FnMut(&mut PgStore) -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        let mut err = match f(self) {
            Ok(v) => return Ok(v),
            Err(e) if gone(&e) && !self.in_tx => e,
            Err(e) => {
                // The server rolled back the transaction it lost.
                self.in_tx &= !gone(&e);
                return Err(self.lost(e));
            }
        };
        let start = std::time::Instant::now();
        eprintln!(
            "kbench: store {}: the connection to the server was lost; reconnecting (for up to {} s)",
            self.name,
            self.patience.as_secs()
        );
        let mut wait = std::time::Duration::from_millis(100);
        loop {
            if start.elapsed() + wait > self.patience {
                return Err(self.gave_up(&err, Some(start.elapsed())));
            }
            std::thread::sleep(wait);
            wait = (wait * 2).min(std::time::Duration::from_secs(5));
            if let Err(e) = self.reconnect() {
                if !gone(&e) && e.downcast_ref::<super::Lost>().is_some() {
                    return Err(e);
                }
                err = e;
                continue;
            }
            match f(self) {
                Ok(v) => return Ok(v),
                Err(e) if gone(&e) => err = e,
                Err(e) => return Err(self.lost(e)),
            }
        }
    }

    /// A new session in place of the lost one, holding the same campaign
    /// locks; a lock another kbench took meanwhile ends the run.
    fn reconnect(&mut self) -> anyhow::Result<()> {
        let mut conn = PgStore::client(&self.url)?;
        for key in &self.locks {
            let got: bool = conn
                .query_one("SELECT pg_try_advisory_lock($1)", &[key])?
                .get(0);
            if !got {
                return Err(anyhow::Error::new(super::Lost(format!(
                    "store {}: the connection to the server was lost, and another kbench took the campaign's run lock meanwhile; what was stored before is kept: run the plan again to resume its campaign",
                    self.name
                ))));
            }
        }
        *self.conn.get_mut() = conn;
        self.insert_samples = None;
        Ok(())
    }

    fn raw_campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64> {
        let c = self.conn.get_mut();
        // One statement creates it or does nothing: a second writer racing
        // on the same identity waits for the first and then finds its row.
        c.execute(
            "INSERT INTO campaigns (name, plan_hash, generation, plan_text, created)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (name, plan_hash, generation) DO NOTHING",
            &[
                &key.name,
                &key.plan_hash,
                &i64::from(key.generation),
                &key.plan_text,
                &crate::ids::unix_now(),
            ],
        )?;
        Ok(c.query_one(
            "SELECT id FROM campaigns WHERE name = $1 AND plan_hash = $2 AND generation = $3",
            &[&key.name, &key.plan_hash, &i64::from(key.generation)],
        )?
        .get(0))
    }

    fn raw_begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        self.conn.get_mut().execute(
            "INSERT INTO runs (uuid, campaign_id, host, started, status, fingerprint, config, overhead_ns, labels)
             VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $8)
             ON CONFLICT (uuid) DO NOTHING",
            &[
                &run.uuid,
                &run.campaign,
                &run.host,
                &run.started,
                &sql::json_text(&run.fingerprint),
                &sql::json_text(&run.config),
                &run.overhead_ns,
                &sql::json_text(&run.labels),
            ],
        )?;
        self.raw_run_id(&run.uuid)?
            .context("run row vanished after insert")
    }

    fn raw_run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .get_mut()
            .query_opt("SELECT id FROM runs WHERE uuid = $1", &[&uuid])?
            .map(|r| r.get(0)))
    }

    fn raw_add_cell(&mut self, run_id: i64, c: &CellInfo) -> anyhow::Result<i64> {
        self.conn.get_mut().execute(
            "INSERT INTO cells (run_id, key, bench, source, kind, params, factors, label_params,
                                metrics, readings, placement, notes)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULL, '{}')
             ON CONFLICT (run_id, key) DO NOTHING",
            &[
                &run_id,
                &c.key,
                &c.bench,
                &c.source,
                &c.kind.as_str(),
                &sql::json_text(&c.params),
                &sql::json_text(&c.factors),
                &sql::json_text(&c.label_params),
                &sql::json_text(&c.metrics),
                &c.readings_text(),
            ],
        )?;
        self.raw_cell_id(run_id, &c.key)?
            .context("cell row vanished after insert")
    }

    fn raw_cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .conn
            .get_mut()
            .query_opt(
                "SELECT id FROM cells WHERE run_id = $1 AND key = $2",
                &[&run_id, &key],
            )?
            .map(|r| r.get(0)))
    }

    fn raw_update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        self.conn.get_mut().execute(
            "UPDATE cells SET placement = $2, notes = $3 WHERE id = $1",
            &[&cell_id, &placement, &sql::json_text(notes)],
        )?;
        Ok(())
    }

    fn raw_finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        self.conn.get_mut().execute(
            "UPDATE cells SET status = $2 WHERE id = $1",
            &[&cell_id, &status.as_str()],
        )?;
        Ok(())
    }

    /// Pack each of `runs` that has ended, has no pack yet and that no
    /// writer is adding samples to: its samples, in id order, copied into
    /// parts of fixed-width records ([`pack`]), which
    /// [`PgStore::each_packed`] reads instead of a row per sample. The rows
    /// stay the store's truth: a run's pack goes in the transaction that
    /// adds a sample to it ([`PgStore::guard`]). An aid only, so a failure
    /// (a role that may not write, a lost connection) leaves the run read
    /// by rows and changes nothing else; it is not reported.
    fn pack(&mut self, runs: &[i64]) {
        if runs.is_empty() {
            return;
        }
        let _ = Self::raw_pack(self.conn.get_mut(), runs, self.pack_part);
    }

    /// [`PgStore::pack`], in one transaction (rolled back on error); the
    /// runs packed.
    fn raw_pack(conn: &mut Client, runs: &[i64], size: usize) -> anyhow::Result<Vec<i64>> {
        let mut tx = conn.transaction()?;
        // A run a writer holds is left (the lock is tried, never waited
        // for); the lock taken, a pack another packer made is seen.
        let held: Vec<i64> = tx
            .query(
                "WITH r AS MATERIALIZED (SELECT id FROM runs
                                         WHERE id = ANY($1) AND status <> 'running')
                 SELECT id FROM r WHERE pg_try_advisory_xact_lock($2, (id & 2147483647)::INT4)
                 ORDER BY id",
                &[&runs, &PACK_LOCK],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let todo: Vec<i64> = tx
            .query(
                "SELECT id FROM UNNEST($1::BIGINT[]) id
                 WHERE NOT EXISTS (SELECT 1 FROM sample_packs p WHERE p.run_id = id)",
                &[&held],
            )?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let mut part = Vec::with_capacity(size * pack::RECORD);
        for &run in &todo {
            let mut last = i64::MIN;
            for k in 0_i64.. {
                part.clear();
                let mut rows = tx.copy_out(&format!(
                    "COPY (SELECT s.id, {SAMPLE_COLUMNS} FROM samples s
                           WHERE s.run_id = {run} AND s.id > {last} ORDER BY s.id LIMIT {size})
                     TO STDOUT (FORMAT binary)"
                ))?;
                each_copied_row(&mut rows, SAMPLE_FIELDS + 1, |r| {
                    last = sql::Row::int(r, 0)?.context("a sample without an id")?;
                    pack::push(&mut part, r, 1)
                })?;
                drop(rows);
                let n = (part.len() / pack::RECORD) as i64;
                if n == 0 {
                    break;
                }
                tx.execute(
                    "INSERT INTO sample_packs (run_id, part, n, body) VALUES ($1, $2, $3, $4)",
                    &[&run, &k, &n, &part],
                )?;
                if (n as usize) < size {
                    break;
                }
            }
        }
        tx.commit()?;
        Ok(todo)
    }

    /// Add `samples` to run `run_id`, in a transaction of their own
    /// unless one is open: its pack goes first ([`PgStore::guard`]).
    fn raw_add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        if samples.is_empty() {
            return Ok(0);
        }
        if self.in_tx {
            self.guard(run_id)?;
            return self.insert_samples(run_id, samples);
        }
        self.conn.get_mut().batch_execute("BEGIN")?;
        let r = self
            .guard(run_id)
            .and_then(|()| self.insert_samples(run_id, samples));
        self.guarded.clear();
        let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
        match (r, self.conn.get_mut().batch_execute(end)) {
            (Ok(n), Ok(())) => Ok(n),
            (Ok(_), Err(e)) => Err(e.into()),
            (Err(e), _) => Err(e),
        }
    }

    /// Before the open transaction adds samples to run `run_id`: take the
    /// run's pack lock shared ([`PACK_LOCK`]), held to the transaction's
    /// end, then remove its pack, which no longer holds all its samples.
    /// Once per run and transaction.
    fn guard(&mut self, run_id: i64) -> anyhow::Result<()> {
        if self.guarded.contains(&run_id) {
            return Ok(());
        }
        // One round trip; each statement reads what was committed when it
        // starts, so the removal sees a pack a packer committed while this
        // waited for the lock.
        self.conn.get_mut().batch_execute(&format!(
            "SELECT pg_advisory_xact_lock_shared({PACK_LOCK}, {});
             DELETE FROM sample_packs WHERE run_id = {run_id}",
            run_id & 0x7fff_ffff
        ))?;
        self.guarded.push(run_id);
        Ok(())
    }

    fn insert_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        // One statement (one round trip) for the whole batch, in order.
        let cell: Vec<i64> = samples.iter().map(|s| s.cell_id).collect();
        let metric: Vec<&str> = samples.iter().map(|s| s.metric()).collect();
        let unit: Vec<&str> = samples.iter().map(|s| s.unit()).collect();
        let value: Vec<f64> = samples.iter().map(|s| s.value).collect();
        let round: Vec<i64> = samples.iter().map(|s| i64::from(s.round)).collect();
        let seq: Vec<i64> = samples.iter().map(|s| i64::from(s.seq)).collect();
        let t: Vec<f64> = samples.iter().map(|s| s.t).collect();
        let process: Vec<Option<i64>> = samples.iter().map(|s| s.process.map(i64::from)).collect();
        let conn = self.conn.get_mut();
        conn.execute(ADD_SERIES, &[&cell, &metric, &unit])?;
        let st = match &self.insert_samples {
            Some(st) => st.clone(),
            None => {
                let st = conn.prepare(INSERT_SAMPLES)?;
                self.insert_samples = Some(st.clone());
                st
            }
        };
        let n = conn.execute(
            &st,
            &[
                &run_id, &cell, &metric, &unit, &value, &round, &seq, &t, &process,
            ],
        )?;
        if (n as usize) < samples.len() {
            // Some were stored already: with the same values, a replay; with
            // others, a conflict (reported; inside `begin` nothing is kept).
            let clash = conn.query_opt(
                "SELECT u.metric, u.round, s.value, u.value, u.cell_id
                 FROM UNNEST($1::BIGINT[], $2::TEXT[], $3::TEXT[], $4::BIGINT[], $5::BIGINT[],
                             $6::DOUBLE PRECISION[]) AS u(cell_id, metric, unit, round, seq, value)
                 JOIN series m ON m.cell_id = u.cell_id AND m.metric = u.metric
                      AND m.unit = u.unit
                 JOIN samples s ON s.series_id = m.id AND s.round = u.round AND s.seq = u.seq
                 WHERE s.value <> u.value LIMIT 1",
                &[&cell, &metric, &unit, &round, &seq, &value],
            )?;
            if let Some(r) = clash {
                let round: i64 = r.get(1);
                return Err(super::Conflict {
                    cell_id: r.get(4),
                    metric: r.get(0),
                    round: u32::try_from(round).unwrap_or(u32::MAX),
                    stored: r.get(2),
                    new: r.get(3),
                }
                .into());
            }
        }
        Ok(n as usize)
    }

    fn raw_add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        self.conn.get_mut().execute(
            "INSERT INTO failures (run_id, cell_id, seq, round, t, message)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (cell_id, seq) DO NOTHING",
            &[
                &f.run_id,
                &f.cell_id,
                &i64::from(f.seq),
                &i64::from(f.round),
                &f.t,
                &f.message,
            ],
        )?;
        Ok(())
    }

    fn raw_finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        self.conn.get_mut().execute(
            "UPDATE runs SET ended = $2, status = $3 WHERE id = $1",
            &[&run_id, &ended, &status.as_str()],
        )?;
        Ok(())
    }
}

/// The fields of [`SAMPLE_COLUMNS`].
const SAMPLE_FIELDS: usize = 6;

/// The most fields a row of [`each_copied_row`] may have.
const COPY_FIELDS: usize = 8;

/// The start of every binary `COPY`.
const COPY_SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Each row of a binary `COPY ... TO STDOUT (FORMAT binary)` read from
/// `input`, of `fields` fields, passed to `f`. The format: a signature, 32
/// bits of flags and a header extension of the length its 32 bits say;
/// then per row a 16-bit field count and per field a 32-bit length (-1 for
/// NULL) and that many bytes, all big-endian; a count of -1 ends it. Rows
/// are decoded where the driver's buffer holds them (it hands over a
/// message at a time, a row each); only a row cut across two reads is
/// copied, to be finished by the next.
fn each_copied_row(
    input: &mut impl std::io::BufRead,
    fields: usize,
    mut f: impl FnMut(&CopyRow<'_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    anyhow::ensure!(fields <= COPY_FIELDS, "a COPY of {fields} fields");
    let mut copy = Copied::default();
    let mut cut: Vec<u8> = Vec::new();
    loop {
        let chunk = input.fill_buf()?;
        let n = chunk.len();
        if n == 0 {
            break;
        }
        if cut.is_empty() {
            let used = copy.rows(chunk, fields, &mut f)?;
            cut.extend_from_slice(&chunk[used..]);
        } else {
            cut.extend_from_slice(chunk);
            let used = copy.rows(&cut, fields, &mut f)?;
            cut.drain(..used);
        }
        input.consume(n);
    }
    anyhow::ensure!(
        copy.ended && cut.is_empty(),
        "the server's COPY ended {}",
        if copy.ended {
            "with bytes after its end"
        } else {
            "early"
        }
    );
    Ok(())
}

/// Where [`each_copied_row`] is in its input.
#[derive(Default)]
struct Copied {
    header: bool,
    ended: bool,
}

impl Copied {
    /// Decode the whole rows at the start of `buf` (the header first, if
    /// not yet read) and pass each to `f`; the bytes used.
    fn rows(
        &mut self,
        buf: &[u8],
        fields: usize,
        f: &mut impl FnMut(&CopyRow<'_>) -> anyhow::Result<()>,
    ) -> anyhow::Result<usize> {
        let mut pos = 0;
        if !self.header {
            let Some(ext) = be::<4>(buf, 15).map(u32::from_be_bytes) else {
                return Ok(0);
            };
            anyhow::ensure!(
                buf.starts_with(COPY_SIGNATURE),
                "the server's COPY is not in binary format"
            );
            pos = 19 + ext as usize;
            if buf.len() < pos {
                return Ok(0);
            }
            self.header = true;
        }
        let mut row = [None; COPY_FIELDS];
        while !self.ended {
            let Some(count) = be::<2>(buf, pos).map(i16::from_be_bytes) else {
                break;
            };
            if count == -1 {
                self.ended = true;
                pos += 2;
                break;
            }
            anyhow::ensure!(
                count as usize == fields,
                "a COPY row of {count} fields, not {fields}"
            );
            let Some(end) = row_at(buf, pos + 2, &mut row[..fields]) else {
                break;
            };
            f(&CopyRow(&row[..fields]))?;
            pos = end;
        }
        Ok(pos)
    }
}

/// The fields of the row whose first field starts at `pos` in `buf` put in
/// `row`; where the row ends, or `None` if `buf` ends first.
fn row_at<'a>(buf: &'a [u8], mut pos: usize, row: &mut [Option<&'a [u8]>]) -> Option<usize> {
    for field in row {
        let len = i32::from_be_bytes(be::<4>(buf, pos)?);
        pos += 4;
        *field = match usize::try_from(len) {
            Ok(len) => {
                let bytes = buf.get(pos..pos.checked_add(len)?)?;
                pos += len;
                Some(bytes)
            }
            Err(_) => None,
        };
    }
    Some(pos)
}

/// The `N` bytes at `pos` of `buf`, if it holds them.
fn be<const N: usize>(buf: &[u8], pos: usize) -> Option<[u8; N]> {
    buf.get(pos..pos.checked_add(N)?)?.try_into().ok()
}

/// A row of a binary `COPY`: each field's bytes, `None` for NULL, in the
/// server's binary form of its type (integers and floats big-endian).
struct CopyRow<'a>(&'a [Option<&'a [u8]>]);

impl CopyRow<'_> {
    fn field(&self, col: usize) -> anyhow::Result<Option<&[u8]>> {
        self.0
            .get(col)
            .copied()
            .with_context(|| format!("no column {col} in a row of {}", self.0.len()))
    }
}

impl sql::Row for CopyRow<'_> {
    fn int(&self, col: usize) -> anyhow::Result<Option<i64>> {
        self.field(col)?
            .map(|b| match b.len() {
                8 => Ok(i64::from_be_bytes(b.try_into()?)),
                4 => Ok(i32::from_be_bytes(b.try_into()?).into()),
                2 => Ok(i16::from_be_bytes(b.try_into()?).into()),
                n => anyhow::bail!("an integer of {n} bytes"),
            })
            .transpose()
    }
    fn real(&self, col: usize) -> anyhow::Result<Option<f64>> {
        self.field(col)?
            .map(|b| match b.len() {
                8 => Ok(f64::from_be_bytes(b.try_into()?)),
                4 => Ok(f32::from_be_bytes(b.try_into()?).into()),
                n => anyhow::bail!("a floating-point number of {n} bytes"),
            })
            .transpose()
    }
    fn text(&self, col: usize) -> anyhow::Result<Option<&str>> {
        Ok(self.field(col)?.map(std::str::from_utf8).transpose()?)
    }
    fn blob(&self, col: usize) -> anyhow::Result<Option<&[u8]>> {
        self.field(col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::pg;

    fn fresh(test: &str) -> Option<(PgUrl, PgStore)> {
        let url = pg_url(&pg::fresh_db(test)?);
        let s = PgStore::open(&url, true).unwrap();
        Some((url, s))
    }

    fn pg_url(s: &str) -> PgUrl {
        match crate::store::Locator::parse(s, "test").unwrap() {
            crate::store::Locator::Postgres(u) => u,
            l => panic!("{l:?}"),
        }
    }

    #[test]
    fn passes_the_store_suite() {
        let Some((url, mut s)) = fresh("passes_the_store_suite") else {
            return;
        };
        super::super::suite::round_trip(&mut s);
        super::super::suite::all_or_nothing(&mut s);
        super::super::suite::fleet_state(&mut s);
        super::super::suite::ended_runs(&mut s);
        super::super::suite::run_locks_seen(|| PgStore::open(&url, true).unwrap());
        drop(s);
        // Reopening does not re-run migrations.
        let s = PgStore::open(&url, true).unwrap();
        let v: i64 = s
            .conn
            .borrow_mut()
            .query_one("SELECT version FROM kbench_schema", &[])
            .unwrap()
            .get(0);
        assert_eq!(v, MIGRATIONS.len() as i64);
        assert_eq!(s.runs(None).unwrap().len(), 7, "the suite's runs");
        // Read access to a database without a store creates nothing.
        let other = pg_url(&pg::fresh_db("passes_the_store_suite_read").unwrap());
        let e = PgStore::open(&other, false).err().unwrap();
        assert!(format!("{e}").contains("no kbench store"), "{e}");
    }

    /// A store of schema 6 (metric and unit on every sample) migrates to
    /// the series table exactly.
    #[test]
    fn a_schema_6_store_migrates_its_samples() {
        let Some(db) = pg::fresh_db("schema_6_migrates") else {
            return;
        };
        let url = pg_url(&db);
        let mut old = PgStore::client(&url).unwrap();
        old.batch_execute("CREATE TABLE kbench_schema (version BIGINT NOT NULL)")
            .unwrap();
        for sql in &MIGRATIONS[..6] {
            old.batch_execute(sql).unwrap();
        }
        old.batch_execute("INSERT INTO kbench_schema (version) VALUES (6)")
            .unwrap();
        old.batch_execute(super::super::suite::LEGACY_ROWS).unwrap();
        drop(old);
        super::super::suite::legacy_samples_migrate(&mut || {
            Box::new(PgStore::open(&url, true).unwrap())
        });
    }

    #[test]
    fn corrupt_stored_json_is_an_error_not_null() {
        let Some((_, mut s)) = fresh("corrupt_json") else {
            return;
        };
        let run = s
            .begin_run(&super::super::suite::new_run("u", None))
            .unwrap();
        s.add_cell(run, &super::super::suite::cell_info("a", &[]))
            .unwrap();
        s.execute("UPDATE cells SET params = '{broken'");
        let e = s.cells(Scope::Run(run)).unwrap_err();
        assert!(format!("{e:#}").contains("corrupt stored data"), "{e:#}");
    }

    /// Two writers create the same campaign at the same moment, 20 times:
    /// one campaign results each time, and neither fails. Then two writers
    /// fill one run of it at once: nothing is lost.
    #[test]
    fn concurrent_writers_lose_nothing() {
        let Some((url, _)) = fresh("concurrent_writers") else {
            return;
        };
        for i in 0..20 {
            let key = CampaignKey {
                name: format!("race{i}"),
                plan_hash: "h".into(),
                generation: 1,
                plan_text: String::new(),
            };
            crate::store::suite::create_race(|| PgStore::open(&url, true).unwrap(), &key);
        }
        let s = PgStore::open(&url, true).unwrap();
        assert_eq!(s.campaigns(CampaignQuery::Named("race3")).unwrap().len(), 1);
        let c = s.campaigns(CampaignQuery::Named("race0")).unwrap()[0].id;
        // Two runners (two runs, two hosts) of one campaign, 500 samples
        // each in batches of 5, at once.
        std::thread::scope(|sc| {
            for w in 0..2 {
                let url = &url;
                sc.spawn(move || {
                    let mut s = PgStore::open(url, true).unwrap();
                    let run = s
                        .begin_run(&super::super::suite::new_run(&format!("w{w}"), Some(c)))
                        .unwrap();
                    let cell = s
                        .add_cell(run, &super::super::suite::cell_info("a", &[]))
                        .unwrap();
                    for b in 0..100 {
                        let batch: Vec<SampleRec> = (0..5)
                            .map(|k| super::super::suite::sample(cell, b * 5 + k, 1.0))
                            .collect();
                        assert_eq!(s.add_samples(run, &batch).unwrap(), 5);
                    }
                });
            }
        });
        let runs = s.runs(Some(c)).unwrap();
        assert_eq!(runs.len(), 2);
        assert!(runs.iter().all(|r| r.samples == 500), "{runs:?}");
        let p = s.progress(c).unwrap();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].samples, 1000);
    }

    /// A write meets a dead server: it reconnects with backoff, and after
    /// its patience gives up with the one-line lost-store error; once the
    /// server is back the same write (re-sent) stores each sample once.
    #[test]
    fn a_write_reconnects_and_gives_up_when_the_server_stays_away() {
        let Some(own) = pg::own_server("pg_gives_up") else {
            return;
        };
        let url = pg_url(&own.server.url("postgres"));
        let mut s = PgStore::open(&url, true).unwrap();
        s.patience = std::time::Duration::from_millis(700);
        s.lock_campaign("c").unwrap();
        let run = s
            .begin_run(&super::super::suite::new_run("u", None))
            .unwrap();
        let cell = s
            .add_cell(run, &super::super::suite::cell_info("a", &[]))
            .unwrap();
        let batch: Vec<SampleRec> = (0..5)
            .map(|k| super::super::suite::sample(cell, k, 1.0))
            .collect();
        assert_eq!(s.add_samples(run, &batch[..3]).unwrap(), 3);
        own.kill();
        let t = std::time::Instant::now();
        let e = s.add_samples(run, &batch).unwrap_err();
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        assert!(e.downcast_ref::<super::super::Lost>().is_some(), "{e:#}");
        let msg = format!("{e:#}");
        assert!(msg.contains("did not come back"), "{msg}");
        assert!(!msg.contains(&own.server.password), "{msg}");
        own.restart().unwrap();
        s.patience = PATIENCE;
        // The batch again: the two missing samples only.
        assert_eq!(s.add_samples(run, &batch).unwrap(), 2);
        assert_eq!(s.run(run).unwrap().unwrap().samples, 5);
        // Inside a transaction nothing is retried: the server lost it.
        s.begin().unwrap();
        own.kill();
        let e = s.add_samples(run, &batch).unwrap_err();
        assert!(e.downcast_ref::<super::super::Lost>().is_some(), "{e:#}");
        assert!(!s.in_tx);
    }

    #[test]
    fn reads_pgpass() {
        let text = "# comment\nother:5432:*:kb:nope\nlocalhost:5433:kbench:kb:p\\:w\n*:*:*:*:any\n";
        assert_eq!(
            pgpass_lookup(text, "127.0.0.1", 5433, "kbench", "kb").as_deref(),
            Some("p:w")
        );
        assert_eq!(
            pgpass_lookup(text, "db", 1, "x", "y").as_deref(),
            Some("any")
        );
        assert_eq!(pgpass_lookup("a:1:b:c:d\n", "a", 2, "b", "c"), None);
    }

    /// A sample's fields, its numbers as bits: equal only when equal
    /// bit for bit.
    type Bits = (i64, String, String, u64, u32, u32, u64, Option<u32>);

    fn bits(samples: &[SampleRec]) -> Vec<Bits> {
        samples
            .iter()
            .map(|s| {
                let (m, u) = (s.metric().to_owned(), s.unit().to_owned());
                let (v, t) = (s.value.to_bits(), s.t.to_bits());
                (s.cell_id, m, u, v, s.round, s.seq, t, s.process)
            })
            .collect()
    }

    /// The samples of `scope` as query rows, one result row each: the
    /// reader the binary `COPY` replaced, kept as the check of it.
    fn samples_by_rows(s: &PgStore, scope: Scope) -> Vec<SampleRec> {
        use postgres::fallible_iterator::FallibleIterator;
        let mut series = s.series(scope).unwrap();
        let (cond, arg) = sql::scope_sql(scope, "s");
        let mut conn = s.conn.borrow_mut();
        let sql = format!("SELECT {SAMPLE_COLUMNS} FROM samples s WHERE {cond} ORDER BY s.id");
        let mut rows = conn.query_raw(&sql, [&arg]).unwrap();
        let mut out = Vec::new();
        while let Some(r) = rows.next().unwrap() {
            out.push(sql::sample_rec(&r, &mut series).unwrap());
        }
        out
    }

    fn samples_by_copy(s: &PgStore, scope: Scope) -> Vec<SampleRec> {
        let mut out = Vec::new();
        s.each_sample(scope, &mut |x| {
            out.push(x);
            Ok(())
        })
        .unwrap();
        out
    }

    /// The binary `COPY` reader gives the rows the row reader gives, in
    /// the same order and bit for bit, for a run and a campaign of several
    /// cells, two metrics, samples with and without a process (NULL), a
    /// second value of a sample, and values whose decimal form would not
    /// round-trip; and it is what was written. The comparison sees one
    /// row dropped.
    #[test]
    fn copy_reader_reads_what_the_row_reader_reads() {
        use super::super::suite;
        let Some((_, mut s)) = fresh("copy_reader") else {
            return;
        };
        let key = CampaignKey {
            name: "c".into(),
            plan_hash: "h".into(),
            generation: 0,
            plan_text: "p".into(),
        };
        let camp = s.campaign(&key).unwrap();
        let mut written: Vec<SampleRec> = Vec::new();
        for (uuid, campaign) in [("a", Some(camp)), ("b", Some(camp)), ("other", None)] {
            let run = s.begin_run(&suite::new_run(uuid, campaign)).unwrap();
            let cells: Vec<i64> = ["x", "y"]
                .iter()
                .map(|k| s.add_cell(run, &suite::cell_info(k, &[])).unwrap())
                .collect();
            let mut batch = Vec::new();
            for round in 0..200 {
                for &cell in &cells {
                    let mut x = suite::sample(cell, round, 1.0 / (3.0 + round as f64));
                    batch.push(x);
                    x.names = super::super::Names::new("cycles", "cycles");
                    x.value = -1e300 / (7.0 + round as f64);
                    batch.push(x);
                    x.seq = 1;
                    x.value = f64::MIN_POSITIVE * round as f64;
                    batch.push(x);
                }
            }
            assert_eq!(s.add_samples(run, &batch).unwrap(), batch.len());
            if campaign.is_some() {
                written.extend(batch);
            }
        }
        assert!(written.iter().any(|x| x.process.is_none()));
        assert!(written.iter().any(|x| x.process.is_some()));
        let scope = Scope::Campaign(camp);
        let (by_copy, by_rows) = (samples_by_copy(&s, scope), samples_by_rows(&s, scope));
        assert_eq!(bits(&by_copy), bits(&by_rows));
        assert_eq!(bits(&by_copy), bits(&written));
        let run = Scope::Run(s.run_id("b").unwrap().unwrap());
        let (by_copy, by_rows) = (samples_by_copy(&s, run), samples_by_rows(&s, run));
        assert_eq!(by_copy.len(), 2 * 200 * 3);
        assert_eq!(bits(&by_copy), bits(&by_rows));
        let mut dropped = by_copy.clone();
        dropped.remove(by_copy.len() / 2);
        assert_ne!(bits(&dropped), bits(&by_rows));
        // The cells a report reads carry the same samples, each cell's in
        // the order written.
        for (cell, samples) in s.cells(scope).unwrap() {
            let mine: Vec<SampleRec> = written
                .iter()
                .filter(|x| x.cell_id == cell.id)
                .cloned()
                .collect();
            assert_eq!(bits(&samples), bits(&mine), "cell {}", cell.id);
        }
    }

    /// A run of cells `x` and `y`, each round a sample of two metrics
    /// (one with a second value), with and without a process; the samples
    /// written.
    fn write_run(s: &mut PgStore, uuid: &str, campaign: Option<i64>) -> (i64, Vec<SampleRec>) {
        use super::super::suite;
        let run = s.begin_run(&suite::new_run(uuid, campaign)).unwrap();
        let cells: Vec<i64> = ["x", "y"]
            .iter()
            .map(|k| s.add_cell(run, &suite::cell_info(k, &[])).unwrap())
            .collect();
        let mut batch = Vec::new();
        for round in 0..20 {
            for &cell in &cells {
                let mut x = suite::sample(cell, round, 1.0 / (3.0 + round as f64));
                batch.push(x);
                x.names = super::super::Names::new("cycles", "cycles");
                x.seq = 1;
                x.value = -1e300 / (7.0 + round as f64);
                batch.push(x);
            }
        }
        assert_eq!(s.add_samples(run, &batch).unwrap(), batch.len());
        (run, batch)
    }

    /// Each part of run `run`'s pack: its number and samples.
    fn packs(s: &PgStore, run: i64) -> Vec<(i64, i64)> {
        s.conn
            .borrow_mut()
            .query(
                "SELECT part, n FROM sample_packs WHERE run_id = $1 ORDER BY part",
                &[&run],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect()
    }

    /// A read of `scope` gives what its rows hold, bit for bit, each
    /// cell's in order (packed runs come first).
    fn reads_its_rows(s: &PgStore, scope: Scope) {
        let (mut read, mut rows) = (samples_by_copy(s, scope), samples_by_rows(s, scope));
        assert!(!rows.is_empty());
        read.sort_by_key(|x| x.cell_id);
        rows.sort_by_key(|x| x.cell_id);
        assert_eq!(bits(&read), bits(&rows), "{scope:?}");
    }

    /// A run that ended, in a transaction or not, is packed in parts, and
    /// read from its pack gives its rows; a run still running is not
    /// packed. A pack that does not hold its run's samples is damage that
    /// a read and `store check` name, and removing it leaves the rows.
    #[test]
    fn an_ended_run_is_read_from_its_pack_as_its_rows() {
        let Some((_, mut s)) = fresh("packs_read_as_rows") else {
            return;
        };
        s.pack_part = 7;
        let key = CampaignKey {
            name: "c".into(),
            plan_hash: "h".into(),
            generation: 0,
            plan_text: "p".into(),
        };
        let camp = s.campaign(&key).unwrap();
        let (a, written) = write_run(&mut s, "a", Some(camp));
        let (b, _) = write_run(&mut s, "b", Some(camp));
        let (c, _) = write_run(&mut s, "c", None);
        s.finish_run(a, 9.0, RunStatus::Done).unwrap();
        s.begin().unwrap();
        s.finish_run(b, 9.0, RunStatus::Failed).unwrap();
        assert!(packs(&s, b).is_empty(), "packed before its commit");
        s.commit().unwrap();
        let n = written.len() as i64;
        let parts = packs(&s, a);
        assert_eq!(parts.len() as i64, (n + 6) / 7);
        assert!(parts.iter().enumerate().all(|(i, p)| p.0 == i as i64));
        assert_eq!(parts.iter().map(|p| p.1).sum::<i64>(), n);
        assert_eq!(packs(&s, b).len(), parts.len());
        assert!(packs(&s, c).is_empty(), "a running run was packed");
        assert_eq!(bits(&samples_by_copy(&s, Scope::Run(a))), bits(&written));
        for scope in [Scope::Campaign(camp), Scope::Run(a), Scope::Run(c)] {
            reads_its_rows(&s, scope);
        }
        s.execute(&format!(
            "UPDATE sample_packs SET n = n + 1 WHERE run_id = {a} AND part = 1"
        ));
        let e = s
            .each_sample(Scope::Run(a), &mut |_| Ok(()))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("damaged") && e.contains(&format!("part 1 of run {a}")),
            "{e}"
        );
        let problems = s.check().unwrap();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].starts_with(&format!("run {a}: its packed")),
            "{problems:?}"
        );
        s.execute(&format!("DELETE FROM sample_packs WHERE run_id = {a}"));
        assert_eq!(s.check().unwrap(), Vec::<String>::new());
        reads_its_rows(&s, Scope::Campaign(camp));
    }

    /// A sample added to a packed run removes its pack in the same
    /// transaction (a rolled back one keeps it); ending the run again packs
    /// it again, new sample included.
    #[test]
    fn a_sample_added_to_a_packed_run_removes_its_pack() {
        use super::super::suite;
        let Some((_, mut s)) = fresh("packs_removed") else {
            return;
        };
        s.pack_part = 7;
        let (run, written) = write_run(&mut s, "a", None);
        s.finish_run(run, 9.0, RunStatus::Done).unwrap();
        assert!(!packs(&s, run).is_empty());
        let late = suite::sample(written[0].cell_id, 99, 5.0);
        s.begin().unwrap();
        assert_eq!(s.add_samples(run, std::slice::from_ref(&late)).unwrap(), 1);
        s.rollback().unwrap();
        assert!(
            !packs(&s, run).is_empty(),
            "a rolled back add removed the pack"
        );
        reads_its_rows(&s, Scope::Run(run));
        assert_eq!(s.add_samples(run, std::slice::from_ref(&late)).unwrap(), 1);
        assert!(packs(&s, run).is_empty(), "a stale pack stayed");
        reads_its_rows(&s, Scope::Run(run));
        assert_eq!(
            samples_by_copy(&s, Scope::Run(run)).len(),
            written.len() + 1
        );
        s.finish_run(run, 9.0, RunStatus::Done).unwrap();
        let n: i64 = packs(&s, run).iter().map(|p| p.1).sum();
        assert_eq!(n as usize, written.len() + 1);
        reads_its_rows(&s, Scope::Run(run));
    }

    /// A packer leaves a run whose samples another session is adding (its
    /// transaction open), and a writer waits for a packer that holds the
    /// run, then removes what it packed: no pack ever misses a sample.
    #[test]
    fn packing_beside_a_writer_leaves_no_stale_pack() {
        use super::super::suite;
        let Some((url, mut s)) = fresh("packs_beside_writers") else {
            return;
        };
        let (run, written) = write_run(&mut s, "a", None);
        let mut writer = PgStore::open(&url, false).unwrap();
        writer.begin().unwrap();
        let late = suite::sample(written[0].cell_id, 99, 5.0);
        assert_eq!(
            writer
                .add_samples(run, std::slice::from_ref(&late))
                .unwrap(),
            1
        );
        s.finish_run(run, 9.0, RunStatus::Done).unwrap();
        assert!(
            packs(&s, run).is_empty(),
            "packed while a writer held the run"
        );
        writer.commit().unwrap();
        reads_its_rows(&s, Scope::Run(run));
        // A packer's hold, as a session of its own that has not committed.
        let mut packer = PgStore::client(&url).unwrap();
        packer
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock({PACK_LOCK}, {run});
                 INSERT INTO sample_packs (run_id, part, n, body) VALUES ({run}, 0, 0, '')"
            ))
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            let late = suite::sample(late.cell_id, 100, 6.0);
            let n = writer.add_samples(run, &[late]).unwrap();
            tx.send(n).unwrap();
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        assert!(
            rx.try_recv().is_err(),
            "the writer did not wait for the packer"
        );
        packer.batch_execute("COMMIT").unwrap();
        assert_eq!(rx.recv().unwrap(), 1);
        t.join().unwrap();
        assert!(packs(&s, run).is_empty(), "a stale pack stayed");
        reads_its_rows(&s, Scope::Run(run));
        assert_eq!(
            samples_by_copy(&s, Scope::Run(run)).len(),
            written.len() + 2
        );
    }

    /// A binary COPY of two rows (one with a NULL) and its end, in the
    /// format's bytes.
    fn copy_bytes() -> Vec<u8> {
        let mut b = COPY_SIGNATURE.to_vec();
        b.extend(0i32.to_be_bytes());
        b.extend(3i32.to_be_bytes());
        b.extend(b"ext");
        for (id, v, p) in [(7i64, 0.1f64, Some(3i64)), (-9, -2.5e-300, None)] {
            b.extend(3i16.to_be_bytes());
            b.extend(8i32.to_be_bytes());
            b.extend(id.to_be_bytes());
            b.extend(8i32.to_be_bytes());
            b.extend(v.to_be_bytes());
            match p {
                Some(p) => {
                    b.extend(4i32.to_be_bytes());
                    b.extend((p as i32).to_be_bytes());
                }
                None => b.extend((-1i32).to_be_bytes()),
            }
        }
        b.extend((-1i16).to_be_bytes());
        b
    }

    /// `bytes` as the driver hands them over, `size` at a time.
    struct Chunks<'a> {
        bytes: &'a [u8],
        size: usize,
    }

    impl std::io::Read for Chunks<'_> {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            unreachable!("read through fill_buf")
        }
    }

    impl std::io::BufRead for Chunks<'_> {
        fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
            Ok(&self.bytes[..self.size.min(self.bytes.len())])
        }
        fn consume(&mut self, n: usize) {
            self.bytes = &self.bytes[n..];
        }
    }

    fn decode(bytes: &[u8], size: usize, fields: usize) -> anyhow::Result<Vec<Bits>> {
        use sql::Row;
        let mut out = Vec::new();
        each_copied_row(&mut Chunks { bytes, size }, fields, |r| {
            let (id, v, p) = (r.int(0)?.unwrap(), r.real(1)?.unwrap(), r.int(2)?);
            let p = p.map(|p| p as u32);
            out.push((id, String::new(), String::new(), v.to_bits(), 0, 0, 0, p));
            Ok(())
        })?;
        Ok(out)
    }

    /// Rows cut anywhere between two reads decode the same; a COPY cut
    /// short, one with bytes after its end, one of other rows and one not
    /// in binary format are errors.
    /// An ingest-sized transaction leaves the planner fresh statistics;
    /// a small one leaves them to autovacuum.
    #[test]
    fn a_large_transaction_of_samples_is_analysed_when_it_commits() {
        use super::super::suite;
        let Some((_, mut s)) = fresh("analysed_on_commit") else {
            return;
        };
        let analysed = |s: &mut PgStore| -> bool {
            let r = s
                .conn
                .get_mut()
                .query_one(
                    "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables
                     WHERE relname = 'samples'",
                    &[],
                )
                .unwrap();
            r.get(0)
        };
        let batch_of = |s: &mut PgStore, uuid: &str, n: usize| {
            let run = s.begin_run(&suite::new_run(uuid, None)).unwrap();
            let cell = s.add_cell(run, &suite::cell_info("x", &[])).unwrap();
            s.begin().unwrap();
            let batch: Vec<SampleRec> = (0..n)
                .map(|i| suite::sample(cell, i as u32, i as f64))
                .collect();
            assert_eq!(s.add_samples(run, &batch).unwrap(), n);
            s.commit().unwrap();
        };
        batch_of(&mut s, "small", ANALYZE_AFTER - 1);
        assert!(!analysed(&mut s), "a small transaction analysed the table");
        batch_of(&mut s, "large", ANALYZE_AFTER);
        assert!(
            analysed(&mut s),
            "an ingest-sized transaction left no statistics"
        );
    }

    #[test]
    fn copy_rows_decode_wherever_reads_cut_them() {
        let bytes = copy_bytes();
        let whole = decode(&bytes, bytes.len(), 3).unwrap();
        assert_eq!(whole.len(), 2);
        assert_eq!(whole[0].0, 7);
        assert_eq!(f64::from_bits(whole[1].3), -2.5e-300);
        assert_eq!((whole[0].7, whole[1].7), (Some(3), None));
        for size in 1..bytes.len() {
            assert_eq!(decode(&bytes, size, 3).unwrap(), whole, "reads of {size}");
        }
        for cut in [0, 5, 19, 30, bytes.len() - 1] {
            let e = decode(&bytes[..cut], 7, 3).unwrap_err();
            assert!(format!("{e}").contains("ended early"), "{cut}: {e}");
        }
        let mut more = bytes.clone();
        more.push(0);
        let e = decode(&more, 4, 3).unwrap_err();
        assert!(format!("{e}").contains("after its end"), "{e}");
        let e = decode(&bytes, 4, 2).unwrap_err();
        assert!(format!("{e}").contains("of 3 fields, not 2"), "{e}");
        let e = decode(b"id\tvalue\n1\t2.5\n2\t3.5\n", 64, 3).unwrap_err();
        assert!(format!("{e}").contains("not in binary format"), "{e}");
    }
}
