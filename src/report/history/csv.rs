//! A history as CSV: a row per point.

use std::fmt::Write;

use super::{History, runs_text};

/// CSV: one row per point, with the step test and whether a change
/// point starts there.
pub(super) fn csv(h: &History) -> String {
    let mut o = String::from(
        "series,bench,metric,unit,index,label,revision,time,runs,n,mean,stddev,ci_lo,ci_hi,\
         step_change,step_p,step_significant,change_point,change_p\n",
    );
    let q = |s: &str| {
        if s.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", s.replace('"', "\"\""))
        } else {
            s.to_string()
        }
    };
    let num = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    for (si, s) in h.series.iter().enumerate() {
        for p in &s.points {
            let cp = s.change_points.iter().find(|c| c.index == p.index);
            let _ = writeln!(
                o,
                "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                si + 1,
                q(&s.bench),
                q(&s.metric),
                q(&s.unit),
                p.index + 1,
                q(&p.label),
                q(p.revision.as_deref().unwrap_or("")),
                p.time,
                q(&runs_text(p, " ")),
                p.n,
                p.mean,
                p.stddev,
                num(p.ci95.map(|c| c[0])),
                num(p.ci95.map(|c| c[1])),
                num(p.step.as_ref().map(|s| s.change)),
                num(p.step.as_ref().and_then(|s| s.p)),
                p.step
                    .as_ref()
                    .map_or("", |s| if s.significant { "1" } else { "0" }),
                if cp.is_some() { "1" } else { "0" },
                num(cp.map(|c| c.p)),
            );
        }
    }
    o
}
