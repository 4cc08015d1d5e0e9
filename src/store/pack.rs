//! Packed samples: an ended run's samples kept a second time, for
//! reading, as a few large values (parts) of fixed-width records instead
//! of a row each. Sending or stepping through a row per sample was most
//! of a report's time in both SQL stores; a record decodes with a few
//! loads. The rows stay the store's truth: a backend removes a run's pack
//! in the transaction that adds a sample to the run, and packs a run only
//! when no writer can be adding to it (see each backend's `pack`).
//!
//! A record is the six columns of [`super::sql::SAMPLE_COLUMNS`] (series,
//! value, round, seq, t, process), 8 bytes each, big-endian, as
//! PostgreSQL's binary `COPY` sends them; a sample without a process has
//! [`NO_PROCESS`] there (a process is a `u32`).

use anyhow::Context;

use super::sql::Row;

/// Samples in a part (3 MB): each part is one value to write and read.
pub const PART: usize = 65_536;

/// Bytes per packed sample.
pub const RECORD: usize = 48;

/// A packed sample's process when it has none.
const NO_PROCESS: [u8; 8] = [0xff; 8];

/// One packed sample, read as a row of [`super::sql::SAMPLE_COLUMNS`].
pub struct Record<'a>(&'a [u8]);

impl Record<'_> {
    fn field(&self, col: usize) -> anyhow::Result<[u8; 8]> {
        self.0
            .get(8 * col..8 * col + 8)
            .and_then(|b| b.try_into().ok())
            .with_context(|| format!("no column {col} in a packed sample"))
    }
}

impl Row for Record<'_> {
    fn int(&self, col: usize) -> anyhow::Result<Option<i64>> {
        let b = self.field(col)?;
        Ok((col != 5 || b != NO_PROCESS).then(|| i64::from_be_bytes(b)))
    }
    fn real(&self, col: usize) -> anyhow::Result<Option<f64>> {
        Ok(Some(f64::from_be_bytes(self.field(col)?)))
    }
    fn text(&self, col: usize) -> anyhow::Result<Option<&str>> {
        anyhow::bail!("column {col} of a packed sample is a number")
    }
    fn blob(&self, col: usize) -> anyhow::Result<Option<&[u8]>> {
        anyhow::bail!("column {col} of a packed sample is a number")
    }
}

/// The records of a part's bytes (whole ones; [`Parts::check`] has
/// checked there is nothing else).
pub fn records(body: &[u8]) -> impl Iterator<Item = Record<'_>> {
    body.chunks_exact(RECORD).map(Record)
}

/// Append the sample whose [`super::sql::SAMPLE_COLUMNS`] start at column
/// `from` of `r` to `part`, as one record.
pub fn push(part: &mut Vec<u8>, r: &impl Row, from: usize) -> anyhow::Result<()> {
    let int = |c: usize| -> anyhow::Result<Option<i64>> { r.int(from + c) };
    let real = |c: usize| -> anyhow::Result<f64> {
        r.real(from + c)?
            .with_context(|| format!("column {} is NULL", from + c))
    };
    let must = |c: usize| -> anyhow::Result<i64> {
        int(c)?.with_context(|| format!("column {} is NULL", from + c))
    };
    part.extend_from_slice(&must(0)?.to_be_bytes());
    part.extend_from_slice(&real(1)?.to_be_bytes());
    part.extend_from_slice(&must(2)?.to_be_bytes());
    part.extend_from_slice(&must(3)?.to_be_bytes());
    part.extend_from_slice(&real(4)?.to_be_bytes());
    match int(5)? {
        Some(p) if (0..=i64::from(u32::MAX)).contains(&p) => {
            part.extend_from_slice(&p.to_be_bytes())
        }
        Some(p) => anyhow::bail!("a sample's process is {p}"),
        None => part.extend_from_slice(&NO_PROCESS),
    }
    Ok(())
}

/// The SQL condition (to add with its leading ` AND`) leaving out the
/// rows of the runs `skip` of a table aliased `alias`: the runs read from
/// their packs.
pub fn skip_sql(alias: &str, skip: &[i64]) -> String {
    if skip.is_empty() {
        return String::new();
    }
    let ids: Vec<String> = skip.iter().map(i64::to_string).collect();
    format!(" AND {alias}.run_id NOT IN ({})", ids.join(","))
}

/// The SQL condition selecting the rows (table aliased `alias`) of the
/// scope's `runs` that `packed` does not hold, `None` when it holds them
/// all: named run by run, since a condition that leaves out packed runs
/// still walked their index entries (53 ms in the server for 10^6).
pub fn rows_of(alias: &str, runs: &[i64], packed: &[i64]) -> Option<String> {
    let rest: Vec<String> = (runs.iter())
        .filter(|r| !packed.contains(r))
        .map(i64::to_string)
        .collect();
    (!rest.is_empty()).then(|| format!("{alias}.run_id IN ({})", rest.join(",")))
}

/// The runs whose pack does not hold their samples (a part missing or
/// out of order, a part not whole, another count than the run's rows), in
/// both SQL dialects; for `kbench store check`.
pub fn stale_sql() -> String {
    format!(
        "SELECT p.run_id FROM (SELECT run_id, SUM(n) AS n, COUNT(*) AS parts, MAX(part) AS last,
                                      MIN(CASE WHEN LENGTH(body) = n * {RECORD} THEN 1 ELSE 0 END)
                                          AS whole
                               FROM sample_packs GROUP BY run_id) p
         WHERE p.whole = 0 OR p.last + 1 <> p.parts
            OR p.n <> (SELECT COUNT(*) FROM samples s WHERE s.run_id = p.run_id)
         ORDER BY 1"
    )
}

/// What `kbench store check` says of a run [`stale_sql`] found.
pub fn stale_problem(run: i64) -> String {
    format!(
        "run {run}: its packed samples are not its samples; `DELETE FROM sample_packs WHERE run_id = {run}` removes them (the samples stay)"
    )
}

/// A scope's parts, read in (run, part) order: which runs they held, and
/// whether each run's parts come whole and in order.
#[derive(Default)]
pub struct Parts {
    runs: Vec<i64>,
    next: i64,
}

impl Parts {
    /// Part `part` of run `run`, said to hold `n` samples in `len` bytes:
    /// what is wrong with it, if anything (damage to report).
    pub fn check(&mut self, run: i64, part: i64, n: i64, len: usize) -> Option<String> {
        if self.runs.last() != Some(&run) {
            self.runs.push(run);
            self.next = 0;
        }
        let expected = self.next;
        self.next += 1;
        let whole = usize::try_from(n).ok().and_then(|n| n.checked_mul(RECORD)) == Some(len);
        (part != expected || !whole).then(|| {
            format!(
                "part {part} of run {run}'s packed samples: {len} bytes for {n} samples, part {expected} expected"
            )
        })
    }

    /// The runs whose parts were read, in order.
    pub fn runs(self) -> Vec<i64> {
        self.runs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sample written as a record reads back bit for bit, with and
    /// without a process; a process out of range is refused.
    #[test]
    fn a_record_reads_back_what_was_pushed() {
        struct Cols([Option<i64>; 6], [f64; 2]);
        impl Row for Cols {
            fn int(&self, col: usize) -> anyhow::Result<Option<i64>> {
                Ok(self.0[col])
            }
            fn real(&self, col: usize) -> anyhow::Result<Option<f64>> {
                Ok(Some(self.1[col / 4]))
            }
            fn text(&self, _: usize) -> anyhow::Result<Option<&str>> {
                unreachable!()
            }
            fn blob(&self, _: usize) -> anyhow::Result<Option<&[u8]>> {
                unreachable!()
            }
        }
        let mut part = Vec::new();
        let rows = [
            Cols([Some(7), None, Some(3), Some(1), None, None], [-1e300, 2.5]),
            Cols(
                [
                    Some(i64::MAX),
                    None,
                    Some(0),
                    Some(0),
                    None,
                    Some(4_294_967_295),
                ],
                [f64::MIN_POSITIVE, 1e9],
            ),
        ];
        for r in &rows {
            push(&mut part, r, 0).unwrap();
        }
        assert_eq!(part.len(), 2 * RECORD);
        for (rec, r) in records(&part).zip(&rows) {
            for col in [0, 2, 3, 5] {
                assert_eq!(rec.int(col).unwrap(), r.0[col], "column {col}");
            }
            for col in [1, 4] {
                let v = rec.real(col).unwrap().unwrap();
                assert_eq!(v.to_bits(), r.1[col / 4].to_bits(), "column {col}");
            }
        }
        let bad = Cols(
            [Some(1), None, Some(0), Some(0), None, Some(-1)],
            [0.0, 0.0],
        );
        assert!(push(&mut part, &bad, 0).is_err());
    }

    /// Parts out of order, missing or not whole are named; a new run
    /// starts from part 0.
    #[test]
    fn parts_are_checked_in_order_and_whole() {
        let mut p = Parts::default();
        assert_eq!(p.check(1, 0, 2, 2 * RECORD), None);
        assert_eq!(p.check(1, 1, 1, RECORD), None);
        assert_eq!(p.check(2, 0, 1, RECORD), None);
        let gap = p.check(2, 2, 1, RECORD).unwrap();
        assert!(
            gap.contains("part 2 of run 2") && gap.contains("part 1 expected"),
            "{gap}"
        );
        assert!(p.check(3, 0, 2, RECORD + 1).is_some());
        assert!(p.check(4, 0, -1, 0).is_some());
        assert_eq!(p.runs(), vec![1, 2, 3, 4]);
    }
}
