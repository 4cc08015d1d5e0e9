//! The report of a run or campaign as plain text, ready to paste into
//! e-mail, within 80 columns where the data allows: a header naming the
//! run and the machine, then one table per benchmark and metric with
//! ministat's columns (`N Min Max Median Avg Stddev`, `%3d %13.8g`) and
//! the factor values and swept parameters as the row label (like `pti |
//! pcid`), the scaling tables and the variants' summary.

use std::fmt::Write;

use super::{Report, Subject};
use crate::report::fmt::stat::{STAT_HEADER, direction_text, fmt_p, stat_cols};
use crate::report::scale::{FLATTEN_BELOW, Scaling};
use crate::report::{CellSummary, Group};
use crate::stats::cfmt::fmt_g;

use crate::report::fmt::{WIDTH, human};
use crate::system::counters;

/// Reports one after another, a blank line between them.
pub(crate) fn reports(rs: &[Report]) -> String {
    let mut o = String::new();
    for (i, r) in rs.iter().enumerate() {
        if i > 0 {
            o.push('\n');
        }
        report(&mut o, r);
    }
    o
}

// --- run and campaign reports ----------------------------------------------

fn report(o: &mut String, r: &Report) {
    header(o, r);
    let mut noted = std::collections::HashSet::new();
    // Two or more variants: their primary metric's summary stands for the
    // tables unless every metric is asked for.
    let compact = r.summary.as_ref().is_some_and(|s| s.stands_for_tables) && !r.all_metrics;
    // Counters per operation are named in one line; their tables are
    // `--all-metrics`'.
    let shown = |g: &&Group| !compact && (r.all_metrics || !counters::is_metric(&g.metric));
    for g in r.groups.iter().filter(shown) {
        o.push('\n');
        // A benchmark's notes are per cell: print them under its first
        // metric's table only.
        let first = noted.insert(g.bench.clone());
        group(o, g, first, r.all_metrics);
        if let Some(rule) = r.stop() {
            precision_lines(o, g, rule.precision);
        }
    }
    if r.summary.is_none() && !r.all_metrics {
        also_recorded(o, r, compact);
    }
    if let (Some(v), None) = (&r.verdict, &r.summary) {
        // Two cells whose metrics differ have no summary to word it in.
        let _ = writeln!(o, "\nverdict (paired by round): {v}");
    }
    scaling(o, &r.scaling);
    failed(o, &r.failed);
    if !r.states.is_empty() {
        o.push_str("\nsystem states measured:\n");
        for s in &r.states {
            let parts: Vec<String> = s.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(o, "  {}", parts.join(", "));
        }
    }
    if !r.pending.is_empty() {
        let _ = writeln!(
            o,
            "\n{} cell(s) pending (see `kbench status PLAN`)",
            r.pending.len()
        );
    }
    if let Some(s) = &r.summary {
        o.push('\n');
        crate::report::compare::summary::text(o, s);
        if !r.all_metrics {
            also_recorded(o, r, compact);
        }
    }
    if let Some(fp) = r.fingerprint()
        && !r.warnings_shown
    {
        warnings(o, &fp.warnings());
    }
    if let Some(s) = r.summary.as_ref().filter(|s| !s.verdicts.is_empty()) {
        o.push('\n');
        crate::report::compare::summary::verdicts(o, s);
    }
}

/// The metrics the report leaves out, and how to see them: a compact
/// report's every metric but the first. Counters per operation (read by
/// default) never add a line: they are named (once, without `/op`) only
/// on a line printed anyway, and only where it still fits on one line.
fn also_recorded(o: &mut String, r: &Report, compact: bool) {
    let mut firsts: Vec<&str> = Vec::new();
    let mut others: Vec<&str> = Vec::new();
    let mut counted: Vec<&str> = Vec::new();
    for g in &r.groups {
        let name = g.metric.as_str();
        if !firsts.contains(&g.bench.as_str()) {
            firsts.push(&g.bench);
        } else if counters::is_metric(name) {
            let name = name.strip_suffix("/op").unwrap_or(name);
            if !counted.contains(&name) {
                counted.push(name);
            }
        } else if compact && !others.contains(&name) {
            others.push(name);
        }
    }
    if others.is_empty() {
        return;
    }
    let line = |parts: &str| format!("also recorded: {parts} (`--all-metrics`)");
    let mut text = line(&others.join(", "));
    let counted = match &counted[..] {
        [] => None,
        [one] => Some(format!("{one} per op")),
        [first, rest @ ..] => Some(format!("{first} and {} more counters per op", rest.len())),
    };
    if let Some(c) = counted {
        let with = line(&format!("{}; {c}", others.join(", ")));
        if with.chars().count() <= 80 {
            text = with;
        }
    }
    o.push_str(&wrapped("", &text, "  "));
}

/// The lines naming the run (or campaign), the machine and the settings,
/// each wrapped within 80 columns.
pub(crate) fn header(o: &mut String, r: &Report) {
    let mut line = |s: String| o.push_str(&wrapped("", &s, "  "));
    match &r.subject {
        Subject::Run(run) => line(format!(
            "run {} ({}) on {}, {}, {}",
            run.id,
            run.campaign.as_deref().unwrap_or("ad hoc"),
            run.host,
            crate::report::fmt::time(run.started),
            run.status
        )),
        Subject::Campaign { campaign, runs } => {
            line(format!(
                "campaign {} `{}` (plan hash {}), {} run(s)",
                campaign.id,
                campaign.name,
                campaign.hash_label(),
                runs.len()
            ));
            if let Some(last) = runs.last() {
                line(format!(
                    "latest run {} on {}, {}, {}",
                    last.id,
                    last.host,
                    crate::report::fmt::time(last.started),
                    last.status
                ));
            }
        }
    }
    if let Some(fp) = r.fingerprint() {
        // An import's machine is unknown: no zeros stand in for it.
        let cpus = if fp.threads == 0 {
            "CPUs unknown".to_string()
        } else {
            format!("{}s/{}c/{}t", fp.sockets, fp.cores, fp.threads)
        };
        let mem = if fp.memory_bytes == 0 {
            "memory unknown".to_string()
        } else {
            human::gib(fp.memory_bytes)
        };
        line(format!(
            "{} {} | {} | {cpus} | {mem}",
            fp.os,
            fp.kernel_release,
            fp.cpu_model.as_deref().unwrap_or("unknown CPU"),
        ));
    }
    let imported = r
        .fingerprint()
        .is_some_and(|fp| fp.os.starts_with("imported from"));
    if let Some(c) = r.config()
        && imported
    {
        // The other tool's sample time, warm-ups and order are not in
        // its file: unknown, not 0.
        line(format!(
            "samples {} (imported: sample time, warm-ups and order unknown)",
            c.samples
        ));
    } else if let Some(c) = r.config() {
        line(format!(
            "samples {} x {} s, warmup {}, seed {}",
            c.samples, c.sample_time, c.warmup, c.seed
        ));
        line(format!(
            "loop overhead {:.2} ns/iteration (not subtracted)",
            r.overhead_ns
        ));
    }
}

/// The noise warnings section, each warning wrapped within 80 columns.
pub(crate) fn warnings(o: &mut String, w: &[crate::system::Warning]) {
    if w.is_empty() {
        return;
    }
    o.push_str("\nnoise warnings:\n");
    for x in w {
        o.push_str(&wrapped("  - ", &x.to_string(), "    "));
    }
}

/// Failed samples, a line per cell with its last message (cut to 80
/// columns): a run whose samples all failed has no table to show.
fn failed(o: &mut String, cells: &[crate::report::FailedCell]) {
    if cells.is_empty() {
        return;
    }
    let n: usize = cells.iter().map(|c| c.count).sum();
    let _ = writeln!(o, "\nfailed samples: {n}, in {} cell(s):", cells.len());
    for c in cells {
        let line = format!("  {}: {} failed; last: {}", c.cell, c.count, c.last);
        let line: String = line.split_whitespace().collect::<Vec<_>>().join(" ");
        // Escaped before it is cut, so the cut line stays within 80 columns.
        let line = crate::term::visible(&line);
        let line = if line.chars().count() > 78 {
            let cut: String = line.chars().take(75).collect();
            format!("  {cut}...")
        } else {
            format!("  {line}")
        };
        let _ = writeln!(o, "{line}");
    }
}

pub(crate) use crate::term::wrapped;

/// A note under a table (placement, outliers, a benchmark's findings),
/// wrapped within 80 columns.
fn note_line(o: &mut String, text: &str) {
    o.push_str(&wrapped("  ", text, "    "));
}

/// A table's row labels as ` | `-separated columns, each as wide as its
/// name or widest value, ending with ` |`; empty without label columns.
fn label_cells(g: &Group, cells: &[String]) -> String {
    if cells.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = cells
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let w = g
                .rows
                .iter()
                .map(|r| r.labels[i].chars().count())
                .chain([g.columns[i].chars().count()])
                .max()
                .unwrap_or(1);
            format!("{c:<w$}")
        })
        .collect();
    format!("{} |", parts.join(" | "))
}

/// Whether the row labels fit beside ministat's columns within 80
/// columns; if not, the table numbers its rows and a legend names them.
fn labels_inline(g: &Group) -> bool {
    label_cells(g, &g.columns).chars().count() + n_width(g) + STAT_HEADER.len() - 4 <= WIDTH
}

/// Width of the `N` column beside labels: three digits, as ministat's
/// `%3d`, unless a count needs more.
fn n_width(g: &Group) -> usize {
    g.rows
        .iter()
        .map(|r| r.summary.n.to_string().len())
        .max()
        .unwrap_or(1)
        .max(3)
}

/// How the lines under a table name each row: its labels, or its number
/// in the legend.
fn row_names(g: &Group) -> Vec<String> {
    if labels_inline(g) {
        g.rows
            .iter()
            .map(|r| r.who(&g.bench).into_owned())
            .collect()
    } else {
        (1..=g.rows.len()).map(|i| format!("#{i}")).collect()
    }
}

fn group(o: &mut String, g: &Group, with_notes: bool, all_metrics: bool) {
    // `ns/op` and `ops/s` carry their unit; `real` or `user` do not.
    let unit = if g.metric == g.unit || g.metric.split('/').any(|p| p == g.unit) {
        String::new()
    } else {
        format!(" [{}]", g.unit)
    };
    o.push_str(&wrapped(
        "",
        &format!(
            "{}: {}{unit} ({})",
            g.bench,
            g.metric,
            direction_text(g.direction)
        ),
        "  ",
    ));
    let names = row_names(g);
    if g.columns.is_empty() {
        let _ = writeln!(o, "{STAT_HEADER}");
        for r in &g.rows {
            let _ = writeln!(o, "{:>4}{}", r.summary.n, stat_cols(&r.summary));
        }
    } else if labels_inline(g) {
        // Beside labels the N column is ministat's `%3d`, to stay in 80.
        let nw = n_width(g);
        let _ = writeln!(
            o,
            "{}{:>nw$}{}",
            label_cells(g, &g.columns),
            "N",
            &STAT_HEADER[4..]
        );
        for r in &g.rows {
            let _ = writeln!(
                o,
                "{}{:>nw$}{}",
                label_cells(g, &r.labels),
                r.summary.n,
                stat_cols(&r.summary)
            );
        }
    } else {
        // Labels too wide to sit beside ministat's columns: a numbered
        // legend above the table, as ministat names its data sets.
        for (r, name) in g.rows.iter().zip(&names) {
            let named: Vec<String> = g
                .columns
                .iter()
                .zip(&r.labels)
                .map(|(c, l)| format!("{c}={l}"))
                .collect();
            o.push_str(&wrapped(&format!("{name:<6}"), &named.join(", "), "      "));
        }
        let _ = writeln!(o, "{:<6}{STAT_HEADER}", "");
        for (r, name) in g.rows.iter().zip(&names) {
            let _ = writeln!(o, "{name:<6}{:>4}{}", r.summary.n, stat_cols(&r.summary));
        }
    }
    for (r, name) in g.rows.iter().zip(&names) {
        if let Some(c) = &r.processes {
            process_lines(o, c, name, &g.unit);
        }
    }
    for (r, name) in g.rows.iter().zip(&names) {
        if let Some(p) = &r.placement {
            note_line(o, &format!("placement [{name}]: {p}"));
        }
    }
    for (r, name) in g.rows.iter().zip(&names) {
        if r.outliers.is_empty() {
            continue;
        }
        let which: Vec<String> = r.outliers.iter().map(|i| format!("#{}", i + 1)).collect();
        note_line(
            o,
            &format!(
                "outliers [{name}]: sample {} of {} (modified z-score > 3.5; kept in the statistics)",
                which.join(", "),
                r.summary.n
            ),
        );
    }
    if with_notes {
        notes_lines(o, g, all_metrics);
    }
}

/// Most rows a table may have for its cells' notes to be printed; a big
/// matrix keeps them in the JSON report only.
const MAX_NOTED_ROWS: usize = 8;

/// Notes that are bookkeeping rather than findings: left to the JSON.
fn quiet_note(k: &str, all_metrics: bool) -> bool {
    // Which counters were read shows with their tables (`--all-metrics`)
    // and in the run's one warning; the note is printed beside them.
    k == "iterations" || (k == "counters" && !all_metrics)
}

/// What the benchmarks learnt while running (the pipe size the kernel
/// granted, the syscall path taken, per-task imbalance), under the table.
fn notes_lines(o: &mut String, g: &Group, all_metrics: bool) {
    let quiet_note = |k: &str| quiet_note(k, all_metrics);
    let noted = |r: &&CellSummary| r.notes.keys().any(|k| !quiet_note(k));
    if g.rows.len() > MAX_NOTED_ROWS || !g.rows.iter().any(|r| noted(&r)) {
        return;
    }
    for (r, name) in g.rows.iter().zip(row_names(g)) {
        if !noted(&r) {
            continue;
        }
        for (k, v) in r.notes.iter().filter(|(k, _)| !quiet_note(k)) {
            note_line(o, &format!("[{name}] {k}: {v}"));
        }
    }
}

/// Precision each cell reached in an adaptive run; cells that missed the
/// target are flagged.
fn precision_lines(o: &mut String, g: &Group, target: f64) {
    for (r, name) in g.rows.iter().zip(row_names(g)) {
        let flag = if r.precision_reached == Some(true) {
            ""
        } else {
            "  NOT REACHED"
        };
        note_line(
            o,
            &format!(
                "precision [{name}]: +/-{:.2}% of the mean at 95% after {} samples (target {}%){flag}",
                r.ci95_rel * 100.0,
                r.summary.n,
                fmt_g(target * 100.0, 0, 6)
            ),
        );
    }
}

// --- scaling tables ----------------------------------------------------------

fn ops(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.4}e9", x / 1e9)
    } else {
        format!("{x:.0}")
    }
}

/// The scaling tables; nothing when the report has no scale cells.
fn scaling(o: &mut String, tables: &[Scaling]) {
    if !tables.is_empty() {
        o.push_str(
            "\nscaling tables: ops/s = mean of the intervals (sd% = stddev/mean),\n\
             eff = ops(n) / (n * ops(1)), the per-task efficiency\n",
        );
    }
    for t in tables {
        o.push('\n');
        let ctx = if t.context.is_empty() {
            String::new()
        } else {
            format!(" [{}]", t.context.join(", "))
        };
        o.push_str(&wrapped("scaling: ", &format!("{}{ctx}", t.bench), "  "));
        let mut head = String::from("tasks");
        for s in &t.series {
            let _ = write!(
                head,
                " | {:>13} {:>5} {:>5}",
                format!("{} ops/s", short(&s.label())),
                "sd%",
                "eff"
            );
        }
        let _ = writeln!(o, "{head}");
        let mut all: Vec<u32> = t
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.tasks))
            .collect();
        all.sort_unstable();
        all.dedup();
        for n in all {
            let mut line = format!("{n:>5}");
            for s in &t.series {
                match s.points.iter().find(|p| p.tasks == n) {
                    Some(p) => {
                        let sd = if p.mean > 0.0 {
                            100.0 * p.stddev / p.mean
                        } else {
                            0.0
                        };
                        let _ = write!(
                            line,
                            " | {:>13} {:>5.1} {:>5.2}",
                            ops(p.mean),
                            sd,
                            p.efficiency
                        );
                    }
                    None => {
                        let _ = write!(line, " | {:>13} {:>5} {:>5}", "-", "", "");
                    }
                }
            }
            let _ = writeln!(o, "{line}");
        }
        let ns: Vec<usize> = t
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.n))
            .collect();
        if let (Some(lo), Some(hi)) = (ns.iter().min(), ns.iter().max()) {
            let n = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo}..{hi}")
            };
            let _ = writeln!(o, "  intervals per point: {n}");
        }
        if t.series.iter().all(|s| s.points.len() < 2) {
            continue; // one task count: no curve to judge
        }
        let flat: Vec<String> = t
            .series
            .iter()
            .map(|s| {
                let range = match (s.points.first(), s.points.last()) {
                    (Some(a), Some(b)) => format!("{}..{}", a.tasks, b.tasks),
                    _ => "-".into(),
                };
                let base = match s.points.first() {
                    Some(p) if p.tasks != 1 => format!(" (eff relative to {} tasks)", p.tasks),
                    _ => String::new(),
                };
                match s.flattens_at {
                    Some(n) => format!("{} at {n} tasks{base}", s.label()),
                    None => format!("{} not within {range} tasks{base}", s.label()),
                }
            })
            .collect();
        let _ = writeln!(
            o,
            "  flattens (eff < {FLATTEN_BELOW:.2}): {}",
            flat.join("; ")
        );
    }
}

fn short(mode: &str) -> &str {
    match mode {
        "processes" => "proc",
        "threads" => "thread",
        m => m,
    }
}

/// The variance components of a `--processes` cell.
fn process_lines(o: &mut String, c: &crate::stats::nested::Components, who: &str, unit: &str) {
    let [_, p, w] = c.shares();
    let iv = |i: Option<crate::stats::Interval>| {
        i.map(|i| {
            format!(
                "[{}, {}]",
                human::value(i.lo, unit, None, false),
                human::value(i.hi, unit, None, false)
            )
        })
        .unwrap_or_else(|| "-".into())
    };
    let f = c
        .process_p
        .map(|p| format!(", F test p = {}", fmt_p(p)))
        .unwrap_or_default();
    o.push_str(&crate::report::fmt::wrap(
        &format!(
            "  processes [{who}]: {} processes; variance between processes {:.0}%, within one {:.0}%{f}; 95% interval of the mean over {} {} (one-process analysis: {})",
            c.processes,
            p * 100.0,
            w * 100.0,
            c.term.label(),
            iv(c.interval),
            iv(c.naive_interval),
        ),
        WIDTH,
        "    ",
    ));
}
