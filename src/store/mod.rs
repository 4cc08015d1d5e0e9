//! The results store: campaigns, runs (with the fingerprint and settings),
//! cells and samples.
//!
//! Two traits, one backend per file: [`StoreRead`] answers typed queries
//! (no SQL crosses this boundary), [`StoreWrite`] takes idempotent writes
//! keyed by the records' stable identities (run UUID, cell key, sample
//! round, failure seq), so replaying an event stream stores nothing twice.
//! The runner never calls either: its events reach a store through
//! [`sink::StoreSink`]. SQLite is the default backend; a PostgreSQL one is
//! one more file implementing the same two traits.
//!
//! A run's own samples are committed as soon as they are written, so a
//! run killed at any point keeps everything it measured; a stream from
//! elsewhere (a fleet host) is committed in batches of up to [`BATCH`]
//! samples or [`BATCH_AGE`] ([`sink::StoreSink::batched`]): a crash loses
//! at most the batch, which the stream's source still holds.

pub mod copy;
pub mod locator;
#[cfg(test)]
pub mod memory;
mod pack;
pub mod postgres;
pub mod sink;
mod sql;
pub mod sqlite;

pub use locator::Locator;

/// The most samples written in one statement (and, for a batched stream,
/// one transaction): a million samples cost a thousand round trips.
pub const BATCH: usize = 1000;

/// The longest a batched stream's sample waits for its commit.
pub const BATCH_AGE: std::time::Duration = std::time::Duration::from_millis(100);

use indexmap::IndexMap;
use serde::Serialize;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};

use crate::error::bad_input;
use crate::record::{CampaignKey, CellInfo, CellStatus, Labels, RunConfig, RunStatus};
use crate::system::Fingerprint;

/// The store went away in the middle of a run (its server killed or
/// restarted): nothing more can be written through this connection, not
/// even the run's end. The message names the store, says what was kept and
/// what to do; a reader later shows the run as interrupted (its owner is
/// gone).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Lost(pub String);

pub use crate::error::Conflict;

/// Whether a stored value and a new one for the same identity agree.
pub fn same_value(stored: f64, new: f64) -> bool {
    stored.to_bits() == new.to_bits() || stored == new
}

/// A run about to be recorded.
#[derive(Clone, Debug)]
pub struct NewRun {
    pub uuid: String,
    pub campaign: Option<i64>,
    pub host: String,
    /// Unix time, seconds.
    pub started: f64,
    pub fingerprint: Fingerprint,
    pub config: RunConfig,
    /// ns per iteration of an empty timed loop on this machine.
    pub overhead_ns: f64,
    /// `branch`, `commit` and the user's `--label`s.
    pub labels: Labels,
}

/// A cell as stored: its description plus what it learnt while running.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellRec {
    pub id: i64,
    pub run_id: i64,
    #[serde(flatten)]
    pub info: CellInfo,
    /// CPUs each party ran on, when pinned.
    pub placement: Option<String>,
    /// Facts the benchmark recorded (pipe size granted, iterations, ...).
    pub notes: IndexMap<String, String>,
    /// How the cell ended in its run; `None` while running (or for cells
    /// of stores older than the event stream).
    pub status: Option<CellStatus>,
}

/// One stored value of one metric of one sample. 48 bytes, `Copy`: a
/// report holds 10^6 of them, and reading or dropping one touches no
/// reference count (with the metric and unit as two `Arc<str>` it was 72
/// bytes, two atomic increments per sample read and two decrements per
/// sample freed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleRec {
    pub cell_id: i64,
    /// Its metric and unit ([`SampleRec::metric`], [`SampleRec::unit`]).
    pub names: Names,
    pub value: f64,
    /// Measured round, from 0.
    pub round: u32,
    /// The n-th value of this metric in its sample (0 unless a sample
    /// holds several): with the cell, metric and round, its identity.
    pub seq: u32,
    /// Unix time, seconds.
    pub t: f64,
    /// With `--processes`: the process of the cell that took it, from 0.
    pub process: Option<u32>,
}

impl SampleRec {
    /// The metric this is a value of (`ns/op`).
    pub fn metric(&self) -> &'static str {
        self.names.metric()
    }

    /// The metric's unit (`ns`).
    pub fn unit(&self) -> &'static str {
        self.names.unit()
    }
}

/// A metric and its unit, interned: a handle (one pointer) to the pair,
/// which is kept once for the rest of the process. A process sees few
/// pairs (its benchmarks' metrics, the series of the stores it reads), so
/// keeping them costs little, and a sample carries 8 bytes for its names
/// with nothing to count or free. Equal pairs have the same handle.
#[derive(Clone, Copy)]
pub struct Names(&'static (Box<str>, Box<str>));

/// The pairs [`Names::new`] has made, by metric, then unit.
type Interned = HashMap<Box<str>, HashMap<Box<str>, Names>>;

impl Names {
    /// The handle of `metric` in `unit`, made at the first call with them.
    /// Callers with many samples of a series call it once for the series,
    /// not per sample: it takes a lock and looks up both names.
    pub fn new(metric: &str, unit: &str) -> Names {
        static INTERNED: LazyLock<Mutex<Interned>> = LazyLock::new(Mutex::default);
        let mut interned = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&n) = interned.get(metric).and_then(|units| units.get(unit)) {
            return n;
        }
        let n = Names(Box::leak(Box::new((metric.into(), unit.into()))));
        interned
            .entry(metric.into())
            .or_default()
            .insert(unit.into(), n);
        n
    }

    pub fn metric(self) -> &'static str {
        &self.0.0
    }

    pub fn unit(self) -> &'static str {
        &self.0.1
    }
}

impl PartialEq for Names {
    fn eq(&self, other: &Names) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Names {}

impl std::fmt::Debug for Names {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} [{:?}]", self.metric(), self.unit())
    }
}

/// A failed sample: how it failed (exit status, timeout, stderr tail).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FailureRec {
    pub run_id: i64,
    pub cell_id: i64,
    /// The cell's n-th failure in its run: with the cell, its identity.
    pub seq: u32,
    pub round: u32,
    /// Unix time, seconds.
    pub t: f64,
    pub message: String,
}

/// A decision a producer made from a run's samples (a bisection step's
/// call, the revision it found), as JSON whose shape is the producer's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerdictRec {
    pub run_id: i64,
    /// What it decides (`bisect.step`, ...): with the run, its identity.
    pub kind: String,
    pub body: serde_json::Value,
}

/// A cell's profile over its timed interval in one measured round
/// (`run --profile`). One per (cell, round).
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileRec {
    pub cell_id: i64,
    pub round: u32,
    pub stacks: crate::profile::Folded,
}

/// A run as listed by `kbench runs`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub uuid: String,
    pub campaign: Option<String>,
    pub host: String,
    pub started: f64,
    pub ended: Option<f64>,
    pub status: RunStatus,
    pub cells: i64,
    pub samples: i64,
    pub overhead_ns: f64,
    /// The run's labels (`branch=main`, `commit=...`, `--label k=v`).
    pub labels: Labels,
}

/// A run's fingerprint and settings, parsed.
#[derive(Clone, Debug)]
pub struct RunDetails {
    pub fingerprint: Fingerprint,
    pub config: RunConfig,
}

/// A campaign: a plan's matrix, identified by name, content hash and
/// generation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CampaignRow {
    pub id: i64,
    pub name: String,
    pub plan_hash: String,
    pub generation: u32,
    #[serde(skip)]
    pub plan_text: String,
    /// Unix time, seconds.
    pub created: f64,
}

impl CampaignRow {
    /// The identity as users read it: `HASH`, or `HASH/N` for the N-th
    /// generation of the same text.
    pub fn hash_label(&self) -> String {
        if self.generation <= 1 {
            self.plan_hash.clone()
        } else {
            format!("{}/{}", self.plan_hash, self.generation)
        }
    }
}

/// Which campaigns to list.
#[derive(Clone, Copy, Debug)]
pub enum CampaignQuery<'a> {
    Named(&'a str),
    Id(i64),
}

/// The cells (with their samples) and failures to load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Run(i64),
    /// Every run of the campaign.
    Campaign(i64),
}

/// A cell with its samples, in the order they were taken.
pub type StoredCell = (CellRec, Vec<SampleRec>);

/// How far one cell of a campaign got under one system state on one host:
/// the number of measured samples (distinct rounds) summed over the
/// campaign's runs there. A campaign is per host: a cell complete on one
/// host is still pending on another.
#[derive(Clone, Debug, PartialEq)]
pub struct CellProgress {
    pub key: String,
    /// The host of the runs (their `host`).
    pub host: String,
    /// The probe readings, as stored text ([`crate::record::readings_text`]).
    pub readings: String,
    pub samples: u32,
}

/// How one host of a fleet run stands (`kbench fleet status`), kept in the
/// store beside the results so any copy of the store shows it. Its
/// identity is the plan (name and content hash) and the host's name; a
/// newer record (by `updated`) replaces an older one, never the reverse.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct FleetHostRec {
    pub plan: String,
    pub plan_hash: String,
    pub host: String,
    /// `checking`, `copying kbench`, `catching up`, `running`, `done`,
    /// `failed`, `interrupted`.
    pub state: String,
    /// Unix time of the last change, seconds.
    pub updated: f64,
    pub last_error: Option<String>,
}

/// Typed reads every backend answers.
pub trait StoreRead {
    /// Runs, oldest first; only the campaign's when given.
    fn runs(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>>;
    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>>;
    /// [`StoreRead::runs`] with `samples` left 0: counting a run's samples
    /// reads all of them, and a report counts them as it loads them
    /// ([`load_run`], [`load_campaign`]).
    /// (A backend that counts for nothing overrides it.)
    fn runs_uncounted(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        let mut rows = self.runs(campaign)?;
        rows.iter_mut().for_each(|r| r.samples = 0);
        Ok(rows)
    }
    /// [`StoreRead::run`] with `samples` left 0, as
    /// [`StoreRead::runs_uncounted`].
    fn run_uncounted(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        let mut row = self.run(id)?;
        row.iter_mut().for_each(|r| r.samples = 0);
        Ok(row)
    }
    /// The run's fingerprint and settings; corrupt stored data is an error.
    fn run_details(&self, id: i64) -> anyhow::Result<RunDetails>;
    fn last_run_id(&self) -> anyhow::Result<Option<i64>>;
    /// Campaigns, oldest first.
    fn campaigns(&self, q: CampaignQuery<'_>) -> anyhow::Result<Vec<CampaignRow>>;
    /// Cells with their samples, in insertion order.
    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>>;
    /// The cells of `scope` without their samples, in insertion order.
    fn cell_recs(&self, scope: Scope) -> anyhow::Result<Vec<CellRec>> {
        Ok(self.cells(scope)?.into_iter().map(|(c, _)| c).collect())
    }
    /// Each sample of `scope` passed to `f` as it is read, none held
    /// after (`store copy` of 10^6 samples in bounded memory); each
    /// cell's samples in the order they were taken.
    fn each_sample(
        &self,
        scope: Scope,
        f: &mut dyn FnMut(SampleRec) -> anyhow::Result<()>,
    ) -> anyhow::Result<()> {
        for (_, samples) in self.cells(scope)? {
            samples.into_iter().try_for_each(&mut *f)?;
        }
        Ok(())
    }
    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>>;
    /// Samples per cell key, system state and host of a campaign, counted
    /// by the backend without loading samples.
    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>>;
    /// The verdicts stored with the runs in scope, in the order stored.
    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>>;
    /// The profiles of cell `cell_id`, by round.
    fn profiles(&self, cell_id: i64) -> anyhow::Result<Vec<ProfileRec>>;
    /// The fleet state of plan `plan` (name) with content hash
    /// `plan_hash`, ordered by host name.
    fn fleet_hosts(&self, plan: &str, plan_hash: &str) -> anyhow::Result<Vec<FleetHostRec>>;
}

/// Idempotent writes, each committed when it returns.
pub trait StoreWrite {
    /// Hold the run lock of campaign `name` until this store is dropped,
    /// waiting (with a message) while another kbench holds it. Two runs of
    /// one campaign on one store then take turns, and the second resumes
    /// from what the first stored: the plan's sample counts are never
    /// exceeded. Stores without other writers need no lock.
    fn lock_campaign(&mut self, _name: &str) -> anyhow::Result<()> {
        Ok(())
    }
    /// Whether another kbench holds the run lock of `name` now
    /// ([`StoreWrite::lock_campaign`]; a killed holder's lock is gone):
    /// `None` where this store cannot tell.
    fn campaign_locked(&self, _name: &str) -> Option<bool> {
        None
    }
    /// Find or create the campaign with this identity, atomically (two
    /// writers creating it at once get the same id).
    fn campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64>;
    /// Record a run (or find it, when its UUID is known); returns its id.
    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64>;
    /// The id of a recorded run.
    fn run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>>;
    /// Record a cell of a run (or find it by key); returns its id.
    fn add_cell(&mut self, run_id: i64, cell: &CellInfo) -> anyhow::Result<i64>;
    /// The id of a recorded cell.
    fn cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>>;
    /// Record what a cell learnt while running.
    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()>;
    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()>;
    /// Insert samples in one transaction; ones already stored (same cell,
    /// metric, round and seq) are skipped. Returns how many were new.
    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize>;
    /// Record a failure; one already stored (same cell and seq) is kept.
    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()>;
    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()>;
    /// Record a verdict; one already stored (same run and kind) is kept.
    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()>;
    /// Record a cell's profile of a round; one already stored is kept.
    fn add_profile(&mut self, p: &ProfileRec) -> anyhow::Result<()>;
    /// Record a fleet host's state; one stored with a later `updated` is
    /// kept (copying an older store never moves a host back).
    fn set_fleet_host(&mut self, h: &FleetHostRec) -> anyhow::Result<()>;
    /// Hold every write until [`StoreWrite::commit`] in one transaction:
    /// all of them are stored, or none (after [`StoreWrite::rollback`], an
    /// error, or the process dying). Not nested.
    fn begin(&mut self) -> anyhow::Result<()>;
    fn commit(&mut self) -> anyhow::Result<()>;
    fn rollback(&mut self) -> anyhow::Result<()>;
}

/// A backend: both halves (`&dyn Store` coerces to `&dyn StoreRead`).
pub trait Store: StoreRead + StoreWrite {}

impl<T: StoreRead + StoreWrite> Store for T {}

/// A run with its cells and samples, for reports.
#[derive(Clone, Debug)]
pub struct RunData {
    pub run: RunRow,
    pub details: RunDetails,
    pub cells: Vec<StoredCell>,
    pub failures: Vec<FailureRec>,
}

/// Everything stored for a campaign: its runs, and every cell of every run
/// with its samples (a cell key appears once per run that measured it).
#[derive(Clone, Debug)]
pub struct CampaignData {
    pub campaign: CampaignRow,
    pub runs: Vec<RunRow>,
    pub cells: Vec<StoredCell>,
    pub failures: Vec<FailureRec>,
    /// Fingerprint and settings of the latest run (`None` without runs).
    pub latest: Option<RunDetails>,
}

/// Runs stored as `running` whose kbench is certainly gone (killed, or the
/// machine rebooted since) read as interrupted: the store keeps what it was
/// told, the reader says what is true.
pub fn reconcile(st: &dyn StoreRead, rows: &mut [RunRow]) -> anyhow::Result<()> {
    for r in rows.iter_mut().filter(|r| r.status == RunStatus::Running) {
        let d = st.run_details(r.id)?;
        if let Some(o) = &d.config.owner
            && crate::system::owner_is_gone(o, &d.fingerprint.hostname)
        {
            r.status = RunStatus::Interrupted;
        }
    }
    Ok(())
}

/// Every run (of one campaign), reconciled.
pub fn runs(st: &dyn StoreRead, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
    let mut rows = st.runs(campaign)?;
    reconcile(st, &mut rows)?;
    Ok(rows)
}

/// Load a run for a report.
pub fn load_run(st: &dyn StoreRead, id: i64) -> anyhow::Result<RunData> {
    let mut run = st
        .run_uncounted(id)?
        .ok_or_else(|| bad_input!("no run {id} in the store (see `kbench runs`)"))?;
    reconcile(st, std::slice::from_mut(&mut run))?;
    let cells = st.cells(Scope::Run(id))?;
    count_samples(std::slice::from_mut(&mut run), &cells);
    Ok(RunData {
        details: st.run_details(id)?,
        failures: st.failures(Scope::Run(id))?,
        cells,
        run,
    })
}

/// Each run's `samples`: the samples of its cells among `cells` (all of
/// them, as loaded for a report).
fn count_samples(runs: &mut [RunRow], cells: &[StoredCell]) {
    let mut n: std::collections::HashMap<i64, i64> = std::collections::HashMap::new();
    for (c, s) in cells {
        *n.entry(c.run_id).or_default() += s.len() as i64;
    }
    for r in runs {
        r.samples = n.get(&r.id).copied().unwrap_or(0);
    }
}

/// Load a campaign for a report.
pub fn load_campaign(st: &dyn StoreRead, id: i64) -> anyhow::Result<CampaignData> {
    let campaign = st
        .campaigns(CampaignQuery::Id(id))?
        .pop()
        .ok_or_else(|| bad_input!("no campaign {id} in the store (see `kbench runs`)"))?;
    let mut runs = st.runs_uncounted(Some(id))?;
    reconcile(st, &mut runs)?;
    let latest = match runs.last() {
        Some(r) => Some(st.run_details(r.id)?),
        None => None,
    };
    let cells = st.cells(Scope::Campaign(id))?;
    count_samples(&mut runs, &cells);
    Ok(CampaignData {
        campaign,
        latest,
        cells,
        failures: st.failures(Scope::Campaign(id))?,
        runs,
    })
}

/// Where the store lives when neither `--db` nor `KBENCH_DB` is given:
/// `$XDG_DATA_HOME/kbench/kbench.db`, else `~/.local/share/kbench/kbench.db`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("kbench").join("kbench.db")
}

/// What a command does with the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// `run`, `ingest`: the store is created when it does not exist.
    Write,
    /// `runs`, `report`, `compare`, `status`: nothing is created. A missing
    /// default store reads as empty; a missing `--db` is an error.
    Read,
}

/// Open the store at `at`.
pub fn open(at: &Locator, access: Access) -> anyhow::Result<Box<dyn Store>> {
    match at {
        Locator::Postgres(u) => Ok(Box::new(postgres::PgStore::open(
            u,
            access == Access::Write,
        )?)),
        Locator::Sqlite { path, default } => {
            if *default && access == Access::Read && !path.exists() {
                return Ok(Box::new(sqlite::SqliteStore::empty()?));
            }
            Ok(Box::new(sqlite::SqliteStore::open(path, access)?))
        }
    }
}

/// The full check of the store at `at` (`kbench store check`): every
/// problem found, one line each; empty when the store is sound. A store
/// too damaged to open is checked all the same.
pub fn check(at: &Locator) -> anyhow::Result<Vec<String>> {
    match at {
        Locator::Postgres(u) => postgres::check(u),
        Locator::Sqlite { path, .. } => sqlite::check(path),
    }
}

/// The store suite: every backend must pass it (called from each
/// backend's tests with a fresh, empty store).
#[cfg(test)]
pub mod suite {
    use super::*;
    use crate::record::{Direction, Kind, Metric};

    pub fn new_run(uuid: &str, campaign: Option<i64>) -> NewRun {
        NewRun {
            uuid: uuid.into(),
            campaign,
            host: "h".into(),
            started: 1.0,
            fingerprint: Fingerprint {
                hostname: "h".into(),
                ..Default::default()
            },
            config: RunConfig::new("p", 2, 0.1, 0, 1),
            overhead_ns: 0.3,
            labels: Labels::new(),
        }
    }

    pub fn cell_info(key: &str, readings: &[(&str, &str)]) -> CellInfo {
        CellInfo {
            key: key.into(),
            bench: "getppid".into(),
            source: "getppid".into(),
            kind: Kind::Micro,
            params: serde_json::Map::new(),
            factors: IndexMap::new(),
            label_params: vec![],
            metrics: vec![Metric::new("ns/op", "ns", Direction::Lower)],
            readings: readings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    pub fn sample(cell_id: i64, round: u32, value: f64) -> SampleRec {
        SampleRec {
            cell_id,
            names: Names::new("ns/op", "ns"),
            value,
            round,
            seq: 0,
            t: 2.0 + round as f64,
            // Odd rounds as if from a `--processes` run: both kinds
            // round-trip.
            process: (round % 2 == 1).then_some(round % 3),
        }
    }

    /// Writes, reads back, replays, and counts progress.
    /// Two writers, each opened by `open`, create campaign `key` at the
    /// same moment: both get the same id, and neither fails.
    /// A run lock is seen by another handle while held and gone once its
    /// holder is dropped (as a killed holder's is); another name is free.
    pub fn run_locks_seen<S: Store>(open: impl Fn() -> S) {
        let watcher = open();
        assert_eq!(watcher.campaign_locked("fleet x"), Some(false));
        let mut holder = open();
        holder.lock_campaign("fleet x").unwrap();
        assert_eq!(watcher.campaign_locked("fleet x"), Some(true));
        assert_eq!(holder.campaign_locked("fleet x"), Some(true));
        assert_eq!(watcher.campaign_locked("fleet y"), Some(false));
        // Asking does not take it: the holder still holds it.
        assert_eq!(watcher.campaign_locked("fleet x"), Some(true));
        drop(holder);
        // A server ends the dropped session's locks a moment after it
        // closed (PostgreSQL's backend exits on its own time).
        let t0 = std::time::Instant::now();
        while watcher.campaign_locked("fleet x") != Some(false)
            && t0.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert_eq!(watcher.campaign_locked("fleet x"), Some(false));
    }

    pub fn create_race<S: Store>(open: impl Fn() -> S + Sync, key: &CampaignKey) {
        let barrier = std::sync::Barrier::new(2);
        let ids: Vec<i64> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    sc.spawn(|| {
                        let mut s = open();
                        barrier.wait();
                        s.campaign(key).unwrap()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(ids[0], ids[1]);
    }

    /// `begin` .. `rollback` leaves nothing, `begin` .. `commit` keeps
    /// everything, and a sample stored again with another value is a
    /// conflict (exit 2) while the same value adds nothing.
    /// Fleet state: per plan and host, a later record replaces an earlier
    /// one, never the reverse (copying an old store back is harmless).
    pub fn fleet_state(s: &mut dyn Store) {
        let rec = |host: &str, state: &str, updated: f64| FleetHostRec {
            plan: "p".into(),
            plan_hash: "h1".into(),
            host: host.into(),
            state: state.into(),
            updated,
            last_error: (state == "failed").then(|| "host b: down".to_string()),
        };
        assert!(s.fleet_hosts("p", "h1").unwrap().is_empty());
        s.set_fleet_host(&rec("b", "running", 2.0)).unwrap();
        s.set_fleet_host(&rec("a", "done", 1.0)).unwrap();
        s.set_fleet_host(&rec("b", "failed", 3.0)).unwrap();
        s.set_fleet_host(&rec("b", "checking", 2.5)).unwrap();
        s.set_fleet_host(&FleetHostRec {
            plan_hash: "h2".into(),
            ..rec("a", "interrupted", 9.0)
        })
        .unwrap();
        assert_eq!(
            s.fleet_hosts("p", "h1").unwrap(),
            vec![rec("a", "done", 1.0), rec("b", "failed", 3.0)]
        );
        assert_eq!(s.fleet_hosts("p", "h2").unwrap()[0].state, "interrupted");
    }

    /// Rows as a store before the series table held them (metric and
    /// unit as text on every sample), in SQL both dialects take: a run,
    /// two cells, two metrics of one cell, a second value of a sample,
    /// `--processes` samples, ids not in cell order.
    pub const LEGACY_ROWS: &str = r#"
INSERT INTO runs (id, uuid, campaign_id, host, started, ended, status, fingerprint, config,
                  overhead_ns)
    VALUES (1, 'legacy', NULL, 'h', 1.0, 9.0, 'done', '{}', '{}', 0.3);
INSERT INTO cells (id, run_id, key, bench, source, kind, params, factors, label_params,
                   metrics, notes)
    VALUES (1, 1, 'a', 'getppid', 'getppid', 'micro', '{}', '{}', '[]', '[]', '{}'),
           (2, 1, 'b', 'getppid', 'getppid', 'micro', '{}', '{}', '[]', '[]', '{}');
INSERT INTO samples (id, run_id, cell_id, metric, unit, value, round, seq, t, process)
    VALUES (1, 1, 1, 'ns/op', 'ns', 10.5, 0, 0, 2.5, NULL),
           (2, 1, 1, 'cycles', 'count', 31.0, 0, 0, 2.5, NULL),
           (3, 1, 2, 'ns/op', 'ns', 7.25, 0, 0, 2.75, 1),
           (4, 1, 2, 'ns/op', 'ns', 7.5, 0, 1, 2.75, 1),
           (5, 1, 1, 'ns/op', 'ns', 0.1, 1, 0, 3.5, NULL),
           (6, 1, 2, 'ns/op', 'ns', 1e-300, 1, 0, 3.75, 0),
           (7, 1, 1, 'cycles', 'count', 32.0, 1, 0, 3.5, NULL);
"#;

    /// What [`LEGACY_ROWS`] read back as: every value, in each cell's
    /// order.
    fn legacy_samples() -> Vec<(i64, Vec<SampleRec>)> {
        let s = |cell_id, metric: &str, unit: &str, value, round, seq, t, process| SampleRec {
            cell_id,
            names: Names::new(metric, unit),
            value,
            round,
            seq,
            t,
            process,
        };
        vec![
            (
                1,
                vec![
                    s(1, "ns/op", "ns", 10.5, 0, 0, 2.5, None),
                    s(1, "cycles", "count", 31.0, 0, 0, 2.5, None),
                    s(1, "ns/op", "ns", 0.1, 1, 0, 3.5, None),
                    s(1, "cycles", "count", 32.0, 1, 0, 3.5, None),
                ],
            ),
            (
                2,
                vec![
                    s(2, "ns/op", "ns", 7.25, 0, 0, 2.75, Some(1)),
                    s(2, "ns/op", "ns", 7.5, 0, 1, 2.75, Some(1)),
                    s(2, "ns/op", "ns", 1e-300, 1, 0, 3.75, Some(0)),
                ],
            ),
        ]
    }

    /// A store holding [`LEGACY_ROWS`] under the schema before the series
    /// table, migrated by `open`: every sample reads back as written,
    /// counts agree, identities hold (a replay adds nothing, another
    /// value conflicts), new samples go in, and opening again changes
    /// nothing.
    pub fn legacy_samples_migrate(open: &mut dyn FnMut() -> Box<dyn Store>) {
        let read = |s: &dyn Store| -> Vec<(i64, Vec<SampleRec>)> {
            let cells = s.cells(Scope::Run(1)).unwrap();
            cells.into_iter().map(|(c, smp)| (c.id, smp)).collect()
        };
        let mut s = open();
        assert_eq!(read(&*s), legacy_samples());
        assert_eq!(s.runs(None).unwrap()[0].samples, 7);
        let old = legacy_samples()[1].1[0];
        assert_eq!(s.add_samples(1, std::slice::from_ref(&old)).unwrap(), 0);
        let clash = SampleRec { value: 8.0, ..old };
        let e = s.add_samples(1, &[clash]).unwrap_err();
        assert!(e.downcast_ref::<Conflict>().is_some(), "{e:#}");
        let new = [
            SampleRec { round: 2, ..old },
            SampleRec {
                names: Names::new("cycles", "count"),
                ..sample(2, 0, 40.0)
            },
        ];
        assert_eq!(s.add_samples(1, &new).unwrap(), 2);
        let mut want = legacy_samples();
        want[1].1.extend(new);
        assert_eq!(read(&*s), want);
        drop(s);
        let s = open();
        assert_eq!(read(&*s), want, "opened again");
        assert_eq!(s.runs(None).unwrap()[0].samples, 9);
    }

    /// Runs read back as written whether they ended (a backend may then
    /// read them from a pack) in a transaction or not, or still run, by
    /// campaign and by run; a sample added after a run's end is read too,
    /// and so after the run ends again.
    pub fn ended_runs(s: &mut dyn Store) {
        let key = CampaignKey {
            name: "ended".into(),
            plan_hash: "h".into(),
            generation: 0,
            plan_text: "p".into(),
        };
        let camp = s.campaign(&key).unwrap();
        let (mut written, mut runs) = (Vec::new(), Vec::new());
        for uuid in ["e1", "e2", "e3"] {
            let run = s.begin_run(&new_run(uuid, Some(camp))).unwrap();
            let cells = ["x", "y"].map(|k| s.add_cell(run, &cell_info(k, &[])).unwrap());
            let mut batch = Vec::new();
            for round in 0..30 {
                for &c in &cells {
                    let a = sample(c, round, 1.0 / (3.0 + f64::from(round)));
                    let b = SampleRec {
                        seq: 1,
                        value: -1e300 / (7.0 + f64::from(round)),
                        ..a
                    };
                    batch.extend([a, b]);
                }
            }
            assert_eq!(s.add_samples(run, &batch).unwrap(), batch.len());
            written.extend(batch);
            runs.push(run);
        }
        let check = |s: &dyn Store, written: &[SampleRec]| {
            let by_cell = |x: &[SampleRec], cell: i64| -> Vec<SampleRec> {
                x.iter().filter(|x| x.cell_id == cell).cloned().collect()
            };
            for (cell, got) in s.cells(Scope::Campaign(camp)).unwrap() {
                assert_eq!(got, by_cell(written, cell.id), "cell {}", cell.id);
            }
            for &run in &runs {
                let mut got = Vec::new();
                s.each_sample(Scope::Run(run), &mut |x| {
                    got.push(x);
                    Ok(())
                })
                .unwrap();
                let cells = s.cell_recs(Scope::Run(run)).unwrap();
                for cell in &cells {
                    assert_eq!(by_cell(&got, cell.id), by_cell(written, cell.id));
                }
                let mine = written
                    .iter()
                    .filter(|x| cells.iter().any(|c| c.id == x.cell_id));
                assert_eq!(got.len(), mine.count(), "run {run}");
            }
        };
        s.finish_run(runs[0], 9.0, RunStatus::Done).unwrap();
        s.begin().unwrap();
        s.finish_run(runs[1], 9.0, RunStatus::Failed).unwrap();
        s.commit().unwrap();
        check(s, &written);
        let late = sample(written[0].cell_id, 99, 5.0);
        assert_eq!(
            s.add_samples(runs[0], std::slice::from_ref(&late)).unwrap(),
            1
        );
        written.push(late);
        check(s, &written);
        s.finish_run(runs[0], 9.5, RunStatus::Done).unwrap();
        check(s, &written);
        assert_eq!(s.run(runs[0]).unwrap().unwrap().samples, 121);
    }

    pub fn all_or_nothing(s: &mut dyn Store) {
        s.begin().unwrap();
        let run = s.begin_run(&new_run("t1", None)).unwrap();
        let a = s.add_cell(run, &cell_info("a", &[])).unwrap();
        assert_eq!(s.add_samples(run, &[sample(a, 0, 1.0)]).unwrap(), 1);
        s.rollback().unwrap();
        assert_eq!(s.run_id("t1").unwrap(), None, "rolled back");
        s.begin().unwrap();
        let run = s.begin_run(&new_run("t1", None)).unwrap();
        let a = s.add_cell(run, &cell_info("a", &[])).unwrap();
        assert_eq!(
            s.add_samples(run, &[sample(a, 0, 1.0), sample(a, 1, 2.0)])
                .unwrap(),
            2
        );
        s.commit().unwrap();
        assert_eq!(s.run(run).unwrap().unwrap().samples, 2);
        assert_eq!(s.add_samples(run, &[sample(a, 1, 2.0)]).unwrap(), 0);
        let e = s.add_samples(run, &[sample(a, 1, 3.0)]).unwrap_err();
        let c = e.downcast_ref::<Conflict>().expect("a conflict");
        assert_eq!((c.cell_id, c.round, c.stored, c.new), (a, 1, 2.0, 3.0));
        assert_eq!(crate::error::exit_code(&e), 2);
        assert_eq!(s.run(run).unwrap().unwrap().samples, 2);
    }

    pub fn round_trip(s: &mut dyn Store) {
        let key = CampaignKey {
            name: "c".into(),
            plan_hash: "abc".into(),
            generation: 1,
            plan_text: "name = \"c\"".into(),
        };
        let c1 = s.campaign(&key).unwrap();
        assert_eq!(s.campaign(&key).unwrap(), c1, "find-or-create");
        let c2 = s
            .campaign(&CampaignKey {
                generation: 2,
                ..key.clone()
            })
            .unwrap();
        assert_ne!(c1, c2);
        let labels: Labels = [("branch", "main"), ("os", "debian 12")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let labelled = NewRun {
            labels: labels.clone(),
            ..new_run("u1", Some(c1))
        };
        let run = s.begin_run(&labelled).unwrap();
        // A replay keeps the labels first stored.
        assert_eq!(s.begin_run(&new_run("u1", Some(c1))).unwrap(), run);
        assert_eq!(s.run(run).unwrap().unwrap().labels, labels);
        assert_eq!(s.runs(None).unwrap()[0].labels, labels);
        assert_eq!(s.run_id("u1").unwrap(), Some(run));
        assert_eq!(s.run_id("nope").unwrap(), None);
        let a = s.add_cell(run, &cell_info("a", &[("smt", "on")])).unwrap();
        assert_eq!(
            s.add_cell(run, &cell_info("a", &[("smt", "on")])).unwrap(),
            a
        );
        assert_eq!(s.cell_id(run, "a").unwrap(), Some(a));
        let b = s.add_cell(run, &cell_info("b", &[])).unwrap();
        let mut second = sample(b, 0, 6.0);
        second.seq = 1;
        let batch = [
            sample(a, 0, 10.0),
            sample(a, 1, 11.0),
            sample(b, 0, 5.0),
            second,
        ];
        assert_eq!(s.add_samples(run, &batch).unwrap(), 4);
        assert_eq!(
            s.add_samples(run, &batch).unwrap(),
            0,
            "replay adds nothing"
        );
        let notes: IndexMap<String, String> = [("pipe size".to_string(), "65536".to_string())]
            .into_iter()
            .collect();
        s.update_cell(a, Some("cpu 0"), &notes).unwrap();
        s.finish_cell(a, CellStatus::Done).unwrap();
        let f = FailureRec {
            run_id: run,
            cell_id: b,
            seq: 0,
            round: 1,
            t: 3.0,
            message: "exit 1".into(),
        };
        s.add_failure(&f).unwrap();
        s.add_failure(&f).unwrap();
        let v = VerdictRec {
            run_id: run,
            kind: "bisect.step".into(),
            body: serde_json::json!({"call": "like-bad", "n": 8}),
        };
        s.add_verdict(&v).unwrap();
        // The first one stored is kept (a replay adds nothing).
        s.add_verdict(&VerdictRec {
            body: serde_json::json!({"call": "like-good"}),
            ..v.clone()
        })
        .unwrap();
        s.finish_run(run, 9.0, RunStatus::Failed).unwrap();
        assert_eq!(s.verdicts(Scope::Run(run)).unwrap(), vec![v.clone()]);
        assert_eq!(s.verdicts(Scope::Campaign(c1)).unwrap(), vec![v]);
        assert!(s.verdicts(Scope::Campaign(c2)).unwrap().is_empty());
        // Profiles: per cell and round, compressed and back, the first kept.
        let folded =
            |n| crate::profile::Folded(vec![("main;f".into(), n), ("main;g_[k]".into(), 2)]);
        let p1 = ProfileRec {
            cell_id: a,
            round: 1,
            stacks: folded(7),
        };
        let p0 = ProfileRec {
            round: 0,
            stacks: folded(3),
            ..p1.clone()
        };
        s.add_profile(&p1).unwrap();
        s.add_profile(&p0).unwrap();
        s.add_profile(&ProfileRec {
            stacks: folded(99),
            ..p1.clone()
        })
        .unwrap();
        assert_eq!(s.profiles(a).unwrap(), vec![p0, p1]);
        assert!(s.profiles(b).unwrap().is_empty());

        let r = s.run(run).unwrap().unwrap();
        assert_eq!((r.cells, r.samples, r.status), (2, 4, RunStatus::Failed));
        // Uncounted reads are the same rows without the sample count,
        // which a report's load counts from what it loaded.
        let bare = RunRow {
            samples: 0,
            ..r.clone()
        };
        assert_eq!(s.run_uncounted(run).unwrap(), Some(bare.clone()));
        assert_eq!(s.runs_uncounted(Some(c1)).unwrap(), vec![bare]);
        assert_eq!(super::load_run(&*s, run).unwrap().run, r);
        assert_eq!(super::load_campaign(&*s, c1).unwrap().runs, vec![r.clone()]);
        assert_eq!(r.campaign.as_deref(), Some("c"));
        assert_eq!(r.ended, Some(9.0));
        assert_eq!(s.last_run_id().unwrap(), Some(run));
        assert_eq!(s.runs(Some(c1)).unwrap().len(), 1);
        assert_eq!(s.runs(Some(c2)).unwrap().len(), 0);
        let d = s.run_details(run).unwrap();
        assert_eq!(d.fingerprint.hostname, "h");
        assert_eq!(d.config.samples, 2);
        let cells = s.cells(Scope::Campaign(c1)).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].0.info, cell_info("a", &[("smt", "on")]));
        assert_eq!(cells[0].0.placement.as_deref(), Some("cpu 0"));
        assert_eq!(cells[0].0.notes, notes);
        assert_eq!(cells[0].0.status, Some(CellStatus::Done));
        assert_eq!(cells[1].0.status, None);
        let vals: Vec<f64> = cells[0].1.iter().map(|x| x.value).collect();
        assert_eq!(vals, [10.0, 11.0]);
        let vals: Vec<f64> = cells[1].1.iter().map(|x| x.value).collect();
        assert_eq!(vals, [5.0, 6.0], "two values of one round");
        assert_eq!(s.failures(Scope::Run(run)).unwrap(), vec![f]);
        let c = s.campaigns(CampaignQuery::Named("c")).unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].generation, c[1].hash_label().as_str()), (1, "abc/2"));
        assert_eq!(c[0].plan_text, "name = \"c\"");

        // A second run of the campaign under another state adds up per
        // (key, readings).
        let run2 = s.begin_run(&new_run("u2", Some(c1))).unwrap();
        let a2 = s.add_cell(run2, &cell_info("a", &[("smt", "on")])).unwrap();
        let a3 = s
            .add_cell(run2, &cell_info("b", &[("smt", "off")]))
            .unwrap();
        s.add_samples(run2, &[sample(a2, 0, 1.0), sample(a3, 0, 1.0)])
            .unwrap();
        // Another host's run of the same campaign counts for that host.
        let run3 = s
            .begin_run(&NewRun {
                host: "h2".into(),
                ..new_run("u3", Some(c1))
            })
            .unwrap();
        let a4 = s.add_cell(run3, &cell_info("a", &[("smt", "on")])).unwrap();
        s.add_samples(run3, &[sample(a4, 0, 1.0), sample(a4, 1, 1.0)])
            .unwrap();
        let mut p = s.progress(c1).unwrap();
        let other: Vec<_> = p.iter().filter(|x| x.host == "h2").collect();
        assert_eq!(other.len(), 1);
        assert_eq!((other[0].key.as_str(), other[0].samples), ("a", 2));
        p.retain(|x| x.host == "h");
        p.sort_by(|x, y| (&x.key, &x.readings).cmp(&(&y.key, &y.readings)));
        let p: Vec<(&str, &str, u32)> = p
            .iter()
            .map(|x| (x.key.as_str(), x.readings.as_str(), x.samples))
            .collect();
        assert_eq!(
            p,
            [
                ("a", r#"{"smt":"on"}"#, 3),
                ("b", r#"{"smt":"off"}"#, 1),
                ("b", "{}", 1)
            ]
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Names, SampleRec};

    /// A sample stays small and needs no drop; equal names are one
    /// handle, whichever thread made it, and different ones stay apart.
    #[test]
    fn a_sample_is_small_and_its_names_interned() {
        assert!(std::mem::size_of::<SampleRec>() <= 48);
        assert!(!std::mem::needs_drop::<SampleRec>());
        let a = Names::new("ns/op", "ns");
        let b = std::thread::spawn(|| Names::new("ns/op", "ns"))
            .join()
            .unwrap();
        assert!(std::ptr::eq(a.metric(), b.metric()) && a == b);
        assert_eq!((a.metric(), a.unit()), ("ns/op", "ns"));
        for (m, u) in [("ns/op", "s"), ("cycles", "ns"), ("", "")] {
            let c = Names::new(m, u);
            assert_ne!(a, c);
            assert_eq!((c.metric(), c.unit()), (m, u));
        }
    }
}
