//! `spin`: a calibrated busy loop that never enters the kernel. Its cost is
//! proportional to `work` (a dependent multiply-add chain the compiler
//! cannot shorten), which makes it the reference for testing the
//! statistics: `spin:work=1000` vs `spin:work=1050` differ by 5% by
//! construction, and two identical cells differ by nothing.

use std::hint::black_box;

use crate::bench::micro::{CPU_PARAM, LoopInstance};
use crate::bench::{
    Bench, Direction, Instance, Kind, Metric, ParamDef, ParamType, Params, RunSettings,
};

const PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "work",
        ty: ParamType::Int {
            min: 1,
            max: 1_000_000_000,
        },
        default: Some("1000"),
        help: "dependent multiply-add steps per operation",
    },
    CPU_PARAM,
];

pub struct Spin;

impl Bench for Spin {
    fn name(&self) -> &str {
        "spin"
    }
    fn kind(&self) -> Kind {
        Kind::Micro
    }
    fn description(&self) -> &str {
        "a user-space busy loop of `work` dependent multiply-adds per operation: no kernel involvement; cost proportional to work (a known ratio for testing comparisons)"
    }
    fn params(&self) -> &[ParamDef] {
        PARAMS
    }
    fn metrics(&self) -> Vec<Metric> {
        vec![Metric::new("ns/op", "ns", Direction::Lower)]
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let work = p.int("work") as u64;
        let mut x = 1u64;
        let op = move || {
            for _ in 0..work {
                x = black_box(x)
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
            }
        };
        Ok(Box::new(LoopInstance::new(
            op,
            p.opt_int("cpu").map(|c| c as usize),
            s.sample_time,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Measure, params::raw_from_str};

    fn best(work: &str) -> f64 {
        let p = Params::resolve(&Spin, &[("work".into(), raw_from_str(work))]).unwrap();
        let mut inst = Spin
            .instantiate(&p, &RunSettings { sample_time: 0.02 })
            .unwrap();
        let mut out: Vec<Measure> = Vec::new();
        for _ in 0..5 {
            inst.sample(&mut out).unwrap();
        }
        out.iter().map(|m| m.value).fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn cost_scales_with_work() {
        let a = best("100");
        let b = best("400");
        // 4x the work: between 2.5x and 6x the time on any machine.
        assert!(b / a > 2.5 && b / a < 6.0, "100 -> {a} ns, 400 -> {b} ns");
    }
}
