//! `apply = "system"`: kbench cannot set it; a probe reads the running
//! system and a cell runs only when every reading matches. A value is the
//! expected reading of `probe`, or a table probe -> expected reading;
//! `hint` says how to reach a value ("boot with `nopti`").

use std::collections::HashSet;

use super::{FactorFile, Kind, values_of};
use crate::bench::params::label_of;
use crate::plan::{Apply, Level, Source};
use crate::system::probe::{self, Probe};

pub(super) const KIND: Kind = Kind {
    apply: "system",
    keys: &["probe", "hint"],
    read: |_, _, _| Ok(Apply::System),
    levels,
};

/// Each value with what it expects the probes to read, and its hint.
fn levels(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Vec<Level>> {
    let probe = probe_of(src, name, d)?;
    let mut seen = HashSet::new();
    let mut levels = Vec::new();
    for (v, label) in values_of(src, name, d)? {
        let expect = expected(src, name, d, &label, &v, probe.as_ref())?;
        if !seen.insert(label.clone()) {
            return Err(src.err(
                d.values.span(),
                format!("factor `{name}`: duplicate value `{label}`"),
            ));
        }
        let hint = d
            .hint
            .as_ref()
            .and_then(|h| h.get_ref().get(&label).cloned());
        levels.push(Level {
            label,
            raw: v,
            cpus: None,
            expect,
            hint,
        });
    }
    if let Some(h) = &d.hint {
        for k in h.get_ref().keys() {
            if !levels.iter().any(|l| &l.label == k) {
                return Err(src.err(
                    h.span(),
                    format!("factor `{name}`: `hint` for unknown value `{k}`"),
                ));
            }
        }
    }
    Ok(levels)
}

/// A `system` factor's `probe`: a probe name or a command list.
fn probe_of(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Option<Probe>> {
    Ok(match d.probe.as_ref().map(|p| (p, p.get_ref())) {
        None => None,
        Some((p, toml::Value::String(n))) => {
            Some(Probe::parse(n).map_err(|e| src.err(p.span(), format!("factor `{name}`: {e}")))?)
        }
        Some((p, toml::Value::Array(a))) => {
            let argv: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(String::from)).collect();
            match argv {
                Some(v) if !v.is_empty() => {
                    if src.here && !program_exists(&v[0]) {
                        return Err(src.err(
                            p.span(),
                            format!(
                                "factor `{name}`: probe command `{}` is not found{}",
                                crate::term::visible(&v[0]),
                                if v[0].contains('/') { "" } else { " on PATH" }
                            ),
                        ));
                    }
                    Some(Probe::Command(v))
                }
                _ => {
                    return Err(src.err(
                        p.span(),
                        format!(
                            "factor `{name}`: a probe command must be a non-empty list of strings"
                        ),
                    ));
                }
            }
        }
        Some((p, other)) => {
            return Err(src.err(
                p.span(),
                format!(
                    "factor `{name}`: `probe` must be a probe name or a command list, found {}",
                    other.type_str()
                ),
            ));
        }
    })
}

/// What a `system` factor's value `v` (labelled `label`) expects the
/// probes to read.
fn expected(
    src: &Source,
    name: &str,
    d: &FactorFile,
    label: &str,
    v: &toml::Value,
    probe: Option<&Probe>,
) -> anyhow::Result<Vec<(Probe, String)>> {
    let mut expect = Vec::new();
    let bad = |m: String| {
        src.err(
            d.values.span(),
            format!("factor `{name}` value `{label}`: {m}"),
        )
    };
    match (v, probe) {
        (toml::Value::Table(t), _) => {
            for (k, want) in t {
                let p = Probe::parse(k).map_err(&bad)?;
                let want = match want {
                    toml::Value::String(w) => w.clone(),
                    other => other.to_string(),
                };
                probe::check_expected(&want).map_err(&bad)?;
                expect.push((p, want));
            }
            if expect.is_empty() {
                return Err(bad("an empty table expects nothing".into()));
            }
        }
        (toml::Value::Array(_), _) => {
            return Err(bad("expected a reading or a table probe -> reading".into()));
        }
        (scalar, Some(p)) => {
            let want = label_of(scalar);
            probe::check_expected(&want).map_err(&bad)?;
            expect.push((p.clone(), want));
        }
        (_, None) => {
            return Err(bad(
                "set `probe`, or give the value as a table probe -> expected reading".into(),
            ));
        }
    }
    Ok(expect)
}

/// Would `std::process::Command::new(prog)` find `prog`: a path that
/// exists, or an executable file in a directory of `PATH`.
fn program_exists(prog: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &std::path::Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if prog.contains('/') {
        return executable(std::path::Path::new(prog));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| executable(&d.join(prog))))
}
