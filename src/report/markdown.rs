//! Markdown (GitHub tables) for reviews and issues: a layout's tables with
//! each value's interval beside it and significant values in bold; every
//! user string (labels, names, host) escaped. Documents without a table
//! layout are their text rendering in a fenced block.

use std::fmt::Write;

use super::Document;
use super::fmt::human;
use super::fmt::md_escape;
use super::grid::{self, Panel};
use super::render::Render;
use super::table::{Column, SystemBlock, Table, TableDoc, Value};
use crate::ministat::{Version, difference_block};
use crate::plan::report::TableKind;

pub fn render(doc: &Document<'_>) -> String {
    match doc {
        Document::Tables(t) => tables(t),
        Document::History(h) => h.markdown(),
        Document::Compare(c) => compare(c),
        Document::Check(c) => super::check::markdown(c),
        Document::Explain(e) => super::explain::markdown(e),
        other => format!("```\n{}```\n", super::text::render(other)),
    }
}

/// A comparison: one row per cell and contender, significant changes in
/// bold (as the layouts mark them), the geometric means below.
fn compare(c: &super::compare::Comparison) -> String {
    let mut o = String::new();
    let adjusted = c.family > 1;
    let _ = writeln!(
        o,
        "**compare**: baseline `{}`; {} at {}% confidence{}\n",
        md_escape(&c.operands[0]),
        c.test.label(),
        c.confidence,
        if adjusted {
            format!("; p adjusted over {}", super::text::families(c))
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

fn cell(v: &Value, c: &Column, panel: Panel) -> String {
    let bold = |s: String, b: bool| if b { format!("**{s}**") } else { s };
    match v {
        Value::Mean { .. } => super::text::cell_text(v, c, panel, true),
        Value::Change {
            pct,
            lo,
            hi,
            significant,
            unmeasured,
            ..
        } => {
            let h = lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
            let iv = match (lo, hi) {
                (Some(l), Some(hh)) => format!(
                    " [{}, {}]",
                    human::percent_end(*l, h),
                    human::percent_end(*hh, h)
                ),
                _ => String::new(),
            };
            let q = if unmeasured.is_some() { " ?" } else { "" };
            format!("{}{iv}{q}", bold(human::percent(*pct, h), *significant))
        }
        Value::Ratio {
            mean,
            half,
            ratio,
            lo,
            hi,
            significant,
            unmeasured,
            ..
        } => match panel {
            Panel::Means => mean.map_or("-".into(), |m| human::value(m, &c.unit, *half, true)),
            Panel::Main => {
                let h = lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
                let iv = match (lo, hi) {
                    (Some(l), Some(h2)) => {
                        format!(" [{}, {}]", human::ratio(*l, h), human::ratio(*h2, h))
                    }
                    _ => String::new(),
                };
                let q = if unmeasured.is_some() { " ?" } else { "" };
                format!("{}{iv}{q}", bold(human::ratio(*ratio, h), *significant))
            }
        },
    }
}

fn table(o: &mut String, t: &Table) {
    let mut head = md_escape(&t.bench);
    if let Some(m) = &t.metric {
        let _ = write!(head, ": {}", md_escape(m));
        if let Some(u) = &t.unit
            && u != m
        {
            let _ = write!(head, " \\[{}\\]", md_escape(u));
        }
    }
    if !t.section.is_empty() {
        let s: Vec<String> = t
            .section
            .iter()
            .map(|(k, v)| format!("{} {}", md_escape(k), md_escape(v)))
            .collect();
        let _ = write!(head, " ({})", s.join(", "));
    }
    let _ = writeln!(o, "### {head}\n");
    for l in &t.legend {
        let l = l.replace("* = significant", "bold = significant");
        let l = l.replace("; * = the", "; bold = the");
        let _ = writeln!(o, "{}  ", md_escape(&l));
    }
    if !t.constant.is_empty() {
        let c: Vec<String> = t
            .constant
            .iter()
            .map(|(k, v)| format!("{}={}", md_escape(k), md_escape(v)))
            .collect();
        let _ = writeln!(o, "all cells: {}  ", c.join(", "));
    }
    if t.kind == TableKind::Matrix {
        let d: Vec<String> = t
            .cols
            .iter()
            .map(|c| format!("{}: {}", md_escape(&c.metric), c.direction))
            .collect();
        let _ = writeln!(o, "{}  ", d.join("; "));
    }
    o.push('\n');
    if t.kind == TableKind::Ratio && t.metric.is_some() {
        o.push_str("Values:\n\n");
        let g = grid::of_table(t, Panel::Means, &|v, c| cell(v, c, Panel::Means));
        o.push_str(&g.markdown(&md_escape));
        let _ = writeln!(o, "\nNormalised to {}:\n", md_escape(&t.cols[0].label));
    }
    let g = grid::of_table(t, Panel::Main, &|v, c| cell(v, c, Panel::Main));
    o.push_str(&g.markdown(&md_escape));
    for d in &t.diffs {
        let _ = writeln!(
            o,
            "\n{} ({}): {} vs {}\n",
            md_escape(&d.metric),
            md_escape(&d.unit),
            md_escape(&d.baseline),
            md_escape(&d.contender)
        );
        // A code block shows ministat's lines as they are; only a fence
        // inside a label could end it, and labels are escaped above.
        let _ = writeln!(
            o,
            "```\n{}```",
            difference_block(Version::FreeBsdMain, d.a, d.b, d.level)
        );
    }
}

fn system(o: &mut String, s: &SystemBlock) {
    let _ = writeln!(o, "### System configuration ({})\n", md_escape(&s.host));
    for (k, v) in s.rows() {
        let _ = writeln!(o, "- **{k}**: {}", md_escape(&v));
    }
}

fn scaling(o: &mut String, s: &super::scale::Scaling) {
    let mut head = format!("{}: ops/s by tasks", md_escape(&s.bench));
    if !s.context.is_empty() {
        let c: Vec<String> = s.context.iter().map(|x| md_escape(x)).collect();
        let _ = write!(head, " ({})", c.join(", "));
    }
    let _ = writeln!(o, "### {head}\n");
    let g = grid::of_scaling(s, true);
    o.push_str(&g.markdown(&md_escape));
    let flat: Vec<String> = s
        .series
        .iter()
        .map(|x| match x.flattens_at {
            Some(n) => format!("{} at {n} tasks", md_escape(&x.label())),
            None => format!("{} not within the tasks measured", md_escape(&x.label())),
        })
        .collect();
    let _ = writeln!(
        o,
        "\nFlattens (efficiency < {:.2}): {}",
        super::scale::FLATTEN_BELOW,
        flat.join("; ")
    );
}

fn tables(d: &TableDoc) -> String {
    let mut o = String::new();
    for t in &d.title {
        let _ = writeln!(o, "## {}\n", md_escape(t));
    }
    for t in &d.tables {
        table(&mut o, t);
        o.push('\n');
    }
    if d.kind == TableKind::Scaling || d.tables.is_empty() {
        for s in &d.scaling {
            scaling(&mut o, s);
            o.push('\n');
        }
    }
    for s in &d.skipped {
        let _ = writeln!(o, "- no table: {}", md_escape(s));
    }
    if !d.skipped.is_empty() {
        o.push('\n');
    }
    if let Some(k) = &d.comparability {
        comparability(&mut o, k);
    }
    for s in &d.systems {
        system(&mut o, s);
        o.push('\n');
    }
    o
}

/// The facts that differ between the runs, as a list, then the warnings
/// as a quote block.
fn comparability(o: &mut String, k: &super::comparability::Comparability) {
    let names: Vec<String> = k.operands.iter().map(|n| format!("{n}:")).collect();
    let lines = k.lines(&names);
    let _ = writeln!(o, "**{}**\n", md_escape(&lines[0]));
    for l in &lines[1..] {
        let _ = writeln!(o, "- {}", md_escape(l));
    }
    if lines.len() > 1 {
        o.push('\n');
    }
    for w in &k.warnings {
        let _ = writeln!(o, "> **warning:** {}", md_escape(w));
    }
    if !k.warnings.is_empty() {
        o.push('\n');
    }
}
