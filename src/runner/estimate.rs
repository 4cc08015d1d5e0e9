//! How long a run will take, before it starts: the run's own time model.
//! A timed loop is calibrated to last the sample time on the CPU share it
//! gets where it runs, a scale sample lasts its intervals plus starting
//! its tasks (each benchmark's
//! [`Bench::sample_seconds`](crate::bench::Bench::sample_seconds)), and a
//! command lasts what one trial run of it took. `kbench run --dry-run`
//! prints it; nothing is stored. The progress display uses the same
//! model during the run ([`Eta`]).

use std::collections::HashMap;
use std::time::Instant;

use super::Todo;
use crate::bench::{Kind, Measure, RunSettings};
use crate::plan::Cell;
use crate::record::RunConfig;
use crate::units::CpuSet;

/// Calibrating a timed loop grows the iteration count until a run lasts
/// 1/16 of the sample time, then times three runs of it: about this many
/// sample times once per cell and process (`bench/micro/common.rs`).
const CALIBRATION: f64 = 0.35;

/// The runner's own seconds per sample (events to the store and the
/// progress display, the shuffled order), measured with `true` as the
/// command: about 1 ms in a release build, 2 ms in a debug build.
const PER_SAMPLE: f64 = 0.002;

/// Seconds a worker process of `--processes` costs before its samples:
/// starting kbench again, its job, and the first timed loop of a fresh
/// process (page faults); 17-55 ms measured per worker with 9 workers
/// of `spin` on 2 loaded CPUs.
const WORKER_START: f64 = 0.03;

/// Seconds the invocation spends outside the run: opening (or creating,
/// with its fsyncs) the store, the git labels, and the report after the
/// last sample; 0.12-0.16 s measured with a new SQLite store.
const INVOCATION: f64 = 0.12;

/// Seconds each CPU-share probe lasts (a 0.1 s loop read 0.35-0.41 on a
/// CPU where `stress-ng --cpu-load 60` ran, 8 tries; 0.05 s loops spread
/// 0.30-0.50).
const SHARE_PROBE: f64 = 0.1;

/// Probes of a CPU set's share at most ([`best_share`]).
const SHARE_PROBES: usize = 3;

/// The CPU share a timed loop gets: the best of up to [`SHARE_PROBES`]
/// probes, stopping at one that gets nearly a whole CPU. A cell runs for
/// seconds; one probe read what other work left at its moment, often far
/// less than the run then got: 5.2 s said of a 0.8 s run (load 12, a
/// `nice -10` benchmark on the other CPU), 1.55-1.93x the real time on a
/// CPU shared with niced builds (1.02-1.38x with the best of three).
fn best_share() -> f64 {
    let mut best = 0.0f64;
    for _ in 0..SHARE_PROBES {
        best = best.max(crate::bench::micro::cpu_share(SHARE_PROBE));
        if best >= 0.9 {
            break;
        }
    }
    best
}

/// Seconds a run spends before its first sample: the empty timed loop
/// whose cost every run records is calibrated and timed three times, at
/// most 0.05 s each (`loop_overhead_ns`).
fn start_seconds(sample_time: f64) -> f64 {
    (3.0 + CALIBRATION) * sample_time.min(0.05)
}

/// The share of a CPU a timed loop gets on each CPU set cells run on,
/// probed once per set ([`best_share`]).
#[derive(Default)]
struct Shares(HashMap<Option<CpuSet>, f64>);

impl Shares {
    fn of(&mut self, cpus: Option<&CpuSet>) -> anyhow::Result<f64> {
        if let Some(&s) = self.0.get(&cpus.cloned()) {
            return Ok(s);
        }
        let home = crate::system::get_affinity()?;
        crate::system::set_affinity(cpus.unwrap_or(&home))?;
        let share = best_share();
        crate::system::set_affinity(&home)?;
        self.0.insert(cpus.cloned(), share);
        Ok(share)
    }
}

/// One cell's share of a run.
#[derive(Clone, Debug)]
pub struct CellTime {
    /// The cell as the command line spells it.
    pub display: String,
    /// Samples it will take, warm-ups included (an upper bound with
    /// adaptive stopping).
    pub samples: u32,
    /// Seconds one sample lasts.
    pub each: f64,
    /// Seconds spent once (per process): preparing, calibrating.
    pub once: f64,
}

impl CellTime {
    pub fn seconds(&self) -> f64 {
        self.once + f64::from(self.samples) * self.each
    }
}

/// What a run of a plan will do here and how long it will take.
#[derive(Clone, Debug)]
pub struct Estimate {
    pub cells: Vec<CellTime>,
    /// Cells complete in the campaign already.
    pub done: usize,
    /// Cells that wait for another system state (a reboot, a setting).
    pub pending: usize,
    /// The sample counts are upper bounds (adaptive stopping).
    pub at_most: bool,
    /// Seconds before the first sample.
    pub start: f64,
}

impl Estimate {
    /// The whole run, from its start to its last sample.
    pub fn seconds(&self) -> f64 {
        if self.cells.is_empty() {
            return 0.0;
        }
        self.start + self.cells.iter().map(CellTime::seconds).sum::<f64>()
    }

    pub fn samples(&self) -> u64 {
        self.cells.iter().map(|c| u64::from(c.samples)).sum()
    }
}

/// The time model of `todo` under `opts`. A command cell is prepared and
/// sampled once here (its trial run), and a busy loop probes the CPU
/// share of each CPU set micro cells run on; nothing else runs.
pub fn estimate(todo: &Todo, opts: &RunConfig) -> anyhow::Result<Estimate> {
    let settings = RunSettings {
        sample_time: opts.sample_time,
        process: None,
    };
    let procs = opts.processes.unwrap_or(1).max(1);
    let mut shares = Shares::default();
    let mut cells = Vec::with_capacity(todo.cells.len());
    for (cell, want) in &todo.cells {
        let want = opts.stop.as_ref().map_or(*want, |r| r.max_samples);
        let kind = cell.bench.kind();
        // Micro cells under `--processes` restart (and warm up) in each
        // of their processes.
        let restarts = if kind == Kind::Micro { procs } else { 1 };
        let share = match kind {
            Kind::Micro => shares.of(cell.cpus.as_ref())?,
            _ => 1.0,
        };
        let (each, prepare) = match cell.bench.sample_seconds(&cell.params, &settings) {
            Some(s) => (s / share + PER_SAMPLE, 0.0),
            None => trial(cell, &settings)?,
        };
        let mut once = prepare;
        if kind == Kind::Micro {
            once += CALIBRATION * opts.sample_time / share;
            if procs > 1 {
                once += WORKER_START;
            }
        }
        cells.push(CellTime {
            display: spelling(cell),
            samples: want + opts.warmup * restarts,
            each,
            once: f64::from(restarts) * once,
        });
    }
    let start = start_seconds(opts.sample_time) / shares.of(None)? + INVOCATION;
    Ok(Estimate {
        cells,
        done: todo.summary.done,
        pending: todo.summary.pending,
        at_most: opts.stop.is_some(),
        start,
    })
}

/// A cell as the command line spells it: `spin:work=10`, its varying
/// parameters after the name, then its factors as `@name=label`; a
/// command shell-quoted, as it was typed (`'sleep 0.01'`).
pub fn spelling(cell: &Cell) -> String {
    crate::record::spell(
        &cell.display,
        cell.bench.kind(),
        &cell
            .label_params
            .iter()
            .filter_map(|k| cell.params.get(k).map(|v| (k.as_str(), v.to_string())))
            .collect::<Vec<_>>(),
        &cell.factors,
    )
}

/// A command shorter than this is timed twice, the faster run counting:
/// its first run pays for cold caches (`sleep 0.04` in a plan: the
/// estimate was 1.2-1.9x the real run with one trial run, the run's own
/// warm-up samples pay that once).
const TRIAL_AGAIN: f64 = 1.0;

/// Prepare `cell` and take one sample, as the run would (two when it is
/// short, [`TRIAL_AGAIN`]): seconds of the sample and of the preparation.
fn trial(cell: &Cell, settings: &RunSettings) -> anyhow::Result<(f64, f64)> {
    let t0 = Instant::now();
    let mut inst = cell.bench.instantiate(&cell.params, settings)?;
    let prepared = t0.elapsed().as_secs_f64();
    let mut out: Vec<Measure> = Vec::new();
    let mut each = f64::INFINITY;
    for _ in 0..2 {
        let t1 = Instant::now();
        inst.sample(&mut out)
            .map_err(|e| anyhow::anyhow!("trial run of {}: {e:#}", cell.display))?;
        each = each.min(t1.elapsed().as_secs_f64());
        if each >= TRIAL_AGAIN {
            break;
        }
    }
    drop(inst);
    Ok((each + PER_SAMPLE, prepared))
}

pub use crate::term::shorten;

/// The time left in a run, from the time model corrected by the run so
/// far: each cell's remaining samples at its modelled seconds, times the
/// ratio of the time the run took to what the model said of the samples
/// taken. A command's sample lasts what its samples so far took (the
/// model's trial run is the run's own first sample). Fed with the run's
/// events by the progress display; times are seconds since `run_begun`.
#[derive(Debug)]
pub struct Eta {
    settings: RunSettings,
    warmup: u32,
    samples: u32,
    procs: u32,
    /// Samples the run plans, warm-ups included, and has taken.
    planned: u64,
    taken: u64,
    cells: indexmap::IndexMap<String, Track>,
    /// When the last sample ended.
    last: f64,
}

#[derive(Clone, Debug)]
struct Track {
    /// Modelled seconds of a sample, `None` for a command.
    each: Option<f64>,
    /// Modelled seconds once per process (calibration, worker start).
    once: f64,
    want: u32,
    taken: u32,
    /// Seconds between the sample before and each sample of this cell.
    seen: f64,
}

impl Track {
    fn each(&self) -> Option<f64> {
        self.each
            .or((self.taken > 0).then(|| self.seen / f64::from(self.taken)))
    }
}

impl Eta {
    /// A run of `planned` samples under `config`.
    pub fn new(config: &RunConfig, planned: u64) -> Eta {
        Eta {
            settings: RunSettings {
                sample_time: config.sample_time,
                process: None,
            },
            warmup: config.warmup,
            samples: config.stop.map_or(config.samples, |r| r.max_samples),
            procs: config.processes.unwrap_or(1).max(1),
            planned,
            taken: 0,
            cells: indexmap::IndexMap::new(),
            last: 0.0,
        }
    }

    /// A cell of the run (`cell_prepared`).
    pub fn cell(&mut self, info: &crate::record::CellInfo) {
        let restarts = if info.kind == Kind::Micro {
            self.procs
        } else {
            1
        };
        let mut once = 0.0;
        if info.kind == Kind::Micro {
            once = CALIBRATION * self.settings.sample_time;
            if self.procs > 1 {
                once += WORKER_START;
            }
        }
        self.cells.insert(
            info.key.clone(),
            Track {
                each: model_each(info, &self.settings).map(|s| s + PER_SAMPLE),
                once: once * f64::from(restarts),
                want: self.samples + self.warmup * restarts,
                taken: 0,
                seen: 0.0,
            },
        );
    }

    /// A sample (or warm-up, or failed attempt) of cell `key` ended at
    /// `now`.
    pub fn sampled(&mut self, key: &str, now: f64) {
        self.taken += 1;
        if let Some(t) = self.cells.get_mut(key) {
            t.taken += 1;
            t.seen += (now - self.last).max(0.0);
        }
        self.last = now;
    }

    /// Seconds left at `now`; `None` until every cell's sample time is
    /// known (a command's after its first sample) or while nothing was
    /// measured.
    pub fn remaining(&self, now: f64) -> Option<f64> {
        let mut done = 0.0;
        let mut left = 0.0;
        let mut left_samples = 0u64;
        for t in self.cells.values() {
            let each = t.each()?;
            let taken = t.taken.min(t.want);
            if taken > 0 {
                done += t.once + f64::from(taken) * each;
            } else {
                left += t.once;
            }
            left += f64::from(t.want - taken) * each;
            left_samples += u64::from(t.want - taken);
        }
        if done <= 0.0 {
            return None;
        }
        // The run's own count of samples left wins over the model's
        // (cells with their own `samples`, a campaign's missing share).
        let run_left = self.planned.saturating_sub(self.taken);
        if left_samples > 0 {
            left *= run_left as f64 / left_samples as f64;
        }
        let ratio = (self.last / done).clamp(0.2, 20.0);
        Some((left * ratio - (now - self.last)).max(0.0))
    }
}

/// Seconds one sample of a recorded cell lasts by its benchmark's model;
/// `None` for a command or a benchmark this binary does not know.
fn model_each(info: &crate::record::CellInfo, settings: &RunSettings) -> Option<f64> {
    if info.kind == Kind::Command {
        return None;
    }
    let bench = crate::bench::find(&info.source)?;
    let given: Vec<(String, toml::Value)> = info
        .params
        .iter()
        .map(|(k, v)| {
            let word = match v {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            (k.clone(), crate::bench::params::raw_from_str(&word))
        })
        .collect();
    let params = crate::bench::Params::resolve(&*bench, &given).ok()?;
    bench.sample_seconds(&params, settings)
}

/// Seconds as a person reads them: `850 ms`, `12.3 s`, `4 min 05 s`.
pub fn human(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{:.0} ms", seconds * 1e3)
    } else if seconds < 60.0 {
        format!("{seconds:.1} s")
    } else if seconds < 3600.0 {
        let s = seconds.round() as u64;
        format!("{} min {:02} s", s / 60, s % 60)
    } else {
        let m = (seconds / 60.0).round() as u64;
        format!("{} h {:02} min", m / 60, m % 60)
    }
}

/// The dry run as JSON: the cells with their samples and seconds, the
/// totals, `seconds` the estimated duration.
pub fn json(e: &Estimate) -> serde_json::Value {
    serde_json::json!({
        "cells": e.cells.iter().map(|c| serde_json::json!({
            "cell": c.display,
            "samples": c.samples,
            "sample_seconds": c.each,
            "seconds": c.seconds(),
        })).collect::<Vec<_>>(),
        "samples": e.samples(),
        "done": e.done,
        "pending": e.pending,
        "at_most": e.at_most,
        "seconds": e.seconds(),
    })
}

/// The dry run's text: one line per cell, then the totals; within 80
/// columns (a long cell name is cut with `~`).
pub fn text(e: &Estimate) -> String {
    const NAME: usize = 46;
    let mut s = String::new();
    if !e.cells.is_empty() {
        s.push_str(&format!(
            "{:<NAME$} {:>7} {:>10} {:>12}\n",
            "cell", "samples", "each", "total"
        ));
    }
    for c in &e.cells {
        let name = shorten(&c.display, NAME);
        s.push_str(&format!(
            "{name:<NAME$} {:>7} {:>10} {:>12}\n",
            c.samples,
            human(c.each),
            human(c.seconds())
        ));
    }
    let bound = if e.at_most { "at most " } else { "" };
    let totals = format!(
        "{} cell(s), {bound}{} samples with the warm-ups; {} done already, {} pending another system state (a reboot or a setting). Estimated duration: {bound}{}. Nothing was measured or stored.",
        e.cells.len(),
        e.samples(),
        e.done,
        e.pending,
        human(e.seconds())
    );
    s.push_str(&crate::term::wrapped("", &totals, ""));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::info_spelling;

    #[test]
    fn human_durations() {
        assert_eq!(human(0.0123), "12 ms");
        assert_eq!(human(12.34), "12.3 s");
        assert_eq!(human(245.0), "4 min 05 s");
        assert_eq!(human(7260.0), "2 h 01 min");
    }

    #[test]
    fn cell_seconds_add_once_and_samples() {
        let c = CellTime {
            display: "spin".into(),
            samples: 12,
            each: 0.2,
            once: 0.07,
        };
        assert!((c.seconds() - 2.47).abs() < 1e-9);
    }

    fn info(
        key: &str,
        bench: &str,
        kind: Kind,
        params: serde_json::Value,
    ) -> crate::record::CellInfo {
        let serde_json::Value::Object(params) = params else {
            panic!("an object")
        };
        crate::record::CellInfo {
            key: key.into(),
            bench: bench.into(),
            source: bench.into(),
            kind,
            params,
            factors: Default::default(),
            label_params: Vec::new(),
            metrics: Vec::new(),
            readings: Default::default(),
        }
    }

    #[test]
    fn recorded_cells_are_spelled_as_typed() {
        let mut c = info(
            "spin|work=10",
            "spin",
            Kind::Micro,
            serde_json::json!({"work": 10, "cpu": null}),
        );
        c.label_params = vec!["work".into()];
        c.factors.insert("cpus".into(), "cpu0".into());
        assert_eq!(info_spelling(&c), "spin:work=10 @cpus=cpu0");
        let c = info("x", "sleep 0.01", Kind::Command, serde_json::json!({}));
        assert_eq!(info_spelling(&c), "'sleep 0.01'");
        let c = info("x", "build", Kind::Command, serde_json::json!({}));
        assert_eq!(info_spelling(&c), "build");
        assert_eq!(shorten("'make -j2 all install'", 10), "'make -j2~");
        assert_eq!(shorten("spin", 10), "spin");
    }

    /// A run of one 1 s scale cell and one 0.1 s micro cell, 10 samples
    /// each: the time left is the model's, not the sample rate's.
    #[test]
    fn the_time_left_follows_the_model_and_the_runs_pace() {
        let mut cfg = crate::testing::options(10, 0);
        cfg.sample_time = 0.1;
        let mut eta = Eta::new(&cfg, 20);
        eta.cell(&info(
            "scale",
            "getppid1",
            Kind::Scale,
            serde_json::json!({"tasks": 1, "interval": 0.25, "intervals": 2, "warmup": 2}),
        ));
        eta.cell(&info(
            "micro",
            "spin",
            Kind::Micro,
            serde_json::json!({"work": 1000}),
        ));
        assert_eq!(eta.remaining(0.0), None, "nothing measured yet");
        let scale = eta.cells["scale"].each.unwrap();
        assert!((1.0..1.3).contains(&scale), "{scale}");
        // One round at the model's pace: 9 rounds left of the same.
        let round = scale + 0.1 + PER_SAMPLE + CALIBRATION * 0.1;
        eta.sampled("micro", 0.1 + PER_SAMPLE + CALIBRATION * 0.1);
        eta.sampled("scale", round);
        let left = eta.remaining(round).unwrap();
        let want = 9.0 * (scale + 0.1 + PER_SAMPLE);
        assert!((left - want).abs() < 0.01 * want, "{left} vs {want}");
        // A run at half the model's pace doubles the time left; time
        // passing without a sample takes it down.
        let mut slow = Eta::new(&cfg, 20);
        slow.cells = eta.cells.clone();
        for t in slow.cells.values_mut() {
            t.taken = 0;
            t.seen = 0.0;
        }
        slow.sampled("micro", 2.0 * (0.1 + PER_SAMPLE + CALIBRATION * 0.1));
        slow.sampled("scale", 2.0 * round);
        let left2 = slow.remaining(2.0 * round).unwrap();
        assert!((left2 - 2.0 * want).abs() < 0.02 * want, "{left2}");
        let later = slow.remaining(2.0 * round + 1.0).unwrap();
        assert!((left2 - later - 1.0).abs() < 1e-9, "{later}");
    }

    /// A command's sample time is what its samples took.
    #[test]
    fn a_commands_time_is_learnt_from_its_samples() {
        let cfg = crate::testing::options(5, 1);
        let mut eta = Eta::new(&cfg, 12);
        eta.cell(&info(
            "a",
            "sleep 0.5",
            Kind::Command,
            serde_json::json!({}),
        ));
        eta.cell(&info(
            "b",
            "sleep 0.1",
            Kind::Command,
            serde_json::json!({}),
        ));
        eta.sampled("a", 0.5);
        assert_eq!(eta.remaining(0.5), None, "b has no time yet");
        eta.sampled("b", 0.6);
        let left = eta.remaining(0.6).unwrap();
        // 5 more of each: 5 x 0.6 s.
        assert!((left - 3.0).abs() < 1e-6, "{left}");
    }
}
