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
                boots: Default::default(),
            }
        })
        .collect()
}

#[test]
fn the_geomean_is_per_unit_and_a_gain_is_positive_in_both_directions() {
    let st = store();
    let sels = selections(&st, &["1:variant=1", "1:variant=2"]);
    let c = compare(&sels, Test::Student, 95.0, 0.01).unwrap();
    assert_eq!(c.rows.len(), 2);
    assert_eq!(c.geomean.len(), 2, "one per unit: {:?}", c.geomean);
    for g in &c.geomean {
        assert_eq!(g.k, 1);
        assert!(
            (g.improvement - 0.10).abs() < 1e-9,
            "{} {:?}: {}",
            g.unit,
            g.direction,
            g.improvement
        );
    }
    let text = render(&Document::Compare(&c), Format::Text).unwrap();
    let better = text
        .lines()
        .filter(|l| l.contains("+10.00% better"))
        .count();
    assert_eq!(better, 2, "{text}");
    assert!(!text.contains("worse"), "{text}");
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
    for test in [Test::Student, Test::Welch, Test::Mwu, Test::Bootstrap] {
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
            boots: Default::default(),
        }
    };
    vec![sel("1000", 100.0), sel("1050", 105.0)]
}

#[test]
fn a_parameter_an_env_factor_sets_takes_no_part_in_pairing() {
    for fix in ["work", "env.WORK"] {
        let c = compare(&env_factor_selections(fix), Test::Welch, 95.0, 0.01)
            .unwrap_or_else(|e| panic!("{fix}: {e:#}"));
        let cells: Vec<&str> = c.rows.iter().map(|r| r.cell.as_str()).collect();
        assert_eq!(
            cells,
            ["cpus=cpu0,timeout=60", "cpus=cpu1,timeout=60"],
            "{fix}"
        );
        assert!(c.unpaired.is_empty(), "{fix}: {:?}", c.unpaired);
        assert!(c.rows.iter().all(|r| r.versus[0].delta > 0.04), "{fix}");
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
    super::compare_adjusted(sels, Test::Welch, 95.0, 0.01, adjust).unwrap()
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
        let c = compare(&sels, Test::Welch, 95.0, 0.01).unwrap();
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
    let c = compare(&one, Test::Welch, 95.0, 0.01).unwrap();
    assert_eq!(c.family, 1);
    assert_eq!(c.rows[0].versus[0].p_adjusted, c.rows[0].versus[0].p);
}
