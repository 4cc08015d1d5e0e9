//! One function per subcommand; `dispatch` is the testable entry point
//! behind `main`. Each command builds a model and prints it through
//! `report::render` in the chosen format; nothing here formats output.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use crate::bench;
use crate::campaign;
use crate::cli::{
    Cli, Command, CompletionShell, EventsFormat, FleetCommand, RunArgs, StoreCommand,
};
use crate::error::bad_input;
use crate::event::{self, Sink};
use crate::record::{RunConfig, RunStatus};
use crate::report::{self, BenchInfo, Document, Format, Sysinfo};
use crate::runner;
use crate::select;
use crate::store;
use crate::system;
use crate::term::out;

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
    use clap::{CommandFactory, FromArgMatches};
    let parsed = <Cli as CommandFactory>::command()
        .try_get_matches_from(&args)
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        // Help and version go to stdout with 0.
        Err(e) if !e.use_stderr() => {
            e.print()?;
            return Ok(ExitCode::SUCCESS);
        }
        // A usage error is one line, like every other bad input.
        Err(e) => return Err(bad_input!("{}", usage_error(&e, &args))),
    };
    // The store is parsed once, here; every command gets the locator.
    let from_env = matches.value_source("db") == Some(clap::parser::ValueSource::EnvVariable);
    let db = &match cli.command {
        // Commands without a store do not read KBENCH_DB.
        Command::List { .. }
        | Command::Sysinfo { .. }
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::Ministat { .. } => store::Locator::default_store(),
        _ => store::Locator::from_cli(cli.db.as_deref(), from_env)?,
    };
    execute(cli.command, db)
}

/// Run one parsed subcommand on the store `db`.
fn execute(command: Command, db: &store::Locator) -> anyhow::Result<ExitCode> {
    match command {
        Command::Run(a) => run(a, db),
        Command::Check(a) => check(a, db),
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
            label,
        } => {
            let o = crate::import::ministat::Options {
                column,
                delims: delimiters.as_bytes(),
                higher,
            };
            let labels = label.into_iter().flatten().collect();
            import(db, &files, from, name.as_deref(), &o, &labels)
        }
        Command::Explain {
            a,
            b,
            confidence,
            top,
            json,
            format,
            output,
        } => {
            let format = one_format(json, format)?.unwrap_or(Format::Text);
            explain(db, &a, &b, confidence, top, format, output.as_deref())
        }
        Command::Compare {
            operands,
            test,
            confidence,
            margin,
            expect,
            fdr,
            metric,
            all_metrics,
            compat,
            explain,
            json,
            format,
            exports,
        } => {
            let how = CompareHow {
                test,
                confidence,
                margin: &margin,
                expect: &expect,
                ministat: match compat.as_deref() {
                    Some("2015") => crate::ministat::Version::Debian2015,
                    _ => crate::ministat::Version::FreeBsdMain,
                },
                adjust: if fdr {
                    crate::stats::multiple::Adjust::BenjaminiHochberg
                } else {
                    crate::stats::multiple::Adjust::Holm
                },
                metrics: match (all_metrics, metric.is_empty()) {
                    (true, _) => report::compare::Metrics::All,
                    (false, true) => report::compare::Metrics::Primary,
                    (false, false) => report::compare::Metrics::Named(metric),
                },
                explain,
            };
            compare(db, &operands, how, compare_format(json, format)?, &exports)
        }
        Command::Store {
            command:
                StoreCommand::Copy {
                    from,
                    to,
                    campaigns,
                },
        } => store_copy(&from, &to, &campaigns),
        Command::Store {
            command: StoreCommand::Check,
        } => store_check(db),
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
    if word == "counters" {
        let counters = report::CounterInfo::all();
        return print(&Document::Counters(&counters), Format::json_if(json));
    }
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
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = e.render().to_string();
    let mut first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid command line")
        .trim_start_matches("error: ")
        .to_string();
    // clap lists the missing arguments on the lines after the first.
    if e.kind() == ErrorKind::MissingRequiredArgument
        && let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg)
    {
        first = format!(
            "the following required arguments were not provided: {}",
            missing.join(", ")
        );
    }
    // An argument clap quotes may be a store URL: never show its password.
    let first = crate::redact::text(&first).into_owned();
    // The command and its subcommand (`fleet status`) the words name.
    let mut cmd = <Cli as clap::CommandFactory>::command();
    let mut sub = String::new();
    for a in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(c) = cmd.find_subcommand(a).cloned() {
            sub += &format!(" {a}");
            cmd = c;
        }
    }
    let tip = crate::suggest::clap_tip(e);
    format!("{first}{tip} (see `kbench{sub} --help`)")
}

/// Render a document to stdout.
fn print(doc: &Document<'_>, format: Format) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let mut w = std::io::BufWriter::with_capacity(1 << 16, crate::term::Stdout);
    report::write(doc, format, &mut w)?;
    w.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The run's settings: the plan's, what the command line overrides.
fn options(a: &RunArgs, plan: &crate::plan::Plan, quick: bool) -> anyhow::Result<RunConfig> {
    let o = crate::plan::settings::Overrides {
        until_verdict: a.until_verdict,
        force: a.force,
        quick,
        argv: crate::redact::args(std::env::args()),
        ..a.measure.overrides()
    };
    RunConfig::resolve(plan, &o)
}

/// `run --dry-run`: what the run would measure here and how long it
/// would take; the store is only read (a campaign's progress).
fn dry_run(
    plan: &crate::plan::Plan,
    opts: &RunConfig,
    db: &store::Locator,
    json: bool,
) -> anyhow::Result<ExitCode> {
    // A store `run` would create holds no campaign yet.
    let no_store = matches!(db, store::Locator::Sqlite { path, .. } if !path.exists());
    let have = match &plan.path {
        Some(_) if !no_store => {
            let st = store::open(db, store::Access::Read)?;
            match campaign::find(&*st, plan)? {
                Some(c) if !opts.force => {
                    campaign::progress_on(&*st, c.id, Some(&campaign::this_host()))?
                }
                _ => Default::default(),
            }
        }
        _ => Default::default(),
    };
    let readings = plan.read_probes();
    let todo = runner::todo(plan, opts, &have, &readings)?;
    let e = runner::estimate::estimate(&todo, opts)?;
    if json {
        println!("{:#}", runner::estimate::json(&e));
    } else {
        print!("{}", runner::estimate::text(&e));
    }
    Ok(ExitCode::SUCCESS)
}

/// The ledger of teardowns owed on store `db`; the debts a dead kbench
/// left there.
fn owed_teardowns(
    db: &store::Locator,
) -> anyhow::Result<(std::path::PathBuf, Vec<runner::teardown::Debt>)> {
    let dir = runner::teardown::ledger_dir(&db.to_arg()?);
    let debts = runner::teardown::owed(&dir)?;
    Ok((dir, debts))
}

/// A run's labels: the git work tree's branch and commit, then the
/// user's `--label`s (which win).
fn run_labels(given: &[crate::record::Labels]) -> crate::record::Labels {
    let mut labels = std::env::current_dir()
        .map(|d| crate::bisect::head_labels(&d))
        .unwrap_or_default();
    labels.extend(given.iter().flatten().map(|(k, v)| (k.clone(), v.clone())));
    labels
}

fn run(a: RunArgs, db: &store::Locator) -> anyhow::Result<ExitCode> {
    if a.teardown_only {
        let (_, debts) = owed_teardowns(db)?;
        if debts.is_empty() {
            eprintln!("kbench: no teardown is owed on {db}");
        }
        runner::teardown::pay(&debts)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (plan, default_suite, commands) = run_plan(&a)?;
    let opts = options(&a, &plan, a.quick || default_suite)?;
    if plan.repeat.runs > 1 && opts.stop.is_some_and(|r| r.until_verdict) {
        return Err(bad_input!(
            "--until-verdict stops when one run decides; with {} runs the run is the unit: choose one",
            plan.repeat.runs
        ));
    }
    let cells = runner::cells(&plan, &opts)?;
    if a.dry_run {
        return dry_run(&plan, &opts, db, a.json);
    }
    // Scale cells run without ASLR as will-it-scale's do: re-exec first.
    bench::scale::aslr::reexec_if_wanted(
        cells.iter().map(|c| (c.key.as_str(), &c.bench, &c.params)),
    )?;
    let mut exports = a.exports.open()?;
    let mut st = store::open(db, store::Access::Write)?;
    // What a killed run left changed on this system is undone first; this
    // run's own teardowns are noted in the same ledger.
    let (ledger, debts) = owed_teardowns(db)?;
    runner::teardown::pay(&debts)?;
    runner::teardown::keep_ledger_in(ledger);
    // An edited plan is refused before anything is measured or printed.
    let (campaign, have) = run_campaign(&mut *st, &plan, a.force)?;
    let fp = system::fingerprint();
    // The noise warnings go to stderr before anything is measured; on a
    // terminal that is also stdout the report then does not repeat them.
    let warnings_shown = show_warnings(&fp, a.quiet);
    let mut writer = store::sink::StoreSink::new(st.as_mut());
    let mut progress = runner::progress::Progress::new(a.quiet);
    let mut lines = a
        .events
        .map(|EventsFormat::Jsonl| event::jsonl::Writer::new(crate::term::Stdout));
    let mut sinks: Vec<&mut dyn Sink> = vec![&mut writer];
    if let Some(l) = &mut lines {
        sinks.push(l);
    }
    sinks.push(&mut progress);
    // Without a terminal there is no bar to watch: each cell's line
    // instead, as soon as its last sample is in, before the report.
    let mut finished =
        (!a.quiet && !a.json && a.events.is_none() && !std::io::stdout().is_terminal())
            .then(|| report::live::Finished::new(crate::term::Stdout));
    if let Some(f) = &mut finished {
        sinks.push(f);
    }
    let labels = run_labels(&a.label);
    let mut tee = event::Tee(sinks);
    let mut labelled = event::labels::Labelled {
        labels: &labels,
        inner: &mut tee,
    };
    let result = if plan.repeat.runs > 1 {
        let source = match &plan.path {
            Some(p) => runner::repeat::Source::File(p.clone()),
            None if default_suite => runner::repeat::Source::Specs(
                DEFAULT_SUITE.iter().map(|s| s.to_string()).collect(),
                commands,
            ),
            None => runner::repeat::Source::Specs(a.specs.clone(), commands),
        };
        runner::repeat::runs(&source, &plan, &opts, campaign.clone(), have, &mut labelled)
    } else {
        runner::run(&plan, &opts, campaign.clone(), &have, &fp, &mut labelled)
    };
    drop(tee);
    drop(progress);
    let (summary, status) = match result {
        Ok(r) => r,
        // The reader of `--events` went away (`| head`): the run stops,
        // as interrupted, and says so.
        Err(e) if crate::error::is_broken_pipe(&e) => {
            writer.close_open_runs(RunStatus::Interrupted)?;
            eprintln!(
                "kbench: standard output was closed; the run stopped (interrupted), the samples measured so far are stored"
            );
            return Ok(ExitCode::from(1));
        }
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
    drop(writer);
    if !a.quiet {
        say_waiting(&summary, &a.specs.first().cloned().unwrap_or_default());
    }
    let Some(run_id) = run_id else {
        return nothing_to_run(&*st, &plan, &summary, a.json);
    };
    let mut r = report::Report::of_run(store::load_run(&*st, run_id)?);
    exports.write(&|f| crate::export::run_document(&*st, run_id, &r, plan.layout.as_ref(), f))?;
    if lines.is_none() && !a.no_report {
        r.warnings_shown = warnings_shown;
        r.all_metrics = a.all_metrics;
        run_report(&*st, &plan, campaign.as_ref(), run_id, r, a.json)?;
    }
    Ok(run_exit(status, run_id))
}

/// Nothing was left to measure on this system: say where the campaign
/// stands instead of recording an empty run (with `--json`, its report).
fn nothing_to_run(
    st: &dyn store::StoreRead,
    plan: &crate::plan::Plan,
    summary: &runner::Summary,
    json: bool,
) -> anyhow::Result<ExitCode> {
    eprintln!(
        "kbench: nothing to run here: {} cell(s) done, {} pending",
        summary.done,
        summary.pending + summary.next_boot
    );
    if json && let Some(c) = campaign::find(st, plan)? {
        let r = report::Report::of_campaign(store::load_campaign(st, c.id)?);
        print(&Document::Reports(&[r]), Format::Json)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `kbench run`'s plan from its words (the default suite without any),
/// whether it is the default suite, and the command options.
fn run_plan(a: &RunArgs) -> anyhow::Result<(crate::plan::Plan, bool, crate::spec::CommandOptions)> {
    let commands = crate::spec::CommandOptions::of(a)?;
    let (mut plan, default_suite) = match a.specs.as_slice() {
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
    if let Some(n) = a.repeat {
        plan.repeat.runs = n;
    }
    Ok((plan, default_suite, commands))
}

/// The noise warnings, on stderr before anything is measured (unless
/// `quiet`); true when they reached a terminal that is also stdout, so
/// the report does not repeat them.
fn show_warnings(fp: &system::Fingerprint, quiet: bool) -> bool {
    if quiet {
        return false;
    }
    for w in fp.warnings() {
        eprint!(
            "{}",
            crate::term::wrapped("kbench: warning: ", &w.to_string(), "  ")
        );
    }
    !fp.warnings().is_empty() && std::io::stderr().is_terminal() && std::io::stdout().is_terminal()
}

/// Cells a run left for another system state or another boot, on stderr.
fn say_waiting(summary: &runner::Summary, plan_arg: &str) {
    if summary.pending > 0 {
        eprintln!(
            "kbench: {} cell(s) wait for another system state; `kbench status {plan_arg}` says what they need",
            summary.pending
        );
    }
    if summary.next_boot > 0 {
        eprintln!(
            "kbench: {} cell(s) took their share of this boot and wait for another boot (boots of the states alternate); `kbench status {plan_arg}` says which",
            summary.next_boot
        );
    }
}

/// How a measured run ends: 0 when it completed, 1 (said on stderr) when
/// it was interrupted or cells failed.
fn run_exit(status: RunStatus, run_id: i64) -> ExitCode {
    match status {
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
    }
}

/// `kbench check`: run the candidate (unless --candidate names stored
/// runs), choose the baseline, compare and exit by the outcome.
fn check(a: crate::cli::CheckArgs, db: &store::Locator) -> anyhow::Result<ExitCode> {
    let threshold =
        crate::units::parse_percent(&a.threshold).map_err(|e| bad_input!("--threshold: {e}"))?;
    let expect_better = a.expect.iter().any(|e| e == "better");
    let facts: Vec<String> = a
        .expect
        .iter()
        .filter(|e| *e != "better")
        .cloned()
        .collect();
    let expect = report::comparability::parse_expect(&facts).map_err(|e| bad_input!("{e}"))?;
    // A plan's `[gate]`, validated before anything runs.
    let gate = match a.run.specs.as_slice() {
        [p] if p.ends_with(".toml") => crate::plan::load(std::path::Path::new(p))?.gate,
        _ => None,
    };
    let host = campaign::this_host();
    let against = match (&a.against, &a.against_command) {
        (Some(s), _) => Some(crate::check::Against::parse(s)?),
        (None, Some(c)) => Some(crate::check::Against::Command(c.clone())),
        (None, None) => None,
    };
    let o = crate::check::Options {
        threshold,
        baseline: match (&a.baseline, &against) {
            (Some(b), _) => b.clone(),
            (None, Some(x)) => x.describe(),
            (None, None) => String::new(),
        },
        expect_better,
        expect,
        confidence: a.confidence,
        gate,
    };
    if let Some(against) = against {
        return check_against(&a, &o, &against, db, &host);
    }
    let history = a.baseline_history as usize;
    // A baseline that names nothing is refused before anything runs.
    crate::check::baseline_runs(
        &*store::open(db, store::Access::Read)?,
        &o.baseline,
        &host,
        i64::MAX,
        history,
    )?;
    if a.calibrate {
        return calibrate(&a, &o, db, &host);
    }
    let candidate = match &a.candidate {
        Some(sel) => stored_candidate(&a, db, sel, &host)?,
        None => match measure_candidate(&a.run, db, &host)? {
            Some(runs) => runs,
            None => return Ok(ExitCode::from(3)),
        },
    };
    let st = store::open(db, store::Access::Read)?;
    let first = candidate.first().map_or(i64::MAX, |r| r.id);
    let baseline = crate::check::baseline_runs(&*st, &o.baseline, &host, first, history)?;
    let c = crate::check::check(&*st, &baseline, &candidate, &o)?;
    check_output(&a, &*st, &c)
}

/// The stored runs `--candidate SELECTOR` names (no benchmark may be
/// given beside it).
fn stored_candidate(
    a: &crate::cli::CheckArgs,
    db: &store::Locator,
    sel: &str,
    host: &str,
) -> anyhow::Result<Vec<store::RunRow>> {
    if !a.run.specs.is_empty() {
        return Err(bad_input!(
            "--candidate {sel} names stored runs: give no benchmarks or plan to run"
        ));
    }
    let st = store::open(db, store::Access::Read)?;
    crate::check::baseline_runs(&*st, sel, host, i64::MAX, 1)
        .map_err(|e| bad_input!("{}", format!("{e:#}").replace("--baseline", "--candidate")))
}

/// `kbench check --against`: the baseline and the candidate measured
/// interleaved in one run (or a stored run holding both), then judged.
fn check_against(
    a: &crate::cli::CheckArgs,
    o: &crate::check::Options,
    against: &crate::check::Against,
    db: &store::Locator,
    host: &str,
) -> anyhow::Result<ExitCode> {
    use crate::check::Against;
    let mut m = a.run.clone();
    match against {
        _ if a.candidate.is_some() => {}
        Against::Command(old) if m.specs.is_empty() => {
            return Err(bad_input!(
                "--against-command '{old}': give the candidate command(s) to run beside it"
            ));
        }
        Against::Command(old) => m.specs.insert(0, old.clone()),
        Against::Level { .. } => {
            let commands = crate::spec::CommandOptions::of(&m)?;
            let plan = crate::spec::plan(&m.specs, &commands)?;
            crate::check::interleaved::validate_plan(&plan, against)?;
        }
    }
    if a.calibrate {
        // A/A: the levels hold identical code; measured twice.
        let mut measured = Vec::new();
        for _ in 0..2 {
            match measure_candidate(&m, db, host)? {
                Some(runs) => measured.push(runs),
                None => return Ok(ExitCode::from(3)),
            }
        }
        let st = store::open(db, store::Access::Read)?;
        let rows = crate::check::calibrate::calibrate_interleaved(&*st, &measured, against, o)?;
        let design = format!("`{}` interleaved with the candidate", against.describe());
        out(&crate::check::calibrate::text(&rows, &design))?;
        return Ok(ExitCode::SUCCESS);
    }
    let runs = match &a.candidate {
        Some(sel) => stored_candidate(a, db, sel, host)?,
        None => match measure_candidate(&m, db, host)? {
            Some(runs) => runs,
            None => return Ok(ExitCode::from(3)),
        },
    };
    let st = store::open(db, store::Access::Read)?;
    let c = crate::check::check_interleaved(&*st, &runs, against, o)?;
    check_output(a, &*st, &c)
}

/// Print a check in its format (and to GITHUB_STEP_SUMMARY), and the exit
/// status of its outcome.
fn check_output(
    a: &crate::cli::CheckArgs,
    st: &dyn store::StoreRead,
    c: &crate::report::check::Check,
) -> anyhow::Result<ExitCode> {
    let explained = match a.explain {
        Some(k) => Some(check_explained(st, c, k, a.confidence)?),
        None => None,
    };
    let explained = explained.as_ref();
    use crate::cli::CheckFormat;
    let doc = Document::Check(c);
    match a.format {
        CheckFormat::Text => out(&report::render_explained(&doc, explained, Format::Text)?)?,
        CheckFormat::Json => out(&report::render_explained(&doc, explained, Format::Json)?)?,
        CheckFormat::Markdown => out(&report::render_explained(
            &doc,
            explained,
            Format::Markdown,
        )?)?,
        CheckFormat::Junit => out(&report::check::junit(c))?,
    }
    // GitHub Actions shows this file on the run's page.
    if let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let md = report::render_explained(&doc, explained, Format::Markdown)?;
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(md.as_bytes()))
            .map_err(|e| bad_input!("GITHUB_STEP_SUMMARY {}: {e}", path.to_string_lossy()))?;
    }
    use crate::report::check::Outcome;
    Ok(ExitCode::from(match (c.outcome, a.inconclusive) {
        (Outcome::Inconclusive, Some(crate::cli::Inconclusive::Pass)) => 0,
        (Outcome::Inconclusive, Some(crate::cli::Inconclusive::Fail)) => 1,
        (o, _) => o.code(),
    }))
}

/// `check --explain K`: the check's K worst cells (it lists them worst
/// first) explained, baseline runs against candidate runs.
fn check_explained(
    st: &dyn store::StoreRead,
    c: &report::check::Check,
    k: usize,
    confidence: f64,
) -> anyhow::Result<report::explain::Explain> {
    let sels = [
        crate::explain::of_runs(st, "baseline", &c.baseline_runs)?,
        crate::explain::of_runs(st, "candidate", &c.candidate_runs)?,
    ];
    let mut worst: Vec<String> = Vec::new();
    for cell in &c.cells {
        let name = crate::explain::cell_name(&cell.bench, &cell.cell);
        if worst.len() < k && !worst.contains(&name) {
            worst.push(name);
        }
    }
    let ask = explain_ask("baseline", "candidate", confidence);
    crate::explain::attach(st, &sels, &worst, &ask)
}

/// Run the candidate of a check (stored, no report, a plan's campaign
/// measured anew, never resumed); its runs on this host, or `None` when
/// the run did not finish.
fn measure_candidate(
    m: &crate::cli::MeasureArgs,
    db: &store::Locator,
    host: &str,
) -> anyhow::Result<Option<Vec<store::RunRow>>> {
    let before = store::open(db, store::Access::Write)?
        .last_run_id()?
        .unwrap_or(0);
    let ra = RunArgs {
        measure: m.clone(),
        until_verdict: false,
        json: false,
        events: None,
        quiet: true,
        teardown_only: false,
        dry_run: false,
        force: true,
        exports: Default::default(),
        no_report: true,
        all_metrics: false,
    };
    if run(ra, db)? != ExitCode::SUCCESS {
        eprintln!("kbench: the candidate's run did not finish; nothing checked");
        return Ok(None);
    }
    let st = store::open(db, store::Access::Read)?;
    Ok(Some(
        store::runs(&*st, None)?
            .into_iter()
            .filter(|r| r.id > before && r.host == host)
            .collect(),
    ))
}

/// `kbench check --calibrate`: the candidate measured twice, each
/// checked against the baseline; the thresholds this design allows.
fn calibrate(
    a: &crate::cli::CheckArgs,
    o: &crate::check::Options,
    db: &store::Locator,
    host: &str,
) -> anyhow::Result<ExitCode> {
    let mut pairs = Vec::new();
    for _ in 0..2 {
        let Some(candidate) = measure_candidate(&a.run, db, host)? else {
            return Ok(ExitCode::from(3));
        };
        let st = store::open(db, store::Access::Read)?;
        let first = candidate.first().map_or(i64::MAX, |r| r.id);
        let history = a.baseline_history as usize;
        let baseline = crate::check::baseline_runs(&*st, &o.baseline, host, first, history)?;
        pairs.push((baseline, candidate));
    }
    let st = store::open(db, store::Access::Read)?;
    let rows = crate::check::calibrate::calibrate(&*st, &pairs, o)?;
    let (nb, nc) = (pairs[1].0.len(), pairs[1].1.len());
    let design = format!("{nb} baseline run(s) against {nc} candidate run(s)");
    out(&crate::check::calibrate::text(&rows, &design))?;
    Ok(ExitCode::SUCCESS)
}

/// The campaign a run joins and what it already holds on this host: a
/// plan file's (an edited plan is refused before anything is measured or
/// printed), a new generation of `adhoc` for repeated runs of benchmarks
/// named on the command line, else none.
fn run_campaign(
    st: &mut dyn store::Store,
    plan: &crate::plan::Plan,
    force: bool,
) -> anyhow::Result<(Option<crate::record::CampaignKey>, runner::Progress)> {
    if plan.path.is_none() {
        if plan.repeat.runs > 1 {
            let d = campaign::check(&*st, plan, true)?;
            return Ok((Some(d.key(plan)), Default::default()));
        }
        return Ok((None, Default::default()));
    }
    // One run of a campaign at a time on a store; the next one resumes
    // from what this one stored.
    st.lock_campaign(&plan.name)?;
    let d = campaign::check(&*st, plan, force)?;
    let have = match &d {
        // What this host measured: a campaign is per host.
        campaign::Decision::Resume(c) => {
            let host = campaign::this_host();
            if plan.repeat.boots > 1 {
                campaign::progress_by_boot(&*st, c.id, Some(&host))?
            } else {
                campaign::progress_on(&*st, c.id, Some(&host))?
            }
        }
        campaign::Decision::New(_) => Default::default(),
    };
    Ok((Some(d.key(plan)), have))
}

/// The report `kbench run` prints: the run's, or with repeated runs the
/// campaign's (every run of it).
fn run_report(
    st: &dyn store::Store,
    plan: &crate::plan::Plan,
    campaign: Option<&crate::record::CampaignKey>,
    run_id: i64,
    run: report::Report,
    json: bool,
) -> anyhow::Result<()> {
    let format = Format::json_if(json);
    let r = match campaign {
        Some(k) if plan.repeat.runs > 1 => {
            let c = st
                .campaigns(store::CampaignQuery::Named(&k.name))?
                .into_iter()
                .find(|c| c.plan_hash == k.plan_hash && c.generation == k.generation)
                .ok_or_else(|| anyhow::anyhow!("campaign `{}` vanished", k.name))?;
            eprintln!(
                "kbench: the runs are campaign {} `{}`: `kbench report campaign:{}`, `kbench compare campaign:{}:FACTOR=A campaign:{}:FACTOR=B`",
                c.id, c.name, c.id, c.id, c.id
            );
            let mut r = report::Report::of_campaign(store::load_campaign(st, c.id)?);
            r.warnings_shown = run.warnings_shown;
            r.all_metrics = run.all_metrics;
            r
        }
        _ => run,
    };
    // A plan with a `[report]` layout prints it; the JSON report keeps
    // every cell's statistics and adds the layout's tables.
    match &plan.layout {
        Some(l) if l.table != crate::plan::report::TableKind::Ministat => {
            let doc = report::table::build(std::slice::from_ref(&r), l, false);
            if json {
                let doc = report::run::json::ReportsJson::new(std::slice::from_ref(&r))
                    .tables(Some(&doc))?;
                write_with(None, &mut |w| doc.write(w))?;
                return Ok(());
            }
            print(&Document::Tables(&doc), format)?;
            eprintln!(
                "kbench: the ministat tables of every cell: `kbench report {run_id} --table ministat`"
            );
        }
        _ => {
            print(&Document::Reports(&[r]), format)?;
        }
    }
    Ok(())
}

fn status(
    db: &store::Locator,
    plan_arg: &str,
    resume_unit: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let plan = crate::plan::load(std::path::Path::new(plan_arg))?;
    if resume_unit {
        out(&campaign::resume_unit(&plan, db)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let st = store::open(db, store::Access::Read)?;
    for d in owed_teardowns(db)?.1 {
        eprintln!(
            "kbench: owed: {}; `kbench run {plan_arg}` runs it first, `kbench run --teardown-only` runs only that",
            d.describe()
        );
    }
    let s = campaign::status(
        &*st,
        &plan,
        plan_arg,
        crate::plan::settings::samples(&plan, None, false),
    )?;
    print(&Document::Status(&s), Format::json_if(json))
}

fn report(db: &store::Locator, a: &crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    use crate::plan::report::{Layout, TableKind};
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
        let written = write_with(a.output.as_deref(), &mut |w| {
            report::csv::stream_samples(&cells, &runs, w)
        });
        exit_without_freeing(cells);
        return written;
    }
    // A bisection's campaign: its steps, unless a layout is asked for.
    if let [op] = ops.as_slice()
        && let store::Scope::Campaign(id) = op.scope
        && op.filters.is_empty()
        && a.table.is_none()
        && a.baseline.is_none()
        && [&a.rows, &a.cols, &a.groups].iter().all(|v| v.is_none())
        && let Some(b) = crate::bisect::report::load(&*st, id)?
        && let Some(text) = crate::bisect::report::render(&b, format)?
    {
        return write_out(a.output.as_deref(), &text);
    }
    let pooling = pooling(a)?;
    let mut reports: Vec<report::Report> = ops
        .iter()
        .map(|op| select::report(&*st, op, pooling))
        .collect::<anyhow::Result<_>>()?;
    for r in &mut reports {
        r.all_metrics = a.all_metrics;
    }
    let layout = report_layout(a, &reports)?;
    let comparability = report_comparability(&*st, &reports, &a.expect)?;
    // JSON has one shape: every cell's statistics, and the layout's
    // tables when one is asked for; written as it is made.
    if format == Format::Json {
        let tables = (layout.table != TableKind::Ministat).then(|| {
            let mut doc = report::table::build(&reports, &layout, a.unicode);
            doc.comparability = comparability.clone();
            doc
        });
        let mut doc = report::run::json::ReportsJson::new(&reports).tables(tables.as_ref())?;
        // What differs between the runs, whatever the layout.
        if let Some(k) = &comparability {
            doc = doc.with("comparability", serde_json::to_value(k)?);
        }
        let written = write_with(a.output.as_deref(), &mut |w| doc.write(w));
        drop(doc);
        exit_without_freeing(reports);
        return written;
    }
    // will-it-scale's CSV is the stored scaling series, whatever the layout.
    let text = if format == Format::WisCsv
        || (layout.table == TableKind::Ministat
            && !matches!(format, Format::Markdown | Format::Html))
    {
        // ministat's tables keep their bytes: differing facts go to stderr.
        for w in comparability.iter().flat_map(|k| &k.warnings) {
            eprint!(
                "{}",
                crate::term::wrapped("kbench: warning: ", &w.to_string(), "  ")
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
        doc.log_y = a.log_y;
        if a.compat.as_deref() == Some("2015") {
            doc.ministat = crate::ministat::Version::Debian2015;
        }
        if format == Format::Html {
            doc.flames = crate::explain::flames(&*st, &ops)?;
        }
        report::render(&Document::Tables(&doc), format)?
    };
    let written = write_out(a.output.as_deref(), &text);
    exit_without_freeing(reports);
    written
}

/// Leave a report's loaded samples to the end of the process, which is
/// next: freeing 10^6 samples' allocations one by one was a tenth of a
/// report's time, and the kernel takes the whole address space at once.
fn exit_without_freeing<T>(loaded: T) {
    std::mem::forget(loaded);
}

/// Which runs a report pools: runs of different origin stay apart
/// unless `--pool`ed; a layout that names `run` keeps every run apart.
fn pooling(a: &crate::cli::ReportArgs) -> anyhow::Result<report::origin::Pooling> {
    let names_run = [&a.rows, &a.cols, &a.groups]
        .into_iter()
        .flatten()
        .flatten()
        .any(|d| d.trim() == "run");
    Ok(match (a.pool, names_run) {
        (true, true) => {
            return Err(bad_input!(
                "--pool merges the runs that a `run` dimension keeps apart: use one of them"
            ));
        }
        (true, false) => report::origin::Pooling::All,
        (false, true) => report::origin::Pooling::ByRun,
        (false, false) => report::origin::Pooling::ByOrigin,
    })
}

/// `kbench report`'s layout: the first campaign's `[report]` (in its
/// plan's value order), then the flags; a dimension or baseline the
/// reported cells do not have is bad input.
fn report_layout(
    a: &crate::cli::ReportArgs,
    reports: &[report::Report],
) -> anyhow::Result<crate::plan::report::Layout> {
    use crate::plan::report::{Layout, parse_assign};
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
    let known = report::table::known_dims(reports);
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
    // A baseline value no cell has would only print "no table".
    if a.baseline.is_some() {
        let values = report::table::known_values(reports);
        for (k, v) in &layout.baseline {
            let have = values.get(k).map(Vec::as_slice).unwrap_or_default();
            if !have.contains(v) {
                return Err(bad_input!(
                    "--baseline: no reported cell has `{k}={v}` (values of {k}: {})",
                    have.join(", ")
                ));
            }
        }
    }
    Ok(layout)
}

/// With several runs: which recorded facts differ between them (`None`
/// for one run).
fn report_comparability(
    st: &dyn store::StoreRead,
    reports: &[report::Report],
    expect: &[String],
) -> anyhow::Result<Option<report::comparability::Comparability>> {
    let expect = report::comparability::parse_expect(expect).map_err(|e| bad_input!("{e}"))?;
    let mut ids: Vec<i64> = Vec::new();
    for r in reports {
        match &r.subject {
            report::Subject::Run(row) => ids.push(row.id),
            report::Subject::Campaign { runs, .. } => ids.extend(runs.iter().map(|r| r.id)),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    Ok(if ids.len() > 1 {
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
    })
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

/// [`write_out`] for a document written as it is made, through a buffer.
fn write_with(
    path: Option<&std::path::Path>,
    write: &mut dyn FnMut(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    match path {
        Some(path) => {
            let cannot = |e: std::io::Error| bad_input!("{}: cannot write: {e}", path.display());
            let mut w = std::io::BufWriter::new(std::fs::File::create(path).map_err(cannot)?);
            write(&mut w).and_then(|()| w.flush()).map_err(cannot)?;
        }
        None => {
            let mut w = std::io::BufWriter::with_capacity(1 << 16, crate::term::Stdout);
            write(&mut w)?;
            w.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn import(
    db: &store::Locator,
    files: &[String],
    from: crate::cli::ImportFormat,
    campaign: Option<&str>,
    ministat: &crate::import::ministat::Options<'_>,
    labels: &crate::record::Labels,
) -> anyhow::Result<ExitCode> {
    use crate::cli::ImportFormat;
    if from != ImportFormat::Ministat
        && (ministat.column != 1 || ministat.delims != b" \t" || ministat.higher)
    {
        return Err(bad_input!("-C, -d and --higher apply to --from ministat"));
    }
    let read = |f: &String| {
        crate::input::read(
            std::path::Path::new(f),
            "an imported file",
            crate::input::IMPORT,
        )
    };
    let text = |f: &String, data: Vec<u8>| {
        String::from_utf8(data).map_err(|e| bad_input!("{f}: not UTF-8 text: {e}"))
    };
    if let Some(name) = campaign {
        crate::plan::check_campaign_name(name).map_err(|e| bad_input!("--name: {e}"))?;
    }
    use crate::import::ImportedRun;
    // Every file is read and checked before anything is stored.
    let mut runs = Vec::new();
    match from {
        ImportFormat::Hyperfine => {
            for f in files {
                let t = text(f, read(f)?)?;
                let cells = crate::import::hyperfine::parse(f, &t)?;
                runs.push(ImportedRun::new(
                    "hyperfine",
                    f,
                    &[t.as_bytes()],
                    cells,
                    campaign,
                ));
            }
        }
        // One run: the files are the variants ministat would compare.
        ImportFormat::Ministat => {
            let mut cells = Vec::new();
            let mut content: Vec<Vec<u8>> = vec![
                ministat.column.to_le_bytes().to_vec(),
                ministat.delims.to_vec(),
                vec![u8::from(ministat.higher)],
            ];
            for f in files {
                if files.iter().filter(|g| *g == f).count() > 1 {
                    return Err(bad_input!("{f}: named twice"));
                }
                let data = read(f)?;
                cells.push(crate::import::ministat::parse(f, &data, ministat)?);
                // The file's name is its cell's factor: part of the identity.
                content.push(f.as_bytes().to_vec());
                content.push(data);
            }
            let parts: Vec<&[u8]> = content.iter().map(Vec::as_slice).collect();
            runs.push(ImportedRun::new(
                "ministat",
                &files.join(" "),
                &parts,
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
                let t = text(f, read(f)?)?;
                let cells = crate::import::wis::parse(f, &stem, &t)?;
                runs.push(ImportedRun::new(
                    "will-it-scale",
                    f,
                    &[stem.as_bytes(), t.as_bytes()],
                    cells,
                    campaign,
                ));
            }
        }
    }
    // One transaction: an error or an interruption stores nothing.
    let mut st = store::open(db, store::Access::Write)?;
    let mut sink = store::sink::StoreSink::atomic(st.as_mut())?;
    // Ctrl-C or a kill ends the process before the commit: nothing stays.
    let mut ids = Vec::new();
    let mut again = Vec::new();
    for r in &runs {
        if let Some(id) = sink.stored_run_id(&r.uuid)? {
            again.push(format!("{} (run {id})", r.source));
            continue;
        }
        let mut labelled = event::labels::Labelled {
            labels,
            inner: &mut sink,
        };
        for e in r.events() {
            labelled.event(&e)?;
        }
        if let Some(id) = sink.run_id(&r.uuid) {
            ids.push(id.to_string());
        }
    }
    let added = sink.commit()?;
    if !ids.is_empty() {
        eprintln!(
            "kbench: {added} sample(s) imported as run(s) {}",
            ids.join(", ")
        );
    }
    if !again.is_empty() {
        eprintln!(
            "kbench: already imported, nothing added: {}",
            again.join(", ")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn ingest(db: &store::Locator, file: &str) -> anyhow::Result<ExitCode> {
    let input: Box<dyn std::io::BufRead> = if file == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        Box::new(std::io::BufReader::new(
            std::fs::File::open(file).map_err(|e| bad_input!("{file}: cannot read: {e}"))?,
        ))
    };
    let name = if file == "-" { "<stdin>" } else { file };
    // One transaction, written as the stream is read (memory stays flat
    // however long it is): a malformed line, or a stream that means
    // something impossible (a sample before its cell, a cell of a run it
    // did not begin, a sample the store holds with another value), stores
    // nothing.
    let mut reader = event::jsonl::Reader::new(input, name);
    let mut st = store::open(db, store::Access::Write)?;
    let mut sink = store::sink::StoreSink::atomic(st.as_mut())?;
    let mut runs = std::collections::BTreeSet::new();
    let mut events = 0usize;
    while let Some(e) = reader.next_event()? {
        events += 1;
        if let event::Event::RunBegun(b) = &e {
            runs.insert(b.run.clone());
        }
        sink.event(&e)
            .map_err(|err| err.context(format!("{name}:{}", reader.line())))?;
    }
    let added = sink.commit().map_err(|err| err.context(name.to_string()))?;
    eprintln!(
        "kbench: {events} event(s) of {} run(s) read; {added} new sample(s) stored",
        runs.len(),
    );
    Ok(ExitCode::SUCCESS)
}

/// How `kbench compare` tests: its flags besides the operands.
struct CompareHow<'a> {
    /// `None`: Student's t, and a single comparison printed short.
    test: Option<report::compare::Test>,
    confidence: f64,
    margin: &'a str,
    expect: &'a [String],
    adjust: crate::stats::multiple::Adjust,
    /// `--compat`: whose ministat the Student's t blocks imitate.
    ministat: crate::ministat::Version,
    metrics: report::compare::Metrics,
    /// `--explain N`: the N cells that changed most, explained.
    explain: Option<usize>,
}

/// `compare --json` / `--format`: text, JSON, Markdown or CSV.
fn compare_format(json: bool, format: Option<Format>) -> anyhow::Result<Format> {
    match one_format(json, format)? {
        None => Ok(Format::Text),
        Some(f @ (Format::Text | Format::Json | Format::Markdown | Format::Csv)) => Ok(f),
        Some(f) => Err(bad_input!(
            "--format {}: compare prints text, json, markdown or csv",
            f.name()
        )),
    }
}

/// The one format `--json` and `--format` ask for (`None`: neither).
fn one_format(json: bool, format: Option<Format>) -> anyhow::Result<Option<Format>> {
    match (json, format) {
        (true, Some(f)) if f != Format::Json => Err(bad_input!(
            "--json and --format {} ask for two formats; choose one",
            f.name()
        )),
        (true, _) => Ok(Some(Format::Json)),
        (false, f) => Ok(f),
    }
}

/// `kbench explain A B`.
fn explain(
    db: &store::Locator,
    a: &str,
    b: &str,
    confidence: f64,
    top: usize,
    format: Format,
    output: Option<&std::path::Path>,
) -> anyhow::Result<ExitCode> {
    if !(80.0..=99.9).contains(&confidence) {
        return Err(bad_input!(
            "--confidence {confidence}: must be within 80..99.9"
        ));
    }
    if format == Format::Csv || format == Format::WisCsv {
        return Err(bad_input!(
            "--format {}: explain prints text, json, markdown or html",
            format.name()
        ));
    }
    let st = store::open(db, store::Access::Read)?;
    let ask = crate::explain::Ask {
        a,
        b,
        confidence: confidence / 100.0,
        top,
    };
    let e = crate::explain::explain(&*st, &ask)?;
    let doc = Document::Explain(&e);
    write_with(output, &mut |w| {
        report::write(&doc, format, w).map_err(std::io::Error::other)
    })
}

fn compare(
    db: &store::Locator,
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
        ministat,
        metrics,
        explain,
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
    // The boot of each run and whether it interleaved its cells.
    let mut runs = std::collections::HashMap::new();
    // Operands often narrow the same run or campaign: load each once.
    let mut loaded: std::collections::HashMap<store::Scope, Vec<store::StoredCell>> =
        Default::default();
    for spec in operands {
        let op = select::resolve(&*st, spec)?;
        let cells = match loaded.entry(op.scope) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(st.cells(op.scope)?),
        };
        let mut cells = select::narrow(&op, cells.clone())?;
        report::compare::keep_metrics(&mut cells, &metrics)?;
        report::compare::RunBlocks::read(&*st, &cells, &mut runs)?;
        sels.push(report::compare::Selection {
            name: spec.clone(),
            fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
            cells,
            runs: runs.clone(),
        });
    }
    let tested = test.unwrap_or(report::compare::Test::STUDENT);
    let mut c = report::compare::compare_adjusted(&sels, tested, confidence, margin, adjust)?;
    c.ministat = ministat;
    // Asking for a ministat asks for its blocks.
    c.short =
        test.is_none() && ministat == crate::ministat::Version::FreeBsdMain && c.rows.len() == 1;
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
    let explained = match (explain, &operands[..]) {
        (Some(k), [a, b, ..]) => {
            let sels = [
                crate::explain::selection(&*st, &a.0)?,
                crate::explain::selection(&*st, &b.0)?,
            ];
            let worst = crate::explain::worst_rows(&c.rows, k);
            Some(crate::explain::attach(
                &*st,
                &sels,
                &worst,
                &explain_ask(a.0.as_str(), b.0.as_str(), confidence),
            )?)
        }
        _ => None,
    };
    out(&report::render_explained(
        &Document::Compare(&c),
        explained.as_ref(),
        format,
    )?)?;
    Ok(ExitCode::SUCCESS)
}

/// What `compare --explain` and `check --explain` ask of `explain`: the
/// comparison's confidence; the symbols `kbench explain` shows by default.
fn explain_ask<'a>(a: &'a str, b: &'a str, confidence: f64) -> crate::explain::Ask<'a> {
    crate::explain::Ask {
        a,
        b,
        confidence: confidence / 100.0,
        top: 10,
    }
}

fn plan_size(
    db: &store::Locator,
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
    let mut runs = Default::default();
    report::compare::RunBlocks::read(&*st, &cells, &mut runs)?;
    let sel = report::compare::Selection {
        name: pilot.to_string(),
        fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
        cells,
        runs,
    };
    let p = report::plan_size::plan_size(&sel, confidence, margin);
    if p.rows.is_empty() {
        return Err(bad_input!("`{pilot}` holds no samples to size from"));
    }
    print(&Document::PlanSize(&p), Format::json_if(json))
}

/// `kbench store check`: every problem on stdout, one line each.
fn store_check(db: &store::Locator) -> anyhow::Result<ExitCode> {
    let problems = store::check(db)?;
    if problems.is_empty() {
        out(&format!("{}: ok\n", db.redacted()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let text: Vec<String> = problems
        .iter()
        .map(|p| format!("{}\n", crate::term::visible(p)))
        .collect();
    out(&text.concat())?;
    Err(bad_input!(
        "{}: the store is damaged: {} problem(s) (listed above)",
        db.redacted(),
        problems.len()
    ))
}

fn store_copy(from: &str, to: &str, campaigns: &[String]) -> anyhow::Result<ExitCode> {
    let (from, to) = (
        store::Locator::parse(from, "--from")?,
        store::Locator::parse(to, "--to")?,
    );
    let src = store::open(&from, store::Access::Read)?;
    let mut dst = store::open(&to, store::Access::Write)?;
    let campaigns = select::campaigns(&*src, campaigns)?;
    let c = store::copy::copy(&*src, dst.as_mut(), &campaigns)?;
    eprintln!(
        "kbench: {} new run(s) of {} campaign(s), {} new sample(s) copied to {}",
        c.runs,
        c.campaigns,
        c.samples,
        to.redacted()
    );
    Ok(ExitCode::SUCCESS)
}

fn fleet(db: &store::Locator, command: FleetCommand) -> anyhow::Result<ExitCode> {
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
            // A store URL on the remote command line would show its
            // password in every host's process list.
            if let Some(a) = run_args
                .iter()
                .find(|a| *a == "--db" || a.starts_with("--db="))
            {
                return Err(bad_input!(
                    "`-- {}`: each host keeps its own store and streams to this one; name this one with --db before `fleet`",
                    crate::redact::text(a).into_owned()
                ));
            }
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
            let failed: Vec<&str> = (outcome.hosts.iter())
                .filter(|(_, e)| e.is_some())
                .map(|(n, _)| n.as_str())
                .collect();
            let done = outcome.hosts.len() - failed.len();
            if let Some(sig) = outcome.signal {
                eprintln!(
                    "kbench: interrupted by {}: {done} of {} host(s) done; the runs stopped are stored as interrupted (`kbench fleet status {plan} --hosts {hosts}`; re-run to resume)",
                    fleet::signal_name(sig),
                    hs.len(),
                );
                return Ok(ExitCode::from(u8::try_from(128 + sig).unwrap_or(1)));
            }
            eprintln!(
                "kbench: {done} of {} host(s) done{}",
                outcome.hosts.len(),
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
                let v = report::render::document("fleet_status", serde_json::to_value(&s)?);
                out(&format!("{v:#}\n"))?;
            } else {
                out(&fleet::status_text(&s))?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
