//! Is a revision "like good" or "like bad"? The question `git bisect`
//! asks a person, answered from samples.
//!
//! A step measures the revision and both ends interleaved in rounds, so a
//! load burst or a frequency change moves all three arms of a round
//! together. The comparison keeps that pairing: for every round in which
//! both arms were measured, the log ratio of the revision to the end;
//! their centre and interval come from [`crate::stats::paired`] (the
//! Hodges-Lehmann estimate with its Wilcoxon signed-rank interval, robust
//! to a burst that hits one arm of a round only). Comparing the samples
//! as two independent sets instead (Welch) let the load's swings between
//! rounds swamp a 7.7% regression under a competing load: intervals such
//! as [-18.9%, +36.4%] and undecided steps.
//!
//! The threshold is the size of a regression that counts. Against the
//! good end the revision is *worse by more than the threshold* (the
//! interval of its regression lies above it) or *not* (below it); against
//! the bad end it may be *better than the bad end by more than the
//! threshold*. A revision is
//!
//! - **like bad** when worse than the good end by more than the
//!   threshold;
//! - **like good** when not worse than the good end by the threshold, or
//!   better than the bad end by more than it (for a regression several
//!   times the threshold this decides much sooner: its distance from the
//!   bad end is the regression, its distance from the threshold only the
//!   threshold), and not like bad at the same time;
//! - **undecided** otherwise: a revision carrying part of the regression
//!   can be both, and stays undecided (skipped).
//!
//! A step samples until it is decided, looking on the schedule of the
//! adaptive runner (`stats::sequential`: after 10, 13, 17, 22, ... rounds
//! and at the cap) at its level, 5% split evenly over the looks the cap
//! allows ([`look_confidence`], 99.44% for 60 rounds), so the repeated
//! looks of sequential sampling do not inflate the error rate. While undecided,
//! how many more rounds would decide it is estimated from the current
//! interval's width, which shrinks as 1/sqrt(n).

use serde::Serialize;
use std::collections::BTreeMap;

use crate::record::Direction;
use crate::stats::paired::{self, Against, Paired};
use crate::stats::sequential::{FIRST_LOOK, look_confidence};
use crate::stats::{Confidence, Interval};

/// The answer for one revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Call {
    LikeGood,
    LikeBad,
    Undecided,
}

/// A change towards worse (positive = worse, whatever the metric's
/// direction) with its interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Change {
    pub regression: f64,
    pub interval: Interval,
    /// Rounds compared.
    pub rounds: usize,
}

/// How a revision compares with the ends measured in the same step.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Look {
    pub call: Call,
    /// The regression from the good end: relative change towards worse
    /// (positive = worse than the good end).
    pub regression: f64,
    /// Its interval at `confidence` percent.
    pub interval: Interval,
    pub confidence: f64,
    /// The revision against the bad end (negative: better than it), when
    /// the bad end was measured beside it.
    pub vs_bad: Option<Change>,
    /// Rounds in which the revision and the good end were both measured.
    pub n: usize,
    /// Samples of the good end.
    pub n_good: usize,
    /// Undecided: about how many more rounds would decide it (`None`
    /// when its change sits on the threshold).
    pub more: Option<u64>,
}

/// A worsening (positive = worse) as the one change every report prints:
/// revision/baseline - 1 on the metric's own scale (a throughput 10% down
/// is -10%), with its interval.
pub fn as_change(worsening: f64, iv: Interval, direction: Direction) -> (f64, Interval) {
    match direction {
        Direction::Higher => (
            -worsening,
            Interval {
                lo: -iv.hi,
                hi: -iv.lo,
            },
        ),
        Direction::Lower | Direction::Info => (worsening, iv),
    }
}

/// One arm's values in a step, each with its round.
pub type Values<'a> = &'a [(u32, f64)];

/// The pairs (base, other) of the rounds in which both were measured;
/// an arm with several values in one round (a scale cell's intervals)
/// counts their mean.
pub fn pairs(base: Values<'_>, other: Values<'_>) -> Vec<(f64, f64)> {
    let means = |v: Values<'_>| {
        let mut m: BTreeMap<u32, (f64, u32)> = BTreeMap::new();
        for &(r, x) in v {
            let e = m.entry(r).or_default();
            e.0 += x;
            e.1 += 1;
        }
        m
    };
    let b = means(base);
    let o = means(other);
    b.iter()
        .filter_map(|(r, &(s, n))| {
            o.get(r)
                .map(|&(s2, n2)| (s / f64::from(n), s2 / f64::from(n2)))
        })
        .collect()
}

/// The paired comparison of `rev` with `base` at `confidence` percent;
/// `None` without a round holding both, or with a value that is not
/// above 0 (no ratio).
pub fn compare(
    base: Values<'_>,
    rev: Values<'_>,
    direction: Direction,
    confidence: f64,
) -> Option<Paired> {
    paired::paired(
        &pairs(base, rev),
        direction,
        Confidence::percent(confidence),
    )
    .ok()
}

fn change(p: &Paired) -> Change {
    let (regression, interval) = p.worsening();
    Change {
        regression,
        interval,
        rounds: p.n,
    }
}

/// Decide `rev` against the `good` end (and the `bad` end, when measured
/// in the same step) for a regression `threshold` (0.05 = 5%), at the
/// level of a step capped at `max` rounds.
pub fn look(
    good: Values<'_>,
    rev: Values<'_>,
    bad: Option<Values<'_>>,
    direction: Direction,
    (threshold, max): (f64, usize),
) -> Option<Look> {
    let level = look_confidence(max);
    let vs_good = compare(good, rev, direction, level)?;
    // The bad end's worsening from the revision: past the threshold when
    // the revision is better than the bad end by more than it.
    let bad_from_rev = bad.and_then(|b| compare(rev, b, direction, level));
    let worse = vs_good.against(threshold) == Against::Past;
    let not_worse = matches!(vs_good.against(threshold), Against::Within | Against::Below)
        || bad_from_rev
            .as_ref()
            .is_some_and(|p| p.against(threshold) == Against::Past);
    let call = match (worse, not_worse) {
        (true, false) => Call::LikeBad,
        (false, true) => Call::LikeGood,
        _ => Call::Undecided,
    };
    let g = change(&vs_good);
    let more = (call == Call::Undecided)
        .then(|| more_rounds(g.rounds, g.regression, g.interval, threshold))
        .flatten();
    Some(Look {
        call,
        regression: g.regression,
        interval: g.interval,
        confidence: level,
        vs_bad: bad
            .and_then(|b| compare(b, rev, direction, level))
            .map(|p| change(&p)),
        n: g.rounds,
        n_good: good.len(),
        more,
    })
}

/// The regression of `rev` from `good` and its interval at `confidence`
/// percent, paired by round.
pub fn regression(
    good: Values<'_>,
    rev: Values<'_>,
    direction: Direction,
    confidence: f64,
) -> Option<Change> {
    compare(good, rev, direction, confidence)
        .filter(|p| p.too_few.is_none())
        .map(|p| change(&p))
}

/// Rounds still needed for an interval centred on `center` to clear
/// `threshold`: its half-width scales as 1/sqrt(n).
fn more_rounds(n: usize, center: f64, iv: Interval, threshold: f64) -> Option<u64> {
    let half = (iv.hi - iv.lo) / 2.0;
    let gap = (center - threshold).abs();
    if !(gap > 1e-12 && half.is_finite()) {
        return None;
    }
    let need = (n as f64 * (half / gap).powi(2)).ceil();
    // No step decides before its first look.
    let need = need.max(FIRST_LOOK as f64);
    (need < 1e9).then(|| (need as u64).saturating_sub(n as u64).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` rounds of `mean` times a deterministic +/-1% spread.
    fn around(mean: f64, n: u32) -> Vec<(u32, f64)> {
        (0..n)
            .map(|i| (i, mean * (1.0 + 0.01 * (f64::from(i % 5) - 2.0) / 2.0)))
            .collect()
    }

    /// The same arm under a load that moves every round: each round's
    /// values multiplied by a factor between 0.25 and 1 shared by all
    /// arms of the round.
    fn loaded(v: &[(u32, f64)]) -> Vec<(u32, f64)> {
        v.iter()
            .map(|&(r, x)| (r, x / (0.25 + 0.75 * f64::from((r * 7) % 11) / 10.0)))
            .collect()
    }

    #[test]
    fn a_ten_percent_step_is_called_both_ways() {
        let good = around(100.0, 10);
        let bad = around(110.0, 10);
        let l = look(&good, &bad, None, Direction::Lower, (0.05, 60)).unwrap();
        assert_eq!(l.call, Call::LikeBad);
        assert!((l.regression - 0.10).abs() < 1e-9, "{l:?}");
        assert!(l.interval.lo > 0.05 && l.interval.hi < 0.15);
        let same = around(100.2, 10);
        let l = look(&good, &same, None, Direction::Lower, (0.05, 60)).unwrap();
        assert_eq!(l.call, Call::LikeGood);
        // Higher is better: a 10% drop is the regression.
        let slower = around(90.0, 10);
        let l = look(&good, &slower, None, Direction::Higher, (0.05, 60)).unwrap();
        assert_eq!(l.call, Call::LikeBad);
        assert!((l.regression - 0.10).abs() < 1e-9, "{}", l.regression);
        // ... and a 10% gain is no regression.
        let l = look(&good, &bad, None, Direction::Higher, (0.05, 60)).unwrap();
        assert_eq!(l.call, Call::LikeGood);
    }

    /// The load swings every round's values by up to 4x, moving all arms
    /// of a round alike: comparing the arms as independent samples
    /// (Welch) cannot decide a 7.7% regression, the paired comparison
    /// does at once, both ways.
    #[test]
    fn a_load_that_moves_every_round_does_not_hide_the_regression() {
        let good = loaded(&around(100.0, 12));
        let bad = loaded(&around(107.7, 12));
        let welch = crate::stats::ttest::TTest::welch(
            &crate::stats::Sample::new(&good.iter().map(|x| x.1).collect::<Vec<_>>()).unwrap(),
            &crate::stats::Sample::new(&bad.iter().map(|x| x.1).collect::<Vec<_>>()).unwrap(),
            Confidence::percent(99.0),
        );
        assert!(
            welch.relative.lo < 0.0 && welch.relative.hi > 0.2,
            "{:?}",
            welch.relative
        );
        let l = look(&good, &bad, None, Direction::Lower, (0.02, 60)).unwrap();
        assert_eq!(l.call, Call::LikeBad, "{l:?}");
        assert!(l.interval.lo > 0.06 && l.interval.hi < 0.095, "{l:?}");
        let fast = loaded(&around(100.1, 12));
        let l = look(&good, &fast, Some(&bad), Direction::Lower, (0.02, 60)).unwrap();
        assert_eq!(l.call, Call::LikeGood, "{l:?}");
        let vb = l.vs_bad.unwrap();
        assert!(vb.regression < -0.06 && vb.interval.hi < -0.02, "{vb:?}");
    }

    #[test]
    fn the_bad_end_decides_a_good_revision_the_threshold_alone_cannot() {
        // Noise of +/-3% per round: against the good end the interval
        // reaches past a 2% threshold, but the revision is clearly 8%
        // better than the bad end.
        let spread = |mean: f64, k: u32| -> Vec<(u32, f64)> {
            (0..16)
                .map(|i| {
                    let e = 0.03 * (f64::from((i * 5 + k) % 7) - 3.0) / 3.0;
                    (i, mean * (1.0 + e))
                })
                .collect()
        };
        let good = spread(100.0, 0);
        let rev = spread(100.0, 3);
        let bad = spread(108.0, 1);
        let alone = look(&good, &rev, None, Direction::Lower, (0.02, 60)).unwrap();
        assert_eq!(alone.call, Call::Undecided, "{alone:?}");
        assert!(alone.more.is_some());
        let both = look(&good, &rev, Some(&bad), Direction::Lower, (0.02, 60)).unwrap();
        assert_eq!(both.call, Call::LikeGood, "{both:?}");
        // Half the regression: worse than good by more than 2% and better
        // than bad by more than 2%: neither.
        let half = spread(104.0, 3);
        let l = look(&good, &half, Some(&bad), Direction::Lower, (0.02, 60)).unwrap();
        assert_eq!(l.call, Call::Undecided, "{l:?}");
    }

    #[test]
    fn no_call_before_eight_rounds() {
        let good = around(100.0, 7);
        let bad = around(130.0, 7);
        let l = look(&good, &bad, None, Direction::Lower, (0.05, 60)).unwrap();
        assert_eq!(l.call, Call::Undecided);
        assert!(look(&good, &[], None, Direction::Lower, (0.05, 60)).is_none());
        // Rounds pair by number: only the shared ones count.
        let shifted: Vec<(u32, f64)> = bad.iter().map(|&(r, x)| (r + 5, x)).collect();
        assert_eq!(pairs(&good, &shifted).len(), 2);
    }

    #[test]
    fn several_values_of_a_round_count_as_their_mean() {
        let a = [(0, 10.0), (0, 20.0), (1, 10.0)];
        let b = [(0, 30.0), (1, 11.0), (2, 5.0)];
        assert_eq!(pairs(&a, &b), vec![(15.0, 30.0), (10.0, 11.0)]);
    }

    #[test]
    fn more_rounds_scale_with_the_interval() {
        assert_eq!(
            more_rounds(5, 0.05, Interval { lo: 0.0, hi: 0.1 }, 0.05),
            None
        );
        // Half-width 0.04, gap 0.02: (0.04/0.02)^2 = 4x the rounds.
        assert_eq!(
            more_rounds(10, 0.07, Interval { lo: 0.03, hi: 0.11 }, 0.05),
            Some(30)
        );
    }

    /// `trials` steps of a candidate `delta` slower than the good end,
    /// measured in rounds drawn by `round`, looked at as bisect does (on
    /// the schedule of a cap of `max` rounds, a 5% threshold, stopping
    /// once decided): the shares called like bad and like good, and the
    /// mean rounds taken.
    fn steps(
        seed: u64,
        trials: usize,
        delta: f64,
        max: usize,
        round: fn(&mut crate::stats::sim::Rng, u32, f64, f64) -> (f64, f64),
    ) -> (f64, f64, f64) {
        let mut g = crate::stats::sim::rng(seed);
        let (mut bad, mut good, mut rounds) = (0, 0, 0);
        for _ in 0..trials {
            let phase = g.uniform() * 6.0;
            let (mut a, mut b) = (Vec::new(), Vec::new());
            let mut last = None;
            for r in 0..max as u32 {
                let (va, vb) = round(&mut g, r, phase, delta);
                a.push((r, va));
                b.push((r, vb));
                if crate::stats::sequential::is_look(a.len(), max) {
                    last = look(&a, &b, None, Direction::Lower, (0.05, max));
                    if last.is_some_and(|l| l.call != Call::Undecided) {
                        break;
                    }
                }
            }
            rounds += a.len();
            match last.map(|l| l.call) {
                Some(Call::LikeBad) => bad += 1,
                Some(Call::LikeGood) => good += 1,
                _ => {}
            }
        }
        let t = trials as f64;
        (bad as f64 / t, good as f64 / t, rounds as f64 / t)
    }

    #[test]
    fn bisect_sequential_calibration() {
        // Steps of at most 60 rounds at a 5% threshold, under drift and
        // bursts and under bimodal samples (12% modes): no regression is
        // never called bad, 8% never good (no wrong call in 1000 steps
        // each); a 2% revision, between the two, is called bad in at most
        // a few of 1000 (its bound is one side of the 5% over all looks);
        // most steps are decided.
        use crate::stats::sim::{bimodal_round, busy_round};
        for (name, round, seed) in [
            ("drift + bursts", busy_round as fn(&mut _, _, _, _) -> _, 61),
            ("bimodal", bimodal_round, 64),
        ] {
            let (bad0, good0, n0) = steps(seed, 1000, 0.0, 60, round);
            let (bad2, good2, n2) = steps(seed + 1, 1000, 0.02, 60, round);
            let (bad8, good8, n8) = steps(seed + 2, 1000, 0.08, 60, round);
            eprintln!(
                "bisect steps, {name}, 5% threshold, at most 60 rounds: +0%: bad {bad0} good {good0} ({n0:.0} rounds); +2%: bad {bad2} good {good2} ({n2:.0}); +8%: bad {bad8} good {good8} ({n8:.0})"
            );
            assert!(bad0 == 0.0 && good8 == 0.0, "{name}: a wrong call");
            assert!(bad2 <= 0.005, "{name}: +2% called bad in {bad2}");
            assert!(good0 >= 0.8 && bad8 >= 0.5, "{name}: {good0} {bad8}");
        }
    }
}
