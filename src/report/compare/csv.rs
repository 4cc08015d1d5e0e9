//! A comparison as CSV (RFC 4180): one row per cell and contender.

use super::Comparison;
use crate::report::fmt::csv_field as field;

/// A comparison: one row per cell and contender, numbers as stored
/// (`change` is contender / baseline - 1 of the means).
pub(crate) fn csv(c: &Comparison) -> String {
    let mut o = String::from(
        "bench,metric,unit,direction,cell,baseline,contender,n_baseline,mean_baseline,n,mean,change,change_lo,change_hi,p,p_adjusted,significant,verdict\n",
    );
    let num = |x: f64| x.to_string();
    let opt = |x: Option<f64>| x.map(num).unwrap_or_default();
    // Enums as their JSON names (`lower`, `different`).
    let name = |v: serde_json::Result<serde_json::Value>| {
        v.ok()
            .and_then(|x| x.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    for r in &c.rows {
        for v in &r.versus {
            let verdict = name(serde_json::to_value(v.verdict));
            for (i, s) in [
                r.bench.clone(),
                r.metric.clone(),
                r.unit.clone(),
                name(serde_json::to_value(r.direction)),
                r.cell.clone(),
                c.operands[0].clone(),
                v.name.clone(),
                v.n1.to_string(),
                num(r.mean),
                v.n2.to_string(),
                num(v.mean),
                opt(v.change),
                opt(v.interval.map(|i| i[0])),
                opt(v.interval.map(|i| i[1])),
                opt(v.p),
                opt(v.p_adjusted),
                v.significant.to_string(),
                verdict,
            ]
            .iter()
            .enumerate()
            {
                if i > 0 {
                    o.push(',');
                }
                field(&mut o, s);
            }
            o.push('\n');
        }
    }
    o
}
