//! Differences paired by round, with a simultaneous interval over a
//! family: what `kbench explain` says of a symbol's share of profile
//! samples (percentage points) or a counter per operation.
//!
//! Each round gives one difference (contender minus baseline, both
//! measured in that round, or the i-th round of each when they come from
//! different runs); the rounds are the replicates, so the interval holds
//! the round-to-round noise of the profile itself. A family of `m` such
//! differences gets Bonferroni's simultaneous level `1 - alpha/m`: a
//! change is outside the noise when its adjusted interval excludes 0.

use serde::Serialize;

use super::dist::t_quantile;

/// The mean of paired differences and its (adjusted) t interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PairedDiff {
    /// Mean difference, contender minus baseline.
    pub mean: f64,
    pub lo: f64,
    pub hi: f64,
    /// Pairs (rounds) behind it.
    pub n: usize,
}

impl PairedDiff {
    /// The interval excludes 0: a change beyond the noise.
    pub fn changed(&self) -> bool {
        self.lo > 0.0 || self.hi < 0.0
    }
}

/// `d`'s mean with a two-sided t interval at `confidence` (0..1), made
/// simultaneous over a family of `family` such intervals; `None` with
/// fewer than two pairs.
pub fn paired_diff(d: &[f64], confidence: f64, family: usize) -> Option<PairedDiff> {
    let n = d.len();
    if n < 2 {
        return None;
    }
    let mean = d.iter().sum::<f64>() / n as f64;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let alpha = (1.0 - confidence) / family.max(1) as f64;
    let half = t_quantile(1.0 - alpha / 2.0, (n - 1) as f64) * (var / n as f64).sqrt();
    Some(PairedDiff {
        mean,
        lo: mean - half,
        hi: mean + half,
        n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_is_students_and_widens_with_the_family() {
        // Mean 2, sd 1, n 4: t(0.975, 3) = 3.182, half = 1.591.
        let d = [1.0, 2.0, 3.0, 2.0];
        let sd = (2.0f64 / 3.0).sqrt();
        let one = paired_diff(&d, 0.95, 1).unwrap();
        assert!((one.mean - 2.0).abs() < 1e-12);
        assert!(
            (one.hi - one.mean - 3.182446 * sd / 2.0).abs() < 1e-5,
            "{one:?}"
        );
        assert!(one.changed());
        let ten = paired_diff(&d, 0.95, 10).unwrap();
        assert!(ten.hi - ten.lo > one.hi - one.lo);
        assert!(paired_diff(&[1.0], 0.95, 1).is_none());
        let zero = paired_diff(&[0.0, 0.0, 0.0], 0.95, 3).unwrap();
        assert!(!zero.changed());
    }
}
