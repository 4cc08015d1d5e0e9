//! pthread mutex testcases after will-it-scale's pthread_mutex1-5: lock
//! and unlock in a loop, the mutex (and what is updated under it) either
//! shared by the cell or private to the task. A "global" of the C files is
//! made in `prepare`, before the tasks exist: threads share it, and each
//! forked process gets its own copy, exactly as a C global behaves in
//! will-it-scale's processes mode (so the "contended" cases are
//! uncontended there).

use std::cell::{Cell, UnsafeCell};
use std::convert::Infallible;

use super::{Body, Task, testcase};

/// A pthread mutex at a fixed address (never moved once created).
struct Mutex(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: pthread mutexes are made to be used from several threads.
unsafe impl Sync for Mutex {}
unsafe impl Send for Mutex {}

// The lock and unlock calls are direct calls to a stub that jumps through
// the GOT: the shape of a C program's call through its PLT. rustc calls a
// shared library's functions through the GOT instead (`call *%reg`, the
// address hoisted into a register), and for this ~2.5 ns loop the call's
// shape alone moves the result: will-it-scale's own pthread_mutex1.c with
// its main.c, built with `-fno-plt` (rustc's shape), read 327-346 M ops/s
// in processes mode against 406-412 M built as usual, alternately; kbench
// with rustc's calls read 319-345 M. (An `extern "C"` declaration of the
// stub alone is not enough: rustc reaches it through the GOT too, 257 M.)
// The stubs are global (one codegen unit defines them, others call them)
// and hidden (never exported, so the call stays direct).
#[cfg(target_arch = "x86_64")]
std::arch::global_asm!(
    ".pushsection .text.kbench_plt,\"ax\",@progbits",
    ".p2align 6",
    ".globl kbench_plt_pthread_mutex_lock",
    ".hidden kbench_plt_pthread_mutex_lock",
    "kbench_plt_pthread_mutex_lock:",
    "jmp *pthread_mutex_lock@GOTPCREL(%rip)",
    ".p2align 6",
    ".globl kbench_plt_pthread_mutex_unlock",
    ".hidden kbench_plt_pthread_mutex_unlock",
    "kbench_plt_pthread_mutex_unlock:",
    "jmp *pthread_mutex_unlock@GOTPCREL(%rip)",
    ".popsection",
    options(att_syntax)
);

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn kbench_plt_pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> libc::c_int;
    fn kbench_plt_pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> libc::c_int;
}

/// `f(m)` as C calls a libc function: a direct call into a PLT-like stub.
#[cfg(target_arch = "x86_64")]
macro_rules! plt_call {
    ($f:ident, $m:expr) => {
        // SAFETY: a call of a C function of one pointer argument under the
        // C ABI (clobber_abi), the stack aligned for a call (no `nostack`).
        unsafe {
            std::arch::asm!("call {f}", f = sym $f, in("rdi") $m, clobber_abi("C"))
        }
    };
}

impl Mutex {
    fn new() -> Box<Mutex> {
        Box::new(Mutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)))
    }

    #[inline(always)]
    fn lock(&self) {
        // An initialised mutex that never moves.
        #[cfg(target_arch = "x86_64")]
        plt_call!(kbench_plt_pthread_mutex_lock, self.0.get());
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above.
        unsafe {
            libc::pthread_mutex_lock(self.0.get())
        };
    }

    #[inline(always)]
    fn unlock(&self) {
        // Locked by this thread.
        #[cfg(target_arch = "x86_64")]
        plt_call!(kbench_plt_pthread_mutex_unlock, self.0.get());
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: as above.
        unsafe {
            libc::pthread_mutex_unlock(self.0.get())
        };
    }
}

/// A counter shared like a C global: updated under the mutex.
struct Shared(UnsafeCell<u64>);
// SAFETY: only written under the mutex.
unsafe impl Sync for Shared {}

/// Increment through a pointer as the C code's `val++` does: gcc's one
/// `addq $1, (mem)` each time, not kept in a register across the opaque
/// lock calls either (which C does not do).
#[inline(always)]
fn bump(p: *mut u64) {
    // SAFETY: p is valid and aligned, and only this thread writes it (under
    // the lock, or it is the thread's own).
    unsafe { super::add_in_place(p, 1) };
}

fn body(f: impl Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(f)
}

testcase!(
    /// will-it-scale pthread_mutex1: one mutex for the cell.
    PthreadMutex1,
    "pthread_mutex1",
    "pthread_mutex_lock()+unlock() of one mutex shared by the threads (each process has its own copy): futex-based lock contention",
    prepare = |_| {
        let m = Mutex::new();
        Ok(body(move |t| loop {
            m.lock();
            m.unlock();
            t.counter.add(1);
        }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex2: a mutex on each task's stack.
    PthreadMutex2,
    "pthread_mutex2",
    "pthread_mutex_lock()+unlock() of a task-private mutex: the uncontended fast path (user-space atomics)",
    prepare = |_| {
        Ok(body(|t| {
            // On the task's stack, as in the C file (heap mutexes of two
            // threads can share a cache line).
            let m = Mutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER));
            loop {
                m.lock();
                m.unlock();
                t.counter.add(1);
            }
        }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex3: the shared mutex guards a shared
    /// counter (cache line bouncing with the lock in threads mode).
    PthreadMutex3,
    "pthread_mutex3",
    "pthread_mutex_lock(), increment of a shared variable, unlock(): lock and data contention",
    prepare = |_| {
        let m = Mutex::new();
        let val = Box::new(Shared(UnsafeCell::new(0)));
        Ok(body(move |t| loop {
            m.lock();
            bump(val.0.get());
            m.unlock();
            t.counter.add(1);
        }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex4: the shared mutex guards a variable
    /// on each task's stack.
    PthreadMutex4,
    "pthread_mutex4",
    "pthread_mutex_lock(), increment of a task-local variable, unlock(): lock contention only",
    prepare = |_| {
        let m = Mutex::new();
        Ok(body(move |t| {
            let mut val = 0u64;
            loop {
                m.lock();
                bump(&mut val);
                m.unlock();
                t.counter.add(1);
            }
        }))
    }
);

thread_local! {
    static TLS_VAL: Cell<u64> = const { Cell::new(0) };
}

testcase!(
    /// will-it-scale pthread_mutex5: the shared mutex guards a
    /// thread-local variable.
    PthreadMutex5,
    "pthread_mutex5",
    "pthread_mutex_lock(), increment of a thread-local variable, unlock(): lock contention plus a TLS access",
    prepare = |_| {
        let m = Mutex::new();
        Ok(body(move |t| loop {
            m.lock();
            TLS_VAL.with(|v| bump(v.as_ptr()));
            m.unlock();
            t.counter.add(1);
        }))
    }
);

#[cfg(test)]
mod tests {
    use super::Mutex;

    #[test]
    fn the_plt_style_calls_lock_and_unlock_the_mutex() {
        let m = Mutex::new();
        m.lock();
        // SAFETY: an initialised mutex; trylock of a locked normal mutex
        // fails with EBUSY without blocking.
        assert_eq!(
            unsafe { libc::pthread_mutex_trylock(m.0.get()) },
            libc::EBUSY
        );
        m.unlock();
        // SAFETY: as above; now it is free, so trylock takes it.
        assert_eq!(unsafe { libc::pthread_mutex_trylock(m.0.get()) }, 0);
        // SAFETY: locked by this thread just above.
        unsafe { libc::pthread_mutex_unlock(m.0.get()) };
        // A loop of calls keeps the stack and registers intact.
        let mut n = 0u64;
        for _ in 0..1000 {
            m.lock();
            n += 1;
            m.unlock();
        }
        assert_eq!(n, 1000);
    }
}
