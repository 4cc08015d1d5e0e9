//! The plain-text account of a bisection: a line per step as it happens
//! (stderr) and the summary (stdout), within 80 columns. Numbers come from
//! `decide.rs` and the model in `mod.rs`; nothing is computed here.

use super::decide::{Call, Look, as_change};
use super::{Bisection, Step};
use crate::record::Direction;
use crate::report::fmt::human;
use crate::stats::Interval;

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// `+10.2% [+8.1%, +12.5%]`: the change from the good end
/// (revision/good - 1, as every report prints it) and its interval.
pub fn change(l: &Look, direction: Direction) -> String {
    spelled(l.regression, l.interval, direction)
}

/// A worsening as the change and its interval: `+10.2% [+8.1%, +12.5%]`.
fn spelled(worsening: f64, iv: Interval, direction: Direction) -> String {
    let (c, iv) = as_change(worsening, iv, direction);
    format!("{} [{}, {}]", pct(c), pct(iv.lo), pct(iv.hi))
}

/// The worse side of a metric in words, `slower` or `has less ops/s`: a
/// revision is bad when it is this by more than the threshold.
pub fn worse_words(metric: &str, unit: &str, direction: Direction) -> String {
    let up = direction != Direction::Higher;
    match crate::report::compare::verdict::words(up, direction, unit) {
        ("has", w) => format!("has {w} {metric}"),
        (_, w) => w.to_string(),
    }
}

/// `; about N more samples each would decide it`, or why none would.
pub fn more(l: &Look) -> String {
    match (l.call, l.more) {
        (Call::Undecided, Some(k)) => format!("; about {k} more rounds would decide it"),
        (Call::Undecided, None) => {
            "; its change sits on the threshold: more samples would not decide it".into()
        }
        _ => String::new(),
    }
}

fn call(c: Option<Call>) -> &'static str {
    match c {
        Some(Call::LikeGood) => "like good",
        Some(Call::LikeBad) => "like bad",
        Some(Call::Undecided) => "undecided (skip)",
        None => "skip",
    }
}

fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let t: String = s.chars().take(n.saturating_sub(3)).collect();
        format!("{t}...")
    }
}

/// A confidence in percent as printed: at most two decimals, no
/// trailing zeros (99, 99.44).
fn level(c: f64) -> String {
    let s = format!("{c:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// One step as a line: `12-abcdef0 commit 13: +10.1% [..] vs good,
/// -0.2% [..] vs bad (99.44%, 10 rounds), 10 samples (10 good, 10 bad): like
/// bad`.
pub fn step_line(s: &Step, direction: Direction) -> String {
    let head = format!("{} {}", s.rev.label, cut(&s.rev.commit.subject, 30));
    match (&s.look, &s.skipped) {
        (Some(l), skipped) => format!(
            "{head}: {} vs good{} ({}%, {} rounds), {} samples ({} good, {} bad): {}{}",
            change(l, direction),
            l.vs_bad
                .map(|b| format!(", {} vs bad", spelled(b.regression, b.interval, direction)))
                .unwrap_or_default(),
            level(l.confidence),
            l.n,
            s.samples[0],
            s.samples[1],
            s.samples[2],
            call(s.call),
            match (skipped, l.call) {
                (Some(_), Call::Undecided) => more(l),
                _ => String::new(),
            }
        ),
        (None, Some(why)) => format!("{head}: skipped: {why}"),
        (None, None) => format!("{head}: not measured"),
    }
}

/// `+10.1% [+8.0,+12.0]`: a worsening as the change and its interval,
/// compact.
fn compact(x: f64, iv: Interval, direction: Direction) -> String {
    let (x, iv) = as_change(x, iv, direction);
    format!("{} [{:+.1},{:+.1}]", pct(x), iv.lo * 100.0, iv.hi * 100.0)
}

/// The summary printed when a bisection ends (and by `kbench report` of
/// its campaign): each step's revision against both ends measured in the
/// same step.
pub fn render(b: &Bisection) -> String {
    let mut o = String::new();
    o += &format!(
        "kbench bisect: {} revision(s) from {} (good) to {} (bad),\n",
        b.about.path_len, b.about.good.label, b.about.bad.label
    );
    o += &format!(
        "first parents only; --bench {}, metric {} ({}, {})\n",
        cut(&b.about.bench, 28),
        b.about.metric,
        b.about.unit,
        b.about.direction
    );
    let conf = b
        .steps
        .iter()
        .find_map(|s| s.look.map(|l| level(l.confidence)))
        .unwrap_or_else(|| "99".into());
    let a = &b.about;
    o += &format!(
        "a revision is bad when {} than good by more than {}; each\n\
         step compares it with both ends, paired by round ({conf}%)\n\n",
        worse_words(&a.metric, &a.unit, a.direction),
        pct(a.threshold).trim_start_matches('+')
    );
    o += &format!(
        "{:<10} {:>6}  {:<20} {:<19}  {}\n",
        "revision", "rounds", "vs good", "vs bad", "call"
    );
    for (i, s) in b.steps.iter().enumerate() {
        let vs = s
            .look
            .as_ref()
            .map(|l| compact(l.regression, l.interval, a.direction))
            .unwrap_or_else(|| "-".into());
        let vb = s
            .look
            .and_then(|l| l.vs_bad)
            .map(|c| compact(c.regression, c.interval, a.direction))
            .unwrap_or_else(|| "-".into());
        let mut c = call(s.call).to_string();
        if i == 0 {
            c += " (bad end)";
        }
        o += &format!(
            "{:<10} {:>6}  {:<20} {:<19}  {}\n",
            s.rev.label,
            s.look.map_or(0, |l| l.n),
            vs,
            vb,
            c
        );
    }
    // Skip reasons, cut to the width (stderr and --json have them whole).
    for s in b.steps.iter().filter(|s| s.skipped.is_some()) {
        let why = format!("skipped: {}", s.skipped.as_deref().unwrap_or(""));
        o += &format!(
            "  {}: {}\n",
            s.rev.label,
            cut(&why, 76usize.saturating_sub(s.rev.label.len()))
        );
    }
    o += "\n";
    match &b.first_bad {
        Some(r) => {
            o += &format!("first bad commit: {} {}\n", r.commit.id, r.commit.subject);
            if let Some(e) = &b.effect {
                let half = (e.interval.hi - e.interval.lo) / 2.0 * e.good_mean;
                let (c, iv) = as_change(e.regression, e.interval, a.direction);
                let (verb, _) =
                    crate::report::compare::verdict::words(c > 0.0, a.direction, &a.unit);
                o += &format!(
                    "effect: it {} {} than the good end: {} -> {}\n",
                    verb,
                    crate::report::compare::verdict::phrase(c, a.direction, &a.metric, &a.unit),
                    human::value(e.good_mean, &a.unit, Some(half), false),
                    human::value(e.mean, &a.unit, Some(half), false),
                );
                o += &format!(
                    "        [{}, {}] at {}%, paired by round (measured interleaved:\n\
                     \x20       {} samples of each, {} rounds paired)\n",
                    pct(iv.lo),
                    pct(iv.hi),
                    e.confidence,
                    e.n,
                    e.rounds
                );
            }
        }
        None => {
            let ids: Vec<String> = b.candidates.iter().map(|r| r.label.clone()).collect();
            o += &format!(
                "first bad commit: not narrowed to one, revisions were skipped;\n  one of {}\n",
                ids.join(", ")
            );
        }
    }
    o += &format!(
        "samples: {} measured in {} step(s), each revision interleaved with both ends;\n",
        b.samples,
        b.steps.iter().filter(|s| s.look.is_some()).count()
    );
    match &b.note {
        Some(note) => o += &format!("{note}\n"),
        None => {
            o += &format!(
                "builds: {} run, {} cached; campaign `{}`: kbench report {}\n",
                b.builds_run, b.builds_cached, b.campaign, b.campaign
            )
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bisect::decide::Look;
    use crate::bisect::git::Commit;
    use crate::bisect::{Effect, Rev};
    use crate::record::Direction;
    use crate::stats::Interval;

    fn rev(position: usize, id: &str, subject: &str) -> Rev {
        Rev {
            position,
            label: format!("{position:02}-{}", &id[..7]),
            commit: Commit {
                id: id.repeat(40 / id.len()),
                subject: subject.into(),
            },
        }
    }

    fn step(r: Rev, call: Call, regression: f64, lo: f64, hi: f64, n: usize) -> Step {
        Step {
            rev: r,
            call: Some(call),
            look: Some(Look {
                call,
                regression,
                interval: Interval { lo, hi },
                confidence: 99.0,
                vs_bad: None,
                n,
                n_good: n,
                more: (call == Call::Undecided).then_some(40),
            }),
            samples: [n, n, n],
            skipped: (call == Call::Undecided).then(|| "undecided after 30 samples".into()),
        }
    }

    #[test]
    fn the_summary_of_a_bisection() {
        let b = Bisection {
            about: crate::bisect::About {
                repo: "/src/prog".into(),
                good: rev(0, "aaaaaaaa", "commit 1"),
                bad: rev(7, "bbbbbbbb", "commit 8"),
                path_len: 7,
                bench: "cmd:./prog".into(),
                metric: "real".into(),
                unit: "s".into(),
                direction: Direction::Lower,
                threshold: 0.05,
            },
            steps: vec![
                step(
                    rev(7, "bbbbbbbb", "commit 8"),
                    Call::LikeBad,
                    0.101,
                    0.08,
                    0.12,
                    8,
                ),
                step(
                    rev(4, "cccccccc", "commit 5: a subject longer than the column"),
                    Call::LikeGood,
                    0.004,
                    -0.02,
                    0.03,
                    5,
                ),
                step(
                    rev(6, "dddddddd", "commit 7"),
                    Call::Undecided,
                    0.05,
                    0.01,
                    0.09,
                    30,
                ),
                Step {
                    rev: rev(5, "eeeeeeee", "commit 6"),
                    call: None,
                    look: None,
                    samples: [0, 0, 0],
                    skipped: Some("build failed: error: x (log: /c/e.log)".into()),
                },
            ],
            first_bad: None,
            candidates: vec![
                rev(5, "eeeeeeee", "commit 6"),
                rev(6, "dddddddd", "commit 7"),
                rev(7, "bbbbbbbb", "commit 8"),
            ],
            effect: None,
            samples: 76,
            builds_run: 5,
            builds_cached: 0,
            campaign: "bisect".into(),
            note: None,
        };
        let mut b = b;
        if let Some(l) = b.steps[1].look.as_mut() {
            l.vs_bad = Some(crate::bisect::decide::Change {
                regression: -0.091,
                interval: Interval {
                    lo: -0.112,
                    hi: -0.07,
                },
                rounds: 5,
            });
        }
        let text = render(&b);
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        insta::assert_snapshot!("bisect_undecided_text", text);
        let mut one = b.clone();
        one.first_bad = Some(rev(7, "bbbbbbbb", "commit 8"));
        one.candidates.clear();
        one.effect = Some(Effect {
            regression: 0.101,
            interval: Interval {
                lo: 0.09,
                hi: 0.112,
            },
            confidence: 95.0,
            good_mean: 0.0150,
            mean: 0.01652,
            n_good: 8,
            n: 8,
            rounds: 8,
        });
        let text = render(&one);
        let tail: Vec<&str> = text.lines().skip(12).collect();
        insta::assert_snapshot!("bisect_found_text", tail.join("\n"));
        assert!(text.lines().all(|l| l.len() <= 80), "{text}");
        assert_eq!(
            step_line(&one.steps[2], Direction::Lower),
            "06-ddddddd commit 7: +5.0% [+1.0%, +9.0%] vs good (99%, 30 rounds), 30 samples (30 good, 30 bad): undecided (skip); about 40 more rounds would decide it"
        );
    }
}
