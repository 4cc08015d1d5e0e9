//! Numbers for people: a value with its unit scaled to a readable prefix
//! (`1.11 GB/s`, `6.86 us`, `197 ns`), and as many digits as its interval
//! justifies: the last digit printed is the first significant digit of the
//! interval's half-width, so a value never claims more precision than was
//! measured. Without an interval, three significant digits.

/// Scaled unit families: base unit and (divisor, unit) steps, largest
/// first. Time is kept in its stored unit's scale.
fn family(unit: &str, unicode: bool) -> Option<(f64, Vec<(f64, String)>)> {
    let us = if unicode { "µs" } else { "us" };
    let time = |base: f64| {
        Some((
            base,
            vec![
                (1.0, "s".to_string()),
                (1e-3, "ms".to_string()),
                (1e-6, us.to_string()),
                (1e-9, "ns".to_string()),
            ],
        ))
    };
    let decimal = |base: &str| {
        Some((
            1.0,
            vec![
                (1e12, format!("T{base}")),
                (1e9, format!("G{base}")),
                (1e6, format!("M{base}")),
                (1e3, format!("k{base}")),
                (1.0, base.to_string()),
            ],
        ))
    };
    match unit {
        "ns" => time(1e-9),
        "us" | "µs" => time(1e-6),
        "ms" => time(1e-3),
        "s" => time(1.0),
        "B/s" | "bytes/s" => decimal("B/s"),
        "B" | "bytes" => decimal("B"),
        "ops/s" => decimal("ops/s"),
        "Hz" => decimal("Hz"),
        _ => None,
    }
}

/// Decimal places that show the first significant digit of `half` (an
/// interval half-width, in the printed scale), within 0..=6; `None` when
/// the half-width says nothing (zero, infinite, missing).
fn decimals_for(half: Option<f64>) -> Option<usize> {
    let h = half.filter(|h| h.is_finite() && *h > 0.0)?;
    let e = h.log10().floor() as i64;
    Some((-e).clamp(0, 6) as usize)
}

/// Three significant digits of `v`.
fn default_decimals(v: f64) -> usize {
    if v == 0.0 || !v.is_finite() {
        return 0;
    }
    let e = v.abs().log10().floor() as i64;
    (2 - e).clamp(0, 6) as usize
}

/// Never fewer than two significant digits (a wide interval would print
/// `0` for 0.4), never more than six.
fn clamp_decimals(v: f64, d: usize) -> usize {
    if v == 0.0 || !v.is_finite() {
        return d.min(6);
    }
    let e = v.abs().log10().floor() as i64;
    let min = (1 - e).clamp(0, 6) as usize;
    let max = (5 - e).clamp(0, 6) as usize;
    d.clamp(min, max.max(min))
}

/// `value` in `unit`, scaled and rounded to what `half` (the interval's
/// half-width, same unit) justifies: `1.108 GB/s`, `197 ns`.
pub fn value(v: f64, unit: &str, half: Option<f64>, unicode: bool) -> String {
    let (scaled, u, h) = scale(v, unit, half, unicode);
    let d = decimals_for(h).unwrap_or_else(|| default_decimals(scaled));
    let d = clamp_decimals(scaled, d);
    if u.is_empty() {
        format!("{scaled:.d$}")
    } else {
        format!("{scaled:.d$} {u}")
    }
}

/// The one prefixed unit a column of values in `unit` is printed in: the
/// prefix of its smallest value (`ns` for 166 and 432 ns, never `ns` in
/// one row and `us` in the next).
pub fn column_unit(values: &[f64], unit: &str, unicode: bool) -> String {
    let min = values
        .iter()
        .map(|v| v.abs())
        .filter(|v| *v > 0.0 && v.is_finite())
        .fold(f64::INFINITY, f64::min);
    if min.is_finite() {
        scale(min, unit, None, unicode).1
    } else {
        unit.to_string()
    }
}

/// `v` (in `unit`) as a bare number in the prefixed unit `shown` (from
/// `column_unit`), with the digits `half` justifies.
pub fn number_in(v: f64, unit: &str, half: Option<f64>, shown: &str, unicode: bool) -> String {
    let k = family(unit, unicode)
        .and_then(|(base, steps)| {
            steps
                .iter()
                .find(|(_, u)| u == shown)
                .map(|(div, _)| base / div)
        })
        .unwrap_or(1.0);
    let (x, h) = (v * k, half.map(|h| h * k));
    let d = decimals_for(h).unwrap_or_else(|| default_decimals(x));
    let d = clamp_decimals(x, d);
    format!("{x:.d$}")
}

/// The value scaled to its prefix, the prefixed unit, and the half-width
/// in that scale.
pub fn scale(v: f64, unit: &str, half: Option<f64>, unicode: bool) -> (f64, String, Option<f64>) {
    let Some((base, steps)) = family(unit, unicode) else {
        return (v, unit.to_string(), half);
    };
    let x = v.abs() * base;
    // Zero has no scale: `0 s` stays in its own unit (`0 ns` for a time
    // stored in seconds reads as a measured nanosecond figure).
    if x == 0.0 {
        return (v, unit.to_string(), half);
    }
    let (div, u) = steps
        .iter()
        .find(|(d, _)| x >= *d * 0.9995)
        .unwrap_or_else(|| steps.last().expect("steps"))
        .clone();
    let k = base / div;
    (v * k, u, half.map(|h| h * k))
}

/// A relative change in percent (`+165`, `-3`, `+1.6`), with the digits
/// its interval's half-width (in percent points) justifies, at most one
/// decimal beyond the integer part for changes of 10% and more.
pub fn percent(p: f64, half: Option<f64>) -> String {
    let d = decimals_for(half).unwrap_or(1).min(2);
    let d = if p.abs() >= 10.0 { 0 } else { d };
    let s = format!("{p:+.d$}");
    // `-0` reads as a loss that is not there.
    if s.trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        format!("{:.d$}", 0.0)
    } else {
        s
    }
}

/// A percentage with every digit its half-width justifies (interval
/// ends, where `+30` for both would hide the width).
pub fn percent_end(p: f64, half: Option<f64>) -> String {
    let d = decimals_for(half).unwrap_or(1).min(3);
    format!("{p:+.d$}")
}

/// A ratio to a baseline (`1.021`), three decimals unless the interval
/// asks for more.
pub fn ratio(r: f64, half: Option<f64>) -> String {
    let d = decimals_for(half).unwrap_or(3).clamp(3, 4);
    format!("{r:.d$}")
}

/// Bytes in GiB with one decimal (`15.5 GiB`).
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_keeps_its_stored_unit() {
        assert_eq!(value(0.0, "s", None, false), "0 s");
        assert_eq!(value(0.0, "ns", None, false), "0 ns");
        assert_eq!(value(0.0, "B/s", None, false), "0 B/s");
    }

    #[test]
    fn values_take_a_prefix_and_the_digits_their_interval_allows() {
        assert_eq!(value(1.1080336e9, "B/s", Some(5e6), false), "1.108 GB/s");
        assert_eq!(value(1.1080336e9, "B/s", Some(5e7), false), "1.11 GB/s");
        assert_eq!(value(6864.2, "ns", Some(12.0), true), "6.86 µs");
        assert_eq!(value(6864.2, "ns", Some(12.0), false), "6.86 us");
        assert_eq!(value(197.3, "ns", Some(1.4), false), "197 ns");
        assert_eq!(value(197.34, "ns", Some(0.04), false), "197.34 ns");
        assert_eq!(value(0.276, "s", None, false), "276 ms");
        assert_eq!(value(3868.0, "B", Some(0.0), false), "3.87 kB");
        assert_eq!(value(12.5, "lines", None, false), "12.5 lines");
        // A wide interval still leaves two significant digits.
        assert_eq!(value(0.42, "x", Some(3.0), false), "0.42 x");
    }

    #[test]
    fn a_column_shares_one_unit() {
        let u = column_unit(&[165.9, 432.0, 1250.0], "ns", false);
        assert_eq!(u, "ns");
        assert_eq!(number_in(1250.0, "ns", Some(4.0), &u, false), "1250");
        assert_eq!(column_unit(&[1427.4, 40795.9], "s", false), "s");
        assert_eq!(number_in(0.5, "s", None, "ms", false), "500");
        assert_eq!(column_unit(&[], "s", false), "s");
    }

    #[test]
    fn percents_and_ratios() {
        assert_eq!(percent(165.2, Some(4.0)), "+165");
        assert_eq!(percent(-3.24, Some(0.5)), "-3.2");
        assert_eq!(percent(-0.01, Some(0.5)), "0.0");
        assert_eq!(percent(1.61, Some(0.02)), "+1.61");
        assert_eq!(ratio(1.0213, Some(0.01)), "1.021");
        assert_eq!(ratio(1.0213, Some(0.0004)), "1.0213");
    }
}
