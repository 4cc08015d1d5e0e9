//! Errors callers match on. Everything else travels as `anyhow::Error`; the
//! one distinction the exit code needs is "the user gave bad input" (exit 2)
//! versus "a run failed" (exit 1).

use thiserror::Error;

/// Input the user can fix: a bad plan, an unknown benchmark, a value out of
/// range. The message names the file, line, key or value.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// A measurement whose identity (cell, metric, round, seq) a store already
/// holds with another value: two sources disagree about one sample. It is
/// reported, never dropped in silence, and is bad input (exit 2).
#[derive(Debug, Error)]
#[error(
    "conflicting duplicate: sample of metric `{metric}`, round {round}, value {new}, but the store holds {stored} for it"
)]
pub struct Conflict {
    /// The store's id of the sample's cell.
    pub cell_id: i64,
    pub metric: String,
    pub round: u32,
    pub stored: f64,
    pub new: f64,
}

/// Build an `anyhow::Error` that exits with code 2.
macro_rules! bad_input {
    ($($arg:tt)*) => {
        anyhow::Error::new($crate::error::BadInput(format!($($arg)*)))
    };
}
pub(crate) use bad_input;

/// A text the user wrote (a plan file, a stored campaign's plan) and the
/// name errors call it by: a byte span of it becomes `name:line:column`, so
/// every layer that reads part of such a text (the plan, a command
/// benchmark's keys) points at the same place the same way.
pub struct SourceText<'a> {
    pub name: String,
    pub text: &'a str,
}

impl SourceText<'_> {
    /// `name:line:column` of the span's start (both 1-based; the column
    /// counts bytes).
    pub fn at(&self, span: std::ops::Range<usize>) -> String {
        let upto = &self.text[..span.start.min(self.text.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rfind('\n').map_or(upto.len(), |i| upto.len() - i - 1) + 1;
        format!("{}:{line}:{col}", self.name)
    }

    /// Bad input (exit 2) at the span: `name:line:column: msg`.
    pub fn err(&self, span: std::ops::Range<usize>, msg: impl std::fmt::Display) -> anyhow::Error {
        bad_input!("{}: {msg}", self.at(span))
    }
}

/// Exit code for an error: 2 when any error in the chain is [`BadInput`]
/// (or a [`Conflict`], which is bad input too).
pub fn exit_code(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|e| e.is::<BadInput>() || e.is::<Conflict>())
    {
        2
    } else {
        1
    }
}

/// True when the error is a closed stdout (`kbench report | head`), which
/// is not a failure. serde_json's writer errors hide the io::Error from
/// the chain (their `source` skips it): asked for its kind directly.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    use std::io::ErrorKind::BrokenPipe;
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == BrokenPipe)
            || e.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(BrokenPipe))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_maps_to_2_even_with_context() {
        let e = bad_input!("unknown benchmark `x`").context("while loading plan");
        assert_eq!(exit_code(&e), 2);
        let e = anyhow::anyhow!("sample failed");
        assert_eq!(exit_code(&e), 1);
    }

    #[test]
    fn a_span_is_named_by_line_and_column() {
        let src = SourceText {
            name: "p.toml".into(),
            text: "a = 1\nbb = \"x\"\n",
        };
        assert_eq!(src.at(0..1), "p.toml:1:1");
        assert_eq!(src.at(11..14), "p.toml:2:6");
        assert_eq!(src.at(99..100), "p.toml:3:1");
        let e = src.err(6..8, "`bb` is wrong");
        assert_eq!(e.to_string(), "p.toml:2:1: `bb` is wrong");
        assert_eq!(exit_code(&e), 2);
    }

    /// An event too long for stdout's line buffer meets the closed pipe
    /// inside serde_json (`--events jsonl` to a fleet coordinator that
    /// went away): still a closed stdout, so the run is interrupted, not
    /// failed.
    #[test]
    fn a_closed_pipe_inside_serde_json_is_a_broken_pipe() {
        struct Closed;
        impl std::io::Write for Closed {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let e = serde_json::to_writer(Closed, &[1u8; 4]).unwrap_err();
        assert!(is_broken_pipe(
            &anyhow::Error::from(e).context("writing events")
        ));
        let e = anyhow::anyhow!("sample failed");
        assert!(!is_broken_pipe(&e));
    }
}
