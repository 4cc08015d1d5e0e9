//! `perf record` as the profiler on Linux: a child process attached to
//! this one (`-p`, following the processes and threads it starts later),
//! sampling `cpu-clock` with call graphs on the monotonic clock. It starts
//! with its events disabled and is enabled through its control FIFO, whose
//! acknowledgement says that sampling has begun before any cell is
//! measured. It dies with kbench (`PR_SET_PDEATHSIG`); its data file lives
//! in a private temporary directory removed when the profiler goes.

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::profiler::{Profiler, StackSample, parse_perf_script};

/// Samples per second of CPU time.
const HZ: u32 = 4000;
/// How long perf may take to attach.
const ATTACH: Duration = Duration::from_secs(20);

pub struct PerfRecord {
    child: Option<Child>,
    dir: PathBuf,
    kernel: bool,
}

/// Attach `perf record` to process `pid`, sampling once it acknowledges;
/// `paranoid` is `kernel.perf_event_paranoid` (kernel frames or not).
pub fn start(pid: u32, paranoid: Option<i32>) -> Result<PerfRecord, String> {
    let dir = std::env::temp_dir().join(format!(
        "kbench-profile-{}-{:x}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    ));
    std::fs::create_dir(&dir).map_err(|e| format!("--profile: {}: {e}", dir.display()))?;
    let mut p = PerfRecord {
        child: None,
        dir,
        kernel: kernel_allowed(paranoid),
    };
    p.spawn(pid)?;
    Ok(p)
}

/// Whether perf may record kernel frames of this user's processes, under
/// `kernel.perf_event_paranoid` `paranoid`.
fn kernel_allowed(paranoid: Option<i32>) -> bool {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    root || paranoid.is_some_and(|p| p <= 1)
}

fn mkfifo(path: &Path) -> Result<(), String> {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
        .map_err(|_| format!("--profile: bad path {}", path.display()))?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(format!("--profile: mkfifo {}: {e}", path.display()));
    }
    Ok(())
}

impl PerfRecord {
    fn spawn(&mut self, pid: u32) -> Result<(), String> {
        let (ctl, ack) = (self.dir.join("ctl"), self.dir.join("ack"));
        mkfifo(&ctl)?;
        mkfifo(&ack)?;
        let mut cmd = Command::new("perf");
        cmd.args(["record", "-q", "-g", "-e"])
            .arg(if self.kernel {
                "cpu-clock"
            } else {
                "cpu-clock:u"
            })
            .args(["-F", &HZ.to_string(), "-k", "CLOCK_MONOTONIC", "-D", "-1"])
            .arg(format!(
                "--control=fifo:{},{}",
                ctl.display(),
                ack.display()
            ))
            .args(["-p", &pid.to_string(), "-o"])
            .arg(self.dir.join("perf.data"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        // SAFETY: prctl only, between fork and exec.
        unsafe {
            cmd.pre_exec(|| super::die_with_parent(libc::SIGKILL));
        }
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                "--profile needs `perf` on PATH (Debian: apt-get install linux-perf); not found"
                    .to_string()
            }
            _ => format!("--profile: cannot start perf: {e}"),
        })?;
        self.child = Some(child);
        let deadline = Instant::now() + ATTACH;
        // The write end opens once perf reads its control FIFO.
        let mut ctl_w = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&ctl)
            {
                Ok(f) => break f,
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => self.wait_alive(deadline)?,
                Err(e) => return Err(format!("--profile: {}: {e}", ctl.display())),
            }
        };
        let mut ack_r = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&ack)
            .map_err(|e| format!("--profile: {}: {e}", ack.display()))?;
        ctl_w
            .write_all(b"enable\n")
            .map_err(|e| format!("--profile: perf's control FIFO: {e}"))?;
        let mut got = Vec::new();
        let mut buf = [0u8; 16];
        // perf answers `ack\n` and a NUL.
        while !got.windows(4).any(|w| w == b"ack\n") {
            match ack_r.read(&mut buf) {
                Ok(n) if n > 0 => got.extend_from_slice(&buf[..n]),
                Ok(_) => self.wait_alive(deadline)?,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    self.wait_alive(deadline)?
                }
                Err(e) => return Err(format!("--profile: perf's acknowledgement: {e}")),
            }
        }
        Ok(())
    }

    /// Wait a moment; an error with perf's own first line of complaint
    /// when it ended or did not attach in time.
    fn wait_alive(&mut self, deadline: Instant) -> Result<(), String> {
        std::thread::sleep(Duration::from_millis(5));
        let child = self.child.as_mut().expect("perf child");
        let ended = child.try_wait().ok().flatten().is_some();
        if !ended && Instant::now() < deadline {
            return Ok(());
        }
        let _ = child.kill();
        let _ = child.wait();
        let mut err = String::new();
        if let Some(mut s) = child.stderr.take() {
            let _ = s.read_to_string(&mut err);
        }
        let why = err
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or(if ended {
                "it exited"
            } else {
                "it did not attach in time"
            });
        Err(format!(
            "--profile: perf record could not sample this process: {why} (see perf_event_paranoid(7)'s note in perf-record(1), or run as root)"
        ))
    }
}

impl Profiler for PerfRecord {
    fn kernel(&self) -> bool {
        self.kernel
    }

    fn finish(mut self: Box<Self>) -> anyhow::Result<Vec<StackSample>> {
        let mut child = self.child.take().expect("perf child");
        // SAFETY: a signal to our own child, not yet reaped.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        let status = child.wait()?;
        // perf re-raises the SIGINT it stopped on, once its data is written.
        use std::os::unix::process::ExitStatusExt;
        if !status.success() && status.signal() != Some(libc::SIGINT) {
            let mut err = String::new();
            if let Some(mut s) = child.stderr.take() {
                let _ = s.read_to_string(&mut err);
            }
            anyhow::bail!("perf record failed ({status}): {}", err.trim());
        }
        let out = Command::new("perf")
            .args(["script", "-F", "comm,tid,time,ip,sym", "--ns", "-i"])
            .arg(self.dir.join("perf.data"))
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()?;
        if !out.status.success() {
            anyhow::bail!("perf script failed ({})", out.status);
        }
        Ok(parse_perf_script(&String::from_utf8_lossy(&out.stdout)))
    }
}

impl Drop for PerfRecord {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
