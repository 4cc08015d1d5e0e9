//! Geometric mean of ratios across benchmarks, with a t interval on the
//! log scale (what benchstat's geomean row summarises).
//!
//! Ratios multiply, so their natural average is geometric: the mean of
//! ln(r) back-transformed. The interval is exp(mean ± t(1-α/2, k-1) ·
//! sd/√k) of the logs, which assumes the log-ratios are roughly normal.
//!
//! [`of_cells`] treats the cells as the replicates, as a geomean over
//! benchmarks must: its interval comes from the spread of the cells' log
//! ratios, and is never narrower than the cells' own standard errors
//! warrant (eight cells that agree by chance, each known to +/-9%, do not
//! make the mean known to +/-0.1%). With one cell it is that cell.

use super::dist::{normal_quantile, normal_sf, t_quantile, t_two_sided_p};
use super::{Confidence, Interval};
use serde::Serialize;

/// Why no geometric mean can be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeomeanError {
    #[error("no ratios")]
    Empty,
    #[error("ratio #{index} is {value}; ratios must be finite and > 0")]
    NotPositive { index: usize, value: f64 },
}

/// The geometric mean of k ratios.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geomean {
    /// Number of ratios.
    pub k: usize,
    /// exp(mean(ln r)).
    pub geomean: f64,
    /// Degrees of freedom of the interval, k - 1.
    pub df: usize,
    pub confidence: Confidence,
    /// Interval of the geometric mean; `None` for k = 1.
    pub interval: Option<Interval>,
}

/// Geometric mean of `ratios` (each contender / baseline) with its
/// interval at `confidence`.
pub fn geomean_of_ratios(ratios: &[f64], confidence: Confidence) -> Result<Geomean, GeomeanError> {
    if ratios.is_empty() {
        return Err(GeomeanError::Empty);
    }
    if let Some((index, &value)) = ratios
        .iter()
        .enumerate()
        .find(|(_, r)| !(r.is_finite() && **r > 0.0))
    {
        return Err(GeomeanError::NotPositive { index, value });
    }
    let k = ratios.len();
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let m = logs.iter().sum::<f64>() / k as f64;
    let interval = (k >= 2).then(|| {
        let var = logs.iter().map(|l| (l - m) * (l - m)).sum::<f64>() / (k - 1) as f64;
        let h =
            t_quantile(confidence.upper_tail_quantile(), (k - 1) as f64) * (var / k as f64).sqrt();
        Interval {
            lo: (m - h).exp(),
            hi: (m + h).exp(),
        }
    });
    Ok(Geomean {
        k,
        geomean: m.exp(),
        df: k.saturating_sub(1),
        confidence,
        interval,
    })
}

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

    #[test]
    fn known_ratios() {
        // 2 and 0.5 cancel; 1.1, 1.21 and 1.331 (powers of 1.1) average 1.21.
        let g = geomean_of_ratios(&[2.0, 0.5], Confidence::default()).unwrap();
        assert!((g.geomean - 1.0).abs() < 1e-15);
        let g = geomean_of_ratios(&[1.1, 1.21, 1.331], Confidence::percent(95.0)).unwrap();
        assert!((g.geomean - 1.21).abs() < 1e-12);
        // logs are ln1.1 * {1,2,3}: sd = ln1.1, half-width = t(.975,2)*ln1.1/sqrt3.
        let h = 4.302652729911275 * 1.1f64.ln() / 3f64.sqrt();
        let iv = g.interval.unwrap();
        assert!((iv.lo - (1.21f64.ln() - h).exp()).abs() < 1e-9, "{iv:?}");
        assert!((iv.hi - (1.21f64.ln() + h).exp()).abs() < 1e-9, "{iv:?}");
        let one = geomean_of_ratios(&[1.05], Confidence::default()).unwrap();
        assert_eq!((one.geomean, one.interval), (1.05, None));
        assert!(geomean_of_ratios(&[1.0, 0.0], Confidence::default()).is_err());
        assert_eq!(
            geomean_of_ratios(&[], Confidence::default()),
            Err(GeomeanError::Empty)
        );
    }
}
