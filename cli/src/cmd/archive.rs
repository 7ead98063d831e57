//! `trawl archive ingest`: raw inputs (files, directory trees of runs) into
//! an archive of captures, in parallel and incrementally.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};

use crate::cmd::ingest::ConvertArgs;

#[derive(Subcommand)]
pub(crate) enum Archive {
    /// Ingest the runs under SRC... into ARCHIVE: the inputs directly in
    /// one directory make one capture (`--per-file`: each file is one);
    /// the captures of a run are stored together in segments
    /// (ARCHIVE/segment=NAME/TABLE.parquet, `capture` a column, stacks and
    /// frames shared); captures whose inputs are already in the manifest
    /// (same content) are skipped, changed ones replaced.
    Ingest(ArchiveIngestArgs),
    /// Rewrite ARCHIVE's small segments into large ones, leave behind the
    /// rows of captures replaced since, and move the captures of an
    /// earlier layout (ARCHIVE/capture=NAME, a directory each) into
    /// segments. Safe to interrupt: readers see the old layout or the new.
    Compact(ArchiveCompactArgs),
}

#[derive(Args)]
pub(crate) struct ArchiveCompactArgs {
    /// The archive: a directory or an object store URL (s3://bucket/archive,
    /// worked on through a local directory under the archive's lock).
    pub(crate) archive: PathBuf,
}

#[derive(Args)]
pub(crate) struct ArchiveIngestArgs {
    /// Input files and directory trees of runs (or object store URLs:
    /// s3://bucket/prefix, gs://..., az://...).
    #[arg(required = true)]
    pub(crate) sources: Vec<PathBuf>,
    /// The archive: a directory (created when missing) or an object store
    /// URL (s3://bucket/archive; credentials and endpoint from AWS_* or
    /// ~/.aws, GOOGLE_*, AZURE_*).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Every input file is a capture of its own (default: the inputs in one
    /// directory are one capture).
    #[arg(long, conflicts_with = "group_by")]
    pub(crate) per_file: bool,
    /// Group inputs by what this regular expression matches in their path
    /// under SRC (its first group, else the whole match), which names the
    /// capture: `--group-by '^(run-[0-9]+)'` makes run-7.perf.data and
    /// run-7.strace one capture `run-7`. Inputs it does not match are
    /// skipped and listed.
    #[arg(long, value_name = "REGEX")]
    pub(crate) group_by: Option<String>,
    /// Captures ingested at once (default: one per core).
    #[arg(short, long, default_value_t = 0)]
    pub(crate) jobs: usize,
    /// Try again captures that failed before with the same inputs.
    #[arg(long)]
    pub(crate) retry_failed: bool,
    /// Read and hash every input again. Otherwise an input whose path,
    /// size, modification time and inode are those recorded when it was
    /// hashed is taken as unchanged without being read (as make, rsync
    /// and git do).
    #[arg(long)]
    pub(crate) rehash: bool,
    #[command(flatten)]
    pub(crate) conv: ConvertArgs,
}

pub(crate) fn archive(a: Archive) -> Result<()> {
    match a {
        Archive::Ingest(a) => archive_ingest(&a),
        Archive::Compact(a) => {
            let d = trawl_archive::compact(&a.archive)?;
            eprintln!(
                "{}: {} captures into {} segments ({} segments merged, {} capture directories moved)",
                a.archive.display(),
                d.captures,
                d.segments_written,
                d.segments_merged,
                d.directories
            );
            Ok(())
        }
    }
}

fn archive_ingest(a: &ArchiveIngestArgs) -> Result<()> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use trawl_archive::{Event, Outcome};

    let opts = trawl_archive::Options {
        grouping: match (&a.group_by, a.per_file) {
            (Some(re), _) => trawl_archive::Grouping::Pattern(
                regex::Regex::new(re).with_context(|| format!("--group-by {re:?}"))?,
            ),
            (None, true) => trawl_archive::Grouping::File,
            (None, false) => trawl_archive::Grouping::Directory,
        },
        jobs: a.jobs,
        strict: a.conv.strict,
        retry_failed: a.retry_failed,
        rehash: a.rehash,
        ingest: a.conv.options(),
    };
    // One symbolization config for every capture: what it learns of a
    // binary is shared (in memory and in the symbol store). Symbolization's
    // problems go to the manifest's message.
    // (An archive in an object store keeps no symbol store: the local one
    // serves.)
    let local = !trawl_archive::is_url(&a.output);
    let cfg = a
        .conv
        .sym
        .config_with_store(local.then_some(a.output.as_path()));
    let how = a.conv.enrichment(&cfg);
    let enrich = |staging: &Path| -> Option<String> {
        if !how.symbolize {
            return None;
        }
        let problems = trawl_enrich::enrich(staging, how.cfg, how.flat).problems;
        (!problems.is_empty()).then(|| problems.join("; "))
    };
    let seams = || how.seams();
    // A progress bar on a terminal (bytes of input done, rate, time left);
    // nothing otherwise.
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
        )
        .expect("template"),
    );
    let (mut done, mut total) = (0usize, 0usize);
    let mut progress = |e: Event<'_>| match e {
        Event::Planned {
            captures,
            to_ingest,
            bytes,
        } => {
            total = captures;
            bar.set_length(bytes);
            bar.set_message(format!("{to_ingest} of {captures} captures to ingest"));
        }
        Event::Done {
            name,
            outcome,
            bytes,
        } => {
            done += 1;
            match outcome {
                Outcome::Ingested { .. } => bar.inc(bytes),
                Outcome::Failed(why) => bar.println(format!("{name}: failed: {why}")),
                _ => {}
            }
            bar.set_message(format!("{done}/{total} captures, last {name}"));
        }
    };
    let r = trawl_archive::ingest(&a.sources, &a.output, &opts, &enrich, &seams, &mut progress);
    bar.finish_and_clear();
    let s = r?;
    for (p, why) in s.skipped_files.iter().take(5) {
        eprintln!("skipped {}: {why}", p.display());
    }
    if s.skipped_files.len() > 5 {
        eprintln!("... {} more files skipped", s.skipped_files.len() - 5);
    }
    for (name, why) in &s.failed {
        eprintln!("capture {name} failed: {why}");
    }
    eprintln!(
        "{}: {} captures ingested, {} unchanged, {} failed ({} bytes of input)",
        a.output.display(),
        s.ingested,
        s.unchanged,
        s.failed.len(),
        s.input_bytes
    );
    Ok(())
}
