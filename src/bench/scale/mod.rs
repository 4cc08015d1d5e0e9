//! Scalability benchmarks in the manner of will-it-scale: N copies of one
//! testcase run concurrently as processes or as threads, each looping on one
//! operation and bumping its own counter; the engine reads the counters
//! every `interval` and reports total operations per second.
//!
//! A testcase is a small unit behind one contract ([`Testcase`]): `prepare`
//! runs once per cell before any task exists (will-it-scale's
//! `testcase_prepare`), and returns a [`Body`] whose `run` does the per-task
//! setup and then the hot loop, bumping [`Task::counter`]. `run` returns only
//! on failure. There is no per-task cleanup: tasks are killed when the cell
//! ends, and files live in the cell's temporary directory, which the engine
//! removes. `Body::cleanup` runs once per cell after the tasks are gone
//! (will-it-scale's `testcase_cleanup`). All policy (fork vs threads,
//! pinning, padded counters, start line, sampling) is the engine's
//! (`engine.rs`), so a testcase is a few lines.
//!
//! Every testcase is an ordinary registry benchmark (kind `scale`, metric
//! `ops/s`, higher is better) with the engine's parameters (`mode`,
//! `tasks`, `interval`, `warmup`, `intervals`, `pin`, `aslr`) plus its own. C files
//! written for will-it-scale are loaded unchanged by `cfile.rs`.
//!
//! Defaults, and why: `tasks` is 1 (a static default cannot say "all
//! CPUs"; plans sweep it, e.g. `sweep = { tasks = [1, 2, 4] }`);
//! `interval` is the run's sample time (`--sample-time`, 0.2 s, or 0.05 s
//! with `--quick`) so quick runs stay quick; `interval=1` or
//! `--sample-time 1` gives will-it-scale's 1-second intervals; `warmup` is
//! will-it-scale's 6 intervals, discarded at the start of every sample
//! (each sample starts the tasks afresh and ends them: see `engine.rs`).

pub mod aslr;
pub mod cfile;
pub mod engine;
pub mod files;
pub mod ipc;
pub mod loops;
pub mod memory;
pub mod sync;
pub mod syscalls;
pub mod topology;

use std::convert::Infallible;
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Bench, Direction, Instance, Kind, Metric, ParamDef, ParamType, Params, RunSettings};

pub use engine::Task;

/// Most tasks a cell may run (will-it-scale's MAX_TASKS, 2048).
pub const MAX_TASKS: usize = 2048;

pub const MODE: ParamDef = ParamDef {
    name: "mode",
    ty: ParamType::Choice(&["processes", "threads"]),
    default: Some("processes"),
    help: "run the tasks as forked processes or as threads of one process",
};
pub const TASKS: ParamDef = ParamDef {
    name: "tasks",
    ty: ParamType::Int {
        min: 1,
        max: MAX_TASKS as i64,
    },
    default: Some("1"),
    help: "concurrent copies of the testcase; sweep it (e.g. 1..nproc) for a scaling curve",
};
pub const INTERVAL: ParamDef = ParamDef {
    name: "interval",
    ty: ParamType::Float {
        min: 0.001,
        max: 3600.0,
    },
    default: None,
    help: "seconds per counted interval (default: the run's --sample-time; will-it-scale uses 1)",
};
pub const WARMUP: ParamDef = ParamDef {
    name: "warmup",
    ty: ParamType::Int { min: 0, max: 1000 },
    default: Some("6"),
    help: "intervals discarded after the tasks start, in every sample (will-it-scale discards 6: it counts once `iterations++ > 5`)",
};
pub const INTERVALS: ParamDef = ParamDef {
    name: "intervals",
    ty: ParamType::Int { min: 1, max: 1000 },
    default: Some("1"),
    help: "measured intervals per sample, each stored as one ops/s sample",
};
pub const PIN: ParamDef = ParamDef {
    name: "pin",
    ty: ParamType::Choice(&["compact", "spread", "smt", "none"]),
    default: Some("compact"),
    help: "one CPU per task: compact = cores in order, spread = alternate packages (SMT siblings last); smt = hardware threads in order, siblings first (will-it-scale -m); none = unpinned",
};

pub const ASLR: ParamDef = ParamDef {
    name: "aslr",
    ty: ParamType::Choice(&["off", "on"]),
    default: Some("off"),
    help: "address-space randomisation of the tasks: off as will-it-scale's runtest.py (setarch -R; kbench re-executes itself so), on to keep it",
};

/// Seconds a scale sample spends starting and ending its cell process,
/// beyond its intervals, and more for each task (fork or thread, pinning,
/// the testcase's per-task setup); measured with `interval=0.001`
/// samples (the `--dry-run` estimate, docs/usage.md "Commands on the command
/// line, and how long a run will take").
pub const START_SECONDS: f64 = 0.010;
pub const TASK_SECONDS: f64 = 0.004;

/// The engine's parameters, shared by every testcase.
pub const ENGINE_PARAMS: &[ParamDef] = &[MODE, TASKS, INTERVAL, WARMUP, INTERVALS, PIN, ASLR];

/// Engine parameters followed by a testcase's own.
macro_rules! params_with {
    ($($extra:expr),* $(,)?) => {{
        const P: &[$crate::bench::ParamDef] = &[
            $crate::bench::scale::MODE,
            $crate::bench::scale::TASKS,
            $crate::bench::scale::INTERVAL,
            $crate::bench::scale::WARMUP,
            $crate::bench::scale::INTERVALS,
            $crate::bench::scale::PIN,
            $crate::bench::scale::ASLR,
            $($extra),*
        ];
        P
    }};
}
pub(crate) use params_with;

/// A mapping or file size parameter with a testcase's default.
pub const fn size_param(default: &'static str, help: &'static str) -> ParamDef {
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 4096,
            max: 1 << 40,
        },
        default: Some(default),
        help,
    }
}

/// A task's operation counter: one per task, alone in 256 bytes (will-it-
/// scale's spacing since its commit "Set cacheline spacing to 256B": the
/// largest cache line of the machines it runs on, and adjacent-line
/// prefetch pairs 64-byte lines), in memory shared with the sampler. Only its
/// task writes it, with a plain read-modify-write (no locked instruction),
/// as will-it-scale's `(*iterations)++` does.
#[repr(C, align(256))]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline(always)]
    pub fn add(&self, n: u64) {
        // SAFETY: the counter is live and aligned, and only this task
        // writes it (an aligned 8-byte store cannot tear for the sampler).
        unsafe { add_in_place(self.0.as_ptr(), n) }
    }

    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Raw pointer for C testcases (`unsigned long long *iterations`).
    pub fn as_ptr(&self) -> *mut u64 {
        self.0.as_ptr()
    }
}

/// `*p += n` as gcc compiles C's `(*p)++` or `val++` on x86-64: one
/// non-locked `addq $n, (mem)`, not reordered away or kept in a register.
/// LLVM's own choice for an increment in memory, `incq (mem)`, is one
/// micro-op more, and in a ~2.5 ns loop on an Intel Xeon that alone read
/// 371-378 M ops/s against 406-415 M (`pthread_mutex1`, processes). Such
/// loops are now C (`loops.c`), where the compiler chooses as it does for
/// will-it-scale; the Rust loops, a system call each, keep gcc's
/// instruction here so their counter is will-it-scale's too.
///
/// # Safety
/// `p` must be valid for reads and writes and 8-byte aligned, and no other
/// thread may write `*p` meanwhile.
#[inline(always)]
pub(crate) unsafe fn add_in_place(p: *mut u64, n: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        if n == 1 {
            // SAFETY: the caller's promise; the compiler folds the branch.
            unsafe { std::arch::asm!("add qword ptr [{p}], 1", p = in(reg) p, options(nostack)) };
        } else {
            // SAFETY: as above.
            unsafe {
                std::arch::asm!("add qword ptr [{p}], {n}", p = in(reg) p, n = in(reg) n, options(nostack))
            };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's promise.
    unsafe {
        std::ptr::write_volatile(p, std::ptr::read_volatile(p).wrapping_add(n))
    };
}

/// What `prepare` gets: the cell's shape and its private directory.
pub struct Prep<'a> {
    pub ntasks: usize,
    pub dir: &'a Path,
    pub params: &'a Params,
}

/// A prepared testcase: the per-task body, shared by all tasks (threads
/// share it by reference; forked processes get a copy).
pub trait Body: Send + Sync {
    /// Per-task setup, then the hot loop. Returns only on failure; the
    /// error aborts the cell.
    fn run(&self, task: &Task) -> anyhow::Result<Infallible>;
    /// Once per cell, after the tasks were stopped for good.
    fn cleanup(&self) {}
}

impl<F> Body for F
where
    F: Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync,
{
    fn run(&self, task: &Task) -> anyhow::Result<Infallible> {
        self(task)
    }
}

/// One testcase: its will-it-scale name, what it exercises, and how to
/// prepare it.
pub trait Testcase: Send + Sync {
    fn name(&self) -> &str;
    fn description(&self) -> &str;
    /// All parameters: [`ENGINE_PARAMS`], or `params_with!(...)`.
    fn params(&self) -> &[ParamDef] {
        ENGINE_PARAMS
    }
    /// Once per cell, in the cell's own process, before the tasks exist.
    fn prepare(&self, cx: &Prep) -> anyhow::Result<Box<dyn Body>>;
    /// Build and load what running needs (a C file), in kbench, before
    /// the run is recorded.
    fn ready(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// A testcase as a registry benchmark. `P` is `&'static dyn Testcase` for
/// built-ins and an `Arc` for C files loaded at run time.
pub struct Scale<P>(pub P);

/// Every testcase's metrics: operations per second, and the machine's
/// idle CPU % over each interval (/proc/stat), as will-it-scale's
/// runtest.py records beside its ops/s.
static METRICS: std::sync::LazyLock<[Metric; 2]> = std::sync::LazyLock::new(|| {
    [
        Metric::new("ops/s", "ops/s", Direction::Higher),
        Metric::new("idle", "%", Direction::Info),
    ]
});

impl<P> Bench for Scale<P>
where
    P: Deref<Target = dyn Testcase> + Clone + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        self.0.name()
    }
    fn kind(&self) -> Kind {
        Kind::Scale
    }
    fn description(&self) -> &str {
        self.0.description()
    }
    fn params(&self) -> &[ParamDef] {
        self.0.params()
    }
    fn ready(&self) -> anyhow::Result<()> {
        self.0.ready()
    }
    fn metrics(&self) -> &[Metric] {
        &*METRICS
    }
    /// Every sample starts the tasks afresh, discards `warmup` intervals
    /// and counts `intervals`; starting and ending the cell process and
    /// its tasks adds about [`START_SECONDS`] and [`TASK_SECONDS`] a task.
    fn sample_seconds(&self, p: &Params, s: &RunSettings) -> Option<f64> {
        let interval = match p.get("interval") {
            Some(_) => p.float("interval"),
            None => s.sample_time,
        };
        let intervals = (p.int("warmup") + p.int("intervals")) as f64;
        Some(intervals * interval + START_SECONDS + TASK_SECONDS * p.int("tasks") as f64)
    }
    fn instantiate(
        &self,
        params: &Params,
        settings: &RunSettings,
    ) -> anyhow::Result<Box<dyn Instance>> {
        Ok(Box::new(engine::ScaleInstance::new(
            self.0.clone(),
            params,
            settings,
        )))
    }
}

/// Define a testcase: a unit struct, its name and description, its
/// parameters (optional), and `prepare` as a closure `|cx: &Prep|`.
macro_rules! testcase {
    (
        $(#[$doc:meta])*
        $ty:ident, $name:literal, $desc:literal,
        $(params = $params:expr,)?
        prepare = $prep:expr
    ) => {
        $(#[$doc])*
        pub struct $ty;

        impl $ty {
            /// This testcase as a registry benchmark.
            pub const BENCH: $crate::bench::scale::Scale<
                &'static dyn $crate::bench::scale::Testcase,
            > = $crate::bench::scale::Scale(&$ty);
        }

        impl $crate::bench::scale::Testcase for $ty {
            fn name(&self) -> &str {
                $name
            }
            fn description(&self) -> &str {
                $desc
            }
            $(
                fn params(&self) -> &[$crate::bench::ParamDef] {
                    $params
                }
            )?
            fn prepare(
                &self,
                cx: &$crate::bench::scale::Prep,
            ) -> anyhow::Result<Box<dyn $crate::bench::scale::Body>> {
                let f: fn(
                    &$crate::bench::scale::Prep,
                ) -> anyhow::Result<Box<dyn $crate::bench::scale::Body>> = $prep;
                f(cx)
            }
        }
    };
}
pub(crate) use testcase;

/// `Err` with the OS error when a libc call returned a negative value.
#[inline(always)]
pub fn check(ret: i64, what: &str) -> anyhow::Result<i64> {
    if ret < 0 {
        Err(anyhow::anyhow!(
            "{what}: {}",
            std::io::Error::last_os_error()
        ))
    } else {
        Ok(ret)
    }
}

#[cfg(test)]
mod tests {
    use super::{Counter, add_in_place};

    #[test]
    fn counters_add_one_and_any_step_in_place() {
        let c = Counter(std::sync::atomic::AtomicU64::new(u64::MAX - 1));
        c.add(1);
        assert_eq!(c.get(), u64::MAX);
        c.add(1);
        assert_eq!(c.get(), 0, "wraps as the C counter does");
        let step = std::hint::black_box(1000);
        c.add(step);
        assert_eq!(c.get(), 1000);
        let mut v = 41u64;
        // SAFETY: a live local, written by this thread only.
        unsafe { add_in_place(&mut v, 1) };
        assert_eq!(v, 42);
    }
}
