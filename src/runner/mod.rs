//! Executes a plan: cells are prepared once, then sampled in rounds. In each
//! round every unfinished cell gets one sample, in a shuffled order (seeded,
//! so a run can be replayed), so slow drift of the machine hits all variants
//! alike. The first `warmup` rounds are discarded. Ctrl-C stops after the
//! current sample.
//!
//! The runner never touches a store or the terminal: it emits
//! [`Event`]s into a [`Sink`] (the store writer, the JSON-lines writer, the
//! progress display) and learns how far a campaign got from a
//! [`Progress`] map its caller read beforehand.

pub mod adaptive;
pub mod campaign;
pub mod guard;
pub mod progress;
pub mod teardown;
pub mod worker;

use anyhow::Context;
use indexmap::IndexMap;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bench::command::SampleFailure;
use crate::bench::{Instance, Kind, Measure, RunSettings};
use crate::error::bad_input;
use crate::event::{
    CellDone, CellPrepared, Event, FailureEvent, NoteEvent, RunBegun, RunEnded, SCHEMA,
    SampleEvent, Sink, WarmupEvent, WarningEvent,
};
use crate::ids::unix_now;
use crate::plan::{Cell, Plan};
use crate::record::{CampaignKey, CellInfo, CellStatus, RunConfig, RunStatus};
use crate::system::{self, Fingerprint};

/// How far a campaign got: samples per cell key and per system state
/// (readings as stored text). Empty for ad-hoc runs.
pub type Progress = HashMap<String, HashMap<String, u32>>;

/// What a `kbench run` did, for the caller's messages.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// The run's identity, `None` when nothing was left to measure here.
    pub run: Option<String>,
    /// Cells that ran in this run.
    pub ran: usize,
    /// Cells already complete in the campaign (skipped).
    pub done: usize,
    /// Cells waiting for another system state.
    pub pending: usize,
}

struct Live {
    cell: Cell,
    inst: Option<Box<dyn Instance>>,
    /// Metric names, by the index a benchmark's measures use.
    metrics: Vec<String>,
    want: u32,
    taken: u32,
    failed: bool,
    failures: u32,
    /// Values of the first metric, for adaptive stopping.
    values: Vec<f64>,
    /// Stopped early: precise enough.
    done: bool,
    /// Samples due by the end of the current process (`want` without
    /// `--processes`).
    quota: u32,
    /// The current process of `--processes`.
    process: Option<u32>,
}

/// The environment of a run: where its events go, its identity, and the
/// stop flag set by SIGINT/SIGTERM.
struct Ctx<'a> {
    sink: &'a mut dyn Sink,
    run: String,
    stop: Arc<AtomicBool>,
}

impl Ctx<'_> {
    fn emit(&mut self, e: Event) -> anyhow::Result<()> {
        self.sink.event(&e)
    }

    fn fail(
        &mut self,
        l: &mut Live,
        round: u32,
        message: String,
        cell_stopped: bool,
    ) -> anyhow::Result<()> {
        let seq = l.failures;
        l.failures += 1;
        if cell_stopped {
            l.failed = true;
        }
        self.emit(Event::Failure(FailureEvent {
            run: self.run.clone(),
            cell: l.cell.key.clone(),
            seq,
            round,
            t: unix_now(),
            message,
            cell_stopped,
        }))
    }

    fn note(&mut self, l: &Live) -> anyhow::Result<()> {
        let Some(inst) = &l.inst else {
            return Ok(());
        };
        self.emit(Event::Note(NoteEvent {
            run: self.run.clone(),
            cell: l.cell.key.clone(),
            placement: inst.placement(),
            notes: inst.notes().into_iter().collect(),
        }))
    }
}

/// The description of a cell as recorded.
pub(crate) fn cell_info(
    cell: &Cell,
    readings: &IndexMap<String, String>,
) -> anyhow::Result<CellInfo> {
    let params = match serde_json::to_value(&cell.params)? {
        serde_json::Value::Object(m) => m,
        other => anyhow::bail!("parameters serialise as {other}, not an object"),
    };
    Ok(CellInfo {
        key: cell.key.clone(),
        bench: cell.display.clone(),
        source: cell.bench.name().to_string(),
        kind: cell.bench.kind(),
        params,
        factors: cell.factors.clone(),
        label_params: cell.label_params.clone(),
        metrics: cell.bench.metrics(),
        readings: readings.clone(),
    })
}

/// The plan's cells, checked against the run's settings; what is wrong is
/// bad input (exit 2), found before anything runs or prints.
pub fn cells(plan: &Plan, opts: &RunConfig) -> anyhow::Result<Vec<Cell>> {
    let cells = crate::plan::expand(plan)?;
    if opts.stop.is_some_and(|r| r.until_verdict) && cells.len() != 2 {
        return Err(bad_input!(
            "--until-verdict compares two variants; this run has {} cells",
            cells.len()
        ));
    }
    let mut keys = std::collections::HashSet::new();
    if let Some(c) = cells.iter().find(|c| !keys.insert(&c.key)) {
        return Err(bad_input!(
            "`{}` names the same cell twice ({})",
            plan.name,
            c.key
        ));
    }
    Ok(cells)
}

/// Run the cells of `plan` that fit the running system and still miss
/// samples; returns what was done and how it ended.
///
/// A plan file is a campaign (`campaign`): cells complete in an earlier
/// run (`have`) are skipped, a partly measured cell gets only its missing
/// samples, and cells whose `system` factors do not match the probe
/// readings are left pending. Samples are only ever counted together with
/// samples taken under the same readings, so a cell never mixes two
/// system states.
pub fn run(
    plan: &Plan,
    opts: &RunConfig,
    campaign: Option<CampaignKey>,
    have: &Progress,
    fp: &Fingerprint,
    sink: &mut dyn Sink,
) -> anyhow::Result<(Summary, RunStatus)> {
    let cells = cells(plan, opts)?;
    let readings = campaign::read_probes(plan);
    let mut fp = fp.clone();
    fp.probes.extend(readings.clone());
    let state = crate::record::readings_text(&readings);

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
        let got = counts.and_then(|m| m.get(&state)).copied().unwrap_or(0);
        todo.push((cell, want - got.min(want)));
    }
    if todo.is_empty() {
        return Ok((summary, RunStatus::Done));
    }
    // Only now, with cells certain to run, is any code built or loaded.
    for (cell, _) in &todo {
        cell.bench.ready()?;
    }
    summary.ran = todo.len();

    let stop = Arc::new(AtomicBool::new(false));
    let _signals = Interrupts::install(&stop)?;

    let mut live: Vec<Live> = todo
        .into_iter()
        .map(|(cell, want)| Live {
            want: match &opts.stop {
                Some(rule) => rule.max_samples,
                None => want,
            },
            metrics: cell.bench.metrics().into_iter().map(|m| m.name).collect(),
            cell,
            inst: None,
            taken: 0,
            failed: false,
            failures: 0,
            values: Vec::new(),
            done: false,
            quota: 0,
            process: None,
        })
        .collect();
    let uuid = crate::ids::new_run_uuid();
    summary.run = Some(uuid.clone());
    let mut ctx = Ctx {
        sink,
        run: uuid.clone(),
        stop,
    };
    ctx.emit(Event::RunBegun(Box::new(RunBegun {
        schema: SCHEMA,
        run: uuid.clone(),
        campaign,
        host: fp.hostname.clone(),
        started: unix_now(),
        overhead_ns: crate::bench::micro::loop_overhead_ns(opts.sample_time.min(0.05)),
        config: opts.clone(),
        fingerprint: fp.clone(),
        planned_cells: live.len(),
        planned_samples: live.iter().map(|l| (l.want + opts.warmup) as u64).sum(),
    })))?;
    for l in &live {
        ctx.emit(Event::CellPrepared(CellPrepared {
            run: uuid.clone(),
            cell: cell_info(&l.cell, &readings)?,
        }))?;
    }

    let home = system::get_affinity().context("reading CPU affinity")?;
    let settings = RunSettings {
        sample_time: opts.sample_time,
        process: None,
    };
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
    let mut status = RunStatus::Done;
    // Numbers this run's ledger entries (one per step whose setup ran).
    let mut steps_started = 0;
    for (steps, members) in groups {
        // A step's teardown is owed from the moment its setup starts, and
        // runs whatever happens after: a failing setup, Ctrl-C, an error.
        let mut owed: Vec<(&crate::plan::ShellStep, teardown::Entry)> = Vec::new();
        let mut failed_setup = None;
        for st in &steps {
            owed.push((
                st,
                teardown::Entry::owe(&uuid, &plan.name, steps_started, st),
            ));
            steps_started += 1;
            if let Some(cmd) = &st.setup
                && let Err(e) = teardown::shell_step(cmd, true)
            {
                failed_setup = Some(format!(
                    "factor `{}` = `{}`: setup `{cmd}` {e}",
                    st.factor, st.label
                ));
                break;
            }
        }
        let sampled = match &failed_setup {
            // Ctrl-C killed the setup command: an interruption, not a
            // failing setup.
            Some(_) if ctx.stop.load(Ordering::Relaxed) => Ok(RunStatus::Interrupted),
            None => sample_group(
                &mut ctx, &mut live, &members, opts, &settings, &home, &mut rng, started,
            ),
            Some(msg) => members
                .iter()
                .try_for_each(|&i| ctx.fail(&mut live[i], 0, msg.clone(), true))
                .map(|()| RunStatus::Failed),
        };
        // Instances go (their per-cell cleanup runs) before the teardown;
        // what they learnt over all samples (e.g. per-task imbalance) is
        // recorded first.
        let mut noted = Ok(());
        for &i in &members {
            if live[i].taken > 0 && noted.is_ok() {
                noted = ctx.note(&live[i]);
            }
            live[i].inst = None;
        }
        for why in teardown::tear_down(owed) {
            status = RunStatus::Failed;
            ctx.emit(Event::Warning(WarningEvent {
                run: uuid.clone(),
                message: why,
            }))?;
        }
        let s = sampled?;
        noted?;
        if s == RunStatus::Interrupted {
            status = s;
            break;
        }
    }
    // Readings are taken once, before the first sample; a state that
    // changed under the run would file samples under the wrong state.
    let after = campaign::read_probes(plan);
    if after != readings {
        let diff: Vec<String> = after
            .iter()
            .filter(|(k, v)| readings.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: `{}` -> `{v}`", readings.get(k).map_or("?", |s| s)))
            .collect();
        ctx.emit(Event::Warning(WarningEvent {
            run: uuid.clone(),
            message: format!(
                "the system state changed during the run ({}); its samples are filed under the readings taken at its start",
                diff.join(", ")
            ),
        }))?;
    }
    // A cell whose every sample failed measured nothing, even when its
    // failures let it go on (`on_failure = "continue"`): the run failed.
    let failed = |l: &Live| l.failed || (l.failures > 0 && l.values.is_empty());
    if status == RunStatus::Done && live.iter().any(failed) {
        status = RunStatus::Failed;
    }
    for l in &live {
        let cell_status = if failed(l) {
            CellStatus::Failed
        } else if l.done || l.taken >= l.want {
            CellStatus::Done
        } else if status == RunStatus::Interrupted {
            CellStatus::Interrupted
        } else {
            // Stopped by --max-time or a decided --until-verdict.
            CellStatus::Done
        };
        ctx.emit(Event::CellDone(CellDone {
            run: uuid.clone(),
            cell: l.cell.key.clone(),
            status: cell_status,
            samples: l.taken,
        }))?;
    }
    ctx.emit(Event::RunEnded(RunEnded {
        run: uuid,
        ended: unix_now(),
        status,
    }))?;
    Ok((summary, status))
}

/// SIGINT and SIGTERM during a run: the first asks the runner to stop after
/// the current sample (and says so at once, since a sample may last long);
/// a second one ends the process at once, exit code 1. The handlers go
/// when the run does. No thread is started for this: some benchmarks
/// (brk) need kbench to be single-threaded.
struct Interrupts {
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    fn install(stop: &Arc<AtomicBool>) -> anyhow::Result<Interrupts> {
        const MSG: &[u8] =
            b"kbench: stopping after the current sample (Ctrl-C again to stop now)\n";
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let stop = Arc::clone(stop);
            let action = move || {
                if stop.swap(true, Ordering::SeqCst) {
                    signal_hook::low_level::exit(1);
                }
                // SAFETY: write(2) is async-signal-safe; the buffer is static.
                unsafe { libc::write(2, MSG.as_ptr().cast(), MSG.len()) };
            };
            // SAFETY: the action only touches an atomic and calls
            // async-signal-safe functions.
            ids.push(
                unsafe { signal_hook::low_level::register(sig, action) }
                    .context("installing signal handler")?,
            );
        }
        Ok(Interrupts { ids })
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// A sample's values by metric name; a value that is not a finite number
/// makes the sample a failure (stores and statistics take numbers only).
fn sample_values(l: &Live, out: &[Measure]) -> Result<Vec<(String, f64)>, String> {
    let mut values = Vec::with_capacity(out.len());
    for m in out {
        let name = &l.metrics[m.metric];
        if let Err(why) = crate::stats::sample::check_value(m.value) {
            return Err(format!("metric `{name}` read {why}"));
        }
        values.push((name.clone(), m.value));
    }
    Ok(values)
}

/// Prepare the cells of one group and sample them in shuffled rounds.
#[allow(clippy::too_many_arguments)]
fn sample_group(
    ctx: &mut Ctx<'_>,
    live: &mut [Live],
    members: &[usize],
    opts: &RunConfig,
    settings: &RunSettings,
    home: &crate::units::CpuSet,
    rng: &mut rand_chacha::ChaCha8Rng,
    started: std::time::Instant,
) -> anyhow::Result<RunStatus> {
    let procs = opts.processes.unwrap_or(1).max(1);
    // Each micro-benchmark cell takes its share of samples in each of
    // `procs` fresh processes, one after another (worker.rs); other cells
    // take theirs all in the first.
    let split = |l: &Live| procs > 1 && l.cell.bench.kind() == Kind::Micro;
    for p in 0..procs {
        let phase: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| p == 0 || split(&live[i]))
            .collect();
        for &i in &phase {
            let l = &mut live[i];
            if l.failed {
                continue;
            }
            let process = split(l).then_some(p);
            // The previous process's instance goes first (a worker exits).
            l.inst = None;
            // Children a benchmark forks inherit the cell's CPU set.
            system::set_affinity(l.cell.cpus.as_ref().unwrap_or(home))?;
            let inst = instantiate(l, settings, process);
            system::set_affinity(home)?;
            match inst {
                Ok(inst) => l.inst = Some(inst),
                Err(e) => {
                    let msg = format!("preparing {}: {e:#}", l.cell.key);
                    ctx.fail(l, 0, msg, true)?;
                }
            }
            // This process's share: the samples due by its end.
            l.quota = if split(l) {
                (u64::from(l.want) * u64::from(p + 1)).div_ceil(u64::from(procs)) as u32
            } else {
                l.want
            };
            l.process = process;
        }
        let s = sample_rounds(ctx, live, &phase, opts, home, rng, started)?;
        if s != RunStatus::Done {
            return Ok(s);
        }
    }
    Ok(RunStatus::Done)
}

/// A fresh instance of a cell, for process `process` of `--processes`: a
/// worker process for a built-in micro-benchmark, else an instance here.
fn instantiate(
    l: &Live,
    settings: &RunSettings,
    process: Option<u32>,
) -> anyhow::Result<Box<dyn Instance>> {
    let settings = RunSettings {
        process,
        ..settings.clone()
    };
    let name = l.cell.bench.name();
    match process {
        Some(p) if crate::bench::find(name).is_some() => Ok(Box::new(worker::Worker::start(
            name,
            &l.cell.params,
            &settings,
            p,
        )?)),
        _ => l.cell.bench.instantiate(&l.cell.params, &settings),
    }
}

/// Sample the prepared cells of one group in shuffled rounds, each up to
/// its quota.
#[allow(clippy::too_many_arguments)]
fn sample_rounds(
    ctx: &mut Ctx<'_>,
    live: &mut [Live],
    members: &[usize],
    opts: &RunConfig,
    home: &crate::units::CpuSet,
    rng: &mut rand_chacha::ChaCha8Rng,
    started: std::time::Instant,
) -> anyhow::Result<RunStatus> {
    let mut out: Vec<Measure> = Vec::with_capacity(16);
    let mut round = 0u32;
    let hz = guard::max_cpu_hz();
    loop {
        let mut order: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| !live[i].failed && !live[i].done && live[i].taken < live[i].quota)
            .collect();
        if order.is_empty() {
            return Ok(RunStatus::Done);
        }
        order.shuffle(rng);
        let warm = round < opts.warmup;
        let measured = round.saturating_sub(opts.warmup);
        for i in order {
            if ctx.stop.load(Ordering::Relaxed) {
                return Ok(RunStatus::Interrupted);
            }
            if opts
                .stop
                .and_then(|r| r.max_time)
                .is_some_and(|t| started.elapsed().as_secs_f64() >= t)
            {
                return Ok(RunStatus::Done);
            }
            let l = &mut live[i];
            let inst = l.inst.as_mut().expect("prepared");
            out.clear();
            system::set_affinity(l.cell.cpus.as_ref().unwrap_or(home))?;
            let res = inst.sample(&mut out);
            system::set_affinity(home)?;
            let now = unix_now();
            let res = res.and_then(|()| {
                sample_values(l, &out).map_err(|m| {
                    anyhow::Error::new(SampleFailure {
                        message: m,
                        keep_going: true,
                    })
                })
            });
            // An impossible value fails the cell: what it timed is not the
            // benchmark's work, and later samples would time it again.
            let res = res.and_then(|v| {
                match hz.and_then(|hz| {
                    let b = &l.cell.bench;
                    guard::impossible(b.kind(), &b.metrics(), &l.cell.params, &out, hz)
                }) {
                    Some(why) => Err(anyhow::Error::new(SampleFailure {
                        message: why,
                        keep_going: false,
                    })),
                    None => Ok(v),
                }
            });
            let values = match res {
                Ok(v) => v,
                Err(e) => {
                    if ctx.stop.load(Ordering::Relaxed) {
                        return Ok(RunStatus::Interrupted);
                    }
                    let keep_going = e
                        .downcast_ref::<SampleFailure>()
                        .is_some_and(|f| f.keep_going);
                    ctx.fail(l, measured, format!("{e:#}"), !keep_going)?;
                    // A failed attempt counts, so a cell that always fails
                    // still ends.
                    if keep_going && !warm {
                        l.taken += 1;
                    }
                    continue;
                }
            };
            if warm {
                ctx.emit(Event::Warmup(WarmupEvent {
                    run: ctx.run.clone(),
                    cell: l.cell.key.clone(),
                    round,
                }))?;
                continue;
            }
            l.values
                .extend(out.iter().filter(|m| m.metric == 0).map(|m| m.value));
            ctx.emit(Event::Sample(SampleEvent {
                run: ctx.run.clone(),
                cell: l.cell.key.clone(),
                // Rounds restart in each process: number its samples on.
                round: if l.process.is_some() {
                    l.taken
                } else {
                    measured
                },
                t: now,
                values,
                process: l.process,
            }))?;
            l.taken += 1;
            if let Some(rule) = &opts.stop
                && !rule.until_verdict
                && adaptive::precise_enough(&l.values, rule.precision)
            {
                l.done = true;
            }
            if l.taken == 1 {
                ctx.note(l)?;
            }
        }
        round += 1;
        if let Some(rule) = &opts.stop
            && rule.until_verdict
            && let [a, b] = members
            && [*a, *b]
                .iter()
                .all(|&i| live[i].values.len() >= adaptive::MIN_SAMPLES)
            && adaptive::look(&live[*a].values, &live[*b].values, rule.precision)
                .is_some_and(|l| l.verdict.decided())
        {
            return Ok(RunStatus::Done);
        }
    }
}

#[cfg(test)]
mod tests;
