//! Where a store lives: an SQLite file or a PostgreSQL URL, parsed once
//! from the command line (`--db`, `KBENCH_DB`, `store copy --from/--to`)
//! into a [`Locator`] that every caller passes on.
//!
//! A URL's password never leaves this module as text (and is registered
//! with `crate::redact`, so it is hidden wherever else it turns up): messages and stored
//! settings name the store by [`Locator::redacted`] (`postgres://kb:***@h/db`),
//! unit files and remote command lines get [`Locator::to_arg`] (the URL
//! without the password: the process that uses it reads the password from
//! `PGPASSWORD` or `~/.pgpass`, as libpq does), and only
//! [`PgUrl::config`] hands it to the driver. Both forms are built from the
//! parsed parts, never from the text the user typed, so a password holding
//! `/`, `?`, `#`, `@` or percent-escapes is hidden like any other.
//!
//! The URL grammar is libpq's `postgres[ql]://[USER[:PASSWORD]@][HOST[:PORT][,...]][/DB][?K=V&...]`,
//! with two choices made for passwords typed without escapes: the user
//! part ends at the *last* `@` (so `p@ss` works; an `@` inside a query
//! value must be written `%40`), and `/`, `?` and `#` before that `@` are
//! part of the password. A libpq keyword string (`host=... password=...`)
//! is refused with a message showing the URL form, not taken for a path.

use percent_encoding::{AsciiSet, CONTROLS, percent_decode_str, utf8_percent_encode};
use std::fmt;
use std::path::PathBuf;

use crate::error::bad_input;

/// A store's location, parsed.
#[derive(Clone, PartialEq)]
pub enum Locator {
    /// An SQLite file. `default` when neither `--db` nor `KBENCH_DB` named
    /// it: a read of a default store that does not exist yet reads as empty.
    Sqlite { path: PathBuf, default: bool },
    /// A PostgreSQL database.
    Postgres(PgUrl),
}

/// A PostgreSQL URL, taken apart. The password is kept apart from
/// everything that is ever shown.
#[derive(Clone, PartialEq)]
pub struct PgUrl {
    scheme: &'static str,
    user: Option<String>,
    password: Option<Vec<u8>>,
    /// `(host, port)` as written (decoded); a host starting with `/` is a
    /// Unix socket directory.
    hosts: Vec<(String, Option<u16>)>,
    dbname: Option<String>,
    /// Query parameters other than the password, decoded, in order.
    params: Vec<(String, String)>,
}

/// Never prints a password, whatever formats it.
impl fmt::Debug for Locator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Locator({})", self.redacted())
    }
}

impl fmt::Debug for PgUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgUrl({})", self.shown(Some("***")))
    }
}

/// libpq's connection keywords: a `--db` starting with `KEYWORD=` is a
/// keyword string, not a file name.
const LIBPQ_KEYWORDS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "options",
    "application_name",
    "sslmode",
    "connect_timeout",
    "target_session_attrs",
];

/// Bytes percent-encoded when a part of a URL is written back: controls,
/// space, and every character with a meaning in the grammar.
const PART: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'%')
    .add(b'@')
    .add(b':')
    .add(b'/')
    .add(b'?')
    .add(b'#')
    .add(b'&')
    .add(b'=')
    .add(b',')
    .add(b'[')
    .add(b']')
    .add(b'"')
    .add(b'\'')
    .add(b'\\');

fn enc(s: &str) -> String {
    utf8_percent_encode(s, PART).to_string()
}

impl Locator {
    /// The store kbench uses when none is named: an SQLite file in the
    /// user's data directory.
    pub fn default_store() -> Locator {
        Locator::Sqlite {
            path: super::default_path(),
            default: true,
        }
    }

    /// The store of the command line: `--db` (`from_env` when clap took it
    /// from `KBENCH_DB`). An empty `KBENCH_DB=` means unset; an empty
    /// `--db ""` is refused (it used to pick the default store silently).
    pub fn from_cli(db: Option<&str>, from_env: bool) -> anyhow::Result<Locator> {
        match db {
            None => Ok(Locator::default_store()),
            Some("") if from_env => Ok(Locator::default_store()),
            Some(s) => Locator::parse(s, if from_env { "KBENCH_DB" } else { "--db" }),
        }
    }

    /// Parse a store's location as typed; `what` names where it came from
    /// (`--db`, `--from`) in errors, which never show a password.
    pub fn parse(s: &str, what: &str) -> anyhow::Result<Locator> {
        if s.is_empty() {
            return Err(bad_input!(
                "{what} \"\": empty; name a store file or a postgres:// URL (without --db, the default store)"
            ));
        }
        if let Some(rest) = s
            .strip_prefix("postgres://")
            .map(|r| ("postgres", r))
            .or_else(|| s.strip_prefix("postgresql://").map(|r| ("postgresql", r)))
        {
            return PgUrl::parse(rest.0, rest.1, what).map(Locator::Postgres);
        }
        if let Some(k) = keyword_string(s) {
            return Err(bad_input!(
                "{what} `{k}`: a libpq keyword string; kbench takes a URL, postgres://USER@HOST:PORT/DB (the password from PGPASSWORD or ~/.pgpass)"
            ));
        }
        if let Some(scheme) = foreign_scheme(s) {
            return Err(bad_input!(
                "{what} `{scheme}...`: not a store kbench knows (an SQLite file path, or a postgres:// URL)"
            ));
        }
        Ok(Locator::Sqlite {
            path: PathBuf::from(s),
            default: false,
        })
    }

    /// How messages and stored settings name the store: its path, or its
    /// URL with the password as `***`.
    pub fn redacted(&self) -> String {
        match self {
            Locator::Sqlite { path, .. } => path.display().to_string(),
            Locator::Postgres(u) => u.redacted(),
        }
    }

    /// The store as an argument for another kbench process (a systemd unit,
    /// a remote command line): an absolute path, or the URL without its
    /// password (that process reads it from PGPASSWORD or ~/.pgpass).
    pub fn to_arg(&self) -> anyhow::Result<String> {
        Ok(match self {
            Locator::Sqlite { path, .. } => std::path::absolute(path)?.display().to_string(),
            Locator::Postgres(u) => u.shown(None),
        })
    }

    /// True for a URL that carries a password `to_arg` leaves out.
    pub fn has_password(&self) -> bool {
        matches!(self, Locator::Postgres(u) if u.password.is_some())
    }
}

impl fmt::Display for Locator {
    /// The redacted form: a `Locator` in a message never shows a password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// `s` as a libpq keyword string (`host=h password=x`), shown with the
/// password's value hidden; `None` for anything else.
fn keyword_string(s: &str) -> Option<String> {
    let first = s.split_whitespace().next()?;
    let (key, _) = first.split_once('=')?;
    if !LIBPQ_KEYWORDS.contains(&key.trim()) {
        return None;
    }
    let shown: Vec<String> = s
        .split_whitespace()
        .map(|w| match w.split_once('=') {
            Some((k, _)) if k.trim() == "password" => format!("{k}=***"),
            _ => w.to_string(),
        })
        .collect();
    Some(shown.join(" "))
}

/// The `SCHEME://` of a URL of another kind (`mysql://`, `sqlite://`), or
/// `postgres:` misspelt as a path (`postgres:/x`).
fn foreign_scheme(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once(':')?;
    let is_scheme = !scheme.is_empty()
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c));
    let lower = scheme.to_ascii_lowercase();
    if is_scheme && (rest.starts_with("//") || lower == "postgres" || lower == "postgresql") {
        Some(format!("{scheme}:"))
    } else {
        None
    }
}

impl PgUrl {
    /// Parse what follows `SCHEME://`.
    fn parse(scheme: &'static str, rest: &str, what: &str) -> anyhow::Result<PgUrl> {
        let mut url = PgUrl {
            scheme,
            user: None,
            password: None,
            hosts: Vec::new(),
            dbname: None,
            params: Vec::new(),
        };
        let rest = match rest.rfind('@') {
            Some(at) => {
                let (user, password) = match rest[..at].split_once(':') {
                    Some((u, p)) => (u, Some(p)),
                    None => (&rest[..at], None),
                };
                url.password = password.map(|p| percent_decode_str(p).collect());
                secret(password);
                // Errors from here on name the URL with what is parsed so
                // far, never the text after the scheme.
                let bad =
                    |why: String| bad_input!("{what} {scheme}://***: not a PostgreSQL URL ({why})");
                if !user.is_empty() {
                    url.user = Some(decode(user).map_err(|e| bad(format!("the user: {e}")))?);
                }
                &rest[at + 1..]
            }
            None => rest,
        };
        let bad = |u: &PgUrl, why: String| {
            bad_input!(
                "{what} {}: not a PostgreSQL URL ({why})",
                u.shown(Some("***"))
            )
        };
        let (hosts, rest) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
        let (path, query) = match rest.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (rest, None),
        };
        // Hosts first, so a bad port is shown with the user and host.
        let mut bad_port = None;
        for chunk in hosts.split(',').filter(|c| !c.is_empty()) {
            let (host, port) = match chunk.strip_prefix('[') {
                Some(v6) => match v6.split_once(']') {
                    Some((h, "")) => (h, None),
                    Some((h, p)) if p.starts_with(':') => (h, Some(&p[1..])),
                    _ => {
                        return Err(bad(&url, format!("host `{chunk}`")));
                    }
                },
                None => match chunk.rsplit_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (chunk, None),
                },
            };
            let host = decode(host).map_err(|e| bad(&url, format!("host: {e}")))?;
            let port = match port {
                Some(p) => match p.parse::<u16>() {
                    Ok(n) => Some(n),
                    Err(_) => {
                        bad_port.get_or_insert_with(|| p.to_string());
                        None
                    }
                },
                None => None,
            };
            url.hosts.push((host, port));
        }
        if let Some(db) = path.strip_prefix('/').filter(|d| !d.is_empty()) {
            url.dbname = Some(decode(db).map_err(|e| bad(&url, format!("database: {e}")))?);
        }
        for kv in query.into_iter().flat_map(|q| q.split('&')) {
            if kv.is_empty() {
                continue;
            }
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let k = decode(k).map_err(|e| bad(&url, format!("parameter: {e}")))?;
            if k == "password" {
                url.password = Some(percent_decode_str(v).collect());
                secret(Some(v));
                continue;
            }
            let v = decode(v).map_err(|e| bad(&url, format!("parameter `{k}`: {e}")))?;
            url.params.push((k, v));
        }
        if let Some(p) = bad_port {
            return Err(bad(&url, format!("invalid port `{p}`")));
        }
        // The driver checks the parameters' names and values; its errors
        // name the parameter, never the password (not in this text).
        url.keywords()
            .parse::<postgres::Config>()
            .map_err(|e| bad(&url, e.to_string()))?;
        Ok(url)
    }

    /// The URL with its password as `***`: how messages name the store.
    pub fn redacted(&self) -> String {
        self.shown(Some(crate::redact::MASK))
    }

    /// The URL as shown: the password replaced by `mask`, or left out.
    fn shown(&self, mask: Option<&str>) -> String {
        let mut s = format!("{}://", self.scheme);
        match (&self.user, &self.password, mask) {
            (Some(u), Some(_), Some(m)) => s += &format!("{}:{m}@", enc(u)),
            (None, Some(_), Some(m)) => s += &format!(":{m}@"),
            (Some(u), _, _) => s += &format!("{}@", enc(u)),
            (None, _, _) => {}
        }
        let hosts: Vec<String> = self
            .hosts
            .iter()
            .map(|(h, p)| {
                let h = if h.contains(':') && !h.starts_with('/') {
                    format!("[{h}]")
                } else {
                    enc(h)
                };
                match p {
                    Some(p) => format!("{h}:{p}"),
                    None => h,
                }
            })
            .collect();
        s += &hosts.join(",");
        if let Some(d) = &self.dbname {
            s += &format!("/{}", enc(d));
        }
        if !self.params.is_empty() {
            let q: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
                .collect();
            s += &format!("?{}", q.join("&"));
        }
        s
    }

    /// Everything but the password as a libpq keyword string, each value
    /// quoted.
    fn keywords(&self) -> String {
        let q = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut out: Vec<String> = Vec::new();
        if let Some(u) = &self.user {
            out.push(format!("user={}", q(u)));
        }
        if !self.hosts.is_empty() {
            let hosts: Vec<&str> = self.hosts.iter().map(|(h, _)| h.as_str()).collect();
            out.push(format!("host={}", q(&hosts.join(","))));
            if self.hosts.iter().any(|(_, p)| p.is_some()) {
                let ports: Vec<String> = self
                    .hosts
                    .iter()
                    .map(|(_, p)| p.unwrap_or(5432).to_string())
                    .collect();
                out.push(format!("port={}", q(&ports.join(","))));
            }
        }
        if let Some(d) = &self.dbname {
            out.push(format!("dbname={}", q(d)));
        }
        for (k, v) in &self.params {
            out.push(format!("{k}={}", q(v)));
        }
        out.join(" ")
    }

    /// The driver's configuration, password included: the one place it
    /// leaves this module.
    pub fn config(&self) -> anyhow::Result<postgres::Config> {
        let mut c: postgres::Config = self
            .keywords()
            .parse()
            .map_err(|e| bad_input!("{}: not a PostgreSQL URL ({e})", self.shown(Some("***"))))?;
        if let Some(p) = &self.password {
            c.password(p.clone());
        }
        Ok(c)
    }
}

/// A password as typed and as decoded: hidden wherever it turns up later
/// (a command echoing the store's URL, a driver's message).
fn secret(typed: Option<&str>) {
    if let Some(p) = typed {
        crate::redact::register(p);
        crate::redact::register(&percent_decode_str(p).decode_utf8_lossy());
    }
}

/// Percent-decode one part of a URL as UTF-8 text.
fn decode(s: &str) -> Result<String, String> {
    percent_decode_str(s)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| "percent-escapes that are not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SENTINEL: &str = "SECRET";

    fn pg(s: &str) -> Locator {
        Locator::parse(s, "--db").unwrap_or_else(|e| panic!("{s}: {e:#}"))
    }

    /// Passwords written with every character that confused the old
    /// string redaction: neither form shows them, and the driver gets
    /// exactly the password typed (decoded).
    #[test]
    fn passwords_never_show() {
        for (url, password) in [
            ("postgres://kb:SE/CRET@127.0.0.1:54391/kbx", "SE/CRET"),
            ("postgres://kb:SE?CRET@127.0.0.1:54391/kbx", "SE?CRET"),
            ("postgres://kb:SE#CRET@127.0.0.1:54391/kbx", "SE#CRET"),
            ("postgres://kb:SE@CRET@127.0.0.1:54391/kbx", "SE@CRET"),
            ("postgres://kb:SE%2FCRET@127.0.0.1:54391/kbx", "SE/CRET"),
            ("postgresql://kb@h/kbx?pass%77ord=SECRET", "SECRET"),
            (
                "postgresql://kb@h/kbx?sslmode=disable&password=SE%26CRET",
                "SE&CRET",
            ),
            ("postgres://:SECRET@h/kbx", "SECRET"),
        ] {
            let l = pg(url);
            for shown in [
                l.redacted(),
                l.to_arg().unwrap(),
                format!("{l:?}"),
                l.to_string(),
            ] {
                assert!(!shown.contains("CRET"), "{url} shown as {shown}");
            }
            let Locator::Postgres(u) = &l else {
                panic!("{url}")
            };
            let c = u.config().unwrap();
            assert_eq!(c.get_password(), Some(password.as_bytes()), "{url}");
            assert!(l.has_password());
        }
    }

    #[test]
    fn redacted_and_arg_forms() {
        let l = pg("postgres://kb:SE/CRET@127.0.0.1:54391/kbx");
        assert_eq!(l.redacted(), "postgres://kb:***@127.0.0.1:54391/kbx");
        assert_eq!(l.to_arg().unwrap(), "postgres://kb@127.0.0.1:54391/kbx");
        let l = pg("postgresql://h1:5433,[::1]:5434/k%20b?sslmode=disable&password=x");
        assert_eq!(
            l.redacted(),
            "postgresql://:***@h1:5433,[::1]:5434/k%20b?sslmode=disable"
        );
        assert_eq!(
            l.to_arg().unwrap(),
            "postgresql://h1:5433,[::1]:5434/k%20b?sslmode=disable"
        );
        // The argument form parses back to the same store, less the password.
        let back = pg(&l.to_arg().unwrap());
        let (Locator::Postgres(a), Locator::Postgres(b)) = (&l, &back) else {
            panic!()
        };
        assert_eq!(
            (&a.user, &a.hosts, &a.dbname, &a.params),
            (&b.user, &b.hosts, &b.dbname, &b.params)
        );
        let c = b.config().unwrap();
        assert_eq!(c.get_dbname(), Some("k b"));
        assert_eq!(c.get_ports(), &[5433, 5434]);
        // A Unix socket directory.
        let l = pg("postgres://kb@%2Fvar%2Frun%2Fpostgresql/kbx");
        let Locator::Postgres(u) = &l else { panic!() };
        assert!(matches!(
            u.config().unwrap().get_hosts()[0],
            postgres::config::Host::Unix(_)
        ));
    }

    #[test]
    fn paths_and_refusals() {
        assert_eq!(
            pg("runs/k.db"),
            Locator::Sqlite {
                path: "runs/k.db".into(),
                default: false
            }
        );
        let p = pg("k.db");
        assert!(p.to_arg().unwrap().starts_with('/'), "absolute");
        for (s, needle) in [
            ("", "--db \"\": empty"),
            (
                "host=h password=SECRET dbname=x",
                "--db `host=h password=*** dbname=x`: a libpq keyword string",
            ),
            (
                "mysql://u:SECRET@h/x",
                "`mysql:...`: not a store kbench knows",
            ),
            ("postgres:/u:SECRET@h/db", "`postgres:...`: not a store"),
            (
                "postgres://u:SECRET@127.0.0.1:x/db",
                "--db postgres://u:***@127.0.0.1/db: not a PostgreSQL URL (invalid port `x`)",
            ),
            (
                "postgres://u:SECRET@h/db?sslmode=bogus",
                "not a PostgreSQL URL",
            ),
        ] {
            let e = format!("{:#}", Locator::parse(s, "--db").unwrap_err());
            assert!(e.contains(needle), "{s}: {e}");
            assert!(!e.contains(SENTINEL), "{s}: {e}");
        }
        // An empty KBENCH_DB means unset; an empty --db is an error.
        assert!(Locator::from_cli(Some(""), true).is_ok());
        assert!(Locator::from_cli(Some(""), false).is_err());
    }

    /// The one rule (`crate::redact`) hides what this module parses.
    #[test]
    fn argument_lists_and_texts_are_redacted() {
        use crate::redact::{args as redact_args, text as redact_text};
        assert_eq!(
            redact_args([
                "kbench".into(),
                "--db=postgres://a:SE/CRET@h/d".into(),
                "--to".into(),
                "postgresql://a@h/d?password=SECRET".into(),
            ]),
            [
                "kbench",
                "--db=postgres://a:***@h/d",
                "--to",
                "postgresql://a@h/d?password=***"
            ]
        );
        let t = redact_text("unexpected argument 'postgres://a:SE?CRET@h/d' found");
        assert_eq!(t, "unexpected argument 'postgres://a:***@h/d' found");
        let t = redact_text("a 'postgres://a:SE?CRET@h:x/d' b");
        assert!(!t.contains("CRET"), "{t}");
        let t = redact_text("--db `host=h password=SECRET`");
        assert!(!t.contains(SENTINEL), "{t}");
    }
}
