//! The event-stream reader (`kbench ingest`, the fleet's wire) on arbitrary bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kbench::fuzzing::events(data));
