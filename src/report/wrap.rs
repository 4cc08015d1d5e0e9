//! Plain text within 80 columns: long sentences (descriptions, warnings,
//! the run's settings) wrapped at word boundaries with a hanging indent,
//! and one-line summaries cut at a word with `...`.

/// Width of every text report line.
pub const WIDTH: usize = 80;

/// `text` as lines of at most `width` characters: the first starts with
/// `first`, the others with `rest`; each line ends with `\n`. A word
/// longer than a line is kept whole on its own line.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut len = first.chars().count();
    let mut empty = true;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if !empty && len + 1 + w > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            len = rest.chars().count();
            empty = true;
        }
        if !empty {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += w;
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// `text` on one line of at most `width` characters: cut at the last
/// word that fits, followed by `...`.
pub fn clip(text: &str, width: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() <= width {
        return text;
    }
    let room = width.saturating_sub(3);
    let cut: String = text.chars().take(room).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > room / 2 => &cut[..i],
        _ => &cut[..],
    };
    format!("{}...", cut.trim_end_matches([',', ';', ':', ' ']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_stay_within_the_width_with_a_hanging_indent() {
        let t = "running under a hypervisor (KVMKVMKVM): steal time and vCPU wake-ups add noise (remedy: measure on bare metal, or pin vCPUs on the host and compare only runs on the same VM)";
        let w = wrap(t, 80, "  - ", "    ");
        for l in w.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        assert!(w.starts_with("  - running under"));
        assert!(
            w.lines()
                .skip(1)
                .all(|l| l.starts_with("    ") && !l.starts_with("     "))
        );
        assert_eq!(
            w.split_whitespace().collect::<Vec<_>>().join(" "),
            format!("- {t}")
        );
        assert_eq!(wrap("", 80, "x", "y"), "x\n");
    }

    #[test]
    fn a_word_longer_than_a_line_stays_whole() {
        let w = wrap(&"a".repeat(90), 80, "", "");
        assert_eq!(w, format!("{}\n", "a".repeat(90)));
    }

    #[test]
    fn clip_cuts_at_a_word() {
        assert_eq!(clip("short", 20), "short");
        assert_eq!(
            clip("getppid(2) through libc: a full kernel entry", 30),
            "getppid(2) through libc: a..."
        );
        assert!(clip(&"x".repeat(50), 20).chars().count() <= 20);
    }
}
