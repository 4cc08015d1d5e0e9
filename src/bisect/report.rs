//! `kbench report` of a bisection's campaign: each step's revision
//! against the two ends measured in the same step, as the step decided
//! and stored it with its run.
//!
//! The campaign's samples would also make a table by commit, but each end
//! is measured again in every step, under whatever load that step met:
//! pooling an end over all steps compares a revision with samples taken
//! at other times (a culprit once read 27% *faster* than the good end).
//! So the report of a bisection is its steps, never pooled ends; the
//! samples themselves stay available (`--format csv`, or an explicit
//! `--table`).
//!
//! A whole bisection stores its result (`bisect.result`); a campaign of
//! `git bisect run ... --exit-code` steps has only the ends' check and
//! each step's call, and the first bad commit is then read from them as
//! `git bisect` concludes it (the revision after the last good one, when
//! it is the first bad one).

use super::decide::as_change;
use super::{About, Bisection, Call, ENDS, RESULT, Rev, STEP, Step, StepVerdict};
use crate::record::Direction;
use crate::report::Format;
use crate::report::fmt::html_escape as esc;
use crate::stats::Interval;
use crate::store::{CampaignQuery, Scope, StoreRead};

/// The bisection stored in campaign `id`, or `None` when it is not a
/// bisection's campaign.
pub fn load(st: &dyn StoreRead, id: i64) -> anyhow::Result<Option<Bisection>> {
    let verdicts = st.verdicts(Scope::Campaign(id))?;
    let corrupt = |kind: &str, e: serde_json::Error| {
        anyhow::anyhow!("campaign {id}: corrupt stored verdict `{kind}`: {e}")
    };
    if let Some(v) = verdicts.iter().rev().find(|v| v.kind == RESULT) {
        let b: Bisection =
            serde_json::from_value(v.body.clone()).map_err(|e| corrupt(RESULT, e))?;
        return Ok(Some(b));
    }
    let mut ends: Option<StepVerdict> = None;
    let mut steps: Vec<StepVerdict> = Vec::new();
    for v in &verdicts {
        let parse = || serde_json::from_value::<StepVerdict>(v.body.clone());
        match v.kind.as_str() {
            ENDS => ends = Some(parse().map_err(|e| corrupt(ENDS, e))?),
            STEP => steps.push(parse().map_err(|e| corrupt(STEP, e))?),
            _ => {}
        }
    }
    let Some(about) = ends.as_ref().or(steps.first()).map(|v| v.about.clone()) else {
        return Ok(None);
    };
    let name = st
        .campaigns(CampaignQuery::Id(id))?
        .pop()
        .map(|c| c.name)
        .unwrap_or_default();
    Ok(Some(derived(about, ends.map(|v| v.step), steps, name)))
}

/// A bisection read from its steps' calls (`--exit-code` steps).
fn derived(
    about: About,
    ends: Option<Step>,
    steps: Vec<StepVerdict>,
    campaign: String,
) -> Bisection {
    let n = about.path_len;
    let mut all: Vec<Step> = ends.into_iter().collect();
    all.extend(steps.into_iter().map(|v| v.step));
    let lo = all
        .iter()
        .filter(|s| s.call == Some(Call::LikeGood))
        .map(|s| s.rev.position)
        .max()
        .unwrap_or(0);
    let hi = all
        .iter()
        .filter(|s| s.call == Some(Call::LikeBad) && s.rev.position > lo)
        .map(|s| s.rev.position)
        .min()
        .unwrap_or(n);
    let bad_at = |p: usize| {
        all.iter()
            .find(|s| s.rev.position == p)
            .map(|s| s.rev.clone())
    };
    let (first_bad, candidates): (Option<Rev>, Vec<Rev>) = if hi == lo + 1 {
        (
            bad_at(hi).or_else(|| (hi == n).then(|| about.bad.clone())),
            Vec::new(),
        )
    } else {
        // Only the positions measured are known here by name.
        (None, (lo + 1..=hi).filter_map(bad_at).collect())
    };
    let samples = all
        .iter()
        .map(|s| s.samples.iter().sum::<usize>() as u64)
        .sum();
    Bisection {
        about,
        steps: all,
        first_bad,
        candidates,
        effect: None,
        samples,
        builds_run: 0,
        builds_cached: 0,
        campaign,
        note: Some(
            "each step was decided alone (`kbench bisect --exit-code`); the first bad\n\
             commit above is read from the calls as `git bisect` concludes"
                .into(),
        ),
    }
}

/// The report in `format`; `None` for the formats that list samples
/// (`csv`, will-it-scale's CSV), which the caller makes as for any run.
pub fn render(b: &Bisection, format: Format) -> anyhow::Result<Option<String>> {
    Ok(match format {
        Format::Text => Some(super::text::render(b)),
        Format::Json => Some(format!(
            "{:#}\n",
            crate::report::render::document("bisect", serde_json::to_value(b)?)
        )),
        Format::Markdown => Some(markdown(b)),
        Format::Html => Some(html(b)),
        Format::Csv | Format::WisCsv => None,
    })
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", x * 100.0)
}

/// A step's cells: rounds, vs good, vs bad, call.
fn cells(s: &Step, direction: Direction) -> [String; 4] {
    let change = |x: f64, lo: f64, hi: f64| {
        let (x, iv) = as_change(x, Interval { lo, hi }, direction);
        format!("{} [{}, {}]", pct(x), pct(iv.lo), pct(iv.hi))
    };
    let call = match s.call {
        Some(Call::LikeGood) => "like good",
        Some(Call::LikeBad) => "like bad",
        Some(Call::Undecided) => "undecided (skip)",
        None => "skip",
    };
    match &s.look {
        Some(l) => [
            l.n.to_string(),
            change(l.regression, l.interval.lo, l.interval.hi),
            l.vs_bad
                .map(|c| change(c.regression, c.interval.lo, c.interval.hi))
                .unwrap_or_else(|| "-".into()),
            call.into(),
        ],
        None => ["0".into(), "-".into(), "-".into(), call.into()],
    }
}

fn heading(b: &Bisection) -> String {
    format!(
        "kbench bisect: {} revision(s) from {} (good) to {} (bad)",
        b.about.path_len, b.about.good.label, b.about.bad.label
    )
}

fn conclusion(b: &Bisection) -> String {
    match &b.first_bad {
        Some(r) => format!("first bad commit: {} {}", r.commit.id, r.commit.subject),
        None => format!(
            "first bad commit: not narrowed to one; one of {}",
            b.candidates
                .iter()
                .map(|r| r.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn markdown(b: &Bisection) -> String {
    let md = |s: &str| s.replace('|', "\\|");
    let mut o = format!("## {}\n\n", heading(b));
    o += &format!(
        "`--bench {}`, metric {} ({}, {}); a revision is bad when {} \
         than the good end by more than {}. Each step compares the revision with \
         both ends measured in the same rounds, paired by round.\n\n",
        md(&b.about.bench),
        md(&b.about.metric),
        md(&b.about.unit),
        b.about.direction,
        super::text::worse_words(&b.about.metric, &b.about.unit, b.about.direction),
        pct(b.about.threshold).trim_start_matches('+')
    );
    o += "| revision | subject | rounds | vs good | vs bad | call |\n";
    o += "|---|---|--:|--:|--:|---|\n";
    for s in &b.steps {
        let [n, g, v, c] = cells(s, b.about.direction);
        o += &format!(
            "| {} | {} | {n} | {g} | {v} | {c} |\n",
            s.rev.label,
            md(&s.rev.commit.subject)
        );
    }
    o += &format!("\n**{}**\n", md(&conclusion(b)));
    if let Some(note) = &b.note {
        o += &format!("\n{}\n", note.replace('\n', " "));
    }
    o
}

/// Each step's change from the good end as an interval on one axis,
/// with the threshold: where the calls came from, at a glance.
fn chart(b: &Bisection) -> String {
    let d = b.about.direction;
    let looks: Vec<(&Step, (f64, Interval))> = b
        .steps
        .iter()
        .filter_map(|s| {
            s.look
                .as_ref()
                .map(|l| (s, as_change(l.regression, l.interval, d)))
        })
        .collect();
    let threshold = as_change(b.about.threshold, Interval { lo: 0.0, hi: 0.0 }, d).0;
    let (mut lo, mut hi) = (threshold.min(0.0), threshold.max(0.0));
    for (_, (_, iv)) in &looks {
        lo = lo.min(iv.lo);
        hi = hi.max(iv.hi);
    }
    let pad = (hi - lo).max(0.01) * 0.05;
    let (lo, hi) = (lo - pad, hi + pad);
    let (w, left, row) = (640.0, 110.0, 22.0);
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - 10.0);
    let h = row * looks.len() as f64 + 30.0;
    let mut o = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" role=\"img\">\
         <title>change from the good end per step</title>"
    );
    for (v, label, dash) in [(0.0, "0", ""), (threshold, "threshold", "4 3")] {
        o += &format!(
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"0\" y2=\"{1:.1}\" stroke=\"#888\" stroke-dasharray=\"{dash}\"/>\
             <text x=\"{0:.1}\" y=\"{2:.1}\" font-size=\"11\" text-anchor=\"middle\">{label}</text>",
            x(v),
            h - 18.0,
            h - 4.0
        );
    }
    for (i, (s, (c, iv))) in looks.iter().enumerate() {
        let y = row * i as f64 + row / 2.0;
        let colour = match s.call {
            Some(Call::LikeBad) => "#e15759",
            Some(Call::LikeGood) => "#59a14f",
            _ => "#888",
        };
        o += &format!(
            "<text x=\"4\" y=\"{:.1}\" font-size=\"12\">{}</text>\
             <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{colour}\" stroke-width=\"3\"/>\
             <circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{colour}\"/>",
            y + 4.0,
            esc(&s.rev.label),
            x(iv.lo),
            x(iv.hi),
            x(*c)
        );
    }
    o + "</svg>"
}

fn html(b: &Bisection) -> String {
    let mut o = format!("<h1>{}</h1>\n", esc(&heading(b)));
    o += &format!(
        "<p class=\"legend\"><code>--bench {}</code>, metric {} ({}, {}); a revision is bad \
         when {} than the good end by more than {}. Each step compares the revision with \
         both ends measured in the same rounds, paired by round.</p>\n",
        esc(&b.about.bench),
        esc(&b.about.metric),
        esc(&b.about.unit),
        b.about.direction,
        super::text::worse_words(&b.about.metric, &b.about.unit, b.about.direction),
        pct(b.about.threshold).trim_start_matches('+')
    );
    o += &chart(b);
    o += "\n<table><tr><th>revision</th><th>subject</th><th>rounds</th>\
          <th>vs good</th><th>vs bad</th><th>call</th></tr>\n";
    for s in &b.steps {
        let [n, g, v, c] = cells(s, b.about.direction);
        o += &format!(
            "<tr><td>{}</td><td>{}</td><td>{n}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
            esc(&s.rev.label),
            esc(&s.rev.commit.subject),
            esc(&g),
            esc(&v),
            esc(&c)
        );
    }
    o += "</table>\n";
    o += &format!("<p><strong>{}</strong></p>\n", esc(&conclusion(b)));
    if let Some(note) = &b.note {
        o += &format!("<p class=\"legend\">{}</p>\n", esc(note));
    }
    crate::report::fmt::page(&heading(b), &o)
}
