//! Command-line definitions (clap derive); doc comments are the help text.

use clap::{Args, Parser, Subcommand};

pub use crate::bisect::BisectArgs;
pub use crate::spec::MeasureArgs;

/// kbench: what does this patch, boot option or flag cost? Micro and macro
/// benchmarks, configuration matrices, a results store and ministat-exact
/// statistics in one tool.
#[derive(Debug, Parser)]
#[command(name = "kbench", version, max_term_width = 100)]
pub struct Cli {
    /// Results store: an SQLite file path (default
    /// $XDG_DATA_HOME/kbench/kbench.db), or a PostgreSQL URL
    /// `postgres://USER@HOST:PORT/DB` (password from PGPASSWORD or
    /// ~/.pgpass).
    #[arg(
        long,
        global = true,
        env = "KBENCH_DB",
        hide_env_values = true,
        value_name = "PATH|URL"
    )]
    pub db: Option<String>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run benchmarks: a plan file, benchmarks by name with parameters
    /// (`getppid:cpu=0`), or commands (`'sleep 0.01' 'sleep 0.013'`). With
    /// no argument, runs the short default suite.
    #[command(allow_negative_numbers = true)]
    Run(RunArgs),
    /// List the built-in benchmarks by family, one line each; `list WORD`
    /// keeps those whose name, family or reference tool holds WORD, `list
    /// NAME` describes one: parameters, metrics, reference tool.
    List {
        /// A benchmark's name, or a word to filter by (`pipe`, `files`,
        /// `lmbench`); `counters` lists the counters `--counters` takes.
        word: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show the system fingerprint recorded with every run, and noise
    /// warnings with their remedies.
    Sysinfo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List recorded runs.
    Runs {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a plan's campaign: done cells, cells to run now, and pending
    /// cells grouped by the system state (boot options, microcode) they
    /// need, with the plan's `[reboot]` command.
    Status {
        /// The plan file.
        plan: String,
        /// Print a systemd unit (and a cron @reboot line) that resumes the
        /// campaign after every boot.
        #[arg(long)]
        resume_unit: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Report recorded runs or campaigns (default: the latest run). The
    /// layout is the plan's `[report]` section (a campaign's) or ministat
    /// tables; the flags override it.
    Report(ReportArgs),
    /// Store a run event stream (`kbench run --events jsonl`) read from a
    /// file or `-` (standard input). Runs already in the store are
    /// completed, never doubled: ingesting a stream twice adds nothing.
    Ingest {
        /// The JSON-lines file, or `-`.
        file: String,
    },
    /// Import results measured by another tool as a run (fingerprint
    /// marked as imported), for `report` and `compare`. A malformed file
    /// stores nothing.
    Import {
        /// The files to read.
        #[arg(required = true)]
        files: Vec<String>,
        /// Their format.
        #[arg(long, value_enum)]
        from: ImportFormat,
        /// Add the imported runs to the campaign CAMPAIGN (created on first
        /// use), so `kbench report CAMPAIGN` shows them together.
        #[arg(long, value_name = "CAMPAIGN")]
        name: Option<String>,
        /// ministat: the column to read (1-based), as `ministat -C`.
        #[arg(short = 'C', long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(i64).range(1..))]
        column: i64,
        /// ministat: the column delimiters, as `ministat -d`.
        #[arg(short = 'd', long, value_name = "DELIMS", default_value = " \t")]
        delimiters: String,
        /// ministat: higher values are better (default: lower).
        #[arg(long)]
        higher: bool,
        /// Labels stored with the imported runs, `k=v,...` (repeatable).
        #[arg(long, value_name = "K=V,...", value_parser = crate::record::parse_labels)]
        label: Vec<crate::record::Labels>,
    },
    /// Compare recorded results: ministat's table and difference block for
    /// each benchmark, metric and cell, then a summary with a geomean row.
    /// Operands: run ids, campaigns (name, campaign:ID or PLAN.toml), each
    /// optionally narrowed as `NAME:factor=value,...`; the first is the
    /// baseline.
    Compare {
        /// Baseline, then contenders.
        #[arg(required = true, num_args = 2..)]
        operands: Vec<String>,
        /// Test behind each difference [default: student]. Naming one
        /// prints ministat's table and the test's block even for a single
        /// comparison, which is otherwise a short summary and its verdict.
        #[arg(long, value_enum)]
        test: Option<crate::report::compare::Test>,
        /// Confidence level in percent, 80..99.5 (ministat's Student's t
        /// accepts 80, 90, 95, 98, 99, 99.5).
        #[arg(long, default_value_t = 95.0, value_name = "PCT")]
        confidence: f64,
        /// Equivalence margin for the verdicts: a change whose interval
        /// lies within +/-PCT is "equivalent".
        #[arg(long, default_value = "1%", value_name = "PCT")]
        margin: String,
        /// A recorded fact the operands are meant to differ in
        /// (kernel.release, kernel.cmdline, cpu.microcode, ...; repeat or
        /// separate by commas): listed, but no warning.
        #[arg(long, value_name = "FACT", value_delimiter = ',')]
        expect: Vec<String>,
        /// Adjust the p-values of the family of tests by Benjamini-Hochberg
        /// (false discovery rate) instead of Holm (family-wise error rate).
        #[arg(long)]
        fdr: bool,
        /// The metrics compared, comma-separated (each metric's tests are
        /// one family) [default: each benchmark's primary metric, e.g. a
        /// command's `real`].
        #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
        metric: Vec<String>,
        /// Compare every recorded metric (each metric's tests are one
        /// family).
        #[arg(long, conflicts_with = "metric")]
        all_metrics: bool,
        /// Whose ministat the Student's t blocks imitate: `2015` prints
        /// Debian's `ministat` report of each row (names, plot, table,
        /// difference) byte for byte; `main` (the default) FreeBSD's
        /// difference block under kbench's table.
        #[arg(long, value_name = "VERSION", value_parser = ["2015", "main"])]
        compat: Option<String>,
        /// Explain the N cells that changed most (default 3): the counters
        /// per operation that moved, then the symbols (`run --profile`),
        /// as `kbench explain` does, after the comparison (its `explain`
        /// member in JSON).
        #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "3")]
        explain: Option<usize>,
        /// Print JSON instead of text (same as `--format json`).
        #[arg(long)]
        json: bool,
        /// Output format: text, json, markdown (tables for a review) or csv
        /// (a row per cell and contender) [default: text].
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<crate::report::Format>,
        #[command(flatten)]
        exports: crate::export::Exports,
    },
    /// Why two operands differ: the counters per operation that moved,
    /// then the symbols whose share of profile samples (`run --profile`)
    /// changed most, self and inclusive, each with an interval from the
    /// profiles paired by round, simultaneous over the symbols tested; a
    /// change inside the profile's own noise is marked `~`. Operands as
    /// for compare: the baseline first.
    Explain {
        /// Baseline.
        a: String,
        /// Contender.
        b: String,
        /// Confidence level of each family's intervals, in percent.
        #[arg(long, default_value_t = 95.0, value_name = "PCT")]
        confidence: f64,
        /// Symbol rows per cell (more when more changed).
        #[arg(long, default_value_t = 10, value_name = "N")]
        top: usize,
        /// Print JSON instead of text (same as `--format json`).
        #[arg(long)]
        json: bool,
        /// Output format: text, json, markdown, or html (with a
        /// differential flame graph per cell) [default: text].
        #[arg(long, value_enum, value_name = "FORMAT")]
        format: Option<crate::report::Format>,
        /// Write the explanation to FILE instead of standard output.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// A regression gate for CI: run the candidate and its baseline
    /// interleaved in one run (--against FACTOR=VALUE for a plan's level,
    /// --against-command OLD for commands), or compare the candidate with
    /// a baseline from the store (--baseline branch=main, a hint), and
    /// exit 0 pass, 1 regression, 2 bad input, 3 inconclusive. A cell
    /// regresses only when
    /// the whole Holm-adjusted interval of its change lies past
    /// --threshold on the worse side; it is unclear when the interval
    /// reaches past the threshold or a level of variation is not measured
    /// (one run a side: use --baseline-history N), and a baseline whose
    /// kernel or CPU facts differ makes the check inconclusive. Prints one
    /// line per cell, the verdict first, worst first.
    Check(CheckArgs),
    /// How many samples per side a comparison needs to detect a change of
    /// --margin with 80% power, from the spread a pilot run or campaign
    /// measured, counting the level that dominates it (runs when the
    /// pilot's runs differ, processes when its `--processes` differ), and
    /// the rounds a comparison paired by round needs.
    PlanSize {
        /// The pilot: a run id or campaign, optionally narrowed
        /// (`NAME:factor=value`).
        pilot: String,
        /// The change to detect.
        #[arg(long, default_value = "1%", value_name = "PCT")]
        margin: String,
        /// Confidence level of the comparison, in percent.
        #[arg(long, default_value_t = 95.0, value_name = "PCT")]
        confidence: f64,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Find the commit that made a benchmark worse: build each revision
    /// between --good and --bad in its own worktree, measure it
    /// interleaved with both ends until it is "like good" or "like bad",
    /// and binary-search the first-parent path. Every step is stored as a
    /// campaign (`kbench report CAMPAIGN`); `--exit-code` decides one
    /// revision for `git bisect run`.
    Bisect(BisectArgs),
    /// Run a plan on many hosts over OpenSSH, every result in this store.
    Fleet {
        #[command(subcommand)]
        command: FleetCommand,
    },
    /// Whole stores: copy runs and campaigns between them.
    Store {
        #[command(subcommand)]
        command: StoreCommand,
    },
    /// Print a shell completion script for kbench on standard output
    /// (`kbench completions bash > ~/.local/share/bash-completion/completions/kbench`).
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Print kbench's man page (roff) on standard output
    /// (`kbench man > ~/.local/share/man/man1/kbench.1`), or a command's
    /// page (`kbench man report > .../kbench-report.1`).
    Man {
        /// The command whose page to print, e.g. `report` or `fleet run`
        /// [default: the kbench page, which lists every command].
        #[arg(value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// FreeBSD ministat(1), byte for byte (`kbench ministat --help`).
    #[command(disable_help_flag = true)]
    Ministat {
        /// ministat's options and files.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Run the plan on every host of the hosts file, in parallel: copy
    /// kbench there when missing or different, stream each host's events
    /// into this store as they arrive, and resume each host's campaign
    /// (fetching what a broken connection left behind). One failing host
    /// never stops the others.
    Run {
        /// The plan file.
        plan: String,
        /// The hosts file (`[[host]]` tables: name, ssh, port, identity,
        /// known_hosts, ssh_options, labels; `[defaults]`).
        #[arg(long, value_name = "HOSTS.toml")]
        hosts: String,
        /// Hosts worked on at once.
        #[arg(long, default_value_t = 4, value_name = "N")]
        jobs: usize,
        /// Add the keys of hosts not yet in known_hosts (ssh's
        /// `accept-new`); a changed key is refused all the same.
        #[arg(long)]
        accept_new_host_keys: bool,
        /// No per-host progress lines.
        #[arg(long, short)]
        quiet: bool,
        /// Arguments for `kbench run` on each host (after `--`), e.g.
        /// `-- --quick`.
        #[arg(last = true, value_name = "RUN ARGS")]
        run_args: Vec<String>,
    },
    /// Each host's progress in this store, its state and its last error.
    Status {
        /// The plan file.
        plan: String,
        /// The hosts file.
        #[arg(long, value_name = "HOSTS.toml")]
        hosts: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Check the whole store (`--db`): its schema, every page, every index
    /// against its table (SQLite's integrity_check), and that no row lost
    /// the row it belongs to. Prints each problem; exits 2 if any.
    /// (Every command already checks the small tables when it opens a
    /// store, and `run`, `import` and `ingest` the samples' pages too.)
    Check,
    /// Copy runs and their campaigns from one store to another (SQLite
    /// file or postgres:// URL), by their stable identities: what the
    /// destination holds already is not copied again.
    Copy {
        /// The source store.
        #[arg(long, value_name = "PATH|URL")]
        from: String,
        /// The destination store (created when it is a new file).
        #[arg(long, value_name = "PATH|URL")]
        to: String,
        /// Only these campaigns (names, `campaign:ID` or plan files);
        /// default: every run.
        campaigns: Vec<String>,
    },
}

/// `kbench run`: what to measure, then what to print and how to run.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub measure: MeasureArgs,
    /// Two variants: stop as soon as their comparison is decided, either a
    /// difference or equivalence within the precision (default 1%).
    #[arg(long)]
    pub until_verdict: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Print the run's events on stdout instead of the report, one JSON
    /// object per line (schema in `src/event/mod.rs`); the run is stored
    /// as well.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub events: Option<EventsFormat>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
    /// Only run the teardowns of `shell` factors that a killed kbench left
    /// owed on this store (a `kbench run` runs them first anyway), then
    /// exit.
    #[arg(long)]
    pub teardown_only: bool,
    /// Print the cells, samples, pending cells and the estimated duration,
    /// then stop: nothing is measured or stored (a command runs once, to
    /// time it).
    #[arg(long)]
    pub dry_run: bool,
    /// Start a new campaign: for a plan edited since its campaign began
    /// (without it, kbench refuses to mix the two), or to measure an
    /// unchanged plan over again. The old campaign stays in the store.
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub exports: crate::export::Exports,
    /// Set by `kbench check`: store the run, print no report.
    #[arg(skip)]
    pub no_report: bool,
    /// Two or more variants: a table for every metric recorded, not only
    /// the summary of the primary one.
    #[arg(long)]
    pub all_metrics: bool,
}

/// The shared settings read as `a.samples` on a run's arguments.
impl std::ops::Deref for RunArgs {
    type Target = MeasureArgs;
    fn deref(&self) -> &MeasureArgs {
        &self.measure
    }
}

/// `kbench check`: the candidate's run settings, then the gate's.
#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub run: MeasureArgs,
    /// The baseline measured in the same run as the candidate, the two
    /// interleaved in rounds and compared paired by round (the recommended
    /// gate): FACTOR=VALUE names the plan's factor (or swept parameter)
    /// level that is the baseline; each other level is a candidate, checked
    /// against the baseline cell equal in everything else.
    #[arg(long, value_name = "FACTOR=VALUE",
          conflicts_with_all = ["baseline", "baseline_history", "against_command"])]
    pub against: Option<String>,
    /// The baseline as a command, measured in the same run as the
    /// candidate command(s), interleaved in rounds and paired by round.
    #[arg(long, value_name = "CMD",
          conflicts_with_all = ["baseline", "baseline_history", "candidate"])]
    pub against_command: Option<String>,
    /// The baseline from the store (a hint: it was measured at another
    /// time, whose drift reads as a change): labels its runs carry
    /// (`branch=main`, `k=v,...`) for the latest finished runs with them
    /// on this host, or a run id.
    #[arg(long, value_name = "SELECTOR",
          required_unless_present_any = ["against", "against_command"])]
    pub baseline: Option<String>,
    /// Use the last N comparable baseline runs, so run-to-run variation
    /// is measured from the history (one run a side cannot measure it)
    /// [default: 1].
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub baseline_history: u32,
    /// Compare stored runs instead of running: a run id, or labels for
    /// the latest finished run with them on this host (with --against:
    /// the run that holds both levels).
    #[arg(long, value_name = "SELECTOR")]
    pub candidate: Option<String>,
    /// The change a regression must exceed with its whole interval.
    #[arg(long, default_value = "2%", value_name = "PCT")]
    pub threshold: String,
    /// What an inconclusive check exits with: 3 [default], or `fail` (1)
    /// or `pass` (0).
    #[arg(long, value_enum, value_name = "HOW")]
    pub inconclusive: Option<Inconclusive>,
    /// `better`: every gated cell must improve past the threshold; or a
    /// recorded fact meant to differ from the baseline (kernel.release,
    /// ...), which then does not make the check inconclusive.
    #[arg(long, value_name = "better|FACT", value_delimiter = ',')]
    pub expect: Vec<String>,
    /// Confidence level of the intervals, percent (before the Holm
    /// adjustment across the cells).
    #[arg(long, default_value_t = 95.0, value_name = "PCT")]
    pub confidence: f64,
    /// Output format: text, json, markdown (a pull-request comment) or
    /// junit (XML, one test case per cell). With GITHUB_STEP_SUMMARY set,
    /// the Markdown is appended to that file too.
    #[arg(long, value_enum, value_name = "FORMAT", default_value = "text")]
    pub format: CheckFormat,
    /// Explain the N worst cells (default 3): the counters per operation
    /// that moved, then the symbols (`run --profile`), as `kbench
    /// explain` does, after the verdicts (its `explain` member in JSON).
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "3")]
    pub explain: Option<usize>,
    /// Measure the candidate twice with nothing changed (A/A), check each
    /// against the baseline, and print per benchmark and metric the
    /// smallest threshold at which at most 5% of checks of identical code
    /// fail or end inconclusive (the runs are stored). With --against,
    /// the plan is measured twice, its levels holding identical code.
    #[arg(long, conflicts_with_all = ["candidate", "format", "expect", "against_command"])]
    pub calibrate: bool,
}

/// `kbench check --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CheckFormat {
    Text,
    Json,
    Markdown,
    Junit,
}

/// What an inconclusive `kbench check` exits with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Inconclusive {
    /// Exit 1, as a regression.
    Fail,
    /// Exit 0.
    Pass,
}

/// Shells `kbench completions` writes a script for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CompletionShell {
    /// bash (bash-completion).
    Bash,
    /// zsh (a `_kbench` function for `fpath`).
    Zsh,
    /// fish.
    Fish,
}

impl From<CompletionShell> for clap_complete::Shell {
    fn from(s: CompletionShell) -> Self {
        match s {
            CompletionShell::Bash => clap_complete::Shell::Bash,
            CompletionShell::Zsh => clap_complete::Shell::Zsh,
            CompletionShell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// How `kbench run --events` prints the event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum EventsFormat {
    /// One JSON object per line.
    Jsonl,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn verify_cli() {
        Cli::command().debug_assert();
    }
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Run ids, campaign names (the latest campaign of that name),
    /// `campaign:ID`, or a plan file (its campaign), each optionally
    /// narrowed as `NAME:factor=value,...`.
    pub runs: Vec<String>,
    /// Print JSON instead of text (same as `--format json`).
    #[arg(long)]
    pub json: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<crate::report::Format>,
    /// Write the report to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<std::path::PathBuf>,
    /// Layout: ministat tables, % improvement over a baseline, ratios to a
    /// baseline with a geomean row, a matrix per benchmark, or scaling
    /// curves [default: the plan's `[report] table`, else ministat].
    #[arg(long, value_enum, value_name = "KIND")]
    pub table: Option<crate::plan::report::TableKind>,
    /// The baseline variant, e.g. `pipe_size=4k,zero_copy=copy`.
    #[arg(long, value_name = "DIM=VALUE,...")]
    pub baseline: Option<String>,
    /// Dimensions (factors, parameters, and whose data: `host`, `import`,
    /// `run`) along the rows, comma-separated.
    #[arg(long, value_name = "DIM,...", value_delimiter = ',')]
    pub rows: Option<Vec<String>>,
    /// Dimensions across the columns.
    #[arg(long, value_name = "DIM,...", value_delimiter = ',')]
    pub cols: Option<Vec<String>>,
    /// Dimensions that group the columns (`2way | UP`).
    #[arg(long, value_name = "DIM,...", value_delimiter = ',')]
    pub groups: Option<Vec<String>>,
    /// Merge a campaign's runs of different origin (hosts, imported
    /// files) into one row per cell; by default they stay apart, each
    /// labelled (`host`, `import`, `run` are dimensions like factors).
    #[arg(long)]
    pub pool: bool,
    /// Print `µ` and `±` in text instead of ASCII `us` and `+/-`.
    #[arg(long)]
    pub unicode: bool,
    /// Whose ministat a matrix's difference blocks (`pairs`) imitate in
    /// text: `2015` prints Debian's `ministat` report of the two rows
    /// (names, plot, table, difference) byte for byte; `main` (the
    /// default) FreeBSD's difference block.
    #[arg(long, value_name = "VERSION", value_parser = ["2015", "main"])]
    pub compat: Option<String>,
    /// Two or more variants: a table for every metric recorded, not only
    /// the summary of the primary one.
    #[arg(long)]
    pub all_metrics: bool,
    /// HTML: scaling charts on a logarithmic ops/s axis (curves far apart
    /// in size, e.g. two systems, stay readable).
    #[arg(long)]
    pub log_y: bool,
    /// A recorded fact the reported runs are meant to differ in
    /// (kernel.release, cpu.microcode, ...; repeat or separate by commas):
    /// listed, but no warning.
    #[arg(long, value_name = "FACT", value_delimiter = ',')]
    pub expect: Vec<String>,
    /// The history of one benchmark cell across every stored run that
    /// measured it (`BENCH[:param=value,...]`), with its change points;
    /// takes no RUN operands.
    #[arg(long, value_name = "BENCH[:k=v,...]", conflicts_with_all = ["runs", "table", "baseline", "rows", "cols", "groups", "pool", "log_y"])]
    pub history: Option<String>,
    /// With --history: the metric [default: the benchmark's first].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// With --history: a point per run in time order, or a point per
    /// revision (the `revision` factor or parameter, else the kernel
    /// release) in the order revisions were first measured (by run, then
    /// in the plan's order).
    #[arg(long, value_enum, value_name = "ORDER", default_value = "time")]
    pub by: crate::report::history::Order,
    /// With --history: only runs of campaigns of this name.
    #[arg(long, value_name = "NAME")]
    pub campaign: Option<String>,
}

/// Formats `kbench import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// hyperfine --export-json: a cell per command, a sample per run.
    Hyperfine,
    /// ministat data files: one run, a cell per file, a sample per value.
    Ministat,
    /// will-it-scale's runtest.py CSV: a scale benchmark per file.
    WillItScale,
}
