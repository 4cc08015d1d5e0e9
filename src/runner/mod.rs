//! Executes a plan: which cells are due, shell-factor groups with their
//! setup and teardown, and the run's events around them. The sampling
//! itself (rounds in a shuffled order, warm-up, `--processes` workers,
//! the impossible-result guard, Ctrl-C) is [`sampler`]'s, shared with
//! `kbench bisect`.
//!
//! The runner never touches a store or the terminal: it emits
//! [`Event`]s into a [`Sink`] (the store writer, the JSON-lines writer, the
//! progress display) and learns how far a campaign got from a
//! [`Progress`] map its caller read beforehand.

// Adaptive stopping decides with the sequential looks of `stats`.
pub use crate::stats::sequential as adaptive;
pub mod estimate;
pub mod guard;
pub mod progress;
pub mod repeat;
pub mod sampler;
pub mod teardown;
pub mod worker;

use anyhow::Context;
use indexmap::IndexMap;
use rand::SeedableRng;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::bad_input;
use crate::event::{Event, RunBegun, SCHEMA, Sink, WarningEvent};
use crate::ids::unix_now;
use crate::plan::{Cell, Plan};
pub use crate::record::Progress;
use crate::record::{CampaignKey, CellInfo, RunConfig, RunStatus, StopRule};
use crate::system::Fingerprint;
use sampler::{Arm, Sampler};

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
    /// Cells that took their share on this boot and wait for another
    /// boot (`repeat.boots`), or whose next boot waits for the other
    /// states' (boots alternate).
    pub next_boot: usize,
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
        metrics: cell.bench.metrics().to_vec(),
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

/// What a run of a plan will measure here.
pub struct Todo {
    /// The cells to sample, each with the samples it still needs.
    pub cells: Vec<(Cell, u32)>,
    /// Cells already complete and cells waiting for another system state
    /// (`run` is `None`, `ran` 0).
    pub summary: Summary,
}

/// The cells of `plan` that fit the system whose probes read `readings`
/// and still miss samples (a campaign's `have`), as `run` will take them
/// ([`due`]).
pub fn todo(
    plan: &Plan,
    opts: &RunConfig,
    have: &Progress,
    readings: &IndexMap<String, String>,
) -> anyhow::Result<Todo> {
    let boot = opts.owner.as_ref().map(|o| o.boot_id.as_str());
    let (summary, todo) = due(cells(plan, opts)?, opts, plan.repeat, have, readings, boot);
    Ok(Todo {
        cells: todo,
        summary,
    })
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
    let readings = plan.read_probes();
    let mut fp = fp.clone();
    fp.probes.extend(readings.clone());
    let Todo {
        cells: todo,
        mut summary,
    } = todo(plan, opts, have, &readings)?;
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

    let mut arms: Vec<Arm> = todo
        .into_iter()
        .map(|(cell, want)| {
            let want = opts.stop.map_or(want, |r| r.max_samples);
            Arm::new(cell, want, 0)
        })
        .collect();
    let uuid = crate::ids::new_run_uuid();
    summary.run = Some(uuid.clone());
    let warmups = u64::from(opts.warmup) * u64::from(opts.processes.unwrap_or(1));
    let begun = RunBegun {
        schema: SCHEMA,
        run: uuid.clone(),
        campaign,
        host: fp.hostname.clone(),
        started: unix_now(),
        overhead_ns: crate::bench::micro::loop_overhead_ns(opts.sample_time.min(0.05)),
        config: opts.clone(),
        fingerprint: fp.clone(),
        planned_cells: arms.len(),
        planned_samples: arms.iter().map(|a| u64::from(a.want) + warmups).sum(),
        labels: Default::default(),
    };
    let mut s = Sampler::begin(sink, begun, stop)?;
    for a in &arms {
        s.announce(a, &readings)?;
    }
    let mut status = run_groups(&mut s, &mut arms, opts, &plan.name)?;
    // Readings are taken once, before the first sample; a state that
    // changed under the run would file samples under the wrong state.
    let after = plan.read_probes();
    if after != readings {
        let diff: Vec<String> = after
            .iter()
            .filter(|(k, v)| readings.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: `{}` -> `{v}`", readings.get(k).map_or("?", |s| s)))
            .collect();
        s.emit(Event::Warning(WarningEvent {
            run: uuid.clone(),
            message: format!(
                "the system state changed during the run ({}); its samples are filed under the readings taken at its start",
                diff.join(", ")
            ),
        }))?;
    }
    // A cell whose every sample failed measured nothing, even when its
    // failures let it go on (`on_failure = "continue"`): the run failed.
    if status == RunStatus::Done && arms.iter().any(|a| a.failed_cell()) {
        status = RunStatus::Failed;
    }
    s.finish(&mut arms, status)?;
    Ok((summary, status))
}

/// The cells that fit the running system and still miss samples, each
/// with how many this run takes; the summary counts the others.
///
/// A cell wants its `samples` in each of `repeat.runs` runs on each of
/// `repeat.boots` boots; a run takes at most one run's share. Complete
/// under any state: done. Otherwise only samples taken under the current
/// readings count towards it. With several boots, a boot takes at most
/// its share, and a cell starts another boot only when no pending cell
/// (another state) has fewer boots: the states' boots alternate, so a
/// drift between boots does not line up with the factor.
fn due(
    cells: Vec<Cell>,
    opts: &RunConfig,
    repeat: crate::plan::Repeat,
    have: &Progress,
    readings: &IndexMap<String, String>,
    boot: Option<&str>,
) -> (Summary, Vec<(Cell, u32)>) {
    let state = crate::record::readings_text(readings);
    let want = |c: &Cell| c.samples.unwrap_or(opts.samples);
    let per_boot = |c: &Cell| want(c) * repeat.runs;
    let total = |c: &Cell| per_boot(c) * repeat.boots;
    let boot = boot.unwrap_or("unknown boot");
    // The fewest boots of a cell waiting for another state.
    let others = cells
        .iter()
        .filter(|c| !c.runnable(readings) && have.best(&c.key) < total(c))
        .map(|c| have.boots_of(&c.key, "", "").0)
        .min();
    let mut summary = Summary::default();
    let mut todo = Vec::new();
    for cell in cells {
        if !cell.runnable(readings) {
            summary.pending += 1;
            continue;
        }
        if have.best(&cell.key) >= total(&cell) {
            summary.done += 1;
            continue;
        }
        let got = have
            .samples
            .get(&cell.key)
            .and_then(|m| m.get(&state))
            .copied()
            .unwrap_or(0);
        let mut n = total(&cell) - got.min(total(&cell));
        if repeat.boots > 1 {
            let (boots, here) = have.boots_of(&cell.key, &state, boot);
            n = n.min(per_boot(&cell).saturating_sub(here));
            let new_boot = here == 0 && boots > 0;
            if n == 0 || (new_boot && others.is_some_and(|o| boots > o)) {
                summary.next_boot += 1;
                continue;
            }
        }
        todo.push((cell.clone(), n.min(want(&cell))));
    }
    (summary, todo)
}

/// Sample the arms group by group: cells sharing the same `shell` factor
/// values run together between one setup and one teardown (without
/// shell factors there is one group).
fn run_groups(
    s: &mut Sampler<'_>,
    arms: &mut [Arm],
    opts: &RunConfig,
    plan: &str,
) -> anyhow::Result<RunStatus> {
    let mut groups: Vec<(Vec<crate::plan::ShellStep>, Vec<usize>)> = Vec::new();
    for (i, a) in arms.iter().enumerate() {
        match groups.iter_mut().find(|(k, _)| *k == a.cell.shell) {
            Some((_, v)) => v.push(i),
            None => groups.push((a.cell.shell.clone(), vec![i])),
        }
    }
    let schedule = sampler::Schedule {
        warmup: opts.warmup,
        deadline: opts
            .stop
            .and_then(|r| r.max_time)
            .map(|t| std::time::Instant::now() + std::time::Duration::from_secs_f64(t)),
    };
    let mut rule = Stopping(opts.stop);
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
            owed.push((st, teardown::Entry::owe(&s.run, plan, steps_started, st)));
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
            Some(_) if s.stopped() => Ok(RunStatus::Interrupted),
            None => members
                .iter()
                .try_for_each(|&i| s.prepare(&mut arms[i], opts.processes))
                .and_then(|()| s.rounds(arms, &members, &schedule, &mut rng, &mut rule)),
            Some(msg) => members
                .iter()
                .try_for_each(|&i| s.fail(&mut arms[i], 0, msg.clone(), true))
                .map(|()| RunStatus::Failed),
        };
        // Instances go (their per-cell cleanup runs) before the teardown;
        // what they learnt over all samples (e.g. per-task imbalance) is
        // recorded first.
        let mut released = Ok(());
        for &i in &members {
            let r = s.release(&mut arms[i]);
            if released.is_ok() {
                released = r;
            }
        }
        for why in teardown::tear_down(owed) {
            status = RunStatus::Failed;
            let run = s.run.clone();
            s.emit(Event::Warning(WarningEvent { run, message: why }))?;
        }
        let g = sampled?;
        released?;
        if g == RunStatus::Interrupted {
            return Ok(g);
        }
        // The group's cells are over (the next group's setup comes next).
        for &i in &members {
            s.cell_finished(&mut arms[i])?;
        }
    }
    Ok(status)
}

/// `kbench run`'s adaptive stopping as a sampler rule: a cell stops when
/// precise enough; two cells stop together once `--until-verdict` has
/// its verdict.
struct Stopping(Option<StopRule>);

impl sampler::Rule for Stopping {
    fn arm_done(&mut self, arm: &Arm) -> bool {
        self.0
            .is_some_and(|r| !r.until_verdict && adaptive::precise_enough(&arm.kept(), r.precision))
    }

    fn enough(&mut self, arms: &[Arm], members: &[usize]) -> bool {
        let Some(rule) = self.0.filter(|r| r.until_verdict) else {
            return false;
        };
        let [a, b] = members else {
            return false;
        };
        let (a, b) = (arms[*a].kept(), arms[*b].kept());
        let max = rule.max_samples as usize;
        a.len() >= adaptive::MIN_SAMPLES
            && adaptive::is_look(a.len().min(b.len()), max)
            && adaptive::look(&a, &b, rule.precision, max).is_some_and(|l| l.verdict.decided())
    }
}

/// SIGINT and SIGTERM during a run: the first asks the runner to stop after
/// the current sample (and says so at once, since a sample may last long);
/// a second one ends the process at once, exit code 1. The handlers go
/// when the run does. No thread is started for this: some benchmarks
/// (brk) need kbench to be single-threaded.
pub(crate) struct Interrupts {
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    pub(crate) fn install(stop: &Arc<AtomicBool>) -> anyhow::Result<Interrupts> {
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

#[cfg(test)]
mod tests;
