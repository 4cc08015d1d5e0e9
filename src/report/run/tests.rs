//! Reports of fixed records (no timing): snapshots of the text layouts and
//! checks of the JSON model.

use super::Report;
use crate::record::{Direction, Kind, Metric};
use crate::report::{Document, Format, render};
use crate::testing::{run_data, stored_cell};

fn ns() -> Metric {
    Metric::new("ns/op", "ns", Direction::Lower)
}

/// A getppid table of a pti x pcid matrix and a pipe-bw sweep with notes.
pub(super) fn mitigation_run() -> crate::store::RunData {
    let mut cells = Vec::new();
    for (i, (pti, pcid, base)) in [
        ("on", "on", 320.0),
        ("on", "off", 410.0),
        ("off", "on", 190.0),
        ("off", "off", 191.0),
    ]
    .into_iter()
    .enumerate()
    {
        let vals: Vec<f64> = (0..6).map(|k| base + k as f64 * 0.5).collect();
        let mut c = stored_cell(
            i as i64 + 1,
            "getppid",
            Kind::Micro,
            serde_json::json!({"cpu": 0}),
            &[("pti", pti), ("pcid", pcid)],
            &[],
            ns(),
            &vals,
        );
        c.0.placement = Some("cpu 0".into());
        cells.push(c);
    }
    for (i, chunk) in [4096, 65536].into_iter().enumerate() {
        let mut c = stored_cell(
            i as i64 + 10,
            "pipe-bw",
            Kind::Micro,
            serde_json::json!({"chunk": chunk, "pipe_size": 32768}),
            &[],
            &["chunk"],
            Metric::new("bytes/s", "B/s", Direction::Higher),
            // One far value: flagged as an outlier, kept.
            &[1.1e9, 1.12e9, 1.09e9, 1.11e9, 1.1e9, 0.4e9],
        );
        c.0.notes
            .insert("pipe size".into(), "32768 (requested 32k)".into());
        c.0.notes.insert("iterations".into(), "1000".into());
        cells.push(c);
    }
    run_data(cells)
}

fn text(r: Report) -> String {
    render(&Document::Reports(&[r]), Format::Text).unwrap()
}

#[test]
fn run_report_text() {
    insta::assert_snapshot!("run_report", text(Report::of_run(mitigation_run())));
}

/// The reason for `OUTLIER_MIN_SAMPLES`: drawn from one normal
/// distribution, cells of a few samples get an outlier flag far more often
/// than cells of ten or more.
#[test]
fn few_samples_make_the_outlier_rule_flag_undisturbed_cells() {
    use rand::{RngExt, SeedableRng};
    // Standard normal draws by inverting the distribution function.
    let normal = |rng: &mut rand_chacha::ChaCha8Rng| {
        crate::stats::dist::normal_quantile(rng.random::<f64>().clamp(1e-12, 1.0 - 1e-12))
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let flagged = |n: usize, rng: &mut rand_chacha::ChaCha8Rng| -> f64 {
        let cells = 4000;
        let hit = (0..cells)
            .filter(|_| {
                let v: Vec<f64> = (0..n).map(|_| 100.0 + normal(rng)).collect();
                !crate::stats::outliers::modified_z(&v, crate::stats::outliers::DEFAULT_THRESHOLD)
                    .flagged
                    .is_empty()
            })
            .count();
        hit as f64 / cells as f64
    };
    let few = flagged(5, &mut rng);
    let ten = flagged(super::OUTLIER_MIN_SAMPLES, &mut rng);
    let many = flagged(40, &mut rng);
    assert!(few > 0.17, "{few}");
    assert!(ten < few * 0.75 && many < few * 0.6, "{few} {ten} {many}");
}

#[test]
fn run_report_json_model() {
    let r = Report::of_run(mitigation_run());
    let v = crate::report::render::json_value(&Document::Reports(&[r])).unwrap();
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 6);
    let bw = &cells[4];
    assert_eq!(bw["direction"], "higher");
    // Six samples: too few for the outlier rule (OUTLIER_MIN_SAMPLES).
    assert_eq!(bw["outliers"], serde_json::json!([]));
    assert!(bw["ci95"][0].as_f64().unwrap() < bw["mean"].as_f64().unwrap());
    assert_eq!(bw["notes"]["pipe size"], "32768 (requested 32k)");
    assert_eq!(v["run"]["status"], "done");
    assert_eq!(v["config"]["version"], 2);
    assert_eq!(v["fingerprint"]["hostname"], "lab1");
}

#[test]
fn campaign_report_text_merges_runs_and_states() {
    let r = Report::of_campaign(mitigation_campaign());
    let rows: usize = r.groups.iter().map(|g| g.rows.len()).sum();
    assert_eq!(rows, 12, "each state its own row");
    assert!(r.groups[0].rows.iter().all(|x| x.runs.len() == 1));
    insta::assert_snapshot!("campaign_report", text(r));
}

/// The cells of [`mitigation_run`] measured again by a second run under
/// another state, as one campaign.
pub(super) fn mitigation_campaign() -> crate::store::CampaignData {
    let mut d = mitigation_run();
    // The same cells measured again by a second run, under another state.
    let mut more = d.cells.clone();
    for (c, s) in &mut more {
        c.id += 100;
        c.run_id = 2;
        c.info
            .readings
            .insert("cmdline.nopti".into(), "present".into());
        for x in s.iter_mut() {
            x.cell_id = c.id;
        }
    }
    d.cells.extend(more);
    let mut run2 = d.run.clone();
    run2.id = 2;
    crate::store::CampaignData {
        campaign: crate::store::CampaignRow {
            id: 1,
            name: "mitigation-cost".into(),
            plan_hash: "0123456789abcdef".into(),
            generation: 1,
            plan_text: String::new(),
            created: 1.7e9,
        },
        runs: vec![d.run.clone(), run2],
        cells: d.cells,
        failures: Vec::new(),
        latest: Some(d.details),
    }
}
