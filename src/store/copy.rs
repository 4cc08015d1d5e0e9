//! `kbench store copy`: runs and their campaigns from one store to another
//! (a laptop's SQLite into the lab's PostgreSQL and back), through the
//! same traits every backend implements. Every write is keyed by the
//! stable identities (campaign name/hash/generation, run UUID, cell key,
//! sample cell/metric/round/seq, failure seq), so copying twice, or
//! copying a run that is partly there already, adds only what is missing.

use super::{BATCH, CampaignQuery, NewRun, Scope, StoreRead, StoreWrite};
use crate::record::{CampaignKey, RunStatus};

/// What one copy added.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Copied {
    /// Runs that were not in the destination yet.
    pub runs: usize,
    /// Campaigns the copied runs belong to (found or created).
    pub campaigns: usize,
    /// Samples that were not in the destination yet.
    pub samples: usize,
}

/// Copy every run of `from` (only the runs of these campaigns, by id, when
/// `campaigns` is not empty: `select::campaigns` resolves names) into `to`.
pub fn copy(
    from: &dyn StoreRead,
    to: &mut dyn StoreWrite,
    campaigns: &[i64],
) -> anyhow::Result<Copied> {
    copy_with(from, to, campaigns, &|_, _| {})
}

/// [`copy`], passing each run's host and each cell through `relabel` on
/// the way (the fleet names the host and adds its labels to the cells'
/// system state). It must give the same result every time, so that a
/// second copy finds what the first wrote.
pub fn copy_with(
    from: &dyn StoreRead,
    to: &mut dyn StoreWrite,
    campaigns: &[i64],
    relabel: &dyn Fn(&mut String, Option<&mut crate::record::CellInfo>),
) -> anyhow::Result<Copied> {
    copy_filtered(from, to, campaigns, relabel, &mut |_, _, _| true)
}

/// [`copy_with`], copying only the samples `keep(run UUID, cell key,
/// sample)` accepts (the fleet copies no sample beyond a plan).
pub fn copy_filtered(
    from: &dyn StoreRead,
    to: &mut dyn StoreWrite,
    campaigns: &[i64],
    relabel: &dyn Fn(&mut String, Option<&mut crate::record::CellInfo>),
    keep: &mut dyn FnMut(&str, &str, &super::SampleRec) -> bool,
) -> anyhow::Result<Copied> {
    let runs = if campaigns.is_empty() {
        from.runs(None)?
    } else {
        let mut v = Vec::new();
        for &id in campaigns {
            v.extend(from.runs(Some(id))?);
        }
        v.sort_by_key(|r| r.id);
        v.dedup_by_key(|r| r.id);
        v
    };
    // Which campaign each run belongs to (runs name only the campaign's
    // name; its identity needs the campaign row).
    let mut run_campaign: std::collections::HashMap<i64, super::CampaignRow> = Default::default();
    let mut names: Vec<&str> = runs.iter().filter_map(|r| r.campaign.as_deref()).collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        for c in from.campaigns(CampaignQuery::Named(name))? {
            for r in from.runs(Some(c.id))? {
                run_campaign.insert(r.id, c.clone());
            }
        }
    }
    let mut done = Copied::default();
    let mut campaign_ids: std::collections::HashMap<String, i64> = Default::default();
    for run in &runs {
        let details = from.run_details(run.id)?;
        // The run's campaign, by its identity.
        let campaign = match run_campaign.get(&run.id) {
            Some(c) => {
                let key = CampaignKey {
                    name: c.name.clone(),
                    plan_hash: c.plan_hash.clone(),
                    generation: c.generation,
                    plan_text: c.plan_text.clone(),
                };
                let label = format!("{}\0{}", c.name, c.hash_label());
                let id = match campaign_ids.get(&label) {
                    Some(id) => *id,
                    None => {
                        let id = to.campaign(&key)?;
                        campaign_ids.insert(label, id);
                        done.campaigns += 1;
                        id
                    }
                };
                Some(id)
            }
            None => None,
        };
        let existed = to.run_id(&run.uuid)?.is_some();
        let mut host = run.host.clone();
        relabel(&mut host, None);
        let run_id = to.begin_run(&NewRun {
            uuid: run.uuid.clone(),
            campaign,
            host,
            started: run.started,
            fingerprint: details.fingerprint,
            config: details.config,
            overhead_ns: run.overhead_ns,
            labels: run.labels.clone(),
        })?;
        if !existed {
            done.runs += 1;
        }
        let cell_ids = copy_cells(from, to, run, run_id, relabel, keep, &mut done)?;
        for f in from.failures(Scope::Run(run.id))? {
            let Some(&(cell_id, _)) = cell_ids.get(&f.cell_id) else {
                continue;
            };
            to.add_failure(&super::FailureRec {
                run_id,
                cell_id,
                ..f
            })?;
        }
        for v in from.verdicts(Scope::Run(run.id))? {
            to.add_verdict(&super::VerdictRec { run_id, ..v })?;
        }
        if run.ended.is_some() || run.status != RunStatus::Running {
            to.finish_run(run_id, run.ended.unwrap_or(run.started), run.status)?;
        }
    }
    // The fleet state of each plan copied goes with it (a newer one in
    // the destination stays).
    let mut plans: Vec<(&str, &str)> = (run_campaign.values())
        .map(|c| (c.name.as_str(), c.plan_hash.as_str()))
        .collect();
    plans.sort_unstable();
    plans.dedup();
    for (name, hash) in plans {
        for h in from.fleet_hosts(name, hash)? {
            to.set_fleet_host(&h)?;
        }
    }
    Ok(done)
}

/// Copy one run's cells (as `run_id` in `to`), their profiles and the
/// samples `keep` accepts; the new cell id and key of each old one.
fn copy_cells(
    from: &dyn StoreRead,
    to: &mut dyn StoreWrite,
    run: &super::RunRow,
    run_id: i64,
    relabel: &dyn Fn(&mut String, Option<&mut crate::record::CellInfo>),
    keep: &mut dyn FnMut(&str, &str, &super::SampleRec) -> bool,
    done: &mut Copied,
) -> anyhow::Result<std::collections::HashMap<i64, (i64, String)>> {
    // Source cell id -> (destination id, key).
    let mut cell_ids = std::collections::HashMap::new();
    for mut cell in from.cell_recs(Scope::Run(run.id))? {
        relabel(&mut String::new(), Some(&mut cell.info));
        let id = to.add_cell(run_id, &cell.info)?;
        if cell.placement.is_some() || !cell.notes.is_empty() {
            to.update_cell(id, cell.placement.as_deref(), &cell.notes)?;
        }
        if let Some(s) = cell.status {
            to.finish_cell(id, s)?;
        }
        for p in from.profiles(cell.id)? {
            to.add_profile(&super::ProfileRec { cell_id: id, ..p })?;
        }
        cell_ids.insert(cell.id, (id, cell.info.key));
    }
    // The samples streamed through one batch: memory stays flat
    // however many the run holds.
    let mut batch = Vec::with_capacity(BATCH);
    from.each_sample(Scope::Run(run.id), &mut |s| {
        let Some((id, key)) = cell_ids.get(&s.cell_id) else {
            return Ok(());
        };
        if keep(&run.uuid, key, &s) {
            batch.push(super::SampleRec { cell_id: *id, ..s });
        }
        if batch.len() >= BATCH {
            done.samples += to.add_samples(run_id, &batch)?;
            batch.clear();
        }
        Ok(())
    })?;
    done.samples += to.add_samples(run_id, &batch)?;
    Ok(cell_ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sqlite::SqliteStore;
    use crate::store::suite;

    #[test]
    fn copies_once_by_identity() {
        let dir = tempfile::tempdir().unwrap();
        let mut a =
            SqliteStore::open(&dir.path().join("a.db"), crate::store::Access::Write).unwrap();
        suite::round_trip(&mut a);
        let mut b =
            SqliteStore::open(&dir.path().join("b.db"), crate::store::Access::Write).unwrap();
        let first = copy(&a, &mut b, &[]).unwrap();
        assert_eq!((first.runs, first.samples), (3, 8));
        let again = copy(&a, &mut b, &[]).unwrap();
        assert_eq!(
            (again.runs, again.samples),
            (0, 0),
            "copying twice adds nothing"
        );
        let (ra, rb) = (a.runs(None).unwrap(), b.runs(None).unwrap());
        assert_eq!(ra.len(), rb.len());
        for (x, y) in ra.iter().zip(&rb) {
            assert_eq!(
                (&x.uuid, &x.campaign, x.cells, x.samples, x.status, x.ended),
                (&y.uuid, &y.campaign, y.cells, y.samples, y.status, y.ended)
            );
        }
        let ca = a.cells(Scope::Run(ra[0].id)).unwrap();
        let cb = b.cells(Scope::Run(rb[0].id)).unwrap();
        for ((x, xs), (y, ys)) in ca.iter().zip(&cb) {
            assert_eq!(
                (&x.info, &x.placement, &x.notes, x.status),
                (&y.info, &y.placement, &y.notes, y.status)
            );
            let v = |s: &[super::super::SampleRec]| {
                s.iter()
                    .map(|s| (s.metric(), s.round, s.seq, s.value, s.t))
                    .collect::<Vec<_>>()
            };
            assert_eq!(v(xs), v(ys));
        }
        assert_eq!(b.failures(Scope::Run(rb[0].id)).unwrap().len(), 1);
        let verdicts = |st: &SqliteStore, id| {
            st.verdicts(Scope::Run(id))
                .unwrap()
                .into_iter()
                .map(|v| (v.kind, v.body))
                .collect::<Vec<_>>()
        };
        assert_eq!(verdicts(&a, ra[0].id), verdicts(&b, rb[0].id));
        assert_eq!(verdicts(&b, rb[0].id).len(), 1);
        // The fleet state of the campaign's plan goes with it.
        let h = crate::store::FleetHostRec {
            plan: "c".into(),
            plan_hash: "abc".into(),
            host: "a".into(),
            state: "interrupted".into(),
            updated: 5.0,
            last_error: None,
        };
        a.set_fleet_host(&h).unwrap();
        copy(&a, &mut b, &[]).unwrap();
        assert_eq!(b.fleet_hosts("c", "abc").unwrap(), vec![h]);
        // Only the campaign named: the campaign `c` has all three runs.
        let mut c =
            SqliteStore::open(&dir.path().join("c.db"), crate::store::Access::Write).unwrap();
        let named = crate::select::campaigns(&a, &["c".into()]).unwrap();
        let only = copy(&a, &mut c, &named).unwrap();
        assert_eq!(only.runs, 3);
        let e = crate::select::campaigns(&a, &["nope".into()]).unwrap_err();
        assert!(e.to_string().contains("no campaign `nope`"), "{e}");
    }
}
