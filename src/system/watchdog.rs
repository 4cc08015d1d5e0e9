//! Process groups die with kbench, however kbench dies.
//!
//! A command benchmark runs in a process group of its own. When kbench ends
//! normally, or by Ctrl-C, it kills and reaps that group itself
//! (`bench::command::spawn_measured`). When kbench is killed with SIGKILL
//! (or crashes), nothing of kbench runs any more: the group's leader would be
//! re-parented to init and a world build would go on for an hour.
//! `PR_SET_PDEATHSIG` cannot help there: it reaches only the direct child, not
//! the grandchildren a `make -j` or a shell starts.
//!
//! So kbench starts one small watchdog process before its first command: a
//! fork that re-executes kbench's own binary as `kbench-watchdog` (a fresh
//! process, not a copy of kbench's memory, and not matched by a `pkill -f
//! 'kbench run'` aimed at kbench). It holds the read end of a pipe whose write end only kbench
//! holds (close-on-exec, so no command inherits it), and kbench writes each
//! group id it starts (+pgid) and ends (-pgid) into the pipe. When kbench
//! dies, the kernel closes the write end; the watchdog reads end-of-file,
//! kills every group still listed with SIGKILL and exits. When kbench exits
//! normally its groups are already gone and the list is empty.
//!
//! A process that left the group (`setsid`) is not in it: where kbench
//! could make its commands' cgroup (`system::linux`, as root), the
//! watchdog then kills everything in that cgroup too (`cgroup.kill`) and
//! removes it; as any user, it kills every process whose environment
//! carries kbench's mark (`system::container_mark`, set on every command). And
//! it removes kbench's scratch files and directories (`$TMPDIR/kbench-PID-*`),
//! which a killed kbench cannot.
//!
//! Between fork() and exec, a multi-threaded program's child may only make
//! async-signal-safe calls (signal, open, dup2, close_range, execv); if the
//! exec fails, the forked child watches itself with the same loop, which
//! uses only read, kill, open, write, rmdir, nanosleep and _exit and fixed
//! buffers prepared before the fork (it leaves the scratch files).

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Mutex;

/// The `argv[0]` that makes kbench's binary run as the watchdog.
pub const ARGV0: &std::ffi::CStr = c"kbench-watchdog";
/// The pipe's read end in the watchdog.
const FD: libc::c_int = 3;

/// Most process groups alive at once that the watchdog tracks.
const MAX_GROUPS: usize = 256;

static WRITER: Mutex<Option<OwnedFd>> = Mutex::new(None);

/// Set by kbench's own `main`, whose binary answers to [`ARGV0`].
static REEXEC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called by the `kbench` binary's `main`: the watchdog may re-execute
/// it. Any other program linking the library (a test harness, a program
/// embedding kbench) gets the forked copy instead: re-executed, it would
/// run that program again (a test binary ran its tests a second time).
pub fn binary_is_kbench() {
    REEXEC.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A registered process group: dropping it tells the watchdog the group is
/// gone (after it was killed and reaped).
pub struct Guarded(libc::pid_t);

impl Drop for Guarded {
    fn drop(&mut self) {
        send(-self.0);
    }
}

/// Register process group `pgid` with the watchdog, starting it the first
/// time. Without a watchdog (fork failed) the group is only killed by
/// kbench itself, as before; that is said once on stderr.
pub fn guard(pgid: libc::pid_t) -> Guarded {
    send(pgid);
    Guarded(pgid)
}

/// The write end of the watchdog's pipe (starting it the first time), for
/// [`register_self`] in a command's child before it execs; `None` without
/// a watchdog.
pub fn writer_fd() -> Option<libc::c_int> {
    let mut fd = None;
    with_writer(|w| fd = Some(w.as_raw_fd()));
    fd
}

/// In a forked child before exec (async-signal-safe: getpid and write):
/// register the child's own process group, so the group is known to the
/// watchdog before the command runs, even if kbench is killed between
/// its fork and [`registered`]. The pipe's write end is close-on-exec: the
/// command does not keep it.
pub fn register_self(fd: Option<libc::c_int>) {
    if let Some(fd) = fd {
        // SAFETY: getpid has no preconditions; the buffer is ours and `fd`
        // is the pipe's write end, inherited across fork.
        unsafe {
            let b = libc::getpid().to_ne_bytes();
            let _ = libc::write(fd, b.as_ptr().cast(), b.len());
        }
    }
}

/// The guard of a group the child registered itself ([`register_self`]):
/// dropping it tells the watchdog the group is gone.
pub fn registered(pgid: libc::pid_t) -> Guarded {
    Guarded(pgid)
}

/// Start the watchdog now, so its fork is not timed with a command's first
/// sample.
pub fn ready() {
    with_writer(|_| ());
}

fn send(msg: libc::pid_t) {
    with_writer(|fd| {
        let b = msg.to_ne_bytes();
        // A 4-byte write to a pipe is atomic; EPIPE (the watchdog is gone)
        // leaves only kbench's own clean-up, which still runs.
        // SAFETY: writing our buffer to our fd.
        let _ = unsafe { libc::write(fd.as_raw_fd(), b.as_ptr().cast(), b.len()) };
    });
}

fn with_writer(f: impl FnOnce(&OwnedFd)) {
    let mut w = WRITER.lock().unwrap_or_else(|e| e.into_inner());
    if w.is_none() {
        match start() {
            Ok(fd) => *w = Some(fd),
            Err(e) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!("kbench: warning: no watchdog for command process groups: {e}")
                });
                return;
            }
        }
    }
    if let Some(fd) = w.as_ref() {
        f(fd);
    }
}

/// What the watchdog cleans when kbench is gone, besides the groups: as
/// C strings made before the fork.
struct Leftovers {
    /// kbench's pid, its temporary directory, its commands' cgroup (or
    /// empty): the re-executed watchdog's arguments.
    pid: CString,
    tmp: CString,
    cgroup: CString,
    /// [`super::container_mark`], which every command's environment holds.
    mark: CString,
    /// `CGROUP/cgroup.kill`, for the forked copy.
    kill: CString,
}

impl Leftovers {
    fn now() -> std::io::Result<Leftovers> {
        let c =
            |s: &std::ffi::OsStr| CString::new(s.as_encoded_bytes()).map_err(std::io::Error::other);
        let cgroup = super::cgroup_dir().unwrap_or_default();
        Ok(Leftovers {
            pid: c(std::process::id().to_string().as_ref())?,
            tmp: c(std::env::temp_dir().as_os_str())?,
            kill: c(cgroup.join("cgroup.kill").as_os_str())?,
            cgroup: c(cgroup.as_os_str())?,
            mark: c(super::container_mark().as_ref())?,
        })
    }
}

/// Fork the watchdog; returns the write end of its pipe.
fn start() -> std::io::Result<OwnedFd> {
    let left = Leftovers::now()?;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: fds is a valid array of two ints.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both fds are fresh and ours.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let devnull = c"/dev/null";
    // The path is made before fork: the child may not allocate.
    let exe = std::ffi::CString::new(super::self_exe().into_os_string().into_encoded_bytes())
        .map_err(std::io::Error::other)?;
    let argv = [
        ARGV0.as_ptr(),
        left.pid.as_ptr(),
        left.tmp.as_ptr(),
        left.cgroup.as_ptr(),
        left.mark.as_ptr(),
        std::ptr::null(),
    ];
    let reexec = REEXEC.load(std::sync::atomic::Ordering::Relaxed);
    // SAFETY: fork; the child makes only async-signal-safe calls and never
    // returns.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => unsafe {
            // SAFETY: in the forked child only async-signal-safe calls follow, and it never returns.
            // Ctrl-C and hang-ups are for kbench, which cleans up itself;
            // the watchdog must outlive it. (Ignored signals stay ignored
            // across exec.)
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::signal(sig, libc::SIG_IGN);
            }
            // The pipe's read end goes to FD first, kept across exec (dup2
            // clears close-on-exec on the copy; when it already is FD, dup2
            // does nothing and fcntl must), so /dev/null below cannot land
            // on FD nor replace the pipe where it was in 0-2.
            if r.as_raw_fd() == FD {
                libc::fcntl(FD, libc::F_SETFD, 0);
            } else {
                libc::dup2(r.as_raw_fd(), FD);
            }
            // Hold no other file of kbench's open (a reader waiting for
            // kbench's stdout to end must not wait for the watchdog too).
            let null = libc::open(devnull.as_ptr(), libc::O_RDWR);
            if null >= 0 {
                for fd in 0..3 {
                    libc::dup2(null, fd);
                }
            }
            super::close_range(FD as u32 + 1, u32::MAX);
            // Only kbench's own binary knows ARGV0; in any other (a test
            // harness) watch in the forked copy.
            if reexec {
                libc::execv(exe.as_ptr(), argv.as_ptr());
            }
            watch(&left.cgroup, &left.kill);
            libc::_exit(0)
        },
        _ => Ok(w),
    }
}

/// `kbench-watchdog PID TMPDIR CGROUP MARK`: the re-executed binary's
/// whole life.
pub fn main() -> ! {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let cgroup = CString::new(arg(3).as_encoded_bytes()).unwrap_or_default();
    let kill = CString::new(
        std::path::Path::new(&arg(3))
            .join("cgroup.kill")
            .as_os_str()
            .as_encoded_bytes(),
    )
    .unwrap_or_default();
    watch(&cgroup, &kill);
    // What left the groups (`setsid`) and, without root, has no cgroup to
    // be found in still carries kbench's mark in its environment.
    super::kill_marked(&arg(4).to_string_lossy());
    // kbench is gone: its scratch files and directories go too.
    let prefix = format!("kbench-{}-", arg(1).to_string_lossy());
    let tmp = std::path::PathBuf::from(arg(2));
    if !arg(1).is_empty()
        && let Ok(dir) = std::fs::read_dir(&tmp)
    {
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let p = e.path();
                let _ = std::fs::remove_dir_all(&p).or_else(|_| std::fs::remove_file(&p));
            }
        }
    }
    // SAFETY: ending the process.
    unsafe { libc::_exit(0) }
}

/// Read group ids from [`FD`] until end of file, then kill the groups
/// still listed and everything in the commands' cgroup (`cgroup`, empty
/// when there is none), and remove that cgroup. Async-signal-safe calls
/// only.
///
/// The watchdog sleeps in `poll` asking for no event: only the end of
/// the pipe (POLLHUP: kbench is gone) wakes it, not a group's message, so
/// a sample's registration costs the command no switch to the watchdog on
/// its CPU. It drains the messages once a second (the pipe holds 16,384)
/// and at the end.
fn watch(cgroup: &CStr, kill: &CStr) {
    let mut groups = [0 as libc::pid_t; MAX_GROUPS];
    let mut buf = [0u8; 4];
    // SAFETY: plain syscalls on integers and our own buffers.
    unsafe {
        let flags = libc::fcntl(FD, libc::F_GETFL);
        libc::fcntl(FD, libc::F_SETFL, flags | libc::O_NONBLOCK);
        loop {
            let n = libc::read(FD, buf.as_mut_ptr().cast(), 4);
            if n == 4 {
                let msg = libc::pid_t::from_ne_bytes(buf);
                if msg > 0 {
                    if let Some(slot) = groups.iter_mut().find(|g| **g == 0) {
                        *slot = msg;
                    }
                } else if let Some(slot) = groups.iter_mut().find(|g| **g == -msg) {
                    *slot = 0;
                }
                continue;
            }
            if n < 0 && super::errno() == libc::EINTR {
                continue;
            }
            if n < 0 && super::errno() == libc::EAGAIN {
                let mut p = libc::pollfd {
                    fd: FD,
                    events: 0,
                    revents: 0,
                };
                libc::poll(&mut p, 1, 1000);
                continue;
            }
            // End of file (or FD was never ours): kbench is gone.
            for &g in groups.iter().filter(|g| **g > 0) {
                libc::kill(-g, libc::SIGKILL);
            }
            if !cgroup.is_empty() {
                let fd = libc::open(kill.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd >= 0 {
                    libc::write(fd, b"1".as_ptr().cast(), 1);
                    libc::close(fd);
                }
                // Removable once its last process has exited.
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 10_000_000,
                };
                for _ in 0..200 {
                    if libc::rmdir(cgroup.as_ptr()) == 0 || super::errno() == libc::ENOENT {
                        break;
                    }
                    libc::nanosleep(&pause, std::ptr::null_mut());
                }
            }
            return;
        }
    }
}
