//! `apply = "shell"`: `setup` runs before a value's cells and `teardown`
//! after them (`{value}` is the value); cells sharing shell values run as
//! one block.

use toml::Spanned;

use super::{FactorFile, Kind, plain_levels};
use crate::plan::{Apply, Source};

pub(super) const KIND: Kind = Kind {
    apply: "shell",
    keys: &["setup", "teardown"],
    read,
    levels: plain_levels,
};

/// Its commands: at least one of the two.
fn read(src: &Source, fname: &Spanned<String>, d: &FactorFile) -> anyhow::Result<Apply> {
    if d.setup.is_none() && d.teardown.is_none() {
        return Err(src.err(
            d.apply.span(),
            format!(
                "factor `{}`: apply = \"shell\" needs `setup` and/or `teardown`",
                fname.get_ref()
            ),
        ));
    }
    Ok(Apply::Shell {
        setup: d.setup.as_ref().map(|x| x.get_ref().clone()),
        teardown: d.teardown.as_ref().map(|x| x.get_ref().clone()),
    })
}
