//! Progress on stderr: cells, samples and ETA. Hidden when stderr is not a
//! terminal or with `--quiet`, so logs and pipes stay clean.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;

pub struct Progress {
    bar: ProgressBar,
    visible: bool,
}

impl Progress {
    pub fn new(total_samples: u64, cells: usize, quiet: bool) -> Progress {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(total_samples),
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
        bar.set_prefix(format!("{cells} cells"));
        Progress { bar, visible }
    }

    pub fn inc(&self, msg: &str) {
        if self.visible {
            self.bar.set_message(msg.to_string());
        }
        self.bar.inc(1);
    }

    /// Print a line above the bar (or plainly when hidden).
    pub fn println(&self, line: &str) {
        if self.visible {
            self.bar.println(line);
        } else {
            eprintln!("{line}");
        }
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
