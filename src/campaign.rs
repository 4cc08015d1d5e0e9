//! Campaigns: a plan file's whole matrix, persisted across runs and
//! reboots. Identity is the plan's name plus a hash of its text, so an
//! edited plan is never silently mixed with results of the old one:
//! `kbench run` refuses with a one-line message until the user either
//! undoes the edit or passes `--force`, which starts a new campaign (the
//! old one stays in the store, reachable as `campaign:ID`). An unchanged
//! plan resumes its latest campaign; `--force` on an unchanged plan starts
//! it over (stored hash `HASH/2`, `HASH/3`, ...), e.g. to measure the same
//! matrix again on a new kernel.
//!
//! Progress is computed from the store: for every cell key, how many
//! samples were taken under each set of probe readings. A cell is done when
//! one state holds all its samples; a cell whose `system` factors do not
//! match the current readings is pending, and `kbench status` says what
//! state it needs.

use indexmap::IndexMap;
use serde::Serialize;

use crate::error::bad_input;
use crate::plan::{Cell, Plan, SystemNeed};
use crate::record::{CampaignKey, Progress};
use crate::store::{CampaignQuery, CampaignRow, StoreRead};

/// What a run of a plan does with campaigns.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Resume this campaign.
    Resume(CampaignRow),
    /// Start a new campaign with this identity.
    New(CampaignKey),
}

impl Decision {
    /// The identity the run's events carry.
    pub fn key(&self, plan: &Plan) -> CampaignKey {
        match self {
            Decision::New(k) => k.clone(),
            Decision::Resume(c) => CampaignKey {
                name: c.name.clone(),
                plan_hash: c.plan_hash.clone(),
                generation: c.generation,
                plan_text: plan.text.clone(),
            },
        }
    }
}

/// Campaigns of this exact plan text (all its generations), oldest first.
fn same_text(store: &dyn StoreRead, plan: &Plan) -> anyhow::Result<Vec<CampaignRow>> {
    let hash = plan.hash();
    Ok(store
        .campaigns(CampaignQuery::Named(&plan.name))?
        .into_iter()
        .filter(|c| c.plan_hash == hash)
        .collect())
}

/// Decide between resuming and starting a campaign; an edited plan without
/// `force` is an error (one line, exit 2). `force` on an unchanged plan
/// starts it over as its next generation, e.g. to measure again after a
/// kernel update; the old one stays in the store.
pub fn check(store: &dyn StoreRead, plan: &Plan, force: bool) -> anyhow::Result<Decision> {
    let hash = plan.hash();
    let key = |generation| CampaignKey {
        name: plan.name.clone(),
        plan_hash: hash.clone(),
        generation,
        plan_text: plan.text.clone(),
    };
    let same = same_text(store, plan)?;
    if let Some(c) = same.iter().max_by_key(|c| c.generation) {
        return Ok(if force {
            Decision::New(key(c.generation + 1))
        } else {
            Decision::Resume(c.clone())
        });
    }
    let named = store.campaigns(CampaignQuery::Named(&plan.name))?;
    if let Some(last) = named.last()
        && !force
    {
        let path = plan
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        return Err(bad_input!(
            "{path}: plan `{}` changed since campaign {} started (plan hash {} -> {}); undo the edit to resume it, or run with --force to start a new campaign (campaign {} stays in the store)",
            plan.name,
            last.id,
            last.hash_label(),
            hash,
            last.id
        ));
    }
    Ok(Decision::New(key(1)))
}

/// The latest campaign of this exact plan text, if one was started.
pub fn find(store: &dyn StoreRead, plan: &Plan) -> anyhow::Result<Option<CampaignRow>> {
    Ok(same_text(store, plan)?
        .into_iter()
        .max_by_key(|c| c.generation))
}

/// How far a campaign got, as the runner wants it (every host's runs).
#[cfg(test)]
pub fn progress(store: &dyn StoreRead, campaign: i64) -> anyhow::Result<Progress> {
    progress_on(store, campaign, None)
}

/// How far a campaign got on one host (`None`: on all of them). A
/// campaign is per host: on a store shared by several hosts (PostgreSQL,
/// or streams ingested from elsewhere) a cell complete on one host is
/// still pending on another.
pub fn progress_on(
    store: &dyn StoreRead,
    campaign: i64,
    host: Option<&str>,
) -> anyhow::Result<Progress> {
    let mut m = Progress::default();
    for p in store.progress(campaign)? {
        if host.is_some_and(|h| h != p.host) {
            continue;
        }
        m.add(&p.key, &p.readings, None, p.samples);
    }
    Ok(m)
}

/// [`progress_on`] with the samples of each boot too (for a plan that
/// repeats boots): the boot of a run is its settings' `owner.boot_id`.
/// Reads every sample of the campaign.
pub fn progress_by_boot(
    store: &dyn StoreRead,
    campaign: i64,
    host: Option<&str>,
) -> anyhow::Result<Progress> {
    let mut boot_of: std::collections::HashMap<i64, String> = Default::default();
    for r in store.runs(Some(campaign))? {
        if host.is_some_and(|h| h != r.host) {
            continue;
        }
        let boot = store.run_details(r.id)?.config.owner.map(|o| o.boot_id);
        boot_of.insert(r.id, boot.unwrap_or_else(|| "unknown boot".into()));
    }
    let mut m = Progress::default();
    for (c, samples) in store.cells(crate::store::Scope::Campaign(campaign))? {
        let Some(boot) = boot_of.get(&c.run_id) else {
            continue;
        };
        let mut rounds: Vec<u32> = samples.iter().map(|s| s.round).collect();
        rounds.sort_unstable();
        rounds.dedup();
        m.add(
            &c.info.key,
            &c.info.readings_text(),
            Some(boot),
            rounds.len() as u32,
        );
    }
    Ok(m)
}

/// This machine's name as its runs record it (the fingerprint's hostname).
pub fn this_host() -> String {
    crate::system::hostname()
}

/// Where one cell of a campaign stands.
#[derive(Clone, Debug, Serialize)]
pub struct CellState {
    /// `bench [factor=value, param=value]`.
    pub label: String,
    /// Samples over all its runs and boots (`repeat`).
    pub want: u32,
    /// With `repeat.boots`: boots that measured it, and boots wanted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boots: Option<(u32, u32)>,
    /// Most samples under one state.
    pub best: u32,
    /// The running system suits it.
    pub runnable: bool,
    /// The `system` factor values it needs, as users read them.
    pub needs: Vec<String>,
    /// Of those, the probes that read otherwise now: `probe is `reading``.
    pub unmet: Vec<String>,
}

impl CellState {
    pub fn done(&self) -> bool {
        self.best >= self.want
    }
}

/// `kbench status`: the campaign's progress against the running system.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The plan's name and the argument it was named by.
    pub plan: String,
    pub plan_arg: String,
    pub campaign: Option<CampaignRow>,
    /// The campaign of an earlier text of this plan, when the plan was
    /// edited since (`kbench run` refuses it without `--force`).
    pub edited_since: Option<CampaignRow>,
    pub runs: usize,
    pub readings: IndexMap<String, String>,
    pub cells: Vec<CellState>,
    /// The plan's `[reboot]` command.
    pub reboot: Option<String>,
}

/// Compute the status of `plan`'s campaign; `samples` is the per-cell
/// default (the plan's or 10).
pub fn status(
    store: &dyn StoreRead,
    plan: &Plan,
    plan_arg: &str,
    samples: u32,
) -> anyhow::Result<Status> {
    let readings = plan.read_probes();
    let campaign = find(store, plan)?;
    let edited_since = match &campaign {
        Some(_) => None,
        None => store.campaigns(CampaignQuery::Named(&plan.name))?.pop(),
    };
    let (counts, runs) = match &campaign {
        Some(c) if plan.repeat.boots > 1 => (
            progress_by_boot(store, c.id, Some(&this_host()))?,
            store.runs(Some(c.id))?.len(),
        ),
        Some(c) => (
            progress_on(store, c.id, Some(&this_host()))?,
            store.runs(Some(c.id))?.len(),
        ),
        None => (Progress::default(), 0),
    };
    let mut cells = Vec::new();
    for cell in crate::plan::expand(plan)? {
        let best = counts.best(&cell.key);
        let boots = counts.boots.get(&cell.key).map_or(0, |m| {
            let mut ids: Vec<&String> = m.values().flat_map(|b| b.keys()).collect();
            ids.sort();
            ids.dedup();
            ids.len() as u32
        });
        let unmet = cell
            .expect
            .iter()
            .flat_map(|n| &n.expect)
            .filter(|(p, e)| {
                !readings
                    .get(&p.key())
                    .is_some_and(|r| crate::system::probe::matches(e, r))
            })
            .map(|(p, _)| {
                format!(
                    "{p} is `{}`",
                    readings.get(&p.key()).map_or("?", |s| s.as_str())
                )
            })
            .collect();
        cells.push(CellState {
            label: cell_label(&cell),
            want: cell.samples.unwrap_or(samples) * plan.repeat.runs * plan.repeat.boots,
            boots: (plan.repeat.boots > 1).then_some((boots, plan.repeat.boots)),
            best,
            runnable: cell.runnable(&readings),
            needs: cell.expect.iter().map(describe_need).collect(),
            unmet,
        });
    }
    Ok(Status {
        plan: plan.name.clone(),
        plan_arg: plan_arg.to_string(),
        campaign,
        edited_since,
        runs,
        readings,
        cells,
        reboot: plan.reboot.clone(),
    })
}

/// One system need as a user reads it: `pti=off: boot with `nopti`
/// (cmdline.nopti=present, vuln.meltdown=Vulnerable)`.
pub fn describe_need(n: &SystemNeed) -> String {
    let probes: Vec<String> = n.expect.iter().map(|(p, e)| format!("{p}={e}")).collect();
    match &n.hint {
        Some(h) => format!("{}={}: {h} ({})", n.factor, n.label, probes.join(", ")),
        None => format!("{}={} ({})", n.factor, n.label, probes.join(", ")),
    }
}

fn cell_label(c: &Cell) -> String {
    let mut parts: Vec<String> = c.factors.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for p in &c.label_params {
        if let Some(v) = c.params.get(p) {
            parts.push(format!("{p}={v}"));
        }
    }
    if parts.is_empty() {
        c.display.clone()
    } else {
        format!("{} [{}]", c.display, parts.join(", "))
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A systemd unit (and the equivalent cron line) that resumes the campaign
/// at every boot until it is complete.
pub fn resume_unit(plan: &Plan, db: &crate::store::Locator) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?;
    let plan_path = plan
        .path
        .as_ref()
        .ok_or_else(|| bad_input!("--resume-unit needs a plan file"))?;
    let cmd = format!(
        "{} --db {} run {} --quiet",
        shell_quote(&exe.display().to_string()),
        shell_quote(&db.to_arg()?),
        shell_quote(&plan_path.display().to_string())
    );
    let unit = format!(
        "kbench-{}",
        plan.name.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
    );
    let dir = plan_path
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    // The unit holds no password: the service reads it as libpq does.
    let password = if db.has_password() {
        "\n# The store's password is not written here: give the service's user a\n# ~/.pgpass line (host:port:db:user:password, mode 0600) or PGPASSWORD."
    } else {
        ""
    };
    Ok(format!(
        "# /etc/systemd/system/{unit}.service -- resumes campaign `{name}` at boot.
# Install: save this file, then `systemctl daemon-reload && systemctl enable {unit}`.{password}
# Once every cell is done, `kbench run` has nothing left to do and exits 0;
# disable the unit then. Cron alternative (crontab -e):
#   @reboot cd {dir_q} && {cmd}
[Unit]
Description=kbench campaign {name} (resume after boot)
After=multi-user.target

[Service]
Type=oneshot
WorkingDirectory={dir}
ExecStart={cmd}

[Install]
WantedBy=multi-user.target
",
        name = plan.name,
        dir_q = shell_quote(&dir),
    ))
}
