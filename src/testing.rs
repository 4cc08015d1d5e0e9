//! Fixtures for the unit tests of the runner, stores, reports and
//! comparisons: a fixed fingerprint, plans of fake benchmarks with given
//! values, and a run of such a plan into a store. Test builds only.

use std::sync::Arc;

use crate::bench::fake::Fake;
use crate::bench::{BenchRef, Direction, Metric};
use crate::event::{Collect, Sink, Tee};
use crate::plan::{BenchSpec, Plan};
use crate::record::{CampaignKey, RunConfig, RunStatus};
use crate::runner;
use crate::store::{Store, sink::StoreSink};
use crate::system::Fingerprint;

/// A machine that never changes and warns of nothing.
pub fn fingerprint() -> Fingerprint {
    Fingerprint {
        hostname: "lab1".into(),
        os: "Linux".into(),
        os_release: Some("Debian GNU/Linux 12 (bookworm)".into()),
        kernel_release: "6.1.0-test".into(),
        kernel_version: "#1 SMP".into(),
        cpu_model: Some("Test CPU @ 3.00GHz".into()),
        sockets: 1,
        cores: 2,
        threads: 4,
        online_cpus: "0-3".into(),
        smt: Some("on".into()),
        numa_nodes: 1,
        memory_bytes: 16 << 30,
        ..Default::default()
    }
}

pub fn ns() -> Metric {
    Metric::new("ns/op", "ns", Direction::Lower)
}

pub fn bps() -> Metric {
    Metric::new("bytes/s", "B/s", Direction::Higher)
}

/// A `[[bench]]` of a fake benchmark, swept over `variants`.
pub fn bench(fake: Fake, variants: &[i64]) -> BenchSpec {
    let vals: Vec<toml::Value> = variants.iter().map(|v| toml::Value::Integer(*v)).collect();
    BenchSpec {
        display: fake.name.clone(),
        bench: BenchRef::Owned(Arc::new(fake)),
        fixed: Vec::new(),
        sweep: if variants.is_empty() {
            Vec::new()
        } else {
            vec![("variant".into(), vals)]
        },
        label_params: if variants.is_empty() {
            Vec::new()
        } else {
            vec!["variant".into()]
        },
        samples: None,
    }
}

pub fn plan(name: &str, benches: Vec<BenchSpec>) -> Plan {
    Plan {
        name: name.into(),
        path: None,
        text: format!("name = \"{name}\""),
        samples: None,
        sample_time: None,
        warmup: None,
        processes: None,
        repeat: Default::default(),
        seed: None,
        precision: None,
        factors: Vec::new(),
        benches,
        reboot: None,
        layout: None,
        gate: None,
    }
}

pub fn options(samples: u32, warmup: u32) -> RunConfig {
    RunConfig {
        argv: vec!["kbench".into(), "run".into()],
        ..RunConfig::new("test", samples, 0.001, warmup, 7)
    }
}

/// Run `plan` into `store`; returns the run's events and how it ended.
pub fn run(
    store: &mut dyn Store,
    plan: &Plan,
    opts: &RunConfig,
    campaign: Option<CampaignKey>,
) -> (Vec<crate::event::Event>, RunStatus, i64) {
    let have = match &campaign {
        Some(k) => store
            .campaigns(crate::store::CampaignQuery::Named(&k.name))
            .unwrap()
            .iter()
            .find(|c| c.generation == k.generation)
            .map(|c| crate::campaign::progress(store, c.id).unwrap())
            .unwrap_or_default(),
        None => Default::default(),
    };
    let mut sink = StoreSink::new(store);
    let mut all = Collect::default();
    let (summary, status) = {
        let sinks: Vec<&mut dyn Sink> = vec![&mut sink, &mut all];
        runner::run(plan, opts, campaign, &have, &fingerprint(), &mut Tee(sinks)).unwrap()
    };
    let id = summary
        .run
        .as_deref()
        .and_then(|u| sink.run_id(u))
        .unwrap_or(0);
    (all.0, status, id)
}

/// A stored cell made by hand: `params` and `factors` as JSON objects.
#[allow(clippy::too_many_arguments)]
pub fn stored_cell(
    id: i64,
    bench: &str,
    kind: crate::record::Kind,
    params: serde_json::Value,
    factors: &[(&str, &str)],
    label_params: &[&str],
    metric: Metric,
    values: &[f64],
) -> crate::store::StoredCell {
    use crate::store::{CellRec, SampleRec};
    let serde_json::Value::Object(params) = params else {
        panic!("params must be an object")
    };
    let cell = CellRec {
        id,
        run_id: 1,
        info: crate::record::CellInfo {
            key: format!("{bench}#{id}"),
            bench: bench.into(),
            source: bench.into(),
            kind,
            params,
            factors: factors
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            label_params: label_params.iter().map(|s| s.to_string()).collect(),
            metrics: vec![metric.clone()],
            readings: Default::default(),
        },
        placement: None,
        notes: Default::default(),
        status: None,
    };
    let samples = values
        .iter()
        .enumerate()
        .map(|(i, &value)| SampleRec {
            cell_id: id,
            names: crate::store::Names::new(&metric.name, &metric.unit),
            value,
            round: i as u32,
            seq: 0,
            t: 1.7e9 + i as f64,
            process: None,
        })
        .collect();
    (cell, samples)
}

/// A finished run holding `cells`, for report tests.
pub fn run_data(cells: Vec<crate::store::StoredCell>) -> crate::store::RunData {
    crate::store::RunData {
        run: crate::store::RunRow {
            id: 1,
            uuid: "00000000-0000-4000-8000-000000000001".into(),
            campaign: None,
            host: "lab1".into(),
            started: 1.7e9,
            ended: Some(1.7e9 + 60.0),
            status: RunStatus::Done,
            cells: cells.len() as i64,
            samples: cells.iter().map(|(_, s)| s.len() as i64).sum(),
            overhead_ns: 0.31,
            labels: Default::default(),
        },
        details: crate::store::RunDetails {
            fingerprint: fingerprint(),
            config: crate::record::RunConfig::new("adhoc", 10, 0.2, 2, 7),
        },
        cells,
        failures: Vec::new(),
    }
}
