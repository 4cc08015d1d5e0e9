//! Executes a plan: cells are prepared once, then sampled in rounds. In each
//! round every unfinished cell gets one sample, in a shuffled order (seeded,
//! so a run can be replayed), so slow drift of the machine hits all variants
//! alike. The first `warmup` rounds are discarded. Every sample is committed
//! to the store as soon as it is measured; Ctrl-C stops after the current
//! sample and keeps what was measured.

pub mod adaptive;
mod progress;

use anyhow::Context;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bench::{Instance, Measure, RunSettings};
use crate::plan::{Cell, Plan};
use crate::store::{CellRec, MetricRec, NewRun, SampleRec, Store};
use crate::system::{self, Fingerprint};

/// Settings of one `kbench run`, after the CLI and the plan were merged.
#[derive(Clone, Debug, Serialize)]
pub struct RunOptions {
    pub samples: u32,
    pub sample_time: f64,
    pub warmup: u32,
    pub seed: u64,
    pub quiet: bool,
    /// Adaptive stopping (`--precision`, `--until-verdict`); `None` = a
    /// fixed number of samples.
    pub stop: Option<adaptive::StopRule>,
    /// The command line, recorded with the run.
    pub argv: Vec<String>,
}

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// Stopped by SIGINT/SIGTERM after the current sample.
    Interrupted,
    /// At least one cell failed; the others completed.
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Interrupted => "interrupted",
            Outcome::Failed => "failed",
        }
    }
}

pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// A seed from the clock when the user gave none; it is recorded and
/// printed so the order can be replayed with `--seed`.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    t ^ (std::process::id() as u64) << 32
}

struct Live {
    cell: Cell,
    id: i64,
    inst: Box<dyn Instance>,
    metrics: Vec<MetricRec>,
    want: u32,
    taken: u32,
    failed: Option<String>,
    /// Values of the first metric, for adaptive stopping.
    values: Vec<f64>,
    /// Stopped early: precise enough.
    done: bool,
}

/// Run every cell of `plan`; returns the run id and how it ended.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    store: &mut dyn Store,
    fp: &Fingerprint,
) -> anyhow::Result<(i64, Outcome)> {
    let cells = crate::plan::expand(plan)?;
    if opts.stop.is_some_and(|r| r.until_verdict) && cells.len() != 2 {
        return Err(crate::error::bad_input!(
            "--until-verdict compares two variants; this run has {} cells",
            cells.len()
        ));
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handler")?;
    }

    let overhead = crate::bench::micro::loop_overhead_ns(opts.sample_time.min(0.05));
    let campaign = match &plan.path {
        Some(_) => Some(store.campaign(&plan.name, &plan_hash(&plan.text), &plan.text)?),
        None => None,
    };
    let config = serde_json::json!({
        "plan": plan.name,
        "options": opts,
    });
    let run_id = store.begin_run(&NewRun {
        campaign,
        host: fp.hostname.clone(),
        started: unix_now(),
        fingerprint: serde_json::to_string(fp)?,
        config: config.to_string(),
        overhead_ns: overhead,
    })?;

    let home = system::get_affinity().context("reading CPU affinity")?;
    let settings = RunSettings {
        sample_time: opts.sample_time,
    };
    let mut live = Vec::new();
    for cell in cells {
        let metrics: Vec<MetricRec> = cell
            .bench
            .metrics()
            .iter()
            .map(|m| MetricRec {
                name: m.name.clone(),
                unit: m.unit.clone(),
                direction: match m.direction {
                    crate::bench::Direction::Lower => "lower".into(),
                    crate::bench::Direction::Higher => "higher".into(),
                },
            })
            .collect();
        let rec = CellRec {
            id: 0,
            run_id,
            key: cell.key.clone(),
            bench: cell.display.clone(),
            source: cell.bench.name().to_string(),
            kind: format!("{:?}", cell.bench.kind()).to_lowercase(),
            params: serde_json::to_value(&cell.params)?,
            factors: serde_json::to_value(&cell.factors)?,
            label_params: cell.label_params.clone(),
            metrics: metrics.clone(),
            placement: None,
            notes: serde_json::json!({}),
        };
        let id = store.add_cell(&rec)?;
        // Children a benchmark forks inherit the cell's CPU set.
        system::set_affinity(cell.cpus.as_ref().unwrap_or(&home))?;
        let inst = cell.bench.instantiate(&cell.params, &settings);
        system::set_affinity(&home)?;
        let inst = inst.with_context(|| format!("preparing {}", cell.key))?;
        live.push(Live {
            want: match &opts.stop {
                Some(rule) => rule.max_samples,
                None => cell.samples.unwrap_or(opts.samples),
            },
            cell,
            id,
            inst,
            metrics,
            taken: 0,
            failed: None,
            values: Vec::new(),
            done: false,
        });
    }

    let started = std::time::Instant::now();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed);
    let total: u64 = live.iter().map(|l| (l.want + opts.warmup) as u64).sum();
    let bar = progress::Progress::new(total, live.len(), opts.quiet);
    let mut out: Vec<Measure> = Vec::with_capacity(16);
    let mut round = 0u32;
    let mut outcome = Outcome::Done;
    'rounds: loop {
        let mut order: Vec<usize> = (0..live.len())
            .filter(|&i| live[i].failed.is_none() && !live[i].done && live[i].taken < live[i].want)
            .collect();
        if order.is_empty() {
            break;
        }
        order.shuffle(&mut rng);
        let warm = round < opts.warmup;
        for i in order {
            if stop.load(Ordering::Relaxed) {
                outcome = Outcome::Interrupted;
                break 'rounds;
            }
            if opts
                .stop
                .and_then(|r| r.max_time)
                .is_some_and(|t| started.elapsed().as_secs_f64() >= t)
            {
                break 'rounds;
            }
            let l = &mut live[i];
            out.clear();
            system::set_affinity(l.cell.cpus.as_ref().unwrap_or(&home))?;
            let res = l.inst.sample(&mut out);
            system::set_affinity(&home)?;
            let now = unix_now();
            if let Err(e) = res {
                if stop.load(Ordering::Relaxed) {
                    outcome = Outcome::Interrupted;
                    break 'rounds;
                }
                let msg = format!("{e:#}");
                bar.println(&format!("kbench: cell {} failed: {msg}", l.cell.key));
                l.failed = Some(msg);
                continue;
            }
            bar.inc(&l.cell.key);
            if warm {
                continue;
            }
            let recs: Vec<SampleRec> = out
                .iter()
                .map(|m| SampleRec {
                    cell_id: l.id,
                    metric: l.metrics[m.metric].name.clone(),
                    unit: l.metrics[m.metric].unit.clone(),
                    value: m.value,
                    round: round - opts.warmup,
                    t: now,
                })
                .collect();
            store.add_samples(run_id, &recs)?;
            l.taken += 1;
            l.values
                .extend(out.iter().filter(|m| m.metric == 0).map(|m| m.value));
            if let Some(rule) = &opts.stop
                && !rule.until_verdict
                && adaptive::precise_enough(&l.values, rule.precision)
            {
                l.done = true;
            }
            if l.taken == 1 {
                let notes: serde_json::Map<String, serde_json::Value> = l
                    .inst
                    .notes()
                    .into_iter()
                    .map(|(k, v)| (k, serde_json::Value::String(v)))
                    .collect();
                store.update_cell(l.id, l.inst.placement().as_deref(), &notes.into())?;
            }
        }
        round += 1;
        if let Some(rule) = &opts.stop
            && rule.until_verdict
            && live.iter().all(|l| l.values.len() >= adaptive::MIN_SAMPLES)
            && !matches!(
                adaptive::verdict(
                    &live[0].values,
                    &live[1].values,
                    rule.precision,
                    adaptive::LOOK_CONFIDENCE
                ),
                Some(adaptive::Verdict::Undecided { .. }) | None
            )
        {
            break;
        }
    }
    bar.finish();
    if outcome == Outcome::Done && live.iter().any(|l| l.failed.is_some()) {
        outcome = Outcome::Failed;
    }
    // Dropping the instances reaps their children before the run is closed.
    drop(live);
    store.finish_run(run_id, unix_now(), outcome.as_str())?;
    Ok((run_id, outcome))
}

/// Content hash of a plan (FNV-1a 64, hex): part of a campaign's identity.
pub fn plan_hash(text: &str) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in text.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}
