//! Sampled call-stack profiles of this process and everything it starts
//! afterwards (`run --profile`): the portable part of the seam.
//!
//! An OS that can profile returns a [`Profiler`] from
//! [`super::start_profiler`]; it samples on CPU time until
//! [`Profiler::finish`], which gives every sample with its time on the
//! monotonic clock (`CLOCK_MONOTONIC`, as the micro-benchmarks' timer
//! reads it) and its stack, root first.
//! The runner cuts those samples into each cell's timed intervals. Linux
//! runs `perf record -g -e cpu-clock` as a child attached to this process
//! (`perf_record.rs`); an OS without a profiler names the reason.

/// One sample: when it was taken and the call stack it saw.
#[derive(Clone, Debug, PartialEq)]
pub struct StackSample {
    /// Monotonic clock, nanoseconds.
    pub t_ns: u64,
    /// Frames from the root to the leaf, joined by `;` (folded form);
    /// kernel frames end in `_[k]`.
    pub stack: String,
}

/// A profiler that is sampling.
pub trait Profiler {
    /// Whether kernel frames are recorded (permissions allow them).
    fn kernel(&self) -> bool;
    /// Stop sampling and give every sample taken, in time order.
    fn finish(self: Box<Self>) -> anyhow::Result<Vec<StackSample>>;
}

/// The samples of `perf script -F comm,tid,time,ip,sym --ns` output: a
/// header line per sample (`comm tid secs.nanos:`), then one indented
/// `address symbol` line per frame, leaf first, then a blank line.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // `perf script` is Linux's
pub fn parse_perf_script(text: &str) -> Vec<StackSample> {
    let mut out = Vec::new();
    let mut t: Option<u64> = None;
    let mut frames: Vec<String> = Vec::new();
    let flush = |t: &mut Option<u64>, frames: &mut Vec<String>, out: &mut Vec<StackSample>| {
        if let Some(t_ns) = t.take()
            && !frames.is_empty()
        {
            frames.reverse();
            out.push(StackSample {
                t_ns,
                stack: frames.join(";"),
            });
        }
        frames.clear();
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            flush(&mut t, &mut frames, &mut out);
        } else if line.starts_with(char::is_whitespace) {
            if t.is_some()
                && let Some(f) = frame(line)
            {
                frames.push(f);
            }
        } else {
            flush(&mut t, &mut frames, &mut out);
            t = line
                .split_whitespace()
                .last()
                .and_then(|w| parse_time(w.trim_end_matches(':')));
        }
    }
    flush(&mut t, &mut frames, &mut out);
    out.sort_by_key(|s| s.t_ns);
    out
}

/// A frame line `   ffffffff8123 do_syscall_64`: the symbol, `_[k]`
/// appended for a kernel address; `;` in a name (which folded stacks use
/// as separator) becomes `:`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // `perf script` is Linux's
fn frame(line: &str) -> Option<String> {
    let line = line.trim();
    let (addr, sym) = line.split_once(char::is_whitespace)?;
    let addr = u64::from_str_radix(addr, 16).ok()?;
    let sym = sym.trim();
    let sym = if sym.is_empty() { "[unknown]" } else { sym };
    let sym = sym.replace(';', ":");
    Some(if addr >= 0xffff_8000_0000_0000 {
        format!("{sym}_[k]")
    } else {
        sym
    })
}

/// `33620.943542123` seconds as nanoseconds.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // `perf script` is Linux's
fn parse_time(w: &str) -> Option<u64> {
    let (s, frac) = w.split_once('.').unwrap_or((w, "0"));
    let s: u64 = s.parse().ok()?;
    if frac.is_empty() || frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ns: u64 = format!("{frac:0<9}").parse().ok()?;
    Some(s * 1_000_000_000 + ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_script_samples_fold_root_first() {
        let text = "kbench 123 100.000000500: \n\
                    \t ffffffff821eb0e7 clear_page_erms\n\
                    \t           113f6 leaf_fn\n\
                    \t           11000 main\n\
                    \n\
                    my prog 124 99.5: \n\
                    \t  4000 a;b\n\
                    \n\
                    kbench 123 101.000000000: \n\
                    \n";
        let s = parse_perf_script(text);
        assert_eq!(
            s,
            vec![
                StackSample {
                    t_ns: 99_500_000_000,
                    stack: "a:b".into()
                },
                StackSample {
                    t_ns: 100_000_000_500,
                    stack: "main;leaf_fn;clear_page_erms_[k]".into()
                },
            ]
        );
    }

    #[test]
    fn times_are_read_exactly_or_not_at_all() {
        assert_eq!(parse_time("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time("2"), Some(2_000_000_000));
        assert_eq!(parse_time("1.x"), None);
        assert_eq!(parse_time("1.1234567891"), None);
    }
}
