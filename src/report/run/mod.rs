//! The report of one run or one campaign (`kbench run`, `kbench report`):
//! its model ([`Report`]: what it is about, its cells as [`Group`]s of
//! [`CellSummary`] rows, scaling tables, failures, the plan's pending
//! cells) built from the store's records, and its formats: plain text
//! (`text.rs`), JSON (`json.rs`), will-it-scale's CSV (`wis_csv.rs`);
//! Markdown and HTML of runs are the table layouts' (`table/`).

pub mod json;
pub mod text;
pub mod wis_csv;

#[cfg(test)]
mod tests;

use indexmap::IndexMap;
use serde::Serialize;

use crate::record::{RunConfig, StopRule};
use crate::report::compare::summary;
use crate::report::render::Render;
use crate::report::{CellSummary, Group, origin, param_label, scale};
use crate::stats::outliers::{DEFAULT_THRESHOLD, modified_z};
use crate::stats::sequential::{self, Look};
use crate::stats::{Confidence, Sample};
use crate::store::{
    CampaignData, CampaignRow, FailureRec, RunData, RunDetails, RunRow, StoredCell,
};
use crate::system::Fingerprint;

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
            // One pass for both lists, each made with room for the cell's
            // samples shared out among its metrics: collected from a
            // filter, they grew by doubling, copying 10^6 values and
            // observations as they went.
            let room = samples.len().div_ceil(c.metrics.len());
            let mut values: Vec<f64> = Vec::with_capacity(room);
            let mut obs = Vec::with_capacity(room);
            for s in samples.iter().filter(|s| s.metric() == m.name) {
                values.push(s.value);
                obs.push(crate::stats::design::Obs {
                    value: s.value,
                    boot: 0,
                    run: design
                        .run_of
                        .get(&s.cell_id)
                        .copied()
                        .unwrap_or(cell.run_id) as u64,
                    process: s.process.unwrap_or(0),
                    round: (!design.imported).then_some(s.round),
                });
            }
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
    for s in samples.iter().filter(|s| s.metric() == metric) {
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
            .filter(|x| x.metric() == m)
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
        json::reports(self)
    }

    fn write_json(&self, w: &mut dyn std::io::Write) -> anyhow::Result<()> {
        Ok(json::ReportsJson::new(self).write(w)?)
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
