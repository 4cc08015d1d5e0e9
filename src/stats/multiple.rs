//! p-values adjusted for multiple comparisons across a family of tests.
//!
//! Comparing 40 cells at 5% each flags two of them on average even when
//! nothing changed. Adjusting the family's p-values keeps the error rate of
//! the whole comparison at the nominal level:
//!
//! - [`Adjust::Holm`] (Holm 1979) controls the family-wise error rate (the
//!   chance of any false difference) under any dependence between the
//!   tests, and is uniformly more powerful than Bonferroni.
//! - [`Adjust::BenjaminiHochberg`] (Benjamini & Hochberg 1995) controls the
//!   false discovery rate (the expected share of false differences among
//!   those flagged) for independent or positively dependent tests: more
//!   power when many cells really changed.
//!
//! Both are defined as R's `p.adjust` defines them, so a p-value adjusted
//! here equals R's `p.adjust(p, "holm")` / `p.adjust(p, "BH")`. Missing
//! p-values (`None`, R's `NA`) are not members of the family.

use serde::Serialize;

/// How a family's p-values are adjusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Adjust {
    /// Holm's step-down procedure: family-wise error rate.
    #[default]
    Holm,
    /// Benjamini-Hochberg step-up procedure: false discovery rate.
    BenjaminiHochberg,
}

impl Adjust {
    /// The name as reports print it.
    pub fn label(self) -> &'static str {
        match self {
            Adjust::Holm => "Holm",
            Adjust::BenjaminiHochberg => "Benjamini-Hochberg",
        }
    }

    /// What the adjusted values control.
    pub fn controls(self) -> &'static str {
        match self {
            Adjust::Holm => "family-wise error rate",
            Adjust::BenjaminiHochberg => "false discovery rate",
        }
    }
}

/// The p-values of a family adjusted by `method`, in the input order;
/// `None` stays `None` and does not count in the family's size.
///
/// - Time: O(m log m) for m p-values.
///
/// # Panics
/// If a p-value is NaN.
pub fn adjust(p: &[Option<f64>], method: Adjust) -> Vec<Option<f64>> {
    let mut idx: Vec<usize> = (0..p.len()).filter(|&i| p[i].is_some()).collect();
    let m = idx.len();
    let val = |i: usize| {
        let v = p[i].expect("member");
        assert!(!v.is_nan(), "p-value #{i} is NaN");
        v
    };
    idx.sort_by(|&a, &b| val(a).total_cmp(&val(b)));
    let mut out = vec![None; p.len()];
    let mf = m as f64;
    match method {
        Adjust::Holm => {
            // Rank r (from 0) of the ascending p-values: (m - r) p, made
            // non-decreasing by a running maximum, capped at 1.
            let mut run = 0.0f64;
            for (r, &i) in idx.iter().enumerate() {
                run = run.max(((mf - r as f64) * val(i)).min(1.0));
                out[i] = Some(run);
            }
        }
        Adjust::BenjaminiHochberg => {
            // m p / rank (from 1), made non-increasing from the largest
            // down by a running minimum, capped at 1.
            let mut run = 1.0f64;
            for (r, &i) in idx.iter().enumerate().rev() {
                run = run.min(mf / (r as f64 + 1.0) * val(i));
                out[i] = Some(run);
            }
        }
    }
    out
}

/// The significance level each test's own interval must be taken at for
/// the interval to agree with its adjusted p-value: alpha * p / p_adj
/// (alpha / m when p_adj is 0). A test's interval at level 1 - gamma
/// excludes "no change" exactly when p < gamma, that is when
/// p_adj < alpha. For Bonferroni this is alpha / m, the simultaneous
/// interval; for Holm the level of the step at which the test was decided
/// (Holm 1979), lower where the running maximum raised p_adj. `None`
/// stays `None`; each level is at least 1e-12.
pub fn levels(p: &[Option<f64>], adjusted: &[Option<f64>], alpha: f64) -> Vec<Option<f64>> {
    let m = family_size(p).max(1) as f64;
    p.iter()
        .zip(adjusted)
        .map(|(p, q)| {
            let (p, q) = (p.as_ref()?, q.as_ref()?);
            let g = if *q > 0.0 { alpha * p / q } else { alpha / m };
            Some(g.clamp(1e-12, alpha))
        })
        .collect()
}

/// The number of p-values in a family (those that are not `None`).
pub fn family_size(p: &[Option<f64>]) -> usize {
    p.iter().filter(|x| x.is_some()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{Normal, rng};
    use crate::stats::ttest::TTest;
    use crate::stats::{Confidence, Sample};

    fn close(a: &[Option<f64>], b: &[Option<f64>]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            match (x, y) {
                (Some(x), Some(y)) => assert!((x - y).abs() < 1e-12, "{a:?} != {b:?}"),
                (None, None) => {}
                _ => panic!("{a:?} != {b:?}"),
            }
        }
    }

    fn some(v: &[f64]) -> Vec<Option<f64>> {
        v.iter().copied().map(Some).collect()
    }

    #[test]
    fn holm_matches_p_adjust() {
        // p.adjust(c(0.04, 0.001, 0.03, 0.5, 0.01), "holm") by R's
        // definition pmin(1, cummax((n - i + 1) * p[o]))[ro], worked by
        // hand: ascending 0.001 0.01 0.03 0.04 0.5 times 5 4 3 2 1 =
        // 0.005 0.04 0.09 0.08 0.5, running max 0.005 0.04 0.09 0.09 0.5.
        let p = some(&[0.04, 0.001, 0.03, 0.5, 0.01]);
        close(
            &adjust(&p, Adjust::Holm),
            &some(&[0.09, 0.005, 0.09, 0.5, 0.04]),
        );
        // Capped at 1; NA is not in the family (n = 3, not 4).
        let p = vec![Some(0.3), None, Some(0.6), Some(0.02)];
        close(
            &adjust(&p, Adjust::Holm),
            &[Some(0.6), None, Some(0.6), Some(0.06)],
        );
        assert_eq!(family_size(&p), 3);
    }

    #[test]
    fn levels_make_intervals_agree_with_adjusted_p() {
        let p = some(&[0.04, 0.001, 0.03, 0.5, 0.01]);
        for m in [Adjust::Holm, Adjust::BenjaminiHochberg] {
            let q = adjust(&p, m);
            let g = levels(&p, &q, 0.05);
            for ((p, q), g) in p.iter().zip(&q).zip(&g) {
                let (p, q, g) = (p.unwrap(), q.unwrap(), g.unwrap());
                assert_eq!(p < g, q < 0.05, "{m:?}: p {p} q {q} level {g}");
                assert!(g <= 0.05);
            }
        }
        // Holm: the smallest p is decided at 0.05 / 5.
        let g = levels(&p, &adjust(&p, Adjust::Holm), 0.05);
        assert!((g[1].unwrap() - 0.01).abs() < 1e-15);
        assert_eq!(levels(&[None], &[None], 0.05), vec![None]);
    }

    #[test]
    fn bh_matches_p_adjust() {
        // p.adjust(c(0.04, 0.001, 0.03, 0.5, 0.01), "BH"): R's
        // pmin(1, cummin(n / i * p[o])) from the largest down: 0.5 5/5 =
        // 0.5, 0.04 5/4 = 0.05, 0.03 5/3 = 0.05, 0.01 5/2 = 0.025, 0.001 5.
        let p = some(&[0.04, 0.001, 0.03, 0.5, 0.01]);
        close(
            &adjust(&p, Adjust::BenjaminiHochberg),
            &some(&[0.05, 0.005, 0.05, 0.5, 0.025]),
        );
    }

    #[test]
    fn bh_reproduces_the_1995_paper() {
        // Benjamini & Hochberg (1995), section 4: 15 p-values from a
        // multiple-endpoint trial; at q = 0.05 the procedure rejects the
        // four smallest (Bonferroni-style Holm rejects three).
        let p = some(&[
            0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
            0.5719, 0.6528, 0.7590, 1.0000,
        ]);
        let bh = adjust(&p, Adjust::BenjaminiHochberg);
        assert_eq!(bh.iter().filter(|x| x.unwrap() <= 0.05).count(), 4);
        // 4th: 0.0095 15 / 4 = 0.035625.
        assert!((bh[3].unwrap() - 0.035625).abs() < 1e-12);
        let holm = adjust(&p, Adjust::Holm);
        assert_eq!(holm.iter().filter(|x| x.unwrap() <= 0.05).count(), 3);
    }

    #[test]
    fn adjusted_values_never_fall_below_the_raw_ones() {
        let mut r = rng(3);
        for _ in 0..200 {
            let p: Vec<Option<f64>> = (0..17).map(|_| Some(r.uniform())).collect();
            for m in [Adjust::Holm, Adjust::BenjaminiHochberg] {
                let a = adjust(&p, m);
                for (x, y) in p.iter().zip(&a) {
                    assert!(y.unwrap() >= x.unwrap() && y.unwrap() <= 1.0);
                }
            }
        }
    }

    /// `families` A/A comparisons of `cells` cells (n per side, Welch):
    /// how many families flag at least one cell, raw and Holm-adjusted.
    pub(crate) fn aa_families(families: usize, cells: usize, n: usize) -> (usize, usize) {
        let mut r = rng(14);
        let norm = Normal::new(100.0, 5.0);
        let conf = Confidence::percent(95.0);
        let (mut raw, mut holm) = (0, 0);
        for _ in 0..families {
            let p: Vec<Option<f64>> = (0..cells)
                .map(|_| {
                    let a = Sample::new(&norm.draw(&mut r, n)).unwrap();
                    let b = Sample::new(&norm.draw(&mut r, n)).unwrap();
                    Some(TTest::welch(&a, &b, conf).p)
                })
                .collect();
            raw += usize::from(p.iter().any(|x| x.unwrap() < 0.05));
            let adj = adjust(&p, Adjust::Holm);
            holm += usize::from(adj.iter().any(|x| x.unwrap() < 0.05));
        }
        (raw, holm)
    }

    #[test]
    fn holm_keeps_the_family_wise_error_of_40_aa_cells_at_5_percent() {
        // 500 families of 40 identical cells, 10 samples a side.
        let (raw, holm) = aa_families(500, 40, 10);
        let (raw, holm) = (raw as f64 / 500.0, holm as f64 / 500.0);
        eprintln!("40 A/A cells, 500 families: family-wise error raw {raw}, Holm {holm}");
        // Unadjusted, 1 - 0.95^40 = 87% of families flag something.
        assert!(raw > 0.75, "raw family-wise error {raw}");
        assert!(holm <= 0.05, "Holm family-wise error {holm}");
    }
}
