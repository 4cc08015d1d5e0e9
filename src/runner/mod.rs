//! Executes a plan: cells are prepared once, then sampled in rounds. In each
//! round every unfinished cell gets one sample, in a shuffled order (seeded,
//! so a run can be replayed), so slow drift of the machine hits all variants
//! alike. The first `warmup` rounds are discarded. Every sample is committed
//! to the store as soon as it is measured; Ctrl-C stops after the current
//! sample and keeps what was measured.

pub mod adaptive;
pub mod campaign;
mod progress;

use anyhow::Context;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bench::command::SampleFailure;
use crate::bench::{Instance, Measure, RunSettings};
use crate::plan::{Cell, Plan};
use crate::store::{CellRec, FailureRec, MetricRec, NewRun, SampleRec, Store};
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
    /// Start a new campaign when the plan changed since its campaign began.
    pub force: bool,
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
    inst: Option<Box<dyn Instance>>,
    metrics: Vec<MetricRec>,
    want: u32,
    taken: u32,
    failed: Option<String>,
    /// Values of the first metric, for adaptive stopping.
    values: Vec<f64>,
    /// Stopped early: precise enough.
    done: bool,
}

/// What a `kbench run` did, for the caller's messages.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The run recorded, `None` when nothing was left to measure here.
    pub run_id: Option<i64>,
    /// Cells that ran in this run.
    pub ran: usize,
    /// Cells already complete in the campaign (skipped).
    pub done: usize,
    /// Cells waiting for another system state.
    pub pending: usize,
}

/// Run the cells of `plan` that fit the running system and still miss
/// samples; returns what was done and how it ended.
///
/// A plan file is a campaign: cells complete in an earlier run are
/// skipped, a partly measured cell gets only its missing samples, and
/// cells whose `system` factors do not match the probe readings are left
/// pending. Samples are only ever counted together with samples taken
/// under the same readings, so a cell never mixes two system states.
pub fn run(
    plan: &Plan,
    opts: &RunOptions,
    store: &mut dyn Store,
    fp: &Fingerprint,
) -> anyhow::Result<(Summary, Outcome)> {
    let cells = crate::plan::expand(plan)?;
    if opts.stop.is_some_and(|r| r.until_verdict) && cells.len() != 2 {
        return Err(crate::error::bad_input!(
            "--until-verdict compares two variants; this run has {} cells",
            cells.len()
        ));
    }
    let readings = campaign::read_probes(plan);
    let mut fp = fp.clone();
    fp.probes.extend(readings.clone());
    let state = serde_json::to_value(&readings)?;

    let campaign = match &plan.path {
        Some(_) => Some(campaign::resolve(store, plan, opts.force)?),
        None => None,
    };
    let have = match campaign {
        Some(id) => campaign::sample_counts(&store.load_campaign(id)?),
        None => Default::default(),
    };
    let mut summary = Summary::default();
    let mut todo: Vec<(Cell, u32)> = Vec::new();
    for cell in cells {
        if !cell.runnable(&readings) {
            summary.pending += 1;
            continue;
        }
        let want = cell.samples.unwrap_or(opts.samples);
        let counts = have.get(&cell.key);
        // Complete under any state: done. Otherwise only samples taken
        // under the current readings count towards this run.
        if counts.is_some_and(|m| m.values().any(|&n| n >= want)) {
            summary.done += 1;
            continue;
        }
        let got = counts
            .and_then(|m| m.get(&state.to_string()))
            .copied()
            .unwrap_or(0);
        todo.push((cell, want - got.min(want)));
    }
    if todo.is_empty() {
        return Ok((summary, Outcome::Done));
    }
    summary.ran = todo.len();

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing signal handler")?;
    }

    let overhead = crate::bench::micro::loop_overhead_ns(opts.sample_time.min(0.05));
    let config = serde_json::json!({
        "plan": plan.name,
        "options": opts,
    });
    let run_id = store.begin_run(&NewRun {
        campaign,
        host: fp.hostname.clone(),
        started: unix_now(),
        fingerprint: serde_json::to_string(&fp)?,
        config: config.to_string(),
        overhead_ns: overhead,
    })?;
    summary.run_id = Some(run_id);

    let home = system::get_affinity().context("reading CPU affinity")?;
    let settings = RunSettings {
        sample_time: opts.sample_time,
    };
    let mut live = Vec::new();
    for (cell, want) in todo {
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
            readings: state.clone(),
        };
        let id = store.add_cell(&rec)?;
        live.push(Live {
            want: match &opts.stop {
                Some(rule) => rule.max_samples,
                None => want,
            },
            cell,
            id,
            inst: None,
            metrics,
            taken: 0,
            failed: None,
            values: Vec::new(),
            done: false,
        });
    }

    let started = std::time::Instant::now();
    // Cells sharing the same `shell` factor values run together between
    // one setup and one teardown; without shell factors there is one group.
    let mut groups: Vec<(Vec<crate::plan::ShellStep>, Vec<usize>)> = Vec::new();
    for (i, l) in live.iter().enumerate() {
        match groups.iter_mut().find(|(k, _)| *k == l.cell.shell) {
            Some((_, v)) => v.push(i),
            None => groups.push((l.cell.shell.clone(), vec![i])),
        }
    }

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(opts.seed);
    let total: u64 = live.iter().map(|l| (l.want + opts.warmup) as u64).sum();
    let bar = progress::Progress::new(total, live.len(), opts.quiet);
    let mut outcome = Outcome::Done;
    for (steps, members) in groups {
        let mut failed_setup = None;
        let mut done_steps = Vec::new();
        for st in &steps {
            if let Some(cmd) = &st.setup
                && let Err(e) = shell_step(cmd)
            {
                failed_setup = Some(format!(
                    "factor `{}` = `{}`: setup `{cmd}` {e}",
                    st.factor, st.label
                ));
                break;
            }
            done_steps.push(st);
        }
        if let Some(msg) = &failed_setup {
            bar.println(&format!("kbench: {msg}"));
        }
        let o = if failed_setup.is_none() {
            sample_group(
                &mut live, &members, opts, &settings, &home, &stop, &mut rng, &bar, store, run_id,
                started,
            )?
        } else {
            for &i in &members {
                let l = &mut live[i];
                l.failed = failed_setup.clone();
                store.add_failure(&FailureRec {
                    run_id,
                    cell_id: l.id,
                    round: 0,
                    t: unix_now(),
                    message: failed_setup.clone().unwrap_or_default(),
                })?;
            }
            Outcome::Failed
        };
        // Instances go (their per-cell cleanup runs) before the teardown;
        // what they learnt over all samples (e.g. per-task imbalance) is
        // recorded first.
        for &i in &members {
            if let Some(inst) = &live[i].inst
                && live[i].taken > 0
            {
                store.update_cell(
                    live[i].id,
                    inst.placement().as_deref(),
                    &notes_json(inst.as_ref()),
                )?;
            }
            live[i].inst = None;
        }
        for st in done_steps.iter().rev() {
            if let Some(cmd) = &st.teardown
                && let Err(e) = shell_step(cmd)
            {
                bar.println(&format!(
                    "kbench: factor `{}` = `{}`: teardown `{cmd}` {e}",
                    st.factor, st.label
                ));
                outcome = Outcome::Failed;
            }
        }
        if o == Outcome::Interrupted {
            outcome = o;
            break;
        }
    }
    bar.finish();
    // Readings are taken once, before the first sample; a state that
    // changed under the run would file samples under the wrong state.
    let after = campaign::read_probes(plan);
    if after != readings {
        let diff: Vec<String> = after
            .iter()
            .filter(|(k, v)| readings.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: `{}` -> `{v}`", readings.get(k).map_or("?", |s| s)))
            .collect();
        eprintln!(
            "kbench: warning: the system state changed during run {run_id} ({}); its samples are filed under the readings taken at its start",
            diff.join(", ")
        );
    }
    if outcome == Outcome::Done && live.iter().any(|l| l.failed.is_some()) {
        outcome = Outcome::Failed;
    }
    drop(live);
    store.finish_run(run_id, unix_now(), outcome.as_str())?;
    Ok((summary, outcome))
}

/// Run a `shell` factor's setup or teardown through `sh -c`; the error
/// says how it failed, with the tail of its stderr.
fn shell_step(cmd: &str) -> Result<(), String> {
    let dir = std::env::temp_dir();
    let err_path = dir.join(format!("kbench-shell-{}.err", std::process::id()));
    let err = std::fs::File::create(&err_path).map_err(|e| format!("cannot run: {e}"))?;
    let argv = vec!["sh".to_string(), "-c".to_string(), cmd.to_string()];
    let res = crate::bench::command::spawn_measured(&argv, &dir, &[], None, err, None);
    let tail = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_file(&err_path);
    let tail: String = tail.split_whitespace().collect::<Vec<_>>().join(" ");
    let tail = if tail.len() > 300 {
        tail[tail.ceil_char_boundary(tail.len() - 300)..].to_string()
    } else {
        tail
    };
    let with_tail = |m: String| {
        if tail.is_empty() {
            m
        } else {
            format!("{m}; stderr: {tail}")
        }
    };
    match res {
        Ok((_, crate::bench::command::Exit::Code(0))) => Ok(()),
        Ok((_, e)) => Err(with_tail(format!("failed ({e:?})"))),
        Err(e) => Err(format!("cannot run: {e}")),
    }
}

/// Prepare the cells of one group and sample them in shuffled rounds.
#[allow(clippy::too_many_arguments)]
fn sample_group(
    live: &mut [Live],
    members: &[usize],
    opts: &RunOptions,
    settings: &RunSettings,
    home: &crate::units::CpuSet,
    stop: &AtomicBool,
    rng: &mut rand_chacha::ChaCha8Rng,
    bar: &progress::Progress,
    store: &mut dyn Store,
    run_id: i64,
    started: std::time::Instant,
) -> anyhow::Result<Outcome> {
    for &i in members {
        let l = &mut live[i];
        // Children a benchmark forks inherit the cell's CPU set.
        system::set_affinity(l.cell.cpus.as_ref().unwrap_or(home))?;
        let inst = l.cell.bench.instantiate(&l.cell.params, settings);
        system::set_affinity(home)?;
        match inst {
            Ok(inst) => l.inst = Some(inst),
            Err(e) => {
                let msg = format!("preparing {}: {e:#}", l.cell.key);
                bar.println(&format!("kbench: cell {} failed: {msg}", l.cell.key));
                store.add_failure(&FailureRec {
                    run_id,
                    cell_id: l.id,
                    round: 0,
                    t: unix_now(),
                    message: msg.clone(),
                })?;
                l.failed = Some(msg);
            }
        }
    }
    let mut out: Vec<Measure> = Vec::with_capacity(16);
    let mut round = 0u32;
    loop {
        let mut order: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| live[i].failed.is_none() && !live[i].done && live[i].taken < live[i].want)
            .collect();
        if order.is_empty() {
            return Ok(Outcome::Done);
        }
        order.shuffle(rng);
        let warm = round < opts.warmup;
        for i in order {
            if stop.load(Ordering::Relaxed) {
                return Ok(Outcome::Interrupted);
            }
            if opts
                .stop
                .and_then(|r| r.max_time)
                .is_some_and(|t| started.elapsed().as_secs_f64() >= t)
            {
                return Ok(Outcome::Done);
            }
            let l = &mut live[i];
            let inst = l.inst.as_mut().expect("prepared");
            out.clear();
            system::set_affinity(l.cell.cpus.as_ref().unwrap_or(home))?;
            let res = inst.sample(&mut out);
            system::set_affinity(home)?;
            let now = unix_now();
            if let Err(e) = res {
                if stop.load(Ordering::Relaxed) {
                    return Ok(Outcome::Interrupted);
                }
                let msg = format!("{e:#}");
                let keep_going = e
                    .downcast_ref::<SampleFailure>()
                    .is_some_and(|f| f.keep_going);
                bar.println(&format!(
                    "kbench: cell {} sample failed{}: {msg}",
                    l.cell.key,
                    if keep_going { "" } else { " (cell stopped)" }
                ));
                store.add_failure(&FailureRec {
                    run_id,
                    cell_id: l.id,
                    round: round.saturating_sub(opts.warmup),
                    t: now,
                    message: msg.clone(),
                })?;
                if keep_going {
                    // The failed attempt counts, so a cell that always
                    // fails still ends.
                    if !warm {
                        l.taken += 1;
                    }
                } else {
                    l.failed = Some(msg);
                }
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
                    metric: l.metrics[m.metric].name.as_str().into(),
                    unit: l.metrics[m.metric].unit.as_str().into(),
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
                store.update_cell(
                    l.id,
                    inst.placement().as_deref(),
                    &notes_json(inst.as_ref()),
                )?;
            }
        }
        round += 1;
        if let Some(rule) = &opts.stop
            && rule.until_verdict
            && let [a, b] = members
            && [*a, *b]
                .iter()
                .all(|&i| live[i].values.len() >= adaptive::MIN_SAMPLES)
            && !matches!(
                adaptive::verdict(
                    &live[*a].values,
                    &live[*b].values,
                    rule.precision,
                    adaptive::LOOK_CONFIDENCE
                ),
                Some(adaptive::Verdict::Undecided { .. }) | None
            )
        {
            return Ok(Outcome::Done);
        }
    }
}

/// An instance's notes as a JSON object.
fn notes_json(inst: &dyn Instance) -> serde_json::Value {
    let m: serde_json::Map<String, serde_json::Value> = inst
        .notes()
        .into_iter()
        .map(|(k, v)| (k, serde_json::Value::String(v)))
        .collect();
    m.into()
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
