//! will-it-scale's runtest.py CSV: the header
//! `tasks,processes,processes_idle,threads,threads_idle,linear`, then one
//! row per task count. Each (mode, tasks) measured becomes a cell of a
//! scale benchmark named after the file stem (params `mode` and `tasks`,
//! as kbench's own scale cells), with one sample: the row's ops/s and
//! its idle CPU % (metric `idle`, informational). The `tasks = 0` row
//! runtest.py prints first, and a mode reading -1 (not measured), carry
//! no cell; `linear` is checked as a number and recomputed by reports.

use super::ImportedCell;
use crate::error::bad_input;
use crate::record::{CellInfo, Direction, Kind, Metric};
use crate::report::run::wis_csv::HEADER;

/// A row: the task count, then (ops/s, idle %) of processes and threads
/// when measured.
type Row = (u32, [Option<(f64, f64)>; 2]);

/// Parse one CSV; `bench` names the benchmark; errors name file and line.
pub fn parse(name: &str, bench: &str, text: &str) -> anyhow::Result<Vec<ImportedCell>> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let header = lines.by_ref().find(|(_, l)| !l.is_empty());
    match header {
        Some((_, h)) if h == HEADER => {}
        Some((n, h)) => {
            return Err(bad_input!(
                "{name}:{n}: `{h}` is not will-it-scale's header `{HEADER}`"
            ));
        }
        None => return Err(bad_input!("{name}: empty (want the header `{HEADER}`)")),
    }
    let mut rows: Vec<Row> = Vec::new();
    for (n, l) in lines {
        if l.is_empty() {
            continue;
        }
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 6 {
            return Err(bad_input!(
                "{name}:{n}: {} field(s), want 6 ({HEADER})",
                f.len()
            ));
        }
        let num = |i: usize| -> anyhow::Result<f64> {
            let v: f64 = f[i].parse().map_err(|_| {
                bad_input!(
                    "{name}:{n}: {} `{}` is not a number",
                    HEADER.split(',').nth(i).unwrap_or("field"),
                    f[i]
                )
            })?;
            crate::stats::sample::check_value(v).map_err(|e| bad_input!("{name}:{n}: {e}"))?;
            Ok(v)
        };
        let tasks: u32 = f[0]
            .parse()
            .map_err(|_| bad_input!("{name}:{n}: tasks `{}` is not a task count", f[0]))?;
        num(5)?;
        let mut modes = [None, None];
        for (m, slot) in modes.iter_mut().enumerate() {
            let (ops, idle) = (num(1 + 2 * m)?, num(2 + 2 * m)?);
            if ops == -1.0 {
                continue; // runtest.py's mark for a mode that printed nothing
            }
            if ops < 0.0 {
                return Err(bad_input!("{name}:{n}: negative ops/s {ops}"));
            }
            if !(0.0..=100.0).contains(&idle) {
                return Err(bad_input!("{name}:{n}: idle {idle} is not a percentage"));
            }
            *slot = Some((ops, idle));
        }
        if tasks == 0 {
            continue;
        }
        if rows.iter().any(|(t, _)| *t == tasks) {
            return Err(bad_input!("{name}:{n}: a second row for {tasks} task(s)"));
        }
        rows.push((tasks, modes));
    }
    let mut cells = Vec::new();
    for (m, mode) in ["processes", "threads"].into_iter().enumerate() {
        for (tasks, modes) in &rows {
            let Some((ops, idle)) = modes[m] else {
                continue;
            };
            cells.push(ImportedCell {
                info: CellInfo {
                    key: format!("{bench}#mode={mode}#tasks={tasks}"),
                    bench: bench.into(),
                    source: bench.into(),
                    kind: Kind::Scale,
                    params: serde_json::json!({"mode": mode, "tasks": tasks})
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    factors: [("mode".to_string(), mode.to_string())]
                        .into_iter()
                        .collect(),
                    label_params: vec!["tasks".into()],
                    metrics: vec![
                        Metric::new("ops/s", "ops/s", Direction::Higher),
                        Metric::new("idle", "%", Direction::Info),
                    ],
                    readings: Default::default(),
                },
                values: vec![ops, idle],
            });
        }
    }
    if cells.is_empty() {
        return Err(bad_input!(
            "{name}: no measured row (all task counts 0 or -1)"
        ));
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "tasks,processes,processes_idle,threads,threads_idle,linear
0,0,100,0,100,0
1,6420922,50.12,6533985,50.03,6533985
2,12648102,0.35,-1,-1,13067970
";

    #[test]
    fn rows_become_scale_cells() {
        let cells = parse("g.csv", "getppid1", CSV).unwrap();
        let keys: Vec<&str> = cells.iter().map(|c| c.info.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "getppid1#mode=processes#tasks=1",
                "getppid1#mode=processes#tasks=2",
                "getppid1#mode=threads#tasks=1"
            ]
        );
        assert_eq!(cells[1].info.params["tasks"], 2);
        assert_eq!(cells[1].rounds().next().unwrap(), [12648102.0, 0.35]);
    }

    #[test]
    fn malformed_files_name_the_line() {
        let bad = |text: &str| parse("g.csv", "g", text).unwrap_err().to_string();
        assert!(bad("").starts_with("g.csv: empty"));
        assert!(bad("tasks,ops\n1,2\n").starts_with("g.csv:1: `tasks,ops` is not"));
        let h = format!("{HEADER}\n");
        let e = bad(&format!("{h}1,2,3\n"));
        assert!(e.starts_with("g.csv:2: 3 field(s)"), "{e}");
        let e = bad(&format!("{h}1,5,50,x,50,5\n"));
        assert!(e.starts_with("g.csv:2: threads `x` is not a number"), "{e}");
        let e = bad(&format!("{h}one,5,50,5,50,5\n"));
        assert!(e.starts_with("g.csv:2: tasks `one`"), "{e}");
        let e = bad(&format!("{h}1,5,50,5,50,5\n\n1,6,50,6,50,6\n"));
        assert!(e.starts_with("g.csv:4: a second row for 1"), "{e}");
        let e = bad(&format!("{h}1,5,150,5,50,5\n"));
        assert!(e.starts_with("g.csv:2: idle 150"), "{e}");
        let e = bad(&format!("{h}0,0,100,0,100,0\n"));
        assert!(e.starts_with("g.csv: no measured row"), "{e}");
    }
}
