//! Where tasks run: the CPU order of a pinning policy, from the topology
//! the OS reports (`system::cpu_topology`), restricted to the CPUs the
//! cell may use.
//!
//! will-it-scale asks hwloc for the cores in order and puts task i on core
//! i % ncores (or on hardware thread i with `-m`). kbench pins each task to
//! one CPU so the placement is exact and recorded:
//! - `compact`: the first hardware thread of every core, cores in package
//!   and core order, then the second thread of every core, and so on; so
//!   SMT siblings share work only once every core has a task (hwloc's core
//!   order, as will-it-scale uses by default);
//! - `spread`: like compact but alternating packages (core 0 of package 0,
//!   core 0 of package 1, core 1 of package 0, ...), to use every socket's
//!   caches and memory bandwidth first;
//! - `smt`: hardware threads in core order, a core's siblings first
//!   (will-it-scale's `-m`);
//! - `none`: no pinning; the scheduler places tasks within the allowed set.
//!
//! Task i gets the i-th CPU of the order (wrapping when there are more tasks
//! than CPUs); a helper task (a testcase's partner, `new_task`) shares its
//! task's CPU, as will-it-scale's inherits its creator's affinity.

use std::collections::BTreeMap;

pub use crate::system::CpuTopo;
use crate::units::CpuSet;

/// The topology of `cpus`; a CPU the OS says nothing about counts as its
/// own core in package 0.
pub fn read(cpus: &CpuSet) -> Vec<CpuTopo> {
    crate::system::cpu_topology(cpus)
}

/// The CPUs in the order tasks take them under `policy`; empty for `none`.
pub fn order(topo: &[CpuTopo], policy: &str) -> Vec<usize> {
    let mut t = topo.to_vec();
    match policy {
        "compact" => {
            t.sort_by_key(|c| (c.thread, c.package, c.core, c.cpu));
            t.iter().map(|c| c.cpu).collect()
        }
        "smt" => {
            // will-it-scale -m: hwloc's processing units in order, so the
            // siblings of a core are filled before the next core.
            t.sort_by_key(|c| (c.package, c.core, c.thread, c.cpu));
            t.iter().map(|c| c.cpu).collect()
        }
        "spread" => {
            // Rank of each core within its package, then round-robin over
            // packages at each rank.
            let mut cores: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for c in &t {
                let v = cores.entry(c.package).or_default();
                if !v.contains(&c.core) {
                    v.push(c.core);
                }
            }
            for v in cores.values_mut() {
                v.sort_unstable();
            }
            let rank = |c: &CpuTopo| cores[&c.package].iter().position(|&x| x == c.core);
            t.sort_by_key(|c| (c.thread, rank(c), c.package, c.cpu));
            t.iter().map(|c| c.cpu).collect()
        }
        _ => Vec::new(),
    }
}

/// The CPU of task `i`; `None` when unpinned.
pub fn cpu_of(order: &[usize], i: usize) -> Option<usize> {
    if order.is_empty() {
        None
    } else {
        Some(order[i % order.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 packages x 2 cores x 2 threads, numbered like many Intel boxes:
    /// cpu = thread * 4 + package * 2 + core.
    fn fake() -> Vec<CpuTopo> {
        let mut v = Vec::new();
        for thread in 0..2 {
            for package in 0..2 {
                for core in 0..2 {
                    v.push(CpuTopo {
                        cpu: thread * 4 + package * 2 + core,
                        package,
                        core,
                        thread,
                    });
                }
            }
        }
        v
    }

    #[test]
    fn compact_fills_cores_before_siblings() {
        assert_eq!(order(&fake(), "compact"), vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn smt_fills_siblings_first() {
        assert_eq!(order(&fake(), "smt"), vec![0, 4, 1, 5, 2, 6, 3, 7]);
    }

    #[test]
    fn spread_alternates_packages() {
        assert_eq!(order(&fake(), "spread"), vec![0, 2, 1, 3, 4, 6, 5, 7]);
    }

    #[test]
    fn none_is_unpinned_and_tasks_wrap() {
        assert!(order(&fake(), "none").is_empty());
        assert_eq!(cpu_of(&[], 3), None);
        assert_eq!(cpu_of(&[4, 5], 3), Some(5));
    }

    #[test]
    fn reads_this_machine() {
        let online = crate::system::online_cpus();
        let t = read(&online);
        assert_eq!(t.len(), online.0.len());
        let o = order(&t, "compact");
        let mut sorted = o.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, online.0);
    }
}
