//! Variance across processes and boots: a nested random-effects analysis
//! of variance, and comparisons that use the right error term.
//!
//! One process's samples understate the variance a fresh process (another
//! memory layout, environment size, stack alignment), a rebuild or a
//! reboot brings (Mytkowicz et al., "Producing Wrong Data Without Doing
//! Anything Obviously Wrong!", ASPLOS 2009; Curtsinger & Berger,
//! "STABILIZER", ASPLOS 2013). With samples taken in several processes,
//! on one or more boots, the model is
//!
//! ```text
//! x = μ + B(boot) + P(process within boot) + e,
//! Var B = σ²_boot, Var P = σ²_process, Var e = σ²_within
//! ```
//!
//! [`components`] estimates the three variances by the method of moments
//! of the nested ANOVA, with the coefficients for unequal group sizes
//! (Sokal & Rohlf, "Biometry", 4th ed., section 10.3), and tests whether
//! processes differ (F = MS_process / MS_within).
//!
//! Samples of one process are not independent draws of what a fresh
//! process would measure: when processes differ, a test that treats all
//! samples as independent has a standard error too small and finds
//! differences that are not there. [`components`] picks the unit of the
//! mean's interval (the error term): the samples when the levels above do
//! not differ, the process means when processes do, the boot means when
//! boots do. The choice uses Bancroft's "sometimes pool" rule with the
//! lenient pooling level 0.25 (Bancroft 1944; Hines 1996, "Pooling in
//! ANOVA"): a level is pooled into the one below only when its F test has
//! p > 0.25, which keeps the coverage near the nominal one whether or not
//! processes really differ (simulations below). Comparisons of two
//! operands use the same rule in `stats::design`.

use serde::Serialize;

use super::dist::f_sf;
use super::{Confidence, Interval, Sample};

/// The values one process measured, and the boot it ran on.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    /// The kernel's boot id (any label: processes with equal labels ran
    /// on the same boot).
    pub boot: String,
    pub values: Vec<f64>,
}

/// A level is kept apart (not pooled into the one below) when its F test
/// has p below this.
pub const POOL_P: f64 = 0.25;

/// The variance components of one set of processes.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Components {
    /// Boots, processes and values seen.
    pub boots: usize,
    pub processes: usize,
    pub n: usize,
    pub mean: f64,
    /// σ²_boot; `None` with one boot.
    pub between_boots: Option<f64>,
    /// σ²_process (within a boot); `None` with one process per boot.
    pub between_processes: Option<f64>,
    /// σ²_within (between samples of one process).
    pub within: f64,
    /// F test of "processes differ": p-value (`None` without the df).
    pub process_p: Option<f64>,
    /// F test of "boots differ" against the processes within them.
    pub boot_p: Option<f64>,
    /// The unit the mean's interval is taken over.
    pub term: ErrorTerm,
    /// Interval of the mean with that unit.
    pub interval: Option<Interval>,
    /// Interval of the mean treating every value as independent (what a
    /// one-process analysis says).
    pub naive_interval: Option<Interval>,
}

impl Components {
    /// Each component's share of the total variance, in the order boots,
    /// processes, within (absent components count 0).
    pub fn shares(&self) -> [f64; 3] {
        let b = self.between_boots.unwrap_or(0.0);
        let p = self.between_processes.unwrap_or(0.0);
        let t = b + p + self.within;
        if t > 0.0 {
            [b / t, p / t, self.within / t]
        } else {
            [0.0, 0.0, 1.0]
        }
    }
}

/// The unit a test or interval treats as independent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorTerm {
    /// Every sample (processes and boots do not differ measurably).
    Samples,
    /// The mean of each process.
    ProcessMeans,
    /// The mean of each boot.
    BootMeans,
}

impl ErrorTerm {
    pub fn label(self) -> &'static str {
        match self {
            ErrorTerm::Samples => "samples",
            ErrorTerm::ProcessMeans => "process means",
            ErrorTerm::BootMeans => "boot means",
        }
    }
}

/// Sums of squares and degrees of freedom of the nested ANOVA.
#[derive(Clone, Copy, Debug, Default)]
struct Anova {
    ss_within: f64,
    df_within: f64,
    ss_proc: f64,
    df_proc: f64,
    ss_boot: f64,
    df_boot: f64,
    /// Coefficient of σ²_process in MS_process.
    n0: f64,
    /// Coefficients of σ²_process and σ²_boot in MS_boot.
    n0p: f64,
    n0pp: f64,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Processes grouped by boot, in first-seen order; empty groups dropped.
fn by_boot(groups: &[Group]) -> Vec<Vec<&[f64]>> {
    let mut boots: Vec<(&str, Vec<&[f64]>)> = Vec::new();
    for g in groups.iter().filter(|g| !g.values.is_empty()) {
        match boots.iter_mut().find(|(b, _)| *b == g.boot) {
            Some((_, v)) => v.push(&g.values),
            None => boots.push((&g.boot, vec![&g.values])),
        }
    }
    boots.into_iter().map(|(_, v)| v).collect()
}

fn anova(boots: &[Vec<&[f64]>]) -> Anova {
    let all: Vec<f64> = boots
        .iter()
        .flatten()
        .flat_map(|p| p.iter())
        .copied()
        .collect();
    let n = all.len() as f64;
    let grand = mean(&all);
    let k = boots.iter().map(Vec::len).sum::<usize>() as f64;
    let b = boots.len() as f64;
    let mut a = Anova::default();
    let (mut sum_nb2, mut sum_ni2_over_nb, mut sum_ni2) = (0.0, 0.0, 0.0);
    for procs in boots {
        let nb = procs.iter().map(|p| p.len()).sum::<usize>() as f64;
        let bmean = procs.iter().flat_map(|p| p.iter()).sum::<f64>() / nb;
        a.ss_boot += nb * (bmean - grand).powi(2);
        sum_nb2 += nb * nb;
        let mut ni2 = 0.0;
        for p in procs {
            let ni = p.len() as f64;
            let m = mean(p);
            a.ss_within += p.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
            a.ss_proc += ni * (m - bmean).powi(2);
            ni2 += ni * ni;
        }
        sum_ni2_over_nb += ni2 / nb;
        sum_ni2 += ni2;
    }
    a.df_within = n - k;
    a.df_proc = k - b;
    a.df_boot = b - 1.0;
    if a.df_proc > 0.0 {
        a.n0 = (n - sum_ni2_over_nb) / a.df_proc;
    }
    if a.df_boot > 0.0 {
        a.n0p = (sum_ni2_over_nb - sum_ni2 / n) / a.df_boot;
        a.n0pp = (n - sum_nb2 / n) / a.df_boot;
    }
    a
}

/// F test p of `ss1/df1` against `ss2/df2`; `None` without the df.
pub(crate) fn f_test(ss1: f64, df1: f64, ss2: f64, df2: f64) -> Option<f64> {
    if df1 <= 0.0 || df2 <= 0.0 {
        return None;
    }
    let (ms1, ms2) = (ss1 / df1, ss2 / df2);
    Some(if ms2 > 0.0 {
        f_sf(ms1 / ms2, df1, df2)
    } else if ms1 > 0.0 {
        0.0
    } else {
        1.0
    })
}

/// The unit to test with, from the F tests' p-values (Bancroft's rule).
fn choose(boot_p: Option<f64>, process_p: Option<f64>) -> ErrorTerm {
    if boot_p.is_some_and(|p| p < POOL_P) {
        ErrorTerm::BootMeans
    } else if process_p.is_some_and(|p| p < POOL_P) {
        ErrorTerm::ProcessMeans
    } else {
        ErrorTerm::Samples
    }
}

/// The values a test with `term` treats as independent.
pub fn units(groups: &[Group], term: ErrorTerm) -> Vec<f64> {
    match term {
        ErrorTerm::Samples => groups
            .iter()
            .flat_map(|g| g.values.iter())
            .copied()
            .collect(),
        ErrorTerm::ProcessMeans => groups
            .iter()
            .filter(|g| !g.values.is_empty())
            .map(|g| mean(&g.values))
            .collect(),
        ErrorTerm::BootMeans => by_boot(groups)
            .iter()
            .map(|procs| {
                let v: Vec<f64> = procs.iter().flat_map(|p| p.iter()).copied().collect();
                mean(&v)
            })
            .collect(),
    }
}

fn mean_interval(v: &[f64], conf: Confidence) -> Option<Interval> {
    Sample::new(v).ok()?.mean_ci(conf)
}

/// The variance components of the values of one operand's processes.
/// `None` without any value.
pub fn components(groups: &[Group], conf: Confidence) -> Option<Components> {
    let boots = by_boot(groups);
    let a = anova(&boots);
    let all = units(groups, ErrorTerm::Samples);
    if all.is_empty() {
        return None;
    }
    let within = if a.df_within > 0.0 {
        a.ss_within / a.df_within
    } else {
        0.0
    };
    let ms_proc = (a.df_proc > 0.0).then(|| a.ss_proc / a.df_proc);
    let between_processes = ms_proc
        .filter(|_| a.n0 > 0.0)
        .map(|ms| ((ms - within) / a.n0).max(0.0));
    let between_boots = (a.df_boot > 0.0 && a.n0pp > 0.0).then(|| {
        let ms_boot = a.ss_boot / a.df_boot;
        ((ms_boot - within - a.n0p * between_processes.unwrap_or(0.0)) / a.n0pp).max(0.0)
    });
    let process_p = f_test(a.ss_proc, a.df_proc, a.ss_within, a.df_within);
    // Boots against the processes within them (or, with one process per
    // boot, against the samples).
    let boot_p = if a.df_proc > 0.0 {
        f_test(a.ss_boot, a.df_boot, a.ss_proc, a.df_proc)
    } else {
        f_test(a.ss_boot, a.df_boot, a.ss_within, a.df_within)
    };
    let term = choose(boot_p, process_p);
    Some(Components {
        boots: boots.len(),
        processes: boots.iter().map(Vec::len).sum(),
        n: all.len(),
        mean: mean(&all),
        between_boots,
        between_processes,
        within,
        process_p,
        boot_p,
        term,
        interval: mean_interval(&units(groups, term), conf),
        naive_interval: mean_interval(&all, conf),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sim::{Normal, Rng, rng};

    fn g(boot: &str, v: &[f64]) -> Group {
        Group {
            boot: boot.into(),
            values: v.to_vec(),
        }
    }

    #[test]
    fn one_way_components_by_hand() {
        // Three processes of three values: means 2, 5, 8, grand mean 5.
        // SS_within = 3 x 2 = 6 on 6 df: MS_within = 1. SS_process =
        // 3 (9 + 0 + 9) = 54 on 2 df: MS = 27, n0 = 3, σ²_process =
        // (27 - 1) / 3 = 26/3. F = 27 on (2, 6): p = 0.000993.
        let gs = [
            g("b", &[1.0, 2.0, 3.0]),
            g("b", &[4.0, 5.0, 6.0]),
            g("b", &[7.0, 8.0, 9.0]),
        ];
        let c = components(&gs, Confidence::percent(95.0)).unwrap();
        assert_eq!((c.boots, c.processes, c.n), (1, 3, 9));
        assert!((c.within - 1.0).abs() < 1e-12);
        assert!((c.between_processes.unwrap() - 26.0 / 3.0).abs() < 1e-12);
        assert_eq!(c.between_boots, None);
        assert!((c.process_p.unwrap() - 0.000_993).abs() < 1e-5, "{c:?}");
        assert_eq!(c.term, ErrorTerm::ProcessMeans);
        // The interval over the three process means (2, 5, 8: sd 3,
        // t(0.975, 2) = 4.302653) is wider than the naive one.
        let iv = c.interval.unwrap();
        assert!((iv.hi - 5.0 - 4.302653 * 3.0 / 3f64.sqrt()).abs() < 1e-5);
        let nv = c.naive_interval.unwrap();
        assert!(iv.hi - iv.lo > 2.0 * (nv.hi - nv.lo));
        let s = c.shares();
        assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-12 && s[1] > 0.85);
    }

    #[test]
    fn equal_processes_pool_to_samples() {
        let gs = [
            g("b", &[1.0, 3.0]),
            g("b", &[1.0, 3.0]),
            g("b", &[3.0, 1.0]),
        ];
        let c = components(&gs, Confidence::default()).unwrap();
        assert_eq!(c.between_processes, Some(0.0));
        assert_eq!(c.term, ErrorTerm::Samples);
        assert_eq!(c.interval, c.naive_interval);
        assert!(components(&[], Confidence::default()).is_none());
    }

    #[test]
    fn boots_by_hand() {
        // Two boots of two processes of two values. Boot x: processes
        // (9, 11) and (10, 12), boot mean 10.5; boot y: (19, 21) and
        // (20, 22), mean 20.5; grand mean 15.5.
        // Within: each pair gives SS 2, 8 on 4 df, MS 2.
        // Processes within boots: means 10, 11 around 10.5 and 20, 21
        // around 20.5: SS = 4 x 2 x 0.25 = 2 on 2 df, MS 1 < MS_within,
        // so σ²_process = 0.
        // Boots: SS = 2 x 4 x 25 = 200 on 1 df; n0' = (2 + 2) - 16/8 = 2,
        // n0'' = 8 - 32/8 = 4: σ²_boot = (200 - 2 - 2 x 0) / 4 = 49.5.
        let gs = [
            g("x", &[9.0, 11.0]),
            g("x", &[10.0, 12.0]),
            g("y", &[19.0, 21.0]),
            g("y", &[20.0, 22.0]),
        ];
        let c = components(&gs, Confidence::default()).unwrap();
        assert_eq!((c.boots, c.processes), (2, 4));
        assert!((c.within - 2.0).abs() < 1e-12);
        assert_eq!(c.between_processes, Some(0.0));
        assert!((c.between_boots.unwrap() - 49.5).abs() < 1e-12, "{c:?}");
        assert_eq!(c.term, ErrorTerm::BootMeans);
    }

    /// An operand of `procs` processes of `n` values: each process's mean
    /// is `mean` plus an offset of spread `between`, each value adds noise
    /// of spread `within`.
    fn operand(
        r: &mut Rng,
        mean: f64,
        between: f64,
        within: f64,
        procs: usize,
        n: usize,
    ) -> Vec<Group> {
        (0..procs)
            .map(|_| {
                let m = Normal::new(mean, between).one(r);
                g("boot", &Normal::new(m, within).draw(r, n))
            })
            .collect()
    }

    #[test]
    fn the_process_interval_covers_the_true_mean() {
        // 1000 operands: the chosen interval covers the true mean about
        // 95% of the time; the naive one far less.
        let mut r = rng(5);
        let conf = Confidence::percent(95.0);
        let (mut cover, mut naive) = (0, 0);
        for _ in 0..1000 {
            let c = components(&operand(&mut r, 50.0, 1.0, 1.0, 5, 10), conf).unwrap();
            cover += usize::from(c.interval.unwrap().contains(50.0));
            naive += usize::from(c.naive_interval.unwrap().contains(50.0));
        }
        let (cover, naive) = (cover as f64 / 1000.0, naive as f64 / 1000.0);
        eprintln!("coverage of the 95% interval: chosen {cover}, naive {naive}");
        assert!((cover - 0.95).abs() <= 0.02, "coverage {cover}");
        assert!(naive < 0.85, "naive coverage {naive}");
    }
}
