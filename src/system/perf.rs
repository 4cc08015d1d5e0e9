//! Linux counters through `perf_event_open(2)` (the `perf-event2` crate):
//! each counter observes the calling thread and, inherited, every thread
//! and process it starts afterwards; opened disabled, enabled only around a
//! sample's timed interval. Kernel-side counting is included (context
//! switches and faults happen there) where `perf_event_paranoid` allows it.

use perf_event::Builder;
use perf_event::events::{Hardware, Software};

use super::counters::{Counter, CounterGroup, Opened};

struct Perf {
    kinds: Vec<Counter>,
    counters: Vec<perf_event::Counter>,
}

fn builder(c: Counter) -> Builder<'static> {
    let mut b = match c {
        Counter::TaskClock => Builder::new(Software::TASK_CLOCK),
        Counter::ContextSwitches => Builder::new(Software::CONTEXT_SWITCHES),
        Counter::Migrations => Builder::new(Software::CPU_MIGRATIONS),
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

/// Open `kinds` for this thread and its future children. A counter that
/// cannot be opened is left out with its reason; hardware counters on a
/// machine without a PMU share one line.
pub fn open(kinds: &[Counter]) -> Opened {
    let mut perf = Perf {
        kinds: Vec::new(),
        counters: Vec::new(),
    };
    let mut missing = Vec::new();
    let mut no_pmu = false;
    for &c in kinds {
        if no_pmu && c.hardware() {
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
                perf.counters.push(k);
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
            Err(e) => missing.push(format!("{c}: not available here ({e})")),
        }
    }
    let group: Option<Box<dyn CounterGroup>> = if perf.counters.is_empty() {
        None
    } else {
        Some(Box::new(perf))
    };
    Opened { group, missing }
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
        for c in &mut self.counters {
            c.reset()?;
        }
        for c in &mut self.counters {
            c.enable()?;
        }
        Ok(())
    }

    fn stop(&mut self) -> std::io::Result<()> {
        for c in &mut self.counters {
            c.disable()?;
        }
        Ok(())
    }

    fn read(&mut self, out: &mut [f64]) -> std::io::Result<()> {
        for (c, o) in self.counters.iter_mut().zip(out.iter_mut()) {
            let r = c.read_count_and_time()?;
            // Multiplexed (more hardware events than counters): scale the
            // count up to the whole time the counter was enabled.
            *o = if r.time_running > 0 && r.time_running < r.time_enabled {
                r.count as f64 * r.time_enabled as f64 / r.time_running as f64
            } else {
                r.count as f64
            };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
