//! Probes: named readings of the running system's state, so a `system`
//! factor can be verified instead of trusted. A cell filed under `pti=off`
//! only runs when the probe says the kernel really runs without PTI, and
//! the reading it ran under is stored with its samples.
//!
//! Built-in probes (the portable names; what they read is per OS, in the
//! backends' `read_probe`: `linux.rs` below, `freebsd.rs` from sysctls and
//! loader variables, see docs/platforms.md):
//!
//! | probe                | reading                                               |
//! |----------------------|-------------------------------------------------------|
//! | `kernel.release`     | `uname -r`                                            |
//! | `kernel.version`     | `uname -v`                                            |
//! | `cmdline.<param>`    | `present` for a bare word, its value for `param=v`    |
//! | `vuln.<name>`        | the vulnerabilities file (`Mitigation: PTI`)          |
//! | `cpu.flag.<flag>`    | `present` when the CPU flag is listed                 |
//! | `microcode`          | microcode revision (`0x...`)                          |
//! | `sysctl.<a.b.c>`     | /proc/sys/a/b/c; FreeBSD: the sysctl a.b.c            |
//! | `smt`                | SMT control (`on`, `off`, `notsupported`)             |
//! | `thp`                | the selected transparent-huge-pages mode              |
//! | `governor`           | cpufreq governor of cpu0                              |
//! | `online_cpus`        | online CPU list (`0-1`)                               |
//!
//! and `probe = ["cmd", "arg"]`: the command's trimmed stdout. A reading
//! that does not exist (no such file, flag or parameter; a probe command
//! that fails) is the word `absent`.
//!
//! Matching an expected value against a reading ([`matches`]):
//! `absent` matches an absent reading; `present` matches any reading that
//! is not absent (for `cmdline.nopti` both `nopti` and `nopti=1`);
//! `re:PATTERN` matches when the regular expression finds a match;
//! `not:VALUE` matches any reading that is neither absent nor VALUE (e.g.
//! "any microcode but the pre-fix revision"); anything else must equal the
//! reading exactly (both trimmed).

use std::fmt;
use std::io::Read;
use std::time::{Duration, Instant};

/// The reading of something that does not exist.
pub const ABSENT: &str = "absent";

/// A probe: what to read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Probe {
    KernelRelease,
    KernelVersion,
    Cmdline(String),
    Vuln(String),
    CpuFlag(String),
    Microcode,
    Sysctl(String),
    Smt,
    Thp,
    Governor,
    OnlineCpus,
    /// A command whose trimmed stdout is the reading.
    Command(Vec<String>),
}

/// The names accepted by [`Probe::parse`], for error messages.
pub const NAMES: &str = "kernel.release, kernel.version, cmdline.<param>, vuln.<name>, \
cpu.flag.<flag>, microcode, sysctl.<name>, smt, thp, governor, online_cpus";

impl Probe {
    /// Parse a built-in probe name. An optional OS prefix (`linux.`,
    /// `freebsd.`) is accepted so plans can say which OS they mean.
    pub fn parse(name: &str) -> Result<Probe, String> {
        let n = name.trim();
        let n = n
            .strip_prefix("linux.")
            .or_else(|| n.strip_prefix("freebsd."))
            .unwrap_or(n);
        let arg = |prefix: &str| -> Option<Result<String, String>> {
            n.strip_prefix(prefix).map(|rest| {
                if rest.is_empty() || rest.chars().any(|c| c.is_whitespace() || c == '/') {
                    Err(format!(
                        "probe `{name}`: `{prefix}` needs a name after it (e.g. {prefix}nopti)"
                    ))
                } else {
                    Ok(rest.to_string())
                }
            })
        };
        let p = match n {
            "kernel.release" => Probe::KernelRelease,
            "kernel.version" => Probe::KernelVersion,
            "microcode" => Probe::Microcode,
            "smt" => Probe::Smt,
            "thp" => Probe::Thp,
            "governor" => Probe::Governor,
            "online_cpus" => Probe::OnlineCpus,
            _ => {
                if let Some(a) = arg("cmdline.") {
                    Probe::Cmdline(a?)
                } else if let Some(a) = arg("vuln.") {
                    Probe::Vuln(a?)
                } else if let Some(a) = arg("cpu.flag.") {
                    Probe::CpuFlag(a?)
                } else if let Some(a) = arg("sysctl.") {
                    Probe::Sysctl(a?)
                } else {
                    return Err(format!("unknown probe `{name}` (known: {NAMES})"));
                }
            }
        };
        Ok(p)
    }

    /// The key of this probe's reading in the fingerprint's `probes` map.
    pub fn key(&self) -> String {
        self.to_string()
    }

    /// Read the probe now; `absent` when there is nothing to read.
    pub fn read(&self) -> String {
        let r = match self {
            Probe::Command(argv) => run_probe_command(argv),
            other => <super::Host as super::Os>::read_probe(other),
        };
        r.map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| ABSENT.to_string())
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Probe::KernelRelease => f.write_str("kernel.release"),
            Probe::KernelVersion => f.write_str("kernel.version"),
            Probe::Cmdline(p) => write!(f, "cmdline.{p}"),
            Probe::Vuln(v) => write!(f, "vuln.{v}"),
            Probe::CpuFlag(c) => write!(f, "cpu.flag.{c}"),
            Probe::Microcode => f.write_str("microcode"),
            Probe::Sysctl(s) => write!(f, "sysctl.{s}"),
            Probe::Smt => f.write_str("smt"),
            Probe::Thp => f.write_str("thp"),
            Probe::Governor => f.write_str("governor"),
            Probe::OnlineCpus => f.write_str("online_cpus"),
            Probe::Command(argv) => write!(f, "cmd:{}", argv.join(" ")),
        }
    }
}

/// Does `reading` satisfy `expected`? (Rules in the module doc.)
pub fn matches(expected: &str, reading: &str) -> bool {
    let (e, r) = (expected.trim(), reading.trim());
    match e {
        "absent" => r == ABSENT,
        "present" => r != ABSENT,
        _ => {
            if let Some(pat) = e.strip_prefix("re:") {
                regex::Regex::new(pat).is_ok_and(|re| re.is_match(r))
            } else if let Some(v) = e.strip_prefix("not:") {
                r != ABSENT && r != v.trim()
            } else {
                e == r
            }
        }
    }
}

/// Check an expected value is well formed (a `re:` pattern compiles).
pub fn check_expected(expected: &str) -> Result<(), String> {
    if let Some(pat) = expected.trim().strip_prefix("re:") {
        regex::Regex::new(pat).map_err(|e| {
            format!(
                "bad regular expression `{pat}`: {}",
                e.to_string().lines().last().unwrap_or("")
            )
        })?;
    }
    Ok(())
}

/// Run a probe command (stdin closed, 10 s limit); its stdout, or `None`
/// when it cannot run, fails or hangs.
fn run_probe_command(argv: &[String]) -> Option<String> {
    let (prog, args) = argv.split_first()?;
    let mut child = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut out = child.stdout.take()?;
    // Read on a thread so a probe that hangs with a full pipe cannot block
    // us past the deadline.
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let text = reader.join().ok()?;
    status.filter(|s| s.success()).map(|_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_print_back() {
        for n in [
            "kernel.release",
            "cmdline.nopti",
            "vuln.meltdown",
            "cpu.flag.pcid",
            "sysctl.kernel.pid_max",
            "online_cpus",
        ] {
            assert_eq!(Probe::parse(n).unwrap().to_string(), n);
        }
        assert_eq!(
            Probe::parse("linux.vuln.meltdown").unwrap(),
            Probe::Vuln("meltdown".into())
        );
        let e = Probe::parse("bogus.thing").unwrap_err();
        assert!(e.starts_with("unknown probe `bogus.thing`"), "{e}");
        assert!(Probe::parse("cmdline.").is_err());
        assert!(Probe::parse("sysctl.a/b").is_err());
    }

    #[test]
    fn reads_this_machine() {
        assert_ne!(Probe::KernelRelease.read(), ABSENT);
        assert_ne!(Probe::OnlineCpus.read(), ABSENT);
        assert_ne!(Probe::Sysctl("kernel.pid_max".into()).read(), ABSENT);
        assert_eq!(Probe::Sysctl("kernel.no_such_knob".into()).read(), ABSENT);
        assert_eq!(Probe::CpuFlag("no_such_flag_xyz".into()).read(), ABSENT);
        assert_eq!(Probe::Cmdline("no_such_param_xyz".into()).read(), ABSENT);
        let echo = Probe::Command(vec!["echo".into(), " hi ".into()]);
        assert_eq!(echo.read(), "hi");
        assert_eq!(Probe::Command(vec!["false".into()]).read(), ABSENT);
    }

    #[test]
    fn matching_rules() {
        assert!(matches("Vulnerable", "Vulnerable"));
        assert!(!matches("Vulnerable", "Mitigation: PTI"));
        assert!(matches("present", "1"));
        assert!(matches("present", "present"));
        assert!(!matches("present", ABSENT));
        assert!(matches("absent", ABSENT));
        assert!(!matches("absent", "present"));
        assert!(matches("re:^Mitigation", "Mitigation: PTI"));
        assert!(!matches("re:^Mitigation", "Vulnerable"));
        assert!(check_expected("re:(").is_err());
        assert!(matches("not:0x200005e", "0x1000065"));
        assert!(!matches("not:0x200005e", "0x200005e"));
        assert!(!matches("not:0x200005e", ABSENT));
    }
}
