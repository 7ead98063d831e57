//! perf.data header structures: the file header, `perf_event_attr`s and the
//! feature sections (file mode), and their pipe-mode record equivalents.
//!
//! Layouts follow `tools/perf/Documentation/perf.data-file-format.txt` and
//! `include/uapi/linux/perf_event.h`.

use super::bytes::Cursor;
use linux_perf_data::Feature;

pub const FILE_HEADER_SIZE: usize = 104;
pub const PIPE_HEADER_SIZE: usize = 16;
pub const MAGIC_LE: &[u8; 8] = b"PERFILE2";
pub const MAGIC_BE: &[u8; 8] = b"2ELIFREP";

/// `perf_event_attr.sample_type` bits.
pub mod sample {
    pub const IP: u64 = 1 << 0;
    pub const TID: u64 = 1 << 1;
    pub const TIME: u64 = 1 << 2;
    pub const ADDR: u64 = 1 << 3;
    pub const READ: u64 = 1 << 4;
    pub const CALLCHAIN: u64 = 1 << 5;
    pub const ID: u64 = 1 << 6;
    pub const CPU: u64 = 1 << 7;
    pub const PERIOD: u64 = 1 << 8;
    pub const STREAM_ID: u64 = 1 << 9;
    pub const RAW: u64 = 1 << 10;
    pub const BRANCH_STACK: u64 = 1 << 11;
    pub const REGS_USER: u64 = 1 << 12;
    pub const STACK_USER: u64 = 1 << 13;
    pub const WEIGHT: u64 = 1 << 14;
    pub const DATA_SRC: u64 = 1 << 15;
    pub const IDENTIFIER: u64 = 1 << 16;
    pub const TRANSACTION: u64 = 1 << 17;
    pub const REGS_INTR: u64 = 1 << 18;
    pub const PHYS_ADDR: u64 = 1 << 19;
    pub const AUX: u64 = 1 << 20;
    pub const CGROUP: u64 = 1 << 21;
    pub const DATA_PAGE_SIZE: u64 = 1 << 22;
    pub const CODE_PAGE_SIZE: u64 = 1 << 23;
    pub const WEIGHT_STRUCT: u64 = 1 << 24;
}

/// `perf_event_attr.read_format` bits.
pub mod read_format {
    pub const TOTAL_TIME_ENABLED: u64 = 1 << 0;
    pub const TOTAL_TIME_RUNNING: u64 = 1 << 1;
    pub const ID: u64 = 1 << 2;
    pub const GROUP: u64 = 1 << 3;
    pub const LOST: u64 = 1 << 4;
}

/// `perf_event_attr.branch_sample_type` bits used for parsing.
pub mod branch {
    pub const HW_INDEX: u64 = 1 << 17;
    pub const COUNTERS: u64 = 1 << 19;
}

/// `perf_event_attr` flag bits.
pub mod flag {
    pub const EXCLUDE_USER: u64 = 1 << 4;
    pub const EXCLUDE_KERNEL: u64 = 1 << 5;
    pub const EXCLUDE_HV: u64 = 1 << 6;
    pub const FREQ: u64 = 1 << 10;
    /// Two bits: `precise_ip`.
    pub const PRECISE_IP_SHIFT: u32 = 15;
    pub const EXCLUDE_HOST: u64 = 1 << 19;
    pub const EXCLUDE_GUEST: u64 = 1 << 20;
    pub const SAMPLE_ID_ALL: u64 = 1 << 18;
    pub const USE_CLOCKID: u64 = 1 << 25;
}

/// A `perf_event_attr`, fields as the kernel defines them. Fields beyond the
/// recorded `size` are zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attr {
    pub type_: u32,
    pub size: u32,
    pub config: u64,
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    pub flags: u64,
    pub wakeup: u32,
    pub bp_type: u32,
    pub config1: u64,
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub sample_max_stack: u16,
}

impl Attr {
    /// Parses an attr from `buf` (at least the 64-byte VER0 layout).
    pub fn parse(buf: &[u8], be: bool) -> Option<Attr> {
        if buf.len() < 64 {
            return None;
        }
        // Read from a zero-padded copy so that short (old) attrs read as 0.
        let mut full = [0u8; 136];
        let n = buf.len().min(136);
        full[..n].copy_from_slice(&buf[..n]);
        let mut c = Cursor::new(&full, be);
        let type_ = c.u32()?;
        let size = c.u32()?;
        let size_eff = (size as usize).min(n);
        if size_eff < 136 {
            full[size_eff.max(64)..].fill(0);
        }
        let mut c = Cursor::new(&full, be);
        c.skip(8)?;
        Some(Attr {
            type_,
            size,
            config: c.u64()?,
            sample_period_or_freq: c.u64()?,
            sample_type: c.u64()?,
            read_format: c.u64()?,
            flags: c.u64()?,
            wakeup: c.u32()?,
            bp_type: c.u32()?,
            config1: c.u64()?,
            config2: c.u64()?,
            branch_sample_type: c.u64()?,
            sample_regs_user: c.u64()?,
            sample_stack_user: c.u32()?,
            clockid: c.i32()?,
            sample_regs_intr: c.u64()?,
            sample_max_stack: {
                c.skip(4)?;
                c.u16()?
            },
        })
    }

    pub fn has(&self, bit: u64) -> bool {
        self.sample_type & bit != 0
    }
    pub fn sample_id_all(&self) -> bool {
        self.flags & flag::SAMPLE_ID_ALL != 0
    }
    pub fn freq(&self) -> bool {
        self.flags & flag::FREQ != 0
    }

    /// Byte length of the sample_id trailer of non-sample records.
    pub fn trailer_len(&self) -> usize {
        if !self.sample_id_all() {
            return 0;
        }
        let bits = sample::TID
            | sample::TIME
            | sample::ID
            | sample::STREAM_ID
            | sample::CPU
            | sample::IDENTIFIER;
        (self.sample_type & bits).count_ones() as usize * 8
    }

    /// The event name perf derives from type and config when the file does
    /// not name the event (see perf's `evsel__name`).
    pub fn default_name(&self) -> String {
        const HW: [&str; 10] = [
            "cycles",
            "instructions",
            "cache-references",
            "cache-misses",
            "branches",
            "branch-misses",
            "bus-cycles",
            "stalled-cycles-frontend",
            "stalled-cycles-backend",
            "ref-cycles",
        ];
        const SW: [&str; 13] = [
            "cpu-clock",
            "task-clock",
            "page-faults",
            "context-switches",
            "cpu-migrations",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults",
            "dummy",
            "bpf-output",
            "cgroup-switches",
            "",
        ];
        let base = match self.type_ {
            0 => HW
                .get((self.config & 0xff) as usize)
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("raw 0x{:x}", self.config)),
            1 => SW
                .get(self.config as usize)
                .filter(|s| !s.is_empty())
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("software:{}", self.config)),
            2 => format!("tracepoint:{}", self.config),
            3 => format!("hw-cache:0x{:x}", self.config),
            4 => format!("r{:x}", self.config),
            5 => format!("mem:0x{:x}", self.config1),
            t => format!("pmu{t}/config=0x{:x}/", self.config),
        };
        if self.type_ == 2 {
            return base;
        }
        format!("{base}{}", self.modifiers())
    }

    /// The modifiers perf appends to a name it derives (`:u`, `:ppH`, ...),
    /// as perf's `evsel__add_modifiers` writes them: the contexts counted
    /// when some are excluded, the precision, and host/guest when their
    /// exclusion is not the default (guests are excluded by default once
    /// contexts or precision are given).
    fn modifiers(&self) -> String {
        let f = |bit: u64| self.flags & bit != 0;
        let mut m = String::new();
        let mut guest_default = false;
        if f(flag::EXCLUDE_KERNEL) || f(flag::EXCLUDE_USER) || f(flag::EXCLUDE_HV) {
            for (bit, c) in [
                (flag::EXCLUDE_KERNEL, 'k'),
                (flag::EXCLUDE_USER, 'u'),
                (flag::EXCLUDE_HV, 'h'),
            ] {
                if !f(bit) {
                    m.push(c);
                }
            }
            guest_default = true;
        }
        let precise = (self.flags >> flag::PRECISE_IP_SHIFT) & 3;
        if precise > 0 {
            m.push_str(&"ppp"[..precise as usize]);
            guest_default = true;
        }
        if f(flag::EXCLUDE_HOST) || f(flag::EXCLUDE_GUEST) == guest_default {
            for (bit, c) in [(flag::EXCLUDE_HOST, 'H'), (flag::EXCLUDE_GUEST, 'G')] {
                if !f(bit) {
                    m.push(c);
                }
            }
        }
        if m.is_empty() {
            m
        } else {
            format!(":{m}")
        }
    }
}

/// One event of the file: its attr, name and the kernel ids of its fds.
#[derive(Clone, Debug, Default)]
pub struct EventDesc {
    pub attr: Attr,
    pub name: Option<String>,
    pub ids: Vec<u64>,
}

impl EventDesc {
    pub fn name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| self.attr.default_name())
    }
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Section {
    pub offset: u64,
    pub size: u64,
}

/// The 104-byte header of a file-mode perf.data.
#[derive(Clone, Debug)]
pub struct FileHeader {
    pub be: bool,
    pub header_size: u64,
    pub attr_size: u64,
    pub attrs: Section,
    pub data: Section,
    pub event_types: Section,
    pub features: [u64; 4],
}

impl FileHeader {
    pub fn parse(buf: &[u8]) -> Option<FileHeader> {
        let magic = buf.get(0..8)?;
        let be = match magic {
            m if m == MAGIC_LE => false,
            m if m == MAGIC_BE => true,
            _ => return None,
        };
        let mut c = Cursor::new(buf, be);
        c.skip(8)?;
        let header_size = c.u64()?;
        let attr_size = c.u64()?;
        let mut sec = || -> Option<Section> {
            Some(Section {
                offset: c.u64()?,
                size: c.u64()?,
            })
        };
        let attrs = sec()?;
        let data = sec()?;
        let event_types = sec()?;
        let features = [c.u64()?, c.u64()?, c.u64()?, c.u64()?];
        Some(FileHeader {
            be,
            header_size,
            attr_size,
            attrs,
            data,
            event_types,
            features,
        })
    }

    /// Feature bits set in the header, in ascending order (the order of the
    /// feature section table).
    pub fn feature_ids(&self) -> Vec<u32> {
        (0..256u32)
            .filter(|&i| self.features[(i / 64) as usize] & (1u64 << (i % 64)) != 0)
            .collect()
    }
}

/// Parses the attr section of a file-mode header: entries of `entry`
/// bytes (the header's attr_size, i.e. `sizeof(struct perf_file_attr)`),
/// each a perf_event_attr followed by a section pointing at the event's ids.
pub fn parse_attr_entries(buf: &[u8], entry: usize, be: bool) -> Option<Vec<(Attr, Section)>> {
    let attr_size = entry.checked_sub(16)?;
    if attr_size < 64 {
        return None;
    }
    let mut out = Vec::new();
    for chunk in buf.chunks(entry) {
        if chunk.len() < entry {
            return None;
        }
        let attr = Attr::parse(&chunk[..attr_size], be)?;
        let mut c = Cursor::new(&chunk[attr_size..], be);
        out.push((
            attr,
            Section {
                offset: c.u64()?,
                size: c.u64()?,
            },
        ));
    }
    Some(out)
}

/// Parses the EVENT_DESC feature: event names and ids.
pub fn parse_event_desc(buf: &[u8], be: bool) -> Option<Vec<EventDesc>> {
    let mut c = Cursor::new(buf, be);
    let nr = c.u32()? as usize;
    let attr_size = c.u32()? as usize;
    if nr > 100_000 {
        return None;
    }
    let mut out = Vec::with_capacity(nr);
    for _ in 0..nr {
        let attr = Attr::parse(c.bytes(attr_size)?, be)?;
        let nr_ids = c.u32()? as usize;
        let name = c.perf_string()?;
        if nr_ids > c.remaining() / 8 {
            return None;
        }
        let ids = (0..nr_ids).map(|_| c.u64()).collect::<Option<Vec<_>>>()?;
        out.push(EventDesc {
            attr,
            name: Some(name),
            ids,
        });
    }
    Some(out)
}

/// An entry of the build-id table.
#[derive(Clone, Debug)]
pub struct BuildIdEntry {
    pub pid: i32,
    pub misc: u16,
    pub build_id: Vec<u8>,
    pub path: String,
}

pub const MISC_BUILD_ID_SIZE: u16 = 1 << 15;

/// Parses one build_id_event body (after its 8-byte header).
pub fn parse_build_id_body(body: &[u8], misc: u16, be: bool) -> Option<BuildIdEntry> {
    let mut c = Cursor::new(body, be);
    let pid = c.i32()?;
    let raw = c.bytes(24)?;
    let len = if misc & MISC_BUILD_ID_SIZE != 0 {
        (raw[20] as usize).min(20)
    } else {
        // Old files: 20 bytes, trailing zeros trimmed the way perf prints them.
        let mut n = 20;
        while n > 0 && raw[n - 1] == 0 {
            n -= 1;
        }
        n
    };
    let path = String::from_utf8_lossy(c.cstr_rest()).into_owned();
    Some(BuildIdEntry {
        pid,
        misc,
        build_id: raw[..len].to_vec(),
        path,
    })
}

/// Parses the BUILD_ID feature section: a sequence of build_id_events.
pub fn parse_build_id_table(buf: &[u8], be: bool) -> (Vec<BuildIdEntry>, bool) {
    let mut out = Vec::new();
    let mut c = Cursor::new(buf, be);
    while c.remaining() >= 8 {
        let start = c.pos;
        let (Some(_ty), Some(misc), Some(size)) = (c.u32(), c.u16(), c.u16()) else {
            return (out, false);
        };
        let size = size as usize;
        if size < 8 + 4 + 24 || start + size > buf.len() {
            return (out, false);
        }
        if let Some(e) = parse_build_id_body(&buf[start + 8..start + size], misc, be) {
            out.push(e);
        }
        c.pos = start + size;
    }
    (out, true)
}

pub fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// Metadata from the feature sections (or pipe-mode HEADER_FEATURE records),
/// as key/value pairs for `capture_meta`, plus the structured parts.
#[derive(Clone, Debug, Default)]
pub struct Metadata {
    pub pairs: Vec<(String, String)>,
    pub build_ids: Vec<BuildIdEntry>,
    pub event_desc: Option<Vec<EventDesc>>,
    pub features: Vec<u32>,
    /// Per CPU: core, die and socket (HEADER_CPU_TOPOLOGY), in CPU order.
    pub cpus: Vec<CpuTopology>,
    /// Tracepoint names by id (`system:name`), from the tracing data.
    pub tracepoints: Vec<(u64, String)>,
    /// The tracepoints' formats, from the tracing data.
    pub tracepoint_formats: Vec<super::tracing::TracepointFormat>,
    /// What of the tracing data could not be read.
    pub tracing_problems: Vec<String>,
    /// Byte offset of the tracing data in the input (its feature section
    /// or pipe-mode record), where its problems are reported.
    pub tracing_at: Option<u64>,
    /// Added to the samples' times to give ns since the epoch: the wall
    /// time minus the clock's time, read together (HEADER_CLOCK_DATA,
    /// written by `perf record -k CLOCK`).
    pub utc_offset_ns: Option<i64>,
}

/// One CPU of the HEADER_CPU_TOPOLOGY feature (`perf report --header`'s
/// `CPU N: Core ID c, Die ID d, Socket ID s`); -1 for a CPU that was
/// offline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuTopology {
    pub cpu: u32,
    pub core_id: i32,
    pub socket_id: i32,
    /// Absent in files of perf before 5.3 (no die section).
    pub die_id: Option<i32>,
}

/// Parses HEADER_CPU_TOPOLOGY (tools/perf/util/header.c
/// `write_cpu_topology`): u32 count and that many strings of sibling
/// sockets (package CPU lists), the same for sibling threads, then for
/// each of `nr_cpus` available CPUs {u32 core_id, u32 socket_id}; perf
/// 5.3+ adds sibling dies (count, strings) and a u32 die_id per CPU.
/// `nr_cpus` is NRCPUS' available count; without it the CPU array is
/// taken to fill the rest of the section (files without a die section).
/// perf before 4.6 wrote the two sibling lists only: no CPUs.
pub fn parse_cpu_topology(data: &[u8], be: bool, nr_cpus: Option<u32>) -> Option<Vec<CpuTopology>> {
    let mut c = Cursor::new(data, be);
    for _ in 0..2 {
        let n = c.u32()?;
        if n as usize > data.len() {
            return None;
        }
        for _ in 0..n {
            c.perf_string()?;
        }
    }
    // perf before 4.6 wrote the sibling lists only, no per-CPU ids.
    if c.remaining() == 0 {
        return Some(Vec::new());
    }
    let nr = match nr_cpus {
        Some(n) => n as usize,
        None => c.remaining() / 8,
    };
    if nr.checked_mul(8)? > c.remaining() {
        return None;
    }
    let mut out = Vec::with_capacity(nr);
    for cpu in 0..nr {
        let (core, socket) = (c.u32()? as i32, c.u32()? as i32);
        out.push(CpuTopology {
            cpu: cpu as u32,
            core_id: core,
            socket_id: socket,
            die_id: None,
        });
    }
    if c.remaining() >= 4 {
        let n = c.u32()?;
        if n as usize > data.len() {
            return None;
        }
        for _ in 0..n {
            c.perf_string()?;
        }
        for t in out.iter_mut() {
            t.die_id = Some(c.u32()? as i32);
        }
    }
    Some(out)
}

impl Metadata {
    fn set(&mut self, k: &str, v: impl Into<String>) {
        let v = v.into();
        if let Some(p) = self.pairs.iter_mut().find(|(key, _)| key == k) {
            p.1 = v;
        } else {
            self.pairs.push((k.to_string(), v));
        }
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }

    /// Parses one feature section. Returns false when the section is
    /// malformed (the caller reports it).
    pub fn add_feature(&mut self, id: u32, data: &[u8], be: bool) -> bool {
        if !self.features.contains(&id) {
            self.features.push(id);
        }
        let mut c = Cursor::new(data, be);
        let f = Feature(id);
        let string_key = match f {
            Feature::HOSTNAME => Some("hostname"),
            Feature::OSRELEASE => Some("os_release"),
            Feature::VERSION => Some("perf_version"),
            Feature::ARCH => Some("arch"),
            Feature::CPUDESC => Some("cpu_desc"),
            Feature::CPUID => Some("cpuid"),
            _ => None,
        };
        if let Some(k) = string_key {
            return match c.perf_string() {
                Some(s) => {
                    self.set(k, s);
                    true
                }
                None => false,
            };
        }
        match f {
            Feature::NRCPUS => match (c.u32(), c.u32()) {
                (Some(avail), Some(online)) => {
                    self.set("nr_cpus_available", avail.to_string());
                    self.set("nr_cpus_online", online.to_string());
                    true
                }
                _ => false,
            },
            Feature::CPU_TOPOLOGY => {
                let nr = self.get("nr_cpus_available").and_then(|v| v.parse().ok());
                match parse_cpu_topology(data, be, nr) {
                    Some(t) => {
                        self.cpus = t;
                        true
                    }
                    None => false,
                }
            }
            Feature::TRACING_DATA => {
                self.add_tracing_data(data);
                true
            }
            Feature::TOTAL_MEM => match c.u64() {
                Some(v) => {
                    self.set("total_mem_kb", v.to_string());
                    true
                }
                None => false,
            },
            Feature::CMDLINE => {
                let Some(n) = c.u32() else { return false };
                let mut args = Vec::new();
                for _ in 0..n.min(100_000) {
                    match c.perf_string() {
                        Some(s) => args.push(s),
                        None => return false,
                    }
                }
                self.set("cmdline", args.join(" "));
                true
            }
            Feature::EVENT_DESC => match parse_event_desc(data, be) {
                Some(d) => {
                    self.event_desc = Some(d);
                    true
                }
                None => false,
            },
            Feature::BUILD_ID => {
                let (entries, ok) = parse_build_id_table(data, be);
                self.build_ids.extend(entries);
                ok
            }
            Feature::CLOCKID => match c.u64() {
                Some(v) => {
                    self.set("clock_resolution_ns", v.to_string());
                    true
                }
                None => false,
            },
            Feature::CLOCK_DATA => match (c.u32(), c.u32(), c.u64(), c.u64()) {
                (Some(_version), Some(clockid), Some(wall), Some(clk)) => {
                    self.set("clockid", clockid.to_string());
                    self.set("clock_wall_ns", wall.to_string());
                    self.set("clock_clockid_ns", clk.to_string());
                    self.utc_offset_ns = match (i64::try_from(wall), i64::try_from(clk)) {
                        (Ok(w), Ok(c)) => w.checked_sub(c),
                        _ => None,
                    };
                    true
                }
                _ => false,
            },
            Feature::SAMPLE_TIME => match (c.u64(), c.u64()) {
                (Some(a), Some(b)) => {
                    self.set("sample_time_first_ns", a.to_string());
                    self.set("sample_time_last_ns", b.to_string());
                    true
                }
                _ => false,
            },
            Feature::COMPRESSED => match (c.u32(), c.u32(), c.u32(), c.u32(), c.u32()) {
                (Some(_v), Some(ty), Some(level), Some(ratio), Some(_mmap)) => {
                    let t = if ty == 1 {
                        "zstd".to_string()
                    } else {
                        format!("type {ty}")
                    };
                    self.set("compression", format!("{t} level {level} ratio {ratio}"));
                    true
                }
                _ => false,
            },
            _ => true,
        }
    }

    /// Takes in a tracing data blob (the HEADER_TRACING_DATA feature or
    /// pipe-mode record): the events' names by id and their formats.
    pub fn add_tracing_data(&mut self, data: &[u8]) {
        let t = super::tracing::parse(data);
        for f in t.formats {
            self.tracepoints.push((f.id, f.event.clone()));
            self.tracepoint_formats.push(f);
        }
        self.tracing_problems.extend(t.problems);
    }

    pub fn feature_names(&self) -> String {
        self.features
            .iter()
            .map(|&id| format!("{:?}", Feature(id)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A name by tracepoint id from a HEADER_EVENT_TYPE record (the event
/// descriptions of perf 3.x's pipe mode: `struct perf_trace_event_type {
/// u64 event_id; char name[64]; }`).
pub fn parse_event_type(body: &[u8], be: bool) -> Option<(u64, String)> {
    let mut c = Cursor::new(body, be);
    let id = c.u64()?;
    let name = String::from_utf8_lossy(c.cstr_rest()).into_owned();
    (!name.is_empty()).then_some((id, name))
}

/// The name of a `clockid_t` as `perf record -k` takes it.
pub fn clockid_name(id: i64) -> String {
    match id {
        0 => "CLOCK_REALTIME".into(),
        1 => "CLOCK_MONOTONIC".into(),
        4 => "CLOCK_MONOTONIC_RAW".into(),
        7 => "CLOCK_BOOTTIME".into(),
        11 => "CLOCK_TAI".into(),
        n => format!("clock{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CPU_TOPOLOGY section as perf 5.3+ writes it: 2 sockets of 1 CPU.
    fn section() -> Vec<u8> {
        let mut b = Vec::new();
        let string = |b: &mut Vec<u8>, s: &str| {
            let mut x = s.as_bytes().to_vec();
            x.resize(64, 0);
            b.extend_from_slice(&64u32.to_le_bytes());
            b.extend_from_slice(&x);
        };
        for lists in [["0", "1"], ["0", "1"]] {
            b.extend_from_slice(&2u32.to_le_bytes());
            for l in lists {
                string(&mut b, l);
            }
        }
        for (core, socket) in [(0u32, 0u32), (0, 1)] {
            b.extend_from_slice(&core.to_le_bytes());
            b.extend_from_slice(&socket.to_le_bytes());
        }
        b.extend_from_slice(&1u32.to_le_bytes());
        string(&mut b, "0-1");
        b.extend_from_slice(&[0u8; 8]);
        b
    }

    #[test]
    fn cpu_topology_reads_and_truncations_are_refused() {
        let t = parse_cpu_topology(&section(), false, Some(2)).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!((t[1].cpu, t[1].socket_id, t[1].die_id), (1, 1, Some(0)));
        // Without NRCPUS and without the die section: the CPU array fills
        // the rest.
        let old = &section()[..section().len() - 4 - 68 - 8];
        let t = parse_cpu_topology(old, false, None).unwrap();
        assert_eq!(t.iter().map(|c| c.socket_id).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(t[0].die_id, None);
        // perf before 4.6: the two sibling lists, no CPU ids.
        let lists = 2 * (4 + 2 * 68);
        assert_eq!(
            parse_cpu_topology(&section()[..lists], false, Some(2)),
            Some(vec![])
        );
        // Every other truncation is None (a bad_feature_section
        // diagnostic), no panic; a CPU count larger than the section too.
        let full = section();
        for n in (0..full.len() - 4 - 68 - 8).filter(|&n| n != lists) {
            assert!(
                parse_cpu_topology(&full[..n], false, Some(2)).is_none(),
                "{n}"
            );
        }
        assert!(parse_cpu_topology(&full, false, Some(u32::MAX)).is_none());
    }

    /// A HEADER_EVENT_TYPE record's body as perf 3.8 wrote it in pipe mode
    /// (google/perf_data_converter's perf.data.piped.target-3.8: 24-byte
    /// records, the name padded to 8 bytes, not 64).
    #[test]
    fn event_type_record() {
        let body = [
            0u8, 0, 0, 0, 0, 0, 0, 0, b'c', b'y', b'c', b'l', b'e', b's', 0, 0,
        ];
        assert_eq!(
            parse_event_type(&body, false),
            Some((0, "cycles".to_string()))
        );
        assert_eq!(parse_event_type(&body[..8], false), None);
        assert_eq!(parse_event_type(&body[..3], false), None);
    }
}
