//! `apply = "env"`: each value is the environment variable `var` (default:
//! the factor's name) of command benchmarks and their prepare/cleanup,
//! the cell's parameter `env.VAR`.
//!
//! The values of a variable whose name names a secret (`PGPASSWORD`,
//! `API_TOKEN`: `crate::redact`) are never shown or stored: without
//! `labels` they are labelled `***1`, `***2`, ... in plan order (`***`
//! for a single value), the label every cell key, report and stored plan
//! shows in their place.

use toml::Spanned;

use super::{FactorFile, Kind, plain_levels};
use crate::plan::{Apply, Level, Source};

pub(super) const KIND: Kind = Kind {
    apply: "env",
    keys: &["var"],
    read,
    levels,
};

/// The values as they are, a secret variable's hidden.
fn levels(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Vec<Level>> {
    let mut levels = plain_levels(src, name, d)?;
    let var = d.var.as_ref().map_or(name, |v| v.get_ref().as_str());
    if !crate::redact::is_secret_name(var) {
        return Ok(levels);
    }
    let n = levels.len();
    let labelled = d.labels.is_some() || d.values.get_ref().is_table();
    for (i, lv) in levels.iter_mut().enumerate() {
        let mask = match n {
            1 => crate::redact::MASK.to_string(),
            _ => format!("{}{}", crate::redact::MASK, i + 1),
        };
        crate::redact::register_as(&crate::bench::params::label_of(&lv.raw), &mask);
        if !labelled {
            lv.label = mask;
        }
    }
    Ok(levels)
}

/// The variable, which must be a name a shell can set.
fn read(src: &Source, fname: &Spanned<String>, d: &FactorFile) -> anyhow::Result<Apply> {
    let name = fname.get_ref();
    let var = d
        .var
        .as_ref()
        .map_or_else(|| name.clone(), |v| v.get_ref().clone());
    let ok = !var.is_empty()
        && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !var.starts_with(|c: char| c.is_ascii_digit());
    if !ok {
        let span = d.var.as_ref().map_or(fname.span(), |v| v.span());
        return Err(src.err(
            span,
            format!("factor `{name}`: `{var}` is not an environment variable name (set `var`)"),
        ));
    }
    Ok(Apply::Env { var })
}
