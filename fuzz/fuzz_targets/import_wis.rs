//! `kbench import --from will-it-scale`: the input is runtest.py's CSV.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kbench::fuzzing::import_wis(data));
