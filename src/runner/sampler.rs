//! The round loop, once, for every producer of samples: `kbench run`
//! (fixed counts, adaptive stopping, `--processes` workers) and each step
//! of `kbench bisect`.
//!
//! Arms (cells being measured) are sampled in rounds: in each round every
//! unfinished arm takes one sample, in a shuffled order (seeded), so slow
//! drift of the machine hits every arm alike and two arms measured in the
//! same round can be compared pair by pair. The first `warmup` rounds are
//! discarded. A value that is not a number fails its sample; an impossible
//! one (faster than the CPU's clock allows, [`super::guard`]) fails its
//! cell. The stop flag (Ctrl-C, SIGTERM) ends the loop after the current
//! sample.
//!
//! Rounds are numbered on across every group of a run, so `(run, round)`
//! names one stretch of time: the unit a paired analysis compares arms in.
//! With `--processes N` a micro-benchmark arm holds N worker processes at
//! once and every round samples it in one of them, taking turns in an
//! order reshuffled every N rounds: each process measures across the whole
//! run, so the variance between processes is the memory layout's, not
//! the load's drift. Each warm-up round samples every process once.
//!
//! With `--counters` a micro-benchmark or scale arm also opens event
//! counters (`system::open_counters`) before its instances, so the
//! helpers, `--processes` workers and scale tasks they start are counted
//! too; they are enabled only around each sample's timed part
//! (`Instance::sample_counted`) and stored divided by its operations, as
//! metrics `<counter>/op`.
//!
//! With `--profile` the OS's profiler (`system::start_profiler`) samples
//! call stacks from before the first cell to the end of the run; each
//! measured sample's timed interval is noted, and at the end the stacks
//! inside each interval are sent folded as one `profile` event per cell
//! and round.

use rand::seq::SliceRandom;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::bench::command::SampleFailure;
use crate::bench::{Direction, Instance, Kind, Measure, Metric, RunSettings};
use crate::event::{
    CellDone, CellPrepared, Event, FailureEvent, NoteEvent, ProfileEvent, RunBegun, RunEnded,
    SampleEvent, Sink, WarmupEvent,
};
use crate::ids::unix_now;
use crate::plan::Cell;
use crate::profile::Span;
use crate::record::{CellStatus, RunStatus};
use crate::system;
use crate::system::counters::{Counter, CounterGroup};
use crate::system::profiler::Profiler;
use crate::units::CpuSet;

use super::{guard, worker};

/// A cell being measured, with what the loop learnt of it.
pub struct Arm {
    pub cell: Cell,
    /// Metric names, by the index a benchmark's measures use.
    metrics: Vec<String>,
    /// The metric whose values are kept in `values`.
    keep: usize,
    /// Its instances: one per process of `--processes`, else one.
    insts: Vec<Box<dyn Instance>>,
    /// Measured in worker processes (their count), or in this one.
    processes: Option<u32>,
    /// Samples due in this run.
    pub want: u32,
    /// Samples taken (failed attempts that let it go on count too).
    pub taken: u32,
    /// Why the cell takes no more samples in this run, when it failed.
    pub failed: Option<String>,
    failures: u32,
    /// Values of the kept metric, each with its round.
    pub values: Vec<(u32, f64)>,
    /// Stopped early: precise enough.
    pub done: bool,
    /// Its `cell_done` was sent (as soon as it took its last sample).
    announced: bool,
    /// Event counters read around each sample, opened with the instances.
    counters: Option<Box<dyn CounterGroup>>,
    /// The last sample's counts, one per opened counter.
    counts: Vec<f64>,
}

impl Arm {
    /// An arm of `cell` due `want` samples, keeping the values of its
    /// metric number `keep`.
    pub fn new(cell: Cell, want: u32, keep: usize) -> Arm {
        Arm {
            metrics: cell
                .bench
                .metrics()
                .iter()
                .map(|m| m.name.clone())
                .collect(),
            cell,
            keep,
            insts: Vec::new(),
            processes: None,
            want,
            taken: 0,
            failed: None,
            failures: 0,
            values: Vec::new(),
            done: false,
            announced: false,
            counters: None,
            counts: Vec::new(),
        }
    }

    /// The kept metric's values, in the order taken.
    pub fn kept(&self) -> Vec<f64> {
        self.values.iter().map(|&(_, v)| v).collect()
    }

    fn open(&self) -> bool {
        self.failed.is_none() && !self.done && self.taken < self.want
    }

    /// The cell failed: it stopped on a failure, or every sample it took
    /// failed (`on_failure = "continue"` let it go on, but it measured
    /// nothing).
    pub fn failed_cell(&self) -> bool {
        self.failed.is_some() || (self.failures > 0 && self.values.is_empty())
    }
}

/// When sampling stops, besides every arm having its samples.
pub trait Rule {
    /// After a measured sample of `arm`: true when it needs no more.
    fn arm_done(&mut self, _arm: &Arm) -> bool {
        false
    }
    /// After each measured round of `members`: true ends their sampling.
    fn enough(&mut self, _arms: &[Arm], _members: &[usize]) -> bool {
        false
    }
}

/// How a group's rounds go.
pub struct Schedule {
    /// Warm-up rounds discarded.
    pub warmup: u32,
    /// Stop taking samples after this long (`--max-time`).
    pub deadline: Option<std::time::Instant>,
}

/// One run's sampling: where its events go, its identity and stop flag.
pub struct Sampler<'a> {
    pub sink: &'a mut dyn Sink,
    pub run: String,
    pub stop: Arc<AtomicBool>,
    sample_time: f64,
    /// The CPUs kbench itself runs on between samples.
    home: CpuSet,
    hz: Option<f64>,
    /// The number the next measured round gets.
    next_round: u32,
    /// Measured samples taken (warm-ups not counted).
    pub measured: u64,
    /// The counters `--counters` asked for that open here.
    counters: Vec<Counter>,
    /// Why the others do not, one line each.
    counters_missing: Vec<String>,
    /// `--profile`'s profiler, sampling since the run began.
    profiler: Option<Box<dyn Profiler>>,
    /// The last sample's timed interval (monotonic ns).
    last_span: (u64, u64),
    /// Every measured sample's timed interval, when profiling.
    spans: Vec<Span>,
}

impl<'a> Sampler<'a> {
    /// Begin a run: send its `run_begun`.
    pub fn begin(
        sink: &'a mut dyn Sink,
        begun: RunBegun,
        stop: Arc<AtomicBool>,
    ) -> anyhow::Result<Sampler<'a>> {
        let run = begun.run.clone();
        let sample_time = begun.config.sample_time;
        // Before anything is recorded: a missing profiler is bad input.
        let profiler = match begun.config.profile {
            true => Some(system::start_profiler().map_err(|e| crate::error::bad_input!("{e}"))?),
            false => None,
        };
        let asked = system::counters::parse_list(&begun.config.counters.join(","))
            .map_err(|e| crate::error::bad_input!("{e}"))?;
        sink.event(&Event::RunBegun(Box::new(begun)))?;
        // Which counters open here is learnt once, so every cell declares
        // the same metrics.
        let (counters, counters_missing) = if asked.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            let o = system::open_counters(&asked);
            let opened = o.group.map(|g| g.counters().to_vec()).unwrap_or_default();
            (opened, o.missing)
        };
        let user_only = profiler.as_ref().is_some_and(|p| !p.kernel());
        let profile_note = user_only.then(|| {
            "profile: user-space stacks only (kernel frames need root or perf_event_paranoid <= 1)"
                .to_string()
        });
        for m in counters_missing.iter().chain(&profile_note) {
            sink.event(&Event::Warning(crate::event::WarningEvent {
                run: run.clone(),
                message: m.clone(),
            }))?;
        }
        Ok(Sampler {
            sink,
            run,
            stop,
            sample_time,
            home: system::get_affinity()?,
            hz: guard::max_cpu_hz(),
            next_round: 0,
            measured: 0,
            counters,
            counters_missing,
            profiler,
            last_span: (0, 0),
            spans: Vec::new(),
        })
    }

    /// Whether `arm` reads counters: a micro-benchmark or a scale cell
    /// (their samples count operations) when counters opened here.
    fn counted(&self, arm: &Arm) -> bool {
        !self.counters.is_empty() && arm.cell.bench.kind() != Kind::Command
    }

    pub fn emit(&mut self, e: Event) -> anyhow::Result<()> {
        self.sink.event(&e)
    }

    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Announce an arm's cell (`cell_prepared`), under these readings.
    pub fn announce(
        &mut self,
        arm: &Arm,
        readings: &indexmap::IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        let mut cell = super::cell_info(&arm.cell, readings)?;
        if self.counted(arm) {
            cell.metrics.extend(
                self.counters
                    .iter()
                    .map(|c| Metric::new(&c.metric(), c.unit(), Direction::Lower)),
            );
            if system::counters::gives_ipc(&self.counters) {
                let ipc = system::counters::IPC;
                cell.metrics
                    .push(Metric::new(ipc, "instructions/cycle", Direction::Higher));
            }
        }
        self.emit(Event::CellPrepared(CellPrepared {
            run: self.run.clone(),
            cell,
        }))
    }

    /// Record a failure of `arm`; `stopped` when it takes no more samples.
    pub fn fail(
        &mut self,
        arm: &mut Arm,
        round: u32,
        message: String,
        stopped: bool,
    ) -> anyhow::Result<()> {
        let seq = arm.failures;
        arm.failures += 1;
        if stopped {
            arm.failed = Some(message.clone());
        }
        self.emit(Event::Failure(FailureEvent {
            run: self.run.clone(),
            cell: arm.cell.key.clone(),
            seq,
            round,
            t: unix_now(),
            message,
            cell_stopped: stopped,
        }))
    }

    /// What the arm's (first) instance says of itself.
    fn note(&mut self, arm: &Arm) -> anyhow::Result<()> {
        let Some(inst) = arm.insts.first() else {
            return Ok(());
        };
        let mut notes: indexmap::IndexMap<String, String> = inst.notes().into_iter().collect();
        if self.counted(arm) {
            notes.insert("counters".into(), self.counters_note(arm));
        }
        self.emit(Event::Note(NoteEvent {
            run: self.run.clone(),
            cell: arm.cell.key.clone(),
            placement: inst.placement(),
            notes,
        }))
    }

    /// What the arm's counters were: those read, and why others were not.
    fn counters_note(&self, arm: &Arm) -> String {
        let mut parts: Vec<String> = Vec::new();
        match &arm.counters {
            Some(g) => {
                let names: Vec<&str> = g.counters().iter().map(|c| c.name()).collect();
                parts.push(format!("read per operation: {}", names.join(", ")));
            }
            None => parts.push("could not be opened for this cell".into()),
        }
        parts.extend(self.counters_missing.iter().cloned());
        parts.join("; ")
    }

    /// Make the arm's instances: one per process of `processes` for a
    /// micro-benchmark (a worker process for a built-in one), else one
    /// here. A failure fails the arm.
    pub fn prepare(&mut self, arm: &mut Arm, processes: Option<u32>) -> anyhow::Result<()> {
        if arm.failed.is_some() {
            return Ok(());
        }
        arm.insts.clear();
        arm.processes = processes.filter(|&n| n > 1 && arm.cell.bench.kind() == Kind::Micro);
        let indexes: Vec<Option<u32>> = match arm.processes {
            Some(n) => (0..n).map(Some).collect(),
            None => vec![None],
        };
        // What the benchmark needs built (a C testcase), once, before any
        // instance and not on the cell's CPUs.
        if let Err(e) = arm.cell.bench.ready() {
            let msg = format!("preparing {}: {e:#}", arm.cell.key);
            return self.fail(arm, self.next_round, msg, true);
        }
        // Opened before the instances, so the helpers and worker processes
        // they start inherit them; disabled until a sample.
        arm.counters = None;
        if self.counted(arm) {
            arm.counters = system::open_counters(&self.counters).group;
            arm.counts = vec![0.0; arm.counters.as_ref().map_or(0, |g| g.counters().len())];
        }
        for p in indexes {
            // Children a benchmark forks inherit the cell's CPU set.
            system::set_affinity(arm.cell.cpus.as_ref().unwrap_or(&self.home))?;
            let inst = instantiate(&arm.cell, self.sample_time, p);
            system::set_affinity(&self.home)?;
            match inst {
                Ok(i) => arm.insts.push(i),
                Err(e) => {
                    arm.insts.clear();
                    let msg = format!("preparing {}: {e:#}", arm.cell.key);
                    return self.fail(arm, self.next_round, msg, true);
                }
            }
        }
        Ok(())
    }

    /// The arm's instances go (their cleanup runs; worker processes end),
    /// what they learnt over all samples recorded first.
    pub fn release(&mut self, arm: &mut Arm) -> anyhow::Result<()> {
        if arm.taken > 0 {
            self.note(arm)?;
        }
        arm.insts.clear();
        arm.counters = None;
        Ok(())
    }

    /// Sample the prepared `members` of `arms` in shuffled rounds until
    /// each has its samples or `rule` says stop.
    pub fn rounds(
        &mut self,
        arms: &mut [Arm],
        members: &[usize],
        schedule: &Schedule,
        rng: &mut rand_chacha::ChaCha8Rng,
        rule: &mut dyn Rule,
    ) -> anyhow::Result<RunStatus> {
        let mut out: Vec<Measure> = Vec::with_capacity(16);
        let mut turns: Vec<u32> = Vec::new();
        let mut measured_rounds = 0u32;
        let mut w = 0u32;
        loop {
            let open: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| arms[i].open() && !arms[i].insts.is_empty())
                .collect();
            if open.is_empty() {
                return Ok(RunStatus::Done);
            }
            let warm = w < schedule.warmup;
            // (arm, instance) pairs of this round, in a shuffled order.
            let mut order: Vec<(usize, usize)> = if warm {
                open.iter()
                    .flat_map(|&i| (0..arms[i].insts.len()).map(move |k| (i, k)))
                    .collect()
            } else {
                let n = open
                    .iter()
                    .filter_map(|&i| arms[i].processes)
                    .max()
                    .unwrap_or(1);
                if measured_rounds.is_multiple_of(n) {
                    turns = (0..n).collect();
                    turns.shuffle(rng);
                }
                let turn = turns[(measured_rounds % n) as usize] as usize;
                open.iter()
                    .map(|&i| (i, if arms[i].processes.is_some() { turn } else { 0 }))
                    .collect()
            };
            order.shuffle(rng);
            let round = self.next_round;
            for (i, k) in order {
                if self.stopped() {
                    return Ok(RunStatus::Interrupted);
                }
                if schedule
                    .deadline
                    .is_some_and(|d| std::time::Instant::now() >= d)
                {
                    return Ok(RunStatus::Done);
                }
                let arm = &mut arms[i];
                if arm.failed.is_some() {
                    continue;
                }
                let res = self.sample_once(arm, k, &mut out);
                let values = match res {
                    Ok(v) => v,
                    Err(e) => {
                        if self.stopped() {
                            return Ok(RunStatus::Interrupted);
                        }
                        let keep_going = e
                            .downcast_ref::<SampleFailure>()
                            .is_some_and(|f| f.keep_going);
                        self.fail(arm, round, format!("{e:#}"), !keep_going)?;
                        // A failed attempt counts, so a cell that always
                        // fails still ends.
                        if keep_going && !warm {
                            arm.taken += 1;
                        }
                        continue;
                    }
                };
                if warm {
                    self.emit(Event::Warmup(WarmupEvent {
                        run: self.run.clone(),
                        cell: arm.cell.key.clone(),
                        round: w,
                    }))?;
                    continue;
                }
                self.record(arm, &out, values, round, k)?;
                if rule.arm_done(arm) {
                    arm.done = true;
                }
                if !arm.open() {
                    self.cell_finished(arm)?;
                }
            }
            w += 1;
            if !warm {
                self.next_round += 1;
                measured_rounds += 1;
                if rule.enough(arms, members) {
                    return Ok(RunStatus::Done);
                }
            }
        }
    }

    /// One sample of `arm` in its instance `k`, checked: its values by
    /// metric name.
    fn sample_once(
        &mut self,
        arm: &mut Arm,
        k: usize,
        out: &mut Vec<Measure>,
    ) -> anyhow::Result<Vec<(String, f64)>> {
        out.clear();
        system::set_affinity(arm.cell.cpus.as_ref().unwrap_or(&self.home))?;
        let t0 = crate::bench::micro::now_ns();
        let res = match arm.counters.as_mut() {
            Some(g) => arm.insts[k].sample_counted(out, g.as_mut()),
            None => arm.insts[k].sample(out),
        };
        self.last_span = (t0, crate::bench::micro::now_ns());
        system::set_affinity(&self.home)?;
        res?;
        let mut values = sample_values(arm, out).map_err(|m| {
            anyhow::Error::new(SampleFailure {
                message: m,
                keep_going: true,
            })
        })?;
        // An impossible value fails the cell: what it timed is not the
        // benchmark's work, and later samples would time it again.
        let b = &arm.cell.bench;
        if let Some(why) = self
            .hz
            .and_then(|hz| guard::impossible(b.kind(), b.metrics(), &arm.cell.params, out, hz))
        {
            return Err(anyhow::Error::new(SampleFailure {
                message: why,
                keep_going: false,
            }));
        }
        counter_values(arm, k, &mut values)?;
        Ok(values)
    }

    /// A measured sample: kept, sent, counted.
    fn record(
        &mut self,
        arm: &mut Arm,
        out: &[Measure],
        values: Vec<(String, f64)>,
        round: u32,
        k: usize,
    ) -> anyhow::Result<()> {
        arm.values.extend(
            out.iter()
                .filter(|m| m.metric == arm.keep)
                .map(|m| (round, m.value)),
        );
        self.emit(Event::Sample(SampleEvent {
            run: self.run.clone(),
            cell: arm.cell.key.clone(),
            round,
            t: unix_now(),
            values,
            process: arm.processes.map(|_| k as u32),
        }))?;
        if self.profiler.is_some() {
            self.spans.push(Span {
                cell: arm.cell.key.clone(),
                round,
                start: self.last_span.0,
                end: self.last_span.1,
            });
        }
        arm.taken += 1;
        self.measured += 1;
        if arm.taken == 1 {
            self.note(arm)?;
        }
        Ok(())
    }

    /// The arm took its last sample in this run (all it was due, or a
    /// rule said enough): its instances go and its `cell_done` is sent
    /// now, so a reader learns of it while other cells are still sampled.
    /// A failed cell waits for [`Sampler::finish`], which says why.
    pub fn cell_finished(&mut self, arm: &mut Arm) -> anyhow::Result<()> {
        if arm.announced || arm.failed_cell() {
            return Ok(());
        }
        self.release(arm)?;
        arm.announced = true;
        self.emit(Event::CellDone(CellDone {
            run: self.run.clone(),
            cell: arm.cell.key.clone(),
            status: CellStatus::Done,
            samples: arm.taken,
        }))
    }

    /// End the run: every arm's instances go, its `cell_done` (failed,
    /// done, or interrupted when the run was and it missed samples), then
    /// `run_ended`.
    pub fn finish(mut self, arms: &mut [Arm], status: RunStatus) -> anyhow::Result<()> {
        for arm in arms.iter_mut().filter(|a| !a.announced) {
            if !arm.insts.is_empty() {
                self.release(arm)?;
            }
            let cell_status = if arm.failed_cell() {
                CellStatus::Failed
            } else if arm.done || arm.taken >= arm.want || status != RunStatus::Interrupted {
                // Stopped early by a rule (--max-time, a decision): done.
                CellStatus::Done
            } else {
                CellStatus::Interrupted
            };
            self.emit(Event::CellDone(CellDone {
                run: self.run.clone(),
                cell: arm.cell.key.clone(),
                status: cell_status,
                samples: arm.taken,
            }))?;
        }
        self.send_profiles()?;
        self.emit(Event::RunEnded(RunEnded {
            run: self.run.clone(),
            ended: unix_now(),
            status,
        }))
    }
}

impl Sampler<'_> {
    /// Stop the profiler and send each cell's stacks per measured round;
    /// a profiler that fails costs the profiles (a warning), not the run.
    fn send_profiles(&mut self) -> anyhow::Result<()> {
        let Some(p) = self.profiler.take() else {
            return Ok(());
        };
        let samples = match p.finish() {
            Ok(s) => s,
            Err(e) => {
                return self.emit(Event::Warning(crate::event::WarningEvent {
                    run: self.run.clone(),
                    message: format!("profile not recorded: {e:#}"),
                }));
            }
        };
        for (cell, round, stacks) in crate::profile::cut(&samples, &self.spans) {
            self.emit(Event::Profile(ProfileEvent {
                run: self.run.clone(),
                cell,
                round,
                stacks,
            }))?;
        }
        Ok(())
    }
}

/// A fresh instance of a cell, for process `process` of `--processes`: a
/// worker process for a built-in micro-benchmark, else an instance here.
fn instantiate(
    cell: &Cell,
    sample_time: f64,
    process: Option<u32>,
) -> anyhow::Result<Box<dyn Instance>> {
    let settings = RunSettings {
        sample_time,
        process,
    };
    let name = cell.bench.name();
    match process {
        Some(p) if crate::bench::find(name).is_some() => Ok(Box::new(worker::Worker::start(
            name,
            &cell.params,
            &settings,
            p,
        )?)),
        _ => cell.bench.instantiate(&cell.params, &settings),
    }
}

/// The arm's counts of its last sample, per operation, as values (none
/// when its instance does not count operations).
fn counter_values(arm: &mut Arm, k: usize, values: &mut Vec<(String, f64)>) -> anyhow::Result<()> {
    let Some(g) = arm.counters.as_mut() else {
        return Ok(());
    };
    let Some(ops) = arm.insts[k].operations().filter(|&n| n > 0.0) else {
        return Ok(());
    };
    g.read(&mut arm.counts)?;
    for (c, n) in g.counters().iter().zip(&arm.counts) {
        values.push((c.metric(), n / ops));
    }
    if let Some(ipc) = system::counters::ipc(g.counters(), &arm.counts) {
        values.push((system::counters::IPC.to_string(), ipc));
    }
    Ok(())
}

/// A sample's values by metric name; a value that is not a finite number
/// makes the sample a failure (stores and statistics take numbers only).
fn sample_values(arm: &Arm, out: &[Measure]) -> Result<Vec<(String, f64)>, String> {
    let mut values = Vec::with_capacity(out.len());
    for m in out {
        let name = &arm.metrics[m.metric];
        if let Err(why) = crate::stats::sample::check_value(m.value) {
            return Err(format!("metric `{name}` read {why}"));
        }
        values.push((name.clone(), m.value));
    }
    Ok(values)
}
