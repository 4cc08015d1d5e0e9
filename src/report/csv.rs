//! CSV (RFC 4180): one row per stored sample with tidy columns, `run,
//! host, bench`, the factors, the parameters, then `metric, unit, round,
//! seq, value`. Values print as the shortest decimal that reads back as
//! the same double.

use std::fmt::Write;

use super::Document;
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
    match doc {
        Document::Samples(t) => Ok(samples(t)),
        Document::History(h) => Ok(super::history::csv(h)),
        _ => Err(crate::error::bad_input!(
            "--format csv is for `kbench report` (one row per sample)"
        )),
    }
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
    let mut o = header(t);
    o.reserve(t.rows.len() * 64);
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
    for r in &t.rows {
        o.push_str(&lead[r.cell]);
        o.push(',');
        field(&mut o, &r.metric);
        o.push(',');
        field(&mut o, &r.unit);
        let _ = writeln!(o, ",{},{},{}", r.round, r.seq, r.value);
    }
    o
}
