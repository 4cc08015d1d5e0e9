//! ministat's `qsort(points, n, sizeof(double), dbl_cmp)`, reproduced.
//!
//! `dbl_cmp` answers -1/1 from `<`/`>` and 0 otherwise, so it calls a NaN
//! "equal" to everything and `-0.0` equal to `0.0`. For such inputs the
//! order qsort leaves depends on its algorithm, and ministat prints it
//! (`Min` is the first point, `-0` differs from `0`). So:
//!
//! - data without NaN and without zeros of both signs: every correct sort
//!   gives the same array, so the fast `sort_unstable_by` is used;
//! - otherwise the C library's own algorithm is replayed: glibc 2.36's
//!   top-down merge sort (Debian 12) or FreeBSD's Bentley-McIlroy quicksort
//!   (`lib/libc/stdlib/qsort.c`, without the old insertion-sort fallback).

use std::cmp::Ordering;

/// Which C library's qsort to replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Qsort {
    Glibc,
    FreeBsd,
}

/// ministat's `dbl_cmp`.
#[inline]
fn dbl_cmp(a: f64, b: f64) -> i32 {
    if a < b {
        -1
    } else if a > b {
        1
    } else {
        0
    }
}

/// Sort `v` into the order `qsort(v, dbl_cmp)` leaves with `libc`.
///
/// - Time: O(n log n).
pub fn sort_points(v: &mut [f64], libc: Qsort) {
    let mut nan = false;
    let (mut pos0, mut neg0) = (false, false);
    for &x in v.iter() {
        nan |= x.is_nan();
        if x == 0.0 {
            if x.is_sign_negative() {
                neg0 = true;
            } else {
                pos0 = true;
            }
        }
    }
    if !(nan || pos0 && neg0) {
        // Equal elements are bit-identical here, so any sort agrees.
        v.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
        return;
    }
    match libc {
        Qsort::Glibc => glibc_msort(v),
        Qsort::FreeBsd => freebsd_qsort(v),
    }
}

/// glibc (before 2.37) `qsort`: `msort_with_tmp`, a top-down merge sort
/// that splits at n/2 and takes the left element unless `cmp > 0`.
fn glibc_msort(v: &mut [f64]) {
    let mut tmp = vec![0.0; v.len()];
    msort(v, &mut tmp);
}

fn msort(b: &mut [f64], tmp: &mut [f64]) {
    let n = b.len();
    if n <= 1 {
        return;
    }
    let n1 = n / 2;
    {
        let (b1, b2) = b.split_at_mut(n1);
        msort(b1, tmp);
        msort(b2, tmp);
    }
    let (mut i, mut j, mut k) = (0, n1, 0);
    while i < n1 && j < n {
        if dbl_cmp(b[i], b[j]) <= 0 {
            tmp[k] = b[i];
            i += 1;
        } else {
            tmp[k] = b[j];
            j += 1;
        }
        k += 1;
    }
    // Remaining left elements follow; remaining right ones are in place.
    while i < n1 {
        tmp[k] = b[i];
        i += 1;
        k += 1;
    }
    b[..k].copy_from_slice(&tmp[..k]);
}

fn med3(v: &[f64], a: usize, b: usize, c: usize) -> usize {
    if dbl_cmp(v[a], v[b]) < 0 {
        if dbl_cmp(v[b], v[c]) < 0 {
            b
        } else if dbl_cmp(v[a], v[c]) < 0 {
            c
        } else {
            a
        }
    } else if dbl_cmp(v[b], v[c]) > 0 {
        b
    } else if dbl_cmp(v[a], v[c]) < 0 {
        a
    } else {
        c
    }
}

fn vecswap(v: &mut [f64], a: usize, b: usize, n: usize) {
    for k in 0..n {
        v.swap(a + k, b + k);
    }
}

/// FreeBSD `qsort`: Bentley & McIlroy, "Engineering a Sort Function"
/// (insertion sort below 7 elements, median of three or ninther, three-way
/// partition, recurse on the smaller side).
fn freebsd_qsort(v: &mut [f64]) {
    let mut lo = 0usize;
    let mut n = v.len();
    loop {
        let a = lo;
        if n < 7 {
            for pm in a + 1..a + n {
                let mut pl = pm;
                while pl > a && dbl_cmp(v[pl - 1], v[pl]) > 0 {
                    v.swap(pl, pl - 1);
                    pl -= 1;
                }
            }
            return;
        }
        let mut pm = a + n / 2;
        if n > 7 {
            let mut pl = a;
            let mut pn = a + n - 1;
            if n > 40 {
                let d = n / 8;
                pl = med3(v, pl, pl + d, pl + 2 * d);
                pm = med3(v, pm - d, pm, pm + d);
                pn = med3(v, pn - 2 * d, pn - d, pn);
            }
            pm = med3(v, pl, pm, pn);
        }
        v.swap(a, pm);
        let (mut pa, mut pb) = (a + 1, a + 1);
        let (mut pc, mut pd) = (a + n - 1, a + n - 1);
        loop {
            while pb <= pc {
                let r = dbl_cmp(v[pb], v[a]);
                if r > 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pa, pb);
                    pa += 1;
                }
                pb += 1;
            }
            while pb <= pc {
                let r = dbl_cmp(v[pc], v[a]);
                if r < 0 {
                    break;
                }
                if r == 0 {
                    v.swap(pc, pd);
                    pd -= 1;
                }
                pc -= 1;
            }
            if pb > pc {
                break;
            }
            v.swap(pb, pc);
            pb += 1;
            pc -= 1;
        }
        let pn = a + n;
        let r = (pa - a).min(pb - pa);
        vecswap(v, a, pb - r, r);
        let r = (pd - pc).min(pn - pd - 1);
        vecswap(v, pb, pn - r, r);
        let d1 = pb - pa;
        let d2 = pd - pc;
        if d1 <= d2 {
            if d1 > 1 {
                freebsd_qsort(&mut v[a..a + d1]);
            }
            if d2 > 1 {
                lo = pn - d2;
                n = d2;
                continue;
            }
        } else {
            if d2 > 1 {
                freebsd_qsort(&mut v[pn - d2..pn]);
            }
            if d1 > 1 {
                n = d1;
                continue;
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    extern "C" fn c_cmp(a: *const libc::c_void, b: *const libc::c_void) -> libc::c_int {
        // SAFETY: qsort passes pointers to elements of the f64 array.
        let (a, b) = unsafe { (*(a as *const f64), *(b as *const f64)) };
        dbl_cmp(a, b)
    }

    #[test]
    fn both_sort_correctly_and_glibc_matches_libc_qsort() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for round in 0..400 {
            let n = (rng.next_u32() % 300) as usize;
            let pool = [f64::NAN, -0.0, 0.0, 1.0, -1.0, 2.5, f64::INFINITY];
            let v: Vec<f64> = (0..n)
                .map(|_| {
                    if round % 2 == 0 {
                        pool[(rng.next_u32() as usize) % pool.len()]
                    } else {
                        (rng.next_u32() % 50) as f64 - 25.0
                    }
                })
                .collect();
            let mut g = v.clone();
            glibc_msort(&mut g);
            let mut f = v.clone();
            freebsd_qsort(&mut f);
            let mut c = v.clone();
            // SAFETY: c is a valid array of n f64 and c_cmp reads only them.
            unsafe {
                libc::qsort(c.as_mut_ptr().cast(), c.len(), 8, Some(c_cmp));
            }
            let bits = |x: &Vec<f64>| x.iter().map(|d| d.to_bits()).collect::<Vec<_>>();
            // This machine's libc is glibc; before 2.37 its qsort is msort.
            if glibc_is_msort() {
                assert_eq!(bits(&g), bits(&c), "round {round}");
            }
            if round % 2 == 1 {
                let mut s = v.clone();
                s.sort_by(|a, b| a.partial_cmp(b).unwrap());
                assert_eq!(f, s);
                assert_eq!(g, s);
            }
        }
    }

    fn glibc_is_msort() -> bool {
        // SAFETY: gnu_get_libc_version returns a static C string.
        let v = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
        let v = v.to_string_lossy();
        let minor: u32 = v
            .split('.')
            .nth(1)
            .and_then(|m| m.parse().ok())
            .unwrap_or(99);
        v.starts_with("2.") && minor < 37
    }

    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const libc::c_char;
    }
}
