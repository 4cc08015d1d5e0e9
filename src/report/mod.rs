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
pub mod listing;
pub mod live;
pub mod origin;
pub mod plan_size;
pub mod render;
pub mod run;
pub mod samples;
pub mod scale;
pub mod status;
pub mod table;

use indexmap::IndexMap;
use serde::Serialize;

use render::Render;

use crate::campaign::Status;
use crate::record::Direction;
use crate::stats::Summary;
use crate::store::RunRow;

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
    /// `kbench run` / `kbench report`: one or more runs or campaigns
    /// (`run/`).
    Reports(&'a [Report]),
    Runs(&'a [RunRow]),
    Compare(&'a compare::Comparison),
    Status(&'a Status),
    Sysinfo(&'a Sysinfo),
    /// `kbench list [WORD]`: one line per benchmark, by family.
    Benches(&'a [BenchInfo]),
    /// `kbench list NAME`: one benchmark in full.
    Bench(&'a BenchInfo),
    /// `kbench list counters`: the counters `--counters` takes.
    Counters(&'a [CounterInfo]),
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
            Document::Counters(d) => v.visit(*d),
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

pub use listing::{BenchInfo, CounterInfo, Sysinfo};
pub use run::{FailedCell, Report, Subject};

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
    /// 3.5, Iglewicz & Hoaglin), from [`run::OUTLIER_MIN_SAMPLES`] samples on;
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
