//! The running system: its fingerprint (recorded with every run), noise
//! warnings with their remedies, CPU affinity and topology, and the few
//! process, thread, memory and pipe calls whose form differs between
//! operating systems.
//!
//! Everything kbench asks of the OS is the [`Os`] trait below: one
//! implementation per OS, `linux.rs` and `freebsd.rs`, picked by
//! `cfg(target_os)` here and nowhere else. A new OS is one more file
//! implementing the trait. The rest of kbench calls the free functions of
//! this module, which hold the portable part and forward to the OS; the
//! benchmarks never test `target_os` themselves. What an OS cannot do at
//! all (splice on FreeBSD) is a [`Feature`] the OS names with a one-line
//! reason, so a benchmark can refuse it as bad input instead of failing in
//! its timed loop.

pub mod counters;
mod cpuid;
#[cfg(target_os = "freebsd")]
mod freebsd;
#[cfg(any(target_os = "freebsd", test))]
mod freebsd_parse;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
mod perf;
#[cfg(target_os = "linux")]
mod perf_record;
pub mod probe;
pub mod profiler;
pub mod watchdog;

#[cfg(target_os = "freebsd")]
type Host = freebsd::FreeBsd;
#[cfg(target_os = "linux")]
type Host = linux::Linux;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ffi::{c_int, c_long};
use std::fmt;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;

use crate::units::CpuSet;

/// Everything recorded about the machine a run happened on. Fields that
/// could not be read are `None`/empty; the reason is never fatal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    /// Host name.
    pub hostname: String,
    /// `uname -s`: Linux, FreeBSD.
    pub os: String,
    /// OS release name (`PRETTY_NAME` of os-release(5)).
    pub os_release: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel version string (`uname -v`).
    pub kernel_version: String,
    /// Boot command line.
    pub cmdline: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// CPU vendor id (GenuineIntel, AuthenticAMD).
    pub cpu_vendor: Option<String>,
    pub cpu_family: Option<u32>,
    pub cpu_model_number: Option<u32>,
    pub cpu_stepping: Option<u32>,
    /// Microcode revision as the kernel reports it (`0x...`).
    pub microcode: Option<String>,
    /// CPU feature flags (for probes such as `cpu.flag.pcid`).
    pub cpu_flags: Vec<String>,
    pub sockets: usize,
    /// Physical cores in all sockets.
    pub cores: usize,
    /// Online hardware threads.
    pub threads: usize,
    /// Online CPUs as a list (`0-1`).
    pub online_cpus: String,
    /// SMT control (`on`, `off`, `notsupported`, ...).
    pub smt: Option<String>,
    pub numa_nodes: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// The kernel's word on each CPU vulnerability and its mitigation:
    /// Linux's vulnerabilities directory, FreeBSD's mitigation sysctls.
    pub vulnerabilities: IndexMap<String, String>,
    pub cpufreq_driver: Option<String>,
    pub governor: Option<String>,
    /// `Some(true)` when turbo/boost is enabled; `None` if unknown.
    pub boost: Option<bool>,
    /// Transparent huge pages mode (the selected word).
    pub thp: Option<String>,
    pub clocksource: Option<String>,
    /// Hypervisor vendor or `None` on bare metal.
    pub hypervisor: Option<String>,
    /// 1-, 5-, 15-minute load averages.
    pub loadavg: [f64; 3],
    /// Pairs of SMT siblings that were both busy while the fingerprint was
    /// taken (per-CPU busy fraction over a short window).
    pub busy_smt_pairs: Vec<(usize, usize)>,
    /// Readings of probes a campaign used, by name.
    #[serde(default)]
    pub probes: IndexMap<String, String>,
    /// The kbench that measured (`0.1.0`); absent in older records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kbench: Option<String>,
    /// The C compiler command benchmarks and scale testcases build with
    /// (`$CC`, else `cc`): the first line of its `--version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
}

/// A noise hazard found in the fingerprint, with its remedy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Warning {
    pub hazard: String,
    pub remedy: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (remedy: {})", self.hazard, self.remedy)
    }
}

/// Position of one CPU in the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopo {
    pub cpu: usize,
    pub package: usize,
    pub core: usize,
    /// Index of this hardware thread among its core's siblings (0 first).
    pub thread: usize,
}

/// Where a process stands, over all of its threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcState {
    /// Some thread runs or may run.
    Running,
    /// Every thread is stopped (SIGSTOP) or exiting.
    Stopped,
    /// No such process, or only its zombie.
    Gone,
}

/// A noise hazard whose remedy is a command that differs between OSes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hazard {
    /// The CPU clock follows the load.
    Governor,
    /// Turbo/boost clocks.
    Boost,
    /// SMT siblings both busy.
    Smt,
}

/// A kernel facility some benchmarks need and not every OS has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Feature {
    /// Resizing a pipe's buffer (F_SETPIPE_SZ).
    PipeResize,
    /// Moving pipe pages to another descriptor without a copy (splice).
    Splice,
    /// Mapping user pages into a pipe (vmsplice with SPLICE_F_GIFT).
    Vmsplice,
}

/// A futex-like operation on a 32-bit word, in the OS's own encoding
/// (Linux futex(2) op, FreeBSD _umtx_op(2) op), chosen once before a timed
/// loop by [`futex_op`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FutexOp(pub(crate) c_int);

/// What kbench asks of the operating system. One implementation per OS;
/// every function documents the guarantees callers rely on (allocation-free
/// where forked children or timed loops call it).
pub(crate) trait Os {
    /// `PTHREAD_CANCEL_ASYNCHRONOUS` of the OS's libc (not in the libc
    /// crate).
    const PTHREAD_CANCEL_ASYNCHRONOUS: c_int;
    /// The ELF OS/ABI byte a static executable of this OS carries.
    const ELF_OSABI: u8;
    /// The number of the exit system call on this architecture.
    const EXIT_SYSCALL: u32;

    // -- The machine -------------------------------------------------------

    /// This machine's name as runs record it.
    fn hostname() -> String;
    /// Everything recorded about the machine; what cannot be read stays
    /// empty (the portable fields, kbench's version and the C compiler,
    /// are filled by [`fingerprint`]).
    fn fingerprint() -> Fingerprint;
    /// The CPUs online now.
    fn online_cpus() -> CpuSet;
    /// Package, core and SMT thread of each CPU of `cpus`, in their order;
    /// a CPU the OS says nothing about is its own core in package 0.
    fn cpu_topology(cpus: &CpuSet) -> Vec<CpuTopo>;
    /// The machine's CPU time since boot, in ticks: `(busy, idle)`, counted
    /// as will-it-scale's runtest.py does (idle and iowait are idle).
    fn cpu_ticks() -> Option<(u64, u64)>;
    /// The highest clock frequency of any CPU, in Hz.
    fn max_cpu_hz() -> Option<f64>;
    /// A built-in probe's reading (see `probe.rs`); `None` when there is
    /// nothing to read. Command probes never reach here.
    fn read_probe(p: &probe::Probe) -> Option<String>;
    /// The remedy for `h` on this OS.
    fn remedy(h: Hazard) -> &'static str;
    /// Why `f` cannot be used on this OS (one line), or `None`.
    fn unavailable(f: Feature) -> Option<&'static str>;
    /// Event counters of the calling thread and its future children
    /// (see [`open_counters`]).
    fn open_counters(kinds: &[counters::Counter]) -> counters::Opened;
    /// A sampled call-stack profiler of process `pid` and what it starts
    /// afterwards (see [`start_profiler`]), or why there is none.
    fn start_profiler(pid: u32) -> Result<Box<dyn profiler::Profiler>, String>;

    // -- Processes -----------------------------------------------------------

    /// Process `pid` on this boot, or `None` if there is no such process.
    fn owner(pid: u32) -> Option<crate::record::Owner>;
    /// Where process `pid` stands, over all of its threads.
    fn process_state(pid: libc::pid_t) -> ProcState;
    /// Whether thread `tid` (a [`thread_id`]) of process `pid` exists and
    /// is not exiting.
    fn thread_alive(pid: libc::pid_t, tid: libc::pid_t) -> bool;
    /// The CPU process `pid` last ran on.
    fn last_cpu(pid: libc::pid_t) -> Option<usize>;
    /// The number of threads of this process.
    fn thread_count() -> Option<usize>;
    /// A path that executes this very binary (for re-executing kbench).
    fn self_exe() -> PathBuf;
    /// A descriptor that polls readable once child `pid` has exited, where
    /// the OS has one.
    fn exit_notifier(pid: libc::pid_t) -> Option<OwnedFd>;
    /// Make this process the reaper of the processes its descendants
    /// orphan.
    fn become_subreaper() -> std::io::Result<()>;
    /// Make, once, a container for the commands kbench runs that no
    /// descendant can leave and that can be emptied at once (Linux: a
    /// cgroup v2), where the OS has one and kbench may make it.
    fn make_command_cgroup();
    /// The directory of that container, if one was made (the watchdog
    /// empties and removes it after kbench was killed).
    fn command_cgroup() -> Option<PathBuf>;
    /// Move the just-started child `pid` into that container (from
    /// kbench, after the spawn: nothing runs in the child between its
    /// fork and exec, so it is started by `posix_spawn`).
    fn adopt_into_command_cgroup(pid: libc::pid_t);
    /// This process's children, re-parented orphans included.
    fn children() -> BTreeSet<libc::pid_t>;
    /// The processes this user may see whose environment holds `entry`
    /// (`NAME=value`, whole), this process left out.
    fn processes_with_env(entry: &[u8]) -> Vec<libc::pid_t>;
    /// Kill every process in the commands' container and wait (briefly)
    /// until it is empty; nothing where there is none.
    fn empty_command_cgroup();
    /// Have the kernel send `sig` to the calling process when its parent
    /// dies. Async-signal-safe (called between fork and exec).
    fn die_with_parent(sig: c_int) -> std::io::Result<()>;
    /// Whether this process runs without address-space randomisation
    /// (`None`: cannot tell).
    fn aslr_off() -> Option<bool>;
    /// Whether the programs this process executes next get a randomised
    /// address space.
    fn set_exec_aslr(off: bool) -> std::io::Result<()>;

    // -- Threads, affinity, waiting ----------------------------------------

    /// The calling thread's id, unique on the machine while it lives.
    /// Async-signal-safe.
    fn thread_id() -> libc::pid_t;
    /// Send `sig` to thread `tid` of this process `pid`; false on failure.
    /// Async-signal-safe.
    fn signal_thread(pid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> bool;
    /// A real-time signal no library uses, for parking threads.
    fn park_signal() -> c_int;
    /// Pin the calling thread to `cpus`. Allocation-free (forked children
    /// call it).
    fn set_affinity(cpus: &[usize]) -> std::io::Result<()>;
    /// The calling thread's CPU affinity.
    fn get_affinity() -> std::io::Result<CpuSet>;
    /// Sleep while `word` (in memory shared between processes) holds
    /// `value`; may return early (callers loop).
    fn wait_on(word: &AtomicU32, value: u32);
    /// Wake every waiter on `word`.
    fn wake_all(word: &AtomicU32);
    /// The OS's encoding of a wake (`wait == false`) or a wait on a 32-bit
    /// word, process-private or shared.
    fn futex_op(wait: bool, private: bool) -> FutexOp;
    /// One futex-like call: wake up to `val` waiters, or wait while `*word
    /// == val`. As raw as the system call (a timed loop calls it).
    ///
    /// # Safety
    /// `word` points to a live, aligned 32-bit word.
    unsafe fn futex(word: *const u32, op: FutexOp, val: u32) -> c_long;

    // -- Descriptors, memory, files and pipes --------------------------------

    /// The calling thread's errno, read where libc keeps it (one load, as
    /// in C: timed loops test it on their error paths). Async-signal-safe.
    fn errno() -> c_int;
    /// Close descriptors `lo..=hi`; false when the kernel cannot do it in
    /// one call. Async-signal-safe.
    fn close_range(lo: u32, hi: u32) -> bool;
    /// Take an exclusive lock on byte `offset` of `fd`, owned by this open
    /// file (or, where the OS has no such lock, by this process), waiting
    /// for it when `wait`. `Ok(false)`: held by someone else (no wait).
    fn lock_byte(fd: RawFd, offset: u64, wait: bool) -> std::io::Result<bool>;
    /// Keep `len` bytes at `p` out of forked children.
    fn dont_fork(p: *mut u8, len: usize) -> std::io::Result<()>;
    /// Map `len` bytes at `p` with base pages only; false where the OS
    /// cannot (a page-fault benchmark calls it just before its timed part).
    fn no_huge_pages(p: *mut u8, len: usize) -> bool;
    /// The raw break system call: move the break to `addr` (0 reads it)
    /// and return where it is now, without libc's bookkeeping.
    ///
    /// # Safety
    /// Nothing (the allocator included) may live where the break moves.
    unsafe fn raw_brk(addr: usize) -> usize;
    /// Allocate `len` bytes at `off` of `fd`: 0, or -1 with errno.
    fn fallocate(fd: RawFd, off: libc::off_t, len: libc::off_t) -> c_int;
    /// The largest pipe buffer an unprivileged process may ask for.
    fn pipe_max_size() -> Option<u64>;
    /// Resize the buffer of pipe `fd` ([`Feature::PipeResize`]).
    fn set_pipe_size(fd: RawFd, size: usize) -> std::io::Result<()>;
    /// The buffer size of pipe `fd`.
    fn pipe_size(fd: RawFd) -> std::io::Result<usize>;
    /// vmsplice(2) one iovec into pipe `fd`, gifting the pages: bytes
    /// moved, or -1 with errno ([`Feature::Vmsplice`]).
    ///
    /// # Safety
    /// `iov` describes mapped memory that stays mapped and untouched while
    /// the pipe holds it.
    unsafe fn vmsplice_gift(fd: RawFd, iov: &libc::iovec) -> isize;
    /// splice(2) up to `len` bytes from pipe `from` to `to`, moving pages:
    /// bytes moved, or -1 with errno ([`Feature::Splice`]).
    fn splice_move(from: RawFd, to: RawFd, len: usize) -> isize;
    /// getppid as a raw system call, past any libc wrapper.
    fn raw_getppid() -> c_long;
}

// -- The machine ---------------------------------------------------------------

/// This machine's name as its runs record it (the fingerprint's hostname).
pub fn hostname() -> String {
    Host::hostname()
}

/// Read the fingerprint of the running system.
pub fn fingerprint() -> Fingerprint {
    Fingerprint {
        kbench: Some(env!("CARGO_PKG_VERSION").to_string()),
        compiler: compiler(),
        ..Host::fingerprint()
    }
}

/// The CPUs that are online now.
pub fn online_cpus() -> CpuSet {
    Host::online_cpus()
}

/// Package, core and SMT thread of each CPU of `cpus` ([`Os::cpu_topology`]).
pub fn cpu_topology(cpus: &CpuSet) -> Vec<CpuTopo> {
    Host::cpu_topology(cpus)
}

/// The machine's `(busy, idle)` CPU ticks since boot ([`Os::cpu_ticks`]).
pub fn cpu_ticks() -> Option<(u64, u64)> {
    Host::cpu_ticks()
}

/// The highest clock frequency of this machine's CPUs, in Hz.
pub fn max_cpu_hz() -> Option<f64> {
    Host::max_cpu_hz()
}

/// Why this OS lacks `f` (one line), or `None` where it has it.
pub fn unavailable(f: Feature) -> Option<&'static str> {
    Host::unavailable(f)
}

/// Open `kinds` for the calling thread and the threads and processes it
/// starts afterwards, disabled; what could not open, one line each.
pub fn open_counters(kinds: &[counters::Counter]) -> counters::Opened {
    Host::open_counters(kinds)
}

/// Voluntary and involuntary context switches of kbench and of every
/// process it started so far (`None` where getrusage fails): what perf's
/// counters cannot split, read by them around the counted interval.
#[cfg(target_os = "linux")]
fn switch_count() -> Option<(u64, u64)> {
    linux::switches::count()
}

/// Start sampling the call stacks of this process and of the processes
/// and threads it starts afterwards; sampling has begun when this
/// returns. The error is one line saying what is missing (the profiler,
/// permissions, support on this OS).
pub fn start_profiler() -> Result<Box<dyn profiler::Profiler>, String> {
    Host::start_profiler(std::process::id())
}

// -- Processes -------------------------------------------------------------------

/// This process, on this boot (`None` where the OS does not say).
pub fn owner() -> Option<crate::record::Owner> {
    Host::owner(std::process::id())
}

/// Whether `o`, recorded on host `host`, is certainly gone: this is that
/// host, and it was rebooted since or the process no longer exists. On
/// another host nothing can be told.
pub fn owner_is_gone(o: &crate::record::Owner, host: &str) -> bool {
    if host != Host::hostname() {
        return false;
    }
    match Host::owner(o.pid) {
        Some(now) => now.boot_id != o.boot_id || now.start != o.start,
        None => Host::owner(std::process::id()).is_some(),
    }
}

/// Where process `pid` stands, over all of its threads.
pub fn process_state(pid: libc::pid_t) -> ProcState {
    Host::process_state(pid)
}

/// Whether thread `tid` of process `pid` exists and is not exiting.
pub fn thread_alive(pid: libc::pid_t, tid: libc::pid_t) -> bool {
    Host::thread_alive(pid, tid)
}

/// The CPU process `pid` last ran on.
pub fn last_cpu(pid: libc::pid_t) -> Option<usize> {
    Host::last_cpu(pid)
}

/// The number of threads of this process.
pub fn thread_count() -> Option<usize> {
    Host::thread_count()
}

/// A path that executes this very binary.
pub fn self_exe() -> PathBuf {
    Host::self_exe()
}

/// A descriptor that polls readable once child `pid` has exited.
pub fn exit_notifier(pid: libc::pid_t) -> Option<OwnedFd> {
    Host::exit_notifier(pid)
}

/// The kernel sends `sig` to the calling process when its parent dies.
/// Async-signal-safe.
#[inline]
pub fn die_with_parent(sig: c_int) -> std::io::Result<()> {
    Host::die_with_parent(sig)
}

/// Whether this process runs without address-space randomisation.
pub fn aslr_off() -> Option<bool> {
    Host::aslr_off()
}

/// Whether programs this process executes next run without address-space
/// randomisation.
pub fn set_exec_aslr(off: bool) -> std::io::Result<()> {
    Host::set_exec_aslr(off)
}

/// The errno of the last failed call. Allocation-free and
/// async-signal-safe.
#[inline(always)]
pub fn errno() -> c_int {
    Host::errno()
}

// -- Threads, affinity, waiting ------------------------------------------------

/// The calling thread's id. Async-signal-safe.
#[inline]
pub fn thread_id() -> libc::pid_t {
    Host::thread_id()
}

/// Send `sig` to thread `tid` of this process `pid`. Async-signal-safe.
pub fn signal_thread(pid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> bool {
    Host::signal_thread(pid, tid, sig)
}

/// A real-time signal kbench may own for parking threads.
pub fn park_signal() -> c_int {
    Host::park_signal()
}

/// The OS's `PTHREAD_CANCEL_ASYNCHRONOUS`.
pub const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = Host::PTHREAD_CANCEL_ASYNCHRONOUS;

/// Pin the calling thread to one CPU. Allocation-free, so a forked child
/// or a task thread may call it.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    Host::set_affinity(&[cpu])
}

/// Set the calling thread's CPU affinity (inherited by children). A set
/// the kernel refuses because none of its CPUs may be used (outside the
/// process's cpuset) is bad input: the error names it and the CPUs the
/// thread has.
pub fn set_affinity(set: &CpuSet) -> anyhow::Result<()> {
    Host::set_affinity(&set.0).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            let have = get_affinity().map_or_else(|_| "?".into(), |s| s.to_string());
            crate::error::bad_input!(
                "CPUs `{set}`: not usable here (this process runs in a cpuset of CPUs {have}; name those)"
            )
        } else {
            anyhow::anyhow!("setting the CPU affinity to `{set}`: {e}")
        }
    })
}

/// The calling thread's CPU affinity.
pub fn get_affinity() -> std::io::Result<CpuSet> {
    Host::get_affinity()
}

/// Sleep while `word` (shared between processes) holds `value`; may
/// return early.
pub fn wait_on(word: &AtomicU32, value: u32) {
    Host::wait_on(word, value)
}

/// Wake every waiter on `word`.
pub fn wake_all(word: &AtomicU32) {
    Host::wake_all(word)
}

/// The encoding of a futex-like wake or wait ([`Os::futex_op`]).
pub fn futex_op(wait: bool, private: bool) -> FutexOp {
    Host::futex_op(wait, private)
}

/// One raw futex-like call ([`Os::futex`]); for timed loops.
///
/// # Safety
/// `word` points to a live, aligned 32-bit word.
#[inline(always)]
pub unsafe fn futex(word: *const u32, op: FutexOp, val: u32) -> c_long {
    // SAFETY: the caller's promise.
    unsafe { Host::futex(word, op, val) }
}

// -- Descriptors, memory, files and pipes ----------------------------------------

/// Close descriptors `lo..=hi` in one call where the kernel can; false
/// otherwise. Async-signal-safe.
#[inline]
pub fn close_range(lo: u32, hi: u32) -> bool {
    Host::close_range(lo, hi)
}

/// An exclusive lock on byte `offset` of `fd` ([`Os::lock_byte`]).
pub fn lock_byte(fd: RawFd, offset: u64, wait: bool) -> std::io::Result<bool> {
    Host::lock_byte(fd, offset, wait)
}

/// Keep `len` bytes at `p` out of forked children.
pub fn dont_fork(p: *mut u8, len: usize) -> std::io::Result<()> {
    Host::dont_fork(p, len)
}

/// Map `len` bytes at `p` with base pages only; false where the OS
/// cannot.
#[inline(always)]
pub fn no_huge_pages(p: *mut u8, len: usize) -> bool {
    Host::no_huge_pages(p, len)
}

/// The raw break system call ([`Os::raw_brk`]).
///
/// # Safety
/// Nothing (the allocator included) may live where the break moves.
#[inline(always)]
pub unsafe fn raw_brk(addr: usize) -> usize {
    // SAFETY: the caller's promise.
    unsafe { Host::raw_brk(addr) }
}

/// Bytes an unprivileged user may still write on the file system holding
/// `path` (statvfs(3), POSIX on every OS kbench runs on), or `None` when
/// it cannot be asked.
pub fn free_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: plain data filled by the kernel; a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some((st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Allocate `len` bytes at `off` of `fd`: 0, or -1 with errno.
#[inline(always)]
pub fn fallocate(fd: RawFd, off: libc::off_t, len: libc::off_t) -> c_int {
    Host::fallocate(fd, off, len)
}

/// The largest pipe buffer an unprivileged process may ask for.
pub fn pipe_max_size() -> Option<u64> {
    Host::pipe_max_size()
}

/// Resize the buffer of pipe `fd`.
pub fn set_pipe_size(fd: RawFd, size: usize) -> std::io::Result<()> {
    Host::set_pipe_size(fd, size)
}

/// The buffer size of pipe `fd`.
pub fn pipe_size(fd: RawFd) -> std::io::Result<usize> {
    Host::pipe_size(fd)
}

/// vmsplice one iovec into pipe `fd`, gifting its pages
/// ([`Os::vmsplice_gift`]).
///
/// # Safety
/// `iov` describes mapped memory that stays mapped and untouched while the
/// pipe holds it.
#[inline(always)]
pub unsafe fn vmsplice_gift(fd: RawFd, iov: &libc::iovec) -> isize {
    // SAFETY: the caller's promise.
    unsafe { Host::vmsplice_gift(fd, iov) }
}

/// splice up to `len` bytes from pipe `from` to `to` ([`Os::splice_move`]).
#[inline(always)]
pub fn splice_move(from: RawFd, to: RawFd, len: usize) -> isize {
    Host::splice_move(from, to, len)
}

/// getppid as a raw system call.
#[inline(always)]
pub fn raw_getppid() -> c_long {
    Host::raw_getppid()
}

/// The ELF OS/ABI byte and the exit system call number of this OS, for a
/// static executable that only exits.
pub fn static_exit_abi() -> (u8, u32) {
    (Host::ELF_OSABI, Host::EXIT_SYSCALL)
}

impl Fingerprint {
    /// Noise hazards and what to do about them.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = Vec::new();
        let mut add = |hazard: String, remedy: &str| {
            w.push(Warning {
                hazard,
                remedy: remedy.into(),
            })
        };
        if let Some(g) = &self.governor
            && g != "performance"
        {
            add(
                format!("cpufreq governor is `{g}`: the clock speed changes under load"),
                Host::remedy(Hazard::Governor),
            );
        }
        if self.boost == Some(true) {
            add(
                "turbo/boost is on: the clock depends on temperature and on the other cores".into(),
                Host::remedy(Hazard::Boost),
            );
        }
        if let Some(h) = &self.hypervisor {
            add(
                format!("running under a hypervisor ({h}): steal time and vCPU wake-ups add noise"),
                "measure on bare metal, or pin vCPUs on the host and compare only runs on the same VM",
            );
        }
        let per_cpu = self.loadavg[0] / self.threads.max(1) as f64;
        if per_cpu > 0.1 {
            add(
                format!(
                    "load average {:.2} is {:.2} per CPU: other work competes for the CPUs",
                    self.loadavg[0], per_cpu
                ),
                "stop other work and wait for the load to settle",
            );
        }
        for (a, b) in &self.busy_smt_pairs {
            add(
                format!("SMT siblings CPU {a} and CPU {b} were both busy"),
                Host::remedy(Hazard::Smt),
            );
        }
        w
    }
}

/// Every process a command starts dies with its sample and with kbench,
/// also one that left the command's process group (`setsid`): kbench is a
/// child subreaper (orphans come back to it) and, where the OS has one and
/// kbench may make it, runs its commands in a container of their own (a
/// Linux cgroup) that the watchdog empties if kbench is killed. Without
/// one (FreeBSD, or Linux without root), a process that left the group is
/// killed after each sample, and after kbench itself was killed the
/// watchdog finds it by [`container_mark`]. Once per process, before the
/// first command.
pub fn contain_descendants() {
    // Without it orphans go to init; the group kill still reaches them.
    let _ = Host::become_subreaper();
    Host::make_command_cgroup();
    // Started after the cgroup exists, so it knows to empty it.
    watchdog::ready();
}

/// The environment variable every command kbench runs carries:
/// [`container_mark`]'s value names this kbench.
pub const CONTAINER_VAR: &str = "KBENCH_CONTAINER";

/// `PID.NANOS` of this kbench (its pid and when it first asked, so a
/// reused pid is another mark). A descendant that left the command's
/// process group (`setsid`) and, without root, any cgroup, still carries
/// it in its environment: the watchdog finds it by it after kbench was
/// killed (`kill_marked`). A program that clears its environment escapes
/// this net; the cgroup (as root) still holds it.
pub fn container_mark() -> &'static str {
    static MARK: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    MARK.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        format!("{}.{nanos}", std::process::id())
    })
}

/// Kill (SIGKILL) every process whose environment holds
/// `CONTAINER_VAR=mark`, again until none is found (a dying shell may
/// start another; bounded against a fork bomb). How many were killed.
pub fn kill_marked(mark: &str) -> usize {
    if mark.is_empty() {
        return 0;
    }
    let entry = format!("{CONTAINER_VAR}={mark}");
    let mut killed = 0;
    for _ in 0..100 {
        let found = Host::processes_with_env(entry.as_bytes());
        if found.is_empty() {
            break;
        }
        for pid in found {
            // SAFETY: kill(2) on a pid read just now; a pid reused since
            // would have to carry this kbench's mark too.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed
}

/// Scratch files and directories (`TMPDIR/kbench-PID-*`) are removed by
/// the watchdog if kbench is killed: start it (once) before making one.
pub fn watch_scratch() {
    // The watchdog learns the commands' cgroup when it starts: make that
    // first, whichever comes first.
    contain_descendants();
}

/// The commands' cgroup, if kbench made one (for the watchdog).
fn cgroup_dir() -> Option<PathBuf> {
    Host::command_cgroup()
}

/// kbench's children now: taken just before a command is spawned, so
/// [`kill_escaped`] knows which children came back from it.
pub fn children() -> BTreeSet<libc::pid_t> {
    Host::children()
}

/// Move the command just started as `pid` into the commands' cgroup
/// (nothing where there is none). A process it forked before the move
/// stays outside, but in its process group and with kbench's mark
/// ([`container_mark`]), both of which are killed too.
pub fn adopt_into_command_cgroup(pid: libc::pid_t) {
    Host::adopt_into_command_cgroup(pid);
}

/// After a command's process group was killed and reaped: kill whatever
/// it left elsewhere (its cgroup; processes re-parented to kbench that
/// were not its children `before` the spawn) and reap those that come back
/// to kbench, handing each one's usage to `reaped`.
pub fn kill_escaped(before: &BTreeSet<libc::pid_t>, reaped: &mut dyn FnMut(&libc::rusage)) {
    Host::empty_command_cgroup();
    // Killing one may re-parent its own children to kbench: again until
    // none is new (bounded, against a fork bomb).
    for _ in 0..1000 {
        let new: Vec<libc::pid_t> = children().difference(before).copied().collect();
        if new.is_empty() {
            return;
        }
        for pid in new {
            // SAFETY: our own child (re-parented to us), killed and reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                let mut st = 0;
                let mut ru: libc::rusage = std::mem::zeroed();
                loop {
                    let r = libc::wait4(pid, &mut st, 0, &mut ru);
                    if r == pid {
                        reaped(&ru);
                        break;
                    }
                    if r < 0 && errno() != libc::EINTR {
                        break;
                    }
                }
            }
        }
    }
}

/// Map `len` bytes of zeroed anonymous memory, private to this process or
/// shared with its children. Allocation-free, so timed loops may call it.
#[inline]
pub fn mmap_anon(len: usize, shared: bool) -> std::io::Result<*mut u8> {
    let kind = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    // SAFETY: a fresh anonymous mapping; MAP_FAILED is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            kind | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

/// A pipe whose ends are closed on exec (children never inherit them):
/// `(read end, write end)`.
pub fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element out-array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// kbench's cache directory `sub`: `$XDG_CACHE_HOME/kbench/SUB`, else
/// `~/.cache/kbench/SUB`, else under the temporary directory.
pub fn cache_dir(sub: &str) -> std::path::PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("kbench")
        .join(sub)
}

/// `-1` as the error of a call returning an int, with errno kept.
fn cvt(r: c_int) -> std::io::Result<()> {
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// A write lock on byte `offset` of `fd` through fcntl command `cmd` (the
/// OS's record-lock flavour, waiting or not as `wait` says): `Ok(false)`
/// when another holder has it and `wait` is false.
fn fcntl_lock_byte(fd: RawFd, offset: u64, cmd: c_int, wait: bool) -> std::io::Result<bool> {
    // SAFETY: flock is plain data.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = offset as libc::off_t;
    fl.l_len = 1;
    // SAFETY: fcntl on the caller's fd with a valid flock.
    if unsafe { libc::fcntl(fd, cmd, &fl) } == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN | libc::EACCES) if !wait => Ok(false),
        _ => Err(e),
    }
}

/// The pairs of CPUs of `pairs` that were both more than half busy over
/// `window`, from two readings of per-CPU `(cpu, busy, total)` ticks.
fn busy_pairs(
    pairs: Vec<(usize, usize)>,
    window: std::time::Duration,
    ticks: impl Fn() -> Vec<(usize, u64, u64)>,
) -> Vec<(usize, usize)> {
    if pairs.is_empty() {
        return pairs;
    }
    let a = ticks();
    std::thread::sleep(window);
    let b = ticks();
    let busy = |cpu: usize| -> f64 {
        let x = a.iter().find(|t| t.0 == cpu);
        let y = b.iter().find(|t| t.0 == cpu);
        match (x, y) {
            (Some(x), Some(y)) if y.2 > x.2 => (y.1 - x.1) as f64 / (y.2 - x.2) as f64,
            _ => 0.0,
        }
    };
    pairs
        .into_iter()
        .filter(|&(x, y)| busy(x) > 0.5 && busy(y) > 0.5)
        .collect()
}

/// `PRETTY_NAME` of os-release(5), which both Linux and FreeBSD (13 and
/// later) keep in /etc/os-release.
fn os_release_name() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("PRETTY_NAME="))
        .map(|v| v.trim().trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// The first line of `$CC --version` (else `cc`), when it runs.
fn compiler() -> Option<String> {
    let cc = std::env::var("CC")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "cc".into());
    let out = std::process::Command::new(cc.trim())
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Run the ignored test `name` of this test binary alone, in a process
    /// of its own, and fail when it fails: for checks of process-wide
    /// counts that other tests' threads and children disturb.
    pub(crate) fn run_alone(name: &str) {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--ignored", "--test-threads", "1"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{name}: {text}"
        );
    }

    /// Every `.rs` file under `dir`, with its path relative to `src/`.
    fn sources(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
                let rel = p.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }

    /// The seam holds: only the Linux backend names /proc or /sys in code,
    /// and only this module chooses by `target_os`, so a new OS is one file
    /// and the benchmarks ask the seam.
    #[test]
    fn os_specific_code_stays_behind_the_seam() {
        let mut files = Vec::new();
        sources(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        assert!(files.len() > 50, "{} source files", files.len());
        // Built from pieces, so this file does not name them itself.
        let fs = [["\"/pr", "oc"].concat(), ["\"/s", "ys"].concat()];
        let mut found = Vec::new();
        for (path, text) in &files {
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                let names_fs = fs.iter().any(|p| code.contains(p.as_str()));
                if names_fs && path != "system/linux.rs" {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
                if code.contains("target_os") && !path.starts_with("system/") {
                    found.push(format!("{path}:{}: {}", n + 1, line.trim()));
                }
            }
        }
        assert!(found.is_empty(), "outside the seam:\n{}", found.join("\n"));
    }

    #[test]
    fn this_machine_has_a_plausible_clock_and_ticks() {
        if let Some(hz) = max_cpu_hz() {
            assert!(hz > 1e8 && hz < 1e10, "{hz}");
        }
        let (busy, idle) = cpu_ticks().unwrap();
        assert!(busy + idle > 0);
        assert!(!hostname().is_empty());
    }

    #[test]
    fn every_feature_has_a_reason_or_none() {
        for f in [Feature::PipeResize, Feature::Splice, Feature::Vmsplice] {
            if let Some(why) = unavailable(f) {
                assert!(!why.is_empty() && !why.contains('\n'), "{f:?}: {why}");
            }
        }
    }

    #[test]
    fn the_topology_covers_the_cpus_asked_for() {
        let online = online_cpus();
        let t = cpu_topology(&online);
        assert_eq!(
            t.iter().map(|c| c.cpu).collect::<Vec<_>>(),
            online.0,
            "{t:?}"
        );
        assert!(t.iter().all(|c| c.thread < 8));
    }

    #[test]
    fn a_cpu_set_the_kernel_refuses_is_bad_input_naming_it() {
        // No machine this runs on has CPU 1000 online (CPU_SETSIZE is 1024):
        // the kernel refuses the set as it refuses CPUs outside a cpuset.
        let before = get_affinity().unwrap();
        let e = set_affinity(&CpuSet(vec![1000])).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        let msg = format!("{e:#}");
        assert!(msg.starts_with("CPUs `1000`: not usable here"), "{msg}");
        assert!(msg.contains(&before.to_string()), "{msg}");
        assert_eq!(get_affinity().unwrap(), before, "unchanged");
    }
}
