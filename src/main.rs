//! The `kbench` binary: everything lives in the library (`src/lib.rs`).

fn main() -> std::process::ExitCode {
    kbench::main()
}
