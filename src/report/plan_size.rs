//! `kbench plan-size PILOT --margin 1%`: how many samples each cell needs
//! for a comparison to detect a change of the margin, from the spread a
//! pilot run (or campaign) measured.
//!
//! The answer counts the level that dominates the spread, as a
//! comparison would use it (`stats::design`):
//!
//! - with the cell in several runs of the pilot whose means differ more
//!   than their samples explain (one-way F test of the logs by run, p
//!   below 0.25), the unit is the run: the answer is runs a side;
//! - with `--processes` samples whose processes differ, processes;
//! - otherwise samples, on the log scale (the CV).
//!
//! A pilot of one run cannot see the run-to-run variation: the answer
//! then holds only if runs do not differ, and says so (measure it with
//! `kbench run --repeat N` on the pilot).
//!
//! When the pilot measured other cells of the same benchmark in the same
//! rounds, the paired design's answer is given too: the rounds whose
//! per-round log ratios (against the benchmark's first cell) detect the
//! margin, at least the rounds the signed-rank interval needs.

use indexmap::IndexMap;
use serde::Serialize;

use super::compare::{BootIds, PairKey, Selection, links, observations};
use crate::record::Direction;
use crate::stats::design::{Level, Obs, Unit};
use crate::stats::nested::{self, ErrorTerm, POOL_P};
use crate::stats::power::{self, POWER};
use crate::stats::{Confidence, Sample, paired};

/// One benchmark x metric x cell of the pilot.
#[derive(Clone, Debug, Serialize)]
pub struct SizeRow {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The remaining factors and parameters that identify the cell.
    pub cell: String,
    /// What is counted: samples, processes or runs.
    pub term: Unit,
    /// The pilot's units and their mean and CV.
    pub n: usize,
    pub mean: f64,
    pub cv: f64,
    /// Smallest relative change two sets of `n` detect with 80% power.
    pub detectable: Option<f64>,
    /// Units per side that detect the margin with 80% power.
    pub need: Option<usize>,
    /// The pilot's runs holding the cell.
    pub runs: usize,
    /// With one run: the run-to-run variation is not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<Level>,
    /// The same comparison paired by round, when the pilot interleaved
    /// the cell with another of its benchmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedSize>,
}

/// The rounds a paired comparison needs.
#[derive(Clone, Debug, Serialize)]
pub struct PairedSize {
    /// The cell the log ratios are taken against.
    pub against: String,
    /// Rounds in the pilot and the standard deviation of their log
    /// ratios.
    pub rounds: usize,
    pub sd: f64,
    /// Rounds that detect the margin with 80% power.
    pub need: Option<usize>,
}

/// The whole answer.
#[derive(Clone, Debug, Serialize)]
pub struct PlanSize {
    pub pilot: String,
    pub confidence: f64,
    pub power: f64,
    pub margin: f64,
    pub rows: Vec<SizeRow>,
}

/// The level that dominates a cell's spread and the log values of its
/// units.
fn units(obs: &[Obs], conf: Confidence) -> (Unit, Vec<f64>) {
    let mut by_run: IndexMap<u64, Vec<f64>> = IndexMap::new();
    for o in obs {
        by_run.entry(o.run).or_default().push(o.value.ln());
    }
    if by_run.len() >= 2 {
        let groups: Vec<&Vec<f64>> = by_run.values().collect();
        let all: Vec<f64> = groups.iter().flat_map(|g| g.iter()).copied().collect();
        let grand = all.iter().sum::<f64>() / all.len() as f64;
        let (mut ssb, mut ssw) = (0.0, 0.0);
        for g in &groups {
            let m = g.iter().sum::<f64>() / g.len() as f64;
            ssb += g.len() as f64 * (m - grand).powi(2);
            ssw += g.iter().map(|x| (x - m).powi(2)).sum::<f64>();
        }
        let (dfb, dfw) = ((groups.len() - 1) as f64, (all.len() - groups.len()) as f64);
        if nested::f_test(ssb, dfb, ssw, dfw).is_some_and(|p| p < POOL_P) {
            let means = groups
                .iter()
                .map(|g| (g.iter().map(|x| x.exp()).sum::<f64>() / g.len() as f64).ln())
                .collect();
            return (Unit::Runs, means);
        }
    }
    let mut by_proc: IndexMap<(u64, u32), Vec<f64>> = IndexMap::new();
    for o in obs {
        by_proc.entry((o.run, o.process)).or_default().push(o.value);
    }
    if by_proc.len() >= 2 {
        let groups: Vec<nested::Group> = by_proc
            .iter()
            .map(|((run, _), v)| nested::Group {
                boot: format!("run {run}"),
                values: v.clone(),
            })
            .collect();
        if let Some(c) = nested::components(&groups, conf)
            && c.term != ErrorTerm::Samples
        {
            let means = nested::units(&groups, ErrorTerm::ProcessMeans)
                .iter()
                .map(|m| m.ln())
                .collect();
            return (Unit::Processes, means);
        }
    }
    (Unit::Samples, obs.iter().map(|o| o.value.ln()).collect())
}

/// Per round (run, process, round) the mean of a cell's values.
fn rounds(obs: &[Obs]) -> IndexMap<(u64, u32, u32), f64> {
    let mut m: IndexMap<(u64, u32, u32), (f64, usize)> = IndexMap::new();
    for o in obs {
        if let Some(r) = o.round {
            let e = m.entry((o.run, o.process, r)).or_default();
            e.0 += o.value;
            e.1 += 1;
        }
    }
    m.into_iter().map(|(k, (s, n))| (k, s / n as f64)).collect()
}

/// The paired size of `obs` against `base` (another cell measured in the
/// same rounds).
fn paired_size(
    base: &[Obs],
    obs: &[Obs],
    alpha: f64,
    margin: f64,
) -> Option<(usize, f64, Option<usize>)> {
    let (ra, rb) = (rounds(base), rounds(obs));
    let d: Vec<f64> = ra
        .iter()
        .filter_map(|(k, a)| rb.get(k).map(|b| (a, b)))
        .filter(|(a, b)| **a > 0.0 && **b > 0.0)
        .map(|(a, b)| (b / a).ln())
        .collect();
    let s = Sample::new(&d).ok().filter(|s| s.len() >= 2)?;
    let sd = s.stddev();
    // A one-sample test of the mean log ratio: the two-sample formula with
    // the spread of the differences shared out as sd / sqrt 2 a side.
    let need = power::samples_for(
        sd / 2f64.sqrt(),
        sd / 2f64.sqrt(),
        margin.ln_1p(),
        alpha,
        POWER,
    )
    .map(|n| n.max(paired::need_rounds(alpha)));
    Some((d.len(), sd, need))
}

/// Sizes for every cell of `pilot` to detect `margin` (a fraction).
pub fn plan_size(pilot: &Selection, confidence: f64, margin: f64) -> PlanSize {
    let conf = Confidence::percent(confidence);
    let alpha = conf.alpha();
    let links = links(std::slice::from_ref(pilot));
    let obs = observations(pilot, &links, &mut BootIds::default());
    // The first cell of each benchmark and metric, for the paired size.
    let mut first: IndexMap<(String, String), &PairKey> = IndexMap::new();
    for k in obs.keys() {
        first.entry((k.0.clone(), k.1.clone())).or_insert(k);
    }
    let mut rows = Vec::new();
    for (key, (unit, direction, o)) in &obs {
        let runs = o
            .iter()
            .map(|x| x.run)
            .collect::<std::collections::BTreeSet<_>>()
            .len();
        let positive: Vec<Obs> = o.iter().filter(|x| x.value > 0.0).copied().collect();
        let Ok(raw) = Sample::new(&o.iter().map(|x| x.value).collect::<Vec<_>>()) else {
            continue;
        };
        let (term, logs) = if positive.len() == o.len() {
            units(o, conf)
        } else {
            (Unit::Samples, Vec::new())
        };
        let (n, sd) = match Sample::new(&logs) {
            Ok(s) => (s.len(), Some(s.stddev())),
            Err(_) => (o.len(), None),
        };
        let base = first[&(key.0.clone(), key.1.clone())];
        let paired = (base != key)
            .then(|| paired_size(&obs[base].2, o, alpha, margin))
            .flatten()
            .map(|(rounds, sd, need)| PairedSize {
                against: base.2.clone(),
                rounds,
                sd,
                need,
            });
        rows.push(SizeRow {
            bench: key.0.clone(),
            metric: key.1.clone(),
            unit: unit.clone(),
            direction: *direction,
            cell: key.2.clone(),
            term,
            n,
            mean: raw.mean(),
            cv: raw.cv(),
            detectable: sd
                .and_then(|s| power::detectable_difference(s, s, n, n, alpha, POWER))
                .map(f64::exp_m1),
            need: sd
                .filter(|_| n >= 2)
                .and_then(|s| power::samples_for(s, s, margin.ln_1p(), alpha, POWER)),
            runs,
            unmeasured: (runs == 1).then_some(Level::Run),
            paired,
        });
    }
    PlanSize {
        pilot: pilot.name.clone(),
        confidence,
        power: POWER,
        margin,
        rows,
    }
}

/// The answer as text: one line per cell.
pub fn text(o: &mut String, p: &PlanSize) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "units per side to detect a change of +/-{}% ({:.0}% power, {}% confidence, on the log scale), from {}:",
        p.margin * 100.0,
        p.power * 100.0,
        p.confidence,
        p.pilot
    );
    let mut unmeasured = false;
    for r in &p.rows {
        let cell = if r.cell.is_empty() {
            String::new()
        } else {
            format!(" [{}]", r.cell)
        };
        let what = r.term.plural();
        let need = r
            .need
            .map_or_else(|| "too many (over 10^7)".to_string(), |n| n.to_string());
        let det = r
            .detectable
            .map_or_else(|| "-".to_string(), |d| format!("+/-{:.2}%", d * 100.0));
        let paired = r
            .paired
            .as_ref()
            .map(|s| {
                let need = s
                    .need
                    .map_or_else(|| "too many".to_string(), |n| n.to_string());
                let against = if s.against.is_empty() {
                    "the first cell"
                } else {
                    &s.against
                };
                format!("; paired by round with [{against}]: {need} rounds")
            })
            .unwrap_or_default();
        let one = if r.unmeasured.is_some() {
            unmeasured = true;
            " (one run)"
        } else {
            ""
        };
        o.push_str(&super::fmt::wrap(
            &format!(
                "  {} {}{cell}: {need} {what} a side (pilot: {} {what}{one}, CV {:.2}%, detects {det}){paired}",
                r.bench,
                r.metric,
                r.n,
                r.cv * 100.0
            ),
            super::fmt::WIDTH,
            "      ",
        ));
    }
    if unmeasured {
        o.push_str(&super::fmt::wrap(
            &format!(
                "a pilot of one run: {}; these counts hold only if runs do not differ",
                Level::Run.unmeasured()
            ),
            super::fmt::WIDTH,
            "  ",
        ));
    }
}

impl super::render::Render for PlanSize {
    const KIND: &'static str = "plan_size";

    fn text(&self) -> String {
        let mut o = String::new();
        text(&mut o, self);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fake::Fake;
    use crate::store::memory::MemoryStore;
    use crate::testing::{self, bench, ns, options, plan};

    fn selection(st: &MemoryStore, spec: &str) -> Selection {
        let op = crate::select::resolve(st, spec).unwrap();
        Selection {
            name: spec.into(),
            fixed: vec![],
            cells: crate::select::narrow(
                &op,
                crate::store::StoreRead::cells(st, op.scope).unwrap(),
            )
            .unwrap(),
            runs: Default::default(),
        }
    }

    #[test]
    fn sizes_follow_the_pilots_spread() {
        let mut st = MemoryStore::new();
        // Variant 1 wobbles by about 1%, variant 2 by about 5%.
        let p = plan(
            "pilot",
            vec![bench(
                Fake::new("w", ns(), |v, i| {
                    let k = if v == 1 { 1.0 } else { 5.0 };
                    100.0 + k * [-1.0, 1.0, 0.5, -0.5, 0.0][i as usize % 5]
                }),
                &[1, 2],
            )],
        );
        testing::run(&mut st, &p, &options(10, 0), None);
        let ps = plan_size(&selection(&st, "1"), 95.0, 0.01);
        assert_eq!(ps.rows.len(), 2);
        let (a, b) = (&ps.rows[0], &ps.rows[1]);
        assert_eq!((a.n, a.term), (10, Unit::Samples));
        let logs: Vec<f64> = [99.0f64, 101.0, 100.5, 99.5, 100.0]
            .iter()
            .map(|x| x.ln())
            .collect();
        let sd = Sample::new(&logs).unwrap().stddev();
        let want = power::samples_for(sd, sd, 0.01f64.ln_1p(), 0.05, POWER);
        // The pilot's 10 values repeat the 5 above: nearly the same sd.
        assert!(
            a.need.unwrap().abs_diff(want.unwrap()) <= 1,
            "{a:?} {want:?}"
        );
        // Five times the spread: about 25 times the samples.
        let r = b.need.unwrap() as f64 / a.need.unwrap() as f64;
        assert!((20.0..30.0).contains(&r), "{r}");
        assert!(b.detectable.unwrap() > a.detectable.unwrap());
        // One run: said, and the paired size of variant 2 against 1.
        assert_eq!(a.unmeasured, Some(Level::Run));
        let pz = b.paired.as_ref().expect("interleaved with variant 1");
        assert_eq!(pz.rounds, 10);
        let mut o = String::new();
        text(&mut o, &ps);
        assert!(
            o.contains("samples a side (pilot: 10 samples (one run)"),
            "{o}"
        );
        assert!(o.contains("paired by round with [variant=1]"), "{o}");
        assert!(o.contains("run-to-run variation is not measured"), "{o}");
    }

    #[test]
    fn runs_that_differ_make_the_answer_count_runs() {
        // Three runs whose level moves by 10% (the load of the hour),
        // 1% noise within each: the runs dominate.
        let mut st = MemoryStore::new();
        for level in [1.0, 1.1, 0.95] {
            let p = plan(
                "pilot",
                vec![bench(
                    Fake::new("w", ns(), move |_, i| {
                        100.0 * level * (1.0 + 0.01 * [-1.0, 1.0, 0.5, -0.5, 0.0][i as usize % 5])
                    }),
                    &[1],
                )],
            );
            testing::run(&mut st, &p, &options(10, 0), None);
        }
        let sel = Selection {
            cells: [1, 2, 3]
                .iter()
                .flat_map(|r| selection(&st, &r.to_string()).cells)
                .collect(),
            ..selection(&st, "1")
        };
        let ps = plan_size(&sel, 95.0, 0.05);
        let r = &ps.rows[0];
        assert_eq!(
            (r.term, r.n, r.runs, r.unmeasured),
            (Unit::Runs, 3, 3, None)
        );
        // sd of the run means ~7.6%: 5% needs tens of runs, not samples.
        assert!((10..100).contains(&r.need.unwrap()), "{r:?}");
        let mut o = String::new();
        text(&mut o, &ps);
        assert!(o.contains("runs a side (pilot: 3 runs"), "{o}");
    }

    #[test]
    fn the_paired_size_detects_the_margin_80_percent_of_the_time() {
        // Log ratios with sd 3%: the suggested rounds detect a 2% change
        // with about 80% power (the signed-rank interval is a little
        // less efficient than the t the formula assumes).
        use crate::record::Direction;
        use crate::stats::sim::{Normal, rng};
        let mut g = rng(61);
        let sd = 0.03;
        let need = power::samples_for(
            sd / 2f64.sqrt(),
            sd / 2f64.sqrt(),
            0.02f64.ln_1p(),
            0.05,
            POWER,
        )
        .unwrap()
        .max(paired::need_rounds(0.05));
        let d = Normal::new(0.02f64.ln_1p(), sd);
        let trials = 1000;
        let hits = (0..trials)
            .filter(|_| {
                let logs = d.draw(&mut g, need);
                paired::of_log_ratios(&logs, Direction::Lower, Confidence::percent(95.0))
                    .unwrap()
                    .significant()
            })
            .count();
        let power = hits as f64 / trials as f64;
        eprintln!("plan-size paired: {need} rounds for 2% at sd 3%: power {power}");
        assert!((0.73..=0.87).contains(&power), "{power}");
    }
}
