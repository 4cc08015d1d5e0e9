//! A command `[[bench]]` of a plan, read: its keys (`command` or `shell`,
//! `params`, `sweep`, `cwd`, `env`, `timeout`, `prepare`, `cleanup`,
//! `per`, `on_failure`, `measure`, `metrics`) checked and turned into a
//! [`CommandSpec`]. The plan hands over the table as written and the text
//! it came from, so each error names `file:line:column` and the key.

use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use toml::Spanned;

use super::{
    Argv, BUILTIN_VARS, BUILTINS, CommandBench, CommandSpec, CustomMetric, OnFailure, Per, Source,
    Stream,
};
use crate::bench::Direction;
use crate::bench::params::label_of;
use crate::error::SourceText;

/// One `[[bench]]` as written: a built-in benchmark (`use`), a C
/// testcase (`testcase`), or a command (`command` or `shell`, with the keys
/// only a command takes, which this file reads).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchFile {
    #[serde(rename = "use")]
    pub use_: Option<Spanned<String>>,
    pub name: Option<Spanned<String>>,
    #[serde(default)]
    pub params: IndexMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    pub sweep: IndexMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>,
    pub samples: Option<Spanned<i64>>,
    /// A will-it-scale C testcase file, relative to the plan file.
    pub testcase: Option<Spanned<String>>,
    // Command benchmarks (instead of `use`).
    pub command: Option<Spanned<Vec<String>>>,
    pub shell: Option<Spanned<String>>,
    pub cwd: Option<Spanned<String>>,
    #[serde(default)]
    pub env: IndexMap<String, String>,
    pub timeout: Option<Spanned<f64>>,
    pub prepare: Option<Spanned<toml::Value>>,
    pub cleanup: Option<Spanned<toml::Value>>,
    pub per: Option<Spanned<String>>,
    pub on_failure: Option<Spanned<String>>,
    pub measure: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    pub metrics: Vec<Spanned<MetricFile>>,
}

/// A custom metric of a command benchmark: exactly one source key.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricFile {
    pub name: Spanned<String>,
    pub unit: Option<String>,
    pub direction: Option<Spanned<String>>,
    pub regex: Option<Spanned<String>>,
    /// `stdout` (default) or `stderr`, for `regex`.
    pub from: Option<Spanned<String>>,
    pub json: Option<Spanned<String>>,
    pub file: Option<Spanned<String>>,
    pub elf: Option<Spanned<String>>,
    /// For `elf`: `text` (default), `data`, `bss` or a section name.
    pub section: Option<Spanned<String>>,
    pub timer: Option<Spanned<String>>,
}

/// A command benchmark read from its `[[bench]]`.
pub struct Parsed {
    /// Its `name`, which names its rows.
    pub name: String,
    pub bench: Arc<CommandBench>,
    /// Its sweeps (parameter, values), one cell per point.
    pub sweep: Vec<(String, Vec<toml::Value>)>,
}

/// Is this `[[bench]]` a command (it has `command` or `shell`)?
pub fn is_command(d: &BenchFile) -> bool {
    d.command.is_some() || d.shell.is_some()
}

/// A `[[bench]]` that is not a command ([`is_command`]) must not carry
/// the keys only a command takes.
pub fn refuse_command_keys(src: &SourceText, d: &BenchFile) -> anyhow::Result<()> {
    for (key, span) in [
        ("cwd", d.cwd.as_ref().map(|x| x.span())),
        ("timeout", d.timeout.as_ref().map(|x| x.span())),
        ("prepare", d.prepare.as_ref().map(|x| x.span())),
        ("cleanup", d.cleanup.as_ref().map(|x| x.span())),
        ("per", d.per.as_ref().map(|x| x.span())),
        ("on_failure", d.on_failure.as_ref().map(|x| x.span())),
        ("measure", d.measure.as_ref().map(|x| x.span())),
        ("metrics", d.metrics.first().map(|x| x.span())),
    ] {
        if let Some(sp) = span {
            return Err(src.err(
                sp,
                format!("`{key}` goes with a command benchmark (`command` or `shell`)"),
            ));
        }
    }
    Ok(())
}

/// An argv's first word names the program: never empty or blank.
fn no_empty_program(
    src: &SourceText,
    key: &str,
    span: std::ops::Range<usize>,
    argv: &[String],
) -> anyhow::Result<()> {
    match argv.first() {
        Some(p) if p.trim().is_empty() => Err(src.err(
            span,
            format!(
                "`{key}`: the first argument, the program, is empty (name the program: [\"make\", \"-j4\"])"
            ),
        )),
        _ => Ok(()),
    }
}

/// A command or hook: a string runs through `sh -c`, a list is an argv.
fn argv_of(src: &SourceText, key: &str, v: &Spanned<toml::Value>) -> anyhow::Result<Argv> {
    match v.get_ref() {
        toml::Value::String(s) if !s.trim().is_empty() => Ok(Argv::Shell(s.clone())),
        toml::Value::Array(a) if !a.is_empty() => {
            let argv: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(String::from)).collect();
            let argv = argv.ok_or_else(|| {
                src.err(
                    v.span(),
                    format!("`{key}`: every argument must be a string"),
                )
            })?;
            no_empty_program(src, key, v.span(), &argv)?;
            Ok(Argv::Exec(argv))
        }
        _ => Err(src.err(
            v.span(),
            format!("`{key}` must be a shell string or a non-empty list of arguments"),
        )),
    }
}

/// A command `[[bench]]` ([`is_command`]) as a benchmark: every key it
/// has checked, its placeholders resolved against its parameters and the
/// plan's `env` factors (`env_vars`). Relative paths start at `dir`, the
/// plan's directory; with `here`, a `cwd` naming no parameter must be a
/// directory on this machine.
pub fn parse(
    src: &SourceText,
    b: &Spanned<BenchFile>,
    dir: &Path,
    here: bool,
    env_vars: &[String],
) -> anyhow::Result<Parsed> {
    let d = b.get_ref();
    let run = run_of(src, b)?;
    let Some(name) = &d.name else {
        return Err(src.err(
            b.span(),
            "a command [[bench]] needs a `name` (it names the rows of the report)",
        ));
    };
    let name = name.get_ref().clone();
    let (params, sweep) = command_params(src, d)?;
    let timeout = match &d.timeout {
        Some(t) if !(*t.get_ref() > 0.0 && *t.get_ref() <= 1e6) => {
            return Err(src.err(
                t.span(),
                format!(
                    "`timeout` must be a positive number of seconds, found {}",
                    t.get_ref()
                ),
            ));
        }
        t => t
            .as_ref()
            .map(|t| std::time::Duration::from_secs_f64(*t.get_ref())),
    };
    let prepare = d
        .prepare
        .as_ref()
        .map(|p| argv_of(src, "prepare", p))
        .transpose()?;
    let cleanup = d
        .cleanup
        .as_ref()
        .map(|p| argv_of(src, "cleanup", p))
        .transpose()?;
    let per = match d.per.as_ref().map(|p| (p.span(), p.get_ref().as_str())) {
        None | Some((_, "cell")) => Per::Cell,
        Some((_, "sample")) => Per::Sample,
        Some((sp, other)) => {
            return Err(src.err(
                sp,
                format!("`per` must be \"cell\" or \"sample\", found `{other}`"),
            ));
        }
    };
    let on_failure = match d
        .on_failure
        .as_ref()
        .map(|p| (p.span(), p.get_ref().as_str()))
    {
        None | Some((_, "stop")) => OnFailure::Stop,
        Some((_, "continue")) => OnFailure::Continue,
        Some((sp, other)) => {
            return Err(src.err(
                sp,
                format!("`on_failure` must be \"stop\" or \"continue\", found `{other}`"),
            ));
        }
    };
    let (measure, custom) = command_metrics(src, b, d)?;
    // A secret in the command's environment is hidden wherever it turns
    // up (the plan's stored text, the command's output).
    for (k, v) in &d.env {
        if crate::redact::is_secret_name(k) {
            crate::redact::register(v);
        }
    }
    let spec = CommandSpec {
        name: name.clone(),
        run,
        cwd: d.cwd.as_ref().map(|c| c.get_ref().clone()),
        env: d.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        timeout,
        setup: None,
        prepare,
        cleanup,
        per,
        on_failure,
        measure,
        custom,
        base_dir: dir.to_path_buf(),
        params,
        env_vars: env_vars.to_vec(),
    };
    spec.check_placeholders()
        .map_err(|e| src.err(b.span(), format!("command `{name}`: {e}")))?;
    if let Some(c) = d.cwd.as_ref().filter(|_| here) {
        missing_cwd(dir, c.get_ref())
            .map_err(|e| src.err(c.span(), format!("command `{name}`: {e}")))?;
    }
    Ok(Parsed {
        name,
        bench: Arc::new(CommandBench::new(spec)),
        sweep,
    })
}

/// What the command runs: `command` (an argv) or `shell` (`sh -c`), the
/// one without `use` or the other.
fn run_of(src: &SourceText, b: &Spanned<BenchFile>) -> anyhow::Result<Argv> {
    let d = b.get_ref();
    if let Some(u) = &d.use_ {
        return Err(src.err(
            u.span(),
            "a [[bench]] has either `use` or `command`/`shell`, not both",
        ));
    }
    Ok(match (&d.command, &d.shell) {
        (Some(c), Some(_)) => {
            return Err(src.err(c.span(), "give `command` or `shell`, not both"));
        }
        (Some(c), None) => {
            if c.get_ref().is_empty() {
                return Err(src.err(c.span(), "`command` is empty"));
            }
            no_empty_program(src, "command", c.span(), c.get_ref())?;
            Argv::Exec(c.get_ref().clone())
        }
        (None, Some(s)) => {
            if s.get_ref().trim().is_empty() {
                return Err(src.err(s.span(), "`shell` is empty"));
            }
            Argv::Shell(s.get_ref().clone())
        }
        (None, None) => {
            return Err(src.err(b.span(), "a command [[bench]] needs `command` or `shell`"));
        }
    })
}

/// A command's declared parameters (name, default), and its sweeps (name,
/// values).
type Declared = (
    Vec<(String, Option<String>)>,
    Vec<(String, Vec<toml::Value>)>,
);

/// A command's parameters: `params` (with defaults), then sweep-only
/// ones; and its sweeps.
fn command_params(src: &SourceText, d: &BenchFile) -> anyhow::Result<Declared> {
    let mut params: Vec<(String, Option<String>)> = Vec::new();
    for (k, v) in &d.params {
        let val = match v.get_ref() {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::Boolean(_) => {
                v.get_ref().to_string()
            }
            other => {
                return Err(src.err(
                    v.span(),
                    format!(
                        "parameter `{}`: expected a scalar, found {}",
                        k.get_ref(),
                        other.type_str()
                    ),
                ));
            }
        };
        if k.get_ref().starts_with("env.") || BUILTIN_VARS.contains(&k.get_ref().as_str()) {
            return Err(src.err(
                k.span(),
                format!("parameter name `{}` is reserved", k.get_ref()),
            ));
        }
        params.push((k.get_ref().clone(), Some(val)));
    }
    let mut sweep = Vec::new();
    for (k, vals) in &d.sweep {
        if vals.get_ref().is_empty() {
            return Err(src.err(vals.span(), format!("sweep `{}` is empty", k.get_ref())));
        }
        let mut seen = HashSet::new();
        for v in vals.get_ref() {
            if matches!(v.get_ref(), toml::Value::Array(_) | toml::Value::Table(_)) {
                return Err(src.err(
                    v.span(),
                    format!("sweep `{}`: values must be scalars", k.get_ref()),
                ));
            }
            if !seen.insert(label_of(v.get_ref())) {
                return Err(src.err(
                    v.span(),
                    format!("sweep `{}`: duplicate value", k.get_ref()),
                ));
            }
        }
        if !params.iter().any(|(p, _)| p == k.get_ref()) {
            params.push((k.get_ref().clone(), None));
        }
        sweep.push((
            k.get_ref().clone(),
            vals.get_ref().iter().map(|v| v.get_ref().clone()).collect(),
        ));
    }
    Ok((params, sweep))
}

/// What a command measures: the built-in metrics (`measure`) and its
/// own (`metrics`); at least one.
fn command_metrics(
    src: &SourceText,
    b: &Spanned<BenchFile>,
    d: &BenchFile,
) -> anyhow::Result<(Vec<usize>, Vec<CustomMetric>)> {
    let builtin = |n: &str| BUILTINS.iter().position(|(b, _)| *b == n);
    let measure = match &d.measure {
        None => (0..BUILTINS.len()).collect(),
        Some(m) => {
            let mut out = Vec::new();
            for n in m.get_ref() {
                let i = builtin(n).ok_or_else(|| {
                    src.err(
                        m.span(),
                        format!(
                            "`measure`: unknown metric `{n}`{}",
                            crate::suggest::hint(n, &builtin_list(), "")
                        ),
                    )
                })?;
                out.push(i);
            }
            out
        }
    };
    let mut custom = Vec::new();
    let mut metric_names: HashSet<String> =
        measure.iter().map(|&i| BUILTINS[i].0.to_string()).collect();
    for m in &d.metrics {
        let c = custom_metric(src, m, &builtin)?;
        if !metric_names.insert(c.name.clone()) {
            return Err(src.err(
                m.get_ref().name.span(),
                format!("duplicate metric `{}`", c.name),
            ));
        }
        custom.push(c);
    }
    if measure.is_empty() && custom.is_empty() {
        return Err(src.err(
            b.span(),
            "the command measures nothing: `measure` is empty and there are no `metrics`",
        ));
    }
    Ok((measure, custom))
}

fn custom_metric(
    src: &SourceText,
    m: &Spanned<MetricFile>,
    builtin: &dyn Fn(&str) -> Option<usize>,
) -> anyhow::Result<CustomMetric> {
    let d = m.get_ref();
    let name = d.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(src.err(d.name.span(), "metric `name` is empty"));
    }
    let err =
        |sp: std::ops::Range<usize>, msg: String| src.err(sp, format!("metric `{name}`: {msg}"));
    let given: Vec<&str> = [
        ("regex", d.regex.is_some()),
        ("json", d.json.is_some()),
        ("file", d.file.is_some()),
        ("elf", d.elf.is_some()),
        ("timer", d.timer.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(k, _)| *k)
    .collect();
    if given.len() != 1 {
        return Err(err(
            m.span(),
            format!(
                "give exactly one of `regex`, `json`, `file`, `elf`, `timer` (found {})",
                if given.is_empty() {
                    "none".into()
                } else {
                    given.join(", ")
                }
            ),
        ));
    }
    if let Some(f) = &d.from
        && d.regex.is_none()
    {
        return Err(err(f.span(), "`from` goes with `regex`".into()));
    }
    if let Some(s) = &d.section
        && d.elf.is_none()
    {
        return Err(err(s.span(), "`section` goes with `elf`".into()));
    }
    let (source, default_unit) = metric_source(src, &name, d, builtin)?;
    let unit = match (&d.unit, default_unit) {
        (Some(u), _) => u.clone(),
        (None, Some(u)) => u.to_string(),
        (None, None) => {
            return Err(err(
                m.span(),
                "`unit` is required for `regex` and `json` metrics".into(),
            ));
        }
    };
    let direction = match d
        .direction
        .as_ref()
        .map(|x| (x.span(), x.get_ref().as_str()))
    {
        None | Some((_, "lower")) => Direction::Lower,
        Some((_, "higher")) => Direction::Higher,
        Some((_, "info")) => Direction::Info,
        Some((sp, o)) => {
            return Err(err(
                sp,
                format!("`direction` must be lower, higher or info, found `{o}`"),
            ));
        }
    };
    Ok(CustomMetric {
        name,
        unit,
        direction,
        source,
    })
}

/// Where a custom metric's value comes from, and the unit that source
/// implies (`None`: the metric must give one).
fn metric_source(
    src: &SourceText,
    name: &str,
    d: &MetricFile,
    builtin: &dyn Fn(&str) -> Option<usize>,
) -> anyhow::Result<(Source, Option<&'static str>)> {
    let err =
        |sp: std::ops::Range<usize>, msg: String| src.err(sp, format!("metric `{name}`: {msg}"));
    Ok(if let Some(r) = &d.regex {
        let re = regex::Regex::new(r.get_ref()).map_err(|e| {
            err(
                r.span(),
                format!("bad regex: {}", e.to_string().lines().last().unwrap_or("")),
            )
        })?;
        let stream = match d.from.as_ref().map(|f| (f.span(), f.get_ref().as_str())) {
            None | Some((_, "stdout")) => Stream::Stdout,
            Some((_, "stderr")) => Stream::Stderr,
            Some((sp, o)) => {
                return Err(err(
                    sp,
                    format!("`from` must be stdout or stderr, found `{o}`"),
                ));
            }
        };
        (Source::Regex { re, stream }, None)
    } else if let Some(j) = &d.json {
        if !(j.get_ref().is_empty() || j.get_ref().starts_with('/')) {
            return Err(err(
                j.span(),
                "a JSON pointer starts with `/` (e.g. /results/0/mean)".into(),
            ));
        }
        (Source::Json(j.get_ref().clone()), None)
    } else if let Some(f) = &d.file {
        (Source::File(f.get_ref().clone()), Some("bytes"))
    } else if let Some(e) = &d.elf {
        let section = d
            .section
            .as_ref()
            .map_or("text".to_string(), |s| s.get_ref().clone());
        (
            Source::Elf {
                path: e.get_ref().clone(),
                section,
            },
            Some("bytes"),
        )
    } else {
        let t = d.timer.as_ref().expect("one source");
        let i = builtin(t.get_ref()).ok_or_else(|| {
            err(
                t.span(),
                format!(
                    "unknown timer `{}`{}",
                    t.get_ref(),
                    crate::suggest::hint(t.get_ref(), &builtin_list(), "")
                ),
            )
        })?;
        (Source::Timer(i), Some(BUILTINS[i].1))
    })
}

/// The names of the rusage metrics every command yields.
fn builtin_list() -> Vec<&'static str> {
    BUILTINS.iter().map(|(b, _)| *b).collect()
}

/// A command's `cwd` that names no parameter must be a directory when the
/// plan is read, not found missing when its first cell runs.
fn missing_cwd(plan_dir: &Path, cwd: &str) -> Result<(), String> {
    let filled = cwd.replace("{plan_dir}", &plan_dir.display().to_string());
    if filled.contains('{') {
        return Ok(());
    }
    let path = plan_dir.join(&filled);
    if path.is_dir() {
        Ok(())
    } else {
        Err(format!(
            "`cwd` `{}` is not a directory",
            crate::term::visible(&path.display().to_string())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> anyhow::Result<Parsed> {
        let src = SourceText {
            name: "b.toml".into(),
            text,
        };
        let b: Spanned<BenchFile> = toml::from_str(text).expect("a [[bench]] table");
        parse(&src, &b, Path::new("/"), false, &[])
    }

    /// The command benchmark reads its own table, positions included,
    /// with no plan around it.
    #[test]
    fn a_command_table_is_read_without_a_plan() {
        let p =
            read("name = \"b\"\ncommand = [\"true\", \"{n}\"]\nsweep = { n = [1, 2] }\n").unwrap();
        assert_eq!(p.name, "b");
        assert_eq!(
            p.sweep,
            vec![(
                "n".to_string(),
                vec![toml::Value::Integer(1), toml::Value::Integer(2)]
            )]
        );
        let e = read("name = \"b\"\nshell = \"true\"\nper = \"round\"\n")
            .err()
            .expect("an error");
        assert_eq!(
            e.to_string(),
            "b.toml:3:7: `per` must be \"cell\" or \"sample\", found `round`"
        );
        // Not a command at all: an error, not a panic.
        let e = read("name = \"b\"\n").err().expect("an error");
        assert!(e.to_string().contains("needs `command` or `shell`"), "{e}");
    }
}
