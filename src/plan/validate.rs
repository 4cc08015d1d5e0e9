//! Semantic checks after parsing, and expansion of a plan into cells.

use indexmap::IndexMap;
use std::collections::HashSet;

use super::{
    Apply, BenchSpec, Cell, Factor, FactorFile, Level, Plan, PlanFile,
    Repeat, ShellStep, Source, SystemNeed,
};
use crate::bench::command::spec::{self, BenchFile};
use crate::bench::params::{label_of, raw_from_str};
use crate::bench::{self, BenchRef, Params};
use crate::error::bad_input;
use crate::system::probe::{self, Probe};
use crate::units::{CpuSet, parse_percent};

fn positive(
    src: &Source,
    v: &Option<toml::Spanned<i64>>,
    key: &str,
    min: i64,
) -> anyhow::Result<Option<u32>> {
    match v {
        None => Ok(None),
        Some(s) if *s.get_ref() >= min && *s.get_ref() <= u32::MAX as i64 => {
            Ok(Some(*s.get_ref() as u32))
        }
        Some(s) => Err(src.err(
            s.span(),
            format!(
                "`{key}` must be within {min}..={}, found {}",
                u32::MAX,
                s.get_ref()
            ),
        )),
    }
}

pub(super) fn validate(file: PlanFile, src: &Source) -> anyhow::Result<Plan> {
    let name = file.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(src.err(file.name.span(), "`name` must not be empty"));
    }
    super::check_campaign_name(&name).map_err(|e| src.err(file.name.span(), e))?;
    let samples = positive(src, &file.samples, "samples", 1)?;
    let warmup = positive(src, &file.warmup, "warmup", 0)?;
    let processes = positive(src, &file.processes, "processes", 1)?;
    let repeat = match &file.repeat {
        Some(r) => {
            let r = r.get_ref();
            Repeat {
                runs: positive(src, &r.runs, "repeat.runs", 1)?.unwrap_or(1),
                boots: positive(src, &r.boots, "repeat.boots", 1)?.unwrap_or(1),
            }
        }
        None => Repeat::default(),
    };
    let sample_time = match &file.sample_time {
        Some(s) if !(*s.get_ref() > 0.0 && *s.get_ref() <= 3600.0) => {
            return Err(src.err(
                s.span(),
                format!(
                    "`sample_time` must be in (0, 3600] seconds, found {}",
                    s.get_ref()
                ),
            ));
        }
        s => s.as_ref().map(|s| *s.get_ref()),
    };
    let precision = match &file.precision {
        Some(p) => Some(
            parse_percent(p.get_ref())
                .map_err(|e| src.err(p.span(), format!("`precision`: {e}")))?,
        ),
        None => None,
    };

    let mut factors = Vec::new();
    for (fname, fdef) in &file.factors {
        factors.push(factor(src, fname, fdef)?);
    }

    let env_vars: Vec<String> = factors
        .iter()
        .filter_map(|f| match &f.apply {
            Apply::Env { var } => Some(var.clone()),
            _ => None,
        })
        .collect();
    let mut benches = Vec::new();
    let mut names = HashSet::new();
    for b in &file.bench {
        let spec = bench_spec(src, b, &env_vars)?;
        if !names.insert(spec.display.clone()) {
            let span = b
                .get_ref()
                .name
                .as_ref()
                .map(|n| n.span())
                .unwrap_or(b.span());
            return Err(src.err(
                span,
                format!(
                    "duplicate bench name `{}`: give each [[bench]] a distinct `name`",
                    spec.display
                ),
            ));
        }
        benches.push(spec);
    }
    if benches.is_empty() {
        return Err(bad_input!("{}: the plan has no [[bench]]", src.name));
    }

    factors_fit_benches(&file, src, &factors, &benches)?;
    let reboot = file
        .reboot
        .as_ref()
        .map(|r| r.get_ref().command.get_ref().clone());
    let layout = layout_of(&file, src, &factors, &benches)?;
    let gate = file
        .gate
        .as_ref()
        .map(|g| super::gate::validate(g, src, &benches))
        .transpose()?;
    let plan = Plan {
        name,
        path: None,
        text: src.text.to_string(),
        samples,
        sample_time,
        warmup,
        processes,
        repeat,
        seed: file.seed,
        precision,
        factors,
        benches,
        reboot,
        layout,
        gate,
    };
    // Expanding resolves every cell's parameters: the benchmark's own
    // cross-checks run now, before anything is measured.
    expand(&plan).map_err(|e| bad_input!("{}: {e:#}", src.name))?;
    Ok(plan)
}

/// Each factor fits the plan's benchmarks: a `param` factor names a
/// parameter some benchmark has (with values of its type) and no bench
/// also sets; an `env` factor needs a command benchmark.
fn factors_fit_benches(
    file: &PlanFile,
    src: &Source,
    factors: &[Factor],
    benches: &[BenchSpec],
) -> anyhow::Result<()> {
    // A parameter is set in one place only: a factor and a fixed value or a
    // sweep of the same parameter would silently override each other.
    for (i, f) in factors.iter().enumerate() {
        let Apply::Param { param } = &f.apply else {
            continue;
        };
        for (b, bf) in benches.iter().zip(&file.bench) {
            if b.fixed
                .iter()
                .map(|(k, _)| k)
                .chain(b.sweep.iter().map(|(k, _)| k))
                .any(|k| k == param)
            {
                let span = bf
                    .get_ref()
                    .params
                    .keys()
                    .chain(bf.get_ref().sweep.keys())
                    .find(|k| k.get_ref() == param)
                    .map(|k| k.span())
                    .unwrap_or(file.factors.get_index(i).expect("same order").0.span());
                return Err(src.err(
                    span,
                    format!(
                        "parameter `{param}` of `{}` is set both here and by factor `{}`",
                        b.display, f.name
                    ),
                ));
            }
        }
    }

    // Every `param` factor must be a parameter of some benchmark, with
    // values of its type.
    for (i, f) in factors.iter().enumerate() {
        let (fname, fdef) = file.factors.get_index(i).expect("same order");
        if let Apply::Param { param } = &f.apply {
            let users: Vec<&BenchSpec> = benches
                .iter()
                .filter(|b| b.bench.params().iter().any(|d| d.name == param))
                .collect();
            if users.is_empty() {
                return Err(src.err(
                    fname.span(),
                    format!(
                        "factor `{}`: no benchmark in this plan has a parameter `{param}`",
                        f.name
                    ),
                ));
            }
            for b in users {
                let def = b
                    .bench
                    .params()
                    .iter()
                    .find(|d| d.name == param)
                    .expect("found");
                for lv in &f.levels {
                    def.ty.parse(&lv.raw).map_err(|e| {
                        src.err(
                            fdef.get_ref().values.span(),
                            format!(
                                "factor `{}` value `{}` for `{}`: {e}",
                                f.name, lv.label, b.display
                            ),
                        )
                    })?;
                }
            }
        }
    }

    for (i, f) in factors.iter().enumerate() {
        let (fname, _) = file.factors.get_index(i).expect("same order");
        if matches!(f.apply, Apply::Env { .. })
            && !benches
                .iter()
                .any(|b| b.bench.kind() == bench::Kind::Command)
        {
            return Err(src.err(
                fname.span(),
                format!(
                    "factor `{}`: apply = \"env\" sets the environment of commands, but the plan has no command [[bench]]",
                    f.name
                ),
            ));
        }
    }
    Ok(())
}

/// The plan's `[report]` layout, over its factors and parameters.
fn layout_of(
    file: &PlanFile,
    src: &Source,
    factors: &[Factor],
    benches: &[BenchSpec],
) -> anyhow::Result<Option<super::report::Layout>> {
    Ok(match &file.report {
        Some(r) => {
            let mut dims: Vec<String> = factors.iter().map(|f| f.name.clone()).collect();
            for b in benches {
                let names = b
                    .bench
                    .params()
                    .iter()
                    .map(|d| d.name.to_string())
                    .chain(b.fixed.iter().map(|(k, _)| k.clone()))
                    .chain(b.sweep.iter().map(|(k, _)| k.clone()));
                for n in names {
                    if !dims.contains(&n) {
                        dims.push(n);
                    }
                }
            }
            let labels: IndexMap<String, Vec<String>> = factors
                .iter()
                .map(|f| {
                    (
                        f.name.clone(),
                        f.levels.iter().map(|l| l.label.clone()).collect(),
                    )
                })
                .collect();
            Some(super::report::validate(r, src, &dims, &labels)?)
        }
        None => None,
    })
}

fn factor(
    src: &Source,
    fname: &toml::Spanned<String>,
    fdef: &toml::Spanned<FactorFile>,
) -> anyhow::Result<Factor> {
    let name = fname.get_ref().clone();
    let d = fdef.get_ref();
    let apply = apply_of(src, fname, d)?;
    let sys = apply == Apply::System;
    let probe = probe_of(src, &name, d)?;
    let valued = values_of(src, &name, d)?;
    let mut seen = HashSet::new();
    let mut levels = Vec::new();
    for (v, label) in valued {
        if sys {
            let expect = expected(src, &name, d, &label, &v, probe.as_ref())?;
            if !seen.insert(label.clone()) {
                return Err(src.err(
                    d.values.span(),
                    format!("factor `{name}`: duplicate value `{label}`"),
                ));
            }
            let hint = d
                .hint
                .as_ref()
                .and_then(|h| h.get_ref().get(&label).cloned());
            levels.push(Level {
                label,
                raw: v,
                cpus: None,
                expect,
                hint,
            });
            continue;
        }
        if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
            return Err(src.err(
                d.values.span(),
                format!(
                    "factor `{name}`: values must be scalars, found {}",
                    v.type_str()
                ),
            ));
        }
        if !seen.insert(label.clone()) {
            return Err(src.err(
                d.values.span(),
                format!("factor `{name}`: duplicate value `{label}`"),
            ));
        }
        let cpus = if apply == Apply::Cpus {
            let set = CpuSet::parse(&label_of(&v))
                .and_then(|s| s.check_online(&crate::system::online_cpus()).map(|_| s))
                .map_err(|e| src.err(d.values.span(), format!("factor `{name}`: {e}")))?;
            Some(set)
        } else {
            None
        };
        levels.push(Level {
            label,
            raw: v,
            cpus,
            expect: Vec::new(),
            hint: None,
        });
    }
    if let Some(h) = &d.hint {
        for k in h.get_ref().keys() {
            if !levels.iter().any(|l| &l.label == k) {
                return Err(src.err(
                    h.span(),
                    format!("factor `{name}`: `hint` for unknown value `{k}`"),
                ));
            }
        }
    }
    Ok(Factor {
        name,
        apply,
        levels,
    })
}

/// How a factor applies (`apply` and the keys that go with it).
fn apply_of(src: &Source, fname: &toml::Spanned<String>, d: &FactorFile) -> anyhow::Result<Apply> {
    let name = fname.get_ref().clone();
    let apply = match d.apply.get_ref().as_str() {
        "param" => Apply::Param {
            param: d
                .param
                .as_ref()
                .map(|p| p.get_ref().clone())
                .unwrap_or_else(|| name.clone()),
        },
        "cpus" => Apply::Cpus,
        "env" => {
            let var = d
                .var
                .as_ref()
                .map(|v| v.get_ref().clone())
                .unwrap_or_else(|| name.clone());
            let ok = !var.is_empty()
                && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !var.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                let span = d.var.as_ref().map_or(fname.span(), |v| v.span());
                return Err(src.err(
                    span,
                    format!(
                        "factor `{name}`: `{var}` is not an environment variable name (set `var`)"
                    ),
                ));
            }
            Apply::Env { var }
        }
        "shell" => {
            if d.setup.is_none() && d.teardown.is_none() {
                return Err(src.err(
                    d.apply.span(),
                    format!("factor `{name}`: apply = \"shell\" needs `setup` and/or `teardown`"),
                ));
            }
            Apply::Shell {
                setup: d.setup.as_ref().map(|x| x.get_ref().clone()),
                teardown: d.teardown.as_ref().map(|x| x.get_ref().clone()),
            }
        }
        "system" => Apply::System,
        other => {
            return Err(src.err(
                d.apply.span(),
                format!(
                    "factor `{name}`: unknown apply `{other}`{}",
                    crate::suggest::hint(other, &["param", "env", "cpus", "shell", "system"], "")
                ),
            ));
        }
    };
    let only = |key: &str, span: Option<std::ops::Range<usize>>, ok: bool, kind: &str| match span {
        Some(sp) if !ok => Err(src.err(
            sp,
            format!("factor `{name}`: `{key}` only goes with apply = \"{kind}\""),
        )),
        _ => Ok(()),
    };
    only(
        "param",
        d.param.as_ref().map(|x| x.span()),
        matches!(apply, Apply::Param { .. }),
        "param",
    )?;
    only(
        "var",
        d.var.as_ref().map(|x| x.span()),
        matches!(apply, Apply::Env { .. }),
        "env",
    )?;
    let sys = apply == Apply::System;
    only("probe", d.probe.as_ref().map(|x| x.span()), sys, "system")?;
    only("hint", d.hint.as_ref().map(|x| x.span()), sys, "system")?;
    let shell = matches!(apply, Apply::Shell { .. });
    only("setup", d.setup.as_ref().map(|x| x.span()), shell, "shell")?;
    only(
        "teardown",
        d.teardown.as_ref().map(|x| x.span()),
        shell,
        "shell",
    )?;
    Ok(apply)
}

/// A `system` factor's `probe`: a probe name or a command list.
fn probe_of(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Option<Probe>> {
    Ok(match d.probe.as_ref().map(|p| (p, p.get_ref())) {
        None => None,
        Some((p, toml::Value::String(n))) => {
            Some(Probe::parse(n).map_err(|e| src.err(p.span(), format!("factor `{name}`: {e}")))?)
        }
        Some((p, toml::Value::Array(a))) => {
            let argv: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(String::from)).collect();
            match argv {
                Some(v) if !v.is_empty() => {
                    if src.here && !program_exists(&v[0]) {
                        return Err(src.err(
                            p.span(),
                            format!(
                                "factor `{name}`: probe command `{}` is not found{}",
                                crate::term::visible(&v[0]),
                                if v[0].contains('/') { "" } else { " on PATH" }
                            ),
                        ));
                    }
                    Some(Probe::Command(v))
                }
                _ => {
                    return Err(src.err(
                        p.span(),
                        format!(
                            "factor `{name}`: a probe command must be a non-empty list of strings"
                        ),
                    ));
                }
            }
        }
        Some((p, other)) => {
            return Err(src.err(
                p.span(),
                format!(
                    "factor `{name}`: `probe` must be a probe name or a command list, found {}",
                    other.type_str()
                ),
            ));
        }
    })
}

/// A factor's values with their labels, in order.
fn values_of(
    src: &Source,
    name: &str,
    d: &FactorFile,
) -> anyhow::Result<Vec<(toml::Value, String)>> {
    // `values` is a list, or a table label -> value (for `system`, the
    // value may itself be a table probe -> expected reading).
    let (values, table_labels) = match d.values.get_ref() {
        toml::Value::Array(a) => (a.clone(), None),
        toml::Value::Table(t) => (
            t.values().cloned().collect(),
            Some(t.keys().cloned().collect::<Vec<String>>()),
        ),
        other => {
            return Err(src.err(
                d.values.span(),
                format!(
                    "factor `{name}`: `values` must be a list or a table, found {}",
                    other.type_str()
                ),
            ));
        }
    };
    if let (Some(_), Some(l)) = (&table_labels, &d.labels) {
        return Err(src.err(
            l.span(),
            format!("factor `{name}`: `labels` goes with a list of values; a table's keys are already labels"),
        ));
    }
    if values.is_empty() {
        return Err(src.err(
            d.values.span(),
            format!("factor `{name}`: `values` is empty"),
        ));
    }
    let labels: Vec<String> = match &d.labels {
        Some(l) if l.get_ref().len() != values.len() => {
            return Err(src.err(
                l.span(),
                format!(
                    "factor `{name}`: {} labels for {} values",
                    l.get_ref().len(),
                    values.len()
                ),
            ));
        }
        Some(l) => l.get_ref().clone(),
        None => table_labels.unwrap_or_else(|| values.iter().map(label_of).collect()),
    };
    Ok(values.into_iter().zip(labels).collect())
}

/// What a `system` factor's value `v` (labelled `label`) expects the
/// probes to read.
fn expected(
    src: &Source,
    name: &str,
    d: &FactorFile,
    label: &str,
    v: &toml::Value,
    probe: Option<&Probe>,
) -> anyhow::Result<Vec<(Probe, String)>> {
    let mut expect = Vec::new();
    let bad = |m: String| {
        src.err(
            d.values.span(),
            format!("factor `{name}` value `{label}`: {m}"),
        )
    };
    match (v, probe) {
        (toml::Value::Table(t), _) => {
            for (k, want) in t {
                let p = Probe::parse(k).map_err(&bad)?;
                let want = match want {
                    toml::Value::String(w) => w.clone(),
                    other => other.to_string(),
                };
                probe::check_expected(&want).map_err(&bad)?;
                expect.push((p, want));
            }
            if expect.is_empty() {
                return Err(bad("an empty table expects nothing".into()));
            }
        }
        (toml::Value::Array(_), _) => {
            return Err(bad("expected a reading or a table probe -> reading".into()));
        }
        (scalar, Some(p)) => {
            let want = label_of(scalar);
            probe::check_expected(&want).map_err(&bad)?;
            expect.push((p.clone(), want));
        }
        (_, None) => {
            return Err(bad(
                "set `probe`, or give the value as a table probe -> expected reading".into(),
            ));
        }
    }
    Ok(expect)
}

fn bench_spec(
    src: &Source,
    b: &toml::Spanned<BenchFile>,
    env_vars: &[String],
) -> anyhow::Result<BenchSpec> {
    let d = b.get_ref();
    if spec::is_command(d) {
        let c = spec::parse(src, b, &src.dir, src.here, env_vars)?;
        return Ok(BenchSpec {
            display: c.name,
            bench: BenchRef::Owned(c.bench),
            fixed: Vec::new(),
            label_params: c.sweep.iter().map(|(k, _)| k.clone()).collect(),
            sweep: c.sweep,
            samples: positive(src, &d.samples, "samples", 1)?,
        });
    }
    spec::refuse_command_keys(src, d)?;
    // `testcase = "FILE.c"`: a will-it-scale C file, relative to the plan.
    if let (Some(tc), None) = (&d.testcase, &d.use_) {
        let base = std::path::Path::new(&src.name).parent();
        let path = base.map_or_else(|| tc.get_ref().into(), |b| b.join(tc.get_ref()));
        let bench = if src.inert {
            bench::scale::cfile::unloaded_c_testcase(&path)
        } else {
            bench::scale::cfile::lazy_c_testcase(&path)
                .map_err(|e| src.err(tc.span(), format!("{e:#}")))?
        };
        return finish_spec(src, d, bench, tc.get_ref().clone());
    }
    let Some(use_) = &d.use_ else {
        return Err(src.err(
            b.span(),
            "[[bench]] needs `use = \"BENCHMARK\"` (see `kbench list`), `testcase = \"FILE.c\"`, or `command`/`shell`",
        ));
    };
    if let Some(tc) = &d.testcase {
        return Err(src.err(tc.span(), "`testcase` and `use` exclude each other"));
    }
    let bench = bench::find(use_.get_ref())
        .ok_or_else(|| src.err(use_.span(), bench::unknown(use_.get_ref())))?;
    finish_spec(src, d, bench, use_.get_ref().clone())
}

fn finish_spec(
    src: &Source,
    d: &BenchFile,
    bench: bench::BenchRef,
    default_name: String,
) -> anyhow::Result<BenchSpec> {
    let display = d
        .name
        .as_ref()
        .map(|n| n.get_ref().clone())
        .unwrap_or(default_name);
    let known = |k: &toml::Spanned<String>| -> anyhow::Result<()> {
        if bench.params().iter().any(|p| p.name == k.get_ref()) {
            Ok(())
        } else {
            Err(src.err(k.span(), bench::params::unknown(&*bench, k.get_ref())))
        }
    };
    let mut fixed = Vec::new();
    for (k, v) in &d.params {
        known(k)?;
        let def = bench
            .params()
            .iter()
            .find(|p| p.name == k.get_ref())
            .expect("known");
        def.ty
            .parse(v.get_ref())
            .map_err(|e| src.err(v.span(), format!("parameter `{}`: {e}", k.get_ref())))?;
        fixed.push((k.get_ref().clone(), v.get_ref().clone()));
    }
    let mut sweep = Vec::new();
    for (k, vals) in &d.sweep {
        known(k)?;
        if fixed.iter().any(|(f, _)| f == k.get_ref()) {
            return Err(src.err(
                k.span(),
                format!("parameter `{}` is both fixed and swept", k.get_ref()),
            ));
        }
        if vals.get_ref().is_empty() {
            return Err(src.err(vals.span(), format!("sweep `{}` is empty", k.get_ref())));
        }
        let def = bench
            .params()
            .iter()
            .find(|p| p.name == k.get_ref())
            .expect("known");
        let mut seen = HashSet::new();
        for v in vals.get_ref() {
            let parsed = def
                .ty
                .parse(v.get_ref())
                .map_err(|e| src.err(v.span(), format!("sweep `{}`: {e}", k.get_ref())))?;
            if !seen.insert(parsed.to_string()) {
                return Err(src.err(
                    v.span(),
                    format!("sweep `{}`: duplicate value", k.get_ref()),
                ));
            }
        }
        sweep.push((
            k.get_ref().clone(),
            vals.get_ref().iter().map(|v| v.get_ref().clone()).collect(),
        ));
    }
    let label_params = sweep.iter().map(|(k, _)| k.clone()).collect();
    Ok(BenchSpec {
        display,
        bench,
        fixed,
        sweep,
        label_params,
        samples: positive(src, &d.samples, "samples", 1)?,
    })
}

/// A plan from command-line arguments such as `getppid:cpu=0 getuid`.
pub fn adhoc(specs: &[String]) -> anyhow::Result<Plan> {
    let mut benches = Vec::new();
    for s in specs {
        benches.push((s.clone(), adhoc_spec(s)?));
    }
    adhoc_plan(benches)
}

/// One `NAME[:k=v,...]` or `TESTCASE.c[:k=v,...]` argument as a bench of
/// an ad-hoc plan, its parameters checked.
pub fn adhoc_spec(s: &str) -> anyhow::Result<BenchSpec> {
    let (name, rest) = s.split_once(':').unwrap_or((s, ""));
    let bench = if name.ends_with(".c") {
        bench::scale::cfile::lazy_c_testcase(std::path::Path::new(name))?
    } else {
        bench::find(name).ok_or_else(|| bad_input!("{}", bench::unknown(name)))?
    };
    let fixed: Vec<_> = crate::units::split_assignments(rest)
        .map_err(|e| bad_input!("`{s}`: {e}"))?
        .into_iter()
        .map(|(k, v)| (k, raw_from_str(&v)))
        .collect();
    Params::resolve(&*bench, &fixed).map_err(|e| bad_input!("`{s}`: {e}"))?;
    Ok(BenchSpec {
        display: name.to_string(),
        label_params: fixed.iter().map(|(k, _)| k.clone()).collect(),
        bench,
        fixed,
        sweep: Vec::new(),
        samples: None,
    })
}

/// The ad-hoc plan of command-line arguments, each with the bench it
/// stands for; an argument given twice is refused.
pub fn adhoc_plan(benches: Vec<(String, BenchSpec)>) -> anyhow::Result<Plan> {
    let mut seen = HashSet::new();
    let mut text = Vec::new();
    let mut specs = Vec::new();
    for (arg, b) in benches {
        let mut key = b.display.clone();
        for (k, v) in &b.fixed {
            key.push_str(&format!("|{k}={v}"));
        }
        if !seen.insert(key) {
            return Err(bad_input!("`{arg}` is given twice"));
        }
        text.push(arg);
        specs.push(b);
    }
    Ok(Plan {
        name: "adhoc".into(),
        path: None,
        text: text.join(" "),
        samples: None,
        sample_time: None,
        warmup: None,
        processes: None,
        repeat: Repeat::default(),
        seed: None,
        precision: None,
        factors: Vec::new(),
        benches: specs,
        reboot: None,
        layout: None,
        gate: None,
    })
}

/// Every cell of the plan: each benchmark x applicable factor values x
/// sweep points, in a stable order (the runner shuffles).
pub fn expand(plan: &Plan) -> anyhow::Result<Vec<Cell>> {
    let mut cells = Vec::new();
    for b in &plan.benches {
        // Factors that apply to this benchmark.
        let applicable: Vec<&Factor> = plan
            .factors
            .iter()
            .filter(|f| match &f.apply {
                Apply::Param { param } => b.bench.params().iter().any(|d| d.name == param),
                Apply::Env { var } => {
                    let p = format!("env.{var}");
                    b.bench.params().iter().any(|d| d.name == p)
                }
                Apply::Cpus | Apply::Shell { .. } | Apply::System => true,
            })
            .collect();
        // Dimensions: factor levels, then sweep points.
        let mut dims: Vec<usize> = applicable.iter().map(|f| f.levels.len()).collect();
        dims.extend(b.sweep.iter().map(|(_, v)| v.len()));
        let total: usize = dims.iter().product();
        for idx in 0..total {
            let mut rem = idx;
            let mut pick = vec![0; dims.len()];
            for (i, d) in dims.iter().enumerate().rev() {
                pick[i] = rem % d;
                rem /= d;
            }
            let mut given = b.fixed.clone();
            let mut factors = IndexMap::new();
            let mut cpus = None;
            let mut expect = Vec::new();
            let mut shell = Vec::new();
            for (f, &li) in applicable.iter().zip(&pick) {
                let lv = &f.levels[li];
                factors.insert(f.name.clone(), lv.label.clone());
                match &f.apply {
                    Apply::Param { param } => given.push((param.clone(), lv.raw.clone())),
                    Apply::Cpus => cpus = lv.cpus.clone(),
                    Apply::Env { var } => {
                        given.push((format!("env.{var}"), toml::Value::String(label_of(&lv.raw))))
                    }
                    Apply::Shell { setup, teardown } => {
                        let v = label_of(&lv.raw);
                        let fill =
                            |t: &Option<String>| t.as_ref().map(|t| t.replace("{value}", &v));
                        shell.push(ShellStep {
                            factor: f.name.clone(),
                            label: lv.label.clone(),
                            setup: fill(setup),
                            teardown: fill(teardown),
                        });
                    }
                    Apply::System => expect.push(SystemNeed {
                        factor: f.name.clone(),
                        label: lv.label.clone(),
                        expect: lv.expect.clone(),
                        hint: lv.hint.clone(),
                    }),
                }
            }
            for ((k, vals), &vi) in b.sweep.iter().zip(&pick[applicable.len()..]) {
                given.push((k.clone(), vals[vi].clone()));
            }
            let params = Params::resolve(&*b.bench, &given).map_err(|e| {
                let at: Vec<String> = factors.iter().map(|(k, v)| format!("{k}={v}")).collect();
                bad_input!("bench `{}` [{}]: {e}", b.display, at.join(","))
            })?;
            if let Some(set) = &cpus {
                check_inside(&*b.bench, &params, set)
                    .map_err(|e| bad_input!("bench `{}`: {e}", b.display))?;
            }
            let mut key = b.display.clone();
            for (k, v) in &params.0 {
                key.push_str(&format!("|{k}={v}"));
            }
            for (k, v) in &factors {
                key.push_str(&format!("|@{k}={v}"));
            }
            cells.push(Cell {
                display: b.display.clone(),
                bench: b.bench.clone(),
                params,
                factors,
                cpus,
                label_params: b.label_params.clone(),
                samples: b.samples,
                key,
                expect,
                shell,
            });
        }
    }
    Ok(cells)
}

/// A CPU named by a parameter (`cpu`, a CPU list, an explicit placement)
/// must lie inside the cell's `cpus` factor, or the factor would be
/// silently overridden.
fn check_inside(bench: &dyn bench::Bench, params: &Params, set: &CpuSet) -> Result<(), String> {
    use crate::bench::{ParamType, Value};
    for d in bench.params() {
        let named = match (d.ty, params.get(d.name)) {
            (ParamType::Cpu, Some(Value::Int(c))) => vec![*c as usize],
            (ParamType::Placement, Some(Value::Str(s))) => {
                CpuSet::parse(s).map(|c| c.0).unwrap_or_default()
            }
            _ => continue,
        };
        if let Some(c) = named.iter().find(|c| !set.0.contains(c)) {
            return Err(format!(
                "parameter `{}` names CPU {c}, outside the cell's cpus `{set}`",
                d.name
            ));
        }
    }
    Ok(())
}

/// Would `std::process::Command::new(prog)` find `prog`: a path that
/// exists, or an executable file in a directory of `PATH`.
fn program_exists(prog: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.contains('/') {
        return executable(std::path::Path::new(prog));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(prog))))
}

#[cfg(test)]
mod tests {
    use crate::plan::{expand, parse};

    fn err(text: &str) -> String {
        format!("{:#}", parse(text, "p.toml").unwrap_err())
    }

    #[test]
    fn expands_factors_and_sweeps() {
        let p = parse(
            r#"
name = "t"
samples = 3
[factors]
cpus = { apply = "cpus", values = ["0", "0"], labels = ["a", "b"] }
[[bench]]
use = "getppid"
sweep = { cpu = [0] }
[[bench]]
use = "getuid"
"#,
            "p.toml",
        )
        .unwrap();
        let cells = expand(&p).unwrap();
        assert_eq!(cells.len(), 4);
        assert_eq!(cells[0].factors["cpus"], "a");
        assert_eq!(cells[0].label_params, vec!["cpu"]);
        let keys: std::collections::HashSet<_> = cells.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), 4);
    }

    #[test]
    fn every_factor_kind_expands() {
        let p = parse(
            r#"
name = "t"
[factors]
opt = { apply = "param", param = "flags", values = { none = "", o2 = "-O2" } }
cc = { apply = "env", var = "CC", values = ["gcc", "clang"] }
thp = { apply = "shell", values = ["never"], setup = "echo {value} > /x", teardown = "true" }
pti = { apply = "system", probe = "cmdline.nopti", values = { on = "absent", off = "present" }, hint = { off = "boot with `nopti`" } }
[[bench]]
name = "build"
command = ["make", "CFLAGS={flags}", "-j{jobs}"]
params = { flags = "-O0" }
sweep = { jobs = [1, 2] }
[[bench]]
use = "getppid"
"#,
            "p.toml",
        )
        .unwrap();
        let cells = expand(&p).unwrap();
        // build: 2 opt x 2 cc x 1 thp x 2 pti x 2 jobs; getppid: thp x pti.
        assert_eq!(cells.len(), 16 + 2);
        let c = &cells[0];
        assert_eq!(c.params.get("flags").unwrap().to_string(), "");
        assert_eq!(c.params.get("env.CC").unwrap().to_string(), "gcc");
        assert_eq!(c.shell[0].setup.as_deref(), Some("echo never > /x"));
        assert_eq!(c.expect[0].expect[0].1, "absent");
        let off = cells.iter().find(|c| c.factors["pti"] == "off").unwrap();
        assert_eq!(off.expect[0].hint.as_deref(), Some("boot with `nopti`"));
        let g = cells.iter().find(|c| c.display == "getppid").unwrap();
        assert!(!g.factors.contains_key("cc") && g.factors.contains_key("pti"));
        assert_eq!(p.probes().len(), 1);
        let mut r = indexmap::IndexMap::new();
        r.insert("cmdline.nopti".to_string(), "absent".to_string());
        assert!(c.runnable(&r));
        assert!(!off.runnable(&r));
    }

    #[test]
    fn factor_kind_errors() {
        let e = err(
            "name = \"t\"\n[factors]\ns = { apply = \"system\", values = [\"x\"] }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(e.contains("set `probe`"), "{e}");
        let e = err(
            "name = \"t\"\n[factors]\ns = { apply = \"shell\", values = [\"x\"] }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(e.contains("needs `setup` and/or `teardown`"), "{e}");
        let e = err(
            "name = \"t\"\n[factors]\ns = { apply = \"cpus\", values = [\"0\"], probe = \"smt\" }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(
            e.contains("`probe` only goes with apply = \"system\""),
            "{e}"
        );
        let e =
            err("name = \"t\"\n[[bench]]\nname = \"x\"\ncommand = [\"true\"]\nuse = \"getppid\"\n");
        assert!(e.contains("either `use` or `command`"), "{e}");
        let e = err("name = \"t\"\n[[bench]]\nuse = \"getppid\"\ntimeout = 3\n");
        assert!(
            e.starts_with("p.toml:4:11: `timeout` goes with a command"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_line_and_key() {
        let e = err("name = \"t\"\n[[bench]]\nuse = \"nope\"\n");
        assert!(e.starts_with("p.toml:3:7: unknown benchmark `nope`"), "{e}");
        let e = err("name = \"t\"\nbogus = 1\n[[bench]]\nuse = \"getppid\"\n");
        assert!(e.starts_with("p.toml:2:1:") && e.contains("bogus"), "{e}");
        let e = err("name = \"t\"\nsamples = \"x\"\n[[bench]]\nuse = \"getppid\"\n");
        assert!(e.starts_with("p.toml:2:11:"), "{e}");
        let e = err(
            "name = \"t\"\n[factors]\nc = { apply = \"cpus\", values = [] }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(e.starts_with("p.toml:3:") && e.contains("empty"), "{e}");
        let e = err("name = \"t\"\n[[bench]]\nuse = \"getppid\"\nparams = { cpux = 0 }\n");
        assert!(e.starts_with("p.toml:4:12:") && e.contains("cpux"), "{e}");
        let e = err("name = \"t\"\n[[bench]]\nuse = \"getppid\"\n[[bench]]\nuse = \"getppid\"\n");
        assert!(e.contains("duplicate bench name"), "{e}");
        let e = err(
            "name = \"t\"\n[factors]\nc = { apply = \"cpus\", values = [\"0-99\"] }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(e.contains("not online"), "{e}");
        let e = err(
            "name = \"t\"\n[factors]\nx = { apply = \"param\", values = [1] }\n[[bench]]\nuse = \"getppid\"\n",
        );
        assert!(
            e.contains("no benchmark in this plan has a parameter `x`"),
            "{e}"
        );
    }
}
