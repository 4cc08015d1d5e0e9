//! `kbench bisect`'s command line (clap derive; doc comments are the
//! help text), beside the code that reads it.

use clap::Args;

/// `kbench bisect`: find the commit that made a benchmark slower.
#[derive(Debug, Args)]
pub struct BisectArgs {
    /// The git repository.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub repo: std::path::PathBuf,
    /// A revision without the regression.
    #[arg(long, value_name = "REV")]
    pub good: String,
    /// A revision with it (the good one must be a first-parent ancestor).
    #[arg(long, value_name = "REV")]
    pub bad: String,
    /// Build command, run by `sh -c` in each revision's worktree
    /// (`$KBENCH_COMMIT` is the commit id); a revision whose build fails
    /// is skipped. Builds are cached by commit id.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// What to measure: a built-in benchmark (`getppid:cpu=0`), a
    /// command run in the revision's worktree (`cmd:./prog -n 3`), or a
    /// plan cell (`PLAN.toml:factor=value,...`, the plan read from the
    /// revision's tree when it has it).
    #[arg(long, value_name = "SPEC")]
    pub bench: String,
    /// The metric decided on [default: the benchmark's first, e.g.
    /// `real` for a command].
    #[arg(long, value_name = "M")]
    pub metric: Option<String>,
    /// A revision is bad when it is worse than the good end by more than
    /// this.
    #[arg(long, default_value = "2%", value_name = "PCT")]
    pub threshold: String,
    /// Most samples of a revision (and of each end) in one step; a
    /// revision still undecided then is skipped, with how many more
    /// samples would decide it. A step stops as soon as it is decided;
    /// under a competing load a 6% regression needed up to 60 rounds.
    #[arg(long, default_value_t = 60, value_name = "N")]
    pub max_samples: u32,
    /// Warm-up rounds discarded at each step.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub warmup: u32,
    /// Target seconds per sample of a built-in benchmark.
    #[arg(long, default_value_t = 0.2, value_name = "S")]
    pub sample_time: f64,
    /// Seed of the shuffled sample order.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The campaign the measurements are stored in (each bisection is a
    /// new generation of it; `kbench report NAME` shows the latest).
    #[arg(long, default_value = "bisect", value_name = "CAMPAIGN")]
    pub name: String,
    /// Where revisions are checked out and built [default:
    /// $XDG_CACHE_HOME/kbench/bisect].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<std::path::PathBuf>,
    /// For `git bisect run`: decide one revision (--rev, default HEAD)
    /// against the ends and exit 0 (good), 1 (bad) or 125 (skip: the
    /// build failed or the samples cannot decide); errors exit 128, which
    /// stops `git bisect run`.
    #[arg(long)]
    pub exit_code: bool,
    /// With --exit-code: the revision to decide.
    #[arg(long, value_name = "REV", requires = "exit_code")]
    pub rev: Option<String>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
    /// No progress lines on stderr.
    #[arg(long, short)]
    pub quiet: bool,
}
