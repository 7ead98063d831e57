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

/// What an export takes besides the selection and the format.
#[derive(Default)]
pub struct ExportOpts {
    /// The sampling interval the Firefox Profiler assumes (default: the
    /// median gap between a thread's samples, else 1 ms).
    pub interval_ns: Option<u64>,
    /// Perfetto: paired events to show as slices, `START,END,KEY...`.
    pub pairs: Vec<String>,
    /// Perfetto: an exhaustion rule to show the ranges of, with its
    /// minimum duration and gap (`2s`, `1s`).
    pub rule: Option<(String, String, String)>,
}

/// Samples a Perfetto trace holds in memory before the rest go to
/// temporary files (`TRAWL_SPILL_SAMPLES` sets it; about 60 bytes each).
pub const SPILL_SAMPLES: usize = 2_000_000;

fn spill_samples() -> usize {
    std::env::var("TRAWL_SPILL_SAMPLES")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(SPILL_SAMPLES)
        .max(1)
}

/// [`export`] to `path`, through a temporary file beside it and a
/// rename: an interrupted export leaves the old file or none. Returns the
/// bytes written.
pub async fn export_file(
    s: &Session,
    sel: &Selection<'_>,
    format: Format,
    opts: &ExportOpts,
    path: &std::path::Path,
) -> Result<u64> {
    use anyhow::Context;
    use std::io::Write;
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".trawl-tmp");
    let tmp = path.with_file_name(name);
    let file = std::fs::File::create(&tmp).with_context(|| format!("writing {}", tmp.display()))?;
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let written = match export(s, sel, format, opts, &mut w).await {
        Ok(n) => w.flush().map(|()| n).map_err(anyhow::Error::from),
        Err(e) => Err(e),
    };
    drop(w);
    match written {
        Ok(n) => {
            std::fs::rename(&tmp, path)
                .with_context(|| format!("renaming to {}", path.display()))?;
            Ok(n)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e.context(format!("writing {}", path.display())))
        }
    }
}

/// The samples `sel` selects in `s` written to `w` as a file of `format`;
/// returns the bytes written. A profile of no samples is refused (viewers
/// show it as a broken file); folded stacks of none are an empty file. A
/// Perfetto trace is written as it is made, its samples beyond
/// [`SPILL_SAMPLES`] kept on disk, not in memory.
pub async fn export(
    s: &Session,
    sel: &Selection<'_>,
    format: Format,
    opts: &ExportOpts,
    w: &mut (dyn std::io::Write + Send),
) -> Result<u64> {
    use trawl_query::profile::{stack_profile, ProfileOpts};
    if sel.opts.process_root && format != Format::Folded {
        bail!("a process root applies to folded stacks: the other formats keep each sample's process and thread");
    }
    if format != Format::Perfetto && (!opts.pairs.is_empty() || opts.rule.is_some()) {
        bail!("pairs and rules apply to Perfetto traces (--to perfetto): the other formats hold samples only");
    }
    let per_sample = match format {
        Format::Folded => {
            let tree = trawl_query::flame::frame_tree(s, sel).await?;
            let text = tree.folded_text();
            w.write_all(text.as_bytes())?;
            return Ok(text.len() as u64);
        }
        Format::Pprof => false,
        Format::Firefox | Format::Speedscope | Format::Perfetto => true,
    };
    if format == Format::Perfetto {
        use trawl_query::trace::{PairSpec, RuleSpec, TraceOpts};
        let pairs = opts
            .pairs
            .iter()
            .map(|p| PairSpec::parse(p))
            .collect::<trawl_query::error::Result<Vec<_>>>()?;
        let rule = match &opts.rule {
            Some((text, min, gap)) => {
                let (rule, ropts) = trawl_query::ranges::rule_with(text, min, gap)?;
                Some(RuleSpec {
                    text: text.clone(),
                    rule,
                    opts: ropts,
                })
            }
            None => None,
        };
        // Both read the tables: side by side.
        let opts = TraceOpts {
            filter: sel.filter,
            pairs: &pairs,
            rule: rule.as_ref(),
        };
        let (trace, p) = futures::join!(
            trawl_query::trace::gather(s, &opts),
            stack_profile(
                s,
                sel,
                ProfileOpts {
                    per_sample,
                    spill_at: Some(spill_samples()),
                }
            )
        );
        let (trace, p) = (trace?, p?);
        if p.sample_len() == 0 && trace.spans.is_empty() && trace.readings.is_empty() {
            bail!("no samples, traced calls, events or metric readings selected");
        }
        return crate::perfetto::write(&p, sel.event, &trace, w);
    }
    let p = stack_profile(
        s,
        sel,
        ProfileOpts {
            per_sample,
            spill_at: None,
        },
    )
    .await?;
    if p.samples.is_empty() {
        bail!("no samples selected");
    }
    let bytes = match format {
        Format::Speedscope => crate::speedscope::write(&p, WRITER)?,
        Format::Firefox => {
            let interval = opts
                .interval_ns
                .map(|i| i.max(1))
                .or_else(|| crate::units::median_gap(&p))
                .unwrap_or(1_000_000);
            return crate::firefox::write(&p, WRITER, interval, w);
        }
        _ => crate::pprof::write(&p)?,
    };
    w.write_all(&bytes)?;
    Ok(bytes.len() as u64)
}
