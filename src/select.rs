//! Operands: how a user names stored results on the command line, in one
//! place for `report`, `compare`, and whatever else reads the store.
//!
//! An operand is a run id (`12`), a campaign (its name for the latest
//! campaign of that name, `campaign:ID`, or the plan file it was run
//! from), optionally narrowed by factor or parameter values
//! (`pipes:zero_copy=true,cpus=UP`, `campaign:3:pti=off`). Resolving one
//! reads the store only: a plan file is hashed, never validated, compiled
//! or run.

use crate::error::bad_input;
use crate::store::{self, CampaignQuery, Scope, StoreRead, StoredCell};
use crate::units::split_operand as split;
use std::collections::HashMap;

/// A parsed and resolved operand.
#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    /// As the user wrote it.
    pub spec: String,
    pub scope: Scope,
    /// `factor=value` narrowing, in order.
    pub filters: Vec<(String, String)>,
}

/// The name of the plan in a plan file, read without validating the plan
/// (which could compile a testcase): just its `name` key.
fn plan_name(path: &str, text: &str) -> anyhow::Result<String> {
    #[derive(serde::Deserialize)]
    struct Named {
        name: String,
    }
    let t: toml::Table = toml::from_str(text)
        .map_err(|e| bad_input!("{path}: not a plan file: {}", e.message().trim()))?;
    let n: Named = t
        .try_into()
        .map_err(|_| bad_input!("{path}: a plan file needs a `name`"))?;
    Ok(n.name)
}

/// What [`campaign`] says of a plan file never run on the store (the
/// fleet tells it from a real failure of a host's export).
pub const NO_CAMPAIGN_YET: &str = "no campaign for this plan yet";

/// The campaign a name stands for: `campaign:ID`, a plan file (its latest
/// campaign of the file's exact text), or a name (its latest campaign).
pub fn campaign(st: &dyn StoreRead, name: &str) -> anyhow::Result<i64> {
    if let Some(id) = name.strip_prefix("campaign:") {
        let id: i64 = id
            .parse()
            .map_err(|_| bad_input!("`{name}`: expected campaign:ID"))?;
        if st.campaigns(CampaignQuery::Id(id))?.is_empty() {
            return Err(bad_input!(
                "no campaign {id} in the store (see `kbench runs`)"
            ));
        }
        return Ok(id);
    }
    if name.ends_with(".toml") {
        let text =
            crate::input::read_text(std::path::Path::new(name), "a plan", crate::input::TEXT)?;
        let dir = std::path::Path::new(name)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        let hash = crate::ids::plan_hash(&crate::plan::identity(&text, dir));
        let plan = plan_name(name, &text)?;
        return st
            .campaigns(CampaignQuery::Named(&plan))?
            .into_iter()
            .filter(|c| c.plan_hash == hash)
            .max_by_key(|c| c.generation)
            .map(|c| c.id)
            .ok_or_else(|| bad_input!("{name}: {NO_CAMPAIGN_YET}; `kbench run {name}` starts it"));
    }
    st.campaigns(CampaignQuery::Named(name))?
        .last()
        .map(|c| c.id)
        .ok_or_else(|| bad_input!("no run or campaign `{name}` in the store (see `kbench runs`)"))
}

/// The campaigns `kbench store copy` names, by id: a name means every
/// campaign of that name (all generations); `campaign:ID` or a plan file,
/// exactly one.
pub fn campaigns(from: &dyn StoreRead, names: &[String]) -> anyhow::Result<Vec<i64>> {
    let mut v = Vec::new();
    for name in names {
        if name.starts_with("campaign:") || name.ends_with(".toml") {
            v.push(campaign(from, name)?);
            continue;
        }
        let all = from.campaigns(CampaignQuery::Named(name))?;
        if all.is_empty() {
            return Err(bad_input!(
                "no campaign `{name}` in the source store (see `kbench runs`)"
            ));
        }
        v.extend(all.iter().map(|c| c.id));
    }
    Ok(v)
}

/// Resolve an operand against the store.
pub fn resolve(st: &dyn StoreRead, spec: &str) -> anyhow::Result<Operand> {
    let (name, filters) = split(spec)?;
    let scope = match name.parse::<i64>() {
        Ok(id) => {
            if st.run_uncounted(id)?.is_none() {
                return Err(bad_input!("no run {id} in the store (see `kbench runs`)"));
            }
            Scope::Run(id)
        }
        Err(_) => Scope::Campaign(campaign(st, &name)?),
    };
    Ok(Operand {
        spec: spec.to_string(),
        scope,
        filters,
    })
}

/// A cell's value for a factor or parameter, as the user writes it.
pub(crate) fn value_of(c: &crate::record::CellInfo, key: &str) -> Option<String> {
    c.factors
        .get(key)
        .cloned()
        .or_else(|| c.params.get(key).map(crate::report::json_label))
        // The system state: probe readings, and a fleet host's name and
        // labels (`PLAN:host=old`).
        .or_else(|| c.readings.get(key).cloned())
}

/// Keep the cells matching every filter of `op`; a filter no cell knows is
/// an error naming it, and so is a selection left empty.
pub fn narrow(op: &Operand, cells: Vec<StoredCell>) -> anyhow::Result<Vec<StoredCell>> {
    narrow_by(op, cells, &HashMap::new())
}

/// [`narrow`], where `host` is also the name of the host whose run
/// measured the cell (run id -> host), for runs not collected by a fleet.
fn narrow_by(
    op: &Operand,
    cells: Vec<StoredCell>,
    hosts: &HashMap<i64, String>,
) -> anyhow::Result<Vec<StoredCell>> {
    let value = |c: &crate::store::CellRec, k: &str| {
        value_of(&c.info, k).or_else(|| {
            if k == "host" {
                hosts.get(&c.run_id).cloned()
            } else {
                None
            }
        })
    };
    for (k, _) in &op.filters {
        if !cells.iter().any(|(c, _)| value(c, k).is_some()) {
            let mut known: Vec<&str> = Vec::new();
            for (c, _) in &cells {
                let i = &c.info;
                for n in i
                    .factors
                    .keys()
                    .chain(i.params.keys())
                    .chain(i.readings.keys())
                {
                    if !known.contains(&n.as_str()) {
                        known.push(n);
                    }
                }
            }
            return Err(bad_input!(
                "`{}`: no factor or parameter `{k}` in the selected cells{}",
                op.spec,
                crate::suggest::hint(k, &known, "")
            ));
        }
    }
    let kept: Vec<_> = cells
        .into_iter()
        .filter(|(c, _)| {
            op.filters
                .iter()
                .all(|(k, v)| value(c, k).is_some_and(|x| &x == v))
        })
        .collect();
    if kept.is_empty() {
        return Err(bad_input!("`{}` selects no cells", op.spec));
    }
    Ok(kept)
}

/// The report of what an operand selects.
pub fn report(
    st: &dyn StoreRead,
    op: &Operand,
    pooling: crate::report::origin::Pooling,
) -> anyhow::Result<crate::report::Report> {
    Ok(match op.scope {
        Scope::Run(id) => {
            let mut d = store::load_run(st, id)?;
            if !op.filters.is_empty() {
                d.cells = narrow(op, d.cells)?;
            }
            crate::report::Report::of_run(d)
        }
        Scope::Campaign(id) => {
            let mut d = store::load_campaign(st, id)?;
            if !op.filters.is_empty() {
                let hosts: HashMap<i64, String> =
                    d.runs.iter().map(|r| (r.id, r.host.clone())).collect();
                d.cells = narrow_by(op, d.cells, &hosts)?;
                keep_selected_runs(st, &mut d)?;
            }
            campaign_report(st, d, pooling)?
        }
    })
}

/// A narrowed campaign's runs are the ones that measured a kept cell, and
/// its system (the latest run's fingerprint) is the latest of those: the
/// report of `C:host=alpha` describes alpha, not the campaign's last host.
fn keep_selected_runs(st: &dyn StoreRead, d: &mut store::CampaignData) -> anyhow::Result<()> {
    let kept: std::collections::HashSet<i64> = d.cells.iter().map(|(c, _)| c.run_id).collect();
    let latest = d.runs.last().map(|r| r.id);
    d.runs.retain(|r| kept.contains(&r.id));
    d.failures.retain(|f| kept.contains(&f.run_id));
    if let Some(last) = d.runs.last()
        && Some(last.id) != latest
    {
        d.latest = Some(st.run_details(last.id)?);
    }
    Ok(())
}

/// A campaign's report, its runs merged by origin as `pooling` says (an
/// imported run's origin is its file, which only its details hold).
pub fn campaign_report(
    st: &dyn StoreRead,
    d: store::CampaignData,
    pooling: crate::report::origin::Pooling,
) -> anyhow::Result<crate::report::Report> {
    use crate::report::origin;
    let mut origins = std::collections::HashMap::new();
    for r in &d.runs {
        let details = (r.host == "imported")
            .then(|| st.run_details(r.id))
            .transpose()?;
        origins.insert(r.id, origin::of_run(r, details.as_ref(), pooling));
    }
    Ok(crate::report::Report::of_campaign_by(d, &origins))
}

/// The stored cells an operand selects, with the runs they belong to.
pub fn cells(
    st: &dyn StoreRead,
    op: &Operand,
) -> anyhow::Result<(Vec<StoredCell>, Vec<crate::store::RunRow>)> {
    let (cells, runs) = match op.scope {
        Scope::Run(id) => {
            let d = store::load_run(st, id)?;
            (d.cells, vec![d.run])
        }
        Scope::Campaign(id) => {
            let d = store::load_campaign(st, id)?;
            (d.cells, d.runs)
        }
    };
    let cells = if op.filters.is_empty() {
        cells
    } else {
        let hosts: HashMap<i64, String> = runs.iter().map(|r| (r.id, r.host.clone())).collect();
        narrow_by(op, cells, &hosts)?
    };
    Ok((cells, runs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operands_split_into_name_and_filters() {
        assert_eq!(
            split("pipes:zero_copy=true, cpus=UP").unwrap(),
            (
                "pipes".to_string(),
                vec![
                    ("zero_copy".to_string(), "true".to_string()),
                    ("cpus".to_string(), "UP".to_string())
                ]
            )
        );
        assert_eq!(
            split("campaign:3:pti=off").unwrap(),
            (
                "campaign:3".to_string(),
                vec![("pti".to_string(), "off".to_string())]
            )
        );
        assert_eq!(split("campaign:3").unwrap().0, "campaign:3");
        assert!(split("x:nokv").is_err());
    }

    #[test]
    fn a_plan_operand_is_hashed_never_validated() {
        use crate::store::StoreWrite;
        let dir = tempfile::tempdir().unwrap();
        // A testcase that does not exist: validating would fail.
        let text = "name = \"p\"\n[[bench]]\ntestcase = \"missing.c\"\n";
        let path = dir.path().join("p.toml");
        std::fs::write(&path, text).unwrap();
        let mut st = crate::store::memory::MemoryStore::new();
        let id = st
            .campaign(&crate::record::CampaignKey {
                name: "p".into(),
                // Named by its text and its testcase's content (none here).
                plan_hash: crate::ids::plan_hash(&crate::plan::identity(text, dir.path())),
                generation: 1,
                plan_text: text.into(),
            })
            .unwrap();
        let op = resolve(&st, path.to_str().unwrap()).unwrap();
        assert_eq!(op.scope, Scope::Campaign(id));
        let e = resolve(&st, "nosuch").unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2);
        assert!(resolve(&st, "7").is_err());
        assert!(resolve(&st, "campaign:9").is_err());
    }
}
