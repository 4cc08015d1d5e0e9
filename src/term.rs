//! What reaches a terminal. Text kbench prints comes partly from data it
//! did not write: a command's stderr tail in a failure, names from a plan
//! or an imported file, an event stream's strings. A control character in
//! them (ESC starting an escape sequence that retitles the window or
//! rewrites the screen, BEL, NUL, a carriage return that overwrites the
//! line) is shown escaped instead (`\x1b`, `\u{9b}`), so text output and
//! messages show the data and never act on the terminal. Newlines and
//! tabs, which lay text out, pass.

use std::borrow::Cow;

/// `s` with every control character but `\n` and `\t` escaped.
pub fn visible(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_hidden(c) {
            match c {
                '\r' => out.push_str("\\r"),
                c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text output's width: lines kbench prints fit in 80 columns.
pub const WIDTH: usize = 80;

/// Words of `text` in lines of at most `max` columns, the continuation
/// lines indented by `indent`.
pub fn wrap(text: &str, max: usize, indent: &str) -> String {
    let mut o = String::new();
    let lead = text.chars().count() - text.trim_start().chars().count();
    let mut line = " ".repeat(lead);
    for w in text.trim_start().split(' ') {
        if !line.trim().is_empty() && line.chars().count() + 1 + w.chars().count() > max {
            o.push_str(line.trim_end());
            o.push('\n');
            line = indent.to_string();
        } else if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    o.push_str(line.trim_end());
    o.push('\n');
    o
}

/// `first` then `text`, wrapped within [`WIDTH`] columns, continuation
/// lines starting with `rest`.
pub fn wrapped(first: &str, text: &str, rest: &str) -> String {
    wrap(&format!("{first}{text}"), WIDTH, rest)
}

/// Write `text` to stdout and flush it (a closed pipe is the caller's
/// error to map: `error::is_broken_pipe`).
pub fn out(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut o = Stdout;
    o.write_all(text.as_bytes())?;
    o.flush()?;
    Ok(())
}

/// Standard output whose errors name it: `stdout: No space left on
/// device (os error 28)` rather than a bare errno (`kbench run >
/// /dev/full`). The error keeps its kind, so a closed pipe is still one.
pub struct Stdout;

impl Stdout {
    fn named(e: std::io::Error) -> std::io::Error {
        std::io::Error::new(e.kind(), format!("stdout: {e}"))
    }
}

impl std::io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::stdout().lock().write(buf).map_err(Stdout::named)
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        std::io::stdout()
            .lock()
            .write_all(buf)
            .map_err(Stdout::named)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().lock().flush().map_err(Stdout::named)
    }
}

/// Control characters (C0, DEL, C1) other than newline and tab; and the
/// bidirectional overrides, which reorder what follows them on screen.
fn is_hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || ('\u{202a}'..='\u{202e}').contains(&c)
        || ('\u{2066}'..='\u{2069}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_not_sent() {
        assert_eq!(visible("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\x1b]0;pwned\x07b\0c\rd"),
            "a\\x1b]0;pwned\\x07b\\x00c\\rd"
        );
        assert_eq!(visible("\u{9b}31m \u{202e}x"), "\\x9b31m \\u{202e}x");
        assert_eq!(visible("µs ±"), "µs ±");
    }
}

/// An argument vector as one shell command line: each word quoted where
/// the shell would otherwise split or expand it (`printf '%s\n' 'a b'`),
/// so a command a report prints pastes back into `sh` unchanged. A word
/// with a NUL byte cannot be quoted; it is shown as it is.
pub fn shell_line(argv: &[String]) -> String {
    shlex::try_join(argv.iter().map(String::as_str)).unwrap_or_else(|_| argv.join(" "))
}

#[cfg(test)]
mod shell_line_tests {
    use super::shell_line;

    /// The printed line, run by `sh -c`, passes the same words.
    #[test]
    fn a_quoted_line_round_trips_through_sh() {
        let argv: Vec<String> = ["printf", "[%s]\\n", "a b", "it's", "$HOME", "*", ""]
            .map(String::from)
            .to_vec();
        let line = shell_line(&argv);
        let direct = std::process::Command::new(&argv[0])
            .args(&argv[1..])
            .output()
            .unwrap();
        let via_sh = std::process::Command::new("sh")
            .args(["-c", line.as_str()])
            .output()
            .unwrap();
        assert!(direct.status.success());
        assert_eq!(
            String::from_utf8_lossy(&via_sh.stdout),
            "[a b]\n[it's]\n[$HOME]\n[*]\n[]\n",
            "{line}"
        );
        assert_eq!(via_sh.stdout, direct.stdout, "{line}");
        assert_eq!(shell_line(&["true".to_string()]), "true");
    }
}

/// `s` cut to `width` characters, a cut marked with `~`.
pub fn shorten(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let cut: String = s.chars().take(width.saturating_sub(1)).collect();
    format!("{cut}~")
}
