//! `kbench check`'s document: the gate's verdicts per cell (built by
//! `crate::check`), and its text: one line per gated cell, the verdict
//! first, worst first; then the outcome, the runs compared and the level
//! the verdicts used. JSON is the model itself.

use serde::Serialize;
use std::fmt::Write;

use super::comparability::Comparability;
use crate::record::Direction;

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
    pub outcome: Outcome,
    pub threshold: f64,
    pub baseline_selector: String,
    pub baseline_runs: Vec<i64>,
    pub candidate_runs: Vec<i64>,
    /// Whether the baseline was measured in the candidate's runs,
    /// interleaved with it in rounds (`--against`); otherwise it came from
    /// other runs, whose drift reads as a change, and the verdict is a
    /// hint.
    pub interleaved: bool,
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
    let _ = writeln!(o, "\ncheck: {}", sides(c));
    let _ = writeln!(o, "level: {}", c.level);
    if !c.interleaved {
        let _ = writeln!(
            o,
            "hint only: the baseline was not measured in this run (see --against)"
        );
    }
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

/// The outcome, the threshold and what was compared with what.
fn sides(c: &Check) -> String {
    let head = format!("{} (threshold {})", outcome_word(c), pct(c.threshold));
    if c.interleaved {
        format!("{head}, baseline `{}` in the same run", c.baseline_selector)
    } else {
        format!(
            "{head}: baseline `{}` run(s) {}, candidate run(s) {}",
            c.baseline_selector,
            ids(&c.baseline_runs),
            ids(&c.candidate_runs)
        )
    }
}

/// The most a pull-request comment holds (GitHub's limit is 65,536).
const MARKDOWN_LIMIT: usize = 65_000;

/// Rows shown before the rest are folded in `<details>`.
const SHOWN: usize = 10;

fn outcome_word(c: &Check) -> &'static str {
    match c.outcome {
        Outcome::Pass => "PASS",
        Outcome::Regression => "REGRESSION",
        Outcome::Inconclusive => "INCONCLUSIVE",
    }
}

/// A pull-request comment: the outcome, the worst cells in a table, the
/// rest folded in `<details>`, under [`MARKDOWN_LIMIT`] characters.
pub fn markdown(c: &Check) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let row = |x: &Cell| {
        format!(
            "| {} | {} | {} | {} | {} |\n",
            x.verdict.word(),
            cell(&x.bench),
            cell(&x.metric),
            cell(&x.cell),
            change_words(x)
        )
    };
    let head =
        "| verdict | benchmark | metric | cell | change [interval] |\n|---|---|---|---|---|\n";
    let mut o = format!(
        "### kbench check: {} (threshold {})\n\n{}  \nLevel: {}\n\n",
        outcome_word(c),
        pct(c.threshold),
        if c.interleaved {
            format!(
                "Baseline `{}` measured interleaved with the candidate: run(s) {}.",
                cell(&c.baseline_selector),
                ids(&c.candidate_runs)
            )
        } else {
            format!(
                "Baseline `{}`: run(s) {}; candidate run(s) {} (a hint: the baseline was not measured in this run).",
                cell(&c.baseline_selector),
                ids(&c.baseline_runs),
                ids(&c.candidate_runs)
            )
        },
        c.level
    );
    for i in &c.inconclusive {
        let _ = writeln!(o, "- inconclusive: {}", cell(i));
    }
    if !c.inconclusive.is_empty() {
        o.push('\n');
    }
    o.push_str(head);
    for x in c.cells.iter().take(SHOWN) {
        o.push_str(&row(x));
    }
    let rest = c.cells.len().saturating_sub(SHOWN);
    if rest > 0 {
        let _ = write!(
            o,
            "\n<details><summary>{rest} more cell(s)</summary>\n\n{head}"
        );
        let end = "\n</details>\n";
        let mut left = 0;
        for (i, x) in c.cells.iter().enumerate().skip(SHOWN) {
            let r = row(x);
            if o.len() + r.len() + end.len() + 80 > MARKDOWN_LIMIT {
                left = c.cells.len() - i;
                break;
            }
            o.push_str(&r);
        }
        if left > 0 {
            let _ = write!(
                o,
                "\n{left} more cell(s) left out (the comment's size limit)\n"
            );
        }
        o.push_str(end);
    }
    o
}

fn ids(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

fn xml(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_control() || *c == '\n' || *c == '\t')
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// JUnit XML: one test case per gated cell; a regression is a failure
/// with its interval in the message, an unclear cell is skipped.
pub fn junit(c: &Check) -> String {
    use Verdict as V;
    let failures = c
        .cells
        .iter()
        .filter(|x| matches!(x.verdict, V::Regression | V::NotBetter))
        .count();
    let skipped = c.cells.iter().filter(|x| x.verdict == V::Unclear).count();
    let n = c.cells.len();
    let mut o = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kbench check\" tests=\"{n}\" failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\">\n<testsuite name=\"kbench check\" tests=\"{n}\" failures=\"{failures}\" skipped=\"{skipped}\" errors=\"0\">\n"
    );
    for x in &c.cells {
        let name = if x.cell.is_empty() {
            x.metric.clone()
        } else {
            format!("{} [{}]", x.metric, x.cell)
        };
        let _ = write!(
            o,
            "  <testcase classname=\"{}\" name=\"{}\">",
            xml(&x.bench),
            xml(&name)
        );
        let msg = format!(
            "{}: {} (threshold {}){}",
            x.verdict.word(),
            change_words(x),
            pct(x.threshold),
            x.why
                .as_deref()
                .map(|w| format!("; {w}"))
                .unwrap_or_default()
        );
        match x.verdict {
            V::Regression | V::NotBetter => {
                let _ = write!(o, "<failure message=\"{}\"/>", xml(&msg));
            }
            V::Unclear => {
                let _ = write!(o, "<skipped message=\"{}\"/>", xml(&msg));
            }
            _ => {
                let _ = write!(o, "<system-out>{}</system-out>", xml(&msg));
            }
        }
        o.push_str("</testcase>\n");
    }
    o.push_str("</testsuite>\n</testsuites>\n");
    o
}

impl super::render::Render for Check {
    const KIND: &'static str = "check";

    fn text(&self) -> String {
        text(self)
    }

    fn markdown(&self) -> String {
        markdown(self)
    }
}
