//! The main figure of Mibu et al., memory access analysis for memory
//! saving (Fig. 3-4, 8-9, Table 1) as a figure a person reads: the
//! heatmap's cells (x: instruction order, y: address, lowest at the top as
//! in the paper), a title naming the capture, the view and the
//! granularity, ordinals under the x axis, addresses with
//! their mapping and symbol beside the rows where those change, and a
//! legend of the four colours of Table 1. PNG or SVG; a small log is
//! enlarged (several pixels per cell) rather than drawn as a thumbnail.

use anyhow::{bail, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use trawl_query::choice::Choice;
use trawl_query::memlog::{self, Heatmap, View};
use trawl_query::Session;

use crate::{err, render, Image, HEAT_COLOURS};

/// What the figure says about the heatmap.
pub struct HeatFigure<'a> {
    /// The capture's name.
    pub capture: &'a str,
    /// `used` or `full`.
    pub view: &'a str,
    /// What ordinals count: `instruction` or `access` (a data-only log).
    pub axis: &'a str,
    /// Per row: (mapped object, symbol), empty when unknown.
    pub labels: &'a [(String, String)],
    /// Pixels per cell (both ways); None: cells about 900 pixels wide and
    /// 480 tall in all (at most 16 pixels each way, 4000 pixels tall).
    pub scale: Option<u32>,
}

/// Geometry of the drawn figure: where cell (col, row) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    pub width: u32,
    pub height: u32,
    /// Top-left pixel of the plot area.
    pub left: u32,
    pub top: u32,
    /// Pixels per cell, across and down.
    pub scale_x: u32,
    pub scale_y: u32,
}

/// Table 1's names of the four colours, by cell bits (load 1, store 2).
const LEGEND: [&str; 4] = ["none", "load only", "store only", "store & load"];

const TOP: u32 = 44;
const BOTTOM: u32 = 96;
const RIGHT: u32 = 24;
const LABEL_FONT: f64 = 12.0;

fn label_px(s: &str) -> u32 {
    (s.chars().count() as f64 * LABEL_FONT * 0.6) as u32
}

/// The text beside row `r`: its address, then its object's file name and
/// symbol.
fn row_text(hm: &Heatmap, fig: &HeatFigure, r: usize) -> String {
    let (lo, _) = hm.rows[r];
    let (obj, sym) = fig.labels.get(r).cloned().unwrap_or_default();
    let obj = obj.rsplit('/').next().unwrap_or("").to_string();
    match (obj.is_empty(), sym.is_empty()) {
        (true, true) => format!("{lo:#x}"),
        (false, true) => format!("{lo:#x} {obj}"),
        (true, false) => format!("{lo:#x} {sym}"),
        (false, false) => format!("{lo:#x} {obj}: {sym}"),
    }
}

/// Rows that get a label: the first, every row where the object or
/// symbol changes or the addresses jump (used view), at least 14 pixels
/// apart.
fn labelled_rows(hm: &Heatmap, fig: &HeatFigure, scale: u32) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let mut last_px: Option<u32> = None;
    for r in 0..hm.rows.len() {
        let change = r == 0
            || fig.labels.get(r) != fig.labels.get(r - 1)
            || hm.rows[r].0 != hm.rows[r - 1].1;
        let px = r as u32 * scale;
        let room = last_px.is_none_or(|p| px >= p + 14);
        // Without changes (a full view of one region), a label every 80 px.
        let periodic = last_px.is_none_or(|p| px >= p + 80);
        if room && (change || periodic) {
            out.push(r);
            last_px = Some(px);
        }
    }
    out
}

/// Where everything goes.
fn layout(hm: &Heatmap, fig: &HeatFigure) -> Result<Layout> {
    if hm.width == 0 || hm.height == 0 {
        bail!("nothing to draw");
    }
    let (sx, sy) = match fig.scale {
        Some(s) => (s.max(1), s.max(1)),
        None => (
            (900 / hm.width as u32).clamp(1, 16),
            (480 / hm.height as u32)
                .clamp(1, 16)
                .min((4000 / hm.height as u32).max(1)),
        ),
    };
    let labels = labelled_rows(hm, fig, sy);
    let left = labels
        .iter()
        .map(|&r| label_px(&row_text(hm, fig, r)))
        .max()
        .unwrap_or(0)
        .clamp(70, 420)
        + 16;
    let (w, h) = (hm.width as u32 * sx, hm.height as u32 * sy);
    let width = (left + w + RIGHT).max(640);
    let height = TOP + h + BOTTOM;
    if (width as u64) * (height as u64) > 1 << 30 {
        bail!("{width}×{height} pixels is too large: lower --scale or coarsen the granularity");
    }
    Ok(Layout {
        width,
        height,
        left,
        top: TOP,
        scale_x: sx,
        scale_y: sy,
    })
}

/// The figure.
pub fn heatmap_figure(image: Image, hm: &Heatmap, fig: &HeatFigure) -> Result<Vec<u8>> {
    let l = layout(hm, fig)?;
    render(
        image,
        l.width,
        l.height,
        |a| draw(a, hm, fig, l),
        |a| draw(a, hm, fig, l),
    )
}

/// The figure of `hm`, a heatmap of the session's first capture: its name
/// and what its ordinals count read from the capture (the CLI's and the
/// Python package's `heatmap`).
pub async fn heatmap_of(
    s: &Session,
    image: Image,
    hm: &Heatmap,
    view: View,
    labels: &[(String, String)],
    scale: Option<u32>,
) -> Result<Vec<u8>> {
    let axis = memlog::x_axis(s, hm.source_id).await?;
    let name = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let fig = HeatFigure {
        capture: &name,
        view: view.name(),
        axis: &axis,
        labels,
        scale,
    };
    heatmap_figure(image, hm, &fig)
}

/// A memory log's heatmap as both fronts draw it (`trawl render heatmap`,
/// the Python package's `heatmap`): the figure, or with `bare` the cells
/// alone (PNG, `scale` pixels per cell, default 1); with the heatmap and
/// each row's object and symbol.
pub async fn heatmap_image(
    s: &Session,
    o: &memlog::HeatOpts,
    image: Image,
    bare: bool,
    scale: Option<u32>,
) -> Result<(Vec<u8>, Heatmap, Vec<(String, String)>)> {
    let hm = memlog::heatmap(s, o).await?;
    let labels = memlog::row_labels(s, &hm.rows).await?;
    let img = if bare {
        if image != Image::Png {
            bail!("a bare heatmap is PNG only");
        }
        crate::heatmap_png(&hm, scale.unwrap_or(1).max(1))?
    } else {
        heatmap_of(s, image, &hm, o.view, &labels, scale).await?
    };
    Ok((img, hm, labels))
}

fn rgb(c: [u8; 3]) -> RGBColor {
    RGBColor(c[0], c[1], c[2])
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    hm: &Heatmap,
    fig: &HeatFigure,
    l: Layout,
) -> Result<()> {
    let (sx, sy) = (l.scale_x as i32, l.scale_y as i32);
    let (x0, y0) = (l.left as i32, l.top as i32);
    let (w, h) = (hm.width as i32 * sx, hm.height as i32 * sy);
    let per_col = if fig.axis == "access" {
        "accesses"
    } else {
        "instructions"
    };
    let title = format!(
        "{}: memory accesses, {} view, {} bytes per row, {} {per_col} per column",
        fig.capture, fig.view, hm.bytes_per_row, hm.instr_per_col
    );
    let text = |t: &str, x: i32, y: i32, size: f64, pos: Pos| {
        root.draw(&Text::new(
            t.to_string(),
            (x, y),
            ("sans-serif", size).into_font().color(&BLACK).pos(pos),
        ))
        .map_err(err)
    };
    text(&title, 8, 12, 16.0, Pos::new(HPos::Left, VPos::Top))?;
    // Cells: the area black (none), then each run of equal non-black cells
    // in a row as one rectangle.
    root.draw(&Rectangle::new(
        [(x0, y0), (x0 + w, y0 + h)],
        rgb(HEAT_COLOURS[0]).filled(),
    ))
    .map_err(err)?;
    for (r, row) in hm.cells.chunks(hm.width).enumerate() {
        let mut c = 0;
        while c < row.len() {
            let v = row[c] & 3;
            let mut e = c + 1;
            while e < row.len() && row[e] & 3 == v {
                e += 1;
            }
            if v != 0 {
                let (ya, xa) = (y0 + r as i32 * sy, x0 + c as i32 * sx);
                root.draw(&Rectangle::new(
                    [(xa, ya), (x0 + e as i32 * sx, ya + sy)],
                    rgb(HEAT_COLOURS[v as usize]).filled(),
                ))
                .map_err(err)?;
            }
            c = e;
        }
    }
    root.draw(&Rectangle::new(
        [(x0 - 1, y0 - 1), (x0 + w, y0 + h)],
        RGBColor(128, 128, 128).stroke_width(1),
    ))
    .map_err(err)?;
    // Rows: address, object and symbol where they change.
    for r in labelled_rows(hm, fig, l.scale_y) {
        let y = y0 + r as i32 * sy + sy / 2;
        text(
            &row_text(hm, fig, r),
            x0 - 6,
            y,
            LABEL_FONT,
            Pos::new(HPos::Right, VPos::Center),
        )?;
        root.draw(&PathElement::new(vec![(x0 - 4, y), (x0 - 1, y)], BLACK))
            .map_err(err)?;
    }
    // Columns: ordinals at about every 120 pixels.
    let cols = hm.width as i32;
    let step = ((120 / sx).max(1)) as usize;
    let mut c = 0usize;
    while (c as i32) < cols {
        let x = x0 + c as i32 * sx;
        let ord = hm.ordinal0 + (c as u64 * hm.instr_per_col) as i64;
        root.draw(&PathElement::new(vec![(x, y0 + h), (x, y0 + h + 4)], BLACK))
            .map_err(err)?;
        text(
            &ord.to_string(),
            x,
            y0 + h + 6,
            LABEL_FONT,
            Pos::new(HPos::Center, VPos::Top),
        )?;
        c += step;
    }
    let xdesc = if fig.axis == "access" {
        "data-access order (a log without instruction records)"
    } else {
        "instruction order (ordinal)"
    };
    text(
        xdesc,
        x0 + w / 2,
        y0 + h + 26,
        13.0,
        Pos::new(HPos::Center, VPos::Top),
    )?;
    // Legend: Table 1's four colours.
    let mut x = x0;
    let ly = y0 + h + 56;
    for (bits, name) in [
        (2usize, LEGEND[2]),
        (1, LEGEND[1]),
        (3, LEGEND[3]),
        (0, LEGEND[0]),
    ] {
        root.draw(&Rectangle::new(
            [(x, ly), (x + 14, ly + 14)],
            rgb(HEAT_COLOURS[bits]).filled(),
        ))
        .map_err(err)?;
        root.draw(&Rectangle::new(
            [(x, ly), (x + 14, ly + 14)],
            RGBColor(128, 128, 128),
        ))
        .map_err(err)?;
        text(
            name,
            x + 20,
            ly + 7,
            13.0,
            Pos::new(HPos::Left, VPos::Center),
        )?;
        x += 20 + label_px(name) as i32 + 28;
    }
    Ok(())
}
