//! Profiles as kbench keeps them: folded stacks (`root;...;leaf` with a
//! sample count) per cell and measured round, cut from the profiler's
//! samples by the cells' timed intervals, stored compressed.
//!
//! Below the runner, the event stream and the stores (like `record.rs`):
//! it knows nothing of either.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::system::profiler::StackSample;

/// Folded stacks: each distinct stack (frames root first, joined by `;`)
/// with its number of samples, sorted by stack.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Folded(pub Vec<(String, u64)>);

impl Folded {
    /// Count stacks into their folded form.
    pub fn from_stacks<'a>(stacks: impl IntoIterator<Item = &'a str>) -> Folded {
        let mut m: BTreeMap<&str, u64> = BTreeMap::new();
        for s in stacks {
            *m.entry(s).or_default() += 1;
        }
        Folded(m.into_iter().map(|(s, n)| (s.to_string(), n)).collect())
    }

    /// Samples in all stacks.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, n)| n).sum()
    }

    /// Add `other`'s counts to these.
    pub fn merge(&mut self, other: &Folded) {
        let mut m: BTreeMap<String, u64> = std::mem::take(&mut self.0).into_iter().collect();
        for (s, n) in &other.0 {
            *m.entry(s.clone()).or_default() += n;
        }
        self.0 = m.into_iter().collect();
    }

    /// The folded text: one `stack count` line per stack.
    pub fn text(&self) -> String {
        let mut t = String::new();
        for (s, n) in &self.0 {
            t.push_str(s);
            t.push(' ');
            t.push_str(&n.to_string());
            t.push('\n');
        }
        t
    }

    /// As stored: the folded text, zlib-compressed.
    pub fn encode(&self) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(self.text().as_bytes())
            .expect("writing to memory");
        z.finish().expect("writing to memory")
    }

    /// Read what [`Folded::encode`] stored.
    pub fn decode(bytes: &[u8]) -> anyhow::Result<Folded> {
        let mut text = String::new();
        flate2::read::ZlibDecoder::new(bytes)
            .read_to_string(&mut text)
            .context("corrupt stored profile")?;
        let mut v = Vec::new();
        for line in text.lines() {
            let (s, n) = line
                .rsplit_once(' ')
                .and_then(|(s, n)| Some((s, n.parse::<u64>().ok()?)))
                .with_context(|| format!("corrupt stored profile line `{line}`"))?;
            v.push((s.to_string(), n));
        }
        Ok(Folded(v))
    }
}

/// A timed interval of one cell in one measured round, on the monotonic
/// clock (nanoseconds, end excluded).
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub cell: String,
    pub round: u32,
    pub start: u64,
    pub end: u64,
}

/// The samples taken inside each span, folded, per (cell, round) in the
/// order of `spans`' first appearance; samples outside every span (set-up,
/// warm-up, kbench between samples) are dropped. `samples` are in time
/// order.
pub fn cut(samples: &[StackSample], spans: &[Span]) -> Vec<(String, u32, Folded)> {
    let mut order: Vec<(String, u32)> = Vec::new();
    let mut by: BTreeMap<(String, u32), Vec<&str>> = BTreeMap::new();
    for sp in spans {
        let key = (sp.cell.clone(), sp.round);
        if !by.contains_key(&key) {
            order.push(key.clone());
        }
        let from = samples.partition_point(|s| s.t_ns < sp.start);
        let to = samples.partition_point(|s| s.t_ns < sp.end);
        by.entry(key)
            .or_default()
            .extend(samples[from..to].iter().map(|s| s.stack.as_str()));
    }
    order
        .into_iter()
        .map(|k| {
            let f = Folded::from_stacks(by.remove(&k).unwrap_or_default());
            (k.0, k.1, f)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t_ns: u64, stack: &str) -> StackSample {
        StackSample {
            t_ns,
            stack: stack.into(),
        }
    }

    #[test]
    fn samples_are_cut_by_span_and_folded() {
        let samples = vec![
            s(5, "main;setup"),
            s(10, "main;f"),
            s(12, "main;f"),
            s(19, "main;g"),
            s(20, "main;h"),
            s(30, "main;f"),
        ];
        let spans = vec![
            Span {
                cell: "b".into(),
                round: 0,
                start: 10,
                end: 20,
            },
            Span {
                cell: "a".into(),
                round: 0,
                start: 25,
                end: 35,
            },
            Span {
                cell: "a".into(),
                round: 1,
                start: 40,
                end: 50,
            },
        ];
        let got = cut(&samples, &spans);
        assert_eq!(got.len(), 3);
        assert_eq!(
            got[0],
            (
                "b".to_string(),
                0,
                Folded(vec![("main;f".into(), 2), ("main;g".into(), 1)])
            )
        );
        assert_eq!(got[1].2, Folded(vec![("main;f".into(), 1)]));
        assert_eq!(got[2].2.total(), 0);
    }

    #[test]
    fn encoding_round_trips_and_corruption_is_named() {
        let f = Folded(vec![("a;b c".into(), 3), ("a;d".into(), 1)]);
        let bytes = f.encode();
        assert_eq!(Folded::decode(&bytes).unwrap(), f);
        let e = Folded::decode(b"not zlib").unwrap_err();
        assert!(format!("{e:#}").contains("corrupt stored profile"), "{e:#}");
        let mut g = f.clone();
        g.merge(&Folded(vec![("a;d".into(), 2), ("z".into(), 1)]));
        assert_eq!(g.total(), 7);
    }
}
