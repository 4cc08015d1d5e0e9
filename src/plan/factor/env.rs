//! `apply = "env"`: each value is the environment variable `var` (default:
//! the factor's name) of command benchmarks and their prepare/cleanup,
//! the cell's parameter `env.VAR`.

use toml::Spanned;

use super::{FactorFile, Kind, plain_levels};
use crate::plan::{Apply, Source};

pub(super) const KIND: Kind = Kind {
    apply: "env",
    keys: &["var"],
    read,
    levels: plain_levels,
};

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
