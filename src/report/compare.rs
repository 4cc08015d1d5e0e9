//! `kbench compare A B [C ...]`: ministat-style differences of recorded
//! results, then a benchstat-style summary with a geometric-mean row.
//!
//! Each operand selects stored cells: a run id (`12`), a campaign (its
//! name, `campaign:ID` or its plan file), optionally narrowed by factor or
//! parameter values (`pipes:zero_copy=true,cpus=UP`). Cells are paired
//! across operands by benchmark, metric and every factor and parameter
//! that the selection did not fix. For each pair the table rows are
//! ministat's, and the difference block is ministat's Student's t by
//! default (byte for byte what `kbench ministat` prints for the same
//! numbers), or Welch's t, Mann-Whitney U or a bootstrap of the ratio of
//! means with `--test`.

use indexmap::IndexMap;
use serde::Serialize;
use std::fmt::Write;

use crate::error::bad_input;
use crate::ministat::{Version, difference_block};
use crate::stats::bootstrap::Bootstrap;
use crate::stats::cfmt::fmt_g;
use crate::stats::equivalence;
use crate::stats::geomean::geomean_of_ratios;
use crate::stats::student::{self, Moments};
use crate::stats::ttest::TTest;
use crate::stats::utest::UTest;
use crate::stats::{Confidence, Sample, TwoSample};
use crate::store::{CellRec, SampleRec};

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

/// One operand: the cells it selects, each with its values per metric.
pub struct Selection {
    pub name: String,
    /// Keys the operand fixed (`zero_copy=true`): left out of pairing.
    pub fixed: Vec<String>,
    pub cells: Vec<(CellRec, Vec<SampleRec>)>,
}

/// Split `NAME:k=v,k=v` into the name and the filters.
pub fn parse_operand(spec: &str) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let (name, rest) = match spec.split_once(':') {
        // `campaign:ID` names a campaign by id; filters may follow.
        Some(("campaign", r)) => match r.split_once(':') {
            Some((id, f)) => (format!("campaign:{id}"), f),
            None => (spec.to_string(), ""),
        },
        Some((n, r)) => (n.to_string(), r),
        None => (spec.to_string(), ""),
    };
    let mut filters = Vec::new();
    for kv in rest.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| bad_input!("`{spec}`: expected k=v after `:`, found `{kv}`"))?;
        filters.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((name, filters))
}

/// A cell's value for a factor or parameter, as the user writes it.
fn value_of(c: &CellRec, key: &str) -> Option<String> {
    c.factors
        .get(key)
        .or_else(|| c.params.get(key))
        .map(super::json_label)
}

/// Keep the cells matching every filter; a filter no cell knows is an
/// error naming it.
pub fn filter(
    spec: &str,
    cells: Vec<(CellRec, Vec<SampleRec>)>,
    filters: &[(String, String)],
) -> anyhow::Result<Vec<(CellRec, Vec<SampleRec>)>> {
    for (k, _) in filters {
        if !cells.iter().any(|(c, _)| value_of(c, k).is_some()) {
            return Err(bad_input!(
                "`{spec}`: no factor or parameter `{k}` in the selected cells"
            ));
        }
    }
    let kept: Vec<_> = cells
        .into_iter()
        .filter(|(c, _)| {
            filters
                .iter()
                .all(|(k, v)| value_of(c, k).is_some_and(|x| &x == v))
        })
        .collect();
    if kept.is_empty() {
        return Err(bad_input!("`{spec}` selects no cells"));
    }
    Ok(kept)
}

/// The pairing identity of a cell and metric: everything but the fixed
/// keys.
fn pair_key(c: &CellRec, metric: &str, fixed: &[String]) -> PairKey {
    let mut parts = Vec::new();
    if let Some(o) = c.factors.as_object() {
        for (k, v) in o {
            if !fixed.contains(k) {
                parts.push(format!("{k}={}", super::json_label(v)));
            }
        }
    }
    if let Some(o) = c.params.as_object() {
        for (k, v) in o {
            if !fixed.contains(k) && c.factors.get(k).is_none() {
                parts.push(format!("{k}={}", super::json_label(v)));
            }
        }
    }
    (c.bench.clone(), metric.to_string(), parts.join(","))
}

/// Values per pairing key of one selection (samples of cells that share a
/// key, e.g. from several runs of a campaign, are pooled).
/// Benchmark, metric, and the cell's remaining factors and parameters.
type PairKey = (String, String, String);
/// Unit, direction, and the values.
type Pooled = (String, String, Vec<f64>);

fn values(sel: &Selection) -> IndexMap<PairKey, Pooled> {
    let mut out: IndexMap<PairKey, Pooled> = IndexMap::new();
    for (c, samples) in &sel.cells {
        for m in &c.metrics {
            let e = out
                .entry(pair_key(c, &m.name, &sel.fixed))
                .or_insert_with(|| (m.unit.clone(), m.direction.clone(), Vec::new()));
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
    /// Two-sided p-value (ministat's test has none: `null`).
    pub p: Option<f64>,
    pub significant: bool,
    /// different / different-within-margin / equivalent / inconclusive /
    /// too-few, against the `--margin`.
    pub verdict: String,
}

/// One benchmark x metric x cell compared across the operands.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: String,
    /// The remaining factors and parameters that identify the cell.
    pub cell: String,
    /// Baseline statistics.
    pub n: usize,
    pub mean: f64,
    pub versus: Vec<Versus>,
    /// The ministat-style text block.
    #[serde(skip)]
    pub text: String,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub operands: Vec<String>,
    pub test: Test,
    pub confidence: f64,
    pub margin: f64,
    pub rows: Vec<Row>,
    /// Per contender: geometric mean of the ratios of means over all rows,
    /// with its interval.
    pub geomean: Vec<GeoRow>,
    /// Cells of the baseline with no partner in some operand.
    pub unpaired: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct GeoRow {
    pub name: String,
    pub k: usize,
    pub ratio: f64,
    pub interval: Option<[f64; 2]>,
}

const SYMBOL: [char; 7] = ['x', '+', '*', '%', '#', '@', 'O'];

/// Compare every operand with the first.
pub fn compare(
    sels: &[Selection],
    test: Test,
    confidence: f64,
    margin: f64,
) -> anyhow::Result<Comparison> {
    let level = student::level_index(confidence);
    if test == Test::Student && level.is_none() {
        return Err(bad_input!(
            "--confidence {confidence}: ministat's Student's t has 80, 90, 95, 98, 99 and 99.5; use --test welch for other levels"
        ));
    }
    if sels.len() > SYMBOL.len() {
        return Err(bad_input!("at most {} operands", SYMBOL.len()));
    }
    let conf = Confidence::percent(confidence);
    let all: Vec<_> = sels.iter().map(values).collect();
    let mut rows = Vec::new();
    let mut unpaired = Vec::new();
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); sels.len()];
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
        let mut text = String::new();
        let cell = if key.2.is_empty() {
            String::new()
        } else {
            format!(" [{}]", key.2)
        };
        let _ = writeln!(
            text,
            "{} {}{cell} ({unit}, {} is better)",
            key.0, key.1, dir
        );
        for (i, s) in sels.iter().enumerate() {
            let _ = writeln!(text, "{} {}", SYMBOL[i], s.name);
        }
        text.push_str(
            "    N           Min           Max        Median           Avg        Stddev\n",
        );
        let row_line = |t: &mut String, i: usize, s: &Sample| {
            let _ = writeln!(
                t,
                "{} {:3} {} {} {} {} {}",
                SYMBOL[i],
                s.len(),
                fmt_g(s.min(), 13, 8),
                fmt_g(s.max(), 13, 8),
                fmt_g(s.median(), 13, 8),
                fmt_g(s.mean(), 13, 8),
                fmt_g(s.stddev(), 13, 8)
            );
        };
        row_line(&mut text, 0, &a);
        let mut versus = Vec::new();
        for (j, o) in others.iter().enumerate() {
            let Ok(b) = Sample::new(o.expect("paired")) else {
                continue;
            };
            row_line(&mut text, j + 1, &b);
            let v = one_test(&mut text, test, &a, &b, conf, level, margin);
            ratios[j + 1].push(b.mean() / a.mean());
            versus.push(Versus {
                name: sels[j + 1].name.clone(),
                ..v
            });
        }
        rows.push(Row {
            bench: key.0.clone(),
            metric: key.1.clone(),
            unit: unit.clone(),
            direction: dir.clone(),
            cell: key.2.clone(),
            n: a.len(),
            mean: a.mean(),
            versus,
            text,
        });
    }
    if rows.is_empty() {
        return Err(bad_input!(
            "no cell of `{}` has a partner in every other operand (compare like with like, e.g. `campaign:factor=value`)",
            sels[0].name
        ));
    }
    let geomean = (1..sels.len())
        .filter_map(|j| {
            let g = geomean_of_ratios(&ratios[j], conf).ok()?;
            Some(GeoRow {
                name: sels[j].name.clone(),
                k: g.k,
                ratio: g.geomean,
                interval: g.interval.map(|i| [i.lo, i.hi]),
            })
        })
        .collect();
    Ok(Comparison {
        operands: sels.iter().map(|s| s.name.clone()).collect(),
        test,
        confidence,
        margin,
        rows,
        geomean,
        unpaired,
    })
}

/// Run the chosen test, append its block to `text`, and summarise it.
fn one_test(
    text: &mut String,
    test: Test,
    a: &Sample,
    b: &Sample,
    conf: Confidence,
    level: Option<usize>,
    margin: f64,
) -> Versus {
    let delta = b.mean() / a.mean() - 1.0;
    let pct = |x: f64| format!("{:+.3}%", x * 100.0);
    let base = Versus {
        name: String::new(),
        n1: a.len(),
        n2: b.len(),
        mean: b.mean(),
        delta,
        interval: None,
        p: None,
        significant: false,
        verdict: String::new(),
    };
    let verdict_name = |v: equivalence::Verdict| {
        match v {
            equivalence::Verdict::Different => "different",
            equivalence::Verdict::DifferentWithinMargin => "different-within-margin",
            equivalence::Verdict::Equivalent => "equivalent",
            equivalence::Verdict::Inconclusive => "inconclusive",
            equivalence::Verdict::TooFew => "too-few",
        }
        .to_string()
    };
    match test {
        Test::Student => {
            let level = level.expect("checked");
            let d = student::ministat_diff(
                Moments::of(a),
                Moments::of(b),
                level,
                student::RelativeFormula::FreeBsdMain,
            );
            text.push_str(&difference_block(
                Version::FreeBsdMain,
                Moments::of(a),
                Moments::of(b),
                level,
            ));
            let iv = [
                (d.rel_diff_pct - d.rel_half_width_pct) / 100.0,
                (d.rel_diff_pct + d.rel_half_width_pct) / 100.0,
            ];
            let v = if d.too_few.is_some() {
                equivalence::Verdict::TooFew
            } else {
                equivalence::verdict(
                    crate::stats::Interval {
                        lo: iv[0],
                        hi: iv[1],
                    },
                    margin,
                )
            };
            Versus {
                interval: Some(iv),
                significant: d.significant,
                verdict: verdict_name(v),
                ..base
            }
        }
        Test::Welch => {
            let t = TTest::welch(a, b, conf);
            let v = equivalence::verdict_of(&t, margin);
            let _ = writeln!(
                text,
                "Welch's t at {}% confidence: {} [{}, {}], t = {}, df = {}, p = {}{}",
                conf.as_percent(),
                pct(delta),
                pct(t.relative.lo),
                pct(t.relative.hi),
                fmt_g(t.statistic, 0, 6),
                fmt_g(t.df, 0, 4),
                fmt_g(t.p, 0, 4),
                too_few_note(&t)
            );
            Versus {
                interval: Some([t.relative.lo, t.relative.hi]),
                p: Some(t.p),
                significant: t.significant(),
                verdict: verdict_name(v),
                ..base
            }
        }
        Test::Mwu => {
            let u = UTest::new(a, b, conf);
            let v = equivalence::verdict_of(&u, margin);
            let _ = writeln!(
                text,
                "Mann-Whitney U at {}% confidence: U = {}, p = {} ({:?}), shift (Hodges-Lehmann) = {}{}",
                conf.as_percent(),
                fmt_g(u.statistic, 0, 6),
                fmt_g(u.p, 0, 4),
                u.method,
                fmt_g(u.shift, 0, 6),
                too_few_note(&u)
            );
            Versus {
                p: Some(u.p),
                significant: u.significant(),
                verdict: verdict_name(v),
                ..base
            }
        }
        Test::Bootstrap => {
            // 10^4 resamples, fewer for huge sets so the cost stays near
            // 2*10^7 draws (the percentile interval needs ~10^3 at least).
            let resamples = (20_000_000 / (a.len() + b.len())).clamp(1_000, 10_000);
            let r = Bootstrap { resamples, seed: 1 }.ratio_of_means(a, b, conf);
            let rel = crate::stats::Interval {
                lo: r.interval.lo - 1.0,
                hi: r.interval.hi - 1.0,
            };
            let v = if r.too_few.is_some() {
                equivalence::Verdict::TooFew
            } else {
                equivalence::verdict(rel, margin)
            };
            let _ = writeln!(
                text,
                "Bootstrap ({} resamples, seed 1) ratio of means at {}% confidence: {} [{}, {}], p ~ {}",
                r.resamples,
                conf.as_percent(),
                fmt_g(r.statistic, 0, 6),
                fmt_g(r.interval.lo, 0, 6),
                fmt_g(r.interval.hi, 0, 6),
                fmt_g(r.p, 0, 3)
            );
            Versus {
                interval: Some([rel.lo, rel.hi]),
                p: Some(r.p),
                significant: r.significant(),
                verdict: verdict_name(v),
                ..base
            }
        }
    }
}

fn too_few_note(r: &dyn TwoSample) -> String {
    r.too_few().map(|t| format!(" ({t})")).unwrap_or_default()
}

/// The text rendering: every block, then the summary table.
pub fn render_text(c: &Comparison) -> String {
    let mut o = String::new();
    for r in &c.rows {
        o.push_str(&r.text);
        o.push('\n');
    }
    let pct = |x: f64| format!("{:+.2}%", x * 100.0);
    let name_w = c
        .rows
        .iter()
        .map(|r| r.bench.len() + r.metric.len() + r.cell.len() + 4)
        .chain([9])
        .max()
        .unwrap_or(9)
        .min(40);
    let _ = writeln!(
        o,
        "summary ({:?} at {}% confidence; `~` = no significant difference; baseline {}):",
        c.test, c.confidence, c.operands[0]
    );
    let _ = writeln!(
        o,
        "{:<name_w$} {:>12} {:>12} {:>9} {:>21} {:>7} {:>7}",
        "cell", "baseline", "contender", "delta", "interval", "p", "n"
    );
    for r in &c.rows {
        let name = if r.cell.is_empty() {
            format!("{} {}", r.bench, r.metric)
        } else {
            format!("{} {} [{}]", r.bench, r.metric, r.cell)
        };
        for v in &r.versus {
            let delta = if v.significant {
                pct(v.delta)
            } else {
                "~".to_string()
            };
            let iv = v
                .interval
                .map(|[l, h]| format!("[{}, {}]", pct(l), pct(h)))
                .unwrap_or_else(|| "-".into());
            let p = v.p.map(|p| format!("{p:.3}")).unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "{:<name_w$} {:>12} {:>12} {:>9} {:>21} {:>7} {:>7}",
                name,
                fmt_g(r.mean, 0, 6),
                fmt_g(v.mean, 0, 6),
                delta,
                iv,
                p,
                format!("{}+{}", v.n1, v.n2)
            );
        }
    }
    for g in &c.geomean {
        let iv = g
            .interval
            .map(|[l, h]| format!("[{}, {}]", pct(l - 1.0), pct(h - 1.0)))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            o,
            "{:<name_w$} {:>12} {:>12} {:>9} {:>21} {:>7} {:>7}",
            format!("geomean ({})", g.name),
            "",
            "",
            pct(g.ratio - 1.0),
            iv,
            "",
            g.k
        );
    }
    for u in &c.unpaired {
        let _ = writeln!(o, "unpaired (not in every operand): {u}");
    }
    o
}
