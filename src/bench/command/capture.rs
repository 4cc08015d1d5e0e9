//! Reading a command's captured output in bounded memory.
//!
//! A command's stdout/stderr go to files in its cell's scratch directory
//! (writing them costs the command what writing any file costs); the
//! custom metrics read those files back here without ever holding a whole
//! stream in memory, so a command printing 400 MB costs kbench a few MiB:
//!
//! - a **regular expression** that cannot match a newline (no `\n`, `\s`,
//!   `[^x]` or `(?s).` in it) is matched window by window over complete
//!   lines, with the bytes around each window kept as look-around context,
//!   so the first match is exactly the one a search of the whole stream
//!   finds; only a single line longer than [`LINE_CAP`] is refused;
//! - a regular expression that can match across lines is matched against
//!   the whole stream, which must then be at most [`WHOLE_CAP`] bytes (the
//!   error says so and how to write the regex within a line);
//! - a **JSON pointer** is followed while the stream is parsed; everything
//!   off the pointer's path is skipped without being kept.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The longest line a line-local regex reads.
pub const LINE_CAP: usize = 8 << 20;
/// The most a regex that can match across lines reads.
pub const WHOLE_CAP: u64 = 16 << 20;
/// How much is read at a time.
const CHUNK: usize = 1 << 20;
/// Look-behind context kept before a window (one UTF-8 character).
const CONTEXT: usize = 4;

fn mib(n: u64) -> String {
    format!("{} MiB", n >> 20)
}

/// A regex metric's pattern, compiled for bytes (a stream need not be
/// UTF-8), knowing whether a match can span lines.
#[derive(Clone, Debug)]
pub struct LineRegex {
    re: regex::bytes::Regex,
    multiline: bool,
}

impl LineRegex {
    /// The bytes version of a pattern the plan already compiled.
    pub fn new(re: &regex::Regex) -> LineRegex {
        let pattern = re.as_str();
        let multiline = regex_syntax::parse(pattern).map_or(true, |h| can_match_newline(&h));
        LineRegex {
            re: regex::bytes::Regex::new(pattern).expect("the plan compiled this regex"),
            multiline,
        }
    }

    /// The text of the metric's group (`value`, else 1, else the match) in
    /// the first match in `path`, or `None` when nothing matches. `what`
    /// names the stream in errors.
    pub fn first(&self, path: &Path, what: &str) -> Result<Option<String>, String> {
        let f = File::open(path).map_err(|e| format!("cannot read {what}: {e}"))?;
        if self.multiline {
            let len = f.metadata().map(|m| m.len()).unwrap_or(0);
            if len > WHOLE_CAP {
                return Err(format!(
                    "regex `{}` can match across lines, so it is matched against the whole of {what}, which is {len} bytes; kbench reads at most {} for such a regex (make it match within a line: `[ \\t]` for `\\s`, `[^x\\n]` for `[^x]`)",
                    self.re.as_str(),
                    mib(WHOLE_CAP)
                ));
            }
            let mut b = Vec::new();
            f.take(WHOLE_CAP)
                .read_to_end(&mut b)
                .map_err(|e| format!("cannot read {what}: {e}"))?;
            return Ok(self.captured(&b, 0));
        }
        self.first_by_lines(f, what)
    }

    fn captured(&self, hay: &[u8], start: usize) -> Option<String> {
        let c = self.re.captures_at(hay, start)?;
        let g = c
            .name("value")
            .or_else(|| c.get(1))
            .or_else(|| c.get(0))
            .expect("group 0 always exists");
        Some(String::from_utf8_lossy(g.as_bytes()).into_owned())
    }

    /// Window by window: `buf` holds up to [`CONTEXT`] bytes already
    /// searched (look-behind only) and then unsearched bytes; each pass
    /// searches the complete lines and keeps the incomplete one.
    fn first_by_lines(&self, mut r: impl Read, what: &str) -> Result<Option<String>, String> {
        let mut buf: Vec<u8> = Vec::with_capacity(2 * CHUNK);
        let mut ctx = 0;
        loop {
            let old = buf.len();
            buf.resize(old + CHUNK, 0);
            let n = read_full(&mut r, &mut buf[old..])
                .map_err(|e| format!("cannot read {what}: {e}"))?;
            buf.truncate(old + n);
            let eof = n < CHUNK;
            let end = if eof {
                buf.len()
            } else {
                match buf[ctx..].iter().rposition(|&b| b == b'\n') {
                    Some(i) => ctx + i + 1,
                    None if buf.len() - ctx > LINE_CAP => {
                        return Err(format!(
                            "{what} has a line longer than {}, more than a regex metric reads",
                            mib(LINE_CAP as u64)
                        ));
                    }
                    None => continue,
                }
            };
            // A match cannot contain a newline, so one starting before
            // `end` ends at or before the newline at `end - 1`, with the
            // newline itself as its look-ahead. An empty match at `end` is
            // looked for again in the next window, with what follows.
            let hay = &buf[..end];
            if let Some(c) = self.re.find_at(hay, ctx)
                && (c.start() < end || eof)
            {
                return Ok(self.captured(hay, ctx));
            }
            if eof {
                return Ok(None);
            }
            let keep = end.saturating_sub(CONTEXT);
            buf.drain(..keep);
            ctx = end - keep;
        }
    }
}

/// Read until `buf` is full or the stream ends; the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Whether any string the pattern matches can contain `\n` (a literal, a
/// class or `.` under `(?s)` that includes it). Conservative: a class
/// holding `\n` counts even where the rest of the pattern rules it out.
fn can_match_newline(h: &regex_syntax::hir::Hir) -> bool {
    use regex_syntax::hir::{Class, HirKind};
    match h.kind() {
        HirKind::Empty | HirKind::Look(_) => false,
        HirKind::Literal(l) => l.0.contains(&b'\n'),
        HirKind::Class(Class::Unicode(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= '\n' && '\n' <= r.end()),
        HirKind::Class(Class::Bytes(c)) => c
            .ranges()
            .iter()
            .any(|r| r.start() <= b'\n' && b'\n' <= r.end()),
        HirKind::Repetition(r) => can_match_newline(&r.sub),
        HirKind::Capture(c) => can_match_newline(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().any(can_match_newline),
    }
}

/// What a JSON pointer leads to.
#[derive(Debug, PartialEq)]
pub enum Found {
    Number(f64),
    Text(String),
    /// Something else, described (`an object`, `true`).
    Other(String),
    Missing,
}

/// Follow an RFC 6901 pointer into the JSON document in `path`, reading it
/// as a stream: only the pointer's path is looked at, everything else is
/// skipped. Err when the file is not one JSON document.
pub fn json_pointer(path: &Path, pointer: &str) -> Result<Found, String> {
    let f = File::open(path).map_err(|e| format!("cannot read stdout: {e}"))?;
    json_pointer_in(BufReader::with_capacity(CHUNK, f), pointer)
}

fn json_pointer_in(r: impl Read, pointer: &str) -> Result<Found, String> {
    let tokens: Option<Vec<String>> = if pointer.is_empty() {
        Some(Vec::new())
    } else {
        pointer.strip_prefix('/').map(|p| {
            p.split('/')
                .map(|t| t.replace("~1", "/").replace("~0", "~"))
                .collect()
        })
    };
    let mut de = serde_json::Deserializer::from_reader(r);
    let found = match &tokens {
        Some(t) => Follow(t).deserialize(&mut de),
        // Not a pointer at all: nothing is there, but the stream must
        // still be JSON.
        None => <IgnoredAny as serde::Deserialize>::deserialize(&mut de).map(|_| Found::Missing),
    }
    .and_then(|f| de.end().map(|_| f))
    .map_err(|e| format!("stdout is not JSON: {e}"))?;
    Ok(found)
}

struct Follow<'a>(&'a [String]);

impl<'de> DeserializeSeed<'de> for Follow<'_> {
    type Value = Found;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Found, D::Error> {
        d.deserialize_any(self)
    }
}

impl Follow<'_> {
    fn scalar(&self, what: impl FnOnce() -> Found) -> Found {
        if self.0.is_empty() {
            what()
        } else {
            Found::Missing
        }
    }
}

impl<'de> Visitor<'de> for Follow<'_> {
    type Value = Found;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Other(v.to_string())))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Number(v as f64)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Number(v as f64)))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Number(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Text(v.to_string())))
    }
    fn visit_unit<E>(self) -> Result<Found, E> {
        Ok(self.scalar(|| Found::Other("null".into())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found, A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(Found::Other("an array".into()));
        };
        // As serde_json's `pointer`: decimal digits, no leading zero.
        let index = (!first.starts_with('+') && (first == "0" || !first.starts_with('0')))
            .then(|| first.parse::<usize>().ok())
            .flatten();
        let mut found = Found::Missing;
        let mut i = 0;
        loop {
            if Some(i) == index {
                match seq.next_element_seed(Follow(rest))? {
                    Some(f) => found = f,
                    None => break,
                }
            } else if seq.next_element::<IgnoredAny>()?.is_none() {
                break;
            }
            i += 1;
        }
        Ok(found)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found, A::Error> {
        let Some((first, rest)) = self.0.split_first() else {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(Found::Other("an object".into()));
        };
        let mut found = Found::Missing;
        while let Some(k) = map.next_key::<String>()? {
            if k == *first {
                // A repeated key: the last one wins, as in serde_json's Value.
                found = map.next_value_seed(Follow(rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_in(pattern: &str, text: &[u8]) -> Result<Option<String>, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out");
        std::fs::write(&p, text).unwrap();
        LineRegex::new(&regex::Regex::new(pattern).unwrap()).first(&p, "stdout")
    }

    /// What a search of the whole text in memory finds.
    fn whole(pattern: &str, text: &[u8]) -> Option<String> {
        let re = LineRegex::new(&regex::Regex::new(pattern).unwrap());
        re.captured(text, 0)
    }

    #[test]
    fn newline_detection() {
        let ml = |p: &str| LineRegex::new(&regex::Regex::new(p).unwrap()).multiline;
        for p in [
            r"time: (\d+)",
            r"^x$",
            r"(?m)^a.b$",
            r"[^\n]+",
            r"\bword\b",
            r"a|b",
        ] {
            assert!(!ml(p), "{p}");
        }
        for p in [
            r"a\nb",
            r"\s+(\d+)",
            r"[^x]",
            r"(?s)a.b",
            r"a[\x00-\x7f]b",
            r"(x|\n)",
        ] {
            assert!(ml(p), "{p}");
        }
    }

    #[test]
    fn windows_find_what_a_whole_search_finds() {
        // Text larger than several windows, with the interesting bytes at
        // window edges: the first match is the whole search's.
        let mut text = Vec::new();
        let line = b"filler line 0123456789 abcdefghijklmnopqrstuvwxyz\n";
        while text.len() < 3 * CHUNK + 17 {
            text.extend_from_slice(line);
        }
        let cases: Vec<(&str, Vec<u8>)> = vec![
            (
                r"result: (\d+)",
                [&text[..], b"result: 42\nresult: 7\n"].concat(),
            ),
            (r"^result: (\d+)$", [&text[..], b"result: 42"].concat()),
            (r"\Aresult", [&text[..], b"result"].concat()),
            (r"(?m)^filler line (\d)", text.clone()),
            (r"(\d+)\z", [&text[..], b"end 99"].concat()),
            (r"(\d+)$", [&text[..], b"end 99\n"].concat()),
            (r"\bz(\w*)", [&text[..], b"xyz zed\n"].concat()),
        ];
        for (p, t) in &cases {
            assert_eq!(first_in(p, t).unwrap(), whole(p, t), "{p}");
        }
        assert_eq!(
            first_in(r"result: (\d+)", &cases[0].1).unwrap().unwrap(),
            "42"
        );
        assert_eq!(first_in(r"\Aresult", &cases[2].1).unwrap(), None);
        assert_eq!(first_in(r"(\d+)$", &cases[5].1).unwrap(), None);
        assert_eq!(first_in(r"(\d+)\z", &cases[4].1).unwrap().unwrap(), "99");
        // A match exactly at a window boundary: every offset of a short
        // marker around the first window's end.
        for shift in 0..8 {
            let mut t = vec![b'.'; CHUNK - 4 + shift];
            t.extend_from_slice(b"\nmark 5\n");
            assert_eq!(first_in(r"mark (\d)", &t).unwrap().unwrap(), "5", "{shift}");
        }
    }

    #[test]
    fn long_lines_and_cross_line_regexes_have_limits() {
        let long = vec![b'x'; LINE_CAP + 2 * CHUNK];
        let e = first_in("y", &long).unwrap_err();
        assert!(e.contains("longer than 8 MiB"), "{e}");
        let big = b"a line\n".repeat((WHOLE_CAP / 7 + 1) as usize);
        let e = first_in(r"line\s+(\d)", &big).unwrap_err();
        assert!(
            e.contains("can match across lines") && e.contains("16 MiB"),
            "{e}"
        );
        // Within the cap a cross-line regex reads the whole stream.
        assert_eq!(first_in(r"a\s+(\d)", b"a\n 5").unwrap().unwrap(), "5");
    }

    #[test]
    fn invalid_utf8_is_searched_as_bytes() {
        assert_eq!(
            first_in(r"n=(\d+)", b"\xff\xfe junk n=12\n")
                .unwrap()
                .unwrap(),
            "12"
        );
    }

    #[test]
    fn json_pointer_follows_the_path_like_serde_json() {
        let doc = r#"{"a": {"b": [1, {"c": 2.5}, "3"]}, "s": "x", "t": true, "n": null,
                     "d": 1, "d": 4, "~/": 9, "big": [[[]]]}"#;
        let f = |p: &str| json_pointer_in(doc.as_bytes(), p).unwrap();
        assert_eq!(f("/a/b/0"), Found::Number(1.0));
        assert_eq!(f("/a/b/1/c"), Found::Number(2.5));
        assert_eq!(f("/a/b/2"), Found::Text("3".into()));
        assert_eq!(f("/a"), Found::Other("an object".into()));
        assert_eq!(f("/big"), Found::Other("an array".into()));
        assert_eq!(f("/t"), Found::Other("true".into()));
        assert_eq!(f("/n"), Found::Other("null".into()));
        assert_eq!(f("/d"), Found::Number(4.0));
        assert_eq!(f("/~0~1"), Found::Number(9.0));
        for missing in ["/a/b/3", "/a/b/01", "/a/b/+1", "/s/x", "/zz", "a"] {
            assert_eq!(f(missing), Found::Missing, "{missing}");
        }
        // What serde_json's own pointer gives, on every path above.
        let v: serde_json::Value = serde_json::from_str(doc).unwrap();
        for p in ["/a/b/0", "/a/b/1/c", "/d", "/~0~1", "/a/b/01", "/zz"] {
            let want = v.pointer(p).and_then(|x| x.as_f64());
            let got = match f(p) {
                Found::Number(n) => Some(n),
                _ => None,
            };
            assert_eq!(got, want, "{p}");
        }
        for bad in ["{", "{} {}", "", "[1,]"] {
            let e = json_pointer_in(bad.as_bytes(), "/a").unwrap_err();
            assert!(e.starts_with("stdout is not JSON"), "{bad}: {e}");
        }
    }
}
