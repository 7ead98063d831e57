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
use trawl_query::trace::{Call, Reading};

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
        #[prost(message, optional, tag = "66")]
        pub perf_sample: Option<PerfSample>,
        #[prost(bool, optional, tag = "87")]
        pub first_packet_on_sequence: Option<bool>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct InternedData {
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
        #[prost(string, repeated, tag = "22")]
        pub categories: Vec<String>,
        #[prost(string, optional, tag = "23")]
        pub name: Option<String>,
        #[prost(message, repeated, tag = "4")]
        pub debug_annotations: Vec<DebugAnnotation>,
        #[prost(double, optional, tag = "44")]
        pub double_counter_value: Option<f64>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct DebugAnnotation {
        #[prost(string, optional, tag = "10")]
        pub name: Option<String>,
        #[prost(int64, optional, tag = "4")]
        pub int_value: Option<i64>,
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

/// `abcd…` as bytes.
fn hex_bytes(h: &str) -> Option<Vec<u8>> {
    if h.len() % 2 != 0 {
        return None;
    }
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(h.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Tracks of processes and threads, made when first needed.
#[derive(Default)]
struct Tracks {
    processes: HashMap<(u32, i32), u64>,
    threads: HashMap<(u32, i32), u64>,
    next_uuid: u64,
}

impl Tracks {
    fn uuid(&mut self) -> u64 {
        self.next_uuid += 1;
        self.next_uuid
    }

    /// The track of thread `tid` of capture `cap` (in process `pid`),
    /// described in `out` when new.
    fn thread(&mut self, out: &mut Out, cap: u32, pid: i32, tid: i32, name: &str) -> u64 {
        if let Some(&u) = self.threads.get(&(cap, tid)) {
            return u;
        }
        if !self.processes.contains_key(&(cap, pid)) {
            let u = self.uuid();
            self.processes.insert((cap, pid), u);
            out.packet(TracePacket {
                track_descriptor: Some(TrackDescriptor {
                    uuid: Some(u),
                    process: Some(ProcessDescriptor {
                        pid: Some(pid),
                        process_name: Some(name.to_string()),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            });
        }
        let u = self.uuid();
        self.threads.insert((cap, tid), u);
        out.packet(TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u),
                thread: Some(ThreadDescriptor {
                    pid: Some(pid),
                    tid: Some(tid as i64),
                    thread_name: Some(name.to_string()),
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        u
    }
}

fn annotation(name: &str, v: impl Into<Annotated>) -> DebugAnnotation {
    let mut a = DebugAnnotation {
        name: Some(name.to_string()),
        ..Default::default()
    };
    match v.into() {
        Annotated::Int(i) => a.int_value = Some(i),
        Annotated::Text(s) => a.string_value = Some(s),
    }
    a
}

enum Annotated {
    Int(i64),
    Text(String),
}

impl From<i64> for Annotated {
    fn from(v: i64) -> Self {
        Annotated::Int(v)
    }
}

impl From<String> for Annotated {
    fn from(v: String) -> Self {
        Annotated::Text(v)
    }
}

/// What a trace holds besides the samples.
pub struct Extra<'a> {
    pub calls: &'a [Call],
    pub readings: &'a [Reading],
}

/// The trace of the samples of `p` (kept apart, with their times), the
/// traced calls and the metric readings.
pub fn write(p: &StackProfile, extra: &Extra) -> Vec<u8> {
    let calls = extra.calls;
    let mut out = Out::new();
    let mut interned = Interned::default();
    let mut tracks = Tracks::default();
    // Processes first named by their main thread's command.
    let mut main_comm: HashMap<(u32, i32), u32> = HashMap::new();
    for s in &p.samples {
        if s.pid == s.tid || !main_comm.contains_key(&(s.capture, s.pid)) {
            main_comm.insert((s.capture, s.pid), s.comm);
        }
    }
    for s in &p.samples {
        let Some(t) = s.time_ns else { continue };
        let name = &p.strings[main_comm
            .get(&(s.capture, s.pid))
            .copied()
            .unwrap_or(s.comm) as usize];
        // The thread's own command names its track.
        let thread_name = &p.strings[s.comm as usize];
        if !tracks.threads.contains_key(&(s.capture, s.tid)) {
            if s.pid == s.tid {
                tracks.thread(&mut out, s.capture, s.pid, s.tid, name);
            } else {
                tracks.thread(&mut out, s.capture, s.pid, s.tid, thread_name);
            }
        }
        let callstack = s.stack.map(|st| interned.callstack(p, st));
        let kernel = s
            .stack
            .and_then(|st| p.stacks[st as usize].first())
            .is_some_and(|&l| p.locations[l as usize].kernel);
        out.packet(TracePacket {
            timestamp: Some(t.max(0) as u64),
            interned_data: interned.take(),
            perf_sample: Some(PerfSample {
                cpu: None,
                pid: Some(s.pid as u32),
                tid: Some(s.tid as u32),
                callstack_iid: callstack,
                cpu_mode: Some(if kernel { 1 } else { 2 }),
            }),
            ..Default::default()
        });
    }
    // Captures by name, as the samples number them.
    let cap_index: HashMap<&str, u32> = p
        .captures
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i as u32))
        .collect();
    let mut next_cap = p.captures.len() as u32;
    let mut other_caps: HashMap<String, u32> = HashMap::new();
    for c in calls {
        let cap = match cap_index.get(c.capture.as_str()) {
            Some(&i) => i,
            None => *other_caps.entry(c.capture.clone()).or_insert_with(|| {
                next_cap += 1;
                next_cap - 1
            }),
        };
        let pid = c.pid.unwrap_or(c.tid);
        let name = c.comm.clone().unwrap_or_else(|| c.tid.to_string());
        let track = tracks.thread(&mut out, cap, pid, c.tid, &name);
        let start = c.start_ns.max(0) as u64;
        let mut args = vec![annotation("args", c.args.clone())];
        if let Some(r) = &c.ret {
            args.push(annotation("ret", r.clone()));
        }
        if let Some(f) = &c.fd_path {
            args.push(annotation("file", f.clone()));
        }
        match c.duration_ns {
            Some(d) => {
                out.packet(TracePacket {
                    timestamp: Some(start),
                    track_event: Some(TrackEvent {
                        r#type: Some(1),
                        track_uuid: Some(track),
                        categories: vec!["syscall".into()],
                        name: Some(c.name.clone()),
                        debug_annotations: args,
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                out.packet(TracePacket {
                    timestamp: Some(start + d.max(0) as u64),
                    track_event: Some(TrackEvent {
                        r#type: Some(2),
                        track_uuid: Some(track),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
            }
            None => out.packet(TracePacket {
                timestamp: Some(start),
                track_event: Some(TrackEvent {
                    r#type: Some(3),
                    track_uuid: Some(track),
                    categories: vec!["syscall".into()],
                    name: Some(c.name.clone()),
                    debug_annotations: args,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }
    }
    // Metric readings: a counter track per input, metric and entity,
    // under a track per capture and input.
    let mut series: HashMap<(&str, &str, &str, Option<&str>), u64> = HashMap::new();
    let mut groups: HashMap<(&str, &str), u64> = HashMap::new();
    for r in extra.readings {
        let key = (
            r.capture.as_str(),
            r.input.as_str(),
            r.metric.as_str(),
            r.entity.as_deref(),
        );
        let track = match series.get(&key) {
            Some(&u) => u,
            None => {
                let group = match groups.get(&(key.0, key.1)) {
                    Some(&g) => g,
                    None => {
                        let g = tracks.uuid();
                        groups.insert((key.0, key.1), g);
                        let name = if p.captures.len() > 1 || cap_index.len() > 1 {
                            format!("{} ({})", r.input, r.capture)
                        } else {
                            r.input.clone()
                        };
                        out.packet(TracePacket {
                            track_descriptor: Some(TrackDescriptor {
                                uuid: Some(g),
                                name: Some(name),
                                ..Default::default()
                            }),
                            ..Default::default()
                        });
                        g
                    }
                };
                let u = tracks.uuid();
                series.insert(key, u);
                let name = match &r.entity {
                    Some(e) => format!("{}[{e}]", r.metric),
                    None => r.metric.clone(),
                };
                out.packet(TracePacket {
                    track_descriptor: Some(TrackDescriptor {
                        uuid: Some(u),
                        name: Some(name),
                        parent_uuid: Some(group),
                        counter: Some(CounterDescriptor {
                            unit_name: (r.metric == "power_w").then(|| "W".to_string()),
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                u
            }
        };
        out.packet(TracePacket {
            timestamp: Some(r.at_ns.max(0) as u64),
            track_event: Some(TrackEvent {
                r#type: Some(4),
                track_uuid: Some(track),
                double_counter_value: Some(r.value),
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    out.finish()
}
