//! Two arms measured in the same rounds, compared round by round.
//!
//! kbench interleaves its cells: in every round each cell takes one
//! sample, in a shuffled order. A load burst, a frequency change or a
//! noisy neighbour then moves both arms of a round together, and the
//! ratio of the two arms within a round stays steady while the raw values
//! swing by tens of percent. Comparing the arms as two independent sets
//! (Welch, Mann-Whitney) throws that pairing away; this module keeps it.
//!
//! For each round i with baseline value a_i and contender value b_i the
//! statistic is the log ratio d_i = ln(b_i / a_i). The analysis is on the
//! log scale, so every interval maps back to a ratio above 0 and a change
//! (new/baseline - 1) above -100%.
//!
//! A burst can also hit one arm of a round and not the other, so the
//! analysis is robust rather than a paired t:
//!
//! - the estimate is the Hodges-Lehmann one-sample estimate, the median
//!   of the n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j;
//! - its interval is the Wilcoxon signed-rank interval: the Walsh averages
//!   of rank q and n(n+1)/2 - q + 1, q the signed-rank quantile at
//!   alpha/2 (Hollander & Wolfe, "Nonparametric Statistical Methods",
//!   3.2; the interval R's `wilcox.test(b, a, paired = TRUE, conf.int =
//!   TRUE)` gives, on the logs);
//! - the sign-test interval of the median log ratio, order statistics of
//!   the d_i (Hollander & Wolfe 3.6), is kept beside it: it assumes not
//!   even symmetry;
//! - `p` is the two-sided signed-rank p of "the median log ratio is 0".
//!
//! The signed-rank distribution is exact (counted) up to [`EXACT_MAX_N`]
//! rounds and normal beyond, with R's tie correction and zeros dropped
//! for the p-value. Walsh averages are never materialised: the k-th is
//! found by bisection over the ordered f64 bit patterns, counting with two
//! pointers (O(64 n) per order statistic), so 10^5 rounds cost nothing.
//!
//! **Too few rounds.** With n rounds the most extreme outcome of the
//! signed-rank test has probability 2/2^n: below 6 rounds at 95% (8 at
//! 99%) no interval reaches the asked confidence. The interval is then the
//! widest one, [min, max] of the Walsh averages, `achieved` says the
//! confidence it has, `too_few` is set, and [`Paired::against`] and
//! [`Paired::verdict`] never decide on it.
//!
//! On a real bisection under load measured here, 26 rounds
//! at +6..+11% and four burst rounds at -36%, -33%, -2%, +27% gave a
//! paired t interval [-0.6%, +14.2%] and this one [+8.1%, +10.7%].

use serde::Serialize;
use statrs::distribution::{Binomial, DiscreteCDF};

use super::dist::{normal_quantile, normal_sf};
use super::equivalence::{self, Verdict};
use super::utest::{key, unkey};
use super::{Confidence, Interval, TooFew};
use crate::record::Direction;

/// Most rounds for which the signed-rank distribution is counted exactly
/// (the normal approximation is used beyond, as R does).
pub const EXACT_MAX_N: usize = 50;

/// Why a paired comparison cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PairedError {
    #[error("no round has both arms measured")]
    Empty,
    #[error("round #{index} holds {value}: a ratio needs values above 0 (and finite) in both arms")]
    NotPositive { index: usize, value: f64 },
}

/// How the signed-rank distribution was evaluated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Counted exactly (at most [`EXACT_MAX_N`] rounds, no ties, no zero
    /// log ratio).
    Exact,
    /// Normal approximation (tie-corrected, zeros dropped, continuity
    /// correction 1/2).
    Normal,
}

/// Where the interval of a change towards worse lies against a threshold
/// t >= 0 (0.05 = 5%): what `kbench bisect` asks of a revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Against {
    /// Wholly past +t: worse by more than t (the interval's low end is
    /// above t).
    Past,
    /// Wholly within [-t, +t]: neither worse nor better by t.
    Within,
    /// Wholly below +t but reaching below -t: not worse by t, maybe
    /// better by more.
    Below,
    /// The interval contains +t (or the rounds are too few): undecided.
    Straddles,
}

/// A comparison of a contender with its baseline over the rounds in which
/// both were measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Paired {
    /// Rounds (pairs).
    pub n: usize,
    pub confidence: Confidence,
    /// The metric's direction: which way is worse.
    pub direction: Direction,
    /// Hodges-Lehmann estimate of the log ratio ln(b/a).
    pub log_ratio: f64,
    /// Its Wilcoxon signed-rank interval.
    pub log_interval: Interval,
    /// The confidence that interval really has (the signed-rank
    /// distribution is discrete): at least `confidence` unless `too_few`.
    pub achieved: f64,
    /// Sign-test interval of the median log ratio (assumes no symmetry).
    pub sign_interval: Interval,
    /// Two-sided signed-rank p-value of "the median log ratio is 0".
    pub p: f64,
    pub method: Method,
    /// Set when the rounds are too few to reach `confidence` at all.
    pub too_few: Option<TooFew>,
}

/// Compare the pairs `(a_i, b_i)` of each round: `a` the baseline, `b`
/// the contender, both measured in the same round. Values must be finite
/// and above 0.
///
/// - Time: O(n log n) plus 64 counting passes of O(n) per order
///   statistic; O(n^3) once for the exact distribution (n <= 50).
pub fn paired(
    pairs: &[(f64, f64)],
    direction: Direction,
    confidence: Confidence,
) -> Result<Paired, PairedError> {
    of_log_ratios(&log_ratios(pairs)?, direction, confidence)
}

/// [`paired`] of two arms given as values in round order, the i-th of
/// each taken in the same round (a run's two live cells); the longer arm's
/// extra rounds wait for their partner. `None` below 2 rounds or with a
/// value a ratio cannot take.
pub fn in_step(
    a: &[f64],
    b: &[f64],
    direction: Direction,
    confidence: Confidence,
) -> Option<Paired> {
    let pairs: Vec<(f64, f64)> = a.iter().copied().zip(b.iter().copied()).collect();
    (pairs.len() >= 2)
        .then(|| paired(&pairs, direction, confidence).ok())
        .flatten()
}

/// The per-round log ratios ln(b_i / a_i).
pub fn log_ratios(pairs: &[(f64, f64)]) -> Result<Vec<f64>, PairedError> {
    if pairs.is_empty() {
        return Err(PairedError::Empty);
    }
    pairs
        .iter()
        .enumerate()
        .map(|(index, &(a, b))| {
            for value in [a, b] {
                if !(value.is_finite() && value > 0.0) {
                    return Err(PairedError::NotPositive { index, value });
                }
            }
            Ok((b / a).ln())
        })
        .collect()
}

/// [`paired`] from log ratios already taken (finite).
pub fn of_log_ratios(
    d: &[f64],
    direction: Direction,
    confidence: Confidence,
) -> Result<Paired, PairedError> {
    if d.is_empty() {
        return Err(PairedError::Empty);
    }
    if let Some((index, &value)) = d.iter().enumerate().find(|(_, x)| !x.is_finite()) {
        return Err(PairedError::NotPositive { index, value });
    }
    let mut s = d.to_vec();
    s.sort_unstable_by(f64::total_cmp);
    let n = s.len();
    let m = walsh_count(n);
    let kth = |k: u64| kth_walsh(&s, k);
    let log_ratio = if m % 2 == 1 {
        kth(m / 2)
    } else {
        (kth(m / 2 - 1) + kth(m / 2)) / 2.0
    };
    let alpha = confidence.alpha();
    let (q, achieved_alpha) = critical_rank(n, alpha);
    let log_interval = Interval {
        lo: kth(q - 1),
        hi: kth(m - q),
    };
    let too_few = (achieved_alpha > alpha).then(|| TooFew {
        need: need_rounds(alpha),
        confidence,
    });
    let (p, method) = signed_rank_p(&s);
    Ok(Paired {
        n,
        confidence,
        direction,
        log_ratio,
        log_interval,
        achieved: 1.0 - achieved_alpha,
        sign_interval: sign_interval(&s, alpha),
        p,
        method,
        too_few,
    })
}

impl Paired {
    /// The change new/baseline - 1 (0.05 = +5%).
    pub fn change(&self) -> f64 {
        self.log_ratio.exp_m1()
    }

    /// Whether the interval excludes "no change" (the tests' check).
    #[cfg(test)]
    pub fn significant(&self) -> bool {
        self.too_few.is_none() && !self.log_interval.contains(0.0)
    }

    /// Its interval (never below -100%).
    pub fn change_interval(&self) -> Interval {
        Interval {
            lo: self.log_interval.lo.exp_m1(),
            hi: self.log_interval.hi.exp_m1(),
        }
    }

    /// The change towards worse and its interval: the change when lower
    /// is better (or the metric is informational), its negation when
    /// higher is better (a throughput 10% down reads +10% worse).
    pub fn worsening(&self) -> (f64, Interval) {
        let (c, iv) = (self.change(), self.change_interval());
        match self.direction {
            Direction::Higher => (
                -c,
                Interval {
                    lo: -iv.hi,
                    hi: -iv.lo,
                },
            ),
            Direction::Lower | Direction::Info => (c, iv),
        }
    }

    /// Where the worsening's interval lies against the threshold `t`
    /// (a fraction, >= 0): past it, within +/-t, below it, or undecided.
    /// Too few rounds never decide.
    ///
    /// # Panics
    /// If `t` is negative or NaN.
    pub fn against(&self, t: f64) -> Against {
        assert!(t >= 0.0, "threshold {t} must be >= 0");
        if self.too_few.is_some() {
            return Against::Straddles;
        }
        let (_, iv) = self.worsening();
        if iv.lo > t {
            Against::Past
        } else if -t <= iv.lo && iv.hi <= t {
            Against::Within
        } else if iv.hi < t {
            Against::Below
        } else {
            Against::Straddles
        }
    }

    /// The equivalence verdict of the change's interval against
    /// `margin` (`stats::equivalence`); too few rounds give `TooFew`.
    pub fn verdict(&self, margin: f64) -> Verdict {
        if self.too_few.is_some() {
            return Verdict::TooFew;
        }
        equivalence::verdict(self.change_interval(), margin)
    }
}

/// n(n+1)/2.
fn walsh_count(n: usize) -> u64 {
    let n = n as u64;
    n * (n + 1) / 2
}

/// Number of Walsh averages (s_i + s_j)/2, i <= j, that are <= x; `s`
/// sorted ascending. The average is computed as everywhere else in this
/// module, so the count jumps exactly at the computed averages.
fn count_walsh_le(s: &[f64], x: f64) -> u64 {
    let mut j = s.len(); // exclusive: s[i] with s[..j] as partners
    let mut c = 0u64;
    for i in 0..s.len() {
        while j > i && (s[i] + s[j - 1]) / 2.0 > x {
            j -= 1;
        }
        if j <= i {
            break;
        }
        c += (j - i) as u64;
    }
    c
}

/// The k-th smallest (from 0) Walsh average of the sorted `s`.
fn kth_walsh(s: &[f64], k: u64) -> f64 {
    let (mut lo, mut hi) = (key(s[0]), key(s[s.len() - 1]));
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if count_walsh_le(s, unkey(mid)) > k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    unkey(lo)
}

/// Counts of the signed-rank statistic V = 0..=n(n+1)/2 over the 2^n
/// sign patterns (exact in f64 up to n = 50: 2^50 < 2^53).
fn signrank_counts(n: usize) -> Vec<f64> {
    let m = walsh_count(n) as usize;
    let mut c = vec![0.0; m + 1];
    c[0] = 1.0;
    let mut top = 0;
    for r in 1..=n {
        top += r;
        for v in (r..=top).rev() {
            c[v] += c[v - r];
        }
    }
    c
}

/// The rank q (from 1) of the interval's lower Walsh average and the
/// two-sided alpha that interval achieves: q is the smallest with
/// P(V <= q) >= alpha/2 (R's `qsignrank`), at least 1.
fn critical_rank(n: usize, alpha: f64) -> (u64, f64) {
    let m = walsh_count(n);
    if n <= EXACT_MAX_N {
        let c = signrank_counts(n);
        let total = 2f64.powi(n as i32);
        let mut cdf = 0.0;
        let mut q = 0usize;
        loop {
            cdf += c[q];
            if cdf / total >= alpha / 2.0 || q == m as usize {
                break;
            }
            q += 1;
        }
        let q = q.max(1);
        let below: f64 = c[..q].iter().sum::<f64>() / total;
        (q as u64, (2.0 * below).min(1.0))
    } else {
        let nf = n as f64;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let z = normal_quantile(1.0 - alpha / 2.0);
        let q = ((m as f64 / 2.0 - 0.5 - z * sd).ceil()).max(1.0) as u64;
        let below = 1.0 - normal_sf((q as f64 - 0.5 - m as f64 / 2.0) / sd);
        (q, (2.0 * below).min(1.0))
    }
}

/// Smallest number of rounds whose exact interval reaches 1 - alpha
/// (6 at 95%, 8 at 99%).
pub fn need_rounds(alpha: f64) -> usize {
    (1..64)
        .find(|&n| 2f64.powi(1 - n as i32) <= alpha)
        .unwrap_or(64)
}

/// Two-sided signed-rank p of the sorted log ratios `s`.
fn signed_rank_p(s: &[f64]) -> (f64, Method) {
    let mut abs: Vec<(f64, bool)> = s
        .iter()
        .filter(|x| **x != 0.0)
        .map(|x| (x.abs(), *x > 0.0))
        .collect();
    let zeros = s.len() - abs.len();
    let n = abs.len();
    if n == 0 {
        return (1.0, Method::Normal);
    }
    abs.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
    let (mut v, mut tie_term) = (0.0, 0.0);
    let mut k = 0;
    while k < n {
        let mut e = k + 1;
        while e < n && abs[e].0 == abs[k].0 {
            e += 1;
        }
        let t = (e - k) as f64;
        let rank = (k + 1 + e) as f64 / 2.0;
        v += rank * abs[k..e].iter().filter(|x| x.1).count() as f64;
        tie_term += t * t * t - t;
        k = e;
    }
    let m = walsh_count(n) as f64;
    if n <= EXACT_MAX_N && zeros == 0 && tie_term == 0.0 {
        let c = signrank_counts(n);
        let total = 2f64.powi(n as i32);
        let v = v.round() as usize;
        let le: f64 = c[..=v].iter().sum();
        let ge: f64 = c[v..].iter().sum();
        return ((2.0 * le.min(ge) / total).min(1.0), Method::Exact);
    }
    let nf = n as f64;
    let var = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    if var <= 0.0 {
        return (1.0, Method::Normal);
    }
    let d = v - m / 2.0;
    let z = (d - 0.5 * d.signum()) / var.sqrt();
    ((2.0 * normal_sf(z.abs())).min(1.0), Method::Normal)
}

/// The sign-test interval of the median of the sorted `s`: the order
/// statistics k and n - k + 1 (from 1), k the largest with
/// P(Binomial(n, 1/2) <= k - 1) <= alpha/2; [min, max] when none is.
fn sign_interval(s: &[f64], alpha: f64) -> Interval {
    let n = s.len();
    let b = Binomial::new(0.5, n as u64).expect("p = 1/2");
    // Largest j = k - 1 with cdf(j) <= alpha/2, by bisection (monotone).
    if b.cdf(0) > alpha / 2.0 {
        return Interval {
            lo: s[0],
            hi: s[n - 1],
        };
    }
    let (mut lo, mut hi) = (0u64, n as u64 / 2);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if b.cdf(mid) <= alpha / 2.0 {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let k = lo as usize + 1;
    Interval {
        lo: s[k - 1],
        hi: s[n - k],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{Normal, rng};

    fn conf(p: f64) -> Confidence {
        Confidence::percent(p)
    }

    /// Every Walsh average, sorted, by brute force.
    fn walsh(d: &[f64]) -> Vec<f64> {
        let mut s = d.to_vec();
        s.sort_by(f64::total_cmp);
        let mut w = Vec::new();
        for i in 0..s.len() {
            for j in i..s.len() {
                w.push((s[i] + s[j]) / 2.0);
            }
        }
        w.sort_by(f64::total_cmp);
        w
    }

    /// P(V <= v) by enumerating the 2^n sign patterns.
    fn enumerated_cdf(n: usize, v: usize) -> f64 {
        let mut hits = 0u64;
        for mask in 0u64..1 << n {
            let s: usize = (0..n).filter(|r| mask >> r & 1 == 1).map(|r| r + 1).sum();
            hits += u64::from(s <= v);
        }
        hits as f64 / (1u64 << n) as f64
    }

    #[test]
    fn counts_match_enumeration() {
        for n in [1, 2, 5, 9, 12] {
            let c = signrank_counts(n);
            let total = 2f64.powi(n as i32);
            assert_eq!(c.iter().sum::<f64>(), total);
            let mut cdf = 0.0;
            for (v, x) in c.iter().enumerate() {
                cdf += x;
                assert!((cdf / total - enumerated_cdf(n, v)).abs() < 1e-15);
            }
        }
    }

    #[test]
    #[allow(clippy::approx_constant)] // R's data, not pi
    fn r_wilcox_paired_example() {
        // ?wilcox.test, "Hollander & Wolfe (1973), 29f.: Hamilton
        // depression scale factor measurements in 9 patients with mixed
        // anxiety and depression": wilcox.test(x, y, paired = TRUE,
        // alternative = "greater") gives V = 40, p-value = 0.01953, so
        // the two-sided p is 0.03906 (= 2 * 10/512).
        let x = [1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30];
        let y = [0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29];
        let d: Vec<f64> = x.iter().zip(&y).map(|(x, y)| x - y).collect();
        let r = of_log_ratios(&d, Direction::Lower, conf(95.0)).unwrap();
        assert_eq!(r.method, Method::Exact);
        assert!((r.p - 20.0 / 512.0).abs() < 1e-12, "{r:?}");
        // The interval: Walsh averages of rank q and 46 - q, q =
        // qsignrank(0.025, 9) = 6 (P(V <= 5) = 10/512 < 0.025 <=
        // P(V <= 6) = 14/512); achieved 1 - 2 * 10/512.
        let w = walsh(&d);
        assert_eq!(w.len(), 45);
        assert!(enumerated_cdf(9, 5) < 0.025 && enumerated_cdf(9, 6) >= 0.025);
        assert_eq!(
            r.log_interval,
            Interval {
                lo: w[5],
                hi: w[39]
            }
        );
        assert!((r.achieved - (1.0 - 20.0 / 512.0)).abs() < 1e-12);
        // Hodges-Lehmann: the 23rd of the 45 averages.
        assert_eq!(r.log_ratio, w[22]);
        assert!(r.too_few.is_none() && r.significant());
    }

    #[test]
    fn order_statistics_match_brute_force() {
        let mut g = rng(5);
        for n in [1, 2, 3, 7, 30, 61] {
            let d: Vec<f64> = (0..n)
                .map(|_| (g.uniform() * 40.0).round() / 10.0 - 2.0)
                .collect();
            let w = walsh(&d);
            let mut s = d.clone();
            s.sort_by(f64::total_cmp);
            for k in [0, w.len() / 3, w.len() / 2, w.len() - 1] {
                assert_eq!(kth_walsh(&s, k as u64), w[k], "n {n} k {k}");
            }
        }
    }

    #[test]
    fn exact_and_normal_critical_ranks_meet_at_the_switch() {
        // n = 50 is counted, 51 approximated: the ranks agree to within
        // one, and the achieved confidence stays at or above 95%.
        let (q50, a50) = critical_rank(50, 0.05);
        let (q51, a51) = critical_rank(51, 0.05);
        assert!(a50 <= 0.05 && a51 <= 0.0501, "{a50} {a51}");
        // The normal q at 50 would be within one of the exact one.
        let nf = 50.0f64;
        let sd = (nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0).sqrt();
        let qn = (1275.0 / 2.0 - 0.5 - 1.959964 * sd).ceil() as u64;
        assert!(q50.abs_diff(qn) <= 1, "{q50} {qn}");
        assert!(q51 > q50);
    }

    #[test]
    fn too_few_rounds_say_so_and_never_decide() {
        // Five rounds all +10%: the widest interval reaches only
        // 1 - 2/32 = 93.75% < 95%.
        let pairs: Vec<(f64, f64)> = (0..5)
            .map(|i| (100.0 + i as f64, 110.0 + 1.1 * i as f64))
            .collect();
        let r = paired(&pairs, Direction::Lower, conf(95.0)).unwrap();
        assert_eq!(r.too_few.map(|t| t.need), Some(6));
        assert!((r.achieved - 0.9375).abs() < 1e-12);
        assert_eq!(r.against(0.05), Against::Straddles);
        assert_eq!(r.verdict(0.01), Verdict::TooFew);
        assert!(!r.significant());
        // Six rounds suffice at 95%, eight at 99%.
        let six: Vec<(f64, f64)> = (0..6)
            .map(|i| (100.0 + i as f64, 110.0 + 1.2 * i as f64))
            .collect();
        let r = paired(&six, Direction::Lower, conf(95.0)).unwrap();
        assert!(r.too_few.is_none() && r.significant(), "{r:?}");
        assert_eq!(r.against(0.05), Against::Past);
        let r = paired(&six, Direction::Lower, conf(99.0)).unwrap();
        assert_eq!(r.too_few.map(|t| t.need), Some(8));
    }

    #[test]
    fn bad_values_are_refused() {
        assert_eq!(
            paired(&[], Direction::Lower, conf(95.0)),
            Err(PairedError::Empty)
        );
        assert_eq!(
            paired(&[(1.0, 2.0), (0.0, 1.0)], Direction::Lower, conf(95.0)),
            Err(PairedError::NotPositive {
                index: 1,
                value: 0.0
            })
        );
        assert!(paired(&[(1.0, f64::NAN)], Direction::Lower, conf(95.0)).is_err());
        assert!(paired(&[(-1.0, 1.0)], Direction::Lower, conf(95.0)).is_err());
    }

    #[test]
    fn constant_rounds() {
        // Equal arms: no change, a zero-width interval at 0, p = 1.
        let same = vec![(5.0, 5.0); 10];
        let r = paired(&same, Direction::Lower, conf(95.0)).unwrap();
        assert_eq!((r.log_ratio, r.p), (0.0, 1.0));
        assert_eq!(r.change_interval(), Interval { lo: 0.0, hi: 0.0 });
        assert_eq!(r.verdict(0.01), Verdict::Equivalent);
        // Every round exactly 2x: a ratio of 2 with no doubt.
        let twice = vec![(5.0, 10.0); 10];
        let r = paired(&twice, Direction::Lower, conf(95.0)).unwrap();
        assert!((r.change() - 1.0).abs() < 1e-12);
        assert!(r.p < 0.01 && r.significant());
    }

    #[test]
    fn directions_orient_the_worsening() {
        // Contender 10% lower in every round (+/- a little).
        let pairs: Vec<(f64, f64)> = (0..20)
            .map(|i| (100.0, 90.0 + (i % 5) as f64 * 0.1))
            .collect();
        let lower = paired(&pairs, Direction::Lower, conf(95.0)).unwrap();
        let higher = paired(&pairs, Direction::Higher, conf(95.0)).unwrap();
        assert!(lower.change() < -0.09 && lower.change_interval().hi < 0.0);
        // A time 10% lower is better: below -5%.
        assert_eq!(lower.against(0.05), Against::Below);
        // A throughput 10% lower is worse: past 5%.
        assert_eq!(higher.against(0.05), Against::Past);
        assert_eq!(higher.against(0.2), Against::Within);
        assert!(higher.worsening().0 > 0.09);
    }

    #[test]
    fn bounds_never_pass_minus_100_percent() {
        // Wild ratios (1000x either way) still map to ratios above 0.
        let pairs: Vec<(f64, f64)> = (0..12)
            .map(|i| (1.0, if i % 2 == 0 { 1e-3 } else { 1e3 }))
            .collect();
        let r = paired(&pairs, Direction::Lower, conf(99.0)).unwrap();
        let c = r.change_interval();
        assert!(c.lo > -1.0 && r.log_interval.lo.exp() > 0.0, "{c:?}");
    }

    #[test]
    fn a_burst_in_one_arm_does_not_hide_a_steady_change() {
        // A real bisection under load: 26 rounds at +6..+11%, four burst rounds
        // at -36%, -33%, -2%, +27%. The robust interval stays within the
        // steady rounds and excludes 0; a paired t would not.
        let mut d: Vec<f64> = (0..26)
            .map(|i| (1.06 + 0.05 * (i as f64 / 25.0)).ln())
            .collect();
        d.extend([0.64f64.ln(), 0.67f64.ln(), 0.98f64.ln(), 1.27f64.ln()]);
        let r = of_log_ratios(&d, Direction::Lower, conf(99.0)).unwrap();
        let c = r.change_interval();
        assert!(c.lo > 0.05 && c.hi < 0.11, "{c:?}");
        let s = r.sign_interval;
        assert!(s.lo.exp_m1() > 0.05 && s.hi.exp_m1() < 0.11, "{s:?}");
        let t = crate::stats::Sample::new(&d).unwrap();
        let tci = t.mean_ci(conf(99.0)).unwrap();
        assert!(tci.lo < 0.0, "paired t interval {tci:?}");
    }

    /// Share of `trials` simulated comparisons of `n` rounds whose 95%
    /// interval covers the true log ratio `delta`, with shared round noise
    /// (drift) and heavy-tailed one-arm bursts.
    fn coverage(seed: u64, trials: usize, n: usize, delta: f64) -> f64 {
        let mut g = rng(seed);
        let noise = Normal::new(0.0, 0.02);
        let mut covered = 0;
        for _ in 0..trials {
            let pairs: Vec<(f64, f64)> = (0..n)
                .map(|i| {
                    let round = 1.0 + 0.3 * (i as f64 / 7.0).sin() + 0.2 * g.uniform();
                    let a = 100.0 * round * noise.one(&mut g).exp();
                    let b = 100.0 * round * (delta + noise.one(&mut g)).exp();
                    (a, b)
                })
                .collect();
            let r = paired(&pairs, Direction::Lower, conf(95.0)).unwrap();
            covered += usize::from(r.log_interval.contains(delta));
        }
        covered as f64 / trials as f64
    }

    #[test]
    fn the_interval_covers_the_truth_as_often_as_it_says() {
        for (seed, n) in [(1, 8), (2, 20), (3, 60)] {
            let c = coverage(seed, 1000, n, 0.05);
            eprintln!("paired, {n} rounds: 95% interval covers in {c}");
            assert!((0.93..=0.975).contains(&c), "n {n}: coverage {c}");
        }
    }

    #[test]
    fn sign_interval_by_hand() {
        // n = 10 at 95%: P(B <= 1) = 11/1024 = 0.0107 <= 0.025 <
        // P(B <= 2) = 56/1024, so k = 2: the 2nd and 9th values.
        let s: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(sign_interval(&s, 0.05), Interval { lo: 2.0, hi: 9.0 });
        // n = 5: even the extremes reach only 1 - 2/32.
        assert_eq!(sign_interval(&s[..5], 0.05), Interval { lo: 1.0, hi: 5.0 });
    }

    /// Share of `trials` decisions of a candidate against the good end,
    /// measured in the same `n` rounds of a busy machine (drift, and a
    /// burst of +30..+80% on one arm in 1 round of 10), with a true
    /// regression `delta`, that come out `past` (like bad) and `below or
    /// within` (like good) a 5% threshold at 99%.
    fn bisect_calls(seed: u64, trials: usize, n: usize, delta: f64) -> (f64, f64) {
        let mut g = rng(seed);
        let (mut bad, mut good) = (0, 0);
        for _ in 0..trials {
            let pairs: Vec<(f64, f64)> = (0..n as u32)
                .map(|i| crate::stats::sim::busy_round(&mut g, i, 0.0, delta))
                .collect();
            match paired(&pairs, Direction::Lower, conf(99.0))
                .unwrap()
                .against(0.05)
            {
                Against::Past => bad += 1,
                Against::Below | Against::Within => good += 1,
                Against::Straddles => {}
            }
        }
        (bad as f64 / trials as f64, good as f64 / trials as f64)
    }

    #[test]
    fn bisect_decision_calibration() {
        // A fixed number of rounds, as one look of bisect's sampler: no
        // regression is never called bad, 8% against a 5% threshold never
        // good, 2% never bad; the rest is undecided (bisect samples on),
        // less of it with more rounds.
        let (bad0, good0) = bisect_calls(41, 1000, 30, 0.0);
        let (bad8, good8) = bisect_calls(42, 1000, 30, 0.08);
        let (bad2, good2) = bisect_calls(43, 1000, 30, 0.02);
        let (bad0l, good0l) = bisect_calls(44, 1000, 60, 0.0);
        let (bad8l, good8l) = bisect_calls(45, 1000, 60, 0.08);
        eprintln!(
            "bisect calls at a 5% threshold, 99%: 30 rounds: +0%: bad {bad0} good {good0}; +2%: bad {bad2} good {good2}; +8%: bad {bad8} good {good8}; 60 rounds: +0%: bad {bad0l} good {good0l}; +8%: bad {bad8l} good {good8l}"
        );
        assert!(bad0 <= 0.005 && bad0l <= 0.005, "{bad0} {bad0l}");
        assert!(bad2 <= 0.01, "{bad2}");
        assert!(good8 <= 0.005 && good8l <= 0.005, "{good8} {good8l}");
        assert!(good0 >= 0.6 && good0l > good0, "{good0} {good0l}");
        assert!(bad8 >= 0.4 && bad8l > bad8, "{bad8} {bad8l}");
    }
}
