//! The micro-benchmark measurement core: one sample = one timed loop.
//!
//! The iteration count is calibrated once per cell so that a sample lasts
//! about `sample_time`; the clock (CLOCK_MONOTONIC) is read only around the
//! loop, and the loop body is the operation itself, inlined through a
//! generic closure: no allocation, logging or locking inside. The cost of
//! the loop itself is measured separately by [`loop_overhead_ns`] and
//! recorded with every run; nothing is subtracted.

pub mod common;
pub mod file;
pub mod memory;
pub mod party;
pub mod pipe;
pub mod process;
pub mod socket;
pub mod spin;
pub mod syscall;

use anyhow::Context;
use std::hint::black_box;

use super::{Direction, Instance, Measure, Metric, ParamDef, ParamType};

/// The `cpu` parameter shared by single-party benchmarks.
pub const CPU_PARAM: ParamDef = ParamDef {
    name: "cpu",
    ty: ParamType::Cpu,
    default: None,
    help: "pin the measuring thread to this CPU (unpinned if absent)",
};

/// A micro-benchmark's metrics: one list per process, made on first use,
/// so `Bench::metrics` hands out a static slice (the runner asks for it
/// around every sample).
pub type Metrics = std::sync::LazyLock<Vec<Metric>>;

/// Nanoseconds per operation (the timed loop's iteration).
pub static NS_PER_OP: Metrics = Metrics::new(|| vec![Metric::new("ns/op", "ns", Direction::Lower)]);
/// Bytes moved per second.
pub static BYTES_PER_S: Metrics =
    Metrics::new(|| vec![Metric::new("bytes/s", "B/s", Direction::Higher)]);
/// Nanoseconds per round trip between two parties.
pub static ROUND_TRIP: Metrics =
    Metrics::new(|| vec![Metric::new("round trip", "ns", Direction::Lower)]);

/// Implement [`Bench`](crate::bench::Bench) for a micro-benchmark: its
/// type, name, description, parameters and metrics (a [`Metrics`]
/// static), then the methods that are its own (`instantiate`, and
/// `check` or `sample_seconds` where it has them).
macro_rules! micro {
    (
        $ty:ty, $name:literal, $desc:expr,
        params = $params:expr,
        metrics = $metrics:expr;
        $($own:tt)*
    ) => {
        impl $crate::bench::Bench for $ty {
            fn name(&self) -> &str {
                $name
            }
            fn kind(&self) -> $crate::bench::Kind {
                $crate::bench::Kind::Micro
            }
            fn description(&self) -> &str {
                $desc
            }
            fn params(&self) -> &[$crate::bench::ParamDef] {
                $params
            }
            fn metrics(&self) -> &[$crate::bench::Metric] {
                &$metrics
            }
            $($own)*
        }
    };
}
pub(crate) use micro;

/// A POSIX clock in nanoseconds.
#[inline(always)]
fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; both clocks used here exist on
    // Linux and FreeBSD.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds.
#[inline(always)]
pub fn now_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// The calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The share of a CPU a busy loop of the calling thread gets now, where
/// its affinity lets it run: its CPU time over the wall time of a loop
/// lasting `seconds` (1.0 on an idle CPU, 0.4 on a CPU where another
/// process keeps 60% busy). A timed loop's iterations are calibrated on
/// the fastest of three short runs; its samples then share the CPU, so
/// they last the sample time divided by this.
pub fn cpu_share(seconds: f64) -> f64 {
    let wall = (seconds * 1e9) as u64;
    let (t0, c0) = (now_ns(), thread_cpu_ns());
    let mut x = 0u64;
    while now_ns() - t0 < wall {
        for _ in 0..1000 {
            x = black_box(x.wrapping_add(1));
        }
    }
    let (t, c) = (now_ns() - t0, thread_cpu_ns() - c0);
    (c as f64 / t.max(1) as f64).clamp(0.01, 1.0)
}

/// Run `op` `iters` times between two clock reads; returns elapsed ns.
/// Not inlined so every benchmark's loop is a separate, inspectable
/// function, and the closure is inlined into it.
#[inline(never)]
pub fn time_loop<F: FnMut()>(iters: u64, op: &mut F) -> u64 {
    let t0 = now_ns();
    for _ in 0..iters {
        op();
    }
    now_ns() - t0
}

/// Find the iteration count that makes one timed loop last `target_ns`
/// (see [`common::calibrate_amount`]).
pub fn calibrate<F: FnMut()>(target_ns: u64, op: &mut F) -> u64 {
    common::calibrate_amount(target_ns, 1, 1, |n| Ok(time_loop(n, op)))
        .expect("a timed loop cannot fail")
}

/// A single-threaded timed-loop benchmark instance around an operation.
/// It reports ns per iteration, or with [`LoopInstance::rate`] a rate
/// (`per_iter` units per iteration, e.g. bytes/s of memcpy).
pub struct LoopInstance<F: FnMut() + Send> {
    op: F,
    cpu: Option<usize>,
    target_ns: u64,
    iters: Option<u64>,
    /// Units per iteration when reporting a rate.
    per_iter: Option<f64>,
}

impl<F: FnMut() + Send> LoopInstance<F> {
    pub fn new(op: F, cpu: Option<usize>, sample_time: f64) -> Self {
        LoopInstance {
            op,
            cpu,
            target_ns: (sample_time * 1e9) as u64,
            iters: None,
            per_iter: None,
        }
    }

    /// Report `per_iter * iterations / seconds` instead of ns/iteration.
    pub fn rate(op: F, per_iter: f64, cpu: Option<usize>, sample_time: f64) -> Self {
        LoopInstance {
            per_iter: Some(per_iter),
            ..LoopInstance::new(op, cpu, sample_time)
        }
    }
}

impl<F: FnMut() + Send> Instance for LoopInstance<F> {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        if let Some(cpu) = self.cpu {
            crate::system::pin_current_thread(cpu)
                .with_context(|| format!("cannot pin to CPU {cpu}"))?;
        }
        let iters = match self.iters {
            Some(n) => n,
            None => {
                let n = calibrate(self.target_ns, &mut self.op);
                self.iters = Some(n);
                n
            }
        };
        let ns = time_loop(iters, &mut self.op).max(1);
        let value = match self.per_iter {
            Some(units) => units * iters as f64 * 1e9 / ns as f64,
            None => ns as f64 / iters as f64,
        };
        out.push(Measure { metric: 0, value });
        Ok(())
    }

    fn operations(&self) -> Option<f64> {
        self.iters.map(|n| n as f64)
    }

    fn placement(&self) -> Option<String> {
        self.cpu.map(|c| format!("cpu {c}"))
    }

    fn notes(&self) -> Vec<(String, String)> {
        match self.iters {
            Some(n) => vec![("iterations".into(), n.to_string())],
            None => Vec::new(),
        }
    }
}

/// ns per iteration of the timed loop with an empty body: the harness's own
/// cost per operation, recorded with every run (never subtracted).
pub fn loop_overhead_ns(sample_time: f64) -> f64 {
    let mut op = || {
        black_box(0u64);
    };
    let target = (sample_time * 1e9) as u64;
    let iters = calibrate(target, &mut op);
    // Best of three: the overhead is a floor, not a distribution.
    (0..3)
        .map(|_| time_loop(iters, &mut op) as f64 / iters as f64)
        .fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_hits_the_target_roughly() {
        let mut x = 0u64;
        let mut op = || {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        };
        let target = 20_000_000;
        let iters = calibrate(target, &mut op);
        // Judge by the thread's CPU time: on a loaded machine the wall time
        // of a long loop includes other processes' slices, which is noise
        // the runner's statistics deal with, not a calibration error.
        let cpu_ns = || {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: valid out-pointer.
            unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
            ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
        };
        let t = (0..3)
            .map(|_| {
                let c0 = cpu_ns();
                time_loop(iters, &mut op);
                cpu_ns() - c0
            })
            .min()
            .unwrap();
        assert!(
            t > target / 3 && t < target * 3,
            "cpu {t} ns for {iters} iters"
        );
    }

    #[test]
    fn overhead_is_tiny() {
        let o = loop_overhead_ns(0.01);
        assert!(o > 0.0 && o < 20.0, "overhead {o} ns");
    }
}
