//! hyperfine `--export-json`: each command is a cell (factor `command`,
//! hyperfine's `parameters` as parameters), each of its `times` a sample
//! of metric `time` in seconds, lower is better.

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
                readings: Default::default(),
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
