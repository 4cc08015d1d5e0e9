//! ministat's table of two-sided Student t critical values.
//!
//! ministat does not compute t quantiles: it looks them up in a fixed table
//! of 3-decimal values for df 1..=100 and uses its `inf` row above that.
//! The table is data (`student_t.tsv`, copied from ministat's source), not
//! code, and `kbench ministat` uses exactly these numbers so its output stays
//! byte-identical. For exact quantiles see [`super::ttest`].

use std::sync::OnceLock;

/// The confidence levels (percent) of the table's columns, in order.
pub const LEVELS: [f64; 6] = [80.0, 90.0, 95.0, 98.0, 99.0, 99.5];

/// `LEVELS` as ministat prints them with `%.1f`.
pub const LEVEL_LABELS: [&str; 6] = ["80.0", "90.0", "95.0", "98.0", "99.0", "99.5"];

/// Index of ministat's default level, 95%.
pub const DEFAULT_LEVEL: usize = 2;

/// Largest df with its own row; larger df use the `inf` row.
pub const MAX_DF: usize = 100;

/// The parsed table: `rows[0]` is the `inf` row, `rows[df]` for 1..=100.
#[derive(Debug)]
pub struct StudentTable {
    rows: Vec<[f64; 6]>,
}

static TABLE: OnceLock<StudentTable> = OnceLock::new();

/// The table shipped with kbench (parsed once).
pub fn table() -> &'static StudentTable {
    TABLE.get_or_init(|| {
        StudentTable::parse(include_str!("student_t.tsv")).expect("valid built-in student_t.tsv")
    })
}

/// Index into [`LEVELS`] of a confidence level given in percent, compared
/// with `==` as ministat does (`95.0` matches, `95.00001` does not).
pub fn level_index(percent: f64) -> Option<usize> {
    LEVELS.iter().position(|&l| l == percent)
}

impl StudentTable {
    /// Parse the TSV: `#` comment lines, a `df` header naming the six
    /// levels, an `inf` row and rows `1..=100`.
    pub fn parse(text: &str) -> Result<StudentTable, String> {
        let mut rows = vec![[f64::NAN; 6]; MAX_DF + 1];
        let mut seen = vec![false; MAX_DF + 1];
        for (lineno, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') || line.starts_with("df\t") {
                continue;
            }
            let mut f = line.split('\t');
            let key = f.next().unwrap_or("");
            let idx = if key == "inf" {
                0
            } else {
                match key.parse::<usize>() {
                    Ok(d) if (1..=MAX_DF).contains(&d) => d,
                    _ => return Err(format!("line {}: bad df `{key}`", lineno + 1)),
                }
            };
            let vals: Vec<f64> = f
                .map(|v| v.parse::<f64>().map_err(|e| format!("line {}: {e}", lineno + 1)))
                .collect::<Result<_, _>>()?;
            if vals.len() != 6 {
                return Err(format!("line {}: expected 6 values", lineno + 1));
            }
            rows[idx].copy_from_slice(&vals);
            seen[idx] = true;
        }
        if let Some(d) = seen.iter().position(|s| !s) {
            return Err(format!("missing row for df {d}"));
        }
        Ok(StudentTable { rows })
    }

    /// The critical t for `df` degrees of freedom at `LEVELS[level]`, as
    /// ministat picks it: its own row for df 1..=100, the `inf` row above.
    /// `None` for df 0 or an unknown level.
    pub fn t(&self, df: usize, level: usize) -> Option<f64> {
        if df == 0 || level >= LEVELS.len() {
            return None;
        }
        let row = if df > MAX_DF { 0 } else { df };
        Some(self.rows[row][level])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_ministat_source() {
        let t = table();
        assert_eq!(t.t(1, 2), Some(12.706));
        assert_eq!(t.t(18, 2), Some(2.101));
        assert_eq!(t.t(100, 5), Some(3.174));
        assert_eq!(t.t(101, 0), Some(1.282));
        assert_eq!(t.t(1000, 5), Some(3.090));
        assert_eq!(t.t(0, 2), None);
        assert_eq!(level_index(95.0), Some(2));
        assert_eq!(level_index(97.0), None);
    }
}
