//! Comparisons of given values (fake benchmarks, in-memory store).

use super::{Test, compare};
use crate::bench::fake::Fake;
use crate::report::{Document, Format, render};
use crate::select;
use crate::stats::equivalence::Verdict;
use crate::store::memory::MemoryStore;
use crate::testing::{self, bench, bps, ns, options, plan};

/// Values that wobble by +/-1% around `base`.
fn wobble(base: f64, i: u32) -> f64 {
    base * [0.99, 1.0, 1.01, 1.005, 0.995][i as usize % 5]
}

/// One run: getppid (ns/op) and pipe-bw (B/s), variant 2 of each 10%
/// better than variant 1.
fn store() -> MemoryStore {
    let mut st = MemoryStore::new();
    let p = plan(
        "cmp",
        vec![
            bench(
                Fake::new("getppid", ns(), |v, i| {
                    wobble(if v == 1 { 200.0 } else { 180.0 }, i)
                }),
                &[1, 2],
            ),
            bench(
                Fake::new("pipe-bw", bps(), |v, i| {
                    wobble(if v == 1 { 1e9 } else { 1.1e9 }, i)
                }),
                &[1, 2],
            ),
        ],
    );
    testing::run(&mut st, &p, &options(5, 0), None);
    st
}

fn selections(st: &MemoryStore, specs: &[&str]) -> Vec<super::Selection> {
    specs
        .iter()
        .map(|s| {
            let op = select::resolve(st, s).unwrap();
            super::Selection {
                name: s.to_string(),
                fixed: op.filters.iter().map(|(k, _)| k.clone()).collect(),
                cells: select::narrow(&op, crate::store::StoreRead::cells(st, op.scope).unwrap())
                    .unwrap(),
                runs: Default::default(),
            }
        })
        .collect()
}

#[test]
fn the_geomean_is_per_unit_and_a_gain_is_positive_in_both_directions() {
    let st = store();
    let sels = selections(&st, &["1:variant=1", "1:variant=2"]);
    let c = compare(&sels, Test::STUDENT, 95.0, 0.01).unwrap();
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.geomean.len(), 2, "one per unit: {:?}", c.geomean);
    for g in &c.geomean {
        assert_eq!(g.k, 1);
        // One convention: change = new/baseline - 1. 180 ns against 200
        // is -10%, better; 1.1 GB/s against 1 GB/s +10%, better.
        let want = if g.direction == crate::record::Direction::Lower {
            -0.10
        } else {
            0.10
        };
        assert!(
            (g.change - want).abs() < 1e-9,
            "{} {:?}: {}",
            g.unit,
            g.direction,
            g.change
        );
    }
    let text = render(&Document::Compare(&c), Format::Text).unwrap();
    // One spelling of each change: words, then the signed interval.
    assert!(text.contains("10.0% faster [-10.0%, -10.0%]"), "{text}");
    assert!(
        text.contains("10.0% more bytes/s [+10.0%, +10.0%]"),
        "{text}"
    );
    assert!(
        !text.contains("worse") && !text.contains("better ("),
        "{text}"
    );
    // The verdict: the first unit's one row, in words, at the end.
    assert_eq!(c.verdicts.len(), 1);
    assert!(
        text.ends_with("1:variant=2 is 10.0% faster than 1:variant=1 [-10.0%, -10.0%]\n"),
        "{text}"
    );
    insta::assert_snapshot!("compare_student", text);
}

#[test]
fn one_value_against_two_is_too_few_for_any_test() {
    let mut st = MemoryStore::new();
    let p = plan(
        "few",
        vec![bench(
            Fake::new("a", ns(), |v, i| 100.0 * v as f64 + i as f64),
            &[1, 2],
        )],
    );
    testing::run(&mut st, &p, &options(2, 0), None);
    // Run 2 has a single sample per cell.
    testing::run(&mut st, &p, &options(1, 0), None);
    for test in [
        Test::STUDENT,
        Test::WELCH,
        Test::by_name("mwu").unwrap(),
        Test::by_name("bootstrap").unwrap(),
    ] {
        let sels = selections(&st, &["2:variant=1", "1:variant=2"]);
        let c = compare(&sels, test, 95.0, 0.01).unwrap();
        let v = &c.rows[0].versus[0];
        assert_eq!((v.n1, v.n2), (1, 2));
        assert_eq!(v.verdict, Verdict::TooFew, "{test:?}");
        assert!(!v.significant, "{test:?}");
    }
}

/// Cells of a command benchmark whose factor `work` sets `env.WORK`, on
/// two CPU sets: operands name either the factor or the parameter.
fn env_factor_selections(fix: &str) -> Vec<super::Selection> {
    use crate::record::Kind;
    let mut id = 0;
    let mut sel = |work: &str, base: f64| {
        let cells = ["cpu0", "cpu1"]
            .iter()
            .map(|cpus| {
                id += 1;
                let vals: Vec<f64> = (0..5).map(|i| wobble(base, i)).collect();
                testing::stored_cell(
                    id,
                    "work",
                    Kind::Command,
                    serde_json::json!({"env.WORK": work, "timeout": 60}),
                    &[("cpus", cpus), ("work", work)],
                    &[],
                    ns(),
                    &vals,
                )
            })
            .collect();
        super::Selection {
            name: format!("w:{fix}={work}"),
            fixed: vec![fix.to_string()],
            cells,
            runs: Default::default(),
        }
    };
    vec![sel("1000", 100.0), sel("1050", 105.0)]
}

#[test]
fn a_parameter_an_env_factor_sets_takes_no_part_in_pairing() {
    for fix in ["work", "env.WORK"] {
        let c = compare(&env_factor_selections(fix), Test::WELCH, 95.0, 0.01)
            .unwrap_or_else(|e| panic!("{fix}: {e:#}"));
        let cells: Vec<&str> = c.rows.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(
            cells,
            ["cpus=cpu0,timeout=60", "cpus=cpu1,timeout=60"],
            "{fix}"
        );
        assert!(c.unpaired.is_empty(), "{fix}: {:?}", c.unpaired);
        assert!(
            c.rows.iter().all(|r| r.versus[0].change.unwrap() > 0.04),
            "{fix}"
        );
    }
}

/// 40 benchmarks whose two variants are the same normal noise (A/A),
/// seeded per benchmark, variant and sample.
fn aa_store(cells: usize, samples: u32, seed: u64) -> MemoryStore {
    let mut st = MemoryStore::new();
    let benches = (0..cells)
        .map(|k| {
            let name = format!("aa{k:02}");
            bench(
                Fake::new(&name, ns(), move |v, i| {
                    let s = seed ^ ((k as u64) << 32) ^ ((v as u64) << 24) ^ u64::from(i);
                    100.0 + crate::stats::sim::rng(s).std_normal()
                }),
                &[1, 2],
            )
        })
        .collect();
    testing::run(&mut st, &plan("aa", benches), &options(samples, 0), None);
    st
}

/// Welch at 95% and a 1% threshold, adjusted across the family by `adjust`.
fn welch_adjusted(
    sels: &[super::Selection],
    adjust: crate::stats::multiple::Adjust,
) -> super::Comparison {
    super::compare_adjusted(sels, Test::WELCH, 95.0, 0.01, adjust).unwrap()
}

#[test]
fn a_compare_of_40_aa_cells_adjusts_across_the_family() {
    let st = aa_store(40, 8, 1);
    let sels = selections(&st, &["1:variant=1", "1:variant=2"]);
    let c = welch_adjusted(&sels, crate::stats::multiple::Adjust::Holm);
    assert_eq!((c.rows.len(), c.family), (40, 40));
    let vs: Vec<_> = c.rows.iter().map(|r| &r.versus[0]).collect();
    // Holm's smallest adjusted p is 40 times the smallest p.
    let min_p = vs.iter().map(|v| v.p.unwrap()).fold(1.0, f64::min);
    let min_adj = vs.iter().map(|v| v.p_adjusted.unwrap()).fold(1.0, f64::min);
    assert!((min_adj - (40.0 * min_p).min(1.0)).abs() < 1e-12);
    for v in &vs {
        assert_eq!(v.significant, v.p_adjusted.unwrap() < 0.05);
        // Every result that shows no difference says what it could have
        // seen, at the level a lone change must pass (0.05 / 40).
        let pw = v.power.expect("a power statement");
        assert!(pw.detectable > 0.005 && pw.detectable < 0.05, "{pw:?}");
        assert!(pw.need.unwrap() > 8);
    }
    let text = render(&Document::Compare(&c), Format::Text).unwrap();
    assert!(text.contains("over a family of 40 tests"), "{text}");
    assert!(text.contains("could detect"), "{text}");
    let json = render(&Document::Compare(&c), Format::Json).unwrap();
    assert!(
        json.contains("\"p_adjusted\"") && json.contains("\"family\": 40"),
        "{json}"
    );
}

#[test]
fn aa_compares_flag_a_family_at_most_5_percent_of_the_time_with_holm() {
    // 40 families of 40 A/A cells: before adjustment most families flag
    // a cell (1 - 0.95^40 = 87%); after Holm's, few.
    let (mut raw, mut holm) = (0, 0);
    for seed in 0..40 {
        let st = aa_store(40, 6, 1000 + seed);
        let sels = selections(&st, &["1:variant=1", "1:variant=2"]);
        let c = compare(&sels, Test::WELCH, 95.0, 0.01).unwrap();
        let vs = c.rows.iter().map(|r| &r.versus[0]);
        raw += usize::from(vs.clone().any(|v| v.p.unwrap() < 0.05));
        holm += usize::from(vs.clone().any(|v| v.significant));
    }
    eprintln!("40 families of 40 A/A cells: raw {raw}, Holm {holm} flagged");
    assert!(raw >= 25, "raw {raw}");
    assert!(holm <= 2, "Holm {holm}");
}

#[test]
fn fdr_adjusts_by_benjamini_hochberg_and_a_lone_test_keeps_its_p() {
    let st = store();
    let sels = selections(&st, &["1:variant=1", "1:variant=2"]);
    let c = welch_adjusted(&sels, crate::stats::multiple::Adjust::BenjaminiHochberg);
    let p: Vec<_> = c.rows.iter().map(|r| r.versus[0].p).collect();
    let want =
        crate::stats::multiple::adjust(&p, crate::stats::multiple::Adjust::BenjaminiHochberg);
    let got: Vec<_> = c.rows.iter().map(|r| r.versus[0].p_adjusted).collect();
    assert_eq!(got, want);
    // Real 10% changes stay significant, and say nothing of power.
    assert!(
        c.rows
            .iter()
            .all(|r| r.versus[0].significant && r.versus[0].power.is_none())
    );
    let one = selections(&st, &["1:variant=1", "1:variant=2"])
        .into_iter()
        .map(|mut s| {
            s.cells.retain(|(c, _)| c.info.bench == "getppid");
            s
        })
        .collect::<Vec<_>>();
    let c = compare(&one, Test::WELCH, 95.0, 0.01).unwrap();
    assert_eq!(c.family, 1);
    assert_eq!(c.rows[0].versus[0].p_adjusted, c.rows[0].versus[0].p);
}

// --- the design behind a comparison ----------------------------------------

/// Two runs of the same `cells` benchmarks (A/A): the second run's values
/// are all `shift` higher (a load that came and went between the runs),
/// each value noisy by about 1%.
fn aa_runs(cells: usize, samples: u32, shift: f64) -> MemoryStore {
    let mut st = MemoryStore::new();
    for (run, level) in [(0u64, 1.0), (1, 1.0 + shift)] {
        let benches = (0..cells)
            .map(|k| {
                let name = format!("aa{k:02}");
                bench(
                    Fake::new(&name, ns(), move |_, i| {
                        let s = (run << 40) ^ ((k as u64) << 32) ^ u64::from(i);
                        100.0 * level * (1.0 + 0.01 * crate::stats::sim::rng(s).std_normal())
                    }),
                    &[1],
                )
            })
            .collect();
        testing::run(&mut st, &plan("aa", benches), &options(samples, 0), None);
    }
    st
}

/// Every `~` of a summary sits beside an interval that holds 0.
fn assert_tilde_intervals_hold_zero(text: &str) {
    let re = regex::Regex::new(r" ~ +\[([-+0-9.]+)%, ([-+0-9.]+)%\]").unwrap();
    for l in text.lines() {
        if let Some(c) = re.captures(l) {
            let (lo, hi): (f64, f64) = (c[1].parse().unwrap(), c[2].parse().unwrap());
            assert!(
                lo <= 0.0 && 0.0 <= hi,
                "`~` beside an interval without 0: {l}"
            );
        }
    }
}

#[test]
fn runs_of_identical_code_are_not_judged_on_one_run_a_side() {
    // Found: two A/A runs of 40 identical cells compared as if the run
    // did not matter: most cells "significant", a tight geomean of a
    // change that is only the runs' difference.
    let st = aa_runs(40, 8, 0.15);
    let sels = selections(&st, &["1", "2"]);
    for test in [Test::STUDENT, Test::WELCH, Test::by_name("mwu").unwrap()] {
        let c = compare(&sels, test, 95.0, 0.01).unwrap();
        assert_eq!(c.rows.len(), 40);
        let flagged = c.rows.iter().filter(|r| r.versus[0].significant).count();
        assert_eq!(flagged, 0, "{test:?}: {flagged} of 40 A/A cells flagged");
        for g in &c.geomean {
            if let Some([lo, hi]) = g.interval {
                assert!(lo <= 1.0 && 1.0 <= hi, "{test:?}: geomean {g:?}");
            }
        }
        let text = render(&Document::Compare(&c), Format::Text).unwrap();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("run-to-run variation is not measured"),
            "{text}"
        );
        assert!(flat.contains("`kbench run --repeat N`"), "{text}");
        assert_tilde_intervals_hold_zero(&text);
    }
}

#[test]
fn a_geomean_is_never_narrower_than_its_cells_warrant() {
    // Found: a geomean interval from the cells' ratios alone: cells that
    // agree give a tight interval even when every one of them is noise.
    // Eight cells, each the same six values a side in scrambled pairs:
    // every cell's ratio is the same, every cell's interval is wide.
    use crate::record::Kind;
    let a = [90.0, 110.0, 95.0, 105.0, 100.0, 102.0];
    let b = [110.0, 92.0, 104.0, 96.0, 103.0, 99.0];
    let cells = |variant: &str, v: &[f64], base: i64| -> Vec<crate::store::StoredCell> {
        (0..8)
            .map(|k| {
                testing::stored_cell(
                    base + k,
                    &format!("b{k}"),
                    Kind::Micro,
                    serde_json::json!({}),
                    &[("variant", variant)],
                    &[],
                    ns(),
                    v,
                )
            })
            .collect()
    };
    let sel = |name: &str, c| super::Selection {
        name: name.into(),
        fixed: vec!["variant".into()],
        cells: c,
        runs: Default::default(),
    };
    let sels = vec![
        sel("x:variant=a", cells("a", &a, 0)),
        sel("x:variant=b", cells("b", &b, 100)),
    ];
    let c = compare(&sels, Test::WELCH, 95.0, 0.01).unwrap();
    assert!(c.rows.iter().all(|r| !r.versus[0].significant));
    let g = &c.geomean[0];
    let [lo, hi] = g.interval.expect("an interval over 8 cells");
    // One cell's own 95% interval spans about +/-9%; eight cells that
    // agree cannot know the mean better than that over sqrt(8).
    assert!(
        hi / lo > 1.05,
        "geomean interval [{lo}, {hi}] is narrower than its cells"
    );
}

#[test]
fn marks_and_intervals_agree_in_an_adjusted_family() {
    // Found: `~ [+19.6%, +109%]`: the interval unadjusted, the mark after
    // Holm. Ten cells in one run, one of them moved by about 3 noise sd.
    use crate::record::Kind;
    let mut g = crate::stats::sim::rng(7);
    let mut mk = |k: i64, variant: &str, shift: f64| {
        let v: Vec<f64> = (0..6)
            .map(|_| 100.0 * (1.0 + shift) * (1.0 + 0.02 * g.std_normal()))
            .collect();
        testing::stored_cell(
            k,
            &format!("c{}", k % 100),
            Kind::Micro,
            serde_json::json!({}),
            &[("variant", variant)],
            &[],
            ns(),
            &v,
        )
    };
    let a: Vec<_> = (0..10).map(|k| mk(k, "a", 0.0)).collect();
    let b: Vec<_> = (0..10)
        .map(|k| mk(100 + k, "b", if k == 3 { 0.04 } else { 0.0 }))
        .collect();
    let sel = |name: &str, c| super::Selection {
        name: name.into(),
        fixed: vec!["variant".into()],
        cells: c,
        runs: Default::default(),
    };
    let sels = vec![sel("x:variant=a", a), sel("x:variant=b", b)];
    for test in [
        Test::WELCH,
        Test::STUDENT,
        Test::by_name("bootstrap").unwrap(),
    ] {
        let c = compare(&sels, test, 95.0, 0.01).unwrap();
        for r in &c.rows {
            let v = &r.versus[0];
            if let Some([lo, hi]) = v.interval {
                assert_eq!(
                    v.significant,
                    !(lo <= 0.0 && 0.0 <= hi),
                    "{test:?} {}: mark and interval [{lo}, {hi}] disagree",
                    r.bench
                );
            }
        }
        let text = render(&Document::Compare(&c), Format::Text).unwrap();
        assert_tilde_intervals_hold_zero(&text);
    }
}

#[test]
fn one_sign_convention_and_no_impossible_bound() {
    // Found: compare's geomean said `-311.67% worse, ratio 4.1167` where
    // `report --table improvement` said -75.7%; intervals below -100%.
    // A time 4.1167 times the baseline is +311.67%, worse, 4.12x slower.
    use crate::record::Kind;
    let base = [10.0, 10.2, 9.8, 10.1, 9.9, 10.0];
    let slow: Vec<f64> = base.iter().map(|x| x * 4.1167).collect();
    let mk = |id, variant: &str, v: &[f64]| {
        testing::stored_cell(
            id,
            "t",
            Kind::Command,
            serde_json::json!({}),
            &[("variant", variant)],
            &[],
            ns(),
            v,
        )
    };
    let sel = |name: &str, c| super::Selection {
        name: name.into(),
        fixed: vec!["variant".into()],
        cells: vec![c],
        runs: Default::default(),
    };
    let sels = vec![
        sel("x:variant=a", mk(1, "a", &base)),
        sel("x:variant=b", mk(2, "b", &slow)),
    ];
    let c = compare(&sels, Test::WELCH, 95.0, 0.01).unwrap();
    let text = render(&Document::Compare(&c), Format::Text).unwrap();
    assert!(text.contains("312% slower [+312%, +312%]"), "{text}");
    assert_eq!(c.verdicts[0].outcome, "slower");
    // The change table says the same change.
    let d = crate::report::table::build(
        &[crate::report::Report::of_run(testing::run_data(vec![
            mk(1, "a", &base),
            mk(2, "b", &slow),
        ]))],
        &crate::plan::report::Layout {
            table: crate::plan::report::TableKind::Change,
            baseline: crate::plan::report::parse_assign("variant=a").unwrap(),
            ..Default::default()
        },
        false,
    );
    let t = render(&Document::Tables(&d), Format::Text).unwrap();
    assert!(t.contains("+312*"), "{t}");
    let Some(crate::report::table::Value::Change { pct, .. }) = &d.tables[0].rows[0].cells[0]
    else {
        panic!("a change: {t}")
    };
    assert!((pct - 311.67).abs() < 0.01, "{pct}");
    // A huge spread on three values: no bound below -100% or a ratio of 0.
    let wild = [1.0, 30.0, 2.0];
    let sels = vec![
        sel("x:variant=a", mk(1, "a", &[10.0, 10.5, 9.5])),
        sel("x:variant=b", mk(2, "b", &wild)),
    ];
    for test in [Test::STUDENT, Test::WELCH] {
        let c = compare(&sels, test, 95.0, 0.01).unwrap();
        let [lo, _] = c.rows[0].versus[0].interval.unwrap();
        assert!(lo > -1.0, "{test:?}: interval low end {lo}");
    }
}

#[test]
fn an_all_zero_baseline_gets_words_not_nan() {
    // Found: the `sys` time of a fast command is 0 in every sample:
    // `[NaN%, NaN%]`, `+inf%`, `NaN inf`.
    use crate::record::Kind;
    let mk = |id, variant: &str, v: &[f64]| {
        testing::stored_cell(
            id,
            "fast",
            Kind::Command,
            serde_json::json!({}),
            &[("variant", variant)],
            &[],
            ns(),
            v,
        )
    };
    let sel = |name: &str, c| super::Selection {
        name: name.into(),
        fixed: vec!["variant".into()],
        cells: vec![c],
        runs: Default::default(),
    };
    for b in [[0.0; 6], [0.0, 0.001, 0.0, 0.0, 0.002, 0.0], [0.001; 6]] {
        let sels = vec![
            sel("x:variant=a", mk(1, "a", &[0.0; 6])),
            sel("x:variant=b", mk(2, "b", &b)),
        ];
        for test in [
            Test::STUDENT,
            Test::WELCH,
            Test::by_name("mwu").unwrap(),
            Test::by_name("bootstrap").unwrap(),
        ] {
            let c = compare(&sels, test, 95.0, 0.01).unwrap();
            for f in [Format::Text, Format::Json] {
                let out = render(&Document::Compare(&c), f).unwrap();
                let low = out.to_lowercase();
                assert!(
                    !low.contains("nan") && !low.contains("inf"),
                    "{test:?} {b:?}:\n{out}"
                );
            }
            let text = render(&Document::Compare(&c), Format::Text).unwrap();
            let words = if b[0] == 0.0 && b.iter().all(|x| *x == 0.0) {
                "both sides are 0 in every sample"
            } else {
                "the baseline is 0 in every sample"
            };
            assert!(text.contains(words), "{test:?} {b:?}:\n{text}");
        }
    }
}

#[test]
fn a_command_compares_its_primary_metric_and_each_other_metric_is_its_own_family() {
    // Found: two commands compared six metrics as one family of tests,
    // diluting `real`, which nobody had asked to share its level.
    use crate::bench::{Direction, Metric};
    use crate::record::Kind;
    let cell = |id, variant: &str, scale: f64| {
        let real: Vec<f64> = (0..8).map(|i| scale * (1.0 + i as f64 * 0.01)).collect();
        let user: Vec<f64> = real.iter().map(|x| x / 2.0).collect();
        let f = [("variant", variant)];
        let one = |name, v: &[f64]| {
            let m = Metric::new(name, "s", Direction::Lower);
            let params = serde_json::json!({});
            testing::stored_cell(id, "cmd", Kind::Command, params, &f, &[], m, v)
        };
        let (mut c, mut s) = one("real", &real);
        let (u, us) = one("user", &user);
        c.info.metrics.extend(u.info.metrics);
        s.extend(us);
        (c, s)
    };
    let sels = |which: &super::Metrics| -> Vec<super::Selection> {
        [("a", 1.0), ("b", 1.2)]
            .iter()
            .enumerate()
            .map(|(i, (v, scale))| {
                let mut cells = vec![cell(i as i64 + 1, v, *scale)];
                super::keep_metrics(&mut cells, which).unwrap();
                super::Selection {
                    name: format!("x:variant={v}"),
                    fixed: vec!["variant".into()],
                    cells,
                    runs: Default::default(),
                }
            })
            .collect()
    };
    let c = compare(&sels(&super::Metrics::Primary), Test::WELCH, 95.0, 0.01).unwrap();
    let metrics: Vec<&str> = c.rows.iter().map(|r| r.metric.as_str()).collect();
    assert_eq!(metrics, ["real"]);
    assert_eq!(c.verdicts.len(), 1);
    let c = compare(&sels(&super::Metrics::All), Test::WELCH, 95.0, 0.01).unwrap();
    assert_eq!(c.rows.len(), 2);
    // Each metric alone: a family of one, its interval at 95%.
    for r in &c.rows {
        assert_eq!(r.family, 1, "{}", r.metric);
        assert_eq!(r.versus[0].interval_confidence, Some(95.0), "{}", r.metric);
    }
    let mut cells = vec![cell(1, "a", 1.0)];
    let e = super::keep_metrics(&mut cells, &super::Metrics::Named(vec!["usr".into()]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean `user`"), "{e}");
}
