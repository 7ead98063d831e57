//! Times writing `mem_access` alone (rows parsed first, held in memory):
//! `cargo run --release -p trawl-ingest --example mem_write LOG` writes the
//! whole table 3 times (CPU-s from /proc/self/stat); `... LOG --columns
//! [COLUMN]` writes each column alone under each Parquet encoding and codec
//! (one-column files, parquet's Arrow writer, one thread, best of 2), as
//! used to choose `mem_access`'s settings.
use std::sync::Arc;
use trawl_ingest::arrow::array::*;
use trawl_ingest::arrow::datatypes::*;
use trawl_ingest::arrow::record_batch::RecordBatch;
use trawl_ingest::memlog::{self, convert::MemConverter, RowSink, Rows};
use trawl_ingest::parquet::arrow::ArrowWriter;
use trawl_ingest::parquet::basic::{Compression, Encoding, ZstdLevel};
use trawl_ingest::parquet::file::properties::{EnabledStatistics, WriterProperties};
use trawl_ingest::{CaptureWriter, Diagnostics};

struct Keep(Vec<Rows>);
impl RowSink for Keep {
    fn rows(&mut self, rows: Rows) -> trawl_ingest::Result<()> {
        self.0.push(rows);
        Ok(())
    }
}

/// User + system CPU seconds of this process (/proc/self/stat).
fn cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let f: Vec<&str> = s.rsplit_once(')').unwrap().1.split_whitespace().collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let path = args.first().expect("LOG").clone();
    let mut f = memlog::TextSource::file(path.as_ref()).unwrap();
    let mut d = Diagnostics::new(path.clone(), false);
    let mut keep = Keep(Vec::new());
    memlog::read_text(&mut f, &path, &Default::default(), &mut d, &mut keep, None).unwrap();
    if args.get(1).map(String::as_str) == Some("--columns") {
        per_column(keep.0, args.get(2).map(String::as_str));
    } else {
        whole_table(keep);
    }
}

fn whole_table(keep: Keep) {
    let n: usize = keep.0.iter().map(|r| r.len()).sum();
    for _ in 0..3 {
        let out = std::path::Path::new("/tmp/mem_write_cap");
        let _ = std::fs::remove_dir_all(out);
        let batches: Vec<Rows> = keep.0.clone();
        let (t, c) = (std::time::Instant::now(), cpu());
        let mut cap = CaptureWriter::create(out).unwrap();
        let mut conv = MemConverter::new();
        conv.begin_source(&mut cap, 0).unwrap();
        for r in batches.into_iter() {
            conv.rows(r).unwrap();
        }
        conv.finish(&mut cap).unwrap();
        cap.commit().unwrap();
        let size = std::fs::metadata(out.join("mem_access.parquet"))
            .map(|m| m.len())
            .unwrap_or(0);
        println!(
            "{n} rows: {:.3} s wall, {:.3} CPU-s, mem_access {} bytes",
            t.elapsed().as_secs_f64(),
            cpu() - c,
            size
        );
    }
}

fn per_column(parts: Vec<Rows>, only: Option<&str>) {
    let mut all = Rows::default();
    for r in parts {
        all.ordinal.extend(r.ordinal);
        all.kind.extend(r.kind);
        all.address.extend(r.address);
        all.size.extend(r.size);
    }
    let n = all.len();
    let kinds: ArrayRef = Arc::new(StringArray::from(vec!["I", "L", "S", "M"]));
    let cols: Vec<(&str, ArrayRef)> = vec![
        ("source_id", Arc::new(Int32Array::from(vec![0; n]))),
        ("ordinal", Arc::new(Int64Array::from(all.ordinal.clone()))),
        (
            "kind",
            Arc::new(
                DictionaryArray::<Int32Type>::try_new(
                    Int32Array::from_iter_values(all.kind.iter().map(|&k| k as i32)),
                    kinds,
                )
                .unwrap(),
            ),
        ),
        ("kind8", Arc::new(UInt8Array::from(all.kind.clone()))),
        ("address", Arc::new(UInt64Array::from(all.address.clone()))),
        (
            "size",
            Arc::new(Int32Array::from_iter_values(
                all.size.iter().map(|&s| s as i32),
            )),
        ),
    ];
    for (name, arr) in cols {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        for (label, enc, dict, comp) in [
            (
                "plain zstd1",
                Encoding::PLAIN,
                false,
                Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
            ),
            (
                "plain none",
                Encoding::PLAIN,
                false,
                Compression::UNCOMPRESSED,
            ),
            ("plain snappy", Encoding::PLAIN, false, Compression::SNAPPY),
            (
                "dict zstd1",
                Encoding::PLAIN,
                true,
                Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
            ),
            (
                "dict none",
                Encoding::PLAIN,
                true,
                Compression::UNCOMPRESSED,
            ),
            (
                "delta zstd1",
                Encoding::DELTA_BINARY_PACKED,
                false,
                Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
            ),
            (
                "delta none",
                Encoding::DELTA_BINARY_PACKED,
                false,
                Compression::UNCOMPRESSED,
            ),
            (
                "bss zstd1",
                Encoding::BYTE_STREAM_SPLIT,
                false,
                Compression::ZSTD(ZstdLevel::try_new(1).unwrap()),
            ),
        ] {
            let schema = Arc::new(Schema::new(vec![Field::new(
                name,
                arr.data_type().clone(),
                false,
            )]));
            let props = WriterProperties::builder()
                .set_compression(comp)
                .set_max_row_group_row_count(Some(512 * 1024))
                .set_data_page_row_count_limit(1 << 20)
                .set_dictionary_enabled(dict)
                .set_encoding(enc)
                .set_statistics_enabled(EnabledStatistics::None)
                .build();
            let mut best = f64::MAX;
            let mut size = 0;
            for _ in 0..2 {
                let file = std::fs::File::create("/tmp/exp/col.parquet").unwrap();
                let c = cpu();
                let r = (|| -> Result<(), Box<dyn std::error::Error>> {
                    let mut w = ArrowWriter::try_new(file, schema.clone(), Some(props.clone()))?;
                    let mut off = 0;
                    while off < n {
                        let len = (n - off).min(150_000);
                        w.write(&RecordBatch::try_new(
                            schema.clone(),
                            vec![arr.slice(off, len)],
                        )?)?;
                        off += len;
                    }
                    w.close()?;
                    Ok(())
                })();
                if let Err(e) = r {
                    println!("{name} {label}: {e}");
                    break;
                }
                best = best.min(cpu() - c);
                size = std::fs::metadata("/tmp/exp/col.parquet").unwrap().len();
            }
            if best < f64::MAX {
                println!(
                    "{name:10} {label:14} {best:.3} CPU-s {:8.1} MB",
                    size as f64 / 1e6
                );
            }
        }
    }
}
