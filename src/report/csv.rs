//! CSV (RFC 4180): one row per stored sample with tidy columns, `run,
//! host, bench`, the factors, the parameters, then `metric, unit, round,
//! seq, value`. Values print as the shortest decimal that reads back as
//! the same double.

use std::fmt::Write;

use super::render::Render;
use super::samples::SampleTable;

use super::fmt::csv_field as field;

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

/// Every sample, one per row; as text too (it has no other shape).
impl Render for SampleTable {
    const KIND: &'static str = "samples";

    fn text(&self) -> String {
        samples(self)
    }

    fn csv(&self) -> Option<String> {
        Some(samples(self))
    }
}
