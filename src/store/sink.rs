//! The store as a consumer of the event stream: maps each event's stable
//! identities (run UUID, cell key) to the store's ids and writes it
//! through [`StoreWrite`], idempotently. The runner's own runs, `kbench
//! ingest` and the fleet coordinator all write through this one path.

use std::collections::HashMap;
use std::time::Instant;

use super::{BATCH, BATCH_AGE, FailureRec, Names, NewRun, SampleRec, StoreWrite};
use crate::error::bad_input;
use crate::event::{Event, Sink};
use crate::record::Metric;

struct CellIds {
    id: i64,
    metrics: Vec<Metric>,
}

struct RunIds {
    id: i64,
    cells: HashMap<String, CellIds>,
    /// `run_ended` was seen.
    ended: bool,
}

pub struct StoreSink<'a> {
    store: &'a mut dyn StoreWrite,
    runs: HashMap<String, RunIds>,
    /// Samples written that were not in the store yet.
    pub added: usize,
    /// Batched or atomic: samples wait here, of one run, and are written
    /// a batch at a time.
    batch: Option<Batch>,
    /// Every write in one transaction, until [`StoreSink::commit`].
    atomic: bool,
}

#[derive(Default)]
struct Batch {
    run_id: i64,
    samples: Vec<SampleRec>,
    /// When its first sample came.
    since: Option<Instant>,
}

impl<'a> StoreSink<'a> {
    /// Each event written as it comes, each write committed at once (a
    /// run's samples are stored the moment they are announced).
    pub fn new(store: &'a mut dyn StoreWrite) -> StoreSink<'a> {
        StoreSink {
            store,
            runs: HashMap::new(),
            added: 0,
            batch: None,
            atomic: false,
        }
    }

    /// Samples committed in transactions of up to [`BATCH`] samples or
    /// [`BATCH_AGE`], anything else at once (after the samples before it):
    /// for a stream whose source keeps its own copy (a fleet host), so a
    /// crash loses at most one batch it can send again. The caller calls
    /// [`StoreSink::flush`] when the stream pauses, and before it drops
    /// the sink.
    pub fn batched(store: &'a mut dyn StoreWrite) -> StoreSink<'a> {
        let mut s = StoreSink::new(store);
        s.batch = Some(Batch::default());
        s
    }

    /// Every event in one transaction, stored by [`StoreSink::commit`]:
    /// an import or an ingested stream is stored whole or not at all
    /// (an error, an interruption or a kill leaves the store as it was).
    pub fn atomic(store: &'a mut dyn StoreWrite) -> anyhow::Result<StoreSink<'a>> {
        store.begin()?;
        let mut s = StoreSink::batched(store);
        s.atomic = true;
        Ok(s)
    }

    /// Store everything of an [`StoreSink::atomic`] sink; the new samples.
    pub fn commit(mut self) -> anyhow::Result<usize> {
        self.flush()?;
        self.batch = None;
        self.atomic = false;
        self.store.commit()?;
        Ok(self.added)
    }

    /// The store's id of a run this sink has seen begin.
    pub fn run_id(&self, uuid: &str) -> Option<i64> {
        self.runs.get(uuid).map(|r| r.id)
    }

    /// The id of a run the store holds, whether or not this sink saw it.
    pub fn stored_run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        self.store.run_id(uuid)
    }

    /// Write the waiting samples now; a conflict names the cell and run.
    pub fn flush(&mut self) -> anyhow::Result<()> {
        let Some(b) = &mut self.batch else {
            return Ok(());
        };
        if b.samples.is_empty() {
            return Ok(());
        }
        let samples = std::mem::take(&mut b.samples);
        let run_id = b.run_id;
        b.since = None;
        match self.store.add_samples(run_id, &samples) {
            Ok(n) => {
                self.added += n;
                // Keep the allocation for the next batch.
                if let Some(b) = &mut self.batch {
                    b.samples = samples;
                    b.samples.clear();
                }
                Ok(())
            }
            Err(e) => Err(self.name_conflict(e)),
        }
    }

    /// A conflict's cell and run, by the identities the stream uses.
    fn name_conflict(&self, e: anyhow::Error) -> anyhow::Error {
        let Some(c) = e.downcast_ref::<super::Conflict>() else {
            return e;
        };
        let named = self.runs.iter().find_map(|(uuid, r)| {
            r.cells
                .iter()
                .find(|(_, ids)| ids.id == c.cell_id)
                .map(|(key, _)| format!("run {uuid}, cell `{key}`"))
        });
        match named {
            Some(n) => e.context(n),
            None => e,
        }
    }

    /// Mark every run this sink saw begin but not end (the producer
    /// failed, or its stream broke off) as ended with `status`, so no run
    /// stays `running` in the store.
    pub fn close_open_runs(&mut self, status: crate::record::RunStatus) -> anyhow::Result<()> {
        self.flush()?;
        for run in self.runs.values_mut().filter(|r| !r.ended) {
            self.store
                .finish_run(run.id, crate::ids::unix_now(), status)?;
            run.ended = true;
        }
        Ok(())
    }

    fn run(&mut self, uuid: &str) -> anyhow::Result<&mut RunIds> {
        self.runs.get_mut(uuid).ok_or_else(|| {
            bad_input!("event for run {uuid}, which the stream did not begin (no run_begun)")
        })
    }

    fn cell(&mut self, uuid: &str, key: &str) -> anyhow::Result<(i64, &CellIds)> {
        let run = self.run(uuid)?;
        let id = run.id;
        let cell = run.cells.get(key).ok_or_else(|| {
            bad_input!("event for cell `{key}` of run {uuid}, which the stream did not prepare")
        })?;
        Ok((id, cell))
    }

    /// A run begins: its campaign found or made, the run recorded.
    fn run_begun(&mut self, b: &crate::event::RunBegun) -> anyhow::Result<()> {
        let campaign = match &b.campaign {
            Some(k) => Some(self.store.campaign(k)?),
            None => None,
        };
        let id = self.store.begin_run(&NewRun {
            uuid: b.run.clone(),
            campaign,
            host: b.host.clone(),
            started: b.started,
            fingerprint: b.fingerprint.clone(),
            config: b.config.clone(),
            overhead_ns: b.overhead_ns,
            labels: b.labels.clone(),
        })?;
        self.runs.insert(
            b.run.clone(),
            RunIds {
                id,
                cells: HashMap::new(),
                ended: false,
            },
        );
        Ok(())
    }

    /// A sample's values checked against its cell's metrics, then
    /// batched (or written at once when not batching).
    fn sample(&mut self, s: &crate::event::SampleEvent) -> anyhow::Result<()> {
        let (run_id, cell) = self.cell(&s.run, &s.cell)?;
        let mut recs: Vec<SampleRec> = Vec::with_capacity(s.values.len());
        for (name, value) in &s.values {
            let m = cell
                .metrics
                .iter()
                .find(|m| &m.name == name)
                .ok_or_else(|| {
                    bad_input!("sample of cell `{}` has undeclared metric `{name}`", s.cell)
                })?;
            crate::stats::sample::check_value(*value)
                .map_err(|why| bad_input!("sample of cell `{}`: `{name}` is {why}", s.cell))?;
            let seq = recs.iter().filter(|r| r.metric() == m.name).count() as u32;
            recs.push(SampleRec {
                cell_id: cell.id,
                names: Names::new(&m.name, &m.unit),
                value: *value,
                round: s.round,
                seq,
                t: s.t,
                process: s.process,
            });
        }
        match &mut self.batch {
            Some(b) => {
                if b.run_id != run_id || b.samples.len() >= BATCH {
                    self.flush()?;
                }
                let b = self.batch.as_mut().expect("batched");
                b.run_id = run_id;
                b.samples.extend(recs);
                let since = *b.since.get_or_insert_with(Instant::now);
                if !self.atomic && (b.samples.len() >= BATCH || since.elapsed() >= BATCH_AGE) {
                    self.flush()?;
                }
            }
            None => {
                let n = self
                    .store
                    .add_samples(run_id, &recs)
                    .map_err(|e| self.name_conflict(e))?;
                self.added += n;
            }
        }
        Ok(())
    }
}

impl Drop for StoreSink<'_> {
    /// An atomic sink dropped before its commit stores nothing; a batched
    /// one writes what waits (errors were the caller's to see by
    /// [`StoreSink::flush`]).
    fn drop(&mut self) {
        if self.atomic {
            let _ = self.store.rollback();
        } else {
            let _ = self.flush();
        }
    }
}

impl Sink for StoreSink<'_> {
    /// What is stored is [redacted](Event::redacted) (whoever produced
    /// it: an ingested stream, an import, a fleet's host); the cells are
    /// found by the keys the stream uses.
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        let redacted = match e {
            Event::Sample(_) | Event::Warmup(_) | Event::CellDone(_) => None,
            e => Some(e.redacted()),
        };
        let shown = redacted.as_deref().unwrap_or(e);
        // Samples wait in a batch; anything else writes what waits first.
        if !matches!(e, Event::Sample(_)) {
            self.flush()?;
        }
        match (e, shown) {
            (_, Event::RunBegun(b)) => self.run_begun(b)?,
            (Event::CellPrepared(c), Event::CellPrepared(shown)) => {
                let run_id = self.run(&c.run)?.id;
                let id = self.store.add_cell(run_id, &shown.cell)?;
                self.run(&c.run)?.cells.insert(
                    c.cell.key.clone(),
                    CellIds {
                        id,
                        metrics: c.cell.metrics.clone(),
                    },
                );
            }
            (Event::Sample(s), _) => self.sample(s)?,
            (Event::Failure(f), Event::Failure(shown)) => {
                let (run_id, cell) = self.cell(&f.run, &f.cell)?;
                let rec = FailureRec {
                    run_id,
                    cell_id: cell.id,
                    seq: f.seq,
                    round: f.round,
                    t: f.t,
                    message: shown.message.clone(),
                };
                self.store.add_failure(&rec)?;
            }
            (Event::Note(n), Event::Note(shown)) => {
                let id = self.cell(&n.run, &n.cell)?.1.id;
                self.store
                    .update_cell(id, shown.placement.as_deref(), &shown.notes)?;
            }
            (Event::CellDone(d), _) => {
                let id = self.cell(&d.run, &d.cell)?.1.id;
                self.store.finish_cell(id, d.status)?;
            }
            (_, Event::Verdict(v)) => {
                let run_id = self.run(&v.run)?.id;
                self.store.add_verdict(&super::VerdictRec {
                    run_id,
                    kind: v.kind.clone(),
                    body: v.body.clone(),
                })?;
            }
            (Event::Profile(p), _) => {
                let cell_id = self.cell(&p.run, &p.cell)?.1.id;
                self.store.add_profile(&super::ProfileRec {
                    cell_id,
                    round: p.round,
                    stacks: p.stacks.clone(),
                })?;
            }
            (Event::Warmup(_) | Event::Warning(_), _) => {}
            (Event::RunEnded(r), _) => {
                let run = self.run(&r.run)?;
                run.ended = true;
                let id = run.id;
                self.store.finish_run(id, r.ended, r.status)?;
            }
            // `redacted` keeps the variant.
            _ => unreachable!("an event and its redacted copy differ in kind"),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Access, StoreRead, sqlite::SqliteStore};

    const RUN: &str = "00000000-0000-4000-8000-000000000001";

    fn event(line: &str) -> Event {
        let mut r = crate::event::jsonl::Reader::new(line.as_bytes(), "test");
        r.next_event().unwrap().unwrap()
    }

    fn sample(round: usize) -> Event {
        event(&format!(
            r#"{{"event":"sample","run":"{RUN}","cell":"c","round":{round},"t":1.5,"values":[["ns/op",{round}.5]]}}"#
        ))
    }

    /// Samples stored so far, read through a second connection.
    fn stored(path: &std::path::Path) -> i64 {
        let st = SqliteStore::open(path, Access::Read).unwrap();
        st.runs(None).unwrap().iter().map(|r| r.samples).sum()
    }

    /// A batched sink commits a batch when it is full or its oldest sample
    /// has waited long enough, and whatever waits on `flush`, on any other
    /// event and when dropped.
    #[test]
    fn a_batched_sink_commits_full_or_aged_batches() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut st = SqliteStore::open(&path, Access::Write).unwrap();
        let mut sink = StoreSink::batched(&mut st);
        sink.event(&event(&format!(
            r#"{{"event":"run_begun","schema":1,"run":"{RUN}","campaign":null,"host":"h","started":1.0,"fingerprint":{{"hostname":"h"}},"config":{{"version":2,"plan":"p","samples":3000,"sample_time":0.1,"warmup":0,"seed":1,"stop":null,"force":false,"argv":[]}},"overhead_ns":0.3,"planned_cells":1,"planned_samples":3000}}"#
        )))
        .unwrap();
        sink.event(&event(&format!(
            r#"{{"event":"cell_prepared","run":"{RUN}","cell":{{"key":"c","bench":"getppid","source":"getppid","kind":"micro","params":{{}},"factors":{{}},"label_params":[],"metrics":[{{"name":"ns/op","unit":"ns","direction":"lower"}}],"readings":{{}}}}}}"#
        )))
        .unwrap();
        let t = Instant::now();
        for r in 0..BATCH - 1 {
            sink.event(&sample(r)).unwrap();
        }
        // (Unless this machine took longer than a batch's age for it.)
        let quick = t.elapsed() < BATCH_AGE;
        if quick {
            assert_eq!(stored(&path), 0, "a batch waits until it is full");
        }
        sink.event(&sample(BATCH - 1)).unwrap();
        if quick {
            assert_eq!(stored(&path), BATCH as i64);
        }
        sink.flush().unwrap();
        sink.event(&sample(BATCH)).unwrap();
        std::thread::sleep(BATCH_AGE + BATCH_AGE / 2);
        sink.event(&sample(BATCH + 1)).unwrap();
        assert_eq!(stored(&path), BATCH as i64 + 2, "an aged batch is written");
        sink.event(&sample(BATCH + 2)).unwrap();
        sink.flush().unwrap();
        assert_eq!(stored(&path), BATCH as i64 + 3);
        sink.event(&sample(BATCH + 3)).unwrap();
        drop(sink);
        assert_eq!(
            stored(&path),
            BATCH as i64 + 4,
            "dropping writes what waits"
        );
    }
}
