//! Student's (pooled) and Welch's two-sample t-tests with exact t
//! quantiles and p-values (statrs), unlike ministat's 3-decimal table.
//!
//! Assumes roughly normal sample means (benchmath's `AssumeNormal`).
//! Welch (1947) does not assume equal variances; its degrees of freedom
//! are Satterthwaite's approximation. Both are two-sided.

use super::dist::{t_quantile, t_two_sided_p};
use super::{Confidence, Interval, Sample, TooFew};
use serde::Serialize;
use std::sync::Arc;

use super::cfmt::fmt_g;
use super::twosample::{Outcome, Shown, few};

/// Which t-test.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TKind {
    /// Equal variances, pooled standard deviation, df = n1 + n2 - 2.
    Student,
    /// Unequal variances, Welch-Satterthwaite df.
    Welch,
}

/// Result of a two-sample t-test of `b` (contender) against `a`
/// (baseline).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TTest {
    pub kind: TKind,
    /// Baseline size.
    pub n1: usize,
    /// Contender size.
    pub n2: usize,
    pub mean1: f64,
    pub mean2: f64,
    /// The t statistic, (mean2 - mean1) / standard error.
    pub statistic: f64,
    /// Degrees of freedom (fractional for Welch).
    pub df: f64,
    /// Two-sided p-value (1 when both sets are constant and equal, 0 when
    /// both are constant and differ).
    pub p: f64,
    pub confidence: Confidence,
    /// Interval of the difference mean2 - mean1.
    pub interval: Interval,
    /// Interval of the relative change (mean2 - mean1) / mean1.
    pub relative: Interval,
    /// Set when a set has fewer than 2 values (no variance to test with).
    pub too_few: Option<TooFew>,
}

impl TTest {
    /// Student's t-test (pooled variance). Only the tests check it
    /// against R: reports use ministat's table (`student.rs`).
    #[cfg(test)]
    pub fn student(a: &Sample, b: &Sample, confidence: Confidence) -> TTest {
        test(TKind::Student, a, b, confidence)
    }

    /// Welch's t-test (unequal variances).
    pub fn welch(a: &Sample, b: &Sample, confidence: Confidence) -> TTest {
        test(TKind::Welch, a, b, confidence)
    }

    /// `p < alpha` (and enough samples).
    #[cfg(test)]
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && self.p < self.confidence.alpha()
    }
}

fn test(kind: TKind, a: &Sample, b: &Sample, confidence: Confidence) -> TTest {
    let (n1, n2) = (a.len(), b.len());
    let (m1, m2) = (a.mean(), b.mean());
    let (v1, v2) = (a.variance(), b.variance());
    let (f1, f2) = (n1 as f64, n2 as f64);
    let diff = m2 - m1;
    let too_few = (n1 < 2 || n2 < 2).then_some(TooFew {
        need: 2,
        confidence,
    });
    let (se, df) = match kind {
        TKind::Student => {
            let df = f1 + f2 - 2.0;
            let sp2 = ((f1 - 1.0) * v1 + (f2 - 1.0) * v2) / df;
            ((sp2 * (1.0 / f1 + 1.0 / f2)).sqrt(), df)
        }
        TKind::Welch => {
            let (q1, q2) = (v1 / f1, v2 / f2);
            let se2 = q1 + q2;
            let den = q1 * q1 / (f1 - 1.0) + q2 * q2 / (f2 - 1.0);
            // Both variances zero: fall back to the pooled df.
            let df = if den > 0.0 {
                se2 * se2 / den
            } else {
                f1 + f2 - 2.0
            };
            (se2.sqrt(), df)
        }
    };
    let nan = Interval {
        lo: f64::NAN,
        hi: f64::NAN,
    };
    if too_few.is_some() {
        return TTest {
            kind,
            n1,
            n2,
            mean1: m1,
            mean2: m2,
            statistic: f64::NAN,
            df: df.max(0.0),
            p: 1.0,
            confidence,
            interval: nan,
            relative: nan,
            too_few,
        };
    }
    let (t, p) = if se > 0.0 {
        let t = diff / se;
        (t, t_two_sided_p(t, df))
    } else if diff == 0.0 {
        (0.0, 1.0)
    } else {
        (diff.signum() * f64::INFINITY, 0.0)
    };
    let h = t_quantile(confidence.upper_tail_quantile(), df) * se;
    let interval = Interval {
        lo: diff - h,
        hi: diff + h,
    };
    TTest {
        kind,
        n1,
        n2,
        mean1: m1,
        mean2: m2,
        statistic: t,
        df,
        p,
        confidence,
        interval,
        relative: interval.scale(1.0 / m1.abs()),
        too_few: None,
    }
}

/// Welch's t as `kbench compare --test welch` runs it.
pub struct Welch;

impl super::twosample::TwoSample for Welch {
    fn name(&self) -> &'static str {
        "welch"
    }
    fn help(&self) -> &'static str {
        "Welch's t (unequal variances, exact quantiles)"
    }
    fn label(&self) -> &'static str {
        "Welch's t"
    }
    fn run(&self, a: &Sample, b: &Sample, confidence: f64) -> Arc<dyn Outcome> {
        Arc::new(TTest::welch(a, b, Confidence::percent(confidence)))
    }
}

impl Outcome for TTest {
    fn summary(&self, conf: f64, unit: &str) -> Shown {
        Shown::Line(format!(
            "Welch's t at {conf}% confidence: difference {} [{}, {}] {unit}, t = {}, df = {}, p = {}{}",
            fmt_g(self.mean2 - self.mean1, 0, 6),
            fmt_g(self.interval.lo, 0, 6),
            fmt_g(self.interval.hi, 0, 6),
            fmt_g(self.statistic, 0, 6),
            fmt_g(self.df, 0, 4),
            fmt_g(self.p, 0, 4),
            few(self.too_few),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R's `sleep` data set (Cushny & Peebles), the example of ?t.test.
    const G1: [f64; 10] = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0];
    const G2: [f64; 10] = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4];

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn welch_matches_r() {
        // t.test(extra ~ group, data = sleep): t = -1.8608, df = 17.776,
        // p-value = 0.07939, 95% CI -3.3654832 0.2054832 (group1 - group2).
        let a = Sample::new(&G2).unwrap();
        let b = Sample::new(&G1).unwrap();
        let r = TTest::welch(&a, &b, Confidence::percent(95.0));
        assert!(close(r.statistic, -1.8608, 1e-4), "{r:?}");
        assert!(close(r.df, 17.776, 1e-3), "{r:?}");
        assert!(close(r.p, 0.07939, 1e-5), "{r:?}");
        assert!(close(r.interval.lo, -3.3654832, 1e-6), "{r:?}");
        assert!(close(r.interval.hi, 0.2054832, 1e-6), "{r:?}");
        assert!(!r.significant());
    }

    #[test]
    fn student_matches_r() {
        // t.test(extra ~ group, data = sleep, var.equal = TRUE): t = -1.8608,
        // df = 18, p-value = 0.07919, 95% CI -3.363874 0.203874.
        let a = Sample::new(&G2).unwrap();
        let b = Sample::new(&G1).unwrap();
        let r = TTest::student(&a, &b, Confidence::percent(95.0));
        assert!(close(r.statistic, -1.8608, 1e-4));
        assert_eq!(r.df, 18.0);
        assert!(close(r.p, 0.07919, 1e-5), "{r:?}");
        assert!(close(r.interval.lo, -3.363874, 1e-6), "{r:?}");
        assert!(close(r.interval.hi, 0.203874, 1e-6), "{r:?}");
        // At 80% the same data differ.
        let r80 = TTest::student(&a, &b, Confidence::percent(80.0));
        assert!(r80.significant());
    }

    #[test]
    fn degenerate_inputs() {
        let c1 = Sample::new(&[5.0, 5.0, 5.0]).unwrap();
        let c2 = Sample::new(&[6.0, 6.0, 6.0]).unwrap();
        let r = TTest::welch(&c1, &c2, Confidence::default());
        assert_eq!((r.p, r.statistic), (0.0, f64::INFINITY));
        let r = TTest::welch(&c1, &c1, Confidence::default());
        assert_eq!((r.p, r.statistic), (1.0, 0.0));
        let one = Sample::new(&[5.0]).unwrap();
        let r = TTest::student(&one, &c2, Confidence::default());
        assert_eq!(r.too_few.map(|t| t.need), Some(2));
        assert!(!r.significant());
    }
}
