//! The one way both fronts (the CLI's `trawl export`, the Python package's
//! `Capture.export`) turn a sample selection into a file: the profile the
//! format needs, read once, then its writer.

use anyhow::{bail, Result};
use trawl_query::sample::Selection;
use trawl_query::session::Session;

/// The formats trawl exports the selected samples to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Pprof,
    Firefox,
    Speedscope,
    Folded,
    Perfetto,
}

impl trawl_query::choice::Choice for Format {
    const ALL: &'static [Format] = &[
        Format::Pprof,
        Format::Firefox,
        Format::Speedscope,
        Format::Folded,
        Format::Perfetto,
    ];

    fn name(self) -> &'static str {
        match self {
            Format::Pprof => "pprof",
            Format::Firefox => "firefox",
            Format::Speedscope => "speedscope",
            Format::Folded => "folded",
            Format::Perfetto => "perfetto",
        }
    }

    fn doc(self) -> &'static str {
        match self {
            Format::Pprof => "pprof's profile.proto, gzip-compressed (`go tool pprof FILE`)",
            Format::Firefox => {
                "the Firefox Profiler's processed format (JSON; profiler.firefox.com, \"Load a profile from file\")"
            }
            Format::Speedscope => {
                "speedscope's file format (JSON; speedscope.app or `speedscope FILE`)"
            }
            Format::Folded => {
                "folded stacks, `root;...;leaf weight` per line (flamegraph.pl, inferno, speedscope)"
            }
            Format::Perfetto => {
                "Perfetto's protobuf trace: samples with their stacks and traced system calls on one timeline (ui.perfetto.dev, \"Open trace file\")"
            }
        }
    }
}

/// What wrote the file, as the formats that record it show it.
pub const WRITER: &str = concat!("trawl ", env!("CARGO_PKG_VERSION"));

/// The samples `sel` selects in `s` as a file of `format`. `interval_ns`:
/// the sampling interval the Firefox Profiler assumes (default: the median
/// gap between a thread's samples, else 1 ms). A profile of no samples is
/// refused (viewers show it as a broken file); folded stacks of none are
/// an empty file.
pub async fn export(
    s: &Session,
    sel: &Selection<'_>,
    format: Format,
    interval_ns: Option<u64>,
) -> Result<Vec<u8>> {
    use trawl_query::profile::{stack_profile, ProfileOpts};
    if sel.opts.process_root && format != Format::Folded {
        bail!("a process root applies to folded stacks: the other formats keep each sample's process and thread");
    }
    let per_sample = match format {
        Format::Folded => {
            let tree = trawl_query::flame::frame_tree(s, sel).await?;
            return Ok(tree.folded_text().into_bytes());
        }
        Format::Pprof => false,
        Format::Firefox | Format::Speedscope | Format::Perfetto => true,
    };
    let p = stack_profile(s, sel, ProfileOpts { per_sample }).await?;
    if format == Format::Perfetto {
        // Perfetto knows a thread by its ids alone, and each capture has
        // its own clock: one capture per trace, until captures get ids
        // and times of their own.
        let n = if sel.filter.captures.is_empty() {
            s.captures().len()
        } else {
            sel.filter.captures.len()
        };
        if n > 1 {
            bail!("a Perfetto trace holds one capture: pick it with --capture NAME ({n} selected)");
        }
        let calls = trawl_query::trace::calls(s, &sel.filter.captures).await?;
        let readings = trawl_query::trace::readings(s, &sel.filter.captures).await?;
        if p.samples.is_empty() && calls.is_empty() && readings.is_empty() {
            bail!("no samples, traced calls or metric readings selected");
        }
        let extra = crate::perfetto::Extra {
            calls: &calls,
            readings: &readings,
        };
        return Ok(crate::perfetto::write(&p, &extra));
    }
    if p.samples.is_empty() {
        bail!("no samples selected");
    }
    Ok(match format {
        Format::Speedscope => crate::speedscope::write(&p, WRITER)?,
        Format::Firefox => {
            let interval = interval_ns
                .map(|i| i.max(1))
                .or_else(|| crate::units::median_gap(&p))
                .unwrap_or(1_000_000);
            crate::firefox::write(p, WRITER, interval)?
        }
        _ => crate::pprof::write(&p)?,
    })
}
