//! Unwind facts in the symbol store: `STORE/<key>/cfi/*.parquet`, what
//! DWARF stack unwinding reads of a module (its load segments and CFI
//! sections, see trawl-symbolize's `unwind::Cfi`), so that unwinding the
//! stacks of a later capture opens none of its files. A table of its own
//! (the sections are binary): a row per load segment (`name` =
//! `segment`: `lo` = file offset, `hi` = `lo` + size, `vaddr`) and per
//! section (`name` = `.eh_frame`, ...: `lo..hi` its addresses, `data` its
//! bytes, empty for `.text` and `.got`). Checksummed like every part.

use std::hash::Hasher;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, RecordBatch, StringBuilder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use trawl_symbolize::unwind::{Cfi, CfiSection};

use super::{check_value, open_checked, read_batches, write_checked};

/// The entry's subdirectory of unwind parts.
pub(super) const DIR: &str = "cfi";
/// This layout's version.
const VERSION: &str = "cfi-1";

fn schema() -> SchemaRef {
    let u64f = |n: &str| Field::new(n, DataType::UInt64, false);
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        u64f("lo"),
        u64f("hi"),
        u64f("vaddr"),
        Field::new("data", DataType::Binary, false),
    ]))
}

/// Feeds one row to a part's checksum, in one write of `buf`.
fn hash_row(h: &mut twox_hash::XxHash64, buf: &mut Vec<u8>, r: (&str, u64, u64, u64, &[u8])) {
    buf.clear();
    buf.extend_from_slice(&(r.0.len() as u64).to_ne_bytes());
    buf.extend_from_slice(r.0.as_bytes());
    for n in [r.1, r.2, r.3, r.4.len() as u64] {
        buf.extend_from_slice(&n.to_ne_bytes());
    }
    buf.extend_from_slice(r.4);
    h.write(buf);
}

/// Writes `cfi` as an unwind part at `path`.
pub(super) fn write(path: &Path, cfi: &Cfi) -> Result<(), String> {
    let mut name = StringBuilder::new();
    let (mut lo, mut hi, mut vaddr) = (
        UInt64Builder::new(),
        UInt64Builder::new(),
        UInt64Builder::new(),
    );
    let mut data = BinaryBuilder::new();
    let mut h = twox_hash::XxHash64::with_seed(0);
    let mut buf = Vec::new();
    let mut n = 0u64;
    let rows = cfi
        .segments
        .iter()
        .map(|&(off, va, size)| ("segment", off, off.saturating_add(size), va, &[][..]))
        .chain(
            cfi.sections
                .iter()
                .map(|s| (s.name.as_str(), s.svma.start, s.svma.end, 0, &s.data[..])),
        );
    for r in rows {
        hash_row(&mut h, &mut buf, r);
        n += 1;
        name.append_value(r.0);
        lo.append_value(r.1);
        hi.append_value(r.2);
        vaddr.append_value(r.3);
        data.append_value(r.4);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(name.finish()),
        Arc::new(lo.finish()),
        Arc::new(hi.finish()),
        Arc::new(vaddr.finish()),
        Arc::new(data.finish()),
    ];
    let batch = RecordBatch::try_new(schema(), cols).map_err(|e| e.to_string())?;
    write_checked(path, &batch, VERSION, check_value(n, &h), Vec::new())
}

/// The unwind facts of the part at `path`, after checking its version,
/// layout and checksum.
pub(super) fn read(path: &Path) -> Result<Cfi, String> {
    let (b, kv) = open_checked(path, VERSION, &schema())?;
    let (batches, check) = read_batches(b, &kv)?;
    let mut h = twox_hash::XxHash64::with_seed(0);
    let mut buf = Vec::new();
    let mut n = 0u64;
    let mut cfi = Cfi::default();
    for b in &batches {
        if b.columns().iter().any(|c| c.null_count() > 0) {
            return Err("null values".into());
        }
        let u = |i: usize| b.column(i).as_primitive::<UInt64Type>();
        let (name, lo, hi, vaddr) = (b.column(0).as_string::<i32>(), u(1), u(2), u(3));
        let data = b.column(4).as_binary::<i32>();
        for i in 0..b.num_rows() {
            let r = (
                name.value(i),
                lo.value(i),
                hi.value(i),
                vaddr.value(i),
                data.value(i),
            );
            hash_row(&mut h, &mut buf, r);
            n += 1;
            if r.0 == "segment" {
                cfi.segments.push((r.1, r.3, r.2.saturating_sub(r.1)));
            } else {
                cfi.sections.push(CfiSection {
                    name: r.0.to_string(),
                    svma: r.1..r.2,
                    data: r.4.to_vec(),
                });
            }
        }
    }
    if check != check_value(n, &h) {
        return Err("checksum mismatch: the part was changed or cut short".into());
    }
    Ok(cfi)
}

#[cfg(test)]
mod tests {
    use super::super::SymbolStore;
    use super::*;
    use trawl_symbolize::FactStore;

    #[test]
    fn unwind_facts_read_back_as_written() {
        let t = tempfile::tempdir().unwrap();
        let s = SymbolStore::open(t.path()).unwrap();
        let cfi = Cfi {
            segments: vec![(0, 0, 0x1000), (0x1000, 0x401000, 0x2345)],
            sections: vec![
                CfiSection {
                    name: ".text".into(),
                    svma: 0x401000..0x402000,
                    data: Vec::new(),
                },
                CfiSection {
                    name: ".eh_frame".into(),
                    svma: 0x403000..0x403010,
                    data: (0u8..16).collect(),
                },
            ],
        };
        assert_eq!(s.load_cfi("build-id-abcd"), None);
        s.save_cfi("build-id-abcd", &cfi);
        assert_eq!(s.load_cfi("build-id-abcd"), Some(cfi.clone()));
        assert!(s.take_problems().is_empty());
        // Cut short: reported, removed, learnt again.
        let part = std::fs::read_dir(t.path().join("build-id-abcd").join(DIR))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let b = std::fs::read(&part).unwrap();
        std::fs::write(&part, &b[..b.len() / 2]).unwrap();
        assert_eq!(s.load_cfi("build-id-abcd"), None);
        let p = s.take_problems();
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].kind, "symbol_store_damaged");
        assert!(!part.exists());
    }
}
