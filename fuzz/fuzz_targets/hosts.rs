//! The fleet's hosts file on arbitrary text: names bounded and free of
//! control characters, no password in a destination.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        kbench::fuzzing::hosts(text);
    }
});
