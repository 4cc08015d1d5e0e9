//! One rule for secrets, wherever they come from: a store URL, a hosts
//! file, a plan's environment, a command line, a command's output.
//! Everything kbench prints or stores passes through here on its way
//! out (the error line in `main`, the store's sink, the event stream's
//! writer, the cells' keys as a plan expands), so there is one place that
//! says what a secret is and how it is shown.
//!
//! A secret is
//! - the password of a URL with user info, whatever its scheme
//!   (`postgres://u:PW@h/db`, `ssh://u:PW@h`): from the `:` after the user
//!   to the URL's *last* `@`, so a password holding `/`, `?`, `#` or `@`
//!   is hidden whole (the store URL's own grammar, `store/locator.rs`);
//! - a URL query value whose key names a secret (`?password=PW`, escapes
//!   decoded first: `?pass%77ord=PW`);
//! - the value of an assignment whose name names a secret:
//!   `PGPASSWORD=PW`, a libpq keyword string's `password=PW`, a cell key's
//!   `env.API_TOKEN=PW`, TOML's `API_TOKEN = "PW"`, JSON's `"token": "PW"`;
//! - the value of a named field whose name names a secret ([`value`]: an
//!   environment variable, a parameter, a JSON member);
//! - a value kbench was told is secret ([`register`]): a store URL's
//!   password, an `env` factor's or a command's environment value of a
//!   secret name, wherever it turns up later (a command echoing it).
//!
//! A name names a secret when it holds `PASSWORD`, `PASSWD`, `SECRET`,
//! `TOKEN` or `CREDENTIAL`, or its last word (split at `_`, `-`, `.`)
//! is `PASS` or ends in `KEY` (`DB_PASS`, `API_KEY`, `APIKEY`), in any
//! case. Each secret is shown as `***` (a registered one as the mask it
//! was registered with, `***1`, so the values of one factor stay
//! distinct). A value that already starts with `***` is a mask and left
//! as it is, so redacting twice changes nothing: a cell key redacted when
//! the plan expands is the key the store keeps.
//!
//! The real value goes only where it is needed (the driver, a command's
//! environment) and is never stored.

use std::borrow::Cow;
use std::sync::{Mutex, MutexGuard};

/// How a secret is shown.
pub const MASK: &str = "***";

/// Registered values shorter than this are not looked for in text (a
/// one-letter password would mask every such letter); the rules by name
/// and by URL still hide them.
pub const MIN_REGISTERED: usize = 4;

/// Whether `name` (an environment variable, a parameter, a query key, a
/// JSON member) names a secret.
pub fn is_secret_name(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    if ["PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL"]
        .iter()
        .any(|w| up.contains(w))
    {
        return true;
    }
    let last = up.rsplit(['_', '-', '.']).next().unwrap_or("");
    last == "PASS" || last.ends_with("KEY")
}

/// Values registered as secret, with their masks, longest first.
fn registry() -> MutexGuard<'static, Vec<(String, String)>> {
    static R: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());
    R.lock().unwrap_or_else(|e| e.into_inner())
}

/// Hide `secret` wherever it appears in text from now on (shown as `***`).
pub fn register(secret: &str) {
    register_as(secret, MASK);
}

/// [`register`] with its own mask (which must start with `***`); a value
/// registered twice keeps its first mask.
pub fn register_as(secret: &str, mask: &str) {
    debug_assert!(mask.starts_with(MASK));
    if secret.len() < MIN_REGISTERED || secret.starts_with(MASK) {
        return;
    }
    let mut r = registry();
    if r.iter().any(|(s, _)| s == secret) {
        return;
    }
    r.push((secret.to_string(), mask.to_string()));
    r.sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
}

/// The mask of a registered value, if it is one.
fn registered_mask(v: &str) -> Option<String> {
    registry()
        .iter()
        .find(|(s, _)| s == v)
        .map(|(_, m)| m.clone())
}

/// `v`, the value of a field named `name`: hidden whole when the name
/// names a secret, else with the secrets in it hidden.
pub fn value<'a>(name: &str, v: &'a str) -> Cow<'a, str> {
    if is_secret_name(name) && !v.is_empty() && !v.starts_with(MASK) {
        Cow::Owned(registered_mask(v).unwrap_or_else(|| MASK.to_string()))
    } else {
        text(v)
    }
}

/// Free text (a message, a command line, output) with every secret in it
/// hidden. A URL ends at white space or a quote, or, when a quote opens
/// it, at the last such quote of its line that ends a word (a usage error
/// quotes the argument, and a password may hold quotes).
pub fn text(s: &str) -> Cow<'_, str> {
    redact(s, false)
}

/// One argument of a command line: a URL in it runs to its end (a
/// password may hold white space).
pub fn arg(s: &str) -> Cow<'_, str> {
    redact(s, true)
}

/// A command line as it is stored with a run: [`arg`] of each argument.
pub fn args(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| match arg(&a) {
            Cow::Borrowed(_) => a,
            Cow::Owned(r) => r,
        })
        .collect()
}

/// A JSON value with every secret hidden: members named as secrets by
/// [`value`], every other string by [`text`].
pub fn json(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Cow::Owned(r) = text(s) {
                *s = r;
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(json),
        serde_json::Value::Object(o) => {
            for (k, v) in o.iter_mut() {
                match v {
                    serde_json::Value::String(s) => {
                        if let Cow::Owned(r) = value(k, s) {
                            *s = r;
                        }
                    }
                    v => json(v),
                }
            }
        }
        _ => {}
    }
}

fn redact(s: &str, whole: bool) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(s);
    if s.contains("://") {
        out = Cow::Owned(urls(&out, whole));
    }
    if (out.contains('=') || out.contains("\":"))
        && let Cow::Owned(r) = assignments(&out)
    {
        out = Cow::Owned(r);
    }
    let r = registry();
    for (secret, mask) in r.iter() {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), mask));
        }
    }
    out
}

/// Characters of a URL scheme.
/// Where the run of characters that `part` ends with, each one `allowed`,
/// starts (`part.len()` when its last character is not allowed).
fn run_start(part: &str, allowed: fn(char) -> bool) -> usize {
    part.char_indices()
        .rev()
        .take_while(|&(_, c)| allowed(c))
        .last()
        .map_or(part.len(), |(j, _)| j)
}

fn scheme_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')
}

/// Each URL's password and secret query values as `***`.
fn urls(s: &str, whole: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let start = run_start(&rest[..i], scheme_char);
        let body = &rest[i + 3..];
        if start == i || !rest[start..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            out.push_str(&rest[..i + 3]);
            rest = body;
            continue;
        }
        out.push_str(&rest[..i + 3]);
        let end = if whole {
            body.len()
        } else {
            url_end(body, rest[..start].chars().next_back())
        };
        out.push_str(&url_body(&body[..end]));
        rest = &body[end..];
    }
    out.push_str(rest);
    out
}

/// Where a URL's text after `://` ends in free text; `before` is the
/// character before its scheme.
fn url_end(body: &str, before: Option<char>) -> usize {
    let line = body.find('\n').unwrap_or(body.len());
    let stop = |c: char| c.is_whitespace() || matches!(c, '"' | '`' | '<' | '>');
    if let Some(q) = before.filter(|c| matches!(c, '\'' | '"' | '`')) {
        let ends_word = |j: usize| {
            body[j + 1..line]
                .chars()
                .next()
                .is_none_or(|n| n.is_whitespace() || ",.;:)]}".contains(n))
        };
        if let Some(j) = body[..line]
            .char_indices()
            .filter(|&(j, c)| c == q && ends_word(j))
            .map(|(j, _)| j)
            .next_back()
        {
            return j;
        }
    }
    body[..line].find(stop).unwrap_or(line)
}

/// A URL after its `://`: the password and secret query values masked.
fn url_body(body: &str) -> String {
    let (mut auth, mut tail) = match body.rfind('@') {
        Some(at) => (body[..at].to_string(), &body[at..]),
        None => (String::new(), body),
    };
    if let Some(c) = auth.find(':')
        && !auth[c + 1..].is_empty()
        && &auth[c + 1..] != MASK
    {
        auth.replace_range(c + 1.., MASK);
    }
    let mut out = auth;
    if let Some(q) = tail.find('?') {
        out.push_str(&tail[..=q]);
        tail = &tail[q + 1..];
        let (query, frag) = tail.split_at(tail.find('#').unwrap_or(tail.len()));
        let parts: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, v))
                    if !v.is_empty()
                        && !v.starts_with(MASK)
                        && is_secret_name(
                            &percent_encoding::percent_decode_str(k).decode_utf8_lossy(),
                        ) =>
                {
                    format!("{k}={MASK}")
                }
                _ => kv.to_string(),
            })
            .collect();
        out.push_str(&parts.join("&"));
        out.push_str(frag);
    } else {
        out.push_str(tail);
    }
    out
}

/// Characters of a name an assignment sets.
fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Each `NAME=VALUE`, `NAME = "VALUE"` and `"NAME": "VALUE"` whose name
/// names a secret, with the value as `***`.
fn assignments(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let mut cuts: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let (sep_end, name_end, quoted_name) = match b[i] {
            b'=' => (i + 1, i, false),
            b':' if i > 0 && b[i - 1] == b'"' => (i + 1, i - 1, true),
            _ => {
                i += 1;
                continue;
            }
        };
        i += 1;
        // The name: just before the `=` (spaces allowed before a quoted
        // value only, as TOML writes it), or inside quotes before `:`.
        let mut ne = name_end;
        while !quoted_name && ne > 0 && b[ne - 1] == b' ' {
            ne -= 1;
        }
        let spaced = ne != name_end;
        let ns = run_start(&s[..ne], name_char);
        if ns == ne || (quoted_name && (ns == 0 || b[ns - 1] != b'"')) {
            continue;
        }
        if !is_secret_name(&s[ns..ne]) {
            continue;
        }
        // The value: quoted (to its closing quote), or to the next
        // separator.
        let mut vs = sep_end;
        while (spaced || quoted_name) && vs < b.len() && b[vs] == b' ' {
            vs += 1;
        }
        let (vs, ve) = match b.get(vs) {
            Some(&q @ (b'"' | b'\'' | b'`')) => {
                let close = s[vs + 1..].find(q as char).map_or(s.len(), |e| vs + 1 + e);
                (vs + 1, close)
            }
            _ if spaced || quoted_name => continue,
            _ => {
                let end = s[vs..]
                    .find(|c: char| c.is_whitespace() || "\"'`|,;&)".contains(c))
                    .map_or(s.len(), |e| vs + e);
                (vs, end)
            }
        };
        if ve > vs && !s[vs..ve].starts_with(MASK) {
            cuts.push((vs, ve));
        }
        i = ve.max(i);
    }
    if cuts.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for (vs, ve) in cuts {
        out.push_str(&s[at..vs]);
        let mask = registered_mask(&s[vs..ve]).unwrap_or_else(|| MASK.to_string());
        out.push_str(&mask);
        at = ve;
    }
    out.push_str(&s[at..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for n in [
            "PGPASSWORD",
            "password",
            "DB_PASSWD",
            "AWS_SECRET_ACCESS_KEY",
            "GITHUB_TOKEN",
            "api_key",
            "APIKEY",
            "env.API_TOKEN",
            "MYSQL_PASS",
            "client-secret",
            "credentials",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "PATH",
            "HOME",
            "PWD",
            "CC",
            "pgpassfile",
            "KEY_COUNT",
            "pass_count",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn urls_of_any_scheme_lose_their_password() {
        for (given, shown) in [
            (
                "unexpected argument 'postgres://a:SE?CRET@h/d' found",
                "unexpected argument 'postgres://a:***@h/d' found",
            ),
            ("ssh://u:SE@CRET@host:22", "ssh://u:***@host:22"),
            ("see https://u:SE/CRET@h/x y", "see https://u:***@h/x y"),
            (
                "postgresql://kb@h/kbx?sslmode=disable&pass%77ord=SECRET",
                "postgresql://kb@h/kbx?sslmode=disable&pass%77ord=***",
            ),
            ("plain https://h/p?q=1", "plain https://h/p?q=1"),
            ("mailto:x@y", "mailto:x@y"),
            ("postgres://kb@h/db", "postgres://kb@h/db"),
        ] {
            assert_eq!(text(given), shown, "{given}");
            assert_eq!(text(shown), shown, "twice: {shown}");
        }
        // Quoted with a quote inside the password.
        let t = text("a 'postgres://a:SE'CRET@h:x/d' b");
        assert!(!t.contains("CRET"), "{t}");
        // One line per URL: the next line is not taken for its password.
        let t = text("[\"postgres://u:SECRET@h/db\"]\nmail = \"x@y\"");
        assert_eq!(t, "[\"postgres://u:***@h/db\"]\nmail = \"x@y\"");
        // A whole argument: the URL runs to its end.
        assert_eq!(
            arg("--db=postgres://a:SE CRET@h/d"),
            "--db=postgres://a:***@h/d"
        );
    }

    #[test]
    fn assignments_of_secret_names() {
        for (given, shown) in [
            ("env PGPASSWORD=SECRET psql", "env PGPASSWORD=*** psql"),
            (
                "--db `host=h password=SECRET`",
                "--db `host=h password=***`",
            ),
            ("c|env.API_TOKEN=SECRET|@t=x", "c|env.API_TOKEN=***|@t=x"),
            ("API_TOKEN = \"SE CRET\"", "API_TOKEN = \"***\""),
            (
                "{\"token\": \"SECRET\", \"n\": 1}",
                "{\"token\": \"***\", \"n\": 1}",
            ),
            ("password='SE CRET' x", "password='***' x"),
            ("CC=gcc x=1 key_count", "CC=gcc x=1 key_count"),
            ("a == b", "a == b"),
            ("@pg=***1", "@pg=***1"),
        ] {
            assert_eq!(text(given), shown, "{given}");
            assert_eq!(text(shown), shown, "twice: {shown}");
        }
    }

    #[test]
    fn registered_values_are_hidden_anywhere() {
        register_as("hunter2-registered", "***7");
        register("abc");
        assert_eq!(text("echo hunter2-registered!"), "echo ***7!");
        assert_eq!(value("PGPASSWORD", "hunter2-registered"), "***7");
        assert_eq!(value("PGPASSWORD", "other"), "***");
        assert_eq!(value("CC", "gcc"), "gcc");
        // Too short to look for.
        assert_eq!(text("abc"), "abc");
        let mut j = serde_json::json!({"env.PGPASSWORD": "x1", "cmd": ["a", "postgres://u:p@h"]});
        json(&mut j);
        assert_eq!(
            j,
            serde_json::json!({"env.PGPASSWORD": "***", "cmd": ["a", "postgres://u:***@h"]})
        );
    }
}
