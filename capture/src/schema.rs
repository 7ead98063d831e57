//! Schema as code: the one place that defines every table trawl writes.
//!
//! Each [`TableDef`] names a table, says what one row is, and gives every
//! column a type and one sentence of documentation. The Arrow schema written
//! to Parquet carries those sentences as field metadata (`"doc"`), so
//! `trawl tables` and notebook users see them; `docs/tables.md` is rendered
//! from here by [`render_markdown`] and a test fails when it is stale.
//!
//! Conventions: singular snake_case table names; units in column names
//! (`_ns`, `_bytes`); ids are `Int64` and unique within one capture; times are
//! `Int64` nanoseconds on the capture's clock (see `capture_meta.clock`);
//! addresses are `UInt64`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

/// Version of the tables' layout, stored in every file's schema metadata
/// (`trawl.schema_version`, next to `trawl.table`). Raised when a column is
/// renamed, retyped or removed (adding a nullable column does not need it).
pub const SCHEMA_VERSION: i32 = 1;

/// A column renamed at a schema version: files of earlier versions hold it
/// as `old`, and are read with it as `new`. (A retyped column needs no
/// entry: every file is read with the current type, cast; a removed one is
/// left out of the current schema.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Renamed {
    pub table: &'static str,
    pub old: &'static str,
    pub new: &'static str,
    /// The first schema version with the new name.
    pub since: i32,
}

/// Every rename since version 1, oldest first (none yet).
pub const RENAMED: &[Renamed] = &[];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColType {
    Bool,
    Int32,
    Int64,
    UInt32,
    UInt64,
    Float64,
    Utf8,
    /// Dictionary-encoded string (Int32 keys): repeated names such as event
    /// names or commands.
    DictUtf8,
    Binary,
    ListUInt64,
    /// A time on UTC: Arrow `timestamp[ns, UTC]` (Parquet TIMESTAMP(NANOS,
    /// UTC-adjusted)), which pandas, Polars and DuckDB read as a time with
    /// zone. Stored beside the native integer clock (`*_ns`).
    TimeUtc,
}

impl ColType {
    pub fn data_type(self) -> DataType {
        match self {
            ColType::Bool => DataType::Boolean,
            ColType::Int32 => DataType::Int32,
            ColType::Int64 => DataType::Int64,
            ColType::UInt32 => DataType::UInt32,
            ColType::UInt64 => DataType::UInt64,
            ColType::Float64 => DataType::Float64,
            ColType::Utf8 => DataType::Utf8,
            ColType::DictUtf8 => {
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))
            }
            ColType::Binary => DataType::Binary,
            ColType::TimeUtc => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            ColType::ListUInt64 => {
                DataType::List(Arc::new(Field::new("item", DataType::UInt64, false)))
            }
        }
    }

    pub fn sql_name(self) -> &'static str {
        match self {
            ColType::Bool => "BOOLEAN",
            ColType::Int32 => "INT",
            ColType::Int64 => "BIGINT",
            ColType::UInt32 => "INT UNSIGNED",
            ColType::UInt64 => "BIGINT UNSIGNED",
            ColType::Float64 => "DOUBLE",
            ColType::Utf8 | ColType::DictUtf8 => "VARCHAR",
            ColType::Binary => "BINARY",
            ColType::ListUInt64 => "LIST<BIGINT UNSIGNED>",
            ColType::TimeUtc => "TIMESTAMP WITH TIME ZONE",
        }
    }
}

#[derive(Debug)]
pub struct ColumnDef {
    pub name: &'static str,
    pub ty: ColType,
    pub nullable: bool,
    pub doc: &'static str,
}

#[derive(Debug)]
pub struct TableDef {
    pub name: &'static str,
    pub doc: &'static str,
    pub columns: &'static [ColumnDef],
}

impl TableDef {
    /// The Arrow schema, with each column's documentation as field metadata
    /// `"doc"` and the table's as schema metadata `"doc"`.
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .columns
            .iter()
            .map(|c| {
                Field::new(c.name, c.ty.data_type(), c.nullable)
                    .with_metadata(HashMap::from([("doc".to_string(), c.doc.to_string())]))
            })
            .collect();
        Arc::new(Schema::new(fields).with_metadata(HashMap::from([
            ("doc".to_string(), self.doc.to_string()),
            ("trawl.table".to_string(), self.name.to_string()),
            (
                "trawl.schema_version".to_string(),
                SCHEMA_VERSION.to_string(),
            ),
        ])))
    }

    /// The schema a query session gives the table, without the
    /// documentation metadata (plans that combine tables need equal
    /// metadata on both sides): `capture` (the capture the row comes
    /// from) and `segment` (the id space its ids are in, see [`SHARED`]),
    /// then the columns; a shared table has `segment` alone.
    pub fn session_schema(&self) -> SchemaRef {
        let mut fields = Vec::with_capacity(self.columns.len() + 2);
        if !self.is_shared() {
            fields.push(Field::new("capture", DataType::Utf8, false));
        }
        fields.push(Field::new("segment", DataType::Utf8, false));
        fields.extend(
            self.columns
                .iter()
                .map(|c| Field::new(c.name, c.ty.data_type(), c.nullable)),
        );
        Arc::new(Schema::new(fields))
    }

    /// [`TableDef::session_schema`] without `segment`: what a derived
    /// table's computation returns (the session adds the segment of each
    /// row's capture).
    pub fn capture_schema(&self) -> SchemaRef {
        let mut fields = vec![Field::new("capture", DataType::Utf8, false)];
        fields.extend(
            self.columns
                .iter()
                .map(|c| Field::new(c.name, c.ty.data_type(), c.nullable)),
        );
        Arc::new(Schema::new(fields))
    }

    /// Whether the table's rows are an id space shared by the captures of
    /// a segment (see [`SHARED`]).
    pub fn is_shared(&self) -> bool {
        SHARED.iter().any(|t| t.name == self.name)
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

macro_rules! col {
    ($name:literal, $ty:ident, null, $doc:literal) => {
        ColumnDef {
            name: $name,
            ty: ColType::$ty,
            nullable: true,
            doc: $doc,
        }
    };
    ($name:literal, $ty:ident, $doc:literal) => {
        ColumnDef {
            name: $name,
            ty: ColType::$ty,
            nullable: false,
            doc: $doc,
        }
    };
}

pub static SOURCE: TableDef = TableDef {
    name: "source",
    doc: "One row per input file ingested into the capture.",
    columns: &[
        col!(
            "source_id",
            Int32,
            "Id of the input, in the order the inputs were named on the command line (0-based)."
        ),
        col!(
            "path",
            Utf8,
            "The input as named by the user (`-` for standard input)."
        ),
        col!(
            "format",
            Utf8,
            "Format detected from the content: `perf.data`, `perf.data-pipe`."
        ),
        col!(
            "size_bytes",
            Int64,
            "Bytes read from the input (for compressed perf.data: before decompression)."
        ),
        col!(
            "records",
            Int64,
            "Records read from the input (lines for strace dumps)."
        ),
        col!(
            "diagnostics",
            Int64,
            "Diagnostics recorded for the input (rows in `diagnostic`)."
        ),
        col!(
            "clock",
            Utf8,
            "Clock of the input's times: `perf:CLOCK_MONOTONIC` (or another clock id, recorded with `perf record -k`), `perf` (perf's own clock, not related to wall time), `utc` (strace `-ttt`, UTC metric times), `strace:clock_of_day` (`-t`/`-tt`: no date), `strace:relative` (`-r`), `local:ZONE` / `local` (metric wall-clock times; see `metric.utc_ns`), `none`."
        ),
        col!(
            "utc_offset_ns",
            Int64,
            null,
            "Add to the input's native times (`perf_sample.time_ns`, `syscall.time_ns`, ...) to get ns since the epoch (UTC): from perf's clock data header (`-k`: wall time and clock time read together), 0 for `utc`. Null when the input cannot be placed on UTC."
        ),
    ],
};

pub static CAPTURE_META: TableDef = TableDef {
    name: "capture_meta",
    doc: "Key/value metadata of each input: the perf.data header features (hostname, os_release, arch, cpu_desc, cpuid, nr_cpus_online, nr_cpus_available, total_mem_kb, perf_version, cmdline, clockid, clock_wall_ns, clock_clockid_ns, compression, sample_time_first_ns, sample_time_last_ns, features) and how trawl read it.",
    columns: &[
        col!("source_id", Int32, "Input the value came from (`source.source_id`)."),
        col!("key", Utf8, "Name of the property, e.g. `hostname`, `perf_version`, `cmdline`, `clockid`."),
        col!("value", Utf8, "The value as text (numbers in decimal; lists space-separated)."),
    ],
};

pub static DIAGNOSTIC: TableDef = TableDef {
    name: "diagnostic",
    doc: "Bad or unexpected input that a reader skipped or repaired: one row per problem (at most 100 per kind and input, then a summary row).",
    columns: &[
        col!("source_id", Int32, "Input the problem was found in (`source.source_id`); -1 for a problem found after the inputs were read (a part of the symbol store that did not read back or could not be written: `kind` `symbol_store_damaged` or `symbol_store_unwritable`)."),
        col!("source", Utf8, "Input path as named by the user (source_id -1: the file the problem is in)."),
        col!("byte_offset", Int64, null, "Byte offset in the input (binary formats); for data inside a compressed record, the record's offset."),
        col!("line", Int64, null, "1-based line number (text formats)."),
        col!("severity", Utf8, "`error` when data was lost or could not be interpreted, `warning` when something unusual was handled without loss."),
        col!("kind", Utf8, "Short kind of the problem, e.g. `truncated`, `bad_record_size`, `unknown_record`."),
        col!("message", Utf8, "What was wrong and what was done about it."),
    ],
};

pub static PERF_EVENT: TableDef = TableDef {
    name: "perf_event",
    doc: "One row per perf_event_attr of a perf.data input (an event as `perf evlist` lists it).",
    columns: &[
        col!("event_id", Int32, "Id of the event within the capture; `perf_sample.event_id` refers to it."),
        col!("source_id", Int32, "Input the event belongs to."),
        col!("name", Utf8, "Event name as perf prints it (from the EVENT_DESC header or EVENT_UPDATE records; derived from type/config otherwise)."),
        col!("type", UInt32, "perf_event_attr.type (0 hardware, 1 software, 2 tracepoint, 3 hw-cache, 4 raw, 5 breakpoint, or a dynamic PMU type)."),
        col!("config", UInt64, "perf_event_attr.config."),
        col!("config1", UInt64, "perf_event_attr.config1."),
        col!("config2", UInt64, "perf_event_attr.config2."),
        col!("sample_type", UInt64, "perf_event_attr.sample_type bit mask (PERF_SAMPLE_*): which fields each sample carries."),
        col!("read_format", UInt64, "perf_event_attr.read_format bit mask (PERF_FORMAT_*)."),
        col!("sample_period", UInt64, null, "Fixed sample period, when the event was not frequency-based."),
        col!("sample_freq", UInt64, null, "Target sample frequency in Hz, when the event was frequency-based (`-F`)."),
        col!("branch_sample_type", UInt64, "perf_event_attr.branch_sample_type bit mask (PERF_SAMPLE_BRANCH_*)."),
        col!("sample_regs_user", UInt64, "Bit mask of user registers kept with each sample (`--call-graph dwarf`)."),
        col!("sample_stack_user", UInt32, "Bytes of user stack requested per sample (`--call-graph dwarf`)."),
        col!("flags", UInt64, "perf_event_attr flag bits (disabled, inherit, exclude_user, exclude_kernel, ..., sample_id_all, ...)."),
        col!("exclude_user", Bool, "The event did not count in user mode."),
        col!("exclude_kernel", Bool, "The event did not count in kernel mode."),
        col!("clockid", Int32, null, "Clock of the timestamps when the event used `-k CLOCK` (use_clockid)."),
        col!("ids", ListUInt64, "Kernel ids of the event's file descriptors (one per cpu/thread); records carry one of these."),
    ],
};

pub static PERF_SAMPLE: TableDef = TableDef {
    name: "perf_sample",
    doc: "One row per PERF_RECORD_SAMPLE, in time order. Optional fields are null when the event's sample_type does not carry them.",
    columns: &[
        col!("sample_id", Int64, "Id of the sample (its position in time order across the capture); child tables refer to it."),
        col!("source_id", Int32, "Input the sample came from."),
        col!("time_ns", Int64, null, "Timestamp in ns on the capture's clock (perf's `time`; CLOCK_MONOTONIC unless `capture_meta.clockid` says otherwise)."),
        col!("time_utc", TimeUtc, null, "The time on UTC (`time_ns` + `source.utc_offset_ns`), when the recording placed its clock on UTC (`perf record -k CLOCK`: the clock data header); null otherwise."),
        col!("pid", Int32, null, "Process id (thread group id)."),
        col!("tid", Int32, null, "Thread id (the kernel's task id; equals pid for the main thread)."),
        col!("cpu", UInt32, null, "CPU the sample was taken on."),
        col!("comm", DictUtf8, null, "Command name of the thread at the time of the sample (as `perf script` prints it)."),
        col!("event_id", Int32, "Event that produced the sample (`perf_event.event_id`)."),
        col!("event", DictUtf8, "Event name as perf prints it, e.g. `cpu-clock`."),
        col!("period", Int64, null, "Sample period: how many events this sample stands for (ns for cpu-clock)."),
        col!("ip", UInt64, null, "Instruction pointer."),
        col!("cpu_mode", DictUtf8, "Mode the ip was in: `kernel`, `user`, `hypervisor`, `guest_kernel`, `guest_user` or `unknown` (from the record's misc field)."),
        col!("stack_id", Int64, null, "Call stack (`stack.stack_id`), leaf first; from the callchain when recorded, otherwise the ip alone."),
        col!("addr", UInt64, null, "Data address (PERF_SAMPLE_ADDR), e.g. of a memory access or page fault."),
        col!("weight", UInt64, null, "Sample weight (PERF_SAMPLE_WEIGHT, or var1_dw of PERF_SAMPLE_WEIGHT_STRUCT), e.g. access latency."),
        col!("weight_ins_lat", UInt32, null, "Instruction latency (var2_w of PERF_SAMPLE_WEIGHT_STRUCT)."),
        col!("weight_var3", UInt32, null, "Third weight field (var3_w of PERF_SAMPLE_WEIGHT_STRUCT: pipeline stage cycles or retire latency)."),
        col!("data_src", UInt64, null, "Memory data source encoding (PERF_SAMPLE_DATA_SRC, union perf_mem_data_src)."),
        col!("transaction", UInt64, null, "Transaction flags (PERF_SAMPLE_TRANSACTION)."),
        col!("phys_addr", UInt64, null, "Physical data address (PERF_SAMPLE_PHYS_ADDR)."),
        col!("cgroup", UInt64, null, "cgroup id (PERF_SAMPLE_CGROUP)."),
        col!("data_page_size", UInt64, null, "Page size of the data address (PERF_SAMPLE_DATA_PAGE_SIZE)."),
        col!("code_page_size", UInt64, null, "Page size of the ip (PERF_SAMPLE_CODE_PAGE_SIZE)."),
        col!("raw", Binary, null, "Raw payload (PERF_SAMPLE_RAW), e.g. the tracepoint record of a tracepoint event."),
        col!("n_read", Int32, "Counter values recorded with the sample (rows in `perf_sample_read`)."),
        col!("n_branch", Int32, "Branch stack entries recorded with the sample (rows in `perf_branch`)."),
        col!("has_user_stack", Bool, "User registers and stack bytes were recorded (row in `perf_user_stack`)."),
    ],
};

pub static PERF_SAMPLE_READ: TableDef = TableDef {
    name: "perf_sample_read",
    doc: "Counter values read at each sample (PERF_SAMPLE_READ), one row per counter: all members of the group with PERF_FORMAT_GROUP, e.g. `perf record -e '{cycles,instructions}:S'`.",
    columns: &[
        col!("sample_id", Int64, "Sample the values were read at (`perf_sample.sample_id`)."),
        col!("idx", Int32, "Position of the counter in the group (0 = leader)."),
        col!("event_id", Int32, null, "Event of the counter (`perf_event.event_id`), found from its kernel id; null when the file does not say."),
        col!("event", Utf8, null, "Name of the counter's event."),
        col!("value", UInt64, "Counter value (cumulative since the counter was enabled)."),
        col!("counter_kernel_id", UInt64, null, "Kernel id of the counter (PERF_FORMAT_ID)."),
        col!("lost", UInt64, null, "Lost samples of the counter (PERF_FORMAT_LOST)."),
        col!("time_enabled_ns", UInt64, null, "Total time the group was enabled (PERF_FORMAT_TOTAL_TIME_ENABLED)."),
        col!("time_running_ns", UInt64, null, "Total time the group was running on a PMU (PERF_FORMAT_TOTAL_TIME_RUNNING)."),
    ],
};

pub static PERF_BRANCH: TableDef = TableDef {
    name: "perf_branch",
    doc: "Branch stack entries (Last Branch Records) recorded with samples (PERF_SAMPLE_BRANCH_STACK, `perf record -b` / `-j`), one row per entry, newest first.",
    columns: &[
        col!("sample_id", Int64, "Sample the branch stack was read at (`perf_sample.sample_id`)."),
        col!("idx", Int32, "Position in the branch stack: 0 is the most recent branch."),
        col!("from_ip", UInt64, "Branch source address."),
        col!("to_ip", UInt64, "Branch target address."),
        col!("mispred", Bool, "The branch was mispredicted."),
        col!("predicted", Bool, "The branch was predicted correctly."),
        col!("in_tx", Bool, "The branch was inside a transaction."),
        col!("abort", Bool, "The branch was a transaction abort."),
        col!("cycles", UInt32, "Cycles since the previous branch entry (0 when the hardware does not record it)."),
        col!("type", UInt32, "Branch type (PERF_BR_*: 1 cond, 2 uncond, 3 ind, 4 call, 5 ind_call, 6 ret, 7 syscall, 8 sysret, ...; 0 unknown)."),
        col!("spec", UInt32, "Speculation outcome (PERF_BR_SPEC_*)."),
        col!("new_type", UInt32, "Extended branch type (PERF_BR_NEW_*)."),
        col!("priv", UInt32, "Privilege level of the branch target (PERF_BR_PRIV_*)."),
        col!("counters", UInt64, null, "Event counter values of the entry (PERF_SAMPLE_BRANCH_COUNTERS)."),
        col!("hw_idx", UInt64, null, "Hardware index of the newest entry (PERF_SAMPLE_BRANCH_HW_INDEX), same for all entries of a sample."),
        col!("transfer", DictUtf8, "What the branch did to the call stack: `call` (PERF_BR_CALL, IND_CALL, COND_CALL, SYSCALL, IRQ), `return` (RET, COND_RET, SYSRET, ERET), `other` (jumps); when the type was not saved (`type` 0) it follows from the branch filter (`-j any_call` alone: calls; `-j any_ret` alone: returns), else `other`."),
        col!("from_frame_id", Int64, "The branch source as a frame (`frame.frame_id`), symbolized like sample frames."),
        col!("to_frame_id", Int64, "The branch target as a frame (`frame.frame_id`)."),
        col!("stack_id", Int64, "Call stack at the branch source (`stack.stack_id`), leaf first, rebuilt by walking back from the sample's stack through the newer entries: a call pops the callee, a return pushes the function returned from, other branches move the leaf. Pseudo-samples of `lbr_samples()` carry it."),
        col!("repeated", Bool, null, "The entry was already in the thread's previous branch stack (a branch stack is a snapshot of the last N branches: when fewer than N retire between two samples, the older entries repeat the previous sample's newest, in order; Ono et al. 2014, time-series performance analysis, counts only the branches since the previous sample). Found by comparing whole entries, per thread, forward in time; never set in call-stack mode (`--call-graph lbr`). Null in captures written before trawl marked them."),
    ],
};

pub static PERF_USER_STACK: TableDef = TableDef {
    name: "perf_user_stack",
    doc: "User registers and the copied user stack of `--call-graph dwarf` samples (PERF_SAMPLE_REGS_USER / PERF_SAMPLE_STACK_USER), kept for unwinding.",
    columns: &[
        col!("sample_id", Int64, "Sample (`perf_sample.sample_id`)."),
        col!("regs_abi", UInt64, "Register ABI (0 none, 1 32-bit, 2 64-bit)."),
        col!("regs_mask", UInt64, "Bit mask of the registers in `regs` (perf_event_attr.sample_regs_user), lowest bit first."),
        col!("regs", ListUInt64, "Register values, one per set bit of `regs_mask`, in bit order."),
        col!("stack_size", UInt64, "Bytes of stack requested per sample."),
        col!("stack", Binary, "Stack bytes actually copied (dyn_size), starting at the stack pointer."),
    ],
};

pub static STACK: TableDef = TableDef {
    name: "stack",
    doc: "Deduplicated call stacks of every input (perf samples, strace `-k` stacks): one row per frame of each distinct stack. perf's context markers (PERF_CONTEXT_KERNEL/USER/...) are removed; each frame's context is in `frame.context`.",
    columns: &[
        col!("stack_id", Int64, "Id of the stack (`perf_sample.stack_id`, `syscall.stack_id`)."),
        col!("depth", Int32, "Position in the stack: 0 is the leaf (where the sample was taken), then its caller, and so on."),
        col!("frame_id", Int64, "Frame at this position (`frame.frame_id`)."),
    ],
};

pub static FRAME: TableDef = TableDef {
    name: "frame",
    doc: "Deduplicated frames of every input: a code address inside a module. Non-leaf frames are return addresses.",
    columns: &[
        col!("frame_id", Int64, "Id of the frame; `stack.frame_id` refers to it."),
        col!("module_id", Int64, null, "Module the address falls in (`module.module_id`); null when no mapping covered it."),
        col!("rel_pc", UInt64, "Address relative to the module: the file offset (ip - map start + page offset) for file mappings, the absolute address for kernel, anonymous and unmapped code."),
        col!("context", DictUtf8, "`kernel`, `user`, `hypervisor`, `guest_kernel` or `guest_user`: the callchain context the frame was in."),
        col!("is_return", Bool, "The address is a return address (a caller's frame, not the first frame of its context): it is symbolized at `rel_pc - 1`, inside the call instruction, so that calls at the end of a function and their source lines are named right."),
        col!("example_pid", Int32, null, "A process in which the frame was seen (for JIT maps and reading /proc data later)."),
        col!("example_ip", UInt64, null, "The absolute address of the frame in `example_pid` (null for strace frames, which give only the file offset)."),
    ],
};

pub static MODULE: TableDef = TableDef {
    name: "module",
    doc: "Distinct modules of every input (perf's DSOs, the files of strace `-k` frames): executables, shared libraries, the kernel and its modules, [vdso], a process's anonymous memory (`/tmp/perf-PID.map`, named like perf does for JIT maps).",
    columns: &[
        col!("module_id", Int64, "Id of the module."),
        col!("path", Utf8, "Path as recorded in the MMAP record, e.g. `/usr/lib/x86_64-linux-gnu/libc.so.6`, `[kernel.kallsyms]`, `[vdso]`, `//anon`."),
        col!("build_id", Utf8, null, "GNU build-id in hex, from MMAP2 records or the BUILD_ID header table; null when the capture does not have it."),
        col!("is_kernel", Bool, "The module is the kernel or a kernel module."),
        col!("is_file", Bool, "The module is a file (rel_pc of its frames is a file offset) rather than anonymous memory or a special mapping."),
    ],
};

pub static PERF_MAPPING: TableDef = TableDef {
    name: "perf_mapping",
    doc: "Executable (and data, with `perf record -d`) memory mappings from MMAP/MMAP2 records, per process.",
    columns: &[
        col!("mapping_id", Int64, "Id of the mapping."),
        col!("source_id", Int32, "Input the record came from."),
        col!("time_ns", Int64, null, "Time of the mmap (null for mappings synthesized before recording without a timestamp)."),
        col!("time_utc", TimeUtc, null, "The time on UTC, as `perf_sample.time_utc`."),
        col!("pid", Int32, "Process (-1 for kernel mappings)."),
        col!("tid", Int32, "Thread that made the mapping."),
        col!("start", UInt64, "Start address."),
        col!("length", UInt64, "Length in bytes."),
        col!("pgoff", UInt64, "File offset of the start address."),
        col!("path", Utf8, "Mapped file path or special name."),
        col!("module_id", Int64, "Module of the mapped file (`module.module_id`)."),
        col!("build_id", Utf8, null, "Build-id carried by the MMAP2 record (perf record --buildid-mmap)."),
        col!("prot", UInt32, null, "Protection bits (PROT_READ 1, PROT_WRITE 2, PROT_EXEC 4); MMAP2 only."),
        col!("flags", UInt32, null, "Mapping flags (MAP_SHARED, MAP_PRIVATE, ...); MMAP2 only."),
        col!("dev_major", UInt32, null, "Device major number of the file (MMAP2 without build-id)."),
        col!("dev_minor", UInt32, null, "Device minor number."),
        col!("inode", UInt64, null, "Inode number."),
        col!("executable", Bool, "Code mapping (false for data mappings recorded with `-d`)."),
        col!("cpu_mode", DictUtf8, "`kernel` or `user` (from the record's misc field)."),
    ],
};

pub static PERF_TASK_EVENT: TableDef = TableDef {
    name: "perf_task_event",
    doc: "Process and thread life events: COMM (name changes and exec), FORK, EXIT records in time order.",
    columns: &[
        col!("source_id", Int32, "Input the record came from."),
        col!("time_ns", Int64, null, "Time of the event (null when the record has no timestamp)."),
        col!("time_utc", TimeUtc, null, "The time on UTC, as `perf_sample.time_utc`."),
        col!("kind", DictUtf8, "`comm`, `exec` (COMM with the exec flag), `fork` or `exit`."),
        col!("pid", Int32, "Process id (thread group id)."),
        col!("tid", Int32, "Thread id (equals pid for the main thread)."),
        col!("ppid", Int32, null, "Parent process id (fork/exit)."),
        col!("ptid", Int32, null, "Parent thread id (fork/exit)."),
        col!("comm", Utf8, null, "New command name (comm/exec)."),
    ],
};

pub static PERF_THREAD: TableDef = TableDef {
    name: "perf_thread",
    doc: "One row per thread seen in a perf.data input, summarising its task events.",
    columns: &[
        col!(
            "source_id",
            Int32,
            "Input the row came from (`source.source_id`)."
        ),
        col!("pid", Int32, "Process id (thread group id)."),
        col!(
            "tid",
            Int32,
            "Thread id (equal to pid for the main thread)."
        ),
        col!(
            "ppid",
            Int32,
            null,
            "Parent process id from the FORK record, when recorded."
        ),
        col!("comm", Utf8, null, "Last command name of the thread."),
        col!(
            "start_ns",
            Int64,
            null,
            "Time of the FORK that created the thread, when recorded."
        ),
        col!("exec_ns", Int64, null, "Time of the last exec."),
        col!("end_ns", Int64, null, "Time of the EXIT record."),
        col!("samples", Int64, "Samples of the thread."),
    ],
};

pub static PERF_LOST: TableDef = TableDef {
    name: "perf_lost",
    doc: "Records the kernel could not write (PERF_RECORD_LOST: ring buffer full) and samples it dropped (PERF_RECORD_LOST_SAMPLES).",
    columns: &[
        col!("source_id", Int32, "Input the row came from (`source.source_id`)."),
        col!("time_ns", Int64, null, "Time of the record."),
        col!("time_utc", TimeUtc, null, "The time on UTC, as `perf_sample.time_utc`."),
        col!("kind", Utf8, "`lost` (PERF_RECORD_LOST) or `lost_samples` (PERF_RECORD_LOST_SAMPLES)."),
        col!("event_id", Int32, null, "Event the loss belongs to."),
        col!("count", UInt64, "Number of records or samples lost."),
        col!("pid", Int32, null, "Process from the record's sample_id trailer."),
        col!("tid", Int32, null, "Thread from the record's sample_id trailer."),
        col!("cpu", UInt32, null, "CPU from the record's sample_id trailer."),
    ],
};

pub static PERF_SWITCH: TableDef = TableDef {
    name: "perf_switch",
    doc: "Context switches recorded with `perf record --switch-events` (PERF_RECORD_SWITCH, and PERF_RECORD_SWITCH_CPU_WIDE in system-wide mode), in time order: a thread leaving or taking a CPU. The `thread_state` table pairs them into on- and off-CPU intervals.",
    columns: &[
        col!("source_id", Int32, "Input the row came from (`source.source_id`)."),
        col!("time_ns", Int64, null, "Time of the switch."),
        col!("time_utc", TimeUtc, null, "The time on UTC, as `perf_sample.time_utc`."),
        col!("cpu", UInt32, null, "CPU of the switch (sample_id trailer)."),
        col!("pid", Int32, null, "Process of the thread switching (sample_id trailer)."),
        col!("tid", Int32, null, "Thread switching out (`direction` out) or in."),
        col!("direction", Utf8, "`out` (the thread left the CPU) or `in` (it took the CPU)."),
        col!("preempt", Bool, "Switched out while still runnable (preempted: PERF_RECORD_MISC_SWITCH_OUT_PREEMPT), not blocked."),
        col!("other_pid", Int32, null, "CPU-wide records: the process switched to (out) or from (in)."),
        col!("other_tid", Int32, null, "CPU-wide records: the thread switched to (out) or from (in)."),
    ],
};

pub static PERF_SCHED_SWITCH: TableDef = TableDef {
    name: "perf_sched_switch",
    doc: "`sched:sched_switch` tracepoint samples decoded (`perf record -e sched:sched_switch -g`): the thread leaving the CPU, its state, and the thread taking it. The sample (`perf_sample`: time, CPU, pid/tid of the thread leaving, its call stack where it blocked) is the row's `sample_id`.",
    columns: &[
        col!("sample_id", Int64, "The tracepoint sample (`perf_sample.sample_id`)."),
        col!("prev_comm", Utf8, "Command of the thread leaving the CPU."),
        col!("prev_tid", Int32, "Thread leaving the CPU (the kernel's pid)."),
        col!("prev_prio", Int32, "Its priority."),
        col!("prev_state", Int64, "Its state bits (TASK_INTERRUPTIBLE 0x1, TASK_UNINTERRUPTIBLE 0x2, ...; 0 runnable: preempted)."),
        col!("prev_state_text", Utf8, "The state as `perf script` prints it: `R` (preempted), `S` (sleeping), `D` (uninterruptible: disk I/O), `T`, `t`, `X`, `Z`, `P`, `I`; `+` when preempted."),
        col!("next_comm", Utf8, "Command of the thread taking the CPU."),
        col!("next_tid", Int32, "Thread taking the CPU."),
        col!("next_prio", Int32, "Its priority."),
    ],
};

pub static PERF_BUILD_ID: TableDef = TableDef {
    name: "perf_build_id",
    doc: "The build-id table perf writes at the end of a recording (HEADER_BUILD_ID feature or PERF_RECORD_HEADER_BUILD_ID records).",
    columns: &[
        col!("source_id", Int32, "Input the row came from (`source.source_id`)."),
        col!("pid", Int32, "Process (-1 for the host kernel and user-space files)."),
        col!("path", Utf8, "File path as perf recorded it."),
        col!("build_id", Utf8, "Build-id in hex."),
        col!("cpu_mode", DictUtf8, "`kernel`, `user`, `guest_kernel` or `guest_user`."),
    ],
};

pub static PERF_CPU: TableDef = TableDef {
    name: "perf_cpu",
    doc: "CPU topology perf recorded (HEADER_CPU_TOPOLOGY feature, `perf report --header`'s `CPU N: Core ID, Die ID, Socket ID`): maps `perf_sample.cpu` to its package (socket) for per-package energy (`trawl report energy`) and `perf report --sort socket`.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("cpu", Int32, "CPU number."),
        col!("core_id", Int32, "Core (-1: the CPU was offline)."),
        col!("die_id", Int32, null, "Die; null in files of perf before 5.3."),
        col!("socket_id", Int32, "Package (socket): RAPL's `intel-rapl:P` (-1: offline)."),
    ],
};

pub static TRACEPOINT_FIELD: TableDef = TableDef {
    name: "tracepoint_field",
    doc: "The fields of each tracepoint (and `perf probe` probe) the input describes: perf.data's tracing data holds each event's tracefs `format` file (`/sys/kernel/tracing/events/SYSTEM/NAME/format`), one row per `field:` line, common fields first. A sample's payload (`perf_sample.raw`) is laid out as its event's rows say; `tracepoint(EVENT)` reads every field as a typed column, `tracepoint_field(raw, decode, offset, size, big_endian)` one of them.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("tracepoint_id", UInt64, "The event's id (`ID:` of the format; `perf_event.config` of a tracepoint event)."),
        col!("event", Utf8, "`system:name`, as `perf_sample.event` names its samples."),
        col!("position", Int32, "Order of the field in the format, 0-based (common fields first)."),
        col!("field", Utf8, "Field name, e.g. `prev_pid`."),
        col!("declaration", Utf8, "The C declaration of the `field:` line as the kernel wrote it, e.g. `__data_loc char[] filename`, `char comm[16]`, `unsigned long args[6]`."),
        col!("offset", Int32, "Byte offset of the field in the payload (for `__data_loc`/`__rel_loc` fields: of the 2- or 4-byte descriptor)."),
        col!("size", Int32, "Bytes the field (or its descriptor) takes at `offset`; 0 for a `[]` field that runs to the end of the payload."),
        col!("signed", Bool, null, "The format's `signed:` flag; null in formats of kernels before 2.6.32, which do not say (the type's name decides then)."),
        col!("common", Bool, "A `common_*` field of the event header every payload starts with (type, flags, preempt count, pid)."),
        col!("decode", Utf8, "How the field is read, the `decode` argument of `tracepoint_field`: `i8`..`i64`, `u8`..`u64` (an integer of that width, signed per `signed:`; pointers are unsigned), `str` (a `char` array: text up to its first NUL), `bytes` (other byte arrays, structures), `T[]` (an array of integers of type T); with a prefix for data placed after the fixed fields: `loc:` (`__data_loc`: a u32 of length << 16 | offset), `rel:` (`__rel_loc`: the offset counts from the end of the descriptor), `loc2:`/`rel2:` (a u16 offset, text up to NUL), `rest:` (from `offset` to the end of the payload)."),
        col!("big_endian", Bool, "The payload's byte order is big-endian (the tracing data's byte-order flag: the recording machine's)."),
    ],
};

pub static SYMBOL: TableDef = TableDef {
    name: "symbol",
    doc: "Symbolization of frame addresses, written by `trawl ingest` (unless `--no-symbolize`) or `trawl symbolize`: one row per (module, address, inline level). An address inside inlined code has one row per level of its inline chain, innermost first; the outermost level is the function the ELF symbol names.",
    columns: &[
        col!("module_id", Int64, "Module (`module.module_id`)."),
        col!("rel_pc", UInt64, "Address looked up, relative to the module: `frame.rel_pc`, minus 1 for return addresses (`frame.is_return`)."),
        col!("inline_depth", Int32, "Inline level: 0 is the innermost function (where the instruction is), then the function it was inlined into, and so on; the highest level is the real (outermost) function."),
        col!("inlined", Bool, "This level is a function inlined into the next level (false for the outermost level)."),
        col!("function", Utf8, null, "Function name (demangled): for the outermost level the ELF symbol (perf's `sym`), else the DWARF name of the inlined function; null when unresolved."),
        col!("file", Utf8, null, "Source file of this level's line (for inlined levels the innermost is where the instruction is, the outer ones are call sites), from DWARF; null without debug info."),
        col!("line", UInt32, null, "Source line (1-based), from DWARF."),
        col!("column", UInt32, null, "Source column (1-based), from DWARF when the compiler recorded it."),
        col!("symbol_offset", UInt64, null, "Offset of the address from the start of the ELF function symbol (outermost level)."),
        col!("symbol_source", Utf8, null, "Where the ELF name came from: `symtab`, `dynsym` or `kallsyms`, of the file named in `symbol_file`; `dwarf` when only DWARF named the function."),
        col!("symbol_file", Utf8, null, "File the symbols were read from (the binary, a debug file found by build-id, ...)."),
    ],
};

pub static SYMBOL_FILE: TableDef = TableDef {
    name: "symbol_file",
    doc: "How trawl found (or failed to find) the symbols of each module, written with `symbol`.",
    columns: &[
        col!("module_id", Int64, "Module (`module.module_id`)."),
        col!("path", Utf8, "Module path as recorded."),
        col!(
            "binary",
            Utf8,
            null,
            "File used for program headers (address translation)."
        ),
        col!("symbols", Utf8, null, "File whose symbol table was used."),
        col!("debug_info", Utf8, null, "File whose DWARF gave source lines and inline chains (the binary or a separate debug file); null without DWARF."),
        col!(
            "status",
            Utf8,
            "`ok`, `not_found`, `build_id_mismatch`, `no_symbols`, `not_a_file` or `error`."
        ),
        col!(
            "message",
            Utf8,
            null,
            "Details of a failure: which paths were tried."
        ),
    ],
};

pub static INSTRUCTION: TableDef = TableDef {
    name: "instruction",
    doc: "Machine code of functions where instructions were sampled, decoded (x86 and x86-64; per-instruction metrics as `perf annotate` shows them): one row per instruction, in address order. Written when asked, not at ingest: `annotate(FUNCTION)` (`trawl report annotate`, `trawl sql`, Python) decodes the function it shows the first time and keeps it here; `trawl symbolize --code` writes every function holding a sample's leaf frame or a branch end.",
    columns: &[
        col!("module_id", Int64, "Module (`module.module_id`)."),
        col!("function", Utf8, "Function (the ELF symbol, demangled; perf's `sym`)."),
        col!("function_rel_pc", UInt64, "The function's first byte, as a file offset (how `frame.rel_pc` addresses the module)."),
        col!("rel_pc", UInt64, "The instruction, as a file offset: equal to `frame.rel_pc` of a leaf frame on it."),
        col!("address", UInt64, "The instruction's virtual address in the file, as `objdump -d` and `perf annotate` print it."),
        col!("size", UInt32, "Length of the instruction in bytes."),
        col!("bytes", Binary, "The instruction's bytes."),
        col!("text", Utf8, "The instruction in AT&T syntax as objdump prints it (hexadecimal numbers, branch targets as `ADDRESS <function+0xOFF>`)."),
        col!("file", Utf8, null, "Source file of the instruction (the innermost inline level), from DWARF."),
        col!("line", UInt32, null, "Source line (1-based), from DWARF."),
        col!("inline_function", Utf8, null, "The function the instruction belongs to when it was inlined into `function` (the innermost level), else null."),
    ],
};

/// Every table, in the order `docs/tables.md` lists them.
pub static SYSCALL: TableDef = TableDef {
    name: "syscall",
    doc: "System calls from strace dumps and from perf.data syscall tracepoints (`syscalls:sys_enter_*` / `sys_exit_*`): one row per call, its two halves (strace's `<unfinished ...>` / `<... resumed>`, perf's enter and exit samples) joined. Raw text is kept (`args`, `ret`); the arguments the memory and I/O analyses need are parsed into typed columns. perf records registers only: its `args` are the argument registers as `strace -X raw` prints them (descriptors in decimal, the rest in hex) — no strings, structures or paths.",
    columns: &[
        col!("syscall_id", Int64, "Id of the call."),
        col!("source_id", Int32, "Input the call came from (`source.source_id`)."),
        col!("line", Int64, null, "Line of the call (its first half) in the dump, 1-based; null for perf."),
        col!("resumed_line", Int64, null, "Line of the `<... resumed>` half, when strace printed the call in two parts."),
        col!("pid", Int32, null, "Thread id strace printed (`-f`), or the pid of a `-ff` file's name; null for a single-process dump. perf: the thread id."),
        col!("tgid", Int32, null, "Process (thread group) id, where the source says it: perf; null for strace, which prints thread ids only."),
        col!("sample_id", Int64, null, "perf: the sample of the call's enter (`perf_sample.sample_id`), or of its exit when the enter was not recorded."),
        col!("time_ns", Int64, null, "Entry time in ns: since the epoch for `-ttt`; since midnight of the first line for `-t`/`-tt` (a day added at each wrap); since the first call for `-r`; see `capture_meta` key `strace_time`. Null without a time option. perf: the enter sample's time (perf's clock), or the exit's when the enter was not recorded."),
        col!("time_utc", TimeUtc, null, "Entry time on UTC: `time_ns` for `-ttt` dumps; perf: as `perf_sample.time_utc`. Null when the input's clock is not placed on UTC (`-t`/`-tt` carry no date, `-r` is relative)."),
        col!("duration_ns", Int64, null, "Time spent in the call (`-T`; perf: exit time − enter time)."),
        col!("name", DictUtf8, "System call name."),
        col!("args", Utf8, "Arguments as printed, both halves joined."),
        col!("ret", Utf8, null, "Return value as printed (`0`, `-1`, `0x7f..`, `3</etc/passwd>`, `?` for no return); null for a call that never returned in the dump."),
        col!("retval", Int64, null, "Return value as a number (hex and `-y` decorated fds parsed); null for `?` and unfinished calls."),
        col!("errno", DictUtf8, null, "Error name of a failed call (`ENOENT`)."),
        col!("ret_note", Utf8, null, "Text after the return value: the errno message, or flags strace decoded (`(Timeout)`). perf: `exit only: ...` for an exit whose enter was not recorded."),
        col!("finished", Bool, "False for a call whose resumption (perf: exit) never came (the dump ended or the thread died in it); `exit`/`exit_group` end with `ret` `?`, finished."),
        col!("stack_id", Int64, null, "Call stack from `-k` (`stack.stack_id`), leaf first; null without `-k`. perf: the user frames of the enter sample's stack (`-g` or DWARF-unwound `--call-graph dwarf`)."),
        col!("fd", Int32, null, "File descriptor argument of fd calls (read, write, mmap, close, ...)."),
        col!("fd_path", Utf8, null, "What `-y`/`-yy` printed for that descriptor (`/tmp/out.bin`, `TCP:[...]`)."),
        col!("addr", UInt64, null, "Address argument: mmap's hint (null for NULL), munmap/mremap/mprotect's region start, brk's argument."),
        col!("length", UInt64, null, "Length argument: mmap/munmap/mprotect length, mremap's old size."),
        col!("new_length", UInt64, null, "mremap's new size."),
        col!("new_addr", UInt64, null, "mremap's fifth argument (with MREMAP_FIXED)."),
        col!("prot", Utf8, null, "mmap/mprotect protection as printed (`PROT_READ|PROT_WRITE`)."),
        col!("flags", Utf8, null, "mmap/mremap flags as printed (`MAP_PRIVATE|MAP_ANONYMOUS`)."),
        col!("offset", Int64, null, "File offset argument: mmap's offset, pread64/pwrite64's position."),
        col!("count", Int64, null, "Bytes requested by read/write-like calls (read, write, pread64, pwrite64, sendfile, copy_file_range; the iovec total for readv/writev)."),
    ],
};

pub static STRACE_EVENT: TableDef = TableDef {
    name: "strace_event",
    doc: "Signals delivered (`--- SIGCHLD {...} ---`) and process ends (`+++ exited with N +++`, `+++ killed by SIG +++`) from strace dumps.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("line", Int64, "Line in the dump, 1-based."),
        col!("pid", Int32, null, "Thread/process."),
        col!("time_ns", Int64, null, "Time, on the clock of `syscall.time_ns`."),
        col!("time_utc", TimeUtc, null, "The time on UTC, as `syscall.time_utc`."),
        col!("kind", DictUtf8, "`signal`, `exited` or `killed`."),
        col!("signal", DictUtf8, null, "Signal name (delivered, or that killed the process)."),
        col!("exit_code", Int32, null, "Exit status of `exited with N`."),
        col!("core_dumped", Bool, "`killed by SIG (core dumped)`."),
        col!("info", Utf8, null, "The siginfo strace printed."),
        col!("stack_id", Int64, null, "Where the signal was delivered (`-k`), leaf first."),
    ],
};

pub static METRIC: TableDef = TableDef {
    name: "metric",
    doc: "Monitoring metrics (`vmstat -t -n N`, `iostat -x -t` text and `-o JSON`, `mpstat`, `pidstat`, `sadf -d`, generic `time,metric,value[,entity]` CSV), long form: one row per input row (interval), entity and metric. vmstat's columns are named `runq` (r), `blocked` (b), `swap_used`, `mem_free`, `mem_buff`, `mem_cache`, `mem_inactive`, `mem_active`, `swap_in`, `swap_out`, `blocks_in`, `blocks_out`, `interrupts`, `context_switches`, `cpu_user`, `cpu_sys`, `cpu_idle`, `cpu_iowait`, `cpu_steal`, `cpu_guest` (vmstat's units: KiB unless `-S`, % for cpu). iostat: `cpu_user`, `cpu_nice`, `cpu_sys`, `cpu_iowait`, `cpu_steal`, `cpu_idle`, and per device (`entity`) `disk_` + the column with `/s` → `_per_s`, `-` → `_`, `%x` → `x_pct` (`disk_r_per_s`, `disk_rkB_per_s`, `disk_util_pct`, `disk_aqu_sz`). mpstat: per CPU (`all`, `0`, ...) `cpu_user`, `cpu_nice`, `cpu_sys`, `cpu_iowait`, `cpu_irq`, `cpu_soft`, `cpu_steal`, `cpu_guest`, `cpu_gnice`, `cpu_idle`. pidstat: per process (`COMMAND[PID]`, `COMMAND[TGID/TID]`) `proc_` + the column (`proc_cpu_pct`, `proc_cpu_user_pct`, `proc_rss`, `proc_kB_rd_per_s`, `proc_cpu_number`). sadf -d: each block's columns, CPU ones as `cpu_*`, device ones `disk_*`, interface ones `net_*`, `%x` → `x_pct` (`memused_pct`, `kbmemfree`).",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("line", Int64, "Line of the input, 1-based (0 for JSON input)."),
        col!("sample", Int64, "Index of the row (interval, report) in its input, 0-based."),
        col!("time_ns", Int64, null, "Time of the row on `clock`: ns since the epoch for `utc`; for `local:ZONE` / `local`, the wall-clock time of that zone read as if it were UTC (a daylight saving change is a `time_went_back` diagnostic). Null without times (vmstat without `-t`)."),
        col!("clock", DictUtf8, "`utc`, `local:ZONE` (vmstat's zone), `local` (a CSV time without zone) or `none`."),
        col!("utc_ns", Int64, null, "The time in ns since the epoch (UTC): `time_ns` for `utc`; for local clocks converted with the zone given by `trawl ingest --tz ZONE` (ambiguous times at the end of daylight saving resolved so that time does not go back). Null when the zone was not given: such rows cannot be aligned with other sources."),
        col!("time_utc", TimeUtc, null, "`utc_ns` as a time on UTC."),
        col!("entity", DictUtf8, null, "What the value is of (a device, a CPU, a process), where the input says."),
        col!("metric", DictUtf8, "Metric name."),
        col!("value", Float64, "The measured value, in the unit the tool printed."),
        col!("since_boot", Bool, "vmstat's first row: averages since boot, not a measurement of the interval."),
    ],
};

pub static ENERGY: TableDef = TableDef {
    name: "energy",
    doc: "RAPL energy readings (Ono et al. 2015, sampling-based power measurement): one row per reading of a domain's counter, from a powercap CSV (`scripts/rapl-sample.py`: cumulative µJ counters of `/sys/class/powercap/intel-rapl:*`), `perf stat -I MS -x, -e power/energy-*/` output (joules per interval) or power events read at perf.data samples (`perf record -e '{cpu-clock,power/energy-cores/}:S'`: the group's power counter values, 2^-32 J units). `delta_uj` is the energy of the interval `(time_ns - interval_ns, time_ns]`.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("line", Int64, "Line of the input; for perf.data, the read's rank in time order."),
        col!("time_ns", Int64, "Time of the reading on the input's clock (`source.clock`): ns since the epoch for powercap CSV (`utc`), since perf stat started for perf stat output (`perf-stat:relative`, not placed on UTC), the sample's time for perf.data."),
        col!("time_utc", TimeUtc, null, "The time of the reading on UTC: `time_ns` for powercap CSV and turbostat; perf.data: as `perf_sample.time_utc`; null for perf stat output (relative times)."),
        col!("package", Int32, null, "Package (socket): `intel-rapl:P` of the zone, perf stat's `S<P>` with `--per-socket`; null when the input does not say."),
        col!("domain", DictUtf8, "`package`, `cores`, `dram`, `gpu` (powercap's `uncore`) or `psys`."),
        col!("zone", Utf8, "The counter as the input names it: `intel-rapl:0:1`, `power/energy-pkg/`."),
        col!("energy_uj", Float64, null, "Cumulative energy: the counter as read (powercap; it wraps at `max_energy_range_uj`), or the running sum of perf stat's intervals."),
        col!("delta_uj", Float64, null, "Energy of the interval ending at this reading (µJ), wrap-around undone; null for a counter's first reading (except perf's power events, which count from the start of the run: their first reading is the energy since then) and when it went back with no known wrap range."),
        col!("interval_ns", Int64, null, "Length of that interval (ns since the counter's previous reading; perf stat: since the previous interval or the start; null for a perf power event's first reading: since the run started)."),
        col!("wrapped", Bool, "The counter wrapped (or went back) in the interval."),
    ],
};

pub static MEM_ACCESS: TableDef = TableDef {
    name: "mem_access",
    doc: "Memory accesses of a valgrind lackey log (`valgrind --tool=lackey --trace-mem=yes`) or a trawl binary memory log, in log order: loads, stores and modifies, plus every instruction fetch when ingested with `--fetch-rows` (otherwise fetches are summarised per address in `mem_fetch`). Rows dropped by the ingest filters (`--mem-kinds`, `--mem-range`) are absent; `capture_meta` keys `mem_kinds` and `mem_ranges` say which were kept.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("ordinal", Int64, "Instruction ordinal: for a load, store or modify the number of instruction fetches (`I` records) before it in the log, i.e. the 1-based index of the instruction that made it; for a fetch its own 1-based index. Counts every instruction, kept or filtered. A log without instruction records (a data-only log: `capture_meta.mem_x_axis` = `access`) numbers its kept data accesses instead, 1, 2, 3, ... in log order."),
        col!("kind", DictUtf8, "`L` load, `S` store, `M` modify (load and store of the same bytes), `I` instruction fetch."),
        col!("address", UInt64, "First byte accessed (virtual address)."),
        col!("size", Int32, "Bytes accessed."),
    ],
};

pub static MEM_FETCH: TableDef = TableDef {
    name: "mem_fetch",
    doc: "Instruction fetches of a memory log per instruction address (lackey `I` records): which code ran, how often, and first and last when. Joined with `mem_symbol` this gives the functions that ran and those that never did.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("address", UInt64, "Instruction address."),
        col!("size", Int32, "Instruction length in bytes."),
        col!("count", Int64, "Times the instruction was fetched (executed)."),
        col!("first_ordinal", Int64, "Ordinal (1-based instruction index) of its first execution."),
        col!("last_ordinal", Int64, "Ordinal of its last execution."),
    ],
};

pub static MEM_PAGE: TableDef = TableDef {
    name: "mem_page",
    doc: "Memory log accesses per page (page size `page_size`, `trawl ingest --page-size`, 4096 by default): one row per page touched at least once, instruction fetches included. An access that crosses a page boundary counts on both pages. A page's lifetime is [`first_ordinal`, `last_ordinal`]; pages whose lifetimes do not overlap could share one physical page (`trawl report page-reuse`).",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("page", UInt64, "Address of the page's first byte."),
        col!("page_size", Int64, "Page size in bytes."),
        col!("fetches", Int64, "Instruction fetches that touched the page."),
        col!("loads", Int64, "Loads (`L`) that touched the page."),
        col!("stores", Int64, "Stores (`S`) that touched the page."),
        col!("modifies", Int64, "Modifies (`M`, load and store) that touched the page."),
        col!("bytes_accessed", Int64, "Bytes accessed in the page, summed over all accesses."),
        col!("bytes_touched", Int64, "Distinct bytes of the page accessed at least once (≤ page_size): how much of the page is used."),
        col!("first_ordinal", Int64, "Ordinal of the first access to the page."),
        col!("last_ordinal", Int64, "Ordinal of the last access to the page."),
    ],
};

pub static MEM_MAP: TableDef = TableDef {
    name: "mem_map",
    doc: "Memory mappings of a process from a saved `/proc/PID/maps` given to `trawl ingest` with a memory log: where each object (executable, shared library) was loaded, so memory accesses can be attributed to objects and symbols (`mem_symbol`).",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`) of the maps file."),
        col!("line", Int64, "Line of the maps file, 1-based."),
        col!("start_address", UInt64, "First address of the mapping."),
        col!("end_address", UInt64, "Address after the mapping's last byte."),
        col!("perms", Utf8, "Permissions as in maps: `r`, `w`, `x`, then `p` private or `s` shared."),
        col!("file_offset", UInt64, "Offset in the file of the mapping's first byte."),
        col!("dev", Utf8, "Device of the file (major:minor)."),
        col!("inode", Int64, "Inode of the file (0 for anonymous memory)."),
        col!("path", Utf8, "File mapped, a pseudo name (`[heap]`, `[stack]`, `[vdso]`) or empty for anonymous memory."),
    ],
};

pub static MEM_SYMBOL: TableDef = TableDef {
    name: "mem_symbol",
    doc: "ELF symbols (functions and data objects) of the files named in `mem_map`, placed at their run-time addresses; written by `trawl ingest` (unless `--no-symbolize`) from the binaries on this machine or `--debug-dir`. Join memory accesses and fetches to it by address range to find the functions that ran and the data objects touched.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`) of the maps file."),
        col!("path", Utf8, "Object file as named in the maps file."),
        col!("name", Utf8, "Symbol name, demangled."),
        col!("kind", DictUtf8, "`function` (STT_FUNC, instruction fetches) or `object` (STT_OBJECT / TLS, data accesses)."),
        col!("start_address", UInt64, "Run-time address of the symbol's first byte."),
        col!("end_address", UInt64, "Run-time address after its last byte (start + ELF size, at least start + 1)."),
        col!("size", Int64, "ELF symbol size in bytes."),
        col!("section", Utf8, null, "Section the symbol is in (`.text`, `.data`, `.bss`, `.rodata`...)."),
    ],
};

pub static PERF_SAMPLE_SYMBOLIZED: TableDef = TableDef {
    name: "perf_sample_symbolized",
    doc: "Each perf sample with the function, module and source line of its leaf frame, for reading without trawl (pandas, Polars, DuckDB): `perf_sample` joined with `stack` (depth 0) and the `frame_name` view (perf's `sym`, `dso` and `srcline` of the sample's ip; return addresses looked up in their call). In `trawl sql` and Python it is a view over `perf_sample`, `stack` and `frame_name` (nothing computed until read); `trawl ingest --flat` (and `trawl symbolize --flat`) also writes it as a file, each leaf frame named as `frame_name` names it.",
    columns: &[
        col!("sample_id", Int64, "The sample (`perf_sample.sample_id`), in time order."),
        col!("source_id", Int32, "Input the sample came from."),
        col!("time_ns", Int64, null, "Timestamp on the capture's clock (`perf_sample.time_ns`)."),
        col!("time_utc", TimeUtc, null, "The time on UTC, when the recording placed its clock there (`perf record -k`)."),
        col!("pid", Int32, null, "Process id (thread group id)."),
        col!("tid", Int32, null, "Thread id (the kernel's task id)."),
        col!("comm", DictUtf8, null, "Command name of the thread at the sample."),
        col!("cpu", UInt32, null, "CPU the sample was taken on."),
        col!("event", DictUtf8, "Event name, e.g. `cpu-clock`."),
        col!("period", Int64, null, "Sample period (ns for cpu-clock): sum it for time or event counts."),
        col!("cpu_mode", DictUtf8, "`kernel`, `user`, ..."),
        col!("stack_id", Int64, null, "Call stack (`stack.stack_id`), for the callers."),
        col!("function", DictUtf8, null, "The leaf's function (perf's `sym`; the real function when the address is in inlined code); `0x…` (module-relative address) when no symbol named it; null without a stack."),
        col!("module", DictUtf8, null, "The leaf's module path (perf's `dso`); `[unknown]` outside any mapping."),
        col!("srcline", DictUtf8, null, "perf's `srcline`: `file:line` of the address (innermost inline level), else `function+offset`."),
        col!("file", DictUtf8, null, "Source file of the address (DWARF), innermost inline level."),
        col!("line", UInt32, null, "Source line of the address (DWARF)."),
    ],
};

pub static TABLES: &[&TableDef] = &[
    &SOURCE,
    &CAPTURE_META,
    &DIAGNOSTIC,
    &PERF_EVENT,
    &PERF_SAMPLE,
    &PERF_SAMPLE_READ,
    &PERF_BRANCH,
    &PERF_USER_STACK,
    &STACK,
    &FRAME,
    &MODULE,
    &PERF_MAPPING,
    &PERF_TASK_EVENT,
    &PERF_THREAD,
    &PERF_LOST,
    &PERF_SWITCH,
    &PERF_SCHED_SWITCH,
    &PERF_BUILD_ID,
    &PERF_CPU,
    &TRACEPOINT_FIELD,
    &SYSCALL,
    &STRACE_EVENT,
    &METRIC,
    &ENERGY,
    &MEM_ACCESS,
    &MEM_FETCH,
    &MEM_PAGE,
    &MEM_MAP,
    &MEM_SYMBOL,
    &SYMBOL,
    &SYMBOL_FILE,
    &INSTRUCTION,
    &PERF_SAMPLE_SYMBOLIZED,
];

// ------------------------------------------------------------ derived
// Tables a query session computes from the stored ones the first time a
// query reads them (trawl-query's lazy tables); never written to a capture.

pub static MEMORY_REGION: TableDef = TableDef {
    name: "memory_region",
    doc: "Memory regions rebuilt by replaying the traced memory system calls (mmap, munmap, mremap, brk, fork/clone/vfork, execve, exits): one row per piece of a region over the interval it existed unchanged. `live_regions(at_ns)` and `unfreed(...)` read it.",
    columns: &[
        col!("pid", Int32, null, "Process whose address space holds the piece (whichever of its threads made the call)."),
        col!("start", UInt64, "Address of the piece's first byte."),
        col!("end", UInt64, "Address of the byte after the piece's last."),
        col!("bytes", UInt64, "Size of the piece: end − start."),
        col!("kind", Utf8, "`anon`, `file` (a file mapping) or `heap` (brk)."),
        col!("path", Utf8, null, "File of a file mapping (strace -y)."),
        col!("alloc_syscall_id", Int64, "The call that allocated the bytes (`syscall.syscall_id`); kept when mremap moves them or a fork copies them."),
        col!("alloc_name", Utf8, "Name of the allocating call (mmap, mremap, brk, ...)."),
        col!("stack_id", Int64, null, "Call stack of the allocating call (`stack.stack_id`)."),
        col!("alloc_ns", Int64, null, "Time of the allocating call (syscall.time_ns's clock)."),
        col!("from_ns", Int64, null, "Start of the interval this piece existed unchanged."),
        col!("to_ns", Int64, null, "End of that interval; null: still there when the trace ended."),
        col!("freed_by_syscall_id", Int64, null, "The call that ended the piece (munmap, mremap, brk, an overlapping mmap)."),
        col!("end_reason", Utf8, null, "`freed`, `split` (partly freed; the rest continues as new pieces), `exit`, `exec`; null: alive at the end."),
    ],
};

pub static TIME_BASE: TableDef = TableDef {
    name: "time_base",
    doc: "How each input of a capture is placed on the capture's relative time axis (`t_ns` of the `*_t` views): its offset from its own clock and the origin chosen with `--t0`.",
    columns: &[
        col!("source_id", Int32, "Input (`source.source_id`)."),
        col!("clock", Utf8, "The input's clock (as `source.clock`)."),
        col!("offset_ns", Int64, null, "Added to the input's times to give t_ns; null: the input cannot be placed (no UTC reference next to inputs that have one)."),
        col!("aligned", Bool, "Whether the input is on the common axis."),
        col!("origin_utc_ns", Int64, null, "The origin in UTC ns, when known."),
        col!("origin", Utf8, "How the origin was found (first event, an exec, an instant)."),
    ],
};

pub static SAMPLE_ENERGY: TableDef = TableDef {
    name: "sample_energy",
    doc: "Each RAPL interval's energy shared among the perf samples taken in it (Ono et al. 2015, sampling-based power measurement), for the event with most samples and period indicators; `energy_by(...)` computes it for other events, indicators and counters.",
    columns: &[
        col!("sample_id", Int64, null, "The sample (`perf_sample.sample_id`); null: energy of intervals without samples (unattributed)."),
        col!("domain", Utf8, "RAPL domain (package, cores, dram, ...)."),
        col!("joules", Float64, "The sample's share of the domain's energy, J."),
        col!("cpu", Int32, null, "The sample's CPU."),
        col!("package", Int32, null, "The package of that CPU (perf_cpu), or of the unattributed interval's counter."),
    ],
};

pub static ENERGY_CHAIN: TableDef = TableDef {
    name: "energy_chain",
    doc: "Every energy counter of a capture (zone of an input) and whether it is the one read for its domain (and package): reading two counters of one domain would count the energy twice.",
    columns: &[
        col!("domain", Utf8, null, "RAPL domain of the counter (package, cores, dram, ...)."),
        col!("package", Int32, null, "The package the counter is chosen for, when the domain is read per package."),
        col!("source_id", Int32, null, "Input the counter was read from (`source.source_id`)."),
        col!("zone", Utf8, null, "The counter (`energy.zone`)."),
        col!("intervals", Int64, null, "Intervals (readings with a delta) of the counter."),
        col!("chosen", Bool, null, "Whether this counter is the one read for its domain."),
    ],
};

/// The tables that are id spaces: modules, frames, stacks and what
/// symbolization learnt of them. A segment's captures share one of each
/// (an archive's segment, `segment=NAME/`, deduplicates them across its
/// captures, as Grafana Pyroscope's per-block symbol database does; a
/// capture directory is a segment of its own), so their rows have no
/// capture: tables join them on `segment` and the id (`perf_sample.segment
/// = stack.segment AND perf_sample.stack_id = stack.stack_id`).
pub static SHARED: &[&TableDef] = &[&MODULE, &FRAME, &STACK, &SYMBOL, &SYMBOL_FILE, &INSTRUCTION];

/// The derived tables, in the order `docs/tables.md` lists them.
pub static DERIVED: &[&TableDef] = &[&TIME_BASE, &MEMORY_REGION, &SAMPLE_ENERGY, &ENERGY_CHAIN];

/// The manifest of an archive (`trawl archive ingest`): one row per
/// capture, at the archive's root (`ARCHIVE/capture.parquet`), next to
/// the captures (`ARCHIVE/capture=NAME/<table>.parquet`).
pub static ARCHIVE_CAPTURE: TableDef = TableDef {
    name: "capture",
    doc: "Archive manifest: one row per capture of the archive (`trawl archive ingest`), failed ones included. Only at an archive's root.",
    columns: &[
        col!("capture", Utf8, "Name of the capture: its directory is `capture=NAME`, and every table's `capture` column holds NAME."),
        col!("status", Utf8, "`ok` (ingested; the directory exists) or `failed` (no directory; see `message`)."),
        col!("message", Utf8, null, "Why the capture failed; for an ingested one, the symbolization stages that failed (null: none)."),
        col!("inputs", Int32, "Number of input files (rows in `capture_input`)."),
        col!("input_bytes", Int64, "Total size of the inputs."),
        col!("content_hash", Utf8, "BLAKE3 over the inputs' names and content hashes: a capture whose inputs have this hash is not ingested again."),
        col!("diagnostics", Int64, null, "Diagnostics recorded by the ingest (rows in the capture's `diagnostic`)."),
        col!("host", Utf8, null, "Host the first perf.data was recorded on (its `hostname` header)."),
        col!("start_utc_ns", Int64, null, "Time of the capture's first sample or event, ns since the epoch (UTC), when its clock can be placed on UTC."),
        col!("ingested_utc_ns", Int64, "When trawl ingested (or tried to ingest) the capture, ns since the epoch."),
        col!("trawl_version", Utf8, "Version of trawl that wrote the capture."),
        col!("schema_version", Int32, "Schema version of the capture's tables (`trawl.schema_version` in every file's metadata)."),
        col!("segment", Utf8, null, "The segment holding the capture's rows (`segment=NAME/`, shared with the captures ingested with it); null: the capture has a directory of its own (`capture=NAME/`, archives written before segments, until `trawl archive compact`)."),
    ],
};

/// The inputs of each capture of an archive (`ARCHIVE/capture_input.parquet`).
pub static ARCHIVE_INPUT: TableDef = TableDef {
    name: "capture_input",
    doc: "Archive manifest: one row per input file of each capture (`trawl archive ingest`). Only at an archive's root.",
    columns: &[
        col!("capture", Utf8, "Capture the input belongs to (`capture.capture`)."),
        col!("path", Utf8, "The input's path as found under the source given to `trawl archive ingest`."),
        col!("size_bytes", Int64, "Size of the input."),
        col!("blake3", Utf8, "BLAKE3 hash of the input's content, in hex."),
        col!("mtime_ns", Int64, null, "Modification time of the input when it was hashed (ns since the epoch): an input whose path, size, modification time and inode are unchanged is not read again by the next run (`--rehash` reads every input)."),
        col!("inode", Int64, null, "Inode number of the input when it was hashed (see `mtime_ns`)."),
    ],
};

/// The table files of each capture of an archive
/// (`ARCHIVE/capture_file.parquet`).
pub static ARCHIVE_FILE: TableDef = TableDef {
    name: "capture_file",
    doc: "Archive manifest: one row per table file of each ingested capture (`trawl archive ingest`): an archive in an object store opens from this list, without listing the bucket. Only at an archive's root.",
    columns: &[
        col!("capture", Utf8, "Capture the file belongs to (`capture.capture`)."),
        col!("table_name", Utf8, "The table: the file is `capture=NAME/<table_name>.parquet`."),
        col!("size_bytes", Int64, "Size of the file."),
        col!("rows", Int64, null, "The capture's rows in the table (null: not known, for files listed from an archive of an earlier trawl)."),
        col!("segment", Utf8, null, "The segment whose file holds the rows (`segment=NAME/<table_name>.parquet`, `size_bytes` its size); null: the capture's own file."),
        col!("first_row", Int64, null, "Position of the capture's first row in the segment's file (its rows are `rows` consecutive rows from there); null: the capture's own file."),
        col!("min_time_ns", Int64, null, "Smallest `time_ns` of the capture's rows in the table (tables with times; capture clock)."),
        col!("max_time_ns", Int64, null, "Largest `time_ns` of the capture's rows in the table."),
    ],
};

/// The files of each segment of an archive (`ARCHIVE/segment_file.parquet`).
pub static ARCHIVE_SEGMENT_FILE: TableDef = TableDef {
    name: "segment_file",
    doc: "Archive manifest: one row per table file of each segment (`segment=NAME/<table_name>.parquet`): the captures ingested together share one file per table, the id tables (`module`, `frame`, `stack`, `symbol`, ...) deduplicated across them. Only at an archive's root.",
    columns: &[
        col!("segment", Utf8, "The segment (`capture.segment`)."),
        col!("table_name", Utf8, "The table."),
        col!("size_bytes", Int64, "Size of the file."),
        col!("rows", Int64, "Rows in the file (those of captures since replaced or removed included, until `trawl archive compact`)."),
        col!("live_rows", Int64, null, "Rows of the captures `live_captures` counts: those a reader reads of the file (all when equal to `rows`; every row of a table of the segment's ids), known without `capture_file` (null: an archive of an earlier trawl)."),
        col!("live_captures", Int64, null, "Captures `capture` places in the segment (status `ok`) when this row was written: a reader trusts `live_rows` when it counts as many (a segment's captures only ever leave it)."),
    ],
};

/// The archive's own tables (at its root), in the order they are written:
/// `capture`, the one readers start from, last.
pub static ARCHIVE: &[&TableDef] = &[
    &ARCHIVE_INPUT,
    &ARCHIVE_FILE,
    &ARCHIVE_SEGMENT_FILE,
    &ARCHIVE_CAPTURE,
];

pub fn table(name: &str) -> Option<&'static TableDef> {
    TABLES.iter().copied().find(|t| t.name == name)
}

/// Renders `docs/tables.md`.
pub fn render_markdown() -> String {
    let mut s = String::from(
        "# Tables\n\n<!-- Generated from capture/src/schema.rs by `cargo run -- tables --markdown`; \
         a test fails when this file is stale. -->\n\n\
         A capture directory holds one Parquet file per table (`<table>.parquet`). \
         Times are nanoseconds on the capture's clock. \
         Each column's documentation is also stored in the Parquet schema (field metadata `doc`). \
         Ids (`stack_id`, `frame_id`, `module_id`) are unique within a segment: a capture directory is a segment of its own, \
         and an archive's segments are shared by several captures. In a query session (`trawl sql`, Python) every table has \
         a `segment` column, and the tables of a segment's ids (`module`, `frame`, `stack`, `symbol`, `symbol_file`, \
         `instruction`) have it in place of `capture`: join them on `segment` and the id.\n\n",
    );
    for t in TABLES {
        s.push_str(&format!("- [`{}`](#{})\n", t.name, t.name));
    }
    s.push_str("\nDerived tables (computed by a query session when first read, never stored): ");
    let names: Vec<String> = DERIVED
        .iter()
        .map(|t| format!("[`{}`](#{})", t.name, t.name))
        .collect();
    s.push_str(&names.join(", "));
    s.push_str(". The analyses (`trawl functions`) document their columns in their SQL files under `query/analyses/`.\n");
    s.push_str("\nAn archive (`trawl archive ingest`) stores its captures in segments, `ARCHIVE/segment=NAME/<table>.parquet`: the tables of a capture's rows with a leading `capture` column, the id tables (`module`, `frame`, `stack`, `symbol`, `symbol_file`, `instruction`) shared by the segment's captures, joined on `segment` and the id (`read_parquet('ARCHIVE/segment=*/perf_sample.parquet', hive_partitioning = true)`); its manifest is at the root: ");
    let names: Vec<String> = ARCHIVE
        .iter()
        .map(|t| format!("[`{}`](#{})", t.name, t.name))
        .collect();
    s.push_str(&names.join(", "));
    s.push_str(".\n");
    for t in TABLES.iter().chain(DERIVED).chain(ARCHIVE) {
        s.push_str(&format!("\n## {}\n\n{}\n\n", t.name, t.doc));
        s.push_str("| column | type | null | description |\n|---|---|---|---|\n");
        for c in t.columns {
            s.push_str(&format!(
                "| `{}` | {} | {} | {} |\n",
                c.name,
                c.ty.sql_name(),
                if c.nullable { "yes" } else { "" },
                c.doc.replace('|', "\\|")
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_tables_md_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/tables.md");
        let want = render_markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "docs/tables.md is stale: run `UPDATE_DOCS=1 cargo test -p trawl-capture docs_tables_md_is_current` \
             (or `cargo run -- tables --markdown > docs/tables.md`)"
        );
    }

    #[test]
    fn every_column_is_documented_and_unique() {
        for t in TABLES.iter().chain(DERIVED) {
            assert!(!t.doc.is_empty(), "{}", t.name);
            let mut names = std::collections::HashSet::new();
            for c in t.columns {
                assert!(c.doc.len() > 10, "{}.{} needs a sentence", t.name, c.name);
                assert!(names.insert(c.name), "{}.{} twice", t.name, c.name);
            }
        }
    }
}
