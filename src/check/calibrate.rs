//! `kbench check --calibrate`: which threshold this machine and design
//! allow. The code under test is measured twice as a check measures its
//! candidate (A/A: nothing changed), and each measurement is compared with
//! the baseline as `kbench check` would compare it.
//!
//! A check fails a cell only when the cell's whole adjusted interval lies
//! past the threshold, and passes it only when the interval's worse end is
//! inside it; identical code whose interval reaches past the threshold is
//! `unclear`. So on identical code the worse end, the estimate plus the
//! half-width `h`, decides: with the estimate's standard error `se` (both
//! on the log scale), the worse end stays within `h + 1.645 se` in 95% of
//! checks of this design. That is the smallest threshold at which at most
//! 5% of checks of identical code raise an alarm (fail or inconclusive);
//! a change is then caught in 95% of checks when it exceeds the threshold
//! by another `h + 1.645 se`. Of the two A/A measurements the wider one
//! counts, and of a benchmark's cells the widest.

use std::fmt::Write;

use super::{Options, compare_sides, policy};
use crate::plan::gate::Policy;
use crate::record::Direction;
use crate::report::compare::Comparison;
use crate::stats::dist::normal_quantile;
use crate::store::{RunRow, StoreRead};

/// One gated benchmark and metric.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub bench: String,
    pub metric: String,
    /// The A/A changes measured, one per measurement and cell.
    pub changes: Vec<f64>,
    /// The smallest threshold (a fraction) for at most 5% alarms on
    /// identical code; `None` when a level of variation is not measured.
    pub threshold: Option<f64>,
    /// The change that such a check catches in 95% of checks.
    pub catches: Option<f64>,
}

/// The rows of `pairs` (baseline runs, A/A candidate runs), each benchmark
/// and metric once, in the comparison's order.
pub fn calibrate(
    st: &dyn StoreRead,
    pairs: &[(Vec<RunRow>, Vec<RunRow>)],
    o: &Options,
) -> anyhow::Result<Vec<Row>> {
    let cmps = pairs
        .iter()
        .map(|(baseline, candidate)| compare_sides(st, baseline, candidate, o))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(rows(&cmps, o))
}

/// The rows of A/A runs that each hold the baseline level and candidate
/// levels of identical code, measured interleaved (`--against`).
pub fn calibrate_interleaved(
    st: &dyn StoreRead,
    runs: &[Vec<RunRow>],
    against: &super::Against,
    o: &Options,
) -> anyhow::Result<Vec<Row>> {
    let cmps = runs
        .iter()
        .map(|r| super::compare_interleaved(st, r, against, o))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(rows(&cmps, o))
}

/// Each benchmark and metric of the A/A comparisons once, in their
/// order, with the widest threshold any of them needs.
fn rows(cmps: &[Comparison], o: &Options) -> Vec<Row> {
    let z = normal_quantile(0.95);
    let mut rows: Vec<Row> = Vec::new();
    for cmp in cmps {
        let each = cmp
            .rows
            .iter()
            .flat_map(|r| r.versus.iter().map(move |v| (r, v)));
        for (r, v) in each {
            if !matches!(policy(r, o), Policy::Threshold(_)) || r.direction == Direction::Info {
                continue;
            }
            // The log-scale half-width and standard error of this check.
            let need = match (v.interval, v.design.as_ref().and_then(|d| d.se)) {
                (Some([lo, hi]), Some(se)) if lo > -1.0 && hi > -1.0 => {
                    let h = ((1.0 + hi).ln() - (1.0 + lo).ln()) / 2.0;
                    Some((h + z * se, 2.0 * (h + z * se)))
                }
                _ => None,
            };
            let i = match rows
                .iter()
                .position(|x| x.bench == r.bench && x.metric == r.metric)
            {
                Some(i) => i,
                None => {
                    rows.push(Row {
                        bench: r.bench.clone(),
                        metric: r.metric.clone(),
                        changes: Vec::new(),
                        threshold: Some(0.0),
                        catches: Some(0.0),
                    });
                    rows.len() - 1
                }
            };
            let row = &mut rows[i];
            row.changes.extend(v.change);
            let wider = |a: Option<f64>, b: Option<f64>| Some(a?.max(b?.exp_m1()));
            row.threshold = wider(row.threshold, need.map(|n| n.0));
            row.catches = wider(row.catches, need.map(|n| n.1));
        }
    }
    rows
}

/// The rows as text: the threshold first, then what it catches and the
/// A/A changes seen.
pub fn text(rows: &[Row], design: &str) -> String {
    let mut o = String::new();
    let p = |x: f64| format!("{:.1}%", 100.0 * x);
    let name = |r: &Row| format!("{} {}", r.bench, r.metric);
    let w = rows.iter().map(|r| name(r).len()).max().unwrap_or(0);
    let _ = writeln!(
        o,
        "{:<10} {:<10} {:<w$}  A/A changes",
        "threshold", "catches", ""
    );
    for r in rows {
        let seen: Vec<String> = r
            .changes
            .iter()
            .map(|c| format!("{:+.1}%", 100.0 * c))
            .collect();
        match (r.threshold, r.catches) {
            (Some(t), Some(c)) => {
                let _ = writeln!(
                    o,
                    "{:<10} {:<10} {:<w$}  {}",
                    p(t),
                    p(c),
                    name(r),
                    seen.join(" ")
                );
            }
            _ => {
                let _ = writeln!(
                    o,
                    "{:<10} {:<10} {:<w$}  {} (not measured: --baseline-history N, --repeat N)",
                    "-",
                    "-",
                    name(r),
                    seen.join(" ")
                );
            }
        }
    }
    let words = format!(
        "with {design}, identical code passes 95% of checks at `threshold` or more, and a change of `catches` or more fails 95% of them"
    );
    o.push('\n');
    o.push_str(&crate::report::run::text::wrapped(
        "calibrate: ",
        &words,
        "  ",
    ));
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_names_each_benchmark_with_its_threshold() {
        let rows = [
            Row {
                bench: "loop".into(),
                metric: "real".into(),
                changes: vec![0.012, -0.004],
                threshold: Some(0.031),
                catches: Some(0.063),
            },
            Row {
                bench: "loop".into(),
                metric: "user".into(),
                changes: vec![0.02],
                threshold: None,
                catches: None,
            },
        ];
        let t = text(&rows, "10 baseline run(s) against 3 candidate run(s)");
        let lines: Vec<&str> = t.lines().collect();
        assert!(
            lines[1].starts_with("3.1%") && lines[1].contains("6.3%"),
            "{t}"
        );
        assert!(lines[1].contains("loop real  +1.2% -0.4%"), "{t}");
        assert!(
            lines[2].starts_with("-") && lines[2].contains("not measured"),
            "{t}"
        );
        assert!(t.contains("10 baseline run(s) against 3"), "{t}");
    }
}
