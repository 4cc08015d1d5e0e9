//! Pipe benchmarks: bandwidth (lmbench bw_pipe, with the pipe patches report's knobs:
//! pipe size and zero copy), pipeflex (separate read and write sizes,
//! several pairs), and the ping-pong latency of `perf bench sched pipe` /
//! lmbench lat_pipe, plus its one-CPU context-switch variant.

use anyhow::Context;
use std::os::fd::{AsRawFd, OwnedFd};

use super::common::pipe_cloexec;
use super::micro;
use super::party::{Ends, Flow, FlowSpec, PingPong, ReadMode, WriteMode, placement_param};
use crate::bench::{Direction, Instance, Metric, ParamDef, ParamType, Params, RunSettings};
use crate::system::Feature;
use crate::units::fmt_size;

const SIZE: ParamType = ParamType::Size {
    min: 1,
    max: 1 << 30,
};

const PIPE_SIZE: ParamDef = ParamDef {
    name: "pipe_size",
    ty: SIZE,
    default: None,
    help: "F_SETPIPE_SZ on each pipe (absent: the kernel's default, 64k); the granted size is in the notes",
};
const ZERO_COPY: ParamDef = ParamDef {
    name: "zero_copy",
    ty: ParamType::Bool,
    default: Some("false"),
    help: "writer vmsplice()s page-aligned buffers with SPLICE_F_GIFT instead of write()",
};
const READER: ParamDef = ParamDef {
    name: "reader",
    ty: ParamType::Choice(&["read", "splice"]),
    default: Some("read"),
    help: "reader read()s into a buffer, or splice()s to /dev/null (no copy out)",
};
const TOTAL: ParamDef = ParamDef {
    name: "total",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 40,
    },
    default: None,
    help: "bytes per pair per sample (absent: calibrated to the sample time)",
};

/// The largest pipe an unprivileged process may ask for.
pub use crate::system::pipe_max_size;

/// `param` asks for `f`, which this OS does not have: the parameter and
/// the OS's reason, as bad input.
fn unavailable(param: &str, f: Feature) -> Result<(), String> {
    match crate::system::unavailable(f) {
        Some(why) => Err(format!("{param}: {why}")),
        None => Ok(()),
    }
}

fn check_pipe_size(p: &Params) -> Result<(), String> {
    let Some(want) = p.opt_int("pipe_size") else {
        return Ok(());
    };
    unavailable("pipe_size", Feature::PipeResize)?;
    if let Some(max) = pipe_max_size()
        && want as u64 > max
    {
        return Err(format!(
            "pipe_size {} is above the system maximum {} (sysctl fs.pipe-max-size)",
            fmt_size(want as u64),
            fmt_size(max)
        ));
    }
    Ok(())
}

/// zero_copy and reader=splice need the kernel's splice family.
fn check_zero_copy(p: &Params) -> Result<(), String> {
    if p.bool("zero_copy") {
        unavailable("zero_copy=true", Feature::Vmsplice)?;
    }
    if p.str("reader") == "splice" {
        unavailable("reader=splice", Feature::Splice)?;
    }
    Ok(())
}

fn check_total(p: &Params, unit_param: &str) -> Result<(), String> {
    if let Some(t) = p.opt_int("total") {
        let unit = p.int(unit_param);
        if t < unit {
            return Err(format!(
                "total {} is smaller than {unit_param} {}",
                fmt_size(t as u64),
                fmt_size(unit as u64)
            ));
        }
    }
    Ok(())
}

/// A pipe, resized (F_SETPIPE_SZ) when `size` is given; returns the ends
/// and the size the kernel granted (F_GETPIPE_SZ), where the OS says.
pub fn sized_pipe(size: Option<i64>) -> anyhow::Result<(OwnedFd, OwnedFd, Option<usize>)> {
    let (r, w) = pipe_cloexec().context("pipe")?;
    if let Some(s) = size {
        crate::system::set_pipe_size(w.as_raw_fd(), s as usize)
            .with_context(|| format!("F_SETPIPE_SZ {}", fmt_size(s as u64)))?;
    }
    let granted = match crate::system::pipe_size(w.as_raw_fd()) {
        Ok(n) => Some(n),
        Err(_) if crate::system::unavailable(Feature::PipeResize).is_some() => None,
        Err(e) => return Err(e).context("F_GETPIPE_SZ"),
    };
    Ok((r, w, granted))
}

fn granted_note(p: &Params, granted: Option<usize>) -> (String, String) {
    let v = match (p.opt_int("pipe_size"), granted) {
        (Some(want), Some(g)) => format!("{g} (requested {})", fmt_size(want as u64)),
        (_, Some(g)) => format!("{g} (kernel default)"),
        (_, None) => "kernel default (this OS does not report it)".into(),
    };
    ("pipe size".into(), v)
}

fn flow_modes(p: &Params) -> (WriteMode, ReadMode) {
    let w = if p.bool("zero_copy") {
        WriteMode::Vmsplice
    } else {
        WriteMode::Write
    };
    let r = if p.str("reader") == "splice" {
        ReadMode::SpliceNull
    } else {
        ReadMode::Read
    };
    (w, r)
}

pub struct PipeBw;

const PIPE_BW_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "chunk",
        ty: SIZE,
        default: Some("64k"),
        help: "bytes per write and per read",
    },
    PIPE_SIZE,
    ZERO_COPY,
    READER,
    TOTAL,
    placement_param("cross"),
];

/// Nanoseconds per switch between two processes.
static SWITCH: super::Metrics =
    super::Metrics::new(|| vec![Metric::new("switch", "ns", Direction::Lower)]);

micro! {
    PipeBw, "pipe-bw",
    "lmbench bw_pipe: a writer process write()s `chunk`-byte pieces into a pipe and a reader process read()s them; the kernel copies each piece into the pipe's ring of pages and out again (pipe_write/pipe_read), waking the other side whenever the ring fills or drains, so pipe_size sets how often that happens. zero_copy makes the writer vmsplice() its pages into the ring with SPLICE_F_GIFT (no copy in); reader=splice moves them to /dev/null (no copy out). Bytes/s per sample. Default placement cross: writer and reader on two different allowed CPUs (the SMP rate); same gives the UP case where every wake-up is a context switch. Counters are per operation: one `chunk`-byte write",
    params = PIPE_BW_PARAMS,
    metrics = super::BYTES_PER_S;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_pipe_size(p)?;
        check_zero_copy(p)?;
        check_total(p, "chunk")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let chunk = p.int("chunk") as usize;
        let (write_mode, read_mode) = flow_modes(p);
        let (r, w, granted) = sized_pipe(p.opt_int("pipe_size"))?;
        let spec = FlowSpec {
            write_size: chunk,
            read_size: chunk,
            write_mode,
            read_mode,
            total: p.opt_int("total").map(|t| t as u64),
            placement: p.str("placement").to_string(),
            sample_time: s.sample_time,
        };
        let mut flow = Flow::start(spec, vec![(w, r)])?;
        flow.extra_notes.push(granted_note(p, granted));
        Ok(Box::new(flow))
    }
}

pub struct Pipeflex;

const PIPEFLEX_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "write_size",
        ty: SIZE,
        default: Some("512"),
        help: "bytes per write (the pipe patches report: 512)",
    },
    ParamDef {
        name: "read_size",
        ty: SIZE,
        default: Some("4k"),
        help: "bytes per read (the pipe patches report swept 2k..128k)",
    },
    ParamDef {
        name: "copies",
        ty: ParamType::Int { min: 1, max: 64 },
        default: Some("1"),
        help: "independent writer/reader pairs, each with its own pipe",
    },
    PIPE_SIZE,
    ZERO_COPY,
    READER,
    TOTAL,
    placement_param("cross"),
];

micro! {
    Pipeflex, "pipeflex",
    "pipeflex as the pipe patches report ran it: `copies` writer/reader pairs, each writer write()s `write_size` pieces (small ones are merged into the pipe's last page) and each reader read()s up to `read_size` at a time, so the number of wake-ups per byte depends on both sizes and the pipe size; zero_copy vmsplice()s every piece as its own pipe buffer (a 512-byte piece then takes a whole slot). Bytes/s summed over pairs. Default placement cross: writer and reader of a pair on different allowed CPUs (pairs round-robin over them). Counters are per operation: one `write_size`-byte write of any pair",
    params = PIPEFLEX_PARAMS,
    metrics = super::BYTES_PER_S;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_pipe_size(p)?;
        check_zero_copy(p)?;
        check_total(p, "write_size")
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let (write_mode, read_mode) = flow_modes(p);
        let mut channels = Vec::new();
        let mut granted = None;
        for _ in 0..p.int("copies") {
            let (r, w, g) = sized_pipe(p.opt_int("pipe_size"))?;
            granted = g;
            channels.push((w, r));
        }
        let spec = FlowSpec {
            write_size: p.int("write_size") as usize,
            read_size: p.int("read_size") as usize,
            write_mode,
            read_mode,
            total: p.opt_int("total").map(|t| t as u64),
            placement: p.str("placement").to_string(),
            sample_time: s.sample_time,
        };
        let mut flow = Flow::start(spec, channels)?;
        flow.extra_notes.push(granted_note(p, granted));
        Ok(Box::new(flow))
    }
}

const LAT_SIZE: ParamDef = ParamDef {
    name: "size",
    ty: ParamType::Size {
        min: 1,
        max: 1 << 20,
    },
    default: Some("1"),
    help: "bytes per message",
};

/// Two pipes between kbench and a child; `divisor` 1 = per round trip.
fn pipe_pingpong(p: &Params, s: &RunSettings, divisor: f64) -> anyhow::Result<Box<dyn Instance>> {
    let (r1, w1, g) = sized_pipe(p.opt_int("pipe_size"))?; // ping -> pong
    let (r2, w2, _) = sized_pipe(p.opt_int("pipe_size"))?; // pong -> ping
    let me = Ends {
        wr: w1.as_raw_fd(),
        rd: r2.as_raw_fd(),
        owned: vec![w1, r2],
    };
    let child = Ends {
        wr: w2.as_raw_fd(),
        rd: r1.as_raw_fd(),
        owned: vec![w2, r1],
    };
    let pp = PingPong::start(
        p.str("placement"),
        p.int("size") as usize,
        me,
        child,
        true,
        divisor,
        s.sample_time,
    )?;
    Ok(Box::new(super::common::WithNotes {
        inner: Box::new(pp),
        notes: vec![granted_note(p, g)],
        keep: None,
    }))
}

pub struct PipeLat;

const PIPE_LAT_PARAMS: &[ParamDef] = &[LAT_SIZE, PIPE_SIZE, placement_param("cross")];

micro! {
    PipeLat, "pipe-lat",
    "lmbench lat_pipe / perf bench sched pipe: kbench write()s a message into one pipe, a child read()s it and write()s it back through a second pipe; each half wakes the blocked reader (try_to_wake_up), so a round trip is two wake-ups and two switches to the woken task. ns per round trip. Default placement cross (kbench and the child on two different allowed CPUs: each wake-up is an IPI to a possibly idle CPU); same puts both on one CPU (pure context switches, see ctx-switch)",
    params = PIPE_LAT_PARAMS,
    metrics = super::ROUND_TRIP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_pipe_size(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        pipe_pingpong(p, s, 1.0)
    }
}

pub struct CtxSwitch;

const CTX_PARAMS: &[ParamDef] = &[LAT_SIZE, PIPE_SIZE, placement_param("same")];

micro! {
    CtxSwitch, "ctx-switch",
    "pipe-lat with both processes on one CPU (default placement same): every message blocks the sender in pipe_read and switches to the other process (schedule, switch_mm, and with PTI a CR3 write), so the result is half a round trip, ns per context switch including one pipe write and read (lmbench lat_ctx with 2 processes and no working set, overhead not subtracted)",
    params = CTX_PARAMS,
    metrics = SWITCH;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_pipe_size(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        pipe_pingpong(p, s, 2.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{least, note, params, run, serial, two_cpus};

    /// The default (writer and reader on two CPUs) where two are usable.
    fn placement() -> &'static str {
        if two_cpus() { "cross" } else { "same" }
    }
    use super::*;
    use crate::bench::Bench;

    #[test]
    fn pipe_bw_moves_data_and_reports_the_granted_size() {
        let _g = serial();
        for size in ["4k", "32k"] {
            let (v, inst) = run(
                &PipeBw,
                &[
                    ("pipe_size", size),
                    ("chunk", "8k"),
                    ("placement", placement()),
                ],
                2,
            );
            assert!(v.iter().all(|&x| x > 1e6 && x < 1e12), "{v:?}");
            let want = crate::units::parse_size(size).unwrap();
            assert_eq!(
                note(&*inst, "pipe size"),
                format!("{want} (requested {size})")
            );
            assert!(inst.placement().unwrap().contains("writer"));
        }
    }

    #[test]
    fn zero_copy_takes_the_vmsplice_path() {
        let _g = serial();
        let (v, inst) = run(
            &PipeBw,
            &[
                ("zero_copy", "true"),
                ("reader", "splice"),
                ("placement", placement()),
            ],
            2,
        );
        assert!(v.iter().all(|&x| x > 1e6), "{v:?}");
        let w = note(&*inst, "writer");
        // "vmsplice(2) SPLICE_F_GIFT, N calls moved B of B bytes"
        let words: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words[0], "vmsplice(2)", "{w}");
        let moved: u64 = words[5].parse().unwrap();
        let all: u64 = words[7].parse().unwrap();
        assert!(moved > 0 && moved == all, "{w}");
        assert!(note(&*inst, "reader").starts_with("splice(2)"));
    }

    #[test]
    fn vmsplice_maps_the_writers_pages_instead_of_copying() {
        // The kernel's zero-copy path, checked directly: after vmsplice the
        // pipe references the writer's page, so a later store to the page
        // is what the reader sees; write(2) would have copied the old bytes.
        let ps = super::super::common::page_size();
        let (r, w, _) = sized_pipe(None).unwrap();
        let mut buf = super::super::common::PageBuf::new(ps, b'A').unwrap();
        let iov = libc::iovec {
            iov_base: buf.as_ptr().cast(),
            iov_len: ps,
        };
        // SAFETY: iov describes the live mapping.
        let n = unsafe { crate::system::vmsplice_gift(w.as_raw_fd(), &iov) };
        assert_eq!(n, ps as isize);
        buf.as_mut_slice().fill(b'B');
        let mut out = vec![0u8; ps];
        assert!(super::super::common::read_exact_raw(
            r.as_raw_fd(),
            &mut out
        ));
        assert!(out.iter().all(|&b| b == b'B'), "vmsplice copied the page");
    }

    #[test]
    fn pipeflex_with_two_pairs() {
        let _g = serial();
        let (v, inst) = run(
            &Pipeflex,
            &[("copies", "2"), ("read_size", "16k"), ("placement", "none")],
            2,
        );
        assert!(v.iter().all(|&x| x > 1e6 && x < 1e12), "{v:?}");
        let pl = inst.placement().unwrap();
        assert!(pl.contains("writer 2") && pl.contains("unpinned"), "{pl}");
        assert_eq!(pl.matches("(last on cpu ").count(), 4, "{pl}");
    }

    #[test]
    fn pipe_lat_same_and_cross() {
        let _g = serial();
        let (same, inst) = run(&PipeLat, &[("placement", "same")], 3);
        let same = least(&same);
        assert!(same > 200.0 && same < 1e7, "same {same} ns");
        let pl = inst.placement().unwrap();
        let cpus: Vec<&str> = pl.matches("cpu ").collect();
        assert_eq!(cpus.len(), 2, "{pl}");
        if two_cpus() {
            let (cross, inst) = run(&PipeLat, &[("placement", "cross")], 3);
            let cross = least(&cross);
            assert!(cross > 200.0 && cross < 1e7, "cross {cross} ns");
            // A wake-up on another CPU costs an IPI (and here a vCPU wake);
            // switching on the same CPU does not.
            assert!(cross > same, "cross {cross} ns <= same {same} ns");
            // The first two CPUs this test was given, which need not be
            // CPUs 0 and 1 (taskset, a cpuset).
            let pl = inst.placement().unwrap();
            let given = crate::system::get_affinity().unwrap().0;
            let mut on: Vec<usize> = pl
                .split(", ")
                .filter_map(|p| p.rsplit_once("cpu ")?.1.parse().ok())
                .collect();
            on.sort_unstable();
            assert_eq!(on, given[..2], "given {given:?}: {pl}");
        }
        let (sw, _) = run(&CtxSwitch, &[], 3);
        let sw = least(&sw);
        assert!(
            sw > 100.0 && sw < same,
            "switch {sw} ns, round trip {same} ns"
        );
    }

    #[test]
    fn invalid_params_are_refused() {
        let e = params(&PipeBw, &[("chunk", "0")]).unwrap_err();
        assert!(e.contains("chunk") && e.contains("out of range"), "{e}");
        if let Some(max) = pipe_max_size() {
            let too_big = fmt_size(max * 2);
            let e = params(&PipeBw, &[("pipe_size", &too_big)]).unwrap_err();
            assert!(e.contains("above the system maximum"), "{e}");
        }
        let e = params(&PipeBw, &[("zero_copy", "maybe")]).unwrap_err();
        assert!(e.contains("zero_copy"), "{e}");
        let e = params(&Pipeflex, &[("write_size", "64k"), ("total", "4k")]).unwrap_err();
        assert!(e.contains("total"), "{e}");
        let e = params(&PipeLat, &[("placement", "sideways")]).unwrap_err();
        assert!(e.contains("placement"), "{e}");
    }

    #[test]
    fn sweep_sizes_of_seed_001_parse() {
        for s in [
            "2k", "4k", "6k", "8k", "12k", "16k", "24k", "32k", "64k", "128k",
        ] {
            params(&PipeBw, &[("chunk", s)]).unwrap();
            params(&Pipeflex, &[("read_size", s)]).unwrap();
        }
    }

    #[test]
    fn cross_with_one_allowed_cpu_is_a_clear_error() {
        let _g = serial();
        let home = crate::system::get_affinity().unwrap();
        crate::system::set_affinity(&crate::units::CpuSet(vec![home.0[0]])).unwrap();
        let p = params(&PipeBw, &[]).unwrap();
        let r = PipeBw.instantiate(
            &p,
            &RunSettings {
                sample_time: 0.02,
                process: None,
            },
        );
        crate::system::set_affinity(&home).unwrap();
        let err = r.err().expect("cross on one CPU must fail");
        assert_eq!(crate::error::exit_code(&err), 2, "bad input");
        let e = format!("{err:#}");
        assert!(e.contains("placement=cross needs at least 2 CPUs"), "{e}");
    }
}
