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
    lab_with(dir, tag, false)
}

/// [`lab`], with both hosts' logins sharing one fleet directory when
/// `one_home` (an NFS home, or two entries reaching one machine).
fn lab_with(dir: &Path, tag: &str, one_home: bool) -> Lab {
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
        let remote = dir.join(format!("remote_{}", if one_home { "a" } else { name }));
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

/// `kbench fleet ARGS --hosts FILE [-- RUN ARGS]`.
fn fleet(lab: &Lab, args: &[&str]) -> std::process::Output {
    let cut = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    kbench(&lab.dir)
        .env("XDG_STATE_HOME", lab.dir.join("state"))
        .arg("fleet")
        .args(&args[..cut])
        .arg("--hosts")
        .arg(&lab.hosts_file)
        .args(&args[cut..])
        .output()
        .unwrap()
}

/// `fleet status PLAN --json` of the coordinator's store.
fn status_json(lab: &Lab, plan: &str) -> serde_json::Value {
    let out = fleet(lab, &["status", plan, "--json"]);
    common::json(&out.stdout)
}

/// Samples of ns/op per (host, cell key) in the coordinator's store.
fn per_host(dir: &Path) -> Vec<(String, String, i64)> {
    let c = common::sqlite(dir);
    let mut st = c
        .prepare(
            "SELECT json_extract(c.readings, '$.host'), c.key, COUNT(s.id) FROM cells c
             JOIN samples s ON s.cell_id = c.id WHERE s.metric = 'ns/op'
             GROUP BY 1, 2 ORDER BY 1, 2",
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
         WHERE json_extract(c.readings, '$.host') = ?1 AND s.metric = 'ns/op'",
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
    let child = Command::new(common::bin())
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
    let st = status_json(&lab, plan);
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
        // Four cells; each metric (the counters per operation too) has
        // the 6 samples.
        assert_eq!(common::own_cells(&v).len(), 4, "{op}");
        assert!(common::cells(&v).iter().all(|c| c["n"] == 6), "{op}: {v}");
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

/// Samples per cell of `plan` on `host`, from the coordinator's report.
fn cells_of(d: &Path, plan: &str, host: &str) -> Vec<i64> {
    let out = kbench(d)
        .args(["report", &format!("{plan}:host={host}"), "--json"])
        .output()
        .unwrap();
    if !out.status.success() {
        return Vec::new();
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each cell's own metric (the counters per operation beside it have
    // as many samples).
    v["cells"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["metric"] == "ns/op")
        .map(|c| c["n"].as_i64().unwrap())
        .collect()
}

fn assert_exact(d: &Path, plan: &str, cells: usize, n: i64, what: &str) {
    for host in ["a", "b"] {
        let got = cells_of(d, plan, host);
        assert_eq!(got, vec![n; cells], "{what}: host {host} of {plan}");
    }
}

/// Issue: two hosts whose logins share one home used one remote store
/// and one temporary binary name; the second host's results were never
/// taken and `fleet run` still exited 0. Each host now has its own remote
/// store (per name and machine id) and each run its own temporary names.
#[test]
fn two_hosts_sharing_one_home_each_get_their_samples() {
    if !can_run("two_hosts_sharing_one_home_each_get_their_samples") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab_with(d, "h", true);
    let plan = common::plan(d, "fleet.toml", &PLAN.replace("samples = 6", "samples = 3"));
    let plan = plan.to_str().unwrap();
    for round in ["first run", "re-run"] {
        let out = fleet(&lab, &["run", plan]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{round}: {err}");
        assert!(err.contains("2 of 2 host(s) done"), "{err}");
        assert_exact(d, "fleet", 4, 3, round);
    }
    // One shared binary and plan bundle, two host stores, no temporary
    // file left.
    let home = d.join("remote_a");
    let mut names: Vec<String> = std::fs::read_dir(&home)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    assert!(
        names[0] == "bundles" && names[1] == "hosts" && names[2].starts_with("kbench-"),
        "{names:?}"
    );
    let bundles: Vec<String> = std::fs::read_dir(home.join("bundles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        bundles.len(),
        1,
        "one bundle, no temporary file: {bundles:?}"
    );
    let stores: Vec<_> = std::fs::read_dir(home.join("hosts"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stores.len(), 2, "{stores:?}");
    for s in &stores {
        let left: Vec<String> = std::fs::read_dir(s)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !n.starts_with("kbench.db"))
            .collect();
        assert!(left.is_empty(), "left behind in {}: {left:?}", s.display());
    }
}

/// Issue: a host whose own store was lost measured everything again and
/// the coordinator stored it twice (600 samples where 300 were planned,
/// exit 0). The coordinator's store is the truth: a host it holds
/// complete is not run again, and a partly stored host's re-measured
/// cells add only what they lack.
#[test]
fn a_host_whose_store_was_wiped_ends_with_exactly_the_plan() {
    if !can_run("a_host_whose_store_was_wiped_ends_with_exactly_the_plan") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "w");
    let plan = common::plan(d, "fleet.toml", &PLAN.replace("samples = 6", "samples = 4"));
    let plan = plan.to_str().unwrap();
    let wipe = |host: &str| {
        for e in std::fs::read_dir(d.join(format!("remote_{host}/hosts"))).unwrap() {
            for f in std::fs::read_dir(e.unwrap().path()).unwrap() {
                let f = f.unwrap().path();
                if f.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("kbench.db")
                {
                    std::fs::remove_file(f).unwrap();
                }
            }
        }
    };
    // Half the plan first, then host a's store is lost.
    let out = fleet(&lab, &["run", plan, "--", "--samples", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_exact(d, "fleet", 4, 2, "half");
    wipe("a");
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("host a: kept 8 sample(s) out"), "{err}");
    assert_exact(d, "fleet", 4, 4, "completed after the wipe");
    // Complete, then wiped: nothing runs, nothing is added.
    wipe("b");
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("host b: every planned sample is in the coordinator's store"),
        "{err}"
    );
    assert_exact(d, "fleet", 4, 4, "complete, wiped");
    // The coordinator's store loses host b's last sample of each cell
    // (b's own store is gone too): b is measured again and the store
    // takes only the one sample each cell lacks.
    let c = rusqlite::Connection::open(common::db(d)).unwrap();
    let gone = c
        .execute(
            "DELETE FROM samples WHERE (cell_id, round) IN (
               SELECT s.cell_id, s.round FROM samples s WHERE s.id IN (
                 SELECT MAX(s2.id) FROM samples s2 JOIN cells c2 ON c2.id = s2.cell_id
                 WHERE json_extract(c2.readings, '$.host') = 'b' GROUP BY c2.key))",
            [],
        )
        .unwrap();
    assert!(gone >= 4, "{gone}");
    // The runs' packed copies go with them, as a store losing samples
    // (and not only its rows) would; left, `store check` calls them damage.
    c.execute(
        "DELETE FROM sample_packs WHERE run_id IN (
           SELECT c2.run_id FROM cells c2 WHERE json_extract(c2.readings, '$.host') = 'b')",
        [],
    )
    .unwrap();
    drop(c);
    assert_eq!(cells_of(d, "fleet", "b"), vec![3; 4]);
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("host b: kept 12 sample(s) out"), "{err}");
    assert_exact(d, "fleet", 4, 4, "refilled");
}

/// Issue: two fleet runs of different plans at once shared the remote
/// temporary names and hid the export's failure (298 of 300 samples,
/// exit 0). Each run now has its own names and every error shows.
#[test]
fn two_fleets_of_different_plans_at_once() {
    if !can_run("two_fleets_of_different_plans_at_once") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "t");
    let p1 = common::plan(d, "fleet.toml", &PLAN.replace("samples = 6", "samples = 3"));
    let p2 = common::plan(
        d,
        "other.toml",
        &PLAN
            .replace("name = \"fleet\"", "name = \"other\"")
            .replace("samples = 6", "samples = 2"),
    );
    for round in ["first", "again"] {
        let children: Vec<_> = [&p1, &p2]
            .iter()
            .map(|p| {
                Command::new(common::bin())
                    .env("KBENCH_DB", common::db(d))
                    .env("XDG_CACHE_HOME", d.join("cache"))
                    .env("XDG_STATE_HOME", d.join("state"))
                    .env("NO_COLOR", "1")
                    .args(["fleet", "run"])
                    .arg(p)
                    .arg("--hosts")
                    .arg(&lab.hosts_file)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{round}: {err}");
        }
        assert_exact(d, "fleet", 4, 3, round);
        assert_exact(d, "other", 4, 2, round);
    }
}

/// Issue: only the plan file went to the hosts, so the README's own
/// mitigation-cost example (`cwd = "src/minibuild"`) failed on every
/// host. The plan's bundle carries the files it names.
#[test]
fn the_readme_mitigation_cost_example_runs_on_two_hosts() {
    if !can_run("the_readme_mitigation_cost_example_runs_on_two_hosts") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "m");
    // The example as shipped, beside a copy of the files it names, with
    // its `cpu = 0` mapped to a CPU this test was given (the hosts' kbench
    // inherits this test's cpuset, which need not hold CPU 0).
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let ex = d.join("example");
    std::fs::create_dir(&ex).unwrap();
    let src = examples.join("src");
    sh(&["cp", "-R", src.to_str().unwrap(), ex.to_str().unwrap()]);
    let text = std::fs::read_to_string(examples.join("mitigation-cost.toml")).unwrap();
    assert!(text.contains("cpu = 0"), "the example no longer pins a CPU");
    let plan = common::plan(&ex, "mitigation-cost.toml", &common::usable_plan(&text));
    let plan = plan.to_str().unwrap();
    let out = fleet(&lab, &["run", plan, "--", "--quick", "--samples", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 of 2 host(s) done"), "{err}");
    for host in ["a", "b"] {
        let out = kbench(d)
            .args(["report", &format!("mitigation-cost:host={host}"), "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let cells = v["cells"].as_array().unwrap();
        // This machine is in one pti/pcid state: both benchmarks ran in it.
        let mut benches: Vec<&str> = cells
            .iter()
            .map(|c| c["bench"].as_str().unwrap_or(""))
            .collect();
        benches.dedup();
        assert_eq!(benches, ["getppid", "minibuild"], "host {host}: {v}");
        assert!(cells.iter().all(|c| c["n"] == 2), "host {host}: {v}");
    }
    // The bundle went once to each fleet directory, and no run directory
    // is left behind.
    for host in ["a", "b"] {
        let home = d.join(format!("remote_{host}"));
        assert_eq!(std::fs::read_dir(home.join("bundles")).unwrap().count(), 1);
        for s in std::fs::read_dir(home.join("hosts")).unwrap() {
            let left: Vec<String> = std::fs::read_dir(s.unwrap().path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with("kbench.db"))
                .collect();
            assert!(left.is_empty(), "{left:?}");
        }
    }
}

/// A file the plan names is checked here, before any host is contacted:
/// a missing `cwd` is a plan error naming its line (it failed on every
/// host as `prepare ... cannot run: No such file or directory`).
#[test]
fn a_missing_cwd_is_a_plan_error_before_any_host() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let plan = common::plan(
        d,
        "p.toml",
        "name = \"p\"\n\n[[bench]]\nname = \"b\"\ncommand = [\"true\"]\ncwd = \"src/gone\"\n",
    );
    let hosts = common::plan(
        d,
        "hosts.toml",
        "[[host]]\nname = \"a\"\nssh = \"nobody@192.0.2.1\"\n",
    );
    let out = kbench(d)
        .env("XDG_STATE_HOME", d.join("state"))
        .args(["fleet", "run"])
        .arg(&plan)
        .arg("--hosts")
        .arg(&hosts)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("p.toml:6: `cwd` `src/gone` is not a directory here"),
        "{err}"
    );
}

/// Start `fleet run PLAN`, send it `sig` once both hosts stored more
/// than `after` samples, and wait for it (at most 60 s).
fn signalled(lab: &Lab, plan: &str, sig: i32, after: i64) -> std::process::Output {
    let d = &lab.dir;
    let child = Command::new(common::bin())
        .env("KBENCH_DB", common::db(d))
        .env("XDG_CACHE_HOME", d.join("cache"))
        .env("NO_COLOR", "1")
        .args(["fleet", "run", plan, "--hosts"])
        .arg(&lab.hosts_file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while count(d, "a") <= after || count(d, "b") <= after {
        assert!(std::time::Instant::now() < deadline, "both hosts measure");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, sig) };
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output().unwrap());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !waiter.is_finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "fleet run (pid {pid}) still running 60 s after the signal"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    waiter.join().unwrap()
}

/// Processes (other than the hosts' listening sshd) whose command line
/// names `dir`: ssh clients of the coordinator, remote kbench runs.
fn processes_naming(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let listener = cmd.starts_with("/usr/sbin/sshd") || cmd.contains("[listener]");
        if cmd.contains(&d) && !listener {
            out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    out
}

/// Wait up to `secs` until no process names `dir` (the hosts' kbench
/// stop at their next event); fail naming `what` and those still running.
fn none_left_within(dir: &Path, secs: u64, what: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while !processes_naming(dir).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: still running on the hosts: {:?}",
            processes_naming(dir)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Statuses of the runs in the store at `db`.
fn run_statuses(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut st = c.prepare("SELECT status FROM runs ORDER BY id").unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// Issue: SIGINT and SIGTERM left the runs and `fleet status` `running`
/// forever, and the fleet state lived beside the coordinator, not in the
/// store. A signal stops every host (its samples kept, its run
/// interrupted on both sides, no ssh left), exits 128 + the signal, and
/// `fleet status` of a copy of the store says `interrupted`; a re-run
/// then completes the plan exactly.
#[test]
fn a_signal_stops_every_host_and_the_store_says_so() {
    if !can_run("a_signal_stops_every_host_and_the_store_says_so") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "s");
    let text = PLAN.replace("samples = 6", "samples = 20");
    let plan = common::plan(d, "fleet.toml", &text);
    let plan = plan.to_str().unwrap();
    let mut after = 0;
    for (sig, code, name) in [
        (libc::SIGTERM, 143, "SIGTERM"),
        (libc::SIGINT, 130, "SIGINT"),
    ] {
        let out = signalled(&lab, plan, sig, after);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{name}: {err}");
        assert!(err.contains(&format!("interrupted by {name}")), "{err}");
        // No ssh client of the coordinator is left, and each host's
        // kbench stops at its next sample.
        let ssh: Vec<String> = processes_naming(d)
            .into_iter()
            .filter(|p| p.contains(": ssh "))
            .collect();
        assert!(ssh.is_empty(), "{name}: ssh left: {ssh:?}");
        none_left_within(d, 20, name);
        let statuses = run_statuses(&common::db(d));
        assert!(
            statuses.iter().all(|s| s == "interrupted"),
            "{name}: {statuses:?}"
        );
        for host in ["a", "b"] {
            let dir = std::fs::read_dir(d.join(format!("remote_{host}/hosts")))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path();
            // A closed stdout met inside serde_json's writer (a long
            // event) once read as a failure here: `failed`, not
            // `interrupted` (`error::is_broken_pipe`).
            let own = run_statuses(&dir.join("kbench.db"));
            assert!(
                !own.is_empty() && own.iter().all(|s| s == "interrupted"),
                "{name}: host {host}'s own store: {own:?}\n{err}"
            );
        }
        // The state is in the store: a copy of it shows it.
        let copy = d.join(format!("copy-{name}.db"));
        let out = kbench(d)
            .args(["store", "copy", "--from"])
            .arg(common::db(d))
            .arg("--to")
            .arg(&copy)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let st = kbench(d)
            .env("KBENCH_DB", &copy)
            .args(["fleet", "status", plan, "--json", "--hosts"])
            .arg(&lab.hosts_file)
            .output()
            .unwrap();
        let st: serde_json::Value = serde_json::from_slice(&st.stdout).unwrap();
        for host in ["a", "b"] {
            assert_eq!(st["hosts"][host]["state"], "interrupted", "{name}: {st}");
            assert!(st["hosts"][host]["samples"].as_u64().unwrap() > 0, "{st}");
        }
        after = count(d, "a").max(count(d, "b"));
    }
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_exact(d, "fleet", 4, 20, "after two signals and a re-run");
    let st = status_json(&lab, plan);
    assert_eq!(st["hosts"]["a"]["state"], "done", "{st}");
    assert_eq!(st["hosts"]["b"]["state"], "done", "{st}");
}

/// Issue 46: kill -9 of `kbench fleet run` left its ssh processes running,
/// and `fleet status` showed both hosts at `checking` forever. Killed
/// while both hosts are inside a quiet 4 s sample (an ssh whose remote
/// writes nothing never meets the closed pipe): the watchdog ends every ssh
/// of the coordinator within 2 s, `fleet status` tells the hosts whose
/// coordinator is gone (its lock is free) as `interrupted`, and a re-run
/// completes the plan exactly.
#[test]
fn a_coordinator_killed_with_sigkill_leaves_no_ssh_and_status_says_interrupted() {
    if !can_run("a_coordinator_killed_with_sigkill_leaves_no_ssh_and_status_says_interrupted") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "k");
    // The sample's shell names the lab's directory, so it can be seen.
    let text = format!(
        "name = \"quiet\"\nsamples = 2\nwarmup = 0\n[[bench]]\nname = \"nap\"\n\
         command = [\"sh\", \"-c\", \"sleep 4\", \"{}/nap\"]\nmeasure = [\"real\"]\n",
        d.display()
    );
    let plan = common::plan(d, "quiet.toml", &text);
    let plan = plan.to_str().unwrap();
    let mut child = Command::new(common::bin())
        .env("KBENCH_DB", common::db(d))
        .env("XDG_CACHE_HOME", d.join("cache"))
        .args(["fleet", "run", plan, "--hosts"])
        .arg(&lab.hosts_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let naps = || {
        processes_naming(d)
            .into_iter()
            .filter(|p| p.contains("sleep 4"))
            .count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while naps() < 2 {
        assert!(std::time::Instant::now() < deadline, "both hosts nap");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: our own child, not yet waited for.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let ssh = || -> Vec<String> {
        processes_naming(d)
            .into_iter()
            .filter(|p| p.contains(": ssh "))
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while !ssh().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ssh(), Vec::<String>::new(), "ssh left after kill -9");
    // Each host's kbench stops at its next event.
    none_left_within(d, 30, "kill -9");
    let st = status_json(&lab, plan);
    for host in ["a", "b"] {
        assert_eq!(st["hosts"][host]["state"], "interrupted", "{st}");
        let why = st["hosts"][host]["last_error"].as_str().unwrap_or("");
        assert!(why.contains("coordinator ended"), "{st}");
    }
    let out = fleet(&lab, &["run", plan]);
    common::assert_ok(&out);
    let st = status_json(&lab, plan);
    for host in ["a", "b"] {
        assert_eq!(st["hosts"][host]["state"], "done", "{st}");
        let rep = kbench(d)
            .args(["report", &format!("quiet:host={host}"), "--json"])
            .output()
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&rep.stdout).unwrap();
        let n: Vec<i64> = (v["cells"].as_array().unwrap().iter())
            .filter(|c| c["metric"] == "real")
            .map(|c| c["n"].as_i64().unwrap())
            .collect();
        assert_eq!(n, vec![2], "host {host}: {v}");
    }
}

/// A host whose stream lost samples on the way (here an ssh wrapper drops
/// every round-1 sample of host a) ends short in the coordinator's store
/// while its own store is complete: `fleet run` exits 1 naming the host
/// and the counts, and a re-run fetches the rest from the host's store.
#[test]
fn a_host_short_of_samples_fails_the_fleet_run() {
    if !can_run("a_host_short_of_samples_fails_the_fleet_run") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let lab = lab(d, "n");
    let plan = common::plan(d, "fleet.toml", &PLAN.replace("samples = 6", "samples = 3"));
    let plan = plan.to_str().unwrap();
    let wrapper = d.join("lossy-ssh");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash\nset -o pipefail\ncase \"$*\" in\n\
             *\"@{} \"*\"--events jsonl\"*) ssh \"$@\" | grep --line-buffered -v '^{{\"event\":\"sample\".*\"round\":1,'; exit $? ;;\n\
             *) exec ssh \"$@\" ;;\nesac\n",
            lab.hosts[0].addr
        ),
    )
    .unwrap();
    sh(&["chmod", "755", wrapper.to_str().unwrap()]);
    let out = kbench(d)
        .env("KBENCH_SSH", &wrapper)
        .args(["fleet", "run", plan, "--hosts"])
        .arg(&lab.hosts_file)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "kbench: host a: 4 of 4 cell(s) lack their planned samples in the coordinator's store (`"
        ) && err.contains("` 2 of 3, `"),
        "{err}"
    );
    assert!(err.contains("1 of 2 host(s) done; failed: a"), "{err}");
    assert_eq!((count(d, "a"), count(d, "b")), (8, 12));
    let st = status_json(&lab, plan);
    assert_eq!(st["hosts"]["a"]["state"], "failed", "{st}");
    assert!(
        (st["hosts"]["a"]["last_error"].as_str().unwrap()).contains("2 of 3"),
        "{st}"
    );
    // Without the loss, the re-run takes what host a's own store holds.
    let out = fleet(&lab, &["run", plan]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // 4 samples of ns/op, each with its counters per operation.
    let metrics: i64 = common::sqlite(d)
        .query_row("SELECT COUNT(DISTINCT metric) FROM samples", [], |r| {
            r.get(0)
        })
        .unwrap();
    let fetched = format!("host a: fetched {} sample(s)", 4 * metrics);
    assert!(err.contains(&fetched), "{fetched}: {err}");
    assert_exact(d, "fleet", 4, 3, "after the re-run");
}
