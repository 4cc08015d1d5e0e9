//! What kbench prints: every command builds a model (plain data: numbers,
//! labels, records) and hands it as a [`Document`] to [`render`], which
//! asks the document's [`Render`] for the [`Format`] wanted. Each document
//! renders itself beside its model (`compare/`, `table/`, `history/`,
//! `check.rs`, `listing.rs`, ...), with what every format shares in
//! `fmt/`. Renderers format; they never compute a statistic, and no
//! command decides on a format anywhere else.

pub mod check;
pub mod comparability;
pub mod compare;
pub mod csv;
pub mod explain;
pub mod flame;
pub mod fmt;
pub mod history;
pub mod json;
pub mod listing;
pub mod live;
pub mod origin;
pub mod plan_size;
pub mod render;
pub mod samples;
pub mod scale;
pub mod status;
pub mod table;
pub mod text;
pub mod wis_csv;

#[cfg(test)]
mod tests;

use indexmap::IndexMap;
use serde::Serialize;

use compare::summary;
use render::Render;

use crate::campaign::Status;
use crate::record::{Direction, RunConfig, StopRule};
use crate::stats::outliers::{DEFAULT_THRESHOLD, modified_z};
use crate::stats::sequential::{self, Look};
use crate::stats::{Confidence, Sample, Summary};
use crate::store::{
    CampaignData, CampaignRow, FailureRec, RunData, RunDetails, RunRow, StoredCell,
};
use crate::system::Fingerprint;

/// How a document is printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Plain text for a terminal or an e-mail.
    Text,
    /// One JSON document, for scripts.
    Json,
    /// GitHub-flavoured Markdown tables, for reviews and issues.
    Markdown,
    /// One row per sample (`kbench report` only), for R or pandas.
    Csv,
    /// One self-contained HTML page with SVG charts.
    Html,
    /// Scaling tables as will-it-scale's runtest.py prints them (CSV).
    WisCsv,
}

impl Format {
    /// The name `--format` takes.
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default()
    }

    /// `--json` as the flag most commands have.
    pub fn json_if(json: bool) -> Format {
        if json { Format::Json } else { Format::Text }
    }
}

/// Everything a command can print.
pub enum Document<'a> {
    /// `kbench run` / `kbench report`: one or more runs or campaigns.
    Reports(&'a [Report]),
    Runs(&'a [RunRow]),
    Compare(&'a compare::Comparison),
    Status(&'a Status),
    Sysinfo(&'a Sysinfo),
    /// `kbench list [WORD]`: one line per benchmark, by family.
    Benches(&'a [BenchInfo]),
    /// `kbench list NAME`: one benchmark in full.
    Bench(&'a BenchInfo),
    /// `kbench report` under a layout (`table/`).
    Tables(&'a table::TableDoc),
    /// `kbench report --format csv`: every sample (`samples.rs`).
    Samples(&'a samples::SampleTable),
    /// `kbench report --history`: a benchmark across runs (`history/`).
    History(&'a history::History),
    /// `kbench plan-size`: samples needed for a margin (`plan_size.rs`).
    PlanSize(&'a plan_size::PlanSize),
    /// `kbench check`: a regression gate's verdicts (`check.rs`).
    Check(&'a check::Check),
    /// `kbench explain`: what changed in the profiles and counters
    /// (`explain.rs`).
    Explain(&'a explain::Explain),
}

/// Render a document; the text ends with a newline. Text and Markdown,
/// which reach terminals, show control characters from the data (a
/// command's output, a name, an imported command) escaped.
pub fn render(doc: &Document<'_>, format: Format) -> anyhow::Result<String> {
    Ok(match doc.rendered(format)? {
        Rendered::Str(s) => s,
        Rendered::Json(v) => format!("{v:#}\n"),
    })
}

/// Render a document to `w`: what [`render`] gives, JSON written as it
/// is made.
pub fn write(doc: &Document<'_>, format: Format, w: &mut dyn std::io::Write) -> anyhow::Result<()> {
    if format == Format::Json {
        return doc.visit(WriteJson(w));
    }
    w.write_all(render(doc, format)?.as_bytes())?;
    Ok(())
}

/// `doc` with `kbench explain`'s output for its worst cells attached
/// (`compare --explain`, `check --explain`): after it in text and
/// Markdown, as its `explain` member in JSON; other formats leave it out.
pub fn render_explained(
    doc: &Document<'_>,
    explained: Option<&explain::Explain>,
    format: Format,
) -> anyhow::Result<String> {
    let Some(e) = explained else {
        return render(doc, format);
    };
    Ok(match (doc.rendered(format)?, format) {
        (Rendered::Json(mut v), _) => {
            v["explain"] = e.json()?;
            format!("{v:#}\n")
        }
        (Rendered::Str(mut s), Format::Text | Format::Markdown) => {
            s.push('\n');
            s.push_str(&render(&Document::Explain(e), format)?);
            s
        }
        (Rendered::Str(s), _) => s,
    })
}

/// A document in one format: a string, or JSON's value (which
/// `render_explained` extends before printing).
pub(crate) enum Rendered {
    Str(String),
    Json(serde_json::Value),
}

/// What is done with a document's [`Render`], whichever document it is.
pub(crate) trait Visit {
    type Out;
    fn visit<D: Render + ?Sized>(self, d: &D) -> Self::Out;
}

impl Document<'_> {
    /// The document in `format`, through its [`Render`].
    pub(crate) fn rendered(&self, format: Format) -> anyhow::Result<Rendered> {
        self.visit(InFormat(format))
    }

    /// `v` done with the document's [`Render`].
    pub(crate) fn visit<V: Visit>(&self, v: V) -> V::Out {
        match self {
            Document::Reports(d) => v.visit(*d),
            Document::Runs(d) => v.visit(*d),
            Document::Compare(d) => v.visit(*d),
            Document::Status(d) => v.visit(*d),
            Document::Sysinfo(d) => v.visit(*d),
            Document::Benches(d) => v.visit(*d),
            Document::Bench(d) => v.visit(*d),
            Document::Tables(d) => v.visit(*d),
            Document::Samples(d) => v.visit(*d),
            Document::History(d) => v.visit(*d),
            Document::PlanSize(d) => v.visit(*d),
            Document::Check(d) => v.visit(*d),
            Document::Explain(d) => v.visit(*d),
        }
    }
}

/// A document's JSON written to a writer.
struct WriteJson<'w>(&'w mut dyn std::io::Write);

impl Visit for WriteJson<'_> {
    type Out = anyhow::Result<()>;
    fn visit<D: Render + ?Sized>(self, d: &D) -> Self::Out {
        d.write_json(self.0)
    }
}

/// A document in a format.
struct InFormat(Format);

impl Visit for InFormat {
    type Out = anyhow::Result<Rendered>;
    fn visit<D: Render + ?Sized>(self, d: &D) -> Self::Out {
        in_format(d, self.0)
    }
}

/// Any document in `format`: the one place a format is chosen.
fn in_format<D: Render + ?Sized>(d: &D, format: Format) -> anyhow::Result<Rendered> {
    let shown = |s: String| Rendered::Str(crate::term::visible(&s).into_owned());
    Ok(match format {
        Format::Text => shown(d.text()),
        Format::Markdown => shown(d.markdown()),
        Format::Json => Rendered::Json(d.json()?),
        Format::Csv => Rendered::Str(d.csv().ok_or_else(|| {
            crate::error::bad_input!(
                "--format csv is for `kbench report` (one row per sample) and `kbench compare`"
            )
        })?),
        Format::Html => {
            let (title, body) = d.html();
            Rendered::Str(fmt::page(&title, &body))
        }
        Format::WisCsv => Rendered::Str(d.wis_csv()?),
    })
}

/// Push `x` unless `v` holds it already (first-seen order kept).
pub use listing::{BenchInfo, Sysinfo};

/// Push `x` unless `v` holds it already (first-seen order kept).
pub(crate) fn push_unique<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// One row: a cell's summary for one metric.
#[derive(Clone, Debug, Serialize)]
pub struct CellSummary {
    /// Benchmark display name.
    pub bench: String,
    /// The benchmark it runs (registry name or command name), for labels.
    #[serde(skip)]
    pub source: String,
    /// A command, a micro-benchmark, ...
    #[serde(skip)]
    pub kind: crate::record::Kind,
    /// Resolved parameters.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Factor name -> value label.
    pub factors: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    /// Whether a lower or a higher value is better.
    pub direction: Direction,
    /// N, min, max, median, mean, stddev, as ministat computes them.
    #[serde(flatten)]
    pub summary: Summary,
    /// Coefficient of variation, stddev / |mean|.
    pub cv: f64,
    /// The 95% confidence interval of the mean (`null` below 2 samples).
    pub ci95: Option<[f64; 2]>,
    /// Half-width of that interval relative to the mean (0.01 = +/-1%);
    /// `null` (infinite) below 2 samples.
    pub ci95_rel: f64,
    /// Indices into `values` of outliers by the modified z-score (|M| >
    /// 3.5, Iglewicz & Hoaglin), from [`OUTLIER_MIN_SAMPLES`] samples on;
    /// flagged only, every statistic keeps them.
    pub outliers: Vec<usize>,
    /// The precision target of an adaptive run, and whether this cell
    /// reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_reached: Option<bool>,
    /// CPUs each party ran on, when pinned.
    pub placement: Option<String>,
    /// Facts the benchmark recorded (e.g. iterations per sample).
    pub notes: IndexMap<String, String>,
    /// Probe readings the samples were taken under (`{}` without
    /// `system` factors).
    pub readings: IndexMap<String, String>,
    /// In a campaign report: the runs whose samples the row holds.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<i64>,
    /// Run reports of `--processes` runs: the variance components
    /// between processes and within one, and the mean's interval over
    /// the unit they call for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<crate::stats::nested::Components>,
    /// The sample values, in the order they were taken: JSON's `values`,
    /// which the report's document writes from here (`json.rs`) rather
    /// than through a value of each.
    #[serde(skip)]
    pub values: Vec<f64>,
    /// The same values with the blocks they were measured in (run,
    /// round, process), for comparisons that follow the design.
    #[serde(skip)]
    pub obs: Vec<crate::stats::design::Obs>,
    /// Row label: factor labels then label parameters, in column order.
    #[serde(skip)]
    pub labels: Vec<String>,
    /// Whose data the row holds (`host`, `import`, `run`) in a campaign
    /// report whose runs are kept apart by origin.
    #[serde(skip)]
    pub origin: origin::Origin,
}

impl CellSummary {
    /// The row's label as one string (`pti=on | 64k`), or `fallback` for a
    /// row with no label columns.
    pub fn who<'a>(&'a self, fallback: &'a str) -> std::borrow::Cow<'a, str> {
        if self.labels.is_empty() {
            fallback.into()
        } else {
            self.labels.join(" | ").into()
        }
    }
}

/// Cells of one benchmark and metric, shown as one table.
#[derive(Clone, Debug)]
pub struct Group {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// Column names of the row labels.
    pub columns: Vec<String>,
    pub rows: Vec<CellSummary>,
}

/// What a report is about.
#[derive(Clone, Debug)]
pub enum Subject {
    Run(RunRow),
    Campaign {
        campaign: CampaignRow,
        runs: Vec<RunRow>,
    },
}

/// A cell of a campaign's plan with no sample yet, and what it needs.
#[derive(Clone, Debug, Serialize)]
pub struct Pending {
    pub bench: String,
    pub factors: IndexMap<String, String>,
    pub needs: Vec<String>,
}

/// The report of one run or one campaign.
#[derive(Clone, Debug)]
pub struct Report {
    pub subject: Subject,
    /// Fingerprint and settings of the run (a campaign's latest run).
    pub details: Option<RunDetails>,
    pub overhead_ns: f64,
    pub groups: Vec<Group>,
    /// With `--until-verdict`: how the comparison of the two cells ended.
    pub verdict: Option<Look>,
    pub scaling: Vec<scale::Scaling>,
    pub failures: Vec<FailureRec>,
    /// The failures by cell, for the text: a run whose every sample failed
    /// has no table, and must not read as a success.
    pub failed: Vec<FailedCell>,
    /// Campaigns: the system states the cells were measured under.
    pub states: Vec<IndexMap<String, String>>,
    /// Campaigns: cells of the plan not measured yet.
    pub pending: Vec<Pending>,
    /// Two or more variants: their primary metric side by side, the
    /// baseline first (`summary.rs`).
    pub summary: Option<summary::RunSummary>,
    /// The run's noise warnings were printed on this terminal before it
    /// began: the text report does not print them a second time.
    pub warnings_shown: bool,
    /// With a summary: a table for every metric, not only the summary of
    /// the primary one (`--all-metrics`).
    pub all_metrics: bool,
}

/// The failed samples of one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedCell {
    /// The cell as tables name it (benchmark and labels).
    pub cell: String,
    pub count: usize,
    /// The last failure's message.
    pub last: String,
}

/// Failures counted per cell, in the cells' order.
fn failed_cells(cells: &[StoredCell], failures: &[FailureRec]) -> Vec<FailedCell> {
    let mut out: Vec<FailedCell> = Vec::new();
    for (c, _) in cells {
        let mine: Vec<&FailureRec> = failures.iter().filter(|f| f.cell_id == c.id).collect();
        let Some(last) = mine.last() else {
            continue;
        };
        let cell = c.info.key.clone();
        match out.iter_mut().find(|x| x.cell == cell) {
            Some(x) => {
                x.count += mine.len();
                x.last = last.message.clone();
            }
            None => out.push(FailedCell {
                cell,
                count: mine.len(),
                last: last.message.clone(),
            }),
        }
    }
    out
}

impl Report {
    pub fn config(&self) -> Option<&RunConfig> {
        self.details.as_ref().map(|d| &d.config)
    }

    pub fn fingerprint(&self) -> Option<&Fingerprint> {
        self.details.as_ref().map(|d| &d.fingerprint)
    }

    pub fn stop(&self) -> Option<StopRule> {
        self.config().and_then(|c| c.stop)
    }

    /// The report of one run.
    pub fn of_run(d: RunData) -> Report {
        let stop = d.details.config.stop;
        let design = Blocks {
            imported: d.details.config.plan.starts_with("import:"),
            run_of: Default::default(),
        };
        let groups = groups(&d.cells, &[], &[], stop, &design);
        let verdict = until_verdict(&d.cells, stop);
        let mut summary = summary::of_groups(&groups);
        if let (Some(s), Some(look), Some(rule)) = (summary.as_mut(), &verdict, stop) {
            s.sequential(look, rule.max_samples as usize);
        }
        Report {
            overhead_ns: d.run.overhead_ns,
            subject: Subject::Run(d.run),
            scaling: scale::build(&d.cells, &[]),
            details: Some(d.details),
            summary,
            groups,
            verdict,
            failed: failed_cells(&d.cells, &d.failures),
            failures: d.failures,
            states: Vec::new(),
            pending: Vec::new(),
            warnings_shown: false,
            all_metrics: false,
        }
    }

    /// The report of a campaign: its cells merged across runs (one row per
    /// cell key and system state), with the fingerprint of its latest run.
    pub fn of_campaign(d: CampaignData) -> Report {
        let origins = origin::by_host(&d.runs, origin::Pooling::ByOrigin);
        Report::of_campaign_by(d, &origins)
    }

    /// The report of a campaign whose runs merge by `origins` (run id ->
    /// origin): cells of different origin stay apart.
    pub fn of_campaign_by(
        d: CampaignData,
        origins: &std::collections::HashMap<i64, origin::Origin>,
    ) -> Report {
        let (merged, runs, origin) = origin::merge(&d.cells, origins);
        let design = Blocks {
            imported: d
                .latest
                .as_ref()
                .is_some_and(|l| l.config.plan.starts_with("import:")),
            run_of: d.cells.iter().map(|(c, _)| (c.id, c.run_id)).collect(),
        };
        let stop = d.latest.as_ref().and_then(|l| l.config.stop);
        let mut states: Vec<IndexMap<String, String>> = Vec::new();
        for (c, _) in &d.cells {
            if !c.info.readings.is_empty() && !states.contains(&c.info.readings) {
                states.push(c.info.readings.clone());
            }
        }
        let groups = groups(&merged, &runs, &origin, stop, &design);
        Report {
            overhead_ns: d.runs.last().map_or(0.0, |r| r.overhead_ns),
            summary: summary::of_groups(&groups),
            warnings_shown: false,
            all_metrics: false,
            groups,
            verdict: None,
            scaling: scale::build(&merged, &origin),
            pending: campaign_pending(&d),
            subject: Subject::Campaign {
                campaign: d.campaign,
                runs: d.runs,
            },
            details: d.latest,
            failed: failed_cells(&d.cells, &d.failures),
            failures: d.failures,
            states,
        }
    }
}

/// A JSON value as a table label: strings bare, anything else as JSON.
pub(crate) fn json_label(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Display a stored parameter value (sizes as `64k`) using the benchmark's
/// definition when it is a built-in one.
pub(crate) fn param_label(
    bench_name: &str,
    params: &serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> String {
    let v = params.get(name).cloned().unwrap_or(serde_json::Value::Null);
    if let (Some(b), Ok(val)) = (
        crate::bench::find(bench_name),
        serde_json::from_value::<crate::bench::Value>(v.clone()),
    ) && let Some(def) = b.params().iter().find(|d| d.name == name)
    {
        return def.ty.display(&val);
    }
    json_label(&v)
}

/// What the rows need to know of the design: whether the runs
/// interleaved their cells (an import did not), and the run of each
/// stored cell (a campaign's merged rows hold several runs' samples).
struct Blocks {
    imported: bool,
    run_of: std::collections::HashMap<i64, i64>,
}

/// Fewest samples a cell needs before its outliers are flagged. The
/// modified z-score divides by the median absolute deviation, which a
/// handful of samples estimates poorly: in samples drawn from one normal
/// distribution the rule flags at least one value in 28% of cells of 3
/// samples, 21% of 5 and 13% of 8 (20,000 simulated cells each; the test
/// below re-draws them), and those flags would send a reader hunting for a
/// disturbance that did not happen.
pub const OUTLIER_MIN_SAMPLES: usize = 10;

/// One table per benchmark and metric, a row per cell; `runs[i]` and
/// `origins[i]` (when given) are the runs whose samples cell `i` holds
/// and whose data they are.
fn groups(
    cells: &[StoredCell],
    runs: &[Vec<i64>],
    origins: &[origin::Origin],
    stop: Option<StopRule>,
    design: &Blocks,
) -> Vec<Group> {
    let mut groups: IndexMap<(String, String), Group> = IndexMap::new();
    // Origins that differ between cells label the rows.
    let varying = origin::varying(origins);
    for (i, (cell, samples)) in cells.iter().enumerate() {
        let c = &cell.info;
        let (columns, labels) = row_columns(c, origins.get(i), &varying);
        for m in &c.metrics {
            let values: Vec<f64> = samples
                .iter()
                .filter(|s| *s.metric == *m.name)
                .map(|s| s.value)
                .collect();
            let obs = samples
                .iter()
                .filter(|s| *s.metric == *m.name)
                .map(|s| crate::stats::design::Obs {
                    value: s.value,
                    boot: 0,
                    run: design
                        .run_of
                        .get(&s.cell_id)
                        .copied()
                        .unwrap_or(cell.run_id) as u64,
                    process: s.process.unwrap_or(0),
                    round: (!design.imported).then_some(s.round),
                })
                .collect();
            // Stored values are finite (the runner refuses others).
            let Ok(sample) = Sample::new(&values) else {
                continue;
            };
            let summary = sample.summary();
            let g = groups
                .entry((c.bench.clone(), m.name.clone()))
                .or_insert_with(|| Group {
                    bench: c.bench.clone(),
                    metric: m.name.clone(),
                    unit: m.unit.clone(),
                    direction: m.direction,
                    columns: columns.clone(),
                    rows: Vec::new(),
                });
            // Ad-hoc cells of one benchmark may set different params:
            // widen the columns to the union.
            for col in &columns {
                if !g.columns.contains(col) {
                    g.columns.push(col.clone());
                }
            }
            let conf = Confidence::percent(sequential::PRECISION_CONFIDENCE);
            let ci95_rel = sample
                .mean_ci_relative_half_width(conf)
                .filter(|x| x.is_finite())
                .unwrap_or(f64::INFINITY);
            let row_labels = g
                .columns
                .iter()
                .map(|col| match columns.iter().position(|x| x == col) {
                    Some(i) => labels[i].clone(),
                    None => "-".into(),
                })
                .collect();
            g.rows.push(CellSummary {
                bench: c.bench.clone(),
                source: c.source.clone(),
                kind: c.kind,
                params: c.params.clone(),
                factors: c.factors.clone(),
                metric: m.name.clone(),
                unit: m.unit.clone(),
                direction: m.direction,
                summary,
                cv: sample.cv(),
                ci95: sample.mean_ci(conf).map(|i| [i.lo, i.hi]),
                ci95_rel,
                outliers: if values.len() >= OUTLIER_MIN_SAMPLES {
                    modified_z(&values, DEFAULT_THRESHOLD).flagged
                } else {
                    Vec::new()
                },
                precision_reached: stop.map(|r| ci95_rel <= r.precision),
                placement: cell.placement.clone(),
                notes: cell.notes.clone(),
                readings: c.readings.clone(),
                runs: runs.get(i).cloned().unwrap_or_default(),
                // A campaign's rows merge runs whose process indices
                // repeat: only a run's own rows are split by process.
                processes: if runs.is_empty() {
                    process_components(samples, &m.name, conf)
                } else {
                    None
                },
                values,
                obs,
                labels: row_labels,
                origin: origins.get(i).cloned().unwrap_or_default(),
            });
        }
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.iter_mut().for_each(pad_labels);
    groups
}

/// A cell's label columns and its labels in them: its factors, the
/// params that label it, and the origins that differ between cells.
fn row_columns(
    c: &crate::record::CellInfo,
    origin: Option<&origin::Origin>,
    varying: &[String],
) -> (Vec<String>, Vec<String>) {
    let mut columns: Vec<String> = c.factors.keys().cloned().collect();
    columns.extend(c.label_params.iter().cloned());
    let mut labels: Vec<String> = c.factors.values().cloned().collect();
    labels.extend(
        c.label_params
            .iter()
            .map(|p| param_label(&c.source, &c.params, p)),
    );
    for (k, v) in origin.into_iter().flatten() {
        if varying.contains(k) {
            columns.push(k.clone());
            labels.push(v.clone());
        }
    }
    (columns, labels)
}

/// Rows pushed before a column was added are one label short: `-` in
/// the columns they do not have.
fn pad_labels(g: &mut Group) {
    for r in &mut g.rows {
        while r.labels.len() < g.columns.len() {
            r.labels.push("-".into());
        }
    }
}

/// The values of one run's cell and metric per process of `--processes`
/// (all on the run's boot); `None` without two processes.
pub fn process_groups(
    samples: &[crate::store::SampleRec],
    metric: &str,
    boot: &str,
) -> Option<Vec<crate::stats::nested::Group>> {
    let mut by: IndexMap<u32, Vec<f64>> = IndexMap::new();
    for s in samples.iter().filter(|s| *s.metric == *metric) {
        by.entry(s.process?).or_default().push(s.value);
    }
    (by.len() >= 2).then(|| {
        by.into_values()
            .map(|values| crate::stats::nested::Group {
                boot: boot.to_string(),
                values,
            })
            .collect()
    })
}

fn process_components(
    samples: &[crate::store::SampleRec],
    metric: &str,
    conf: Confidence,
) -> Option<crate::stats::nested::Components> {
    crate::stats::nested::components(&process_groups(samples, metric, "")?, conf)
}

/// The verdict of an `--until-verdict` run, recomputed from the stored
/// samples exactly as the runner decided it.
fn until_verdict(cells: &[StoredCell], stop: Option<StopRule>) -> Option<Look> {
    let rule = stop.filter(|r| r.until_verdict)?;
    let [(a, sa), (b, sb)] = cells else {
        return None;
    };
    let first = |c: &crate::store::CellRec, s: &[crate::store::SampleRec]| -> Vec<f64> {
        let m = c
            .info
            .metrics
            .first()
            .map(|m| m.name.as_str())
            .unwrap_or("");
        s.iter()
            .filter(|x| &*x.metric == m)
            .map(|x| x.value)
            .collect()
    };
    sequential::look(
        &first(a, sa),
        &first(b, sb),
        rule.precision,
        rule.max_samples as usize,
    )
}

/// Cells of the campaign's plan that have no sample yet, with the system
/// state each needs.
fn campaign_pending(d: &CampaignData) -> Vec<Pending> {
    let Ok(plan) = crate::plan::parse(&d.campaign.plan_text, &d.campaign.name) else {
        return Vec::new();
    };
    let Ok(cells) = crate::plan::expand(&plan) else {
        return Vec::new();
    };
    let measured: std::collections::HashSet<&str> = d
        .cells
        .iter()
        .filter(|(_, s)| !s.is_empty())
        .map(|(c, _)| c.info.key.as_str())
        .collect();
    cells
        .iter()
        .filter(|c| !measured.contains(c.key.as_str()))
        .map(|c| Pending {
            bench: c.display.clone(),
            factors: c.factors.clone(),
            needs: c
                .expect
                .iter()
                .map(crate::campaign::describe_need)
                .collect(),
        })
        .collect()
}

/// `kbench run` and `kbench report`: one or more runs or campaigns.
impl Render for [Report] {
    const KIND: &'static str = "reports";

    fn text(&self) -> String {
        text::reports(self)
    }

    fn wis_csv(&self) -> anyhow::Result<String> {
        wis_csv::render(self)
    }

    fn json(&self) -> anyhow::Result<serde_json::Value> {
        json::reports(self, None)
    }

    fn write_json(&self, w: &mut dyn std::io::Write) -> anyhow::Result<()> {
        Ok(json::ReportsJson::new(self, None)?.write(w)?)
    }
}

/// A report serialises as its JSON model (`kind: report`).
impl Serialize for Report {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        json::ReportJson {
            r: self,
            members: Default::default(),
        }
        .serialize(s)
    }
}
