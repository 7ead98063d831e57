//! # trawl-fuzz
//!
//! One function per reader, each driving that reader over arbitrary bytes
//! to its end the way `trawl ingest` does (records decoded, rows handed to
//! a sink that drops them). The cargo-fuzz targets in `fuzz_targets/` call
//! these; the end-to-end tests (`tests/e2e/fuzz_replay.rs`, which compile
//! this file into their binary) run the committed corpora and regression
//! inputs through them on the stable toolchain, in CI.
//!
//! A reader's result is ignored: an input may be refused with an error or
//! diagnostics. A panic, a hang or an allocation beyond libFuzzer's limits
//! is the bug.

use std::io::Cursor;
use std::path::PathBuf;

use trawl_ingest::memlog::{self, Collector, RowSink, Rows};
use trawl_ingest::{energy, metrics, perf, strace, Diagnostics};

/// The fuzz targets, by name, as `fuzz_targets/NAME.rs` and
/// `corpus/NAME/` name them.
pub const TARGETS: &[(&str, fn(&[u8]))] = &[
    ("perf_file", perf_file),
    ("perf_pipe", perf_pipe),
    ("strace", strace),
    ("metrics", metrics),
    ("energy", energy),
    ("lackey", lackey),
    ("memlog_binary", memlog_binary),
    ("proc_maps", proc_maps),
    ("jit_map", jit_map),
    ("kallsyms", kallsyms),
    ("elf", elf),
];

/// A file of this process holding `data`: the readers that need random
/// access (perf.data file mode) or a path (the symbolizer) open it. One per
/// target and process, rewritten for each input; in `/dev/shm` when there is
/// one (no disk writes per input).
fn scratch(target: &str, data: &[u8]) -> PathBuf {
    let dir = std::path::Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let p = dir.join(format!("trawl-fuzz-{}-{target}", std::process::id()));
    std::fs::write(&p, data).expect("scratch file");
    p
}

fn diags() -> Diagnostics {
    Diagnostics::new("fuzz-input", false)
}

/// Every record of a reader, decoded as `ingest_perf` decodes it (samples
/// with their tracepoint payloads).
fn drain_perf(mut reader: perf::reader::PerfReader, d: &mut Diagnostics) {
    let mut points = perf::tracepoint_kinds(&reader.events, &reader.meta);
    let mut version = reader.events_version;
    loop {
        // Pipe mode: attributes arrive in the stream.
        if reader.events_version != version {
            points = perf::tracepoint_kinds(&reader.events, &reader.meta);
            version = reader.events_version;
        }
        let Ok(Some(item)) = reader.next_record(d) else {
            break;
        };
        if item.is_sample() {
            let mut s = perf::records::Sample::default();
            if item.decode_sample_into(&mut s).is_ok() {
                if let (Some(Some(e)), Some(raw)) = (points.get(item.event), s.raw) {
                    let _ = perf::records::decode_payload(*e, raw, item.big_endian());
                }
            }
        } else {
            let _ = item.decode();
        }
    }
}

/// perf.data, file mode: header, attributes, feature sections, records.
pub fn perf_file(data: &[u8]) {
    let p = scratch("perf_file", data);
    let mut d = diags();
    if let Ok(r) = perf::reader::PerfReader::open_file(&p, &mut d) {
        drain_perf(r, &mut d);
    }
}

/// perf.data, pipe mode (`perf record -o -`): attributes, names and
/// features arrive in the stream.
pub fn perf_pipe(data: &[u8]) {
    let mut d = diags();
    let input = Box::new(Cursor::new(data.to_vec()));
    if let Ok(r) = perf::reader::PerfReader::open_pipe(input, "fuzz-input") {
        drain_perf(r, &mut d);
    }
}

/// strace dumps (`-f`, `-k`, `-T`, `-tt`, `-r`, unfinished/resumed).
pub fn strace(data: &[u8]) {
    let mut d = diags();
    let mut emit = |_ev| Ok(());
    let _ = strace::reader::read(
        strace::reader::Input::Bytes(data),
        Some(1),
        &mut d,
        &mut emit,
        None,
    );
}

/// Every monitoring format's reader over the same bytes: vmstat, iostat
/// (text and JSON), sysstat (mpstat, pidstat, sar), sadf CSV, metric CSV.
pub fn metrics(data: &[u8]) {
    struct Drop;
    impl metrics::MetricSink for Drop {
        fn point(&mut self, _p: &metrics::Point<'_>) {}
    }
    let _ = metrics::sniff(data);
    for kind in [
        metrics::Kind::Vmstat,
        metrics::Kind::Iostat,
        metrics::Kind::IostatJson,
        metrics::Kind::Sysstat,
        metrics::Kind::Sadf,
        metrics::Kind::Csv,
    ] {
        let _ = metrics::read(kind, data, &mut diags(), &mut Drop);
    }
}

/// Every energy format's reader: powercap CSV, `perf stat -x,` RAPL
/// counters, turbostat.
pub fn energy(data: &[u8]) {
    struct Drop;
    impl energy::ReadingSink for Drop {
        fn reading(&mut self, _r: energy::Reading) {}
    }
    let _ = energy::sniff(data);
    let text = String::from_utf8_lossy(data);
    let _ = energy::read_powercap(&text, &mut diags(), &mut Drop);
    let _ = energy::read_perf_stat(&text, &mut diags(), &mut Drop);
    let _ = energy::read_turbostat(&text, &mut diags(), &mut Drop);
}

struct DropRows;
impl RowSink for DropRows {
    fn rows(&mut self, _rows: Rows) -> trawl_ingest::Result<()> {
        Ok(())
    }
}

/// valgrind lackey text (`--trace-mem=yes`), as a stream.
pub fn lackey(data: &[u8]) {
    let mut src = memlog::TextSource::Stream(Box::new(Cursor::new(data.to_vec())));
    let opts = memlog::MemOptions::default();
    let _ = memlog::read_text(
        &mut src,
        "fuzz-input",
        &opts,
        &mut diags(),
        &mut DropRows,
        None,
    );
}

/// trawl's binary memory log (`.tmem`: header, zstd-compressed blocks).
pub fn memlog_binary(data: &[u8]) {
    let opts = memlog::MemOptions::default();
    let r: trawl_ingest::Result<(Collector, memlog::MemStats)> =
        memlog::read_binary(&mut Cursor::new(data), &opts, &mut diags(), &mut DropRows);
    let _ = r;
}

/// `/proc/PID/maps`.
pub fn proc_maps(data: &[u8]) {
    let _ = memlog::maps::sniff(data);
    let _ = memlog::maps::parse(&String::from_utf8_lossy(data));
}

/// A `/proc/kallsyms`-format file (`--kallsyms FILE`, or the running
/// kernel's), read as the symbolizer reads it, then asked for addresses:
/// fixed ones and those the input names.
pub fn kallsyms(data: &[u8]) {
    let k = trawl_symbolize::kallsyms::Kallsyms::parse(&String::from_utf8_lossy(data));
    for a in [0u64, 1, 0xffff_ffff_8100_0000, u64::MAX] {
        let _ = k.find(a);
    }
    for w in data.split(|b| !b.is_ascii_hexdigit()).take(64) {
        if let Ok(s) = std::str::from_utf8(w) {
            if let Ok(a) = u64::from_str_radix(s, 16) {
                let _ = k.find(a);
                let _ = k.find(a.wrapping_add(1 << 20));
            }
        }
    }
}

/// JIT map files (`/tmp/perf-PID.map`) and the lookups on them.
pub fn jit_map(data: &[u8]) {
    let m = trawl_symbolize::perfmap::PerfMap::parse(&String::from_utf8_lossy(data));
    for a in [0u64, 1, 0x1000, 0x7fff_ffff_ffff, u64::MAX] {
        let _ = m.find(a);
    }
    // Addresses named in the input itself.
    for w in data.split(|b| !b.is_ascii_hexdigit()).take(64) {
        if let Ok(s) = std::str::from_utf8(w) {
            if let Ok(a) = u64::from_str_radix(s, 16) {
                let _ = m.find(a);
                let _ = m.find(a.wrapping_add(1));
            }
        }
    }
}

/// Arbitrary bytes as an ELF file named by a capture: its symbols and
/// objects, DWARF lines and inline chains, and the disassembly of its
/// functions, at its symbols' addresses.
pub fn elf(data: &[u8]) {
    let p = scratch("elf", data);
    let path = p.to_string_lossy().into_owned();
    let cfg = trawl_symbolize::Config::default();
    let mut offsets: Vec<u64> = vec![0, 0x40, 0x1000];
    if let Ok(o) = trawl_symbolize::objsyms::object_symbols(&cfg, &path) {
        for s in o.syms.iter().take(256) {
            if let Some(off) = o.segments.vaddr_to_offset(s.vaddr) {
                offsets.push(off);
                offsets.push(off.wrapping_add(s.size / 2));
            }
        }
    }
    let req = trawl_symbolize::ModuleRequest {
        path,
        build_id: None,
        kernel: false,
        addresses: offsets,
    };
    let _ = trawl_symbolize::disasm::function_code(&cfg, &req);
    let _ = trawl_symbolize::symbolize(&cfg, vec![req]);
}
