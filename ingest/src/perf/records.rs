//! Typed perf records, decoded from record bodies. No Arrow here.
//!
//! The sample decoder follows the PERF_RECORD_SAMPLE layout of
//! `include/uapi/linux/perf_event.h` field by field, including the parts
//! linux-perf-event-reader drops or misreads (group read values, branch
//! stacks, weight struct, data_src, cgroup).

use super::bytes::{Cursor, U64s};
use super::header::{branch, read_format, sample, Attr};

pub mod rtype {
    pub const MMAP: u32 = 1;
    pub const LOST: u32 = 2;
    pub const COMM: u32 = 3;
    pub const EXIT: u32 = 4;
    pub const THROTTLE: u32 = 5;
    pub const UNTHROTTLE: u32 = 6;
    pub const FORK: u32 = 7;
    pub const READ: u32 = 8;
    pub const SAMPLE: u32 = 9;
    pub const MMAP2: u32 = 10;
    pub const LOST_SAMPLES: u32 = 13;
    pub const SWITCH: u32 = 14;
    pub const SWITCH_CPU_WIDE: u32 = 15;
    /// PERF_RECORD_CALLCHAIN_DEFERRED (Linux 6.17), the newest type known.
    pub const LAST_KNOWN_KERNEL: u32 = 22;
    pub const MAX_KERNEL: u32 = 63;

    pub const HEADER_ATTR: u32 = 64;
    pub const HEADER_EVENT_TYPE: u32 = 65;
    pub const HEADER_TRACING_DATA: u32 = 66;
    pub const HEADER_BUILD_ID: u32 = 67;
    pub const FINISHED_ROUND: u32 = 68;
    pub const AUXTRACE_INFO: u32 = 70;
    pub const AUXTRACE: u32 = 71;
    pub const EVENT_UPDATE: u32 = 78;
    pub const HEADER_FEATURE: u32 = 80;
    pub const COMPRESSED: u32 = 81;
    pub const FINISHED_INIT: u32 = 82;
    pub const COMPRESSED2: u32 = 83;
    /// PERF_RECORD_SCHEDSTAT_DOMAIN (perf 6.17), the newest user type
    /// known (after BPF_METADATA 84 and SCHEDSTAT_CPU 85).
    pub const LAST_KNOWN_USER: u32 = 86;
    pub const MAX_USER: u32 = 127;
}

pub const MISC_CPUMODE_MASK: u16 = 7;
pub const MISC_MMAP_DATA: u16 = 1 << 13;
pub const MISC_COMM_EXEC: u16 = 1 << 13;
pub const MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// SWITCH records: the task switched out (else in), and was preempted
/// (still runnable) rather than blocked.
pub const MISC_SWITCH_OUT: u16 = 1 << 13;
pub const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;

/// Callchain context markers (`enum perf_callchain_context`).
pub mod context {
    pub const HV: u64 = -32i64 as u64;
    pub const KERNEL: u64 = -128i64 as u64;
    pub const USER: u64 = -512i64 as u64;
    pub const GUEST: u64 = -2048i64 as u64;
    pub const GUEST_KERNEL: u64 = -2176i64 as u64;
    pub const GUEST_USER: u64 = -2560i64 as u64;
    pub const MAX: u64 = -4095i64 as u64;
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuMode {
    Unknown,
    Kernel,
    User,
    Hypervisor,
    GuestKernel,
    GuestUser,
}

impl CpuMode {
    /// Every mode, in declaration order (`mode as usize` indexes it).
    pub const ALL: [CpuMode; 6] = [
        CpuMode::Unknown,
        CpuMode::Kernel,
        CpuMode::User,
        CpuMode::Hypervisor,
        CpuMode::GuestKernel,
        CpuMode::GuestUser,
    ];

    pub fn from_misc(misc: u16) -> CpuMode {
        match misc & MISC_CPUMODE_MASK {
            1 => CpuMode::Kernel,
            2 => CpuMode::User,
            3 => CpuMode::Hypervisor,
            4 => CpuMode::GuestKernel,
            5 => CpuMode::GuestUser,
            _ => CpuMode::Unknown,
        }
    }
    /// The mode a callchain context marker switches to.
    pub fn from_context(marker: u64) -> Option<CpuMode> {
        Some(match marker {
            context::HV => CpuMode::Hypervisor,
            context::KERNEL => CpuMode::Kernel,
            context::USER => CpuMode::User,
            context::GUEST_KERNEL => CpuMode::GuestKernel,
            context::GUEST_USER => CpuMode::GuestUser,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            CpuMode::Unknown => "unknown",
            CpuMode::Kernel => "kernel",
            CpuMode::User => "user",
            CpuMode::Hypervisor => "hypervisor",
            CpuMode::GuestKernel => "guest_kernel",
            CpuMode::GuestUser => "guest_user",
        }
    }
    pub fn is_kernel(self) -> bool {
        matches!(
            self,
            CpuMode::Kernel | CpuMode::GuestKernel | CpuMode::Hypervisor
        )
    }
}

/// The `struct sample_id` trailer of non-sample records (sample_id_all).
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleId {
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub id: Option<u64>,
    pub cpu: Option<u32>,
}

impl SampleId {
    /// Parses the trailer at the end of `body`; returns it and the body
    /// without it.
    pub fn split<'a>(body: &'a [u8], attr: &Attr, be: bool) -> (SampleId, &'a [u8]) {
        let n = attr.trailer_len();
        if n == 0 || body.len() < n {
            return (SampleId::default(), body);
        }
        let (rest, tr) = body.split_at(body.len() - n);
        let mut c = Cursor::new(tr, be);
        let st = attr.sample_type;
        let mut s = SampleId::default();
        if st & sample::TID != 0 {
            s.pid = c.i32();
            s.tid = c.i32();
        }
        if st & sample::TIME != 0 {
            s.time = c.u64();
        }
        if st & sample::ID != 0 {
            s.id = c.u64();
        }
        if st & sample::STREAM_ID != 0 {
            c.u64();
        }
        if st & sample::CPU != 0 {
            s.cpu = c.u32();
            c.u32();
        }
        if st & sample::IDENTIFIER != 0 {
            s.id = c.u64();
        }
        (s, rest)
    }
}

/// Counter values of PERF_SAMPLE_READ.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadValues {
    pub time_enabled: Option<u64>,
    pub time_running: Option<u64>,
    /// (value, kernel id, lost) per counter; one entry without
    /// PERF_FORMAT_GROUP.
    pub values: Vec<(u64, Option<u64>, Option<u64>)>,
}

/// One Last Branch Record entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    pub from: u64,
    pub to: u64,
    pub flags: u64,
    pub counters: Option<u64>,
}

impl BranchEntry {
    pub fn mispred(&self) -> bool {
        self.flags & 1 != 0
    }
    pub fn predicted(&self) -> bool {
        self.flags & 2 != 0
    }
    pub fn in_tx(&self) -> bool {
        self.flags & 4 != 0
    }
    pub fn abort(&self) -> bool {
        self.flags & 8 != 0
    }
    pub fn cycles(&self) -> u32 {
        ((self.flags >> 4) & 0xffff) as u32
    }
    pub fn br_type(&self) -> u32 {
        ((self.flags >> 20) & 0xf) as u32
    }
    pub fn spec(&self) -> u32 {
        ((self.flags >> 24) & 0x3) as u32
    }
    pub fn new_type(&self) -> u32 {
        ((self.flags >> 26) & 0xf) as u32
    }
    pub fn privilege(&self) -> u32 {
        ((self.flags >> 30) & 0x7) as u32
    }
}

#[derive(Clone, Debug)]
pub struct BranchStack<'a> {
    pub hw_idx: Option<u64>,
    entries: &'a [u8],
    counters: Option<&'a [u8]>,
    be: bool,
}

impl<'a> BranchStack<'a> {
    pub fn len(&self) -> usize {
        self.entries.len() / 24
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn iter(&self) -> impl Iterator<Item = BranchEntry> + '_ {
        let counters = self.counters.map(|c| U64s::new(c, self.be));
        self.entries
            .chunks_exact(24)
            .enumerate()
            .map(move |(i, ch)| {
                let v = U64s::new(ch, self.be);
                BranchEntry {
                    from: v.get(0).unwrap_or(0),
                    to: v.get(1).unwrap_or(0),
                    flags: v.get(2).unwrap_or(0),
                    counters: counters.and_then(|c| c.get(i)),
                }
            })
    }
}

#[derive(Clone, Debug)]
pub struct UserRegs<'a> {
    pub abi: u64,
    pub mask: u64,
    pub regs: U64s<'a>,
}

#[derive(Clone, Debug)]
pub struct UserStack<'a> {
    pub size: u64,
    pub data: &'a [u8],
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Weight {
    pub weight: u64,
    pub ins_lat: Option<u32>,
    pub var3: Option<u32>,
}

/// A decoded PERF_RECORD_SAMPLE. Optional parts are `None` when the event's
/// sample_type does not carry them.
#[derive(Clone, Debug, Default)]
pub struct Sample<'a> {
    pub misc: u16,
    pub id: Option<u64>,
    pub ip: Option<u64>,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub time: Option<u64>,
    pub addr: Option<u64>,
    pub stream_id: Option<u64>,
    pub cpu: Option<u32>,
    pub period: Option<u64>,
    pub read: Option<ReadValues>,
    pub callchain: Option<U64s<'a>>,
    pub raw: Option<&'a [u8]>,
    pub branch: Option<BranchStack<'a>>,
    pub user_regs: Option<UserRegs<'a>>,
    pub user_stack: Option<UserStack<'a>>,
    pub weight: Option<Weight>,
    pub data_src: Option<u64>,
    pub transaction: Option<u64>,
    pub phys_addr: Option<u64>,
    pub cgroup: Option<u64>,
    pub data_page_size: Option<u64>,
    pub code_page_size: Option<u64>,
}

impl<'a> Sample<'a> {
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
}

fn need<T>(v: Option<T>, what: &'static str) -> Result<T, String> {
    v.ok_or_else(|| format!("sample record ends inside {what}"))
}

/// Decodes a sample body. `Err` says which field the record ended in or
/// what was inconsistent.
pub fn decode_sample<'a>(
    body: &'a [u8],
    misc: u16,
    attr: &Attr,
    be: bool,
) -> Result<Sample<'a>, String> {
    let mut s = Sample::default();
    decode_sample_into(body, misc, attr, be, &mut s)?;
    Ok(s)
}

/// Decodes a sample body into `s` (a default `Sample`): the hot path of
/// ingest decodes into a local instead of moving the result around.
pub fn decode_sample_into<'a>(
    body: &'a [u8],
    misc: u16,
    attr: &Attr,
    be: bool,
    s: &mut Sample<'a>,
) -> Result<(), String> {
    let st = attr.sample_type;
    let mut c = Cursor::new(body, be);
    s.misc = misc;
    if st & sample::IDENTIFIER != 0 {
        s.id = Some(need(c.u64(), "identifier")?);
    }
    if st & sample::IP != 0 {
        s.ip = Some(need(c.u64(), "ip")?);
    }
    if st & sample::TID != 0 {
        s.pid = Some(need(c.i32(), "pid")?);
        s.tid = Some(need(c.i32(), "tid")?);
    }
    if st & sample::TIME != 0 {
        s.time = Some(need(c.u64(), "time")?);
    }
    if st & sample::ADDR != 0 {
        s.addr = Some(need(c.u64(), "addr")?);
    }
    if st & sample::ID != 0 {
        s.id = Some(need(c.u64(), "id")?);
    }
    if st & sample::STREAM_ID != 0 {
        s.stream_id = Some(need(c.u64(), "stream_id")?);
    }
    if st & sample::CPU != 0 {
        s.cpu = Some(need(c.u32(), "cpu")?);
        need(c.u32(), "cpu")?;
    }
    if st & sample::PERIOD != 0 {
        s.period = Some(need(c.u64(), "period")?);
    }
    if st & sample::READ != 0 {
        let rf = attr.read_format;
        let mut rv = ReadValues::default();
        let counter = |c: &mut Cursor| -> Result<(u64, Option<u64>, Option<u64>), String> {
            let v = need(c.u64(), "read value")?;
            let id = if rf & read_format::ID != 0 {
                Some(need(c.u64(), "read id")?)
            } else {
                None
            };
            let lost = if rf & read_format::LOST != 0 {
                Some(need(c.u64(), "read lost")?)
            } else {
                None
            };
            Ok((v, id, lost))
        };
        if rf & read_format::GROUP != 0 {
            let nr = need(c.u64(), "read nr")?;
            if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                rv.time_enabled = Some(need(c.u64(), "time_enabled")?);
            }
            if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                rv.time_running = Some(need(c.u64(), "time_running")?);
            }
            let per = 8
                * (1 + (rf & read_format::ID != 0) as usize
                    + (rf & read_format::LOST != 0) as usize);
            if nr as usize > c.remaining() / per {
                return Err(format!(
                    "group read claims {nr} counters, more than the record holds"
                ));
            }
            for _ in 0..nr {
                rv.values.push(counter(&mut c)?);
            }
        } else {
            let v = need(c.u64(), "read value")?;
            if rf & read_format::TOTAL_TIME_ENABLED != 0 {
                rv.time_enabled = Some(need(c.u64(), "time_enabled")?);
            }
            if rf & read_format::TOTAL_TIME_RUNNING != 0 {
                rv.time_running = Some(need(c.u64(), "time_running")?);
            }
            let id = if rf & read_format::ID != 0 {
                Some(need(c.u64(), "read id")?)
            } else {
                None
            };
            let lost = if rf & read_format::LOST != 0 {
                Some(need(c.u64(), "read lost")?)
            } else {
                None
            };
            rv.values.push((v, id, lost));
        }
        s.read = Some(rv);
    }
    if st & sample::CALLCHAIN != 0 {
        let nr = need(c.u64(), "callchain nr")?;
        if nr as usize > c.remaining() / 8 {
            return Err(format!(
                "callchain claims {nr} entries, more than the record holds"
            ));
        }
        s.callchain = Some(U64s::new(c.bytes(nr as usize * 8).unwrap_or(&[]), be));
    }
    if st & sample::RAW != 0 {
        let size = need(c.u32(), "raw size")? as usize;
        s.raw = Some(need(c.bytes(size), "raw data")?);
    }
    if st & sample::BRANCH_STACK != 0 {
        let nr = need(c.u64(), "branch nr")?;
        let hw_idx = if attr.branch_sample_type & branch::HW_INDEX != 0 {
            Some(need(c.u64(), "branch hw_idx")?)
        } else {
            None
        };
        if nr as usize > c.remaining() / 24 {
            return Err(format!(
                "branch stack claims {nr} entries, more than the record holds"
            ));
        }
        let entries = c.bytes(nr as usize * 24).unwrap_or(&[]);
        let counters = if attr.branch_sample_type & branch::COUNTERS != 0 {
            Some(need(c.bytes(nr as usize * 8), "branch counters")?)
        } else {
            None
        };
        s.branch = Some(BranchStack {
            hw_idx,
            entries,
            counters,
            be,
        });
    }
    if st & sample::REGS_USER != 0 {
        let abi = need(c.u64(), "user regs abi")?;
        let n = if abi != 0 {
            attr.sample_regs_user.count_ones() as usize
        } else {
            0
        };
        let regs = U64s::new(need(c.bytes(n * 8), "user regs")?, be);
        s.user_regs = Some(UserRegs {
            abi,
            mask: attr.sample_regs_user,
            regs,
        });
    }
    if st & sample::STACK_USER != 0 {
        let size = need(c.u64(), "user stack size")?;
        if size != 0 {
            if size as usize > c.remaining() {
                return Err(format!(
                    "user stack claims {size} bytes, more than the record holds"
                ));
            }
            let data = c.bytes(size as usize).unwrap_or(&[]);
            let dyn_size = need(c.u64(), "user stack dyn_size")?;
            let used = (dyn_size as usize).min(data.len());
            s.user_stack = Some(UserStack {
                size,
                data: &data[..used],
            });
        }
    }
    if st & (sample::WEIGHT | sample::WEIGHT_STRUCT) != 0 {
        let w = need(c.u64(), "weight")?;
        s.weight = Some(if st & sample::WEIGHT_STRUCT != 0 {
            // union perf_sample_weight { u64 full; struct { u32 var1_dw; u16 var2_w; u16 var3_w; } }
            let (var1, var2, var3) = if be {
                (
                    (w >> 32) as u32,
                    ((w >> 16) & 0xffff) as u32,
                    (w & 0xffff) as u32,
                )
            } else {
                (
                    (w & 0xffff_ffff) as u32,
                    ((w >> 32) & 0xffff) as u32,
                    (w >> 48) as u32,
                )
            };
            Weight {
                weight: var1 as u64,
                ins_lat: Some(var2),
                var3: Some(var3),
            }
        } else {
            Weight {
                weight: w,
                ins_lat: None,
                var3: None,
            }
        });
    }
    if st & sample::DATA_SRC != 0 {
        s.data_src = Some(need(c.u64(), "data_src")?);
    }
    if st & sample::TRANSACTION != 0 {
        s.transaction = Some(need(c.u64(), "transaction")?);
    }
    if st & sample::REGS_INTR != 0 {
        let abi = need(c.u64(), "intr regs abi")?;
        if abi != 0 {
            need(
                c.bytes(attr.sample_regs_intr.count_ones() as usize * 8),
                "intr regs",
            )?;
        }
    }
    if st & sample::PHYS_ADDR != 0 {
        s.phys_addr = Some(need(c.u64(), "phys_addr")?);
    }
    if st & sample::CGROUP != 0 {
        s.cgroup = Some(need(c.u64(), "cgroup")?);
    }
    if st & sample::DATA_PAGE_SIZE != 0 {
        s.data_page_size = Some(need(c.u64(), "data_page_size")?);
    }
    if st & sample::CODE_PAGE_SIZE != 0 {
        s.code_page_size = Some(need(c.u64(), "code_page_size")?);
    }
    // PERF_SAMPLE_AUX follows; it is not kept.
    Ok(())
}

/// MMAP or MMAP2.
#[derive(Clone, Debug)]
pub struct Mmap<'a> {
    pub misc: u16,
    pub pid: i32,
    pub tid: i32,
    pub start: u64,
    pub len: u64,
    pub pgoff: u64,
    /// MMAP2 only.
    pub prot: Option<u32>,
    pub flags: Option<u32>,
    pub dev: Option<(u32, u32, u64)>,
    pub build_id: Option<&'a [u8]>,
    pub path: &'a [u8],
}

impl<'a> Mmap<'a> {
    pub fn cpu_mode(&self) -> CpuMode {
        CpuMode::from_misc(self.misc)
    }
    pub fn executable(&self) -> bool {
        self.misc & MISC_MMAP_DATA == 0
    }
}

pub fn decode_mmap<'a>(body: &'a [u8], misc: u16, v2: bool, be: bool) -> Result<Mmap<'a>, String> {
    let mut c = Cursor::new(body, be);
    let bad = || "mmap record too short".to_string();
    let pid = c.i32().ok_or_else(bad)?;
    let tid = c.i32().ok_or_else(bad)?;
    let start = c.u64().ok_or_else(bad)?;
    let len = c.u64().ok_or_else(bad)?;
    let pgoff = c.u64().ok_or_else(bad)?;
    let mut m = Mmap {
        misc,
        pid,
        tid,
        start,
        len,
        pgoff,
        prot: None,
        flags: None,
        dev: None,
        build_id: None,
        path: &[],
    };
    if v2 {
        if misc & MISC_MMAP_BUILD_ID != 0 {
            let n = c.u8().ok_or_else(bad)? as usize;
            c.skip(3).ok_or_else(bad)?;
            let b = c.bytes(20).ok_or_else(bad)?;
            if n > 20 {
                return Err(format!("mmap2 build-id length {n} > 20"));
            }
            m.build_id = Some(&b[..n]);
        } else {
            let maj = c.u32().ok_or_else(bad)?;
            let min = c.u32().ok_or_else(bad)?;
            let ino = c.u64().ok_or_else(bad)?;
            c.u64().ok_or_else(bad)?; // ino_generation
            m.dev = Some((maj, min, ino));
        }
        m.prot = Some(c.u32().ok_or_else(bad)?);
        m.flags = Some(c.u32().ok_or_else(bad)?);
    }
    m.path = c.cstr_rest();
    Ok(m)
}

#[derive(Clone, Debug)]
pub struct Comm<'a> {
    pub pid: i32,
    pub tid: i32,
    pub exec: bool,
    pub name: &'a [u8],
}

pub fn decode_comm<'a>(body: &'a [u8], misc: u16, be: bool) -> Result<Comm<'a>, String> {
    let mut c = Cursor::new(body, be);
    let bad = || "comm record too short".to_string();
    Ok(Comm {
        pid: c.i32().ok_or_else(bad)?,
        tid: c.i32().ok_or_else(bad)?,
        exec: misc & MISC_COMM_EXEC != 0,
        name: c.cstr_rest(),
    })
}

/// FORK or EXIT.
#[derive(Clone, Copy, Debug)]
pub struct Task {
    pub pid: i32,
    pub ppid: i32,
    pub tid: i32,
    pub ptid: i32,
    pub time: u64,
}

pub fn decode_task(body: &[u8], be: bool) -> Result<Task, String> {
    let mut c = Cursor::new(body, be);
    let bad = || "fork/exit record too short".to_string();
    Ok(Task {
        pid: c.i32().ok_or_else(bad)?,
        ppid: c.i32().ok_or_else(bad)?,
        tid: c.i32().ok_or_else(bad)?,
        ptid: c.i32().ok_or_else(bad)?,
        time: c.u64().ok_or_else(bad)?,
    })
}

/// The tracepoints whose payload (PERF_SAMPLE_RAW) is decoded with the
/// sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TracepointKind {
    SysEnter,
    SysExit,
    /// `sched:sched_switch`: the task leaving the CPU and the one taking it,
    /// its fields where the recording's format places them.
    SchedSwitch(SchedSwitchLayout),
}

/// Where `sched:sched_switch`'s fields are in its payload, (offset, size)
/// each: from the recording's format when it has one, else the layout of
/// 64-bit kernels since 4.x ([`SchedSwitchLayout::default`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedSwitchLayout {
    pub prev_comm: (u16, u16),
    pub prev_pid: (u16, u16),
    pub prev_prio: (u16, u16),
    pub prev_state: (u16, u16),
    pub next_comm: (u16, u16),
    pub next_pid: (u16, u16),
    pub next_prio: (u16, u16),
}

impl Default for SchedSwitchLayout {
    /// `/sys/kernel/tracing/events/sched/sched_switch/format` of 64-bit
    /// kernels: common fields (8 bytes), `char prev_comm[16]` at 8, `pid_t
    /// prev_pid` at 24, `int prev_prio` at 28, `long prev_state` at 32,
    /// `char next_comm[16]` at 40, `pid_t next_pid` at 56, `int next_prio`
    /// at 60.
    fn default() -> Self {
        SchedSwitchLayout {
            prev_comm: (8, 16),
            prev_pid: (24, 4),
            prev_prio: (28, 4),
            prev_state: (32, 8),
            next_comm: (40, 16),
            next_pid: (56, 4),
            next_prio: (60, 4),
        }
    }
}

impl SchedSwitchLayout {
    /// The layout of a format's fields (name, offset, size); None when one
    /// of the seven is missing or has a size trawl does not read.
    pub fn from_fields<'a>(
        fields: impl Iterator<Item = (&'a str, u16, u16)> + Clone,
    ) -> Option<Self> {
        let get = |name: &str, int: bool| {
            fields
                .clone()
                .find(|(n, _, _)| *n == name)
                .map(|(_, o, s)| (o, s))
                .filter(|(_, s)| !int || matches!(s, 1 | 2 | 4 | 8))
        };
        Some(SchedSwitchLayout {
            prev_comm: get("prev_comm", false)?,
            prev_pid: get("prev_pid", true)?,
            prev_prio: get("prev_prio", true)?,
            prev_state: get("prev_state", true)?,
            next_comm: get("next_comm", false)?,
            next_pid: get("next_pid", true)?,
            next_prio: get("next_prio", true)?,
        })
    }

    /// Bytes a payload needs.
    fn end(&self) -> usize {
        [
            self.prev_comm,
            self.prev_pid,
            self.prev_prio,
            self.prev_state,
            self.next_comm,
            self.next_pid,
            self.next_prio,
        ]
        .iter()
        .map(|(o, s)| usize::from(*o) + usize::from(*s))
        .max()
        .unwrap_or(0)
    }
}

/// The kind of tracepoint an event is, by its name.
pub fn tracepoint_kind(event_name: &str) -> Option<TracepointKind> {
    if event_name == "sched:sched_switch" {
        return Some(TracepointKind::SchedSwitch(SchedSwitchLayout::default()));
    }
    syscall_tracepoint(event_name).map(|(enter, _)| {
        if enter {
            TracepointKind::SysEnter
        } else {
            TracepointKind::SysExit
        }
    })
}

/// A decoded tracepoint payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Syscall(SyscallPayload),
    SchedSwitch(SchedSwitch),
}

/// Decodes the payload of a tracepoint of kind `kind`.
pub fn decode_payload(kind: TracepointKind, raw: &[u8], be: bool) -> Result<Payload, String> {
    match kind {
        TracepointKind::SysEnter => decode_syscall_payload(raw, true, be).map(Payload::Syscall),
        TracepointKind::SysExit => decode_syscall_payload(raw, false, be).map(Payload::Syscall),
        TracepointKind::SchedSwitch(l) => {
            decode_sched_switch(raw, be, &l).map(Payload::SchedSwitch)
        }
    }
}

/// A `sched:sched_switch` payload, read at the places its
/// [`SchedSwitchLayout`] gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedSwitch {
    pub prev_comm: String,
    /// Thread leaving the CPU (the kernel's pid is the thread id).
    pub prev_tid: i32,
    pub prev_prio: i32,
    /// Its state bits (TASK_INTERRUPTIBLE 0x1, TASK_UNINTERRUPTIBLE 0x2,
    /// ...; 0: runnable, i.e. preempted).
    pub prev_state: i64,
    pub next_comm: String,
    pub next_tid: i32,
    pub next_prio: i32,
}

impl SchedSwitch {
    /// `prev_state` as perf script prints it (`R`, `S`, `D`, `T`, `t`,
    /// `X`, `Z`, `P`, `I`, joined by `|`; `+` when preempted while
    /// marked runnable), from the format's print fmt.
    pub fn state_text(&self) -> String {
        const NAMES: [(i64, &str); 8] = [
            (0x1, "S"),
            (0x2, "D"),
            (0x4, "T"),
            (0x8, "t"),
            (0x10, "X"),
            (0x20, "Z"),
            (0x40, "P"),
            (0x80, "I"),
        ];
        // TASK_REPORT_MAX: the bits above are reported; the next one
        // (0x100) means preempted.
        let st = self.prev_state & 0xff;
        let mut out = if st == 0 {
            "R".to_string()
        } else {
            NAMES
                .iter()
                .filter(|(b, _)| st & b != 0)
                .map(|(_, n)| *n)
                .collect::<Vec<_>>()
                .join("|")
        };
        if self.prev_state & 0x100 != 0 {
            out.push('+');
        }
        out
    }
}

pub fn decode_sched_switch(
    raw: &[u8],
    be: bool,
    l: &SchedSwitchLayout,
) -> Result<SchedSwitch, String> {
    if raw.len() < l.end() {
        return Err(format!(
            "sched_switch payload of {} bytes is shorter than its {}-byte layout",
            raw.len(),
            l.end()
        ));
    }
    let bytes = |(o, s): (u16, u16)| &raw[usize::from(o)..usize::from(o) + usize::from(s)];
    let comm = |f| {
        let b = bytes(f);
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    // A signed integer of the field's size.
    let int = |f| {
        let b = bytes(f);
        let mut v = 0u64;
        for i in 0..b.len() {
            let x = if be { b[i] } else { b[b.len() - 1 - i] };
            v = v << 8 | u64::from(x);
        }
        let shift = 64 - 8 * b.len() as u32;
        ((v << shift) as i64) >> shift
    };
    Ok(SchedSwitch {
        prev_comm: comm(l.prev_comm),
        prev_tid: int(l.prev_pid) as i32,
        prev_prio: int(l.prev_prio) as i32,
        prev_state: int(l.prev_state),
        next_comm: comm(l.next_comm),
        next_tid: int(l.next_pid) as i32,
        next_prio: int(l.next_prio) as i32,
    })
}

/// Which half of a system call a `syscalls:sys_enter_NAME` /
/// `syscalls:sys_exit_NAME` tracepoint records, and NAME.
pub fn syscall_tracepoint(event_name: &str) -> Option<(bool, &str)> {
    let n = event_name.strip_prefix("syscalls:")?;
    if let Some(name) = n.strip_prefix("sys_enter_") {
        return (!name.is_empty()).then_some((true, name));
    }
    n.strip_prefix("sys_exit_")
        .filter(|name| !name.is_empty())
        .map(|name| (false, name))
}

/// The payload (PERF_SAMPLE_RAW) of a syscall tracepoint, decoded from the
/// layout of `/sys/kernel/tracing/events/syscalls/sys_*_NAME/format`
/// (64-bit kernels): 8 bytes of common fields, `int __syscall_nr` at 8,
/// then at 16 either the arguments (`unsigned long` each, as many as the
/// call has) or `long ret`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallPayload {
    Enter { nr: i32, args: [u64; 6], nargs: u8 },
    Exit { nr: i32, ret: i64 },
}

pub fn decode_syscall_payload(raw: &[u8], enter: bool, be: bool) -> Result<SyscallPayload, String> {
    let mut c = Cursor::new(raw, be);
    c.skip(8).ok_or_else(|| {
        format!(
            "syscall tracepoint payload of {} bytes has no common fields",
            raw.len()
        )
    })?;
    let nr = c.i32().ok_or_else(|| {
        format!(
            "syscall tracepoint payload of {} bytes ends before __syscall_nr",
            raw.len()
        )
    })?;
    c.skip(4).ok_or_else(|| {
        format!(
            "syscall tracepoint payload of {} bytes ends after __syscall_nr",
            raw.len()
        )
    })?;
    if enter {
        // The raw area is padded so that it ends 8-aligned with its u32
        // size: whole 8-byte words after offset 16 are the arguments.
        let mut args = [0u64; 6];
        let mut nargs = 0u8;
        while (nargs as usize) < args.len() {
            let Some(v) = c.u64() else { break };
            args[nargs as usize] = v;
            nargs += 1;
        }
        Ok(SyscallPayload::Enter { nr, args, nargs })
    } else {
        let ret = c
            .u64()
            .ok_or_else(|| format!("sys_exit payload of {} bytes ends before ret", raw.len()))?;
        Ok(SyscallPayload::Exit {
            nr,
            ret: ret as i64,
        })
    }
}

/// A typed record, as the converter sees it.
#[derive(Clone, Debug)]
pub enum Record<'a> {
    Sample(Sample<'a>),
    Mmap(Mmap<'a>),
    Comm(Comm<'a>),
    Fork(Task),
    Exit(Task),
    /// PERF_RECORD_LOST: (event kernel id, count).
    Lost {
        id: u64,
        count: u64,
    },
    /// PERF_RECORD_LOST_SAMPLES.
    LostSamples {
        count: u64,
    },
    /// PERF_RECORD_SWITCH / SWITCH_CPU_WIDE (`perf record --switch-events`):
    /// the thread of the trailer switched out (else in); `preempt`: it was
    /// still runnable; `other`: the (pid, tid) switched to or from
    /// (CPU-wide records only).
    Switch {
        out: bool,
        preempt: bool,
        other: Option<(i32, i32)>,
    },
    /// A record trawl does not convert (throttle, context switch, ...).
    Other {
        record_type: u32,
    },
}

/// Decodes a kernel record body (trailer not yet removed).
pub fn decode<'a>(
    record_type: u32,
    misc: u16,
    body: &'a [u8],
    attr: &Attr,
    be: bool,
) -> Result<(Record<'a>, SampleId), String> {
    if record_type == rtype::SAMPLE {
        let s = decode_sample(body, misc, attr, be)?;
        let sid = SampleId {
            pid: s.pid,
            tid: s.tid,
            time: s.time,
            id: s.id,
            cpu: s.cpu,
        };
        return Ok((Record::Sample(s), sid));
    }
    let (sid, body) = SampleId::split(body, attr, be);
    let rec = match record_type {
        rtype::MMAP => Record::Mmap(decode_mmap(body, misc, false, be)?),
        rtype::MMAP2 => Record::Mmap(decode_mmap(body, misc, true, be)?),
        rtype::COMM => Record::Comm(decode_comm(body, misc, be)?),
        rtype::FORK => Record::Fork(decode_task(body, be)?),
        rtype::EXIT => Record::Exit(decode_task(body, be)?),
        rtype::LOST => {
            let mut c = Cursor::new(body, be);
            let id = c.u64().ok_or("lost record too short")?;
            let count = c.u64().ok_or("lost record too short")?;
            Record::Lost { id, count }
        }
        rtype::LOST_SAMPLES => {
            let mut c = Cursor::new(body, be);
            Record::LostSamples {
                count: c.u64().ok_or("lost_samples record too short")?,
            }
        }
        rtype::SWITCH | rtype::SWITCH_CPU_WIDE => {
            let other = if record_type == rtype::SWITCH_CPU_WIDE {
                let mut c = Cursor::new(body, be);
                let pid = c.i32().ok_or("switch_cpu_wide record too short")?;
                let tid = c.i32().ok_or("switch_cpu_wide record too short")?;
                Some((pid, tid))
            } else {
                None
            };
            Record::Switch {
                out: misc & MISC_SWITCH_OUT != 0,
                preempt: misc & MISC_SWITCH_OUT_PREEMPT != 0,
                other,
            }
        }
        t => Record::Other { record_type: t },
    };
    Ok((rec, sid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// sched_switch of a 32-bit kernel (`long prev_state` of 4 bytes: the
    /// fields after it 4 bytes earlier), read with the layout of its
    /// format; worked by hand.
    #[test]
    fn sched_switch_at_its_formats_places() {
        let fields = [
            ("common_type", 0u16, 2u16),
            ("prev_comm", 8, 16),
            ("prev_pid", 24, 4),
            ("prev_prio", 28, 4),
            ("prev_state", 32, 4),
            ("next_comm", 36, 16),
            ("next_pid", 52, 4),
            ("next_prio", 56, 4),
        ];
        let l = SchedSwitchLayout::from_fields(fields.iter().copied()).unwrap();
        let mut p = vec![0u8; 60];
        p[8..12].copy_from_slice(b"make");
        p[24..28].copy_from_slice(&4242i32.to_le_bytes());
        p[28..32].copy_from_slice(&120i32.to_le_bytes());
        p[32..36].copy_from_slice(&2i32.to_le_bytes());
        p[36..43].copy_from_slice(b"swapper");
        p[52..56].copy_from_slice(&0i32.to_le_bytes());
        p[56..60].copy_from_slice(&(-1i32).to_le_bytes());
        let s = decode_sched_switch(&p, false, &l).unwrap();
        assert_eq!(
            (
                s.prev_comm.as_str(),
                s.prev_tid,
                s.prev_prio,
                s.prev_state,
                s.state_text()
            ),
            ("make", 4242, 120, 2, "D".to_string())
        );
        assert_eq!(
            (s.next_comm.as_str(), s.next_tid, s.next_prio),
            ("swapper", 0, -1)
        );
        // The 64-bit layout needs 64 bytes: this payload is refused by it.
        assert!(decode_sched_switch(&p, false, &SchedSwitchLayout::default()).is_err());
        // A format without one of the fields gives no layout.
        assert!(SchedSwitchLayout::from_fields(fields[..7].iter().copied()).is_none());
    }
}
