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

/// One imported cell: what identifies it and its values, one per round.
#[derive(Debug)]
pub struct ImportedCell {
    pub info: CellInfo,
    /// (metric, value) per round.
    pub rounds: Vec<Vec<(String, f64)>>,
}

/// The events of one imported run of `cells`, read from `source`; with
/// `campaign`, the run joins the campaign of that name (one identity per
/// name for every import, so later imports join it too).
pub fn events(
    format: &str,
    source: &str,
    cells: Vec<ImportedCell>,
    campaign: Option<&str>,
) -> Vec<Event> {
    let run = crate::ids::new_run_uuid();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let fingerprint = Fingerprint {
        hostname: "imported".into(),
        os: format!("imported from {format}"),
        kernel_release: "unknown".into(),
        ..Fingerprint::default()
    };
    let samples: u64 = cells.iter().map(|c| c.rounds.len() as u64).sum();
    let mut out = vec![Event::RunBegun(Box::new(RunBegun {
        schema: 1,
        run: run.clone(),
        campaign: campaign.map(|name| CampaignKey {
            name: name.into(),
            plan_hash: "imported".into(),
            generation: 1,
            plan_text: String::new(),
        }),
        host: "imported".into(),
        started: now,
        fingerprint,
        config: RunConfig {
            version: RunConfig::VERSION,
            plan: format!("import:{source}"),
            samples: cells.iter().map(|c| c.rounds.len()).max().unwrap_or(0) as u32,
            sample_time: 0.0,
            warmup: 0,
            seed: 0,
            stop: None,
            force: false,
            argv: vec![
                "kbench".into(),
                "import".into(),
                source.into(),
                "--from".into(),
                format.into(),
            ],
            owner: None,
            processes: None,
        },
        overhead_ns: 0.0,
        planned_cells: cells.len(),
        planned_samples: samples,
    }))];
    for c in cells {
        let key = c.info.key.clone();
        out.push(Event::CellPrepared(CellPrepared {
            run: run.clone(),
            cell: c.info,
        }));
        let n = c.rounds.len() as u32;
        for (round, values) in c.rounds.into_iter().enumerate() {
            out.push(Event::Sample(SampleEvent {
                run: run.clone(),
                cell: key.clone(),
                round: round as u32,
                t: now,
                values,
                process: None,
            }));
        }
        out.push(Event::CellDone(CellDone {
            run: run.clone(),
            cell: key,
            status: CellStatus::Done,
            samples: n,
        }));
    }
    out.push(Event::RunEnded(RunEnded {
        run,
        ended: now,
        status: RunStatus::Done,
    }));
    out
}
