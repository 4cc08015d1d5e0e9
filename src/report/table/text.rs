//! A layout's tables as plain text within 80 columns: each table's
//! heading, legends and grid, ministat's difference blocks, a matrix's
//! revision and hardware sections, the scaling curves, comparability and
//! the system blocks.

use std::fmt::Write;

use super::grid::{self, Panel};
use super::{SystemBlock, Table, TableDoc};
use crate::ministat::{Version, difference_block};
use crate::report::fmt::WIDTH;
use crate::report::push_unique;
use crate::report::scale::{FLATTEN_BELOW, Scaling};
use crate::term::wrapped;

/// A table's heading, then (a matrix's hardware section) its system
/// block, then the legends.
fn table_head(o: &mut String, t: &Table, hardware: &str) {
    let mut head = t.bench.clone();
    if let Some(m) = &t.metric {
        head.push_str(": ");
        head.push_str(m);
        if let Some(u) = &t.unit
            && u != m
        {
            let _ = write!(head, " [{u}]");
        }
    }
    // A matrix's revision heads its section already.
    let section: Vec<String> = t
        .section
        .iter()
        .filter(|(k, _)| !t.sectioned() || k != "revision")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !section.is_empty() {
        let _ = write!(head, " ({})", section.join(", "));
    }
    o.push_str(&crate::report::fmt::wrap(&head, WIDTH, "  "));
    o.push_str(hardware);
    for l in &t.legend {
        o.push_str(&crate::report::fmt::wrap(l, WIDTH, "  "));
    }
    if !t.constant.is_empty() {
        let c: Vec<String> = t.constant.iter().map(|(k, v)| format!("{k}={v}")).collect();
        o.push_str(&crate::report::fmt::wrap(
            &format!("all cells: {}", c.join(", ")),
            WIDTH,
            "  ",
        ));
    }
    if t.sectioned() {
        let d: Vec<String> = t
            .cols
            .iter()
            .map(|c| format!("{}: {}", c.metric, c.direction))
            .collect();
        o.push_str(&crate::report::fmt::wrap(&d.join("; "), WIDTH, "  "));
    }
}

fn layout_table(o: &mut String, t: &Table, d: &TableDoc, hardware: &str) {
    let unicode = d.unicode;
    table_head(o, t, hardware);
    o.push('\n');
    let rule = '-';
    if let Some(base) = t.normalised_to() {
        o.push_str("values:\n");
        let g = grid::of_table(t, Panel::Means, &|v, c| {
            super::layout::cell_text(v, c, Panel::Means, unicode)
        });
        o.push_str(&g.text(WIDTH, rule));
        let _ = writeln!(o, "\nnormalised to {base}:");
    }
    let g = grid::of_table(t, Panel::Main, &|v, c| {
        super::layout::cell_text(v, c, Panel::Main, unicode)
    });
    o.push_str(&g.text(WIDTH, rule));
    let version = d.ministat;
    for d in &t.diffs {
        // ministat's numbers are in the metric's stored unit: say which.
        o.push('\n');
        o.push_str(&wrapped(
            "",
            &format!(
                "{} ({}): {} vs {}",
                d.metric, d.unit, d.baseline, d.contender
            ),
            "  ",
        ));
        let sets = [
            (d.baseline.as_str(), d.points[0].as_slice()),
            (d.contender.as_str(), d.points[1].as_slice()),
        ];
        if let (Version::Debian2015, Some(whole)) =
            (version, crate::ministat::of_points(version, &sets, d.level))
        {
            // Debian's report of the same values, byte for byte.
            o.push_str(&whole);
            continue;
        }
        o.push_str(&wrapped("x ", &d.baseline, "  "));
        o.push_str(&wrapped("+ ", &d.contender, "  "));
        o.push_str(&difference_block(Version::FreeBsdMain, d.a, d.b, d.level));
    }
}

fn system_text(o: &mut String, s: &SystemBlock) {
    let _ = writeln!(o, "System configuration ({}):", s.host);
    let mut kv = |k: &str, v: String| {
        o.push_str(&crate::report::fmt::wrap(
            &format!("  {k:<11} {v}"),
            WIDTH,
            &" ".repeat(14),
        ));
    };
    for (k, v) in s.rows() {
        kv(&format!("{k}:"), v);
    }
}

/// Scaling curves with human units: per testcase and context, tasks down,
/// a group per mode (ops/s and efficiency).
fn scaling_text(o: &mut String, s: &Scaling, unicode: bool) {
    let mut head = format!("{}: ops/s by tasks", s.bench);
    if !s.context.is_empty() {
        let _ = write!(head, " ({})", s.context.join(", "));
    }
    o.push_str(&crate::report::fmt::wrap(&head, WIDTH, "  "));
    o.push_str("eff = ops(n) / (n * ops(first)), the per-task efficiency\n\n");
    let g = grid::of_scaling(s, unicode);
    o.push_str(&g.text(WIDTH, '-'));
    let flat: Vec<String> = s
        .series
        .iter()
        .map(|x| match x.flattens_at {
            Some(n) => format!("{} at {n} tasks", x.label()),
            None => format!("{} not within the tasks measured", x.label()),
        })
        .collect();
    o.push_str(&crate::report::fmt::wrap(
        &format!("flattens (eff < {FLATTEN_BELOW:.2}): {}", flat.join("; ")),
        WIDTH,
        "  ",
    ));
    for w in &s.warnings {
        o.push_str(&crate::report::fmt::wrap(
            &format!("warning: {w}"),
            WIDTH,
            "  ",
        ));
    }
}

pub(crate) fn tables(o: &mut String, d: &TableDoc) {
    for t in &d.title {
        o.push_str(&wrapped("", t, "  "));
    }
    if !d.answers.is_empty() {
        o.push('\n');
    }
    for a in &d.answers {
        o.push_str(&wrapped("", a, "  "));
    }
    let mut sections = Sections::of(d);
    for t in &d.tables {
        o.push('\n');
        let hardware = sections.enter(o, t);
        layout_table(o, t, d, &hardware);
    }
    if d.shows_scaling() {
        for s in &d.scaling {
            o.push('\n');
            scaling_text(o, s, d.unicode);
        }
    }
    if !d.skipped.is_empty() {
        o.push('\n');
        for s in &d.skipped {
            o.push_str(&crate::report::fmt::wrap(
                &format!("no table: {s}"),
                WIDTH,
                "  ",
            ));
        }
    }
    if let Some(k) = &d.comparability {
        o.push('\n');
        let names: Vec<String> = k.operands.iter().map(|n| format!("{n}:")).collect();
        crate::report::comparability::text(o, k, &names);
    }
    for (i, s) in d.systems.iter().enumerate() {
        if !sections.shown.contains(&i) {
            o.push('\n');
            system_text(o, s);
        }
    }
}

/// A matrix's sections, nested revision -> benchmark -> hardware: a
/// revision heading where the revision changes, each host's system block
/// in its first section (later ones refer to it).
struct Sections<'a> {
    systems: &'a [SystemBlock],
    /// Every table's hosts, when they are one: its system is theirs.
    one_host: bool,
    revision: Option<&'a str>,
    shown: Vec<usize>,
}

impl<'a> Sections<'a> {
    fn of(d: &'a TableDoc) -> Sections<'a> {
        let mut hosts: Vec<&str> = Vec::new();
        for t in &d.tables {
            if let Some(h) = super::section_value(t, "host") {
                push_unique(&mut hosts, h);
            }
        }
        Sections {
            systems: &d.systems,
            one_host: hosts.len() == 1,
            revision: None,
            shown: Vec::new(),
        }
    }

    /// Print the revision heading `t` starts, if any; the text of its
    /// hardware block.
    fn enter(&mut self, o: &mut String, t: &'a Table) -> String {
        if !t.sectioned() {
            return String::new();
        }
        let rev = super::section_value(t, "revision");
        if let Some(r) = rev
            && rev != self.revision
        {
            let head = format!("revision {r}");
            let _ = writeln!(
                o,
                "{head}\n{}\n",
                "=".repeat(head.chars().count().min(WIDTH))
            );
        }
        self.revision = rev;
        let Some(host) = super::section_value(t, "host") else {
            return String::new();
        };
        let found = self
            .systems
            .iter()
            .position(|s| s.host == host)
            .or_else(|| (self.one_host && self.systems.len() == 1).then_some(0));
        let Some(i) = found else {
            return String::new();
        };
        let mut hw = String::new();
        if self.shown.contains(&i) {
            let _ = writeln!(
                hw,
                "System configuration ({}): as above",
                self.systems[i].host
            );
        } else {
            system_text(&mut hw, &self.systems[i]);
            self.shown.push(i);
        }
        hw
    }
}
