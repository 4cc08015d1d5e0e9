//! Distribution functions the tests need, through statrs.

use statrs::distribution::{ContinuousCDF, FisherSnedecor, Normal, StudentsT};

/// Upper tail of the standard normal, 1 - CDF, without cancellation.
pub fn normal_sf(z: f64) -> f64 {
    Normal::new(0.0, 1.0).expect("standard normal").sf(z)
}

/// Standard normal quantile.
pub fn normal_quantile(p: f64) -> f64 {
    Normal::new(0.0, 1.0)
        .expect("standard normal")
        .inverse_cdf(p)
}

/// Quantile of Student's t with `df` (> 0, may be fractional) degrees of
/// freedom; the standard normal's for infinite df.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    // Beyond 1e6 df the t and normal quantiles agree to 1e-6 relative, and
    // statrs' inverse CDF can fail to converge (it hung on df = 1e9).
    if df.is_infinite() || df > 1e6 {
        return normal_quantile(p);
    }
    StudentsT::new(0.0, 1.0, df).expect("df > 0").inverse_cdf(p)
}

/// Two-sided p-value of a t statistic: P(|T| >= |t|).
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return f64::NAN;
    }
    let sf = if df.is_infinite() || df > 1e6 {
        normal_sf(t.abs())
    } else {
        StudentsT::new(0.0, 1.0, df).expect("df > 0").sf(t.abs())
    };
    (2.0 * sf).min(1.0)
}

/// Upper tail of the F distribution with `d1`, `d2` (> 0) degrees of
/// freedom: P(F >= f).
pub fn f_sf(f: f64, d1: f64, d2: f64) -> f64 {
    if f.is_nan() {
        return f64::NAN;
    }
    if f <= 0.0 {
        return 1.0;
    }
    FisherSnedecor::new(d1, d2).expect("df > 0").sf(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_quantiles() {
        // Tables: t(0.975, 18) = 2.100922, t(0.995, 4) = 4.604095.
        assert!((t_quantile(0.975, 18.0) - 2.100922).abs() < 1e-6);
        assert!((t_quantile(0.995, 4.0) - 4.604095).abs() < 1e-6);
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-6);
        assert!((t_two_sided_p(2.100922, 18.0) - 0.05).abs() < 1e-6);
        // Huge df: the normal limit, and it returns (statrs alone hung).
        assert!((t_quantile(0.975, 1e9) - 1.959964).abs() < 1e-6);
        // F tables: F(0.95; 4, 20) = 2.866081.
        assert!((f_sf(2.866081, 4.0, 20.0) - 0.05).abs() < 1e-6);
        assert_eq!(f_sf(0.0, 4.0, 20.0), 1.0);
    }
}
