//! A real PostgreSQL server for the tests (unit and integration): `initdb`
//! in a temporary directory, a free port on 127.0.0.1, password
//! authentication over TCP, run as the `postgres` user when the tests run
//! as root (postgres refuses root). One server per test process, started
//! on first use; it stops and its directory is removed when the process
//! exits (a parent-death signal reaches its wrapper shell).
//!
//! The binaries come from `KBENCH_PG_BIN`, else the newest
//! `/usr/lib/postgresql/*/bin` (Debian's packages). Without them the
//! PostgreSQL tests skip with a message, except under CI (`CI` set), where
//! `.ci/run` installs them and their absence is a failure.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// The running test server.
pub struct Server {
    pub port: u16,
    pub user: String,
    pub password: String,
    /// Its data directory's parent (removed when the server stops).
    pub base: PathBuf,
}

impl Server {
    /// A URL naming database `db` with the password in it.
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{}:{}@127.0.0.1:{}/{db}",
            self.user, self.password, self.port
        )
    }
}

/// Where PostgreSQL's server binaries are, if anywhere.
pub fn bin_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("KBENCH_PG_BIN") {
        return Some(PathBuf::from(d));
    }
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    dirs.sort();
    dirs.pop().map(|(_, d)| d)
}

/// The server of this process, started on first use; `None` (after a
/// message naming `test`) when PostgreSQL is not installed.
pub fn server(test: &str) -> Option<&'static Server> {
    static SERVER: OnceLock<Option<Server>> = OnceLock::new();
    let s = SERVER.get_or_init(|| {
        let bin = bin_dir()?;
        Some(start(&bin).unwrap_or_else(|e| panic!("starting the test PostgreSQL server: {e}")))
    });
    if s.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: PostgreSQL binaries missing under CI (.ci/run installs postgresql)"
        );
        eprintln!(
            "skipping {test}: no PostgreSQL server binaries (apt-get install postgresql-15, or set KBENCH_PG_BIN)"
        );
    }
    s.as_ref()
}

/// A new, empty database on the test server; its URL (with password).
pub fn fresh_db(test: &str) -> Option<String> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let s = server(test)?;
    let mut name: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    name = format!("kb_{name}_{}", N.fetch_add(1, Ordering::SeqCst));
    let mut c = postgres::Client::connect(&s.url("postgres"), postgres::NoTls)
        .unwrap_or_else(|e| panic!("connecting to the test server: {e}"));
    c.batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("CREATE DATABASE {name}: {e}"));
    Some(s.url(&name))
}

/// uid and gid of the user the server runs as: `postgres` (else
/// `nobody`) when we are root, ourselves otherwise.
fn server_user() -> Option<(u32, u32)> {
    // SAFETY: getuid has no preconditions.
    if unsafe { libc::getuid() } != 0 {
        return None;
    }
    for name in [c"postgres", c"nobody"] {
        // SAFETY: getpwnam with a NUL-terminated name; the result is read
        // at once, before any other passwd call in this thread.
        let pw = unsafe { libc::getpwnam(name.as_ptr()) };
        if !pw.is_null() {
            // SAFETY: non-null passwd entry.
            return Some(unsafe { ((*pw).pw_uid, (*pw).pw_gid) });
        }
    }
    None
}

fn as_server_user(cmd: &mut Command, who: Option<(u32, u32)>) {
    if let Some((uid, gid)) = who {
        cmd.uid(uid).gid(gid);
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn start(bin: &Path) -> Result<Server, String> {
    let who = server_user();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let base = std::env::temp_dir().join(format!("kbench-pg-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    if let Some((uid, gid)) = who {
        std::os::unix::fs::chown(&base, Some(uid), Some(gid))
            .map_err(|e| format!("chown {}: {e}", base.display()))?;
    }
    let password = format!("kbpw{:x}", nanos ^ u128::from(std::process::id()) << 17);
    let pwfile = base.join("pw");
    std::fs::write(&pwfile, &password).map_err(|e| e.to_string())?;
    if let Some((uid, gid)) = who {
        std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid)).map_err(|e| e.to_string())?;
    }
    let data = base.join("data");
    let mut init = Command::new(bin.join("initdb"));
    init.args(["-D"])
        .arg(&data)
        .args(["-U", "kbench", "--pwfile"])
        .arg(&pwfile)
        .args([
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .current_dir(&base)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_server_user(&mut init, who);
    let out = init.output().map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let _ = std::fs::remove_file(&pwfile);
    for _ in 0..5 {
        let port = free_port().map_err(|e| e.to_string())?;
        let server = Server {
            port,
            user: "kbench".into(),
            password: password.clone(),
            base: base.clone(),
        };
        let exited = base.join("exited");
        let _ = std::fs::remove_file(&exited);
        spawn(bin, &base, port, who)?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            match postgres::Client::connect(&server.url("postgres"), postgres::NoTls) {
                Ok(_) => return Ok(server),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(100)),
            }
            if exited.exists() {
                break; // the server stopped at once (port taken): try another
            }
        }
    }
    Err(format!("no server answered; log in {}/log", base.display()))
}

/// Start the server under a wrapper shell that stops it (fast shutdown)
/// and removes `base` when this process exits. The wrapper is spawned from
/// a thread that lives as long as the process: a parent-death signal is
/// sent when the spawning thread ends.
fn spawn(bin: &Path, base: &Path, port: u16, who: Option<(u32, u32)>) -> Result<(), String> {
    let script = r#"
trap 'kill -INT $pid 2>/dev/null; wait $pid; rm -rf "$0"; exit 0' TERM INT HUP
"$1" -D "$0/data" -p "$2" -h 127.0.0.1 -c unix_socket_directories= -c fsync="$3" \
    -c full_page_writes="$3" -c max_connections=200 >"$0/log" 2>&1 &
pid=$!
wait $pid
echo $? >"$0/exited"
"#;
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(script)
        .arg(base)
        .arg(bin.join("postgres"))
        .arg(port.to_string())
        // Tests need no durability; a measurement does (KBENCH_PG_FSYNC=on).
        .arg(
            if std::env::var_os("KBENCH_PG_FSYNC").is_some_and(|v| v == "on") {
                "on"
            } else {
                "off"
            },
        )
        .current_dir(base)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    as_server_user(&mut cmd, who);
    // SAFETY: die_with_parent is async-signal-safe; runs after the uid
    // change (which would clear the setting).
    unsafe {
        cmd.pre_exec(|| crate::system::die_with_parent(libc::SIGTERM));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = cmd.spawn().map_err(|e| format!("starting postgres: {e}"));
        let ok = r.is_ok();
        let _ = tx.send(r.map(|_| ()));
        if ok {
            loop {
                std::thread::park();
            }
        }
    });
    rx.recv().map_err(|e| e.to_string())?
}

/// A server of a test's own, which the test may kill as a crash would
/// (SIGKILL to the postmaster) and start again on the same data directory
/// and port.
pub struct Own {
    pub server: Server,
    bin: PathBuf,
}

/// Start a server for `test` alone; `None` (after a message) when
/// PostgreSQL is not installed, as [`server`].
pub fn own_server(test: &str) -> Option<Own> {
    let Some(bin) = bin_dir() else {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: PostgreSQL binaries missing under CI (.ci/run installs postgresql)"
        );
        eprintln!("skipping {test}: no PostgreSQL server binaries");
        return None;
    };
    let server = start(&bin).unwrap_or_else(|e| panic!("starting a PostgreSQL server: {e}"));
    Some(Own { server, bin })
}

impl Own {
    /// The postmaster's pid, from its pid file.
    fn postmaster(&self) -> Option<i32> {
        let text = std::fs::read_to_string(self.server.base.join("data/postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// SIGKILL the server's processes, as a crash (the machine or the
    /// container gone), and wait until every one has gone. Its backends
    /// first: killed alone, the postmaster left a backend that still
    /// answered its client for a moment (a write after the kill went
    /// through).
    pub fn kill(&self) {
        let pid = self.postmaster().expect("the server runs");
        // The server names its processes (backends, background workers).
        let procs = postgres::Client::connect(&self.server.url("postgres"), postgres::NoTls)
            .and_then(|mut c| c.query("SELECT pid FROM pg_stat_activity", &[]))
            .map(|rows| rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>())
            .unwrap_or_default();
        for child in procs {
            // SAFETY: signalling a process of the server we started.
            unsafe { libc::kill(child, libc::SIGKILL) };
        }
        // SAFETY: signalling the server we started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline && !self.server.base.join("exited").exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Start the server again on its data directory and port; returns once
    /// it accepts connections (after crash recovery).
    pub fn restart(&self) -> Result<(), String> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            let _ = std::fs::remove_file(self.server.base.join("exited"));
            spawn(
                &self.bin,
                &self.server.base,
                self.server.port,
                server_user(),
            )?;
            // Backends of the killed server may still hold its shared
            // memory for a moment: the new one then stops; try again.
            while !self.server.base.join("exited").exists() {
                if postgres::Client::connect(&self.server.url("postgres"), postgres::NoTls).is_ok()
                {
                    return Ok(());
                }
                if std::time::Instant::now() >= deadline {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        Err(format!(
            "the server did not come back; log in {}/log",
            self.server.base.display()
        ))
    }
}

impl Drop for Own {
    /// A server left killed (a test that failed before restarting it) has
    /// no wrapper left to remove its directory: remove it here. A running
    /// one is stopped and removed by its wrapper when the process exits.
    fn drop(&mut self) {
        if self.server.base.join("exited").exists() {
            let _ = std::fs::remove_dir_all(&self.server.base);
        }
    }
}
