//! Process and thread creation: fork+exit, fork+exec, posix_spawn and
//! pthread_create (lmbench lat_proc, unixbench spawn/execl).
//!
//! The exec benchmarks run, by default, a 129-byte static ELF that kbench
//! writes to a temporary file: it only calls exit(0), so the measurement is
//! the kernel's exec (mm teardown and setup, ELF loading) without the
//! dynamic loader and libc start-up that /bin/true adds.

use anyhow::{Context, bail};
use std::ffi::CString;
use std::hint::black_box;
use std::os::unix::fs::PermissionsExt;

use super::common::{PageBuf, TempFile, WithNotes, errno, keep};
use super::micro;
use super::{CPU_PARAM, LoopInstance};
use crate::bench::{Instance, ParamDef, ParamType, Params, RunSettings};

fn cpu_of(p: &Params) -> Option<usize> {
    p.opt_int("cpu").map(|c| c as usize)
}

const MEM: ParamDef = ParamDef {
    name: "mem",
    ty: ParamType::Size {
        min: 0,
        max: 1 << 36,
    },
    default: Some("0"),
    help: "anonymous memory kbench maps and touches before forking (page tables fork copies)",
};

const PROGRAM: ParamDef = ParamDef {
    name: "program",
    ty: ParamType::Str,
    default: Some("static"),
    help: "what to exec: `static` (a 129-byte static ELF that exits 0) or a path such as /bin/true",
};

/// A minimal static ELF executable for this OS and architecture whose
/// only instructions are exit(0); `None` on architectures without one
/// here. The OS gives the ELF OS/ABI byte it accepts and the number of
/// its exit system call.
pub fn tiny_elf() -> Option<Vec<u8>> {
    let (osabi, exit) = crate::system::static_exit_abi();
    let mut code = Vec::new();
    let machine: u16 = if cfg!(target_arch = "x86_64") {
        // mov eax, EXIT; xor edi, edi; syscall
        code.push(0xb8);
        code.extend_from_slice(&exit.to_le_bytes());
        code.extend_from_slice(&[0x31, 0xff, 0x0f, 0x05]);
        62
    } else if cfg!(target_arch = "aarch64") && exit < 1 << 16 {
        // mov x0, #0; mov x8, #EXIT (movz, imm16 at bit 5); svc #0
        code.extend_from_slice(&0xd280_0000u32.to_le_bytes());
        code.extend_from_slice(&(0xd280_0008u32 | exit << 5).to_le_bytes());
        code.extend_from_slice(&0xd400_0001u32.to_le_bytes());
        183
    } else {
        return None;
    };
    let base: u64 = 0x40_0000;
    let hdr = 64 + 56;
    let size = (hdr + code.len()) as u64;
    let mut e = Vec::with_capacity(size as usize);
    e.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, osabi]);
    e.extend_from_slice(&[0; 8]);
    e.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    e.extend_from_slice(&machine.to_le_bytes());
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&(base + hdr as u64).to_le_bytes()); // entry
    e.extend_from_slice(&64u64.to_le_bytes()); // phoff
    e.extend_from_slice(&0u64.to_le_bytes()); // shoff
    e.extend_from_slice(&0u32.to_le_bytes()); // flags
    e.extend_from_slice(&64u16.to_le_bytes()); // ehsize
    e.extend_from_slice(&56u16.to_le_bytes()); // phentsize
    e.extend_from_slice(&1u16.to_le_bytes()); // phnum
    e.extend_from_slice(&[0; 6]); // shentsize, shnum, shstrndx
    e.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    e.extend_from_slice(&5u32.to_le_bytes()); // R+X
    e.extend_from_slice(&0u64.to_le_bytes()); // offset
    e.extend_from_slice(&base.to_le_bytes()); // vaddr
    e.extend_from_slice(&base.to_le_bytes()); // paddr
    e.extend_from_slice(&size.to_le_bytes()); // filesz
    e.extend_from_slice(&size.to_le_bytes()); // memsz
    e.extend_from_slice(&0x1000u64.to_le_bytes()); // align
    e.extend_from_slice(&code);
    Some(e)
}

/// argv/envp for execve, kept with the strings they point into.
struct ExecArgs {
    _path: CString,
    path_ptr: *const libc::c_char,
    argv: [*const libc::c_char; 2],
    envp: [*const libc::c_char; 1],
}

// SAFETY: the pointers point into `_path`, which moves with the struct
// (CString's heap buffer does not move).
unsafe impl Send for ExecArgs {}

impl ExecArgs {
    fn new(path: CString) -> ExecArgs {
        let p = path.as_ptr();
        ExecArgs {
            _path: path,
            path_ptr: p,
            argv: [p, std::ptr::null()],
            envp: [std::ptr::null()],
        }
    }
}

/// The program to exec: the tiny ELF in a temporary file, or a path.
fn program(p: &Params) -> anyhow::Result<(ExecArgs, Option<TempFile>, String)> {
    let prog = p.str("program");
    if prog != "static" {
        let c = CString::new(prog).context("program path")?;
        return Ok((ExecArgs::new(c), None, prog.to_string()));
    }
    let Some(elf) = tiny_elf() else {
        bail!("no built-in static program for this architecture: use program=/bin/true");
    };
    let t = TempFile::create(None, 0, 0o700)?;
    std::fs::write(&t.path, &elf)?;
    std::fs::set_permissions(&t.path, std::fs::Permissions::from_mode(0o700))?;
    let desc = format!(
        "built-in static exit(0), {} bytes, at {}",
        elf.len(),
        t.path.display()
    );
    Ok((ExecArgs::new(t.c_path()), Some(t), desc))
}

/// Wait for a child; its exit code, or 128+signal.
fn wait(pid: libc::pid_t) -> i32 {
    let mut st = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 || errno() != libc::EINTR {
            break;
        }
    }
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else {
        128 + libc::WTERMSIG(st)
    }
}

/// fork; the child execs `a` (or exits 127); returns the child's code.
fn fork_exec(a: &ExecArgs) -> i32 {
    // SAFETY: the child only calls execve and _exit.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: argv/envp are NULL-terminated arrays of valid strings.
        unsafe {
            libc::execve(a.path_ptr, a.argv.as_ptr(), a.envp.as_ptr());
            libc::_exit(127);
        }
    }
    if pid < 0 {
        return -1;
    }
    wait(pid)
}

fn spawn(a: &ExecArgs) -> i32 {
    let mut pid = 0;
    // SAFETY: valid NULL-terminated argv/envp; no file actions or attrs.
    let r = unsafe {
        libc::posix_spawn(
            &mut pid,
            a.path_ptr,
            std::ptr::null(),
            std::ptr::null(),
            a.argv.as_ptr() as *const *mut libc::c_char,
            a.envp.as_ptr() as *const *mut libc::c_char,
        )
    };
    if r != 0 {
        return -1;
    }
    wait(pid)
}

/// Run `f` once before measuring, so a program that cannot be executed is
/// an error now (retried briefly: a just-written file can be ETXTBSY while
/// another thread's fork still holds it open).
/// fork-exec and posix-spawn: run `program` once to prove it works, then
/// time `start` (which starts it and waits for it) in a loop.
fn exec_instance(
    p: &Params,
    s: &RunSettings,
    // Generic, not a fn pointer: the loop calls `start` directly.
    start: impl Fn(&ExecArgs) -> i32 + Copy + Send + 'static,
) -> anyhow::Result<Box<dyn Instance>> {
    let (args, file, desc) = program(p)?;
    check_runs(|| start(&args), &desc)?;
    let ballast = ballast(p)?;
    let op = move || {
        black_box(start(&args));
    };
    Ok(Box::new(WithNotes {
        inner: Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
        notes: vec![("program".into(), desc)],
        keep: keep((file, ballast)),
    }))
}

fn check_runs(f: impl Fn() -> i32, what: &str) -> anyhow::Result<()> {
    let mut code = 0;
    for _ in 0..50 {
        code = f();
        if code == 0 {
            return Ok(());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    bail!(
        "{what} exited with {code} (127: could not be executed; a noexec temporary directory? try program=/bin/true)"
    )
}

fn check_program(p: &Params) -> Result<(), String> {
    let prog = p.str("program");
    if prog == "static" {
        return Ok(());
    }
    let ok = std::fs::metadata(prog)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "program `{prog}` is not an executable file (use `static` or a path such as /bin/true)"
        ))
    }
}

/// Optional ballast: `mem` bytes mapped and touched.
fn ballast(p: &Params) -> anyhow::Result<Option<PageBuf>> {
    let mem = p.int("mem") as usize;
    Ok(if mem > 0 {
        Some(PageBuf::new(mem, 1)?)
    } else {
        None
    })
}

pub struct ForkExit;
const FORK_PARAMS: &[ParamDef] = &[MEM, CPU_PARAM];

micro! {
    ForkExit, "fork-exit",
    "lmbench lat_proc fork: fork(), the child _exit(0)s at once, the parent waitpid()s. The kernel copies the task, its file table and its page tables (copy-on-write, which grows with `mem`), then tears the child's mm down and wakes the parent. ns per fork+exit+wait. Single party: the child inherits the parent's CPU set (pinned to `cpu` if given)",
    params = FORK_PARAMS,
    metrics = super::NS_PER_OP;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let ballast = ballast(p)?;
        let op = || {
            // SAFETY: the child only calls _exit.
            let pid = unsafe { libc::fork() };
            if pid == 0 {
                // SAFETY: leaving the child at once.
                unsafe { libc::_exit(0) };
            }
            if pid > 0 {
                black_box(wait(pid));
            }
        };
        Ok(Box::new(WithNotes {
            inner: Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)),
            notes: vec![("mem".into(), p.int("mem").to_string())],
            keep: keep(ballast),
        }))
    }
}

pub struct ForkExec;
const EXEC_PARAMS: &[ParamDef] = &[PROGRAM, MEM, CPU_PARAM];

micro! {
    ForkExec, "fork-exec",
    "lmbench lat_proc exec: fork(), the child execve()s `program`, which exits 0, the parent waitpid()s. On top of fork-exit the kernel opens and maps the executable, discards the copied mm and builds a new one (binfmt_elf). The default program is a 129-byte static ELF, so no dynamic loading is timed. ns per fork+exec+exit+wait. Single party (inherits kbench's CPU set, or `cpu`)",
    params = EXEC_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_program(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        exec_instance(p, s, fork_exec)
    }
}

pub struct PosixSpawn;
const SPAWN_PARAMS: &[ParamDef] = &[PROGRAM, MEM, CPU_PARAM];

micro! {
    PosixSpawn, "posix-spawn",
    "posix_spawn() of `program` and waitpid(): glibc uses clone(CLONE_VM|CLONE_VFORK), so no page tables are copied (unlike fork-exec) and the parent sleeps until the exec. ns per spawn+exit+wait. Single party (inherits kbench's CPU set, or `cpu`)",
    params = SPAWN_PARAMS,
    metrics = super::NS_PER_OP;
    fn check(&self, p: &Params) -> Result<(), String> {
        check_program(p)
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        exec_instance(p, s, spawn)
    }
}

extern "C" fn nothing(_: *mut libc::c_void) -> *mut libc::c_void {
    std::ptr::null_mut()
}

pub struct ThreadCreate;
const THREAD_PARAMS: &[ParamDef] = &[CPU_PARAM];

micro! {
    ThreadCreate, "thread-create",
    "pthread_create() of a thread that returns at once, then pthread_join(): clone(CLONE_VM|CLONE_THREAD|...) shares the mm, so the kernel only creates a task (and glibc reuses a cached stack); the join waits on the futex the kernel clears at exit. ns per create+join. Single party (the thread inherits kbench's CPU set, or `cpu`)",
    params = THREAD_PARAMS,
    metrics = super::NS_PER_OP;
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let op = || {
            let mut t: libc::pthread_t = 0;
            // SAFETY: default attributes; `nothing` ignores its argument.
            unsafe {
                if libc::pthread_create(&mut t, std::ptr::null(), nothing, std::ptr::null_mut())
                    == 0
                {
                    libc::pthread_join(t, std::ptr::null_mut());
                }
            }
        };
        Ok(Box::new(LoopInstance::new(op, cpu_of(p), s.sample_time)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::testing::{least, note, run, serial};
    use super::*;

    #[test]
    fn the_tiny_elf_runs_and_exits_zero() {
        let _g = serial();
        let p = crate::bench::Params::resolve(&ForkExec, &[]).unwrap();
        let (args, file, desc) = program(&p).unwrap();
        assert!(file.is_some() && desc.contains("static exit(0)"), "{desc}");
        check_runs(|| fork_exec(&args), &desc).unwrap();
        check_runs(|| spawn(&args), &desc).unwrap();
    }

    #[test]
    fn process_creation_costs_are_sane() {
        let _g = serial();
        let (fork, _) = run(&ForkExit, &[], 3);
        let (exec, inst) = run(&ForkExec, &[], 3);
        let (spawn, _) = run(&PosixSpawn, &[], 3);
        let (thread, _) = run(&ThreadCreate, &[], 3);
        let (fork, exec, spawn, thread) =
            (least(&fork), least(&exec), least(&spawn), least(&thread));
        assert!(fork > 5_000.0 && fork < 1e8, "fork {fork}");
        // exec includes a fork, but on a saturated machine both are
        // dominated by waiting for the child to be scheduled: no relation.
        assert!(exec > 5_000.0 && exec < 1e8, "exec {exec}");
        assert!(spawn > 5_000.0 && spawn < 1e8, "spawn {spawn}");
        assert!(thread > 1_000.0 && thread < 1e8, "thread {thread}");
        assert!(note(&*inst, "program").contains("static"));
        // A thread is cheaper than a process, unless the machine is so
        // busy that both wait milliseconds for the child to be scheduled
        // (a full CI run beside a release build: thread 3.98 ms, fork
        // 2.64 ms; another: thread 3.2 ms, fork 0.85 ms, a burst on one
        // side only). So the pair is measured again, back to back, up to
        // three times: a thread that is never cheaper fails.
        let mut seen = Vec::new();
        for _ in 0..3 {
            let thread = least(&run(&ThreadCreate, &[], 3).0);
            let fork = least(&run(&ForkExit, &[], 3).0);
            if thread < fork || fork > 1e6 {
                return;
            }
            seen.push((thread, fork));
        }
        panic!("a thread cost more than a fork each time (ns): {seen:?}");
    }

    #[test]
    fn fork_with_ballast_costs_more() {
        let _g = serial();
        let (small, _) = run(&ForkExit, &[], 3);
        let (big, _) = run(&ForkExit, &[("mem", "256m")], 3);
        assert!(least(&big) > least(&small), "{big:?} vs {small:?}");
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let e = super::super::common::testing::params(&ForkExec, &[("program", "/nonexistent/x")])
            .unwrap_err();
        assert!(
            e.contains("/nonexistent/x") && e.contains("not an executable"),
            "{e}"
        );
        super::super::common::testing::params(&PosixSpawn, &[("program", "/bin/sh")]).unwrap();
    }
}
