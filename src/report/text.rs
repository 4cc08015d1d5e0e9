//! Plain text, ready to paste into e-mail: every [`Document`] as lines
//! within 80 columns where the data allows. Run reports give a header
//! naming the run and the machine, then one table per benchmark and metric
//! with ministat's columns (`N Min Max Median Avg Stddev`, `%3d %13.8g`)
//! and the factor values and swept parameters as the row label (like
//! `pti | pcid`); comparisons print ministat's own blocks byte for byte.

use std::fmt::Write;

use indexmap::IndexMap;

use super::compare::{Comparison, Detail, Row, Test};
use super::scale::{FLATTEN_BELOW, Scaling};
use super::{BenchInfo, CellSummary, Document, Group, Report, Subject, Sysinfo};
use crate::ministat::{Version, difference_block};
use crate::record::Direction;
use crate::runner::campaign::{CellState, Status};
use crate::stats::Summary;
use crate::stats::cfmt::fmt_g;
use crate::store::RunRow;

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
        Document::Tables(t) => tables(&mut o, t),
        Document::History(h) => o.push_str(&super::history::text(h)),
        Document::PlanSize(p) => super::plan_size::text(&mut o, p),
        Document::Samples(t) => {
            o.push_str(&super::csv::render(doc).unwrap_or_else(|_| super::csv::header(t)))
        }
    }
    o
}

pub fn fmt_time(t: f64) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| t.to_string())
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

fn direction_text(d: Direction) -> String {
    d.to_string()
}

// --- run and campaign reports ----------------------------------------------

fn report(o: &mut String, r: &Report) {
    match &r.subject {
        Subject::Run(run) => {
            let _ = writeln!(
                o,
                "run {} ({}) on {}, {}, {}",
                run.id,
                run.campaign.as_deref().unwrap_or("ad hoc"),
                run.host,
                fmt_time(run.started),
                run.status
            );
        }
        Subject::Campaign { campaign, runs } => {
            let _ = writeln!(
                o,
                "campaign {} `{}` (plan hash {}), {} run(s)",
                campaign.id,
                campaign.name,
                campaign.hash_label(),
                runs.len()
            );
            if let Some(last) = runs.last() {
                let _ = writeln!(
                    o,
                    "latest run {} on {}, {}, {}",
                    last.id,
                    last.host,
                    fmt_time(last.started),
                    last.status
                );
            }
        }
    }
    if let Some(fp) = r.fingerprint() {
        let _ = writeln!(
            o,
            "{} {} | {} | {}s/{}c/{}t | {}",
            fp.os,
            fp.kernel_release,
            fp.cpu_model.as_deref().unwrap_or("unknown CPU"),
            fp.sockets,
            fp.cores,
            fp.threads,
            gib(fp.memory_bytes)
        );
    }
    if let Some(c) = r.config() {
        let _ = writeln!(
            o,
            "samples {} x {} s, warmup {}, seed {}, loop overhead {:.2} ns/iteration (not subtracted)",
            c.samples, c.sample_time, c.warmup, c.seed, r.overhead_ns
        );
    }
    let mut noted = std::collections::HashSet::new();
    for g in &r.groups {
        o.push('\n');
        // A benchmark's notes are per cell: print them under its first
        // metric's table only.
        let first = noted.insert(g.bench.clone());
        group(o, g, first);
        if let Some(rule) = r.stop() {
            precision_lines(o, g, rule.precision);
        }
    }
    if let Some(v) = &r.verdict {
        let names: Vec<String> = r
            .groups
            .iter()
            .flat_map(|g| g.rows.iter().map(|x| x.labels.join(" | ")))
            .collect();
        let _ = writeln!(
            o,
            "\nverdict ({} vs {}, Welch 99% interval at each look): {v}",
            names.first().map_or("A", |s| s.as_str()),
            names.get(1).map_or("B", |s| s.as_str())
        );
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
    if let Some(fp) = r.fingerprint() {
        let w = fp.warnings();
        if !w.is_empty() {
            o.push_str("\nnoise warnings:\n");
            for x in w {
                let _ = writeln!(o, "  - {x}");
            }
        }
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

fn group(o: &mut String, g: &Group, with_notes: bool) {
    // `ns/op` and `ops/s` carry their unit; `real` or `user` do not.
    let unit = if g.metric == g.unit || g.metric.split('/').any(|p| p == g.unit) {
        String::new()
    } else {
        format!(" [{}]", g.unit)
    };
    let _ = writeln!(
        o,
        "{}: {}{unit} ({})",
        g.bench,
        g.metric,
        direction_text(g.direction)
    );
    // Label columns: each as wide as its name or widest value.
    let widths: Vec<usize> = g
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            g.rows
                .iter()
                .map(|r| r.labels[i].len())
                .chain([c.len()])
                .max()
                .unwrap_or(1)
        })
        .collect();
    let label = |cells: &[String]| -> String {
        if cells.is_empty() {
            return String::new();
        }
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        format!("{} |", parts.join(" | "))
    };
    let head = label(&g.columns);
    let _ = writeln!(o, "{head}{STAT_HEADER}");
    for r in &g.rows {
        let _ = writeln!(
            o,
            "{}{:>4}{}",
            label(&r.labels),
            r.summary.n,
            stat_cols(&r.summary)
        );
    }
    for r in g.rows.iter() {
        if let Some(c) = &r.processes {
            process_lines(o, c, &r.who(&g.bench), &g.unit);
        }
    }
    for r in g.rows.iter() {
        if let Some(p) = &r.placement {
            let _ = writeln!(o, "  placement [{}]: {p}", r.who(&g.bench));
        }
    }
    for r in g.rows.iter().filter(|r| !r.outliers.is_empty()) {
        let which: Vec<String> = r.outliers.iter().map(|i| format!("#{}", i + 1)).collect();
        let _ = writeln!(
            o,
            "  outliers [{}]: sample {} of {} (modified z-score > 3.5; kept in the statistics)",
            r.who(&g.bench),
            which.join(", "),
            r.summary.n
        );
    }
    if with_notes {
        notes_lines(o, g);
    }
}

/// Most rows a table may have for its cells' notes to be printed; a big
/// matrix keeps them in the JSON report only.
const MAX_NOTED_ROWS: usize = 8;

/// Notes that are bookkeeping rather than findings: left to the JSON.
fn quiet_note(k: &str) -> bool {
    k == "iterations"
}

/// What the benchmarks learnt while running (the pipe size the kernel
/// granted, the syscall path taken, per-task imbalance), under the table.
fn notes_lines(o: &mut String, g: &Group) {
    let noted = |r: &&CellSummary| r.notes.keys().any(|k| !quiet_note(k));
    if g.rows.len() > MAX_NOTED_ROWS || !g.rows.iter().any(|r| noted(&r)) {
        return;
    }
    for r in g.rows.iter().filter(noted) {
        for (k, v) in r.notes.iter().filter(|(k, _)| !quiet_note(k)) {
            let _ = writeln!(o, "  [{}] {k}: {v}", r.who(&g.bench));
        }
    }
}

/// Precision each cell reached in an adaptive run; cells that missed the
/// target are flagged.
fn precision_lines(o: &mut String, g: &Group, target: f64) {
    for r in &g.rows {
        let flag = if r.precision_reached == Some(true) {
            ""
        } else {
            "  NOT REACHED"
        };
        let _ = writeln!(
            o,
            "  precision [{}]: +/-{:.2}% of the mean at 95% after {} samples (target {}%){flag}",
            r.who(&g.bench),
            r.ci95_rel * 100.0,
            r.summary.n,
            fmt_g(target * 100.0, 0, 6)
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
        let _ = writeln!(o, "scaling: {}{ctx}", t.bench);
        let mut head = String::from("tasks");
        for s in &t.series {
            let _ = write!(
                head,
                " | {:>13} {:>5} {:>5}",
                format!("{} ops/s", short(&s.mode)),
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
                    Some(n) => format!("{} at {n} tasks{base}", s.mode),
                    None => format!("{} not within {range} tasks{base}", s.mode),
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
            fmt_time(r.started),
            r.cells,
            r.samples,
            r.status
        );
    }
}

fn benches(o: &mut String, list: &[BenchInfo]) {
    for b in list {
        let metrics: Vec<String> = b
            .metrics
            .iter()
            .map(|m| format!("{} [{}], {}", m.name, m.unit, m.direction))
            .collect();
        let _ = writeln!(o, "{} ({:?}): {}", b.name, b.kind, metrics.join("; "));
        let _ = writeln!(o, "    {}", b.description);
        for p in &b.params {
            let _ = writeln!(
                o,
                "    {:<12} {:<24} default {:<10} {}",
                p.name,
                p.ty,
                p.default.as_deref().unwrap_or("(none)"),
                p.help
            );
        }
    }
}

fn sysinfo(o: &mut String, s: &Sysinfo) {
    let fp = &s.fingerprint;
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(o, "{k:<16} {v}");
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
        let _ = writeln!(o, "  {k:<26} {v}");
    }
    if s.warnings.is_empty() {
        o.push_str("noise warnings: none\n");
    } else {
        o.push_str("noise warnings:\n");
        for w in &s.warnings {
            let _ = writeln!(o, "  - {w}");
        }
    }
}

fn status_cells(o: &mut String, indent: &str, cells: &[&CellState]) {
    for c in cells {
        let _ = writeln!(o, "{indent}{} ({}/{} samples)", c.label, c.best, c.want);
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
    format!("{:+.2}%", x * 100.0)
}

/// One compared row: ministat's table, then each contender's test block.
fn compare_block(o: &mut String, c: &Comparison, r: &Row) {
    let cell = if r.cell.is_empty() {
        String::new()
    } else {
        // `, ` so a long cell wraps within the width.
        format!(" [{}]", r.cell.replace(',', ", "))
    };
    o.push_str(&grid::wrap(
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
    let conf = c.confidence;
    for (j, v) in r.versus.iter().enumerate() {
        let mut line = String::new();
        let few = v.too_few.map(|t| format!(" ({t})")).unwrap_or_default();
        match &v.detail {
            Detail::Student(d) => o.push_str(&difference_block(
                Version::FreeBsdMain,
                r.stats[0].moments,
                r.stats[j + 1].moments,
                d.level,
            )),
            Detail::Welch(t) => {
                let _ = write!(
                    line,
                    "Welch's t at {conf}% confidence: {} [{}, {}], t = {}, df = {}, p = {}{few}",
                    pct(v.delta),
                    pct(t.relative.lo),
                    pct(t.relative.hi),
                    fmt_g(t.statistic, 0, 6),
                    fmt_g(t.df, 0, 4),
                    fmt_g(t.p, 0, 4),
                );
            }
            Detail::Mwu(u) => {
                let _ = write!(
                    line,
                    "Mann-Whitney U at {conf}% confidence: U = {}, p = {} ({:?}), shift (Hodges-Lehmann) = {}{few}",
                    fmt_g(u.statistic, 0, 6),
                    fmt_g(u.p, 0, 4),
                    u.method,
                    fmt_g(u.shift, 0, 6),
                );
            }
            Detail::Bootstrap(b) => {
                let _ = write!(
                    line,
                    "Bootstrap ({} resamples, seed 1) ratio of means at {conf}% confidence: {} [{}, {}], p ~ {}{few}",
                    b.resamples,
                    fmt_g(b.statistic, 0, 6),
                    fmt_g(b.interval.lo, 0, 6),
                    fmt_g(b.interval.hi, 0, 6),
                    fmt_g(b.p, 0, 3)
                );
            }
        }
        if !line.is_empty() {
            o.push_str(&grid::wrap(&line, WIDTH, "    "));
        }
    }
}

fn compare(o: &mut String, c: &Comparison) {
    for r in &c.rows {
        compare_block(o, c, r);
        o.push('\n');
    }
    summary_lines(o, c);
    if !c.geomean.is_empty() {
        o.push_str("\ngeomean per unit (improvement: positive = better):\n");
    }
    for g in &c.geomean {
        let iv = g
            .improvement_interval
            .map(|[l, h]| format!(" [{}, {}]", pct(l), pct(h)))
            .unwrap_or_default();
        let word = if g.improvement > 0.0 {
            "better"
        } else if g.improvement < 0.0 {
            "worse"
        } else {
            "same"
        };
        o.push_str(&grid::wrap(
            &format!(
                "  {} ({}), {}: {} {word}{iv}, ratio {} over {} row(s)",
                g.unit,
                direction_text(g.direction),
                g.name,
                pct(g.improvement),
                fmt_g(g.ratio, 0, 6),
                g.k
            ),
            WIDTH,
            "    ",
        ));
    }
    for u in &c.unpaired {
        let _ = writeln!(o, "unpaired (not in every operand): {u}");
    }
    if let Some(k) = &c.comparability {
        o.push('\n');
        let symbols: Vec<String> = SYMBOL
            .iter()
            .take(c.operands.len())
            .map(|s| s.to_string())
            .collect();
        comparability(o, k, &symbols);
    }
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
        o.push_str(&grid::wrap(&l, WIDTH, indent));
    }
    for w in &k.warnings {
        o.push_str(&grid::wrap(&format!("warning: {w}"), WIDTH, "  "));
    }
}

// --- layouts (table.rs) ------------------------------------------------------

use super::grid::{self, Panel};
use super::human;
use super::table::{Column, SystemBlock, Table, TableDoc, Value};

/// Widest line of a layout's text.
pub const WIDTH: usize = 80;

/// One value as text: human units, a `*` when the change is significant.
pub fn cell_text(v: &Value, c: &Column, panel: Panel, unicode: bool) -> String {
    match v {
        Value::Mean { mean, half, .. } => {
            let s = human::value(*mean, &c.unit, *half, unicode);
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
            ..
        } => {
            let half = (hi - lo) / 2.0;
            let mark = if *significant { "*" } else { " " };
            format!("{}{mark}", human::percent(*pct, Some(half)))
        }
        Value::Ratio {
            mean,
            half,
            ratio,
            lo,
            hi,
            significant,
        } => match panel {
            Panel::Means => mean.map_or("-".into(), |m| human::value(m, &c.unit, *half, unicode)),
            Panel::Main => {
                let h = lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
                let mark = if *significant { "*" } else { " " };
                format!("{}{mark}", human::ratio(*ratio, h))
            }
        },
    }
}

fn table_head(o: &mut String, t: &Table) {
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
    if !t.section.is_empty() {
        let s: Vec<String> = t.section.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(head, " ({})", s.join(", "));
    }
    o.push_str(&grid::wrap(&head, WIDTH, "  "));
    for l in &t.legend {
        o.push_str(&grid::wrap(l, WIDTH, "  "));
    }
    if !t.constant.is_empty() {
        let c: Vec<String> = t.constant.iter().map(|(k, v)| format!("{k}={v}")).collect();
        o.push_str(&grid::wrap(
            &format!("all cells: {}", c.join(", ")),
            WIDTH,
            "  ",
        ));
    }
    if t.kind == crate::plan::report::TableKind::Matrix {
        let d: Vec<String> = t
            .cols
            .iter()
            .map(|c| format!("{}: {}", c.metric, c.direction))
            .collect();
        o.push_str(&grid::wrap(&d.join("; "), WIDTH, "  "));
    }
}

fn layout_table(o: &mut String, t: &Table, unicode: bool) {
    table_head(o, t);
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
    for d in &t.diffs {
        let _ = writeln!(o, "\n{}: {} vs {}", d.metric, d.baseline, d.contender);
        let _ = writeln!(o, "x {}\n+ {}", d.baseline, d.contender);
        o.push_str(&difference_block(Version::FreeBsdMain, d.a, d.b, d.level));
    }
}

fn system_text(o: &mut String, s: &SystemBlock) {
    let _ = writeln!(o, "System configuration ({}):", s.host);
    let mut kv = |k: &str, v: String| {
        o.push_str(&grid::wrap(
            &format!("  {k:<11} {v}"),
            WIDTH,
            &" ".repeat(14),
        ));
    };
    for (k, v) in s.rows() {
        kv(&format!("{k}:"), v);
    }
    if s.warnings.is_empty() {
        kv("Noise:", "no warning".into());
    }
}

/// Scaling curves with human units: per testcase and context, tasks down,
/// a group per mode (ops/s and efficiency).
fn scaling_text(o: &mut String, s: &super::scale::Scaling, unicode: bool) {
    let mut head = format!("{}: ops/s by tasks", s.bench);
    if !s.context.is_empty() {
        let _ = write!(head, " ({})", s.context.join(", "));
    }
    o.push_str(&grid::wrap(&head, WIDTH, "  "));
    o.push_str("eff = ops(n) / (n * ops(first)), the per-task efficiency\n\n");
    let g = grid::of_scaling(s, unicode);
    o.push_str(&g.text(WIDTH, '-'));
    let flat: Vec<String> = s
        .series
        .iter()
        .map(|x| match x.flattens_at {
            Some(n) => format!("{} at {n} tasks", x.mode),
            None => format!("{} not within the tasks measured", x.mode),
        })
        .collect();
    o.push_str(&grid::wrap(
        &format!("flattens (eff < {FLATTEN_BELOW:.2}): {}", flat.join("; ")),
        WIDTH,
        "  ",
    ));
}

fn tables(o: &mut String, d: &TableDoc) {
    for t in &d.title {
        let _ = writeln!(o, "{t}");
    }
    for t in &d.tables {
        o.push('\n');
        layout_table(o, t, d.unicode);
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
            o.push_str(&grid::wrap(&format!("no table: {s}"), WIDTH, "  "));
        }
    }
    if let Some(k) = &d.comparability {
        o.push('\n');
        let names: Vec<String> = k.operands.iter().map(|n| format!("{n}:")).collect();
        comparability(o, k, &names);
    }
    for s in &d.systems {
        o.push('\n');
        system_text(o, s);
    }
}

/// The comparison's summary within 80 columns: a row per cell and
/// contender, values in human units, p for every test; labels show only
/// what varies between the rows, and long ones move to a numbered legend.
fn summary_lines(o: &mut String, c: &Comparison) {
    let test = match c.test {
        Test::Student => "Student",
        Test::Welch => "Welch",
        Test::Mwu => "Mwu",
        Test::Bootstrap => "Bootstrap",
    };
    o.push_str(&grid::wrap(
        &format!(
            "summary ({test} at {}% confidence; `~` = no significant difference; baseline {}):",
            c.confidence, c.operands[0]
        ),
        WIDTH,
        "  ",
    ));
    // `k=v` parts of the cell labels that every row of a benchmark
    // shares: said once, under the table.
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
    let mut shared: IndexMap<&str, Vec<&str>> = IndexMap::new();
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
    let names: Vec<String> = c
        .rows
        .iter()
        .zip(&parts)
        .map(|(r, p)| {
            let common = &shared[r.bench.as_str()];
            let rest: Vec<&str> = p.iter().copied().filter(|x| !common.contains(x)).collect();
            if rest.is_empty() {
                format!("{} {}", r.bench, r.metric)
            } else {
                format!("{} {} [{}]", r.bench, r.metric, rest.join(","))
            }
        })
        .collect();
    const NAME_MAX: usize = 22;
    let legend = names.iter().any(|n| n.chars().count() > NAME_MAX);
    let contenders = c.operands.len() > 2;
    let adjusted = c.family > 1;
    let mut powers = Vec::new();
    let mut rows: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (i, (r, name)) in c.rows.iter().zip(&names).enumerate() {
        let label = if legend {
            format!("#{}", i + 1)
        } else {
            name.clone()
        };
        for v in &r.versus {
            // Fewer digits for large changes: the row stays within 80.
            let short = |x: f64| {
                let p = x * 100.0;
                if p.abs() >= 100.0 {
                    format!("{p:+.0}%")
                } else {
                    format!("{p:+.1}%")
                }
            };
            let delta = if v.significant {
                short(v.delta)
            } else {
                "~".to_string()
            };
            let iv = v
                .interval
                .map(|[l, h]| format!("[{}, {}]", short(l), short(h)))
                .unwrap_or_else(|| "-".into());
            let shown = if adjusted { v.p_adjusted } else { v.p };
            let p = shown.map(fmt_p).unwrap_or_else(|| "-".into());
            let mut labels = vec![label.clone()];
            if contenders {
                labels.push(v.name.clone());
            }
            if let Some(e) = &v.error_term {
                let vs = if contenders {
                    format!(" vs {}", v.name)
                } else {
                    String::new()
                };
                let why = match e.term {
                    crate::stats::nested::ErrorTerm::Samples => "processes alike",
                    crate::stats::nested::ErrorTerm::ProcessMeans => "processes differ",
                    crate::stats::nested::ErrorTerm::BootMeans => "boots differ",
                };
                let f = match e.term {
                    crate::stats::nested::ErrorTerm::BootMeans => e.boot_p,
                    _ => e.process_p,
                }
                .map(|p| format!(", F test p = {}", fmt_p(p)))
                .unwrap_or_default();
                powers.push(format!(
                    "error term {label}{vs}: {} ({}+{} processes, {why}{f}; every sample as independent: p = {})",
                    e.term.label(),
                    e.processes[0],
                    e.processes[1],
                    fmt_p(e.naive_p)
                ));
            }
            if let Some(pw) = &v.power {
                let vs = if contenders {
                    format!(" vs {}", v.name)
                } else {
                    String::new()
                };
                // The unit the test counted: samples, or process (boot)
                // means under the nested analysis.
                let unit = match v.error_term.as_ref().map(|e| e.term) {
                    Some(crate::stats::nested::ErrorTerm::ProcessMeans) => "processes",
                    Some(crate::stats::nested::ErrorTerm::BootMeans) => "boots",
                    _ => "samples",
                };
                let need = match pw.need {
                    Some(n) => format!("; +/-{} needs {n} {unit} a side", short_pct(pw.margin)),
                    None => String::new(),
                };
                powers.push(format!(
                    "no difference: {label}{vs}: could detect +/-{} ({:.0}% power){need}",
                    short_pct(pw.detectable),
                    pw.power * 100.0
                ));
            }
            rows.push((
                labels,
                vec![
                    human::value(r.mean, &r.unit, None, false),
                    human::value(v.mean, &r.unit, None, false),
                    delta,
                    iv,
                    p,
                    format!("{}+{}", v.n1, v.n2),
                ],
            ));
        }
    }
    let mut head = vec!["cell".to_string()];
    if contenders {
        head.push("vs".into());
    }
    let g = grid::Grid {
        row_head: head,
        groups: vec![(String::new(), 6)],
        col_head: [
            "baseline",
            "contender",
            "delta",
            "interval",
            if adjusted { "p adj" } else { "p" },
            "n",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        summary_from: None,
    };
    o.push_str(&g.text(WIDTH, '-'));
    if adjusted {
        o.push_str(&grid::wrap(
            &format!(
                "p adjusted ({}, {}) over a family of {} tests; `~` uses the adjusted p",
                c.adjust.label(),
                c.adjust.controls(),
                c.family
            ),
            WIDTH,
            "  ",
        ));
    }
    for l in &powers {
        o.push_str(&grid::wrap(l, WIDTH, "    "));
    }
    if legend {
        for (i, n) in names.iter().enumerate() {
            o.push_str(&grid::wrap(&format!("#{} {n}", i + 1), WIDTH, "    "));
        }
    }
    for (bench, common) in &shared {
        if !common.is_empty() {
            o.push_str(&grid::wrap(
                &format!("every {bench} row: {}", common.join(", ")),
                WIDTH,
                "  ",
            ));
        }
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
    o.push_str(&grid::wrap(
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
