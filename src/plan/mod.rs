//! Plan files: the TOML schema, loading with positions, and the validated
//! model the runner expands into cells.
//!
//! Parsing is strict (`deny_unknown_fields`) and keeps the source span of
//! every key and value, so every error can name `file:line:column` and the
//! offending key. Semantic checks (unknown benchmark, parameter or factor,
//! wrong type, empty list, duplicates) run after parsing, in `validate.rs`.

mod validate;

use indexmap::IndexMap;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::Spanned;

use crate::bench::{BenchRef, Params};
use crate::error::bad_input;
use crate::units::CpuSet;

pub use validate::{adhoc, expand};

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    name: Spanned<String>,
    samples: Option<Spanned<i64>>,
    sample_time: Option<Spanned<f64>>,
    warmup: Option<Spanned<i64>>,
    seed: Option<u64>,
    precision: Option<Spanned<String>>,
    #[serde(default)]
    factors: IndexMap<Spanned<String>, Spanned<FactorFile>>,
    #[serde(default)]
    bench: Vec<Spanned<BenchFile>>,
    /// Report layout; read by the reports issue, accepted now.
    #[allow(dead_code)]
    report: Option<toml::Value>,
    /// Command that arms the next boot; read by campaigns, accepted now.
    #[allow(dead_code)]
    reboot: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FactorFile {
    apply: Spanned<String>,
    values: Spanned<toml::Value>,
    labels: Option<Spanned<Vec<String>>>,
    /// For `param`: the parameter set (default: the factor's name).
    param: Option<Spanned<String>>,
    /// For `env`: the variable set (default: the factor's name).
    #[allow(dead_code)]
    var: Option<String>,
    /// For `system`: what reads the running state.
    #[allow(dead_code)]
    probe: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BenchFile {
    #[serde(rename = "use")]
    use_: Option<Spanned<String>>,
    name: Option<Spanned<String>>,
    #[serde(default)]
    params: IndexMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    sweep: IndexMap<Spanned<String>, Spanned<Vec<Spanned<toml::Value>>>>,
    samples: Option<Spanned<i64>>,
    /// A will-it-scale C testcase file, relative to the plan file.
    testcase: Option<Spanned<String>>,
}

/// How a factor's value is applied.
#[derive(Clone, Debug, PartialEq)]
pub enum Apply {
    /// Passed to the benchmark as parameter `param`.
    Param { param: String },
    /// The CPU affinity of the benchmark (inherited by its children).
    Cpus,
}

/// One value of a factor.
#[derive(Clone, Debug)]
pub struct Level {
    pub label: String,
    pub raw: toml::Value,
    /// For `cpus` factors: the parsed set.
    pub cpus: Option<CpuSet>,
}

#[derive(Clone, Debug)]
pub struct Factor {
    pub name: String,
    pub apply: Apply,
    pub levels: Vec<Level>,
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
    pub seed: Option<u64>,
    #[allow(dead_code)] // adaptive stopping (issue 3)
    pub precision: Option<f64>,
    pub factors: Vec<Factor>,
    pub benches: Vec<BenchSpec>,
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
}

/// Source positions for errors: `file:line:column`.
pub(crate) struct Source<'a> {
    pub name: String,
    pub text: &'a str,
}

impl Source<'_> {
    pub fn at(&self, span: std::ops::Range<usize>) -> String {
        let upto = &self.text[..span.start.min(self.text.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rfind('\n').map_or(upto.len(), |i| upto.len() - i - 1) + 1;
        format!("{}:{line}:{col}", self.name)
    }

    pub fn err(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> anyhow::Error {
        bad_input!("{}: {msg}", self.at(span))
    }
}

/// Load and validate a plan file.
pub fn load(path: &Path) -> anyhow::Result<Plan> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| bad_input!("{}: cannot read plan: {e}", path.display()))?;
    let mut plan = parse(&text, &path.display().to_string())?;
    plan.path = Some(path.to_path_buf());
    Ok(plan)
}

/// Parse and validate plan text; `name` is used in error positions.
pub fn parse(text: &str, name: &str) -> anyhow::Result<Plan> {
    let src = Source {
        name: name.to_string(),
        text,
    };
    let file: PlanFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().replace('\n', " ");
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
