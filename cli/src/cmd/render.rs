//! `trawl render heatmap`: instruction order × address heatmap of a memory log.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use trawl_plot as plot;

use crate::args::choice;
use crate::cmd::ingest::{parse_bytes, parse_mem_range};
use crate::output;
use crate::session::open;

#[derive(Subcommand)]
pub(crate) enum Render {
    /// Memory accesses as a figure: x = instruction ordinal, y = address
    /// (Mibu et al., Fig. 3-4, 8-9). Colours (Table 1): cyan store only,
    /// yellow load only, white both, black none. A title, ordinals, the
    /// rows' addresses, mappings and symbols, and a legend; PNG or SVG by
    /// the file's extension. Writes the row → address mapping as CSV next
    /// to the image.
    Heatmap(HeatmapArgs),
}

#[derive(Args)]
pub(crate) struct HeatmapArgs {
    /// Capture with a memory log.
    pub(crate) capture: PathBuf,
    /// PNG or SVG file to write; the rows go to FILE with `.rows.csv`.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Only the cells, one pixel (times --scale) each, no axes or text
    /// (PNG): for image processing.
    #[arg(long)]
    pub(crate) bare: bool,
    #[arg(long, value_parser = choice::<trawl_query::memlog::View>(), default_value = "used")]
    pub(crate) view: trawl_query::memlog::View,
    /// Bytes per row (power of two), e.g. 4096 or 64. Default: the page
    /// size (used view), about 1024 rows (full view).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) bytes_per_row: Option<u64>,
    /// Instructions per column, e.g. 16k or 512. Default: about 1024
    /// columns.
    #[arg(long, value_name = "N", value_parser = parse_bytes)]
    pub(crate) instr_per_col: Option<u64>,
    /// Zoom: addresses LO-HI (hex, HI exclusive) or LO+LEN.
    #[arg(long, value_name = "RANGE", value_parser = parse_mem_range)]
    pub(crate) addr_range: Option<(u64, u64)>,
    /// Zoom: instruction ordinals A..B (inclusive).
    #[arg(long, value_name = "A..B", value_parser = parse_ordinals)]
    pub(crate) ordinals: Option<(i64, i64)>,
    /// Pixels per cell (each cell drawn as N×N pixels). Default: the
    /// figure is about 900 pixels wide (at most 16 per cell); --bare: 1.
    #[arg(long)]
    pub(crate) scale: Option<u32>,
    /// The input of the capture to draw (`source.source_id`; default the
    /// first memory log).
    #[arg(long)]
    pub(crate) source: Option<i32>,
}

pub(crate) fn parse_ordinals(s: &str) -> std::result::Result<(i64, i64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: give ordinals as A..B"))?;
    let n = |t: &str| {
        trawl_ingest::memlog::parse_size(t)
            .map(|v| v as i64)
            .map_err(|_| format!("{t:?} is not an ordinal"))
    };
    let (a, b) = (n(a)?, n(b)?);
    if b < a {
        return Err(format!("{s:?}: empty range"));
    }
    Ok((a, b))
}

pub(crate) async fn render_heatmap(a: HeatmapArgs) -> Result<()> {
    use trawl_query::memlog::HeatOpts;
    let s = open(std::slice::from_ref(&a.capture)).await?;
    let o = HeatOpts {
        view: a.view,
        bytes_per_row: a.bytes_per_row,
        instr_per_col: a.instr_per_col,
        addr: a.addr_range,
        ordinals: a.ordinals,
        source_id: a.source,
        ..Default::default()
    };
    let (img, hm, labels) =
        plot::heatmap_image(&s, &o, plot::Image::of_path(&a.output)?, a.bare, a.scale).await?;
    output::write_atomic(&a.output, &img)?;
    let mut csv = String::from("row,start_address,end_address,bytes,object,symbol\n");
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for (i, ((lo, hi), (obj, sym))) in hm.rows.iter().zip(&labels).enumerate() {
        csv.push_str(&format!(
            "{i},{lo:#x},{hi:#x},{},{},{}\n",
            hi - lo,
            q(obj),
            q(sym)
        ));
    }
    let mut rows_path = a.output.clone().into_os_string();
    rows_path.push(".rows.csv");
    let rows_path = PathBuf::from(rows_path);
    output::write_atomic(&rows_path, csv.as_bytes())?;
    eprintln!(
        "{}: {} × {} cells ({} instructions per column from ordinal {}, {} bytes per row), {} accesses; rows in {}",
        a.output.display(),
        hm.width,
        hm.height,
        hm.instr_per_col,
        hm.ordinal0,
        hm.bytes_per_row,
        hm.accesses,
        rows_path.display()
    );
    Ok(())
}
