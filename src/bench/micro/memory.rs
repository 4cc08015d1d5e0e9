//! Memory-management benchmarks: mmap/munmap of a large region, page faults
//! (anonymous and file-backed), brk, and memcpy bandwidth as the ceiling
//! every copying benchmark runs into.

use anyhow::Context;
use std::hint::black_box;
use std::os::fd::AsRawFd;

use super::common::{PageBuf, TempFile, WithNotes, calibrate_amount, fs_type, page_size};
use super::micro;
use super::{CPU_PARAM, LoopInstance, now_ns};
use crate::bench::{
    Direction, Instance, Measure, Metric, ParamDef, ParamType, Params, RunSettings,
};

fn cpu_of(p: &Params) -> Option<usize> {
    p.opt_int("cpu").map(|c| c as usize)
}

const DIR: ParamDef = ParamDef {
    name: "dir",
    ty: ParamType::Str,
    default: None,
    help: "directory of the temporary file (absent: $TMPDIR or /tmp); its file system is in the notes",
};

/// An anonymous private mapping, or MAP_FAILED.
#[inline(always)]
fn anon_map(size: usize) -> *mut u8 {
    crate::system::mmap_anon(size, false).unwrap_or(libc::MAP_FAILED.cast())
}

/// Touch one byte per page: a write (allocate, or copy-on-write) or a read.
#[inline(always)]
fn touch(p: *mut u8, size: usize, step: usize, write: bool) {
    let mut off = 0;
    while off < size {
        // SAFETY: p..p+size is mapped readable and writable.
        unsafe {
            if write {
                std::ptr::write_volatile(p.add(off), 1);
            } else {
                black_box(std::ptr::read_volatile(p.add(off)));
            }
        }
        off += step;
    }
}

pub struct MmapMunmap;
const MMAP_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 1,
            max: 1 << 40,
        },
        default: Some("128m"),
        help: "bytes mapped (the will-it-scale report (FreeBSD and Processor Trends): 128 MiB)",
    },
    ParamDef {
        name: "touch",
        ty: ParamType::Bool,
        default: Some("false"),
        help: "write one byte per page before unmapping (page faults and freeing included)",
    },
    CPU_PARAM,
];

/// Nanoseconds per page touched.
static NS_PER_PAGE: super::Metrics =
    super::Metrics::new(|| vec![Metric::new("ns/page", "ns", Direction::Lower)]);

micro! {
    MmapMunmap, "mmap-munmap",
    "mmap() of `size` bytes of anonymous private memory, then munmap(): without touch the kernel only creates and destroys a VMA (mmap_lock held for write twice); with touch every page is also faulted in (allocated and zeroed, huge pages if THP says so) and freed by munmap's page-table teardown. ns per mmap+munmap",
    params = MMAP_PARAMS,
    metrics = super::NS_PER_OP;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        let write = p.bool("touch");
        let step = page_size();
        let probe = anon_map(size);
        if probe.cast() == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap");
        }
        // SAFETY: unmapping the probe just made.
        unsafe { libc::munmap(probe.cast(), size) };
        let op = move || {
            let m = anon_map(size);
            if m.cast() != libc::MAP_FAILED {
                if write {
                    touch(m, size, step, true);
                }
                // SAFETY: unmapping the region just mapped.
                unsafe { libc::munmap(m.cast(), size) };
            }
        };
        Ok(Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)))
    }
}

pub struct PageFault;
const FAULT_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "type",
        ty: ParamType::Choice(&["anon", "file"]),
        default: Some("anon"),
        help: "anonymous memory, or a MAP_PRIVATE mapping of a cached file",
    },
    ParamDef {
        name: "access",
        ty: ParamType::Choice(&["write", "read"]),
        default: Some("write"),
        help: "store (allocate or copy-on-write) or load (map the zero page or the cached page)",
    },
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 4096,
            max: 1 << 36,
        },
        default: Some("16m"),
        help: "bytes mapped and touched per round",
    },
    ParamDef {
        name: "thp",
        ty: ParamType::Bool,
        default: Some("false"),
        help: "allow transparent huge pages (default: MADV_NOHUGEPAGE, one fault per 4k page)",
    },
    DIR,
    CPU_PARAM,
];

/// Page-fault instance: each round maps a region (untimed), touches every
/// page (timed), unmaps it (untimed).
struct FaultInstance {
    size: usize,
    write: bool,
    file: Option<(std::fs::File, TempFile)>,
    thp: bool,
    cpu: Option<usize>,
    target_ns: u64,
    rounds: Option<u64>,
    faults_per_page: Option<f64>,
    fs: Option<String>,
}

fn minflt() -> i64 {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: ru is an rusage we own.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    ru.ru_minflt
}

impl FaultInstance {
    /// Run `rounds` rounds; total ns spent touching.
    fn rounds(&mut self, rounds: u64) -> anyhow::Result<u64> {
        let step = page_size();
        let mut total = 0u64;
        for _ in 0..rounds {
            // SAFETY: mapping either anonymous memory or our own file.
            let m: *mut u8 = unsafe {
                match &self.file {
                    None => anon_map(self.size),
                    Some((f, _)) => libc::mmap(
                        std::ptr::null_mut(),
                        self.size,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE,
                        f.as_raw_fd(),
                        0,
                    )
                    .cast(),
                }
            };
            if m.cast() == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error()).context("mmap");
            }
            if !self.thp {
                // Where the OS cannot, the faults taken per page (notes)
                // show what happened.
                crate::system::no_huge_pages(m, self.size);
            }
            let t0 = now_ns();
            touch(m, self.size, step, self.write);
            total += now_ns() - t0;
            // SAFETY: unmapping it.
            unsafe { libc::munmap(m.cast(), self.size) };
        }
        Ok(total.max(1))
    }
}

impl Instance for FaultInstance {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        if let Some(c) = self.cpu {
            crate::system::pin_current_thread(c)
                .with_context(|| format!("cannot pin to CPU {c}"))?;
        }
        let rounds = match self.rounds {
            Some(r) => r,
            None => {
                let t = self.target_ns;
                let r = calibrate_amount(t, 1, 1, |r| self.rounds(r))?;
                self.rounds = Some(r);
                r
            }
        };
        let f0 = minflt();
        let ns = self.rounds(rounds)?;
        let faults = minflt() - f0;
        let pages = rounds as f64 * self.size.div_ceil(page_size()) as f64;
        self.faults_per_page = Some(faults as f64 / pages);
        out.push(Measure {
            metric: 0,
            value: ns as f64 / pages,
        });
        Ok(())
    }

    fn operations(&self) -> Option<f64> {
        let pages = self.size.div_ceil(page_size()) as f64;
        self.rounds.map(|r| r as f64 * pages)
    }

    fn placement(&self) -> Option<String> {
        self.cpu.map(|c| format!("cpu {c}"))
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut n = Vec::new();
        if let Some(f) = self.faults_per_page {
            n.push(("faults per page".into(), format!("{f:.4}")));
        }
        if let Some(r) = self.rounds {
            n.push(("rounds per sample".into(), r.to_string()));
        }
        if let Some(fs) = &self.fs {
            n.push(("file".into(), fs.clone()));
        }
        n
    }
}

micro! {
    PageFault, "page-fault",
    "Touch one byte per page of a fresh mapping (mapping and unmapping untimed): anon+write allocates and zeroes a page per fault (do_anonymous_page), anon+read maps the shared zero page; file+read maps the cached page-cache pages (do_read_fault, with fault-around mapping up to 16 pages per fault), file+write copies the cached page (do_cow_fault). Huge pages are off unless thp=true. ns per page touched; the faults actually taken per page (getrusage minflt) are in the notes. Single party",
    params = FAULT_PARAMS,
    metrics = NS_PER_PAGE;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        let (file, fs) = if p.str("type") == "file" {
            let t = TempFile::create(p.opt_str("dir"), size as u64, 0o600)?;
            let f = std::fs::File::open(&t.path)?;
            let fs = format!("{} on {}", t.path.display(), fs_type(&t.path));
            (Some((f, t)), Some(fs))
        } else {
            (None, None)
        };
        Ok(Box::new(FaultInstance {
            size,
            write: p.str("access") == "write",
            file,
            thp: p.bool("thp"),
            cpu: cpu_of(p),
            target_ns: (s.sample_time * 1e9) as u64,
            rounds: None,
            faults_per_page: None,
            fs,
        }))
    }
}

pub struct Brk;
const BRK_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 1,
            max: 1 << 30,
        },
        default: Some("4k"),
        help: "bytes the break grows by before it is moved back",
    },
    ParamDef {
        name: "touch",
        ty: ParamType::Bool,
        default: Some("false"),
        help: "write one byte per page of the grown heap (fault and free included)",
    },
    CPU_PARAM,
];

micro! {
    Brk, "brk",
    "will-it-scale brk1: raw brk() up by `size` and back down: the kernel grows the heap VMA (vma_expand under mmap_lock for write) and shrinks it again, unmapping whatever was touched. ns per grow+shrink pair. Single party; kbench is single-threaded while sampling, so malloc never sees the break move",
    params = BRK_PARAMS,
    metrics = super::NS_PER_OP;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        let write = p.bool("touch");
        let step = page_size();
        let op = move || {
            // SAFETY: brk(0) reads the break; moving it up and back to the
            // same value leaves malloc's view of the heap unchanged.
            unsafe {
                let cur = crate::system::raw_brk(0);
                let up = crate::system::raw_brk(cur + size);
                if up == cur + size && write {
                    touch(cur as *mut u8, size, step, true);
                }
                crate::system::raw_brk(cur);
            }
        };
        single_threaded()?;
        Ok(Box::new(BrkInstance(LoopInstance::new(
            op,
            cpu_of(p),
            s.sample_time,
        ))))
    }
}

/// Threads of this process.
fn threads() -> Option<usize> {
    crate::system::thread_count()
}

/// brk moves the heap malloc uses: another thread allocating meanwhile
/// would corrupt it, so the benchmark refuses to run beside one.
fn single_threaded() -> anyhow::Result<()> {
    match threads() {
        Some(1) | None => Ok(()),
        Some(n) => anyhow::bail!("brk needs kbench to be single-threaded, but it has {n} threads"),
    }
}

struct BrkInstance<I: Instance>(I);

impl<I: Instance> Instance for BrkInstance<I> {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        single_threaded()?;
        self.0.sample(out)
    }
    fn operations(&self) -> Option<f64> {
        self.0.operations()
    }
    fn placement(&self) -> Option<String> {
        self.0.placement()
    }
    fn notes(&self) -> Vec<(String, String)> {
        self.0.notes()
    }
}

pub struct MemcpyBw;
const MEMCPY_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 1,
            max: 1 << 34,
        },
        default: Some("64m"),
        help: "bytes per copy (larger than the caches: memory bandwidth; smaller: cache bandwidth)",
    },
    CPU_PARAM,
];

micro! {
    MemcpyBw, "memcpy-bw",
    "glibc memcpy() of `size` bytes between two pre-faulted buffers, no kernel involved: the ceiling for every benchmark that copies (a pipe or socket transfer copies each byte at least twice). Bytes copied per second (read and write traffic is twice that). Single party",
    params = MEMCPY_PARAMS,
    metrics = super::BYTES_PER_S;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        // Not inherited by forks: cells are prepared together, and these
        // buffers would otherwise make every fork-exit cell slower.
        let src = PageBuf::new(size, 0x5a)?.dont_fork()?;
        let dst = PageBuf::new(size, 0)?.dont_fork()?;
        let op = move || {
            // SAFETY: two distinct mappings of `size` bytes each.
            unsafe { libc::memcpy(dst.as_ptr().cast(), src.as_ptr().cast(), size) };
            black_box(dst.as_ptr());
        };
        Ok(Box::new(WithNotes {
            inner: Box::new(LoopInstance::rate(
                op,
                size as f64,
                cpu_of(p),
                s.sample_time,
            )),
            notes: Vec::new(),
            keep: None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{median, note, run, serial};
    use super::*;
    use crate::bench::Bench;

    #[test]
    fn mmap_munmap_untouched_is_cheap_touched_is_not() {
        let _g = serial();
        let (bare, _) = run(&MmapMunmap, &[], 2);
        let (touched, _) = run(&MmapMunmap, &[("size", "8m"), ("touch", "true")], 2);
        let (bare, touched) = (median(&bare), median(&touched));
        assert!(bare > 100.0 && bare < 1e6, "bare {bare}");
        assert!(touched > bare, "touched {touched} bare {bare}");
    }

    #[test]
    fn page_faults_are_counted() {
        let _g = serial();
        let (anon, inst) = run(&PageFault, &[("size", "4m")], 2);
        let anon = median(&anon);
        assert!(anon > 50.0 && anon < 1e6, "anon {anon} ns/page");
        let f: f64 = note(&*inst, "faults per page").parse().unwrap();
        assert!((0.9..1.1).contains(&f), "anon write faults per page {f}");
        let (file, inst) = run(
            &PageFault,
            &[("size", "4m"), ("type", "file"), ("access", "read")],
            2,
        );
        let file = median(&file);
        assert!(file > 1.0 && file < 1e6, "file {file} ns/page");
        let f: f64 = note(&*inst, "faults per page").parse().unwrap();
        assert!(f > 0.0 && f <= 1.1, "file read faults per page {f}");
        assert!(note(&*inst, "file").contains(" on "));
    }

    #[test]
    fn brk_and_memcpy_are_sane() {
        let _g = serial();
        // brk moves the heap that malloc uses: run it in a child so the
        // test harness's other threads cannot allocate meanwhile.
        let p = crate::bench::Params::resolve(&Brk, &[]).unwrap();
        let settings = RunSettings {
            sample_time: 0.02,
            process: None,
        };
        if threads().unwrap_or(1) > 1 {
            let e = Brk.instantiate(&p, &settings).err().unwrap();
            assert!(e.to_string().contains("single-threaded"), "{e}");
        }
        let (r, w) = super::super::common::pipe_cloexec().unwrap();
        // SAFETY: the child (single-threaded, as kbench is) runs the
        // benchmark, sends one value and _exits; glibc's malloc is usable
        // after fork.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let mut out = Vec::with_capacity(4);
            let ok = Brk.instantiate(&p, &settings).is_ok_and(|mut inst| {
                inst.sample(&mut out).is_ok() && inst.sample(&mut out).is_ok()
            });
            let v = if ok { out[1].value.to_bits() } else { 0 };
            super::super::common::send_words(w.as_raw_fd(), &[v]);
            // SAFETY: leaving the child.
            unsafe { libc::_exit(0) };
        }
        drop(w);
        let mut m = [0u64; 1];
        assert!(super::super::common::recv_words(r.as_raw_fd(), &mut m));
        // SAFETY: reaping the child.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
        let brk = f64::from_bits(m[0]);
        assert!(brk > 50.0 && brk < 1e6, "brk {brk} ns");
        let (bw, _) = run(&MemcpyBw, &[("size", "8m")], 2);
        let bw = median(&bw);
        assert!(bw > 1e8 && bw < 1e12, "memcpy {bw} B/s");
    }
}
