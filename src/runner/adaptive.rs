//! Adaptive stopping: sample a cell until its mean is known precisely
//! enough (`--precision 1%`), or, with two variants and `--until-verdict`,
//! until their comparison is decided either way.
//!
//! Looking at the data after every round and stopping when it looks good
//! inflates the error rates of a fixed-n test (the "optional stopping"
//! problem). kbench guards against it in two ways: no decision before
//! [`MIN_SAMPLES`] samples per cell, and every interim decision uses a
//! stricter confidence ([`LOOK_CONFIDENCE`], 99%) than the 95% a fixed-n
//! comparison reports, a Bonferroni-style margin for the repeated looks.
//! A difference is declared when the interval of the relative difference
//! excludes 0; equivalence when it lies inside +/- the precision.

use serde::Serialize;

/// No stopping decision before this many samples per cell.
pub const MIN_SAMPLES: usize = 5;
/// Confidence of the intervals used for interim decisions.
pub const LOOK_CONFIDENCE: f64 = 0.99;
/// Confidence of the reported precision of a mean.
pub const PRECISION_CONFIDENCE: f64 = 0.95;

/// When to stop sampling a cell or a pair of cells.
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize)]
pub struct StopRule {
    /// Target relative half-width of the mean's 95% interval (0.01 = 1%).
    pub precision: f64,
    /// Most samples per cell.
    pub max_samples: u32,
    /// Most seconds for the whole run.
    pub max_time: Option<f64>,
    /// Stop once two variants are decided (difference or equivalence).
    pub until_verdict: bool,
}

/// Two-sided Student t quantile for `confidence` and `df` degrees of freedom.
pub fn t_quantile(confidence: f64, df: f64) -> f64 {
    crate::stats::dist::t_quantile(0.5 + confidence / 2.0, df)
}

fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
    (m, var)
}

/// Relative half-width of the `confidence` interval of the mean
/// (`t * s / sqrt(n) / |mean|`); infinite with fewer than 2 values.
pub fn relative_halfwidth(v: &[f64], confidence: f64) -> f64 {
    if v.len() < 2 {
        return f64::INFINITY;
    }
    let (m, var) = mean_var(v);
    let hw = t_quantile(confidence, v.len() as f64 - 1.0) * (var / v.len() as f64).sqrt();
    if m == 0.0 {
        f64::INFINITY
    } else {
        hw / m.abs()
    }
}

/// True when a cell may stop for precision.
pub fn precise_enough(v: &[f64], precision: f64) -> bool {
    v.len() >= MIN_SAMPLES && relative_halfwidth(v, PRECISION_CONFIDENCE) <= precision
}

/// How a comparison of two variants ended.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(tag = "verdict", rename_all = "lowercase")]
pub enum Verdict {
    /// The interval of the relative difference excludes 0.
    Different { delta: f64, low: f64, high: f64 },
    /// The interval lies within +/- `margin`.
    Equivalent {
        delta: f64,
        low: f64,
        high: f64,
        margin: f64,
    },
    /// Neither yet.
    Undecided { delta: f64, low: f64, high: f64 },
}

/// Welch interval of (mean(b) - mean(a)) / mean(a) at `confidence`, and
/// the decision against `margin`.
pub fn verdict(a: &[f64], b: &[f64], margin: f64, confidence: f64) -> Option<Verdict> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt();
    // Welch-Satterthwaite degrees of freedom.
    let df = if se == 0.0 {
        na + nb - 2.0
    } else {
        (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    };
    let hw = t_quantile(confidence, df) * se;
    let d = mb - ma;
    let (delta, low, high) = (d / ma, (d - hw) / ma, (d + hw) / ma);
    let (low, high) = if ma < 0.0 { (high, low) } else { (low, high) };
    Some(if low > 0.0 || high < 0.0 {
        Verdict::Different { delta, low, high }
    } else if low >= -margin && high <= margin {
        Verdict::Equivalent {
            delta,
            low,
            high,
            margin,
        }
    } else {
        Verdict::Undecided { delta, low, high }
    })
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Verdict::Different { delta, low, high } => write!(
                f,
                "different: {:+.2}% [{:+.2}%, {:+.2}%]",
                delta * 100.0,
                low * 100.0,
                high * 100.0
            ),
            Verdict::Equivalent {
                delta,
                low,
                high,
                margin,
            } => write!(
                f,
                "equivalent within +/-{}%: {:+.2}% [{:+.2}%, {:+.2}%]",
                margin * 100.0,
                delta * 100.0,
                low * 100.0,
                high * 100.0
            ),
            Verdict::Undecided { delta, low, high } => write!(
                f,
                "undecided: {:+.2}% [{:+.2}%, {:+.2}%]",
                delta * 100.0,
                low * 100.0,
                high * 100.0
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_tables() {
        // Published two-sided 95% values.
        assert!((t_quantile(0.95, 9.0) - 2.262).abs() < 1e-3);
        assert!((t_quantile(0.95, 1e9) - 1.960).abs() < 1e-3);
        assert!((t_quantile(0.99, 4.0) - 4.604).abs() < 1e-3);
    }

    #[test]
    fn precision_of_known_samples() {
        // mean 100, s = 1.5811, n = 5, t(0.975, 4) = 2.776 -> hw 1.963
        let v = [98.0, 99.0, 100.0, 101.0, 102.0];
        let r = relative_halfwidth(&v, 0.95);
        assert!((r - 0.019630).abs() < 1e-5, "{r}");
        assert!(precise_enough(&v, 0.02));
        assert!(!precise_enough(&v, 0.019));
        assert!(!precise_enough(&v[..4], 1.0), "below MIN_SAMPLES");
    }

    #[test]
    fn verdicts() {
        let a = [100.0, 101.0, 99.0, 100.5, 99.5];
        let b: Vec<f64> = a.iter().map(|x| x * 1.05).collect();
        assert!(matches!(
            verdict(&a, &b, 0.01, 0.99),
            Some(Verdict::Different { .. })
        ));
        let same: Vec<f64> = a.iter().map(|x| x + 0.01).collect();
        assert!(matches!(
            verdict(&a, &same, 0.02, 0.99),
            Some(Verdict::Equivalent { .. })
        ));
        let wide = [50.0, 150.0, 100.0, 80.0, 120.0];
        assert!(matches!(
            verdict(&a, &wide, 0.01, 0.99),
            Some(Verdict::Undecided { .. })
        ));
        assert_eq!(verdict(&a[..1], &a, 0.01, 0.99), None);
    }
}
