//! Reading one data set the way ministat's `ReadSet` does.
//!
//! C reads with `fgets(buf, BUFSIZ)` (a line longer than BUFSIZ-1 bytes
//! arrives as several "lines", each counted), cuts at the first NUL
//! (`strlen`), strips trailing `isspace`, splits with `strtok(buf, delim)`,
//! walks to token number `column` unless a token starting with `#` comes
//! first, and parses it with `strtod`, which must consume the whole token.
//!
//! Here the input streams through one fixed buffer and is scanned in place:
//! memory is bounded whatever the input (`/dev/zero` reads forever, as
//! ministat does, in 72 KiB), no allocation per line, a 256-entry
//! delimiter table, and kbench's own `strtod` (see [`super::cnum`]). Only
//! the points grow, and running out of memory for them is an error, not an
//! abort.

use std::io::Read;

use super::cnum::{is_c_space, strtod};

/// Bytes read from the input at a time.
const CHUNK: usize = 1 << 16;

/// A data set as ministat holds it.
#[derive(Debug, Clone)]
pub struct DataSet {
    /// The name ministat prints (`x.txt`, `<stdin>`, `-`).
    pub name: Vec<u8>,
    /// The points, in file order until [`super::sort`] sorts them.
    pub points: Vec<f64>,
    /// Sum of the points in file order.
    pub sy: f64,
    /// Sum of squares in file order (Debian's one-pass variance).
    pub syy: f64,
}

/// Why a set could not be read.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// `strtod` did not consume the whole token on this line (1-based,
    /// counting `fgets` pieces).
    InvalidData { line: u64 },
    /// No memory for more points after this many.
    OutOfMemory { points: usize },
}

/// How to cut lines and pick the column.
pub struct Parser {
    /// `BUFSIZ`: 8192 with glibc, 1024 with FreeBSD libc.
    pub bufsiz: usize,
    /// 1-based column.
    pub column: i64,
    delim: [bool; 256],
}

impl Parser {
    pub fn new(bufsiz: usize, column: i64, delims: &[u8]) -> Parser {
        let mut delim = [false; 256];
        for &d in delims {
            delim[d as usize] = true;
        }
        Parser {
            bufsiz,
            column,
            delim,
        }
    }

    /// Parse a whole input held in memory into a data set named `name`.
    #[cfg(test)]
    pub fn read(&self, name: Vec<u8>, mut data: &[u8]) -> Result<DataSet, ReadError> {
        self.read_from(name, &mut data)
    }

    /// Parse an input as it streams in; a read error ends the data like
    /// fgets' NULL does.
    pub fn read_from(&self, name: Vec<u8>, input: &mut dyn Read) -> Result<DataSet, ReadError> {
        let mut points: Vec<f64> = Vec::new();
        let (mut sy, mut syy) = (0.0f64, 0.0f64);
        let max = self.bufsiz - 1;
        let mut buf = vec![0u8; CHUNK + max];
        let (mut pos, mut end, mut eof) = (0usize, 0usize, false);
        let mut line = 0u64;
        loop {
            if !eof && end - pos < max {
                buf.copy_within(pos..end, 0);
                (end, pos) = (end - pos, 0);
                while !eof && end < buf.len() {
                    match input.read(&mut buf[end..]) {
                        Ok(0) => eof = true,
                        Ok(n) => end += n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        Err(_) => eof = true,
                    }
                }
            }
            if pos == end {
                break;
            }
            // One fgets() call: up to BUFSIZ-1 bytes, through a newline.
            let window = &buf[pos..end.min(pos + max)];
            let len = match window.iter().position(|&b| b == b'\n') {
                Some(k) => k + 1,
                None => window.len(),
            };
            let piece = &window[..len];
            pos += len;
            line += 1;
            // strlen(): a NUL ends the C string early.
            let piece = match piece.iter().position(|&b| b == 0) {
                Some(k) => &piece[..k],
                None => piece,
            };
            let mut cut = piece.len();
            while cut > 0 && is_c_space(piece[cut - 1]) {
                cut -= 1;
            }
            let Some(tok) = self.pick(&piece[..cut]) else {
                continue;
            };
            let (d, used) = strtod(tok);
            if used != tok.len() {
                return Err(ReadError::InvalidData { line });
            }
            if points.len() == points.capacity() {
                let more = points.len().max(1024);
                if points.try_reserve_exact(more).is_err() {
                    return Err(ReadError::OutOfMemory {
                        points: points.len(),
                    });
                }
            }
            points.push(d);
            sy += d;
            syy += d * d;
        }
        points.shrink_to_fit();
        Ok(DataSet {
            name,
            points,
            sy,
            syy,
        })
    }

    /// Parse a whole input held in memory, one `\n`-ended line at a time
    /// (no `BUFSIZ` pieces: an import names real lines), with the same
    /// tokens, comments and `strtod` as [`Parser::read_from`]. Each point
    /// comes with its 1-based line; a bad token is `InvalidData` there.
    pub fn read_numbered(&self, data: &[u8]) -> Result<Vec<(u64, f64)>, ReadError> {
        let mut out = Vec::new();
        for (i, piece) in data.split(|&b| b == b'\n').enumerate() {
            let piece = match piece.iter().position(|&b| b == 0) {
                Some(k) => &piece[..k],
                None => piece,
            };
            let mut cut = piece.len();
            while cut > 0 && is_c_space(piece[cut - 1]) {
                cut -= 1;
            }
            let Some(tok) = self.pick(&piece[..cut]) else {
                continue;
            };
            let line = i as u64 + 1;
            let (d, used) = strtod(tok);
            if used != tok.len() {
                return Err(ReadError::InvalidData { line });
            }
            out.push((line, d));
        }
        Ok(out)
    }

    /// The `column`-th strtok token of `line`, or `None` when the line has
    /// fewer tokens or a token starting with `#` comes first.
    #[inline]
    fn pick<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        let mut i = 0;
        let mut col = 1i64;
        loop {
            while i < line.len() && self.delim[line[i] as usize] {
                i += 1;
            }
            if i >= line.len() {
                return None;
            }
            let start = i;
            while i < line.len() && !self.delim[line[i] as usize] {
                i += 1;
            }
            if line[start] == b'#' {
                return None;
            }
            if col == self.column {
                return Some(&line[start..i]);
            }
            col += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(p: &Parser, s: &[u8]) -> Result<Vec<f64>, ReadError> {
        p.read(b"t".to_vec(), s).map(|d| d.points)
    }

    #[test]
    fn columns_comments_and_blank_lines() {
        let p = Parser::new(8192, 1, b" \t");
        assert_eq!(
            read(&p, b"1\n# c\n\n  \n2 # note\n3\r\n"),
            Ok(vec![1.0, 2.0, 3.0])
        );
        let p2 = Parser::new(8192, 2, b" \t");
        assert_eq!(read(&p2, b"1 2\n3\n12 #x\n4\t5 6\n"), Ok(vec![2.0, 5.0]));
        assert_eq!(
            read(&p, b"1\n2\nabc\n"),
            Err(ReadError::InvalidData { line: 3 })
        );
        assert_eq!(read(&p, b"1\n\x002\n3"), Ok(vec![1.0, 3.0]));
        let pc = Parser::new(8192, 2, b",");
        assert_eq!(read(&pc, b"a,1 \nb,,2\n"), Ok(vec![1.0, 2.0]));
    }

    #[test]
    fn numbered_lines_for_imports() {
        let p = Parser::new(8192, 2, b",");
        assert_eq!(
            p.read_numbered(b"# h\na,1\n\nb,2.5 \r\n"),
            Ok(vec![(2, 1.0), (4, 2.5)])
        );
        assert_eq!(
            p.read_numbered(b"a,1\nb,x\n"),
            Err(ReadError::InvalidData { line: 2 })
        );
    }

    #[test]
    fn long_lines_split_like_fgets() {
        // 1023 bytes then a newline: with BUFSIZ 1024 the newline comes
        // back as an empty second "line".
        let mut s = vec![b' '; 1022];
        s.push(b'7');
        s.extend_from_slice(b"\nx\n");
        let p = Parser::new(1024, 1, b" \t");
        assert_eq!(read(&p, &s), Err(ReadError::InvalidData { line: 3 }));
        let mut s = vec![b'1'; 1500];
        s.push(b'\n');
        let p = Parser::new(1024, 1, b" \t");
        let v = read(&p, &s).unwrap();
        assert_eq!(v.len(), 2);
    }

    /// Pieces that straddle the streaming buffer's refills read as if
    /// the input were whole.
    #[test]
    fn streaming_across_chunks_is_seamless() {
        let mut s = Vec::new();
        let mut want = Vec::new();
        let mut i = 0u32;
        while s.len() < 3 * CHUNK {
            let pad = " ".repeat((i % 37) as usize);
            s.extend_from_slice(format!("{pad}{i}.5 # c\n").as_bytes());
            want.push(i as f64 + 0.5);
            i += 1;
        }
        // A reader that hands out odd-sized pieces.
        struct Dribble<'a>(&'a [u8], usize);
        impl Read for Dribble<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                self.1 = (self.1 * 7 + 3) % 1000 + 1;
                let n = self.1.min(b.len()).min(self.0.len());
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        for bufsiz in [1024, 8192] {
            let p = Parser::new(bufsiz, 1, b" \t");
            let got = p.read_from(b"t".to_vec(), &mut Dribble(&s, 1)).unwrap();
            assert_eq!(got.points, want);
            assert_eq!(read(&p, &s).unwrap(), want);
        }
    }
}
