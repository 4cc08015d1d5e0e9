//! `--format wis-csv`: each scale testcase's scaling table exactly as
//! will-it-scale's runtest.py prints it, so its plotting scripts (and the
//! people used to them) read kbench's campaigns unchanged:
//!
//! ```text
//! tasks,processes,processes_idle,threads,threads_idle,linear
//! 0,0,100,0,100,0
//! 1,6420922,50.12,6533985,50.03,6533985
//! ```
//!
//! ops/s are the mean of the cell's intervals, printed as integers; idle is
//! the mean idle CPU % of the machine over them (/proc/stat, as runtest.py
//! reads it), two decimals; `linear` is the better of the two 1-task
//! figures times the task count. A mode not measured reads `-1,-1`: the
//! sentinel runtest.py prints when a run printed no average, with no idle
//! figure either (a file imported with `-1,-1` rows comes back with the
//! same rows, not as numbers like `-1.00`). With
//! several testcases (or contexts) the tables follow each other, each
//! after a `# testcase [context]` line and a blank line between them; a
//! report of one testcase is exactly runtest.py's file.

use std::fmt::Write;

use super::Report;
use crate::error::bad_input;
use crate::report::scale::{Point, Scaling};

pub const HEADER: &str = "tasks,processes,processes_idle,threads,threads_idle,linear";

/// The CSV of every scaling table in the reports.
pub fn render(reports: &[Report]) -> anyhow::Result<String> {
    let tables: Vec<Scaling> = reports
        .iter()
        .flat_map(|r: &Report| r.scaling.iter().flat_map(Scaling::by_origin))
        .collect();
    if tables.is_empty() {
        return Err(bad_input!(
            "--format wis-csv: no scale testcase in what was selected (nothing to print as a scaling table)"
        ));
    }
    let mut out = String::new();
    let several = tables.len() > 1;
    for (i, t) in tables.iter().enumerate() {
        if several {
            if i > 0 {
                out.push('\n');
            }
            let _ = write!(out, "# {}", t.bench);
            if !t.context.is_empty() {
                let _ = write!(out, " [{}]", t.context.join(", "));
            }
            out.push('\n');
        }
        table(&mut out, t);
    }
    Ok(out)
}

fn table(out: &mut String, t: &Scaling) {
    let series = |mode: &str| t.series.iter().find(|s| s.mode == mode);
    let procs = series("processes");
    let threads = series("threads");
    fn at(s: Option<&crate::report::scale::Series>, n: u32) -> Option<&Point> {
        s.and_then(|s| s.points.iter().find(|p| p.tasks == n))
    }
    let mut counts: Vec<u32> = t
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.tasks))
        .collect();
    counts.sort_unstable();
    counts.dedup();
    let linear = [at(procs, 1), at(threads, 1)]
        .into_iter()
        .flatten()
        .map(|p| p.mean.round() as i64)
        .max()
        .unwrap_or(0);
    out.push_str(HEADER);
    out.push('\n');
    out.push_str("0,0,100,0,100,0\n");
    let cols = |p: Option<&Point>| match p {
        Some(p) => (
            (p.mean.round() as i64).to_string(),
            format!("{:.2}", p.idle.unwrap_or(-1.0)),
        ),
        None => ("-1".into(), "-1".into()),
    };
    for n in counts {
        let (pv, pi) = cols(at(procs, n));
        let (tv, ti) = cols(at(threads, n));
        let _ = writeln!(out, "{n},{pv},{pi},{tv},{ti},{}", linear * n as i64);
    }
}

#[cfg(test)]
mod tests {
    use crate::record::{Direction, Kind, Metric};
    use crate::report::{Document, Format, Report, render as render_doc};
    use crate::store::StoredCell;
    use crate::testing::{run_data, stored_cell};

    /// A scale cell with ops/s and idle samples.
    fn cell(id: i64, mode: &str, tasks: u32, ops: &[f64], idle: &[f64]) -> StoredCell {
        let mut c = stored_cell(
            id,
            "getppid1",
            Kind::Scale,
            serde_json::json!({"mode": mode, "tasks": tasks}),
            &[("mode", mode)],
            &["tasks"],
            Metric::new("ops/s", "ops/s", Direction::Higher),
            ops,
        );
        let template = c.1[0];
        for &v in idle {
            let mut s = template;
            s.names = crate::store::Names::new("idle", "%");
            s.value = v;
            c.1.push(s);
        }
        c
    }

    #[test]
    fn prints_runtest_py_header_and_rows() {
        let cells = vec![
            cell(1, "processes", 1, &[1000.0, 1002.0], &[50.0, 51.0]),
            cell(2, "processes", 2, &[1900.0, 1900.0], &[1.25, 1.25]),
            cell(3, "threads", 1, &[1100.0, 1100.0], &[49.5, 49.5]),
            cell(4, "threads", 2, &[2000.0, 2000.0], &[0.0, 0.5]),
        ];
        let r = Report::of_run(run_data(cells));
        let csv = render_doc(&Document::Reports(&[r]), Format::WisCsv).unwrap();
        assert_eq!(
            csv,
            "tasks,processes,processes_idle,threads,threads_idle,linear\n\
             0,0,100,0,100,0\n\
             1,1001,50.50,1100,49.50,1100\n\
             2,1900,1.25,2000,0.25,2200\n"
        );
    }

    #[test]
    fn a_missing_mode_reads_minus_one_and_non_scale_is_refused() {
        let cells = vec![cell(1, "processes", 1, &[10.0], &[])];
        let r = Report::of_run(run_data(cells));
        let csv = render_doc(&Document::Reports(&[r]), Format::WisCsv).unwrap();
        assert!(csv.ends_with("\n1,10,-1.00,-1,-1,10\n"), "{csv}");
        let e = render_doc(&Document::Benches(&[]), Format::WisCsv).unwrap_err();
        assert!(e.to_string().contains("wis-csv"), "{e}");
    }
}
