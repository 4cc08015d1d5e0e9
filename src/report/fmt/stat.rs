//! Statistics as every text table prints them: ministat's column header
//! and `%13.8g` columns, a direction in words, p-values.

use crate::record::Direction;
use crate::stats::Summary;
use crate::stats::cfmt::fmt_g;

/// ministat's header after its one-character symbol column.
pub const STAT_HEADER: &str =
    "   N           Min           Max        Median           Avg        Stddev";

/// ministat's five number columns, `%13.8g` each after a space.
pub fn stat_cols(s: &Summary) -> String {
    [s.min, s.max, s.median, s.mean, s.stddev]
        .iter()
        .map(|x| format!(" {}", fmt_g(*x, 13, 8)))
        .collect()
}

/// Which way is better, in words (`lower is better`).
pub fn direction_text(d: Direction) -> String {
    d.to_string()
}

/// A p-value with the digits it needs: `0.034`, `2e-06`.
pub fn fmt_p(p: f64) -> String {
    if p >= 0.001 || p == 0.0 {
        format!("{p:.3}")
    } else {
        format!("{p:.0e}")
    }
}
