//! `--export-json`, `--export-markdown`, `--export-csv FILE` (hyperfine's
//! names) on `run` and `compare`: the same result written to files beside
//! the text on stdout, in one invocation.
//!
//! Each file is opened before anything is measured, so a path that cannot
//! be written is bad input before the run, not a lost export after it.
//! What a file holds is what the matching `kbench report`/`compare
//! --format` prints: for a run, JSON is the report (`--json`), Markdown
//! the plan's layout or a table per benchmark, CSV one row per sample.

use std::path::{Path, PathBuf};

use crate::error::bad_input;
use crate::report::Format;

/// The export files of one invocation.
#[derive(Debug, Default, clap::Args)]
pub struct Exports {
    /// Also write the result as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Also write the result as Markdown tables to FILE.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Also write the result as CSV to FILE (a run: one row per sample; a
    /// comparison: one row per contender and cell).
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
}

/// Export files checked as writable, and created empty by the check when
/// they did not exist (removed again if nothing is written to them).
pub struct Targets {
    files: Vec<(Format, PathBuf, bool)>,
    written: bool,
}

impl Exports {
    /// Check every file can be written, before the work that fills them.
    pub fn open(&self) -> anyhow::Result<Targets> {
        let mut files = Vec::new();
        for (format, path) in [
            (Format::Json, &self.export_json),
            (Format::Markdown, &self.export_markdown),
            (Format::Csv, &self.export_csv),
        ] {
            let Some(path) = path else { continue };
            if files.iter().any(|(_, p, _)| p == path) {
                return Err(bad_input!(
                    "{}: named by two --export options",
                    path.display()
                ));
            }
            let existed = path.exists();
            std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(path)
                .map_err(|e| bad_input!("{}: cannot write the export: {e}", path.display()))?;
            files.push((format, path.clone(), existed));
        }
        Ok(Targets {
            files,
            written: false,
        })
    }
}

impl Targets {
    /// Write each file with what `render` makes of its format.
    pub fn write(
        &mut self,
        render: &dyn Fn(Format) -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        self.written = true;
        for (format, path, _) in &self.files {
            let text = render(*format)?;
            write(path, &text)?;
        }
        Ok(())
    }
}

impl Drop for Targets {
    fn drop(&mut self) {
        // A run that failed before its report leaves no empty file behind.
        if !self.written {
            for (_, path, existed) in &self.files {
                if !existed && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
}

/// A run's result in `format`, as `kbench run` and `kbench report` print
/// it: JSON the report, Markdown the plan's layout (else a table per
/// benchmark), CSV one row per sample.
pub fn run_document(
    st: &dyn crate::store::StoreRead,
    run_id: i64,
    r: &crate::report::Report,
    layout: Option<&crate::plan::report::Layout>,
    format: Format,
) -> anyhow::Result<String> {
    use crate::plan::report::{Layout, TableKind};
    use crate::report::{Document, render};
    match format {
        Format::Csv => {
            let op = crate::select::resolve(st, &run_id.to_string())?;
            let (cells, runs) = crate::select::cells(st, &op)?;
            let t = crate::report::samples::build(&cells, &runs);
            render(&Document::Samples(&t), format)
        }
        Format::Markdown | Format::Html => {
            let layout = match layout {
                Some(l) if l.table != TableKind::Ministat => l.clone(),
                _ => Layout {
                    table: TableKind::Matrix,
                    ..Layout::default()
                },
            };
            let doc = crate::report::table::build(std::slice::from_ref(r), &layout, false);
            render(&Document::Tables(&doc), format)
        }
        // The JSON report: the cells, and the plan layout's tables.
        Format::Json => {
            let tables = layout
                .filter(|l| l.table != TableKind::Ministat)
                .map(|l| crate::report::table::build(std::slice::from_ref(r), l, false));
            let mut text = Vec::new();
            crate::report::run::json::ReportsJson::new(std::slice::from_ref(r))
                .tables(tables.as_ref())?
                .write(&mut text)?;
            Ok(String::from_utf8(text)?)
        }
        _ => render(&Document::Reports(std::slice::from_ref(r)), format),
    }
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text)
        .map_err(|e| bad_input!("{}: cannot write the export: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_checked_first_and_empty_ones_removed_when_unused() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        let e = Exports {
            export_json: Some(json.clone()),
            ..Default::default()
        };
        let t = e.open().unwrap();
        assert!(json.exists());
        drop(t);
        assert!(!json.exists(), "an unused export leaves nothing behind");
        let mut t = e.open().unwrap();
        t.write(&|f| Ok(format!("{f:?}"))).unwrap();
        assert_eq!(std::fs::read_to_string(&json).unwrap(), "Json");
        let bad = Exports {
            export_csv: Some(dir.path().join("no/such/dir/x.csv")),
            ..Default::default()
        };
        let err = format!("{:#}", bad.open().err().unwrap());
        assert!(err.contains("x.csv: cannot write the export"), "{err}");
    }
}
