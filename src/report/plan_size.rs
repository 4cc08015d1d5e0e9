//! `kbench plan-size PILOT --margin 1%`: how many samples each cell needs
//! for a comparison to detect a change of the margin, from the spread a
//! pilot run (or campaign) measured.
//!
//! For each benchmark, metric and cell the model keeps the pilot's size,
//! mean and CV, the smallest change a comparison of two sets of the
//! pilot's size detects with 80% power, and the size per side that
//! detects the margin (`stats::power`), assuming the contender spreads
//! like the pilot. With `--processes` samples whose processes differ, the
//! unit is the process (or boot) mean: the answer counts processes.

use serde::Serialize;

use super::compare::{Selection, links, process_values, values};
use crate::record::Direction;
use crate::stats::nested::{self, ErrorTerm};
use crate::stats::power::{self, POWER};
use crate::stats::{Confidence, Sample};

/// One benchmark x metric x cell of the pilot.
#[derive(Clone, Debug, Serialize)]
pub struct SizeRow {
    pub bench: String,
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// The remaining factors and parameters that identify the cell.
    pub cell: String,
    /// What is counted: samples, or process (boot) means.
    pub term: ErrorTerm,
    /// The pilot's units (samples or processes) and their mean and CV.
    pub n: usize,
    pub mean: f64,
    pub cv: f64,
    /// Smallest relative change two sets of `n` detect with 80% power.
    pub detectable: Option<f64>,
    /// Units per side that detect the margin with 80% power.
    pub need: Option<usize>,
}

/// The whole answer.
#[derive(Clone, Debug, Serialize)]
pub struct PlanSize {
    pub pilot: String,
    pub confidence: f64,
    pub power: f64,
    pub margin: f64,
    pub rows: Vec<SizeRow>,
}

/// Sizes for every cell of `pilot` to detect `margin` (a fraction).
pub fn plan_size(pilot: &Selection, confidence: f64, margin: f64) -> PlanSize {
    let conf = Confidence::percent(confidence);
    let alpha = conf.alpha();
    let links = links(std::slice::from_ref(pilot));
    let procs = process_values(pilot, &links);
    let mut rows = Vec::new();
    for (key, (unit, direction, all)) in values(pilot, &links) {
        let term = procs
            .get(&key)
            .and_then(|g| nested::components(g, conf))
            .map_or(ErrorTerm::Samples, |c| c.term);
        let units = match (term, procs.get(&key)) {
            (ErrorTerm::Samples, _) | (_, None) => all,
            (t, Some(g)) => nested::units(g, t),
        };
        let Ok(s) = Sample::new(&units) else {
            continue;
        };
        let base = s.mean().abs();
        let sd = s.stddev();
        rows.push(SizeRow {
            bench: key.0,
            metric: key.1,
            unit,
            direction,
            cell: key.2,
            term,
            n: s.len(),
            mean: s.mean(),
            cv: s.cv(),
            detectable: power::detectable_difference(sd, sd, s.len(), s.len(), alpha, POWER)
                .filter(|_| base > 0.0)
                .map(|d| d / base),
            need: (base > 0.0 && s.len() >= 2)
                .then(|| power::samples_for(sd, sd, margin * base, alpha, POWER))
                .flatten(),
        });
    }
    PlanSize {
        pilot: pilot.name.clone(),
        confidence,
        power: POWER,
        margin,
        rows,
    }
}

/// The answer as text: one line per cell.
pub fn text(o: &mut String, p: &PlanSize) {
    use std::fmt::Write;
    let _ = writeln!(
        o,
        "samples per side to detect a change of +/-{}% ({:.0}% power, {}% confidence, Welch), from {}:",
        p.margin * 100.0,
        p.power * 100.0,
        p.confidence,
        p.pilot
    );
    for r in &p.rows {
        let cell = if r.cell.is_empty() {
            String::new()
        } else {
            format!(" [{}]", r.cell)
        };
        let what = match r.term {
            ErrorTerm::Samples => "samples",
            ErrorTerm::ProcessMeans => "processes",
            ErrorTerm::BootMeans => "boots",
        };
        let need = r
            .need
            .map_or_else(|| "too many (over 10^7)".to_string(), |n| n.to_string());
        let det = r
            .detectable
            .map_or_else(|| "-".to_string(), |d| format!("+/-{:.2}%", d * 100.0));
        o.push_str(&super::grid::wrap(
            &format!(
                "  {} {}{cell}: {need} {what} a side (pilot: {} {what}, CV {:.2}%, detects {det})",
                r.bench,
                r.metric,
                r.n,
                r.cv * 100.0
            ),
            super::text::WIDTH,
            "      ",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::fake::Fake;
    use crate::store::memory::MemoryStore;
    use crate::testing::{self, bench, ns, options, plan};

    #[test]
    fn sizes_follow_the_pilots_spread() {
        let mut st = MemoryStore::new();
        // Variant 1 wobbles by about 1%, variant 2 by about 5%.
        let p = plan(
            "pilot",
            vec![bench(
                Fake::new("w", ns(), |v, i| {
                    let k = if v == 1 { 1.0 } else { 5.0 };
                    100.0 + k * [-1.0, 1.0, 0.5, -0.5, 0.0][i as usize % 5]
                }),
                &[1, 2],
            )],
        );
        testing::run(&mut st, &p, &options(10, 0), None);
        let op = crate::select::resolve(&st, "1").unwrap();
        let sel = Selection {
            name: "1".into(),
            fixed: vec![],
            cells: crate::select::narrow(
                &op,
                crate::store::StoreRead::cells(&st, op.scope).unwrap(),
            )
            .unwrap(),
            runs: Default::default(),
        };
        let ps = plan_size(&sel, 95.0, 0.01);
        assert_eq!(ps.rows.len(), 2);
        let (a, b) = (&ps.rows[0], &ps.rows[1]);
        assert_eq!((a.n, a.term), (10, ErrorTerm::Samples));
        let sd = Sample::new(&[99.0, 101.0, 100.5, 99.5, 100.0])
            .unwrap()
            .stddev();
        let want = power::samples_for(sd, sd, 1.0, 0.05, POWER);
        // The pilot's 10 values repeat the 5 above: nearly the same sd.
        assert!(
            a.need.unwrap().abs_diff(want.unwrap()) <= 1,
            "{a:?} {want:?}"
        );
        // Five times the spread: about 25 times the samples.
        let r = b.need.unwrap() as f64 / a.need.unwrap() as f64;
        assert!((20.0..30.0).contains(&r), "{r}");
        assert!(b.detectable.unwrap() > a.detectable.unwrap());
        let mut o = String::new();
        text(&mut o, &ps);
        assert!(o.contains("samples a side (pilot: 10 samples"), "{o}");
    }
}
