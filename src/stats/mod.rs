//! Statistics: summaries of samples and C-compatible number formatting.
//!
//! (Issue 3 grows this into ministat-exact Student's t, Welch, Mann-Whitney,
//! bootstrap and adaptive stopping.)

pub mod cfmt;
pub mod student;

use serde::Serialize;

/// The summary ministat prints for one data set.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub max: f64,
    /// Mean of the two middle values for even n (FreeBSD ministat).
    pub median: f64,
    pub mean: f64,
    /// Sample standard deviation (n-1); 0 for n = 1.
    pub stddev: f64,
}

impl Summary {
    /// Summarise values (any order). `None` when empty.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let var = if n > 1 {
            v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64
        } else {
            0.0
        };
        Some(Summary {
            n,
            min: v[0],
            max: v[n - 1],
            median,
            mean,
            stddev: var.sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!(
            (s.n, s.min, s.max, s.median, s.mean),
            (4, 1.0, 4.0, 2.5, 2.5)
        );
        assert!((s.stddev - 1.2909944487358056).abs() < 1e-12);
        assert!(Summary::of(&[]).is_none());
    }
}
