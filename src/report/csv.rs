//! CSV (RFC 4180): one row per stored sample with tidy columns, `run,
//! host, bench`, the factors, the parameters, then `metric, unit, round,
//! seq, value`. Values print as the shortest decimal that reads back as
//! the same double.

use std::fmt::Write;

use super::Document;
use super::render::Render;
use super::samples::SampleTable;

/// A field, quoted when it holds a comma, quote or line break.
fn field(o: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        o.push('"');
        o.push_str(&s.replace('"', "\"\""));
        o.push('"');
    } else {
        o.push_str(s);
    }
}

pub fn render(doc: &Document<'_>) -> anyhow::Result<String> {
    let none = || {
        crate::error::bad_input!(
            "--format csv is for `kbench report` (one row per sample) and `kbench compare`"
        )
    };
    match doc {
        Document::Samples(t) => Ok(samples(t)),
        Document::History(h) => h.csv().ok_or_else(none),
        Document::Compare(c) => Ok(compare(c)),
        _ => Err(none()),
    }
}

/// A comparison: one row per cell and contender, numbers as stored
/// (`change` is contender / baseline - 1 of the means).
fn compare(c: &super::compare::Comparison) -> String {
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

/// The header line (also what a table of no sample prints).
pub fn header(t: &SampleTable) -> String {
    let mut o = String::from("run,host,bench");
    for k in t.factors.iter().chain(&t.params) {
        o.push(',');
        field(&mut o, k);
    }
    o.push_str(",metric,unit,round,seq,value\n");
    o
}

fn samples(t: &SampleTable) -> String {
    let mut o = Vec::with_capacity(t.rows.len() * 64);
    let rows = t.rows.iter().map(|r| {
        let unit: &str = &r.unit;
        (r.cell, &*r.metric, unit, r.round, r.seq, r.value)
    });
    write_samples(t, rows, &mut o).expect("writing to memory");
    String::from_utf8(o).expect("fields are text")
}

/// One sample as a row: its cell (an index into [`SampleTable::cells`]),
/// metric, unit, round, seq and value.
pub type SampleFields<'a> = (usize, &'a str, &'a str, u32, u32, f64);

/// The header and a line per sample of `rows`, written as they come: the
/// columns of `t` (its `rows` unused), the samples wherever they are held.
pub fn write_samples<'a>(
    t: &SampleTable,
    rows: impl IntoIterator<Item = SampleFields<'a>>,
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    w.write_all(header(t).as_bytes())?;
    // A cell's leading columns are the same for each of its samples.
    let mut lead: Vec<String> = Vec::with_capacity(t.cells.len());
    for c in &t.cells {
        let mut l = String::new();
        let _ = write!(l, "{}", c.run);
        l.push(',');
        field(&mut l, &c.host);
        l.push(',');
        field(&mut l, &c.bench);
        for v in c.factors.iter().chain(&c.params) {
            l.push(',');
            field(&mut l, v);
        }
        lead.push(l);
    }
    let mut o = String::with_capacity(256);
    for (cell, metric, unit, round, seq, value) in rows {
        o.clear();
        o.push_str(&lead[cell]);
        o.push(',');
        field(&mut o, metric);
        o.push(',');
        field(&mut o, unit);
        let _ = writeln!(o, ",{round},{seq},{value}");
        w.write_all(o.as_bytes())?;
    }
    Ok(())
}

/// `cells`' samples as CSV, written as they are read from the cells
/// (no table of every row first: 10^6 samples held once, not three times).
pub fn stream_samples(
    cells: &[crate::store::StoredCell],
    runs: &[crate::store::RunRow],
    w: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    let t = super::samples::columns(cells, runs);
    let rows = cells.iter().enumerate().flat_map(|(i, (_, samples))| {
        samples.iter().map(move |s| {
            let unit: &str = &s.unit;
            (i, &*s.metric, unit, s.round, s.seq, s.value)
        })
    });
    write_samples(&t, rows, w)
}
