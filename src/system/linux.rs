//! Linux: the fingerprint and probes from /proc and /sys, affinity through
//! sched_setaffinity, futexes, prctl and personality. The only file of
//! kbench that names /proc or /sys.

use indexmap::IndexMap;
use std::collections::BTreeSet;
use std::ffi::{c_int, c_long};
use std::fs;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;

use super::probe::Probe;
use super::{CpuTopo, Feature, Fingerprint, FutexOp, Hazard, Os, ProcState, cvt};
use crate::units::CpuSet;

/// The Linux backend of [`Os`].
pub struct Linux;

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn read_num(path: &str) -> Option<usize> {
    read(path)?.parse().ok()
}

/// The word in brackets of a sysfs choice file: `always [madvise] never`.
fn selected(s: &str) -> String {
    s.split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']'))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| s.to_string())
}

/// The fields after the command name of a /proc/PID/stat line (the name
/// may hold spaces and parentheses); field 3 (the state) comes first.
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    Some(rest.split_whitespace().collect())
}

/// The state letter of a /proc/.../stat file; `None` when it is gone.
fn stat_state(path: &str) -> Option<char> {
    let s = fs::read_to_string(path).ok()?;
    stat_fields(&s)?.first()?.chars().next()
}

/// First-CPU fields of /proc/cpuinfo.
fn cpuinfo(fp: &mut Fingerprint) {
    let Some(text) = read("/proc/cpuinfo") else {
        return;
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            break; // only the first processor block
        }
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let (k, v) = (k.trim(), v.trim().to_string());
        match k {
            "model name" => fp.cpu_model = Some(v),
            "vendor_id" => fp.cpu_vendor = Some(v),
            "cpu family" => fp.cpu_family = v.parse().ok(),
            "model" => fp.cpu_model_number = v.parse().ok(),
            "stepping" => fp.cpu_stepping = v.parse().ok(),
            "microcode" => fp.microcode = Some(v),
            "flags" => fp.cpu_flags = v.split_whitespace().map(String::from).collect(),
            _ => {}
        }
    }
}

/// The highest `cpu MHz` of a /proc/cpuinfo text, in Hz.
fn cpuinfo_hz(text: &str) -> Option<f64> {
    text.lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim() == "cpu MHz")
        .filter_map(|(_, v)| v.trim().parse::<f64>().ok())
        .map(|mhz| mhz * 1e6)
        .filter(|&hz| hz > 0.0)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
}

fn topology(fp: &mut Fingerprint, online: &CpuSet) {
    let mut sockets = BTreeSet::new();
    let mut cores = BTreeSet::new();
    for &c in &online.0 {
        let base = format!("/sys/devices/system/cpu/cpu{c}/topology");
        let pkg = read(&format!("{base}/physical_package_id")).unwrap_or_default();
        let core = read(&format!("{base}/core_id")).unwrap_or_else(|| c.to_string());
        sockets.insert(pkg.clone());
        cores.insert((pkg, core));
    }
    fp.sockets = sockets.len().max(1);
    fp.cores = cores.len().max(1);
    fp.threads = online.0.len();
    fp.numa_nodes = fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.starts_with("node") && n[4..].chars().all(|c| c.is_ascii_digit())
                })
                .count()
        })
        .unwrap_or(0)
        .max(1);
}

/// Per-CPU (busy, total) jiffies from /proc/stat.
fn cpu_times() -> Vec<(usize, u64, u64)> {
    let Some(text) = read("/proc/stat") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?;
            let cpu: usize = name.strip_prefix("cpu")?.parse().ok()?;
            let v: Vec<u64> = it.filter_map(|x| x.parse().ok()).collect();
            let total: u64 = v.iter().take(8).sum();
            let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
            Some((cpu, total - idle, total))
        })
        .collect()
}

/// The machine's (busy, idle) ticks from the `cpu` line of a /proc/stat
/// text, as will-it-scale's runtest.py counts them: idle and iowait are
/// idle; user, nice, system, irq, softirq, steal, guest and guest_nice are
/// busy.
fn parse_cpu_ticks(text: &str) -> Option<(u64, u64)> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 7 {
        return None;
    }
    let busy = at(0) + at(1) + at(2) + at(5) + at(6) + at(7) + at(8) + at(9);
    let idle = at(3) + at(4);
    Some((busy, idle))
}

/// SMT sibling pairs that were both more than half busy over `window`.
fn busy_smt_pairs(online: &CpuSet, window: std::time::Duration) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    for &c in &online.0 {
        let list = read(&format!(
            "/sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"
        ));
        if let Some(set) = list.and_then(|l| CpuSet::parse(&l).ok()) {
            for &s in &set.0 {
                if s > c {
                    pairs.push((c, s));
                }
            }
        }
    }
    super::busy_pairs(pairs, window, cpu_times)
}

fn hypervisor(fp: &Fingerprint) -> Option<String> {
    if let Some(t) = read("/sys/hypervisor/type") {
        return Some(t);
    }
    if !fp.cpu_flags.iter().any(|f| f == "hypervisor") {
        return None;
    }
    if let Some(v) = super::cpuid::hypervisor_vendor() {
        return Some(v);
    }
    let vendor = read("/sys/class/dmi/id/sys_vendor");
    let product = read("/sys/class/dmi/id/product_name");
    Some(match (vendor, product) {
        (Some(v), Some(p)) => format!("{v} {p}"),
        (Some(v), None) => v,
        (None, Some(p)) => p,
        (None, None) => "unknown".into(),
    })
}

fn boost() -> Option<bool> {
    if let Some(b) = read("/sys/devices/system/cpu/cpufreq/boost") {
        return Some(b == "1");
    }
    read("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| v == "0")
}

fn vulnerabilities() -> IndexMap<String, String> {
    let mut vulns = IndexMap::new();
    let dir = Path::new("/sys/devices/system/cpu/vulnerabilities");
    if let Ok(rd) = fs::read_dir(dir) {
        let mut names: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            if let Some(v) = read(&dir.join(&n).to_string_lossy()) {
                vulns.insert(n, v);
            }
        }
    }
    vulns
}

fn fingerprint() -> Fingerprint {
    let online = Linux::online_cpus();
    let mut fp = Fingerprint {
        hostname: Linux::hostname(),
        os: read("/proc/sys/kernel/ostype").unwrap_or_else(|| "Linux".into()),
        os_release: super::os_release_name(),
        kernel_release: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        kernel_version: read("/proc/sys/kernel/version").unwrap_or_default(),
        cmdline: read("/proc/cmdline"),
        online_cpus: online.to_string(),
        ..Default::default()
    };
    cpuinfo(&mut fp);
    topology(&mut fp, &online);
    fp.smt = read("/sys/devices/system/cpu/smt/control");
    fp.memory_bytes = read("/proc/meminfo")
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0);
    fp.vulnerabilities = vulnerabilities();
    fp.cpufreq_driver = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver");
    fp.governor = read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
    fp.boost = boost();
    fp.thp = read("/sys/kernel/mm/transparent_hugepage/enabled").map(|s| selected(&s));
    fp.clocksource = read("/sys/devices/system/clocksource/clocksource0/current_clocksource");
    fp.hypervisor = hypervisor(&fp);
    if let Some(l) = read("/proc/loadavg") {
        let v: Vec<f64> = l
            .split_whitespace()
            .take(3)
            .filter_map(|x| x.parse().ok())
            .collect();
        if v.len() == 3 {
            fp.loadavg = [v[0], v[1], v[2]];
        }
    }
    fp.busy_smt_pairs = busy_smt_pairs(&online, std::time::Duration::from_millis(100));
    fp
}

fn read_probe(p: &Probe) -> Option<String> {
    match p {
        Probe::KernelRelease => read("/proc/sys/kernel/osrelease"),
        Probe::KernelVersion => read("/proc/sys/kernel/version"),
        Probe::Cmdline(param) => {
            let line = read("/proc/cmdline")?;
            // Words after a lone `--` belong to init, not to the kernel.
            line.split_whitespace()
                .take_while(|w| *w != "--")
                .find_map(|w| match w.split_once('=') {
                    Some((k, v)) if k == param => Some(v.to_string()),
                    None if w == param => Some("present".to_string()),
                    _ => None,
                })
        }
        Probe::Vuln(name) => read(&format!("/sys/devices/system/cpu/vulnerabilities/{name}")),
        Probe::CpuFlag(flag) => {
            let text = fs::read_to_string("/proc/cpuinfo").ok()?;
            let flags = text
                .lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "flags"))?
                .1;
            flags
                .split_whitespace()
                .any(|f| f == flag)
                .then(|| "present".to_string())
        }
        Probe::Microcode => {
            let text = fs::read_to_string("/proc/cpuinfo").ok()?;
            text.lines()
                .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == "microcode"))
                .map(|(_, v)| v.trim().to_string())
        }
        Probe::Sysctl(name) => {
            // `kernel.pid_max` -> /proc/sys/kernel/pid_max; names never
            // contain `/` (checked when parsed), so this stays in /proc/sys.
            if name.split('.').any(|part| part.is_empty() || part == "..") {
                return None;
            }
            read(&format!("/proc/sys/{}", name.replace('.', "/")))
        }
        Probe::Smt => read("/sys/devices/system/cpu/smt/control"),
        Probe::Thp => read("/sys/kernel/mm/transparent_hugepage/enabled").map(|s| selected(&s)),
        Probe::Governor => read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        Probe::OnlineCpus => Some(Linux::online_cpus().to_string()),
        Probe::Command(_) => None,
    }
}

impl Os for Linux {
    /// glibc's `PTHREAD_CANCEL_ASYNCHRONOUS`.
    const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;
    const ELF_OSABI: u8 = 0; // ELFOSABI_SYSV
    #[cfg(target_arch = "aarch64")]
    const EXIT_SYSCALL: u32 = 93;
    #[cfg(not(target_arch = "aarch64"))]
    const EXIT_SYSCALL: u32 = 60;

    fn hostname() -> String {
        read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
    }

    fn fingerprint() -> Fingerprint {
        fingerprint()
    }

    fn online_cpus() -> CpuSet {
        read("/sys/devices/system/cpu/online")
            .and_then(|s| CpuSet::parse(&s).ok())
            .unwrap_or_else(|| {
                // SAFETY: sysconf has no preconditions.
                let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
                CpuSet((0..n as usize).collect())
            })
    }

    fn cpu_topology(cpus: &CpuSet) -> Vec<CpuTopo> {
        cpus.0
            .iter()
            .map(|&cpu| {
                let base = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
                let package = read_num(&format!("{base}/physical_package_id")).unwrap_or(0);
                let core = read_num(&format!("{base}/core_id")).unwrap_or(cpu);
                let thread = read(&format!("{base}/thread_siblings_list"))
                    .and_then(|s| CpuSet::parse(&s).ok())
                    .and_then(|s| s.0.iter().position(|&c| c == cpu))
                    .unwrap_or(0);
                CpuTopo {
                    cpu,
                    package,
                    core,
                    thread,
                }
            })
            .collect()
    }

    fn cpu_ticks() -> Option<(u64, u64)> {
        parse_cpu_ticks(&fs::read_to_string("/proc/stat").ok()?)
    }

    /// The highest `cpuinfo_max_freq` of the CPUs (cpufreq), else the
    /// highest `cpu MHz` of /proc/cpuinfo (what a guest sees).
    fn max_cpu_hz() -> Option<f64> {
        let sys = fs::read_dir("/sys/devices/system/cpu")
            .ok()
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                fs::read_to_string(e.path().join("cpufreq/cpuinfo_max_freq"))
                    .ok()?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
            .map(|khz| khz * 1e3)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        sys.or_else(|| cpuinfo_hz(&fs::read_to_string("/proc/cpuinfo").ok()?))
    }

    fn read_probe(p: &Probe) -> Option<String> {
        read_probe(p)
    }

    fn remedy(h: Hazard) -> &'static str {
        match h {
            Hazard::Governor => "cpupower frequency-set -g performance",
            Hazard::Boost => {
                "echo 0 > /sys/devices/system/cpu/cpufreq/boost (or echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo)"
            }
            Hazard::Smt => {
                "leave the sibling of each measuring CPU idle, or disable SMT (echo off > /sys/devices/system/cpu/smt/control)"
            }
        }
    }

    fn unavailable(_: Feature) -> Option<&'static str> {
        None
    }

    fn open_counters(kinds: &[super::counters::Counter]) -> super::counters::Opened {
        super::perf::open(kinds)
    }

    fn start_profiler(pid: u32) -> Result<Box<dyn super::profiler::Profiler>, String> {
        Ok(Box::new(super::perf_record::start(
            pid,
            perf_event_paranoid(),
        )?))
    }

    fn owner(pid: u32) -> Option<crate::record::Owner> {
        let boot_id = read("/proc/sys/kernel/random/boot_id")?;
        let stat = read(&format!("/proc/{pid}/stat"))?;
        // Field 22 (start time, in clock ticks after boot).
        let start = stat_fields(&stat)?.get(19)?.parse().ok()?;
        Some(crate::record::Owner {
            pid,
            start,
            boot_id,
        })
    }

    fn process_state(pid: libc::pid_t) -> ProcState {
        let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
            return ProcState::Gone;
        };
        let mut any = false;
        for e in dir.filter_map(|e| e.ok()) {
            match stat_state(&e.path().join("stat").to_string_lossy()) {
                Some('T' | 't') => any = true,
                Some('Z' | 'X') | None => {}
                Some(_) => return ProcState::Running,
            }
        }
        if any {
            ProcState::Stopped
        } else {
            ProcState::Gone
        }
    }

    fn thread_alive(pid: libc::pid_t, tid: libc::pid_t) -> bool {
        !matches!(
            stat_state(&format!("/proc/{pid}/task/{tid}/stat")),
            Some('Z' | 'X') | None
        )
    }

    fn last_cpu(pid: libc::pid_t) -> Option<usize> {
        let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Field 39 (processor).
        stat_fields(&s)?.get(36)?.parse().ok()
    }

    fn thread_count() -> Option<usize> {
        let s = fs::read_to_string("/proc/self/stat").ok()?;
        // Field 20 (num_threads).
        stat_fields(&s)?.get(17)?.parse().ok()
    }

    /// The running binary itself, even if its file was replaced since.
    fn self_exe() -> PathBuf {
        PathBuf::from("/proc/self/exe")
    }

    fn exit_notifier(pid: libc::pid_t) -> Option<OwnedFd> {
        // SAFETY: pidfd_open takes a pid and flags; -1 on error.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
        // SAFETY: a fresh descriptor nobody else owns.
        (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
    }

    fn become_subreaper() -> std::io::Result<()> {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag.
        cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
    }

    fn die_with_parent(sig: c_int) -> std::io::Result<()> {
        // SAFETY: prctl with an integer argument.
        cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong) })
    }

    fn aslr_off() -> Option<bool> {
        // SAFETY: 0xffffffff queries without changing anything.
        let p = unsafe { libc::personality(0xffff_ffff) };
        (p >= 0).then_some(p & libc::ADDR_NO_RANDOMIZE != 0)
    }

    /// The personality flag `setarch -R` sets: it takes effect at exec.
    fn set_exec_aslr(off: bool) -> std::io::Result<()> {
        // SAFETY: as above.
        let p = unsafe { libc::personality(0xffff_ffff) };
        cvt(p)?;
        let p = if off {
            p | libc::ADDR_NO_RANDOMIZE
        } else {
            p & !libc::ADDR_NO_RANDOMIZE
        };
        // SAFETY: setting our own personality.
        cvt(unsafe { libc::personality(p as libc::c_ulong) })
    }

    fn thread_id() -> libc::pid_t {
        // SAFETY: no preconditions.
        unsafe { libc::gettid() }
    }

    fn signal_thread(pid: libc::pid_t, tid: libc::pid_t, sig: c_int) -> bool {
        // SAFETY: tgkill takes integers only.
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, sig) == 0 }
    }

    fn park_signal() -> c_int {
        libc::SIGRTMIN() + 4
    }

    fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
        // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks via the
        // index we keep below CPU_SETSIZE.
        unsafe {
            let mut mask: libc::cpu_set_t = std::mem::zeroed();
            for &c in cpus {
                if c >= libc::CPU_SETSIZE as usize {
                    return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
                }
                libc::CPU_SET(c, &mut mask);
            }
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mask) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }

    fn get_affinity() -> std::io::Result<CpuSet> {
        // SAFETY: as above; the kernel fills the mask.
        unsafe {
            let mut mask: libc::cpu_set_t = std::mem::zeroed();
            cvt(libc::sched_getaffinity(
                0,
                std::mem::size_of::<libc::cpu_set_t>(),
                &mut mask,
            ))?;
            Ok(CpuSet(
                (0..libc::CPU_SETSIZE as usize)
                    .filter(|&c| libc::CPU_ISSET(c, &mask))
                    .collect(),
            ))
        }
    }

    fn wait_on(word: &AtomicU32, value: u32) {
        // SAFETY: a valid futex word; spurious wake-ups are the caller's.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT,
                value,
                std::ptr::null::<libc::timespec>(),
            );
        }
    }

    fn wake_all(word: &AtomicU32) {
        // SAFETY: as above.
        unsafe {
            libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
        }
    }

    fn futex_op(wait: bool, private: bool) -> FutexOp {
        let op = if wait {
            libc::FUTEX_WAIT
        } else {
            libc::FUTEX_WAKE
        };
        FutexOp(if private {
            op | libc::FUTEX_PRIVATE_FLAG
        } else {
            op
        })
    }

    #[inline(always)]
    unsafe fn futex(word: *const u32, op: FutexOp, val: u32) -> c_long {
        // SAFETY: the caller's word; a WAIT without timeout returns when
        // the value differs, a WAKE touches no memory.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word,
                op.0,
                val,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<u32>(),
                0,
            )
        }
    }

    #[inline(always)]
    fn errno() -> c_int {
        // SAFETY: __errno_location returns the calling thread's errno.
        unsafe { *libc::__errno_location() }
    }

    fn close_range(lo: u32, hi: u32) -> bool {
        // SAFETY: closing descriptors of this process.
        unsafe { libc::syscall(libc::SYS_close_range, lo, hi, 0u32) == 0 }
    }

    /// An OFD lock: per open file, not per process, and apart from the
    /// POSIX locks SQLite takes on its own files.
    fn lock_byte(fd: RawFd, offset: u64, wait: bool) -> std::io::Result<bool> {
        let cmd = if wait {
            libc::F_OFD_SETLKW
        } else {
            libc::F_OFD_SETLK
        };
        super::fcntl_lock_byte(fd, offset, cmd, wait)
    }

    fn dont_fork(p: *mut u8, len: usize) -> std::io::Result<()> {
        // SAFETY: advice on the caller's mapping.
        cvt(unsafe { libc::madvise(p.cast(), len, libc::MADV_DONTFORK) })
    }

    #[inline(always)]
    fn no_huge_pages(p: *mut u8, len: usize) -> bool {
        // SAFETY: advice on the caller's mapping.
        unsafe { libc::madvise(p.cast(), len, libc::MADV_NOHUGEPAGE) == 0 }
    }

    #[inline(always)]
    unsafe fn raw_brk(addr: usize) -> usize {
        // SAFETY: as above; brk(0) only reads the break.
        unsafe { libc::syscall(libc::SYS_brk, addr) as usize }
    }

    #[inline(always)]
    fn fallocate(fd: RawFd, off: libc::off_t, len: libc::off_t) -> c_int {
        // SAFETY: the caller's fd.
        unsafe { libc::fallocate(fd, 0, off, len) }
    }

    fn pipe_max_size() -> Option<u64> {
        read("/proc/sys/fs/pipe-max-size")?.parse().ok()
    }

    fn set_pipe_size(fd: RawFd, size: usize) -> std::io::Result<()> {
        let size =
            c_int::try_from(size).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: fcntl on the caller's descriptor.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, size) })
    }

    fn pipe_size(fd: RawFd) -> std::io::Result<usize> {
        // SAFETY: as above.
        let n = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
        cvt(n).map(|_| n as usize)
    }

    #[inline(always)]
    unsafe fn vmsplice_gift(fd: RawFd, iov: &libc::iovec) -> isize {
        // SAFETY: the caller's iovec describes mapped memory it leaves
        // untouched while the pipe holds it.
        unsafe { libc::vmsplice(fd, iov, 1, libc::SPLICE_F_GIFT) }
    }

    #[inline(always)]
    fn splice_move(from: RawFd, to: RawFd, len: usize) -> isize {
        // SAFETY: splice takes descriptors only.
        unsafe {
            libc::splice(
                from,
                std::ptr::null_mut(),
                to,
                std::ptr::null_mut(),
                len,
                libc::SPLICE_F_MOVE,
            )
        }
    }

    #[inline(always)]
    fn raw_getppid() -> c_long {
        // SAFETY: getppid takes no arguments.
        unsafe { libc::syscall(libc::SYS_getppid) }
    }

    fn make_command_cgroup() {
        cgroup();
    }

    fn command_cgroup() -> Option<PathBuf> {
        cgroup_dir()
    }

    fn adopt_into_command_cgroup(pid: libc::pid_t) {
        adopt_into_cgroup(pid)
    }

    fn children() -> BTreeSet<libc::pid_t> {
        own_children()
    }

    fn processes_with_env(entry: &[u8]) -> Vec<libc::pid_t> {
        let me = std::process::id() as libc::pid_t;
        let Ok(dir) = fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<libc::pid_t>().ok())
            .filter(|&pid| pid != me)
            .filter(|pid| {
                // Another user's environ is unreadable (EACCES): not ours.
                fs::read(format!("/proc/{pid}/environ"))
                    .is_ok_and(|env| env.split(|b| *b == 0).any(|e| e == entry))
            })
            .collect()
    }

    fn empty_command_cgroup() {
        if let Some(c) = cgroup() {
            empty_cgroup(c);
        }
    }
}

// --- Descendants of the commands kbench runs --------------------------------
//
// A command runs in a process group of its own, killed after each sample;
// a descendant that calls setsid(2) leaves that group. kbench is a child
// subreaper, so such a process comes back to kbench when its parent exits;
// and where it can, kbench puts every command into a cgroup v2 of its own
// (`kbench-PID` under kbench's own), which no descendant can
// leave: `cgroup.kill` ends all of them, also from the watchdog after
// kbench was killed with SIGKILL.

/// kbench's cgroup for commands: its directory and `cgroup.procs`, open for
/// writing (a forked child writes `0` there to join before it execs).
struct Cgroup {
    dir: std::path::PathBuf,
    procs: std::os::fd::OwnedFd,
}

static CGROUP: std::sync::OnceLock<Option<Cgroup>> = std::sync::OnceLock::new();

/// The cgroup v2 for commands, made on first use: a child of kbench's own
/// cgroup, only where that cgroup delegates no controller (so the new one
/// has none, and changes nothing about how a command is scheduled or
/// limited) and kbench may write there. `None` otherwise.
fn cgroup() -> Option<&'static Cgroup> {
    CGROUP.get_or_init(make_cgroup).as_ref()
}

fn make_cgroup() -> Option<Cgroup> {
    use std::os::fd::OwnedFd;
    use std::os::unix::fs::OpenOptionsExt;
    let mountinfo = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mount = mountinfo.lines().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        (right.split_whitespace().next() == Some("cgroup2"))
            .then(|| left.split_whitespace().nth(4).map(str::to_string))?
    })?;
    let own = fs::read_to_string("/proc/self/cgroup").ok()?;
    let rel = own.lines().find_map(|l| l.strip_prefix("0::"))?.trim();
    let parent = Path::new(&mount).join(rel.trim_start_matches('/'));
    let delegated = fs::read_to_string(parent.join("cgroup.subtree_control")).ok()?;
    if !delegated.trim().is_empty() {
        return None;
    }
    let dir = parent.join(format!("kbench-{}", std::process::id()));
    match fs::create_dir(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(_) => return None,
    }
    let procs = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(dir.join("cgroup.procs"));
    match procs {
        Ok(f) => Some(Cgroup {
            dir,
            procs: OwnedFd::from(f),
        }),
        Err(_) => {
            let _ = fs::remove_dir(&dir);
            None
        }
    }
}

/// The commands' cgroup, if kbench made one.
fn cgroup_dir() -> Option<std::path::PathBuf> {
    CGROUP.get().and_then(Option::as_ref).map(|c| c.dir.clone())
}

/// Move process `pid` into the commands' cgroup (its pid written to
/// `cgroup.procs`); nothing where there is none, or it is gone. Done while
/// the command runs: its digits go through a buffer on the stack.
fn adopt_into_cgroup(pid: libc::pid_t) {
    if let Some(c) = CGROUP.get().and_then(Option::as_ref) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 16];
        let mut w = &mut buf[..];
        let _ = write!(w, "{pid}");
        let len = 16 - w.len();
        // SAFETY: writing our buffer to an fd we hold.
        unsafe { libc::write(c.procs.as_raw_fd(), buf.as_ptr().cast(), len) };
    }
}

/// This process's children (of every thread): re-parented orphans
/// included.
fn own_children() -> BTreeSet<libc::pid_t> {
    let mut out = BTreeSet::new();
    let Ok(tasks) = fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in tasks.flatten() {
        if let Ok(s) = fs::read_to_string(t.path().join("children")) {
            out.extend(
                s.split_whitespace()
                    .filter_map(|p| p.parse::<libc::pid_t>().ok()),
            );
        }
    }
    out
}

/// Kill every process left in the commands' cgroup and wait (up to 2 s)
/// until it is empty.
fn empty_cgroup(c: &Cgroup) {
    if fs::write(c.dir.join("cgroup.kill"), "1").is_err() {
        // Kernels before 5.14: each member by its pid.
        for _ in 0..100 {
            let procs = fs::read_to_string(c.dir.join("cgroup.procs")).unwrap_or_default();
            let pids: Vec<libc::pid_t> = procs
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
            if pids.is_empty() {
                break;
            }
            for p in pids {
                // SAFETY: signalling a process of our cgroup.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
    }
    let events = c.dir.join("cgroup.events");
    let t0 = std::time::Instant::now();
    while fs::read_to_string(&events).is_ok_and(|e| e.contains("populated 1"))
        && t0.elapsed() < std::time::Duration::from_secs(2)
    {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let fp = fingerprint();
        assert!(!fp.kernel_release.is_empty());
        assert!(fp.threads >= 1 && fp.cores >= 1 && fp.cores <= fp.threads);
        assert!(fp.memory_bytes > 1 << 20);
        assert_eq!(Linux::online_cpus().0.len(), fp.threads);
    }

    #[test]
    fn selected_word() {
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("plain"), "plain");
    }

    #[test]
    fn affinity_round_trip() {
        let orig = Linux::get_affinity().unwrap();
        Linux::set_affinity(&[orig.0[0]]).unwrap();
        assert_eq!(Linux::get_affinity().unwrap().0, vec![orig.0[0]]);
        Linux::set_affinity(&orig.0).unwrap();
    }

    #[test]
    fn idle_is_counted_as_runtest_py_does() {
        let a = parse_cpu_ticks("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3 4 5 6 7\n").unwrap();
        assert_eq!(a, (150, 850));
        assert_eq!(parse_cpu_ticks("intr 1 2\n"), None);
        let now = Linux::cpu_ticks().unwrap();
        assert!(now.0 + now.1 > 0);
    }

    #[test]
    fn cpuinfo_gives_the_highest_clock() {
        let text = "processor\t: 0\ncpu MHz\t\t: 2600.000\n\nprocessor\t: 1\ncpu MHz\t\t: 3400.5\n";
        assert_eq!(cpuinfo_hz(text), Some(3.4005e9));
        assert_eq!(cpuinfo_hz("flags: fpu\n"), None);
    }

    #[test]
    fn stat_fields_skip_a_command_name_with_spaces_and_parens() {
        let stat = "42 (a b) c) S 1 42 42 0 -1";
        assert_eq!(stat_fields(stat).unwrap()[..2], ["S", "1"]);
    }

    #[test]
    fn processes_and_threads_are_seen_as_they_stand() {
        let me = std::process::id() as libc::pid_t;
        assert_eq!(Linux::process_state(me), ProcState::Running);
        assert!(Linux::thread_alive(me, Linux::thread_id()));
        assert!(Linux::thread_count().unwrap() >= 1);
        assert!(Linux::last_cpu(me).is_some());
        // A pid above pid_max's ceiling never exists.
        assert_eq!(Linux::process_state(1 << 23), ProcState::Gone);
        assert!(!Linux::thread_alive(me, 1 << 23));
    }

    /// A field of the first processor block of /proc/cpuinfo.
    fn cpuinfo_field(key: &str) -> Option<String> {
        let text = fs::read_to_string("/proc/cpuinfo").ok()?;
        text.lines()
            .take_while(|l| !l.trim().is_empty())
            .find_map(|l| l.split_once(':').filter(|(k, _)| k.trim() == key))
            .map(|(_, v)| v.trim().to_string())
    }

    /// What other OSes read from CPUID is what Linux says.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn cpuid_agrees_with_proc_cpuinfo() {
        use super::super::cpuid;
        let (vendor, family, model, stepping) = cpuid::signature().unwrap();
        assert_eq!(Some(vendor), cpuinfo_field("vendor_id"));
        assert_eq!(Some(family.to_string()), cpuinfo_field("cpu family"));
        assert_eq!(Some(model.to_string()), cpuinfo_field("model"));
        assert_eq!(Some(stepping.to_string()), cpuinfo_field("stepping"));
        // Every flag CPUID reports is one Linux lists, and the reverse for
        // all but two Linux may also derive from elsewhere.
        let listed = cpuinfo_field("flags").unwrap();
        let listed: Vec<&str> = listed.split_whitespace().collect();
        let flags = cpuid::flags();
        for f in &flags {
            assert!(listed.contains(&f.as_str()), "{f} not in /proc/cpuinfo");
        }
        for f in cpuid::FLAGS.iter().map(|f| f.0) {
            if listed.contains(&f) && !matches!(f, "md_clear" | "arch_capabilities") {
                assert!(flags.iter().any(|g| g == f), "CPUID misses {f}");
            }
        }
        assert_eq!(
            cpuid::hypervisor_vendor().is_some(),
            listed.contains(&"hypervisor")
        );
    }
}

/// `kernel.perf_event_paranoid`: who may profile what (`None` where the
/// file is missing or unreadable).
fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

pub(super) mod switches {
    //! Voluntary and involuntary context switches of kbench and of every
    //! process it started, for the counters perf cannot split: perf's
    //! `context-switches` is their sum. Read outside the counted interval (it
    //! opens /proc files), before and after it:
    //! - kbench's own threads, and every descendant it has reaped (with theirs
    //!   in turn), through getrusage(2) (`RUSAGE_SELF`, `RUSAGE_CHILDREN`);
    //! - every thread of every live descendant process, through
    //!   `/proc/PID/task/TID/status`, found through the `children` files.
    //!
    //! A descendant that ends inside the interval and is reaped by another
    //! descendant (a scale cell's tasks, reaped by its leader) is missed until
    //! that one is reaped by kbench; a sample stops its counters before that.

    /// Voluntary and involuntary switches so far, summed as above; `None`
    /// where getrusage fails.
    pub fn count() -> Option<(u64, u64)> {
        let mut total = (0u64, 0u64);
        for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
            // SAFETY: rusage is plain data; getrusage fills it.
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: a valid pointer to a rusage.
            if unsafe { libc::getrusage(who, &mut ru) } != 0 {
                return None;
            }
            total.0 += ru.ru_nvcsw as u64;
            total.1 += ru.ru_nivcsw as u64;
        }
        let mut stack = children(std::process::id());
        while let Some(pid) = stack.pop() {
            for tid in tasks(pid) {
                let status = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"));
                let (v, i) = status.as_deref().map(parse_status).unwrap_or_default();
                total.0 += v;
                total.1 += i;
            }
            stack.extend(children(pid));
        }
        Some(total)
    }

    /// The threads of process `pid` (none when it is gone).
    fn tasks(pid: u32) -> Vec<u32> {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            return Vec::new();
        };
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect()
    }

    /// The child processes of every thread of `pid`.
    fn children(pid: u32) -> Vec<u32> {
        let mut out = Vec::new();
        for tid in tasks(pid) {
            if let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) {
                out.extend(s.split_whitespace().filter_map(|w| w.parse::<u32>().ok()));
            }
        }
        out
    }

    /// The two counts of a `/proc/.../status` text.
    fn parse_status(s: &str) -> (u64, u64) {
        let field = |name: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
                .unwrap_or(0)
        };
        (
            field("voluntary_ctxt_switches:"),
            field("nonvoluntary_ctxt_switches:"),
        )
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn status_fields_parse() {
            let s = "Name:\tcat\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n";
            assert_eq!(parse_status(s), (12, 3));
            assert_eq!(parse_status("Name:\tx\n"), (0, 0));
        }

        /// Alone in a process of its own: other tests' children leaving
        /// the sum made the involuntary count fall here.
        #[test]
        fn a_child_that_sleeps_switches_voluntarily_and_is_counted() {
            crate::system::tests::run_alone("system::linux::switches::tests::child_switches_alone");
        }

        #[test]
        #[ignore = "run alone by a_child_that_sleeps_switches_voluntarily_and_is_counted"]
        fn child_switches_alone() {
            let a = count().unwrap();
            // The child blocks 20 times; it is alive at the second count (its
            // /proc counts) or reaped after (getrusage of the children).
            let mut child = std::process::Command::new("sh")
                .args([
                    "-c",
                    "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 0.001; done",
                ])
                .spawn()
                .unwrap();
            child.wait().unwrap();
            let b = count().unwrap();
            assert!(b.0 >= a.0 + 20, "voluntary {} -> {}", a.0, b.0);
            assert!(b.1 >= a.1);
        }
    }
}
