//! Statistics for comparing benchmark samples, and ministat's arithmetic.
//!
//! Layers, after golang/perf's benchmath and criterion's stats:
//!
//! - [`Sample`]: validated, sorted measurements with summaries (mean,
//!   median, stddev, CV, quantiles, MAD) and the confidence interval of the
//!   mean that adaptive stopping targets.
//! - Two-sample tests, each returning a result struct with documented
//!   fields (`n1`, `n2`, `statistic`, `df`, `p`, `interval`) and a
//!   [`TooFew`] note when the samples are too small to ever show a
//!   difference: ministat's table-based Student's t ([`student`]), Student's
//!   and Welch's t with exact quantiles ([`ttest`]), Mann-Whitney U
//!   ([`utest`]), bootstrap intervals of ratios ([`bootstrap`]).
//! - Two arms measured in the same rounds ([`paired`]): per-round log
//!   ratios, Hodges-Lehmann estimate, Wilcoxon signed-rank interval.
//! - [`design`]: the analysis the blocks (rounds, processes, runs, boots)
//!   call for, every interval of a log ratio ([`logratio`]).
//! - Across benchmarks: the geometric mean of ratios ([`geomean`]);
//!   within one sample: outlier flags ([`outliers`]).
//! - [`equivalence`]: turns an interval into a verdict, so "no difference
//!   proven" is never read as "equal".
//! - [`cfmt`]: C's `%g`, for ministat-identical output.
//!
//! Convention: sample 1 (`a`) is the baseline, sample 2 (`b`) the
//! contender; differences are `b - a`, ratios `b / a`.
//!
//! References: Student (1908); Welch (1947), Satterthwaite df; Mann &
//! Whitney (1947), tie correction as in Hollander & Wolfe (1973); Efron &
//! Tibshirani (1993) percentile bootstrap; Iglewicz & Hoaglin (1993)
//! modified z-score; Schuirmann (1987) two one-sided tests for equivalence.

pub mod bootstrap;
pub mod cfmt;
pub mod changepoint;
pub mod design;
pub mod dist;
pub mod equivalence;
pub mod geomean;
pub mod logratio;
pub mod multiple;
pub mod nested;
pub mod outliers;
pub mod paired;
pub mod power;
pub mod sample;
pub mod sequential;
pub mod shares;
#[cfg(test)]
pub mod sim;
pub mod student;
pub mod ttest;
pub mod twosample;
pub mod utest;

/// Every two-sample test `compare --test` offers, in the order `--help`
/// lists them; a new test is its own file and one line here.
pub const TESTS: &[twosample::Test] = &[
    twosample::Test::STUDENT,
    twosample::Test::WELCH,
    twosample::Test(&utest::MannWhitney),
    twosample::Test(&bootstrap::RatioOfMeans),
];

impl twosample::Test {
    /// ministat's Student's t: `kbench compare`'s default.
    pub const STUDENT: twosample::Test = twosample::Test(&student::MinistatT);
    /// Welch's t: what `check` and verdict lines use.
    pub const WELCH: twosample::Test = twosample::Test(&ttest::Welch);
}

pub use sample::Sample;

use serde::Serialize;

/// The summary ministat prints for one data set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    /// Mean of the two middle values for even n (FreeBSD ministat).
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n-1); 0 for n = 1.
    pub stddev: f64,
}

/// A two-sided confidence level, e.g. 95%.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd, Serialize)]
pub struct Confidence(f64);

impl Confidence {
    /// From a percentage in (0, 100): `Confidence::percent(95.0)`.
    ///
    /// # Panics
    /// Outside (0, 100).
    pub fn percent(p: f64) -> Confidence {
        assert!(p > 0.0 && p < 100.0, "confidence {p}% outside (0, 100)");
        Confidence(p / 100.0)
    }

    /// The level in percent (95).
    pub fn as_percent(self) -> f64 {
        self.0 * 100.0
    }

    /// Significance level alpha = 1 - level (0.05).
    pub fn alpha(self) -> f64 {
        1.0 - self.0
    }

    /// The quantile bounding a two-sided interval: 1 - alpha/2 (0.975).
    pub fn upper_tail_quantile(self) -> f64 {
        1.0 - (1.0 - self.0) / 2.0
    }
}

impl Default for Confidence {
    fn default() -> Self {
        Confidence(0.95)
    }
}

/// A closed interval `[lo, hi]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Scale both ends (e.g. divide by the baseline to get a relative
    /// interval).
    pub fn scale(&self, k: f64) -> Interval {
        let (a, b) = (self.lo * k, self.hi * k);
        Interval {
            lo: a.min(b),
            hi: a.max(b),
        }
    }
}

/// The samples are too small for the test to ever call a difference
/// significant at the requested level (benchmath's "need >= N samples").
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TooFew {
    /// Samples needed in each set.
    pub need: usize,
    /// The confidence level asked for.
    pub confidence: Confidence,
}

impl std::fmt::Display for TooFew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "need >= {} samples in each set to detect a difference at {}% confidence",
            self.need,
            self.confidence.as_percent()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Sample::new(&[4.0, 1.0, 3.0, 2.0]).unwrap().summary();
        assert_eq!(
            (s.n, s.min, s.max, s.median, s.mean),
            (4, 1.0, 4.0, 2.5, 2.5)
        );
        assert!((s.stddev - 1.2909944487358056).abs() < 1e-12);
    }

    #[test]
    fn confidence_conversions() {
        let c = Confidence::percent(95.0);
        assert!((c.alpha() - 0.05).abs() < 1e-12);
        assert!((c.upper_tail_quantile() - 0.975).abs() < 1e-12);
        assert_eq!(Confidence::percent(99.5).as_percent(), 99.5);
    }
}
