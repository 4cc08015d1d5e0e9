//! `kbench fleet`: one plan run on many hosts over OpenSSH, every result
//! in the coordinator's store (`--db`: a SQLite file or the lab's
//! PostgreSQL). No daemon and no protocol of kbench's own: the remote side
//! is the same kbench binary, run by `ssh`, printing its event stream
//! (`run --events jsonl`) on stdout.
//!
//! For each host, on a bounded number of threads: check the OS and
//! architecture; copy this kbench binary when the remote one is missing or
//! differs (sha256); copy the plan; fetch what the host's own store holds
//! of the campaign and the coordinator lacks (a run whose connection broke
//! kept measuring there, or stopped with its samples stored); then run the
//! plan there and write each event into the coordinator's store as it
//! arrives. The host's own store decides what is left to run, so a
//! campaign is per host: a cell complete on one host is pending on
//! another, and re-running resumes every host without duplicate samples
//! (every write is keyed by the run UUID and sample identity).
//!
//! In the coordinator's store each run's host is the hosts file's name,
//! and each cell's system state (its probe readings) gains `host` and the
//! host's labels: reports show one state per host, and operands narrow on
//! them (`PLAN:host=old`, `PLAN:hardware=type 2`).
//!
//! Remote files live in `$KBENCH_FLEET_DIR` on the host, default
//! `~/.kbench-fleet`, named per host and per run ([`remote`]). The
//! coordinator's store is the truth: a host is done only when it holds
//! exactly the plan's samples of every cell of that host ([`count`]).
//!
//! Each host's state (`running`, `done`, `failed`, `interrupted`, its last
//! error) is kept in the coordinator's store, table `fleet_hosts`, so
//! `fleet status` against any copy of the store shows it. Ctrl-C or
//! SIGTERM stops every host ([`stop`]): exit 130 or 143.

pub mod bundle;
mod count;
pub mod hosts;
mod remote;
pub mod ssh;
mod stop;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::event::{self, Event, Sink};
use crate::record::{CellInfo, RunStatus};
use crate::store::{self, StoreRead as _};
use hosts::Host;
pub use ssh::HostKeys;

/// How one host stands, as `fleet status` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostState {
    /// `checking`, `copying kbench`, `catching up`, `running`, `done`,
    /// `failed`, `interrupted` (or `not run`).
    pub state: String,
    /// Unix time of the last change.
    pub updated: f64,
    pub last_error: Option<String>,
    /// Samples of this host in the coordinator's store (filled by status).
    #[serde(default)]
    pub samples: u64,
    /// Cells of the plan with all their samples on this host (status).
    #[serde(default)]
    pub cells_done: usize,
    #[serde(default)]
    pub cells: usize,
}

/// Each host's state, as `fleet status` shows it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FleetState {
    pub hosts: BTreeMap<String, HostState>,
}

/// The shared state of a fleet run: updated by every host's thread and
/// written to the coordinator's store on each change (table
/// `fleet_hosts`, so every copy of the store shows it).
struct Shared<'a> {
    db: &'a store::Locator,
    plan: &'a crate::plan::Plan,
    hash: String,
    state: Mutex<BTreeMap<String, store::FleetHostRec>>,
    quiet: bool,
}

impl Shared<'_> {
    fn set(&self, host: &str, state: &str, error: Option<String>) {
        // Shown and stored: its secrets hidden, and never empty.
        let error = error.map(|e| match crate::redact::text(e.trim()) {
            t if t.is_empty() => format!("host {host}: {state}, and no reason was given"),
            t => t.into_owned(),
        });
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let h = s
            .entry(host.to_string())
            .or_insert_with(|| store::FleetHostRec {
                plan: self.plan.name.clone(),
                plan_hash: self.hash.clone(),
                host: host.to_string(),
                ..Default::default()
            });
        h.state = state.to_string();
        // Later than any stored record of this host (a clock step back
        // must not leave the old state standing).
        h.updated = crate::ids::unix_now().max(h.updated + 1e-6);
        if error.is_some() || state == "done" {
            h.last_error = error.clone();
        }
        if !self.quiet {
            match &error {
                Some(e) => eprintln!("kbench: {e}"),
                None => eprintln!("kbench: host {host}: {state}"),
            }
        }
        let r = store::open(self.db, store::Access::Write).and_then(|mut st| st.set_fleet_host(h));
        if let Err(e) = r
            && !self.quiet
        {
            eprintln!("kbench: host {host}: cannot record its state `{state}` in the store: {e:#}");
        }
    }
}

/// Options of `kbench fleet run`.
pub struct RunOptions<'a> {
    pub db: &'a store::Locator,
    pub jobs: usize,
    pub keys: HostKeys,
    /// Extra arguments for the remote `kbench run` (`--quick`, `--samples N`).
    pub run_args: &'a [String],
    pub quiet: bool,
}

/// What `fleet run` did: each host's error (`None` for success), and
/// the signal that stopped it, if one did.
pub struct Outcome {
    pub hosts: Vec<(String, Option<String>)>,
    pub signal: Option<i32>,
}

/// The fleet's name for a host's cell: `host` and its labels before the
/// cell's own probe readings.
pub fn relabel(host: &Host, cell: &mut CellInfo) {
    let mut r: IndexMap<String, String> = IndexMap::new();
    r.insert("host".into(), host.name.clone());
    for (k, v) in &host.labels {
        r.insert(k.clone(), v.clone());
    }
    for (k, v) in &cell.readings {
        r.entry(k.clone()).or_insert_with(|| v.clone());
    }
    cell.readings = r;
}

/// Run `plan` on every host; one failing host never stops the others.
/// A signal (SIGINT, SIGTERM) stops every host: its connection is closed,
/// its run recorded as interrupted, and no host is started after it.
pub fn run(plan_path: &Path, hosts: &[Host], o: &RunOptions<'_>) -> anyhow::Result<Outcome> {
    let plan = crate::plan::load_for_hosts(plan_path)?;
    let exe = std::env::current_exe().map_err(|e| anyhow::anyhow!("this kbench's path: {e}"))?;
    let hash = sha256_hex(&exe)?;
    // Every file the plan names is checked here before any host is
    // contacted (a missing `cwd` is a plan error naming its line).
    let bundle = bundle::build(plan_path, &plan.text)?;
    // The coordinator's store must open before any host is contacted. It
    // holds the fleet's lock until the run ends, however it ends: `fleet
    // status` tells a host whose coordinator was killed (its state left
    // at `running`) by the lock being free.
    let mut lock_holder = store::open(o.db, store::Access::Write)?;
    lock_holder.lock_campaign(&coordinator_lock(&plan))?;
    let known = lock_holder.fleet_hosts(&plan.name, &plan.hash())?;
    let shared = Shared {
        db: o.db,
        plan: &plan,
        hash: plan.hash(),
        state: Mutex::new(known.into_iter().map(|h| (h.host.clone(), h)).collect()),
        quiet: o.quiet,
    };
    let interrupts = stop::Interrupts::install()?;
    let finished = AtomicBool::new(false);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Option<String>)>> = Mutex::new(Vec::new());
    let ctx = HostCtx {
        plan: &plan,
        binary: &exe,
        hash: &hash,
        bundle: &bundle,
        o,
        shared: &shared,
    };
    std::thread::scope(|sc| {
        sc.spawn(|| interrupts.watch(&finished));
        let workers: Vec<_> = (0..o.jobs.clamp(1, hosts.len().max(1)))
            .map(|_| {
                sc.spawn(|| {
                    // No host is started once a signal came.
                    while stop::requested().is_none() {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(h) = hosts.get(i) else { break };
                        let err = ctx.host(h).err();
                        let state = match (&err, stop::requested()) {
                            (_, Some(_)) => "interrupted",
                            (Some(_), None) => "failed",
                            (None, None) => "done",
                        };
                        shared.set(&h.name, state, err.clone());
                        results
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((i, err));
                    }
                })
            })
            .collect();
        for w in workers {
            let _ = w.join();
        }
        finished.store(true, Ordering::SeqCst);
    });
    let mut r = results.into_inner().unwrap_or_else(|e| e.into_inner());
    r.sort_by_key(|(i, _)| *i);
    Ok(Outcome {
        hosts: r
            .into_iter()
            .map(|(i, e)| (hosts[i].name.clone(), e))
            .collect(),
        signal: stop::requested(),
    })
}

struct HostCtx<'a> {
    plan: &'a crate::plan::Plan,
    /// This kbench's executable.
    binary: &'a Path,
    hash: &'a str,
    bundle: &'a bundle::Bundle,
    o: &'a RunOptions<'a>,
    shared: &'a Shared<'a>,
}

impl HostCtx<'_> {
    /// Everything for one host; the error is one line naming it. Done
    /// only when the coordinator's store holds every planned sample of
    /// the host.
    fn host(&self, h: &Host) -> Result<(), String> {
        let keys = self.o.keys;
        // This fleet run's own remote names: two runs at once, or two
        // hosts sharing a home, never share a file.
        let nonce = crate::ids::new_run_uuid();
        self.shared.set(&h.name, "checking", None);
        let probe = ssh::run(
            h,
            keys,
            &remote::probe(h, self.hash, &self.bundle.hash),
            None,
        )?;
        let probe = String::from_utf8_lossy(&probe);
        let mut lines = probe.lines();
        let (os, arch) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""));
        let remote_hash = lines
            .next()
            .and_then(|l| l.split_whitespace().next())
            .unwrap_or("-");
        let have_bundle = lines.next() == Some("have");
        if os != "Linux" || arch != std::env::consts::ARCH {
            return Err(format!(
                "host {}: {os}/{arch}, but this kbench is built for Linux/{}; cannot run there",
                h.name,
                std::env::consts::ARCH
            ));
        }
        if remote_hash != self.hash {
            self.shared.set(&h.name, "copying kbench", None);
            ssh::run_file(
                h,
                keys,
                &remote::copy_binary(h, self.hash, &nonce),
                self.binary,
            )
            .map_err(|e| format!("{e} (copying kbench to the host)"))?;
        }
        ssh::run(
            h,
            keys,
            &remote::unpack(h, &self.bundle.hash, &nonce, !have_bundle),
            (!have_bundle).then_some(self.bundle.tar.as_slice()),
        )
        .map_err(|e| format!("{e} (copying the plan and its files to the host)"))?;
        let remote_plan = format!("{}/{}", remote::run_dir(&nonce), self.bundle.plan_file);
        let r = self.measure(h, &nonce, &remote_plan);
        // The run directory goes however the run went (the run script
        // removes it too, when the coordinator is gone).
        if stop::requested().is_none()
            && let Err(e) = ssh::run(h, keys, &remote::remove_run(h, &nonce), None)
            && !self.o.quiet
        {
            eprintln!("kbench: {e} (removing this run's directory on the host)");
        }
        r
    }

    /// Catch up, run what the host owes, and check the coordinator's store.
    fn measure(&self, h: &Host, nonce: &str, remote_plan: &str) -> Result<(), String> {
        let remote_plan = remote_plan.to_string();
        let nonce = nonce.to_string();
        let wants = self.wants(h, &remote_plan)?;
        self.catch_up(h, &nonce, &remote_plan, &wants)?;
        let held = self.held(h)?;
        if count::complete(&wants, &held) {
            if !self.o.quiet {
                eprintln!(
                    "kbench: host {}: every planned sample is in the coordinator's store; nothing to run",
                    h.name
                );
            }
        } else {
            self.shared.set(&h.name, "running", None);
            let cap = count::Cap::new(&wants, &held);
            self.stream(h, &nonce, &remote_plan, cap)?;
        }
        match count::verify(self.o.db, self.plan, &wants, &h.name) {
            Ok(None) => Ok(()),
            Ok(Some(why)) => Err(format!("host {}: {why}", h.name)),
            Err(e) => Err(format!("host {}: the coordinator's store: {e:#}", h.name)),
        }
    }

    /// What the host owes: the plan's samples of each cell its system
    /// state suits (the host's `kbench status`: a `system` factor's other
    /// states are pending there, as in `kbench run`).
    fn wants(&self, h: &Host, remote_plan: &str) -> Result<count::Wants, String> {
        let all = count::wants(self.plan, self.o.run_args).map_err(|e| format!("{e:#}"))?;
        let out = ssh::run(
            h,
            self.o.keys,
            &remote::status(h, self.hash, remote_plan),
            None,
        )
        .map_err(|e| format!("{e} (reading the plan's status on the host)"))?;
        let v: serde_json::Value = serde_json::from_slice(&out)
            .map_err(|e| format!("host {}: its `kbench status`: {e}", h.name))?;
        let runnable: Vec<bool> = v["cells"]
            .as_array()
            .map(|c| c.iter().map(|c| c["runnable"] == true).collect())
            .unwrap_or_default();
        if runnable.len() != all.len() {
            return Err(format!(
                "host {}: its `kbench status` lists {} cell(s), the plan has {}",
                h.name,
                runnable.len(),
                all.len()
            ));
        }
        let pending = runnable.iter().filter(|r| !**r).count();
        if pending > 0 && !self.o.quiet {
            eprintln!(
                "kbench: host {}: {pending} cell(s) need another system state there (`kbench status` on the host names it)",
                h.name
            );
        }
        Ok(all
            .into_iter()
            .zip(runnable)
            .filter_map(|(w, r)| r.then_some(w))
            .collect())
    }

    /// Samples per cell the coordinator's store holds of the host.
    fn held(&self, h: &Host) -> Result<std::collections::HashMap<String, u32>, String> {
        store::open(self.o.db, store::Access::Read)
            .and_then(|st| count::held(&*st, self.plan, &h.name))
            .map_err(|e| format!("host {}: the coordinator's store: {e:#}", h.name))
    }

    /// Copy what the host's own store holds of the campaign into the
    /// coordinator's (the host exports it with `kbench store copy` into a
    /// file of this run, sent over ssh). Copying is by identity (run
    /// UUID, cell key, round): what the coordinator has is never added.
    fn catch_up(
        &self,
        h: &Host,
        nonce: &str,
        remote_plan: &str,
        wants: &count::Wants,
    ) -> Result<(), String> {
        let script = remote::export(h, self.hash, nonce, remote_plan);
        let bytes = match ssh::run(h, self.o.keys, &script, None) {
            Ok(b) => b,
            // The host's store holds other campaigns but not this one.
            Err(e) if e.contains(crate::select::NO_CAMPAIGN_YET) => Vec::new(),
            Err(e) => return Err(format!("{e} (exporting the host's store)")),
        };
        if bytes.is_empty() {
            return Ok(());
        }
        self.shared.set(&h.name, "catching up", None);
        let err = |e: anyhow::Error| format!("host {}: catching up: {e:#}", h.name);
        let tmp = std::env::temp_dir().join(format!(
            "kbench-fleet-{}-{}-{nonce}.db",
            std::process::id(),
            h.name,
        ));
        std::fs::write(&tmp, &bytes).map_err(|e| err(e.into()))?;
        let r = (|| -> anyhow::Result<store::copy::Copied> {
            let from = store::sqlite::SqliteStore::open(&tmp, store::Access::Read)?;
            let mut to = store::open(self.o.db, store::Access::Write)?;
            // No sample beyond the plan: a host whose store was lost once
            // holds cells measured twice, of which this store kept what
            // the plan asked.
            let uuids: Vec<String> = from.runs(None)?.into_iter().map(|r| r.uuid).collect();
            let held = count::held(&*to, self.plan, &h.name)?;
            let mut cap = count::Cap::new(wants, &held).holding(count::present(&*to, &uuids)?);
            store::copy::copy_filtered(
                &from,
                to.as_mut(),
                &[],
                &|host, cell| match cell {
                    Some(c) => relabel(h, c),
                    None => *host = h.name.clone(),
                },
                &mut |run, cell, s| cap.admit_sample(run, cell, s.round),
            )
        })();
        let _ = std::fs::remove_file(&tmp);
        let c = r.map_err(err)?;
        if c.samples > 0 && !self.o.quiet {
            eprintln!(
                "kbench: host {}: fetched {} sample(s) the coordinator lacked",
                h.name, c.samples
            );
        }
        Ok(())
    }

    /// Run the plan on the host, storing each event as it arrives (no
    /// sample beyond the plan: `cap`).
    fn stream(
        &self,
        h: &Host,
        nonce: &str,
        remote_plan: &str,
        mut cap: count::Cap,
    ) -> Result<(), String> {
        let args: Vec<String> = self.o.run_args.iter().map(|a| ssh::quote(a)).collect();
        let script = remote::run(h, self.hash, nonce, remote_plan, &args.join(" "));
        let mut child = ssh::spawn(h, self.o.keys, &script)?;
        let tracked = stop::track(child.id());
        let stderr = child.stderr.take().expect("piped");
        let errs = std::thread::spawn(move || ssh::drain(stderr));
        let stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
        let mut st = store::open(self.o.db, store::Access::Write)
            .map_err(|e| format!("host {}: the coordinator's store: {e:#}", h.name))?;
        // Committed in batches: the host's own store keeps every sample
        // of a batch a crash here loses.
        let mut sink = store::sink::StoreSink::batched(st.as_mut());
        let (events, reading) = event::jsonl::read_on_thread(stdout, format!("host {}", h.name));
        let (mut begun, mut ended) = (false, false);
        let mut failures: Vec<String> = Vec::new();
        let mut broken: Option<String> = None;
        let stored = |e: anyhow::Error| format!("host {}: storing its results: {e:#}", h.name);
        loop {
            let next = match events.recv_timeout(store::BATCH_AGE) {
                Ok(next) => next,
                // The host is between samples: commit what waits.
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => match sink.flush() {
                    Ok(()) => continue,
                    Err(e) => {
                        let _ = child.kill();
                        broken = Some(stored(e));
                        break;
                    }
                },
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            };
            match next {
                Ok(mut e) => {
                    match &mut e {
                        Event::RunBegun(b) => {
                            b.host = h.name.clone();
                            begun = true;
                        }
                        Event::CellPrepared(c) => relabel(h, &mut c.cell),
                        Event::Failure(f) => failures.push(format!("`{}`: {}", f.cell, f.message)),
                        Event::RunEnded(_) => ended = true,
                        _ => {}
                    }
                    if !cap.admit(&e) {
                        continue;
                    }
                    if let Err(e) = sink.event(&e) {
                        // The coordinator's store failed: stop this host
                        // (its own store keeps measuring results).
                        let _ = child.kill();
                        broken = Some(stored(e));
                        break;
                    }
                }
                Err(e) => {
                    // A line cut off by a broken connection.
                    broken = Some(format!("host {}: {e:#}", h.name));
                    let _ = child.kill();
                    break;
                }
            }
        }
        if let Err(e) = sink.flush() {
            let _ = child.kill();
            broken.get_or_insert(stored(e));
        }
        drop(events);
        let status = child.wait().map_err(|e| format!("host {}: {e}", h.name))?;
        let _ = reading.join();
        drop(tracked);
        let stderr = errs.join().unwrap_or_default();
        if !ended {
            let _ = sink.close_open_runs(RunStatus::Interrupted);
        }
        if let Some(sig) = stop::requested() {
            return Err(format!(
                "host {}: interrupted by {}; its samples so far are stored (the host's own store keeps the rest: re-run to fetch them and resume)",
                h.name,
                signal_name(sig)
            ));
        }
        if cap.dropped > 0 && !self.o.quiet {
            eprintln!(
                "kbench: host {}: kept {} sample(s) out of the coordinator's store: their cells already had the plan's samples (the host's own store had lost them)",
                h.name, cap.dropped
            );
        }
        if let Some(b) = broken {
            return Err(b);
        }
        if status.success() {
            return Ok(());
        }
        let code = status.code();
        if code == Some(1) && ended && !failures.is_empty() {
            // The run completed with failed cells: say which, from the
            // stream (the host's own messages name its own store).
            return Err(format!(
                "host {}: {} failure(s) in the run; first: {}",
                h.name,
                failures.len(),
                failures.first().map_or("-", String::as_str)
            ));
        }
        let mut e = ssh::explain(h, &stderr, code);
        // Only ssh itself (255) or a kill breaks a connection; any other
        // code is the remote kbench's own answer.
        if begun && !ended && matches!(code, Some(255) | None) {
            e = format!("{e} (connection lost during the run; results so far are stored)");
        }
        Err(e)
    }
}

/// sha256 of a file, by coreutils' `sha256sum` (the same tool the remote
/// side uses).
fn sha256_hex(path: &Path) -> anyhow::Result<String> {
    let out = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .map_err(|e| anyhow::anyhow!("sha256sum: {e}"))?;
    if !out.status.success() {
        anyhow::bail!("sha256sum {} failed", path.display());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string())
}

/// The run lock a fleet's coordinator holds (beside its plan's own).
fn coordinator_lock(plan: &crate::plan::Plan) -> String {
    format!("fleet {} {}", plan.name, plan.hash())
}

/// The states a host is left in while its coordinator works on it.
const UNDER_WAY: &[&str] = &["checking", "copying kbench", "catching up", "running"];

/// `fleet status`: each host's last state and error, with its progress
/// in the coordinator's store.
pub fn status(db: &store::Locator, plan_path: &Path, hosts: &[Host]) -> anyhow::Result<FleetState> {
    let plan = crate::plan::load_for_hosts(plan_path)?;
    let cells = crate::plan::expand(&plan)?.len();
    let target = crate::plan::settings::samples(&plan, None, false);
    let st = store::open(db, store::Access::Read)?;
    let mut known: BTreeMap<String, store::FleetHostRec> = st
        .fleet_hosts(&plan.name, &plan.hash())?
        .into_iter()
        .map(|h| (h.host.clone(), h))
        .collect();
    // A host still under way whose coordinator holds no lock was left so
    // by a coordinator that was killed (SIGKILL, a crash, a reboot).
    let orphaned = st.campaign_locked(&coordinator_lock(&plan)) == Some(false);
    for k in known.values_mut() {
        if orphaned && UNDER_WAY.contains(&k.state.as_str()) {
            k.last_error = Some(format!(
                "host {}: its coordinator ended while it was {} (killed?); re-run to resume",
                k.host, k.state
            ));
            k.state = "interrupted".into();
        }
    }
    let progress = match crate::campaign::find(&*st, &plan)? {
        Some(c) => st.progress(c.id)?,
        None => Vec::new(),
    };
    let mut out = FleetState::default();
    for h in hosts {
        let mut s = match known.remove(&h.name) {
            Some(k) => HostState {
                state: k.state,
                updated: k.updated,
                last_error: k.last_error,
                ..Default::default()
            },
            None => HostState {
                state: "not run".into(),
                ..Default::default()
            },
        };
        s.cells = cells;
        for p in &progress {
            let r: IndexMap<String, String> = serde_json::from_str(&p.readings).unwrap_or_default();
            if r.get("host") == Some(&h.name) {
                s.samples += u64::from(p.samples);
                if p.samples >= target {
                    s.cells_done += 1;
                }
            }
        }
        out.hosts.insert(h.name.clone(), s);
    }
    Ok(out)
}

/// `SIGINT` or `SIGTERM` (else the number).
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        n => format!("signal {n}"),
    }
}

/// `fleet status` as text: one line per host.
pub fn status_text(s: &FleetState) -> String {
    let mut t = String::new();
    let w = s.hosts.keys().map(|k| k.len()).max().unwrap_or(4).max(4);
    t.push_str(&format!(
        "{:w$}  {:>10}  {:>8}  {:14}  last error\n",
        "host", "cells", "samples", "state"
    ));
    for (name, h) in &s.hosts {
        t.push_str(&format!(
            "{name:w$}  {:>10}  {:>8}  {:14}  {}\n",
            format!("{}/{}", h.cells_done, h.cells),
            h.samples,
            h.state,
            h.last_error.as_deref().unwrap_or("-")
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relabel_puts_host_and_labels_first() {
        let h = Host {
            name: "old".into(),
            ssh: "a@b".into(),
            port: None,
            identity: None,
            known_hosts: None,
            ssh_options: vec![],
            labels: [("hardware".to_string(), "type 1".to_string())]
                .into_iter()
                .collect(),
        };
        let mut c = crate::store::suite::cell_info("a", &[("smt", "on")]);
        relabel(&h, &mut c);
        assert_eq!(
            c.readings_text(),
            r#"{"host":"old","hardware":"type 1","smt":"on"}"#
        );
        let once = c.clone();
        relabel(&h, &mut c);
        assert_eq!(c, once, "relabelling is idempotent");
    }
}
