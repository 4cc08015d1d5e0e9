//! `kbench bisect`: find the commit that made a benchmark slower, by
//! measurement rather than by a person's judgement of each revision.
//!
//! The revisions between `--good` and `--bad` are the first-parent
//! ancestry path of the bad one (`git rev-list --first-parent
//! --ancestry-path`). Each revision is built once, in a worktree of its
//! own (`build.rs`, cached by commit id), and measured interleaved with
//! the two ends (`measure.rs`), sampling until it is decided "like good"
//! or "like bad" against the threshold (`decide.rs`), or left undecided
//! after `--max-samples` (skipped, with how many more samples would
//! decide it). A binary search over the path narrows to the first bad
//! commit, skipping revisions that fail to build or cannot be decided, as
//! `git bisect skip` does.
//!
//! Every step is a run of one campaign (the `commit` factor names the
//! revision), so `kbench report CAMPAIGN` tabulates the whole bisection.
//! `--exit-code` decides a single revision for `git bisect run`.

mod build;
mod decide;
mod git;
mod measure;
mod text;

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::BisectArgs;
use crate::error::bad_input;
use crate::record::{CampaignKey, Direction, RunConfig};
use crate::stats::Interval;
use crate::store::{self, CampaignQuery};
use build::{Builds, Built};
pub use decide::Call;
use git::{Commit, Repo};
use measure::{Arm, Sampler, Spec};

/// Confidence of the reported effect size (percent).
const EFFECT_CONFIDENCE: f64 = 95.0;

/// One revision on the path, as reported.
#[derive(Clone, Debug, Serialize)]
pub struct Rev {
    /// Position on the path: 0 is the good end.
    pub position: usize,
    /// The `commit` factor's value in the campaign: `NN-<short id>`.
    pub label: String,
    #[serde(flatten)]
    pub commit: Commit,
}

/// What one step found out about one revision.
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    #[serde(flatten)]
    pub rev: Rev,
    /// `None` when it was skipped before any measurement (build failed).
    pub call: Option<Call>,
    pub look: Option<decide::Look>,
    /// Samples of the revision, the good end and the bad end in this step.
    pub samples: [usize; 3],
    /// Why it was skipped, if it was.
    pub skipped: Option<String>,
}

/// The size of the regression at the first bad commit.
#[derive(Clone, Debug, Serialize)]
pub struct Effect {
    /// Relative change towards worse of the first bad commit from the
    /// good end, both measured interleaved in the same step.
    pub regression: f64,
    pub interval: Interval,
    pub confidence: f64,
    pub good_mean: f64,
    pub mean: f64,
    pub n_good: usize,
    pub n: usize,
}

/// A whole bisection, as printed (text or `--json`).
#[derive(Clone, Debug, Serialize)]
pub struct Bisection {
    pub repo: PathBuf,
    pub good: Rev,
    pub bad: Rev,
    /// Revisions after the good end, up to the bad end.
    pub path_len: usize,
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub threshold: f64,
    /// The ends first, then each tested revision in order.
    pub steps: Vec<Step>,
    /// The first bad commit, when the search narrowed to one.
    pub first_bad: Option<Rev>,
    /// Otherwise the revisions it could be (skipped ones in between).
    pub candidates: Vec<Rev>,
    pub effect: Option<Effect>,
    /// Measured samples (warm-ups not counted), all steps.
    pub samples: u64,
    pub builds_run: usize,
    pub builds_cached: usize,
    pub campaign: String,
}

/// Entry point: a whole bisection, or with `--exit-code` one revision's
/// verdict for `git bisect run` (0 good, 1 bad, 125 skip; any error
/// exits 128, which makes `git bisect run` stop).
pub fn run(db: &store::Locator, a: &BisectArgs) -> anyhow::Result<ExitCode> {
    if !a.exit_code {
        return bisect(db, a);
    }
    match decide_one(db, a) {
        Ok(code) => Ok(code),
        Err(e) => {
            eprintln!("kbench: {e:#}");
            Ok(ExitCode::from(128))
        }
    }
}

/// Settings shared by both modes, checked.
struct Setup {
    repo: Repo,
    spec: Spec,
    good: Commit,
    bad: Commit,
    /// good, then the path (the bad end last).
    all: Vec<Commit>,
    labels: Vec<String>,
    threshold: f64,
    cache: PathBuf,
}

fn setup(a: &BisectArgs) -> anyhow::Result<Setup> {
    let threshold =
        crate::units::parse_percent(&a.threshold).map_err(|e| bad_input!("--threshold: {e}"))?;
    if !(threshold > 0.0 && threshold < 10.0) {
        return Err(bad_input!(
            "--threshold {}: must be a positive percentage",
            a.threshold
        ));
    }
    if a.max_samples < decide_min() as u32 {
        return Err(bad_input!(
            "--max-samples {}: need at least {}",
            a.max_samples,
            decide_min()
        ));
    }
    if !(a.sample_time > 0.0 && a.sample_time <= 3600.0) {
        return Err(bad_input!(
            "--sample-time {}: must be in (0, 3600] seconds",
            a.sample_time
        ));
    }
    let spec = Spec::parse(&a.bench)?;
    let repo = Repo::open(&a.repo)?;
    let good = repo.commit("--good", &a.good)?;
    let bad = repo.commit("--bad", &a.bad)?;
    let path = repo.path(&good, &bad)?;
    let mut all = vec![good.clone()];
    all.extend(path);
    let width = (all.len() - 1).to_string().len().max(2);
    let labels = all
        .iter()
        .enumerate()
        .map(|(i, c)| format!("{i:0width$}-{}", &c.id[..c.id.len().min(7)]))
        .collect();
    let cache = a.cache.clone().unwrap_or_else(build::default_root);
    Ok(Setup {
        repo,
        spec,
        good,
        bad,
        all,
        labels,
        threshold,
        cache,
    })
}

fn decide_min() -> usize {
    crate::runner::adaptive::MIN_SAMPLES
}

impl Setup {
    fn rev(&self, i: usize) -> Rev {
        Rev {
            position: i,
            label: self.labels[i].clone(),
            commit: self.all[i].clone(),
        }
    }

    /// The campaign's plan text: what was bisected (in comments), and for
    /// a command a plan whose `commit` factor lists every revision of the
    /// path and whose `[report]` is a table by commit (the matrix of every
    /// metric). It is never run: each revision's cell runs in that
    /// revision's worktree.
    fn plan_text(&self, a: &BisectArgs, name: &str) -> String {
        let q = |v: &str| toml::Value::String(v.to_string()).to_string();
        let mut t = format!(
            "# kbench bisect of {}: good {} .. bad {} ({} revisions, first parents)\n",
            self.repo.dir.display(),
            self.good.id,
            self.bad.id,
            self.all.len() - 1
        );
        t += &format!(
            "# build: {}\n# metric: {}, threshold {}\n",
            a.build.as_deref().unwrap_or("(none)"),
            a.metric.as_deref().unwrap_or("(the benchmark's first)"),
            a.threshold
        );
        match &self.spec {
            Spec::Command(cmd) => {
                let commits: Vec<(String, String)> = self
                    .labels
                    .iter()
                    .cloned()
                    .zip(self.all.iter().map(|c| c.id.clone()))
                    .collect();
                t += &measure::command_plan(name, cmd, &commits, None);
                t += "\n[report]\ntable = \"matrix\"\nrows = [\"commit\"]\n";
            }
            // A built-in benchmark or a plan's cell is not a plan of its
            // own: the text only says what was measured (reports fall
            // back to their default layout, a table by commit).
            _ => t += &format!("# bench: {}\nname = {}\n", a.bench, q(name)),
        }
        t
    }
}

/// The campaign of this bisection: a new generation of its identity for
/// a whole bisection (each is its own campaign); with `--exit-code` the
/// latest one, so every `git bisect run` step joins one campaign.
fn campaign_key(
    st: &dyn store::StoreRead,
    name: &str,
    text: String,
    fresh: bool,
) -> anyhow::Result<CampaignKey> {
    let hash = crate::ids::plan_hash(&text);
    let last = st
        .campaigns(CampaignQuery::Named(name))?
        .into_iter()
        .filter(|c| c.plan_hash == hash)
        .map(|c| c.generation)
        .max();
    Ok(CampaignKey {
        name: name.to_string(),
        plan_hash: hash,
        generation: match (last, fresh) {
            (Some(g), true) => g + 1,
            (Some(g), false) => g,
            (None, _) => 1,
        },
        plan_text: text,
    })
}

fn config(a: &BisectArgs, name: &str) -> RunConfig {
    RunConfig {
        version: RunConfig::VERSION,
        plan: name.to_string(),
        stop: None,
        samples: a.max_samples,
        sample_time: a.sample_time,
        warmup: a.warmup,
        seed: a.seed.unwrap_or_else(crate::ids::fresh_seed),
        force: false,
        argv: store::locator::redact_args(std::env::args()),
        owner: crate::system::owner(),
        processes: None,
    }
}

/// The metric to decide on: `--metric`, else the benchmark's first; its
/// unit and direction.
fn metric(
    cell: &crate::plan::Cell,
    want: Option<&str>,
) -> anyhow::Result<(String, String, Direction)> {
    let ms = cell.bench.metrics();
    let m = match want {
        Some(w) => ms.iter().find(|m| m.name == w).ok_or_else(|| {
            let names: Vec<&str> = ms.iter().map(|m| m.name.as_str()).collect();
            bad_input!(
                "--metric {w}: `{}` has no such metric (its metrics: {})",
                cell.display,
                names.join(", ")
            )
        })?,
        None => ms
            .first()
            .ok_or_else(|| bad_input!("`{}` has no metric", cell.display))?,
    };
    if m.direction == Direction::Info {
        return Err(bad_input!(
            "--metric {}: informational, neither better nor worse; choose another",
            m.name
        ));
    }
    Ok((m.name.clone(), m.unit.clone(), m.direction))
}

/// Build an end of the range; failing to is an error (nothing to compare
/// with).
fn build_end(builds: &mut Builds<'_>, which: &str, c: &Commit) -> anyhow::Result<PathBuf> {
    match builds.build(c)? {
        Built::Ok { dir, .. } => Ok(dir),
        Built::Failed { why, log } => Err(anyhow::anyhow!(
            "the {which} end {} does not build: {why} (log: {})",
            c.short(),
            log.display()
        )),
    }
}

fn bisect(db: &store::Locator, a: &BisectArgs) -> anyhow::Result<ExitCode> {
    let s = setup(a)?;
    let name = a.name.clone();
    let say = |m: String| {
        if !a.quiet {
            eprintln!("kbench: {m}");
        }
    };
    let mut st = store::open(db, store::Access::Write)?;
    st.lock_campaign(&name)?;
    let key = campaign_key(&*st, &name, s.plan_text(a, &name), true)?;
    let mut builds = Builds::new(&s.repo, &s.cache, a.build.clone());
    let n = s.all.len() - 1;
    say(format!(
        "bisecting {n} revision(s) after {} up to {} (first parents); builds in {}",
        s.good.short(),
        s.bad.short(),
        builds.root.display()
    ));
    let good_dir = build_end(&mut builds, "good", &s.good)?;
    let bad_dir = build_end(&mut builds, "bad", &s.bad)?;
    let good_cell = s.spec.cell(&good_dir, &s.labels[0], &s.good.id)?;
    let bad_cell = s.spec.cell(&bad_dir, &s.labels[n], &s.bad.id)?;
    let (metric, unit, direction) = metric(&good_cell, a.metric.as_deref())?;
    let higher = direction == Direction::Higher;
    let threshold = s.threshold;

    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut sampler = Sampler::new(
        &mut writer,
        key,
        config(a, &name),
        metric.clone(),
        a.max_samples,
    );
    // By position: its values and the good end's of the step that
    // measured it last (interleaved, so their difference is drift-free).
    let mut seen: BTreeMap<usize, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut steps: Vec<Step> = Vec::new();

    // The ends: the bad one must be "like bad".
    let mut arms = vec![Arm::new(good_cell.clone()), Arm::new(bad_cell.clone())];
    sampler.step(&mut arms, |x| {
        decide::look(&x[0].values, &x[1].values, higher, threshold)
            .is_some_and(|l| l.call != Call::Undecided)
    })?;
    if let Some(f) = arms.iter().find_map(|x| x.failed.clone()) {
        return Err(anyhow::anyhow!("measuring the ends: {f}"));
    }
    seen.insert(n, (arms[1].values.clone(), arms[0].values.clone()));
    let ends = decide::look(&arms[0].values, &arms[1].values, higher, threshold)
        .ok_or_else(|| anyhow::anyhow!("too few samples of the ends"))?;
    let end_step = Step {
        rev: s.rev(n),
        call: Some(ends.call),
        look: Some(ends),
        samples: [
            arms[1].values.len(),
            arms[0].values.len(),
            arms[1].values.len(),
        ],
        skipped: None,
    };
    say(text::step_line(&end_step, &unit));
    steps.push(end_step);
    match ends.call {
        Call::LikeBad => {}
        Call::LikeGood => {
            return Err(anyhow::anyhow!(
                "the bad end {} is not worse than the good end {} by more than {}: {} (nothing to bisect)",
                s.bad.short(),
                s.good.short(),
                a.threshold,
                text::change(&ends)
            ));
        }
        Call::Undecided => {
            return Err(anyhow::anyhow!(
                "cannot tell whether the bad end {} is worse than the good end by more than {} after {} samples each: {}{}",
                s.bad.short(),
                a.threshold,
                a.max_samples,
                text::change(&ends),
                text::more(&ends)
            ));
        }
    }

    // Binary search: `lo` is known good, `hi` known bad.
    let (mut lo, mut hi) = (0usize, n);
    let mut skipped: Vec<usize> = Vec::new();
    while let Some(c) = next(lo, hi, &skipped) {
        say(format!(
            "{} {}: building and measuring against both ends",
            s.labels[c], s.all[c].subject
        ));
        let dir = match builds.build(&s.all[c])? {
            Built::Ok { dir, .. } => dir,
            Built::Failed { why, log } => {
                let step = Step {
                    rev: s.rev(c),
                    call: None,
                    look: None,
                    samples: [0, 0, 0],
                    skipped: Some(format!("build failed: {why} (log: {})", log.display())),
                };
                say(text::step_line(&step, &unit));
                steps.push(step);
                skipped.push(c);
                continue;
            }
        };
        let cell = s.spec.cell(&dir, &s.labels[c], &s.all[c].id)?;
        let m = measure_rev(
            &mut sampler,
            [cell, good_cell.clone(), bad_cell.clone()],
            higher,
            threshold,
        )?;
        seen.insert(c, (m.values[0].clone(), m.values[1].clone()));
        let step = m.step(s.rev(c));
        say(text::step_line(&step, &unit));
        steps.push(step);
        let Some(l) = m.look else {
            skipped.push(c);
            continue;
        };
        match l.call {
            Call::LikeGood => lo = c,
            Call::LikeBad => hi = c,
            Call::Undecided => skipped.push(c),
        }
    }
    let samples = sampler.measured;
    drop(sampler);
    drop(writer);

    // The loop ends when nothing untested lies between lo and hi.
    let (first_bad, candidates) = if hi == lo + 1 {
        (Some(s.rev(hi)), Vec::new())
    } else {
        (None, (lo + 1..=hi).map(|i| s.rev(i)).collect())
    };
    let effect = first_bad.as_ref().and_then(|_| {
        let (b, g) = seen.get(&hi)?;
        let (regression, interval) = decide::regression(g, b, higher, EFFECT_CONFIDENCE)?;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        Some(Effect {
            regression,
            interval,
            confidence: EFFECT_CONFIDENCE,
            good_mean: mean(g),
            mean: mean(b),
            n_good: g.len(),
            n: b.len(),
        })
    });
    let result = Bisection {
        repo: s.repo.dir.clone(),
        good: s.rev(0),
        bad: s.rev(n),
        path_len: n,
        bench: a.bench.clone(),
        metric,
        unit,
        direction,
        threshold,
        steps,
        first_bad,
        candidates,
        effect,
        samples,
        builds_run: builds.built,
        builds_cached: builds.reused,
        campaign: name,
    };
    if a.json {
        crate::cmd::out(&(serde_json::to_string_pretty(&result)? + "\n"))?;
    } else {
        crate::cmd::out(&text::render(&result))?;
    }
    Ok(if result.first_bad.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--exit-code`: decide `--rev` (default HEAD) against the ends.
fn decide_one(db: &store::Locator, a: &BisectArgs) -> anyhow::Result<ExitCode> {
    let s = setup(a)?;
    let rev = s.repo.commit("--rev", a.rev.as_deref().unwrap_or("HEAD"))?;
    let n = s.all.len() - 1;
    if rev.id == s.good.id {
        eprintln!("kbench: {} is the good end: good", rev.short());
        return Ok(ExitCode::SUCCESS);
    }
    if rev.id == s.bad.id {
        eprintln!("kbench: {} is the bad end: bad", rev.short());
        return Ok(ExitCode::from(1));
    }
    let Some(c) = s.all.iter().position(|x| x.id == rev.id) else {
        return Err(bad_input!(
            "--rev {}: not on the first-parent path from {} to {}",
            rev.short(),
            s.good.short(),
            s.bad.short()
        ));
    };
    let name = a.name.clone();
    let mut st = store::open(db, store::Access::Write)?;
    st.lock_campaign(&name)?;
    let key = campaign_key(&*st, &name, s.plan_text(a, &name), false)?;
    let mut builds = Builds::new(&s.repo, &s.cache, a.build.clone());
    let good_dir = build_end(&mut builds, "good", &s.good)?;
    let bad_dir = build_end(&mut builds, "bad", &s.bad)?;
    let dir = match builds.build(&rev)? {
        Built::Ok { dir, .. } => dir,
        Built::Failed { why, log } => {
            eprintln!(
                "kbench: {} {}: build failed, skip (125): {why} (log: {})",
                s.labels[c],
                rev.subject,
                log.display()
            );
            return Ok(ExitCode::from(125));
        }
    };
    let good_cell = s.spec.cell(&good_dir, &s.labels[0], &s.good.id)?;
    let (metric, unit, direction) = metric(&good_cell, a.metric.as_deref())?;
    let higher = direction == Direction::Higher;
    let threshold = s.threshold;
    let cells = [
        s.spec.cell(&dir, &s.labels[c], &s.all[c].id)?,
        good_cell,
        s.spec.cell(&bad_dir, &s.labels[n], &s.bad.id)?,
    ];
    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut sampler = Sampler::new(&mut writer, key, config(a, &name), metric, a.max_samples);
    let m = measure_rev(&mut sampler, cells, higher, threshold)?;
    let step = m.step(s.rev(c));
    eprintln!("kbench: {}", text::step_line(&step, &unit));
    let Some(l) = m.look else {
        return Ok(ExitCode::from(125));
    };
    Ok(ExitCode::from(match l.call {
        Call::LikeGood => 0,
        Call::LikeBad => 1,
        Call::Undecided => 125,
    }))
}

/// The next revision to test between `lo` (known good) and `hi` (known
/// bad): the untested, unskipped one nearest the middle (the lower of two
/// as near), or `None` when none is left.
fn next(lo: usize, hi: usize, skipped: &[usize]) -> Option<usize> {
    let mid = (lo + hi) as f64 / 2.0;
    (lo + 1..hi)
        .filter(|i| !skipped.contains(i))
        .min_by(|x, y| (*x as f64 - mid).abs().total_cmp(&(*y as f64 - mid).abs()))
}

/// What measuring one revision against the ends gave.
struct Measured {
    /// The metric's values of the revision, the good and the bad end.
    values: [Vec<f64>; 3],
    /// Why the revision's benchmark failed.
    failed: Option<String>,
    look: Option<decide::Look>,
}

impl Measured {
    fn step(&self, rev: Rev) -> Step {
        let samples = [
            self.values[0].len(),
            self.values[1].len(),
            self.values[2].len(),
        ];
        match (&self.look, &self.failed) {
            (Some(l), _) => Step {
                rev,
                call: Some(l.call),
                look: Some(*l),
                samples,
                skipped: (l.call == Call::Undecided)
                    .then(|| format!("undecided after {} samples{}", l.n, text::more(l))),
            },
            (None, f) => Step {
                rev,
                call: None,
                look: None,
                samples,
                skipped: Some(format!(
                    "the benchmark failed: {}",
                    f.as_deref().unwrap_or("no samples")
                )),
            },
        }
    }
}

/// Measure `cells` (the revision, the good end, the bad end) interleaved
/// until the revision is decided against the good end's samples of this
/// step, or the cap. Only samples of the same step are compared: pooling
/// the good end's samples of earlier steps would be cheaper, but a
/// machine whose speed drifted between steps (load, temperature) would
/// then move the verdict, which interleaving exists to prevent. A failing
/// end is an error; a failing revision is reported (and skipped by the
/// caller).
fn measure_rev(
    sampler: &mut Sampler<'_>,
    cells: [crate::plan::Cell; 3],
    higher: bool,
    threshold: f64,
) -> anyhow::Result<Measured> {
    let mut arms: Vec<Arm> = cells.into_iter().map(Arm::new).collect();
    sampler.step(&mut arms, |x| {
        decide::look(&x[1].values, &x[0].values, higher, threshold)
            .is_some_and(|l| l.call != Call::Undecided)
    })?;
    if let Some(f) = arms[1..].iter().find_map(|x| x.failed.clone()) {
        return Err(anyhow::anyhow!("measuring an end: {f}"));
    }
    let failed = arms[0].failed.clone();
    let look = match failed {
        Some(_) => None,
        None => decide::look(&arms[1].values, &arms[0].values, higher, threshold),
    };
    let mut values = arms.into_iter().map(|a| a.values);
    Ok(Measured {
        values: [
            values.next().unwrap_or_default(),
            values.next().unwrap_or_default(),
            values.next().unwrap_or_default(),
        ],
        failed,
        look,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Binary search with a given oracle: (first bad, revisions tested).
    fn search(n: usize, bad_from: usize, skip: &[usize]) -> (usize, usize, Vec<usize>) {
        let (mut lo, mut hi) = (0, n);
        let mut skipped = Vec::new();
        let mut tested = Vec::new();
        while let Some(c) = next(lo, hi, &skipped) {
            tested.push(c);
            if skip.contains(&c) {
                skipped.push(c);
            } else if c >= bad_from {
                hi = c;
            } else {
                lo = c;
            }
        }
        (lo, hi, tested)
    }

    #[test]
    fn the_search_narrows_in_log2_steps() {
        for bad_from in 1..=19 {
            let (lo, hi, tested) = search(19, bad_from, &[]);
            assert_eq!((lo + 1, hi), (bad_from, bad_from));
            assert!(tested.len() <= 5, "{bad_from}: {tested:?}");
        }
        // 19 revisions after the good end, the 12th bad: 10, 14, 12, 11.
        assert_eq!(search(19, 12, &[]).2, vec![9, 14, 11, 12]);
    }

    #[test]
    fn skipped_revisions_are_stepped_around_or_left_as_a_range() {
        // The middle one cannot be tested: its neighbour is.
        let (lo, hi, tested) = search(19, 12, &[9]);
        assert_eq!((lo, hi), (11, 12));
        assert_eq!(tested[..2], [9, 10]);
        // The first bad one itself skipped: the answer is a range.
        let (lo, hi, _) = search(19, 12, &[12]);
        assert_eq!((lo, hi), (11, 13));
        assert_eq!(next(11, 13, &[12]), None);
    }
}
