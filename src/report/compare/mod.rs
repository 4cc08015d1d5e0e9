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
//! The marks, intervals and verdicts of the summary follow the design the
//! samples were taken in (`stats::design`): cells measured in the same
//! rounds are compared paired by round, cells of different runs or boots
//! with the run (boot) as the unit, and one run a side is reported as not
//! measured. `--test` chooses only the test of each row's ministat-style
//! block. Every change is new/baseline - 1 from a log-ratio interval; in a
//! family of several tests the interval beside a mark is taken at the
//! level the adjusted p-value is decided at (`stats::multiple::levels`),
//! so a mark and its interval always agree.
//!
//! The geometric mean of the ratios is taken per unit and direction (as
//! benchstat keeps one unit per table): averaging a time with a bandwidth
//! would let a gain in one cancel a gain in the other. Its interval treats
//! the cells as the replicates (or the runs, when the runs are the unit).

mod csv;
mod markdown;
pub mod summary;
mod text;
pub mod verdict;

use indexmap::IndexMap;
use serde::Serialize;

use crate::error::bad_input;
use crate::record::Direction;
use crate::stats::design::{self, Degenerate, Design, Obs};
use crate::stats::equivalence::Verdict;
use crate::stats::multiple::{self, Adjust};
use crate::stats::power::Power;
use crate::stats::student::Moments;
use crate::stats::{Confidence, Sample, Summary, TooFew};
use crate::store::StoredCell;

pub use crate::stats::twosample::{Detail, Test};

/// `--test NAME`: every registered test, with its help.
impl clap::ValueEnum for Test {
    fn value_variants<'a>() -> &'a [Self] {
        crate::stats::twosample::TESTS
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

/// What the store knows of the design of a run: its boot, and whether its
/// cells were measured interleaved in rounds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunBlocks {
    /// The kernel's boot id (`None`: not recorded).
    pub boot: Option<String>,
    /// False for an imported run, whose cells were measured one after the
    /// other: no two of its cells share a round.
    pub imported: bool,
}

/// One operand: the cells it selects.
pub struct Selection {
    pub name: String,
    /// Keys the operand fixed (`zero_copy=true`): left out of pairing.
    pub fixed: Vec<String>,
    pub cells: Vec<StoredCell>,
    /// The blocks of each run (by run id) the cells come from; a run not
    /// listed was measured by kbench on an unknown boot.
    pub runs: std::collections::HashMap<i64, RunBlocks>,
}

impl RunBlocks {
    /// The blocks of every run `cells` come from that `runs` lacks, read
    /// from the runs' recorded settings.
    pub fn read(
        st: &dyn crate::store::StoreRead,
        cells: &[StoredCell],
        runs: &mut std::collections::HashMap<i64, RunBlocks>,
    ) -> anyhow::Result<()> {
        for (c, _) in cells {
            if let std::collections::hash_map::Entry::Vacant(e) = runs.entry(c.run_id) {
                let cfg = st.run_details(c.run_id)?.config;
                e.insert(RunBlocks {
                    boot: cfg.owner.map(|o| o.boot_id),
                    imported: cfg.plan.starts_with("import:"),
                });
            }
        }
        Ok(())
    }
}

/// Which metrics a comparison holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Metrics {
    /// Each benchmark's first metric (a command's `real`).
    Primary,
    /// These, where a cell records them.
    Named(Vec<String>),
    All,
}

/// Keep the metrics `which` asks for in `cells` (and drop cells left with
/// none); a named metric no cell records is an error naming the nearest.
pub fn keep_metrics(cells: &mut Vec<StoredCell>, which: &Metrics) -> anyhow::Result<()> {
    let keep = |c: &crate::record::CellInfo, name: &str| match which {
        Metrics::All => true,
        Metrics::Primary => c.metrics.first().is_some_and(|m| m.name == name),
        Metrics::Named(n) => n.iter().any(|x| x == name),
    };
    if let Metrics::Named(names) = which {
        let mut known: Vec<&str> = Vec::new();
        for (c, _) in cells.iter() {
            for m in &c.info.metrics {
                if !known.contains(&m.name.as_str()) {
                    known.push(&m.name);
                }
            }
        }
        if let Some(n) = names.iter().find(|n| !known.contains(&n.as_str())) {
            return Err(bad_input!(
                "--metric {n}: no compared cell records it{}",
                crate::suggest::hint(n, &known, "")
            ));
        }
    }
    for (c, samples) in cells.iter_mut() {
        let info = c.info.clone();
        samples.retain(|s| keep(&info, s.metric()));
        c.info.metrics.retain(|m| keep(&info, &m.name));
    }
    cells.retain(|(c, _)| !c.info.metrics.is_empty());
    Ok(())
}

/// Numbers for boot ids, shared by every operand of a comparison (0 is
/// "unknown").
#[derive(Default)]
pub(crate) struct BootIds(std::collections::HashMap<String, u64>);

impl BootIds {
    fn id(&mut self, boot: Option<&String>) -> u64 {
        let Some(b) = boot else { return 0 };
        let next = self.0.len() as u64 + 1;
        *self.0.entry(b.clone()).or_insert(next)
    }
}

/// The pairing identity of a cell and metric: everything but the fixed
/// keys. Benchmark, metric, and the cell's remaining factors and
/// parameters.
pub(crate) type PairKey = (String, String, String);

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

pub(crate) fn pair_key(
    c: &crate::record::CellInfo,
    metric: &str,
    fixed: &[String],
    links: &Links,
) -> PairKey {
    if let Some(key) = hyperfine_as_kbench(c, metric, fixed) {
        return key;
    }
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

/// An imported hyperfine result keyed as `kbench run 'CMD'` keys its
/// cell (the command line as the benchmark, wall time as `real`), so the
/// two tools' runs of one command pair; not when the operand selects by
/// `command` (then the command is what the operands differ in).
fn hyperfine_as_kbench(
    c: &crate::record::CellInfo,
    metric: &str,
    fixed: &[String],
) -> Option<PairKey> {
    if c.source != "hyperfine" || fixed.iter().any(|k| k == "command") {
        return None;
    }
    let command = c.factors.get("command")?;
    let metric = if metric == "time" { "real" } else { metric };
    let mut parts = Vec::new();
    for k in c.params.keys().filter(|k| !fixed.contains(k)) {
        parts.push(format!(
            "{k}={}",
            super::param_label(&c.source, &c.params, k)
        ));
    }
    Some((command.clone(), metric.to_string(), parts.join(",")))
}

/// Every value per pairing key, with the blocks it was measured in.
pub(crate) fn observations(
    sel: &Selection,
    links: &Links,
    boots: &mut BootIds,
) -> IndexMap<PairKey, (String, Direction, Vec<Obs>)> {
    let mut out: IndexMap<PairKey, (String, Direction, Vec<Obs>)> = IndexMap::new();
    for (c, samples) in &sel.cells {
        let blocks = sel.runs.get(&c.run_id).cloned().unwrap_or_default();
        let boot = boots.id(blocks.boot.as_ref());
        for m in &c.info.metrics {
            let e = out
                .entry(pair_key(&c.info, &m.name, &sel.fixed, links))
                .or_insert_with(|| (m.unit.clone(), m.direction, Vec::new()));
            e.2.extend(
                samples
                    .iter()
                    .filter(|s| s.metric() == m.name)
                    .map(|s| Obs {
                        value: s.value,
                        boot,
                        run: c.run_id as u64,
                        process: s.process.unwrap_or(0),
                        round: (!blocks.imported).then_some(s.round),
                    }),
            );
        }
    }
    out
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
    /// The values in the order they were taken, for ministat's own
    /// report (`--compat=2015`).
    #[serde(skip)]
    pub points: Vec<f64>,
}

impl Stat {
    fn of(s: &Sample, points: Vec<f64>) -> Stat {
        Stat {
            summary: s.summary(),
            moments: Moments::of(s),
            points,
        }
    }
}

/// One contender against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct Versus {
    /// The contender operand.
    pub name: String,
    /// Samples of the baseline and of the contender.
    pub n1: usize,
    pub n2: usize,
    pub mean: f64,
    /// The change new/baseline - 1 the design's analysis estimates
    /// (paired: the Hodges-Lehmann estimate of the per-round log ratios;
    /// otherwise the ratio of the (unit) means); `None` when the data
    /// has no ratio (`degenerate`).
    pub change: Option<f64>,
    /// The change's interval at `interval_confidence`: the family's
    /// adjusted level when the family has more than one member. `None`
    /// when a level is not measured or the data has no ratio.
    pub interval: Option<[f64; 2]>,
    /// Confidence of `interval`, percent.
    pub interval_confidence: Option<f64>,
    /// Two-sided p-value of the design's test, unadjusted.
    pub p: Option<f64>,
    /// `p` adjusted across the comparison's family ([`Comparison::adjust`]).
    pub p_adjusted: Option<f64>,
    /// Whether `interval` excludes "no change" (it agrees with
    /// `p_adjusted`, or `p` for a family of one).
    pub significant: bool,
    /// What the interval says against the `--margin`.
    pub verdict: Verdict,
    /// Set when the units are too few for the test to decide anything.
    pub too_few: Option<TooFew>,
    /// For a result that shows no difference: the smallest change these
    /// units detect with 80% power (at the level the adjustment applies
    /// to a lone change, alpha / family), and the units per side that
    /// detect the margin.
    pub power: Option<Power>,
    /// The analysis the design called for (at the interval's level).
    pub design: Option<Design>,
    /// Why the data has no ratio, in words.
    pub degenerate: Option<Degenerate>,
    /// The `--test` behind the row's ministat-style block.
    pub detail: Detail,
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
    /// The size of the family this row's tests were adjusted in: the
    /// benchmarks' primary metrics, or one other metric.
    pub family: usize,
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
    /// Its interval (`None` when a level is not measured).
    pub interval: Option<[f64; 2]>,
    /// The same as a change, ratio - 1: better or worse by the direction.
    pub change: f64,
    pub change_interval: Option<[f64; 2]>,
    /// The analysis: its unit (cells, runs, boots), p, and the level it
    /// could not measure.
    pub design: Design,
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
    /// The largest family: the contender-versus-baseline tests with a
    /// p-value of the primary metrics are one family, of each other metric
    /// another (`Row::family`).
    pub family: usize,
    /// One verdict per contender, in words (`verdict.rs`): the
    /// comparison's one row, or the geomean of the first unit's rows.
    pub verdicts: Vec<verdict::VerdictLine>,
    /// One row and no test asked for: the text is the row's summary, its
    /// design line and the verdict (a hyperfine-sized answer), not
    /// ministat's blocks, a summary table and a geomean that repeat it.
    #[serde(skip)]
    pub short: bool,
    /// Whose ministat the Student's t blocks imitate: FreeBSD main's
    /// difference block, or with `--compat=2015` Debian's whole report
    /// (names, plot, table, difference) byte for byte.
    #[serde(skip)]
    pub ministat: crate::ministat::Version,
}

/// Most operands: ministat's symbols.
pub const MAX_OPERANDS: usize = 7;

/// Compare every operand with the first, p-values adjusted by Holm (the
/// tests' entry; the CLI passes its `--adjust`).
#[cfg(test)]
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
    test.check(confidence).map_err(|e| bad_input!("{e}"))?;
    if sels.len() > MAX_OPERANDS {
        return Err(bad_input!("at most {MAX_OPERANDS} operands"));
    }
    let links = links(sels);
    let mut boots = BootIds::default();
    let all: Vec<_> = sels
        .iter()
        .map(|s| observations(s, &links, &mut boots))
        .collect();
    let names: Vec<String> = sels.iter().map(|s| s.name.clone()).collect();
    let how = How {
        test,
        confidence,
        margin,
        adjust,
    };
    of_observations(&names, &all, how)
}

/// The variants of one run, each one cell's samples of one metric, the
/// baseline first, compared as `kbench compare` compares them (Welch's t
/// for the ministat-style block, Holm over the contenders): the numbers
/// of a run's verdict line.
pub fn of_variants(
    names: &[String],
    metric: &str,
    unit: &str,
    direction: Direction,
    obs: &[Vec<Obs>],
    confidence: f64,
) -> anyhow::Result<Comparison> {
    let key: PairKey = (names[0].clone(), metric.to_string(), String::new());
    let all: Vec<Observed> = obs
        .iter()
        .map(|o| IndexMap::from([(key.clone(), (unit.to_string(), direction, o.clone()))]))
        .collect();
    let how = How {
        test: Test::WELCH,
        confidence,
        margin: DEFAULT_MARGIN,
        adjust: Adjust::Holm,
    };
    of_observations(names, &all, how)
}

/// The margin of equivalence a comparison uses unless told (`--margin`).
pub const DEFAULT_MARGIN: f64 = 0.01;

/// Every value per pairing key of one operand.
type Observed = IndexMap<PairKey, (String, Direction, Vec<Obs>)>;

/// How to compare: the settings of `kbench compare`.
#[derive(Clone, Copy)]
struct How {
    test: Test,
    confidence: f64,
    margin: f64,
    adjust: Adjust,
}

/// Compare every operand's observations with the first's, key by key.
fn of_observations(names: &[String], all: &[Observed], how: How) -> anyhow::Result<Comparison> {
    let How {
        test,
        confidence,
        margin,
        adjust,
    } = how;
    let conf = Confidence::percent(confidence);
    let mut rows = Vec::new();
    let mut unpaired = Vec::new();
    // The arms of each test in row order, for the adjusted intervals once
    // the family is known.
    let mut arms: Vec<Arms> = Vec::new();
    for (key, (unit, dir, base)) in &all[0] {
        let others: Vec<Option<&Vec<Obs>>> =
            all[1..].iter().map(|m| m.get(key).map(|e| &e.2)).collect();
        if others.iter().any(|o| o.is_none()) || base.is_empty() {
            unpaired.push(format!("{} {} [{}]", key.0, key.1, key.2));
            continue;
        }
        let base_points: Vec<f64> = base.iter().map(|o| o.value).collect();
        let Ok(a) = Sample::new(&base_points) else {
            unpaired.push(format!(
                "{} {} [{}] (no finite values)",
                key.0, key.1, key.2
            ));
            continue;
        };
        let mut stats = vec![Stat::of(&a, base_points)];
        let mut versus = Vec::new();
        for (j, o) in others.iter().enumerate() {
            let o = o.expect("paired");
            let points: Vec<f64> = o.iter().map(|x| x.value).collect();
            let Ok(b) = Sample::new(&points) else {
                continue;
            };
            stats.push(Stat::of(&b, points));
            let detail = Detail::of(test, &a, &b, confidence);
            let d = design::compare(base, o, *dir, conf);
            versus.push(versus_of(&names[j + 1], &a, &b, d, detail, margin));
            arms.push((base.clone(), o.clone(), *dir));
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
            family: 0,
        });
    }
    if rows.is_empty() {
        return Err(bad_input!(
            "no cell of `{}` has a partner in every other operand (compare like with like, e.g. `campaign:factor=value`)",
            names[0]
        ));
    }
    let geomean = geomeans(&rows, &arms, names, conf);
    let family = adjust_family(&mut rows, &arms, adjust, conf, margin);
    let mut c = Comparison {
        operands: names.to_vec(),
        test,
        confidence,
        margin,
        rows,
        geomean,
        unpaired,
        comparability: None,
        adjust,
        family,
        verdicts: Vec::new(),
        short: false,
        ministat: crate::ministat::Version::FreeBsdMain,
    };
    c.verdicts = verdicts(&c);
    Ok(c)
}

/// One verdict per contender: its row when the comparison has one for
/// the first row's unit, else the geomean of those rows.
fn verdicts(c: &Comparison) -> Vec<verdict::VerdictLine> {
    use verdict::{Judged, line};
    let Some(first) = c.rows.first() else {
        return Vec::new();
    };
    let same = |r: &&Row| r.unit == first.unit && r.direction == first.direction;
    let mut out = Vec::new();
    for name in &c.operands[1..] {
        let mine: Vec<(&Row, &Versus)> = c
            .rows
            .iter()
            .filter(same)
            .flat_map(|r| {
                r.versus
                    .iter()
                    .filter(|v| v.name == *name)
                    .map(move |v| (r, v))
            })
            .collect();
        let judged = match mine.as_slice() {
            [(_, v)] => Some(Judged::row(v)),
            _ => c
                .geomean
                .iter()
                .find(|g| g.name == *name && g.unit == first.unit && g.direction == first.direction)
                .map(Judged::geomean),
        };
        if let Some(j) = judged {
            out.push(line(
                &c.operands[0],
                &j,
                &first.metric,
                &first.unit,
                first.direction,
            ));
        }
    }
    out
}

/// A contender's result from its design (or the words for data without
/// a ratio), before the family's adjustment.
fn versus_of(
    name: &str,
    a: &Sample,
    b: &Sample,
    d: Result<Design, Degenerate>,
    detail: Detail,
    margin: f64,
) -> Versus {
    let (design, degenerate) = match d {
        Ok(d) => (Some(d), None),
        Err(e) => (None, Some(e)),
    };
    let verdict = match (&design, degenerate) {
        (Some(d), _) => d.verdict(margin),
        (None, Some(Degenerate::BothZero)) => Verdict::Equivalent,
        _ => Verdict::Inconclusive,
    };
    Versus {
        name: name.to_string(),
        n1: a.len(),
        n2: b.len(),
        mean: b.mean(),
        change: design.as_ref().map(|d| d.change()),
        interval: design
            .as_ref()
            .and_then(|d| d.change_interval())
            .map(|i| [i.lo, i.hi]),
        interval_confidence: design
            .as_ref()
            .filter(|d| d.log_interval.is_some())
            .map(|d| d.confidence.as_percent()),
        p: design.as_ref().and_then(|d| d.p),
        p_adjusted: None,
        significant: design.as_ref().is_some_and(|d| d.significant()),
        verdict,
        too_few: design.as_ref().and_then(|d| d.too_few),
        power: None,
        design,
        degenerate,
        detail,
    }
}

/// Per unit and direction, per contender: the geomean of the rows'
/// ratios, by the rows' design.
fn geomeans(
    rows: &[Row],
    arms: &[(Vec<Obs>, Vec<Obs>, Direction)],
    names: &[String],
    conf: Confidence,
) -> Vec<GeoRow> {
    // (unit, direction) -> per contender index -> cells
    let mut groups: IndexMap<(String, Direction), Vec<Vec<usize>>> = IndexMap::new();
    let mut i = 0;
    for r in rows {
        let per = groups
            .entry((r.unit.clone(), r.direction))
            .or_insert_with(|| vec![Vec::new(); names.len()]);
        for v in &r.versus {
            let j = names.iter().position(|s| *s == v.name).unwrap_or(0);
            if v.design.is_some() {
                per[j].push(i);
            }
            i += 1;
        }
    }
    let designs: Vec<Option<&Design>> = rows
        .iter()
        .flat_map(|r| r.versus.iter().map(|v| v.design.as_ref()))
        .collect();
    let mut out = Vec::new();
    for ((unit, direction), per) in groups {
        if direction == Direction::Info {
            continue; // no better or worse to average
        }
        for (j, idx) in per.iter().enumerate().skip(1) {
            let cells: Vec<design::Cell<'_>> = idx
                .iter()
                .filter_map(|&i| Some((&arms[i].0[..], &arms[i].1[..], designs[i]?)))
                .collect();
            let Some(g) = design::geomean(&cells, direction, conf) else {
                continue;
            };
            let ratio = g.log_ratio.exp();
            out.push(GeoRow {
                name: names[j].clone(),
                unit: unit.clone(),
                direction,
                k: cells.len(),
                ratio,
                interval: g.log_interval.map(|i| [i.lo.exp(), i.hi.exp()]),
                change: g.change(),
                change_interval: g.change_interval().map(|i| [i.lo, i.hi]),
                design: g,
            });
        }
    }
    out
}

/// Each test's arms: the baseline's and the contender's observations.
type Arms = (Vec<Obs>, Vec<Obs>, Direction);

/// Adjust the p-values of each family of tests ([`family_keys`]: a
/// command's `real` is not diluted by the `maxrss` nobody asked about), as
/// [`adjust_tests`] does. `arms` holds each test's observations in row
/// order. Sets each row's family size and returns the largest.
fn adjust_family(
    rows: &mut [Row],
    arms: &[Arms],
    adjust: Adjust,
    conf: Confidence,
    margin: f64,
) -> usize {
    let keys = family_keys(rows);
    let mut distinct: Vec<&str> = Vec::new();
    for k in &keys {
        if !distinct.contains(&k.as_str()) {
            distinct.push(k);
        }
    }
    let mut largest = 0;
    for m in distinct {
        let mut tests = Vec::new();
        let mut at = 0;
        for (r, k) in rows.iter_mut().zip(&keys) {
            let n = r.versus.len();
            if k == m {
                tests.extend(r.versus.iter_mut().zip(&arms[at..at + n]));
            }
            at += n;
        }
        let family = adjust_tests(tests, adjust, conf, margin);
        for (r, _) in rows.iter_mut().zip(&keys).filter(|(_, k)| *k == m) {
            r.family = family;
        }
        largest = largest.max(family);
    }
    largest
}

/// The family of each row: every benchmark's primary metric (the first
/// its rows show) is one family, and each other metric its own.
pub(crate) fn family_keys(rows: &[Row]) -> Vec<String> {
    let mut primary: IndexMap<&str, &str> = IndexMap::new();
    for r in rows {
        primary.entry(&r.bench).or_insert(&r.metric);
    }
    rows.iter()
        .map(|r| {
            if primary[r.bench.as_str()] == r.metric {
                String::new()
            } else {
                r.metric.clone()
            }
        })
        .collect()
}

/// Adjust the p-values of one family of tests and take each test's
/// interval at the level its adjusted p is decided at, so the mark and
/// the interval agree (a family of one keeps its own level); state the
/// power of each result that shows no difference. Returns the family's
/// size.
fn adjust_tests(
    mut tests: Vec<(&mut Versus, &Arms)>,
    adjust: Adjust,
    conf: Confidence,
    margin: f64,
) -> usize {
    let member = |v: &Versus| v.p.filter(|_| v.too_few.is_none());
    let family = tests.iter().filter(|(v, _)| member(v).is_some()).count();
    // Each test's method chosen for the family's strictest level, so its
    // p and its adjusted interval come from one test.
    let strictest = conf.alpha() / family.max(1) as f64;
    for (v, (a, b, dir)) in tests.iter_mut() {
        if v.design.is_some()
            && let Ok(d) = design::compare_in(a, b, *dir, conf, strictest)
        {
            v.p = d.p;
            v.design = Some(d);
        }
    }
    let ps: Vec<Option<f64>> = tests.iter().map(|(v, _)| member(v)).collect();
    let adjusted = multiple::adjust(&ps, adjust);
    let levels = multiple::levels(&ps, &adjusted, conf.alpha());
    for (((v, (a, b, dir)), padj), level) in tests.into_iter().zip(adjusted).zip(levels) {
        v.p_adjusted = padj;
        let at = match level {
            Some(g) if family > 1 => Confidence::percent(100.0 * (1.0 - g)),
            _ => conf,
        };
        if v.design.is_some()
            && let Ok(d) = design::compare_in(a, b, *dir, at, strictest)
        {
            v.change = Some(d.change());
            v.interval = d.change_interval().map(|i| [i.lo, i.hi]);
            v.interval_confidence = d.log_interval.map(|_| d.confidence.as_percent());
            v.significant = d.significant();
            v.verdict = d.verdict(margin);
            v.too_few = d.too_few;
            v.design = Some(d);
        }
        // A lone change among `family` tests must pass alpha / family
        // (the first step of either adjustment): the power statements
        // use that level.
        if !v.significant && v.too_few.is_none() {
            v.power = v.design.as_ref().and_then(|d| d.power(strictest, margin));
        }
    }
    family
}

/// The families p is adjusted over: `a family of 4 tests`, or the
/// primary metrics' and one per other metric.
pub(crate) fn families(c: &Comparison) -> String {
    let keys = family_keys(&c.rows);
    if keys.iter().all(|k| k.is_empty()) {
        format!("a family of {} tests", c.family)
    } else {
        format!(
            "a family per metric (the primary metrics one; at most {} tests)",
            c.family
        )
    }
}

impl super::render::Render for Comparison {
    const KIND: &'static str = "compare";

    fn text(&self) -> String {
        super::fmt::written(|o| text::compare(o, self))
    }

    fn markdown(&self) -> String {
        markdown::markdown(self)
    }

    fn csv(&self) -> Option<String> {
        Some(csv::csv(self))
    }
}

#[cfg(test)]
mod tests;
