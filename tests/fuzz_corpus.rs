//! Replays the committed fuzzing corpora (`fuzz/corpus/<target>/`) and the
//! inputs that once crashed a target (`fuzz/regressions/<target>/`) through
//! the same entry points the `cargo fuzz` targets call, on stable Rust in
//! every `cargo test`: none may panic or abort.

use std::path::Path;

fn replay(target: &str, run: fn(&[u8])) -> usize {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in entries.flatten() {
            let data = std::fs::read(e.path()).unwrap();
            let caught = std::panic::catch_unwind(|| run(&data));
            assert!(caught.is_ok(), "{} panicked", e.path().display());
            n += 1;
        }
    }
    n
}

#[test]
fn plan_corpus() {
    let n = replay("plan", |d| {
        if let Ok(t) = std::str::from_utf8(d) {
            kbench::fuzzing::plan(t)
        }
    });
    assert!(n >= 6, "only {n} plan inputs");
}

#[test]
fn events_corpus() {
    let n = replay("events", kbench::fuzzing::events);
    assert!(n >= 1, "only {n} event inputs");
}

#[test]
fn ministat_corpus() {
    let n = replay("ministat", kbench::fuzzing::ministat);
    assert!(n >= 20, "only {n} ministat inputs");
}

#[test]
fn import_ministat_corpus() {
    let n = replay("import_ministat", kbench::fuzzing::import_ministat);
    assert!(n >= 4, "only {n} import_ministat inputs");
}

#[test]
fn import_wis_corpus() {
    let n = replay("import_wis", kbench::fuzzing::import_wis);
    assert!(n >= 4, "only {n} import_wis inputs");
}

#[test]
fn import_hyperfine_corpus() {
    let n = replay("import_hyperfine", kbench::fuzzing::import_hyperfine);
    assert!(n >= 4, "only {n} import_hyperfine inputs");
}

#[test]
fn cells_corpus() {
    let n = replay("cells", |d| {
        if let Ok(t) = std::str::from_utf8(d) {
            kbench::fuzzing::cells(t)
        }
    });
    assert!(n >= 8, "only {n} cells inputs");
}

#[test]
fn hosts_corpus() {
    let n = replay("hosts", |d| {
        if let Ok(t) = std::str::from_utf8(d) {
            kbench::fuzzing::hosts(t)
        }
    });
    assert!(n >= 4, "only {n} hosts inputs");
}
