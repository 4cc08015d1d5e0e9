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
use std::collections::HashMap;
use std::fmt::Write;
use std::path::Path;

use crate::error::bad_input;
use crate::plan::{Cell, Plan, SystemNeed};
use crate::store::{CampaignData, CampaignRow, Store};

/// Read every probe the plan's `system` factors use: probe key -> reading.
pub fn read_probes(plan: &Plan) -> IndexMap<String, String> {
    plan.probes().iter().map(|p| (p.key(), p.read())).collect()
}

/// The campaign id to record a run of `plan` under (see the module doc).
pub fn resolve(store: &mut dyn Store, plan: &Plan, force: bool) -> anyhow::Result<i64> {
    match check(store, plan, force)? {
        Decision::Resume(id) => Ok(id),
        Decision::New(hash) => store.campaign(&plan.name, &hash, &plan.text),
    }
}

/// What a run of a plan does with campaigns.
#[derive(Debug, PartialEq)]
pub enum Decision {
    /// Resume this campaign.
    Resume(i64),
    /// Start a new campaign with this stored hash (`HASH`, or `HASH/N` for
    /// the N-th campaign of the same text started with `--force`).
    New(String),
}

/// Campaigns of this exact plan text (all its generations), oldest first.
fn same_text(store: &dyn Store, plan: &Plan) -> anyhow::Result<Vec<CampaignRow>> {
    let hash = super::plan_hash(&plan.text);
    let gen_prefix = format!("{hash}/");
    Ok(store
        .campaigns(Some(&plan.name))?
        .into_iter()
        .filter(|c| c.plan_hash == hash || c.plan_hash.starts_with(&gen_prefix))
        .collect())
}

/// Decide between resuming and starting a campaign; an edited plan without
/// `force` is an error (one line, exit 2). `force` on an unchanged plan
/// starts it over as a new campaign, e.g. to measure again after a kernel
/// update; the old one stays in the store.
pub fn check(store: &dyn Store, plan: &Plan, force: bool) -> anyhow::Result<Decision> {
    let hash = super::plan_hash(&plan.text);
    let same = same_text(store, plan)?;
    if let Some(c) = same.last() {
        return Ok(if force {
            Decision::New(format!("{hash}/{}", same.len() + 1))
        } else {
            Decision::Resume(c.id)
        });
    }
    let named = store.campaigns(Some(&plan.name))?;
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
            last.plan_hash,
            hash,
            last.id
        ));
    }
    Ok(Decision::New(hash))
}

/// The latest campaign of this exact plan text, if one was started.
pub fn find(store: &dyn Store, plan: &Plan) -> anyhow::Result<Option<CampaignRow>> {
    Ok(same_text(store, plan)?.pop())
}

/// Samples per cell key and readings (as JSON text): how far each cell got
/// under each system state. A sample = one value of the cell's first
/// metric.
pub fn sample_counts(d: &CampaignData) -> HashMap<String, HashMap<String, u32>> {
    let mut m: HashMap<String, HashMap<String, u32>> = HashMap::new();
    for (c, samples) in &d.cells {
        let Some(first) = c.metrics.first() else {
            continue;
        };
        let n = samples.iter().filter(|s| *s.metric == *first.name).count() as u32;
        *m.entry(c.key.clone())
            .or_default()
            .entry(c.readings.to_string())
            .or_default() += n;
    }
    m
}

/// Where one cell of a campaign stands.
#[derive(Clone, Debug)]
pub struct CellState {
    pub cell: Cell,
    pub want: u32,
    /// Most samples under one state.
    pub best: u32,
    pub runnable: bool,
}

impl CellState {
    pub fn done(&self) -> bool {
        self.best >= self.want
    }
}

/// The campaign's progress against the running system.
pub struct Status {
    pub campaign: Option<CampaignRow>,
    pub runs: usize,
    pub readings: IndexMap<String, String>,
    pub cells: Vec<CellState>,
}

/// Compute the status of `plan`'s campaign; `samples` is the per-cell
/// default (the plan's or 10).
pub fn status(store: &dyn Store, plan: &Plan, samples: u32) -> anyhow::Result<Status> {
    let readings = read_probes(plan);
    let campaign = find(store, plan)?;
    let (counts, runs) = match &campaign {
        Some(c) => {
            let d = store.load_campaign(c.id)?;
            (sample_counts(&d), d.runs.len())
        }
        None => (HashMap::new(), 0),
    };
    let mut cells = Vec::new();
    for cell in crate::plan::expand(plan)? {
        let want = cell.samples.unwrap_or(samples);
        let best = counts
            .get(&cell.key)
            .and_then(|m| m.values().max().copied())
            .unwrap_or(0);
        cells.push(CellState {
            runnable: cell.runnable(&readings),
            want,
            best,
            cell,
        });
    }
    Ok(Status {
        campaign,
        runs,
        readings,
        cells,
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

/// `kbench status` as text.
pub fn render(st: &Status, plan: &Plan, plan_arg: &str) -> String {
    let mut o = String::new();
    match &st.campaign {
        Some(c) => {
            let _ = writeln!(
                o,
                "campaign {} `{}` (plan hash {}), {} run(s)",
                c.id, c.name, c.plan_hash, st.runs
            );
        }
        None => {
            let _ = writeln!(
                o,
                "campaign `{}`: not started (`kbench run {plan_arg}` starts it)",
                plan.name
            );
        }
    }
    if !st.readings.is_empty() {
        let now: Vec<String> = st
            .readings
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(o, "system now: {}", now.join(", "));
    }
    let done: Vec<&CellState> = st.cells.iter().filter(|c| c.done()).collect();
    let now: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && c.runnable)
        .collect();
    let later: Vec<&CellState> = st
        .cells
        .iter()
        .filter(|c| !c.done() && !c.runnable)
        .collect();
    let _ = writeln!(
        o,
        "{} cells: {} done, {} to run now, {} pending another system state",
        st.cells.len(),
        done.len(),
        now.len(),
        later.len()
    );
    if !done.is_empty() {
        let _ = writeln!(o, "\ndone:");
        for c in &done {
            let _ = writeln!(
                o,
                "  {} ({}/{} samples)",
                cell_label(&c.cell),
                c.best,
                c.want
            );
        }
    }
    if !now.is_empty() {
        let _ = writeln!(o, "\nto run now (`kbench run {plan_arg}`):");
        for c in &now {
            let _ = writeln!(
                o,
                "  {} ({}/{} samples)",
                cell_label(&c.cell),
                c.best,
                c.want
            );
        }
    }
    if !later.is_empty() {
        let _ = writeln!(o, "\npending, by the system state they need:");
        let mut groups: Vec<(Vec<SystemNeed>, Vec<&CellState>)> = Vec::new();
        for c in &later {
            match groups.iter_mut().find(|(k, _)| *k == c.cell.expect) {
                Some((_, v)) => v.push(c),
                None => groups.push((c.cell.expect.clone(), vec![c])),
            }
        }
        for (needs, cells) in groups {
            let unmet: Vec<String> = needs
                .iter()
                .flat_map(|n| &n.expect)
                .filter(|(p, e)| {
                    !st.readings
                        .get(&p.key())
                        .is_some_and(|r| crate::system::probe::matches(e, r))
                })
                .map(|(p, _)| {
                    format!(
                        "{p} is `{}`",
                        st.readings.get(&p.key()).map_or("?", |s| s.as_str())
                    )
                })
                .collect();
            let what: Vec<String> = needs.iter().map(describe_need).collect();
            let _ = writeln!(o, "  needs {}", what.join("; "));
            let _ = writeln!(o, "    now: {}", unmet.join(", "));
            for c in cells {
                let _ = writeln!(
                    o,
                    "    {} ({}/{} samples)",
                    cell_label(&c.cell),
                    c.best,
                    c.want
                );
            }
        }
        match &plan.reboot {
            Some(r) => {
                let _ = writeln!(o, "\nto arm the next boot: {r}");
            }
            None => {
                let _ = writeln!(
                    o,
                    "\n(no [reboot] command in the plan: change the boot options by hand)"
                );
            }
        }
        let _ = writeln!(
            o,
            "after the reboot, `kbench run {plan_arg}` resumes; `kbench status {plan_arg} --resume-unit` prints a unit that does it at boot"
        );
    }
    o
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
pub fn resume_unit(plan: &Plan, db: &Path) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?;
    let plan_path = plan
        .path
        .as_ref()
        .ok_or_else(|| bad_input!("--resume-unit needs a plan file"))?;
    let cmd = format!(
        "{} --db {} run {} --quiet",
        shell_quote(&exe.display().to_string()),
        shell_quote(&std::path::absolute(db)?.display().to_string()),
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
    Ok(format!(
        "# /etc/systemd/system/{unit}.service -- resumes campaign `{name}` at boot.
# Install: save this file, then `systemctl daemon-reload && systemctl enable {unit}`.
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
