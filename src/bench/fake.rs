//! A benchmark whose samples are given, not measured (hyperfine's
//! `MockExecutor`): the runner, the stores, reports and comparisons are
//! tested with it deterministically, without timing. Test builds only.

use std::sync::Arc;

use super::{Bench, Instance, Kind, Measure, Metric, ParamDef, ParamType, Params, RunSettings};

/// The values of sample `i` (one per metric) of the cell with `variant`.
pub type Gen = dyn Fn(i64, u32) -> Vec<f64> + Send + Sync;

/// What the process with index `process` adds to every value of the cell
/// with `variant` (`--processes`: a per-process shift of the mean, as a
/// memory layout or an environment size brings).
pub type Offset = dyn Fn(i64, u32) -> f64 + Send + Sync;

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
    /// The per-process offset, when the fake's mean moves between
    /// processes.
    pub per_process: Option<Arc<Offset>>,
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
            per_process: None,
        }
    }

    /// The same fake, its values shifted by `offset(variant, process)` in
    /// each process of `--processes` (0 outside that mode).
    pub fn per_process(mut self, offset: impl Fn(i64, u32) -> f64 + Send + Sync + 'static) -> Fake {
        self.per_process = Some(Arc::new(offset));
        self
    }
}

struct FakeInstance {
    variant: i64,
    next: u32,
    generate: Arc<Gen>,
    /// Added to every value.
    offset: f64,
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
    fn metrics(&self) -> &[Metric] {
        &self.metrics
    }
    fn instantiate(&self, p: &Params, s: &RunSettings) -> anyhow::Result<Box<dyn Instance>> {
        let variant = p.opt_int("variant").unwrap_or(0);
        Ok(Box::new(FakeInstance {
            variant,
            next: 0,
            generate: Arc::clone(&self.generate),
            offset: match (&self.per_process, s.process) {
                (Some(f), Some(i)) => f(variant, i),
                _ => 0.0,
            },
        }))
    }
}

impl Instance for FakeInstance {
    fn sample(&mut self, out: &mut Vec<Measure>) -> anyhow::Result<()> {
        let vals = (self.generate)(self.variant, self.next);
        self.next += 1;
        out.extend(vals.into_iter().enumerate().map(|(metric, value)| Measure {
            metric,
            value: value + self.offset,
        }));
        Ok(())
    }
    fn placement(&self) -> Option<String> {
        Some("cpu 0".into())
    }
    fn notes(&self) -> Vec<(String, String)> {
        vec![("variant".into(), self.variant.to_string())]
    }
}
