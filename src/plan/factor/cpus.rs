//! `apply = "cpus"`: each value is a CPU list, the affinity of the cell
//! (inherited by commands); every CPU in it must be online.

use super::{FactorFile, Kind, scalar_levels};
use crate::bench::params::label_of;
use crate::plan::{Apply, Level, Source};
use crate::units::CpuSet;

pub(super) const KIND: Kind = Kind {
    apply: "cpus",
    keys: &[],
    read: |_, _, _| Ok(Apply::Cpus),
    levels,
};

/// Each value's CPU set, parsed and found online.
fn levels(src: &Source, name: &str, d: &FactorFile) -> anyhow::Result<Vec<Level>> {
    scalar_levels(src, name, d, |level| {
        let set = CpuSet::parse(&label_of(&level.raw))
            .and_then(|s| s.check_online(&crate::system::online_cpus()).map(|_| s))
            .map_err(|e| src.err(d.values.span(), format!("factor `{name}`: {e}")))?;
        level.cpus = Some(set);
        Ok(())
    })
}
