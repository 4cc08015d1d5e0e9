//! `kbench run --repeat N` (or a plan's `repeat = { runs = N }`): whole
//! runs, one after another, each in a fresh kbench process.
//!
//! Samples of one run share more than their rounds: one process's memory
//! layout, environment size and stack alignment, the page cache and the
//! machine's state of that hour. Two runs of identical code differ by
//! that much (10-23% on this machine under load), and a comparison of
//! one run a side cannot see it: it takes the run-to-run variation for a
//! difference. So each run of a repeat is a separate process, as a user's
//! shell loop would make it, and every run holds every cell of the plan,
//! interleaved in rounds as always: the variants of a comparison are
//! measured in the same rounds of each run (paired by round), and the N
//! runs are N replicates of the run level, the unit an analysis across
//! runs uses (Kalibera & Jones, ISMM 2013). The runs of one `kbench run`
//! join one campaign: the plan's, or for benchmarks named on the command
//! line a new generation of the `adhoc` campaign, so `kbench report` and
//! `kbench compare` find them together.
//!
//! The parent sends the child a [`Job`] (the plan's source, the run's
//! settings, the campaign and what it already holds) as one JSON line on
//! its stdin; the child (`kbench __run`) runs it and writes the run's
//! event stream on its stdout, which the parent feeds to its own sinks
//! (the store, the progress bar, `--events`), counting the samples
//! towards the next run's due. The child runs in a process group of its
//! own, registered with the watchdog, so it dies with kbench however
//! kbench ends; Ctrl-C (SIGINT, SIGTERM) reaches kbench only and is
//! passed on to the child once per signal: the first stops the run after
//! the current sample, a second one at once.

use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::{Progress, Summary};
use crate::event::{Event, Sink, jsonl};
use crate::plan::Plan;
use crate::record::{CampaignKey, RunConfig, RunStatus};

/// The hidden subcommand a repeated run's process runs.
pub const SUBCOMMAND: &str = "__run";

/// Where the plan comes from: the child reads it again.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum Source {
    File(PathBuf),
    /// Benchmarks and commands as the command line names them, with the
    /// options that shape the commands (`--shell`, `--metric`, ...).
    Specs(Vec<String>, crate::spec::CommandOptions),
}

impl Source {
    fn plan(&self, runs: u32) -> anyhow::Result<Plan> {
        let mut plan = match self {
            Source::File(p) => crate::plan::load(p)?,
            Source::Specs(s, o) => crate::spec::plan(s, o)?,
        };
        plan.repeat.runs = runs;
        Ok(plan)
    }
}

/// One run for a child to make.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    pub plan: Source,
    /// Runs of the repeat (`--repeat` may override the plan's).
    pub runs: u32,
    pub config: RunConfig,
    pub campaign: Option<CampaignKey>,
    pub have: Progress,
}

/// The child's side (`kbench __run`): read the job, make the run, write
/// its events on stdout.
pub fn serve() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the run's job")?;
    let mut job: Job = serde_json::from_str(&line).context("reading the run's job")?;
    let plan = job.plan.plan(job.runs)?;
    // The run is this process's: when it is gone, so is the run.
    let boot = job.config.owner.take().map(|o| o.boot_id);
    job.config.owner = crate::system::owner().map(|mut o| {
        // Its samples count towards the boot its parent counts them on.
        if let Some(b) = boot {
            o.boot_id = b;
        }
        o
    });
    let fp = crate::system::fingerprint();
    let mut out = jsonl::Writer::new(std::io::stdout().lock());
    super::run(&plan, &job.config, job.campaign, &job.have, &fp, &mut out)?;
    Ok(())
}

/// The pid of the child making the current run (0: none), for the
/// signal handlers.
static CHILD: AtomicI32 = AtomicI32::new(0);

/// SIGINT and SIGTERM while runs repeat: remembered, and passed on to
/// the current child. The handlers go when the repeat does.
struct Forward {
    stop: Arc<AtomicBool>,
    ids: Vec<signal_hook::SigId>,
}

impl Forward {
    fn install() -> anyhow::Result<Forward> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let stop = Arc::clone(&stop);
            let action = move || {
                stop.store(true, Ordering::SeqCst);
                let pid = CHILD.load(Ordering::SeqCst);
                if pid > 0 {
                    // SAFETY: kill(2) is async-signal-safe.
                    unsafe { libc::kill(pid, sig) };
                }
            };
            // SAFETY: the action only touches atomics and calls kill(2).
            ids.push(
                unsafe { signal_hook::low_level::register(sig, action) }
                    .context("installing signal handler")?,
            );
        }
        Ok(Forward { stop, ids })
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Passes events on, counting each sample towards what the campaign
/// holds.
struct Counting<'a> {
    inner: &'a mut dyn Sink,
    have: &'a mut Progress,
    boot: Option<String>,
    /// Cell key -> its state (readings text), from `cell_prepared`.
    states: HashMap<String, String>,
    run: Option<String>,
    ended: Option<RunStatus>,
}

impl Sink for Counting<'_> {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::RunBegun(b) => self.run = Some(b.run.clone()),
            Event::CellPrepared(c) => {
                self.states
                    .insert(c.cell.key.clone(), c.cell.readings_text());
            }
            Event::Sample(s) => {
                let state = self.states.get(&s.cell).cloned().unwrap_or_default();
                self.have.add(&s.cell, &state, self.boot.as_deref(), 1);
            }
            Event::RunEnded(r) => self.ended = Some(r.status),
            _ => {}
        }
        self.inner.event(e)
    }
}

/// Make the runs of `plan`'s repeat that are due, each in a fresh
/// process; stops early when nothing is left to measure here, on Ctrl-C
/// or on an error.
pub fn runs(
    source: &Source,
    plan: &Plan,
    opts: &RunConfig,
    campaign: Option<CampaignKey>,
    mut have: Progress,
    sink: &mut dyn Sink,
) -> anyhow::Result<(Summary, RunStatus)> {
    let fwd = Forward::install()?;
    let boot = opts.owner.as_ref().map(|o| o.boot_id.clone());
    let readings = plan.read_probes();
    let mut summary = Summary::default();
    let mut status = RunStatus::Done;
    for i in 0..plan.repeat.runs {
        let (now, todo) = super::due(
            super::cells(plan, opts)?,
            opts,
            plan.repeat,
            &have,
            &readings,
            boot.as_deref(),
        );
        summary.done = now.done;
        summary.pending = now.pending;
        summary.next_boot = now.next_boot;
        if todo.is_empty() || fwd.stop.load(Ordering::SeqCst) {
            break;
        }
        summary.ran = summary.ran.max(todo.len());
        let job = Job {
            plan: source.clone(),
            runs: plan.repeat.runs,
            config: RunConfig {
                seed: opts.seed.wrapping_add(u64::from(i)),
                ..opts.clone()
            },
            campaign: campaign.clone(),
            have: have.clone(),
        };
        let mut counting = Counting {
            inner: &mut *sink,
            have: &mut have,
            boot: boot.clone(),
            states: HashMap::new(),
            run: None,
            ended: None,
        };
        let ended = one(&job, &mut counting)?;
        summary.run = counting.run.clone().or(summary.run);
        match ended {
            RunStatus::Interrupted => return Ok((summary, RunStatus::Interrupted)),
            RunStatus::Failed => status = RunStatus::Failed,
            RunStatus::Done | RunStatus::Running => {}
        }
        if fwd.stop.load(Ordering::SeqCst) {
            return Ok((summary, RunStatus::Interrupted));
        }
    }
    Ok((summary, status))
}

/// One run in a fresh process: its events go to `sink`; returns how it
/// ended.
fn one(job: &Job, sink: &mut Counting<'_>) -> anyhow::Result<RunStatus> {
    let exe = std::env::current_exe().context("finding kbench's own binary")?;
    let mut child = Command::new(exe)
        .arg(SUBCOMMAND)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .spawn()
        .context("starting a run's process")?;
    let pid = child.id() as i32;
    let _guard = crate::system::watchdog::guard(pid);
    CHILD.store(pid, Ordering::SeqCst);
    let res = feed(job, &mut child, sink);
    CHILD.store(0, Ordering::SeqCst);
    if res.is_err() {
        // SAFETY: our own child's process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let exit = child.wait().context("waiting for a run's process")?;
    res?;
    match sink.ended {
        Some(s) => Ok(s),
        None if sink.run.is_none() && exit.success() => Ok(RunStatus::Done),
        None => anyhow::bail!("a run's process ended ({exit}) before its run did"),
    }
}

/// Send the job, pass the child's events on until its stdout ends.
fn feed(job: &Job, child: &mut std::process::Child, sink: &mut Counting<'_>) -> anyhow::Result<()> {
    let mut stdin = child.stdin.take().expect("piped");
    writeln!(stdin, "{}", serde_json::to_string(job)?).context("writing to a run's process")?;
    drop(stdin);
    let stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut events = jsonl::Reader::new(stdout, "a run's process");
    while let Some(e) = events.next_event()? {
        sink.event(&e)?;
    }
    Ok(())
}
