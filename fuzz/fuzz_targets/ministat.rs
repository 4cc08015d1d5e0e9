//! `kbench ministat`'s option parser, input reader, statistics and plot:
//! the first line is the options, the rest stdin.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kbench::fuzzing::ministat(data));
