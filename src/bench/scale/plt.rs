//! libc calls in the shape gcc gives a C program: a direct `call` to a
//! small stub that jumps through the GOT (what a PLT entry is), where rustc
//! calls a shared library's function through the GOT itself (`call *%reg`,
//! the address hoisted into a register). For most testcases one extra or
//! one fewer jump per call is lost in a system call; for the few whose loop
//! is a handful of nanoseconds the shape alone moves the result, in either
//! direction, so those call libc through here to measure what
//! will-it-scale's gcc-built binaries measure:
//!
//! - `pthread_mutex1.c` and its `main.c` built with `-fno-plt` (rustc's
//!   shape) read 327-346 M ops/s in processes mode against 396-412 M as its
//!   Makefile builds them (with the PLT), alternately: 2.5 ns per
//!   lock+unlock.
//! - `malloc2.c` (malloc+free of 1 kB) the other way: 133-134 M ops/s with
//!   `-fno-plt`, 125-127 M with the PLT, and kbench's built-in with rustc's
//!   calls 133-134 M.
//!
//! The stubs are global (one codegen unit defines them, others call them)
//! and hidden (never exported, so the call to them stays direct). An
//! `extern "C"` declaration of a stub is not enough on its own: rustc then
//! reaches the stub through the GOT too (257 M for `pthread_mutex1`), hence
//! the `call` in inline asm.

#[cfg(target_arch = "x86_64")]
macro_rules! stubs {
    ($($f:literal),* $(,)?) => {
        std::arch::global_asm!(
            ".pushsection .text.kbench_plt,\"ax\",@progbits",
            $(
                ".p2align 4",
                concat!(".globl kbench_plt_", $f),
                concat!(".hidden kbench_plt_", $f),
                concat!("kbench_plt_", $f, ":"),
                concat!("jmp *", $f, "@GOTPCREL(%rip)"),
            )*
            ".popsection",
            options(att_syntax)
        );
    };
}

#[cfg(target_arch = "x86_64")]
stubs!(
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "malloc",
    "free"
);

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    fn kbench_plt_pthread_mutex_lock();
    fn kbench_plt_pthread_mutex_unlock();
    fn kbench_plt_malloc();
    fn kbench_plt_free();
}

/// `f(a)` for a C function of one pointer-sized argument, through its
/// stub; the value of `rax` afterwards.
#[cfg(target_arch = "x86_64")]
macro_rules! call1 {
    ($stub:ident, $a:expr) => {{
        let ret: usize;
        // SAFETY (of the asm): a call of a C function under the C ABI
        // (clobber_abi: every caller-saved register may change), the
        // stack aligned for a call (no `nostack`); the caller vouches for
        // the function's own contract.
        unsafe {
            std::arch::asm!(
                "call {f}",
                f = sym $stub,
                inlateout("rdi") $a => _,
                lateout("rax") ret,
                clobber_abi("C"),
            )
        };
        ret
    }};
}

/// A wrapper `name(m)` of a `pthread_mutex_*` function of one mutex,
/// calling it through `stub`.
macro_rules! mutex_call {
    ($name:ident, $stub:ident) => {
        #[doc = concat!("`", stringify!($name), "(m)` through its stub.")]
        ///
        /// # Safety
        #[doc = concat!("As for `libc::", stringify!($name), "`.")]
        #[inline(always)]
        pub unsafe fn $name(m: *mut libc::pthread_mutex_t) -> libc::c_int {
            #[cfg(target_arch = "x86_64")]
            return call1!($stub, m as usize) as libc::c_int;
            #[cfg(not(target_arch = "x86_64"))]
            // SAFETY: the caller's promise.
            unsafe {
                libc::$name(m)
            }
        }
    };
}

mutex_call!(pthread_mutex_lock, kbench_plt_pthread_mutex_lock);
mutex_call!(pthread_mutex_unlock, kbench_plt_pthread_mutex_unlock);

/// `malloc(n)`. The compiler cannot see through the call, so a
/// malloc/free pair through here is never removed.
#[inline(always)]
pub fn malloc(n: usize) -> *mut libc::c_void {
    #[cfg(target_arch = "x86_64")]
    return call1!(kbench_plt_malloc, n) as *mut libc::c_void;
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: malloc has no precondition.
    unsafe {
        libc::malloc(n)
    }
}

/// `free(p)`.
///
/// # Safety
/// As for `libc::free`: `p` is null or from `malloc` and not yet freed.
#[inline(always)]
pub unsafe fn free(p: *mut libc::c_void) {
    #[cfg(target_arch = "x86_64")]
    call1!(kbench_plt_free, p as usize);
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's promise.
    unsafe {
        libc::free(p)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn calls_through_the_stubs_reach_libc() {
        let mut m = libc::PTHREAD_MUTEX_INITIALIZER;
        // SAFETY: an initialised mutex on this stack, used by this thread.
        unsafe {
            assert_eq!(super::pthread_mutex_lock(&mut m), 0);
            assert_eq!(libc::pthread_mutex_trylock(&mut m), libc::EBUSY);
            assert_eq!(super::pthread_mutex_unlock(&mut m), 0);
            assert_eq!(libc::pthread_mutex_trylock(&mut m), 0);
            libc::pthread_mutex_unlock(&mut m);
        }
        // Many calls keep the stack and the callee-saved registers intact.
        let mut kept = Vec::new();
        for i in 0..1000usize {
            let p = super::malloc(64 + i).cast::<u8>();
            assert!(!p.is_null());
            // SAFETY: 64 + i fresh bytes.
            unsafe { p.write_bytes(i as u8, 64 + i) };
            // SAFETY: just written.
            assert_eq!(unsafe { *p.add(63 + i) }, i as u8);
            if i % 2 == 0 {
                kept.push(p);
            } else {
                // SAFETY: from malloc, freed once.
                unsafe { super::free(p.cast()) };
            }
        }
        for p in kept {
            // SAFETY: from malloc, freed once.
            unsafe { super::free(p.cast()) };
        }
    }
}
