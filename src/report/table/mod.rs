//! Tables as data (benchstat's `benchtab` is the model): a table holds one
//! benchmark's cells, its rows and columns are projections of the cells'
//! dimensions (factors and parameters), and each cell holds numbers (a
//! mean with its interval, a change with its test, a ratio), never text.
//! The layouts of [`TableKind`] are choices of rows, columns, column groups
//! and baseline made by a [`Layout`] (the plan's `[report]` section and the
//! `kbench report` flags), not separate code paths; its renderers
//! (`text.rs`, `markdown.rs`, `html.rs` here) only format, and what reads
//! differently per layout is asked of `layout.rs`.
//!
//! Labels show only what varies: a dimension with one value across a
//! table's cells is moved to the table's `constant` legend.

mod grid;
mod html;
mod layout;
mod markdown;
#[cfg(test)]
pub(crate) mod tests;
mod text;

use indexmap::IndexMap;
use serde::Serialize;

use super::scale::Scaling;
use super::{CellSummary, Report, Subject, push_unique};
use crate::plan::report::{Assign, Layout, TableKind};
use crate::record::Direction;
use crate::stats::design::{self, Degenerate, Design, Level, Obs};
use crate::stats::student::{self, Moments};
use crate::stats::{Confidence, Sample};

/// The arms of a comparison a table cell shows, kept to take its
/// interval again at the family's adjusted level.
pub type Arms = std::sync::Arc<(Vec<Obs>, Vec<Obs>, Direction)>;

/// What `kbench report` prints when a layout other than ministat's is
/// chosen: a title, the tables, scaling curves and the systems measured.
#[derive(Clone, Debug, Serialize)]
pub struct TableDoc {
    pub title: Vec<String>,
    /// The answer to each question the runs ask (two or more variants of
    /// one benchmark): the verdict sentence with its interval, as the text
    /// report and `summary.verdicts[].sentence` state it, first in every
    /// format.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<String>,
    /// The layout (`improvement`, `ratio`, ...); `kind` names the document.
    #[serde(rename = "layout")]
    pub kind: TableKind,
    pub tables: Vec<Table>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scaling: Vec<Scaling>,
    pub systems: Vec<SystemBlock>,
    /// Why some benchmark has no table under this layout.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
    /// How the numbers were taken: samples, warm-ups, order and seed,
    /// outlier handling, the command line.
    pub methods: Vec<String>,
    /// The campaign's plan, as run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<String>,
    /// Print `µ` and box characters instead of ASCII (text only).
    #[serde(skip)]
    pub unicode: bool,
    /// Whose ministat the difference blocks imitate in text: FreeBSD
    /// main's block, or with `--compat=2015` Debian's whole report.
    #[serde(skip)]
    pub ministat: crate::ministat::Version,
    /// Charts: a logarithmic value axis for scaling curves.
    #[serde(skip)]
    pub log_y: bool,
    /// With several runs: the recorded facts that differ between them
    /// (`comparability.rs`), set by the caller from the runs'
    /// fingerprints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparability: Option<super::comparability::Comparability>,
    /// HTML: each profiled cell's flame graph (`run --profile`), by cell
    /// name, set by the caller from the store.
    #[serde(skip)]
    pub flames: Vec<(String, crate::profile::Folded)>,
}

/// One column: a variant of the compared dimensions, or (matrix) a metric.
#[derive(Clone, Debug, Serialize)]
pub struct Column {
    pub label: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The dimension values the column stands for.
    pub assign: Vec<(String, String)>,
    /// The prefixed unit every value of the column is printed in (a
    /// matrix's metric columns), shown once in the column's heading.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shown_unit: Option<String>,
}

/// A number a table shows.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Value {
    /// A mean and the half-width of its confidence interval.
    Mean {
        mean: f64,
        half: Option<f64>,
        n: usize,
    },
    /// The change of a variant over its baseline, new/baseline - 1 in
    /// percent (positive: the value grew; better or worse by the
    /// column's direction), with the interval and p-value of the
    /// analysis the design calls for (`stats::design`).
    Change {
        pct: f64,
        /// The interval in percent (above -100); `None` when a level is
        /// not measured (`unmeasured`).
        lo: Option<f64>,
        hi: Option<f64>,
        p: Option<f64>,
        /// Whether the interval excludes 0. In a document of several
        /// changes the interval is taken at the level the Holm-adjusted
        /// p is decided at, so mark and interval agree.
        significant: bool,
        /// Units per side (rounds when paired).
        n1: usize,
        n2: usize,
        /// `p` adjusted across the document's changes (Holm).
        #[serde(skip_serializing_if = "Option::is_none")]
        p_adjusted: Option<f64>,
        /// The level (run, boot) with one replicate a side: not judged.
        #[serde(skip_serializing_if = "Option::is_none")]
        unmeasured: Option<Level>,
        #[serde(skip)]
        arms: Option<Arms>,
    },
    /// A mean (absent in a geomean row) and its ratio to the baseline's,
    /// with the ratio's interval (above 0).
    Ratio {
        mean: Option<f64>,
        half: Option<f64>,
        ratio: f64,
        lo: Option<f64>,
        hi: Option<f64>,
        significant: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        p: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        p_adjusted: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        unmeasured: Option<Level>,
        #[serde(skip)]
        arms: Option<Arms>,
    },
}

impl Value {
    /// The level a comparison could not measure, if any.
    pub fn unmeasured(&self) -> Option<Level> {
        match self {
            Value::Change { unmeasured, .. } | Value::Ratio { unmeasured, .. } => *unmeasured,
            Value::Mean { .. } => None,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct TableRow {
    pub labels: Vec<String>,
    /// `groups.len() * cols.len()` cells, group-major.
    pub cells: Vec<Option<Value>>,
}

/// ministat's difference block between two rows of a matrix.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    pub metric: String,
    /// The unit of the block's numbers (the metric's stored unit).
    pub unit: String,
    pub baseline: String,
    pub contender: String,
    pub a: Moments,
    pub b: Moments,
    /// Index of the confidence level in ministat's table.
    pub level: usize,
    /// Each side's values in the order they were taken, for ministat's
    /// own report (`--compat=2015`).
    #[serde(skip)]
    pub points: [Vec<f64>; 2],
}

#[derive(Clone, Debug, Serialize)]
pub struct Table {
    pub kind: TableKind,
    pub bench: String,
    /// The metric (all columns share it), or none for a matrix.
    pub metric: Option<String>,
    pub unit: Option<String>,
    pub direction: Option<Direction>,
    /// Section: `host`, `revision` values this table is restricted to.
    pub section: Vec<(String, String)>,
    /// Dimensions with one value in this table (`placement=none`).
    pub constant: Vec<(String, String)>,
    /// What the numbers mean (`% improvement over ...`).
    pub legend: Vec<String>,
    pub row_dims: Vec<String>,
    /// Column-group header (`cpus`) and the group labels (`2way`, `UP`);
    /// one empty label when there are no groups.
    pub group_dims: Vec<String>,
    pub groups: Vec<String>,
    pub cols: Vec<Column>,
    pub rows: Vec<TableRow>,
    /// Rows computed over the others (`geomean`).
    pub summary: Vec<TableRow>,
    pub diffs: Vec<Diff>,
}

/// `kbench sysinfo`'s essentials for the reader of a report (the LLVM
/// JCC-erratum report's "System Configuration").
#[derive(Clone, Debug, Serialize)]
pub struct SystemBlock {
    pub host: String,
    pub os: String,
    pub kernel: String,
    pub memory_bytes: u64,
    pub sockets: usize,
    pub cores: usize,
    pub threads: usize,
    pub smt: Option<String>,
    pub cpu_model: Option<String>,
    /// Microcode revision, per system state when the states differ.
    pub microcode: Vec<(String, String)>,
    /// When the runs took place (UTC timestamps).
    pub first: f64,
    pub last: f64,
    pub warnings: Vec<String>,
    /// Imported results: kbench did not see the machine, so its facts
    /// are unknown (never zeros).
    pub imported: bool,
}

impl SystemBlock {
    /// The block's lines as (label, value), in order: what the text and
    /// Markdown renderers print (dates as days, one line per microcode
    /// state and per noise warning).
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let unknown = || {
            if self.imported {
                "unknown (imported)".to_string()
            } else {
                "unknown".to_string()
            }
        };
        let mut v = vec![
            ("OS", self.os.clone()),
            ("Kernel", self.kernel.clone()),
            (
                "Memory",
                if self.memory_bytes == 0 {
                    unknown()
                } else {
                    format!("{:.1} GiB", self.memory_bytes as f64 / (1u64 << 30) as f64)
                },
            ),
            (
                "CPUs",
                if self.threads == 0 {
                    unknown()
                } else {
                    format!(
                        "{} socket(s), {} core(s), {} thread(s), SMT {}",
                        self.sockets,
                        self.cores,
                        self.threads,
                        self.smt.as_deref().unwrap_or("unknown")
                    )
                },
            ),
            (
                "CPU model",
                self.cpu_model.clone().unwrap_or_else(|| "unknown".into()),
            ),
        ];
        for (state, m) in &self.microcode {
            let m = if state.is_empty() {
                m.clone()
            } else {
                format!("{m} ({state})")
            };
            v.push(("Microcode", m));
        }
        let day = |t: f64| super::fmt::time(t).chars().take(10).collect::<String>();
        let (a, b) = (day(self.first), day(self.last));
        v.push(("Date", if a == b { a } else { format!("{a} .. {b}") }));
        v.extend(self.warnings.iter().map(|w| ("Noise", w.clone())));
        if self.warnings.is_empty() {
            // No warning is a finding only where kbench looked.
            let none = if self.imported {
                unknown()
            } else {
                "no warning".into()
            };
            v.push(("Noise", none));
        }
        v
    }
}

/// A row's dimensions: factors, then parameters (sizes as `2k`), then
/// its origin (`host`, `import`, `run`) and `revision`.
fn dims_of(r: &CellSummary, host: &str) -> IndexMap<String, String> {
    let mut d = r.factors.clone();
    for k in r.params.keys() {
        if !d.contains_key(k) {
            d.insert(k.clone(), super::param_label(&r.source, &r.params, k));
        }
    }
    if !host.is_empty() {
        d.insert("host".into(), host.to_string());
    }
    for (k, v) in &r.origin {
        if k != "host" {
            d.insert(k.clone(), v.clone());
        }
    }
    if !d.contains_key("revision")
        && let Some(k) = r.readings.get("kernel.release")
    {
        d.insert("revision".into(), k.clone());
    }
    d
}

/// Cells of one table with their dimensions.
struct Cells<'a> {
    rows: Vec<(&'a CellSummary, IndexMap<String, String>)>,
}

impl<'a> Cells<'a> {
    /// Names whose value differs between cells, in first-seen order.
    fn varying(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for (_, d) in &self.rows {
            for k in d.keys() {
                if !names.contains(k) {
                    names.push(k.clone());
                }
            }
        }
        let varying: Vec<String> = names
            .into_iter()
            .filter(|k| {
                let first = self.rows[0].1.get(k);
                self.rows.iter().any(|(_, d)| d.get(k) != first)
            })
            .collect();
        // A parameter a factor sets (`env.WORK` of factor `work`) moves
        // with it one to one: the factor's label says it already.
        let factors: Vec<&String> = varying
            .iter()
            .filter(|k| self.rows.iter().all(|(c, _)| c.factors.contains_key(*k)))
            .collect();
        varying
            .iter()
            .filter(|k| factors.contains(k) || !factors.iter().any(|f| self.one_to_one(f, k)))
            .cloned()
            .collect()
    }

    /// Do `a` and `b` determine each other across the cells?
    fn one_to_one(&self, a: &str, b: &str) -> bool {
        let mut ab: IndexMap<Option<&String>, Option<&String>> = IndexMap::new();
        let mut ba: IndexMap<Option<&String>, Option<&String>> = IndexMap::new();
        for (_, d) in &self.rows {
            let (x, y) = (d.get(a), d.get(b));
            if *ab.entry(x).or_insert(y) != y || *ba.entry(y).or_insert(x) != x {
                return false;
            }
        }
        true
    }

    fn constant(&self, varying: &[String], hide: &[&str]) -> Vec<(String, String)> {
        let Some((_, d)) = self.rows.first() else {
            return Vec::new();
        };
        d.iter()
            .filter(|(k, v)| {
                !varying.contains(k)
                    && !hide.contains(&k.as_str())
                    && self.rows.iter().all(|(_, x)| x.get(*k) == Some(*v))
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

fn key(d: &IndexMap<String, String>, dims: &[String]) -> Vec<String> {
    dims.iter()
        .map(|k| d.get(k).cloned().unwrap_or_else(|| "-".into()))
        .collect()
}

fn matches(d: &IndexMap<String, String>, a: &Assign) -> bool {
    a.iter().all(|(k, v)| d.get(k) == Some(v))
}

fn assign_text(a: &[(String, String)]) -> String {
    pairs_text(a.iter().map(|(k, v)| (k, v)))
}

/// `k=v,...` of the column factors `cols` at the values `vals` (a column
/// key, the baseline's included).
fn columns_text(cols: &[String], vals: &[String]) -> String {
    pairs_text(cols.iter().zip(vals))
}

fn pairs_text<'a>(pairs: impl Iterator<Item = (&'a String, &'a String)>) -> String {
    pairs
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Host of the runs a row holds.
fn host_of(r: &CellSummary, hosts: &IndexMap<i64, String>, only: &str) -> String {
    let mut hs: Vec<&str> = r
        .runs
        .iter()
        .filter_map(|id| hosts.get(id).map(|s| s.as_str()))
        .collect();
    hs.dedup();
    match hs.as_slice() {
        [] => only.to_string(),
        [h] => h.to_string(),
        many => many.join("+"),
    }
}

/// The rows, columns and groups a layout gives one table's cells.
/// The baseline's value of each column dimension: the layout's `baseline`
/// where it names the dimension, else the value in the `first` column key.
fn baseline_key(layout: &Layout, cols: &[String], first: &[String]) -> Vec<String> {
    cols.iter()
        .enumerate()
        .map(|(i, d)| {
            layout
                .baseline
                .iter()
                .find(|(k, _)| k == d)
                .map(|(_, v)| v.clone())
                .unwrap_or_else(|| first[i].clone())
        })
        .collect()
}

struct Axes {
    rows: Vec<String>,
    cols: Vec<String>,
    groups: Vec<String>,
}

fn axes(layout: &Layout, varying: &[String], default_cols: Vec<String>) -> Axes {
    let pick = |want: &[String]| -> Vec<String> {
        want.iter()
            .filter(|d| varying.contains(d))
            .cloned()
            .collect()
    };
    let groups = pick(&layout.groups);
    let mut cols = pick(&layout.cols);
    if cols.is_empty() {
        cols = default_cols
            .into_iter()
            .filter(|d| varying.contains(d) && !groups.contains(d))
            .collect();
    }
    let mut rows = pick(&layout.rows);
    rows.retain(|d| !cols.contains(d) && !groups.contains(d));
    for d in varying {
        if !rows.contains(d) && !cols.contains(d) && !groups.contains(d) {
            rows.push(d.clone());
        }
    }
    Axes { rows, cols, groups }
}

/// A column's label: the variant's name when one matches, else its
/// values. A variant names a column when each of its assignments holds
/// there, by the column's own values or the table's constant ones (`hw`
/// is `sw=baseline` only where `mcu=hw` too).
fn col_label(
    layout: &Layout,
    dims: &[String],
    ck: &[String],
    constant: &[(String, String)],
) -> String {
    let mut assign: Vec<(String, String)> = dims.iter().cloned().zip(ck.iter().cloned()).collect();
    assign.extend(constant.iter().cloned());
    for (name, a) in &layout.variants {
        if a.iter().any(|(k, _)| dims.contains(k)) && a.iter().all(|kv| assign.contains(kv)) {
            return name.clone();
        }
    }
    ck.join(",")
}

/// Order of a column: its variant's position, unnamed ones after.
fn col_rank(layout: &Layout, label: &str) -> usize {
    layout
        .variants
        .iter()
        .position(|(n, _)| n == label)
        .unwrap_or(usize::MAX)
}

fn sample(r: &CellSummary) -> Option<Sample> {
    Sample::new(&r.values).ok()
}

fn mean_value(r: &CellSummary) -> Value {
    Value::Mean {
        mean: r.summary.mean,
        half: r.ci95.map(|[lo, hi]| (hi - lo) / 2.0),
        n: r.summary.n,
    }
}

/// The design's comparison of `v` with `b` at `conf`.
fn compare_cells(
    b: &CellSummary,
    v: &CellSummary,
    conf: Confidence,
) -> (Result<Design, Degenerate>, Arms) {
    let arms: Arms = std::sync::Arc::new((b.obs.clone(), v.obs.clone(), v.direction));
    (design::compare(&arms.0, &arms.1, arms.2, conf), arms)
}

/// Change of `v` over `b`: new/baseline - 1 in percent.
fn change(b: &CellSummary, v: &CellSummary, layout: &Layout) -> Result<Value, Degenerate> {
    let (d, arms) = compare_cells(b, v, Confidence::percent(layout.confidence));
    Ok(change_value(&d?, Some(arms)))
}

fn change_value(d: &Design, arms: Option<Arms>) -> Value {
    let iv = d.change_interval();
    Value::Change {
        pct: d.change() * 100.0,
        lo: iv.map(|i| i.lo * 100.0),
        hi: iv.map(|i| i.hi * 100.0),
        p: d.p.filter(|_| d.too_few.is_none()),
        significant: d.significant(),
        n1: d.n[0],
        n2: d.n[1],
        p_adjusted: None,
        unmeasured: d.unmeasured,
        arms,
    }
}

/// The baseline's own ratio cell: 1 by definition, no interval or test.
fn baseline_ratio(mean: Option<f64>, half: Option<f64>) -> Value {
    Value::Ratio {
        mean,
        half,
        ratio: 1.0,
        lo: None,
        hi: None,
        significant: false,
        p: None,
        p_adjusted: None,
        unmeasured: None,
        arms: None,
    }
}

fn ratio_value(b: &CellSummary, v: &CellSummary, layout: &Layout) -> Result<Value, Degenerate> {
    let same = std::ptr::eq(b, v);
    let mean = sample(v).map(|s| s.mean());
    let half = v.ci95.map(|[lo, hi]| (hi - lo) / 2.0);
    if same {
        return Ok(baseline_ratio(mean, half));
    }
    let (d, arms) = compare_cells(b, v, Confidence::percent(layout.confidence));
    Ok(ratio_of(&d?, mean, half, Some(arms)))
}

fn ratio_of(d: &Design, mean: Option<f64>, half: Option<f64>, arms: Option<Arms>) -> Value {
    let iv = d.log_interval.filter(|_| d.too_few.is_none());
    Value::Ratio {
        mean,
        half,
        ratio: d.log_ratio.exp(),
        lo: iv.map(|i| i.lo.exp()),
        hi: iv.map(|i| i.hi.exp()),
        significant: d.significant(),
        p: d.p.filter(|_| d.too_few.is_none()),
        p_adjusted: None,
        unmeasured: d.unmeasured,
        arms,
    }
}

/// Whether a layout table shows group `g`: the benchmark's own metrics
/// always, the event counters recorded beside them (`<counter>/op`, IPC)
/// only with `--all-metrics`. A table and its family of comparisons (the
/// Holm adjustment) are then the same whether counters were recorded or
/// not.
fn laid_out(r: &Report, g: &super::Group) -> bool {
    r.all_metrics || !crate::system::counters::is_metric(&g.metric)
}

/// Build the tables of `report` under `layout`.
pub fn build(reports: &[Report], layout: &Layout, unicode: bool) -> TableDoc {
    let mut doc = TableDoc {
        title: Vec::new(),
        answers: Vec::new(),
        kind: layout.table,
        tables: Vec::new(),
        scaling: Vec::new(),
        systems: Vec::new(),
        skipped: Vec::new(),
        methods: Vec::new(),
        plan: None,
        unicode,
        ministat: crate::ministat::Version::FreeBsdMain,
        log_y: false,
        comparability: None,
        flames: Vec::new(),
    };
    for r in reports {
        doc.title.push(title(r));
        // (A scaling sweep's answer is its curves and flattening point.)
        if layout.table != TableKind::Scaling {
            doc.answers.extend(
                (r.summary.iter())
                    .flat_map(|s| &s.verdicts)
                    .map(|v| v.sentence.clone()),
            );
        }
        let (hosts, only) = hosts(r);
        match layout.table {
            TableKind::Improvement | TableKind::Change | TableKind::Ratio | TableKind::Ministat => {
                for g in &r.groups {
                    if g.direction == Direction::Info || !laid_out(r, g) {
                        continue;
                    }
                    let cells = Cells {
                        rows: g
                            .rows
                            .iter()
                            .map(|c| (c, dims_of(c, &host_of(c, &hosts, &only))))
                            .collect(),
                    };
                    let t = if layout.table == TableKind::Ratio {
                        ratio_table(&cells, layout, &g.bench, &g.metric)
                    } else {
                        improvement_table(&cells, layout, &g.bench, &g.metric)
                    };
                    match t {
                        Ok(t) => doc.tables.push(t),
                        Err(why) => doc.skipped.push(format!("{} {}: {why}", g.bench, g.metric)),
                    }
                }
                if layout.table == TableKind::Ratio
                    && let Some(normalised) = ratio_summary(&doc.tables)
                {
                    doc.tables.extend(values_summary(&doc.tables));
                    doc.tables.push(normalised);
                }
            }
            TableKind::Matrix => doc.tables.extend(matrix_tables(r, layout, &hosts, &only)),
            TableKind::Scaling => {}
        }
        if let Some(c) = r.config() {
            doc.methods.push(format!(
                "{} sample(s) per cell of ~{} s each after {} warm-up(s); the cells' samples are taken in interleaved rounds, in an order shuffled with seed {}",
                c.samples, c.sample_time, c.warmup, c.seed
            ));
            doc.methods.push(
                "outliers (modified z-score > 3.5) are flagged in the ministat report and kept in every statistic".into(),
            );
            if !c.argv.is_empty() {
                doc.methods
                    .push(format!("command: {}", crate::term::shell_line(&c.argv)));
            }
        }
        if let Subject::Campaign { campaign, .. } = &r.subject
            && !campaign.plan_text.is_empty()
        {
            doc.plan = Some(campaign.plan_text.clone());
        }
        // Several operands: each curve says whose it is.
        doc.scaling.extend(r.scaling.iter().cloned().map(|mut s| {
            if reports.len() > 1 {
                s.context.push(operand_name(r));
            }
            s
        }));
        if let Some(s) = system_block(r) {
            doc.systems.push(s);
        }
    }
    adjust_changes(&mut doc, layout);
    turn_improvements(&mut doc);
    doc
}

/// An improvement table of a lower-is-better metric: each change and its
/// interval turned, (baseline - new)/baseline, so positive is better as
/// the seeds print it. The test, its p and its mark are the change's.
fn turn_improvements(doc: &mut TableDoc) {
    let turned =
        |t: &&mut Table| t.kind == TableKind::Improvement && t.direction == Some(Direction::Lower);
    for t in doc.tables.iter_mut().filter(turned) {
        let Table { rows, summary, .. } = t;
        for v in rows
            .iter_mut()
            .chain(summary.iter_mut())
            .flat_map(|r| r.cells.iter_mut().flatten())
        {
            if let Value::Change { pct, lo, hi, .. } = v {
                *pct = -*pct;
                (*lo, *hi) = (hi.map(|h| -h), lo.map(|l| -l));
            }
        }
    }
}

/// Adjust the p-values of every comparison in the document (changes and
/// ratios, not the geomean rows) across that family (Holm), take each
/// interval again at the level its adjusted p is decided at, so the `*`
/// and the interval agree, and say so in the legends. A family of one
/// keeps its test's own level. Comparisons not judged (one run a side)
/// get a `?` and the remedy in their table's legend.
fn adjust_changes(doc: &mut TableDoc, layout: &Layout) {
    use crate::stats::multiple::{Adjust, adjust, levels};
    let conf = Confidence::percent(layout.confidence);
    let alpha = conf.alpha();
    // The compared values, in one fixed order for every pass.
    fn each(doc: &mut TableDoc, mut f: impl FnMut(&mut Value)) {
        for t in &mut doc.tables {
            for r in t.rows.iter_mut() {
                for v in r.cells.iter_mut().flatten() {
                    if let Value::Change { arms: Some(_), .. }
                    | Value::Ratio { arms: Some(_), .. } = v
                    {
                        f(v);
                    }
                }
            }
        }
    }
    let p_of = |v: &Value| match v {
        Value::Change { p, .. } | Value::Ratio { p, .. } => *p,
        Value::Mean { .. } => None,
    };
    let mut family = 0;
    each(doc, |v| family += usize::from(p_of(v).is_some()));
    // Each comparison's method chosen for the family's strictest level.
    let strictest = alpha / family.max(1) as f64;
    let redo = |v: &mut Value, at: Confidence| {
        let (arms, mean, half) = match v {
            Value::Change { arms, .. } => (arms.clone(), None, None),
            Value::Ratio {
                arms, mean, half, ..
            } => (arms.clone(), *mean, *half),
            Value::Mean { .. } => return,
        };
        let Some(a) = arms else { return };
        let Ok(d) = design::compare_in(&a.0, &a.1, a.2, at, strictest) else {
            return;
        };
        *v = match v {
            Value::Change { .. } => change_value(&d, Some(a)),
            _ => ratio_of(&d, mean, half, Some(a)),
        };
    };
    if family > 1 {
        each(doc, |v| redo(v, conf));
    }
    let mut ps = Vec::new();
    each(doc, |v| ps.push(p_of(v)));
    let adjusted = adjust(&ps, Adjust::Holm);
    let lv = levels(&ps, &adjusted, alpha);
    let mut i = 0;
    each(doc, |v| {
        if family > 1
            && let Some(g) = lv[i]
        {
            redo(v, Confidence::percent(100.0 * (1.0 - g)));
        }
        if let Value::Change { p_adjusted, .. } | Value::Ratio { p_adjusted, .. } = v {
            *p_adjusted = adjusted[i];
        }
        i += 1;
    });
    for t in &mut doc.tables {
        let unmeasured: Vec<Level> = t
            .rows
            .iter()
            .chain(&t.summary)
            .flat_map(|r| r.cells.iter().flatten())
            .filter_map(Value::unmeasured)
            .fold(Vec::new(), |mut v, l| {
                push_unique(&mut v, l);
                v
            });
        for l in unmeasured {
            t.legend.push(format!("? = not judged: {}", l.unmeasured()));
        }
        if family < 2 {
            continue;
        }
        for l in &mut t.legend {
            if l.starts_with("* = significant: the ")
                || (l.starts_with("normalised to ") && t.metric.is_some())
            {
                l.push_str(&format!(
                    " (Holm-adjusted over {family} comparisons: each interval at the level its adjusted p is decided at)"
                ));
            }
        }
    }
}

fn title(r: &Report) -> String {
    match &r.subject {
        Subject::Run(run) => format!(
            "run {} ({}) on {}",
            run.id,
            run.campaign.as_deref().unwrap_or("ad hoc"),
            run.host
        ),
        Subject::Campaign { campaign, runs } => format!(
            "campaign {} `{}`, {} run(s)",
            campaign.id,
            campaign.name,
            runs.len()
        ),
    }
}

/// The operand a report is of, as a label: `run 13`, `campaign 2`.
fn operand_name(r: &Report) -> String {
    match &r.subject {
        Subject::Run(run) => format!("run {}", run.id),
        Subject::Campaign { campaign, .. } => format!("campaign {}", campaign.id),
    }
}

fn hosts(r: &Report) -> (IndexMap<i64, String>, String) {
    match &r.subject {
        Subject::Run(run) => (IndexMap::new(), run.host.clone()),
        Subject::Campaign { runs, .. } => {
            let m: IndexMap<i64, String> = runs.iter().map(|x| (x.id, x.host.clone())).collect();
            let only = runs.last().map(|x| x.host.clone()).unwrap_or_default();
            (m, only)
        }
    }
}

/// A cell's (row, group, column) key.
type Coord = (Vec<String>, Vec<String>, Vec<String>);

/// Axes, keys and a cell index for an improvement or ratio table.
struct Grid<'a> {
    axes: Axes,
    row_keys: Vec<Vec<String>>,
    group_keys: Vec<Vec<String>>,
    col_keys: Vec<Vec<String>>,
    at: std::collections::HashMap<Coord, &'a CellSummary>,
    constant: Vec<(String, String)>,
}

/// A table of one metric over `g`'s rows and groups, with the facts its
/// cells share; legend, columns, rows and summary are the layout's own.
fn one_metric(
    kind: TableKind,
    g: Grid<'_>,
    layout: &Layout,
    bench: &str,
    metric: &str,
    first: &CellSummary,
) -> Table {
    Table {
        kind,
        bench: bench.to_string(),
        metric: Some(metric.to_string()),
        unit: Some(first.unit.clone()),
        direction: Some(first.direction),
        section: Vec::new(),
        row_dims: g
            .axes
            .rows
            .iter()
            .map(|d| layout.name_of(d).to_string())
            .collect(),
        group_dims: g.axes.groups.clone(),
        groups: g.group_keys.iter().map(|k| k.join(",")).collect(),
        constant: g.constant,
        legend: Vec::new(),
        cols: Vec::new(),
        rows: Vec::new(),
        summary: Vec::new(),
        diffs: Vec::new(),
    }
}

fn grid<'a>(
    cells: &Cells<'a>,
    layout: &Layout,
    default_cols: Vec<String>,
) -> Result<Grid<'a>, String> {
    if cells.rows.is_empty() {
        return Err("no cells".into());
    }
    let varying = cells.varying();
    let axes = axes(layout, &varying, default_cols);
    let mut g = Grid {
        row_keys: Vec::new(),
        group_keys: Vec::new(),
        col_keys: Vec::new(),
        at: Default::default(),
        constant: cells.constant(&varying, &["host"]),
        axes,
    };
    for (c, d) in &cells.rows {
        let rk = key(d, &g.axes.rows);
        let gk = key(d, &g.axes.groups);
        let ck = key(d, &g.axes.cols);
        push_unique(&mut g.row_keys, rk.clone());
        push_unique(&mut g.group_keys, gk.clone());
        push_unique(&mut g.col_keys, ck.clone());
        if g.at.insert((rk, gk, ck), c).is_some() {
            return Err("two cells share a row, group and column (add a dimension to rows)".into());
        }
    }
    layout.sort_keys(&mut g.row_keys, &g.axes.rows);
    layout.sort_keys(&mut g.group_keys, &g.axes.groups);
    layout.sort_keys(&mut g.col_keys, &g.axes.cols);
    Ok(g)
}

fn improvement_table(
    cells: &Cells,
    layout: &Layout,
    bench: &str,
    metric: &str,
) -> Result<Table, String> {
    let base_dims: Vec<String> = layout.baseline.iter().map(|(k, _)| k.clone()).collect();
    let g = grid(cells, layout, base_dims)?;
    if g.axes.cols.is_empty() {
        return Err("no compared dimension varies (set `cols` or `baseline`)".into());
    }
    let base_ck = baseline_key(layout, &g.axes.cols, &g.col_keys[0]);
    if !g.col_keys.contains(&base_ck) {
        return Err(format!(
            "no cell is the baseline {}",
            columns_text(&g.axes.cols, &base_ck)
        ));
    }
    let mut cols: Vec<(Vec<String>, Column)> = g
        .col_keys
        .iter()
        .filter(|ck| **ck != base_ck)
        .map(|ck| {
            let label = col_label(layout, &g.axes.cols, ck, &g.constant);
            (ck.clone(), column(cells, label, metric, &g.axes.cols, ck))
        })
        .collect();
    cols.sort_by_key(|(_, c)| col_rank(layout, &c.label));
    let mut rows = Vec::new();
    let mut no_ratio: Vec<String> = Vec::new();
    for rk in &g.row_keys {
        let mut out = Vec::new();
        for gk in &g.group_keys {
            let base = g.at.get(&(rk.clone(), gk.clone(), base_ck.clone()));
            for (ck, _) in &cols {
                let v = g.at.get(&(rk.clone(), gk.clone(), ck.clone()));
                out.push(match (base, v) {
                    (Some(b), Some(v)) => change(b, v, layout)
                        .map_err(|e| push_unique(&mut no_ratio, format!("- = {e}")))
                        .ok(),
                    _ => None,
                });
            }
        }
        rows.push(TableRow {
            labels: rk.clone(),
            cells: out,
        });
    }
    let first = cells.rows[0].0;
    let base_text = columns_text(&g.axes.cols, &base_ck);
    let per = if g.axes.groups.is_empty() {
        String::new()
    } else {
        format!(" of the same {}", g.axes.groups.join(", "))
    };
    // An improvement is positive when the variant is better: for a
    // lower-is-better metric the change's sign (and its interval) turn,
    // once the family's intervals are final (`turn_improvements`).
    let improvement = layout.table == TableKind::Improvement;
    let kind = if improvement {
        TableKind::Improvement
    } else {
        TableKind::Change
    };
    let sign = match first.direction {
        Direction::Lower => "negative = better",
        Direction::Higher => "positive = better",
        Direction::Info => "informational",
    };
    let what = match (improvement, first.direction) {
        (true, Direction::Lower) => format!(
            "% improvement over {base_text}{per}, (baseline - new)/baseline ({}: positive = better)",
            first.direction
        ),
        (true, _) => format!(
            "% improvement over {base_text}{per}, new/baseline - 1 ({}: positive = better)",
            first.direction
        ),
        (false, _) => format!(
            "% change over {base_text}{per}, new/baseline - 1 ({}: {sign})",
            first.direction
        ),
    };
    let mut legend = vec![
        what,
        format!(
            "* = significant: the {}% interval excludes 0",
            layout.confidence
        ),
    ];
    legend.extend(no_ratio);
    Ok(Table {
        legend,
        cols: cols.into_iter().map(|(_, c)| c).collect(),
        rows,
        ..one_metric(kind, g, layout, bench, metric, first)
    })
}

fn column(cells: &Cells, label: String, metric: &str, dims: &[String], ck: &[String]) -> Column {
    let first = cells.rows[0].0;
    Column {
        label,
        metric: metric.to_string(),
        unit: first.unit.clone(),
        direction: first.direction,
        assign: dims.iter().cloned().zip(ck.iter().cloned()).collect(),
        shown_unit: None,
    }
}

/// Columns with their keys.
type KeyedColumns = Vec<(Vec<String>, Column)>;

/// A ratio table's columns, the baseline first, then the variants in
/// their declared order; and the baseline's column key.
fn ratio_columns(
    cells: &Cells,
    layout: &Layout,
    g: &Grid<'_>,
    metric: &str,
) -> Result<(Vec<String>, KeyedColumns), String> {
    let base_ck: Vec<String> = match g.col_keys.first() {
        Some(first) => baseline_key(layout, &g.axes.cols, first),
        None => Vec::new(),
    };
    let mut col_keys = g.col_keys.clone();
    if let Some(i) = col_keys.iter().position(|k| *k == base_ck) {
        let b = col_keys.remove(i);
        col_keys.insert(0, b);
    } else {
        return Err("no cell is the baseline".into());
    }
    let mut cols: KeyedColumns = col_keys
        .iter()
        .map(|ck| {
            let label = if g.axes.cols.is_empty() {
                metric.to_string()
            } else {
                col_label(layout, &g.axes.cols, ck, &g.constant)
            };
            (ck.clone(), column(cells, label, metric, &g.axes.cols, ck))
        })
        .collect();
    cols[1..].sort_by_key(|(_, c)| col_rank(layout, &c.label));
    Ok((base_ck, cols))
}

/// The rows of a ratio table and the geomean row under them (when there
/// are rows to pool); why a cell has no ratio goes to `no_ratio`.
fn ratio_rows(
    g: &Grid<'_>,
    layout: &Layout,
    (base_ck, cols): (&[String], &[(Vec<String>, Column)]),
    no_ratio: &mut Vec<String>,
) -> (Vec<TableRow>, Vec<TableRow>) {
    let mut rows = Vec::new();
    let conf = Confidence::percent(layout.confidence);
    // Per group and column, the cells' comparisons for the geomean row.
    let mut per_col: Vec<Vec<(Arms, Design)>> = vec![Vec::new(); g.group_keys.len() * cols.len()];
    for rk in &g.row_keys {
        let mut out = Vec::new();
        for (gi, gk) in g.group_keys.iter().enumerate() {
            let base = g.at.get(&(rk.clone(), gk.clone(), base_ck.to_vec()));
            for (ci, (ck, _)) in cols.iter().enumerate() {
                let v = g.at.get(&(rk.clone(), gk.clone(), ck.clone()));
                let val = match (base, v) {
                    (Some(b), Some(v)) => {
                        if ci > 0
                            && let (Ok(d), arms) = compare_cells(b, v, conf)
                        {
                            per_col[gi * cols.len() + ci].push((arms, d));
                        }
                        ratio_value(b, v, layout)
                            .map_err(|e| push_unique(no_ratio, format!("- = {e}")))
                            .ok()
                    }
                    _ => None,
                };
                out.push(val);
            }
        }
        rows.push(TableRow {
            labels: rk.clone(),
            cells: out,
        });
    }
    if g.row_keys.len() < 2 {
        return (rows, Vec::new());
    }
    let direction = cols[0].1.direction;
    let gm: Vec<Option<Value>> = per_col
        .iter()
        .enumerate()
        .map(|(i, cs)| {
            if i % cols.len() == 0 {
                // The baseline column: 1 by definition.
                return Some(baseline_ratio(None, None));
            }
            let cells: Vec<design::Cell<'_>> =
                cs.iter().map(|(a, d)| (&a.0[..], &a.1[..], d)).collect();
            let d = design::geomean(&cells, direction, conf)?;
            Some(ratio_of(&d, None, None, None))
        })
        .collect();
    let summary = vec![TableRow {
        labels: vec!["geomean".to_string()],
        cells: gm,
    }];
    (rows, summary)
}

fn ratio_table(cells: &Cells, layout: &Layout, bench: &str, metric: &str) -> Result<Table, String> {
    // Default columns: the factors (configurations); rows the rest.
    let factor_dims: Vec<String> = cells.rows[0].0.factors.keys().cloned().collect();
    let default = if layout.baseline.is_empty() {
        factor_dims
    } else {
        layout.baseline.iter().map(|(k, _)| k.clone()).collect()
    };
    let g = grid(cells, layout, default)?;
    let (base_ck, cols) = ratio_columns(cells, layout, &g, metric)?;
    let mut no_ratio: Vec<String> = Vec::new();
    let (rows, summary) = ratio_rows(&g, layout, (&base_ck, &cols), &mut no_ratio);
    let first = cells.rows[0].0;
    let base_text = columns_text(&g.axes.cols, &base_ck);
    // The words the `normalised to` heading uses: the baseline
    // column's label, then what it assigns when that differs.
    let label = &cols[0].1.label;
    let what = if base_text.is_empty() || base_text == *label {
        String::new()
    } else {
        format!("{base_text}; ")
    };
    let mut legend = vec![format!(
        "normalised to {label} ({what}{}); * = the {}% interval excludes 1",
        first.direction, layout.confidence
    )];
    if g.row_keys.len() > 1 {
        legend.push(
            "geomean: the rows as replicates, never narrower than their own intervals warrant"
                .into(),
        );
    }
    legend.extend(no_ratio);
    Ok(Table {
        legend,
        cols: cols.into_iter().map(|(_, c)| c).collect(),
        rows,
        summary,
        ..one_metric(TableKind::Ratio, g, layout, bench, metric, first)
    })
}

/// The LLVM JCC-erratum report's normalised table: a row per metric, its geomean ratio per
/// configuration, when the ratio tables share their columns.
fn ratio_summary(tables: &[Table]) -> Option<Table> {
    let with: Vec<&Table> = tables
        .iter()
        .filter(|t| !t.summary.is_empty() || t.rows.len() == 1)
        .collect();
    let first = with.first()?;
    let labels: Vec<&str> = first.cols.iter().map(|c| c.label.as_str()).collect();
    if with.len() < 2
        || with.iter().any(|t| {
            t.groups != first.groups
                || t.cols.iter().map(|c| c.label.as_str()).collect::<Vec<_>>() != labels
        })
    {
        return None;
    }
    let rows: Vec<TableRow> = with
        .iter()
        .map(|t| TableRow {
            labels: vec![t.metric.clone().unwrap_or_default()],
            cells: t
                .summary
                .first()
                .unwrap_or(&t.rows[0])
                .cells
                .iter()
                .map(|c| match c {
                    Some(Value::Ratio {
                        ratio,
                        lo,
                        hi,
                        significant,
                        p,
                        p_adjusted,
                        unmeasured,
                        ..
                    }) => Some(Value::Ratio {
                        mean: None,
                        half: None,
                        ratio: *ratio,
                        lo: *lo,
                        hi: *hi,
                        significant: *significant,
                        p: *p,
                        p_adjusted: *p_adjusted,
                        unmeasured: *unmeasured,
                        arms: None,
                    }),
                    other => other.clone(),
                })
                .collect(),
        })
        .collect();
    let legend = {
        let dirs: Vec<String> = with
            .iter()
            .map(|t| {
                format!(
                    "{}: {}",
                    t.metric.as_deref().unwrap_or(""),
                    t.direction.map(|d| d.to_string()).unwrap_or_default()
                )
            })
            .collect();
        vec![
            format!(
                "normalised to {}: the geometric mean of each metric's ratios",
                first.cols[0].label
            ),
            dirs.join("; "),
        ]
    };
    Some(summary_table(first, legend, first.cols.clone(), rows))
}

/// A table of the whole document, a row per metric, in `first`'s columns.
fn summary_table(
    first: &Table,
    legend: Vec<String>,
    cols: Vec<Column>,
    rows: Vec<TableRow>,
) -> Table {
    Table {
        kind: TableKind::Ratio,
        bench: "all benchmarks".into(),
        metric: None,
        unit: None,
        direction: None,
        section: Vec::new(),
        constant: Vec::new(),
        legend,
        row_dims: vec!["metric".into()],
        group_dims: first.group_dims.clone(),
        groups: first.groups.clone(),
        cols,
        rows,
        summary: Vec::new(),
        diffs: Vec::new(),
    }
}

/// The values behind the normalised summary, before it: per metric (its
/// unit in the row's label) and column, the geometric mean of the rows'
/// means, as plain numbers in the metric's unit.
fn values_summary(tables: &[Table]) -> Option<Table> {
    let with: Vec<&Table> = tables
        .iter()
        .filter(|t| t.metric.is_some() && (!t.summary.is_empty() || t.rows.len() == 1))
        .collect();
    let first = with.first()?;
    let mut units: Vec<String> = Vec::new();
    let rows = with
        .iter()
        .map(|t| {
            let unit = t.unit.as_deref().unwrap_or("");
            let metric = t.metric.as_deref().unwrap_or("");
            let n = t.cols.len() * t.groups.len().max(1);
            let cells = (0..n)
                .map(|i| {
                    let means: Vec<f64> = t
                        .rows
                        .iter()
                        .filter_map(|r| match r.cells.get(i) {
                            Some(Some(Value::Ratio { mean: Some(m), .. })) => Some(*m),
                            _ => None,
                        })
                        .collect();
                    // A geometric mean over the rows that have a value
                    // in every column, so the columns stay comparable.
                    (means.len() == t.rows.len() && means.iter().all(|m| *m > 0.0)).then(|| {
                        Value::Mean {
                            mean: (means.iter().map(|m| m.ln()).sum::<f64>() / means.len() as f64)
                                .exp(),
                            half: None,
                            n: means.len(),
                        }
                    })
                })
                .collect();
            if !unit.is_empty() && unit != metric {
                units.push(format!("{metric} in {unit}"));
            }
            TableRow {
                labels: vec![metric.to_string()],
                cells,
            }
        })
        .collect();
    let mut legend = "values: the geometric mean of each metric's rows".to_string();
    if !units.is_empty() {
        legend.push_str(&format!(" ({})", units.join(", ")));
    }
    let cols = first
        .cols
        .iter()
        .map(|c| Column {
            unit: String::new(),
            ..c.clone()
        })
        .collect();
    Some(summary_table(first, vec![legend], cols, rows))
}

/// A cell with its dimensions, as a matrix section holds it.
type Dimmed<'a> = (&'a CellSummary, IndexMap<String, String>);

/// What every section of one benchmark's matrix shares: the dimensions
/// that split it into sections and those its rows show, and the
/// dimensions that vary over the whole benchmark.
struct MatrixDims {
    section: Vec<String>,
    rows: Vec<String>,
    varying: Vec<String>,
}

fn matrix_tables(
    r: &Report,
    layout: &Layout,
    hosts: &IndexMap<i64, String>,
    only: &str,
) -> Vec<Table> {
    let mut benches: IndexMap<String, Vec<&super::Group>> = IndexMap::new();
    for g in r.groups.iter().filter(|g| laid_out(r, g)) {
        benches.entry(g.bench.clone()).or_default().push(g);
    }
    let mut out = Vec::new();
    for (bench, groups) in benches {
        // Every cell of every metric, with dimensions.
        let all: Vec<Dimmed<'_>> = groups
            .iter()
            .flat_map(|g| g.rows.iter())
            .map(|c| (c, dims_of(c, &host_of(c, hosts, only))))
            .collect();
        let cells = Cells { rows: all };
        if cells.rows.is_empty() {
            continue;
        }
        let dims = matrix_dims(&cells, layout);
        let mut sections: Vec<Vec<String>> = Vec::new();
        for (_, d) in &cells.rows {
            push_unique(&mut sections, key(d, &dims.section));
        }
        for sk in sections {
            let in_sec: Vec<&Dimmed<'_>> = cells
                .rows
                .iter()
                .filter(|(_, d)| key(d, &dims.section) == sk)
                .collect();
            out.push(matrix_section(
                &bench,
                &groups,
                layout,
                &dims,
                (&sk, &in_sec),
            ));
        }
    }
    by_revision(&mut out, layout);
    out
}

/// A matrix's sections (by host and revision) and rows: the rows the
/// layout names stay even when constant (the PTI/PCID report's
/// `pti | pcid` columns); other dimensions only when they vary.
fn matrix_dims(cells: &Cells<'_>, layout: &Layout) -> MatrixDims {
    let varying = cells.varying();
    let section: Vec<String> = ["host", "revision"]
        .iter()
        .map(|s| s.to_string())
        .filter(|d| cells.rows[0].1.contains_key(d))
        .collect();
    let mut rows: Vec<String> = layout
        .rows
        .iter()
        .filter(|d| cells.rows[0].1.contains_key(*d))
        .cloned()
        .collect();
    for d in &varying {
        if !rows.contains(d) && !section.contains(d) {
            rows.push(d.clone());
        }
    }
    MatrixDims {
        section,
        rows,
        varying,
    }
}

/// One section of a benchmark's matrix (section key `sk`, its cells
/// `in_sec`): a row per row key, a column per metric in its shown unit,
/// the layout's difference blocks and what is constant.
fn matrix_section(
    bench: &str,
    metrics: &[&super::Group],
    layout: &Layout,
    dims: &MatrixDims,
    (sk, in_sec): (&[String], &[&Dimmed<'_>]),
) -> Table {
    let row_dims = &dims.rows;
    let mut row_keys: Vec<Vec<String>> = Vec::new();
    for (_, d) in in_sec {
        push_unique(&mut row_keys, key(d, row_dims));
    }
    layout.sort_keys(&mut row_keys, row_dims);
    let find = |rk: &Vec<String>, metric: &str| {
        in_sec
            .iter()
            .find(|(c, d)| c.metric == metric && key(d, row_dims) == *rk)
            .map(|(c, _)| *c)
    };
    let cols: Vec<Column> = metrics
        .iter()
        .map(|g| {
            let means: Vec<f64> = in_sec
                .iter()
                .filter(|(c, _)| c.metric == g.metric)
                .map(|(c, _)| c.summary.mean)
                .collect();
            Column {
                label: g.metric.clone(),
                metric: g.metric.clone(),
                unit: g.unit.clone(),
                direction: g.direction,
                assign: Vec::new(),
                shown_unit: Some(super::fmt::human::column_unit(&means, &g.unit, false)),
            }
        })
        .collect();
    let rows: Vec<TableRow> = row_keys
        .iter()
        .map(|rk| TableRow {
            labels: rk.clone(),
            cells: cols
                .iter()
                .map(|c| find(rk, &c.metric).map(mean_value))
                .collect(),
        })
        .collect();
    let mut legend = vec![format!(
        "mean +/- half-width of its {}% confidence interval",
        adaptive_conf()
    )];
    let diffs = pair_diffs(layout, in_sec, &cols, &mut legend);
    let sec_cells = Cells {
        rows: in_sec.iter().map(|(c, d)| (*c, d.clone())).collect(),
    };
    let mut hide: Vec<&str> = dims.section.iter().map(|s| s.as_str()).collect();
    hide.extend(row_dims.iter().map(|s| s.as_str()));
    let mut constant = sec_cells.constant(&dims.varying, &hide);
    // The section's revision is its heading: the parameter that
    // set it (`env.REV=11.1`) would say it a second time.
    let revision = dims
        .section
        .iter()
        .position(|d| d == "revision")
        .map(|i| &sk[i]);
    constant.retain(|(_, v)| Some(v) != revision);
    Table {
        kind: TableKind::Matrix,
        bench: bench.to_string(),
        metric: None,
        unit: None,
        direction: None,
        section: dims
            .section
            .iter()
            .cloned()
            .zip(sk.iter().cloned())
            .collect(),
        constant,
        legend,
        row_dims: row_dims
            .iter()
            .map(|d| layout.name_of(d).to_string())
            .collect(),
        group_dims: Vec::new(),
        groups: vec![String::new()],
        cols,
        rows,
        summary: Vec::new(),
        diffs,
    }
}

/// The difference blocks of the layout's pairs in one section, a block
/// per metric measured on both sides; a pair whose side is not measured
/// here (a boot state still to come) says so in the legend rather than
/// vanish.
fn pair_diffs(
    layout: &Layout,
    in_sec: &[&Dimmed<'_>],
    cols: &[Column],
    legend: &mut Vec<String>,
) -> Vec<Diff> {
    let level = student::level_index(layout.confidence).unwrap_or(2);
    let mut diffs = Vec::new();
    for (a, b) in &layout.pairs {
        let missing: Vec<String> = [a, b]
            .into_iter()
            .filter(|want| !in_sec.iter().any(|(_, d)| matches(d, want)))
            .map(|want| assign_text(want))
            .collect();
        if !missing.is_empty() {
            legend.push(format!(
                "{} vs {}: no difference block, {} not measured here",
                assign_text(a),
                assign_text(b),
                missing.join(" and ")
            ));
        }
        for c in cols {
            let pick = |want: &Assign| {
                in_sec
                    .iter()
                    .find(|(x, d)| x.metric == c.metric && matches(d, want))
                    .and_then(|(x, _)| Some((sample(x)?, x.values.clone())))
            };
            if let (Some((sa, pa)), Some((sb, pb))) = (pick(a), pick(b)) {
                diffs.push(Diff {
                    metric: c.metric.clone(),
                    unit: c.unit.clone(),
                    baseline: assign_text(a),
                    contender: assign_text(b),
                    a: Moments::of(&sa),
                    b: Moments::of(&sb),
                    level,
                    points: [pa, pb],
                });
            }
        }
    }
    diffs
}

/// A table's value of a section dimension (`host`, `revision`).
pub fn section_value<'a>(t: &'a Table, dim: &str) -> Option<&'a str> {
    t.section
        .iter()
        .find(|(k, _)| k == dim)
        .map(|(_, v)| v.as_str())
}

/// Revision, then benchmark: the tables of one revision together (in the
/// plan's order of revisions, else as first seen), each revision's
/// benchmarks in their order.
fn by_revision(tables: &mut [Table], layout: &Layout) {
    let mut seen: Vec<String> = Vec::new();
    for t in tables.iter() {
        if let Some(r) = section_value(t, "revision") {
            push_unique(&mut seen, r.to_string());
        }
    }
    let planned = layout.order.get("revision");
    tables.sort_by_cached_key(|t| {
        section_value(t, "revision").map(|r| {
            let p = planned.and_then(|o| o.iter().position(|x| x == r));
            (
                p.unwrap_or(usize::MAX),
                seen.iter().position(|x| x == r).unwrap_or(usize::MAX),
            )
        })
    });
}

/// The level of the stored per-cell intervals (`ci95`).
fn adaptive_conf() -> f64 {
    crate::stats::sequential::PRECISION_CONFIDENCE
}

fn system_block(r: &Report) -> Option<SystemBlock> {
    let fp = r.fingerprint()?;
    let (first, last) = match &r.subject {
        Subject::Run(run) => (run.started, run.ended.unwrap_or(run.started)),
        Subject::Campaign { runs, .. } => (
            runs.first().map_or(0.0, |x| x.started),
            runs.last().map_or(0.0, |x| x.ended.unwrap_or(x.started)),
        ),
    };
    let mut microcode: Vec<(String, String)> = Vec::new();
    for s in &r.states {
        if let Some(m) = s.get("microcode") {
            let state: Vec<String> = s
                .iter()
                .filter(|(k, _)| *k != "microcode")
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            push_unique(&mut microcode, (state.join(","), m.clone()));
        }
    }
    if microcode.is_empty()
        && let Some(m) = &fp.microcode
    {
        microcode.push((String::new(), m.clone()));
    }
    Some(SystemBlock {
        host: fp.hostname.clone(),
        os: fp.os_release.clone().unwrap_or_else(|| fp.os.clone()),
        kernel: fp.kernel_release.clone(),
        memory_bytes: fp.memory_bytes,
        sockets: fp.sockets,
        cores: fp.cores,
        threads: fp.threads,
        smt: fp.smt.clone(),
        cpu_model: fp.cpu_model.clone(),
        microcode,
        first,
        last,
        warnings: fp.warnings().iter().map(|w| w.to_string()).collect(),
        imported: fp.os.starts_with("imported from"),
    })
}

/// The values each dimension takes in the reports' cells, for checking a
/// `--baseline` given on the command line.
pub fn known_values(reports: &[Report]) -> IndexMap<String, Vec<String>> {
    let mut out: IndexMap<String, Vec<String>> = IndexMap::new();
    for r in reports {
        let (hosts, only) = hosts(r);
        for g in &r.groups {
            for c in &g.rows {
                for (k, v) in dims_of(c, &host_of(c, &hosts, &only)) {
                    push_unique(out.entry(k).or_default(), v);
                }
            }
        }
    }
    out
}

/// Every dimension name of the reports' cells (factors, parameters,
/// `host`, `revision`), for checking a layout given on the command line.
pub fn known_dims(reports: &[Report]) -> Vec<String> {
    let mut out: Vec<String> = vec!["host".into(), "revision".into(), "run".into()];
    for r in reports {
        for g in &r.groups {
            for c in &g.rows {
                for k in dims_of(c, "").keys() {
                    push_unique(&mut out, k.clone());
                }
            }
        }
    }
    out
}

impl super::render::Render for TableDoc {
    const KIND: &'static str = "tables";

    fn text(&self) -> String {
        super::fmt::written(|o| text::tables(o, self))
    }

    fn markdown(&self) -> String {
        markdown::tables(self)
    }

    fn html(&self) -> (String, String) {
        let body = html::tables(self) + &html::flames(&self.flames);
        (self.title.join("; "), body)
    }
}
