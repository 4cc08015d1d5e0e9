//! FreeBSD: the fingerprint and probes from sysctl(3) (their text turned
//! into kbench's types in `freebsd_parse.rs`), affinity through
//! cpuset_setaffinity(2), futex-like waits through _umtx_op(2), process
//! control through procctl(2), thread ids through thr_self(2), exit
//! notification through kqueue(2), loader variables through kenv(2), and
//! the microcode revision through cpuctl(4) where it is loaded.
//!
//! Compiled and linked for FreeBSD in CI; not run there (no FreeBSD host),
//! which is why everything that parses lives in `freebsd_parse.rs`, whose
//! tests run everywhere on real FreeBSD outputs.

use std::collections::BTreeSet;
use std::ffi::{CString, c_int, c_long, c_void};
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::AtomicU32;

use super::freebsd_parse as parse;
use super::probe::Probe;
use super::{CpuTopo, Feature, Fingerprint, FutexOp, Hazard, Os, ProcState, cvt};
use crate::units::CpuSet;

/// The FreeBSD backend of [`Os`].
pub struct FreeBsd;

/// sys/sysctl.h: the longest OID.
const CTL_MAXNAME: usize = 24;
/// sys/syscall.h.
const SYS_GETPPID: c_int = 39;
const SYS_EXIT: u32 = 1;
/// sys/signal.h: the first real-time signal.
const SIGRTMIN: c_int = 65;
/// machine/cpufunc.h MSR_BIOS_SIGN: the microcode revision (Intel) or
/// patch level (AMD).
const MSR_BIOS_SIGN: c_int = 0x8b;
/// sys/cpuctl.h: `_IOWR('c', 1, cpuctl_msr_args_t)`.
const CPUCTL_RDMSR: libc::c_ulong = 0xc010_6301;

/// sys/cpuctl.h `cpuctl_msr_args_t`.
#[repr(C)]
struct MsrArgs {
    msr: c_int,
    data: u64,
}

fn set_errno(e: c_int) {
    // SAFETY: __error returns the calling thread's errno.
    unsafe { *libc::__error() = e };
}

/// The OID of sysctl `name`.
fn name2oid(name: &str) -> Option<Vec<c_int>> {
    let query = [libc::CTL_SYSCTL, libc::CTL_SYSCTL_NAME2OID];
    let mut oid = [0 as c_int; CTL_MAXNAME];
    let mut len = std::mem::size_of_val(&oid);
    // SAFETY: the kernel writes at most `len` bytes into `oid` and reads
    // `name.len()` bytes of the name.
    let r = unsafe {
        libc::sysctl(
            query.as_ptr(),
            2,
            oid.as_mut_ptr().cast(),
            &mut len,
            name.as_ptr().cast(),
            name.len(),
        )
    };
    (r == 0).then(|| oid[..len / std::mem::size_of::<c_int>()].to_vec())
}

/// The kind and format string of the sysctl at `oid`.
fn oidfmt(oid: &[c_int]) -> Option<(u32, String)> {
    let mut query = vec![libc::CTL_SYSCTL, libc::CTL_SYSCTL_OIDFMT];
    query.extend_from_slice(oid);
    let mut buf = [0u8; 256];
    let mut len = buf.len();
    // SAFETY: as above.
    let r = unsafe {
        libc::sysctl(
            query.as_ptr(),
            query.len() as libc::c_uint,
            buf.as_mut_ptr().cast(),
            &mut len,
            std::ptr::null(),
            0,
        )
    };
    if r != 0 || len < 4 {
        return None;
    }
    let kind = u32::from_ne_bytes(buf[..4].try_into().ok()?);
    let fmt = &buf[4..len];
    let end = fmt.iter().position(|&b| b == 0).unwrap_or(fmt.len());
    Some((kind, String::from_utf8_lossy(&fmt[..end]).into_owned()))
}

/// The raw bytes of the sysctl at `mib`.
fn raw(mib: &[c_int]) -> Option<Vec<u8>> {
    for _ in 0..4 {
        let mut len = 0;
        // SAFETY: a size query writes only `len`.
        let r = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                mib.len() as libc::c_uint,
                std::ptr::null_mut(),
                &mut len,
                std::ptr::null(),
                0,
            )
        };
        if r != 0 {
            return None;
        }
        // Room for a value that grows between the two calls.
        let mut buf = vec![0u8; len + len / 4 + 64];
        let mut got = buf.len();
        // SAFETY: the kernel writes at most `got` bytes into `buf`.
        let r = unsafe {
            libc::sysctl(
                mib.as_ptr(),
                mib.len() as libc::c_uint,
                buf.as_mut_ptr().cast(),
                &mut got,
                std::ptr::null(),
                0,
            )
        };
        if r == 0 {
            buf.truncate(got);
            return Some(buf);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOMEM) {
            return None;
        }
    }
    None
}

/// Sysctl `name` as `sysctl -n` prints it.
fn sysctl(name: &str) -> Option<String> {
    let oid = name2oid(name)?;
    let (kind, fmt) = oidfmt(&oid)?;
    parse::format_value(kind, &fmt, &raw(&oid)?).map(|v| v.trim_end().to_string())
}

/// The kinfo_proc records of process `pid`: one, or one per thread.
fn procs(pid: libc::pid_t, threads: bool) -> Vec<libc::kinfo_proc> {
    let mut what = libc::KERN_PROC_PID;
    if threads {
        what |= libc::KERN_PROC_INC_THREAD;
    }
    kinfo(&[libc::CTL_KERN, libc::KERN_PROC, what, pid])
}

/// The kinfo_proc records sysctl `mib` returns.
fn kinfo(mib: &[c_int]) -> Vec<libc::kinfo_proc> {
    let Some(buf) = raw(mib) else {
        return Vec::new();
    };
    let size = std::mem::size_of::<libc::kinfo_proc>();
    buf.chunks_exact(size)
        // SAFETY: the kernel wrote whole kinfo_proc records (checked by
        // their own size field below); read_unaligned copies one.
        .map(|c| unsafe { std::ptr::read_unaligned(c.as_ptr().cast::<libc::kinfo_proc>()) })
        .filter(|k| k.ki_structsize as usize == size)
        .collect()
}

/// The boot time (`kern.boottime`).
fn boottime() -> Option<libc::timeval> {
    // SAFETY: timeval is plain data the kernel fills.
    let mut tv: libc::timeval = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of_val(&tv);
    // SAFETY: the kernel writes at most `len` bytes into `tv`.
    let r = unsafe {
        libc::sysctlbyname(
            c"kern.boottime".as_ptr(),
            (&raw mut tv).cast(),
            &mut len,
            std::ptr::null(),
            0,
        )
    };
    (r == 0).then_some(tv)
}

fn micros(tv: &libc::timeval) -> i64 {
    tv.tv_sec * 1_000_000 + tv.tv_usec
}

/// The scheduler's topology groups.
fn topology() -> Option<Vec<parse::Group>> {
    parse::parse_topology_spec(&sysctl("kern.sched.topology_spec")?).ok()
}

/// Loader variable `name` (kenv(2)).
fn kenv(name: &str) -> Option<String> {
    let name = CString::new(name).ok()?;
    let mut buf = [0u8; 1024]; // KENV_MVALLEN + 1
    // SAFETY: the kernel writes at most buf.len() bytes.
    let n = unsafe {
        libc::kenv(
            libc::KENV_GET,
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len() as c_int,
        )
    };
    if n < 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The microcode revision of CPU 0, through cpuctl(4) (root, module
/// loaded).
fn microcode() -> Option<String> {
    let (vendor, ..) = super::cpuid::signature()?;
    // SAFETY: opening a device read-only.
    let fd = unsafe { libc::open(c"/dev/cpuctl0".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: a descriptor we just opened.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut args = MsrArgs {
        msr: MSR_BIOS_SIGN,
        data: 0,
    };
    use std::os::fd::AsRawFd;
    // SAFETY: CPUCTL_RDMSR reads and writes one cpuctl_msr_args_t.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), CPUCTL_RDMSR, &mut args) };
    (r == 0).then(|| parse::microcode_revision(&vendor, args.data))
}

/// SMT sibling pairs that were both more than half busy over `window`
/// (per-CPU ticks of `kern.cp_times`).
fn busy_smt_pairs(topo: &[CpuTopo], window: std::time::Duration) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for a in topo {
        for b in topo {
            if a.cpu < b.cpu && (a.package, a.core) == (b.package, b.core) {
                pairs.push((a.cpu, b.cpu));
            }
        }
    }
    super::busy_pairs(pairs, window, || {
        let text = sysctl("kern.cp_times").unwrap_or_default();
        let per_cpu = parse::cp_times(&text).into_iter().enumerate();
        per_cpu
            .map(|(cpu, (busy, total))| (cpu, busy, total))
            .collect()
    })
}

fn fingerprint() -> Fingerprint {
    let online = FreeBsd::online_cpus();
    let mut fp = parse::fingerprint(&sysctl, &online);
    fp.hostname = FreeBsd::hostname();
    fp.os_release =
        super::os_release_name().or_else(|| Some(format!("{} {}", fp.os, fp.kernel_release)));
    if let Some((vendor, family, model, stepping)) = super::cpuid::signature() {
        fp.cpu_vendor = Some(vendor);
        (fp.cpu_family, fp.cpu_model_number, fp.cpu_stepping) =
            (Some(family), Some(model), Some(stepping));
    }
    fp.cpu_flags = super::cpuid::flags();
    // kern.vm_guest names the hypervisors the kernel knows; the CPU's
    // signature names the others.
    if fp.hypervisor.as_deref() == Some("generic") {
        fp.hypervisor = super::cpuid::hypervisor_vendor().or(fp.hypervisor);
    }
    fp.microcode = microcode();
    let mut load = [0f64; 3];
    // SAFETY: getloadavg fills at most 3 doubles of our array.
    if unsafe { libc::getloadavg(load.as_mut_ptr(), 3) } == 3 {
        fp.loadavg = load;
    }
    let topo = FreeBsd::cpu_topology(&online);
    fp.busy_smt_pairs = busy_smt_pairs(&topo, std::time::Duration::from_millis(100));
    fp
}

fn read_probe(p: &Probe) -> Option<String> {
    match p {
        Probe::KernelRelease => sysctl("kern.osrelease"),
        Probe::KernelVersion => {
            sysctl("kern.version").and_then(|v| v.lines().next().map(|l| l.trim().to_string()))
        }
        // No kernel command line: the loader's variables (loader.conf,
        // the boot prompt) are what a boot option is.
        Probe::Cmdline(name) => kenv(name).map(|v| {
            if v.is_empty() {
                "present".to_string()
            } else {
                v
            }
        }),
        // No vulnerabilities directory: plans read the mitigation sysctls
        // (`sysctl.vm.pmap.pti`, `sysctl.hw.mds_disable_state`).
        Probe::Vuln(_) => None,
        Probe::CpuFlag(flag) => super::cpuid::flags()
            .iter()
            .any(|f| f == flag)
            .then(|| "present".to_string()),
        Probe::Microcode => microcode(),
        Probe::Sysctl(name) => sysctl(name),
        Probe::Smt => sysctl("machdep.hyperthreading_allowed").map(|v| parse::smt_word(&v).into()),
        Probe::Thp => sysctl("vm.pmap.pg_ps_enabled").map(|v| parse::thp_word(&v).into()),
        Probe::Governor => None,
        Probe::OnlineCpus => Some(FreeBsd::online_cpus().to_string()),
        Probe::Command(_) => None,
    }
}

/// procctl(2) on this process; `arg` is the int the command reads or
/// writes, `None` for commands that take no data (they refuse any).
fn procctl(cmd: c_int, arg: Option<&mut c_int>) -> std::io::Result<()> {
    let data: *mut c_void = arg.map_or(std::ptr::null_mut(), |a| (a as *mut c_int).cast());
    // SAFETY: the commands used here read or write at most one int.
    cvt(unsafe { libc::procctl(libc::P_PID, libc::getpid() as libc::id_t, cmd, data) })
}

#[cfg(target_arch = "x86_64")]
unsafe extern "C" {
    // libc's, on amd64 only; not in the libc crate.
    #[link_name = "brk"]
    fn libc_brk(addr: *const c_void) -> c_int;
    #[link_name = "sbrk"]
    fn libc_sbrk(incr: libc::intptr_t) -> *mut c_void;
}

/// libc's brk and sbrk, which only amd64 has.
impl FreeBsd {
    #[inline(always)]
    unsafe fn brk(addr: *mut c_void) -> c_int {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller moves the break only where nothing lives.
        return unsafe { libc_brk(addr) };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = addr;
            set_errno(libc::ENOSYS);
            -1
        }
    }

    #[inline(always)]
    unsafe fn sbrk(incr: libc::intptr_t) -> *mut c_void {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        return unsafe { libc_sbrk(incr) };
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = incr;
            set_errno(libc::ENOSYS);
            usize::MAX as *mut c_void
        }
    }
}

impl Os for FreeBsd {
    /// FreeBSD's pthread.h.
    const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 2;
    const ELF_OSABI: u8 = 9; // ELFOSABI_FREEBSD
    const EXIT_SYSCALL: u32 = SYS_EXIT;

    fn hostname() -> String {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most buf.len() bytes.
        if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
            return "unknown".into();
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(&buf[..end]).trim().to_string();
        if name.is_empty() {
            "unknown".into()
        } else {
            name
        }
    }

    fn fingerprint() -> Fingerprint {
        fingerprint()
    }

    /// Every CPU the scheduler's topology names (numbering may have
    /// holes), else 0..hw.ncpu.
    fn online_cpus() -> CpuSet {
        if let Some(g) = topology() {
            let cpus = parse::topology_cpus(&g);
            if !cpus.0.is_empty() {
                return cpus;
            }
        }
        let n: usize = sysctl("hw.ncpu").and_then(|v| v.parse().ok()).unwrap_or(1);
        CpuSet((0..n.max(1)).collect())
    }

    fn cpu_topology(cpus: &CpuSet) -> Vec<CpuTopo> {
        parse::shape(&topology().unwrap_or_default(), cpus).cpus
    }

    fn cpu_ticks() -> Option<(u64, u64)> {
        parse::cp_time_ticks(&sysctl("kern.cp_time")?)
    }

    /// The highest of `dev.cpu.0.freq_levels`, else `hw.clockrate`.
    fn max_cpu_hz() -> Option<f64> {
        let mhz = sysctl("dev.cpu.0.freq_levels")
            .and_then(|l| parse::max_freq_mhz(&l))
            .or_else(|| sysctl("hw.clockrate")?.parse().ok())?;
        (mhz > 0).then(|| f64::from(mhz) * 1e6)
    }

    fn read_probe(p: &Probe) -> Option<String> {
        read_probe(p)
    }

    fn remedy(h: Hazard) -> &'static str {
        match h {
            Hazard::Governor => {
                "service powerd stop, then sysctl dev.cpu.0.freq=<the highest non-turbo level of dev.cpu.0.freq_levels>"
            }
            Hazard::Boost => {
                "sysctl dev.cpu.0.freq=<the second level of dev.cpu.0.freq_levels> (the first, base + 1 MHz, is turbo)"
            }
            Hazard::Smt => {
                "leave the sibling of each measuring CPU idle, or disable SMT (machdep.hyperthreading_allowed=0 in /boot/loader.conf)"
            }
        }
    }

    fn unavailable(f: Feature) -> Option<&'static str> {
        Some(match f {
            Feature::PipeResize => {
                "FreeBSD sizes pipe buffers itself (16 KiB, 64 KiB for large writes): there is no F_SETPIPE_SZ"
            }
            Feature::Splice => "FreeBSD has no splice(2)",
            Feature::Vmsplice => "FreeBSD has no vmsplice(2)",
        })
    }

    fn start_profiler(_pid: u32) -> Result<Box<dyn super::profiler::Profiler>, String> {
        Err("--profile: not supported on FreeBSD yet (hwpmc/dtrace sampling is not used)".into())
    }

    fn open_counters(kinds: &[super::counters::Counter]) -> super::counters::Opened {
        super::counters::Opened {
            group: None,
            missing: if kinds.is_empty() {
                Vec::new()
            } else {
                vec!["counters: not available on FreeBSD (no perf_event_open(2); hwpmc is not used yet)".into()]
            },
        }
    }

    /// The boot is `kern.boottime` (seconds; a clock step after boot moves
    /// it), the start the process's start in microseconds after boot.
    fn owner(pid: u32) -> Option<crate::record::Owner> {
        let boot = boottime()?;
        let k = procs(pid as libc::pid_t, false).into_iter().next()?;
        let start = micros(&k.ki_start) - micros(&boot);
        Some(crate::record::Owner {
            pid,
            start: start.max(0) as u64,
            boot_id: format!("boottime {}", boot.tv_sec),
        })
    }

    fn process_state(pid: libc::pid_t) -> ProcState {
        let threads = procs(pid, true);
        if threads
            .iter()
            .any(|k| !matches!(k.ki_stat, libc::SSTOP | libc::SZOMB))
        {
            ProcState::Running
        } else if threads.iter().any(|k| k.ki_stat == libc::SSTOP) {
            ProcState::Stopped
        } else {
            ProcState::Gone
        }
    }

    fn thread_alive(pid: libc::pid_t, tid: libc::pid_t) -> bool {
        procs(pid, true)
            .iter()
            .any(|k| k.ki_tid == tid && k.ki_stat != libc::SZOMB)
    }

    fn last_cpu(pid: libc::pid_t) -> Option<usize> {
        let k = procs(pid, false).into_iter().next()?;
        usize::try_from(k.ki_lastcpu).ok()
    }

    fn thread_count() -> Option<usize> {
        // SAFETY: getpid has no preconditions.
        let k = procs(unsafe { libc::getpid() }, false).into_iter().next()?;
        usize::try_from(k.ki_numthreads).ok()
    }

    /// The binary's path (`kern.proc.pathname`, as std reads it).
    fn self_exe() -> PathBuf {
        std::env::current_exe()
            .unwrap_or_else(|_| PathBuf::from(std::env::args_os().next().unwrap_or_default()))
    }

    /// A kqueue watching `pid` for NOTE_EXIT: readable once it exited.
    fn exit_notifier(pid: libc::pid_t) -> Option<OwnedFd> {
        // SAFETY: kqueue takes no arguments; a kqueue is not inherited
        // across fork, so no command holds it.
        let kq = unsafe { libc::kqueue() };
        if kq < 0 {
            return None;
        }
        // SAFETY: a descriptor we just made.
        let kq = unsafe { OwnedFd::from_raw_fd(kq) };
        // SAFETY: kevent is plain data.
        let mut ev: libc::kevent = unsafe { std::mem::zeroed() };
        ev.ident = pid as libc::uintptr_t;
        ev.filter = libc::EVFILT_PROC;
        ev.flags = libc::EV_ADD | libc::EV_ONESHOT;
        ev.fflags = libc::NOTE_EXIT;
        use std::os::fd::AsRawFd;
        // SAFETY: registering one event, receiving none.
        let r = unsafe {
            libc::kevent(
                kq.as_raw_fd(),
                &ev,
                1,
                std::ptr::null_mut(),
                0,
                std::ptr::null(),
            )
        };
        (r == 0).then_some(kq)
    }

    fn become_subreaper() -> std::io::Result<()> {
        match procctl(libc::PROC_REAP_ACQUIRE, None) {
            // Already the reaper.
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => Ok(()),
            r => r,
        }
    }

    /// FreeBSD has no cgroups: a command's descendants that left its
    /// process group are found as kbench's children (it is their reaper)
    /// and killed after each sample, and by the watchdog, if kbench itself
    /// is killed, by the mark in their environment.
    fn make_command_cgroup() {}

    fn command_cgroup() -> Option<PathBuf> {
        None
    }

    fn adopt_into_command_cgroup(_pid: libc::pid_t) {}

    /// From `kern.proc.proc`: every process whose parent is this one.
    fn children() -> BTreeSet<libc::pid_t> {
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        kinfo(&[libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC])
            .iter()
            .filter(|k| k.ki_ppid == me)
            .map(|k| k.ki_pid)
            .collect()
    }

    fn empty_command_cgroup() {}

    fn processes_with_env(entry: &[u8]) -> Vec<libc::pid_t> {
        let me = std::process::id() as libc::pid_t;
        all_pids()
            .into_iter()
            .filter(|&pid| pid != me)
            .filter(|&pid| {
                let mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_ENV, pid];
                raw(&mib).is_some_and(|env| env.split(|b| *b == 0).any(|e| e == entry))
            })
            .collect()
    }

    fn die_with_parent(sig: c_int) -> std::io::Result<()> {
        let mut sig = sig;
        // SAFETY: procctl(2) is a system call; id 0 is the caller.
        cvt(unsafe {
            libc::procctl(
                libc::P_PID,
                0,
                libc::PROC_PDEATHSIG_CTL,
                (&raw mut sig).cast(),
            )
        })
    }

    fn aslr_off() -> Option<bool> {
        let mut status = 0;
        procctl(libc::PROC_ASLR_STATUS, Some(&mut status)).ok()?;
        Some(status & libc::PROC_ASLR_ACTIVE == 0)
    }

    /// procctl's PROC_ASLR_CTL, as `proccontrol -m aslr` sets it: it takes
    /// effect at exec.
    fn set_exec_aslr(off: bool) -> std::io::Result<()> {
        let mut v = if off {
            libc::PROC_ASLR_FORCE_DISABLE
        } else {
            libc::PROC_ASLR_NOFORCE
        };
        procctl(libc::PROC_ASLR_CTL, Some(&mut v))
    }

    fn thread_id() -> libc::pid_t {
        let mut tid: c_long = 0;
        // SAFETY: thr_self writes one long.
        unsafe { libc::thr_self(&mut tid) };
        tid as libc::pid_t
    }

    fn signal_thread(_pid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> bool {
        // SAFETY: thr_kill takes integers; tid is a thread of this process.
        unsafe { libc::thr_kill(tid as c_long, sig) == 0 }
    }

    fn park_signal() -> c_int {
        SIGRTMIN + 4
    }

    fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
        // SAFETY: cpuset_t is plain data; indexes are checked against its
        // size.
        unsafe {
            let mut mask: libc::cpuset_t = std::mem::zeroed();
            let max = std::mem::size_of::<libc::cpuset_t>() * 8;
            for &c in cpus {
                if c >= max {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                }
                libc::CPU_SET(c, &mut mask);
            }
            cvt(libc::cpuset_setaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_TID,
                -1,
                std::mem::size_of::<libc::cpuset_t>(),
                &mask,
            ))
        }
    }

    fn get_affinity() -> std::io::Result<CpuSet> {
        // SAFETY: as above; the kernel fills the mask.
        unsafe {
            let mut mask: libc::cpuset_t = std::mem::zeroed();
            cvt(libc::cpuset_getaffinity(
                libc::CPU_LEVEL_WHICH,
                libc::CPU_WHICH_TID,
                -1,
                std::mem::size_of::<libc::cpuset_t>(),
                &mut mask,
            ))?;
            let max = std::mem::size_of::<libc::cpuset_t>() * 8;
            Ok(CpuSet(
                (0..max).filter(|&c| libc::CPU_ISSET(c, &mask)).collect(),
            ))
        }
    }

    fn wait_on(word: &AtomicU32, value: u32) {
        // SAFETY: a valid word (shared: not the _PRIVATE form); spurious
        // wake-ups are the caller's.
        unsafe {
            libc::_umtx_op(
                word.as_ptr().cast(),
                libc::UMTX_OP_WAIT_UINT,
                value as libc::c_ulong,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
        }
    }

    fn wake_all(word: &AtomicU32) {
        // SAFETY: as above.
        unsafe {
            libc::_umtx_op(
                word.as_ptr().cast(),
                libc::UMTX_OP_WAKE,
                i32::MAX as libc::c_ulong,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
        }
    }

    fn futex_op(wait: bool, private: bool) -> FutexOp {
        FutexOp(match (wait, private) {
            (true, false) => libc::UMTX_OP_WAIT_UINT,
            (true, true) => libc::UMTX_OP_WAIT_UINT_PRIVATE,
            (false, false) => libc::UMTX_OP_WAKE,
            (false, true) => libc::UMTX_OP_WAKE_PRIVATE,
        })
    }

    #[inline(always)]
    unsafe fn futex(word: *const u32, op: FutexOp, val: u32) -> c_long {
        // SAFETY: the caller's word; a wait without timeout returns when
        // the value differs, a wake touches no memory.
        unsafe {
            libc::_umtx_op(
                word.cast_mut().cast(),
                op.0,
                val as libc::c_ulong,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            ) as c_long
        }
    }

    #[inline(always)]
    fn errno() -> c_int {
        // SAFETY: __error returns the calling thread's errno.
        unsafe { *libc::__error() }
    }

    fn close_range(lo: u32, hi: u32) -> bool {
        // SAFETY: closing descriptors of this process.
        unsafe { libc::close_range(lo, hi, 0) == 0 }
    }

    /// A POSIX record lock: FreeBSD has no per-open-file byte locks, so it
    /// belongs to the process (kbench takes each once per process) and is
    /// released when the process closes any descriptor of the file (the
    /// store keeps the file open until it is dropped).
    fn lock_byte(fd: RawFd, offset: u64, wait: bool) -> std::io::Result<bool> {
        let cmd = if wait { libc::F_SETLKW } else { libc::F_SETLK };
        super::fcntl_lock_byte(fd, offset, cmd, wait)
    }

    /// minherit(2) INHERIT_NONE: the range is absent in children.
    fn dont_fork(p: *mut u8, len: usize) -> std::io::Result<()> {
        // SAFETY: inheritance of the caller's mapping.
        cvt(unsafe { libc::minherit(p.cast(), len, libc::INHERIT_NONE) })
    }

    /// FreeBSD promotes superpages by itself (vm.pmap.pg_ps_enabled) and
    /// has no per-mapping opt-out.
    fn no_huge_pages(_p: *mut u8, _len: usize) -> bool {
        false
    }

    /// FreeBSD's break system call returns no address: libc's brk/sbrk
    /// keep it.
    #[inline(always)]
    unsafe fn raw_brk(addr: usize) -> usize {
        // SAFETY: the caller's promise, passed on.
        unsafe {
            if addr != 0 && Self::brk(addr as *mut c_void) == 0 {
                return addr;
            }
            Self::sbrk(0) as usize
        }
    }

    /// posix_fallocate(2), its error number moved to errno.
    #[inline(always)]
    fn fallocate(fd: RawFd, off: libc::off_t, len: libc::off_t) -> c_int {
        // SAFETY: the caller's fd.
        match unsafe { libc::posix_fallocate(fd, off, len) } {
            0 => 0,
            e => {
                set_errno(e);
                -1
            }
        }
    }

    fn pipe_max_size() -> Option<u64> {
        None
    }

    fn set_pipe_size(_fd: RawFd, _size: usize) -> std::io::Result<()> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    fn pipe_size(_fd: RawFd) -> std::io::Result<usize> {
        Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
    }

    unsafe fn vmsplice_gift(_fd: RawFd, _iov: &libc::iovec) -> isize {
        set_errno(libc::ENOSYS);
        -1
    }

    fn splice_move(_from: RawFd, _to: RawFd, _len: usize) -> isize {
        set_errno(libc::ENOSYS);
        -1
    }

    #[inline(always)]
    fn raw_getppid() -> c_long {
        // SAFETY: getppid takes no arguments.
        unsafe { libc::syscall(SYS_GETPPID) as c_long }
    }
}

/// Every process's pid (`kern.proc.proc`).
fn all_pids() -> Vec<libc::pid_t> {
    let mib = [libc::CTL_KERN, libc::KERN_PROC, libc::KERN_PROC_PROC, 0];
    let Some(buf) = raw(&mib) else {
        return Vec::new();
    };
    let size = std::mem::size_of::<libc::kinfo_proc>();
    buf.chunks_exact(size)
        .map(|c| {
            // SAFETY: the kernel wrote whole kinfo_proc records; read
            // unaligned from the byte buffer.
            let k: libc::kinfo_proc = unsafe { std::ptr::read_unaligned(c.as_ptr().cast()) };
            k.ki_pid
        })
        .collect()
}
