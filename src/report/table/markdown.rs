//! Markdown (GitHub tables) for reviews and issues: a layout's tables with
//! each value's interval beside it and significant values in bold; every
//! user string (labels, names, host) escaped. Documents without a table
//! layout are their text rendering in a fenced block.

use std::fmt::Write;

use super::grid::{self, Panel};
use super::layout::Reading;
use super::{Column, SystemBlock, Table, TableDoc, Value};
use crate::ministat::{Version, difference_block};
use crate::report::fmt::md_escape;

/// A value with its interval beside it, in bold when significant.
fn cell(v: &Value, c: &Column, panel: Panel) -> String {
    let r = Reading::of(v, c, panel, true);
    if !r.judged {
        return r.number;
    }
    let number = if r.significant {
        format!("**{}**", r.number)
    } else {
        r.number.clone()
    };
    let iv = r
        .ends()
        .map(|[l, h]| format!(" [{l}, {h}]"))
        .unwrap_or_default();
    let q = if r.unmeasured { " ?" } else { "" };
    format!("{number}{iv}{q}")
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
    if t.sectioned() {
        let d: Vec<String> = t
            .cols
            .iter()
            .map(|c| format!("{}: {}", md_escape(&c.metric), c.direction))
            .collect();
        let _ = writeln!(o, "{}  ", d.join("; "));
    }
    o.push('\n');
    if let Some(base) = t.normalised_to() {
        o.push_str("Values:\n\n");
        let g = grid::of_table(t, Panel::Means, &|v, c| cell(v, c, Panel::Means));
        o.push_str(&g.markdown(&md_escape));
        let _ = writeln!(o, "\nNormalised to {}:\n", md_escape(base));
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

fn scaling(o: &mut String, s: &crate::report::scale::Scaling) {
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
        crate::report::scale::FLATTEN_BELOW,
        flat.join("; ")
    );
}

pub(crate) fn tables(d: &TableDoc) -> String {
    let mut o = String::new();
    for t in &d.title {
        let _ = writeln!(o, "## {}\n", md_escape(t));
    }
    for a in &d.answers {
        let _ = writeln!(o, "**{}**\n", md_escape(a));
    }
    for t in &d.tables {
        table(&mut o, t);
        o.push('\n');
    }
    if d.shows_scaling() {
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
fn comparability(o: &mut String, k: &crate::report::comparability::Comparability) {
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
