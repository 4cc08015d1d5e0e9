//! A line per cell as soon as its last sample is in, for a reader who
//! cannot see the progress bar (standard output is a pipe or a file):
//! `kbench run ... | tee log` shows each benchmark's median while the
//! others are still measured, before the report. An event consumer like
//! the store and the progress bar; it keeps only the primary metric's
//! values (the first the cell declares).

use std::collections::HashMap;
use std::io::Write;

use crate::event::{Event, Sink};
use crate::record::{CellStatus, info_spelling};

/// Columns a line may take: a long command is cut, marked `~`.
const WIDTH: usize = 80;

/// One cell's spelling, primary metric and unit, and its values so far.
struct Seen {
    spelling: String,
    metric: String,
    unit: String,
    values: Vec<f64>,
}

pub struct Finished<W: Write> {
    out: W,
    cells: HashMap<String, Seen>,
    /// Lines printed: the report that follows gets a blank line first.
    printed: bool,
    /// Output failed other than by a closed pipe (a full disk): these
    /// lines are a courtesy, so the run goes on and stores its samples,
    /// and the report after it says what is wrong with stdout.
    failed: bool,
}

impl<W: Write> Finished<W> {
    pub fn new(out: W) -> Finished<W> {
        Finished {
            out,
            cells: HashMap::new(),
            printed: false,
            failed: false,
        }
    }

    /// Write `text`; an error other than a closed pipe (the reader gone,
    /// which stops the run as interrupted) stops the lines only.
    fn say(&mut self, text: &str) -> anyhow::Result<()> {
        if self.failed {
            return Ok(());
        }
        match self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
        {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(e.into()),
            Err(_) => {
                self.failed = true;
                Ok(())
            }
            Ok(()) => Ok(()),
        }
    }
}

/// `spin:work=10: ns/op median 1.11 us (5 samples)`.
/// Units in ASCII, as the run's text report prints them.
fn line(s: &Seen) -> String {
    // Stored values are finite and a line is printed only with some.
    let med = crate::stats::sample::Sample::new(&s.values).map_or(f64::NAN, |x| x.median());
    let tail = format!(
        ": {} median {} ({} samples)",
        s.metric,
        super::fmt::human::value(med, &s.unit, None, false),
        s.values.len()
    );
    let room = WIDTH.saturating_sub(tail.chars().count()).max(12);
    format!("{}{tail}", crate::term::shorten(&s.spelling, room))
}

impl<W: Write> Sink for Finished<W> {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::CellPrepared(c) => {
                if let Some(m) = c.cell.metrics.first() {
                    self.cells.insert(
                        c.cell.key.clone(),
                        Seen {
                            spelling: info_spelling(&c.cell),
                            metric: m.name.clone(),
                            unit: m.unit.clone(),
                            values: Vec::new(),
                        },
                    );
                }
            }
            Event::Sample(s) => {
                if let Some(seen) = self.cells.get_mut(&s.cell)
                    && let Some((_, v)) = s.values.iter().find(|(m, _)| *m == seen.metric)
                {
                    seen.values.push(*v);
                }
            }
            Event::CellDone(d) => {
                // A failed or interrupted cell is said by the run's own
                // lines; a cell measured again in a later run of a
                // repetition starts afresh.
                if let Some(seen) = self.cells.remove(&d.cell)
                    && d.status == CellStatus::Done
                    && !seen.values.is_empty()
                {
                    self.say(&format!("{}\n", line(&seen)))?;
                    self.printed = true;
                }
            }
            Event::RunEnded(_) if self.printed => {
                self.say("\n")?;
                self.printed = false;
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_cell_its_metric_median_and_count() {
        let s = Seen {
            spelling: "spin:work=10".into(),
            metric: "ns/op".into(),
            unit: "ns".into(),
            values: vec![1100.0, 1120.0, 1110.0],
        };
        assert_eq!(line(&s), "spin:work=10: ns/op median 1.11 us (3 samples)");
        let long = Seen {
            spelling: format!("'{}'", "x".repeat(100)),
            ..s
        };
        let l = line(&long);
        assert_eq!(l.chars().count(), 80, "{l}");
        assert!(l.contains("x~: ns/op median"), "{l}");
    }
}
