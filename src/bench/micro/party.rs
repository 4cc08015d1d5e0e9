//! Multi-party benchmarks: forked children pinned per `placement`, and the
//! two engines every such benchmark is built from.
//!
//! * [`Parties`] forks children that die with kbench (PR_SET_PDEATHSIG),
//!   ignore the terminal's SIGINT (kbench itself stops after the current
//!   sample and then kills them), are pinned to the CPU their placement
//!   chose, keep only the descriptors they need, and report the CPU they
//!   actually run on. Dropping it kills (SIGKILL) and reaps every child, so
//!   no child outlives its cell, on success, error or interrupt.
//! * [`Flow`]: writer -> channel -> reader pairs, bytes/s (pipe-bw,
//!   pipeflex, unix-bw, tcp-bw). Both ends are children; kbench only starts
//!   a transfer of a fixed amount and waits for the reader's clock.
//! * [`PingPong`]: kbench and one child bounce a message, ns per round
//!   trip (pipe-lat, ctx-switch, unix-lat, tcp-lat).
//!
//! Code that runs in a child must not allocate or lock: kbench may have
//! other threads (the test harness does) whose locks a fork copies held.

use anyhow::{Context, anyhow, bail};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use super::common::{
    PageBuf, calibrate_amount, errno, pipe_cloexec, read_exact_raw, recv_words, send_words,
    write_all_raw,
};
use super::{Instance, Measure, calibrate, now_ns, time_loop};
use crate::bench::{ParamDef, ParamType};
use crate::error::bad_input;
use crate::units::CpuSet;

/// The `placement` parameter with a benchmark's default.
pub const fn placement_param(default: &'static str) -> ParamDef {
    ParamDef {
        name: "placement",
        ty: ParamType::Placement,
        default: Some(default),
        help: "where the parties run, inside the allowed CPUs: same (one CPU), cross (each its own), none (scheduler), or a list (party i on the i-th)",
    }
}

/// Parse an explicit placement list keeping its order (`1,0` puts party 0
/// on CPU 1); ranges expand in order.
fn ordered_list(s: &str) -> Result<Vec<usize>, String> {
    let bad = || format!("placement `{s}`: expected same, cross, none or a CPU list such as 0,1");
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        if let Some((a, b)) = part.split_once('-') {
            let a: usize = a.trim().parse().map_err(|_| bad())?;
            let b: usize = b.trim().parse().map_err(|_| bad())?;
            if a > b {
                return Err(bad());
            }
            v.extend(a..=b);
        } else {
            v.push(part.parse().map_err(|_| bad())?);
        }
    }
    if v.is_empty() {
        return Err(bad());
    }
    Ok(v)
}

/// The CPU of each of `parties` parties (`None` = unpinned) for a
/// placement, inside `allowed` (the affinity kbench has when the cell is
/// prepared: the cell's `cpus` factor, or taskset's set).
pub fn resolve_in(
    placement: &str,
    parties: usize,
    allowed: &[usize],
) -> Result<Vec<Option<usize>>, String> {
    let set = CpuSet(allowed.to_vec());
    let first = *allowed
        .first()
        .ok_or_else(|| "no CPU is allowed".to_string())?;
    Ok(match placement {
        "none" => vec![None; parties],
        "same" => vec![Some(first); parties],
        "cross" => {
            if allowed.len() < 2 && parties > 1 {
                return Err(format!(
                    "placement=cross needs at least 2 CPUs but only CPU {set} is allowed (by a `cpus` factor or taskset); use placement=same or none"
                ));
            }
            (0..parties)
                .map(|i| Some(allowed[i % allowed.len()]))
                .collect()
        }
        list => {
            let cpus = ordered_list(list)?;
            if cpus.len() > parties {
                return Err(format!(
                    "placement={list} names {} CPUs for {parties} parties (party i runs on the i-th)",
                    cpus.len()
                ));
            }
            if let Some(c) = cpus.iter().find(|c| !allowed.contains(c)) {
                return Err(format!(
                    "placement={list}: CPU {c} is not in the allowed set {set} (a `cpus` factor or taskset restricts it)"
                ));
            }
            (0..parties).map(|i| Some(cpus[i % cpus.len()])).collect()
        }
    })
}

/// [`resolve_in`] against the current affinity; errors exit 2.
pub fn resolve(placement: &str, parties: usize) -> anyhow::Result<(Vec<Option<usize>>, CpuSet)> {
    let allowed = crate::system::get_affinity().context("reading CPU affinity")?;
    let cpus = resolve_in(placement, parties, &allowed.0).map_err(|e| bad_input!("{e}"))?;
    Ok((cpus, allowed))
}

/// Close every descriptor from 3 up except those in `keep` (sorted in
/// place). Allocation-free.
fn close_other_fds(keep: &mut [RawFd]) {
    keep.sort_unstable();
    let close_range = |lo: u32, hi: u32| {
        if !crate::system::close_range(lo, hi) {
            // Kernels without close_range: close one by one up to a sane
            // bound.
            let hi = hi.min(65_535);
            for fd in lo..=hi {
                // SAFETY: closing descriptors this (child) process owns;
                // EBADF on unused numbers is harmless.
                unsafe { libc::close(fd as i32) };
            }
        }
    };
    let mut next: u32 = 3;
    for &k in keep.iter() {
        if k < 0 || (k as u32) < next {
            continue;
        }
        if k as u32 > next {
            close_range(next, k as u32 - 1);
        }
        next = k as u32 + 1;
    }
    close_range(next, u32::MAX);
}

/// The CPU a process last ran on.
pub fn last_cpu(pid: libc::pid_t) -> Option<usize> {
    crate::system::last_cpu(pid)
}

/// The child's end of its link to kbench: a control pipe to read commands
/// from and a report pipe to answer on. EOF on control = exit.
#[derive(Clone, Copy)]
pub struct Link {
    pub ctl: RawFd,
    pub rep: RawFd,
}

impl Link {
    pub fn recv(&self, words: &mut [u64]) -> bool {
        recv_words(self.ctl, words)
    }
    pub fn send(&self, words: &[u64]) -> bool {
        send_words(self.rep, words)
    }
}

/// A forked child.
pub struct Child {
    pub role: String,
    pub pid: libc::pid_t,
    /// The CPU it was pinned to.
    pub pinned: Option<usize>,
    /// The CPU it reported running on after pinning.
    pub ran_on: usize,
    ctl: OwnedFd,
    rep: OwnedFd,
    reaped: bool,
}

/// Forked children of one cell; dropping kills and reaps them.
#[derive(Default)]
pub struct Parties {
    pub children: Vec<Child>,
}

/// Exits the child if its body unwinds instead of returning.
struct ExitOnUnwind;
impl Drop for ExitOnUnwind {
    fn drop(&mut self) {
        // SAFETY: _exit never returns and runs no destructors.
        unsafe { libc::_exit(101) };
    }
}

impl Parties {
    /// Fork a child that runs `body` pinned to `cpu` with only `keep` (and
    /// its link) open; returns its index. The body's return value is the
    /// exit code. `body` must not allocate.
    pub fn spawn<F: FnOnce(Link) -> i32>(
        &mut self,
        role: &str,
        cpu: Option<usize>,
        keep: &[RawFd],
        body: F,
    ) -> anyhow::Result<usize> {
        let (ctl_r, ctl_w) = pipe_cloexec()?;
        let (rep_r, rep_w) = pipe_cloexec()?;
        let mut keep_v: Vec<RawFd> = keep.to_vec();
        keep_v.push(ctl_r.as_raw_fd());
        keep_v.push(rep_w.as_raw_fd());
        let link = Link {
            ctl: ctl_r.as_raw_fd(),
            rep: rep_w.as_raw_fd(),
        };
        // SAFETY: getpid has no preconditions.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child below only makes async-signal-safe calls and
        // runs `body`, which by contract does not allocate; it ends in _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error()).context("fork");
        }
        if pid == 0 {
            let guard = ExitOnUnwind;
            // Checked below: a parent gone before the call sends nothing.
            let _ = crate::system::die_with_parent(libc::SIGKILL);
            // SAFETY: plain syscalls in the child.
            unsafe {
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                // Ctrl-C reaches the whole process group: kbench finishes
                // the current sample, then kills its children itself.
                libc::signal(libc::SIGINT, libc::SIG_IGN);
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            if let Some(c) = cpu
                && crate::system::pin_current_thread(c).is_err()
            {
                // SAFETY: exiting the child.
                unsafe { libc::_exit(2) };
            }
            close_other_fds(&mut keep_v);
            // SAFETY: sched_getcpu has no preconditions.
            let here = unsafe { libc::sched_getcpu() };
            if !link.send(&[here as u64]) {
                // SAFETY: exiting the child.
                unsafe { libc::_exit(3) };
            }
            let code = body(link);
            std::mem::forget(guard);
            // SAFETY: exiting the child without running parent state's
            // destructors.
            unsafe { libc::_exit(code) };
        }
        drop(ctl_r);
        drop(rep_w);
        self.children.push(Child {
            role: role.to_string(),
            pid,
            pinned: cpu,
            ran_on: 0,
            ctl: ctl_w,
            rep: rep_r,
            reaped: false,
        });
        let i = self.children.len() - 1;
        let mut m = [0u64; 1];
        self.recv(i, &mut m)?;
        self.children[i].ran_on = m[0] as usize;
        if let Some(c) = cpu
            && m[0] as usize != c
        {
            bail!("{role} was pinned to CPU {c} but runs on CPU {}", m[0]);
        }
        Ok(i)
    }

    pub fn send(&mut self, i: usize, words: &[u64]) -> anyhow::Result<()> {
        if send_words(self.children[i].ctl.as_raw_fd(), words) {
            Ok(())
        } else {
            Err(self.died(i))
        }
    }

    pub fn recv(&mut self, i: usize, words: &mut [u64]) -> anyhow::Result<()> {
        if recv_words(self.children[i].rep.as_raw_fd(), words) {
            Ok(())
        } else {
            Err(self.died(i))
        }
    }

    /// The error for a child that stopped answering, with its exit status.
    fn died(&mut self, i: usize) -> anyhow::Error {
        let c = &mut self.children[i];
        let mut st = 0;
        // Give it a moment to finish dying, then collect the status.
        for _ in 0..100 {
            // SAFETY: waiting for our own child.
            let r = unsafe { libc::waitpid(c.pid, &mut st, libc::WNOHANG) };
            if r == c.pid {
                c.reaped = true;
                let how = if libc::WIFEXITED(st) {
                    let code = libc::WEXITSTATUS(st);
                    let why = match code {
                        1 => " (kbench's process went away)",
                        2 => " (could not pin itself to its CPU)",
                        3 => " (could not report to kbench)",
                        10 => " (write failed)",
                        11 => " (vmsplice failed)",
                        20 => " (its channel was closed early)",
                        21 => " (read or splice failed)",
                        _ => "",
                    };
                    format!("exited with status {code}{why}")
                } else if libc::WIFSIGNALED(st) {
                    format!("was killed by signal {}", libc::WTERMSIG(st))
                } else {
                    format!("stopped (status {st})")
                };
                return anyhow!("the {} process (pid {}) {how}", c.role, c.pid);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        anyhow!("the {} process (pid {}) stopped answering", c.role, c.pid)
    }

    /// `role cpu N` for pinned children; `role unpinned in SET, last on
    /// cpu N` for the others (where the scheduler last ran them).
    pub fn describe(&self, allowed: &CpuSet) -> Vec<String> {
        self.children
            .iter()
            .map(|c| match (c.pinned, last_cpu(c.pid)) {
                (Some(_), _) => format!("{} cpu {}", c.role, c.ran_on),
                (None, Some(l)) => format!("{} unpinned in {allowed} (last on cpu {l})", c.role),
                (None, None) => format!("{} unpinned in {allowed}", c.role),
            })
            .collect()
    }
}

impl Drop for Parties {
    fn drop(&mut self) {
        for c in &self.children {
            if !c.reaped {
                // SAFETY: signalling our own, not yet reaped child.
                unsafe { libc::kill(c.pid, libc::SIGKILL) };
            }
        }
        for c in &mut self.children {
            if c.reaped {
                continue;
            }
            let mut st = 0;
            loop {
                // SAFETY: reaping our own child.
                let r = unsafe { libc::waitpid(c.pid, &mut st, 0) };
                if r >= 0 || errno() != libc::EINTR {
                    break;
                }
            }
            c.reaped = true;
        }
    }
}

/// How a writer puts data into its channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteMode {
    /// write(2): the kernel copies from the writer's buffer.
    Write,
    /// vmsplice(2) with SPLICE_F_GIFT: the kernel maps the writer's pages
    /// into the pipe instead of copying them.
    Vmsplice,
}

/// How a reader takes data out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadMode {
    /// read(2) into a buffer: one copy out of the kernel.
    Read,
    /// splice(2) from the pipe to /dev/null: no copy at all.
    SpliceNull,
}

/// What a [`Flow`] moves and how.
#[derive(Clone, Debug)]
pub struct FlowSpec {
    pub write_size: usize,
    pub read_size: usize,
    pub write_mode: WriteMode,
    pub read_mode: ReadMode,
    /// Bytes per pair per sample; calibrated when `None`.
    pub total: Option<u64>,
    pub placement: String,
    pub sample_time: f64,
}

/// Writer/reader pairs, bytes/s summed over pairs.
pub struct Flow {
    parties: Parties,
    spec: FlowSpec,
    pairs: usize,
    amount: Option<u64>,
    target_ns: u64,
    allowed: CpuSet,
    /// Totals over all transfers: write/vmsplice calls, bytes moved by
    /// vmsplice, reader calls.
    write_calls: u64,
    vmsplice_calls: u64,
    vmsplice_bytes: u64,
    read_calls: u64,
    bytes: u64,
    pub extra_notes: Vec<(String, String)>,
}

/// The writer child: wait for an amount, write it in `write_size` pieces,
/// report `[calls, vmsplice calls, vmsplice bytes]`.
fn writer_body(link: Link, fd: RawFd, buf: &PageBuf, mode: WriteMode) -> i32 {
    let size = buf.len();
    let mut cmd = [0u64; 1];
    loop {
        if !link.recv(&mut cmd) {
            return 0;
        }
        let mut left = cmd[0];
        let (mut calls, mut zc_calls, mut zc_bytes) = (0u64, 0u64, 0u64);
        while left > 0 {
            let n = left.min(size as u64) as usize;
            match mode {
                WriteMode::Write => {
                    if !write_all_raw(fd, &buf.as_slice()[..n]) {
                        return 10;
                    }
                    calls += 1;
                }
                WriteMode::Vmsplice => {
                    let mut off = 0usize;
                    while off < n {
                        let iov = libc::iovec {
                            // SAFETY: within the buffer.
                            iov_base: unsafe { buf.as_ptr().add(off) }.cast(),
                            iov_len: n - off,
                        };
                        // SAFETY: iov describes mapped memory that stays
                        // mapped (and untouched) while the pipe holds it.
                        let r = unsafe { crate::system::vmsplice_gift(fd, &iov) };
                        if r < 0 {
                            if errno() == libc::EINTR {
                                continue;
                            }
                            return 11;
                        }
                        off += r as usize;
                        zc_calls += 1;
                        zc_bytes += r as u64;
                        calls += 1;
                    }
                }
            }
            left -= n as u64;
        }
        if !link.send(&[calls, zc_calls, zc_bytes]) {
            return 12;
        }
    }
}

/// The reader child: wait for an amount, read it in `read_size` pieces (or
/// splice it to /dev/null), report `[end time, calls]`.
fn reader_body(link: Link, fd: RawFd, buf: &PageBuf, mode: ReadMode, null: RawFd) -> i32 {
    let size = buf.len();
    let mut cmd = [0u64; 1];
    loop {
        if !link.recv(&mut cmd) {
            return 0;
        }
        let mut left = cmd[0];
        let mut calls = 0u64;
        while left > 0 {
            let want = left.min(size as u64) as usize;
            let r = match mode {
                // SAFETY: the buffer has `size` >= want bytes.
                ReadMode::Read => unsafe { libc::read(fd, buf.as_ptr().cast(), want) },
                ReadMode::SpliceNull => crate::system::splice_move(fd, null, want),
            };
            if r == 0 {
                return 20;
            }
            if r < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                return 21;
            }
            left -= (r as u64).min(left);
            calls += 1;
        }
        if !link.send(&[now_ns(), calls]) {
            return 22;
        }
    }
}

impl Flow {
    /// Fork a writer and a reader per channel `(write end, read end)`; the
    /// parent's copies of the channel ends are closed afterwards. Party
    /// order for placement: writer 1, reader 1, writer 2, reader 2, ...
    pub fn start(spec: FlowSpec, channels: Vec<(OwnedFd, OwnedFd)>) -> anyhow::Result<Flow> {
        let pairs = channels.len();
        let (cpus, allowed) = resolve(&spec.placement, 2 * pairs)?;
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .context("opening /dev/null")?;
        let mut parties = Parties::default();
        for (i, (w, r)) in channels.iter().enumerate() {
            let suffix = if pairs > 1 {
                format!(" {}", i + 1)
            } else {
                String::new()
            };
            let wbuf = PageBuf::new(spec.write_size, 0x5a)?;
            let (wfd, mode) = (w.as_raw_fd(), spec.write_mode);
            parties.spawn(
                &format!("writer{suffix}"),
                cpus[2 * i],
                &[wfd],
                move |link| writer_body(link, wfd, &wbuf, mode),
            )?;
            let rbuf = PageBuf::new(spec.read_size, 0)?;
            let (rfd, mode, nfd) = (r.as_raw_fd(), spec.read_mode, null.as_raw_fd());
            parties.spawn(
                &format!("reader{suffix}"),
                cpus[2 * i + 1],
                &[rfd, nfd],
                move |link| reader_body(link, rfd, &rbuf, mode, nfd),
            )?;
        }
        // Only the children hold the channel ends now, so a dead writer is
        // EOF for its reader and a dead reader EPIPE for its writer.
        drop(channels);
        Ok(Flow {
            parties,
            target_ns: (spec.sample_time * 1e9) as u64,
            amount: spec.total,
            spec,
            pairs,
            allowed,
            write_calls: 0,
            vmsplice_calls: 0,
            vmsplice_bytes: 0,
            read_calls: 0,
            bytes: 0,
            extra_notes: Vec::new(),
        })
    }

    /// Move `amount` bytes through every pair; nanoseconds from the start
    /// command to the last byte read.
    fn transfer(&mut self, amount: u64) -> anyhow::Result<u64> {
        let t0 = now_ns();
        for p in 0..self.pairs {
            self.parties.send(2 * p, &[amount])?;
            self.parties.send(2 * p + 1, &[amount])?;
        }
        let mut end = t0;
        for p in 0..self.pairs {
            let mut r = [0u64; 2];
            self.parties.recv(2 * p + 1, &mut r)?;
            end = end.max(r[0]);
            self.read_calls += r[1];
            let mut w = [0u64; 3];
            self.parties.recv(2 * p, &mut w)?;
            self.write_calls += w[0];
            self.vmsplice_calls += w[1];
            self.vmsplice_bytes += w[2];
        }
        self.bytes += amount * self.pairs as u64;
        Ok(end.saturating_sub(t0).max(1))
    }
}

impl Instance for Flow {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        let amount = match self.amount {
            Some(a) => a,
            None => {
                let unit = self.spec.write_size as u64;
                let start = (unit * 16).max(256 << 10);
                let target = self.target_ns;
                let a = calibrate_amount(target, start, unit, |a| self.transfer(a))?;
                self.amount = Some(a);
                a
            }
        };
        let ns = self.transfer(amount)?;
        out.push(Measure {
            metric: 0,
            value: (amount * self.pairs as u64) as f64 * 1e9 / ns as f64,
        });
        Ok(())
    }

    /// An operation is one writer's piece of `write_size` bytes (the last
    /// piece of an amount may be shorter), over all pairs: what one
    /// write(2) moves, so counters read per operation are per piece.
    fn operations(&self) -> Option<f64> {
        let piece = self.spec.write_size.max(1) as u64;
        self.amount
            .map(|a| (a.div_ceil(piece) * self.pairs as u64) as f64)
    }

    fn placement(&self) -> Option<String> {
        Some(self.parties.describe(&self.allowed).join(", "))
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut n = self.extra_notes.clone();
        let writer = match self.spec.write_mode {
            WriteMode::Write => format!("write(2), {} calls", self.write_calls),
            WriteMode::Vmsplice => format!(
                "vmsplice(2) SPLICE_F_GIFT, {} calls moved {} of {} bytes",
                self.vmsplice_calls, self.vmsplice_bytes, self.bytes
            ),
        };
        n.push(("writer".into(), writer));
        let reader = match self.spec.read_mode {
            ReadMode::Read => format!("read(2), {} calls", self.read_calls),
            ReadMode::SpliceNull => format!("splice(2) to /dev/null, {} calls", self.read_calls),
        };
        n.push(("reader".into(), reader));
        if let Some(a) = self.amount {
            n.push((
                "bytes per sample".into(),
                (a * self.pairs as u64).to_string(),
            ));
        }
        n
    }
}

/// One side's descriptors: where it writes and where it reads (the same
/// socket for sockets, two pipes' ends for pipes).
pub struct Ends {
    pub wr: RawFd,
    pub rd: RawFd,
    /// The descriptors `wr` and `rd` belong to, kept open with the side.
    #[allow(dead_code)]
    pub owned: Vec<OwnedFd>,
}

/// kbench (`ping`) and a child (`pong`) bounce `size` bytes; the metric is
/// ns per round trip divided by `divisor`.
pub struct PingPong {
    parties: Parties,
    me: Ends,
    buf: Vec<u8>,
    my_cpu: Option<usize>,
    ran_on: Option<usize>,
    allowed: CpuSet,
    iters: Option<u64>,
    target_ns: u64,
    divisor: f64,
    /// A message was short or a call failed during the last loop.
    failed: bool,
}

fn pong_body(link: Link, ends: (RawFd, RawFd), buf: &mut [u8], stream: bool) -> i32 {
    let (wr, rd) = ends;
    let _ = link;
    loop {
        let ok = if stream {
            read_exact_raw(rd, buf)
        } else {
            // SAFETY: reading at most buf.len() bytes into buf.
            let r = unsafe { libc::read(rd, buf.as_mut_ptr().cast(), buf.len()) };
            r > 0 || (r < 0 && errno() == libc::EINTR)
        };
        if !ok || !write_all_raw(wr, buf) {
            return 0;
        }
    }
}

impl PingPong {
    /// Fork the pong child on `child` ends; kbench keeps `me`. `stream`:
    /// messages may arrive in pieces (pipes, stream sockets).
    pub fn start(
        placement: &str,
        size: usize,
        me: Ends,
        child: Ends,
        stream: bool,
        divisor: f64,
        sample_time: f64,
    ) -> anyhow::Result<PingPong> {
        let (cpus, allowed) = resolve(placement, 2)?;
        let mut parties = Parties::default();
        let mut cbuf = vec![0u8; size];
        let ends = (child.wr, child.rd);
        parties.spawn("pong", cpus[1], &[child.wr, child.rd], move |link| {
            pong_body(link, ends, &mut cbuf, stream)
        })?;
        drop(child);
        Ok(PingPong {
            parties,
            me,
            buf: vec![0u8; size],
            my_cpu: cpus[0],
            ran_on: None,
            allowed,
            iters: None,
            target_ns: (sample_time * 1e9) as u64,
            divisor,
            failed: false,
        })
    }
}

impl Instance for PingPong {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        // The runner resets kbench's affinity to the cell's set before
        // every sample; the ping side is pinned again here.
        if let Some(c) = self.my_cpu {
            crate::system::pin_current_thread(c)
                .with_context(|| format!("cannot pin to CPU {c}"))?;
        }
        let (wr, rd) = (self.me.wr, self.me.rd);
        let buf = &mut self.buf;
        let failed = &mut self.failed;
        *failed = false;
        let mut op = || {
            if !write_all_raw(wr, buf) || !read_exact_raw(rd, buf) {
                *failed = true;
            }
        };
        let iters = match self.iters {
            Some(n) => n,
            None => *self.iters.insert(calibrate(self.target_ns, &mut op)),
        };
        let ns = time_loop(iters, &mut op);
        if self.failed {
            return Err(self.parties.died(0));
        }
        // SAFETY: sched_getcpu has no preconditions.
        self.ran_on = Some(unsafe { libc::sched_getcpu() } as usize);
        // (for an unpinned ping this is where the loop ended)
        out.push(Measure {
            metric: 0,
            value: ns as f64 / iters as f64 / self.divisor,
        });
        Ok(())
    }

    fn operations(&self) -> Option<f64> {
        self.iters.map(|n| n as f64 * self.divisor)
    }

    fn placement(&self) -> Option<String> {
        let me = match (self.my_cpu, self.ran_on) {
            (Some(_), Some(c)) => format!("ping (kbench) cpu {c}"),
            (Some(c), None) => format!("ping (kbench) cpu {c}"),
            (None, Some(c)) => format!(
                "ping (kbench) unpinned in {} (last on cpu {c})",
                self.allowed
            ),
            (None, None) => format!("ping (kbench) unpinned in {}", self.allowed),
        };
        let mut v = vec![me];
        v.extend(self.parties.describe(&self.allowed));
        Some(v.join(", "))
    }

    fn notes(&self) -> Vec<(String, String)> {
        let mut n = vec![("message bytes".into(), self.buf.len().to_string())];
        if let Some(i) = self.iters {
            n.push(("round trips per sample".into(), i.to_string()));
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_resolve_inside_the_allowed_set() {
        let two = [0, 1];
        assert_eq!(resolve_in("same", 2, &two).unwrap(), vec![Some(0), Some(0)]);
        assert_eq!(
            resolve_in("cross", 2, &two).unwrap(),
            vec![Some(0), Some(1)]
        );
        assert_eq!(
            resolve_in("cross", 4, &two).unwrap(),
            vec![Some(0), Some(1), Some(0), Some(1)]
        );
        assert_eq!(resolve_in("none", 2, &two).unwrap(), vec![None, None]);
        assert_eq!(resolve_in("1,0", 2, &two).unwrap(), vec![Some(1), Some(0)]);
        assert_eq!(resolve_in("1", 2, &two).unwrap(), vec![Some(1), Some(1)]);
        let e = resolve_in("0,1,1", 2, &two).unwrap_err();
        assert!(e.contains("names 3 CPUs for 2 parties"), "{e}");
        // Same on the first allowed CPU, not CPU 0.
        assert_eq!(resolve_in("same", 2, &[3]).unwrap(), vec![Some(3), Some(3)]);
        let e = resolve_in("cross", 2, &[0]).unwrap_err();
        assert!(e.contains("placement=cross needs at least 2 CPUs"), "{e}");
        assert!(!e.contains('\n'));
        let e = resolve_in("0,1", 2, &[0]).unwrap_err();
        assert!(e.contains("CPU 1 is not in the allowed set 0"), "{e}");
    }

    #[test]
    fn children_report_their_cpu_and_die_with_the_parties() {
        let _g = super::super::common::testing::serial();
        let allowed = crate::system::get_affinity().unwrap();
        let cpu = *allowed.0.last().unwrap();
        let mut p = Parties::default();
        p.spawn("sleeper", Some(cpu), &[], |link| {
            let mut m = [0u64; 1];
            // Wait for EOF (never comes: killed by drop).
            while link.recv(&mut m) {}
            0
        })
        .unwrap();
        assert_eq!(p.children[0].ran_on, cpu);
        let pid = p.children[0].pid;
        // SAFETY: probing our own child.
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0);
        drop(p);
        // Reaped: the pid no longer names our child.
        // SAFETY: as above.
        let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        assert_eq!(r, -1, "child {pid} still exists");
    }

    #[test]
    fn a_dead_child_is_an_error_not_a_hang() {
        let _g = super::super::common::testing::serial();
        let mut p = Parties::default();
        p.spawn("quitter", None, &[], |_| 7).unwrap();
        let e = p.recv(0, &mut [0u64; 1]).unwrap_err().to_string();
        assert!(e.contains("quitter") && e.contains("status 7"), "{e}");
    }

    #[test]
    fn children_keep_only_their_descriptors() {
        let _g = super::super::common::testing::serial();
        let (_r, w) = pipe_cloexec().unwrap();
        let leaked = w.as_raw_fd();
        let mut p = Parties::default();
        p.spawn("probe", None, &[], move |link| {
            // SAFETY: F_GETFD on a descriptor number.
            let open = unsafe { libc::fcntl(leaked, libc::F_GETFD) } >= 0;
            link.send(&[open as u64]);
            0
        })
        .unwrap();
        let mut m = [9u64; 1];
        p.recv(0, &mut m).unwrap();
        assert_eq!(m[0], 0, "the parent's pipe leaked into the child");
    }
}
