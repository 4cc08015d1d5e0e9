//! `apply = "param"`: each value is passed to the benchmarks having the
//! parameter `param` (default: the factor's name).

use super::{Kind, plain_levels};
use crate::plan::Apply;

pub(super) const KIND: Kind = Kind {
    apply: "param",
    keys: &["param"],
    read: |_, fname, d| {
        Ok(Apply::Param {
            param: d
                .param
                .as_ref()
                .map_or_else(|| fname.get_ref().clone(), |p| p.get_ref().clone()),
        })
    },
    levels: plain_levels,
};
