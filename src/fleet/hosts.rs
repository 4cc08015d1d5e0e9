//! The hosts file of `kbench fleet`: one `[[host]]` table per host, and a
//! `[defaults]` table giving any key for every host.
//!
//! ```toml
//! [defaults]
//! identity = "~/.ssh/lab_ed25519"
//! known_hosts = "lab_known_hosts"
//!
//! [[host]]
//! name = "old"
//! ssh = "bench@192.0.2.10"
//! labels = { hardware = "type 1" }
//! ```

use indexmap::IndexMap;
use serde::Deserialize;
use std::path::{Path, PathBuf};

use crate::error::bad_input;

/// One host, with the defaults applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    pub name: String,
    /// ssh's destination, `user@address`.
    pub ssh: String,
    pub port: Option<u16>,
    /// A private key file.
    pub identity: Option<PathBuf>,
    /// A known_hosts file used instead of ssh's default.
    pub known_hosts: Option<PathBuf>,
    /// Extra `-o` options, each `Key=value`.
    pub ssh_options: Vec<String>,
    pub labels: IndexMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: Option<String>,
    ssh: Option<String>,
    port: Option<u16>,
    identity: Option<String>,
    known_hosts: Option<String>,
    ssh_options: Option<Vec<String>>,
    labels: Option<IndexMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Entry,
    #[serde(default)]
    host: Vec<Entry>,
}

/// Read and check a hosts file; relative key and known_hosts paths are
/// relative to the file, `~/` to the home directory.
pub fn load(path: &Path) -> anyhow::Result<Vec<Host>> {
    let p = path.display();
    let text = crate::input::read_text(path, "a hosts file", crate::input::TEXT)?;
    let base = path.parent().unwrap_or(Path::new("."));
    parse(&text, &p.to_string(), base)
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// `StrictHostKeyChecking=no` (or `off`), however spelt.
fn turns_off_key_check(o: &str) -> bool {
    let (k, v) = o.split_once('=').unwrap_or((o, ""));
    k.trim().eq_ignore_ascii_case("StrictHostKeyChecking")
        && ["no", "off"].contains(&v.trim().to_ascii_lowercase().as_str())
}

/// Why `ssh` is no destination for ssh(1), or `None`. A password in it
/// is refused (ssh never reads one from there; it would only be shown
/// and stored): it is registered as a secret first, so no message shows
/// it either.
fn bad_destination(ssh: &str) -> Option<&'static str> {
    let userinfo = ssh
        .strip_prefix("ssh://")
        .and_then(|rest| rest.rsplit_once('@'))
        .map(|(u, _)| u);
    if let Some((_, pw)) = userinfo.and_then(|u| u.split_once(':')) {
        crate::redact::register(pw);
        return Some(
            "holds a password, which ssh never uses and kbench would not show or store: give a key (`identity`) or an ssh-agent",
        );
    }
    if ssh.starts_with('-') || ssh.contains(char::is_whitespace) || ssh.contains(char::is_control) {
        return Some("is not a destination (user@address)");
    }
    if ssh.chars().count() > 1024 {
        return Some("is over 1024 characters, not a destination");
    }
    None
}

pub fn parse(text: &str, name: &str, base: &Path) -> anyhow::Result<Vec<Host>> {
    let f: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| line_of(text, s.start)).unwrap_or(1);
        let msg = e.message().trim().replace('\n', " ");
        let msg = crate::plan::huge_integer(&msg).unwrap_or(msg);
        bad_input!("{name}:{line}: {}", crate::redact::text(&msg))
    })?;
    if f.defaults.name.is_some() || f.defaults.ssh.is_some() {
        return Err(bad_input!(
            "{name}: [defaults] cannot give `name` or `ssh`: they differ per host"
        ));
    }
    if f.host.is_empty() {
        return Err(bad_input!("{name}: no [[host]] tables"));
    }
    let resolve = |s: &str| -> PathBuf {
        if let Some(rest) = s.strip_prefix("~/")
            && let Some(home) = std::env::var_os("HOME")
        {
            return Path::new(&home).join(rest);
        }
        base.join(s)
    };
    let d = &f.defaults;
    let mut hosts: Vec<Host> = Vec::new();
    for (i, h) in f.host.iter().enumerate() {
        let n = i + 1;
        let hname = h
            .name
            .clone()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| bad_input!("{name}: host #{n} has no `name`"))?;
        crate::record::check_name("host name", &hname)
            .map_err(|e| bad_input!("{name}: host #{n}: {e}"))?;
        if !hname
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad_input!(
                "{name}: host `{}`: a name may hold letters, digits, `-`, `_` and `.`",
                crate::record::quoted_name(&hname)
            ));
        }
        if hosts.iter().any(|x| x.name == hname) {
            return Err(bad_input!("{name}: host `{hname}` is listed twice"));
        }
        let ssh = h
            .ssh
            .clone()
            .filter(|s| !s.trim().is_empty())
            .ok_or_else(|| bad_input!("{name}: host `{hname}` has no `ssh` destination"))?;
        if let Some(why) = bad_destination(&ssh) {
            return Err(bad_input!(
                "{name}: host `{hname}`: ssh = `{}` {why}",
                crate::record::quoted_name(&crate::redact::arg(&ssh))
            ));
        }
        let mut ssh_options = d.ssh_options.clone().unwrap_or_default();
        ssh_options.extend(h.ssh_options.clone().unwrap_or_default());
        if let Some(o) = ssh_options.iter().find(|o| !o.contains('=')) {
            return Err(bad_input!(
                "{name}: host `{hname}`: ssh option `{o}` is not `Key=value`"
            ));
        }
        if let Some(o) = ssh_options.iter().find(|o| turns_off_key_check(o)) {
            return Err(bad_input!(
                "{name}: host `{hname}`: ssh option `{o}` is refused: kbench always checks host keys (add the host's key to known_hosts, e.g. with `ssh-keyscan`, or pass --accept-new-host-keys)"
            ));
        }
        let mut labels = d.labels.clone().unwrap_or_default();
        labels.extend(h.labels.clone().unwrap_or_default());
        for (k, v) in &labels {
            crate::record::check_label(k, v)
                .map_err(|e| bad_input!("{name}: host `{hname}`: {e}"))?;
        }
        if labels.contains_key("host") {
            return Err(bad_input!(
                "{name}: host `{hname}`: `host` is not a label kbench lets you set (it is the host's name)"
            ));
        }
        hosts.push(Host {
            name: hname,
            ssh,
            port: h.port.or(d.port),
            identity: h.identity.as_deref().or(d.identity.as_deref()).map(resolve),
            known_hosts: h
                .known_hosts
                .as_deref()
                .or(d.known_hosts.as_deref())
                .map(resolve),
            ssh_options,
            labels,
        });
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_apply_and_hosts_override() {
        let text = r#"
[defaults]
identity = "keys/lab"
port = 2222
ssh_options = ["ConnectTimeout=5"]
labels = { rack = "r1" }

[[host]]
name = "old"
ssh = "bench@192.0.2.10"
labels = { hardware = "type 1" }

[[host]]
name = "new"
ssh = "bench@192.0.2.11"
port = 22
known_hosts = "/etc/lab_known_hosts"
ssh_options = ["Compression=no"]
labels = { hardware = "type 2", rack = "r2" }
"#;
        let h = parse(text, "hosts.toml", Path::new("/lab")).unwrap();
        assert_eq!(h.len(), 2);
        assert_eq!(h[0].port, Some(2222));
        assert_eq!(h[0].identity.as_deref(), Some(Path::new("/lab/keys/lab")));
        assert_eq!(h[0].labels["hardware"], "type 1");
        assert_eq!(h[0].labels["rack"], "r1");
        assert_eq!(h[1].port, Some(22));
        assert_eq!(
            h[1].known_hosts.as_deref(),
            Some(Path::new("/etc/lab_known_hosts"))
        );
        assert_eq!(h[1].ssh_options, ["ConnectTimeout=5", "Compression=no"]);
        assert_eq!(h[1].labels["rack"], "r2");
    }

    #[test]
    fn bad_hosts_files_name_the_problem() {
        let bad = |text: &str, needle: &str| {
            let e = parse(text, "h.toml", Path::new(".")).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2);
            assert!(e.to_string().contains(needle), "{e}");
        };
        bad("", "no [[host]] tables");
        bad("[[host]]\nssh = \"a@b\"\n", "host #1 has no `name`");
        bad("[[host]]\nname = \"a\"\n", "host `a` has no `ssh`");
        bad(
            "[[host]]\nname = \"a\"\nssh = \"a@b\"\n[[host]]\nname = \"a\"\nssh = \"a@c\"\n",
            "listed twice",
        );
        bad(
            "[[host]]\nname = \"a\"\nssh = \"-oProxyCommand=x\"\n",
            "not a destination",
        );
        bad(
            "[[host]]\nname = \"a\"\nssh = \"a@b\"\nport = 99999\n",
            "h.toml:4",
        );
        bad(
            "[[host]]\nname = \"a\"\nssh = \"a@b\"\nsh = 1\n",
            "h.toml:4: unknown field `sh`",
        );
        bad(
            "[[host]]\nname = \"a\"\nssh = \"a@b\"\nssh_options = [\"BatchMode\"]\n",
            "not `Key=value`",
        );
        bad(
            "[defaults]\nssh_options = [\"stricthostkeychecking = No\"]\n[[host]]\nname = \"a\"\nssh = \"a@b\"\n",
            "host `a`: ssh option `stricthostkeychecking = No` is refused: kbench always checks host keys",
        );
        bad(
            "[defaults]\nssh = \"x@y\"\n[[host]]\nname = \"a\"\nssh = \"a@b\"\n",
            "[defaults]",
        );
    }
}
