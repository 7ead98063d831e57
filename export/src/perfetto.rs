//! Perfetto's protobuf trace format (`protos/perfetto/trace/trace.proto`
//! in github.com/google/perfetto): a `Trace` is a sequence of
//! `TracePacket`s, each written as its own field-1 record, so the file is
//! written packet by packet.
//!
//! - processes and threads: one `TrackDescriptor` each (`ProcessDescriptor`
//!   with the command of the main thread, `ThreadDescriptor` with the
//!   thread's); with several captures, capture k's ids from k ×
//!   [`PID_STRIDE`] and its names ending `[CAPTURE]`;
//! - CPU samples: Perfetto's own `PerfSample` packets (its per-thread perf
//!   sample tracks and flame graphs) with their weight, the event named in
//!   the sequence's defaults, each with an interned callstack: frames root
//!   first, an inline level a frame of its own, one mapping per module
//!   (path components and build id interned as Perfetto's profilers write
//!   them). What the samples name is interned up front, its ids fixed from
//!   the profile's indexes, so that it and the samples are encoded and
//!   deflated in parallel;
//! - spans (`trawl_query::trace`: calls, thread states, tracepoint
//!   instants, event pairs, LBR-timed entries, exhaustion ranges) as track
//!   events on their thread, a track under it, or a track of the capture,
//!   with their arguments as debug annotations (names interned); a slice
//!   that would overlap another without nesting in it goes to the track's
//!   next lane (`NAME (2)`, ...);
//! - counters: a track per metric (and entity) under a track per input
//!   file, RAPL power (W), and each process's mapped bytes under it.
//!
//! The packets are deflated 256 KiB at a time into `compressed_packets`
//! packets, as Perfetto compresses its own traces.
//!
//! Times are the trace's clock of `trawl_query::trace` (one capture: perf
//! samples as `perf script` prints them, its other inputs moved onto it;
//! several: each capture's `t_ns` axis), moved later as a whole if some
//! would be before 0.

use std::collections::{HashMap, HashSet};

use prost::Message;
use trawl_query::profile::{Module, StackProfile};
use trawl_query::trace::{Arg, Place, Trace};

/// Messages of Perfetto's trace format (field numbers as in its .proto
/// files; repeated numbers unpacked, as Perfetto's own writers emit them).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacket {
        #[prost(uint64, optional, tag = "8")]
        pub timestamp: Option<u64>,
        #[prost(uint32, optional, tag = "10")]
        pub trusted_packet_sequence_id: Option<u32>,
        #[prost(message, optional, tag = "11")]
        pub track_event: Option<TrackEvent>,
        #[prost(message, optional, tag = "12")]
        pub interned_data: Option<InternedData>,
        #[prost(uint32, optional, tag = "13")]
        pub sequence_flags: Option<u32>,
        /// Packets (a `Trace`'s records), zlib-deflated.
        #[prost(bytes = "vec", optional, tag = "50")]
        pub compressed_packets: Option<Vec<u8>>,
        #[prost(message, optional, tag = "60")]
        pub track_descriptor: Option<TrackDescriptor>,
        #[prost(message, optional, tag = "59")]
        pub trace_packet_defaults: Option<TracePacketDefaults>,
        #[prost(message, optional, tag = "66")]
        pub perf_sample: Option<PerfSample>,
        #[prost(bool, optional, tag = "87")]
        pub first_packet_on_sequence: Option<bool>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TracePacketDefaults {
        #[prost(message, optional, tag = "12")]
        pub perf_sample_defaults: Option<PerfSampleDefaults>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PerfSampleDefaults {
        #[prost(message, optional, tag = "1")]
        pub timebase: Option<Timebase>,
    }

    /// `PerfEvents.Timebase`: what the samples count.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Timebase {
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InternedData {
        #[prost(message, repeated, tag = "1")]
        pub event_categories: Vec<Named>,
        #[prost(message, repeated, tag = "2")]
        pub event_names: Vec<Named>,
        #[prost(message, repeated, tag = "3")]
        pub debug_annotation_names: Vec<Named>,
        #[prost(message, repeated, tag = "5")]
        pub function_names: Vec<InternedString>,
        #[prost(message, repeated, tag = "6")]
        pub frames: Vec<Frame>,
        #[prost(message, repeated, tag = "7")]
        pub callstacks: Vec<Callstack>,
        #[prost(message, repeated, tag = "16")]
        pub build_ids: Vec<InternedString>,
        #[prost(message, repeated, tag = "17")]
        pub mapping_paths: Vec<InternedString>,
        #[prost(message, repeated, tag = "18")]
        pub source_paths: Vec<InternedString>,
        #[prost(message, repeated, tag = "19")]
        pub mappings: Vec<Mapping>,
    }

    /// `EventCategory`, `EventName`, `DebugAnnotationName`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Named {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InternedString {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(bytes = "vec", optional, tag = "2")]
        pub str: Option<Vec<u8>>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Frame {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(uint64, optional, tag = "2")]
        pub function_name_id: Option<u64>,
        #[prost(uint64, optional, tag = "3")]
        pub mapping_id: Option<u64>,
        #[prost(uint64, optional, tag = "4")]
        pub rel_pc: Option<u64>,
        #[prost(uint64, optional, tag = "5")]
        pub source_path_iid: Option<u64>,
        #[prost(uint32, optional, tag = "6")]
        pub line_number: Option<u32>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Callstack {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        /// Root first, the sampled frame last.
        #[prost(uint64, repeated, packed = "false", tag = "2")]
        pub frame_ids: Vec<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, optional, tag = "1")]
        pub iid: Option<u64>,
        #[prost(uint64, optional, tag = "2")]
        pub build_id: Option<u64>,
        #[prost(uint64, repeated, packed = "false", tag = "7")]
        pub path_string_ids: Vec<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PerfSample {
        #[prost(uint32, optional, tag = "1")]
        pub cpu: Option<u32>,
        #[prost(uint32, optional, tag = "2")]
        pub pid: Option<u32>,
        #[prost(uint32, optional, tag = "3")]
        pub tid: Option<u32>,
        #[prost(uint64, optional, tag = "4")]
        pub callstack_iid: Option<u64>,
        /// `Profiling.CpuMode`: 1 kernel, 2 user.
        #[prost(int32, optional, tag = "5")]
        pub cpu_mode: Option<i32>,
        /// What the sample counts of the timebase (its weight).
        #[prost(uint64, optional, tag = "6")]
        pub timebase_count: Option<u64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackDescriptor {
        #[prost(uint64, optional, tag = "1")]
        pub uuid: Option<u64>,
        #[prost(string, optional, tag = "2")]
        pub name: Option<String>,
        #[prost(message, optional, tag = "3")]
        pub process: Option<ProcessDescriptor>,
        #[prost(message, optional, tag = "4")]
        pub thread: Option<ThreadDescriptor>,
        #[prost(uint64, optional, tag = "5")]
        pub parent_uuid: Option<u64>,
        #[prost(message, optional, tag = "8")]
        pub counter: Option<CounterDescriptor>,
        #[prost(string, optional, tag = "14")]
        pub description: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct CounterDescriptor {
        /// 3: bytes.
        #[prost(int32, optional, tag = "3")]
        pub unit: Option<i32>,
        #[prost(string, optional, tag = "6")]
        pub unit_name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ProcessDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(string, optional, tag = "6")]
        pub process_name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ThreadDescriptor {
        #[prost(int32, optional, tag = "1")]
        pub pid: Option<i32>,
        #[prost(int64, optional, tag = "2")]
        pub tid: Option<i64>,
        #[prost(string, optional, tag = "5")]
        pub thread_name: Option<String>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TrackEvent {
        /// 1 slice begin, 2 slice end, 3 instant, 4 counter.
        #[prost(int32, optional, tag = "9")]
        pub r#type: Option<i32>,
        #[prost(uint64, optional, tag = "11")]
        pub track_uuid: Option<u64>,
        #[prost(uint64, repeated, packed = "false", tag = "3")]
        pub category_iids: Vec<u64>,
        #[prost(uint64, optional, tag = "10")]
        pub name_iid: Option<u64>,
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        #[prost(double, optional, tag = "44")]
        pub double_counter_value: Option<f64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        #[prost(uint64, optional, tag = "1")]
        pub name_iid: Option<u64>,
        #[prost(uint64, optional, tag = "3")]
        pub uint_value: Option<u64>,
        #[prost(int64, optional, tag = "4")]
        pub int_value: Option<i64>,
        #[prost(double, optional, tag = "5")]
        pub double_value: Option<f64>,
        #[prost(string, optional, tag = "6")]
        pub string_value: Option<String>,
    }
}

use proto::*;

/// The packet sequence every packet is on (Perfetto's interning is per
/// sequence).
const SEQUENCE: u32 = 1;
/// `SEQ_INCREMENTAL_STATE_CLEARED`, `SEQ_NEEDS_INCREMENTAL_STATE`.
const CLEARED: u32 = 1;
const NEEDS_STATE: u32 = 2;

/// Writes packets as `Trace.packet` records (field 1), deflated a chunk at
/// a time into `compressed_packets` packets (Perfetto's own way of
/// compressing a trace), to the file as they come; parts encoded elsewhere
/// (in parallel) are appended as they come, compressed already. The first
/// error writing stops the writing; [`Out::finish`] returns it.
struct Out<'w> {
    w: &'w mut dyn std::io::Write,
    written: u64,
    failed: Option<std::io::Error>,
    /// Packets not yet compressed.
    chunk: Vec<u8>,
    first: bool,
}

/// Packets are deflated this much at a time: a `compressed_packets` packet
/// must stay under 512 KiB, and a chunk's packets compress to far less.
const CHUNK: usize = 256 * 1024;

impl<'w> Out<'w> {
    fn new(w: &'w mut dyn std::io::Write) -> Out<'w> {
        Out {
            w,
            written: 0,
            failed: None,
            chunk: Vec::new(),
            first: true,
        }
    }

    fn packet(&mut self, mut p: TracePacket) {
        if self.first {
            p.trusted_packet_sequence_id = Some(SEQUENCE);
            p.sequence_flags = Some(CLEARED | NEEDS_STATE);
            p.first_packet_on_sequence = Some(true);
            self.first = false;
            record(&p, &mut self.chunk);
        } else {
            sequenced(p, &mut self.chunk);
        }
        if self.chunk.len() >= CHUNK {
            self.flush();
        }
    }

    /// Packets compressed elsewhere ([`compressed`]), after those so far.
    fn compressed(&mut self, records: &[u8]) {
        assert!(!self.first, "the first packet clears the state");
        self.flush();
        self.bytes(records);
    }

    fn bytes(&mut self, b: &[u8]) {
        if self.failed.is_none() {
            match self.w.write_all(b) {
                Ok(()) => self.written += b.len() as u64,
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// The packets so far as one `compressed_packets` packet.
    fn flush(&mut self) {
        if !self.chunk.is_empty() {
            let c = compressed(&self.chunk);
            self.bytes(&c);
            self.chunk.clear();
        }
    }

    /// The bytes written.
    fn finish(mut self) -> std::io::Result<u64> {
        self.flush();
        match self.failed {
            Some(e) => Err(e),
            None => self.w.flush().map(|()| self.written),
        }
    }
}

/// `p` on the trace's sequence, after its first packet, as a record.
fn sequenced(mut p: TracePacket, out: &mut Vec<u8>) {
    p.trusted_packet_sequence_id = Some(SEQUENCE);
    p.sequence_flags = Some(NEEDS_STATE);
    record(&p, out);
}

/// Packet records (`raw`) as one `compressed_packets` packet's record
/// (zlib, as Perfetto's trace processor inflates them).
fn compressed(raw: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(
        Vec::with_capacity(raw.len() / 4),
        flate2::Compression::fast(),
    );
    z.write_all(raw).expect("writing to memory");
    let deflated = z.finish().expect("writing to memory");
    let mut out = Vec::with_capacity(deflated.len() + 8);
    record(
        &TracePacket {
            compressed_packets: Some(deflated),
            ..Default::default()
        },
        &mut out,
    );
    out
}

/// `p` as a `Trace.packet` record (field 1).
fn record(p: &TracePacket, out: &mut Vec<u8>) {
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, out);
    p.encode_length_delimited(out)
        .expect("a Vec grows as needed");
}

/// Interned ids (from 1) of the names track events use, and what of them
/// the next packet must carry.
#[derive(Default)]
struct Interned {
    categories: HashMap<&'static str, u64>,
    event_names: HashMap<String, u64>,
    annotation_names: HashMap<String, u64>,
    new: InternedData,
}

impl Interned {
    fn category(&mut self, c: &'static str) -> u64 {
        named(&mut self.categories, &mut self.new.event_categories, c)
    }

    fn event_name(&mut self, n: &str) -> u64 {
        if let Some(&id) = self.event_names.get(n) {
            return id;
        }
        named(
            &mut self.event_names,
            &mut self.new.event_names,
            n.to_string(),
        )
    }

    fn annotation_name(&mut self, n: &str) -> u64 {
        if let Some(&id) = self.annotation_names.get(n) {
            return id;
        }
        named(
            &mut self.annotation_names,
            &mut self.new.debug_annotation_names,
            n.to_string(),
        )
    }

    /// What was interned since the last call, for the next packet.
    fn take(&mut self) -> Option<InternedData> {
        let d = std::mem::take(&mut self.new);
        (d != InternedData::default()).then_some(d)
    }
}

/// The interned ids of what a profile's samples name, fixed before any is
/// written (so that the parts are encoded in parallel): a function name or
/// source path is its string's index + 1, a mapping its module's index + 1
/// (after them: outside any module), a callstack its stack's index + 1,
/// and a location's frames (one per inline level, innermost first) follow
/// those of the locations before it.
struct ProfileIds {
    frame_base: Vec<u64>,
    unknown_mapping: u64,
}

impl ProfileIds {
    fn new(p: &StackProfile) -> ProfileIds {
        let mut frame_base = Vec::with_capacity(p.locations.len());
        let mut next = 1u64;
        for l in &p.locations {
            frame_base.push(next);
            next += l.lines.len() as u64;
        }
        ProfileIds {
            frame_base,
            unknown_mapping: p.modules.len() as u64 + 1,
        }
    }

    fn mapping(&self, module: Option<u32>) -> u64 {
        module.map_or(self.unknown_mapping, |m| m as u64 + 1)
    }
}

/// Cuts `items` into runs whose `size`s sum to about `budget` each.
fn runs<T>(items: &[T], budget: usize, size: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut out = Vec::new();
    let (mut start, mut sum) = (0, 0);
    for (i, x) in items.iter().enumerate() {
        sum += size(x);
        if sum >= budget {
            out.push(&items[start..=i]);
            (start, sum) = (i + 1, 0);
        }
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// Raw bytes a packet of interned data is kept under (several such packets
/// make a chunk).
const INTERNED_PACKET: usize = 64 * 1024;

/// The interned data of everything `p`'s samples name: the mappings (with
/// their path parts and build ids) for one packet, and the function names,
/// source paths, frames and callstacks as compressed records, encoded in
/// parallel.
fn profile_tables(p: &StackProfile, ids: &ProfileIds) -> (InternedData, Vec<Vec<u8>>) {
    use rayon::prelude::*;
    // Mappings: one interned string per path component, as Perfetto's
    // profilers write them (it joins them with `/`).
    let mut parts: HashMap<&str, u64> = HashMap::new();
    let mut head = InternedData::default();
    let mut n_build = 0u64;
    let unknown = Module {
        path: "[unknown]".to_string(),
        build_id: None,
        is_kernel: false,
    };
    for (k, m) in p.modules.iter().chain([&unknown]).enumerate() {
        let path_string_ids = m
            .path
            .split('/')
            .filter(|c| !c.is_empty())
            .map(|c| {
                let n = parts.len() as u64 + 1;
                *parts.entry(c).or_insert_with(|| {
                    head.mapping_paths.push(InternedString {
                        iid: Some(n),
                        str: Some(c.as_bytes().to_vec()),
                    });
                    n
                })
            })
            .collect();
        let build_id = m.build_id.as_deref().and_then(hex_bytes).map(|raw| {
            n_build += 1;
            head.build_ids.push(InternedString {
                iid: Some(n_build),
                str: Some(raw),
            });
            n_build
        });
        head.mappings.push(Mapping {
            iid: Some(k as u64 + 1),
            build_id,
            path_string_ids,
        });
    }
    // The strings used as function names and as source paths.
    let mut function = vec![false; p.strings.len()];
    let mut source = vec![false; p.strings.len()];
    for l in p.locations.iter().flat_map(|l| &l.lines) {
        function[l.function as usize] = true;
        if let Some(f) = l.file {
            source[f as usize] = true;
        }
    }
    let mut strings: Vec<(usize, bool)> = Vec::new();
    for i in 0..p.strings.len() {
        if function[i] {
            strings.push((i, true));
        }
        if source[i] {
            strings.push((i, false));
        }
    }
    let locations: Vec<usize> = (0..p.locations.len()).collect();
    let stacks: Vec<usize> = (0..p.stacks.len()).collect();
    // Each part as packets of about INTERNED_PACKET bytes, a chunk of
    // them deflated together.
    enum Part<'a> {
        Strings(&'a [(usize, bool)]),
        Frames(&'a [usize]),
        Stacks(&'a [usize]),
    }
    let per_chunk = CHUNK / INTERNED_PACKET;
    let mut packets: Vec<Part> = Vec::new();
    packets.extend(
        runs(&strings, INTERNED_PACKET, |&(i, _)| p.strings[i].len() + 4)
            .into_iter()
            .map(Part::Strings),
    );
    packets.extend(
        runs(&locations, INTERNED_PACKET, |&l| {
            16 * p.locations[l].lines.len()
        })
        .into_iter()
        .map(Part::Frames),
    );
    packets.extend(
        runs(&stacks, INTERNED_PACKET, |&s| 4 + 3 * p.stacks[s].len())
            .into_iter()
            .map(Part::Stacks),
    );
    let parts = packets
        .par_chunks(per_chunk.max(1))
        .map(|chunk| {
            let mut raw = Vec::with_capacity(CHUNK + 4096);
            for part in chunk {
                let mut d = InternedData::default();
                match part {
                    Part::Strings(run) => {
                        for &(i, is_function) in *run {
                            let s = InternedString {
                                iid: Some(i as u64 + 1),
                                str: Some(p.strings[i].as_bytes().to_vec()),
                            };
                            if is_function {
                                d.function_names.push(s);
                            } else {
                                d.source_paths.push(s);
                            }
                        }
                    }
                    Part::Frames(run) => {
                        for &loc in *run {
                            let l = &p.locations[loc];
                            let mapping = ids.mapping(l.module);
                            for (k, line) in l.lines.iter().enumerate() {
                                d.frames.push(Frame {
                                    iid: Some(ids.frame_base[loc] + k as u64),
                                    function_name_id: Some(line.function as u64 + 1),
                                    mapping_id: Some(mapping),
                                    rel_pc: Some(l.rel_pc),
                                    source_path_iid: line.file.map(|f| f as u64 + 1),
                                    line_number: (line.line > 0).then_some(line.line),
                                });
                            }
                        }
                    }
                    Part::Stacks(run) => {
                        for &st in *run {
                            // Root first: the outermost location first, and
                            // in each its outermost inline level (the ELF
                            // function) first.
                            let mut frame_ids = Vec::new();
                            for &loc in p.stacks[st].iter().rev() {
                                let base = ids.frame_base[loc as usize];
                                let n = p.locations[loc as usize].lines.len() as u64;
                                frame_ids.extend((0..n).rev().map(|k| base + k));
                            }
                            d.callstacks.push(Callstack {
                                iid: Some(st as u64 + 1),
                                frame_ids,
                            });
                        }
                    }
                }
                sequenced(
                    TracePacket {
                        interned_data: Some(d),
                        ..Default::default()
                    },
                    &mut raw,
                );
            }
            compressed(&raw)
        })
        .collect();
    (head, parts)
}

/// Samples a chunk of `PerfSample` packets holds (each chunk is encoded
/// and compressed on a thread of its own).
const SAMPLES_PER_CHUNK: usize = 4096;
/// Chunks encoded at once: the samples held in memory while writing.
const CHUNKS_AT_ONCE: usize = 64;

/// `p`'s samples (in order, from memory or disk) written as compressed
/// records of `PerfSample` packets, encoded in parallel a batch of chunks
/// at a time: at their time (`at`), with the ids of their process and
/// thread in the trace (`id`).
fn sample_packets(
    p: &StackProfile,
    at: &(dyn Fn(&trawl_query::profile::Sample) -> Option<u64> + Sync),
    id: &(dyn Fn(u32, i32) -> i32 + Sync),
    out: &mut Out,
) -> anyhow::Result<()> {
    use rayon::prelude::*;
    let encode = |run: &[trawl_query::profile::Sample]| {
        let mut raw = Vec::with_capacity(CHUNK + 4096);
        for s in run {
            let Some(t) = at(s) else { continue };
            let kernel = s
                .stack
                .and_then(|st| p.stacks[st as usize].first())
                .is_some_and(|&l| p.locations[l as usize].kernel);
            sequenced(
                TracePacket {
                    timestamp: Some(t),
                    perf_sample: Some(PerfSample {
                        cpu: None,
                        pid: Some(id(s.capture, s.pid) as u32),
                        tid: Some(id(s.capture, s.tid) as u32),
                        callstack_iid: s.stack.map(|st| st as u64 + 1),
                        cpu_mode: Some(if kernel { 1 } else { 2 }),
                        timebase_count: Some(s.weight.max(0) as u64),
                    }),
                    ..Default::default()
                },
                &mut raw,
            );
        }
        compressed(&raw)
    };
    if p.spilled.is_none() {
        for r in p
            .samples
            .par_chunks(SAMPLES_PER_CHUNK)
            .map(encode)
            .collect::<Vec<_>>()
        {
            out.compressed(&r);
        }
        return Ok(());
    }
    let mut samples = p.sample_iter();
    let mut batch = Vec::with_capacity(SAMPLES_PER_CHUNK * CHUNKS_AT_ONCE);
    loop {
        batch.clear();
        for s in samples.by_ref().take(SAMPLES_PER_CHUNK * CHUNKS_AT_ONCE) {
            batch.push(s?);
        }
        if batch.is_empty() {
            return Ok(());
        }
        for r in batch
            .par_chunks(SAMPLES_PER_CHUNK)
            .map(encode)
            .collect::<Vec<_>>()
        {
            out.compressed(&r);
        }
    }
}

/// The interned id (from 1) of a name in `ids`; when new, it goes to
/// `table`, the next packet's interned data.
fn named<K: std::hash::Hash + Eq + AsRef<str>>(
    ids: &mut HashMap<K, u64>,
    table: &mut Vec<Named>,
    key: K,
) -> u64 {
    if let Some(&id) = ids.get(&key) {
        return id;
    }
    let id = ids.len() as u64 + 1;
    table.push(Named {
        iid: Some(id),
        name: Some(key.as_ref().to_string()),
    });
    ids.insert(key, id);
    id
}

/// `abcd…` as bytes.
fn hex_bytes(h: &str) -> Option<Vec<u8>> {
    if !h.len().is_multiple_of(2) {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Process and thread ids in a trace of several captures: capture `k`'s
/// process `p` is `k × PID_STRIDE + p` (Perfetto knows a process by its
/// id alone; Linux ids stay under 4,194,304).
pub const PID_STRIDE: i32 = 10_000_000;
/// The most captures one trace holds (their ids stay 32-bit).
pub const MAX_CAPTURES: usize = 200;

/// A track and the slices open on it (ends, innermost last).
struct Lane {
    uuid: u64,
    open: Vec<i64>,
}

/// Tracks of processes, threads and named tracks, made when first needed,
/// and the lanes of each: a slice that would overlap one already on a
/// track without nesting in it goes to the track's next lane.
#[derive(Default)]
struct Tracks {
    relative: bool,
    processes: HashMap<(u32, i32), u64>,
    threads: HashMap<(u32, i32), u64>,
    /// Named tracks by parent (0: none) and name.
    named: HashMap<(u64, String), u64>,
    /// A track's lanes (the track itself first), its name and parent.
    lanes: HashMap<u64, (Vec<Lane>, String, u64)>,
    process_names: HashMap<(u32, i32), String>,
    thread_names: HashMap<(u32, i32), String>,
    capture_names: Vec<String>,
    next_uuid: u64,
}

impl Tracks {
    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    /// The id capture `cap`'s process or thread `x` has in the trace.
    fn id(&self, cap: u32, x: i32) -> i32 {
        if self.relative {
            cap as i32 * PID_STRIDE + x
        } else {
            x
        }
    }

    fn process(&mut self, out: &mut Out, cap: u32, pid: i32) -> u64 {
        if let Some(&u) = self.processes.get(&(cap, pid)) {
            return u;
        }
        let u = self.uuid();
        self.processes.insert((cap, pid), u);
        let mut name = self
            .process_names
            .get(&(cap, pid))
            .cloned()
            .unwrap_or_else(|| format!("pid {pid}"));
        if self.relative {
            name = format!("{name} [{}]", self.capture_names[cap as usize]);
        }
        out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                process: Some(ProcessDescriptor {
                    pid: Some(self.id(cap, pid)),
                    process_name: Some(name),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        u
    }

    /// The track of thread `tid` of capture `cap` (in process `pid`),
    /// described in `out` when new.
    fn thread(&mut self, out: &mut Out, cap: u32, pid: i32, tid: i32) -> u64 {
        if let Some(&u) = self.threads.get(&(cap, tid)) {
            return u;
        }
        self.process(out, cap, pid);
        let u = self.uuid();
        self.threads.insert((cap, tid), u);
        let name = self
            .thread_names
            .get(&(cap, tid))
            .or_else(|| self.process_names.get(&(cap, pid)))
            .cloned()
            .unwrap_or_else(|| format!("tid {tid}"));
        out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                thread: Some(ThreadDescriptor {
                    pid: Some(self.id(cap, pid)),
                    tid: Some(self.id(cap, tid) as i64),
                    thread_name: Some(name),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        self.lanes.insert(u, (Vec::new(), "slices".into(), u));
        u
    }

    /// The track named `name` under `parent` (0: a top-level track).
    fn named(
        &mut self,
        out: &mut Out,
        parent: u64,
        name: &str,
        counter: Option<CounterDescriptor>,
    ) -> u64 {
        if let Some(&u) = self.named.get(&(parent, name.to_string())) {
            return u;
        }
        let u = self.uuid();
        self.named.insert((parent, name.to_string()), u);
        out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                name: Some(name.to_string()),
                parent_uuid: (parent != 0).then_some(parent),
                counter,
                ..Default::default()
            }),
            ..Default::default()
        });
        self.lanes.insert(u, (Vec::new(), name.to_string(), parent));
        u
    }

    /// The lane of `track` a slice `[a, b)` (an instant: `b` none) goes on.
    fn lane(&mut self, out: &mut Out, track: u64, a: i64, b: Option<i64>) -> u64 {
        let (lanes, name, parent) = self
            .lanes
            .entry(track)
            .or_insert_with(|| (Vec::new(), "slices".into(), track));
        if lanes.is_empty() {
            lanes.push(Lane {
                uuid: track,
                open: Vec::new(),
            });
        }
        for l in lanes.iter_mut() {
            while l.open.last().is_some_and(|&e| e <= a) {
                l.open.pop();
            }
            let end = b.unwrap_or(a);
            if l.open.last().is_none_or(|&e| e >= end) {
                if let Some(b) = b {
                    l.open.push(b);
                }
                return l.uuid;
            }
        }
        // A new lane: beside the track (a thread's: under it).
        let k = lanes.len() + 1;
        let (name, parent) = (format!("{name} ({k})"), *parent);
        let u = self.next_uuid + 1;
        self.next_uuid = u;
        out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                name: Some(name),
                parent_uuid: (parent != 0).then_some(parent),
                ..Default::default()
            }),
            ..Default::default()
        });
        let lanes = &mut self.lanes.get_mut(&track).expect("made above").0;
        lanes.push(Lane {
            uuid: u,
            open: b.into_iter().collect(),
        });
        u
    }
}

fn annotation(interned: &mut Interned, name: &str, v: &Arg) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name_iid: Some(interned.annotation_name(name)),
        ..Default::default()
    };
    match v {
        Arg::Int(i) => a.int_value = Some(*i),
        Arg::Uint(u) => a.uint_value = Some(*u),
        Arg::Double(d) => a.double_value = Some(*d),
        Arg::Text(s) => a.string_value = Some(s.clone()),
    }
    a
}

/// The trace of the samples of `p` (kept apart, with their times; their
/// event named `event`) and of what `t` holds, written to `w` as it is
/// made; returns the bytes written. The samples are read twice (their
/// threads, then the packets), from memory or from the runs on disk.
pub fn write(
    p: &StackProfile,
    event: &str,
    t: &Trace,
    w: &mut dyn std::io::Write,
) -> anyhow::Result<u64> {
    let mut out = Out::new(w);
    let mut interned = Interned::default();
    let mut tracks = Tracks {
        relative: t.relative,
        ..Default::default()
    };
    // Captures by index: the samples' first, then the others'.
    let mut caps: HashMap<String, u32> = HashMap::new();
    let mut add = |c: &str, names: &mut Vec<String>| {
        if !caps.contains_key(c) {
            caps.insert(c.to_string(), names.len() as u32);
            names.push(c.to_string());
        }
    };
    let mut names = Vec::new();
    for c in &p.captures {
        add(c, &mut names);
    }
    let mut others: Vec<&str> = t
        .spans
        .iter()
        .map(|s| &*s.capture)
        .chain(t.readings.iter().map(|r| r.capture.as_str()))
        .collect();
    others.sort_unstable();
    others.dedup();
    for c in others {
        add(c, &mut names);
    }
    if t.relative && names.len() > MAX_CAPTURES {
        anyhow::bail!(
            "a Perfetto trace holds at most {MAX_CAPTURES} captures ({} selected): select fewer with --capture",
            names.len()
        );
    }
    tracks.capture_names = names;
    let cap_of = |c: &str| caps[c];
    let shift = |c: &str| t.sample_shift.get(c).copied().unwrap_or(0);
    let sample_time = |s: &trawl_query::profile::Sample| {
        s.time_ns
            .map(|x| x + shift(&p.captures[s.capture as usize]))
    };
    // The samples' threads in order of first use, their names (a process
    // by its main thread's command, a thread by its own) and the first
    // time.
    let mut earliest: Option<i64> = None;
    let mut threads: Vec<(u32, i32, i32)> = Vec::new();
    let mut seen: HashSet<(u32, i32, i32)> = HashSet::new();
    for s in p.sample_iter() {
        let s = s?;
        if let Some(x) = sample_time(&s) {
            earliest = Some(earliest.map_or(x, |e| e.min(x)));
            if seen.insert((s.capture, s.pid, s.tid)) {
                threads.push((s.capture, s.pid, s.tid));
            }
        }
        let comm = &p.strings[s.comm as usize];
        if s.pid == s.tid || !tracks.process_names.contains_key(&(s.capture, s.pid)) {
            tracks
                .process_names
                .insert((s.capture, s.pid), comm.clone());
        }
        tracks.thread_names.insert((s.capture, s.tid), comm.clone());
    }
    drop(seen);
    // Perfetto's times are unsigned: a trace that starts before 0 is moved
    // later as a whole.
    let earliest = earliest
        .into_iter()
        .chain(t.spans.iter().map(|s| s.start_ns))
        .chain(t.readings.iter().map(|r| r.at_ns))
        .min()
        .unwrap_or(0);
    let late = earliest.min(0).unsigned_abs();
    let ts = |x: i64| (x as i128 + late as i128) as u64;
    for s in &t.spans {
        let (Some(tid), Some(comm)) = (s.tid, &s.comm) else {
            continue;
        };
        let cap = cap_of(&s.capture);
        let pid = s.pid.unwrap_or(tid);
        if pid == tid || !tracks.process_names.contains_key(&(cap, pid)) {
            tracks
                .process_names
                .entry((cap, pid))
                .or_insert_with(|| comm.to_string());
        }
        tracks
            .thread_names
            .entry((cap, tid))
            .or_insert_with(|| comm.to_string());
    }
    // The first packet: what the samples count (and the state cleared).
    out.packet(TracePacket {
        trace_packet_defaults: (p.sample_len() > 0).then(|| TracePacketDefaults {
            perf_sample_defaults: Some(PerfSampleDefaults {
                timebase: Some(Timebase {
                    name: Some(event.to_string()),
                }),
            }),
        }),
        ..Default::default()
    });
    // What the samples name, then their threads, then the samples.
    let ids = ProfileIds::new(p);
    let (mappings, tables) = profile_tables(p, &ids);
    out.packet(TracePacket {
        interned_data: Some(mappings),
        ..Default::default()
    });
    for r in tables {
        out.compressed(&r);
    }
    for (cap, pid, tid) in threads {
        tracks.thread(&mut out, cap, pid, tid);
    }
    let id = |cap: u32, x: i32| tracks.id(cap, x);
    let at = |s: &trawl_query::profile::Sample| sample_time(s).map(ts);
    sample_packets(p, &at, &id, &mut out)?;
    // Spans in time order, a slice before the slices it holds.
    let mut order: Vec<usize> = (0..t.spans.len()).collect();
    order.sort_by_key(|&i| {
        let s = &t.spans[i];
        (s.start_ns, std::cmp::Reverse(s.duration_ns.unwrap_or(-1)))
    });
    for i in order {
        let s = &t.spans[i];
        let cap = cap_of(&s.capture);
        let thread = |tracks: &mut Tracks, out: &mut Out| {
            s.tid
                .map(|tid| tracks.thread(out, cap, s.pid.unwrap_or(tid), tid))
        };
        let capture_track = |tracks: &mut Tracks, out: &mut Out, name: &str| {
            let name = if t.relative {
                format!("{name} [{}]", s.capture)
            } else {
                name.to_string()
            };
            tracks.named(out, 0, &name, None)
        };
        let track = match (&s.place, thread(&mut tracks, &mut out)) {
            (Place::Thread, Some(u)) => u,
            (Place::ThreadTrack(n), Some(u)) => tracks.named(&mut out, u, n, None),
            (Place::Capture(n), _) => capture_track(&mut tracks, &mut out, n),
            (_, None) => capture_track(&mut tracks, &mut out, s.category),
        };
        let start = s.start_ns;
        let end = s.duration_ns.map(|d| start + d);
        let lane = tracks.lane(&mut out, track, start, end);
        let name = interned.event_name(&s.name);
        let category = interned.category(s.category);
        let args = s
            .args
            .iter()
            .map(|(n, v)| annotation(&mut interned, n, v))
            .collect();
        out.packet(TracePacket {
            timestamp: Some(ts(start)),
            interned_data: interned.take(),
            track_event: Some(TrackEvent {
                r#type: Some(if end.is_some() { 1 } else { 3 }),
                track_uuid: Some(lane),
                category_iids: vec![category],
                name_iid: Some(name),
                debug_annotations: args,
                ..Default::default()
            }),
            ..Default::default()
        });
        if let Some(end) = end {
            out.packet(TracePacket {
                timestamp: Some(ts(end)),
                track_event: Some(TrackEvent {
                    r#type: Some(2),
                    track_uuid: Some(lane),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
    }
    // Counters: a metric's track per input, metric and entity under a
    // track per input; a process's under its process.
    for r in &t.readings {
        let cap = cap_of(&r.capture);
        let counter = || CounterDescriptor {
            unit: (r.unit == Some("bytes")).then_some(3),
            unit_name: r.unit.filter(|&u| u != "bytes").map(str::to_string),
        };
        let series = match &r.entity {
            Some(e) => format!("{}[{e}]", r.metric),
            None => r.metric.clone(),
        };
        let track = match r.pid {
            Some(pid) => {
                let parent = tracks.process(&mut out, cap, pid);
                tracks.named(&mut out, parent, &series, Some(counter()))
            }
            None => {
                let group = if t.relative {
                    format!("{} [{}]", r.input, r.capture)
                } else {
                    r.input.clone()
                };
                let parent = tracks.named(&mut out, 0, &group, None);
                tracks.named(&mut out, parent, &series, Some(counter()))
            }
        };
        out.packet(TracePacket {
            timestamp: Some(ts(r.at_ns)),
            track_event: Some(TrackEvent {
                r#type: Some(4),
                track_uuid: Some(track),
                double_counter_value: Some(r.value),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    Ok(out.finish()?)
}
