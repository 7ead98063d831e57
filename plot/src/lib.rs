//! # trawl-plot
//!
//! trawl's figures, drawn into bytes (the caller writes or displays them):
//! stacked shares per window (`report timeline --plot`, Morita et al., H/W
//! resource exhaustion analysis, Fig. 10) and metric panels with
//! thresholds and shaded exhaustion ranges (`report exhaustion --plot`,
//! Fig. 2) through plotters as PNG or SVG; energy histograms (Ono et al.
//! 2015, sampling-based power measurement, Fig. 6, 8); memory heatmaps as
//! PNG (Mibu et al., memory access analysis for memory saving); flame
//! graphs as SVG through inferno ([`flame_svg`]); the timeline figure from
//! `timeline(...)`'s rows ([`timeline`]).

use std::path::Path;
use std::sync::Once;

use anyhow::{anyhow, bail, Context, Result};

mod flame;
mod heatmap;
mod power;
mod timeline;
pub use flame::{count_name, diff_flame_svg, flame_svg, flame_title};
pub use heatmap::{heatmap_figure, heatmap_image, heatmap_of, HeatFigure};
use plotters::coord::Shift;
use plotters::prelude::*;
pub use power::{energy_per_sample, power_data};
pub use timeline::{
    rule_bands, timeline, timeline_figure, timeline_plot, timeline_rows, timeline_title,
    TimelineAsk, TimelineFigure, TimelineRows,
};

/// A time range to shade, in seconds.
pub type Band = (f64, f64);

/// One metric panel: the compared expression, its threshold and one step
/// line per capture: (name, [(start_s, end_s, value)]).
pub struct Panel {
    pub label: String,
    pub threshold: Option<f64>,
    pub lines: Vec<(String, Vec<(f64, f64, f64)>)>,
}

/// Shares per window: window starts (s), the window width (s), keys (top
/// first) and each key's share (%) per window.
pub struct Shares {
    pub windows: Vec<f64>,
    pub width: f64,
    pub keys: Vec<String>,
    pub pct: Vec<Vec<f64>>,
}

static FONT: Once = Once::new();
static mut FONT_ERR: Option<String> = None;

/// Registers a TrueType font for plot text: `$TRAWL_FONT`, DejaVu Sans, or
/// the first `.ttf` under /usr/share/fonts.
fn font() -> Result<()> {
    FONT.call_once(|| {
        let mut cands: Vec<std::path::PathBuf> = Vec::new();
        if let Some(p) = std::env::var_os("TRAWL_FONT") {
            cands.push(p.into());
        }
        cands.push("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf".into());
        fn walk(d: &Path, out: &mut Vec<std::path::PathBuf>, depth: u32) {
            let Ok(rd) = std::fs::read_dir(d) else { return };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() && depth < 4 {
                    walk(&p, out, depth + 1);
                } else if p.extension().is_some_and(|x| x == "ttf") {
                    out.push(p);
                }
            }
        }
        walk(Path::new("/usr/share/fonts"), &mut cands, 0);
        for c in cands {
            if let Ok(bytes) = std::fs::read(&c) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return;
                }
            }
        }
        // SAFETY: written once, inside call_once, before any read.
        unsafe {
            FONT_ERR = Some(
                "no TrueType font found for the plot's text: install one (apt-get install fonts-dejavu-core) or set TRAWL_FONT=/path/to/font.ttf".into(),
            )
        };
    });
    // SAFETY: only written inside call_once, which has completed.
    #[allow(static_mut_refs)]
    if let Some(e) = unsafe { FONT_ERR.clone() } {
        bail!(e);
    }
    Ok(())
}

fn colour(i: usize) -> RGBColor {
    // Tableau 10, then grey for the rest ("[other]").
    const C: [(u8, u8, u8); 10] = [
        (78, 121, 167),
        (242, 142, 43),
        (225, 87, 89),
        (118, 183, 178),
        (89, 161, 79),
        (237, 201, 72),
        (176, 122, 161),
        (255, 157, 167),
        (156, 117, 95),
        (186, 176, 172),
    ];
    let (r, g, b) = C[i % C.len()];
    RGBColor(r, g, b)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing the plot: {e:?}")
}

/// The encoding of a figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    Png,
    Svg,
}

impl Image {
    /// The format a file name asks for by its extension (`.png`, `.svg`).
    pub fn of_path(path: &Path) -> Result<Image> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("png") => Ok(Image::Png),
            Some("svg") => Ok(Image::Svg),
            _ => bail!("{}: the plot file must end in .png or .svg", path.display()),
        }
    }

    /// The format named `png` or `svg`.
    pub fn named(name: &str) -> Result<Image> {
        match name {
            "png" => Ok(Image::Png),
            "svg" => Ok(Image::Svg),
            f => bail!("format {f:?}: png or svg"),
        }
    }

    /// `png` or `svg`.
    pub fn name(self) -> &'static str {
        match self {
            Image::Png => "png",
            Image::Svg => "svg",
        }
    }
}

/// Draws `draw` onto a `w`×`h` white canvas and encodes it.
fn render(
    image: Image,
    w: u32,
    h: u32,
    draw: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<()>,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> Result<()>,
) -> Result<Vec<u8>> {
    font()?;
    match image {
        Image::Png => {
            let mut rgb = vec![0u8; w as usize * h as usize * 3];
            {
                let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(err)?;
                draw(&root)?;
                root.present().map_err(err)?;
            }
            let img = image::RgbImage::from_raw(w, h, rgb).context("plot buffer size")?;
            png(&img)
        }
        Image::Svg => {
            let mut svg = String::new();
            {
                let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
                root.fill(&WHITE).map_err(err)?;
                draw_svg(&root)?;
                root.present().map_err(err)?;
            }
            Ok(svg.into_bytes())
        }
    }
}

fn png(img: &image::RgbImage) -> Result<Vec<u8>> {
    let mut buf = std::io::Cursor::new(Vec::new());
    img.write_to(&mut buf, image::ImageOutputFormat::Png)
        .map_err(|e| anyhow!("encoding PNG: {e}"))?;
    Ok(buf.into_inner())
}

/// Stacked shares per window (Morita et al., H/W resource exhaustion
/// analysis, Fig. 10).
pub fn shares(image: Image, title: &str, s: &Shares, bands: &[Band]) -> Result<Vec<u8>> {
    render(
        image,
        1200,
        600,
        |a| draw_shares(a, title, s, bands),
        |a| draw_shares(a, title, s, bands),
    )
}

fn draw_shares<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    s: &Shares,
    bands: &[Band],
) -> Result<()> {
    let x0 = s.windows.first().copied().unwrap_or(0.0);
    let x1 = s.windows.last().copied().unwrap_or(1.0) + s.width;
    // The legend beside the plot, not over it: the stack fills the area.
    let (w, _) = root.dim_in_pixel();
    let (root, side) = root.split_horizontally(w.saturating_sub(LEGEND_WIDTH));
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x0..x1, 0.0..100.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time since t0 (s)")
        .y_desc("share of samples (%)")
        .label_style(("sans-serif", 14))
        .light_line_style(TRANSPARENT)
        .draw()
        .map_err(err)?;
    for &(a, b) in bands {
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(a, 0.0), (b, 100.0)],
                BAND.filled(),
            )))
            .map_err(err)?;
    }
    let mut lower = vec![0.0; s.windows.len()];
    let mut legend: Vec<(String, RGBAColor)> = Vec::new();
    for (k, key) in s.keys.iter().enumerate() {
        let upper: Vec<f64> = lower.iter().zip(&s.pct[k]).map(|(l, p)| l + p).collect();
        let mut pts: Vec<(f64, f64)> = Vec::new();
        for (i, w) in s.windows.iter().enumerate() {
            pts.push((*w, upper[i]));
            pts.push((*w + s.width, upper[i]));
        }
        for (i, w) in s.windows.iter().enumerate().rev() {
            pts.push((*w + s.width, lower[i]));
            pts.push((*w, lower[i]));
        }
        let c = if key == "[other]" {
            RGBColor(200, 200, 200)
        } else {
            colour(k)
        };
        chart
            .draw_series(std::iter::once(Polygon::new(pts, c.filled())))
            .map_err(err)?;
        legend.push((key.clone(), c.to_rgba()));
        lower = upper;
    }
    // Top of the stack first, as the eye reads the picture; then the rule.
    legend.reverse();
    if !bands.is_empty() {
        legend.push(("the rule holds".into(), BAND.to_rgba()));
    }
    side_legend(&side, &legend)
}

/// Width of the legend beside a plot, in pixels.
const LEGEND_WIDTH: u32 = 250;

/// The shading of the ranges where a rule holds.
const BAND: RGBAColor = RGBAColor(255, 0, 0, 0.12);

/// A legend in its own area: a swatch and a label per entry, top down
/// (labels longer than the area are cut with `…`).
fn side_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(String, RGBAColor)],
) -> Result<()> {
    let font = ("sans-serif", 13).into_font();
    let (w, h) = area.dim_in_pixel();
    let max_chars = ((w as usize).saturating_sub(40) / 7).max(4);
    for (i, (label, c)) in entries.iter().enumerate() {
        let y = 50 + 20 * i as i32;
        if y + 10 > h as i32 {
            break;
        }
        area.draw(&Rectangle::new([(6, y - 6), (18, y + 6)], c.filled()))
            .map_err(err)?;
        area.draw(&Rectangle::new([(6, y - 6), (18, y + 6)], BLACK.mix(0.4)))
            .map_err(err)?;
        let text: String = if label.chars().count() > max_chars {
            label
                .chars()
                .take(max_chars - 1)
                .chain(std::iter::once('…'))
                .collect()
        } else {
            label.clone()
        };
        area.draw(&Text::new(text, (24, y - 7), font.clone()))
            .map_err(err)?;
    }
    Ok(())
}

/// Metric panels with thresholds and shaded ranges (Morita et al., H/W
/// resource exhaustion analysis, Fig. 2).
pub fn metrics(image: Image, title: &str, panels: &[Panel], bands: &[Band]) -> Result<Vec<u8>> {
    let h = 120 + 260 * panels.len() as u32;
    render(
        image,
        1200,
        h,
        |a| draw_metrics(a, title, panels, bands),
        |a| draw_metrics(a, title, panels, bands),
    )
}

fn draw_metrics<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
    bands: &[Band],
) -> Result<()> {
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    let all = panels
        .iter()
        .flat_map(|p| p.lines.iter().flat_map(|l| l.1.iter()));
    let x0 = all.clone().map(|v| v.0).fold(f64::INFINITY, f64::min);
    let x1 = all.map(|v| v.1).fold(f64::NEG_INFINITY, f64::max);
    if !x0.is_finite() || !x1.is_finite() {
        bail!("no metric values to plot");
    }
    for (p, area) in panels.iter().zip(areas.iter()) {
        let vals = p.lines.iter().flat_map(|l| l.1.iter().map(|v| v.2));
        let mut lo = vals.clone().fold(f64::INFINITY, f64::min);
        let mut hi = vals.fold(f64::NEG_INFINITY, f64::max);
        if let Some(t) = p.threshold {
            lo = lo.min(t);
            hi = hi.max(t);
        }
        lo = lo.min(0.0);
        if !(hi > lo) {
            hi = lo + 1.0;
        }
        hi += (hi - lo) * 0.08;
        let mut chart = ChartBuilder::on(area)
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(80)
            .caption(&p.label, ("sans-serif", 16))
            .build_cartesian_2d(x0..x1, lo..hi)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time since t0 (s)")
            .label_style(("sans-serif", 13))
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        for &(a, b) in bands {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(a, lo), (b, hi)],
                    BAND.filled(),
                )))
                .map_err(err)?;
        }
        if !bands.is_empty() {
            // A legend entry for the shading (no shape of its own).
            chart
                .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                .map_err(err)?
                .label("the rule holds")
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], BAND.filled()));
        }
        for (i, (name, steps)) in p.lines.iter().enumerate() {
            let c = colour(i);
            let mut pts = Vec::new();
            for &(a, b, v) in steps {
                pts.push((a, v));
                pts.push((b, v));
            }
            chart
                .draw_series(LineSeries::new(pts, c.stroke_width(2)))
                .map_err(err)?
                .label(name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                });
        }
        if let Some(t) = p.threshold {
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(x0, t), (x1, t)],
                    8,
                    5,
                    RGBColor(200, 0, 0).stroke_width(2),
                ))
                .map_err(err)?
                .label(format!("threshold {t}"))
                .legend(|(x, y)| {
                    PathElement::new(
                        vec![(x, y), (x + 16, y)],
                        RGBColor(200, 0, 0).stroke_width(2),
                    )
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// Mibu et al., memory access analysis for memory saving, Table 1: store
/// only cyan, load only yellow, both white, none black.
pub const HEAT_COLOURS: [[u8; 3]; 4] = [[0, 0, 0], [255, 255, 0], [0, 255, 255], [255, 255, 255]];

/// A heatmap as PNG: one cell per `scale`×`scale` pixels, the lowest
/// address at the top (as Mibu et al. draw address 0 at the top).
pub fn heatmap_png(hm: &trawl_query::memlog::Heatmap, scale: u32) -> Result<Vec<u8>> {
    let (w, h) = (hm.width as u32 * scale, hm.height as u32 * scale);
    if w == 0 || h == 0 {
        bail!("nothing to draw");
    }
    if (w as u64) * (h as u64) > 1 << 30 {
        bail!("{w}×{h} pixels is too large: lower --scale or coarsen the granularity");
    }
    let mut img = image::RgbImage::new(w, h);
    for (y, row) in hm.cells.chunks(hm.width).enumerate() {
        for (x, &c) in row.iter().enumerate() {
            let px = image::Rgb(HEAT_COLOURS[(c & 3) as usize]);
            for dy in 0..scale {
                for dx in 0..scale {
                    img.put_pixel(x as u32 * scale + dx, y as u32 * scale + dy, px);
                }
            }
        }
    }
    png(&img)
}

/// Histograms of values (one panel each, same bins: 50 from 0 to 2 ×
/// target), the target marked, with the share within ±5 % and ±10 % in
/// each title: Fig. 6 and 8 of Ono et al. 2015, sampling-based power
/// measurement.
pub fn histograms(
    image: Image,
    title: &str,
    panels: &[(String, Vec<f64>)],
    target: f64,
) -> Result<Vec<u8>> {
    let h = 260 * panels.len().max(1) as u32 + 40;
    render(
        image,
        900,
        h,
        |root| draw_histograms(root, title, panels, target),
        |root| draw_histograms(root, title, panels, target),
    )
}

fn draw_histograms<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[(String, Vec<f64>)],
    target: f64,
) -> Result<()> {
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    let bins = 50usize;
    let width = 2.0 * target / bins as f64;
    for (i, (name, v)) in panels.iter().enumerate() {
        let mut counts = vec![0u32; bins];
        for x in v {
            let b = (x / width).floor();
            if b >= 0.0 && (b as usize) < bins {
                counts[b as usize] += 1;
            }
        }
        let n = v.len().max(1) as f64;
        let within = |f: f64| {
            100.0
                * v.iter()
                    .filter(|x| (*x - target).abs() <= f * target)
                    .count() as f64
                / n
        };
        let ymax = counts.iter().copied().max().unwrap_or(1).max(1);
        let caption = format!(
            "{name}: {} data, {:.0} % within ±5 %, {:.0} % within ±10 %",
            v.len(),
            within(0.05),
            within(0.10)
        );
        let mut chart = ChartBuilder::on(&areas[i])
            .caption(caption, ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..2.0 * target, 0u32..ymax + ymax / 10 + 1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("joules")
            .y_desc("data")
            .draw()
            .map_err(err)?;
        chart
            .draw_series(counts.iter().enumerate().map(|(b, &c)| {
                let x0 = b as f64 * width;
                Rectangle::new([(x0, 0), (x0 + width * 0.9, c)], colour(i).filled())
            }))
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(target, 0), (target, ymax + ymax / 10 + 1)],
                BLACK.stroke_width(2),
            )))
            .map_err(err)?;
    }
    Ok(())
}

/// Energy per sample over time, one panel per sampled event (Ono et al.
/// 2015, Fig. 5: time-based samples, Fig. 7: each event-based sampling): x the
/// time since the first sample (ms), y the RAPL increase the sample read
/// (J). `panels`: (event, [(t_ms, joules)]).
pub fn energy_over_time(
    image: Image,
    title: &str,
    panels: &[(String, Vec<(f64, f64)>)],
) -> Result<Vec<u8>> {
    let h = 240 * panels.len().max(1) as u32 + 40;
    render(
        image,
        1000,
        h,
        |root| draw_energy_over_time(root, title, panels),
        |root| draw_energy_over_time(root, title, panels),
    )
}

fn draw_energy_over_time<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    panels: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((panels.len().max(1), 1));
    let t1 = panels
        .iter()
        .flat_map(|p| p.1.iter().map(|v| v.0))
        .fold(0.0f64, f64::max)
        .max(1.0);
    for (i, (name, pts)) in panels.iter().enumerate() {
        let ymax = pts.iter().map(|v| v.1).fold(0.0f64, f64::max);
        let ymax = if ymax > 0.0 { ymax * 1.08 } else { 1.0 };
        let mut chart = ChartBuilder::on(&areas[i])
            .caption(format!("{name}: {} samples", pts.len()), ("sans-serif", 15))
            .margin(10)
            .x_label_area_size(30)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..t1, 0.0..ymax)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("time (ms)")
            .y_desc("energy per sample (J)")
            .light_line_style(TRANSPARENT)
            .draw()
            .map_err(err)?;
        let c = colour(i);
        chart
            .draw_series(pts.iter().map(|&(x, y)| Circle::new((x, y), 2, c.filled())))
            .map_err(err)?;
    }
    Ok(())
}
