//! `kbench compare A B [C ...]`: ministat-style differences of recorded
//! results, then a benchstat-style summary with geometric-mean rows.
//!
//! Each operand selects stored cells (`select.rs`: a run, a campaign,
//! narrowed by factor or parameter values). Cells are paired across
//! operands by benchmark, metric and every factor and parameter that the
//! selection did not fix. For each pair the model keeps each operand's
//! summary and the chosen test's result as numbers; the text renderer
//! prints ministat's table rows and difference block from them, byte for
//! byte what `kbench ministat` prints for the same numbers.
//!
//! The geometric mean of the ratios is taken per unit and direction (as
//! benchstat keeps one unit per table): averaging a time with a bandwidth
//! would let a gain in one cancel a gain in the other. Each is also given
//! as an improvement, oriented so that a positive value is better whatever
//! the direction.

use indexmap::IndexMap;
use serde::Serialize;

use crate::error::bad_input;
use crate::record::Direction;
use crate::stats::bootstrap::{BootResult, Bootstrap};
use crate::stats::equivalence::{self, Verdict};
use crate::stats::geomean::geomean_of_ratios;
use crate::stats::multiple::{self, Adjust};
use crate::stats::nested::{self, ErrorTerm};
use crate::stats::power::{self, Power};
use crate::stats::student::{self, MinistatDiff, Moments};
use crate::stats::ttest::TTest;
use crate::stats::utest::UTest;
use crate::stats::{Confidence, Sample, Summary, TooFew, TwoSample};
use crate::store::StoredCell;

/// The test behind each comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// ministat's Student's t (pooled variance, table t values).
    Student,
    /// Welch's t (unequal variances, exact quantiles).
    Welch,
    /// Mann-Whitney U (no normality assumed).
    Mwu,
    /// Bootstrap percentile interval of the ratio of means.
    Bootstrap,
}

/// One operand: the cells it selects.
pub struct Selection {
    pub name: String,
    /// Keys the operand fixed (`zero_copy=true`): left out of pairing.
    pub fixed: Vec<String>,
    pub cells: Vec<StoredCell>,
    /// The boot id of each run (by run id) the cells come from, for the
    /// nested analysis of `--processes` samples; a run not listed is its
    /// own boot.
    pub boots: std::collections::HashMap<i64, String>,
}

/// The pairing identity of a cell and metric: everything but the fixed
/// keys. Benchmark, metric, and the cell's remaining factors and
/// parameters.
pub(crate) type PairKey = (String, String, String);
/// Unit, direction, and the values.
pub(crate) type Pooled = (String, Direction, Vec<f64>);

/// Per benchmark, the (factor, parameter) pairs whose values determine
/// each other across every selected cell: the parameter a factor sets
/// (`env.WORK` of factor `work`, `pipe_size` of factor `ps`). The factor
/// stands for both in pairing, and an operand fixing either fixes both.
pub(crate) type Links = IndexMap<String, Vec<(String, String)>>;

pub(crate) fn links(sels: &[Selection]) -> Links {
    let mut by_bench: IndexMap<&str, Vec<&crate::record::CellInfo>> = IndexMap::new();
    for sel in sels {
        for (c, _) in &sel.cells {
            by_bench.entry(&c.info.bench).or_default().push(&c.info);
        }
    }
    let mut out = Links::new();
    for (bench, cells) in by_bench {
        let mut pairs = Vec::new();
        for f in cells[0].factors.keys() {
            for p in cells[0].params.keys() {
                if p == f {
                    continue;
                }
                let mut fp: IndexMap<Option<&String>, Option<&serde_json::Value>> = IndexMap::new();
                let mut pf: IndexMap<Option<&serde_json::Value>, Option<&String>> = IndexMap::new();
                let one_to_one = cells.iter().all(|c| {
                    let (x, y) = (c.factors.get(f), c.params.get(p));
                    *fp.entry(x).or_insert(y) == y && *pf.entry(y).or_insert(x) == x
                });
                // A factor with one value says nothing about what it sets.
                if one_to_one && fp.len() > 1 {
                    pairs.push((f.clone(), p.clone()));
                }
            }
        }
        out.insert(bench.to_string(), pairs);
    }
    out
}

/// An operand's fixed keys, with what a fixed factor sets and the factor
/// that sets a fixed parameter.
fn fixed_with_links(fixed: &[String], bench: &str, links: &Links) -> Vec<String> {
    let mut out = fixed.to_vec();
    for (f, p) in links.get(bench).into_iter().flatten() {
        if fixed.contains(f) || fixed.contains(p) {
            for k in [f, p] {
                if !out.contains(k) {
                    out.push(k.clone());
                }
            }
        }
    }
    out
}

fn pair_key(c: &crate::record::CellInfo, metric: &str, fixed: &[String], links: &Links) -> PairKey {
    let fixed = fixed_with_links(fixed, &c.bench, links);
    let set_by_factor = |k: &String| {
        links
            .get(&c.bench)
            .is_some_and(|l| l.iter().any(|(_, p)| p == k))
    };
    let mut parts = Vec::new();
    for (k, v) in &c.factors {
        if !fixed.contains(k) {
            parts.push(format!("{k}={v}"));
        }
    }
    for (k, v) in &c.params {
        if !fixed.contains(k) && !c.factors.contains_key(k) && !set_by_factor(k) {
            let _ = v;
            // Sizes as the user writes them (`2k`), like every label.
            parts.push(format!(
                "{k}={}",
                super::param_label(&c.source, &c.params, k)
            ));
        }
    }
    (c.bench.clone(), metric.to_string(), parts.join(","))
}

/// Values per pairing key of one selection (samples of cells that share a
/// key, e.g. from several runs of a campaign, are pooled).
pub(crate) fn values(sel: &Selection, links: &Links) -> IndexMap<PairKey, Pooled> {
    let mut out: IndexMap<PairKey, Pooled> = IndexMap::new();
    for (c, samples) in &sel.cells {
        for m in &c.info.metrics {
            let e = out
                .entry(pair_key(&c.info, &m.name, &sel.fixed, links))
                .or_insert_with(|| (m.unit.clone(), m.direction, Vec::new()));
            e.2.extend(
                samples
                    .iter()
                    .filter(|s| *s.metric == *m.name)
                    .map(|s| s.value),
            );
        }
    }
    out
}

/// Values per pairing key and process of `--processes` (run, process),
/// with each process's boot; keys without process data are left out.
pub(crate) fn process_values(
    sel: &Selection,
    links: &Links,
) -> IndexMap<PairKey, Vec<nested::Group>> {
    let mut out: IndexMap<PairKey, IndexMap<(i64, u32), nested::Group>> = IndexMap::new();
    for (c, samples) in &sel.cells {
        let boot = sel
            .boots
            .get(&c.run_id)
            .cloned()
            .unwrap_or_else(|| format!("run {}", c.run_id));
        for m in &c.info.metrics {
            for s in samples.iter().filter(|s| *s.metric == *m.name) {
                let Some(p) = s.process else { continue };
                out.entry(pair_key(&c.info, &m.name, &sel.fixed, links))
                    .or_default()
                    .entry((c.run_id, p))
                    .or_insert_with(|| nested::Group {
                        boot: boot.clone(),
                        values: Vec::new(),
                    })
                    .values
                    .push(s.value);
            }
        }
    }
    out.into_iter()
        .map(|(k, v)| (k, v.into_values().collect()))
        .collect()
}

/// The nested analysis behind a comparison of `--processes` samples.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessTerm {
    /// The unit the test used: samples, process means or boot means.
    pub term: ErrorTerm,
    /// Processes of the baseline and of the contender.
    pub processes: [usize; 2],
    /// Pooled F tests of "processes differ" and "boots differ".
    pub process_p: Option<f64>,
    pub boot_p: Option<f64>,
    /// Welch's p over every sample as if independent (what a
    /// one-process analysis would say).
    pub naive_p: f64,
}

/// One operand's numbers for one row, as ministat prints them.
#[derive(Clone, Debug, Serialize)]
pub struct Stat {
    #[serde(flatten)]
    pub summary: Summary,
    /// ministat's moments (input-order mean, two-pass variance), for its
    /// difference block.
    #[serde(skip)]
    pub moments: Moments,
}

impl Stat {
    fn of(s: &Sample) -> Stat {
        Stat {
            summary: s.summary(),
            moments: Moments::of(s),
        }
    }
}

/// The result of the test behind one comparison.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "test", rename_all = "lowercase")]
pub enum Detail {
    Student(MinistatDiff),
    Welch(TTest),
    Mwu(UTest),
    Bootstrap(BootResult),
}

/// One contender against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    /// The contender operand.
    pub name: String,
    pub n1: usize,
    pub n2: usize,
    pub mean: f64,
    /// Relative change of the mean, (b - a) / a.
    pub delta: f64,
    /// Interval of the relative change (Mann-Whitney: none).
    pub interval: Option<[f64; 2]>,
    /// Two-sided p-value (ministat's table test has none: `null`).
    pub p: Option<f64>,
    pub significant: bool,
    /// What the interval says against the `--margin`.
    pub verdict: Verdict,
    /// Set when a set is too small for the test to decide anything.
    pub too_few: Option<TooFew>,
    pub detail: Detail,
    /// `p` adjusted across the comparison's family ([`Comparison::adjust`]);
    /// `significant` and `verdict` follow it when the family has more
    /// than one member.
    pub p_adjusted: Option<f64>,
    /// For a result that shows no difference: the smallest change these
    /// samples detect with 80% power (at the level the adjustment
    /// applies to a lone change, α / family), and the samples per side
    /// that detect the margin.
    pub power: Option<Power>,
    /// With `--processes` samples on both sides: the error term the
    /// comparison used. When it is not the samples, `p`, `interval`,
    /// `significant` and `verdict` are Welch's over the process (or boot)
    /// means, not the `detail` test's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_term: Option<ProcessTerm>,
}

/// One benchmark x metric x cell compared across the operands.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The remaining factors and parameters that identify the cell.
    pub cell: String,
    /// Baseline size and mean.
    pub n: usize,
    pub mean: f64,
    /// Each operand's numbers, the baseline first.
    pub stats: Vec<Stat>,
    pub versus: Vec<Versus>,
}

/// The geometric mean of one contender's ratios over the rows of one unit
/// and direction.
#[derive(Clone, Debug, Serialize)]
pub struct GeoRow {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    /// Rows averaged.
    pub k: usize,
    /// Geometric mean of contender / baseline.
    pub ratio: f64,
    pub interval: Option<[f64; 2]>,
    /// The same oriented so that positive is better: ratio - 1 when higher
    /// is better, 1 - ratio when lower is.
    pub improvement: f64,
    pub improvement_interval: Option<[f64; 2]>,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub operands: Vec<String>,
    pub test: Test,
    pub confidence: f64,
    pub margin: f64,
    pub rows: Vec<Row>,
    /// Per unit and direction, per contender.
    pub geomean: Vec<GeoRow>,
    /// Cells of the baseline with no partner in some operand.
    pub unpaired: Vec<String>,
    /// Recorded facts that differ between the operands' runs
    /// (`comparability.rs`); filled in by the caller, which reads the
    /// runs' fingerprints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparability: Option<super::comparability::Comparability>,
    /// How the p-values are adjusted across the family.
    pub adjust: Adjust,
    /// The family: every contender-versus-baseline test with a p-value.
    pub family: usize,
}

/// Most operands: ministat's symbols.
pub const MAX_OPERANDS: usize = 7;

/// Compare every operand with the first, p-values adjusted by Holm.
#[cfg_attr(not(test), allow(dead_code))]
pub fn compare(
    sels: &[Selection],
    test: Test,
    confidence: f64,
    margin: f64,
) -> anyhow::Result<Comparison> {
    compare_adjusted(sels, test, confidence, margin, Adjust::Holm)
}

/// Compare every operand with the first; the family of all the tests'
/// p-values is adjusted by `adjust`.
pub fn compare_adjusted(
    sels: &[Selection],
    test: Test,
    confidence: f64,
    margin: f64,
    adjust: Adjust,
) -> anyhow::Result<Comparison> {
    let level = student::level_index(confidence);
    if test == Test::Student && level.is_none() {
        return Err(bad_input!(
            "--confidence {confidence}: ministat's Student's t has 80, 90, 95, 98, 99 and 99.5; use --test welch for other levels"
        ));
    }
    if sels.len() > MAX_OPERANDS {
        return Err(bad_input!("at most {MAX_OPERANDS} operands"));
    }
    let conf = Confidence::percent(confidence);
    let links = links(sels);
    let all: Vec<_> = sels.iter().map(|s| values(s, &links)).collect();
    let procs: Vec<_> = sels.iter().map(|s| process_values(s, &links)).collect();
    let mut rows = Vec::new();
    let mut unpaired = Vec::new();
    // The samples of each test, for the power statements once the family
    // is known.
    let mut pairs: Vec<(Sample, Sample)> = Vec::new();
    // (unit, direction) -> per contender ratios
    let mut ratios: IndexMap<(String, Direction), Vec<Vec<f64>>> = IndexMap::new();
    for (key, (unit, dir, base)) in &all[0] {
        let others: Vec<Option<&Vec<f64>>> =
            all[1..].iter().map(|m| m.get(key).map(|e| &e.2)).collect();
        if others.iter().any(|o| o.is_none()) || base.is_empty() {
            unpaired.push(format!("{} {} [{}]", key.0, key.1, key.2));
            continue;
        }
        let Ok(a) = Sample::new(base) else {
            unpaired.push(format!(
                "{} {} [{}] (no finite values)",
                key.0, key.1, key.2
            ));
            continue;
        };
        let mut stats = vec![Stat::of(&a)];
        let mut versus = Vec::new();
        let unit_ratios = ratios
            .entry((unit.clone(), *dir))
            .or_insert_with(|| vec![Vec::new(); sels.len()]);
        for (j, o) in others.iter().enumerate() {
            let Ok(b) = Sample::new(o.expect("paired")) else {
                continue;
            };
            stats.push(Stat::of(&b));
            let mut v = Versus {
                name: sels[j + 1].name.clone(),
                ..one_test(test, &a, &b, conf, level, margin)
            };
            let mut pair = (a.clone(), b.clone());
            if let (Some(ga), Some(gb)) = (procs[0].get(key), procs[j + 1].get(key))
                && let Some(n) = nested::compare(ga, gb, conf)
            {
                if n.term != ErrorTerm::Samples && v.too_few.is_none() {
                    let t = &n.test;
                    v.p = Some(t.p);
                    v.interval = Some([t.relative.lo, t.relative.hi]);
                    v.significant = t.significant();
                    v.verdict = equivalence::verdict(t.relative, margin);
                    if let (Ok(x), Ok(y)) = (
                        Sample::new(&nested::units(ga, n.term)),
                        Sample::new(&nested::units(gb, n.term)),
                    ) {
                        pair = (x, y);
                    }
                }
                v.error_term = Some(ProcessTerm {
                    term: n.term,
                    processes: [ga.len(), gb.len()],
                    process_p: n.process_p,
                    boot_p: n.boot_p,
                    naive_p: n.naive.p,
                });
            }
            versus.push(v);
            unit_ratios[j + 1].push(b.mean() / a.mean());
            pairs.push(pair);
        }
        rows.push(Row {
            bench: key.0.clone(),
            metric: key.1.clone(),
            unit: unit.clone(),
            direction: *dir,
            cell: key.2.clone(),
            n: a.len(),
            mean: a.mean(),
            stats,
            versus,
        });
    }
    if rows.is_empty() {
        return Err(bad_input!(
            "no cell of `{}` has a partner in every other operand (compare like with like, e.g. `campaign:factor=value`)",
            sels[0].name
        ));
    }
    let family = adjust_family(&mut rows, &pairs, adjust, conf, margin);
    let mut geomean = Vec::new();
    for ((unit, direction), per) in &ratios {
        if *direction == Direction::Info {
            continue; // no better or worse to average
        }
        for (j, r) in per.iter().enumerate().skip(1) {
            let Ok(g) = geomean_of_ratios(r, conf) else {
                continue;
            };
            let orient = |x: f64| match direction {
                Direction::Lower => 1.0 - x,
                Direction::Higher | Direction::Info => x - 1.0,
            };
            let interval = g.interval.map(|i| [i.lo, i.hi]);
            geomean.push(GeoRow {
                name: sels[j].name.clone(),
                unit: unit.clone(),
                direction: *direction,
                k: g.k,
                ratio: g.geomean,
                improvement: orient(g.geomean),
                improvement_interval: interval.map(|[lo, hi]| {
                    let (a, b) = (orient(lo), orient(hi));
                    [a.min(b), a.max(b)]
                }),
                interval,
            });
        }
    }
    Ok(Comparison {
        operands: sels.iter().map(|s| s.name.clone()).collect(),
        test,
        confidence,
        margin,
        rows,
        geomean,
        unpaired,
        comparability: None,
        adjust,
        family,
    })
}

/// Adjust the p-values of every test across the family, base the marks
/// and verdicts on the adjusted values (when the family has more than one
/// member: a lone test keeps its own decision, ministat's), and state the
/// power of each result that shows no difference. `pairs` holds each
/// test's samples in row order. Returns the family's size.
fn adjust_family(
    rows: &mut [Row],
    pairs: &[(Sample, Sample)],
    adjust: Adjust,
    conf: Confidence,
    margin: f64,
) -> usize {
    let ps: Vec<Option<f64>> = rows
        .iter()
        .flat_map(|r| r.versus.iter())
        .map(|v| v.p.filter(|_| v.too_few.is_none()))
        .collect();
    let family = multiple::family_size(&ps);
    let adjusted = multiple::adjust(&ps, adjust);
    // A lone change among `family` tests must pass α / family (the first
    // step of either adjustment): the power statements use that level.
    let lone = Confidence::percent(100.0 - conf.alpha() * 100.0 / family.max(1) as f64);
    let versus = rows.iter_mut().flat_map(|r| r.versus.iter_mut());
    for ((v, padj), (a, b)) in versus.zip(adjusted).zip(pairs) {
        v.p_adjusted = padj;
        if family > 1
            && let Some(q) = padj
            && q >= conf.alpha()
        {
            v.significant = false;
            v.verdict = match v.verdict {
                Verdict::Different => Verdict::Inconclusive,
                Verdict::DifferentWithinMargin => Verdict::Equivalent,
                other => other,
            };
        }
        if !v.significant && v.too_few.is_none() {
            v.power = power::of_samples(a, b, lone, margin);
        }
    }
    family
}

/// Run the chosen test and summarise it (the contender's name is left for
/// the caller to fill in).
fn one_test(
    test: Test,
    a: &Sample,
    b: &Sample,
    conf: Confidence,
    level: Option<usize>,
    margin: f64,
) -> Versus {
    let detail = match test {
        Test::Student => Detail::Student(student::ministat_diff(
            Moments::of(a),
            Moments::of(b),
            level.expect("checked"),
            student::RelativeFormula::FreeBsdMain,
        )),
        Test::Welch => Detail::Welch(TTest::welch(a, b, conf)),
        Test::Mwu => Detail::Mwu(UTest::new(a, b, conf)),
        Test::Bootstrap => {
            // 10^4 resamples, fewer for huge sets so the cost stays near
            // 2*10^7 draws (the percentile interval needs ~10^3 at least).
            let resamples = (20_000_000 / (a.len() + b.len())).clamp(1_000, 10_000);
            Detail::Bootstrap(Bootstrap { resamples, seed: 1 }.ratio_of_means(a, b, conf))
        }
    };
    let r: &dyn TwoSample = match &detail {
        Detail::Student(d) => d,
        Detail::Welch(t) => t,
        Detail::Mwu(u) => u,
        Detail::Bootstrap(b) => b,
    };
    // A set of one value has no spread: no test can say anything about it,
    // whatever the other set holds.
    let too_few = r.too_few().or_else(|| {
        (a.len() < 2 || b.len() < 2).then_some(TooFew {
            need: 2,
            confidence: conf,
        })
    });
    let interval = r.relative_interval().filter(|_| too_few.is_none());
    Versus {
        name: String::new(),
        n1: a.len(),
        n2: b.len(),
        mean: b.mean(),
        delta: b.mean() / a.mean() - 1.0,
        interval: interval.map(|i| [i.lo, i.hi]),
        // ministat's table gives no p-value: the same pooled t test's,
        // with the exact t distribution.
        p: r.p_value()
            .or_else(|| (test == Test::Student).then(|| TTest::student(a, b, conf).p)),
        significant: too_few.is_none() && r.significant(),
        verdict: if too_few.is_some() {
            Verdict::TooFew
        } else {
            equivalence::verdict_of(r, margin)
        },
        too_few,
        detail,
        p_adjusted: None,
        power: None,
        error_term: None,
    }
}

#[cfg(test)]
mod tests;
