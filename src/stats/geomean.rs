//! Geometric mean of ratios across benchmarks, with an interval on the
//! log scale (what benchstat's geomean row summarises).
//!
//! Ratios multiply, so their natural average is geometric: the mean of
//! ln(r) back-transformed, with exp(mean ± t(1-α/2, k-1) · sd/√k) of the
//! logs as the interval, which assumes the log-ratios are roughly normal.
//! [`of_cells`] treats the cells as the replicates, as a geomean over
//! benchmarks must: its interval comes from the spread of the cells' log
//! ratios, and is never narrower than the cells' own standard errors
//! warrant (eight cells that agree by chance, each known to +/-9%, do not
//! make the mean known to +/-0.1%). With one cell it is that cell.

use super::dist::{normal_quantile, normal_sf, t_quantile, t_two_sided_p};
use super::{Confidence, Interval};
use serde::Serialize;

/// The geometric mean of k cells' ratios, the cells as replicates.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellsGeomean {
    /// Cells averaged.
    pub k: usize,
    /// Mean of the cells' log ratios.
    pub log_ratio: f64,
    /// Its interval (`None` when no cell has a standard error and k = 1).
    pub log_interval: Option<Interval>,
    /// Two-sided p of "the geomean ratio is 1".
    pub p: Option<f64>,
    pub confidence: Confidence,
    /// Whether the cells' own standard errors set the width (they agree
    /// more closely than their noise allows) rather than their spread.
    pub floor: bool,
}

/// The geomean of cells given as (log ratio, its standard error if
/// known): mean of the logs, interval the wider of t(k-1) over the cells'
/// spread and z times the mean's standard error from the cells' own
/// (sqrt(sum se^2) / k, the cells' mean se^2 standing in for those
/// without one; with `correlated` cells, which share what their errors
/// come from, the root mean square se itself). One cell: its own interval
/// (z times its se).
///
/// # Panics
/// If `cells` is empty.
pub fn of_cells(
    cells: &[(f64, Option<f64>)],
    correlated: bool,
    confidence: Confidence,
) -> CellsGeomean {
    assert!(!cells.is_empty(), "a geomean of no cell");
    let k = cells.len();
    let kf = k as f64;
    let m = cells.iter().map(|c| c.0).sum::<f64>() / kf;
    let known: Vec<f64> = cells.iter().filter_map(|c| c.1).collect();
    // sqrt(sum se^2) / k with the unknown ones at the known ones' mean.
    let per = if correlated { 1.0 } else { kf };
    let floor_se = (!known.is_empty())
        .then(|| (known.iter().map(|s| s * s).sum::<f64>() / known.len() as f64 / per).sqrt());
    let z = normal_quantile(confidence.upper_tail_quantile());
    let spread = (k >= 2).then(|| {
        let var = cells.iter().map(|c| (c.0 - m).powi(2)).sum::<f64>() / (kf - 1.0);
        let se = (var / kf).sqrt();
        (
            se,
            t_quantile(confidence.upper_tail_quantile(), kf - 1.0) * se,
        )
    });
    let floor_half = floor_se.map(|s| z * s);
    let p_of = |se: f64, p: &dyn Fn(f64) -> f64| {
        if se > 0.0 {
            p(m / se)
        } else if m == 0.0 {
            1.0
        } else {
            0.0
        }
    };
    let (half, p, floor) = match (spread, floor_half) {
        (Some((se, h)), f) if f.is_none_or(|f| h >= f) => (
            Some(h),
            Some(p_of(se, &|t| t_two_sided_p(t, kf - 1.0))),
            false,
        ),
        (_, Some(f)) => {
            let se = floor_se.expect("with the floor");
            (
                Some(f),
                Some(p_of(se, &|z| (2.0 * normal_sf(z.abs())).min(1.0))),
                true,
            )
        }
        _ => (None, None, false),
    };
    CellsGeomean {
        k,
        log_ratio: m,
        log_interval: half.map(|h| Interval {
            lo: m - h,
            hi: m + h,
        }),
        p,
        confidence,
        floor,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_as_replicates() {
        let conf = Confidence::percent(95.0);
        // Cells that agree exactly, each with se 0.04: the floor,
        // 1.96 * 0.04 / sqrt(8), not a zero width.
        let g = of_cells(&[(0.05, Some(0.04)); 8], false, conf);
        assert!(g.floor);
        let iv = g.log_interval.unwrap();
        let h = 1.959964 * 0.04 / 8f64.sqrt();
        assert!((iv.hi - 0.05 - h).abs() < 1e-6, "{iv:?}");
        // Cells that disagree more than their noise: the t over cells.
        let spread = [(-0.1, Some(0.001)), (0.1, Some(0.001)), (0.0, Some(0.001))];
        let g = of_cells(&spread, false, conf);
        assert!(!g.floor);
        let iv = g.log_interval.unwrap();
        assert!((iv.hi - 4.302652729911275 * 0.1 / 3f64.sqrt()).abs() < 1e-9);
        assert!((g.p.unwrap() - 1.0).abs() < 1e-12);
        // One cell: its own interval.
        let g = of_cells(&[(0.2, Some(0.05))], false, conf);
        assert!((g.log_interval.unwrap().lo - (0.2 - 1.959964 * 0.05)).abs() < 1e-6);
        assert!(g.p.unwrap() < 0.001);
        assert_eq!(of_cells(&[(0.2, None)], false, conf).log_interval, None);
        // Correlated cells: the floor is their se itself.
        let g = of_cells(&[(0.05, Some(0.04)); 8], true, conf);
        assert!((g.log_interval.unwrap().hi - 0.05 - 1.959964 * 0.04).abs() < 1e-6);
    }
}
