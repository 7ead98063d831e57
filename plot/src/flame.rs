//! Flame graphs: a [`FrameTree`]'s folded stacks drawn by inferno.

use anyhow::{bail, Context, Result};
use trawl_query::flame::FrameTree;

/// Draws `tree` as an SVG flame graph titled `title`, counting
/// `count_name` (e.g. `samples`, `period`). Returns the SVG and the number
/// of frames wide enough to draw.
pub fn flame_svg(tree: &FrameTree, title: &str, count_name: &str) -> Result<(Vec<u8>, usize)> {
    if tree.total() <= 0 {
        bail!("no samples with stacks to draw");
    }
    // inferno draws no frame narrower than its min_width, 0.01 % of the
    // total: frames under 1/23,600 (less than half that) are folded into
    // their parents before drawing (the picture is the same). Levels whose
    // frames weigh under 0.5 % of the total together (a 6-pixel sliver) are
    // one `[deeper frames]` frame: one broken unwind of a hundred frames
    // would otherwise make the picture mostly empty space.
    let lines: Vec<String> = tree
        .folded_within(tree.total() / 23_600, tree.depth_holding(0.005))
        .iter()
        .map(|(st, w)| format!("{st} {w}"))
        .collect();
    let mut o = inferno::flamegraph::Options::default();
    // The lines come sorted.
    o.no_sort = true;
    o.title = title.to_string();
    o.count_name = count_name.to_string();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut svg)
        .context("drawing the flame graph")?;
    Ok((svg, lines.len()))
}

/// A flame graph's default title: the captures and the event.
pub fn flame_title(s: &trawl_query::Session, event: &str) -> String {
    let caps: Vec<&str> = s.captures().iter().map(|c| c.name.as_str()).collect();
    format!("{} — {event}", caps.join(", "))
}

/// What a flame graph's widths count under `weight`.
pub fn count_name(weight: &trawl_query::sample::Weight) -> String {
    weight.name().unwrap_or_else(|| "samples".into())
}

/// Draws the differential flame graph of `base` → `new` (inferno's
/// differential mode, as Brendan Gregg's difffolded.pl): the shape is the
/// new profile, red where a frame grew, blue where it shrank. `base` is
/// scaled to `new`'s total first (a longer run does not turn everything
/// red). Returns the SVG and the number of stacks drawn.
pub fn diff_flame_svg(
    base: &FrameTree,
    new: &FrameTree,
    title: &str,
    count_name: &str,
) -> Result<(Vec<u8>, usize)> {
    if base.total() <= 0 || new.total() <= 0 {
        bail!("no samples with stacks to draw on one side");
    }
    let (b, n) = (base.folded_text(), new.folded_text());
    let mut lines = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options {
            normalize: true,
            strip_hex: false,
        },
        b.as_bytes(),
        n.as_bytes(),
        &mut lines,
    )
    .context("pairing the two profiles' stacks")?;
    let lines = String::from_utf8(lines).context("differential stacks")?;
    let mut o = inferno::flamegraph::Options::default();
    o.title = title.to_string();
    o.subtitle =
        Some("red: more in the new profile, blue: less (base scaled to the new total)".into());
    o.count_name = count_name.to_string();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, lines.lines(), &mut svg)
        .context("drawing the flame graph")?;
    Ok((svg, lines.lines().count()))
}
