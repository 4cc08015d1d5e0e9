//! A comparison as text: per compared row ministat's table and each
//! contender's test block (Debian's report byte for byte with
//! `--compat=2015`), or with no test asked for the operands' summary;
//! then the summary within 80 columns, the geometric means,
//! comparability and the verdicts.

use std::fmt::Write;

use indexmap::IndexMap;

use super::{Comparison, Row};
use crate::ministat::{Version, difference_block};
use crate::report::fmt::stat::{STAT_HEADER, direction_text, fmt_p, stat_cols};
use crate::report::fmt::{WIDTH, grid, human, wrap};
use crate::stats::cfmt::fmt_g;
use crate::stats::twosample::Shown;

const SYMBOL: [char; super::MAX_OPERANDS] = ['x', '+', '*', '%', '#', '@', 'O'];

fn pct(x: f64) -> String {
    super::verdict::signed(x)
}

/// How a comparison's design counted its units: `paired by round, 12
/// rounds`, `3+3 runs as units`.
fn design_how(d: &crate::stats::design::Design) -> String {
    use crate::stats::design::Unit;
    let f = d
        .pool_p
        .map(|p| format!(", F test p = {}", fmt_p(p)))
        .unwrap_or_default();
    let [n1, n2] = d.n;
    match (d.paired, d.unit) {
        (true, Unit::Rounds) => format!("paired by round, {n1} rounds"),
        (true, u) => format!(
            "paired by round, {n1} {} as units ({} differ{f})",
            u.plural(),
            u.plural()
        ),
        (false, Unit::Samples) => format!("{n1}+{n2} samples as independent (no shared rounds)"),
        (false, Unit::Processes) => {
            format!("{n1}+{n2} processes as units (processes differ{f})")
        }
        (false, u) => format!("{n1}+{n2} {} as units", u.plural()),
    }
}

/// A contender's result as the design gave it, in one line of words.
fn design_words(v: &super::Versus, r: &Row, family: usize, adjust: &str) -> String {
    if let Some(g) = &v.degenerate {
        return g.to_string();
    }
    let Some(d) = &v.design else {
        return String::new();
    };
    let words = super::verdict::phrase(d.change(), r.direction, &r.metric, &r.unit);
    if let Some(level) = d.unmeasured {
        let within = d
            .within
            .map(|i| {
                format!(
                    "; within the {}s [{}, {}]",
                    level.name(),
                    pct(i.lo.exp_m1()),
                    pct(i.hi.exp_m1())
                )
            })
            .unwrap_or_default();
        return format!(
            "{words}, not judged: one {} a side (see below){within}",
            level.name()
        );
    }
    let iv = v
        .interval
        .map(|[l, h]| format!(" [{}, {}]", pct(l), pct(h)))
        .unwrap_or_default();
    let level = match v.interval_confidence {
        Some(c) if family > 1 => format!(", {}% interval ({adjust} over {family})", fmt_g(c, 0, 4)),
        Some(c) => format!(", {c}% interval"),
        None => String::new(),
    };
    let few = d.too_few.map(|t| format!(" ({t})")).unwrap_or_default();
    format!(
        "{} ({}): {words}{iv}{level}{few}",
        design_how(d),
        d.method.label()
    )
}

/// With `--compat=2015` and Student's t: Debian's `ministat` report of
/// the row's values (the operands' names, the plot, the table and each
/// difference block), byte for byte what `ministat A B ...` prints for
/// files holding the values in the order they were taken. `None` where
/// ministat prints no report (fewer than 3 values) or is not asked for.
fn debian_report(c: &Comparison, r: &Row) -> Option<String> {
    if c.ministat != Version::Debian2015 || !c.test.is_ministat() {
        return None;
    }
    let level = crate::stats::student::level_index(c.confidence)?;
    let sets: Vec<(&str, &[f64])> = c
        .operands
        .iter()
        .zip(&r.stats)
        .map(|(n, s)| (n.as_str(), &s.points[..]))
        .collect();
    crate::ministat::of_points(Version::Debian2015, &sets, level)
}

/// One compared row: ministat's table, then each contender's test block
/// and the design's verdict.
fn compare_block(o: &mut String, c: &Comparison, r: &Row) {
    let cell = if r.cell.is_empty() {
        String::new()
    } else {
        // `, ` so a long cell wraps within the width.
        format!(" [{}]", r.cell.replace(',', ", "))
    };
    o.push_str(&wrap(
        &format!(
            "{} {}{cell} ({}, {})",
            r.bench,
            r.metric,
            r.unit,
            direction_text(r.direction)
        ),
        WIDTH,
        "    ",
    ));
    let whole = debian_report(c, r);
    if let Some(w) = &whole {
        o.push_str(w);
    } else {
        for (i, name) in c.operands.iter().enumerate() {
            let _ = writeln!(o, "{} {name}", SYMBOL[i]);
        }
        let _ = writeln!(o, " {STAT_HEADER}");
        for (i, s) in r.stats.iter().enumerate() {
            let _ = writeln!(
                o,
                "{} {:3}{}",
                SYMBOL[i],
                s.summary.n,
                stat_cols(&s.summary)
            );
        }
    }
    let conf = c.confidence;
    for (j, v) in r.versus.iter().enumerate() {
        let mut line = String::new();
        match v.detail.outcome.summary(conf, &r.unit) {
            // A zero baseline has no relative difference (ministat would
            // print `inf%`): the design's words say why instead.
            _ if r.mean == 0.0 => {}
            // Debian's report printed its own difference blocks.
            Shown::Ministat { .. } if whole.is_some() => {}
            Shown::Ministat { level } => o.push_str(&difference_block(
                c.ministat,
                r.stats[0].moments,
                r.stats[j + 1].moments,
                level,
            )),
            Shown::Line(l) => line = l,
        }
        if !line.is_empty() {
            o.push_str(&wrap(&line, WIDTH, "    "));
        }
        design_line(o, c, r, v, &format!(" {} vs x", SYMBOL[j + 1]));
    }
}

/// A contender's `design:` line; `vs` names it when there are several.
fn design_line(o: &mut String, c: &Comparison, r: &Row, v: &super::Versus, vs: &str) {
    let vs = if c.operands.len() > 2 { vs } else { "" };
    let words = design_words(v, r, r.family, c.adjust.label());
    if !words.is_empty() {
        o.push_str(&wrap(&format!("design{vs}: {words}"), WIDTH, "    "));
    }
}

/// A comparison of one row with no test asked for: the operands' summary
/// of that row, each contender's design line, then the verdict; ministat's
/// blocks come with `--test`.
fn compare_short(o: &mut String, c: &Comparison, r: &Row) {
    let cell = if r.cell.is_empty() {
        String::new()
    } else {
        format!(" ({})", r.cell)
    };
    let s = super::summary::RunSummary {
        metric: format!("{} {}{cell}", r.bench, r.metric),
        unit: r.unit.clone(),
        direction: r.direction,
        variants: c
            .operands
            .iter()
            .zip(&r.stats)
            .zip(SYMBOL)
            .map(|((name, st), sym)| {
                super::summary::Variant::of(&format!("{sym} {name}"), &st.summary)
            })
            .collect(),
        verdicts: Vec::new(),
        stands_for_tables: false,
        order: ", the baseline first",
    };
    super::summary::text(o, &s);
    for (j, v) in r.versus.iter().enumerate() {
        design_line(o, c, r, v, &format!(" {}", c.operands[j + 1]));
    }
    compare_tail(o, c, false);
}

/// The end of a comparison: unpaired cells, comparability (after a blank
/// line when `gap`), then the verdicts.
fn compare_tail(o: &mut String, c: &Comparison, gap: bool) {
    for u in &c.unpaired {
        let _ = writeln!(o, "unpaired (not in every operand): {u}");
    }
    if let Some(k) = &c.comparability {
        if gap {
            o.push('\n');
        }
        let symbols: Vec<String> = SYMBOL
            .iter()
            .take(c.operands.len())
            .map(|s| s.to_string())
            .collect();
        crate::report::comparability::text(o, k, &symbols);
    }
    if !c.verdicts.is_empty() {
        o.push('\n');
    }
    for v in &c.verdicts {
        o.push_str(&wrap(&v.sentence, WIDTH, "  "));
    }
}

pub(crate) fn compare(o: &mut String, c: &Comparison) {
    if let (true, [r]) = (c.short, &c.rows[..]) {
        return compare_short(o, c, r);
    }
    for r in &c.rows {
        compare_block(o, c, r);
        o.push('\n');
    }
    summary_lines(o, c);
    if !c.geomean.is_empty() {
        o.push_str("\ngeomean per unit (change = new/baseline - 1):\n");
    }
    for g in &c.geomean {
        let words = super::verdict::phrase(g.change, g.direction, &g.unit, &g.unit);
        let d = &g.design;
        let tail = if let Some(level) = d.unmeasured {
            format!("; not judged: {}", level.unmeasured())
        } else if g.k == 1 {
            let iv = g
                .change_interval
                .map(|[l, h]| format!(" [{}, {}]", pct(l), pct(h)))
                .unwrap_or_default();
            format!("{iv}; one cell: the geomean is that cell's comparison")
        } else {
            let iv = g
                .change_interval
                .map(|[l, h]| format!(" [{}, {}]", pct(l), pct(h)))
                .unwrap_or_else(|| " (no interval)".into());
            let [n1, n2] = d.n;
            let units = match d.unit {
                crate::stats::design::Unit::Cells => "the cells as replicates".to_string(),
                u => format!("{n1}+{n2} {} as units", u.plural()),
            };
            let mark = if d.significant() { "" } else { " ~" };
            format!("{mark}{iv}, {}% interval over {units}", c.confidence)
        };
        o.push_str(&wrap(
            &format!(
                "  {} ({}), {}: {words}{tail}; ratio {} over {} row(s)",
                g.unit,
                direction_text(g.direction),
                g.name,
                fmt_g(g.ratio, 0, 6),
                g.k
            ),
            WIDTH,
            "    ",
        ));
    }
    compare_tail(o, c, true);
}

/// Per benchmark, the label parts every row of it shares.
type Shared<'a> = IndexMap<&'a str, Vec<&'a str>>;

/// Each row's `k=v` label parts, and per benchmark the parts that every
/// row of it shares (said once, under the table).
fn shared_parts(c: &Comparison) -> (Vec<Vec<&str>>, Shared<'_>) {
    let parts: Vec<Vec<&str>> = c
        .rows
        .iter()
        .map(|r| {
            r.cell
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        })
        .collect();
    let mut shared: Shared<'_> = IndexMap::new();
    for (i, r) in c.rows.iter().enumerate() {
        if shared.contains_key(r.bench.as_str()) {
            continue;
        }
        let same: Vec<usize> = (0..c.rows.len())
            .filter(|&j| c.rows[j].bench == r.bench)
            .collect();
        let common: Vec<&str> = parts[i]
            .iter()
            .copied()
            .filter(|p| same.len() > 1 && same.iter().all(|&j| parts[j].contains(p)))
            .collect();
        shared.insert(r.bench.as_str(), common);
    }
    (parts, shared)
}

/// The comparison's summary within 80 columns: a row per cell and
/// contender, values in human units, p for every test; each row is named
/// by what varies between the rows (see [`row_labels`]).
fn summary_lines(o: &mut String, c: &Comparison) {
    o.push_str(&wrap(
        &format!(
            "summary ({}% confidence; `~` = no significant difference, `?` = not judged; baseline {}):",
            c.confidence, c.operands[0]
        ),
        WIDTH,
        "  ",
    ));
    let (parts, shared) = shared_parts(c);
    let (head, names, labels) = row_labels(c, &parts, &shared);
    let contenders = c.operands.len() > 2;
    let adjusted = c.family > 1;
    let mut notes = SummaryNotes::default();
    let mut rows: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for ((r, name), label) in c.rows.iter().zip(&names).zip(&labels) {
        for v in &r.versus {
            rows.push(summary_row(c, (r, v), (name, label), &mut notes));
        }
    }
    let mut head = vec![head];
    if contenders {
        head.push("vs".into());
    }
    let g = grid::Grid {
        row_head: head,
        groups: vec![(String::new(), 6)],
        col_head: [
            "baseline",
            "contender",
            "change",
            "interval",
            if adjusted { "p adj" } else { "p" },
            "units",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        summary_from: None,
    };
    o.push_str(&g.text(WIDTH, '-'));
    if adjusted {
        o.push_str(&wrap(
            &format!(
                "p adjusted ({}, {}) over {}; each interval is taken at the level its adjusted p is decided at, so `~` and the interval agree",
                c.adjust.label(),
                c.adjust.controls(),
                super::families(c)
            ),
            WIDTH,
            "  ",
        ));
    }
    for l in &notes.notes {
        o.push_str(&wrap(l, WIDTH, "    "));
    }
    for l in &notes.powers {
        o.push_str(&wrap(l, WIDTH, "    "));
    }
    for (bench, common) in &shared {
        if !common.is_empty() {
            o.push_str(&wrap(
                &format!("every {bench} row: {}", common.join(", ")),
                WIDTH,
                "  ",
            ));
        }
    }
}

/// What the summary says under its table: why a row is not judged or
/// has no change, and what a non-significant row could have detected.
#[derive(Default)]
struct SummaryNotes {
    notes: Vec<String>,
    powers: Vec<String>,
}

/// One row of the summary: a cell (`name`, shown as `label`) against
/// one contender; its notes go to `notes`.
fn summary_row(
    c: &Comparison,
    (r, v): (&Row, &super::Versus),
    (name, label): (&str, &str),
    sn: &mut SummaryNotes,
) -> (Vec<String>, Vec<String>) {
    let contenders = c.operands.len() > 2;
    let adjusted = c.family > 1;
    // Fewer digits for large changes: the row stays within 80.
    let short = super::verdict::signed;
    let vs = if contenders {
        format!(" vs {}", v.name)
    } else {
        String::new()
    };
    let unmeasured = v.design.as_ref().and_then(|d| d.unmeasured);
    let change = match (v.change, unmeasured) {
        (None, _) => "-".to_string(),
        (Some(_), Some(_)) => "?".to_string(),
        (Some(x), None) if v.significant => short(x),
        (Some(_), None) => "~".to_string(),
    };
    if let Some(l) = unmeasured {
        crate::report::push_unique(&mut sn.notes, format!("? {}", l.unmeasured()));
    }
    if let Some(g) = &v.degenerate {
        sn.notes.push(format!("- {name}{vs}: {g}"));
    }
    let iv = v
        .interval
        .map(|[l, h]| format!("[{}, {}]", short(l), short(h)))
        .unwrap_or_else(|| "-".into());
    let shown = if adjusted { v.p_adjusted } else { v.p };
    let p = shown.map(fmt_p).unwrap_or_else(|| "-".into());
    let mut labels = vec![label.to_string()];
    if contenders {
        labels.push(v.name.clone());
    }
    if let (Some(pw), Some(d)) = (&v.power, &v.design) {
        let need = match pw.need {
            Some(n) => format!(
                "; +/-{} needs {n} {} a side",
                short_pct(pw.margin),
                d.unit.plural()
            ),
            None => String::new(),
        };
        sn.powers.push(format!(
            "no difference: {name}{vs}: could detect +/-{} ({:.0}% power){need}",
            short_pct(pw.detectable),
            pw.power * 100.0
        ));
    }
    let n = match &v.design {
        Some(d) if d.paired => format!("{}", d.n[0]),
        Some(d) => format!("{}+{}", d.n[0], d.n[1]),
        None => format!("{}+{}", v.n1, v.n2),
    };
    (
        labels,
        vec![
            human::value(r.mean, &r.unit, None, false),
            human::value(v.mean, &r.unit, None, false),
            change,
            iv,
            p,
            n,
        ],
    )
}

/// Each compared row's full name (`loop real [size=2k]`) and its label
/// in the summary table: only what varies between the rows (the
/// benchmark, the metric, the parameters and factor levels not shared by
/// every row of its benchmark), as benchstat names its rows. What all
/// rows share names the label column (`loop real`), or it is `cell`.
fn row_labels(
    c: &Comparison,
    parts: &[Vec<&str>],
    shared: &IndexMap<&str, Vec<&str>>,
) -> (String, Vec<String>, Vec<String>) {
    let distinct = |f: fn(&Row) -> &str| {
        let mut seen: Vec<&str> = c.rows.iter().map(f).collect();
        seen.dedup();
        seen.sort_unstable();
        seen.dedup();
        seen.len() > 1
    };
    let benches_vary = distinct(|r| &r.bench);
    let metrics_vary = distinct(|r| &r.metric);
    let mut names = Vec::with_capacity(c.rows.len());
    let mut labels = Vec::with_capacity(c.rows.len());
    for (r, p) in c.rows.iter().zip(parts) {
        let common = &shared[r.bench.as_str()];
        let rest: Vec<&str> = p.iter().copied().filter(|x| !common.contains(x)).collect();
        names.push(if rest.is_empty() {
            format!("{} {}", r.bench, r.metric)
        } else {
            format!("{} {} [{}]", r.bench, r.metric, rest.join(","))
        });
        let mut label: Vec<&str> = Vec::new();
        if benches_vary {
            label.push(&r.bench);
        }
        if metrics_vary {
            label.push(&r.metric);
        }
        let rest = rest.join(",");
        if !rest.is_empty() {
            label.push(&rest);
        }
        labels.push(if label.is_empty() {
            format!("{} {}", r.bench, r.metric)
        } else {
            label.join(" ")
        });
    }
    let mut head: Vec<&str> = Vec::new();
    if let Some(r) = c.rows.first().filter(|_| c.rows.len() > 1) {
        if !benches_vary {
            head.push(&r.bench);
        }
        if !metrics_vary {
            head.push(&r.metric);
        }
    }
    let head = if head.is_empty() {
        "cell".to_string()
    } else {
        head.join(" ")
    };
    (head, names, labels)
}

/// A relative change as a short percentage: `2.3%`, `0.15%`.
fn short_pct(x: f64) -> String {
    let p = x * 100.0;
    if p >= 10.0 {
        format!("{p:.0}%")
    } else if p >= 1.0 {
        format!("{p:.1}%")
    } else {
        format!("{p:.2}%")
    }
}
