//! The guard against impossible results: no benchmark of kbench's can do
//! an operation in less than about one CPU cycle per task. A sample that
//! claims it (ops/s per task above the CPU's highest clock frequency, or a
//! time per operation below one cycle) timed a loop whose work the
//! compiler removed, e.g. a malloc/free pair nothing observed; it fails
//! its cell with that reason instead of becoming a result.
//!
//! The frequency is the highest clock the OS reports for any CPU
//! (`system::max_cpu_hz`: on Linux the cpufreq maximum, else the highest
//! `cpu MHz` a guest sees; a hidden turbo clock can be higher, so an elided
//! loop running at one iteration per turbo cycle is still caught, and no
//! real operation comes near one cycle). Unknown frequency: no guard.

use crate::bench::{Direction, Kind, Measure, Metric, Params};

pub use crate::system::max_cpu_hz;

/// Why a sample of a built-in benchmark is impossible on a CPU of `hz`,
/// or `None`. Checked: a scale testcase's `ops/s` (divided by its
/// `tasks`), and every time metric in ns of a micro-benchmark (per
/// operation, round trip, page...). Commands are not checked: their
/// metrics are whatever the user says they are.
pub fn impossible(
    kind: Kind,
    metrics: &[Metric],
    params: &Params,
    out: &[Measure],
    hz: f64,
) -> Option<String> {
    for m in out {
        let Some(metric) = metrics.get(m.metric) else {
            continue;
        };
        match (kind, metric.unit.as_str(), metric.direction) {
            (Kind::Scale, "ops/s", _) => {
                let tasks = params.opt_int("tasks").unwrap_or(1).max(1) as f64;
                let per_task = m.value / tasks;
                if per_task > hz {
                    return Some(format!(
                        "{:.3e} ops/s per task is more than one operation per CPU cycle (at most {:.2} GHz here): loop body optimised away?",
                        per_task,
                        hz / 1e9
                    ));
                }
            }
            (Kind::Micro, "ns", Direction::Lower) => {
                let cycle_ns = 1e9 / hz;
                if m.value < cycle_ns {
                    return Some(format!(
                        "`{}` of {:.3} ns is less than one CPU cycle ({:.3} ns at {:.2} GHz): loop body optimised away?",
                        metric.name,
                        m.value,
                        cycle_ns,
                        hz / 1e9
                    ));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Vec<Metric> {
        vec![Metric::new("ops/s", "ops/s", Direction::Higher)]
    }

    fn tasks(n: i64) -> Params {
        let mut p = Params::default();
        p.0.insert("tasks".into(), crate::bench::params::Value::Int(n));
        p
    }

    fn one(value: f64) -> Vec<Measure> {
        vec![Measure { metric: 0, value }]
    }

    #[test]
    fn scale_rates_are_per_task() {
        let hz = 2.6e9;
        // 3.7e9 ops/s by one task: the elided malloc1 once measured here.
        let why = impossible(Kind::Scale, &ops(), &tasks(1), &one(3.7e9), hz).unwrap();
        assert!(why.contains("optimised away?"), "{why}");
        assert!(why.contains("2.60 GHz"), "{why}");
        // The same total over two tasks is 1.85e9 each: possible.
        assert_eq!(
            impossible(Kind::Scale, &ops(), &tasks(2), &one(3.7e9), hz),
            None
        );
        // A real malloc1 (1e5 ops/s) passes.
        assert_eq!(
            impossible(Kind::Scale, &ops(), &tasks(1), &one(1e5), hz),
            None
        );
    }

    #[test]
    fn micro_times_below_a_cycle_fail_and_commands_are_not_judged() {
        let ns = vec![Metric::new("ns/op", "ns", Direction::Lower)];
        let p = Params::default();
        let why = impossible(Kind::Micro, &ns, &p, &one(0.2), 2.6e9).unwrap();
        assert!(why.contains("less than one CPU cycle"), "{why}");
        assert_eq!(impossible(Kind::Micro, &ns, &p, &one(0.5), 2.6e9), None);
        assert_eq!(impossible(Kind::Command, &ns, &p, &one(0.2), 2.6e9), None);
        // Throughputs in B/s are not per operation.
        let bps = vec![Metric::new("bytes/s", "B/s", Direction::Higher)];
        assert_eq!(impossible(Kind::Micro, &bps, &p, &one(1e12), 2.6e9), None);
    }
}
