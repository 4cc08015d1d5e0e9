//! Is a revision "like good" or "like bad"? The question `git bisect`
//! asks a person, answered from samples.
//!
//! The threshold is the size of a regression that counts: a revision is
//! *like bad* when it is worse than the good end by more than the
//! threshold, *like good* when it is worse by less (or better). Both are
//! read from Welch's interval of the relative change from the good end to
//! the revision, at the adaptive runner's interim confidence
//! ([`LOOK_CONFIDENCE`], 99%), after at least [`MIN_SAMPLES`] samples of
//! each, so the repeated looks of sequential sampling do not inflate the
//! error rate (the same guard as `--until-verdict`, `runner/adaptive.rs`).
//! While the interval straddles the threshold the revision is undecided;
//! how many more samples would decide it is estimated from the interval's
//! current width, which shrinks as 1/sqrt(n).

use serde::Serialize;

use crate::runner::adaptive::{LOOK_CONFIDENCE, MIN_SAMPLES};
use crate::stats::ttest::TTest;
use crate::stats::{Confidence, Interval, Sample};

/// The answer for one revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    LikeGood,
    LikeBad,
    Undecided,
}

/// How a revision compares with the good end.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Look {
    pub call: Call,
    /// The regression: relative change towards worse (positive = worse
    /// than the good end, whatever the metric's direction).
    pub regression: f64,
    /// Its interval at `confidence` percent.
    pub interval: Interval,
    pub confidence: f64,
    /// Samples of the revision and of the good end.
    pub n: usize,
    pub n_good: usize,
    /// Undecided: about how many more samples of each would decide it
    /// (`None` when its change sits on the threshold).
    pub more: Option<u64>,
}

/// The regression of `rev` against `good` with its interval at
/// `confidence`; `higher` when a larger value is better. `None` with fewer
/// than 2 values in either, or values that are not numbers.
pub fn regression(
    good: &[f64],
    rev: &[f64],
    higher: bool,
    confidence: f64,
) -> Option<(f64, Interval)> {
    let (g, r) = (Sample::new(good).ok()?, Sample::new(rev).ok()?);
    if g.len() < 2 || r.len() < 2 {
        return None;
    }
    let t = TTest::welch(&g, &r, Confidence::percent(confidence));
    let change = r.mean() / g.mean() - 1.0;
    let iv = t.relative;
    if iv.lo.is_nan() || iv.hi.is_nan() {
        return None;
    }
    Some(if higher {
        (
            -change,
            Interval {
                lo: -iv.hi,
                hi: -iv.lo,
            },
        )
    } else {
        (change, iv)
    })
}

/// Decide `rev` against `good` for a regression `threshold` (0.05 = 5%).
pub fn look(good: &[f64], rev: &[f64], higher: bool, threshold: f64) -> Option<Look> {
    let (regression, interval) = regression(good, rev, higher, LOOK_CONFIDENCE)?;
    let enough = good.len() >= MIN_SAMPLES && rev.len() >= MIN_SAMPLES;
    let call = if !enough {
        Call::Undecided
    } else if interval.lo > threshold {
        Call::LikeBad
    } else if interval.hi < threshold {
        Call::LikeGood
    } else {
        Call::Undecided
    };
    let more = (call == Call::Undecided)
        .then(|| more_samples(rev.len().min(good.len()), regression, interval, threshold))
        .flatten();
    Some(Look {
        call,
        regression,
        interval,
        confidence: LOOK_CONFIDENCE,
        n: rev.len(),
        n_good: good.len(),
        more,
    })
}

/// Samples per side still needed for an interval centred on `center` to
/// clear `threshold`: its half-width scales as 1/sqrt(n).
fn more_samples(n: usize, center: f64, iv: Interval, threshold: f64) -> Option<u64> {
    let half = (iv.hi - iv.lo) / 2.0;
    let gap = (center - threshold).abs();
    if !(gap > 1e-12 && half.is_finite()) {
        return None;
    }
    let need = (n as f64 * (half / gap).powi(2)).ceil();
    let need = need.max(MIN_SAMPLES as f64);
    (need < 1e9).then(|| (need as u64).saturating_sub(n as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn around(mean: f64, n: usize) -> Vec<f64> {
        // Deterministic spread of +/-1% around the mean.
        (0..n)
            .map(|i| mean * (1.0 + 0.01 * ((i % 5) as f64 - 2.0) / 2.0))
            .collect()
    }

    #[test]
    fn a_ten_percent_step_is_called_both_ways() {
        let good = around(100.0, 8);
        let bad = around(110.0, 8);
        let l = look(&good, &bad, false, 0.05).unwrap();
        assert_eq!(l.call, Call::LikeBad);
        assert!((l.regression - 0.10).abs() < 1e-9);
        assert!(l.interval.lo > 0.05 && l.interval.hi < 0.15);
        let same = around(100.2, 8);
        assert_eq!(
            look(&good, &same, false, 0.05).unwrap().call,
            Call::LikeGood
        );
        // Higher is better: a 10% drop is the regression.
        let slower = around(90.0, 8);
        let l = look(&good, &slower, true, 0.05).unwrap();
        assert_eq!(l.call, Call::LikeBad);
        assert!((l.regression - 0.10).abs() < 1e-9, "{}", l.regression);
        assert!(l.interval.lo > 0.05);
        // ... and a 10% gain is no regression.
        assert_eq!(look(&good, &bad, true, 0.05).unwrap().call, Call::LikeGood);
    }

    #[test]
    fn no_call_before_min_samples() {
        let good = around(100.0, MIN_SAMPLES - 1);
        let bad = around(130.0, MIN_SAMPLES - 1);
        let l = look(&good, &bad, false, 0.05).unwrap();
        assert_eq!(l.call, Call::Undecided);
        assert!(look(&good[..1], &bad, false, 0.05).is_none());
    }

    #[test]
    fn on_the_threshold_it_says_how_many_more() {
        // 5% worse, +/-~1%: a 5% threshold cannot be decided by more
        // samples; a 3% one can, with a few more.
        let good = around(100.0, 6);
        let mid: Vec<f64> = [104.0, 106.5, 103.0, 107.0, 105.5, 104.0].to_vec();
        let l = look(&good, &mid, false, 0.05).unwrap();
        assert_eq!(l.call, Call::Undecided);
        let l3 = look(&good, &mid, false, 0.035).unwrap();
        if l3.call == Call::Undecided {
            let more = l3.more.expect("a count");
            assert!((1..200).contains(&more), "{more}");
        }
        assert_eq!(
            more_samples(5, 0.05, Interval { lo: 0.0, hi: 0.1 }, 0.05),
            None
        );
        // Half-width 0.04, gap 0.02: (0.04/0.02)^2 = 4x the samples.
        assert_eq!(
            more_samples(10, 0.07, Interval { lo: 0.03, hi: 0.11 }, 0.05),
            Some(30)
        );
    }
}
