//! Decoded machine code in the symbol store: `STORE/<key>/code/*.parquet`,
//! a row per instruction of each function decoded (what `report annotate`
//! shows), so that a function is decoded once per module, whatever the
//! capture. A table of its own (not a `kind` of the facts' layout: an
//! instruction's bytes are binary), in a subdirectory of the entry;
//! DuckDB reads it as it is: `SELECT * FROM 'STORE/*/code/*.parquet'`.
//!
//! Columns: `function_address` (the function's first byte, virtual
//! address), `function_offset` (its file offset), `function` (demangled
//! name), `offset` (the instruction's file offset), `address`, `bytes`,
//! `text` (AT&T syntax). Like every part, a code part carries the
//! checksum of its rows, and the functions it holds (so that a lookup
//! reads only the parts holding what it asks for).

use std::hash::Hasher;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, RecordBatch, StringBuilder, UInt64Builder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt64Type};
use parquet::file::metadata::KeyValue;
use trawl_symbolize::disasm::{FunctionCode, Insn};

use super::{check_value, kv_get, open_checked, read_batches, write_checked};

/// The entry's subdirectory of code parts.
pub(super) const DIR: &str = "code";
/// This layout's version.
const VERSION: &str = "code-1";
/// The start addresses of the functions a part holds (hexadecimal,
/// comma-separated).
const KEY_FUNCTIONS: &str = "trawl.symbol_store.functions";

fn schema() -> SchemaRef {
    let u64f = |n: &str| Field::new(n, DataType::UInt64, false);
    Arc::new(Schema::new(vec![
        u64f("function_address"),
        u64f("function_offset"),
        Field::new("function", DataType::Utf8, false),
        u64f("offset"),
        u64f("address"),
        Field::new("bytes", DataType::Binary, false),
        Field::new("text", DataType::Utf8, false),
    ]))
}

/// Feeds one instruction row to a part's checksum, in one write of `buf`:
/// integers in native byte order, strings and bytes preceded by their
/// length as a u64.
fn hash_row(
    h: &mut twox_hash::XxHash64,
    buf: &mut Vec<u8>,
    f: (u64, u64, &str),
    i: (u64, u64, &[u8], &str),
) {
    let s = |b: &mut Vec<u8>, v: &[u8]| {
        b.extend_from_slice(&(v.len() as u64).to_ne_bytes());
        b.extend_from_slice(v);
    };
    buf.clear();
    buf.extend_from_slice(&f.0.to_ne_bytes());
    buf.extend_from_slice(&f.1.to_ne_bytes());
    s(buf, f.2.as_bytes());
    buf.extend_from_slice(&i.0.to_ne_bytes());
    buf.extend_from_slice(&i.1.to_ne_bytes());
    s(buf, i.2);
    s(buf, i.3.as_bytes());
    h.write(buf);
}

/// Writes `functions` as a code part at `path`.
pub(super) fn write(path: &Path, functions: &[FunctionCode]) -> Result<(), String> {
    let mut fa = UInt64Builder::new();
    let mut fo = UInt64Builder::new();
    let mut name = StringBuilder::new();
    let mut offset = UInt64Builder::new();
    let mut address = UInt64Builder::new();
    let mut bytes = BinaryBuilder::new();
    let mut text = StringBuilder::new();
    let mut h = twox_hash::XxHash64::with_seed(0);
    let mut buf = Vec::new();
    let mut n = 0u64;
    for f in functions {
        for i in &f.insns {
            hash_row(
                &mut h,
                &mut buf,
                (f.address, f.offset, &f.name),
                (i.offset, i.address, &i.bytes, &i.text),
            );
            n += 1;
            fa.append_value(f.address);
            fo.append_value(f.offset);
            name.append_value(&f.name);
            offset.append_value(i.offset);
            address.append_value(i.address);
            bytes.append_value(&i.bytes);
            text.append_value(&i.text);
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(fa.finish()),
        Arc::new(fo.finish()),
        Arc::new(name.finish()),
        Arc::new(offset.finish()),
        Arc::new(address.finish()),
        Arc::new(bytes.finish()),
        Arc::new(text.finish()),
    ];
    let batch = RecordBatch::try_new(schema(), cols).map_err(|e| e.to_string())?;
    let starts: Vec<String> = functions
        .iter()
        .map(|f| format!("{:x}", f.address))
        .collect();
    write_checked(
        path,
        &batch,
        VERSION,
        check_value(n, &h),
        vec![KeyValue::new(KEY_FUNCTIONS.into(), starts.join(","))],
    )
}

/// Hands `each` the functions of the part at `path` that start at one of
/// `starts` (sorted), after checking the part's version, layout and
/// checksum. A part holding none of them is not read past its footer.
pub(super) fn read(
    path: &Path,
    starts: &[u64],
    each: &mut dyn FnMut(FunctionCode),
) -> Result<(), String> {
    let (b, kv) = open_checked(path, VERSION, &schema())?;
    let held = kv_get(&kv, KEY_FUNCTIONS).ok_or("no list of functions")?;
    let wanted = held
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| u64::from_str_radix(s, 16).map_err(|_| "a bad list of functions".to_string()))
        .collect::<Result<Vec<u64>, String>>()?
        .into_iter()
        .any(|a| starts.binary_search(&a).is_ok());
    if !wanted {
        return Ok(());
    }
    let (batches, check) = read_batches(b, &kv)?;
    let mut h = twox_hash::XxHash64::with_seed(0);
    let mut buf = Vec::new();
    let mut n = 0u64;
    let rows_of = |b: &RecordBatch,
                   f: &mut dyn FnMut((u64, u64, &str), (u64, u64, &[u8], &str))| {
        let u = |i: usize| b.column(i).as_primitive::<UInt64Type>();
        let (fa, fo, offset, address) = (u(0), u(1), u(3), u(4));
        let name = b.column(2).as_string::<i32>();
        let bytes = b.column(5).as_binary::<i32>();
        let text = b.column(6).as_string::<i32>();
        for r in 0..b.num_rows() {
            f(
                (fa.value(r), fo.value(r), name.value(r)),
                (
                    offset.value(r),
                    address.value(r),
                    bytes.value(r),
                    text.value(r),
                ),
            );
        }
    };
    for b in &batches {
        if b.columns().iter().any(|c| c.null_count() > 0) {
            return Err("null values".into());
        }
        rows_of(b, &mut |f, i| {
            hash_row(&mut h, &mut buf, f, i);
            n += 1;
        });
    }
    if check != check_value(n, &h) {
        return Err("checksum mismatch: the part was changed or cut short".into());
    }
    let mut cur: Option<FunctionCode> = None;
    for b in &batches {
        rows_of(b, &mut |f, i| {
            if starts.binary_search(&f.0).is_err() {
                return;
            }
            if cur.as_ref().is_some_and(|c| c.address != f.0) {
                each(cur.take().expect("checked"));
            }
            cur.get_or_insert_with(|| FunctionCode {
                name: f.2.to_string(),
                offset: f.1,
                address: f.0,
                insns: Vec::new(),
            })
            .insns
            .push(Insn {
                offset: i.0,
                address: i.1,
                bytes: i.2.to_vec(),
                text: i.3.to_string(),
            });
        });
    }
    if let Some(c) = cur {
        each(c);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::SymbolStore;
    use super::*;
    use trawl_symbolize::FactStore;

    fn function(address: u64, name: &str, n: u64) -> FunctionCode {
        FunctionCode {
            name: name.into(),
            offset: address - 0x400000,
            address,
            insns: (0..n)
                .map(|k| Insn {
                    offset: address - 0x400000 + k,
                    address: address + k,
                    bytes: vec![0x90],
                    text: "nop".into(),
                })
                .collect(),
        }
    }

    #[test]
    fn code_reads_back_as_written_and_only_what_is_asked() {
        let t = tempfile::tempdir().unwrap();
        let s = SymbolStore::open(t.path()).unwrap();
        let (a, b, c) = (
            function(0x401000, "main", 3),
            function(0x401100, "foo::bar()", 2),
            function(0x402000, "baz", 1),
        );
        s.save_code("build-id-abcd", &[a.clone(), b.clone()]);
        s.save_code("build-id-abcd", std::slice::from_ref(&c));
        let key = |v: &[FunctionCode]| -> Vec<(u64, String, Vec<Insn>)> {
            v.iter()
                .map(|f| (f.address, f.name.clone(), f.insns.clone()))
                .collect()
        };
        assert_eq!(
            key(&s.load_code("build-id-abcd", &[0x401000, 0x402000])),
            key(&[a.clone(), c.clone()])
        );
        assert_eq!(key(&s.load_code("build-id-abcd", &[0x401100])), key(&[b]));
        assert!(s.load_code("build-id-abcd", &[0x401001]).is_empty());
        assert!(s.load_code("build-id-ffff", &[0x401000]).is_empty());
        assert!(s.take_problems().is_empty());
        // A part changed: reported, removed, not read.
        let dir = t.path().join("build-id-abcd").join(DIR);
        let part = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .min()
            .unwrap();
        let mut bytes = std::fs::read(&part).unwrap();
        let at = bytes.windows(3).position(|w| w == b"nop").unwrap();
        bytes[at] = b'x';
        std::fs::write(&part, bytes).unwrap();
        assert_eq!(
            key(&s.load_code("build-id-abcd", &[0x401000, 0x402000])),
            key(&[c])
        );
        let p = s.take_problems();
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].kind, "symbol_store_damaged");
        assert!(!part.exists());
    }
}
