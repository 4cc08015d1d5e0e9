//! Comparability: which recorded facts of the machine differ between the
//! operands of a comparison (`kbench compare`, a report over several
//! runs), which of them are known to move results, and which the user
//! declared intended (`--expect kernel.release`). Every other difference
//! is a warning, printed in every format.
//!
//! The facts come from each run's fingerprint; an operand drawing on
//! several runs (a campaign across boots) holds every value its runs
//! recorded. Load is compared by its level (idle, busy, overloaded per
//! CPU), not by the exact load average, which no two runs share.

use serde::Serialize;

use super::fmt::WIDTH;
use crate::system::Fingerprint;

/// A recorded fact: its name, why it moves results (`None`: it is shown
/// but moves nothing by itself), and how to read it.
struct Fact {
    name: &'static str,
    moves: Option<&'static str>,
    read: fn(&Fingerprint) -> Option<String>,
}

fn nonempty(s: &str) -> Option<String> {
    (!s.trim().is_empty()).then(|| s.trim().to_string())
}

const FACTS: &[Fact] = &[
    Fact {
        name: "host",
        moves: None,
        // An import's host is a placeholder: kbench did not see it.
        read: |f| nonempty(&f.hostname).filter(|_| !imported(f)),
    },
    Fact {
        name: "os.release",
        moves: None,
        read: |f| f.os_release.clone(),
    },
    Fact {
        name: "kernel.release",
        moves: Some("the kernel's code: system calls, scheduler, memory management"),
        read: |f| nonempty(&f.kernel_release).filter(|k| k != "unknown"),
    },
    Fact {
        name: "kernel.cmdline",
        moves: Some("boot options: mitigations, isolcpus, nohz, pti"),
        read: |f| f.cmdline.clone(),
    },
    Fact {
        name: "cpu.model",
        moves: Some("another processor"),
        read: |f| f.cpu_model.clone(),
    },
    Fact {
        name: "cpu.microcode",
        moves: Some("microcode changes mitigations and the cost of branches and system calls"),
        read: |f| f.microcode.clone(),
    },
    Fact {
        name: "cpu.governor",
        moves: Some("the clock speed under load"),
        read: |f| f.governor.clone(),
    },
    Fact {
        name: "cpu.turbo",
        moves: Some("the clock depends on temperature and the other cores"),
        read: |f| f.boost.map(|b| if b { "on" } else { "off" }.to_string()),
    },
    Fact {
        name: "cpu.smt",
        moves: Some("SMT siblings share a core"),
        read: |f| f.smt.clone(),
    },
    Fact {
        name: "mm.thp",
        moves: Some("transparent huge pages change TLB misses and page-fault costs"),
        read: |f| f.thp.clone(),
    },
    Fact {
        name: "clocksource",
        moves: Some("the cost of reading the time"),
        read: |f| f.clocksource.clone(),
    },
    Fact {
        name: "compiler",
        moves: Some("the code built and measured"),
        read: |f| f.compiler.clone(),
    },
    Fact {
        name: "kbench.version",
        moves: Some("the benchmarks' own code"),
        read: |f| f.kbench.clone(),
    },
    Fact {
        name: "load",
        moves: Some("other work competes for the CPUs"),
        read: load_level,
    },
];

/// Whether the run was imported (its facts were not recorded by kbench).
fn imported(f: &Fingerprint) -> bool {
    f.os.starts_with("imported from")
}

/// The load level when the run began, from the 1-minute load average per
/// CPU (the thresholds of the noise warning).
fn load_level(f: &Fingerprint) -> Option<String> {
    if f.threads == 0 {
        return None;
    }
    let per = f.loadavg[0] / f.threads as f64;
    Some(
        if per <= 0.1 {
            "idle (<= 0.1 per CPU)"
        } else if per <= 1.0 {
            "busy (0.1..1 per CPU)"
        } else {
            "overloaded (> 1 per CPU)"
        }
        .to_string(),
    )
}

/// The names `--expect` accepts.
pub fn fact_names() -> Vec<&'static str> {
    FACTS.iter().map(|f| f.name).collect()
}

/// Check `--expect` names; the error names the unknown one and the known.
pub fn parse_expect(names: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for n in names.iter().flat_map(|n| n.split(',')) {
        let n = n.trim();
        if n.is_empty() {
            continue;
        }
        if !FACTS.iter().any(|f| f.name == n) {
            return Err(format!(
                "--expect: `{n}` is no recorded fact (known: {})",
                fact_names().join(", ")
            ));
        }
        if !out.iter().any(|x| x == n) {
            out.push(n.to_string());
        }
    }
    Ok(out)
}

/// One fact whose values differ between the operands.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub fact: String,
    /// Per operand, in operand order: the values its runs recorded
    /// (`not recorded` when none did).
    pub values: Vec<Vec<String>>,
    /// Known to move results.
    pub moves_results: bool,
    /// Why it moves results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Declared intended with `--expect`.
    pub expected: bool,
}

/// What differs between the operands of one comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparability {
    /// The operands, in order (compare's operands, or a report's runs).
    pub operands: Vec<String>,
    /// The facts compared, in order.
    pub facts: Vec<String>,
    pub differences: Vec<Difference>,
    /// `--expect` facts that do not differ after all.
    pub expected_but_same: Vec<String>,
    /// Facts some operand did not record (an import records none): they
    /// are not known to agree.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
    /// Some operand was imported from another tool.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub imported: bool,
    /// One line per difference not declared intended.
    pub warnings: Vec<String>,
}

pub const NOT_RECORDED: &str = "not recorded";

impl Comparability {
    /// Lines for text and Markdown (without the warnings): a heading,
    /// then `! fact: x value; + value` per difference.
    pub fn lines<S: AsRef<str>>(&self, symbols: &[S]) -> Vec<String> {
        let mut out = Vec::new();
        if self.differences.is_empty() && self.unknown.is_empty() {
            out.push("comparability: the operands agree in every recorded fact".to_string());
        } else if self.differences.is_empty() {
            out.push(format!(
                "comparability: no recorded fact differs; {}",
                self.unknown_text()
            ));
        } else {
            out.push(format!(
                "comparability: {} recorded fact(s) differ (! = known to move results):",
                self.differences.len()
            ));
            for d in &self.differences {
                let vals: Vec<String> = d
                    .values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let who = symbols
                            .get(i)
                            .map_or_else(|| self.operands[i].clone(), |s| s.as_ref().to_string());
                        format!("{who} {}", v.join(" / "))
                    })
                    .collect();
                out.push(format!(
                    "{} {}{}: {}",
                    if d.moves_results { "!" } else { "-" },
                    d.fact,
                    if d.expected { " (expected)" } else { "" },
                    vals.join("; ")
                ));
            }
        }
        if !self.differences.is_empty() && !self.unknown.is_empty() {
            out.push(self.unknown_text());
        }
        for e in &self.expected_but_same {
            out.push(format!("--expect {e}: it does not differ"));
        }
        out
    }

    /// `unknown (imported): kernel.release, cpu.model, ...`.
    pub fn unknown_text(&self) -> String {
        format!(
            "unknown ({}): {}",
            if self.imported {
                "imported"
            } else {
                NOT_RECORDED
            },
            self.unknown.join(", ")
        )
    }
}

/// Compare the facts of each operand's runs. `operands` are (name, the
/// fingerprints of the runs it draws on).
pub fn check(operands: &[(String, Vec<&Fingerprint>)], expect: &[String]) -> Comparability {
    let mut differences = Vec::new();
    // Facts no local run recorded are honestly "not recorded" on both
    // sides; an import's are unknown, and must not read as agreeing.
    let imported_any = operands.iter().flat_map(|(_, f)| f).any(|f| imported(f));
    let mut unknown = Vec::new();
    for f in FACTS {
        let values: Vec<Vec<String>> = operands
            .iter()
            .map(|(_, fps)| {
                let mut vs: Vec<String> = Vec::new();
                for fp in fps {
                    let v = (f.read)(fp).unwrap_or_else(|| NOT_RECORDED.to_string());
                    if !vs.contains(&v) {
                        vs.push(v);
                    }
                }
                vs.sort();
                vs
            })
            .collect();
        if values.windows(2).all(|w| w[0] == w[1]) {
            if imported_any && values.iter().any(|v| v.iter().any(|x| x == NOT_RECORDED)) {
                unknown.push(f.name.to_string());
            }
            continue;
        }
        differences.push(Difference {
            fact: f.name.to_string(),
            values,
            moves_results: f.moves.is_some(),
            why: f.moves.map(str::to_string),
            expected: expect.iter().any(|e| e == f.name),
        });
    }
    let expected_but_same: Vec<String> = expect
        .iter()
        .filter(|e| !differences.iter().any(|d| &d.fact == *e))
        .cloned()
        .collect();
    let warnings = differences
        .iter()
        .filter(|d| !d.expected)
        .map(|d| {
            let what = match &d.why {
                Some(why) => format!("known to move results ({why})"),
                None => "recorded".to_string(),
            };
            format!(
                "{} differs between the operands, {what}; if intended, say so with --expect {}",
                d.fact, d.fact
            )
        })
        .collect();
    Comparability {
        operands: operands.iter().map(|(n, _)| n.clone()).collect(),
        facts: fact_names().iter().map(|s| s.to_string()).collect(),
        differences,
        expected_but_same,
        unknown,
        imported: imported_any,
        warnings,
    }
}

/// Which recorded facts differ between the operands, and a warning for
/// each difference not declared with `--expect`.
pub(crate) fn text(o: &mut String, k: &Comparability, symbols: &[String]) {
    for (i, l) in k.lines(symbols).into_iter().enumerate() {
        let (l, indent) = if i == 0 {
            (l, "  ")
        } else {
            (format!("  {l}"), "      ")
        };
        o.push_str(&super::fmt::wrap(&l, WIDTH, indent));
    }
    for w in &k.warnings {
        o.push_str(&super::fmt::wrap(&format!("warning: {w}"), WIDTH, "  "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fingerprint;

    fn other_kernel() -> Fingerprint {
        Fingerprint {
            kernel_release: "6.6.0-test".into(),
            governor: Some("powersave".into()),
            ..fingerprint()
        }
    }

    #[test]
    fn equal_fingerprints_agree() {
        let (a, b) = (fingerprint(), fingerprint());
        let c = check(&[("a".into(), vec![&a]), ("b".into(), vec![&b])], &[]);
        assert!(
            c.differences.is_empty() && c.expected_but_same.is_empty(),
            "{c:?}"
        );
        assert!(c.warnings.is_empty());
        assert!(c.lines(&["x", "+"])[0].contains("agree in every recorded fact"));
    }

    #[test]
    fn imported_runs_do_not_agree_in_facts_nobody_recorded() {
        let imp = || Fingerprint {
            hostname: "imported".into(),
            os: "imported from will-it-scale".into(),
            kernel_release: "unknown".into(),
            ..Fingerprint::default()
        };
        let (a, b) = (imp(), imp());
        let c = check(&[("a".into(), vec![&a]), ("b".into(), vec![&b])], &[]);
        assert!(c.differences.is_empty(), "{c:?}");
        let l = c.lines(&["x", "+"]);
        assert!(!l[0].contains("agree"), "{l:?}");
        assert!(
            l[0].contains("unknown (imported): host, os.release, kernel.release"),
            "{l:?}"
        );
    }

    #[test]
    fn differing_facts_are_listed_and_warned_unless_expected() {
        let (a, b) = (fingerprint(), other_kernel());
        let ops = [("a".to_string(), vec![&a]), ("b".to_string(), vec![&b])];
        let c = check(&ops, &[]);
        let facts: Vec<&str> = c.differences.iter().map(|d| d.fact.as_str()).collect();
        assert_eq!(facts, ["kernel.release", "cpu.governor"]);
        assert!(c.differences.iter().all(|d| d.moves_results));
        assert_eq!(c.warnings.len(), 2);
        assert!(
            c.warnings[0].starts_with("kernel.release differs"),
            "{:?}",
            c.warnings
        );
        assert_eq!(
            c.differences[0].values,
            [
                vec![a.kernel_release.clone()],
                vec!["6.6.0-test".to_string()]
            ]
        );
        let c = check(&ops, &["kernel.release".to_string()]);
        assert!(c.differences[0].expected);
        assert_eq!(c.warnings.len(), 1);
        assert!(
            c.warnings[0].starts_with("cpu.governor"),
            "{:?}",
            c.warnings
        );
        let lines = c.lines(&["x", "+"]);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("! kernel.release (expected): x ")),
            "{lines:?}"
        );
    }

    #[test]
    fn an_operand_holds_every_value_of_its_runs_and_load_is_a_level() {
        let a = fingerprint();
        let mut busy = fingerprint();
        busy.loadavg = [busy.threads as f64 * 3.0, 0.0, 0.0];
        let mut a2 = fingerprint();
        a2.loadavg = [a.loadavg[0] * 0.5, 0.0, 0.0];
        // Two runs at the same level agree with one.
        let c = check(&[("a".into(), vec![&a, &a2]), ("b".into(), vec![&a])], &[]);
        assert!(c.differences.is_empty(), "{c:?}");
        let c = check(
            &[("a".into(), vec![&a, &busy]), ("b".into(), vec![&a])],
            &[],
        );
        assert_eq!(c.differences[0].fact, "load");
        assert_eq!(c.differences[0].values[0].len(), 2);
    }

    #[test]
    fn expect_names_are_checked() {
        assert_eq!(
            parse_expect(&["kernel.release,cpu.microcode".into()]).unwrap(),
            ["kernel.release", "cpu.microcode"]
        );
        let e = parse_expect(&["kernel".into()]).unwrap_err();
        assert!(
            e.starts_with("--expect: `kernel` is no recorded fact (known: host,"),
            "{e}"
        );
        let (a, b) = (fingerprint(), fingerprint());
        let c = check(
            &[("a".into(), vec![&a]), ("b".into(), vec![&b])],
            &["mm.thp".into()],
        );
        assert_eq!(c.expected_but_same, ["mm.thp"]);
    }
}
