//! `kbench explain`'s document: per pair of cells, the counters per
//! operation that moved, then the symbols whose CPU cost per operation
//! (their share of the profile times the CPU time per operation; the
//! share alone where none was measured) changed most, each with its
//! simultaneous interval (`*` beyond the noise, `~` inside it). Text
//! within 80 columns, Markdown tables, JSON (kind `explain`); the model
//! is built by `crate::explain`.

use std::fmt::Write;

use serde::Serialize;

use super::fmt::html_escape as esc;
use super::fmt::md_escape;
use crate::stats::shares::PairedDiff;

/// Two operands explained.
#[derive(Clone, Debug, Serialize)]
pub struct Explain {
    /// The baseline operand, as written.
    pub a: String,
    /// The contender.
    pub b: String,
    /// Confidence of each family, 0..1.
    pub confidence: f64,
    /// Mean share (0..1) a symbol needs on either side to be tested.
    pub min_share: f64,
    pub cells: Vec<CellExplain>,
}

/// One pair of cells.
#[derive(Clone, Debug, Serialize)]
pub struct CellExplain {
    /// Benchmark and the factors and parameters the operands share.
    pub cell: String,
    /// Rounds paired by round of one run (else by position).
    pub paired_by_round: bool,
    /// Pairs of rounds with a profile on both sides.
    pub rounds: usize,
    /// Pairs of rounds with counters on both sides.
    pub counter_rounds: usize,
    pub samples_a: u64,
    pub samples_b: u64,
    /// Symbol shares tested (the family of the intervals).
    pub family: usize,
    /// The unit of the symbols' costs and changes (`cpu-ns/op`); `None`
    /// where a round had no CPU time per operation, and symbols are
    /// compared by share (changes in percentage points).
    pub cost_unit: Option<String>,
    /// Counters per operation, those that moved first.
    pub counters: Vec<CounterChange>,
    /// Symbols whose cost changed most, those beyond the noise first.
    pub symbols: Vec<SymbolChange>,
    /// Each side's profiles over the paired rounds, merged (for the
    /// differential flame graph).
    #[serde(skip)]
    pub merged: (crate::profile::Folded, crate::profile::Folded),
    /// The contender's mean CPU time per operation over the baseline's,
    /// when costs were measured (the flame graph colours by cost).
    #[serde(skip)]
    pub cpu_ratio: Option<f64>,
}

/// A counter per operation on both sides.
#[derive(Clone, Debug, Serialize)]
pub struct CounterChange {
    pub metric: String,
    pub a: f64,
    pub b: f64,
    /// Contender minus baseline, paired by round.
    pub diff: PairedDiff,
    /// The interval excludes 0.
    pub changed: bool,
}

/// A symbol's share of samples on both sides.
#[derive(Clone, Debug, Serialize)]
pub struct SymbolChange {
    pub symbol: String,
    /// `self` (samples whose leaf it is) or `incl` (whose stack holds it).
    pub measure: String,
    /// Mean share, percent.
    pub share_a: f64,
    pub share_b: f64,
    /// Mean cost per operation, in the cell's `cost_unit`.
    pub cost_a: Option<f64>,
    pub cost_b: Option<f64>,
    /// Change of the cost in `cost_unit` (without one: of the share, in
    /// percentage points), paired by round.
    pub diff: PairedDiff,
    /// The interval excludes 0.
    pub changed: bool,
}

fn mark(changed: bool) -> char {
    if changed { '*' } else { '~' }
}

/// A signed number with few digits: `+1.9`, `-0.032`.
fn signed(x: f64) -> String {
    let a = x.abs();
    let s = if a >= 100.0 {
        format!("{x:+.0}")
    } else if a >= 1.0 || a == 0.0 {
        format!("{x:+.1}")
    } else {
        format!("{x:+.2}")
    };
    if a != 0.0 && a < 0.01 {
        format!("{x:+.1e}")
    } else {
        s
    }
}

fn interval(d: &PairedDiff) -> String {
    format!("[{}, {}]", signed(d.lo), signed(d.hi))
}

/// `name` cut to `w` characters, the end kept (symbols differ there).
fn fit(name: &str, w: usize) -> String {
    let n = name.chars().count();
    if n <= w {
        return name.to_string();
    }
    let tail: String = name.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}

/// How a cell's symbols read, the same in every format: their costs,
/// every value of the cell in one prefixed unit of CPU time (`us`), or,
/// where no CPU time was measured, their shares, changes in points.
struct Scale {
    /// The prefixed unit of the costs; `None`: by share.
    cost: Option<String>,
}

impl Scale {
    fn of(c: &CellExplain) -> Scale {
        let cost = c.cost_unit.as_ref().map(|_| {
            let all: Vec<f64> = (c.symbols.iter())
                .flat_map(|s| [s.cost_a, s.cost_b])
                .flatten()
                .collect();
            super::fmt::human::column_unit(&all, "ns", false)
        });
        Scale { cost }
    }

    /// `us/op`, by cost.
    fn label(&self) -> Option<String> {
        self.cost.as_ref().map(|u| format!("{u}/op"))
    }

    /// A cost in the cell's unit.
    fn num(&self, v: Option<f64>) -> String {
        match (v, &self.cost) {
            (Some(v), Some(u)) => super::fmt::human::number_in(v, "ns", None, u, false),
            _ => "-".into(),
        }
    }

    /// A change, signed: of the cost, else in points.
    fn change(&self, v: f64) -> String {
        match self.cost {
            Some(_) => format!(
                "{}{}",
                if v < 0.0 { '-' } else { '+' },
                self.num(Some(v.abs()))
            ),
            None => signed(v),
        }
    }

    fn interval(&self, d: &PairedDiff) -> String {
        format!("[{}, {}]", self.change(d.lo), self.change(d.hi))
    }
}

fn header(o: &mut String, e: &Explain, c: &CellExplain) {
    let _ = writeln!(o, "{}", c.cell);
    let how = if c.paired_by_round {
        "paired by round"
    } else {
        "paired in order (different runs)"
    };
    if c.rounds == 0 {
        let _ = writeln!(
            o,
            "  {} rounds {how}; no profile (`run --profile`);",
            c.counter_rounds
        );
        let _ = writeln!(
            o,
            "  {:.0}% intervals simultaneous over {} counters (Bonferroni)",
            100.0 * e.confidence,
            c.counters.len()
        );
        return;
    }
    let _ = writeln!(
        o,
        "  {} rounds {how}; {} / {} samples; {} shares tested,",
        c.rounds, c.samples_a, c.samples_b, c.family
    );
    let _ = writeln!(
        o,
        "  {:.0}% intervals simultaneous over them (Bonferroni)",
        100.0 * e.confidence
    );
    let _ = writeln!(
        o,
        "  {}",
        match c.cost_unit {
            Some(_) => "a symbol's cost: its share x the CPU time per op",
            None => "by share of samples: no CPU time per op was recorded",
        }
    );
}

pub fn text(e: &Explain) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "explain: {} -> {}", e.a, e.b);
    for c in &e.cells {
        o.push('\n');
        header(&mut o, e, c);
        let moved: Vec<_> = c.counters.iter().filter(|k| k.changed).collect();
        if !moved.is_empty() {
            let _ = writeln!(o, "  counters that moved:");
            for k in moved {
                let _ = writeln!(
                    o,
                    "  * {} {} {}",
                    signed(k.diff.mean),
                    fit(&k.metric.replace("/op", " per op"), 36),
                    interval(&k.diff)
                );
            }
        } else if !c.counters.is_empty() {
            let _ = writeln!(o, "  no counter per op moved beyond its noise");
        }
        if c.rounds == 0 {
            continue;
        }
        if c.symbols.is_empty() {
            let _ = writeln!(
                o,
                "  no symbol reaches {:.0}% of samples",
                100.0 * e.min_share
            );
            continue;
        }
        // Costs in 8 columns, shares in 6 (`12.3%`), with room for longer
        // symbol names.
        let k = Scale::of(c);
        let (sw, nw, cw, tail) = match k.label() {
            Some(l) => (26, 8, 7, format!("interval, {l}")),
            None => (30, 6, 6, "interval (points)".to_string()),
        };
        let _ = writeln!(
            o,
            "  {:<sw$} {:<4} {:>nw$} {:>nw$} {:>cw$}  {tail}",
            "symbol", "of", "A", "B", "change"
        );
        for s in &c.symbols {
            let (a, b) = match k.cost {
                Some(_) => (k.num(s.cost_a), k.num(s.cost_b)),
                None => (format!("{:.1}%", s.share_a), format!("{:.1}%", s.share_b)),
            };
            let _ = writeln!(
                o,
                "{} {:<sw$} {:<4} {a:>nw$} {b:>nw$} {:>cw$}  {}",
                mark(s.changed),
                fit(&s.symbol, sw),
                s.measure,
                k.change(s.diff.mean),
                k.interval(&s.diff)
            );
        }
        if !c.symbols.iter().any(|s| s.changed) {
            let _ = writeln!(o, "  no symbol's cost changed beyond the profile's noise");
        }
    }
    o.push_str("\n* beyond the noise (interval excludes 0), ~ inside it\n");
    o
}

pub fn markdown(e: &Explain) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "**explain** `{}` → `{}`\n",
        md_escape(&e.a),
        md_escape(&e.b)
    );
    for c in &e.cells {
        let _ = writeln!(o, "### {}\n", md_escape(&c.cell));
        let how = if c.paired_by_round {
            "paired by round"
        } else {
            "paired in order"
        };
        let _ = match c.rounds {
            0 => writeln!(
                o,
                "{} rounds {how}; {:.0}% intervals simultaneous over {} counters.\n",
                c.counter_rounds,
                100.0 * e.confidence,
                c.counters.len()
            ),
            _ => writeln!(
                o,
                "{} rounds {how}; {} / {} samples; {:.0}% intervals simultaneous over {} shares.\n",
                c.rounds,
                c.samples_a,
                c.samples_b,
                100.0 * e.confidence,
                c.family
            ),
        };
        let moved: Vec<_> = c.counters.iter().filter(|k| k.changed).collect();
        if !moved.is_empty() {
            o.push_str("| counter | A | B | change | interval |\n|---|--:|--:|--:|---|\n");
            for k in moved {
                let _ = writeln!(
                    o,
                    "| {} | {:.4} | {:.4} | **{}** | {} |",
                    md_escape(&k.metric),
                    k.a,
                    k.b,
                    signed(k.diff.mean),
                    interval(&k.diff)
                );
            }
            o.push('\n');
        }
        if c.rounds == 0 {
            let _ = writeln!(
                o,
                "No profile recorded (`run --profile`); {} of {} counters per op moved.\n",
                c.counters.iter().filter(|k| k.changed).count(),
                c.counters.len()
            );
            continue;
        }
        let k = Scale::of(c);
        let _ = match k.label() {
            Some(l) => writeln!(
                o,
                "| symbol | of | share A | share B | A ({l}) | B ({l}) | change ({l}) | interval |\n|---|---|--:|--:|--:|--:|--:|---|",
                l = format!("CPU {l}")
            ),
            None => writeln!(
                o,
                "| symbol | of | A | B | change (points) | interval |\n|---|---|--:|--:|--:|---|"
            ),
        };
        for s in &c.symbols {
            let (ch, iv) = (k.change(s.diff.mean), k.interval(&s.diff));
            let costs = match k.cost {
                Some(_) => format!(" {} | {} |", k.num(s.cost_a), k.num(s.cost_b)),
                None => String::new(),
            };
            let _ = writeln!(
                o,
                "| `{}` | {} | {:.1}% | {:.1}% |{costs} {} | {iv} |",
                s.symbol.replace('`', "'"),
                s.measure,
                s.share_a,
                s.share_b,
                if s.changed {
                    format!("**{ch}**")
                } else {
                    format!("{ch} ~")
                },
            );
        }
        o.push('\n');
    }
    o
}

/// The HTML page's body: per cell its table, then the contender's flame
/// graph coloured by the change from the baseline.
pub fn html(e: &Explain) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h1>explain <code>{}</code> &rarr; <code>{}</code></h1>",
        esc(&e.a),
        esc(&e.b)
    );
    for (i, c) in e.cells.iter().enumerate() {
        let _ = writeln!(o, "<h2>{}</h2>", esc(&c.cell));
        let mut t = String::new();
        header(&mut t, e, c);
        let _ = writeln!(
            o,
            "<p class=\"legend\">{}</p>",
            esc(t.lines().skip(1).collect::<Vec<_>>().join(" ").trim())
        );
        let moved: Vec<_> = c.counters.iter().filter(|k| k.changed).collect();
        if !moved.is_empty() {
            o.push_str("<table><tr><th class=\"l\">counter</th><th>A</th><th>B</th><th>change</th><th class=\"l\">interval</th></tr>\n");
            for k in moved {
                let _ = writeln!(
                    o,
                    "<tr><td class=\"l\">{}</td><td>{:.4}</td><td>{:.4}</td><td class=\"sig\">{}</td><td class=\"l\">{}</td></tr>",
                    esc(&k.metric),
                    k.a,
                    k.b,
                    signed(k.diff.mean),
                    interval(&k.diff)
                );
            }
            o.push_str("</table>\n");
        }
        let k = Scale::of(c);
        let _ = match k.label() {
            Some(l) => writeln!(
                o,
                "<p class=\"legend\">A, B, change and interval: CPU {l}</p>\n<table><tr><th></th><th class=\"l\">symbol</th><th class=\"l\">of</th><th>share A</th><th>share B</th><th>A</th><th>B</th><th>change</th><th class=\"l\">interval</th></tr>",
                l = esc(&l)
            ),
            None => writeln!(
                o,
                "<table><tr><th></th><th class=\"l\">symbol</th><th class=\"l\">of</th><th>A</th><th>B</th><th>change (points)</th><th class=\"l\">interval</th></tr>"
            ),
        };
        for s in &c.symbols {
            let (ch, iv) = (k.change(s.diff.mean), k.interval(&s.diff));
            let costs = match k.cost {
                Some(_) => format!("<td>{}</td><td>{}</td>", k.num(s.cost_a), k.num(s.cost_b)),
                None => String::new(),
            };
            let _ = writeln!(
                o,
                "<tr><td>{}</td><td class=\"l\"><code>{}</code></td><td class=\"l\">{}</td><td>{:.1}%</td><td>{:.1}%</td>{costs}<td{}>{ch}</td><td class=\"l\" style=\"white-space:nowrap\">{iv}</td></tr>",
                mark(s.changed),
                esc(&s.symbol),
                s.measure,
                s.share_a,
                s.share_b,
                if s.changed { " class=\"sig\"" } else { "" },
            );
        }
        o.push_str("</table>\n");
        let (a, b) = &c.merged;
        if b.total() > 0 {
            let what = match c.cpu_ratio {
                Some(_) => {
                    "change of each frame's CPU cost per operation from the baseline, in points of the baseline's whole cost (red more, blue less"
                }
                None => {
                    "change of each frame's share from the baseline (red more, blue fewer samples"
                }
            };
            let _ = writeln!(
                o,
                "<p class=\"legend\">Flame graph of the contender; colour: {what}, saturated at 5 points); hover a frame for its values.</p>"
            );
            let scale = c.cpu_ratio.unwrap_or(1.0);
            o.push_str(&super::flame::scaled_svg(
                b,
                Some(a),
                scale,
                &format!("x{i}"),
            ));
        }
    }
    o.push_str("<p class=\"legend\">* beyond the noise (interval excludes 0), ~ inside it</p>\n");
    o
}

impl super::render::Render for Explain {
    const KIND: &'static str = "explain";

    fn text(&self) -> String {
        text(self)
    }

    fn markdown(&self) -> String {
        markdown(self)
    }

    fn html(&self) -> (String, String) {
        ("kbench explain".to_string(), html(self))
    }
}
