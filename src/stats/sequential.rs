//! Sequential looks for adaptive stopping (the runner's, `kbench
//! bisect`'s steps): sample a cell until its mean is known precisely
//! enough (`--precision 1%`), or, with two variants and `--until-verdict`,
//! until their comparison is decided either way.
//!
//! Looking at the data after every round and stopping when it looks good
//! inflates the error rates of a fixed-n test (the "optional stopping"
//! problem): 99% intervals looked at after each of up to 56 rounds called
//! identical variants "different" in 8.4% of simulated runs. kbench
//! therefore spends a fixed false-alarm budget, [`SEQUENTIAL_ALPHA`] (5%),
//! over a schedule of looks fixed in advance by the cap on rounds:
//!
//! - looks come at [`FIRST_LOOK`] rounds and then each [`LOOK_GROWTH`]
//!   times the last (10, 13, 17, 22, 28, 35, 44, 55, 69, 87, ...), and at
//!   the cap: few looks, most of them where most of the information is;
//! - every look uses the same level, the budget split evenly between them
//!   ([`look_confidence`]: 1 - 0.05/K for K looks, 99.44% for a cap of 60
//!   rounds), a Bonferroni (Pocock-shaped: constant per look) alpha
//!   spending. By the union bound the chance that any look calls a
//!   difference that is not there is at most 5%, whatever the correlation
//!   of the looks, as long as each look's interval holds its level.
//!
//! The statistics are the `stats` module's: the mean's interval from
//! [`Sample`]; for two variants, measured in the same rounds, the paired
//! analysis of their per-round log ratios (`stats::paired`: Hodges-Lehmann,
//! Wilcoxon signed-rank) and the equivalence verdict of its interval
//! against the precision. `kbench bisect` decides its steps on the same
//! schedule and level.

use serde::Serialize;

use crate::record::Direction;
use crate::stats::equivalence::{self, Verdict};
use crate::stats::{Confidence, Interval, Sample, paired};

/// No stopping decision before this many samples per cell.
pub const MIN_SAMPLES: usize = 5;
/// The chance, over all the looks of a sequential comparison, of calling
/// a difference between identical variants.
pub const SEQUENTIAL_ALPHA: f64 = 0.05;
/// Rounds at the first look of a sequential comparison (at its level the
/// signed-rank interval needs 9 rounds to decide anything).
pub const FIRST_LOOK: usize = 10;
/// Each look comes after this many times the rounds of the previous one.
pub const LOOK_GROWTH: f64 = 1.25;
/// Confidence of the reported precision of a mean (percent).
pub const PRECISION_CONFIDENCE: f64 = 95.0;

/// Relative half-width of the [`PRECISION_CONFIDENCE`] interval of the
/// mean; infinite with fewer than 2 finite values or a zero mean.
pub fn relative_halfwidth(v: &[f64]) -> f64 {
    Sample::new(v)
        .ok()
        .and_then(|s| s.mean_ci_relative_half_width(Confidence::percent(PRECISION_CONFIDENCE)))
        .filter(|x| x.is_finite())
        .unwrap_or(f64::INFINITY)
}

/// True when a cell may stop for precision.
pub fn precise_enough(v: &[f64], precision: f64) -> bool {
    v.len() >= MIN_SAMPLES && relative_halfwidth(v) <= precision
}

/// The rounds after which a sequential comparison capped at `max` rounds
/// looks: [`FIRST_LOOK`], then [`LOOK_GROWTH`] times the last, and `max`
/// (only `max` when it is at most [`FIRST_LOOK`]).
pub fn looks(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut n = FIRST_LOOK;
    while n < max {
        v.push(n);
        n = ((n as f64 * LOOK_GROWTH).ceil() as usize).max(n + 1);
    }
    v.push(max);
    v
}

/// Whether a sequential comparison capped at `max` rounds looks after `n`.
pub fn is_look(n: usize, max: usize) -> bool {
    looks(max).contains(&n)
}

/// Confidence (percent) of every look of a sequential comparison capped
/// at `max` rounds: [`SEQUENTIAL_ALPHA`] split evenly over its looks.
pub fn look_confidence(max: usize) -> f64 {
    100.0 * (1.0 - SEQUENTIAL_ALPHA / looks(max).len() as f64)
}

/// How a comparison of two variants stands: the verdict of the paired
/// [`look_confidence`] interval of b/a - 1 (per-round log ratios) against
/// the margin.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Look {
    pub verdict: Verdict,
    pub delta: f64,
    pub interval: Interval,
    pub margin: f64,
}

/// The comparison of `b` with `a`, their i-th values taken in the same
/// round, at the level of a sequential comparison capped at `max` rounds;
/// `None` below 2 rounds or with a value at or below 0.
pub fn look(a: &[f64], b: &[f64], margin: f64, max: usize) -> Option<Look> {
    let conf = Confidence::percent(look_confidence(max));
    let p = paired::in_step(a, b, Direction::Lower, conf)?;
    Some(Look {
        verdict: p.verdict(margin),
        delta: p.change(),
        interval: p.change_interval(),
        margin,
    })
}

impl std::fmt::Display for Look {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {:+.2}% [{:+.2}%, {:+.2}%]",
            equivalence::Display(self.verdict, self.margin),
            self.delta * 100.0,
            self.interval.lo * 100.0,
            self.interval.hi * 100.0
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_of_known_samples() {
        // mean 100, s = 1.5811, n = 5, t(0.975, 4) = 2.776 -> hw 1.963
        let v = [98.0, 99.0, 100.0, 101.0, 102.0];
        let r = relative_halfwidth(&v);
        assert!((r - 0.019630).abs() < 1e-5, "{r}");
        assert!(precise_enough(&v, 0.02));
        assert!(!precise_enough(&v, 0.019));
        assert!(!precise_enough(&v[..4], 1.0), "below MIN_SAMPLES");
        assert_eq!(relative_halfwidth(&v[..1]), f64::INFINITY);
    }

    #[test]
    fn verdicts() {
        let a = [
            100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8, 100.1, 99.9, 100.3,
        ];
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        let l = look(&a, &b, 0.01, 60).unwrap();
        assert_eq!(l.verdict, Verdict::Different);
        assert!((l.delta - 0.05).abs() < 1e-12);
        // The same values in another order: no change, within 2%.
        let same: Vec<f64> = a.iter().rev().copied().collect();
        assert_eq!(
            look(&a, &same, 0.02, 60).unwrap().verdict,
            Verdict::Equivalent
        );
        // A steady +0.01% in every round is real, and negligible.
        let tiny: Vec<f64> = a.iter().map(|x| x * 1.0001).collect();
        assert_eq!(
            look(&a, &tiny, 0.02, 60).unwrap().verdict,
            Verdict::DifferentWithinMargin
        );
        let wide = [
            50.0, 150.0, 100.0, 80.0, 120.0, 60.0, 140.0, 90.0, 110.0, 70.0,
        ];
        assert_eq!(
            look(&a, &wide, 0.01, 60).unwrap().verdict,
            Verdict::Inconclusive
        );
        // Fewer than 9 rounds cannot reach 99.44%: never decided.
        assert_eq!(
            look(&a[..8], &b[..8], 0.01, 60).unwrap().verdict,
            Verdict::TooFew
        );
        assert_eq!(look(&a[..1], &a, 0.01, 60), None);
    }

    #[test]
    fn the_looks_and_their_level() {
        assert_eq!(looks(60), [10, 13, 17, 22, 28, 35, 44, 55, 60]);
        assert_eq!(looks(100).len(), 11);
        assert_eq!(looks(10), [10]);
        assert_eq!(looks(5), [5]);
        assert!(is_look(17, 60) && !is_look(16, 60) && is_look(60, 60));
        // 5% split over 9 looks.
        assert!((look_confidence(60) - 99.4444).abs() < 1e-3);
        assert!((look_confidence(8) - 95.0).abs() < 1e-12);
        // More rounds, more looks, each stricter; slowly.
        assert!(look_confidence(1000) > look_confidence(100));
        assert!(looks(1000).len() < 25);
    }

    /// `trials` runs of two cells under a busy machine (`round` draws a
    /// round of the two arms, the contender `delta` slower, from the
    /// round's number and the run's phase), looked at as the runner does
    /// (at the looks of a cap of `max` rounds, stopping once decided): the
    /// share ending "different" and worse, "different" and better, and
    /// the mean rounds taken.
    fn sequential(
        seed: u64,
        trials: usize,
        delta: f64,
        max: usize,
        round: Round,
    ) -> (f64, f64, f64) {
        use crate::stats::sim::rng;
        let mut g = rng(seed);
        let (mut worse, mut better, mut rounds) = (0, 0, 0);
        for _ in 0..trials {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let phase = g.uniform() * 6.0;
            let mut last = None;
            for r in 0..max as u32 {
                let (va, vb) = round(&mut g, r, phase, delta);
                a.push(va);
                b.push(vb);
                if is_look(a.len(), max) {
                    last = look(&a, &b, 0.01, max);
                    if last.is_some_and(|l| l.verdict.decided()) {
                        break;
                    }
                }
            }
            rounds += a.len();
            if let Some(l) = last.filter(|l| l.verdict == Verdict::Different) {
                if l.delta > 0.0 {
                    worse += 1
                } else {
                    better += 1
                }
            }
        }
        let t = trials as f64;
        (worse as f64 / t, better as f64 / t, rounds as f64 / t)
    }

    type Round = fn(&mut crate::stats::sim::Rng, u32, f64, f64) -> (f64, f64);

    #[test]
    fn until_verdict_calibration() {
        // 2000 A/A runs: the 9 looks of a 60-round cap at 99.44% each may
        // call a difference in at most 5% of them (the union bound); with
        // 2000 runs the share's standard error at 5% is 0.49%, so 6% is
        // two standard errors above the promise. A 5% slower contender is
        // found worse within 60 rounds, never better.
        use crate::stats::sim::{bimodal_round, busy_round};
        let (w0, b0, n0) = sequential(51, 2000, 0.0, 60, busy_round);
        let (w5, b5, n5) = sequential(52, 2000, 0.05, 60, busy_round);
        eprintln!(
            "--until-verdict, 1% margin, at most 60 rounds, {:.2}% looks: A/A different {:.4} (mean {n0:.0} rounds); +5%: worse {w5}, better {b5} (mean {n5:.0} rounds)",
            look_confidence(60),
            w0 + b0
        );
        assert!(w0 + b0 <= 0.06, "A/A false alarms {}", w0 + b0);
        assert!(w5 >= 0.9 && b5 == 0.0, "power {w5}, better {b5}");
        let (w0, b0, n0) = sequential(53, 2000, 0.0, 60, bimodal_round);
        let (w5, b5, n5) = sequential(54, 2000, 0.05, 60, bimodal_round);
        eprintln!(
            "--until-verdict, bimodal samples: A/A different {:.4} (mean {n0:.0} rounds); +5%: worse {w5}, better {b5} (mean {n5:.0} rounds)",
            w0 + b0
        );
        assert!(w0 + b0 <= 0.06, "bimodal A/A false alarms {}", w0 + b0);
        assert!(w5 >= 0.8 && b5 == 0.0, "bimodal power {w5}, better {b5}");
    }
}
