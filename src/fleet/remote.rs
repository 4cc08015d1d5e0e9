//! Where the fleet keeps its files on a host, as POSIX shell scripts run
//! over ssh. Every name is per host and per run, so hosts sharing one
//! home directory (NFS homes, or two hosts file entries reaching one
//! machine) and two fleet runs at once never touch each other's files:
//!
//! - `$D` = `$KBENCH_FLEET_DIR`, default `~/.kbench-fleet`;
//! - `$D/kbench-HASH`: the kbench binary, named by its content (hosts
//!   sharing `$D` share it; a copy lands under a unique temporary name and
//!   is renamed into place, or removed if the copy fails);
//! - `$D/hosts/NAME@MACHINE-ID/kbench.db`: the host's own store, per
//!   hosts-file name and machine (`/etc/machine-id`);
//! - `$D/hosts/NAME@MACHINE-ID/run-NONCE/`: one fleet run's plan (and
//!   the files it names), removed when the run ends;
//! - `$D/hosts/NAME@MACHINE-ID/export-NONCE.db`: a catch-up export, removed
//!   when sent.

use super::hosts::Host;

/// The remote directory and the host's own directory, as shell
/// assignments (`D`, `H`); fails when the machine has no identity.
pub fn prelude(h: &Host) -> String {
    // The name is checked by the hosts file: letters, digits, `-_.`.
    format!(
        r#"set -u; D="${{KBENCH_FLEET_DIR:-$HOME/.kbench-fleet}}"; M=$(cat /etc/machine-id 2>/dev/null || cat /var/lib/dbus/machine-id 2>/dev/null || hostname) && [ -n "$M" ] || {{ echo "cannot tell this machine's identity (no /etc/machine-id)" >&2; exit 3; }}; H="$D/hosts/{}@$M""#,
        h.name
    )
}

/// The remote binary's name for a sha256 `hash`.
pub fn binary(hash: &str) -> String {
    format!("$D/kbench-{}", &hash[..hash.len().min(16)])
}

/// Remove `path` (a shell word) when the script exits, however it exits.
fn cleanup(path: &str) -> String {
    format!(r#"trap 'rm -rf {path}' EXIT; trap 'rm -rf {path}; exit 1' HUP INT TERM PIPE"#)
}

/// Check the OS, the architecture, the binary (its sha256 or `-`) and
/// the plan's bundle (`have` or `-`).
pub fn probe(h: &Host, hash: &str, bundle: &str) -> String {
    let k = binary(hash);
    format!(
        r#"{}; mkdir -p "$H" && uname -s && uname -m && (sha256sum "{k}" 2>/dev/null || echo -) && ([ -f "$D/bundles/{bundle}.tar" ] && echo have || echo -)"#,
        prelude(h)
    )
}

/// Receive the binary on stdin; a failed copy (a full disk) leaves
/// nothing behind.
pub fn copy_binary(h: &Host, hash: &str, nonce: &str) -> String {
    let k = binary(hash);
    format!(
        r#"{}; T="{k}.{nonce}.tmp"; {}; cat >"$T" && chmod 755 "$T" && mv -f "$T" "{k}""#,
        prelude(h),
        cleanup(r#""$T""#)
    )
}

/// The run directory of fleet run `nonce`, as a shell expression.
pub fn run_dir(nonce: &str) -> String {
    format!("$H/run-{nonce}")
}

/// Unpack the plan's bundle into the run directory; with `receive`, take
/// it on stdin first (once per fleet directory: it is named by its
/// content; a failed copy leaves nothing).
pub fn unpack(h: &Host, bundle: &str, nonce: &str, receive: bool) -> String {
    let r = run_dir(nonce);
    let b = format!("$D/bundles/{bundle}.tar");
    let take = if receive {
        format!(
            r#"mkdir -p "$D/bundles" && T="{b}.{nonce}.tmp" && {} && cat >"$T" && mv -f "$T" "{b}" && "#,
            cleanup(r#""$T""#)
        )
    } else {
        String::new()
    };
    format!(
        r#"{}; {take}mkdir -p "{r}" && tar -xf "{b}" -C "{r}""#,
        prelude(h)
    )
}

/// Remove the run directory of fleet run `nonce`.
pub fn remove_run(h: &Host, nonce: &str) -> String {
    format!(r#"{}; rm -rf "{}""#, prelude(h), run_dir(nonce))
}

/// Export the host's store's campaign of the plan into a file of this
/// run and send it; nothing when the host has no store yet. Errors go to
/// stderr with the exit code, never swallowed.
pub fn export(h: &Host, hash: &str, nonce: &str, plan: &str) -> String {
    let k = binary(hash);
    format!(
        r#"{}; [ -f "$H/kbench.db" ] || exit 0; E="$H/export-{nonce}.db"; {}; "{k}" store copy --from "$H/kbench.db" --to "$E" "{plan}" >/dev/null || exit $?; cat "$E""#,
        prelude(h),
        cleanup(r#""$E""#)
    )
}

/// The plan's `kbench status --json` on the host (which cells its
/// system state suits).
pub fn status(h: &Host, hash: &str, plan: &str) -> String {
    let k = binary(hash);
    // No store yet: kbench's default store, which reads as empty when
    // it does not exist (never created here).
    format!(
        r#"{}; if [ -f "$H/kbench.db" ]; then "{k}" --db "$H/kbench.db" status "{plan}" --json; else KBENCH_DB= XDG_DATA_HOME="$H/no-store" "{k}" status "{plan}" --json; fi"#,
        prelude(h)
    )
}

/// Run the plan into the host's store, its events on stdout; the run
/// directory goes when kbench exits.
pub fn run(h: &Host, hash: &str, nonce: &str, plan: &str, args: &str) -> String {
    let k = binary(hash);
    let r = run_dir(nonce);
    format!(
        r#"{}; "{k}" --db "$H/kbench.db" run "{plan}" --events jsonl -q {args}; rc=$?; rm -rf "{r}"; exit $rc"#,
        prelude(h)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Host {
        Host {
            name: "a".into(),
            ssh: "x@y".into(),
            port: None,
            identity: None,
            known_hosts: None,
            ssh_options: vec![],
            labels: Default::default(),
        }
    }

    #[test]
    fn every_remote_name_is_per_host_and_per_run() {
        let h = host();
        let hash = "0123456789abcdef0123";
        assert!(prelude(&h).contains(r#"H="$D/hosts/a@$M""#));
        assert!(prelude(&h).contains("/etc/machine-id"));
        let c = copy_binary(&h, hash, "n1");
        assert!(
            c.contains(r#"T="$D/kbench-0123456789abcdef.n1.tmp""#),
            "{c}"
        );
        assert!(c.contains("trap 'rm -rf \"$T\"' EXIT"), "{c}");
        let e = export(&h, hash, "n2", "$H/run-n2/p.toml");
        assert!(e.contains(r#"E="$H/export-n2.db""#), "{e}");
        // Only a host without a store succeeds with nothing to send.
        assert_eq!(e.matches("exit 0").count(), 1, "{e}");
        assert!(e.contains(r#"[ -f "$H/kbench.db" ] || exit 0;"#), "{e}");
        assert!(!e.contains("2>&1"), "errors are not hidden: {e}");
        let r = run(&h, hash, "n3", "$H/run-n3/p.toml", "'--quick'");
        assert!(
            r.contains(r#"--db "$H/kbench.db" run "$H/run-n3/p.toml""#),
            "{r}"
        );
        assert!(r.ends_with(r#"rm -rf "$H/run-n3"; exit $rc"#), "{r}");
    }

    /// The scripts run under a real shell: a failed copy (here, into a
    /// directory that cannot be written) leaves no temporary file.
    #[test]
    fn a_failed_copy_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let h = host();
        // `cat` fails reading a directory: the copy's error path.
        let script = copy_binary(&h, "feedfacefeedface", "n");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("KBENCH_FLEET_DIR", dir.path())
            .stdin(std::fs::File::open(dir.path()).unwrap())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
