//! The baseline measured in the same run as the candidate: one level of a
//! factor (`--against FACTOR=VALUE`), or a command given with
//! `--against-command`, whose cells were measured interleaved in rounds
//! with the candidate's. Each candidate cell is paired with the baseline
//! cell equal in everything else, and compared by `report::compare` as a
//! run's variants are (paired by round; the run as the unit when there
//! are several), so drift between a baseline measured yesterday and a
//! candidate measured now never reads as a change.

use crate::error::bad_input;
use crate::report::compare::{RunBlocks, Selection};
use crate::store::{self, RunRow, StoreRead, StoredCell};

/// What the baseline is within the run.
#[derive(Clone, Debug, PartialEq)]
pub enum Against {
    /// The cells whose factor (or parameter) `key` is `value`; every
    /// other value of `key` is a candidate.
    Level { key: String, value: String },
    /// The command as typed; every other command is a candidate.
    Command(String),
}

impl Against {
    /// `--against FACTOR=VALUE`.
    pub fn parse(s: &str) -> anyhow::Result<Against> {
        match s.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() && !v.trim().is_empty() => Ok(Against::Level {
                key: k.trim().to_string(),
                value: v.trim().to_string(),
            }),
            _ => Err(bad_input!(
                "--against {s}: expected FACTOR=VALUE, the level of a factor that is the baseline"
            )),
        }
    }

    /// As the check's baseline selector reads.
    pub fn describe(&self) -> String {
        match self {
            Against::Level { key, value } => format!("{key}={value}"),
            Against::Command(c) => c.clone(),
        }
    }

    fn flag(&self) -> String {
        match self {
            Against::Level { .. } => format!("--against {}", self.describe()),
            Against::Command(c) => format!("--against-command '{c}'"),
        }
    }
}

/// Refuse, before anything runs, a plan that has no such level or no
/// other level to compare with it: `key` must be a factor or a swept
/// parameter of the plan, `value` one of its values.
pub fn validate_plan(plan: &crate::plan::Plan, against: &Against) -> anyhow::Result<()> {
    let Against::Level { key, value } = against else {
        return Ok(());
    };
    let mut levels: Vec<String> = Vec::new();
    let mut known: Vec<&str> = Vec::new();
    for f in &plan.factors {
        known.push(&f.name);
        if f.name == *key {
            levels.extend(f.levels.iter().map(|l| l.label.clone()));
        }
    }
    for b in &plan.benches {
        for (p, values) in &b.sweep {
            known.push(p);
            if p == key {
                for v in values {
                    let s = match v {
                        toml::Value::String(s) => s.clone(),
                        v => v.to_string(),
                    };
                    if !levels.contains(&s) {
                        levels.push(s);
                    }
                }
            }
        }
    }
    levels_hold(against, key, value, &levels, &known)
}

/// `value` is one of `levels` and at least one other level is there.
fn levels_hold(
    against: &Against,
    key: &str,
    value: &str,
    levels: &[String],
    known: &[&str],
) -> anyhow::Result<()> {
    if levels.is_empty() {
        return Err(bad_input!(
            "{}: no factor or swept parameter `{key}`{}",
            against.flag(),
            crate::suggest::hint(key, known, "")
        ));
    }
    if !levels.iter().any(|l| l == value) {
        return Err(bad_input!(
            "{}: `{key}` has no level `{value}` (levels: {})",
            against.flag(),
            levels.join(", ")
        ));
    }
    if levels.len() < 2 {
        return Err(bad_input!(
            "{}: `{key}` has only this level; a candidate needs another",
            against.flag()
        ));
    }
    Ok(())
}

/// The operands of the check: the baseline's cells first, then one
/// operand per candidate level (at most
/// [`crate::report::compare::MAX_OPERANDS`] in all), each fixing what
/// tells them apart, so a candidate cell pairs with the baseline cell
/// equal in every other factor and parameter.
pub fn selections(
    st: &dyn StoreRead,
    runs: &[RunRow],
    against: &Against,
) -> anyhow::Result<Vec<Selection>> {
    let mut cells: Vec<StoredCell> = Vec::new();
    for r in runs {
        cells.extend(st.cells(store::Scope::Run(r.id))?);
    }
    let mut blocks = std::collections::HashMap::new();
    RunBlocks::read(st, &cells, &mut blocks)?;
    let (names, groups, fixed) = match against {
        Against::Level { key, value } => by_level(cells, against, key, value)?,
        Against::Command(old) => by_command(cells, against, old)?,
    };
    if names.len() > crate::report::compare::MAX_OPERANDS {
        return Err(bad_input!(
            "{}: {} candidates; at most {} can be compared with one baseline",
            against.flag(),
            names.len() - 1,
            crate::report::compare::MAX_OPERANDS - 1
        ));
    }
    Ok(names
        .into_iter()
        .zip(groups)
        .map(|(name, cells)| Selection {
            name,
            fixed: fixed.clone(),
            cells,
            runs: blocks.clone(),
        })
        .collect())
}

/// Operand names, their cells, and the fixed keys.
type Split = (Vec<String>, Vec<Vec<StoredCell>>, Vec<String>);

/// The cells split by their value of `key`, `value` first.
fn by_level(
    cells: Vec<StoredCell>,
    against: &Against,
    key: &str,
    value: &str,
) -> anyhow::Result<Split> {
    let mut names: Vec<String> = vec![value.to_string()];
    let mut groups: Vec<Vec<StoredCell>> = vec![Vec::new()];
    let mut known: Vec<String> = Vec::new();
    for c in cells {
        for k in c.0.info.factors.keys().chain(c.0.info.params.keys()) {
            if !known.contains(k) {
                known.push(k.clone());
            }
        }
        let Some(v) = crate::select::value_of(&c.0.info, key) else {
            continue;
        };
        match names.iter().position(|n| *n == v) {
            Some(i) => groups[i].push(c),
            None => {
                names.push(v);
                groups.push(vec![c]);
            }
        }
    }
    let known: Vec<&str> = known.iter().map(String::as_str).collect();
    // Levels that measured nothing (a failed cell) are not levels here.
    let levels: Vec<String> = names
        .iter()
        .zip(&groups)
        .filter(|(_, g)| !g.is_empty())
        .map(|(n, _)| n.clone())
        .collect();
    levels_hold(against, key, value, &levels, &known)?;
    let names = names.iter().map(|n| format!("{key}={n}")).collect();
    Ok((names, groups, vec![key.to_string()]))
}

/// The commands' cells, the baseline command first; every candidate's
/// cells take the baseline's name, so the commands pair.
fn by_command(cells: Vec<StoredCell>, against: &Against, old: &str) -> anyhow::Result<Split> {
    let mut names: Vec<String> = vec![old.to_string()];
    let mut groups: Vec<Vec<StoredCell>> = vec![Vec::new()];
    for mut c in cells {
        if c.0.info.kind != crate::record::Kind::Command {
            return Err(bad_input!(
                "{}: `{}` is not a command; for a plan use --against FACTOR=VALUE",
                against.flag(),
                c.0.info.bench
            ));
        }
        let i = match names.iter().position(|n| *n == c.0.info.bench) {
            Some(i) => i,
            None => {
                names.push(c.0.info.bench.clone());
                groups.push(Vec::new());
                names.len() - 1
            }
        };
        c.0.info.bench = old.to_string();
        groups[i].push(c);
    }
    if groups[0].is_empty() || names.len() < 2 {
        return Err(bad_input!(
            "{}: the run holds no measured command `{old}` and another to compare with it",
            against.flag()
        ));
    }
    Ok((names, groups, Vec::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn against_reads_factor_equals_value_and_refuses_the_rest() {
        assert_eq!(
            Against::parse("build = old").unwrap(),
            Against::Level {
                key: "build".into(),
                value: "old".into()
            }
        );
        for bad in ["build", "=old", "build=", " = "] {
            let e = format!("{:#}", Against::parse(bad).unwrap_err());
            assert!(e.contains("expected FACTOR=VALUE"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_level_must_be_there_with_another_beside_it() {
        let a = Against::parse("side=base").unwrap();
        let ok = |levels: &[&str]| {
            let l: Vec<String> = levels.iter().map(|s| s.to_string()).collect();
            levels_hold(&a, "side", "base", &l, &["side", "size"]).map_err(|e| format!("{e:#}"))
        };
        assert!(ok(&["base", "new"]).is_ok());
        let e = ok(&["old", "new"]).unwrap_err();
        assert!(e.contains("no level `base` (levels: old, new)"), "{e}");
        let e = ok(&["base"]).unwrap_err();
        assert!(e.contains("only this level"), "{e}");
        let e = ok(&[]).unwrap_err();
        assert!(e.contains("no factor or swept parameter `side`"), "{e}");
    }
}
