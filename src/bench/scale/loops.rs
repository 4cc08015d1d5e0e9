//! The hot loops that are C (`loops.c`, compiled by `build.rs` with the
//! system C compiler and will-it-scale's flags): those whose iteration is a
//! few nanoseconds, where the instruction shape alone moves the result.
//! This module declares them and turns one into a [`Body`].
//!
//! Why C and not Rust made to look like gcc's output: rustc calls a shared
//! library's function through the GOT where gcc calls a PLT stub, and
//! increments memory with `incq` where gcc uses `addq $1`. On an Intel
//! Xeon guest each difference alone moved `pthread_mutex1` by 9-20% and
//! `malloc2` by 5%; stubs and an `addq` in inline asm matched will-it-scale
//! there, and read 1.12-1.34 of it in processes mode on an AMD EPYC guest.
//! The reaction to an instruction choice is the CPU's; only the same
//! compiler's code reacts the same way on every CPU.

use std::convert::Infallible;
use std::ffi::c_int;

use super::{Body, Task};

/// A task's operation counter as the C loops see it.
type Ops = *mut u64;

unsafe extern "C" {
    /// Re-initialises the cell's mutex and the variable it guards.
    pub fn kbench_mutex_prepare();
    pub fn kbench_mutex_shared(ops: Ops) -> c_int;
    pub fn kbench_mutex_private(ops: Ops) -> c_int;
    pub fn kbench_mutex_shared_update(ops: Ops) -> c_int;
    pub fn kbench_mutex_local_update(ops: Ops) -> c_int;
    pub fn kbench_mutex_tls_update(ops: Ops) -> c_int;
    pub fn kbench_malloc_free(ops: Ops, size: usize) -> c_int;
    pub fn kbench_semaphore(ops: Ops) -> c_int;
    pub fn kbench_brk_here(ops: Ops) -> c_int;
    pub fn kbench_brk_above_page(ops: Ops) -> c_int;
}

/// A body running `f` on the task's counter; `f` returns only on failure,
/// with an errno value, which the task reports as `what: <error>`.
pub fn body(what: &'static str, f: impl Fn(Ops) -> c_int + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(move |t: &Task| -> anyhow::Result<Infallible> {
        let errno = f(t.counter.as_ptr());
        Err(anyhow::anyhow!(
            "{what}: {}",
            std::io::Error::from_raw_os_error(errno)
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_loop_returns_its_errno_having_counted_nothing() {
        // The loops themselves run in the integration tests (every
        // testcase, both modes); they never return, so not here.
        let mut n = 0u64;
        // SAFETY: a valid counter; no allocator can give half the address
        // space, so the loop returns at once.
        let e = unsafe { kbench_malloc_free(&mut n, usize::MAX / 2) };
        assert_eq!(e, libc::ENOMEM);
        assert_eq!(n, 0);
    }
}
