//! Files the user names and kbench reads whole: each kind has a stated
//! bound, and only a regular file is read. A FIFO, a device or a
//! directory is refused before a byte is read, and the file is opened
//! without blocking, so a FIFO with no writer never hangs kbench (open(2)
//! of a FIFO waits for a writer; `O_NONBLOCK` returns at once, and the
//! type is checked on the open descriptor, so swapping the file between
//! a check and the open changes nothing). A file over its bound is
//! refused with its size and the bound, before it is read; a file that
//! grows while it is read stops at the bound.
//!
//! What kbench reads as a stream (event streams: 16 MiB a line, a
//! command's captured output: `bench/command/capture.rs`) or only in
//! parts (an ELF file's headers) needs no bound here.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use crate::error::bad_input;

/// A plan, a hosts file, a plan's C testcase: text a person writes. The
/// largest plan in `examples/` is 3 KiB.
pub const TEXT: u64 = 16 << 20;

/// A file `kbench import` reads: hyperfine's JSON, ministat's columns,
/// will-it-scale's CSV (10^6 times in hyperfine's JSON are 26 MB).
pub const IMPORT: u64 = 256 << 20;

/// What a file is, for a message: `a FIFO`, `a directory`.
fn kind(ft: &std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "a directory"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Why a file cannot be read as `what`, as the end of a one-line message.
#[derive(Debug)]
pub enum Refused {
    /// open(2) or stat(2) failed.
    Io(std::io::Error),
    /// Not a regular file: what it is.
    NotFile(&'static str),
    /// Over the bound: its size.
    TooBig(u64),
}

impl Refused {
    /// The message's tail for a `what` bounded by `limit`.
    pub fn say(&self, what: &str, limit: u64) -> String {
        match self {
            Refused::Io(e) => format!("cannot read {what}: {e}"),
            Refused::NotFile(k) => format!("{k}, not a regular file; {what} must be a file"),
            Refused::TooBig(n) if *n < 1024 => {
                format!("{n} bytes, over the {} {what} may have", size(limit))
            }
            Refused::TooBig(n) => format!(
                "{} ({n} bytes), over the {} {what} may have",
                size(*n),
                size(limit)
            ),
        }
    }
}

/// Open `path` as a regular file without blocking; its size.
pub fn open(path: &Path) -> Result<(File, u64), Refused> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // A FIFO without a reader refuses a write-only open; a socket
            // cannot be opened at all: say what they are.
            Some(libc::ENXIO | libc::EOPNOTSUPP) => std::fs::metadata(path)
                .map(|m| Refused::NotFile(kind(&m.file_type())))
                .unwrap_or(Refused::Io(e)),
            _ => Refused::Io(e),
        })?;
    let md = f.metadata().map_err(Refused::Io)?;
    if !md.file_type().is_file() {
        return Err(Refused::NotFile(kind(&md.file_type())));
    }
    Ok((f, md.len()))
}

/// Read a regular file of at most `limit` bytes whole.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    let (f, len) = open(path)?;
    if len > limit {
        return Err(Refused::TooBig(len));
    }
    let mut b = Vec::with_capacity(len as usize);
    f.take(limit + 1).read_to_end(&mut b).map_err(Refused::Io)?;
    if b.len() as u64 > limit {
        return Err(Refused::TooBig(b.len() as u64));
    }
    Ok(b)
}

/// [`read_bounded`], refused as bad input naming the file and `what` it
/// is (`a plan`): `p.toml: a FIFO, not a regular file; a plan must be a
/// file`.
pub fn read(path: &Path, what: &str, limit: u64) -> anyhow::Result<Vec<u8>> {
    read_bounded(path, limit).map_err(|r| bad_input!("{}: {}", path.display(), r.say(what, limit)))
}

/// [`read`] as UTF-8 text.
pub fn read_text(path: &Path, what: &str, limit: u64) -> anyhow::Result<String> {
    String::from_utf8(read(path, what, limit)?)
        .map_err(|e| bad_input!("{}: {what} is not UTF-8 text: {e}", path.display()))
}

/// Bytes in binary units for a message: `16 MiB`, `3.0 GiB`, `512 bytes`.
pub fn size(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if n < 1024 {
        return format!("{n} bytes");
    }
    let mut v = n as f64 / 1024.0;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if v.fract() == 0.0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_their_bound_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        assert_eq!(read_bounded(&p, 10).unwrap(), b"0123456789");
        let e = read(&p, "a plan", 9).unwrap_err().to_string();
        assert!(
            e.ends_with("f: 10 bytes, over the 9 bytes a plan may have"),
            "{e}"
        );
        let e = read(Path::new("/dev/zero"), "a plan", TEXT)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/dev/zero: a character device, not a regular file; a plan must be a file"
        );
        let e = read(dir.path(), "a plan", TEXT).unwrap_err().to_string();
        assert!(
            e.ends_with(": a directory, not a regular file; a plan must be a file"),
            "{e}"
        );
        // A FIFO without a writer: refused at once, not waited on.
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = read(&fifo, "a plan", TEXT).unwrap_err().to_string();
        assert!(
            e.ends_with(": a FIFO, not a regular file; a plan must be a file"),
            "{e}"
        );
        let e = read(&dir.path().join("none"), "a plan", TEXT)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cannot read a plan: No such file"), "{e}");
    }

    #[test]
    fn sizes_read_in_binary_units() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(16 << 20), "16 MiB");
        assert_eq!(size(3 << 30), "3 GiB");
        assert_eq!(size(3_200_000_000), "3.0 GiB");
    }
}
