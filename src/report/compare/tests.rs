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
