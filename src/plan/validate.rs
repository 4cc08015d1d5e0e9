//! Semantic checks after parsing, and expansion of a plan into cells.

use indexmap::IndexMap;
use std::collections::HashSet;

use super::{
    Apply, BenchSpec, Cell, Factor, Plan, PlanFile, Repeat, ShellStep, Source, SystemNeed,
};
use crate::bench::command::spec::{self, BenchFile};
use crate::bench::params::{label_of, raw_from_str};
use crate::bench::{self, BenchRef, Params};
use crate::error::bad_input;
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
        factors.push(super::factor::factor(src, fname, fdef)?);
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
    check_cells(&file, src, &factors, &benches)?;
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

/// Most cells a plan may expand to unless its `max_cells` says more: each
/// cell is a few hundred bytes before it is measured (and every sample a
/// row), so a plan of four env factors of 1,000 values (10^12 cells) is
/// refused when it is read, not when memory runs out.
pub const MAX_CELLS: u64 = 100_000;

/// The plan's cells, counted without building them (saturating: a count
/// past `u64::MAX` reads as `u64::MAX`).
fn cell_count(factors: &[Factor], benches: &[BenchSpec]) -> u64 {
    benches
        .iter()
        .map(|b| {
            applicable(factors, b)
                .iter()
                .map(|f| f.levels.len() as u64)
                .chain(b.sweep.iter().map(|(_, v)| v.len() as u64))
                .fold(1u64, u64::saturating_mul)
        })
        .fold(0u64, u64::saturating_add)
}

/// More cells than the plan's `max_cells` (default [`MAX_CELLS`]) is bad
/// input, found before any cell is built.
fn check_cells(
    file: &PlanFile,
    src: &Source,
    factors: &[Factor],
    benches: &[BenchSpec],
) -> anyhow::Result<()> {
    let limit = match &file.max_cells {
        Some(m) if *m.get_ref() < 1 => {
            return Err(src.err(
                m.span(),
                format!("`max_cells` must be at least 1, found {}", m.get_ref()),
            ));
        }
        Some(m) => *m.get_ref() as u64,
        None => MAX_CELLS,
    };
    let n = cell_count(factors, benches);
    if n <= limit {
        return Ok(());
    }
    let count = if n == u64::MAX {
        format!("more than {}", u64::MAX - 1)
    } else {
        n.to_string()
    };
    let remedy = if file.max_cells.is_some() {
        "raise `max_cells`, or use fewer factor values or sweep points"
    } else {
        "use fewer factor values or sweep points, or set `max_cells` in the plan"
    };
    Err(bad_input!(
        "{}: the plan expands to {count} cells, over the limit of {limit} ({remedy})",
        src.name
    ))
}

/// The factors that apply to a benchmark: every `cpus`, `shell` and
/// `system` factor, a `param` factor naming one of its parameters, an
/// `env` factor of a command.
fn applicable<'a>(factors: &'a [Factor], b: &BenchSpec) -> Vec<&'a Factor> {
    factors
        .iter()
        .filter(|f| match &f.apply {
            Apply::Param { param } => b.bench.params().iter().any(|d| d.name == param),
            Apply::Env { var } => {
                let p = format!("env.{var}");
                b.bench.params().iter().any(|d| d.name == p)
            }
            Apply::Cpus | Apply::Shell { .. } | Apply::System => true,
        })
        .collect()
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
        let applicable = applicable(&plan.factors, b);
        // Dimensions: factor levels, then sweep points.
        let mut dims: Vec<usize> = applicable.iter().map(|f| f.levels.len()).collect();
        dims.extend(b.sweep.iter().map(|(_, v)| v.len()));
        let total = dims.iter().fold(1usize, |a, &d| a.saturating_mul(d));
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
            // The key is shown and stored: a secret parameter (an env
            // value of a secret name) is its mask.
            let mut key = b.display.clone();
            for (k, v) in &params.0 {
                let v = v.to_string();
                key.push_str(&format!("|{k}={}", crate::redact::value(k, &v)));
            }
            for (k, v) in &factors {
                key.push_str(&format!("|@{k}={v}"));
            }
            let key = crate::redact::text(&key).into_owned();
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

    /// Each key one kind owns, given to another kind, and an unknown
    /// `apply`: the whole line, position included.
    #[test]
    fn a_key_of_another_kind_is_refused_whole() {
        let plan = |f: &str| {
            format!("name = \"t\"\n[factors]\nf = {{ {f} }}\n[[bench]]\nuse = \"getppid\"\n")
        };
        for (given, key, owner) in [
            (
                "apply = \"cpus\", values = [\"0\"], param = \"x\"",
                "param",
                "param",
            ),
            (
                "apply = \"cpus\", values = [\"0\"], var = \"X\"",
                "var",
                "env",
            ),
            (
                "apply = \"param\", param = \"cpu\", values = [0], probe = \"smt\"",
                "probe",
                "system",
            ),
            (
                "apply = \"cpus\", values = [\"0\"], hint = { a = \"b\" }",
                "hint",
                "system",
            ),
            (
                "apply = \"system\", probe = \"smt\", values = [\"on\"], setup = \"x\"",
                "setup",
                "shell",
            ),
            (
                "apply = \"cpus\", values = [\"0\"], teardown = \"x\"",
                "teardown",
                "shell",
            ),
        ] {
            let text = plan(given);
            let col = text.find(&format!("{key} =")).unwrap() - text.find("f = ").unwrap()
                + key.len()
                + 4;
            assert_eq!(
                err(&text),
                format!("p.toml:3:{col}: factor `f`: `{key}` only goes with apply = \"{owner}\""),
                "{given}"
            );
        }
        // The first key in the file's order is the one named.
        let e = err(&plan(
            "apply = \"cpus\", values = [\"0\"], teardown = \"x\", hint = { a = \"b\" }",
        ));
        assert!(e.contains("`hint` only goes with"), "{e}");
        assert_eq!(
            err(&plan("apply = \"sytem\", values = [\"0\"]")),
            "p.toml:3:15: factor `f`: unknown apply `sytem`; did you mean `system`? \
             (known: param, env, cpus, shell, system)"
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
