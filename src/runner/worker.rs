//! `--processes N`: a micro-benchmark cell measured in fresh processes.
//!
//! One process's samples share one memory layout, one environment size and
//! one stack alignment, and so one bias (Mytkowicz et al., ASPLOS 2009).
//! The runner measures a cell's share of samples in each of N processes of
//! its own binary (`kbench __worker`, started through `/proc/self/exe`),
//! one after another. Between processes it varies
//!
//! - the environment's size: `KBENCH_PAD` holds 64 + 37·i mod 4093 bytes
//!   for process i; the environment sits at the top of the initial stack,
//!   so this moves every stack address, and so its alignment, by an
//!   amount that is not a multiple of 16;
//! - the stack depth the benchmark runs at: the worker's loop runs
//!   (i mod 64) · 16 bytes (plus frames) deeper.
//!
//! The protocol is JSON lines over the child's stdin and stdout: the
//! parent sends a [`Job`], the child answers [`Ready`] (or an error), then
//! each `sample` line gets one [`Reply`]. Closing stdin ends the child.
//! Cells that are not built-in micro-benchmarks (the test fakes) get a
//! fresh instance per process in the runner's own process instead, their
//! process index in [`RunSettings::process`].

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::bench::command::SampleFailure;
use crate::bench::params::{Params, raw_from_str};
use crate::bench::{Instance, Measure, RunSettings};

/// The hidden subcommand a worker runs.
pub const SUBCOMMAND: &str = "__worker";

/// What a worker measures.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    /// A built-in benchmark's name.
    pub bench: String,
    /// Its parameters as the command line writes them.
    pub params: Vec<(String, String)>,
    pub sample_time: f64,
    pub process: u32,
}

/// The worker is ready: what the instance says of itself.
#[derive(Debug, Serialize, Deserialize)]
pub struct Ready {
    pub placement: Option<String>,
    pub notes: Vec<(String, String)>,
    pub pid: u32,
}

/// One answer of the worker.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    Ready(Ready),
    /// A sample's measures, (metric index, value), and the operations it
    /// timed (`Instance::operations`).
    Sample(Vec<(usize, f64)>, Option<f64>),
    /// Preparing or sampling failed.
    Error {
        message: String,
        keep_going: bool,
    },
}

/// Bytes of `KBENCH_PAD` for process `i`.
pub fn pad_len(i: u32) -> usize {
    64 + (37 * i as usize) % 4093
}

/// A cell's instance living in a worker process.
pub struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    ready: Ready,
    /// The operations the last sample timed, as the worker said.
    ops: Option<f64>,
}

impl Worker {
    /// Start process `process` of a cell of the built-in `bench`.
    pub fn start(
        bench: &str,
        params: &Params,
        settings: &RunSettings,
        process: u32,
    ) -> anyhow::Result<Worker> {
        let exe = std::env::current_exe().context("finding kbench's own binary")?;
        let mut child = Command::new(exe)
            .arg(SUBCOMMAND)
            .env("KBENCH_PAD", "x".repeat(pad_len(process)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting a worker process")?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let job = Job {
            bench: bench.to_string(),
            params: params
                .0
                .iter()
                .map(|(k, v)| (k.clone(), v.to_string()))
                .collect(),
            sample_time: settings.sample_time,
            process,
        };
        writeln!(stdin, "{}", serde_json::to_string(&job)?).context("writing to a worker")?;
        let mut w = Worker {
            child,
            stdin: Some(stdin),
            stdout,
            ready: Ready {
                placement: None,
                notes: Vec::new(),
                pid: 0,
            },
            ops: None,
        };
        match w.reply()? {
            Reply::Ready(r) => w.ready = r,
            Reply::Error { message, .. } => anyhow::bail!("worker process {process}: {message}"),
            Reply::Sample(..) => anyhow::bail!("worker process {process}: sample before ready"),
        }
        Ok(w)
    }

    fn reply(&mut self) -> anyhow::Result<Reply> {
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            let status = self.child.wait()?;
            anyhow::bail!("worker process ended ({status})");
        }
        serde_json::from_str(&line).with_context(|| format!("worker said `{}`", line.trim()))
    }
}

impl Instance for Worker {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().expect("open until drop");
        writeln!(stdin, "sample").context("writing to a worker")?;
        match self.reply()? {
            Reply::Sample(v, ops) => {
                out.extend(
                    v.into_iter()
                        .map(|(metric, value)| Measure { metric, value }),
                );
                self.ops = ops;
                Ok(())
            }
            Reply::Error {
                message,
                keep_going,
            } => Err(anyhow::Error::new(SampleFailure {
                message,
                keep_going,
            })),
            Reply::Ready(_) => anyhow::bail!("worker said ready twice"),
        }
    }
    fn operations(&self) -> Option<f64> {
        self.ops
    }
    fn placement(&self) -> Option<String> {
        self.ready.placement.clone()
    }
    fn notes(&self) -> Vec<(String, String)> {
        self.ready.notes.clone()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // EOF on its stdin ends the worker; its instance cleans up there.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Run `f` about `levels` · 16 bytes deeper in the stack.
#[inline(never)]
fn deeper<R>(levels: u32, f: &mut dyn FnMut() -> R) -> R {
    if levels == 0 {
        return f();
    }
    let pad = std::hint::black_box([0u8; 16]);
    let r = deeper(levels - 1, f);
    std::hint::black_box(pad);
    r
}

/// The worker's side (`kbench __worker`): read a job on stdin, answer on
/// stdout until stdin closes.
pub fn serve() -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut stdout = std::io::stdout().lock();
    let Some(first) = lines.next() else {
        return Ok(());
    };
    let job: Job = serde_json::from_str(&first?).context("reading the worker's job")?;
    let mut say = |r: &Reply| -> anyhow::Result<()> {
        writeln!(stdout, "{}", serde_json::to_string(r)?)?;
        stdout.flush()?;
        Ok(())
    };
    let inst = (|| -> anyhow::Result<Box<dyn Instance>> {
        let bench = crate::bench::find(&job.bench)
            .ok_or_else(|| anyhow::anyhow!("no built-in benchmark `{}`", job.bench))?;
        let given: Vec<(String, toml::Value)> = job
            .params
            .iter()
            .map(|(k, v)| (k.clone(), raw_from_str(v)))
            .collect();
        let params = Params::resolve(&*bench, &given).map_err(|e| anyhow::anyhow!(e))?;
        bench.instantiate(
            &params,
            &RunSettings {
                sample_time: job.sample_time,
                process: Some(job.process),
            },
        )
    })();
    let mut inst = match inst {
        Ok(i) => i,
        Err(e) => {
            return say(&Reply::Error {
                message: format!("{e:#}"),
                keep_going: false,
            });
        }
    };
    say(&Reply::Ready(Ready {
        placement: inst.placement(),
        notes: inst.notes(),
        pid: std::process::id(),
    }))?;
    deeper(job.process % 64, &mut || -> anyhow::Result<()> {
        let mut out = Vec::new();
        for line in lines.by_ref() {
            if line? != "sample" {
                anyhow::bail!("worker: unknown request");
            }
            out.clear();
            let r = match inst.sample(&mut out) {
                Ok(()) => Reply::Sample(
                    out.iter().map(|m| (m.metric, m.value)).collect(),
                    inst.operations(),
                ),
                Err(e) => Reply::Error {
                    keep_going: e
                        .downcast_ref::<SampleFailure>()
                        .is_some_and(|f| f.keep_going),
                    message: format!("{e:#}"),
                },
            };
            say(&r)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_move_the_stack_by_varied_alignments() {
        let pads: Vec<usize> = (0..16).map(pad_len).collect();
        let mut mods: Vec<usize> = pads.iter().map(|p| p % 16).collect();
        mods.sort();
        mods.dedup();
        assert_eq!(mods.len(), 16, "{pads:?}");
        assert!(pads.iter().all(|&p| (64..4157).contains(&p)));
    }

    #[test]
    fn replies_round_trip() {
        let r = Reply::Error {
            message: "x".into(),
            keep_going: true,
        };
        let s = serde_json::to_string(&r).unwrap();
        assert!(matches!(
            serde_json::from_str::<Reply>(&s).unwrap(),
            Reply::Error {
                keep_going: true,
                ..
            }
        ));
        let r = Reply::Sample(vec![(0, 1.5)], Some(40.0));
        let s = serde_json::to_string(&r).unwrap();
        assert!(matches!(
            serde_json::from_str::<Reply>(&s).unwrap(),
            Reply::Sample(v, ops) if v == [(0, 1.5)] && ops == Some(40.0)
        ));
        assert_eq!(deeper(5, &mut || 7), 7);
    }
}
