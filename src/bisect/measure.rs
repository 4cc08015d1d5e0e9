//! What is measured at each revision, and the interleaved sampling of a
//! bisection step.
//!
//! A `--bench` SPEC becomes one plan cell per revision, built by the
//! plan module's own parsing: a built-in benchmark (`getppid:cpu=0`, or a
//! will-it-scale `TESTCASE.c` from the revision's tree), a command
//! (`cmd:./prog --flag`, run by `sh -c` in the revision's worktree), or
//! one cell of a plan file (`PLAN.toml:factor=value,...`, the plan read
//! from the revision's tree when it is there). Each cell gets the factor
//! `commit` (`NN-<id>`, NN its position on the path), which is what makes
//! the campaign's report a table over revisions.
//!
//! A step samples its revisions with the runner's sampler
//! (`runner/sampler.rs`): in rounds, each round in a shuffled order (so
//! drift hits every revision alike and the revisions of one round can be
//! compared pair by pair), after `warmup` discarded rounds, until the
//! caller's decision says stop or `max` samples. Every sample goes out as
//! an event into the store writer, as a run of the campaign, and so does
//! what the step decided (a `verdict` event).

use indexmap::IndexMap;
use rand::SeedableRng;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use crate::error::bad_input;
use crate::event::{Event, RunBegun, SCHEMA, Sink, VerdictEvent};
use crate::ids::unix_now;
use crate::plan::Cell;
use crate::record::{CampaignKey, RunConfig, RunStatus};
use crate::runner::sampler::{Arm, Rule, Sampler, Schedule};
use crate::system::{self, Fingerprint};

/// What `--bench` names.
#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// `NAME[:k=v,...]` or `TESTCASE.c[:k=v,...]`, as `kbench run` takes.
    Builtin(String),
    /// `cmd:COMMAND`: a shell command.
    Command(String),
    /// `PLAN.toml[:k=v,...]`: the one cell of the plan matching every
    /// `k=v` (factor labels or parameters).
    PlanCell {
        path: PathBuf,
        filters: Vec<(String, String)>,
    },
}

impl Spec {
    pub fn parse(s: &str) -> anyhow::Result<Spec> {
        if let Some(cmd) = s.strip_prefix("cmd:") {
            if cmd.trim().is_empty() {
                return Err(bad_input!("--bench {s}: `cmd:` needs a command"));
            }
            return Ok(Spec::Command(cmd.to_string()));
        }
        let (head, rest) = s.split_once(':').unwrap_or((s, ""));
        if head.ends_with(".toml") {
            let filters = crate::units::split_assignments(rest)
                .map_err(|e| bad_input!("--bench {s}: {e}"))?;
            return Ok(Spec::PlanCell {
                path: PathBuf::from(head),
                filters,
            });
        }
        if !head.ends_with(".c") && crate::bench::find(head).is_none() {
            return Err(bad_input!(
                "--bench {s}: unknown benchmark `{head}` (a built-in one, `cmd:COMMAND` or `PLAN.toml:factor=value,...`; known: {})",
                crate::bench::names().join(", ")
            ));
        }
        Ok(Spec::Builtin(s.to_string()))
    }

    /// The cell this spec names in the revision `id` checked out at
    /// `tree`, labelled `commit = label`.
    pub fn cell(&self, tree: &Path, label: &str, id: &str) -> anyhow::Result<Cell> {
        let cell = match self {
            Spec::Builtin(s) => {
                let (head, rest) = s.split_once(':').unwrap_or((s, ""));
                // A testcase file comes from the revision's tree.
                let s = if head.ends_with(".c") && Path::new(head).is_relative() {
                    let p = tree.join(head);
                    format!(
                        "{}{}{rest}",
                        p.display(),
                        if rest.is_empty() { "" } else { ":" }
                    )
                } else {
                    s.clone()
                };
                one(
                    crate::plan::expand(&crate::plan::adhoc(std::slice::from_ref(&s))?)?,
                    &s,
                )?
            }
            // The commit is an `env` factor of the generated plan: the
            // command sees it as $KBENCH_COMMIT.
            Spec::Command(cmd) => {
                let text = command_plan(
                    "bisect",
                    cmd,
                    &[(label.to_string(), id.to_string())],
                    Some(tree),
                );
                let plan = crate::plan::parse(&text, "--bench")?;
                return one(crate::plan::expand(&plan)?, cmd);
            }
            Spec::PlanCell { path, filters } => {
                let in_tree = tree.join(path);
                let path = if path.is_relative() && in_tree.exists() {
                    in_tree
                } else {
                    path.clone()
                };
                let plan = crate::plan::load(&path)?;
                let cells = crate::plan::expand(&plan)?;
                let matching: Vec<Cell> = cells
                    .iter()
                    .filter(|c| {
                        filters.iter().all(|(k, v)| {
                            c.factors.get(k).is_some_and(|l| l == v)
                                || c.params.0.get(k).is_some_and(|p| p.to_string() == *v)
                                || (k == "bench" && c.display == *v)
                        })
                    })
                    .cloned()
                    .collect();
                if matching.len() != 1 {
                    let keys: Vec<&str> = cells.iter().map(|c| c.key.as_str()).collect();
                    return Err(bad_input!(
                        "--bench {}: {} cells match{}; name one with `PLAN.toml:factor=value,...` (cells: {})",
                        path.display(),
                        matching.len(),
                        if filters.is_empty() {
                            " (no filter)"
                        } else {
                            ""
                        },
                        keys.join("; ")
                    ));
                }
                matching.into_iter().next().expect("one")
            }
        };
        Ok(with_commit(cell, label))
    }
}

/// The plan of a command benchmark over `commits` (label, id): the
/// commit is an `env` factor (`$KBENCH_COMMIT`); with `cwd`, it runs
/// there. The campaign's plan text is this over every commit of the path.
pub fn command_plan(
    name: &str,
    cmd: &str,
    commits: &[(String, String)],
    cwd: Option<&Path>,
) -> String {
    let q = |v: &str| toml::Value::String(v.to_string()).to_string();
    let values: Vec<String> = commits
        .iter()
        .map(|(l, id)| format!("{} = {}", q(l), q(id)))
        .collect();
    let mut t = format!(
        "name = {}\n\n[factors]\ncommit = {{ apply = \"env\", var = \"KBENCH_COMMIT\", values = {{ {} }} }}\n\n[[bench]]\nname = {}\nshell = {}\n",
        q(name),
        values.join(", "),
        q(cmd.trim()),
        q(cmd)
    );
    if let Some(dir) = cwd {
        t += &format!("cwd = {}\n", q(&dir.to_string_lossy()));
    }
    t
}

fn one(cells: Vec<Cell>, spec: &str) -> anyhow::Result<Cell> {
    match <[Cell; 1]>::try_from(cells) {
        Ok([c]) => Ok(c),
        Err(v) => Err(bad_input!(
            "--bench {spec}: names {} cells, not one (no sweeps in a bisection)",
            v.len()
        )),
    }
}

/// The cell labelled with its revision: the `commit` factor, in its key
/// too (so the same revision measured in several steps is one cell of the
/// campaign).
fn with_commit(mut cell: Cell, label: &str) -> Cell {
    cell.factors.insert("commit".into(), label.to_string());
    cell.key.push_str(&format!("|@commit={label}"));
    cell
}

/// What one step measured.
pub struct Measured {
    /// The step's run.
    pub run: String,
    /// Each cell's values of the metric, each with its round, in the
    /// order the cells were given.
    pub values: Vec<Vec<(u32, f64)>>,
    /// Why a cell's sampling failed.
    pub failed: Vec<Option<String>>,
    pub status: RunStatus,
}

/// How a bisection samples: each step is a run of the campaign, sampled
/// by the runner's own sampler (rounds, warm-up, the impossible-result
/// guard, Ctrl-C).
pub struct Steps<'a> {
    pub sink: &'a mut dyn Sink,
    pub campaign: CampaignKey,
    pub fingerprint: Fingerprint,
    pub config: RunConfig,
    /// The metric decisions are made on.
    pub metric: String,
    /// Most samples of each revision in one step.
    pub max: u32,
    pub rng: rand_chacha::ChaCha8Rng,
    /// Samples measured (warm-ups not counted), over all steps.
    pub measured: u64,
    /// Set by SIGINT/SIGTERM: the step ends after the current sample.
    pub stop: Arc<AtomicBool>,
}

/// A step's stopping rule: a failed cell ends it; otherwise the caller's
/// decision, after each round.
struct Decided<F>(F);

impl<F: FnMut(&[Vec<(u32, f64)>]) -> bool> Rule for Decided<F> {
    fn enough(&mut self, arms: &[Arm], _members: &[usize]) -> bool {
        if arms.iter().any(|a| a.failed.is_some()) {
            return true;
        }
        let values: Vec<Vec<(u32, f64)>> = arms.iter().map(|a| a.values.clone()).collect();
        (self.0)(&values)
    }
}

impl<'a> Steps<'a> {
    pub fn new(
        sink: &'a mut dyn Sink,
        campaign: CampaignKey,
        config: RunConfig,
        metric: String,
        max: u32,
        stop: Arc<AtomicBool>,
    ) -> Steps<'a> {
        Steps {
            sink,
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(config.seed),
            campaign,
            fingerprint: system::fingerprint(),
            config,
            metric,
            max,
            measured: 0,
            stop,
        }
    }

    /// One step: a run of the campaign sampling `cells` interleaved until
    /// `decided` (given every cell's values) says so after a round, `max`
    /// samples each, a failure or Ctrl-C. `verdicts` then names what the
    /// step decided, stored with its run before the run ends.
    pub fn step(
        &mut self,
        cells: Vec<Cell>,
        decided: impl FnMut(&[Vec<(u32, f64)>]) -> bool,
        verdicts: impl FnOnce(&Measured) -> Vec<(String, serde_json::Value)>,
    ) -> anyhow::Result<Measured> {
        let keeps: Vec<Option<usize>> = cells
            .iter()
            .map(|c| c.bench.metrics().iter().position(|m| m.name == self.metric))
            .collect();
        let mut arms: Vec<Arm> = cells
            .into_iter()
            .zip(&keeps)
            .map(|(c, k)| Arm::new(c, self.max, k.unwrap_or(0)))
            .collect();
        let run = crate::ids::new_run_uuid();
        let begun = RunBegun {
            schema: SCHEMA,
            run: run.clone(),
            campaign: Some(self.campaign.clone()),
            host: self.fingerprint.hostname.clone(),
            started: unix_now(),
            overhead_ns: crate::bench::micro::loop_overhead_ns(self.config.sample_time.min(0.05)),
            config: self.config.clone(),
            fingerprint: self.fingerprint.clone(),
            planned_cells: arms.len(),
            planned_samples: arms.len() as u64 * u64::from(self.max + self.config.warmup),
            labels: Default::default(),
        };
        let mut s = Sampler::begin(&mut *self.sink, begun, Arc::clone(&self.stop))?;
        let no_readings = IndexMap::new();
        for (a, keep) in arms.iter_mut().zip(&keeps) {
            s.announce(a, &no_readings)?;
            match keep {
                Some(_) => s.prepare(a, None)?,
                None => {
                    let why = format!("the benchmark has no metric `{}` here", self.metric);
                    s.fail(a, 0, why, true)?;
                }
            }
        }
        let members: Vec<usize> = (0..arms.len()).collect();
        let schedule = Schedule {
            warmup: self.config.warmup,
            deadline: None,
        };
        let mut status = if arms.iter().any(|a| a.failed.is_some()) {
            RunStatus::Failed
        } else {
            s.rounds(
                &mut arms,
                &members,
                &schedule,
                &mut self.rng,
                &mut Decided(decided),
            )?
        };
        if status == RunStatus::Done && arms.iter().any(|a| a.failed.is_some()) {
            status = RunStatus::Failed;
        }
        self.measured += s.measured;
        let m = Measured {
            run: run.clone(),
            values: arms.iter().map(|a| a.values.clone()).collect(),
            failed: arms.iter().map(|a| a.failed.clone()).collect(),
            status,
        };
        for (kind, body) in verdicts(&m) {
            s.emit(Event::Verdict(VerdictEvent {
                run: run.clone(),
                kind,
                body,
            }))?;
        }
        s.finish(&mut arms, status)?;
        Ok(m)
    }

    /// Store a verdict with an earlier step's run (what the whole
    /// bisection found goes with the run that measured the ends).
    pub fn verdict(
        &mut self,
        run: &str,
        kind: &str,
        body: serde_json::Value,
    ) -> anyhow::Result<()> {
        self.sink.event(&Event::Verdict(VerdictEvent {
            run: run.to_string(),
            kind: kind.to_string(),
            body,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            Spec::parse("cmd:./prog -n 3").unwrap(),
            Spec::Command("./prog -n 3".into())
        );
        assert_eq!(
            Spec::parse("getppid:cpu=0").unwrap(),
            Spec::Builtin("getppid:cpu=0".into())
        );
        assert_eq!(
            Spec::parse("bench.toml:size=4k,mode=a").unwrap(),
            Spec::PlanCell {
                path: "bench.toml".into(),
                filters: vec![("size".into(), "4k".into()), ("mode".into(), "a".into())]
            }
        );
        let e = Spec::parse("no-such-bench").unwrap_err().to_string();
        assert!(e.contains("unknown benchmark `no-such-bench`"), "{e}");
        assert!(Spec::parse("cmd: ").is_err());
    }

    #[test]
    fn a_command_cell_runs_in_the_tree_and_carries_the_commit() {
        let tree = std::env::temp_dir();
        let c = Spec::Command("echo 'a b'".into())
            .cell(&tree, "03-abc", "abcdef")
            .unwrap();
        assert_eq!(c.factors.get("commit").map(String::as_str), Some("03-abc"));
        assert!(c.key.ends_with("|@commit=03-abc"), "{}", c.key);
        assert!(c.key.contains("env.KBENCH_COMMIT=abcdef"), "{}", c.key);
        assert_eq!(c.display, "echo 'a b'");
        let b = Spec::Builtin("getppid".into())
            .cell(&tree, "00-x", "0123")
            .unwrap();
        assert_eq!(b.display, "getppid");
        assert!(b.key.ends_with("|@commit=00-x"));
    }

    #[test]
    fn the_campaign_plan_of_a_command_parses() {
        let commits = [("00-a".into(), "aaa".into()), ("01-b".into(), "bbb".into())];
        let t = command_plan("slow", "./prog -n 3", &commits, None)
            + "\n[report]\ntable = \"matrix\"\nrows = [\"commit\"]\n";
        let p = crate::plan::parse(&t, "t").unwrap();
        assert_eq!(p.name, "slow");
        let cells = crate::plan::expand(&p).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[1].factors["commit"], "01-b");
        assert!(p.layout.is_some());
    }

    #[test]
    fn a_plan_cell_comes_from_the_tree_and_is_picked_by_its_factors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("p.toml"),
            "name = \"p\"\n[factors]\nmode = { apply = \"env\", var = \"MODE\", values = [\"a\", \"b\"] }\n[[bench]]\nname = \"run\"\nshell = \"true\"\n",
        )
        .unwrap();
        let c = Spec::parse("p.toml:mode=b")
            .unwrap()
            .cell(dir.path(), "01-x", "x")
            .unwrap();
        assert_eq!(c.factors["mode"], "b");
        assert_eq!(c.factors["commit"], "01-x");
        assert!(c.key.ends_with("|@commit=01-x"), "{}", c.key);
        let e = Spec::parse("p.toml")
            .unwrap()
            .cell(dir.path(), "01-x", "x")
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 cells match"), "{e}");
    }
}
