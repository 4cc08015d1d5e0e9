//! Chart axes, one piece for every chart: round ("nice") ticks that
//! include the reference value (0%, a ratio of 1), labels with the digits
//! the tick step needs, and logarithmic scales (base 2 for task counts,
//! base 10 for values). Renderers map values through [`Axis::at`] and
//! print [`Axis::label`]; no chart computes its own ticks.

/// About how many intervals a linear axis is cut into.
const TARGET_TICKS: f64 = 6.0;

/// One axis: its range, scale and ticks.
#[derive(Clone, Debug)]
pub struct Axis {
    /// The range shown, in data units.
    pub lo: f64,
    pub hi: f64,
    /// Logarithmic with this base (2 or 10); `None` for linear.
    pub log: Option<f64>,
    /// Tick values, ascending, inside `lo..=hi`.
    pub ticks: Vec<f64>,
    /// Digits after the point each label needs.
    decimals: usize,
    /// Multiplier and unit of the labels (`1e-6`, `Mops/s`).
    scale: f64,
    unit: String,
}

/// A round step near `raw`: 1, 2 or 5 times a power of ten.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let m = if norm <= 1.0 {
        1.0
    } else if norm <= 2.0 {
        2.0
    } else if norm <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// Digits after the point that show a multiple of `step` exactly.
fn decimals_of(step: f64) -> usize {
    let mut d = 0;
    while d < 9
        && ((step * 10f64.powi(d as i32)).round() - step * 10f64.powi(d as i32)).abs() > 1e-6
    {
        d += 1;
    }
    d
}

impl Axis {
    /// A linear axis over `lo..hi` with round ticks through `reference`
    /// (every tick is `reference + k * step`), the range widened to whole
    /// steps and to hold the reference.
    pub fn linear(lo: f64, hi: f64, reference: f64) -> Axis {
        let (mut lo, mut hi) = (lo.min(reference), hi.max(reference));
        if !(lo.is_finite() && hi.is_finite()) {
            (lo, hi) = (reference - 1.0, reference + 1.0);
        }
        if hi <= lo {
            let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
            (lo, hi) = (lo - pad, hi + pad);
        }
        let step = nice_step((hi - lo) / TARGET_TICKS);
        let k0 = ((lo - reference) / step + 1e-9).floor();
        let k1 = ((hi - reference) / step - 1e-9).ceil();
        let ticks: Vec<f64> = (k0 as i64..=k1 as i64)
            .map(|k| clean(reference + k as f64 * step, step))
            .collect();
        Axis {
            lo: reference + k0 * step,
            hi: reference + k1 * step,
            log: None,
            decimals: decimals_of(step).max(decimals_of(reference)),
            ticks,
            scale: 1.0,
            unit: String::new(),
        }
    }

    /// A linear axis over `lo..hi` with no reference value: round ticks
    /// at whole multiples of the step (a history's raw values).
    pub fn span(lo: f64, hi: f64) -> Axis {
        let step = nice_step((hi - lo).abs() / TARGET_TICKS);
        let reference = if lo.is_finite() {
            (lo / step).floor() * step
        } else {
            0.0
        };
        Axis::linear(lo, hi, clean(reference, step))
    }

    /// A logarithmic axis over `lo..hi` (both > 0): ticks at the powers of
    /// `base` (2 or 10) it spans, with 2 and 5 times them when it spans
    /// less than two decades of ten.
    pub fn log(lo: f64, hi: f64, base: f64) -> Axis {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1.0 };
        let hi = if hi > lo && hi.is_finite() {
            hi
        } else {
            lo * base
        };
        let e0 = (lo.log(base) + 1e-9).floor() as i32;
        let e1 = (hi.log(base) - 1e-9).ceil() as i32;
        let mut ticks: Vec<f64> = (e0..=e1).map(|e| base.powi(e)).collect();
        if base == 10.0 && e1 - e0 <= 2 {
            ticks = (e0..=e1)
                .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
                .collect();
        }
        // The range from the last tick at or below the data to the first
        // at or above it.
        let first = ticks
            .iter()
            .rposition(|t| *t <= lo * (1.0 + 1e-9))
            .unwrap_or(0);
        let last = ticks
            .iter()
            .position(|t| *t >= hi * (1.0 - 1e-9))
            .unwrap_or(ticks.len() - 1);
        let mut ticks: Vec<f64> = ticks[first..=last.max(first)].to_vec();
        if ticks.len() < 2 {
            ticks.push(ticks[0] * base);
        }
        let (lo, hi) = (ticks[0], ticks[ticks.len() - 1]);
        let decimals = ticks.iter().map(|t| decimals_of(*t)).max().unwrap_or(0);
        Axis {
            lo,
            hi,
            log: Some(base),
            ticks,
            decimals,
            scale: 1.0,
            unit: String::new(),
        }
    }

    /// Labels in `unit` scaled to the prefix of the axis' largest value
    /// (`1.5 Mops/s`), with the digits the tick step needs there.
    pub fn in_unit(mut self, unit: &str) -> Axis {
        let top = self.ticks.iter().fold(0.0f64, |a, t| a.max(t.abs()));
        if top > 0.0 {
            let (scaled, u, _) = super::human::scale(top, unit, None, false);
            self.scale = scaled / top;
            self.unit = u;
            let steps: Vec<f64> = self.ticks.iter().map(|t| t * self.scale).collect();
            self.decimals = steps
                .windows(2)
                .map(|w| {
                    if self.log.is_some() {
                        decimals_of(w[0]).max(decimals_of(w[1]))
                    } else {
                        decimals_of(w[1] - w[0])
                    }
                })
                .chain(steps.first().map(|t| decimals_of(*t)))
                .max()
                .unwrap_or(0);
        } else {
            self.unit = unit.to_string();
        }
        self
    }

    /// Where `v` falls on the axis, 0 at `lo` and 1 at `hi` (outside for
    /// values off the range; a log axis puts values <= 0 far below).
    pub fn at(&self, v: f64) -> f64 {
        match self.log {
            Some(b) => {
                let v = if v > 0.0 { v } else { self.lo / 1e6 };
                (v.log(b) - self.lo.log(b)) / (self.hi.log(b) - self.lo.log(b))
            }
            None => (v - self.lo) / (self.hi - self.lo),
        }
    }

    /// A tick's label: the value in the axis' unit with the step's digits.
    pub fn label(&self, v: f64) -> String {
        // Log ticks (0.5, 1, 2, 5) each show their own digits.
        let d = match self.log {
            Some(_) => decimals_of(v * self.scale),
            None => self.decimals,
        };
        let s = format!("{:.d$}", v * self.scale);
        let s = match s.strip_prefix('-') {
            // `-0` is zero.
            Some(z) if z.chars().all(|c| c == '0' || c == '.') => z.to_string(),
            _ => s,
        };
        if self.unit.is_empty() {
            s
        } else {
            format!("{s} {}", self.unit)
        }
    }
}

/// `v` without the binary noise of `reference + k * step` (0.30000000004).
fn clean(v: f64, step: f64) -> f64 {
    let d = decimals_of(step) as i32 + 1;
    let p = 10f64.powi(d);
    (v * p).round() / p
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// Every label is a round number: a linear axis' ticks are one
    /// round step apart (1, 2 or 5 times a power of ten) and show no more
    /// digits than the step has; a log axis' ticks are 1, 2 or 5 times a
    /// power of ten, or powers of two. With a reference, it is a tick
    /// whose label is its value. Charts' tests call this on the ticks they
    /// drew.
    pub fn assert_round(labels: &[String], reference: Option<f64>) {
        assert!(labels.len() >= 2, "{labels:?}");
        let num = |l: &String| -> (f64, usize) {
            let n = l.split(' ').next().unwrap_or(l).trim_end_matches('%');
            let v = n
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("tick label {l:?} is not a number"));
            (v, n.split('.').nth(1).map_or(0, str::len))
        };
        let nums: Vec<(f64, usize)> = labels.iter().map(num).collect();
        let steps: Vec<f64> = nums.windows(2).map(|w| w[1].0 - w[0].0).collect();
        let nice = |x: f64| {
            let m = x / 10f64.powf(x.log10().floor());
            [1.0, 2.0, 5.0, 10.0].iter().any(|k| (m - k).abs() < 1e-6)
        };
        if steps
            .iter()
            .all(|s| (s - steps[0]).abs() <= steps[0].abs() * 1e-6)
        {
            assert!(
                steps[0] > 0.0 && nice(steps[0]),
                "step {}: {labels:?}",
                steps[0]
            );
            let d = decimals_of(steps[0]);
            for ((v, digits), l) in nums.iter().zip(labels) {
                assert!(
                    *digits <= d.max(1),
                    "tick {l:?} has more digits than its step: {labels:?}"
                );
                let k = (v - nums[0].0) / steps[0];
                assert!(
                    (k - k.round()).abs() < 1e-6,
                    "tick {l:?} is off the step: {labels:?}"
                );
            }
        } else {
            for ((v, _), l) in nums.iter().zip(labels) {
                let pow2 = v.log2().fract().abs() < 1e-9;
                assert!(nice(*v) || pow2, "log tick {l:?} is not round: {labels:?}");
            }
        }
        if let Some(r) = reference {
            assert!(
                nums.iter().any(|(n, _)| (n - r).abs() < 1e-12),
                "no tick at the reference {r}: {labels:?}"
            );
        }
    }

    #[test]
    fn linear_ticks_are_round_and_hold_the_reference() {
        // The case: quarters of the data range gave -130|-64|1|66|132.
        let a = Axis::linear(-130.0, 132.0, 0.0);
        let l: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(l, ["-150", "-100", "-50", "0", "50", "100", "150"]);
        // A ratio axis near 1: the 1.0 line is a tick labelled 1.00.
        let a = Axis::linear(0.93, 1.08, 1.0);
        let l: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_round(&l, Some(1.0));
        assert!(l.contains(&"1.00".to_string()), "{l:?}");
        // History-like raw values: 85..640.
        let a = Axis::span(85.0, 640.0);
        let l: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_round(&l, None);
        // A degenerate range still gets ticks.
        let a = Axis::linear(5.0, 5.0, 5.0);
        assert!(a.ticks.len() >= 2);
        assert!(a.lo < 5.0 && a.hi > 5.0);
    }

    #[test]
    fn log_ticks_and_positions() {
        let a = Axis::log(1.0, 48.0, 2.0);
        assert_eq!(a.ticks, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
        assert!((a.at(1.0)).abs() < 1e-12 && (a.at(64.0) - 1.0).abs() < 1e-12);
        assert!((a.at(8.0) - 0.5).abs() < 1e-12);
        let a = Axis::log(9.0e5, 2.6e6, 10.0).in_unit("ops/s");
        let l: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_round(&l, None);
        assert!(l.contains(&"1 Mops/s".to_string()), "{l:?}");
        // Nothing at or below zero breaks it.
        assert!(a.at(0.0) < 0.0);
        assert_eq!(a.ticks.first(), Some(&5e5));
        assert_eq!(a.ticks.last(), Some(&5e6));
        // One value still spans a range.
        let a = Axis::log(4.0, 4.0, 2.0);
        assert_eq!(a.ticks, [4.0, 8.0]);
    }

    #[test]
    fn labels_in_a_unit_follow_the_step() {
        let a = Axis::linear(0.0, 2.6e6, 0.0).in_unit("ops/s");
        let l: Vec<String> = a.ticks.iter().map(|t| a.label(*t)).collect();
        assert_eq!(l[0], "0.0 Mops/s");
        assert!(l.contains(&"1.5 Mops/s".to_string()), "{l:?}");
        assert_round(&l, Some(0.0));
    }
}
