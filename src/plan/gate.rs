//! A plan's `[gate]` section: the policy `kbench check` applies per
//! benchmark and metric.
//!
//! ```toml
//! [gate]
//! threshold = "2%"                      # every gated cell [default: --threshold]
//! thresholds = { "pipe-bw" = "3%", "ns/op" = "1%", "loop:real" = "5%" }
//! report_only = ["ivcsw"]               # shown, never gated
//! must_not_change = ["code_size"]       # deterministic: any change fails
//! ```
//!
//! A key is a benchmark's name, a metric's, or `bench:metric`; the most
//! specific one applies (`bench:metric`, then the benchmark, then the
//! metric). Every key must name a benchmark or metric of the plan: an
//! error names the file, line and column.

use serde::Deserialize;
use toml::Spanned;

use super::{BenchSpec, Source};

/// The section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateFile {
    threshold: Option<Spanned<String>>,
    #[serde(default)]
    thresholds: indexmap::IndexMap<Spanned<String>, Spanned<String>>,
    #[serde(default)]
    report_only: Vec<Spanned<String>>,
    #[serde(default)]
    must_not_change: Vec<Spanned<String>>,
}

/// The validated policy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gate {
    /// The default threshold (a fraction), when the section gives one.
    pub threshold: Option<f64>,
    /// Key -> threshold.
    pub thresholds: Vec<(String, f64)>,
    pub report_only: Vec<String>,
    pub must_not_change: Vec<String>,
}

/// How `kbench check` treats one cell's metric.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Policy {
    Threshold(f64),
    ReportOnly,
    MustNotChange,
}

impl Gate {
    /// Whether a key of the section names `bench`'s `metric` itself (as
    /// `bench:metric` or `metric`), not only through its benchmark.
    pub fn names(&self, bench: &str, metric: &str) -> bool {
        let keys = [format!("{bench}:{metric}"), metric.to_string()];
        let lists = [&self.must_not_change, &self.report_only];
        keys.iter().any(|k| {
            lists.iter().any(|l| l.contains(k)) || self.thresholds.iter().any(|(x, _)| x == k)
        })
    }

    /// The policy for `bench`'s `metric`, `default` the threshold when
    /// neither the section nor a key sets one.
    pub fn policy(&self, bench: &str, metric: &str, default: f64) -> Policy {
        let keys = [
            format!("{bench}:{metric}"),
            bench.to_string(),
            metric.to_string(),
        ];
        let has = |list: &[String]| keys.iter().any(|k| list.contains(k));
        if has(&self.must_not_change) {
            return Policy::MustNotChange;
        }
        if has(&self.report_only) {
            return Policy::ReportOnly;
        }
        for k in &keys {
            if let Some((_, t)) = self.thresholds.iter().find(|(x, _)| x == k) {
                return Policy::Threshold(*t);
            }
        }
        Policy::Threshold(self.threshold.unwrap_or(default))
    }
}

/// Check every key against the plan's benchmarks and their metrics.
pub fn validate(f: &GateFile, src: &Source<'_>, benches: &[BenchSpec]) -> anyhow::Result<Gate> {
    let known = |key: &str| -> bool {
        let (b, m) = match key.split_once(':') {
            Some((b, m)) => (Some(b), Some(m)),
            None => (None, None),
        };
        // Counters per operation are every micro and scale cell's metrics.
        let counted = |s: &BenchSpec, m: &str| {
            crate::system::counters::is_metric(m) && s.bench.kind() != crate::record::Kind::Command
        };
        benches.iter().any(|s| {
            let metrics = s.bench.metrics();
            match (b, m) {
                (Some(b), Some(m)) => {
                    s.display == b && (metrics.iter().any(|x| x.name == m) || counted(s, m))
                }
                _ => s.display == key || metrics.iter().any(|x| x.name == key) || counted(s, key),
            }
        })
    };
    let key = |k: &Spanned<String>| -> anyhow::Result<String> {
        if known(k.get_ref()) {
            Ok(k.get_ref().clone())
        } else {
            Err(src.err(
                k.span(),
                format!(
                    "[gate]: `{}` is no benchmark or metric of this plan (use a benchmark's name, a metric's, or bench:metric)",
                    k.get_ref()
                ),
            ))
        }
    };
    let pct = |v: &Spanned<String>| -> anyhow::Result<f64> {
        crate::units::parse_percent(v.get_ref())
            .map_err(|e| src.err(v.span(), format!("[gate]: {e}")))
    };
    let mut g = Gate {
        threshold: f.threshold.as_ref().map(pct).transpose()?,
        ..Gate::default()
    };
    for (k, v) in &f.thresholds {
        g.thresholds.push((key(k)?, pct(v)?));
    }
    for k in &f.report_only {
        g.report_only.push(key(k)?);
    }
    for k in &f.must_not_change {
        let name = key(k)?;
        if g.report_only.contains(&name) {
            return Err(src.err(
                k.span(),
                format!("[gate]: `{name}` is both report_only and must_not_change"),
            ));
        }
        g.must_not_change.push(name);
    }
    Ok(g)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_key_sets_the_policy() {
        let g = Gate {
            threshold: Some(0.02),
            thresholds: vec![("pipe-bw".into(), 0.03), ("pipe-bw:MB/s".into(), 0.05)],
            report_only: vec!["ivcsw".into()],
            must_not_change: vec!["code_size".into()],
        };
        assert_eq!(g.policy("pipe-bw", "MB/s", 0.1), Policy::Threshold(0.05));
        assert_eq!(g.policy("pipe-bw", "ns/op", 0.1), Policy::Threshold(0.03));
        assert_eq!(g.policy("getppid", "ns/op", 0.1), Policy::Threshold(0.02));
        assert_eq!(g.policy("x", "ivcsw", 0.1), Policy::ReportOnly);
        assert_eq!(g.policy("x", "code_size", 0.1), Policy::MustNotChange);
        assert_eq!(
            Gate::default().policy("x", "y", 0.1),
            Policy::Threshold(0.1)
        );
        // Named itself, not only through its benchmark.
        assert!(g.names("pipe-bw", "MB/s") && g.names("x", "ivcsw"));
        assert!(!g.names("pipe-bw", "ns/op") && !Gate::default().names("x", "y"));
    }
}
