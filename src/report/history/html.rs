//! A history as an HTML body: a chart and a table per series, then its
//! change points.

use std::fmt::Write;

use super::{
    History, Series, change_size, ci_range, date, fit, half, p_text, runs_named, scope, step_text,
    title,
};
use crate::report::fmt::axis::Axis;
use crate::report::fmt::html_escape as esc;
use crate::report::fmt::human;

/// The body of the HTML page: per series, a chart (x = point, y = mean
/// with its interval, change points as dashed lines, each segment's mean
/// as a grey line), the points table and the change points.
pub(super) fn html(h: &History) -> String {
    let unicode = h.unicode;
    let mut o = format!("<h1>{}</h1>\n", esc(&scope(h)));
    for s in &h.series {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&title(h, s)));
        o.push_str(&chart(s));
        let _ = writeln!(
            o,
            "<table><tr><th>#</th><th class=\"l\">point</th><th class=\"l\">measured (UTC)</th>\
             <th>runs</th><th>n</th><th>mean</th><th>95% CI</th><th>vs previous</th></tr>"
        );
        for p in &s.points {
            let cp = s.change_points.iter().any(|c| c.index == p.index);
            let ci = ci_range(p, &s.unit, unicode);
            let sig = p.step.as_ref().is_some_and(|x| x.significant);
            let _ = writeln!(
                o,
                "<tr{}><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td{}>{}</td></tr>",
                if cp {
                    " style=\"border-top:3px solid #e15759\""
                } else {
                    ""
                },
                p.index + 1,
                esc(&p.label),
                esc(&date(p.time)),
                esc(&runs_named(p)),
                p.n,
                esc(&human::value(p.mean, &s.unit, half(p), unicode)),
                esc(&ci),
                if sig { " class=\"sig\"" } else { "" },
                esc(step_text(p).trim_end())
            );
        }
        o.push_str("</table>\n<p class=\"legend\">Bold: the step from the previous point is significant with the run as the unit; ? not judged: one run a point does not measure run-to-run variation (kbench run --repeat N does). A red rule: a change point lies before the point.</p>\n");
        if let Some(n) = &s.note {
            let _ = writeln!(o, "<p>Change points: none looked for ({}).</p>", esc(n));
            continue;
        }
        let _ = writeln!(
            o,
            "<p>Change points (E-divisive means, permutation p &le; {}, {} permutations): {}</p>",
            h.method.settings.significance,
            h.method.settings.permutations,
            if s.change_points.is_empty() {
                "none."
            } else {
                ""
            }
        );
        if !s.change_points.is_empty() {
            o.push_str("<table><tr><th class=\"l\">between</th><th class=\"l\">and</th><th class=\"l\">measured (UTC)</th><th>change</th><th>before</th><th>after</th><th class=\"l\">verdict</th><th>p</th></tr>\n");
            for c in &s.change_points {
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">#{} {}</td><td class=\"l\">#{} {}</td><td class=\"l\">{} .. {}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"l{}\">{}</td><td>{}</td></tr>",
                    c.index,
                    esc(&c.from),
                    c.index + 1,
                    esc(&c.to),
                    esc(&date(c.from_time)),
                    esc(&date(c.to_time)),
                    esc(&change_size(c, &s.unit, unicode)),
                    esc(&human::value(c.before, &s.unit, None, unicode)),
                    esc(&human::value(c.after, &s.unit, None, unicode)),
                    if c.verdict == "worse" { " sig" } else { "" },
                    c.verdict,
                    esc(&p_text(c.p))
                );
            }
            o.push_str("</table>\n");
        }
    }
    o
}

/// The history chart's geometry: the plot area and the value axis (in
/// the series' scaled unit, `k` per stored unit).
struct HistoryPlot {
    n: usize,
    axis: Axis,
    k: f64,
}

impl HistoryPlot {
    const W: f64 = 900.0;
    const H: f64 = 320.0;
    const LEFT: f64 = 80.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 20.0;
    const BOTTOM: f64 = 90.0;
    const PW: f64 = Self::W - Self::LEFT - Self::RIGHT;
    const PH: f64 = Self::H - Self::TOP - Self::BOTTOM;

    /// The x of point `i` (fractions between points allowed).
    fn x(&self, i: f64) -> f64 {
        Self::LEFT + Self::PW * (i + 0.5) / self.n.max(1) as f64
    }

    /// The y of a value in the stored unit.
    fn y(&self, v: f64) -> f64 {
        Self::TOP + Self::PH * (1.0 - self.axis.at(v * self.k))
    }
}

/// The history chart, inline SVG.
fn chart(s: &Series) -> String {
    type P = HistoryPlot;
    let n = s.points.len();
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in &s.points {
        let (a, b) = p.ci95.map_or((p.mean, p.mean), |[a, b]| (a, b));
        lo = lo.min(a).min(p.mean);
        hi = hi.max(b).max(p.mean);
    }
    if hi <= lo {
        hi = lo + lo.abs().max(1.0) * 0.01;
    }
    let (scaled_lo, u, _) = human::scale(lo, &s.unit, None, false);
    let k = if lo != 0.0 { scaled_lo / lo } else { 1.0 };
    // Round ticks in the scaled unit, the range widened to whole steps.
    let axis = Axis::span(lo * k, hi * k);
    let plot = HistoryPlot { n, axis, k };
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" class=\"chart\" role=\"img\"><title>{}</title>",
        P::W,
        P::H,
        esc(&format!("{} history", s.bench))
    );
    for t in &plot.axis.ticks {
        let yy = P::TOP + P::PH * (1.0 - plot.axis.at(*t));
        let _ = write!(
            o,
            "<line x1=\"{}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/>\
             <text class=\"ytick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            P::LEFT,
            P::W - P::RIGHT,
            P::LEFT - 4.0,
            yy + 4.0,
            esc(&plot.axis.label(*t)),
        );
    }
    let _ = write!(
        o,
        "<text x=\"14\" y=\"{c:.1}\" font-size=\"11\" transform=\"rotate(-90 14 {c:.1})\" text-anchor=\"middle\">{}</text>",
        esc(&format!("{} [{u}]", s.metric)),
        c = P::TOP + P::PH / 2.0
    );
    segments(&mut o, s, &plot);
    history_points(&mut o, s, &plot);
    let _ = writeln!(
        o,
        "<line x1=\"{l}\" x2=\"{l}\" y1=\"{}\" y2=\"{:.1}\" stroke=\"#333\"/>\
         <line x1=\"{l}\" x2=\"{:.1}\" y1=\"{b:.1}\" y2=\"{b:.1}\" stroke=\"#333\"/></svg>",
        P::TOP,
        P::TOP + P::PH,
        P::W - P::RIGHT,
        l = P::LEFT,
        b = P::TOP + P::PH
    );
    o
}

/// The mean of each segment between change points as a grey rule, and
/// each change point as a red dashed line titled with its verdict.
fn segments(o: &mut String, s: &Series, plot: &HistoryPlot) {
    type P = HistoryPlot;
    let n = s.points.len();
    let mut bounds = vec![0];
    bounds.extend(s.change_points.iter().map(|c| c.index));
    bounds.push(n);
    for b in bounds.windows(2) {
        if b[1] <= b[0] {
            continue;
        }
        let m = s.points[b[0]..b[1]].iter().map(|p| p.mean).sum::<f64>() / (b[1] - b[0]) as f64;
        let _ = write!(
            o,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#999\" stroke-width=\"2\"/>",
            plot.x(b[0] as f64 - 0.4),
            plot.x(b[1] as f64 - 0.6),
            yy = plot.y(m)
        );
    }
    for c in &s.change_points {
        let cx = plot.x(c.index as f64 - 0.5);
        let _ = write!(
            o,
            "<line x1=\"{cx:.1}\" x2=\"{cx:.1}\" y1=\"{}\" y2=\"{:.1}\" stroke=\"#e15759\" stroke-dasharray=\"5,3\" class=\"change-point\">\
             <title>{}</title></line>",
            P::TOP,
            P::TOP + P::PH,
            esc(&format!(
                "change point: {} {:+.1}%",
                c.verdict,
                c.change * 100.0
            ))
        );
    }
}

/// The line through the points' means, each point's interval and dot,
/// and a label under every `n/30`th point.
fn history_points(o: &mut String, s: &Series, plot: &HistoryPlot) {
    type P = HistoryPlot;
    let (x, y) = (|i: f64| plot.x(i), |v: f64| plot.y(v));
    let mut path = String::new();
    for p in &s.points {
        let (px, py) = (x(p.index as f64), y(p.mean));
        let _ = write!(
            path,
            "{}{px:.1} {py:.1}",
            if path.is_empty() { "M" } else { "L" }
        );
    }
    let _ = write!(o, "<path d=\"{path}\" stroke=\"#4e79a7\" fill=\"none\"/>");
    let every = s.points.len().div_ceil(30).max(1);
    for p in &s.points {
        let (px, py) = (x(p.index as f64), y(p.mean));
        if let Some([a, b]) = p.ci95 {
            let _ = write!(
                o,
                "<path d=\"M{px:.1} {:.1}V{:.1}M{:.1} {:.1}H{:.1}M{:.1} {:.1}H{:.1}\" stroke=\"#000\" fill=\"none\"/>",
                y(a),
                y(b),
                px - 3.0,
                y(a),
                px + 3.0,
                px - 3.0,
                y(b),
                px + 3.0
            );
        }
        let _ = write!(
            o,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3\" fill=\"#4e79a7\"><title>{}</title></circle>",
            esc(&format!(
                "#{} {}: {:.6} {}",
                p.index + 1,
                p.label,
                p.mean,
                s.unit
            ))
        );
        if p.index % every == 0 {
            let ly = P::TOP + P::PH + 12.0;
            let _ = write!(
                o,
                "<text x=\"{px:.1}\" y=\"{ly:.1}\" font-size=\"10\" text-anchor=\"end\" transform=\"rotate(-45 {px:.1} {ly:.1})\">{}</text>",
                esc(&fit(&p.label, 18))
            );
        }
    }
}
