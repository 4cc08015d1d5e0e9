//! Progress on stderr, as a consumer of the run's events: cells, samples
//! and ETA in a bar, failures and warnings as lines above it. The bar is
//! hidden when stderr is not a terminal or with `--quiet`, so logs and
//! pipes stay clean; failure and warning lines are always printed.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

use crate::event::{Event, Sink};

pub struct Progress {
    bar: ProgressBar,
    visible: bool,
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
            "{prefix} [{bar:30}] {pos}/{len} samples, ETA {eta} {wide_msg}"
        } else {
            "{prefix} [{bar:30.cyan/blue}] {pos}/{len} samples, ETA {eta} {wide_msg}"
        };
        bar.set_style(
            ProgressStyle::with_template(tmpl)
                .expect("valid template")
                .progress_chars("=> "),
        );
        Progress { bar, visible }
    }

    fn inc(&self, msg: &str) {
        if self.visible {
            self.bar.set_message(msg.to_string());
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

impl Sink for Progress {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::RunBegun(b) => {
                self.bar.set_length(b.planned_samples);
                self.bar.set_prefix(format!("{} cells", b.planned_cells));
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
            Event::CellPrepared(_)
            | Event::Note(_)
            | Event::CellDone(_)
            | Event::Verdict(_)
            | Event::Profile(_) => {}
        }
        Ok(())
    }
}
