//! Event counters read around a sample's timed interval: what the kernel
//! counts for kbench's thread and the processes and threads it starts
//! afterwards (a cell's helpers). The kinds and their names are portable;
//! opening them is the OS backend's (`perf_event_open(2)` on Linux).

use std::fmt;

/// A counter kbench can read per operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Counter {
    TaskClock,
    ContextSwitches,
    VoluntarySwitches,
    InvoluntarySwitches,
    Migrations,
    PageFaults,
    MinorFaults,
    MajorFaults,
    Cycles,
    Instructions,
    CacheMisses,
    BranchMisses,
}

/// Every counter, in the order reports list them.
pub const ALL: &[Counter] = &[
    Counter::TaskClock,
    Counter::ContextSwitches,
    Counter::VoluntarySwitches,
    Counter::InvoluntarySwitches,
    Counter::Migrations,
    Counter::PageFaults,
    Counter::MinorFaults,
    Counter::MajorFaults,
    Counter::Cycles,
    Counter::Instructions,
    Counter::CacheMisses,
    Counter::BranchMisses,
];

/// The software counters a run reads unasked (`default`): every kernel has
/// them, a PMU is not needed. (`page-faults` is their sum of minor and
/// major faults, asked by name.)
pub const SOFTWARE: &[Counter] = &[
    Counter::TaskClock,
    Counter::ContextSwitches,
    Counter::VoluntarySwitches,
    Counter::InvoluntarySwitches,
    Counter::Migrations,
    Counter::MinorFaults,
    Counter::MajorFaults,
];

impl Counter {
    /// The name `--counters` takes (perf's own spelling).
    pub fn name(self) -> &'static str {
        match self {
            Counter::TaskClock => "task-clock",
            Counter::ContextSwitches => "context-switches",
            Counter::VoluntarySwitches => "voluntary-switches",
            Counter::InvoluntarySwitches => "involuntary-switches",
            Counter::Migrations => "cpu-migrations",
            Counter::PageFaults => "page-faults",
            Counter::MinorFaults => "minor-faults",
            Counter::MajorFaults => "major-faults",
            Counter::Cycles => "cycles",
            Counter::Instructions => "instructions",
            Counter::CacheMisses => "cache-misses",
            Counter::BranchMisses => "branch-misses",
        }
    }

    /// perf's other names for it (`perf list`), which `--counters` takes
    /// too.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Counter::ContextSwitches => &["cs"],
            Counter::Migrations => &["migrations"],
            Counter::PageFaults => &["faults"],
            Counter::Cycles => &["cpu-cycles"],
            _ => &[],
        }
    }

    /// The counter `word` names, by its name or one of perf's aliases.
    pub fn named(word: &str) -> Option<Counter> {
        ALL.iter()
            .copied()
            .find(|c| c.name() == word || c.aliases().contains(&word))
    }

    /// The metric its per-operation values are stored as.
    pub fn metric(self) -> String {
        format!("{}/op", self.name())
    }

    /// The metric's unit: task-clock counts CPU nanoseconds (its own unit, so
    /// a geometric mean over wall-clock `ns` rows never mixes it in), the
    /// rest events.
    pub fn unit(self) -> &'static str {
        match self {
            Counter::TaskClock => "cpu-ns",
            _ => "events",
        }
    }

    /// Counted by the CPU's performance monitoring unit.
    pub fn hardware(self) -> bool {
        matches!(
            self,
            Counter::Cycles | Counter::Instructions | Counter::CacheMisses | Counter::BranchMisses
        )
    }

    /// Not a perf event: perf counts context switches as one sum, so the
    /// split into voluntary (the task blocked) and involuntary (it was
    /// preempted) is read from the kernel's per-task counts (getrusage(2),
    /// /proc) before and after the interval.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))] // Linux's split only
    pub fn split_switch(self) -> bool {
        matches!(
            self,
            Counter::VoluntarySwitches | Counter::InvoluntarySwitches
        )
    }
}

/// The derived metric instructions per cycle, stored beside the counters
/// when both cycles and instructions are read.
pub const IPC: &str = "ipc";

/// Whether `counters` give IPC.
pub fn gives_ipc(counters: &[Counter]) -> bool {
    counters.contains(&Counter::Cycles) && counters.contains(&Counter::Instructions)
}

/// IPC of one interval's `counts` (in the order of `counters`).
pub fn ipc(counters: &[Counter], counts: &[f64]) -> Option<f64> {
    let at = |k: Counter| counters.iter().position(|&c| c == k).map(|i| counts[i]);
    let (i, c) = (at(Counter::Instructions)?, at(Counter::Cycles)?);
    (c > 0.0).then(|| i / c)
}

impl fmt::Display for Counter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What `kbench run` reads when `--counters` is not given: the software
/// set, whose cost on the cheapest benchmark does not show
/// (`scripts/counters/overhead.sh`); `--counters all` adds the hardware
/// ones where a PMU is there. The text report leaves them to
/// `--all-metrics`. Where the OS counts nothing (FreeBSD), nothing is
/// asked unasked, so a default run carries no warning about it.
pub fn unasked() -> &'static str {
    if cfg!(target_os = "linux") {
        "default"
    } else {
        "none"
    }
}

/// Whether `metric` is a counter's per-operation metric (or IPC), i.e. one
/// the sampler added beside a benchmark's own.
pub fn is_metric(metric: &str) -> bool {
    metric == IPC
        || ALL
            .iter()
            .any(|c| metric.strip_suffix("/op") == Some(c.name()))
}

/// `--counters LIST`: names separated by commas; `default` and `software`
/// are the software set (what a run reads unasked), `all` every counter
/// (the hardware ones where a PMU is there), `none` nothing. An unknown name is the error,
/// naming it and the known ones.
pub fn parse_list(list: &str) -> Result<Vec<Counter>, String> {
    let mut out: Vec<Counter> = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let one: [Counter; 1];
        let add: &[Counter] = match word {
            "none" => &[],
            "default" | "software" => SOFTWARE,
            "all" => ALL,
            w => match Counter::named(w) {
                Some(c) => {
                    one = [c];
                    &one
                }
                None => {
                    let known: Vec<&str> = ALL.iter().map(|c| c.name()).collect();
                    return Err(format!(
                        "--counters: unknown counter `{w}` (known: {}, default, software, all, none; `kbench list counters`)",
                        known.join(", ")
                    ));
                }
            },
        };
        for c in add {
            if !out.contains(c) {
                out.push(*c);
            }
        }
    }
    Ok(out)
}

/// Counters opened for one cell: enabled only around each sample's timed
/// interval, read after it. Reading and enabling never allocate.
pub trait CounterGroup: Send {
    /// The counters that opened, in the order `read` fills.
    fn counters(&self) -> &[Counter];
    /// Reset to zero and start counting.
    fn start(&mut self) -> std::io::Result<()>;
    /// Stop counting.
    fn stop(&mut self) -> std::io::Result<()>;
    /// The counts since `start`, one per counter (scaled up when the
    /// kernel multiplexed a hardware counter).
    fn read(&mut self, out: &mut [f64]) -> std::io::Result<()>;
}

/// What opening a cell's counters gave: the group of those that opened,
/// and one line per counter (or kind of counter) that could not.
pub struct Opened {
    pub group: Option<Box<dyn CounterGroup>>,
    pub missing: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_with_sets_and_without_repeats() {
        assert_eq!(parse_list("default").unwrap(), SOFTWARE);
        assert_eq!(parse_list("software").unwrap(), SOFTWARE);
        assert_eq!(parse_list("none").unwrap(), Vec::<Counter>::new());
        assert_eq!(parse_list("all").unwrap(), ALL);
        assert_eq!(
            parse_list("cpu-migrations, task-clock,cpu-migrations").unwrap(),
            vec![Counter::Migrations, Counter::TaskClock]
        );
        let e = parse_list("task-clock,cycels").unwrap_err();
        assert!(e.contains("`cycels`") && e.contains("cycles"), "{e}");
    }

    #[test]
    fn perf_names_and_aliases_are_taken() {
        use Counter::*;
        assert_eq!(
            parse_list("context-switches,cpu-migrations,page-faults").unwrap(),
            vec![ContextSwitches, Migrations, PageFaults]
        );
        assert_eq!(
            parse_list("cs,migrations,faults,cpu-cycles,cs").unwrap(),
            vec![ContextSwitches, Migrations, PageFaults, Cycles]
        );
        // Every alias names one counter only.
        let mut seen = std::collections::BTreeSet::new();
        for c in ALL {
            for n in std::iter::once(c.name()).chain(c.aliases().iter().copied()) {
                assert!(seen.insert(n), "{n} twice");
                assert_eq!(Counter::named(n), Some(*c));
            }
        }
    }

    #[test]
    fn metrics_are_per_operation_and_hardware_is_told_apart() {
        assert_eq!(Counter::ContextSwitches.metric(), "context-switches/op");
        assert!(ALL.iter().all(|c| is_metric(&c.metric())) && is_metric(IPC));
        assert!(!is_metric("ns/op") && !is_metric("task-clock") && !is_metric("ops/s"));
        assert_eq!(Counter::TaskClock.unit(), "cpu-ns");
        assert!(Counter::Cycles.hardware() && !Counter::MajorFaults.hardware());
        assert!(!Counter::PageFaults.hardware());
        assert!(!Counter::InvoluntarySwitches.hardware());
        assert!(
            Counter::VoluntarySwitches.split_switch() && !Counter::ContextSwitches.split_switch()
        );
    }

    #[test]
    fn ipc_needs_both_cycles_and_instructions() {
        let cs = [Counter::Instructions, Counter::TaskClock, Counter::Cycles];
        assert!(gives_ipc(&cs) && !gives_ipc(&cs[..2]));
        assert_eq!(ipc(&cs, &[300.0, 5.0, 200.0]), Some(1.5));
        assert_eq!(ipc(&cs, &[300.0, 5.0, 0.0]), None);
        assert_eq!(ipc(&cs[..2], &[300.0, 5.0]), None);
    }
}
