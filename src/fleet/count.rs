//! The coordinator's store is the truth of a fleet run: what each host
//! owes (the plan's samples per cell), what the store holds of it, and a
//! guard that stores no sample beyond the plan (a host whose own store
//! was lost measures its cells again; the coordinator keeps what it had).

use std::collections::{HashMap, HashSet};

use crate::event::Event;
use crate::plan::Plan;
use crate::store::{self, StoreRead};

/// Samples per cell key the plan asks of each host, in the plan's order;
/// `None` under adaptive stopping (the run decides how many: at least
/// one).
pub type Wants = Vec<(String, Option<u32>)>;

/// [`Wants`] of `plan` run with `run_args` (`--samples`, `--quick`,
/// `--precision` change them).
pub fn wants(plan: &Plan, run_args: &[String]) -> anyhow::Result<Wants> {
    let arg = |name: &str| -> Option<&str> {
        let eq = format!("{name}=");
        run_args.iter().enumerate().find_map(|(i, a)| {
            if a == name {
                run_args.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix(&eq)
            }
        })
    };
    let adaptive = plan.precision.is_some() || arg("--precision").is_some();
    let quick = run_args.iter().any(|a| a == "--quick");
    let explicit = arg("--samples").and_then(|s| s.parse::<u32>().ok());
    let default = crate::plan::settings::samples(plan, explicit, quick);
    let per = plan.repeat.runs * plan.repeat.boots;
    Ok(crate::plan::expand(plan)?
        .iter()
        .map(|c| {
            let n = (!adaptive).then(|| c.samples.unwrap_or(default) * per);
            (c.key.clone(), n)
        })
        .collect())
}

/// Every cell of `wants` has its samples in `have`.
pub fn complete(wants: &Wants, have: &HashMap<String, u32>) -> bool {
    wants
        .iter()
        .all(|(k, n)| have.get(k).copied().unwrap_or(0) >= n.unwrap_or(1))
}

/// Samples per cell key the store holds of `host` in the plan's campaign.
pub fn held(st: &dyn StoreRead, plan: &Plan, host: &str) -> anyhow::Result<HashMap<String, u32>> {
    let mut m = HashMap::new();
    if let Some(c) = crate::campaign::find(st, plan)? {
        for p in st.progress(c.id)? {
            if p.host == host {
                *m.entry(p.key).or_insert(0) += p.samples;
            }
        }
    }
    Ok(m)
}

/// Check the coordinator's store against `wants` for one host: `None`
/// when every cell has exactly its samples, else what is wrong, in one
/// line.
pub fn verify(
    db: &store::Locator,
    plan: &Plan,
    wants: &Wants,
    host: &str,
) -> anyhow::Result<Option<String>> {
    let st = store::open(db, store::Access::Read)?;
    let have = held(&*st, plan, host)?;
    let wrong: Vec<String> = wants
        .iter()
        .filter_map(|(k, w)| {
            let n = have.get(k).copied().unwrap_or(0);
            match w {
                Some(w) => (n != *w).then(|| format!("`{k}` {n} of {w}")),
                None => (n == 0).then(|| format!("`{k}` none")),
            }
        })
        .collect();
    if wrong.is_empty() {
        return Ok(None);
    }
    let shown: Vec<&str> = wrong.iter().take(3).map(String::as_str).collect();
    Ok(Some(format!(
        "{} of {} cell(s) lack their planned samples in the coordinator's store ({}{})",
        wrong.len(),
        wants.len(),
        shown.join(", "),
        if wrong.len() > 3 { ", ..." } else { "" }
    )))
}

/// Drops the samples of a stream beyond what the plan asks of a cell.
pub struct Cap {
    /// Samples still wanted per cell key; a key absent is not capped.
    left: HashMap<String, u32>,
    /// (run, cell, round) already admitted: a round is one sample.
    seen: HashSet<(String, String, u32)>,
    /// Samples dropped.
    pub dropped: u64,
}

impl Cap {
    /// `wants` per cell, less what the store already `held`.
    pub fn new(wants: &Wants, held: &HashMap<String, u32>) -> Cap {
        let left = wants
            .iter()
            .filter_map(|(k, w)| {
                let w = (*w)?;
                Some((
                    k.clone(),
                    w.saturating_sub(held.get(k).copied().unwrap_or(0)),
                ))
            })
            .collect();
        Cap {
            left,
            seen: HashSet::new(),
            dropped: 0,
        }
    }

    /// Samples the store holds already, as (run UUID, cell key, round):
    /// storing them again adds nothing, so they never count.
    pub fn holding(mut self, present: HashSet<(String, String, u32)>) -> Cap {
        self.seen = present;
        self
    }

    /// Whether to store the event.
    pub fn admit(&mut self, e: &Event) -> bool {
        match e {
            Event::Sample(s) => self.admit_sample(&s.run, &s.cell, s.round),
            _ => true,
        }
    }

    /// Whether to store a sample (each of a round's values is asked).
    pub fn admit_sample(&mut self, run: &str, cell: &str, round: u32) -> bool {
        let Some(left) = self.left.get_mut(cell) else {
            return true;
        };
        let id = (run.to_string(), cell.to_string(), round);
        if self.seen.contains(&id) {
            return true;
        }
        if *left == 0 {
            self.dropped += 1;
            return false;
        }
        *left -= 1;
        self.seen.insert(id);
        true
    }
}

/// The (run UUID, cell key, round) of `host`'s samples the store holds,
/// of the runs named by UUID.
pub fn present(
    st: &dyn StoreRead,
    uuids: &[String],
) -> anyhow::Result<HashSet<(String, String, u32)>> {
    let mut out = HashSet::new();
    let runs = st.runs(None)?;
    for r in runs.iter().filter(|r| uuids.contains(&r.uuid)) {
        for (c, samples) in st.cells(store::Scope::Run(r.id))? {
            for s in samples {
                out.insert((r.uuid.clone(), c.info.key.clone(), s.round));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::SampleEvent;

    fn sample(run: &str, cell: &str, round: u32) -> Event {
        Event::Sample(SampleEvent {
            run: run.into(),
            cell: cell.into(),
            round,
            t: 1.0,
            values: vec![("ns/op".into(), 1.0)],
            process: None,
        })
    }

    #[test]
    fn the_cap_stores_no_sample_beyond_the_plan() {
        let wants = vec![("a".to_string(), Some(3)), ("b".to_string(), Some(2))];
        let held: HashMap<String, u32> = [("a".to_string(), 2)].into_iter().collect();
        assert!(!complete(&wants, &held));
        let mut cap = Cap::new(&wants, &held);
        let admitted: Vec<bool> = [
            sample("r", "a", 0),
            sample("r", "a", 1),
            sample("r", "a", 0), // the same round again: one sample
            sample("r", "b", 0),
            sample("r", "b", 1),
            sample("r", "b", 2),
            sample("r", "c", 0), // not in the plan's cells: not capped
        ]
        .iter()
        .map(|e| cap.admit(e))
        .collect();
        assert_eq!(admitted, [true, false, true, true, true, false, true]);
        assert_eq!(cap.dropped, 2);
    }

    #[test]
    fn wants_follow_the_run_arguments() {
        let plan = crate::plan::parse(
            "name = \"p\"\nsamples = 7\n[[bench]]\nuse = \"getppid\"\n",
            "p.toml",
        )
        .unwrap();
        let w = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            wants(&plan, &args).unwrap()[0].1
        };
        assert_eq!(w(&[]), Some(7));
        assert_eq!(w(&["--quick"]), Some(5));
        assert_eq!(w(&["--samples", "3"]), Some(3));
        assert_eq!(w(&["--quick", "--samples=9"]), Some(9));
        assert_eq!(w(&["--precision", "1%"]), None);
    }
}
