//! How long a run will take, before it starts: the run's own time model.
//! A timed loop is calibrated to last the sample time, a scale sample
//! lasts its intervals plus starting its tasks (each benchmark's
//! [`Bench::sample_seconds`](crate::bench::Bench::sample_seconds)), and a
//! command lasts what one trial run of it took. `kbench run --dry-run`
//! prints it; nothing is stored.

use std::time::Instant;

use super::Todo;
use crate::bench::{Kind, Measure, RunSettings};
use crate::plan::Cell;
use crate::record::RunConfig;

/// Calibrating a timed loop grows the iteration count until a run lasts
/// 1/16 of the sample time, then times three runs of it: about this many
/// sample times once per cell and process (`bench/micro/common.rs`).
const CALIBRATION: f64 = 0.35;

/// The runner's own seconds per sample (events to the store and the
/// progress display, the shuffled order), measured with `true` as the
/// command: about 1 ms in a release build, 2 ms in a debug build.
const PER_SAMPLE: f64 = 0.002;

/// Seconds a run spends before its first sample: the empty timed loop
/// whose cost every run records is calibrated and timed three times, at
/// most 0.05 s each (`loop_overhead_ns`).
fn start_seconds(sample_time: f64) -> f64 {
    (3.0 + CALIBRATION) * sample_time.min(0.05)
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
/// sampled once here (its trial run); nothing else runs.
pub fn estimate(todo: &Todo, opts: &RunConfig) -> anyhow::Result<Estimate> {
    let settings = RunSettings {
        sample_time: opts.sample_time,
        process: None,
    };
    let procs = opts.processes.unwrap_or(1).max(1);
    let mut cells = Vec::with_capacity(todo.cells.len());
    for (cell, want) in &todo.cells {
        let want = opts.stop.as_ref().map_or(*want, |r| r.max_samples);
        // Micro cells under `--processes` restart (and warm up) in each
        // of their processes.
        let restarts = match cell.bench.kind() {
            Kind::Micro => procs,
            _ => 1,
        };
        let (each, prepare) = match cell.bench.sample_seconds(&cell.params, &settings) {
            Some(s) => (s + PER_SAMPLE, 0.0),
            None => trial(cell, &settings)?,
        };
        let calibrate = match cell.bench.kind() {
            Kind::Micro => CALIBRATION * opts.sample_time,
            _ => 0.0,
        };
        cells.push(CellTime {
            display: spelling(cell),
            samples: want + opts.warmup * restarts,
            each,
            once: f64::from(restarts) * (prepare + calibrate),
        });
    }
    Ok(Estimate {
        cells,
        done: todo.summary.done,
        pending: todo.summary.pending,
        at_most: opts.stop.is_some(),
        start: start_seconds(opts.sample_time),
    })
}

/// A cell as the command line spells it: `spin:work=10`, its varying
/// parameters after the name, then its factors as `@name=label`.
pub fn spelling(cell: &Cell) -> String {
    let mut s = cell.display.clone();
    let params: Vec<String> = cell
        .label_params
        .iter()
        .filter_map(|k| cell.params.get(k).map(|v| format!("{k}={v}")))
        .collect();
    if !params.is_empty() {
        s.push(':');
        s.push_str(&params.join(","));
    }
    for (k, v) in &cell.factors {
        s.push_str(&format!(" @{k}={v}"));
    }
    s
}

/// Prepare `cell` and take one sample, as the run would: seconds of the
/// sample and of the preparation.
fn trial(cell: &Cell, settings: &RunSettings) -> anyhow::Result<(f64, f64)> {
    let t0 = Instant::now();
    let mut inst = cell.bench.instantiate(&cell.params, settings)?;
    let prepared = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut out: Vec<Measure> = Vec::new();
    inst.sample(&mut out)
        .map_err(|e| anyhow::anyhow!("trial run of {}: {e:#}", cell.display))?;
    let each = t1.elapsed().as_secs_f64() + PER_SAMPLE;
    drop(inst);
    Ok((each, prepared))
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
        let name = if c.display.chars().count() > NAME {
            let cut: String = c.display.chars().take(NAME - 1).collect();
            format!("{cut}~")
        } else {
            c.display.clone()
        };
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
}
