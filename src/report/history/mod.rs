//! `kbench report --history BENCH[:k=v,...]`: one benchmark cell's values
//! across every stored run that measured it, in the order of time or of
//! revision, with the change points of that series.
//!
//! A point is one stored cell of one run (`--by time`) or every cell of
//! one revision pooled (`--by revision`: the `revision` factor or
//! parameter, else the kernel release the samples were taken under).
//! Cells that differ in anything but the revision (parameters, factors)
//! are separate series. Each point carries its mean, 95% interval and n,
//! and Welch's test against the previous point ("a comparison
//! with the previous group is significant"); over the whole series,
//! E-divisive means ([`crate::stats::changepoint`]) finds the steps, each
//! reported with its size, direction (better/worse), the two points it
//! lies between and its permutation p-value.
//!
//! The model is built here (the store is read in [`load`], the statistics
//! are computed in [`build`]); the files beside this one only format it,
//! one format each, behind [`Render`].

mod csv;
mod html;
mod markdown;
mod text;

use std::fmt::Write;

use indexmap::IndexMap;
use serde::Serialize;

use super::fmt::human;
use super::render::Render;
use crate::error::bad_input;
use crate::record::Direction;
use crate::stats::changepoint::{self, Settings};
use crate::stats::logratio;
use crate::stats::{Confidence, Sample};
use crate::store::{RunRow, Scope, StoreRead, StoredCell};

/// How the points of a history are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// A point per run (and cell), by the time its samples were taken.
    Time,
    /// A point per revision (the `revision` factor or parameter, else the
    /// kernel release), in the order revisions were first measured.
    Revision,
}

/// What to put in a history.
#[derive(Clone, Debug)]
pub struct Query {
    /// `BENCH[:k=v,...]` as the user wrote it.
    pub spec: String,
    pub metric: Option<String>,
    pub by: Order,
    /// Only runs of campaigns of this name.
    pub campaign: Option<String>,
    pub settings: Settings,
    pub unicode: bool,
}

/// One stored cell of one run, as the history reads it.
#[derive(Clone, Debug)]
pub struct Observation {
    pub run: RunRow,
    /// The kernel release of the run's fingerprint.
    pub kernel: Option<String>,
    pub cell: StoredCell,
}

/// The history of one benchmark (JSON: `kbench report --history --json`).
#[derive(Clone, Debug, Serialize)]
pub struct History {
    /// The benchmark and filters as asked (`pipe-bw:size=64k`).
    pub spec: String,
    pub by: Order,
    /// The campaign name the runs were restricted to.
    pub campaign: Option<String>,
    pub method: Method,
    /// One series per distinct cell (parameters and factors other than
    /// the revision).
    pub series: Vec<Series>,
    /// Print `µ` in text and Markdown (`--unicode`).
    #[serde(skip)]
    pub unicode: bool,
}

/// How points and change points were computed.
#[derive(Clone, Debug, Serialize)]
pub struct Method {
    /// `e-divisive means`.
    pub change_points: &'static str,
    /// Settings of the detection (significance, permutations, min_size,
    /// seed).
    pub settings: Settings,
    /// `runs-as-unit`: each point against the previous one with the run
    /// as the unit (`stats::design`); not judged with one run a point.
    pub step_test: &'static str,
    /// Confidence level of intervals and step tests, in percent.
    pub confidence: f64,
}

/// The points of one cell's history.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub bench: String,
    /// What tells this series from the others (`size=64k`); empty when
    /// there is one.
    pub label: String,
    /// Parameters, as the benchmark displays them.
    pub params: IndexMap<String, String>,
    /// Factors other than `revision`.
    pub factors: IndexMap<String, String>,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    pub points: Vec<Point>,
    pub change_points: Vec<Change>,
    /// Why change points could not be looked for (too few points).
    pub note: Option<String>,
}

/// One point: a run's cell, or a revision's cells pooled.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// Position in the series, from 0.
    pub index: usize,
    /// The revision (`--by revision`) or `run N` (`--by time`).
    pub label: String,
    /// The revision, when one is known.
    pub revision: Option<String>,
    /// When the first sample was taken (Unix seconds).
    pub time: f64,
    /// Runs whose samples the point holds.
    pub runs: Vec<i64>,
    /// Campaign names of those runs (empty for ad-hoc runs).
    pub campaigns: Vec<String>,
    pub hosts: Vec<String>,
    pub n: usize,
    pub mean: f64,
    pub stddev: f64,
    /// 95% interval of the mean (`null` with one sample).
    pub ci95: Option<[f64; 2]>,
    /// Against the previous point (`null` for the first).
    pub step: Option<Step>,
    /// The values with the blocks (run, round) they were measured in.
    #[serde(skip)]
    pub obs: Vec<crate::stats::design::Obs>,
}

/// A point against the previous one, by the design (`stats::design`):
/// points of several runs each compare with the run as the unit; a
/// point of one run against another is not judged, the run-to-run
/// variation being unmeasured (the change points, over the point means,
/// are the verdict then).
#[derive(Clone, Debug, Serialize)]
pub struct Step {
    /// Relative change of the mean (0.05 = +5%).
    pub change: f64,
    /// Two-sided p-value (`null` when not judged).
    pub p: Option<f64>,
    /// The 95% interval of the change excludes 0.
    pub significant: bool,
    /// The level not measured (`run`: one run a side).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<crate::stats::design::Level>,
}

/// A change point: the series moves between point `index - 1` and
/// `index`.
#[derive(Clone, Debug, Serialize)]
pub struct Change {
    /// First point after the change.
    pub index: usize,
    /// Labels of the points it lies between.
    pub from: String,
    pub to: String,
    /// When those points were measured (Unix seconds).
    pub from_time: f64,
    pub to_time: f64,
    /// Mean of the point means of the segment before (back to the
    /// previous change point) and after (up to the next).
    pub before: f64,
    pub after: f64,
    /// Points in those segments.
    pub points_before: usize,
    pub points_after: usize,
    /// `after - before`, in the metric's unit.
    pub absolute: f64,
    /// Relative change `after / before - 1`.
    pub change: f64,
    /// 95% interval of the relative change (Welch's, of the log ratio of
    /// the two segments' means of point means).
    pub interval: Option<[f64; 2]>,
    /// `better`, `worse` (by the metric's direction), or `changed`.
    pub verdict: &'static str,
    /// Permutation p-value of the split.
    pub p: f64,
    /// 1 - p.
    pub confidence: f64,
    /// The energy statistic of the split.
    pub statistic: f64,
}

/// Read every run of the store (of `q.campaign` when given) and build the
/// history of `q.spec`.
pub fn load(st: &dyn StoreRead, q: &Query) -> anyhow::Result<History> {
    let (name, _) = crate::units::split_operand(&q.spec)?;
    let mut obs = Vec::new();
    for run in st.runs(None)? {
        if q.campaign.is_some() && run.campaign != q.campaign {
            continue;
        }
        let cells: Vec<StoredCell> = st
            .cells(Scope::Run(run.id))?
            .into_iter()
            .filter(|(c, s)| (c.info.bench == name || c.info.source == name) && !s.is_empty())
            .collect();
        if cells.is_empty() {
            continue;
        }
        let kernel = st
            .run_details(run.id)
            .ok()
            .map(|d| d.fingerprint.kernel_release)
            .filter(|k| !k.is_empty());
        for cell in cells {
            obs.push(Observation {
                run: run.clone(),
                kernel: kernel.clone(),
                cell,
            });
        }
    }
    build(q, obs)
}

/// A cell's value for a factor, parameter or reading, as a user writes it
/// (`64k` or `65536` for a size).
fn matches(c: &crate::record::CellInfo, key: &str, want: &str) -> Option<bool> {
    if let Some(v) = c.factors.get(key) {
        return Some(v == want);
    }
    if let Some(v) = c.params.get(key) {
        return Some(
            super::json_label(v) == want || super::param_label(&c.source, &c.params, key) == want,
        );
    }
    c.readings.get(key).map(|v| v == want)
}

/// The revision a cell was measured at.
fn revision_of(o: &Observation) -> Option<String> {
    let c = &o.cell.0.info;
    c.factors
        .get("revision")
        .cloned()
        .or_else(|| c.params.get("revision").map(super::json_label))
        .or_else(|| c.readings.get("kernel.release").cloned())
        .or_else(|| o.kernel.clone())
}

/// The history of `q.spec` over `obs` (any order).
pub fn build(q: &Query, mut obs: Vec<Observation>) -> anyhow::Result<History> {
    let (name, filters) = crate::units::split_operand(&q.spec)?;
    obs.retain(|o| o.cell.0.info.bench == name || o.cell.0.info.source == name);
    if obs.is_empty() {
        let scope = q
            .campaign
            .as_ref()
            .map(|c| format!(" of campaign `{c}`"))
            .unwrap_or_default();
        return Err(bad_input!(
            "no stored run{scope} measured `{name}` (see `kbench runs`)"
        ));
    }
    for (k, v) in &filters {
        if !obs.iter().any(|o| matches(&o.cell.0.info, k, v).is_some()) {
            return Err(bad_input!(
                "`{}`: no factor or parameter `{k}` in the cells of `{name}`",
                q.spec
            ));
        }
        obs.retain(|o| matches(&o.cell.0.info, k, v) == Some(true));
    }
    if obs.is_empty() {
        return Err(bad_input!("`{}` selects no stored cell", q.spec));
    }
    let metric = match &q.metric {
        Some(m) => m.clone(),
        None => obs[0].cell.0.info.metrics[0].name.clone(),
    };
    let known: Vec<String> = {
        let mut k: Vec<String> = Vec::new();
        for o in &obs {
            for m in &o.cell.0.info.metrics {
                if !k.contains(&m.name) {
                    k.push(m.name.clone());
                }
            }
        }
        k
    };
    if !known.contains(&metric) {
        return Err(bad_input!(
            "--metric: `{name}` has no metric `{metric}` (known: {})",
            known.join(", ")
        ));
    }
    // Time order: run start, run, then the cell's place in its run (the
    // plan's order: cells are recorded before any is sampled, and their
    // samples interleave in a shuffled order, so the first sample's time
    // would order a run's revisions at random).
    obs.sort_by(|a, b| {
        a.run
            .started
            .total_cmp(&b.run.started)
            .then(a.run.id.cmp(&b.run.id))
            .then(a.cell.0.id.cmp(&b.cell.0.id))
    });
    // Series: everything but the revision.
    type Key = (String, String);
    let mut series: IndexMap<Key, Vec<&Observation>> = IndexMap::new();
    for o in &obs {
        let c = &o.cell.0.info;
        if !c.metrics.iter().any(|m| m.name == metric) {
            continue;
        }
        let mut params = c.params.clone();
        params.remove("revision");
        let mut factors = c.factors.clone();
        factors.shift_remove("revision");
        let key = (
            serde_json::to_string(&params).unwrap_or_default(),
            serde_json::to_string(&factors).unwrap_or_default(),
        );
        series.entry(key).or_default().push(o);
    }
    let conf = Confidence::percent(95.0);
    let mut out: Vec<Series> = series
        .values()
        .map(|os| one_series(q, os, &metric, conf))
        .collect();
    out.retain(|s| !s.points.is_empty());
    label_series(&mut out);
    Ok(History {
        spec: q.spec.clone(),
        by: q.by,
        campaign: q.campaign.clone(),
        method: Method {
            change_points: "e-divisive means",
            settings: q.settings,
            step_test: "runs-as-unit",
            confidence: conf.as_percent(),
        },
        series: out,
        unicode: q.unicode,
    })
}

/// Label each series by the parameters and factors that differ between
/// them.
fn label_series(all: &mut [Series]) {
    if all.len() < 2 {
        return;
    }
    let mut varying: Vec<(bool, String)> = Vec::new();
    for s in all.iter() {
        for (k, v) in s
            .factors
            .iter()
            .map(|x| (true, x))
            .chain(s.params.iter().map(|x| (false, x)))
        {
            let key = (k, v.0.clone());
            if varying.contains(&key) {
                continue;
            }
            let get = |t: &Series| {
                if k {
                    t.factors.get(v.0).cloned()
                } else {
                    t.params.get(v.0).cloned()
                }
            };
            if all.iter().any(|t| get(t) != Some(v.1.clone())) {
                varying.push(key);
            }
        }
    }
    for s in all.iter_mut() {
        // Only what the series sets: an ad hoc run has no factor, and
        // `pti=-, pcid=-` would read as values.
        let set: Vec<String> = varying
            .iter()
            .filter_map(|(f, k)| {
                let v = if *f {
                    s.factors.get(k)
                } else {
                    s.params.get(k)
                };
                v.map(|v| format!("{k}={v}"))
            })
            .collect();
        s.label = if set.is_empty() {
            "ad hoc runs".into()
        } else {
            set.join(", ")
        };
    }
}

fn one_series(q: &Query, os: &[&Observation], metric: &str, conf: Confidence) -> Series {
    let c0 = &os[0].cell.0.info;
    let m = c0
        .metrics
        .iter()
        .find(|m| m.name == metric)
        .expect("series cells have the metric");
    // Group cells into points.
    let mut groups: IndexMap<String, Vec<&Observation>> = IndexMap::new();
    for o in os {
        let key = match q.by {
            Order::Time => format!(
                "{}\u{1}{}\u{1}{}",
                o.run.id,
                o.cell.0.info.key,
                o.cell.0.info.readings_text()
            ),
            Order::Revision => revision_of(o).unwrap_or_else(|| "?".into()),
        };
        groups.entry(key).or_default().push(o);
    }
    let mut points: Vec<Point> = Vec::new();
    for (key, g) in &groups {
        if let Some(p) = point(q, (key, g), metric, conf, points.len()) {
            points.push(p);
        }
    }
    steps(&mut points, m.direction, conf);
    let (change_points, note) = change_points_of(q, &points, m.direction, conf);
    let mut params: IndexMap<String, String> = IndexMap::new();
    for k in c0.params.keys() {
        if k != "revision" {
            params.insert(k.clone(), super::param_label(&c0.source, &c0.params, k));
        }
    }
    let mut factors = c0.factors.clone();
    factors.shift_remove("revision");
    Series {
        bench: c0.bench.clone(),
        label: String::new(),
        params,
        factors,
        metric: m.name.clone(),
        unit: m.unit.clone(),
        direction: m.direction,
        points,
        change_points,
        note,
    }
}

/// One point of a series: the observations `g` grouped under `key` (a
/// run and cell, or a revision), their metric's values pooled; `None`
/// when they hold no value of it.
fn point(
    q: &Query,
    (key, g): (&str, &[&Observation]),
    metric: &str,
    conf: Confidence,
    index: usize,
) -> Option<Point> {
    let values: Vec<f64> = g
        .iter()
        .flat_map(|o| of_metric(o, metric).map(|s| s.value))
        .collect();
    let sample = Sample::new(&values).ok()?;
    let obs = g
        .iter()
        .flat_map(|o| {
            of_metric(o, metric).map(|s| crate::stats::design::Obs {
                value: s.value,
                boot: 0,
                run: o.run.id as u64,
                process: s.process.unwrap_or(0),
                round: Some(s.round),
            })
        })
        .collect();
    let mut runs: Vec<i64> = g.iter().map(|o| o.run.id).collect();
    runs.dedup();
    let mut campaigns: Vec<String> = Vec::new();
    let mut hosts: Vec<String> = Vec::new();
    for o in g {
        if let Some(c) = &o.run.campaign
            && !campaigns.contains(c)
        {
            campaigns.push(c.clone());
        }
        if !hosts.contains(&o.run.host) {
            hosts.push(o.run.host.clone());
        }
    }
    let label = match q.by {
        Order::Revision => key.to_string(),
        Order::Time => format!("run {}", g[0].run.id),
    };
    let time = g
        .iter()
        .flat_map(|o| o.cell.1.iter().map(|s| s.t))
        .fold(f64::INFINITY, f64::min);
    Some(Point {
        index,
        label,
        revision: revision_of(g[0]),
        time: if time.is_finite() {
            time
        } else {
            g[0].run.started
        },
        runs,
        campaigns,
        hosts,
        n: sample.len(),
        mean: sample.mean(),
        stddev: sample.stddev(),
        ci95: sample.mean_ci(conf).map(|i| [i.lo, i.hi]),
        step: None,
        obs,
    })
}

/// An observation's samples of `metric`.
fn of_metric<'a>(
    o: &'a Observation,
    metric: &'a str,
) -> impl Iterator<Item = &'a crate::store::SampleRec> + 'a {
    o.cell.1.iter().filter(move |s| s.metric() == metric)
}

/// Each point's step from the one before it, tested with the design
/// that ran.
fn steps(points: &mut [Point], direction: Direction, conf: Confidence) {
    for i in 1..points.len() {
        let (a, b) = (&points[i - 1], &points[i]);
        let change = if a.mean != 0.0 {
            b.mean / a.mean - 1.0
        } else {
            f64::NAN
        };
        let step = match crate::stats::design::compare(&a.obs, &b.obs, direction, conf) {
            Ok(d) => Step {
                change,
                p: d.p.filter(|_| d.too_few.is_none()),
                significant: d.significant(),
                unmeasured: d.unmeasured,
            },
            Err(_) => Step {
                change,
                p: None,
                significant: false,
                unmeasured: None,
            },
        };
        points[i].step = Some(step);
    }
}

/// The change points of a series' means, or why none were looked for.
fn change_points_of(
    q: &Query,
    points: &[Point],
    direction: Direction,
    conf: Confidence,
) -> (Vec<Change>, Option<String>) {
    let means: Vec<f64> = points.iter().map(|p| p.mean).collect();
    let need = changepoint::min_points(&q.settings);
    if means.len() < need {
        return (
            Vec::new(),
            Some(format!(
                "{} point{}: change points need at least {need}",
                means.len(),
                if means.len() == 1 { "" } else { "s" }
            )),
        );
    }
    let cps = changepoint::e_divisive(&means, &q.settings);
    (changes(points, &cps, direction, conf), None)
}

/// Sizes and ranges of the change points found.
fn changes(
    points: &[Point],
    cps: &[changepoint::ChangePoint],
    dir: Direction,
    conf: Confidence,
) -> Vec<Change> {
    let mut bounds: Vec<usize> = vec![0];
    bounds.extend(cps.iter().map(|c| c.index));
    bounds.push(points.len());
    cps.iter()
        .enumerate()
        .map(|(k, cp)| {
            let (lo, at, hi) = (bounds[k], bounds[k + 1], bounds[k + 2]);
            let seg = |r: std::ops::Range<usize>| -> Vec<f64> {
                points[r].iter().map(|p| p.mean).collect()
            };
            let (a, b) = (seg(lo..at), seg(at..hi));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (before, after) = (mean(&a), mean(&b));
            // On the log scale: no bound below -100% (none at all for a
            // mean of 0, which has no ratio).
            let interval = match (Sample::new(&a), Sample::new(&b)) {
                (Ok(sa), Ok(sb)) => logratio::of_means(&sa, &sb, conf)
                    .ok()
                    .filter(|r| r.too_few.is_none())
                    .map(|r| [r.log_interval.lo.exp_m1(), r.log_interval.hi.exp_m1()]),
                _ => None,
            };
            let change = if before != 0.0 {
                after / before - 1.0
            } else {
                f64::NAN
            };
            let verdict = match dir {
                Direction::Lower if after < before => "better",
                Direction::Lower if after > before => "worse",
                Direction::Higher if after > before => "better",
                Direction::Higher if after < before => "worse",
                _ => "changed",
            };
            Change {
                index: at,
                from: points[at - 1].label.clone(),
                to: points[at].label.clone(),
                from_time: points[at - 1].time,
                to_time: points[at].time,
                before,
                after,
                points_before: a.len(),
                points_after: b.len(),
                absolute: after - before,
                change,
                interval,
                verdict,
                p: cp.p,
                confidence: 1.0 - cp.p,
                statistic: cp.statistic,
            }
        })
        .collect()
}

impl Render for History {
    const KIND: &'static str = "history";

    fn text(&self) -> String {
        text::text(self)
    }

    fn markdown(&self) -> String {
        markdown::markdown(self)
    }

    fn html(&self) -> (String, String) {
        (format!("history of {}", self.spec), html::html(self))
    }

    fn csv(&self) -> Option<String> {
        Some(csv::csv(self))
    }
}

// ---------------------------------------------------------------------
// Words the formats share.

fn date(t: f64) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M").to_string())
        .unwrap_or_default()
}

fn title(h: &History, s: &Series) -> String {
    let mut t = s.bench.clone();
    if !s.label.is_empty() {
        let _ = write!(t, " ({})", s.label);
    }
    let _ = write!(t, ", {} [{}], {}", s.metric, s.unit, s.direction);
    let by = match h.by {
        Order::Time => "by time",
        Order::Revision => "by revision",
    };
    let n = s.points.len();
    let _ = write!(t, "; {by}, {n} point{}", if n == 1 { "" } else { "s" });
    t
}

/// The filters of the spec and the campaign, for the heading.
fn scope(h: &History) -> String {
    let mut t = format!("History of {}", h.spec);
    if let Some(c) = &h.campaign {
        let _ = write!(t, " in campaign {c}");
    }
    t
}

/// Half-width of the interval relative to the mean, as `0.4%`.
fn ci_rel(p: &Point) -> String {
    match p.ci95 {
        Some([lo, hi]) if p.mean != 0.0 => {
            let r = (hi - lo) / 2.0 / p.mean.abs() * 100.0;
            if r < 10.0 {
                format!("{r:.1}%")
            } else {
                format!("{r:.0}%")
            }
        }
        _ => "-".into(),
    }
}

fn half(p: &Point) -> Option<f64> {
    p.ci95.map(|[lo, hi]| (hi - lo) / 2.0)
}

/// The point's 95% interval as `lo .. hi` in its unit, or `-`.
fn ci_range(p: &Point, unit: &str, unicode: bool) -> String {
    p.ci95.map_or("-".into(), |[lo, hi]| {
        format!(
            "{} .. {}",
            human::value(lo, unit, half(p), unicode),
            human::value(hi, unit, half(p), unicode)
        )
    })
}

/// The ids of the runs pooled in a point, joined by `sep`.
fn runs_text(p: &Point, sep: &str) -> String {
    let runs: Vec<String> = p.runs.iter().map(|r| r.to_string()).collect();
    runs.join(sep)
}

/// The runs of a point for a reader (`run 7`, `runs 3, 4`): a bare id
/// next to the `n` column reads like a count.
fn runs_named(p: &Point) -> String {
    let ids = runs_text(p, ", ");
    if p.runs.len() == 1 {
        format!("run {ids}")
    } else {
        format!("runs {ids}")
    }
}

fn step_text(p: &Point) -> String {
    match &p.step {
        Some(s) if s.change.is_finite() => {
            let mut t = human::percent(s.change * 100.0, Some(0.5));
            t.push('%');
            if s.significant {
                t.push_str(" *");
            } else if s.unmeasured.is_some() {
                t.push_str(" ?");
            } else {
                t.push_str("  ");
            }
            t
        }
        _ => String::new(),
    }
}

/// `+5.0% [+4.1, +5.9] (+9.8 ns)`.
fn change_size(c: &Change, unit: &str, unicode: bool) -> String {
    if !c.change.is_finite() {
        // A step from 0 has no ratio: the absolute step says it.
        let from = human::value(c.before, unit, None, unicode);
        let to = human::value(c.after, unit, None, unicode);
        return format!("from {from} to {to}");
    }
    let pct = c.change * 100.0;
    let h = c.interval.map(|[lo, hi]| (hi - lo) * 50.0);
    let mut t = format!("{}%", human::percent(pct, h.or(Some(0.05))));
    if let Some([lo, hi]) = c.interval {
        let _ = write!(
            t,
            " [{}, {}]",
            human::percent_end(lo * 100.0, h),
            human::percent_end(hi * 100.0, h)
        );
    }
    let abs = human::value(c.absolute, unit, None, unicode);
    let abs = if c.absolute >= 0.0 {
        format!("+{abs}")
    } else {
        abs
    };
    let _ = write!(t, " ({abs})");
    t
}

fn p_text(p: f64) -> String {
    if p < 0.001 {
        "p < 0.001".into()
    } else {
        format!("p = {p:.3}")
    }
}

fn fit(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(w - 1).collect();
        t.push('~');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::csv::csv;
    use super::markdown::markdown;
    use super::text::text;
    use super::*;
    use crate::record::RunStatus;
    use crate::testing::{ns, stored_cell};

    fn run(id: i64, campaign: Option<&str>) -> RunRow {
        RunRow {
            id,
            uuid: format!("00000000-0000-4000-8000-{id:012}"),
            campaign: campaign.map(str::to_string),
            host: "lab1".into(),
            started: 1.7e9 + 3600.0 * id as f64,
            ended: None,
            status: RunStatus::Done,
            cells: 1,
            samples: 5,
            overhead_ns: 0.3,
            labels: Default::default(),
        }
    }

    /// `k` runs of a `getppid` cell, point `i` holding five values around
    /// `level(i)` (a fixed +-0.5% pattern, no randomness).
    fn runs(
        k: i64,
        level: impl Fn(i64) -> f64,
        revision: Option<&dyn Fn(i64) -> String>,
    ) -> Vec<Observation> {
        (1..=k)
            .map(|id| {
                let m = level(id);
                let vals: Vec<f64> = [-0.015, 0.006, 0.0, 0.012, -0.003]
                    .iter()
                    .map(|d| m * (1.0 + d))
                    .collect();
                let rev = revision.map(|f| f(id));
                let factors: Vec<(&str, &str)> = match &rev {
                    Some(r) => vec![("revision", r.as_str())],
                    None => vec![],
                };
                let mut cell = stored_cell(
                    1,
                    "getppid",
                    crate::record::Kind::Micro,
                    serde_json::json!({}),
                    &factors,
                    &[],
                    ns(),
                    &vals,
                );
                cell.0.run_id = id;
                for s in &mut cell.1 {
                    s.t += 3600.0 * id as f64;
                }
                Observation {
                    run: run(id, Some("nightly")),
                    kernel: Some("6.1.0".into()),
                    cell,
                }
            })
            .collect()
    }

    fn query(by: Order) -> Query {
        Query {
            spec: "getppid".into(),
            metric: None,
            by,
            campaign: None,
            settings: Settings::default(),
            unicode: false,
        }
    }

    /// 12 nightly runs; from run 7 on, getppid takes 5% longer.
    fn stepped() -> History {
        let level = |i: i64| {
            let wobble = [0.0, 0.004, -0.003, 0.002, -0.004, 0.001][(i % 6) as usize];
            200.0 * (1.0 + wobble) * if i >= 7 { 1.05 } else { 1.0 }
        };
        build(&query(Order::Time), runs(12, level, None)).unwrap()
    }

    #[test]
    fn a_step_is_one_change_point_between_the_right_runs() {
        let h = stepped();
        assert_eq!(h.series.len(), 1);
        let s = &h.series[0];
        assert_eq!(s.points.len(), 12);
        assert_eq!(s.change_points.len(), 1, "{:?}", s.change_points);
        let c = &s.change_points[0];
        assert_eq!(
            (c.index, c.from.as_str(), c.to.as_str()),
            (6, "run 6", "run 7")
        );
        assert_eq!(c.verdict, "worse");
        assert!((c.change - 0.05).abs() < 0.01, "{}", c.change);
        let [lo, hi] = c.interval.unwrap();
        assert!(lo < c.change && c.change < hi && lo > 0.0);
        // The step between two single runs is not judged (run-to-run
        // variation is not measured): the change point is the verdict.
        let step = s.points[6].step.as_ref().unwrap();
        assert!(!step.significant && step.p.is_none());
        assert_eq!(step.unmeasured, Some(crate::stats::design::Level::Run));
    }

    #[test]
    fn revisions_pool_their_runs_and_keep_first_seen_order() {
        // Two runs per revision: v1 v1 v2 v2 ... v6 v6.
        let rev = |i: i64| format!("v{}", (i + 1) / 2);
        let h = build(&query(Order::Revision), runs(12, |_| 100.0, Some(&rev))).unwrap();
        let s = &h.series[0];
        let labels: Vec<&str> = s.points.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["v1", "v2", "v3", "v4", "v5", "v6"]);
        assert_eq!(s.points[0].runs, [1, 2]);
        assert_eq!(s.points[0].n, 10);
        // Six points are too few to look for change points (min 4 a side).
        assert!(s.note.is_some() && s.change_points.is_empty());
    }

    #[test]
    fn revisions_of_one_run_keep_the_plans_order() {
        // One run measured r1, r2, r3 (cells 1..3), its rounds in a
        // shuffled order: r3's first sample came first.
        let obs: Vec<Observation> = ["r1", "r2", "r3"]
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut cell = stored_cell(
                    i as i64 + 1,
                    "getppid",
                    crate::record::Kind::Micro,
                    serde_json::json!({}),
                    &[("revision", r)],
                    &[],
                    ns(),
                    &[100.0, 101.0],
                );
                for smp in &mut cell.1 {
                    smp.t -= i as f64 * 0.1;
                }
                Observation {
                    run: run(1, None),
                    kernel: None,
                    cell,
                }
            })
            .rev()
            .collect();
        let h = build(&query(Order::Revision), obs).unwrap();
        let labels: Vec<&str> = h.series[0]
            .points
            .iter()
            .map(|p| p.label.as_str())
            .collect();
        assert_eq!(labels, ["r1", "r2", "r3"]);
    }

    #[test]
    fn cells_that_differ_in_a_parameter_are_separate_series() {
        let mut obs = runs(4, |_| 100.0, None);
        for (i, o) in obs.iter_mut().enumerate() {
            let size = if i % 2 == 0 { 4096 } else { 65536 };
            o.cell.0.info.params.insert("size".into(), size.into());
        }
        let h = build(&query(Order::Time), obs).unwrap();
        let labels: Vec<&str> = h.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["size=4096", "size=65536"]);
        assert_eq!(h.series[1].points.len(), 2);
        assert_eq!(h.series[1].points[0].label, "run 2");
        // Narrowed by the parameter, one series is left.
        let mut q = query(Order::Time);
        q.spec = "getppid:size=65536".into();
        let mut obs = runs(4, |_| 100.0, None);
        for (i, o) in obs.iter_mut().enumerate() {
            let size = if i % 2 == 0 { 4096 } else { 65536 };
            o.cell.0.info.params.insert("size".into(), size.into());
        }
        let h = build(&q, obs).unwrap();
        assert_eq!(h.series.len(), 1);
        assert_eq!(h.series[0].label, "");
    }

    #[test]
    fn ad_hoc_runs_are_named_so_not_by_missing_factors() {
        // Two runs of a campaign with pti set, two ad hoc ones without.
        let mut obs = runs(4, |_| 100.0, None);
        for o in obs.iter_mut().take(2) {
            o.cell.0.info.factors.insert("pti".into(), "on".into());
        }
        let h = build(&query(Order::Time), obs).unwrap();
        let labels: Vec<&str> = h.series.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["pti=on", "ad hoc runs"]);
        // The runs column names runs, not bare ids beside `n`.
        let md = markdown(&h);
        assert!(md.contains("| run 3 |"), "{md}");
    }

    #[test]
    fn bad_selections_name_what_is_missing() {
        let obs = || runs(3, |_| 100.0, None);
        let mut q = query(Order::Time);
        q.spec = "pipe-bw".into();
        let e = build(&q, obs()).unwrap_err().to_string();
        assert!(e.contains("no stored run measured `pipe-bw`"), "{e}");
        q.spec = "getppid:size=4k".into();
        let e = build(&q, obs()).unwrap_err().to_string();
        assert!(e.contains("no factor or parameter `size`"), "{e}");
        q.spec = "getppid".into();
        q.metric = Some("B/s".into());
        let e = build(&q, obs()).unwrap_err().to_string();
        assert!(e.contains("no metric `B/s` (known: ns/op)"), "{e}");
    }

    #[test]
    fn text_fits_80_columns() {
        let t = text(&stepped());
        for l in t.lines() {
            assert!(
                l.chars().count() <= 80,
                "{} columns: {l}",
                l.chars().count()
            );
        }
    }

    #[test]
    fn text_snapshot() {
        insta::assert_snapshot!(text(&stepped()));
    }

    #[test]
    fn markdown_snapshot() {
        insta::assert_snapshot!(markdown(&stepped()));
    }

    #[test]
    fn html_marks_change_points_and_escapes_labels() {
        let rev = |i: i64| {
            if i == 1 {
                "<script>alert(1)</script>".to_string()
            } else {
                format!("v{i}")
            }
        };
        let level = |i: i64| if i >= 7 { 105.0 } else { 100.0 };
        let h = build(&query(Order::Revision), runs(12, level, Some(&rev))).unwrap();
        let page = super::super::render(
            &super::super::Document::History(&h),
            super::super::Format::Html,
        )
        .unwrap();
        assert!(!page.contains("<script>"));
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert_eq!(page.matches("class=\"change-point\"").count(), 1);
        // A dot per point, a whisker per interval.
        assert_eq!(page.matches("<circle").count(), 12);
        // Round y ticks, not the range cut in quarters.
        let ticks = crate::report::table::tests::chart_ticks(&page);
        assert_eq!(ticks.len(), 1, "{page}");
        crate::report::fmt::axis::tests::assert_round(&ticks[0], None);
        let md = markdown(&h);
        assert!(!md.contains("<script>"), "{md}");
    }

    #[test]
    fn csv_has_a_row_per_point_and_marks_the_change() {
        let c = csv(&stepped());
        let lines: Vec<&str> = c.lines().collect();
        assert_eq!(lines.len(), 13);
        assert!(lines[0].starts_with("series,bench,metric,unit,index,label"));
        let marked: Vec<usize> = lines[1..]
            .iter()
            .enumerate()
            .filter(|(_, l)| l.split(',').nth(17) == Some("1"))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(marked, [6]);
    }

    #[test]
    fn load_reads_the_runs_of_a_store() {
        use crate::bench::fake::Fake;
        use crate::store::memory::MemoryStore;
        use crate::testing;
        let mut st = MemoryStore::new();
        // Fourteen runs of a fake benchmark, 10% slower from the eighth.
        for r in 0..14u32 {
            let f = Fake::new("fakebench", ns(), move |_, i| {
                100.0 * if r >= 7 { 1.1 } else { 1.0 } + ((i + r) % 3) as f64 * 0.1
            });
            let plan = testing::plan("adhoc", vec![testing::bench(f, &[])]);
            testing::run(&mut st, &plan, &testing::options(4, 0), None);
        }
        let mut q = query(Order::Time);
        q.spec = "fakebench".into();
        let h = load(&st, &q).unwrap();
        let s = &h.series[0];
        assert_eq!(s.points.len(), 14);
        assert_eq!(s.points.iter().map(|p| p.n).sum::<usize>(), 56);
        let cps: Vec<usize> = s.change_points.iter().map(|c| c.index).collect();
        assert_eq!(cps, [7]);
        q.campaign = Some("nosuch".into());
        assert!(load(&st, &q).is_err());
    }
}
