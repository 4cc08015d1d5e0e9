//! Linux counters through `perf_event_open(2)` (the `perf-event2` crate):
//! each counter observes the calling thread and, inherited, every thread
//! and process it starts afterwards; opened disabled, enabled only around a
//! sample's timed interval. Kernel-side counting is included (context
//! switches and faults happen there) where `perf_event_paranoid` allows it.
//! The voluntary/involuntary split of context switches is not a perf event:
//! it is read from the kernel's per-task counts ([`super::switch_count`]) just
//! before the counters are enabled and just after they are disabled.

use perf_event::Builder;
use perf_event::events::{Hardware, Software};

use super::counters::{Counter, CounterGroup, Opened};

struct Perf {
    kinds: Vec<Counter>,
    /// One per kind: its perf counter, or `None` for a split switch count.
    counters: Vec<Option<perf_event::Counter>>,
    /// Voluntary and involuntary switches at `start`, then their growth
    /// until `stop`; read only when a split kind is among `kinds`.
    switches: Option<(u64, u64)>,
    /// Each perf counter's (count, time enabled, time running) at `start`.
    /// Differences, not a reset: the counts of inherited counters in
    /// children that ended are kept apart in the kernel and a reset does
    /// not clear them, so they would add up from sample to sample.
    base: Vec<(u64, u64, u64)>,
}

fn builder(c: Counter) -> Builder<'static> {
    let mut b = match c {
        Counter::TaskClock => Builder::new(Software::TASK_CLOCK),
        Counter::ContextSwitches => Builder::new(Software::CONTEXT_SWITCHES),
        Counter::VoluntarySwitches | Counter::InvoluntarySwitches => {
            unreachable!("the switch split is not a perf event")
        }
        Counter::Migrations => Builder::new(Software::CPU_MIGRATIONS),
        Counter::PageFaults => Builder::new(Software::PAGE_FAULTS),
        Counter::MinorFaults => Builder::new(Software::PAGE_FAULTS_MIN),
        Counter::MajorFaults => Builder::new(Software::PAGE_FAULTS_MAJ),
        Counter::Cycles => Builder::new(Hardware::CPU_CYCLES),
        Counter::Instructions => Builder::new(Hardware::INSTRUCTIONS),
        Counter::CacheMisses => Builder::new(Hardware::CACHE_MISSES),
        Counter::BranchMisses => Builder::new(Hardware::BRANCH_MISSES),
    };
    b.observe_self().any_cpu().inherit(true).enabled(false);
    b
}

/// One line per reason counters were refused for, naming them all
/// (perf_event_open(2) denied in a container refuses every one alike: a
/// default run warns once).
fn refusals(mut failed: Vec<(String, Counter)>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some((why, _)) = failed.first().cloned() {
        let (same, rest): (Vec<_>, Vec<_>) = failed.into_iter().partition(|(w, _)| *w == why);
        failed = rest;
        let names: Vec<&str> = same.iter().map(|(_, c)| c.name()).collect();
        out.push(format!("{}: not available here ({why})", names.join(", ")));
    }
    out
}

/// Open `kinds` for this thread and its future children. A counter that
/// cannot be opened is left out with its reason; hardware counters on a
/// machine without a PMU share one line, as do counters refused alike.
pub fn open(kinds: &[Counter]) -> Opened {
    let mut perf = Perf {
        kinds: Vec::new(),
        counters: Vec::new(),
        switches: None,
        base: Vec::new(),
    };
    let mut missing = Vec::new();
    let mut failed: Vec<(String, Counter)> = Vec::new();
    let mut no_pmu = false;
    for &c in kinds {
        if no_pmu && c.hardware() {
            continue;
        }
        if c.split_switch() {
            match super::switch_count() {
                Some(now) => {
                    perf.kinds.push(c);
                    perf.counters.push(None);
                    perf.switches = Some(now);
                }
                None => missing.push(format!("{c}: not available here (getrusage failed)")),
            }
            continue;
        }
        // Kernel-side counts first; without the right to them (an
        // unprivileged user under perf_event_paranoid >= 2), user side only.
        let opened = builder(c)
            .include_kernel()
            .build()
            .or_else(|_| builder(c).build());
        match opened {
            Ok(k) => {
                perf.kinds.push(c);
                perf.counters.push(Some(k));
            }
            Err(e) if c.hardware() && pmu_absent(&e) => {
                no_pmu = true;
                let why = if super::cpuid::hypervisor_vendor().is_some() {
                    "virtual machine without a PMU".to_string()
                } else {
                    format!("no PMU events: {e}")
                };
                missing.push(format!("hardware counters: not available here ({why})"));
            }
            Err(e) => failed.push((e.to_string(), c)),
        }
    }
    missing.extend(refusals(failed));
    let group: Option<Box<dyn CounterGroup>> = if perf.counters.is_empty() {
        None
    } else {
        Some(Box::new(perf))
    };
    Opened { group, missing }
}

fn switch_count() -> std::io::Result<(u64, u64)> {
    super::switch_count().ok_or_else(std::io::Error::last_os_error)
}

/// The errors perf_event_open gives for a hardware event the machine has
/// no counter for.
fn pmu_absent(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::EINVAL)
    )
}

impl CounterGroup for Perf {
    fn counters(&self) -> &[Counter] {
        &self.kinds
    }

    fn start(&mut self) -> std::io::Result<()> {
        if self.switches.is_some() {
            self.switches = Some(switch_count()?);
        }
        self.base.clear();
        for c in self.counters.iter_mut() {
            let base = match c {
                Some(c) => {
                    let r = c.read_count_and_time()?;
                    (r.count, r.time_enabled, r.time_running)
                }
                None => (0, 0, 0),
            };
            self.base.push(base);
        }
        for c in self.counters.iter_mut().flatten() {
            c.enable()?;
        }
        Ok(())
    }

    fn stop(&mut self) -> std::io::Result<()> {
        for c in self.counters.iter_mut().flatten() {
            c.disable()?;
        }
        if let Some((v, i)) = self.switches {
            let (v1, i1) = switch_count()?;
            self.switches = Some((v1.saturating_sub(v), i1.saturating_sub(i)));
        }
        Ok(())
    }

    fn read(&mut self, out: &mut [f64]) -> std::io::Result<()> {
        let parts = self.kinds.iter().zip(self.counters.iter_mut());
        for (((kind, c), o), base) in parts.zip(out.iter_mut()).zip(&self.base) {
            let Some(c) = c else {
                let (v, i) = self.switches.unwrap_or_default();
                *o = match kind {
                    Counter::VoluntarySwitches => v,
                    _ => i,
                } as f64;
                continue;
            };
            let r = c.read_count_and_time()?;
            let count = r.count.saturating_sub(base.0) as f64;
            let enabled = r.time_enabled.saturating_sub(base.1);
            let running = r.time_running.saturating_sub(base.2);
            // Multiplexed (more hardware events than counters): scale the
            // count up to the whole time the counter was enabled.
            *o = if running > 0 && running < enabled {
                count * enabled as f64 / running as f64
            } else {
                count
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_refused_alike_share_one_line() {
        let denied = "Operation not permitted (os error 1)".to_string();
        let lines = refusals(vec![
            (denied.clone(), Counter::TaskClock),
            ("No such device (os error 19)".into(), Counter::Cycles),
            (denied.clone(), Counter::MinorFaults),
        ]);
        assert_eq!(
            lines,
            [
                format!("task-clock, minor-faults: not available here ({denied})"),
                "cycles: not available here (No such device (os error 19))".to_string(),
            ]
        );
        assert!(refusals(Vec::new()).is_empty());
    }

    #[test]
    fn faults_inside_the_interval_are_counted_and_outside_not() {
        let o = open(&[Counter::MinorFaults, Counter::TaskClock]);
        let Some(mut g) = o.group else {
            eprintln!("skipped: no perf counters here: {:?}", o.missing);
            return;
        };
        assert_eq!(g.counters(), &[Counter::MinorFaults, Counter::TaskClock]);
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let touch = |pages: usize| {
            let len = pages * page;
            let p = super::super::mmap_anon(len, false).unwrap();
            for i in (0..len).step_by(page) {
                // SAFETY: inside the fresh private mapping.
                unsafe { p.add(i).write_volatile(1) };
            }
            // SAFETY: the mapping made above.
            unsafe { libc::munmap(p.cast(), len) };
        };
        let mut v = [0.0; 2];
        g.start().unwrap();
        touch(256);
        g.stop().unwrap();
        touch(1024);
        g.read(&mut v).unwrap();
        assert!(v[0] >= 256.0 && v[0] < 1024.0, "minor faults {}", v[0]);
        assert!(v[1] > 0.0, "task clock {}", v[1]);
    }

    /// The split counts every process of the test binary, and other tests
    /// start and end children meanwhile (an unreaped child's counts drop
    /// out of the sum): the check runs alone, in a process of its own.
    #[test]
    fn the_switch_split_adds_up_to_perfs_sum() {
        crate::system::tests::run_alone("system::perf::tests::switch_split_alone");
    }

    #[test]
    #[ignore = "run alone by the_switch_split_adds_up_to_perfs_sum"]
    fn switch_split_alone() {
        use Counter::{ContextSwitches, InvoluntarySwitches, VoluntarySwitches};
        let o = open(&[ContextSwitches, VoluntarySwitches, InvoluntarySwitches]);
        let Some(mut g) = o.group else {
            eprintln!("skipped: no perf counters here: {:?}", o.missing);
            return;
        };
        if g.counters().len() < 3 {
            eprintln!("skipped: {:?}", o.missing);
            return;
        }
        let mut v = [0.0; 3];
        g.start().unwrap();
        // Blocks 50 times: at least 50 voluntary switches.
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        g.stop().unwrap();
        g.read(&mut v).unwrap();
        assert!(v[1] >= 50.0, "voluntary {}", v[1]);
        // kbench's other threads are in the split and not in perf's sum,
        // which sees this thread only: the split is at least the sum.
        assert!(v[1] + v[2] >= v[0] && v[0] >= 50.0, "{v:?}");
    }
}
