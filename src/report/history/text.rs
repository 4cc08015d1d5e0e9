//! A history as plain text within 80 columns: a table per series, then
//! its change points.

use std::fmt::Write;

use super::{
    History, Order, change_size, ci_rel, date, fit, half, p_text, scope, step_text, title,
};
use crate::report::fmt::{human, wrap_lines};

/// Plain text, at most 80 columns.
pub(super) fn text(h: &History) -> String {
    let unicode = h.unicode;
    let mut o = String::new();
    let _ = writeln!(o, "{}", scope(h));
    for s in &h.series {
        o.push('\n');
        for line in wrap_lines(&title(h, s), 80) {
            let _ = writeln!(o, "{line}");
        }
        let lw = s
            .points
            .iter()
            .map(|p| p.label.chars().count())
            .max()
            .unwrap_or(5)
            .clamp(5, 19);
        let head = match h.by {
            Order::Time => "point",
            Order::Revision => "revision",
        };
        let _ = writeln!(
            o,
            "{:>3}  {:<lw$}  {:<16}  {:>5}  {:>11}  {:>6}  {:>8}",
            "#", head, "measured (UTC)", "n", "mean", "+/-", "vs prev"
        );
        for p in &s.points {
            if let Some(c) = s.change_points.iter().find(|c| c.index == p.index) {
                let _ = writeln!(
                    o,
                    "{:>3}  --- change point: {}, {} ---",
                    "",
                    c.verdict,
                    p_text(c.p)
                );
            }
            let row = format!(
                "{:>3}  {:<lw$}  {:<16}  {:>5}  {:>11}  {:>6}  {:>8}",
                p.index + 1,
                fit(&p.label, lw),
                date(p.time),
                p.n,
                human::value(p.mean, &s.unit, half(p), unicode),
                ci_rel(p),
                step_text(p)
            );
            let _ = writeln!(o, "{}", row.trim_end());
        }
        let _ = writeln!(
            o,
            "+/-: 95% interval of the mean; * the step from the previous point is\n\
             significant with the run as the unit; ? not judged: one run a point\n\
             does not measure run-to-run variation (kbench run --repeat N does);\n\
             the change points, over the point means, judge the series."
        );
        if let Some(n) = &s.note {
            let _ = writeln!(o, "Change points: none looked for ({n}).");
            continue;
        }
        if s.change_points.is_empty() {
            let _ = writeln!(
                o,
                "Change points (E-divisive means, p <= {}): none.",
                h.method.settings.significance
            );
            continue;
        }
        let _ = writeln!(
            o,
            "Change points (E-divisive means, p <= {}, {} permutations):",
            h.method.settings.significance, h.method.settings.permutations
        );
        for c in &s.change_points {
            let head = format!(
                "#{} {} -> #{} {}: {} {}",
                c.index,
                c.from,
                c.index + 1,
                c.to,
                c.verdict,
                change_size(c, &s.unit, unicode)
            );
            let detail = format!(
                "{} -> {} (means of {} and {} points), {} (confidence {:.1}%)",
                human::value(c.before, &s.unit, None, unicode),
                human::value(c.after, &s.unit, None, unicode),
                c.points_before,
                c.points_after,
                p_text(c.p),
                c.confidence * 100.0
            );
            let when = format!("measured {} .. {}", date(c.from_time), date(c.to_time));
            for l in wrap_lines(&head, 78) {
                let _ = writeln!(o, "  {l}");
            }
            for l in wrap_lines(&detail, 76).iter().chain([&when]) {
                let _ = writeln!(o, "    {l}");
            }
        }
    }
    o
}
