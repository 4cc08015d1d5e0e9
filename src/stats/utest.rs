//! Mann-Whitney U test (Wilcoxon rank-sum), two-sided.
//!
//! Assumes nothing about the distribution (benchmath's `AssumeNothing`):
//! it asks whether values of one set tend to exceed those of the other.
//! Without ties and with n1 + n2 <= 100 the p-value is exact (the null
//! distribution of U counted with the Gaussian binomial coefficient);
//! otherwise it uses the normal approximation with the tie correction of
//! the variance and a continuity correction of 1/2 (as R's `wilcox.test`).

use super::dist::normal_sf;
use super::{Confidence, Sample, TooFew};
use serde::Serialize;
use std::sync::Arc;

use super::cfmt::fmt_g;
use super::twosample::{Outcome, Shown, few};

/// Largest n1 + n2 for the exact distribution.
pub const EXACT_MAX_N: usize = 100;

/// How the p-value was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum UMethod {
    Exact,
    /// Normal approximation (tie- and continuity-corrected).
    Normal,
}

/// Result of a Mann-Whitney U test of `b` (contender) against `a`
/// (baseline).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UTest {
    /// Baseline size.
    pub n1: usize,
    /// Contender size.
    pub n2: usize,
    /// U of the contender: the number of pairs (a_i, b_j) with b_j > a_i,
    /// ties counting 1/2. Ranges 0..=n1*n2; n1*n2/2 means no tendency.
    /// (R's `wilcox.test(b, a)` calls it W.)
    pub statistic: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub method: UMethod,
    /// Whether the pooled values have ties.
    pub ties: bool,
    pub confidence: Confidence,
    /// Hodges-Lehmann estimate of the shift: the median of all b_j - a_i.
    pub shift: f64,
    /// Set when even the most extreme outcome would not be significant
    /// at this level (the smallest possible p is 2 / C(n1+n2, n1)).
    pub too_few: Option<TooFew>,
}

impl UTest {
    /// Test `b` against `a`.
    ///
    /// - Time: O((n1+n2) log(n1+n2)) plus 64 counting passes for the shift, plus
    ///   O(n1^2 n2) for the exact distribution when it is used.
    pub fn new(a: &Sample, b: &Sample, confidence: Confidence) -> UTest {
        let (n1, n2) = (a.len(), b.len());
        // Rank the pooled values, averaging ties; both inputs are sorted.
        let (xa, xb) = (a.sorted(), b.sorted());
        let mut pooled: Vec<(f64, bool)> = Vec::with_capacity(n1 + n2);
        let (mut i, mut j) = (0, 0);
        while i < n1 || j < n2 {
            if j == n2 || (i < n1 && xa[i] <= xb[j]) {
                pooled.push((xa[i], false));
                i += 1;
            } else {
                pooled.push((xb[j], true));
                j += 1;
            }
        }
        let n = n1 + n2;
        let mut rank_sum_b = 0.0;
        let mut tie_term = 0.0; // sum of t^3 - t over tie groups
        let mut k = 0;
        while k < n {
            let mut e = k + 1;
            while e < n && pooled[e].0 == pooled[k].0 {
                e += 1;
            }
            let t = (e - k) as f64;
            let avg_rank = (k + 1 + e) as f64 / 2.0;
            for item in &pooled[k..e] {
                if item.1 {
                    rank_sum_b += avg_rank;
                }
            }
            tie_term += t * t * t - t;
            k = e;
        }
        let ties = tie_term > 0.0;
        let (f1, f2) = (n1 as f64, n2 as f64);
        let u = rank_sum_b - f2 * (f2 + 1.0) / 2.0;
        let (p, method) = if !ties && n <= EXACT_MAX_N {
            (exact_p(n1, n2, u), UMethod::Exact)
        } else {
            let mu = f1 * f2 / 2.0;
            let var =
                f1 * f2 / 12.0 * ((n as f64 + 1.0) - tie_term / (n as f64 * (n as f64 - 1.0)));
            let p = if var <= 0.0 {
                1.0
            } else {
                let d = u - mu;
                let z = (d - 0.5 * d.signum()) / var.sqrt();
                (2.0 * normal_sf(z.abs())).min(1.0)
            };
            (p, UMethod::Normal)
        };
        let min_p = 2.0 / binomial(n, n1);
        let too_few = (min_p >= confidence.alpha()).then(|| TooFew {
            need: need_per_set(confidence.alpha()),
            confidence,
        });
        UTest {
            n1,
            n2,
            statistic: u,
            p,
            method,
            ties,
            confidence,
            shift: hodges_lehmann(xa, xb),
            too_few,
        }
    }

    /// `p < alpha` (and enough samples).
    #[cfg(test)]
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && self.p < self.confidence.alpha()
    }
}

/// C(n, k) as a float.
fn binomial(n: usize, k: usize) -> f64 {
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Smallest equal set size whose most extreme outcome reaches `alpha`.
fn need_per_set(alpha: f64) -> usize {
    (1..)
        .find(|&k| 2.0 / binomial(2 * k, k) < alpha)
        .expect("some k")
}

/// Exact two-sided p of U = `u` (no ties): 2 * min(P(U <= u), P(U >= u)).
fn exact_p(n1: usize, n2: usize, u: f64) -> f64 {
    let counts = u_counts(n1, n2);
    let total: f64 = counts.iter().map(|&c| c as f64).sum();
    let u = u.round() as usize;
    let le: f64 = counts[..=u].iter().map(|&c| c as f64).sum();
    let ge: f64 = counts[u..].iter().map(|&c| c as f64).sum();
    (2.0 * le.min(ge) / total).min(1.0)
}

/// Number of orderings giving each U = 0..=n1*n2: the coefficients of the
/// Gaussian binomial [n1+n2 choose n1]_q = prod_{i=1..k} (1-q^(n-k+i)) /
/// (1-q^i), computed exactly in i128 (C(100, 50) < 2^97).
fn u_counts(n1: usize, n2: usize) -> Vec<i128> {
    let (n, k) = (n1 + n2, n1.min(n2));
    let deg = n1 * n2;
    let mut c = vec![0i128; deg + 1];
    c[0] = 1;
    for i in 1..=k {
        let a = n - k + i;
        // multiply by (1 - q^a)
        for d in (a..=deg).rev() {
            c[d] -= c[d - a];
        }
        // divide by (1 - q^i): prefix sums with stride i
        for d in i..=deg {
            c[d] += c[d - i];
        }
    }
    c
}

/// Median of all pairwise differences b_j - a_i.
/// Median of all n1*n2 differences b_j - a_i (both inputs sorted) without
/// materialising them: the k-th smallest difference is found by bisection
/// over the ordered bit patterns of f64, counting the differences <= d
/// with two pointers. Time O((n1 + n2) * 64), memory O(1): 10^6 values
/// per set would otherwise need 8 TB.
fn hodges_lehmann(a: &[f64], b: &[f64]) -> f64 {
    let total = a.len() as u128 * b.len() as u128;
    if total == 0 {
        return f64::NAN;
    }
    let kth = |k: u128| kth_difference(a, b, k);
    if total % 2 == 1 {
        kth(total / 2)
    } else {
        (kth(total / 2 - 1) + kth(total / 2)) / 2.0
    }
}

/// Order-preserving map of f64 (no NaN) to u64.
pub(crate) fn key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | 1 << 63
    }
}

/// The inverse of [`key`].
pub(crate) fn unkey(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Number of pairs with b_j - a_i <= d (a, b sorted ascending).
fn count_le(a: &[f64], b: &[f64], d: f64) -> u128 {
    // For each y (ascending), the x with y - x <= d form a suffix of a
    // whose start only moves right as y grows.
    let mut i = 0;
    let mut n = 0u128;
    for &y in b {
        while i < a.len() && y - a[i] > d {
            i += 1;
        }
        n += (a.len() - i) as u128;
    }
    n
}

/// The k-th smallest (0-based) difference b_j - a_i.
fn kth_difference(a: &[f64], b: &[f64], k: u128) -> f64 {
    let (mut lo, mut hi) = (key(b[0] - a[a.len() - 1]), key(b[b.len() - 1] - a[0]));
    // Smallest d whose count reaches k + 1: an actual difference.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_le(a, b, unkey(mid)) > k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    unkey(lo)
}

/// Mann-Whitney U as `kbench compare --test mwu` runs it.
pub struct MannWhitney;

impl super::twosample::TwoSample for MannWhitney {
    fn name(&self) -> &'static str {
        "mwu"
    }
    fn help(&self) -> &'static str {
        "Mann-Whitney U (no normality assumed)"
    }
    fn label(&self) -> &'static str {
        "Mann-Whitney U"
    }
    fn run(&self, a: &Sample, b: &Sample, confidence: f64) -> Arc<dyn Outcome> {
        Arc::new(UTest::new(a, b, Confidence::percent(confidence)))
    }
}

impl Outcome for UTest {
    fn summary(&self, conf: f64, _unit: &str) -> Shown {
        Shown::Line(format!(
            "Mann-Whitney U at {conf}% confidence: U = {}, p = {} ({}), shift (Hodges-Lehmann) = {}{}",
            fmt_g(self.statistic, 0, 6),
            fmt_g(self.p, 0, 4),
            match self.method {
                UMethod::Exact => "exact",
                UMethod::Normal => "normal approximation",
            },
            fmt_g(self.shift, 0, 6),
            few(self.too_few),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hodges_lehmann_matches_the_explicit_median() {
        let mut x = 7u64;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % 1000) as f64 / 10.0 - 30.0
        };
        for (n1, n2) in [(1, 1), (3, 4), (10, 7), (25, 25), (31, 2)] {
            let mut a: Vec<f64> = (0..n1).map(|_| next()).collect();
            let mut b: Vec<f64> = (0..n2).map(|_| next()).collect();
            a.sort_by(f64::total_cmp);
            b.sort_by(f64::total_cmp);
            let mut d: Vec<f64> = b
                .iter()
                .flat_map(|y| a.iter().map(move |x| y - x))
                .collect();
            d.sort_by(f64::total_cmp);
            let m = d.len();
            let want = if m % 2 == 1 {
                d[m / 2]
            } else {
                (d[m / 2 - 1] + d[m / 2]) / 2.0
            };
            assert_eq!(hodges_lehmann(&a, &b), want, "{n1}x{n2}");
        }
    }

    fn s(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn exact_matches_r_example() {
        // ?wilcox.test (Hollander & Wolfe 1973, 69f.): permeability
        // constants. wilcox.test(x, y, alternative = "g"): W = 35,
        // p-value = 0.1272, so two-sided p = 0.2544.
        let x = [0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46];
        let y = [1.15, 0.88, 0.90, 0.74, 1.21];
        let r = UTest::new(&s(&y), &s(&x), Confidence::percent(95.0));
        assert_eq!(r.statistic, 35.0);
        assert_eq!(r.method, UMethod::Exact);
        assert!((r.p - 0.2544).abs() < 1e-4, "{r:?}");
        assert!(!r.significant());
    }

    #[test]
    fn exact_distribution_by_enumeration() {
        // Hand check: n1 = n2 = 3, all 20 orderings. U = 0 occurs once,
        // U = 1 once, U = 2 twice, U = 3 three times, U = 4 three times...
        assert_eq!(u_counts(3, 3), vec![1, 1, 2, 3, 3, 3, 3, 2, 1, 1]);
        assert_eq!(u_counts(2, 4).iter().sum::<i128>(), 15);
        // Completely separated sets of 4: p = 2/70.
        let r = UTest::new(
            &s(&[1.0, 2.0, 3.0, 4.0]),
            &s(&[5.0, 6.0, 7.0, 8.0]),
            Confidence::default(),
        );
        assert_eq!(r.statistic, 16.0);
        assert!((r.p - 2.0 / 70.0).abs() < 1e-15);
        assert!(r.significant());
        assert_eq!(r.shift, 4.0);
    }

    #[test]
    fn too_few_to_detect() {
        // n = 3 + 3: the best possible p is 2/20 = 0.1 >= 0.05.
        let r = UTest::new(
            &s(&[1.0, 2.0, 3.0]),
            &s(&[7.0, 8.0, 9.0]),
            Confidence::percent(95.0),
        );
        assert_eq!(r.too_few.map(|t| t.need), Some(4));
        assert!(!r.significant());
        assert_eq!(
            r.too_few.unwrap().to_string(),
            "need >= 4 samples in each set to detect a difference at 95% confidence"
        );
        // At 80% (alpha 0.2) the same sets can show it.
        let r = UTest::new(
            &s(&[1.0, 2.0, 3.0]),
            &s(&[7.0, 8.0, 9.0]),
            Confidence::percent(80.0),
        );
        assert!(r.too_few.is_none() && r.significant());
    }

    #[test]
    fn ties_use_corrected_normal_approximation() {
        // Hand-computed: a = {1,2,2,3}, b = {2,3,3,4}. Pooled ranks:
        // 1 -> 1; 2,2,2 -> 3; 3,3,3 -> 6; 4 -> 8. R_b = 3 + 6 + 6 + 8 = 23,
        // U_b = 23 - 10 = 13, mu = 8, tie term = 24 + 24 = 48,
        // var = 16/12 * (9 - 48/56) = 10.857142..., z = (13 - 8 - 0.5)/sqrt(var)
        // = 1.365698..., p = 2 * (1 - Phi(z)) = erfc(z/sqrt 2) = 0.172034...
        let r = UTest::new(
            &s(&[1.0, 2.0, 2.0, 3.0]),
            &s(&[2.0, 3.0, 3.0, 4.0]),
            Confidence::default(),
        );
        assert!(r.ties);
        assert_eq!(r.method, UMethod::Normal);
        assert_eq!(r.statistic, 13.0);
        let z: f64 = 4.5 / (16.0f64 / 12.0 * (9.0 - 48.0 / 56.0)).sqrt();
        assert!((z - 1.365698).abs() < 1e-6);
        assert!((r.p - 0.172034).abs() < 1e-6, "{r:?}");
        // All values equal: no evidence at all.
        let r = UTest::new(&s(&[5.0; 6]), &s(&[5.0; 6]), Confidence::default());
        assert_eq!(r.p, 1.0);
    }

    #[test]
    fn large_samples_use_normal() {
        let a: Vec<f64> = (0..80).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..80).map(|i| i as f64 + 20.5).collect();
        let r = UTest::new(&s(&a), &s(&b), Confidence::default());
        assert_eq!(r.method, UMethod::Normal);
        assert!(r.p < 1e-4 && r.significant());
        assert_eq!(r.shift, 20.5);
    }
}
