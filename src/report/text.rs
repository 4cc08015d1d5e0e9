//! Plain text, ready to paste into e-mail: every [`Document`] as lines
//! within 80 columns where the data allows. Run reports give a header
//! naming the run and the machine, then one table per benchmark and metric
//! with ministat's columns (`N Min Max Median Avg Stddev`, `%3d %13.8g`)
//! and the factor values and swept parameters as the row label (like
//! `pti | pcid`); comparisons print ministat's own blocks byte for byte.

use std::fmt::Write;

use indexmap::IndexMap;

use super::compare::{Comparison, Row};
use super::render::Render;
use super::scale::{FLATTEN_BELOW, Scaling};
use super::{BenchInfo, CellSummary, Document, Group, Report, Subject, Sysinfo};
use crate::campaign::{CellState, Status};
use crate::ministat::{Version, difference_block};
use crate::record::Direction;
use crate::stats::Summary;
use crate::stats::cfmt::fmt_g;
use crate::stats::twosample::Shown;
use crate::store::RunRow;
use crate::system::counters;

/// ministat's header after its one-character symbol column.
const STAT_HEADER: &str =
    "   N           Min           Max        Median           Avg        Stddev";

pub fn render(doc: &Document<'_>) -> String {
    let mut o = String::new();
    match doc {
        Document::Reports(rs) => {
            for (i, r) in rs.iter().enumerate() {
                if i > 0 {
                    o.push('\n');
                }
                report(&mut o, r);
            }
        }
        Document::Runs(rows) => runs(&mut o, rows),
        Document::Compare(c) => compare(&mut o, c),
        Document::Status(s) => status(&mut o, s),
        Document::Sysinfo(s) => sysinfo(&mut o, s),
        Document::Benches(b) => benches(&mut o, b),
        Document::Bench(b) => bench_detail(&mut o, b),
        Document::Tables(t) => tables(&mut o, t),
        Document::History(h) => o.push_str(&h.text()),
        Document::PlanSize(p) => super::plan_size::text(&mut o, p),
        Document::Check(c) => o.push_str(&super::check::text(c)),
        Document::Explain(e) => o.push_str(&super::explain::text(e)),
        Document::Samples(t) => {
            o.push_str(&super::csv::render(doc).unwrap_or_else(|_| super::csv::header(t)))
        }
    }
    o
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn direction_text(d: Direction) -> String {
    d.to_string()
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
        super::summary::text(o, s);
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
        super::summary::verdicts(o, s);
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
            super::fmt::time(run.started),
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
                    super::fmt::time(last.started),
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
            gib(fp.memory_bytes)
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

/// ministat's five number columns, `%13.8g` each after a space.
fn stat_cols(s: &Summary) -> String {
    [s.min, s.max, s.median, s.mean, s.stddev]
        .iter()
        .map(|x| format!(" {}", fmt_g(*x, 13, 8)))
        .collect()
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

// --- the other documents -----------------------------------------------------

fn runs(o: &mut String, rows: &[RunRow]) {
    let _ = writeln!(
        o,
        "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  status",
        "id", "campaign", "host", "start", "cells", "samples"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  {}",
            r.id,
            r.campaign.as_deref().unwrap_or("-"),
            r.host,
            super::fmt::time(r.started),
            r.cells,
            r.samples,
            r.status
        );
        if !r.labels.is_empty() {
            let _ = writeln!(o, "{}", labels_line(&r.labels));
        }
    }
}

/// A run's labels under its row of `kbench runs`: `k=v` pairs, a commit
/// shortened to 12 digits, the line cut at 80 columns.
fn labels_line(labels: &crate::record::Labels) -> String {
    let pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            let v = if k == "commit" && v.len() > 12 && v.is_ascii() {
                &v[..12]
            } else {
                v.as_str()
            };
            format!("{k}={v}")
        })
        .collect();
    let line = format!("       {}", pairs.join(" "));
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(77).collect();
        format!("{cut}...")
    } else {
        line
    }
}

/// `kbench list`: a heading per family, then one line per benchmark:
/// name, first metric, and the start of its description.
fn benches(o: &mut String, list: &[BenchInfo]) {
    use crate::bench::catalogue::Family;
    let name_w = list.iter().map(|b| b.name.len()).max().unwrap_or(0);
    let metric = |b: &BenchInfo| {
        b.metrics
            .first()
            .map_or("", |m| m.name.as_str())
            .to_string()
    };
    let metric_w = list.iter().map(|b| metric(b).len()).max().unwrap_or(0);
    let mut first = true;
    for f in Family::ALL {
        let members: Vec<&BenchInfo> = list.iter().filter(|b| b.family == f).collect();
        if members.is_empty() {
            continue;
        }
        if !first {
            o.push('\n');
        }
        first = false;
        let _ = writeln!(o, "{}", f.as_str());
        for b in members {
            let head = format!("  {:<name_w$}  {:<metric_w$}  ", b.name, metric(b));
            let room = WIDTH.saturating_sub(head.chars().count());
            let _ = writeln!(o, "{head}{}", grid::clip(&b.description, room));
        }
    }
    if list.len() > 1 {
        let _ = writeln!(
            o,
            "\n`kbench list NAME` describes one: parameters, metrics, reference tool."
        );
    }
}

/// `kbench list NAME`: everything about one benchmark, within 80 columns.
fn bench_detail(o: &mut String, b: &BenchInfo) {
    let _ = writeln!(o, "{} ({}, {})", b.name, b.family.as_str(), b.kind.as_str());
    o.push_str(&wrapped("  ", &b.description, "  "));
    o.push_str("metrics:\n");
    for m in &b.metrics {
        let _ = writeln!(o, "  {} [{}], {}", m.name, m.unit, m.direction);
    }
    if let Some(r) = &b.reference {
        o.push_str(&wrapped("reference: ", r, "  "));
    }
    if b.params.is_empty() {
        o.push_str("parameters: none\n");
    } else {
        o.push_str("parameters:\n");
        for p in &b.params {
            let default = p.default.as_deref().unwrap_or("none");
            let _ = writeln!(o, "  {} = {} (default {})", p.name, p.ty, default);
            o.push_str(&wrapped("      ", &p.help, "      "));
        }
    }
    let example = match b.params.iter().find(|p| p.default.is_some()) {
        Some(p) => format!(
            "{}:{}={}",
            b.name,
            p.name,
            p.default.as_deref().unwrap_or_default()
        ),
        None => b.name.clone(),
    };
    let _ = writeln!(o, "example: kbench run {example}");
}

fn sysinfo(o: &mut String, s: &Sysinfo) {
    let fp = &s.fingerprint;
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut kv = |k: &str, v: String| {
        o.push_str(&wrapped(&format!("{k:<16} "), &v, &" ".repeat(17)));
    };
    kv("host", fp.hostname.clone());
    kv("os", format!("{} ({})", fp.os, opt(&fp.os_release)));
    kv(
        "kernel",
        format!("{} {}", fp.kernel_release, fp.kernel_version),
    );
    kv("cmdline", opt(&fp.cmdline));
    kv("cpu", opt(&fp.cpu_model));
    let num = |v: Option<u32>| v.map_or("?".into(), |v| v.to_string());
    kv(
        "cpu id",
        format!(
            "{} family {} model {} stepping {}",
            opt(&fp.cpu_vendor),
            num(fp.cpu_family),
            num(fp.cpu_model_number),
            num(fp.cpu_stepping)
        ),
    );
    kv("microcode", opt(&fp.microcode));
    kv(
        "topology",
        format!(
            "{} socket(s), {} core(s), {} thread(s), online {}, SMT {}",
            fp.sockets,
            fp.cores,
            fp.threads,
            fp.online_cpus,
            opt(&fp.smt)
        ),
    );
    kv("numa nodes", fp.numa_nodes.to_string());
    kv("memory", gib(fp.memory_bytes));
    kv(
        "cpufreq",
        format!(
            "driver {}, governor {}",
            opt(&fp.cpufreq_driver),
            opt(&fp.governor)
        ),
    );
    kv(
        "boost",
        fp.boost
            .map_or("unknown".into(), |b| if b { "on" } else { "off" }.into()),
    );
    kv("thp", opt(&fp.thp));
    kv("clocksource", opt(&fp.clocksource));
    kv(
        "hypervisor",
        fp.hypervisor.clone().unwrap_or_else(|| "none".into()),
    );
    kv(
        "load average",
        format!("{} {} {}", fp.loadavg[0], fp.loadavg[1], fp.loadavg[2]),
    );
    o.push_str("vulnerabilities:\n");
    for (k, v) in &fp.vulnerabilities {
        o.push_str(&wrapped(&format!("  {k:<26} "), v, &" ".repeat(29)));
    }
    if s.warnings.is_empty() {
        o.push_str("noise warnings: none\n");
    } else {
        o.push_str("noise warnings:\n");
        for w in &s.warnings {
            o.push_str(&wrapped("  - ", &w.to_string(), "    "));
        }
    }
}

fn status_cells(o: &mut String, indent: &str, cells: &[&CellState]) {
    for c in cells {
        let boots = c
            .boots
            .map(|(b, w)| format!(", {b}/{w} boots"))
            .unwrap_or_default();
        let _ = writeln!(
            o,
            "{indent}{} ({}/{} samples{boots})",
            c.label, c.best, c.want
        );
    }
}

fn status(o: &mut String, st: &Status) {
    let arg = &st.plan_arg;
    match (&st.campaign, &st.edited_since) {
        (Some(c), _) => {
            let _ = writeln!(
                o,
                "campaign {} `{}` (plan hash {}), {} run(s)",
                c.id,
                c.name,
                c.hash_label(),
                st.runs
            );
        }
        (None, Some(old)) => {
            let _ = writeln!(
                o,
                "plan `{}` changed since campaign {} started (plan hash {}): `kbench run {arg}` refuses it until the edit is undone, or starts a new campaign with --force",
                st.plan,
                old.id,
                old.hash_label()
            );
        }
        (None, None) => {
            let _ = writeln!(
                o,
                "campaign `{}`: not started (`kbench run {arg}` starts it)",
                st.plan
            );
        }
    }
    if !st.readings.is_empty() {
        let now: Vec<String> = st
            .readings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(o, "system now: {}", now.join(", "));
    }
    let done: Vec<&CellState> = st.cells.iter().filter(|c| c.done()).collect();
    let now: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && c.runnable)
        .collect();
    let later: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && !c.runnable)
        .collect();
    let _ = writeln!(
        o,
        "{} cells: {} done, {} to run now, {} pending another system state",
        st.cells.len(),
        done.len(),
        now.len(),
        later.len()
    );
    if !done.is_empty() {
        let _ = writeln!(o, "\ndone:");
        status_cells(o, "  ", &done);
    }
    if !now.is_empty() {
        let _ = writeln!(o, "\nto run now (`kbench run {arg}`):");
        status_cells(o, "  ", &now);
    }
    if later.is_empty() {
        return;
    }
    let _ = writeln!(o, "\npending, by the system state they need:");
    let mut groups: Vec<(&[String], Vec<&CellState>)> = Vec::new();
    for c in &later {
        match groups.iter_mut().find(|(k, _)| *k == c.needs.as_slice()) {
            Some((_, v)) => v.push(c),
            None => groups.push((&c.needs, vec![c])),
        }
    }
    for (needs, cells) in groups {
        let _ = writeln!(o, "  needs {}", needs.join("; "));
        let _ = writeln!(o, "    now: {}", cells[0].unmet.join(", "));
        status_cells(o, "    ", &cells);
    }
    match &st.reboot {
        Some(r) => {
            let _ = writeln!(o, "\nto arm the next boot: {r}");
        }
        None => {
            let _ = writeln!(
                o,
                "\n(no [reboot] command in the plan: change the boot options by hand)"
            );
        }
    }
    let _ = writeln!(
        o,
        "after the reboot, `kbench run {arg}` resumes; `kbench status {arg} --resume-unit` prints a unit that does it at boot"
    );
}

// --- comparisons -------------------------------------------------------------

const SYMBOL: [char; super::compare::MAX_OPERANDS] = ['x', '+', '*', '%', '#', '@', 'O'];

fn pct(x: f64) -> String {
    super::compare::verdict::signed(x)
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
fn design_words(v: &super::compare::Versus, r: &Row, family: usize, adjust: &str) -> String {
    if let Some(g) = &v.degenerate {
        return g.to_string();
    }
    let Some(d) = &v.design else {
        return String::new();
    };
    let words = super::compare::verdict::phrase(d.change(), r.direction, &r.metric, &r.unit);
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
    o.push_str(&super::fmt::wrap(
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
            o.push_str(&super::fmt::wrap(&line, WIDTH, "    "));
        }
        let vs = if c.operands.len() > 2 {
            format!(" {} vs x", SYMBOL[j + 1])
        } else {
            String::new()
        };
        let words = design_words(v, r, r.family, c.adjust.label());
        if !words.is_empty() {
            o.push_str(&super::fmt::wrap(
                &format!("design{vs}: {words}"),
                WIDTH,
                "    ",
            ));
        }
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
        let vs = if c.operands.len() > 2 {
            format!(" {}", c.operands[j + 1])
        } else {
            String::new()
        };
        let words = design_words(v, r, r.family, c.adjust.label());
        if !words.is_empty() {
            o.push_str(&super::fmt::wrap(
                &format!("design{vs}: {words}"),
                WIDTH,
                "    ",
            ));
        }
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
        comparability(o, k, &symbols);
    }
    if !c.verdicts.is_empty() {
        o.push('\n');
    }
    for v in &c.verdicts {
        o.push_str(&super::fmt::wrap(&v.sentence, WIDTH, "  "));
    }
}

fn compare(o: &mut String, c: &Comparison) {
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
        let words = super::compare::verdict::phrase(g.change, g.direction, &g.unit, &g.unit);
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
        o.push_str(&super::fmt::wrap(
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

/// Which recorded facts differ between the operands, and a warning for
/// each difference not declared with `--expect`.
pub(crate) fn comparability(
    o: &mut String,
    k: &super::comparability::Comparability,
    symbols: &[String],
) {
    for (i, l) in k.lines(symbols).into_iter().enumerate() {
        let (l, indent) = if i == 0 {
            (l, "  ")
        } else {
            (format!("  {l}"), "      ")
        };
        o.push_str(&super::fmt::wrap(&l, WIDTH, indent));
    }
    for w in &k.warnings {
        o.push_str(&super::fmt::wrap(&format!("warning: {w}"), WIDTH, "  "));
    }
}

// --- layouts (table.rs) ------------------------------------------------------

use super::fmt::human;
use super::grid::{self, Panel};
use super::push_unique;
use super::table::{Column, SystemBlock, Table, TableDoc, Value};
use crate::plan::report::TableKind;

use super::fmt::WIDTH;

/// One value as text: human units, a `*` when the change is significant.
pub fn cell_text(v: &Value, c: &Column, panel: Panel, unicode: bool) -> String {
    match v {
        Value::Mean { mean, half, .. } => {
            let s = match &c.shown_unit {
                Some(u) => human::number_in(*mean, &c.unit, *half, u, unicode),
                None => human::value(*mean, &c.unit, *half, unicode),
            };
            match half {
                Some(h) if *mean != 0.0 && h.is_finite() => {
                    let pm = if unicode { "±" } else { "+/-" };
                    format!("{s} {pm}{:.1}%", 100.0 * h / mean.abs())
                }
                _ => s,
            }
        }
        Value::Change {
            pct,
            lo,
            hi,
            significant,
            unmeasured,
            ..
        } => {
            let half = lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
            format!(
                "{}{}",
                human::percent(*pct, half),
                mark(*significant, *unmeasured)
            )
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
            Panel::Means => mean.map_or("-".into(), |m| human::value(m, &c.unit, *half, unicode)),
            Panel::Main => {
                let h = lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
                format!(
                    "{}{}",
                    human::ratio(*ratio, h),
                    mark(*significant, *unmeasured)
                )
            }
        },
    }
}

/// `*` significant, `?` not judged (a level with one replicate a side).
fn mark(significant: bool, unmeasured: Option<crate::stats::design::Level>) -> &'static str {
    match (significant, unmeasured) {
        (true, _) => "*",
        (false, Some(_)) => "?",
        (false, None) => " ",
    }
}

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
        .filter(|(k, _)| t.kind != TableKind::Matrix || k != "revision")
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    if !section.is_empty() {
        let _ = write!(head, " ({})", section.join(", "));
    }
    o.push_str(&super::fmt::wrap(&head, WIDTH, "  "));
    o.push_str(hardware);
    for l in &t.legend {
        o.push_str(&super::fmt::wrap(l, WIDTH, "  "));
    }
    if !t.constant.is_empty() {
        let c: Vec<String> = t.constant.iter().map(|(k, v)| format!("{k}={v}")).collect();
        o.push_str(&super::fmt::wrap(
            &format!("all cells: {}", c.join(", ")),
            WIDTH,
            "  ",
        ));
    }
    if t.kind == TableKind::Matrix {
        let d: Vec<String> = t
            .cols
            .iter()
            .map(|c| format!("{}: {}", c.metric, c.direction))
            .collect();
        o.push_str(&super::fmt::wrap(&d.join("; "), WIDTH, "  "));
    }
}

fn layout_table(o: &mut String, t: &Table, d: &TableDoc, hardware: &str) {
    let unicode = d.unicode;
    table_head(o, t, hardware);
    o.push('\n');
    let rule = '-';
    if t.kind == crate::plan::report::TableKind::Ratio && t.metric.is_some() {
        o.push_str("values:\n");
        let g = grid::of_table(t, Panel::Means, &|v, c| {
            cell_text(v, c, Panel::Means, unicode)
        });
        o.push_str(&g.text(WIDTH, rule));
        let _ = writeln!(o, "\nnormalised to {}:", t.cols[0].label);
    }
    let g = grid::of_table(t, Panel::Main, &|v, c| {
        cell_text(v, c, Panel::Main, unicode)
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
        o.push_str(&super::fmt::wrap(
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
fn scaling_text(o: &mut String, s: &super::scale::Scaling, unicode: bool) {
    let mut head = format!("{}: ops/s by tasks", s.bench);
    if !s.context.is_empty() {
        let _ = write!(head, " ({})", s.context.join(", "));
    }
    o.push_str(&super::fmt::wrap(&head, WIDTH, "  "));
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
    o.push_str(&super::fmt::wrap(
        &format!("flattens (eff < {FLATTEN_BELOW:.2}): {}", flat.join("; ")),
        WIDTH,
        "  ",
    ));
    for w in &s.warnings {
        o.push_str(&super::fmt::wrap(&format!("warning: {w}"), WIDTH, "  "));
    }
}

fn tables(o: &mut String, d: &TableDoc) {
    for t in &d.title {
        o.push_str(&wrapped("", t, "  "));
    }
    let mut sections = Sections::of(d);
    for t in &d.tables {
        o.push('\n');
        let hardware = sections.enter(o, t);
        layout_table(o, t, d, &hardware);
    }
    if d.kind == crate::plan::report::TableKind::Scaling || d.tables.is_empty() {
        for s in &d.scaling {
            o.push('\n');
            scaling_text(o, s, d.unicode);
        }
    }
    if !d.skipped.is_empty() {
        o.push('\n');
        for s in &d.skipped {
            o.push_str(&super::fmt::wrap(&format!("no table: {s}"), WIDTH, "  "));
        }
    }
    if let Some(k) = &d.comparability {
        o.push('\n');
        let names: Vec<String> = k.operands.iter().map(|n| format!("{n}:")).collect();
        comparability(o, k, &names);
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
            if let Some(h) = super::table::section_value(t, "host") {
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
        if t.kind != TableKind::Matrix {
            return String::new();
        }
        let rev = super::table::section_value(t, "revision");
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
        let Some(host) = super::table::section_value(t, "host") else {
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
    o.push_str(&super::fmt::wrap(
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
        o.push_str(&super::fmt::wrap(
            &format!(
                "p adjusted ({}, {}) over {}; each interval is taken at the level its adjusted p is decided at, so `~` and the interval agree",
                c.adjust.label(),
                c.adjust.controls(),
                families(c)
            ),
            WIDTH,
            "  ",
        ));
    }
    for l in &notes.notes {
        o.push_str(&super::fmt::wrap(l, WIDTH, "    "));
    }
    for l in &notes.powers {
        o.push_str(&super::fmt::wrap(l, WIDTH, "    "));
    }
    for (bench, common) in &shared {
        if !common.is_empty() {
            o.push_str(&super::fmt::wrap(
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
    (r, v): (&Row, &super::compare::Versus),
    (name, label): (&str, &str),
    sn: &mut SummaryNotes,
) -> (Vec<String>, Vec<String>) {
    let contenders = c.operands.len() > 2;
    let adjusted = c.family > 1;
    // Fewer digits for large changes: the row stays within 80.
    let short = super::compare::verdict::signed;
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
        push_unique(&mut sn.notes, format!("? {}", l.unmeasured()));
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

/// The families p is adjusted over: `a family of 4 tests`, or the
/// primary metrics' and one per other metric.
pub(crate) fn families(c: &Comparison) -> String {
    let keys = super::compare::family_keys(&c.rows);
    if keys.iter().all(|k| k.is_empty()) {
        format!("a family of {} tests", c.family)
    } else {
        format!(
            "a family per metric (the primary metrics one; at most {} tests)",
            c.family
        )
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
    o.push_str(&super::fmt::wrap(
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

/// A p-value with the digits it needs: `0.034`, `2e-06`.
fn fmt_p(p: f64) -> String {
    if p >= 0.001 || p == 0.0 {
        format!("{p:.3}")
    } else {
        format!("{p:.0e}")
    }
}
