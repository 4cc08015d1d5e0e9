//! The fleet's transport: OpenSSH's `ssh` client, as the user would run
//! it, with the host's key file, known_hosts file and options. Host keys
//! are always checked (`StrictHostKeyChecking=yes`, or `accept-new` when
//! the user asks for it); kbench never turns the check off by itself.
//! Batch mode: no password prompt ever blocks a run.

use std::io::Read;
use std::process::{Child, Command, Stdio};

use super::hosts::Host;

/// How unknown host keys are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKeys {
    /// Only keys already in known_hosts.
    Strict,
    /// Unknown hosts' keys are added; a changed key is still refused.
    AcceptNew,
}

/// The `ssh` command reaching `host` and running `script` there (a POSIX
/// shell script, passed as one argument).
pub fn command(host: &Host, keys: HostKeys, script: &str) -> Command {
    let mut c = Command::new(std::env::var_os("KBENCH_SSH").unwrap_or_else(|| "ssh".into()));
    c.arg("-T");
    // ssh keeps the first value it sees of an option: the user's come
    // first and override kbench's own (the hosts file refuses turning
    // the host key check off).
    for o in &host.ssh_options {
        c.arg("-o").arg(o);
    }
    c.args(["-o", "BatchMode=yes"]);
    c.args([
        "-o",
        match keys {
            HostKeys::Strict => "StrictHostKeyChecking=yes",
            HostKeys::AcceptNew => "StrictHostKeyChecking=accept-new",
        },
    ]);
    // A dead host or a dead link is noticed within seconds, not at the
    // TCP timeout.
    c.args(["-o", "ConnectTimeout=10"])
        .args(["-o", "ServerAliveInterval=5"])
        .args(["-o", "ServerAliveCountMax=3"]);
    if let Some(p) = host.port {
        c.arg("-p").arg(p.to_string());
    }
    if let Some(k) = &host.identity {
        c.arg("-i").arg(k).args(["-o", "IdentitiesOnly=yes"]);
    }
    if let Some(k) = &host.known_hosts {
        c.arg("-o")
            .arg(format!("UserKnownHostsFile={}", k.display()));
    }
    c.arg("--").arg(&host.ssh).arg(script);
    c
}

/// A shell word: single-quoted.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// ssh's stderr as one line saying why the host could not be reached or
/// the command failed.
pub fn explain(host: &Host, stderr: &str, code: Option<i32>) -> String {
    let who = format!("host {} ({})", host.name, host.ssh);
    let kh = host
        .known_hosts
        .as_ref()
        .map_or("known_hosts".to_string(), |p| p.display().to_string());
    if stderr.contains("REMOTE HOST IDENTIFICATION HAS CHANGED") {
        return format!(
            "{who}: refused: its host key differs from the one in {kh} (if the host was reinstalled, remove the old key with `ssh-keygen -R`)"
        );
    }
    if stderr.contains("Host key verification failed")
        || stderr.contains("No ") && stderr.contains("host key is known")
    {
        return format!(
            "{who}: refused: its host key is not in {kh} (add it, or pass --accept-new-host-keys)"
        );
    }
    let last = stderr
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty())
        .unwrap_or("");
    // Never an empty reason: ssh that says nothing is named by its exit.
    let said = |s: &str| {
        if s.is_empty() {
            "it printed nothing (`ssh -v` shows why)".to_string()
        } else {
            crate::redact::text(s).into_owned()
        }
    };
    match code {
        Some(255) => format!("{who}: ssh failed: {}", said(last)),
        Some(c) if last.is_empty() => format!("{who}: remote command exited {c}"),
        Some(c) => format!("{who}: remote command exited {c}: {}", said(last)),
        None => format!("{who}: ssh was killed: {}", said(last)),
    }
}

/// Run `script` on `host` with `input` on its stdin; its stdout, or the
/// one-line reason it failed.
pub fn run(
    host: &Host,
    keys: HostKeys,
    script: &str,
    input: Option<&[u8]>,
) -> Result<Vec<u8>, String> {
    let mut c = command(host, keys, script);
    c.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = start(host, &mut c)?;
    let _tracked = super::stop::track(child.id());
    let writer = input.map(|data| {
        let mut stdin = child.stdin.take().expect("piped");
        let data = data.to_vec();
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&data);
        })
    });
    let out = wait(child);
    if let Some(w) = writer {
        let _ = w.join();
    }
    let (code, stdout, stderr) = out.map_err(|e| format!("host {}: ssh: {e}", host.name))?;
    if code == Some(0) {
        Ok(stdout)
    } else {
        Err(explain(host, &String::from_utf8_lossy(&stderr), code))
    }
}

/// Run `script` on `host` with the file at `path` on its stdin (the
/// kbench binary: streamed, not read into memory).
pub fn run_file(
    host: &Host,
    keys: HostKeys,
    script: &str,
    path: &std::path::Path,
) -> Result<Vec<u8>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let child = start(
        host,
        command(host, keys, script)
            .stdin(Stdio::from(file))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )?;
    let _tracked = super::stop::track(child.id());
    let (code, stdout, stderr) =
        wait(child).map_err(|e| format!("host {}: ssh: {e}", host.name))?;
    if code == Some(0) {
        Ok(stdout)
    } else {
        Err(explain(host, &String::from_utf8_lossy(&stderr), code))
    }
}

/// Start `c`, unless the fleet is stopping: in a process group of its
/// own that kbench's watchdog kills if the coordinator is killed (SIGKILL
/// left every ssh running). Registered by the child itself before it
/// execs, as a command is; [`super::stop::track`] holds the group's guard.
fn start(host: &Host, c: &mut Command) -> Result<Child, String> {
    use std::os::unix::process::CommandExt;
    if super::stop::requested().is_some() {
        return Err(format!("host {}: interrupted", host.name));
    }
    let watchdog = crate::system::watchdog::writer_fd();
    c.process_group(0);
    // SAFETY: the hook makes only async-signal-safe calls (getpid, write).
    unsafe {
        c.pre_exec(move || {
            crate::system::watchdog::register_self(watchdog);
            Ok(())
        });
    }
    c.spawn()
        .map_err(|e| format!("host {}: cannot start ssh: {e}", host.name))
}

fn wait(child: Child) -> std::io::Result<(Option<i32>, Vec<u8>, Vec<u8>)> {
    let out = child.wait_with_output()?;
    Ok((out.status.code(), out.stdout, out.stderr))
}

/// Spawn `script` on `host` with stdout and stderr piped, for streaming
/// (the caller tracks it with [`super::stop::track`] until waited for).
pub fn spawn(host: &Host, keys: HostKeys, script: &str) -> Result<Child, String> {
    start(
        host,
        command(host, keys, script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// Read all of a pipe into a string (for a child's stderr on a thread).
pub fn drain(mut r: impl Read) -> String {
    let mut s = Vec::new();
    let _ = r.read_to_end(&mut s);
    String::from_utf8_lossy(&s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "a".into(),
            ssh: "bench@192.0.2.1".into(),
            port: Some(2222),
            identity: Some("/k/id".into()),
            known_hosts: Some("/k/known".into()),
            ssh_options: vec!["Compression=no".into()],
            labels: Default::default(),
        }
    }

    #[test]
    fn host_keys_are_always_checked() {
        let args = |k| -> Vec<String> {
            command(&host(), k, "true")
                .get_args()
                .map(|a| a.to_string_lossy().into_owned())
                .collect()
        };
        let strict = args(HostKeys::Strict);
        assert!(strict.contains(&"StrictHostKeyChecking=yes".to_string()));
        assert!(strict.contains(&"UserKnownHostsFile=/k/known".to_string()));
        assert!(strict.contains(&"Compression=no".to_string()));
        // The user's options come before kbench's (ssh keeps the first).
        let pos = |a: &[String], s: &str| a.iter().position(|x| x == s).unwrap();
        assert!(pos(&strict, "Compression=no") < pos(&strict, "ConnectTimeout=10"));
        assert!(strict.ends_with(&["--".into(), "bench@192.0.2.1".into(), "true".into()]));
        let new = args(HostKeys::AcceptNew);
        assert!(new.contains(&"StrictHostKeyChecking=accept-new".to_string()));
        assert!(
            !new.iter()
                .chain(&strict)
                .any(|a| a == "StrictHostKeyChecking=no")
        );
    }

    #[test]
    fn quoting_and_explaining() {
        assert_eq!(quote("it's"), r"'it'\''s'");
        let e = explain(
            &host(),
            "@@@@\nWARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!\n@@@@\nHost key verification failed.\n",
            Some(255),
        );
        assert!(
            e.starts_with(
                "host a (bench@192.0.2.1): refused: its host key differs from the one in /k/known"
            ),
            "{e}"
        );
        let e = explain(
            &host(),
            "ssh: connect to host 192.0.2.1 port 2222: No route to host\n",
            Some(255),
        );
        assert_eq!(
            e,
            "host a (bench@192.0.2.1): ssh failed: ssh: connect to host 192.0.2.1 port 2222: No route to host"
        );
    }
}
