//! Nearest names for a typo: every "unknown X" message (benchmark,
//! parameter, factor, plan key, metric, command) ends with the few names
//! closest to what was typed, never with a list of everything.
//!
//! Closeness is the optimal-string-alignment distance (Levenshtein with
//! adjacent transpositions, so `getppd` -> `getppid` and `lsit` -> `list`
//! are one edit each), from the `strsim` crate clap itself uses. A name is
//! offered when it is within a third of the longer word's length (at
//! least one edit), or when one word starts with the other (`pipe` ->
//! `pipe-bw`, `pipe-lat`). At most [`MAX`] names are offered, nearest
//! first; ties keep the catalogue's order.

/// Most names a message offers.
pub const MAX: usize = 3;

/// Longest list of known names a message spells out in full; longer
/// catalogues (88 benchmarks) are named by where to look instead.
pub const MAX_LISTED: usize = 12;

/// The names of `known` nearest to `word`, nearest first, at most [`MAX`].
pub fn nearest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let w = word.to_lowercase();
    let mut scored: Vec<(usize, usize, &str)> = Vec::new();
    for (i, k) in known.into_iter().enumerate() {
        if k == word || scored.iter().any(|(_, _, s)| *s == k) {
            continue;
        }
        let kl = k.to_lowercase();
        let d = strsim::osa_distance(&w, &kl);
        let longest = w.chars().count().max(kl.chars().count());
        let close = d <= (longest / 3).max(1);
        // A word that is the start of a name (or the other way round),
        // e.g. `pipe` for `pipe-bw`, ranks after every true near-miss.
        let prefix = w.len() >= 3 && (kl.starts_with(&w) || w.starts_with(&kl));
        if close {
            scored.push((d, i, k));
        } else if prefix {
            scored.push((longest, i, k));
        }
    }
    scored.sort_by_key(|&(d, i, _)| (d, i));
    scored.into_iter().take(MAX).map(|(_, _, k)| k).collect()
}

/// `did you mean `a`?` or `did you mean `a`, `b` or `c`?`; empty when no
/// name is near.
pub fn did_you_mean(names: &[&str]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match q.as_slice() {
        [] => String::new(),
        [one] => format!("did you mean {one}?"),
        [init @ .., last] => format!("did you mean {} or {last}?", init.join(", ")),
    }
}

/// The tail of an "unknown X `word`" message: the nearest names, then
/// the whole list when it is short, else `more` (where to look, e.g.
/// "see `kbench list`"). Starts with "; " or " (", ready to append.
pub fn hint(word: &str, known: &[&str], more: &str) -> String {
    let near = did_you_mean(&nearest(word, known.iter().copied()));
    let rest = if known.is_empty() {
        "none are defined".to_string()
    } else if known.len() <= MAX_LISTED {
        format!("known: {}", known.join(", "))
    } else {
        more.to_string()
    };
    match (near.is_empty(), rest.is_empty()) {
        (true, true) => String::new(),
        (true, false) => format!(" ({rest})"),
        (false, true) => format!("; {near}"),
        (false, false) => format!("; {near} ({rest})"),
    }
}

/// clap's own suggestion for a usage error ("a similar argument exists:
/// '--samples'") as "; did you mean `--samples`?", empty when it has none.
/// clap finds it; kbench only keeps it on its one error line.
pub fn clap_tip(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let mut names: Vec<String> = Vec::new();
    for kind in [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedValue,
    ] {
        match e.get(kind) {
            Some(ContextValue::String(s)) => names.push(s.clone()),
            Some(ContextValue::Strings(v)) => names.extend(v.iter().cloned()),
            _ => {}
        }
    }
    names.truncate(MAX);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    match did_you_mean(&names) {
        s if s.is_empty() => s,
        s => format!("; {s}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BENCHES: &[&str] = &[
        "getppid", "getpid", "getuid", "pipe-bw", "pipe-lat", "pipeflex", "read", "stat",
    ];

    #[test]
    fn one_edit_and_transpositions_are_near() {
        assert_eq!(nearest("getppd", BENCHES.iter().copied())[0], "getppid");
        assert_eq!(nearest("lsit", ["list", "runs", "run"]), ["list"]);
        assert_eq!(nearest("--sample", ["--samples", "--seed"]), ["--samples"]);
    }

    #[test]
    fn a_prefix_offers_the_family_after_near_misses() {
        assert_eq!(
            nearest("pipe", BENCHES.iter().copied()),
            ["pipe-bw", "pipe-lat", "pipeflex"]
        );
    }

    #[test]
    fn nothing_near_offers_nothing() {
        assert!(nearest("zzzzzz", BENCHES.iter().copied()).is_empty());
        assert_eq!(did_you_mean(&[]), "");
    }

    #[test]
    fn clap_suggestions_are_kept() {
        use clap::CommandFactory;
        let tip = |args: &[&str]| {
            let e = crate::cli::Cli::command()
                .try_get_matches_from(args)
                .unwrap_err();
            clap_tip(&e)
        };
        assert_eq!(
            tip(&["kbench", "run", "--sample", "3"]),
            "; did you mean `--samples`?"
        );
        assert_eq!(tip(&["kbench", "lsit"]), "; did you mean `list`?");
        assert_eq!(tip(&["kbench", "run", "--zzzzzz"]), "");
    }

    #[test]
    fn hints_read_as_one_clause() {
        assert_eq!(did_you_mean(&["a"]), "did you mean `a`?");
        assert_eq!(
            did_you_mean(&["a", "b", "c"]),
            "did you mean `a`, `b` or `c`?"
        );
        assert_eq!(
            hint("wrok", &["work", "cpu"], "see `kbench list spin`"),
            "; did you mean `work`? (known: work, cpu)"
        );
        let many: Vec<String> = (0..20).map(|i| format!("bench{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(
            hint("bench1x", &many, "see `kbench list`"),
            "; did you mean `bench1`, `bench10` or `bench11`? (see `kbench list`)"
        );
        assert_eq!(hint("x", &[], ""), " (none are defined)");
    }
}
