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
    let mut o = Vec::with_capacity(t.rows.len() * 64);
    let rows = t
        .rows
        .iter()
        .map(|r| (r.cell, r.metric, r.unit, r.round, r.seq, r.value));
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
        samples
            .iter()
            .map(move |s| (i, s.metric(), s.unit(), s.round, s.seq, s.value))
    });
    write_samples(&t, rows, w)
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
