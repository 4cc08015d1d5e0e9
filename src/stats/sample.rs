//! [`Sample`]: measured values, validated and sorted once.
//!
//! Every statistic in this module takes a `Sample`, so the invariants are
//! checked in one place (criterion's `Sample`, benchmath's `NewSample`):
//! at least one value, every value finite (so no statistic is NaN unless a
//! sum overflows), sorted ascending. The mean keeps the input order of the
//! sum, as ministat does, so a `Sample`'s mean prints the same digits.

use super::dist;
use super::{Confidence, Interval, Summary};

/// Why values cannot form a [`Sample`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SampleError {
    #[error("a sample needs at least one value")]
    Empty,
    #[error("value #{index} is {value}, not a finite number")]
    NotFinite { index: usize, value: f64 },
    #[error(
        "value #{index} is {value}, beyond +/-{MAX_MAGNITUDE:e} (sums and squares would overflow)"
    )]
    TooLarge { index: usize, value: f64 },
}

/// Largest magnitude a measured value may have: sums of 10^6 of them and
/// squares of their differences stay finite in f64 (no benchmark unit
/// comes near it; a value beyond it is a broken measurement).
pub const MAX_MAGNITUDE: f64 = 1e150;

/// Why a single value cannot be a measurement, if it cannot.
pub fn check_value(value: f64) -> Result<(), String> {
    if !value.is_finite() {
        Err(format!("{value}, not a number"))
    } else if value.abs() > MAX_MAGNITUDE {
        Err(format!(
            "{value:e}, beyond +/-{MAX_MAGNITUDE:e} (statistics would overflow)"
        ))
    } else {
        Ok(())
    }
}

/// A non-empty set of finite measurements, sorted ascending.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    sorted: Vec<f64>,
    /// Sum in input order.
    sum: f64,
}

impl Sample {
    /// Validate and sort `values`.
    ///
    /// - Time: O(n log n).
    pub fn new(values: &[f64]) -> Result<Sample, SampleError> {
        if values.is_empty() {
            return Err(SampleError::Empty);
        }
        if let Some((index, &value)) = values.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(SampleError::NotFinite { index, value });
        }
        if let Some((index, &value)) = values
            .iter()
            .enumerate()
            .find(|(_, v)| v.abs() > MAX_MAGNITUDE)
        {
            return Err(SampleError::TooLarge { index, value });
        }
        let sum = values.iter().sum();
        let mut sorted = values.to_vec();
        sorted.sort_unstable_by(f64::total_cmp);
        Ok(Sample { sorted, sum })
    }

    /// Number of values (>= 1).
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    /// The values, ascending.
    pub fn sorted(&self) -> &[f64] {
        &self.sorted
    }

    pub fn min(&self) -> f64 {
        self.sorted[0]
    }

    pub fn max(&self) -> f64 {
        self.sorted[self.sorted.len() - 1]
    }

    /// Arithmetic mean (input-order sum / n).
    pub fn mean(&self) -> f64 {
        self.sum / self.len() as f64
    }

    /// Median; the mean of the two middle values for even n.
    pub fn median(&self) -> f64 {
        median_sorted(&self.sorted)
    }

    /// Sample variance (n-1 denominator, two-pass); 0 for n = 1.
    pub fn variance(&self) -> f64 {
        let n = self.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.mean();
        self.sorted.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64
    }

    /// Sample standard deviation; 0 for n = 1.
    pub fn stddev(&self) -> f64 {
        self.variance().sqrt()
    }

    /// Coefficient of variation, stddev / |mean| (infinite for mean 0).
    pub fn cv(&self) -> f64 {
        self.stddev() / self.mean().abs()
    }

    /// Standard error of the mean, stddev / sqrt(n).
    pub fn std_err(&self) -> f64 {
        self.stddev() / (self.len() as f64).sqrt()
    }

    /// The summary ministat prints (FreeBSD main's formulas).
    pub fn summary(&self) -> Summary {
        Summary {
            n: self.len(),
            min: self.min(),
            max: self.max(),
            median: self.median(),
            mean: self.mean(),
            stddev: self.stddev(),
        }
    }

    /// Half-width of the two-sided confidence interval of the mean,
    /// `t(1-alpha/2, n-1) * s / sqrt(n)` with the exact t quantile. `None`
    /// for n < 2 (no spread to estimate).
    pub fn mean_ci_half_width(&self, confidence: Confidence) -> Option<f64> {
        let n = self.len();
        if n < 2 {
            return None;
        }
        let t = dist::t_quantile(confidence.upper_tail_quantile(), (n - 1) as f64);
        Some(t * self.std_err())
    }

    /// That half-width relative to |mean| (0.01 = 1%): the precision an
    /// adaptive run compares with its target. `None` for n < 2; infinite
    /// when the mean is 0.
    pub fn mean_ci_relative_half_width(&self, confidence: Confidence) -> Option<f64> {
        self.mean_ci_half_width(confidence)
            .map(|h| h / self.mean().abs())
    }

    /// The confidence interval of the mean. `None` for n < 2.
    pub fn mean_ci(&self, confidence: Confidence) -> Option<Interval> {
        let h = self.mean_ci_half_width(confidence)?;
        let m = self.mean();
        Some(Interval {
            lo: m - h,
            hi: m + h,
        })
    }
}

/// Median of sorted values (mean of the middle two for even n).
pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub(crate) fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    let h = (v.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = h.ceil() as usize;
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invariants_and_basic_statistics() {
        assert_eq!(Sample::new(&[]), Err(SampleError::Empty));
        assert!(matches!(
            Sample::new(&[1.0, f64::NAN]),
            Err(SampleError::NotFinite { index: 1, .. })
        ));
        assert!(matches!(
            Sample::new(&[1e308, 1e308]),
            Err(SampleError::TooLarge { index: 0, .. })
        ));
        // At the limit, every statistic is finite.
        let big = Sample::new(&[MAX_MAGNITUDE, -MAX_MAGNITUDE, MAX_MAGNITUDE]).unwrap();
        assert!(big.mean().is_finite() && big.stddev().is_finite());
        assert!(
            check_value(f64::INFINITY)
                .unwrap_err()
                .contains("not a number")
        );
        assert!(check_value(-1e200).unwrap_err().contains("overflow"));
        let s = Sample::new(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(s.sorted(), &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(
            (s.min(), s.max(), s.mean(), s.median()),
            (1.0, 4.0, 2.5, 2.5)
        );
        assert!((s.stddev() - 1.2909944487358056).abs() < 1e-15);
        let one = Sample::new(&[7.0]).unwrap();
        assert_eq!((one.stddev(), one.median()), (0.0, 7.0));
        assert_eq!(one.mean_ci_half_width(Confidence::percent(95.0)), None);
    }

    #[test]
    fn mean_interval_matches_r() {
        // R: t.test(c(0.7,-1.6,-0.2,-1.2,-0.1,3.4,3.7,0.8,0.0,2.0))$conf.int
        //    -0.5297804  2.0297804
        let s = Sample::new(&[0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]).unwrap();
        let ci = s.mean_ci(Confidence::percent(95.0)).unwrap();
        assert!((ci.lo - -0.5297804).abs() < 1e-6, "{ci:?}");
        assert!((ci.hi - 2.0297804).abs() < 1e-6, "{ci:?}");
        let rel = s
            .mean_ci_relative_half_width(Confidence::percent(95.0))
            .unwrap();
        assert!((rel - 1.2797804 / 0.75).abs() < 1e-6);
    }
}
