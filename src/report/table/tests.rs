//! The layouts of `table.rs` from fixed samples: snapshots of every layout
//! in text and Markdown, and checks of the numbers behind them.

use super::{self as table, TableDoc, Value};
use crate::plan::report::{Layout, TableKind, parse_assign};
use crate::record::{Direction, Kind, Metric};
use crate::report::{Document, Format, Report, render};
use crate::testing::{run_data, stored_cell};

fn bps() -> Metric {
    Metric::new("bytes/s", "B/s", Direction::Higher)
}

/// Six values around `base`, a spread of 0.4%.
fn around(base: f64) -> Vec<f64> {
    around_in(base, 0)
}

/// The same six values in the order cell `id` measured them: cells of a
/// run do not wobble in step, so their per-round ratios vary too.
fn around_in(base: f64, id: i64) -> Vec<f64> {
    let order = [
        [0, 1, 2, 3, 4, 5],
        [3, 0, 5, 1, 4, 2],
        [5, 2, 0, 4, 1, 3],
        [1, 4, 3, 5, 2, 0],
        [2, 5, 4, 0, 3, 1],
    ];
    order[id as usize % 5]
        .iter()
        .map(|&k| base * (1.0 + (k as f64 - 2.5) * 0.0015))
        .collect()
}

/// The pipe patches report: pipe-bw over pipe_size x zero_copy x cpus, swept chunk.
fn pipes(cpus_label: &str) -> crate::store::RunData {
    let mut cells = Vec::new();
    let mut id = 0;
    for cpus in ["2way", "UP"] {
        for (ps, zc) in [(4096, "copy"), (32768, "copy"), (4096, "zc"), (32768, "zc")] {
            for chunk in [2048u64, 65536] {
                id += 1;
                // LP helps on 2way, costs on UP; ZC helps big chunks.
                let lp = if ps == 32768 {
                    if cpus == "2way" { 1.3 } else { 0.8 }
                } else {
                    1.0
                };
                let z = if zc == "zc" {
                    if chunk > 32768 { 1.5 } else { 0.9 }
                } else {
                    1.0
                };
                // One variant within the noise: not significant.
                let noise = if cpus == "UP" && ps == 4096 && zc == "zc" && chunk == 2048 {
                    1.0 / 0.9 * 1.001
                } else {
                    1.0
                };
                let cpus = if cpus == "UP" { cpus_label } else { cpus };
                let ps_label = if ps == 4096 { "4k" } else { "32k" };
                cells.push(stored_cell(
                    id,
                    "pipe-bw",
                    Kind::Micro,
                    serde_json::json!({"chunk": chunk, "pipe_size": ps, "zero_copy": zc == "zc", "placement": "none"}),
                    &[("pipe_size", ps_label), ("zero_copy", zc), ("cpus", cpus)],
                    &["chunk"],
                    bps(),
                    &around_in(1.1e9 * lp * z * noise, id),
                ));
            }
        }
    }
    run_data(cells)
}

fn improvement_layout() -> Layout {
    Layout {
        table: TableKind::Improvement,
        rows: vec!["chunk".into()],
        cols: vec!["pipe_size".into(), "zero_copy".into()],
        groups: vec!["cpus".into()],
        baseline: parse_assign("pipe_size=4k,zero_copy=copy").unwrap(),
        variants: vec![
            (
                "LP(32k)".into(),
                parse_assign("pipe_size=32k,zero_copy=copy").unwrap(),
            ),
            (
                "ZC".into(),
                parse_assign("pipe_size=4k,zero_copy=zc").unwrap(),
            ),
            (
                "LP(32k)+ZC".into(),
                parse_assign("pipe_size=32k,zero_copy=zc").unwrap(),
            ),
        ],
        names: [("chunk".to_string(), "T.S".to_string())]
            .into_iter()
            .collect(),
        ..Layout::default()
    }
}

fn doc(r: Report, l: &Layout) -> TableDoc {
    table::build(&[r], l, false)
}

fn text(d: &TableDoc) -> String {
    render(&Document::Tables(d), Format::Text).unwrap()
}

fn md(d: &TableDoc) -> String {
    render(&Document::Tables(d), Format::Markdown).unwrap()
}

fn assert_fits(s: &str) {
    for l in s.lines() {
        assert!(l.chars().count() <= 80, "line over 80 columns: {l:?}");
        assert!(l.is_ascii(), "text is ASCII: {l:?}");
    }
}

#[test]
fn improvement_is_the_pipe_patches_reports_table_1() {
    let d = doc(Report::of_run(pipes("UP")), &improvement_layout());
    let t = &d.tables[0];
    assert_eq!(t.groups, ["2way", "UP"]);
    let labels: Vec<&str> = t.cols.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["LP(32k)", "ZC", "LP(32k)+ZC"]);
    assert_eq!(t.rows[0].labels, ["2k"]);
    assert_eq!(t.row_dims, ["T.S"]);
    // 2way, LP(32k), 2k: +30%, significant.
    let Some(Value::Change {
        pct, significant, ..
    }) = &t.rows[0].cells[0]
    else {
        panic!("a change")
    };
    assert!((pct - 30.0).abs() < 1e-6, "{pct}");
    assert!(significant);
    // UP, ZC, 2k: within the noise.
    let Some(Value::Change { significant, .. }) = &t.rows[0].cells[4] else {
        panic!("a change")
    };
    assert!(!significant);
    // The marks follow p adjusted (Holm) across the table's 12 changes.
    let mut family = 0;
    for v in t.rows.iter().flat_map(|r| r.cells.iter().flatten()) {
        if let Value::Change {
            p,
            p_adjusted,
            significant,
            ..
        } = v
        {
            family += 1;
            let (p, q) = (p.expect("a p-value"), p_adjusted.expect("adjusted"));
            assert!(q >= p && q <= 1.0);
            assert_eq!(*significant, q < 0.05, "p {p}, adjusted {q}");
        }
    }
    assert_eq!(family, 12);
    assert!(
        t.legend
            .iter()
            .any(|l| l.contains("Holm-adjusted over 12 comparisons")),
        "{:?}",
        t.legend
    );
    // Constant dimensions leave the labels.
    assert!(
        t.constant
            .iter()
            .any(|(k, v)| k == "placement" && v == "none")
    );
    let s = text(&d);
    assert_fits(&s);
    insta::assert_snapshot!("improvement_text", s);
    insta::assert_snapshot!("improvement_markdown", md(&d));
}

#[test]
fn an_improvement_is_positive_when_better_and_a_change_is_new_over_baseline() {
    let mk = |id, v: f64, label| {
        stored_cell(
            id,
            "getppid",
            Kind::Micro,
            serde_json::json!({}),
            &[("pti", label)],
            &[],
            Metric::new("ns/op", "ns", Direction::Lower),
            &around_in(v, id),
        )
    };
    let r = Report::of_run(run_data(vec![mk(1, 200.0, "on"), mk(2, 100.0, "off")]));
    let l = Layout {
        table: TableKind::Improvement,
        baseline: parse_assign("pti=on").unwrap(),
        ..Layout::default()
    };
    let d = doc(r.clone(), &l);
    let Some(Value::Change { pct, lo, hi, .. }) = &d.tables[0].rows[0].cells[0] else {
        panic!("a change")
    };
    // Twice as fast: the time halved, a +50% improvement (better is
    // positive, as the seeds print it and the legend says).
    assert!((pct - 50.0).abs() < 0.5, "{pct}");
    assert!(lo.unwrap() < *pct && *pct < hi.unwrap());
    assert!(hi.unwrap() < 100.0);
    assert!(
        d.tables[0].legend[0]
            .contains("(baseline - new)/baseline (lower is better: positive = better)"),
        "{:?}",
        d.tables[0].legend
    );
    // The change layout: new/baseline - 1, -50%.
    let d = doc(
        r,
        &Layout {
            table: TableKind::Change,
            ..l
        },
    );
    let Some(Value::Change { pct, lo, hi, .. }) = &d.tables[0].rows[0].cells[0] else {
        panic!("a change")
    };
    assert!((pct + 50.0).abs() < 0.5, "{pct}");
    assert!(lo.unwrap() < *pct && *pct < hi.unwrap() && lo.unwrap() > -100.0);
    assert!(
        d.tables[0].legend[0].contains("new/baseline - 1 (lower is better: negative = better)"),
        "{:?}",
        d.tables[0].legend
    );
}

/// The LLVM JCC-erratum report: programs x (sw x mcu), compile and exec times.
fn jcc() -> crate::store::RunData {
    let mut cells = Vec::new();
    let mut id = 0;
    // The plan's metric order: the exec benchmark also measures the
    // binary's size, after its time.
    for (bench, metric, unit, base, costs) in [
        ("compile", "compile_time", "s", 0.276, [1.021, 1.0, 1.021]),
        ("exec", "exec_time", "s", 2.86, [0.995, 1.017, 1.005]),
        ("exec", "code_size", "B", 3868.0, [1.005, 1.0, 1.005]),
    ] {
        for (k, prog) in ["sieve", "bsearch", "crc32", "collatz"].iter().enumerate() {
            for (sw, mcu, cost) in [
                ("baseline", "baseline", 1.0),
                ("sw_prefix", "baseline", costs[0]),
                ("baseline", "hw", costs[1]),
                ("sw_prefix", "hw", costs[2]),
            ] {
                id += 1;
                let v = base * (1.0 + k as f64 * 0.3) * cost;
                cells.push(stored_cell(
                    id,
                    bench,
                    Kind::Command,
                    serde_json::json!({"prog": prog}),
                    &[("sw", sw), ("mcu", mcu)],
                    &["prog"],
                    Metric::new(metric, unit, Direction::Lower),
                    &around_in(v, id),
                ));
            }
        }
    }
    run_data(cells)
}

#[test]
fn ratio_is_the_llvm_jcc_erratum_threads_table_with_a_geomean_row() {
    let l = Layout {
        table: TableKind::Ratio,
        cols: vec!["sw".into(), "mcu".into()],
        ..Layout::default()
    };
    let d = doc(Report::of_run(jcc()), &l);
    // A table per metric, then the summary: values, then normalised.
    assert_eq!(d.tables.len(), 5);
    let t = &d.tables[0];
    assert_eq!(t.cols[0].label, "baseline,baseline");
    assert!(
        t.legend[0].starts_with("normalised to baseline,baseline ("),
        "{:?}",
        t.legend
    );
    assert_eq!(t.summary[0].labels, ["geomean"]);
    let Some(Value::Ratio { ratio, lo, hi, .. }) = &t.summary[0].cells[1] else {
        panic!("a ratio")
    };
    assert!((ratio - 1.021).abs() < 1e-3, "{ratio}");
    assert!(lo.unwrap() <= *ratio && *ratio <= hi.unwrap());
    // In the plan's metric order, raw values first.
    let raw = &d.tables[3];
    let names: Vec<&str> = raw.rows.iter().map(|r| r.labels[0].as_str()).collect();
    assert_eq!(names, ["compile_time", "exec_time", "code_size"]);
    assert!(raw.legend[0].ends_with("(compile_time in s, exec_time in s, code_size in B)"));
    let Some(Value::Mean { mean, .. }) = &raw.rows[2].cells[1] else {
        panic!("a mean")
    };
    // The programs' sizes grow by 0.3 a step: their geomean, times 1.005.
    let gm = (0..4)
        .map(|k| 1.0 + k as f64 * 0.3)
        .product::<f64>()
        .powf(0.25);
    assert!((mean / (3868.0 * gm * 1.005) - 1.0).abs() < 2e-3, "{mean}");
    let s = &d.tables[4];
    assert_eq!(s.rows[1].labels, ["exec_time"]);
    let txt = text(&d);
    assert_fits(&txt);
    assert!(txt.contains("System configuration"));
    insta::assert_snapshot!("ratio_text", txt);
    insta::assert_snapshot!("ratio_markdown", md(&d));
}

/// The FreeBSD PTI/PCID report: getppid and a build under pti x pcid, on two revisions (a
/// factor that sets `env.REV`); getppid's pti=on rows cross into
/// microseconds on the second.
fn mitigation() -> crate::store::RunData {
    let mut cells = Vec::new();
    let mut id = 0;
    for (rev, k) in [("11.1", 1.0), ("stable-11", 3.0)] {
        for (pti, pcid, ns, real) in [
            ("off", "off", 165.9, 1427.4),
            ("off", "on", 166.0, 1423.4),
            ("on", "off", 432.0, 1435.2),
            ("on", "on", 366.0, 1418.5),
        ] {
            let ns = if pti == "on" { ns * k } else { ns };
            let f = [("revision", rev), ("pti", pti), ("pcid", pcid)];
            id += 1;
            cells.push(stored_cell(
                id,
                "getppid",
                Kind::Micro,
                serde_json::json!({"cpu": 0, "env.REV": rev}),
                &f,
                &[],
                Metric::new("ns/op", "ns", Direction::Lower),
                &around(ns),
            ));
            for (m, v) in [("real", real), ("user", real * 28.6), ("sys", real * 2.1)] {
                id += 1;
                let mut c = stored_cell(
                    id,
                    "buildworld",
                    Kind::Command,
                    serde_json::json!({"env.REV": rev}),
                    &f,
                    &[],
                    Metric::new(m, "s", Direction::Lower),
                    &around(v),
                );
                c.0.info.key = format!("buildworld#{rev}{pti}{pcid}");
                cells.push(c);
            }
        }
    }
    run_data(cells)
}

#[test]
fn matrix_is_the_pti_pcid_reports_table_with_difference_blocks() {
    let l = Layout {
        table: TableKind::Matrix,
        rows: vec!["pti".into(), "pcid".into()],
        // The example plan's pair: pcid on, pti off against on.
        pairs: vec![(
            parse_assign("pti=off,pcid=on").unwrap(),
            parse_assign("pti=on,pcid=on").unwrap(),
        )],
        ..Layout::default()
    };
    let d = doc(Report::of_run(mitigation()), &l);
    // Revision, then benchmark.
    let order: Vec<(&str, Option<&str>)> = d
        .tables
        .iter()
        .map(|t| (t.bench.as_str(), table::section_value(t, "revision")))
        .collect();
    assert_eq!(
        order,
        [
            ("getppid", Some("11.1")),
            ("buildworld", Some("11.1")),
            ("getppid", Some("stable-11")),
            ("buildworld", Some("stable-11")),
        ]
    );
    assert_eq!(d.tables[0].row_dims, ["pti", "pcid"]);
    let b = &d.tables[1];
    let metrics: Vec<&str> = b.cols.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(metrics, ["real", "user", "sys"]);
    assert_eq!(b.diffs.len(), 3);
    // One unit per column: 166 ns and 1.3 us in the same column are both
    // in ns.
    assert_eq!(d.tables[2].cols[0].shown_unit.as_deref(), Some("ns"));
    let txt = text(&d);
    assert_fits(&txt);
    assert!(txt.contains("Difference at 95.0% confidence"), "{txt}");
    assert!(txt.contains("on   off     1296 +/-0.3%"), "{txt}");
    assert!(!txt.contains(" us "), "{txt}");
    // Each revision once, as its section's heading.
    assert_eq!(txt.matches("11.1").count(), 1, "{txt}");
    assert!(!txt.contains("env.REV"), "{txt}");
    // Every difference block says its unit.
    assert_eq!(txt.matches("real (s): pti=off").count(), 2, "{txt}");
    assert_eq!(txt.matches("ns/op (ns): pti=off").count(), 2, "{txt}");
    // The hardware in its first section, referred to after.
    assert_eq!(txt.matches("System configuration (lab1):\n").count(), 1);
    assert_eq!(
        txt.matches("System configuration (lab1): as above").count(),
        3
    );
    insta::assert_snapshot!("matrix_text", txt);
    insta::assert_snapshot!("matrix_markdown", md(&d));
}

fn scale_run() -> crate::store::RunData {
    let mut cells = Vec::new();
    let mut id = 0;
    for mode in ["processes", "threads"] {
        for tasks in [1u32, 2, 4, 8] {
            id += 1;
            let eff: f64 = if mode == "threads" && tasks >= 4 {
                0.6
            } else {
                0.98
            };
            let per = 2.5e7 * eff.powf((tasks as f64).log2());
            cells.push(stored_cell(
                id,
                "getppid1",
                Kind::Scale,
                serde_json::json!({"tasks": tasks, "mode": mode}),
                &[("mode", mode)],
                &["tasks"],
                Metric::new("ops/s", "ops/s", Direction::Higher),
                &around(per * tasks as f64),
            ));
        }
    }
    run_data(cells)
}

#[test]
fn scaling_tables_show_efficiency_and_the_flattening_point() {
    let l = Layout {
        table: TableKind::Scaling,
        ..Layout::default()
    };
    let d = doc(Report::of_run(scale_run()), &l);
    assert_eq!(d.scaling.len(), 1);
    let th = &d.scaling[0].series[1];
    assert_eq!(th.flattens_at, Some(4));
    let txt = text(&d);
    assert_fits(&txt);
    insta::assert_snapshot!("scaling_text", txt);
    insta::assert_snapshot!("scaling_markdown", md(&d));
}

#[test]
fn wide_tables_split_into_panels_within_80_columns() {
    // Six long-named variants: they cannot share one line.
    let mut cells = Vec::new();
    for i in 0..7 {
        let label = format!("variant-with-a-long-name-{i}");
        cells.push(stored_cell(
            i + 1,
            "getppid",
            Kind::Micro,
            serde_json::json!({}),
            &[("v", &label)],
            &[],
            Metric::new("ns/op", "ns", Direction::Lower),
            &around(100.0 + i as f64),
        ));
    }
    let l = Layout {
        table: TableKind::Improvement,
        baseline: parse_assign("v=variant-with-a-long-name-0").unwrap(),
        ..Layout::default()
    };
    let d = doc(Report::of_run(run_data(cells)), &l);
    let txt = text(&d);
    assert_fits(&txt);
    for i in 1..7 {
        assert!(txt.contains(&format!("variant-with-a-long-name-{i}")));
    }
}

#[test]
fn labels_are_escaped_in_markdown() {
    let d = doc(
        Report::of_run(pipes("<script>alert(1)</script>")),
        &improvement_layout(),
    );
    let m = md(&d);
    assert!(!m.contains("<script>"), "{m}");
    assert!(m.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{m}");
}

#[test]
fn the_json_model_holds_numbers() {
    let d = doc(Report::of_run(pipes("UP")), &improvement_layout());
    let v = crate::report::render::Render::json(&d).unwrap();
    let c = &v["tables"][0]["rows"][0]["cells"][0];
    assert_eq!(c["type"], "change");
    assert!(c["pct"].as_f64().unwrap() > 29.0);
    assert!(c["p"].as_f64().unwrap() < 0.05);
    assert_eq!(v["kind"], "tables");
    assert_eq!(v["layout"], "improvement");
}

#[test]
fn csv_has_one_tidy_row_per_sample() {
    let d = pipes("U,P \"x\"");
    let n: usize = d.cells.iter().map(|(_, s)| s.len()).sum();
    let t = crate::report::samples::build(&d.cells, std::slice::from_ref(&d.run));
    let csv = render(&Document::Samples(&t), Format::Csv).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), n + 1);
    insta::assert_snapshot!("csv_header", lines[0]);
    // Sizes as the user writes them; a label with a comma and quotes is
    // one quoted field.
    assert!(
        lines.iter().any(|l| l.contains(",\"U,P \"\"x\"\"\",2k,")),
        "{}",
        lines[9]
    );
    // Values read back exactly.
    let last: f64 = lines[1].rsplit(',').next().unwrap().parse().unwrap();
    assert_eq!(last, d.cells[0].1[0].value);
    // Other documents have no CSV form.
    let e = render(&Document::Runs(&[]), Format::Csv).unwrap_err();
    assert!(
        e.to_string()
            .contains("--format csv is for `kbench report`")
    );
}

#[test]
fn html_is_one_self_contained_page_with_charts_and_escaped_labels() {
    let d = doc(
        Report::of_run(pipes("<script>alert(1)</script>")),
        &improvement_layout(),
    );
    let h = render(&Document::Tables(&d), Format::Html).unwrap();
    assert!(h.starts_with("<!DOCTYPE html>"));
    assert!(
        !h.contains("<script"),
        "no script, and the label is escaped"
    );
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // Nothing fetched: no URL but the SVG namespace, a CSP forbidding the rest.
    let bare = h.replace("http://www.w3.org/2000/svg", "");
    assert!(!bare.contains("http://") && !bare.contains("https://") && !bare.contains("src="));
    assert!(h.contains("default-src 'none'"));
    // A chart with bars and interval whiskers, the table, the system block,
    // the methods.
    assert_eq!(h.matches("<svg").count(), 2, "bars, then the sweep");
    assert!(h.matches("<rect").count() >= 12, "a bar per cell");
    // The sweep: x = T.S on a log scale (2k..64k spans a decade), a line
    // per group and variant, from the first chunk at the left edge to the
    // last at the right.
    let sweep = &h[h.find("class=\"chart sweep\"").expect("a sweep chart")..];
    let sweep = &sweep[..sweep.find("</svg>").unwrap()];
    assert!(sweep.contains(">T.S (log scale)</text>"), "{sweep}");
    assert_eq!(sweep.matches("stroke-width=\"2\"").count(), 6, "{sweep}");
    assert!(
        sweep.contains("<path d=\"M70.0 "),
        "first point at the left"
    );
    assert!(
        sweep.contains("L880.0 "),
        "last point at the right: {sweep}"
    );
    assert!(sweep.contains("&lt;script&gt;alert(1)&lt;/script&gt;: ZC"));
    assert!(
        h.matches("<path class=\"whisker\"").count() >= 12,
        "a whisker per cell"
    );
    assert!(h.contains("<td class=\"sig\">"));
    assert!(h.contains("System configuration (lab1)"));
    assert!(h.contains("<h2>Methods</h2>"));
    // Scaling curves with the ideal line.
    let l = Layout {
        table: TableKind::Scaling,
        ..Layout::default()
    };
    let s = render(
        &Document::Tables(&doc(Report::of_run(scale_run()), &l)),
        Format::Html,
    )
    .unwrap();
    assert!(s.contains("<title>ideal (processes)</title>"));
    assert_eq!(s.matches("class=\"curve\"").count(), 2, "a curve per mode");
}

/// The y tick labels of each chart of a page, chart by chart.
pub(crate) fn chart_ticks(page: &str) -> Vec<Vec<String>> {
    let re = regex::Regex::new(r#"<text class="ytick"[^>]*>([^<]*)</text>"#).unwrap();
    page.split("<svg")
        .skip(1)
        .map(|svg| {
            re.captures_iter(svg)
                .map(|c| c[1].replace("&#39;", "'"))
                .collect()
        })
        .collect()
}

#[test]
fn every_chart_kind_has_round_ticks_through_its_reference() {
    use crate::report::fmt::axis::tests::assert_round;
    let html = |d: &TableDoc| render(&Document::Tables(d), Format::Html).unwrap();
    // Improvement: bars and the sweep, both through 0%.
    let page = html(&doc(Report::of_run(pipes("UP")), &improvement_layout()));
    let charts = chart_ticks(&page);
    assert_eq!(charts.len(), 2, "{page}");
    for t in &charts {
        assert_round(t, Some(0.0));
    }
    // Ratio: through 1.
    let ratio = Layout {
        table: TableKind::Ratio,
        ..improvement_layout()
    };
    let page = html(&doc(Report::of_run(pipes("UP")), &ratio));
    let charts = chart_ticks(&page);
    assert!(!charts.is_empty(), "{page}");
    for t in &charts {
        assert_round(t, Some(1.0));
    }
    // Matrix and scaling: round, scaling from zero.
    let matrix = Layout {
        table: TableKind::Matrix,
        ..Layout::default()
    };
    // A matrix's charts are each in its metric's unit, from 0.
    let page = html(&doc(Report::of_run(mitigation()), &matrix));
    let charts = chart_ticks(&page);
    assert!(!charts.is_empty(), "{page}");
    for t in &charts {
        assert_round(t, Some(0.0));
        // Every tick carries the metric's unit (`500 ns`, `1500 s`).
        assert!(
            t.iter()
                .all(|l| l.split_once(' ').is_some_and(|(_, u)| !u.is_empty())),
            "{t:?}"
        );
    }
    let scaling = Layout {
        table: TableKind::Scaling,
        ..Layout::default()
    };
    let page = html(&doc(Report::of_run(scale_run()), &scaling));
    let charts = chart_ticks(&page);
    assert_eq!(charts.len(), 1, "{page}");
    assert_round(&charts[0], Some(0.0));
}

#[test]
fn groups_rows_and_columns_follow_the_plans_value_order() {
    // The cells come 2way first; the plan lists UP first.
    let mut l = improvement_layout();
    l.order = [
        (
            "cpus".to_string(),
            vec!["UP".to_string(), "2way".to_string()],
        ),
        (
            "zero_copy".to_string(),
            vec!["copy".to_string(), "zc".to_string()],
        ),
    ]
    .into_iter()
    .collect();
    let d = doc(Report::of_run(pipes("UP")), &l);
    assert_eq!(d.tables[0].groups, ["UP", "2way"]);
    // Without an order, first seen (never alphabetical: `2way` < `UP`
    // would hide which one the plan meant).
    let d = doc(Report::of_run(pipes("UP")), &improvement_layout());
    assert_eq!(d.tables[0].groups, ["2way", "UP"]);
}

#[test]
fn a_pair_with_an_unmeasured_side_says_so() {
    let mut run = mitigation();
    run.cells.retain(|(c, _)| c.info.factors["pti"] == "off");
    let l = Layout {
        table: TableKind::Matrix,
        pairs: vec![(
            parse_assign("pti=off,pcid=on").unwrap(),
            parse_assign("pti=on,pcid=on").unwrap(),
        )],
        ..Layout::default()
    };
    let d = doc(Report::of_run(run), &l);
    assert!(d.tables[0].diffs.is_empty());
    assert!(
        d.tables[0].legend.contains(
            &"pti=off,pcid=on vs pti=on,pcid=on: no difference block, pti=on,pcid=on not measured here"
                .to_string()
        ),
        "{:?}",
        d.tables[0].legend
    );
    assert_fits(&text(&d));
}

#[test]
fn an_imported_machine_is_unknown_not_zero() {
    let s = table::SystemBlock {
        host: "imported".into(),
        os: "imported from hyperfine".into(),
        kernel: "unknown".into(),
        memory_bytes: 0,
        sockets: 0,
        cores: 0,
        threads: 0,
        smt: None,
        cpu_model: None,
        microcode: Vec::new(),
        first: 0.0,
        last: 0.0,
        warnings: Vec::new(),
        imported: true,
    };
    let rows = s.rows();
    let get = |k: &str| rows.iter().find(|(n, _)| *n == k).unwrap().1.clone();
    assert_eq!(get("Memory"), "unknown (imported)");
    assert_eq!(get("CPUs"), "unknown (imported)");
    assert_eq!(get("Noise"), "unknown (imported)");
    assert!(!rows.iter().any(|(_, v)| v.contains("0.0 GiB")));
}
