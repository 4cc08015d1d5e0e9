//! The last section of the report of a run with two or more variants
//! (`kbench run 'sleep 0.01' 'sleep 0.013'`, `spin:work=1000
//! spin:work=1050`): each variant's primary metric, the first given (the
//! baseline) first, so the answer to "which is faster" is at the end of
//! the output where a hyperfine user looks for it.
//!
//! It holds what the report's tables already hold (each cell's median of
//! its first metric), and the verdict of each contender against the
//! baseline in words: the numbers of `kbench compare` of the same cells
//! (`super::of_variants`, the design-aware analysis), never a second
//! path.

use serde::Serialize;

use crate::record::Direction;
use crate::report::Group;

/// Most variants a summary lists; a bigger matrix is read in its tables
/// or a `--table` layout.
pub const MAX_VARIANTS: usize = 12;

#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// The primary metric every variant shares (a command's `real`, a
    /// micro-benchmark's `ns/op`).
    pub metric: String,
    pub unit: String,
    pub direction: Direction,
    /// In the order given: the first is the baseline.
    pub variants: Vec<Variant>,
    /// Each contender against the baseline, in words and numbers.
    pub verdicts: Vec<super::verdict::VerdictLine>,
    /// The variants are commands, or record metrics beyond the primary
    /// one: the text shows this summary in place of the tables unless
    /// every metric is asked for.
    #[serde(skip)]
    pub stands_for_tables: bool,
    /// How the variants group into comparisons, for the heading: `the
    /// baseline first` when they are one comparison.
    #[serde(skip)]
    pub order: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Variant {
    /// As the command line spells it: `spin:work=1000`, `sleep 0.01`.
    pub name: String,
    pub n: usize,
    pub median: f64,
    pub mean: f64,
    pub stddev: f64,
    pub min: f64,
    pub max: f64,
}

impl Variant {
    /// A variant named `name` with the statistics of `s`.
    pub fn of(name: &str, s: &crate::stats::Summary) -> Variant {
        Variant {
            name: name.to_string(),
            n: s.n,
            median: s.median,
            mean: s.mean,
            stddev: s.stddev,
            min: s.min,
            max: s.max,
        }
    }
}

/// The summary of a report's tables: every cell's first metric, when
/// there are 2..=[`MAX_VARIANTS`] cells and their first metrics agree in
/// name and unit.
pub fn of_groups(groups: &[Group]) -> Option<RunSummary> {
    let mut benches: Vec<&str> = Vec::new();
    let mut firsts: Vec<&Group> = Vec::new();
    for g in groups {
        // A bench's first group is its first metric (cells, then metrics,
        // in the order measured).
        if !benches.contains(&g.bench.as_str()) {
            benches.push(&g.bench);
            firsts.push(g);
        }
    }
    let head = firsts.first()?;
    if firsts
        .iter()
        .any(|g| g.metric != head.metric || g.unit != head.unit)
    {
        return None;
    }
    let rows: Vec<&crate::report::CellSummary> = firsts.iter().flat_map(|g| &g.rows).collect();
    let variants: Vec<Variant> = firsts
        .iter()
        .flat_map(|g| {
            g.rows.iter().map(|r| {
                let named: Vec<String> = g
                    .columns
                    .iter()
                    .zip(&r.labels)
                    .filter(|(_, l)| *l != "-")
                    .map(|(c, l)| format!("{c}={l}"))
                    .collect();
                let name = if named.is_empty() {
                    g.bench.clone()
                } else {
                    format!("{}:{}", g.bench, named.join(","))
                };
                Variant::of(&name, &r.summary)
            })
        })
        .collect();
    if !(2..=MAX_VARIANTS).contains(&variants.len()) {
        return None;
    }
    let names: Vec<String> = variants.iter().map(|v| v.name.clone()).collect();
    let obs: Vec<Vec<crate::stats::design::Obs>> = rows.iter().map(|r| r.obs.clone()).collect();
    // Two variants of one name cannot be told apart in words.
    let distinct = names
        .iter()
        .all(|n| names.iter().filter(|m| *m == n).count() == 1);
    let mut verdicts = Vec::new();
    let families = families(&rows);
    let order = match families.iter().filter(|f| f.len() > 1).count() {
        0 => "",
        _ if families.len() == 1 => ", the baseline first",
        _ => ", each benchmark's baseline first",
    };
    for family in families.iter().filter(|f| f.len() > 1 && distinct) {
        let pick = |i: &usize| names[*i].clone();
        let obs: Vec<_> = family.iter().map(|i| obs[*i].clone()).collect();
        let names: Vec<String> = family.iter().map(pick).collect();
        let c = super::of_variants(
            &names,
            &head.metric,
            &head.unit,
            head.direction,
            &obs,
            CONFIDENCE,
        );
        verdicts.extend(c.map(|c| c.verdicts).unwrap_or_default());
    }
    // Commands, or a benchmark with metrics of its own beyond the primary
    // one: the tables of those are what `--all-metrics` adds.
    // Counters per operation are left out of the text report anyway.
    let own = groups
        .iter()
        .filter(|g| !crate::system::counters::is_metric(&g.metric))
        .count();
    let stands_for_tables =
        rows.iter().all(|r| r.kind == crate::record::Kind::Command) || own > firsts.len();
    Some(RunSummary {
        stands_for_tables,
        order,
        metric: head.metric.clone(),
        unit: head.unit.clone(),
        direction: head.direction,
        variants,
        verdicts,
    })
}

impl RunSummary {
    /// The verdict of a run stopped by `--until-verdict` (capped at `max`
    /// rounds): the sequential look that stopped it, in place of a fixed-n
    /// verdict of the same samples (one verdict, at the level it holds).
    pub fn sequential(&mut self, look: &crate::stats::sequential::Look, max: usize) {
        let [a, b] = &self.variants[..] else {
            return;
        };
        let level = crate::stats::sequential::look_confidence(max);
        let what = (self.metric.as_str(), self.unit.as_str(), self.direction);
        self.verdicts = vec![super::verdict::of_look(&a.name, &b.name, look, what, level)];
    }
}

/// The variants that are one question, by their index in `rows`, the
/// baseline of each first: commands given together are variants of one
/// another, and so are the cells of one benchmark (parameter values, factor
/// levels, labels); two different benchmarks (`getppid`, `getuid`) are not,
/// and get no verdict.
fn families(rows: &[&crate::report::CellSummary]) -> Vec<Vec<usize>> {
    if rows.iter().all(|r| r.kind == crate::record::Kind::Command) {
        return vec![(0..rows.len()).collect()];
    }
    let mut out: Vec<(&str, Vec<usize>)> = Vec::new();
    for (i, r) in rows.iter().enumerate() {
        match out.iter_mut().find(|(b, _)| *b == r.bench) {
            Some((_, f)) => f.push(i),
            None => out.push((&r.bench, vec![i])),
        }
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// Confidence of the verdicts' intervals, percent (`kbench compare`'s
/// default).
pub const CONFIDENCE: f64 = 95.0;

/// The section in plain text, within 80 columns: one row per variant in
/// human units, the baseline first.
pub fn text(o: &mut String, s: &RunSummary) {
    use std::fmt::Write;
    let unit = if s.metric.split([' ', '/']).any(|p| p == s.unit) {
        String::new()
    } else {
        format!(" [{}]", s.unit)
    };
    let _ = writeln!(o, "{}{unit} ({}){}:", s.metric, s.direction, s.order);
    let head = ["N", "median", "mean", "stddev", "min", "max"];
    let cells: Vec<Vec<String>> = s
        .variants
        .iter()
        .map(|v| {
            let h = |x: f64| crate::report::fmt::human::value(x, &s.unit, None, false);
            vec![
                v.n.to_string(),
                h(v.median),
                h(v.mean),
                h(v.stddev),
                h(v.min),
                h(v.max),
            ]
        })
        .collect();
    let widths: Vec<usize> = (0..head.len())
        .map(|i| {
            cells
                .iter()
                .map(|c| c[i].chars().count())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let table: usize = widths.iter().map(|w| w + 2).sum();
    let room = crate::report::fmt::WIDTH.saturating_sub(table).max(8);
    let names: Vec<String> = s
        .variants
        .iter()
        .map(|v| clip_tail(&v.name, room))
        .collect();
    let nw = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let row = |o: &mut String, name: &str, cols: &[String]| {
        let mut line = format!("{name:<nw$}");
        for (c, w) in cols.iter().zip(&widths) {
            let _ = write!(line, "  {c:>w$}");
        }
        let _ = writeln!(o, "{}", line.trim_end());
    };
    row(o, "", &head.map(String::from));
    for (name, c) in names.iter().zip(&cells) {
        row(o, name, c);
    }
}

/// A variant's name within `room` columns, keeping its end: variants
/// differ at the end (`spin:work=1000`, `.../ten.txt`), not at the start.
fn clip_tail(name: &str, room: usize) -> String {
    let n = name.chars().count();
    if n <= room {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n + 3 - room.max(4)).collect();
    format!("...{tail}")
}

/// The verdict of each contender against the baseline, one sentence each.
pub fn verdicts(o: &mut String, s: &RunSummary) {
    for v in &s.verdicts {
        o.push_str(&crate::report::fmt::wrap(
            &v.sentence,
            crate::report::fmt::WIDTH,
            "  ",
        ));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn clipped_names_keep_the_end_that_tells_variants_apart() {
        assert_eq!(
            super::clip_tail("ministat:file=/tmp/x/ten.txt", 12),
            "...x/ten.txt"
        );
        assert_eq!(super::clip_tail("sleep 0.01", 12), "sleep 0.01");
    }
}
