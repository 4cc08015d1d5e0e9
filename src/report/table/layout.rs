//! How each layout reads, the same in every format: the one place the
//! renderers learn what differs between a `TableKind`'s tables (a ratio
//! table's raw means first, a matrix's sections and directions, the
//! charts' reference line, when the scaling curves print), and how one
//! value reads in the text formats.

use super::grid::Panel;
use super::{Column, Table, TableDoc, Value};
use crate::plan::report::TableKind;
use crate::report::fmt::human;

/// One value as every format reads it: its number in human units, and
/// for a change or a ratio against the baseline, its interval and
/// whether the test found it significant or could not judge it.
pub struct Reading {
    /// `1.23 µs ±0.5%`, `+4.2`, `1.042`.
    pub number: String,
    /// A change or ratio the layout's test judged (the text marks it).
    pub judged: bool,
    pub significant: bool,
    /// Not judged: a level with one replicate a side (`?`).
    pub unmeasured: bool,
    /// The interval's ends and its half-width, and whether they are
    /// ratios (else percentages).
    pub interval: Option<(f64, f64, Option<f64>)>,
    pub ratio: bool,
}

impl Reading {
    pub fn of(v: &Value, c: &Column, panel: Panel, unicode: bool) -> Reading {
        let half_of = |lo: &Option<f64>, hi: &Option<f64>| lo.zip(*hi).map(|(l, h)| (h - l) / 2.0);
        let judged =
            |number, lo: &Option<f64>, hi: &Option<f64>, sig: &bool, un: &Option<_>, ratio| {
                Reading {
                    number,
                    judged: true,
                    significant: *sig,
                    unmeasured: Option::is_some(un),
                    interval: lo.zip(*hi).map(|(l, h)| (l, h, half_of(lo, hi))),
                    ratio,
                }
            };
        let plain = |number| Reading {
            number,
            judged: false,
            significant: false,
            unmeasured: false,
            interval: None,
            ratio: false,
        };
        match v {
            Value::Mean { mean, half, .. } => plain(mean_text(*mean, *half, c, unicode)),
            Value::Change {
                pct,
                lo,
                hi,
                significant,
                unmeasured,
                ..
            } => {
                let n = human::percent(*pct, half_of(lo, hi));
                judged(n, lo, hi, significant, unmeasured, false)
            }
            Value::Ratio { mean, half, .. } if panel == Panel::Means => {
                plain(mean.map_or("-".into(), |m| human::value(m, &c.unit, *half, unicode)))
            }
            Value::Ratio {
                ratio,
                lo,
                hi,
                significant,
                unmeasured,
                ..
            } => {
                let n = human::ratio(*ratio, half_of(lo, hi));
                judged(n, lo, hi, significant, unmeasured, true)
            }
        }
    }

    /// The interval's ends as the number reads them (`-1.2`, `1.031`).
    pub fn ends(&self) -> Option<[String; 2]> {
        self.interval.map(|(l, h, half)| {
            if self.ratio {
                [human::ratio(l, half), human::ratio(h, half)]
            } else {
                [human::percent_end(l, half), human::percent_end(h, half)]
            }
        })
    }

    /// `*` significant, `?` not judged (a level with one replicate a
    /// side), a space otherwise; nothing for a value no test judges.
    pub fn mark(&self) -> &'static str {
        match (self.judged, self.significant, self.unmeasured) {
            (false, _, _) => "",
            (true, true, _) => "*",
            (true, false, true) => "?",
            (true, false, false) => " ",
        }
    }
}

/// A mean in human units (the column's shown unit when it has one) with
/// its interval's half-width in percent.
fn mean_text(mean: f64, half: Option<f64>, c: &Column, unicode: bool) -> String {
    let s = match &c.shown_unit {
        Some(u) => human::number_in(mean, &c.unit, half, u, unicode),
        None => human::value(mean, &c.unit, half, unicode),
    };
    match half {
        Some(h) if mean != 0.0 && h.is_finite() => {
            let pm = if unicode { "±" } else { "+/-" };
            format!("{s} {pm}{:.1}%", 100.0 * h / mean.abs())
        }
        _ => s,
    }
}

/// One value as text: human units, a `*` when the change is significant.
pub fn cell_text(v: &Value, c: &Column, panel: Panel, unicode: bool) -> String {
    let r = Reading::of(v, c, panel, unicode);
    format!("{}{}", r.number, r.mark())
}

/// The reference line of a chart of changes, and its y label.
pub const CHANGE: (f64, &str) = (0.0, "% change over the baseline");
/// The reference line of a chart of improvements, and its y label.
pub const IMPROVEMENT: (f64, &str) = (0.0, "% improvement over the baseline (positive = better)");
/// The reference line of a chart of ratios, and its y label.
pub const RATIO: (f64, &str) = (1.0, "ratio to the baseline");

impl Table {
    /// A ratio table of one metric shows its raw means first, then the
    /// values normalised to this column.
    pub fn normalised_to(&self) -> Option<&str> {
        (self.kind == TableKind::Ratio && self.metric.is_some())
            .then(|| self.cols[0].label.as_str())
    }

    /// A matrix's table is a section (revision, then benchmark, then
    /// hardware): the revision heads the section rather than the table,
    /// the host's system block opens it, and the metrics' directions
    /// follow the heading.
    pub fn sectioned(&self) -> bool {
        self.kind == TableKind::Matrix
    }

    /// A matrix charts each metric in its own unit; other layouts chart
    /// their changes or ratios on one reference line.
    pub fn chart_per_metric(&self) -> bool {
        self.kind == TableKind::Matrix
    }

    /// The reference line its values are drawn against: 0% for changes,
    /// 1 for ratios; `None` for a layout of absolute values.
    pub fn reference(&self) -> Option<(f64, &'static str)> {
        match self.kind {
            TableKind::Improvement => Some(IMPROVEMENT),
            TableKind::Change => Some(CHANGE),
            TableKind::Ratio => Some(RATIO),
            _ => None,
        }
    }
}

impl TableDoc {
    /// Whether the scaling curves print: in the scaling layout, or when
    /// no table was built.
    pub fn shows_scaling(&self) -> bool {
        self.kind == TableKind::Scaling || self.tables.is_empty()
    }
}
