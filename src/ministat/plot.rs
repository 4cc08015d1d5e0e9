//! ministat's ASCII plot, quirks included.
//!
//! Same algorithm in both versions (`SetupPlot`/`AdjPlot`/`DimPlot`/
//! `PlotSet`/`DumpPlot`):
//!
//! - the axis spans every set's min, max and mean +/- stddev (NaN ignored);
//!   `dx = span / (width - 1)`, `x0 = min - dx / 2`, column =
//!   `(int)((v - x0) / dx)`;
//! - a column's points stack upwards, sets OR-ing their bit into the cell
//!   (`x`, `+`, `*` = both, ...);
//! - height quirk: the row count is *reassigned* to each set's tallest
//!   stack + 1, so only the last set's height is printed, and growing the
//!   buffer clears the rows above the previous set's height;
//! - bars: `|` at mean +/- stddev, `_` in empty cells between, then `M`
//!   (median) and `A` (mean), later sets overwriting, one shared bar row or
//!   one per set with `-s`.
//!
//! Where the C code would index outside its buffers (a width below 2, or
//! infinite/NaN positions, which C converts to INT_MIN), ministat crashes
//! with SIGSEGV; [`Crash`] reports that so the caller can do the same.

use super::input::DataSet;

const SYMBOL: [u8; 8] = [b' ', b'x', b'+', b'*', b'%', b'#', b'@', b'O'];

/// What glibc's malloc(n) really hands out on 64-bit Linux: chunks of at
/// least 32 bytes in steps of 16, 8 of them its header. A write past the
/// requested size but inside this lands in the chunk's slack: nothing
/// crashes and nothing of it is printed (ministat -w 0 lives on it).
fn usable(n: i64) -> i64 {
    ((n.max(0) + 8 + 15) & !15).max(32) - 8
}

/// Whether C's write at `idx` into a malloc(n) buffer survives: inside the
/// chunk's slack, or in the 8 header bytes before it (glibc keeps the
/// chunk's size there and ministat never frees or grows that buffer
/// again before exiting, so nothing notices).
fn survives(idx: i64, n: i64) -> bool {
    (-8..usable(n)).contains(&idx)
}

/// The same for a point OR-ed into the plot rows: it may also reach the
/// next chunk's size field, where OR-ing a set's bit leaves glibc none the
/// wiser before exit (checked against Debian's binary on subnormal data).
fn point_survives(idx: i64, n: i64) -> bool {
    (-8..usable(n) + 8).contains(&idx)
}

/// The C program would have crashed here.
#[derive(Debug, PartialEq, Eq)]
pub struct Crash;

/// Per-set numbers the plot needs, computed by the caller exactly as the
/// chosen ministat version computes them.
pub struct SetStats<'a> {
    pub set: &'a DataSet,
    pub avg: f64,
    pub stddev: f64,
    pub median: f64,
}

struct Plot {
    width: i64,
    min: f64,
    max: f64,
    span: f64,
    dx: f64,
    x0: f64,
    height: i64,
    /// Rows of `width` cells; its length is the C buffer's size.
    data: Vec<u8>,
    bars: Vec<Option<Vec<u8>>>,
    separate: bool,
}

/// C's `(int)` of a double on x86-64: truncation, and INT_MIN for NaN and
/// out-of-range values (`cvttsd2si`).
#[inline]
fn c_int(f: f64) -> i64 {
    if f.is_nan() || f >= 2147483648.0 || f <= -2147483649.0 {
        i32::MIN as i64
    } else {
        f.trunc() as i64
    }
}

impl Plot {
    fn adj(&mut self, a: f64) {
        if a < self.min {
            self.min = a;
        }
        if a > self.max {
            self.max = a;
        }
        self.span = self.max - self.min;
        self.dx = self.span / (self.width as f64 - 1.0);
        self.x0 = self.min - 0.5 * self.dx;
    }

    fn col(&self, v: f64) -> i64 {
        c_int((v - self.x0) / self.dx)
    }

    fn set(&mut self, s: &SetStats, val: u8) -> Result<(), Crash> {
        if self.span == 0.0 {
            return Ok(());
        }
        let w = self.width;
        if w < 0 {
            // malloc of a negative (huge) size returns NULL.
            return Err(Crash);
        }
        let bar = if self.separate { val as usize - 1 } else { 0 };
        if self.bars[bar].is_none() {
            self.bars[bar] = Some(vec![0u8; w as usize]);
        }
        let pts = &s.set.points;
        let mut m: i64 = 1;
        let mut i: i64 = -1;
        let mut j: i64 = 0;
        for &p in pts {
            let x = self.col(p);
            if x == i {
                j += 1;
                if j > m {
                    m = j;
                }
            } else {
                j = 1;
                i = x;
            }
        }
        m += 1;
        if w * m > i32::MAX as i64 {
            // `width * m` overflows C's int: realloc gets a huge size and
            // returns NULL, or too small a buffer.
            return Err(Crash);
        }
        if m > self.height {
            if w * m == 0 && self.height > 0 {
                // glibc's realloc(p, 0) frees p and returns NULL, which the
                // points below are written through.
                return Err(Crash);
            }
            // realloc(data, width*m) then zero rows height..m; a realloc
            // that fails returns NULL, which C then writes through.
            self.data.truncate((self.height * w) as usize);
            let more = (m * w) as usize - self.data.len();
            if self.data.try_reserve_exact(more).is_err() {
                return Err(Crash);
            }
            self.data.resize((m * w) as usize, 0);
        }
        self.height = m;
        i = -1;
        for &p in pts {
            let x = self.col(p);
            if x == i {
                j += 1;
            } else {
                j = 1;
                i = x;
            }
            // Out of its row, a point lands in a neighbouring row as in C.
            let idx = j * w + x;
            if !point_survives(idx, self.data.len() as i64) {
                return Err(Crash);
            }
            if let Some(cell) = usize::try_from(idx).ok().and_then(|i| self.data.get_mut(i)) {
                *cell |= val;
            }
        }
        let row = self.bars[bar].as_mut().expect("allocated");
        let put = |row: &mut Vec<u8>, x: i64, c: u8| -> Result<(), Crash> {
            if !survives(x, w) {
                return Err(Crash);
            }
            if let Some(cell) = usize::try_from(x).ok().and_then(|i| row.get_mut(i)) {
                *cell = c;
            }
            Ok(())
        };
        if !s.stddev.is_nan() {
            let x0 = c_int(((s.avg - s.stddev) - self.x0) / self.dx);
            let x1 = c_int(((s.avg + s.stddev) - self.x0) / self.dx);
            put(row, x1, b'|')?;
            put(row, x0, b'|')?;
            for k in (x0 + 1)..x1 {
                if !survives(k, w) {
                    return Err(Crash);
                }
                if let Some(cell) = usize::try_from(k).ok().and_then(|i| row.get_mut(i))
                    && *cell == 0
                {
                    *cell = b'_';
                }
            }
        }
        let xm = c_int((s.median - self.x0) / self.dx);
        put(row, xm, b'M')?;
        let xa = c_int((s.avg - self.x0) / self.dx);
        put(row, xa, b'A')?;
        Ok(())
    }

    fn dump(&self, out: &mut Vec<u8>) {
        if self.span == 0.0 {
            out.extend_from_slice(b"[no plot, span is zero width]\n");
            return;
        }
        let w = self.width as usize;
        let border = |out: &mut Vec<u8>| {
            out.push(b'+');
            out.resize(out.len() + w, b'-');
            out.extend_from_slice(b"+\n");
        };
        border(out);
        for i in 1..self.height {
            out.push(b'|');
            let r = (self.height - i) as usize * w;
            out.extend(
                self.data[r..r + w]
                    .iter()
                    .map(|&k| SYMBOL[(k & 7) as usize]),
            );
            out.extend_from_slice(b"|\n");
        }
        for b in self.bars.iter().flatten() {
            out.push(b'|');
            out.extend(b.iter().map(|&k| if k == 0 { b' ' } else { k }));
            out.extend_from_slice(b"|\n");
        }
        border(out);
    }
}

/// Append the plot of `sets` at `width` columns to `out`.
pub fn plot(out: &mut Vec<u8>, sets: &[SetStats], width: i64, separate: bool) -> Result<(), Crash> {
    let mut pl = Plot {
        width,
        min: 999e99,
        max: -999e99,
        span: 0.0,
        dx: 0.0,
        x0: 0.0,
        height: 0,
        data: Vec::new(),
        bars: vec![None; sets.len()],
        separate,
    };
    for s in sets {
        let mn = s.set.points[0];
        let mx = s.set.points[s.set.points.len() - 1];
        pl.adj(mn);
        pl.adj(mx);
        pl.adj(s.avg - s.stddev);
        pl.adj(s.avg + s.stddev);
    }
    for (k, s) in sets.iter().enumerate() {
        pl.set(s, (k + 1) as u8)?;
    }
    pl.dump(out);
    Ok(())
}
