//! A run's settings from its plan and the command line: the one place
//! the defaults live. The command line wins over the plan, the plan over
//! the defaults; `--quick` caps what the plan asks (a first look at a big
//! plan) and explicit flags still win.

use crate::error::bad_input;
use crate::record::{RunConfig, StopRule};

use super::Plan;

/// What a run's settings default to, and `--quick`'s caps.
struct Setting<T> {
    plain: T,
    quick: T,
}

const SAMPLES: Setting<u32> = Setting {
    plain: 10,
    quick: 5,
};
const SAMPLE_TIME: Setting<f64> = Setting {
    plain: 0.2,
    quick: 0.05,
};
const WARMUP: Setting<u32> = Setting { plain: 2, quick: 1 };
/// Adaptive stopping's sample cap and precision when only one is named.
const MAX_SAMPLES: u32 = 100;
const PRECISION: f64 = 0.01;

/// What the command line says of a run's settings (`None`: not said).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub samples: Option<u32>,
    pub sample_time: Option<f64>,
    pub warmup: Option<u32>,
    pub seed: Option<u64>,
    /// `--precision` as written (`2%`).
    pub precision: Option<String>,
    pub max_samples: Option<u32>,
    pub max_time: Option<f64>,
    pub until_verdict: bool,
    pub processes: Option<u32>,
    /// `--counters` as written (a list of names).
    pub counters: Option<String>,
    pub profile: bool,
    pub force: bool,
    /// Cap the plan's settings for a first look.
    pub quick: bool,
    /// The command line as stored with the run (secrets redacted).
    pub argv: Vec<String>,
}

/// `explicit`, else the plan's value (capped by `quick`), else the default.
fn pick<T: Copy + PartialOrd>(
    explicit: Option<T>,
    plan: Option<T>,
    d: &Setting<T>,
    quick: bool,
) -> T {
    explicit.unwrap_or(match (quick, plan) {
        (true, p) => {
            let v = p.unwrap_or(d.quick);
            if v < d.quick { v } else { d.quick }
        }
        (false, p) => p.unwrap_or(d.plain),
    })
}

/// Samples per cell a run of `plan` asks for: `explicit` (`--samples`),
/// else the plan's, else the default; `quick` caps it.
pub fn samples(plan: &Plan, explicit: Option<u32>, quick: bool) -> u32 {
    pick(explicit, plan.samples, &SAMPLES, quick)
}

impl RunConfig {
    /// The settings a run of `plan` with `o` uses; a bad value is bad
    /// input naming its flag.
    pub fn resolve(plan: &Plan, o: &Overrides) -> anyhow::Result<RunConfig> {
        let samples = samples(plan, o.samples, o.quick);
        let sample_time = pick(o.sample_time, plan.sample_time, &SAMPLE_TIME, o.quick);
        if !(sample_time > 0.0 && sample_time <= 3600.0) {
            return Err(bad_input!(
                "--sample-time {sample_time}: must be in (0, 3600] seconds"
            ));
        }
        if samples == 0 {
            return Err(bad_input!("--samples 0: need at least one sample"));
        }
        let stop = stop_rule(plan, o)?;
        let processes = o.processes.or(plan.processes).filter(|&n| n > 1);
        let list = o
            .counters
            .as_deref()
            .unwrap_or(crate::system::counters::unasked());
        let counters: Vec<String> = crate::system::counters::parse_list(list)
            .map_err(|e| bad_input!("{e}"))?
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        if let Some(n) = processes {
            if stop.is_some() {
                return Err(bad_input!(
                    "--processes {n} shares each cell's samples between processes; it does not go with --precision or --until-verdict"
                ));
            }
            if samples < n {
                return Err(bad_input!(
                    "--processes {n}: each process needs a sample; ask for at least {n} samples (--samples)"
                ));
            }
        }
        Ok(RunConfig {
            version: RunConfig::VERSION,
            plan: plan.name.clone(),
            stop,
            samples,
            sample_time,
            warmup: pick(o.warmup, plan.warmup, &WARMUP, o.quick),
            seed: o.seed.or(plan.seed).unwrap_or_else(crate::ids::fresh_seed),
            force: o.force,
            argv: o.argv.clone(),
            owner: crate::system::owner(),
            processes,
            counters,
            profile: o.profile,
        })
    }
}

/// Adaptive stopping, when `--precision` (or the plan's) or
/// `--until-verdict` asks for it.
fn stop_rule(plan: &Plan, o: &Overrides) -> anyhow::Result<Option<StopRule>> {
    let precision = match &o.precision {
        Some(p) => {
            Some(crate::units::parse_percent(p).map_err(|e| bad_input!("--precision: {e}"))?)
        }
        None => plan.precision,
    };
    if precision.is_none() && !o.until_verdict {
        if o.max_samples.is_some() || o.max_time.is_some() {
            return Err(bad_input!(
                "--max-samples and --max-time go with --precision or --until-verdict"
            ));
        }
        return Ok(None);
    }
    let max_samples = o.max_samples.unwrap_or(MAX_SAMPLES);
    if max_samples < 2 {
        return Err(bad_input!("--max-samples {max_samples}: need at least 2"));
    }
    if let Some(t) = o.max_time
        && (t.is_nan() || t <= 0.0)
    {
        return Err(bad_input!("--max-time {t}: must be positive"));
    }
    Ok(Some(StopRule {
        precision: precision.unwrap_or(PRECISION),
        max_samples,
        max_time: o.max_time,
        until_verdict: o.until_verdict,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(samples: Option<u32>) -> Plan {
        let mut p = crate::plan::adhoc(&["getppid".to_string()]).unwrap();
        p.samples = samples;
        p
    }

    #[test]
    fn the_command_line_wins_over_the_plan_and_the_plan_over_the_defaults() {
        assert_eq!(samples(&plan(None), None, false), 10);
        assert_eq!(samples(&plan(Some(30)), None, false), 30);
        assert_eq!(samples(&plan(Some(30)), Some(3), false), 3);
    }

    #[test]
    fn quick_caps_the_plan_but_not_an_explicit_flag() {
        assert_eq!(samples(&plan(None), None, true), 5);
        assert_eq!(samples(&plan(Some(30)), None, true), 5);
        assert_eq!(samples(&plan(Some(3)), None, true), 3);
        assert_eq!(samples(&plan(Some(3)), Some(40), true), 40);
        let c = RunConfig::resolve(
            &plan(None),
            &Overrides {
                quick: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!((c.sample_time, c.warmup), (0.05, 1));
        let c = RunConfig::resolve(&plan(None), &Overrides::default()).unwrap();
        assert_eq!(
            (c.samples, c.sample_time, c.warmup, c.stop),
            (10, 0.2, 2, None)
        );
    }

    #[test]
    fn adaptive_stopping_takes_its_defaults_and_refuses_its_flags_alone() {
        let o = Overrides {
            until_verdict: true,
            ..Default::default()
        };
        let stop = RunConfig::resolve(&plan(None), &o).unwrap().stop.unwrap();
        assert_eq!((stop.precision, stop.max_samples), (0.01, 100));
        let o = Overrides {
            max_samples: Some(5),
            ..Default::default()
        };
        let e = RunConfig::resolve(&plan(None), &o).unwrap_err().to_string();
        assert!(e.contains("--max-samples and --max-time"), "{e}");
    }
}
