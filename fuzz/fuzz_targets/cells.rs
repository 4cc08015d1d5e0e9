//! A plan's expansion into cells on arbitrary text: the cell bound is
//! checked before any cell is built, and every key is unique and shows
//! no secret.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        kbench::fuzzing::cells(text);
    }
});
