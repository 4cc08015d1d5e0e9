//! The ratio of two means with its interval on the log scale.
//!
//! A t interval of the difference of means, divided by the baseline mean,
//! can pass -100% (and a ratio interval 0) when the spread is large: a
//! bound no change can reach. Taken on the log scale the interval maps
//! back to ratios above 0 whatever the data.
//!
//! For independent sets the statistic is ln(mean_b / mean_a); by the delta
//! method its variance is cv_a^2/n_a + cv_b^2/n_b (each mean's relative
//! standard error squared), with Welch-Satterthwaite degrees of freedom on
//! those two terms (Welch 1947; for the delta method on a log ratio of
//! means see e.g. Hirschberg & Lye, "A geometric comparison of the delta
//! and Fieller confidence intervals", Am. Stat. 64, 2010). For a handful
//! of unit means (runs, boots) the logs of the units are compared
//! directly with [`of_logs`].

use serde::Serialize;

use super::dist::{t_quantile, t_two_sided_p};
use super::{Confidence, Interval, Sample, TooFew};

/// Why no log ratio can be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LogRatioError {
    #[error("the baseline's mean is {0}: a ratio needs a mean above 0")]
    Baseline(f64),
    #[error("the contender's mean is {0}: a ratio needs a mean above 0")]
    Contender(f64),
}

/// A log ratio with its t interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogRatio {
    pub n1: usize,
    pub n2: usize,
    /// ln(b/a): of the means ([`of_means`]) or the mean of the logs
    /// ([`of_logs`]).
    pub log_ratio: f64,
    /// Its standard error.
    pub se: f64,
    pub df: f64,
    pub confidence: Confidence,
    pub log_interval: Interval,
    /// Two-sided p of "the ratio is 1".
    pub p: f64,
    /// Set when a side has too few values to estimate a spread.
    pub too_few: Option<TooFew>,
}

/// ln(mean(b)/mean(a)) with Welch's delta-method interval. Means must be
/// above 0.
pub fn of_means(a: &Sample, b: &Sample, confidence: Confidence) -> Result<LogRatio, LogRatioError> {
    let (ma, mb) = (a.mean(), b.mean());
    if ma <= 0.0 {
        return Err(LogRatioError::Baseline(ma));
    }
    if mb <= 0.0 {
        return Err(LogRatioError::Contender(mb));
    }
    let (n1, n2) = (a.len(), b.len());
    let (q1, q2) = (
        a.variance() / (ma * ma) / n1 as f64,
        b.variance() / (mb * mb) / n2 as f64,
    );
    let se2 = q1 + q2;
    let den = if n1 > 1 && n2 > 1 {
        q1 * q1 / (n1 - 1) as f64 + q2 * q2 / (n2 - 1) as f64
    } else {
        0.0
    };
    let df = if den > 0.0 {
        se2 * se2 / den
    } else {
        (n1 + n2).saturating_sub(2) as f64
    };
    Ok(finish(n1, n2, (mb / ma).ln(), se2.sqrt(), df, confidence))
}

/// The difference of the mean logs, mean(ln b) - mean(ln a), with a t
/// interval: Welch's when both sides have 2 values or more, Student's
/// pooled one when a side has a single value (its spread is assumed to
/// be the other side's). Logs must be finite.
pub fn of_logs(la: &[f64], lb: &[f64], confidence: Confidence) -> LogRatio {
    let (n1, n2) = (la.len(), lb.len());
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    let (m1, m2) = (mean(la), mean(lb));
    let (s1, s2) = (ss(la, m1), ss(lb, m2));
    let (f1, f2) = (n1 as f64, n2 as f64);
    let (se, df) = if n1 > 1 && n2 > 1 {
        let (q1, q2) = (s1 / (f1 - 1.0) / f1, s2 / (f2 - 1.0) / f2);
        let den = q1 * q1 / (f1 - 1.0) + q2 * q2 / (f2 - 1.0);
        let df = if den > 0.0 {
            (q1 + q2).powi(2) / den
        } else {
            f1 + f2 - 2.0
        };
        ((q1 + q2).sqrt(), df)
    } else {
        let df = f1 + f2 - 2.0;
        let sp2 = if df > 0.0 { (s1 + s2) / df } else { 0.0 };
        ((sp2 * (1.0 / f1 + 1.0 / f2)).sqrt(), df)
    };
    finish(n1, n2, m2 - m1, se, df, confidence)
}

fn finish(n1: usize, n2: usize, d: f64, se: f64, df: f64, confidence: Confidence) -> LogRatio {
    let too_few = (df < 1.0).then_some(TooFew {
        need: 2,
        confidence,
    });
    if too_few.is_some() {
        return LogRatio {
            n1,
            n2,
            log_ratio: d,
            se,
            df,
            confidence,
            log_interval: Interval { lo: d, hi: d },
            p: 1.0,
            too_few,
        };
    }
    let (p, h) = if se > 0.0 {
        (
            t_two_sided_p(d / se, df),
            t_quantile(confidence.upper_tail_quantile(), df) * se,
        )
    } else {
        (if d == 0.0 { 1.0 } else { 0.0 }, 0.0)
    };
    LogRatio {
        n1,
        n2,
        log_ratio: d,
        se,
        df,
        confidence,
        log_interval: Interval {
            lo: d - h,
            hi: d + h,
        },
        p,
        too_few,
    }
}

#[cfg(test)]
impl LogRatio {
    /// Whether the interval excludes a ratio of 1.
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && !self.log_interval.contains(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ttest::TTest;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn close_to_welch_for_small_changes_and_never_below_zero() {
        // R's sleep data, shifted to be positive: for a modest change the
        // delta-method interval of the ratio is close to Welch's
        // difference interval over the baseline mean.
        let a = s(&[10.7, 8.4, 9.8, 8.8, 9.9, 13.4, 13.7, 10.8, 10.0, 12.0]);
        let b = s(&[11.9, 10.8, 11.1, 10.1, 9.9, 14.4, 15.5, 11.6, 14.6, 13.4]);
        let conf = Confidence::percent(95.0);
        let r = of_means(&a, &b, conf).unwrap();
        let w = TTest::welch(&a, &b, conf);
        let rel = [r.log_interval.lo.exp_m1(), r.log_interval.hi.exp_m1()];
        assert!((rel[0] - w.relative.lo).abs() < 0.02, "{rel:?} {w:?}");
        assert!((rel[1] - w.relative.hi).abs() < 0.03, "{rel:?} {w:?}");
        assert!((r.p - w.p).abs() < 0.03, "{} {}", r.p, w.p);
        // A wild spread: Welch's relative interval passes -100%, the log
        // one cannot.
        let a = s(&[10.0, 10.5, 9.5]);
        let b = s(&[1.0, 30.0, 2.0]);
        assert!(TTest::welch(&a, &b, conf).relative.lo < -1.0);
        let r = of_means(&a, &b, conf).unwrap();
        assert!(r.log_interval.lo.exp_m1() > -1.0);
        assert!(!r.significant());
    }

    #[test]
    fn refuses_means_at_or_below_zero() {
        let conf = Confidence::default();
        assert_eq!(
            of_means(&s(&[0.0, 0.0]), &s(&[1.0, 2.0]), conf),
            Err(LogRatioError::Baseline(0.0))
        );
        assert!(of_means(&s(&[1.0, 2.0]), &s(&[-1.0, -2.0]), conf).is_err());
    }

    #[test]
    fn logs_by_hand() {
        // ln-values 0, 0.2 vs 0.5, 0.7: difference 0.5, each variance
        // 0.02, se = sqrt(0.02/2 + 0.02/2) = 0.1414, df = 2.
        let r = of_logs(&[0.0, 0.2], &[0.5, 0.7], Confidence::percent(95.0));
        assert!((r.log_ratio - 0.5).abs() < 1e-12);
        assert!((r.se - 0.02f64.sqrt()).abs() < 1e-12);
        assert!((r.df - 2.0).abs() < 1e-9);
        let h = 4.302652729911275 * 0.02f64.sqrt();
        assert!((r.log_interval.hi - 0.5 - h).abs() < 1e-9);
        // One value a side: nothing to estimate a spread from.
        let r = of_logs(&[0.0], &[0.5], Confidence::default());
        assert!(r.too_few.is_some() && !r.significant());
        // One against three: Student's pooled spread, df = 2.
        let r = of_logs(&[0.0], &[0.4, 0.5, 0.6], Confidence::default());
        assert_eq!(r.df, 2.0);
        assert!(r.too_few.is_none());
    }
}
