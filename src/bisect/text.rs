//! The plain-text account of a bisection: a line per step as it happens
//! (stderr) and the summary (stdout), within 80 columns. Numbers come from
//! `decide.rs` and the model in `mod.rs`; nothing is computed here.

use super::decide::{Call, Look};
use super::{Bisection, Step};
use crate::report::human;

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// `+10.2% [+8.1%, +12.5%]`: the regression (positive = worse) and its
/// interval.
pub fn change(l: &Look) -> String {
    format!(
        "{} [{}, {}]",
        pct(l.regression),
        pct(l.interval.lo),
        pct(l.interval.hi)
    )
}

/// `; about N more samples each would decide it`, or why none would.
pub fn more(l: &Look) -> String {
    match (l.call, l.more) {
        (Call::Undecided, Some(k)) => format!("; about {k} more samples of each would decide it"),
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

/// One step as a line: `12-abcdef0 commit 13: +10.1% [..] vs good, 6
/// samples (6 good, 6 bad): like bad`.
pub fn step_line(s: &Step, _unit: &str) -> String {
    let head = format!("{} {}", s.rev.label, cut(&s.rev.commit.subject, 30));
    match (&s.look, &s.skipped) {
        (Some(l), skipped) => format!(
            "{head}: {} vs good ({}%), {} samples ({} good, {} bad): {}{}",
            change(l),
            l.confidence,
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

/// The summary printed when a bisection ends.
pub fn render(b: &Bisection) -> String {
    let mut o = String::new();
    o += &format!(
        "kbench bisect: {} revision(s) after {} (good) up to {} (bad),\n",
        b.path_len,
        b.good.commit.short(),
        b.bad.commit.short()
    );
    o += &format!(
        "first parents only; --bench {}, metric {} ({}, {})\n",
        cut(&b.bench, 28),
        b.metric,
        b.unit,
        b.direction
    );
    o += &format!(
        "a revision is bad when worse than good by more than {}\n\n",
        pct(b.threshold).trim_start_matches('+')
    );
    o += &format!(
        "{:<11} {:<18} {:>8}  {:<24} {}\n",
        "revision", "subject", "samples", "vs good (+ = worse)", "call"
    );
    for (i, s) in b.steps.iter().enumerate() {
        let vs = s.look.as_ref().map(change).unwrap_or_else(|| "-".into());
        let mut c = call(s.call).to_string();
        if i == 0 {
            c += " (bad end)";
        }
        o += &format!(
            "{:<11} {:<18} {:>8}  {:<24} {}\n",
            s.rev.label,
            cut(&s.rev.commit.subject, 18),
            s.samples[0],
            vs,
            c
        );
    }
    for s in b.steps.iter().filter(|s| s.skipped.is_some()) {
        o += &format!(
            "  {} skipped: {}\n",
            s.rev.label,
            s.skipped.as_deref().unwrap_or("")
        );
    }
    o += "\n";
    match &b.first_bad {
        Some(r) => {
            o += &format!("first bad commit: {} {}\n", r.commit.id, r.commit.subject);
            if let Some(e) = &b.effect {
                let half = (e.interval.hi - e.interval.lo) / 2.0 * e.good_mean;
                o += &format!(
                    "effect: {} [{}, {}] ({}%, Welch) vs the good end: {} -> {}\n",
                    pct(e.regression),
                    pct(e.interval.lo),
                    pct(e.interval.hi),
                    e.confidence,
                    human::value(e.good_mean, &b.unit, Some(half), false),
                    human::value(e.mean, &b.unit, Some(half), false),
                );
                o += &format!("        (measured interleaved: {} samples of each)\n", e.n);
            }
        }
        None => {
            let ids: Vec<String> = b.candidates.iter().map(|r| r.label.clone()).collect();
            o += &format!(
                "first bad commit: not narrowed to one; one of {} (the others were skipped)\n",
                ids.join(", ")
            );
        }
    }
    o += &format!(
        "samples: {} measured in {} step(s), each revision interleaved with both ends;\n",
        b.samples,
        b.steps.iter().filter(|s| s.look.is_some()).count()
    );
    o += &format!(
        "builds: {} run, {} cached; campaign `{}`: kbench report {}\n",
        b.builds_run, b.builds_cached, b.campaign, b.campaign
    );
    o
}
