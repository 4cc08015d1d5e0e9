//! Comparisons that follow the design that produced the samples.
//!
//! kbench samples in blocks: rounds (every cell once per round, in a
//! shuffled order), processes (`--processes`), runs and boots. Samples of
//! one run are not independent draws of what another run would measure:
//! the load of the hour, the memory layout of the process, the boot's
//! page colouring all move a whole run (Kalibera & Jones, "Rigorous
//! Benchmarking in Reasonable Time", ISMM 2013: repeat at the level that
//! varies, and use it as the unit). [`compare`] chooses the analysis from
//! the blocks both arms were measured in:
//!
//! - **Same rounds** (the arms are cells of the same runs, measured
//!   interleaved): paired by round. The per-round log ratios go to
//!   [`super::paired`] (Hodges-Lehmann, Wilcoxon signed-rank), which a
//!   load burst hitting one arm of a round does not derail. With several
//!   runs (or boots, or process pairs) the log ratios are grouped by the
//!   highest such level; when the groups differ (one-way F test, p below
//!   [`POOL_P`]: Bancroft's "sometimes pool" rule as in
//!   [`super::nested`]) the group means are the units, a t interval over
//!   them. With too few rounds for the signed-rank interval to reach the
//!   level (fewer than 6 at 95%; a family's adjusted level needs more)
//!   the paired t interval over the log ratios stands in.
//! - **Different boots, or different runs**: that level is the unit.
//!   The logs of the unit means are compared by a t interval (Welch's,
//!   Student's when a side has one unit). With one unit a side the
//!   variation at that level is **not measured**: no interval or p is
//!   given, only the estimate, the within-run interval for information,
//!   and the level, so a report says how to measure it (`kbench run
//!   --repeat N` alternates whole runs; a campaign's boot factors
//!   alternate boots with `repeat = { boots = 3 }`). A run level is never
//!   pooled away: with two or three runs a side the F test cannot tell
//!   a real run-to-run variance from none.
//! - **Same runs, not the same rounds** (an imported file, whose cells
//!   were measured one after the other): independent samples, Welch's
//!   interval of the log ratio of the means ([`super::logratio`]); with
//!   `--processes` samples whose processes differ, the process means.
//!
//! Every interval is of ln(b/a), so ratios stay above 0 and changes above
//! -100%. Values must be >= 0; data a ratio cannot describe (all zero, a
//! zero baseline, negative values) is a [`Degenerate`] the report puts in
//! words.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::dist::{normal_quantile, t_quantile, t_two_sided_p};
use super::logratio;
use super::nested::{POOL_P, f_test};
use super::paired;
use super::power::{POWER, Power};
use super::{Confidence, Interval, Sample, TooFew};
use crate::record::Direction;

/// One measured value and the blocks it was taken in.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obs {
    pub value: f64,
    /// The boot (0: unknown; equal ids, same boot).
    pub boot: u64,
    /// The run.
    pub run: u64,
    /// `--processes`: the process index within the run's cell (0 with
    /// one process).
    pub process: u32,
    /// The round within the run; `None` when the run did not interleave
    /// its cells (an import), so no other cell shares it.
    pub round: Option<u32>,
}

/// What a test treats as independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Unit {
    /// Rounds in which both arms were measured (paired).
    Rounds,
    /// Every sample.
    Samples,
    /// Processes (paired: process pairs of the same rounds).
    Processes,
    Runs,
    Boots,
    /// A geomean's cells (benchmarks) as the replicates.
    Cells,
}

impl Unit {
    pub fn plural(self) -> &'static str {
        match self {
            Unit::Cells => "cells",
            Unit::Rounds => "rounds",
            Unit::Samples => "samples",
            Unit::Processes => "processes",
            Unit::Runs => "runs",
            Unit::Boots => "boots",
        }
    }
}

/// A level whose variation a comparison could not measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    Run,
    Boot,
}

impl Level {
    /// `run`, `boot`.
    pub fn name(self) -> &'static str {
        match self {
            Level::Run => "run",
            Level::Boot => "boot",
        }
    }

    /// "run-to-run variation is not measured (one run a side): ...".
    pub fn unmeasured(self) -> &'static str {
        match self {
            Level::Run => {
                "run-to-run variation is not measured (one run a side); measure it with `kbench run --repeat N`, which alternates whole runs"
            }
            Level::Boot => {
                "boot-to-boot variation is not measured (one boot a side); measure it with `repeat = { boots = 3 }` in the plan, which alternates the boots of its boot factors"
            }
        }
    }
}

/// How the interval was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Hodges-Lehmann with the Wilcoxon signed-rank interval over the
    /// per-round log ratios.
    SignedRank,
    /// A t interval over group means of per-round log ratios.
    GroupT,
    /// The paired t interval over the per-round log ratios: too few
    /// rounds for the signed-rank interval to reach the level.
    PairedT,
    /// Welch's delta-method interval of the log ratio of the means.
    Welch,
    /// A t interval between the logs of unit means.
    UnitT,
    /// A geomean over cells, the cells as replicates.
    Cells,
    /// No interval: a level has one replicate a side.
    None,
}

impl Method {
    pub fn label(self) -> &'static str {
        match self {
            Method::SignedRank => "Hodges-Lehmann, Wilcoxon signed-rank",
            Method::GroupT => "t over group means of the log ratios",
            Method::PairedT => "paired t: too few rounds for the signed-rank interval",
            Method::Welch => "Welch, log ratio of means",
            Method::UnitT => "t over the logs of unit means",
            Method::Cells => "cells as replicates",
            Method::None => "none",
        }
    }
}

/// Data a ratio cannot describe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "kebab-case")]
pub enum Degenerate {
    #[error("both sides are 0 in every sample: no change to measure")]
    BothZero,
    #[error("the baseline is 0 in every sample: no ratio to it")]
    BaselineZero,
    #[error("the contender is 0 in every sample: -100%, no interval")]
    ContenderZero,
    #[error("values below 0: a ratio does not describe them")]
    Negative,
    #[error("no value on one side")]
    Empty,
}

/// A comparison of a contender (`b`) with its baseline (`a`), as the
/// design allows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Design {
    /// Whether the arms were paired by round.
    pub paired: bool,
    pub unit: Unit,
    /// Units per side (paired: the same count twice).
    pub n: [usize; 2],
    /// Paired: samples outside the shared rounds, left out.
    pub left_out: usize,
    pub confidence: Confidence,
    pub direction: Direction,
    pub method: Method,
    /// The estimated ln(b/a).
    pub log_ratio: f64,
    /// Its interval; `None` when a level is not measured.
    pub log_interval: Option<Interval>,
    /// Its standard error (from the interval for the signed-rank one).
    pub se: Option<f64>,
    /// Degrees of freedom of a t interval.
    pub df: Option<f64>,
    /// Two-sided p of "no change".
    pub p: Option<f64>,
    /// Too few units to reach the confidence asked for.
    pub too_few: Option<TooFew>,
    /// The level with one replicate a side, whose variation the
    /// comparison cannot measure.
    pub unmeasured: Option<Level>,
    /// The F test p that chose between the groups and the rounds (or the
    /// processes and the samples).
    pub pool_p: Option<f64>,
    /// With `unmeasured`: the interval within the runs (or boots), valid
    /// only if they do not differ; for information.
    pub within: Option<Interval>,
}

/// Compare `b` (contender) with `a` (baseline) at `confidence`.
pub fn compare(
    a: &[Obs],
    b: &[Obs],
    direction: Direction,
    confidence: Confidence,
) -> Result<Design, Degenerate> {
    compare_in(a, b, direction, confidence, confidence.alpha())
}

/// [`compare`] as a member of a family whose strictest level is
/// `family_alpha` (alpha / m: no adjusted level of Holm's or
/// Benjamini-Hochberg's is lower). The method is chosen for that level,
/// so the p-value that enters the adjustment and the interval taken at
/// the adjusted level come from one test, and agree: paired arms with
/// too few rounds for the signed-rank interval to reach `family_alpha`
/// use the paired t at every level.
pub fn compare_in(
    a: &[Obs],
    b: &[Obs],
    direction: Direction,
    confidence: Confidence,
    family_alpha: f64,
) -> Result<Design, Degenerate> {
    if a.is_empty() || b.is_empty() {
        return Err(Degenerate::Empty);
    }
    if a.iter().chain(b).any(|o| o.value.is_nan() || o.value < 0.0) {
        return Err(Degenerate::Negative);
    }
    let zero = |v: &[Obs]| v.iter().all(|o| o.value == 0.0);
    match (zero(a), zero(b)) {
        (true, true) => return Err(Degenerate::BothZero),
        (true, false) => return Err(Degenerate::BaselineZero),
        (false, true) => return Err(Degenerate::ContenderZero),
        (false, false) => {}
    }
    let positive = a.iter().chain(b).all(|o| o.value > 0.0);
    let base = Design {
        paired: false,
        unit: Unit::Samples,
        n: [a.len(), b.len()],
        left_out: 0,
        confidence,
        direction,
        method: Method::Welch,
        log_ratio: 0.0,
        log_interval: None,
        se: None,
        df: None,
        p: None,
        too_few: None,
        unmeasured: None,
        pool_p: None,
        within: None,
    };
    if positive && let Some(pairs) = rounds(a, b) {
        let rank_ok = pairs.len() >= paired::need_rounds(family_alpha.min(confidence.alpha()));
        return Ok(paired_design(base, &pairs, a.len() + b.len(), rank_ok));
    }
    Ok(unpaired_design(base, a, b))
}

type Key = (u64, u64, u32, u32);

/// Per (boot, run, process, round) the mean of an arm's values there.
fn by_round(v: &[Obs]) -> BTreeMap<Key, f64> {
    let mut m: BTreeMap<Key, (f64, usize)> = BTreeMap::new();
    for o in v {
        if let Some(r) = o.round {
            let e = m.entry((o.boot, o.run, o.process, r)).or_default();
            e.0 += o.value;
            e.1 += 1;
        }
    }
    m.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
}

fn runs(v: &[Obs]) -> BTreeSet<u64> {
    v.iter().map(|o| o.run).collect()
}

/// The rounds both arms were measured in, when the arms are cells of the
/// same runs (every run of each has a shared round): (key, a, b).
fn rounds(a: &[Obs], b: &[Obs]) -> Option<Vec<(Key, f64, f64)>> {
    let (ra, rb) = (by_round(a), by_round(b));
    let shared: Vec<(Key, f64, f64)> = ra
        .iter()
        .filter_map(|(k, x)| rb.get(k).map(|y| (*k, *x, *y)))
        .collect();
    let covered: BTreeSet<u64> = shared.iter().map(|(k, _, _)| k.1).collect();
    (!shared.is_empty() && runs(a) == runs(b) && covered == runs(a)).then_some(shared)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// One-way F test p over groups (each with its own mean) pooled across
/// `sets` (each set's groups around the set's mean).
fn one_way(sets: &[Vec<Vec<f64>>]) -> Option<f64> {
    let (mut ssb, mut dfb, mut ssw, mut dfw) = (0.0, 0.0, 0.0, 0.0);
    for groups in sets {
        let all: Vec<f64> = groups.iter().flatten().copied().collect();
        if all.is_empty() {
            continue;
        }
        let grand = mean(&all);
        for g in groups.iter().filter(|g| !g.is_empty()) {
            let m = mean(g);
            ssb += g.len() as f64 * (m - grand).powi(2);
            ssw += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        }
        let k = groups.iter().filter(|g| !g.is_empty()).count() as f64;
        dfb += k - 1.0;
        dfw += all.len() as f64 - k;
    }
    f_test(ssb, dfb, ssw, dfw)
}

fn paired_design(mut d: Design, pairs: &[(Key, f64, f64)], total: usize, rank_ok: bool) -> Design {
    d.paired = true;
    d.left_out = total - 2 * pairs.len();
    let logs: Vec<(Key, f64)> = pairs.iter().map(|(k, x, y)| (*k, (y / x).ln())).collect();
    let distinct = |f: fn(&Key) -> (u64, u64, u32)| {
        logs.iter()
            .map(|(k, _)| f(k))
            .collect::<BTreeSet<_>>()
            .len()
    };
    type Cluster = fn(&Key) -> (u64, u64, u32);
    let level: Option<(Unit, Cluster)> =
        if distinct(|k| (k.0, 0, 0)) > 1 && logs.iter().all(|(k, _)| k.0 != 0) {
            Some((Unit::Boots, |k| (k.0, 0, 0)))
        } else if distinct(|k| (0, k.1, 0)) > 1 {
            Some((Unit::Runs, |k| (0, k.1, 0)))
        } else if distinct(|k| (0, k.1, k.2)) > 1 {
            Some((Unit::Processes, |k| (0, k.1, k.2)))
        } else {
            None
        };
    if let Some((unit, f)) = level {
        let mut groups: BTreeMap<(u64, u64, u32), Vec<f64>> = BTreeMap::new();
        for (k, l) in &logs {
            groups.entry(f(k)).or_default().push(*l);
        }
        let groups: Vec<Vec<f64>> = groups.into_values().collect();
        d.pool_p = one_way(std::slice::from_ref(&groups));
        if d.pool_p.is_some_and(|p| p < POOL_P) {
            let means: Vec<f64> = groups.iter().map(|g| mean(g)).collect();
            return one_sample_t(d, unit, &means);
        }
    }
    let all: Vec<f64> = logs.iter().map(|(_, l)| *l).collect();
    if !rank_ok && all.len() >= 2 {
        // Too few rounds for the signed-rank interval to reach the level
        // (6 at 95%, 11 at 99.9%): the paired t over the log ratios.
        return Design {
            method: Method::PairedT,
            ..one_sample_t(d, Unit::Rounds, &all)
        };
    }
    let r = paired::of_log_ratios(&all, d.direction, d.confidence).expect("finite, non-empty");
    let z = normal_quantile(d.confidence.upper_tail_quantile());
    Design {
        unit: Unit::Rounds,
        n: [r.n, r.n],
        method: Method::SignedRank,
        log_ratio: r.log_ratio,
        se: Some((r.log_interval.hi - r.log_interval.lo) / (2.0 * z)),
        log_interval: Some(r.log_interval),
        p: Some(r.p),
        too_few: r.too_few,
        ..d
    }
}

/// A t interval over `units` (group means of log ratios).
fn one_sample_t(d: Design, unit: Unit, units: &[f64]) -> Design {
    let k = units.len();
    let m = mean(units);
    let df = (k - 1) as f64;
    let se = (units.iter().map(|x| (x - m).powi(2)).sum::<f64>() / df / k as f64).sqrt();
    let (p, h) = if se > 0.0 {
        (
            t_two_sided_p(m / se, df),
            t_quantile(d.confidence.upper_tail_quantile(), df) * se,
        )
    } else {
        (if m == 0.0 { 1.0 } else { 0.0 }, 0.0)
    };
    Design {
        unit,
        n: [k, k],
        method: Method::GroupT,
        log_ratio: m,
        log_interval: Some(Interval {
            lo: m - h,
            hi: m + h,
        }),
        se: Some(se),
        df: Some(df),
        p: Some(p),
        ..d
    }
}

/// Mean of the values of each unit (boot or run) of an arm, by unit id.
fn unit_means(v: &[Obs], level: Level) -> BTreeMap<u64, f64> {
    let mut m: BTreeMap<u64, (f64, usize)> = BTreeMap::new();
    for o in v {
        let id = match level {
            Level::Boot => o.boot,
            Level::Run => o.run,
        };
        let e = m.entry(id).or_default();
        e.0 += o.value;
        e.1 += 1;
    }
    m.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
}

/// The level the arms differ in: boot when their boots are known and
/// disjoint, run when their runs are disjoint.
fn level_between(a: &[Obs], b: &[Obs]) -> Option<Level> {
    let boots = |v: &[Obs]| v.iter().map(|o| o.boot).collect::<BTreeSet<u64>>();
    let known = a.iter().chain(b).all(|o| o.boot != 0);
    if known && boots(a).is_disjoint(&boots(b)) {
        Some(Level::Boot)
    } else if runs(a).is_disjoint(&runs(b)) {
        Some(Level::Run)
    } else {
        None
    }
}

fn values(v: &[Obs]) -> Vec<f64> {
    v.iter().map(|o| o.value).collect()
}

fn unpaired_design(d: Design, a: &[Obs], b: &[Obs]) -> Design {
    let (sa, sb) = (
        Sample::new(&values(a)).expect("finite, non-empty"),
        Sample::new(&values(b)).expect("finite, non-empty"),
    );
    // Both means are > 0: values are >= 0 and neither side is all zero.
    let samples = logratio::of_means(&sa, &sb, d.confidence).expect("means above 0");
    if let Some(level) = level_between(a, b) {
        let (ua, ub) = (unit_means(a, level), unit_means(b, level));
        let unit = match level {
            Level::Boot => Unit::Boots,
            Level::Run => Unit::Runs,
        };
        let positive = ua.values().chain(ub.values()).all(|m| *m > 0.0);
        if ua.len() == 1 && ub.len() == 1 || !positive {
            return Design {
                unit,
                n: [ua.len(), ub.len()],
                method: Method::None,
                log_ratio: samples.log_ratio,
                unmeasured: Some(level),
                within: samples.too_few.is_none().then_some(samples.log_interval),
                ..d
            };
        }
        let ln = |m: &BTreeMap<u64, f64>| m.values().map(|x| x.ln()).collect::<Vec<f64>>();
        let r = logratio::of_logs(&ln(&ua), &ln(&ub), d.confidence);
        return Design {
            unit,
            n: [ua.len(), ub.len()],
            method: Method::UnitT,
            ..from_logratio(d, &r)
        };
    }
    // Same runs, not the same rounds: processes or samples.
    let procs = |v: &[Obs]| {
        let mut m: BTreeMap<(u64, u32), Vec<f64>> = BTreeMap::new();
        for o in v {
            m.entry((o.run, o.process)).or_default().push(o.value);
        }
        m.into_values().collect::<Vec<Vec<f64>>>()
    };
    let (pa, pb) = (procs(a), procs(b));
    if pa.len() >= 2 && pb.len() >= 2 {
        let pool_p = one_way(&[pa.clone(), pb.clone()]);
        if pool_p.is_some_and(|p| p < POOL_P) {
            let ln = |g: &[Vec<f64>]| g.iter().map(|v| mean(v).ln()).collect::<Vec<f64>>();
            let r = logratio::of_logs(&ln(&pa), &ln(&pb), d.confidence);
            return Design {
                unit: Unit::Processes,
                n: [pa.len(), pb.len()],
                method: Method::UnitT,
                pool_p,
                ..from_logratio(d, &r)
            };
        }
        return Design {
            pool_p,
            ..from_logratio(d, &samples)
        };
    }
    from_logratio(d, &samples)
}

fn from_logratio(d: Design, r: &logratio::LogRatio) -> Design {
    Design {
        n: [r.n1, r.n2],
        log_ratio: r.log_ratio,
        log_interval: Some(r.log_interval),
        se: Some(r.se),
        df: Some(r.df),
        p: Some(r.p),
        too_few: r.too_few,
        ..d
    }
}

/// One cell of a geomean: its arms and their comparison.
pub type Cell<'a> = (&'a [Obs], &'a [Obs], &'a Design);

/// The geometric mean of the ratios of `cells` (one contender against its
/// baseline, one unit and direction), with an interval that follows the
/// cells' design:
///
/// - cells whose runs (boots) are their units: per run, the mean over
///   the cells of the log of the run's mean; those run values are the
///   units of a t interval, as for one cell (a run effect is shared by
///   every cell of the run, so the cells are no replicates of it);
/// - a cell with one run a side: not measured either;
/// - otherwise the cells are the replicates ([`super::geomean::of_cells`]),
///   never narrower than their own standard errors warrant (taken as
///   fully correlated when the cells' units are groups of rounds that
///   the cells share: runs, boots, processes).
///
/// `None` without a cell.
pub fn geomean(cells: &[Cell<'_>], direction: Direction, confidence: Confidence) -> Option<Design> {
    let first = cells.first()?.2;
    let mean_log = cells.iter().map(|c| c.2.log_ratio).sum::<f64>() / cells.len() as f64;
    let base = Design {
        paired: cells.iter().all(|c| c.2.paired),
        unit: Unit::Cells,
        n: [cells.len(), cells.len()],
        left_out: 0,
        confidence,
        direction,
        method: Method::None,
        log_ratio: mean_log,
        log_interval: None,
        se: None,
        df: None,
        p: None,
        too_few: None,
        unmeasured: None,
        pool_p: None,
        within: None,
    };
    let unmeasured = cells
        .iter()
        .filter_map(|c| c.2.unmeasured)
        .max_by_key(|l| *l == Level::Boot);
    if let Some(level) = unmeasured {
        return Some(Design {
            unmeasured: Some(level),
            ..base
        });
    }
    let level = match first.unit {
        Unit::Runs => Some(Level::Run),
        Unit::Boots => Some(Level::Boot),
        _ => None,
    };
    if let Some(level) =
        level.filter(|_| cells.iter().all(|c| !c.2.paired && c.2.unit == first.unit))
    {
        let per_unit = |side: usize| -> Vec<f64> {
            let maps: Vec<BTreeMap<u64, f64>> = cells
                .iter()
                .map(|c| unit_means(if side == 0 { c.0 } else { c.1 }, level))
                .collect();
            let common: Vec<u64> = maps[0]
                .keys()
                .filter(|k| maps.iter().all(|m| m.get(k).is_some_and(|x| *x > 0.0)))
                .copied()
                .collect();
            common
                .iter()
                .map(|k| maps.iter().map(|m| m[k].ln()).sum::<f64>() / maps.len() as f64)
                .collect()
        };
        let (ua, ub) = (per_unit(0), per_unit(1));
        if !ua.is_empty() && !ub.is_empty() {
            let unit = first.unit;
            if ua.len() == 1 && ub.len() == 1 {
                return Some(Design {
                    unit,
                    n: [1, 1],
                    unmeasured: Some(level),
                    ..base
                });
            }
            let r = logratio::of_logs(&ua, &ub, confidence);
            return Some(Design {
                unit,
                method: Method::UnitT,
                ..from_logratio(base, &r)
            });
        }
    }
    let correlated = cells
        .iter()
        .any(|c| c.2.paired && matches!(c.2.unit, Unit::Runs | Unit::Boots | Unit::Processes));
    let est: Vec<(f64, Option<f64>)> = cells
        .iter()
        .map(|c| (c.2.log_ratio, c.2.se.filter(|_| c.2.too_few.is_none())))
        .collect();
    let g = super::geomean::of_cells(&est, correlated, confidence);
    Some(Design {
        method: if cells.len() == 1 {
            first.method
        } else {
            Method::Cells
        },
        log_interval: g.log_interval,
        p: g.p,
        too_few: (cells.len() == 1).then_some(first.too_few).flatten(),
        ..base
    })
}

impl Design {
    /// The change new/baseline - 1.
    pub fn change(&self) -> f64 {
        self.log_ratio.exp_m1()
    }

    /// The change's interval (above -100%), when measured.
    pub fn change_interval(&self) -> Option<Interval> {
        self.log_interval.map(|i| Interval {
            lo: i.lo.exp_m1(),
            hi: i.hi.exp_m1(),
        })
    }

    /// Whether the interval excludes "no change" (never when unmeasured
    /// or too few).
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && self.log_interval.is_some_and(|i| !i.contains(0.0))
    }

    /// The equivalence verdict against `margin`; `TooFew` when the units
    /// are too few or a level is not measured.
    pub fn verdict(&self, margin: f64) -> super::equivalence::Verdict {
        use super::equivalence::{Verdict, verdict};
        match self.change_interval() {
            Some(iv) if self.too_few.is_none() => verdict(iv, margin),
            _ => Verdict::TooFew,
        }
    }

    /// What these units could have detected at level `alpha` with 80%
    /// power, and the units per side that detect `margin`: the standard
    /// error scaled as 1/sqrt(n). `None` without a standard error.
    pub fn power(&self, alpha: f64, margin: f64) -> Option<Power> {
        let se = self.se.filter(|s| s.is_finite())?;
        if self.too_few.is_some() {
            return None;
        }
        let q = |p: f64| match self.df {
            Some(df) if df >= 1.0 => t_quantile(p, df),
            _ => normal_quantile(p),
        };
        let k = q(1.0 - alpha / 2.0) + q(POWER);
        let n = self.n[0].min(self.n[1]).max(1) as f64;
        let target = margin.ln_1p();
        let need = (target > 0.0 && se > 0.0)
            .then(|| (n * (k * se / target).powi(2)).ceil())
            .filter(|x| *x <= super::power::MAX_SAMPLES as f64)
            .map(|x| (x as usize).max(2));
        Some(Power {
            power: POWER,
            detectable: (k * se).exp_m1(),
            margin,
            need,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{Normal, rng};

    fn conf() -> Confidence {
        Confidence::percent(95.0)
    }

    /// Values of one arm: `runs` runs of `rounds` rounds, value of round r
    /// in run k from `f(k, r)`.
    fn arm(run0: u64, runs: u64, rounds: u32, mut f: impl FnMut(u64, u32) -> f64) -> Vec<Obs> {
        let mut v = Vec::new();
        for k in run0..run0 + runs {
            for r in 0..rounds {
                v.push(Obs {
                    value: f(k, r),
                    boot: 0,
                    run: k,
                    process: 0,
                    round: Some(r),
                });
            }
        }
        v
    }

    #[test]
    fn the_design_picks_the_unit() {
        let d = Direction::Lower;
        // Same run, same rounds: paired.
        let a = arm(1, 1, 10, |_, r| 100.0 + r as f64);
        let b = arm(1, 1, 10, |_, r| 105.0 + r as f64);
        let c = compare(&a, &b, d, conf()).unwrap();
        assert!(c.paired && c.unit == Unit::Rounds && c.method == Method::SignedRank);
        assert!(c.significant() && c.change() > 0.04);
        // Different runs, one each: not measured, no p, no mark.
        let b = arm(2, 1, 10, |_, r| 105.0 + r as f64);
        let c = compare(&a, &b, d, conf()).unwrap();
        assert_eq!((c.unit, c.unmeasured), (Unit::Runs, Some(Level::Run)));
        assert!(c.log_interval.is_none() && c.p.is_none() && !c.significant());
        assert!(c.within.is_some());
        // Known, different boots: the boot is the level.
        let boot = |mut v: Vec<Obs>, id| {
            v.iter_mut().for_each(|o| o.boot = id);
            v
        };
        let c = compare(&boot(a.clone(), 7), &boot(b.clone(), 8), d, conf()).unwrap();
        assert_eq!(c.unmeasured, Some(Level::Boot));
        // Three runs a side: the runs are the units.
        let a3 = arm(1, 3, 10, |k, r| 100.0 + k as f64 + r as f64);
        let b3 = arm(4, 3, 10, |k, r| 105.0 + k as f64 + r as f64);
        let c = compare(&a3, &b3, d, conf()).unwrap();
        assert_eq!((c.unit, c.n, c.method), (Unit::Runs, [3, 3], Method::UnitT));
        // An import (no rounds): independent samples.
        let strip = |v: &[Obs]| {
            v.iter()
                .map(|o| Obs { round: None, ..*o })
                .collect::<Vec<_>>()
        };
        let b1 = arm(1, 1, 10, |_, r| 105.0 + r as f64);
        let c = compare(&strip(&a), &strip(&b1), d, conf()).unwrap();
        assert_eq!(
            (c.paired, c.unit, c.method),
            (false, Unit::Samples, Method::Welch)
        );
    }

    #[test]
    fn degenerate_data_is_named() {
        let d = Direction::Lower;
        let z = arm(1, 1, 4, |_, _| 0.0);
        let one = arm(1, 1, 4, |_, _| 1.0);
        assert_eq!(compare(&z, &z, d, conf()), Err(Degenerate::BothZero));
        assert_eq!(compare(&z, &one, d, conf()), Err(Degenerate::BaselineZero));
        assert_eq!(compare(&one, &z, d, conf()), Err(Degenerate::ContenderZero));
        assert_eq!(compare(&[], &one, d, conf()), Err(Degenerate::Empty));
        let neg = arm(1, 1, 4, |_, _| -1.0);
        assert_eq!(compare(&one, &neg, d, conf()), Err(Degenerate::Negative));
        // Some zeros, not all: the means still give a ratio (unpaired).
        let some = arm(1, 1, 4, |_, r| if r == 0 { 0.0 } else { 1.0 });
        let c = compare(&one, &some, d, conf()).unwrap();
        assert!(!c.paired && c.change_interval().unwrap().lo > -1.0);
    }

    #[test]
    fn paired_runs_that_differ_make_the_run_the_unit() {
        // Three runs, both arms in each; the change itself moves from run
        // to run (+0%, +5%, +10%), far more than within a run.
        let mut g = rng(3);
        let noise = Normal::new(0.0, 0.002);
        let a = arm(1, 3, 12, |_, _| 100.0 * noise.one(&mut g).exp());
        let mut g = rng(4);
        let b = arm(1, 3, 12, |k, _| {
            100.0 * (1.0 + 0.05 * (k - 1) as f64) * noise.one(&mut g).exp()
        });
        let c = compare(&a, &b, Direction::Lower, conf()).unwrap();
        assert!(c.paired);
        assert_eq!(
            (c.unit, c.n, c.method),
            (Unit::Runs, [3, 3], Method::GroupT)
        );
        assert!(c.pool_p.unwrap() < 0.01);
        // df 2: a wide interval that holds 0 despite the tight rounds.
        assert!(c.log_interval.unwrap().contains(0.0), "{c:?}");
    }

    /// The false-alarm rate and power of a path: the share of `trials`
    /// comparisons whose interval excludes 0, for arms drawn by `draw`.
    pub(crate) fn rate(
        trials: usize,
        seed: u64,
        mut draw: impl FnMut(&mut crate::stats::sim::Rng) -> (Vec<Obs>, Vec<Obs>),
    ) -> (f64, f64) {
        let mut g = rng(seed);
        let (mut hit, mut worse) = (0, 0);
        for _ in 0..trials {
            let (a, b) = draw(&mut g);
            let c = compare(&a, &b, Direction::Lower, conf()).unwrap();
            hit += usize::from(c.significant());
            worse += usize::from(c.significant() && c.change() > 0.0);
        }
        (hit as f64 / trials as f64, worse as f64 / trials as f64)
    }

    /// One run of `n` rounds under a busy machine: a shared drift, bursts
    /// of +30..+80% hitting one arm of 1 round in 10, and 2% noise; the
    /// contender `delta` slower.
    pub(crate) fn busy_run(
        g: &mut crate::stats::sim::Rng,
        run: u64,
        n: u32,
        delta: f64,
    ) -> (Vec<Obs>, Vec<Obs>) {
        run_of(g, run, n, delta, crate::stats::sim::busy_round)
    }

    type Round = fn(&mut crate::stats::sim::Rng, u32, f64, f64) -> (f64, f64);

    /// One run of `n` rounds drawn by `round`, the contender `delta`
    /// slower.
    fn run_of(
        g: &mut crate::stats::sim::Rng,
        run: u64,
        n: u32,
        delta: f64,
        round: Round,
    ) -> (Vec<Obs>, Vec<Obs>) {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let phase = g.uniform() * 6.0;
        for r in 0..n {
            let (va, vb) = round(g, r, phase, delta);
            for (v, x) in [(&mut a, va), (&mut b, vb)] {
                v.push(Obs {
                    value: x,
                    boot: 0,
                    run,
                    process: 0,
                    round: Some(r),
                });
            }
        }
        (a, b)
    }

    #[test]
    fn paired_calibration_under_drift_and_bursts() {
        // 1000 A/A comparisons of 30 rounds, then a contender 5% slower
        // measured in 30 and in 60 rounds.
        let (aa, _) = rate(1000, 11, |g| busy_run(g, 1, 30, 0.0));
        let (p30, w30) = rate(1000, 12, |g| busy_run(g, 1, 30, 0.05));
        let (p60, w60) = rate(1000, 13, |g| busy_run(g, 1, 60, 0.05));
        eprintln!(
            "paired, drift + bursts: A/A (30 rounds) {aa}; power at +5%: 30 rounds {p30}, 60 rounds {p60}"
        );
        assert!(aa <= 0.07, "false alarms {aa}");
        assert!(p30 >= 0.85 && w30 == p30, "power {p30}, worse {w30}");
        assert!(p60 >= 0.98 && w60 == p60, "power {p60}, worse {w60}");
    }

    #[test]
    fn paired_calibration_with_bimodal_samples() {
        // Each arm's sample, on its own, 12% slower in 3 of 10: the log
        // ratios are a symmetric mixture, which the signed-rank interval
        // holds its level on; the modes cost power.
        use crate::stats::sim::bimodal_round;
        let (aa, _) = rate(1000, 14, |g| run_of(g, 1, 30, 0.0, bimodal_round));
        let (p30, w30) = rate(1000, 15, |g| run_of(g, 1, 30, 0.05, bimodal_round));
        let (p60, w60) = rate(1000, 16, |g| run_of(g, 1, 60, 0.05, bimodal_round));
        eprintln!(
            "paired, bimodal samples: A/A (30 rounds) {aa}; power at +5%: 30 rounds {p30}, 60 rounds {p60}"
        );
        assert!(aa <= 0.07, "false alarms {aa}");
        assert!(p30 >= 0.5 && w30 == p30, "power {p30}, worse {w30}");
        assert!(p60 > p30 && w60 == p60, "power {p60}, worse {w60}");
    }

    #[test]
    fn run_level_calibration_with_a_shift_between_runs() {
        // Runs of the same code shift by 8% sd (load of the hour); 1000
        // A/A comparisons of one run a side never decide; with three runs
        // a side the false alarms stay near 5%.
        let shift = Normal::new(0.0, 0.08);
        let side = |g: &mut crate::stats::sim::Rng, run0: u64, runs: u64, delta: f64| {
            runs_of(g, run0..run0 + runs, delta, |g| shift.one(g).exp())
        };
        let (one, _) = rate(1000, 21, |g| (side(g, 1, 1, 0.0), side(g, 2, 1, 0.0)));
        let (three, _) = rate(1000, 22, |g| (side(g, 1, 3, 0.0), side(g, 4, 3, 0.0)));
        let (naive, _) = {
            let mut g = rng(23);
            let mut hit = 0;
            for _ in 0..1000 {
                let (a, b) = (side(&mut g, 1, 1, 0.0), side(&mut g, 2, 1, 0.0));
                let r = logratio::of_means(
                    &Sample::new(&values(&a)).unwrap(),
                    &Sample::new(&values(&b)).unwrap(),
                    conf(),
                )
                .unwrap();
                hit += usize::from(r.significant());
            }
            (hit as f64 / 1000.0, ())
        };
        let (power, _) = rate(1000, 24, |g| (side(g, 1, 5, 0.0), side(g, 6, 5, 0.25)));
        eprintln!(
            "runs shifted 8% sd: one run a side {one} (samples as independent: {naive}), three a side {three}; five a side at +25%: {power}"
        );
        assert_eq!(one, 0.0);
        assert!(naive > 0.5, "{naive}");
        assert!((three - 0.05).abs() <= 0.025, "{three}");
        assert!(power >= 0.8, "{power}");
    }

    /// Runs `runs` of 20 rounds each, every run's level drawn by `level`
    /// (once per run, before its rounds), 1% noise within a run, the whole
    /// side `delta` slower.
    fn runs_of(
        g: &mut crate::stats::sim::Rng,
        runs: std::ops::Range<u64>,
        delta: f64,
        level: impl Fn(&mut crate::stats::sim::Rng) -> f64,
    ) -> Vec<Obs> {
        let noise = Normal::new(0.0, 0.01);
        let mut v = Vec::new();
        for k in runs {
            let l = level(g);
            for r in 0..20 {
                v.push(Obs {
                    value: 100.0 * (1.0 + delta) * l * noise.one(g).exp(),
                    boot: 0,
                    run: k,
                    process: 0,
                    round: Some(r),
                });
            }
        }
        v
    }

    #[test]
    fn run_level_calibration_with_bimodal_runs() {
        // Each run of the same code lands in one of two modes (12% slower
        // in 3 of 10 runs), 1% noise within a run: runs as the unit, three
        // a side, 1000 A/A comparisons; five a side at +10%.
        let side = |g: &mut crate::stats::sim::Rng, run0: u64, runs: u64, delta: f64| {
            runs_of(g, run0..run0 + runs, delta, crate::stats::sim::mode)
        };
        let (three, _) = rate(1000, 25, |g| (side(g, 1, 3, 0.0), side(g, 4, 3, 0.0)));
        let (power, worse) = rate(1000, 26, |g| (side(g, 1, 5, 0.0), side(g, 6, 5, 0.10)));
        eprintln!(
            "bimodal runs, runs as the unit: A/A three a side {three}; five a side at +10%: {power}"
        );
        assert!(three <= 0.07, "{three}");
        assert!(power >= 0.5 && worse == power, "{power} {worse}");
    }

    /// A family of `cells` cells of one run, each a busy run of `n` rounds
    /// with the contender `delta` slower: the geomean's design.
    fn geomean_of_busy_cells(
        g: &mut crate::stats::sim::Rng,
        cells: usize,
        n: u32,
        delta: f64,
    ) -> Design {
        geomean_of_cells(g, cells, n, delta, crate::stats::sim::busy_round)
    }

    /// [`geomean_of_busy_cells`] with rounds drawn by `round`.
    fn geomean_of_cells(
        g: &mut crate::stats::sim::Rng,
        cells: usize,
        n: u32,
        delta: f64,
        round: Round,
    ) -> Design {
        let arms: Vec<(Vec<Obs>, Vec<Obs>)> =
            (0..cells).map(|_| run_of(g, 1, n, delta, round)).collect();
        let designs: Vec<Design> = arms
            .iter()
            .map(|(a, b)| compare(a, b, Direction::Lower, conf()).unwrap())
            .collect();
        let cells: Vec<Cell<'_>> = arms
            .iter()
            .zip(&designs)
            .map(|((a, b), d)| (&a[..], &b[..], d))
            .collect();
        geomean(&cells, Direction::Lower, conf()).unwrap()
    }

    #[test]
    fn geomean_calibration_cells_as_replicates() {
        // 500 A/A families of 10 cells x 20 rounds (drift + bursts): the
        // geomean's interval excludes 0 at most about 5% of the time (it
        // is never narrower than the cells' own intervals warrant, so
        // fewer); a 5% change in every cell is found, a 2% one often.
        let mut g = rng(31);
        let trials = 500;
        let (mut aa, mut hit2, mut hit5) = (0, 0, 0);
        for _ in 0..trials {
            aa += usize::from(geomean_of_busy_cells(&mut g, 10, 20, 0.0).significant());
            let d = geomean_of_busy_cells(&mut g, 10, 20, 0.02);
            hit2 += usize::from(d.significant() && d.change() > 0.0);
            let d = geomean_of_busy_cells(&mut g, 10, 20, 0.05);
            hit5 += usize::from(d.significant() && d.change() > 0.0);
        }
        let share = |k: usize| k as f64 / trials as f64;
        let (aa, p2, p5) = (share(aa), share(hit2), share(hit5));
        eprintln!(
            "geomean of 10 paired cells x 20 rounds: A/A {aa}, power at +2% {p2}, at +5% {p5}"
        );
        assert!(aa <= 0.08, "geomean false alarms {aa}");
        assert!(p5 >= 0.95, "geomean power at +5% {p5}");
        assert!(p2 >= 0.4 && p2 < p5, "geomean power at +2% {p2}");
        // Bimodal samples: each arm's sample 12% slower in 3 of 10.
        let (mut aa, mut hit5) = (0, 0);
        for _ in 0..trials {
            let bimodal = crate::stats::sim::bimodal_round;
            aa += usize::from(geomean_of_cells(&mut g, 10, 20, 0.0, bimodal).significant());
            let d = geomean_of_cells(&mut g, 10, 20, 0.05, bimodal);
            hit5 += usize::from(d.significant() && d.change() > 0.0);
        }
        let (aa, p5) = (share(aa), share(hit5));
        eprintln!(
            "geomean of 10 paired cells x 20 rounds, bimodal samples: A/A {aa}, power at +5% {p5}"
        );
        assert!(aa <= 0.08, "bimodal geomean false alarms {aa}");
        assert!(p5 >= 0.8, "bimodal geomean power at +5% {p5}");
        // One cell: the geomean is that cell's own comparison.
        let (a, b) = busy_run(&mut g, 1, 20, 0.05);
        let d = compare(&a, &b, Direction::Lower, conf()).unwrap();
        let one = geomean(&[(&a[..], &b[..], &d)], Direction::Lower, conf()).unwrap();
        assert_eq!(one.method, d.method);
    }
}
