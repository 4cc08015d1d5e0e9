//! What the SQL backends share: the queries that read the same in both
//! dialects (parameters are written `$1`, which SQLite takes as well), the
//! JSON text of stored values, and the decoding of result rows into
//! records through one small [`Row`] trait each driver's row implements.
//! A value that does not decode (NULL where a number belongs, JSON that
//! does not parse, an unknown status) is an error naming the column,
//! never a silent default: the backend reports it as a damaged store.

use anyhow::Context;
use indexmap::IndexMap;

use super::{CampaignRow, CellRec, FailureRec, Names, RunRow, SampleRec, Scope, VerdictRec};
use crate::record::{CellInfo, CellStatus, Kind, RunStatus};

/// Runs with their campaign's name and their cell and sample counts;
/// decoded by [`run_row`].
pub const RUN_SELECT: &str = "SELECT r.id, r.uuid, c.name, r.host, r.started, r.ended, r.status,
    (SELECT COUNT(*) FROM cells WHERE run_id = r.id),
    (SELECT COUNT(*) FROM samples WHERE run_id = r.id),
    r.overhead_ns, r.labels
    FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id";

/// [`RUN_SELECT`] with the sample count left 0
/// ([`super::StoreRead::runs_uncounted`]): counting reads an index entry
/// per sample, 10^6 of them a tenth of a report's time in SQLite and 0.2 s
/// of the server's in PostgreSQL, where a report counts what it loads.
pub const RUN_SELECT_UNCOUNTED: &str = "SELECT r.id, r.uuid, c.name, r.host, r.started, r.ended,
    r.status, (SELECT COUNT(*) FROM cells WHERE run_id = r.id), CAST(0 AS BIGINT),
    r.overhead_ns, r.labels
    FROM runs r LEFT JOIN campaigns c ON c.id = r.campaign_id";

/// [`RUN_SELECT`], or [`RUN_SELECT_UNCOUNTED`] unless `samples`.
pub fn run_select(samples: bool) -> &'static str {
    if samples {
        RUN_SELECT
    } else {
        RUN_SELECT_UNCOUNTED
    }
}

/// Campaigns, for [`campaign_row`].
pub const CAMPAIGN_COLUMNS: &str = "id, name, plan_hash, generation, plan_text, created";

/// A scope's cells, in insertion order, for [`cell_rec`]; `{cond}` from
/// [`scope_sql`] with alias `c`.
pub fn cells_sql(cond: &str) -> String {
    format!(
        "SELECT c.id, c.run_id, c.key, c.bench, c.source, c.kind, c.params, c.factors,
                c.label_params, c.metrics, c.readings, c.placement, c.notes, c.status
         FROM cells c WHERE {cond} ORDER BY c.id"
    )
}

/// The columns of a sample as [`sample_rec`] reads them (alias `s`): its
/// cell, metric and unit are its series' ([`series_sql`]), stored once.
pub const SAMPLE_COLUMNS: &str = "s.series_id, s.value, s.round, s.seq, s.t, s.process";

/// A scope's series (a cell's metric in its unit), for [`Series::add`];
/// `{cond}` from [`scope_sql`] with alias `c`.
pub fn series_sql(cond: &str) -> String {
    format!(
        "SELECT m.id, m.cell_id, m.metric, m.unit FROM series m
         JOIN cells c ON c.id = m.cell_id WHERE {cond}"
    )
}

/// Make a sample's series if it is new (`$1` cell, `$2` metric, `$3`
/// unit); [`SERIES_ID`] then finds it.
pub const ADD_SERIES: &str = "INSERT INTO series (cell_id, metric, unit) VALUES ($1, $2, $3)
     ON CONFLICT (cell_id, metric, unit) DO NOTHING";

/// The id of a series (`$1` cell, `$2` metric, `$3` unit).
pub const SERIES_ID: &str =
    "SELECT id FROM series WHERE cell_id = $1 AND metric = $2 AND unit = $3";

/// A scope's failures, in order, for [`failure_rec`].
pub fn failures_sql(cond: &str) -> String {
    format!(
        "SELECT f.run_id, f.cell_id, f.seq, f.round, f.t, f.message FROM failures f
         WHERE {cond} ORDER BY f.id"
    )
}

/// A scope's verdicts, in order, for [`verdict_rec`].
pub fn verdicts_sql(cond: &str) -> String {
    format!("SELECT v.run_id, v.kind, v.body FROM verdicts v WHERE {cond} ORDER BY v.id")
}

/// A plan's fleet hosts (`$1` name, `$2` hash), for `FleetHostRec`.
pub const FLEET_HOSTS: &str = "SELECT plan, plan_hash, host, state, updated, last_error
     FROM fleet_hosts WHERE plan = $1 AND plan_hash = $2 ORDER BY host";

/// Insert or update a fleet host's state; an older record never replaces
/// a newer one.
pub const SET_FLEET_HOST: &str =
    "INSERT INTO fleet_hosts (plan, plan_hash, host, state, updated, last_error)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (plan, plan_hash, host) DO UPDATE
     SET state = excluded.state, updated = excluded.updated, last_error = excluded.last_error
     WHERE excluded.updated >= fleet_hosts.updated";

/// The SQL condition selecting a scope's rows of a table aliased `alias`
/// (which has a `run_id` column), with its one parameter `$1`.
pub fn scope_sql(scope: Scope, alias: &str) -> (String, i64) {
    match scope {
        Scope::Run(id) => (format!("{alias}.run_id = $1"), id),
        Scope::Campaign(id) => (
            format!("{alias}.run_id IN (SELECT id FROM runs WHERE campaign_id = $1)"),
            id,
        ),
    }
}

/// A run's stored fingerprint and settings, parsed.
pub fn run_details(id: i64, fingerprint: &str, config: &str) -> anyhow::Result<super::RunDetails> {
    Ok(super::RunDetails {
        fingerprint: serde_json::from_str::<crate::system::Fingerprint>(fingerprint)
            .with_context(|| format!("run {id}: corrupt stored fingerprint"))?,
        config: crate::record::RunConfig::from_json(config)
            .with_context(|| format!("run {id}: corrupt stored settings"))?,
    })
}

/// A stored value's JSON text.
pub fn json_text(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).expect("serialisable")
}

/// One result row, whichever driver read it. Each getter fails on a
/// value of the wrong type (NULL included) with the driver's reason.
pub trait Row {
    fn int(&self, col: usize) -> anyhow::Result<Option<i64>>;
    fn real(&self, col: usize) -> anyhow::Result<Option<f64>>;
    fn text(&self, col: usize) -> anyhow::Result<Option<&str>>;
    fn blob(&self, col: usize) -> anyhow::Result<Option<&[u8]>>;
}

impl Row for rusqlite::Row<'_> {
    fn int(&self, col: usize) -> anyhow::Result<Option<i64>> {
        Ok(self.get(col)?)
    }
    fn real(&self, col: usize) -> anyhow::Result<Option<f64>> {
        Ok(self.get(col)?)
    }
    fn text(&self, col: usize) -> anyhow::Result<Option<&str>> {
        Ok(self.get_ref(col)?.as_str_or_null()?)
    }
    fn blob(&self, col: usize) -> anyhow::Result<Option<&[u8]>> {
        Ok(self.get_ref(col)?.as_blob_or_null()?)
    }
}

impl Row for postgres::Row {
    fn int(&self, col: usize) -> anyhow::Result<Option<i64>> {
        Ok(self.try_get(col)?)
    }
    fn real(&self, col: usize) -> anyhow::Result<Option<f64>> {
        Ok(self.try_get(col)?)
    }
    fn text(&self, col: usize) -> anyhow::Result<Option<&str>> {
        Ok(self.try_get(col)?)
    }
    fn blob(&self, col: usize) -> anyhow::Result<Option<&[u8]>> {
        Ok(self.try_get(col)?)
    }
}

/// Typed getters over [`Row`] that name the column when a value is
/// missing or out of range.
trait Get: Row {
    fn must<T>(&self, col: usize, v: anyhow::Result<Option<T>>) -> anyhow::Result<T> {
        v.with_context(|| format!("corrupt stored data in column {col}"))?
            .with_context(|| format!("corrupt stored data: column {col} is NULL"))
    }
    fn i64_at(&self, col: usize) -> anyhow::Result<i64> {
        self.must(col, self.int(col))
    }
    fn u32_at(&self, col: usize) -> anyhow::Result<u32> {
        let v = self.i64_at(col)?;
        u32::try_from(v).with_context(|| format!("corrupt stored data: column {col} is {v}"))
    }
    fn f64_at(&self, col: usize) -> anyhow::Result<f64> {
        self.must(col, self.real(col))
    }
    fn str_at(&self, col: usize) -> anyhow::Result<&str> {
        self.must(col, self.text(col))
    }
    fn string_at(&self, col: usize) -> anyhow::Result<String> {
        self.str_at(col).map(str::to_owned)
    }
    fn opt_string_at(&self, col: usize) -> anyhow::Result<Option<String>> {
        Ok(self
            .text(col)
            .with_context(|| format!("corrupt stored data in column {col}"))?
            .map(str::to_owned))
    }
    fn json_at<T: serde::de::DeserializeOwned>(&self, col: usize) -> anyhow::Result<T> {
        serde_json::from_str(self.str_at(col)?)
            .with_context(|| format!("corrupt stored data in column {col}"))
    }
}

impl<R: Row + ?Sized> Get for R {}

/// A row of [`RUN_SELECT`].
pub fn run_row(r: &impl Row) -> anyhow::Result<RunRow> {
    Ok(RunRow {
        id: r.i64_at(0)?,
        uuid: r.string_at(1)?,
        campaign: r.opt_string_at(2)?,
        host: r.string_at(3)?,
        started: r.f64_at(4)?,
        ended: r.real(5).context("corrupt stored data in column 5")?,
        status: RunStatus::parse(r.str_at(6)?).context("corrupt stored data in column 6")?,
        cells: r.i64_at(7)?,
        samples: r.i64_at(8)?,
        overhead_ns: r.f64_at(9)?,
        labels: r.json_at(10)?,
    })
}

/// A row of [`CAMPAIGN_COLUMNS`].
pub fn campaign_row(r: &impl Row) -> anyhow::Result<CampaignRow> {
    Ok(CampaignRow {
        id: r.i64_at(0)?,
        name: r.string_at(1)?,
        plan_hash: r.string_at(2)?,
        generation: r.u32_at(3)?,
        plan_text: r.string_at(4)?,
        created: r.f64_at(5)?,
    })
}

/// A row of [`cells_sql`].
pub fn cell_rec(r: &impl Row) -> anyhow::Result<CellRec> {
    Ok(CellRec {
        id: r.i64_at(0)?,
        run_id: r.i64_at(1)?,
        info: CellInfo {
            key: r.string_at(2)?,
            bench: r.string_at(3)?,
            source: r.string_at(4)?,
            kind: Kind::parse(r.str_at(5)?).context("corrupt stored data in column 5")?,
            params: r.json_at(6)?,
            factors: r.json_at(7)?,
            label_params: r.json_at(8)?,
            metrics: r.json_at(9)?,
            readings: r.json_at(10)?,
        },
        placement: r.opt_string_at(11)?,
        notes: r.json_at::<IndexMap<String, String>>(12)?,
        status: r
            .text(13)
            .context("corrupt stored data in column 13")?
            .map(CellStatus::parse)
            .transpose()
            .context("corrupt stored data in column 13")?,
    })
}

/// A row of [`failures_sql`].
pub fn failure_rec(r: &impl Row) -> anyhow::Result<FailureRec> {
    Ok(FailureRec {
        run_id: r.i64_at(0)?,
        cell_id: r.i64_at(1)?,
        seq: r.u32_at(2)?,
        round: r.u32_at(3)?,
        t: r.f64_at(4)?,
        message: r.string_at(5)?,
    })
}

/// A cell's profiles by round; `$1` is the cell's id.
pub const PROFILES_SQL: &str =
    "SELECT p.cell_id, p.round, p.stacks FROM profiles p WHERE p.cell_id = $1 ORDER BY p.round";

/// A row of [`PROFILES_SQL`].
pub fn profile_rec(r: &impl Row) -> anyhow::Result<super::ProfileRec> {
    let (cell_id, round) = (r.i64_at(0)?, r.i64_at(1)?);
    let bytes = r.blob(2)?.unwrap_or_default();
    let stacks = crate::profile::Folded::decode(bytes)
        .with_context(|| format!("profile of cell {cell_id}, round {round}"))?;
    Ok(super::ProfileRec {
        cell_id,
        round: round as u32,
        stacks,
    })
}

/// A row of [`verdicts_sql`].
pub fn verdict_rec(r: &impl Row) -> anyhow::Result<VerdictRec> {
    let (run_id, kind) = (r.i64_at(0)?, r.string_at(1)?);
    let body = serde_json::from_str(r.str_at(2)?)
        .with_context(|| format!("corrupt stored verdict `{kind}` of run {run_id}"))?;
    Ok(VerdictRec { run_id, kind, body })
}

/// Positions of a scope's ids (series, cells) by id, without hashing
/// each of 10^6 samples' ids: a table indexed by the id's offset from the
/// smallest, as a scope's ids are nearly consecutive; a sorted list
/// searched by halves when they are not.
#[derive(Clone, Default)]
pub struct IdIndex {
    base: i64,
    dense: Vec<u32>,
    sorted: Vec<(i64, u32)>,
}

impl IdIndex {
    /// `ids[i]` at position `i`.
    pub fn new(ids: impl IntoIterator<Item = i64>) -> IdIndex {
        let mut sorted: Vec<(i64, u32)> = ids.into_iter().zip(0..).collect();
        sorted.sort_unstable();
        let (Some(lo), Some(hi)) = (sorted.first(), sorted.last()) else {
            return IdIndex::default();
        };
        let span = hi.0.abs_diff(lo.0);
        if span > 4 * sorted.len() as u64 + 64 {
            return IdIndex {
                base: lo.0,
                dense: Vec::new(),
                sorted,
            };
        }
        let mut dense = vec![u32::MAX; span as usize + 1];
        for &(id, i) in &sorted {
            dense[(id - lo.0) as usize] = i;
        }
        IdIndex {
            base: lo.0,
            dense,
            sorted: Vec::new(),
        }
    }

    /// The position of `id`, if it is one of the ids.
    pub fn get(&self, id: i64) -> Option<usize> {
        if self.dense.is_empty() {
            let k = self.sorted.binary_search_by_key(&id, |x| x.0).ok()?;
            return Some(self.sorted[k].1 as usize);
        }
        let off = usize::try_from(id.checked_sub(self.base)?).ok()?;
        match self.dense.get(off) {
            Some(&i) if i != u32::MAX => Some(i as usize),
            _ => None,
        }
    }
}

/// A scope's series: the cell, metric and unit their samples share, the
/// names interned once per series ([`Names`]), never per sample.
#[derive(Clone, Default)]
pub struct Series {
    /// Id, cell and names of each series.
    rows: Vec<(i64, i64, Names)>,
    /// Positions in `rows` by id, made at the first look-up after an add.
    index: Option<IdIndex>,
}

impl Series {
    /// Add a row of [`series_sql`].
    pub fn add(&mut self, r: &impl Row) -> anyhow::Result<()> {
        let names = Names::new(r.str_at(2)?, r.str_at(3)?);
        self.rows.push((r.i64_at(0)?, r.i64_at(1)?, names));
        self.index = None;
        Ok(())
    }

    /// A sample of series `series_id`, its cell and names the series'; an
    /// error if the scope has no such series (a damaged store). Every
    /// backend makes its samples here.
    pub fn sample(
        &mut self,
        series_id: i64,
        value: f64,
        round: u32,
        seq: u32,
        t: f64,
        process: Option<u32>,
    ) -> anyhow::Result<SampleRec> {
        let rows = &self.rows;
        let index = self
            .index
            .get_or_insert_with(|| IdIndex::new(rows.iter().map(|x| x.0)));
        let &(_, cell_id, names) = index
            .get(series_id)
            .and_then(|i| rows.get(i))
            .with_context(|| {
                format!("corrupt stored data: a sample of series {series_id}, which is missing")
            })?;
        Ok(SampleRec {
            cell_id,
            names,
            value,
            round,
            seq,
            t,
            process,
        })
    }
}

/// A row of [`SAMPLE_COLUMNS`], its cell and names from its series.
pub fn sample_rec(r: &impl Row, series: &mut Series) -> anyhow::Result<SampleRec> {
    let process = r
        .int(5)
        .context("corrupt stored data in column 5")?
        .map(u32::try_from)
        .transpose()
        .context("corrupt stored data: sample process out of range")?;
    series.sample(
        r.i64_at(0)?,
        r.f64_at(1)?,
        r.u32_at(2)?,
        r.u32_at(3)?,
        r.f64_at(4)?,
        process,
    )
}

/// A scope's cells with their samples, read by the backend's
/// [`super::StoreRead::cell_recs`] and [`super::StoreRead::each_sample`].
/// Rows arrive in id order, the cells' samples interleaved (a round
/// takes one sample of each cell): each goes straight to its cell's list,
/// found by position, so a scope's samples are held once (a collected
/// row list first, then per-cell lists, held 10^6 samples twice: 72 MB
/// more, and the kernel's page zeroing was a third of a report's time).
/// `expected` samples in all (a hint, 0 when unknown) size the lists.
pub fn cells_with_samples(
    st: &dyn super::StoreRead,
    scope: Scope,
    expected: usize,
) -> anyhow::Result<Vec<super::StoredCell>> {
    let cells = st.cell_recs(scope)?;
    let reserve = expected.div_ceil(cells.len().max(1));
    let samples = bucketed(&cells, reserve, |f| st.each_sample(scope, f))?;
    Ok(cells.into_iter().zip(samples).collect())
}

/// A scope whose samples span this many ids is read in two halves at once
/// ([`in_halves`]); below it a second connection costs more than it saves.
pub const SPLIT_AT: i64 = 100_000;

/// What a reader knows of a scope's sample ids before reading them: the
/// first and the last, and at most how many there are (the sum of its
/// runs' spans: fewer than `hi - lo + 1` when other runs wrote between
/// them).
#[derive(Clone, Copy, Debug)]
pub struct IdSpan {
    pub lo: i64,
    pub hi: i64,
    pub most: i64,
}

impl IdSpan {
    /// The room to reserve in each of `cells` lists for the scope's samples
    /// with ids `lo..=hi`, as if the cells had as many each: a list that
    /// grows instead copies its samples at each doubling (a third of the
    /// page faults of a report of 10^6 samples), and room left over is
    /// address space the kernel never backs with memory.
    pub fn per_cell(self, lo: i64, hi: i64, cells: usize) -> usize {
        let n = (hi.min(self.hi) - lo.max(self.lo) + 1).clamp(0, self.most.max(0));
        usize::try_from(n).unwrap_or(0).div_ceil(cells.max(1))
    }
}

/// `cells` with their samples, whose ids span `span`, read in two halves
/// at once: the upper half by `upper` (on a connection of its own) in a
/// thread, the lower by `lower`; each cell's samples stay in id order.
/// Each reader is given its ids and the room to reserve per cell: the
/// lower reserves its cells' whole lists, so the upper half's samples
/// join them without growing them. Decoding rows was half of a report of
/// 10^6 samples.
pub fn in_halves<L, U>(
    cells: Vec<CellRec>,
    span: IdSpan,
    lower: L,
    upper: U,
) -> anyhow::Result<Vec<super::StoredCell>>
where
    L: FnOnce(&[CellRec], i64, i64, usize) -> anyhow::Result<Vec<Vec<SampleRec>>>,
    U: FnOnce(&[CellRec], i64, i64, usize) -> anyhow::Result<Vec<Vec<SampleRec>>> + Send,
{
    let (lo, hi) = (span.lo, span.hi);
    let mid = lo + (hi - lo) / 2;
    let (lower, upper) = std::thread::scope(|t| {
        let cells = &cells;
        let upper =
            t.spawn(move || upper(cells, mid + 1, hi, span.per_cell(mid + 1, hi, cells.len())));
        let lower = lower(cells, lo, mid, span.per_cell(lo, hi, cells.len()));
        let upper = upper
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the second reader of the store stopped")));
        (lower, upper)
    });
    let mut lower = lower?;
    for (l, u) in lower.iter_mut().zip(upper?) {
        l.extend(u);
    }
    Ok(cells.into_iter().zip(lower).collect())
}

/// The samples `read` gives, in a list per cell of `cells` (in their
/// order), each list made with room for `reserve` samples; a sample of
/// another cell is left out.
pub fn bucketed(
    cells: &[CellRec],
    reserve: usize,
    read: impl FnOnce(&mut dyn FnMut(SampleRec) -> anyhow::Result<()>) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Vec<SampleRec>>> {
    let index = IdIndex::new(cells.iter().map(|c| c.id));
    let mut samples: Vec<Vec<SampleRec>> =
        cells.iter().map(|_| Vec::with_capacity(reserve)).collect();
    read(&mut |s| {
        if let Some(i) = index.get(s.cell_id) {
            samples[i].push(s);
        }
        Ok(())
    })?;
    Ok(samples)
}

#[cfg(test)]
mod tests {
    use super::IdIndex;

    /// Consecutive ids, ids far apart and ids missing each find their
    /// position or none, whichever layout the index chose.
    #[test]
    fn id_index_finds_positions() {
        for ids in [
            vec![7, 5, 6, 9],
            vec![3, 1_000_000, -4, i64::MAX, i64::MIN],
            vec![],
        ] {
            let ix = IdIndex::new(ids.iter().copied());
            for (i, id) in ids.iter().enumerate() {
                assert_eq!(ix.get(*id), Some(i), "{id} of {ids:?}");
            }
            for id in [8, 4, 0, 2, 1_000_001, -5] {
                assert_eq!(ix.get(id), None, "{id} of {ids:?}");
            }
        }
    }
}
