//! `kbench check`'s document: the gate's verdicts per cell (built by
//! `crate::check`), and its text: one line per gated cell, the verdict
//! first, worst first; then the outcome, the runs compared and the level
//! the verdicts used. JSON is the model itself.

use serde::Serialize;
use std::fmt::Write;

use super::comparability::Comparability;
use crate::record::Direction;

/// Version of the JSON document; a reader refuses a newer one.
pub const SCHEMA: u32 = 1;

/// One gated cell's verdict, worst first in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The whole interval is past the threshold, worse.
    Regression,
    /// With `--expect better`: not an improvement.
    NotBetter,
    /// The interval straddles the threshold, or a level is not measured.
    Unclear,
    /// A regression of the threshold is ruled out.
    Ok,
    /// The whole interval is past the threshold, better.
    Improvement,
    /// A metric without a better direction: reported only.
    Info,
}

impl Verdict {
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Regression => "REGRESSION",
            Verdict::NotBetter => "NOT-BETTER",
            Verdict::Unclear => "unclear",
            Verdict::Ok => "ok",
            Verdict::Improvement => "improved",
            Verdict::Info => "info",
        }
    }
}

/// How the whole check ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Pass,
    Regression,
    Inconclusive,
}

impl Outcome {
    /// 0 pass, 1 regression, 3 inconclusive.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Pass => 0,
            Outcome::Regression => 1,
            Outcome::Inconclusive => 3,
        }
    }
}

/// One gated cell.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub verdict: Verdict,
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The cell's other factors and parameters.
    pub cell: String,
    /// candidate / baseline - 1.
    pub change: Option<f64>,
    /// Its adjusted interval.
    pub interval: Option<[f64; 2]>,
    pub interval_confidence: Option<f64>,
    pub threshold: f64,
    /// What the interval's unit is (`rounds`, `runs`, ...).
    pub level: Option<String>,
    /// Why the cell is unclear, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// A check's result: the document every format renders.
#[derive(Clone, Debug, Serialize)]
pub struct Check {
    pub schema: u32,
    pub outcome: Outcome,
    pub threshold: f64,
    pub baseline_selector: String,
    pub baseline_runs: Vec<i64>,
    pub candidate_runs: Vec<i64>,
    /// The level the verdicts used, in words.
    pub level: String,
    /// Why the whole check is inconclusive, when it is for a reason
    /// beyond its cells (facts that differ).
    pub inconclusive: Vec<String>,
    /// Worst first.
    pub cells: Vec<Cell>,
    pub comparability: Comparability,
    /// Baseline cells the candidate lacks, and the reverse.
    pub unpaired: Vec<String>,
}

/// A fraction as a signed percentage.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// A change and its interval: `+12.3% [+9.1%, +15.0%]`.
pub fn change_words(c: &Cell) -> String {
    let s = |x: f64| format!("{:+.1}%", 100.0 * x);
    match (c.change, c.interval) {
        (Some(x), Some([lo, hi])) => format!("{} [{}, {}]", s(x), s(lo), s(hi)),
        (Some(x), None) => format!("{} [no interval]", s(x)),
        _ => "-".to_string(),
    }
}

pub fn text(c: &Check) -> String {
    let mut o = String::new();
    let name = |x: &Cell| {
        let mut n = format!("{} {}", x.bench, x.metric);
        if !x.cell.is_empty() {
            let _ = write!(n, " [{}]", x.cell);
        }
        n
    };
    let w = c.cells.iter().map(|x| name(x).len()).max().unwrap_or(0);
    for x in &c.cells {
        let _ = writeln!(
            o,
            "{:<10} {:<w$}  {}",
            x.verdict.word(),
            name(x),
            change_words(x)
        );
        if let Some(why) = &x.why {
            let _ = writeln!(o, "{:<10} {}", "", why);
        }
    }
    for u in &c.unpaired {
        let _ = writeln!(o, "{:<10} {u}: in one side only", "unpaired");
    }
    let ids = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
    let _ = writeln!(
        o,
        "\ncheck: {} (threshold {}): baseline `{}` run(s) {}, candidate run(s) {}",
        match c.outcome {
            Outcome::Pass => "PASS",
            Outcome::Regression => "REGRESSION",
            Outcome::Inconclusive => "INCONCLUSIVE",
        },
        pct(c.threshold),
        c.baseline_selector,
        ids(&c.baseline_runs),
        ids(&c.candidate_runs)
    );
    let _ = writeln!(o, "level: {}", c.level);
    for i in &c.inconclusive {
        let _ = writeln!(o, "inconclusive: {i}");
    }
    for w in &c.comparability.warnings {
        if !c
            .inconclusive
            .iter()
            .any(|i| i.starts_with(w.split(' ').next().unwrap_or("")))
        {
            let _ = writeln!(o, "warning: {w}");
        }
    }
    o
}
