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
            Event::Failure(_) | Event::Warning(_) | Event::Verdict(_) | Event::Profile(_) => {
                "other"
            }
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
        crate::report::render::json_value(&crate::report::Document::Reports(&[r])).unwrap()
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
    let progress = crate::campaign::progress(&st, c[0].id).unwrap();
    assert!(
        progress
            .samples
            .values()
            .all(|m| m.values().sum::<u32>() == 5)
    );
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

/// A deterministic normal deviate for sample `i` of `variant` (splitmix64
/// and Box-Muller): noise without a clock, the same on every machine.
fn noise(variant: i64, i: u32) -> f64 {
    fn mix(mut z: u64) -> u64 {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let s = mix(((variant as u64) << 32) | i as u64);
    let u = |x: u64| ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    let (u1, u2) = (u(s), u(mix(s)));
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn adaptive(precision: f64, max_samples: u32, until_verdict: bool) -> crate::record::RunConfig {
    let mut o = options(max_samples, 0);
    o.stop = Some(crate::record::StopRule {
        precision,
        max_samples,
        max_time: None,
        until_verdict,
    });
    o
}

fn values_of(st: &MemoryStore, run: i64) -> Vec<Vec<f64>> {
    let mut cells = st.cells(Scope::Run(run)).unwrap();
    cells.sort_by(|a, b| a.0.info.key.cmp(&b.0.info.key));
    cells
        .iter()
        .map(|(_, s)| s.iter().map(|r| r.value).collect())
        .collect()
}

#[test]
fn until_verdict_decides_a_5_percent_difference_early() {
    // Means 1000 and 1050, 2% noise: 30 fixed samples see the difference;
    // the adaptive run decides it with at most half of them.
    let mean = |v: i64| if v == 1 { 1000.0 } else { 1050.0 };
    let p = plan(
        "diff",
        vec![bench(
            Fake::new("a", ns(), move |v, i| mean(v) * (1.0 + 0.02 * noise(v, i))),
            &[1, 2],
        )],
    );
    let mut st = MemoryStore::new();
    let (_, status, run) = testing::run(&mut st, &p, &adaptive(0.01, 30, true), None);
    assert_eq!(status, RunStatus::Done);
    let v = values_of(&st, run);
    let look = crate::stats::sequential::look(&v[0], &v[1], 0.01, 30).unwrap();
    assert_eq!(
        look.verdict,
        crate::stats::equivalence::Verdict::Different,
        "{look}"
    );
    assert!((look.delta - 0.05).abs() < 0.02, "{look}");
    for c in &v {
        assert!(
            (crate::stats::sequential::MIN_SAMPLES..=15).contains(&c.len()),
            "{} samples",
            c.len()
        );
    }
}

#[test]
fn until_verdict_on_identical_cells_ends_equivalent_or_at_the_cap() {
    // Same mean, 1% noise, 3% margin: decided equivalent before the cap.
    let p = plan(
        "same",
        vec![bench(
            Fake::new("a", ns(), |v, i| 1000.0 * (1.0 + 0.01 * noise(v, i))),
            &[1, 2],
        )],
    );
    let mut st = MemoryStore::new();
    let (_, _, run) = testing::run(&mut st, &p, &adaptive(0.03, 60, true), None);
    let v = values_of(&st, run);
    let look = crate::stats::sequential::look(&v[0], &v[1], 0.03, 60).unwrap();
    assert_eq!(
        look.verdict,
        crate::stats::equivalence::Verdict::Equivalent,
        "{look}"
    );
    assert!(v.iter().all(|c| c.len() < 60), "stopped before the cap");
    // 20% noise cannot be decided within 10 samples: the run ends at the
    // cap, inconclusive, never "different".
    let p = plan(
        "wide",
        vec![bench(
            Fake::new("a", ns(), |v, i| 1000.0 * (1.0 + 0.2 * noise(v, i))),
            &[1, 2],
        )],
    );
    let (_, _, run) = testing::run(&mut st, &p, &adaptive(0.03, 10, true), None);
    let v = values_of(&st, run);
    assert!(v.iter().all(|c| c.len() == 10));
    let look = crate::stats::sequential::look(&v[0], &v[1], 0.03, 10).unwrap();
    assert_eq!(
        look.verdict,
        crate::stats::equivalence::Verdict::Inconclusive,
        "{look}"
    );
}

#[test]
fn precision_stops_each_cell_when_its_interval_is_narrow_enough() {
    // Cell 1 has 1% noise (precise after a few samples), cell 2 has 30%
    // (never within 40 samples at 2%).
    let p = plan(
        "prec",
        vec![bench(
            Fake::new("a", ns(), |v, i| {
                let cv = if v == 1 { 0.01 } else { 0.3 };
                1000.0 * (1.0 + cv * noise(v, i))
            }),
            &[1, 2],
        )],
    );
    let mut st = MemoryStore::new();
    let (_, status, run) = testing::run(&mut st, &p, &adaptive(0.02, 40, false), None);
    assert_eq!(status, RunStatus::Done);
    let v = values_of(&st, run);
    let hw = crate::stats::sequential::relative_halfwidth;
    assert!(v[0].len() < 40 && hw(&v[0]) <= 0.02, "{:?}", v[0]);
    // It stopped at the first sample count that reached the target.
    assert!(v[0].len() == 5 || hw(&v[0][..v[0].len() - 1]) > 0.02);
    assert_eq!(v[1].len(), 40);
    assert!(hw(&v[1]) > 0.02);
}

#[test]
fn noise_is_standard_normal() {
    let v: Vec<f64> = (0..20_000).map(|i| noise(3, i)).collect();
    let s = crate::stats::Sample::new(&v).unwrap();
    assert!(s.mean().abs() < 0.03, "{}", s.mean());
    assert!((s.stddev() - 1.0).abs() < 0.03, "{}", s.stddev());
}

/// Per-process offsets of a fake whose variants have the same mean (100)
/// but whose processes each shift it, as memory layouts do: five draws
/// per variant.
fn process_offset(variant: i64, process: u32) -> f64 {
    let draws: [[f64; 5]; 2] = [[4.0, 7.0, 2.0, 6.0, 1.0], [0.0, 3.0, -1.0, 5.0, -2.0]];
    draws[(variant - 1) as usize][process as usize % 5]
}

fn processes_run(st: &mut MemoryStore) -> i64 {
    let p = plan(
        "procs",
        vec![bench(
            Fake::new("layout", ns(), |v, i| 100.0 + noise(v, i)).per_process(process_offset),
            &[1, 2],
        )],
    );
    let mut o = options(50, 1);
    o.processes = Some(5);
    let (events, status, run) = testing::run(st, &p, &o, None);
    assert_eq!(status, RunStatus::Done);
    // Every cell: 5 processes x 10 samples, each recorded with its
    // process, rounds numbered on across processes.
    let samples: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Sample(s) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(samples.len(), 100);
    for p in 0..5 {
        assert_eq!(
            samples.iter().filter(|s| s.process == Some(p)).count(),
            20,
            "process {p}"
        );
    }
    let warm = events
        .iter()
        .filter(|e| matches!(e, Event::Warmup(_)))
        .count();
    assert_eq!(warm, 10, "a warm-up round in each fresh process");
    run
}

#[test]
fn processes_report_the_variance_between_them_and_a_wider_interval() {
    let mut st = MemoryStore::new();
    let run = processes_run(&mut st);
    let cells = st.cells(Scope::Run(run)).unwrap();
    for (c, s) in &cells {
        let mut rounds: Vec<u32> = s.iter().map(|r| r.round).collect();
        rounds.sort();
        rounds.dedup();
        assert_eq!(
            rounds.len(),
            50,
            "{}: distinct sample identities",
            c.info.key
        );
        assert!(s.iter().all(|r| r.process.is_some()));
    }
    let data = crate::testing::run_data(cells);
    let r = crate::report::Report::of_run(data);
    let row = &r.groups[0].rows[0];
    let c = row.processes.as_ref().expect("components");
    assert_eq!((c.processes, c.n), (5, 50));
    // Offsets 4, 7, 2, 6, 1 (variance 6.5) over noise of variance 1.
    let between = c.between_processes.unwrap();
    assert!((3.0..12.0).contains(&between), "{c:?}");
    assert!((0.5..2.0).contains(&c.within), "{c:?}");
    assert_eq!(c.term, crate::stats::nested::ErrorTerm::ProcessMeans);
    // The interval over the 5 process means is the right one, and wider.
    let (iv, nv) = (c.interval.unwrap(), c.naive_interval.unwrap());
    assert!(iv.hi - iv.lo > 3.0 * (nv.hi - nv.lo), "{iv:?} vs {nv:?}");
    let text = crate::report::render(
        &crate::report::Document::Reports(std::slice::from_ref(&r)),
        crate::report::Format::Text,
    )
    .unwrap();
    assert!(
        text.contains("5 processes; variance between processes"),
        "{text}"
    );
}

#[test]
fn processes_compare_with_process_means_where_samples_would_mislead() {
    let mut st = MemoryStore::new();
    let run = processes_run(&mut st);
    let sel = |v: &str| {
        let op = crate::select::resolve(&st, &format!("{run}:variant={v}")).unwrap();
        crate::report::compare::Selection {
            name: v.into(),
            fixed: vec!["variant".into()],
            cells: crate::select::narrow(&op, st.cells(op.scope).unwrap()).unwrap(),
            runs: Default::default(),
        }
    };
    let c = crate::report::compare::compare(
        &[sel("1"), sel("2")],
        crate::report::compare::Test::WELCH,
        95.0,
        0.01,
    )
    .unwrap();
    let v = &c.rows[0].versus[0];
    // Both variants in the same rounds of the same processes: paired by
    // round, and the process offsets, the same in both arms, cancel in
    // the per-round ratios.
    let d = v.design.as_ref().expect("a design");
    // Both variants in the same rounds: paired by round; the processes
    // differ, so the process pairs are the units.
    assert!(d.paired, "{d:?}");
    assert_eq!(
        (d.unit, d.n),
        (crate::stats::design::Unit::Processes, [5, 5])
    );
    // Same true mean: every sample as independent calls the 3-unit gap
    // of the process draws a difference at p = 3e-5; five process pairs
    // weigh it as five observations.
    let Some(naive) = v.detail.get::<crate::stats::ttest::TTest>() else {
        panic!("Welch asked for")
    };
    assert!(naive.p < 1e-4 && v.p.unwrap() > 100.0 * naive.p, "{v:?}");
    let text = crate::report::render(
        &crate::report::Document::Compare(&c),
        crate::report::Format::Text,
    )
    .unwrap();
    assert!(
        text.contains("design: paired by round, 5 processes as units"),
        "{text}"
    );
}

/// A fake whose every value is the machine's "load" at the moment it is
/// taken: a clock shared by all its instances (and so all processes)
/// that rises with each sample, as a load that builds up over a run does.
/// Its processes do not differ at all.
fn drifting(clock: std::sync::Arc<std::sync::atomic::AtomicU32>) -> crate::plan::Plan {
    plan(
        "drift",
        vec![bench(
            Fake::new("drift", ns(), move |_, _| {
                let t = clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                100.0 + 0.5 * f64::from(t) + noise(1, t)
            }),
            &[1, 2],
        )],
    )
}

#[test]
fn processes_take_turns_within_the_run_so_drift_is_not_a_process_effect() {
    let clock = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut st = MemoryStore::new();
    let mut o = options(50, 1);
    o.processes = Some(5);
    let (_, status, run) = testing::run(&mut st, &drifting(clock), &o, None);
    assert_eq!(status, RunStatus::Done);
    for (c, s) in &st.cells(Scope::Run(run)).unwrap() {
        // Every process measures across the whole run, not one stretch.
        for p in 0..5 {
            let rounds: Vec<u32> = s
                .iter()
                .filter(|r| r.process == Some(p))
                .map(|r| r.round)
                .collect();
            assert_eq!(rounds.len(), 10, "{}: process {p}", c.info.key);
            let (lo, hi) = (rounds.iter().min().unwrap(), rounds.iter().max().unwrap());
            assert!(
                *lo < 10 && *hi >= 40,
                "process {p} only in rounds {lo}..{hi}"
            );
        }
        // The drift is shared by all processes alike: no variance between
        // them is found where there is none.
        let groups = crate::report::run::process_groups(s, "ns/op", "b").unwrap();
        let comp =
            crate::stats::nested::components(&groups, crate::stats::Confidence::percent(95.0))
                .unwrap();
        assert!(
            comp.process_p.unwrap() > 0.01,
            "{}: drift read as a process effect: {comp:?}",
            c.info.key
        );
    }
}

/// `repeat = { boots = 2 }`: each state's cells take their share on each
/// of two boots, and no state gets more than one boot ahead of another.
/// The boot is the run's `owner.boot_id`; the state a probe reading a
/// file the test writes.
/// Alone in a process of its own: a command cell of a test running beside
/// it treats every child of the process as its own (the subreaper and the
/// commands' cgroup), and took this test's probe or setup child with it.
#[test]
fn repeated_boots_take_a_share_each_and_the_states_alternate() {
    crate::system::tests::run_alone(
        "runner::tests::repeated_boots_take_a_share_each_and_the_states_alternate_alone",
    );
}

#[test]
#[ignore = "run by repeated_boots_take_a_share_each_and_the_states_alternate, alone"]
fn repeated_boots_take_a_share_each_and_the_states_alternate_alone() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let text = format!(
        "name = \"boots\"\nsamples = 2\nwarmup = 0\nrepeat = {{ boots = 2 }}\n\n[factors]\nmode = {{ apply = \"system\", probe = [\"cat\", \"{}\"], values = {{ on = \"on\", off = \"off\" }} }}\n\n[[bench]]\nname = \"t\"\ncommand = [\"true\"]\n",
        state.display()
    );
    let plan = crate::plan::parse(&text, "boots.toml").unwrap();
    assert_eq!(plan.repeat, crate::plan::Repeat { runs: 1, boots: 2 });
    let mut st = MemoryStore::new();
    let key = key("boots");
    // One boot in state `s`: what ran, and the summary.
    let boot = |st: &mut MemoryStore, s: &str, b: &str| -> (usize, usize, usize) {
        std::fs::write(&state, s).unwrap();
        let c = st
            .campaigns(crate::store::CampaignQuery::Named("boots"))
            .unwrap();
        let have = match c.first() {
            Some(c) => crate::campaign::progress_by_boot(st, c.id, None).unwrap(),
            None => Default::default(),
        };
        let mut o = options(2, 0);
        o.owner = Some(crate::record::Owner {
            pid: 1,
            start: 1,
            boot_id: b.into(),
        });
        let mut sink = StoreSink::new(st);
        let (s, _) = crate::runner::run(
            &plan,
            &o,
            Some(key.clone()),
            &have,
            &crate::testing::fingerprint(),
            &mut sink,
        )
        .unwrap();
        (s.ran, s.pending, s.next_boot)
    };
    assert_eq!(boot(&mut st, "on", "b1"), (1, 1, 0));
    // The same boot again: its share is taken.
    assert_eq!(boot(&mut st, "on", "b1"), (0, 1, 1));
    // A second boot of `on` before any of `off`: it waits.
    assert_eq!(boot(&mut st, "on", "b2"), (0, 1, 1));
    assert_eq!(boot(&mut st, "off", "b3"), (1, 1, 0));
    // Now either state may take its second boot.
    assert_eq!(boot(&mut st, "off", "b4"), (1, 1, 0));
    assert_eq!(boot(&mut st, "on", "b5"), (1, 1, 0));
    // Complete: 2 samples on each of 2 boots, each state.
    assert_eq!(boot(&mut st, "on", "b6"), (0, 1, 0));
    let c = st
        .campaigns(crate::store::CampaignQuery::Named("boots"))
        .unwrap();
    let p = crate::campaign::progress_by_boot(&st, c[0].id, None).unwrap();
    for states in p.boots.values() {
        let boots: Vec<u32> = states.values().flat_map(|b| b.values().copied()).collect();
        assert_eq!(boots, [2, 2], "{p:?}");
    }
}

/// Rounds are numbered on across a run's shell-factor groups: the cells
/// of two groups never share a round number, since they were never
/// measured in the same stretch of time, and a paired analysis must not
/// pair them.
/// Alone in a process of its own: a command cell of a test running beside
/// it treats every child of the process as its own (the subreaper and the
/// commands' cgroup), and took this test's probe or setup child with it.
#[test]
fn rounds_of_shell_groups_do_not_overlap() {
    crate::system::tests::run_alone("runner::tests::rounds_of_shell_groups_do_not_overlap_alone");
}

#[test]
#[ignore = "run by rounds_of_shell_groups_do_not_overlap, alone"]
fn rounds_of_shell_groups_do_not_overlap_alone() {
    let text = "name = \"groups\"\nsamples = 3\nwarmup = 1\n\n[factors]\nmode = { apply = \"shell\", values = [\"x\", \"y\"], setup = \"true\" }\n\n[[bench]]\nname = \"t\"\ncommand = [\"true\"]\n";
    let plan = crate::plan::parse(text, "groups.toml").unwrap();
    let mut st = MemoryStore::new();
    let (_, status, run) = testing::run(&mut st, &plan, &options(3, 1), None);
    assert_eq!(status, RunStatus::Done);
    let mut by_cell: Vec<Vec<u32>> = st
        .cells(Scope::Run(run))
        .unwrap()
        .iter()
        .map(|(_, s)| {
            let mut r: Vec<u32> = s.iter().map(|x| x.round).collect();
            r.dedup();
            r
        })
        .collect();
    by_cell.sort();
    assert_eq!(by_cell, [vec![0, 1, 2], vec![3, 4, 5]]);
}
