//! What every renderer formats the same way, in one place: chart axes
//! with round ticks ([`axis`]), values in human units ([`human`]),
//! ministat's columns ([`stat`]), a grid of strings laid out as aligned
//! text or a Markdown table ([`grid`]), CSV fields, the HTML page, text
//! wrapped within [`WIDTH`] columns, user strings escaped for HTML and
//! for Markdown, and times. A renderer imports these and never another
//! renderer's module for them.

pub mod axis;
pub mod grid;
pub mod human;
pub mod stat;

pub use crate::term::{WIDTH, wrap};

/// The entity of a character HTML gives a meaning (`&`, `<`, `>`, `"`).
fn entity(c: char) -> Option<&'static str> {
    match c {
        '&' => Some("&amp;"),
        '<' => Some("&lt;"),
        '>' => Some("&gt;"),
        '"' => Some("&quot;"),
        _ => None,
    }
}

/// Escape text for HTML element content and attribute values.
pub fn html_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match (entity(c), c) {
            (Some(e), _) => o.push_str(e),
            (None, '\'') => o.push_str("&#39;"),
            (None, c) => o.push(c),
        }
    }
    o
}

/// Escape a user string for Markdown (and the HTML GitHub renders it to):
/// table pipes, HTML specials, emphasis and code marks.
pub fn md_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match (entity(c), c) {
            (Some(e), _) => o.push_str(e),
            (None, '|' | '*' | '_' | '`' | '[' | ']' | '\\' | '#') => {
                o.push('\\');
                o.push(c);
            }
            (None, '\n') => o.push(' '),
            (None, c) => o.push(c),
        }
    }
    o
}

/// The style of every HTML page (no network request: fonts and colours
/// are the browser's own).
const CSS: &str = "body{font-family:sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}\
th{background:#f3f3f3}td.l,th.l{text-align:left}.sig{font-weight:bold}pre{background:#f7f7f7;padding:.5em;overflow:auto}\
.legend{color:#555;font-size:90%}svg{display:block;margin:.5em 0}";

/// A self-contained page: the report's style, no network requests.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\
         <title>{}</title><style>{CSS}</style></head>\n<body>\n{body}</body></html>\n",
        html_escape(title)
    )
}

/// What `f` writes into a new string.
pub fn written(f: impl FnOnce(&mut String)) -> String {
    let mut o = String::new();
    f(&mut o);
    o
}

/// A CSV field (RFC 4180), quoted when it holds a comma, quote or line
/// break.
pub fn csv_field(o: &mut String, s: &str) {
    if s.contains([',', '"', '\n', '\r']) {
        o.push('"');
        o.push_str(&s.replace('"', "\"\""));
        o.push('"');
    } else {
        o.push_str(s);
    }
}

/// The words of `s` as lines of at most `w` columns (a longer word is a
/// line of its own).
pub fn wrap_lines(s: &str, w: usize) -> Vec<String> {
    wrap(s, w, "").lines().map(str::to_string).collect()
}

/// A Unix time as `2024-05-01 12:00:00 UTC`.
pub fn time(t: f64) -> String {
    chrono::DateTime::from_timestamp(t as i64, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escape_covers_markup_and_quotes() {
        assert_eq!(
            html_escape("<a href=\"x\">Tom & 'Jerry'</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn md_escape_keeps_a_table_cell_one_cell() {
        assert_eq!(md_escape("a|b *c* `d`\ne"), "a\\|b \\*c\\* \\`d\\` e");
        assert_eq!(md_escape("x<y"), "x&lt;y");
    }

    #[test]
    fn wrap_lines_keeps_every_word_within_the_width() {
        let s = "one two three four five six seven eight nine ten eleven";
        let lines = wrap_lines(s, 14);
        assert!(lines.iter().all(|l| l.chars().count() <= 14), "{lines:?}");
        assert_eq!(lines.join(" "), s);
        // A word longer than the width stands alone, uncut.
        assert_eq!(wrap_lines("a abcdefghij b", 5), ["a", "abcdefghij", "b"]);
        assert_eq!(wrap_lines("", 5), [""]);
    }

    #[test]
    fn time_is_utc_to_the_second() {
        assert_eq!(time(0.0), "1970-01-01 00:00:00 UTC");
        assert_eq!(time(1.7e9 + 0.9), "2023-11-14 22:13:20 UTC");
    }

    #[test]
    fn wrap_keeps_lines_within_the_width() {
        let t = "  - running under a hypervisor (KVMKVMKVM): steal time and vCPU wake-ups add noise (remedy: measure on bare metal, or pin vCPUs on the host)";
        let w = wrap(t, 80, "    ");
        assert!(w.lines().all(|l| l.chars().count() <= 80), "{w}");
        assert!(w.starts_with("  - running") && w.lines().nth(1).unwrap().starts_with("    "));
    }
}
