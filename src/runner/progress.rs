//! Progress on stderr, as a consumer of the run's events: cells, samples,
//! the time left and the cell last sampled (as the command line spells
//! it) in a bar, failures and warnings as lines above it. The time left
//! is the run's time model ([`Eta`]), not the sample rate: a scale sample
//! lasts many micro samples. The bar is hidden when stderr is not a
//! terminal or with `--quiet`, so logs and pipes stay clean; failure and
//! warning lines are always printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Instant;

use super::estimate::{Eta, human, shorten};
use crate::event::{Event, Sink};
use crate::record::info_spelling;

/// Columns the cell's spelling may take in the bar's line.
const CELL_WIDTH: usize = 24;

pub struct Progress {
    bar: ProgressBar,
    visible: bool,
    eta: Option<(Eta, Instant)>,
    /// Cell key -> the cell as the command line spells it.
    names: HashMap<String, String>,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            None,
            if visible {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let tmpl = if no_color {
            "{prefix} [{bar:14}] {pos}/{len} {wide_msg}"
        } else {
            "{prefix} [{bar:14.cyan/blue}] {pos}/{len} {wide_msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(tmpl)
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress {
            bar,
            visible,
            eta: None,
            names: HashMap::new(),
        }
    }

    /// A sample of cell `key` ended: the bar moves, the time left and
    /// the cell are redrawn.
    fn inc(&mut self, key: &str) {
        let left = self.eta.as_mut().and_then(|(eta, t0)| {
            let now = t0.elapsed().as_secs_f64();
            eta.sampled(key, now);
            eta.remaining(now)
        });
        if self.visible {
            let cell = self.names.get(key).map_or(key, String::as_str);
            self.bar.set_message(message(left, cell));
        }
        self.bar.inc(1);
    }

    /// Print a line above the bar (or plainly when hidden).
    fn println(&self, line: &str) {
        // A failure's message holds the command's stderr.
        let line = &*crate::term::visible(line);
        if self.visible {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // A run that ended with an error sent no `run_ended`.
        self.bar.finish_and_clear();
    }
}

/// The bar's words: the time left (`?` until the model knows every
/// cell's sample time) and the cell last sampled, cut to fit.
pub fn message(left: Option<f64>, cell: &str) -> String {
    let left = left.map_or_else(|| "?".to_string(), human);
    format!("samples, {left} left, {}", shorten(cell, CELL_WIDTH))
}

impl Sink for Progress {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::RunBegun(b) => {
                self.bar.set_length(b.planned_samples);
                self.bar.set_prefix(format!("{} cells", b.planned_cells));
                self.eta = Some((Eta::new(&b.config, b.planned_samples), Instant::now()));
            }
            Event::CellPrepared(c) => {
                if let Some((eta, _)) = &mut self.eta {
                    eta.cell(&c.cell);
                }
                self.names
                    .insert(c.cell.key.clone(), info_spelling(&c.cell));
            }
            Event::Sample(s) => self.inc(&s.cell),
            Event::Warmup(w) => self.inc(&w.cell),
            Event::Failure(f) => {
                if f.cell_stopped {
                    self.println(&format!(
                        "kbench: cell {} failed (cell stopped): {}",
                        f.cell, f.message
                    ));
                } else {
                    self.println(&format!(
                        "kbench: cell {} sample failed: {}",
                        f.cell, f.message
                    ));
                    self.inc(&f.cell);
                }
            }
            Event::Warning(w) => {
                self.println(crate::term::wrapped("kbench: warning: ", &w.message, "  ").trim_end())
            }
            Event::RunEnded(_) => self.bar.finish_and_clear(),
            Event::Note(_) | Event::CellDone(_) | Event::Verdict(_) | Event::Profile(_) => {}
        }
        Ok(())
    }
}
