//! C `printf` number formatting (`%g`, `%13.8g`) for ministat-compatible
//! output.
//!
//! Interim implementation through the C library's snprintf; issue 3 replaces
//! it with kbench's own formatter tested against glibc.

/// Format like C's `%{width}.{prec}g`.
pub fn fmt_g(v: f64, width: usize, prec: usize) -> String {
    let fmt = std::ffi::CString::new(format!("%{width}.{prec}g")).expect("no NUL");
    let mut buf = [0u8; 64];
    // SAFETY: buf is large enough for any %g of a double with prec <= 17
    // and width < 40; snprintf never writes past its size argument.
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), fmt.as_ptr(), v) };
    String::from_utf8_lossy(&buf[..(n.max(0) as usize).min(buf.len() - 1)]).into_owned()
}
