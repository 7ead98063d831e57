//! One memory log read end to end: lackey text or a binary log into the
//! tables (or text into a binary log), with what it held.

use std::io::Read;

use rayon::prelude::*;

use crate::diag::{Diagnostics, Position, Severity};
use crate::error::{Error, Result};

use super::collect::{Axis, Collector};
use super::filter::{Filter, KIND_I};
use super::pages::{PageStats, MAX_PAGE_SIZE, MIN_PAGE_SIZE};
use super::rows::{RowSink, Rows};
use super::text::{read_lackey, TextSource};
use super::{binary, convert};

/// How a memory log is read: the filters and the page size of `mem_page`.
#[derive(Clone, Debug, Default)]
pub struct MemOptions {
    pub filter: Filter,
    /// Page size for `mem_page` (a power of two); default 4096, or the
    /// binary log's.
    pub page_size: Option<u64>,
}

impl MemOptions {
    pub fn check(&self) -> std::result::Result<(), String> {
        if let Some(p) = self.page_size {
            if !p.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&p) {
                return Err(format!(
                    "page size {p}: a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE} bytes"
                ));
            }
        }
        Ok(())
    }
}

/// What one memory log held.
pub struct MemStats {
    pub bytes: u64,
    /// Records (text: lines that were records; binary: access records read).
    pub records: u64,
    /// Rows written to `mem_access`.
    pub rows: u64,
    /// `capture_meta` pairs of the input.
    pub meta: Vec<(String, String)>,
}

fn filter_meta(c: &Collector, f: &Filter, extra: &[(String, String)]) -> Vec<(String, String)> {
    let mut m = vec![
        ("mem_page_size".to_string(), c.pages.page_size.to_string()),
        ("mem_kinds".to_string(), f.kind_letters()),
        (
            "mem_ranges".to_string(),
            f.ranges
                .iter()
                .map(|(lo, hi)| format!("{lo:#x}-{hi:#x}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("mem_fetch_rows".to_string(), f.fetch_rows.to_string()),
        ("mem_instructions".to_string(), c.instrs.to_string()),
        // What `mem_access.ordinal` counts (a data-only log: accesses).
        (
            "mem_x_axis".to_string(),
            if c.axis == Axis::Access || (c.instrs == 0 && c.rows > 0) {
                "access"
            } else {
                "instruction"
            }
            .to_string(),
        ),
        ("mem_lines".to_string(), c.lines.to_string()),
        ("mem_filtered".to_string(), c.filtered.to_string()),
    ];
    m.extend(extra.iter().cloned());
    m.extend(c.valgrind_meta());
    m
}

/// Reads a lackey log (text, maybe decompressed already) into `sink`, with
/// the page and fetch summaries left in the returned collector.
pub fn read_text(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
    progress: Option<&crate::progress::Progress>,
) -> Result<(Collector, u64)> {
    let mut c = Collector::new(opts.page_size.unwrap_or(4096));
    let bytes = read_lackey(input, name, &opts.filter, &mut c, diags, sink, progress)?;
    if c.records == 0 {
        diags.report(
            Position::None,
            Severity::Warning,
            "no_records",
            "no memory access records (was lackey run with --trace-mem=yes?)",
        )?;
    }
    Ok((c, bytes))
}

/// Ingests one lackey text log.
pub fn ingest_text(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    conv: &mut convert::MemConverter,
    diags: &mut Diagnostics,
    progress: Option<&crate::progress::Progress>,
) -> Result<MemStats> {
    let (c, bytes) = read_text(input, name, opts, diags, conv, progress)?;
    conv.end_source(&c)?;
    Ok(MemStats {
        bytes,
        records: c.records,
        rows: c.rows,
        meta: filter_meta(&c, &opts.filter, &[("mem_format".into(), "lackey".into())]),
    })
}

/// A diagnostic kind written by a converter, as a static name.
fn static_kind(k: &str) -> &'static str {
    match k {
        "truncated_line" => "truncated_line",
        "bad_address" => "bad_address",
        "bad_record" => "bad_record",
        "unknown_record" => "unknown_record",
        "no_records" => "no_records",
        _ => "converter_diagnostic",
    }
}

/// Ingests one binary memory log, narrowing its filters with `opts`.
pub fn ingest_binary(
    input: &mut dyn Read,
    opts: &MemOptions,
    conv: &mut convert::MemConverter,
    diags: &mut Diagnostics,
) -> Result<MemStats> {
    let (c, stats) = read_binary(input, opts, diags, conv)?;
    conv.end_source(&c)?;
    Ok(stats)
}

/// Reads a binary memory log into `sink`, narrowing its filters with
/// `opts`, with the page and fetch summaries left in the returned
/// collector. Blocks are read one after another ([`binary::read_block`])
/// and their accesses decoded in parallel, two blocks per thread at a
/// time.
pub fn read_binary(
    input: &mut dyn Read,
    opts: &MemOptions,
    diags: &mut Diagnostics,
    sink: &mut dyn RowSink,
) -> Result<(Collector, MemStats)> {
    let (header, mut off) = match binary::read_header(input) {
        Ok(h) => h,
        Err(e) => {
            return Err(Error::BadInput {
                path: diags.source().into(),
                offset: e.offset,
                message: e.message,
            })
        }
    };
    let page_size = opts.page_size.unwrap_or(header.page_size as u64);
    if !page_size.is_power_of_two() || !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(Error::BadInput {
            path: diags.source().into(),
            offset: 12,
            message: format!("page size {page_size} is not a power of two from {MIN_PAGE_SIZE} to {MAX_PAGE_SIZE}"),
        });
    }
    let mut filter = opts.filter.clone();
    filter.kinds &= header.filter.kinds;
    if opts.filter.fetch_rows && !header.filter.fetch_rows {
        diags.report(
            Position::Byte(17),
            Severity::Warning,
            "no_fetch_rows",
            "fetch rows were asked for but the binary log was written without them (trawl convert --fetch-rows): only the per-address summary is available",
        )?;
        filter.fetch_rows = false;
    }
    let mut c = Collector::new(page_size);
    let threads = rayon::current_num_threads().max(1);
    let mut pending: Vec<(Vec<u8>, u64)> = Vec::new();
    let mut ended = false;
    let mut records = 0u64;
    let flush = |pending: &mut Vec<(Vec<u8>, u64)>,
                 c: &mut Collector,
                 sink: &mut dyn RowSink|
     -> Result<()> {
        let decoded: Vec<(Rows, PageStats)> = pending
            .par_iter()
            .map(|(raw, base)| {
                let mut rows = Rows::pooled(0);
                // Kinds were checked when the block was read.
                let _ = binary::decode_accesses(raw, *base, &filter, &mut rows);
                let mut pages = PageStats::new(page_size);
                for i in 0..rows.len() {
                    if rows.kind[i] != KIND_I {
                        pages.touch(rows.kind[i], rows.address[i], rows.size[i], rows.ordinal[i]);
                    }
                }
                (rows, pages)
            })
            .collect();
        pending.clear();
        for (rows, pages) in decoded {
            c.pages.merge(pages, 0);
            c.rows += rows.len() as u64;
            if !rows.is_empty() {
                sink.rows(rows)?;
            }
        }
        Ok(())
    };
    loop {
        match binary::read_block(input, off) {
            Ok(None) => break,
            Ok(Some((block, next))) => {
                match block {
                    binary::Block::Accesses {
                        raw,
                        count,
                        base,
                        offset,
                    } => {
                        // Validate kinds here so a bad record names its block.
                        if let Some(k) = raw
                            .chunks_exact(binary::RECORD_SIZE)
                            .position(|r| r[14] > 3)
                        {
                            diags.report(
                                Position::Byte(offset),
                                Severity::Error,
                                "corrupt",
                                format!("record {k} of the block at byte {offset} has kind {} (0–3 expected): block skipped", raw[k * binary::RECORD_SIZE + 14]),
                            )?;
                        } else {
                            records += count as u64;
                            pending.push((raw, base));
                            if pending.len() >= threads * 2 {
                                flush(&mut pending, &mut c, sink)?;
                            }
                        }
                    }
                    binary::Block::Fetch(v) => {
                        let keep_i = filter.kinds & (1 << KIND_I) != 0;
                        for (a, s) in v {
                            if keep_i && filter.keep_addr(a) {
                                c.fetch.add(a, s.size, s.count, s.first, s.last);
                            }
                        }
                    }
                    binary::Block::Meta(m) => c.meta.extend(m),
                    binary::Block::Diag(d) => {
                        for (line, kind, msg) in d {
                            diags.report(
                                Position::Line(line),
                                Severity::Warning,
                                static_kind(&kind),
                                msg,
                            )?;
                        }
                    }
                    binary::Block::End { instrs, lines } => {
                        c.instrs = instrs;
                        c.lines = lines;
                        ended = true;
                        off = next;
                        break;
                    }
                }
                off = next;
            }
            Err(e) => {
                diags.report(
                    Position::Byte(e.offset),
                    Severity::Error,
                    "corrupt",
                    format!("{}: the rest of the file is skipped", e.message),
                )?;
                break;
            }
        }
    }
    flush(&mut pending, &mut c, sink)?;
    if !ended {
        diags.report(
            Position::Byte(off),
            Severity::Error,
            "truncated",
            "the binary log ends without its END1 block (cut short): the records before are kept; fetch summary and instruction count may be missing",
        )?;
    }
    c.records = records;
    let extra = [
        ("mem_format".to_string(), "trawl-binary".to_string()),
        ("mem_binary_version".to_string(), header.version.to_string()),
        ("mem_binary_kinds".to_string(), header.filter.kind_letters()),
        (
            "mem_binary_ranges".to_string(),
            header
                .filter
                .ranges
                .iter()
                .map(|(lo, hi)| format!("{lo:#x}-{hi:#x}"))
                .collect::<Vec<_>>()
                .join(","),
        ),
    ];
    let stats = MemStats {
        bytes: off,
        records,
        rows: c.rows,
        meta: filter_meta(&c, &filter, &extra),
    };
    Ok((c, stats))
}

/// What [`to_binary`] wrote.
pub struct ConvertSummary {
    pub text_bytes: u64,
    pub binary_bytes: u64,
    pub records: u64,
    pub rows: u64,
    pub instructions: u64,
    pub fetch_addresses: usize,
    pub diagnostics: Vec<crate::diag::Diagnostic>,
}

/// Converts lackey text (`input`, decompressed already) into a binary
/// memory log written to `out`, applying `opts`' filters while reading.
pub fn to_binary<W: std::io::Write>(
    input: &mut TextSource,
    name: &str,
    opts: &MemOptions,
    strict: bool,
    out: W,
) -> Result<(W, ConvertSummary)> {
    opts.check().map_err(Error::Usage)?;
    let mut diags = Diagnostics::new(name, strict);
    let page_size = opts.page_size.unwrap_or(4096);
    let header = binary::Header {
        version: binary::VERSION,
        page_size: page_size as u32,
        filter: opts.filter.clone(),
    };
    let mut w = binary::Writer::new(out, &header).map_err(|e| Error::io(name, e))?;
    let (c, bytes) = read_text(input, name, opts, &mut diags, &mut w, None)?;
    if w.clamped > 0 {
        diags.report(
            Position::None,
            Severity::Warning,
            "size_clamped",
            format!(
                "{} accesses larger than 65535 bytes stored as 65535",
                w.clamped
            ),
        )?;
    }
    let list = diags.into_vec();
    let dl: Vec<(u64, String, String)> = list
        .iter()
        .map(|d| {
            (
                d.position.line().unwrap_or(0),
                d.kind.to_string(),
                d.message.clone(),
            )
        })
        .collect();
    let (out, written) = w
        .finish(&c.fetch, &c.meta, &dl, c.instrs, c.lines)
        .map_err(|e| Error::io(name, e))?;
    Ok((
        out,
        ConvertSummary {
            text_bytes: bytes,
            binary_bytes: written,
            records: c.records,
            rows: c.rows,
            instructions: c.instrs,
            fetch_addresses: c.fetch.len(),
            diagnostics: list,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_text_reports_progress() {
        struct Discard;
        impl RowSink for Discard {
            fn rows(&mut self, _: Rows) -> crate::error::Result<()> {
                Ok(())
            }
        }
        let mut text = String::new();
        for i in 0..20_000u64 {
            text.push_str(&format!(
                "I  {:08x},3\n L {:08x},8\n",
                0x0400_0000 + i % 64,
                0x7fff_0000 + i * 8
            ));
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), &text).unwrap();
        let mut src = TextSource::file(file.path()).unwrap();
        assert!(matches!(src, TextSource::Mapped(_)));
        let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let progress = crate::progress::Progress {
            done: done.clone(),
            base: 100,
            cancel: None,
        };
        let mut diags = crate::diag::Diagnostics::new("t", false);
        let (c, bytes) = read_text(
            &mut src,
            "t",
            &MemOptions::default(),
            &mut diags,
            &mut Discard,
            Some(&progress),
        )
        .unwrap();
        assert_eq!(c.records, 40_000);
        assert_eq!(bytes, text.len() as u64);
        assert_eq!(
            done.load(std::sync::atomic::Ordering::Relaxed),
            100 + text.len() as u64
        );
    }
}
