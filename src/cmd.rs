//! One function per subcommand; `dispatch` is the testable entry point
//! behind `main`. Each command builds a model and prints it through
//! `report::render` in the chosen format; nothing here formats output.

use clap::Parser;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::bench;
use crate::cli::{
    Cli, Command, CompletionShell, EventsFormat, FleetCommand, RunArgs, StoreCommand,
};
use crate::error::bad_input;
use crate::event::{self, Sink};
use crate::record::{RunConfig, RunStatus, StopRule};
use crate::report::{self, BenchInfo, Document, Format, Sysinfo};
use crate::runner;
use crate::select;
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
        // Help and version go to stdout with 0.
        Err(e) if !e.use_stderr() => {
            e.print()?;
            return Ok(ExitCode::SUCCESS);
        }
        // A usage error is one line, like every other bad input.
        Err(e) => return Err(bad_input!("{}", usage_error(&e, &args))),
    };
    // An empty KBENCH_DB= means "not set", not an anonymous temporary store.
    let db = cli.db.as_deref().filter(|s| !s.is_empty());
    match cli.command {
        Command::Run(a) => run(a, db),
        Command::List { word, json } => list(word.as_deref(), json),
        Command::Sysinfo { json } => {
            let fingerprint = system::fingerprint();
            let s = Sysinfo {
                warnings: fingerprint.warnings(),
                fingerprint,
            };
            print(&Document::Sysinfo(&s), Format::json_if(json))
        }
        Command::Runs { json } => {
            let st = store::open(db, store::Access::Read)?;
            print(
                &Document::Runs(&store::runs(st.as_ref(), None)?),
                Format::json_if(json),
            )
        }
        Command::Status {
            plan,
            resume_unit,
            json,
        } => status(db, &plan, resume_unit, json),
        Command::Report(a) => report(db, &a),
        Command::Ingest { file } => ingest(db, &file),
        Command::Import {
            files,
            from,
            name,
            column,
            delimiters,
            higher,
        } => {
            let o = crate::import::ministat::Options {
                column,
                delims: delimiters.as_bytes(),
                higher,
            };
            import(db, &files, from, name.as_deref(), &o)
        }
        Command::Compare {
            operands,
            test,
            confidence,
            margin,
            expect,
            fdr,
            json,
            format,
            exports,
        } => {
            let adjust = if fdr {
                crate::stats::multiple::Adjust::BenjaminiHochberg
            } else {
                crate::stats::multiple::Adjust::Holm
            };
            compare(
                db,
                &operands,
                CompareHow {
                    test,
                    confidence,
                    margin: &margin,
                    expect: &expect,
                    adjust,
                },
                compare_format(json, format)?,
                &exports,
            )
        }
        Command::Store {
            command:
                StoreCommand::Copy {
                    from,
                    to,
                    campaigns,
                },
        } => store_copy(&from, &to, &campaigns),
        Command::PlanSize {
            pilot,
            margin,
            confidence,
            json,
        } => plan_size(db, &pilot, &margin, confidence, json),
        Command::Fleet { command } => fleet(db, command),
        Command::Bisect(a) => crate::bisect::run(db, &a),
        Command::Completions { shell } => completions(shell),
        Command::Man { command } => man(&command),
        Command::Ministat { args } => crate::ministat::main(&args),
    }
}

/// `kbench list [WORD|NAME]`.
fn list(word: Option<&str>, json: bool) -> anyhow::Result<ExitCode> {
    let all: Vec<BenchInfo> = bench::BENCHES.iter().map(|b| BenchInfo::of(*b)).collect();
    let Some(word) = word else {
        return print(&Document::Benches(&all), Format::json_if(json));
    };
    if let Some(b) = all.iter().find(|b| b.name == word) {
        return print(&Document::Bench(b), Format::json_if(json));
    }
    let w = word.to_lowercase();
    let hit: Vec<BenchInfo> = all
        .iter()
        .filter(|b| {
            [
                Some(b.name.as_str()),
                Some(b.family.as_str()),
                b.reference.as_deref(),
            ]
            .into_iter()
            .flatten()
            .any(|s| s.to_lowercase().contains(&w))
        })
        .cloned()
        .collect();
    if hit.is_empty() {
        return Err(bad_input!(
            "no benchmark matches `{word}`{}",
            crate::suggest::hint(word, &bench::names(), "see `kbench list`")
        ));
    }
    print(&Document::Benches(&hit), Format::json_if(json))
}

/// The completion script for `shell`, generated from the same clap
/// definitions that parse the command line.
fn completions(shell: CompletionShell) -> anyhow::Result<ExitCode> {
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut buf = Vec::new();
    clap_complete::generate(
        clap_complete::Shell::from(shell),
        &mut cmd,
        "kbench",
        &mut buf,
    );
    out(&String::from_utf8(buf)?)?;
    Ok(ExitCode::SUCCESS)
}

/// A man page (roff) generated from the clap definitions: kbench's own,
/// whose SUBCOMMANDS section lists every command as `kbench-NAME(1)`, or
/// that of the command named by `path` (`["fleet", "run"]`).
fn man(path: &[String]) -> anyhow::Result<ExitCode> {
    // As clap_mangen::generate_to does: no page for `help`, and a built
    // command so each subcommand is named `kbench-NAME`.
    let mut cmd = <Cli as clap::CommandFactory>::command().disable_help_subcommand(true);
    cmd.build();
    let mut page = &cmd;
    for word in path {
        page = page.find_subcommand(word).ok_or_else(|| {
            bad_input!(
                "no command `{}` to print the man page of (see `kbench --help`)",
                path.join(" ")
            )
        })?;
    }
    // NAME reads `kbench - what does ...`, not `kbench - kbench: what ...`.
    let mut page = page.clone();
    if let Some(rest) = page
        .get_about()
        .and_then(|a| a.to_string().strip_prefix("kbench: ").map(str::to_owned))
    {
        page = page.about(rest);
    }
    let mut buf = Vec::new();
    // The footer names kbench and its version on every page (a
    // subcommand has no version of its own).
    clap_mangen::Man::new(page)
        .source(format!("kbench {}", env!("CARGO_PKG_VERSION")))
        .manual("kbench manual")
        .render(&mut buf)?;
    out(&String::from_utf8(buf)?)?;
    Ok(ExitCode::SUCCESS)
}

/// clap's usage error as one line: its first line (without the `error:`
/// prefix clap adds), then where help is.
fn usage_error(e: &clap::Error, args: &[OsString]) -> String {
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ");
    let sub = args
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| {
            <Cli as clap::CommandFactory>::command()
                .find_subcommand(a)
                .is_some()
        })
        .map(|a| format!(" {a}"))
        .unwrap_or_default();
    let tip = crate::suggest::clap_tip(e);
    format!("{first}{tip} (see `kbench{sub} --help`)")
}

/// Render a document to stdout.
fn print(doc: &Document<'_>, format: Format) -> anyhow::Result<ExitCode> {
    out(&report::render(doc, format)?)?;
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn out(text: &str) -> anyhow::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())?;
    o.flush()?;
    Ok(())
}

/// The run's settings from the plan and the command line: `--quick` caps
/// the plan's settings (a first look at a big plan), explicit flags win.
fn options(a: &RunArgs, plan: &crate::plan::Plan, quick: bool) -> anyhow::Result<RunConfig> {
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
        Some(StopRule {
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
    let processes = a.processes.or(plan.processes).filter(|&n| n > 1);
    if let Some(n) = processes {
        if stop.is_some() {
            return Err(bad_input!(
                "--processes {n} shares each cell's samples between processes; it does not go with --precision or --until-verdict"
            ));
        }
        if samples < n {
            return Err(bad_input!(
                "--processes {n}: each process needs a sample; ask for at least {n} samples (--samples)"
            ));
        }
    }
    Ok(RunConfig {
        version: RunConfig::VERSION,
        plan: plan.name.clone(),
        stop,
        samples,
        sample_time,
        warmup: a.warmup.unwrap_or(match (quick, plan.warmup) {
            (true, p) => p.unwrap_or(1).min(1),
            (false, p) => p.unwrap_or(2),
        }),
        seed: a.seed.or(plan.seed).unwrap_or_else(crate::ids::fresh_seed),
        force: a.force,
        argv: store::postgres::redact_args(std::env::args()),
        owner: crate::system::owner(),
        processes,
    })
}

/// `run --dry-run`: what the run would measure here and how long it
/// would take; the store is only read (a campaign's progress).
fn dry_run(
    plan: &crate::plan::Plan,
    opts: &RunConfig,
    db: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    // A store `run` would create holds no campaign yet.
    let no_store =
        db.is_some_and(|u| !store::postgres::is_url(u) && !std::path::Path::new(u).exists());
    let have = match &plan.path {
        Some(_) if !no_store => {
            let st = store::open(db, store::Access::Read)?;
            match runner::campaign::find(&*st, plan)? {
                Some(c) if !opts.force => {
                    runner::campaign::progress_on(&*st, c.id, Some(&runner::campaign::this_host()))?
                }
                _ => Default::default(),
            }
        }
        _ => Default::default(),
    };
    let readings = runner::campaign::read_probes(plan);
    let todo = runner::todo(plan, opts, &have, &readings)?;
    let e = runner::estimate::estimate(&todo, opts)?;
    if json {
        println!("{:#}", runner::estimate::json(&e));
    } else {
        print!("{}", runner::estimate::text(&e));
    }
    Ok(ExitCode::SUCCESS)
}

fn run(a: RunArgs, db: Option<&str>) -> anyhow::Result<ExitCode> {
    let commands = crate::spec::CommandOptions::of(&a)?;
    let (plan, default_suite) = match a.specs.as_slice() {
        [] => {
            let specs: Vec<String> = DEFAULT_SUITE.iter().map(|s| s.to_string()).collect();
            (crate::spec::plan(&specs, &commands)?, true)
        }
        words => (crate::spec::plan(words, &commands)?, false),
    };
    if a.json && a.events.is_some() {
        return Err(bad_input!(
            "--json and --events both print on stdout; choose one"
        ));
    }
    let opts = options(&a, &plan, a.quick || default_suite)?;
    let cells = runner::cells(&plan, &opts)?;
    if a.dry_run {
        return dry_run(&plan, &opts, db, a.json);
    }
    // Scale cells run without ASLR as will-it-scale's do: re-exec first.
    bench::scale::aslr::reexec_if_wanted(&cells)?;
    let mut exports = a.exports.open()?;
    let mut st = store::open(db, store::Access::Write)?;
    // An edited plan is refused before anything is measured or printed.
    let (campaign, have) = match &plan.path {
        Some(_) => {
            // One run of a campaign at a time on a store; the next one
            // resumes from what this one stored.
            st.lock_campaign(&plan.name)?;
            let d = runner::campaign::check(&*st, &plan, a.force)?;
            let have = match &d {
                // What this host measured: a campaign is per host.
                runner::campaign::Decision::Resume(c) => {
                    runner::campaign::progress_on(&*st, c.id, Some(&runner::campaign::this_host()))?
                }
                runner::campaign::Decision::New(_) => Default::default(),
            };
            (Some(d.key(&plan)), have)
        }
        None => (None, Default::default()),
    };
    let fp = system::fingerprint();
    // The noise warnings go to stderr before anything is measured; on a
    // terminal that is also stdout the report then does not repeat them.
    let warnings_shown = !a.quiet
        && !fp.warnings().is_empty()
        && std::io::stderr().is_terminal()
        && std::io::stdout().is_terminal();
    if !a.quiet {
        for w in fp.warnings() {
            eprint!(
                "{}",
                report::text::wrapped("kbench: warning: ", &w.to_string(), "  ")
            );
        }
    }
    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut progress = runner::progress::Progress::new(a.quiet);
    let mut lines = a
        .events
        .map(|EventsFormat::Jsonl| event::jsonl::Writer::new(std::io::stdout()));
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut writer];
    if let Some(l) = &mut lines {
        sinks.push(l);
    }
    sinks.push(&mut progress);
    let result = runner::run(&plan, &opts, campaign, &have, &fp, &mut event::Tee(sinks));
    drop(progress);
    let (summary, status) = match result {
        Ok(r) => r,
        Err(e) => {
            // The run stopped on an error (a sink that could not write, a
            // benchmark that could not start): it is over, not running.
            // (Not when the store itself is gone: the error says so.)
            if let Err(e2) = writer.close_open_runs(RunStatus::Failed)
                && e.downcast_ref::<store::Lost>().is_none()
            {
                eprintln!("kbench: cannot mark the run as failed: {e2:#}");
            }
            return Err(e);
        }
    };
    let run_id = summary.run.as_deref().and_then(|u| writer.run_id(u));
    let plan_arg = a.specs.first().cloned().unwrap_or_default();
    if summary.pending > 0 && !a.quiet {
        eprintln!(
            "kbench: {} cell(s) wait for another system state; `kbench status {plan_arg}` says what they need",
            summary.pending
        );
    }
    let format = Format::json_if(a.json);
    let Some(run_id) = run_id else {
        // Nothing left to measure on this system: say where the campaign
        // stands instead of recording an empty run.
        eprintln!(
            "kbench: nothing to run here: {} cell(s) done, {} pending",
            summary.done, summary.pending
        );
        if a.json
            && let Some(c) = runner::campaign::find(&*st, &plan)?
        {
            let r = report::Report::of_campaign(store::load_campaign(&*st, c.id)?);
            print(&Document::Reports(&[r]), format)?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let mut r = report::Report::of_run(store::load_run(&*st, run_id)?);
    exports.write(&|f| crate::export::run_document(&*st, run_id, &r, plan.layout.as_ref(), f))?;
    if lines.is_none() {
        r.warnings_shown = warnings_shown;
        // A plan with a `[report]` layout prints it (text only: the JSON
        // report keeps every cell's statistics).
        match &plan.layout {
            Some(l) if !a.json && l.table != crate::plan::report::TableKind::Ministat => {
                let doc = report::table::build(std::slice::from_ref(&r), l, false);
                print(&Document::Tables(&doc), format)?;
                eprintln!(
                    "kbench: the ministat tables of every cell: `kbench report {run_id} --table ministat`"
                );
            }
            _ => {
                print(&Document::Reports(&[r]), format)?;
            }
        }
    }
    Ok(match status {
        RunStatus::Done | RunStatus::Running => ExitCode::SUCCESS,
        RunStatus::Interrupted => {
            eprintln!(
                "kbench: interrupted; the samples measured so far are stored in run {run_id}"
            );
            ExitCode::from(1)
        }
        RunStatus::Failed => {
            eprintln!("kbench: some cells failed (see above); run {run_id} keeps the rest");
            ExitCode::from(1)
        }
    })
}

fn status(
    db: Option<&str>,
    plan_arg: &str,
    resume_unit: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let plan = crate::plan::load(std::path::Path::new(plan_arg))?;
    if resume_unit {
        let path = db
            .map(std::path::PathBuf::from)
            .unwrap_or_else(store::default_path);
        out(&runner::campaign::resume_unit(&plan, &path)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let st = store::open(db, store::Access::Read)?;
    let s = runner::campaign::status(&*st, &plan, plan_arg, plan.samples.unwrap_or(10))?;
    print(&Document::Status(&s), Format::json_if(json))
}

fn report(db: Option<&str>, a: &crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    use crate::plan::report::{Layout, TableKind, parse_assign};
    let specs = &a.runs;
    let st = store::open(db, store::Access::Read)?;
    if let Some(spec) = &a.history {
        return history(&*st, spec, a);
    }
    if a.metric.is_some() || a.campaign.is_some() || a.by != report::history::Order::Time {
        return Err(bad_input!(
            "--metric, --by and --campaign go with --history BENCH"
        ));
    }
    let ops: Vec<select::Operand> = if specs.is_empty() {
        let last = st
            .last_run_id()?
            .ok_or_else(|| bad_input!("the store has no runs yet; try `kbench run`"))?;
        vec![select::resolve(&*st, &last.to_string())?]
    } else {
        specs
            .iter()
            .map(|s| select::resolve(&*st, s))
            .collect::<anyhow::Result<_>>()?
    };
    let format = a.format.unwrap_or(Format::json_if(a.json));
    if format == Format::Csv {
        let mut cells = Vec::new();
        let mut runs = Vec::new();
        for op in &ops {
            let (c, r) = select::cells(&*st, op)?;
            cells.extend(c);
            runs.extend(r);
        }
        let t = report::samples::build(&cells, &runs);
        return write_out(
            a.output.as_deref(),
            &report::render(&Document::Samples(&t), format)?,
        );
    }
    let reports: Vec<report::Report> = ops
        .iter()
        .map(|op| select::report(&*st, op))
        .collect::<anyhow::Result<_>>()?;
    // The layout: the first campaign's `[report]`, then the flags.
    let mut layout = reports
        .iter()
        .find_map(|r| match &r.subject {
            report::Subject::Campaign { campaign, .. } => {
                crate::plan::parse(&campaign.plan_text, &campaign.name)
                    .ok()
                    .map(|p| {
                        // The plan's value order, with or without `[report]`.
                        let order = p
                            .factors
                            .iter()
                            .map(|f| {
                                (
                                    f.name.clone(),
                                    f.levels.iter().map(|l| l.label.clone()).collect(),
                                )
                            })
                            .collect();
                        Layout {
                            order,
                            ..p.layout.unwrap_or_default()
                        }
                    })
            }
            report::Subject::Run(_) => None,
        })
        .unwrap_or_default();
    if let Some(t) = a.table {
        layout.table = t;
    }
    if let Some(b) = &a.baseline {
        layout.baseline = parse_assign(b).map_err(|e| bad_input!("--baseline: {e}"))?;
    }
    for (flag, v, dst) in [
        ("--rows", &a.rows, &mut layout.rows),
        ("--cols", &a.cols, &mut layout.cols),
        ("--groups", &a.groups, &mut layout.groups),
    ] {
        if let Some(v) = v {
            if let Some(bad) = v.iter().find(|d| d.trim().is_empty()) {
                return Err(bad_input!("{flag}: empty dimension name in `{bad}`"));
            }
            *dst = v.iter().map(|d| d.trim().to_string()).collect();
        }
    }
    // A dimension placed by a flag leaves the axis the plan gave it.
    let placed: Vec<String> = [&a.rows, &a.cols, &a.groups]
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.trim().to_string())
        .collect();
    for (v, list) in [
        (&a.rows, &mut layout.rows),
        (&a.cols, &mut layout.cols),
        (&a.groups, &mut layout.groups),
    ] {
        if v.is_none() {
            list.retain(|d| !placed.contains(d));
        }
    }
    // Dimensions named on the command line must exist: a typo would
    // otherwise quietly give another table.
    let known = report::table::known_dims(&reports);
    let named = [
        ("--rows", a.rows.clone().unwrap_or_default()),
        ("--cols", a.cols.clone().unwrap_or_default()),
        ("--groups", a.groups.clone().unwrap_or_default()),
        (
            "--baseline",
            a.baseline
                .as_ref()
                .map(|_| layout.baseline.iter().map(|(k, _)| k.clone()).collect())
                .unwrap_or_default(),
        ),
    ];
    for (flag, dims) in named {
        if let Some(d) = dims.iter().find(|d| !known.contains(&d.trim().to_string())) {
            return Err(bad_input!(
                "{flag}: `{d}` is neither a factor nor a parameter of the reported cells{}",
                crate::suggest::hint(
                    d.trim(),
                    &known.iter().map(String::as_str).collect::<Vec<_>>(),
                    ""
                )
            ));
        }
    }
    // With several runs: which recorded facts differ between them.
    let expect = report::comparability::parse_expect(&a.expect).map_err(|e| bad_input!("{e}"))?;
    let mut ids: Vec<i64> = Vec::new();
    for r in &reports {
        match &r.subject {
            report::Subject::Run(row) => ids.push(row.id),
            report::Subject::Campaign { runs, .. } => ids.extend(runs.iter().map(|r| r.id)),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    let comparability = if ids.len() > 1 {
        let fps: Vec<system::Fingerprint> = ids
            .iter()
            .map(|id| st.run_details(*id).map(|d| d.fingerprint))
            .collect::<anyhow::Result<_>>()?;
        let ops: Vec<(String, Vec<&system::Fingerprint>)> = ids
            .iter()
            .zip(&fps)
            .map(|(id, fp)| (format!("run {id}"), vec![fp]))
            .collect();
        Some(report::comparability::check(&ops, &expect))
    } else {
        None
    };
    // will-it-scale's CSV is the stored scaling series, whatever the layout.
    let text = if format == Format::WisCsv
        || (layout.table == TableKind::Ministat
            && !matches!(format, Format::Markdown | Format::Html))
    {
        // ministat's tables keep their bytes: differing facts go to stderr.
        for w in comparability.iter().flat_map(|k| &k.warnings) {
            eprint!(
                "{}",
                report::text::wrapped("kbench: warning: ", &w.to_string(), "  ")
            );
        }
        report::render(&Document::Reports(&reports), format)?
    } else {
        let mut layout: Layout = layout;
        if layout.table == TableKind::Ministat {
            // Markdown and HTML of the ministat layout: a matrix per benchmark.
            layout.table = TableKind::Matrix;
        }
        let mut doc = report::table::build(&reports, &layout, a.unicode);
        doc.comparability = comparability;
        report::render(&Document::Tables(&doc), format)?
    };
    write_out(a.output.as_deref(), &text)
}

/// `kbench report --history BENCH`: every stored run of one benchmark
/// cell, with its change points.
fn history(
    st: &dyn store::StoreRead,
    spec: &str,
    a: &crate::cli::ReportArgs,
) -> anyhow::Result<ExitCode> {
    use report::history;
    let format = a.format.unwrap_or(Format::json_if(a.json));
    if format == Format::WisCsv {
        return Err(bad_input!(
            "--history: --format wis-csv is for scaling tables"
        ));
    }
    let q = history::Query {
        spec: spec.to_string(),
        metric: a.metric.clone(),
        by: a.by,
        campaign: a.campaign.clone(),
        settings: crate::stats::changepoint::Settings::default(),
        unicode: a.unicode,
    };
    let h = history::load(st, &q)?;
    write_out(
        a.output.as_deref(),
        &report::render(&Document::History(&h), format)?,
    )
}

/// `-o FILE`, else standard output.
fn write_out(path: Option<&std::path::Path>, text: &str) -> anyhow::Result<ExitCode> {
    match path {
        Some(path) => std::fs::write(path, text)
            .map_err(|e| bad_input!("{}: cannot write: {e}", path.display()))?,
        None => out(text)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn import(
    db: Option<&str>,
    files: &[String],
    from: crate::cli::ImportFormat,
    campaign: Option<&str>,
    ministat: &crate::import::ministat::Options<'_>,
) -> anyhow::Result<ExitCode> {
    use crate::cli::ImportFormat;
    if from != ImportFormat::Ministat
        && (ministat.column != 1 || ministat.delims != b" \t" || ministat.higher)
    {
        return Err(bad_input!("-C, -d and --higher apply to --from ministat"));
    }
    let read = |f: &String| std::fs::read(f).map_err(|e| bad_input!("{f}: cannot read: {e}"));
    let text = |f: &String, data: Vec<u8>| {
        String::from_utf8(data).map_err(|e| bad_input!("{f}: not UTF-8 text: {e}"))
    };
    // Every file is read and checked before anything is stored.
    let mut runs = Vec::new();
    match from {
        ImportFormat::Hyperfine => {
            for f in files {
                let cells = crate::import::hyperfine::parse(f, &text(f, read(f)?)?)?;
                runs.push(crate::import::events("hyperfine", f, cells, campaign));
            }
        }
        // One run: the files are the variants ministat would compare.
        ImportFormat::Ministat => {
            let mut cells = Vec::new();
            for f in files {
                if files.iter().filter(|g| *g == f).count() > 1 {
                    return Err(bad_input!("{f}: named twice"));
                }
                cells.push(crate::import::ministat::parse(f, &read(f)?, ministat)?);
            }
            runs.push(crate::import::events(
                "ministat",
                &files.join(" "),
                cells,
                campaign,
            ));
        }
        ImportFormat::WillItScale => {
            for f in files {
                let stem = std::path::Path::new(f)
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_else(|| f.clone());
                let cells = crate::import::wis::parse(f, &stem, &text(f, read(f)?)?)?;
                runs.push(crate::import::events("will-it-scale", f, cells, campaign));
            }
        }
    }
    let mut st = store::open(db, store::Access::Write)?;
    let mut sink = store::sink::StoreSink::new(st.as_mut());
    let mut ids = Vec::new();
    for evs in &runs {
        for e in evs {
            sink.event(e)?;
        }
        if let Some(event::Event::RunBegun(b)) = evs.first()
            && let Some(id) = sink.run_id(&b.run)
        {
            ids.push(id.to_string());
        }
    }
    eprintln!(
        "kbench: {} sample(s) imported as run(s) {}",
        sink.added,
        ids.join(", ")
    );
    Ok(ExitCode::SUCCESS)
}

fn ingest(db: Option<&str>, file: &str) -> anyhow::Result<ExitCode> {
    let input: Box<dyn std::io::BufRead> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file).map_err(|e| bad_input!("{file}: cannot read: {e}"))?,
        ))
    };
    let name = if file == "-" { "<stdin>" } else { file };
    // Read and check the whole stream before storing any of it, so a
    // malformed file changes nothing.
    let mut reader = event::jsonl::Reader::new(input, name);
    let mut events = Vec::new();
    while let Some(e) = reader.next_event()? {
        events.push((reader.line(), e));
    }
    let mut st = store::open(db, store::Access::Write)?;
    let mut sink = store::sink::StoreSink::new(st.as_mut());
    let mut runs = std::collections::BTreeSet::new();
    for (line, e) in &events {
        if let event::Event::RunBegun(b) = e {
            runs.insert(b.run.clone());
        }
        sink.event(e)
            .map_err(|err| err.context(format!("{name}:{line}")))?;
    }
    eprintln!(
        "kbench: {} event(s) of {} run(s) read; {} new sample(s) stored",
        events.len(),
        runs.len(),
        sink.added
    );
    Ok(ExitCode::SUCCESS)
}

/// How `kbench compare` tests: its flags besides the operands.
struct CompareHow<'a> {
    test: report::compare::Test,
    confidence: f64,
    margin: &'a str,
    expect: &'a [String],
    adjust: crate::stats::multiple::Adjust,
}

/// `compare --json` / `--format`: text, JSON, Markdown or CSV.
fn compare_format(json: bool, format: Option<Format>) -> anyhow::Result<Format> {
    match (json, format) {
        (true, Some(f)) if f != Format::Json => Err(bad_input!(
            "--json and --format {} ask for two formats; choose one",
            f.name()
        )),
        (true, _) => Ok(Format::Json),
        (false, None) => Ok(Format::Text),
        (false, Some(f @ (Format::Text | Format::Json | Format::Markdown | Format::Csv))) => Ok(f),
        (false, Some(f)) => Err(bad_input!(
            "--format {}: compare prints text, json, markdown or csv",
            f.name()
        )),
    }
}

fn compare(
    db: Option<&str>,
    operands: &[String],
    how: CompareHow<'_>,
    format: Format,
    exports: &crate::export::Exports,
) -> anyhow::Result<ExitCode> {
    let mut targets = exports.open()?;
    let CompareHow {
        test,
        confidence,
        margin,
        expect,
        adjust,
    } = how;
    let expect = report::comparability::parse_expect(expect).map_err(|e| bad_input!("{e}"))?;
    if !(80.0..=99.5).contains(&confidence) {
        return Err(bad_input!(
            "--confidence {confidence}: must be within 80..99.5"
        ));
    }
    let margin = crate::units::parse_percent(margin).map_err(|e| bad_input!("--margin: {e}"))?;
    let st = store::open(db, store::Access::Read)?;
    let mut sels = Vec::new();
    // The boot of each run, for `--processes` samples.
    let mut boots = std::collections::HashMap::new();
    // Operands often narrow the same run or campaign: load each once.
    let mut loaded: std::collections::HashMap<store::Scope, Vec<store::StoredCell>> =
        Default::default();
    for spec in operands {
        let op = select::resolve(&*st, spec)?;
        let cells = match loaded.entry(op.scope) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(st.cells(op.scope)?),
        };
        let cells = select::narrow(&op, cells.clone())?;
        for (c, samples) in &cells {
            if samples.iter().any(|s| s.process.is_some()) && !boots.contains_key(&c.run_id) {
                let boot = st.run_details(c.run_id)?.config.owner.map(|o| o.boot_id);
                boots.insert(
                    c.run_id,
                    boot.unwrap_or_else(|| format!("run {}", c.run_id)),
                );
            }
        }
        sels.push(report::compare::Selection {
            name: spec.clone(),
            fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
            cells,
            boots: boots.clone(),
        });
    }
    let mut c = report::compare::compare_adjusted(&sels, test, confidence, margin, adjust)?;
    // Which recorded facts differ between the runs each operand draws on.
    let mut fps: std::collections::HashMap<i64, system::Fingerprint> = Default::default();
    let mut operands = Vec::new();
    for sel in &sels {
        let mut ids: Vec<i64> = sel.cells.iter().map(|(c, _)| c.run_id).collect();
        ids.sort_unstable();
        ids.dedup();
        for id in &ids {
            if !fps.contains_key(id) {
                fps.insert(*id, st.run_details(*id)?.fingerprint);
            }
        }
        operands.push((sel.name.clone(), ids));
    }
    let ops: Vec<(String, Vec<&system::Fingerprint>)> = operands
        .iter()
        .map(|(n, ids)| (n.clone(), ids.iter().map(|id| &fps[id]).collect()))
        .collect();
    c.comparability = Some(report::comparability::check(&ops, &expect));
    targets.write(&|f| report::render(&Document::Compare(&c), f))?;
    print(&Document::Compare(&c), format)
}

fn plan_size(
    db: Option<&str>,
    pilot: &str,
    margin: &str,
    confidence: f64,
    json: bool,
) -> anyhow::Result<ExitCode> {
    if !(50.0..=99.99).contains(&confidence) {
        return Err(bad_input!(
            "--confidence {confidence}: must be within 50..99.99"
        ));
    }
    let margin = crate::units::parse_percent(margin).map_err(|e| bad_input!("--margin: {e}"))?;
    if margin <= 0.0 {
        return Err(bad_input!("--margin must be above 0%"));
    }
    let st = store::open(db, store::Access::Read)?;
    let op = select::resolve(&*st, pilot)?;
    let cells = select::narrow(&op, st.cells(op.scope)?)?;
    let sel = report::compare::Selection {
        name: pilot.to_string(),
        fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
        cells,
        boots: Default::default(),
    };
    let p = report::plan_size::plan_size(&sel, confidence, margin);
    if p.rows.is_empty() {
        return Err(bad_input!("`{pilot}` holds no samples to size from"));
    }
    print(&Document::PlanSize(&p), Format::json_if(json))
}

fn store_copy(from: &str, to: &str, campaigns: &[String]) -> anyhow::Result<ExitCode> {
    let src = store::open(Some(from), store::Access::Read)?;
    let mut dst = store::open(Some(to), store::Access::Write)?;
    let c = store::copy::copy(&*src, dst.as_mut(), campaigns)?;
    eprintln!(
        "kbench: {} new run(s) of {} campaign(s), {} new sample(s) copied to {}",
        c.runs,
        c.campaigns,
        c.samples,
        store::display_name(to)
    );
    Ok(ExitCode::SUCCESS)
}

fn fleet(db: Option<&str>, command: FleetCommand) -> anyhow::Result<ExitCode> {
    use crate::fleet;
    match command {
        FleetCommand::Run {
            plan,
            hosts,
            jobs,
            accept_new_host_keys,
            quiet,
            run_args,
        } => {
            let hs = fleet::hosts::load(std::path::Path::new(&hosts))?;
            if jobs == 0 {
                return Err(bad_input!("--jobs 0: need at least one"));
            }
            let o = fleet::RunOptions {
                db,
                jobs,
                keys: if accept_new_host_keys {
                    fleet::HostKeys::AcceptNew
                } else {
                    fleet::HostKeys::Strict
                },
                run_args: &run_args,
                quiet,
            };
            let outcome = fleet::run(std::path::Path::new(&plan), &hs, &o)?;
            let failed: Vec<&str> = outcome
                .iter()
                .filter(|(_, e)| e.is_some())
                .map(|(n, _)| n.as_str())
                .collect();
            eprintln!(
                "kbench: {} of {} host(s) done{}",
                outcome.len() - failed.len(),
                outcome.len(),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; failed: {} (`kbench fleet status {plan} --hosts {hosts}`; re-run to resume)",
                        failed.join(", ")
                    )
                }
            );
            Ok(if failed.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        FleetCommand::Status { plan, hosts, json } => {
            let hs = fleet::hosts::load(std::path::Path::new(&hosts))?;
            let s = fleet::status(db, std::path::Path::new(&plan), &hs)?;
            if json {
                out(&(serde_json::to_string_pretty(&s)? + "\n"))?;
            } else {
                out(&fleet::status_text(&s))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
