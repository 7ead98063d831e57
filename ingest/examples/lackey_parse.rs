//! Times the lackey text parser alone, on one thread, over a log held in
//! memory (no reading, no Parquet):
//! `cargo run --release -p trawl-ingest --example lackey_parse FILE`.
use trawl_ingest::memlog::{lackey, Filter, BLOCK_BYTES};

fn main() {
    let path = std::env::args().nth(1).expect("FILE");
    let buf = std::fs::read(&path).unwrap();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < buf.len() {
        let mut e = (i + BLOCK_BYTES).min(buf.len());
        if e < buf.len() {
            e = memchr::memrchr(b'\n', &buf[i..e]).map_or(e, |k| i + k + 1);
        }
        blocks.push(&buf[i..e]);
        i = e;
    }
    let filter = Filter::default();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let (mut records, mut rows, mut fetch, mut pages) = (0u64, 0usize, 0usize, 0usize);
        // One fetch aggregate through all blocks, as one parser thread of
        // `trawl ingest` keeps it.
        let mut agg = lackey::FetchAgg::default();
        for (seq, b) in blocks.iter().enumerate() {
            let c = lackey::parse_chunk_into(b, &filter, 4096, &mut agg, seq as u32);
            records += c.records;
            rows += c.rows.len();
            pages += c.pages.pages.len();
        }
        fetch += agg.into_map().len();
        let e = t.elapsed().as_secs_f64();
        println!(
            "{records} records, {rows} rows, {fetch} fetch entries, {pages} page entries in {e:.3} s: {:.2} ns/record, {:.2} GB/s on one thread",
            e * 1e9 / records as f64,
            buf.len() as f64 / e / 1e9
        );
    }
}
