//! `kbench bisect`: find the commit that made a benchmark slower, by
//! measurement rather than by a person's judgement of each revision.
//!
//! The revisions between `--good` and `--bad` are the first-parent
//! ancestry path of the bad one (`git rev-list --first-parent
//! --ancestry-path`). Each revision is built once, in a worktree of its
//! own (`build.rs`, cached by commit id), and measured interleaved with
//! the two ends in rounds (`measure.rs`, the runner's sampler), sampling
//! until the per-round comparison with the ends decides it "like good" or
//! "like bad" against the threshold (`decide.rs`), or leaves it undecided
//! after `--max-samples` (skipped, with how many more samples would
//! decide it). A binary search over the path narrows to the first bad
//! commit, skipping revisions that fail to build or cannot be decided, as
//! `git bisect skip` does.
//!
//! Every step is a run of one campaign (the `commit` factor names the
//! revision), and stores its call as a verdict with its run; the
//! bisection's result goes with the run that measured the ends, so
//! `kbench report CAMPAIGN` shows each step against the ends measured in
//! the same step (`report.rs`). `--exit-code` decides a single revision
//! for `git bisect run`, after checking once per campaign that the bad
//! end is worse than the good one.

mod args;
mod build;
mod decide;
mod git;
pub use git::head_labels;
mod measure;
pub mod report;
mod text;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::error::bad_input;
use crate::record::{CampaignKey, Direction, RunConfig, RunStatus};
use crate::stats::Interval;
use crate::store::{self, CampaignQuery};
pub use args::BisectArgs;
use build::{Builds, Built};
pub use decide::Call;
use git::{Commit, Repo};
use measure::{Measured, Spec, Steps};

/// One arm's values of the metric in a step, each with its round.
type Rounds = Vec<(u32, f64)>;

/// Verdict kinds stored with a bisection's runs.
pub const ENDS: &str = "bisect.ends";
pub const STEP: &str = "bisect.step";
pub const RESULT: &str = "bisect.result";

/// Confidence of the reported effect size (percent).
const EFFECT_CONFIDENCE: f64 = 95.0;

/// One revision on the path, as reported.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rev {
    /// Position on the path: 0 is the good end.
    pub position: usize,
    /// The `commit` factor's value in the campaign: `NN-<short id>`.
    pub label: String,
    #[serde(flatten)]
    pub commit: Commit,
}

/// What one step found out about one revision.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Effect {
    /// Relative change towards worse of the first bad commit from the
    /// good end, both measured interleaved in the same step, paired by
    /// round (Hodges-Lehmann; Wilcoxon signed-rank interval).
    pub regression: f64,
    pub interval: Interval,
    pub confidence: f64,
    pub good_mean: f64,
    pub mean: f64,
    pub n_good: usize,
    pub n: usize,
    /// Rounds in which both were measured: the pairs compared.
    #[serde(default)]
    pub rounds: usize,
}

/// What is bisected: stored with every step's verdict, so a campaign of
/// `--exit-code` steps can be reported too.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct About {
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
}

/// A step's verdict as stored with its run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StepVerdict {
    #[serde(flatten)]
    pub step: Step,
    pub about: About,
}

/// A whole bisection, as printed (text or `--json`) and stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Bisection {
    #[serde(flatten)]
    pub about: About,
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
    /// How the result was come by, when not by one whole bisection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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

/// The smallest cap on a step's rounds: a cap of 8 is a single look at
/// 95%, which the signed-rank interval of 8 rounds can reach; fewer leave
/// too little to decide on.
fn decide_min() -> usize {
    8
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
    let seed = a.seed.unwrap_or_else(crate::ids::fresh_seed);
    RunConfig {
        argv: crate::redact::args(std::env::args()),
        owner: crate::system::owner(),
        ..RunConfig::new(name, a.max_samples, a.sample_time, a.warmup, seed)
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

/// What a bisection needs while it measures: the setup, the ends' cells,
/// the metric and its direction.
struct Ctx<'s> {
    s: &'s Setup,
    a: &'s BisectArgs,
    good: crate::plan::Cell,
    bad: crate::plan::Cell,
    direction: Direction,
    about: About,
}

impl Ctx<'_> {
    /// The steps of this bisection, written to `sink` in campaign `key`.
    fn steps<'w>(
        &self,
        sink: &'w mut dyn crate::event::Sink,
        key: CampaignKey,
        stop: Arc<AtomicBool>,
    ) -> Steps<'w> {
        let a = self.a;
        let config = config(a, &a.name);
        Steps::new(
            sink,
            key,
            config,
            self.about.metric.clone(),
            a.max_samples,
            stop,
        )
    }

    /// A step as its verdict is stored.
    fn stored(&self, step: Step) -> serde_json::Value {
        serde_json::to_value(StepVerdict {
            step,
            about: self.about.clone(),
        })
        .expect("serialisable")
    }

    fn say(&self, m: String) {
        if !self.a.quiet {
            eprintln!("kbench: {m}");
        }
    }

    /// Measure the ends against each other: the step (the bad end as
    /// its revision) and the run it was measured in. An error when an end
    /// fails or Ctrl-C stops it.
    fn ends(&self, steps: &mut Steps<'_>) -> anyhow::Result<(Step, String)> {
        let (dir, t) = (
            self.direction,
            (self.s.threshold, self.a.max_samples as usize),
        );
        let n = self.s.all.len() - 1;
        let rev = self.s.rev(n);
        let m = steps.step(
            vec![self.good.clone(), self.bad.clone()],
            |v| decide::look(&v[0], &v[1], None, dir, t).is_some_and(|l| decided(&l, t.1)),
            |m| vec![(ENDS.into(), self.stored(ends_step(m, rev.clone(), dir, t)))],
        )?;
        interrupted(&m)?;
        if let Some(f) = m.failed.iter().flatten().next() {
            anyhow::bail!("measuring the ends: {f}");
        }
        let step = ends_step(&m, rev, dir, t);
        self.say(text::step_line(&step, self.direction));
        Ok((step, m.run))
    }

    /// Measure revision `c` (built in `dir`) against both ends in one
    /// step; its verdict is stored with the step's run.
    fn candidate(
        &self,
        steps: &mut Steps<'_>,
        c: usize,
        dir: &std::path::Path,
    ) -> anyhow::Result<(Step, Measured)> {
        let cell = self
            .s
            .spec
            .cell(dir, &self.s.labels[c], &self.s.all[c].id)?;
        let (d, t) = (
            self.direction,
            (self.s.threshold, self.a.max_samples as usize),
        );
        let rev = self.s.rev(c);
        let m = steps.step(
            vec![cell, self.good.clone(), self.bad.clone()],
            |v| decide::look(&v[1], &v[0], Some(&v[2]), d, t).is_some_and(|l| decided(&l, t.1)),
            |m| {
                vec![(
                    STEP.into(),
                    self.stored(candidate_step(m, rev.clone(), d, t)),
                )]
            },
        )?;
        interrupted(&m)?;
        if let Some(f) = m.failed[1..].iter().flatten().next() {
            anyhow::bail!("measuring an end: {f}");
        }
        let step = candidate_step(&m, rev, d, t);
        self.say(text::step_line(&step, self.direction));
        Ok((step, m))
    }
}

/// Whether a step capped at `max` rounds stops at `l`: decided, at one of
/// the looks of the sequential schedule.
fn decided(l: &decide::Look, max: usize) -> bool {
    crate::stats::sequential::is_look(l.n, max) && l.call != Call::Undecided
}

/// Ctrl-C ended the step: the bisection stops (what was measured is
/// stored).
fn interrupted(m: &Measured) -> anyhow::Result<()> {
    if m.status == RunStatus::Interrupted {
        anyhow::bail!(
            "interrupted; the samples measured so far are stored in the campaign's run {}",
            m.run
        );
    }
    Ok(())
}

/// The ends' step: the bad end against the good one.
fn ends_step(m: &Measured, rev: Rev, direction: Direction, threshold: (f64, usize)) -> Step {
    let look = decide::look(&m.values[0], &m.values[1], None, direction, threshold);
    Step {
        rev,
        call: look.map(|l| l.call),
        look,
        samples: [m.values[1].len(), m.values[0].len(), m.values[1].len()],
        skipped: None,
    }
}

/// A revision's step: decided against both ends of the same step, or
/// skipped (its benchmark failed, or undecided after the cap).
fn candidate_step(m: &Measured, rev: Rev, direction: Direction, threshold: (f64, usize)) -> Step {
    let samples = [m.values[0].len(), m.values[1].len(), m.values[2].len()];
    let look = match &m.failed[0] {
        Some(_) => None,
        None => decide::look(
            &m.values[1],
            &m.values[0],
            Some(&m.values[2]),
            direction,
            threshold,
        ),
    };
    match look {
        Some(l) => Step {
            rev,
            call: Some(l.call),
            look: Some(l),
            samples,
            skipped: (l.call == Call::Undecided)
                .then(|| format!("undecided after {} rounds{}", l.n, text::more(&l))),
        },
        None => Step {
            rev,
            call: None,
            look: None,
            samples,
            skipped: Some(format!(
                "the benchmark failed: {}",
                m.failed[0].as_deref().unwrap_or("no samples")
            )),
        },
    }
}

/// Why the bad end cannot be bisected, when the ends' step says so.
fn ends_refusal(s: &Setup, a: &BisectArgs, ends: &Step, direction: Direction) -> Option<String> {
    let l = ends.look.as_ref()?;
    match l.call {
        Call::LikeBad => None,
        Call::LikeGood => Some(format!(
            "the bad end {} is not worse than the good end {} by more than {}: {} (nothing to bisect)",
            s.bad.short(),
            s.good.short(),
            a.threshold,
            text::change(l, direction)
        )),
        Call::Undecided => Some(format!(
            "cannot tell whether the bad end {} is worse than the good end by more than {} after {} samples each: {}{}",
            s.bad.short(),
            a.threshold,
            a.max_samples,
            text::change(l, direction),
            text::more(l)
        )),
    }
}

/// Open the store, the ends built, the context of a bisection.
fn begin<'s>(s: &'s Setup, a: &'s BisectArgs, builds: &mut Builds<'_>) -> anyhow::Result<Ctx<'s>> {
    let n = s.all.len() - 1;
    let good_dir = build_end(builds, "good", &s.good)?;
    let bad_dir = build_end(builds, "bad", &s.bad)?;
    let good = s.spec.cell(&good_dir, &s.labels[0], &s.good.id)?;
    let bad = s.spec.cell(&bad_dir, &s.labels[n], &s.bad.id)?;
    let (metric, unit, direction) = metric(&good, a.metric.as_deref())?;
    let about = About {
        repo: s.repo.dir.clone(),
        good: s.rev(0),
        bad: s.rev(n),
        path_len: n,
        bench: a.bench.clone(),
        metric,
        unit,
        direction,
        threshold: s.threshold,
    };
    Ok(Ctx {
        s,
        a,
        good,
        bad,
        direction,
        about,
    })
}

fn bisect(db: &store::Locator, a: &BisectArgs) -> anyhow::Result<ExitCode> {
    let s = setup(a)?;
    let name = a.name.clone();
    let mut st = store::open(db, store::Access::Write)?;
    st.lock_campaign(&name)?;
    let key = campaign_key(&*st, &name, s.plan_text(a, &name), true)?;
    let mut builds = Builds::new(&s.repo, &s.cache, a.build.clone());
    let n = s.all.len() - 1;
    if !a.quiet {
        eprintln!(
            "kbench: bisecting {n} revision(s) after {} up to {} (first parents); builds in {}",
            s.good.short(),
            s.bad.short(),
            builds.root.display()
        );
    }
    let cx = begin(&s, a, &mut builds)?;
    let stop = Arc::new(AtomicBool::new(false));
    let _signals = crate::runner::Interrupts::install(&stop)?;
    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut steps = cx.steps(&mut writer, key, stop);

    // The ends: the bad one must be "like bad".
    let (ends, ends_run) = cx.ends(&mut steps)?;
    if let Some(why) = ends_refusal(&s, a, &ends, cx.direction) {
        return Err(anyhow::anyhow!(why));
    }
    let mut result = Bisection {
        about: cx.about.clone(),
        steps: vec![ends],
        first_bad: None,
        candidates: Vec::new(),
        effect: None,
        samples: 0,
        builds_run: 0,
        builds_cached: 0,
        campaign: name,
        note: None,
    };
    search(&cx, &mut builds, &mut steps, &mut result)?;
    result.samples = steps.measured;
    result.builds_run = builds.built;
    result.builds_cached = builds.reused;
    steps.verdict(&ends_run, RESULT, serde_json::to_value(&result)?)?;
    drop(steps);
    drop(writer);
    if a.json {
        let v = crate::report::render::document("bisect", serde_json::to_value(&result)?);
        crate::term::out(&format!("{v:#}\n"))?;
    } else {
        crate::term::out(&text::render(&result))?;
    }
    Ok(if result.first_bad.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The binary search: `lo` is known good, `hi` known bad; each tested
/// revision's step joins `b.steps`. Sets the first bad commit (or the
/// candidates) and its effect.
fn search(
    cx: &Ctx<'_>,
    builds: &mut Builds<'_>,
    steps: &mut Steps<'_>,
    b: &mut Bisection,
) -> anyhow::Result<()> {
    let s = cx.s;
    let n = s.all.len() - 1;
    // By position: its values and the good end's of the step that
    // measured it last (interleaved, so their comparison is drift-free).
    let mut seen: BTreeMap<usize, (Rounds, Rounds)> = BTreeMap::new();
    let (mut lo, mut hi) = (0usize, n);
    let mut skipped: Vec<usize> = Vec::new();
    while let Some(c) = next(lo, hi, &skipped) {
        cx.say(format!(
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
                cx.say(text::step_line(&step, cx.direction));
                b.steps.push(step);
                skipped.push(c);
                continue;
            }
        };
        let (step, m) = cx.candidate(steps, c, &dir)?;
        let call = step.call;
        b.steps.push(step);
        seen.insert(c, (m.values[0].clone(), m.values[1].clone()));
        match call {
            Some(Call::LikeGood) => lo = c,
            Some(Call::LikeBad) => hi = c,
            _ => skipped.push(c),
        }
    }
    // The loop ends when nothing untested lies between lo and hi.
    if hi == lo + 1 {
        b.first_bad = Some(s.rev(hi));
        b.effect = seen.get(&hi).and_then(|(r, g)| effect(g, r, cx.direction));
    } else {
        b.candidates = (lo + 1..=hi).map(|i| s.rev(i)).collect();
    }
    Ok(())
}

/// The regression of the revision `rev` from the good end measured in the
/// same step, paired by round, at [`EFFECT_CONFIDENCE`].
fn effect(good: &[(u32, f64)], rev: &[(u32, f64)], direction: Direction) -> Option<Effect> {
    let c = decide::regression(good, rev, direction, EFFECT_CONFIDENCE)?;
    let mean = |v: &[(u32, f64)]| v.iter().map(|x| x.1).sum::<f64>() / v.len() as f64;
    Some(Effect {
        regression: c.regression,
        interval: c.interval,
        confidence: EFFECT_CONFIDENCE,
        good_mean: mean(good),
        mean: mean(rev),
        n_good: good.len(),
        n: rev.len(),
        rounds: c.rounds,
    })
}

/// `--exit-code`: decide `--rev` (default HEAD) against the ends. The
/// ends are measured once per campaign (the first call of a `git bisect
/// run`) and stored; when the bad end is not worse than the good one,
/// every call exits 128, which stops `git bisect run` before it blames a
/// commit.
fn decide_one(db: &store::Locator, a: &BisectArgs) -> anyhow::Result<ExitCode> {
    let s = setup(a)?;
    let rev = s.repo.commit("--rev", a.rev.as_deref().unwrap_or("HEAD"))?;
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
    let stored_ends = stored_verdict(&*st, &key, ENDS)?;
    let mut builds = Builds::new(&s.repo, &s.cache, a.build.clone());
    let cx = begin(&s, a, &mut builds)?;
    let stop = Arc::new(AtomicBool::new(false));
    let _signals = crate::runner::Interrupts::install(&stop)?;
    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut steps = cx.steps(&mut writer, key, stop);
    let ends = match stored_ends {
        Some(step) => step,
        None => cx.ends(&mut steps)?.0,
    };
    if let Some(why) = ends_refusal(&s, a, &ends, cx.direction) {
        return Err(anyhow::anyhow!(
            "{why}; stopping `git bisect run` (exit 128)"
        ));
    }
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
    let (step, _) = cx.candidate(&mut steps, c, &dir)?;
    if a.quiet {
        eprintln!("kbench: {}", text::step_line(&step, cx.direction));
    }
    Ok(ExitCode::from(match step.call {
        Some(Call::LikeGood) => 0,
        Some(Call::LikeBad) => 1,
        Some(Call::Undecided) | None => 125,
    }))
}

/// The latest verdict `kind` stored in the campaign `key`, as a step.
fn stored_verdict(
    st: &dyn store::StoreRead,
    key: &CampaignKey,
    kind: &str,
) -> anyhow::Result<Option<Step>> {
    let Some(c) = st
        .campaigns(CampaignQuery::Named(&key.name))?
        .into_iter()
        .find(|c| c.plan_hash == key.plan_hash && c.generation == key.generation)
    else {
        return Ok(None);
    };
    let found = st
        .verdicts(store::Scope::Campaign(c.id))?
        .into_iter()
        .rev()
        .find(|v| v.kind == kind);
    found
        .map(|v| serde_json::from_value::<StepVerdict>(v.body).map(|v| v.step))
        .transpose()
        .map_err(|e| anyhow::anyhow!("campaign `{}`: corrupt stored verdict: {e}", key.name))
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
