//! Typed benchmark parameters: definitions, parsing from plan files and the
//! command line (`getppid:cpu=0`), and the resolved set a cell runs with.

use indexmap::IndexMap;
use serde::Serialize;
use std::fmt;

use super::Bench;
use crate::units::{CpuSet, fmt_size, parse_size};

/// The type of a parameter; parsing and validation follow from it.
#[derive(Clone, Copy, Debug)]
pub enum ParamType {
    /// Integer in `min..=max`.
    Int {
        min: i64,
        max: i64,
    },
    /// Byte count; accepts `4k`, `64k`, `1m`. In `min..=max`.
    Size {
        min: u64,
        max: u64,
    },
    Float {
        min: f64,
        max: f64,
    },
    Bool,
    Str,
    /// One of a fixed set of words.
    Choice(&'static [&'static str]),
    /// One online CPU number.
    Cpu,
    /// Where the parties of a multi-party benchmark run: `same` (all on one
    /// CPU), `cross` (each on its own CPU), `none` (the scheduler decides)
    /// or an explicit list `0,1` (party i on the i-th CPU).
    Placement,
}

impl ParamType {
    /// A short name for `kbench list` and error messages.
    pub fn describe(&self) -> String {
        match self {
            ParamType::Int { min, max } => {
                if *max == i64::MAX {
                    format!("int >= {min}")
                } else {
                    format!("int {min}..{max}")
                }
            }
            ParamType::Size { .. } => "size (e.g. 4k, 1m)".into(),
            ParamType::Float { .. } => "number".into(),
            ParamType::Bool => "bool".into(),
            ParamType::Str => "string".into(),
            ParamType::Choice(c) => c.join("|"),
            ParamType::Cpu => "cpu".into(),
            ParamType::Placement => "same|cross|none|cpu list".into(),
        }
    }

    /// Parse a raw value into a typed one. The error says what was expected
    /// (the caller adds which parameter and where).
    pub fn parse(&self, raw: &toml::Value) -> Result<Value, String> {
        let text = match raw {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            other => {
                return Err(format!(
                    "expected {}, found {}",
                    self.describe(),
                    other.type_str()
                ));
            }
        };
        let expected = || format!("expected {}, found `{text}`", self.describe());
        match *self {
            ParamType::Int { min, max } => {
                let v: i64 = text.trim().parse().map_err(|_| expected())?;
                if v < min || v > max {
                    return Err(format!("{v} is out of range ({})", self.describe()));
                }
                Ok(Value::Int(v))
            }
            ParamType::Size { min, max } => {
                if matches!(raw, toml::Value::Float(_) | toml::Value::Boolean(_)) {
                    return Err(expected());
                }
                let v = parse_size(&text)?;
                if v < min || v > max {
                    return Err(format!(
                        "size `{text}` is out of range ({}..{})",
                        fmt_size(min),
                        fmt_size(max)
                    ));
                }
                Ok(Value::Int(v as i64))
            }
            ParamType::Float { min, max } => {
                let v: f64 = text.trim().parse().map_err(|_| expected())?;
                if !(v >= min && v <= max) {
                    return Err(format!("{v} is out of range ({min}..{max})"));
                }
                Ok(Value::Float(v))
            }
            ParamType::Bool => match text.trim() {
                "true" | "on" | "yes" | "1" => Ok(Value::Bool(true)),
                "false" | "off" | "no" | "0" => Ok(Value::Bool(false)),
                _ => Err(expected()),
            },
            ParamType::Str => Ok(Value::Str(text)),
            ParamType::Choice(words) => {
                if words.contains(&text.as_str()) {
                    Ok(Value::Str(text))
                } else {
                    Err(expected())
                }
            }
            ParamType::Cpu => {
                let v: usize = text.trim().parse().map_err(|_| expected())?;
                CpuSet(vec![v]).check_online(&crate::system::online_cpus())?;
                Ok(Value::Int(v as i64))
            }
            ParamType::Placement => match text.trim() {
                "same" | "cross" | "none" => Ok(Value::Str(text.trim().into())),
                list => {
                    let set = CpuSet::parse(list).map_err(|_| expected())?;
                    set.check_online(&crate::system::online_cpus())?;
                    // Keep the user's order: party i goes to the i-th CPU.
                    Ok(Value::Str(list.replace(' ', "")))
                }
            },
        }
    }

    /// Display a typed value the way a user would write it.
    pub fn display(&self, v: &Value) -> String {
        match (self, v) {
            (ParamType::Size { .. }, Value::Int(n)) => fmt_size(*n as u64),
            _ => v.to_string(),
        }
    }
}

/// A parameter definition.
#[derive(Clone, Debug)]
pub struct ParamDef {
    pub name: &'static str,
    pub ty: ParamType,
    /// Default as the user would write it; `None` = absent unless given
    /// (e.g. `cpu`: unpinned unless a CPU is named).
    pub default: Option<&'static str>,
    pub help: &'static str,
}

/// A typed parameter value.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

/// Turn a command-line word (`64k`, `true`, `0`) into a raw value the same
/// way TOML would type it, so both front ends share one parser.
pub fn raw_from_str(s: &str) -> toml::Value {
    if let Ok(i) = s.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(b) = s.parse::<bool>() {
        toml::Value::Boolean(b)
    } else if let Ok(f) = s.parse::<f64>()
        && f.is_finite()
    {
        toml::Value::Float(f)
    } else {
        toml::Value::String(s.to_string())
    }
}

/// A value as a plan's label or placeholder shows it: a string as
/// written, anything else in TOML's notation (`8`, `true`, `0.5`).
pub fn label_of(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The resolved parameters of a cell, in the benchmark's definition order.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Params(pub IndexMap<String, Value>);

/// "unknown parameter `wrok` for `spin`; did you mean `work`? (known:
/// work, cpu)".
pub fn unknown(bench: &dyn Bench, name: &str) -> String {
    let known: Vec<&str> = bench.params().iter().map(|d| d.name).collect();
    format!(
        "unknown parameter `{name}` for `{}`{}",
        bench.name(),
        crate::suggest::hint(name, &known, &format!("see `kbench list {}`", bench.name()))
    )
}

impl Params {
    /// Defaults overlaid with `given`, each parsed against its definition,
    /// then the benchmark's own cross-checks. The error names the parameter.
    pub fn resolve(bench: &dyn Bench, given: &[(String, toml::Value)]) -> Result<Params, String> {
        let defs = bench.params();
        for (k, _) in given {
            if !defs.iter().any(|d| d.name == k) {
                return Err(unknown(bench, k));
            }
        }
        let mut out = IndexMap::new();
        for d in defs {
            let raw = given
                .iter()
                .rev()
                .find(|(k, _)| k == d.name)
                .map(|(_, v)| v.clone())
                .or_else(|| d.default.map(raw_from_str));
            if let Some(raw) = raw {
                let v = d
                    .ty
                    .parse(&raw)
                    .map_err(|e| format!("parameter `{}` of `{}`: {e}", d.name, bench.name()))?;
                out.insert(d.name.to_string(), v);
            }
        }
        let p = Params(out);
        bench
            .check(&p)
            .map_err(|e| format!("`{}`: {e}", bench.name()))?;
        Ok(p)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// Integer (or size) parameter; panics if absent, which is a bug in the
    /// benchmark's definition (every required parameter has a default).
    pub fn int(&self, name: &str) -> i64 {
        match self.0.get(name) {
            Some(Value::Int(i)) => *i,
            other => panic!("parameter {name} is not an int: {other:?}"),
        }
    }

    pub fn opt_int(&self, name: &str) -> Option<i64> {
        match self.0.get(name) {
            Some(Value::Int(i)) => Some(*i),
            _ => None,
        }
    }

    pub fn float(&self, name: &str) -> f64 {
        match self.0.get(name) {
            Some(Value::Float(f)) => *f,
            Some(Value::Int(i)) => *i as f64,
            other => panic!("parameter {name} is not a number: {other:?}"),
        }
    }

    pub fn bool(&self, name: &str) -> bool {
        match self.0.get(name) {
            Some(Value::Bool(b)) => *b,
            other => panic!("parameter {name} is not a bool: {other:?}"),
        }
    }

    pub fn str(&self, name: &str) -> &str {
        match self.0.get(name) {
            Some(Value::Str(s)) => s,
            other => panic!("parameter {name} is not a string: {other:?}"),
        }
    }

    pub fn opt_str(&self, name: &str) -> Option<&str> {
        match self.0.get(name) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_types() {
        let size = ParamType::Size {
            min: 1,
            max: 1 << 30,
        };
        assert_eq!(size.parse(&raw_from_str("64k")), Ok(Value::Int(65536)));
        assert_eq!(size.parse(&toml::Value::Integer(512)), Ok(Value::Int(512)));
        assert!(size.parse(&raw_from_str("0")).is_err());
        assert!(size.parse(&toml::Value::Boolean(true)).is_err());
        let b = ParamType::Bool;
        assert_eq!(b.parse(&raw_from_str("on")), Ok(Value::Bool(true)));
        assert!(b.parse(&raw_from_str("maybe")).is_err());
        let i = ParamType::Int { min: 1, max: 10 };
        assert!(i.parse(&raw_from_str("11")).is_err());
        assert!(
            i.parse(&raw_from_str("x"))
                .unwrap_err()
                .contains("expected int 1..10")
        );
        assert!(ParamType::Cpu.parse(&raw_from_str("9999")).is_err());
        assert_eq!(ParamType::Cpu.parse(&raw_from_str("0")), Ok(Value::Int(0)));
        let p = ParamType::Placement;
        assert_eq!(
            p.parse(&raw_from_str("same")),
            Ok(Value::Str("same".into()))
        );
        assert!(p.parse(&raw_from_str("elsewhere")).is_err());
        let arr = toml::Value::Array(vec![]);
        assert!(i.parse(&arr).unwrap_err().contains("found array"));
    }
}
