//! The small listings: `kbench runs` (a line per stored run), `kbench
//! list` (benchmarks by family, or one in full) and `kbench sysinfo`
//! (the fingerprint and its noise warnings); text of their own, the other
//! formats by the [`Render`] fallbacks.

use std::fmt::Write;

use serde::Serialize;

use super::fmt::grid;
use super::fmt::{WIDTH, human, written};
use super::render::Render;
use crate::bench::Bench;
use crate::store::RunRow;
use crate::system::{Fingerprint, Warning};
use crate::term::wrapped;

/// `kbench sysinfo`: the fingerprint and its noise warnings.
#[derive(Clone, Debug, Serialize)]
pub struct Sysinfo {
    #[serde(flatten)]
    pub fingerprint: Fingerprint,
    pub warnings: Vec<Warning>,
}

/// `kbench list`: one benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct BenchInfo {
    pub name: String,
    pub kind: crate::record::Kind,
    /// Where `kbench list` files it (syscalls, pipes, ...).
    pub family: crate::bench::catalogue::Family,
    pub description: String,
    /// The tool its numbers are checked against side by side.
    pub reference: Option<String>,
    pub metrics: Vec<crate::record::Metric>,
    pub params: Vec<ParamInfo>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ParamInfo {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub default: Option<String>,
    pub help: String,
}

impl BenchInfo {
    pub fn of(b: &dyn Bench) -> BenchInfo {
        BenchInfo {
            name: b.name().to_string(),
            kind: b.kind(),
            family: crate::bench::catalogue::family(b),
            description: b.description().to_string(),
            reference: crate::bench::catalogue::reference(b),
            metrics: b.metrics().to_vec(),
            params: b
                .params()
                .iter()
                .map(|p| ParamInfo {
                    name: p.name.to_string(),
                    ty: p.ty.describe(),
                    default: p.default.map(str::to_string),
                    help: p.help.to_string(),
                })
                .collect(),
        }
    }
}

fn runs(o: &mut String, rows: &[RunRow]) {
    let _ = writeln!(
        o,
        "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  status",
        "id", "campaign", "host", "start", "cells", "samples"
    );
    for r in rows {
        let _ = writeln!(
            o,
            "{:>5}  {:<20} {:<16} {:<23} {:>5} {:>8}  {}",
            r.id,
            r.campaign.as_deref().unwrap_or("-"),
            r.host,
            super::fmt::time(r.started),
            r.cells,
            r.samples,
            r.status
        );
        if !r.labels.is_empty() {
            let _ = writeln!(o, "{}", labels_line(&r.labels));
        }
    }
}

/// A run's labels under its row of `kbench runs`: `k=v` pairs, a commit
/// shortened to 12 digits, the line cut at 80 columns.
fn labels_line(labels: &crate::record::Labels) -> String {
    let pairs: Vec<String> = labels
        .iter()
        .map(|(k, v)| {
            let v = if k == "commit" && v.len() > 12 && v.is_ascii() {
                &v[..12]
            } else {
                v.as_str()
            };
            format!("{k}={v}")
        })
        .collect();
    let line = format!("       {}", pairs.join(" "));
    if line.chars().count() > 80 {
        let cut: String = line.chars().take(77).collect();
        format!("{cut}...")
    } else {
        line
    }
}

/// `kbench list`: a heading per family, then one line per benchmark:
/// name, first metric, and the start of its description.
fn benches(o: &mut String, list: &[BenchInfo]) {
    use crate::bench::catalogue::Family;
    let name_w = list.iter().map(|b| b.name.len()).max().unwrap_or(0);
    let metric = |b: &BenchInfo| {
        b.metrics
            .first()
            .map_or("", |m| m.name.as_str())
            .to_string()
    };
    let metric_w = list.iter().map(|b| metric(b).len()).max().unwrap_or(0);
    let mut first = true;
    for f in Family::ALL {
        let members: Vec<&BenchInfo> = list.iter().filter(|b| b.family == f).collect();
        if members.is_empty() {
            continue;
        }
        if !first {
            o.push('\n');
        }
        first = false;
        let _ = writeln!(o, "{}", f.as_str());
        for b in members {
            let head = format!("  {:<name_w$}  {:<metric_w$}  ", b.name, metric(b));
            let room = WIDTH.saturating_sub(head.chars().count());
            let _ = writeln!(o, "{head}{}", grid::clip(&b.description, room));
        }
    }
    if list.len() > 1 {
        let _ = writeln!(
            o,
            "\n`kbench list NAME` describes one: parameters, metrics, reference tool."
        );
    }
}

/// `kbench list counters`: one counter `--counters` takes.
#[derive(Clone, Debug, Serialize)]
pub struct CounterInfo {
    /// perf's name, also the metric's (`NAME/op`).
    pub name: String,
    /// perf's other names for it.
    pub aliases: Vec<String>,
    pub unit: String,
    /// `software` (the kernel counts it) or `hardware` (the CPU's PMU).
    pub source: String,
    /// Read by a run unasked (`--counters default`).
    pub default: bool,
}

impl CounterInfo {
    /// Every counter, in the order reports list them.
    pub fn all() -> Vec<CounterInfo> {
        use crate::system::counters::{ALL, SOFTWARE};
        ALL.iter()
            .map(|c| CounterInfo {
                name: c.name().to_string(),
                aliases: c.aliases().iter().map(|a| a.to_string()).collect(),
                unit: c.unit().to_string(),
                source: if c.hardware() { "hardware" } else { "software" }.to_string(),
                default: SOFTWARE.contains(c),
            })
            .collect()
    }
}

fn counters(o: &mut String, list: &[CounterInfo]) {
    let rows: Vec<Vec<String>> = list
        .iter()
        .map(|c| {
            vec![
                c.name.clone(),
                if c.aliases.is_empty() {
                    "-".to_string()
                } else {
                    c.aliases.join(", ")
                },
                c.unit.clone(),
                c.source.clone(),
                if c.default { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    let head = ["counter", "also", "unit", "counted by", "default"];
    let w: Vec<usize> = (0..head.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].len())
                .chain([head[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in std::iter::once(head.map(String::from).to_vec()).chain(rows) {
        let line: Vec<String> = r.iter().zip(&w).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(o, "{}", line.join("  ").trim_end());
    }
    let _ = writeln!(
        o,
        "
--counters takes names and aliases, separated by commas, or a set:
         default (the software ones marked), all, none. Each is stored per
         operation as NAME/op; `page-faults` is minor plus major faults."
    );
}

impl Render for [CounterInfo] {
    const KIND: &'static str = "counters";

    fn text(&self) -> String {
        written(|o| counters(o, self))
    }
}

/// `kbench list NAME`: everything about one benchmark, within 80 columns.
fn bench_detail(o: &mut String, b: &BenchInfo) {
    let _ = writeln!(o, "{} ({}, {})", b.name, b.family.as_str(), b.kind.as_str());
    o.push_str(&wrapped("  ", &b.description, "  "));
    o.push_str("metrics:\n");
    for m in &b.metrics {
        let _ = writeln!(o, "  {} [{}], {}", m.name, m.unit, m.direction);
    }
    if let Some(r) = &b.reference {
        o.push_str(&wrapped("reference: ", r, "  "));
    }
    if b.params.is_empty() {
        o.push_str("parameters: none\n");
    } else {
        o.push_str("parameters:\n");
        for p in &b.params {
            let default = p.default.as_deref().unwrap_or("none");
            let _ = writeln!(o, "  {} = {} (default {})", p.name, p.ty, default);
            o.push_str(&wrapped("      ", &p.help, "      "));
        }
    }
    let example = match b.params.iter().find(|p| p.default.is_some()) {
        Some(p) => format!(
            "{}:{}={}",
            b.name,
            p.name,
            p.default.as_deref().unwrap_or_default()
        ),
        None => b.name.clone(),
    };
    let _ = writeln!(o, "example: kbench run {example}");
}

fn sysinfo(o: &mut String, s: &Sysinfo) {
    let fp = &s.fingerprint;
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
    let mut kv = |k: &str, v: String| {
        o.push_str(&wrapped(&format!("{k:<16} "), &v, &" ".repeat(17)));
    };
    kv("host", fp.hostname.clone());
    kv("os", format!("{} ({})", fp.os, opt(&fp.os_release)));
    kv(
        "kernel",
        format!("{} {}", fp.kernel_release, fp.kernel_version),
    );
    kv("cmdline", opt(&fp.cmdline));
    kv("cpu", opt(&fp.cpu_model));
    let num = |v: Option<u32>| v.map_or("?".into(), |v| v.to_string());
    kv(
        "cpu id",
        format!(
            "{} family {} model {} stepping {}",
            opt(&fp.cpu_vendor),
            num(fp.cpu_family),
            num(fp.cpu_model_number),
            num(fp.cpu_stepping)
        ),
    );
    kv("microcode", opt(&fp.microcode));
    kv(
        "topology",
        format!(
            "{} socket(s), {} core(s), {} thread(s), online {}, SMT {}",
            fp.sockets,
            fp.cores,
            fp.threads,
            fp.online_cpus,
            opt(&fp.smt)
        ),
    );
    kv("numa nodes", fp.numa_nodes.to_string());
    kv("memory", human::gib(fp.memory_bytes));
    kv(
        "cpufreq",
        format!(
            "driver {}, governor {}",
            opt(&fp.cpufreq_driver),
            opt(&fp.governor)
        ),
    );
    kv(
        "boost",
        fp.boost
            .map_or("unknown".into(), |b| if b { "on" } else { "off" }.into()),
    );
    kv("thp", opt(&fp.thp));
    kv("clocksource", opt(&fp.clocksource));
    kv(
        "hypervisor",
        fp.hypervisor.clone().unwrap_or_else(|| "none".into()),
    );
    kv(
        "load average",
        format!("{} {} {}", fp.loadavg[0], fp.loadavg[1], fp.loadavg[2]),
    );
    o.push_str("vulnerabilities:\n");
    for (k, v) in &fp.vulnerabilities {
        o.push_str(&wrapped(&format!("  {k:<26} "), v, &" ".repeat(29)));
    }
    if s.warnings.is_empty() {
        o.push_str("noise warnings: none\n");
    } else {
        o.push_str("noise warnings:\n");
        for w in &s.warnings {
            o.push_str(&wrapped("  - ", &w.to_string(), "    "));
        }
    }
}

/// `kbench runs`: one line per stored run.
impl Render for [RunRow] {
    const KIND: &'static str = "runs";

    fn text(&self) -> String {
        written(|o| runs(o, self))
    }
}

impl Render for Sysinfo {
    const KIND: &'static str = "sysinfo";

    fn text(&self) -> String {
        written(|o| sysinfo(o, self))
    }
}

impl Render for [BenchInfo] {
    const KIND: &'static str = "benches";

    fn text(&self) -> String {
        written(|o| benches(o, self))
    }
}

impl Render for BenchInfo {
    const KIND: &'static str = "bench";

    fn text(&self) -> String {
        written(|o| bench_detail(o, self))
    }
}
