//! Outlier flags by the modified z-score (Iglewicz & Hoaglin 1993):
//! M_i = 0.6745 (x_i - median) / MAD, flagged when |M_i| > 3.5.
//!
//! Median-based, so the outliers themselves do not hide each other the way
//! they inflate a mean and standard deviation. When the MAD is 0 (over half
//! the values equal), the mean absolute deviation scaled by 1.253314 stands
//! in (IBM SPSS's convention); if that is 0 too, nothing is flagged.

use serde::Serialize;

/// The usual cut-off for |M|.
pub const DEFAULT_THRESHOLD: f64 = 3.5;

/// Modified z-scores of a set of values, in input order.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outliers {
    pub median: f64,
    /// Median absolute deviation (unscaled).
    pub mad: f64,
    pub threshold: f64,
    /// M_i for each value, in input order (0 when the spread is 0).
    pub scores: Vec<f64>,
    /// Indices (input order) with |M_i| > threshold.
    pub flagged: Vec<usize>,
}

/// The median of `v` (not empty), as [`super::sample::median_sorted`] of it sorted, by
/// selection: O(n) where the sort was O(n log n). Reorders `v`.
fn median_selected(v: &mut [f64]) -> f64 {
    let n = v.len();
    let (below, mid, _) = v.select_nth_unstable_by(n / 2, f64::total_cmp);
    if n % 2 == 1 {
        *mid
    } else {
        let lo = below.iter().copied().max_by(f64::total_cmp);
        (lo.expect("two values or more") + *mid) / 2.0
    }
}

/// Score `values` (time order is kept, so flagged indices point at the
/// samples) and flag those beyond `threshold`.
pub fn modified_z(values: &[f64], threshold: f64) -> Outliers {
    if values.is_empty() {
        return Outliers {
            median: f64::NAN,
            mad: f64::NAN,
            threshold,
            scores: Vec::new(),
            flagged: Vec::new(),
        };
    }
    let mut dev = values.to_vec();
    let median = median_selected(&mut dev);
    for (d, x) in dev.iter_mut().zip(values) {
        *d = (x - median).abs();
    }
    let mad = median_selected(&mut dev);
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        // Summed in ascending order, as always.
        dev.sort_unstable_by(f64::total_cmp);
        1.253314 * dev.iter().sum::<f64>() / dev.len() as f64
    };
    let scores: Vec<f64> = values
        .iter()
        .map(|x| {
            if scale > 0.0 {
                (x - median) / scale
            } else {
                0.0
            }
        })
        .collect();
    let flagged = scores
        .iter()
        .enumerate()
        .filter(|(_, m)| m.abs() > threshold)
        .map(|(i, _)| i)
        .collect();
    Outliers {
        median,
        mad,
        threshold,
        scores,
        flagged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_the_far_value_only() {
        // median 10, |dev| = {0.2,0.1,0,0.1,0.3,0.2,9.8...}: MAD = 0.2,
        // M(19.8) = 0.6745 * 9.8 / 0.2 = 33.05.
        let v = [10.2, 9.9, 10.0, 10.1, 9.7, 10.2, 19.8, 9.8, 10.0];
        let o = modified_z(&v, DEFAULT_THRESHOLD);
        assert_eq!(o.median, 10.0);
        assert!((o.mad - 0.2).abs() < 1e-12);
        assert_eq!(o.flagged, vec![6]);
        assert!((o.scores[6] - 0.6745 * 9.8 / 0.2).abs() < 1e-9);
    }

    #[test]
    fn zero_mad_falls_back_to_mean_deviation() {
        let v = [5.0, 5.0, 5.0, 5.0, 9.0];
        let o = modified_z(&v, DEFAULT_THRESHOLD);
        assert_eq!(o.mad, 0.0);
        // mean |dev| = 0.8, scale = 1.0026512, M(9) = 3.9894...
        assert_eq!(o.flagged, vec![4]);
        let flat = modified_z(&[3.0; 4], DEFAULT_THRESHOLD);
        assert!(flat.flagged.is_empty() && flat.scores.iter().all(|&s| s == 0.0));
    }

    /// Selection finds the median sorting finds, odd and even counts,
    /// ties, signed zeros and all.
    #[test]
    fn selected_median_is_the_sorted_one() {
        let mut x: u64 = 7;
        for n in 1..60 {
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    [(x >> 40) as f64 / 7.0, -0.0, 0.0, 1.5][(x >> 20) as usize % 4]
                })
                .collect();
            let mut sorted = v.clone();
            sorted.sort_unstable_by(f64::total_cmp);
            let want = crate::stats::sample::median_sorted(&sorted);
            let got = median_selected(&mut v.clone());
            assert_eq!(got.to_bits(), want.to_bits(), "{v:?}");
        }
    }
}
