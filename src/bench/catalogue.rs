//! Where `kbench list` files each built-in benchmark, and the tool its
//! numbers are checked against side by side (docs/accuracy.md).
//!
//! Micro-benchmarks are listed here by name (a test makes sure none is
//! missing); every scale testcase is will-it-scale's of the same name, a
//! command benchmark has no reference.

use super::{Bench, Kind};

/// A family of `kbench list`, in the order they are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    Syscalls,
    Reference,
    Pipes,
    Sockets,
    Processes,
    Memory,
    Files,
    Scalability,
    Commands,
}

impl Family {
    pub const ALL: [Family; 9] = [
        Family::Syscalls,
        Family::Reference,
        Family::Pipes,
        Family::Sockets,
        Family::Processes,
        Family::Memory,
        Family::Files,
        Family::Scalability,
        Family::Commands,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Family::Syscalls => "syscalls",
            Family::Reference => "reference",
            Family::Pipes => "pipes",
            Family::Sockets => "sockets",
            Family::Processes => "processes",
            Family::Memory => "memory",
            Family::Files => "files",
            Family::Scalability => "scalability",
            Family::Commands => "commands",
        }
    }
}

/// Micro-benchmarks: family and reference tool.
const MICRO: &[(&str, Family, &str)] = &[
    (
        "getppid",
        Family::Syscalls,
        "perf bench syscall basic; FreeBSD syscall_timing getppid",
    ),
    ("getpid", Family::Syscalls, "a C loop of getpid()"),
    ("getuid", Family::Syscalls, "a C loop of getuid()"),
    (
        "null-syscall",
        Family::Syscalls,
        "a C loop of syscall(SYS_getppid), cc -O2",
    ),
    (
        "clock-gettime",
        Family::Syscalls,
        "a C loop of clock_gettime(CLOCK_MONOTONIC)",
    ),
    (
        "gettimeofday",
        Family::Syscalls,
        "a C loop of gettimeofday()",
    ),
    (
        "spin",
        Family::Reference,
        "a C loop of the same dependent multiply-adds",
    ),
    (
        "pipe-bw",
        Family::Pipes,
        "lmbench bw_pipe; a C writer/reader loop",
    ),
    (
        "pipeflex",
        Family::Pipes,
        "pipeflex (FreeBSD's pipe-buffer benchmark)",
    ),
    (
        "pipe-lat",
        Family::Pipes,
        "lmbench lat_pipe; perf bench sched pipe",
    ),
    (
        "ctx-switch",
        Family::Pipes,
        "perf bench sched pipe on one CPU; lmbench lat_ctx",
    ),
    ("unix-bw", Family::Sockets, "lmbench bw_unix"),
    ("unix-lat", Family::Sockets, "lmbench lat_unix"),
    ("tcp-bw", Family::Sockets, "lmbench bw_tcp"),
    ("tcp-lat", Family::Sockets, "lmbench lat_tcp"),
    ("fork-exit", Family::Processes, "lmbench lat_proc fork"),
    ("fork-exec", Family::Processes, "lmbench lat_proc exec"),
    (
        "posix-spawn",
        Family::Processes,
        "a C loop of posix_spawn()+waitpid()",
    ),
    (
        "thread-create",
        Family::Processes,
        "a C loop of pthread_create()+pthread_join()",
    ),
    ("mmap-munmap", Family::Memory, "lmbench lat_mmap"),
    ("page-fault", Family::Memory, "lmbench lat_pagefault"),
    ("brk", Family::Memory, "will-it-scale brk1, one task"),
    ("memcpy-bw", Family::Memory, "lmbench bw_mem bcopy"),
    (
        "read",
        Family::Files,
        "a C loop of pread() of a cached file",
    ),
    ("open-close", Family::Files, "lmbench lat_syscall open"),
    ("stat", Family::Files, "lmbench lat_syscall stat"),
    ("lseek", Family::Files, "will-it-scale lseek1, one task"),
    ("write-dev-null", Family::Files, "lmbench lat_syscall write"),
];

/// A micro-benchmark's row of [`MICRO`].
fn micro(b: &dyn Bench) -> Option<&'static (&'static str, Family, &'static str)> {
    MICRO.iter().find(|(n, _, _)| *n == b.name())
}

/// The family `kbench list` files `b` under.
pub fn family(b: &dyn Bench) -> Family {
    match b.kind() {
        Kind::Scale => Family::Scalability,
        Kind::Command => Family::Commands,
        Kind::Micro => micro(b).map_or(Family::Reference, |(_, f, _)| *f),
    }
}

/// The tool `b`'s numbers are checked against, if any.
pub fn reference(b: &dyn Bench) -> Option<String> {
    match b.kind() {
        Kind::Scale => Some(format!(
            "will-it-scale {} (its tests/{}.c)",
            b.name(),
            b.name()
        )),
        Kind::Command => None,
        Kind::Micro => micro(b).map(|(_, _, r)| r.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_micro_benchmark_has_a_family_and_a_reference() {
        for b in super::super::BENCHES {
            if b.kind() == Kind::Micro {
                assert!(
                    MICRO.iter().any(|(n, _, _)| *n == b.name()),
                    "{} is not in the catalogue",
                    b.name()
                );
            }
            assert!(reference(*b).is_some(), "{}", b.name());
        }
        for (n, _, _) in MICRO {
            assert!(super::super::find(n).is_some(), "{n} is not a benchmark");
        }
        assert_eq!(
            family(&*super::super::find("pipe-bw").unwrap()),
            Family::Pipes
        );
    }
}
