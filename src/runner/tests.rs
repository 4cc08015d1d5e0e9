//! The runner with fake benchmarks and the in-memory store: order,
//! identities, replay, failures and campaigns, without timing.

use crate::bench::fake::Fake;
use crate::event::{Event, Sink, jsonl};
use crate::record::{CampaignKey, CellStatus, RunStatus};
use crate::store::memory::MemoryStore;
use crate::store::sink::StoreSink;
use crate::store::{Scope, StoreRead};
use crate::testing::{self, bench, ns, options, plan};

fn two_benches() -> crate::plan::Plan {
    plan(
        "p",
        vec![
            bench(
                Fake::new("a", ns(), |v, i| 100.0 + v as f64 + i as f64),
                &[1, 2],
            ),
            bench(Fake::new("b", testing::bps(), |_, i| 1e9 + i as f64), &[]),
        ],
    )
}

fn key(name: &str) -> CampaignKey {
    CampaignKey {
        name: name.into(),
        plan_hash: crate::ids::plan_hash(name),
        generation: 1,
        plan_text: format!("name = \"{name}\""),
    }
}

#[test]
fn cells_are_sampled_in_rounds_and_every_event_has_its_place() {
    let mut st = MemoryStore::new();
    let (events, status, run) = testing::run(&mut st, &two_benches(), &options(3, 1), None);
    assert_eq!(status, RunStatus::Done);
    assert!(matches!(events.first(), Some(Event::RunBegun(_))));
    assert!(matches!(events.last(), Some(Event::RunEnded(_))));
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match e {
            Event::RunBegun(_) => "begun",
            Event::CellPrepared(_) => "prepared",
            Event::Warmup(_) => "warmup",
            Event::Sample(_) => "sample",
            Event::Note(_) => "note",
            Event::CellDone(_) => "done",
            Event::RunEnded(_) => "ended",
            Event::Failure(_) | Event::Warning(_) => "other",
        })
        .collect();
    let count = |k: &str| kinds.iter().filter(|x| **x == k).count();
    assert_eq!(
        (
            count("prepared"),
            count("warmup"),
            count("sample"),
            count("done")
        ),
        (3, 3, 9, 3)
    );
    assert_eq!(count("other"), 0);
    // Round-robin: every cell's round r comes before any cell's round r+1.
    let rounds: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            Event::Sample(s) => Some(s.round),
            _ => None,
        })
        .collect();
    assert!(rounds.windows(2).all(|w| w[0] <= w[1]), "{rounds:?}");
    let cells = st.cells(Scope::Run(run)).unwrap();
    assert_eq!(cells.len(), 3);
    for (c, s) in &cells {
        assert_eq!(s.len(), 3, "{}", c.info.key);
        assert_eq!(c.status, Some(CellStatus::Done));
        assert_eq!(c.placement.as_deref(), Some("cpu 0"));
    }
    // The fake's values arrive unchanged: variant 2 of `a` yields 102 (the
    // warm-up, discarded), then 103, 104, 105.
    let a2 = cells
        .iter()
        .find(|(c, _)| c.info.bench == "a" && c.info.params["variant"] == 2)
        .unwrap();
    let mut v: Vec<f64> = a2.1.iter().map(|s| s.value).collect();
    v.sort_by(f64::total_cmp);
    assert_eq!(v, [103.0, 104.0, 105.0]);
}

#[test]
fn a_replayed_stream_stores_nothing_twice_and_rebuilds_the_same_cells() {
    let mut st = MemoryStore::new();
    let (events, _, run) = testing::run(&mut st, &two_benches(), &options(2, 0), Some(key("p")));
    let mut text = Vec::new();
    let mut w = jsonl::Writer::new(&mut text);
    for e in &events {
        w.event(e).unwrap();
    }
    let replay = |st: &mut MemoryStore| -> usize {
        let mut r = jsonl::Reader::new(&text[..], "events.jsonl");
        let mut sink = StoreSink::new(st);
        while let Some(e) = r.next_event().unwrap() {
            sink.event(&e).unwrap();
        }
        sink.added
    };
    assert_eq!(replay(&mut st), 0, "the same store already has it all");
    assert_eq!(st.runs(None).unwrap().len(), 1);
    let mut fresh = MemoryStore::new();
    assert_eq!(replay(&mut fresh), 6);
    assert_eq!(replay(&mut fresh), 0);
    let report = |st: &MemoryStore, id| {
        let r = crate::report::Report::of_run(crate::store::load_run(st, id).unwrap());
        crate::report::json::render(&crate::report::Document::Reports(&[r])).unwrap()
    };
    let (a, b) = (report(&st, run), report(&fresh, 1));
    assert_eq!(a["cells"], b["cells"]);
    assert_eq!(a["run"]["uuid"], b["run"]["uuid"]);
    assert_eq!(
        fresh
            .campaigns(crate::store::CampaignQuery::Named("p"))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_value_that_is_not_a_number_fails_its_sample_and_the_run_goes_on() {
    let mut st = MemoryStore::new();
    let p = plan(
        "nan",
        vec![bench(
            Fake::new(
                "a",
                ns(),
                |v, i| if v == 1 && i == 1 { f64::NAN } else { 5.0 },
            ),
            &[1, 2],
        )],
    );
    let (events, status, run) = testing::run(&mut st, &p, &options(3, 0), None);
    assert_eq!(
        status,
        RunStatus::Done,
        "a failed sample that goes on is no failed cell"
    );
    let failures = st.failures(Scope::Run(run)).unwrap();
    assert_eq!(failures.len(), 1);
    assert!(
        failures[0]
            .message
            .contains("`ns/op` read NaN, not a number"),
        "{}",
        failures[0].message
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Failure(f) if !f.cell_stopped))
    );
    let cells = st.cells(Scope::Run(run)).unwrap();
    let counts: Vec<usize> = cells.iter().map(|(_, s)| s.len()).collect();
    // The failed attempt counts towards the cell's samples, so it ends.
    assert_eq!(counts, [2, 3]);
}

#[test]
fn a_campaign_resumes_with_only_the_missing_samples() {
    let mut st = MemoryStore::new();
    let p = two_benches();
    testing::run(&mut st, &p, &options(2, 0), Some(key("p")));
    let (_, _, second) = testing::run(&mut st, &p, &options(5, 0), Some(key("p")));
    let cells = st.cells(Scope::Run(second)).unwrap();
    assert!(
        cells.iter().all(|(_, s)| s.len() == 3),
        "only the 3 missing"
    );
    let c = st
        .campaigns(crate::store::CampaignQuery::Named("p"))
        .unwrap();
    let progress = crate::runner::campaign::progress(&st, c[0].id).unwrap();
    assert!(progress.values().all(|m| m.values().sum::<u32>() == 5));
    // Complete: a third run has nothing to do and records nothing.
    let (events, _, id) = testing::run(&mut st, &p, &options(5, 0), Some(key("p")));
    assert!(events.is_empty());
    assert_eq!(id, 0);
    assert_eq!(st.runs(None).unwrap().len(), 2);
}

#[test]
fn the_same_cell_twice_is_bad_input() {
    let mut st = MemoryStore::new();
    let p = plan(
        "twice",
        vec![
            bench(Fake::new("a", ns(), |_, _| 1.0), &[1]),
            bench(Fake::new("a", ns(), |_, _| 1.0), &[1]),
        ],
    );
    let have = Default::default();
    let mut sink = crate::event::Collect::default();
    let e = crate::runner::run(
        &p,
        &options(1, 0),
        None,
        &have,
        &testing::fingerprint(),
        &mut sink,
    )
    .unwrap_err();
    assert_eq!(crate::error::exit_code(&e), 2);
    assert!(e.to_string().contains("names the same cell twice"), "{e}");
    let _ = &mut st;
}
