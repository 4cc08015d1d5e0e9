//! `kbench import --from ministat`: the first byte picks the column, the
//! delimiters and the direction, the rest is the data file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kbench::fuzzing::import_ministat(data));
