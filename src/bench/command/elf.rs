//! The `elf` and `file` metrics: sizes read from a file a command made.
//!
//! Only a regular file is read, opened without blocking (`crate::input`):
//! a metric naming a FIFO, `/dev/zero` or a directory fails its sample at
//! once with one line saying what the path is, instead of waiting for a
//! writer (a FIFO) or reading until memory runs out (`/dev/zero`). An
//! ELF file is never read whole: its header, its section headers and,
//! for a section named, the names in its section name table, each by
//! offset, so a 3 GB binary costs a few kilobytes.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Longest section name looked at (`.text`, `.rodata.str1.1`).
const MAX_SECTION_NAME: usize = 256;

/// A metric's file, open: a regular file, or why not.
fn open(path: &Path) -> Result<(File, u64), String> {
    crate::input::open(path).map_err(|r| match r {
        crate::input::Refused::Io(e) => e.to_string(),
        crate::input::Refused::NotFile(k) => {
            format!("{k}, not a regular file; a size metric reads a file the command wrote")
        }
        crate::input::Refused::TooBig(_) => unreachable!("open has no bound"),
    })
}

/// The `file` metric: the file's size in bytes.
pub fn file_size(path: &Path) -> Result<u64, String> {
    open(path).map(|(_, len)| len)
}

/// Sizes of an ELF64 file's sections: `text`, `data`, `bss` as size(1)
/// (Berkeley format) adds them up from the section flags, or the size of
/// the one section named (`.text`, `.rodata`).
pub fn elf_size(path: &Path, what: &str) -> Result<u64, String> {
    let (f, len) = open(path)?;
    let read = |off: u64, n: usize| -> Result<Vec<u8>, String> {
        if off.checked_add(n as u64).is_none_or(|end| end > len) {
            return Err("truncated ELF file".into());
        }
        let mut b = vec![0; n];
        f.read_exact_at(&mut b, off).map_err(|e| e.to_string())?;
        Ok(b)
    };
    if len < 64 {
        return Err("not an ELF file".into());
    }
    let head = read(0, 64)?;
    if &head[..4] != b"\x7fELF" {
        return Err("not an ELF file".into());
    }
    if head[4] != 2 {
        return Err("only 64-bit ELF files are supported".into());
    }
    let le = match head[5] {
        1 => true,
        2 => false,
        _ => return Err("bad ELF data encoding".into()),
    };
    let num = |s: &[u8]| -> u64 {
        let mut v = 0u64;
        for i in 0..s.len() {
            let byte = if le { s[s.len() - 1 - i] } else { s[i] };
            v = v << 8 | byte as u64;
        }
        v
    };
    let shoff = num(&head[0x28..0x30]);
    let shentsize = num(&head[0x3a..0x3c]);
    let shnum = num(&head[0x3c..0x3e]);
    let shstrndx = num(&head[0x3e..0x40]);
    if shentsize < 64 || shnum == 0 {
        return Err("no section headers".into());
    }
    struct Sh {
        name: u64,
        ty: u64,
        flags: u64,
        offset: u64,
        size: u64,
    }
    // At most 65535 headers of 64 bytes read: 4 MiB.
    let mut shs = Vec::with_capacity(shnum as usize);
    for i in 0..shnum {
        let at = shoff
            .checked_add(i * shentsize)
            .ok_or("truncated ELF file")?;
        let s = read(at, 64)?;
        shs.push(Sh {
            name: num(&s[0..4]),
            ty: num(&s[4..8]),
            flags: num(&s[8..16]),
            offset: num(&s[0x18..0x20]),
            size: num(&s[0x20..0x28]),
        });
    }
    const SHT_NOBITS: u64 = 8;
    const SHF_WRITE: u64 = 1;
    const SHF_ALLOC: u64 = 2;
    let sum = |f: &dyn Fn(&Sh) -> bool| {
        shs.iter()
            .filter(|s| s.flags & SHF_ALLOC != 0 && f(s))
            .fold(0u64, |a, s| a.saturating_add(s.size))
    };
    match what {
        "text" => Ok(sum(&|s| s.flags & SHF_WRITE == 0 && s.ty != SHT_NOBITS)),
        "data" => Ok(sum(&|s| s.flags & SHF_WRITE != 0 && s.ty != SHT_NOBITS)),
        "bss" => Ok(sum(&|s| s.ty == SHT_NOBITS)),
        name => {
            let strtab = shs.get(shstrndx as usize).ok_or("no section name table")?;
            for s in &shs {
                if s.name >= strtab.size {
                    continue;
                }
                let at = strtab.offset.saturating_add(s.name);
                let n = (strtab.size - s.name).min(MAX_SECTION_NAME as u64 + 1) as usize;
                let n = n.min(len.saturating_sub(at) as usize);
                let bytes = read(at, n).map_err(|_| "truncated section name table")?;
                let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
                if &bytes[..end] == name.as_bytes() {
                    return Ok(s.size);
                }
            }
            Err(format!("no section `{}`", crate::term::visible(name)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elf_text_matches_the_sum_of_read_only_sections() {
        let me = std::env::current_exe().unwrap();
        let text = elf_size(&me, "text").unwrap();
        let dot_text = elf_size(&me, ".text").unwrap();
        assert!(dot_text > 0 && text > dot_text, "{text} {dot_text}");
        assert!(elf_size(&me, ".no_such").is_err());
        assert!(elf_size(Path::new("/etc/hostname"), "text").is_err());
    }

    /// A FIFO with no writer, a device and a directory fail at once,
    /// naming what they are; nothing waits or reads them.
    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        for (p, what) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a character device"),
            (dir.path(), "a directory"),
        ] {
            let e = elf_size(p, "text").unwrap_err();
            assert!(e.starts_with(what), "{e}");
            let e = file_size(p).unwrap_err();
            assert!(e.starts_with(what), "{e}");
        }
        // A file cut short after its header is refused, not read past.
        let cut = dir.path().join("cut");
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        std::fs::write(&cut, &me[..4096]).unwrap();
        assert_eq!(elf_size(&cut, "text").unwrap_err(), "truncated ELF file");
        assert_eq!(file_size(&cut).unwrap(), 4096);
    }
}
