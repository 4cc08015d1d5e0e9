//! IPC testcases after the will-it-scale files of the same names: a byte
//! through a task's own pipe or UNIX socket pair, and a pipe ping-pong
//! with a partner (context_switch1), the one testcase with a helper task.

use std::convert::Infallible;

use super::{Body, Task, check, testcase};

fn body(f: impl Fn(&Task) -> anyhow::Result<Infallible> + Send + Sync + 'static) -> Box<dyn Body> {
    Box::new(f)
}

/// Move one byte through fd, retrying on EINTR as will-it-scale does.
fn xfer(fd: libc::c_int, write: bool, what: &str) -> anyhow::Result<()> {
    let mut c = 0u8;
    loop {
        // SAFETY: one byte from/to a local.
        let n = unsafe {
            if write {
                libc::write(fd, &c as *const u8 as *const _, 1)
            } else {
                libc::read(fd, &mut c as *mut u8 as *mut _, 1)
            }
        };
        if n == 1 {
            return Ok(());
        }
        if n < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        if n == 0 {
            anyhow::bail!("{what}: end of file (the other side is gone)");
        }
        anyhow::bail!("{what}: {}", std::io::Error::last_os_error());
    }
}

/// Write a byte into one end and read it back from the other.
fn loopback(t: &Task, fds: [libc::c_int; 2]) -> anyhow::Result<Infallible> {
    loop {
        xfer(fds[1], true, "write")?;
        xfer(fds[0], false, "read")?;
        t.counter.add(1);
    }
}

testcase!(
    /// will-it-scale pipe1: write one byte into the task's own pipe and
    /// read it back (no other task involved, no sleeping).
    Pipe1,
    "pipe1",
    "write()+read() of 1 byte through a task-private pipe: pipe locking and wake-up checks, no context switch",
    prepare = |_| {
        Ok(body(|t| {
            let mut fds = [0; 2];
            // SAFETY: valid out-array.
            check(unsafe { libc::pipe(fds.as_mut_ptr()) } as i64, "pipe")?;
            loopback(t, fds)
        }))
    }
);

testcase!(
    /// will-it-scale unix1: the same through a task-private UNIX stream
    /// socket pair (written at one end, read at the other).
    Unix1,
    "unix1",
    "write()+read() of 1 byte through a task-private UNIX stream socket pair: socket buffers and locks",
    prepare = |_| {
        Ok(body(|t| {
            let mut fds = [0; 2];
            // SAFETY: valid out-array.
            check(
                // SAFETY: fds is a two-element array we own.
                unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } as i64,
                "socketpair",
            )?;
            loopback(t, [fds[0], fds[1]])
        }))
    }
);

testcase!(
    /// will-it-scale context_switch1: the task and its partner pass a byte
    /// back and forth over two pipes; each round trip is two context
    /// switches and counts 2, as in the original. The partner is a helper
    /// task (process or thread, by mode) on the task's own CPU, as
    /// will-it-scale's inherits its creator's affinity: same-CPU switches.
    ContextSwitch1,
    "context_switch1",
    "pipe ping-pong with a partner task on the same CPU: wake-up and context switch",
    prepare = |_| {
        Ok(body(|t| {
            let (mut to, mut from) = ([0; 2], [0; 2]);
            // SAFETY: valid out-arrays.
            check(unsafe { libc::pipe(to.as_mut_ptr()) } as i64, "pipe")?;
            // SAFETY: from is a two-element array we own.
            check(unsafe { libc::pipe(from.as_mut_ptr()) } as i64, "pipe")?;
            t.spawn_helper(move || loop {
                xfer(to[0], false, "partner read")?;
                xfer(from[1], true, "partner write")?;
            })?;
            loop {
                xfer(to[1], true, "write")?;
                xfer(from[0], false, "read")?;
                t.counter.add(2);
            }
        }))
    }
);
