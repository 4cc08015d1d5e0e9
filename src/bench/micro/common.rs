//! Helpers shared by the micro-benchmark families: raw file-descriptor I/O
//! that never allocates (safe in a forked child), page-aligned buffers,
//! temporary files, and instances that convert a timed loop into another
//! unit or carry notes.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Instance, Measure};

/// Page size of the running system.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as usize } else { 4096 }
}

/// The errno of the last failed call, without allocating.
pub use crate::system::errno;

pub use crate::system::pipe_cloexec;

/// write(2) all of `buf`, retrying on EINTR. Returns false on any error.
/// Allocation-free: usable in a forked child.
#[inline]
pub fn write_all_raw(fd: RawFd, buf: &[u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe the live slice tail.
        let r = unsafe { libc::write(fd, buf[off..].as_ptr().cast(), buf.len() - off) };
        if r < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        off += r as usize;
    }
    true
}

/// read(2) exactly `buf.len()` bytes, retrying on EINTR. Returns false on
/// EOF or error. Allocation-free.
#[inline]
pub fn read_exact_raw(fd: RawFd, buf: &mut [u8]) -> bool {
    let mut off = 0;
    while off < buf.len() {
        // SAFETY: the pointer and length describe the live slice tail.
        let r = unsafe { libc::read(fd, buf[off..].as_mut_ptr().cast(), buf.len() - off) };
        if r < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            return false;
        }
        if r == 0 {
            return false;
        }
        off += r as usize;
    }
    true
}

/// Send a message of u64 words.
pub fn send_words(fd: RawFd, words: &[u64]) -> bool {
    // SAFETY: u64 words viewed as their bytes.
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
    write_all_raw(fd, bytes)
}

/// Receive a message of u64 words; false on EOF or error.
pub fn recv_words(fd: RawFd, words: &mut [u64]) -> bool {
    // SAFETY: u64 words viewed as their bytes; any bit pattern is valid.
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
    read_exact_raw(fd, bytes)
}

/// An anonymous, page-aligned mapping, touched at creation so the timed
/// loops never fault on it.
pub struct PageBuf {
    ptr: *mut u8,
    len: usize,
    map_len: usize,
}

// SAFETY: the buffer is exclusively owned; moving it between threads is fine.
unsafe impl Send for PageBuf {}

impl PageBuf {
    /// `len` bytes (at least one page mapped), filled with `fill`.
    pub fn new(len: usize, fill: u8) -> io::Result<PageBuf> {
        let ps = page_size();
        let map_len = len.max(1).div_ceil(ps) * ps;
        let p = crate::system::mmap_anon(map_len, false)?;
        // SAFETY: p..p+map_len is the mapping just created.
        unsafe { std::ptr::write_bytes(p, fill, map_len) };
        Ok(PageBuf {
            ptr: p,
            len,
            map_len,
        })
    }

    /// Keep the buffer out of forked children (Linux MADV_DONTFORK,
    /// FreeBSD INHERIT_NONE): a large buffer of one cell must not make
    /// another cell's fork() slower.
    pub fn dont_fork(self) -> io::Result<PageBuf> {
        crate::system::dont_fork(self.ptr, self.map_len)?;
        Ok(self)
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is mapped and initialised.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    #[cfg(test)]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and we hold the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping this value owns.
        unsafe { libc::munmap(self.ptr.cast(), self.map_len) };
    }
}

/// A file kbench created for a benchmark; removed on drop.
pub struct TempFile {
    pub path: PathBuf,
}

impl TempFile {
    /// A new file of `size` bytes (a non-zero pattern, so nothing is sparse)
    /// in `dir` (default: $TMPDIR or /tmp), read back once so it is cached.
    pub fn create(dir: Option<&str>, size: u64, mode: u32) -> anyhow::Result<TempFile> {
        use anyhow::Context;
        use std::io::{Read, Write};
        use std::os::unix::fs::OpenOptionsExt;
        let dir = dir.map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let (path, mut f) = crate::bench::create_unique(&dir, |p| {
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(mode)
                .open(p)
        })?;
        let t = TempFile { path };
        let block = vec![0x5au8; 1 << 16];
        let mut left = size;
        while left > 0 {
            let n = left.min(block.len() as u64) as usize;
            f.write_all(&block[..n])
                .with_context(|| format!("writing {}", t.path.display()))?;
            left -= n as u64;
        }
        drop(f);
        let mut sink = Vec::new();
        std::fs::File::open(&t.path)?.read_to_end(&mut sink)?;
        Ok(t)
    }

    pub fn c_path(&self) -> CString {
        c_path(&self.path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A path as a C string (paths never contain NUL on Unix).
pub fn c_path(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap_or_default()
}

/// The file-system type a path lives on, e.g. `ext4`, `tmpfs`.
pub fn fs_type(p: &Path) -> String {
    let c = c_path(p);
    // SAFETY: statfs is plain data; c is NUL-terminated.
    let mut s: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: c is NUL-terminated and s a statfs we own.
    if unsafe { libc::statfs(c.as_ptr(), &mut s) } != 0 {
        return "unknown".into();
    }
    match s.f_type as u64 {
        0x0102_1994 => "tmpfs".into(),
        0xEF53 => "ext2/3/4".into(),
        0x5846_5342 => "xfs".into(),
        0x9123_683E => "btrfs".into(),
        0x794C_7630 => "overlayfs".into(),
        0x6969 => "nfs".into(),
        0x2FC1_2FC1 => "zfs".into(),
        0x0102_1997 => "9p".into(),
        0x6573_5546 => "fuse".into(),
        other => format!("0x{other:x}"),
    }
}

/// An instance with extra notes and resources that must outlive it (a
/// temporary file): the inner instance is dropped first.
pub struct WithNotes {
    pub inner: Box<dyn Instance>,
    pub notes: Vec<(String, String)>,
    pub keep: Option<Box<dyn Send>>,
}

impl Instance for WithNotes {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        self.inner.sample(out)
    }
    fn operations(&self) -> Option<f64> {
        self.inner.operations()
    }
    fn placement(&self) -> Option<String> {
        self.inner.placement()
    }
    fn notes(&self) -> Vec<(String, String)> {
        let mut n = self.inner.notes();
        n.extend(self.notes.iter().cloned());
        n
    }
}

impl Drop for WithNotes {
    fn drop(&mut self) {
        // Field order already drops `inner` before `keep`; spelled out
        // because a temporary file must outlive the descriptors on it.
        let inner = std::mem::replace(&mut self.inner, Box::new(Nothing));
        drop(inner);
        self.keep.take();
    }
}

struct Nothing;
impl Instance for Nothing {
    fn sample(&mut self, _out: &mut Vec<Measure>) -> anyhow::Result<()> {
        Ok(())
    }
}

/// Find an amount (of iterations, bytes, operations) whose run lasts
/// about `target_ns`: grow from `start` until a run takes at least 1/16 of
/// the target (and 1 ms), then scale linearly from the fastest of three
/// runs of that amount; rounded up to a multiple of `unit`. `run(amount)`
/// returns the nanoseconds it took.
pub fn calibrate_amount(
    target_ns: u64,
    start: u64,
    unit: u64,
    mut run: impl FnMut(u64) -> anyhow::Result<u64>,
) -> anyhow::Result<u64> {
    let unit = unit.max(1);
    let floor = (target_ns / 16).max(1_000_000);
    let mut a = start.max(unit).div_ceil(unit) * unit;
    loop {
        let t = run(a)?.max(1);
        if t >= floor || a >= 1 << 44 {
            // A preemption during one short run would skew the estimate
            // by orders of magnitude: take the fastest of three.
            let t = run(a)?.min(run(a)?).min(t).max(1);
            let scaled = (a as u128 * target_ns as u128 / t as u128) as u64;
            return Ok(scaled.max(unit).div_ceil(unit) * unit);
        }
        a = a.saturating_mul(if t < floor / 64 { 8 } else { 2 });
    }
}

/// A boxed `Send` value that is never used again, only kept alive.
pub fn keep<T: Send + 'static>(v: T) -> Option<Box<dyn Send>> {
    Some(Box::new(v))
}

#[cfg(test)]
pub mod testing {
    //! Running a benchmark the way the runner does, for unit tests.
    use crate::bench::{Bench, Instance, Measure, Params, RunSettings};

    /// Benchmarks that fork or pin are timed one at a time (across test
    /// processes too), so parallel tests on a 2-CPU machine disturb each
    /// other less.
    pub fn serial() -> crate::test_support::TimingLock {
        crate::test_support::timing_lock()
    }

    pub fn params(b: &dyn Bench, given: &[(&str, &str)]) -> Result<Params, String> {
        let given: Vec<(String, toml::Value)> = given
            .iter()
            .map(|(k, v)| (k.to_string(), crate::bench::params::raw_from_str(v)))
            .collect();
        Params::resolve(b, &given)
    }

    /// Instantiate with `given`, take `n` samples at 0.02 s; values of
    /// metric 0 and the instance (for notes and placement).
    pub fn run(b: &dyn Bench, given: &[(&str, &str)], n: usize) -> (Vec<f64>, Box<dyn Instance>) {
        let p = params(b, given).unwrap_or_else(|e| panic!("{}: {e}", b.name()));
        let s = RunSettings {
            sample_time: 0.02,
            process: None,
        };
        let mut inst = b
            .instantiate(&p, &s)
            .unwrap_or_else(|e| panic!("{}: {e:#}", b.name()));
        let mut out: Vec<Measure> = Vec::new();
        for _ in 0..n {
            inst.sample(&mut out)
                .unwrap_or_else(|e| panic!("{}: {e:#}", b.name()));
        }
        let v = out
            .iter()
            .filter(|m| m.metric == 0)
            .map(|m| m.value)
            .collect();
        (v, inst)
    }

    pub fn median(v: &[f64]) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(|a, b| a.total_cmp(b));
        s[s.len() / 2]
    }

    /// The least value: the run least disturbed by other work, for
    /// comparing two benchmarks on a shared machine.
    pub fn least(v: &[f64]) -> f64 {
        v.iter().copied().fold(f64::INFINITY, f64::min)
    }

    pub fn note(inst: &dyn Instance, key: &str) -> String {
        inst.notes()
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no note `{key}` in {:?}", inst.notes()))
    }

    /// Whether at least two CPUs are allowed (for `cross` tests).
    pub fn two_cpus() -> bool {
        crate::system::get_affinity()
            .map(|s| s.0.len() >= 2)
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_io_and_words_round_trip() {
        let (r, w) = pipe_cloexec().unwrap();
        use std::os::fd::AsRawFd;
        assert!(send_words(w.as_raw_fd(), &[1, u64::MAX]));
        let mut m = [0u64; 2];
        assert!(recv_words(r.as_raw_fd(), &mut m));
        assert_eq!(m, [1, u64::MAX]);
        drop(w);
        assert!(!recv_words(r.as_raw_fd(), &mut m), "EOF is false");
    }

    #[test]
    fn calibrate_amount_scales_to_target() {
        // A fake run costing 1 ns per unit.
        let a = calibrate_amount(50_000_000, 1000, 512, Ok).unwrap();
        assert!((49_000_000..=51_000_000).contains(&a), "{a}");
        assert_eq!(a % 512, 0);
    }

    #[test]
    fn temp_file_is_created_and_removed() {
        let t = TempFile::create(None, 10_000, 0o600).unwrap();
        assert_eq!(std::fs::metadata(&t.path).unwrap().len(), 10_000);
        let p = t.path.clone();
        assert_ne!(fs_type(&p), "unknown");
        drop(t);
        assert!(!p.exists());
    }
}

#[cfg(test)]
mod temp_tests {
    use super::TempFile;
    use crate::bench::TEMP_SEQ;
    use std::sync::atomic::Ordering;

    #[test]
    fn a_name_a_killed_process_left_behind_is_skipped() {
        // What a killed kbench whose pid this process now has left in
        // $TMPDIR: its next names, one a directory, the others files.
        let dir = tempfile::tempdir().unwrap();
        let next = TEMP_SEQ.load(Ordering::Relaxed);
        let stale: Vec<_> = (next..next + 4)
            .map(|i| {
                dir.path()
                    .join(format!("kbench-{}-{i}", std::process::id()))
            })
            .collect();
        std::fs::create_dir(&stale[0]).unwrap();
        for p in &stale[1..] {
            std::fs::write(p, b"stale").unwrap();
        }
        let t = TempFile::create(dir.path().to_str(), 4096, 0o600).unwrap();
        assert!(!stale.contains(&t.path), "{}", t.path.display());
        assert_eq!(std::fs::metadata(&t.path).unwrap().len(), 4096);
        for p in &stale[1..] {
            assert_eq!(std::fs::read(p).unwrap(), b"stale", "{}", p.display());
        }
    }
}
