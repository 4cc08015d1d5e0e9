//! Seedable bootstrap confidence intervals, generic over the statistic.
//!
//! Each resample draws n values with replacement from each set
//! (independently for two sets), evaluates a closure on them, and the
//! percentile interval of those values is reported (Efron & Tibshirani
//! 1993, ch. 13). Resamples are handed to the closure sorted, so order
//! statistics (medians) are cheap. The generator is ChaCha8 seeded by the
//! caller, so a result is reproducible bit for bit.
//!
//! ```ignore
//! let r = Bootstrap::default().two_sample(&a, &b, 1.0, |x, y| mean(y) / mean(x), conf);
//! ```

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{Confidence, Interval, Sample, TooFew};
use std::sync::Arc;

use super::cfmt::fmt_g;
use super::twosample::{Outcome, Shown, few};

/// Resampling settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bootstrap {
    /// Number of resamples (B).
    pub resamples: usize,
    /// Seed of the ChaCha8 generator.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 10_000,
            seed: 0x6b62656e6368, // "kbench"
        }
    }
}

/// A bootstrap estimate of a two-sample statistic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BootResult {
    /// Baseline size.
    pub n1: usize,
    /// Contender size.
    pub n2: usize,
    /// The statistic on the original samples.
    pub statistic: f64,
    /// Resamples drawn.
    pub resamples: usize,
    pub confidence: Confidence,
    /// Percentile interval of the statistic.
    pub interval: Interval,
    /// The statistic's value under "no difference" (1 for a ratio).
    pub null: f64,
    /// Two-sided bootstrap p-value against `null`: twice the smaller share
    /// of resampled statistics on either side of it (capped at 1). A
    /// percentile-interval approximation, coarse when it is small.
    pub p: f64,
    /// Set when a set has a single value (nothing to resample).
    pub too_few: Option<TooFew>,
    /// Resamples whose statistic is not a number (a ratio to a zero
    /// mean); when any is, there is no interval (NaN) and p is 1.
    pub undefined: usize,
}

impl Bootstrap {
    /// Resample `a` and `b` independently B times; return the statistic
    /// of each pair of resamples.
    pub fn two_sample_distribution<F: FnMut(&[f64], &[f64]) -> f64>(
        &self,
        a: &Sample,
        b: &Sample,
        mut stat: F,
    ) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let (mut ba, mut bb) = (vec![0.0; a.len()], vec![0.0; b.len()]);
        (0..self.resamples)
            .map(|_| {
                resample(&mut rng, a.sorted(), &mut ba);
                resample(&mut rng, b.sorted(), &mut bb);
                stat(&ba, &bb)
            })
            .collect()
    }

    /// Bootstrap a two-sample statistic `stat(a, b)` (both arguments
    /// sorted): the observed value, its percentile interval and a p-value
    /// against `null`.
    pub fn two_sample<F: FnMut(&[f64], &[f64]) -> f64>(
        &self,
        a: &Sample,
        b: &Sample,
        null: f64,
        mut stat: F,
        confidence: Confidence,
    ) -> BootResult {
        let observed = stat(a.sorted(), b.sorted());
        let too_few = (a.len() < 2 || b.len() < 2).then_some(TooFew {
            need: 2,
            confidence,
        });
        let mut dist = self.two_sample_distribution(a, b, &mut stat);
        // A resample whose statistic does not exist (a ratio to a zero
        // mean) leaves no percentile interval to speak of.
        let undefined = dist.iter().filter(|v| !v.is_finite()).count();
        dist.retain(|v| v.is_finite());
        dist.sort_unstable_by(f64::total_cmp);
        let (interval, p) = if dist.is_empty() || undefined > 0 {
            (
                Interval {
                    lo: f64::NAN,
                    hi: f64::NAN,
                },
                1.0,
            )
        } else {
            let alpha = confidence.alpha();
            let lo = super::sample::quantile_sorted(&dist, alpha / 2.0);
            let hi = super::sample::quantile_sorted(&dist, 1.0 - alpha / 2.0);
            let below = dist.partition_point(|&v| v < null) as f64;
            let above = (dist.len() - dist.partition_point(|&v| v <= null)) as f64;
            let b = dist.len() as f64;
            // Values equal to the null count on both sides.
            let le = b - above;
            let ge = b - below;
            let p = (2.0 * le.min(ge) / b).min(1.0);
            (Interval { lo, hi }, p)
        };
        BootResult {
            n1: a.len(),
            n2: b.len(),
            statistic: observed,
            resamples: self.resamples,
            confidence,
            interval,
            null,
            p,
            too_few,
            undefined,
        }
    }

    /// Ratio of means, mean(b) / mean(a), with its interval.
    pub fn ratio_of_means(&self, a: &Sample, b: &Sample, confidence: Confidence) -> BootResult {
        self.two_sample(a, b, 1.0, |x, y| mean(y) / mean(x), confidence)
    }
}

impl BootResult {
    /// The interval excludes the null value (and enough samples).
    #[cfg(test)]
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && !self.interval.contains(self.null)
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Fill `out` with a sorted resample of `src` (drawn with replacement).
fn resample(rng: &mut ChaCha8Rng, src: &[f64], out: &mut [f64]) {
    let n = src.len();
    for o in out.iter_mut() {
        *o = src[rng.random_range(0..n)];
    }
    out.sort_unstable_by(f64::total_cmp);
}

/// The bootstrap interval of the ratio of means as `kbench compare --test
/// bootstrap` runs it.
pub struct RatioOfMeans;

impl super::twosample::TwoSample for RatioOfMeans {
    fn name(&self) -> &'static str {
        "bootstrap"
    }
    fn help(&self) -> &'static str {
        "Bootstrap percentile interval of the ratio of means"
    }
    fn label(&self) -> &'static str {
        "bootstrap"
    }
    fn run(&self, a: &Sample, b: &Sample, confidence: f64) -> Arc<dyn Outcome> {
        // 10^4 resamples, fewer for huge sets so the cost stays near
        // 2*10^7 draws (the percentile interval needs ~10^3 at least).
        let resamples = (20_000_000 / (a.len() + b.len())).clamp(1_000, 10_000);
        let conf = Confidence::percent(confidence);
        Arc::new(Bootstrap { resamples, seed: 1 }.ratio_of_means(a, b, conf))
    }
}

impl Outcome for BootResult {
    fn summary(&self, conf: f64, _unit: &str) -> Shown {
        let head = format!(
            "Bootstrap ({} resamples, seed 1) ratio of means at {conf}% confidence: {}",
            self.resamples,
            fmt_g(self.statistic, 0, 6),
        );
        Shown::Line(if self.undefined > 0 {
            format!(
                "{head}; no interval: {} resamples have no ratio (a mean of 0)",
                self.undefined
            )
        } else {
            format!(
                "{head} [{}, {}], p ~ {}{}",
                fmt_g(self.interval.lo, 0, 6),
                fmt_g(self.interval.hi, 0, 6),
                fmt_g(self.p, 0, 3),
                few(self.too_few),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn fixed_seed_is_reproducible() {
        let a = s(&[10.0, 11.0, 9.5, 10.2, 10.8, 9.9, 10.1, 10.4]);
        let b = s(&[12.0, 12.5, 11.8, 12.2, 12.9, 11.5, 12.1, 12.3]);
        let bs = Bootstrap {
            resamples: 2000,
            seed: 42,
        };
        let r1 = bs.ratio_of_means(&a, &b, Confidence::percent(95.0));
        let r2 = bs.ratio_of_means(&a, &b, Confidence::percent(95.0));
        assert_eq!(r1, r2);
        let other = Bootstrap { seed: 43, ..bs }.ratio_of_means(&a, &b, Confidence::percent(95.0));
        assert_ne!(r1.interval, other.interval);
        // Observed ratio 97.3/81.9; the interval brackets it and excludes 1.
        assert!((r1.statistic - 97.3 / 81.9).abs() < 1e-12);
        assert!(r1.interval.lo < r1.statistic && r1.statistic < r1.interval.hi);
        assert!(r1.interval.lo > 1.1 && r1.interval.hi < 1.3, "{r1:?}");
        assert!(r1.significant());
        assert_eq!(r1.p, 0.0);
    }

    #[test]
    fn a_single_value_is_too_few() {
        let a = s(&[3.0, 1.0, 2.0]);
        let bs = Bootstrap {
            resamples: 50,
            seed: 1,
        };
        let one = s(&[1.0]);
        let r = bs.ratio_of_means(&one, &a, Confidence::default());
        assert!(r.too_few.is_some() && !r.significant());
    }

    #[test]
    fn a_ratio_to_a_zero_mean_leaves_no_interval() {
        // Resamples of a baseline with mostly zeros often average 0: their
        // ratio is no number, and the interval would read [0, NaN].
        let a = s(&[0.0, 0.001, 0.0, 0.0, 0.002, 0.0]);
        let b = s(&[0.0, 0.0011, 0.0, 0.0, 0.0022, 0.0]);
        let r = Bootstrap::default().ratio_of_means(&a, &b, Confidence::percent(95.0));
        assert!(r.undefined > 0, "{r:?}");
        assert!(r.interval.lo.is_nan() && r.p == 1.0);
        assert!((r.statistic - 1.1).abs() < 1e-12);
    }
}
