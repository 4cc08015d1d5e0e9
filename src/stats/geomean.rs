//! Geometric mean of ratios across benchmarks, with a t interval on the
//! log scale (what benchstat's geomean row summarises).
//!
//! Ratios multiply, so their natural average is geometric: the mean of
//! ln(r) back-transformed. The interval is exp(mean ± t(1-α/2, k-1) ·
//! sd/√k) of the logs, which assumes the log-ratios are roughly normal.

use super::dist::t_quantile;
use super::{Confidence, Interval};
use serde::Serialize;

/// Why no geometric mean can be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeomeanError {
    #[error("no ratios")]
    Empty,
    #[error("ratio #{index} is {value}; ratios must be finite and > 0")]
    NotPositive { index: usize, value: f64 },
}

/// The geometric mean of k ratios.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geomean {
    /// Number of ratios.
    pub k: usize,
    /// exp(mean(ln r)).
    pub geomean: f64,
    /// Degrees of freedom of the interval, k - 1.
    pub df: usize,
    pub confidence: Confidence,
    /// Interval of the geometric mean; `None` for k = 1.
    pub interval: Option<Interval>,
}

/// Geometric mean of `ratios` (each contender / baseline) with its
/// interval at `confidence`.
pub fn geomean_of_ratios(ratios: &[f64], confidence: Confidence) -> Result<Geomean, GeomeanError> {
    if ratios.is_empty() {
        return Err(GeomeanError::Empty);
    }
    if let Some((index, &value)) = ratios
        .iter()
        .enumerate()
        .find(|(_, r)| !(r.is_finite() && **r > 0.0))
    {
        return Err(GeomeanError::NotPositive { index, value });
    }
    let k = ratios.len();
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let m = logs.iter().sum::<f64>() / k as f64;
    let interval = (k >= 2).then(|| {
        let var = logs.iter().map(|l| (l - m) * (l - m)).sum::<f64>() / (k - 1) as f64;
        let h =
            t_quantile(confidence.upper_tail_quantile(), (k - 1) as f64) * (var / k as f64).sqrt();
        Interval {
            lo: (m - h).exp(),
            hi: (m + h).exp(),
        }
    });
    Ok(Geomean {
        k,
        geomean: m.exp(),
        df: k.saturating_sub(1),
        confidence,
        interval,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_ratios() {
        // 2 and 0.5 cancel; 1.1, 1.21 and 1.331 (powers of 1.1) average 1.21.
        let g = geomean_of_ratios(&[2.0, 0.5], Confidence::default()).unwrap();
        assert!((g.geomean - 1.0).abs() < 1e-15);
        let g = geomean_of_ratios(&[1.1, 1.21, 1.331], Confidence::percent(95.0)).unwrap();
        assert!((g.geomean - 1.21).abs() < 1e-12);
        // logs are ln1.1 * {1,2,3}: sd = ln1.1, half-width = t(.975,2)*ln1.1/sqrt3.
        let h = 4.302652729911275 * 1.1f64.ln() / 3f64.sqrt();
        let iv = g.interval.unwrap();
        assert!((iv.lo - (1.21f64.ln() - h).exp()).abs() < 1e-9, "{iv:?}");
        assert!((iv.hi - (1.21f64.ln() + h).exp()).abs() < 1e-9, "{iv:?}");
        let one = geomean_of_ratios(&[1.05], Confidence::default()).unwrap();
        assert_eq!((one.geomean, one.interval), (1.05, None));
        assert!(geomean_of_ratios(&[1.0, 0.0], Confidence::default()).is_err());
        assert_eq!(
            geomean_of_ratios(&[], Confidence::default()),
            Err(GeomeanError::Empty)
        );
    }
}
