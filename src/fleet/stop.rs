//! Ctrl-C (SIGINT) and SIGTERM in the fleet coordinator: remembered, and
//! every `ssh` it started is ended, so that each host's thread sees its
//! connection close and records its run as interrupted. Each remote
//! kbench then finds its output closed at its next event and stops as
//! interrupted too, its samples kept in the host's own store (the next
//! `fleet run` fetches what the coordinator lacks). A second signal ends
//! the coordinator at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::Context as _;

/// The signal that asked the fleet to stop (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The ssh processes alive now.
static CHILDREN: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The signal that stopped the fleet, if one did.
pub fn requested() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<u32>> {
    CHILDREN.lock().unwrap_or_else(|e| e.into_inner())
}

fn terminate(pid: u32) {
    if let Ok(p) = i32::try_from(pid) {
        // SAFETY: kill(2) on a child of ours that has not been reaped
        // yet (it leaves the list before its wait returns).
        unsafe { libc::kill(p, libc::SIGTERM) };
    }
}

/// An ssh process, ended when the fleet stops, until dropped (drop it
/// only after the process was waited for). Its process group is the
/// watchdog's until then.
pub struct Tracked {
    pid: u32,
    _group: crate::system::watchdog::Guarded,
}

/// Track the child `pid` (the leader of its own process group, which it
/// registered with the watchdog: `ssh::start`); when the fleet is stopping
/// already, it is ended at once.
pub fn track(pid: u32) -> Tracked {
    lock().push(pid);
    if requested().is_some() {
        terminate(pid);
    }
    Tracked {
        pid,
        _group: crate::system::watchdog::registered(pid as libc::pid_t),
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        lock().retain(|p| *p != self.pid);
    }
}

/// The handlers of SIGINT and SIGTERM, installed for one `fleet run`;
/// they go when it is dropped.
pub struct Interrupts {
    ids: Vec<signal_hook::SigId>,
}

impl Interrupts {
    pub fn install() -> anyhow::Result<Interrupts> {
        const MSG: &[u8] =
            b"kbench: stopping every host (their samples are kept; signal again to quit now)\n";
        let mut ids = Vec::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            let action = move || {
                if SIGNAL
                    .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
                {
                    signal_hook::low_level::exit(128 + sig);
                }
                // SAFETY: write(2) is async-signal-safe; the buffer is static.
                unsafe { libc::write(2, MSG.as_ptr().cast(), MSG.len()) };
            };
            // SAFETY: the action only touches an atomic and calls
            // async-signal-safe functions.
            ids.push(
                unsafe { signal_hook::low_level::register(sig, action) }
                    .context("installing signal handler")?,
            );
        }
        Ok(Interrupts { ids })
    }

    /// Until `done`: once a signal came, end every ssh (run on a thread
    /// of the fleet's scope; a signal handler cannot take the lock).
    pub fn watch(&self, done: &AtomicBool) {
        while !done.load(Ordering::SeqCst) {
            if requested().is_some() {
                for pid in lock().iter() {
                    terminate(*pid);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Interrupts {
    fn drop(&mut self) {
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
