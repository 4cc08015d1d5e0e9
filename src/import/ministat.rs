//! ministat data files: one file per variant, each a cell of benchmark
//! `ministat` (factor `file` = the file's name as given), each point a
//! sample of metric `value` (unit `value`). Lines are read as ministat reads
//! them: the `-C` column of the `-d`-delimited tokens, `#` comments and
//! blank lines skipped. Lower is better unless `--higher`.

use super::ImportedCell;
use crate::error::bad_input;
use crate::record::{CellInfo, Direction, Kind, Metric};

/// How to read the files (ministat's `-C` and `-d`) and which way is better.
pub struct Options<'a> {
    /// 1-based column.
    pub column: i64,
    pub delims: &'a [u8],
    pub higher: bool,
}

/// Parse one data file into its cell; errors name the file and line.
pub fn parse(name: &str, data: &[u8], o: &Options<'_>) -> anyhow::Result<ImportedCell> {
    let points = crate::ministat::read_column(data, o.column, o.delims).map_err(|line| {
        bad_input!(
            "{name}:{line}: no number in column {} (ministat -C {} -d {:?})",
            o.column,
            o.column,
            String::from_utf8_lossy(o.delims)
        )
    })?;
    if points.is_empty() {
        return Err(bad_input!(
            "{name}: no data points (column {}, comments and blank lines skipped)",
            o.column
        ));
    }
    for &(line, v) in &points {
        crate::stats::sample::check_value(v).map_err(|e| bad_input!("{name}:{line}: {e}"))?;
    }
    let dir = if o.higher {
        Direction::Higher
    } else {
        Direction::Lower
    };
    Ok(ImportedCell {
        info: CellInfo {
            key: format!("ministat#{name}"),
            bench: "ministat".into(),
            source: "ministat".into(),
            kind: Kind::Command,
            params: Default::default(),
            factors: [("file".to_string(), name.to_string())]
                .into_iter()
                .collect(),
            label_params: Vec::new(),
            metrics: vec![Metric::new("value", "value", dir)],
            readings: Default::default(),
        },
        values: points.into_iter().map(|(_, v)| v).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOWER: Options<'static> = Options {
        column: 1,
        delims: b" \t",
        higher: false,
    };

    #[test]
    fn points_become_samples_of_one_cell() {
        let c = parse("a.txt", b"# t\n1.5\n\n 2 # x\n3e0\n", &LOWER).unwrap();
        assert_eq!(c.info.factors["file"], "a.txt");
        let v: Vec<f64> = c.rounds().map(|r| r[0]).collect();
        assert_eq!(v, [1.5, 2.0, 3.0]);
        assert_eq!(c.info.metrics[0].direction, Direction::Lower);
        let o = Options {
            column: 2,
            delims: b",",
            higher: true,
        };
        let c = parse("b.csv", b"x,10\ny,20,z\n", &o).unwrap();
        let v: Vec<f64> = c.rounds().map(|r| r[0]).collect();
        assert_eq!(v, [10.0, 20.0]);
        assert_eq!(c.info.metrics[0].direction, Direction::Higher);
    }

    #[test]
    fn malformed_files_name_the_line() {
        let e = parse("a.txt", b"1\n2\nfast\n", &LOWER).unwrap_err();
        assert!(e.to_string().starts_with("a.txt:3: no number"), "{e}");
        let e = parse("a.txt", b"1\ninf\n", &LOWER).unwrap_err();
        assert!(e.to_string().starts_with("a.txt:2: inf"), "{e}");
        let e = parse("a.txt", b"# only\n\n", &LOWER).unwrap_err();
        assert!(e.to_string().starts_with("a.txt: no data points"), "{e}");
        assert_eq!(crate::error::exit_code(&e), 2);
    }
}
