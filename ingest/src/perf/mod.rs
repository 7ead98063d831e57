//! perf.data (file and pipe mode, zstd-compressed or not).
//!
//! - [`bytes`]: endian-aware, bounds-checked reads from byte slices.
//! - [`header`]: file header, `perf_event_attr`, feature sections.
//! - [`records`]: typed records and their decoders (no Arrow).
//! - [`reader`]: the record stream with byte offsets and time ordering;
//!   `inflate.rs`: the records inside zstd-compressed ones.
//! - [`overlap`]: branch-stack entries repeated from the thread's previous sample.
//! - [`convert`]: typed records → Arrow batches of the `perf_*` tables.
//! - [`syscall_pairs`]: syscall tracepoint samples paired into `syscall` rows.
//! - [`tracing`]: the tracing data: every tracepoint's format.
//!
//! Times stay on perf's clock (`time_ns`); the clock data header places
//! that clock on UTC. The reader hands its offset out with every record
//! ([`reader::Item::utc_offset_ns`]), so in pipe mode, where the header
//! arrives as a HEADER_FEATURE record among the others, `time_utc` is
//! filled from there on; the records before it keep a null `time_utc` and
//! the input gets one `late_clock_data` warning.

pub mod bytes;
pub mod convert;
pub mod header;
mod inflate;
pub mod overlap;
mod read_ahead;
pub mod reader;
pub mod records;
pub mod syscall_pairs;
pub mod tracing;

use std::io::Read;
use std::path::Path;

use crate::diag::Diagnostics;
use crate::error::Result;
use convert::PerfConverter;
use reader::PerfReader;

/// What one perf.data input yielded.
#[derive(Clone, Debug, Default)]
pub struct PerfStats {
    pub bytes: u64,
    pub records: u64,
    pub samples: u64,
    pub pipe: bool,
}

/// Which events are tracepoints whose payloads are decoded with the
/// sample (syscall enter/exit, sched_switch), by event index; sched_switch
/// read where the recording's format places its fields.
pub fn tracepoint_kinds(
    events: &[header::EventDesc],
    meta: &header::Metadata,
) -> Vec<Option<records::TracepointKind>> {
    events
        .iter()
        .map(|e| match records::tracepoint_kind(&e.name()) {
            Some(records::TracepointKind::SchedSwitch(default)) => {
                let layout = meta
                    .tracepoint_formats
                    .iter()
                    .find(|f| e.attr.type_ == 2 && f.id == e.attr.config)
                    .and_then(|f| {
                        records::SchedSwitchLayout::from_fields(
                            f.fields.iter().map(|x| (x.name.as_str(), x.offset, x.size)),
                        )
                    });
                Some(records::TracepointKind::SchedSwitch(
                    layout.unwrap_or(default),
                ))
            }
            k => k,
        })
        .collect()
}

/// The bytes a tracepoint sample's payload must hold (its format's fixed
/// fields), by event index; None for other events and tracepoints without a
/// format (with the event's name).
fn payload_lens(
    events: &[header::EventDesc],
    meta: &header::Metadata,
) -> Vec<Option<(usize, String)>> {
    events
        .iter()
        .map(|e| {
            (e.attr.type_ == 2)
                .then(|| {
                    meta.tracepoint_formats
                        .iter()
                        .find(|f| f.id == e.attr.config)
                        .map(|f| (f.fixed_len(), e.name()))
                })
                .flatten()
        })
        .collect()
}

/// Reads one perf.data input into the converter. `pipe` selects pipe mode
/// (the stream is read once, no seeking).
pub fn ingest_perf(
    path: &Path,
    stream: Option<Box<dyn Read + Send>>,
    pipe: bool,
    conv: &mut PerfConverter,
    diags: &mut Diagnostics,
    progress: Option<&crate::progress::Progress>,
) -> Result<PerfStats> {
    let reader = match (pipe, stream) {
        (true, Some(s)) => PerfReader::open_pipe(s, diags.source())?,
        (true, None) => PerfReader::open_pipe_file(path)?,
        (false, _) => PerfReader::open_file(path, diags)?,
    };
    // A mapped input of some size is read on a second thread while this
    // one converts (where there is a second core to run it).
    let ahead = reader.mapped().is_some()
        && reader.stats.bytes >= read_ahead::MIN_BYTES
        && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    if !ahead {
        return convert_records(reader, pipe, conv, diags, progress);
    }
    std::thread::scope(
        |scope| match read_ahead::ReadAhead::start(scope, reader, diags.source()) {
            Ok(records) => convert_records(records, pipe, conv, diags, progress),
            // No thread to be had: read on this one.
            Err(reader) => convert_records(*reader, pipe, conv, diags, progress),
        },
    )
}

/// The records of an input, read on this thread ([`PerfReader`]) or ahead
/// on another ([`read_ahead::ReadAhead`]). The conversion loop is built for
/// each (no branch between the two per record, and the record handed out
/// stays in registers).
trait Records {
    fn events(&self) -> &[header::EventDesc];
    fn meta(&self) -> &header::Metadata;
    fn events_version(&self) -> u64;
    fn next_record(&mut self, diags: &mut Diagnostics) -> Result<Option<reader::Item<'_>>>;
    /// The reader, once every record is read.
    fn finish(self) -> PerfReader;
}

impl Records for PerfReader {
    fn events(&self) -> &[header::EventDesc] {
        &self.events
    }
    fn meta(&self) -> &header::Metadata {
        &self.meta
    }
    fn events_version(&self) -> u64 {
        self.events_version
    }
    #[inline(always)]
    fn next_record(&mut self, diags: &mut Diagnostics) -> Result<Option<reader::Item<'_>>> {
        PerfReader::next_record(self, diags)
    }
    fn finish(self) -> PerfReader {
        self
    }
}

impl Records for read_ahead::ReadAhead<'_> {
    fn events(&self) -> &[header::EventDesc] {
        &self.events
    }
    fn meta(&self) -> &header::Metadata {
        &self.meta
    }
    fn events_version(&self) -> u64 {
        self.events_version
    }
    #[inline(always)]
    fn next_record(&mut self, diags: &mut Diagnostics) -> Result<Option<reader::Item<'_>>> {
        read_ahead::ReadAhead::next_record(self, diags)
    }
    fn finish(self) -> PerfReader {
        read_ahead::ReadAhead::finish(self)
    }
}

/// Converts every record of `records`, then reports what the whole input
/// showed.
fn convert_records<R: Records>(
    mut records: R,
    pipe: bool,
    conv: &mut PerfConverter,
    diags: &mut Diagnostics,
    progress: Option<&crate::progress::Progress>,
) -> Result<PerfStats> {
    conv.sync_events(records.events())?;
    // File mode: the clock data (feature sections) is known before the
    // first record; pipe mode: from its HEADER_FEATURE record on.
    conv.set_utc_offset(records.meta().utc_offset_ns);
    conv.header_known(records.meta());
    let mut kinds = tracepoint_kinds(records.events(), records.meta());
    let mut lens = payload_lens(records.events(), records.meta());
    let mut n_formats = records.meta().tracepoint_formats.len();
    let before = conv.samples_written;
    let mut version = records.events_version();
    let mut n_records = 0u64;
    loop {
        // Pipe mode: attributes and names arrive in the stream.
        if records.events_version() != version {
            conv.sync_events(records.events())?;
            kinds = tracepoint_kinds(records.events(), records.meta());
            version = records.events_version();
            lens = payload_lens(records.events(), records.meta());
        }
        if records.meta().tracepoint_formats.len() != n_formats {
            n_formats = records.meta().tracepoint_formats.len();
            kinds = tracepoint_kinds(records.events(), records.meta());
            lens = payload_lens(records.events(), records.meta());
        }
        let Some(item) = records.next_record(diags)? else {
            break;
        };
        if item.utc_offset_ns != conv.utc_offset() {
            conv.set_utc_offset(item.utc_offset_ns);
        }
        // The input read so far, every 64 K records (records come in time
        // order, not file order: the largest offset seen).
        if let Some(p) = progress {
            n_records += 1;
            if n_records % 65536 == 0 {
                if let Some(off) = item.position().byte_offset() {
                    p.at(off)?;
                }
            }
        }
        conv.position = item.position();
        let decoded = if item.is_sample() {
            let mut s = records::Sample::default();
            item.decode_sample_into(&mut s).map(|()| {
                // A payload shorter than its format's fixed fields: kept;
                // the fields past its end read as null.
                if let (Some(Some((need, name))), Some(raw)) = (lens.get(item.event), s.raw) {
                    if raw.len() < *need {
                        diags.report(
                            item.position(),
                            crate::diag::Severity::Warning,
                            "short_tracepoint_payload",
                            format!(
                                "{name}: payload of {} bytes, its format's fixed fields need {need}; the fields past its end are null",
                                raw.len()
                            ),
                        )?;
                    }
                }
                // A tracepoint's payload (syscall, sched_switch), decoded
                // here (the converter sees typed values only); a bad one
                // leaves the sample without it.
                let payload = match (kinds.get(item.event).copied().flatten(), s.raw) {
                    (Some(kind), Some(raw)) => {
                        match records::decode_payload(kind, raw, item.big_endian()) {
                            Ok(p) => Some(p),
                            Err(msg) => {
                                diags.report(
                                    item.position(),
                                    crate::diag::Severity::Warning,
                                    "bad_tracepoint_payload",
                                    format!("{msg}; sample kept without its payload"),
                                )?;
                                None
                            }
                        }
                    }
                    _ => None,
                };
                conv.handle_sample(item.event, &s, payload)
            })
        } else {
            item.decode()
                .map(|(record, sample_id)| conv.handle(item.event, &record, &sample_id))
        };
        match decoded {
            Ok(done) => done?,
            Err(msg) => diags.report(
                item.position(),
                crate::diag::Severity::Error,
                "bad_record",
                format!("record type {}: {msg}; record skipped", item.record_type),
            )?,
        }
    }
    let reader = records.finish();
    for p in &reader.meta.tracing_problems {
        diags.report(
            crate::diag::Position::Byte(reader.meta.tracing_at.unwrap_or(0)),
            crate::diag::Severity::Warning,
            "bad_tracepoint_format",
            format!("tracing data: {p}"),
        )?;
    }
    if reader.events.is_empty() {
        diags.report(
            crate::diag::Position::Byte(reader.position()),
            crate::diag::Severity::Error,
            "truncated",
            format!(
                "stream ended at byte {} before any event attribute: nothing can be read",
                reader.position()
            ),
        )?;
    }
    if reader.stats.aux_records > 0 {
        // Not decoded: what a hardware trace holds (every branch or
        // instruction) is not in the sampled events trawl reads.
        diags.report(
            crate::diag::Position::Byte(0),
            crate::diag::Severity::Warning,
            "aux_not_decoded",
            format!(
                "{} bytes of {} trace data in {} AUXTRACE records were not decoded (trawl reads the sampled events only); \
                 to read them, let perf decode them into samples first: perf inject -i FILE --itrace=i100us -o decoded.data (--itrace=b: a sample per branch), then ingest decoded.data",
                reader.stats.aux_bytes,
                reader::aux_kind_name(reader.stats.aux_kind),
                reader.stats.aux_records
            ),
        )?;
    }
    if reader.meta.utc_offset_ns.is_some() && conv.utc_missed > 0 {
        // Reported at the first record left without a time on UTC.
        diags.report(
            conv.utc_missed_at,
            crate::diag::Severity::Warning,
            "late_clock_data",
            format!(
                "the clock data header came after {} timed records (from this one on): their time_utc is null (time_ns is kept)",
                conv.utc_missed
            ),
        )?;
    }
    conv.sync_events(&reader.events)?;
    conv.end_source(&reader.meta);
    Ok(PerfStats {
        bytes: reader.stats.bytes.max(reader.position()),
        records: reader.stats.records,
        samples: conv.samples_written - before,
        pipe,
    })
}
