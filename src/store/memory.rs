//! An in-memory store: the test double behind deterministic tests of the
//! report, compare and campaign logic (no file, no timing). It keeps the
//! same identities and idempotence as the real backends and passes the
//! same store suite.

use indexmap::IndexMap;

use super::{
    CampaignQuery, CampaignRow, CellProgress, CellRec, FailureRec, NewRun, RunDetails, RunRow,
    SampleRec, Scope, StoreRead, StoreWrite, StoredCell, VerdictRec,
};
use crate::record::{CampaignKey, CellInfo, CellStatus, RunStatus};

struct Run {
    row: RunRow,
    campaign_id: Option<i64>,
    details: RunDetails,
}

#[derive(Default)]
pub struct MemoryStore {
    campaigns: Vec<CampaignRow>,
    runs: Vec<Run>,
    cells: Vec<CellRec>,
    samples: Vec<(i64, SampleRec)>,
    failures: Vec<FailureRec>,
    verdicts: Vec<VerdictRec>,
    /// Time stamps given to new campaigns (tests want fixed ones).
    pub now: f64,
}

impl MemoryStore {
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn in_scope(&self, run_id: i64, scope: Scope) -> bool {
        match scope {
            Scope::Run(id) => run_id == id,
            Scope::Campaign(c) => self
                .runs
                .iter()
                .any(|r| r.row.id == run_id && r.campaign_id == Some(c)),
        }
    }

    fn row(&self, r: &Run) -> RunRow {
        RunRow {
            cells: self.cells.iter().filter(|c| c.run_id == r.row.id).count() as i64,
            samples: self
                .samples
                .iter()
                .filter(|(run, _)| *run == r.row.id)
                .count() as i64,
            campaign: r.campaign_id.and_then(|c| {
                self.campaigns
                    .iter()
                    .find(|x| x.id == c)
                    .map(|x| x.name.clone())
            }),
            ..r.row.clone()
        }
    }
}

impl StoreRead for MemoryStore {
    fn runs(&self, campaign: Option<i64>) -> anyhow::Result<Vec<RunRow>> {
        Ok(self
            .runs
            .iter()
            .filter(|r| campaign.is_none() || r.campaign_id == campaign)
            .map(|r| self.row(r))
            .collect())
    }

    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        Ok(self
            .runs
            .iter()
            .find(|r| r.row.id == id)
            .map(|r| self.row(r)))
    }

    fn run_details(&self, id: i64) -> anyhow::Result<RunDetails> {
        self.runs
            .iter()
            .find(|r| r.row.id == id)
            .map(|r| r.details.clone())
            .ok_or_else(|| anyhow::anyhow!("no run {id}"))
    }

    fn last_run_id(&self) -> anyhow::Result<Option<i64>> {
        Ok(self.runs.last().map(|r| r.row.id))
    }

    fn campaigns(&self, q: CampaignQuery<'_>) -> anyhow::Result<Vec<CampaignRow>> {
        Ok(self
            .campaigns
            .iter()
            .filter(|c| match q {
                CampaignQuery::Named(n) => c.name == n,
                CampaignQuery::Id(i) => c.id == i,
            })
            .cloned()
            .collect())
    }

    fn cells(&self, scope: Scope) -> anyhow::Result<Vec<StoredCell>> {
        Ok(self
            .cells
            .iter()
            .filter(|c| self.in_scope(c.run_id, scope))
            .map(|c| {
                let mine = self
                    .samples
                    .iter()
                    .filter(|(_, s)| s.cell_id == c.id)
                    .map(|(_, s)| s.clone())
                    .collect();
                (c.clone(), mine)
            })
            .collect())
    }

    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>> {
        Ok(self
            .failures
            .iter()
            .filter(|f| self.in_scope(f.run_id, scope))
            .cloned()
            .collect())
    }

    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>> {
        Ok(self
            .verdicts
            .iter()
            .filter(|v| self.in_scope(v.run_id, scope))
            .cloned()
            .collect())
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        let mut acc: IndexMap<(String, String, String), u32> = IndexMap::new();
        for c in &self.cells {
            if !self.in_scope(c.run_id, Scope::Campaign(campaign)) {
                continue;
            }
            let mut rounds: Vec<u32> = self
                .samples
                .iter()
                .filter(|(_, s)| s.cell_id == c.id)
                .map(|(_, s)| s.round)
                .collect();
            rounds.sort_unstable();
            rounds.dedup();
            let host = self
                .runs
                .iter()
                .find(|r| r.row.id == c.run_id)
                .map(|r| r.row.host.clone())
                .unwrap_or_default();
            *acc.entry((c.info.key.clone(), c.info.readings_text(), host))
                .or_default() += rounds.len() as u32;
        }
        Ok(acc
            .into_iter()
            .map(|((key, readings, host), samples)| CellProgress {
                key,
                host,
                readings,
                samples,
            })
            .collect())
    }
}

impl StoreWrite for MemoryStore {
    fn campaign(&mut self, key: &CampaignKey) -> anyhow::Result<i64> {
        if let Some(c) = self.campaigns.iter().find(|c| {
            c.name == key.name && c.plan_hash == key.plan_hash && c.generation == key.generation
        }) {
            return Ok(c.id);
        }
        let id = self.campaigns.len() as i64 + 1;
        self.campaigns.push(CampaignRow {
            id,
            name: key.name.clone(),
            plan_hash: key.plan_hash.clone(),
            generation: key.generation,
            plan_text: key.plan_text.clone(),
            created: self.now,
        });
        Ok(id)
    }

    fn begin_run(&mut self, run: &NewRun) -> anyhow::Result<i64> {
        if let Some(id) = self.run_id(&run.uuid)? {
            return Ok(id);
        }
        let id = self.runs.len() as i64 + 1;
        self.runs.push(Run {
            row: RunRow {
                id,
                uuid: run.uuid.clone(),
                campaign: None,
                host: run.host.clone(),
                started: run.started,
                ended: None,
                status: RunStatus::Running,
                cells: 0,
                samples: 0,
                overhead_ns: run.overhead_ns,
            },
            campaign_id: run.campaign,
            details: RunDetails {
                fingerprint: run.fingerprint.clone(),
                config: run.config.clone(),
            },
        });
        Ok(id)
    }

    fn run_id(&mut self, uuid: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .runs
            .iter()
            .find(|r| r.row.uuid == uuid)
            .map(|r| r.row.id))
    }

    fn add_cell(&mut self, run_id: i64, cell: &CellInfo) -> anyhow::Result<i64> {
        if let Some(id) = self.cell_id(run_id, &cell.key)? {
            return Ok(id);
        }
        let id = self.cells.len() as i64 + 1;
        self.cells.push(CellRec {
            id,
            run_id,
            info: cell.clone(),
            placement: None,
            notes: IndexMap::new(),
            status: None,
        });
        Ok(id)
    }

    fn cell_id(&mut self, run_id: i64, key: &str) -> anyhow::Result<Option<i64>> {
        Ok(self
            .cells
            .iter()
            .find(|c| c.run_id == run_id && c.info.key == key)
            .map(|c| c.id))
    }

    fn update_cell(
        &mut self,
        cell_id: i64,
        placement: Option<&str>,
        notes: &IndexMap<String, String>,
    ) -> anyhow::Result<()> {
        if let Some(c) = self.cells.iter_mut().find(|c| c.id == cell_id) {
            c.placement = placement.map(str::to_string);
            c.notes = notes.clone();
        }
        Ok(())
    }

    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        if let Some(c) = self.cells.iter_mut().find(|c| c.id == cell_id) {
            c.status = Some(status);
        }
        Ok(())
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        let mut added = 0;
        for s in samples {
            let dup = self.samples.iter().any(|(_, x)| {
                x.cell_id == s.cell_id
                    && x.metric == s.metric
                    && x.round == s.round
                    && x.seq == s.seq
            });
            if !dup {
                self.samples.push((run_id, s.clone()));
                added += 1;
            }
        }
        Ok(added)
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        if !self
            .failures
            .iter()
            .any(|x| x.cell_id == f.cell_id && x.seq == f.seq)
        {
            self.failures.push(f.clone());
        }
        Ok(())
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        if let Some(r) = self.runs.iter_mut().find(|r| r.row.id == run_id) {
            r.row.ended = Some(ended);
            r.row.status = status;
        }
        Ok(())
    }

    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()> {
        if !self
            .verdicts
            .iter()
            .any(|x| x.run_id == v.run_id && x.kind == v.kind)
        {
            self.verdicts.push(v.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_the_store_suite() {
        super::super::suite::round_trip(&mut super::MemoryStore::new());
    }
}
