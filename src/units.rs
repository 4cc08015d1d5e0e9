//! Small value types shared by plans, benchmarks and reports: byte sizes with
//! `k`/`m`/`g` suffixes, CPU lists such as `0-1,3`, and percentages.

use std::fmt;

/// Parse a byte size: `4096`, `4k`, `64K`, `1m`, `2g` (binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1u64 << 10,
                'm' => 1 << 20,
                'g' => 1 << 30,
                'b' => 1,
                _ => return Err(format!("`{s}` is not a size (use e.g. 4096, 4k, 1m)")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a size (use e.g. 4096, 4k, 1m)"))?;
    n.checked_mul(mult)
        .ok_or_else(|| format!("size `{s}` is too large"))
}

/// Format a byte size the way a user would write it: `64k`, `1m`, `1000`.
pub fn fmt_size(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "g"), (1 << 20, "m"), (1 << 10, "k")];
    for (m, u) in UNITS {
        if n >= m && n.is_multiple_of(m) {
            return format!("{}{u}", n / m);
        }
    }
    n.to_string()
}

/// Parse a percentage such as `1%` or `0.5%` into a fraction (0.01).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a percentage (use e.g. 1%)"))?;
    if !(v > 0.0 && v < 100.0) {
        return Err(format!(
            "percentage `{s}` must be more than 0% and less than 100%"
        ));
    }
    Ok(v / 100.0)
}

/// Split `k=v,k=v` (the part of `NAME:k=v,...` after the colon) into its
/// assignments. A piece without `=` continues the value before it, so
/// lists need no quoting: `placement=0,1,cpus=0-1,3` is `placement` = `0,1`
/// and `cpus` = `0-1,3`. A key given twice is an error.
pub fn split_assignments(rest: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for piece in rest.split(',').filter(|x| !x.is_empty()) {
        match piece.split_once('=') {
            Some((k, v)) => {
                let k = k.trim();
                if out.iter().any(|(seen, _)| seen == k) {
                    return Err(format!("`{k}` is given twice"));
                }
                out.push((k.to_string(), v.trim().to_string()));
            }
            None => match out.last_mut() {
                Some((_, v)) => {
                    v.push(',');
                    v.push_str(piece.trim());
                }
                None => return Err(format!("expected k=v, found `{piece}`")),
            },
        }
    }
    Ok(out)
}

/// Split an operand, `NAME[:k=v,...]`, into the name and the filters.
pub fn split_operand(spec: &str) -> anyhow::Result<(String, Vec<(String, String)>)> {
    let (name, rest) = match spec.split_once(':') {
        // `campaign:ID` names a campaign by id; filters may follow.
        Some(("campaign", r)) => match r.split_once(':') {
            Some((id, f)) => (format!("campaign:{id}"), f),
            None => (spec.to_string(), ""),
        },
        Some((n, r)) => (n.to_string(), r),
        None => (spec.to_string(), ""),
    };
    let filters = split_assignments(rest)
        .map_err(|e| crate::error::bad_input!("`{spec}`: after `:`, {e}"))?;
    Ok((name, filters))
}

/// A set of CPU numbers, kept sorted and unique.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuSet(pub Vec<usize>);

impl CpuSet {
    /// Parse the kernel's list syntax: `0`, `0-3`, `0,2-3`.
    pub fn parse(s: &str) -> Result<CpuSet, String> {
        let mut cpus = Vec::new();
        let bad = || format!("`{s}` is not a CPU list (use e.g. 0, 0-1, 0,2)");
        for part in s.trim().split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(bad());
            }
            if let Some((a, b)) = part.split_once('-') {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            } else {
                cpus.push(part.parse().map_err(|_| bad())?);
            }
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuSet(cpus))
    }

    /// Check every CPU is online, naming the first one that is not.
    pub fn check_online(&self, online: &CpuSet) -> Result<(), String> {
        match self.0.iter().find(|c| !online.0.contains(c)) {
            Some(c) => Err(format!(
                "CPU {c} in `{self}` is not online (online: {online})"
            )),
            None => Ok(()),
        }
    }
}

impl fmt::Display for CpuSet {
    /// Kernel list syntax with ranges compressed: `0-3,6`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        let v = &self.0;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if j > i {
                write!(f, "{}-{}", v[i], v[j])?;
            } else {
                write!(f, "{}", v[i])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_round_trip() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("4x").is_err());
        assert!(parse_size("").is_err());
        assert_eq!(fmt_size(65536), "64k");
        assert_eq!(fmt_size(6 * 1024), "6k");
        assert_eq!(fmt_size(1000), "1000");
        assert_eq!(fmt_size(128 << 20), "128m");
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(CpuSet::parse("0-1").unwrap().0, vec![0, 1]);
        assert_eq!(CpuSet::parse("3,0-1,1").unwrap().0, vec![0, 1, 3]);
        assert_eq!(CpuSet::parse("0-3,6").unwrap().to_string(), "0-3,6");
        assert!(CpuSet::parse("1-0").is_err());
        assert!(CpuSet::parse("a").is_err());
        let online = CpuSet::parse("0-1").unwrap();
        assert!(
            CpuSet::parse("0-99")
                .unwrap()
                .check_online(&online)
                .is_err()
        );
    }

    #[test]
    fn assignments_and_lists() {
        let kv = |s: &str| split_assignments(s);
        let own = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            kv("placement=0,1,chunk=4k"),
            Ok(own(&[("placement", "0,1"), ("chunk", "4k")]))
        );
        assert_eq!(kv("cpus=0-1,3"), Ok(own(&[("cpus", "0-1,3")])));
        assert_eq!(kv(""), Ok(vec![]));
        assert_eq!(kv("cpu=0,cpu=1"), Err("`cpu` is given twice".into()));
        assert_eq!(kv("0,1"), Err("expected k=v, found `0`".into()));
    }

    #[test]
    fn percentages() {
        assert_eq!(parse_percent("1%"), Ok(0.01));
        assert!(parse_percent("0%").is_err());
        assert!(parse_percent("x").is_err());
    }
}
