//! `kbench check`: a regression gate for CI. The candidate (runs just
//! made, or stored runs) is compared with a baseline chosen from the
//! store by its labels, through the design-aware comparison every other
//! report uses (`report::compare`: paired by round within a run, the run
//! as the unit across runs, Holm-adjusted intervals); this module only
//! reads those intervals against a threshold and turns them into a
//! verdict and an exit status.
//!
//! A cell is a regression only when its whole adjusted interval lies past
//! the threshold on the worse side; an improvement when it lies past it on
//! the better side; `ok` when the interval rules out a regression of the
//! threshold; otherwise (the interval straddles the threshold, or a level
//! of variation is not measured) it is `unclear`, and the check is
//! inconclusive unless a regression was found. A baseline whose kernel or
//! CPU facts differ from the candidate's (and were not declared with
//! `--expect`) makes the check inconclusive, never failed.

pub mod calibrate;
pub mod interleaved;

use crate::plan::gate::Policy;
use crate::record::{Direction, Labels};
use crate::report::check::{Cell, Check, Outcome, Verdict, pct};
use crate::report::comparability;
use crate::report::compare::{self, Comparison, RunBlocks, Selection, Test};
use crate::stats::design::Degenerate;
use crate::stats::multiple::Adjust;
use crate::store::{self, RunRow, StoreRead};
pub use interleaved::Against;

/// Facts whose difference between the baseline and the candidate makes a
/// check inconclusive (unless `--expect`ed): they change what is measured.
const HARD_FACTS: &[&str] = &[
    "kernel.release",
    "kernel.cmdline",
    "cpu.model",
    "cpu.microcode",
    "cpu.smt",
    "cpu.governor",
    "cpu.turbo",
    "mm.thp",
    "clocksource",
];

/// What the user asked of the gate.
#[derive(Clone, Debug)]
pub struct Options {
    /// The change (a fraction) a regression must exceed.
    pub threshold: f64,
    /// The baseline: labels (`branch=main`) or a run id.
    pub baseline: String,
    /// `--expect better`: every gated cell must improve.
    pub expect_better: bool,
    /// Facts meant to differ (`--expect kernel.release`).
    pub expect: Vec<String>,
    pub confidence: f64,
    /// The plan's `[gate]` section.
    pub gate: Option<crate::plan::gate::Gate>,
}

/// The baseline runs `selector` names for a candidate on `host` whose
/// first run is `first`: a run id, or the latest `history` runs before it
/// on the same host whose labels match, that ended done and agree with
/// the latest of them in every fact that moves results (so the history
/// is one machine state). Errors (exit 2) when none match.
pub fn baseline_runs(
    st: &dyn StoreRead,
    selector: &str,
    host: &str,
    first: i64,
    history: usize,
) -> anyhow::Result<Vec<RunRow>> {
    if let Ok(id) = selector.parse::<i64>() {
        let r = st
            .run(id)?
            .ok_or_else(|| crate::error::bad_input!("--baseline {id}: no run {id} in the store"))?;
        return Ok(vec![r]);
    }
    let want: Labels = crate::record::parse_labels(selector)
        .map_err(|e| crate::error::bad_input!("--baseline {selector}: {e}"))?;
    let mut rows: Vec<RunRow> = store::runs(st, None)?
        .into_iter()
        .filter(|r| {
            r.id < first
                && r.host == host
                && r.status == crate::record::RunStatus::Done
                && r.samples > 0
                && crate::record::labels_match(&r.labels, &want)
        })
        .collect();
    rows.reverse();
    let Some(latest) = rows.first() else {
        return Err(crate::error::bad_input!(
            "--baseline {selector}: no finished run on host {host} has these labels (see `kbench runs`)"
        ));
    };
    let state = hard_facts(&st.run_details(latest.id)?.fingerprint);
    let mut out = Vec::new();
    for r in rows {
        if out.len() == history {
            break;
        }
        if hard_facts(&st.run_details(r.id)?.fingerprint) == state {
            out.push(r);
        }
    }
    out.reverse();
    Ok(out)
}

/// The values of [`HARD_FACTS`] in a fingerprint, as comparability reads
/// them.
fn hard_facts(fp: &crate::system::Fingerprint) -> Vec<Vec<String>> {
    // One operand never differs: read the facts by comparing with an
    // empty fingerprint, whose every fact is "not recorded".
    let empty = crate::system::Fingerprint::default();
    let c = comparability::check(&[("x".into(), vec![fp]), ("e".into(), vec![&empty])], &[]);
    c.differences
        .into_iter()
        .filter(|d| HARD_FACTS.contains(&d.fact.as_str()))
        .map(|d| {
            let mut v = d.values.into_iter().next().unwrap_or_default();
            v.insert(0, d.fact);
            v
        })
        .collect()
}

/// The design-aware comparison of the candidate's runs with the
/// baseline's, Holm-adjusted across the cells.
pub(crate) fn compare_sides(
    st: &dyn StoreRead,
    baseline: &[RunRow],
    candidate: &[RunRow],
    o: &Options,
) -> anyhow::Result<Comparison> {
    let sel = |name: &str, runs: &[RunRow]| -> anyhow::Result<Selection> {
        let mut cells = Vec::new();
        for r in runs {
            cells.extend(st.cells(store::Scope::Run(r.id))?);
        }
        let mut blocks = std::collections::HashMap::new();
        RunBlocks::read(st, &cells, &mut blocks)?;
        Ok(Selection {
            name: name.to_string(),
            fixed: Vec::new(),
            cells,
            runs: blocks,
        })
    };
    let sels = [sel("baseline", baseline)?, sel("candidate", candidate)?];
    compare::compare_adjusted(&sels, Test::WELCH, o.confidence, o.threshold, Adjust::Holm)
}

/// Compare the candidate's runs with the baseline's and decide.
pub fn check(
    st: &dyn StoreRead,
    baseline: &[RunRow],
    candidate: &[RunRow],
    o: &Options,
) -> anyhow::Result<Check> {
    let cmp = compare_sides(st, baseline, candidate, o)?;
    let fps = |runs: &[RunRow]| -> anyhow::Result<Vec<crate::system::Fingerprint>> {
        runs.iter()
            .map(|r| Ok(st.run_details(r.id)?.fingerprint))
            .collect()
    };
    let (fa, fb) = (fps(baseline)?, fps(candidate)?);
    let comparability = comparability::check(
        &[
            ("baseline".into(), fa.iter().collect()),
            ("candidate".into(), fb.iter().collect()),
        ],
        &o.expect,
    );
    let inconclusive: Vec<String> = comparability
        .differences
        .iter()
        .filter(|d| !d.expected && HARD_FACTS.contains(&d.fact.as_str()))
        .map(|d| {
            format!(
                "{} differs: baseline {}, candidate {} (re-measure the baseline, or --expect {} if intended)",
                d.fact,
                d.values[0].join(" / "),
                d.values[1].join(" / "),
                d.fact
            )
        })
        .collect();
    let cells = gate(&cmp, o, Naming::Stored);
    Ok(Check {
        outcome: outcome(&cells, &inconclusive),
        threshold: o.threshold,
        baseline_selector: o.baseline.clone(),
        baseline_runs: baseline.iter().map(|r| r.id).collect(),
        candidate_runs: candidate.iter().map(|r| r.id).collect(),
        interleaved: false,
        level: level_words(&cmp, baseline.len(), candidate.len()),
        inconclusive,
        cells,
        comparability,
        unpaired: cmp.unpaired.clone(),
    })
}

/// The comparison of a run's candidate cells with its baseline cells,
/// measured interleaved in the same rounds (`interleaved.rs`).
pub(crate) fn compare_interleaved(
    st: &dyn StoreRead,
    runs: &[RunRow],
    against: &Against,
    o: &Options,
) -> anyhow::Result<Comparison> {
    let sels = interleaved::selections(st, runs, against)?;
    compare::compare_adjusted(&sels, Test::WELCH, o.confidence, o.threshold, Adjust::Holm)
}

/// Check the candidate levels of `runs` against the baseline level
/// measured with them, and decide. Both sides share every run, so no fact
/// can differ between them.
pub fn check_interleaved(
    st: &dyn StoreRead,
    runs: &[RunRow],
    against: &Against,
    o: &Options,
) -> anyhow::Result<Check> {
    let cmp = compare_interleaved(st, runs, against, o)?;
    let fps: Vec<crate::system::Fingerprint> = runs
        .iter()
        .map(|r| Ok(st.run_details(r.id)?.fingerprint))
        .collect::<anyhow::Result<_>>()?;
    let comparability = comparability::check(
        &[
            ("baseline".into(), fps.iter().collect()),
            ("candidate".into(), fps.iter().collect()),
        ],
        &o.expect,
    );
    let naming = match against {
        Against::Level { .. } => Naming::Level,
        Against::Command(_) => Naming::Command,
    };
    let cells = gate(&cmp, o, naming);
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    Ok(Check {
        outcome: outcome(&cells, &[]),
        threshold: o.threshold,
        baseline_selector: against.describe(),
        baseline_runs: ids.clone(),
        candidate_runs: ids.clone(),
        interleaved: true,
        level: interleaved_words(&cmp, &ids),
        inconclusive: Vec::new(),
        cells,
        comparability,
        unpaired: cmp.unpaired.clone(),
    })
}

/// A regression (unless facts differ), else inconclusive when facts
/// differ or a cell is unclear, else a pass.
fn outcome(cells: &[Cell], inconclusive: &[String]) -> Outcome {
    if cells
        .iter()
        .any(|c| matches!(c.verdict, Verdict::Regression | Verdict::NotBetter))
        && inconclusive.is_empty()
    {
        Outcome::Regression
    } else if !inconclusive.is_empty() || cells.iter().any(|c| c.verdict == Verdict::Unclear) {
        Outcome::Inconclusive
    } else {
        Outcome::Pass
    }
}

/// How a gated cell names its candidate: the stored-baseline check has
/// one, a level is named in the cell (`side=new`), a command is the
/// benchmark.
#[derive(Clone, Copy, PartialEq)]
enum Naming {
    Stored,
    Level,
    Command,
}

/// How the plan's `[gate]` (or `--threshold`) treats a compared row.
pub(crate) fn policy(r: &compare::Row, o: &Options) -> Policy {
    o.gate.as_ref().map_or(Policy::Threshold(o.threshold), |g| {
        g.policy(&r.bench, &r.metric, o.threshold)
    })
}

/// Each compared cell against the threshold, worst first (then by how
/// far past the threshold).
fn gate(cmp: &Comparison, o: &Options, naming: Naming) -> Vec<Cell> {
    let mut out = Vec::new();
    let each = cmp
        .rows
        .iter()
        .flat_map(|r| r.versus.iter().enumerate().map(move |v| (r, v)));
    for (r, (j, v)) in each {
        // Counters per operation are context, gated only where the plan's
        // `[gate]` names them.
        let named = |g: &crate::plan::gate::Gate| g.names(&r.bench, &r.metric);
        if crate::system::counters::is_metric(&r.metric) && !o.gate.as_ref().is_some_and(named) {
            continue;
        }
        let policy = policy(r, o);
        let t = match policy {
            Policy::Threshold(t) => t,
            _ => 0.0,
        };
        // Deterministic: every value of both sides must be the same.
        let same = match (r.stats.first(), r.stats.get(j + 1)) {
            (Some(a), Some(b)) => {
                let (a, b) = (&a.summary, &b.summary);
                a.min == a.max && b.min == b.max && a.min == b.min
            }
            _ => false,
        };
        // The change in the worse direction: positive is worse.
        let worse = |x: f64| match r.direction {
            Direction::Lower => x,
            _ => -x,
        };
        let unmeasured = v.design.as_ref().and_then(|d| d.unmeasured);
        let (verdict, why) = match (r.direction, v.interval) {
            _ if policy == Policy::ReportOnly => (Verdict::Info, None),
            _ if policy == Policy::MustNotChange && same => (Verdict::Ok, None),
            _ if policy == Policy::MustNotChange => (
                Verdict::Regression,
                Some("must not change, and its values differ".to_string()),
            ),
            (Direction::Info, _) => (Verdict::Info, None),
            // Deterministic and equal on both sides (a code size).
            (_, None) if v.degenerate == Some(Degenerate::BothZero) => (Verdict::Ok, None),
            (_, None) => (
                Verdict::Unclear,
                Some(match (unmeasured, &v.too_few, &v.degenerate) {
                    (Some(l), _, _) => l.unmeasured().to_string(),
                    (_, Some(_), _) => "too few units for an interval".to_string(),
                    (_, _, Some(d)) => d.to_string(),
                    _ => "no interval".to_string(),
                }),
            ),
            (_, Some([lo, hi])) => {
                let (a, b) = (worse(lo).min(worse(hi)), worse(lo).max(worse(hi)));
                if a > t {
                    (Verdict::Regression, None)
                } else if b < -t {
                    (Verdict::Improvement, None)
                } else if b <= t {
                    (Verdict::Ok, None)
                } else {
                    (
                        Verdict::Unclear,
                        Some(format!(
                            "the interval reaches past the threshold; a regression of {} is not ruled out",
                            pct(t)
                        )),
                    )
                }
            }
        };
        let verdict = if o.expect_better && verdict == Verdict::Ok {
            Verdict::NotBetter
        } else {
            verdict
        };
        let (bench, cell) = match naming {
            Naming::Stored => (r.bench.clone(), r.cell.clone()),
            Naming::Level if r.cell.is_empty() => (r.bench.clone(), v.name.clone()),
            Naming::Level => (r.bench.clone(), format!("{},{}", v.name, r.cell)),
            Naming::Command => (v.name.clone(), r.cell.clone()),
        };
        out.push(Cell {
            verdict,
            bench,
            metric: r.metric.clone(),
            unit: r.unit.clone(),
            direction: r.direction,
            cell,
            change: v.change,
            interval: v.interval,
            interval_confidence: v.interval_confidence,
            threshold: t,
            level: v.design.as_ref().map(|d| d.unit.plural().to_string()),
            why,
        });
    }
    let badness = |c: &Cell| {
        let w = c.change.unwrap_or(0.0);
        -match c.direction {
            Direction::Lower => w,
            _ => -w,
        }
    };
    out.sort_by(|a, b| {
        a.verdict
            .cmp(&b.verdict)
            .then(badness(a).total_cmp(&badness(b)))
    });
    out
}

/// The level the verdicts used, in words.
fn level_words(cmp: &Comparison, nb: usize, nc: usize) -> String {
    let first = cmp
        .rows
        .iter()
        .filter_map(|r| r.versus.first()?.design.as_ref())
        .next();
    let runs = format!("{nb} baseline run(s) against {nc} candidate run(s)");
    match first {
        None => format!("none: {runs}, no cell with a ratio"),
        Some(d) => match d.unmeasured {
            Some(l) => format!(
                "{}: {runs}; {}-to-{} variation NOT measured (use --baseline-history N, or --repeat N)",
                d.unit.plural(),
                l.name(),
                l.name()
            ),
            None if d.unit == crate::stats::design::Unit::Runs => {
                format!("runs: {runs}; run-to-run variation measured from the runs")
            }
            None => format!("{}: {runs}", d.unit.plural()),
        },
    }
}

/// The level of an interleaved check, in words.
fn interleaved_words(cmp: &Comparison, runs: &[i64]) -> String {
    let unit = cmp
        .rows
        .iter()
        .filter_map(|r| r.versus.first()?.design.as_ref())
        .map(|d| d.unit)
        .next();
    let ids = runs
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    match unit {
        None => format!("none: run(s) {ids}, no cell with a ratio"),
        Some(crate::stats::design::Unit::Runs) => format!(
            "runs: baseline and candidate interleaved in each of runs {ids}; the run is the unit"
        ),
        Some(u) => format!(
            "{}: baseline and candidate interleaved in run {ids}, paired by round",
            u.plural()
        ),
    }
}
