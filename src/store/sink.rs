//! The store as a consumer of the event stream: maps each event's stable
//! identities (run UUID, cell key) to the store's ids and writes it
//! through [`StoreWrite`], idempotently. The runner's own runs, `kbench
//! ingest` and the fleet coordinator all write through this one path.

use std::collections::HashMap;

use super::{FailureRec, NewRun, SampleRec, StoreWrite};
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
    /// In one transaction ([`StoreSink::atomic`]): samples wait here, of
    /// one run, and are written a batch at a time.
    batch: Option<Batch>,
}

#[derive(Default)]
struct Batch {
    run_id: i64,
    samples: Vec<SampleRec>,
}

/// Samples written at once in a transaction: big enough that a million
/// samples cost a hundred statements on PostgreSQL, small enough to keep
/// memory flat.
const BATCH: usize = 8192;

impl<'a> StoreSink<'a> {
    /// Each event written as it comes, each write committed at once (a
    /// run's samples are stored the moment they are announced).
    pub fn new(store: &'a mut dyn StoreWrite) -> StoreSink<'a> {
        StoreSink {
            store,
            runs: HashMap::new(),
            added: 0,
            batch: None,
        }
    }

    /// Every event in one transaction, stored by [`StoreSink::commit`]:
    /// an import or an ingested stream is stored whole or not at all
    /// (an error, an interruption or a kill leaves the store as it was).
    pub fn atomic(store: &'a mut dyn StoreWrite) -> anyhow::Result<StoreSink<'a>> {
        store.begin()?;
        let mut s = StoreSink::new(store);
        s.batch = Some(Batch::default());
        Ok(s)
    }

    /// Store everything of an [`StoreSink::atomic`] sink; the new samples.
    pub fn commit(mut self) -> anyhow::Result<usize> {
        self.flush()?;
        self.batch = None;
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

    /// Write the waiting samples; a conflict names the cell and run.
    fn flush(&mut self) -> anyhow::Result<()> {
        let Some(b) = &mut self.batch else {
            return Ok(());
        };
        if b.samples.is_empty() {
            return Ok(());
        }
        let samples = std::mem::take(&mut b.samples);
        let run_id = b.run_id;
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
}

impl Drop for StoreSink<'_> {
    /// An atomic sink dropped before its commit stores nothing.
    fn drop(&mut self) {
        if self.batch.is_some() {
            let _ = self.store.rollback();
        }
    }
}

impl Sink for StoreSink<'_> {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        // Samples wait in a batch; anything else writes what waits first.
        if !matches!(e, Event::Sample(_)) {
            self.flush()?;
        }
        match e {
            Event::RunBegun(b) => {
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
            }
            Event::CellPrepared(c) => {
                let run_id = self.run(&c.run)?.id;
                let id = self.store.add_cell(run_id, &c.cell)?;
                self.run(&c.run)?.cells.insert(
                    c.cell.key.clone(),
                    CellIds {
                        id,
                        metrics: c.cell.metrics.clone(),
                    },
                );
            }
            Event::Sample(s) => {
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
                    crate::stats::sample::check_value(*value).map_err(|why| {
                        bad_input!("sample of cell `{}`: `{name}` is {why}", s.cell)
                    })?;
                    let seq = recs.iter().filter(|r| *r.metric == *m.name).count() as u32;
                    recs.push(SampleRec {
                        cell_id: cell.id,
                        metric: m.name.as_str().into(),
                        unit: m.unit.as_str().into(),
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
                        let b = self.batch.as_mut().expect("atomic");
                        b.run_id = run_id;
                        b.samples.extend(recs);
                    }
                    None => {
                        let n = self
                            .store
                            .add_samples(run_id, &recs)
                            .map_err(|e| self.name_conflict(e))?;
                        self.added += n;
                    }
                }
            }
            Event::Failure(f) => {
                let (run_id, cell) = self.cell(&f.run, &f.cell)?;
                let rec = FailureRec {
                    run_id,
                    cell_id: cell.id,
                    seq: f.seq,
                    round: f.round,
                    t: f.t,
                    message: f.message.clone(),
                };
                self.store.add_failure(&rec)?;
            }
            Event::Note(n) => {
                let id = self.cell(&n.run, &n.cell)?.1.id;
                self.store
                    .update_cell(id, n.placement.as_deref(), &n.notes)?;
            }
            Event::CellDone(d) => {
                let id = self.cell(&d.run, &d.cell)?.1.id;
                self.store.finish_cell(id, d.status)?;
            }
            Event::Verdict(v) => {
                let run_id = self.run(&v.run)?.id;
                self.store.add_verdict(&super::VerdictRec {
                    run_id,
                    kind: v.kind.clone(),
                    body: v.body.clone(),
                })?;
            }
            Event::Profile(p) => {
                let cell_id = self.cell(&p.run, &p.cell)?.1.id;
                self.store.add_profile(&super::ProfileRec {
                    cell_id,
                    round: p.round,
                    stacks: p.stacks.clone(),
                })?;
            }
            Event::Warmup(_) | Event::Warning(_) => {}
            Event::RunEnded(r) => {
                let run = self.run(&r.run)?;
                run.ended = true;
                let id = run.id;
                self.store.finish_run(id, r.ended, r.status)?;
            }
        }
        Ok(())
    }
}
