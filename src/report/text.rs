//! Plain-text report, ready to paste into e-mail: a header naming the run
//! and the machine, then one table per benchmark and metric with ministat's
//! columns (`N Min Max Median Avg Stddev`, `%3d %13.8g`), the factor values
//! and swept parameters as the row label (like `pti | pcid`), placement
//! lines, and the noise warnings of the fingerprint.

use std::fmt::Write;

use super::{Group, RunReport};
use crate::stats::cfmt::fmt_g;

/// ministat's header after its one-character symbol column.
const STAT_HEADER: &str =
    "   N           Min           Max        Median           Avg        Stddev";

pub fn fmt_time(t: f64) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| t.to_string())
}

fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

pub fn render(r: &RunReport) -> String {
    let mut o = String::new();
    let run = &r.data.run;
    let _ = writeln!(
        o,
        "run {} ({}) on {}, {}, {}",
        run.id,
        run.campaign.as_deref().unwrap_or("ad hoc"),
        run.host,
        fmt_time(run.started),
        run.status
    );
    if let Some(fp) = &r.fingerprint {
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
    let opts = &r.data.config["options"];
    let _ = writeln!(
        o,
        "samples {} x {} s, warmup {}, seed {}, loop overhead {:.2} ns/iteration (not subtracted)",
        opts["samples"], opts["sample_time"], opts["warmup"], opts["seed"], run.overhead_ns
    );
    let mut noted = std::collections::HashSet::new();
    for g in &r.groups {
        o.push('\n');
        // A benchmark's notes are per cell: print them under its first
        // metric's table only.
        let first = noted.insert(g.bench.clone());
        group(&mut o, g, first);
        if let Some(rule) = &r.stop {
            precision_lines(&mut o, g, rule.precision);
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
    // Scaling tables of scale benchmarks (empty otherwise).
    o.push_str(&super::scale::render(r));
    if let Some(fp) = &r.fingerprint {
        let w = fp.warnings();
        if !w.is_empty() {
            o.push_str("\nnoise warnings:\n");
            for x in w {
                let _ = writeln!(o, "  - {x}");
            }
        }
    }
    o
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
        direction_text(&g.direction)
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
        let line = label(&r.labels);
        let _ = writeln!(
            o,
            "{line}{:>4} {} {} {} {} {}",
            r.n,
            fmt_g(r.min, 13, 8),
            fmt_g(r.max, 13, 8),
            fmt_g(r.median, 13, 8),
            fmt_g(r.mean, 13, 8),
            fmt_g(r.stddev, 13, 8)
        );
    }
    let pinned: Vec<_> = g.rows.iter().filter(|r| r.placement.is_some()).collect();
    if !pinned.is_empty() {
        for r in pinned {
            let who = if r.labels.is_empty() {
                g.bench.clone()
            } else {
                r.labels.join(" | ")
            };
            let _ = writeln!(
                o,
                "  placement [{who}]: {}",
                r.placement.as_deref().unwrap_or("")
            );
        }
    }
    if with_notes {
        notes_lines(o, g);
    }
}

/// Most rows a table may have for its cells' notes to be printed; a big
/// matrix keeps them in the JSON report only.
const MAX_NOTED_ROWS: usize = 8;

/// What the benchmarks learnt while running (the pipe size the kernel
/// granted, the syscall path taken, per-task imbalance), under the table.
/// The calibrated iteration count is left to the JSON report.
fn notes_lines(o: &mut String, g: &Group) {
    let noted = |r: &&super::CellSummary| {
        r.notes
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k != "iterations"))
    };
    if g.rows.len() > MAX_NOTED_ROWS || !g.rows.iter().any(|r| noted(&r)) {
        return;
    }
    for r in g.rows.iter().filter(noted) {
        let who = if r.labels.is_empty() {
            g.bench.clone()
        } else {
            r.labels.join(" | ")
        };
        for (k, v) in r.notes.as_object().into_iter().flatten() {
            if k != "iterations" {
                let v = v.as_str().map_or_else(|| v.to_string(), String::from);
                let _ = writeln!(o, "  [{who}] {k}: {v}");
            }
        }
    }
}

fn direction_text(d: &str) -> &'static str {
    match d {
        "higher" => "higher is better",
        _ => "lower is better",
    }
}

/// Precision each cell reached in an adaptive run; cells that missed the
/// target are flagged.
fn precision_lines(o: &mut String, g: &Group, target: f64) {
    for r in &g.rows {
        let who = if r.labels.is_empty() {
            g.bench.clone()
        } else {
            r.labels.join(" | ")
        };
        let flag = if r.precision_reached == Some(true) {
            ""
        } else {
            "  NOT REACHED"
        };
        let _ = writeln!(
            o,
            "  precision [{who}]: +/-{:.2}% of the mean at 95% after {} samples (target {}%){flag}",
            r.ci95_rel * 100.0,
            r.n,
            fmt_g(target * 100.0, 0, 6)
        );
    }
}
