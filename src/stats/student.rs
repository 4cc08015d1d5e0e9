//! ministat's table of two-sided Student t critical values.
//!
//! ministat does not compute t quantiles: it looks them up in a fixed table
//! of 3-decimal values for df 1..=100 and uses its `inf` row above that.
//! The table is data (`student_t.tsv`, copied from ministat's source), not
//! code, and `kbench ministat` uses exactly these numbers so its output stays
//! byte-identical. For exact quantiles see [`super::ttest`].

use std::sync::OnceLock;

use super::{Confidence, Interval, Sample, TooFew};

/// The confidence levels (percent) of the table's columns, in order.
pub const LEVELS: [f64; 6] = [80.0, 90.0, 95.0, 98.0, 99.0, 99.5];

/// `LEVELS` as ministat prints them with `%.1f`.
pub const LEVEL_LABELS: [&str; 6] = ["80.0", "90.0", "95.0", "98.0", "99.0", "99.5"];

/// Index of ministat's default level, 95%.
pub const DEFAULT_LEVEL: usize = 2;

/// Largest df with its own row; larger df use the `inf` row.
pub const MAX_DF: usize = 100;

/// The parsed table: `rows[0]` is the `inf` row, `rows[df]` for 1..=100.
#[derive(Debug)]
pub struct StudentTable {
    rows: Vec<[f64; 6]>,
}

static TABLE: OnceLock<StudentTable> = OnceLock::new();

/// The table shipped with kbench (parsed once).
pub fn table() -> &'static StudentTable {
    TABLE.get_or_init(|| {
        StudentTable::parse(include_str!("student_t.tsv")).expect("valid built-in student_t.tsv")
    })
}

/// Index into [`LEVELS`] of a confidence level given in percent, compared
/// with `==` as ministat does (`95.0` matches, `95.00001` does not).
pub fn level_index(percent: f64) -> Option<usize> {
    LEVELS.iter().position(|&l| l == percent)
}

impl StudentTable {
    /// Parse the TSV: `#` comment lines, a `df` header naming the six
    /// levels, an `inf` row and rows `1..=100`.
    pub fn parse(text: &str) -> Result<StudentTable, String> {
        let mut rows = vec![[f64::NAN; 6]; MAX_DF + 1];
        let mut seen = [false; MAX_DF + 1];
        for (lineno, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') || line.starts_with("df\t") {
                continue;
            }
            let mut f = line.split('\t');
            let key = f.next().unwrap_or("");
            let idx = if key == "inf" {
                0
            } else {
                match key.parse::<usize>() {
                    Ok(d) if (1..=MAX_DF).contains(&d) => d,
                    _ => return Err(format!("line {}: bad df `{key}`", lineno + 1)),
                }
            };
            let vals: Vec<f64> = f
                .map(|v| {
                    v.parse::<f64>()
                        .map_err(|e| format!("line {}: {e}", lineno + 1))
                })
                .collect::<Result<_, _>>()?;
            if vals.len() != 6 {
                return Err(format!("line {}: expected 6 values", lineno + 1));
            }
            rows[idx].copy_from_slice(&vals);
            seen[idx] = true;
        }
        if let Some(d) = seen.iter().position(|s| !s) {
            return Err(format!("missing row for df {d}"));
        }
        Ok(StudentTable { rows })
    }

    /// The critical t for `df` degrees of freedom at `LEVELS[level]`, as
    /// ministat picks it: its own row for df 1..=100, the `inf` row above.
    /// `None` for df 0 or an unknown level.
    pub fn t(&self, df: usize, level: usize) -> Option<f64> {
        if df == 0 || level >= LEVELS.len() {
            return None;
        }
        let row = if df > MAX_DF { 0 } else { df };
        Some(self.rows[row][level])
    }
}

/// The three numbers ministat keeps of a set.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Moments {
    pub n: usize,
    pub mean: f64,
    /// Sample variance (n-1).
    pub var: f64,
}

impl Moments {
    /// FreeBSD main's moments of a sample (input-order mean, two-pass
    /// variance).
    pub fn of(s: &Sample) -> Moments {
        Moments {
            n: s.len(),
            mean: s.mean(),
            var: s.variance(),
        }
    }
}

/// How ministat turns the half-width into a percentage of the baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelativeFormula {
    /// FreeBSD main: the half-width of the ratio's interval, `re`, which
    /// propagates the contender's variance scaled by (mean2/mean1)^2.
    FreeBsdMain,
    /// Debian 2015: the absolute half-width `e` over mean1.
    Debian2015,
}

/// ministat's comparison of a contender with the baseline ("Difference at
/// 95.0% confidence ... (Student's t, pooled s = ...)"), computed with the
/// same operations in the same order as ministat's `Relative()` so the
/// printed digits agree.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MinistatDiff {
    /// Baseline size.
    pub n1: usize,
    /// Contender size.
    pub n2: usize,
    /// Degrees of freedom, n1 + n2 - 2.
    pub df: usize,
    /// The level, as an index into [`LEVELS`].
    pub level: usize,
    /// t from the table (the `inf` row above df 100): the statistic the
    /// difference is measured against.
    pub t: f64,
    /// Pooled standard deviation.
    pub pooled_s: f64,
    /// Difference of means, mean2 - mean1.
    pub diff: f64,
    /// Half-width of the difference's interval, `t * s`.
    pub half_width: f64,
    /// `diff +/- half_width`.
    pub interval: Interval,
    /// The difference in percent of mean1.
    pub rel_diff_pct: f64,
    /// The half-width in percent of mean1, by the chosen formula.
    pub rel_half_width_pct: f64,
    /// `|diff| > half_width`: ministat prints "Difference at ...".
    pub significant: bool,
    /// Set when df is 0 (one value in each set).
    pub too_few: Option<TooFew>,
}

/// ministat's Student's t comparison of `b` (contender) against `a`
/// (baseline) at `LEVELS[level]`.
///
/// # Panics
/// If `level` is not an index into [`LEVELS`].
pub fn ministat_diff(
    a: Moments,
    b: Moments,
    level: usize,
    formula: RelativeFormula,
) -> MinistatDiff {
    let (ds, rs) = (b, a);
    let (nd, nr) = (ds.n, rs.n);
    let df = (nd + nr).saturating_sub(2);
    let confidence = Confidence::percent(LEVELS[level]);
    let t = table().t(df, level).unwrap_or(f64::NAN);
    let mut spool = (nd - 1) as f64 * ds.var + (nr - 1) as f64 * rs.var;
    spool /= (nd + nr - 2) as f64;
    spool = spool.sqrt();
    let s = spool * (1.0 / nd as f64 + 1.0 / nr as f64).sqrt();
    let d = ds.mean - rs.mean;
    let e = t * s;
    let rel = match formula {
        RelativeFormula::Debian2015 => e,
        RelativeFormula::FreeBsdMain => {
            let mut re = (nd - 1) as f64 * ds.var
                + (nr - 1) as f64 * rs.var * (ds.mean * ds.mean) / (rs.mean * rs.mean);
            re *= (nd + nr) as f64 / ((nd * nr) as f64 * ((nd + nr) as f64 - 2.0));
            t * re.sqrt()
        }
    };
    MinistatDiff {
        n1: nr,
        n2: nd,
        df,
        level,
        t,
        pooled_s: spool,
        diff: d,
        half_width: e,
        interval: Interval {
            lo: d - e,
            hi: d + e,
        },
        rel_diff_pct: d * 100.0 / rs.mean,
        rel_half_width_pct: rel * 100.0 / rs.mean,
        significant: d.abs() > e,
        too_few: (df == 0).then_some(TooFew {
            need: 2,
            confidence,
        }),
    }
}

/// ministat's Student's t as `kbench compare --test student` runs it.
pub struct MinistatT;

impl super::twosample::TwoSample for MinistatT {
    fn name(&self) -> &'static str {
        "student"
    }
    fn help(&self) -> &'static str {
        "ministat's Student's t (pooled variance, table t values)"
    }
    fn label(&self) -> &'static str {
        "Student's t"
    }
    fn check(&self, confidence: f64) -> Result<(), String> {
        match level_index(confidence) {
            Some(_) => Ok(()),
            None => Err(format!(
                "--confidence {confidence}: ministat's Student's t has 80, 90, 95, 98, 99 and 99.5; use --test welch for other levels"
            )),
        }
    }
    fn is_ministat(&self) -> bool {
        true
    }
    fn run(
        &self,
        a: &super::Sample,
        b: &super::Sample,
        confidence: f64,
    ) -> std::sync::Arc<dyn super::twosample::Outcome> {
        std::sync::Arc::new(ministat_diff(
            Moments::of(a),
            Moments::of(b),
            level_index(confidence).expect("checked"),
            RelativeFormula::FreeBsdMain,
        ))
    }
}

impl super::twosample::Outcome for MinistatDiff {
    fn summary(&self, _confidence: f64, _unit: &str) -> super::twosample::Shown {
        super::twosample::Shown::Ministat { level: self.level }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ministat_diff_reproduces_spec_example_case01() {
        let x = [
            165.20, 165.35, 165.98, 166.34, 165.76, 164.82, 165.78, 166.38, 165.44, 164.84,
        ];
        let y = [
            366.20, 366.20, 365.52, 366.59, 365.54, 365.66, 366.79, 366.16, 366.07, 366.76,
        ];
        let a = Moments::of(&Sample::new(&x).unwrap());
        let b = Moments::of(&Sample::new(&y).unwrap());
        let d = ministat_diff(a, b, DEFAULT_LEVEL, RelativeFormula::FreeBsdMain);
        let g = |v: f64| super::super::cfmt::fmt_g(v, 0, 6);
        // FreeBSD main: 200.56 +/- 0.484557, 121.119% +/- 0.528982%,
        // pooled s = 0.515708.
        assert_eq!(
            (
                g(d.diff),
                g(d.half_width),
                g(d.rel_diff_pct),
                g(d.rel_half_width_pct),
                g(d.pooled_s)
            ),
            (
                "200.56".into(),
                "0.484557".into(),
                "121.119".into(),
                "0.528982".into(),
                "0.515708".into()
            )
        );
        assert!(d.significant);
        let d = ministat_diff(a, b, DEFAULT_LEVEL, RelativeFormula::Debian2015);
        assert_eq!(g(d.rel_half_width_pct), "0.292626");
    }

    #[test]
    fn table_matches_ministat_source() {
        let t = table();
        assert_eq!(t.t(1, 2), Some(12.706));
        assert_eq!(t.t(18, 2), Some(2.101));
        assert_eq!(t.t(100, 5), Some(3.174));
        assert_eq!(t.t(101, 0), Some(1.282));
        assert_eq!(t.t(1000, 5), Some(3.090));
        assert_eq!(t.t(0, 2), None);
        assert_eq!(level_index(95.0), Some(2));
        assert_eq!(level_index(97.0), None);
    }
}
