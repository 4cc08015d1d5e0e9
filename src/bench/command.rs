//! Command benchmarks: any external command as a benchmark (a world build,
//! a compiler run, `grep` over a big file).
//!
//! One sample = one run of the command, started with fork/exec in its own
//! process group and reaped with wait4(2), whose rusage covers the command
//! and every descendant it waited for: `real` (wall time from just before
//! the spawn to the exit, so the fork/exec cost is included, as in
//! hyperfine), `user`, `sys` (s), `maxrss` (KiB), `vcsw`, `ivcsw`. When the
//! command exits (or times out), whatever is left of it is killed and
//! reaped, its CPU time added: its process group, and what left the group
//! (`setsid`), found again through kbench's child subreaper and commands'
//! cgroup (`system::contain_descendants`). No benchmark leaves a process
//! behind, even when kbench is killed with SIGKILL: a watchdog process then
//! kills the group and the cgroup (`system::watchdog`).
//!
//! Custom metrics are read after each successful sample: a regular
//! expression on stdout/stderr, a JSON pointer into stdout, the size of a
//! file, or the size of an ELF file's sections (like size(1)). A failing
//! sample (non-zero exit, signal, timeout, a metric that cannot be read)
//! is a [`SampleFailure`] carrying the tail of stderr; the runner records
//! it and stops the cell or goes on, per `on_failure`.
//!
//! `{name}` in the command, `cwd`, `env` values, `prepare`, `cleanup` and
//! metric paths is replaced by the cell's parameter `name` (declared in the
//! plan's `params`/`sweep`, set by factors), `{plan_dir}` (the plan's
//! directory) or `{tmp}` (a scratch directory per cell, removed after).
//! `{{` is a literal `{` (`${{HOME}`); other braces are kept as written,
//! so JSON and awk programs need no escaping. An argument that is exactly `{name}`
//! and whose value is empty is dropped, so `flags = ""` means no flag.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::{Bench, Direction, Instance, Kind, Measure, Metric, ParamDef, ParamType, Params};

mod capture;
mod elf;
pub mod spec;
use capture::{Found, LineRegex};

/// The rusage metrics every command sample yields, with their units.
pub const BUILTINS: [(&str, &str); 6] = [
    ("real", "s"),
    ("user", "s"),
    ("sys", "s"),
    ("maxrss", "KiB"),
    ("vcsw", "count"),
    ("ivcsw", "count"),
];

/// What to run: an argument vector, or a string for `sh -c`.
#[derive(Clone, Debug)]
pub enum Argv {
    Exec(Vec<String>),
    Shell(String),
}

impl Argv {
    fn templates(&self) -> Vec<&str> {
        match self {
            Argv::Exec(v) => v.iter().map(String::as_str).collect(),
            Argv::Shell(s) => vec![s.as_str()],
        }
    }

    fn fill(&self, vars: &dyn Fn(&str) -> Option<String>) -> Result<Vec<String>, String> {
        match self {
            Argv::Exec(v) => {
                let mut out = Vec::new();
                for a in v {
                    let filled = fill(a, vars)?;
                    // A lone placeholder whose value is empty disappears.
                    if filled.is_empty() && is_lone_placeholder(a) {
                        continue;
                    }
                    out.push(filled);
                }
                Ok(out)
            }
            Argv::Shell(s) => Ok(vec!["sh".into(), "-c".into(), fill(s, vars)?]),
        }
    }
}

/// When `prepare`/`cleanup` run: once around the cell's samples, or around
/// every sample (untimed either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Per {
    Cell,
    Sample,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    Stop,
    Continue,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Where a custom metric's value comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// First match; the group named `value`, else group 1, else the match.
    Regex { re: regex::Regex, stream: Stream },
    /// RFC 6901 pointer into stdout parsed as JSON.
    Json(String),
    /// Size in bytes of a file (path template).
    File(String),
    /// Size of an ELF file's sections: `text`/`data`/`bss` as size(1)
    /// counts them, or one section by name (`.text`).
    Elf { path: String, section: String },
    /// One of the [`BUILTINS`] under another name (`compile_time` = real).
    Timer(usize),
}

#[derive(Clone, Debug)]
pub struct CustomMetric {
    pub name: String,
    pub unit: String,
    pub direction: Direction,
    pub source: Source,
}

/// A command benchmark as the plan defines it.
#[derive(Clone, Debug)]
pub struct CommandSpec {
    pub name: String,
    pub run: Argv,
    pub cwd: Option<String>,
    pub env: Vec<(String, String)>,
    pub timeout: Option<Duration>,
    /// Run once when the cell is prepared, before a cell's `prepare`
    /// (`kbench run --setup`, hyperfine's option of that name).
    pub setup: Option<Argv>,
    pub prepare: Option<Argv>,
    pub cleanup: Option<Argv>,
    pub per: Per,
    pub on_failure: OnFailure,
    /// Indices into [`BUILTINS`] that are reported.
    pub measure: Vec<usize>,
    pub custom: Vec<CustomMetric>,
    /// The plan's directory: relative `cwd` and paths start there.
    pub base_dir: PathBuf,
    /// Declared parameters and their defaults (`None`: set by a sweep or
    /// factor only).
    pub params: Vec<(String, Option<String>)>,
    /// Environment variables set by `env` factors; each is the parameter
    /// `env.VAR` of the cell.
    pub env_vars: Vec<String>,
}

/// Placeholders every command may use besides its parameters.
pub const BUILTIN_VARS: &[&str] = &["plan_dir", "tmp"];

impl CommandSpec {
    /// Every template with the plan key it came from, for validation.
    pub fn templates(&self) -> Vec<(&'static str, &str)> {
        let mut t: Vec<(&'static str, &str)> = Vec::new();
        let key = match self.run {
            Argv::Exec(_) => "command",
            Argv::Shell(_) => "shell",
        };
        t.extend(self.run.templates().into_iter().map(|s| (key, s)));
        if let Some(c) = &self.cwd {
            t.push(("cwd", c));
        }
        t.extend(self.env.iter().map(|(_, v)| ("env", v.as_str())));
        if let Some(p) = &self.setup {
            t.extend(p.templates().into_iter().map(|s| ("setup", s)));
        }
        if let Some(p) = &self.prepare {
            t.extend(p.templates().into_iter().map(|s| ("prepare", s)));
        }
        if let Some(c) = &self.cleanup {
            t.extend(c.templates().into_iter().map(|s| ("cleanup", s)));
        }
        for m in &self.custom {
            match &m.source {
                Source::File(p) | Source::Elf { path: p, .. } => t.push(("metrics", p)),
                _ => {}
            }
        }
        t
    }

    /// Check every placeholder names a parameter or built-in variable.
    pub fn check_placeholders(&self) -> Result<(), String> {
        for (key, t) in self.templates() {
            for name in placeholders(t)? {
                let known = BUILTIN_VARS.contains(&name.as_str())
                    || self.params.iter().any(|(p, _)| *p == name)
                    || self.env_vars.iter().any(|v| format!("env.{v}") == name);
                if !known {
                    let mut names: Vec<String> =
                        self.params.iter().map(|(p, _)| p.clone()).collect();
                    names.extend(BUILTIN_VARS.iter().map(|s| s.to_string()));
                    return Err(format!(
                        "`{key}`: unknown placeholder `{{{name}}}` (declare it in `params` or `sweep`; known: {}; write `{{{{` for a literal `{{`)",
                        names.join(", ")
                    ));
                }
            }
        }
        Ok(())
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn is_lone_placeholder(s: &str) -> bool {
    s.len() > 2 && s.starts_with('{') && s.ends_with('}') && is_ident(&s[1..s.len() - 1])
}

/// Walk a template: `{{` is a literal `{`; `{ident}` is a placeholder; any
/// other brace is kept as written (`awk '{print $1}'`, JSON text).
fn walk(
    t: &str,
    mut on: impl FnMut(Result<&str, &str>) -> Result<(), String>,
) -> Result<(), String> {
    let mut rest = t;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("{{") {
            on(Err("{"))?;
            rest = r;
        } else if rest.starts_with('{')
            && let Some(end) = rest.find('}')
            && is_ident(&rest[1..end])
        {
            on(Ok(&rest[1..end]))?;
            rest = &rest[end + 1..];
        } else {
            let c = rest.chars().next().expect("not empty");
            on(Err(&rest[..c.len_utf8()]))?;
            rest = &rest[c.len_utf8()..];
        }
    }
    Ok(())
}

/// The placeholder names used in a template.
pub fn placeholders(t: &str) -> Result<Vec<String>, String> {
    let mut names = Vec::new();
    walk(t, |p| {
        if let Ok(n) = p {
            names.push(n.to_string());
        }
        Ok(())
    })?;
    Ok(names)
}

/// Fill a template's placeholders.
pub fn fill(t: &str, vars: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    walk(t, |p| {
        match p {
            Ok(n) => {
                out.push_str(&vars(n).ok_or_else(|| format!("placeholder `{{{n}}}` has no value"))?)
            }
            Err(lit) => out.push_str(lit),
        }
        Ok(())
    })?;
    Ok(out)
}

/// A failed sample: the message names the command, how it ended and the
/// tail of its stderr. `keep_going` is the cell's `on_failure = "continue"`.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct SampleFailure {
    pub message: String,
    pub keep_going: bool,
}

/// A command benchmark built from a plan's `[[bench]]`.
pub struct CommandBench {
    spec: Arc<CommandSpec>,
    defs: Vec<ParamDef>,
    description: String,
    /// The rusage metrics asked for, then the custom ones.
    metrics: Vec<Metric>,
}

/// A `&'static str` for a plan's parameter name or default (ParamDef holds
/// `&'static str`). Each distinct string is kept once for the life of the
/// process, so parsing plans again and again (reports of stored campaigns,
/// a fleet coordinator) does not grow memory.
fn intern(s: &str) -> &'static str {
    static SEEN: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(&have) = seen.get(s) {
        return have;
    }
    let new: &'static str = Box::leak(s.to_string().into_boxed_str());
    seen.insert(new);
    new
}

impl CommandBench {
    pub fn new(spec: CommandSpec) -> CommandBench {
        let leak = intern;
        let mut defs: Vec<ParamDef> = spec
            .params
            .iter()
            .map(|(n, d)| ParamDef {
                name: leak(n),
                ty: ParamType::Str,
                default: d.as_deref().map(leak),
                help: "command parameter ({name} in the command)",
            })
            .collect();
        defs.extend(spec.env_vars.iter().map(|v| ParamDef {
            name: leak(&format!("env.{v}")),
            ty: ParamType::Str,
            default: None,
            help: "environment variable set by an `env` factor",
        }));
        let description = match &spec.run {
            Argv::Exec(v) => format!("command: {}", crate::term::shell_line(v)),
            Argv::Shell(s) => format!("shell: {s}"),
        };
        let metrics = {
            let mut m: Vec<Metric> = spec
                .measure
                .iter()
                .map(|&i| Metric::new(BUILTINS[i].0, BUILTINS[i].1, Direction::Lower))
                .collect();
            m.extend(
                spec.custom
                    .iter()
                    .map(|c| Metric::new(&c.name, &c.unit, c.direction)),
            );
            m
        };
        CommandBench {
            spec: Arc::new(spec),
            defs,
            description,
            metrics,
        }
    }
}

impl Bench for CommandBench {
    fn name(&self) -> &str {
        &self.spec.name
    }
    fn kind(&self) -> Kind {
        Kind::Command
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn params(&self) -> &[ParamDef] {
        &self.defs
    }
    fn metrics(&self) -> &[Metric] {
        &self.metrics
    }
    /// Only a trial run tells how long a command takes.
    fn sample_seconds(&self, _params: &Params, _settings: &super::RunSettings) -> Option<f64> {
        None
    }
    fn instantiate(
        &self,
        params: &Params,
        _settings: &super::RunSettings,
    ) -> anyhow::Result<Box<dyn Instance>> {
        Ok(Box::new(CommandInstance::new(
            Arc::clone(&self.spec),
            params,
        )?))
    }
}

struct CommandInstance {
    spec: Arc<CommandSpec>,
    run: Vec<String>,
    cwd: PathBuf,
    env: Vec<(String, String)>,
    prepare: Option<Vec<String>>,
    cleanup: Option<Vec<String>>,
    /// Resolved paths of file/ELF metrics, by custom-metric index.
    paths: Vec<Option<PathBuf>>,
    /// Regex metrics as the bounded reader runs them, by custom-metric index.
    regexes: Vec<Option<LineRegex>>,
    scratch: PathBuf,
    out_path: PathBuf,
    err_path: PathBuf,
    capture_stdout: bool,
    cell_prepared: bool,
}

impl CommandInstance {
    fn new(spec: Arc<CommandSpec>, params: &Params) -> anyhow::Result<CommandInstance> {
        install_reaper();
        let scratch = super::scratch_dir()?;
        let base = spec.base_dir.clone();
        let scratch_s = scratch.display().to_string();
        let vars = |n: &str| -> Option<String> {
            match n {
                "plan_dir" => Some(base.display().to_string()),
                "tmp" => Some(scratch_s.clone()),
                _ => params.get(n).map(|v| v.to_string()),
            }
        };
        let e = |key: &str| {
            let name = spec.name.clone();
            let key = key.to_string();
            move |m: String| anyhow::anyhow!("`{name}` `{key}`: {m}")
        };
        let run = spec.run.fill(&vars).map_err(e("command"))?;
        if run.is_empty() {
            anyhow::bail!("`{}`: the command is empty", spec.name);
        }
        let cwd = match &spec.cwd {
            Some(c) => base.join(fill(c, &vars).map_err(e("cwd"))?),
            None => base.clone(),
        };
        let mut env = Vec::new();
        for (k, v) in &spec.env {
            env.push((k.clone(), fill(v, &vars).map_err(e("env"))?));
        }
        for var in &spec.env_vars {
            if let Some(v) = params.get(&format!("env.{var}")) {
                env.push((var.clone(), v.to_string()));
            }
        }
        let setup = match &spec.setup {
            Some(p) => Some(p.fill(&vars).map_err(e("setup"))?),
            None => None,
        };
        let prepare = match &spec.prepare {
            Some(p) => Some(p.fill(&vars).map_err(e("prepare"))?),
            None => None,
        };
        let cleanup = match &spec.cleanup {
            Some(p) => Some(p.fill(&vars).map_err(e("cleanup"))?),
            None => None,
        };
        let mut paths = Vec::new();
        for m in &spec.custom {
            paths.push(match &m.source {
                Source::File(p) | Source::Elf { path: p, .. } => {
                    Some(cwd.join(fill(p, &vars).map_err(e("metrics"))?))
                }
                _ => None,
            });
        }
        let regexes = spec
            .custom
            .iter()
            .map(|m| match &m.source {
                Source::Regex { re, .. } => Some(LineRegex::new(re)),
                _ => None,
            })
            .collect();
        let capture_stdout = spec.custom.iter().any(|m| {
            matches!(
                m.source,
                Source::Json(_)
                    | Source::Regex {
                        stream: Stream::Stdout,
                        ..
                    }
            )
        });
        let mut inst = CommandInstance {
            out_path: scratch.join(".kbench-stdout"),
            err_path: scratch.join(".kbench-stderr"),
            spec,
            run,
            cwd,
            env,
            prepare,
            cleanup,
            paths,
            regexes,
            scratch,
            capture_stdout,
            cell_prepared: false,
        };
        if let Some(s) = &setup {
            inst.hook("setup", s)?;
        }
        if inst.spec.per == Per::Cell
            && let Some(p) = inst.prepare.clone()
        {
            inst.hook("prepare", &p)?;
            inst.cell_prepared = true;
        }
        Ok(inst)
    }

    /// Run `argv` to completion under the cell's cwd, env and timeout.
    fn exec(&self, argv: &[String], capture: bool) -> std::io::Result<(Usage, Exit)> {
        let out = if capture {
            Some(super::private_file(&self.out_path)?)
        } else {
            None
        };
        let err = super::private_file(&self.err_path)?;
        spawn_measured(argv, &self.cwd, &self.env, out, err, self.spec.timeout)
    }

    fn stderr_tail(&self) -> String {
        tail(&self.err_path, 600)
    }

    /// A failure's hint when the scratch directory's disk is full: the
    /// command's output is captured there, so a full `TMPDIR` fails every
    /// sample (`exited with status 1`) and the command rarely says why.
    fn full_scratch(&self) -> String {
        match crate::system::free_bytes(&self.scratch) {
            Some(n) if n < 64 << 10 => format!(
                "; TMPDIR {} is full ({} free): the command's output is captured there (free space, or set TMPDIR to a directory with room)",
                std::env::temp_dir().display(),
                crate::input::size(n)
            ),
            _ => String::new(),
        }
    }

    /// Run a prepare/cleanup command; a failure says which and why.
    fn hook(&self, what: &str, argv: &[String]) -> Result<(), SampleFailure> {
        let res = self.exec(argv, false);
        self.check(what, argv, res).map(|_| ())
    }

    fn check(
        &self,
        what: &str,
        argv: &[String],
        res: std::io::Result<(Usage, Exit)>,
    ) -> Result<Usage, SampleFailure> {
        let fail = |how: String| {
            let t = self.stderr_tail();
            SampleFailure {
                message: format!(
                    "{what} `{}` {how}{}{}",
                    shown(argv, 120),
                    if t.is_empty() {
                        String::new()
                    } else {
                        format!("; stderr: {t}")
                    },
                    self.full_scratch()
                ),
                keep_going: self.spec.on_failure == OnFailure::Continue,
            }
        };
        match res {
            Err(e) => Err(fail(format!("cannot run: {e}"))),
            Ok((u, Exit::Code(0))) => Ok(u),
            Ok((_, Exit::Code(c))) => Err(fail(format!("exited with status {c}"))),
            Ok((_, Exit::Signal(s))) => Err(fail(format!("was killed by signal {s}"))),
            Ok((_, Exit::TimedOut)) => Err(fail(format!(
                "timed out after {} s and was killed with its process group",
                self.spec.timeout.map_or(0.0, |d| d.as_secs_f64())
            ))),
            Ok((_, Exit::Interrupted)) => Err(fail("was interrupted".into())),
        }
    }

    fn custom(&self, i: usize, m: &CustomMetric, u: &Usage) -> Result<f64, String> {
        match &m.source {
            Source::Timer(b) => Ok(u.get(*b)),
            Source::Regex { re, stream } => {
                let (p, what) = match stream {
                    Stream::Stdout => (&self.out_path, "stdout"),
                    Stream::Stderr => (&self.err_path, "stderr"),
                };
                let lr = self.regexes[i].as_ref().expect("compiled");
                let v = lr
                    .first(p, what)?
                    .ok_or_else(|| format!("regex `{}` does not match", re.as_str()))?;
                number(&v)
            }
            Source::Json(ptr) => match capture::json_pointer(&self.out_path, ptr)? {
                Found::Number(n) => Ok(n),
                Found::Text(s) => number(&s),
                Found::Other(what) => Err(format!("`{ptr}` is {what}, not a number")),
                Found::Missing => Err(format!("no `{ptr}` in stdout")),
            },
            Source::File(_) => {
                let p = self.paths[i].as_ref().expect("resolved");
                elf::file_size(p)
                    .map(|n| n as f64)
                    .map_err(|e| format!("{}: {e}", p.display()))
            }
            Source::Elf { section, .. } => {
                let p = self.paths[i].as_ref().expect("resolved");
                elf::elf_size(p, section)
                    .map(|n| n as f64)
                    .map_err(|e| format!("{}: {e}", p.display()))
            }
        }
    }
}

/// A metric's text as a finite number: `NaN` or `inf` is a failed sample
/// (handled as the cell's `on_failure` says), not a value.
fn number(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = t
        .parse::<f64>()
        .map_err(|_| format!("`{}` is not a number", crate::term::visible(t)))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("`{t}` is not a finite number"))
    }
}

/// A cell's command as a shell command line that pastes back into `sh`
/// (`sh -c 'cat f | grep x'`), cut at `max` bytes, marked `...`.
fn shown(argv: &[String], max: usize) -> String {
    let s = crate::term::shell_line(argv);
    if s.len() > max {
        format!("{}...", &s[..s.floor_char_boundary(max - 3)])
    } else {
        s
    }
}

/// The last `max` bytes of a file, on one line.
fn tail(p: &Path, max: u64) -> String {
    let Ok(mut f) = File::open(p) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut b = Vec::new();
    let _ = f.read_to_end(&mut b);
    let s = String::from_utf8_lossy(&b);
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Instance for CommandInstance {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        if self.spec.per == Per::Sample
            && let Some(p) = &self.prepare
        {
            self.hook("prepare", p)?;
        }
        let res = self.exec(&self.run, self.capture_stdout);
        let usage = self.check("command", &self.run, res);
        let values: Result<Vec<f64>, SampleFailure> = usage.and_then(|u| {
            let mut v: Vec<f64> = self.spec.measure.iter().map(|&b| u.get(b)).collect();
            for (i, m) in self.spec.custom.iter().enumerate() {
                v.push(self.custom(i, m, &u).map_err(|e| SampleFailure {
                    message: format!("metric `{}`: {e}", m.name),
                    keep_going: self.spec.on_failure == OnFailure::Continue,
                })?);
            }
            Ok(v)
        });
        if self.spec.per == Per::Sample
            && let Some(c) = &self.cleanup
        {
            self.hook("cleanup", c)?;
        }
        for (i, v) in values?.into_iter().enumerate() {
            out.push(Measure {
                metric: i,
                value: v,
            });
        }
        Ok(())
    }

    fn notes(&self) -> Vec<(String, String)> {
        vec![("command".into(), shown(&self.run, 1000))]
    }
}

impl Drop for CommandInstance {
    fn drop(&mut self) {
        if self.cell_prepared
            && let Some(c) = self.cleanup.clone()
            && let Err(e) = self.hook("cleanup", &c)
        {
            eprintln!("kbench: `{}`: {e}", self.spec.name);
        }
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// Resource usage of one command run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Usage {
    pub real: f64,
    pub user: f64,
    pub sys: f64,
    pub maxrss_kib: f64,
    pub vcsw: f64,
    pub ivcsw: f64,
}

impl Usage {
    /// The value of [`BUILTINS`]`[i]`.
    pub fn get(&self, i: usize) -> f64 {
        [
            self.real,
            self.user,
            self.sys,
            self.maxrss_kib,
            self.vcsw,
            self.ivcsw,
        ][i]
    }

    fn add(&mut self, ru: &libc::rusage) {
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
        self.user += tv(ru.ru_utime);
        self.sys += tv(ru.ru_stime);
        // KiB on Linux and FreeBSD.
        self.maxrss_kib = self.maxrss_kib.max(ru.ru_maxrss as f64);
        self.vcsw += ru.ru_nvcsw as f64;
        self.ivcsw += ru.ru_nivcsw as f64;
    }
}

/// How a command run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut,
    /// kbench got SIGINT/SIGTERM while waiting; the command was killed.
    Interrupted,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "exited with status {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {s}"),
            Exit::TimedOut => f.write_str("timed out"),
            Exit::Interrupted => f.write_str("was interrupted"),
        }
    }
}

/// Set once SIGINT/SIGTERM arrive, so a long command is killed instead of
/// making the user wait for it.
fn interrupted() -> &'static AtomicBool {
    static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();
    FLAG.get_or_init(|| {
        let f = Arc::new(AtomicBool::new(false));
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let _ = signal_hook::flag::register(sig, Arc::clone(&f));
        }
        f
    })
}

/// Find every descendant of a command again (`system::contain_descendants`:
/// a child subreaper, a cgroup where possible, the watchdog).
fn install_reaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        crate::system::contain_descendants();
        interrupted();
    });
}

/// Wait until `pid` can be reaped, the deadline passes or (when
/// `interruptible`) kbench is interrupted. Returns the instant the exit
/// was seen and why we stopped.
fn wait_exit(pid: i32, deadline: Option<Instant>, interruptible: bool) -> (Instant, Option<Exit>) {
    // The OS's exit notification (a pidfd, a kqueue) where it has one.
    if let Some(notifier) = crate::system::exit_notifier(pid) {
        use std::os::fd::AsRawFd;
        let r = loop {
            if interruptible && interrupted().load(Ordering::Relaxed) {
                break Some(Exit::Interrupted);
            }
            // Wake at least every 100 ms to look at the interrupt flag.
            let mut ms = 100i64;
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break Some(Exit::TimedOut);
                }
                ms = ms.min(left.as_millis() as i64 + 1);
            }
            let mut p = libc::pollfd {
                fd: notifier.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let n = unsafe { libc::poll(&mut p, 1, ms as i32) };
            if n > 0 {
                break None;
            }
        };
        return (Instant::now(), r);
    }
    // Portable fallback: peek with waitid(WNOWAIT) every millisecond.
    loop {
        // SAFETY: siginfo_t is plain data; WNOWAIT leaves the child
        // reapable by the wait4 that follows.
        let exited = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let r = libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            r == 0 && info.si_pid() != 0
        };
        if exited {
            return (Instant::now(), None);
        }
        if interruptible && interrupted().load(Ordering::Relaxed) {
            return (Instant::now(), Some(Exit::Interrupted));
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return (Instant::now(), Some(Exit::TimedOut));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// How [`spawn_with`] runs a command, besides what it runs.
#[derive(Clone, Debug, Default)]
pub struct Spawn {
    /// Killed (with what it started) after this long.
    pub timeout: Option<Duration>,
    /// Killed when kbench gets Ctrl-C or SIGTERM (a benchmark's command);
    /// a teardown is not, it restores the system.
    pub interruptible: bool,
}

/// Spawn `argv` in a new process group, wait for it (killing the group at
/// the timeout or on Ctrl-C) and return its usage and how it ended.
/// Leftover members of the group are killed and reaped before returning.
pub fn spawn_measured(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    stdout: Option<File>,
    stderr: File,
    timeout: Option<Duration>,
) -> std::io::Result<(Usage, Exit)> {
    let how = Spawn {
        timeout,
        interruptible: true,
    };
    spawn_with(argv, cwd, env, stdout, stderr, &how)
}

/// [`spawn_measured`] as `how` says.
pub fn spawn_with(
    argv: &[String],
    cwd: &Path,
    env: &[(String, String)],
    stdout: Option<File>,
    stderr: File,
    how: &Spawn,
) -> std::io::Result<(Usage, Exit)> {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    install_reaper();
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut cmd = std::process::Command::new(prog);
    cmd.args(args)
        .current_dir(cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        // Found by the watchdog however it leaves the group and the cgroup.
        .env(
            crate::system::CONTAINER_VAR,
            crate::system::container_mark(),
        )
        .stdin(Stdio::null())
        .stdout(stdout.map_or_else(Stdio::null, Stdio::from))
        .stderr(Stdio::from(stderr))
        .process_group(0);
    // Nothing runs in the child between its fork and exec (no pre_exec
    // hook): std then starts it with posix_spawn, a vfork-like clone
    // whose cost does not grow with kbench's memory. A fork of kbench
    // with a hook that joined the cgroup and told the watchdog cost the
    // timed interval ~20% of `true` (issue 45.4). Both are done by kbench
    // just after the spawn, off the child's path; a SIGKILL of kbench in
    // between still leaves nothing, as the watchdog finds the command by
    // the mark in its environment.
    crate::system::watchdog::ready();
    let before = crate::system::children();
    let t0 = Instant::now();
    let child = cmd.spawn()?;
    let pid = child.id() as i32;
    // The group dies with kbench even if kbench is killed (SIGKILL); the
    // guard is dropped once it has been killed and reaped below.
    let _guard = crate::system::watchdog::guard(pid);
    crate::system::adopt_into_command_cgroup(pid);
    // We reap the child ourselves with wait4; std's handle is not used.
    drop(child);
    let (seen, stop) = wait_exit(pid, how.timeout.map(|d| t0 + d), how.interruptible);
    if stop.is_some() {
        // SAFETY: signalling our own child's process group.
        unsafe { libc::kill(-pid, libc::SIGKILL) };
    }
    let mut usage = Usage::default();
    let mut status = 0;
    // SAFETY: rusage is plain data filled by the kernel.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: valid out-pointers; pid is our child.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(std::io::Error::last_os_error());
        }
    }
    usage.real = seen.duration_since(t0).as_secs_f64();
    usage.add(&ru);
    // Members of the group still alive (a daemon the command started, the
    // children of a killed shell) are killed; those re-parented to us are
    // reaped and their CPU time counted.
    // SAFETY: as above; ESRCH when the group is empty is fine.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    loop {
        let mut st = 0;
        // SAFETY: valid out-pointers.
        let r = unsafe { libc::wait4(-pid, &mut st, 0, &mut ru) };
        if r > 0 {
            usage.add(&ru);
            continue;
        }
        if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        break;
    }
    // What left the group (`setsid`) dies too; its CPU time counts.
    crate::system::kill_escaped(&before, &mut |ru| usage.add(ru));
    let exit = match stop {
        Some(e) => e,
        None if libc::WIFEXITED(status) => Exit::Code(libc::WEXITSTATUS(status)),
        None if libc::WIFSIGNALED(status) => Exit::Signal(libc::WTERMSIG(status)),
        None => Exit::Code(-1),
    };
    Ok((usage, exit))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One command of these tests at a time: a timed-out command's tree
    /// is killed through the containment every command of this process
    /// shares (as root its cgroup), so a command of a test running beside
    /// it would be killed too (SIGKILL where exit 0 was due).
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn run(argv: &[&str], timeout: Option<f64>) -> (Usage, Exit) {
        let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().unwrap();
        let err = File::create(dir.path().join("e")).unwrap();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        spawn_measured(
            &argv,
            dir.path(),
            &[],
            None,
            err,
            timeout.map(Duration::from_secs_f64),
        )
        .unwrap()
    }

    #[test]
    fn sleep_is_wall_time_not_cpu() {
        let (u, e) = run(&["sh", "-c", "sleep 0.05"], None);
        assert_eq!(e, Exit::Code(0));
        assert!(u.real > 0.045 && u.real < 1.0, "real {}", u.real);
        assert!(u.user + u.sys < u.real / 2.0, "{u:?}");
        assert!(u.maxrss_kib > 100.0, "{u:?}");
    }

    #[test]
    fn exit_status_and_timeout() {
        assert_eq!(run(&["sh", "-c", "exit 3"], None).1, Exit::Code(3));
        let (u, e) = run(&["sh", "-c", "sleep 5 & sleep 5; wait"], Some(0.2));
        assert_eq!(e, Exit::TimedOut);
        assert!(u.real >= 0.2 && u.real < 2.0, "real {}", u.real);
    }

    #[test]
    fn placeholders_fill_and_escape() {
        let vars = |n: &str| match n {
            "flags" => Some("-O2".to_string()),
            "empty" => Some(String::new()),
            _ => None,
        };
        assert_eq!(fill("cc {flags} x.c", &vars).unwrap(), "cc -O2 x.c");
        assert_eq!(fill("awk '{print $1}'", &vars).unwrap(), "awk '{print $1}'");
        assert_eq!(fill("${{HOME}", &vars).unwrap(), "${HOME}");
        assert_eq!(
            fill("{\"a\": {\"b\": 1}}", &vars).unwrap(),
            "{\"a\": {\"b\": 1}}"
        );
        assert!(fill("{nope}", &vars).is_err());
        let a = Argv::Exec(vec!["cc".into(), "{empty}".into(), "x{empty}".into()]);
        assert_eq!(a.fill(&vars).unwrap(), vec!["cc", "x"]);
        assert_eq!(placeholders("{a} {b.c} {1x}").unwrap(), vec!["a", "b.c"]);
    }
}
