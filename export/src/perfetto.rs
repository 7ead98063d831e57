//! Perfetto's protobuf trace format (`protos/perfetto/trace/trace.proto`
//! in github.com/google/perfetto): a `Trace` is a sequence of
//! `TracePacket`s, each written as its own field-1 record, so the file is
//! written packet by packet.
//!
//! - processes and threads: one `TrackDescriptor` each (`ProcessDescriptor`
//!   with the command of the main thread, `ThreadDescriptor` with the
//!   thread's);
//! - CPU samples: Perfetto's own `PerfSample` packets (its per-thread perf
//!   sample tracks and flame graphs), each with an interned callstack:
//!   frames root first, an inline level a frame of its own, one mapping per
//!   module (path components and build id interned as Perfetto's profilers
//!   write them); strings, frames and callstacks are interned on one packet
//!   sequence the first time a sample needs them;
//! - traced system calls: slices on their thread's track named after the
//!   call, with the arguments, return value and file as debug annotations;
//! - monitoring metrics: a counter track per metric (and entity: a CPU, a
//!   device) under a track per input file, and RAPL power (W) per domain.
//!
//! The packets are deflated 256 KiB at a time into `compressed_packets`
//! packets, as Perfetto compresses its own traces.
//!
//! Times are the trace's clock of `trawl_query::trace` (perf samples as
//! `perf script` prints them; a capture's other inputs moved onto it).

use std::collections::HashMap;

use prost::Message;
use trawl_query::profile::StackProfile;
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

/// Writes packets as `Trace.packet` records (field 1).
struct Out {
    /// The file so far.
    bytes: Vec<u8>,
    /// Packets not yet compressed.
    chunk: Vec<u8>,
    first: bool,
}

/// Packets are written deflated, this much at a time, in
/// `compressed_packets` packets (Perfetto's own way of compressing a trace:
/// each such packet must stay under 512 KiB, and a chunk's packets
/// compress to far less).
const CHUNK: usize = 256 * 1024;

impl Out {
    fn new() -> Out {
        Out {
            bytes: Vec::new(),
            chunk: Vec::new(),
            first: true,
        }
    }

    fn packet(&mut self, mut p: TracePacket) {
        p.trusted_packet_sequence_id = Some(SEQUENCE);
        if self.first {
            p.sequence_flags = Some(CLEARED | NEEDS_STATE);
            p.first_packet_on_sequence = Some(true);
            self.first = false;
        } else {
            p.sequence_flags = Some(NEEDS_STATE);
        }
        record(&p, &mut self.chunk);
        if self.chunk.len() >= CHUNK {
            self.flush();
        }
    }

    /// The packets so far as one `compressed_packets` packet (zlib).
    fn flush(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&self.chunk).expect("writing to memory");
        let deflated = z.finish().expect("writing to memory");
        self.chunk.clear();
        record(
            &TracePacket {
                compressed_packets: Some(deflated),
                ..Default::default()
            },
            &mut self.bytes,
        );
    }

    fn finish(mut self) -> Vec<u8> {
        self.flush();
        self.bytes
    }
}

/// `p` as a `Trace.packet` record (field 1).
fn record(p: &TracePacket, out: &mut Vec<u8>) {
    prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, out);
    p.encode_length_delimited(out)
        .expect("a Vec grows as needed");
}

/// Interned ids (from 1) of strings, frames, mappings and callstacks, and
/// what of them the next packet must carry.
#[derive(Default)]
struct Interned {
    functions: HashMap<u32, u64>,
    paths: HashMap<String, u64>,
    sources: HashMap<u32, u64>,
    build_ids: HashMap<String, u64>,
    mappings: HashMap<Option<u32>, u64>,
    frames: HashMap<(u32, usize), u64>,
    stacks: HashMap<u32, u64>,
    categories: HashMap<&'static str, u64>,
    event_names: HashMap<String, u64>,
    annotation_names: HashMap<String, u64>,
    new: InternedData,
}

fn next(n: usize) -> u64 {
    n as u64 + 1
}

impl Interned {
    fn function(&mut self, p: &StackProfile, s: u32) -> u64 {
        let text = &p.strings[s as usize];
        intern(&mut self.functions, &mut self.new.function_names, s, || {
            text.clone().into_bytes()
        })
    }

    fn source(&mut self, p: &StackProfile, s: u32) -> u64 {
        let text = &p.strings[s as usize];
        intern(&mut self.sources, &mut self.new.source_paths, s, || {
            text.clone().into_bytes()
        })
    }

    fn path(&mut self, part: &str) -> u64 {
        intern(
            &mut self.paths,
            &mut self.new.mapping_paths,
            part.to_string(),
            || part.as_bytes().to_vec(),
        )
    }

    fn mapping(&mut self, p: &StackProfile, module: Option<u32>) -> u64 {
        if let Some(&id) = self.mappings.get(&module) {
            return id;
        }
        let id = next(self.mappings.len());
        self.mappings.insert(module, id);
        let (path, build_id) = match module.map(|m| &p.modules[m as usize]) {
            Some(m) => (m.path.clone(), m.build_id.clone()),
            None => ("[unknown]".to_string(), None),
        };
        // One interned string per path component, as Perfetto's profilers
        // write mappings (it joins them with `/`).
        let parts: Vec<u64> = path
            .split('/')
            .filter(|c| !c.is_empty())
            .map(|c| self.path(c))
            .collect();
        let build_id = build_id.and_then(|b| {
            let raw = hex_bytes(&b)?;
            Some(intern(
                &mut self.build_ids,
                &mut self.new.build_ids,
                b,
                || raw,
            ))
        });
        self.new.mappings.push(Mapping {
            iid: Some(id),
            build_id,
            path_string_ids: parts,
        });
        id
    }

    /// The frame of inline level `level` of location `loc`.
    fn frame(&mut self, p: &StackProfile, loc: u32, level: usize) -> u64 {
        if let Some(&id) = self.frames.get(&(loc, level)) {
            return id;
        }
        let l = &p.locations[loc as usize];
        let line = &l.lines[level];
        let function = self.function(p, line.function);
        let mapping = self.mapping(p, l.module);
        let source = line.file.map(|f| self.source(p, f));
        let id = next(self.frames.len());
        self.frames.insert((loc, level), id);
        self.new.frames.push(Frame {
            iid: Some(id),
            function_name_id: Some(function),
            mapping_id: Some(mapping),
            rel_pc: Some(l.rel_pc),
            source_path_iid: source,
            line_number: (line.line > 0).then_some(line.line),
        });
        id
    }

    fn callstack(&mut self, p: &StackProfile, stack: u32) -> u64 {
        if let Some(&id) = self.stacks.get(&stack) {
            return id;
        }
        let mut frames = Vec::new();
        // Root first: the outermost location first, and in each its
        // outermost inline level (the ELF function) first.
        for &loc in p.stacks[stack as usize].iter().rev() {
            for level in (0..p.locations[loc as usize].lines.len()).rev() {
                frames.push(self.frame(p, loc, level));
            }
        }
        let id = next(self.stacks.len());
        self.stacks.insert(stack, id);
        self.new.callstacks.push(Callstack {
            iid: Some(id),
            frame_ids: frames,
        });
        id
    }

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

/// The interned id (from 1) of `key` in `ids`; when new, its string
/// (`bytes`) goes to `table`, the next packet's interned data.
fn intern<K: std::hash::Hash + Eq>(
    ids: &mut HashMap<K, u64>,
    table: &mut Vec<InternedString>,
    key: K,
    bytes: impl FnOnce() -> Vec<u8>,
) -> u64 {
    if let Some(&id) = ids.get(&key) {
        return id;
    }
    let id = next(ids.len());
    ids.insert(key, id);
    table.push(InternedString {
        iid: Some(id),
        str: Some(bytes()),
    });
    id
}

/// [`intern`] for the tables of names (categories, event and argument
/// names).
fn named<K: std::hash::Hash + Eq + AsRef<str>>(
    ids: &mut HashMap<K, u64>,
    table: &mut Vec<Named>,
    key: K,
) -> u64 {
    if let Some(&id) = ids.get(&key) {
        return id;
    }
    let id = next(ids.len());
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
/// event named `event`) and of what `t` holds.
pub fn write(p: &StackProfile, event: &str, t: &Trace) -> anyhow::Result<Vec<u8>> {
    let mut out = Out::new();
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
        .map(|s| s.capture.as_str())
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
    // Perfetto's times are unsigned: a trace that starts before 0 is moved
    // later as a whole.
    let earliest = p
        .samples
        .iter()
        .filter_map(sample_time)
        .chain(t.spans.iter().map(|s| s.start_ns))
        .chain(t.readings.iter().map(|r| r.at_ns))
        .min()
        .unwrap_or(0);
    let late = earliest.min(0).unsigned_abs();
    let ts = |x: i64| (x as i128 + late as i128) as u64;
    // Names: a process by its main thread's command, a thread by its own.
    for s in &p.samples {
        let comm = &p.strings[s.comm as usize];
        if s.pid == s.tid || !tracks.process_names.contains_key(&(s.capture, s.pid)) {
            tracks
                .process_names
                .insert((s.capture, s.pid), comm.clone());
        }
        tracks.thread_names.insert((s.capture, s.tid), comm.clone());
    }
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
                .or_insert_with(|| comm.clone());
        }
        tracks
            .thread_names
            .entry((cap, tid))
            .or_insert_with(|| comm.clone());
    }
    if !p.samples.is_empty() {
        out.packet(TracePacket {
            trace_packet_defaults: Some(TracePacketDefaults {
                perf_sample_defaults: Some(PerfSampleDefaults {
                    timebase: Some(Timebase {
                        name: Some(event.to_string()),
                    }),
                }),
            }),
            ..Default::default()
        });
    }
    for s in &p.samples {
        let Some(at) = sample_time(s) else { continue };
        tracks.thread(&mut out, s.capture, s.pid, s.tid);
        let callstack = s.stack.map(|st| interned.callstack(p, st));
        let kernel = s
            .stack
            .and_then(|st| p.stacks[st as usize].first())
            .is_some_and(|&l| p.locations[l as usize].kernel);
        out.packet(TracePacket {
            timestamp: Some(ts(at)),
            interned_data: interned.take(),
            perf_sample: Some(PerfSample {
                cpu: None,
                pid: Some(tracks.id(s.capture, s.pid) as u32),
                tid: Some(tracks.id(s.capture, s.tid) as u32),
                callstack_iid: callstack,
                cpu_mode: Some(if kernel { 1 } else { 2 }),
                timebase_count: Some(s.weight.max(0) as u64),
            }),
            ..Default::default()
        });
    }
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
    Ok(out.finish())
}
