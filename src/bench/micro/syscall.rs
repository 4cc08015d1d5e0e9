//! Syscall micro-benchmarks: the cheapest round trips into the kernel.
//!
//! `getppid` is the classic (FreeBSD syscall_timing, will-it-scale
//! getppid1): it cannot be cached by libc, so every call enters the kernel
//! and the cost is dominated by entry/exit, including mitigations such as
//! PTI (page-table switch per entry). `null-syscall` makes the same call
//! through `syscall(2)` to bypass any libc wrapper. `clock-gettime` and
//! `gettimeofday` normally never enter the kernel (vDSO), which makes them
//! a reference point: a mitigation that changes them changed something else.

use std::hint::black_box;

use crate::bench::micro::{CPU_PARAM, LoopInstance};
use crate::bench::{Instance, ParamDef, Params, RunSettings};

const PARAMS: &[ParamDef] = &[CPU_PARAM];

fn cpu_of(p: &Params) -> Option<usize> {
    p.opt_int("cpu").map(|c| c as usize)
}

/// Define a syscall benchmark: a unit struct, its description, and the
/// expression evaluated once per iteration.
macro_rules! syscall_bench {
    ($ty:ident, $name:literal, $desc:literal, $op:expr) => {
        pub struct $ty;

        super::micro! {
            $ty, $name,
            $desc,
            params = PARAMS,
            metrics = super::NS_PER_OP;
            fn instantiate(
                &self,
                p: &Params,
                s: &RunSettings,
            ) -> anyhow::Result<Box<dyn Instance>> {
                let op = || {
                    black_box($op);
                };
                Ok(Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)))
            }
        }
    };
}

// SAFETY (all below): these calls take no pointers or only valid ones and
// cannot fail in a way that matters here.
syscall_bench!(
    Getppid,
    "getppid",
    "getppid(2) through libc: a full kernel entry and exit that no libc caches; the cost of a system call including mitigations (PTI, retpolines)",
    // SAFETY: no arguments; no memory is touched.
    unsafe { libc::getppid() }
);
syscall_bench!(
    Getpid,
    "getpid",
    "getpid(2) through libc (glibc no longer caches it): kernel entry and exit",
    // SAFETY: no arguments; no memory is touched.
    unsafe { libc::getpid() }
);
syscall_bench!(
    Getuid,
    "getuid",
    "getuid(2) through libc: kernel entry and exit reading the task's credentials",
    // SAFETY: no arguments; no memory is touched.
    unsafe { libc::getuid() }
);
syscall_bench!(
    NullSyscall,
    "null-syscall",
    "raw syscall(SYS_getppid), bypassing libc's wrapper: the bare cost of entering and leaving the kernel",
    crate::system::raw_getppid()
);
syscall_bench!(
    ClockGettime,
    "clock-gettime",
    "clock_gettime(CLOCK_MONOTONIC) through the vDSO: normally no kernel entry; a syscall-free reference (slow if the clocksource is not vDSO-capable)",
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a timespec we own.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_nsec
    }
);
syscall_bench!(
    Gettimeofday,
    "gettimeofday",
    "gettimeofday(2) through the vDSO: normally no kernel entry",
    {
        let mut tv = libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        };
        // SAFETY: tv is a timeval we own; no timezone is asked for.
        unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
        tv.tv_usec
    }
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Bench;
    use crate::bench::Measure;

    #[test]
    fn syscall_and_vdso_costs_are_in_a_sane_range() {
        let s = RunSettings {
            sample_time: 0.02,
            process: None,
        };
        let run = |b: &dyn Bench| {
            let p = Params::resolve(b, &[]).unwrap();
            let mut inst = b.instantiate(&p, &s).unwrap();
            let mut out: Vec<Measure> = Vec::new();
            for _ in 0..3 {
                inst.sample(&mut out).unwrap();
            }
            out.iter().map(|m| m.value).fold(f64::INFINITY, f64::min)
        };
        let sys = run(&NullSyscall);
        let vdso = run(&ClockGettime);
        assert!(sys > 10.0 && sys < 100_000.0, "null-syscall {sys} ns");
        assert!(vdso > 1.0 && vdso < 100_000.0, "clock-gettime {vdso} ns");
    }
}
