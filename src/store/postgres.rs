//! PostgreSQL backend (the `postgres` crate, no TLS): the lab's shared
//! store, selected by `--db postgres://user@host:port/db` or `KBENCH_DB`.
//! Same tables and identities as the SQLite store; the schema version is
//! the one row of `kbench_schema`, and each entry of [`MIGRATIONS`] moves
//! it one version up inside a transaction holding an advisory lock, so
//! several hosts opening a new database at once migrate it once.
//!
//! The password comes from the URL, `PGPASSWORD`, or `~/.pgpass`
//! (`PGPASSFILE`), like libpq; missing parts of the URL come from
//! `PGHOST`, `PGPORT`, `PGUSER` and `PGDATABASE`. No message kbench prints
//! shows the password: the store is named by [`redact`]ed URL.

use anyhow::Context;
use indexmap::IndexMap;
use postgres::{Client, NoTls, Row};
use std::cell::RefCell;
use std::sync::Arc;

use super::{
    CampaignQuery, CampaignRow, CellProgress, CellRec, FailureRec, NewRun, RunDetails, RunRow,
    SampleRec, Scope, StoreRead, StoreWrite, StoredCell, VerdictRec,
};
use crate::error::bad_input;
use crate::record::{CampaignKey, CellInfo, CellStatus, Kind, RunConfig, RunStatus};
use crate::system::Fingerprint;

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
];

/// The advisory lock every kbench migration takes ("kbench" in ASCII).
const MIGRATION_LOCK: i64 = 0x6b62_656e_6368;

/// True for a `--db` value naming a PostgreSQL store.
pub fn is_url(s: &str) -> bool {
    s.starts_with("postgres://") || s.starts_with("postgresql://")
}

/// The URL with its password (in the user part or a `password=` query
/// parameter) replaced by `***`: how messages name a store.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth_end, _) = rest
        .char_indices()
        .find(|&(_, c)| c == '/' || c == '?')
        .unwrap_or((rest.len(), ' '));
    let (authority, tail) = rest.split_at(auth_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((u, _)) => format!("{u}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let q: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k == "password" => format!("{k}=***"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{path}?{}", q.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// Every argument that is a store URL, redacted: the command line as
/// stored in a run's settings.
pub fn redact_args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| match a.split_once("postgres") {
            Some((pre, _)) if a[pre.len()..].contains("://") => {
                format!("{pre}{}", redact(&a[pre.len()..]))
            }
            _ => a,
        })
        .collect()
}

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
    /// The sample insert, prepared once: one round trip per batch.
    insert_samples: Option<postgres::Statement>,
}

const INSERT_SAMPLES: &str =
    "INSERT INTO samples (run_id, cell_id, metric, unit, value, round, seq, t, process)
     SELECT $1::BIGINT, u.cell_id, u.metric, u.unit, u.value, u.round, u.seq, u.t, u.process
     FROM UNNEST($2::BIGINT[], $3::TEXT[], $4::TEXT[], $5::DOUBLE PRECISION[], $6::BIGINT[],
                 $7::BIGINT[], $8::DOUBLE PRECISION[], $9::BIGINT[]) WITH ORDINALITY
         AS u(cell_id, metric, unit, value, round, seq, t, process, ord)
     ORDER BY ord
     ON CONFLICT (cell_id, metric, round, seq) DO NOTHING";

impl PgStore {
    /// Connect to the store at `url`; with `create`, make its tables when
    /// the database has none yet (or migrate them to the newest schema).
    pub fn open(url: &str, create: bool) -> anyhow::Result<PgStore> {
        let name = redact(url);
        let mut config: postgres::Config = url
            .parse()
            .map_err(|e| bad_input!("--db {name}: not a PostgreSQL URL ({e})"))?;
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
        let mut conn = config.connect(NoTls).map_err(|e| {
            // The driver's message names the cause (refused, auth failed),
            // never the password; the store is named by the redacted URL.
            // A wrong password, user or database is the user's to fix.
            use postgres::error::SqlState as S;
            let why = chain(&e);
            match e.code() {
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
        // A sample is announced (progress, `--events`) once its commit
        // returns, so the commit must survive a crash of the server: with
        // `off` a killed server lost the last ~0.5 s of announced samples.
        // (SQLite's NORMAL mode loses nothing when kbench dies either; only
        // a power cut.) Set here so a server default of `off` cannot weaken
        // it; one commit per sample costs a WAL flush, not a measurement.
        conn.batch_execute("SET synchronous_commit = on")
            .with_context(|| format!("store {name}"))?;
        let s = PgStore {
            conn: RefCell::new(conn),
            name: name.clone(),
            insert_samples: None,
        };
        s.migrate(&name, create)?;
        Ok(s)
    }

    fn pgpass(config: &postgres::Config) -> Option<String> {
        let path = std::env::var_os("PGPASSFILE")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME").map(|h| std::path::Path::new(&h).join(".pgpass"))
            })?;
        let text = std::fs::read_to_string(path).ok()?;
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

    fn run_row(r: &Row) -> anyhow::Result<RunRow> {
        let status: String = r.get(6);
        Ok(RunRow {
            id: r.get(0),
            uuid: r.get(1),
            campaign: r.get(2),
            host: r.get(3),
            started: r.get(4),
            ended: r.get(5),
            status: RunStatus::parse(&status).context("corrupt stored data")?,
            cells: r.get(7),
            samples: r.get(8),
            overhead_ns: r.get(9),
        })
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

fn u32_col(r: &Row, col: usize) -> anyhow::Result<u32> {
    let v: i64 = r.get(col);
    u32::try_from(v).with_context(|| format!("corrupt stored data: column {col} is {v}"))
}

fn json_col<T: serde::de::DeserializeOwned>(r: &Row, col: usize) -> anyhow::Result<T> {
    let s: &str = r.get(col);
    serde_json::from_str(s).with_context(|| format!("corrupt stored data in column {col}"))
}

fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("serialisable")
}

const RUN_SELECT: &str = "SELECT r.id, r.uuid, c.name, r.host, r.started, r.ended, r.status,
    (SELECT COUNT(*) FROM cells WHERE run_id = r.id),
    (SELECT COUNT(*) FROM samples WHERE run_id = r.id),
    r.overhead_ns
    FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id";

/// The SQL condition selecting a scope's rows of a table aliased `alias`
/// (which has a `run_id` column), with its one parameter `$1`.
fn scope_sql(scope: Scope, alias: &str) -> (String, i64) {
    match scope {
        Scope::Run(id) => (format!("{alias}.run_id = $1"), id),
        Scope::Campaign(id) => (
            format!("{alias}.run_id IN (SELECT id FROM runs WHERE campaign_id = $1)"),
            id,
        ),
    }
}

impl StoreRead for PgStore {
    fn runs(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        let rows = self.conn.borrow_mut().query(
            &format!("{RUN_SELECT} WHERE $1::BIGINT IS NULL OR r.campaign_id = $1 ORDER BY r.id"),
            &[&campaign],
        )?;
        rows.iter().map(Self::run_row).collect()
    }

    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        let row = self
            .conn
            .borrow_mut()
            .query_opt(&format!("{RUN_SELECT} WHERE r.id = $1"), &[&id])?;
        row.as_ref().map(Self::run_row).transpose()
    }

    fn run_details(&self, id: i64) -> anyhow::Result<RunDetails> {
        let row = self
            .conn
            .borrow_mut()
            .query_opt("SELECT fingerprint, config FROM runs WHERE id = $1", &[&id])?
            .ok_or_else(|| bad_input!("no run {id} in the store"))?;
        Ok(RunDetails {
            fingerprint: serde_json::from_str::<Fingerprint>(row.get(0))
                .with_context(|| format!("run {id}: corrupt stored fingerprint"))?,
            config: RunConfig::from_json(row.get(1))
                .with_context(|| format!("run {id}: corrupt stored settings"))?,
        })
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
        let rows = self.conn.borrow_mut().query(
            "SELECT id, name, plan_hash, generation, plan_text, created FROM campaigns
             WHERE ($1::TEXT IS NULL OR name = $1) AND ($2::BIGINT IS NULL OR id = $2)
             ORDER BY id",
            &[&name, &id],
        )?;
        rows.iter()
            .map(|r| {
                Ok(CampaignRow {
                    id: r.get(0),
                    name: r.get(1),
                    plan_hash: r.get(2),
                    generation: u32_col(r, 3)?,
                    plan_text: r.get(4),
                    created: r.get(5),
                })
            })
            .collect()
    }

    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>> {
        use postgres::fallible_iterator::FallibleIterator;
        let (cond, arg) = scope_sql(scope, "c");
        let mut conn = self.conn.borrow_mut();
        let rows = conn.query(
            &format!(
                "SELECT c.id, c.run_id, c.key, c.bench, c.source, c.kind, c.params, c.factors,
                        c.label_params, c.metrics, c.readings, c.placement, c.notes, c.status
                 FROM cells c WHERE {cond} ORDER BY c.id"
            ),
            &[&arg],
        )?;
        let cells: Vec<CellRec> = rows
            .iter()
            .map(|r| -> anyhow::Result<CellRec> {
                let kind: &str = r.get(5);
                let status: Option<&str> = r.get(13);
                Ok(CellRec {
                    id: r.get(0),
                    run_id: r.get(1),
                    info: CellInfo {
                        key: r.get(2),
                        bench: r.get(3),
                        source: r.get(4),
                        kind: Kind::parse(kind).context("corrupt stored data")?,
                        params: json_col(r, 6)?,
                        factors: json_col(r, 7)?,
                        label_params: json_col(r, 8)?,
                        metrics: json_col(r, 9)?,
                        readings: json_col(r, 10)?,
                    },
                    placement: r.get(11),
                    notes: json_col(r, 12)?,
                    status: status
                        .map(CellStatus::parse)
                        .transpose()
                        .context("corrupt stored data")?,
                })
            })
            .collect::<anyhow::Result<_>>()
            .context("reading cells")?;
        let mut by_cell: std::collections::HashMap<i64, Vec<SampleRec>> =
            std::collections::HashMap::with_capacity(cells.len());
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
        // Streamed, not collected: a campaign can hold millions of rows.
        let (cond, _) = scope_sql(scope, "s");
        let mut rows = conn.query_raw(
            &format!(
                "SELECT s.cell_id, s.metric, s.unit, s.value, s.round, s.seq, s.t, s.process
                 FROM samples s WHERE {cond} ORDER BY s.cell_id, s.id"
            ),
            [&arg],
        )?;
        while let Some(r) = rows.next()? {
            let cell_id: i64 = r.get(0);
            by_cell.entry(cell_id).or_default().push(SampleRec {
                cell_id,
                metric: intern(r.get(1)),
                unit: intern(r.get(2)),
                value: r.get(3),
                round: u32_col(&r, 4)?,
                seq: u32_col(&r, 5)?,
                t: r.get(6),
                process: r
                    .get::<_, Option<i64>>(7)
                    .map(u32::try_from)
                    .transpose()
                    .context("sample process out of range")?,
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
        let rows = self.conn.borrow_mut().query(
            &format!(
                "SELECT f.run_id, f.cell_id, f.seq, f.round, f.t, f.message FROM failures f
                 WHERE {cond} ORDER BY f.id"
            ),
            &[&arg],
        )?;
        rows.iter()
            .map(|r| {
                Ok(FailureRec {
                    run_id: r.get(0),
                    cell_id: r.get(1),
                    seq: u32_col(r, 2)?,
                    round: u32_col(r, 3)?,
                    t: r.get(4),
                    message: r.get(5),
                })
            })
            .collect()
    }

    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>> {
        let (cond, arg) = scope_sql(scope, "v");
        let rows = self.conn.borrow_mut().query(
            &format!("SELECT v.run_id, v.kind, v.body FROM verdicts v WHERE {cond} ORDER BY v.id"),
            &[&arg],
        )?;
        rows.iter()
            .map(|r| {
                Ok(VerdictRec {
                    run_id: r.get(0),
                    kind: r.get(1),
                    body: json_col(r, 2)?,
                })
            })
            .collect()
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        // Rounds restart at 0 in every run: count each cell's distinct
        // rounds, then add the cells of one key and state up.
        let rows = self.conn.borrow_mut().query(
            "SELECT c.key, c.readings, r.host, COALESCE(SUM(x.n), 0)::BIGINT
             FROM cells c JOIN runs r ON r.id = c.run_id
             CROSS JOIN LATERAL (SELECT COUNT(DISTINCT s.round) AS n FROM samples s
                                 WHERE s.cell_id = c.id) x
             WHERE r.campaign_id = $1 GROUP BY c.key, c.readings, r.host ORDER BY MIN(c.id)",
            &[&campaign],
        )?;
        rows.iter()
            .map(|r| {
                Ok(CellProgress {
                    key: r.get(0),
                    readings: r.get(1),
                    host: r.get(2),
                    samples: u32_col(r, 3)?,
                })
            })
            .collect()
    }
}

impl StoreWrite for PgStore {
    /// A session-level advisory lock on the campaign's name, released when
    /// the connection closes.
    fn lock_campaign(&mut self, name: &str) -> anyhow::Result<()> {
        let key = u64::from_str_radix(&crate::ids::plan_hash(name), 16).unwrap_or(0) as i64;
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
        Ok(())
    }

    fn campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64> {
        let r = self.raw_campaign(key);
        r.map_err(|e| self.lost(e))
    }

    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        let r = self.raw_begin_run(run);
        r.map_err(|e| self.lost(e))
    }

    fn run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        let r = self.raw_run_id(uuid);
        r.map_err(|e| self.lost(e))
    }

    fn add_cell(&mut self, run_id: i64, c: &CellInfo) -> anyhow::Result<i64> {
        let r = self.raw_add_cell(run_id, c);
        r.map_err(|e| self.lost(e))
    }

    fn cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>> {
        let r = self.raw_cell_id(run_id, key);
        r.map_err(|e| self.lost(e))
    }

    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        let r = self.raw_update_cell(cell_id, placement, notes);
        r.map_err(|e| self.lost(e))
    }

    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        let r = self.raw_finish_cell(cell_id, status);
        r.map_err(|e| self.lost(e))
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        let r = self.raw_add_samples(run_id, samples);
        r.map_err(|e| self.lost(e))
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        let r = self.raw_add_failure(f);
        r.map_err(|e| self.lost(e))
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        let r = self.raw_finish_run(run_id, ended, status);
        r.map_err(|e| self.lost(e))
    }

    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()> {
        let r = self
            .conn
            .get_mut()
            .execute(
                "INSERT INTO verdicts (run_id, kind, body) VALUES ($1, $2, $3)
                 ON CONFLICT (run_id, kind) DO NOTHING",
                &[&v.run_id, &v.kind, &v.body.to_string()],
            )
            .map(drop)
            .map_err(anyhow::Error::from);
        r.map_err(|e| self.lost(e))
    }
}

/// The writes themselves; [`StoreWrite`] maps their errors ([`PgStore::lost`]).
impl PgStore {
    /// A write's error as one line naming the store. When the server went
    /// away (killed, restarted, shut down, the network gone), it says so:
    /// kbench does not reconnect in the middle of a run, since the
    /// campaign's run lock lived in the lost session and another runner
    /// may hold it by now; what was stored is kept and a new run of the
    /// plan resumes the campaign.
    fn lost(&self, e: anyhow::Error) -> anyhow::Error {
        let Some(pe) = e.downcast_ref::<postgres::Error>() else {
            return e;
        };
        let gone = pe.is_closed()
            || pe
                .code()
                .is_some_and(|c| c.code().starts_with("57P") || c.code().starts_with("08"))
            || std::error::Error::source(pe).is_some_and(|s| s.is::<std::io::Error>());
        if gone {
            anyhow::Error::new(super::Lost(format!(
                "store {}: the connection to the server was lost ({}); what was stored before is kept: run the plan again to resume its campaign",
                self.name,
                chain(pe)
            )))
        } else {
            anyhow::anyhow!("store {}: {}", self.name, chain(pe))
        }
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
            "INSERT INTO runs (uuid, campaign_id, host, started, status, fingerprint, config, overhead_ns)
             VALUES ($1, $2, $3, $4, 'running', $5, $6, $7)
             ON CONFLICT (uuid) DO NOTHING",
            &[
                &run.uuid,
                &run.campaign,
                &run.host,
                &run.started,
                &json_text(&run.fingerprint),
                &json_text(&run.config),
                &run.overhead_ns,
            ],
        )?;
        self.run_id(&run.uuid)?
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
                &json_text(&c.params),
                &json_text(&c.factors),
                &json_text(&c.label_params),
                &json_text(&c.metrics),
                &c.readings_text(),
            ],
        )?;
        self.cell_id(run_id, &c.key)?
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
            &[&cell_id, &placement, &json_text(notes)],
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

    fn raw_add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        if samples.is_empty() {
            return Ok(0);
        }
        // One statement (one round trip) for the whole batch, in order.
        let cell: Vec<i64> = samples.iter().map(|s| s.cell_id).collect();
        let metric: Vec<&str> = samples.iter().map(|s| &*s.metric).collect();
        let unit: Vec<&str> = samples.iter().map(|s| &*s.unit).collect();
        let value: Vec<f64> = samples.iter().map(|s| s.value).collect();
        let round: Vec<i64> = samples.iter().map(|s| i64::from(s.round)).collect();
        let seq: Vec<i64> = samples.iter().map(|s| i64::from(s.seq)).collect();
        let t: Vec<f64> = samples.iter().map(|s| s.t).collect();
        let process: Vec<Option<i64>> = samples.iter().map(|s| s.process.map(i64::from)).collect();
        let conn = self.conn.get_mut();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::pg;

    fn fresh(test: &str) -> Option<(String, PgStore)> {
        let url = pg::fresh_db(test)?;
        let s = PgStore::open(&url, true).unwrap();
        Some((url, s))
    }

    #[test]
    fn passes_the_store_suite() {
        let Some((url, mut s)) = fresh("passes_the_store_suite") else {
            return;
        };
        super::super::suite::round_trip(&mut s);
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
        assert_eq!(s.runs(None).unwrap().len(), 3);
        // Read access to a database without a store creates nothing.
        let other = pg::fresh_db("passes_the_store_suite_read").unwrap();
        let e = PgStore::open(&other, false).err().unwrap();
        assert!(format!("{e}").contains("no kbench store"), "{e}");
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

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            redact("postgres://kb:s3cret@db.lab:5433/kbench"),
            "postgres://kb:***@db.lab:5433/kbench"
        );
        assert_eq!(redact("postgres://kb@db/k"), "postgres://kb@db/k");
        assert_eq!(
            redact("postgresql://h/k?user=u&password=s3cret&sslmode=disable"),
            "postgresql://h/k?user=u&password=***&sslmode=disable"
        );
        assert_eq!(
            redact_args(["kbench".into(), "--db=postgres://a:s3cret@h/d".into()]),
            ["kbench", "--db=postgres://a:***@h/d"]
        );
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
}
