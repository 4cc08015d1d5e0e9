//! Labels a run's consumers see: a sink that adds the user's `--label`s
//! (and the repository's branch and commit) to each `run_begun` passing
//! through, whoever produced it (the runner, a repeated run's child
//! process, an importer), so every consumer (the store, `--events`)
//! records the same labels.

use super::{Event, Sink};
use crate::record::Labels;

/// Passes events on to `inner`, `labels` added to every run's (a label
/// given here wins over one the event carries).
pub struct Labelled<'a> {
    pub labels: &'a Labels,
    pub inner: &'a mut dyn Sink,
}

impl Sink for Labelled<'_> {
    fn event(&mut self, e: &Event) -> anyhow::Result<()> {
        match e {
            Event::RunBegun(b) if !self.labels.is_empty() => {
                let mut b = b.clone();
                b.labels
                    .extend(self.labels.iter().map(|(k, v)| (k.clone(), v.clone())));
                self.inner.event(&Event::RunBegun(b))
            }
            _ => self.inner.event(e),
        }
    }
}
