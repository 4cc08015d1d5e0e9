//! Linux: the fingerprint from /proc and /sys, and affinity through
//! sched_setaffinity.

use indexmap::IndexMap;
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use super::Fingerprint;
use crate::units::CpuSet;

fn read(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The word in brackets of a sysfs choice file: `always [madvise] never`.
fn selected(s: &str) -> String {
    s.split_whitespace()
        .find(|w| w.starts_with('[') && w.ends_with(']'))
        .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        .unwrap_or_else(|| s.to_string())
}

pub fn online_cpus() -> CpuSet {
    read("/sys/devices/system/cpu/online")
        .and_then(|s| CpuSet::parse(&s).ok())
        .unwrap_or_else(|| {
            // SAFETY: sysconf has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
            CpuSet((0..n as usize).collect())
        })
}

/// Allocation-free, so a forked child may call it.
pub fn set_affinity(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks via the index
    // we keep below CPU_SETSIZE.
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

pub fn get_affinity() -> std::io::Result<CpuSet> {
    // SAFETY: as above; the kernel fills the mask.
    unsafe {
        let mut mask: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut mask) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(CpuSet(
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &mask))
                .collect(),
        ))
    }
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
    if pairs.is_empty() {
        return pairs;
    }
    let a = cpu_times();
    std::thread::sleep(window);
    let b = cpu_times();
    let busy = |cpu: usize| -> f64 {
        let x = a.iter().find(|t| t.0 == cpu);
        let y = b.iter().find(|t| t.0 == cpu);
        match (x, y) {
            (Some(x), Some(y)) if y.2 > x.2 => (y.1 - x.1) as f64 / (y.2 - x.2) as f64,
            _ => 0.0,
        }
    };
    pairs
        .into_iter()
        .filter(|&(x, y)| busy(x) > 0.5 && busy(y) > 0.5)
        .collect()
}

fn hypervisor(fp: &Fingerprint) -> Option<String> {
    if let Some(t) = read("/sys/hypervisor/type") {
        return Some(t);
    }
    if !fp.cpu_flags.iter().any(|f| f == "hypervisor") {
        return None;
    }
    if let Some(v) = cpuid_hypervisor() {
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

/// The hypervisor's vendor signature from CPUID leaf 0x40000000
/// (`KVMKVMKVM`, `Microsoft Hv`, `VMwareVMware`, ...).
#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    // CPUID exists on every x86_64 CPU; leaf 0x40000000 is reserved for
    // hypervisors and only consulted when the `hypervisor` flag is set.
    let r = std::arch::x86_64::__cpuid(0x4000_0000);
    let mut b = Vec::with_capacity(12);
    for w in [r.ebx, r.ecx, r.edx] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    let s: String = String::from_utf8_lossy(&b)
        .trim_matches(char::from(0))
        .trim()
        .to_string();
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_graphic() || c == ' ')).then_some(s)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

fn boost() -> Option<bool> {
    if let Some(b) = read("/sys/devices/system/cpu/cpufreq/boost") {
        return Some(b == "1");
    }
    read("/sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| v == "0")
}

/// The host name, as fingerprints record it.
pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

/// Process `pid` on this boot, or `None` if there is no such process.
pub fn owner(pid: u32) -> Option<crate::record::Owner> {
    let boot_id = read("/proc/sys/kernel/random/boot_id")?.trim().to_string();
    let stat = read(&format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces and parens).
    let rest = &stat[stat.rfind(')')? + 2..];
    let start = rest.split(' ').nth(19)?.parse().ok()?;
    Some(crate::record::Owner {
        pid,
        start,
        boot_id,
    })
}

pub fn fingerprint() -> Fingerprint {
    let online = online_cpus();
    let mut fp = Fingerprint {
        hostname: hostname(),
        os: read("/proc/sys/kernel/ostype").unwrap_or_else(|| "Linux".into()),
        kernel_release: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        kernel_version: read("/proc/sys/kernel/version").unwrap_or_default(),
        cmdline: read("/proc/cmdline"),
        online_cpus: online.to_string(),
        ..Default::default()
    };
    fp.os_release = read("/etc/os-release").and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
    });
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
    fp.vulnerabilities = vulns;
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
    fp.kbench = Some(env!("CARGO_PKG_VERSION").to_string());
    fp.compiler = compiler();
    fp
}

/// The first line of `$CC --version` (else `cc`), when it runs.
fn compiler() -> Option<String> {
    let cc = std::env::var("CC")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .unwrap_or_else(|| "cc".into());
    let out = std::process::Command::new(cc.trim())
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// Read a built-in probe (see `probe.rs` for the names); `None` when
/// there is nothing to read. Command probes never reach here.
pub fn read_probe(p: &super::probe::Probe) -> Option<String> {
    use super::probe::Probe;
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
        Probe::OnlineCpus => Some(online_cpus().to_string()),
        Probe::Command(_) => None,
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

/// Become a child subreaper and make the commands' cgroup.
pub fn contain_descendants() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes an integer flag.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    cgroup();
}

/// The commands' cgroup, if kbench made one.
pub fn cgroup_dir() -> Option<std::path::PathBuf> {
    CGROUP.get().and_then(Option::as_ref).map(|c| c.dir.clone())
}

/// In a forked child before exec: join the commands' cgroup. Only
/// async-signal-safe calls (write).
pub fn enter_cgroup() {
    if let Some(c) = CGROUP.get().and_then(Option::as_ref) {
        use std::os::fd::AsRawFd;
        // SAFETY: writing a static byte to an fd we hold.
        unsafe { libc::write(c.procs.as_raw_fd(), b"0".as_ptr().cast(), 1) };
    }
}

/// This process's children (of every thread): re-parented orphans
/// included.
pub fn children() -> BTreeSet<libc::pid_t> {
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

/// After a command's process group was killed and reaped: kill whatever
/// it left elsewhere (its cgroup; processes re-parented to kbench that
/// were not its children `before` the spawn) and reap those that come back
/// to kbench, handing each one's usage to `reaped`.
pub fn kill_escaped(before: &BTreeSet<libc::pid_t>, reaped: &mut dyn FnMut(&libc::rusage)) {
    if let Some(c) = cgroup() {
        empty_cgroup(c);
    }
    // Killing one may re-parent its own children to kbench: again until
    // none is new (bounded, against a fork bomb).
    for _ in 0..1000 {
        let new: Vec<libc::pid_t> = children().difference(before).copied().collect();
        if new.is_empty() {
            return;
        }
        for pid in new {
            // SAFETY: our own child (re-parented to us), killed and reaped.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                let mut st = 0;
                let mut ru: libc::rusage = std::mem::zeroed();
                loop {
                    let r = libc::wait4(pid, &mut st, 0, &mut ru);
                    if r == pid {
                        reaped(&ru);
                        break;
                    }
                    if r < 0 && *libc::__errno_location() != libc::EINTR {
                        break;
                    }
                }
            }
        }
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
        assert_eq!(online_cpus().0.len(), fp.threads);
    }

    #[test]
    fn selected_word() {
        assert_eq!(selected("always [madvise] never"), "madvise");
        assert_eq!(selected("plain"), "plain");
    }

    #[test]
    fn affinity_round_trip() {
        let orig = get_affinity().unwrap();
        set_affinity(&[orig.0[0]]).unwrap();
        assert_eq!(get_affinity().unwrap().0, vec![orig.0[0]]);
        set_affinity(&orig.0).unwrap();
    }
}
