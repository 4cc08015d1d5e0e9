//! Compiles the scale testcases' C loops (`src/bench/scale/loops.c`) with
//! the system C compiler and will-it-scale's flags, and links them into
//! kbench.
//!
//! At build time rather than at first use (as a user's C testcase is
//! compiled): Rust already needs a C compiler here to link, so this adds no
//! dependency; the binary then needs no compiler where it runs (a fleet
//! host, a test machine); and a loop cannot differ between two runs of one
//! binary because the compiler on the machine changed in between.

fn main() {
    let src = "src/bench/scale/loops.c";
    println!("cargo::rerun-if-changed={src}");
    if let Err(e) = loops(src).try_compile("kbench_loops") {
        // One line naming what is missing, not cc's panic and backtrace.
        println!(
            "cargo::error=compiling {src} needs a C compiler (cc, or the one $CC names: install gcc or clang): {e}"
        );
    }
}

/// The build of `src` with will-it-scale's flags.
fn loops(src: &str) -> cc::Build {
    let mut b = cc::Build::new();
    b.file(src)
        // will-it-scale's Makefile: CFLAGS+=-Wall -O2 -g, whatever the
        // profile of this build (cc would follow Cargo's opt-level).
        .opt_level(2)
        .debug(true)
        .warnings(true)
        .extra_warnings(false)
        // Its executables are built as the compiler's default PIE, so its
        // globals and thread-locals are reached directly (%rip-relative,
        // %fs-relative); -fPIC, cc's default, would reach them through the
        // GOT and __tls_get_addr. cc also adds frame pointers with debug
        // information, which will-it-scale's -g does not.
        .pic(false)
        .flag("-fPIE")
        .force_frame_pointer(false);
    b
}
