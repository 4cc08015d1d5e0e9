//! The results store: campaigns, runs (with the fingerprint), cells and
//! samples. One trait, one backend per file; SQLite is the default, a
//! `postgres://` URL selects the lab backend.
//!
//! Every sample is committed as soon as it is measured, so a run killed at
//! any point keeps everything it measured.

pub mod sqlite;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

use crate::error::bad_input;

/// A run about to start.
#[derive(Clone, Debug)]
pub struct NewRun {
    pub campaign: Option<i64>,
    pub host: String,
    /// Unix time, seconds.
    pub started: f64,
    /// The fingerprint as JSON.
    pub fingerprint: String,
    /// Run settings as JSON (argv, seed, samples, sample_time, ...).
    pub config: String,
    /// ns per iteration of an empty timed loop on this machine.
    pub overhead_ns: f64,
}

/// A metric as stored with a cell.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct MetricRec {
    pub name: String,
    pub unit: String,
    /// `lower` or `higher`.
    pub direction: String,
}

/// A cell as stored.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct CellRec {
    pub id: i64,
    pub run_id: i64,
    /// Stable identity within a campaign: bench + params + factor labels.
    pub key: String,
    /// Display name of the benchmark (plan `name`, else `use`).
    pub bench: String,
    /// The benchmark it runs: registry name (`pipe-bw`) or the plan's
    /// command/testcase name.
    pub source: String,
    pub kind: String,
    /// Resolved parameters, JSON object.
    pub params: serde_json::Value,
    /// Factor name -> value label, in plan order, JSON object.
    pub factors: serde_json::Value,
    /// Names of the parameters that vary across the plan's cells of this
    /// benchmark (sweeps and ad-hoc settings), for row labels.
    pub label_params: Vec<String>,
    pub metrics: Vec<MetricRec>,
    pub placement: Option<String>,
    pub notes: serde_json::Value,
    /// Probe readings (probe -> reading) the cell's samples were taken
    /// under; `{}` when the plan has no `system` factor.
    #[serde(default)]
    pub readings: serde_json::Value,
}

/// One stored sample.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SampleRec {
    pub cell_id: i64,
    pub metric: std::sync::Arc<str>,
    pub unit: std::sync::Arc<str>,
    pub value: f64,
    pub round: u32,
    /// Unix time, seconds.
    pub t: f64,
}

/// A run as listed by `kbench runs`.
#[derive(Clone, Debug, Serialize)]
pub struct RunRow {
    pub id: i64,
    pub campaign: Option<String>,
    pub host: String,
    pub started: f64,
    pub ended: Option<f64>,
    pub status: String,
    pub cells: i64,
    pub samples: i64,
    pub overhead_ns: f64,
}

/// A run with its cells and samples, for reports.
#[derive(Clone, Debug)]
pub struct RunData {
    pub run: RunRow,
    pub fingerprint: serde_json::Value,
    pub config: serde_json::Value,
    pub cells: Vec<(CellRec, Vec<SampleRec>)>,
    /// Failed samples of the run.
    pub failures: Vec<FailureRec>,
}

/// A failed sample: how it failed (exit status, timeout, stderr tail).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FailureRec {
    pub run_id: i64,
    pub cell_id: i64,
    pub round: u32,
    /// Unix time, seconds.
    pub t: f64,
    pub message: String,
}

/// A campaign: a plan's matrix, identified by name and content hash.
#[derive(Clone, Debug, Serialize)]
pub struct CampaignRow {
    pub id: i64,
    pub name: String,
    pub plan_hash: String,
    #[serde(skip)]
    pub plan_text: String,
    /// Unix time, seconds.
    pub created: f64,
}

/// Everything stored for a campaign: its runs, and every cell of every
/// run with its samples (a cell key appears once per run that measured it).
#[derive(Clone, Debug)]
pub struct CampaignData {
    pub campaign: CampaignRow,
    pub runs: Vec<RunRow>,
    pub cells: Vec<(CellRec, Vec<SampleRec>)>,
    pub failures: Vec<FailureRec>,
    /// Fingerprint and settings of the latest run (`null` without runs).
    pub fingerprint: serde_json::Value,
    pub config: serde_json::Value,
}

/// The operations every backend provides.
pub trait Store {
    /// Find or create the campaign `name` with this plan content hash.
    fn campaign(&mut self, name: &str, plan_hash: &str, plan_text: &str) -> anyhow::Result<i64>;
    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64>;
    /// Insert a cell; returns its id.
    fn add_cell(&mut self, cell: &CellRec) -> anyhow::Result<i64>;
    /// Record what a cell learnt while running (placement, notes).
    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &serde_json::Value,
    ) -> anyhow::Result<()>;
    /// Insert and commit samples at once.
    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<()>;
    fn finish_run(&mut self, run_id: i64, ended: f64, status: &str) -> anyhow::Result<()>;
    fn list_runs(&self) -> anyhow::Result<Vec<RunRow>>;
    fn load_run(&self, run_id: i64) -> anyhow::Result<RunData>;
    fn last_run_id(&self) -> anyhow::Result<Option<i64>>;
    /// Campaigns, oldest first; only those named `name` when given.
    fn campaigns(&self, name: Option<&str>) -> anyhow::Result<Vec<CampaignRow>>;
    /// A campaign with all its runs, cells and samples.
    fn load_campaign(&self, id: i64) -> anyhow::Result<CampaignData>;
    /// Record a failed sample.
    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()>;
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

/// Open the store named by a path or URL (`None` = default path).
pub fn open(url: Option<&str>) -> anyhow::Result<Box<dyn Store>> {
    match url {
        Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => Err(
            bad_input!("--db {u}: the PostgreSQL store is not supported yet; use a file path"),
        ),
        Some(u) => Ok(Box::new(
            sqlite::SqliteStore::open(std::path::Path::new(u))
                .with_context(|| format!("cannot open store {u}"))?,
        )),
        None => {
            let p = default_path();
            Ok(Box::new(sqlite::SqliteStore::open(&p).with_context(
                || format!("cannot open store {}", p.display()),
            )?))
        }
    }
}
