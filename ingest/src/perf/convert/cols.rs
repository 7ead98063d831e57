//! The column builders of the perf_* tables.

use std::sync::Arc;

use arrow::array::{
    BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
    StringDictionaryBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Int32Type, Int64Type, UInt32Type, UInt64Type};
use trawl_capture::schema;

use crate::columns::{Bools, DictKeys, OptBinary, OptPrim, Prim, UtcTime};
use crate::perf::records::CpuMode;

pub(super) type Dict = StringDictionaryBuilder<Int32Type>;

pub(super) fn list_u64() -> ListBuilder<UInt64Builder> {
    ListBuilder::new(UInt64Builder::new()).with_field(Arc::new(Field::new(
        "item",
        DataType::UInt64,
        false,
    )))
}

table_columns! {
    #[derive(Default)]
    pub(super) struct SampleCols for schema::PERF_SAMPLE {
        sample_id: Prim<Int64Type>,
        source_id: Prim<Int32Type>,
        time_ns: OptPrim<Int64Type>,
        time_utc: UtcTime,
        pid: OptPrim<Int32Type>,
        tid: OptPrim<Int32Type>,
        cpu: OptPrim<UInt32Type>,
        comm: DictKeys,
        event_id: Prim<Int32Type>,
        event: DictKeys,
        period: OptPrim<Int64Type>,
        ip: OptPrim<UInt64Type>,
        cpu_mode: DictKeys,
        stack_id: OptPrim<Int64Type>,
        addr: OptPrim<UInt64Type>,
        weight: OptPrim<UInt64Type>,
        weight_ins_lat: OptPrim<UInt32Type>,
        weight_var3: OptPrim<UInt32Type>,
        data_src: OptPrim<UInt64Type>,
        transaction: OptPrim<UInt64Type>,
        phys_addr: OptPrim<UInt64Type>,
        cgroup: OptPrim<UInt64Type>,
        data_page_size: OptPrim<UInt64Type>,
        code_page_size: OptPrim<UInt64Type>,
        raw: OptBinary,
        n_read: Prim<Int32Type>,
        n_branch: Prim<Int32Type>,
        has_user_stack: Bools,
    }
}

impl SampleCols {
    pub(super) fn new() -> Self {
        let mut c = SampleCols::default();
        // Keys of cpu_mode are the CpuMode order.
        for m in CpuMode::ALL {
            c.cpu_mode.intern(m.as_str());
        }
        c
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct ReadCols for schema::PERF_SAMPLE_READ {
        sample_id: Int64Builder,
        idx: Int32Builder,
        event_id: Int32Builder,
        event: StringBuilder,
        value: UInt64Builder,
        counter_kernel_id: UInt64Builder,
        lost: UInt64Builder,
        time_enabled_ns: UInt64Builder,
        time_running_ns: UInt64Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct BranchCols for schema::PERF_BRANCH {
        sample_id: Int64Builder,
        idx: Int32Builder,
        from_ip: UInt64Builder,
        to_ip: UInt64Builder,
        mispred: BooleanBuilder,
        predicted: BooleanBuilder,
        in_tx: BooleanBuilder,
        abort: BooleanBuilder,
        cycles: UInt32Builder,
        r#type: UInt32Builder,
        spec: UInt32Builder,
        new_type: UInt32Builder,
        r#priv: UInt32Builder,
        counters: UInt64Builder,
        hw_idx: UInt64Builder,
        transfer: Dict,
        from_frame_id: Int64Builder,
        to_frame_id: Int64Builder,
        stack_id: Int64Builder,
        repeated: BooleanBuilder,
    }
}

table_columns! {
    pub(super) struct UserStackCols for schema::PERF_USER_STACK {
        sample_id: Int64Builder,
        regs_abi: UInt64Builder,
        regs_mask: UInt64Builder,
        regs: ListBuilder<UInt64Builder>,
        stack_size: UInt64Builder,
        stack: BinaryBuilder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct MappingCols for schema::PERF_MAPPING {
        mapping_id: Int64Builder,
        source_id: Int32Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        pid: Int32Builder,
        tid: Int32Builder,
        start: UInt64Builder,
        length: UInt64Builder,
        pgoff: UInt64Builder,
        path: StringBuilder,
        module_id: Int64Builder,
        build_id: StringBuilder,
        prot: UInt32Builder,
        flags: UInt32Builder,
        dev_major: UInt32Builder,
        dev_minor: UInt32Builder,
        inode: UInt64Builder,
        executable: BooleanBuilder,
        cpu_mode: Dict,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct TaskCols for schema::PERF_TASK_EVENT {
        source_id: Int32Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        kind: Dict,
        pid: Int32Builder,
        tid: Int32Builder,
        ppid: Int32Builder,
        ptid: Int32Builder,
        comm: StringBuilder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct SwitchCols for schema::PERF_SWITCH {
        source_id: Int32Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        cpu: UInt32Builder,
        pid: Int32Builder,
        tid: Int32Builder,
        direction: StringBuilder,
        preempt: BooleanBuilder,
        other_pid: Int32Builder,
        other_tid: Int32Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct SchedSwitchCols for schema::PERF_SCHED_SWITCH {
        sample_id: Int64Builder,
        prev_comm: StringBuilder,
        prev_tid: Int32Builder,
        prev_prio: Int32Builder,
        prev_state: Int64Builder,
        prev_state_text: StringBuilder,
        next_comm: StringBuilder,
        next_tid: Int32Builder,
        next_prio: Int32Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct LostCols for schema::PERF_LOST {
        source_id: Int32Builder,
        time_ns: Int64Builder,
        time_utc: UtcTime,
        kind: StringBuilder,
        event_id: Int32Builder,
        count: UInt64Builder,
        pid: Int32Builder,
        tid: Int32Builder,
        cpu: UInt32Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct EventCols for schema::PERF_EVENT {
        event_id: Int32Builder,
        source_id: Int32Builder,
        name: StringBuilder,
        r#type: UInt32Builder,
        config: UInt64Builder,
        config1: UInt64Builder,
        config2: UInt64Builder,
        sample_type: UInt64Builder,
        read_format: UInt64Builder,
        sample_period: UInt64Builder,
        sample_freq: UInt64Builder,
        branch_sample_type: UInt64Builder,
        sample_regs_user: UInt64Builder,
        sample_stack_user: UInt32Builder,
        flags: UInt64Builder,
        exclude_user: BooleanBuilder,
        exclude_kernel: BooleanBuilder,
        clockid: Int32Builder,
        ids: ListBuilder<UInt64Builder>,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct BuildIdCols for schema::PERF_BUILD_ID {
        source_id: Int32Builder,
        pid: Int32Builder,
        path: StringBuilder,
        build_id: StringBuilder,
        cpu_mode: Dict,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct CpuCols for schema::PERF_CPU {
        source_id: Int32Builder,
        cpu: Int32Builder,
        core_id: Int32Builder,
        die_id: Int32Builder,
        socket_id: Int32Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct ThreadCols for schema::PERF_THREAD {
        source_id: Int32Builder,
        pid: Int32Builder,
        tid: Int32Builder,
        ppid: Int32Builder,
        comm: StringBuilder,
        start_ns: Int64Builder,
        exec_ns: Int64Builder,
        end_ns: Int64Builder,
        samples: Int64Builder,
    }
}

table_columns! {
    #[derive(Default)]
    pub(super) struct TracepointFieldCols for schema::TRACEPOINT_FIELD {
        source_id: Int32Builder,
        tracepoint_id: UInt64Builder,
        event: StringBuilder,
        position: Int32Builder,
        field: StringBuilder,
        declaration: StringBuilder,
        offset: Int32Builder,
        size: Int32Builder,
        signed: BooleanBuilder,
        common: BooleanBuilder,
        decode: StringBuilder,
        big_endian: BooleanBuilder,
    }
}
