//! `kbench explain A B`: why two operands differ, from what `run
//! --profile` and `--counters` recorded with their samples.
//!
//! Cells of the two operands are paired as `compare` pairs them (by
//! benchmark and the factors and parameters neither operand fixed). Each
//! pair's rounds are paired too: by round when both cells were measured
//! in the same run (interleaved), else the i-th recorded round of each.
//! Per round, every symbol's self share (samples whose leaf it is) and
//! inclusive share (samples whose stack holds it) of the cell's profile
//! are computed, and turned into a cost per operation: the share times
//! the CPU time per operation the round measured (its `task-clock/op`
//! counter, or a command's `user` + `sys` per run). Their differences
//! over the rounds give each symbol's change with an interval
//! (`stats::shares`), simultaneous over the family of symbols tested, so
//! a change inside the profile's own noise is marked as such. A share is
//! not a cost: when one function gets slower, the others' shares fall
//! though they cost what they did, so symbols are tested and ranked by
//! cost (by share only where a round has no CPU time to scale by, which
//! the document says). Counters per operation (`<counter>/op` metrics)
//! are compared the same way and listed first when they moved.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::error::bad_input;
use crate::profile::Folded;
use crate::report::compare::{Selection, links, pair_key};
use crate::report::explain::{CellExplain, CounterChange, Explain, SymbolChange};
use crate::select;
use crate::stats::shares::paired_diff;
use crate::store::{StoreRead, StoredCell};

/// A symbol is tested when its mean share reaches this on either side.
pub const MIN_SHARE: f64 = 0.01;

/// How an explanation is asked for.
pub struct Ask<'a> {
    pub a: &'a str,
    pub b: &'a str,
    /// Two-sided confidence, 0..1, of each family.
    pub confidence: f64,
    /// Symbol rows shown per cell.
    pub top: usize,
}

/// One side's rounds: (run, round) with its profile and counter values.
#[derive(Default)]
struct Side {
    rounds: BTreeMap<(i64, u32), Round>,
}

#[derive(Default)]
struct Round {
    profile: Option<Folded>,
    counters: BTreeMap<String, Vec<f64>>,
    /// A command's `user` and `sys` seconds per run, summed over samples.
    cpu_s: Vec<f64>,
}

/// The counter whose value per operation a profile's samples divide.
const BASIS: &str = "task-clock/op";

impl Round {
    /// The CPU time per operation this round's profile stands for, in ns:
    /// its task-clock per operation, else a command's user + sys per run.
    fn cpu_ns_per_op(&self) -> Option<f64> {
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        match self.counters.get(BASIS) {
            Some(v) => mean(v),
            None => mean(&self.cpu_s).map(|s| s * 1e9),
        }
        .filter(|x| x.is_finite() && *x > 0.0)
    }
}

/// Explain the difference between operands `a` (baseline) and `b`.
pub fn explain(st: &dyn StoreRead, ask: &Ask<'_>) -> anyhow::Result<Explain> {
    let sels = [selection(st, ask.a)?, selection(st, ask.b)?];
    let e = of_selections(st, &sels, ask, None)?;
    if e.cells.is_empty() {
        return Err(bad_input!(
            "`{}` and `{}` hold no cells of the same benchmark to explain (see `kbench report`)",
            ask.a,
            ask.b
        ));
    }
    if e.cells.iter().all(|c| c.rounds == 0) {
        return Err(bad_input!(
            "`{}` and `{}`: no profiles recorded in common; record them with `kbench run --profile`",
            ask.a,
            ask.b
        ));
    }
    Ok(e)
}

/// What `compare --explain` and `check --explain` attach: the cells named
/// in `worst` (as [`cell_name`] names them), in that order, of the
/// selections `sels` (baseline, contender); counters alone where no
/// profile was recorded.
pub fn attach(
    st: &dyn StoreRead,
    sels: &[Selection; 2],
    worst: &[String],
    ask: &Ask<'_>,
) -> anyhow::Result<Explain> {
    of_selections(st, sels, ask, Some(worst))
}

/// The name a pair of cells goes by: the benchmark and the factors and
/// parameters neither operand fixed (a comparison row's `bench` and
/// `cell`).
pub fn cell_name(bench: &str, rest: &str) -> String {
    if rest.is_empty() {
        bench.to_string()
    } else {
        format!("{bench} {rest}")
    }
}

/// The `k` rows of a comparison worth explaining: those whose change is
/// significant first, then by the size of the change, each cell once.
pub fn worst_rows(rows: &[crate::report::compare::Row], k: usize) -> Vec<String> {
    let mut ranked: Vec<(bool, f64, String)> = (rows.iter())
        .filter_map(|r| {
            let v = r.versus.first()?;
            Some((v.significant, v.change?.abs(), cell_name(&r.bench, &r.cell)))
        })
        .collect();
    ranked.sort_by(|x, y| (y.0.cmp(&x.0)).then(y.1.total_cmp(&x.1)));
    let mut out: Vec<String> = Vec::new();
    for (_, _, name) in ranked {
        if out.len() < k && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// The explanation of the cells of `sels` paired (those named in `only`,
/// in its order, when given).
fn of_selections(
    st: &dyn StoreRead,
    sels: &[Selection; 2],
    ask: &Ask<'_>,
    only: Option<&[String]>,
) -> anyhow::Result<Explain> {
    let l = links(sels);
    let (ka, kb) = (keyed(&sels[0], &l), keyed(&sels[1], &l));
    let names: Vec<&String> = match only {
        Some(o) => o.iter().filter(|n| ka.contains_key(*n)).collect(),
        None => ka.keys().collect(),
    };
    let mut cells = Vec::new();
    for name in names {
        let Some(cb) = kb.get(name) else { continue };
        let (sa, sb) = (side(st, &ka[name])?, side(st, cb)?);
        cells.push(explain_cell(name, &sa, &sb, ask));
    }
    Ok(Explain {
        a: ask.a.to_string(),
        b: ask.b.to_string(),
        confidence: ask.confidence,
        min_share: MIN_SHARE,
        cells,
    })
}

/// A selection's cells by the name they pair on.
fn keyed<'s>(
    sel: &'s Selection,
    l: &crate::report::compare::Links,
) -> indexmap::IndexMap<String, Vec<&'s StoredCell>> {
    let mut m: indexmap::IndexMap<String, Vec<&StoredCell>> = indexmap::IndexMap::new();
    for c in &sel.cells {
        let (bench, _, rest) = pair_key(&c.0.info, "", &sel.fixed, l);
        m.entry(cell_name(&bench, &rest)).or_default().push(c);
    }
    m
}

/// The cells an operand (`compare`'s syntax) selects, every metric kept.
pub fn selection(st: &dyn StoreRead, spec: &str) -> anyhow::Result<Selection> {
    let op = select::resolve(st, spec)?;
    let cells = select::narrow(&op, st.cells(op.scope)?)?;
    Ok(Selection {
        name: spec.to_string(),
        fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
        cells,
        runs: HashMap::new(),
    })
}

/// The cells of stored runs `runs` (a check's baseline or candidate).
pub fn of_runs(st: &dyn StoreRead, name: &str, runs: &[i64]) -> anyhow::Result<Selection> {
    let mut cells = Vec::new();
    for &r in runs {
        cells.extend(st.cells(crate::store::Scope::Run(r))?);
    }
    Ok(Selection {
        name: name.to_string(),
        fixed: Vec::new(),
        cells,
        runs: HashMap::new(),
    })
}

/// A side's rounds from its cells' stored profiles and counter metrics.
fn side(st: &dyn StoreRead, cells: &[&StoredCell]) -> anyhow::Result<Side> {
    let mut s = Side::default();
    for (c, samples) in cells {
        for p in st.profiles(c.id)? {
            s.rounds.entry((c.run_id, p.round)).or_default().profile = Some(p.stacks);
        }
        // A command's CPU time, by sample: user + sys.
        let mut cpu: BTreeMap<(u32, u32), (f64, u8)> = BTreeMap::new();
        for x in samples.iter() {
            let m = x.metric();
            if crate::system::counters::is_metric(m) {
                s.rounds
                    .entry((c.run_id, x.round))
                    .or_default()
                    .counters
                    .entry(m.to_owned())
                    .or_default()
                    .push(x.value);
            } else if c.info.kind == crate::record::Kind::Command && (m == "user" || m == "sys") {
                let e = cpu.entry((x.round, x.seq)).or_default();
                e.0 += x.value;
                e.1 += 1;
            }
        }
        for ((round, _), (v, n)) in cpu {
            if n == 2 {
                s.rounds.entry((c.run_id, round)).or_default().cpu_s.push(v);
            }
        }
    }
    Ok(s)
}

/// The rounds of `a` and `b` paired: by (run, round) when they share
/// rounds, else in order. Says which.
fn pair_rounds<'s>(a: &'s Side, b: &'s Side) -> (Vec<(&'s Round, &'s Round)>, bool) {
    let same: Vec<_> = (a.rounds.iter())
        .filter_map(|(k, ra)| b.rounds.get(k).map(|rb| (ra, rb)))
        .collect();
    if !same.is_empty() {
        return (same, true);
    }
    (a.rounds.values().zip(b.rounds.values()).collect(), false)
}

/// Self and inclusive shares of each symbol in one round's profile.
fn shares(f: &Folded) -> BTreeMap<String, (f64, f64)> {
    let total = f.total() as f64;
    let mut m: BTreeMap<String, (f64, f64)> = BTreeMap::new();
    for (stack, n) in &f.0 {
        let frames: Vec<&str> = stack.split(';').collect();
        let n = *n as f64 / total;
        if let Some(leaf) = frames.last() {
            m.entry(leaf.to_string()).or_default().0 += n;
        }
        let unique: BTreeSet<&str> = frames.into_iter().collect();
        for s in unique {
            m.entry(s.to_string()).or_default().1 += n;
        }
    }
    m
}

fn explain_cell(name: &str, a: &Side, b: &Side, ask: &Ask<'_>) -> CellExplain {
    let (pairs, by_round) = pair_rounds(a, b);
    // Each pair's profiles and CPU ns per operation.
    type Profiled<'r> = (&'r Folded, &'r Folded, Option<(f64, f64)>);
    let prof: Vec<Profiled> = (pairs.iter())
        .filter_map(|(x, y)| {
            let (fx, fy) = (x.profile.as_ref()?, y.profile.as_ref()?);
            let cpu = x.cpu_ns_per_op().zip(y.cpu_ns_per_op());
            (fx.total() > 0 && fy.total() > 0).then_some((fx, fy, cpu))
        })
        .collect();
    let sh: Vec<_> = prof
        .iter()
        .map(|(x, y, _)| (shares(x), shares(y)))
        .collect();
    // When every pair has its CPU time: a symbol's cost is its share of it.
    let basis: Option<Vec<(f64, f64)>> = prof.iter().map(|p| p.2).collect();
    let n = sh.len().max(1) as f64;
    // Mean shares per symbol, to choose the family.
    let mut mean: BTreeMap<&str, [f64; 4]> = BTreeMap::new();
    for (x, y) in &sh {
        for (side, m) in [(0, x), (2, y)] {
            for (s, (sf, inc)) in m {
                let e = mean.entry(s.as_str()).or_default();
                e[side] += sf / n;
                e[side + 1] += inc / n;
            }
        }
    }
    let tested: Vec<(&str, bool)> = (mean.iter())
        .flat_map(|(s, v)| {
            [
                (v[0].max(v[2]) >= MIN_SHARE).then_some((*s, true)),
                (v[1].max(v[3]) >= MIN_SHARE
                    && v[1].max(v[3]) < 0.999
                    && (v[1], v[3]) != (v[0], v[2]))
                    .then_some((*s, false)),
            ]
        })
        .flatten()
        .collect();
    let family = tested.len();
    let mut symbols: Vec<SymbolChange> = tested
        .iter()
        .filter_map(|&(s, own)| {
            let get = |m: &BTreeMap<String, (f64, f64)>| {
                m.get(s).map_or(0.0, |v| if own { v.0 } else { v.1 })
            };
            // Per pair: (A, B) as cost per op in ns, else as share in %.
            let per: Vec<(f64, f64)> = match &basis {
                Some(b) => (sh.iter().zip(b))
                    .map(|((x, y), (ba, bb))| (get(x) * ba, get(y) * bb))
                    .collect(),
                None => (sh.iter())
                    .map(|(x, y)| (100.0 * get(x), 100.0 * get(y)))
                    .collect(),
            };
            let d: Vec<f64> = per.iter().map(|(x, y)| y - x).collect();
            let diff = paired_diff(&d, ask.confidence, family)?;
            let v = mean[s];
            let (sa, sb) = if own { (v[0], v[2]) } else { (v[1], v[3]) };
            let cost = |i: usize| {
                basis
                    .as_ref()
                    .map(|_| per.iter().map(|p| [p.0, p.1][i]).sum::<f64>() / per.len() as f64)
            };
            Some(SymbolChange {
                symbol: s.to_string(),
                measure: if own { "self" } else { "incl" }.into(),
                share_a: 100.0 * sa,
                share_b: 100.0 * sb,
                cost_a: cost(0),
                cost_b: cost(1),
                changed: diff.changed(),
                diff,
            })
        })
        .collect();
    // What changed first; a function's own cost before the inclusive
    // costs of its callers (which carry the same change); then by how
    // much it changed: the function that got slower leads.
    symbols.sort_by(|x, y| {
        (y.changed.cmp(&x.changed))
            .then((x.measure != "self").cmp(&(y.measure != "self")))
            .then(y.diff.mean.abs().total_cmp(&x.diff.mean.abs()))
    });
    let shown = symbols
        .len()
        .min(ask.top.max(symbols.iter().filter(|s| s.changed).count()));
    symbols.truncate(shown);
    let merged = prof.iter().fold(
        Default::default(),
        |(mut x, mut y): (Folded, Folded), (a, b, _)| {
            x.merge(a);
            y.merge(b);
            (x, y)
        },
    );
    CellExplain {
        cell: name.to_string(),
        paired_by_round: by_round,
        rounds: sh.len(),
        samples_a: prof.iter().map(|(x, _, _)| x.total()).sum(),
        samples_b: prof.iter().map(|(_, y, _)| y.total()).sum(),
        family,
        // The ratio of the two sides' means: of their sums.
        cpu_ratio: basis.as_ref().map(|b| {
            let (a, c) = b.iter().fold((0.0, 0.0), |s, p| (s.0 + p.0, s.1 + p.1));
            c / a
        }),
        cost_unit: basis.map(|_| "cpu-ns/op".to_string()),
        counter_rounds: (pairs.iter())
            .filter(|(x, y)| !x.counters.is_empty() && !y.counters.is_empty())
            .count(),
        counters: counters(&pairs, ask.confidence),
        symbols,
        merged,
    }
}

/// Counters per operation that moved, paired by round like the profiles.
fn counters(pairs: &[(&Round, &Round)], confidence: f64) -> Vec<CounterChange> {
    let names: BTreeSet<&String> = pairs.iter().flat_map(|(x, _)| x.counters.keys()).collect();
    let mean = |v: &Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
    let per: Vec<(&String, Vec<(f64, f64)>)> = names
        .into_iter()
        .map(|m| {
            let v = (pairs.iter())
                .filter_map(|(x, y)| Some((mean(x.counters.get(m)?), mean(y.counters.get(m)?))))
                .collect();
            (m, v)
        })
        .collect();
    let family = per.len();
    let mut out: Vec<CounterChange> = per
        .into_iter()
        .filter_map(|(m, v)| {
            let d: Vec<f64> = v.iter().map(|(x, y)| y - x).collect();
            let diff = paired_diff(&d, confidence, family)?;
            let n = v.len() as f64;
            Some(CounterChange {
                metric: m.clone(),
                a: v.iter().map(|p| p.0).sum::<f64>() / n,
                b: v.iter().map(|p| p.1).sum::<f64>() / n,
                changed: diff.changed(),
                diff,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        (y.changed.cmp(&x.changed)).then(y.diff.mean.abs().total_cmp(&x.diff.mean.abs()))
    });
    out
}

/// Each profiled cell of `ops` with its profiles over all rounds merged,
/// named by its key (and run, with several runs).
pub fn flames(
    st: &dyn StoreRead,
    ops: &[select::Operand],
) -> anyhow::Result<Vec<(String, Folded)>> {
    let mut out = Vec::new();
    for op in ops {
        let (cells, runs) = select::cells(st, op)?;
        let cells = select::narrow(op, cells)?;
        for (c, _) in &cells {
            let mut f = Folded::default();
            for p in st.profiles(c.id)? {
                f.merge(&p.stacks);
            }
            if f.total() > 0 {
                let name = match runs.len() {
                    1 => c.info.key.clone(),
                    _ => format!("{} (run {})", c.info.key, c.run_id),
                };
                out.push((name, f));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_and_inclusive_shares_count_each_frame_once() {
        let f = Folded(vec![
            ("main;f;f".into(), 2),
            ("main;g".into(), 1),
            ("main".into(), 1),
        ]);
        let s = shares(&f);
        assert_eq!(s["f"], (0.5, 0.5));
        assert_eq!(s["g"], (0.25, 0.25));
        assert_eq!(s["main"], (0.25, 1.0));
    }
}
