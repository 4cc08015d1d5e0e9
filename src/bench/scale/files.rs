//! File and file-descriptor testcases after the will-it-scale files of the
//! same names: read/write/pread/pwrite/lseek on a separate file per task
//! versus one shared file, open/close, dup, unlink, fallocate, poll and
//! POSIX record locks.
//!
//! Files live in the cell's private directory instead of /tmp; "separate
//! file" tests create a file per task and unlink it at once (as the
//! originals do), "same file" tests create one file in `prepare`, which
//! each task opens. The directory is removed with the cell.

use std::convert::Infallible;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::{Body, Prep, Task, check, testcase};

const BUF: usize = 4096;
const MB: usize = 1 << 20;

/// The 4 kB user buffer of the read and write loops, cache-line aligned on
/// purpose. The kernel's copy to a destination that is not 64-byte aligned
/// costs ~13% more per 4 kB read on this project's Xeon guest (a C read
/// loop: 5.5-5.6 M reads/s at page offsets 0x0, 0x40, 0x80, ..., 4.8-5.0 M
/// at every other 16-byte offset), so a buffer left where the stack frame
/// happens to put it would make the result follow the compiler's frame
/// layout and the environment's size. will-it-scale's buffers are stack
/// arrays and fall where its frames put them (docs/accuracy.md).
#[repr(C, align(64))]
struct IoBuf([u8; BUF]);

impl IoBuf {
    fn new() -> IoBuf {
        IoBuf([0; BUF])
    }

    fn ptr(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr() as *mut libc::c_void
    }
}

pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

fn cpath(p: &Path) -> anyhow::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| anyhow::anyhow!("path contains NUL"))
}

fn open(p: &Path, flags: libc::c_int) -> anyhow::Result<libc::c_int> {
    let c = cpath(p)?;
    // SAFETY: a valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600) };
    if fd < 0 {
        anyhow::bail!("open {}: {}", p.display(), std::io::Error::last_os_error());
    }
    Ok(fd)
}

fn unlink(p: &Path) -> anyhow::Result<()> {
    let c = cpath(p)?;
    // SAFETY: a valid C string.
    check(unsafe { libc::unlink(c.as_ptr()) } as i64, "unlink")?;
    Ok(())
}

/// A new file private to this task, unlinked at once (an open fd only).
pub(super) fn anon_file(t: &Task, tag: &str) -> anyhow::Result<libc::c_int> {
    anon_file_in(t.dir, t, tag)
}

fn anon_file_in(dir: &Path, t: &Task, tag: &str) -> anyhow::Result<libc::c_int> {
    // The thread id makes helper files unique.
    let p = dir.join(format!("{tag}.{}.{}", t.nr, crate::system::thread_id()));
    let fd = open(&p, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
    unlink(&p)?;
    Ok(fd)
}

/// Write `len` zero bytes in writes of `chunk` bytes, as will-it-scale's C
/// file writes its file: the size of each write decides the page cache
/// folios the file gets (ext4 on Linux 6.18 gave a 1 MB write one folio of
/// 256 pages, 4 kB writes 256 folios of one page, read from
/// /proc/kpageflags), and the 4 kB reads of `read1` and `read2` through
/// one-page folios ran ~18% slower (docs/accuracy.md).
fn write_zeros(fd: libc::c_int, len: usize, chunk: usize) -> anyhow::Result<()> {
    let buf = vec![0u8; chunk.min(len).max(1)];
    let mut left = len;
    while left > 0 {
        let n = left.min(buf.len());
        // SAFETY: writing from our buffer of at least n bytes.
        let w = check(
            unsafe { libc::write(fd, buf.as_ptr() as *const libc::c_void, n) } as i64,
            "write",
        )?;
        left -= w as usize;
    }
    Ok(())
}

/// The shared file of "same file" tests, created by `prepare`, written in
/// one write as will-it-scale's testcases write theirs.
fn shared_file(cx: &Prep, len: usize) -> anyhow::Result<std::path::PathBuf> {
    shared_file_in_chunks(cx, len, len)
}

/// The shared file of a page per task (pread3, pwrite3, readseek3,
/// writeseek3), written a page at a time as will-it-scale's are.
fn page_per_task_file(cx: &Prep) -> anyhow::Result<std::path::PathBuf> {
    let pg = page_size();
    shared_file_in_chunks(cx, pg * cx.ntasks.max(1), pg)
}

fn shared_file_in_chunks(
    cx: &Prep,
    len: usize,
    chunk: usize,
) -> anyhow::Result<std::path::PathBuf> {
    let p = cx.dir.join("shared");
    let fd = open(&p, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)?;
    let r = write_zeros(fd, len, chunk);
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    r?;
    Ok(p)
}

fn body(f: impl Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(f)
}

/// read(4096) through a file of `len` bytes, rewinding at the end.
fn read_loop(t: &Task, fd: libc::c_int) -> anyhow::Result<Infallible> {
    let mut buf = IoBuf::new();
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(fd, buf.ptr(), BUF) };
        if check(n as i64, "read")? == 0 {
            // SAFETY: our fd.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale read1: 4 kB reads through a separate 1 MB file per task.
    Read1,
    "read1",
    "read() of 4 kB through a separate 1 MB file per task: page cache lookup and copy",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "read")?;
            write_zeros(fd, MB, MB)?;
            // SAFETY: our fd.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
            read_loop(t, fd)
        }))
    }
);

testcase!(
    /// will-it-scale read2: the same through one shared 1 MB file, each
    /// task with its own open file description.
    Read2,
    "read2",
    "read() of 4 kB through one 1 MB file shared by all tasks (own fd each): shared inode and page cache",
    prepare = |cx| {
        let p = shared_file(cx, MB)?;
        Ok(body(move |t| read_loop(t, open(&p, libc::O_RDONLY)?)))
    }
);

fn pread_loop(t: &Task, fd: libc::c_int, off: usize) -> anyhow::Result<Infallible> {
    let mut buf = IoBuf::new();
    loop {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::pread(fd, buf.ptr(), BUF, off as libc::off_t) };
        if n != BUF as isize {
            anyhow::bail!("pread returned {n}: {}", std::io::Error::last_os_error());
        }
        t.counter.add(1);
    }
}

fn pwrite_loop(t: &Task, fd: libc::c_int, off: usize) -> anyhow::Result<Infallible> {
    let mut buf = IoBuf::new();
    loop {
        // SAFETY: writing from a local buffer.
        let n = unsafe { libc::pwrite(fd, buf.ptr(), BUF, off as libc::off_t) };
        if n != BUF as isize {
            anyhow::bail!("pwrite returned {n}: {}", std::io::Error::last_os_error());
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale pread1: pread of the first 4 kB of a separate file.
    Pread1,
    "pread1",
    "pread() of 4 kB at offset 0 of a separate file per task",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "pread")?;
            write_zeros(fd, BUF, BUF)?;
            pread_loop(t, fd, 0)
        }))
    }
);
testcase!(
    /// will-it-scale pread2: every task preads the same 4 kB of one file.
    Pread2,
    "pread2",
    "pread() of the same 4 kB of one shared file by every task: one hot page cache page",
    prepare = |cx| {
        let p = shared_file(cx, BUF)?;
        Ok(body(move |t| pread_loop(t, open(&p, libc::O_RDONLY)?, 0)))
    }
);
testcase!(
    /// will-it-scale pread3: one shared file, each task its own page.
    Pread3,
    "pread3",
    "pread() of 4 kB of one shared file, each task at its own page offset",
    prepare = |cx| {
        let pg = page_size();
        let p = page_per_task_file(cx)?;
        Ok(body(move |t| pread_loop(t, open(&p, libc::O_RDONLY)?, pg * t.nr)))
    }
);
testcase!(
    /// will-it-scale pwrite1: pwrite of 4 kB at offset 0 of a separate file.
    Pwrite1,
    "pwrite1",
    "pwrite() of 4 kB at offset 0 of a separate file per task: page cache write, inode lock",
    prepare = |_| Ok(body(|t| pwrite_loop(t, anon_file(t, "pwrite")?, 0)))
);
testcase!(
    /// will-it-scale pwrite2: every task pwrites the same 4 kB of one file.
    Pwrite2,
    "pwrite2",
    "pwrite() of the same 4 kB of one shared file by every task: inode lock contention",
    prepare = |cx| {
        let p = shared_file(cx, BUF)?;
        Ok(body(move |t| pwrite_loop(t, open(&p, libc::O_RDWR)?, 0)))
    }
);
testcase!(
    /// will-it-scale pwrite3: one shared file, each task its own page.
    Pwrite3,
    "pwrite3",
    "pwrite() of 4 kB of one shared file, each task at its own page offset: same inode, separate pages",
    prepare = |cx| {
        let pg = page_size();
        let p = page_per_task_file(cx)?;
        Ok(body(move |t| pwrite_loop(t, open(&p, libc::O_RDWR)?, pg * t.nr)))
    }
);

testcase!(
    /// will-it-scale write1: sequential 4 kB writes to a separate file,
    /// rewinding every 1 MB.
    Write1,
    "write1",
    "write() of 4 kB, sequentially through 1 MB of a separate file per task",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "write")?;
            let mut buf = IoBuf::new();
            let mut size = 0usize;
            loop {
                // SAFETY: writing from a local buffer; our fd.
                let n = unsafe { libc::write(fd, buf.ptr(), BUF) };
                size += check(n as i64, "write")? as usize;
                if size >= MB {
                    size = 0;
                    // SAFETY: our fd; lseek touches no memory.
                    unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
                }
                t.counter.add(1);
            }
        }))
    }
);

fn lseek_loop(t: &Task, fd: libc::c_int) -> anyhow::Result<Infallible> {
    loop {
        // SAFETY: our fd.
        unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale lseek1: lseek to 0 on a separate file.
    Lseek1,
    "lseek1",
    "lseek(0, SEEK_SET) on a separate file per task: fd lookup, file position lock",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "lseek")?;
            write_zeros(fd, BUF, BUF)?;
            lseek_loop(t, fd)
        }))
    }
);
testcase!(
    /// will-it-scale lseek2: lseek on one shared file, own fd per task.
    Lseek2,
    "lseek2",
    "lseek(0, SEEK_SET) on one shared file (own fd each)",
    prepare = |cx| {
        let p = shared_file(cx, BUF)?;
        Ok(body(move |t| lseek_loop(t, open(&p, libc::O_RDWR)?)))
    }
);

fn writeseek_loop(t: &Task, fd: libc::c_int, off: usize) -> anyhow::Result<Infallible> {
    let mut buf = IoBuf::new();
    loop {
        // SAFETY: our fd and a local buffer.
        unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) };
        // SAFETY: buf holds BUF bytes.
        let n = unsafe { libc::write(fd, buf.ptr(), BUF) };
        if n != BUF as isize {
            anyhow::bail!("write returned {n}: {}", std::io::Error::last_os_error());
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale writeseek (named writeseek1 here, like its siblings):
    /// lseek to 0 and write 4 kB on a separate file.
    Writeseek1,
    "writeseek1",
    "lseek(0)+write() of 4 kB on a separate file per task",
    prepare = |_| Ok(body(|t| writeseek_loop(t, anon_file(t, "writeseek")?, 0)))
);
testcase!(
    /// will-it-scale writeseek2. Its description says "seek+read" but its
    /// loop writes; kbench follows the loop: lseek+write on one shared file.
    Writeseek2,
    "writeseek2",
    "lseek(0)+write() of 4 kB on one shared file (own fd each): inode lock contention",
    prepare = |cx| {
        let p = shared_file(cx, BUF)?;
        Ok(body(move |t| writeseek_loop(t, open(&p, libc::O_RDWR)?, 0)))
    }
);
testcase!(
    /// will-it-scale writeseek3: one shared file, each task its own page.
    Writeseek3,
    "writeseek3",
    "lseek+write() of 4 kB on one shared file, each task at its own page offset",
    prepare = |cx| {
        let pg = page_size();
        let p = page_per_task_file(cx)?;
        Ok(body(move |t| writeseek_loop(t, open(&p, libc::O_RDWR)?, pg * t.nr)))
    }
);

fn open_close_loop(t: &Task, p: &Path) -> anyhow::Result<Infallible> {
    let c = cpath(p)?;
    loop {
        // SAFETY: a valid C string; closing what we opened.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR) };
        if fd < 0 {
            anyhow::bail!("open {}: {}", p.display(), std::io::Error::last_os_error());
        }
        // SAFETY: closing the fd just opened.
        unsafe { libc::close(fd) };
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale open1: each task opens and closes its own file; all
    /// files in one directory.
    Open1,
    "open1",
    "open()+close() of a separate file per task, all in one directory: path walk, fd table, file allocation",
    prepare = |cx| {
        for nr in 0..cx.ntasks {
            let fd = open(&cx.dir.join(format!("open1.{nr}")), libc::O_RDWR | libc::O_CREAT)?;
            // SAFETY: our fd.
            unsafe { libc::close(fd) };
        }
        Ok(body(|t| open_close_loop(t, &t.dir.join(format!("open1.{}", t.nr)))))
    }
);
testcase!(
    /// will-it-scale open2: a separate file in a separate directory per task.
    Open2,
    "open2",
    "open()+close() of a separate file per task, each in its own directory",
    prepare = |_| {
        Ok(body(|t| {
            let d = t.dir.join(format!("open2.{}", t.nr));
            std::fs::create_dir(&d)?;
            let p = d.join("file");
            let fd = open(&p, libc::O_RDWR | libc::O_CREAT)?;
            // SAFETY: our fd.
            unsafe { libc::close(fd) };
            open_close_loop(t, &p)
        }))
    }
);
testcase!(
    /// will-it-scale open3: every task opens and closes the same file.
    Open3,
    "open3",
    "open()+close() of one file shared by all tasks: dentry and inode reference counts",
    prepare = |cx| {
        let p = shared_file(cx, 0)?;
        Ok(body(move |t| open_close_loop(t, &p)))
    }
);

testcase!(
    /// will-it-scale dup1: dup and close an fd of a separate file. In
    /// threads mode all tasks share one fd table.
    Dup1,
    "dup1",
    "dup()+close() of a separate file's fd: fd table allocation (shared table in threads mode)",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "dup")?;
            loop {
                // SAFETY: duplicating and closing our fd.
                let d = unsafe { libc::dup(fd) };
                check(d as i64, "dup")?;
                // SAFETY: d is the fd dup just returned.
                unsafe { libc::close(d) };
                t.counter.add(1);
            }
        }))
    }
);

fn create_unlink_loop(t: &Task, p: &Path) -> anyhow::Result<Infallible> {
    let c = cpath(p)?;
    loop {
        // SAFETY: a valid C string; closing what we created.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDWR | libc::O_CREAT, 0o600) };
        if fd < 0 {
            anyhow::bail!(
                "create {}: {}",
                p.display(),
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: fd was just opened; c is NUL-terminated.
        unsafe {
            libc::close(fd);
            libc::unlink(c.as_ptr());
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale unlink1: create, close and unlink a per-task file, all
    /// tasks in one directory.
    Unlink1,
    "unlink1",
    "open(O_CREAT)+close()+unlink() of a separate file per task in one directory: directory lock",
    prepare = |_| Ok(body(|t| create_unlink_loop(t, &t.dir.join(format!("unlink1.{}", t.nr)))))
);
testcase!(
    /// will-it-scale unlink2. Its description repeats open2's ("open/close
    /// in different directories"); its loop creates and unlinks, which is
    /// what kbench does: like unlink1 with a directory per task.
    Unlink2,
    "unlink2",
    "open(O_CREAT)+close()+unlink() of a separate file per task, each in its own directory",
    prepare = |_| {
        Ok(body(|t| {
            let d = t.dir.join(format!("unlink2.{}", t.nr));
            std::fs::create_dir(&d)?;
            create_unlink_loop(t, &d.join("file"))
        }))
    }
);

/// fallocate() `MB / 128` bytes at a time through 1 MB, then truncate to
/// 0 and start again (will-it-scale's fallocate loop).
fn fallocate_loop(t: &Task, fd: libc::c_int) -> anyhow::Result<Infallible> {
    let chunk = MB / 128;
    let mut place = 0usize;
    loop {
        // Linux fallocate(2), FreeBSD posix_fallocate(2).
        let r = crate::system::fallocate(fd, place as libc::off_t, chunk as libc::off_t);
        if r != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            anyhow::bail!("fallocate: {}", std::io::Error::last_os_error());
        }
        place += chunk;
        if place >= MB {
            // SAFETY: our fd; ftruncate touches no memory.
            check(unsafe { libc::ftruncate(fd, 0) } as i64, "ftruncate")?;
            place = 0;
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale fallocate1: allocate 8 kB chunks up to 1 MB, then
    /// truncate to 0. The original uses a tmpfs at /dev/shm; so does
    /// kbench when it is writable, else the cell directory.
    Fallocate1,
    "fallocate1",
    "fallocate() of 8 kB chunks through 1 MB of a separate tmpfs file, then ftruncate(0): block allocation",
    prepare = |_| {
        Ok(body(|t| {
            let shm = Path::new("/dev/shm");
            let fd = anon_file_in(shm, t, "kbench-fallocate")
                .or_else(|_| anon_file(t, "fallocate"))?;
            fallocate_loop(t, fd)
        }))
    }
);

testcase!(
    /// will-it-scale fallocate2: the same on a file in the temporary
    /// directory's file system (the original's /tmp; kbench's cell
    /// directory, under $TMPDIR or /tmp).
    Fallocate2,
    "fallocate2",
    "fallocate() of 8 kB chunks through 1 MB of a separate file in the temporary directory, then ftruncate(0): the file system's block allocator",
    prepare = |_| Ok(body(|t| fallocate_loop(t, anon_file(t, "fallocate")?)))
);

/// A page-aligned buffer of `len` bytes for O_DIRECT, zeroed, never freed
/// (a task lives until its cell kills it).
fn aligned(len: usize) -> anyhow::Result<*mut u8> {
    let layout = std::alloc::Layout::from_size_align(len, page_size())?;
    // SAFETY: a non-zero size; checked for null.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        anyhow::bail!("allocating {len} aligned bytes failed");
    }
    Ok(p)
}

/// read() of one page at a time with O_DIRECT, rewinding at the end
/// (the read that returns 0 counts, as in the original).
fn direct_read_loop(t: &Task, fd: libc::c_int) -> anyhow::Result<Infallible> {
    let pg = page_size();
    let buf = aligned(pg)?;
    loop {
        // SAFETY: reading into our aligned buffer of one page.
        let n = unsafe { libc::read(fd, buf as *mut _, pg) };
        if check(n as i64, "O_DIRECT read")? == 0 {
            // SAFETY: our fd.
            unsafe { libc::lseek(fd, 0, libc::SEEK_SET) };
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale read3: O_DIRECT page reads through a separate 1 MB
    /// file per task (written with O_DIRECT first, so no page cache).
    Read3,
    "read3",
    "O_DIRECT read() of one page through a separate 1 MB file per task: direct I/O to the block device, no page cache",
    prepare = |_| {
        Ok(body(|t| {
            let p = t.dir.join(format!("read3.{}.{}", t.nr, crate::system::thread_id()));
            let fd = open(&p, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_DIRECT)?;
            unlink(&p)?;
            let buf = aligned(MB)?;
            // SAFETY: writing from our aligned buffer of MB bytes.
            let n = unsafe { libc::write(fd, buf as *const _, MB) };
            if n != MB as isize {
                anyhow::bail!("O_DIRECT write returned {n}: {}", std::io::Error::last_os_error());
            }
            // Like the original, the first read is at the end: it
            // returns 0 and rewinds.
            direct_read_loop(t, fd)
        }))
    }
);

testcase!(
    /// will-it-scale read4: O_DIRECT page reads through one shared 1 MB
    /// file, each task with its own descriptor.
    Read4,
    "read4",
    "O_DIRECT read() of one page through one 1 MB file shared by all tasks (own fd each): direct I/O, shared inode",
    prepare = |cx| {
        let p = shared_file(cx, MB)?;
        Ok(body(move |t| direct_read_loop(t, open(&p, libc::O_RDONLY | libc::O_DIRECT)?)))
    }
);

/// lseek(off) then read() of 4 kB, which must return 4 kB.
fn readseek_loop(t: &Task, fd: libc::c_int, off: usize) -> anyhow::Result<Infallible> {
    let mut buf = IoBuf::new();
    loop {
        // SAFETY: our fd and a local buffer.
        unsafe { libc::lseek(fd, off as libc::off_t, libc::SEEK_SET) };
        // SAFETY: buf holds BUF bytes.
        let n = unsafe { libc::read(fd, buf.ptr(), BUF) };
        if n != BUF as isize {
            anyhow::bail!("read returned {n}: {}", std::io::Error::last_os_error());
        }
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale readseek1: lseek to 0 and read 4 kB of a separate
    /// file.
    Readseek1,
    "readseek1",
    "lseek(0)+read() of 4 kB on a separate file per task",
    prepare = |_| {
        Ok(body(|t| {
            let fd = anon_file(t, "readseek")?;
            write_zeros(fd, BUF, BUF)?;
            readseek_loop(t, fd, 0)
        }))
    }
);
testcase!(
    /// will-it-scale readseek2: the same on one shared file, all tasks at
    /// offset 0, own descriptor each (opened read-write, as the original).
    Readseek2,
    "readseek2",
    "lseek(0)+read() of 4 kB on one shared file (own fd each): one hot page cache page",
    prepare = |cx| {
        let p = shared_file(cx, BUF)?;
        Ok(body(move |t| readseek_loop(t, open(&p, libc::O_RDWR)?, 0)))
    }
);
testcase!(
    /// will-it-scale readseek3: one shared file of a page per task, each
    /// task reading its own page.
    Readseek3,
    "readseek3",
    "lseek+read() of 4 kB on one shared file, each task at its own page offset",
    prepare = |cx| {
        let pg = page_size();
        let p = page_per_task_file(cx)?;
        Ok(body(move |t| readseek_loop(t, open(&p, libc::O_RDONLY)?, pg * t.nr)))
    }
);

/// poll() of `N` fds for POLLOUT with a zero timeout. The array is filled
/// afresh before every call, as the C testcases do (a cleared array, then
/// fd and events per entry): for 128 fds that is ~40 ns of the ~550 ns
/// per call here, which kbench skipped (poll2 read 1.08-1.09x
/// will-it-scale in processes mode) until it did the same.
fn poll_loop<const N: usize>(t: &Task, fds: [libc::c_int; N]) -> anyhow::Result<Infallible> {
    loop {
        let mut pfd = [libc::pollfd {
            fd: 0,
            events: 0,
            revents: 0,
        }; N];
        for (p, &fd) in pfd.iter_mut().zip(fds.iter()) {
            p.fd = fd;
            p.events = libc::POLLOUT;
        }
        // SAFETY: a valid pollfd array of N entries; zero timeout. The
        // kernel writes revents, so the array is rebuilt for real.
        let r = unsafe { libc::poll(pfd.as_mut_ptr(), N as libc::nfds_t, 0) };
        check(r as i64, "poll")?;
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale poll1: poll one file for POLLOUT, zero timeout.
    Poll1,
    "poll1",
    "poll() of 1 fd (a file, POLLOUT, zero timeout)",
    prepare = |_| Ok(body(|t| poll_loop(t, [anon_file(t, "poll")?])))
);
testcase!(
    /// will-it-scale poll2: poll 128 files. `prepare` raises the soft fd
    /// limit when 128 per task would not fit (the original sets it from
    /// the CPU count).
    Poll2,
    "poll2",
    "poll() of 128 fds (files, POLLOUT, zero timeout): fd lookups per call",
    prepare = |cx| {
        // rlim_t is unsigned on Linux, signed on FreeBSD.
        let need = ((128 + 16) * cx.ntasks + 64) as libc::rlim_t;
        // SAFETY: reading and raising our own soft limit.
        unsafe {
            let mut rl: libc::rlimit = std::mem::zeroed();
            libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl);
            if rl.rlim_cur < need {
                rl.rlim_cur = need.min(rl.rlim_max);
                libc::setrlimit(libc::RLIMIT_NOFILE, &rl);
            }
        }
        Ok(body(|t| {
            let mut fds = [0; 128];
            for (i, fd) in fds.iter_mut().enumerate() {
                *fd = anon_file(t, &format!("poll{i}"))?;
            }
            poll_loop(t, fds)
        }))
    }
);

fn lock_loop(t: &Task, fd: libc::c_int) -> anyhow::Result<Infallible> {
    // SAFETY: flock is plain data.
    let mut lk: libc::flock = unsafe { std::mem::zeroed() };
    lk.l_whence = libc::SEEK_SET as libc::c_short;
    lk.l_start = 0;
    lk.l_len = 1;
    loop {
        for ty in [libc::F_WRLCK, libc::F_UNLCK] {
            lk.l_type = ty as libc::c_short;
            loop {
                // SAFETY: our fd and a valid flock.
                let r = unsafe { libc::fcntl(fd, libc::F_SETLKW, &lk) };
                if r == 0 {
                    break;
                }
                if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    anyhow::bail!("fcntl(F_SETLKW): {}", std::io::Error::last_os_error());
                }
            }
        }
        t.counter.add(2);
    }
}

testcase!(
    /// will-it-scale lock1: POSIX write lock and unlock of byte 0 of a
    /// separate file; counts 2 per pair as the original.
    Lock1,
    "lock1",
    "fcntl(F_SETLKW) write lock + unlock of a separate file per task: file lock context",
    prepare = |_| Ok(body(|t| lock_loop(t, anon_file(t, "lock")?)))
);
testcase!(
    /// will-it-scale lock2: the same byte of one shared file. POSIX locks
    /// belong to the process, so processes contend and threads do not, as
    /// in the original.
    Lock2,
    "lock2",
    "fcntl(F_SETLKW) write lock + unlock of byte 0 of one shared file: contended between processes",
    prepare = |cx| {
        let p = shared_file(cx, 0)?;
        Ok(body(move |t| lock_loop(t, open(&p, libc::O_RDWR)?)))
    }
);

#[cfg(test)]
mod tests {
    use super::{IoBuf, write_zeros};

    #[test]
    fn zeros_are_written_in_the_chunks_asked_for_to_the_length_asked_for() {
        use std::io::{Read, Seek};
        use std::os::fd::AsRawFd;
        // A page at a time with a short last write, in one write, and a
        // chunk larger than the file.
        for (len, chunk) in [(10_000, 4096), (1 << 20, 1 << 20), (100, 4096), (0, 4096)] {
            let mut f = tempfile::tempfile().unwrap();
            write_zeros(f.as_raw_fd(), len, chunk).unwrap();
            f.rewind().unwrap();
            let mut got = Vec::new();
            f.read_to_end(&mut got).unwrap();
            assert_eq!(got.len(), len, "len {len} chunk {chunk}");
            assert!(got.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn io_buffers_are_cache_line_aligned_wherever_they_land() {
        // On the stack at different depths, and on the heap.
        fn at_depth(n: usize) -> usize {
            let mut b = IoBuf::new();
            let here = b.ptr() as usize;
            if n == 0 {
                here
            } else {
                std::hint::black_box(at_depth(n - 1)) | (here & 63)
            }
        }
        for n in 0..4 {
            assert_eq!(at_depth(n) % 64, 0, "depth {n}");
        }
        let mut h = Box::new(IoBuf::new());
        assert_eq!(h.ptr() as usize % 64, 0);
        assert_eq!(std::mem::size_of::<IoBuf>(), super::BUF);
    }
}
