//! What each word after `kbench run` stands for, and the ad-hoc plan those
//! words make.
//!
//! A word is, in this order:
//! 1. `cmd:COMMAND`: a command, spelt out;
//! 2. a built-in benchmark `NAME[:k=v,...]` (`kbench list`), or a
//!    will-it-scale testcase `FILE.c[:k=v,...]`;
//! 3. a plan file `PLAN.toml` (then the only word);
//! 4. a command: a word holding whitespace or a `/`, or whose first word
//!    is an executable on PATH (`'sleep 0.01'`, `./prog`, `true`);
//! 5. anything else is an error naming the nearest benchmarks; a `k=v`
//!    word after a benchmark is answered with `NAME:k=v`.
//!
//! A benchmark's name wins over a program of the same name (`stat` is the
//! benchmark, `cmd:stat` the program).
//!
//! A command is measured as a plan's command benchmark is
//! (`bench/command.rs`: wall, user and sys time, max RSS and context
//! switches of each run, interleaved with the other cells). It runs
//! directly (fork/exec, no shell in the timing) when it is plain words,
//! quotes allowed, naming a program; through `sh -c` when it uses shell
//! syntax (pipes, redirections, `$`, globs, `;`, builtins). `--shell
//! SHELL` runs every command through `SHELL -c`, `--shell none` (`-N`)
//! never uses a shell. `--setup` runs once before a command's samples,
//! `--prepare` before each of them (both untimed, through the shell), as
//! hyperfine's options of those names do. The command is taken literally:
//! braces are not plan placeholders here.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::bench::command::{Argv, BUILTINS, CommandBench, CommandSpec, OnFailure, Per};
use crate::bench::{self, BenchRef};
use crate::error::bad_input;
use crate::plan::{BenchSpec, Plan};
use clap::Args;

/// What a run measures and how: the settings `kbench run` and `kbench
/// check` (its candidate) share.
#[derive(Clone, Debug, Args)]
pub struct MeasureArgs {
    /// A plan file (PLAN.toml), benchmarks as NAME[:k=v,...], or commands:
    /// a word with a space or `/`, a program on PATH, or `cmd:COMMAND`.
    pub specs: Vec<String>,
    /// Measured samples per cell (warm-ups not included) [default: 10,
    /// or the plan's `samples`]. hyperfine's `-r/--runs` too.
    #[arg(long, short = 'r', visible_alias = "runs", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: Option<u32>,
    /// Target duration of one sample in seconds; the iteration count is
    /// calibrated to it [default: 0.2, or the plan's `sample_time`].
    #[arg(long, value_name = "S")]
    pub sample_time: Option<f64>,
    /// Warm-up rounds whose samples are discarded [default: 2]
    /// (hyperfine's `-w` too).
    #[arg(long, short = 'w', value_name = "N")]
    pub warmup: Option<u32>,
    /// Measure each micro-benchmark cell in N fresh processes (its samples
    /// shared out between them), varying the environment size and stack
    /// alignment, so reports can show the variance between processes and
    /// compare with the right error term [default: 1, or the plan's
    /// `processes`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub processes: Option<u32>,
    /// Event counters read around the timed part of each sample of a
    /// micro-benchmark or scale cell, stored per operation as metrics
    /// (`context-switches/op`): a comma list of perf's names and aliases
    /// (`kbench list counters`: task-clock, context-switches or cs,
    /// cpu-migrations or migrations, page-faults or faults, minor-faults,
    /// cycles, ...); `default` (the same as `software`), `all` (the
    /// hardware ones too where the CPU's PMU is there), `none` [default:
    /// default].
    #[arg(long, value_name = "LIST")]
    pub counters: Option<String>,
    /// Record a sampled call-stack profile (`perf record -g`, kernel
    /// stacks where perf_event_paranoid allows) of each cell's timed
    /// intervals, stored per round with the run: `kbench explain` and
    /// `report --format html` read it.
    #[arg(long)]
    pub profile: bool,
    /// Make N whole runs, one after another, each in a fresh kbench
    /// process and each holding every cell (interleaved in rounds), so
    /// run-to-run variation is measured and comparisons can use the run
    /// as their unit; the runs join one campaign [default: 1, or the
    /// plan's `repeat.runs`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Seed of the shuffled sample order; the run records the seed it used,
    /// so any order can be replayed.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Adaptive stopping: sample each cell until the 95% confidence
    /// interval of its mean is within +/-PCT of the mean (e.g. `1%`), or a
    /// limit is reached.
    #[arg(long, value_name = "PCT")]
    pub precision: Option<String>,
    /// With adaptive stopping: at most N samples per cell [default: 100].
    #[arg(long, value_name = "N")]
    pub max_samples: Option<u32>,
    /// With adaptive stopping: at most S seconds for the whole run.
    #[arg(long, value_name = "S")]
    pub max_time: Option<f64>,
    /// A quick look: at most 5 samples of 0.05 s and 1 warm-up round,
    /// also for a plan that asks for more; explicit flags still win.
    #[arg(long)]
    pub quick: bool,
    /// Commands: run CMD once before a command's samples (untimed), e.g.
    /// to build what it runs (hyperfine's `-s` too).
    #[arg(long, short = 's', value_name = "CMD")]
    pub setup: Option<String>,
    /// Commands: run CMD before every sample (untimed), e.g. to drop
    /// caches (hyperfine's `-p` too).
    #[arg(long, short = 'p', value_name = "CMD")]
    pub prepare: Option<String>,
    /// Commands: run each through SHELL -c (`bash`, `bash --norc`), or
    /// `none` for never [default: directly when a command is plain words,
    /// through `sh -c` when it uses shell syntax].
    #[arg(long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// Commands: never through a shell (`--shell none`).
    #[arg(short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// Commands: the metrics measured, comma-separated, the first primary:
    /// real, user, sys, maxrss, vcsw, ivcsw [default: all].
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub metric: Vec<String>,
    /// Labels stored with the run, `k=v,...` (repeatable), to choose
    /// baselines by (`kbench check --baseline branch=main`) and group
    /// reports by. `branch` and `commit` are recorded from the git work
    /// tree kbench runs in, unless given here.
    #[arg(long, value_name = "K=V,...", value_parser = crate::record::parse_labels)]
    pub label: Vec<crate::record::Labels>,
}

/// What one word names.
impl MeasureArgs {
    /// What these flags say of a run's settings (`RunConfig::resolve`).
    pub fn overrides(&self) -> crate::plan::settings::Overrides {
        crate::plan::settings::Overrides {
            samples: self.samples,
            sample_time: self.sample_time,
            warmup: self.warmup,
            seed: self.seed,
            precision: self.precision.clone(),
            max_samples: self.max_samples,
            max_time: self.max_time,
            processes: self.processes,
            counters: self.counters.clone(),
            profile: self.profile,
            quick: self.quick,
            ..Default::default()
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Spec {
    /// `NAME[:k=v,...]` or `FILE.c[:k=v,...]`.
    Bench(String),
    /// A plan file.
    Plan(PathBuf),
    /// A command line (without `cmd:`).
    Command(String),
}

/// How commands given on the command line run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Shell {
    /// Directly when plain words, else through `sh -c`.
    Auto,
    /// Always directly, split into words as a shell would (no expansion).
    None,
    /// Always through this shell (program and arguments) with `-c`.
    Program(Vec<String>),
}

/// The options that shape commands given on the command line (sent to
/// the processes of a repeat, which build the plan again).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CommandOptions {
    pub setup: Option<String>,
    pub prepare: Option<String>,
    pub shell: Shell,
    /// Indices into [`BUILTINS`], the first the primary metric; empty
    /// means all of them.
    pub measure: Vec<usize>,
}

impl CommandOptions {
    pub fn of(a: &MeasureArgs) -> anyhow::Result<CommandOptions> {
        let shell = match (a.no_shell, a.shell.as_deref()) {
            (true, _) | (false, Some("none")) => Shell::None,
            (false, None) => Shell::Auto,
            (false, Some("default")) => Shell::Program(vec!["sh".into()]),
            (false, Some(s)) => match shlex::split(s) {
                Some(w) if !w.is_empty() => Shell::Program(w),
                _ => return Err(bad_input!("--shell `{s}`: not a shell command line")),
            },
        };
        let names: Vec<&str> = BUILTINS.iter().map(|(b, _)| *b).collect();
        let mut measure = Vec::new();
        for m in a.metric.iter().map(|m| m.trim()) {
            let i = names.iter().position(|n| *n == m).ok_or_else(|| {
                bad_input!(
                    "--metric: unknown metric `{m}`{}",
                    crate::suggest::hint(m, &names, "")
                )
            })?;
            if measure.contains(&i) {
                return Err(bad_input!("--metric: `{m}` is named twice"));
            }
            measure.push(i);
        }
        for (flag, v) in [("--setup", &a.setup), ("--prepare", &a.prepare)] {
            if v.as_ref().is_some_and(|v| v.trim().is_empty()) {
                return Err(bad_input!("{flag}: the command is empty"));
            }
        }
        Ok(CommandOptions {
            setup: a.setup.clone(),
            prepare: a.prepare.clone(),
            shell,
            measure,
        })
    }

    /// The first command-only option given, to refuse it without commands.
    fn given(&self) -> Option<&'static str> {
        if self.setup.is_some() {
            Some("--setup")
        } else if self.prepare.is_some() {
            Some("--prepare")
        } else if self.shell != Shell::Auto {
            Some("--shell")
        } else if !self.measure.is_empty() {
            Some("--metric")
        } else {
            None
        }
    }
}

/// What `word` names; `previous` is the word before it, for the `k=v`
/// hint.
pub fn classify(word: &str, previous: Option<&Spec>) -> anyhow::Result<Spec> {
    if let Some(cmd) = word.strip_prefix("cmd:") {
        if cmd.trim().is_empty() {
            return Err(bad_input!("`{word}`: `cmd:` needs a command"));
        }
        return Ok(Spec::Command(cmd.to_string()));
    }
    let head = word.split_once(':').map_or(word, |(h, _)| h);
    if bench::find(head).is_some() || (head.ends_with(".c") && !has_space(head)) {
        return Ok(Spec::Bench(word.to_string()));
    }
    if word.ends_with(".toml") && !has_space(word) {
        return Ok(Spec::Plan(PathBuf::from(word)));
    }
    if has_space(word) || word.contains('/') || on_path(word) {
        return Ok(Spec::Command(word.to_string()));
    }
    if let (Some(Spec::Bench(b)), Some((k, _))) = (previous, word.split_once('='))
        && !k.is_empty()
    {
        let sep = if b.contains(':') { ',' } else { ':' };
        return Err(bad_input!(
            "`{word}`: parameters go after the benchmark's name: `{b}{sep}{word}`"
        ));
    }
    Err(bad_input!(
        "unknown benchmark `{head}`{}",
        crate::suggest::hint(
            head,
            &bench::names(),
            &format!("see `kbench list`; a command: `cmd:{word}`")
        )
    ))
}

fn has_space(s: &str) -> bool {
    s.chars().any(char::is_whitespace)
}

/// Whether `word` is a program: a path to an executable file, or the name
/// of one in a directory of `$PATH`.
fn on_path(word: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if word.is_empty() {
        return false;
    }
    if word.contains('/') {
        return exec(Path::new(word));
    }
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| !d.as_os_str().is_empty() && exec(&d.join(word)))
    })
}

/// The plan `kbench run WORD...` runs: a plan file alone, or an ad-hoc
/// plan of benchmarks and commands (in the order given).
pub fn plan(words: &[String], o: &CommandOptions) -> anyhow::Result<Plan> {
    let mut specs: Vec<Spec> = Vec::new();
    for w in words {
        let s = classify(w, specs.last())?;
        specs.push(s);
    }
    if let Some(p) = specs.iter().find_map(|s| match s {
        Spec::Plan(p) => Some(p),
        _ => None,
    }) {
        if specs.len() > 1 {
            return Err(bad_input!(
                "`{}`: a plan file must be the only argument of `kbench run`",
                p.display()
            ));
        }
        if let Some(flag) = o.given() {
            return Err(bad_input!(
                "{flag} goes with commands on the command line; a plan sets `prepare` and `measure` per [[bench]]"
            ));
        }
        return crate::plan::load(p);
    }
    if !specs.iter().any(|s| matches!(s, Spec::Command(_)))
        && let Some(flag) = o.given()
    {
        return Err(bad_input!(
            "{flag} goes with commands (e.g. `kbench run 'sleep 0.1' {flag} ...`); no argument is a command"
        ));
    }
    let mut benches = Vec::new();
    for (w, s) in words.iter().zip(&specs) {
        let b = match s {
            Spec::Bench(b) => crate::plan::adhoc_spec(b)?,
            Spec::Command(c) => command(c, o)?,
            Spec::Plan(_) => unreachable!("handled above"),
        };
        benches.push((w.clone(), b));
    }
    crate::plan::adhoc_plan(benches)
}

/// Characters that give a command line a meaning only a shell provides.
const SHELL_SYNTAX: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '*', '?', '[', '#', '~', '!', '{', '}', '\n',
];

/// Words that are the shell's own (no program to exec).
const SH_BUILTINS: &[&str] = &[
    ".", ":", "alias", "bg", "break", "case", "cd", "command", "continue", "eval", "exec", "exit",
    "export", "fg", "for", "getopts", "hash", "if", "jobs", "read", "readonly", "return", "set",
    "shift", "source", "times", "trap", "type", "ulimit", "umask", "unalias", "unset", "until",
    "wait", "while",
];

/// The words of a command line that needs no shell, or `None`.
fn plain(cmd: &str) -> Option<Vec<String>> {
    if cmd.contains(SHELL_SYNTAX) {
        return None;
    }
    let words = shlex::split(cmd)?;
    let first = words.first()?;
    (!first.contains('=') && !SH_BUILTINS.contains(&first.as_str())).then_some(words)
}

/// Literal text in a command template (no `{placeholder}` is meant).
fn literal(s: &str) -> String {
    s.replace('{', "{{")
}

/// How a hook (`--setup`, `--prepare`) runs: through the chosen shell,
/// `sh` unless `--shell` names one.
fn hook(cmd: &str, shell: &Shell) -> Argv {
    match shell {
        Shell::Program(p) => {
            let mut v: Vec<String> = p.iter().map(|w| literal(w)).collect();
            v.extend(["-c".into(), literal(cmd)]);
            Argv::Exec(v)
        }
        Shell::Auto | Shell::None => Argv::Shell(literal(cmd)),
    }
}

/// Why a path that is not a program cannot run, with the remedy.
fn not_a_program(path: &Path) -> String {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    match std::fs::metadata(path) {
        Err(e) => format!("no such file ({e})"),
        Ok(m) if m.is_dir() => "a directory, not a program".into(),
        Ok(m) if m.file_type().is_char_device() || m.file_type().is_block_device() => {
            "a device, not a program".into()
        }
        Ok(m) if m.file_type().is_fifo() || m.file_type().is_socket() => {
            "a FIFO or socket, not a program".into()
        }
        Ok(m) if m.permissions().mode() & 0o111 == 0 => {
            "not executable (`chmod +x` it, or run it through a shell: `sh FILE`)".into()
        }
        Ok(_) => "not a program".into(),
    }
}

/// A command given on the command line as a bench of the ad-hoc plan; its
/// name (row label, cell key) is the command as typed, its secrets hidden
/// (`crate::redact`: the command itself runs as typed).
fn command(cmd: &str, o: &CommandOptions) -> anyhow::Result<BenchSpec> {
    let shown = crate::redact::text(cmd).into_owned();
    let direct = |words: Vec<String>| -> anyhow::Result<Argv> {
        let first = &words[0];
        if first.contains('/') && !on_path(first) {
            return Err(bad_input!(
                "`{shown}`: `{first}` is {}",
                not_a_program(Path::new(first))
            ));
        }
        if !on_path(first) {
            let near = crate::suggest::nearest(first, bench::names());
            let near = crate::suggest::did_you_mean(&near);
            return Err(bad_input!(
                "`{shown}`: no program `{first}` on PATH{}",
                if near.is_empty() || words.len() > 1 {
                    String::new()
                } else {
                    format!(" (a benchmark? {near})")
                }
            ));
        }
        Ok(Argv::Exec(words.iter().map(|w| literal(w)).collect()))
    };
    let run = match &o.shell {
        Shell::Auto => match plain(cmd) {
            Some(words) => direct(words)?,
            None => Argv::Shell(literal(cmd)),
        },
        Shell::None => match shlex::split(cmd) {
            Some(words) if !words.is_empty() => direct(words)?,
            _ => {
                return Err(bad_input!(
                    "`{cmd}`: cannot split it into words (an unbalanced quote?) for --shell none"
                ));
            }
        },
        Shell::Program(_) => hook(cmd, &o.shell),
    };
    let spec = CommandSpec {
        name: shown.clone(),
        run,
        cwd: None,
        env: Vec::new(),
        timeout: None,
        setup: o.setup.as_deref().map(|s| hook(s, &o.shell)),
        prepare: o.prepare.as_deref().map(|s| hook(s, &o.shell)),
        cleanup: None,
        per: if o.prepare.is_some() {
            Per::Sample
        } else {
            Per::Cell
        },
        on_failure: OnFailure::Stop,
        measure: if o.measure.is_empty() {
            (0..BUILTINS.len()).collect()
        } else {
            o.measure.clone()
        },
        custom: Vec::new(),
        base_dir: std::env::current_dir()
            .map_err(|e| bad_input!("the current directory is unusable: {e}"))?,
        params: Vec::new(),
        env_vars: Vec::new(),
    };
    spec.check_placeholders()
        .map_err(|e| bad_input!("`{cmd}`: {e}"))?;
    Ok(BenchSpec {
        display: shown,
        bench: BenchRef::Owned(Arc::new(CommandBench::new(spec))),
        fixed: Vec::new(),
        sweep: Vec::new(),
        label_params: Vec::new(),
        samples: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(word: &str, prev: Option<&Spec>) -> String {
        format!("{:#}", classify(word, prev).unwrap_err())
    }

    #[test]
    fn words_are_benchmarks_plans_or_commands_in_that_order() {
        let c = |w: &str| classify(w, None).unwrap();
        assert_eq!(c("getppid"), Spec::Bench("getppid".into()));
        assert_eq!(c("spin:work=10"), Spec::Bench("spin:work=10".into()));
        // A benchmark wins over the program of the same name.
        assert_eq!(c("stat"), Spec::Bench("stat".into()));
        assert_eq!(c("cmd:stat /"), Spec::Command("stat /".into()));
        assert_eq!(c("x/t.c:tasks=2"), Spec::Bench("x/t.c:tasks=2".into()));
        assert_eq!(c("examples/a.toml"), Spec::Plan("examples/a.toml".into()));
        assert_eq!(c("sleep 0.01"), Spec::Command("sleep 0.01".into()));
        assert_eq!(c("./prog"), Spec::Command("./prog".into()));
        // `true` is on every PATH.
        assert_eq!(c("true"), Spec::Command("true".into()));
    }

    #[test]
    fn unknown_words_name_the_nearest_benchmark_in_one_short_line() {
        let e = err("getppd", None);
        assert!(
            e.starts_with("unknown benchmark `getppd`; did you mean `getppid`"),
            "{e}"
        );
        assert!(e.contains("`cmd:getppd`"), "{e}");
        assert!(e.len() < 200 && !e.contains('\n'), "{e}");
        assert!(err("cmd: ", None).contains("`cmd:` needs a command"));
    }

    #[test]
    fn a_parameter_word_after_a_benchmark_hints_the_colon() {
        let prev = Spec::Bench("getppid".into());
        let e = err("cpu=1", Some(&prev));
        assert!(e.contains("`getppid:cpu=1`"), "{e}");
        let prev = Spec::Bench("spin:work=5".into());
        assert!(err("cpu=1", Some(&prev)).contains("`spin:work=5,cpu=1`"));
    }

    #[test]
    fn plain_commands_run_directly_and_the_rest_through_sh() {
        assert_eq!(
            plain("sleep 0.01").unwrap(),
            vec!["sleep".to_string(), "0.01".into()]
        );
        assert_eq!(plain("grep -c 'a b' f").unwrap()[2], "a b");
        for shell in ["a | b", "x > f", "echo $HOME", "ls *.c", "A=1 env", "cd /"] {
            assert!(plain(shell).is_none(), "{shell}");
        }
    }

    #[test]
    fn commands_become_command_benches_named_as_typed() {
        let o = CommandOptions {
            setup: Some("echo {x}".into()),
            prepare: None,
            shell: Shell::Auto,
            measure: vec![0],
        };
        let b = command("sleep 0.01", &o).unwrap();
        assert_eq!(b.display, "sleep 0.01");
        assert_eq!(b.bench.kind(), crate::bench::Kind::Command);
        let m: Vec<&str> = b.bench.metrics().iter().map(|m| m.name.as_str()).collect();
        assert_eq!(m, ["real"]);
        // Braces are literal: no placeholder error.
        command("awk '{print}' /dev/null", &o).unwrap();
        let e = format!("{:#}", command("no-such-prog-kbench 1", &o).unwrap_err());
        assert!(
            e.contains("no program `no-such-prog-kbench` on PATH"),
            "{e}"
        );
    }
}
