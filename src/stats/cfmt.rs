//! C `printf` `%g` formatting (`%g`, `%13.8g`), byte for byte.
//!
//! ministat prints every number with `%g` or `%13.8g`, so a drop-in
//! replacement needs a `%g` that agrees with the C library on every double.
//! glibc converts the *exact* binary value to decimal and rounds it in the
//! current rounding mode (to nearest, ties to even), so this module does the
//! same: it expands the double exactly (a few limbs of big-integer
//! arithmetic; every double has a finite decimal expansion), rounds once to
//! the requested number of significant digits, then applies C's `%g` rules
//! (ISO C 7.21.6.1: style `e` when the exponent X < -4 or X >= P, style `f`
//! otherwise, trailing zeros and a bare decimal point removed).
//!
//! Non-finite values: glibc prints `inf`, `-inf`, `nan` and `-nan` (the sign
//! bit of a NaN is shown); FreeBSD's libc prints `nan` for either sign.
//! [`Libc`] selects which one to imitate.
//!
//! The unit tests compare against the C library's `snprintf` on 10^5
//! random doubles and on hand-picked exact ties.

use std::fmt::Write as _;

/// Which C library's `printf` to imitate. They differ only on NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Libc {
    /// glibc: a NaN with the sign bit set prints as `-nan`.
    #[default]
    Glibc,
    /// FreeBSD libc: every NaN prints as `nan`.
    FreeBsd,
}

/// Format like C's `printf("%{width}.{prec}g", v)` with glibc.
///
/// `prec` 0 means 1, as in C.
///
/// ```ignore
/// assert_eq!(fmt_g(0.55690514, 13, 8), "   0.55690514");
/// assert_eq!(fmt_g(1e-9, 0, 6), "1e-09");
/// ```
pub fn fmt_g(v: f64, width: usize, prec: usize) -> String {
    let mut s = String::new();
    write_g(&mut s, v, width, prec, Libc::Glibc);
    s
}

/// Append `v` formatted as `%{width}.{prec}g` to `out`, imitating `libc`.
pub fn write_g(out: &mut String, v: f64, width: usize, prec: usize, libc: Libc) {
    let start = out.len();
    body_g(out, v, prec.max(1), libc);
    let len = out.len() - start;
    if len < width {
        // Right-justify: insert the padding before the body.
        out.insert_str(start, &" ".repeat(width - len));
    }
}

/// The unpadded `%.{prec}g` text of `v` (`prec` >= 1).
fn body_g(out: &mut String, v: f64, prec: usize, libc: Libc) {
    if v.is_nan() {
        let neg = v.is_sign_negative() && libc == Libc::Glibc;
        out.push_str(if neg { "-nan" } else { "nan" });
        return;
    }
    if v.is_sign_negative() {
        out.push('-');
    }
    let a = v.abs();
    if a.is_infinite() {
        out.push_str("inf");
        return;
    }
    let (digits, x) = if a == 0.0 {
        (vec![0u8; prec], 0i32)
    } else {
        round_digits(a, prec)
    };
    // Digits are `prec` decimal digits d0.d1d2... times 10^x.
    let p = prec as i32;
    if x < -4 || x >= p {
        // Style e, precision prec-1, trailing zeros removed.
        out.push(char::from(b'0' + digits[0]));
        let frac = trim_zeros(&digits[1..]);
        if !frac.is_empty() {
            out.push('.');
            push_digits(out, frac);
        }
        out.push('e');
        out.push(if x < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", x.unsigned_abs());
    } else if x >= 0 {
        // Style f, integer part has x+1 digits.
        let int_len = (x + 1) as usize;
        push_digits(out, &digits[..int_len]);
        let frac = trim_zeros(&digits[int_len..]);
        if !frac.is_empty() {
            out.push('.');
            push_digits(out, frac);
        }
    } else {
        // Style f, 0.000ddd (x in -4..=-1).
        let frac = trim_zeros(&digits);
        out.push_str("0.");
        for _ in 0..(-x - 1) {
            out.push('0');
        }
        push_digits(out, frac);
    }
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let end = d.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    &d[..end]
}

fn push_digits(out: &mut String, d: &[u8]) {
    out.extend(d.iter().map(|&c| char::from(b'0' + c)));
}

/// The exact value of finite `a > 0` rounded to `n` significant decimal
/// digits, ties to even: `(digits, x)` with `a ~= d0.d1...d(n-1) * 10^x`.
///
/// - Time: O(bits of the expansion), at most a few thousand limb steps.
pub(crate) fn round_digits(a: f64, n: usize) -> (Vec<u8>, i32) {
    let (mut d, mut x, sticky) = exact_digits(a, n + 1);
    // `d` holds the leading significant digits (at least n+1 of them unless
    // the expansion is shorter); `sticky` says a nonzero tail follows.
    if d.len() <= n {
        d.resize(n, 0);
        return (d, x);
    }
    let next = d[n];
    let rest_nonzero = sticky || d[n + 1..].iter().any(|&c| c != 0);
    d.truncate(n);
    let up = match next {
        0..=4 => false,
        6..=9 => true,
        _ => rest_nonzero || d[n - 1] % 2 == 1,
    };
    if up {
        let mut i = n;
        loop {
            if i == 0 {
                // 99..9 rounded up to 100..0: one more power of ten.
                d.insert(0, 1);
                d.truncate(n);
                x += 1;
                break;
            }
            i -= 1;
            if d[i] == 9 {
                d[i] = 0;
            } else {
                d[i] += 1;
                break;
            }
        }
    }
    (d, x)
}

/// At least `want` leading significant digits of finite `a > 0` (fewer if
/// the whole expansion is shorter), the decimal exponent of the first one,
/// and whether nonzero digits follow the ones returned.
fn exact_digits(a: f64, want: usize) -> (Vec<u8>, i32, bool) {
    let bits = a.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e2) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    // a = m * 2^e2 exactly.
    let mut digits: Vec<u8> = Vec::with_capacity(want + 40);
    if e2 >= 0 {
        // An integer: m << e2, converted to decimal in full.
        let mut big = Big::from_u64(m);
        big.shl(e2 as u32);
        big.to_decimal(&mut digits);
        let x = digits.len() as i32 - 1;
        let sticky = false;
        return (digits, x, sticky);
    }
    let fbits = (-e2) as u32;
    // Integer part.
    let int_part = if fbits >= 64 { 0 } else { m >> fbits };
    if int_part > 0 {
        let s = int_part.to_string();
        digits.extend(s.bytes().map(|c| c - b'0'));
    }
    let mut x = digits.len() as i32 - 1; // exponent of digits[0] if any
    // Fraction numerator over 2^fbits.
    let mut f = Big::from_u64(if fbits >= 64 {
        m
    } else {
        m & ((1u64 << fbits) - 1)
    });
    // Leading zeros of the fraction (only counted while no digit is seen).
    let mut lead_zero_pos = -1i32; // exponent of the next fraction digit
    while !f.is_zero() && digits.len() < want {
        let chunk = f.mul_small_take_high(10_000_000_000_000_000_000, fbits);
        // 19 digits of the fraction.
        let mut buf = [0u8; 19];
        let mut c = chunk;
        for slot in buf.iter_mut().rev() {
            *slot = (c % 10) as u8;
            c /= 10;
        }
        if digits.is_empty() {
            match buf.iter().position(|&d| d != 0) {
                None => {
                    lead_zero_pos -= 19;
                    continue;
                }
                Some(i) => {
                    x = lead_zero_pos - i as i32;
                    digits.extend_from_slice(&buf[i..]);
                }
            }
        } else {
            digits.extend_from_slice(&buf);
        }
    }
    let sticky = !f.is_zero();
    (digits, x, sticky)
}

/// A small unsigned big integer, little-endian 64-bit limbs.
struct Big {
    limbs: Vec<u64>,
}

impl Big {
    fn from_u64(v: u64) -> Big {
        Big { limbs: vec![v] }
    }

    fn is_zero(&self) -> bool {
        self.limbs.iter().all(|&l| l == 0)
    }

    fn shl(&mut self, n: u32) {
        let words = (n / 64) as usize;
        let bits = n % 64;
        if bits > 0 {
            let mut carry = 0u64;
            for l in self.limbs.iter_mut() {
                let nc = *l >> (64 - bits);
                *l = (*l << bits) | carry;
                carry = nc;
            }
            if carry != 0 {
                self.limbs.push(carry);
            }
        }
        if words > 0 {
            self.limbs.splice(0..0, std::iter::repeat_n(0, words));
        }
    }

    /// `self *= k`, then split at bit `fbits`: return the part above it
    /// (which must fit in a u64) and keep the part below in `self`.
    fn mul_small_take_high(&mut self, k: u64, fbits: u32) -> u64 {
        let mut carry: u128 = 0;
        for l in self.limbs.iter_mut() {
            let p = (*l as u128) * (k as u128) + carry;
            *l = p as u64;
            carry = p >> 64;
        }
        if carry != 0 {
            self.limbs.push(carry as u64);
        }
        let w = (fbits / 64) as usize;
        let b = fbits % 64;
        // high = self >> fbits (fits in 64 bits since self < 2^fbits * k).
        let get = |i: usize| self.limbs.get(i).copied().unwrap_or(0);
        let high = if b == 0 {
            get(w)
        } else {
            (get(w) >> b) | (get(w + 1) << (64 - b))
        };
        // Keep the low fbits bits.
        self.limbs.truncate(w + 1);
        if let Some(l) = self.limbs.get_mut(w) {
            *l &= if b == 0 { 0 } else { (1u64 << b) - 1 };
        }
        high
    }

    /// Append all decimal digits (most significant first, no leading zeros).
    fn to_decimal(&self, out: &mut Vec<u8>) {
        const CHUNK: u64 = 10_000_000_000_000_000_000; // 10^19
        let mut n = self.limbs.clone();
        while n.len() > 1 && *n.last().unwrap() == 0 {
            n.pop();
        }
        let mut chunks: Vec<u64> = Vec::new();
        while !(n.len() == 1 && n[0] == 0) {
            let mut rem: u128 = 0;
            for l in n.iter_mut().rev() {
                let cur = (rem << 64) | (*l as u128);
                *l = (cur / CHUNK as u128) as u64;
                rem = cur % CHUNK as u128;
            }
            chunks.push(rem as u64);
            while n.len() > 1 && *n.last().unwrap() == 0 {
                n.pop();
            }
        }
        let start = out.len();
        for (i, c) in chunks.iter().rev().enumerate() {
            if i == 0 {
                out.extend(c.to_string().bytes().map(|b| b - b'0'));
            } else {
                let s = format!("{c:019}");
                out.extend(s.bytes().map(|b| b - b'0'));
            }
        }
        if out.len() == start {
            out.push(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The C library's own `%{width}.{prec}g`.
    fn c_fmt(v: f64, width: usize, prec: usize) -> String {
        let fmt = std::ffi::CString::new(format!("%{width}.{prec}g")).unwrap();
        let mut buf = vec![0u8; 2048];
        // SAFETY: the buffer is large enough for any %g of a double with
        // prec <= 40 and width <= 64; snprintf never writes past its size.
        let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), v) };
        assert!(n >= 0 && (n as usize) < buf.len());
        String::from_utf8(buf[..n as usize].to_vec()).unwrap()
    }

    fn check(v: f64, width: usize, prec: usize) {
        assert_eq!(
            fmt_g(v, width, prec),
            c_fmt(v, width, prec),
            "value {v:e} (bits {:#x}) width {width} prec {prec}",
            v.to_bits()
        );
    }

    #[test]
    fn ministat_examples() {
        assert_eq!(fmt_g(0.55690514, 13, 8), "   0.55690514");
        assert_eq!(fmt_g(165.589, 13, 8), "      165.589");
        assert_eq!(fmt_g(1e-9, 0, 6), "1e-09");
        assert_eq!(fmt_g(257747570.0, 13, 8), "2.5774757e+08");
        assert_eq!(fmt_g(-0.0, 0, 6), "-0");
        assert_eq!(fmt_g(f64::NAN, 13, 8), "          nan");
        assert_eq!(fmt_g(-f64::NAN, 0, 6), "-nan");
        assert_eq!(fmt_g(f64::NEG_INFINITY, 5, 6), " -inf");
        let mut s = String::new();
        write_g(&mut s, -f64::NAN, 0, 6, Libc::FreeBsd);
        assert_eq!(s, "nan");
    }

    #[test]
    fn exact_ties_round_half_to_even() {
        // Exactly representable midpoints: glibc rounds to even.
        let ties = [
            (0.5, 0),
            (1.5, 1),
            (2.5, 1),
            (3.5, 1),
            (0.125, 2),
            (0.375, 2),
            (12.5, 2),
            (13.5, 2),
            (25.0, 1),
            (35.0, 1),
            (1234565.0, 6),
            (1234575.0, 6),
            (2.5e-5, 1),
            (0.0625, 3),
            (1.0000005, 7),
            (8.5, 1),
            (9.5, 1),
            (99.5, 2),
            (999999.5, 6),
            (9999995.0, 6),
            (4503599627370497.5, 16),
            (18014398509481985.0, 16),
        ];
        for (v, p) in ties {
            check(v, 0, p);
            check(-v, 0, p);
        }
        assert_eq!(fmt_g(2.5, 0, 1), "2");
        assert_eq!(fmt_g(3.5, 0, 1), "4");
        assert_eq!(fmt_g(0.125, 0, 2), "0.12");
        assert_eq!(fmt_g(0.375, 0, 2), "0.38");
        assert_eq!(fmt_g(9.5, 0, 1), "1e+01");
    }

    #[test]
    fn edges() {
        let vals = [
            0.0,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 3.0,
            5e-324,
            f64::MAX,
            1e-5,
            1e-4,
            0.0001,
            0.00009999995,
            99999.95,
            999999.5,
            1e15,
            1e16,
            1e17,
            1e22,
            1e23,
            2f64.powi(63),
            2f64.powi(64),
            2f64.powi(200),
            0.1,
            0.2,
            0.3,
            1.0 / 3.0,
            2.0 / 3.0,
            123456789.0,
        ];
        for v in vals {
            for p in [0, 1, 2, 6, 8, 15, 16, 17, 18, 25, 40] {
                for w in [0, 13, 30] {
                    check(v, w, p);
                    check(-v, w, p);
                }
            }
        }
    }

    #[test]
    fn matches_libc_on_random_doubles() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6d696e6973746174);
        for i in 0..100_000u32 {
            // Half uniformly random bit patterns (every exponent, NaNs,
            // infinities, subnormals), half "measurement-like" values with
            // few binary digits, where exact ties are common.
            let v = if i % 2 == 0 {
                f64::from_bits(rng.next_u64())
            } else {
                let int = (rng.next_u64() % 2_000_000_001) as f64 - 1e9;
                let scale = 2f64.powi((rng.next_u32() % 40) as i32 - 20);
                int * scale
            };
            check(v, 0, 6);
            check(v, 13, 8);
            let p = (rng.next_u32() % 20) as usize;
            let w = (rng.next_u32() % 30) as usize;
            check(v, w, p);
        }
    }
}
