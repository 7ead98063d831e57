//! perf's tracing data: the tracefs `format` file of every tracepoint (and
//! `perf probe` probe) a recording holds, from the HEADER_TRACING_DATA
//! feature section (file mode) or record (pipe mode).
//!
//! The layout is tools/perf/util/trace-event-read.c's (and trace-cmd's
//! `trace.dat` header, trace-cmd.dat(5)): `\x17\x08\x44tracing`, a version
//! string, the byte order (1: big-endian), the size of a `long` and the page
//! size, the `header_page` and `header_event` files, the ftrace formats, then
//! per system its name and its events' format files. Each format file is
//! parsed by `tracepoint_decode` (Microsoft's LinuxTracepoints); how a field
//! is then read ([`TracepointField::decode`]) follows libtraceevent
//! (tools/lib/traceevent/event-parse.c `event_read_fields`): integers of
//! the field's size signed per its `signed:` flag, `__data_loc` /
//! `__rel_loc` descriptors, arrays by element size. Unlike libtraceevent,
//! only `char` arrays are text: `u8` / `unsigned char` arrays (addresses,
//! keys) are bytes.
//!
//! What is cut short or cannot be parsed is named in
//! [`TracingData::problems`]; the formats read before it are kept.

use eventheader_types::{FieldEncoding, FieldFormat};
use tracepoint_decode::{PerfEventFormat, PerfFieldArray};

use super::bytes::Cursor;

/// The formats of one tracing data blob.
#[derive(Clone, Debug, Default)]
pub struct TracingData {
    pub big_endian: bool,
    pub formats: Vec<TracepointFormat>,
    /// What could not be read (a format without name or ID, a field line,
    /// a blob cut short), one sentence each.
    pub problems: Vec<String>,
}

/// One event's format.
#[derive(Clone, Debug, PartialEq)]
pub struct TracepointFormat {
    /// `ID:`: `perf_event_attr.config` of the event.
    pub id: u64,
    /// `system:name`.
    pub event: String,
    pub fields: Vec<TracepointField>,
    /// The payload's byte order (the recording machine's).
    pub big_endian: bool,
}

/// One `field:` line of a format.
#[derive(Clone, Debug, PartialEq)]
pub struct TracepointField {
    pub name: String,
    /// The C declaration, e.g. `__data_loc char[] filename`.
    pub declaration: String,
    pub offset: u16,
    pub size: u16,
    /// `signed:` (absent in formats of kernels before 2.6.32).
    pub signed: Option<bool>,
    /// One of the header fields every payload starts with.
    pub common: bool,
    /// How it is read (see `tracepoint_field.decode` in the schema).
    pub decode: String,
}

impl TracepointFormat {
    /// Bytes a payload needs to hold every fixed field (and descriptor).
    pub fn fixed_len(&self) -> usize {
        self.fields
            .iter()
            .map(|f| usize::from(f.offset) + usize::from(f.size))
            .max()
            .unwrap_or(0)
    }
}

/// Parses a tracing data blob.
pub fn parse(data: &[u8]) -> TracingData {
    let mut out = TracingData::default();
    if read(data, &mut out).is_none() {
        out.problems.push(format!(
            "the tracing data ({} bytes) ends early or is malformed after {} event formats; the rest is not read",
            data.len(),
            out.formats.len()
        ));
    }
    out
}

fn read(data: &[u8], out: &mut TracingData) -> Option<()> {
    let rest = data.strip_prefix(b"\x17\x08\x44tracing")?;
    let nul = rest.iter().position(|&b| b == 0)?;
    let mut c = Cursor::new(&rest[nul + 1..], false);
    c.be = c.u8()? != 0;
    out.big_endian = c.be;
    let long_size = c.u8()?;
    c.skip(4)?; // page size
    for name in [&b"header_page\0"[..], b"header_event\0"] {
        if c.bytes(name.len())? != name {
            return None;
        }
        let n = usize::try_from(c.u64()?).ok()?;
        c.skip(n)?;
    }
    let long64 = long_size != 4;
    for _ in 0..c.u32()? {
        let n = usize::try_from(c.u64()?).ok()?;
        event(c.bytes(n)?, "ftrace", long64, out);
    }
    for _ in 0..c.u32()? {
        let rest = &c.buf[c.pos..];
        let len = rest.iter().position(|&b| b == 0)?;
        let system = String::from_utf8_lossy(&rest[..len]).into_owned();
        c.skip(len + 1)?;
        for _ in 0..c.u32()? {
            let n = usize::try_from(c.u64()?).ok()?;
            event(c.bytes(n)?, &system, long64, out);
        }
    }
    Some(())
}

/// One format file of `system`.
fn event(text: &[u8], system: &str, long64: bool, out: &mut TracingData) {
    let big_endian = out.big_endian;
    let text = String::from_utf8_lossy(text);
    let Some(f) = PerfEventFormat::parse(long64, system, &text) else {
        out.problems.push(format!(
            "a format file of system {system:?} has no name or ID; its event's payloads stay raw"
        ));
        return;
    };
    let event = format!("{system}:{}", f.name());
    // tracepoint_decode skips the field lines it cannot parse: name them.
    let lines = text
        .lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("field:") || l.starts_with("field special:"))
        .count();
    if lines != f.fields().len() {
        for l in text.lines().map(str::trim) {
            if (l.starts_with("field:") || l.starts_with("field special:"))
                && tracepoint_decode::PerfFieldFormat::parse(long64, l).is_none()
            {
                out.problems.push(format!(
                    "{event}: field line {l:?} cannot be read; the field is left out"
                ));
            }
        }
    }
    let fields = f
        .fields()
        .iter()
        .enumerate()
        .map(|(i, x)| TracepointField {
            name: x.name().to_string(),
            declaration: x.field().to_string(),
            offset: x.offset(),
            size: x.size(),
            signed: x.signed(),
            common: i < f.common_field_count(),
            decode: decode(x),
        })
        .collect();
    out.formats.push(TracepointFormat {
        id: u64::from(f.id()),
        event,
        fields,
        big_endian,
    });
}

/// How a field is read: see `tracepoint_field.decode` in the schema.
fn decode(f: &tracepoint_decode::PerfFieldFormat) -> String {
    let prefix = match f.array() {
        PerfFieldArray::None | PerfFieldArray::Fixed => "",
        PerfFieldArray::RestOfEvent => "rest:",
        PerfFieldArray::DataLoc4 => "loc:",
        PerfFieldArray::DataLoc2 => "loc2:",
        PerfFieldArray::RelLoc4 => "rel:",
        PerfFieldArray::RelLoc2 => "rel2:",
    };
    let format = f.specified_format();
    let text = format == FieldFormat::String8;
    // The type's own width (`long` per the recording's long size).
    let type_bytes = match f.specified_encoding() {
        FieldEncoding::Value8 => Some(1u16),
        FieldEncoding::Value16 => Some(2),
        FieldEncoding::Value32 => Some(4),
        FieldEncoding::Value64 => Some(8),
        _ => None,
    };
    let type_signed = format == FieldFormat::SignedInt;
    let int = |bytes: u16, signed: bool| format!("{}{}", if signed { "i" } else { "u" }, bytes * 8);
    match f.array() {
        PerfFieldArray::None => match f.size() {
            // A pointer is an address: unsigned whatever `signed:` says.
            n @ (1 | 2 | 4 | 8) => {
                let pointer = f.field().contains('*');
                int(n, !pointer && f.signed().unwrap_or(type_signed))
            }
            _ => "bytes".into(),
        },
        PerfFieldArray::Fixed => {
            if text {
                return "str".into();
            }
            let count = f.specified_array_count();
            let elem = if count > 0 && f.size() % count == 0 {
                Some(f.size() / count)
            } else {
                type_bytes.filter(|b| f.size() % b == 0)
            };
            match elem {
                Some(2 | 4 | 8) => format!(
                    "{}[]",
                    int(elem.unwrap_or(8), f.signed().unwrap_or(type_signed))
                ),
                _ => "bytes".into(),
            }
        }
        _ => {
            // Dynamic data: `signed:` describes the descriptor, the type's
            // name the elements.
            if text {
                format!("{prefix}str")
            } else {
                match type_bytes {
                    Some(n @ (2 | 4 | 8)) => format!("{prefix}{}[]", int(n, type_signed)),
                    _ => format!("{prefix}bytes"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(text: &str) -> TracingData {
        let mut out = TracingData::default();
        event(text.as_bytes(), "sys", true, &mut out);
        out
    }

    fn decodes(d: &TracingData) -> Vec<(String, String)> {
        d.formats[0]
            .fields
            .iter()
            .map(|f| (f.name.clone(), f.decode.clone()))
            .collect()
    }

    /// Formats written by hand after the kernel's (block_rq_issue of 6.x,
    /// syscall enter, an old 2.6.31 format without `signed:`, a probe with
    /// a return value and a `__rel_loc` string).
    #[test]
    fn fields_read_as_libtraceevent_reads_them() {
        let d = format_of(
            "name: block_rq_issue\nID: 2104\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
             \tfield:dev_t dev;\toffset:8;\tsize:4;\tsigned:0;\n\
             \tfield:sector_t sector;\toffset:16;\tsize:8;\tsigned:0;\n\
             \tfield:char rwbs[10];\toffset:34;\tsize:10;\tsigned:0;\n\
             \tfield:__data_loc char[] cmd;\toffset:60;\tsize:4;\tsigned:0;\n\
             \tfield:unsigned long args[6];\toffset:64;\tsize:48;\tsigned:0;\n\
             \tfield:const char * filename;\toffset:112;\tsize:8;\tsigned:0;\n\
             \tfield:__u8 saddr[4];\toffset:120;\tsize:4;\tsigned:0;\n\
             \tfield:__rel_loc char[] msg;\toffset:124;\tsize:4;\tsigned:0;\n\
             \tfield:__data_loc unsigned long[] stack;\toffset:128;\tsize:4;\tsigned:0;\n\
             \tfield:s64 delta;\toffset:136;\tsize:8;\tsigned:1;\n\n\
             print fmt: \"%d\", REC->dev\n",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let f = &d.formats[0];
        assert_eq!((f.id, f.event.as_str()), (2104, "sys:block_rq_issue"));
        assert_eq!(
            decodes(&d),
            [
                ("common_type", "u16"),
                ("common_pid", "i32"),
                ("dev", "u32"),
                ("sector", "u64"),
                ("rwbs", "str"),
                ("cmd", "loc:str"),
                ("args", "u64[]"),
                ("filename", "u64"),
                ("saddr", "bytes"),
                ("msg", "rel:str"),
                ("stack", "loc:u64[]"),
                ("delta", "i64"),
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert!(f.fields[1].common && !f.fields[2].common);
        assert_eq!(f.fixed_len(), 144);

        // 2.6.31: no `signed:`, the type decides.
        let old = format_of(
            "name: sched_wakeup\nID: 60\nformat:\n\
             \tfield:unsigned short common_type;\toffset:0;\tsize:2;\n\
             \tfield:int common_pid;\toffset:4;\tsize:4;\n\n\
             \tfield:char comm[TASK_COMM_LEN];\toffset:12;\tsize:16;\n\
             \tfield:pid_t pid;\toffset:28;\tsize:4;\n\
             \tfield:int prio;\toffset:32;\tsize:4;\n\n",
        );
        assert_eq!(
            decodes(&old),
            [
                ("common_type", "u16"),
                ("common_pid", "i32"),
                ("comm", "str"),
                ("pid", "u32"),
                ("prio", "i32")
            ]
            .map(|(a, b)| (a.to_string(), b.to_string()))
        );
        assert_eq!(old.formats[0].fields[2].signed, None);
    }

    #[test]
    fn unreadable_lines_and_formats_are_named() {
        let d = format_of(
            "name: x\nID: 7\nformat:\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
             \tfield:int a;\toffset:8;\n\tfield:int b;\toffset:12;\tsize:4;\tsigned:1;\n\n",
        );
        assert_eq!(d.formats[0].fields.len(), 2);
        assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
        assert!(d.problems[0].contains("field:int a"), "{:?}", d.problems);
        let none = format_of("format:\n\tfield:int a;\toffset:8;\tsize:4;\n");
        assert!(none.formats.is_empty());
        assert_eq!(none.problems.len(), 1);
    }

    /// A big-endian tracing data blob (a ppc64 or s390x recording), laid
    /// out by hand after trace-cmd.dat(5): sizes in the file's byte order,
    /// the formats marked big-endian.
    #[test]
    fn big_endian_tracing_data() {
        let fmt = "name: sched_wakeup\nID: 300\nformat:\n\
                   \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
                   \tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n\n";
        let mut b = b"\x17\x08\x44tracing0.6\0".to_vec();
        b.push(1); // big-endian
        b.push(8); // long size
        b.extend_from_slice(&65536u32.to_be_bytes());
        for name in [&b"header_page\0"[..], b"header_event\0"] {
            b.extend_from_slice(name);
            b.extend_from_slice(&3u64.to_be_bytes());
            b.extend_from_slice(b"abc");
        }
        b.extend_from_slice(&0u32.to_be_bytes()); // ftrace formats
        b.extend_from_slice(&1u32.to_be_bytes()); // systems
        b.extend_from_slice(b"sched\0");
        b.extend_from_slice(&1u32.to_be_bytes());
        b.extend_from_slice(&(fmt.len() as u64).to_be_bytes());
        b.extend_from_slice(fmt.as_bytes());
        let d = parse(&b);
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert!(d.big_endian);
        assert_eq!(d.formats.len(), 1);
        let f = &d.formats[0];
        assert_eq!(
            (f.id, f.event.as_str(), f.big_endian),
            (300, "sched:sched_wakeup", true)
        );
        assert_eq!(f.fields[1].decode, "i32");
        // The same blob read as little-endian sizes would not parse.
        let mut le = b.clone();
        le[b"\x17\x08\x44tracing0.6\0".len()] = 0;
        assert!(parse(&le).formats.is_empty());
    }

    /// The tracing data of fixtures/perf/probe-pipe.data (perf 6.1): the
    /// uprobe's format as perf wrote it; every cut of it yields a prefix of
    /// the formats and a problem, never a panic.
    #[test]
    fn probe_pipe_tracing_data() {
        let f = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../fixtures/perf/probe-pipe.data"
        ))
        .unwrap();
        let mut pos = 16;
        let data = loop {
            let ty = u32::from_le_bytes(f[pos..pos + 4].try_into().unwrap());
            let size = u16::from_le_bytes(f[pos + 6..pos + 8].try_into().unwrap()) as usize;
            if ty == 66 {
                let n = u32::from_le_bytes(f[pos + 8..pos + 12].try_into().unwrap()) as usize;
                break &f[pos + size..pos + size + n];
            }
            pos += size;
        };
        let all = parse(data);
        assert!(all.problems.is_empty(), "{:?}", all.problems);
        let probe = all
            .formats
            .iter()
            .find(|f| f.event == "probe_threads:burn")
            .expect("the probe's format");
        assert_eq!(probe.fields.last().unwrap().name, "__probe_ip");
        assert_eq!(probe.fields.last().unwrap().decode, "u64");
        for cut in 0..data.len() {
            let d = parse(&data[..cut]);
            assert!(d.formats.len() <= all.formats.len());
            assert!(all.formats.starts_with(&d.formats));
            assert!(d.formats.len() == all.formats.len() || !d.problems.is_empty());
        }
    }
}
