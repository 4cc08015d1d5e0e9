//! Plan files: the TOML schema, loading with positions, and the validated
//! model the runner expands into cells.
//!
//! Parsing is strict (`deny_unknown_fields`) and keeps the source span of
//! every key and value, so every error can name `file:line:column` and the
//! offending key. Semantic checks (unknown benchmark, parameter, factor,
//! probe or placeholder, wrong type, empty list, duplicates) run after
//! parsing, in `validate.rs`; each kind of factor is read by its file in
//! `factor/`, and a command `[[bench]]` by `bench::command::spec`.
//!
//! # Schema reference
//!
//! ```toml
//! name = "mitigation-cost"      # campaign name
//! samples = 10                  # per cell (CLI --samples wins)
//! max_cells = 200000            # refuse more cells (default 100000)
//!
//! [factors]
//! # param: passed to benchmarks having that parameter (`param`, default
//! # the factor's name). `values` is a list (+ optional `labels`) or a
//! # table label -> value, for every kind.
//! opt  = { apply = "param", param = "flags", values = { O0 = "-O0", O2 = "-O2" } }
//! # env: environment variable `var` of command benchmarks (and their
//! # prepare/cleanup); the cell's parameter `env.VAR`.
//! sw   = { apply = "env", var = "CFLAGS", values = ["", "-Wa,-mbranches-within-32B-boundaries"] }
//! # cpus: CPU affinity of the cell (inherited by commands).
//! cpus = { apply = "cpus", values = ["0", "0-1"], labels = ["UP", "2way"] }
//! # shell: `setup` before a value's cells, `teardown` after them; cells
//! # sharing shell values run as one block; `{value}` is the value. A
//! # failing setup fails the block's cells with the command's stderr.
//! thp  = { apply = "shell", values = ["never", "always"],
//!          setup = "echo {value} > /sys/kernel/mm/transparent_hugepage/enabled" }
//! # system: kbench cannot apply it; a probe reads the running system and a
//! # cell runs only when every reading matches. A value is the expected
//! # reading of `probe`, or a table probe -> expected reading.
//! pti  = { apply = "system", values = { on = { "vuln.meltdown" = "Mitigation: PTI" },
//!                                       off = { "cmdline.nopti" = "present" } },
//!          hint = { off = "boot with `nopti`" } }
//! mode = { apply = "system", probe = ["cat", "/etc/mode"], values = ["a", "b"] }
//!
//! [reboot]                      # printed by `kbench status`, never run
//! command = "grub-reboot nopti && reboot"
//!
//! [[bench]]
//! use = "getppid"               # a built-in benchmark (`kbench list`)
//!
//! [[bench]]                     # a command benchmark
//! name = "build"                # required
//! command = ["make", "-j{jobs}", "CFLAGS={flags}"]   # or shell = "..."
//! params = { flags = "-O2" }    # declares {flags} with its default
//! sweep = { jobs = [1, 2] }     # declares {jobs}, one cell per value
//! cwd = "src"                   # relative to the plan's directory
//! env = { LC_ALL = "C" }
//! timeout = 60                  # s; kills the whole process group
//! prepare = "make clean"        # string: sh -c; list: argv
//! cleanup = ["rm", "-rf", "{tmp}/out"]
//! per = "sample"                # prepare/cleanup per "cell" (default) or "sample"
//! on_failure = "continue"       # or "stop" (default)
//! measure = ["real", "user", "sys"]   # default all: + maxrss vcsw ivcsw
//! metrics = [
//!   { name = "matches", regex = "(\\d+) matches", from = "stdout", unit = "lines", direction = "higher" },  # lower (default), higher or info
//!   { name = "mean", json = "/results/0/mean", unit = "s" },
//!   { name = "bin_size", file = "{tmp}/a.out" },           # bytes
//!   { name = "code_size", elf = "{tmp}/a.out" },           # size(1) text
//!   { name = "text", elf = "{tmp}/a.out", section = ".text" },
//!   { name = "compile_time", timer = "real" },             # a rusage metric renamed
//! ]
//! ```
//!
//! Placeholders: `{param}`, `{env.VAR}`, `{plan_dir}`, `{tmp}` (a scratch
//! directory per cell); `{{` is a literal `{`; an argument that is exactly
//! a placeholder with an empty value is dropped. Unknown names are errors.
//!
//! Probe names and matching rules (`absent`, `present`, `re:`, `not:`,
//! exact) are documented in `system/probe.rs`; campaign rules (resume,
//! `--force`, states) in `campaign.rs`.

mod factor;
pub mod gate;
pub mod report;
pub mod settings;
mod validate;

use indexmap::IndexMap;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

use crate::bench::command::spec::BenchFile;
use crate::bench::{BenchRef, Params};
use crate::error::{SourceText, bad_input};
use crate::system::probe::Probe;
use crate::units::CpuSet;

pub use validate::{adhoc, adhoc_plan, adhoc_spec, expand};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    name: Spanned<String>,
    samples: Option<Spanned<i64>>,
    sample_time: Option<Spanned<f64>>,
    warmup: Option<Spanned<i64>>,
    /// Fresh processes per micro-benchmark cell (`--processes`).
    processes: Option<Spanned<i64>>,
    /// Most cells the plan may expand to (default `validate::MAX_CELLS`).
    max_cells: Option<Spanned<i64>>,
    /// Whole runs and boots each cell is measured in.
    repeat: Option<Spanned<RepeatFile>>,
    seed: Option<u64>,
    precision: Option<Spanned<String>>,
    #[serde(default)]
    factors: IndexMap<Spanned<String>, Spanned<factor::FactorFile>>,
    #[serde(default)]
    bench: Vec<Spanned<BenchFile>>,
    /// Report layout (`report.rs`).
    report: Option<report::ReportFile>,
    /// `kbench check`'s policy (`gate.rs`).
    gate: Option<gate::GateFile>,
    /// How to arm the next boot for a pending system state (printed by
    /// `kbench status`).
    reboot: Option<Spanned<RebootFile>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepeatFile {
    runs: Option<Spanned<i64>>,
    boots: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RebootFile {
    command: Spanned<String>,
}

/// How a factor's value is applied.
#[derive(Clone, Debug, PartialEq)]
pub enum Apply {
    /// Passed to the benchmark as parameter `param`.
    Param { param: String },
    /// The CPU affinity of the benchmark (inherited by its children).
    Cpus,
    /// The environment variable `var` of command benchmarks (the cell's
    /// parameter `env.VAR`).
    Env { var: String },
    /// Commands run before (`setup`) and after (`teardown`) the cells of a
    /// value; `{value}` in them is the value.
    Shell {
        setup: Option<String>,
        teardown: Option<String>,
    },
    /// Not applied by kbench: probes read the running system and the cell
    /// runs only when every reading matches its expected value.
    System,
}

/// One value of a factor.
#[derive(Clone, Debug)]
pub struct Level {
    pub label: String,
    pub raw: toml::Value,
    /// For `cpus` factors: the parsed set.
    pub cpus: Option<CpuSet>,
    /// For `system` factors: probe -> expected reading.
    pub expect: Vec<(Probe, String)>,
    /// For `system` factors: how to get there ("boot with `nopti`").
    pub hint: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Factor {
    pub name: String,
    pub apply: Apply,
    pub levels: Vec<Level>,
}

/// A `shell` factor's commands for one cell, already filled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ShellStep {
    pub factor: String,
    pub label: String,
    pub setup: Option<String>,
    pub teardown: Option<String>,
}

/// One `[[bench]]` (or one ad-hoc `BENCH:k=v` argument).
#[derive(Clone, Debug)]
pub struct BenchSpec {
    pub display: String,
    pub bench: BenchRef,
    pub fixed: Vec<(String, toml::Value)>,
    pub sweep: Vec<(String, Vec<toml::Value>)>,
    /// Parameters shown in row labels (sweeps, ad-hoc settings).
    pub label_params: Vec<String>,
    pub samples: Option<u32>,
}

/// A validated plan.
#[derive(Clone, Debug)]
pub struct Plan {
    pub name: String,
    pub path: Option<PathBuf>,
    /// The file's text (hashed into the campaign identity).
    pub text: String,
    pub samples: Option<u32>,
    pub sample_time: Option<f64>,
    pub warmup: Option<u32>,
    /// `processes`: each micro-benchmark cell measured in N fresh
    /// processes.
    pub processes: Option<u32>,
    /// `repeat = { runs = N, boots = M }` (or `kbench run --repeat N`).
    pub repeat: Repeat,
    pub seed: Option<u64>,
    pub precision: Option<f64>,
    pub factors: Vec<Factor>,
    pub benches: Vec<BenchSpec>,
    /// `[reboot] command`: arms the next boot for a pending state.
    pub reboot: Option<String>,
    /// `[report]`: the layout of the campaign's report.
    pub layout: Option<report::Layout>,
    /// `[gate]`: what `kbench check` gates, and by how much.
    pub gate: Option<gate::Gate>,
}

/// The levels above the round a campaign replicates: each cell takes its
/// `samples` in each of `runs` whole runs (each a fresh kbench process),
/// on each of `boots` boots of its system state, the boots of different
/// states alternating. A level measured once is a level whose variation
/// no comparison can see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Repeat {
    pub runs: u32,
    pub boots: u32,
}

impl Default for Repeat {
    fn default() -> Repeat {
        Repeat { runs: 1, boots: 1 }
    }
}

/// What names a plan's campaign, read without validating the plan (which
/// would build its testcases): its text and, after it, the content of
/// every C testcase a `[[bench]]` names (relative to `dir`, the plan's
/// directory), so editing `t.c` is a changed plan. A plan without
/// testcases is named by its text alone, as before.
pub fn identity(text: &str, dir: &Path) -> String {
    let mut id = text.to_string();
    let Ok(t) = toml::from_str::<toml::Table>(text) else {
        return id;
    };
    let benches = t.get("bench").and_then(|v| v.as_array());
    for tc in benches
        .into_iter()
        .flatten()
        .filter_map(|b| b.get("testcase")?.as_str())
    {
        let content =
            crate::input::read_bounded(&dir.join(tc), crate::input::TEXT).unwrap_or_default();
        id += &format!(
            "\n\0testcase {tc} {}",
            crate::ids::plan_hash(&String::from_utf8_lossy(&content))
        );
    }
    id
}

impl Plan {
    /// The content hash naming the plan's campaign ([`identity`]).
    pub fn hash(&self) -> String {
        let dir = self
            .path
            .as_deref()
            .and_then(Path::parent)
            .unwrap_or(Path::new(""));
        crate::ids::plan_hash(&identity(&self.text, dir))
    }

    /// Read every probe the plan's `system` factors use: probe key ->
    /// reading.
    pub fn read_probes(&self) -> IndexMap<String, String> {
        self.probes().iter().map(|p| (p.key(), p.read())).collect()
    }

    /// Every probe the plan's `system` factors read, once each.
    pub fn probes(&self) -> Vec<Probe> {
        let mut out: Vec<Probe> = Vec::new();
        for f in &self.factors {
            for lv in &f.levels {
                for (p, _) in &lv.expect {
                    if !out.contains(p) {
                        out.push(p.clone());
                    }
                }
            }
        }
        out
    }
}

/// One benchmark under one combination of factor values and sweep points.
#[derive(Clone, Debug)]
pub struct Cell {
    pub display: String,
    pub bench: BenchRef,
    pub params: Params,
    /// Factor name -> value label, in plan order.
    pub factors: IndexMap<String, String>,
    pub cpus: Option<CpuSet>,
    pub label_params: Vec<String>,
    /// Samples wanted for this cell (bench override or plan/CLI default).
    pub samples: Option<u32>,
    /// Stable identity: bench, parameters and factor labels.
    pub key: String,
    /// What the running system must read for this cell to run (its
    /// `system` factors), with each factor's name, label and hint.
    pub expect: Vec<SystemNeed>,
    /// `shell` factor commands around this cell's samples, in plan order.
    pub shell: Vec<ShellStep>,
}

/// One `system` factor value a cell needs.
#[derive(Clone, Debug, PartialEq)]
pub struct SystemNeed {
    pub factor: String,
    pub label: String,
    pub expect: Vec<(Probe, String)>,
    pub hint: Option<String>,
}

impl Cell {
    /// Does the running system (probe readings by key) suit this cell?
    pub fn runnable(&self, readings: &IndexMap<String, String>) -> bool {
        self.expect.iter().all(|n| {
            n.expect.iter().all(|(p, want)| {
                readings
                    .get(&p.key())
                    .is_some_and(|r| crate::system::probe::matches(want, r))
            })
        })
    }
}

/// A campaign's name must be one an operand can name (`NAME`,
/// `NAME:factor=value`): no `:` or `=`, not a run id, nothing a terminal
/// would act on, at most `record::MAX_NAME` characters.
pub fn check_campaign_name(name: &str) -> Result<(), String> {
    crate::record::check_name("campaign name", name)?;
    let shown = crate::record::quoted_name(name);
    if name.contains([':', '=']) {
        Err(format!(
            "campaign name `{shown}` holds `:` or `=`, so no operand (`NAME:factor=value`) could name it"
        ))
    } else if name.chars().all(|c| c.is_ascii_digit()) {
        Err(format!(
            "campaign name `{shown}` is a number, which operands read as a run id"
        ))
    } else {
        Ok(())
    }
}

/// A plan's text with what its checks need to know about where it runs;
/// its positions (`src.err(span, msg)`: `file:line:column: msg`) are the
/// [`SourceText`] it derefs to, which bench/ shares.
pub(crate) struct Source<'a> {
    pub file: SourceText<'a>,
    /// Directory command benchmarks run in.
    pub dir: PathBuf,
    /// Text that is not a plan the user named to `kbench run` (a stored
    /// campaign's plan, fuzzing input): nothing it names is compiled or
    /// loaded (`testcase = "x.c"` stays an unloaded placeholder).
    pub inert: bool,
    /// The plan's commands run on this machine: a `cwd` or probe command
    /// it names must exist here (not for a fleet's hosts).
    pub here: bool,
}

impl<'a> std::ops::Deref for Source<'a> {
    type Target = SourceText<'a>;

    fn deref(&self) -> &SourceText<'a> {
        &self.file
    }
}

/// Load and validate a plan file. Command benchmarks run in (and resolve
/// relative paths from) the plan's directory.
pub fn load(path: &Path) -> anyhow::Result<Plan> {
    load_with(path, true)
}

/// [`load`] for a plan whose commands run on other hosts (a fleet): the
/// directories and programs it names are not looked for here.
pub fn load_for_hosts(path: &Path) -> anyhow::Result<Plan> {
    load_with(path, false)
}

fn load_with(path: &Path, here: bool) -> anyhow::Result<Plan> {
    let text = crate::input::read_text(path, "a plan", crate::input::TEXT)?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut plan = parse_in(&text, &path.display().to_string(), &dir, false, here)?;
    plan.path = Some(abs);
    Ok(plan)
}

/// Parse and validate plan text that no user named to `kbench run` (a
/// stored campaign's plan, fuzzing input): it is only read, never acted on,
/// so no C testcase it names is compiled or loaded; `name` is used in error
/// positions.
pub fn parse(text: &str, name: &str) -> anyhow::Result<Plan> {
    parse_in(
        text,
        name,
        &std::env::current_dir().unwrap_or_default(),
        true,
        false,
    )
}

/// Parse and validate plan text whose commands run in `dir`.
fn parse_in(text: &str, name: &str, dir: &Path, inert: bool, here: bool) -> anyhow::Result<Plan> {
    let src = Source {
        file: SourceText {
            name: name.to_string(),
            text,
        },
        dir: dir.to_path_buf(),
        inert,
        here,
    };
    let file: PlanFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
        let msg = unknown_key(&msg)
            .or_else(|| huge_integer(&msg))
            .unwrap_or(msg);
        match e.span() {
            Some(span) => match key_before(text, span.start) {
                Some(key) if !msg.contains(&format!("`{key}`")) => {
                    src.err(span, format!("`{key}`: {msg}"))
                }
                _ => src.err(span, msg),
            },
            None => bad_input!("{name}: {msg}"),
        }
    })?;
    validate::validate(file, &src)
}

/// serde's "invalid type: integer `99999999999999999999` as i128,
/// expected i64" (a number past TOML's integers) as a range.
pub fn huge_integer(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("invalid type: integer `")?;
    let (n, tail) = rest.split_once('`')?;
    tail.starts_with(" as i128").then(|| {
        format!(
            "integer `{n}` is too large: TOML's integers lie within {}..={}",
            i64::MIN,
            i64::MAX
        )
    })
}

/// serde's "unknown field `sampels`, expected one of `name`, `samples`,
/// ..." as "unknown key `sampels`; did you mean `samples`? (known: ...)".
fn unknown_key(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (key, expected) = rest.split_once('`')?;
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    Some(format!(
        "unknown key `{key}`{}",
        crate::suggest::hint(key, &known, "")
    ))
}

/// The key whose value starts at `offset`: the last bare key before the
/// nearest `=` on that line (`samples = "x"`, `{ a = 1, b = "x" }`). TOML's
/// type errors point at the value only; users need the key's name.
fn key_before(text: &str, offset: usize) -> Option<String> {
    let line_start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    let before = &text[line_start..offset.min(text.len())];
    let eq = before.rfind('=')?;
    let key: String = before[..eq]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-' || *c == '.')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!key.is_empty()).then_some(key)
}
