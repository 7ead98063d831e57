//! pprof's `profile.proto` (github.com/google/pprof, proto/profile.proto),
//! gzip-compressed as pprof and Go's runtime write it.
//!
//! - sample types: `samples`/`count`, then the weight when the selection
//!   weighs samples (`cpu-clock`/`nanoseconds` for the period of a clock
//!   event, else EVENT or the weight's name / `count`); the last is the
//!   default;
//! - one sample per (thread, command, stack) with labels `pid`, `tid`
//!   (numbers), `comm` and, with several captures, `capture` (strings), so
//!   `-tagfocus`/`-tagshow` select them;
//! - one location per distinct frame, its lines the inline chain innermost
//!   first (pprof's order: the last line is the function the others were
//!   inlined into), with source file and line where DWARF gave them;
//! - one mapping per module; its addresses are trawl's module-relative
//!   addresses (file offsets; absolute for the kernel), and every mapping
//!   says it has functions, so pprof never tries to symbolize again.

use std::collections::HashMap;
use std::io::Write;

use trawl_query::profile::StackProfile;

/// Messages of profile.proto (field numbers as in the .proto file).
pub mod proto {
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Profile {
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        #[prost(message, repeated, tag = "3")]
        pub mapping: Vec<Mapping>,
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        #[prost(int64, tag = "7")]
        pub drop_frames: i64,
        #[prost(int64, tag = "8")]
        pub keep_frames: i64,
        #[prost(int64, tag = "9")]
        pub time_nanos: i64,
        #[prost(int64, tag = "10")]
        pub duration_nanos: i64,
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        #[prost(int64, tag = "12")]
        pub period: i64,
        #[prost(int64, repeated, tag = "13")]
        pub comment: Vec<i64>,
        #[prost(int64, tag = "14")]
        pub default_sample_type: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        #[prost(int64, tag = "1")]
        pub key: i64,
        #[prost(int64, tag = "2")]
        pub str: i64,
        #[prost(int64, tag = "3")]
        pub num: i64,
        #[prost(int64, tag = "4")]
        pub num_unit: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Mapping {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub memory_start: u64,
        #[prost(uint64, tag = "3")]
        pub memory_limit: u64,
        #[prost(uint64, tag = "4")]
        pub file_offset: u64,
        #[prost(int64, tag = "5")]
        pub filename: i64,
        #[prost(int64, tag = "6")]
        pub build_id: i64,
        #[prost(bool, tag = "7")]
        pub has_functions: bool,
        #[prost(bool, tag = "8")]
        pub has_filenames: bool,
        #[prost(bool, tag = "9")]
        pub has_line_numbers: bool,
        #[prost(bool, tag = "10")]
        pub has_inline_frames: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(uint64, tag = "2")]
        pub mapping_id: u64,
        #[prost(uint64, tag = "3")]
        pub address: u64,
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
        #[prost(bool, tag = "5")]
        pub is_folded: bool,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
        #[prost(int64, tag = "2")]
        pub line: i64,
        #[prost(int64, tag = "3")]
        pub column: i64,
    }

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        #[prost(uint64, tag = "1")]
        pub id: u64,
        #[prost(int64, tag = "2")]
        pub name: i64,
        #[prost(int64, tag = "3")]
        pub system_name: i64,
        #[prost(int64, tag = "4")]
        pub filename: i64,
        #[prost(int64, tag = "5")]
        pub start_line: i64,
    }
}

/// The string table: index 0 is "".
struct Strings {
    table: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Strings {
    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.ids.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.ids.insert(s.to_string(), i);
        i
    }
}

/// The profile as a `profile.proto` message.
pub fn profile(p: &StackProfile) -> proto::Profile {
    let mut st = Strings {
        table: vec![String::new()],
        ids: HashMap::from([(String::new(), 0)]),
    };
    let mut out = proto::Profile::default();
    out.sample_type.push(proto::ValueType {
        r#type: st.id("samples"),
        unit: st.id("count"),
    });
    let weighed = p.weight.is_some();
    if let Some(w) = &p.weight {
        let name = if w == "period" { p.event.as_str() } else { w };
        out.sample_type.push(proto::ValueType {
            r#type: st.id(name),
            unit: st.id(crate::units::weight_unit(p)),
        });
    }
    let last = out.sample_type.last().cloned();
    out.default_sample_type = last.as_ref().map_or(0, |v| v.r#type);
    out.period_type = last;
    out.comment.push(st.id(&format!(
        "trawl export: event {}, weight {}",
        p.event,
        p.weight.as_deref().unwrap_or("samples")
    )));
    // Mappings: one per module, over the addresses its locations use. pprof
    // takes the first mapping for the main binary (`File:` in its reports):
    // the executable holding the most samples' leaves goes first.
    let order = mapping_order(p);
    let mut mapping_id = vec![0u64; p.modules.len()];
    for (k, &m) in order.iter().enumerate() {
        mapping_id[m] = k as u64 + 1;
    }
    for &i in &order {
        let m = &p.modules[i];
        out.mapping.push(proto::Mapping {
            id: mapping_id[i],
            memory_start: 0,
            memory_limit: 0,
            file_offset: 0,
            filename: st.id(&m.path),
            build_id: m.build_id.as_deref().map_or(0, |b| st.id(b)),
            has_functions: true,
            ..Default::default()
        });
    }
    // Functions: one per (name, file).
    let mut funcs: HashMap<(u32, Option<u32>), u64> = HashMap::new();
    for (i, loc) in p.locations.iter().enumerate() {
        let mut lines = Vec::with_capacity(loc.lines.len());
        for l in &loc.lines {
            let n = funcs.len() as u64 + 1;
            let id = *funcs.entry((l.function, l.file)).or_insert_with(|| {
                let name = st.id(p.str(l.function));
                out.function.push(proto::Function {
                    id: n,
                    name,
                    system_name: name,
                    filename: l.file.map_or(0, |f| st.id(p.str(f))),
                    start_line: 0,
                });
                n
            });
            lines.push(proto::Line {
                function_id: id,
                line: l.line as i64,
                column: 0,
            });
        }
        if let Some(m) = loc.module {
            let mp = &mut out.mapping[mapping_id[m as usize] as usize - 1];
            mp.memory_limit = mp.memory_limit.max(loc.rel_pc.saturating_add(1));
            mp.has_filenames |= loc.lines.iter().any(|l| l.file.is_some());
            mp.has_line_numbers |= loc.lines.iter().any(|l| l.line > 0);
            mp.has_inline_frames |= loc.lines.len() > 1;
        }
        out.location.push(proto::Location {
            id: i as u64 + 1,
            mapping_id: loc.module.map_or(0, |m| mapping_id[m as usize]),
            address: loc.rel_pc,
            line: lines,
            is_folded: false,
        });
    }
    let (k_pid, k_tid, k_comm, k_cap) =
        (st.id("pid"), st.id("tid"), st.id("comm"), st.id("capture"));
    let several = p.captures.len() > 1;
    let mut caps: Vec<i64> = Vec::new();
    if several {
        caps = p.captures.iter().map(|c| st.id(c)).collect();
    }
    for s in &p.samples {
        let mut value = vec![s.count];
        if weighed {
            value.push(s.weight);
        }
        let mut label = vec![
            proto::Label {
                key: k_pid,
                num: s.pid as i64,
                ..Default::default()
            },
            proto::Label {
                key: k_tid,
                num: s.tid as i64,
                ..Default::default()
            },
            proto::Label {
                key: k_comm,
                str: st.id(p.str(s.comm)),
                ..Default::default()
            },
        ];
        if several {
            label.push(proto::Label {
                key: k_cap,
                str: caps[s.capture as usize],
                ..Default::default()
            });
        }
        out.sample.push(proto::Sample {
            location_id: s
                .stack
                .map(|k| p.stacks[k as usize].iter().map(|&l| l as u64 + 1).collect())
                .unwrap_or_default(),
            value,
            label,
        });
    }
    if let Some((a, b)) = p.time_range {
        out.duration_nanos = b.saturating_sub(a);
    }
    out.string_table = st.table;
    out
}

/// Module indexes in mapping order: first the executable (not the
/// kernel, a `[special]` mapping or a shared library) with the most
/// samples' leaves, then the rest in module order.
fn mapping_order(p: &StackProfile) -> Vec<usize> {
    let mut leaves = vec![0i64; p.modules.len()];
    for s in &p.samples {
        let leaf = s.stack.and_then(|k| p.stacks[k as usize].first());
        if let Some(m) = leaf.and_then(|&l| p.locations[l as usize].module) {
            leaves[m as usize] += s.count;
        }
    }
    let main = (0..p.modules.len())
        .filter(|&i| {
            let m = &p.modules[i];
            !m.is_kernel && !m.path.starts_with('[') && !m.path.contains(".so") && leaves[i] > 0
        })
        .max_by_key(|&i| (leaves[i], std::cmp::Reverse(i)));
    let mut order: Vec<usize> = main.into_iter().collect();
    order.extend((0..p.modules.len()).filter(|&i| Some(i) != main));
    order
}

/// The profile as pprof reads it: `profile.proto`, gzip-compressed.
pub fn write(p: &StackProfile) -> anyhow::Result<Vec<u8>> {
    let bytes = prost::Message::encode_to_vec(&profile(p));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&bytes)?;
    Ok(gz.finish()?)
}
