//! HTML: one self-contained page (inline CSS and SVG; no script, font,
//! image or style fetched) with a bar chart per table (confidence-interval
//! whiskers), scaling curves with the ideal-scaling line, the tables, the
//! system block and a methods section. Every user string is escaped.
//! Documents without a layout are their text rendering in a `<pre>`.

use std::fmt::Write;

use super::grid::Panel;
use super::layout::Reading;
use super::{SystemBlock, Table, TableDoc, Value};
use crate::ministat::{Version, difference_block};
use crate::report::fmt::axis::Axis;
use crate::report::fmt::html_escape as esc;
use crate::report::fmt::human;
use crate::report::scale::Scaling;

const COLOURS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

/// A map from data units to pixels along one axis.
type Px<'a> = &'a dyn Fn(f64) -> f64;

/// One bar: value, optional interval.
type Bar = Option<(f64, Option<(f64, f64)>)>;

/// A grouped bar chart: `cats` along x, one bar per series in each, with
/// whiskers for the intervals and a reference line at `base`.
fn bar_chart(
    series: &[String],
    cats: &[String],
    bars: &[Vec<Bar>],
    base: f64,
    (ylabel, unit): (&str, Option<&str>),
) -> String {
    let (w, h, left, bottom, top) = (900.0, 300.0, 70.0, 60.0, 20.0);
    let (lo, hi) = value_span(base, bars.iter().flatten().flatten().copied());
    let mut axis = Axis::linear(lo, hi, base);
    if let Some(u) = unit {
        axis = axis.in_unit(u);
    }
    let plot_h = h - bottom - top;
    let y = |v: f64| top + plot_h * (1.0 - axis.at(v));
    let plot_w = w - left - 10.0;
    let cat_w = plot_w / cats.len().max(1) as f64;
    let bar_w = (cat_w * 0.8) / series.len().max(1) as f64;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" class=\"chart\" role=\"img\">",
        h + 20.0 * ((series.len() as f64) / 4.0).ceil()
    );
    // Axis, round ticks and the reference line (a tick labelled with its
    // value).
    y_grid(&mut o, &axis, (left, w - 10.0), &y);
    let _ = write!(
        o,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{b:.1}\" y2=\"{b:.1}\" stroke=\"#333\"/>\
         <text x=\"12\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 12 {})\" text-anchor=\"middle\">{}</text>",
        w - 10.0,
        top + plot_h / 2.0,
        top + plot_h / 2.0,
        esc(ylabel),
        b = y(base)
    );
    for (ci, cat) in cats.iter().enumerate() {
        let x0 = left + cat_w * ci as f64 + cat_w * 0.1;
        for (si, b) in bars.get(ci).into_iter().flatten().enumerate() {
            let Some((v, iv)) = b else { continue };
            if !v.is_finite() {
                continue;
            }
            let x = x0 + bar_w * si as f64;
            let (a, b2) = (y(*v), y(base));
            let _ = write!(
                o,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
                a.min(b2),
                (bar_w - 1.0).max(1.0),
                (a - b2).abs().max(0.5),
                COLOURS[si % COLOURS.len()],
                esc(&format!("{} {}: {v:.4}", cat, series[si]))
            );
            if let Some(iv) = iv {
                error_bar(&mut o, x + bar_w / 2.0, *iv, (&axis, &y), "#000");
            }
        }
        let _ = write!(
            o,
            "<text class=\"xtick\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            left + cat_w * (ci as f64 + 0.5),
            h - bottom + 14.0,
            esc(cat)
        );
    }
    for (si, s) in series.iter().enumerate() {
        let c = COLOURS[si % COLOURS.len()];
        legend_entry(
            &mut o,
            si,
            (left, h - bottom + 36.0),
            (c, s.as_str()),
            " class=\"legend\"",
        );
    }
    o.push_str("</svg>\n");
    o
}

/// Entry `si` of a chart's legend below the plot, four a row from
/// `(left, top)`: a square in the series' colour and its name.
fn legend_entry(
    o: &mut String,
    si: usize,
    (left, top): (f64, f64),
    (colour, name): (&str, &str),
    class: &str,
) {
    let (lx, ly) = (left + 200.0 * (si % 4) as f64, top + 20.0 * (si / 4) as f64);
    let _ = write!(
        o,
        "<rect x=\"{lx}\" y=\"{:.1}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text{class} x=\"{}\" y=\"{ly:.1}\" font-size=\"11\">{}</text>",
        ly - 9.0,
        lx + 14.0,
        esc(name)
    );
}

/// An interval's error bar at `cx` from `lo` to `hi` (data units) on
/// `axis`, mapped to pixels by `y`: a vertical line with a 6-px cap at
/// each end that lies on the axis. An end off the axis (below a log
/// axis' floor, which holds no value <= 0) is cut at the axis' edge and
/// gets no cap, so an open end reads as "beyond the scale".
fn error_bar(
    o: &mut String,
    cx: f64,
    (lo, hi): (f64, f64),
    (axis, y): (&Axis, Px<'_>),
    stroke: &str,
) {
    if !(lo.is_finite() && hi.is_finite()) {
        return;
    }
    let inside = |v: f64| v >= axis.lo && v <= axis.hi && (axis.log.is_none() || v > 0.0);
    let clamp = |v: f64| {
        if axis.log.is_some() && v <= 0.0 {
            axis.lo
        } else {
            v.clamp(axis.lo, axis.hi)
        }
    };
    let (yl, yu) = (y(clamp(lo)), y(clamp(hi)));
    let _ = write!(o, "<path class=\"whisker\" d=\"M{cx:.1} {yl:.1}V{yu:.1}");
    for (v, yy) in [(lo, yl), (hi, yu)] {
        if inside(v) {
            let _ = write!(o, "M{:.1} {yy:.1}H{:.1}", cx - 3.0, cx + 3.0);
        }
    }
    let _ = write!(o, "\" stroke=\"{stroke}\" fill=\"none\"/>");
}

/// The charts of a table: none for a single row (one bar says nothing
/// a table does not); a matrix gets a chart per metric, each in its own
/// unit; changes and ratios one chart on the reference line.
fn table_chart(t: &Table) -> String {
    if t.rows.len() < 2 {
        return String::new();
    }
    if t.chart_per_metric() {
        return (0..t.cols.len()).map(|ci| metric_chart(t, ci)).collect();
    }
    let series: Vec<String> = t
        .groups
        .iter()
        .flat_map(|g| t.cols.iter().map(move |c| series_name(t, g, &c.label)))
        .collect();
    let rows: Vec<&super::TableRow> = t.rows.iter().chain(&t.summary).collect();
    let cats: Vec<String> = rows.iter().map(|r| r.labels.join(" ")).collect();
    let (base, ylabel) = t.reference().unwrap_or(super::layout::CHANGE);
    let bars: Vec<Vec<Bar>> = rows
        .iter()
        .map(|r| {
            r.cells
                .iter()
                .map(|c| match c {
                    Some(Value::Change { pct, lo, hi, .. }) => Some((*pct, lo.zip(*hi))),
                    Some(Value::Ratio { ratio, lo, hi, .. }) => Some((*ratio, lo.zip(*hi))),
                    _ => None,
                })
                .collect()
        })
        .collect();
    // A table of raw means in several units (the values before the
    // normalised table) has no one axis: the normalised table is charted.
    if bars.iter().flatten().all(Option::is_none) {
        return String::new();
    }
    bar_chart(&series, &cats, &bars, base, (ylabel, None))
}

/// A series' name: the group's values named by their factors
/// (`cpus=2way: pti=on`), then the column's label.
fn series_name(t: &Table, group: &str, col: &str) -> String {
    if group.is_empty() {
        col.to_string()
    } else if t.group_dims.len() == 1 {
        format!("{}={group}: {col}", t.group_dims[0])
    } else {
        format!("{group}: {col}")
    }
}

/// A row's category label with its factors' names (`pti=off pcid=on`).
fn named_labels(t: &Table, labels: &[String]) -> String {
    if t.row_dims.len() != labels.len() {
        return labels.join(" ");
    }
    t.row_dims
        .iter()
        .zip(labels)
        .map(|(d, l)| format!("{d}={l}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// One metric (column `ci`) of a matrix: a bar per row and group, in the
/// metric's unit from zero, its 95% interval as whiskers, titled with
/// the metric and the factors along x.
fn metric_chart(t: &Table, ci: usize) -> String {
    let col = &t.cols[ci];
    let series: Vec<String> = t
        .groups
        .iter()
        .map(|g| series_name(t, g, &col.metric))
        .collect();
    let cats: Vec<String> = t.rows.iter().map(|r| named_labels(t, &r.labels)).collect();
    let bars: Vec<Vec<Bar>> = t
        .rows
        .iter()
        .map(|r| {
            (0..t.groups.len())
                .map(|gi| match r.cells.get(gi * t.cols.len() + ci)? {
                    Some(Value::Mean { mean, half, .. }) => {
                        Some((*mean, half.map(|h| (mean - h, mean + h))))
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    if bars.iter().flatten().all(Option::is_none) {
        return String::new();
    }
    let title = format!(
        "{} [{}] by {}",
        col.metric,
        col.unit,
        if t.row_dims.is_empty() {
            "row".to_string()
        } else {
            t.row_dims.join(", ")
        }
    );
    let mut o = format!("<h3 class=\"chart-title\">{}</h3>", esc(&title));
    o.push_str(&bar_chart(
        &series,
        &cats,
        &bars,
        0.0,
        (
            &format!("{} (mean, 95% interval)", col.metric),
            Some(col.unit.as_str()),
        ),
    ));
    o
}

/// The x value of a row label when the table's rows are one numeric
/// swept parameter (`2k`, `128k`, `16`): sizes as bytes.
fn swept_x(label: &str) -> Option<f64> {
    let v = crate::units::parse_size(label).ok()? as f64;
    (v > 0.0).then_some(v)
}

/// A sweep's point: x, value, interval.
type SweepPoint = (f64, f64, Option<(f64, f64)>);

/// The lowest and highest of `base` and every finite value and interval
/// end in `values`: the range a chart's axis must hold.
fn value_span(base: f64, values: impl Iterator<Item = (f64, Option<(f64, f64)>)>) -> (f64, f64) {
    let (mut lo, mut hi) = (base, base);
    for (v, iv) in values {
        for y in [Some(v), iv.map(|i| i.0), iv.map(|i| i.1)]
            .into_iter()
            .flatten()
            .filter(|y| y.is_finite())
        {
            lo = lo.min(y);
            hi = hi.max(y);
        }
    }
    (lo, hi)
}

/// The horizontal grid of a chart: a light rule and a label at every
/// tick of `axis`, from `x1` to `x2`, mapped to pixels by `y`.
fn y_grid(o: &mut String, axis: &Axis, (x1, x2): (f64, f64), y: Px<'_>) {
    for v in &axis.ticks {
        let _ = write!(
            o,
            "<line x1=\"{x1}\" x2=\"{x2}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#eee\"/><text class=\"ytick\" x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            x1 - 4.0,
            y(*v) + 4.0,
            esc(&axis.label(*v)),
            yy = y(*v)
        );
    }
}

/// A sweep chart's series: one per group and column, each point the
/// swept x of its row, the value and its interval.
fn sweep_series(t: &Table, xs: &[f64]) -> Vec<(String, Vec<SweepPoint>)> {
    let mut series = Vec::new();
    for (gi, g) in t.groups.iter().enumerate() {
        for (ci, c) in t.cols.iter().enumerate() {
            let name = if g.is_empty() {
                c.label.clone()
            } else {
                format!("{g}: {}", c.label)
            };
            let pts: Vec<SweepPoint> = t
                .rows
                .iter()
                .zip(xs)
                .filter_map(|(r, x)| match r.cells.get(gi * t.cols.len() + ci)? {
                    Some(Value::Change { pct, lo, hi, .. }) => Some((*x, *pct, lo.zip(*hi))),
                    Some(Value::Ratio { ratio, lo, hi, .. }) => Some((*x, *ratio, lo.zip(*hi))),
                    _ => None,
                })
                .filter(|p| p.1.is_finite())
                .collect();
            if !pts.is_empty() {
                series.push((name, pts));
            }
        }
    }
    series
}

/// A sweep line chart for a table whose rows are one numeric parameter
/// (the pipe patches report's T.S): x = the parameter, on a log scale when its values
/// span a decade or more, a line per group and column with the
/// interval's whiskers, and the reference line (0% or a ratio of 1).
fn sweep_chart(t: &Table) -> Option<String> {
    if t.row_dims.len() != 1 || t.rows.len() < 2 {
        return None;
    }
    let xs: Vec<f64> = t
        .rows
        .iter()
        .map(|r| r.labels.first().and_then(|l| swept_x(l)))
        .collect::<Option<_>>()?;
    let (base, ylabel) = t.reference()?;
    let series = sweep_series(t, &xs);
    if series.is_empty() {
        return None;
    }
    let (xmin, xmax) = xs
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
            (a.min(*x), b.max(*x))
        });
    let log = xmax / xmin >= 10.0;
    let fx = |v: f64| if log { v.log10() } else { v };
    let (x0, x1) = (fx(xmin), fx(xmax).max(fx(xmin) + 1e-9));
    let values = series
        .iter()
        .flat_map(|(_, pts)| pts.iter().map(|p| (p.1, p.2)));
    let (lo, hi) = value_span(base, values);
    let axis = Axis::linear(lo, hi, base);
    let (w, h, left, right, top, bottom) = (900.0, 320.0, 70.0, 20.0, 20.0, 50.0);
    let x = |v: f64| left + (w - left - right) * (fx(v) - x0) / (x1 - x0);
    let y = |v: f64| top + (h - top - bottom) * (1.0 - axis.at(v));
    let rows_of_legend = series.len().div_ceil(4) as f64;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{}\" class=\"chart sweep\" role=\"img\">",
        h + 20.0 * rows_of_legend
    );
    y_grid(&mut o, &axis, (left, w - right), &y);
    let _ = write!(
        o,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{b:.1}\" y2=\"{b:.1}\" stroke=\"#333\"/>\
         <text x=\"12\" y=\"{m:.1}\" font-size=\"11\" transform=\"rotate(-90 12 {m:.1})\" text-anchor=\"middle\">{}</text>",
        w - right,
        esc(ylabel),
        b = y(base),
        m = top + (h - top - bottom) / 2.0
    );
    for (r, xv) in t.rows.iter().zip(&xs) {
        let _ = write!(
            o,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{top}\" y2=\"{:.1}\" stroke=\"#f3f3f3\"/><text x=\"{xx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            h - bottom,
            h - bottom + 14.0,
            esc(&r.labels[0]),
            xx = x(*xv)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{}{}</text>",
        (left + w - right) / 2.0,
        h - bottom + 30.0,
        esc(&t.row_dims[0]),
        if log { " (log scale)" } else { "" }
    );
    for (si, (name, pts)) in series.iter().enumerate() {
        let c = COLOURS[si % COLOURS.len()];
        sweep_curve(&mut o, t, &xs, (name, pts, c), (&axis, &x, &y));
        legend_entry(
            &mut o,
            si,
            (left, h - bottom + 50.0),
            (c, name.as_str()),
            "",
        );
    }
    o.push_str("</svg>\n");
    Some(o)
}

/// One series of a sweep chart: its line, each point's whisker and a
/// dot titled with the series, the swept parameter and the value.
fn sweep_curve(
    o: &mut String,
    t: &Table,
    xs: &[f64],
    (name, pts, c): (&str, &[SweepPoint], &str),
    (axis, x, y): (&Axis, Px<'_>, Px<'_>),
) {
    let d: String = pts
        .iter()
        .enumerate()
        .map(|(i, (xv, v, _))| {
            format!(
                "{}{:.1} {:.1}",
                if i == 0 { "M" } else { "L" },
                x(*xv),
                y(*v)
            )
        })
        .collect();
    let _ = write!(
        o,
        "<path d=\"{d}\" stroke=\"{c}\" stroke-width=\"2\" fill=\"none\"/>"
    );
    for (xv, v, iv) in pts {
        let cx = x(*xv);
        if let Some(iv) = iv {
            error_bar(o, cx, *iv, (axis, y), c);
        }
        let _ = write!(
            o,
            "<circle cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"><title>{}</title></circle>",
            y(*v),
            esc(&format!(
                "{name} at {} {}: {v:.4}",
                t.row_dims[0],
                t.rows
                    .iter()
                    .zip(xs)
                    .find(|(_, x)| *x == xv)
                    .map_or("", |(r, _)| r.labels[0].as_str())
            ))
        );
    }
}

/// A value with its interval beside it, in bold when significant; a
/// ratio's ends with three decimals.
fn cell(v: &Value, c: &super::Column, panel: Panel) -> String {
    let r = Reading::of(v, c, panel, true);
    let iv = match (r.ratio, r.interval, r.ends()) {
        (true, Some((l, h, _)), _) => format!(" [{l:.3}, {h:.3}]"),
        (_, _, Some([l, h])) => format!(" [{l}, {h}]"),
        _ => String::new(),
    };
    // `?`: not judged (the legend says why); kept beside the number.
    let s = format!("{}{}", r.number, r.mark().trim_end_matches(['*', ' ']));
    let class = if r.significant { " class=\"sig\"" } else { "" };
    format!("<td{class}>{}{}</td>", esc(&s), esc(&iv))
}

fn html_table(o: &mut String, t: &Table, panel: Panel) {
    o.push_str("<table>");
    let grouped = t.groups.iter().any(|g| !g.is_empty());
    if grouped {
        o.push_str("<tr>");
        for _ in &t.row_dims {
            o.push_str("<th></th>");
        }
        for g in &t.groups {
            let _ = write!(o, "<th colspan=\"{}\">{}</th>", t.cols.len(), esc(g));
        }
        o.push_str("</tr>");
    }
    o.push_str("<tr>");
    for d in &t.row_dims {
        let _ = write!(o, "<th class=\"l\">{}</th>", esc(d));
    }
    for _ in &t.groups {
        for c in &t.cols {
            let _ = match &c.shown_unit {
                Some(u) => write!(o, "<th>{} ({})</th>", esc(&c.label), esc(u)),
                None => write!(o, "<th>{}</th>", esc(&c.label)),
            };
        }
    }
    o.push_str("</tr>\n");
    let summary: &[super::TableRow] = if panel == Panel::Main {
        &t.summary
    } else {
        &[]
    };
    for r in t.rows.iter().chain(summary) {
        o.push_str("<tr>");
        for i in 0..t.row_dims.len().max(1) {
            let _ = write!(
                o,
                "<td class=\"l\">{}</td>",
                esc(r.labels.get(i).map_or("", |s| s.as_str()))
            );
        }
        for (i, c) in r.cells.iter().enumerate() {
            match c {
                Some(v) => o.push_str(&cell(v, &t.cols[i % t.cols.len().max(1)], panel)),
                None => o.push_str("<td>-</td>"),
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

fn table(o: &mut String, t: &Table) {
    let mut head = t.bench.clone();
    if let Some(m) = &t.metric {
        let _ = write!(head, ": {m}");
        if let Some(u) = &t.unit
            && u != m
        {
            let _ = write!(head, " [{u}]");
        }
    }
    if !t.section.is_empty() {
        let s: Vec<String> = t.section.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = write!(head, " ({})", s.join(", "));
    }
    let _ = writeln!(o, "<h2>{}</h2>", esc(&head));
    o.push_str("<p class=\"legend\">");
    for l in &t.legend {
        let l = l.replace("* = ", "bold = ");
        let _ = write!(o, "{}<br>", esc(&l));
    }
    if !t.constant.is_empty() {
        let c: Vec<String> = t.constant.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let _ = write!(o, "all cells: {}", esc(&c.join(", ")));
    }
    o.push_str("</p>\n");
    o.push_str(&table_chart(t));
    if let Some(chart) = sweep_chart(t) {
        o.push_str(&chart);
    }
    if let Some(base) = t.normalised_to() {
        o.push_str("<h3>Values</h3>\n");
        html_table(o, t, Panel::Means);
        let _ = writeln!(o, "<h3>Normalised to {}</h3>", esc(base));
    }
    html_table(o, t, Panel::Main);
    for d in &t.diffs {
        let _ = writeln!(
            o,
            "<p>{} ({}): {} vs {}</p><pre>{}</pre>",
            esc(&d.metric),
            esc(&d.unit),
            esc(&d.baseline),
            esc(&d.contender),
            esc(&difference_block(Version::FreeBsdMain, d.a, d.b, d.level))
        );
    }
}

/// ops/s against tasks, a line per mode, and the ideal line (the first
/// point scaled by the task count).
/// The ideal curve of each mode, as will-it-scale's runtest.py draws its
/// `linear` column: the better first-point value per task among the
/// mode's curves, times the task count.
fn ideals(s: &Scaling) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64)> = Vec::new();
    for sr in &s.series {
        let Some(p) = sr.points.first() else { continue };
        let per = p.mean / p.tasks.max(1) as f64;
        match out.iter_mut().find(|(m, _)| *m == sr.mode) {
            Some((_, best)) => *best = best.max(per),
            None => out.push((sr.mode.clone(), per)),
        }
    }
    out
}

/// A scaling chart's frame: the task counts along x (log2), the value
/// axis, and the pixel geometry both map into.
struct ScalingPlot {
    /// Every task count measured, ascending.
    ts: Vec<u32>,
    tmin: f64,
    tmax: f64,
    xa: Axis,
    ya: Axis,
}

impl ScalingPlot {
    const W: f64 = 760.0;
    const H: f64 = 340.0;
    const LEFT: f64 = 100.0;
    const RIGHT: f64 = 20.0;
    const TOP: f64 = 15.0;
    const BOTTOM: f64 = 45.0;
    const PLOT_H: f64 = Self::H - Self::TOP - Self::BOTTOM;

    fn new(s: &Scaling, log_y: bool) -> ScalingPlot {
        let mut ts: Vec<u32> = s
            .series
            .iter()
            .flat_map(|x| x.points.iter().map(|p| p.tasks))
            .collect();
        ts.sort_unstable();
        ts.dedup();
        let tmin = ts.first().copied().unwrap_or(1).max(1) as f64;
        let tmax = ts.last().copied().unwrap_or(1).max(2) as f64;
        let xa = Axis::log(tmin, tmax, 2.0);
        // The ideal lines reach the axis only as far as the data goes: sized
        // to them, the real curves would lie flat on the floor.
        let vals = || s.series.iter().flat_map(|x| x.points.iter());
        let top = vals().map(|p| p.max).fold(0.0f64, f64::max);
        // A stalled interval (0 ops/s) has no place on a log scale: the
        // floor is the lowest positive value, its whisker cut there.
        let bottom = vals()
            .flat_map(|p| [p.min, p.mean])
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        let ya = if log_y {
            Axis::log(bottom, top, 10.0)
        } else {
            Axis::linear(0.0, top, 0.0)
        }
        .in_unit("ops/s");
        ScalingPlot {
            ts,
            tmin,
            tmax,
            xa,
            ya,
        }
    }

    fn x(&self, t: f64) -> f64 {
        Self::LEFT + (Self::W - Self::LEFT - Self::RIGHT) * self.xa.at(t)
    }

    fn y(&self, v: f64) -> f64 {
        Self::TOP + Self::PLOT_H * (1.0 - self.ya.at(v))
    }
}

/// The dash patterns of the ideal lines, one per mode.
const DASHES: [&str; 3] = ["6 4", "2 3", "8 3 2 3"];

/// A scaling chart: ops/s against tasks (log2 x), a labelled curve per
/// origin and mode, a dashed ideal line per mode, all in the legend; y
/// from zero, or logarithmic with `log_y`.
fn scaling(o: &mut String, s: &Scaling, log_y: bool) {
    let mut head = format!("{}: ops/s by tasks", s.bench);
    if !s.context.is_empty() {
        let _ = write!(head, " ({})", s.context.join(", "));
    }
    let _ = writeln!(o, "<h2>{}</h2>", esc(&head));
    for w in &s.warnings {
        let _ = writeln!(o, "<p class=\"warning\"><b>warning:</b> {}</p>", esc(w));
    }
    let plot = ScalingPlot::new(s, log_y);
    let ideal = ideals(s);
    if s.series
        .iter()
        .flat_map(|x| x.points.iter())
        .any(|p| p.n > 1 && p.max > p.min)
    {
        o.push_str(
            "<p class=\"legend\">whiskers: the slowest and the fastest interval of each point</p>\n",
        );
    }
    scaling_frame(o, s, &plot, ideal.len());
    let _ = write!(o, "<g clip-path=\"url(#plot-{})\">", clip_id(s));
    for (i, (mode, per)) in ideal.iter().enumerate() {
        let _ = write!(
            o,
            "<path class=\"ideal\" d=\"M{:.1} {:.1}L{:.1} {:.1}\" stroke=\"#888\" stroke-dasharray=\"{}\" fill=\"none\"><title>ideal ({})</title></path>",
            plot.x(plot.tmin),
            plot.y(per * plot.tmin),
            plot.x(plot.tmax),
            plot.y(per * plot.tmax),
            DASHES[i % DASHES.len()],
            esc(mode)
        );
    }
    for (si, sr) in s.series.iter().enumerate() {
        scaling_curve(o, sr, &plot, COLOURS[si % COLOURS.len()]);
    }
    o.push_str("</g>");
    scaling_legend(o, s, &ideal);
    o.push_str("</svg>\n");
    scaling_table(o, s, &plot.ts);
}

/// A scaling chart's frame: the svg element sized for `legend` more
/// entries than curves, the clip path of the plot, the value grid and
/// the task ticks.
fn scaling_frame(o: &mut String, s: &Scaling, plot: &ScalingPlot, ideals: usize) {
    type P = ScalingPlot;
    let legend_rows = (s.series.len() + ideals).div_ceil(3) as f64;
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" class=\"chart scaling\" role=\"img\">",
        P::W,
        P::H + 20.0 * legend_rows
    );
    let _ = write!(
        o,
        "<clipPath id=\"plot-{id}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>",
        P::LEFT,
        P::TOP,
        P::W - P::LEFT - P::RIGHT,
        P::PLOT_H,
        id = clip_id(s)
    );
    y_grid(o, &plot.ya, (P::LEFT, P::W - P::RIGHT), &|v| plot.y(v));
    for t in &plot.ts {
        let _ = write!(
            o,
            "<line x1=\"{xx:.1}\" x2=\"{xx:.1}\" y1=\"{}\" y2=\"{:.1}\" stroke=\"#f3f3f3\"/><text class=\"xtick\" x=\"{xx:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">{t}</text>",
            P::TOP,
            P::H - P::BOTTOM,
            P::H - P::BOTTOM + 16.0,
            xx = plot.x(*t as f64)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"middle\">tasks (log2 scale)</text>",
        (P::LEFT + P::W - P::RIGHT) / 2.0,
        P::H - 8.0
    );
}

/// One curve of a scaling chart: the line through the means, each
/// point's whisker and a dot titled with its value.
fn scaling_curve(o: &mut String, sr: &crate::report::scale::Series, plot: &ScalingPlot, c: &str) {
    let d: String = sr
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            format!(
                "{}{:.1} {:.1}",
                if i == 0 { "M" } else { "L" },
                plot.x(p.tasks as f64),
                plot.y(p.mean)
            )
        })
        .collect();
    let _ = write!(
        o,
        "<path class=\"curve\" d=\"{d}\" stroke=\"{c}\" stroke-width=\"2\" fill=\"none\"/>"
    );
    for p in sr.points.iter().filter(|p| p.n > 1 && p.max > p.min) {
        let y = |v: f64| plot.y(v);
        error_bar(o, plot.x(p.tasks as f64), (p.min, p.max), (&plot.ya, &y), c);
    }
    for p in &sr.points {
        let _ = write!(
            o,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{c}\"><title>{}</title></circle>",
            plot.x(p.tasks as f64),
            plot.y(p.mean),
            esc(&format!(
                "{} {} tasks: {}",
                sr.label(),
                p.tasks,
                human::value(p.mean, "ops/s", None, true)
            ))
        );
    }
}

/// A scaling chart's legend below the plot, three entries a row: each
/// curve in its colour, then each mode's dashed ideal line.
fn scaling_legend(o: &mut String, s: &Scaling, ideal: &[(String, f64)]) {
    let entries = s
        .series
        .iter()
        .enumerate()
        .map(|(si, sr)| (sr.label(), COLOURS[si % COLOURS.len()], None))
        .chain(ideal.iter().enumerate().map(|(i, (m, _))| {
            (
                format!("ideal ({m})"),
                "#888",
                Some(DASHES[i % DASHES.len()]),
            )
        }));
    for (i, (name, c, dash)) in entries.enumerate() {
        let (lx, ly) = (
            ScalingPlot::LEFT + 220.0 * (i % 3) as f64,
            ScalingPlot::H + 14.0 + 20.0 * (i / 3) as f64,
        );
        let _ = write!(
            o,
            "<path d=\"M{lx} {:.1}h18\" stroke=\"{c}\" stroke-width=\"2\"{}/><text class=\"legend\" x=\"{}\" y=\"{ly:.1}\" font-size=\"11\">{}</text>",
            ly - 4.0,
            dash.map(|d| format!(" stroke-dasharray=\"{d}\""))
                .unwrap_or_default(),
            lx + 22.0,
            esc(&name)
        );
    }
}

/// The table under a scaling chart: a row per task count, ops/s and
/// efficiency per curve.
fn scaling_table(o: &mut String, s: &Scaling, ts: &[u32]) {
    o.push_str("<table><tr><th>tasks</th>");
    for sr in &s.series {
        let _ = write!(o, "<th>{} ops/s</th><th>eff</th>", esc(&sr.label()));
    }
    o.push_str("</tr>\n");
    for t in ts {
        let _ = write!(o, "<tr><td>{t}</td>");
        for sr in &s.series {
            match sr.points.iter().find(|p| p.tasks == *t) {
                Some(p) => {
                    let _ = write!(
                        o,
                        "<td>{}</td><td>{:.2}</td>",
                        esc(&human::value(p.mean, "ops/s", None, true)),
                        p.efficiency
                    );
                }
                None => o.push_str("<td>-</td><td>-</td>"),
            }
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</table>\n");
}

/// An id for a chart's clip path, unique on the page for each testcase
/// and context.
fn clip_id(s: &Scaling) -> String {
    let mut h: u32 = 2166136261;
    for b in s.bench.bytes().chain(s.context.join(",").bytes()) {
        h = (h ^ u32::from(b)).wrapping_mul(16777619);
    }
    format!("{h:08x}")
}

fn system(o: &mut String, s: &SystemBlock) {
    let _ = writeln!(o, "<h2>System configuration ({})</h2><table>", esc(&s.host));
    let mut kv = |k: &str, v: String| {
        let _ = writeln!(
            o,
            "<tr><th class=\"l\">{}</th><td class=\"l\">{}</td></tr>",
            esc(k),
            esc(&v)
        );
    };
    for (k, v) in s.rows() {
        kv(k, v);
    }
    o.push_str("</table>\n");
}

/// Each profiled cell's flame graph, all rounds together.
pub(crate) fn flames(f: &[(String, crate::profile::Folded)]) -> String {
    let mut o = String::new();
    if f.is_empty() {
        return o;
    }
    o.push_str("<h2>Profiles</h2>\n<p class=\"legend\">Sampled call stacks of each cell's timed intervals (<code>run --profile</code>); a frame's width is its share of the samples; hover a frame for its values.</p>\n");
    for (i, (name, stacks)) in f.iter().enumerate() {
        let _ = writeln!(o, "<h3>{}</h3>", esc(name));
        o.push_str(&crate::report::flame::svg(stacks, None, &format!("f{i}")));
    }
    o
}

pub(crate) fn tables(d: &TableDoc) -> String {
    let mut o = String::new();
    for t in &d.title {
        let _ = writeln!(o, "<h1>{}</h1>", esc(t));
    }
    for a in &d.answers {
        let _ = writeln!(o, "<p class=\"answer\"><strong>{}</strong></p>", esc(a));
    }
    for t in &d.tables {
        table(&mut o, t);
    }
    if d.shows_scaling() {
        for s in &d.scaling {
            scaling(&mut o, s, d.log_y);
        }
    }
    for s in &d.skipped {
        let _ = writeln!(o, "<p class=\"legend\">no table: {}</p>", esc(s));
    }
    if let Some(k) = &d.comparability {
        comparability(&mut o, k);
    }
    for s in &d.systems {
        system(&mut o, s);
    }
    o.push_str("<h2>Methods</h2>\n<ul>");
    for m in &d.methods {
        let _ = write!(o, "<li>{}</li>", esc(m));
    }
    o.push_str("</ul>\n");
    if let Some(p) = &d.plan {
        let _ = writeln!(o, "<h3>Plan</h3><pre>{}</pre>", esc(p));
    }
    o
}

/// The facts that differ between the runs (a table, `!` on those known to
/// move results), then each warning.
fn comparability(o: &mut String, k: &crate::report::comparability::Comparability) {
    o.push_str("<h2>Comparability</h2>\n");
    if k.differences.is_empty() && k.unknown.is_empty() {
        let _ = writeln!(
            o,
            "<p>The runs agree in every recorded fact ({}).</p>",
            esc(&k.facts.join(", "))
        );
    } else if k.differences.is_empty() {
        let _ = writeln!(
            o,
            "<p>No recorded fact differs; {}.</p>",
            esc(&k.unknown_text())
        );
    } else {
        o.push_str("<table><tr><th>fact</th>");
        for n in &k.operands {
            let _ = write!(o, "<th>{}</th>", esc(n));
        }
        o.push_str("</tr>\n");
        for d in &k.differences {
            let mark = if d.moves_results { "! " } else { "" };
            let exp = if d.expected { " (expected)" } else { "" };
            let _ = write!(o, "<tr><td>{}{}{}</td>", mark, esc(&d.fact), exp);
            for v in &d.values {
                let _ = write!(o, "<td>{}</td>", esc(&v.join(" / ")));
            }
            o.push_str("</tr>\n");
        }
        o.push_str("</table>\n<p class=\"legend\">! = known to move results</p>\n");
        if !k.unknown.is_empty() {
            let _ = writeln!(o, "<p>{}</p>", esc(&k.unknown_text()));
        }
    }
    for e in &k.expected_but_same {
        let _ = writeln!(o, "<p>--expect {}: it does not differ</p>", esc(e));
    }
    for w in &k.warnings {
        let _ = writeln!(o, "<p class=\"warning\"><b>warning:</b> {}</p>", esc(w));
    }
}

#[cfg(test)]
mod tests {
    use crate::report::scale::{Point, Scaling, Series};

    fn point(tasks: u32, mean: f64, min: f64, max: f64) -> Point {
        Point {
            tasks,
            n: 5,
            mean,
            median: mean,
            stddev: 0.0,
            min,
            max,
            per_task: mean / f64::from(tasks),
            efficiency: 1.0,
            idle: None,
        }
    }

    /// Whiskers are mapped end by end through the axis: on a log scale
    /// an interval reaching 0 (a stalled interval) is cut at the floor
    /// with no cap there, while the ends on the scale get theirs; on a
    /// linear scale from 0 every end is on the scale.
    #[test]
    fn whiskers_on_a_log_scale_are_cut_where_the_scale_ends() {
        let s = Scaling {
            bench: "brk1".into(),
            context: Vec::new(),
            series: vec![Series {
                mode: "processes".into(),
                origin: Vec::new(),
                points: vec![point(1, 1.0e6, 0.0, 1.2e6), point(2, 2.0e6, 1.8e6, 2.2e6)],
                flattens_at: None,
            }],
            warnings: Vec::new(),
        };
        let caps = |html: &str| -> Vec<usize> {
            let re = regex::Regex::new(r#"<path class="whisker" d="([^"]*)""#).unwrap();
            re.captures_iter(html)
                .map(|c| c[1].matches('H').count())
                .collect()
        };
        let mut log = String::new();
        super::scaling(&mut log, &s, true);
        assert_eq!(caps(&log), [1, 2], "{log}");
        let mut lin = String::new();
        super::scaling(&mut lin, &s, false);
        assert_eq!(caps(&lin), [2, 2], "{lin}");
        // Every point's dot lies on the plot (top 15 px, bottom 295 px),
        // the one whose slowest interval stalled too.
        let dot = regex::Regex::new(r#"<circle cx="[^"]*" cy="([^"]*)""#).unwrap();
        for html in [&log, &lin] {
            let ys: Vec<f64> = dot
                .captures_iter(html)
                .map(|c| c[1].parse().unwrap())
                .collect();
            assert_eq!(ys.len(), 2);
            assert!(ys.iter().all(|y| (15.0..=295.0).contains(y)), "{ys:?}");
        }
        assert!(log.contains("whiskers: the slowest and the fastest interval"));
    }
}
