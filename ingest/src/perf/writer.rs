//! A small perf.data writer (file mode, little-endian) for tests and
//! simulators: it writes what this machine cannot record (branch stacks,
//! hardware group reads, weights, data sources) in the format perf reads.
//! Every kind of file it writes is checked by reading it back with the real
//! `perf script` in the tests.
//!
//! ```
//! use trawl_ingest::perf::writer::{PerfDataWriter, SampleOut};
//! use trawl_ingest::perf::header::{sample, Attr};
//! let mut w = PerfDataWriter::new();
//! let ev = w.add_event(Attr::sampling(1, 0, 1000, sample::IP | sample::TID | sample::TIME | sample::PERIOD), "cpu-clock");
//! w.comm(10, 10, "prog", 1, false);
//! w.sample(&SampleOut { event: ev, ip: 0x401000, pid: 10, tid: 10, time: 2, period: 1000, ..Default::default() });
//! let bytes = w.to_bytes();
//! assert_eq!(&bytes[..8], b"PERFILE2");
//! ```

use super::header::{read_format, sample, Attr, EventDesc, FILE_HEADER_SIZE, MAGIC_LE};
use super::records::{rtype, BranchEntry, ReadValues, MISC_COMM_EXEC, MISC_MMAP_BUILD_ID};
use linux_perf_data::Feature;

/// The attr size the writer gives an event (`PERF_ATTR_SIZE_VER7`); an
/// event may ask for an older one (`Attr::size`: 64 is the first version's,
/// `PERF_ATTR_SIZE_VER0`), cut to that many bytes as old perf wrote them.
const ATTR_SIZE: usize = 128;

impl Attr {
    /// A sampling attr with `sample_id_all` set (as perf record makes them).
    pub fn sampling(type_: u32, config: u64, period: u64, sample_type: u64) -> Attr {
        Attr {
            type_,
            size: ATTR_SIZE as u32,
            config,
            sample_period_or_freq: period,
            sample_type,
            flags: super::header::flag::SAMPLE_ID_ALL | (1 << 8) | (1 << 9) | (1 << 23),
            ..Default::default()
        }
    }

    /// The size written: `size` where it is one of the kernel's versions
    /// (64 to 128 bytes), else 128.
    fn written_size(&self) -> usize {
        match self.size as usize {
            n @ 64..=ATTR_SIZE if n % 8 == 0 => n,
            _ => ATTR_SIZE,
        }
    }

    fn encode(&self) -> Vec<u8> {
        let size = self.written_size();
        let mut b = Vec::with_capacity(ATTR_SIZE);
        b.extend_from_slice(&self.type_.to_le_bytes());
        b.extend_from_slice(&(size as u32).to_le_bytes());
        for v in [
            self.config,
            self.sample_period_or_freq,
            self.sample_type,
            self.read_format,
            self.flags,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.wakeup.to_le_bytes());
        b.extend_from_slice(&self.bp_type.to_le_bytes());
        for v in [
            self.config1,
            self.config2,
            self.branch_sample_type,
            self.sample_regs_user,
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&self.sample_stack_user.to_le_bytes());
        b.extend_from_slice(&self.clockid.to_le_bytes());
        b.extend_from_slice(&self.sample_regs_intr.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes()); // aux_watermark
        b.extend_from_slice(&self.sample_max_stack.to_le_bytes());
        b.resize(ATTR_SIZE, 0);
        b.truncate(size);
        b
    }
}

/// One sample to write. Fields the event's sample_type does not carry are
/// ignored.
#[derive(Clone, Debug, Default)]
pub struct SampleOut {
    pub event: usize,
    /// The event's instance (one of its ids, [`PerfDataWriter::add_id`]:
    /// perf opens an event once per CPU or thread); None: its first id.
    pub id: Option<u64>,
    /// PERF_RECORD_MISC_* cpumode (1 kernel, 2 user); 2 when 0.
    pub misc: u16,
    pub ip: u64,
    pub pid: i32,
    pub tid: i32,
    pub time: u64,
    pub addr: u64,
    pub cpu: u32,
    pub period: u64,
    pub read: Option<ReadValues>,
    /// Callchain entries including context markers.
    pub callchain: Vec<u64>,
    pub raw: Option<Vec<u8>>,
    pub branch: Vec<BranchEntry>,
    pub branch_hw_idx: Option<u64>,
    /// (abi, register values in mask bit order).
    pub user_regs: Option<(u64, Vec<u64>)>,
    /// (requested size, bytes copied).
    pub user_stack: Option<(u64, Vec<u8>)>,
    /// Full 64-bit weight (PERF_SAMPLE_WEIGHT or the packed WEIGHT_STRUCT).
    pub weight: u64,
    pub data_src: u64,
    pub transaction: u64,
    pub phys_addr: u64,
}

/// Builds a perf.data file in memory.
#[derive(Default)]
pub struct PerfDataWriter {
    events: Vec<EventDesc>,
    data: Vec<u8>,
    next_id: u64,
    /// (path, pid, build-id) for the BUILD_ID feature.
    build_ids: Vec<(String, i32, Vec<u8>)>,
    pub hostname: String,
    pub os_release: String,
    pub arch: String,
    pub cmdline: Vec<String>,
    /// (name, leader event index, members) for the GROUP_DESC feature.
    pub groups: Vec<(String, u32, u32)>,
    /// (clockid, wall-clock ns, the clock's ns read at the same moment)
    /// for the CLOCKID and CLOCK_DATA features (`perf record -k`); set the
    /// events' `use_clockid` flag and `clockid` too.
    pub clock_data: Option<(u32, u64, u64)>,
    /// Per CPU (core_id, die_id, socket_id) for the CPU_TOPOLOGY feature
    /// (and NRCPUS); empty: 2 CPUs and no topology.
    pub cpus: Vec<(i32, i32, i32)>,
}

/// A CPU list as perf writes it in the topology strings (`0-1,4`).
fn cpu_list(cpus: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        parts.push(if i == j {
            cpus[i].to_string()
        } else {
            format!("{}-{}", cpus[i], cpus[j])
        });
        i = j + 1;
    }
    parts.join(",")
}

fn pad8(b: &mut Vec<u8>) {
    while b.len() % 8 != 0 {
        b.push(0);
    }
}

fn perf_string(out: &mut Vec<u8>, s: &str) {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    while bytes.len() % 64 != 0 {
        bytes.push(0);
    }
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(&bytes);
}

impl PerfDataWriter {
    pub fn new() -> Self {
        PerfDataWriter {
            next_id: 100,
            hostname: "trawl-writer".into(),
            os_release: "6.1.0-synthetic".into(),
            arch: "x86_64".into(),
            cmdline: vec!["perf".into(), "record".into()],
            ..Default::default()
        }
    }

    /// Adds an event; returns its index. Each event gets one kernel id.
    /// With more than one event, IDENTIFIER is added to every sample_type
    /// (as perf record does) so records can be told apart.
    pub fn add_event(&mut self, attr: Attr, name: &str) -> usize {
        let id = self.next_id;
        self.next_id += 1;
        self.events.push(EventDesc {
            attr,
            name: Some(name.to_string()),
            ids: vec![id],
        });
        if self.events.len() > 1 {
            for e in &mut self.events {
                e.attr.sample_type |= sample::IDENTIFIER;
            }
        }
        self.events.len() - 1
    }

    /// The kernel id of an event (for group read values).
    pub fn event_id(&self, event: usize) -> u64 {
        self.events[event].ids[0]
    }

    /// Another instance of `event` (perf's one file descriptor per CPU):
    /// a new id, which samples and group reads of that instance carry.
    pub fn add_id(&mut self, event: usize) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.events[event].ids.push(id);
        id
    }

    fn trailer(&self, pid: i32, tid: i32, time: u64, cpu: u32) -> Vec<u8> {
        let a = &self.events[0].attr;
        let st = a.sample_type;
        let mut t = Vec::new();
        if !a.sample_id_all() {
            return t;
        }
        if st & sample::TID != 0 {
            t.extend_from_slice(&pid.to_le_bytes());
            t.extend_from_slice(&tid.to_le_bytes());
        }
        if st & sample::TIME != 0 {
            t.extend_from_slice(&time.to_le_bytes());
        }
        if st & sample::ID != 0 {
            t.extend_from_slice(&self.events[0].ids[0].to_le_bytes());
        }
        if st & sample::STREAM_ID != 0 {
            t.extend_from_slice(&self.events[0].ids[0].to_le_bytes());
        }
        if st & sample::CPU != 0 {
            t.extend_from_slice(&cpu.to_le_bytes());
            t.extend_from_slice(&0u32.to_le_bytes());
        }
        if st & sample::IDENTIFIER != 0 {
            t.extend_from_slice(&self.events[0].ids[0].to_le_bytes());
        }
        t
    }

    fn record(&mut self, ty: u32, misc: u16, body: &[u8]) {
        let size = 8 + body.len();
        assert!(size <= u16::MAX as usize, "record too large for perf.data");
        self.data.extend_from_slice(&ty.to_le_bytes());
        self.data.extend_from_slice(&misc.to_le_bytes());
        self.data.extend_from_slice(&(size as u16).to_le_bytes());
        self.data.extend_from_slice(body);
    }

    pub fn comm(&mut self, pid: i32, tid: i32, name: &str, time: u64, exec: bool) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        pad8(&mut b);
        b.extend(self.trailer(pid, tid, time, 0));
        self.record(rtype::COMM, if exec { MISC_COMM_EXEC } else { 0 }, &b);
    }

    #[allow(clippy::too_many_arguments)]
    pub fn mmap2(
        &mut self,
        pid: i32,
        tid: i32,
        start: u64,
        len: u64,
        pgoff: u64,
        path: &str,
        time: u64,
        build_id: Option<&[u8]>,
    ) {
        let mut b = Vec::new();
        b.extend_from_slice(&pid.to_le_bytes());
        b.extend_from_slice(&tid.to_le_bytes());
        for v in [start, len, pgoff] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let mut misc = 2; // user
        match build_id {
            Some(id) => {
                misc |= MISC_MMAP_BUILD_ID;
                b.push(id.len().min(20) as u8);
                b.extend_from_slice(&[0, 0, 0]);
                let mut bid = [0u8; 20];
                bid[..id.len().min(20)].copy_from_slice(&id[..id.len().min(20)]);
                b.extend_from_slice(&bid);
            }
            None => b.extend_from_slice(&[0u8; 24]),
        }
        b.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ|PROT_EXEC
        b.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
        b.extend_from_slice(path.as_bytes());
        b.push(0);
        pad8(&mut b);
        b.extend(self.trailer(pid, tid, time, 0));
        self.record(rtype::MMAP2, misc, &b);
        if let Some(id) = build_id {
            self.build_ids.push((path.to_string(), -1, id.to_vec()));
        }
    }

    /// A kernel mapping (MMAP with the kernel cpumode, pid -1), as perf
    /// writes `[kernel.kallsyms]_text`.
    pub fn mmap_kernel(&mut self, start: u64, len: u64, pgoff: u64, name: &str, time: u64) {
        let mut b = Vec::new();
        b.extend_from_slice(&(-1i32).to_le_bytes());
        b.extend_from_slice(&0i32.to_le_bytes());
        for v in [start, len, pgoff] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(name.as_bytes());
        b.push(0);
        pad8(&mut b);
        b.extend(self.trailer(-1, 0, time, 0));
        self.record(rtype::MMAP, 1, &b);
    }

    fn task(&mut self, ty: u32, pid: i32, ppid: i32, tid: i32, ptid: i32, time: u64) {
        let mut b = Vec::new();
        for v in [pid, ppid, tid, ptid] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&time.to_le_bytes());
        b.extend(self.trailer(pid, tid, time, 0));
        self.record(ty, 0, &b);
    }

    pub fn fork(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32, time: u64) {
        self.task(rtype::FORK, pid, ppid, tid, ptid, time);
    }

    pub fn exit(&mut self, pid: i32, ppid: i32, tid: i32, ptid: i32, time: u64) {
        self.task(rtype::EXIT, pid, ppid, tid, ptid, time);
    }

    pub fn lost(&mut self, count: u64, time: u64) {
        let mut b = Vec::new();
        b.extend_from_slice(&self.events[0].ids[0].to_le_bytes());
        b.extend_from_slice(&count.to_le_bytes());
        b.extend(self.trailer(0, 0, time, 0));
        self.record(rtype::LOST, 0, &b);
    }

    /// PERF_RECORD_LOST_SAMPLES: samples the kernel dropped.
    pub fn lost_samples(&mut self, count: u64, time: u64) {
        let mut b = Vec::new();
        b.extend_from_slice(&count.to_le_bytes());
        b.extend(self.trailer(0, 0, time, 0));
        self.record(rtype::LOST_SAMPLES, 0, &b);
    }

    pub fn finished_round(&mut self) {
        self.record(rtype::FINISHED_ROUND, 0, &[]);
    }

    /// Writes a raw record (for tests of unknown or corrupt records).
    pub fn raw_record(&mut self, ty: u32, misc: u16, body: &[u8]) {
        self.record(ty, misc, body);
    }

    pub fn sample(&mut self, s: &SampleOut) {
        let ev = &self.events[s.event];
        let a = &ev.attr;
        let st = a.sample_type;
        let id = s.id.unwrap_or(ev.ids[0]);
        let mut b = Vec::new();
        let mut put = |v: u64| b.extend_from_slice(&v.to_le_bytes());
        if st & sample::IDENTIFIER != 0 {
            put(id);
        }
        if st & sample::IP != 0 {
            put(s.ip);
        }
        if st & sample::TID != 0 {
            put((s.pid as u32 as u64) | ((s.tid as u32 as u64) << 32));
        }
        if st & sample::TIME != 0 {
            put(s.time);
        }
        if st & sample::ADDR != 0 {
            put(s.addr);
        }
        if st & sample::ID != 0 {
            put(id);
        }
        if st & sample::STREAM_ID != 0 {
            put(id);
        }
        if st & sample::CPU != 0 {
            put(s.cpu as u64);
        }
        if st & sample::PERIOD != 0 {
            put(s.period);
        }
        if st & sample::READ != 0 {
            let rf = a.read_format;
            let r = s.read.clone().unwrap_or_default();
            if rf & read_format::GROUP != 0 {
                put(r.values.len() as u64);
                if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                    put(r.time_enabled.unwrap_or(0));
                }
                if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                    put(r.time_running.unwrap_or(0));
                }
                for (v, kid, lost) in &r.values {
                    put(*v);
                    if rf & read_format::ID != 0 {
                        put(kid.unwrap_or(0));
                    }
                    if rf & read_format::LOST != 0 {
                        put(lost.unwrap_or(0));
                    }
                }
            } else {
                let (v, kid, lost) = r.values.first().copied().unwrap_or((0, None, None));
                put(v);
                if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                    put(r.time_enabled.unwrap_or(0));
                }
                if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                    put(r.time_running.unwrap_or(0));
                }
                if rf & read_format::ID != 0 {
                    put(kid.unwrap_or(id));
                }
                if rf & read_format::LOST != 0 {
                    put(lost.unwrap_or(0));
                }
            }
        }
        if st & sample::CALLCHAIN != 0 {
            put(s.callchain.len() as u64);
            for &v in &s.callchain {
                put(v);
            }
        }
        if st & sample::RAW != 0 {
            let raw = s.raw.clone().unwrap_or_default();
            // u32 size + data, padded so the sample stays 8-byte aligned.
            let total = (4 + raw.len()).div_ceil(8) * 8;
            b.extend_from_slice(&((total - 4) as u32).to_le_bytes());
            b.extend_from_slice(&raw);
            b.resize(b.len() + (total - 4 - raw.len()), 0);
        }
        let mut put = |v: u64| b.extend_from_slice(&v.to_le_bytes());
        if st & sample::BRANCH_STACK != 0 {
            put(s.branch.len() as u64);
            if a.branch_sample_type & super::header::branch::HW_INDEX != 0 {
                put(s.branch_hw_idx.unwrap_or(0));
            }
            for e in &s.branch {
                put(e.from);
                put(e.to);
                put(e.flags);
            }
            if a.branch_sample_type & super::header::branch::COUNTERS != 0 {
                for e in &s.branch {
                    put(e.counters.unwrap_or(0));
                }
            }
        }
        if st & sample::REGS_USER != 0 {
            match &s.user_regs {
                Some((abi, regs)) => {
                    put(*abi);
                    for r in regs {
                        put(*r);
                    }
                }
                None => put(0),
            }
        }
        if st & sample::STACK_USER != 0 {
            match &s.user_stack {
                Some((size, data)) => {
                    put(*size);
                    let mut d = data.clone();
                    d.resize(*size as usize, 0);
                    b.extend_from_slice(&d);
                    b.extend_from_slice(&(data.len() as u64).to_le_bytes());
                }
                None => b.extend_from_slice(&0u64.to_le_bytes()),
            }
        }
        let mut put = |v: u64| b.extend_from_slice(&v.to_le_bytes());
        if st & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
            put(s.weight);
        }
        if st & sample::DATA_SRC != 0 {
            put(s.data_src);
        }
        if st & sample::TRANSACTION != 0 {
            put(s.transaction);
        }
        if st & sample::PHYS_ADDR != 0 {
            put(s.phys_addr);
        }
        self.record(rtype::SAMPLE, if s.misc == 0 { 2 } else { s.misc }, &b);
    }

    /// The whole file.
    pub fn to_bytes(&self) -> Vec<u8> {
        // One attr size for the file (its header holds one): the first
        // event's.
        let attr_size = self
            .events
            .first()
            .map_or(ATTR_SIZE, |e| e.attr.written_size());
        assert!(
            self.events
                .iter()
                .all(|e| e.attr.written_size() == attr_size),
            "every event of a file has the same attr size"
        );
        let mut out = vec![0u8; FILE_HEADER_SIZE];
        // Ids, then attrs (each followed by the section of its ids).
        let mut id_secs = Vec::new();
        for e in &self.events {
            let off = out.len() as u64;
            for id in &e.ids {
                out.extend_from_slice(&id.to_le_bytes());
            }
            id_secs.push((off, 8 * e.ids.len() as u64));
        }
        let attrs_off = out.len() as u64;
        for (e, (o, s)) in self.events.iter().zip(&id_secs) {
            out.extend(e.attr.encode());
            out.extend_from_slice(&o.to_le_bytes());
            out.extend_from_slice(&s.to_le_bytes());
        }
        let attrs_size = out.len() as u64 - attrs_off;
        let data_off = out.len() as u64;
        out.extend_from_slice(&self.data);
        let data_size = self.data.len() as u64;

        // Feature sections.
        let mut feats: Vec<(Feature, Vec<u8>)> = Vec::new();
        if !self.build_ids.is_empty() {
            let mut b = Vec::new();
            for (path, pid, id) in &self.build_ids {
                let mut body = Vec::new();
                body.extend_from_slice(&pid.to_le_bytes());
                let mut bid = [0u8; 24];
                bid[..id.len().min(20)].copy_from_slice(&id[..id.len().min(20)]);
                bid[20] = id.len().min(20) as u8;
                body.extend_from_slice(&bid);
                body.extend_from_slice(path.as_bytes());
                body.push(0);
                while (body.len() + 8) % 64 != 0 {
                    body.push(0);
                }
                b.extend_from_slice(&(rtype::HEADER_BUILD_ID).to_le_bytes());
                b.extend_from_slice(&(2u16 | super::header::MISC_BUILD_ID_SIZE).to_le_bytes());
                b.extend_from_slice(&((body.len() + 8) as u16).to_le_bytes());
                b.extend(body);
            }
            feats.push((Feature::BUILD_ID, b));
        }
        for (f, s) in [
            (Feature::HOSTNAME, &self.hostname),
            (Feature::OSRELEASE, &self.os_release),
            (Feature::ARCH, &self.arch),
        ] {
            let mut b = Vec::new();
            perf_string(&mut b, s);
            feats.push((f, b));
        }
        {
            let n = if self.cpus.is_empty() {
                2
            } else {
                self.cpus.len() as u32
            };
            let mut b = Vec::new();
            b.extend_from_slice(&n.to_le_bytes());
            b.extend_from_slice(&n.to_le_bytes());
            feats.push((Feature::NRCPUS, b));
        }
        if !self.cpus.is_empty() {
            // Sibling lists: CPUs of each socket, of each core, of each die.
            let lists = |key: &dyn Fn(&(i32, i32, i32)) -> (i32, i32)| {
                let mut groups: Vec<((i32, i32), Vec<usize>)> = Vec::new();
                for (i, c) in self.cpus.iter().enumerate() {
                    match groups.iter_mut().find(|g| g.0 == key(c)) {
                        Some(g) => g.1.push(i),
                        None => groups.push((key(c), vec![i])),
                    }
                }
                groups
                    .into_iter()
                    .map(|g| cpu_list(&g.1))
                    .collect::<Vec<_>>()
            };
            let mut b = Vec::new();
            for l in [lists(&|c| (c.2, 0)), lists(&|c| (c.2, c.0))] {
                b.extend_from_slice(&(l.len() as u32).to_le_bytes());
                for x in &l {
                    perf_string(&mut b, x);
                }
            }
            for &(core, _, socket) in &self.cpus {
                b.extend_from_slice(&core.to_le_bytes());
                b.extend_from_slice(&socket.to_le_bytes());
            }
            let dies = lists(&|c| (c.2, c.1));
            b.extend_from_slice(&(dies.len() as u32).to_le_bytes());
            for x in &dies {
                perf_string(&mut b, x);
            }
            for &(_, die, _) in &self.cpus {
                b.extend_from_slice(&die.to_le_bytes());
            }
            feats.push((Feature::CPU_TOPOLOGY, b));
        }
        {
            let mut b = Vec::new();
            b.extend_from_slice(&(self.cmdline.len() as u32).to_le_bytes());
            for a in &self.cmdline {
                perf_string(&mut b, a);
            }
            feats.push((Feature::CMDLINE, b));
        }
        {
            let mut b = Vec::new();
            b.extend_from_slice(&(self.events.len() as u32).to_le_bytes());
            b.extend_from_slice(&(attr_size as u32).to_le_bytes());
            for e in &self.events {
                b.extend(e.attr.encode());
                b.extend_from_slice(&(e.ids.len() as u32).to_le_bytes());
                perf_string(&mut b, e.name.as_deref().unwrap_or(""));
                for id in &e.ids {
                    b.extend_from_slice(&id.to_le_bytes());
                }
            }
            feats.push((Feature::EVENT_DESC, b));
        }
        if let Some((clockid, wall, clk)) = self.clock_data {
            // CLOCKID: the clock's resolution; CLOCK_DATA: version 1.
            feats.push((Feature::CLOCKID, 1u64.to_le_bytes().to_vec()));
            let mut b = Vec::new();
            b.extend_from_slice(&1u32.to_le_bytes());
            b.extend_from_slice(&clockid.to_le_bytes());
            b.extend_from_slice(&wall.to_le_bytes());
            b.extend_from_slice(&clk.to_le_bytes());
            feats.push((Feature::CLOCK_DATA, b));
        }
        if !self.groups.is_empty() {
            let mut b = Vec::new();
            b.extend_from_slice(&(self.groups.len() as u32).to_le_bytes());
            for (name, leader, n) in &self.groups {
                perf_string(&mut b, name);
                b.extend_from_slice(&leader.to_le_bytes());
                b.extend_from_slice(&n.to_le_bytes());
            }
            feats.push((Feature::GROUP_DESC, b));
        }
        feats.sort_by_key(|(f, _)| f.0);
        let table_off = out.len();
        out.resize(table_off + 16 * feats.len(), 0);
        let mut bits = [0u64; 4];
        for (i, (f, d)) in feats.iter().enumerate() {
            bits[(f.0 / 64) as usize] |= 1 << (f.0 % 64);
            let off = out.len() as u64;
            out.extend_from_slice(d);
            let p = table_off + 16 * i;
            out[p..p + 8].copy_from_slice(&off.to_le_bytes());
            out[p + 8..p + 16].copy_from_slice(&(d.len() as u64).to_le_bytes());
        }

        // Header.
        let mut h = Vec::with_capacity(FILE_HEADER_SIZE);
        h.extend_from_slice(MAGIC_LE);
        h.extend_from_slice(&(FILE_HEADER_SIZE as u64).to_le_bytes());
        h.extend_from_slice(&((attr_size + 16) as u64).to_le_bytes());
        for v in [attrs_off, attrs_size, data_off, data_size, 0, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in bits {
            h.extend_from_slice(&v.to_le_bytes());
        }
        out[..FILE_HEADER_SIZE].copy_from_slice(&h);
        out
    }
}
