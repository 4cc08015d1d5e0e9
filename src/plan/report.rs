//! A plan's `[report]` section: which table the campaign's report prints
//! and how its cells are laid out. Checked like the rest of the plan
//! (`file:line:col` errors naming the key); `kbench report` flags
//! override each key.
//!
//! ```toml
//! [report]
//! table = "improvement"         # ministat (default), improvement, change, ratio, matrix, scaling
//! rows = ["chunk", "read_size"] # dimensions (factors or parameters) along the rows
//! cols = ["pipe_size", "zero_copy"]
//! groups = ["cpus"]             # column groups (`2way | UP`)
//! baseline = { pipe_size = "4k", zero_copy = "copy" }
//! test = "welch"                # accepted from older plans: changes follow the design
//! confidence = 95
//! names = { chunk = "T.S", read_size = "T.S" }   # dimension headers
//! pairs = [["pti=on,pcid=on", "pti=off,pcid=on"]] # matrix: ministat blocks
//! [report.variants]             # named columns
//! "LP(32k)" = { pipe_size = "32k", zero_copy = "copy" }
//! ```

use indexmap::IndexMap;
use serde::Deserialize;
use toml::Spanned;

use super::Source;
use crate::stats::ttest::TKind;

/// The layouts kbench prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    /// One ministat table per benchmark and metric (`N Min Max ...`).
    Ministat,
    /// % improvement of each variant over the baseline of its group,
    /// positive = better whichever way the metric points (the seeds' and
    /// mmtests' `% imp`).
    Improvement,
    /// % change of each variant over the baseline of its group,
    /// new/baseline - 1 (positive = larger).
    Change,
    /// Values, then values normalised to the baseline, with a geomean row.
    Ratio,
    /// One table per benchmark: factor columns, each metric's average
    /// and interval, sectioned by host and revision.
    Matrix,
    /// ops/s by task count and mode, efficiency, the flattening point.
    Scaling,
}

impl TableKind {
    pub fn parse(s: &str) -> Option<TableKind> {
        Some(match s {
            "ministat" => TableKind::Ministat,
            "improvement" => TableKind::Improvement,
            "change" => TableKind::Change,
            "ratio" => TableKind::Ratio,
            "matrix" => TableKind::Matrix,
            "scaling" => TableKind::Scaling,
            _ => return None,
        })
    }
}

/// `name=value` assignments, in order.
pub type Assign = Vec<(String, String)>;

/// How a report lays out its cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub table: TableKind,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    pub groups: Vec<String>,
    pub baseline: Assign,
    pub variants: Vec<(String, Assign)>,
    pub names: IndexMap<String, String>,
    pub pairs: Vec<(Assign, Assign)>,
    pub test: TKind,
    pub confidence: f64,
    /// Each factor's value labels in the plan's order: rows, columns and
    /// column groups follow it (`2way | UP` as the plan lists them), not
    /// the order the cells happened to be stored in.
    pub order: IndexMap<String, Vec<String>>,
}

impl Default for Layout {
    fn default() -> Layout {
        Layout {
            table: TableKind::Ministat,
            rows: Vec::new(),
            cols: Vec::new(),
            groups: Vec::new(),
            baseline: Vec::new(),
            variants: Vec::new(),
            names: IndexMap::new(),
            pairs: Vec::new(),
            test: TKind::Welch,
            confidence: 95.0,
            order: IndexMap::new(),
        }
    }
}

impl Layout {
    /// The header a dimension is shown under (`T.S` for `chunk`).
    pub fn name_of<'a>(&'a self, dim: &'a str) -> &'a str {
        self.names.get(dim).map_or(dim, |s| s.as_str())
    }

    /// Put keys over `dims` in the plan's order of each dimension's
    /// values; values the plan does not list keep their first-seen order.
    pub fn sort_keys(&self, keys: &mut [Vec<String>], dims: &[String]) {
        let rank = |k: &Vec<String>| -> Vec<usize> {
            dims.iter()
                .zip(k)
                .map(|(d, v)| {
                    self.order
                        .get(d)
                        .and_then(|vs| vs.iter().position(|x| x == v))
                        .unwrap_or(usize::MAX)
                })
                .collect()
        };
        keys.sort_by_cached_key(rank);
    }
}

/// Parse `a=b,c=d` (the `--baseline` flag, a `pairs` entry).
pub fn parse_assign(s: &str) -> Result<Assign, String> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("`{part}` is not name=value"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(format!("`{part}` is not name=value"));
        }
        if out.iter().any(|(x, _)| x == k) {
            return Err(format!("`{k}` is given twice in `{s}`"));
        }
        out.push((k.to_string(), v.to_string()));
    }
    if out.is_empty() {
        return Err(format!("`{s}` names no name=value"));
    }
    Ok(out)
}

/// `dim = value` pairs as written.
type AssignFile = IndexMap<Spanned<String>, Spanned<toml::Value>>;

/// The section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ReportFile {
    table: Option<Spanned<String>>,
    #[serde(default)]
    rows: Vec<Spanned<String>>,
    #[serde(default)]
    cols: Vec<Spanned<String>>,
    #[serde(default)]
    groups: Vec<Spanned<String>>,
    #[serde(default)]
    baseline: IndexMap<Spanned<String>, Spanned<toml::Value>>,
    #[serde(default)]
    variants: IndexMap<Spanned<String>, Spanned<AssignFile>>,
    #[serde(default)]
    names: IndexMap<Spanned<String>, String>,
    #[serde(default)]
    pairs: Vec<Spanned<Vec<Spanned<String>>>>,
    test: Option<Spanned<String>>,
    confidence: Option<Spanned<f64>>,
}

fn scalar(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Check the section against the plan's dimensions: `dims` are the factor
/// and parameter names, `labels` each factor's value labels.
pub(super) fn validate(
    f: &ReportFile,
    src: &Source,
    dims: &[String],
    labels: &IndexMap<String, Vec<String>>,
) -> anyhow::Result<Layout> {
    let mut l = Layout {
        order: labels.clone(),
        ..Layout::default()
    };
    if let Some(t) = &f.table {
        l.table = TableKind::parse(t.get_ref()).ok_or_else(|| {
            src.err(
                t.span(),
                format!(
                    "`table`: unknown table `{}` (expected ministat, improvement, ratio, matrix or scaling)",
                    t.get_ref()
                ),
            )
        })?;
    }
    let dim = |key: &str, s: &Spanned<String>| -> anyhow::Result<String> {
        let name = s.get_ref().trim();
        if dims.iter().any(|d| d == name) || name == "host" || name == "revision" {
            Ok(name.to_string())
        } else {
            Err(src.err(
                s.span(),
                format!(
                    "`{key}`: `{name}` is neither a factor nor a parameter of the plan{}",
                    crate::suggest::hint(
                        name,
                        &dims.iter().map(String::as_str).collect::<Vec<_>>(),
                        ""
                    )
                ),
            ))
        }
    };
    let value = |key: &str, d: &str, v: &Spanned<toml::Value>| -> anyhow::Result<String> {
        let text = scalar(v.get_ref());
        if let Some(ls) = labels.get(d)
            && !ls.contains(&text)
        {
            return Err(src.err(
                v.span(),
                format!(
                    "`{key}`: factor `{d}` has no value `{text}` (values: {})",
                    ls.join(", ")
                ),
            ));
        }
        Ok(text)
    };
    let mut seen = std::collections::HashSet::new();
    for (key, list, out) in [
        ("rows", &f.rows, &mut l.rows),
        ("cols", &f.cols, &mut l.cols),
        ("groups", &f.groups, &mut l.groups),
    ] {
        for s in list {
            let d = dim(key, s)?;
            if !seen.insert(d.clone()) {
                return Err(src.err(
                    s.span(),
                    format!("`{key}`: `{d}` is already placed in rows, cols or groups"),
                ));
            }
            out.push(d);
        }
    }
    for (k, v) in &f.baseline {
        let d = dim("baseline", k)?;
        l.baseline.push((d.clone(), value("baseline", &d, v)?));
    }
    for (name, assign) in &f.variants {
        let mut a = Vec::new();
        for (k, v) in assign.get_ref() {
            let d = dim("variants", k)?;
            a.push((d.clone(), value("variants", &d, v)?));
        }
        if a.is_empty() {
            return Err(src.err(
                assign.span(),
                format!("`variants`: `{}` assigns nothing", name.get_ref()),
            ));
        }
        l.variants.push((name.get_ref().clone(), a));
    }
    for (k, v) in &f.names {
        let d = dim("names", k)?;
        l.names.insert(d, v.clone());
    }
    l.pairs = pairs(f, src, dims, labels)?;
    if let Some(t) = &f.test {
        l.test = match t.get_ref().as_str() {
            "welch" => TKind::Welch,
            "student" => TKind::Student,
            other => {
                return Err(src.err(
                    t.span(),
                    format!("`test`: unknown test `{other}` (expected welch or student)"),
                ));
            }
        };
    }
    if let Some(c) = &f.confidence {
        let v = *c.get_ref();
        if !(80.0..=99.9).contains(&v) {
            return Err(src.err(
                c.span(),
                format!("`confidence` must be in 80..99.9 percent, found {v}"),
            ));
        }
        l.confidence = v;
    }
    Ok(l)
}

/// `pairs`: each a baseline and a contender assignment over the plan's
/// factors and parameters.
fn pairs(
    f: &ReportFile,
    src: &Source,
    dims: &[String],
    labels: &IndexMap<String, Vec<String>>,
) -> anyhow::Result<Vec<(Assign, Assign)>> {
    let mut out = Vec::new();
    for p in &f.pairs {
        let [a, b] = p.get_ref().as_slice() else {
            return Err(src.err(
                p.span(),
                "`pairs`: each entry is [\"baseline k=v,...\", \"contender k=v,...\"]",
            ));
        };
        let side = |s: &Spanned<String>| -> anyhow::Result<Assign> {
            let a = parse_assign(s.get_ref())
                .map_err(|e| src.err(s.span(), format!("`pairs`: {e}")))?;
            for (k, v) in &a {
                if !dims.iter().any(|d| d == k) {
                    return Err(src.err(
                        s.span(),
                        format!("`pairs`: `{k}` is neither a factor nor a parameter of the plan"),
                    ));
                }
                if let Some(ls) = labels.get(k)
                    && !ls.contains(v)
                {
                    return Err(src.err(
                        s.span(),
                        format!(
                            "`pairs`: factor `{k}` has no value `{v}` (values: {})",
                            ls.join(", ")
                        ),
                    ));
                }
            }
            Ok(a)
        };
        out.push((side(a)?, side(b)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "name = \"t\"\n[factors]\nps = { apply = \"param\", param = \"pipe_size\", values = [\"4k\", \"32k\"] }\n[[bench]]\nuse = \"pipe-bw\"\nsweep = { chunk = [\"2k\", \"4k\"] }\n";

    fn err(report: &str) -> String {
        let text = format!("{HEAD}[report]\n{report}");
        format!("{:#}", crate::plan::parse(&text, "p.toml").unwrap_err())
    }

    #[test]
    fn a_valid_section_becomes_a_layout() {
        let text = format!(
            "{HEAD}[report]\ntable = \"improvement\"\nrows = [\"chunk\"]\ncols = [\"ps\"]\nbaseline = {{ ps = \"4k\" }}\nnames = {{ chunk = \"T.S\" }}\n[report.variants]\n\"LP(32k)\" = {{ ps = \"32k\" }}\n"
        );
        let l = crate::plan::parse(&text, "p.toml").unwrap().layout.unwrap();
        assert_eq!(l.table, TableKind::Improvement);
        assert_eq!(l.baseline, vec![("ps".to_string(), "4k".to_string())]);
        assert_eq!(l.name_of("chunk"), "T.S");
        assert_eq!(l.variants[0].0, "LP(32k)");
    }

    #[test]
    fn errors_name_the_line_column_and_key() {
        let e = err("table = \"pie\"\n");
        assert!(
            e.starts_with("p.toml:8:9: `table`: unknown table `pie`"),
            "{e}"
        );
        let e = err("rows = [\"nope\"]\n");
        assert!(
            e.starts_with("p.toml:8:9: `rows`: `nope` is neither a factor nor a parameter"),
            "{e}"
        );
        let e = err("baseline = { ps = \"8k\" }\n");
        assert!(
            e.starts_with(
                "p.toml:8:19: `baseline`: factor `ps` has no value `8k` (values: 4k, 32k)"
            ),
            "{e}"
        );
        let e = err("rows = [\"ps\"]\ncols = [\"ps\"]\n");
        assert!(e.contains("`cols`: `ps` is already placed"), "{e}");
        let e = err("pairs = [[\"ps=4k\"]]\n");
        assert!(e.starts_with("p.toml:8:10: `pairs`: each entry"), "{e}");
        let e = err("pairs = [[\"ps=4k\", \"ps=1m\"]]\n");
        assert!(e.contains("factor `ps` has no value `1m`"), "{e}");
        let e = err("test = \"z\"\n");
        assert!(e.contains("`test`: unknown test `z`"), "{e}");
        let e = err("confidence = 50.0\n");
        assert!(e.contains("`confidence` must be in 80..99.9"), "{e}");
        let e = err("colour = 1\n");
        assert!(
            e.contains("unknown key `colour` (known: table, rows,"),
            "{e}"
        );
    }

    #[test]
    fn the_examples_choose_the_seeds_layouts() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/");
        for (file, kind) in [
            ("pipe-patches.toml", TableKind::Improvement),
            ("jcc-erratum.toml", TableKind::Ratio),
            ("mitigation-cost.toml", TableKind::Matrix),
            ("scalability.toml", TableKind::Scaling),
        ] {
            let p = crate::plan::load(std::path::Path::new(&format!("{dir}{file}"))).unwrap();
            assert_eq!(p.layout.unwrap().table, kind, "{file}");
        }
        // Seed 000's rows in its order: pti off first, then pcid off first
        // (`0 0 / 0 1 / 1 0 / 1 1`), on Linux and FreeBSD alike.
        for file in ["mitigation-cost.toml", "mitigation-cost-freebsd.toml"] {
            let p = crate::plan::load(std::path::Path::new(&format!("{dir}{file}"))).unwrap();
            let order = p.layout.unwrap().order;
            for f in ["pti", "pcid"] {
                assert_eq!(order[f], ["off", "on"], "{file}: {f}");
            }
        }
    }

    #[test]
    fn assignments_parse() {
        assert_eq!(
            parse_assign("a=1, b=x").unwrap(),
            vec![("a".into(), "1".into()), ("b".into(), "x".into())]
        );
        assert!(parse_assign("a").is_err());
        assert!(parse_assign("").is_err());
        assert!(parse_assign("=x").is_err());
    }
}
