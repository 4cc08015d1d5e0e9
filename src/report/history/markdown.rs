//! A history as GitHub Markdown: a table per series, then its change
//! points.

use std::fmt::Write;

use super::{
    History, Order, change_size, ci_range, date, half, p_text, runs_named, scope, step_text, title,
};
use crate::report::fmt::human;
use crate::report::fmt::md_escape as e;

/// GitHub Markdown: a table per series, then its change points.
pub(super) fn markdown(h: &History) -> String {
    let unicode = h.unicode;
    let mut o = String::new();
    let _ = writeln!(o, "## {}", e(&scope(h)));
    for s in &h.series {
        let _ = writeln!(o, "\n### {}\n", e(&title(h, s)));
        let head = match h.by {
            Order::Time => "point",
            Order::Revision => "revision",
        };
        let _ = writeln!(
            o,
            "| # | {head} | measured (UTC) | runs | n | mean | 95% CI | vs previous |\n\
             |--:|:--|:--|:--|--:|--:|--:|--:|"
        );
        for p in &s.points {
            let cp = s.change_points.iter().any(|c| c.index == p.index);
            let ci = ci_range(p, &s.unit, unicode);
            let step = step_text(p).trim_end().replace('*', "\\*");
            let _ = writeln!(
                o,
                "| {}{} | {} | {} | {} | {} | {} | {} | {} |",
                p.index + 1,
                if cp { " ⟂" } else { "" },
                e(&p.label),
                date(p.time),
                runs_named(p),
                p.n,
                human::value(p.mean, &s.unit, half(p), unicode),
                ci,
                step
            );
        }
        let _ = writeln!(
            o,
            "\n\\* the step from the previous point is significant with the run as the unit; \
             ? not judged: one run a point does not measure run-to-run variation \
             (`kbench run --repeat N` does); ⟂ a change point lies before this point."
        );
        if let Some(n) = &s.note {
            let _ = writeln!(o, "\nChange points: none looked for ({}).", e(n));
            continue;
        }
        let _ = writeln!(
            o,
            "\nChange points (E-divisive means, permutation p ≤ {}, {} permutations){}",
            h.method.settings.significance,
            h.method.settings.permutations,
            if s.change_points.is_empty() {
                ": none."
            } else {
                ":"
            }
        );
        if !s.change_points.is_empty() {
            let _ = writeln!(
                o,
                "\n| between | and | measured (UTC) | change | before | after | verdict | p |\n\
                 |:--|:--|:--|--:|--:|--:|:--|--:|"
            );
            for c in &s.change_points {
                let _ = writeln!(
                    o,
                    "| #{} {} | #{} {} | {} .. {} | {} | {} | {} | {} | {} |",
                    c.index,
                    e(&c.from),
                    c.index + 1,
                    e(&c.to),
                    date(c.from_time),
                    date(c.to_time),
                    change_size(c, &s.unit, unicode),
                    human::value(c.before, &s.unit, None, unicode),
                    human::value(c.after, &s.unit, None, unicode),
                    if c.verdict == "worse" {
                        "**worse**"
                    } else {
                        c.verdict
                    },
                    p_text(c.p)
                        .trim_start_matches("p ")
                        .trim_start_matches("= ")
                );
            }
        }
    }
    o
}
