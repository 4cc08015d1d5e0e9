//! A comparison as GitHub Markdown: one table row per cell and
//! contender, significant changes in bold, the geometric means below.

use std::fmt::Write;

use super::Comparison;
use crate::report::fmt::{human, md_escape};

/// A comparison: one row per cell and contender, significant changes in
/// bold (as the layouts mark them), the geometric means below.
pub(crate) fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let adjusted = c.family > 1;
    let _ = writeln!(
        o,
        "**compare**: baseline `{}`; {} at {}% confidence{}\n",
        md_escape(&c.operands[0]),
        c.test.label(),
        c.confidence,
        if adjusted {
            format!("; p adjusted over {}", super::families(c))
        } else {
            String::new()
        }
    );
    o.push_str("| benchmark | metric | cell | contender | baseline | contender | change | interval | p |\n");
    o.push_str("|---|---|---|---|--:|--:|--:|---|--:|\n");
    for r in &c.rows {
        for v in &r.versus {
            let pct = |x: f64| human::percent(x * 100.0, None);
            // No ratio (degenerate data): a dash, as the text report.
            let change = match v.change {
                Some(d) if v.significant => format!("**{}%**", pct(d)),
                Some(d) => format!("{}%", pct(d)),
                None => "-".into(),
            };
            let iv = v
                .interval
                .map(|[l, h]| format!("[{}%, {}%]", pct(l), pct(h)))
                .unwrap_or_else(|| "-".into());
            let p = if adjusted { v.p_adjusted } else { v.p };
            let _ = writeln!(
                o,
                "| {} | {} | {} | `{}` | {} | {} | {change} | {iv} | {} |",
                md_escape(&r.bench),
                md_escape(&r.metric),
                md_escape(&r.cell),
                md_escape(&v.name),
                human::value(r.mean, &r.unit, None, true),
                human::value(v.mean, &r.unit, None, true),
                p.map_or("-".into(), |p| crate::stats::cfmt::fmt_g(p, 0, 3)),
            );
        }
    }
    if !c.geomean.is_empty() {
        o.push_str("\n| geomean | contender | ratio | interval | rows |\n|---|---|--:|---|--:|\n");
        for g in &c.geomean {
            let iv = g
                .interval
                .map(|[l, h]| format!("[{}, {}]", human::ratio(l, None), human::ratio(h, None)))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                o,
                "| {} ({}) | `{}` | {} | {iv} | {} |",
                md_escape(&g.unit),
                g.direction,
                md_escape(&g.name),
                human::ratio(g.ratio, None),
                g.k
            );
        }
    }
    if let Some(k) = &c.comparability {
        for w in &k.warnings {
            let _ = writeln!(o, "\n> warning: {}", md_escape(&w.to_string()));
        }
    }
    for v in &c.verdicts {
        let _ = writeln!(o, "\n**verdict**: {}", md_escape(&v.sentence));
    }
    o
}
