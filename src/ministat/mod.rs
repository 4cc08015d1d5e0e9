//! `kbench ministat`: a byte-identical drop-in for FreeBSD's ministat(1)
//! (and Debian's 2015 package with `--compat=2015`).
//!
//! Reviewers trust ministat's output, so this reproduces it exactly: the
//! same options (parsed by a getopt of the right flavour, not clap), the
//! same error messages and exit codes, the same arithmetic in the same
//! order (so the last printed digit agrees), C's `%g`, and the plot with its
//! quirks. `../shared/ministat/SPEC.md` is the contract; the differences
//! between the two versions are:
//!
//! | | FreeBSD main (default) | Debian 20150715 (`--compat=2015`) |
//! |---|---|---|
//! | options | `-A -C -c -d -n -q -s -w`, BSD getopt | no `-q`, glibc getopt (permutes) |
//! | median, even n | mean of the two middle points | upper middle point |
//! | variance | two-pass over the sorted points | one pass, `(syy - sy²/n)/(n-1)` |
//! | relative ± | `re*100/avg(rs)` | `e*100/avg(rs)` |
//! | unopenable file | `err(2)`, all files opened first | `err(1)` when its turn comes |
//! | operand `-` | stdin, named `-` (C bug: becomes set 1's input) | stdin, named `<stdin>` |
//! | libc | BUFSIZ 1024, NaN prints `nan`, BSD qsort | BUFSIZ 8192, `-nan`, glibc msort |
//!
//! The FreeBSD mode imitates FreeBSD's own libc where libc matters (line
//! splitting beyond 1023 bytes, NaN signs, getopt messages, the order of
//! NaNs and signed zeros after qsort); those cases cannot occur in ordinary
//! data. Numbers are parsed with kbench's own `strtod` ([`cnum`]), tested
//! against the C library's.
//!
//! Where ministat's C code runs off its plot buffers (a width below 2 with
//! data to plot, or infinite data), it dies with SIGSEGV and prints nothing
//! (stdout is not a terminal); `kbench ministat` does the same.

mod cnum;
mod getopt;
mod input;
mod plot;
mod sort;

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;

use crate::stats::cfmt::{Libc, write_g};
use crate::stats::student;
use getopt::{Flavor, Getopt, Opt};
use input::{DataSet, Parser, ReadError};
use plot::SetStats;

/// Which ministat to imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// FreeBSD main's `usr.bin/ministat/ministat.c` (the default).
    FreeBsdMain,
    /// Debian 12's `ministat` 20150715-1 (`--compat=2015`).
    Debian2015,
}

impl Version {
    fn libc(self) -> Libc {
        match self {
            Version::FreeBsdMain => Libc::FreeBsd,
            Version::Debian2015 => Libc::Glibc,
        }
    }
}

const SYMBOL: [u8; 8] = [b' ', b'x', b'+', b'*', b'%', b'#', b'@', b'O'];
const MAX_DS: usize = 8;

/// How ministat ends: what it printed and its exit status.
struct Outcome {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    code: u8,
    /// The C program dies of SIGSEGV at this point.
    crash: bool,
}

impl Outcome {
    fn fail(code: u8, stderr: Vec<u8>) -> Outcome {
        Outcome {
            stdout: Vec::new(),
            stderr,
            code,
            crash: false,
        }
    }
}

/// Where a data set comes from.
enum Source {
    Stdin,
    File(std::fs::File),
}

/// The environment ministat looks at, injectable for tests.
struct Env {
    stdout_is_tty: bool,
    /// `$COLUMNS`.
    columns: Option<Vec<u8>>,
    /// Terminal width from `TIOCGWINSZ`, when it answers.
    ws_col: Option<u16>,
    posixly_correct: bool,
}

impl Env {
    fn real() -> Env {
        // SAFETY: isatty only inspects the descriptor.
        let tty = unsafe { libc::isatty(libc::STDOUT_FILENO) } == 1;
        let ws_col = if tty {
            // SAFETY: TIOCGWINSZ fills a winsize we own.
            let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
            // SAFETY: ws is a winsize we own.
            let r = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) };
            (r != -1).then_some(ws.ws_col)
        } else {
            None
        };
        Env {
            stdout_is_tty: tty,
            columns: std::env::var_os("COLUMNS").map(|c| c.as_bytes().to_vec()),
            ws_col,
            posixly_correct: std::env::var_os("POSIXLY_CORRECT").is_some(),
        }
    }
}

/// Entry point: `args` are the words after `kbench ministat`, parsed with
/// ministat's own getopt rules (not clap's). Output goes to stdout/stderr
/// exactly as ministat writes it; the exit code is ministat's.
pub fn main(args: &[OsString]) -> anyhow::Result<ExitCode> {
    let mut words: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    let mut version = Version::FreeBsdMain;
    let mut options_ended = false;
    for a in args {
        let w = a.as_bytes();
        if !options_ended {
            if w == b"--" {
                options_ended = true;
            } else if let Some(v) = w.strip_prefix(b"--compat=") {
                version = match v {
                    b"2015" | b"debian" => Version::Debian2015,
                    b"main" | b"freebsd" => Version::FreeBsdMain,
                    _ => {
                        let mut e = b"kbench ministat: unknown --compat value `".to_vec();
                        e.extend_from_slice(v);
                        e.extend_from_slice(b"` (expected 2015 or main)\n");
                        std::io::stderr().write_all(&e)?;
                        return Ok(ExitCode::from(2));
                    }
                };
                continue;
            }
        }
        words.push(w.to_vec());
    }
    let env = Env::real();
    let o = run(version, &words, &env, &mut std::io::stdin().lock());
    if o.crash {
        // A terminal would have shown the complete lines printed so far.
        if env.stdout_is_tty {
            let keep = o
                .stdout
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let _ = std::io::stdout().write_all(&o.stdout[..keep]);
        }
        // SAFETY: restoring the default action and raising a signal on
        // ourselves; the process ends here as the C program's would.
        unsafe {
            libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            libc::raise(libc::SIGSEGV);
        }
        return Ok(ExitCode::from(139));
    }
    if !o.stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        out.write_all(&o.stdout)?;
        out.flush()?;
    }
    if !o.stderr.is_empty() {
        std::io::stderr().write_all(&o.stderr)?;
    }
    Ok(ExitCode::from(o.code))
}

fn usage(version: Version, whine: &str) -> Outcome {
    let mut e = Vec::new();
    e.extend_from_slice(whine.as_bytes());
    e.push(b'\n');
    let flags = match version {
        Version::FreeBsdMain => "-Anqs",
        Version::Debian2015 => "-Ans",
    };
    e.extend_from_slice(
        format!(
            "Usage: ministat [-C column] [-c confidence] [-d delimiter(s)] [{flags}] [-w width] [file [file ...]]\n"
        )
        .as_bytes(),
    );
    e.extend_from_slice(b"\tconfidence = {80%, 90%, 95%, 98%, 99%, 99.5%}\n");
    e.extend_from_slice(b"\t-A : print statistics only. suppress the graph.\n");
    e.extend_from_slice(b"\t-C : column number to extract (starts and defaults to 1)\n");
    e.extend_from_slice(b"\t-d : delimiter(s) string, default to \" \\t\"\n");
    e.extend_from_slice(b"\t-n : print summary statistics only, no graph/test\n");
    if version == Version::FreeBsdMain {
        e.extend_from_slice(
            b"\t-q : suppress printing summary-statistics headers and data-set names\n",
        );
    }
    e.extend_from_slice(b"\t-s : print avg/median/stddev bars on separate lines\n");
    e.extend_from_slice(b"\t-w : width of graph/test output (default 74 or terminal width)\n");
    Outcome::fail(2, e)
}

/// `err(3)`: "ministat: MSG: strerror(errno)".
fn err_msg(msg: &[u8], errno: i32) -> Vec<u8> {
    let mut e = b"ministat: ".to_vec();
    e.extend_from_slice(msg);
    e.extend_from_slice(b": ");
    // SAFETY: strerror returns a valid C string for any errno.
    let s = unsafe { std::ffi::CStr::from_ptr(libc::strerror(errno)) };
    e.extend_from_slice(s.to_bytes());
    e.push(b'\n');
    e
}

fn cannot_open(name: &[u8], e: &std::io::Error) -> Vec<u8> {
    let mut m = b"Cannot open ".to_vec();
    m.extend_from_slice(name);
    err_msg(&m, e.raw_os_error().unwrap_or(libc::EIO))
}

/// Read and check one set: parse, require 3 points, sort.
fn load_set(
    version: Version,
    parser: &Parser,
    name: Vec<u8>,
    src: &mut Source,
    stdin: &mut dyn Read,
) -> Result<DataSet, Outcome> {
    let input: &mut dyn Read = match src {
        Source::Stdin => stdin,
        Source::File(f) => f,
    };
    let mut set = match parser.read_from(name.clone(), input) {
        Ok(s) => s,
        Err(ReadError::InvalidData { line }) => {
            // errx(2, "Invalid data on line %d in %s", line, n)
            let mut e = b"ministat: Invalid data on line ".to_vec();
            e.extend_from_slice(line.to_string().as_bytes());
            e.extend_from_slice(b" in ");
            e.extend_from_slice(&name);
            e.push(b'\n');
            return Err(Outcome::fail(2, e));
        }
        Err(ReadError::OutOfMemory { points }) => {
            let mut e = b"ministat: out of memory after ".to_vec();
            e.extend_from_slice(points.to_string().as_bytes());
            e.extend_from_slice(b" data points in ");
            e.extend_from_slice(&name);
            e.push(b'\n');
            return Err(Outcome::fail(2, e));
        }
    };
    if set.points.len() < 3 {
        let mut e = b"Dataset ".to_vec();
        e.extend_from_slice(&set.name);
        e.extend_from_slice(b" must contain at least 3 data points\n");
        return Err(Outcome::fail(2, e));
    }
    let q = match version {
        Version::FreeBsdMain => sort::Qsort::FreeBsd,
        Version::Debian2015 => sort::Qsort::Glibc,
    };
    sort::sort_points(&mut set.points, q);
    Ok(set)
}

/// The numbers ministat derives from a sorted set.
struct Vitals {
    n: usize,
    min: f64,
    max: f64,
    median: f64,
    avg: f64,
    var: f64,
}

fn vitals(version: Version, s: &DataSet) -> Vitals {
    let p = &s.points;
    let n = p.len();
    let avg = s.sy / n as f64;
    let (median, var) = match version {
        Version::Debian2015 => (
            p[n / 2],
            (s.syy - s.sy * s.sy / n as f64) / (n as f64 - 1.0),
        ),
        Version::FreeBsdMain => {
            let m = n / 2;
            let median = if n.is_multiple_of(2) {
                (p[m] + p[m - 1]) / 2.0
            } else {
                p[m]
            };
            let mut ss = 0.0;
            for &x in p {
                ss += (x - avg) * (x - avg);
            }
            (median, ss / (n as f64 - 1.0))
        }
    };
    Vitals {
        n,
        min: p[0],
        max: p[n - 1],
        median,
        avg,
        var,
    }
}

/// Run ministat on `words` with `stdin` as a program would, outputs kept in
/// memory (fuzzing): returns whether the C program would have crashed.
pub(crate) fn run_in_memory(compat: bool, words: &[Vec<u8>], stdin: &mut dyn Read) -> bool {
    let env = Env {
        stdout_is_tty: false,
        columns: None,
        ws_col: None,
        posixly_correct: false,
    };
    let version = if compat {
        Version::Debian2015
    } else {
        Version::FreeBsdMain
    };
    run(version, words, &env, stdin).crash
}

/// The whole program, minus process-level I/O.
fn run(version: Version, words: &[Vec<u8>], env: &Env, stdin: &mut dyn Read) -> Outcome {
    let o = match options(version, words, env) {
        Ok(o) => o,
        Err(o) => return o,
    };
    match read_sets(version, &o, stdin) {
        Ok(sets) => print(version, &o, &sets),
        Err(o) => o,
    }
}

/// What the command line asks for.
struct Options {
    termwidth: i64,
    /// Index of the confidence level in `student::LEVELS`.
    ci: usize,
    column: i64,
    delim: Vec<u8>,
    flag_n: bool,
    flag_q: bool,
    flag_s: bool,
    suppress_plot: bool,
    operands: Vec<Vec<u8>>,
}

/// Parse the options as `version`'s getopt does; a usage error is the
/// whole outcome.
fn options(version: Version, words: &[Vec<u8>], env: &Env) -> Result<Options, Outcome> {
    let mut termwidth: i64 = 74;
    if env.stdout_is_tty {
        match &env.columns {
            Some(c) if !c.is_empty() => termwidth = cnum::atoi(c) as i64,
            _ => {
                if let Some(ws) = env.ws_col.filter(|&w| w > 0) {
                    termwidth = ws as i64 - 2;
                }
            }
        }
    }
    let (optstring, flavor): (&[u8], Flavor) = match version {
        Version::FreeBsdMain => (b"AC:c:d:snqw:", Flavor::Bsd),
        Version::Debian2015 => (
            b"AC:c:d:snw:",
            Flavor::Gnu {
                posixly_correct: env.posixly_correct,
            },
        ),
    };
    let mut ci: i64 = -1;
    let mut column: i64 = 1;
    let mut delim: Vec<u8> = b" \t".to_vec();
    let (mut flag_n, mut flag_q, mut flag_s, mut suppress_plot) = (false, false, false, false);
    let mut g = Getopt::new(words, optstring, flavor);
    for opt in g.by_ref() {
        let (c, arg) = match opt {
            Opt::Flag(c, arg) => (c, arg.unwrap_or_default()),
            Opt::Error(msg) => {
                let mut o = usage(version, "Unknown option");
                let mut e = b"ministat: ".to_vec();
                e.extend_from_slice(&msg);
                e.push(b'\n');
                e.append(&mut o.stderr);
                o.stderr = e;
                return Err(o);
            }
        };
        let arg_c = match arg.iter().position(|&b| b == 0) {
            Some(k) => &arg[..k],
            None => &arg[..],
        };
        match c {
            b'A' => suppress_plot = true,
            b'C' => {
                let (v, used) = cnum::strtol(arg_c);
                column = v as i32 as i64;
                if used != arg_c.len() {
                    return Err(usage(version, "Invalid column number."));
                }
                if column <= 0 {
                    return Err(usage(version, "Column number should be positive."));
                }
            }
            b'c' => {
                let (a, used) = cnum::strtod(arg_c);
                if used != arg_c.len() {
                    return Err(usage(version, "Not a floating point number"));
                }
                if let Some(i) = student::level_index(a) {
                    ci = i as i64;
                }
                if ci == -1 {
                    return Err(usage(version, "No support for confidence level"));
                }
            }
            b'd' => {
                if arg_c.is_empty() {
                    return Err(usage(version, "Can't use empty delimiter string"));
                }
                delim = arg_c.to_vec();
            }
            b'n' => flag_n = true,
            b'q' => flag_q = true,
            b's' => flag_s = true,
            b'w' => {
                let (v, used) = cnum::strtol(arg_c);
                termwidth = v as i32 as i64;
                if used != arg_c.len() {
                    return Err(usage(version, "Invalid width, not a number."));
                }
                if termwidth < 0 {
                    return Err(usage(version, "Unable to move beyond left margin."));
                }
            }
            _ => return Err(usage(version, "Unknown option")),
        }
    }
    let ci = if ci == -1 {
        student::DEFAULT_LEVEL
    } else {
        ci as usize
    };
    Ok(Options {
        termwidth,
        ci,
        column,
        delim,
        flag_n,
        flag_q,
        flag_s,
        suppress_plot,
        operands: g.operands(),
    })
}

/// Read the data sets the operands name (stdin without any), as
/// `version` opens and reads them.
fn read_sets(version: Version, o: &Options, stdin: &mut dyn Read) -> Result<Vec<DataSet>, Outcome> {
    let bufsiz = match version {
        Version::FreeBsdMain => 1024,
        Version::Debian2015 => 8192,
    };
    let parser = Parser::new(bufsiz, o.column, &o.delim);
    if o.operands.len() > MAX_DS - 1 {
        return Err(usage(version, "Too many datasets."));
    }

    // Read the sets.
    let mut sets: Vec<DataSet> = Vec::new();
    let read = |name: Vec<u8>, src: &mut Source, stdin: &mut dyn Read| {
        load_set(version, &parser, name, src, stdin)
    };
    match version {
        Version::FreeBsdMain => {
            // All files are opened before any is read.
            let mut names: Vec<Vec<u8>> = Vec::new();
            let mut srcs: Vec<Option<Source>> = Vec::new();
            if o.operands.is_empty() {
                names.push(b"<stdin>".to_vec());
                srcs.push(Some(Source::Stdin));
            }
            for (i, w) in o.operands.iter().enumerate() {
                names.push(w.clone());
                if w == b"-" {
                    // `setfiles[0] = stdin;` whatever i is; setfiles[i] is
                    // then left unset, taken here as stdin too.
                    if i > 0 {
                        srcs[0] = Some(Source::Stdin);
                    }
                    srcs.push(Some(Source::Stdin));
                } else {
                    match std::fs::File::open(std::ffi::OsStr::from_bytes(w)) {
                        Ok(f) => srcs.push(Some(Source::File(f))),
                        Err(e) => return Err(Outcome::fail(2, cannot_open(w, &e))),
                    }
                }
            }
            for (name, src) in names.into_iter().zip(srcs.iter_mut()) {
                let src = src.as_mut().expect("opened");
                match read(name, src, stdin) {
                    Ok(s) => sets.push(s),
                    Err(o) => return Err(o),
                }
            }
        }
        Version::Debian2015 => {
            let list: Vec<Vec<u8>> = if o.operands.is_empty() {
                vec![b"-".to_vec()]
            } else {
                o.operands.clone()
            };
            for w in list {
                let (name, mut src) = if w == b"-" {
                    (b"<stdin>".to_vec(), Source::Stdin)
                } else {
                    match std::fs::File::open(std::ffi::OsStr::from_bytes(&w)) {
                        Ok(f) => (w.clone(), Source::File(f)),
                        Err(e) => return Err(Outcome::fail(1, cannot_open(&w, &e))),
                    }
                };
                match read(name, &mut src, stdin) {
                    Ok(s) => sets.push(s),
                    Err(o) => return Err(o),
                }
            }
        }
    }

    Ok(sets)
}

/// The names, the plot, the table and the comparisons.
fn print(version: Version, o: &Options, sets: &[DataSet]) -> Outcome {
    // Print.
    let libc = version.libc();
    let vit: Vec<Vitals> = sets.iter().map(|s| vitals(version, s)).collect();
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    if !o.flag_q {
        for (i, s) in sets.iter().enumerate() {
            out.push(SYMBOL[i + 1]);
            out.push(b' ');
            out.extend_from_slice(&s.name);
            out.push(b'\n');
        }
    }
    if !o.flag_n && !o.suppress_plot {
        let ps: Vec<SetStats> = sets
            .iter()
            .zip(&vit)
            .map(|(s, v)| SetStats {
                set: s,
                avg: v.avg,
                stddev: v.var.sqrt(),
                median: v.median,
            })
            .collect();
        if plot::plot(&mut out, &ps, o.termwidth, o.flag_s).is_err() {
            return Outcome {
                stdout: out,
                stderr: Vec::new(),
                code: 139,
                crash: true,
            };
        }
    }
    if !o.flag_q {
        out.extend_from_slice(
            b"    N           Min           Max        Median           Avg        Stddev\n",
        );
    }
    let mut line = String::with_capacity(128);
    for (i, v) in vit.iter().enumerate() {
        line.clear();
        line.push(SYMBOL[i + 1] as char);
        line.push_str(&format!(" {:3}", v.n));
        for x in [v.min, v.max, v.median, v.avg, v.var.sqrt()] {
            line.push(' ');
            write_g(&mut line, x, 13, 8, libc);
        }
        line.push('\n');
        out.extend_from_slice(line.as_bytes());
        if i > 0 && !o.flag_n {
            relative(&mut out, version, &vit[i], &vit[0], o.ci);
        }
    }
    Outcome {
        stdout: out,
        stderr: Vec::new(),
        code: 0,
        crash: false,
    }
}

/// What ministat prints for `sets` (a name and its points in the order
/// they were taken each) as if each set were a file holding those points,
/// at `LEVELS[ci]` and the default width of 74: `kbench compare
/// --compat=2015` prints this byte for byte. `None` where ministat would
/// not print a report (a set of fewer than 3 points, more than 7 sets, a
/// plot it would crash on).
pub fn of_points(version: Version, sets: &[(&str, &[f64])], ci: usize) -> Option<String> {
    if sets.len() > MAX_DS - 1 || sets.iter().any(|(_, p)| p.len() < 3) {
        return None;
    }
    let q = match version {
        Version::FreeBsdMain => sort::Qsort::FreeBsd,
        Version::Debian2015 => sort::Qsort::Glibc,
    };
    let sets: Vec<DataSet> = sets
        .iter()
        .map(|(name, points)| {
            let mut d = DataSet {
                name: name.as_bytes().to_vec(),
                points: points.to_vec(),
                sy: 0.0,
                syy: 0.0,
            };
            for &x in *points {
                d.sy += x;
                d.syy += x * x;
            }
            sort::sort_points(&mut d.points, q);
            d
        })
        .collect();
    let o = Options {
        termwidth: 74,
        ci,
        column: 1,
        delim: b" \t".to_vec(),
        flag_n: false,
        flag_q: false,
        flag_s: false,
        suppress_plot: false,
        operands: Vec::new(),
    };
    let o = print(version, &o, &sets);
    (!o.crash).then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// ministat's `Relative(ds, rs, confidx)`: Student's t of set `ds` against
/// the baseline `rs`, with the version's arithmetic.
fn relative(out: &mut Vec<u8>, version: Version, ds: &Vitals, rs: &Vitals, ci: usize) {
    let m = |v: &Vitals| student::Moments {
        n: v.n,
        mean: v.avg,
        var: v.var,
    };
    out.extend_from_slice(difference_block(version, m(rs), m(ds), ci).as_bytes());
}

/// ministat's comparison block of `ds` (contender) against `rs` (the
/// baseline) at `LEVELS[ci]`: "Difference at 95.0% confidence ..." or "No
/// difference proven ...", byte for byte as `version` prints it. `kbench
/// compare` prints the same block.
pub fn difference_block(
    version: Version,
    rs: student::Moments,
    ds: student::Moments,
    ci: usize,
) -> String {
    let libc = version.libc();
    let formula = match version {
        Version::FreeBsdMain => student::RelativeFormula::FreeBsdMain,
        Version::Debian2015 => student::RelativeFormula::Debian2015,
    };
    let r = student::ministat_diff(rs, ds, ci, formula);
    let label = student::LEVEL_LABELS[ci];
    if r.significant {
        let mut l = String::new();
        l.push_str("Difference at ");
        l.push_str(label);
        l.push_str("% confidence\n\t");
        write_g(&mut l, r.diff, 0, 6, libc);
        l.push_str(" +/- ");
        write_g(&mut l, r.half_width, 0, 6, libc);
        l.push_str("\n\t");
        write_g(&mut l, r.rel_diff_pct, 0, 6, libc);
        l.push_str("% +/- ");
        write_g(&mut l, r.rel_half_width_pct, 0, 6, libc);
        l.push_str("%\n\t(Student's t, pooled s = ");
        write_g(&mut l, r.pooled_s, 0, 6, libc);
        l.push_str(")\n");
        l
    } else {
        format!("No difference proven at {label}% confidence\n")
    }
}

/// A data file's points as ministat reads them (`-C column`, `-d delims`;
/// `#` comments and blank lines skipped), each with its 1-based line, for
/// `kbench import --from ministat`. `Err(line)`: no number there.
pub(crate) fn read_column(data: &[u8], column: i64, delims: &[u8]) -> Result<Vec<(u64, f64)>, u64> {
    Parser::new(8192, column, delims)
        .read_numbered(data)
        .map_err(|e| match e {
            ReadError::InvalidData { line } => line,
            // Points are held in memory already: never reported here.
            ReadError::OutOfMemory { .. } => 0,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            stdout_is_tty: false,
            columns: None,
            ws_col: None,
            posixly_correct: false,
        }
    }

    #[test]
    fn stdin_set_and_usage_errors() {
        let words: Vec<Vec<u8>> = vec![b"-n".to_vec()];
        let o = run(Version::FreeBsdMain, &words, &env(), &mut &b"1\n2\n3\n"[..]);
        assert_eq!(o.code, 0);
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            "x <stdin>\n    N           Min           Max        Median           Avg        Stddev\nx   3             1             3             2             2             1\n"
        );
        let o = run(
            Version::Debian2015,
            &[b"-q".to_vec()],
            &env(),
            &mut &b""[..],
        );
        assert_eq!(o.code, 2);
        assert!(
            o.stderr
                .starts_with(b"ministat: invalid option -- 'q'\nUnknown option\n")
        );
        let o = run(
            Version::FreeBsdMain,
            &[b"-c".to_vec(), b"97".to_vec()],
            &env(),
            &mut &b""[..],
        );
        assert!(
            o.stderr
                .starts_with(b"No support for confidence level\nUsage")
        );
    }

    #[test]
    fn tty_width_only_on_a_tty() {
        let mut e = env();
        e.columns = Some(b"40".to_vec());
        let o = run(Version::FreeBsdMain, &[], &e, &mut &b"1\n2\n3\n"[..]);
        assert!(
            o.stdout
                .windows(76)
                .any(|w| w.starts_with(b"+---") && w[75] == b'+')
        );
        e.stdout_is_tty = true;
        let o = run(Version::FreeBsdMain, &[], &e, &mut &b"1\n2\n3\n"[..]);
        let s = String::from_utf8(o.stdout).unwrap();
        assert!(
            s.lines().any(|l| l.len() == 42 && l.starts_with("+-")),
            "{s}"
        );
        e.columns = None;
        e.ws_col = Some(30);
        let o = run(Version::FreeBsdMain, &[], &e, &mut &b"1\n2\n3\n"[..]);
        let s = String::from_utf8(o.stdout).unwrap();
        assert!(
            s.lines().any(|l| l.len() == 30 && l.starts_with("+-")),
            "{s}"
        );
    }
}
