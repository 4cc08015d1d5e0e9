//! Memory-management testcases: brk, mmap/munmap, page faults, malloc and
//! TLB flushes, after the will-it-scale files of the same names. Sizes are
//! a `size` parameter whose default is the original's (128 MB mostly).
//! In threads mode all tasks share one address space, so these tests
//! measure mmap_lock and TLB shoot-down scaling; in processes mode each
//! task has its own mm.

use std::convert::Infallible;

use super::files::{anon_file, page_size};
use super::loops;
use super::{Body, Task, check, params_with, size_param, testcase};

const SIZE_128M: crate::bench::ParamDef = size_param("128m", "bytes mapped per iteration");

fn body(f: impl Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(f)
}

fn map(len: usize, flags: libc::c_int, fd: libc::c_int) -> anyhow::Result<*mut u8> {
    // SAFETY: a fresh mapping, checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        anyhow::bail!("mmap of {len} bytes: {}", std::io::Error::last_os_error());
    }
    Ok(p as *mut u8)
}

/// A file of `len` bytes (a hole) in the cell directory, already unlinked.
fn sized_file(t: &Task, len: usize) -> anyhow::Result<libc::c_int> {
    let fd = anon_file(t, "map")?;
    // SAFETY: our fd.
    check(
        // SAFETY: our fd; ftruncate touches no memory.
        unsafe { libc::ftruncate(fd, len as libc::off_t) } as i64,
        "ftruncate",
    )?;
    Ok(fd)
}

/// Map `len` bytes, write one byte per page (one operation each), unmap.
fn fault_loop(
    t: &Task,
    len: usize,
    flags: libc::c_int,
    fd: libc::c_int,
) -> anyhow::Result<Infallible> {
    let pg = page_size();
    loop {
        let p = map(len, flags, fd)?;
        let mut off = 0;
        while off < len {
            // SAFETY: inside the mapping.
            unsafe { std::ptr::write_volatile(p.add(off), 0) };
            t.counter.add(1);
            off += pg;
        }
        // SAFETY: unmapping our mapping.
        unsafe { libc::munmap(p as *mut libc::c_void, len) };
    }
}

testcase!(
    /// will-it-scale brk1: move the break up one page and back; counts 2
    /// per round trip as the original does. The break is never moved
    /// below where the task found it, so the allocator's heap is safe.
    /// The loop is C (`loops.c`), as will-it-scale's compiler builds it.
    Brk1,
    "brk1",
    "brk() up and down by one page: mmap_lock write side and VMA adjustment",
    // SAFETY: the task's counter, valid while the task runs.
    prepare = |_| Ok(loops::body("brk", |ops| unsafe { loops::kbench_brk_here(ops) }))
);

testcase!(
    /// will-it-scale page_fault1: anonymous private mapping, one write per
    /// page, each a page fault allocating and zeroing a page.
    PageFault1,
    "page_fault1",
    "anonymous memory page faults: mmap, write one byte per page, munmap; counts pages",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| fault_loop(t, len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)))
    }
);

testcase!(
    /// will-it-scale page_fault2: private mapping of a per-task file (a
    /// hole): each write faults and copies a page cache page.
    PageFault2,
    "page_fault2",
    "page faults on a private mapping of a separate file per task (copy-on-write of page cache pages); counts pages",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| {
            let fd = sized_file(t, len)?;
            fault_loop(t, len, libc::MAP_PRIVATE, fd)
        }))
    }
);

testcase!(
    /// will-it-scale page_fault3: shared mapping of a per-task file: each
    /// write faults a page cache page in and dirties it.
    PageFault3,
    "page_fault3",
    "page faults on a shared mapping of a separate file per task (page cache, dirtying); counts pages",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| {
            let fd = sized_file(t, len)?;
            fault_loop(t, len, libc::MAP_SHARED, fd)
        }))
    }
);

testcase!(
    /// will-it-scale mmap1: map and unmap 128 MB of anonymous memory,
    /// never touched (VMA work only).
    Mmap1,
    "mmap1",
    "mmap()+munmap() of untouched anonymous memory (128 MB): VMA creation and removal under mmap_lock",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| loop {
            let p = map(len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1)?;
            // SAFETY: unmapping our mapping.
            unsafe { libc::munmap(p as *mut libc::c_void, len) };
            t.counter.add(1);
        }))
    }
);

testcase!(
    /// will-it-scale mmap2: as mmap1 with a private mapping of a per-task
    /// file.
    Mmap2,
    "mmap2",
    "mmap()+munmap() of a separate file per task (128 MB, untouched): file VMA and i_mmap lock",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| {
            let fd = sized_file(t, len)?;
            loop {
                let p = map(len, libc::MAP_PRIVATE, fd)?;
                // SAFETY: unmapping our mapping.
                unsafe { libc::munmap(p as *mut libc::c_void, len) };
                t.counter.add(1);
            }
        }))
    }
);

/// malloc+free of `len` bytes, the memory untouched, as in will-it-scale.
/// The loop is C (`loops.c`): malloc2's takes a few nanoseconds, and the
/// shape of the two calls alone moved it by 5% (rustc's calls through the
/// GOT against gcc's through the PLT).
fn malloc_loop(len: usize) -> Box<dyn Body> {
    // SAFETY: the task's counter, valid while the task runs.
    loops::body("malloc", move |ops| unsafe {
        loops::kbench_malloc_free(ops, len)
    })
}

testcase!(
    /// will-it-scale malloc1: glibc serves 128 MB from mmap (above its
    /// mmap threshold), so this is mmap+munmap through the allocator.
    Malloc1,
    "malloc1",
    "malloc()+free() of 128 MB: glibc maps and unmaps it each time",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(malloc_loop(len))
    }
);

testcase!(
    /// will-it-scale malloc2: 1 kB from the allocator's arenas; in threads
    /// mode, arena contention (no kernel involvement).
    Malloc2,
    "malloc2",
    "malloc()+free() of 1 kB: user-space allocator fast path (arena locks in threads mode)",
    prepare = |_| Ok(malloc_loop(1024))
);

/// Write a page, drop it with MADV_DONTNEED (zap + TLB flush), read it
/// back and check what the mapping must show; one operation per page.
fn tlb_loop(
    t: &Task,
    len: usize,
    flags: libc::c_int,
    fd: libc::c_int,
    expect: u8,
) -> anyhow::Result<Infallible> {
    let pg = page_size();
    loop {
        let p = map(len, flags, fd)?;
        let mut off = 0;
        while off < len {
            // SAFETY: inside the mapping; madvise on a page of it.
            unsafe {
                std::ptr::write_volatile(p.add(off), 1);
                libc::madvise(p.add(off) as *mut libc::c_void, pg, libc::MADV_DONTNEED);
                let v = std::ptr::read_volatile(p.add(off));
                if v != expect {
                    anyhow::bail!("page read back {v} after MADV_DONTNEED, expected {expect}");
                }
            }
            t.counter.add(1);
            off += pg;
        }
        // SAFETY: unmapping our mapping.
        unsafe { libc::munmap(p as *mut libc::c_void, len) };
    }
}

testcase!(
    /// will-it-scale tlb_flush1: private file mapping; after
    /// MADV_DONTNEED the page reads back as the file's (zero). In threads
    /// mode every zap flushes the TLBs of the other tasks' CPUs.
    TlbFlush1,
    "tlb_flush1",
    "write, MADV_DONTNEED, read back on a private mapping of a separate file: zap and TLB flush (IPIs in threads mode)",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| {
            let fd = sized_file(t, len)?;
            tlb_loop(t, len, libc::MAP_PRIVATE, fd, 0)
        }))
    }
);

testcase!(
    /// will-it-scale tlb_flush2: the same on 1 MB of anonymous memory.
    TlbFlush2,
    "tlb_flush2",
    "write, MADV_DONTNEED, read back on anonymous memory (1 MB): zap and TLB flush",
    params = params_with!(size_param("1m", "bytes mapped per iteration")),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| tlb_loop(t, len, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)))
    }
);

testcase!(
    /// will-it-scale tlb_flush3: shared file mapping; the write reaches
    /// the file, so the page reads back as 1 after the zap.
    TlbFlush3,
    "tlb_flush3",
    "write, MADV_DONTNEED, read back on a shared mapping of a separate file: zap, TLB flush, page cache refault",
    params = params_with!(SIZE_128M),
    prepare = |cx| {
        let len = cx.params.int("size") as usize;
        Ok(body(move |t| {
            let fd = sized_file(t, len)?;
            tlb_loop(t, len, libc::MAP_SHARED, fd, 1)
        }))
    }
);

testcase!(
    /// will-it-scale brk2: first grow the heap by one page (so the break
    /// sits above a heap VMA of the task's own), then move the break up
    /// one page and back; counts 2 per round trip as the original does.
    /// The loop is C (`loops.c`).
    Brk2,
    "brk2",
    "brk() up and down by one page above a page the task added first: expands and shrinks an existing heap VMA",
    // SAFETY: the task's counter, valid while the task runs.
    prepare = |_| Ok(loops::body("brk", |ops| unsafe { loops::kbench_brk_above_page(ops) }))
);
