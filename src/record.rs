//! Typed records: what a run is, what a cell is and how they ended, as the
//! runner emits them in events and the stores keep them. Below the runner,
//! the event stream and the stores, so that all three speak one language.
//!
//! Everything here is serialised into the event stream (`kbench run
//! --events jsonl`) and into the stores; field names are part of that
//! documented format, so they change only with [`RunConfig::VERSION`] or
//! [`crate::event::SCHEMA`].

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};

/// What kind of measurement a benchmark is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Built-in timed loop.
    Micro,
    /// N concurrent copies of a testcase, counted ops/s.
    Scale,
    /// An external command.
    Command,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Micro => "micro",
            Kind::Scale => "scale",
            Kind::Command => "command",
        }
    }

    /// Parse a stored kind; an unknown word is corrupt data.
    pub fn parse(s: &str) -> anyhow::Result<Kind> {
        Ok(match s {
            "micro" => Kind::Micro,
            "scale" => Kind::Scale,
            "command" => Kind::Command,
            other => anyhow::bail!("unknown benchmark kind `{other}`"),
        })
    }
}

/// Whether a smaller or a larger value of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Lower,
    Higher,
    /// Neither: a reading kept for context (e.g. the CPU idle % of a
    /// scale interval). Never compared as better or worse.
    Info,
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::Lower => "lower is better",
            Direction::Higher => "higher is better",
            Direction::Info => "informational",
        })
    }
}

/// A metric a benchmark reports; stored with every cell as it is.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
}

impl Metric {
    pub fn new(name: &str, unit: &str, direction: Direction) -> Metric {
        Metric {
            name: name.into(),
            unit: unit.into(),
            direction,
        }
    }
}

/// How a run stands or ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Still measuring (or killed without a chance to say so).
    Running,
    Done,
    /// Stopped by SIGINT/SIGTERM after the current sample.
    Interrupted,
    /// At least one cell failed; the others completed.
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Done => "done",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    /// Parse a stored status; an unknown word is corrupt data.
    pub fn parse(s: &str) -> anyhow::Result<RunStatus> {
        Ok(match s {
            "running" => RunStatus::Running,
            "done" => RunStatus::Done,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            other => anyhow::bail!("unknown run status `{other}`"),
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How one cell of a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellStatus {
    /// Took every sample it was due (or stopped early, precise enough).
    Done,
    /// Could not be prepared, or a sample failure stopped it.
    Failed,
    /// The run was interrupted before the cell was complete.
    Interrupted,
}

impl CellStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Done => "done",
            CellStatus::Failed => "failed",
            CellStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> anyhow::Result<CellStatus> {
        Ok(match s {
            "done" => CellStatus::Done,
            "failed" => CellStatus::Failed,
            "interrupted" => CellStatus::Interrupted,
            other => anyhow::bail!("unknown cell status `{other}`"),
        })
    }
}

/// Everything that identifies and describes one cell of a run. `key` is
/// its identity within a campaign (benchmark, parameters, factor labels);
/// within a run it is unique.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellInfo {
    pub key: String,
    /// Display name of the benchmark (the plan's `name`, else `use`).
    pub bench: String,
    /// The benchmark it runs: a registry name (`pipe-bw`) or the plan's
    /// command/testcase name.
    pub source: String,
    pub kind: Kind,
    /// Resolved parameters, name -> value.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Factor name -> value label, in plan order.
    pub factors: IndexMap<String, String>,
    /// Names of the parameters that vary across the plan's cells of this
    /// benchmark (sweeps and ad-hoc settings), for row labels.
    pub label_params: Vec<String>,
    pub metrics: Vec<Metric>,
    /// Probe readings (probe -> reading) the cell's samples are taken
    /// under; empty when the plan has no `system` factor.
    pub readings: IndexMap<String, String>,
}

impl CellInfo {
    /// The readings as the text they are stored and compared as.
    pub fn readings_text(&self) -> String {
        readings_text(&self.readings)
    }
}

/// A recorded cell (an event's) as the command line spells it.
pub fn info_spelling(cell: &CellInfo) -> String {
    let params: Vec<(&str, String)> = cell
        .label_params
        .iter()
        .filter_map(|k| {
            cell.params.get(k).map(|v| match v {
                serde_json::Value::String(s) => (k.as_str(), s.clone()),
                v => (k.as_str(), v.to_string()),
            })
        })
        .collect();
    spell(&cell.bench, cell.kind, &params, &cell.factors)
}

/// A cell as the command line spells it: `name:param=v,... @factor=level`,
/// a command shell-quoted.
pub fn spell(
    name: &str,
    kind: Kind,
    params: &[(&str, String)],
    factors: &IndexMap<String, String>,
) -> String {
    let mut s = match kind {
        Kind::Command => {
            shlex::try_quote(name).map_or_else(|_| name.to_string(), |q| q.into_owned())
        }
        _ => name.to_string(),
    };
    if !params.is_empty() {
        let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push(':');
        s.push_str(&p.join(","));
    }
    for (k, v) in factors {
        s.push_str(&format!(" @{k}={v}"));
    }
    s
}

/// Probe readings as stored: JSON text of the map, in the plan's probe
/// order, so equal states have equal text.
pub fn readings_text(r: &IndexMap<String, String>) -> String {
    serde_json::to_string(r).expect("a string map serialises")
}

/// A campaign's identity (plan name, plan content hash, generation) and
/// the plan text it was started from. `--force` on an unchanged plan
/// starts the next generation of the same text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CampaignKey {
    pub name: String,
    pub plan_hash: String,
    pub generation: u32,
    pub plan_text: String,
}

/// When to stop sampling a cell or a pair of cells (adaptive stopping).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopRule {
    /// Target relative half-width of the mean's 95% interval (0.01 = 1%).
    pub precision: f64,
    /// Most samples per cell.
    pub max_samples: u32,
    /// Most seconds for the whole run.
    pub max_time: Option<f64>,
    /// Stop once two variants are decided (difference or equivalence).
    pub until_verdict: bool,
}

/// The settings a run was made with, as recorded with it.
///
/// Versioned: version 2 is this struct (with `"version": 2`); version 1
/// (kbench before the event stream) stored `{"plan": ..., "options":
/// {...}}` and is read through [`RunConfig::from_json`] too.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub version: u32,
    /// The plan's name (`adhoc` for benchmarks named on the command line).
    pub plan: String,
    /// Samples per cell (a cell's own `samples` may differ).
    pub samples: u32,
    /// Target seconds per sample.
    pub sample_time: f64,
    /// Warm-up rounds discarded.
    pub warmup: u32,
    /// Seed of the shuffled order.
    pub seed: u64,
    /// Adaptive stopping, when asked for.
    pub stop: Option<StopRule>,
    /// Whether `--force` started a new campaign.
    pub force: bool,
    /// The command line.
    pub argv: Vec<String>,
    /// The process that made the run, so a run left `running` by a kbench
    /// that was killed reads as interrupted (absent in older records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// `--processes N`: each micro-benchmark cell measured in N fresh
    /// processes (absent: one, the runner's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
    /// `--counters`: the event counters read around each sample of a
    /// micro-benchmark cell, by name (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<String>,
    /// `--profile`: a sampled call-stack profile of each cell's timed
    /// intervals was recorded, per round.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profile: bool,
}

/// A process on one boot of one machine: the pid, its start time (so a
/// reused pid is not taken for it) and the kernel's boot id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub pid: u32,
    /// Clock ticks after boot at which the process started
    /// (`/proc/PID/stat` field 22).
    pub start: u64,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
}

/// Version 1's `options` object (fields that were recorded).
#[derive(Deserialize)]
struct ConfigV1 {
    plan: Option<String>,
    options: OptionsV1,
}

#[derive(Deserialize)]
struct OptionsV1 {
    samples: u32,
    sample_time: f64,
    warmup: u32,
    seed: u64,
    #[serde(default)]
    stop: Option<StopRule>,
    #[serde(default)]
    force: bool,
    #[serde(default)]
    argv: Vec<String>,
}

impl RunConfig {
    pub const VERSION: u32 = 2;

    /// Settings of `samples` samples of `sample_time` seconds after
    /// `warmup` rounds in the order `seed` shuffles, and nothing else asked
    /// for (no adaptive stopping, one process, no counters or profile).
    /// A run of a plan takes its settings from `RunConfig::resolve`.
    pub fn new(
        plan: impl Into<String>,
        samples: u32,
        sample_time: f64,
        warmup: u32,
        seed: u64,
    ) -> RunConfig {
        RunConfig {
            version: Self::VERSION,
            plan: plan.into(),
            samples,
            sample_time,
            warmup,
            seed,
            stop: None,
            force: false,
            argv: Vec::new(),
            owner: None,
            processes: None,
            counters: Vec::new(),
            profile: false,
        }
    }

    /// Read a stored configuration of any known version.
    pub fn from_json(text: &str) -> anyhow::Result<RunConfig> {
        let v: serde_json::Value = serde_json::from_str(text)?;
        match v.get("version").and_then(|x| x.as_u64()) {
            Some(2) => Ok(serde_json::from_value(v)?),
            Some(n) => anyhow::bail!(
                "run settings version {n} is newer than this kbench knows ({}); upgrade kbench",
                Self::VERSION
            ),
            None => {
                let old: ConfigV1 = serde_json::from_value(v)?;
                let o = old.options;
                let plan = old.plan.unwrap_or_else(|| "adhoc".into());
                Ok(RunConfig {
                    stop: o.stop,
                    force: o.force,
                    argv: o.argv,
                    ..RunConfig::new(plan, o.samples, o.sample_time, o.warmup, o.seed)
                })
            }
        }
    }
}

/// A run's labels (`branch=main,commit=abc`): what the user or the
/// repository it ran in says about it, for choosing baselines and
/// grouping reports. Sorted by key; stored with the run.
pub type Labels = std::collections::BTreeMap<String, String>;

/// Parse `k=v,k2=v2` (a value may hold commas: `cpus=0,1`). A key is
/// letters, digits, `_`, `-` or `.`; a value is non-empty, printable and
/// at most 200 characters. The error names the bad piece.
pub fn parse_labels(text: &str) -> Result<Labels, String> {
    let mut out = Labels::new();
    for (k, v) in crate::units::split_assignments(text)? {
        check_label(&k, &v)?;
        out.insert(k, v);
    }
    Ok(out)
}

/// Longest name kbench keeps (a campaign, a host, a label's key), in
/// characters: a name is shown in table rows, and one of megabytes would
/// make every listing that long.
pub const MAX_NAME: usize = 200;

/// `s` as a message quotes a name: control characters (a newline too)
/// escaped, cut to 60 characters (marked `~`).
pub fn quoted_name(s: &str) -> String {
    let cut = crate::term::shorten(s, 60);
    let cut = cut.replace('\n', "\\n").replace('\t', "\\t");
    crate::term::visible(&cut).into_owned()
}

/// A name of `what` (`campaign name`, `host name`): 1 to [`MAX_NAME`]
/// characters, none of them a control character. The error quotes the
/// name as [`quoted_name`] shows it.
pub fn check_name(what: &str, s: &str) -> Result<(), String> {
    let n = s.chars().count();
    if n == 0 {
        Err(format!("a {what} must not be empty"))
    } else if n > MAX_NAME {
        Err(format!(
            "{what} `{}` is {n} characters long, over the {MAX_NAME} a name may have",
            quoted_name(s)
        ))
    } else if s.chars().any(char::is_control) {
        Err(format!(
            "{what} `{}` holds control characters (a newline, a tab, an escape)",
            quoted_name(s)
        ))
    } else {
        Ok(())
    }
}

/// Whether `k=v` may be a label (see [`parse_labels`]).
pub fn check_label(k: &str, v: &str) -> Result<(), String> {
    let key_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if k.is_empty() || k.chars().count() > MAX_NAME || !k.chars().all(key_ok) {
        return Err(format!(
            "label key `{}`: use 1 to {MAX_NAME} letters, digits, `_`, `-` or `.`",
            quoted_name(k)
        ));
    }
    if v.is_empty() || v.chars().count() > 200 || v.chars().any(char::is_control) {
        return Err(format!(
            "label `{k}`: the value must be 1 to 200 printable characters"
        ));
    }
    Ok(())
}

/// Whether a run with `labels` matches every `k=v` of `want`.
pub fn labels_match(labels: &Labels, want: &Labels) -> bool {
    want.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// How far a campaign got on this host: samples per cell key and system
/// state (readings as stored text), and for a plan that repeats boots,
/// per boot too. Empty for ad-hoc runs.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    pub samples: std::collections::HashMap<String, std::collections::HashMap<String, u32>>,
    /// Cell key -> state -> boot id -> samples (filled when the plan's
    /// `repeat.boots` is above 1).
    #[serde(default)]
    pub boots: std::collections::HashMap<
        String,
        std::collections::HashMap<String, std::collections::HashMap<String, u32>>,
    >,
}

impl Progress {
    /// Count `n` more samples of cell `key` under `state` on `boot`.
    pub fn add(&mut self, key: &str, state: &str, boot: Option<&str>, n: u32) {
        *self
            .samples
            .entry(key.to_string())
            .or_default()
            .entry(state.to_string())
            .or_default() += n;
        if let Some(b) = boot {
            *self
                .boots
                .entry(key.to_string())
                .or_default()
                .entry(state.to_string())
                .or_default()
                .entry(b.to_string())
                .or_default() += n;
        }
    }

    /// Most samples of `key` under one state.
    pub fn best(&self, key: &str) -> u32 {
        self.samples
            .get(key)
            .and_then(|m| m.values().max().copied())
            .unwrap_or(0)
    }

    /// Boots that measured `key` (under any state), and its samples on
    /// `boot` under `state`.
    pub fn boots_of(&self, key: &str, state: &str, boot: &str) -> (u32, u32) {
        let Some(m) = self.boots.get(key) else {
            return (0, 0);
        };
        let mut ids: Vec<&String> = m.values().flat_map(|b| b.keys()).collect();
        ids.sort();
        ids.dedup();
        let here = m.get(state).and_then(|b| b.get(boot)).copied().unwrap_or(0);
        (ids.len() as u32, here)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_parse_check_and_match() {
        let l = parse_labels("branch=main,cpus=0,1,commit=abc").unwrap();
        assert_eq!(l.get("cpus").map(String::as_str), Some("0,1"));
        assert_eq!(l.len(), 3);
        assert!(labels_match(&l, &parse_labels("branch=main").unwrap()));
        assert!(!labels_match(&l, &parse_labels("branch=dev").unwrap()));
        assert!(!labels_match(&l, &parse_labels("os=linux").unwrap()));
        assert!(parse_labels("a b=1").unwrap_err().contains("`a b`"));
        assert!(parse_labels("k=").unwrap_err().contains("`k`"));
        assert!(parse_labels("x").unwrap_err().contains("expected k=v"));
        assert!(parse_labels("k=1,k=2").unwrap_err().contains("twice"));
        assert_eq!(parse_labels("").unwrap(), Labels::new());
    }

    #[test]
    fn version_1_settings_are_read() {
        let v1 = r#"{"plan":"smoke","options":{"samples":5,"sample_time":0.05,"warmup":1,
            "seed":7,"quiet":false,"stop":null,"force":false,"argv":["kbench","run"]}}"#;
        let c = RunConfig::from_json(v1).unwrap();
        assert_eq!(
            (c.plan.as_str(), c.samples, c.warmup, c.seed, c.version),
            ("smoke", 5, 1, 7, 2)
        );
        let again = RunConfig::from_json(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(again, c);
        assert!(RunConfig::from_json(r#"{"version":9}"#).is_err());
        assert!(RunConfig::from_json("{not json").is_err());
    }

    #[test]
    fn statuses_round_trip_and_reject_unknown_words() {
        for s in [
            RunStatus::Running,
            RunStatus::Done,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()).unwrap(), s);
        }
        assert!(RunStatus::parse("finished").is_err());
        assert!(CellStatus::parse("ok").is_err());
    }
}
