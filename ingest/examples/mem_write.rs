//! Times writing `mem_access` alone (rows parsed first, held in memory):
//! `cargo run --release -p trawl-ingest --example mem_write LOG`.
use trawl_ingest::memlog::{self, convert::MemConverter, RowSink, Rows};
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
    let path = std::env::args().nth(1).expect("LOG");
    let mut f = memlog::TextSource::file(path.as_ref()).unwrap();
    let mut d = Diagnostics::new(path.clone(), false);
    let mut keep = Keep(Vec::new());
    memlog::read_text(&mut f, &path, &Default::default(), &mut d, &mut keep).unwrap();
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
