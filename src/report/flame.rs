//! Flame graphs as inline SVG (no script, nothing fetched): one frame per
//! box, the root at the top (an icicle: deep kernel stacks do not push the
//! program's own frames out of view), a box's width its share of the
//! samples.
//! A differential graph draws the contender's stacks and colours each box
//! by how its inclusive share changed from the baseline's (red: more of
//! the samples, blue: fewer, pale: about the same); hovering a box shows
//! its name and both shares (an SVG `<title>`).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::fmt::html_escape as esc;
use crate::profile::Folded;

const WIDTH: f64 = 1000.0;
const ROW: f64 = 16.0;
/// Boxes narrower than this (pixels) are left out.
const MIN_PX: f64 = 0.3;

#[derive(Default)]
struct Node {
    /// Samples of the drawn profile whose stack passes here.
    n: u64,
    /// The same path's samples in the baseline.
    base: u64,
    kids: BTreeMap<String, Node>,
}

impl Node {
    fn add(&mut self, frames: &[&str], n: u64, base: bool) {
        if base {
            self.base += n;
        } else {
            self.n += n;
        }
        if let Some((f, rest)) = frames.split_first() {
            self.kids
                .entry(f.to_string())
                .or_default()
                .add(rest, n, base);
        }
    }

    fn depth(&self) -> usize {
        self.kids.values().map(|k| 1 + k.depth()).max().unwrap_or(0)
    }
}

fn tree(f: &Folded, base: bool, root: &mut Node) {
    for (s, n) in &f.0 {
        let frames: Vec<&str> = s.split(';').collect();
        root.add(&frames, *n, base);
    }
}

/// A warm colour picked by the name (plain graphs).
fn warm(name: &str) -> String {
    let h = name
        .bytes()
        .fold(2166136261u32, |h, b| (h ^ b as u32).wrapping_mul(16777619));
    let kernel = name.ends_with("_[k]");
    let (r, g, b) = if kernel {
        (200 + h % 40, 120 + (h >> 8) % 60, 40 + (h >> 16) % 40)
    } else {
        (205 + h % 50, 80 + (h >> 8) % 110, 40 + (h >> 16) % 40)
    };
    format!("rgb({r},{g},{b})")
}

/// Red for a gain in share, blue for a loss, saturated at 5 points.
fn diverging(delta_points: f64) -> String {
    let t = (delta_points.abs() / 5.0).min(1.0);
    let fade = (235.0 - 175.0 * t) as u32;
    if delta_points >= 0.0 {
        format!("rgb(240,{fade},{fade})")
    } else {
        format!("rgb({fade},{fade},240)")
    }
}

/// The flame graph of `this`, differential against `base` when given.
/// `id` makes the clip paths of several graphs on one page distinct.
pub fn svg(this: &Folded, base: Option<&Folded>, id: &str) -> String {
    scaled_svg(this, base, 1.0, id)
}

/// [`svg`], differential by cost: `scale` is the contender's CPU time per
/// operation over the baseline's, so a frame's colour is the change of
/// its cost per operation in points of the baseline's whole cost (a frame
/// whose work did not change stays white though its share fell).
pub fn scaled_svg(this: &Folded, base: Option<&Folded>, scale: f64, id: &str) -> String {
    let mut root = Node::default();
    tree(this, false, &mut root);
    let base_total = base.map_or(0, |b| b.total());
    if let Some(b) = base {
        tree(b, true, &mut root);
    }
    let depth = root.depth().max(1);
    let h = ROW * depth as f64;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg class=\"flame\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{h}\" \
         viewBox=\"0 0 {WIDTH} {h}\" font-family=\"monospace\" font-size=\"11\">"
    );
    let total = root.n.max(1);
    let ctx = Ctx {
        total,
        base_total,
        diff: base.is_some(),
        scale,
        id,
    };
    let mut x = 0.0;
    for (name, k) in &root.kids {
        x = draw(&mut o, &ctx, name, k, 0, x);
    }
    o.push_str("</svg>\n");
    o
}

struct Ctx<'a> {
    total: u64,
    base_total: u64,
    diff: bool,
    /// The contender's cost per operation over the baseline's (1: by share).
    scale: f64,
    id: &'a str,
}

/// Draw `node` (frame `name` at `depth`) from `x`; the x after it.
fn draw(o: &mut String, c: &Ctx<'_>, name: &str, node: &Node, depth: usize, x: f64) -> f64 {
    let w = WIDTH * node.n as f64 / c.total as f64;
    if node.n == 0 || w < MIN_PX {
        return x + w;
    }
    let y = ROW * depth as f64;
    let share = 100.0 * node.n as f64 / c.total as f64;
    let (fill, title) = if c.diff {
        let was = 100.0 * node.base as f64 / c.base_total.max(1) as f64;
        let d = share * c.scale - was;
        let title = if c.scale == 1.0 {
            format!("{name}\n{share:.2}% of samples (baseline {was:.2}%, {d:+.2} points)")
        } else {
            format!(
                "{name}\n{share:.2}% of samples (baseline {was:.2}%); cost {d:+.2} points of the baseline's"
            )
        };
        (diverging(d), title)
    } else {
        (
            warm(name),
            format!("{name}\n{share:.2}% of samples ({} samples)", node.n),
        )
    };
    let clip = format!("{}-{}-{}", c.id, depth, (x * 10.0) as u64);
    let _ = write!(
        o,
        "<g><title>{}</title><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{:.1}\" \
         fill=\"{fill}\" rx=\"2\"/>",
        esc(&title),
        ROW - 1.0
    );
    // A label where it fits: as many characters as the box holds.
    let chars = ((w - 6.0) / 6.7).floor() as usize;
    if chars >= 3 {
        let n = name.chars().count();
        let label: String = if n <= chars {
            name.to_string()
        } else {
            name.chars().take(chars - 2).chain("..".chars()).collect()
        };
        let _ = write!(
            o,
            "<clipPath id=\"{clip}\"><rect x=\"{x:.2}\" y=\"{y:.1}\" width=\"{w:.2}\" height=\"{ROW}\"/></clipPath>\
             <text x=\"{:.2}\" y=\"{:.1}\" clip-path=\"url(#{clip})\">{}</text>",
            x + 3.0,
            y + ROW - 4.5,
            esc(&label)
        );
    }
    o.push_str("</g>\n");
    let mut cx = x;
    for (k, kid) in &node.kids {
        cx = draw(o, c, k, kid, depth + 1, cx);
    }
    x + w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_follow_samples_and_colour_follows_change() {
        let b = Folded(vec![("main;f".into(), 50), ("main;g".into(), 50)]);
        let a = Folded(vec![("main;f".into(), 75), ("main;g<x>".into(), 25)]);
        let s = svg(&a, Some(&b), "t");
        // main, on top, spans the width; f three quarters of it.
        assert!(s.contains("x=\"0.00\" y=\"0.0\" width=\"1000.00\""), "{s}");
        assert!(s.contains("width=\"750.00\""), "{s}");
        // f gained 25 points: saturated red; g<x> is new (escaped).
        assert!(s.contains("fill=\"rgb(240,60,60)\""), "{s}");
        assert!(s.contains("g&lt;x&gt;"), "{s}");
        assert!(s.contains("75.00% of samples (baseline 50.00%, +25.00 points)"));
        assert!(!s.contains("<script"));
        let plain = svg(&a, None, "p");
        assert!(plain.contains("75.00% of samples (75 samples)"));
    }
}
