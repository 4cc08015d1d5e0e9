//! The running system: its fingerprint (recorded with every run), noise
//! warnings with their remedies, and CPU affinity.
//!
//! What is read is OS-specific and lives in one module per OS (`linux.rs`;
//! a `freebsd.rs` reading sysctls slots in beside it). This module holds
//! the portable types.

#[cfg(target_os = "linux")]
mod linux;
pub mod probe;
#[cfg(target_os = "linux")]
pub mod watchdog;
#[cfg(target_os = "linux")]
use linux as os;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::os::fd::{FromRawFd, OwnedFd};

use crate::units::CpuSet;

/// Everything recorded about the machine a run happened on. Fields that
/// could not be read are `None`/empty; the reason is never fatal.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Fingerprint {
    /// Host name.
    pub hostname: String,
    /// `uname -s`: Linux, FreeBSD.
    pub os: String,
    /// OS release name (`PRETTY_NAME` of /etc/os-release).
    pub os_release: Option<String>,
    /// Kernel release (`uname -r`).
    pub kernel_release: String,
    /// Kernel version string (`uname -v`).
    pub kernel_version: String,
    /// Boot command line.
    pub cmdline: Option<String>,
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// CPU vendor id (GenuineIntel, AuthenticAMD).
    pub cpu_vendor: Option<String>,
    pub cpu_family: Option<u32>,
    pub cpu_model_number: Option<u32>,
    pub cpu_stepping: Option<u32>,
    /// Microcode revision as the kernel reports it (`0x...`).
    pub microcode: Option<String>,
    /// CPU feature flags (for probes such as `cpu.flag.pcid`).
    pub cpu_flags: Vec<String>,
    pub sockets: usize,
    /// Physical cores in all sockets.
    pub cores: usize,
    /// Online hardware threads.
    pub threads: usize,
    /// Online CPUs as a list (`0-1`).
    pub online_cpus: String,
    /// SMT control (`on`, `off`, `notsupported`, ...).
    pub smt: Option<String>,
    pub numa_nodes: usize,
    /// Total memory in bytes.
    pub memory_bytes: u64,
    /// Every file of /sys/devices/system/cpu/vulnerabilities.
    pub vulnerabilities: IndexMap<String, String>,
    pub cpufreq_driver: Option<String>,
    pub governor: Option<String>,
    /// `Some(true)` when turbo/boost is enabled; `None` if unknown.
    pub boost: Option<bool>,
    /// Transparent huge pages mode (the selected word).
    pub thp: Option<String>,
    pub clocksource: Option<String>,
    /// Hypervisor vendor or `None` on bare metal.
    pub hypervisor: Option<String>,
    /// 1-, 5-, 15-minute load averages.
    pub loadavg: [f64; 3],
    /// Pairs of SMT siblings that were both busy while the fingerprint was
    /// taken (per-CPU busy fraction over a short window).
    pub busy_smt_pairs: Vec<(usize, usize)>,
    /// Readings of probes a campaign used, by name.
    #[serde(default)]
    pub probes: IndexMap<String, String>,
    /// The kbench that measured (`0.1.0`); absent in older records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kbench: Option<String>,
    /// The C compiler command benchmarks and scale testcases build with
    /// (`$CC`, else `cc`): the first line of its `--version`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compiler: Option<String>,
}

/// A noise hazard found in the fingerprint, with its remedy.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Warning {
    pub hazard: String,
    pub remedy: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (remedy: {})", self.hazard, self.remedy)
    }
}

/// Read the fingerprint of the running system.
/// This process, on this boot (`None` where the OS does not say).
pub fn owner() -> Option<crate::record::Owner> {
    os::owner(std::process::id())
}

/// Whether `o`, recorded on host `host`, is certainly gone: this is that
/// host, and it was rebooted since or the process no longer exists. On
/// another host nothing can be told.
pub fn owner_is_gone(o: &crate::record::Owner, host: &str) -> bool {
    if host != os::hostname() {
        return false;
    }
    match os::owner(o.pid) {
        Some(now) => now.boot_id != o.boot_id || now.start != o.start,
        None => os::owner(std::process::id()).is_some(),
    }
}

/// This host's name, as fingerprints record it.
pub fn fingerprint_hostname() -> String {
    os::hostname()
}

pub fn fingerprint() -> Fingerprint {
    os::fingerprint()
}

/// The CPUs that are online now.
pub fn online_cpus() -> CpuSet {
    os::online_cpus()
}

impl Fingerprint {
    /// Noise hazards and what to do about them.
    pub fn warnings(&self) -> Vec<Warning> {
        let mut w = Vec::new();
        let mut add = |hazard: String, remedy: &str| {
            w.push(Warning {
                hazard,
                remedy: remedy.into(),
            })
        };
        if let Some(g) = &self.governor
            && g != "performance"
        {
            add(
                format!("cpufreq governor is `{g}`: the clock speed changes under load"),
                "cpupower frequency-set -g performance",
            );
        }
        if self.boost == Some(true) {
            add(
                "turbo/boost is on: the clock depends on temperature and on the other cores".into(),
                "echo 0 > /sys/devices/system/cpu/cpufreq/boost (or echo 1 > /sys/devices/system/cpu/intel_pstate/no_turbo)",
            );
        }
        if let Some(h) = &self.hypervisor {
            add(
                format!("running under a hypervisor ({h}): steal time and vCPU wake-ups add noise"),
                "measure on bare metal, or pin vCPUs on the host and compare only runs on the same VM",
            );
        }
        let per_cpu = self.loadavg[0] / self.threads.max(1) as f64;
        if per_cpu > 0.1 {
            add(
                format!(
                    "load average {:.2} is {:.2} per CPU: other work competes for the CPUs",
                    self.loadavg[0], per_cpu
                ),
                "stop other work and wait for the load to settle",
            );
        }
        for (a, b) in &self.busy_smt_pairs {
            add(
                format!("SMT siblings CPU {a} and CPU {b} were both busy"),
                "leave the sibling of each measuring CPU idle, or disable SMT (echo off > /sys/devices/system/cpu/smt/control)",
            );
        }
        w
    }
}

/// Every process a command starts dies with its sample and with kbench,
/// also one that left the command's process group (`setsid`): kbench is a
/// child subreaper (orphans come back to it) and, where it may make one,
/// runs its commands in a cgroup of their own that the watchdog empties
/// if kbench is killed. Once per process, before the first command.
pub fn contain_descendants() {
    os::contain_descendants();
    // Started after the cgroup exists, so it knows to empty it.
    #[cfg(target_os = "linux")]
    watchdog::ready();
}

/// Scratch files and directories (`TMPDIR/kbench-PID-*`) are removed by
/// the watchdog if kbench is killed: start it (once) before making one.
pub fn watch_scratch() {
    // The watchdog learns the commands' cgroup when it starts: make that
    // first, whichever comes first.
    contain_descendants();
}

/// kbench's children now: taken just before a command is spawned, so
/// [`kill_escaped`] knows which children came back from it.
pub fn children() -> std::collections::BTreeSet<libc::pid_t> {
    os::children()
}

/// In the forked child, before exec (async-signal-safe): join the
/// commands' cgroup.
pub fn enter_command_cgroup() {
    os::enter_cgroup();
}

/// After a command's process group was killed and reaped: kill what it
/// left elsewhere and reap what comes back to kbench (new since `before`),
/// each one's usage to `reaped`.
pub fn kill_escaped(
    before: &std::collections::BTreeSet<libc::pid_t>,
    reaped: &mut dyn FnMut(&libc::rusage),
) {
    os::kill_escaped(before, reaped);
}

/// Pin the calling thread to one CPU. Allocation-free, so a forked child
/// or a task thread may call it.
pub fn pin_current_thread(cpu: usize) -> std::io::Result<()> {
    os::set_affinity(&[cpu])
}

/// Set the calling thread's CPU affinity (inherited by children). A set
/// the kernel refuses because none of its CPUs may be used (outside the
/// process's cpuset) is bad input: the error names it and the CPUs the
/// thread has.
pub fn set_affinity(set: &CpuSet) -> anyhow::Result<()> {
    os::set_affinity(&set.0).map_err(|e| {
        if e.raw_os_error() == Some(libc::EINVAL) {
            let have = get_affinity().map_or_else(|_| "?".into(), |s| s.to_string());
            crate::error::bad_input!(
                "CPUs `{set}`: not usable here (this process runs in a cpuset of CPUs {have}; name those)"
            )
        } else {
            anyhow::anyhow!("setting the CPU affinity to `{set}`: {e}")
        }
    })
}

/// Map `len` bytes of zeroed anonymous memory, private to this process or
/// shared with its children. Allocation-free, so timed loops may call it.
#[inline]
pub fn mmap_anon(len: usize, shared: bool) -> std::io::Result<*mut u8> {
    let kind = if shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    // SAFETY: a fresh anonymous mapping; MAP_FAILED is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            kind | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(p.cast())
    }
}

/// A pipe whose ends are closed on exec (children never inherit them):
/// `(read end, write end)`.
pub fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element out-array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The calling thread's CPU affinity.
pub fn get_affinity() -> std::io::Result<CpuSet> {
    os::get_affinity()
}

/// kbench's cache directory `sub`: `$XDG_CACHE_HOME/kbench/SUB`, else
/// `~/.cache/kbench/SUB`, else under the temporary directory.
pub fn cache_dir(sub: &str) -> std::path::PathBuf {
    use std::path::PathBuf;
    std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("kbench")
        .join(sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_set_the_kernel_refuses_is_bad_input_naming_it() {
        // No machine this runs on has CPU 1000 online (CPU_SETSIZE is 1024):
        // the kernel refuses the set as it refuses CPUs outside a cpuset.
        let before = get_affinity().unwrap();
        let e = set_affinity(&CpuSet(vec![1000])).unwrap_err();
        assert_eq!(crate::error::exit_code(&e), 2, "{e:#}");
        let msg = format!("{e:#}");
        assert!(msg.starts_with("CPUs `1000`: not usable here"), "{msg}");
        assert!(msg.contains(&before.to_string()), "{msg}");
        assert_eq!(get_affinity().unwrap(), before, "unchanged");
    }
}
