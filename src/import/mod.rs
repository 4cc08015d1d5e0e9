//! Imports: results measured by other tools, turned into the event
//! stream a kbench run emits (`event::Event`), so they land in the store
//! as runs that `report` and `compare` treat like measured ones. One file
//! per format; each parses its whole input before any event is emitted,
//! so a malformed file stores nothing. The fingerprint of an imported run
//! says so (`os` = `imported from FORMAT`): kbench did not see the
//! machine.

pub mod hyperfine;
pub mod ministat;
pub mod wis;

use crate::event::{CellDone, CellPrepared, Event, RunBegun, RunEnded, SampleEvent};
use crate::record::{CampaignKey, CellInfo, CellStatus, RunConfig, RunStatus};
use crate::system::Fingerprint;

/// One imported cell: what identifies it and its values, a round after
/// another, each round one value per metric of `info.metrics` in order
/// (flat: two million times cost 16 MB, not a vector each).
#[derive(Debug)]
pub struct ImportedCell {
    pub info: CellInfo,
    pub values: Vec<f64>,
}

impl ImportedCell {
    /// The rounds, each a slice of one value per metric.
    pub fn rounds(&self) -> std::slice::Chunks<'_, f64> {
        self.values.chunks(self.info.metrics.len().max(1))
    }
}

/// One imported run: its cells and where they came from. Its identity is
/// the content's hash ([`crate::ids::content_uuid`]), so importing the
/// same data again finds the run stored and adds nothing.
pub struct ImportedRun {
    pub uuid: String,
    pub format: &'static str,
    /// The file(s), as named on the command line.
    pub source: String,
    pub cells: Vec<ImportedCell>,
    /// With a campaign name, the run joins the campaign of that name (one
    /// identity per name for every import, so later imports join it too).
    pub campaign: Option<String>,
}

impl ImportedRun {
    /// A run of `cells` read from `source`, named by `content` (the bytes
    /// and options that decide the cells).
    pub fn new(
        format: &'static str,
        source: &str,
        content: &[&[u8]],
        cells: Vec<ImportedCell>,
        campaign: Option<&str>,
    ) -> ImportedRun {
        let mut parts: Vec<&[u8]> = vec![format.as_bytes()];
        parts.extend_from_slice(content);
        ImportedRun {
            uuid: crate::ids::content_uuid(&parts),
            format,
            source: source.to_string(),
            cells,
            campaign: campaign.map(str::to_string),
        }
    }

    /// The run's event stream, made as it is consumed.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        let run = &self.uuid;
        let now = crate::ids::unix_now();
        let cells = self.cells.iter().flat_map(move |c| {
            let key = &c.info.key;
            let names: Vec<&String> = c.info.metrics.iter().map(|m| &m.name).collect();
            let n = c.rounds().len() as u32;
            std::iter::once(Event::CellPrepared(CellPrepared {
                run: run.clone(),
                cell: c.info.clone(),
            }))
            .chain(c.rounds().enumerate().map(move |(round, vals)| {
                Event::Sample(SampleEvent {
                    run: run.clone(),
                    cell: key.clone(),
                    round: round as u32,
                    t: now,
                    values: names
                        .iter()
                        .map(|m| m.to_string())
                        .zip(vals.iter().copied())
                        .collect(),
                    process: None,
                })
            }))
            .chain(std::iter::once(Event::CellDone(CellDone {
                run: run.clone(),
                cell: key.clone(),
                status: CellStatus::Done,
                samples: n,
            })))
        });
        std::iter::once(self.begun(now))
            .chain(cells)
            .chain(std::iter::once(Event::RunEnded(RunEnded {
                run: run.clone(),
                ended: now,
                status: RunStatus::Done,
            })))
    }

    fn begun(&self, now: f64) -> Event {
        let fingerprint = Fingerprint {
            hostname: "imported".into(),
            os: format!("imported from {}", self.format),
            kernel_release: "unknown".into(),
            ..Fingerprint::default()
        };
        let samples: u64 = self.cells.iter().map(|c| c.rounds().len() as u64).sum();
        let rounds = self
            .cells
            .iter()
            .map(|c| c.rounds().len())
            .max()
            .unwrap_or(0) as u32;
        Event::RunBegun(Box::new(RunBegun {
            schema: 1,
            run: self.uuid.clone(),
            campaign: self.campaign.as_ref().map(|name| CampaignKey {
                name: name.clone(),
                plan_hash: "imported".into(),
                generation: 1,
                plan_text: String::new(),
            }),
            host: "imported".into(),
            started: now,
            fingerprint,
            config: RunConfig {
                argv: vec![
                    "kbench".into(),
                    "import".into(),
                    self.source.clone(),
                    "--from".into(),
                    self.format.into(),
                ],
                ..RunConfig::new(format!("import:{}", self.source), rounds, 0.0, 0, 0)
            },
            overhead_ns: 0.0,
            planned_cells: self.cells.len(),
            planned_samples: samples,
            labels: Default::default(),
        }))
    }
}
