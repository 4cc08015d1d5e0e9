//! Testcases that are one cheap system call (or library call) per
//! operation: kernel entry/exit and per-task or shared kernel objects.
//! Each follows the will-it-scale file of the same name.

use std::convert::Infallible;

use super::{Body, Task, check, testcase};

fn body(f: impl Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(f)
}

testcase!(
    /// will-it-scale getppid1: the loop is exactly `getppid(); count++`
    /// (no error check, as in the original), the body kbench's fidelity
    /// check compares with a C loop.
    Getppid1,
    "getppid1",
    "getppid() in a loop: a bare kernel entry and exit; scales perfectly unless entry/exit touches shared state",
    prepare = |_| {
        Ok(body(|t| loop {
            // SAFETY: no preconditions.
            unsafe { libc::getppid() };
            t.counter.add(1);
        }))
    }
);

testcase!(
    /// will-it-scale sched_yield: yield with nothing else runnable on the
    /// CPU (when tasks <= CPUs and pinned).
    SchedYield,
    "sched_yield",
    "sched_yield() in a loop: a scheduler round trip with nothing else to run",
    prepare = |_| {
        Ok(body(|t| loop {
            // SAFETY: no preconditions.
            unsafe { libc::sched_yield() };
            t.counter.add(1);
        }))
    }
);

/// futex(2) on a word on the task's stack, which no one waits on (WAKE)
/// or whose value never matches (WAIT returns EAGAIN at once). FreeBSD runs
/// the same operations of _umtx_op(2): UMTX_OP_WAKE and UMTX_OP_WAIT_UINT,
/// and their _PRIVATE forms.
fn futex_body(wait: bool, private: bool) -> Box<dyn Body> {
    let op = crate::system::futex_op(wait, private);
    body(move |t| {
        loop {
            let word: u32 = 0;
            // SAFETY: a valid futex word on our stack; WAIT with val 1 != 0
            // returns immediately, WAKE wakes no one.
            unsafe { crate::system::futex(&word, op, 1) };
            t.counter.add(1);
        }
    })
}

testcase!(
    /// will-it-scale futex1: FUTEX_WAKE on a shared (non-private) futex: the
    /// kernel hashes the key through the page (get_futex_key).
    Futex1,
    "futex1",
    "futex(FUTEX_WAKE) with no waiter, shared futex: futex key lookup and hash bucket",
    prepare = |_| Ok(futex_body(false, false))
);
testcase!(
    /// will-it-scale futex2: FUTEX_WAIT whose value does not match.
    Futex2,
    "futex2",
    "futex(FUTEX_WAIT) whose value does not match, shared futex: returns EAGAIN at once",
    prepare = |_| Ok(futex_body(true, false))
);
testcase!(
    /// will-it-scale futex3: as futex1 with FUTEX_PRIVATE_FLAG.
    Futex3,
    "futex3",
    "futex(FUTEX_WAKE_PRIVATE) with no waiter: private futex key, no page lookup",
    prepare = |_| Ok(futex_body(false, true))
);
testcase!(
    /// will-it-scale futex4: as futex2 with FUTEX_PRIVATE_FLAG.
    Futex4,
    "futex4",
    "futex(FUTEX_WAIT_PRIVATE) whose value does not match: private key, returns at once",
    prepare = |_| Ok(futex_body(true, true))
);

extern "C" fn on_usr1(_: libc::c_int) {}

testcase!(
    /// will-it-scale signal1: each task raises SIGUSR1 at itself with an
    /// empty handler. In threads mode the handler is process-wide and
    /// `raise` signals the calling thread, as in the original.
    Signal1,
    "signal1",
    "raise(SIGUSR1) with an empty handler: signal generation, delivery and sigreturn",
    prepare = |_| {
        Ok(body(|t| {
            // SAFETY: installing a no-op handler.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = on_usr1 as *const () as usize;
                libc::sigemptyset(&mut sa.sa_mask);
                check(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()) as i64, "sigaction")?;
            }
            loop {
                // SAFETY: SIGUSR1 has a handler.
                unsafe { libc::raise(libc::SIGUSR1) };
                t.counter.add(1);
            }
        }))
    }
);

testcase!(
    /// will-it-scale posix_semaphore1: an uncontended process-private
    /// semaphore per task (on its stack): sem_wait + sem_post, which glibc
    /// does in user space with atomics. A few nanoseconds per iteration,
    /// so the loop is C (`loops.c`), as will-it-scale's compiler builds it.
    PosixSemaphore1,
    "posix_semaphore1",
    "sem_wait()+sem_post() on a task-private POSIX semaphore: user-space atomics, no kernel entry",
    // SAFETY: the task's counter, valid while the task runs.
    prepare = |_| Ok(super::loops::body("sem_init", |ops| unsafe {
        super::loops::kbench_semaphore(ops)
    }))
);

testcase!(
    /// will-it-scale eventfd1: write then read 8 bytes on a task-private
    /// eventfd.
    Eventfd1,
    "eventfd1",
    "write()+read() of 8 bytes on a task-private eventfd: fd lookup and a wait-queue lock",
    prepare = |_| {
        Ok(body(|t| {
            // SAFETY: plain syscalls on our own fd and local buffers.
            let fd = check(unsafe { libc::eventfd(0, 0) } as i64, "eventfd")? as i32;
            let w: u64 = 1;
            let mut r: u64 = 0;
            loop {
                // SAFETY: fd is our eventfd; w is 8 bytes we own.
                let n = unsafe { libc::write(fd, &w as *const u64 as *const _, 8) };
                check(n as i64, "eventfd write")?;
                // SAFETY: r is 8 bytes we own.
                let n = unsafe { libc::read(fd, &mut r as *mut u64 as *mut _, 8) };
                check(n as i64, "eventfd read")?;
                t.counter.add(1);
            }
        }))
    }
);
