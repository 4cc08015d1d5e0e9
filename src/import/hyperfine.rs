//! hyperfine `--export-json`: each command is a cell (factor `command`,
//! hyperfine's `parameters` as parameters), each of its `times` a sample
//! of metric `time` in seconds, lower is better. What hyperfine measured
//! beside the times (mean user and system time, the exit codes) is kept
//! as the cell's readings (`hyperfine.user_s`, `hyperfine.system_s`,
//! `hyperfine.exit_codes`).

use serde::Deserialize;

use super::ImportedCell;
use crate::error::bad_input;
use crate::record::{CellInfo, Direction, Kind, Metric};

#[derive(Deserialize)]
struct File {
    results: Vec<Result>,
}

#[derive(Deserialize)]
struct Result {
    command: String,
    times: Option<Vec<f64>>,
    #[serde(default)]
    parameters: Option<serde_json::Map<String, serde_json::Value>>,
    user: Option<f64>,
    system: Option<f64>,
    exit_codes: Option<Vec<Option<i64>>>,
}

/// What hyperfine measured beside the times, as readings; a figure the
/// file does not have is left out, never written as 0.
fn readings(r: &Result) -> indexmap::IndexMap<String, String> {
    let mut m = indexmap::IndexMap::new();
    if let Some(u) = r.user.filter(|x| x.is_finite()) {
        m.insert("hyperfine.user_s".into(), format!("{u}"));
    }
    if let Some(s) = r.system.filter(|x| x.is_finite()) {
        m.insert("hyperfine.system_s".into(), format!("{s}"));
    }
    if let Some(codes) = &r.exit_codes {
        // `0 x10`, `0 x9, 1 x1`; a run killed by a signal has no code.
        let mut counts: Vec<(Option<i64>, usize)> = Vec::new();
        for c in codes {
            match counts.iter_mut().find(|(k, _)| k == c) {
                Some((_, n)) => *n += 1,
                None => counts.push((*c, 1)),
            }
        }
        let text: Vec<String> = counts
            .iter()
            .map(|(c, n)| match c {
                Some(c) => format!("{c} x{n}"),
                None => format!("signal x{n}"),
            })
            .collect();
        m.insert("hyperfine.exit_codes".into(), text.join(", "));
    }
    m
}

/// Parse one export; errors name the file (and line, for JSON syntax).
pub fn parse(name: &str, text: &str) -> anyhow::Result<Vec<ImportedCell>> {
    let f: File = serde_json::from_str(text).map_err(|e| {
        bad_input!(
            "{name}:{}:{}: not a hyperfine --export-json file: {e}",
            e.line(),
            e.column()
        )
    })?;
    if f.results.is_empty() {
        return Err(bad_input!("{name}: no results"));
    }
    let mut cells = Vec::new();
    for (i, r) in f.results.into_iter().enumerate() {
        let readings = readings(&r);
        let times = r.times.ok_or_else(|| {
            bad_input!(
                "{name}: result {} (`{}`) has no `times` (hyperfine 1.11 or later exports them)",
                i + 1,
                r.command
            )
        })?;
        if times.is_empty() {
            return Err(bad_input!(
                "{name}: result {} (`{}`) has no time",
                i + 1,
                r.command
            ));
        }
        for t in &times {
            crate::stats::sample::check_value(*t)
                .map_err(|e| bad_input!("{name}: result {} (`{}`): {e}", i + 1, r.command))?;
            // A wall time; hyperfine never exports one below zero.
            if *t < 0.0 {
                return Err(bad_input!(
                    "{name}: result {} (`{}`): time {t} is negative",
                    i + 1,
                    r.command
                ));
            }
        }
        let params = r.parameters.unwrap_or_default();
        cells.push(ImportedCell {
            info: CellInfo {
                key: format!("hyperfine#{i}#{}", r.command),
                bench: "hyperfine".into(),
                source: "hyperfine".into(),
                kind: Kind::Command,
                label_params: params.keys().cloned().collect(),
                params,
                factors: [("command".to_string(), r.command.clone())]
                    .into_iter()
                    .collect(),
                metrics: vec![Metric::new("time", "s", Direction::Lower)],
                readings,
            },
            values: times,
        });
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_become_cells_and_times_samples() {
        let text = r#"{"results":[{"command":"true","mean":0.001,"times":[0.001,0.0012]},
            {"command":"sleep 0.01","times":[0.011,0.0105,0.0102],"parameters":{"n":"3"}}]}"#;
        let cells = parse("h.json", text).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[1].info.factors["command"], "sleep 0.01");
        assert_eq!(cells[1].info.params["n"], "3");
        assert_eq!(cells[1].rounds().len(), 3);
        // Nothing beyond the times in the file: no reading made up.
        assert!(cells[0].info.readings.is_empty());
    }

    #[test]
    fn user_system_and_exit_codes_are_kept() {
        let text = r#"{"results":[{"command":"make","times":[1.0,1.1,1.2],
            "user":0.75,"system":0.125,"exit_codes":[0,0,2]}]}"#;
        let c = &parse("h.json", text).unwrap()[0].info.readings;
        assert_eq!(c["hyperfine.user_s"], "0.75");
        assert_eq!(c["hyperfine.system_s"], "0.125");
        assert_eq!(c["hyperfine.exit_codes"], "0 x2, 2 x1");
    }

    #[test]
    fn malformed_files_name_the_place() {
        let e = parse("h.json", "{\"results\": [\n{\"command\": 1}]}").unwrap_err();
        assert!(e.to_string().starts_with("h.json:2:"), "{e}");
        let e = parse("h.json", "{\"results\": [{\"command\": \"x\"}]}").unwrap_err();
        assert!(e.to_string().contains("has no `times`"), "{e}");
        let e = parse("h.json", "{\"results\": []}").unwrap_err();
        assert_eq!(e.to_string(), "h.json: no results");
    }
}
