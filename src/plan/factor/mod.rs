//! A plan's `[factors]`, one file per kind of factor: `apply = "..."`
//! picks the kind from [`KINDS`], and the kind reads the keys it owns and
//! its values. A key another kind owns is refused ("`probe` only goes with
//! apply = \"system\"") from the kinds' key lists, so a new kind is a new
//! file here and one line in [`KINDS`] (and a field of [`FactorFile`] for
//! each key it adds).

mod cpus;
mod env;
mod param;
mod shell;
mod system;

use indexmap::IndexMap;
use serde::Deserialize;
use std::collections::HashSet;
use std::ops::Range;
use toml::Spanned;

use super::{Apply, Factor, Level, Source};
use crate::bench::params::label_of;

/// One `[factors]` entry as written: the keys every kind has (`apply`,
/// `values`, `labels`) and those one kind owns (listed by [`FactorFile::owned`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(in crate::plan) struct FactorFile {
    pub(in crate::plan) apply: Spanned<String>,
    pub(in crate::plan) values: Spanned<toml::Value>,
    pub(in crate::plan) labels: Option<Spanned<Vec<String>>>,
    /// For `param`: the parameter set (default: the factor's name).
    pub(in crate::plan) param: Option<Spanned<String>>,
    /// For `env`: the variable set (default: the factor's name).
    pub(in crate::plan) var: Option<Spanned<String>>,
    /// For `system`: what reads the running state (a probe name or a
    /// command).
    pub(in crate::plan) probe: Option<Spanned<toml::Value>>,
    /// For `system`: how to reach each value (label -> text), e.g.
    /// "boot with `nopti`".
    pub(in crate::plan) hint: Option<Spanned<IndexMap<String, String>>>,
    /// For `shell`: run before a value's cells (`{value}` is the value).
    pub(in crate::plan) setup: Option<Spanned<String>>,
    /// For `shell`: run after a value's cells.
    pub(in crate::plan) teardown: Option<Spanned<String>>,
}

impl FactorFile {
    /// Every key some kind owns, with where this factor gives it, in the
    /// order the file declares them (the order errors check them in).
    fn owned(&self) -> [(&'static str, Option<Range<usize>>); 6] {
        fn at<T>(k: &Option<Spanned<T>>) -> Option<Range<usize>> {
            k.as_ref().map(Spanned::span)
        }
        [
            ("param", at(&self.param)),
            ("var", at(&self.var)),
            ("probe", at(&self.probe)),
            ("hint", at(&self.hint)),
            ("setup", at(&self.setup)),
            ("teardown", at(&self.teardown)),
        ]
    }
}

/// A kind of factor: how it is named, what it owns and how it reads one.
struct Kind {
    /// Its `apply = "..."`.
    apply: &'static str,
    /// The keys only this kind takes.
    keys: &'static [&'static str],
    /// How the factor applies, from the keys it owns.
    read: fn(&Source, &Spanned<String>, &FactorFile) -> anyhow::Result<Apply>,
    /// The factor's values, checked.
    levels: fn(&Source, &str, &FactorFile) -> anyhow::Result<Vec<Level>>,
}

/// Every kind, in the order an unknown `apply` lists them.
const KINDS: &[Kind] = &[
    param::KIND,
    env::KIND,
    cpus::KIND,
    shell::KIND,
    system::KIND,
];

/// One `[factors]` entry, checked.
pub(super) fn factor(
    src: &Source,
    fname: &Spanned<String>,
    fdef: &Spanned<FactorFile>,
) -> anyhow::Result<Factor> {
    let name = fname.get_ref().clone();
    let d = fdef.get_ref();
    let given = d.apply.get_ref().as_str();
    let Some(kind) = KINDS.iter().find(|k| k.apply == given) else {
        let known: Vec<&str> = KINDS.iter().map(|k| k.apply).collect();
        return Err(src.err(
            d.apply.span(),
            format!(
                "factor `{name}`: unknown apply `{given}`{}",
                crate::suggest::hint(given, &known, "")
            ),
        ));
    };
    let apply = (kind.read)(src, fname, d)?;
    for (key, span) in d.owned() {
        let owner = KINDS
            .iter()
            .find(|k| k.keys.contains(&key))
            .expect("every owned key has a kind");
        if let Some(span) = span.filter(|_| owner.apply != kind.apply) {
            return Err(src.err(
                span,
                format!(
                    "factor `{name}`: `{key}` only goes with apply = \"{}\"",
                    owner.apply
                ),
            ));
        }
    }
    let levels = (kind.levels)(src, &name, d)?;
    Ok(Factor {
        name,
        apply,
        levels,
    })
}

/// The levels of a kind whose values are scalars used as they are.
fn plain_levels(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Vec<Level>> {
    scalar_levels(src, name, d, |_| Ok(()))
}

/// The levels of a kind whose values are scalars (no lists or tables),
/// each distinct, each finished by `each` in order.
fn scalar_levels(
    src: &Source,
    name: &str,
    d: &FactorFile,
    each: impl Fn(&mut Level) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Level>> {
    let mut seen = HashSet::new();
    let mut levels = Vec::new();
    for (v, label) in values_of(src, name, d)? {
        if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
            return Err(src.err(
                d.values.span(),
                format!(
                    "factor `{name}`: values must be scalars, found {}",
                    v.type_str()
                ),
            ));
        }
        if !seen.insert(label.clone()) {
            return Err(src.err(
                d.values.span(),
                format!("factor `{name}`: duplicate value `{label}`"),
            ));
        }
        let mut level = Level {
            label,
            raw: v,
            cpus: None,
            expect: Vec::new(),
            hint: None,
        };
        each(&mut level)?;
        levels.push(level);
    }
    Ok(levels)
}

/// A factor's values with their labels, in order.
fn values_of(
    src: &Source,
    name: &str,
    d: &FactorFile,
) -> anyhow::Result<Vec<(toml::Value, String)>> {
    // `values` is a list, or a table label -> value (for `system`, the
    // value may itself be a table probe -> expected reading).
    let (values, table_labels) = match d.values.get_ref() {
        toml::Value::Array(a) => (a.clone(), None),
        toml::Value::Table(t) => (
            t.values().cloned().collect(),
            Some(t.keys().cloned().collect::<Vec<String>>()),
        ),
        other => {
            return Err(src.err(
                d.values.span(),
                format!(
                    "factor `{name}`: `values` must be a list or a table, found {}",
                    other.type_str()
                ),
            ));
        }
    };
    if let (Some(_), Some(l)) = (&table_labels, &d.labels) {
        return Err(src.err(
            l.span(),
            format!("factor `{name}`: `labels` goes with a list of values; a table's keys are already labels"),
        ));
    }
    if values.is_empty() {
        return Err(src.err(
            d.values.span(),
            format!("factor `{name}`: `values` is empty"),
        ));
    }
    let labels: Vec<String> = match &d.labels {
        Some(l) if l.get_ref().len() != values.len() => {
            return Err(src.err(
                l.span(),
                format!(
                    "factor `{name}`: {} labels for {} values",
                    l.get_ref().len(),
                    values.len()
                ),
            ));
        }
        Some(l) => l.get_ref().clone(),
        None => table_labels.unwrap_or_else(|| values.iter().map(label_of).collect()),
    };
    Ok(values.into_iter().zip(labels).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key a factor may own belongs to exactly one kind, and every
    /// key a kind lists is one the file can hold: a key added to one side
    /// only fails here, not as a panic on a user's plan.
    #[test]
    fn every_owned_key_has_one_kind() {
        let d: FactorFile = toml::from_str("apply = \"cpus\"\nvalues = [\"0\"]").unwrap();
        let owned: Vec<&str> = d.owned().iter().map(|(k, _)| *k).collect();
        for key in &owned {
            let owners = KINDS.iter().filter(|k| k.keys.contains(key)).count();
            assert_eq!(owners, 1, "`{key}` has {owners} kinds");
        }
        for kind in KINDS {
            for key in kind.keys {
                assert!(
                    owned.contains(key),
                    "`{key}` of {} is not owned",
                    kind.apply
                );
            }
        }
        let names: HashSet<&str> = KINDS.iter().map(|k| k.apply).collect();
        assert_eq!(names.len(), KINDS.len(), "two kinds share an `apply`");
    }
}
