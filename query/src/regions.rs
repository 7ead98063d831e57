//! Memory regions rebuilt from traced system calls (Morita et al., H/W
//! resource exhaustion analysis): which bytes of each process's address
//! space were allocated, by which call (and so which call stack), and when
//! they stopped being.
//!
//! The `syscall` table is replayed in time order, per address space:
//! - `mmap` adds `[ret, ret + len)` (page-rounded), replacing whatever it
//!   overlaps (`MAP_FIXED`); `munmap` removes its range, splitting regions;
//! - `mremap` moves the bytes it keeps (they stay attributed to the call
//!   that allocated them) and attributes growth to itself; shrinking frees
//!   the tail;
//! - `brk` grows the heap (`[old break, new break)` attributed to that
//!   call) or shrinks it;
//! - `fork`/`clone` without `CLONE_VM` copy the parent's regions into the
//!   child (still attributed to the parent's allocating calls); `vfork`
//!   and `clone(CLONE_VM)` share the parent's space; a successful `execve`
//!   starts an empty space; when the last thread of a space exits, its
//!   regions end.
//!
//! Exits come from `strace_event` and perf's task events
//! (`perf_task_event`). perf records no clone flags, so for its calls the
//! thread → process ids it knows (each call's `tgid`, FORK records) decide
//! whether a clone shares its parent's space. The replay is Rust because
//! splitting and moving regions is not SQL; `memory_region` is a lazy
//! table, replayed by the first query that reads it.
//!
//! The result is the table `memory_region`: one row per piece of a region
//! over the interval it existed unchanged (`from_ns` .. `to_ns`, null to =
//! still there when the trace ended; `end_reason` says why a piece ended:
//! `freed` by a call (munmap, mremap, brk, an overlapping mmap), `split`
//! when such a call took only part of it (the rest continues as new
//! pieces), `exit`/`exec` of its process). `live_regions(at_ns)`
//! (a table function, `analyses/syscall/live_regions.sql`) returns the
//! pieces alive at a time; `live_regions()` the pieces never freed by a
//! call: what each process still held when it exited (or exec'd, or the
//! trace ended) — its unfreed memory, which `unfreed(...)` attributes to
//! application functions and lines (`unfreed.sql`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int32Builder, Int64Builder, RecordBatch, StringBuilder, UInt64Builder,
};
use datafusion::arrow::datatypes::{Int32Type, Int64Type, SchemaRef, UInt64Type};
use datafusion::prelude::{lit, DataFrame};

use crate::error::Result;
use crate::functions::{Kind, Param, Spec};
use crate::report::{Answer, Captures, Opt, Report, Selects};
use crate::rows::string_values;
use crate::session::scalar;
use crate::session::Session;

const PAGE: u64 = 4096;

fn page_up(n: u64) -> u64 {
    n.div_ceil(PAGE).saturating_mul(PAGE)
}

/// Who allocated a piece of memory.
#[derive(Clone, Debug, PartialEq)]
struct Origin {
    syscall_id: i64,
    name: String,
    stack_id: Option<i64>,
    alloc_ns: Option<i64>,
    kind: &'static str,
    path: Option<String>,
}

#[derive(Clone, Debug)]
struct Piece {
    end: u64,
    origin: Arc<Origin>,
    /// The process it was allocated in (or inherited by).
    pid: Option<i32>,
    from_ns: Option<i64>,
}

#[derive(Default)]
struct Space {
    /// The process (thread group) the space belongs to: what `pid` of its
    /// pieces says, whichever thread made the call.
    pid: Option<i32>,
    pieces: BTreeMap<u64, Piece>,
    members: Vec<Option<i32>>,
    brk_start: Option<u64>,
    brk: Option<u64>,
}

/// A finished piece: a row of `memory_region`.
struct Row {
    capture: String,
    pid: Option<i32>,
    start: u64,
    end: u64,
    origin: Arc<Origin>,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
    freed_by: Option<i64>,
    end_reason: Option<&'static str>,
}

struct Replay {
    capture: String,
    spaces: Vec<Space>,
    space_of: HashMap<Option<i32>, usize>,
    rows: Vec<Row>,
    /// Thread → process, where the source said it (perf).
    tgid_of: Arc<HashMap<i32, i32>>,
}

impl Replay {
    fn space(&mut self, pid: Option<i32>) -> usize {
        if let Some(&s) = self.space_of.get(&pid) {
            return s;
        }
        self.spaces.push(Space {
            pid,
            members: vec![pid],
            ..Default::default()
        });
        let s = self.spaces.len() - 1;
        self.space_of.insert(pid, s);
        s
    }

    fn end_piece(
        &mut self,
        start: u64,
        p: Piece,
        t: Option<i64>,
        by: Option<i64>,
        why: Option<&'static str>,
    ) {
        self.rows.push(Row {
            capture: self.capture.clone(),
            pid: p.pid,
            start,
            end: p.end,
            origin: p.origin,
            from_ns: p.from_ns,
            to_ns: t,
            freed_by: by,
            end_reason: why,
        });
    }

    /// Removes `[a, b)` from space `s` at time `t`: the pieces it overlaps
    /// end, their parts outside the range continue as new pieces. Returns
    /// the removed parts (start, end, piece) for mremap to move.
    fn remove(
        &mut self,
        s: usize,
        a: u64,
        b: u64,
        t: Option<i64>,
        by: Option<i64>,
    ) -> Vec<(u64, u64, Piece)> {
        let mut hit: Vec<u64> = self.spaces[s]
            .pieces
            .range(..b)
            .filter(|(&st, p)| p.end > a && st < b)
            .map(|(&st, _)| st)
            .collect();
        hit.sort_unstable();
        let mut removed = Vec::new();
        for st in hit {
            let p = self.spaces[s].pieces.remove(&st).unwrap();
            let (lo, hi) = (st.max(a), p.end.min(b));
            if st < a {
                let left = Piece {
                    end: a,
                    from_ns: t,
                    ..p.clone()
                };
                self.spaces[s].pieces.insert(st, left);
            }
            if p.end > b {
                let right = Piece {
                    end: p.end,
                    from_ns: t,
                    ..p.clone()
                };
                self.spaces[s].pieces.insert(b, right);
            }
            // A piece partly freed ends as a whole ("split"); its parts
            // outside the range continue as new pieces.
            let why = if st < a || p.end > b {
                "split"
            } else {
                "freed"
            };
            removed.push((lo, hi, p.clone()));
            self.end_piece(st, p, t, by, Some(why));
        }
        removed
    }

    fn insert(
        &mut self,
        s: usize,
        a: u64,
        b: u64,
        origin: Arc<Origin>,
        pid: Option<i32>,
        t: Option<i64>,
    ) {
        if b > a {
            self.spaces[s].pieces.insert(
                a,
                Piece {
                    end: b,
                    origin,
                    pid,
                    from_ns: t,
                },
            );
        }
    }

    fn kill_space(&mut self, s: usize, t: Option<i64>, why: &'static str) {
        let pieces = std::mem::take(&mut self.spaces[s].pieces);
        for (st, p) in pieces {
            self.end_piece(st, p, t, None, Some(why));
        }
    }

    fn call(&mut self, c: &Call) {
        let t = c.time_ns;
        let Some(ret) = c.retval else { return };
        let origin = |kind: &'static str| {
            Arc::new(Origin {
                syscall_id: c.syscall_id,
                name: c.name.clone(),
                stack_id: c.stack_id,
                alloc_ns: t,
                kind,
                path: c.fd_path.clone(),
            })
        };
        match c.name.as_str() {
            "mmap" | "mmap2" if ret >= 0 => {
                let (Some(len), start) = (c.length, ret as u64) else {
                    return;
                };
                let s = self.space(c.pid);
                let end = start.saturating_add(page_up(len));
                self.remove(s, start, end, t, Some(c.syscall_id));
                let anon = c
                    .flags
                    .as_deref()
                    .is_some_and(|f| has_flag(f, "MAP_ANONYMOUS", 0x20));
                self.insert(
                    s,
                    start,
                    end,
                    origin(if anon { "anon" } else { "file" }),
                    self.spaces[s].pid,
                    t,
                );
            }
            "munmap" if ret == 0 => {
                let (Some(a), Some(len)) = (c.addr, c.length) else {
                    return;
                };
                let s = self.space(c.pid);
                self.remove(s, a, a.saturating_add(page_up(len)), t, Some(c.syscall_id));
            }
            "mremap" if ret >= 0 => {
                let (Some(old), Some(old_len), Some(new_len)) = (c.addr, c.length, c.new_length)
                else {
                    return;
                };
                let (old_len, new_len) = (page_up(old_len), page_up(new_len));
                let new = ret as u64;
                let s = self.space(c.pid);
                let kept = old_len.min(new_len);
                // The bytes kept move (or stay) with their attribution.
                let moved = self.remove(s, old, old.saturating_add(old_len), t, Some(c.syscall_id));
                self.remove(s, new, new.saturating_add(new_len), t, Some(c.syscall_id));
                for (lo, hi, p) in moved {
                    let off = lo - old;
                    if off >= kept {
                        continue;
                    }
                    // Saturating: addresses come from the dump, which may
                    // be corrupt.
                    let hi = hi.min(old.saturating_add(kept));
                    self.insert(
                        s,
                        new.saturating_add(off),
                        new.saturating_add(hi - old),
                        p.origin.clone(),
                        p.pid,
                        t,
                    );
                }
                if new_len > old_len {
                    let owner = self.spaces[s].pid;
                    self.insert(
                        s,
                        new.saturating_add(old_len),
                        new.saturating_add(new_len),
                        origin("anon"),
                        owner,
                        t,
                    );
                }
            }
            "brk" => {
                let s = self.space(c.pid);
                let new = ret as u64;
                let sp = &mut self.spaces[s];
                if sp.brk_start.is_none() {
                    sp.brk_start = Some(new);
                    sp.brk = Some(new);
                    return;
                }
                let cur = sp.brk.unwrap_or(new);
                sp.brk = Some(new);
                if new > cur {
                    let owner = self.spaces[s].pid;
                    self.insert(s, cur, new, origin("heap"), owner, t);
                } else if new < cur {
                    self.remove(s, new, cur, t, Some(c.syscall_id));
                }
            }
            "fork" | "vfork" | "clone" | "clone3" if ret > 0 => {
                let child = Some(ret as i32);
                let parent = self.space(c.pid);
                // perf knows every thread's process (clone3's flags are in
                // user memory it does not record); strace prints the flags.
                let same_process = match (
                    c.pid.and_then(|p| self.tgid_of.get(&p)),
                    self.tgid_of.get(&(ret as i32)),
                ) {
                    (Some(a), Some(b)) => Some(a == b),
                    _ => None,
                };
                let shares = c.name == "vfork"
                    || same_process.unwrap_or_else(|| {
                        clone_flags(&c.args).is_some_and(|f| has_flag(f, "CLONE_VM", 0x100))
                    });
                if shares {
                    self.spaces[parent].members.push(child);
                    self.space_of.insert(child, parent);
                } else {
                    let copy: Vec<(u64, Piece)> = self.spaces[parent]
                        .pieces
                        .iter()
                        .map(|(&st, p)| {
                            (
                                st,
                                Piece {
                                    pid: child,
                                    from_ns: t,
                                    ..p.clone()
                                },
                            )
                        })
                        .collect();
                    let (bs, b) = (self.spaces[parent].brk_start, self.spaces[parent].brk);
                    self.spaces.push(Space {
                        pid: child,
                        pieces: copy.into_iter().collect(),
                        members: vec![child],
                        brk_start: bs,
                        brk: b,
                    });
                    self.space_of.insert(child, self.spaces.len() - 1);
                }
            }
            "execve" | "execveat" if ret == 0 => {
                let s = self.space(c.pid);
                self.spaces[s].members.retain(|m| *m != c.pid);
                if self.spaces[s].members.is_empty() {
                    self.kill_space(s, t, "exec");
                }
                self.spaces.push(Space {
                    pid: c.pid,
                    members: vec![c.pid],
                    ..Default::default()
                });
                self.space_of.insert(c.pid, self.spaces.len() - 1);
            }
            _ => {}
        }
    }

    fn exit(&mut self, pid: Option<i32>, t: Option<i64>) {
        let Some(&s) = self.space_of.get(&pid) else {
            return;
        };
        self.spaces[s].members.retain(|m| *m != pid);
        self.space_of.remove(&pid);
        if self.spaces[s].members.is_empty() {
            self.kill_space(s, t, "exit");
        }
    }

    fn finish(mut self) -> Vec<Row> {
        for s in 0..self.spaces.len() {
            let pieces = std::mem::take(&mut self.spaces[s].pieces);
            for (st, p) in pieces {
                self.end_piece(st, p, None, None, None);
            }
        }
        self.rows
    }
}

/// Does a flags argument have `name` set? strace prints names
/// (`MAP_PRIVATE|MAP_ANONYMOUS`), with `-X raw` a number (`0x22`), with
/// `-X verbose` both (`0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */`); hex flag
/// words may be or-ed with decimal signal numbers (`0x1200000|17`).
fn has_flag(flags: &str, name: &str, bit: u64) -> bool {
    let code = flags.split("/*").next().unwrap_or(flags);
    flags
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|t| t == name)
        || code.split('|').any(|t| {
            t.trim()
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
                .is_some_and(|v| v & bit != 0)
        })
}

/// The flags of a clone call: `flags=...` (strace's decoding of clone and
/// clone3), else the first argument (raw clone).
fn clone_flags(args: &str) -> Option<&str> {
    match args.find("flags=") {
        Some(i) => {
            let rest = &args[i + 6..];
            Some(rest.split([',', '}']).next().unwrap_or(rest))
        }
        None => args.split(',').next(),
    }
}

struct Call {
    syscall_id: i64,
    pid: Option<i32>,
    time_ns: Option<i64>,
    name: String,
    args: String,
    retval: Option<i64>,
    addr: Option<u64>,
    length: Option<u64>,
    new_length: Option<u64>,
    flags: Option<String>,
    fd_path: Option<String>,
    stack_id: Option<i64>,
}

enum Step {
    Call(Call),
    Exit(Option<i32>, Option<i64>),
}

/// The columns of `memory_region` (its definition and column docs are
/// trawl-capture's `MEMORY_REGION`).
pub fn schema() -> SchemaRef {
    trawl_capture::schema::MEMORY_REGION.capture_schema()
}

/// The calls and exits that change address spaces, in replay order.
const CALLS: &str = include_str!("../analyses/syscall/inputs/region_calls.sql");

/// Thread → process of perf's threads: the calls' own `tgid`, and the
/// FORK records (threads that made no recorded call).
const TGIDS: &str = include_str!("../analyses/syscall/inputs/thread_process.sql");

/// Replays the captures' memory system calls into `memory_region` batches.
pub async fn regions(s: &Session) -> Result<Vec<RecordBatch>> {
    let mut tgids: HashMap<String, HashMap<i32, i32>> = HashMap::new();
    for b in s.sql(TGIDS).await?.collect().await? {
        let cap = string_values(b.column(0));
        let tid = b.column(1).as_primitive::<Int32Type>();
        let tgid = b.column(2).as_primitive::<Int32Type>();
        for i in 0..b.num_rows() {
            tgids
                .entry(cap[i].clone().unwrap_or_default())
                .or_default()
                .insert(tid.value(i), tgid.value(i));
        }
    }
    let tgids: HashMap<String, Arc<HashMap<i32, i32>>> =
        tgids.into_iter().map(|(k, v)| (k, Arc::new(v))).collect();
    let batches = s.sql(CALLS).await?.collect().await?;
    let mut replays: Vec<Replay> = Vec::new();
    for b in &batches {
        let cap = string_values(b.column(0));
        let id = b.column(1).as_primitive::<Int64Type>();
        let pid = b.column(2).as_primitive::<Int32Type>();
        let time = b.column(3).as_primitive::<Int64Type>();
        let name = string_values(b.column(4));
        let args = string_values(b.column(5));
        let ret = b.column(6).as_primitive::<Int64Type>();
        let addr = b.column(7).as_primitive::<UInt64Type>();
        let len = b.column(8).as_primitive::<UInt64Type>();
        let nlen = b.column(9).as_primitive::<UInt64Type>();
        let flags = string_values(b.column(10));
        let path = string_values(b.column(11));
        let stack = b.column(12).as_primitive::<Int64Type>();
        let is_exit = b.column(13).as_primitive::<Int64Type>();
        let opt_i32 = |a: &datafusion::arrow::array::PrimitiveArray<Int32Type>, i| {
            (!a.is_null(i)).then(|| a.value(i))
        };
        let opt_i64 = |a: &datafusion::arrow::array::PrimitiveArray<Int64Type>, i| {
            (!a.is_null(i)).then(|| a.value(i))
        };
        let opt_u64 = |a: &datafusion::arrow::array::PrimitiveArray<UInt64Type>, i| {
            (!a.is_null(i)).then(|| a.value(i))
        };
        for i in 0..b.num_rows() {
            let c = cap[i].clone().unwrap_or_default();
            if replays.last().is_none_or(|r| r.capture != c) {
                replays.push(Replay {
                    tgid_of: tgids.get(&c).cloned().unwrap_or_default(),
                    capture: c,
                    spaces: Vec::new(),
                    space_of: HashMap::new(),
                    rows: Vec::new(),
                });
            }
            let step = if is_exit.value(i) == 1 {
                Step::Exit(opt_i32(pid, i), opt_i64(time, i))
            } else {
                Step::Call(Call {
                    syscall_id: id.value(i),
                    pid: opt_i32(pid, i),
                    time_ns: opt_i64(time, i),
                    name: name[i].clone().unwrap_or_default(),
                    args: args[i].clone().unwrap_or_default(),
                    retval: opt_i64(ret, i),
                    addr: opt_u64(addr, i),
                    length: opt_u64(len, i),
                    new_length: opt_u64(nlen, i),
                    flags: flags[i].clone(),
                    fd_path: path[i].clone(),
                    stack_id: opt_i64(stack, i),
                })
            };
            let r = replays.last_mut().unwrap();
            match step {
                Step::Call(c) => r.call(&c),
                Step::Exit(p, t) => r.exit(p, t),
            }
        }
    }
    let rows: Vec<Row> = replays.into_iter().flat_map(Replay::finish).collect();
    Ok(vec![to_batch(&rows)?])
}

fn to_batch(rows: &[Row]) -> Result<RecordBatch> {
    let mut cap = StringBuilder::new();
    let mut pid = Int32Builder::new();
    let mut start = UInt64Builder::new();
    let mut end = UInt64Builder::new();
    let mut bytes = UInt64Builder::new();
    let mut kind = StringBuilder::new();
    let mut path = StringBuilder::new();
    let mut id = Int64Builder::new();
    let mut name = StringBuilder::new();
    let mut stack = Int64Builder::new();
    let mut alloc = Int64Builder::new();
    let mut from = Int64Builder::new();
    let mut to = Int64Builder::new();
    let mut freed = Int64Builder::new();
    let mut why = StringBuilder::new();
    for r in rows {
        cap.append_value(&r.capture);
        pid.append_option(r.pid);
        start.append_value(r.start);
        end.append_value(r.end);
        bytes.append_value(r.end - r.start);
        kind.append_value(r.origin.kind);
        path.append_option(r.origin.path.as_deref());
        id.append_value(r.origin.syscall_id);
        name.append_value(&r.origin.name);
        stack.append_option(r.origin.stack_id);
        alloc.append_option(r.origin.alloc_ns);
        from.append_option(r.from_ns);
        to.append_option(r.to_ns);
        freed.append_option(r.freed_by);
        why.append_option(r.end_reason);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(cap.finish()),
        Arc::new(pid.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(bytes.finish()),
        Arc::new(kind.finish()),
        Arc::new(path.finish()),
        Arc::new(id.finish()),
        Arc::new(name.finish()),
        Arc::new(stack.finish()),
        Arc::new(alloc.finish()),
        Arc::new(from.finish()),
        Arc::new(to.finish()),
        Arc::new(freed.finish()),
        Arc::new(why.finish()),
    ];
    Ok(RecordBatch::try_new(schema(), cols).map_err(datafusion::error::DataFusionError::from)?)
}

/// The attribution views (`_default_app`, `_stack_attribution`, `io_call`,
/// `_live_region`; Morita et al., H/W resource exhaustion analysis).
pub const ATTRIBUTION: &str = include_str!("../analyses/syscall/attribution.sql");

const AT_NS: Param = Param {
    name: "at_ns",
    kind: Kind::Int,
    doc: "a time on syscall.time_ns's clock (default: the end of each process)",
};

/// The application's path prefix, shared by the attribution analyses.
pub(crate) const APP: Param = Param {
    name: "app",
    kind: Kind::Text,
    doc: "path prefix of the application's files (default: the traced executable's directory)",
};

/// The processes an attribution report keeps.
pub(crate) const PID: Param = Param {
    name: "pid",
    kind: Kind::IntList,
    doc: "only these processes",
};

/// The option of [`PID`].
pub(crate) fn pid_opt() -> Opt {
    Opt::int32("pid", "Only these processes (repeatable).").many()
}

/// The name/value arguments of `pid` given as `pids`.
pub(crate) fn pid_args(pids: &[i32], args: &mut Vec<datafusion::prelude::Expr>) {
    for &p in pids {
        args.extend([lit("pid"), lit(p)]);
    }
}

/// `live_regions(at_ns)`.
pub static LIVE_REGIONS: Spec = Spec {
    name: "live_regions",
    doc: "The pieces of memory_region alive at a time, or never freed (what each process held when it exited).",
    sql: include_str!("../analyses/syscall/live_regions.sql"),
    positional: 1,
    params: &[AT_NS],
    columns: None,
    inputs: None,
};

/// `unfreed(at_ns, ...)`.
pub static UNFREED: Spec = Spec {
    name: "unfreed",
    doc: "Memory never given back (Morita et al.): bytes still mapped per process, application function, actual function and line.",
    sql: include_str!("../analyses/syscall/unfreed.sql"),
    positional: 1,
    params: &[AT_NS, APP, PID],
    columns: None,
    inputs: None,
};

/// Registers `memory_region`, the attribution views, `live_regions(...)`
/// and `unfreed(...)` on the session.
pub async fn register(s: &Session) -> Result<()> {
    s.register_derived(&trawl_capture::schema::MEMORY_REGION, |s| async move {
        regions(&s).await
    })?;
    s.define_views(ATTRIBUTION).await?;
    crate::functions::register(s, SPECS).await
}

/// The syscall table functions.
pub static SPECS: &[&Spec] = &[&LIVE_REGIONS, &UNFREED];

/// When to look at the regions: the end (unfreed memory), or a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    End,
    /// ns on the clock of `syscall.time_ns`.
    Ns(i64),
    /// Seconds after the first traced call, as ns.
    AfterStart(i64),
}

impl At {
    /// `end`, `+SECONDS` / `SECONDSs` (after the first call), or an
    /// absolute time in ns as in `syscall.time_ns`.
    pub fn parse(s: &str) -> Result<At> {
        let t = s.trim();
        if t == "end" {
            return Ok(At::End);
        }
        let secs = t.strip_prefix('+').or_else(|| t.strip_suffix('s'));
        if let Some(v) = secs {
            if let Ok(x) = v.parse::<f64>() {
                if x.is_finite() && x >= 0.0 {
                    return Ok(At::AfterStart((x * 1e9).round() as i64));
                }
            }
        } else if let Ok(n) = t.parse::<i64>() {
            return Ok(At::Ns(n));
        }
        Err(crate::error::Error::Usage(format!(
            "--at {s:?}: expected `end`, `+SECONDS` (after the first traced call) or a time in ns"
        )))
    }
}

/// A time in ns on `syscall.time_ns`'s clock; None for the end (or no
/// time given).
pub async fn resolve_at(s: &Session, at: Option<At>) -> Result<Option<i64>> {
    Ok(match at {
        None | Some(At::End) => None,
        Some(At::Ns(n)) => Some(n),
        Some(At::AfterStart(d)) => {
            let t0 = scalar(s, "SELECT CAST(min(time_ns) AS VARCHAR) FROM syscall").await?;
            let t0: i64 = t0.and_then(|v| v.parse().ok()).ok_or_else(|| {
                crate::error::Error::Usage(
                    "a +SECONDS time needs a trace with times (strace -t/-tt/-ttt/-r)".into(),
                )
            })?;
            Some(t0.saturating_add(d))
        }
    })
}

/// The directory of the traced program, with a trailing `/`
/// (`_default_app`), if any traced call has a stack.
pub async fn default_app(s: &Session) -> Result<Option<String>> {
    scalar(s, "SELECT dir FROM _default_app").await
}

/// `unfreed(...)` at `at`: bytes still allocated per process, application
/// function, actual function and application source line (the memory
/// table of Morita et al., Fig. 8 / Table 4), sorted by usage.
pub async fn unfreed(s: &Session, at: At, app: Option<&str>, pids: &[i32]) -> Result<DataFrame> {
    let at_ns = resolve_at(s, Some(at)).await?;
    let mut args = vec![lit(datafusion::scalar::ScalarValue::Int64(at_ns))];
    if let Some(a) = app {
        args.extend([lit("app"), lit(a)]);
    }
    pid_args(pids, &mut args);
    crate::functions::call(s, "unfreed", &args).await
}

/// The application a report attributes to: `app` as given, or the
/// traced executable's directory ([`default_app`]); and the line that
/// says so (no call stacks: attributed by process and file).
pub async fn app_of(s: &Session, app: Option<&str>) -> Result<(Option<String>, String)> {
    let app = match app {
        Some(p) => Some(p.to_string()),
        None => default_app(s).await?,
    };
    let line = match &app {
        Some(a) => format!("application: {a}*"),
        None => "no call stacks (strace -k, perf -g): attributed by process and file only; \
                 pass --app PATH_PREFIX to name the application"
            .to_string(),
    };
    Ok((app, line))
}

/// The option naming the application (`unfreed`, `io`, `cause`).
pub fn app_opt() -> crate::report::Opt {
    crate::report::Opt::text(
        "app",
        "Path prefix of the application's files: its function is the first frame from the leaf in a module under it (default: the directory of the traced executable).",
    )
}

/// The memory reports of traced calls.
pub static REPORTS: &[&Report] = &[&UNFREED_REPORT];

/// `trawl report unfreed`.
pub static UNFREED_REPORT: Report = Report {
    name: "unfreed",
    about: "Memory still allocated (mmap/brk/mremap regions not freed) at a time, from strace dumps: per process, application function, actual function and application source line (Morita et al.).",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::text("at", "`end` (default: what each process still held when it exited or the trace ended), `+SECONDS` after the first traced call, or a time in ns as in `syscall.time_ns`.").default("end"),
            app_opt(),
            pid_opt(),
        ]
    },
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let at = At::parse(g.text("at").unwrap_or("end"))?;
            let (app, line) = app_of(s, g.text("app")).await?;
            let pids = g.ints("pid")?;
            Ok(Answer::rows(unfreed(s, at, app.as_deref(), &pids).await?).heading(line))
        })
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_by_name_number_or_both() {
        assert!(has_flag("MAP_PRIVATE|MAP_ANONYMOUS", "MAP_ANONYMOUS", 0x20));
        assert!(has_flag("0x22", "MAP_ANONYMOUS", 0x20));
        assert!(has_flag(
            "0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */",
            "MAP_ANONYMOUS",
            0x20
        ));
        assert!(!has_flag(
            "0x802 /* MAP_PRIVATE|MAP_DENYWRITE */",
            "MAP_ANONYMOUS",
            0x20
        ));
        assert!(!has_flag(
            "MAP_PRIVATE|MAP_DENYWRITE",
            "MAP_ANONYMOUS",
            0x20
        ));
        // A decimal signal number or-ed in is not a flag word.
        assert!(!has_flag("0x1200000|17", "CLONE_VM", 0x100));
        assert!(has_flag(
            "CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD",
            "CLONE_VM",
            0x100
        ));
        assert_eq!(
            clone_flags("child_stack=NULL, flags=0x1200000|17, child_tidptr=0x7f"),
            Some("0x1200000|17")
        );
        assert_eq!(
            clone_flags("{flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88"),
            Some("CLONE_VM|CLONE_VFORK")
        );
    }
}
