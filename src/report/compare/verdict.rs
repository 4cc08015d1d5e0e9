//! The one sentence that ends a run or a comparison of two or more
//! variants: which is slower, by how much, with its interval, in words
//! (`sleep 0.013 is 29.6% slower than sleep 0.01 [+28.1%, +31.2%]`).
//!
//! It only words a [`Versus`] of the design-aware comparison
//! (this folder's `mod.rs`): the change is new/baseline - 1 with the interval the
//! comparison shows beside its mark, so the sentence, the tables and the
//! JSON never disagree. Where the design cannot judge (one run a side, too
//! few samples, data without a ratio) it says so and how to get a
//! verdict.

use serde::Serialize;

use super::{GeoRow, Versus};
use crate::record::Direction;
use crate::stats::design::{Degenerate, Design};

/// A contender's verdict against the baseline, as words and numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerdictLine {
    pub baseline: String,
    pub contender: String,
    /// `slower`, `faster`, `no-difference` or `not-judged` (and `more`,
    /// `less`, `larger`, `smaller`, `higher`, `lower` for metrics that are
    /// not times).
    pub outcome: String,
    /// new/baseline - 1, when judged.
    pub change: Option<f64>,
    pub interval: Option<[f64; 2]>,
    /// The sentence itself, as the text prints it.
    pub sentence: String,
}

/// Whether `unit` is a time (its change reads slower/faster).
pub fn is_time(unit: &str) -> bool {
    matches!(unit, "s" | "ms" | "us" | "µs" | "ns" | "cycles") || unit.starts_with("ns/")
}

/// A change's size as a percentage without sign: `29.6%`, `0.35%`, `312%`.
pub fn magnitude(x: f64) -> String {
    let p = (x * 100.0).abs();
    if p >= 100.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}

/// An interval end with its sign: `+28.1%`, `-0.35%`.
pub fn signed(x: f64) -> String {
    let m = magnitude(x);
    if x < 0.0
        && m.trim_end_matches('%')
            .chars()
            .any(|c| c.is_ascii_digit() && c != '0')
    {
        format!("-{m}")
    } else {
        format!("+{m}")
    }
}

/// The words of a change of `sign` (> 0: the contender's value is
/// higher): slower/faster for a time (or a rate, which is better higher),
/// more/less for throughput and counts that are better higher,
/// larger/smaller for other costs.
pub fn words(up: bool, direction: Direction, unit: &str) -> (&'static str, &'static str) {
    let rate = unit.ends_with("/s");
    match (is_time(unit), rate, direction, up) {
        (true, _, _, true) => ("is", "slower"),
        (true, _, _, false) => ("is", "faster"),
        (_, true, _, true) | (_, _, Direction::Higher, true) => ("has", "more"),
        (_, true, _, false) | (_, _, Direction::Higher, false) => ("has", "less"),
        (_, _, Direction::Lower, true) => ("is", "larger"),
        (_, _, Direction::Lower, false) => ("is", "smaller"),
        (_, _, Direction::Info, true) => ("is", "higher"),
        (_, _, Direction::Info, false) => ("is", "lower"),
    }
}

/// A change in words, on the one convention (new/baseline - 1):
/// `29.6% slower`, `5.0% more ops/s`, `no change`.
pub fn phrase(change: f64, direction: Direction, metric: &str, unit: &str) -> String {
    if change == 0.0 || magnitude(change) == "0.00%" {
        return "no change".into();
    }
    let (verb, word) = words(change > 0.0, direction, unit);
    let what = if verb == "has" {
        format!(" {metric}")
    } else {
        String::new()
    };
    format!("{} {word}{what}", magnitude(change))
}

/// What a verdict is made of: one row's [`Versus`] or a geomean's design.
pub struct Judged<'a> {
    /// The contender as the output names it.
    pub contender: String,
    pub degenerate: Option<Degenerate>,
    pub design: Option<&'a Design>,
    /// The change and the interval shown beside the mark (adjusted in a
    /// family), and whether it excludes "no change".
    pub change: Option<f64>,
    pub interval: Option<[f64; 2]>,
    pub significant: bool,
}

impl<'a> Judged<'a> {
    pub fn row(v: &'a Versus) -> Judged<'a> {
        Judged {
            contender: v.name.clone(),
            degenerate: v.degenerate,
            design: v.design.as_ref(),
            change: v.change,
            interval: v.interval,
            significant: v.significant,
        }
    }

    pub fn geomean(g: &'a GeoRow) -> Judged<'a> {
        Judged {
            contender: format!("{} (geomean of {} cells)", g.name, g.k),
            degenerate: None,
            design: Some(&g.design),
            change: Some(g.change),
            interval: g.change_interval,
            significant: g.design.significant(),
        }
    }
}

/// The verdict sentence for `j` against `baseline`, on a metric of `unit`
/// and `direction` (`metric` names it where the words need it: `has 5.0%
/// more ops/s`).
pub fn line(
    baseline: &str,
    j: &Judged<'_>,
    metric: &str,
    unit: &str,
    direction: Direction,
) -> VerdictLine {
    let who = &j.contender;
    let verdict = |outcome: &str, interval: Option<[f64; 2]>, sentence: String| VerdictLine {
        baseline: baseline.to_string(),
        contender: who.clone(),
        outcome: outcome.into(),
        change: j.change,
        interval,
        sentence,
    };
    let not_judged = |why: String| {
        verdict(
            "not-judged",
            None,
            format!("{who} vs {baseline}: not judged: {why}"),
        )
    };
    if let Some(g) = &j.degenerate {
        return not_judged(g.to_string());
    }
    let Some(d) = j.design else {
        return not_judged("no analysis of these samples".into());
    };
    if let Some(level) = d.unmeasured {
        return not_judged(level.unmeasured().to_string());
    }
    if let Some(t) = d.too_few {
        return not_judged(format!("{t}; take more with `--samples N`"));
    }
    let (Some(change), Some([lo, hi])) = (j.change, j.interval) else {
        return not_judged("no interval for these samples".into());
    };
    if !j.significant {
        let within = lo.abs().max(hi.abs());
        return verdict(
            "no-difference",
            Some([lo, hi]),
            format!(
                "{who} vs {baseline}: no difference found (within +/-{})",
                magnitude(within)
            ),
        );
    }
    let (verb, word) = words(change > 0.0, direction, unit);
    verdict(
        word,
        Some([lo, hi]),
        format!(
            "{who} {verb} {} than {baseline} [{}, {}]",
            phrase(change, direction, metric, unit),
            signed(lo),
            signed(hi)
        ),
    )
}

/// The verdict of a sequential comparison (`--until-verdict`): the paired
/// look that stopped the run, at its own level, worded as every verdict.
/// It replaces the fixed-n verdict of the same samples, which would not
/// hold its error rate after looking at them round by round.
pub fn of_look(
    baseline: &str,
    contender: &str,
    look: &crate::stats::sequential::Look,
    (metric, unit, direction): (&str, &str, Direction),
    level: f64,
) -> VerdictLine {
    use crate::stats::equivalence::Verdict as V;
    let (lo, hi) = (look.interval.lo, look.interval.hi);
    let how = format!("paired by round, {level:.2}% at each look");
    let (outcome, sentence) = match look.verdict {
        V::Different | V::DifferentWithinMargin => {
            let (verb, word) = words(look.delta > 0.0, direction, unit);
            let small = if look.verdict == V::Different {
                String::new()
            } else {
                format!(", within the +/-{} margin", magnitude(look.margin))
            };
            let said = format!(
                "{contender} {verb} {} than {baseline} [{}, {}]{small} ({how})",
                phrase(look.delta, direction, metric, unit),
                signed(lo),
                signed(hi)
            );
            (word, said)
        }
        V::Equivalent => (
            "no-difference",
            format!(
                "{contender} vs {baseline}: no difference found (within +/-{}, {how})",
                magnitude(look.margin)
            ),
        ),
        V::Inconclusive => (
            "not-judged",
            format!(
                "{contender} vs {baseline}: undecided at the cap [{}, {}] \
                 reaches beyond +/-{}; allow more with `--max-samples N`",
                signed(lo),
                signed(hi),
                magnitude(look.margin)
            ),
        ),
        V::TooFew => (
            "not-judged",
            format!("{contender} vs {baseline}: not judged: too few rounds"),
        ),
    };
    VerdictLine {
        baseline: baseline.to_string(),
        contender: contender.to_string(),
        outcome: outcome.into(),
        change: Some(look.delta),
        interval: Some([lo, hi]),
        sentence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_keep_their_sign_and_zero_has_none_negative() {
        assert_eq!(signed(0.281), "+28.1%");
        assert_eq!(signed(-0.0035), "-0.35%");
        assert_eq!(signed(-0.00001), "+0.00%");
        assert_eq!(magnitude(-3.1167), "312%");
    }

    #[test]
    fn words_follow_the_unit_and_direction() {
        assert_eq!(words(true, Direction::Lower, "s"), ("is", "slower"));
        assert_eq!(words(false, Direction::Lower, "ns/op"), ("is", "faster"));
        assert_eq!(words(true, Direction::Higher, "ops/s"), ("has", "more"));
        assert_eq!(words(false, Direction::Higher, "ops/s"), ("has", "less"));
        assert_eq!(words(true, Direction::Lower, "B"), ("is", "larger"));
    }

    #[test]
    fn phrases_say_the_change_once_in_words() {
        use Direction::{Higher, Info, Lower};
        assert_eq!(phrase(3.1167, Lower, "ns/op", "ns"), "312% slower");
        assert_eq!(phrase(-0.5, Lower, "real", "s"), "50.0% faster");
        assert_eq!(phrase(-0.1, Higher, "bytes/s", "B/s"), "10.0% less bytes/s");
        assert_eq!(phrase(0.08, Higher, "ops", "ops/s"), "8.0% more ops");
        assert_eq!(phrase(0.08, Lower, "size", "B"), "8.0% larger");
        assert_eq!(phrase(0.08, Info, "util", "%"), "8.0% higher");
        assert_eq!(phrase(0.0, Lower, "ns/op", "ns"), "no change");
        assert_eq!(phrase(-0.0035, Lower, "ns/op", "ns"), "0.35% faster");
    }

    #[test]
    fn a_sequential_look_is_worded_as_every_verdict() {
        use crate::stats::sequential::Look;
        use crate::stats::{Interval, equivalence::Verdict as V};
        let look = |verdict, delta, lo, hi| Look {
            verdict,
            delta,
            interval: Interval { lo, hi },
            margin: 0.01,
        };
        let m = ("ns/op", "ns", Direction::Lower);
        let v = of_look("a", "b", &look(V::Different, 0.05, 0.03, 0.07), m, 99.44);
        assert_eq!(
            v.sentence,
            "b is 5.0% slower than a [+3.0%, +7.0%] (paired by round, 99.44% at each look)"
        );
        assert_eq!(v.outcome, "slower");
        let v = of_look(
            "a",
            "b",
            &look(V::Equivalent, 0.001, -0.005, 0.006),
            m,
            99.0,
        );
        assert_eq!(v.outcome, "no-difference");
        assert!(
            v.sentence
                .starts_with("b vs a: no difference found (within +/-1.0%")
        );
        let v = of_look("a", "b", &look(V::Inconclusive, 0.0, -0.02, 0.03), m, 99.0);
        assert_eq!(v.outcome, "not-judged");
    }
}
