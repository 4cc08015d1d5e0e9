//! The scalability engine: runs one cell's tasks and counts their ops/s.
//!
//! Shape of a cell (all of it created by `instantiate`):
//! ```text
//! kbench ── cell process (own process group, PDEATHSIG) ── task 0..N-1
//!                 prepare, reap, cleanup                     (processes,
//!                                                             or threads of
//!                                                             the cell process)
//! ```
//! - The cell process is forked from kbench, so loaded C code never runs in
//!   kbench itself, and killing that one process ends every thread of the
//!   threads mode. It runs `prepare`, creates the tasks, tells kbench it is
//!   ready, then waits: it reaps tasks that die (recording why), and on
//!   kbench's request kills them, runs `cleanup` and exits.
//! - Every process of the cell asks for SIGKILL when its parent dies
//!   (`system::die_with_parent`), so nothing outlives a kbench that is
//!   killed; the cell has its own process group so
//!   kbench can stop, resume and kill all of it, helpers included, with one
//!   signal each.
//! - Counters live in a MAP_SHARED anonymous mapping, one per task on its
//!   own 256 bytes, behind a header with the start line (a futex-like word
//!   all tasks wait on, released at once), the first error a task reported, and
//!   the pid and CPU of every task and helper.
//!
//! Sampling, and why it is shaped this way: the runner interleaves cells,
//! and the tasks of a cell must not run, or hold memory, while another cell
//! is measured. So the runner holds a [`ScaleInstance`], which owns no
//! process: each of its samples starts the cell ([`ScaleCell::start`]),
//! releases the start line, discards `warmup` intervals (fresh processes,
//! files and page tables are cold), reads the counters every `interval` on
//! CLOCK_MONOTONIC (absolute deadlines, each interval's real length
//! measured, not assumed), pushes one ops/s value per measured interval,
//! stops the whole process group with SIGSTOP and ends the cell: tasks
//! killed and reaped, `cleanup` run, files removed. At most one cell's
//! tasks exist at any time, so a sweep of 1..N tasks in both modes holds
//! what its largest cell holds, not the sum of all cells (page_fault1 holds
//! 128 MB per task). Counting needs no flag in the hot loop, which stays
//! exactly will-it-scale's: operation and counter store, nothing else, and
//! works for C testcases that loop forever. With `warmup=0` and a short
//! `interval` a sample costs a fraction of a second.
//!
//! Ctrl-C: the runner's signal handler makes the interval sleep return
//! EINTR; the sample then stops the cell and fails, the runner sees its stop
//! flag, and dropping the cell kills and reaps everything.

use std::cell::Cell;
use std::convert::Infallible;
use std::ffi::{CString, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, AtomicU8, AtomicU32, Ordering};

use anyhow::{Context, bail};

use super::{Body, Counter, MAX_TASKS, Prep, Testcase, topology};
use crate::bench::{Instance, Measure, Params, RunSettings};
use crate::system::ProcState;
use crate::system::counters::CounterGroup;
use crate::units::CpuSet;

const ERR_LEN: usize = 2048;
const LINE: usize = std::mem::size_of::<Counter>();

/// The start of the shared mapping. Only atomics: several processes read
/// and write it.
#[repr(C)]
struct Header {
    /// The start line: 0 until the first sample releases the tasks.
    go: AtomicU32,
    /// Tasks that reached the start line.
    ready: AtomicU32,
    /// 0 no error; 1 an error is being written; 2 `err` holds it.
    failed: AtomicU32,
    err_len: AtomicU32,
    err: [AtomicU8; ERR_LEN],
    /// pid (processes) or tid (threads) of each task and helper, 0 = none.
    task_pid: [AtomicI32; MAX_TASKS],
    helper_pid: [AtomicI32; MAX_TASKS],
    /// CPU + 1 each task and helper was pinned to, 0 = unpinned.
    task_cpu: [AtomicI32; MAX_TASKS],
    helper_cpu: [AtomicI32; MAX_TASKS],
}

/// The shared mapping: header, then one counter line per task.
struct Shared {
    base: *mut u8,
    len: usize,
    ntasks: usize,
}

// SAFETY: the mapping is only accessed through atomics.
unsafe impl Send for Shared {}
// SAFETY: as for Send: only atomics touch the mapping.
unsafe impl Sync for Shared {}

fn counters_offset() -> usize {
    std::mem::size_of::<Header>().div_ceil(4096) * 4096
}

impl Shared {
    fn new(ntasks: usize) -> anyhow::Result<Shared> {
        let len = counters_offset() + ntasks * LINE;
        // SAFETY: a fresh anonymous mapping; checked for MAP_FAILED. It is
        // zero-filled, which is the initial state of every field.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            bail!(
                "mmap of the shared counters: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(Shared {
            base: base as *mut u8,
            len,
            ntasks,
        })
    }

    fn hdr(&self) -> &Header {
        // SAFETY: the mapping is page aligned, large enough, zero-initialised
        // and Header is all atomics (valid at zero).
        unsafe { &*(self.base as *const Header) }
    }

    fn counter(&self, i: usize) -> &Counter {
        assert!(i < self.ntasks);
        // SAFETY: in bounds, 256-byte aligned (page-aligned offset + i*256),
        // and Counter is an atomic (valid at zero).
        unsafe { &*(self.base.add(counters_offset() + i * LINE) as *const Counter) }
    }

    /// Record the cell's first error; later ones are dropped.
    fn fail(&self, msg: &str) {
        let h = self.hdr();
        if h.failed
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let b = msg.as_bytes();
        let n = b.len().min(ERR_LEN);
        for (i, &c) in b[..n].iter().enumerate() {
            h.err[i].store(c, Ordering::Relaxed);
        }
        h.err_len.store(n as u32, Ordering::Relaxed);
        h.failed.store(2, Ordering::Release);
    }

    fn error(&self) -> Option<String> {
        let h = self.hdr();
        match h.failed.load(Ordering::Acquire) {
            0 => None,
            1 => Some("a task failed (its message was still being written)".into()),
            _ => {
                let n = h.err_len.load(Ordering::Relaxed) as usize;
                let b: Vec<u8> = h.err[..n]
                    .iter()
                    .map(|c| c.load(Ordering::Relaxed))
                    .collect();
                Some(String::from_utf8_lossy(&b).into_owned())
            }
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: unmapping what `new` mapped, once.
        unsafe { libc::munmap(self.base as *mut c_void, self.len) };
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Processes,
    Threads,
}

/// What tasks and helpers need to know about their cell. Lives in the cell
/// process; forked tasks use their copy.
struct Ctx {
    shared: *const Shared,
    mode: Mode,
    ntasks: usize,
    order: Vec<usize>,
    dir: PathBuf,
}

impl Ctx {
    fn shared(&self) -> &Shared {
        // SAFETY: the Shared outlives every task (the cell process exits
        // without dropping it; kbench drops it after killing the cell).
        unsafe { &*self.shared }
    }
}

thread_local! {
    /// The task running on this thread, for helpers a C testcase starts
    /// with `new_task()`.
    static CURRENT: Cell<Option<(*const Ctx, usize)>> = const { Cell::new(None) };
}

/// What a task's body sees.
pub struct Task<'a> {
    /// Task number, 0-based (will-it-scale's `nr`).
    pub nr: usize,
    /// Bump this once per operation.
    pub counter: &'a Counter,
    /// The cell's private temporary directory.
    pub dir: &'a Path,
    ctx: &'a Ctx,
}

type HelperFn = Box<dyn FnOnce() -> anyhow::Result<Infallible> + Send>;

impl Task<'_> {
    /// Start this task's helper (e.g. context_switch1's partner): a process
    /// in processes mode, a thread in threads mode, pinned to the task's
    /// own CPU (as will-it-scale's `new_task` inherits its creator's
    /// affinity; unpinned with `pin=none`), and recorded. One per task.
    pub fn spawn_helper(
        &self,
        f: impl FnOnce() -> anyhow::Result<Infallible> + Send + 'static,
    ) -> anyhow::Result<()> {
        spawn_helper(self.ctx, self.nr, Box::new(f))
    }
}

/// `new_task()` for C testcases: a helper of the task running on this
/// thread. Returns false outside a task.
pub fn spawn_helper_for_current(f: Box<dyn FnOnce() + Send>) -> bool {
    let Some((ctx, nr)) = CURRENT.with(|c| c.get()) else {
        return false;
    };
    // SAFETY: CURRENT points to the Ctx of the running cell process.
    let ctx = unsafe { &*ctx };
    let res = spawn_helper(
        ctx,
        nr,
        Box::new(move || {
            f();
            // A C helper that returns ends quietly, as in will-it-scale.
            // SAFETY: leaving the helper without running Rust destructors.
            unsafe { libc::_exit(0) }
        }),
    );
    if let Err(e) = res {
        ctx.shared().fail(&format!("task {nr}: new_task: {e:#}"));
        return false;
    }
    true
}

fn spawn_helper(ctx: &Ctx, nr: usize, f: HelperFn) -> anyhow::Result<()> {
    // will-it-scale's new_task() forks or creates a thread that inherits
    // its creator's affinity: the partner shares the task's CPU.
    let cpu = topology::cpu_of(&ctx.order, nr);
    let shared = ctx.shared();
    let fail_ctx = ctx as *const Ctx as usize;
    let body = move || {
        // SAFETY: the Ctx outlives the helper (see Ctx::shared).
        let ctx = unsafe { &*(fail_ctx as *const Ctx) };
        let h = ctx.shared().hdr();
        h.helper_pid[nr].store(gettid(), Ordering::Relaxed);
        h.helper_cpu[nr].store(cpu.map_or(0, |c| c as i32 + 1), Ordering::Relaxed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let msg = match r {
            Ok(Err(e)) => format!("helper of task {nr}: {e:#}"),
            Err(p) => format!("helper of task {nr} panicked: {}", panic_text(&p)),
        };
        ctx.shared().fail(&msg);
    };
    match ctx.mode {
        Mode::Processes => {
            let parent = getpid();
            // SAFETY: fork; the child only runs the helper and _exits.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                bail!("fork: {}", std::io::Error::last_os_error());
            }
            if pid == 0 {
                child_setup(parent, cpu);
                body();
                // SAFETY: leave without destructors (the parent owns them).
                unsafe { libc::_exit(1) }
            }
            shared.hdr().helper_pid[nr].store(pid, Ordering::Relaxed);
            Ok(())
        }
        Mode::Threads => spawn_thread(Box::new(move || {
            if let Some(c) = cpu {
                pin(c);
            }
            body();
            park()
        })),
    }
}

fn getpid() -> libc::pid_t {
    // SAFETY: no preconditions.
    unsafe { libc::getpid() }
}

fn gettid() -> libc::pid_t {
    crate::system::thread_id()
}

fn pin(cpu: usize) {
    // Pins the calling thread; a failure leaves it unpinned, which the
    // recorded placement would then misstate, so it is fatal.
    if crate::system::pin_current_thread(cpu).is_err() {
        // SAFETY: abort the task; the cell reports the death.
        unsafe { libc::_exit(3) }
    }
}

/// Sleep forever (a failed thread waits for the cell to be killed).
fn park() -> ! {
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "?".into())
}

/// In every forked process of a cell: die with the parent, default signal
/// handling, pinned.
fn child_setup(parent: libc::pid_t, cpu: Option<usize>) {
    // Checked below: a parent gone before the call has no death to signal.
    let _ = crate::system::die_with_parent(libc::SIGKILL);
    // SAFETY: signal/sigprocmask calls with valid arguments.
    unsafe {
        if libc::getppid() != parent {
            libc::_exit(1); // the parent died before the call above
        }
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGCHLD] {
            libc::signal(s, libc::SIG_DFL);
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
    if let Some(c) = cpu {
        pin(c);
    }
}

unsafe extern "C" {
    // POSIX (glibc, FreeBSD's libthr); not in the libc crate.
    fn pthread_setcanceltype(kind: c_int, old: *mut c_int) -> c_int;
}
use crate::system::PTHREAD_CANCEL_ASYNCHRONOUS;

/// A detached pthread running `f` (raw pthreads: the cell process was
/// forked from kbench, and this avoids std's thread bookkeeping there).
///
/// The thread's cancellation type is asynchronous, as will-it-scale's
/// threads are (its `main.c` sets it for `pthread_cancel`; kbench cancels
/// nothing). It matters to the numbers: in a threaded process glibc wraps
/// every cancellation-point call (read, write, close, poll, fcntl...) in
/// `__pthread_enable/disable_asynccancel`, which do two atomic
/// compare-and-swaps under the default deferred type and return at once
/// under the asynchronous one. Measured here: `dup1` threads read 0.867 of
/// will-it-scale's binary, with 17% of the task's samples in those two
/// functions against 3.4% in will-it-scale's task (`perf record -t`).
fn spawn_thread(f: Box<dyn FnOnce() + Send>) -> anyhow::Result<()> {
    extern "C" fn tramp(p: *mut c_void) -> *mut c_void {
        // SAFETY: p is the Box leaked below, taken back exactly once.
        let f = unsafe { Box::from_raw(p as *mut Box<dyn FnOnce() + Send>) };
        // SAFETY: sets this thread's own cancellation type; a null old-type
        // pointer is allowed by glibc.
        unsafe { pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, std::ptr::null_mut()) };
        f();
        std::ptr::null_mut()
    }
    let p = Box::into_raw(Box::new(f)) as *mut c_void;
    // SAFETY: valid out-pointer, default attributes, trampoline above.
    unsafe {
        let mut t: libc::pthread_t = std::mem::zeroed();
        let r = libc::pthread_create(&mut t, std::ptr::null(), tramp, p);
        if r != 0 {
            drop(Box::from_raw(p as *mut Box<dyn FnOnce() + Send>));
            bail!("pthread_create: {}", std::io::Error::from_raw_os_error(r));
        }
        libc::pthread_detach(t);
    }
    Ok(())
}

fn futex_wait(a: &AtomicU32, v: u32) {
    // Spurious wake-ups are handled by the caller's loop.
    crate::system::wait_on(a, v)
}

fn futex_wake_all(a: &AtomicU32) {
    crate::system::wake_all(a)
}

/// One task: pin, record, wait at the start line, run the body.
fn task_main(ctx: &Ctx, body: &dyn Body, nr: usize) {
    let shared = ctx.shared();
    let h = shared.hdr();
    let cpu = topology::cpu_of(&ctx.order, nr);
    if ctx.mode == Mode::Threads
        && let Some(c) = cpu
    {
        pin(c);
    }
    h.task_pid[nr].store(gettid(), Ordering::Relaxed);
    h.task_cpu[nr].store(cpu.map_or(0, |c| c as i32 + 1), Ordering::Relaxed);
    CURRENT.with(|c| c.set(Some((ctx as *const Ctx, nr))));
    h.ready.fetch_add(1, Ordering::AcqRel);
    while h.go.load(Ordering::Acquire) == 0 {
        futex_wait(&h.go, 0);
    }
    let task = Task {
        nr,
        counter: shared.counter(nr),
        dir: &ctx.dir,
        ctx,
    };
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body.run(&task)));
    let msg = match r {
        Ok(Err(e)) => format!("task {nr}: {e:#}"),
        Err(p) => format!("task {nr} panicked: {}", panic_text(&p)),
    };
    shared.fail(&msg);
}

extern "C" fn on_sigchld(_: c_int) {}

fn describe_status(status: c_int) -> String {
    if libc::WIFEXITED(status) {
        format!("exited with status {}", libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        let s = libc::WTERMSIG(status);
        format!("was killed by signal {s} ({})", signal_name(s))
    } else {
        format!("changed state ({status:#x})")
    }
}

fn signal_name(s: c_int) -> &'static str {
    match s {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT, e.g. a failed assert",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

/// The cell process: prepare, start the tasks, report ready, then reap
/// until kbench asks it to finish. Never returns.
fn leader_main(
    tc: &dyn Testcase,
    params: &Params,
    ctx: &Ctx,
    kbench: libc::pid_t,
    ctrl: c_int,
    ready: c_int,
) -> ! {
    child_setup(kbench, None);
    // SAFETY: plain syscalls on our own process.
    unsafe { libc::setpgid(0, 0) };
    let shared = ctx.shared();
    let prep = Prep {
        ntasks: ctx.ntasks,
        dir: &ctx.dir,
        params,
    };
    let body = match tc.prepare(&prep) {
        Ok(b) => b,
        Err(e) => {
            shared.fail(&format!("prepare: {e:#}"));
            // SAFETY: leave without destructors (kbench owns them).
            unsafe { libc::_exit(1) }
        }
    };
    // SIGCHLD stays blocked except inside ppoll, so a task's death always
    // wakes the wait below (no lost wake-up between reaping and sleeping).
    let waitmask = block_sigchld();
    let pids = start_tasks(ctx, &*body);
    // Wait until every task is at the start line, then tell kbench.
    let h = shared.hdr();
    while (h.ready.load(Ordering::Acquire) as usize) < ctx.ntasks
        && h.failed.load(Ordering::Acquire) == 0
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
        reap(shared, &pids);
    }
    // SAFETY: writing one byte to our end of the pipe, then closing it.
    unsafe {
        libc::write(ready, b"r".as_ptr() as *const c_void, 1);
        libc::close(ready);
    }
    loop {
        reap(shared, &pids);
        let mut pfd = libc::pollfd {
            fd: ctrl,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; waitmask is initialised above.
        let r = unsafe { libc::ppoll(&mut pfd, 1, std::ptr::null(), &waitmask) };
        if r > 0 {
            break;
        }
    }
    // Finish: tasks first (processes are killed even while stopped; task
    // threads are parked in a signal handler, so a C testcase's cleanup
    // cannot pull files from under a running loop), then the testcase's
    // cleanup; threads end with the process.
    if ctx.mode == Mode::Threads {
        park_threads(shared);
    }
    for &p in &pids {
        // SAFETY: our own children.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    for &p in &pids {
        // SAFETY: reaping our own children.
        unsafe { libc::waitpid(p, std::ptr::null_mut(), 0) };
    }
    body.cleanup();
    // SAFETY: leave without destructors.
    unsafe { libc::_exit(0) }
}

/// Install a no-op SIGCHLD handler (without SA_RESTART, so ppoll returns
/// EINTR) and block SIGCHLD; the mask to wait with, which lets it through.
fn block_sigchld() -> libc::sigset_t {
    let mut waitmask: libc::sigset_t;
    // SAFETY: signal set manipulation on local sets; the handler is a no-op
    // installed without SA_RESTART so ppoll returns EINTR.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigchld as *const () as usize;
        // Not for tasks stopped/continued by kbench's parking: no wake-ups.
        sa.sa_flags = libc::SA_NOCLDSTOP;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGCHLD, &sa, std::ptr::null_mut());
        let mut block: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut block);
        libc::sigaddset(&mut block, libc::SIGCHLD);
        waitmask = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_BLOCK, &block, &mut waitmask);
        libc::sigdelset(&mut waitmask, libc::SIGCHLD);
    }
    waitmask
}

/// Start the cell's tasks, as processes or threads (`ctx.mode`), each on
/// its CPU; the processes' pids. A task that cannot start fails the cell.
fn start_tasks(ctx: &Ctx, body: &(dyn Body + 'static)) -> Vec<libc::pid_t> {
    let shared = ctx.shared();
    let me = getpid();
    let mut pids = Vec::new();
    for nr in 0..ctx.ntasks {
        match ctx.mode {
            Mode::Processes => {
                // SAFETY: fork; the child runs the task and _exits.
                let pid = unsafe { libc::fork() };
                if pid < 0 {
                    shared.fail(&format!(
                        "fork of task {nr}: {}",
                        std::io::Error::last_os_error()
                    ));
                    kill_and_exit(&pids, 1);
                }
                if pid == 0 {
                    child_setup(me, topology::cpu_of(&ctx.order, nr));
                    task_main(ctx, body, nr);
                    // SAFETY: the task failed (recorded); leave.
                    unsafe { libc::_exit(1) }
                }
                pids.push(pid);
            }
            Mode::Threads => {
                let ctx_addr = ctx as *const Ctx as usize;
                let body_addr = body as *const dyn Body;
                let body_addr = SendPtr(body_addr);
                let r = spawn_thread(Box::new(move || {
                    let b = body_addr;
                    // SAFETY: ctx and body live until the process exits.
                    let (ctx, body) = unsafe { (&*(ctx_addr as *const Ctx), &*b.0) };
                    task_main(ctx, body, nr);
                    park()
                }));
                if let Err(e) = r {
                    shared.fail(&format!("task {nr}: {e:#}"));
                    // SAFETY: leave; threads die with the process.
                    unsafe { libc::_exit(1) }
                }
            }
        }
    }
    pids
}

static PARKED: AtomicU32 = AtomicU32::new(0);

extern "C" fn park_handler(_: c_int) {
    // Only async-signal-safe calls: an atomic add and pause().
    PARKED.fetch_add(1, Ordering::AcqRel);
    loop {
        // SAFETY: pause has no preconditions.
        unsafe { libc::pause() };
    }
}

/// Stop every task and helper thread of this process where it stands: a
/// real-time signal whose handler never returns. Waits at most 1 s.
fn park_threads(shared: &Shared) {
    let sig = crate::system::park_signal();
    let h = shared.hdr();
    let me = getpid();
    let mut sent = 0;
    // SAFETY: installing a handler with every signal blocked while it runs;
    // signals to threads of our own process.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = park_handler as *const () as usize;
        libc::sigfillset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
        for i in 0..shared.ntasks {
            for tid in [
                h.task_pid[i].load(Ordering::Relaxed),
                h.helper_pid[i].load(Ordering::Relaxed),
            ] {
                if tid > 0 && tid != me && crate::system::signal_thread(me, tid, sig) {
                    sent += 1;
                }
            }
        }
    }
    let t0 = now_ns();
    while PARKED.load(Ordering::Acquire) < sent && now_ns() - t0 < 1_000_000_000 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

struct SendPtr(*const dyn Body);
// SAFETY: the Body is Sync and lives as long as the process.
unsafe impl Send for SendPtr {}

fn kill_and_exit(pids: &[libc::pid_t], code: c_int) -> ! {
    for &p in pids {
        // SAFETY: our own children.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    // SAFETY: leave without destructors.
    unsafe { libc::_exit(code) }
}

/// Reap dead children of the cell process; a task or helper that died
/// while the cell runs is the cell's failure.
fn reap(shared: &Shared, pids: &[libc::pid_t]) {
    loop {
        let mut status = 0;
        // SAFETY: non-blocking wait for any child.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        let h = shared.hdr();
        let who = if let Some(i) = pids.iter().position(|&p| p == pid) {
            format!("task {i} (pid {pid})")
        } else if let Some(i) =
            (0..shared.ntasks).find(|&i| h.helper_pid[i].load(Ordering::Relaxed) == pid)
        {
            format!("helper of task {i} (pid {pid})")
        } else {
            format!("process {pid} started by the testcase")
        };
        shared.fail(&format!("{who} {}", describe_status(status)));
    }
}

/// A scale cell as the runner holds it between samples: what it takes to
/// start the tasks, and what earlier samples learnt. No process exists
/// outside [`Instance::sample`].
pub struct ScaleInstance<P> {
    tc: P,
    params: Params,
    settings: RunSettings,
    stats: Stats,
    /// The last sample's operations over its measured intervals.
    ops: Option<f64>,
    placement: Option<String>,
    notes: Vec<(String, String)>,
    /// The last sample's task, helper and cell process ids.
    #[cfg(test)]
    last_ids: Vec<i32>,
}

impl<P: std::ops::Deref<Target = dyn Testcase>> ScaleInstance<P> {
    /// Nothing starts here: the tasks start with each sample.
    pub fn new(tc: P, params: &Params, settings: &RunSettings) -> Self {
        ScaleInstance {
            tc,
            params: params.clone(),
            settings: settings.clone(),
            stats: Stats::default(),
            ops: None,
            placement: None,
            notes: Vec::new(),
            #[cfg(test)]
            last_ids: Vec::new(),
        }
    }
}

impl<P: std::ops::Deref<Target = dyn Testcase> + Send> ScaleInstance<P> {
    fn run(
        &mut self,
        out: &mut Vec<Measure>,
        counters: Option<&mut dyn CounterGroup>,
    ) -> anyhow::Result<()> {
        let mut cell = ScaleCell::start(&*self.tc, &self.params, &self.settings)?;
        cell.stats = std::mem::take(&mut self.stats);
        let r = cell.sample(out, counters);
        self.ops = cell.ops;
        self.placement = cell.placement();
        self.notes = cell.notes();
        self.stats = std::mem::take(&mut cell.stats);
        #[cfg(test)]
        {
            self.last_ids = tests::ids(&cell);
        }
        // Ends the cell: every task and helper is gone when drop returns.
        drop(cell);
        r
    }
}

impl<P: std::ops::Deref<Target = dyn Testcase> + Send> Instance for ScaleInstance<P> {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        self.run(out, None)
    }

    /// Counted over the measured intervals only: not the start-up, the
    /// warm-up intervals or the cleanup.
    fn sample_counted(
        &mut self,
        out: &mut Vec<Measure>,
        counters: &mut dyn CounterGroup,
    ) -> anyhow::Result<()> {
        self.run(out, Some(counters))
    }

    /// Every task's operations over the measured intervals.
    fn operations(&self) -> Option<f64> {
        self.ops
    }

    fn placement(&self) -> Option<String> {
        self.placement.clone()
    }

    fn notes(&self) -> Vec<(String, String)> {
        self.notes.clone()
    }
}

/// A running cell: its process, tasks and shared counters, for one sample.
pub struct ScaleCell {
    name: String,
    leader: libc::pid_t,
    /// The leader exited and was reaped.
    reaped: bool,
    ctrl: c_int,
    shared: Shared,
    mode: Mode,
    ntasks: usize,
    interval_ns: u64,
    warmup: u32,
    intervals: u32,
    pin: String,
    allowed: CpuSet,
    dir: PathBuf,
    started: bool,
    stats: Stats,
    /// Operations of every task over the measured intervals.
    ops: Option<f64>,
}

/// What the notes report: measured intervals and per-task extremes.
#[derive(Default)]
struct Stats {
    intervals: u64,
    len_min: f64,
    len_max: f64,
    task_min: f64,
    task_max: f64,
}

/// The warning for more tasks than allowed CPUs: they take turns on a
/// CPU, so ops/s per task falls for that reason alone.
fn oversubscribed(tasks: usize, cpus: usize) -> Option<String> {
    (cpus > 0 && tasks > cpus).then(|| {
        format!(
            "oversubscribed: {tasks} tasks on {cpus} allowed CPU(s) take turns; the curve past {cpus} tasks measures the scheduler too"
        )
    })
}

fn now_ns() -> u64 {
    crate::bench::micro::now_ns()
}

fn cstr(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_encoded_bytes()).context("path contains NUL")
}

/// A fresh private directory for the cell's files.
fn make_temp_dir(name: &str) -> anyhow::Result<PathBuf> {
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // `kbench-PID-`: the watchdog removes it if kbench is killed.
    crate::system::watch_scratch();
    let tmpl = std::env::temp_dir().join(format!("kbench-{}-{safe}-XXXXXX", std::process::id()));
    let c = cstr(&tmpl)?;
    let mut buf = c.into_bytes_with_nul();
    // SAFETY: buf is a writable NUL-terminated template.
    let p = unsafe { libc::mkdtemp(buf.as_mut_ptr() as *mut libc::c_char) };
    if p.is_null() {
        bail!(
            "mkdtemp {}: {}",
            tmpl.display(),
            std::io::Error::last_os_error()
        );
    }
    buf.pop();
    Ok(PathBuf::from(String::from_utf8_lossy(&buf).into_owned()))
}

fn pipe() -> anyhow::Result<[c_int; 2]> {
    let mut fds = [0; 2];
    // SAFETY: valid out-array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        bail!("pipe: {}", std::io::Error::last_os_error());
    }
    Ok(fds)
}

impl ScaleCell {
    /// Create the cell process and its tasks, waiting at the start line.
    pub fn start(
        tc: &dyn Testcase,
        params: &Params,
        settings: &RunSettings,
    ) -> anyhow::Result<ScaleCell> {
        let mode = match params.str("mode") {
            "threads" => Mode::Threads,
            _ => Mode::Processes,
        };
        let ntasks = params.int("tasks") as usize;
        let interval = match params.get("interval") {
            Some(_) => params.float("interval"),
            None => settings.sample_time,
        };
        let pin = params.str("pin").to_string();
        let allowed = crate::system::get_affinity().context("reading CPU affinity")?;
        let order = topology::order(&topology::read(&allowed), &pin);
        let dir = make_temp_dir(tc.name())?;
        let shared = match Shared::new(ntasks) {
            Ok(s) => s,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        let mut cell = ScaleCell {
            name: tc.name().to_string(),
            leader: 0,
            reaped: true,
            ctrl: -1,
            shared,
            mode,
            ntasks,
            interval_ns: (interval * 1e9) as u64,
            warmup: params.int("warmup") as u32,
            intervals: params.int("intervals") as u32,
            pin,
            allowed,
            dir,
            started: false,
            stats: Stats::default(),
            ops: None,
        };
        let ctrl = pipe()?;
        let ready = match pipe() {
            Ok(r) => r,
            Err(e) => {
                // SAFETY: closing fds we own.
                unsafe {
                    libc::close(ctrl[0]);
                    libc::close(ctrl[1]);
                }
                return Err(e);
            }
        };
        let ctx = Ctx {
            shared: &cell.shared as *const Shared,
            mode,
            ntasks,
            order,
            dir: cell.dir.clone(),
        };
        let kbench = getpid();
        // SAFETY: fork; the child runs leader_main, which never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            bail!("fork: {}", std::io::Error::last_os_error());
        }
        if pid == 0 {
            // The child's copy of `cell` is never dropped (leader_main
            // _exits), so its Shared pointer stays valid.
            leader_main(tc, params, &ctx, kbench, ctrl[0], ready[1]);
        }
        // SAFETY: our fds; setpgid too, so kbench can signal the group as
        // soon as fork returns (either call may win the race).
        unsafe {
            libc::setpgid(pid, pid);
            libc::close(ctrl[0]);
            libc::close(ready[1]);
        }
        cell.leader = pid;
        cell.reaped = false;
        cell.ctrl = ctrl[1];
        let r = cell.wait_ready(ready[0]);
        // SAFETY: our fd.
        unsafe { libc::close(ready[0]) };
        r?;
        Ok(cell)
    }

    fn wait_ready(&mut self, fd: c_int) -> anyhow::Result<()> {
        let mut b = 0u8;
        loop {
            // SAFETY: reading one byte into a local.
            let n = unsafe { libc::read(fd, &mut b as *mut u8 as *mut c_void, 1) };
            if n == 1 {
                break;
            }
            if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            // EOF: the cell process died or gave up.
            self.check()?;
            bail!(
                "{}: the cell process ended before its tasks started",
                self.name
            );
        }
        self.check()
    }

    /// The cell's first error, if a task failed or the cell process died.
    fn check(&mut self) -> anyhow::Result<()> {
        if let Some(msg) = self.shared.error() {
            bail!("{}: {msg}", self.name);
        }
        if !self.reaped {
            let mut status = 0;
            // SAFETY: non-blocking wait for our child.
            let r = unsafe { libc::waitpid(self.leader, &mut status, libc::WNOHANG) };
            if r == self.leader {
                self.reaped = true;
                if let Some(msg) = self.shared.error() {
                    bail!("{}: {msg}", self.name);
                }
                bail!(
                    "{}: the cell process (pid {}) {}{}",
                    self.name,
                    self.leader,
                    describe_status(status),
                    if self.mode == Mode::Threads {
                        "; in threads mode that ends every task"
                    } else {
                        ""
                    }
                );
            }
        }
        Ok(())
    }

    fn signal_group(&self, sig: c_int) {
        if self.leader > 0 {
            // SAFETY: the group is our cell's (its leader is not reaped yet,
            // so the id cannot be reused).
            unsafe { libc::killpg(self.leader, sig) };
        }
    }

    fn snapshot(&self, into: &mut Vec<u64>) {
        into.clear();
        into.extend((0..self.ntasks).map(|i| self.shared.counter(i).get()));
    }

    /// The processes of the cell whose threads must stop: the cell process
    /// (threads mode), else every task and helper.
    fn members(&self) -> Vec<libc::pid_t> {
        match self.mode {
            Mode::Threads => vec![self.leader],
            Mode::Processes => self.ids(),
        }
    }

    /// Every task and helper id (pids, or thread ids in threads mode).
    fn ids(&self) -> Vec<libc::pid_t> {
        let h = self.shared.hdr();
        (0..self.ntasks)
            .flat_map(|i| {
                [
                    h.task_pid[i].load(Ordering::Relaxed),
                    h.helper_pid[i].load(Ordering::Relaxed),
                ]
            })
            .filter(|&p| p > 0)
            .collect()
    }

    /// Wait (at most 200 ms) until no member of the cell is runnable, so
    /// the next cell is measured on idle CPUs.
    fn wait_stopped(&self) {
        let t0 = now_ns();
        for m in self.members() {
            while now_ns() - t0 < 200_000_000
                && crate::system::process_state(m) == ProcState::Running
            {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
    }

    /// True while task or helper `id` of this cell exists and is not a
    /// zombie.
    fn running(&self, id: libc::pid_t) -> bool {
        match self.mode {
            Mode::Threads => crate::system::thread_alive(self.leader, id),
            Mode::Processes => crate::system::process_state(id) != ProcState::Gone,
        }
    }

    fn sleep_until(&self, t: u64) -> anyhow::Result<()> {
        let ts = libc::timespec {
            tv_sec: (t / 1_000_000_000) as libc::time_t,
            tv_nsec: (t % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; clock_nanosleep returns the error number.
        // Not std::thread::sleep: that retries on EINTR, and EINTR is how
        // Ctrl-C reaches a sample in progress.
        let r = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        match r {
            0 => Ok(()),
            libc::EINTR => bail!("{}: interrupted by a signal", self.name),
            e => bail!("clock_nanosleep: {}", std::io::Error::from_raw_os_error(e)),
        }
    }

    /// The intervals, `counters` counting from the end of the warm-up to
    /// the last snapshot (stopped also when an interval fails).
    fn measure(
        &mut self,
        warm: u32,
        out: &mut Vec<Measure>,
        mut counters: Option<&mut dyn CounterGroup>,
    ) -> anyhow::Result<()> {
        let r = self.intervals_counted(warm, out, &mut counters);
        match counters {
            Some(c) => c.stop().map_err(anyhow::Error::from).and(r),
            None => r,
        }
    }

    fn intervals_counted(
        &mut self,
        warm: u32,
        out: &mut Vec<Measure>,
        counters: &mut Option<&mut dyn CounterGroup>,
    ) -> anyhow::Result<()> {
        let mut prev = Vec::with_capacity(self.ntasks);
        let mut cur = Vec::with_capacity(self.ntasks);
        let mut ops = 0u64;
        self.snapshot(&mut prev);
        let mut stat0 = cpu_times();
        let mut t0 = now_ns();
        let mut deadline = t0;
        for k in 0..warm + self.intervals {
            if k == warm
                && let Some(c) = counters.as_mut()
            {
                c.start()?;
            }
            deadline += self.interval_ns;
            self.sleep_until(deadline)?;
            let t1 = now_ns();
            self.snapshot(&mut cur);
            let stat1 = cpu_times();
            self.check()?;
            if k >= warm {
                let secs = (t1 - t0) as f64 / 1e9;
                let mut total = 0u64;
                let (mut lo, mut hi) = (u64::MAX, 0u64);
                for (a, b) in prev.iter().zip(&cur) {
                    let d = b.wrapping_sub(*a);
                    total += d;
                    lo = lo.min(d);
                    hi = hi.max(d);
                }
                ops += total;
                out.push(Measure {
                    metric: 0,
                    value: total as f64 / secs,
                });
                if let (Some(a), Some(b)) = (stat0, stat1) {
                    out.push(Measure {
                        metric: 1,
                        value: idle_percent(a, b),
                    });
                }
                let s = &mut self.stats;
                let (lo, hi) = (lo as f64 / secs, hi as f64 / secs);
                if s.intervals == 0 {
                    (s.len_min, s.len_max, s.task_min, s.task_max) = (secs, secs, lo, hi);
                } else {
                    s.len_min = s.len_min.min(secs);
                    s.len_max = s.len_max.max(secs);
                    s.task_min = s.task_min.min(lo);
                    s.task_max = s.task_max.max(hi);
                }
                s.intervals += 1;
            }
            std::mem::swap(&mut prev, &mut cur);
            t0 = t1;
            stat0 = stat1;
        }
        self.ops = Some(ops as f64);
        Ok(())
    }
}

impl ScaleCell {
    /// Release the start line and measure: `warmup` intervals discarded,
    /// then `intervals` pushed. Once per cell: the tasks are stopped
    /// (SIGSTOP) at the end, and the cell is then dropped.
    fn sample(
        &mut self,
        out: &mut Vec<Measure>,
        counters: Option<&mut dyn CounterGroup>,
    ) -> anyhow::Result<()> {
        self.check()?;
        if self.started {
            bail!("{}: a cell is sampled once", self.name);
        }
        let h = self.shared.hdr();
        h.go.store(1, Ordering::Release);
        futex_wake_all(&h.go);
        self.started = true;
        let r = self.measure(self.warmup, out, counters);
        self.signal_group(libc::SIGSTOP);
        self.wait_stopped();
        if r.is_err() {
            out.clear();
        }
        r
    }

    fn placement(&self) -> Option<String> {
        if self.pin == "none" {
            return None;
        }
        let h = self.shared.hdr();
        let list = |v: &[AtomicI32]| -> Vec<String> {
            v[..self.ntasks]
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .filter(|&c| c > 0)
                .map(|c| (c - 1).to_string())
                .collect()
        };
        let tasks = list(&h.task_cpu);
        let helpers = list(&h.helper_cpu);
        let mut s = format!(
            "{} cpu {}",
            if self.ntasks == 1 { "task" } else { "tasks" },
            tasks.join(",")
        );
        if !helpers.is_empty() {
            let who = if helpers.len() == 1 {
                "helper"
            } else {
                "helpers"
            };
            s.push_str(&format!(", {who} cpu {}", helpers.join(",")));
        }
        s.push_str(&format!(" ({})", self.pin));
        Some(s)
    }

    fn notes(&self) -> Vec<(String, String)> {
        let s = &self.stats;
        let mut v = vec![
            ("mode".into(), format!("{:?}", self.mode).to_lowercase()),
            ("tasks".into(), self.ntasks.to_string()),
            ("allowed cpus".into(), self.allowed.to_string()),
            (
                "interval".into(),
                format!("{} s", self.interval_ns as f64 / 1e9),
            ),
            ("warmup intervals".into(), self.warmup.to_string()),
            // What the tasks inherit from kbench, whatever was asked.
            ("aslr".into(), super::aslr::current().to_string()),
        ];
        if let Some(w) = oversubscribed(self.ntasks, self.allowed.0.len()) {
            v.push(("warning".into(), w));
        }
        if s.intervals > 0 {
            v.push((
                "interval real length".into(),
                format!(
                    "{:.6}..{:.6} s over {} intervals",
                    s.len_min, s.len_max, s.intervals
                ),
            ));
            v.push((
                "per-task ops/s".into(),
                format!(
                    "min {:.0}, max {:.0}{}",
                    s.task_min,
                    s.task_max,
                    if s.task_min > 0.0 {
                        format!(" (max/min {:.3})", s.task_max / s.task_min)
                    } else {
                        String::new()
                    }
                ),
            ));
        }
        v
    }
}

/// The machine's CPU time in ticks, (busy, idle), counted as
/// will-it-scale's runtest.py does (`system::cpu_ticks`).
fn cpu_times() -> Option<(u64, u64)> {
    crate::system::cpu_ticks()
}

/// Idle % of the machine between two readings (runtest.py's
/// `idle_fraction * 100`; 0 when no tick passed).
fn idle_percent(a: (u64, u64), b: (u64, u64)) -> f64 {
    let busy = b.0.saturating_sub(a.0);
    let idle = b.1.saturating_sub(a.1);
    if busy + idle == 0 {
        0.0
    } else {
        100.0 * idle as f64 / (busy + idle) as f64
    }
}

impl Drop for ScaleCell {
    fn drop(&mut self) {
        if !self.reaped {
            // Ask the cell process to finish (kill tasks, cleanup, exit):
            // resume it alone (tasks stay stopped in processes mode) and
            // write the request. Then wait for it, at most 3 s.
            // SAFETY: signalling and writing to our own child / pipe.
            unsafe {
                libc::kill(self.leader, libc::SIGCONT);
                libc::write(self.ctrl, b"q".as_ptr() as *const c_void, 1);
            }
            let t0 = now_ns();
            loop {
                // SAFETY: waitid with WNOWAIT leaves the zombie in place, so
                // the group id stays ours for the killpg below.
                let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
                // SAFETY: info is a siginfo_t we own; WNOWAIT reaps nothing.
                let r = unsafe {
                    libc::waitid(
                        libc::P_PID,
                        self.leader as libc::id_t,
                        &mut info,
                        libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
                    )
                };
                // SAFETY: reading the pid of a filled siginfo.
                if r != 0 || unsafe { info.si_pid() } == self.leader {
                    break;
                }
                if now_ns() - t0 > 3_000_000_000 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            // Whatever is left in the group (stragglers, processes a C
            // testcase forked) dies now; then reap the cell process.
            self.signal_group(libc::SIGKILL);
            // SAFETY: blocking reap of our own child, which is dead or dying.
            unsafe { libc::waitpid(self.leader, std::ptr::null_mut(), 0) };
            self.reaped = true;
        }
        // SIGKILL is asynchronous: return only when every task and helper
        // is gone (or a zombie), at most 2 s, so that "the cell is over"
        // means no party of it still runs.
        let t0 = now_ns();
        for id in self.ids() {
            while self.running(id) && now_ns() - t0 < 2_000_000_000 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        if self.ctrl >= 0 {
            // SAFETY: our fd, closed once.
            unsafe { libc::close(self.ctrl) };
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    //! These run beside timing-sensitive unit tests of other modules, so
    //! their testcase sleeps instead of burning CPU; the real testcases
    //! and failures are exercised by tests/scale.rs through the binary
    //! (a failing task builds an error with a backtrace, which in a fork
    //! of this multi-threaded test process could wait forever on a lock
    //! another test's thread held; kbench forks while single-threaded).

    use super::*;

    #[test]
    fn more_tasks_than_allowed_cpus_is_a_warning() {
        assert_eq!(oversubscribed(2, 2), None);
        assert_eq!(oversubscribed(1, 0), None);
        let w = oversubscribed(2, 1).unwrap();
        assert!(
            w.starts_with("oversubscribed: 2 tasks on 1 allowed CPU(s)"),
            "{w}"
        );
    }

    /// 1 ms naps counted as operations, with a napping helper per task.
    struct Nap;
    impl Testcase for Nap {
        fn name(&self) -> &str {
            "nap"
        }
        fn description(&self) -> &str {
            "sleeps 1 ms per operation"
        }
        fn prepare(&self, _: &Prep) -> anyhow::Result<Box<dyn Body>> {
            Ok(Box::new(|t: &Task| -> anyhow::Result<Infallible> {
                t.spawn_helper(|| {
                    loop {
                        std::thread::sleep(std::time::Duration::from_secs(1));
                    }
                })?;
                loop {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                    t.counter.add(1);
                }
            }))
        }
    }

    fn params(tc: &'static dyn Testcase, mode: &str) -> Params {
        let given = vec![
            ("interval".to_string(), toml::Value::Float(0.05)),
            ("warmup".to_string(), toml::Value::Integer(0)),
            ("tasks".to_string(), toml::Value::Integer(2)),
            ("mode".to_string(), toml::Value::String(mode.into())),
        ];
        Params::resolve(&super::super::Scale(tc), &given).unwrap()
    }

    const SETTINGS: RunSettings = RunSettings {
        sample_time: 0.05,
        process: None,
    };

    /// The ids of a cell's tasks, helpers and cell process.
    pub(super) fn ids(cell: &ScaleCell) -> Vec<i32> {
        let h = cell.shared.hdr();
        let mut ids: Vec<i32> = (0..cell.ntasks)
            .flat_map(|i| {
                [
                    h.task_pid[i].load(Ordering::Relaxed),
                    h.helper_pid[i].load(Ordering::Relaxed),
                ]
            })
            .collect();
        ids.push(cell.leader);
        ids
    }

    /// Which of a cell's [`ids`] (tasks, helpers, then the cell process)
    /// still exist after the cell ended.
    fn outlived(mode: &str, ids: &[i32]) -> Vec<i32> {
        let (&leader, members) = ids.split_last().unwrap();
        let mut alive: Vec<i32> = members
            .iter()
            .copied()
            .filter(|&id| match mode {
                "threads" => crate::system::thread_alive(leader, id),
                _ => crate::system::process_state(id) != ProcState::Gone,
            })
            .collect();
        if crate::system::process_state(leader) != ProcState::Gone {
            alive.push(leader);
        }
        alive
    }

    #[test]
    fn a_cell_counts_places_helpers_stops_and_cleans_up_in_both_modes() {
        for mode in ["processes", "threads"] {
            let mut cell = ScaleCell::start(&Nap, &params(&Nap, mode), &SETTINGS).unwrap();
            let mut out = Vec::new();
            cell.sample(&mut out, None).unwrap();
            // Each interval: ops/s, then the machine's idle %.
            let (ops, idle): (Vec<Measure>, Vec<Measure>) = out.iter().partition(|m| m.metric == 0);
            assert_eq!((ops.len(), idle.len()), (1, 1), "{mode}: {out:?}");
            assert!(idle.iter().all(|m| (0.0..=100.0).contains(&m.value)));
            // 2 tasks napping 1 ms: at most 2000 ops/s; some counted.
            assert!(ops.iter().all(|m| m.value > 0.0), "{mode}: {out:?}");
            assert!(ops.iter().all(|m| m.value <= 2100.0), "{mode}: {out:?}");
            assert!(cell.notes().iter().any(|(k, _)| k == "per-task ops/s"));
            let p = cell.placement().unwrap();
            assert!(
                p.starts_with("tasks cpu") && p.contains("helpers cpu"),
                "{p}"
            );
            // Stopped after its sample: the counters do not move.
            let (mut a, mut b) = (Vec::new(), Vec::new());
            cell.snapshot(&mut a);
            std::thread::sleep(std::time::Duration::from_millis(30));
            cell.snapshot(&mut b);
            assert_eq!(a, b, "{mode}: tasks ran after the sample");
            // A cell is sampled once.
            assert!(cell.sample(&mut out, None).is_err());
            let ids = ids(&cell);
            assert!(ids.iter().all(|&i| i > 0), "{mode}: {ids:?}");
            let dir = cell.dir.clone();
            assert!(dir.exists());
            drop(cell);
            assert_eq!(outlived(mode, &ids), [0; 0], "{mode}: outlived the cell");
            assert!(!dir.exists());
        }
    }

    #[test]
    fn an_instance_holds_no_process_between_samples() {
        for mode in ["processes", "threads"] {
            let mut inst =
                ScaleInstance::new(&Nap as &dyn Testcase, &params(&Nap, mode), &SETTINGS);
            assert!(inst.placement().is_none());
            let mut out = Vec::new();
            let mut seen = Vec::new();
            for _ in 0..3 {
                inst.sample(&mut out).unwrap();
                // Every sample ended its cell: its cell process, tasks and
                // helpers are gone when the sample returns.
                let ids = inst.last_ids.clone();
                assert_eq!(ids.len(), 5, "{mode}: {ids:?}");
                assert!(ids.iter().all(|&i| i > 0), "{mode}: {ids:?}");
                assert_eq!(outlived(mode, &ids), [0; 0], "{mode}: {ids:?}");
                seen.extend(ids);
            }
            // Each sample started its own processes.
            seen.sort();
            seen.dedup();
            assert!(seen.len() > 5, "{mode}: {seen:?}");
            let ops: Vec<&Measure> = out.iter().filter(|m| m.metric == 0).collect();
            assert_eq!(ops.len(), 3, "{mode}: {out:?}");
            // What the samples learnt stays: placement and the notes over
            // all three samples' intervals.
            assert!(inst.placement().unwrap().contains("helpers cpu"));
            let notes = inst.notes();
            let len = notes
                .iter()
                .find(|(k, _)| k == "interval real length")
                .unwrap();
            assert!(len.1.ends_with("over 3 intervals"), "{mode}: {notes:?}");
        }
    }

    #[test]
    fn idle_is_counted_as_runtest_py_does() {
        let (a, b) = ((150, 850), (300, 1000));
        // 150 busy and 150 idle (incl. iowait) ticks in between.
        assert_eq!(idle_percent(a, b), 50.0);
        assert_eq!(idle_percent(a, a), 0.0);
        let now = cpu_times().unwrap();
        assert!(now.0 + now.1 > 0);
    }

    #[test]
    fn every_testcase_has_the_engine_params() {
        for b in crate::bench::BENCHES
            .iter()
            .filter(|b| b.kind() == crate::bench::Kind::Scale)
        {
            for e in super::super::ENGINE_PARAMS {
                assert!(b.params().iter().any(|p| p.name == e.name), "{}", b.name());
            }
        }
    }
}
