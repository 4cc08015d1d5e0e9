//! `kbench fleet` against real hosts: two network namespaces joined to
//! this one by veth pairs, each running Debian's sshd on its own address
//! with host keys and a client key generated here. Needs root, `ip` and
//! `/usr/sbin/sshd` (`.ci/run` installs openssh-server); skips with a
//! message otherwise.

mod common;

use common::kbench;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const PLAN: &str = r#"
name = "fleet"
samples = 6
sample_time = 0.08
warmup = 0

[[bench]]
use = "getppid"

[[bench]]
use = "getuid"

[[bench]]
use = "getpid"

[[bench]]
use = "clock-gettime"
"#;

fn sh(cmd: &[&str]) {
    let out = Command::new(cmd[0]).args(&cmd[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn can_run(test: &str) -> bool {
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let tools = Path::new("/usr/sbin/sshd").exists()
        && Command::new("ip").arg("-V").output().is_ok()
        && Command::new("ssh-keygen").arg("-?").output().is_ok();
    if !(root && tools) {
        assert!(
            std::env::var_os("CI").is_none() || !tools,
            "{test}: CI runs as root with sshd installed"
        );
        eprintln!("skipping {test}: needs root, iproute2 and openssh-server");
    }
    root && tools
}

/// One host: a network namespace with a veth link and an sshd.
struct Host {
    ns: String,
    addr: String,
    conf: PathBuf,
    sshd: Option<Child>,
}

impl Host {
    fn start_sshd(&mut self) {
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.ns,
                "/usr/sbin/sshd",
                "-D",
                "-e",
                "-f",
            ])
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.sshd = Some(child);
        // Wait until it listens.
        for _ in 0..100 {
            let ok = Command::new("ip")
                .args(["netns", "exec", &self.ns, "ss", "-ltn"])
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).contains(&format!("{}:22", self.addr)))
                .unwrap_or(false);
            if ok {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("sshd in {} did not start", self.ns);
    }

    /// Kill every process of the namespace: sshd, its sessions and the
    /// kbench they run (the host goes down).
    fn kill_all(&mut self) {
        let out = Command::new("ip")
            .args(["netns", "pids", &self.ns])
            .output()
            .unwrap();
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(p) = pid.parse::<i32>() {
                // SAFETY: a pid in our own namespace, started by this test.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
        if let Some(mut c) = self.sshd.take() {
            let _ = c.wait();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill_all();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// Two hosts `a` and `b`, a client key, known_hosts, and a hosts file.
struct Lab {
    hosts: Vec<Host>,
    hosts_file: PathBuf,
    known: PathBuf,
    dir: PathBuf,
}

fn lab(dir: &Path, tag: &str) -> Lab {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let id = std::process::id() % 100_000;
    let octet = (std::process::id() * 7 + n * 31) % 250 + 2;
    std::fs::create_dir_all("/run/sshd").unwrap();
    let key = dir.join("id");
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-f",
        key.to_str().unwrap(),
    ]);
    let pubkey = std::fs::read_to_string(dir.join("id.pub")).unwrap();
    let known = dir.join("known_hosts");
    let mut known_text = String::new();
    let mut hosts = Vec::new();
    let mut hosts_toml = format!(
        "[defaults]\nidentity = \"{}\"\nknown_hosts = \"{}\"\n",
        key.display(),
        known.display()
    );
    for (i, name) in ["a", "b"].iter().enumerate() {
        let ns = format!("kb{id}{tag}{n}{name}");
        let veth = format!("kv{id}{n}{name}");
        let peer = format!("kp{id}{n}{name}");
        let (outer, inner) = (
            format!("10.77.{octet}.{}", 4 * i + 1),
            format!("10.77.{octet}.{}", 4 * i + 2),
        );
        let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        sh(&["ip", "netns", "add", &ns]);
        sh(&[
            "ip", "link", "add", &veth, "type", "veth", "peer", "name", &peer,
        ]);
        sh(&["ip", "link", "set", &peer, "netns", &ns]);
        sh(&["ip", "addr", "add", &format!("{outer}/30"), "dev", &veth]);
        sh(&["ip", "link", "set", &veth, "up"]);
        sh(&[
            "ip",
            "netns",
            "exec",
            &ns,
            "ip",
            "addr",
            "add",
            &format!("{inner}/30"),
            "dev",
            &peer,
        ]);
        sh(&["ip", "netns", "exec", &ns, "ip", "link", "set", &peer, "up"]);
        sh(&["ip", "netns", "exec", &ns, "ip", "link", "set", "lo", "up"]);
        let hk = dir.join(format!("hostkey_{name}"));
        sh(&[
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            hk.to_str().unwrap(),
        ]);
        let hpub = std::fs::read_to_string(dir.join(format!("hostkey_{name}.pub"))).unwrap();
        let mut fields = hpub.split_whitespace();
        known_text += &format!(
            "{inner} {} {}\n",
            fields.next().unwrap(),
            fields.next().unwrap()
        );
        let remote = dir.join(format!("remote_{name}"));
        std::fs::create_dir_all(&remote).unwrap();
        let auth = dir.join(format!("auth_{name}"));
        std::fs::write(
            &auth,
            format!(
                "environment=\"KBENCH_FLEET_DIR={}\" {pubkey}",
                remote.display()
            ),
        )
        .unwrap();
        let conf = dir.join(format!("sshd_{name}.conf"));
        std::fs::write(
            &conf,
            format!(
                "Port 22\nListenAddress {inner}\nHostKey {}\nAuthorizedKeysFile {}\nPidFile {}\n\
                 StrictModes no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nPermitUserEnvironment yes\n",
                hk.display(),
                auth.display(),
                dir.join(format!("sshd_{name}.pid")).display()
            ),
        )
        .unwrap();
        let mut h = Host {
            ns,
            addr: inner.clone(),
            conf,
            sshd: None,
        };
        h.start_sshd();
        hosts.push(h);
        hosts_toml += &format!(
            "\n[[host]]\nname = \"{name}\"\nssh = \"root@{inner}\"\nlabels = {{ hardware = \"type {}\" }}\n",
            i + 1
        );
    }
    std::fs::write(&known, known_text).unwrap();
    let hosts_file = dir.join("hosts.toml");
    std::fs::write(&hosts_file, hosts_toml).unwrap();
    Lab {
        hosts,
        hosts_file,
        known,
        dir: dir.to_path_buf(),
    }
}

fn fleet(lab: &Lab, args: &[&str]) -> std::process::Output {
    kbench(&lab.dir)
        .env("XDG_STATE_HOME", lab.dir.join("state"))
        .arg("fleet")
        .args(args)
        .arg("--hosts")
        .arg(&lab.hosts_file)
        .output()
        .unwrap()
}

/// Samples per (host, cell key) in the coordinator's store, and the total.
fn per_host(dir: &Path) -> Vec<(String, String, i64)> {
    let c = common::sqlite(dir);
    let mut st = c
        .prepare(
            "SELECT json_extract(c.readings, '$.host'), c.key, COUNT(s.id) FROM cells c
             JOIN samples s ON s.cell_id = c.id GROUP BY 1, 2 ORDER BY 1, 2",
        )
        .unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn count(dir: &Path, host: &str) -> i64 {
    if !common::db(dir).exists() {
        return 0;
    }
    let c = common::sqlite(dir);
    c.query_row(
        "SELECT COUNT(*) FROM samples s JOIN cells c ON c.id = s.cell_id
         WHERE json_extract(c.readings, '$.host') = ?1",
        [host],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

#[test]
fn two_hosts_one_killed_mid_run_then_resumed() {
    if !can_run("two_hosts_one_killed_mid_run_then_resumed") {
        return;
    }
    let _t = common::serial();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let mut lab = lab(d, "k");
    let plan = common::plan(d, "fleet.toml", PLAN);
    let plan = plan.to_str().unwrap();
    // Host a's sshd dies while a runs.
    let child = Command::new(assert_cmd::cargo::cargo_bin("kbench"))
        .env("KBENCH_DB", common::db(d))
        .env("XDG_CACHE_HOME", d.join("cache"))
        .env("XDG_STATE_HOME", d.join("state"))
        .env("NO_COLOR", "1")
        .args(["fleet", "run", plan, "--hosts"])
        .arg(&lab.hosts_file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(d, "a") == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no sample from host a"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    lab.hosts[0].kill_all();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("1 of 2 host(s) done; failed: a"), "{err}");
    let first = per_host(d);
    let b: Vec<_> = first.iter().filter(|r| r.0 == "b").collect();
    assert_eq!(b.len(), 4, "host b complete: {first:?}");
    assert!(b.iter().all(|r| r.2 == 6), "{first:?}");
    let a_first = count(d, "a");
    assert!(a_first > 0 && a_first < 24, "host a partial: {first:?}");
    // Status names each host's state and a's error.
    let st = fleet(&lab, &["status", plan, "--json"]);
    let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(st["hosts"]["b"]["state"], "done", "{st}");
    assert_eq!(st["hosts"]["b"]["cells_done"], 4, "{st}");
    assert_eq!(st["hosts"]["a"]["state"], "failed", "{st}");
    assert!(
        st["hosts"]["a"]["last_error"]
            .as_str()
            .unwrap()
            .contains("host a"),
        "{st}"
    );
    // The host comes back: a second run completes a, adds nothing to b,
    // and no sample is doubled.
    lab.hosts[0].start_sshd();
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    eprintln!("second fleet run:\n{err}");
    let second = per_host(d);
    assert_eq!(second.len(), 8, "{second:?}");
    assert!(
        second.iter().all(|r| r.2 == 6),
        "each cell has its 6 samples once: {second:?}"
    );
    // Reports narrow on the host and on its labels.
    for op in ["fleet:host=a", "fleet:hardware=type 2"] {
        let out = kbench(d).args(["report", op, "--json"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let cells = v["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 4, "{op}");
        assert!(cells.iter().all(|c| c["n"] == 6), "{op}: {v}");
    }
    // The two hosts compare cell by cell.
    let out = kbench(d)
        .args(["compare", "fleet:host=a", "fleet:host=b", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["geomean"][0]["k"], 4, "four cells paired: {v}");
    assert_eq!(v["unpaired"].as_array().map(Vec::len), Some(0), "{v}");
    let st = fleet(&lab, &["status", plan]);
    let text = String::from_utf8_lossy(&st.stdout);
    assert!(
        text.lines()
            .filter(|l| l.contains("4/4") && l.contains("done"))
            .count()
            == 2,
        "{text}"
    );
}

#[test]
fn a_changed_host_key_is_refused_and_the_other_host_proceeds() {
    if !can_run("a_changed_host_key_is_refused_and_the_other_host_proceeds") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "c");
    let plan = common::plan(d, "fleet.toml", &PLAN.replace("samples = 6", "samples = 2"));
    let plan = plan.to_str().unwrap();
    // Host b's key in known_hosts is another key (b was "reinstalled").
    let other = d.join("other");
    sh(&[
        "ssh-keygen",
        "-q",
        "-t",
        "ed25519",
        "-N",
        "",
        "-f",
        other.to_str().unwrap(),
    ]);
    let opub = std::fs::read_to_string(d.join("other.pub")).unwrap();
    let known = std::fs::read_to_string(&lab.known).unwrap();
    let mut lines: Vec<String> = known.lines().map(String::from).collect();
    let addr = lab.hosts[1].addr.clone();
    let mut f = opub.split_whitespace();
    lines[1] = format!("{addr} {} {}", f.next().unwrap(), f.next().unwrap());
    std::fs::write(&lab.known, lines.join("\n") + "\n").unwrap();
    let out = fleet(&lab, &["run", plan, "--accept-new-host-keys"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let refusals: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("host key differs"))
        .collect();
    assert_eq!(refusals.len(), 1, "{err}");
    assert!(
        refusals[0].starts_with(&format!("kbench: host b (root@{addr}): refused")),
        "{err}"
    );
    assert!(err.contains("1 of 2 host(s) done; failed: b"), "{err}");
    assert_eq!(count(d, "a"), 8);
    assert_eq!(count(d, "b"), 0);
    // A host whose key is not known at all is refused without the flag.
    std::fs::write(&lab.known, "").unwrap();
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("host a (") && err.contains("its host key is not in"),
        "{err}"
    );
    assert_eq!(count(d, "a"), 8, "nothing new");
}
