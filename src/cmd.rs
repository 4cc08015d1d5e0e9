//! One function per subcommand; `dispatch` is the testable entry point
//! behind `main`.

use anyhow::Context;
use clap::Parser;
use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use crate::bench::{self, Bench};
use crate::cli::{Cli, Command, RunArgs};
use crate::error::bad_input;
use crate::report::{self, RunReport};
use crate::runner::{self, Outcome, RunOptions};
use crate::store;
use crate::system;

/// Benchmarks of the default suite (`kbench run` with no argument).
const DEFAULT_SUITE: &[&str] = &[
    "getppid",
    "getpid",
    "getuid",
    "null-syscall",
    "clock-gettime",
    "gettimeofday",
];

pub fn dispatch(args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    // ministat keeps its own getopt syntax (`-c95`, `-Anq`), so its words
    // bypass clap entirely.
    if args.get(1).is_some_and(|a| a == "ministat") {
        return crate::ministat::main(&args[2..]);
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            // Help and version go to stdout with 0; usage errors exit 2.
            let code = if e.use_stderr() { 2 } else { 0 };
            e.print()?;
            return Ok(ExitCode::from(code));
        }
    };
    // An empty KBENCH_DB= means "not set", not an anonymous temporary store.
    let db = cli.db.as_deref().filter(|s| !s.is_empty());
    match cli.command {
        Command::Run(a) => run(a, db),
        Command::List { json } => list(json),
        Command::Sysinfo { json } => sysinfo(json),
        Command::Runs { json } => runs(db, json),
        Command::Status { plan, resume_unit } => status(db, &plan, resume_unit),
        Command::Report { runs, json } => report(db, &runs, json),
        Command::Compare {
            operands,
            test,
            confidence,
            margin,
            json,
        } => compare(db, &operands, test, confidence, &margin, json),
        Command::Ministat { args } => crate::ministat::main(&args),
    }
}

fn out(text: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()?;
    Ok(())
}

fn run(a: RunArgs, db: Option<&str>) -> anyhow::Result<ExitCode> {
    let (plan, default_suite) = match a.specs.as_slice() {
        [] => {
            let specs: Vec<String> = DEFAULT_SUITE.iter().map(|s| s.to_string()).collect();
            (crate::plan::adhoc(&specs)?, true)
        }
        [one] if one.ends_with(".toml") => (crate::plan::load(std::path::Path::new(one))?, false),
        many => {
            if let Some(p) = many.iter().find(|s| s.ends_with(".toml")) {
                return Err(bad_input!(
                    "`{p}`: a plan file must be the only argument of `kbench run`"
                ));
            }
            (crate::plan::adhoc(many)?, false)
        }
    };
    let quick = a.quick || default_suite;
    // --quick caps the plan's settings (a first look at a big plan);
    // explicit flags still win.
    let samples = a.samples.unwrap_or(match (quick, plan.samples) {
        (true, p) => p.unwrap_or(5).min(5),
        (false, p) => p.unwrap_or(10),
    });
    let sample_time = a.sample_time.unwrap_or(match (quick, plan.sample_time) {
        (true, p) => p.unwrap_or(0.05).min(0.05),
        (false, p) => p.unwrap_or(0.2),
    });
    if !(sample_time > 0.0 && sample_time <= 3600.0) {
        return Err(bad_input!(
            "--sample-time {sample_time}: must be in (0, 3600] seconds"
        ));
    }
    if samples == 0 {
        return Err(bad_input!("--samples 0: need at least one sample"));
    }
    let precision = match &a.precision {
        Some(p) => {
            Some(crate::units::parse_percent(p).map_err(|e| bad_input!("--precision: {e}"))?)
        }
        None => plan.precision,
    };
    let stop = if precision.is_some() || a.until_verdict {
        let max_samples = a.max_samples.unwrap_or(100);
        if max_samples < 2 {
            return Err(bad_input!("--max-samples {max_samples}: need at least 2"));
        }
        if let Some(t) = a.max_time
            && (t.is_nan() || t <= 0.0)
        {
            return Err(bad_input!("--max-time {t}: must be positive"));
        }
        Some(runner::adaptive::StopRule {
            precision: precision.unwrap_or(0.01),
            max_samples,
            max_time: a.max_time,
            until_verdict: a.until_verdict,
        })
    } else {
        if a.max_samples.is_some() || a.max_time.is_some() {
            return Err(bad_input!(
                "--max-samples and --max-time go with --precision or --until-verdict"
            ));
        }
        None
    };
    let opts = RunOptions {
        stop,
        samples,
        sample_time,
        warmup: a.warmup.unwrap_or(match (quick, plan.warmup) {
            (true, p) => p.unwrap_or(1).min(1),
            (false, p) => p.unwrap_or(2),
        }),
        seed: a.seed.or(plan.seed).unwrap_or_else(runner::fresh_seed),
        quiet: a.quiet,
        force: a.force,
        argv: std::env::args().collect(),
    };
    let mut st = store::open(db)?;
    if plan.path.is_some() {
        // An edited plan is refused before anything is measured or printed.
        runner::campaign::check(st.as_ref(), &plan, a.force)?;
    }
    let fp = system::fingerprint();
    if !a.quiet {
        for w in fp.warnings() {
            eprintln!("kbench: warning: {w}");
        }
    }
    let (summary, outcome) = runner::run(&plan, &opts, st.as_mut(), &fp)?;
    let plan_arg = a.specs.first().cloned().unwrap_or_default();
    if summary.pending > 0 && !a.quiet {
        eprintln!(
            "kbench: {} cell(s) wait for another system state; `kbench status {plan_arg}` says what they need",
            summary.pending
        );
    }
    let Some(run_id) = summary.run_id else {
        // Nothing left to measure on this system: say where the campaign
        // stands instead of recording an empty run.
        eprintln!(
            "kbench: nothing to run here: {} cell(s) done, {} pending",
            summary.done, summary.pending
        );
        if a.json
            && let Some(c) = runner::campaign::find(st.as_ref(), &plan)?
        {
            let d = st.load_campaign(c.id)?;
            out(&format!("{:#}\n", report::campaign_json(&d)))?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let rep = RunReport::build(st.load_run(run_id)?);
    if a.json {
        out(&format!("{:#}\n", report::json::value(&rep)))?;
    } else {
        out(&report::text::render(&rep))?;
    }
    Ok(match outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::Interrupted => {
            eprintln!(
                "kbench: interrupted; the samples measured so far are stored in run {run_id}"
            );
            ExitCode::from(1)
        }
        Outcome::Failed => {
            eprintln!("kbench: some cells failed (see above); run {run_id} keeps the rest");
            ExitCode::from(1)
        }
    })
}

fn list(json: bool) -> anyhow::Result<ExitCode> {
    if json {
        let v: Vec<serde_json::Value> = bench::BENCHES.iter().map(|b| bench_json(*b)).collect();
        out(&format!("{:#}\n", serde_json::Value::Array(v)))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut s = String::new();
    for b in bench::BENCHES {
        let metrics: Vec<String> = b
            .metrics()
            .iter()
            .map(|m| format!("{} [{}], {}", m.name, m.unit, m.direction))
            .collect();
        s.push_str(&format!(
            "{} ({:?}): {}\n",
            b.name(),
            b.kind(),
            metrics.join("; ")
        ));
        s.push_str(&format!("    {}\n", b.description()));
        for p in b.params() {
            s.push_str(&format!(
                "    {:<12} {:<24} default {:<10} {}\n",
                p.name,
                p.ty.describe(),
                p.default.unwrap_or("(none)"),
                p.help
            ));
        }
    }
    out(&s)?;
    Ok(ExitCode::SUCCESS)
}

fn bench_json(b: &dyn Bench) -> serde_json::Value {
    serde_json::json!({
        "name": b.name(),
        "kind": b.kind(),
        "description": b.description(),
        "metrics": b.metrics().iter().map(|m| serde_json::json!({
            "name": m.name, "unit": m.unit, "direction": m.direction,
        })).collect::<Vec<_>>(),
        "params": b.params().iter().map(|p| serde_json::json!({
            "name": p.name, "type": p.ty.describe(), "default": p.default, "help": p.help,
        })).collect::<Vec<_>>(),
    })
}

fn sysinfo(json: bool) -> anyhow::Result<ExitCode> {
    let fp = system::fingerprint();
    let warnings = fp.warnings();
    if json {
        let mut v = serde_json::to_value(&fp)?;
        v["warnings"] = serde_json::to_value(&warnings)?;
        out(&format!("{v:#}\n"))?;
        return Ok(ExitCode::SUCCESS);
    }
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "unknown".into());
    let mut s = String::new();
    let mut kv = |k: &str, v: String| s.push_str(&format!("{k:<16} {v}\n"));
    kv("host", fp.hostname.clone());
    kv("os", format!("{} ({})", fp.os, opt(&fp.os_release)));
    kv(
        "kernel",
        format!("{} {}", fp.kernel_release, fp.kernel_version),
    );
    kv("cmdline", opt(&fp.cmdline));
    kv("cpu", opt(&fp.cpu_model));
    kv(
        "cpu id",
        format!(
            "{} family {} model {} stepping {}",
            opt(&fp.cpu_vendor),
            fp.cpu_family.map_or("?".into(), |v| v.to_string()),
            fp.cpu_model_number.map_or("?".into(), |v| v.to_string()),
            fp.cpu_stepping.map_or("?".into(), |v| v.to_string())
        ),
    );
    kv("microcode", opt(&fp.microcode));
    kv(
        "topology",
        format!(
            "{} socket(s), {} core(s), {} thread(s), online {}, SMT {}",
            fp.sockets,
            fp.cores,
            fp.threads,
            fp.online_cpus,
            opt(&fp.smt)
        ),
    );
    kv("numa nodes", fp.numa_nodes.to_string());
    kv(
        "memory",
        format!("{:.1} GiB", fp.memory_bytes as f64 / (1u64 << 30) as f64),
    );
    kv(
        "cpufreq",
        format!(
            "driver {}, governor {}",
            opt(&fp.cpufreq_driver),
            opt(&fp.governor)
        ),
    );
    kv(
        "boost",
        fp.boost
            .map_or("unknown".into(), |b| if b { "on" } else { "off" }.into()),
    );
    kv("thp", opt(&fp.thp));
    kv("clocksource", opt(&fp.clocksource));
    kv(
        "hypervisor",
        fp.hypervisor.clone().unwrap_or_else(|| "none".into()),
    );
    kv(
        "load average",
        format!("{} {} {}", fp.loadavg[0], fp.loadavg[1], fp.loadavg[2]),
    );
    s.push_str("vulnerabilities:\n");
    for (k, v) in &fp.vulnerabilities {
        s.push_str(&format!("  {k:<26} {v}\n"));
    }
    if warnings.is_empty() {
        s.push_str("noise warnings: none\n");
    } else {
        s.push_str("noise warnings:\n");
        for w in &warnings {
            s.push_str(&format!("  - {w}\n"));
        }
    }
    out(&s)?;
    Ok(ExitCode::SUCCESS)
}

fn runs(db: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let st = store::open(db)?;
    let rows = st.list_runs()?;
    if json {
        out(&format!("{:#}\n", serde_json::to_value(&rows)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut s = format!(
        "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  {}\n",
        "id", "campaign", "host", "start", "cells", "samples", "status"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  {}\n",
            r.id,
            r.campaign.as_deref().unwrap_or("-"),
            r.host,
            report::text::fmt_time(r.started),
            r.cells,
            r.samples,
            r.status
        ));
    }
    out(&s)?;
    Ok(ExitCode::SUCCESS)
}

fn status(db: Option<&str>, plan_arg: &str, resume_unit: bool) -> anyhow::Result<ExitCode> {
    let plan = crate::plan::load(std::path::Path::new(plan_arg))?;
    if resume_unit {
        let path = db
            .map(std::path::PathBuf::from)
            .unwrap_or_else(store::default_path);
        out(&runner::campaign::resume_unit(&plan, &path)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let st = store::open(db)?;
    let s = runner::campaign::status(st.as_ref(), &plan, plan.samples.unwrap_or(10))?;
    out(&runner::campaign::render(&s, &plan, plan_arg))?;
    Ok(ExitCode::SUCCESS)
}

/// A campaign named on the command line: `campaign:ID`, a plan file, or a
/// name (its latest campaign).
fn find_campaign(st: &dyn store::Store, spec: &str) -> anyhow::Result<i64> {
    if let Some(id) = spec.strip_prefix("campaign:") {
        return id
            .parse()
            .map_err(|_| bad_input!("`{spec}`: expected campaign:ID"));
    }
    if spec.ends_with(".toml") {
        let plan = crate::plan::load(std::path::Path::new(spec))?;
        return runner::campaign::find(st, &plan)?
            .map(|c| c.id)
            .ok_or_else(|| {
                bad_input!("{spec}: no campaign for this plan yet; `kbench run {spec}` starts it")
            });
    }
    st.campaigns(Some(spec))?
        .last()
        .map(|c| c.id)
        .ok_or_else(|| bad_input!("no run or campaign `{spec}` in the store (see `kbench runs`)"))
}

fn report(db: Option<&str>, specs: &[String], json: bool) -> anyhow::Result<ExitCode> {
    let st = store::open(db)?;
    if let [one] = specs
        && one.parse::<i64>().is_err()
    {
        let d = st.load_campaign(find_campaign(st.as_ref(), one)?)?;
        if json {
            out(&format!("{:#}\n", report::campaign_json(&d)))?;
        } else {
            out(&report::campaign_text(&d))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let ids: Vec<i64> = if specs.is_empty() {
        vec![
            st.last_run_id()?
                .ok_or_else(|| bad_input!("the store has no runs yet; try `kbench run`"))?,
        ]
    } else {
        specs
            .iter()
            .map(|s| {
                s.parse::<i64>()
                    .map_err(|_| bad_input!("`{s}`: give run ids, or one campaign alone"))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let mut reports = Vec::new();
    for id in ids {
        reports.push(RunReport::build(
            st.load_run(id)
                .with_context(|| format!("loading run {id}"))?,
        ));
    }
    if json {
        let v: Vec<serde_json::Value> = reports.iter().map(report::json::value).collect();
        let v = if v.len() == 1 {
            v.into_iter().next().expect("one")
        } else {
            serde_json::Value::Array(v)
        };
        out(&format!("{v:#}\n"))?;
    } else {
        let texts: Vec<String> = reports.iter().map(report::text::render).collect();
        out(&texts.join("\n"))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn compare(
    db: Option<&str>,
    operands: &[String],
    test: report::compare::Test,
    confidence: f64,
    margin: &str,
    json: bool,
) -> anyhow::Result<ExitCode> {
    use report::compare::{Selection, filter, parse_operand};
    if !(80.0..=99.5).contains(&confidence) {
        return Err(bad_input!(
            "--confidence {confidence}: must be within 80..99.5"
        ));
    }
    let margin = crate::units::parse_percent(margin).map_err(|e| bad_input!("--margin: {e}"))?;
    let st = store::open(db)?;
    let mut sels = Vec::new();
    // Operands often narrow the same run or campaign: load each once.
    let mut loaded: std::collections::HashMap<String, Vec<_>> = Default::default();
    for spec in operands {
        let (name, filters) = parse_operand(spec)?;
        if !loaded.contains_key(&name) {
            let cells = match name.parse::<i64>() {
                Ok(id) => st.load_run(id)?.cells,
                Err(_) => st.load_campaign(find_campaign(st.as_ref(), &name)?)?.cells,
            };
            loaded.insert(name.clone(), cells);
        }
        let cells = loaded[&name].clone();
        sels.push(Selection {
            name: spec.clone(),
            fixed: filters.iter().map(|(k, _)| k.clone()).collect(),
            cells: filter(spec, cells, &filters)?,
        });
    }
    let c = report::compare::compare(&sels, test, confidence, margin)?;
    if json {
        out(&format!("{:#}\n", serde_json::to_value(&c)?))?;
    } else {
        out(&report::compare::render_text(&c))?;
    }
    Ok(ExitCode::SUCCESS)
}
