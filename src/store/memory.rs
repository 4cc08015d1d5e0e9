//! An in-memory store: the test double behind deterministic tests of the
//! report, compare and campaign logic (no file, no timing). It keeps the
//! same identities and idempotence as the real backends and passes the
//! same store suite.

use indexmap::IndexMap;

use super::{
    CampaignQuery, CampaignRow, CellProgress, CellRec, FailureRec, FleetHostRec, NewRun,
    RunDetails, RunRow, SampleRec, Scope, StoreRead, StoreWrite, StoredCell, VerdictRec,
};
use crate::record::{CampaignKey, CellInfo, CellStatus, RunStatus};

#[derive(Clone)]
struct Run {
    row: RunRow,
    campaign_id: Option<i64>,
    details: RunDetails,
}

#[derive(Clone, Default)]
struct Tables {
    campaigns: Vec<CampaignRow>,
    runs: Vec<Run>,
    cells: Vec<CellRec>,
    samples: Vec<(i64, SampleRec)>,
    failures: Vec<FailureRec>,
    verdicts: Vec<VerdictRec>,
    profiles: Vec<super::ProfileRec>,
    fleet: Vec<FleetHostRec>,
}

#[derive(Default)]
pub struct MemoryStore {
    t: Tables,
    /// The tables as `begin` found them, for `rollback`.
    saved: Option<Tables>,
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
                .t
                .runs
                .iter()
                .any(|r| r.row.id == run_id && r.campaign_id == Some(c)),
        }
    }

    fn row(&self, r: &Run) -> RunRow {
        RunRow {
            cells: self.t.cells.iter().filter(|c| c.run_id == r.row.id).count() as i64,
            samples: self
                .t
                .samples
                .iter()
                .filter(|(run, _)| *run == r.row.id)
                .count() as i64,
            campaign: r.campaign_id.and_then(|c| {
                self.t
                    .campaigns
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
            .t
            .runs
            .iter()
            .filter(|r| campaign.is_none() || r.campaign_id == campaign)
            .map(|r| self.row(r))
            .collect())
    }

    fn run(&self, id: i64) -> anyhow::Result<Option<RunRow>> {
        Ok(self
            .t
            .runs
            .iter()
            .find(|r| r.row.id == id)
            .map(|r| self.row(r)))
    }

    fn run_details(&self, id: i64) -> anyhow::Result<RunDetails> {
        self.t
            .runs
            .iter()
            .find(|r| r.row.id == id)
            .map(|r| r.details.clone())
            .ok_or_else(|| anyhow::anyhow!("no run {id}"))
    }

    fn last_run_id(&self) -> anyhow::Result<Option<i64>> {
        Ok(self.t.runs.last().map(|r| r.row.id))
    }

    fn campaigns(&self, q: CampaignQuery<'_>) -> anyhow::Result<Vec<CampaignRow>> {
        Ok(self
            .t
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
            .t
            .cells
            .iter()
            .filter(|c| self.in_scope(c.run_id, scope))
            .map(|c| {
                let mine = self
                    .t
                    .samples
                    .iter()
                    .filter(|(_, s)| s.cell_id == c.id)
                    .map(|(_, s)| *s)
                    .collect();
                (c.clone(), mine)
            })
            .collect())
    }

    fn failures(&self, scope: Scope) -> anyhow::Result<Vec<FailureRec>> {
        Ok(self
            .t
            .failures
            .iter()
            .filter(|f| self.in_scope(f.run_id, scope))
            .cloned()
            .collect())
    }

    fn profiles(&self, cell_id: i64) -> anyhow::Result<Vec<super::ProfileRec>> {
        let mut v: Vec<_> = (self.t.profiles.iter())
            .filter(|p| p.cell_id == cell_id)
            .cloned()
            .collect();
        v.sort_by_key(|p| p.round);
        Ok(v)
    }

    fn verdicts(&self, scope: Scope) -> anyhow::Result<Vec<VerdictRec>> {
        Ok(self
            .t
            .verdicts
            .iter()
            .filter(|v| self.in_scope(v.run_id, scope))
            .cloned()
            .collect())
    }

    fn fleet_hosts(&self, plan: &str, plan_hash: &str) -> anyhow::Result<Vec<FleetHostRec>> {
        let mut v: Vec<FleetHostRec> = (self.t.fleet.iter())
            .filter(|h| h.plan == plan && h.plan_hash == plan_hash)
            .cloned()
            .collect();
        v.sort_by(|a, b| a.host.cmp(&b.host));
        Ok(v)
    }

    fn progress(&self, campaign: i64) -> anyhow::Result<Vec<CellProgress>> {
        let mut acc: IndexMap<(String, String, String), u32> = IndexMap::new();
        for c in &self.t.cells {
            if !self.in_scope(c.run_id, Scope::Campaign(campaign)) {
                continue;
            }
            let mut rounds: Vec<u32> = self
                .t
                .samples
                .iter()
                .filter(|(_, s)| s.cell_id == c.id)
                .map(|(_, s)| s.round)
                .collect();
            rounds.sort_unstable();
            rounds.dedup();
            let host = self
                .t
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
        if let Some(c) = self.t.campaigns.iter().find(|c| {
            c.name == key.name && c.plan_hash == key.plan_hash && c.generation == key.generation
        }) {
            return Ok(c.id);
        }
        let id = self.t.campaigns.len() as i64 + 1;
        self.t.campaigns.push(CampaignRow {
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
        let id = self.t.runs.len() as i64 + 1;
        self.t.runs.push(Run {
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
                labels: run.labels.clone(),
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
            .t
            .runs
            .iter()
            .find(|r| r.row.uuid == uuid)
            .map(|r| r.row.id))
    }

    fn add_cell(&mut self, run_id: i64, cell: &CellInfo) -> anyhow::Result<i64> {
        if let Some(id) = self.cell_id(run_id, &cell.key)? {
            return Ok(id);
        }
        let id = self.t.cells.len() as i64 + 1;
        self.t.cells.push(CellRec {
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
            .t
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
        if let Some(c) = self.t.cells.iter_mut().find(|c| c.id == cell_id) {
            c.placement = placement.map(str::to_string);
            c.notes = notes.clone();
        }
        Ok(())
    }

    fn finish_cell(&mut self, cell_id: i64, status: CellStatus) -> anyhow::Result<()> {
        if let Some(c) = self.t.cells.iter_mut().find(|c| c.id == cell_id) {
            c.status = Some(status);
        }
        Ok(())
    }

    fn add_samples(&mut self, run_id: i64, samples: &[SampleRec]) -> anyhow::Result<usize> {
        let mut added = 0;
        for s in samples {
            let dup = self.t.samples.iter().find(|(_, x)| {
                x.cell_id == s.cell_id
                    && x.metric() == s.metric()
                    && x.round == s.round
                    && x.seq == s.seq
            });
            match dup {
                Some((_, x)) if !super::same_value(x.value, s.value) => {
                    return Err(super::Conflict {
                        cell_id: s.cell_id,
                        metric: s.metric().to_owned(),
                        round: s.round,
                        stored: x.value,
                        new: s.value,
                    }
                    .into());
                }
                Some(_) => {}
                None => {
                    self.t.samples.push((run_id, *s));
                    added += 1;
                }
            }
        }
        Ok(added)
    }

    fn add_failure(&mut self, f: &FailureRec) -> anyhow::Result<()> {
        if !self
            .t
            .failures
            .iter()
            .any(|x| x.cell_id == f.cell_id && x.seq == f.seq)
        {
            self.t.failures.push(f.clone());
        }
        Ok(())
    }

    fn finish_run(&mut self, run_id: i64, ended: f64, status: RunStatus) -> anyhow::Result<()> {
        if let Some(r) = self.t.runs.iter_mut().find(|r| r.row.id == run_id) {
            r.row.ended = Some(ended);
            r.row.status = status;
        }
        Ok(())
    }

    fn add_profile(&mut self, p: &super::ProfileRec) -> anyhow::Result<()> {
        let t = &mut self.t.profiles;
        if !t
            .iter()
            .any(|x| x.cell_id == p.cell_id && x.round == p.round)
        {
            t.push(p.clone());
        }
        Ok(())
    }

    fn add_verdict(&mut self, v: &VerdictRec) -> anyhow::Result<()> {
        if !self
            .t
            .verdicts
            .iter()
            .any(|x| x.run_id == v.run_id && x.kind == v.kind)
        {
            self.t.verdicts.push(v.clone());
        }
        Ok(())
    }

    fn set_fleet_host(&mut self, h: &FleetHostRec) -> anyhow::Result<()> {
        let same =
            |x: &FleetHostRec| x.plan == h.plan && x.plan_hash == h.plan_hash && x.host == h.host;
        match self.t.fleet.iter_mut().find(|x| same(x)) {
            Some(x) if x.updated <= h.updated => *x = h.clone(),
            Some(_) => {}
            None => self.t.fleet.push(h.clone()),
        }
        Ok(())
    }

    fn begin(&mut self) -> anyhow::Result<()> {
        anyhow::ensure!(self.saved.is_none(), "a transaction is open already");
        self.saved = Some(self.t.clone());
        Ok(())
    }

    fn commit(&mut self) -> anyhow::Result<()> {
        self.saved = None;
        Ok(())
    }

    fn rollback(&mut self) -> anyhow::Result<()> {
        if let Some(t) = self.saved.take() {
            self.t = t;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passes_the_store_suite() {
        super::super::suite::round_trip(&mut super::MemoryStore::new());
        super::super::suite::all_or_nothing(&mut super::MemoryStore::new());
        super::super::suite::ended_runs(&mut super::MemoryStore::new());
        super::super::suite::fleet_state(&mut super::MemoryStore::new());
    }
}
