//! Verdicts from an interval, so "no difference proven" is never read as
//! "equal".
//!
//! Given the interval of the relative change (b/a - 1) and a margin X
//! (0.01 for "within ±1%"), the interval either excludes 0 (a difference),
//! lies within ±X (equivalent, in the sense of Schuirmann's two one-sided
//! tests: pass the 1-2α interval for a TOST at level α), both (a real but
//! practically negligible difference), or neither (the data cannot decide
//! yet: more samples are needed).

use serde::Serialize;
use std::fmt;

use super::Interval;

/// What an interval says about a change, given an equivalence margin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The interval excludes 0 and reaches beyond the margin.
    Different,
    /// The interval excludes 0 but lies within ±margin: a real change
    /// smaller than what matters.
    DifferentWithinMargin,
    /// The interval contains 0 and lies within ±margin.
    Equivalent,
    /// The interval contains 0 and reaches beyond the margin: undecided.
    Inconclusive,
    /// The samples are too small for the test to decide anything.
    TooFew,
}

impl Verdict {
    /// Whether more samples could change the answer.
    pub fn decided(self) -> bool {
        !matches!(self, Verdict::Inconclusive | Verdict::TooFew)
    }
}

/// The verdict for a relative-change interval and a margin (a fraction,
/// 0.01 = 1%).
///
/// # Panics
/// If `margin` is negative or NaN.
pub fn verdict(relative: Interval, margin: f64) -> Verdict {
    assert!(margin >= 0.0, "margin {margin} must be >= 0");
    if relative.lo.is_nan() || relative.hi.is_nan() {
        return Verdict::Inconclusive;
    }
    let within = -margin <= relative.lo && relative.hi <= margin;
    let differs = !relative.contains(0.0);
    match (differs, within) {
        (true, false) => Verdict::Different,
        (true, true) => Verdict::DifferentWithinMargin,
        (false, true) => Verdict::Equivalent,
        (false, false) => Verdict::Inconclusive,
    }
}

/// A verdict with its margin, for printing: "equivalent within ±1%".
pub struct Display(pub Verdict, pub f64);

impl fmt::Display for Display {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.1 * 100.0;
        match self.0 {
            Verdict::Different => write!(f, "different (beyond ±{m}%)"),
            Verdict::DifferentWithinMargin => write!(f, "different, but within ±{m}%"),
            Verdict::Equivalent => write!(f, "equivalent within ±{m}%"),
            Verdict::Inconclusive => {
                write!(f, "no difference proven, not shown equivalent within ±{m}%")
            }
            Verdict::TooFew => write!(f, "too few samples to decide"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(lo: f64, hi: f64) -> Interval {
        Interval { lo, hi }
    }

    #[test]
    fn four_outcomes() {
        assert_eq!(verdict(iv(0.03, 0.07), 0.01), Verdict::Different);
        assert_eq!(
            verdict(iv(0.002, 0.006), 0.01),
            Verdict::DifferentWithinMargin
        );
        assert_eq!(verdict(iv(-0.004, 0.006), 0.01), Verdict::Equivalent);
        assert_eq!(verdict(iv(-0.02, 0.03), 0.01), Verdict::Inconclusive);
        assert!(!Verdict::Inconclusive.decided() && Verdict::Equivalent.decided());
        assert_eq!(
            Display(Verdict::Equivalent, 0.01).to_string(),
            "equivalent within ±1%"
        );
    }
}
