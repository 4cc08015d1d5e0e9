//! pthread mutex testcases after will-it-scale's pthread_mutex1-5: lock
//! and unlock in a loop, the mutex (and what is updated under it) either
//! shared by the cell or private to the task. A "global" of the C files is
//! made in `prepare`, before the tasks exist: threads share it, and each
//! forked process gets its own copy, exactly as a C global behaves in
//! will-it-scale's processes mode (so the "contended" cases are
//! uncontended there).

use std::cell::{Cell, UnsafeCell};
use std::convert::Infallible;

use super::{Body, Task, plt, testcase};

/// A pthread mutex at a fixed address (never moved once created).
struct Mutex(UnsafeCell<libc::pthread_mutex_t>);

// SAFETY: pthread mutexes are made to be used from several threads.
unsafe impl Sync for Mutex {}
unsafe impl Send for Mutex {}

impl Mutex {
    fn new() -> Box<Mutex> {
        Box::new(Mutex(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)))
    }

    /// Through gcc's call shape (`super::plt`): these loops take ~2.5 ns
    /// and the shape alone moved them by up to 20%.
    #[inline(always)]
    fn lock(&self) {
        // SAFETY: an initialised mutex that never moves.
        unsafe { plt::pthread_mutex_lock(self.0.get()) };
    }

    #[inline(always)]
    fn unlock(&self) {
        // SAFETY: locked by this thread.
        unsafe { plt::pthread_mutex_unlock(self.0.get()) };
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
