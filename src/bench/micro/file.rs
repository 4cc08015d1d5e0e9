//! File-system system calls on a cached file (lmbench lat_syscall read,
//! write, stat, open; will-it-scale lseek1, open1): the VFS paths without
//! any I/O.

use std::ffi::CString;
use std::hint::black_box;
use std::os::fd::AsRawFd;
use std::path::Path;

use super::common::{TempFile, WithNotes, c_path, fs_type, keep};
use super::micro;
use super::{CPU_PARAM, LoopInstance};
use crate::bench::{Instance, ParamDef, ParamType, Params, RunSettings};

fn cpu_of(p: &Params) -> Option<usize> {
    p.opt_int("cpu").map(|c| c as usize)
}

const DIR: ParamDef = ParamDef {
    name: "dir",
    ty: ParamType::Str,
    default: None,
    help: "directory of the temporary file (absent: $TMPDIR or /tmp); its file system is in the notes",
};

const PATH: ParamDef = ParamDef {
    name: "path",
    ty: ParamType::Str,
    default: None,
    help: "an existing file to use (absent: a temporary file kbench creates in `dir`)",
};

fn check_dir_path(p: &Params) -> Result<(), String> {
    if let Some(d) = p.opt_str("dir")
        && !Path::new(d).is_dir()
    {
        return Err(format!("dir `{d}` is not a directory"));
    }
    if let Some(f) = p.opt_str("path")
        && !Path::new(f).exists()
    {
        return Err(format!("path `{f}` does not exist"));
    }
    Ok(())
}

/// The file to operate on: `path`, or a new temporary file of `size`
/// bytes; with a note naming it and its file system.
fn target(p: &Params, size: u64) -> anyhow::Result<(CString, Option<TempFile>, (String, String))> {
    let (path, tmp) = match p.opt_str("path") {
        Some(f) => (Path::new(f).to_path_buf(), None),
        None => {
            let t = TempFile::create(p.opt_str("dir"), size, 0o600)?;
            (t.path.clone(), Some(t))
        }
    };
    let note = (
        "file".into(),
        format!("{} on {}", path.display(), fs_type(&path)),
    );
    Ok((c_path(&path), tmp, note))
}

fn boxed(
    inner: Box<dyn Instance>,
    note: (String, String),
    tmp: Option<TempFile>,
) -> Box<dyn Instance> {
    Box::new(WithNotes {
        inner,
        notes: vec![note],
        keep: keep(tmp),
    })
}

pub struct Read;
const READ_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 1,
            max: 1 << 26,
        },
        default: Some("4k"),
        help: "bytes per read",
    },
    DIR,
    CPU_PARAM,
];

micro! {
    Read, "read",
    "pread() of `size` bytes at offset 0 of a file that is in the page cache: the kernel finds the cached folio (filemap_read) and copies it to the user buffer, no I/O. ns per read. Single party",
    params = READ_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_dir_path(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        let (_, tmp, note) = target(p, size as u64)?;
        let f = std::fs::File::open(&tmp.as_ref().expect("no path param").path)?;
        let mut buf = vec![0u8; size];
        let op = move || {
            // SAFETY: buf has `size` bytes.
            black_box(unsafe { libc::pread(f.as_raw_fd(), buf.as_mut_ptr().cast(), size, 0) });
        };
        Ok(boxed(
            Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
            note,
            tmp,
        ))
    }
}

pub struct OpenClose;
const OPEN_PARAMS: &[ParamDef] = &[PATH, DIR, CPU_PARAM];

micro! {
    OpenClose, "open-close",
    "open(O_RDONLY) and close() of a file: the kernel walks the path (RCU path walk through the dentry cache), allocates a struct file and a descriptor, and on close drops them (fput). ns per open+close. Single party",
    params = OPEN_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_dir_path(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let (path, tmp, note) = target(p, 4096)?;
        // SAFETY: path is NUL-terminated.
        let fd = unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().into());
        }
        // SAFETY: closing the probe descriptor.
        unsafe { libc::close(fd) };
        let op = move || {
            // SAFETY: as above; the descriptor is closed at once.
            unsafe {
                let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
        };
        Ok(boxed(
            Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
            note,
            tmp,
        ))
    }
}

pub struct Stat;
const STAT_PARAMS: &[ParamDef] = &[PATH, DIR, CPU_PARAM];

micro! {
    Stat, "stat",
    "stat() of a path: the kernel walks the path through the dentry cache and copies the inode's attributes out (vfs_statx), no descriptor. ns per stat. Single party",
    params = STAT_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_dir_path(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let (path, tmp, note) = target(p, 4096)?;
        let op = move || {
            // SAFETY: stat fills a plain struct; path is NUL-terminated.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            // SAFETY: path is NUL-terminated and st a stat we own.
            black_box(unsafe { libc::stat(path.as_ptr(), &mut st) });
        };
        Ok(boxed(
            Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
            note,
            tmp,
        ))
    }
}

pub struct Lseek;
const LSEEK_PARAMS: &[ParamDef] = &[DIR, CPU_PARAM];

micro! {
    Lseek, "lseek",
    "lseek(fd, 0, SEEK_SET) on an open regular file (will-it-scale lseek1): a descriptor lookup and the file system's llseek (generic_file_llseek), nothing else; close to a null system call with a descriptor. ns per lseek. Single party",
    params = LSEEK_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_dir_path(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let (_, tmp, note) = target(p, 4096)?;
        let f = std::fs::File::open(&tmp.as_ref().expect("temporary file").path)?;
        let op = move || {
            // SAFETY: lseek on a descriptor we own.
            black_box(unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_SET) });
        };
        Ok(boxed(
            Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
            note,
            tmp,
        ))
    }
}

pub struct WriteDevNull;
const DEVNULL_PARAMS: &[ParamDef] = &[
    ParamDef {
        name: "size",
        ty: ParamType::Size {
            min: 1,
            max: 1 << 26,
        },
        default: Some("1"),
        help: "bytes per write",
    },
    CPU_PARAM,
];

micro! {
    WriteDevNull, "write-dev-null",
    "write() of `size` bytes to /dev/null (lmbench lat_syscall write): a descriptor lookup, the VFS write path (rw_verify_area, fsnotify) and write_null, which copies nothing. ns per write. Single party",
    params = DEVNULL_PARAMS,
    metrics = super::NS_PER_OP;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let size = p.int("size") as usize;
        let f = std::fs::OpenOptions::new().write(true).open("/dev/null")?;
        let buf = vec![0u8; size];
        let op = move || {
            // SAFETY: buf has `size` bytes.
            black_box(unsafe { libc::write(f.as_raw_fd(), buf.as_ptr().cast(), size) });
        };
        Ok(Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{median, note, params, run, serial};
    use super::*;
    use crate::bench::Bench;

    #[test]
    fn file_syscalls_are_sane() {
        let _g = serial();
        for (b, lo, hi) in [
            (&Read as &dyn Bench, 30.0, 1e6),
            (&OpenClose, 100.0, 1e6),
            (&Stat, 50.0, 1e6),
            (&Lseek, 10.0, 1e5),
            (&WriteDevNull, 10.0, 1e5),
        ] {
            let (v, inst) = run(b, &[], 2);
            let m = median(&v);
            assert!(m > lo && m < hi, "{}: {m} ns", b.name());
            if b.name() != "write-dev-null" {
                assert!(note(&*inst, "file").contains(" on "));
            }
        }
    }

    #[test]
    fn temporary_files_are_removed() {
        let _g = serial();
        let (_, inst) = run(&Stat, &[], 1);
        let f = note(&*inst, "file");
        let path = f.split(" on ").next().unwrap().to_string();
        assert!(Path::new(&path).exists());
        drop(inst);
        assert!(!Path::new(&path).exists(), "{path} left behind");
    }

    #[test]
    fn bad_paths_are_refused() {
        let e = params(&Stat, &[("path", "/nonexistent/x")]).unwrap_err();
        assert!(e.contains("does not exist"), "{e}");
        let e = params(&Read, &[("dir", "/nonexistent")]).unwrap_err();
        assert!(e.contains("not a directory"), "{e}");
        let e = params(&Read, &[("size", "0")]).unwrap_err();
        assert!(e.contains("size"), "{e}");
    }
}
