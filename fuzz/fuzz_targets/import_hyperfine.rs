//! `kbench import --from hyperfine`: the input is `hyperfine --export-json`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kbench::fuzzing::import_hyperfine(data));
