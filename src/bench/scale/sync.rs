//! pthread mutex testcases after will-it-scale's pthread_mutex1-5: lock
//! and unlock in a loop, the mutex (and what is updated under it) either
//! shared by the cell or private to the task. The loops are C
//! (`loops.c`): one takes a few nanoseconds, and only the C compiler's
//! own code reacts to the CPU as will-it-scale's does. The cell's mutex is
//! a C global, reset in `prepare` before the tasks exist: threads share
//! it, and each forked process gets its own copy, exactly as in
//! will-it-scale's processes mode (so the "contended" cases are
//! uncontended there).

use super::loops::{self, body};
use super::testcase;

/// `prepare` of the testcases whose tasks share the cell's mutex.
fn shared_mutex() {
    // SAFETY: runs in the cell process before any task uses the mutex.
    unsafe { loops::kbench_mutex_prepare() };
}

testcase!(
    /// will-it-scale pthread_mutex1: one mutex for the cell.
    PthreadMutex1,
    "pthread_mutex1",
    "pthread_mutex_lock()+unlock() of one mutex shared by the threads (each process has its own copy): futex-based lock contention",
    prepare = |_| {
        shared_mutex();
        // SAFETY: the task's counter, valid while the task runs.
        Ok(body("pthread_mutex1", |ops| unsafe { loops::kbench_mutex_shared(ops) }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex2: a mutex on each task's stack.
    PthreadMutex2,
    "pthread_mutex2",
    "pthread_mutex_lock()+unlock() of a task-private mutex: the uncontended fast path (user-space atomics)",
    // SAFETY: as above.
    prepare = |_| Ok(body("pthread_mutex2", |ops| unsafe { loops::kbench_mutex_private(ops) }))
);

testcase!(
    /// will-it-scale pthread_mutex3: the shared mutex guards a shared
    /// counter (cache line bouncing with the lock in threads mode).
    PthreadMutex3,
    "pthread_mutex3",
    "pthread_mutex_lock(), increment of a shared variable, unlock(): lock and data contention",
    prepare = |_| {
        shared_mutex();
        // SAFETY: as above.
        Ok(body("pthread_mutex3", |ops| unsafe { loops::kbench_mutex_shared_update(ops) }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex4: the shared mutex guards a variable
    /// on each task's stack.
    PthreadMutex4,
    "pthread_mutex4",
    "pthread_mutex_lock(), increment of a task-local variable, unlock(): lock contention only",
    prepare = |_| {
        shared_mutex();
        // SAFETY: as above.
        Ok(body("pthread_mutex4", |ops| unsafe { loops::kbench_mutex_local_update(ops) }))
    }
);

testcase!(
    /// will-it-scale pthread_mutex5: the shared mutex guards a
    /// thread-local variable.
    PthreadMutex5,
    "pthread_mutex5",
    "pthread_mutex_lock(), increment of a thread-local variable, unlock(): lock contention plus a TLS access",
    prepare = |_| {
        shared_mutex();
        // SAFETY: as above.
        Ok(body("pthread_mutex5", |ops| unsafe { loops::kbench_mutex_tls_update(ops) }))
    }
);
