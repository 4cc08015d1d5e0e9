//! Shared helpers for the integration tests: the real `kbench` binary with
//! a throw-away store.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `kbench` with `KBENCH_DB` pointing into `dir` and no progress bar.
pub fn kbench(dir: &Path) -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("kbench").expect("binary built");
    c.env("KBENCH_DB", db(dir)).env("NO_COLOR", "1");
    c
}

pub fn db(dir: &Path) -> PathBuf {
    dir.join("kbench.db")
}

/// Open the store a test wrote, read-only.
pub fn sqlite(dir: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(db(dir), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .expect("store exists")
}

/// Write a plan file into `dir`.
pub fn plan(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write plan");
    p
}
