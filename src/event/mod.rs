//! The run event stream: what the runner tells the world, in the manner of
//! ripgrep's `Sink` and its JSON message enum.
//!
//! The runner never calls a store. It emits typed [`Event`]s into a
//! [`Sink`]; consumers are the store writer (`store::sink`), the JSON-lines
//! writer of `kbench run --events jsonl` ([`jsonl`], the wire format the
//! fleet carries over SSH), and the progress display. `kbench ingest` and
//! the importers are producers of the same events.
//!
//! Every record carries a stable identity: a run is its random UUID, a
//! cell is its key within the run, a sample is (run, cell, round), a
//! failure is (run, cell, seq). Replaying a stream into a store that has
//! seen it adds nothing.
//!
//! # Wire format (schema 1)
//!
//! One JSON object per line, `"event"` naming the variant:
//!
//! ```text
//! {"event":"run_begun","schema":1,"run":"UUID","campaign":{"name":..,"plan_hash":..,"generation":1,"plan_text":..}|null,
//!  "host":..,"started":UNIX_S,"fingerprint":{..},"config":{"version":2,..},"overhead_ns":0.3,"planned_cells":N,"planned_samples":N,
//!  "labels":{"branch":"main","commit":"0ee5562..."}}
//! {"event":"cell_prepared","run":"UUID","cell":{"key":..,"bench":..,"source":..,"kind":"micro","params":{..},
//!  "factors":{..},"label_params":[..],"metrics":[{"name":"ns/op","unit":"ns","direction":"lower"}],"readings":{..}}}
//! {"event":"sample","run":"UUID","cell":KEY,"round":0,"t":UNIX_S,"values":[["ns/op",197.2]]}
//! {"event":"warmup","run":"UUID","cell":KEY,"round":0}
//! {"event":"failure","run":"UUID","cell":KEY,"seq":0,"round":0,"t":UNIX_S,"message":..,"cell_stopped":true}
//! {"event":"note","run":"UUID","cell":KEY,"placement":"cpu 0"|null,"notes":{"pipe size":"65536"}}
//! {"event":"cell_done","run":"UUID","cell":KEY,"status":"done","samples":10}
//! {"event":"warning","run":"UUID","message":..}
//! {"event":"verdict","run":"UUID","kind":"bisect.step","body":{..}}
//! {"event":"run_ended","run":"UUID","ended":UNIX_S,"status":"done"}
//! ```
//!
//! `round` counts measured rounds from 0 (warm-ups are not sent), on
//! across the run's shell-factor groups: cells with the same `round` of a
//! run were measured in the same stretch of time, the unit a paired
//! comparison uses; with `--processes`, `process` says which worker of
//! the cell took it, and the run's boot is its settings' `owner.boot_id`.
//! A `verdict` (sent by `kbench bisect`) is a decision made from the
//! run's samples, its `body` shaped by its `kind`. A run's `labels`
//! (absent when it has none) are what `--label` and the git repository it
//! ran in said about it. A sample's `values` are `[metric, value]` pairs, in the order measured: a
//! sample may hold several values of one metric (a scale cell with
//! `intervals = 2` gives two ops/s values per sample).

pub mod jsonl;
pub mod labels;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use crate::record::{CampaignKey, CellInfo, CellStatus, Labels, RunConfig, RunStatus};
use crate::system::Fingerprint;

/// Version of the wire format; a reader refuses a newer one.
pub const SCHEMA: u32 = 1;

/// One thing that happened during a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    RunBegun(Box<RunBegun>),
    CellPrepared(CellPrepared),
    Sample(SampleEvent),
    Warmup(WarmupEvent),
    Failure(FailureEvent),
    Note(NoteEvent),
    CellDone(CellDone),
    Warning(WarningEvent),
    Verdict(VerdictEvent),
    Profile(ProfileEvent),
    RunEnded(RunEnded),
}

/// A run starts: who, where, how, and under which campaign.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunBegun {
    pub schema: u32,
    pub run: String,
    /// The campaign a plan file's run belongs to; `None` for ad-hoc runs.
    pub campaign: Option<CampaignKey>,
    pub host: String,
    /// Unix time, seconds.
    pub started: f64,
    pub fingerprint: Fingerprint,
    pub config: RunConfig,
    /// ns per iteration of an empty timed loop on this machine.
    pub overhead_ns: f64,
    /// What the run means to do, for progress displays.
    pub planned_cells: usize,
    pub planned_samples: u64,
    /// The run's labels (`branch`, `commit`, the user's `--label`s).
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
}

/// A cell is part of this run. Sent once per cell, before its benchmark is
/// instantiated; a failed preparation follows as a [`FailureEvent`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellPrepared {
    pub run: String,
    pub cell: CellInfo,
}

/// One measured sample of a cell: a value per metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampleEvent {
    pub run: String,
    pub cell: String,
    /// Measured round, from 0.
    pub round: u32,
    /// Unix time, seconds.
    pub t: f64,
    pub values: Vec<(String, f64)>,
    /// With `--processes`: which of the cell's processes took it, from 0
    /// (the boot it ran on is the run's, `RunConfig::owner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<u32>,
}

/// A warm-up sample was taken; its values are discarded (stores ignore
/// this event; progress displays count it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarmupEvent {
    pub run: String,
    pub cell: String,
    /// Warm-up round, from 0.
    pub round: u32,
}

/// A sample (or a cell's preparation) failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureEvent {
    pub run: String,
    pub cell: String,
    /// The cell's n-th failure in this run, from 0: its identity.
    pub seq: u32,
    /// Measured round it happened in (0 during warm-up and preparation).
    pub round: u32,
    pub t: f64,
    pub message: String,
    /// The cell takes no more samples in this run.
    pub cell_stopped: bool,
}

/// What a cell learnt while running: where its parties ran, and facts such
/// as the pipe size the kernel granted. Replaces what an earlier note of
/// the same cell said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoteEvent {
    pub run: String,
    pub cell: String,
    pub placement: Option<String>,
    pub notes: IndexMap<String, String>,
}

/// A cell takes no more samples in this run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellDone {
    pub run: String,
    pub cell: String,
    pub status: CellStatus,
    /// Samples it took in this run.
    pub samples: u32,
}

/// Something the user should know that is not a failure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WarningEvent {
    pub run: String,
    pub message: String,
}

/// A decision made from the run's samples: a bisection step's call, the
/// revision a bisection found. Stored with the run; one per (run, kind).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VerdictEvent {
    pub run: String,
    /// What it decides (`bisect.step`, `bisect.ends`, `bisect.result`).
    pub kind: String,
    /// The decision, shaped by its kind.
    pub body: serde_json::Value,
}

/// A cell's call-stack profile over its timed interval in one measured
/// round (`run --profile`): folded stacks with their sample counts. Sent
/// at the end of the run; one per (run, cell, round).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileEvent {
    pub run: String,
    pub cell: String,
    pub round: u32,
    pub stacks: crate::profile::Folded,
}

/// The run is over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunEnded {
    pub run: String,
    pub ended: f64,
    pub status: RunStatus,
}

/// `s` with its secrets hidden (`crate::redact`), in place.
fn hide(s: &mut String) {
    if let Cow::Owned(r) = crate::redact::text(s) {
        *s = r;
    }
}

/// A map's values with their secrets hidden, a value named as a secret
/// whole.
fn hide_values(m: &mut IndexMap<String, String>) {
    for (k, v) in m.iter_mut() {
        if let Cow::Owned(r) = crate::redact::value(k, v) {
            *v = r;
        }
    }
}

impl Event {
    /// The event as every consumer that keeps or shows it must see it:
    /// each secret in its text (a URL's password, an env value of a
    /// secret name, a registered value) as `***` (`crate::redact`). The
    /// cells' keys are redacted when a plan expands, so this leaves a
    /// key kbench made itself as it is, and a stream's sample and its
    /// cell keep naming the same key. Borrowed when nothing changed.
    pub fn redacted(&self) -> Cow<'_, Event> {
        let key = |k: &str| matches!(crate::redact::text(k), Cow::Owned(_));
        let mut e = match self {
            Event::Sample(s) if !key(&s.cell) => return Cow::Borrowed(self),
            Event::Warmup(w) if !key(&w.cell) => return Cow::Borrowed(self),
            Event::CellDone(d) if !key(&d.cell) => return Cow::Borrowed(self),
            Event::RunEnded(_) => return Cow::Borrowed(self),
            e => e.clone(),
        };
        match &mut e {
            Event::RunBegun(b) => {
                if let Some(c) = &mut b.campaign {
                    hide(&mut c.name);
                    hide(&mut c.plan_text);
                }
                hide(&mut b.host);
                hide(&mut b.config.plan);
                b.config.argv = crate::redact::args(std::mem::take(&mut b.config.argv));
                for (k, v) in b.labels.iter_mut() {
                    if let Cow::Owned(r) = crate::redact::value(k, v) {
                        *v = r;
                    }
                }
            }
            Event::CellPrepared(c) => {
                let cell = &mut c.cell;
                hide(&mut cell.key);
                hide(&mut cell.bench);
                hide(&mut cell.source);
                let mut params = serde_json::Value::Object(std::mem::take(&mut cell.params));
                crate::redact::json(&mut params);
                if let serde_json::Value::Object(p) = params {
                    cell.params = p;
                }
                cell.factors.values_mut().for_each(hide);
                hide_values(&mut cell.readings);
            }
            Event::Sample(s) => hide(&mut s.cell),
            Event::Warmup(w) => hide(&mut w.cell),
            Event::CellDone(d) => hide(&mut d.cell),
            Event::Failure(f) => {
                hide(&mut f.cell);
                hide(&mut f.message);
            }
            Event::Note(n) => {
                hide(&mut n.cell);
                if let Some(p) = &mut n.placement {
                    hide(p);
                }
                hide_values(&mut n.notes);
            }
            Event::Warning(w) => hide(&mut w.message),
            Event::Verdict(v) => crate::redact::json(&mut v.body),
            Event::Profile(p) => hide(&mut p.cell),
            Event::RunEnded(_) => {}
        }
        Cow::Owned(e)
    }
}

/// A consumer of events. An error stops the run (a store that cannot
/// write must not let measurements go on unrecorded).
pub trait Sink {
    fn event(&mut self, e: &Event) -> anyhow::Result<()>;
}

/// Several sinks, each given every event in order, its secrets hidden.
pub struct Tee<'a>(pub Vec<&'a mut dyn Sink>);

impl Sink for Tee<'_> {
    /// Every sink gets the event [redacted](Event::redacted) once.
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        let e = e.redacted();
        for s in self.0.iter_mut() {
            s.event(&e)?;
        }
        Ok(())
    }
}

/// Keeps every event (tests).
#[cfg(test)]
#[derive(Default)]
pub struct Collect(pub Vec<Event>);

#[cfg(test)]
impl Sink for Collect {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        self.0.push(e.clone());
        Ok(())
    }
}
