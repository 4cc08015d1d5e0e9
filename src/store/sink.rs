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
}

impl<'a> StoreSink<'a> {
    pub fn new(store: &'a mut dyn StoreWrite) -> StoreSink<'a> {
        StoreSink {
            store,
            runs: HashMap::new(),
            added: 0,
        }
    }

    /// The store's id of a run this sink has seen begin.
    pub fn run_id(&self, uuid: &str) -> Option<i64> {
        self.runs.get(uuid).map(|r| r.id)
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

impl Sink for StoreSink<'_> {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
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
                self.added += self.store.add_samples(run_id, &recs)?;
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
