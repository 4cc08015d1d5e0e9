//! Semantic checks after parsing, and expansion of a plan into cells.

use indexmap::IndexMap;
use std::collections::HashSet;

use super::{Apply, BenchFile, BenchSpec, Cell, Factor, FactorFile, Level, Plan, PlanFile, Source};
use crate::bench::{self, Params, params::raw_from_str};
use crate::error::bad_input;
use crate::units::{CpuSet, parse_percent};

fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

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
            format!("`{key}` must be >= {min}, found {}", s.get_ref()),
        )),
    }
}

pub(super) fn validate(file: PlanFile, src: &Source) -> anyhow::Result<Plan> {
    let name = file.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(src.err(file.name.span(), "`name` must not be empty"));
    }
    let samples = positive(src, &file.samples, "samples", 1)?;
    let warmup = positive(src, &file.warmup, "warmup", 0)?;
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

    let mut benches = Vec::new();
    let mut names = HashSet::new();
    for b in &file.bench {
        let spec = bench_spec(src, b)?;
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

    let plan = Plan {
        name,
        path: None,
        text: src.text.to_string(),
        samples,
        sample_time,
        warmup,
        seed: file.seed,
        precision,
        factors,
        benches,
    };
    // Expanding resolves every cell's parameters: the benchmark's own
    // cross-checks run now, before anything is measured.
    expand(&plan).map_err(|e| bad_input!("{}: {e:#}", src.name))?;
    Ok(plan)
}

fn factor(
    src: &Source,
    fname: &toml::Spanned<String>,
    fdef: &toml::Spanned<FactorFile>,
) -> anyhow::Result<Factor> {
    let name = fname.get_ref().clone();
    let d = fdef.get_ref();
    let apply = match d.apply.get_ref().as_str() {
        "param" => Apply::Param {
            param: d
                .param
                .as_ref()
                .map(|p| p.get_ref().clone())
                .unwrap_or_else(|| name.clone()),
        },
        "cpus" => Apply::Cpus,
        kind @ ("env" | "shell" | "system") => {
            return Err(src.err(
                d.apply.span(),
                format!("factor `{name}`: apply = \"{kind}\" is not supported yet"),
            ));
        }
        other => {
            return Err(src.err(
                d.apply.span(),
                format!("factor `{name}`: unknown apply `{other}` (expected param, env, cpus, shell or system)"),
            ));
        }
    };
    if let Some(p) = &d.param
        && !matches!(apply, Apply::Param { .. })
    {
        return Err(src.err(
            p.span(),
            format!("factor `{name}`: `param` only goes with apply = \"param\""),
        ));
    }
    let values = match d.values.get_ref() {
        toml::Value::Array(a) => a.clone(),
        other => {
            return Err(src.err(
                d.values.span(),
                format!(
                    "factor `{name}`: `values` must be a list, found {}",
                    other.type_str()
                ),
            ));
        }
    };
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
        None => values.iter().map(label_of).collect(),
    };
    let mut seen = HashSet::new();
    let mut levels = Vec::new();
    for (v, label) in values.into_iter().zip(labels) {
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
        });
    }
    Ok(Factor {
        name,
        apply,
        levels,
    })
}

fn bench_spec(src: &Source, b: &toml::Spanned<BenchFile>) -> anyhow::Result<BenchSpec> {
    let d = b.get_ref();
    // `testcase = "FILE.c"`: a will-it-scale C file, relative to the plan.
    if let (Some(tc), None) = (&d.testcase, &d.use_) {
        let base = std::path::Path::new(&src.name).parent();
        let path = base.map_or_else(|| tc.get_ref().into(), |b| b.join(tc.get_ref()));
        let bench = bench::scale::cfile::load_c_testcase(&path)
            .map_err(|e| src.err(tc.span(), format!("{e:#}")))?;
        return finish_spec(src, d, bench, tc.get_ref().clone());
    }
    let Some(use_) = &d.use_ else {
        return Err(src.err(
            b.span(),
            "[[bench]] needs `use = \"BENCHMARK\"` (see `kbench list`) or `testcase = \"FILE.c\"`",
        ));
    };
    if let Some(tc) = &d.testcase {
        return Err(src.err(tc.span(), "`testcase` and `use` exclude each other"));
    }
    let bench = bench::find(use_.get_ref()).ok_or_else(|| {
        src.err(
            use_.span(),
            format!("unknown benchmark `{}` (see `kbench list`)", use_.get_ref()),
        )
    })?;
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
            let names: Vec<&str> = bench.params().iter().map(|p| p.name).collect();
            Err(src.err(
                k.span(),
                format!(
                    "unknown parameter `{}` for `{}` (known: {})",
                    k.get_ref(),
                    bench.name(),
                    if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    }
                ),
            ))
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
    let mut seen = HashSet::new();
    for s in specs {
        let (name, rest) = s.split_once(':').unwrap_or((s.as_str(), ""));
        let bench = if name.ends_with(".c") {
            bench::scale::cfile::load_c_testcase(std::path::Path::new(name))?
        } else {
            bench::find(name).ok_or_else(|| {
                bad_input!(
                    "unknown benchmark `{name}` (known: {})",
                    bench::names().join(", ")
                )
            })?
        };
        let mut fixed = Vec::new();
        for kv in rest.split(',').filter(|x| !x.is_empty()) {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| bad_input!("`{s}`: expected k=v, found `{kv}`"))?;
            fixed.push((k.trim().to_string(), raw_from_str(v.trim())));
        }
        Params::resolve(&*bench, &fixed).map_err(|e| bad_input!("`{s}`: {e}"))?;
        let key = format!("{name}:{rest}");
        if !seen.insert(key) {
            return Err(bad_input!("`{s}` is given twice"));
        }
        benches.push(BenchSpec {
            display: name.to_string(),
            label_params: fixed.iter().map(|(k, _)| k.clone()).collect(),
            bench,
            fixed,
            sweep: Vec::new(),
            samples: None,
        });
    }
    Ok(Plan {
        name: "adhoc".into(),
        path: None,
        text: specs.join(" "),
        samples: None,
        sample_time: None,
        warmup: None,
        seed: None,
        precision: None,
        factors: Vec::new(),
        benches,
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
                Apply::Cpus => true,
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
            for (f, &li) in applicable.iter().zip(&pick) {
                let lv = &f.levels[li];
                factors.insert(f.name.clone(), lv.label.clone());
                match &f.apply {
                    Apply::Param { param } => given.push((param.clone(), lv.raw.clone())),
                    Apply::Cpus => cpus = lv.cpus.clone(),
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
            (ParamType::CpuList | ParamType::Placement, Some(Value::Str(s))) => {
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
