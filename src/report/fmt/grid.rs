//! A table already turned into strings (by the text or Markdown renderer),
//! and its layout: aligned plain text within a width, split into panels
//! that repeat the row labels when the columns do not fit; or a GitHub
//! Markdown table.

/// Cells as strings: row labels, then the value columns, grouped.
pub struct Grid {
    /// Headers of the row-label columns.
    pub row_head: Vec<String>,
    /// Column groups: (label, number of columns); one group with an empty
    /// label when there are none.
    pub groups: Vec<(String, usize)>,
    /// Headers of the value columns, group-major.
    pub col_head: Vec<String>,
    /// (row labels, values).
    pub rows: Vec<(Vec<String>, Vec<String>)>,
    /// Rows from this index on are summaries (a rule above them).
    pub summary_from: Option<usize>,
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn pad_left(s: &str, w: usize) -> String {
    format!("{}{s}", " ".repeat(w.saturating_sub(width(s))))
}

fn pad_right(s: &str, w: usize) -> String {
    format!("{s}{}", " ".repeat(w.saturating_sub(width(s))))
}

fn center(s: &str, w: usize) -> String {
    let n = w.saturating_sub(width(s));
    format!("{}{s}{}", " ".repeat(n / 2), " ".repeat(n - n / 2))
}

const COL_GAP: usize = 2;
const GROUP_GAP: usize = 4;

/// A grid's column widths and gaps, measured once for all its panels.
struct Layout {
    /// Number of row-label columns.
    nlab: usize,
    /// Width of each row-label column.
    lab_w: Vec<usize>,
    /// Width of each value column.
    col_w: Vec<usize>,
    /// Each value column's group.
    group_of: Vec<usize>,
    /// Whether group labels are drawn above the columns.
    has_groups: bool,
    /// The gap between the labels and the first value column.
    lead_gap: usize,
}

impl Layout {
    /// The gap before column `j` when `prev` is the column drawn before
    /// it in the same panel.
    fn gap(&self, prev: Option<usize>, j: usize) -> usize {
        match prev {
            None if self.nlab == 0 => 0,
            None => self.lead_gap,
            Some(p) if self.group_of[p] != self.group_of[j] => GROUP_GAP,
            Some(_) => COL_GAP,
        }
    }
}

/// One panel of a grid: its columns and their widths (a group's last
/// column widened when the group's label is wider than its columns).
struct Pane<'a> {
    lay: &'a Layout,
    cols: &'a [usize],
    cw: Vec<usize>,
    /// Each group in this panel with its columns.
    spans: Vec<(usize, Vec<usize>)>,
}

impl Pane<'_> {
    /// The row-label cells, padded and joined.
    fn lead(&self, o: &mut String, cells: &[String]) {
        let parts: Vec<String> = (0..self.lay.nlab)
            .map(|i| pad_right(cells.get(i).map_or("", |s| s.as_str()), self.lay.lab_w[i]))
            .collect();
        o.push_str(&parts.join(&" ".repeat(COL_GAP)));
    }

    /// The value cells of this panel's columns, right-aligned.
    fn body(&self, o: &mut String, cells: &dyn Fn(usize) -> String) {
        let mut prev: Option<usize> = None;
        for &j in self.cols {
            o.push_str(&" ".repeat(self.lay.gap(prev, j)));
            o.push_str(&pad_left(&cells(j), self.cw[j]));
            prev = Some(j);
        }
    }

    /// The width of a group's columns with the gaps between them.
    fn span(&self, cols: &[usize]) -> usize {
        cols.iter().map(|j| self.cw[*j]).sum::<usize>() + COL_GAP * cols.len().saturating_sub(1)
    }
}

impl Grid {
    /// Plain text, each line at most `max` columns where the labels allow
    /// (columns that do not fit go to a following panel).
    pub fn text(&self, max: usize, rule: char) -> String {
        let lay = self.layout();
        let mut o = String::new();
        for (pi, cols) in self.panels(&lay, max).iter().enumerate() {
            if pi > 0 {
                o.push('\n');
            }
            let panel = self.panel(&lay, cols);
            if lay.has_groups {
                self.group_heads(&mut o, &panel, rule);
            }
            self.rows_text(&mut o, &panel, max, rule);
        }
        o
    }

    /// Measure every column and where groups part.
    fn layout(&self) -> Layout {
        let nlab = self.row_head.len();
        let lab_w: Vec<usize> = (0..nlab)
            .map(|i| {
                self.rows
                    .iter()
                    .map(|(l, _)| l.get(i).map_or(0, |s| width(s)))
                    .chain([width(&self.row_head[i])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let col_w: Vec<usize> = (0..self.col_head.len())
            .map(|j| {
                self.rows
                    .iter()
                    .map(|(_, v)| v.get(j).map_or(0, |s| width(s)))
                    .chain([width(&self.col_head[j])])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut group_of = Vec::with_capacity(col_w.len());
        for (gi, (_, n)) in self.groups.iter().enumerate() {
            group_of.extend(std::iter::repeat_n(gi, *n));
        }
        // Labels and values part by a wider gap only where groups are drawn.
        let has_groups = self.groups.iter().any(|(l, _)| !l.is_empty());
        Layout {
            nlab,
            lab_w,
            col_w,
            group_of,
            has_groups,
            lead_gap: if has_groups { GROUP_GAP } else { COL_GAP + 1 },
        }
    }

    /// The value columns packed into panels of at most `max` columns,
    /// each panel repeating the row labels.
    fn panels(&self, lay: &Layout, max: usize) -> Vec<Vec<usize>> {
        let labels_w: usize =
            lay.lab_w.iter().sum::<usize>() + COL_GAP * lay.nlab.saturating_sub(1);
        let mut panels: Vec<Vec<usize>> = Vec::new();
        let mut cur: Vec<usize> = Vec::new();
        let mut w = labels_w;
        for j in 0..lay.col_w.len() {
            let need = lay.gap(cur.last().copied(), j) + lay.col_w[j];
            if !cur.is_empty() && w + need > max {
                panels.push(std::mem::take(&mut cur));
                w = labels_w + lay.gap(None, j) + lay.col_w[j];
            } else {
                w += need;
            }
            cur.push(j);
        }
        if !cur.is_empty() || panels.is_empty() {
            panels.push(cur);
        }
        panels
    }

    /// A panel's groups and column widths.
    fn panel<'a>(&self, lay: &'a Layout, cols: &'a [usize]) -> Pane<'a> {
        let mut spans: Vec<(usize, Vec<usize>)> = Vec::new();
        for &j in cols {
            match spans.last_mut() {
                Some((g, v)) if *g == lay.group_of[j] => v.push(j),
                _ => spans.push((lay.group_of[j], vec![j])),
            }
        }
        let mut panel = Pane {
            lay,
            cols,
            cw: lay.col_w.clone(),
            spans,
        };
        // Widen a group's last column when its label is wider.
        for (g, cols) in &panel.spans {
            let lw = width(&self.groups[*g].0);
            let span = panel.span(cols);
            if lw > span {
                let last = *cols.last().expect("non-empty");
                panel.cw[last] += lw - span;
            }
        }
        panel
    }

    /// The two lines over a panel's groups: each label centred over its
    /// columns, then a rule under it.
    fn group_heads(&self, o: &mut String, panel: &Pane<'_>, rule: char) {
        let nlab = panel.lay.nlab;
        for line in 0..2 {
            let mut l = String::new();
            panel.lead(&mut l, &vec![String::new(); nlab]);
            for (i, (g, cols)) in panel.spans.iter().enumerate() {
                if !(i == 0 && nlab == 0) {
                    l.push_str(&" ".repeat(GROUP_GAP));
                }
                let label = &self.groups[*g].0;
                let text = if line == 0 {
                    label.clone()
                } else {
                    rule.to_string().repeat(width(label))
                };
                l.push_str(&center(&text, panel.span(cols)));
            }
            o.push_str(l.trim_end());
            o.push('\n');
        }
    }

    /// A panel's column heads with their rule, then its rows, a rule
    /// above the summary rows.
    fn rows_text(&self, o: &mut String, panel: &Pane<'_>, max: usize, rule: char) {
        let ruled = |h: &str| rule.to_string().repeat(width(h));
        for line in 0..2 {
            let mut l = String::new();
            let heads: Vec<String> = if line == 0 {
                self.row_head.clone()
            } else {
                self.row_head.iter().map(|h| ruled(h)).collect()
            };
            panel.lead(&mut l, &heads);
            panel.body(&mut l, &|j| {
                if line == 0 {
                    self.col_head[j].clone()
                } else {
                    ruled(&self.col_head[j])
                }
            });
            o.push_str(l.trim_end());
            o.push('\n');
        }
        for (ri, (labels, values)) in self.rows.iter().enumerate() {
            if self.summary_from == Some(ri) {
                let mut l = String::new();
                panel.lead(&mut l, &vec![String::new(); panel.lay.nlab]);
                panel.body(&mut l, &|_| String::new());
                o.push_str(&rule.to_string().repeat(width(&l).min(max)));
                o.push('\n');
            }
            let mut l = String::new();
            panel.lead(&mut l, labels);
            panel.body(&mut l, &|j| values.get(j).cloned().unwrap_or_default());
            o.push_str(l.trim_end());
            o.push('\n');
        }
    }

    /// A GitHub Markdown table; `esc` escapes user strings (labels and
    /// headers), values are taken as they are.
    pub fn markdown(&self, esc: &dyn Fn(&str) -> String) -> String {
        let mut heads: Vec<String> = self.row_head.iter().map(|h| esc(h)).collect();
        let mut j = 0;
        for (g, n) in &self.groups {
            for _ in 0..*n {
                let h = esc(&self.col_head[j]);
                heads.push(if g.is_empty() {
                    h
                } else {
                    format!("{}: {h}", esc(g))
                });
                j += 1;
            }
        }
        let mut o = format!("| {} |\n", heads.join(" | "));
        let aligns: Vec<&str> = (0..heads.len())
            .map(|i| {
                if i < self.row_head.len() {
                    ":--"
                } else {
                    "--:"
                }
            })
            .collect();
        o.push_str(&format!("| {} |\n", aligns.join(" | ")));
        for (ri, (labels, values)) in self.rows.iter().enumerate() {
            let mut cells: Vec<String> = labels.iter().map(|l| esc(l)).collect();
            if self.summary_from.is_some_and(|s| ri >= s) {
                cells = cells.into_iter().map(|c| format!("*{c}*")).collect();
            }
            while cells.len() < self.row_head.len() {
                cells.push(String::new());
            }
            cells.extend(values.iter().cloned());
            o.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
        o
    }
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
    use super::clip;

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
