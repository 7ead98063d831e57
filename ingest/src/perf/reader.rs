//! The perf.data record stream: file and pipe mode, zstd-compressed records
//! (`perf record -z`), and perf's time ordering.
//!
//! The reader frames every record itself so that it always knows the byte
//! offset it is at: a damaged file yields every record before the damage and
//! a diagnostic naming the offset (linux-perf-data's iterator drops the
//! records of the current round on an error, and its MMAP2 parser asserts on
//! bad build-id lengths; trawl takes only feature constants and names from
//! linux-perf-data). Ordering follows perf's `ordered_events`: records
//! are buffered per round and, at each FINISHED_ROUND, those not newer than
//! the previous round's newest timestamp are delivered in time order.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Read};

use super::bytes::Cursor;
use super::header::{
    parse_attr_entries, parse_build_id_body, parse_event_type, sample, Attr, EventDesc, FileHeader,
    Metadata, Section, FILE_HEADER_SIZE, MAGIC_BE, MAGIC_LE, PIPE_HEADER_SIZE,
};
use super::inflate::{Inflated, Inner};
use super::records::{decode, rtype, Record, SampleId};
use crate::diag::{Diagnostics, Position, Severity};
use crate::error::{Error, Result};

/// Records buffered for ordering beyond this many bytes are flushed early
/// (perf does the same when its ordered-events queue is full).
const MAX_QUEUED_BYTES: usize = 256 << 20;

/// A record waiting for its round to end. Kept small: rounds are sorted
/// and moved as a whole. The sort is stable, so records with equal
/// timestamps keep their arrival order.
pub(super) struct Queued {
    ts: u64,
    pub(super) record_type: u32,
    pub(super) event: u32,
    pub(super) misc: u16,
    pub(super) body: Body,
}

impl Queued {
    pub(super) fn position(&self) -> Position {
        match &self.body {
            Body::Map { off, .. } => Position::Byte(*off as u64 - 8),
            Body::Own(_, p) => *p,
        }
    }
}

/// Where a queued record's bytes are: a range of the mapped input, or a
/// copy (standard input, decompressed data).
pub(super) enum Body {
    Map { off: usize, len: usize },
    Own(Vec<u8>, Position),
}

impl Body {
    fn len(&self) -> usize {
        match self {
            Body::Map { len, .. } => *len,
            Body::Own(v, _) => v.len(),
        }
    }
}

/// The input: a mapped file (file mode, or a pipe-mode stream saved to a
/// file) or a stream read once (standard input).
enum Input {
    Map(std::sync::Arc<memmap2::Mmap>),
    Stream(Box<dyn Read + Send>),
}

fn bytes_of<'a>(input: &'a Input, b: &'a Body) -> &'a [u8] {
    match (b, input) {
        (Body::Own(v, _), _) => v,
        (Body::Map { off, len }, Input::Map(m)) => &m[*off..*off + *len],
        (Body::Map { .. }, Input::Stream(_)) => &[],
    }
}

fn map_file(f: &std::fs::File) -> io::Result<memmap2::Mmap> {
    let m = crate::mapped::map_readonly(f)?;
    let _ = m.advise(memmap2::Advice::Sequential);
    Ok(m)
}

/// Pages of the mapped input behind every record still needed are given
/// back to the kernel every this many bytes, so resident memory does not
/// grow with the file.
const RELEASE_EVERY: usize = 16 << 20;

/// [`Item`]'s second position integer where the record was not compressed.
pub(super) const NOT_INNER: u64 = u64::MAX;

/// A position as [`Item`] holds it.
pub(super) fn split_position(p: Position) -> (u64, u64) {
    match p {
        Position::Compressed { record, inner } => (record, inner),
        p => (p.byte_offset().unwrap_or(0), NOT_INNER),
    }
}

/// One record delivered by [`PerfReader::next_record`].
/// The record is decoded by [`Item::decode`] where it is used, so that
/// the decoded sample is built once, in place (it is a few hundred bytes).
pub struct Item<'a> {
    /// Index into [`PerfReader::events`].
    pub event: usize,
    /// Where the record is ([`Item::position`]): its byte offset, and
    /// `NOT_INNER` or its offset in the decompressed stream of that
    /// (compressed) record. Two integers rather than a [`Position`], so
    /// that the record handed out stays in registers.
    at: u64,
    inner: u64,
    pub record_type: u32,
    /// The input's offset to UTC as known when the record is handed out
    /// (`Metadata::utc_offset_ns`).
    pub utc_offset_ns: Option<i64>,
    misc: u16,
    body: &'a [u8],
    attr: &'a Attr,
    be: bool,
}

impl<'a> Item<'a> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        event: usize,
        (at, inner): (u64, u64),
        record_type: u32,
        utc_offset_ns: Option<i64>,
        misc: u16,
        body: &'a [u8],
        attr: &'a Attr,
        be: bool,
    ) -> Self {
        Item {
            event,
            at,
            inner,
            record_type,
            utc_offset_ns,
            misc,
            body,
            attr,
            be,
        }
    }

    /// Where the record is in the input.
    #[inline]
    pub fn position(&self) -> Position {
        match self.inner {
            NOT_INNER => Position::Byte(self.at),
            inner => Position::Compressed {
                record: self.at,
                inner,
            },
        }
    }

    /// The typed record and its sample_id fields; `Err` says what is wrong
    /// with the record (the caller reports it with [`Item::position`]).
    #[inline]
    pub fn decode(&self) -> Result<(Record<'a>, SampleId), String> {
        decode(self.record_type, self.misc, self.body, self.attr, self.be)
    }

    pub fn is_sample(&self) -> bool {
        self.record_type == rtype::SAMPLE
    }

    /// Byte order of the input.
    pub fn big_endian(&self) -> bool {
        self.be
    }

    /// Decodes a sample record into `s` (see [`Item::is_sample`]).
    #[inline]
    pub fn decode_sample_into(&self, s: &mut super::records::Sample<'a>) -> Result<(), String> {
        super::records::decode_sample_into(self.body, self.misc, self.attr, self.be, s)
    }
}

/// Counts of what was read.
#[derive(Clone, Debug, Default)]
pub struct ReadStats {
    pub bytes: u64,
    pub records: u64,
    pub compressed_records: u64,
    pub decompressed_bytes: u64,
    /// Hardware trace data (PERF_RECORD_AUXTRACE payloads: Intel PT,
    /// CoreSight, ARM SPE...), skipped: its kind (AUXTRACE_INFO's type),
    /// records and bytes.
    pub aux_kind: Option<u32>,
    pub aux_records: u64,
    pub aux_bytes: u64,
}

/// perf's own messages (`[ perf record: Woken up 1 times ...`) where a
/// record header should be: `perf record -o - ... > file 2>&1` wrote its
/// standard error into the stream. Reported (the records before are
/// whole); true: stop reading.
fn perf_messages(hdr: &[u8], diags: &mut Diagnostics, at: u64) -> Result<bool> {
    if !hdr.starts_with(b"[ perf ") {
        return Ok(false);
    }
    diags.report(
        Position::Byte(at),
        Severity::Warning,
        "perf_messages",
        "perf's own messages (\"[ perf record: ...\") follow the records: perf's standard error was written into the \
         stream (2>&1); the text is skipped",
    )?;
    Ok(true)
}

/// The name of an AUXTRACE_INFO type (tools/perf/util/auxtrace.h
/// `enum auxtrace_type`).
pub fn aux_kind_name(kind: Option<u32>) -> String {
    match kind {
        Some(1) => "Intel PT".into(),
        Some(2) => "Intel BTS".into(),
        Some(3) => "CoreSight ETM".into(),
        Some(4) => "ARM SPE".into(),
        Some(5) => "s390 CPU-MF".into(),
        Some(6) => "HiSilicon PTT".into(),
        Some(k) => format!("AUX type {k}"),
        None => "AUX area".into(),
    }
}

enum IdLayout {
    Single,
    /// Sample id at this byte offset; non-sample id this many bytes before
    /// the end (when sample_id_all).
    Known {
        sample_off: Option<usize>,
        nonsample_from_end: Option<usize>,
    },
}

pub struct PerfReader {
    input: Input,
    pub be: bool,
    pub pipe: bool,
    /// Absolute offset of the next byte read from `input`.
    pos: u64,
    /// File mode: absolute end of the data section.
    data_end: Option<u64>,
    pub events: Vec<EventDesc>,
    /// Incremented whenever `events` changes (pipe-mode attributes and
    /// names arrive in the stream).
    pub events_version: u64,
    pub meta: Metadata,
    id_to_event: HashMap<u64, usize>,
    id_layout: IdLayout,
    /// Records decompressed from COMPRESSED ones, not yet read.
    inflated: Inflated,
    /// Records waiting for their round to end, in arrival order (sorted at
    /// each flush).
    pub(super) pending: Vec<Queued>,
    pending_bytes: usize,
    /// Mapped input below this offset has been released.
    released: usize,
    /// Position at which to look for pages to release again (a scan that
    /// frees nothing, e.g. a file without FINISHED_ROUND, is not repeated
    /// per record).
    release_check: usize,
    pub(super) ready: VecDeque<Queued>,
    limit: u64,
    max_seen: u64,
    current: Option<Queued>,
    pool: Vec<Vec<u8>>,
    pub(super) eof: bool,
    warned_overflow: bool,
    pub stats: ReadStats,
    /// A type-71 record that is not an AUXTRACE one was reported.
    odd_auxtrace: bool,
    /// Read ahead on a thread ([`super::read_ahead`]): the mapped offsets
    /// still held by batches handed over, and by the one being filled.
    pub(super) hold: Option<std::sync::Arc<super::read_ahead::Hold>>,
    pub(super) held_low: usize,
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// A `perf_event_header`: (type, misc, size). `b` holds at least 8 bytes.
pub(super) fn record_header(b: &[u8], be: bool) -> (u32, u16, usize) {
    let mut c = Cursor::new(b, be);
    let ty = c.u32().unwrap_or(0);
    let misc = c.u16().unwrap_or(0);
    let size = c.u16().unwrap_or(0) as usize;
    (ty, misc, size)
}

/// Is this the start of a perf.data file (file or pipe mode)?
pub fn sniff(head: &[u8]) -> Option<bool> {
    let magic = head.get(0..8)?;
    if magic != MAGIC_LE && magic != MAGIC_BE {
        return None;
    }
    let size = head.get(8..16)?;
    let size = if magic == MAGIC_LE {
        u64::from_le_bytes(size.try_into().ok()?)
    } else {
        u64::from_be_bytes(size.try_into().ok()?)
    };
    match size as usize {
        PIPE_HEADER_SIZE => Some(true),
        _ => Some(false),
    }
}

impl PerfReader {
    /// Opens a file-mode perf.data. Needs random access for the header,
    /// attributes and feature sections.
    pub fn open_file(path: &std::path::Path, diags: &mut Diagnostics) -> Result<PerfReader> {
        use std::io::{Seek, SeekFrom};
        let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let file_len = f.metadata().map_err(|e| Error::io(path, e))?.len();
        let bad = |offset: u64, message: String| Error::BadInput {
            path: path.into(),
            offset,
            message,
        };
        let mut hb = [0u8; FILE_HEADER_SIZE];
        let n = read_full(&mut f, &mut hb).map_err(|e| Error::io(path, e))?;
        let h = FileHeader::parse(&hb[..n])
            .ok_or_else(|| bad(0, format!("perf.data header cut short ({n} of 104 bytes)")))?;
        let be = h.be;
        let read_at = |f: &mut std::fs::File, s: Section| -> io::Result<Vec<u8>> {
            let avail = file_len.saturating_sub(s.offset);
            let len = s.size.min(avail) as usize;
            let mut buf = vec![0u8; len];
            f.seek(SeekFrom::Start(s.offset))?;
            let n = read_full(f, &mut buf)?;
            buf.truncate(n);
            Ok(buf)
        };
        // Attributes.
        if h.attrs.offset.saturating_add(h.attrs.size) > file_len {
            return Err(bad(
                h.attrs.offset,
                format!(
                    "attribute section ({} bytes at {}) lies beyond the end of the file ({} bytes)",
                    h.attrs.size, h.attrs.offset, file_len
                ),
            ));
        }
        let abuf = read_at(&mut f, h.attrs).map_err(|e| Error::io(path, e))?;
        let entries = parse_attr_entries(&abuf, h.attr_size as usize, be).ok_or_else(|| {
            bad(
                h.attrs.offset,
                format!("malformed attribute section (attr_size {})", h.attr_size),
            )
        })?;
        if entries.is_empty() {
            return Err(bad(h.attrs.offset, "file has no event attributes".into()));
        }
        let mut events = Vec::new();
        for (attr, ids_sec) in entries {
            let ids = if ids_sec.size > 0 && ids_sec.offset.saturating_add(ids_sec.size) <= file_len
            {
                let b = read_at(&mut f, ids_sec).map_err(|e| Error::io(path, e))?;
                let mut c = Cursor::new(&b, be);
                (0..b.len() / 8).filter_map(|_| c.u64()).collect()
            } else {
                if ids_sec.size > 0 {
                    diags.report(
                        Position::Byte(ids_sec.offset),
                        Severity::Warning,
                        "bad_ids_section",
                        "event id section lies beyond the end of the file",
                    )?;
                }
                Vec::new()
            };
            events.push(EventDesc {
                attr,
                name: None,
                ids,
            });
        }
        // Data section extent.
        let mut data_end = h.data.offset.saturating_add(h.data.size);
        let mut features_ok = true;
        if h.data.size == 0 && file_len > h.data.offset {
            diags.report(
                Position::Byte(40),
                Severity::Warning,
                "data_size_zero",
                format!(
                    "header says the data section is empty but {} bytes follow it (perf record was killed before it finished the file?); reading records to the end of the file",
                    file_len - h.data.offset
                ),
            )?;
            data_end = file_len;
            features_ok = false;
        } else if data_end > file_len {
            diags.report(
                Position::Byte(file_len),
                Severity::Error,
                "truncated",
                format!(
                    "file is truncated: the data section should end at byte {data_end} but the file has {file_len} bytes; records up to the cut are kept, header features are lost"
                ),
            )?;
            data_end = file_len;
            features_ok = false;
        }
        // Feature sections.
        let mut meta = Metadata::default();
        let feature_ids = h.feature_ids();
        if features_ok && !feature_ids.is_empty() {
            let table = Section {
                offset: h.data.offset.saturating_add(h.data.size),
                size: feature_ids.len() as u64 * 16,
            };
            let tb = read_at(&mut f, table).map_err(|e| Error::io(path, e))?;
            if (tb.len() as u64) < table.size {
                diags.report(
                    Position::Byte(table.offset),
                    Severity::Error,
                    "truncated",
                    "feature section table is cut short; header metadata is lost",
                )?;
            } else {
                let mut c = Cursor::new(&tb, be);
                let mut lost = Vec::new();
                for id in feature_ids {
                    let s = Section {
                        offset: c.u64().unwrap_or(0),
                        size: c.u64().unwrap_or(0),
                    };
                    if s.offset.saturating_add(s.size) > file_len || s.size > (1 << 30) {
                        lost.push(id);
                        continue;
                    }
                    // An empty section: perf could not write the feature
                    // (perf 3.x on ARM has no CPU description), as perf
                    // report's `(null)`; not damage.
                    if s.size == 0 {
                        continue;
                    }
                    let d = read_at(&mut f, s).map_err(|e| Error::io(path, e))?;
                    if id == linux_perf_data::Feature::TRACING_DATA.0 {
                        meta.tracing_at = Some(s.offset);
                    }
                    if !meta.add_feature(id, &d, be) {
                        diags.report(
                            Position::Byte(s.offset),
                            Severity::Warning,
                            "bad_feature_section",
                            format!("feature {id} section is malformed; skipped"),
                        )?;
                    }
                }
                if !lost.is_empty() {
                    diags.report(
                        Position::Byte(file_len),
                        Severity::Error,
                        "truncated",
                        format!(
                            "file ends at byte {file_len} inside the header feature sections; lost features {}",
                            lost.iter()
                                .map(|&id| format!("{:?}", linux_perf_data::Feature(id)))
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    )?;
                }
            }
        }
        if let Some(desc) = meta.event_desc.take() {
            name_events(&mut events, &desc);
            meta.event_desc = Some(desc);
        }
        name_tracepoints(&mut events, &meta.tracepoints);
        let map = map_file(&f).map_err(|e| Error::io(path, e))?;
        let data_end = data_end.min(map.len() as u64);
        let input = Input::Map(std::sync::Arc::new(map));
        let mut r = PerfReader::new(
            input,
            be,
            false,
            h.data.offset,
            Some(data_end),
            events,
            meta,
        );
        r.stats.bytes = file_len;
        r.rebuild_ids();
        Ok(r)
    }

    /// Opens a pipe-mode stream (`perf record -o -`). Attributes arrive as
    /// records; they are read as the stream goes.
    /// Opens a pipe-mode stream saved to a file (mapped, like file mode).
    pub fn open_pipe_file(path: &std::path::Path) -> Result<PerfReader> {
        let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let map = map_file(&f).map_err(|e| Error::io(path, e))?;
        if map.len() < PIPE_HEADER_SIZE {
            return Err(Error::BadInput {
                path: path.into(),
                offset: 0,
                message: "pipe header cut short".into(),
            });
        }
        let be = &map[0..8] == MAGIC_BE;
        let len = map.len() as u64;
        let mut r = PerfReader::new(
            Input::Map(std::sync::Arc::new(map)),
            be,
            true,
            PIPE_HEADER_SIZE as u64,
            Some(len),
            Vec::new(),
            Metadata::default(),
        );
        r.stats.bytes = len;
        Ok(r)
    }

    /// Opens a pipe-mode stream read once (standard input).
    pub fn open_pipe(mut input: Box<dyn Read + Send>, path: &str) -> Result<PerfReader> {
        let mut hb = [0u8; PIPE_HEADER_SIZE];
        let n = read_full(&mut input, &mut hb).map_err(|e| Error::io(path, e))?;
        if n < PIPE_HEADER_SIZE {
            return Err(Error::BadInput {
                path: path.into(),
                offset: 0,
                message: "pipe header cut short".into(),
            });
        }
        let be = &hb[0..8] == MAGIC_BE;
        let input = Input::Stream(Box::new(io::BufReader::with_capacity(1 << 20, input)));
        Ok(PerfReader::new(
            input,
            be,
            true,
            PIPE_HEADER_SIZE as u64,
            None,
            Vec::new(),
            Metadata::default(),
        ))
    }

    fn new(
        input: Input,
        be: bool,
        pipe: bool,
        pos: u64,
        data_end: Option<u64>,
        events: Vec<EventDesc>,
        meta: Metadata,
    ) -> Self {
        PerfReader {
            input,
            be,
            pipe,
            pos,
            data_end,
            events,
            events_version: 0,
            meta,
            id_to_event: HashMap::default(),
            id_layout: IdLayout::Single,
            inflated: Inflated::default(),
            pending: Vec::new(),
            pending_bytes: 0,
            released: 0,
            release_check: 2 * RELEASE_EVERY,
            ready: VecDeque::new(),
            limit: 0,
            max_seen: 0,
            current: None,
            pool: Vec::new(),
            eof: false,
            warned_overflow: false,
            stats: ReadStats::default(),
            odd_auxtrace: false,
            hold: None,
            held_low: usize::MAX,
        }
    }

    fn rebuild_ids(&mut self) {
        self.events_version += 1;
        self.id_to_event.clear();
        for (i, e) in self.events.iter().enumerate() {
            for &id in &e.ids {
                self.id_to_event.insert(id, i);
            }
        }
        self.id_layout = if self.events.len() <= 1 {
            IdLayout::Single
        } else {
            let a = &self.events[0].attr;
            let st = a.sample_type;
            let sample_off = if st & sample::IDENTIFIER != 0 {
                Some(0)
            } else if st & sample::ID != 0 {
                Some(
                    8 * (st & (sample::IP | sample::TID | sample::TIME | sample::ADDR)).count_ones()
                        as usize,
                )
            } else {
                None
            };
            let nonsample_from_end = if !a.sample_id_all() {
                None
            } else if st & sample::IDENTIFIER != 0 {
                Some(8)
            } else if st & sample::ID != 0 {
                Some(
                    8 * (st & (sample::ID | sample::STREAM_ID | sample::CPU | sample::IDENTIFIER))
                        .count_ones() as usize,
                )
            } else {
                None
            };
            IdLayout::Known {
                sample_off,
                nonsample_from_end,
            }
        };
    }

    /// Which event a kernel record belongs to: `None` when its id is unknown.
    fn event_of(&self, record_type: u32, body: &[u8]) -> Option<usize> {
        match self.id_layout {
            IdLayout::Single => Some(0),
            IdLayout::Known {
                sample_off,
                nonsample_from_end,
            } => {
                let off = if record_type == rtype::SAMPLE {
                    sample_off
                } else {
                    match nonsample_from_end {
                        Some(n) => body.len().checked_sub(n),
                        None => return Some(0),
                    }
                };
                let Some(off) = off else { return Some(0) };
                let id = Cursor {
                    buf: body,
                    pos: off,
                    be: self.be,
                }
                .u64()?;
                match self.id_to_event.get(&id) {
                    Some(&e) => Some(e),
                    // Records perf synthesizes before the events are open
                    // carry id 0; perf (evlist__id2evsel) gives them to the
                    // first event. All events share the trailer layout of
                    // non-sample records, so the first event parses them.
                    None if id == 0 || record_type != rtype::SAMPLE => Some(0),
                    None => None,
                }
            }
        }
    }

    fn timestamp_of(&self, record_type: u32, body: &[u8], attr: &Attr) -> Option<u64> {
        let st = attr.sample_type;
        if st & sample::TIME == 0 {
            return None;
        }
        if record_type == rtype::SAMPLE {
            let off = 8 * (st & (sample::IDENTIFIER | sample::IP | sample::TID)).count_ones();
            Cursor {
                buf: body,
                pos: off as usize,
                be: self.be,
            }
            .u64()
        } else if attr.sample_id_all() {
            let from_end = 8
                * (st
                    & (sample::TIME
                        | sample::ID
                        | sample::STREAM_ID
                        | sample::CPU
                        | sample::IDENTIFIER))
                    .count_ones() as usize;
            let off = body.len().checked_sub(from_end)?;
            Cursor {
                buf: body,
                pos: off,
                be: self.be,
            }
            .u64()
        } else {
            None
        }
    }

    /// The next record in time order, or `None` at the end of the input.
    pub fn next_record(&mut self, diags: &mut Diagnostics) -> Result<Option<Item<'_>>> {
        // Find the next record that decodes; report and skip those that do not.
        loop {
            if let Some(q) = self.ready.pop_front() {
                if let Some(Queued {
                    body: Body::Own(old, _),
                    ..
                }) = self.current.replace(q)
                {
                    self.pool.push(old);
                }
                if self
                    .current
                    .as_ref()
                    .is_some_and(|q| (q.event as usize) < self.events.len())
                {
                    break;
                }
                continue;
            }
            if self.eof {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                self.flush_until(u64::MAX);
                continue;
            }
            if !self.pump(diags)? {
                self.eof = true;
            }
        }
        let q = self.current.as_ref().unwrap();
        Ok(Some(Item::new(
            q.event as usize,
            split_position(q.position()),
            q.record_type,
            self.meta.utc_offset_ns,
            q.misc,
            bytes_of(&self.input, &q.body),
            &self.events[q.event as usize].attr,
            self.be,
        )))
    }

    fn take_buf(&mut self, len: usize) -> Vec<u8> {
        let mut b = self.pool.pop().unwrap_or_default();
        b.clear();
        b.resize(len, 0);
        b
    }

    /// Reads and handles one record (of the decompressed data first, then
    /// of the input). Returns false at the end.
    pub(super) fn pump(&mut self, diags: &mut Diagnostics) -> Result<bool> {
        match self.inflated.next(self.be, diags)? {
            Inner::Wanting => {}
            Inner::Dropped => return Ok(true),
            Inner::Record { ty, misc, body, at } => {
                let mut own = self.take_buf(body.len());
                own.copy_from_slice(self.inflated.bytes(body));
                self.handle(ty, misc, Body::Own(own, at), at, diags)?;
                return Ok(true);
            }
        }
        let at = self.pos;
        let end = self.data_end.unwrap_or(u64::MAX);
        if at >= end {
            self.inflated.finish(diags)?;
            return Ok(false);
        }
        let Some((ty, misc, size, body)) = self.frame(at, end, diags)? else {
            return Ok(false);
        };
        self.pos += size as u64;
        self.stats.records += 1;
        if self.pos as usize >= self.release_check {
            self.release_consumed();
        }
        if !self.payload(ty, size, at, end, &body, diags)? {
            return Ok(false);
        }
        match ty {
            rtype::COMPRESSED | rtype::COMPRESSED2 => {
                self.stats.compressed_records += 1;
                let n = match body {
                    Body::Map { off, len } => match &self.input {
                        Input::Map(m) => {
                            let m = std::sync::Arc::clone(m);
                            self.inflated
                                .inflate(ty, &m[off..off + len], at, self.be, diags)?
                        }
                        Input::Stream(_) => 0,
                    },
                    Body::Own(v, _) => {
                        let n = self.inflated.inflate(ty, &v, at, self.be, diags)?;
                        self.pool.push(v);
                        n
                    }
                };
                self.stats.decompressed_bytes += n;
            }
            _ => self.handle(ty, misc, body, Position::Byte(at), diags)?,
        }
        Ok(true)
    }

    /// The record at `at` (before the data's `end`): its type, misc, size
    /// and body; `None` at the end of the input or where it is cut short or
    /// corrupt (reported).
    fn frame(
        &mut self,
        at: u64,
        end: u64,
        diags: &mut Diagnostics,
    ) -> Result<Option<(u32, u16, usize, Body)>> {
        let (ty, misc, size, body) = match &mut self.input {
            Input::Map(m) => {
                let avail = (end.min(m.len() as u64).saturating_sub(at)) as usize;
                let off = at as usize;
                if avail < 8 {
                    if avail > 0 {
                        diags.report(
                            Position::Byte(at),
                            Severity::Error,
                            "truncated",
                            format!("input ends inside a record header ({avail} of 8 bytes)"),
                        )?;
                    } else {
                        self.inflated.finish(diags)?;
                    }
                    return Ok(None);
                }
                if perf_messages(&m[off..off + 8], diags, at)? {
                    return Ok(None);
                }
                let (ty, misc, size) = record_header(&m[off..off + 8], self.be);
                if size >= 8 && size > avail {
                    diags.report(
                        Position::Byte(at),
                        Severity::Error,
                        "truncated",
                        format!(
                            "input ends inside a record of type {ty} ({avail} of {size} bytes); the record is dropped"
                        ),
                    )?;
                    return Ok(None);
                }
                (
                    ty,
                    misc,
                    size,
                    Body::Map {
                        off: off + 8,
                        len: size.saturating_sub(8),
                    },
                )
            }
            Input::Stream(r) => {
                let mut hdr = [0u8; 8];
                let n = read_full(r, &mut hdr).map_err(|e| Error::io("input", e))?;
                if n == 0 {
                    self.inflated.finish(diags)?;
                    return Ok(None);
                }
                if n < 8 {
                    diags.report(
                        Position::Byte(at),
                        Severity::Error,
                        "truncated",
                        format!("input ends inside a record header ({n} of 8 bytes)"),
                    )?;
                    return Ok(None);
                }
                if perf_messages(&hdr, diags, at)? {
                    return Ok(None);
                }
                let (ty, misc, size) = record_header(&hdr, self.be);
                (ty, misc, size, Body::Own(Vec::new(), Position::Byte(at)))
            }
        };
        if size < 8 {
            diags.report(
                Position::Byte(at),
                Severity::Error,
                "bad_record_size",
                format!("record of type {ty} has size {size} (< 8): the data is corrupt from here; the rest of the input is skipped"),
            )?;
            return Ok(None);
        }
        let body = match body {
            Body::Own(_, p) => {
                let mut buf = self.take_buf(size - 8);
                let Input::Stream(r) = &mut self.input else {
                    unreachable!("owned bodies come from streams")
                };
                let got = read_full(r, &mut buf).map_err(|e| Error::io("input", e))?;
                if got < size - 8 {
                    diags.report(
                        Position::Byte(at),
                        Severity::Error,
                        "truncated",
                        format!(
                            "input ends inside a record of type {ty} ({} of {size} bytes); the record is dropped",
                            got + 8
                        ),
                    )?;
                    return Ok(None);
                }
                Body::Own(buf, p)
            }
            b => b,
        };
        Ok(Some((ty, misc, size, body)))
    }

    /// Reads or skips the payload some user records carry after their
    /// size (the tracing data, AUXTRACE data); counts AUX data. False
    /// where the input ends inside it (reported).
    fn payload(
        &mut self,
        ty: u32,
        size: usize,
        at: u64,
        end: u64,
        body: &Body,
        diags: &mut Diagnostics,
    ) -> Result<bool> {
        let extra = {
            let data = bytes_of(&self.input, body);
            match ty {
                rtype::HEADER_TRACING_DATA => Cursor::new(data, self.be).u32().unwrap_or(0) as u64,
                // struct perf_record_auxtrace is 48 bytes; another size is
                // not one (ChromeOS perf of 2013 numbered its own header
                // records 69-80), and its first field no payload size.
                rtype::AUXTRACE if size == 48 => Cursor::new(data, self.be).u64().unwrap_or(0),
                rtype::AUXTRACE => {
                    if !self.odd_auxtrace {
                        self.odd_auxtrace = true;
                        diags.report(
                            Position::Byte(at),
                            Severity::Warning,
                            "unknown_record",
                            format!(
                                "a record of type 71 of {size} bytes is not an AUXTRACE record (48 bytes): a perf that numbered its records differently? Records of this kind are skipped"
                            ),
                        )?;
                    }
                    0
                }
                _ => 0,
            }
        };
        match ty {
            rtype::AUXTRACE_INFO => {
                self.stats.aux_kind = Cursor::new(bytes_of(&self.input, body), self.be).u32();
            }
            rtype::AUXTRACE if size == 48 => {
                self.stats.aux_records += 1;
                self.stats.aux_bytes += extra;
            }
            _ => {}
        }
        if extra == 0 {
            return Ok(true);
        }
        // The tracing data is read (tracepoint formats; a few MB at most in
        // real files, so a larger claim is skipped), the rest skipped.
        let keep = ty == rtype::HEADER_TRACING_DATA && extra <= 256 << 20;
        let mut tracing = Vec::new();
        let skipped = match &mut self.input {
            Input::Map(m) => {
                let n = extra.min(end.min(m.len() as u64).saturating_sub(self.pos));
                if keep {
                    tracing.extend_from_slice(&m[self.pos as usize..(self.pos + n) as usize]);
                }
                n
            }
            Input::Stream(r) if keep => r
                .take(extra)
                .read_to_end(&mut tracing)
                .map_err(|e| Error::io("input", e))? as u64,
            Input::Stream(r) => {
                io::copy(&mut r.take(extra), &mut io::sink()).map_err(|e| Error::io("input", e))?
            }
        };
        if !tracing.is_empty() {
            self.meta.tracing_at = Some(at);
            self.meta.add_tracing_data(&tracing);
            if name_tracepoints(&mut self.events, &self.meta.tracepoints) {
                self.events_version += 1;
            }
        }
        self.pos += skipped;
        if skipped < extra {
            diags.report(
                Position::Byte(at),
                Severity::Error,
                "truncated",
                format!("input ends inside the payload of a record of type {ty}"),
            )?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Handles one framed record: header records update the metadata,
    /// FINISHED_ROUND flushes, kernel records are queued in time order.
    fn handle(
        &mut self,
        ty: u32,
        misc: u16,
        body: Body,
        position: Position,
        diags: &mut Diagnostics,
    ) -> Result<()> {
        if ty > rtype::MAX_KERNEL && ty != rtype::FINISHED_ROUND {
            // Header records change the reader's state while being read:
            // work on a copy (they are few).
            let data = bytes_of(&self.input, &body).to_vec();
            self.recycle(body);
            return self.handle_user(ty, misc, data, position, diags);
        }
        match ty {
            rtype::FINISHED_ROUND => {
                self.flush_until(self.limit);
                self.limit = self.max_seen;
                self.recycle(body);
            }
            t if t > rtype::LAST_KNOWN_KERNEL && t <= rtype::MAX_KERNEL => {
                diags.report(
                    position,
                    Severity::Warning,
                    "unknown_record",
                    format!(
                        "unknown kernel record type {t} ({} bytes); skipped",
                        body.len() + 8
                    ),
                )?;
                self.recycle(body);
            }
            t if t <= rtype::MAX_KERNEL => {
                if self.events.is_empty() {
                    diags.report(
                        position,
                        Severity::Error,
                        "no_attributes",
                        format!("record of type {t} before any event attribute; skipped"),
                    )?;
                    return Ok(());
                }
                let Some(event) = self.event_of(t, bytes_of(&self.input, &body)) else {
                    diags.report(
                        position,
                        Severity::Error,
                        "unknown_event_id",
                        format!(
                            "record of type {t} carries an event id that no attribute has; skipped"
                        ),
                    )?;
                    self.recycle(body);
                    return Ok(());
                };
                let ts =
                    self.timestamp_of(t, bytes_of(&self.input, &body), &self.events[event].attr);
                let q = Queued {
                    ts: ts.unwrap_or(0),
                    record_type: t,
                    event: event as u32,
                    misc,
                    body,
                };
                match ts {
                    None => self.ready.push_back(q),
                    Some(ts) => {
                        self.max_seen = self.max_seen.max(ts);
                        self.pending_bytes += q.body.len() + 64;
                        self.pending.push(q);
                        if self.pending_bytes > MAX_QUEUED_BYTES {
                            if !self.warned_overflow {
                                self.warned_overflow = true;
                                diags.report(
                                    position,
                                    Severity::Warning,
                                    "ordering_window",
                                    "more than 256 MB of records without a FINISHED_ROUND: flushing early, some records may be out of time order",
                                )?;
                            }
                            self.sort_pending();
                            let mut n = 0;
                            let mut bytes = 0;
                            while bytes < MAX_QUEUED_BYTES / 2 && n < self.pending.len() {
                                bytes += self.pending[n].body.len() + 64;
                                n += 1;
                            }
                            self.pending_bytes -= bytes;
                            self.ready.extend(self.pending.drain(..n));
                        }
                    }
                }
            }
            _ => unreachable!("user records are handled by handle_user"),
        }
        Ok(())
    }

    /// Releases the mapped pages below the oldest record still queued.
    fn release_consumed(&mut self) {
        self.release_check = self.pos as usize + RELEASE_EVERY;
        let Input::Map(m) = &self.input else { return };
        let off = |q: &Queued| match q.body {
            Body::Map { off, .. } => off,
            Body::Own(..) => usize::MAX,
        };
        let low = self
            .pending
            .iter()
            .chain(self.ready.iter())
            .chain(self.current.iter())
            .map(off)
            .min()
            .unwrap_or(usize::MAX)
            .min(self.held_low)
            .min(self.hold.as_ref().map_or(usize::MAX, |h| h.low()))
            .min(self.pos as usize)
            .saturating_sub(RELEASE_EVERY)
            & !0xffff;
        if low > self.released {
            crate::mapped::release(m, self.released, low - self.released);
            self.released = low;
            if let Some(h) = &self.hold {
                h.released.store(low, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    pub(super) fn recycle(&mut self, body: Body) {
        if let Body::Own(v, _) = body {
            self.pool.push(v);
        }
    }

    /// Header and other perf (user) records.
    fn handle_user(
        &mut self,
        ty: u32,
        misc: u16,
        body: Vec<u8>,
        position: Position,
        diags: &mut Diagnostics,
    ) -> Result<()> {
        match ty {
            rtype::HEADER_ATTR => {
                let Some(attr) = Attr::parse(&body, self.be) else {
                    diags.report(
                        position,
                        Severity::Error,
                        "bad_attr",
                        "malformed HEADER_ATTR record; skipped",
                    )?;
                    return Ok(());
                };
                let asz = (attr.size as usize).max(64).min(body.len());
                let mut c = Cursor::new(&body[asz..], self.be);
                let ids = (0..(body.len() - asz) / 8)
                    .filter_map(|_| c.u64())
                    .collect();
                self.events.push(EventDesc {
                    attr,
                    name: None,
                    ids,
                });
                self.rebuild_ids();
            }
            rtype::HEADER_FEATURE => {
                let mut c = Cursor::new(&body, self.be);
                let id = c.u64().unwrap_or(u64::MAX);
                if id < 256 {
                    let ok = self.meta.add_feature(id as u32, &body[8..], self.be);
                    if !ok {
                        diags.report(
                            position,
                            Severity::Warning,
                            "bad_feature_section",
                            format!("feature {id} record is malformed; skipped"),
                        )?;
                    }
                    if let Some(desc) = self.meta.event_desc.take() {
                        name_events(&mut self.events, &desc);
                        self.meta.event_desc = Some(desc);
                        self.events_version += 1;
                    }
                }
            }
            rtype::HEADER_EVENT_TYPE => {
                if let Some(t) = parse_event_type(&body, self.be) {
                    self.meta.tracepoints.push(t);
                    if name_tracepoints(&mut self.events, &self.meta.tracepoints) {
                        self.events_version += 1;
                    }
                }
            }
            rtype::HEADER_BUILD_ID => {
                if let Some(e) = parse_build_id_body(&body, misc, self.be) {
                    self.meta.build_ids.push(e);
                }
            }
            rtype::EVENT_UPDATE => {
                // struct perf_record_event_update { u64 type; u64 id; ... }
                let mut c = Cursor::new(&body, self.be);
                if let (Some(kind), Some(id)) = (c.u64(), c.u64()) {
                    const PERF_EVENT_UPDATE_NAME: u64 = 2;
                    if kind == PERF_EVENT_UPDATE_NAME {
                        let name = String::from_utf8_lossy(c.cstr_rest()).into_owned();
                        if let Some(&i) = self.id_to_event.get(&id) {
                            self.events[i].name = Some(name);
                            self.events_version += 1;
                        }
                    }
                }
            }
            t if t <= rtype::LAST_KNOWN_USER => {
                // Known perf user records that carry nothing trawl keeps
                // (id index, thread/cpu maps, stat, time conv...).
            }
            t => {
                diags.report(
                    position,
                    Severity::Warning,
                    "unknown_record",
                    format!(
                        "unknown record type {t} ({} bytes); skipped",
                        body.len() + 8
                    ),
                )?;
            }
        }
        Ok(())
    }

    /// Sorts the queued records by (time, arrival). The queue is mostly
    /// sorted already (per-CPU buffers arrive in order), which the stable
    /// sort exploits.
    fn sort_pending(&mut self) {
        self.pending.sort_by_key(|q| q.ts);
    }

    /// Delivers the queued records not newer than `limit`, in time order.
    pub(super) fn flush_until(&mut self, limit: u64) {
        if self.pending.is_empty() {
            return;
        }
        self.sort_pending();
        let n = self.pending.partition_point(|q| q.ts <= limit);
        let bytes: usize = self.pending[..n].iter().map(|q| q.body.len() + 64).sum();
        self.pending_bytes = self.pending_bytes.saturating_sub(bytes);
        self.ready.extend(self.pending.drain(..n));
    }

    /// The mapped input, where it is one.
    pub(super) fn mapped(&self) -> Option<std::sync::Arc<memmap2::Mmap>> {
        match &self.input {
            Input::Map(m) => Some(std::sync::Arc::clone(m)),
            Input::Stream(_) => None,
        }
    }

    /// Bytes consumed so far (file offset of the next record).
    pub fn position(&self) -> u64 {
        self.pos
    }
}

/// Names the tracepoint events that have none (no EVENT_DESC: perf 3.x,
/// old pipe mode) from the tracing data's or HEADER_EVENT_TYPE's names by
/// id; true if one was named.
fn name_tracepoints(events: &mut [EventDesc], names: &[(u64, String)]) -> bool {
    let mut named = false;
    for e in events
        .iter_mut()
        .filter(|e| e.name.is_none() && e.attr.type_ == 2)
    {
        if let Some((_, n)) = names.iter().find(|(id, _)| *id == e.attr.config) {
            e.name = Some(n.clone());
            named = true;
        }
    }
    named
}

/// Applies names from an EVENT_DESC section: by matching ids, or by position
/// when the counts agree.
fn name_events(events: &mut [EventDesc], desc: &[EventDesc]) {
    let same_count = desc.len() == events.len();
    for (i, e) in events.iter_mut().enumerate() {
        let by_id = desc
            .iter()
            .find(|d| e.ids.first().is_some_and(|id| d.ids.contains(id)));
        let d = by_id.or(if same_count { desc.get(i) } else { None });
        if let Some(d) = d {
            e.name = d.name.clone();
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    //! Pipe-mode streams built byte by byte (the layouts of
    //! tools/perf/Documentation/perf.data-file-format.txt): one event
    //! sampling IP, TID and TIME, its samples, and damaged records.

    use super::*;

    pub(in crate::perf) fn record(ty: u32, body: &[u8]) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&ty.to_le_bytes());
        r.extend_from_slice(&0u16.to_le_bytes());
        r.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
        r.extend_from_slice(body);
        r
    }

    /// The pipe header and a HEADER_ATTR of a 64-byte (first version)
    /// attr: cpu-clock sampling IP | TID | TIME.
    pub(in crate::perf) fn stream() -> Vec<u8> {
        let mut s = b"PERFILE2".to_vec();
        s.extend_from_slice(&16u64.to_le_bytes());
        let mut attr = Vec::new();
        attr.extend_from_slice(&1u32.to_le_bytes()); // PERF_TYPE_SOFTWARE
        attr.extend_from_slice(&64u32.to_le_bytes()); // size
        for v in [0u64, 1000, sample::IP | sample::TID | sample::TIME, 0, 0] {
            attr.extend_from_slice(&v.to_le_bytes()); // config .. flags
        }
        attr.resize(64, 0);
        attr.extend_from_slice(&7u64.to_le_bytes()); // its id
        s.extend(record(rtype::HEADER_ATTR, &attr));
        s
    }

    pub(in crate::perf) fn sample_at(time: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0x401000u64.to_le_bytes());
        b.extend_from_slice(&10u32.to_le_bytes());
        b.extend_from_slice(&11u32.to_le_bytes());
        b.extend_from_slice(&time.to_le_bytes());
        record(rtype::SAMPLE, &b)
    }

    /// The times of the samples read, and the diagnostics.
    fn read(bytes: Vec<u8>) -> (Vec<u64>, Vec<crate::diag::Diagnostic>) {
        let mut r = PerfReader::open_pipe(Box::new(std::io::Cursor::new(bytes)), "t").unwrap();
        let mut d = Diagnostics::new("t", false);
        let mut times = Vec::new();
        while let Some(item) = r.next_record(&mut d).unwrap() {
            if item.is_sample() {
                times.push(item.decode().unwrap().1.time.unwrap());
            }
        }
        (times, d.into_vec())
    }

    #[test]
    fn records_come_in_time_order_within_rounds() {
        let mut s = stream();
        for t in [30, 10, 20] {
            s.extend(sample_at(t));
        }
        s.extend(record(rtype::FINISHED_ROUND, &[]));
        s.extend(sample_at(40));
        s.extend(sample_at(35));
        let (times, diags) = read(s);
        assert_eq!(times, [10, 20, 30, 35, 40]);
        assert!(diags.is_empty(), "{diags:?}");
    }

    #[test]
    fn a_cut_record_is_reported_at_its_offset_and_what_came_before_kept() {
        let mut s = stream();
        s.extend(sample_at(5));
        let at = s.len() as u64;
        let cut = sample_at(6);
        s.extend(&cut[..cut.len() - 3]);
        let (times, diags) = read(s);
        assert_eq!(times, [5]);
        assert_eq!(diags.len(), 1);
        assert_eq!(diags[0].kind, "truncated");
        assert_eq!(diags[0].position, Position::Byte(at));
    }

    #[test]
    fn a_record_shorter_than_its_header_ends_the_input() {
        let mut s = stream();
        s.extend(sample_at(5));
        let at = s.len() as u64;
        let mut bad = sample_at(6);
        bad[6..8].copy_from_slice(&4u16.to_le_bytes());
        s.extend(bad);
        s.extend(sample_at(7));
        let (times, diags) = read(s);
        assert_eq!(times, [5]);
        assert_eq!(diags[0].kind, "bad_record_size");
        assert_eq!(diags[0].position, Position::Byte(at));
    }

    #[test]
    fn compressed_records_carry_records_across_their_boundaries() {
        // Three samples compressed as two records, the second sample split
        // between them; then a third record that stops inside a sample.
        let inner: Vec<u8> = [sample_at(1), sample_at(2), sample_at(3)].concat();
        let half = inner.len() / 2;
        let mut s = stream();
        let first_at = s.len() as u64;
        for part in [&inner[..half], &inner[half..]] {
            s.extend(record(
                rtype::COMPRESSED,
                &zstd::bulk::compress(part, 3).unwrap(),
            ));
        }
        let cut = sample_at(4);
        let last_at = s.len() as u64;
        s.extend(record(
            rtype::COMPRESSED,
            &zstd::bulk::compress(&cut[..10], 3).unwrap(),
        ));
        let (times, diags) = read(s);
        assert_eq!(times, [1, 2, 3]);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].kind, "truncated");
        // The cut record starts right after the three samples of the
        // decompressed stream.
        assert_eq!(
            diags[0].position,
            Position::Compressed {
                record: last_at,
                inner: inner.len() as u64
            }
        );
        assert!(first_at < last_at);
    }
}
