//! C number parsing: `strtod` and `strtol` as ministat calls them.
//!
//! ministat accepts a data token when `strtod` consumes all of it, and the
//! option values `-C`/`-w` when `strtol` does, so the exact grammar matters:
//! hex floats (`0x1p3`), `inf`/`infinity`/`nan`/`nan(...)`, a leading `+`,
//! `5.` and `.5` are numbers; `1e` is the number 1 followed by junk.
//!
//! This is kbench's own parser (no libc call): it scans the longest prefix
//! that C's `strtod` would accept (C11 7.22.1.3, "C" locale, which is what
//! ministat runs in since it never calls `setlocale`), converts decimal
//! prefixes with Rust's correctly rounded `f64::from_str` (glibc's strtod is
//! correctly rounded too) and hexadecimal ones with its own round-to-nearest-
//! even conversion. The unit tests compare it with the C library's `strtod`
//! on generated strings.

/// C `isspace` in the "C" locale.
#[inline]
pub fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `strtod(s, &end)`: the value and the number of bytes consumed (0 when
/// nothing was converted, as C leaves `end == s`). `s` ends at the first NUL
/// if it has one, like a C string.
pub fn strtod(s: &[u8]) -> (f64, usize) {
    let s = match s.iter().position(|&b| b == 0) {
        Some(n) => &s[..n],
        None => s,
    };
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let sign_at = i;
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let apply = |v: f64| if neg { -v } else { v };
    let rest = &s[i..];
    // inf / infinity
    if starts_with_ci(rest, b"inf") {
        let n = if starts_with_ci(rest, b"infinity") {
            8
        } else {
            3
        };
        return (apply(f64::INFINITY), i + n);
    }
    // nan / nan(n-char-sequence)
    if starts_with_ci(rest, b"nan") {
        let mut n = 3;
        if rest.get(3) == Some(&b'(') {
            let mut j = 4;
            while j < rest.len() && (rest[j].is_ascii_alphanumeric() || rest[j] == b'_') {
                j += 1;
            }
            if rest.get(j) == Some(&b')') {
                n = j + 1;
            }
        }
        return (apply(f64::NAN), i + n);
    }
    // Hexadecimal
    if rest.len() >= 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
        if let Some((v, n)) = hex_float(&rest[2..]) {
            return (apply(v), i + 2 + n);
        }
        // "0x" without hex digits: the "0" is the number.
        return (apply(0.0), i + 1);
    }
    // Decimal
    let mut j = 0;
    let int_digits = count_digits(rest, j);
    j += int_digits;
    let mut frac_digits = 0;
    if rest.get(j) == Some(&b'.') {
        frac_digits = count_digits(rest, j + 1);
        if int_digits + frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return (0.0, 0);
    }
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let ed = count_digits(rest, k);
        if ed > 0 {
            j = k + ed;
        }
    }
    let text = &s[sign_at..i + j];
    // SAFETY-free: the slice is ASCII by construction.
    let text = std::str::from_utf8(text).expect("ascii");
    let v: f64 = text.parse().unwrap_or_else(|_| parse_fallback(text));
    (v, i + j)
}

/// Rust's parser accepts every form scanned above; this keeps the function
/// total should that ever change.
fn parse_fallback(text: &str) -> f64 {
    let t = text.trim_start_matches('+');
    let t = if let Some(x) = t.strip_suffix('.') {
        x
    } else {
        t
    };
    t.parse().unwrap_or(0.0)
}

fn count_digits(s: &[u8], from: usize) -> usize {
    s.get(from..)
        .map_or(0, |t| t.iter().take_while(|b| b.is_ascii_digit()).count())
}

fn starts_with_ci(s: &[u8], pat: &[u8]) -> bool {
    s.len() >= pat.len() && s.iter().zip(pat).all(|(a, b)| a.to_ascii_lowercase() == *b)
}

/// Parse the part after `0x`: hex digits, optional point and fraction,
/// optional binary exponent. `None` when there is no hex digit.
fn hex_float(s: &[u8]) -> Option<(f64, usize)> {
    let hexval = |b: u8| (b as char).to_digit(16).map(|d| d as u64);
    let mut mant: u64 = 0;
    let mut exp: i64 = 0; // value = mant * 2^exp (+ sticky below)
    let mut sticky = false;
    let mut ndig = 0;
    let mut j = 0;
    let push = |d: u64, frac: bool, mant: &mut u64, exp: &mut i64, sticky: &mut bool| {
        if *mant < (1u64 << 60) {
            *mant = *mant * 16 + d;
            if frac {
                *exp -= 4;
            }
        } else {
            *sticky |= d != 0;
            if !frac {
                *exp += 4;
            }
        }
    };
    while let Some(d) = s.get(j).and_then(|&b| hexval(b)) {
        push(d, false, &mut mant, &mut exp, &mut sticky);
        ndig += 1;
        j += 1;
    }
    if s.get(j) == Some(&b'.') {
        let mut k = j + 1;
        let mut fd = 0;
        while let Some(d) = s.get(k).and_then(|&b| hexval(b)) {
            push(d, true, &mut mant, &mut exp, &mut sticky);
            fd += 1;
            k += 1;
        }
        if ndig + fd > 0 {
            j = k;
            ndig += fd;
        }
    }
    if ndig == 0 {
        return None;
    }
    if matches!(s.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let mut eneg = false;
        match s.get(k) {
            Some(b'+') => k += 1,
            Some(b'-') => {
                eneg = true;
                k += 1
            }
            _ => {}
        }
        let ed = count_digits(s, k);
        if ed > 0 {
            let mut e: i64 = 0;
            for &b in &s[k..k + ed] {
                e = (e * 10 + (b - b'0') as i64).min(1 << 40);
            }
            exp += if eneg { -e } else { e };
            j = k + ed;
        }
    }
    Some((compose(mant, exp, sticky), j))
}

/// Round `mant * 2^exp` (plus a nonzero tail below `mant` when `sticky`) to
/// the nearest double, ties to even.
fn compose(mant: u64, exp: i64, sticky: bool) -> f64 {
    if mant == 0 {
        return 0.0;
    }
    let lz = mant.leading_zeros() as i64;
    let m = mant << lz; // top bit at 63
    let e = exp - lz; // value = m * 2^e
    let top = e + 63; // exponent of the leading bit
    if top > 1023 {
        return f64::INFINITY;
    }
    // Number of low bits of m to drop.
    let shift: i64 = if top >= -1022 { 11 } else { 11 + (-1022 - top) };
    let (kept, rem_half_cmp, odd) = if shift >= 128 {
        (0u64, std::cmp::Ordering::Less, false)
    } else {
        let m128 = m as u128;
        let kept = (m128 >> shift) as u64;
        let rem = m128 & ((1u128 << shift) - 1);
        let half = 1u128 << (shift - 1);
        let ord = rem.cmp(&half);
        (kept, ord, kept & 1 == 1)
    };
    use std::cmp::Ordering::*;
    let up = match rem_half_cmp {
        Greater => true,
        Equal => sticky || odd,
        Less => false,
    };
    let kept = kept + up as u64;
    if top >= -1022 {
        // Normal: kept in [2^52, 2^53]; 2^53 means one more binade.
        let (kept, top) = if kept == 1u64 << 53 {
            (1u64 << 52, top + 1)
        } else {
            (kept, top)
        };
        if top > 1023 {
            return f64::INFINITY;
        }
        let bits = (((top + 1023) as u64) << 52) | (kept & ((1u64 << 52) - 1));
        f64::from_bits(bits)
    } else {
        // Subnormal: kept counts units of 2^-1074 (may round up to the
        // smallest normal, whose bit pattern is the same integer).
        f64::from_bits(kept)
    }
}

/// `strtol(s, &end, 10)` on a 64-bit `long`: the value (clamped to the
/// range on overflow, as C does) and the bytes consumed (0 when no digit).
pub fn strtol(s: &[u8]) -> (i64, usize) {
    let s = match s.iter().position(|&b| b == 0) {
        Some(n) => &s[..n],
        None => s,
    };
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = match s.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let nd = count_digits(s, i);
    if nd == 0 {
        return (0, 0);
    }
    // Accumulate as a negative number so i64::MIN is reachable.
    let mut acc: i64 = 0;
    let mut overflow = false;
    for &b in &s[i..i + nd] {
        let d = (b - b'0') as i64;
        match acc.checked_mul(10).and_then(|a| a.checked_sub(d)) {
            Some(a) => acc = a,
            None => overflow = true,
        }
    }
    let v = if overflow {
        if neg { i64::MIN } else { i64::MAX }
    } else if neg {
        acc
    } else {
        acc.checked_neg().unwrap_or(i64::MAX)
    };
    (v, i + nd)
}

/// C `atoi`: `(int)strtol(s, NULL, 10)`.
pub fn atoi(s: &[u8]) -> i32 {
    strtol(s).0 as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn c_strtod(s: &[u8]) -> (f64, usize) {
        let mut c = s.to_vec();
        c.push(0);
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        // SAFETY: `c` is NUL-terminated and outlives the call; `end` points
        // into it afterwards.
        let v = unsafe { libc::strtod(c.as_ptr().cast(), &mut end) };
        let n = end as usize - c.as_ptr() as usize;
        (v, n)
    }

    fn c_strtol(s: &[u8]) -> (i64, usize) {
        let mut c = s.to_vec();
        c.push(0);
        let mut end: *mut libc::c_char = std::ptr::null_mut();
        // SAFETY: as above.
        let v = unsafe { libc::strtol(c.as_ptr().cast(), &mut end, 10) };
        let n = end as usize - c.as_ptr() as usize;
        (v as i64, n)
    }

    fn same(s: &[u8]) {
        let (a, n) = strtod(s);
        let (b, m) = c_strtod(s);
        let txt = String::from_utf8_lossy(s);
        assert_eq!(n, m, "consumed for {txt:?}");
        assert!(
            a.to_bits() == b.to_bits()
                || (a.is_nan() && b.is_nan() && a.is_sign_negative() == b.is_sign_negative()),
            "value for {txt:?}: {a:e} vs {b:e}"
        );
    }

    #[test]
    fn forms_ministat_accepts() {
        for s in [
            "0x1p3",
            "+5",
            "1e9",
            "inf",
            "-inf",
            "INFINITY",
            "infinit",
            "nan",
            "-nan",
            "NaN(123)",
            "nan(",
            "nan(abc",
            "nan()",
            "5.",
            ".5",
            ".",
            "+.",
            "-",
            "+",
            "1e",
            "1e+",
            "1e+5x",
            "0x",
            "0x.",
            "0x.8p1",
            "0X1P-1074",
            "0x1p-1075",
            "0x1.8p-1074",
            "0x1.fffffffffffff8p1023",
            "0x1.fffffffffffffp1023",
            "0x3p-1076",
            "0x1p1024",
            "0x123456789abcdef123p0",
            "0x1.00000000000008p0",
            "0x1.000000000000080000001p0",
            "0x1.00000000000018p0",
            "  7",
            "\t-3.25",
            "1e-400",
            "1e400",
            "2.4703282292062327e-324",
            "2.4703282292062328e-324",
            "1.7976931348623158e308",
            "1.7976931348623159e308",
            "12ms",
            "abc",
            "",
            "0",
            "-0",
            "00012.5000",
            "1_000",
            "1,5",
            "0x1p",
            "0x1p+",
            "0e0",
            "4.9406564584124654e-324",
            "0.1e-2147483648",
            "1e99999999999999999999",
            "123456789012345678901234567890",
            "0.000000000000000000000000000000000000001",
            "0xg",
            "0x.p1",
            "infx",
            "nanx",
            "0x1P3",
        ] {
            same(s.as_bytes());
        }
    }

    #[test]
    fn random_strings_match_libc() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let alphabet = b"0123456789.eE+-xXpPabcdfinINF() \t";
        for _ in 0..50_000 {
            let len = (rng.next_u32() % 12) as usize;
            let s: Vec<u8> = (0..len)
                .map(|_| alphabet[(rng.next_u32() as usize) % alphabet.len()])
                .collect();
            same(&s);
        }
        for _ in 0..50_000 {
            // Well-formed decimals and hex floats of all magnitudes.
            let v = f64::from_bits(rng.next_u64());
            if !v.is_finite() {
                continue;
            }
            same(format!("{v:e}").as_bytes());
            same(format!("{:.25e}", v).as_bytes());
            let bits = rng.next_u64();
            let e = (rng.next_u32() % 2300) as i32 - 1150;
            same(format!("0x{:x}.{:x}p{}", bits >> 20, bits & 0xfffff, e).as_bytes());
        }
    }

    #[test]
    fn strtol_matches_libc() {
        for s in [
            "12",
            "-3",
            "+7",
            " 42",
            "2x",
            "",
            " ",
            "-",
            "99999999999",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "0x10",
            "007",
        ] {
            assert_eq!(strtol(s.as_bytes()), c_strtol(s.as_bytes()), "{s:?}");
        }
        assert_eq!(atoi(b"99999999999"), 1215752191);
        assert_eq!(atoi(b"99999999999999999999"), -1);
        assert_eq!(atoi(b"80x"), 80);
    }
}
