//! A benchmark whose samples are given, not measured (hyperfine's
//! `MockExecutor`): the runner, the stores, reports and comparisons are
//! tested with it deterministically, without timing. Test builds only.

use std::sync::Arc;

use super::{Bench, Instance, Kind, Measure, Metric, ParamDef, ParamType, Params, RunSettings};

/// The values of sample `i` (one per metric) of the cell with `variant`.
pub type Gen = dyn Fn(i64, u32) -> Vec<f64> + Send + Sync;

/// `variant` (an integer parameter) lets one fake have several cells.
pub const VARIANT: ParamDef = ParamDef {
    name: "variant",
    ty: ParamType::Int { min: 0, max: 1000 },
    default: Some("0"),
    help: "which series of values the cell yields",
};

pub struct Fake {
    pub name: String,
    pub kind: Kind,
    pub metrics: Vec<Metric>,
    pub params: Vec<ParamDef>,
    pub generate: Arc<Gen>,
}

impl Fake {
    /// A fake with one metric whose samples are `generate(variant, i)`.
    pub fn new(
        name: &str,
        metric: Metric,
        generate: impl Fn(i64, u32) -> f64 + Send + Sync + 'static,
    ) -> Fake {
        Fake {
            name: name.into(),
            kind: Kind::Micro,
            metrics: vec![metric],
            params: vec![VARIANT],
            generate: Arc::new(move |v, i| vec![generate(v, i)]),
        }
    }
}

struct FakeInstance {
    variant: i64,
    next: u32,
    generate: Arc<Gen>,
}

impl Bench for Fake {
    fn name(&self) -> &str {
        &self.name
    }
    fn kind(&self) -> Kind {
        self.kind
    }
    fn description(&self) -> &str {
        "given values (tests)"
    }
    fn params(&self) -> &[ParamDef] {
        &self.params
    }
    fn metrics(&self) -> Vec<Metric> {
        self.metrics.clone()
    }
    fn instantiate(&self, p: &Params, _: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        Ok(Box::new(FakeInstance {
            variant: p.opt_int("variant").unwrap_or(0),
            next: 0,
            generate: Arc::clone(&self.generate),
        }))
    }
}

impl Instance for FakeInstance {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        let vals = (self.generate)(self.variant, self.next);
        self.next += 1;
        out.extend(
            vals.into_iter()
                .enumerate()
                .map(|(metric, value)| Measure { metric, value }),
        );
        Ok(())
    }
    fn placement(&self) -> Option<String> {
        Some("cpu 0".into())
    }
    fn notes(&self) -> Vec<(String, String)> {
        vec![("variant".into(), self.variant.to_string())]
    }
}
