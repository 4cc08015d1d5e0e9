//! Benchmarks: the `Bench` trait, typed parameters, and the one static
//! registry every built-in benchmark is listed in.
//!
//! A benchmark is a unit struct with a name, a description of what the
//! kernel does underneath, typed parameters with defaults, and the metrics it
//! reports. `instantiate` turns validated parameters into an [`Instance`]
//! that the runner asks for one sample at a time, interleaved with the other
//! cells of a run. Adding a benchmark = one file + one line in [`BENCHES`].

pub mod catalogue;
pub mod command;
#[cfg(test)]
pub mod fake;
pub mod micro;
pub mod params;
pub mod scale;

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// Numbers the `kbench-PID-N` names of the process's temporary files and
/// scratch directories.
pub(crate) static TEMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Creates `DIR/kbench-PID-N` with `create` for the next free N: a name
/// that a killed kbench whose pid this process now has left behind is
/// skipped, not reused. Other errors name the path. The watchdog runs from
/// then on: if kbench is killed, it removes what is left of these names
/// in the temporary directory.
pub(crate) fn create_unique<T>(
    dir: &std::path::Path,
    create: impl Fn(&std::path::Path) -> std::io::Result<T>,
) -> anyhow::Result<(std::path::PathBuf, T)> {
    crate::system::watch_scratch();
    loop {
        let path = dir.join(format!(
            "kbench-{}-{}",
            std::process::id(),
            TEMP_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        match create(&path) {
            Ok(t) => return Ok((path, t)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => anyhow::bail!("cannot create {}: {e}", path.display()),
        }
    }
}

/// A private scratch directory (0700) `TMPDIR/kbench-PID-N`.
pub(crate) fn scratch_dir() -> anyhow::Result<std::path::PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    create_unique(&std::env::temp_dir(), |p| {
        std::fs::DirBuilder::new().mode(0o700).create(p)
    })
    .map(|(p, ())| p)
}

/// A new private file (0600) for writing, truncating one at `path`.
pub(crate) fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
}

pub use params::{ParamDef, ParamType, Params, Value};
// The kinds, directions and metrics are typed records (`record.rs`),
// below the benchmarks, the event stream and the stores.
pub use crate::record::{Direction, Kind, Metric};

/// One measured value: index into [`Bench::metrics`] and the value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measure {
    pub metric: usize,
    pub value: f64,
}

/// Settings of a run that benchmarks need when they are instantiated.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// Target duration of one sample, seconds.
    pub sample_time: f64,
    /// With `--processes`: which of the cell's fresh processes this
    /// instance measures in, from 0. Built-in benchmarks measure the same
    /// way in every process; the test fake shifts its values by it.
    // Read by the test fake only.
    #[cfg_attr(not(test), allow(dead_code))]
    pub process: Option<u32>,
}

/// A benchmark definition.
pub trait Bench: Send + Sync {
    fn name(&self) -> &str;
    fn kind(&self) -> Kind;
    /// One or two sentences: what is measured and what the kernel does.
    fn description(&self) -> &str;
    fn params(&self) -> &[ParamDef];
    /// What each sample yields, in order; the runner asks around every
    /// sample, so this lends a list made once.
    fn metrics(&self) -> &[Metric];
    /// Checks across parameters after each one was parsed (e.g. `chunk`
    /// must be positive). The message names the parameter and value.
    fn check(&self, _params: &Params) -> Result<(), String> {
        Ok(())
    }
    /// Build or load what running this benchmark needs (a C testcase is
    /// compiled and loaded here, not when its plan is read); called once a
    /// cell of it is certain to run, before the run is recorded.
    fn ready(&self) -> anyhow::Result<()> {
        Ok(())
    }

    /// How long one sample lasts, in seconds, as far as the parameters
    /// and settings tell (the run's time model, `runner/estimate.rs`);
    /// `None` when only running it can tell (a command). A timed loop is
    /// calibrated to last the sample time.
    fn sample_seconds(&self, _params: &Params, settings: &RunSettings) -> Option<f64> {
        Some(settings.sample_time)
    }
    /// Prepare a cell: spawn helpers, open files, calibrate lazily.
    fn instantiate(
        &self,
        params: &Params,
        settings: &RunSettings,
    ) -> anyhow::Result<Box<dyn Instance>>;
}

/// A prepared cell. Dropping it cleans up (children reaped, files removed).
pub trait Instance: Send {
    /// Take one sample and push its values. The timed part must not
    /// allocate, log or lock.
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()>;
    /// One sample with `counters` counting: around the whole sample here;
    /// an instance whose timed part is only a stretch of its sample (the
    /// scale engine's measured intervals, after start-up and warm-up)
    /// starts and stops them around that stretch itself.
    fn sample_counted(
        &mut self,
        out: &mut Vec<Measure>,
        counters: &mut dyn crate::system::counters::CounterGroup,
    ) -> anyhow::Result<()> {
        counters.start()?;
        let r = self.sample(out);
        counters.stop()?;
        r
    }
    /// The operations the last sample timed, in the unit its first metric
    /// is per (iterations, round trips, pages), so counters read around
    /// the sample are divided per operation; `None` where a sample is not
    /// a count of operations.
    fn operations(&self) -> Option<f64> {
        None
    }
    /// The CPUs each party actually ran on, e.g. `cpu 0` or
    /// `writer 0, reader 1`; `None` when nothing was pinned.
    fn placement(&self) -> Option<String> {
        None
    }
    /// Facts learnt while preparing or sampling that belong with the
    /// result, e.g. the pipe size the kernel actually granted.
    fn notes(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// A benchmark from the static registry or one built at run time (a command
/// from a plan, a compiled C testcase).
#[derive(Clone)]
pub enum BenchRef {
    Static(&'static dyn Bench),
    Owned(Arc<dyn Bench>),
}

impl Deref for BenchRef {
    type Target = dyn Bench;
    fn deref(&self) -> &Self::Target {
        match self {
            BenchRef::Static(b) => *b,
            BenchRef::Owned(b) => b.as_ref(),
        }
    }
}

impl fmt::Debug for BenchRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BenchRef({})", self.name())
    }
}

/// Every built-in benchmark, in the order `kbench list` shows them.
pub static BENCHES: &[&dyn Bench] = &[
    &micro::syscall::Getppid,
    &micro::syscall::Getpid,
    &micro::syscall::Getuid,
    &micro::syscall::NullSyscall,
    &micro::syscall::ClockGettime,
    &micro::syscall::Gettimeofday,
    &micro::spin::Spin,
    &micro::pipe::PipeBw,
    &micro::pipe::Pipeflex,
    &micro::pipe::PipeLat,
    &micro::pipe::CtxSwitch,
    &micro::socket::UnixBw,
    &micro::socket::UnixLat,
    &micro::socket::TcpBw,
    &micro::socket::TcpLat,
    &micro::process::ForkExit,
    &micro::process::ForkExec,
    &micro::process::PosixSpawn,
    &micro::process::ThreadCreate,
    &micro::memory::MmapMunmap,
    &micro::memory::PageFault,
    &micro::memory::Brk,
    &micro::memory::MemcpyBw,
    &micro::file::Read,
    &micro::file::OpenClose,
    &micro::file::Stat,
    &micro::file::Lseek,
    &micro::file::WriteDevNull,
    &scale::syscalls::Getppid1::BENCH,
    &scale::memory::Brk1::BENCH,
    &scale::memory::PageFault1::BENCH,
    &scale::memory::PageFault2::BENCH,
    &scale::memory::PageFault3::BENCH,
    &scale::memory::Mmap1::BENCH,
    &scale::memory::Mmap2::BENCH,
    &scale::memory::Malloc1::BENCH,
    &scale::memory::Malloc2::BENCH,
    &scale::files::Read1::BENCH,
    &scale::files::Read2::BENCH,
    &scale::files::Pread1::BENCH,
    &scale::files::Pread2::BENCH,
    &scale::files::Pread3::BENCH,
    &scale::files::Pwrite1::BENCH,
    &scale::files::Pwrite2::BENCH,
    &scale::files::Pwrite3::BENCH,
    &scale::files::Write1::BENCH,
    &scale::files::Lseek1::BENCH,
    &scale::files::Lseek2::BENCH,
    &scale::files::Open1::BENCH,
    &scale::files::Open2::BENCH,
    &scale::files::Open3::BENCH,
    &scale::files::Dup1::BENCH,
    &scale::files::Unlink1::BENCH,
    &scale::files::Unlink2::BENCH,
    &scale::files::Fallocate1::BENCH,
    &scale::files::Poll1::BENCH,
    &scale::files::Poll2::BENCH,
    &scale::ipc::Pipe1::BENCH,
    &scale::ipc::Unix1::BENCH,
    &scale::syscalls::Eventfd1::BENCH,
    &scale::syscalls::Futex1::BENCH,
    &scale::syscalls::Futex2::BENCH,
    &scale::syscalls::Futex3::BENCH,
    &scale::syscalls::Futex4::BENCH,
    &scale::files::Lock1::BENCH,
    &scale::files::Lock2::BENCH,
    &scale::syscalls::SchedYield::BENCH,
    &scale::syscalls::Signal1::BENCH,
    &scale::ipc::ContextSwitch1::BENCH,
    &scale::memory::TlbFlush1::BENCH,
    &scale::memory::TlbFlush2::BENCH,
    &scale::memory::TlbFlush3::BENCH,
    &scale::syscalls::PosixSemaphore1::BENCH,
    &scale::files::Writeseek1::BENCH,
    &scale::files::Writeseek2::BENCH,
    &scale::files::Writeseek3::BENCH,
    &scale::memory::Brk2::BENCH,
    &scale::files::Fallocate2::BENCH,
    &scale::sync::PthreadMutex1::BENCH,
    &scale::sync::PthreadMutex2::BENCH,
    &scale::sync::PthreadMutex3::BENCH,
    &scale::sync::PthreadMutex4::BENCH,
    &scale::sync::PthreadMutex5::BENCH,
    &scale::files::Read3::BENCH,
    &scale::files::Read4::BENCH,
    &scale::files::Readseek1::BENCH,
    &scale::files::Readseek2::BENCH,
    &scale::files::Readseek3::BENCH,
];

/// Look up a built-in benchmark by name.
pub fn find(name: &str) -> Option<BenchRef> {
    BENCHES
        .iter()
        .find(|b| b.name() == name)
        .map(|b| BenchRef::Static(*b))
}

/// Names of all built-in benchmarks, for error messages.
pub fn names() -> Vec<&'static str> {
    BENCHES.iter().map(|b| b.name()).collect()
}

/// "unknown benchmark `getppd`; did you mean `getppid`? (see `kbench
/// list`)": the nearest few names, never the whole catalogue.
pub fn unknown(name: &str) -> String {
    format!(
        "unknown benchmark `{name}`{}",
        crate::suggest::hint(name, &names(), "see `kbench list`")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_names_are_unique_and_described() {
        let mut seen = std::collections::HashSet::new();
        for b in BENCHES {
            assert!(seen.insert(b.name()), "duplicate {}", b.name());
            assert!(!b.description().is_empty());
            assert!(!b.metrics().is_empty());
            // Defaults must parse against their own types.
            Params::resolve(&**b, &[]).unwrap();
        }
    }

    /// The runner asks for a benchmark's metrics around every sample: a
    /// built-in lends one list made once, never a new one per call.
    #[test]
    fn built_in_metrics_are_one_static_list() {
        for b in BENCHES {
            let (m1, m2) = (b.metrics(), b.metrics());
            assert!(
                std::ptr::eq(m1, m2),
                "{} makes its metrics per call",
                b.name()
            );
        }
    }
}
