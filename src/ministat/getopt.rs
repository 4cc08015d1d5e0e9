//! POSIX `getopt(3)` in the two flavours the two ministats were built with.
//!
//! - FreeBSD libc: options end at the first operand (`ministat x.txt -n`
//!   reads a file named `-n`); errors read `illegal option -- x`.
//! - glibc (Debian): options are taken from anywhere on the command line
//!   and the operands keep their order ("permutation"), unless
//!   `POSIXLY_CORRECT` is set; errors read `invalid option -- 'x'`.
//!
//! Both: `--` ends the options, a lone `-` is an operand, `-Anq` groups
//! flags, and an option with an argument takes the rest of its word
//! (`-c95`) or the next word (`-c 95`, even if it starts with `-`).
//! `opterr` is on, so the message goes to stderr and `getopt` returns `?`,
//! which ministat turns into `usage("Unknown option")`.

/// Which C library's getopt to imitate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Bsd,
    Gnu { posixly_correct: bool },
}

/// One step of the option scan.
#[derive(Debug, PartialEq, Eq)]
pub enum Opt {
    /// An option letter with its argument, if it takes one.
    Flag(u8, Option<Vec<u8>>),
    /// An unknown option or a missing argument: the line getopt printed on
    /// stderr (without the program name) before returning `?`.
    Error(Vec<u8>),
}

/// Iterator over options; call [`Getopt::operands`] once it returns `None`.
pub struct Getopt<'a> {
    args: &'a [Vec<u8>],
    optstring: &'a [u8],
    flavor: Flavor,
    /// Index of the word being scanned.
    optind: usize,
    /// Position inside a word of grouped flags (0 = start a new word).
    place: usize,
    /// Operands skipped over by GNU permutation, in order.
    skipped: Vec<Vec<u8>>,
    done: bool,
}

impl<'a> Getopt<'a> {
    pub fn new(args: &'a [Vec<u8>], optstring: &'a [u8], flavor: Flavor) -> Self {
        Getopt {
            args,
            optstring,
            flavor,
            optind: 0,
            place: 0,
            skipped: Vec::new(),
            done: false,
        }
    }

    /// The operands, in the order the program sees them after the scan.
    pub fn operands(self) -> Vec<Vec<u8>> {
        let mut out = self.skipped;
        out.extend(
            self.args[self.optind.min(self.args.len())..]
                .iter()
                .cloned(),
        );
        out
    }

    fn takes_arg(&self, c: u8) -> Option<bool> {
        if c == b':' {
            return None;
        }
        let i = self.optstring.iter().position(|&o| o == c)?;
        Some(self.optstring.get(i + 1) == Some(&b':'))
    }

    fn error(&self, what: &str, c: u8) -> Opt {
        let mut m = Vec::new();
        match self.flavor {
            Flavor::Bsd => {
                m.extend_from_slice(what.as_bytes());
                m.extend_from_slice(b" -- ");
                m.push(c);
            }
            Flavor::Gnu { .. } => {
                m.extend_from_slice(what.as_bytes());
                m.extend_from_slice(b" -- '");
                m.push(c);
                m.push(b'\'');
            }
        }
        Opt::Error(m)
    }
}

impl Iterator for Getopt<'_> {
    type Item = Opt;

    fn next(&mut self) -> Option<Opt> {
        if self.done {
            return None;
        }
        if self.place == 0 {
            // Find the next option word.
            loop {
                let Some(word) = self.args.get(self.optind) else {
                    self.done = true;
                    return None;
                };
                if word == b"--" {
                    self.optind += 1;
                    self.done = true;
                    return None;
                }
                let is_option = word.len() >= 2 && word[0] == b'-';
                if is_option {
                    break;
                }
                match self.flavor {
                    Flavor::Gnu {
                        posixly_correct: false,
                    } => {
                        self.skipped.push(word.clone());
                        self.optind += 1;
                    }
                    _ => {
                        self.done = true;
                        return None;
                    }
                }
            }
            self.place = 1;
        }
        let word = &self.args[self.optind];
        let c = word[self.place];
        self.place += 1;
        let at_end = self.place >= word.len();
        let (bad_option, requires_arg) = match self.flavor {
            Flavor::Bsd => ("illegal option", "option requires an argument"),
            Flavor::Gnu { .. } => ("invalid option", "option requires an argument"),
        };
        match self.takes_arg(c) {
            None => {
                if at_end {
                    self.optind += 1;
                    self.place = 0;
                }
                Some(self.error(bad_option, c))
            }
            Some(false) => {
                if at_end {
                    self.optind += 1;
                    self.place = 0;
                }
                Some(Opt::Flag(c, None))
            }
            Some(true) => {
                let arg = if !at_end {
                    let a = word[self.place..].to_vec();
                    self.optind += 1;
                    Some(a)
                } else if let Some(next) = self.args.get(self.optind + 1) {
                    self.optind += 2;
                    Some(next.clone())
                } else {
                    self.optind += 1;
                    None
                };
                self.place = 0;
                match arg {
                    Some(a) => Some(Opt::Flag(c, Some(a))),
                    None => Some(self.error(requires_arg, c)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<Vec<u8>> {
        s.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn run(args: &[&str], flavor: Flavor) -> (Vec<Opt>, Vec<Vec<u8>>) {
        let a = words(args);
        let mut g = Getopt::new(&a, b"AC:c:d:snqw:", flavor);
        let opts: Vec<Opt> = g.by_ref().collect();
        (opts, g.operands())
    }

    const GNU: Flavor = Flavor::Gnu {
        posixly_correct: false,
    };

    #[test]
    fn grouped_and_attached() {
        let (o, rest) = run(&["-Anq", "-c95", "-C", "2", "x", "y"], Flavor::Bsd);
        assert_eq!(
            o,
            vec![
                Opt::Flag(b'A', None),
                Opt::Flag(b'n', None),
                Opt::Flag(b'q', None),
                Opt::Flag(b'c', Some(b"95".to_vec())),
                Opt::Flag(b'C', Some(b"2".to_vec())),
            ]
        );
        assert_eq!(rest, words(&["x", "y"]));
    }

    #[test]
    fn bsd_stops_at_operand_gnu_permutes() {
        let (o, rest) = run(&["x", "-n", "y"], Flavor::Bsd);
        assert!(o.is_empty());
        assert_eq!(rest, words(&["x", "-n", "y"]));
        let (o, rest) = run(&["x", "-n", "y", "--", "-s"], GNU);
        assert_eq!(o, vec![Opt::Flag(b'n', None)]);
        assert_eq!(rest, words(&["x", "y", "-s"]));
    }

    #[test]
    fn errors_and_dash() {
        let (o, _) = run(&["-x"], Flavor::Bsd);
        assert_eq!(o, vec![Opt::Error(b"illegal option -- x".to_vec())]);
        let (o, _) = run(&["-c"], GNU);
        assert_eq!(
            o,
            vec![Opt::Error(b"option requires an argument -- 'c'".to_vec())]
        );
        let (o, rest) = run(&["-", "-n"], Flavor::Bsd);
        assert!(o.is_empty());
        assert_eq!(rest, words(&["-", "-n"]));
        let (o, rest) = run(&["-c", "--", "x"], Flavor::Bsd);
        assert_eq!(o, vec![Opt::Flag(b'c', Some(b"--".to_vec()))]);
        assert_eq!(rest, words(&["x"]));
    }
}
